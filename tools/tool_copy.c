/*
 * tool_copy.c - the copies gdrx-copylat and gdrx-copybw time, their buffer
 * and their data checks (tool_copy.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_copy.h"
#include "tool_env.h"
#include "tool_floor.h"

/* The next slot of the ring (tool_copy.h). */
static inline size_t next_slot(struct tool_copy *b)
{
    size_t off = (size_t)b->slot * b->stride;
    if (++b->slot == b->slots)
        b->slot = 0;
    return off;
}

void tool_copy_set_size(struct tool_copy *b, size_t size)
{
    b->size = size;
    b->stride = (size + 63) & ~(size_t)63;
    b->slots = b->stride && b->stride < TOOL_COPY_RING ? (unsigned)(TOOL_COPY_RING / b->stride)
                                                       : 1;
    b->slot = 0;
}

static int gdrx_to(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = gdrx_copy_to_mapping(b->pin, b->map + next_slot(b), b->host, b->size);
    return rc;
}

static int gdrx_from(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = gdrx_copy_from_mapping(b->pin, b->host, b->map + next_slot(b), b->size);
    return rc;
}

/* Checks alone: no byte moves, so no slot is taken. */
static int gdrx0_to(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = gdrx_copy_to_mapping(b->pin, b->map, b->host, 0);
    return rc;
}

static int gdrx0_from(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = gdrx_copy_from_mapping(b->pin, b->host, b->map, 0);
    return rc;
}

static int floor_to(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    for (unsigned i = 0; i < count; i++)
        b->floor.store(b->map + next_slot(b), b->host, b->size);
    return 0;
}

static int floor_from(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    for (unsigned i = 0; i < count; i++)
        b->floor.load(b->host, b->map + next_slot(b), b->size);
    return 0;
}

static int cu_to(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    for (unsigned i = 0; i < count; i++)
        if (b->cu->MemcpyHtoD(b->dptr, b->host, b->size) != CUDA_SUCCESS)
            return -EIO;
    return 0;
}

static int cu_from(void *ctx, unsigned count)
{
    struct tool_copy *b = ctx;
    for (unsigned i = 0; i < count; i++)
        if (b->cu->MemcpyDtoH(b->host, b->dptr, b->size) != CUDA_SUCCESS)
            return -EIO;
    return 0;
}

struct tool_op tool_copy_op(struct tool_copy *b, enum tool_copy_kind kind, int dir)
{
    static const struct {
        const char *name;
        int (*fn[2])(void *, unsigned); /* to, from */
    } kinds[] = {
        [COPY_GDRX] = { "gdrx", { gdrx_to, gdrx_from } },
        [COPY_FLOOR] = { "floor", { floor_to, floor_from } },
        [COPY_CU] = { "cuMemcpy", { cu_to, cu_from } },
        [COPY_GDRX0] = { "gdrx-0B", { gdrx0_to, gdrx0_from } },
    };
    struct tool_op op = { .name = kinds[kind].name,
                          .run = kinds[kind].fn[dir == TOOL_DIR_TO ? 0 : 1], .ctx = b };
    return op;
}

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static int verify_at(struct tool_copy *b, const char *tool, int dir, size_t size, size_t off)
{
    const char *what = dir == TOOL_DIR_TO ? "gdrx write, cuMemcpyDtoH read"
                                             : "cuMemcpyHtoD write, gdrx read";
    int rc;

    fill_pattern(b->host, size, (uint32_t)(size * 31 + off + (size_t)dir));
    memset(b->check, 0, size);
    if (dir == TOOL_DIR_TO) {
        rc = gdrx_copy_to_mapping(b->pin, b->map + off, b->host, size);
        if (rc == 0 && b->cu->MemcpyDtoH(b->check, b->dptr + off, size) != CUDA_SUCCESS)
            rc = -EIO;
    } else {
        rc = b->cu->MemcpyHtoD(b->dptr + off, b->host, size) == CUDA_SUCCESS ? 0 : -EIO;
        if (rc == 0)
            rc = gdrx_copy_from_mapping(b->pin, b->check, b->map + off, size);
    }
    if (rc != 0) {
        fprintf(stderr, "%s: verify %zu B at +%zu (%s): %s\n", tool, size, off, what,
                rc == -EIO ? "cuMemcpy failed" : gdrx_strerror(rc));
        return -1;
    }
    for (size_t i = 0; i < size; i++) {
        if (b->check[i] != b->host[i]) {
            fprintf(stderr, "%s: MISMATCH %zu B at +%zu (%s): byte %zu is "
                    "0x%02x, wrote 0x%02x\n", tool, size, off, what, i, b->check[i], b->host[i]);
            return -1;
        }
    }
    return 0;
}

int tool_copy_verify(struct tool_copy *b, const char *tool, int dir, size_t size)
{
    /* +3: an unaligned mapping address takes the head/tail paths too. */
    if (verify_at(b, tool, dir, size, 0) != 0)
        return -1;
    return size + 3 <= b->cap ? verify_at(b, tool, dir, size, 3) : 0;
}

int tool_copy_setup(struct tool_copy *b, struct tool_env *e, size_t max_size)
{
    char why[256];
    void *map;
    int rc;

    memset(b, 0, sizeof(*b));
    b->cu = &e->cu;
    tool_floor_pick(&b->floor);
    /* The ring (or one slot of the largest size), and 64 bytes for the
     * unaligned check; max_size <= TOOL_MAX_SIZE (tool_parse_size): no
     * overflow here.  The host buffers as large: the floor's loads store
     * whole lines. */
    size_t ring = (max_size + 63) & ~(size_t)63;
    b->cap = ((ring > TOOL_COPY_RING ? ring : TOOL_COPY_RING) + 64 + 65535) & ~(size_t)65535;
    b->host = calloc(1, b->cap);
    b->check = calloc(1, b->cap);
    CUresult cr = e->cu.MemAlloc(&b->dptr, b->cap);
    if (!b->host || !b->check || cr != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cannot allocate 2 x %zu bytes host, %zu device: %s\n",
                e->opts->tool, b->cap, b->cap,
                cr != CUDA_SUCCESS ? tool_cuda_error(&e->cu, cr) : "out of memory");
        return -1;
    }
    if ((rc = gdrx_pin(e->ctx, b->dptr, b->cap, GDRX_PIN_FLAG_DEFAULT, &b->pin)) != 0 ||
        (rc = gdrx_map(e->ctx, b->pin, &map)) != 0) {
        fprintf(stderr, "%s: gdrx_pin/gdrx_map of %zu bytes: %s\n", e->opts->tool, b->cap,
                tool_gdrx_why(rc, why, sizeof(why)));
        return -1;
    }
    b->map = map;
    /* Every page touched once (host buffers and mapping), so that no page
     * fault lands in a timed batch or in calibration: the ring's slots
     * are met for the first time while the batches are sized. */
    memset(b->host, 0, b->cap);
    memset(b->check, 0, b->cap);
    if ((rc = gdrx_copy_to_mapping(b->pin, b->map, b->host, b->cap)) != 0) {
        fprintf(stderr, "%s: gdrx_copy_to_mapping of %zu bytes: %s\n", e->opts->tool, b->cap,
                tool_gdrx_why(rc, why, sizeof(why)));
        return -1;
    }
    tool_env_describe_pin(e, b->pin);
    return 0;
}

void tool_copy_teardown(struct tool_copy *b)
{
    /* The pin went with the context (tool_env_close_gdrx, called first). */
    if (b->dptr)
        b->cu->MemFree(b->dptr);
    free(b->host);
    free(b->check);
    memset(b, 0, sizeof(*b));
}
