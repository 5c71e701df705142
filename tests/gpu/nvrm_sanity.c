/*
 * nvrm_sanity.c - end-to-end check of the nvrm backend on a real GPU (run
 * by tests/gpu/run.sh on the H200): every kind of CUDA memory the backend
 * supports, each copy checked by cuMemcpy and by a GPU kernel.  Exits 1
 * on any mismatch, 2 if it could not start.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "gpu_vmm.h"
#include "nvrm_sanity.h"

gdrx_t g_ctx;
int g_failures;

void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    g_failures++;
}

int cu_ok(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fail("%s: %s (%d)", what, name ? name : "?", (int)r);
    return -1;
}

void fill_pattern(uint8_t *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = gp_byte(i, seed);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Mismatches between the CPU's view through the mapping and pattern seed;
 * ranges over 64 MiB are read in 64 samples of 64 KiB plus the tail. */
static size_t cpu_read_check(gdrx_pin_t pin, const uint8_t *cpu, size_t n, uint32_t seed,
                             uint8_t *buf)
{
    size_t bad = 0, chunk = 64 << 10;
    size_t nsamples = n > (64u << 20) ? 65 : 1;
    for (size_t s = 0; s < nsamples; s++) {
        size_t off = 0, len = n;
        if (nsamples > 1) {
            off = s < 64 ? (n / 64) * s : n - chunk;
            len = chunk;
        }
        int rc = gdrx_copy_from_mapping(pin, buf, cpu + off, len);
        if (rc) {
            fail("gdrx_copy_from_mapping: %s", gdrx_strerror(rc));
            return n;
        }
        for (size_t i = 0; i < len; i++)
            bad += buf[i] != gp_byte(off + i, seed);
    }
    return bad;
}

/* Step C of check_range_as: cuMemcpyHtoD from pageable memory, then the
 * CPU reads the bytes through the mapping. */
static void htod_then_cpu_read(const char *label, enum mem_order order, gdrx_pin_t pin,
                               const uint8_t *cpu, CUdeviceptr p, size_t n, uint32_t seed,
                               uint8_t *h, uint8_t *e)
{
    fill_pattern(h, n, seed);
    if (cu_ok(cuMemcpyHtoD(p, h, n), "cuMemcpyHtoD"))
        return;
    size_t bad = cpu_read_check(pin, cpu, n, seed, e);
    if (order == ORDER_SYNC_MEMOPS) {
        /* gdrx.h: SYNC_MEMOPS is set by gdrx_pin and orders the copy
         * with the CPU's reads, with no synchronisation by the caller. */
        int sync = -1;
        cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p);
        if (sync != 1)
            fail("%s: SYNC_MEMOPS reads %d after gdrx_pin, want 1", label, sync);
        if (bad) {
            cuCtxSynchronize();
            size_t after = cpu_read_check(pin, cpu, n, seed, e);
            fail("%s: ORDERING: CPU read %zu bytes that differ right after cuMemcpyHtoD "
                 "(%zu after cuCtxSynchronize)", label, bad, after);
        }
        return;
    }
    /* Stream-ordered or VMM memory: ordered once the caller synchronised
     * the context whose legacy stream did the copy (gdrx.h, Ordering). */
    if (bad)
        printf("     %s: %zu bytes not yet landed right after cuMemcpyHtoD (allowed for "
               "this kind before synchronising)\n", label, bad);
    if (cu_ok(cuCtxSynchronize(), "cuCtxSynchronize"))
        return;
    size_t after = cpu_read_check(pin, cpu, n, seed, e);
    if (after)
        fail("%s: CPU read %zu bytes that differ from cuMemcpyHtoD's after cuCtxSynchronize",
             label, after);
}

int check_range_as(const char *label, CUdeviceptr p, size_t n, uint32_t seed,
                   enum mem_order order)
{
    gdrx_pin_t pin;
    void *cpu = NULL;
    int before = g_failures;
    uint8_t *h = malloc(n), *e = malloc(n);
    uint32_t A = seed * 4 + 1, B = A + 1, C = A + 2, D = A + 3;

