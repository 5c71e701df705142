/*
 * test_nvrm_branch.c - driver branches checked only against their headers
 * (libgdr/src/nvrm/nvrm_layout.c): the open self-test that must pass
 * before the backend serves one, its refusal when the driver lays a
 * field out as another branch would, and the caller's CUDA context left as
 * it was.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_layout.h"
#include "nvrm_test.h"

/* A checked branch (535) whatever version the suite runs against. */
#define CHECKED_VERSION "535.288.01"

static int open_logged(gdrx_t *g, char **log)
{
    setenv("GDRX_LOG_LEVEL", "3", 1);
    int tok = nvt_capture_begin();
    int rc = nvt_open(g);
    *log = nvt_capture_end(tok);
    return rc;
}

/* The self-test runs once, pins and maps exactly one window of its own
 * and leaves nothing behind; the context then works. */
static void test_selftest_passes(void)
{
    gdrx_t g, g2;
    gdrx_pin_t pin;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions(CHECKED_VERSION, CHECKED_VERSION) == 0);
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(open_logged(&g, &log) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "open self-test passed"));
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.dups, before.dups + 1);
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 1);
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live);
    CU_ASSERT_EQUAL(s.memory_objects, before.memory_objects);
    CU_ASSERT_EQUAL(s.uvm_records, before.uvm_records);
    free(log);
    /* once per process */
    NVT_REQUIRE(open_logged(&g2, &log) == 0);
    CU_ASSERT_PTR_NULL(strstr(log, "self-test"));
    CU_ASSERT_EQUAL(nvt_stats().dups, s.dups);
    free(log);
    CUdeviceptr p = tc_alloc(4 * MiB);
    NVT_REQUIRE(p != 0);
    void *cpu = nvt_pin_map(g, p, 4 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p, 4 * MiB, 9));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    gdrx_close(g2);
    gdrx_close(g);
}

/* The driver (emulator and libcuda alike) lays UVM_MAP_EXTERNAL_ALLOCATION
 * out as 580 does while reporting 535, whose row says 32 GPUs: nvrm reads
 * hClient/hMemory from inside the per-GPU array.  The self-test must
 * refuse, naming the step, before anything is pinned or mapped, and the
 * refusal holds for the rest of the process. */
static void test_foreign_layout_refused(void)
{
    gdrx_t g;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions(CHECKED_VERSION, CHECKED_VERSION) == 0);
    setenv("NVRM_EMU_UVM_LAYOUT", "580.159.04", 1);
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(open_logged(&g, &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "failed the open self-test at step \"find (trace)\""));
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.dups, before.dups);
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live);
    CU_ASSERT_EQUAL(s.clients, before.clients);
    CU_ASSERT_EQUAL(s.memory_objects, before.memory_objects);
    free(log);
    CU_ASSERT_EQUAL(open_logged(&g, &log), -ENOTSUP);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps, before.rm_maps);
    free(log);
    unsetenv("NVRM_EMU_UVM_LAYOUT");
}

/* GDRX_NVRM_CHECKED=0 keeps to branches validated on hardware. */
static void test_checked_refused_on_request(void)
{
    gdrx_t g;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions(CHECKED_VERSION, CHECKED_VERSION) == 0);
    setenv("GDRX_NVRM_CHECKED", "0", 1);
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(open_logged(&g, &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "GDRX_NVRM_CHECKED=0"));
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
    free(log);
    unsetenv("GDRX_NVRM_CHECKED");
}

/* A branch validated on hardware runs no self-test. */
static void test_validated_runs_no_selftest(void)
{
    gdrx_t g;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(open_logged(&g, &log) == 0);
    CU_ASSERT_PTR_NULL(strstr(log, "self-test"));
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps, before.rm_maps);
    free(log);
    gdrx_close(g);
}

/* A 580 later than the one run on hardware proves itself (a layout may
 * change inside a branch, as 550's did: issue 43, defect 11). */
static void test_later_580_proves_itself(void)
{
    gdrx_t g;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions("580.211.01", "580.211.01") == 0);
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(open_logged(&g, &log) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "branch 580 (checked, headers 580.65.06 to 580.142): "
                                       "open self-test passed in"));
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups + 1);
    free(log);
    gdrx_close(g);
}

/* GDRX_NVRM_SELFTEST=1 runs it there too (its cost measured on the H200). */
static void test_selftest_forced_on_validated(void)
{
    gdrx_t g;
    char *log = NULL;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_versions("580.159.04", "580.159.04") == 0);
    setenv("GDRX_NVRM_SELFTEST", "1", 1);
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(open_logged(&g, &log) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "branch 580 (validated, headers 580.65.06 to 580.142): "
                                       "open self-test passed in"));
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups + 1);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps_live, before.rm_maps_live);
    free(log);
    gdrx_close(g);
    unsetenv("GDRX_NVRM_SELFTEST");
}

