/*
 * lat.c - what the copy check costs next to write-combined stores, on a
 * real GPU: in one loop, interleaved, TSC-timed (rdtscp ... lfence):
 *   store    a bare 8-byte store to the mapping plus sfence
 *   copy0    gdrx_copy_to_mapping of 0 bytes (the checks alone)
 *   copy8    gdrx_copy_to_mapping of 8 bytes
 *   from8    gdrx_copy_from_mapping of 8 bytes
 *   st+st    a bare store + sfence, then another to a line 4 KiB away
 *   copy8+st gdrx_copy_to_mapping of 8 bytes, then that second store
 *   call8+st a bare store + sfence in a function called through a pointer
 *            (a call gdrx's copy also makes), then that second store
 * The last three are how an MPI rank writes a message and goes on: the
 * second store waits for the write-combining buffer of the first to drain,
 * so copy8+st against call8+st is what gdrx adds to an application's
 * store stream (on H100s: 32-35 ns of ~300 in one call, 7 ns of ~31 in
 * another where no drain was left to wait for; docs/mpi.md), and copy8
 * alone hides the drain.
 * Prints the median and p90 of each in TSC ticks and ns.  Build against
 * libgdrx and run with GDRX_BACKEND set (x86-64 only):
 *   cc -O2 -I libgdr/include -I /usr/local/cuda/include tools/fastpath/lat.c \
 *      -o lat -L BUILD -lgdrx -ldl && LD_LIBRARY_PATH=BUILD ./lat [samples]
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include "gdrx.h"

enum { STORE, COPY0, COPY8, FROM8, STST, COPY8ST, CALL8ST, NOPS };
static const char *const names[NOPS] = { "store", "copy0", "copy8", "from8",
                                         "st+st", "copy8+st", "call8+st" };

__attribute__((noinline)) static void bare8(void *dst, const void *src)
{
    *(volatile uint64_t *)dst = *(const uint64_t *)src;
    _mm_sfence();
}

/* volatile: the compiler may not inline the call. */
static void (*volatile call8)(void *, const void *) = bare8;

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* TSC ticks per ns, over 100 ms. */
static double tsc_per_ns(void)
{
    struct timespec a, b, d = { 0, 100000000 };
    unsigned aux;

    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = __rdtscp(&aux);
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t t1 = __rdtscp(&aux);
    return (double)(t1 - t0) / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
}

static int setup(gdrx_pin_t *pin, void **cpu)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    gdrx_t g;

    if (!lib)
        return -1;
    CUresult (*init)(unsigned) = dlsym(lib, "cuInit");
    CUresult (*dev)(CUdevice *, int) = dlsym(lib, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = dlsym(lib, "cuDevicePrimaryCtxRetain");
    CUresult (*current)(CUcontext) = dlsym(lib, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) = dlsym(lib, "cuMemAlloc_v2");
    /* Allocate after gdrx_open: nvrm learns of allocations from then on. */
    if (init(0) || dev(&d, 0) || retain(&c, d) || current(c) || gdrx_open(NULL, &g) ||
        alloc(&p, 65536))
        return -1;
    if (gdrx_pin(g, p, 65536, 0, pin) || gdrx_map(g, *pin, cpu))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    gdrx_pin_t pin;
    void *cpu;
    uint64_t src = 0x1122334455667788ull, dst = 0, *t[NOPS];
    volatile uint64_t *second;
    unsigned aux;

    if (n <= 0 || setup(&pin, &cpu)) {
        fprintf(stderr, "lat: no GPU mapping (CUDA or gdrx failed)\n");
        return 1;
    }
    second = (volatile uint64_t *)((char *)cpu + 4096);
    for (int k = 0; k < NOPS; k++) {
        t[k] = malloc((size_t)n * sizeof(uint64_t));
        if (!t[k]) {
            fprintf(stderr, "lat: out of memory\n");
            return 1;
        }
    }
    for (long i = -1000; i < n; i++) {
        for (int k = 0; k < NOPS; k++) {
            _mm_lfence();
            uint64_t t0 = __rdtscp(&aux);
            int rc = 0;
            switch (k) {
            case STORE:
                *(volatile uint64_t *)cpu = src;
                _mm_sfence();
                break;
            case COPY0: rc = gdrx_copy_to_mapping(pin, cpu, &src, 0); break;
            case COPY8: rc = gdrx_copy_to_mapping(pin, cpu, &src, 8); break;
            case FROM8: rc = gdrx_copy_from_mapping(pin, &dst, cpu, 8); break;
            case STST:
                *(volatile uint64_t *)cpu = src;
                _mm_sfence();
                *second = src;
                _mm_sfence();
                break;
            case COPY8ST:
                rc = gdrx_copy_to_mapping(pin, cpu, &src, 8);
                *second = src;
                _mm_sfence();
                break;
            case CALL8ST:
                call8(cpu, &src);
                *second = src;
                _mm_sfence();
                break;
            }
            uint64_t t1 = __rdtscp(&aux);
            _mm_lfence();
            if (rc)
                return 2;
            if (i >= 0)
                t[k][i] = t1 - t0;
        }
    }
    double f = tsc_per_ns();
    printf("%-8s %10s %10s %9s %9s   (%ld samples, TSC %.3f GHz)\n", "op", "p50 ticks",
           "p90 ticks", "p50 ns", "p90 ns", n, f);
    for (int k = 0; k < NOPS; k++) {
        qsort(t[k], (size_t)n, sizeof(uint64_t), cmp);
        uint64_t p50 = t[k][n / 2], p90 = t[k][n * 9 / 10];
        printf("%-8s %10llu %10llu %9.1f %9.1f\n", names[k], (unsigned long long)p50,
               (unsigned long long)p90, p50 / f, p90 / f);
    }
    return 0;
}
