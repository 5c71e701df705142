/*
 * test_nvrm_load.c - what the ioctl trace sees: it starts at the first
 * nvrm gdrx_open (never at libgdrx's load) and only where the driver
 * version passed the backend's checks; memory CUDA mapped before that is
 * left to the GDRX_NVRM_IPC opt-in.
 *
 * SPDX-License-Identifier: MIT
 *
 * This suite links libgdrx, and libcuda.so.1 (the simulated GPU) comes
 * only with the first case's dlopen (tcuda.c).  Other load orders need a
 * process of their own, tests/nvrm/nvrm_load_order.c, which dlopens both
 * libraries in the order asked for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "nvrm_test.h"

/* Memory allocated before gdrx_open, whole objects and sub-allocations,
 * is unknown to the trace: -ENOENT without the IPC opt-in, pinned with
 * it.  Memory in an object CUDA maps after the open pins without it. */
static void test_trace_starts_at_open(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    CUdeviceptr big = tc_alloc(3 * MiB);
    CUdeviceptr small = tc_alloc(8 * KiB); /* sub-allocated */
    NVT_REQUIRE(big && small);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr later = tc_alloc(3 * MiB);
    NVT_REQUIRE(later != 0);

    CU_ASSERT_EQUAL(gdrx_pin(g, big, 3 * MiB, 0, &pin), -ENOENT);
    CU_ASSERT_EQUAL(gdrx_pin(g, small + 100, 5000, 0, &pin), -ENOENT);
    struct nvrm_emu_stats before = nvt_stats();
    void *cpu = nvt_pin_map(g, later, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, later, 3 * MiB, 9));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    /* Through the trace (GDRX_NVRM_IPC is off): CUDA's object was dup'ed. */
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups + 1);

    setenv("GDRX_NVRM_IPC", "1", 1);
    cpu = nvt_pin_map(g, big, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, big, 3 * MiB, 7));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    cpu = nvt_pin_map(g, small + 100, 5000, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, small + 100, 5000, 8));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    unsetenv("GDRX_NVRM_IPC");
    tc_free(big);
    tc_free(small);
    tc_free(later);
    gdrx_close(g);
}

/* An open refused for the driver version installs no trace: memory made
 * after it stays unknown once a later open (validated driver) succeeds. */
static void test_no_trace_on_unvalidated_driver(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions("999.12.01", "999.12.01") == 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -ENOTSUP);
    CUdeviceptr between = tc_alloc(3 * MiB);
    NVT_REQUIRE(between != 0);
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr after = tc_alloc(3 * MiB);
    NVT_REQUIRE(after != 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, between, 3 * MiB, 0, &pin), -ENOENT);
    void *cpu = nvt_pin_map(g, after, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, after, 3 * MiB, 5));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    tc_free(between);
    tc_free(after);
    gdrx_close(g);
}

/* gdrx_probe on nvrm: the driver's checks run (an unvalidated driver is
 * refused), an RM client is made and freed, and no trace starts: memory
 * made after the probe is unknown to a later open. */
static void test_probe_starts_no_trace(void)
{
    struct gdrx_open_params params;
    gdrx_backend_t found = GDRX_BACKEND_AUTO;
    gdrx_pin_t pin;
    gdrx_t g;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    NVT_REQUIRE(nvrm_emu_set_versions("999.12.01", "999.12.01") == 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -ENOTSUP);
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), 0);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_NVRM);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
    CU_ASSERT_EQUAL(nvt_stats().version_checks, before.version_checks + 1);
    CUdeviceptr between = tc_alloc(3 * MiB);
    NVT_REQUIRE(between != 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, between, 3 * MiB, 0, &pin), -ENOENT);
    tc_free(between);
    gdrx_close(g);
}

/* gdrx_probe without CUDA (GDRX_PROBE_FLAG_NO_CUDA) on nvrm: the sysfs
 * version's branch and a read-write /dev/nvidiactl decide; the driver sees
 * nothing (no open of the control device, no RM call), and libcuda is not
 * loaded by it. */
static void test_probe_no_cuda(void)
{
    struct gdrx_open_params params;
    gdrx_backend_t found = GDRX_BACKEND_AUTO;
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    struct nvrm_emu_stats before = nvt_stats();

    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    params.flags = GDRX_PROBE_FLAG_NO_CUDA;
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), 0);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_NVRM);
    CU_ASSERT_EQUAL(nvt_stats().ctl_opens, before.ctl_opens);
    CU_ASSERT_EQUAL(nvt_stats().version_checks, before.version_checks);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
    if (cuda)
        dlclose(cuda);
    else
        CU_ASSERT_PTR_NULL(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD));

    /* sysfs names another branch (the RM would say the same) */
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "570.86.10") == 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -ENOTSUP);
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    CU_ASSERT_EQUAL(nvrm_emu_fail("open:/sys/module/nvidia/version", -ENOENT, 1), 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -ENODEV);
    CU_ASSERT_EQUAL(nvrm_emu_fail("access:/dev/nvidiactl", -ENOENT, 1), 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -ENODEV);
    CU_ASSERT_EQUAL(nvrm_emu_fail("access:/dev/nvidiactl", -EACCES, 1), 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -EACCES);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), 0);

    /* no such flag for gdrx_open */
    gdrx_t g;
    CU_ASSERT_EQUAL(gdrx_open(&params, &g), -EINVAL);
}

/* libgdrx, then libcuda, in a fresh process (both dlopen'ed). */
static void test_cuda_late_process(void)
{
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "cuda-late"), 0);
}

/* libgdrx loaded after CUDA allocated (a plugin loading it late): that
 * memory needs GDRX_NVRM_IPC=1 (the IPC handle's words, including the
 * offset word of a sub-allocation); memory made after the load does not. */
static void test_gdrx_late_process(void)
{
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "gdrx-late"), 0);
}

const struct gdrx_test_case nvrm_load_cases[] = {
    GDRX_TEST_CASE(test_trace_starts_at_open),
    GDRX_TEST_CASE(test_no_trace_on_unvalidated_driver),
    GDRX_TEST_CASE(test_probe_starts_no_trace),
    GDRX_TEST_CASE(test_probe_no_cuda),
    GDRX_TEST_CASE(test_cuda_late_process),
    GDRX_TEST_CASE(test_gdrx_late_process),
    GDRX_TEST_END,
};
