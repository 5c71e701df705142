/*
 * nvrm_selftest.c - the open self-test of a driver branch checked only
 * against its headers (nvrm_selftest.h says what and why).
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_selftest.h"

#if defined(__x86_64__)
#include <emmintrin.h>
/* drains the WC buffers (thread sanitizers reject C11 fences) */
#define SELFTEST_WC_FENCE() _mm_mfence()
#else
/* aarch64: stores to the Normal-NC mapping complete (copy_arm_order.h) */
#define SELFTEST_WC_FENCE() __asm__ volatile("dsb sy" ::: "memory")
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvrm_trace.h"

/* What is pinned, mapped and copied: one GPU page. */
#define SELFTEST_BYTES GDRX_GPU_PAGE_SIZE
/* What is allocated: CUDA gives an allocation this large a mapping of its
 * own (smaller ones come from 2 MiB chunks it may have mapped before the
 * trace was installed, which the trace never sees). */
#define SELFTEST_ALLOC ((size_t)2 << 20)

struct run {
    const struct nvrm_selftest_env *env;
    struct nvrm_selftest           *out;
    CUdeviceptr                     dptr;
    struct gdrx_backend_pin         bp;
    int                             pinned, mapped;
    uint8_t                        *host;
};

static int fail(struct run *r, const char *step, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct run *r, const char *step, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->out->detail, sizeof(r->out->detail), fmt, ap);
    va_end(ap);
    r->out->step = step;
    r->out->rc = rc ? rc : -EPROTO;
    return r->out->rc;
}

/* Bytes that differ between each run: a layout misread that happens to
 * copy the right bytes from a stale pattern cannot pass. */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

