/*
 * info_gpus.c - every GPU CUDA sees: name, PCI address, and its BAR1 (the
 * window gdrx maps through): size and use from NVML when libnvidia-ml is
 * there, else the size from the PCI resource in sysfs and the use unknown;
 * and how many processes have a compute context on it (NVML).
 *
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "tool_cuda.h"

/* The NVML calls used, declared here so that building needs no nvml.h;
 * these entry points and the struct are NVML's stable ABI. */
struct info_nvml_bar1 {
    unsigned long long total, free, used;
};
struct info_nvml {
    void *handle;
    int (*Init)(void);
    int (*Shutdown)(void);
    int (*ByBusId)(const char *bus, void **dev);
    int (*Bar1)(void *dev, struct info_nvml_bar1 *out);
    /* optional (NVML of driver 510 and later) */
    int (*Procs)(void *dev, unsigned *count, void *infos);
};

static int nvml_load(struct info_nvml *n)
{
    memset(n, 0, sizeof(*n));
    n->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->handle)
        return -1;
    void *fns[4] = { dlsym(n->handle, "nvmlInit_v2"), dlsym(n->handle, "nvmlShutdown"),
                     dlsym(n->handle, "nvmlDeviceGetHandleByPciBusId_v2"),
                     dlsym(n->handle, "nvmlDeviceGetBAR1MemoryInfo") };
    for (int i = 0; i < 4; i++) {
        if (!fns[i]) {
            dlclose(n->handle);
            n->handle = NULL;
            return -1;
        }
    }
    /* POSIX: function pointers round-trip through void * */
    memcpy(&n->Init, &fns[0], sizeof(fns[0]));
    memcpy(&n->Shutdown, &fns[1], sizeof(fns[1]));
    memcpy(&n->ByBusId, &fns[2], sizeof(fns[2]));
    memcpy(&n->Bar1, &fns[3], sizeof(fns[3]));
    void *procs = dlsym(n->handle, "nvmlDeviceGetComputeRunningProcesses_v3");
    memcpy(&n->Procs, &procs, sizeof(procs));
    if (n->Init() != 0) {
        dlclose(n->handle);
        n->handle = NULL;
        return -1;
    }
    return 0;
}

/* Shut NVML down but keep it loaded: what its constructors allocated stays
 * reachable (no false leak reports under LeakSanitizer). */
static void nvml_unload(struct info_nvml *n)
{
    if (n->handle)
        n->Shutdown();
}

/* "80 GiB", "256 MiB": sizes are powers of two or round MiB. */
static void human(unsigned long long bytes, char *buf, size_t len)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
        snprintf(buf, len, "%llu GiB", bytes >> 30);
    else if (bytes >= (1ull << 30))
        snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ull << 30));
    else
        snprintf(buf, len, "%.1f MiB", (double)bytes / (double)(1ull << 20));
}

/* BAR1 size from sysfs: line 1 of `resource` is "start end flags" of BAR1
 * on NVIDIA GPUs (BAR0 is 32-bit; BAR1 is the 64-bit one at index 1).  Only
 * for an NVIDIA function, so that a simulated GPU's made-up address never
 * reports another device's BAR. */
static int bar1_sysfs(const char *bus, unsigned long long *size)
{
    char path[128], buf[1024];
    unsigned long long start, end, flags;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", bus);
    if (info_read_line(path, buf, sizeof(buf)) != 0 || strcmp(buf, "0x10de") != 0)
        return -1;
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bus);
    if (info_read(path, buf, sizeof(buf)) < 0)
        return -1;
    char *line = strchr(buf, '\n');
    if (!line || sscanf(line + 1, "%llx %llx %llx", &start, &end, &flags) != 3 || end <= start)
        return -1;
    *size = end - start + 1;
    return 0;
}

