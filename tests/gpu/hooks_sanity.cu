// hooks_sanity - libgdrx's CUDA memory events on a real GPU, with the CUDA
// runtime initialised BEFORE the hooks are installed (the case a static
// runtime makes hard: it fetched its driver table already).  Built by
// tests/gpu/build.sh twice: hooks_sanity_static and hooks_sanity_shared
// (-cudart static / shared).  Prints the entry bytes of every hooked libcuda
// export before and after installation, and whether UCX 1.13's relocator
// could move them; exit status 1 if any check failed.
//
// SPDX-License-Identifier: MIT
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdrx.h"

static int n_alloc, n_free, failures;
static uint64_t last_base;
static size_t last_size;

static void on_event(const struct gdrx_mem_event *e, void *arg)
{
    (void)arg;
    if (e->type == GDRX_MEM_EVENT_ALLOC)
        n_alloc++;
    else
        n_free++;
    last_base = e->base;
    last_size = e->size;
}

static const char *const hooked[] = {
    "cuMemFree", "cuMemFree_v2", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemUnmap",
    "cuMemAlloc", "cuMemAlloc_v2", "cuMemAllocPitch", "cuMemAllocPitch_v2", "cuMemAllocAsync",
    "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemMap",
    "cuGetProcAddress", "cuGetProcAddress_v2",
};

// Length of one instruction UCX 1.13-1.22's relocator accepts, or 0.
static size_t ucx_insn_len(const uint8_t *c)
{
    uint8_t rex = 0, op = c[0];
    size_t i = 1;
    if ((op & 0xF0) == 0x40) { rex = op; op = c[i++]; }
    if ((rex == 0 || rex == 0x41) && (op & 0xF0) == 0x50) return i;
    if (rex == 0x48 && op == 0x81 && c[i] == 0xEC) return i + 5;
    if (rex == 0x48 && op == 0x89) {
        uint8_t m = c[i];
        if (m == 0xE5) return i + 1;
        if ((m >> 6) == 1 && (m & 7) == 4) return i + 3;
        if ((m >> 6) == 2 && (m & 7) == 4) return i + 6;
        return 0;
    }
    if (rex == 0 && (op & 0xF8) == 0xB8) return i + 4;
    return 0;
}

static int ucx_can_move(const uint8_t *c, size_t need)
{
    size_t len = 0, n;
    while (len < need) {
        if (!(n = ucx_insn_len(c + len))) return 0;
        len += n;
    }
    return 1;
}

static void dump(void *lib, const char *when)
{
    for (size_t i = 0; i < sizeof(hooked) / sizeof(hooked[0]); i++) {
        const uint8_t *f = (const uint8_t *)dlsym(lib, hooked[i]);
        if (!f) {
            printf("%s %-29s absent\n", when, hooked[i]);
            continue;
        }
        printf("%s %-29s", when, hooked[i]);
        for (int k = 0; k < 16; k++) printf(" %02x", f[k]);
        printf("  ucx-near=%d ucx-far=%d\n", ucx_can_move(f, 5), ucx_can_move(f, 12));
    }
}

// One operation: at least one ALLOC and exactly one FREE covering ptr.
static void check(const char *what, int a0, int f0, uint64_t ptr)
{
    int allocs = n_alloc - a0, frees = n_free - f0;
    int ok = allocs >= 1 && frees == 1 && last_base <= ptr && ptr < last_base + last_size;
    printf("%-4s %-34s alloc events %d, free events %d, last [%#llx, +%zu)\n", ok ? "ok" : "FAIL",
           what, allocs, frees, (unsigned long long)last_base, last_size);
    failures += !ok;
}

int main(void)
{
    gdrx_mem_sub_t sub;
    void *p = NULL;
    int a, f, v = 0;

    cudaFree(0); // the runtime initialises and fetches its driver entry points
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cuDriverGetVersion(&v);
    printf("driver API %d\n", v);
    dump(lib, "before");
    int rc = gdrx_mem_events_subscribe(GDRX_MEM_EVENT_ALLOC | GDRX_MEM_EVENT_FREE, on_event, NULL, &sub);
    printf("subscribe after the runtime initialised: %d\n", rc);
    if (rc)
        return 1;
    dump(lib, "after ");

    a = n_alloc; f = n_free;
    cudaMalloc(&p, 1 << 20); cudaFree(p);
    check("cudaMalloc/cudaFree 1 MiB", a, f, (uintptr_t)p);
    a = n_alloc; f = n_free;
    cudaMalloc(&p, 4096); cudaFree(p);
    check("cudaMalloc/cudaFree 4 KiB", a, f, (uintptr_t)p);
    cudaStream_t s;
    cudaStreamCreate(&s);
    a = n_alloc; f = n_free;
    cudaMallocAsync(&p, 1 << 16, s); cudaFreeAsync(p, s); cudaStreamSynchronize(s);
    check("cudaMallocAsync/cudaFreeAsync", a, f, (uintptr_t)p);
    size_t pitch;
    a = n_alloc; f = n_free;
    cudaMallocPitch(&p, &pitch, 1000, 10); cudaFree(p);
    check("cudaMallocPitch/cudaFree", a, f, (uintptr_t)p);
    CUdeviceptr d;
    a = n_alloc; f = n_free;
    cuMemAlloc(&d, 1 << 20); cuMemFree(d);
    check("cuMemAlloc/cuMemFree", a, f, d);

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    cuMemAddressReserve(&va, gran, 0, 0, 0);
    cuMemCreate(&h, gran, &prop, 0);
    a = n_alloc; f = n_free;
    cuMemMap(va, gran, 0, h, 0); cuMemUnmap(va, gran);
    check("cuMemMap/cuMemUnmap", a, f, va);
    cuMemRelease(h);
    cuMemAddressFree(va, gran);

    void *fp = NULL;
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuMemFree", &fp, 12000, cudaEnableDefault, &q);
    a = n_alloc; f = n_free;
    cuMemAlloc(&d, 4096);
    ((CUresult (*)(CUdeviceptr))fp)(d);
    check("cuMemFree via the runtime entry point", a, f, d);

    rc = gdrx_mem_events_unsubscribe(sub);
    printf("unsubscribe: %d\n%s (%d failure%s)\n", rc, failures ? "FAIL" : "PASS", failures,
           failures == 1 ? "" : "s");
    return failures || rc ? 1 : 0;
}
