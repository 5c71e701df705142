/*
 * uct_gdrx_share.c - one warning where the GPU is shared by several
 * processes without MPS.
 *
 * Without MPS, the processes' contexts on one GPU take turns: a copy-engine
 * transfer of one process (cuda_copy, cuda_ipc, gdrx's own from
 * UCX_GDRX_DMA_THRESH) waits for its time slice, about 150 us on an H100 or
 * H200 however small the message (docs/ucx-flavours.md).  UCX's choices of
 * transport and protocol assume no such wait, so a job with two ranks on one
 * GPU pays it on every size UCX gives the copy engine, with or without gdrx;
 * no setting of gdrx's own changes that.  What helps is MPS, or keeping the
 * sizes in question off the copy engine (see the message).  Users are told
 * once, by the process a launcher names local rank 0 (or by each process
 * where no launcher says), at gdrx's first copy of GPU memory: by then the
 * process has its context on that GPU, and a peer that shares it usually
 * has too.  Not at the first pin: UCP 1.22 registers one byte of device
 * memory of its own at start, in jobs that move no GPU data too.
 *
 * The number of processes comes from NVML (processes with a compute
 * context on this GPU), MPS from the driver (CU_DEVICE_ATTRIBUTE_MPS_ENABLED,
 * CUDA 12.4 and later); where either cannot be told, nothing is said.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_share.h"
#include "uct_gdrx_cuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucs/debug/log.h>


/* CUDA and NVML ABI values used here (stable). */
#define UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID    33
#define UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define UCT_GDRX_CU_DEVICE_ATTRIBUTE_MPS_ENABLED   133
#define UCT_GDRX_NVML_SUCCESS                      0
#define UCT_GDRX_NVML_ERROR_INSUFFICIENT_SIZE      7


int uct_gdrx_share_checked;


/* The launchers' local rank (Open MPI, MPICH/Hydra, MVAPICH2, Slurm, PALS),
 * or -1 where none says. */
static long uct_gdrx_share_local_rank(void)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
        "SLURM_LOCALID", "PALS_LOCAL_RANKID"
    };
    const char *value;
    char *end;
    long rank;
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); ++i) {
        value = getenv(vars[i]);
        if ((value != NULL) && (*value != '\0')) {
            rank = strtol(value, &end, 10);
            if ((*end == '\0') && (rank >= 0)) {
                return rank;
            }
        }
    }
    return -1;
}

/* The GPU's PCI address as NVML takes it, or -1. */
static int uct_gdrx_share_bus_id(const uct_gdrx_cuda_api_t *api, int dev,
                                 char *bus_id, size_t size)
{
    int domain, bus, device;

    if ((api->device_get_attribute(&domain, UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
                                   dev) != UCT_GDRX_CUDA_SUCCESS) ||
        (api->device_get_attribute(&bus, UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                   dev) != UCT_GDRX_CUDA_SUCCESS) ||
        (api->device_get_attribute(&device, UCT_GDRX_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
                                   dev) != UCT_GDRX_CUDA_SUCCESS)) {
        return -1;
    }
    snprintf(bus_id, size, "%08x:%02x:%02x.0", (unsigned)domain, (unsigned)bus,
             (unsigned)device);
    return 0;
}

/* Processes with a compute context on the GPU at bus_id (NVML), or -1. */
static int uct_gdrx_share_process_count(const char *bus_id)
{
    int (*init)(void), (*shutdown)(void);
    int (*by_bus_id)(const char *bus_id, void **dev);
    int (*processes)(void *dev, unsigned *count, void *infos);
    unsigned count = 0;
    void *handle, *dev;
    int ret, result = -1;

    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        return -1;
    }
    *(void**)&init      = dlsym(handle, "nvmlInit_v2");
    *(void**)&shutdown  = dlsym(handle, "nvmlShutdown");
    *(void**)&by_bus_id = dlsym(handle, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void**)&processes = dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v3");
    if ((init != NULL) && (shutdown != NULL) && (by_bus_id != NULL) &&
        (processes != NULL) && (init() == UCT_GDRX_NVML_SUCCESS)) {
        if (by_bus_id(bus_id, &dev) == UCT_GDRX_NVML_SUCCESS) {
            /* no room given: the answer is the count */
            ret = processes(dev, &count, NULL);
            if ((ret == UCT_GDRX_NVML_SUCCESS) ||
                (ret == UCT_GDRX_NVML_ERROR_INSUFFICIENT_SIZE)) {
                result = (int)count;
            }
        }
        shutdown();
    }
    dlclose(handle);
    return result;
}

static void uct_gdrx_share_check_gpu(uint64_t dptr)
{
    const uct_gdrx_cuda_api_t *api = uct_gdrx_cuda_api();
    int attr = UCT_GDRX_CU_POINTER_ATTR_DEVICE_ORDINAL;
    int dev  = -1;
    void *data = &dev;
    char bus_id[32];
    int mps, procs;
    long rank;

    if ((api == NULL) ||
        (api->pointer_get_attributes(1, &attr, &data, dptr) != UCT_GDRX_CUDA_SUCCESS) ||
        (dev < 0) ||
        (api->device_get_attribute(&mps, UCT_GDRX_CU_DEVICE_ATTRIBUTE_MPS_ENABLED,
                                   dev) != UCT_GDRX_CUDA_SUCCESS) ||
        (uct_gdrx_share_bus_id(api, dev, bus_id, sizeof(bus_id)) != 0)) {
        ucs_diag("gdrx: whether the GPU of 0x%" PRIx64 " is shared without MPS "
                 "is unknown (a driver without the MPS attribute?)", dptr);
        return;
    }
    if (mps) {
        return;
    }
    procs = uct_gdrx_share_process_count(bus_id);
    if (procs < 2) {
        if (procs < 0) {
            ucs_diag("gdrx: NVML cannot tell how many processes use GPU %s", bus_id);
        }
        return;
    }

    rank = uct_gdrx_share_local_rank();
    ucs_log((rank > 0) ? UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_WARN,
            "gdrx: GPU %s is shared by %d processes without MPS: each "
            "copy-engine transfer (cuda_copy, cuda_ipc, gdrx's from "
            "UCX_GDRX_DMA_THRESH) waits ~150 us for a time slice; start MPS "
            "(nvidia-cuda-mps-control -d) or see `gdrx-info` for the settings "
            "that avoid it", bus_id, procs);
}

void uct_gdrx_share_check_first(uint64_t dptr)
{
    if (!__atomic_exchange_n(&uct_gdrx_share_checked, 1, __ATOMIC_RELAXED)) {
        uct_gdrx_share_check_gpu(dptr);
    }
}