    if (!h || !e) {
        fail("%s: out of host memory", label);
        free(h);
        free(e);
        return -1;
    }
    double t0 = now_us();
    int rc = gdrx_pin(g_ctx, p, n, 0, &pin);
    if (rc) {
        fail("%s: gdrx_pin(%#llx, %zu): %s", label, (unsigned long long)p, n, gdrx_strerror(rc));
        goto out;
    }
    rc = gdrx_map(g_ctx, pin, &cpu);
    double t1 = now_us();
    if (rc) {
        fail("%s: gdrx_map: %s", label, gdrx_strerror(rc));
        gdrx_unpin(g_ctx, pin);
        goto out;
    }
    struct gdrx_pin_info info;
    if (gdrx_pin_query(g_ctx, pin, &info) != 0 || info.backend != GDRX_BACKEND_NVRM ||
        info.mapping_type != GDRX_MAPPING_WC || info.cpu_ptr != cpu)
        fail("%s: pin info (backend %d, mapping %d)", label, info.backend, info.mapping_type);

    /* A: CPU -> GPU, seen by cuMemcpy and by a kernel, which writes B. */
    fill_pattern(h, n, A);
    if ((rc = gdrx_copy_to_mapping(pin, cpu, h, n)) != 0)
        fail("%s: gdrx_copy_to_mapping: %s", label, gdrx_strerror(rc));
    if (cu_ok(cuMemcpyDtoH(e, p, n), "cuMemcpyDtoH") == 0 && memcmp(e, h, n) != 0)
        fail("%s: CPU-written bytes differ in cuMemcpyDtoH", label);
    long long bad = gk_verify_write(p, n, A, B);
    if (bad != 0)
        fail("%s: kernel saw %lld bytes differ from what the CPU wrote", label, bad);
    /* B: kernel -> CPU (the kernel's launcher synchronised the device). */
    size_t cbad = cpu_read_check(pin, cpu, n, B, e);
    if (cbad)
        fail("%s: CPU read %zu bytes that differ from what the kernel wrote", label, cbad);
    /* C: cuMemcpyHtoD -> CPU, with the ordering rule of this kind. */
    htod_then_cpu_read(label, order, pin, cpu, p, n, C, h, e);
    /* D: CPU -> kernel. */
    fill_pattern(h, n, D);
    if ((rc = gdrx_copy_to_mapping(pin, cpu, h, n)) != 0)
        fail("%s: gdrx_copy_to_mapping: %s", label, gdrx_strerror(rc));
    if ((bad = gk_verify_write(p, n, D, 0)) != 0)
        fail("%s: kernel saw %lld bytes differ (second write)", label, bad);

    if ((rc = gdrx_unmap(g_ctx, pin)) != 0)
        fail("%s: gdrx_unmap: %s", label, gdrx_strerror(rc));
    if ((rc = gdrx_unpin(g_ctx, pin)) != 0)
        fail("%s: gdrx_unpin: %s", label, gdrx_strerror(rc));
    if (g_failures == before)
        printf("ok   %-28s %10zu B at %#llx (+%#llx in 2 MiB)  pin+map %.0f us\n", label, n,
               (unsigned long long)p, (unsigned long long)(p & 0x1fffff), t1 - t0);
out:
    free(h);
    free(e);
    return g_failures == before ? 0 : -1;
}

int check_range(const char *label, CUdeviceptr p, size_t n, uint32_t seed)
{
    return check_range_as(label, p, n, seed, ORDER_SYNC_MEMOPS);
}

/* Final bytes of a range must be pattern D of its seed (neighbours of
 * sub-allocations were not overwritten). */
static void check_final(const char *label, CUdeviceptr p, size_t n, uint32_t seed)
{
    long long bad = gk_verify_write(p, n, seed * 4 + 4, 0);
    if (bad != 0)
        fail("%s: %lld bytes changed after its own check", label, bad);
}

static void sizes(void)
{
    static const size_t ns[] = { 4, 8, 100, 4096, 65536, 65539, 1u << 20, 2u << 20,
                                 (3u << 20) + 5, 64u << 20, 256u << 20, 1u << 30 };
    char label[64];
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        CUdeviceptr p;
        if (cu_ok(cuMemAlloc(&p, ns[i]), "cuMemAlloc"))
            continue;
        snprintf(label, sizeof(label), "cuMemAlloc %zu", ns[i]);
        check_range(label, p, ns[i], 10 + (uint32_t)i);
        if (ns[i] >= (3u << 20)) {
            snprintf(label, sizeof(label), "  interior of %zu", ns[i]);
            check_range(label, p + 65536 + 7, ns[i] - 65536 - 100, 30 + (uint32_t)i);
        }
        cu_ok(cuMemFree(p), "cuMemFree");
    }
}

