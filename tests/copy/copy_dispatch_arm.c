/*
 * copy_dispatch_arm.c - aarch64: the copy-variant choice and the barriers
 * the NEON and libc routines must contain (copy_arm_order.h).  These cases
 * replace copy_dispatch_test.c (CPUID words) and copy_fence_check.c (x86
 * fence flow) in the aarch64 build; each fails when the choice or a
 * barrier is wrong.
 *
 * SPDX-License-Identifier: MIT
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_select.h"
#include "copy_tests.h"
#include "copy_variants.h"

#ifndef GDRX_TEST_OBJDUMP
#define GDRX_TEST_OBJDUMP "objdump"
#endif

/* The running CPU: Advanced SIMD from HWCAP, none of the x86 features. */
static void test_arm_features(void)
{
    const struct gdrx_cpu_features *f = gdrx_cpu_features();
    char buf[64];

    CU_ASSERT(f->neon);
    CU_ASSERT(!f->sse2 && !f->avx2 && !f->avx512f && !f->movdir64b);
    CU_ASSERT_STRING_EQUAL(gdrx_cpu_features_str(f, buf, sizeof(buf)), "neon");
}

/* Streaming mappings get NEON both ways; libc only without Advanced SIMD. */
static void test_arm_best(void)
{
    struct gdrx_cpu_features f = { 0 };

    f.neon = 1;
    CU_ASSERT_EQUAL(gdrx_copy_best_to(&f), GDRX_COPY_NEON);
    CU_ASSERT_EQUAL(gdrx_copy_best_from(&f), GDRX_COPY_NEON);
    f.neon = 0;
    CU_ASSERT_EQUAL(gdrx_copy_best_to(&f), GDRX_COPY_LIBC);
    CU_ASSERT_EQUAL(gdrx_copy_best_from(&f), GDRX_COPY_LIBC);
}

/* The process default (no GDRX_COPY_* variable in make check's
 * environment) and what the public names say. */
static void test_arm_default(void)
{
    const struct gdrx_copy_impl *d = gdrx_copy_default();

    CU_ASSERT_EQUAL(d->variant, GDRX_COPY_NEON);
    CU_ASSERT_EQUAL(d->from_variant, GDRX_COPY_NEON);
    CU_ASSERT(d->to_mapping == gdrx_copy_to_neon);
    CU_ASSERT(d->from_mapping == gdrx_copy_from_neon);
    CU_ASSERT_STRING_EQUAL(gdrx_copy_default_note(), "");
    CU_ASSERT_STRING_EQUAL(gdrx_copy_variant_name(d->variant), "neon");
}

/* x86 names are known but never supported; a request for one is ignored
 * with a note, and libc can be forced. */
static void test_arm_requests(void)
{
    const struct gdrx_cpu_features *f = gdrx_cpu_features();
    struct gdrx_copy_choice c;
    struct gdrx_copy_impl impl;

    for (int v = GDRX_COPY_SSE2; v <= GDRX_COPY_MOVDIR64B; v++) {
        CU_ASSERT(!gdrx_copy_variant_supported((gdrx_copy_variant_t)v));
        CU_ASSERT_EQUAL(gdrx_copy_impl_get((gdrx_copy_variant_t)v, &impl), -ENOTSUP);
    }
    CU_ASSERT(gdrx_copy_variant_supported(GDRX_COPY_NEON));
    CU_ASSERT(gdrx_copy_variant_supported(GDRX_COPY_LIBC));
    gdrx_copy_choose(f, "avx2", NULL, NULL, &c);
    CU_ASSERT(c.to == GDRX_COPY_NEON && c.from == GDRX_COPY_NEON);
    CU_ASSERT(strstr(c.note, "GDRX_COPY_VARIANT=avx2") && strstr(c.note, "not supported"));
    gdrx_copy_choose(f, "libc", NULL, "neon", &c);
    CU_ASSERT(c.to == GDRX_COPY_LIBC && c.from == GDRX_COPY_NEON && !c.note[0]);
    CU_ASSERT(gdrx_copy_impl_get(GDRX_COPY_LIBC, &impl) == 0);
    CU_ASSERT(impl.to_mapping != gdrx_copy_to_neon && impl.to_mapping == impl.from_mapping);
}

/* How many lines of objdump's disassembly of `sym` in this program
 * contain `insn` (e.g. "dsb\tst"); -1 if objdump cannot be run. */
static int count_insn(const char *sym, const char *insn)
{
    char exe[4096], cmd[8192], line[512];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int n = 0, seen = 0;

    if (len <= 0)
        return -1;
    exe[len] = '\0';
    snprintf(cmd, sizeof(cmd), "%s -d --no-show-raw-insn --disassemble=%s '%s' 2>/dev/null",
             GDRX_TEST_OBJDUMP, sym, exe);
    FILE *fp = popen(cmd, "r");
    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp)) {
        if (strstr(line, "ret"))
            seen++;
        if (strstr(line, insn))
            n++;
    }
    if (pclose(fp) != 0 || !seen)
        return -1;
    return n;
}

/* The barriers copy_arm_order.h promises are in the machine code. */
static void test_arm_barriers(void)
{
    int to_st = count_insn("gdrx_copy_to_neon", "dsb\tst");
    int from_ld = count_insn("gdrx_copy_from_neon", "dsb\tld");
    int from_st = count_insn("gdrx_copy_from_neon", "dsb\tst");
    int libc_ish = count_insn("copy_libc", "dmb\tish");

    if (to_st < 0 || from_ld < 0 || from_st < 0 || libc_ish < 0)
        fprintf(stderr, "    %s -d failed on this program\n", GDRX_TEST_OBJDUMP);
    CU_ASSERT(to_st >= 1);
    CU_ASSERT(from_ld >= 1);
    CU_ASSERT(from_st >= 1);
    CU_ASSERT(libc_ish >= 1);
    /* no non-temporal pairs (copy_arm_order.h, 4.) */
    CU_ASSERT_EQUAL(count_insn("gdrx_copy_to_neon", "stnp"), 0);
    CU_ASSERT_EQUAL(count_insn("gdrx_copy_from_neon", "ldnp"), 0);
}

const struct gdrx_test_case test_dispatch_cases[] = {
    GDRX_TEST_CASE(test_arm_features),
    GDRX_TEST_CASE(test_arm_best),
    GDRX_TEST_CASE(test_arm_default),
    GDRX_TEST_CASE(test_arm_requests),
    GDRX_TEST_CASE(test_arm_barriers),
    GDRX_TEST_END,
};
