/*
 * gdrx_costs.c - what libgdrx costs the process it is loaded into, and what
 * its small copies cost: a benchmark for the GPU machine (not a test).
 *
 * SPDX-License-Identifier: MIT
 *
 *   gdrx_costs LIBGDRX|none [cuda]
 *
 * Loads LIBGDRX with dlopen (as a plugin would), then times, each as the
 * median over batches of per-operation time (batch time / batch size):
 *   dlsym(RTLD_NEXT, "malloc"), dlopen of an already loaded library (libc);
 * with "cuda" also: a cuMemAlloc+cuMemFree pair of 64 KiB before and after
 * gdrx_open (when libgdrx may install its CUDA free interception), and, on
 * one pinned and mapped 64 KiB buffer, gdrx_copy_to_mapping of 0 and 8 bytes,
 * a bare 8-byte store + sfence through the same mapping, and
 * gdrx_copy_from_mapping of 8 bytes, interleaved in one loop.
 * Loads and calls everything through dlsym so that two builds of libgdrx
 * (before/after a change) run under the same program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 301

typedef int (*cu_fn)();

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static void *must_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);

    if (!p) {
        fprintf(stderr, "gdrx_costs: %s not found: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

/* Per-op medians of the loader calls libgdrx must not slow down. */
static void loader_costs(void)
{
    double dl[BATCHES], op[BATCHES];
    const int n = 1000;

    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) {
            void *volatile p = dlsym(RTLD_NEXT, "malloc");
            (void)p;
        }
        double t1 = now_ns();
        for (int i = 0; i < n / 10; i++) {
            void *h = dlopen("libc.so.6", RTLD_NOW);
            if (h)
                dlclose(h);
        }
        double t2 = now_ns();
        dl[b] = (t1 - t0) / n;
        op[b] = (t2 - t1) / (n / 10);
    }
    printf("dlsym(RTLD_NEXT, \"malloc\")          %9.1f ns\n", median(dl, BATCHES));
    printf("dlopen(libc.so.6) + dlclose          %9.1f ns\n", median(op, BATCHES));
}

struct cuda {
    cu_fn init, dev_get, ctx_create, alloc, free;
};

static double alloc_free_cost(struct cuda *cu)
{
    double v[BATCHES];
    const int n = 20;

    for (int b = 0; b < BATCHES; b++) {
        uint64_t d[20];
        double t0 = now_ns();
        for (int i = 0; i < n; i++)
            if (cu->alloc(&d[i], (size_t)65536) != 0)
                exit(3);
        for (int i = 0; i < n; i++)
            cu->free(d[i]);
        v[b] = (now_ns() - t0) / n;
    }
    return median(v, BATCHES);
}

typedef struct { uint64_t id; } handle_t;

/* The buffer is allocated after gdrx_open: the nvrm backend learns of
 * allocations from its trace, which starts at the first open. */
static void copy_costs(void *lib, const struct cuda *cu)
{
    int (*open_params_init)(void *) = must_sym(lib, "gdrx_open_params_init");
    int (*gopen)(const void *, handle_t *) = must_sym(lib, "gdrx_open");
    int (*pin)(handle_t, uint64_t, size_t, uint32_t, handle_t *) = must_sym(lib, "gdrx_pin");
    int (*map)(handle_t, handle_t, void **) = must_sym(lib, "gdrx_map");
    int (*to)(handle_t, void *, const void *, size_t) = must_sym(lib, "gdrx_copy_to_mapping");
    int (*from)(handle_t, void *, const void *, size_t) = must_sym(lib, "gdrx_copy_from_mapping");
    char params[64];
    handle_t g, p;
    void *m;
    int rc;

    memset(params, 0, sizeof(params));
    open_params_init(params);
    uint64_t dptr = 0;
    if ((rc = gopen(NULL, &g)) || (rc = cu->alloc(&dptr, (size_t)65536) ? -ENOMEM : 0) ||
        (rc = pin(g, dptr, 65536, 0, &p)) || (rc = map(g, p, &m))) {
        fprintf(stderr, "gdrx_costs: open/pin/map failed: %d\n", rc);
        exit(4);
    }
    double c0[BATCHES], c8[BATCHES], bare[BATCHES], rd[BATCHES];
    uint64_t src = 0x0123456789abcdefull, dst;
    volatile uint64_t *bar = m;
    const int n = 100;

    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++)
            to(p, m, &src, 0);
        double t1 = now_ns();
        for (int i = 0; i < n; i++)
            to(p, m, &src, 8);
        double t2 = now_ns();
        for (int i = 0; i < n; i++) {
            *bar = src;
            _mm_sfence();
        }
        double t3 = now_ns();
        for (int i = 0; i < n / 10; i++)
            from(p, &dst, m, 8);
        double t4 = now_ns();
        c0[b] = (t1 - t0) / n;
        c8[b] = (t2 - t1) / n;
        bare[b] = (t3 - t2) / n;
        rd[b] = (t4 - t3) / (n / 10);
    }
    printf("gdrx_copy_to_mapping 0 B             %9.1f ns\n", median(c0, BATCHES));
    printf("gdrx_copy_to_mapping 8 B             %9.1f ns\n", median(c8, BATCHES));
    printf("bare 8 B store + sfence              %9.1f ns\n", median(bare, BATCHES));
    printf("gdrx_copy_from_mapping 8 B           %9.1f ns\n", median(rd, BATCHES));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gdrx_costs LIBGDRX|none [cuda]\n");
        return 2;
    }
    void *lib = NULL;
    if (strcmp(argv[1], "none") != 0 && !(lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL))) {
        fprintf(stderr, "gdrx_costs: %s\n", dlerror());
        return 2;
    }
    printf("== %s\n", argv[1]);
    loader_costs();
    if (argc < 3 || strcmp(argv[2], "cuda") != 0)
        return 0;

    void *cuh = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuh) {
        fprintf(stderr, "gdrx_costs: %s\n", dlerror());
        return 2;
    }
    struct cuda cu = {
        must_sym(cuh, "cuInit"), must_sym(cuh, "cuDeviceGet"), must_sym(cuh, "cuDevicePrimaryCtxRetain"),
        must_sym(cuh, "cuMemAlloc_v2"), must_sym(cuh, "cuMemFree_v2"),
    };
    cu_fn set_current = must_sym(cuh, "cuCtxSetCurrent");
    int dev;
    void *ctx;
    if (cu.init(0) || cu.dev_get(&dev, 0) || cu.ctx_create(&ctx, dev) || set_current(ctx)) {
        fprintf(stderr, "gdrx_costs: CUDA set-up failed\n");
        return 3;
    }
    printf("cuMemAlloc+cuMemFree 64 KiB, before gdrx_open %9.1f ns\n", alloc_free_cost(&cu));
    if (!lib)
        return 0;
    copy_costs(lib, &cu);
    printf("cuMemAlloc+cuMemFree 64 KiB, after gdrx_open  %9.1f ns\n", alloc_free_cost(&cu));
    loader_costs();
    return 0;
}
