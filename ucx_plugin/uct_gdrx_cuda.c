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
#include <pthread.h>
#include <ucs/debug/log.h>


/* CUdevice_attribute values of the PCI address (stable driver ABI). */
#define UCT_GDRX_CU_ATTR_PCI_BUS     33
#define UCT_GDRX_CU_ATTR_PCI_DEVICE  34
#define UCT_GDRX_CU_ATTR_PCI_DOMAIN  50

/* System devices by ordinal, found once each (0 = not looked up yet). */
#define UCT_GDRX_CUDA_MAX_DEVICES    64

static pthread_mutex_t uct_gdrx_cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static uct_gdrx_cuda_api_t uct_gdrx_cuda;
static int uct_gdrx_cuda_found;
static unsigned uct_gdrx_cuda_sys_devs[UCT_GDRX_CUDA_MAX_DEVICES];


/* Called until libcuda is there: UCP lists resources before libgdrx (or
 * the program) loads it, and the copies need it later. */
static void uct_gdrx_cuda_load(void)
{
    /* RTLD_NOLOAD: only the libcuda already in the process; the handle
     * stays open so the functions stay valid */
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

    if (handle == NULL) {
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
    *(void**)&uct_gdrx_cuda.device_get_count     = dlsym(handle,
                                                         "cuDeviceGetCount");
    *(void**)&uct_gdrx_cuda.ctx_get_device       = dlsym(handle,
                                                         "cuCtxGetDevice");
    if ((uct_gdrx_cuda.memcpy_dtoh == NULL) ||
        (uct_gdrx_cuda.ctx_get_current == NULL) ||
        (uct_gdrx_cuda.device_get == NULL) ||
        (uct_gdrx_cuda.device_get_attribute == NULL) ||
        (uct_gdrx_cuda.device_get_count == NULL) ||
        (uct_gdrx_cuda.ctx_get_device == NULL)) {
        ucs_debug("gdrx: libcuda lacks a driver entry point the transport "
                  "uses");
        dlclose(handle);
        return;
    }

    __atomic_store_n(&uct_gdrx_cuda_found, 1, __ATOMIC_RELEASE);
}

const uct_gdrx_cuda_api_t *uct_gdrx_cuda_api(void)
{
    if (ucs_likely(__atomic_load_n(&uct_gdrx_cuda_found, __ATOMIC_ACQUIRE))) {
        return &uct_gdrx_cuda;
    }

    pthread_mutex_lock(&uct_gdrx_cuda_lock);
    if (!uct_gdrx_cuda_found) {
        uct_gdrx_cuda_load();
    }
    pthread_mutex_unlock(&uct_gdrx_cuda_lock);
    return __atomic_load_n(&uct_gdrx_cuda_found, __ATOMIC_ACQUIRE) ?
           &uct_gdrx_cuda : NULL;
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
