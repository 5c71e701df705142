/*
 * gdrx_mpi_integrity.c - a randomised two-rank MPI data check: does every
 * byte of every message arrive, and nothing else change?
 *
 * Both ranks draw one schedule from one seed (so they agree without
 * talking): per message the sending rank, the memory of each side (host
 * malloc, CUDA device memory), the size (around every protocol threshold,
 * most up to 8 KiB, some up to -M), the sender's offset (0-63) and the
 * receiver's (64-127).  Every few dozen messages a rank frees and allocates
 * its buffers again, at the same address (free, then allocate) or at
 * another (an allocation takes the freed one's place first), in sizes of
 * 4 KiB, 64 KiB, 1 MiB and 2 MiB + 4097 B: what a CUDA program's churn does
 * to every cache of "what memory is at this address".
 *
 * The receiver poisons 64 B guards around its window, the sender fills its
 * window with a pattern of (seed, message, byte) between guards of its
 * own; after each message the receiver checks the guards and every byte of
 * the payload, and the sender checks that its window did not change.
 *
 *   gdrx_mpi_integrity [-n MESSAGES] [-s SEED] [-M MAX] [-r EVERY] [-k KINDS] [-R] [-B] [-F N] [-v]
 *     -n  messages (3000)         -s  seed (1)
 *     -M  largest message (1 MiB) -r  mean messages between reallocations (50)
 *     -k  directions to draw from, a comma list of DD,HD,DH,HH (all)
 *     -R  allocate and free with the CUDA runtime (cudaMalloc, cudaFree from
 *         libcudart.so, as most applications do) instead of the driver API
 *     -B  each rank's first device buffer is allocated (cuMemAlloc) before
 *         MPI_Init, as by a program that sets CUDA up first: UCX heard of
 *         no allocation event for it (give -B as an argument of its own)
 *     -F N  the check's own check: damage the window message N left at its
 *         receiver (one payload byte, one guard byte) before checking it
 *     -v  print every bad message (else the first 10)
 * Exit status: 0 every message intact; 1 a bad message (counts printed by
 * rank 0); 2 usage; 3 not run (no CUDA).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "integrity_check.h"

struct opts {
    long     messages;
    uint64_t seed;
    size_t   max;
    int      realloc_every;
    int      dirs[IC_DIRS];
    int      ndirs;
    int      verbose;
    int      runtime;
    int      early;  /* -B */
    long     damage; /* -F: message whose received window is damaged, or -1 */
};

/* -B: the buffer allocated before MPI_Init, until the schedule's first
 * reallocation of this rank takes it (and a later one frees it) */
#define EARLY_LEN ((size_t)(4u << 20))

static int parse(int argc, char **argv, struct opts *o, int rank)
{
    int c;

    *o = (struct opts){ .messages = 3000, .seed = 1, .max = IC_MAX_MSG, .realloc_every = 50,
                        .dirs = { IC_DD, IC_HD, IC_DH, IC_HH }, .ndirs = IC_DIRS,
                        .damage = -1 };
    while ((c = getopt(argc, argv, "n:s:M:r:k:RBF:v")) != -1) {
        char *end = NULL;

        errno = 0;
        switch (c) {
        case 'n': o->messages = strtol(optarg, &end, 0); break;
        case 's': o->seed = strtoull(optarg, &end, 0); break;
        case 'M': o->max = strtoull(optarg, &end, 0); break;
        case 'r': o->realloc_every = (int)strtol(optarg, &end, 0); break;
        case 'F': o->damage = strtol(optarg, &end, 0); break;
        case 'k':
            if (ic_parse_dirs(optarg, o->dirs, &o->ndirs))
                goto bad;
            continue;
        case 'v': o->verbose = 1; continue;
        case 'R': o->runtime = 1; continue;
        case 'B': o->early = 1; continue;
        default: goto bad;
        }
        if (errno || !end || *end || end == optarg)
            goto bad;
    }
    if (optind != argc || o->messages < 1 || o->realloc_every < 1 || o->max > IC_MAX_MSG)
        goto bad;
    return 0;
bad:
    if (rank == 0)
        fprintf(stderr, "usage: gdrx_mpi_integrity [-n MESSAGES>0] [-s SEED] [-M MAX<=1048576] "
                        "[-r EVERY>0] [-k DD,HD,DH,HH] [-R] [-B] [-F N] [-v]\n");
    return -1;
}

