/*
 * tool_copy.h - the copies gdrx-copylat and gdrx-copybw time: one pinned,
 * mapped device buffer and host buffers; run functions (tool_measure.h)
 * for gdrx's copy, the floor (the same bytes by bare instructions through
 * the same mapping, tool_floor.h) and cuMemcpy, each direction; and the
 * check that the bytes arrive.
 *
 * Where in the mapping: each op of gdrx's copy and of the floor takes the
 * next slot of a ring (slots of the size rounded up to 64 bytes, line
 * aligned, filling TOOL_COPY_RING bytes, at least one), one cursor shared
 * by both.  A line is so read again only after TOOL_COPY_RING / 64 - 1
 * other lines were: a streaming load (MOVNTDQA) fills a buffer with the
 * whole line, and an op reading the line the previous op read (a batch of
 * one address) could be served from that stale buffer without crossing
 * PCIe, timing less than a round trip.  Both are timed on the same
 * pattern.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_COPY_H
#define GDRX_TOOL_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"
#include "tool_cuda.h"
#include "tool_floor.h"
#include "tool_measure.h"

struct tool_env;

#define TOOL_DIR_TO    1 /* host -> GPU */
#define TOOL_DIR_FROM  2 /* GPU -> host */

#define TOOL_COPY_RING 65536 /* bytes of the mapping the ops rotate over */

struct tool_copy {
    const struct tool_cuda *cu;
    gdrx_pin_t  pin;
    uint8_t    *map;   /* CPU address of dptr through the mapping */
    CUdeviceptr dptr;
    size_t      cap;   /* bytes usable at dptr / map */
    uint8_t    *host;  /* host buffers of cap bytes */
    uint8_t    *check;
    size_t      size;  /* of the op being measured (tool_copy_set_size) */
    size_t      stride;    /* bytes between slots: size rounded up to 64 */
    unsigned    slots, slot; /* slots in the ring; the next one */
    struct tool_floor floor;
};

/* What copies: gdrx's copy, its floor, cuMemcpy, and gdrx's copy of 0
 * bytes (its checks alone: what a copy costs beyond the floor besides). */
enum tool_copy_kind { COPY_GDRX, COPY_FLOOR, COPY_CU, COPY_GDRX0 };

/* Allocate, pin and map room for max_size bytes (and the ring, and an
 * unaligned offset); 0 or -1 (message printed). */
int tool_copy_setup(struct tool_copy *b, struct tool_env *e, size_t max_size);
/* Free the buffers; the caller closed the gdrx context (the pin) first. */
void tool_copy_teardown(struct tool_copy *b);

/* The size the ops copy from now on (<= max_size); the ring restarts. */
void tool_copy_set_size(struct tool_copy *b, size_t size);

/* The tool_op of a kind of copy in a direction (TOOL_DIR_*), named
 * "gdrx", "floor", "cuMemcpy" or "gdrx-0B" (ctx: b, whose size the caller
 * sets with tool_copy_set_size). */
struct tool_op tool_copy_op(struct tool_copy *b, enum tool_copy_kind kind, int dir);

/* Write through gdrx and read back with cuMemcpyDtoH (TOOL_DIR_TO), or
 * write with cuMemcpyHtoD and read through gdrx (FROM), at an aligned and
 * an unaligned offset.  0 if the bytes match; -1 (message printed). */
int tool_copy_verify(struct tool_copy *b, const char *tool, int dir, size_t size);

#endif /* GDRX_TOOL_COPY_H */
