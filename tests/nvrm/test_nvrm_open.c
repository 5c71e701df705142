/*
 * test_nvrm_open.c - opening the nvrm backend: the driver version policy,
 * the STRICT check, our own RM client, and what happens without a driver.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvrm_test.h"

/* The validated branch: the kernel's STRICT check passes, our client
 * exists, and the driver version is reported. */
static void test_open_validated_driver(void)
{
    gdrx_t g;
    uint64_t v = 0;

    if (nvt_setup(0, 0))
        return;
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(nvt_open(&g) == 0);
    struct nvrm_emu_stats open = nvt_stats();
    CU_ASSERT_EQUAL(open.version_checks, before.version_checks + 1);
    CU_ASSERT_EQUAL(open.ctl_opens, before.ctl_opens + 1);
    CU_ASSERT_EQUAL(open.clients, before.clients + 1);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &v), 0);
    CU_ASSERT_EQUAL(v, GDRX_BACKEND_NVRM);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_DRIVER_VERSION, &v), 0);
    CU_ASSERT_EQUAL(v, nvt_version_code());
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
}

/* Without GDRX_BACKEND, AUTO takes nvrm when there is no gdrdrv. */
static void test_open_auto_picks_nvrm(void)
{
    gdrx_t g;
    uint64_t v = 0;

    if (nvt_setup(0, 0))
        return;
    unsetenv("GDRX_BACKEND");
    NVT_REQUIRE(gdrx_open(NULL, &g) == 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &v), 0);
    CU_ASSERT_EQUAL(v, GDRX_BACKEND_NVRM);
    gdrx_close(g);
}

/* Open (after `inject`, if any) and return gdrx_open's result and what it
 * logged; a refused open makes no RM client. */
static int open_logged(void (*inject)(void), char **log)
{
    gdrx_t g;

    if (nvt_setup(0, 0))
        return -1;
    setenv("GDRX_LOG_LEVEL", "1", 1);
    struct nvrm_emu_stats before = nvt_stats();
    if (inject)
        inject();
    int tok = nvt_capture_begin();
    int rc = nvt_open(&g);
    *log = nvt_capture_end(tok);
    if (rc == 0)
        gdrx_close(g);
    /* Refused before any client was made. */
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
    return rc;
}

/* Open with the fake driver reporting `kernel` and the sysfs file saying
 * `sysfs`. */
static int open_with_versions(const char *kernel, const char *sysfs, char **log)
{
    CU_ASSERT_EQUAL(nvrm_emu_set_versions(kernel, sysfs), 0);
    return open_logged(NULL, log);
}

/* A branch nvrm_abi.h was not validated for is refused by name, even
 * though the kernel itself would accept the version. */
static void test_unknown_branch_refused(void)
{
    char *log = NULL;

    CU_ASSERT_EQUAL(open_with_versions("999.12.01", "999.12.01", &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "999.12.01"));
    free(log);
}

/* sysfs says 580 but the RM answering on /dev/nvidiactl is of another
 * branch: its answer decides, and the log names it. */
static void test_rm_version_decides(void)
{
    char *log = NULL;

    CU_ASSERT_EQUAL(open_with_versions("999.12.01", "580.159.04", &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "999.12.01"));
    free(log);
}

/* A stale sysfs string does not refuse a validated RM; the client
 * registers under the RM's own version (one STRICT check that passes). */
static void test_rm_version_registered(void)
{
    gdrx_t g;
    uint64_t v = 0;

    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), "999.1.2") == 0);
    if (nvt_setup(0, 0))
        return;
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(nvt_open(&g), 0);
    CU_ASSERT_EQUAL(nvt_stats().version_checks, before.version_checks + 1);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_DRIVER_VERSION, &v), 0);
    CU_ASSERT_EQUAL(v, nvt_version_code());
    gdrx_close(g);
    NVT_REQUIRE(nvrm_emu_set_versions(nvt_version(), nvt_version()) == 0);
}

/* Faults for the version checks of the next open. */
static void refuse_strict(void)
{
    CU_ASSERT_EQUAL(nvrm_emu_fail("version", 1, 2), 0); /* QUERY passes, STRICT refused */
}

static void fail_query(void)
{
    CU_ASSERT_EQUAL(nvrm_emu_fail("version", -EIO, 1), 0);
}

/* The kernel refuses the STRICT registration, or cannot say its version:
 * a clean -ENOTSUP and no client. */
static void test_version_check_refused(void)
{
    char *log = NULL;

    CU_ASSERT_EQUAL(open_logged(refuse_strict, &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "refused"));
    free(log);
    CU_ASSERT_EQUAL(open_logged(fail_query, &log), -ENOTSUP);
    CU_ASSERT_PTR_NOT_NULL(log && strstr(log, "did not report"));
    free(log);
}

/* No NVIDIA driver: the version file or the control device is missing. */
static void test_no_driver(void)
{
    gdrx_t g;

    if (nvt_setup(0, 0))
        return;
    CU_ASSERT_EQUAL(nvrm_emu_fail("open:/sys/module/nvidia/version", -ENOENT, 1), 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -ENODEV);
    CU_ASSERT_EQUAL(nvrm_emu_fail("open:/dev/nvidiactl", -ENOENT, 1), 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -ENODEV);
    CU_ASSERT_EQUAL(nvrm_emu_fail("open:/dev/nvidiactl", -EACCES, 1), 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -EACCES);
    /* And the next open works. */
    NVT_REQUIRE(nvt_open(&g) == 0);
    gdrx_close(g);
}

/* The RM refuses our client: the RM status becomes an errno. */
static void test_client_alloc_refused(void)
{
    gdrx_t g;

    if (nvt_setup(0, 0))
        return;
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(nvrm_emu_fail("alloc:0x41", 0x1A /* INSUFFICIENT_RESOURCES */, 1), 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -ENOSPC);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
}

/* Two contexts share one RM client; it goes with the last close. */
static void test_contexts_share_client(void)
{
    gdrx_t a, b;

    if (nvt_setup(0, 0))
        return;
    struct nvrm_emu_stats before = nvt_stats();
    NVT_REQUIRE(nvt_open(&a) == 0);
    NVT_REQUIRE(nvt_open(&b) == 0);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients + 1);
    CU_ASSERT_EQUAL(gdrx_close(a), 0);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients + 1);
    CU_ASSERT_EQUAL(gdrx_close(b), 0);
    CU_ASSERT_EQUAL(nvt_stats().clients, before.clients);
}

const struct gdrx_test_case nvrm_open_cases[] = {
    GDRX_TEST_CASE(test_open_validated_driver),
    GDRX_TEST_CASE(test_open_auto_picks_nvrm),
    GDRX_TEST_CASE(test_unknown_branch_refused),
    GDRX_TEST_CASE(test_rm_version_decides),
    GDRX_TEST_CASE(test_rm_version_registered),
    GDRX_TEST_CASE(test_version_check_refused),
    GDRX_TEST_CASE(test_no_driver),
    GDRX_TEST_CASE(test_client_alloc_refused),
    GDRX_TEST_CASE(test_contexts_share_client),
    GDRX_TEST_END,
};
