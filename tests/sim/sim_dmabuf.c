/*
 * sim_dmabuf.c - cuMemGetHandleForAddressRange: dma-buf exports of
 * simulated device memory, and whether the simulated GPU is coherent.
 *
 * SPDX-License-Identifier: MIT
 *
 * SIMCU_COHERENT=1 (read at each call) makes every simulated GPU one the
 * CPU reaches coherently, as a Grace Hopper GPU over NVLink-C2C: the
 * device attributes that say pageable memory access uses the host's page
 * tables, and pageable memory access, answer 1 (sim_device.c), as the
 * real driver's do there, and an export without
 * CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE stands for the coherent
 * path, one with it for the PCIe BAR.  The pages are the same memfd
 * either way (the CPU cannot tell cached from write-combined here), so
 * simcu_last_export() tells a test which one an export asked for.
 */
#include "sim_internal.h"
#include "sim_rm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sim_coherent(void)
{
    const char *v = getenv("SIMCU_COHERENT");

    return v && strcmp(v, "1") == 0;
}

/* The flags of the calling thread's last successful export; -1: none. */
static __thread long long last_export_flags = -1;

int simcu_last_export(unsigned long long *flags)
{
    if (!flags)
        return -EINVAL;
    if (last_export_flags < 0)
        return -ENOENT;
    *flags = (unsigned long long)last_export_flags;
    return 0;
}

/* A new open file description of the object's file, positioned at dptr's
 * byte (real dma-buf fds start at position 0 = range start). */
static CUresult export_range_locked(const struct sim_object *o, uint64_t dptr, int *fd_out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", o->bk.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? CUDA_ERROR_OUT_OF_MEMORY
                                                  : CUDA_ERROR_OPERATING_SYSTEM;
    if (lseek(fd, o->bk.offset + (off_t)(dptr - o->va), SEEK_SET) < 0) {
        close(fd);
        return CUDA_ERROR_OPERATING_SYSTEM;
    }
    *fd_out = fd;
    return CUDA_SUCCESS;
}

/* SIMCU_DMABUF_MMAP=refuse: the dma-buf handed out cannot be mapped by the
 * CPU (a read-write Unix socket, whose mmap fails with ENODEV), as with
 * NVIDIA drivers that do not allow mmap of their dma-bufs. */
static CUresult refuse_mmap(int *fd)
{
    const char *v = getenv("SIMCU_DMABUF_MMAP");
    int s[2];

    if (!v || strcmp(v, "refuse") != 0)
        return CUDA_SUCCESS;
    close(*fd);
    *fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    close(s[1]);
    *fd = s[0];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                               CUmemRangeHandleType handleType,
                                               unsigned long long flags)
{
    CUresult rc = sim_begin("cuMemGetHandleForAddressRange", SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
        (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) ||
        size == 0 || dptr % page || size % page)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    const struct sim_object *o = sim_find_object_locked(dptr);
    if (!o || size > o->size - (dptr - o->va))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = export_range_locked(o, dptr, (int *)handle);
    sim_unlock();
    if (rc == CUDA_SUCCESS && simcu_rm_range_exported(dptr, size) != 0) {
        close(*(int *)handle);
        *(int *)handle = -1;
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    if (rc == CUDA_SUCCESS)
        rc = refuse_mmap((int *)handle);
    if (rc == CUDA_SUCCESS)
        last_export_flags = (long long)flags;
    return rc;
}
