/*
 * copy_dispatch_test.c - CPU feature decisions from injected CPUID/XCR0
 * values, the choice of variants from injected features and environment
 * strings, and the running process's choice.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_select.h"
#include "copy_tests.h"
#include "cpu_features.h"

#define B(n) (1u << (n))
/* Every bit the decision reads, set. */
#define L1_ECX_ALL (B(19) | B(27) | B(28))
#define L1_EDX_ALL B(26)
#define L7_EBX_ALL (B(5) | B(16) | B(30) | B(31))
#define L7_ECX_ALL B(28)

static struct gdrx_cpu_features decide(uint32_t max_leaf, uint32_t l1c, uint32_t l1d,
                                       uint32_t l7b, uint32_t l7c, uint64_t xcr0)
{
    struct gdrx_cpuid_words w = { max_leaf, l1c, l1d, l7b, l7c };
    struct gdrx_cpu_features f;
    gdrx_cpu_decide(&w, xcr0, &f);
    return f;
}

static void test_decide_all_enabled(void)
{
    struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                        L7_ECX_ALL, 0xe7);
    CU_ASSERT(f.sse2 && f.sse41 && f.osxsave && f.avx && f.avx2);
    CU_ASSERT(f.avx512f && f.avx512bw && f.avx512vl && f.movdir64b);
}

static void test_decide_without_osxsave(void)
{
    /* No OSXSAVE: XGETBV is unusable, AVX state off whatever xcr0 says. */
    struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL & ~B(27), L1_EDX_ALL,
                                        L7_EBX_ALL, L7_ECX_ALL, 0xe7);
    CU_ASSERT(f.sse2 && f.sse41 && f.movdir64b);
    CU_ASSERT(!f.osxsave && !f.avx && !f.avx2 && !f.avx512f && f.xcr0 == 0);
}

static void test_decide_xcr0_avx_bits(void)
{
    /* AVX needs XCR0 bits 1 AND 2; either alone is not enough. */
    static const uint64_t no_avx[] = { 0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0xe4, 0xe2 };
    for (size_t i = 0; i < sizeof(no_avx) / sizeof(no_avx[0]); i++) {
        struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                            L7_ECX_ALL, no_avx[i]);
        CU_ASSERT(!f.os_avx && !f.avx && !f.avx2 && !f.avx512f);
        CU_ASSERT(f.sse41 && f.movdir64b);
    }
    struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                        L7_ECX_ALL, 0x7);
    CU_ASSERT(f.avx && f.avx2 && !f.os_avx512 && !f.avx512f && !f.avx512bw);
}

static void test_decide_xcr0_avx512_bits(void)
{
    /* AVX-512 needs bits 1-2 and 5-7; any one missing disables it. */
    static const uint64_t partial[] = { 0x27, 0x47, 0x87, 0x67, 0xa7, 0xc7 };
    for (size_t i = 0; i < sizeof(partial) / sizeof(partial[0]); i++) {
        struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                            L7_ECX_ALL, partial[i]);
        CU_ASSERT(f.avx2 && !f.avx512f && !f.avx512bw && !f.avx512vl);
    }
    struct gdrx_cpu_features f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                        L7_ECX_ALL, 0x2e7);
    CU_ASSERT(f.avx512f && f.avx512bw && f.avx512vl);
}

static void test_decide_feature_bits(void)
{
    struct gdrx_cpu_features f = decide(0xd, B(27) | B(28), 0, B(5), 0, 0x7);
    CU_ASSERT(!f.sse2 && !f.sse41 && f.avx && f.avx2 && !f.movdir64b);
    f = decide(0xd, L1_ECX_ALL & ~B(28), L1_EDX_ALL, L7_EBX_ALL, 0, 0xe7);
    CU_ASSERT(!f.avx && !f.avx2 && !f.avx512f); /* AVX2/512 need AVX */
    f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, B(16), 0, 0xe7);
    CU_ASSERT(f.avx && !f.avx2 && f.avx512f && !f.avx512bw && !f.avx512vl);
    f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, B(16) | B(30), 0, 0xe7);
    CU_ASSERT(f.avx512bw && !f.avx512vl);
    f = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, B(5) | B(30) | B(31), 0, 0xe7);
    CU_ASSERT(!f.avx512f && !f.avx512bw && !f.avx512vl); /* BW/VL need F */
}