static void bar1(struct info_report *r, int i, const char *bus, struct info_nvml *nvml)
{
    struct info_nvml_bar1 b;
    void *dev;
    char total[32], used[32], lower[64];
    unsigned long long size;

    if (nvml->handle && nvml->ByBusId(bus, &dev) == 0 && nvml->Bar1(dev, &b) == 0) {
        human(b.total, total, sizeof(total));
        human(b.used, used, sizeof(used));
        info_add(r, "gpus", i, "bar1_total", "BAR1", "%s, %s in use (NVML)", total, used);
        info_add(r, "gpus", i, "bar1_total_bytes", NULL, "%llu", b.total);
        info_add(r, "gpus", i, "bar1_used_bytes", NULL, "%llu", b.used);
        return;
    }
    /* sysfs names functions in lower case, CUDA in upper */
    snprintf(lower, sizeof(lower), "%s", bus);
    for (char *p = lower; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (bar1_sysfs(lower, &size) == 0) {
        human(size, total, sizeof(total));
        info_add(r, "gpus", i, "bar1_total", "BAR1", "%s (PCI resource), use unknown "
                 "(no libnvidia-ml.so.1)", total);
        info_add(r, "gpus", i, "bar1_total_bytes", NULL, "%llu", size);
    } else {
        info_add(r, "gpus", i, "bar1_total", "BAR1", "unknown (no libnvidia-ml.so.1 and no "
                 "NVIDIA PCI function %s in sysfs)", lower);
    }
}

/* Processes with a compute context on the GPU (NVML: no room given, the
 * answer is the count; 7 is NVML_ERROR_INSUFFICIENT_SIZE). */
/* Coherent or PCIe, told as libgdrx's dmabuf backend and gdrcopy tell it:
 * the driver says pageable memory access uses the host's page tables on
 * a GPU the CPU reaches coherently (Grace Hopper, NVLink-C2C). */
static void gpu_link(struct info_report *r, int i, const struct tool_cuda *cu, CUdevice dev)
{
    int coherent = 0;

    if (cu->DeviceGetAttribute(&coherent,
                               CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                               dev) != CUDA_SUCCESS)
        coherent = 0;
    if (coherent)
        info_add(r, "gpus", i, "link", "link", "coherent (NVLink-C2C): mapped cached where "
                 "the backend can (its mapping row says), copied with memcpy");
    else
        info_add(r, "gpus", i, "link", "link", "PCIe: mapped write-combined through BAR1");
}

static void processes(struct info_report *r, int i, const char *bus, struct info_nvml *nvml,
                      struct info_host *h)
{
    unsigned count = 0;
    void *dev;
    int rc;

    if (!nvml->handle || !nvml->Procs || nvml->ByBusId(bus, &dev) != 0 ||
        ((rc = nvml->Procs(dev, &count, NULL)) != 0 && rc != 7)) {
        info_add_v(r, "gpus", i, "processes", "processes", "unknown (NVML cannot tell)");
        return;
    }
    info_add(r, "gpus", i, "processes", "processes", "%u with a CUDA context (NVML)", count);
    if ((int)count > h->busiest_procs) {
        h->busiest_procs = (int)count;
        h->busiest_gpu = i;
    }
}

void info_gpus(struct info_report *r, struct info_host *h)
{
    struct tool_cuda cu;
    struct info_nvml nvml;
    char err[256];
    int count = 0, ver = 0;

    h->busiest_gpu = -1;
    h->busiest_procs = 0;
    if (tool_cuda_load(&cu, err, sizeof(err)) != 0) {
        info_add(r, "library", -1, "cuda", "CUDA", "not found: %s", err);
        info_problem(r, "CUDA", "install the NVIDIA driver's user-space libraries (libcuda.so.1; "
                     "Debian: libcuda1), or put their directory on LD_LIBRARY_PATH",
                     "%s: every backend needs libcuda.so.1", err);
        return;
    }
    h->simulated = cu.simulated;
    CUresult rc = cu.Init(0);
    if (rc == CUDA_SUCCESS)
        rc = cu.DeviceGetCount(&count);
    cu.DriverGetVersion(&ver);
    info_add(r, "library", -1, "cuda", "CUDA", "driver API %d.%d%s", ver / 1000, ver % 1000 / 10,
             cu.simulated ? " (SIMULATED: tests/sim's libcuda.so.1)" : "");
    if (rc != CUDA_SUCCESS) {
        info_add(r, "library", -1, "gpus", "GPUs", "none: cuInit/cuDeviceGetCount: %s",
                 tool_cuda_error(&cu, rc));
        info_problem(r, "CUDA", "check `nvidia-smi`; load the driver (modprobe nvidia) and make "
                     "/dev/nvidia* accessible to this user",
                     "CUDA finds no usable GPU (%s)", tool_cuda_error(&cu, rc));
        return;
    }
    int have_nvml = nvml_load(&nvml) == 0;
    for (int i = 0; i < count; i++) {
        CUdevice dev;
        char name[256], bus[64];
        if (cu.DeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        tool_cuda_describe(&cu, dev, name, sizeof(name), bus, sizeof(bus));
        char label[16];
        snprintf(label, sizeof(label), "GPU %d", i);
        info_add(r, "gpus", i, "name", label, "%s%s", name, cu.simulated ? " (simulated)" : "");
        info_add(r, "gpus", i, "pci", "PCI", "%s", bus);
        gpu_link(r, i, &cu, dev);
        bar1(r, i, bus, &nvml);
        processes(r, i, bus, &nvml, h);
    }
    if (have_nvml)
        nvml_unload(&nvml);
    if (count == 0)
        info_add(r, "library", -1, "gpus", "GPUs", "none visible to CUDA");
}
