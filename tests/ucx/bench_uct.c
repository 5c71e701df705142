/*
 * bench_uct.c - benchmark (not a test) of the gdrx transport through UCT:
 * a registration-cache hit (mem_reg + mem_dereg of a cached buffer), and
 * put_short / get_short of small sizes.  Prints medians in ns.  On the
 * simulated GPU the figures say nothing about a GPU; the output says so.
 *
 *   bench_uct [iterations]    (UCX_GDRX_* settings from the environment)
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ut_uct.h"

static uint64_t bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static uint64_t bench_median(uint64_t *t, int n)
{
    qsort(t, n, sizeof(*t), bench_cmp);
    return t[n / 2];
}

static void bench_rcache(struct ut_uct *u, CUdeviceptr d, uint64_t *t, int n)
{
    struct ut_reg r;
    uct_mem_h memh;
    int i;

    if (ut_reg(u, (void*)d, 4096, &r) != UCS_OK) { /* warm: stays cached */
        printf("mem_reg failed: no figures\n");
        return;
    }
    for (i = 0; i < n; ++i) {
        uint64_t t0 = bench_now();
        if (uct_md_mem_reg(u->md, (void*)(d + 64), 1024, UCT_MD_MEM_ACCESS_ALL,
                           &memh) != UCS_OK) {
            printf("mem_reg failed: no figures\n");
            ut_dereg(u, &r);
            return;
        }
        uct_md_mem_dereg(u->md, memh);
        t[i] = bench_now() - t0;
    }
    ut_dereg(u, &r);
    printf("mem_reg+mem_dereg, buffer registered (rcache hit) %8llu ns\n",
           (unsigned long long)bench_median(t, n));
}

static void bench_copies(struct ut_uct *u, CUdeviceptr d, uint64_t *t, int n)
{
    static const unsigned sizes[] = {8, 64, 256, 1024, 4096};
    uint8_t buf[4096] = {0};
    struct ut_reg r;
    uint64_t put, t0;
    size_t s;
    int i;

    if (ut_reg(u, (void*)d, 8192, &r) != UCS_OK) {
        printf("mem_reg failed: no figures\n");
        return;
    }
    printf("%8s %12s %12s\n", "size", "put_short", "get_short");
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        for (i = 0; i < n; ++i) {
            t0 = bench_now();
            uct_ep_put_short(u->ep, buf, sizes[s], d, r.rkey.rkey);
            t[i] = bench_now() - t0;
        }
        put = bench_median(t, n);
        for (i = 0; i < n; ++i) {
            t0 = bench_now();
            uct_ep_get_short(u->ep, buf, sizes[s], d, r.rkey.rkey);
            t[i] = bench_now() - t0;
        }
        printf("%8u %9llu ns %9llu ns\n", sizes[s], (unsigned long long)put,
               (unsigned long long)bench_median(t, n));
    }
    ut_dereg(u, &r);
}

/* CUDA setup without the test harness's assertions. */
static int bench_cuda(void)
{
    CUcontext ctx;
    CUdevice dev;

    return ((tc.Init(0) == CUDA_SUCCESS) &&
            (tc.DeviceGet(&dev, 0) == CUDA_SUCCESS) &&
            (tc.DevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS) &&
            (tc.CtxSetCurrent(ctx) == CUDA_SUCCESS)) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int n = (argc > 1) ? atoi(argv[1]) : 10000;
    struct ut_uct u;
    CUdeviceptr d;
    uint64_t *t;

    if ((n <= 0) || ((t = calloc(n, sizeof(*t))) == NULL)) {
        fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
        return 2;
    }
    tc_default_backend();
    tc_load();
    /* The buffer comes after the MD opened (nvrm learns of allocations
     * from its first gdrx_open on). */
    if ((ut_load_plugin() != 0) || (tc.Init == NULL) || (bench_cuda() != 0) ||
        (ut_open(&u) != 0) || (tc.MemAlloc(&d, 1 << 20) != CUDA_SUCCESS)) {
        fprintf(stderr, "no GPU, libcuda or gdrx plugin\n");
        return 1;
    }
    printf("gdrx UCT benchmark, %d iterations, medians%s\n", n,
           (dlsym(RTLD_DEFAULT, "simcu_fail_next") != NULL) ?
           " (simulated GPU: says nothing about a GPU)" : "");
    bench_rcache(&u, d, t, n);
    bench_copies(&u, d, t, n);
    ut_close(&u);
    tc.MemFree(d);
    free(t);
    return 0;
}
