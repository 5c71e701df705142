/*
 * mpi_bench.c - options, buffers and data checks of gdrx's MPI benchmarks.
 *
 * SPDX-License-Identifier: MIT
 */
#include "mpi_bench.h"
#include "../gpu/gpu_pattern.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tool_cuda cu;
static int cuda_ready;

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (*end || v > (1ull << 30))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > 100000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int usage(int rank, const char *prog, const char *why, int window_allowed)
{
    if (rank == 0)
        fprintf(stderr, "%s: %s\nusage: %s [-m MIN:MAX] [-i ITERS] [-x WARMUP]%s [-c] H|D H|D\n",
                prog, why, prog, window_allowed ? " [-w WINDOW]" : " [-r EVERY]");
    return -1;
}

int mb_parse(int argc, char **argv, struct mb_opts *o, int window_allowed, int rank)
{
    int kinds = 0;

    *o = (struct mb_opts){ .min = 0, .max = 1 << 20, .iters = 1000, .warmup = 100,
                           .window = 64 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = (i + 1 < argc) ? argv[i + 1] : NULL;

        if (!strcmp(a, "-c")) {
            o->check_each = 1;
        } else if (!strcmp(a, "-m") && v) {
            char buf[64], *colon;
            snprintf(buf, sizeof(buf), "%s", v);
            colon = strchr(buf, ':');
            if (colon)
                *colon = '\0';
            if (parse_size(buf, colon ? &o->min : &o->max) ||
                (colon && parse_size(colon + 1, &o->max)) || o->min > o->max)
                return usage(rank, argv[0], "bad -m (MIN:MAX, MIN <= MAX <= 1G)", window_allowed);
            i++;
        } else if (!strcmp(a, "-i") && v) {
            if (parse_int(v, 1, &o->iters))
                return usage(rank, argv[0], "bad -i", window_allowed);
            i++;
        } else if (!strcmp(a, "-x") && v) {
            if (parse_int(v, 0, &o->warmup))
                return usage(rank, argv[0], "bad -x", window_allowed);
            i++;
        } else if (!strcmp(a, "-r") && v && !window_allowed) {
            if (parse_int(v, 1, &o->realloc_every))
                return usage(rank, argv[0], "bad -r", window_allowed);
            i++;
        } else if (!strcmp(a, "-w") && v && window_allowed) {
            if (parse_int(v, 1, &o->window) || o->window > 1024)
                return usage(rank, argv[0], "bad -w (1..1024)", window_allowed);
            i++;
        } else if ((!strcmp(a, "H") || !strcmp(a, "D")) && kinds < 2) {
            o->dev[kinds++] = (a[0] == 'D');
        } else {
            return usage(rank, argv[0], "unknown or incomplete argument", window_allowed);
        }
    }
    if (kinds == 1)
        return usage(rank, argv[0], "give both buffer kinds (H|D H|D)", window_allowed);
    return 0;
}

int mb_cuda_init(int rank)
{
    char err[256];
    CUdevice dev;

    if (cuda_ready)
        return 0;
    if (tool_cuda_load(&cu, err, sizeof(err)) ||
        tool_cuda_open_device(&cu, 0, &dev, err, sizeof(err))) {
        fprintf(stderr, "rank %d: no CUDA device: %s\n", rank, err);
        return -1;
    }
    cuda_ready = 1;
    return 0;
}

int mb_buf_alloc(struct mb_buf *b, int dev, size_t len)
{
    size_t n = len ? len : 1;

    *b = (struct mb_buf){ .dev = dev, .len = len, .host = malloc(n) };
    if (!b->host)
        return -1;
    if (dev && (!cuda_ready || cu.MemAlloc(&b->dptr, n) != CUDA_SUCCESS)) {
        free(b->host);
        b->host = NULL;
        return -1;
    }
    return 0;
}

int mb_buf_renew(struct mb_buf *b)
{
    struct mb_buf scratch;
    int dev = b->dev;
    size_t len = b->len;

    mb_buf_free(b);
    if (mb_buf_alloc(&scratch, dev, 1 << 20))
        return -1;
    mb_buf_free(&scratch);
    return mb_buf_alloc(b, dev, len);
}

