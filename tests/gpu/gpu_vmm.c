/*
 * gpu_vmm.c - see gpu_vmm.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "gpu_vmm.h"

#include <string.h>

CUresult vmm_create(struct vmm *m, size_t want, const char **what)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    size_t gran = 0;
    CUresult r;

    memset(m, 0, sizeof(*m));
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
#define STEP(call)            \
    do {                      \
        *what = #call;        \
        if ((r = call) != 0)  \
            return r;         \
    } while (0)
    STEP(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    m->size = (want + gran - 1) / gran * gran;
    STEP(cuMemCreate(&m->h, m->size, &prop, 0));
    STEP(cuMemAddressReserve(&m->va, m->size, 0, 0, 0));
    STEP(cuMemMap(m->va, m->size, 0, m->h, 0));
    STEP(cuMemSetAccess(m->va, m->size, &acc, 1));
#undef STEP
    return CUDA_SUCCESS;
}

void vmm_destroy(struct vmm *m)
{
    cuMemUnmap(m->va, m->size);
    cuMemRelease(m->h);
    cuMemAddressFree(m->va, m->size);
}
