/*
 * test_sim.c - the simulated GPU's own suite: shared helpers and main.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every case runs in a forked child (the harness does it), so cases set
 * the sim's global state freely.
 */
#include "test_sim.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void sim_test_setup_device(int dev)
{
    CUcontext ctx = NULL;
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

void sim_test_setup(void)
{
    sim_test_setup_device(0);
}

CUdeviceptr sim_test_alloc(size_t size)
{
    CUdeviceptr p = 0;
    CU_ASSERT_FATAL(cuMemAlloc(&p, size) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(p != 0);
    return p;
}

void sim_test_fill(void *buf, size_t len, uint64_t seed)
{
    uint64_t st = seed;
    unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)gdrx_test_rand(&st);
}

int sim_test_check(const void *buf, size_t len, uint64_t seed)
{
    uint64_t st = seed;
    const unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        if (b[i] != (unsigned char)gdrx_test_rand(&st))
            return 0;
    return 1;
}

/* "simcu-obj-<id> " followed by " (deleted)" in both /proc listings. */
static void object_tag(uint64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "simcu-obj-%llu ", (unsigned long long)id);
}

int sim_test_fd_held(uint64_t object_id)
{
    char tag[64], path[300], target[512];
    int held = 0;
    object_tag(object_id, tag, sizeof(tag));
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strstr(target, tag))
            held = 1;
    }
    closedir(d);
    return held;
}

int sim_test_mapping_held(uint64_t object_id)
{
    char tag[64], line[1024];
    int held = 0;
    object_tag(object_id, tag, sizeof(tag));
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, tag))
            held = 1;
    fclose(f);
    return held;
}

static void read_byte(void *arg)
{
    volatile const char *p = arg;
    (void)*p;
}

static void write_byte(void *arg)
{
    volatile char *p = arg;
    *p = 1;
}

int sim_test_read_faults(uint64_t addr)
{
    return gdrx_test_signal_of(read_byte, (void *)(uintptr_t)addr) == SIGSEGV;
}

int sim_test_write_faults(uint64_t addr)
{
    return gdrx_test_signal_of(write_byte, (void *)(uintptr_t)addr) == SIGSEGV;
}

int main(int argc, char **argv)
{
    static const struct gdrx_test_suite suites[] = {
        { "sim/memory", NULL, NULL, sim_memory_cases },
        { "sim/api", NULL, NULL, sim_api_cases },
        { "sim/context", NULL, NULL, sim_context_cases },
        { "sim/vmm", NULL, NULL, sim_vmm_cases },
        { "sim/stream", NULL, NULL, sim_stream_cases },
        { "sim/cudart", NULL, NULL, sim_cudart_cases },
        { "sim/host", NULL, NULL, sim_host_cases },
        { "sim/pointer", NULL, NULL, sim_pointer_cases },
        GDRX_SUITE_END,
    };
    return gdrx_test_main(argc, argv, suites);
}