/* libcuda's function `name` (CU_FAIL and NULL if it has none). */
static void *cuda_fn(const char *name)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *f = lib ? dlsym(lib, name) : NULL;

    if (lib)
        dlclose(lib); /* tc_load's reference keeps it loaded */
    if (!f)
        CU_FAIL("libcuda lacks a context function");
    return f;
}

/* Open on a checked branch, so that the self-test runs in this call. */
static int open_with_selftest(gdrx_t *g)
{
    char *log = NULL;

    if (nvrm_emu_set_versions(CHECKED_VERSION, CHECKED_VERSION) != 0) {
        CU_FAIL("the emulator cannot report a checked branch");
        return -1;
    }
    int rc = open_logged(g, &log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "open self-test passed"));
    free(log);
    return rc;
}

/* The self-test pushes device 0's primary context for its own CUDA calls;
 * a thread that had none current must have none after gdrx_open (a
 * context left current would make its next CUDA call run, or allocate,
 * where it never asked). */
static void test_selftest_keeps_no_context(void)
{
    gdrx_t g;
    CUcontext cur = (CUcontext)1;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(tc.CtxSetCurrent(NULL) == CUDA_SUCCESS);
    NVT_REQUIRE(open_with_selftest(&g) == 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT_PTR_NULL(cur);
    gdrx_close(g);
}

/* A context of its own (cuCtxCreate, on top of the primary) stays current
 * through gdrx_open, and the thread's stack below it is unchanged: the
 * self-test pops exactly what it pushed. */
static void test_selftest_keeps_created_context(void)
{
    CUresult (*create)(CUcontext *, unsigned int, CUdevice) = NULL;
    CUresult (*pop)(CUcontext *) = NULL;
    CUresult (*destroy)(CUcontext) = NULL;
    CUcontext primary = NULL, mine = NULL, cur = NULL, popped = NULL;
    gdrx_t g;

    if (nvt_setup(0, 0))
        return;
    *(void **)&create = cuda_fn("cuCtxCreate_v2");
    *(void **)&pop = cuda_fn("cuCtxPopCurrent_v2");
    *(void **)&destroy = cuda_fn("cuCtxDestroy_v2");
    NVT_REQUIRE(create && pop && destroy);
    NVT_REQUIRE(tc.CtxGetCurrent(&primary) == CUDA_SUCCESS && primary);
    NVT_REQUIRE(create(&mine, 0, 0) == CUDA_SUCCESS && mine != primary);
    NVT_REQUIRE(open_with_selftest(&g) == 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(cur, mine);
    CU_ASSERT_EQUAL(pop(&popped), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(popped, mine);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(cur, primary);
    gdrx_close(g);
    CU_ASSERT_EQUAL(destroy(mine), CUDA_SUCCESS);
}

/* nvrm's table against the emulated driver's own UVM_MAP_EXTERNAL_ALLOCATION
 * layout (emu_layout.h, from the drivers' header declaration) at the
 * first and last tag each row was checked against: every field the trace
 * reads is where the driver puts it. */
static void test_uvm_map_rows_match_driver(void)
{
    for (size_t i = 0; i < nvrm_layout_count(); i++) {
        const struct nvrm_layout *l = nvrm_layout_at(i);
        const char *tags[] = { l->first_checked, l->last_checked };
        for (int t = 0; t < 2; t++) {
            const struct nvrm_uvm_map_shape *lib = l->uvm_map, *drv = emu_uvm_map_shape(tags[t]);
            if (nvrm_layout_for(tags[t]) != l)
                continue; /* a tag another row serves (550.40.07's) */
            int same = lib->max_gpus == drv->max_gpus && lib->size == drv->size &&
                       lib->count_off == drv->count_off && lib->fd_off == drv->fd_off &&
                       lib->h_client_off == drv->h_client_off &&
                       lib->h_memory_off == drv->h_memory_off && lib->status_off == drv->status_off;
            if (!same)
                fprintf(stderr, "    branch %u row, driver %s: UVM map layout differs\n",
                        l->branch, tags[t]);
            CU_ASSERT(same);
        }
    }
}

const struct gdrx_test_case nvrm_branch_cases[] = {
    GDRX_TEST_CASE(test_selftest_passes),
    GDRX_TEST_CASE(test_foreign_layout_refused),
    GDRX_TEST_CASE(test_checked_refused_on_request),
    GDRX_TEST_CASE(test_validated_runs_no_selftest),
    GDRX_TEST_CASE(test_later_580_proves_itself),
    GDRX_TEST_CASE(test_selftest_forced_on_validated),
    GDRX_TEST_CASE(test_selftest_keeps_no_context),
    GDRX_TEST_CASE(test_selftest_keeps_created_context),
    GDRX_TEST_CASE(test_uvm_map_rows_match_driver),
    GDRX_TEST_END,
};
