/*
 * gdrapi_internal.h - what the files of libgdrapi share: the handle
 * conversions and the few helpers over gdrx.h.
 *
 * SPDX-License-Identifier: MIT
 *
 * libgdrapi keeps no state of its own.  A gdr_t carries the gdrx context
 * handle and a gdr_mh_t the gdrx pin handle, so every check on them (open,
 * live, of this context, mapped, not freed by CUDA) is libgdrx's, the copy
 * path stays lock-free, and a closed or made-up handle is refused instead
 * of being dereferenced.  Nothing is allocated, so nothing can leak.
 */
#ifndef GDRAPI_INTERNAL_H
#define GDRAPI_INTERNAL_H

#include <stdint.h>

#include "gdrapi.h"
#include "gdrx.h"

#define GDRAPI_EXPORT __attribute__((visibility("default")))

/* gdr_t is never a pointer to memory: it is the context id (never 0). */
static inline gdrx_t gdrapi_ctx(gdr_t g)
{
    gdrx_t ctx = { .id = (uint64_t)(uintptr_t)g };
    return ctx;
}

static inline gdr_t gdrapi_g(gdrx_t ctx)
{
    return (gdr_t)(uintptr_t)ctx.id;
}

static inline gdrx_pin_t gdrapi_pin(gdr_mh_t mh)
{
    gdrx_pin_t pin = { .id = (uint64_t)mh.h };
    return pin;
}

static inline gdr_mh_t gdrapi_mh(gdrx_pin_t pin)
{
    gdr_mh_t mh = { .h = (unsigned long)pin.id };
    return mh;
}

/* gdrcopy's errors are positive errno values, gdrx's negative ones. */
static inline int gdrapi_err(int gdrx_rc)
{
    return -gdrx_rc;
}

/* The pin's description; 0 or a gdrcopy error (EINVAL for a handle that
 * is not a live pin of g, EBADF for a g that is not open). */
int gdrapi_query(gdr_t g, gdr_mh_t mh, struct gdrx_pin_info *info);

/* The fields both info structures have (gdr_info of gdrcopy 2.0-2.3,
 * gdr_info_v2), from a pin's description: the pinned GPU pages, whether
 * and how they are mapped.  A macro: the two structures are unrelated
 * types.  tm_cycles and cycles_per_ms are obsolete in gdrcopy. */
#define GDRAPI_FILL_INFO(info, pi)                                     \
    do {                                                               \
        (info)->va = (pi)->pinned_base;                                \
        (info)->mapped_size = (pi)->pinned_size;                       \
        (info)->page_size = (uint32_t)(pi)->page_size;                 \
        (info)->tm_cycles = 0;                                         \
        (info)->cycles_per_ms = 0;                                     \
        (info)->mapped = (pi)->mapping_type != GDRX_MAPPING_NONE;      \
        (info)->wc_mapping = (pi)->mapping_type == GDRX_MAPPING_WC;    \
    } while (0)

/* The CPU address of info->pinned_base, given cpu_ptr, that of
 * info->dptr: gdrx maps the pinned pages whole, from pinned_base. */
static inline void *gdrapi_map_base(const struct gdrx_pin_info *info, void *cpu_ptr)
{
    return (char *)cpu_ptr - (info->dptr - info->pinned_base);
}

/* A gdrx pin of [dptr, dptr + len) with gdrx pin flags (range.c). */
struct gdrapi_range {
    uint64_t dptr;
    size_t   len;
    uint32_t flags;
};

/* What gdr_pin_buffer(addr, size) pins first: the part of the GPU pages
 * [addr & GPU_PAGE_MASK, round up(addr + size)) in the one CUDA allocation
 * that holds the request, or, where it reaches past one allocation, a
 * GDRX_PIN_FLAG_SPAN pin of those pages from their first allocated byte.
 * 0 or a gdrcopy error. */
int gdrapi_pin_range(uint64_t addr, size_t size, struct gdrapi_range *r);

/* Where the backend refused that span: the part of the pages in the one
 * allocation the request is for.  0 or a gdrcopy error. */
int gdrapi_fallback_range(uint64_t addr, size_t size, struct gdrapi_range *r);

#endif /* GDRAPI_INTERNAL_H */
