/*
 * fake_nvml.c - a test double of libnvidia-ml.so.1 with the four calls
 * gdrx-info makes: every PCI bus id is a GPU with an 80 GiB BAR1, 1.5 GiB
 * of it in use.  FAKE_NVML_FAIL=1 makes nvmlInit_v2 fail.
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
