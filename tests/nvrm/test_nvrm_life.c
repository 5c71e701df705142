/*
 * test_nvrm_life.c - what happens around a mapping: CUDA frees the memory,
 * the process forks (and opens a context without CUDA), several GPUs, and GPU ordinals that are not the
 * device-file minors.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvrm_test.h"

struct probe {
    const volatile unsigned char *cpu;
    size_t                        len;
    const unsigned char          *forbidden;
};

/* In a child: exit 3 if the old mapping shows the new allocation's data. */
static void read_probe(void *arg)
{
    const struct probe *pr = arg;
    size_t same = 0;
    for (size_t i = 0; i < pr->len; i++)
        same += pr->cpu[i] == pr->forbidden[i];
    if (same == pr->len)
        _exit(3);
}

static int faults(const void *cpu, size_t len, uint32_t new_seed)
{
    unsigned char *want = malloc(len);
    tc_pattern(want, len, new_seed);
    struct probe pr = { cpu, len, want };
    int sig = gdrx_test_signal_of(read_probe, &pr);
    free(want);
    return sig == SIGSEGV;
}

/* A pinned, mapped 64 KiB buffer is freed while a neighbour keeps its RM
 * object alive; the same offset is allocated again and filled.  The old
 * mapping faults, the pin is stale, and a new pin shows the new data. */
static void test_stale_on_free(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    if (nvt_setup(0, 0))
        return;
    /* GPU-page aligned sub-allocations: no page is shared with the
     * neighbour, so the whole old window can go away. */
    NVT_REQUIRE(tsim.set_suballoc_alignment(64 * KiB) == 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr keep = tc_alloc(64 * KiB);
    CUdeviceptr p = tc_alloc(64 * KiB);
    NVT_REQUIRE(p - keep < 2 * MiB);
    void *cpu = nvt_pin_map(g, p, 64 * KiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p, 64 * KiB, 1));

    tc_free(p);
    CUdeviceptr q = tc_alloc(64 * KiB);
    CU_ASSERT_EQUAL(q, p);
    tc_fill(q, 64 * KiB, 77);
    CU_ASSERT(faults(cpu, 64 * KiB, 77));

    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 1);
    unsigned char byte;
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &byte, cpu, 1), -ESTALE);

    gdrx_pin_t pin2;
    void *cpu2 = nvt_pin_map(g, q, 64 * KiB, &pin2);
    NVT_REQUIRE(cpu2 != NULL);
    unsigned char *want = malloc(64 * KiB), *got = malloc(64 * KiB);
    tc_pattern(want, 64 * KiB, 77);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin2, got, cpu2, 64 * KiB), 0);
    CU_ASSERT_EQUAL(memcmp(want, got, 64 * KiB), 0);
    free(want);
    free(got);
    CU_ASSERT(faults(cpu, 64 * KiB, 77)); /* still */

    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin2), 0);
    tc_free(q);
    tc_free(keep);
    gdrx_close(g);
}

/* CUDA frees a whole RM object behind libgdrx's back (through no entry
 * point the hooks patch): the RM_FREE in libcuda's ioctls marks the pin
 * stale.  CUDA's own answer (the buffer id) is made to fail meanwhile, so
 * the trace alone can tell. */
static void test_stale_when_object_freed_unseen(void)
{
    struct nvt_mapped m;

    if (nvt_mapped_alloc(&m, 4 * MiB))
        return;
    tc_free_unseen(m.p);
    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(tsim.fail_next("cuPointerGetAttribute", CUDA_ERROR_UNKNOWN, 100), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(m.g, m.pin, &info), 0);
    tsim.fail_next("cuPointerGetAttribute", CUDA_SUCCESS, 0);
    CU_ASSERT_EQUAL(info.stale, 1);
    CU_ASSERT_PTR_NULL(info.cpu_ptr);
    CU_ASSERT(faults(m.cpu, 64 * KiB, 0));
    CU_ASSERT_EQUAL(gdrx_unpin(m.g, m.pin), 0);
    gdrx_close(m.g);
}

/* Open fds on /dev/nvidia<N> (the emulator names its fds like the kernel). */
static int gpu_fds(void)
{
    char path[64], target[64];
    int n = 0;
    for (int fd = 0; fd < 1024; fd++) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t k = readlink(path, target, sizeof(target) - 1);
        if (k <= 0)
            continue;
        target[k] = '\0';
        n += strncmp(target, "/dev/nvidia", 11) == 0 && target[11] >= '0' && target[11] <= '9';
    }
    return n;
}

