/*
 * gdrx_mpi_threads.c - the randomised two-rank data check of
 * gdrx_mpi_integrity, run by T threads a rank at once under
 * MPI_THREAD_MULTIPLE: does every byte of every message arrive, and nothing
 * else change, while other threads of the same process free and allocate
 * host and device memory and send and receive?
 *
 * Thread t of rank 0 and thread t of rank 1 run one stream
 * (integrity_check.h) of their own: a seed derived from (-s, t) gives both
 * the same schedule (per message the direction, each side's memory kind,
 * the size around the protocol thresholds, the offsets; now and then each
 * rank's buffers freed and allocated again, at the same address or at
 * another, with cuMemAlloc or cudaMalloc), a tag range of their own, and
 * buffers of their own.  What the threads share is the process: UCX's
 * worker, its memory-type and registration caches, gdrx's pins and the
 * allocator, whose freed addresses another thread's next allocation takes
 * (the window in which a late free event can delete a new allocation's
 * entry, issue 43).  A payload that arrives in the wrong thread is told by
 * its pattern ("stream T's message J's payload").
 *
 *   gdrx_mpi_threads [-t THREADS] [-n MESSAGES] [-s SEED] [-M MAX] [-r EVERY]
 *                    [-k KINDS] [-A ALLOC] [-W SECONDS] [-F N] [-S] [-v]
 *     -t  threads a rank (8, at most 32)   -n  messages a thread (1000)
 *     -s  seed (1)                         -M  largest message (1 MiB)
 *     -r  mean messages between a thread's reallocations (10)
 *     -k  directions to draw from, a comma list of DD,HD,DH,HH (all)
 *     -A  device allocations: driver (cuMemAlloc), runtime (cudaMalloc from
 *         libcudart.so) or mixed, drawn per reallocation (mixed)
 *     -W  a thread that finishes no message for SECONDS is hung: every
 *         thread's state is printed and the job aborted (30; 0: never)
 *     -F N  the check's own check: damage the window thread 0's message N
 *         left at its receiver (one payload byte, one guard byte)
 *     -S  ask for MPI_THREAD_SERIALIZED only: tests the not-run path
 *     -v  print every bad message (else the first 10 of a rank)
 * Exit status: 0 every message intact; 1 a bad message; 2 usage; 3 not run
 * (no CUDA, or no runtime for -A runtime|mixed); 4 not run (the MPI library
 * does not provide MPI_THREAD_MULTIPLE); 5 a thread hung (-W).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "integrity_check.h"

#define MAX_THREADS 32
/* tags of thread t: t * TAG_SPAN + message % TAG_SPAN, below MPI's
 * guaranteed upper bound of 32767 for every thread count */
#define TAG_SPAN 1000
#define EXIT_NO_THREADS 4
#define EXIT_HUNG       5

struct opts {
    long     messages;
    uint64_t seed;
    size_t   max;
    int      realloc_every, threads, watchdog;
    int      dirs[IC_DIRS], ndirs;
    int      verbose, serialized;
    enum ic_alloc alloc;
    long     damage; /* -F: thread 0's message whose window is damaged, or -1 */
};

/* One thread's stream and its results.  The watchdog reads done, the
 * message in flight and when it began while the thread runs. */
struct worker {
    pthread_t        tid;
    int              t;
    struct ic_stream st;
    long             count[IC_DIRS], bad[IC_DIRS];
    atomic_long      cur;      /* the message in flight */
    atomic_int       sending;  /* its side */
    atomic_long      cur_len;
    atomic_llong     since_ms; /* when it began */
    atomic_int       done;
};

static struct opts o;
static struct worker workers[MAX_THREADS];
static uint64_t seeds[MAX_THREADS];
static atomic_long shown;
static CUcontext ctx;

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse(int argc, char **argv, int rank)
{
    int c;

    o = (struct opts){ .messages = 1000, .seed = 1, .max = IC_MAX_MSG, .realloc_every = 10,
                       .threads = 8, .watchdog = 30, .dirs = { IC_DD, IC_HD, IC_DH, IC_HH },
                       .ndirs = IC_DIRS, .alloc = IC_ALLOC_MIXED, .damage = -1 };
    while ((c = getopt(argc, argv, "t:n:s:M:r:k:A:W:F:Sv")) != -1) {
        char *end = NULL;

        errno = 0;
        switch (c) {
        case 't': o.threads = (int)strtol(optarg, &end, 0); break;
        case 'n': o.messages = strtol(optarg, &end, 0); break;
        case 's': o.seed = strtoull(optarg, &end, 0); break;
        case 'M': o.max = strtoull(optarg, &end, 0); break;
        case 'r': o.realloc_every = (int)strtol(optarg, &end, 0); break;
        case 'W': o.watchdog = (int)strtol(optarg, &end, 0); break;
        case 'F': o.damage = strtol(optarg, &end, 0); break;
        case 'k':
            if (ic_parse_dirs(optarg, o.dirs, &o.ndirs))
                goto bad;
            continue;
        case 'A':
            if (!strcmp(optarg, "driver"))
                o.alloc = IC_ALLOC_DRIVER;
            else if (!strcmp(optarg, "runtime"))
                o.alloc = IC_ALLOC_RUNTIME;
            else if (!strcmp(optarg, "mixed"))
                o.alloc = IC_ALLOC_MIXED;
            else
                goto bad;
            continue;
        case 'S': o.serialized = 1; continue;
        case 'v': o.verbose = 1; continue;
        default: goto bad;
        }
        if (errno || !end || *end || end == optarg)
            goto bad;
    }
    if (optind != argc || o.messages < 1 || o.realloc_every < 1 || o.max > IC_MAX_MSG ||
        o.threads < 1 || o.threads > MAX_THREADS || o.watchdog < 0)
        goto bad;
    return 0;
bad:
    if (rank == 0)
        fprintf(stderr, "usage: gdrx_mpi_threads [-t THREADS 1..%d] [-n MESSAGES>0] [-s SEED] "
                        "[-M MAX<=1048576] [-r EVERY>0] [-k DD,HD,DH,HH] "
                        "[-A driver|runtime|mixed] [-W SECONDS>=0] [-F N] [-S] [-v]\n",
                MAX_THREADS);
    return -1;
}

