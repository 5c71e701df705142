/*
 * copy.h - CPU copy routines to/from device mappings, with runtime CPU
 * dispatch.  The only header the rest of the library includes for copying.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_H
#define GDRX_COPY_H

#include <stddef.h>
#include "gdrx.h"

/* Marks a public gdrx_ function: the library is built with
 * -fvisibility=hidden and the version script exports gdrx_* only. */
#ifndef GDRX_EXPORT
#define GDRX_EXPORT __attribute__((visibility("default")))
#endif

/*
 * A routine copies len bytes.  The contract every routine but LIBC keeps
 * (tests/copy proves it):
 *  - the result equals memcpy for every size and alignment;
 *  - to_mapping never touches the mapping outside [dst, dst+len) and
 *    stores each of its bytes exactly once (write-combined memory and
 *    device registers see every store); each store is naturally aligned:
 *    1/2/4/8 bytes up to 16-byte alignment, then 16/32/64-byte vectors.
 *    It reads the host source only inside [src, src+len);
 *  - from_mapping may *read* the mapping in whole aligned blocks of the
 *    variant's load width (16, 32 or 64 bytes): exactly the blocks that
 *    overlap [src, src+len), each once, in ascending address order, never
 *    a byte beyond them.  An aligned block of at most 64 bytes lies inside
 *    one page, so it never touches a page that the range does not overlap;
 *    the caller's mapping is whole pages of pinned device memory, where a
 *    load has no side effect.  It fetches exactly the 64-B lines the range
 *    overlaps (one round trip each with MOVNTDQA; 1..64 bytes inside one
 *    line cost one).  len 0 reads nothing.  It writes the host destination
 *    only inside [dst, dst+len), possibly a byte more than once (the
 *    head and tail are copied out of a stack buffer with overlapping
 *    moves; host memory does not mind);
 *  - from_mapping starts with a load fence (lfence): loads from WC memory
 *    are weakly ordered and must not pass the caller's earlier loads;
 *  - it ends with a store fence (sfence).
 * LIBC is plain memcpy plus sfence, meant for cache-coherent mappings only
 * (ordinary x86 ordering applies there): memcpy may store a byte twice
 * (overlapping tails).
 */
typedef void (*gdrx_copy_fn)(void *dst, const void *src, size_t len);

struct gdrx_copy_impl {
    gdrx_copy_variant_t variant;      /* variant of to_mapping */
    gdrx_copy_fn        to_mapping;   /* host -> WC mapping (NT stores) */
    gdrx_copy_variant_t from_variant; /* variant whose loads from_mapping uses:
                                         differs from variant for MOVDIR64B
                                         (no 64-B load; best streaming load)
                                         and when the default was chosen per
                                         direction */
    gdrx_copy_fn        from_mapping; /* WC mapping -> host (streaming loads) */
};

/* 1 if the running CPU (and OS, via XCR0) supports the variant. */
int gdrx_copy_variant_supported(gdrx_copy_variant_t variant);

/* Fill *impl for a variant; -ENOTSUP if the CPU lacks it, -EINVAL if the
 * value names no variant (GDRX_COPY_AUTO gives the default). */
int gdrx_copy_impl_get(gdrx_copy_variant_t variant, struct gdrx_copy_impl *impl);

/* The routines the library uses, chosen once (thread-safe, idempotent):
 * best supported variants, or GDRX_COPY_VARIANT=<name> (both directions),
 * GDRX_COPY_TO_VARIANT / GDRX_COPY_FROM_VARIANT (one direction, these win)
 * if set and supported.  Never fails: a bad or unsupported name falls back
 * to the default and gdrx_copy_default_note() says why.
 */
const struct gdrx_copy_impl *gdrx_copy_default(void);

/* The routines for a mapping of the given type (gdrx_map, fastpath.c):
 * LIBC both ways for GDRX_MAPPING_CACHING, gdrx_copy_default() for every
 * other type.  Why is next to the code (copy_dispatch.c). */
const struct gdrx_copy_impl *gdrx_copy_for_mapping(gdrx_mapping_type_t type);

/* Why gdrx_copy_default() ignored an environment request, or "" if it did
 * not.  Valid for the life of the process. */
const char *gdrx_copy_default_note(void);

/* Parse a variant name as GDRX_COPY_VARIANT takes it ("sse2", "sse41",
 * "avx2", "avx512", "movdir64b", "libc", "auto"; case-insensitive).
 * 0 on success, -EINVAL if unknown. */
int gdrx_copy_variant_parse(const char *name, gdrx_copy_variant_t *out);

#endif /* GDRX_COPY_H */
