/*
 * cost.c - workloads for counting instructions under callgrind (callgrind.sh):
 *   cost copy BYTES N        N copies each way through one mapped pin
 *   cost free SLOTS LIVE N   N alloc+free pairs of unrelated memory after
 *                            SLOTS pins were alive at once, LIVE still are
 * On the simulated GPU: counts, not times (a benchmark, never a test).
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrx.h"

#define SYM(lib, name) dlsym(lib, name)

static CUresult (*mem_alloc)(CUdeviceptr *, size_t);

/* Device 0's primary context current; libcuda.so.1 or NULL. */
static void *cuda_up(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CUdevice d;
    CUcontext c;

    if (!lib)
        return NULL;
    CUresult (*init)(unsigned) = SYM(lib, "cuInit");
    CUresult (*dev)(CUdevice *, int) = SYM(lib, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = SYM(lib, "cuDevicePrimaryCtxRetain");
    CUresult (*current)(CUcontext) = SYM(lib, "cuCtxSetCurrent");
    mem_alloc = SYM(lib, "cuMemAlloc_v2");
    if (!init || !dev || !retain || !current || !mem_alloc || init(0) || dev(&d, 0) ||
        retain(&c, d) || current(c))
        return NULL;
    return lib;
}

static int copies(size_t bytes, long n)
{
    CUdeviceptr p;
    gdrx_t g;
    gdrx_pin_t pin;
    void *cpu;
    char buf[256] = { 0 };

    if (bytes > sizeof(buf) || mem_alloc(&p, 1 << 20) || gdrx_open(NULL, &g) ||
        gdrx_pin(g, p, 1 << 20, 0, &pin) || gdrx_map(g, pin, &cpu))
        return 3;
    for (long i = 0; i < n; i++)
        if (gdrx_copy_to_mapping(pin, cpu, buf, bytes))
            return 4;
    for (long i = 0; i < n; i++)
        if (gdrx_copy_from_mapping(pin, buf, cpu, bytes))
            return 5;
    return 0;
}

static int frees(void *lib, long slots, long live, long n)
{
    CUdeviceptr p, q;
    gdrx_t g;
    gdrx_pin_t *pins = calloc((size_t)slots, sizeof(*pins));

    if (!pins || live > slots || mem_alloc(&p, 1 << 20) || gdrx_open(NULL, &g))
        return 3;
    /* Resolved after gdrx_open, as an application would: a hooked free. */
    CUresult (*mem_free)(CUdeviceptr) = SYM(lib, "cuMemFree_v2");
    for (long i = 0; i < slots; i++)
        if (gdrx_pin(g, p, 4096, 0, &pins[i]))
            return 4;
    for (long i = live; i < slots; i++)
        gdrx_unpin(g, pins[i]);
    for (long i = 0; i < n; i++)
        if (mem_alloc(&q, 4096) || mem_free(q))
            return 5;
    free(pins);
    return 0;
}

int main(int argc, char **argv)
{
    void *lib = cuda_up();
    int rc = 2;

    if (!lib)
        fprintf(stderr, "cost: no CUDA device (libcuda.so.1)\n");
    else if (argc == 4 && strcmp(argv[1], "copy") == 0)
        rc = copies(strtoul(argv[2], NULL, 0), atol(argv[3]));
    else if (argc == 5 && strcmp(argv[1], "free") == 0)
        rc = frees(lib, atol(argv[2]), atol(argv[3]), atol(argv[4]));
    else
        fprintf(stderr, "usage: cost copy BYTES N | cost free SLOTS LIVE N\n");
    return rc;
}
