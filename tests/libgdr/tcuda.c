/*
 * tcuda.c - CUDA and simulated-GPU access for the libgdrx suites.
 *
 * SPDX-License-Identifier: MIT
 */
#include "tcuda.h"
#include "../gpu/gpu_pattern.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct tcuda tc;
struct tsim tsim;

static void *lib;

static void *sym(const char *name)
{
    return lib ? dlsym(lib, name) : NULL;
}

#define LOAD(member, name) memcpy(&tc.member, &(void *){ sym(name) }, sizeof(void *))
#define LOADSIM(member, name) memcpy(&tsim.member, &(void *){ sym(name) }, sizeof(void *))

int tc_load(void)
{
    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return 0;
    LOAD(Init, "cuInit");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetCount, "cuDeviceGetCount");
    LOAD(DeviceGetAttribute, "cuDeviceGetAttribute");
    LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxGetCurrent, "cuCtxGetCurrent");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2");
    LOAD(MemsetD8, "cuMemsetD8_v2");
    LOAD(PointerGetAttribute, "cuPointerGetAttribute");
    LOAD(GraphLaunch, "cuGraphLaunch");
    LOAD(GraphExecDestroy, "cuGraphExecDestroy");
    LOADSIM(fail_next, "simcu_fail_next");
    LOADSIM(set_device_count, "simcu_set_device_count");
    LOADSIM(set_suballoc_threshold, "simcu_set_suballoc_threshold");
    LOADSIM(set_suballoc_alignment, "simcu_set_suballoc_alignment");
    LOADSIM(set_va_reuse, "simcu_set_va_reuse");
    LOADSIM(live_allocations, "simcu_live_allocations");
    LOADSIM(free_unhooked, "simcu_free_unhooked");
    LOADSIM(graph_free_node, "simcu_graph_free_node");
    LOADSIM(last_copy, "simcu_last_copy");
    LOADSIM(live_streams, "simcu_live_streams");
    LOADSIM(hide_entry_point, "simcu_hide_entry_point");
    LOADSIM(last_export, "simcu_last_export");
    LOADSIM(place_next_alloc, "simcu_place_next_alloc");
    return tsim.fail_next != NULL;
}

void tc_default_backend(void)
{
    setenv("GDRX_BACKEND", "dmabuf", 0);
}

int tc_main(int argc, char **argv, const struct gdrx_test_suite *suites,
            int (*before)(char **argv))
{
    if (before && before(argv) != 0)
        return 1;
    tc_default_backend();
    tc_load();
    return gdrx_test_main(argc, argv, suites);
}

int tc_setup(int dev)
{
    CUdevice d;
    CUcontext ctx;

    if (!tc_load() && !lib) {
        CU_FAIL("libcuda.so.1 cannot be loaded");
        return -1;
    }
    if (!tc.Init || tc.Init(0) != CUDA_SUCCESS || tc.DeviceGet(&d, dev) != CUDA_SUCCESS ||
        tc.DevicePrimaryCtxRetain(&ctx, d) != CUDA_SUCCESS ||
        tc.CtxSetCurrent(ctx) != CUDA_SUCCESS) {
        CU_FAIL("CUDA setup failed");
        return -1;
    }
    return 0;
}

CUdeviceptr tc_alloc(size_t bytes)
{
    CUdeviceptr p = 0;

    if (tc.MemAlloc(&p, bytes) != CUDA_SUCCESS) {
        CU_FAIL("cuMemAlloc failed");
        return 0;
    }
    return p;
}

CUdeviceptr tc_alloc_at(CUdeviceptr va, size_t bytes, int alone)
{
    CUdeviceptr p = 0;
    CUresult rc;

    if (!tsim.place_next_alloc) {
        CU_FAIL("the simulated GPU cannot place an allocation (no simcu_place_next_alloc)");
        return 0;
    }
    if (tsim.place_next_alloc(va, alone ? 1u /* SIMCU_PLACE_ALONE */ : 0) != 0) {
        CU_FAIL("simcu_place_next_alloc refused the address");
        return 0;
    }
    rc = tc.MemAlloc(&p, bytes);
    if (rc != CUDA_SUCCESS || (va != 0 && p != va)) {
        fprintf(stderr, "    tc_alloc_at(0x%llx, %zu): CUresult %d, got 0x%llx\n",
                (unsigned long long)va, bytes, (int)rc, (unsigned long long)p);
        CU_FAIL("the simulated GPU did not place the allocation where asked");
        return 0;
    }
    return p;
}

void tc_free(CUdeviceptr p)
{
    __typeof__(&cuMemFree) fn;
    void *f = sym("cuMemFree_v2");

    memcpy(&fn, &f, sizeof(fn));
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fn(p), CUDA_SUCCESS);
}

void tc_free_unseen(CUdeviceptr p)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(tsim.free_unhooked);
    CU_ASSERT_EQUAL(tsim.free_unhooked(p), CUDA_SUCCESS);
}

