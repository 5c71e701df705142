/*
 * copy_select.c - variant names, what each variant needs from the CPU, and
 * the choice between them.  Everything here is a pure function of its
 * arguments; copy_dispatch.c feeds it the running CPU and the environment.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#elif defined(__aarch64__)
#include "copy_arm_order.h"
#endif

#include "copy_select.h"
#include "copy_variants.h"

/* Cache-coherent mappings: libc's memcpy is the fastest there.  The fence
 * keeps the contract that every routine ends with one. */
static void copy_libc(void *dst, const void *src, size_t len)
{
    if (len)
        memcpy(dst, src, len);
#if defined(__x86_64__)
    _mm_sfence();
#else
    GDRX_FENCE_CACHED();
#endif
}

#if defined(__x86_64__)

static const struct variant_desc {
    const char  *name;
    gdrx_copy_fn to;   /* NULL for AUTO */
    gdrx_copy_fn from; /* NULL: loads of the best streaming variant */
} variants[] = {
    [GDRX_COPY_AUTO]      = { "auto", NULL, NULL },
    [GDRX_COPY_LIBC]      = { "libc", copy_libc, copy_libc },
    [GDRX_COPY_SSE2]      = { "sse2", gdrx_copy_to_sse2, gdrx_copy_from_sse2 },
    [GDRX_COPY_SSE41]     = { "sse41", gdrx_copy_to_sse2, gdrx_copy_from_sse41 },
    [GDRX_COPY_AVX2]      = { "avx2", gdrx_copy_to_avx2, gdrx_copy_from_avx2 },
    [GDRX_COPY_AVX512]    = { "avx512", gdrx_copy_to_avx512, gdrx_copy_from_avx512 },
    [GDRX_COPY_MOVDIR64B] = { "movdir64b", gdrx_copy_to_movdir64b, NULL },
    [GDRX_COPY_NEON]      = { "neon", NULL, NULL },
};
#elif defined(__aarch64__)
/* The x86 variants keep their names (a GDRX_COPY_VARIANT=avx2 carried
 * over from an x86 node is then "not supported", not "unknown"). */
static const struct variant_desc {
    const char  *name;
    gdrx_copy_fn to;
    gdrx_copy_fn from;
} variants[] = {
    [GDRX_COPY_AUTO]      = { "auto", NULL, NULL },
    [GDRX_COPY_LIBC]      = { "libc", copy_libc, copy_libc },
    [GDRX_COPY_SSE2]      = { "sse2", NULL, NULL },
    [GDRX_COPY_SSE41]     = { "sse41", NULL, NULL },
    [GDRX_COPY_AVX2]      = { "avx2", NULL, NULL },
    [GDRX_COPY_AVX512]    = { "avx512", NULL, NULL },
    [GDRX_COPY_MOVDIR64B] = { "movdir64b", NULL, NULL },
    [GDRX_COPY_NEON]      = { "neon", gdrx_copy_to_neon, gdrx_copy_from_neon },
};
#endif
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

static int known(gdrx_copy_variant_t v)
{
    return (unsigned)v < N_VARIANTS;
}

GDRX_EXPORT const char *gdrx_copy_variant_name(gdrx_copy_variant_t variant)
{
    return known(variant) ? variants[variant].name : "unknown";
}

int gdrx_copy_variant_parse(const char *name, gdrx_copy_variant_t *out)
{
    for (unsigned v = 0; name && v < N_VARIANTS; v++) {
        if (strcasecmp(name, variants[v].name) == 0) {
            *out = (gdrx_copy_variant_t)v;
            return 0;
        }
    }
    return -EINVAL;
}

int gdrx_copy_variant_supported_on(const struct gdrx_cpu_features *f,
                                   gdrx_copy_variant_t variant)
{
    switch (variant) {
    case GDRX_COPY_AUTO:
    case GDRX_COPY_LIBC:      return 1;
    case GDRX_COPY_SSE2:      return f->sse2;
    case GDRX_COPY_SSE41:     return f->sse41;
    case GDRX_COPY_AVX2:      return f->avx2;
    /* the AVX-512 file also uses the 32-B AVX2 steps */
    case GDRX_COPY_AVX512:    return f->avx512f && f->avx2;
    /* the MOVDIR64B head and tail use SSE2 */
    case GDRX_COPY_MOVDIR64B: return f->movdir64b && f->sse2;
    case GDRX_COPY_NEON:      return f->neon;
    }
    return 0;
}