/* fork: the child has no copy of the parent's mapping (MADV_DONTFORK),
 * cannot use the parent's client or pins through libgdrx (-ECHILD), and
 * cannot open a context of its own either: CUDA refuses a child of a
 * process that used it, so gdrx_open fails (-ENODEV) before the backend
 * does anything (no RM client, no version check, the inherited fd left
 * alone); the parent is unaffected. */
static void test_fork(void)
{
    struct nvt_mapped m;

    if (nvt_mapped_alloc(&m, 1 * MiB))
        return;
    gdrx_t g = m.g;
    gdrx_pin_t pin = m.pin;
    CUdeviceptr p = m.p;
    void *cpu = m.cpu;
    struct nvrm_emu_stats before = nvt_stats();

    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        int bad = 0;
        void *cpu2 = NULL;
        gdrx_pin_t pin2;
        gdrx_t g2;
        /* MADV_DONTFORK: the parent's BAR1 mapping is not the child's. */
        bad |= (msync(cpu, 4096, MS_ASYNC) == 0 || errno != ENOMEM) << 6;
        bad |= gdrx_unmap(g, pin) != -ECHILD;
        bad |= (gdrx_map(g, pin, &cpu2) != -ECHILD && gdrx_map(g, pin, &cpu2) != -EEXIST) << 1;
        bad |= (gdrx_pin(g, p, 4096, 0, &pin2) != -ECHILD) << 2;
        struct nvrm_emu_stats s = nvt_stats();
        bad |= (s.rm_maps != before.rm_maps || s.dups != before.dups) << 3;
        int fds = gpu_fds();
        bad |= (nvt_open(&g2) != -ENODEV) << 4;
        bad |= (fds != 1 || gpu_fds() != 1) << 7;
        s = nvt_stats();
        bad |= (s.clients != before.clients || s.version_checks != before.version_checks) << 5;
        _exit(bad);
    }
    int status = 0;
    NVT_REQUIRE(child > 0);
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fprintf(stderr, "    child's failed checks: %#x\n", WEXITSTATUS(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p, 1 * MiB, 4));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    tc_free(p);
    gdrx_close(g);
}

/* Total opens of /dev/nvidia<minor> since `before`. */
static long opens_of(const struct nvrm_emu_stats *before, int minor)
{
    return nvt_stats().dev_opens[minor] - before->dev_opens[minor];
}

