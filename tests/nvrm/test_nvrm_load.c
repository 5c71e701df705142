/*
 * test_nvrm_load.c - what the ioctl trace sees and how memory it never
 * saw is reached: the trace starts at the first nvrm gdrx_open (never at
 * libgdrx's load) and only where the driver version passed the backend's
 * checks; memory CUDA mapped before that is found through the dma-buf
 * export route (no node-wide side effect), and the GDRX_NVRM_IPC opt-in
 * stays as the fallback when CUDA refuses an export.
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
 * pins by default: one dma-buf export each, nothing shared node-wide.
 * Memory in an object CUDA maps after the open comes from the trace, with
 * no export.  A CUDA free of early memory revokes its pin. */
static void test_memory_before_open(void)
{
    gdrx_t g;
    gdrx_pin_t pin;
    char byte = 0;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    CUdeviceptr big = tc_alloc(3 * MiB);
    CUdeviceptr small = tc_alloc(8 * KiB); /* sub-allocated */
    NVT_REQUIRE(big && small);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr later = tc_alloc(3 * MiB);
    NVT_REQUIRE(later != 0);

    struct nvrm_emu_stats before = nvt_stats();
    void *cpu = nvt_pin_map(g, big, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, big, 3 * MiB, 7));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports + 1);
    cpu = nvt_pin_map(g, small + 100, 5000, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, small + 100, 5000, 8));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports + 2);

    struct nvrm_emu_stats mid = nvt_stats();
    cpu = nvt_pin_map(g, later, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, later, 3 * MiB, 9));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, mid.dmabuf_exports); /* the trace knew it */
    CU_ASSERT_EQUAL(nvt_stats().dups, mid.dups + 1);
    CU_ASSERT_EQUAL(nvt_stats().shares_all, before.shares_all); /* nothing node-wide */

    cpu = nvt_pin_map(g, big, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    tc_free(big);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &byte, cpu, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    tc_free(small);
    tc_free(later);
    gdrx_close(g);
}

/* CUDA refusing the export (a driver without dma-buf support): early
 * memory is refused with -ENOENT unless GDRX_NVRM_IPC=1, whose route then
 * pins it (sharing the object node-wide, which is why it is opt-in). */
static void test_export_refused(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    CUdeviceptr big = tc_alloc(3 * MiB);
    CUdeviceptr small = tc_alloc(8 * KiB);
    NVT_REQUIRE(big && small);
    NVT_REQUIRE(nvt_open(&g) == 0);
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(nvrm_emu_fail("export", NV_ERR_NOT_SUPPORTED, 4) == 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, big, 3 * MiB, 0, &pin), -ENOENT);
    CU_ASSERT_EQUAL(gdrx_pin(g, small + 100, 5000, 0, &pin), -ENOENT);

    setenv("GDRX_NVRM_IPC", "1", 1);
    void *cpu = nvt_pin_map(g, big, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, big, 3 * MiB, 7));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    cpu = nvt_pin_map(g, small + 100, 5000, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, small + 100, 5000, 8));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    unsetenv("GDRX_NVRM_IPC");
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports);
    CU_ASSERT_EQUAL(nvt_stats().shares_all, before.shares_all + 2);
    nvrm_emu_fail_clear();
    tc_free(big);
    tc_free(small);
    gdrx_close(g);
}

/* Memory mapped before gdrx_open whose second half the driver backs with
 * another RM object (the sim splits it): the export must prove the whole
 * pinned range, so a pin across the seam is refused, dups and maps
 * nothing, and is never served from the first object's later pages; a
 * pin inside either half maps that half's object. */
static void test_export_proves_whole_range(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    unsetenv("GDRX_NVRM_IPC");
    if (nvt_setup(0, 0))
        return;
    CUdeviceptr p = tc_alloc(4 * MiB);
    NVT_REQUIRE(p != 0);
    NVT_REQUIRE(nvt_sim_split(p + 2 * MiB) == 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4 * MiB, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p + 2 * MiB - 100, 200, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, p + MiB, 2 * MiB, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports + 3);
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps, before.rm_maps);

    void *cpu = nvt_pin_map(g, p + 100, 2 * MiB - 100, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p + 100, 2 * MiB - 100, 11));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    cpu = nvt_pin_map(g, p + 3 * MiB, MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p + 3 * MiB, MiB, 12));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups + 2);
    tc_free(p);
    gdrx_close(g);
    CU_ASSERT_EQUAL(nvt_stats().memory_objects, before.memory_objects - 2);
}

/* An open refused for the driver version installs no trace: memory made
 * after it stays unknown to the trace once a later open (validated
 * driver) succeeds, and is reached by export. */
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
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), nvt_version()) == 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr after = tc_alloc(3 * MiB);
    NVT_REQUIRE(after != 0);
    struct nvrm_emu_stats before = nvt_stats();
    void *cpu = nvt_pin_map(g, after, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, after, 3 * MiB, 5));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports);
    /* Unknown to the trace: reached by export. */
    cpu = nvt_pin_map(g, between, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, between, 3 * MiB, 6));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports + 1);
    tc_free(between);
    tc_free(after);
    gdrx_close(g);
}

/* gdrx_probe on nvrm: the driver's checks run (an unvalidated driver is
 * refused), an RM client is made and freed, and no trace starts: memory
 * made after the probe is unknown to a later open's trace (export). */
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
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), nvt_version()) == 0);
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), 0);
    CU_ASSERT_EQUAL(found, GDRX_BACKEND_NVRM);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
    CU_ASSERT_EQUAL(nvt_stats().version_checks, before.version_checks + 1);
    CUdeviceptr between = tc_alloc(3 * MiB);
    NVT_REQUIRE(between != 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    before = nvt_stats();
    void *cpu = nvt_pin_map(g, between, 3 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(nvt_stats().dmabuf_exports, before.dmabuf_exports + 1);
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
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), nvt_version()) == 0);
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
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), "999.86.10") == 0);
    CU_ASSERT_EQUAL(gdrx_probe(&params, &found), -ENOTSUP);
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), nvt_version()) == 0);
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
 * memory pins by export, a sub-allocation at its offset too. */
static void test_gdrx_late_process(void)
{
    CU_ASSERT_EQUAL(nvt_run_helper("nvrm_load_order", "gdrx-late"), 0);
}

const struct gdrx_test_case nvrm_load_cases[] = {
    GDRX_TEST_CASE(test_memory_before_open),
    GDRX_TEST_CASE(test_export_refused),
    GDRX_TEST_CASE(test_export_proves_whole_range),
    GDRX_TEST_CASE(test_no_trace_on_unvalidated_driver),
    GDRX_TEST_CASE(test_probe_starts_no_trace),
    GDRX_TEST_CASE(test_probe_no_cuda),
    GDRX_TEST_CASE(test_cuda_late_process),
    GDRX_TEST_CASE(test_gdrx_late_process),
    GDRX_TEST_END,
};
