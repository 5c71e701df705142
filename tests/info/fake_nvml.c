/*
 * fake_nvml.c - a test double of libnvidia-ml.so.1 with the four calls
 * gdrx-info makes, and the process count the UCX transport asks for: every
 * PCI bus id is a GPU with an 80 GiB BAR1, 1.5 GiB of it in use, and
 * FAKE_NVML_PROCS (default 0) processes with a compute context on it.
 * FAKE_NVML_FAIL=1 makes nvmlInit_v2 fail.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>

struct fake_nvml_bar1 {
    unsigned long long total, free, used;
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev);
int nvmlDeviceGetBAR1MemoryInfo(void *dev, struct fake_nvml_bar1 *out);
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, void *infos);

static int device;

int nvmlInit_v2(void)
{
    const char *fail = getenv("FAKE_NVML_FAIL");
    return fail && *fail == '1' ? 999 /* NVML_ERROR_UNKNOWN */ : 0;
}

int nvmlShutdown(void)
{
    return 0;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
    if (!bus || !dev)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = &device;
    return 0;
}

int nvmlDeviceGetBAR1MemoryInfo(void *dev, struct fake_nvml_bar1 *out)
{
    if (dev != &device || !out)
        return 2;
    out->total = 80ull << 30;
    out->used = 3ull << 29;
    out->free = out->total - out->used;
    return 0;
}

/* As NVML: with room for fewer entries than there are processes,
 * NVML_ERROR_INSUFFICIENT_SIZE and the count needed (callers that only
 * count pass 0 entries). */
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, void *infos)
{
    const char *env = getenv("FAKE_NVML_PROCS");
    unsigned n = env ? (unsigned)strtoul(env, NULL, 10) : 0;

    if (dev != &device || !count || (*count && !infos))
        return 2;
    if (*count < n) {
        *count = n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    *count = n;
    return 0; /* entries left unfilled: no caller reads them */
}
