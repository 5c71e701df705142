/*
 * nvrm_vmm_probe.c - the nvrm backend's own code for cuMemCreate (VMM)
 * memory on a real GPU, driven directly rather than through gdrx_pin (so
 * it runs whatever the core accepts): discovery (export/import route for
 * memory mapped before the ioctl trace, trace route after), duplicate or
 * import, one view, and the data checked by cuMemcpy and a GPU kernel.
 * Exit status 1 on any mismatch.
 *
 * SPDX-License-Identifier: MIT
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvrm_client.h"
#include "nvrm_discover.h"
#include "nvrm_object.h"
#include "hooks/got_import.h"
#include "nvrm_trace.h"
#include "gpu_pattern.h"
#include "gpu_vmm.h"

long long gk_verify_write(uint64_t dptr, size_t n, uint32_t expect, uint32_t write);

static int failures;

#define CHECK(cond, ...)                          \
    do {                                          \
        if (!(cond)) {                            \
            printf("FAIL: " __VA_ARGS__);         \
            printf("\n");                         \
            failures++;                           \
        }                                         \
    } while (0)

/* Discover, get the object, map [p, p+n) and check data both ways. */
static void probe(struct nvrm_client *c, struct nvrm_object **objs, const char *label,
                  CUdeviceptr base, size_t size, CUdeviceptr p, size_t n, uint32_t seed)
{
    struct gdrx_pin_req r = { .dptr = p, .len = n, .alloc_base = base, .alloc_size = size };
    unsigned long long id = 0;
    cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
    r.buffer_id = id;
    r.win_base = p & ~(GDRX_GPU_PAGE_SIZE - 1);
    r.win_size = ((p + n + GDRX_GPU_PAGE_SIZE - 1) & ~(GDRX_GPU_PAGE_SIZE - 1)) - r.win_base;

    int before = failures;
    struct nvrm_source src;
    struct nvrm_object *o = NULL;
    struct nvrm_view *v = NULL;
    uint8_t *cpu = NULL;
    int rc = nvrm_discover(c, &r, &src);
    CHECK(rc == 0, "%s: discover: %d", label, rc);
    if (rc)
        return;
    printf("     %s: route %s, object offset %#llx\n", label,
           src.kind == NVRM_OBJ_IMPORT ? "export/import (POSIX fd)" : "ioctl trace + dup",
           (unsigned long long)src.obj_off);
    rc = nvrm_object_get(c, objs, 0, &src, &o);
    CHECK(rc == 0, "%s: object: %d", label, rc);
    if (rc)
        return;
    rc = nvrm_view_map(c, o, src.obj_off, r.win_size, &v, &cpu);
    CHECK(rc == 0, "%s: view: %d", label, rc);
    if (rc == 0) {
        uint8_t *at = cpu + (p - r.win_base);
        uint8_t *h = malloc(n), *got = malloc(n);
        for (size_t i = 0; i < n; i++)
            h[i] = gp_byte(i, seed);
        memcpy(at, h, n);
        _mm_sfence();
        CHECK(cuMemcpyDtoH(got, p, n) == CUDA_SUCCESS && memcmp(got, h, n) == 0,
              "%s: CPU writes not seen by cuMemcpyDtoH", label);
        long long bad = gk_verify_write(p, n, seed, seed + 1);
        CHECK(bad == 0, "%s: kernel saw %lld bytes differ", label, bad);
        memcpy(got, at, n);
        size_t diff = 0;
        for (size_t i = 0; i < n; i++)
            diff += got[i] != gp_byte(i, seed + 1);
        CHECK(diff == 0, "%s: CPU read %zu bytes that differ from the kernel's", label, diff);
        if (failures == before)
            printf("ok   %s: %zu B checked both ways\n", label, n);
        free(h);
        free(got);
        nvrm_view_release(c, o, v, cpu, r.win_size, 0);
    }
    nvrm_object_put(c, objs, o);
}

int main(void)
{
    const struct gdrx_cuda *cu;
    const struct nvrm_cuda *cx;
    struct nvrm_client c;
    struct nvrm_object *objs = NULL;
    CUdevice dev;
    CUcontext ctx;
    struct vmm early, late;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || gdrx_cuda_get(&cu) || nvrm_cuda_get(&cx) ||
        nvrm_client_open(&c, cu, cx)) {
        printf("FAIL: setup\n");
        return 2;
    }
    const char *what = "";
    CHECK(vmm_create(&early, 2u << 20, &what) == 0, "%s (before the trace)", what);
    CHECK(nvrm_trace_install(gdrx_got_patch_import) == 0, "trace install");
    CHECK(vmm_create(&late, 64u << 20, &what) == 0, "%s (after the trace)", what);
    if (!failures) {
        probe(&c, &objs, "VMM 2 MiB mapped before the trace", early.va, early.size, early.va,
              early.size, 1);
        probe(&c, &objs, "VMM 64 MiB mapped after the trace", late.va, late.size, late.va,
              8u << 20, 3);
        probe(&c, &objs, "VMM interior range", late.va, late.size, late.va + 5 * 65536 + 3,
              3000000, 5);
    }
    nvrm_client_close(&c);
    printf("RESULT vmm: %s (%d failure%s)\n", failures ? "FAIL" : "PASS", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
