/*
 * nvrm_export_probe.c - H200 probe for the nvrm backend's route to memory
 * CUDA mapped before gdrx_open: what libcuda sends to the RM when asked
 * for a dma-buf of a device range (cuMemGetHandleForAddressRange).
 *
 * SPDX-License-Identifier: MIT
 *
 * The program defines ioctl() itself (linked with -rdynamic), so every
 * libcuda ioctl from cuInit on passes through it.  It records each
 * UVM_MAP_EXTERNAL_ALLOCATION (the ground truth: which RM object backs
 * which VA range, and from which offset) and the export request issued
 * while it asks for a dma-buf of one page of each allocation.  It prints,
 * per allocation kind, whether the export's (hClient, hMemory, offset)
 * equals what the UVM record says, and what one export costs.
 * Usage: nvrm_export_probe   (exit status 0 when every kind matched)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "nvrm_abi.h"

#define MAXREC 4096
static struct { uint64_t base, length, offset; uint32_t client, memory; } recs[MAXREC];
static int nrecs;
static int capturing;
static struct nvrm_export_dmabuf captured;
static unsigned long captured_req;
static char captured_fd[64];
static int ncaptured;

static void fd_target(int fd, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t r = readlink(path, buf, n - 1);
    buf[r > 0 ? r : 0] = '\0';
}

int ioctl(int fd, unsigned long req, ...)
{
    static int (*real)(int, unsigned long, ...);
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "ioctl");
    int rc = real(fd, req, arg);
    if (rc != 0 || !arg)
        return rc;
    if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION && nrecs < MAXREC) {
        const struct nvrm_uvm_map_external *m = arg;
        char t[64];
        fd_target(fd, t, sizeof(t));
        if (strcmp(t, "/dev/nvidia-uvm") == 0 && m->status == 0) {
            recs[nrecs].base = m->base;
            recs[nrecs].length = m->length;
            recs[nrecs].offset = m->offset;
            recs[nrecs].client = m->h_client;
            recs[nrecs].memory = m->h_memory;
            nrecs++;
        }
    }
    if (capturing && _IOC_TYPE(req) == NVRM_IOCTL_MAGIC) {
        const void *p = NULL;
        if (_IOC_NR(req) == NVRM_ESC_EXPORT_TO_DMABUF)
            p = arg;
        else if (_IOC_NR(req) == NVRM_ESC_IOCTL_XFER) {
            const struct nvrm_ioctl_xfer *x = arg;
            if (x->cmd == NVRM_ESC_EXPORT_TO_DMABUF)
                p = (const void *)(uintptr_t)x->ptr;
        }
        if (p) {
            memcpy(&captured, p, sizeof(captured));
            captured_req = req;
            fd_target(fd, captured_fd, sizeof(captured_fd));
            ncaptured++;
        }
    }
    return rc;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int failures;

/* Export [va, va+len) and compare what libcuda told the RM with the UVM
 * record covering va. */