void mb_buf_free(struct mb_buf *b)
{
    if (b->dev && b->dptr && cuda_ready)
        cu.MemFree(b->dptr);
    free(b->host);
    memset(b, 0, sizeof(*b));
}

void *mb_buf_ptr(const struct mb_buf *b)
{
    return b->dev ? (void *)(uintptr_t)b->dptr : b->host;
}

/* The pattern every gdrx test writes (tests/gpu/gpu_pattern.h). */
static unsigned char pattern(size_t i, uint32_t seed)
{
    return gp_byte(i, seed);
}

/* Publish b->host's first len bytes to the device copy, if there is one. */
static int push(struct mb_buf *b, size_t len)
{
    return (!b->dev || !len || cu.MemcpyHtoD(b->dptr, b->host, len) == CUDA_SUCCESS) ? 0 : -1;
}

int mb_fill(struct mb_buf *b, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        ((unsigned char *)b->host)[i] = pattern(i, seed);
    return push(b, len);
}

int mb_poison(struct mb_buf *b, size_t len)
{
    memset(b->host, 0xa5, len);
    return push(b, len);
}

long mb_check(struct mb_buf *b, size_t len, uint32_t seed, const char *what)
{
    const unsigned char *h = b->host;
    long bad = 0;

    if (b->dev && len && cu.MemcpyDtoH(b->host, b->dptr, len) != CUDA_SUCCESS)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (h[i] == pattern(i, seed))
            continue;
        if (!bad++)
            fprintf(stderr, "%s: %zu-byte message: byte %zu is 0x%02x, sent 0x%02x\n", what, len,
                    i, h[i], pattern(i, seed));
    }
    return bad;
}

size_t mb_next_size(size_t s)
{
    return s ? s * 2 : 1;
}

void mb_header(const char *title, const struct mb_opts *o, const char *unit)
{
    static const char *const kind[2] = { "HOST (H)", "DEVICE (D)" };

    printf("# gdrx MPI %s Test\n", title);
    printf("# Send Buffer on %s and Receive Buffer on %s%s\n", kind[o->dev[0]], kind[o->dev[1]],
           cuda_ready && cu.simulated ? " (simulated GPU)" : "");
    printf("%-10s%20s\n", "# Size", unit);
    fflush(stdout);
}

int mb_start(int *argc, char ***argv, int window_allowed, struct mb_opts *o,
             struct mb_buf *s, struct mb_buf *r, int *rank)
{
    const char *prog = (*argv)[0];
    int size, ok, all_ok;

    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (*rank == 0)
            fprintf(stderr, "%s: needs exactly 2 ranks (got %d)\n", prog, size);
        MPI_Finalize();
        return 2;
    }
    if (mb_parse(*argc, *argv, o, window_allowed, *rank)) {
        MPI_Finalize();
        return 2;
    }
    int dev = o->dev[*rank];
    size_t slots = (window_allowed && o->check_each) ? (size_t)o->window : 1;
    memset(s, 0, sizeof(*s));
    memset(r, 0, sizeof(*r));
    ok = !(dev && mb_cuda_init(*rank)) && !mb_buf_alloc(s, dev, o->max) &&
         !mb_buf_alloc(r, dev, o->max * slots);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (*rank == 0)
            fprintf(stderr, "%s: buffer set-up failed\n", prog);
        mb_finish(s, r);
        return 3;
    }
    return 0;
}

void mb_abort(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s failed: cannot go on\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 4);
}

void mb_finish(struct mb_buf *s, struct mb_buf *r)
{
    mb_buf_free(s);
    mb_buf_free(r);
    MPI_Finalize();
}

int mb_verdict(long bad, size_t len, const char *prog, int rank)
{
    long all_bad;

    bad = bad < 0 ? 1 : bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!all_bad)
        return 0;
    if (rank == 0)
        fprintf(stderr, "%s: DATA ERROR at %zu bytes (%ld bad bytes)\n", prog, len, all_bad);
    return 1;
}
