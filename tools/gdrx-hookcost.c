/*
 * gdrx-hookcost - what libgdrx's CUDA hooks cost the rest of the process
 * (a benchmark, not a test: it asserts nothing).
 *
 * SPDX-License-Identifier: MIT
 *
 * Medians, in ns per operation, of
 *   dlsym(RTLD_NEXT, "malloc"),
 *   dlopen of an already loaded library (libc.so.6) + dlclose,
 *   a cuMemAlloc + cuMemFree pair (64 KiB; through pointers from dlsym),
 * in two phases: "loaded" (libgdrx linked, no gdrx call made) and "opened"
 * (after gdrx_open, which installs the hooks).  Run it with
 * GDRX_FREE_HOOKS=0 for the same without hooks.  Public API only, so the
 * same file builds against older trees:
 *   cc -O2 -Ilibgdr/include -I/usr/local/cuda/include tools/gdrx-hookcost.c \
 *      tools/tool_cuda.c tools/tool_sys.c -Lbuild/libgdr/.libs -lgdrx -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrx.h"
#include "tool_cuda.h"
#include "tool_sys.h"

#define ROUNDS 101

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median over ROUNDS rounds of the mean of `batch` calls of op. */
static double median_ns(void (*op)(void *), void *arg, int batch)
{
    uint64_t t[ROUNDS];

    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t0 = tool_now_ns();
        for (int i = 0; i < batch; i++)
            op(arg);
        t[r] = tool_now_ns() - t0;
    }
    qsort(t, ROUNDS, sizeof(t[0]), cmp_u64);
    return (double)t[ROUNDS / 2] / batch;
}

static void op_dlsym_next(void *arg)
{
    void *volatile p = dlsym(RTLD_NEXT, "malloc");
    (void)arg; (void)p;
}

static void op_dlopen_loaded(void *arg)
{
    void *h = dlopen("libc.so.6", RTLD_NOW);
    (void)arg;
    if (h)
        dlclose(h);
}

static void op_alloc_free(void *arg)
{
    struct tool_cuda *cu = arg;
    CUdeviceptr p = 0;

    if (cu->MemAlloc(&p, 65536) == CUDA_SUCCESS)
        cu->MemFree(p);
}

static void measure(const char *phase, struct tool_cuda *cu)
{
    printf("%-7s dlsym(RTLD_NEXT,\"malloc\")  %10.1f ns\n", phase,
           median_ns(op_dlsym_next, NULL, 1000));
    printf("%-7s dlopen(loaded)+dlclose   %10.1f ns\n", phase,
           median_ns(op_dlopen_loaded, NULL, 200));
    if (cu)
        printf("%-7s cuMemAlloc+cuMemFree     %10.1f ns%s\n", phase,
               median_ns(op_alloc_free, cu, 20), cu->simulated ? "  (simulated GPU)" : "");
}

int main(int argc, char **argv)
{
    struct tool_cuda cu;
    char err[256];
    CUdevice dev;
    gdrx_t ctx;
    int have_cuda;

    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: gdrx-hookcost   (GDRX_FREE_HOOKS=0 to compare without hooks)\n");
        return 2;
    }
    have_cuda = tool_cuda_load(&cu, err, sizeof(err)) == 0 &&
                tool_cuda_open_device(&cu, 0, &dev, err, sizeof(err)) == 0;
    if (!have_cuda)
        printf("no CUDA (%s): dlsym/dlopen only\n", err);
    printf("GDRX_FREE_HOOKS=%s\n", getenv("GDRX_FREE_HOOKS") ? getenv("GDRX_FREE_HOOKS") : "(unset)");
    measure("loaded", have_cuda ? &cu : NULL);

    struct gdrx_open_params params;
    gdrx_open_params_init(&params);
    int rc = gdrx_open(&params, &ctx);
    if (rc) {
        printf("gdrx_open: %s (%d): no \"opened\" phase\n", gdrx_strerror(rc), rc);
        return 1;
    }
    measure("opened", have_cuda ? &cu : NULL);
    gdrx_close(ctx);
    return 0;
}
