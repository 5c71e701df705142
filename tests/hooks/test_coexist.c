/*
 * test_coexist.c - gdrx's hooks and a UCX-style patcher (ucx_double.c) on
 * cuMemFree_v2, in both orders and every UCX mode: each sees every free
 * once, and the data of other allocations is intact.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "test_events.h"
#include "ucx_double.h"

static CUresult (*late_free)(CUdeviceptr);
static CUresult (*dlsym_free)(CUdeviceptr);

static CUresult free_direct(CUdeviceptr p)
{
    return cuMemFree(p);
}

static CUresult free_late(CUdeviceptr p)
{
    return late_free(p);
}

static CUresult free_dlsym(CUdeviceptr p)
{
    return dlsym_free(p);
}

/* The routes a free takes in each case: the reloc double only sees the
 * calls of the object whose GOT it patched. */
static void check_routes(enum ucx_double_mode mode)
{
    CUresult (*routes[])(CUdeviceptr) = { free_late, free_direct, free_dlsym };
    size_t n = mode == UCX_RELOC ? 1 : 3;
    uint32_t pattern[256], back[256];
    CUdeviceptr keep = ev_alloc(sizeof(pattern));

    for (size_t i = 0; i < 256; i++)
        pattern[i] = (uint32_t)(i * 2654435761u);
    CU_ASSERT_FATAL(cuMemcpyHtoD(keep, pattern, sizeof(pattern)) == CUDA_SUCCESS);
    for (size_t i = 0; i < n; i++) {
        int before = ucx_double_frees;
        CUdeviceptr p = ev_alloc(8192);
        ev_expect_free(routes[i], p);              /* gdrx: once */
        CU_ASSERT_EQUAL(ucx_double_frees, before + 1); /* UCX: once */
        CU_ASSERT_EQUAL(ucx_double_last, p);
    }
    CU_ASSERT_FATAL(cuMemcpyDtoH(back, keep, sizeof(back)) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(back, pattern, sizeof(back)), 0);
    CU_ASSERT_EQUAL(cuMemFree(keep), CUDA_SUCCESS);
}

static void run(enum ucx_double_mode mode, int ucx_first)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *late = hooks_dlopen("tests/hooks", "libhooks_late.so", RTLD_NOW | RTLD_LOCAL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    late_free = (CUresult (*)(CUdeviceptr))dlsym(late, "hooks_late_free");
    dlsym_free = (CUresult (*)(CUdeviceptr))dlsym(lib, "cuMemFree_v2");
    ev_cuda_setup();
    if (ucx_first)
        CU_ASSERT_EQUAL_FATAL(ucx_double_install(mode, lib), 0);
    ev_subscribe();
    if (!ucx_first && mode != UCX_RELOC) {
        /* UCX's relocator would have to move our entry's `jmp rel32`,
         * which it does not know: it refuses, and gdrx still sees frees
         * (the limit docs/free-interception.md describes). */
        CU_ASSERT_EQUAL(ucx_double_install(mode, lib), -ENOTSUP);
        ev_expect_free(free_direct, ev_alloc(4096));
        return;
    }
    if (!ucx_first)
        CU_ASSERT_EQUAL_FATAL(ucx_double_install(mode, lib), 0);
    check_routes(mode);
}

static void test_bistro_near_ucx_first(void) { run(UCX_BISTRO_NEAR, 1); }
static void test_bistro_near_gdrx_first(void) { run(UCX_BISTRO_NEAR, 0); }
static void test_bistro_far_ucx_first(void) { run(UCX_BISTRO_FAR, 1); }
static void test_bistro_far_gdrx_first(void) { run(UCX_BISTRO_FAR, 0); }
static void test_reloc_ucx_first(void) { run(UCX_RELOC, 1); }
static void test_reloc_gdrx_first(void) { run(UCX_RELOC, 0); }

const struct gdrx_test_case coexist_cases[] = {
    GDRX_TEST_CASE(test_bistro_near_ucx_first),
    GDRX_TEST_CASE(test_bistro_near_gdrx_first),
    GDRX_TEST_CASE(test_bistro_far_ucx_first),
    GDRX_TEST_CASE(test_bistro_far_gdrx_first),
    GDRX_TEST_CASE(test_reloc_ucx_first),
    GDRX_TEST_CASE(test_reloc_gdrx_first),
    GDRX_TEST_END
};
