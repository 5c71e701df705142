/*
 * gdrapi_sanity.c - a program written to NVIDIA gdrcopy's API, as its users
 * write them, run on a real GPU against gdrx's libgdrapi.so.2 (on the H200:
 * the nvrm backend, no kernel module).  The usual order: cudaMalloc, then
 * gdr_open, then gdr_pin_buffer; every copy checked with cudaMemcpy, at
 * any alignment; gdrcopy's idiom for small buffers and UCX's page-rounded
 * request; a cudaFree under a live mapping.  Built by tests/gpu/build.sh
 * with gcc alone.  Exits 1 on any failure, 2 if it could not start.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrapi.h"
#include "gpu_pattern.h"

static int failures;

static void fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static void pattern(unsigned char *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = gp_byte(i, seed);
}

/* Write seed through the mapping at cpu (device address d), check with
 * cudaMemcpy; write seed + 1 with cudaMemcpy, read it through the mapping. */
static int roundtrip(const char *what, gdr_mh_t mh, char *cpu, void *d, size_t n, uint32_t seed)
{
    unsigned char *buf = malloc(n), *want = malloc(n);
    int ok = 0;

    if (!buf || !want) {
        fail("%s: out of memory", what);
        goto out;
    }
    pattern(want, n, seed);
    int rc = gdr_copy_to_mapping(mh, cpu, want, n);
    if (rc || cudaMemcpy(buf, d, n, cudaMemcpyDeviceToHost) != cudaSuccess ||
        memcmp(buf, want, n) != 0) {
        fail("%s: %zu bytes to the mapping (rc %d) not what cudaMemcpy reads", what, n, rc);
        goto out;
    }
    pattern(want, n, seed + 1);
    rc = cudaMemcpy(d, want, n, cudaMemcpyHostToDevice) != cudaSuccess;
    rc = rc ? -1 : gdr_copy_from_mapping(mh, buf, cpu, n);
    if (rc || memcmp(buf, want, n) != 0) {
        fail("%s: %zu bytes from the mapping (rc %d) not what cudaMemcpy wrote", what, n, rc);
        goto out;
    }
    ok = 1;
out:
    free(buf);
    free(want);
    return ok;
}

/* Pin [d, d+size), map it whole, return the CPU address of d. */
static char *pin_map(gdr_t g, void *d, size_t size, gdr_mh_t *mh, void **map, gdr_info_t *info)
{
    int rc = gdr_pin_buffer(g, (unsigned long)d, size, 0, 0, mh);
    if (rc) {
        fail("gdr_pin_buffer(%p, %zu): %s", d, size, strerror(rc));
        return NULL;
    }
    rc = gdr_get_info(g, *mh, info);
    if (rc == 0)
        rc = gdr_map(g, *mh, map, info->mapped_size);
    if (rc) {
        fail("gdr_get_info/gdr_map of %p: %s", d, strerror(rc));
        gdr_unpin_buffer(g, *mh);
        return NULL;
    }
    return (char *)*map + ((unsigned long)d - info->va);
}

static void release(gdr_t g, gdr_mh_t mh, void *map, const gdr_info_t *info)
{
    if (gdr_unmap(g, mh, map, info->mapped_size) || gdr_unpin_buffer(g, mh))
        fail("gdr_unmap/gdr_unpin_buffer");
}

/* Odd offsets and sizes, both directions, against cudaMemcpy. */
static void alignments(gdr_t g, void *d)
{
    static const size_t offs[] = { 0, 1, 3, 7, 8, 13, 31, 63, 64, 4095 };
    static const size_t lens[] = { 1, 2, 3, 5, 8, 15, 16, 17, 33, 63, 64, 65, 129, 1000, 4097 };
    gdr_mh_t mh;
    void *map;
    gdr_info_t info;
    char *cpu = pin_map(g, d, 64 << 10, &mh, &map, &info);
    int bad = 0;

    if (!cpu)
        return;
    for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
        for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
            bad += !roundtrip("alignment", mh, cpu + offs[i], (char *)d + offs[i], lens[j],
                              (uint32_t)(i * 100 + j + 1));
    printf("%s: odd offsets and sizes (%zu copies each way)\n", bad ? "FAIL" : "ok",
           sizeof(offs) / sizeof(offs[0]) * (sizeof(lens) / sizeof(lens[0])));
    release(g, mh, map, &info);
}

/* Two small buffers (ucx_perftest -s 8's) in one GPU page: UCX's gdr_copy
 * registers the page around the first and copies to both through it. */
static void neighbours(gdr_t g, void *a, void *b, size_t n, const char *when)
{
    unsigned long lo = (unsigned long)(a < b ? a : b), hi = (unsigned long)(a < b ? b : a) + n;
    gdr_mh_t mh;
    void *map;
    gdr_info_t info;

    if ((lo & GPU_PAGE_MASK) != ((hi - 1) & GPU_PAGE_MASK)) {
        printf("note: the two %zu-byte buffers allocated %s are not in one GPU page\n", n, when);
        return;
    }
    unsigned long start = (unsigned long)a & GPU_PAGE_MASK;
    char *cpu = pin_map(g, (void *)start, GPU_PAGE_SIZE, &mh, &map, &info);
    if (!cpu)
        return;
    int ok = roundtrip("neighbour a", mh, cpu + ((unsigned long)a - start), a, n, 11) &&
             roundtrip("neighbour b", mh, cpu + ((unsigned long)b - start), b, n, 13);
    printf("%s: one GPU page pinned, both %zu-byte buffers allocated %s reached (%p, %p)\n",
           ok ? "ok" : "FAIL", n, when, a, b);
    release(g, mh, map, &info);
}