__typeof__(&cuMemFree) tc_table_free(void)
{
    __typeof__(&cuGetProcAddress_v2) gpa;
    __typeof__(&cuMemFree) fn = NULL;
    void *f = sym("cuGetProcAddress_v2"), *got = NULL;

    memcpy(&gpa, &f, sizeof(gpa));
    if (!f || gpa("cuMemFree", &got, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL) != CUDA_SUCCESS ||
        !got) {
        CU_FAIL("cuGetProcAddress_v2(\"cuMemFree\", 12000) failed");
        return NULL;
    }
    memcpy(&fn, &got, sizeof(fn));
    return fn;
}

void tc_pattern(void *buf, size_t len, uint32_t seed)
{
    unsigned char *b = buf;

    for (size_t i = 0; i < len; i++)
        b[i] = gp_byte(i, seed);
}

void tc_fill(CUdeviceptr p, size_t len, uint32_t seed)
{
    void *buf = malloc(len ? len : 1);

    tc_pattern(buf, len, seed);
    CU_ASSERT_EQUAL(tc.MemcpyHtoD(p, buf, len), CUDA_SUCCESS);
    free(buf);
}

int tc_check(CUdeviceptr p, size_t len, uint32_t seed)
{
    unsigned char *want = malloc(len ? len : 1), *got = malloc(len ? len : 1);

    tc_pattern(want, len, seed);
    int ok = tc.MemcpyDtoH(got, p, len) == CUDA_SUCCESS && memcmp(want, got, len) == 0;
    free(want);
    free(got);
    return ok;
}

gdrx_t tc_open(void)
{
    gdrx_t g = { 0 };
    int rc = gdrx_open(NULL, &g);

    if (rc) {
        fprintf(stderr, "    gdrx_open: %s\n", gdrx_strerror(rc));
        CU_FAIL("gdrx_open failed");
    }
    return g;
}

const struct gdrx_test_suite *tc_suites(const struct gdrx_test_suite *base,
                                        const struct gdrx_test_suite *extra)
{
    size_t nb = 0, ne = 0;

    while (base[nb].name)
        nb++;
    while (extra && extra[ne].name)
        ne++;
    struct gdrx_test_suite *all = calloc(nb + ne + 1, sizeof(*all));
    if (!all)
        return base;
    memcpy(all, base, nb * sizeof(*all));
    if (ne)
        memcpy(all + nb, extra, ne * sizeof(*all));
    return all;
}

void tc_report_skip(const char *suite, const char *why)
{
    printf("NOT RUN: suite %s (%s); its cases are not registered\n", suite, why);
    fflush(stdout);
}

int tc_ucx_cuda_prefix(char *buf, size_t len)
{
    const char *env = getenv("GDRX_UCX_CUDA_PREFIX");
    const char *src = getenv("GDRX_TEST_SRCDIR");
    char a[PATH_MAX], b[PATH_MAX], probe[PATH_MAX + 64];
    const char *cand[4] = { env, "/opt/gdrx-ucx-cuda", NULL, NULL };

    if (src) {
        snprintf(a, sizeof(a), "%s/third_party/ucx-1.13.1-cuda", src);
        snprintf(b, sizeof(b), "%s/../third_party/ucx-1.13.1-cuda", src);
        cand[2] = a;
        cand[3] = b;
    }
    for (int i = 0; i < 4; i++) {
        if (!cand[i])
            continue;
        snprintf(probe, sizeof(probe), "%s/lib/ucx/libucm_cuda.so.0", cand[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(buf, len, "%s", cand[i]);
            return 1;
        }
    }
    return 0;
}

int tc_take_landing(const char *entry)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    const uint8_t *fn = cuda ? dlsym(cuda, entry) : NULL;
    int32_t rel;

    if (cuda)
        dlclose(cuda); /* fn stays: the program keeps libcuda loaded */
    if (!fn) {
        CU_FAIL("entry point of the loaded libcuda");
        return -1;
    }
    /* the patch's jmp rel32 lands at fn + 5 + the 4 bytes after its opcode */
    memcpy(&rel, fn + 1, sizeof(rel));
    uintptr_t page = ((uintptr_t)fn + 5 + (intptr_t)rel) & ~(uintptr_t)4095;
    void *m = mmap((void *)page, 4096, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m != (void *)page && !(m == MAP_FAILED && errno == EEXIST)) {
        CU_FAIL("the landing page of an entry point");
        return -1;
    }
    return 0;
}

int tc_main_with_sim(int argc, char **argv, const struct gdrx_test_suite *suites,
                     const struct gdrx_test_suite *sim_suites)
{
    const struct gdrx_test_suite *all = suites;

    tc_default_backend();
    if (tc_load() && tsim.fail_next)
        all = tc_suites(suites, sim_suites);
    else
        tc_report_skip(sim_suites[0].name, "the simulated GPU's control API is not there");
    return gdrx_test_main(argc, argv, all);
}