static void test_decide_max_leaf(void)
{
    /* Leaf 7 absent: its words are garbage and must be ignored. */
    struct gdrx_cpu_features f = decide(6, L1_ECX_ALL, L1_EDX_ALL, ~0u, ~0u, 0xe7);
    CU_ASSERT(f.avx && !f.avx2 && !f.avx512f && !f.movdir64b);
    f = decide(7, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL, L7_ECX_ALL, 0xe7);
    CU_ASSERT(f.avx2 && f.avx512f && f.movdir64b);
}

/* Real CPUs as CPUID and XCR0 describe them, through the whole decision:
 * CPUID words -> features -> default variants -> routines.  AVX (leaf 1
 * ECX bit 28, usable only with OSXSAVE and XCR0's YMM state) and AVX2
 * (leaf 7 EBX bit 5) are separate bits, as on Sandy and Ivy Bridge. */
#define SSE41   B(19)
#define OSXSAVE B(27)
#define AVX     B(28)
#define SSE2    B(26)
#define AVX2    B(5)
#define AVX512  (B(16) | B(30) | B(31))
#define DIR64B  B(28)

static const struct cpu_model {
    const char         *name;
    uint32_t            l1c, l1d, l7b, l7c;
    uint64_t            xcr0;
    gdrx_copy_variant_t to, from;
} cpu_models[] = {
    { "SSE2 only", 0, SSE2, 0, 0, 0, GDRX_COPY_SSE2, GDRX_COPY_SSE2 },
    { "SSE4.1, no AVX", SSE41, SSE2, 0, 0, 0, GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX without AVX2 (Sandy Bridge)", SSE41 | OSXSAVE | AVX, SSE2, 0, 0, 0x7,
      GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX without AVX2, MOVDIR64B", SSE41 | OSXSAVE | AVX, SSE2, 0, DIR64B, 0x7,
      GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX2, OS saves no YMM state", SSE41 | OSXSAVE | AVX, SSE2, AVX2, 0, 0x3,
      GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX2 bit without AVX", SSE41 | OSXSAVE, SSE2, AVX2, 0, 0x7,
      GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX2 (Haswell)", SSE41 | OSXSAVE | AVX, SSE2, AVX2, 0, 0x7,
      GDRX_COPY_AVX2, GDRX_COPY_AVX2 },
    { "AVX-512 without AVX2", SSE41 | OSXSAVE | AVX, SSE2, AVX512, 0, 0xe7,
      GDRX_COPY_SSE2, GDRX_COPY_SSE41 },
    { "AVX-512 (Skylake-SP)", SSE41 | OSXSAVE | AVX, SSE2, AVX2 | AVX512, 0, 0xe7,
      GDRX_COPY_AVX512, GDRX_COPY_AVX512 },
    { "AVX-512, MOVDIR64B (Sapphire Rapids)", SSE41 | OSXSAVE | AVX, SSE2, AVX2 | AVX512,
      DIR64B, 0xe7, GDRX_COPY_AVX512, GDRX_COPY_AVX512 },
};

/* The routines a variant's steps come from, on a CPU that has them all. */
static struct gdrx_copy_impl routines_of(gdrx_copy_variant_t v)
{
    struct gdrx_cpu_features all = decide(0xd, L1_ECX_ALL, L1_EDX_ALL, L7_EBX_ALL,
                                          L7_ECX_ALL, 0xe7);
    struct gdrx_copy_impl impl;
    memset(&impl, 0, sizeof(impl));
    CU_ASSERT_EQUAL(gdrx_copy_impl_for(&all, v, &impl), 0);
    return impl;
}

static void test_cpu_models(void)
{
    for (size_t i = 0; i < sizeof(cpu_models) / sizeof(cpu_models[0]); i++) {
        const struct cpu_model *m = &cpu_models[i];
        struct gdrx_cpu_features f = decide(0xd, m->l1c, m->l1d, m->l7b, m->l7c, m->xcr0);
        struct gdrx_copy_choice c;
        struct gdrx_copy_impl impl;
        int has_avx2 = m->to == GDRX_COPY_AVX2 || m->to == GDRX_COPY_AVX512;

        gdrx_copy_choose(&f, NULL, NULL, NULL, &c);
        if (c.to != m->to || c.from != m->from)
            fprintf(stderr, "    %s: to %s, from %s\n", m->name, gdrx_copy_variant_name(c.to),
                    gdrx_copy_variant_name(c.from));
        CU_ASSERT(c.to == m->to && c.from == m->from && !c.note[0]);
        CU_ASSERT_EQUAL(gdrx_copy_variant_supported_on(&f, GDRX_COPY_AVX2), has_avx2);
        CU_ASSERT_EQUAL(gdrx_copy_impl_for(&f, GDRX_COPY_AVX2, &impl), has_avx2 ? 0 : -ENOTSUP);
        /* the routines handed out are the chosen variants' */
        CU_ASSERT_EQUAL_FATAL(gdrx_copy_impl_for(&f, c.to, &impl), 0);
        CU_ASSERT(impl.to_mapping == routines_of(m->to).to_mapping);
        CU_ASSERT_EQUAL_FATAL(gdrx_copy_impl_for(&f, c.from, &impl), 0);
        CU_ASSERT(impl.from_mapping == routines_of(m->from).from_mapping);
        /* asking for AVX2 is obeyed where it exists; where it is missing
         * it is ignored, and said so */
        gdrx_copy_choose(&f, "avx2", NULL, NULL, &c);
        CU_ASSERT_EQUAL(c.to, has_avx2 ? GDRX_COPY_AVX2 : m->to);
        CU_ASSERT_EQUAL(!!strstr(c.note, "GDRX_COPY_VARIANT=avx2: not supported"), !has_avx2);
    }
}

