/*
 * uct_gdrx_cuda.c - the transport's own CUDA driver calls (see the header).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_cuda.h"
#include "uct_gdrx_compat.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>


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


/* Entry points by driver symbol; NULL optional ones may stay NULL. */
#define UCT_GDRX_CUDA_SYM(_member, _symbol) \
    {ucs_offsetof(uct_gdrx_cuda_api_t, _member), _symbol}

static const struct {
    size_t     offset;
    const char *symbol;
} uct_gdrx_cuda_syms[] = {
    UCT_GDRX_CUDA_SYM(ctx_get_current,        "cuCtxGetCurrent"),
    UCT_GDRX_CUDA_SYM(device_get,             "cuDeviceGet"),
    UCT_GDRX_CUDA_SYM(device_get_attribute,   "cuDeviceGetAttribute"),
    UCT_GDRX_CUDA_SYM(device_get_count,       "cuDeviceGetCount"),
    UCT_GDRX_CUDA_SYM(ctx_get_device,         "cuCtxGetDevice"),
    UCT_GDRX_CUDA_SYM(pointer_get_attributes, "cuPointerGetAttributes"),
    UCT_GDRX_CUDA_SYM(ctx_push_current,       "cuCtxPushCurrent_v2"),
    UCT_GDRX_CUDA_SYM(ctx_pop_current,        "cuCtxPopCurrent_v2"),
    UCT_GDRX_CUDA_SYM(primary_ctx_get_state,  "cuDevicePrimaryCtxGetState"),
    UCT_GDRX_CUDA_SYM(primary_ctx_retain,     "cuDevicePrimaryCtxRetain"),
    UCT_GDRX_CUDA_SYM(primary_ctx_release,    "cuDevicePrimaryCtxRelease_v2"),
    UCT_GDRX_CUDA_SYM(stream_create,          "cuStreamCreate"),
    UCT_GDRX_CUDA_SYM(stream_destroy,         "cuStreamDestroy_v2"),
    UCT_GDRX_CUDA_SYM(stream_synchronize,     "cuStreamSynchronize"),
    UCT_GDRX_CUDA_SYM(memcpy_async,           "cuMemcpyAsync"),
    UCT_GDRX_CUDA_SYM(mem_alloc,              "cuMemAlloc_v2"),
    UCT_GDRX_CUDA_SYM(mem_free,               "cuMemFree_v2"),
    UCT_GDRX_CUDA_SYM(ctx_get_id,             "cuCtxGetId"),
    UCT_GDRX_CUDA_SYM(get_error_string,       "cuGetErrorString")
};

/* The members from ctx_get_id on are optional. */
#define UCT_GDRX_CUDA_OPTIONAL ucs_offsetof(uct_gdrx_cuda_api_t, ctx_get_id)


/* cuGetProcAddress (CUDA 11.3), by its first ABI, the one exported under
 * its plain name. */
typedef int (*uct_gdrx_cuda_get_proc_func_t)(const char *symbol, void **pfn,
                                             int cuda_version,
                                             unsigned long long flags);

/* cuCtxGetId where the driver serves it (CUDA 12.0 on), as its own table
 * says (cuGetProcAddress, where there is one), else NULL. */
static void *uct_gdrx_cuda_ctx_get_id(void *handle, void *by_name)
{
    uct_gdrx_cuda_get_proc_func_t get_proc;
    void *fn = NULL;

    *(void**)&get_proc = dlsym(handle, "cuGetProcAddress");
    if (get_proc == NULL) {
        return by_name;
    }
    if (get_proc("cuCtxGetId", &fn, 12000, 0) != UCT_GDRX_CUDA_SUCCESS) {
        return NULL;
    }
    return fn;
}

/* Called until libcuda is there: UCP lists resources before libgdrx (or
 * the program) loads it, and the copies need it later. */
static void uct_gdrx_cuda_load(void)
{
    /* RTLD_NOLOAD: only the libcuda already in the process; the handle
     * stays open so the functions stay valid */
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *fn;
    size_t i;

    if (handle == NULL) {
        return;
    }

    for (i = 0; i < ucs_static_array_size(uct_gdrx_cuda_syms); ++i) {
        fn = dlsym(handle, uct_gdrx_cuda_syms[i].symbol);
        if ((fn == NULL) &&
            (uct_gdrx_cuda_syms[i].offset < UCT_GDRX_CUDA_OPTIONAL)) {
            ucs_debug("gdrx: libcuda lacks %s", uct_gdrx_cuda_syms[i].symbol);
            dlclose(handle);
            return;
        }
        memcpy((char*)&uct_gdrx_cuda + uct_gdrx_cuda_syms[i].offset, &fn,
               sizeof(fn));
    }

    memcpy(&fn, &uct_gdrx_cuda.ctx_get_id, sizeof(fn));
    fn = uct_gdrx_cuda_ctx_get_id(handle, fn);
    memcpy(&uct_gdrx_cuda.ctx_get_id, &fn, sizeof(fn));
    if (fn == NULL) {
        ucs_debug("gdrx: no cuCtxGetId: copy engine streams are not kept");
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

const char *uct_gdrx_cuda_error_string(int error)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    const char *str                 = NULL;

    if ((cuda == NULL) || (cuda->get_error_string == NULL) ||
        (cuda->get_error_string(error, &str) != 0) || (str == NULL)) {
        return "unknown CUDA error";
    }
    return str;
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
    if (uct_gdrx_topo_find_cuda_device(&bus_id, device, &sys_dev) != UCS_OK) {
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