/* Thread t's seed: both ranks derive the same, and no two threads share
 * one (a payload in the wrong thread is then seen as wrong). */
static uint64_t thread_seed(uint64_t seed, int t)
{
    uint64_t s = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(t + 1));

    return ic_splitmix(&s);
}

static void *run_stream(void *arg)
{
    struct worker *w = arg;
    char who[32];
    struct ic_report rep = { .who = who, .verbose = o.verbose, .shown = &shown,
                             .seeds = seeds, .nseeds = o.threads };
    uint8_t *want = malloc(IC_WINDOW(o.max)), *got = malloc(IC_WINDOW(o.max));
    CUresult rc;
    long i;

    snprintf(who, sizeof(who), "thread %d ", w->t);
    /* the driver API works on the calling thread's current context; a new
     * thread has none (the runtime would make the primary one current on
     * its own, the driver's calls here would fail) */
    if ((rc = ic_cuda.cu.CtxSetCurrent(ctx)) != CUDA_SUCCESS || !want || !got) {
        fprintf(stderr, "gdrx_mpi_threads: rank %d thread %d: %s\n", w->st.rank, w->t,
                rc != CUDA_SUCCESS ? tool_cuda_error(&ic_cuda.cu, rc) : "out of memory");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ic_stream_start(&w->st);
    for (i = 0; i < o.messages; ++i) {
        struct ic_msg m;

        ic_draw_msg(&w->st, i, &m);
        atomic_store(&w->sending, m.sender == w->st.rank);
        atomic_store(&w->cur_len, (long)m.len);
        atomic_store(&w->cur, i);
        atomic_store(&w->since_ms, now_ms());
        w->count[m.dir]++;
        w->bad[m.dir] += ic_exchange(&w->st, &m, w->t * TAG_SPAN + (int)(i % TAG_SPAN),
                                     w->t == 0 && i == o.damage, &rep, want, got);
    }
    ic_bufs_free(w->st.rank, &w->st.bufs[w->st.rank]);
    free(want);
    free(got);
    atomic_store(&w->done, 1);
    return NULL;
}

/* The main thread's watch while the streams run: a thread that finished no
 * message for o.watchdog seconds is hung (a deadlock between threads, or a
 * message lost); say where every thread is and end the job, rather than
 * leave it to the suite's timeout without a word. */
static void watch(int rank)
{
    const struct timespec tick = { 0, 50 * 1000 * 1000 };
    int t, running, hung;

    do {
        nanosleep(&tick, NULL);
        running = hung = 0;
        for (t = 0; t < o.threads; ++t) {
            if (atomic_load(&workers[t].done))
                continue;
            running++;
            hung |= o.watchdog &&
                    now_ms() - atomic_load(&workers[t].since_ms) > o.watchdog * 1000LL;
        }
    } while (running && !hung);
    if (!hung)
        return;
    for (t = 0; t < o.threads; ++t) {
        struct worker *w = &workers[t];

        if (atomic_load(&w->done))
            fprintf(stderr, "gdrx_mpi_threads: rank %d thread %d: done\n", rank, t);
        else
            fprintf(stderr, "gdrx_mpi_threads: rank %d thread %d: HUNG? message %ld "
                            "(%s %ld B) for %lld ms\n", rank, t, atomic_load(&w->cur),
                    atomic_load(&w->sending) ? "sending" : "receiving",
                    atomic_load(&w->cur_len), now_ms() - atomic_load(&w->since_ms));
    }
    fprintf(stderr, "gdrx_mpi_threads: rank %d: a thread made no progress for %d s "
                    "(seed %" PRIu64 ", %d threads): aborting\n", rank, o.watchdog, o.seed,
            o.threads);
    MPI_Abort(MPI_COMM_WORLD, EXIT_HUNG);
}

/* CUDA for every thread: the device's primary context (made current in
 * each thread) and, unless -A driver, the runtime.  0, or -1 with why in
 * err. */
static int open_cuda(char *err, size_t errlen)
{
    CUdevice dev;
    CUresult rc;

    if (tool_cuda_load(&ic_cuda.cu, err, errlen) ||
        tool_cuda_open_device(&ic_cuda.cu, 0, &dev, err, errlen))
        return -1;
    if ((rc = ic_cuda.cu.DevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) {
        snprintf(err, errlen, "cuDevicePrimaryCtxRetain: %s", tool_cuda_error(&ic_cuda.cu, rc));
        return -1;
    }
    ic_cuda.alloc = o.alloc;
    if (o.alloc != IC_ALLOC_DRIVER && ic_load_runtime(err, errlen))
        return -1;
    return 0;
}

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown level";
    }
}