static void probe(const char *kind, CUdeviceptr va, size_t len)
{
    int fd = -1;
    ncaptured = 0;
    memset(&captured, 0, sizeof(captured));
    capturing = 1;
    double t0 = now_us();
    CUresult r = cuMemGetHandleForAddressRange(&fd, va, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    double t1 = now_us();
    capturing = 0;
    if (fd >= 0)
        close(fd);
    double t2 = now_us();
    int i;
    for (i = nrecs - 1; i >= 0; i--)
        if (recs[i].base <= va && va - recs[i].base < recs[i].length)
            break;
    printf("%-28s va %#llx len %#zx: cuda %d, %d export ioctl(s) req %#lx on %s\n", kind,
           (unsigned long long)va, len, (int)r, ncaptured, captured_req, captured_fd);
    if (r != CUDA_SUCCESS || ncaptured != 1) {
        printf("    RESULT %s: NO CAPTURE\n", kind);
        failures++;
        return;
    }
    printf("    export: client %#x handle %#x offset %#llx size %#llx num %u total %u "
           "totalSize %#llx; export %.1f us, close %.1f us\n",
           captured.h_client, captured.handles[0], (unsigned long long)captured.offsets[0],
           (unsigned long long)captured.sizes[0], captured.num_objects, captured.total_objects,
           (unsigned long long)captured.total_size, t1 - t0, t2 - t1);
    if (i < 0) {
        printf("    RESULT %s: no UVM record for the VA (cannot check)\n", kind);
        failures++;
        return;
    }
    uint64_t want = recs[i].offset + (va - recs[i].base);
    int ok = captured.h_client == recs[i].client && captured.handles[0] == recs[i].memory &&
             captured.offsets[0] == want && captured.num_objects == 1;
    printf("    uvm:    client %#x handle %#x offset %#llx (record [%#llx,+%#llx) off %#llx)\n"
           "    RESULT %s: %s\n",
           recs[i].client, recs[i].memory, (unsigned long long)want,
           (unsigned long long)recs[i].base, (unsigned long long)recs[i].length,
           (unsigned long long)recs[i].offset, kind, ok ? "MATCH" : "MISMATCH");
    failures += !ok;
}

static void probe_alloc(const char *kind, CUdeviceptr p, size_t size)
{
    CUdeviceptr base = 0;
    size_t asz = 0;
    cuMemGetAddressRange(&base, &asz, p);
    printf("%s: ptr %#llx range [%#llx, +%#zx)\n", kind, (unsigned long long)p,
           (unsigned long long)base, asz);
    CUdeviceptr up = (base + 4095) & ~(CUdeviceptr)4095, dn = base & ~(CUdeviceptr)4095;
    char k[64];
    if (up + 4096 <= base + asz) {
        snprintf(k, sizeof(k), "%s/page-in", kind);
        probe(k, up, 4096);
    }
    if (dn != up || up + 4096 > base + asz) {
        snprintf(k, sizeof(k), "%s/page-around", kind);
        probe(k, dn, 4096);
    }
    if (!(base & 4095) && !(asz & 4095) && asz <= (64u << 20)) {
        snprintf(k, sizeof(k), "%s/whole", kind);
        probe(k, base, asz);
    }
    (void)size;
}

#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, (int)r_); return 2; } } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    int dmabuf = 0;
    cuDeviceGetAttribute(&dmabuf, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
    printf("DMA_BUF_SUPPORTED %d, %d UVM records after cuInit\n", dmabuf, nrecs);

    CUdeviceptr big, small[6], odd[4], huge, pool;
    CK(cuMemAlloc(&big, 2 << 20));
    probe_alloc("cuMemAlloc-2MiB", big, 2 << 20);
    for (int i = 0; i < 6; i++)
        CK(cuMemAlloc(&small[i], 4096));
    for (int i = 0; i < 6; i += 5)
        probe_alloc(i ? "cuMemAlloc-4KiB-sub5" : "cuMemAlloc-4KiB-sub0", small[i], 4096);
    for (int i = 0; i < 4; i++)
        CK(cuMemAlloc(&odd[i], 0x2600));
    for (int i = 1; i < 4; i += 2)
        probe_alloc(i == 1 ? "cuMemAlloc-0x2600-sub1" : "cuMemAlloc-0x2600-sub3", odd[i], 0x2600);
    CK(cuMemAlloc(&huge, (size_t)1 << 30));
    probe_alloc("cuMemAlloc-1GiB", huge, (size_t)1 << 30);
    probe("cuMemAlloc-1GiB/last-page", huge + ((size_t)1 << 30) - 4096, 4096);
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAllocAsync(&pool, 1 << 20, s));
    CK(cuStreamSynchronize(s));
    probe_alloc("cuMemAllocAsync-1MiB", pool, 1 << 20);

    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CUdeviceptr vmm;
    CK(cuMemCreate(&h, 2 * gran, &prop, 0));
    CK(cuMemAddressReserve(&vmm, 2 * gran, 0, 0, 0));
    CK(cuMemMap(vmm, 2 * gran, 0, h, 0));
    CUmemAccessDesc ad = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CK(cuMemSetAccess(vmm, 2 * gran, &ad, 1));
    probe_alloc("cuMemCreate-nohandle", vmm, 2 * gran);
    probe("cuMemCreate-nohandle/2nd", vmm + gran + 8192, 4096);

    /* Ask again after free: the export must fail, not describe old memory. */
    CK(cuMemFree(big));
    int fd = -1;
    CUresult r = cuMemGetHandleForAddressRange(&fd, big, 4096, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    printf("after cuMemFree: cuMemGetHandleForAddressRange -> %d (fd %d)\n", (int)r, fd);
    if (fd >= 0)
        close(fd);
    printf("PROBE %s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
