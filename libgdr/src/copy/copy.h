/*
 * copy.h - CPU copy routines to/from device mappings, with runtime CPU
 * dispatch.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_H
#define GDRX_COPY_H

#include <stddef.h>
#include "gdrx.h"

/* A routine copies len bytes; it never writes outside [dst, dst+len),
 * writes no byte twice, and ends with a store fence (sfence). */
typedef void (*gdrx_copy_fn)(void *dst, const void *src, size_t len);

struct gdrx_copy_impl {
    gdrx_copy_variant_t variant;
    gdrx_copy_fn        to_mapping;   /* host -> WC mapping (NT stores) */
    gdrx_copy_fn        from_mapping; /* WC mapping -> host (streaming loads) */
};

/* 1 if the running CPU (and OS, via XCR0) supports the variant. */
int gdrx_copy_variant_supported(gdrx_copy_variant_t variant);

/* Fill *impl for a variant; -ENOTSUP if the CPU lacks it. */
int gdrx_copy_impl_get(gdrx_copy_variant_t variant, struct gdrx_copy_impl *impl);

/* The routines the library uses, chosen once (thread-safe, idempotent):
 * best supported variants, or GDRX_COPY_VARIANT=<name> if set and supported.
 */
const struct gdrx_copy_impl *gdrx_copy_default(void);

#endif /* GDRX_COPY_H */
