/*
 * test_nvrm_load.c - what the ioctl trace sees depending on when libgdrx
 * is loaded: it watches libcuda from libgdrx's load on, catches a
 * libcuda.so.1 dlopen'ed later, and leaves memory CUDA mapped before the
 * load to the GDRX_NVRM_IPC opt-in.
 *
 * SPDX-License-Identifier: MIT
 *
 * This suite links libgdrx, and libcuda.so.1 (the simulated GPU) comes
 * only with the first case's dlopen (tcuda.c): the in-process case checks
 * exactly the order the trace must catch.  The other orders need a
 * process of their own, tests/nvrm/nvrm_load_order.c, which dlopens both
 * libraries in the order asked for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "nvrm_test.h"

/* libcuda.so.1 dlopen'ed after libgdrx was loaded: memory allocated
 * before gdrx_open, whole objects and sub-allocations, pins without the
 * IPC opt-in, and so does a small buffer allocated after the open in a
 * chunk CUDA made before it (the H200 case). */
static void test_libcuda_dlopened_after_libgdrx(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    void *already = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (already)
        dlclose(already);
    NVT_REQUIRE(already == NULL); /* else this case tests another order */
    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    CUdeviceptr big = tc_alloc(3 * MiB);
    CUdeviceptr small = tc_alloc(8 * KiB); /* sub-allocated */
    NVT_REQUIRE(big && small);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr later = tc_alloc(4 * KiB);
    NVT_REQUIRE(later != 0);
    struct nvrm_emu_stats before = nvt_stats();

    void *cpu = nvt_pin_map(g, big, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, big, 3 * MiB, 7));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    cpu = nvt_pin_map(g, small + 100, 5000, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, small + 100, 5000, 8));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    cpu = nvt_pin_map(g, later, 4 * KiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, later, 4 * KiB, 9));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    /* Through the trace (GDRX_NVRM_IPC is off, and an import would not
     * duplicate): CUDA's objects were duplicated. */
    CU_ASSERT(nvt_stats().dups > before.dups);
    tc_free(big);
    tc_free(small);
    tc_free(later);
    gdrx_close(g);
}

/* The same order in a fresh process: libgdrx dlopen'ed, then libcuda. */
static void test_cuda_late_process(void)
{
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "cuda-late"), 0);
}

/* GDRX_NVRM_TRACE=0 defers the trace to the first gdrx_open: memory made
 * before it is refused (-ENOENT), as the helper then expects. */
static void test_trace_deferred_by_env(void)
{
    setenv("GDRX_NVRM_TRACE", "0", 1);
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "cuda-late"), 0);
    unsetenv("GDRX_NVRM_TRACE");
}

/* libgdrx loaded after CUDA allocated (a plugin loading it late): that
 * memory needs GDRX_NVRM_IPC=1 (the IPC handle's words, including the
 * offset word of a sub-allocation); memory made after the load does not. */
static void test_gdrx_late_process(void)
{
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "gdrx-late"), 0);
}

const struct gdrx_test_case nvrm_load_cases[] = {
    GDRX_TEST_CASE(test_libcuda_dlopened_after_libgdrx),
    GDRX_TEST_CASE(test_cuda_late_process),
    GDRX_TEST_CASE(test_trace_deferred_by_env),
    GDRX_TEST_CASE(test_gdrx_late_process),
    GDRX_TEST_END,
};