int main(int argc, char **argv)
{
    long bad[IC_DIRS] = { 0 }, count[IC_DIRS] = { 0 }, all_bad[IC_DIRS];
    long all_count[IC_DIRS], i, total_bad = 0;
    struct tool_cuda *cu = &ic_cuda.cu;
    struct ic_stream st = { 0 };
    atomic_long shown = 0;
    struct ic_report rep = { .who = "", .shown = &shown };
    uint8_t *want, *got;
    char err[256];
    struct opts o;
    int rank, size, ok, all_ok, d, cuda_ready = 0;
    CUdevice dev;

    ic_prog = "gdrx_mpi_integrity";
    /* -B: CUDA set up and a buffer allocated before MPI_Init */
    for (d = 1; d < argc && !cuda_ready; ++d)
        if (strcmp(argv[d], "-B") == 0)
            cuda_ready = !tool_cuda_load(cu, err, sizeof(err)) &&
                         !tool_cuda_open_device(cu, 0, &dev, err, sizeof(err)) &&
                         cu->MemAlloc(&ic_cuda.early, EARLY_LEN) == CUDA_SUCCESS;
    ic_cuda.early_len = EARLY_LEN;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || parse(argc, argv, &o, rank)) {
        if (size != 2 && rank == 0)
            fprintf(stderr, "gdrx_mpi_integrity: run it on exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    if (o.early && !cuda_ready)
        ok = 0; /* err says why */
    else
        ok = (cuda_ready || (!tool_cuda_load(cu, err, sizeof(err)) &&
                             !tool_cuda_open_device(cu, 0, &dev, err, sizeof(err)))) &&
             !(o.runtime && ic_load_runtime(err, sizeof(err)));
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "gdrx_mpi_integrity: rank %d: not run: %s%s\n", rank,
                    o.runtime ? "-R: " : "", err);
        MPI_Finalize();
        return 3;
    }
    ic_cuda.alloc = o.runtime ? IC_ALLOC_RUNTIME : IC_ALLOC_DRIVER;
    rep.verbose   = o.verbose;

    want = malloc(IC_WINDOW(o.max));
    got  = malloc(IC_WINDOW(o.max));
    if (!want || !got) {
        fprintf(stderr, "gdrx_mpi_integrity: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    st.seed = o.seed;
    st.max  = o.max;
    st.rank = rank;
    st.realloc_every = o.realloc_every;
    st.ndirs = o.ndirs;
    memcpy(st.dirs, o.dirs, sizeof(st.dirs));
    ic_stream_start(&st);
    for (i = 0; i < o.messages; ++i) {
        struct ic_msg m;

        ic_draw_msg(&st, i, &m);
        count[m.dir]++;
        bad[m.dir] += ic_exchange(&st, &m, (int)(i & 0x7fff), i == o.damage, &rep, want, got);
    }

    MPI_Reduce(bad, all_bad, IC_DIRS, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(count, all_count, IC_DIRS, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (d = 0; d < IC_DIRS; ++d)
            total_bad += all_bad[d];
        printf("# gdrx_mpi_integrity: seed %" PRIu64 ", max %zu, reallocations every ~%d, %s%s\n",
               o.seed, o.max, o.realloc_every, o.runtime ? "cudaMalloc" : "cuMemAlloc",
               cu->simulated ? " (simulated GPU)" : "");
        printf("integrity: %ld messages, %ld bad (", o.messages, total_bad);
        for (d = 0; d < IC_DIRS; ++d)
            printf("%s%s %ld/%ld", d ? ", " : "", ic_dir_names[d], all_bad[d], all_count[d]);
        printf("); reallocations rank 0 %ld, rank 1 %ld\n", st.bufs[0].reallocs,
               st.bufs[1].reallocs);
    }
    ic_bufs_free(rank, &st.bufs[rank]);
    free(want);
    free(got);
    MPI_Bcast(&total_bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
