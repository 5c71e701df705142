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
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_cuda.h"

#define GUARD     64
#define MAX_SHOWN 10

enum { KIND_HOST, KIND_DEV };
enum { DIR_DD, DIR_HD, DIR_DH, DIR_HH, DIR_COUNT };
static const char *const dir_names[DIR_COUNT] = { "DD", "HD", "DH", "HH" };

/* the buffer sizes a rank's reallocations draw from */
static const size_t buf_sizes[] = { 4096, 65536, 1 << 20, (2u << 20) + 4097 };
#define N_BUF_SIZES (sizeof(buf_sizes) / sizeof(buf_sizes[0]))

/* sizes around which protocols switch (eager short / bcopy / zcopy /
 * rendezvous, UCX's fragment and pipeline sizes) */
static const size_t thresholds[] = {
    0, 1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 7815, 8192, 16384,
    32768, 65536, 131072, 262144, 524288, 1 << 20,
};
#define N_THRESHOLDS (sizeof(thresholds) / sizeof(thresholds[0]))

struct opts {
    long     messages;
    uint64_t seed;
    size_t   max;
    int      realloc_every;
    int      dirs[DIR_COUNT];
    int      ndirs;
    int      verbose;
    int      runtime;
    int      early;  /* -B */
    long     damage; /* -F: message whose received window is damaged, or -1 */
};

/* one rank's two buffers */
struct rank_bufs {
    size_t      cap[2]; /* [KIND_HOST], [KIND_DEV] */
    char       *host;
    CUdeviceptr dptr;
    long        reallocs;
};

static struct tool_cuda cu;
/* -B: the buffer allocated before MPI_Init, until the schedule's first
 * reallocation of this rank takes it (and a later one frees it) */
#define EARLY_LEN ((size_t)(4u << 20))
static CUdeviceptr early_dptr;
static int early_taken;
/* -R: the runtime's allocation calls (cudaError_t is an int) */
static int (*rt_malloc)(void **p, size_t len);
static int (*rt_free)(void *p);

static int load_runtime(char *err, size_t errlen)
{
    static const char *const names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12" };
    void *h = NULL;
    size_t k;

    for (k = 0; !h && k < sizeof(names) / sizeof(names[0]); ++k)
        h = dlopen(names[k], RTLD_NOW | RTLD_GLOBAL);
    if (h) {
        *(void **)&rt_malloc = dlsym(h, "cudaMalloc");
        *(void **)&rt_free   = dlsym(h, "cudaFree");
    }
    if (!rt_malloc || !rt_free) {
        snprintf(err, errlen, "-R: no CUDA runtime (libcudart.so) with cudaMalloc/cudaFree");
        return -1;
    }
    return 0;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s, uint64_t n)
{
    return n ? splitmix(s) % n : 0;
}

/* The byte at position k of message i's payload, and of its guards. */
static uint8_t payload_byte(uint64_t seed, long i, size_t k)
{
    uint64_t s = seed ^ ((uint64_t)i << 24) ^ (k >> 3) * 0x100000001b3ull;

    return (uint8_t)(splitmix(&s) >> (8 * (k & 7)));
}

static uint8_t guard_byte(long i, size_t k, int side)
{
    return (uint8_t)(0xa5 ^ (i * 31) ^ (k * 7) ^ (side ? 0x5a : 0));
}

static int parse_dirs(const char *arg, struct opts *o)
{
    char buf[64], *tok, *save = NULL;

    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    o->ndirs = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int d;

        for (d = 0; d < DIR_COUNT && strcmp(tok, dir_names[d]); ++d)
            ;
        if (d == DIR_COUNT || o->ndirs == DIR_COUNT)
            return -1;
        o->dirs[o->ndirs++] = d;
    }
    return o->ndirs ? 0 : -1;
}

