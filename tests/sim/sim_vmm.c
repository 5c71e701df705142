/*
 * sim_vmm.c - CUDA's virtual memory management on the simulated GPU:
 * cuMemCreate, cuMemAddressReserve/Free, cuMemMap/Unmap, cuMemSetAccess/
 * GetAccess, cuMemRelease, cuMemGetAllocationGranularity,
 * cuMemExportToShareableHandle (POSIX file descriptor),
 * cuMemRetainAllocationHandle and cuMemGetAllocationPropertiesFromHandle,
 * as CUDA 12/13 document them.
 *
 * SPDX-License-Identifier: MIT
 *
 * A handle owns pages (a backing object) and lives until it is released
 * and no mapping of it is left.  A reservation is a range of device VA
 * (taken from the device the first reservation of the process finds:
 * device 0's range; a mapping of another device's pages there keeps its
 * device ordinal).  A mapping is a sim object showing part of a handle's
 * pages at reserved VA, with one allocation spanning it: pointer queries,
 * copies and cuMemGetHandleForAddressRange see it like any allocation; it
 * belongs to no context (CU_POINTER_ATTRIBUTE_CONTEXT is NULL), so context
 * resets and destroys leave it; cuMemFree refuses it.  Access rights are
 * recorded (cuMemGetAccess) but not enforced on copies.
 */
#include "sim_internal.h"
#include "sim_entry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GRANULE SIM_OBJECT_ALIGN

struct sim_vmm_handle {
    struct sim_vmm_handle    *next;
    struct sim_backing_object bk;
    size_t                    size;
    int                       device;
    int                       released; /* cuMemRelease was called once more
                                           than cuMemRetainAllocationHandle */
    int                       retains;  /* cuMemRetainAllocationHandle's, not
                                           yet released */
    int                       mappings;
    CUmemAllocationHandleType types;    /* exportable as */
    int                       adopted;  /* pages of another process (sim_vmm_adopt):
                                           ours to unmap and close, not the backing's */
};

struct reservation {
    struct reservation *next;
    uint64_t            va;
    size_t              size;
    unsigned long long  access; /* CU_MEM_ACCESS_FLAGS_* for device 0 (one-GPU model) */
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER; /* below; never with sim.lock */
static struct sim_vmm_handle *handles;
static struct reservation *reservations;

/* The live handle h names (not released), under vmm_lock. */
static struct sim_vmm_handle *handle_locked(CUmemGenericAllocationHandle h, int released_ok)
{
    for (struct sim_vmm_handle *v = handles; v; v = v->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)v == h && (released_ok || !v->released))
            return v;
    return NULL;
}

static struct reservation *reservation_locked(uint64_t va, size_t size)
{
    for (struct reservation *r = reservations; r; r = r->next)
        if (va >= r->va && size <= r->size && va - r->va <= r->size - size)
            return r;
    return NULL;
}

/* Drop h if released and unmapped; called with vmm_lock held, unlocks. */
static void put_unlock(struct sim_vmm_handle *h)
{
    int gone = h->released && h->mappings == 0;
    if (gone) {
        struct sim_vmm_handle **pp = &handles;
        while (*pp != h)
            pp = &(*pp)->next;
        *pp = h->next;
    }
    pthread_mutex_unlock(&vmm_lock);
    if (gone) {
        if (h->adopted) {
            munmap(h->bk.cpu, h->bk.size);
            close(h->bk.fd);
        } else {
            sim.backing->destroy(&h->bk);
        }
        free(h);
    }
}

CUresult sim_vmm_adopt(int fd, off_t offset, size_t size, int device,
                       struct sim_vmm_handle **out, struct sim_backing_object *bk)
{
    struct sim_vmm_handle *h = calloc(1, sizeof(*h));
    void *cpu = h ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)
                  : MAP_FAILED;

    if (cpu == MAP_FAILED) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->bk.fd = fd;
    h->bk.offset = 0; /* the CPU view starts at the object's first byte */
    h->bk.cpu = cpu;
    h->bk.size = size;
    h->size = size;
    h->device = device;
    h->released = 1;
    h->mappings = 1;
    h->adopted = 1;
    pthread_mutex_lock(&vmm_lock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&vmm_lock);
    /* the object's file offset, as the exporter's backing has it */
    *bk = h->bk;
    bk->offset = offset;
    *out = h;
    return CUDA_SUCCESS;
}

