/*
 * integrity_check.h - what the randomised two-rank MPI data checks
 * (gdrx_mpi_integrity: one stream of messages; gdrx_mpi_threads: one
 * stream per thread) share: the schedule both ranks draw from one seed
 * without talking, the buffers it frees and allocates again, the pattern of
 * (seed, message, byte) between guards, and the check of every byte.
 *
 * A stream is one seed's schedule between the two ranks: per message the
 * sending rank, the memory of each side (host malloc, CUDA device memory),
 * the size (around every protocol threshold), the sender's offset (0-63)
 * and the receiver's (64-127); now and then a rank's buffers are freed and
 * allocated again, at the same address or at another.  Nothing in here is
 * shared between streams except the CUDA handles, so streams may run in
 * threads of their own.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_INTEGRITY_CHECK_H
#define GDRX_INTEGRITY_CHECK_H

#include <stdatomic.h>
#include <stdint.h>

#include "tool_cuda.h"

#define IC_GUARD 64
/* the largest message (and so -M's limit) */
#define IC_MAX_MSG ((size_t)1 << 20)
/* a window buffer's size for messages up to max: guards and offsets */
#define IC_WINDOW(max) ((max) + 2 * IC_GUARD + 128)

enum { IC_HOST, IC_DEV };
enum { IC_DD, IC_HD, IC_DH, IC_HH, IC_DIRS };
extern const char *const ic_dir_names[IC_DIRS];

/* How device buffers are allocated: the driver API (cuMemAlloc), the
 * runtime (cudaMalloc), or either, drawn per reallocation. */
enum ic_alloc { IC_ALLOC_DRIVER, IC_ALLOC_RUNTIME, IC_ALLOC_MIXED };

/* The process's CUDA: the driver API, the runtime's allocation calls when
 * loaded, and (gdrx_mpi_integrity -B) a buffer allocated before MPI_Init
 * that the first device allocation that fits takes instead. */
struct ic_cuda {
    struct tool_cuda cu;
    int (*rt_malloc)(void **p, size_t len); /* cudaError_t is an int */
    int (*rt_free)(void *p);
    enum ic_alloc alloc;
    CUdeviceptr early;
    size_t      early_len;
    int         early_taken;
};
extern struct ic_cuda ic_cuda;
/* the program's name in messages */
extern const char *ic_prog;

/* Load cudaMalloc/cudaFree from libcudart.so; 0, or -1 with why in err. */
int ic_load_runtime(char *err, size_t errlen);

/* One rank's buffers in one stream.  Both ranks keep both ranks' (each
 * knows the other's capacities from the schedule); only a rank's own are
 * allocated. */
struct ic_bufs {
    size_t      cap[2]; /* [IC_HOST], [IC_DEV] */
    char       *host;
    CUdeviceptr dptr;
    int         dptr_runtime; /* dptr came from cudaMalloc */
    long        reallocs;
};

/* Free a rank's own buffers (at the end). */
void ic_bufs_free(int rank, struct ic_bufs *b);

/* A stream: its seed, schedule state and options. */
struct ic_stream {
    uint64_t seed;          /* the pattern's */
    uint64_t s;             /* the schedule's generator */
    size_t   max;           /* largest message */
    int      realloc_every; /* mean messages between reallocations */
    int      dirs[IC_DIRS], ndirs;
    int      rank;          /* this process's */
    struct ic_bufs bufs[2];
};

/* Start a stream: draw both ranks' first buffers (allocating this rank's). */
void ic_stream_start(struct ic_stream *st);

struct ic_msg {
    long   i;
    int    dir, sender, skind, rkind;
    size_t len, soff, roff;
};

/* Draw message i: first the reallocations due before it (this rank's are
 * done), then the message itself, its length cut to both buffers. */
void ic_draw_msg(struct ic_stream *st, long i, struct ic_msg *m);

/* How a bad window is reported. */
struct ic_report {
    const char     *who;      /* "" or e.g. "thread 3 " */
    int             verbose;  /* every bad message, else the first IC_MAX_SHOWN */
    atomic_long    *shown;    /* shared by every stream of the process */
    const uint64_t *seeds;    /* streams whose payloads a bad one may hold */
    int             nseeds;
};
#define IC_MAX_SHOWN 10

/* Send or receive message m of stream st (MPI_Send/MPI_Recv with tag on
 * MPI_COMM_WORLD) and check it: the receiver its guards and every payload
 * byte, the sender that its window did not change.  damage: the check's
 * own check, a payload and a guard byte of the received window flipped
 * before the check.  want, got: IC_WINDOW(st->max) bytes each.  1 if the
 * window was bad (reported), else 0. */
int ic_exchange(struct ic_stream *st, const struct ic_msg *m, int tag, int damage,
                const struct ic_report *rep, uint8_t *want, uint8_t *got);

/* Parse a comma list of DD,HD,DH,HH; 0 or -1. */
int ic_parse_dirs(const char *arg, int dirs[IC_DIRS], int *ndirs);

/* splitmix64: the schedule's and the pattern's generator. */
uint64_t ic_splitmix(uint64_t *s);

#endif /* GDRX_INTEGRITY_CHECK_H */
