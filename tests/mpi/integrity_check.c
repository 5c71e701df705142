/*
 * integrity_check.c - the schedule, buffers, pattern and check that the
 * randomised MPI data checks share (integrity_check.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "integrity_check.h"

const char *const ic_dir_names[IC_DIRS] = { "DD", "HD", "DH", "HH" };
struct ic_cuda ic_cuda;
const char *ic_prog = "integrity_check";

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

uint64_t ic_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s, uint64_t n)
{
    return n ? ic_splitmix(s) % n : 0;
}

/* The byte at position k of message i's payload, and of its guards. */
static uint8_t payload_byte(uint64_t seed, long i, size_t k)
{
    uint64_t s = seed ^ ((uint64_t)i << 24) ^ (k >> 3) * 0x100000001b3ull;

    return (uint8_t)(ic_splitmix(&s) >> (8 * (k & 7)));
}

static uint8_t guard_byte(long i, size_t k, int side)
{
    return (uint8_t)(0xa5 ^ (i * 31) ^ (k * 7) ^ (side ? 0x5a : 0));
}

int ic_parse_dirs(const char *arg, int dirs[IC_DIRS], int *ndirs)
{
    char buf[64], *tok, *save = NULL;

    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    *ndirs = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int d;

        for (d = 0; d < IC_DIRS && strcmp(tok, ic_dir_names[d]); ++d)
            ;
        if (d == IC_DIRS || *ndirs == IC_DIRS)
            return -1;
        dirs[(*ndirs)++] = d;
    }
    return *ndirs ? 0 : -1;
}

int ic_load_runtime(char *err, size_t errlen)
{
    static const char *const names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12" };
    void *h = NULL;
    size_t k;

    for (k = 0; !h && k < sizeof(names) / sizeof(names[0]); ++k)
        h = dlopen(names[k], RTLD_NOW | RTLD_GLOBAL);
    if (h) {
        *(void **)&ic_cuda.rt_malloc = dlsym(h, "cudaMalloc");
        *(void **)&ic_cuda.rt_free   = dlsym(h, "cudaFree");
    }
    if (!ic_cuda.rt_malloc || !ic_cuda.rt_free) {
        snprintf(err, errlen, "no CUDA runtime (libcudart.so) with cudaMalloc/cudaFree");
        return -1;
    }
    return 0;
}

/* A failed CUDA call (rc a CUresult, or a cudaError_t when rt) ends the
 * job: nothing after it would be a check of the transport. */