static struct gdrx_cpu_features features(int sse41, int avx2, int avx512, int movdir64b)
{
    struct gdrx_cpu_features f;
    memset(&f, 0, sizeof(f));
    f.sse2 = 1;
    f.sse41 = !!sse41;
    f.avx = f.avx2 = !!avx2;
    f.avx512f = !!avx512;
    f.movdir64b = !!movdir64b;
    return f;
}

static void test_support_matrix(void)
{
    struct gdrx_cpu_features f = features(1, 1, 1, 1), base = features(0, 0, 0, 0);
    for (int v = GDRX_COPY_AUTO; v <= GDRX_COPY_MOVDIR64B; v++)
        CU_ASSERT(gdrx_copy_variant_supported_on(&f, (gdrx_copy_variant_t)v));
    CU_ASSERT(gdrx_copy_variant_supported_on(&base, GDRX_COPY_SSE2));
    CU_ASSERT(gdrx_copy_variant_supported_on(&base, GDRX_COPY_LIBC));
    CU_ASSERT(!gdrx_copy_variant_supported_on(&base, GDRX_COPY_SSE41));
    CU_ASSERT(!gdrx_copy_variant_supported_on(&base, GDRX_COPY_AVX2));
    CU_ASSERT(!gdrx_copy_variant_supported_on(&base, GDRX_COPY_AVX512));
    CU_ASSERT(!gdrx_copy_variant_supported_on(&base, GDRX_COPY_MOVDIR64B));
    f = features(1, 0, 1, 0); /* AVX-512 without AVX2 (the file uses both) */
    CU_ASSERT(!gdrx_copy_variant_supported_on(&f, GDRX_COPY_AVX512));
    CU_ASSERT(!gdrx_copy_variant_supported_on(&f, (gdrx_copy_variant_t)99));
}

static void test_defaults(void)
{
    struct gdrx_copy_choice c;
    struct gdrx_cpu_features f = features(1, 1, 1, 1);

    gdrx_copy_choose(&f, NULL, NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX512 && c.from == GDRX_COPY_AVX512 && !c.note[0]);
    f = features(1, 1, 0, 0);
    gdrx_copy_choose(&f, "", "", "", &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX2 && c.from == GDRX_COPY_AVX2 && !c.note[0]);
    f = features(1, 0, 0, 1);
    gdrx_copy_choose(&f, NULL, NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_SSE2 && c.from == GDRX_COPY_SSE41);
    f = features(0, 0, 0, 0);
    gdrx_copy_choose(&f, NULL, NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_SSE2 && c.from == GDRX_COPY_SSE2);
}

static void test_env_override(void)
{
    struct gdrx_copy_choice c;
    struct gdrx_cpu_features f = features(1, 1, 1, 1);

    gdrx_copy_choose(&f, "sse2", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_SSE2 && c.from == GDRX_COPY_SSE2 && !c.note[0]);
    gdrx_copy_choose(&f, "AVX512", NULL, NULL, &c); /* case-insensitive */
    CU_ASSERT(c.to == GDRX_COPY_AVX512 && c.from == GDRX_COPY_AVX512);
    /* MOVDIR64B has no load: loads are the best streaming ones */
    gdrx_copy_choose(&f, "movdir64b", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_MOVDIR64B && c.from == GDRX_COPY_AVX512);
    gdrx_copy_choose(&f, "libc", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_LIBC && c.from == GDRX_COPY_LIBC);
    gdrx_copy_choose(&f, "auto", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX512 && c.from == GDRX_COPY_AVX512 && !c.note[0]);
    /* per-direction variables win over GDRX_COPY_VARIANT */
    gdrx_copy_choose(&f, "sse2", "movdir64b", "sse41", &c);
    CU_ASSERT(c.to == GDRX_COPY_MOVDIR64B && c.from == GDRX_COPY_SSE41 && !c.note[0]);
    gdrx_copy_choose(&f, NULL, NULL, "libc", &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX512 && c.from == GDRX_COPY_LIBC);
}

