/*
 * sim_ipc.c - CUDA IPC on the simulated GPU: cuIpcGetMemHandle,
 * cuIpcOpenMemHandle and cuIpcCloseMemHandle, across processes.
 *
 * SPDX-License-Identifier: MIT
 *
 * The 64-byte handle carries what the importer needs to reach the same
 * pages: the exporter's pid and the descriptor of the file that holds the
 * allocation's object (opened again through /proc/PID/fd, so the importer
 * holds the pages itself, as a CUDA importer keeps them alive after the
 * exporter's free), the object's file offset and size, and the
 * allocation's offset and size in it.  Where the RM emulator runs, the
 * words the real libcuda fills from its RM share are there too
 * (sim_rm.c); the sim's own words sit where that layout has none.
 *
 * An import is a mapping of the whole object at VA of the sim's choosing
 * (the handle's VMM machinery, sim_vmm.c), with one allocation: the
 * exported one, at the exporter's offset.  It belongs to no context here
 * (CUDA ties it to the importer's); cuMemFree refuses it, as CUDA does,
 * and cuIpcCloseMemHandle unmaps it.  Not modelled: opening a handle in
 * the process that made it (the sim allows it), handles of VMM memory.
 */
#include "sim_internal.h"
#include "sim_entry.h"
#include "sim_rm.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../libgdr/src/nvrm/nvrm_abi.h"

#define SIM_IPC_MAGIC     0x53494d49u /* "SIMI" */
#define W_PID             2
#define W_MAGIC           3
#define W_FD              5
#define W_OBJ_FILE_PAGES 11 /* the object's file offset, in 4 KiB pages */
#define W_DEVICE         14
#define W_OBJ_PAGES      15 /* the object's size, in 4 KiB pages */

_Static_assert(sizeof(((CUipcMemHandle *)0)->reserved) == 16 * sizeof(uint32_t),
               "a CUDA IPC handle is 64 bytes");

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    CUresult rc = sim_begin_out("cuIpcGetMemHandle", 0, handle);
    uint32_t w[16];

    if (rc != CUDA_SUCCESS)
        return rc;
    memset(w, 0, sizeof(w));
    sim_lock();
    /* Any pointer inside the allocation names all of it: the handle is the
     * one its base gets (as on a real GPU: openucx/ucx#11724). */
    struct sim_alloc *a = sim_find_alloc_locked(dptr, 0);
    if (!a || a->obj->vmm) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    dptr = a->obj->va + a->offset;
    /* The driver's handle names the allocation itself: one made again at
     * the same address (same file, offsets and sizes) gets another handle,
     * which is how importers' caches (UCX's cuda_ipc) see the change.  The
     * RM emulator's words replace these with its own unique ones. */
    w[0] = (uint32_t)a->obj->id;
    w[1] = (uint32_t)(a->obj->id >> 32);
    w[W_PID] = (uint32_t)getpid();
    w[W_MAGIC] = SIM_IPC_MAGIC;
    w[W_FD] = (uint32_t)a->obj->bk.fd;
    w[W_OBJ_FILE_PAGES] = (uint32_t)(a->obj->bk.offset / 4096);
    w[W_OBJ_PAGES] = (uint32_t)(a->obj->size / 4096);
    w[W_DEVICE] = (uint32_t)a->obj->device;
    w[NVRM_IPC_WORD_SIZE] = (uint32_t)a->size;
    w[NVRM_IPC_WORD_OFFSET] = (uint32_t)a->offset;
    sim_unlock();
    rc = simcu_rm_ipc_handle(dptr, w);
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        rc = CUDA_SUCCESS; /* no emulator: the sim's words are the handle */
    if (rc == CUDA_SUCCESS)
        memcpy(handle->reserved, w, sizeof(w));
    return rc;
}

CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                       unsigned int flags)
{
    CUresult rc = sim_begin_out("cuIpcOpenMemHandle", SIM_NEED_CTX, pdptr);
    uint32_t w[16];
    char path[64];

    if (rc != CUDA_SUCCESS)
        return rc;
    memcpy(w, handle.reserved, sizeof(w));
    if ((flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) || w[W_MAGIC] != SIM_IPC_MAGIC ||
        (int)w[W_DEVICE] < 0 || (int)w[W_DEVICE] >= sim.device_count)
        return CUDA_ERROR_INVALID_VALUE;
    size_t obj_size = (size_t)w[W_OBJ_PAGES] * 4096;
    size_t part[2] = { w[NVRM_IPC_WORD_SIZE], w[NVRM_IPC_WORD_OFFSET] };
    if (!obj_size || obj_size % SIM_OBJECT_ALIGN || part[1] > obj_size ||
        part[0] > obj_size - part[1])
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(path, sizeof(path), "/proc/%u/fd/%u", w[W_PID], w[W_FD]);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_INVALID_HANDLE; /* the exporter or its memory is gone */
    struct sim_vmm_handle *h;
    struct sim_backing_object bk;
    rc = sim_vmm_adopt(fd, (off_t)w[W_OBJ_FILE_PAGES] * 4096, obj_size, (int)w[W_DEVICE], &h,
                       &bk);
    if (rc != CUDA_SUCCESS) {
        close(fd);
        return rc;
    }
    uint64_t va = sim_va_take((int)w[W_DEVICE], obj_size);
    if (!va) {
        sim_vmm_unmapped(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = sim_mem_map_vmm(va, obj_size, 0, h, &bk, (int)w[W_DEVICE], part);
    if (rc != CUDA_SUCCESS) {
        sim_vmm_unmapped(h);
        sim_va_release((int)w[W_DEVICE], va, obj_size);
        return rc;
    }
    *pdptr = va + part[1];
    return CUDA_SUCCESS;
}

/* Hooked like the memory entry points (sim_entry.h): libgdrx revokes its
 * pins of the import here. */
SIM_IMPL CUresult impl_ipc_close(CUdeviceptr dptr)
{
    CUresult rc = sim_begin("cuIpcCloseMemHandle", SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    sim_lock();
    struct sim_alloc *a = sim_find_alloc_locked(dptr, 0);
    int ipc = a && a->obj->ipc && a->obj->va + a->offset == dptr;
    uint64_t va = ipc ? a->obj->va : 0;
    size_t size = ipc ? a->obj->size : 0;
    int device = ipc ? a->obj->device : 0;
    sim_unlock();
    if (!ipc)
        return CUDA_ERROR_INVALID_VALUE;
    rc = sim_mem_unmap_vmm(dptr, 0, 1);
    if (rc == CUDA_SUCCESS)
        sim_va_release(device, va, size); /* the sim took it at the open */
    return rc;
}
SIM_ENTRY(cuIpcCloseMemHandle, impl_ipc_close);
