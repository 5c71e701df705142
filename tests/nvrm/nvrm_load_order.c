/*
 * nvrm_load_order.c - what the nvrm backend can pin depending on when
 * libgdrx is loaded, relative to libcuda and to the allocations.
 *
 * SPDX-License-Identifier: MIT
 *
 * A plain program that links neither library: it dlopen()s both in the
 * order asked for, so the order is real.  It runs under the RM-ioctl
 * emulator and the simulated GPU (tests/nvrm/test_nvrm_load.c) and on a
 * real GPU (tests/gpu/run.sh); data is checked through cuMemcpy.
 *
 *   nvrm_load_order cuda-late   libgdrx, then libcuda.so.1; memory made
 *                               before gdrx_open (the trace starts there)
 *                               pins by default (the dma-buf export
 *                               route), as does memory made after it
 *   nvrm_load_order gdrx-late   libcuda.so.1 and memory first, then
 *                               libgdrx: the same
 *
 * libgdrx is found as libgdrx.so.0 on the library path.  Exit status 0
 * when every expectation held, 1 when one did not, 2 when it could not
 * start.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrx.h"

static struct {
    __typeof__(&cuInit)                   Init;
    __typeof__(&cuDeviceGet)              DeviceGet;
    __typeof__(&cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain;
    __typeof__(&cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease;
    __typeof__(&cuCtxSetCurrent)          CtxSetCurrent;
    __typeof__(&cuCtxSynchronize)         CtxSynchronize;
    __typeof__(&cuMemAlloc)               MemAlloc;
    __typeof__(&cuMemFree)                MemFree;
    __typeof__(&cuMemcpyHtoD)             MemcpyHtoD;
    __typeof__(&cuMemcpyDtoH)             MemcpyDtoH;
} cu;

static struct {
    __typeof__(&gdrx_open_params_init)   open_params_init;
    __typeof__(&gdrx_open)               open;
    __typeof__(&gdrx_close)              close;
    __typeof__(&gdrx_pin)                pin;
    __typeof__(&gdrx_unpin)              unpin;
    __typeof__(&gdrx_map)                map;
    __typeof__(&gdrx_copy_to_mapping)    copy_to;
    __typeof__(&gdrx_copy_from_mapping)  copy_from;
    __typeof__(&gdrx_strerror)           strerror;
} gx;

static int failures;
static CUdevice dev;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

/* dlsym every name into the function pointers at fns[0..n). */
static int resolve(void *lib, const char *const *names, void **fns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(lib, names[i]);
        if (!p) {
            printf("cannot start: %s not found\n", names[i]);
            return -1;
        }
        memcpy(&fns[i], &p, sizeof(p));
    }
    return 0;
}

static int load_cuda(void)
{
    static const char *const names[] = {
        "cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
        "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
    };
    _Static_assert(sizeof(cu) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
                   "one name per CUDA entry point");
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUcontext ctx;

    if (!lib) {
        printf("cannot start: %s\n", dlerror());
        return -1;
    }
    if (resolve(lib, names, (void **)&cu, sizeof(names) / sizeof(names[0])))
        return -1;
    if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cu.DevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cu.CtxSetCurrent(ctx) != CUDA_SUCCESS) {
        printf("cannot start: CUDA setup failed\n");
        return -1;
    }
    return 0;
}

static int load_gdrx(void)
{
    static const char *const names[] = {
        "gdrx_open_params_init", "gdrx_open", "gdrx_close", "gdrx_pin", "gdrx_unpin",
        "gdrx_map", "gdrx_copy_to_mapping", "gdrx_copy_from_mapping", "gdrx_strerror",
    };
    _Static_assert(sizeof(gx) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
                   "one name per gdrx entry point");
    void *lib = dlopen("libgdrx.so.0", RTLD_NOW | RTLD_LOCAL);

    if (!lib) {
        printf("cannot start: %s\n", dlerror());
        return -1;
    }
    return resolve(lib, names, (void **)&gx, sizeof(names) / sizeof(names[0]));
}

static CUdeviceptr alloc(size_t n)
{
    CUdeviceptr p = 0;
    if (cu.MemAlloc(&p, n) != CUDA_SUCCESS) {
        fail("cuMemAlloc(%zu)", n);
        return 0;
    }
    return p;
}

static void pattern(unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 131 + seed * 17 + (i >> 9));
}

/*
 * Pin [p, p+n) and check both directions through the mapping against
 * cuMemcpy: the device's bytes (written and synchronised before the pin)
 * read through the mapping, then bytes written through the mapping read
 * by cuMemcpyDtoH.  Returns gdrx_pin's result (0 when pinned; a failed
 * check after that is recorded).
 */
