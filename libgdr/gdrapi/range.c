/*
 * range.c - which device memory gdr_pin_buffer(addr, size) pins.
 *
 * SPDX-License-Identifier: MIT
 *
 * gdrcopy pins whole GPU pages, [addr & GPU_PAGE_MASK, round up(addr +
 * size)), and its callers rely on that: gdr_map returns the CPU address of
 * the first page, and UCX's gdr_copy transport registers page-rounded
 * windows around small (sub-allocated) buffers, then copies to any buffer
 * that falls in the window.  A gdrx pin is a range of one CUDA allocation;
 * a request that reaches past the allocation of its first allocated byte
 * becomes a GDRX_PIN_FLAG_SPAN pin from that byte to the end of the pages,
 * which reaches the neighbours too and is revoked when any of them is
 * freed.  Where the backend cannot pin the pages as one piece, the pin is
 * the part of them in the allocation the request is for.
 */
#include <errno.h>

#include "gdrapi_internal.h"

/* CUDA aligns every allocation to at least this: where an address belongs
 * to no allocation, the next one cannot start before the next multiple. */
#define RANGE_STEP 256u
/* The most addresses looked up for one request: the walk below is for
 * requests that spill over their allocation by less than a GPU page on
 * each side; past this many look-ups it settles for what it found. */
#define RANGE_MAX_LOOKUPS 4096u

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* How well allocation [base, base_end) fits a request [addr, end) that
 * no single allocation holds: 2 when it lies inside it and covers the same
 * GPU pages (what UCX's rounding of that buffer asks for), 1 when it only
 * lies inside it, 0 when it overlaps its edge (a neighbour). */
static int fit(uint64_t base, uint64_t base_end, uint64_t addr, uint64_t end)
{
    if (base < addr || base_end > end)
        return 0;
    int same_pages = (base & GPU_PAGE_MASK) == (addr & GPU_PAGE_MASK) &&
                     ((base_end + GPU_PAGE_OFFSET) & GPU_PAGE_MASK) ==
                     ((end + GPU_PAGE_OFFSET) & GPU_PAGE_MASK);
    return same_pages ? 2 : 1;
}

/* The first byte at or after p, before end, that lies in an allocation,
 * and that allocation; -ENOENT if there is none, or the request's budget of
 * look-ups (*budget) ran out. */
static int first_allocated(uint64_t p, uint64_t end, unsigned *budget, uint64_t *first,
                           struct gdrx_mem_info *m)
{
    for (; p < end && *budget > 0; (*budget)--) {
        int rc = gdrx_mem_query(p, m);
        if (rc == 0) {
            *first = p;
            return 0;
        }
        if (rc != -ENOENT)
            return rc;
        p = (p | (RANGE_STEP - 1)) + 1;
    }
    return -ENOENT;
}

/* The allocation the request [addr, end) is for, when no single one holds
 * it: the best fit, then the most bytes in the range.  EINVAL if no byte of
 * the range is CUDA device memory.  (Several small buffers inside one GPU
 * page all fit best: the largest is taken; docs/compat.md.) */
static int best_allocation(uint64_t addr, uint64_t end, unsigned *budget,
                           struct gdrx_mem_info *best)
{
    uint64_t best_bytes = 0, p = addr;
    struct gdrx_mem_info m;
    int best_fit = -1, rc;

    while ((rc = first_allocated(p, end, budget, &p, &m)) == 0) {
        uint64_t m_end = m.base + m.size;
        uint64_t bytes = min_u64(m_end, end) - p;
        int f = fit(m.base, m_end, addr, end);
        if (f > best_fit || (f == best_fit && bytes > best_bytes)) {
            best_fit = f;
            best_bytes = bytes;
            *best = m;
        }
        p = max_u64(m_end, p + 1);
        (*budget)--;
    }
    if (rc != -ENOENT)
        return gdrapi_err(rc);
    return best_fit >= 0 ? 0 : EINVAL;
}

/* r: the part of the pages [addr & GPU_PAGE_MASK, page_end) in
 * allocation a. */
static void one_allocation(uint64_t addr, uint64_t page_end, const struct gdrx_mem_info *a,
                           struct gdrapi_range *r)
{
    r->dptr = max_u64(addr & GPU_PAGE_MASK, a->base);
    r->len = (size_t)(min_u64(page_end, a->base + a->size) - r->dptr);
    r->flags = GDRX_PIN_FLAG_DEFAULT;
}

static uint64_t page_end_of(uint64_t end)
{
    return (end + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
}

int gdrapi_pin_range(uint64_t addr, size_t size, struct gdrapi_range *r)
{
    /* The end, rounded up to a GPU page, must not wrap. */
    if (size == 0 || addr > UINT64_MAX - GPU_PAGE_OFFSET - size)
        return EINVAL;
    uint64_t end = addr + size;
    uint64_t first = addr;
    unsigned budget = RANGE_MAX_LOOKUPS;
    struct gdrx_mem_info a;
    int rc = first_allocated(addr, end, &budget, &first, &a);
    if (rc == -ENOENT)
        return EINVAL; /* no byte of the request is device memory */
    if (rc)
        return gdrapi_err(rc);
    if (end - a.base <= a.size) {
        /* The usual case: the request lies in one allocation. */
        one_allocation(addr, page_end_of(end), &a, r);
        return 0;
    }
    r->dptr = first;
    r->len = (size_t)(page_end_of(end) - first);
    r->flags = GDRX_PIN_FLAG_SPAN;
    return 0;
}

int gdrapi_fallback_range(uint64_t addr, size_t size, struct gdrapi_range *r)
{
    unsigned budget = RANGE_MAX_LOOKUPS;
    struct gdrx_mem_info a;
    int rc = best_allocation(addr, addr + size, &budget, &a);
    if (rc)
        return rc;
    one_allocation(addr, page_end_of(addr + size), &a, r);
    return 0;
}
