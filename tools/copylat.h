/*
 * copylat.h - what the parts of gdrx-copylat share.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPYLAT_H
#define GDRX_COPYLAT_H

#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"
#include "tool_cuda.h"

#define COPYLAT_MAX_SIZES 64
#define COPYLAT_DIR_TO    1
#define COPYLAT_DIR_FROM  2

struct copylat_opts {
    int            device;
    size_t         sizes[COPYLAT_MAX_SIZES];
    int            nsizes;
    unsigned       iters;   /* timed samples per size */
    unsigned       warmup;  /* untimed copies first */
    const char    *variant; /* NULL: library default; "all"; or a name */
    gdrx_backend_t backend;
    const char    *csv;     /* NULL: no CSV */
    int            dirs;    /* COPYLAT_DIR_* bits */
    int            child;   /* run by -v all: append CSV, header only if asked */
    int            print_header;
};

/* 0: run; 1: help printed, exit 0; -1: bad usage (message printed). */
int copylat_parse(int argc, char **argv, struct copylat_opts *o);

/* ---- measurement (copylat_measure.c) ---- */

struct lat_stats {
    double min, med, p99; /* ns per copy */
};

struct bench {
    const struct tool_cuda *cu;
    gdrx_pin_t  pin;
    uint8_t    *map;   /* CPU address of dptr through the mapping */
    CUdeviceptr dptr;
    size_t      cap;   /* bytes usable at dptr / map */
    uint8_t    *host;  /* pageable host buffers of cap bytes */
    uint8_t    *check;
    unsigned    iters, warmup;
};

enum bench_op { OP_GDRX_TO, OP_GDRX_FROM, OP_CU_TO, OP_CU_FROM };

/* Latency of one op of `size` bytes: batches of copies timed with
 * CLOCK_MONOTONIC_RAW.  0, or a negative gdrx error / -EIO (CUDA). */
int bench_measure(struct bench *b, enum bench_op op, size_t size, struct lat_stats *out);

/* Write through gdrx and read back with cuMemcpyDtoH (dir TO), or write
 * with cuMemcpyHtoD and read through gdrx (FROM), at an aligned and an
 * unaligned offset.  0 if the bytes match; -1 (message printed) if not. */
int bench_verify(struct bench *b, int dir, size_t size);

#endif /* GDRX_COPYLAT_H */