static CUdeviceptr alloc_on(int dev, size_t len)
{
    CUdevice d;
    CUcontext ctx;
    if (tc.DeviceGet(&d, dev) != CUDA_SUCCESS || tc.DevicePrimaryCtxRetain(&ctx, d) != CUDA_SUCCESS ||
        tc.CtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 0;
    return tc_alloc(len);
}

/* Map memory of each GPU; expect /dev/nvidia<minors[i]> for GPU i. */
static void map_each_gpu(int ngpus, const int *minors)
{
    gdrx_t g;

    NVT_REQUIRE(nvt_open(&g) == 0);
    for (int dev = 0; dev < ngpus; dev++) {
        struct nvrm_emu_stats before = nvt_stats();
        gdrx_pin_t pin;
        CUdeviceptr p = alloc_on(dev, 2 * MiB);
        NVT_REQUIRE(p != 0);
        void *cpu = nvt_pin_map(g, p, 2 * MiB, &pin);
        NVT_REQUIRE(cpu != NULL);
        CU_ASSERT_EQUAL(opens_of(&before, minors[dev]), 1);
        CU_ASSERT(nvt_roundtrip(pin, cpu, p, 2 * MiB, 30 + (uint32_t)dev));
        struct gdrx_pin_info info;
        CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
        CU_ASSERT_EQUAL(info.device, dev);
        CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
        tc_free(p);
    }
    gdrx_close(g);
}

/* GDRX_OPEN_FLAG_NO_CUDA_FALLBACK in a fork child whose CUDA the driver
 * refuses: a context without CUDA on the backend the no-CUDA check finds
 * (nvrm: sysfs and /dev/nvidiactl, nothing opened), which answers its
 * attributes, refuses pins (-ENODEV) and made-up handles, opens no RM
 * client and closes; the flag is gdrx_open's only.  One bit per check that
 * failed. */
static int child_open_without_cuda(CUdeviceptr parent_ptr, struct nvrm_emu_stats before)
{
    struct gdrx_open_params params;
    gdrx_pin_t pin, made_up = { .id = 12345 };
    gdrx_t g;
    uint64_t v = 0;
    void *cpu = NULL;
    int bad = 0, bit = 0;

#define EXPECT(cond) (bad |= (cond) ? 0 : 1 << bit, bit++)
    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    params.flags = GDRX_PROBE_FLAG_NO_CUDA;
    EXPECT(gdrx_open(&params, &g) == -EINVAL);
    params.flags = GDRX_OPEN_FLAG_NO_CUDA_FALLBACK;
    EXPECT(gdrx_probe(&params, NULL) == -EINVAL);
    if (gdrx_open(&params, &g) != 0)
        return 0xff;
    EXPECT(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &v) == 0 && v == GDRX_BACKEND_NVRM);
    EXPECT(gdrx_get_attr(g, GDRX_ATTR_DEVICE_COUNT, &v) == 0 && v == 0);
    EXPECT(gdrx_get_attr(g, GDRX_ATTR_DRIVER_VERSION, &v) == -ENODEV &&
           gdrx_get_attr(g, GDRX_ATTR_CUDA_DRIVER_VERSION, &v) == -ENODEV);
    EXPECT(gdrx_pin(g, parent_ptr, 4096, 0, &pin) == -ENODEV &&
           gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &v) == 0 && v == 0);
    EXPECT(gdrx_map(g, made_up, &cpu) == -EINVAL && cpu == NULL && gdrx_unpin(g, made_up) == -EINVAL);
    struct nvrm_emu_stats s = nvt_stats();
    EXPECT(s.clients == before.clients && s.ctl_opens == before.ctl_opens &&
           gdrx_close(g) == 0 && gdrx_close(g) == -EBADF);
#undef EXPECT
    return bad;
}

static void test_fork_open_without_cuda(void)
{
    struct gdrx_open_params params;
    gdrx_pin_t pin;
    gdrx_t g;
    int status = 0;

    if (nvt_setup(1, 0))
        return;
    CUdeviceptr p = tc_alloc(1 * MiB);
    NVT_REQUIRE(p != 0);
    /* where CUDA works the flag changes nothing */
    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    params.flags = GDRX_OPEN_FLAG_NO_CUDA_FALLBACK;
    NVT_REQUIRE(gdrx_open(&params, &g) == 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, 0, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    struct nvrm_emu_stats before = nvt_stats();
    fflush(NULL);
    pid_t child = fork();
    if (child == 0)
        _exit(child_open_without_cuda(p, before));
    NVT_REQUIRE(child > 0);
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fprintf(stderr, "    child's failed checks: %#x\n", WEXITSTATUS(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

/* Two GPUs: the emulator numbers device files backwards (the sim's GPU 0
 * is /dev/nvidia1), so only a lookup by PCI bus id finds the right one. */
static void test_two_gpus(void)
{
    static const int minors[] = { 1, 0 };
    if (nvt_setup(2, 0))
        return;
    map_each_gpu(2, minors);
}

/* As with CUDA_VISIBLE_DEVICES=1,2 on a 3-GPU node: the RM sees three GPUs,
 * CUDA two, with ordinals unrelated to device instances and minors. */
static void test_visible_devices_remap(void)
{
    static const int minors[] = { 3, 5 };
    NVT_REQUIRE(nvrm_emu_set_gpus("0000:05:00.0=0,0000:19:00.0=3,0000:3b:00.0=5") == 0);
    if (nvt_setup(2, 0))
        return;
    map_each_gpu(2, minors);
}

const struct gdrx_test_case nvrm_life_cases[] = {
    GDRX_TEST_CASE(test_stale_on_free),
    GDRX_TEST_CASE(test_stale_when_object_freed_unseen),
    GDRX_TEST_CASE(test_fork),
    GDRX_TEST_CASE(test_fork_open_without_cuda),
    GDRX_TEST_CASE(test_two_gpus),
    GDRX_TEST_CASE(test_visible_devices_remap),
    GDRX_TEST_END,
};
