/*
 * test_nvrm_errors.c - RM failures injected into the emulator become the
 * documented errno, change nothing, and leave nothing behind.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvrm_test.h"

struct fixture {
    gdrx_t      g;
    CUdeviceptr p;
    struct nvrm_emu_stats before;
};

static int fixture_up(struct fixture *f, size_t len)
{
    if (nvt_setup(0, 0))
        return -1;
    if (nvt_open(&f->g) != 0) {
        CU_FAIL("gdrx_open failed");
        return -1;
    }
    f->p = tc_alloc(len);
    f->before = nvt_stats();
    return f->p ? 0 : -1;
}

/* Nothing of ours is left in the emulator. */
static void assert_clean(const struct fixture *f)
{
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.memory_objects, f->before.memory_objects);
    CU_ASSERT_EQUAL(s.rm_maps_live, f->before.rm_maps_live);
    CU_ASSERT_EQUAL(s.cpu_maps_live, f->before.cpu_maps_live);
}

/* A pin that fails with `op` failing; afterwards the same pin works. */
static void pin_fails_then_works(const char *op, long value, int expect)
{
    struct fixture f;
    gdrx_pin_t pin;

    if (fixture_up(&f, 1 * MiB))
        return;
    CU_ASSERT_EQUAL(nvrm_emu_fail(op, value, 1), 0);
    CU_ASSERT_EQUAL(gdrx_pin(f.g, f.p, 1 * MiB, 0, &pin), expect);
    assert_clean(&f);
    void *cpu = nvt_pin_map(f.g, f.p, 1 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, f.p, 1 * MiB, 3));
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, pin), 0);
    assert_clean(&f);
    gdrx_close(f.g);
}

static void test_dup_refused(void)
{
    pin_fails_then_works("dup", NV_ERR_INSUFFICIENT_PERMISSIONS, -EPERM);
}

static void test_dup_ioctl_fails(void)
{
    pin_fails_then_works("dup", -EFAULT, -EFAULT);
}

static void test_addr_space_query_fails(void)
{
    pin_fails_then_works("control:0xd01", NV_ERR_NOT_SUPPORTED, -EOPNOTSUPP);
}

/* The GPU's RM device is set up at its first pin; on a branch checked
 * only against headers the open self-test makes that first pin, so the
 * failure refuses the open instead, leaving nothing behind. */
static void gpu_setup_fails(const char *op, long value, int expect)
{
    gdrx_t g;

    if (!nvt_branch_checked()) {
        pin_fails_then_works(op, value, expect);
        return;
    }
    if (nvt_setup(0, 0))
        return;
    struct nvrm_emu_stats before = nvt_stats();
    CU_ASSERT_EQUAL(nvrm_emu_fail(op, value, 1), 0);
    CU_ASSERT_EQUAL(nvt_open(&g), -ENOTSUP);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.clients, before.clients);
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live);
}

static void test_device_alloc_fails(void)
{
    gpu_setup_fails("alloc:0x80", NV_ERR_INVALID_ARGUMENT, -EINVAL);
}

static void test_gpu_lookup_fails(void)
{
    gpu_setup_fails("control:0x201", NV_ERR_NO_MEMORY, -ENOMEM);
}

static void test_proc_information_missing(void)
{
    /* The emulator's GPU table names the sim's first GPU 0000:19:00.0. */
    gpu_setup_fails("open:/proc/driver/nvidia/gpus/0000:19:00.0/information", -ENOENT,
                         -ENOENT);
}

/* The surface-size query is advisory: without it the trace's size is used. */
static void test_size_query_unsupported(void)
{
    struct fixture f;
    gdrx_pin_t pin;

    if (fixture_up(&f, 1 * MiB))
        return;
    CU_ASSERT_EQUAL(nvrm_emu_fail("control:0x410110", NV_ERR_NOT_SUPPORTED, 1), 0);
    void *cpu = nvt_pin_map(f.g, f.p, 1 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, f.p, 1 * MiB, 5));
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, pin), 0);
    assert_clean(&f);
    gdrx_close(f.g);
}

/* A map that fails at `op`; the pin stays usable and maps afterwards. */
static void map_fails_then_works(const char *op, long value, int expect)
{
    struct fixture f;
    gdrx_pin_t pin;
    void *cpu = NULL;

    if (fixture_up(&f, 2 * MiB))
        return;
    NVT_REQUIRE(gdrx_pin(f.g, f.p, 2 * MiB, 0, &pin) == 0);
    struct nvrm_emu_stats pinned = nvt_stats();
    CU_ASSERT_EQUAL(nvrm_emu_fail(op, value, 1), 0);
    CU_ASSERT_EQUAL(gdrx_map(f.g, pin, &cpu), expect);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, pinned.rm_maps_live);
    CU_ASSERT_EQUAL(s.cpu_maps_live, pinned.cpu_maps_live);
    CU_ASSERT_EQUAL(gdrx_map(f.g, pin, &cpu), 0);
    CU_ASSERT(nvt_roundtrip(pin, cpu, f.p, 2 * MiB, 6));
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, pin), 0);
    assert_clean(&f);
    gdrx_close(f.g);
}

static void test_map_out_of_bar1(void)
{
    map_fails_then_works("map", NV_ERR_INSUFFICIENT_RESOURCES, -ENOSPC);
}

static void test_map_no_memory(void)
{
    map_fails_then_works("map", NV_ERR_NO_MEMORY, -ENOMEM);
}

static void test_mmap_fails(void)
{
    map_fails_then_works("mmap", -ENOMEM, -ENOMEM);
}

static void test_device_file_refused(void)
{
    /* The sim's only GPU is /dev/nvidia0 in the emulator. */
    map_fails_then_works("open:/dev/nvidia0", -EACCES, -EACCES);
}

/* RM_UNMAP_MEMORY failing is logged; the unpin still completes. */
static void test_unmap_failure_tolerated(void)
{
    struct fixture f;
    gdrx_pin_t pin;

    if (fixture_up(&f, 1 * MiB))
        return;
    void *cpu = nvt_pin_map(f.g, f.p, 1 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT_EQUAL(nvrm_emu_fail("unmap", NV_ERR_INVALID_ARGUMENT, 1), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(f.g, pin), 0);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.cpu_maps_live, f.before.cpu_maps_live);
    /* The RM mapping went with our duplicate when it was freed. */
    CU_ASSERT_EQUAL(s.rm_maps_live, f.before.rm_maps_live);
    CU_ASSERT_EQUAL(s.memory_objects, f.before.memory_objects);
    gdrx_close(f.g);
}

const struct gdrx_test_case nvrm_error_cases[] = {
    GDRX_TEST_CASE(test_dup_refused),
    GDRX_TEST_CASE(test_dup_ioctl_fails),
    GDRX_TEST_CASE(test_addr_space_query_fails),
    GDRX_TEST_CASE(test_device_alloc_fails),
    GDRX_TEST_CASE(test_gpu_lookup_fails),
    GDRX_TEST_CASE(test_proc_information_missing),
    GDRX_TEST_CASE(test_size_query_unsupported),
    GDRX_TEST_CASE(test_map_out_of_bar1),
    GDRX_TEST_CASE(test_map_no_memory),
    GDRX_TEST_CASE(test_mmap_fails),
    GDRX_TEST_CASE(test_device_file_refused),
    GDRX_TEST_CASE(test_unmap_failure_tolerated),
    GDRX_TEST_END,
};
