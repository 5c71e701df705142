/*
 * copy_select.h - which copy variant runs, decided from CPU features and
 * the GDRX_COPY_*VARIANT strings.  Pure functions (features and strings are
 * parameters) so the tests can inject any CPU.  Internal to
 * libgdr/src/copy; the rest of the library uses copy.h.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_SELECT_H
#define GDRX_COPY_SELECT_H

#include "copy.h"
#include "cpu_features.h"

#define GDRX_COPY_NOTE_MAX 256

struct gdrx_copy_choice {
    gdrx_copy_variant_t to;   /* variant of the to_mapping routine */
    gdrx_copy_variant_t from; /* variant whose loads from_mapping uses */
    char note[GDRX_COPY_NOTE_MAX]; /* why a request was ignored, or "" */
};

/* 1 if a CPU with features f can run the variant (GDRX_COPY_AUTO: 1). */
int gdrx_copy_variant_supported_on(const struct gdrx_cpu_features *f,
                                   gdrx_copy_variant_t variant);

/* The defaults: to_mapping AVX2 if present, else SSE2 (AVX-512 and
 * MOVDIR64B stores only when forced, until measured on the target GPU);
 * from_mapping the widest streaming load. */
gdrx_copy_variant_t gdrx_copy_best_to(const struct gdrx_cpu_features *f);
gdrx_copy_variant_t gdrx_copy_best_from(const struct gdrx_cpu_features *f);

/* Decide both directions.  env_all is GDRX_COPY_VARIANT, env_to and
 * env_from the per-direction variables (they win); each may be NULL or "".
 * An unknown or unsupported name is ignored and explained in out->note. */
void gdrx_copy_choose(const struct gdrx_cpu_features *f, const char *env_all,
                      const char *env_to, const char *env_from,
                      struct gdrx_copy_choice *out);

/* The routines of a variant, for a CPU with features f; -ENOTSUP if it
 * cannot run them, -EINVAL if the value names no variant or is AUTO. */
int gdrx_copy_impl_for(const struct gdrx_cpu_features *f, gdrx_copy_variant_t variant,
                       struct gdrx_copy_impl *impl);

#endif /* GDRX_COPY_SELECT_H */
