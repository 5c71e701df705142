/*
 * mpi_bench.h - what gdrx's two-rank MPI benchmarks share: osu-style
 * options, host or device buffers, and the data checks.
 *
 * SPDX-License-Identifier: MIT
 *
 * Options (as osu_latency / osu_bw take them):
 *   -m MIN:MAX  message sizes, powers of two from MIN (0 allowed) to MAX
 *   -i N        timed iterations per size        -x N  warm-up iterations
 *   -w N        window (bandwidth only)          -c    check every message
 *   -r N        latency only: every N round trips, free both buffers,
 *               allocate and free a 1 MiB scratch buffer, and allocate
 *               them again (a CUDA program's churn; untimed); the first
 *               round trip on new buffers is reported apart (a comment
 *               line), the figure is the others'
 *   H|D H|D     rank 0's and rank 1's buffer: host or device (CUDA) memory
 * Without -c, the receive buffer is poisoned before the last timed message
 * and every byte of that message is checked; with -c every message gets a
 * fresh pattern and a poisoned receive buffer.  The time of that work is
 * left out of the figures.
 */
#ifndef GDRX_MPI_BENCH_H
#define GDRX_MPI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "tool_cuda.h"

struct mb_opts {
    size_t min, max;
    int    iters, warmup, window;
    int    check_each;
    int    realloc_every; /* -r: 0, or round trips between reallocations */
    int    dev[2];       /* 1: rank i's buffers are device memory */
};

struct mb_buf {
    int          dev;
    size_t       len;
    void        *host;   /* the host buffer, or the staging copy of a device one */
    CUdeviceptr  dptr;
};

/* Parse argv; 0, or -1 after printing why (rank 0 only prints). */
int mb_parse(int argc, char **argv, struct mb_opts *o, int window_allowed, int rank);

/* MPI_Init, exactly two ranks, the options, and this rank's buffers (send:
 * o->max bytes; receive: o->max per slot, one slot, or a window's worth
 * for a bandwidth run with -c).  0, or an exit status (MPI finalized). */
int mb_start(int *argc, char ***argv, int window_allowed, struct mb_opts *o,
             struct mb_buf *s, struct mb_buf *r, int *rank);
/* A rank that cannot go on (CUDA failed under it): say so and end the
 * job, rather than leave the peer waiting in a send or receive. */
void mb_abort(int rank, const char *what);
/* Free the buffers and MPI_Finalize. */
void mb_finish(struct mb_buf *s, struct mb_buf *r);
/* 0 if no rank saw a bad byte at this size (bad < 0: could not check);
 * else 1, after rank 0 said so. */
int mb_verdict(long bad, size_t len, const char *prog, int rank);

/* CUDA for the device buffers (once per process, only if one is needed). */
int mb_cuda_init(int rank);

/* Allocate / free a buffer of len bytes (len 0 allowed). */
int mb_buf_alloc(struct mb_buf *b, int dev, size_t len);
void mb_buf_free(struct mb_buf *b);
/* Free and allocate b again (same kind and size), allocating and freeing a
 * 1 MiB scratch buffer in between, so the allocator's state moves. */
int mb_buf_renew(struct mb_buf *b);
/* What to hand to MPI. */
void *mb_buf_ptr(const struct mb_buf *b);

/* Fill the first len bytes with the pattern of `seed`; poison them. */
int mb_fill(struct mb_buf *b, size_t len, uint32_t seed);
int mb_poison(struct mb_buf *b, size_t len);
/* Number of the first len bytes that differ from the pattern of `seed`
 * (-1 if they could not be read); prints the first bad offset. */
long mb_check(struct mb_buf *b, size_t len, uint32_t seed, const char *what);

/* Next size of the sweep after s (0 -> 1 -> 2 -> 4 ...). */
size_t mb_next_size(size_t s);

/* The header lines osu prints, with our buffer kinds. */
void mb_header(const char *title, const struct mb_opts *o, const char *unit);

#endif /* GDRX_MPI_BENCH_H */
