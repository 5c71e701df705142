/*
 * uct_gdrx_cuda.c - the transport's own CUDA driver calls (see the header).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_cuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <ucs/debug/log.h>


/* CUdevice_attribute values of the PCI address (stable driver ABI). */
#define UCT_GDRX_CU_ATTR_PCI_BUS     33
#define UCT_GDRX_CU_ATTR_PCI_DEVICE  34
#define UCT_GDRX_CU_ATTR_PCI_DOMAIN  50

/* CUpointer_attribute: the context a device address was allocated in. */
#define UCT_GDRX_CU_POINTER_CONTEXT  1

/* System devices by ordinal, found once each (0 = not looked up yet). */
#define UCT_GDRX_CUDA_MAX_DEVICES    64

static pthread_once_t uct_gdrx_cuda_once = PTHREAD_ONCE_INIT;
static uct_gdrx_cuda_api_t uct_gdrx_cuda;
static int uct_gdrx_cuda_found;
static unsigned uct_gdrx_cuda_sys_devs[UCT_GDRX_CUDA_MAX_DEVICES];


static void uct_gdrx_cuda_load(void)
{
    /* RTLD_NOLOAD: only the libcuda already in the process; the handle
     * stays open so the functions stay valid */
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

    if (handle == NULL) {
        ucs_debug("gdrx: no libcuda loaded");
        return;
    }

    *(void**)&uct_gdrx_cuda.memcpy_dtoh          = dlsym(handle,
                                                         "cuMemcpyDtoH_v2");
    *(void**)&uct_gdrx_cuda.ctx_get_current      = dlsym(handle,
                                                         "cuCtxGetCurrent");
    *(void**)&uct_gdrx_cuda.device_get           = dlsym(handle,
                                                         "cuDeviceGet");
    *(void**)&uct_gdrx_cuda.device_get_attribute = dlsym(handle,
                                                         "cuDeviceGetAttribute");
    *(void**)&uct_gdrx_cuda.memcpy               = dlsym(handle, "cuMemcpy");
    *(void**)&uct_gdrx_cuda.mem_alloc            = dlsym(handle,
                                                         "cuMemAlloc_v2");
    *(void**)&uct_gdrx_cuda.mem_free             = dlsym(handle,
                                                         "cuMemFree_v2");
    *(void**)&uct_gdrx_cuda.pointer_get_attribute =
            dlsym(handle, "cuPointerGetAttribute");
    *(void**)&uct_gdrx_cuda.ctx_push_current     = dlsym(handle,
                                                         "cuCtxPushCurrent_v2");
    *(void**)&uct_gdrx_cuda.ctx_pop_current      = dlsym(handle,
                                                         "cuCtxPopCurrent_v2");
    uct_gdrx_cuda_found = (uct_gdrx_cuda.memcpy_dtoh != NULL) &&
                          (uct_gdrx_cuda.ctx_get_current != NULL) &&
                          (uct_gdrx_cuda.device_get != NULL) &&
                          (uct_gdrx_cuda.device_get_attribute != NULL) &&
                          (uct_gdrx_cuda.memcpy != NULL) &&
                          (uct_gdrx_cuda.mem_alloc != NULL) &&
                          (uct_gdrx_cuda.mem_free != NULL) &&
                          (uct_gdrx_cuda.pointer_get_attribute != NULL) &&
                          (uct_gdrx_cuda.ctx_push_current != NULL) &&
                          (uct_gdrx_cuda.ctx_pop_current != NULL);
}

const uct_gdrx_cuda_api_t *uct_gdrx_cuda_api(void)
{
    pthread_once(&uct_gdrx_cuda_once, uct_gdrx_cuda_load);
    return uct_gdrx_cuda_found ? &uct_gdrx_cuda : NULL;
}