static void test_env_bad_names(void)
{
    struct gdrx_copy_choice c;
    struct gdrx_cpu_features f = features(1, 1, 0, 0);

    gdrx_copy_choose(&f, "avx1024", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX2 && c.from == GDRX_COPY_AVX2);
    CU_ASSERT(strstr(c.note, "GDRX_COPY_VARIANT=avx1024") && strstr(c.note, "unknown"));
    gdrx_copy_choose(&f, "avx512", NULL, "movdir64b", &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX2 && c.from == GDRX_COPY_AVX2);
    CU_ASSERT(strstr(c.note, "GDRX_COPY_VARIANT=avx512: not supported") != NULL);
    CU_ASSERT(strstr(c.note, "; GDRX_COPY_FROM_VARIANT=movdir64b: not supported") != NULL);
    /* an unsupported per-direction name keeps the GDRX_COPY_VARIANT choice */
    gdrx_copy_choose(&f, "sse41", "avx512", NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_SSE41 && c.from == GDRX_COPY_SSE41);
    CU_ASSERT(strstr(c.note, "GDRX_COPY_TO_VARIANT=avx512") != NULL);
    gdrx_copy_choose(&f, " sse2", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_AVX2 && strstr(c.note, "unknown") != NULL);
}

static void test_names_and_parse(void)
{
    static const char *names[] = { "auto", "libc", "sse2", "sse41", "avx2", "avx512",
                                   "movdir64b" };
    for (int v = 0; v <= GDRX_COPY_MOVDIR64B; v++) {
        gdrx_copy_variant_t p = (gdrx_copy_variant_t)-1;
        CU_ASSERT_STRING_EQUAL(gdrx_copy_variant_name((gdrx_copy_variant_t)v), names[v]);
        CU_ASSERT(gdrx_copy_variant_parse(names[v], &p) == 0 && p == (gdrx_copy_variant_t)v);
    }
    CU_ASSERT_STRING_EQUAL(gdrx_copy_variant_name(GDRX_COPY_NEON), "neon");
    CU_ASSERT_STRING_EQUAL(gdrx_copy_variant_name((gdrx_copy_variant_t)8), "unknown");
    CU_ASSERT_STRING_EQUAL(gdrx_copy_variant_name((gdrx_copy_variant_t)-1), "unknown");
    gdrx_copy_variant_t p = GDRX_COPY_SSE2;
    CU_ASSERT(gdrx_copy_variant_parse("", &p) == -EINVAL && p == GDRX_COPY_SSE2);
    CU_ASSERT(gdrx_copy_variant_parse(NULL, &p) == -EINVAL);
    CU_ASSERT(gdrx_copy_variant_parse("sse4.1", &p) == -EINVAL);
}

static void test_impl_for(void)
{
    struct gdrx_copy_impl impl, untouched;
    struct gdrx_cpu_features f = features(1, 1, 0, 1);

    memset(&impl, 0x5a, sizeof(impl));
    untouched = impl;
    CU_ASSERT(gdrx_copy_impl_for(&f, GDRX_COPY_AVX512, &impl) == -ENOTSUP);
    CU_ASSERT(gdrx_copy_impl_for(&f, GDRX_COPY_AUTO, &impl) == -EINVAL);
    CU_ASSERT(gdrx_copy_impl_for(&f, (gdrx_copy_variant_t)42, &impl) == -EINVAL);
    CU_ASSERT(memcmp(&impl, &untouched, sizeof(impl)) == 0);
    CU_ASSERT(gdrx_copy_impl_for(&f, GDRX_COPY_MOVDIR64B, &impl) == 0);
    CU_ASSERT(impl.variant == GDRX_COPY_MOVDIR64B && impl.from_variant == GDRX_COPY_AVX2);
    CU_ASSERT(impl.to_mapping && impl.from_mapping);
    CU_ASSERT(gdrx_copy_impl_for(&f, GDRX_COPY_SSE41, &impl) == 0);
    CU_ASSERT(impl.variant == GDRX_COPY_SSE41 && impl.from_variant == GDRX_COPY_SSE41);
    CU_ASSERT(gdrx_copy_impl_get(GDRX_COPY_SSE2, NULL) == -EINVAL);
}

