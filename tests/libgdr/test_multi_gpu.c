/*
 * test_multi_gpu.c - two GPUs: every pin records the device its memory is
 * on, pins of both devices live in one context, the caller's current
 * context (of either device, or none) is left alone, staleness is per
 * allocation.  Under `make check` the simulated GPU is asked for two
 * devices (SIMCU_DEVICES=2); with fewer than two devices the suite says it
 * did not run.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcuda.h"

#define KiB 1024u

static CUcontext primary(int dev)
{
    CUdevice d;
    CUcontext c = NULL;

    if (tc.DeviceGet(&d, dev) != CUDA_SUCCESS || tc.DevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS)
        CU_FAIL("cannot retain a primary context");
    return c;
}

static CUdeviceptr alloc_on(int dev, size_t len)
{
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(dev)), CUDA_SUCCESS);
    return tc_alloc(len);
}

static void test_pins_on_both_devices(void)
{
    struct gdrx_pin_info info;
    void *cpu[2];
    gdrx_pin_t pin[2];
    CUdeviceptr p[2];
    unsigned char buf[5000], want[5000];

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    uint64_t n;
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_DEVICE_COUNT, &n), 0);
    CU_ASSERT(n >= 2);
    for (int d = 0; d < 2; d++) {
        p[d] = alloc_on(d, 100 * KiB);
        int ord = -1;
        CU_ASSERT_EQUAL(tc.PointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p[d]),
                        CUDA_SUCCESS);
        CU_ASSERT_EQUAL(ord, d);
    }
    /* the current context is device 0's while device 1's memory is pinned */
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(0)), CUDA_SUCCESS);
    for (int d = 0; d < 2; d++) {
        CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[d] + 10, 5000, 0, &pin[d]), 0);
        CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin[d], &cpu[d]), 0);
        CU_ASSERT_EQUAL(gdrx_pin_query(g, pin[d], &info), 0);
        CU_ASSERT_EQUAL(info.device, d);
        CU_ASSERT_PTR_EQUAL(info.cpu_ptr, cpu[d]);
    }
    CUcontext cur = NULL;
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(cur, primary(0));
    for (int d = 0; d < 2; d++) {
        tc_pattern(buf, sizeof(buf), (uint32_t)d + 10);
        CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin[d], cpu[d], buf, sizeof(buf)), 0);
    }
    for (int d = 0; d < 2; d++) {
        CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(d)), CUDA_SUCCESS);
        CU_ASSERT(tc_check(p[d] + 10, sizeof(buf), (uint32_t)d + 10));
        tc_fill(p[d] + 10, sizeof(buf), (uint32_t)d + 20);
    }
    for (int d = 0; d < 2; d++) {
        CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin[d], buf, cpu[d], sizeof(buf)), 0);
        tc_pattern(want, sizeof(want), (uint32_t)d + 20);
        CU_ASSERT_EQUAL(memcmp(buf, want, sizeof(buf)), 0);
    }
    /* a pointer into one device's mapping is not the other pin's */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin[1], cpu[0], buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    for (int d = 0; d < 2; d++) {
        CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(d)), CUDA_SUCCESS);
        tc_free(p[d]);
    }
}

static void test_device1_with_no_current_context(void)
{
    struct gdrx_pin_info info;
    gdrx_pin_t pin;
    void *cpu;

    if (tc_setup(0))
        return;
    CUdeviceptr p = alloc_on(1, 64 * KiB);
    tc_fill(p, 64 * KiB, 3);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(NULL), CUDA_SUCCESS);
    gdrx_t g = tc_open();
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, 64 * KiB, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.device, 1);
    unsigned char *buf = malloc(64 * KiB), *want = malloc(64 * KiB);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, buf, cpu, 64 * KiB), 0);
    tc_pattern(want, 64 * KiB, 3);
    CU_ASSERT_EQUAL(memcmp(buf, want, 64 * KiB), 0);
    CUcontext cur = (CUcontext)1;
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT_PTR_NULL(cur);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(1)), CUDA_SUCCESS);
    tc_free(p);
    free(buf);
    free(want);
}

/* Freeing device 1's buffer makes only its pin stale. */
static void test_stale_per_device(void)
{
    void *c0, *c1;
    gdrx_pin_t p0, p1;
    struct gdrx_pin_info info;
    char byte = 0;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = alloc_on(0, 8 * KiB), b = alloc_on(1, 8 * KiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 8 * KiB, 0, &p0), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, b, 8 * KiB, 0, &p1), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, p0, &c0), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, p1, &c1), 0);
    tc_free(b);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, p1, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 1);
    CU_ASSERT_EQUAL(info.device, 1);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, p0, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(p1, &byte, c1, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(p0, c0, &byte, 1), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(primary(0)), CUDA_SUCCESS);
    tc_free(a);
}

static const struct gdrx_test_case mgpu_cases[] = {
    GDRX_TEST_CASE(test_pins_on_both_devices),
    GDRX_TEST_CASE(test_device1_with_no_current_context),
    GDRX_TEST_CASE(test_stale_per_device),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite mgpu[] = {
    { "multi_gpu", NULL, NULL, mgpu_cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite none[] = { GDRX_SUITE_END };

/* Count devices in a child, so this process never initialises CUDA
 * before the cases fork. */
static int device_count(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        if (!tc.Init || tc.Init(0) != CUDA_SUCCESS || tc.DeviceGetCount(&n) != CUDA_SUCCESS)
            n = 0;
        _exit(n > 100 ? 100 : n);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return 0;
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    tc_default_backend();
    setenv("SIMCU_DEVICES", "2", 0); /* read by the simulated GPU's cuInit */
    tc_load();
    int n = device_count();
    if (n < 2) {
        char why[64];
        snprintf(why, sizeof(why), "%d CUDA device(s), needs 2", n);
        tc_report_skip("multi_gpu", why);
    }
    return gdrx_test_main(argc, argv, tc_suites(n >= 2 ? mgpu : none, NULL));
}
