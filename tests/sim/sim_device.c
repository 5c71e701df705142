/*
 * sim_device.c - cuInit, devices, their attributes and contexts.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each GPU has exactly one context, its primary context.  The current
 * context is per thread: a small thread-local stack, as in CUDA, whose top
 * is current.
 */
#include "sim_entry.h"
#include "sim_internal.h"
#include "sim_rm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* PCI buses of the GPUs (those of an 8-GPU HGX board). */
static const int pci_bus[SIMCU_MAX_DEVICES] = {0x19, 0x3b, 0x4c, 0x5d, 0x9b, 0xbb, 0xcb, 0xdb};

int sim_is_initialized(void)
{
    return __atomic_load_n(&sim.initialized, __ATOMIC_ACQUIRE);
}

CUresult sim_begin(const char *function_name, int flags)
{
    CUresult rc = sim_injected_failure(function_name);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* From a stream callback (sim_callback.c), as the driver documents. */
    if (!(flags & SIM_NO_INIT) && sim_in_callback())
        return CUDA_ERROR_NOT_PERMITTED;
    if (!(flags & SIM_NO_INIT) && !sim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    /* What works before cuInit (versions, error strings, entry points)
     * still works in a fork child; the rest, and cuInit, does not. */
    if ((!(flags & SIM_NO_INIT) || (flags & SIM_IS_INIT) == SIM_IS_INIT) &&
        __atomic_load_n(&sim.forked, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    if ((flags & SIM_NEED_CTX) && !sim_ctx_is_valid(sim_current_ctx()))
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

CUresult sim_begin_out(const char *function_name, int flags, const void *out)
{
    CUresult rc = sim_begin(function_name, flags);
    if (rc == CUDA_SUCCESS && !out)
        rc = CUDA_ERROR_INVALID_VALUE;
    return rc;
}

static int valid_device(CUdevice dev)
{
    return dev >= 0 && dev < sim.device_count;
}

/* sim_begin for calls naming a device. */
static CUresult begin_device(const char *function_name, CUdevice dev)
{
    CUresult rc = sim_begin(function_name, 0);
    if (rc == CUDA_SUCCESS && !valid_device(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    return rc;
}

/* ---- initialisation ---- */

/* SIMCU_DEVICES unless simcu_set_device_count() chose; 0 if invalid. */
static int wanted_devices(void)
{
    if (sim.requested_devices)
        return sim.requested_devices;
    const char *env = getenv("SIMCU_DEVICES");
    if (!env || !*env)
        return 1;
    char *end;
    long n = strtol(env, &end, 10);
    return *end == '\0' && n >= 1 && n <= SIMCU_MAX_DEVICES ? (int)n : 0;
}

/* Reserve the device VA: PROT_NONE for ever, so a device pointer
 * dereferenced by the CPU faults. */
static int reserve_va(struct sim_device *d)
{
    size_t len = SIM_VA_PER_DEVICE + SIM_OBJECT_ALIGN;
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    d->va_base = sim_round_up((uintptr_t)p, SIM_OBJECT_ALIGN);
    d->va_end = d->va_base + SIM_VA_PER_DEVICE;
    d->va_next = d->va_base;
    return 0;
}

static CUresult init_locked(void)
{
    int n = wanted_devices();
    if (n == 0)
        return CUDA_ERROR_NO_DEVICE;
    sim.backing = sim_backing_select();
    if (!sim.backing)
        return CUDA_ERROR_NO_DEVICE;
    for (int i = 0; i < n; i++) {
        struct sim_device *d = &sim.dev[i];
        if (reserve_va(d) != 0) {
            /* The ranges already reserved are kept for a retry. */
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        d->primary.device = i;
    }
    sim.device_count = n;
    __atomic_store_n(&sim.initialized, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    /* Serialises whole cuInit calls, so none returns before the RM hook ran. */
    static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
    CUresult rc = sim_begin("cuInit", SIM_IS_INIT);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&init_lock);
    if (!sim_is_initialized()) {
        sim_lock();
        rc = init_locked();
        int n = sim.device_count;
        sim_unlock();
        if (rc == CUDA_SUCCESS) {
            sim_register_atfork();
            simcu_rm_init(n);
        }
    }
    pthread_mutex_unlock(&init_lock);
    return rc;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    CUresult rc = sim_begin_out("cuDriverGetVersion", SIM_NO_INIT, driverVersion);
    if (rc == CUDA_SUCCESS)
        *driverVersion = SIM_DRIVER_VERSION;
    return rc;
}

/* ---- devices ---- */

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult rc = sim_begin_out("cuDeviceGet", 0, device);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!valid_device(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult rc = sim_begin_out("cuDeviceGetCount", 0, count);
    if (rc == CUDA_SUCCESS)
        *count = sim.device_count;
    return rc;
}

/* Whether contexts on the devices are MPS clients: as the driver answers
 * where an MPS control daemon serves the process (SIMCU_MPS=1). */
static int mps_enabled(void)
{
    const char *env = getenv("SIMCU_MPS");
    return env && strcmp(env, "1") == 0;
}

/* An H100-like device; -1 = attribute unknown to the sim. */
static int attribute_value(CUdevice_attribute attrib, CUdevice dev)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: return mps_enabled();
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return pci_bus[dev];
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
        return CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
        return CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
    /* 1 on a coherent GPU (Grace Hopper, ATS over NVLink-C2C): what
     * gdrcopy and libgdrx tell coherence from (sim_dmabuf.c) */
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: return sim_coherent();
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: return sim_coherent();
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    default: return -1;
    }
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult rc = begin_device("cuDeviceGetAttribute", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    int v = attribute_value(attrib, dev);
    if (v < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = v;
    return CUDA_SUCCESS;
}

/* snprintf into a caller buffer of len bytes, the cuDeviceGet{Name,PCIBusId}
 * way: truncated if short. */
static CUresult device_string(const char *function_name, char *buf, int len, CUdevice dev,
                              const char *fmt, int value)
{
    CUresult rc = begin_device(function_name, dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!buf || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, (size_t)len, fmt, value);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    return device_string("cuDeviceGetPCIBusId", pciBusId, len, dev, "0000:%02x:00.0",
                         valid_device(dev) ? pci_bus[dev] : 0);
}

/* Every simulated GPU has 80 GiB (what an H100's driver reports, about). */
CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUresult rc = begin_device("cuDeviceTotalMem", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

/* A UUID per device, stable for the process (UCX's CUDA transports name
 * GPUs by it; the plain name is an alias at the end of this file). */
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult rc = begin_device("cuDeviceGetUuid_v2", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof(uuid->bytes));
    memcpy(uuid->bytes, "simcu-gpu-", 10);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    return device_string("cuDeviceGetName", name, len, dev, "NVIDIA H100 (simcu %d)", dev);
}

/* ---- contexts ---- */

#define SIM_CTX_STACK_DEPTH 32

static _Thread_local struct CUctx_st *ctx_stack[SIM_CTX_STACK_DEPTH];
static _Thread_local int ctx_depth;

struct CUctx_st *sim_current_ctx(void)
{
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

int sim_ctx_is_primary(const struct CUctx_st *ctx)
{
    for (int i = 0; i < sim.device_count; i++)
        if (ctx == &sim.dev[i].primary)
            return 1;
    return 0;
}

static int is_sim_ctx(const struct CUctx_st *ctx)
{
    if (ctx && sim_ctx_is_created(ctx))
        return !__atomic_load_n(&ctx->destroyed, __ATOMIC_ACQUIRE);
    return ctx && sim_ctx_is_primary(ctx);
}

CUresult sim_ctx_push(struct CUctx_st *ctx)
{
    if (ctx_depth == SIM_CTX_STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

void sim_ctx_pop_if_current(const struct CUctx_st *ctx)
{
    if (ctx_depth && ctx_stack[ctx_depth - 1] == ctx)
        ctx_depth--;
}

/* The context is made again (first retain, reset): CUDA gives it a new id. */
void sim_ctx_new_id(struct CUctx_st *ctx)
{
    unsigned long long id = __atomic_add_fetch(&sim.next_ctx_id, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ctx->id, id, __ATOMIC_RELEASE);
}

/* A context calls can run in: one of ours, retained. */
int sim_ctx_is_valid(const struct CUctx_st *ctx)
{
    if (ctx && sim_ctx_is_created(ctx))
        return is_sim_ctx(ctx);
    return ctx && is_sim_ctx(ctx) && __atomic_load_n(&ctx->refcount, __ATOMIC_ACQUIRE) > 0;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = begin_device("cuDevicePrimaryCtxRetain", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    /* The first retain makes the context: a new id. */
    if (__atomic_add_fetch(&sim.dev[dev].primary.refcount, 1, __ATOMIC_ACQ_REL) == 1)
        sim_ctx_new_id(&sim.dev[dev].primary);
    *pctx = &sim.dev[dev].primary;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult rc = begin_device("cuDevicePrimaryCtxGetState", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    *active = __atomic_load_n(&sim.dev[dev].primary.refcount, __ATOMIC_ACQUIRE) > 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult rc = begin_device("cuDevicePrimaryCtxRelease", dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    int *ref = &sim.dev[dev].primary.refcount;
    int old = __atomic_load_n(ref, __ATOMIC_ACQUIRE);
    do {
        if (old == 0)
            return CUDA_ERROR_INVALID_CONTEXT;
    } while (!__atomic_compare_exchange_n(ref, &old, old - 1, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    /* The last release destroys the context, its streams and the memory
     * allocated in it. */
    if (old == 1) {
        sim_streams_ctx_gone(&sim.dev[dev].primary);
        sim_host_ctx_gone(&sim.dev[dev].primary);
        sim_mem_free_ctx(&sim.dev[dev].primary);
    }
    return CUDA_SUCCESS;
}

/* Hooked like the memory entry points (see sim_entry.h), under both names. */
SIM_IMPL CUresult impl_primary_ctx_reset(CUdevice dev)
{
    CUresult rc = begin_device("cuDevicePrimaryCtxReset", dev);
    if (rc == CUDA_SUCCESS) {
        sim_streams_ctx_gone(&sim.dev[dev].primary);
        sim_host_ctx_gone(&sim.dev[dev].primary);
        sim_mem_free_ctx(&sim.dev[dev].primary);
        sim_ctx_new_id(&sim.dev[dev].primary);
    }
    return rc;
}
SIM_ENTRY(cuDevicePrimaryCtxReset_v2, impl_primary_ctx_reset);
SIM_ENTRY(cuDevicePrimaryCtxReset, impl_primary_ctx_reset);

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult rc = sim_begin_out("cuCtxGetCurrent", 0, pctx);
    if (rc == CUDA_SUCCESS)
        *pctx = sim_current_ctx();
    return rc;
}

/* Replaces the top of the stack; NULL pops it. */
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = sim_begin("cuCtxSetCurrent", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!is_sim_ctx(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    CUresult rc = sim_begin("cuCtxPushCurrent", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx || !is_sim_ctx(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return sim_ctx_push(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    CUresult rc = sim_begin("cuCtxPopCurrent", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_depth--;
    if (pctx)
        *pctx = ctx_stack[ctx_depth];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUresult rc = sim_begin_out("cuCtxGetDevice", SIM_NEED_CTX, device);
    if (rc == CUDA_SUCCESS)
        *device = sim_current_ctx()->device;
    return rc;
}

/* ctx NULL: the current one. */
CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult rc = sim_begin_out("cuCtxGetId", 0, ctxId);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx)
        ctx = sim_current_ctx();
    if (!sim_ctx_is_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctxId = __atomic_load_n(&ctx->id, __ATOMIC_ACQUIRE);
    return CUDA_SUCCESS;
}

/* Work completes before the call that queued it returns; stream
 * callbacks run on their own thread (sim_callback.c). */
CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUresult rc = sim_begin("cuCtxSynchronize", SIM_NEED_CTX);
    if (rc == CUDA_SUCCESS)
        sim_callbacks_wait(NULL);
    return rc;
}

/* The real library also exports the pre-_v2 names of these (of the reset:
 * above); their signatures are the same, so they are aliases. */
#include "sim_legacy.h"

#define SIM_ALIAS(target) __attribute__((alias(#target)))
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) SIM_ALIAS(cuDevicePrimaryCtxRelease_v2);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) SIM_ALIAS(cuCtxPushCurrent_v2);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) SIM_ALIAS(cuDeviceGetUuid_v2);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) SIM_ALIAS(cuCtxPopCurrent_v2);