void sim_vmm_unmapped(struct sim_vmm_handle *h)
{
    pthread_mutex_lock(&vmm_lock);
    h->mappings--;
    put_unlock(h);
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->location.id < 0 || prop->location.id >= sim.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    if (prop->requestedHandleTypes & ~(CUmemAllocationHandleType)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED; /* no Win32, fabric or KMT handles here */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
    CUresult rc = sim_begin_out("cuMemGetAllocationGranularity", 0, granularity);
    if (rc == CUDA_SUCCESS)
        rc = check_prop(prop);
    if (rc == CUDA_SUCCESS && option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *granularity = GRANULE;
    return rc;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    static uint64_t next_id = (uint64_t)1 << 48; /* apart from the memory's object ids */
    CUresult rc = sim_begin_out("cuMemCreate", 0, handle);
    if (rc == CUDA_SUCCESS)
        rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (size == 0 || size % GRANULE || flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_vmm_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
    if (sim.backing->create(id, prop->location.id, size, &h->bk) != 0) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->size = size;
    h->device = prop->location.id;
    h->types = prop->requestedHandleTypes;
    pthread_mutex_lock(&vmm_lock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&vmm_lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

/* The pages go when the last mapping does. */
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult rc = sim_begin("cuMemRelease", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&vmm_lock);
    struct sim_vmm_handle *h = handle_locked(handle, 0);
    if (!h) {
        pthread_mutex_unlock(&vmm_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (h->retains > 0)
        h->retains--;
    else
        h->released = 1;
    put_unlock(h);
    return CUDA_SUCCESS;
}

CUmemAllocationHandleType sim_vmm_handle_types(const struct sim_vmm_handle *h)
{
    return h->types;
}

/* The handle of the VMM mapping holding addr, one more reference to it
 * (cuMemRelease drops it).  Memory not mapped with cuMemMap (cuMemAlloc's,
 * a pool's, a graph's, an IPC import) or no memory at all:
 * CUDA_ERROR_INVALID_VALUE, as the driver answers (UCX's VMM detection
 * relies on that refusal). */
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult rc = sim_begin_out("cuMemRetainAllocationHandle", 0, handle);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&vmm_lock);
    sim_lock();
    const struct sim_object *o = sim_find_object_locked((uintptr_t)addr);
    struct sim_vmm_handle *h = o && o->vmm && !o->ipc &&
                               sim_find_alloc_locked((uintptr_t)addr, 0) ? o->vmm : NULL;
    sim_unlock();
    if (h) {
        if (h->released)
            h->released = 0;
        else
            h->retains++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    }
    pthread_mutex_unlock(&vmm_lock);
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* What cuMemCreate was given, as the sim keeps it: pinned device memory
 * of h's device, exportable as it asked. */
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                        CUmemGenericAllocationHandle handle)
{
    CUresult rc = sim_begin_out("cuMemGetAllocationPropertiesFromHandle", 0, prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&vmm_lock);
    const struct sim_vmm_handle *h = handle_locked(handle, 0);
    if (h) {
        memset(prop, 0, sizeof(*prop));
        prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop->location.id = h->device;
        prop->requestedHandleTypes = h->types;
    }
    pthread_mutex_unlock(&vmm_lock);
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* addr is a hint (honoured when that range is free device VA of the
 * sim's bump allocator: it is not, so always ignored); alignment 0 or a
 * power of two up to the granule. */
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
    CUresult rc = sim_begin_out("cuMemAddressReserve", 0, ptr);
    if (rc != CUDA_SUCCESS)
        return rc;
    (void)addr;
    if (size == 0 || size % GRANULE || flags || (alignment & (alignment - 1)) ||
        alignment > GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    struct reservation *r = calloc(1, sizeof(*r));
    uint64_t va = r ? sim_va_take(0, size) : 0;
    if (!va) {
        free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->va = va;
    r->size = size;
    pthread_mutex_lock(&vmm_lock);
    r->next = reservations;
    reservations = r;
    pthread_mutex_unlock(&vmm_lock);
    *ptr = va;
    return CUDA_SUCCESS;
}

/* Only a whole reservation with nothing mapped in it. */
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult rc = sim_begin("cuMemAddressFree", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&vmm_lock);
    struct reservation **pp = &reservations;
    while (*pp && ((*pp)->va != ptr || (*pp)->size != size))
        pp = &(*pp)->next;
    struct reservation *r = *pp;
    int mapped = 0;
    if (r) {
        sim_lock();
        for (struct sim_object *o = sim.objects; o && !mapped; o = o->next)
            mapped = o->vmm && o->va >= r->va && o->va - r->va < r->size;
        sim_unlock();
    }
    if (!r || mapped) {
        pthread_mutex_unlock(&vmm_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pp = r->next;
    pthread_mutex_unlock(&vmm_lock);
    sim_va_release(0, r->va, r->size);
    free(r);
    return CUDA_SUCCESS;
}

/* Hooked like the memory entry points (sim_entry.h). */
SIM_IMPL CUresult impl_mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult rc = sim_begin("cuMemMap", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ptr || size == 0 || size % GRANULE || offset % GRANULE || ptr % GRANULE || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct sim_vmm_handle *h = handle_locked(handle, 0);
    int taken = 0;
    sim_lock();
    for (uint64_t p = ptr; p < ptr + size && !taken; p += GRANULE)
        taken = sim_find_alloc_locked(p, 1) != NULL;
    sim_unlock();
    if (!h || offset > h->size || size > h->size - offset || !reservation_locked(ptr, size) ||
        taken) {
        pthread_mutex_unlock(&vmm_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    h->mappings++;
    struct sim_backing_object bk = h->bk;
    int device = h->device;
    pthread_mutex_unlock(&vmm_lock);
    rc = sim_mem_map_vmm(ptr, size, offset, h, &bk, device, NULL);
    if (rc != CUDA_SUCCESS)
        sim_vmm_unmapped(h);
    return rc;
}
SIM_ENTRY(cuMemMap, impl_mem_map);

/* Exactly one whole mapping (a range over none, part of one or several is
 * refused, changing nothing). */
SIM_IMPL CUresult impl_mem_unmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = sim_begin("cuMemUnmap", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    return sim_mem_unmap_vmm(ptr, size, 0);
}
SIM_ENTRY(cuMemUnmap, impl_mem_unmap);

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
    CUresult rc = sim_begin("cuMemSetAccess", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            desc[i].location.id < 0 || desc[i].location.id >= sim.device_count ||
            desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&vmm_lock);
    struct reservation *r = reservation_locked(ptr, size);
    int mapped = 1;
    sim_lock();
    for (uint64_t p = ptr; r && p < ptr + size && mapped; p += GRANULE)
        mapped = sim_find_alloc_locked(p, 0) != NULL;
    sim_unlock();
    if (!r || !mapped) {
        pthread_mutex_unlock(&vmm_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    r->access = desc[count - 1].flags;
    pthread_mutex_unlock(&vmm_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                CUdeviceptr ptr)
{
    CUresult rc = sim_begin_out("cuMemGetAccess", 0, flags);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct reservation *r = reservation_locked(ptr, 1);
    if (r)
        *flags = r->access;
    pthread_mutex_unlock(&vmm_lock);
    return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A POSIX fd of the handle's pages (a new file description), if it was
 * created exportable so. */
CUresult CUDAAPI cuMemExportToShareableHandle(void *shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags)
{
    CUresult rc = sim_begin_out("cuMemExportToShareableHandle", 0, shareableHandle);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct sim_vmm_handle *h = handle_locked(handle, 0);
    int fd = h && (h->types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ? dup(h->bk.fd) : -2;
    pthread_mutex_unlock(&vmm_lock);
    if (fd == -2)
        return CUDA_ERROR_INVALID_VALUE;
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}
