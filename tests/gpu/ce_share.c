/*
 * ce_share.c - what one copy-engine copy costs when two processes take
 * turns on one GPU, as two MPI ranks do in osu_latency D D.  Answers why
 * UCX's cuda_copy takes ~150 us a message at 8 B-16 KiB without MPS on an
 * H100 but ~20 us at 32 KiB and more (docs/mpi.md): is it CUDA's, and
 * which copies pay it?
 *
 * Two processes (forked before CUDA is touched, each with its own primary
 * context) pass a turn through shared memory.  In its turn a process makes
 * one copy of SIZE bytes between its device buffer and a host buffer
 * (cuMemcpyAsync on a non-blocking stream, then cuStreamSynchronize) and
 * hands the turn over; the other process does the same.  Reported: the
 * median and p90 of one turn (copy plus handover) in microseconds, for
 * each direction (d2h, h2d), host memory (pageable, or pinned by
 * cuMemHostRegister) and size; the two "alone" rows come first: the same
 * loop at 8 B while the second process only passes the turn back, before
 * it has opened CUDA at all.
 *
 *   gcc -O2 -I/usr/local/cuda/include ce_share.c -o ce_share \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./ce_share [iterations]
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE (256u << 10)
#define MAX_ITERS 2000

struct shared {
    _Atomic int turn;     /* 0: parent's, 1: child's, -1: child done */
    _Atomic int start;    /* test number the child is to run */
    _Atomic int ready;    /* child set up its buffers for that test */
};

enum dir { D2H, H2D };

struct test {
    enum dir dir;
    int      pinned;
    size_t   size;
    int      alone;   /* the child takes no copy (and has no context) */
};

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

#define CK(_call) \
    do { \
        CUresult _r = (_call); \
        if (_r != CUDA_SUCCESS) { \
            fprintf(stderr, "%s failed: %d (line %d)\n", #_call, (int)_r, \
                    __LINE__); \
            exit(2); \
        } \
    } while (0)

struct gpu {
    CUcontext   ctx;
    CUstream    stream;
    CUdeviceptr dev;
    void       *host;
    int         pinned;
};

static void gpu_open(struct gpu *g)
{
    CUdevice d;

    CK(cuInit(0));
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&g->ctx, d));
    CK(cuCtxSetCurrent(g->ctx));
    CK(cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&g->dev, MAX_SIZE));
    if (posix_memalign(&g->host, 4096, MAX_SIZE) != 0) {
        exit(2);
    }
    memset(g->host, 1, MAX_SIZE);
    g->pinned = 0;
}

static void gpu_pin(struct gpu *g, int pinned)
{
    if (pinned && !g->pinned) {
        CK(cuMemHostRegister(g->host, MAX_SIZE, 0));
    } else if (!pinned && g->pinned) {
        CK(cuMemHostUnregister(g->host));
    }
    g->pinned = pinned;
}

static void gpu_copy(struct gpu *g, enum dir dir, size_t size)
{
    if (dir == D2H) {
        CK(cuMemcpyDtoHAsync(g->host, g->dev, size, g->stream));
    } else {
        CK(cuMemcpyHtoDAsync(g->dev, g->host, size, g->stream));
    }
    CK(cuStreamSynchronize(g->stream));
}

static pid_t peer; /* the parent's child: its death ends the parent's waits */

/* Spins until *flag is value; in the parent, gives up (exit 1) if the
 * child died, which would otherwise leave it spinning for ever. */
static void wait_for(_Atomic int *flag, int value)
{
    unsigned n = 0;
    int status;

    while (atomic_load_explicit(flag, memory_order_acquire) != value) {
        if ((peer > 0) && ((++n & 0xfffff) == 0) &&
            (waitpid(peer, &status, WNOHANG) == peer)) {
            fprintf(stderr, "ce_share: the second process ended (status "
                    "0x%x)\n", status);
            exit(1);
        }
    }
}

static void wait_turn(struct shared *s, int me)
{
    wait_for(&s->turn, me);
}

static void pass_turn(struct shared *s, int to)
{
    atomic_store_explicit(&s->turn, to, memory_order_release);
}

static const size_t sizes[] = {8, 1024, 4096, 8192, 16384, 24576, 32768,
                               65536, 262144};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int ntests(void)
{
    return 2 * 2 * NSIZES + 2; /* + two "alone" rows */
}

static struct test test_at(int i)
{
    struct test t = {0};

    /* the two "alone" rows first: the child opens CUDA only after them */
    if (i < 2) {
        t.dir   = i ? H2D : D2H;
        t.size  = 8;
        t.alone = 1;
        return t;
    }
    i       -= 2;
    t.dir    = (i / (2 * NSIZES)) ? H2D : D2H;
    t.pinned = (i / NSIZES) % 2;
    t.size   = sizes[i % NSIZES];
    return t;
}

static void child(struct shared *s, int iters)
{
    struct gpu g;
    int have_gpu = 0, i, k;

    for (i = 0; i < ntests(); ++i) {
        struct test t = test_at(i);

        wait_for(&s->start, i);
        if (!t.alone && !have_gpu) {
            gpu_open(&g);
            have_gpu = 1;
        }
        if (!t.alone) {
            gpu_pin(&g, t.pinned);
        }
        atomic_store_explicit(&s->ready, i, memory_order_release);
        for (k = 0; k < iters; ++k) {
            wait_turn(s, 1);
            if (!t.alone) {
                gpu_copy(&g, t.dir, t.size);
            }
            pass_turn(s, 0);
        }
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    int iters = (argc > 1) ? atoi(argv[1]) : 500;
    static double lat[MAX_ITERS];
    struct shared *s;
    struct gpu g;
    pid_t pid;
    int i, k, status;

    if ((iters < 10) || (iters > MAX_ITERS)) {
        fprintf(stderr, "iterations: 10 to %d\n", MAX_ITERS);
        return 2;
    }
    s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        return 2;
    }
    atomic_store(&s->turn, 0);
    atomic_store(&s->start, -1);
    atomic_store(&s->ready, -1);
    pid = fork();
    if (pid < 0) {
        return 2;
    }
    if (pid == 0) {
        /* never outlive the parent (it may die at a CUDA error) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) {
            _exit(1);
        }
        child(s, iters);
    }
    peer = pid;
    gpu_open(&g);
    printf("%-4s %-8s %8s %10s %10s\n", "dir", "host", "size", "median_us",
           "p90_us");
    for (i = 0; i < ntests(); ++i) {
        struct test t = test_at(i);

        gpu_pin(&g, t.pinned);
        atomic_store_explicit(&s->start, i, memory_order_release);
        wait_for(&s->ready, i);
        for (k = 0; k < iters; ++k) {
            double t0 = now_us();

            gpu_copy(&g, t.dir, t.size);
            pass_turn(s, 1);
            wait_turn(s, 0);
            lat[k] = now_us() - t0;
        }
        qsort(lat, iters, sizeof(lat[0]), cmp_double);
        printf("%-4s %-8s %8zu %10.2f %10.2f%s\n", t.dir == D2H ? "d2h" : "h2d",
               t.alone ? "pageable" : (t.pinned ? "pinned" : "pageable"),
               t.size, lat[iters / 2], lat[iters * 9 / 10],
               t.alone ? "  (alone: the other process has no CUDA context)" : "");
        fflush(stdout);
    }
    waitpid(pid, &status, 0);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
}