static int parse(int argc, char **argv, struct opts *o, int rank)
{
    int c;

    *o = (struct opts){ .messages = 3000, .seed = 1, .max = 1 << 20, .realloc_every = 50,
                        .dirs = { DIR_DD, DIR_HD, DIR_DH, DIR_HH }, .ndirs = DIR_COUNT,
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
            if (parse_dirs(optarg, o))
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
    if (optind != argc || o->messages < 1 || o->realloc_every < 1 ||
        o->max > (1u << 20))
        goto bad;
    return 0;
bad:
    if (rank == 0)
        fprintf(stderr, "usage: gdrx_mpi_integrity [-n MESSAGES>0] [-s SEED] [-M MAX<=1048576] "
                        "[-r EVERY>0] [-k DD,HD,DH,HH] [-R] [-B] [-F N] [-v]\n");
    return -1;
}

static void die(int rank, const char *what, CUresult rc)
{
    fprintf(stderr, "gdrx_mpi_integrity: rank %d: %s failed: %s\n", rank, what,
            tool_cuda_error(&cu, rc));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void dev_alloc(int rank, CUdeviceptr *p, size_t len)
{
    void *ptr = NULL;
    CUresult rc;

    if (early_dptr && !early_taken && len <= EARLY_LEN) {
        early_taken = 1;
        *p = early_dptr;
    } else if (rt_malloc) {
        if ((rc = (CUresult)rt_malloc(&ptr, len)) != 0) {
            fprintf(stderr, "gdrx_mpi_integrity: rank %d: cudaMalloc failed: %d\n", rank, (int)rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        *p = (CUdeviceptr)(uintptr_t)ptr;
    } else if ((rc = cu.MemAlloc(p, len)) != CUDA_SUCCESS) {
        die(rank, "cuMemAlloc", rc);
    }
}

static void dev_free(int rank, CUdeviceptr p)
{
    CUresult rc;

    if (p == early_dptr) {
        early_dptr = 0;
        if ((rc = cu.MemFree(p)) != CUDA_SUCCESS)
            die(rank, "cuMemFree", rc);
    } else if (rt_free) {
        if ((rc = (CUresult)rt_free((void *)(uintptr_t)p)) != 0) {
            fprintf(stderr, "gdrx_mpi_integrity: rank %d: cudaFree failed: %d\n", rank, (int)rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else if ((rc = cu.MemFree(p)) != CUDA_SUCCESS) {
        die(rank, "cuMemFree", rc);
    }
}

/* Free both buffers and allocate them again in new sizes; `other` puts the
 * device one elsewhere (a same-sized allocation takes the freed place
 * first, and is freed after). */
static void reallocate(int rank, struct rank_bufs *b, size_t hcap, size_t dcap, int other)
{
    CUdeviceptr hole = 0;

    free(b->host);
    b->host = malloc(hcap);
    if (!b->host) {
        fprintf(stderr, "gdrx_mpi_integrity: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (b->dptr) {
        dev_free(rank, b->dptr);
        if (other)
            dev_alloc(rank, &hole, b->cap[KIND_DEV]);
    }
    dev_alloc(rank, &b->dptr, dcap);
    if (hole)
        dev_free(rank, hole);
    b->cap[KIND_HOST] = hcap;
    b->cap[KIND_DEV]  = dcap;
    b->reallocs++;
}

/* The schedule's reallocation of one rank: drawn by both ranks alike, so
 * each knows the other's capacities; only `self` really allocates. */
static void draw_realloc(uint64_t *s, int rank, int self, struct rank_bufs *b)
{
    size_t hcap = buf_sizes[rnd(s, N_BUF_SIZES)];
    size_t dcap = buf_sizes[rnd(s, N_BUF_SIZES)];
    int other   = rnd(s, 3) == 0;

    if (self)
        reallocate(rank, b, hcap, dcap, other);
    else {
        b->cap[KIND_HOST] = hcap;
        b->cap[KIND_DEV]  = dcap;
        b->reallocs++;
    }
}

static size_t draw_size(uint64_t *s, size_t max)
{
    uint64_t pick = rnd(s, 100);
    size_t len;

    if (pick < 45) {
        len = thresholds[rnd(s, N_THRESHOLDS)];
        if (len)
            len += rnd(s, 3) - 1; /* the threshold, one below, one above */
    } else if (pick < 85) {
        len = rnd(s, 8193);
    } else {
        len = (size_t)1 << rnd(s, 21);
        len += rnd(s, len);
    }
    return len > max ? max : len;
}

/* The address of byte off of a rank's buffer of kind `kind`. */
static void *buf_addr(struct rank_bufs *b, int kind, size_t off)
{
    return kind == KIND_HOST ? (void *)(b->host + off) : (void *)(uintptr_t)(b->dptr + off);
}

/* Copy n bytes at offset off of a rank's buffer of kind `kind` to or from
 * host memory. */
static void buf_put(int rank, struct rank_bufs *b, int kind, size_t off, const void *src, size_t n)
{
    CUresult rc;

    if (kind == KIND_HOST) {
        memcpy(b->host + off, src, n);
    } else if (n && (rc = cu.MemcpyHtoD(b->dptr + off, src, n)) != CUDA_SUCCESS) {
        die(rank, "cuMemcpyHtoD", rc);
    }
}

static void buf_get(int rank, struct rank_bufs *b, int kind, size_t off, void *dst, size_t n)
{
    CUresult rc;

    if (kind == KIND_HOST) {
        memcpy(dst, b->host + off, n);
    } else if (n && (rc = cu.MemcpyDtoH(dst, b->dptr + off, n)) != CUDA_SUCCESS) {
        die(rank, "cuMemcpyDtoH", rc);
    }
}

/* The window of message i as it must be: guards (of side `side`) around
 * the payload, or the payload alone for the sender's guards (which stay
 * whatever they were). */
static void expected_window(uint8_t *w, long i, uint64_t seed, size_t len, int side)
{
    size_t k;

    for (k = 0; k < GUARD; ++k) {
        w[k]                   = guard_byte(i, k, side);
        w[GUARD + len + k]     = guard_byte(i, GUARD + len + k, side);
    }
    for (k = 0; k < len; ++k)
        w[GUARD + k] = payload_byte(seed, i, k);
}

struct msg {
    long   i;
    int    dir, sender;
    size_t len, soff, roff;
};

/* What a bad received payload holds, to tell a missing write from a stale
 * or misplaced one: the receiver's poison untouched, or the payload of an
 * earlier message (of up to 256 before), at a shift of up to 127 bytes.
 * Writes at most `n` characters of `out`. */
static void identify(const struct opts *o, const struct msg *m, const uint8_t *got,
                     char *out, size_t n)
{
    size_t k0, len, k;
    long j;
    int shift;

    snprintf(out, n, "unknown content");
    /* from the first wrong payload byte on */
    for (k0 = 0; k0 < m->len; ++k0)
        if (got[GUARD + k0] != payload_byte(o->seed, m->i, k0))
            break;
    len = m->len - k0 < 32 ? m->len - k0 : 32;
    if (!len)
        return;
    for (k = k0; k < k0 + len; ++k)
        if (got[GUARD + k] != guard_byte(m->i, GUARD + k, 0))
            break;
    if (k == k0 + len) {
        snprintf(out, n, "the receiver's poison from byte %zu (nothing written)", k0);
        return;
    }
    for (j = m->i; j >= 0 && j >= m->i - 256; --j) {
        for (shift = -127; shift <= 127; ++shift) {
            for (k = k0; k < k0 + len; ++k) {
                if ((long)k + shift < 0 ||
                    got[GUARD + k] != payload_byte(o->seed, j, k + (size_t)((long)shift)))
                    break;
            }
            if (k == k0 + len) {
                snprintf(out, n, "from byte %zu, message %ld's payload at shift %d", k0, j,
                         shift);
                return;
            }
        }
    }
}

/* Report one bad window; 1. */
static int report(const struct opts *o, const struct msg *m, const char *who,
                  const uint8_t *got, const uint8_t *want, long reallocs, long *shown)
{
    size_t n = m->len + 2 * GUARD, k, first = n, bad = 0, guard_bad = 0;

    for (k = 0; k < n; ++k) {
        if (got[k] != want[k]) {
            if (first == n)
                first = k;
            bad++;
            guard_bad += (k < GUARD) || (k >= GUARD + m->len);
        }
    }
    if (o->verbose || (*shown)++ < MAX_SHOWN) {
        char what[96];

        identify(o, m, got, what, sizeof(what));
        fprintf(stderr, "gdrx_mpi_integrity: BAD %s message %ld: %s from rank %d, %zu B, "
                        "sender offset %zu, receiver offset %zu, after %ld reallocations: "
                        "%zu bad bytes (%zu in guards), first at window byte %zu "
                        "(got 0x%02x, want 0x%02x); payload holds %s\n",
                who, m->i, dir_names[m->dir], m->sender, m->len, m->soff, m->roff, reallocs,
                bad, guard_bad, first, first < n ? got[first] : 0,
                first < n ? want[first] : 0, what);
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct rank_bufs bufs[2] = { { .cap = { 0, 0 } }, { .cap = { 0, 0 } } };
    long bad[DIR_COUNT] = { 0 }, count[DIR_COUNT] = { 0 }, all_bad[DIR_COUNT];
    long all_count[DIR_COUNT], shown = 0, i, total_bad = 0;
    uint8_t *want, *got;
    char err[256];
    struct opts o;
    uint64_t s;
    int rank, size, ok, all_ok, d, cuda_ready = 0;
    CUdevice dev;

    /* -B: CUDA set up and a buffer allocated before MPI_Init */
    for (d = 1; d < argc && !cuda_ready; ++d)
        if (strcmp(argv[d], "-B") == 0)
            cuda_ready = !tool_cuda_load(&cu, err, sizeof(err)) &&
                         !tool_cuda_open_device(&cu, 0, &dev, err, sizeof(err)) &&
                         cu.MemAlloc(&early_dptr, EARLY_LEN) == CUDA_SUCCESS;
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
        ok = (cuda_ready || (!tool_cuda_load(&cu, err, sizeof(err)) &&
                             !tool_cuda_open_device(&cu, 0, &dev, err, sizeof(err)))) &&
             !(o.runtime && load_runtime(err, sizeof(err)));
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "gdrx_mpi_integrity: rank %d: not run: %s\n", rank, err);
        MPI_Finalize();
        return 3;
    }

    want = malloc(o.max + 2 * GUARD + 128);
    got  = malloc(o.max + 2 * GUARD + 128);
    if (!want || !got) {
        fprintf(stderr, "gdrx_mpi_integrity: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    s = o.seed;
    draw_realloc(&s, rank, rank == 0, &bufs[0]);
    draw_realloc(&s, rank, rank == 1, &bufs[1]);
    for (i = 0; i < o.messages; ++i) {
        struct msg m = { .i = i };
        struct rank_bufs *mine;
        int skind, rkind, r;
        size_t room;

        for (r = 0; r < 2; ++r)
            if (rnd(&s, (uint64_t)o.realloc_every) == 0)
                draw_realloc(&s, rank, rank == r, &bufs[r]);
        m.dir    = o.dirs[rnd(&s, (uint64_t)o.ndirs)];
        m.sender = (int)rnd(&s, 2);
        skind    = (m.dir == DIR_DD || m.dir == DIR_DH) ? KIND_DEV : KIND_HOST;
        rkind    = (m.dir == DIR_DD || m.dir == DIR_HD) ? KIND_DEV : KIND_HOST;
        m.soff   = rnd(&s, 64);
        m.roff   = GUARD + rnd(&s, 64);
        m.len    = draw_size(&s, o.max);
        /* room for the window and its guards in both buffers */
        room = bufs[m.sender].cap[skind] - 128 - GUARD;
        if (bufs[!m.sender].cap[rkind] - 128 - GUARD < room)
            room = bufs[!m.sender].cap[rkind] - 128 - GUARD;
        if (m.len > room)
            m.len = room;
        count[m.dir]++;
        mine = &bufs[rank];

        if (rank == m.sender) {
            /* the payload between guards of the sender's own */
            expected_window(want, i, o.seed, m.len, 1);
            buf_put(rank, mine, skind, m.soff, want, m.len + 2 * GUARD);
            MPI_Send(buf_addr(mine, skind, m.soff + GUARD), (int)m.len, MPI_BYTE, !rank,
                     (int)(i & 0x7fff), MPI_COMM_WORLD);
            buf_get(rank, mine, skind, m.soff, got, m.len + 2 * GUARD);
            if (memcmp(got, want, m.len + 2 * GUARD))
                bad[m.dir] += report(&o, &m, "sender-side", got, want, mine->reallocs, &shown);
        } else {
            expected_window(want, i, o.seed, m.len, 0);
            /* poison: the guards' bytes over the payload's place too */
            for (size_t k = 0; k < m.len; ++k)
                got[GUARD + k] = guard_byte(i, GUARD + k, 0);
            memcpy(got, want, GUARD);
            memcpy(got + GUARD + m.len, want + GUARD + m.len, GUARD);
            buf_put(rank, mine, rkind, m.roff - GUARD, got, m.len + 2 * GUARD);
            MPI_Recv(buf_addr(mine, rkind, m.roff), (int)m.len, MPI_BYTE, !rank, (int)(i & 0x7fff), MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            buf_get(rank, mine, rkind, m.roff - GUARD, got, m.len + 2 * GUARD);
            if (i == o.damage) {
                got[GUARD + m.len / 2] ^= 0x40;
                got[GUARD + m.len + GUARD - 1] ^= 0x01;
            }
            if (memcmp(got, want, m.len + 2 * GUARD))
                bad[m.dir] += report(&o, &m, "received", got, want, mine->reallocs, &shown);
        }
    }

    MPI_Reduce(bad, all_bad, DIR_COUNT, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(count, all_count, DIR_COUNT, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (d = 0; d < DIR_COUNT; ++d)
            total_bad += all_bad[d];
        printf("# gdrx_mpi_integrity: seed %" PRIu64 ", max %zu, reallocations every ~%d, %s%s\n",
               o.seed, o.max, o.realloc_every, o.runtime ? "cudaMalloc" : "cuMemAlloc",
               cu.simulated ? " (simulated GPU)" : "");
        printf("integrity: %ld messages, %ld bad (", o.messages, total_bad);
        for (d = 0; d < DIR_COUNT; ++d)
            printf("%s%s %ld/%ld", d ? ", " : "", dir_names[d], all_bad[d], all_count[d]);
        printf("); reallocations rank 0 %ld, rank 1 %ld\n", bufs[0].reallocs, bufs[1].reallocs);
    }
    free(bufs[rank].host);
    if (bufs[rank].dptr)
        dev_free(rank, bufs[rank].dptr);
    free(want);
    free(got);
    MPI_Bcast(&total_bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