static void suballocations(void)
{
    static const size_t ns[] = { 4, 100, 512, 4096, 5000, 65536, 8, 70000 };
    enum { N = sizeof(ns) / sizeof(ns[0]) };
    CUdeviceptr p[N];
    char label[64];
    for (int i = 0; i < N; i++)
        if (cu_ok(cuMemAlloc(&p[i], ns[i]), "cuMemAlloc"))
            return;
    for (int i = 0; i < N; i++) {
        snprintf(label, sizeof(label), "sub-allocation %zu", ns[i]);
        check_range(label, p[i], ns[i], 50 + (uint32_t)i);
    }
    for (int i = 0; i < N; i++) {
        snprintf(label, sizeof(label), "sub-allocation %zu", ns[i]);
        check_final(label, p[i], ns[i], 50 + (uint32_t)i);
        cuMemFree(p[i]);
    }
}

static void async_pool(void)
{
    static const size_t ns[] = { 4096, 1u << 20, 32u << 20 };
    char label[64];
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        CUdeviceptr p;
        if (cu_ok(cuMemAllocAsync(&p, ns[i], 0), "cuMemAllocAsync") ||
            cu_ok(cuStreamSynchronize(0), "cuStreamSynchronize"))
            continue;
        snprintf(label, sizeof(label), "cuMemAllocAsync %zu", ns[i]);
        check_range_as(label, p, ns[i], 60 + (uint32_t)i, ORDER_STREAM);
        cu_ok(cuMemFreeAsync(p, 0), "cuMemFreeAsync");
        cuStreamSynchronize(0);
    }
}

/* cuMemCreate'd memory; 0 or -1 (failure recorded). */
static int vmm_make(struct vmm *m, size_t want)
{
    const char *what = "";
    return cu_ok(vmm_create(m, want, &what), what);
}

static int open_nvrm(void)
{
    struct gdrx_open_params params;
    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    int rc = gdrx_open(&params, &g_ctx);
    if (rc) {
        fail("gdrx_open(nvrm): %s", gdrx_strerror(rc));
        return -1;
    }
    uint64_t v = 0;
    gdrx_get_attr(g_ctx, GDRX_ATTR_DRIVER_VERSION, &v);
    printf("gdrx nvrm backend open, driver %llu.%llu\n", (unsigned long long)(v >> 16),
           (unsigned long long)(v & 0xffff));
    return 0;
}

static int make_current(void)
{
    CUdevice dev;
    CUcontext ctx;
    return cu_ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
                   cu_ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
                   cu_ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
               ? -1
               : 0;
}

/* Memory made before gdrx_open: the ioctl trace starts at the open, so
 * CUDA's objects mapped before it are reached through the dma-buf export
 * route, by default (no GDRX_NVRM_IPC): whole objects, sub-allocations at
 * unaligned offsets, pool memory, exported VMM memory. */
static void early_allocations(void)
{
    CUdeviceptr big = 0, small = 0, odd[3] = { 0 }, pool = 0;
    struct vmm vm = { 0 };
    CUstream s = NULL;

    unsetenv("GDRX_NVRM_IPC");
    if (make_current() || cu_ok(cuMemAlloc(&big, 2u << 20), "cuMemAlloc") ||
        cu_ok(cuMemAlloc(&small, 4096), "cuMemAlloc"))
        return;
    for (int i = 0; i < 3; i++)
        if (cu_ok(cuMemAlloc(&odd[i], 0x2600), "cuMemAlloc"))
            return;
    if (cu_ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        cu_ok(cuMemAllocAsync(&pool, 1u << 20, s), "cuMemAllocAsync") ||
        cu_ok(cuStreamSynchronize(s), "cuStreamSynchronize"))
        return;
    int have_vmm = vmm_make(&vm, 2u << 20) == 0;
    if (open_nvrm())
        return;
    check_range("early 2 MiB (no opt-in)", big, 2u << 20, 80);
    check_range("early 4 KiB (no opt-in)", small, 4096, 81);
    check_range("early 0x2600 sub-allocation", odd[1], 0x2600, 82);
    check_range("early 0x2600 sub-allocation +0x123", odd[2] + 0x123, 0x2000, 83);
    check_range_as("early cuMemAllocAsync 1 MiB", pool, 1u << 20, 84, ORDER_STREAM);
    if (have_vmm) {
        check_range_as("cuMemCreate early (POSIX fd)", vm.va, vm.size, 72, ORDER_STREAM);
        vmm_destroy(&vm);
    }
    cuMemFree(big);
    cuMemFree(small);
    for (int i = 0; i < 3; i++)
        cuMemFree(odd[i]);
    cuMemFreeAsync(pool, s);
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
}