static long first_difference(const uint8_t *a, const volatile uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

/* The trace must know the allocation (UVM_MAP_EXTERNAL_ALLOCATION read at
 * the row's offsets), and a dma-buf export of its first page, where CUDA
 * makes one, must name the same object and offset. */
static int find(struct run *r, const struct gdrx_pin_req *req)
{
    struct nvrm_trace_hit hit;
    if (nvrm_trace_lookup(req->dptr, &hit) != 0)
        return fail(r, "find (trace)", -ENOENT, "the trace recorded no mapping of %#llx",
                    (unsigned long long)req->dptr);
    if (hit.base > req->dptr || hit.base + hit.length < req->dptr + req->len || !hit.h_client ||
        !hit.h_memory)
        return fail(r, "find (trace)", -EPROTO,
                    "the trace's record [%#llx, +%#llx) 0x%x/0x%x does not hold [%#llx, +%#zx)",
                    (unsigned long long)hit.base, (unsigned long long)hit.length,
                    hit.h_client, hit.h_memory, (unsigned long long)req->dptr, req->len);
    const struct nvrm_cuda *cx = r->env->cx;
    if (!cx->MemGetHandleForAddressRange)
        return 0;
    struct nvrm_export_seen seen;
    int fd = -1;
    nvrm_trace_capture_begin(&seen);
    CUresult res = cx->MemGetHandleForAddressRange(&fd, req->dptr, SELFTEST_BYTES,
                                                   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    nvrm_trace_capture_end();
    if (fd >= 0)
        close(fd);
    if (res != CUDA_SUCCESS)
        return 0; /* no dma-buf from this CUDA: that route is never taken */
    r->out->export_checked = 1;
    uint64_t want_off = hit.offset + (req->dptr - hit.base);
    if (seen.count != 1 || seen.h_client != hit.h_client || seen.h_memory != hit.h_memory ||
        seen.offset != want_off)
        return fail(r, "find (dma-buf export)", -EPROTO,
                    "the export request read as %d request(s) naming 0x%x/0x%x +%#llx, the "
                    "trace says 0x%x/0x%x +%#llx", seen.count, seen.h_client, seen.h_memory,
                    (unsigned long long)seen.offset, hit.h_client, hit.h_memory,
                    (unsigned long long)want_off);
    return 0;
}

static int pin_and_map(struct run *r, const struct gdrx_pin_req *req)
{
    const struct gdrx_backend_ops *ops = r->env->ops;
    int rc = ops->pin(r->env->bctx, req, &r->bp);
    if (rc)
        return fail(r, "pin", rc, "the backend's pin failed: %s", strerror(-rc));
    r->pinned = 1;
    rc = ops->map(r->env->bctx, &r->bp);
    if (rc)
        return fail(r, "map", rc, "the backend's map failed: %s", strerror(-rc));
    r->mapped = 1;
    if (!r->bp.cpu_base || r->bp.map_size < SELFTEST_BYTES)
        return fail(r, "map", -EPROTO, "mapped %#zx bytes at %p", r->bp.map_size,
                    r->bp.cpu_base);
    return 0;
}

/* Both directions, every byte checked. */
static int copy_both_ways(struct run *r, uint64_t seed)
{
    const struct nvrm_cuda *cx = r->env->cx;
    volatile uint8_t *map = r->bp.cpu_base;
    uint8_t *want = r->host, *got = r->host + SELFTEST_BYTES;

    fill(want, SELFTEST_BYTES, seed);
    for (size_t i = 0; i < SELFTEST_BYTES; i++)
        map[i] = want[i];
    SELFTEST_WC_FENCE();
    (void)map[SELFTEST_BYTES - 1];           /* a read flushes posted writes over PCIe */
    memset(got, 0, SELFTEST_BYTES);
    CUresult res = cx->MemcpyDtoH(got, r->dptr, SELFTEST_BYTES);
    if (res != CUDA_SUCCESS)
        return fail(r, "write through the mapping, cuMemcpyDtoH", -EIO,
                    "cuMemcpyDtoH: CUDA error %d", (int)res);
    long at = first_difference(want, got, SELFTEST_BYTES);
    if (at >= 0)
        return fail(r, "write through the mapping, cuMemcpyDtoH", -EPROTO,
                    "byte %ld: wrote 0x%02x through the mapping, cuMemcpy read 0x%02x", at,
                    want[at], got[at]);
    fill(want, SELFTEST_BYTES, ~seed);
    res = cx->MemcpyHtoD(r->dptr, want, SELFTEST_BYTES);
    if (res != CUDA_SUCCESS)
        return fail(r, "cuMemcpyHtoD, read through the mapping", -EIO,
                    "cuMemcpyHtoD: CUDA error %d", (int)res);
    at = first_difference(want, map, SELFTEST_BYTES);
    if (at >= 0)
        return fail(r, "cuMemcpyHtoD, read through the mapping", -EPROTO,
                    "byte %ld: cuMemcpy wrote 0x%02x, the mapping read 0x%02x", at, want[at],
                    map[at]);
    return 0;
}

/* Unmap and unpin; then the RM must no longer know our duplicate. */
static int tear_down(struct run *r)
{
    const struct gdrx_backend_ops *ops = r->env->ops;
    nvrm_handle_t h = r->pinned ? r->env->pin_handle(&r->bp) : 0;
    int rc = 0;

    if (r->mapped) {
        r->mapped = 0;
        rc = ops->unmap(r->env->bctx, &r->bp);
        if (rc && !r->out->rc)
            fail(r, "unmap", rc, "the backend's unmap failed: %s", strerror(-rc));
    }
    if (r->pinned) {
        r->pinned = 0;
        rc = ops->unpin(r->env->bctx, &r->bp);
        if (rc && !r->out->rc)
            fail(r, "unpin", rc, "the backend's unpin failed: %s", strerror(-rc));
        else if (!r->out->rc && r->env->handle_live(r->env->bctx, h))
            fail(r, "RM objects gone", -EPROTO,
                 "the RM still knows our duplicate 0x%x after unpin", h);
    }
    return r->out->rc;
}

static int steps(struct run *r)
{
    const struct gdrx_cuda *cu = r->env->cu;
    const struct nvrm_cuda *cx = r->env->cx;

    if (!cx->MemAlloc || !cx->MemFree || !cx->MemcpyHtoD || !cx->MemcpyDtoH)
        return fail(r, "CUDA entry points", -ELIBACC,
                    "libcuda lacks cuMemAlloc, cuMemFree or cuMemcpy");
    CUresult res = cx->MemAlloc(&r->dptr, SELFTEST_ALLOC);
    if (res != CUDA_SUCCESS)
        return fail(r, "cuMemAlloc", -ENOMEM, "cuMemAlloc(2 MiB): CUDA error %d", (int)res);
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cu->MemGetAddressRange(&base, &size, r->dptr) != CUDA_SUCCESS)
        return fail(r, "cuMemAlloc", -EIO, "cuMemGetAddressRange failed");
    /* ordering of cuMemcpy against the mapping, as the core asks for pins */
    cu->PointerSetAttribute(&(unsigned){ 1 }, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, r->dptr);
    unsigned long long buffer_id = 0;
    cu->PointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, r->dptr);
    struct gdrx_pin_req req = {
        .dptr = r->dptr, .len = SELFTEST_BYTES, .alloc_base = base, .alloc_size = size,
        .win_base = r->dptr & ~(GDRX_GPU_PAGE_SIZE - 1), .device = 0, .buffer_id = buffer_id,
    };
    req.win_size = ((r->dptr + SELFTEST_BYTES + GDRX_GPU_PAGE_SIZE - 1) &
                    ~(GDRX_GPU_PAGE_SIZE - 1)) - req.win_base;
    int rc = find(r, &req);
    if (rc == 0)
        rc = pin_and_map(r, &req);
    if (rc == 0)
        rc = copy_both_ways(r, (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ r->dptr);
    return rc;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nvrm_selftest_run(const struct nvrm_selftest_env *env, struct nvrm_selftest *out)
{
    struct run r = { .env = env, .out = out };
    const struct gdrx_cuda *cu = env->cu;
    CUdevice dev;
    CUcontext ctx = NULL, popped;
    uint64_t t0 = now_ns();

    memset(out, 0, sizeof(*out));
    out->step = "passed";
    r.host = malloc(2 * SELFTEST_BYTES);
    if (!r.host) {
        fail(&r, "host buffer", -ENOMEM, "no memory for 128 KiB");
    } else if (cu->DeviceGet(&dev, 0) != CUDA_SUCCESS ||
               cu->DevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
        fail(&r, "CUDA context", -ENODEV, "no primary context for CUDA device 0");
    } else {
        if (cu->CtxPushCurrent(ctx) != CUDA_SUCCESS) {
            fail(&r, "CUDA context", -ENODEV, "cuCtxPushCurrent failed");
        } else {
            steps(&r);
            tear_down(&r);
            if (r.dptr && env->cx->MemFree(r.dptr) != CUDA_SUCCESS && !out->rc)
                fail(&r, "cuMemFree", -EIO, "cuMemFree failed");
            cu->CtxPopCurrent(&popped);
        }
        cu->DevicePrimaryCtxRelease(dev);
    }
    free(r.host);
    out->nsec = now_ns() - t0;
}