gdrx_copy_variant_t gdrx_copy_best_to(const struct gdrx_cpu_features *f)
{
#if defined(__aarch64__)
    /* Not measured on ARM hardware yet: NEON is the only streaming
     * variant there, and LIBC is for cached mappings only. */
    return f->neon ? GDRX_COPY_NEON : GDRX_COPY_LIBC;
#endif
    /* AVX-512 stores (one whole WC line each) beat AVX2's at 13 of 14
     * points (8 B-64 KiB, two H200 runs) and were 1 % slower at the other
     * (results/h200-bench-21b621d, run*-variants.csv). */
    if (gdrx_copy_variant_supported_on(f, GDRX_COPY_AVX512))
        return GDRX_COPY_AVX512;
    if (f->avx2)
        return GDRX_COPY_AVX2;
    return f->sse2 ? GDRX_COPY_SSE2 : GDRX_COPY_LIBC;
}

gdrx_copy_variant_t gdrx_copy_best_from(const struct gdrx_cpu_features *f)
{
#if defined(__aarch64__)
    return f->neon ? GDRX_COPY_NEON : GDRX_COPY_LIBC;
#endif
    static const gdrx_copy_variant_t widest_first[] = {
        GDRX_COPY_AVX512, GDRX_COPY_AVX2, GDRX_COPY_SSE41, GDRX_COPY_SSE2,
    };
    for (size_t i = 0; i < sizeof(widest_first) / sizeof(widest_first[0]); i++)
        if (gdrx_copy_variant_supported_on(f, widest_first[i]))
            return widest_first[i];
    return GDRX_COPY_LIBC;
}

/* The variant whose loads a variant's from_mapping uses. */
static gdrx_copy_variant_t load_variant(const struct gdrx_cpu_features *f,
                                        gdrx_copy_variant_t v)
{
    return variants[v].from ? v : gdrx_copy_best_from(f);
}

static void add_note(struct gdrx_copy_choice *out, const char *env, const char *value,
                     const char *why)
{
    size_t used = strlen(out->note);
    snprintf(out->note + used, sizeof(out->note) - used, "%s%s=%s: %s, ignored",
             used ? "; " : "", env, value, why);
}

/* Parse one environment value; 1 and *v if it names a usable variant
 * (AUTO resolves to nothing: 0 without a note). */
static int requested(const struct gdrx_cpu_features *f, const char *env, const char *value,
                     gdrx_copy_variant_t *v, struct gdrx_copy_choice *out)
{
    if (!value || !*value)
        return 0;
    if (gdrx_copy_variant_parse(value, v) != 0) {
        add_note(out, env, value, "unknown copy variant");
        return 0;
    }
    if (!gdrx_copy_variant_supported_on(f, *v)) {
        add_note(out, env, value, "not supported by this CPU/OS");
        return 0;
    }
    return *v != GDRX_COPY_AUTO;
}

void gdrx_copy_choose(const struct gdrx_cpu_features *f, const char *env_all,
                      const char *env_to, const char *env_from,
                      struct gdrx_copy_choice *out)
{
    gdrx_copy_variant_t v;

    out->note[0] = '\0';
    out->to = gdrx_copy_best_to(f);
    out->from = gdrx_copy_best_from(f);
    if (requested(f, "GDRX_COPY_VARIANT", env_all, &v, out)) {
        out->to = v;
        out->from = load_variant(f, v);
    }
    if (requested(f, "GDRX_COPY_TO_VARIANT", env_to, &v, out))
        out->to = v;
    if (requested(f, "GDRX_COPY_FROM_VARIANT", env_from, &v, out))
        out->from = load_variant(f, v);
}

int gdrx_copy_impl_for(const struct gdrx_cpu_features *f, gdrx_copy_variant_t variant,
                       struct gdrx_copy_impl *impl)
{
    if (!known(variant) || variant == GDRX_COPY_AUTO)
        return -EINVAL;
    if (!gdrx_copy_variant_supported_on(f, variant))
        return -ENOTSUP;
    gdrx_copy_variant_t from = load_variant(f, variant);
    impl->variant = variant;
    impl->to_mapping = variants[variant].to;
    impl->from_variant = from;
    impl->from_mapping = variants[from].from;
    return 0;
}