/* Rank 0 prints each rank's sums (per direction, bad/messages) and the
 * job's; the job's bad count, on every rank. */
static long summarize(int rank)
{
    static const char *const alloc_names[] = { "cuMemAlloc", "cudaMalloc",
                                               "cuMemAlloc and cudaMalloc" };
    /* per rank: bad and count per direction, reallocations, sent */
    long mine[2 * IC_DIRS + 2] = { 0 }, all[2][2 * IC_DIRS + 2], total_bad = 0;
    int t, d, r;

    for (t = 0; t < o.threads; ++t) {
        struct worker *w = &workers[t];

        for (d = 0; d < IC_DIRS; ++d) {
            mine[d] += w->bad[d];
            mine[IC_DIRS + d] += w->count[d];
        }
        mine[2 * IC_DIRS] += w->st.bufs[rank].reallocs;
    }
    MPI_Gather(mine, 2 * IC_DIRS + 2, MPI_LONG, all, 2 * IC_DIRS + 2, MPI_LONG, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# gdrx_mpi_threads: %d threads a rank, %ld messages each, seed %" PRIu64
               ", max %zu, reallocations every ~%d, %s%s\n", o.threads, o.messages, o.seed,
               o.max, o.realloc_every, alloc_names[o.alloc],
               ic_cuda.cu.simulated ? " (simulated GPU)" : "");
        for (r = 0; r < 2; ++r) {
            long bad = 0, n = 0;

            for (d = 0; d < IC_DIRS; ++d) {
                bad += all[r][d];
                n += all[r][IC_DIRS + d];
            }
            total_bad += bad;
            printf("rank %d: threads: %ld messages, %ld bad (", r, n, bad);
            for (d = 0; d < IC_DIRS; ++d)
                printf("%s%s %ld/%ld", d ? ", " : "", ic_dir_names[d], all[r][d],
                       all[r][IC_DIRS + d]);
            printf("); reallocations %ld\n", all[r][2 * IC_DIRS]);
        }
        printf("total: threads: %ld messages, %ld bad\n", o.threads * o.messages, total_bad);
        fflush(stdout);
    }
    MPI_Bcast(&total_bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return total_bad;
}

int main(int argc, char **argv)
{
    int rank, size, provided, ok, all_ok, t, want_level = MPI_THREAD_MULTIPLE;
    char err[256] = "";
    long bad;

    ic_prog = "gdrx_mpi_threads";
    /* -S must be known before MPI is, so it is looked for by itself */
    for (t = 1; t < argc; ++t)
        if (!strcmp(argv[t], "-S"))
            want_level = MPI_THREAD_SERIALIZED;
    MPI_Init_thread(&argc, &argv, want_level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || parse(argc, argv, rank)) {
        if (size != 2 && rank == 0)
            fprintf(stderr, "gdrx_mpi_threads: run it on exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        /* threads calling MPI at once would be undefined behaviour, and a
         * serialised run would not be the check asked for */
        fprintf(stderr, "gdrx_mpi_threads: rank %d: not run: MPI_THREAD_MULTIPLE asked for, "
                        "the MPI library provides %s (Open MPI's pml ucx needs a UCX built "
                        "with --enable-mt)\n", rank, level_name(provided));
        MPI_Finalize();
        return EXIT_NO_THREADS;
    }
    ok = !open_cuda(err, sizeof(err));
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "gdrx_mpi_threads: rank %d: not run: %s\n", rank, err);
        MPI_Finalize();
        return 3;
    }
    for (t = 0; t < o.threads; ++t)
        seeds[t] = thread_seed(o.seed, t);
    for (t = 0; t < o.threads; ++t) {
        struct worker *w = &workers[t];

        w->t       = t;
        w->st.seed = seeds[t];
        w->st.max  = o.max;
        w->st.rank = rank;
        w->st.realloc_every = o.realloc_every;
        w->st.ndirs = o.ndirs;
        memcpy(w->st.dirs, o.dirs, sizeof(o.dirs));
        /* before the thread runs: the watchdog may look first */
        atomic_store(&w->since_ms, now_ms());
        if ((errno = pthread_create(&w->tid, NULL, run_stream, w))) {
            perror("gdrx_mpi_threads: pthread_create");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    watch(rank);
    for (t = 0; t < o.threads; ++t)
        pthread_join(workers[t].tid, NULL);
    bad = summarize(rank);
    MPI_Finalize();
    return bad ? 1 : 0;
}