static ucs_sys_device_t uct_gdrx_cuda_find_sys_dev(int ordinal)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    int device, domain, bus, slot;
    ucs_sys_device_t sys_dev;
    ucs_sys_bus_id_t bus_id;

    if ((cuda == NULL) || (cuda->device_get(&device, ordinal) != 0) ||
        (cuda->device_get_attribute(&domain, UCT_GDRX_CU_ATTR_PCI_DOMAIN,
                                    device) != 0) ||
        (cuda->device_get_attribute(&bus, UCT_GDRX_CU_ATTR_PCI_BUS,
                                    device) != 0) ||
        (cuda->device_get_attribute(&slot, UCT_GDRX_CU_ATTR_PCI_DEVICE,
                                    device) != 0)) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }

    bus_id.domain   = (uint16_t)domain;
    bus_id.bus      = (uint8_t)bus;
    bus_id.slot     = (uint8_t)slot;
    bus_id.function = 0;
    if (ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev) != UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    return sys_dev;
}

ucs_sys_device_t uct_gdrx_cuda_sys_dev(int ordinal)
{
    unsigned cached;
    ucs_sys_device_t sys_dev;

    if ((ordinal < 0) || (ordinal >= UCT_GDRX_CUDA_MAX_DEVICES)) {
        return uct_gdrx_cuda_find_sys_dev(ordinal);
    }

    /* stored as value + 1; two threads may both look it up: same answer */
    cached = __atomic_load_n(&uct_gdrx_cuda_sys_devs[ordinal],
                             __ATOMIC_RELAXED);
    if (ucs_likely(cached != 0)) {
        return (ucs_sys_device_t)(cached - 1);
    }
    sys_dev = uct_gdrx_cuda_find_sys_dev(ordinal);
    __atomic_store_n(&uct_gdrx_cuda_sys_devs[ordinal], (unsigned)sys_dev + 1,
                     __ATOMIC_RELAXED);
    return sys_dev;
}

ucs_status_t uct_gdrx_cuda_copy(void *dst, const void *src, size_t length,
                                uint64_t dev_addr)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    void *ctx                       = NULL;
    void *popped;
    int ret;

    if (cuda == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* the buffer's own context, whatever the calling thread has current
     * (a progress thread may have none) */
    ret = cuda->pointer_get_attribute(&ctx, UCT_GDRX_CU_POINTER_CONTEXT,
                                      dev_addr);
    if ((ret != 0) || (ctx == NULL)) {
        ucs_debug("gdrx: no CUDA context for 0x%" PRIx64 ": CUDA error %d",
                  dev_addr, ret);
        return UCS_ERR_INVALID_ADDR;
    }

    ret = cuda->ctx_push_current(ctx);
    if (ret != 0) {
        ucs_debug("gdrx: cuCtxPushCurrent failed: CUDA error %d", ret);
        return UCS_ERR_IO_ERROR;
    }
    ret = cuda->memcpy((uintptr_t)dst, (uintptr_t)src, length);
    cuda->ctx_pop_current(&popped);
    if (ret != 0) {
        ucs_debug("gdrx: cuMemcpy of %zu bytes %p -> %p failed: CUDA error "
                  "%d", length, src, dst, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_gdrx_cuda_alloc(size_t length, uint64_t *dptr_p)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    unsigned long long dptr;
    void *ctx                       = NULL;
    int ret;

    if ((cuda == NULL) || (cuda->ctx_get_current(&ctx) != 0) ||
        (ctx == NULL)) {
        ucs_debug("gdrx: no current CUDA context to allocate %zu bytes in",
                  length);
        return UCS_ERR_NO_DEVICE;
    }

    ret = cuda->mem_alloc(&dptr, length);
    if (ret != 0) {
        ucs_debug("gdrx: cuMemAlloc of %zu bytes failed: CUDA error %d",
                  length, ret);
        return UCS_ERR_NO_MEMORY;
    }
    *dptr_p = dptr;
    return UCS_OK;
}

ucs_status_t uct_gdrx_cuda_free(uint64_t dptr)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    int ret;

    if (cuda == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    ret = cuda->mem_free(dptr);
    if (ret != 0) {
        ucs_warn("gdrx: cuMemFree of 0x%" PRIx64 " failed: CUDA error %d",
                 dptr, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