static int pin_and_check(gdrx_t g, const char *label, CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *want = malloc(n), *got = malloc(n);
    gdrx_pin_t pin;
    void *cpu = NULL;
    int rc = -ENOMEM;

    if (!want || !got) {
        fail("%s: out of host memory", label);
        goto out;
    }
    pattern(want, n, seed);
    if (cu.MemcpyHtoD(p, want, n) != CUDA_SUCCESS || cu.CtxSynchronize() != CUDA_SUCCESS) {
        fail("%s: cuMemcpyHtoD", label);
        goto out;
    }
    rc = gx.pin(g, p, n, 0, &pin);
    if (rc)
        goto out;
    int mrc = gx.map(g, pin, &cpu);
    if (mrc) {
        fail("%s: gdrx_map: %s", label, gx.strerror(mrc));
    } else {
        if (gx.copy_from(pin, got, cpu, n) != 0 || memcmp(got, want, n) != 0)
            fail("%s: the mapping does not show what cuMemcpyHtoD wrote", label);
        pattern(want, n, seed + 1);
        if (gx.copy_to(pin, cpu, want, n) != 0 ||
            cu.MemcpyDtoH(got, p, n) != CUDA_SUCCESS || memcmp(got, want, n) != 0)
            fail("%s: cuMemcpyDtoH does not show what the CPU wrote", label);
    }
    if (gx.unpin(g, pin) != 0)
        fail("%s: gdrx_unpin", label);
out:
    free(want);
    free(got);
    return rc;
}

/* Expect pinning to work (want 0) or to be refused with -ENOENT. */
static void expect(gdrx_t g, const char *label, CUdeviceptr p, size_t n, unsigned seed, int want)
{
    int rc = pin_and_check(g, label, p, n, seed);
    if (rc == -ENOMEM && !want)
        return; /* recorded already */
    if (rc != want)
        fail("%s: gdrx_pin returned %d (%s), want %d", label, rc, gx.strerror(rc), want);
    else
        printf("ok   %-44s %s\n", label, rc ? "refused (ENOENT)" : "pinned, checked both ways");
}

static int open_nvrm(gdrx_t *g)
{
    struct gdrx_open_params params;
    gx.open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    int rc = gx.open(&params, g);
    if (rc)
        printf("cannot start: gdrx_open(nvrm): %s\n", gx.strerror(rc));
    return rc;
}

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* Memory made before the trace started (`when`) pins by default, with
 * no opt-in (docs/nvrm.md, route 2); an object made after it too. */
static void expect_pinnable(gdrx_t g, const char *when, CUdeviceptr big, CUdeviceptr small,
                            CUdeviceptr after)
{
    char label[96];

    snprintf(label, sizeof(label), "3 MiB made before %s", when);
    expect(g, label, big, 3 * MiB, 1, 0);
    snprintf(label, sizeof(label), "8 KiB made before %s", when);
    expect(g, label, small, 8 * KiB, 2, 0);
    snprintf(label, sizeof(label), "8 KiB at +100, made before %s", when);
    expect(g, label, small + 100, 5000, 3, 0);
    snprintf(label, sizeof(label), "4 MiB made after %s", when);
    if (after)
        expect(g, label, after, 4 * MiB, 4, 0);
}

/* libgdrx first, then libcuda: loading libgdrx watches nothing, the
 * trace starts at gdrx_open; earlier memory is reached by export. */
static int cuda_late(void)
{
    gdrx_t g;

    unsetenv("GDRX_NVRM_IPC");
    if (load_gdrx() || load_cuda())
        return 2;
    CUdeviceptr big = alloc(3 * MiB), small = alloc(8 * KiB);
    if (!big || !small || open_nvrm(&g))
        return 2;
    CUdeviceptr later = alloc(4 * KiB); /* perhaps in small's chunk */
    CUdeviceptr own = alloc(4 * MiB);   /* an object of its own */
    printf("     libgdrx loaded before libcuda; ioctl trace from gdrx_open\n");
    expect_pinnable(g, "gdrx_open", big, small, own);
    if (later) {
        /* Known only if CUDA gave it a chunk mapped after the open. */
        int rc = pin_and_check(g, "4 KiB made after gdrx_open", later, 4 * KiB, 6);
        printf("     4 KiB made after gdrx_open: %s\n", rc ? gx.strerror(rc) : "pinned");
    }
    gx.close(g);
    cu.MemFree(big);
    cu.MemFree(small);
    cu.MemFree(later);
    cu.MemFree(own);
    cu.DevicePrimaryCtxRelease(dev);
    return 0;
}

/* libcuda and memory first: that memory is reached by export. */
static int gdrx_late(void)
{
    gdrx_t g;

    unsetenv("GDRX_NVRM_IPC");
    if (load_cuda())
        return 2;
    CUdeviceptr big = alloc(3 * MiB), small = alloc(8 * KiB);
    if (!big || !small || load_gdrx() || open_nvrm(&g))
        return 2;
    CUdeviceptr after = alloc(4 * MiB); /* an object of its own */
    printf("     libgdrx loaded after CUDA allocated\n");
    expect_pinnable(g, "libgdrx was loaded", big, small, after);
    gx.close(g);
    cu.MemFree(big);
    cu.MemFree(small);
    cu.MemFree(after);
    cu.DevicePrimaryCtxRelease(dev);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "cuda-late") == 0)
        rc = cuda_late();
    else if (argc == 2 && strcmp(argv[1], "gdrx-late") == 0)
        rc = gdrx_late();
    else
        fprintf(stderr, "usage: nvrm_load_order cuda-late|gdrx-late\n");
    if (rc == 0)
        printf("RESULT load-order %s: %s (%d failure%s)\n", argv[1], failures ? "FAIL" : "PASS",
               failures, failures == 1 ? "" : "s");
    return rc ? rc : failures ? 1 : 0;
}