/* Pins inside a mapped pin's window share its BAR1 view through another
 * mmap of the view's /dev/nvidiaN fd: each is checked like any range
 * while the outer pin stays mapped, and the outer mapping then shows the
 * last bytes written. */
static void shared_window(void)
{
    const size_t n = 4u << 20;
    CUdeviceptr p;
    gdrx_pin_t outer;
    void *cpu = NULL;

    if (cu_ok(cuMemAlloc(&p, n), "cuMemAlloc"))
        return;
    int rc = gdrx_pin(g_ctx, p, n, 0, &outer);
    if (rc == 0 && (rc = gdrx_map(g_ctx, outer, &cpu)) != 0)
        gdrx_unpin(g_ctx, outer);
    if (rc) {
        fail("shared window: outer pin: %s", gdrx_strerror(rc));
        cuMemFree(p);
        return;
    }
    check_range("window shared: interior", p + 65536 + 3, 100000, 90);
    check_range("window shared: one page", p + (2u << 20), 65536, 91);
    uint8_t *e = malloc(65536), *want = malloc(65536);
    if (e && want && cu_ok(cuMemcpyDtoH(want, p + (2u << 20), 65536), "cuMemcpyDtoH") == 0 &&
        (gdrx_copy_from_mapping(outer, e, (uint8_t *)cpu + (2u << 20), 65536) != 0 ||
         memcmp(e, want, 65536) != 0))
        fail("shared window: the outer mapping does not show the inner pin's bytes");
    free(e);
    free(want);
    gdrx_unpin(g_ctx, outer);
    cuMemFree(p);
}

/* The normal order: the backend opens before CUDA memory exists. */
static void main_checks(void)
{
    if (open_nvrm() || make_current())
        return;
    sizes();
    suballocations();
    shared_window();
    async_pool();
    struct vmm m;
    if (vmm_make(&m, 64u << 20) == 0) {
        check_range_as("cuMemCreate 64 MiB (trace)", m.va, m.size, 70, ORDER_STREAM);
        check_range_as("  interior of it", m.va + 3 * 65536 + 1, 1000000, 71, ORDER_STREAM);
        vmm_destroy(&m);
    }
    check_free_realloc(64u << 10);
    check_free_realloc(4u << 20);
    check_fork();
    measure_latency();
}

/* nvrm_sanity        every check, the backend opened right after cuInit
 * nvrm_sanity early  allocations made before gdrx_open */
int main(int argc, char **argv)
{
    char name[128] = "?", bus[32] = "?", sysver[64] = "?";
    CUdevice dev;
    int drv = 0, early = argc > 1 && strcmp(argv[1], "early") == 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cu_ok(cuInit(0), "cuInit") || cu_ok(cuDeviceGet(&dev, 0), "cuDeviceGet"))
        return 2;
    cuDeviceGetName(name, sizeof(name), dev);
    cuDeviceGetPCIBusId(bus, sizeof(bus), dev);
    cuDriverGetVersion(&drv);
    FILE *f = fopen("/sys/module/nvidia/version", "r");
    if (f) {
        if (!fgets(sysver, sizeof(sysver), f))
            strcpy(sysver, "?");
        sysver[strcspn(sysver, "\n")] = '\0';
        fclose(f);
    }
    printf("%s: device 0 %s at %s, CUDA driver API %d, nvidia.ko %s, uid %d\n",
           early ? "early" : "main", name, bus, drv, sysver, (int)getuid());
    if (early)
        early_allocations();
    else
        main_checks();
    if (g_ctx.id)
        gdrx_close(g_ctx);
    printf("RESULT %s: %s (%d failure%s)\n", early ? "early" : "main",
           g_failures ? "FAIL" : "PASS", g_failures, g_failures == 1 ? "" : "s");
    return g_failures ? 1 : 0;
}