static void die(int rank, const char *what, int rc, int rt)
{
    if (rt)
        fprintf(stderr, "%s: rank %d: %s failed: %d\n", ic_prog, rank, what, rc);
    else
        fprintf(stderr, "%s: rank %d: %s failed: %s\n", ic_prog, rank, what,
                tool_cuda_error(&ic_cuda.cu, (CUresult)rc));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void dev_alloc(int rank, CUdeviceptr *p, size_t len, int rt)
{
    struct ic_cuda *c = &ic_cuda;
    void *ptr = NULL;
    int rc;

    if (c->early && !c->early_taken && len <= c->early_len) {
        c->early_taken = 1;
        *p = c->early;
    } else if (rt) {
        if ((rc = c->rt_malloc(&ptr, len)) != 0)
            die(rank, "cudaMalloc", rc, 1);
        *p = (CUdeviceptr)(uintptr_t)ptr;
    } else if ((rc = (int)c->cu.MemAlloc(p, len)) != CUDA_SUCCESS) {
        die(rank, "cuMemAlloc", rc, 0);
    }
}

static void dev_free(int rank, CUdeviceptr p, int rt)
{
    struct ic_cuda *c = &ic_cuda;
    int rc;

    if (c->early && p == c->early) {
        c->early = 0;
        rt = 0;
    }
    if (rt) {
        if ((rc = c->rt_free((void *)(uintptr_t)p)) != 0)
            die(rank, "cudaFree", rc, 1);
    } else if ((rc = (int)c->cu.MemFree(p)) != CUDA_SUCCESS) {
        die(rank, "cuMemFree", rc, 0);
    }
}

void ic_bufs_free(int rank, struct ic_bufs *b)
{
    free(b->host);
    b->host = NULL;
    if (b->dptr)
        dev_free(rank, b->dptr, b->dptr_runtime);
    b->dptr = 0;
}

/* Free both buffers and allocate them again in new sizes; `other` puts the
 * device one elsewhere (a same-sized allocation takes the freed place
 * first, and is freed after). */
static void reallocate(int rank, struct ic_bufs *b, size_t hcap, size_t dcap, int other, int rt)
{
    CUdeviceptr hole = 0;

    free(b->host);
    b->host = malloc(hcap);
    if (!b->host) {
        fprintf(stderr, "%s: rank %d: out of memory\n", ic_prog, rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (b->dptr) {
        dev_free(rank, b->dptr, b->dptr_runtime);
        if (other)
            dev_alloc(rank, &hole, b->cap[IC_DEV], rt);
    }
    dev_alloc(rank, &b->dptr, dcap, rt);
    b->dptr_runtime = rt;
    if (hole)
        dev_free(rank, hole, rt);
}

/* The schedule's reallocation of rank r: drawn by both ranks alike, so
 * each knows the other's capacities; only r itself really allocates. */
static void draw_realloc(struct ic_stream *st, int r)
{
    struct ic_bufs *b = &st->bufs[r];
    size_t hcap = buf_sizes[rnd(&st->s, N_BUF_SIZES)];
    size_t dcap = buf_sizes[rnd(&st->s, N_BUF_SIZES)];
    int other   = rnd(&st->s, 3) == 0;
    /* drawn only when mixed, so that one allocator's schedules stay those
     * of the programs before the runtime was a choice */
    int rt = ic_cuda.alloc == IC_ALLOC_MIXED ? (int)rnd(&st->s, 2)
                                             : ic_cuda.alloc == IC_ALLOC_RUNTIME;

    if (r == st->rank)
        reallocate(r, b, hcap, dcap, other, rt);
    b->cap[IC_HOST] = hcap;
    b->cap[IC_DEV]  = dcap;
    b->reallocs++;
}

void ic_stream_start(struct ic_stream *st)
{
    st->s = st->seed;
    draw_realloc(st, 0);
    draw_realloc(st, 1);
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

void ic_draw_msg(struct ic_stream *st, long i, struct ic_msg *m)
{
    size_t room, rroom;
    int r;

    for (r = 0; r < 2; ++r)
        if (rnd(&st->s, (uint64_t)st->realloc_every) == 0)
            draw_realloc(st, r);
    *m = (struct ic_msg){ .i = i };
    m->dir    = st->dirs[rnd(&st->s, (uint64_t)st->ndirs)];
    m->sender = (int)rnd(&st->s, 2);
    m->skind  = (m->dir == IC_DD || m->dir == IC_DH) ? IC_DEV : IC_HOST;
    m->rkind  = (m->dir == IC_DD || m->dir == IC_HD) ? IC_DEV : IC_HOST;
    m->soff   = rnd(&st->s, 64);
    m->roff   = IC_GUARD + rnd(&st->s, 64);
    m->len    = draw_size(&st->s, st->max);
    /* room for the window and its guards in both buffers */
    room  = st->bufs[m->sender].cap[m->skind] - 128 - IC_GUARD;
    rroom = st->bufs[!m->sender].cap[m->rkind] - 128 - IC_GUARD;
    if (rroom < room)
        room = rroom;
    if (m->len > room)
        m->len = room;
}

/* The address of byte off of a buffer of kind `kind`. */
static void *buf_addr(struct ic_bufs *b, int kind, size_t off)
{
    return kind == IC_HOST ? (void *)(b->host + off) : (void *)(uintptr_t)(b->dptr + off);
}

/* Copy n bytes at offset off of a buffer to or from host memory. */
static void buf_put(int rank, struct ic_bufs *b, int kind, size_t off, const void *src, size_t n)
{
    CUresult rc;

    if (kind == IC_HOST)
        memcpy(b->host + off, src, n);
    else if (n && (rc = ic_cuda.cu.MemcpyHtoD(b->dptr + off, src, n)) != CUDA_SUCCESS)
        die(rank, "cuMemcpyHtoD", (int)rc, 0);
}

static void buf_get(int rank, struct ic_bufs *b, int kind, size_t off, void *dst, size_t n)
{
    CUresult rc;

    if (kind == IC_HOST)
        memcpy(dst, b->host + off, n);
    else if (n && (rc = ic_cuda.cu.MemcpyDtoH(dst, b->dptr + off, n)) != CUDA_SUCCESS)
        die(rank, "cuMemcpyDtoH", (int)rc, 0);
}

/* The window of message i as it must be: guards (of side `side`: 0 the
 * receiver's poison, 1 the sender's own) around the payload. */
static void expected_window(uint8_t *w, long i, uint64_t seed, size_t len, int side)
{
    size_t k;

    for (k = 0; k < IC_GUARD; ++k) {
        w[k]                  = guard_byte(i, k, side);
        w[IC_GUARD + len + k] = guard_byte(i, IC_GUARD + len + k, side);
    }
    for (k = 0; k < len; ++k)
        w[IC_GUARD + k] = payload_byte(seed, i, k);
}

/* Whether got[k0, k0 + n) is message j's payload of seed at a shift. */
static int is_payload(const uint8_t *got, size_t k0, size_t n, uint64_t seed, long j, long shift)
{
    size_t k;

    for (k = k0; k < k0 + n; ++k)
        if ((long)k + shift < 0 ||
            got[IC_GUARD + k] != payload_byte(seed, j, (size_t)((long)k + shift)))
            return 0;
    return 1;
}

/* What a bad received payload holds, to tell a missing write from a stale
 * or misplaced one: the receiver's poison untouched, or the payload of an
 * earlier message (up to 256 before, of any stream the report names), at
 * a shift of up to 127 bytes.  Writes at most `n` characters of `out`. */
static void identify(const struct ic_report *rep, uint64_t seed, const struct ic_msg *m,
                     const uint8_t *got, char *out, size_t n)
{
    size_t k0, len, k;
    long j, shift;
    int q;

    snprintf(out, n, "unknown content");
    /* from the first wrong payload byte on */
    for (k0 = 0; k0 < m->len; ++k0)
        if (got[IC_GUARD + k0] != payload_byte(seed, m->i, k0))
            break;
    len = m->len - k0 < 32 ? m->len - k0 : 32;
    if (!len)
        return;
    for (k = k0; k < k0 + len; ++k)
        if (got[IC_GUARD + k] != guard_byte(m->i, IC_GUARD + k, 0))
            break;
    if (k == k0 + len) {
        snprintf(out, n, "the receiver's poison from byte %zu (nothing written)", k0);
        return;
    }
    for (q = 0; q < (rep->nseeds ? rep->nseeds : 1); ++q) {
        uint64_t sq = rep->nseeds ? rep->seeds[q] : seed;

        for (j = m->i; j >= 0 && j >= m->i - 256; --j)
            for (shift = -127; shift <= 127; ++shift)
                if (is_payload(got, k0, len, sq, j, shift)) {
                    if (rep->nseeds > 1)
                        snprintf(out, n, "from byte %zu, stream %d's message %ld's payload "
                                 "at shift %ld", k0, q, j, shift);
                    else
                        snprintf(out, n, "from byte %zu, message %ld's payload at shift %ld",
                                 k0, j, shift);
                    return;
                }
    }
}

/* Report one bad window of stream st. */
static void report(const struct ic_stream *st, const struct ic_report *rep,
                   const struct ic_msg *m, const char *side, const uint8_t *got,
                   const uint8_t *want)
{
    size_t n = m->len + 2 * IC_GUARD, k, first = n, bad = 0, guard_bad = 0;
    char what[128];

    for (k = 0; k < n; ++k) {
        if (got[k] != want[k]) {
            if (first == n)
                first = k;
            bad++;
            guard_bad += (k < IC_GUARD) || (k >= IC_GUARD + m->len);
        }
    }
    if (!rep->verbose && atomic_fetch_add(rep->shown, 1) >= IC_MAX_SHOWN)
        return;
    identify(rep, st->seed, m, got, what, sizeof(what));
    fprintf(stderr, "%s: BAD %s%s message %ld: %s from rank %d, %zu B, "
                    "sender offset %zu, receiver offset %zu, after %ld reallocations: "
                    "%zu bad bytes (%zu in guards), first at window byte %zu "
                    "(got 0x%02x, want 0x%02x); payload holds %s\n",
            ic_prog, rep->who, side, m->i, ic_dir_names[m->dir], m->sender, m->len, m->soff,
            m->roff, st->bufs[st->rank].reallocs, bad, guard_bad, first,
            first < n ? got[first] : 0, first < n ? want[first] : 0, what);
}

int ic_exchange(struct ic_stream *st, const struct ic_msg *m, int tag, int damage,
                const struct ic_report *rep, uint8_t *want, uint8_t *got)
{
    struct ic_bufs *mine = &st->bufs[st->rank];
    size_t n = m->len + 2 * IC_GUARD, k;
    int rank = st->rank;

    if (rank == m->sender) {
        /* the payload between guards of the sender's own */
        expected_window(want, m->i, st->seed, m->len, 1);
        buf_put(rank, mine, m->skind, m->soff, want, n);
        MPI_Send(buf_addr(mine, m->skind, m->soff + IC_GUARD), (int)m->len, MPI_BYTE, !rank,
                 tag, MPI_COMM_WORLD);
        buf_get(rank, mine, m->skind, m->soff, got, n);
        if (!memcmp(got, want, n))
            return 0;
        report(st, rep, m, "sender-side", got, want);
        return 1;
    }
    expected_window(want, m->i, st->seed, m->len, 0);
    /* poison: the guards' bytes over the payload's place too */
    for (k = 0; k < m->len; ++k)
        got[IC_GUARD + k] = guard_byte(m->i, IC_GUARD + k, 0);
    memcpy(got, want, IC_GUARD);
    memcpy(got + IC_GUARD + m->len, want + IC_GUARD + m->len, IC_GUARD);
    buf_put(rank, mine, m->rkind, m->roff - IC_GUARD, got, n);
    MPI_Recv(buf_addr(mine, m->rkind, m->roff), (int)m->len, MPI_BYTE, !rank, tag,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf_get(rank, mine, m->rkind, m->roff - IC_GUARD, got, n);
    if (damage) {
        got[IC_GUARD + m->len / 2] ^= 0x40;
        got[n - 1] ^= 0x01;
    }
    if (!memcmp(got, want, n))
        return 0;
    report(st, rep, m, "received", got, want);
    return 1;
}