/* The detection agrees with the kernel's view in /proc/cpuinfo (which
 * also drops flags whose register state the kernel does not enable). */
static void test_detect_matches_cpuinfo(void)
{
    const struct gdrx_cpu_features *f = gdrx_cpu_features();
    static char line[16384];
    char *flags = NULL;
    FILE *fp = fopen("/proc/cpuinfo", "r");

    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    while (!flags && fgets(line, sizeof(line), fp))
        if (strncmp(line, "flags", 5) == 0)
            flags = line;
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(flags);
#define HAS(name) (strstr(flags, " " name " ") || strstr(flags, " " name "\n"))
    CU_ASSERT_EQUAL(f->sse2, !!HAS("sse2"));
    CU_ASSERT_EQUAL(f->sse41, !!HAS("sse4_1"));
    CU_ASSERT_EQUAL(f->avx2, !!HAS("avx2"));
    CU_ASSERT_EQUAL(f->avx512f, !!HAS("avx512f"));
    CU_ASSERT_EQUAL(f->avx512bw, !!HAS("avx512bw"));
    CU_ASSERT_EQUAL(f->avx512vl, !!HAS("avx512vl"));
    CU_ASSERT_EQUAL(f->movdir64b, !!HAS("movdir64b"));
#undef HAS
    CU_ASSERT(gdrx_cpu_features() == f); /* computed once */
}

/* The process-wide default reads the environment once (each case runs in
 * its own child, so setenv here affects only this case). */
static void test_default_env_forced(void)
{
    CU_ASSERT_FATAL(setenv("GDRX_COPY_VARIANT", "sse2", 1) == 0);
    CU_ASSERT_FATAL(setenv("GDRX_COPY_FROM_VARIANT", "libc", 1) == 0);
    const struct gdrx_copy_impl *impl = gdrx_copy_default();
    CU_ASSERT(impl->variant == GDRX_COPY_SSE2 && impl->from_variant == GDRX_COPY_LIBC);
    CU_ASSERT_STRING_EQUAL(gdrx_copy_default_note(), "");
    setenv("GDRX_COPY_VARIANT", "avx2", 1); /* too late: chosen once */
    CU_ASSERT(gdrx_copy_default() == impl && impl->variant == GDRX_COPY_SSE2);
}

static void test_default_env_bogus(void)
{
    struct gdrx_copy_choice expect;

    CU_ASSERT_FATAL(setenv("GDRX_COPY_VARIANT", "bogus", 1) == 0);
    unsetenv("GDRX_COPY_TO_VARIANT");
    unsetenv("GDRX_COPY_FROM_VARIANT");
    gdrx_copy_choose(gdrx_cpu_features(), NULL, NULL, NULL, &expect);
    const struct gdrx_copy_impl *impl = gdrx_copy_default();
    CU_ASSERT(impl->variant == expect.to && impl->from_variant == expect.from);
    CU_ASSERT(strstr(gdrx_copy_default_note(), "GDRX_COPY_VARIANT=bogus") != NULL);
    struct gdrx_copy_impl got;
    CU_ASSERT(gdrx_copy_impl_get(GDRX_COPY_AUTO, &got) == 0 && got.variant == expect.to);
    printf("[default here: to %s, from %s] ", gdrx_copy_variant_name(expect.to),
           gdrx_copy_variant_name(expect.from));
}

const struct gdrx_test_case test_dispatch_cases[] = {
    GDRX_TEST_CASE(test_decide_all_enabled),
    GDRX_TEST_CASE(test_decide_without_osxsave),
    GDRX_TEST_CASE(test_decide_xcr0_avx_bits),
    GDRX_TEST_CASE(test_decide_xcr0_avx512_bits),
    GDRX_TEST_CASE(test_decide_feature_bits),
    GDRX_TEST_CASE(test_decide_max_leaf),
    GDRX_TEST_CASE(test_cpu_models),
    GDRX_TEST_CASE(test_support_matrix),
    GDRX_TEST_CASE(test_defaults),
    GDRX_TEST_CASE(test_env_override),
    GDRX_TEST_CASE(test_env_bad_names),
    GDRX_TEST_CASE(test_names_and_parse),
    GDRX_TEST_CASE(test_impl_for),
    GDRX_TEST_CASE(test_detect_matches_cpuinfo),
    GDRX_TEST_CASE(test_default_env_forced),
    GDRX_TEST_CASE(test_default_env_bogus),
    GDRX_TEST_END,
};