int main(void)
{
    void *big = NULL, *small = NULL, *raw = NULL, *gone = NULL;
    const size_t bigsz = 4 << 20, smallsz = 8 << 10;

    /* cudaMalloc first, as gdrcopy's users do */
    void *n1 = NULL, *n2 = NULL, *n3 = NULL, *n4 = NULL;
    if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&big, bigsz) != cudaSuccess ||
        cudaMalloc(&n1, 8) != cudaSuccess || cudaMalloc(&n2, 8) != cudaSuccess ||
        cudaMalloc(&small, smallsz) != cudaSuccess ||
        cudaMalloc(&raw, smallsz + GPU_PAGE_SIZE - 1) != cudaSuccess ||
        cudaMalloc(&gone, 2 << 20) != cudaSuccess) {
        printf("FAIL: CUDA setup\n");
        return 2;
    }
    gdr_t g = gdr_open();
    if (!g) {
        printf("FAIL: gdr_open returned NULL (errno %d: %s)\n", errno, strerror(errno));
        return 2;
    }
    const char *impl = dlsym(RTLD_DEFAULT, "gdrx_gdrapi_impl");
    int major, minor, dmabuf = -1, persistent = -1;
    Dl_info dl;
    gdr_runtime_get_version(&major, &minor);
    printf("libgdrapi %s, API %d.%d (%s)\n",
           dladdr((void *)gdr_open, &dl) && dl.dli_fname ? dl.dli_fname : "?", major, minor,
           impl ? impl : "NOT gdrx's");
    if (!impl)
        fail("this is not gdrx's libgdrapi.so.2");
    if (gdr_driver_get_version(g, &major, &minor) == 0)
        printf("driver version %d.%d\n", major, minor);
    gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &dmabuf);
    gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &persistent);
    printf("dma-buf backend %d, persistent %d\n", dmabuf, persistent);

    gdr_mh_t mh;
    void *map;
    gdr_info_t info;
    char *cpu = pin_map(g, big, bigsz, &mh, &map, &info);
    if (cpu) {
        const char *type = "?";
        gdr_get_info(g, mh, &info);
        gdr_get_mapping_type_string(info.mapping_type, &type);
        printf("%s: 4 MiB allocated before gdr_open: va %#llx, %llu bytes, %s mapping\n",
               roundtrip("4 MiB", mh, cpu, big, bigsz, 1) ? "ok" : "FAIL",
               (unsigned long long)info.va, (unsigned long long)info.mapped_size, type);
        release(g, mh, map, &info);
    }
    alignments(g, big);

    /* gdrcopy's idiom: over-allocate, align up to a GPU page */
    void *aligned = (void *)(((unsigned long)raw + GPU_PAGE_OFFSET) & GPU_PAGE_MASK);
    cpu = pin_map(g, aligned, smallsz, &mh, &map, &info);
    if (cpu) {
        if (cpu != map)
            fail("idiom: gdr_map gave %p, the buffer is at %p", map, (void *)cpu);
        printf("%s: gdrcopy's aligned-up small buffer\n",
               roundtrip("idiom", mh, cpu, aligned, smallsz, 5) && cpu == map ? "ok" : "FAIL");
        release(g, mh, map, &info);
    }
    /* UCX's gdr_copy: the small buffer's range rounded out to GPU pages */
    unsigned long start = (unsigned long)small & GPU_PAGE_MASK;
    unsigned long end = ((unsigned long)small + smallsz + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    cpu = pin_map(g, (void *)start, end - start, &mh, &map, &info);
    if (cpu) {
        char *at = (char *)map + ((unsigned long)small - info.va);
        printf("%s: page-rounded request around an 8 KiB sub-allocation (va %#llx)\n",
               roundtrip("page-rounded", mh, at, small, smallsz, 7) ? "ok" : "FAIL",
               (unsigned long long)info.va);
        release(g, mh, map, &info);
    }

    neighbours(g, n1, n2, 8, "before gdr_open");
    if (cudaMalloc(&n3, 8) != cudaSuccess || cudaMalloc(&n4, 8) != cudaSuccess)
        fail("cudaMalloc after gdr_open");
    else
        neighbours(g, n3, n4, 8, "after gdr_open");

    /* cudaFree under a live mapping: copies refused, callback flag set */
    cpu = pin_map(g, gone, 2 << 20, &mh, &map, &info);
    if (cpu) {
        char byte = 0;
        int flag = 0;
        cudaFree(gone);
        int rc = gdr_copy_to_mapping(mh, cpu, &byte, 1);
        gdr_get_callback_flag(g, mh, &flag);
        printf("%s: copy after cudaFree returns %s, callback flag %d\n",
               rc == ESTALE && flag == 1 ? "ok" : "FAIL", strerror(rc), flag);
        if (rc != ESTALE || flag != 1)
            failures++;
        release(g, mh, map, &info);
    }
    if (gdr_close(g))
        fail("gdr_close");
    cudaFree(big);
    cudaFree(small);
    cudaFree(raw);
    cudaFree(n1);
    cudaFree(n2);
    cudaFree(n3);
    cudaFree(n4);
    printf("gdrapi_sanity: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
