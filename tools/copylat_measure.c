/*
 * copylat_measure.c - timing and data checks of gdrx-copylat.
 *
 * SPDX-License-Identifier: MIT
 *
 * A sample is a batch of back-to-back copies of one size, timed with two
 * clock_gettime(CLOCK_MONOTONIC_RAW) calls and divided by the batch length:
 * batching keeps the ~20-30 ns clock overhead out of the 50-100 ns copies.
 * The batch length is calibrated once per size so a batch lasts ~2 us
 * (1 copy for anything slower).  Statistics are over the samples.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copylat.h"
#include "tool_sys.h"

#define BATCH_TARGET_NS 2000
#define BATCH_MAX 256

static int run_op(struct bench *b, enum bench_op op, size_t size)
{
    switch (op) {
    case OP_GDRX_TO:
        return gdrx_copy_to_mapping(b->pin, b->map, b->host, size);
    case OP_GDRX_FROM:
        return gdrx_copy_from_mapping(b->pin, b->host, b->map, size);
    case OP_CU_TO:
        return b->cu->MemcpyHtoD(b->dptr, b->host, size) == CUDA_SUCCESS ? 0 : -EIO;
    case OP_CU_FROM:
        return b->cu->MemcpyDtoH(b->host, b->dptr, size) == CUDA_SUCCESS ? 0 : -EIO;
    }
    return -EINVAL;
}

/* Time `count` ops; *ns receives the total. */
static int run_batch(struct bench *b, enum bench_op op, size_t size, unsigned count,
                     uint64_t *ns)
{
    int rc = 0;
    uint64_t t0 = tool_now_ns();
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = run_op(b, op, size);
    *ns = tool_now_ns() - t0;
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(double *samples, unsigned n, struct lat_stats *out)
{
    qsort(samples, n, sizeof(*samples), cmp_double);
    size_t p99 = ((size_t)n * 99 + 99) / 100; /* ceil(0.99 n), 1-based */
    out->min = samples[0];
    out->med = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    out->p99 = samples[p99 - 1];
}

int bench_measure(struct bench *b, enum bench_op op, size_t size, struct lat_stats *out)
{
    double *samples = malloc(b->iters * sizeof(*samples));
    unsigned batch = 1;
    uint64_t ns = 0;
    int rc = samples ? 0 : -ENOMEM;

    for (unsigned i = 0; i < b->warmup && rc == 0; i++)
        rc = run_op(b, op, size);
    /* Calibrate: double the batch until it lasts BATCH_TARGET_NS. */
    while (rc == 0 && (rc = run_batch(b, op, size, batch, &ns)) == 0 &&
           ns < BATCH_TARGET_NS && batch < BATCH_MAX)
        batch *= 2;
    for (unsigned i = 0; i < b->iters && rc == 0; i++) {
        rc = run_batch(b, op, size, batch, &ns);
        samples[i] = (double)ns / batch;
    }
    if (rc == 0)
        summarize(samples, b->iters, out);
    free(samples);
    return rc;
}

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static int verify_at(struct bench *b, int dir, size_t size, size_t off)
{
    const char *what = dir == COPYLAT_DIR_TO ? "gdrx write, cuMemcpyDtoH read"
                                             : "cuMemcpyHtoD write, gdrx read";
    int rc;

    fill_pattern(b->host, size, (uint32_t)(size * 31 + off + (size_t)dir));
    memset(b->check, 0, size);
    if (dir == COPYLAT_DIR_TO) {
        rc = gdrx_copy_to_mapping(b->pin, b->map + off, b->host, size);
        if (rc == 0 && b->cu->MemcpyDtoH(b->check, b->dptr + off, size) != CUDA_SUCCESS)
            rc = -EIO;
    } else {
        rc = b->cu->MemcpyHtoD(b->dptr + off, b->host, size) == CUDA_SUCCESS ? 0 : -EIO;
        if (rc == 0)
            rc = gdrx_copy_from_mapping(b->pin, b->check, b->map + off, size);
    }
    if (rc != 0) {
        fprintf(stderr, "gdrx-copylat: verify %zu B at +%zu (%s): %s\n", size, off, what,
                rc == -EIO ? "cuMemcpy failed" : gdrx_strerror(rc));
        return -1;
    }
    for (size_t i = 0; i < size; i++) {
        if (b->check[i] != b->host[i]) {
            fprintf(stderr, "gdrx-copylat: MISMATCH %zu B at +%zu (%s): byte %zu is "
                    "0x%02x, wrote 0x%02x\n", size, off, what, i, b->check[i], b->host[i]);
            return -1;
        }
    }
    return 0;
}

int bench_verify(struct bench *b, int dir, size_t size)
{
    /* +3: an unaligned mapping address takes the head/tail paths too. */
    if (verify_at(b, dir, size, 0) != 0)
        return -1;
    return size + 3 <= b->cap ? verify_at(b, dir, size, 3) : 0;
}
