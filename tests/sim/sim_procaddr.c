/*
 * sim_procaddr.c - cuGetProcAddress: the sim's entry points by name.
 *
 * SPDX-License-Identifier: MIT
 *
 * A symbol can have several versions; the caller's cudaVersion picks the
 * newest one introduced at or before it (cuMemAlloc asked for with 3020 or
 * later is cuMemAlloc_v2).  Versions the sim lacks (the 32-bit-pointer
 * cuMemAlloc of CUDA 2.x, ...) answer VERSION_NOT_SUFFICIENT.
 *
 * Like the real driver, a few names resolve to internal functions that are
 * not exported: cuMemFree (3020 and later), cuMemFreeAsync with the
 * per-thread-stream flag or a cudaVersion below 12000.  They run the
 * driver's implementation directly (sim_mem_api.c), never through the
 * export: a pointer fetched before libgdrx patched the export reaches a
 * free libgdrx sees only if it patched that pointer's target too.
 */
#include "sim_internal.h"
#include "sim_legacy.h"
#include "sim_entry.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

struct proc_entry {
    const char *symbol;
    int         since; /* first CUDA version (1000 * major + 10 * minor) */
    void       *fn;
};

#define P(sym, ver, fn) { sym, ver, (void *)(fn) }
/* Rows of one symbol are adjacent, newest first. */
static const struct proc_entry table[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId),
    P("cuDeviceGetName", 2000, cuDeviceGetName),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    P("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    P("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    P("cuGraphLaunch", 10000, cuGraphLaunch),
    P("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    P("cuGraphCreate", 10000, cuGraphCreate),
    P("cuGraphDestroy", 10000, cuGraphDestroy),
    P("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode),
    P("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode),
    P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    P("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    P("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
#if SIMCU_HAS_CTX_CREATE_V4
    P("cuCtxCreate", 12050, cuCtxCreate_v4),
#endif
    P("cuCtxCreate", 11040, cuCtxCreate_v3),
    P("cuCtxCreate", 3020, cuCtxCreate_v2),
    P("cuCtxCreate", 2000, cuCtxCreate),
    P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    P("cuCtxDestroy", 2000, cuCtxDestroy),
    P("cuCtxGetId", 12000, cuCtxGetId),
    P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemFree", 3020, sim_tbl_cuMemFree_v2),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync),
    P("cuStreamCreate", 2000, cuStreamCreate),
    P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamDestroy", 2000, cuStreamDestroy),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize),
    P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    P("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    P("cuPointerSetAttribute", 6000, cuPointerSetAttribute),
    P("cuMemcpy", 4000, cuMemcpy),
    P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    P("cuMemcpyAsync", 4000, cuMemcpyAsync),
    P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    P("cuMemsetD8", 3020, cuMemsetD8_v2),
    P("cuMemsetD32", 3020, cuMemsetD32_v2),
    P("cuMemGetHandleForAddressRange", 11070, cuMemGetHandleForAddressRange),
    P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuMemMap", 10020, cuMemMap),
    P("cuMemUnmap", 10020, cuMemUnmap),
    P("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle),
    P("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
    P("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
    P("cuMemSetAccess", 10020, cuMemSetAccess),
    P("cuMemGetAccess", 10020, cuMemGetAccess),
    P("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle),
    P("cuMemHostRegister", 4000, cuMemHostRegister_v2),
    P("cuMemHostUnregister", 4000, cuMemHostUnregister),
    P("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),
    P("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle),
    P("cuStreamAddCallback", 5000, cuStreamAddCallback),
    P("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    P("cuGetProcAddress", 11030, cuGetProcAddress),
    P("cuGetErrorString", 6000, cuGetErrorString),
    P("cuGetErrorName", 6000, cuGetErrorName),
};
#undef P

#define PROC_FLAGS (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)

/* Entry points a test took away (simcu_hide_entry_point): answered as by
 * a driver too old to have them.  Own lock: taken by cuGetProcAddress. */
#define SIM_MAX_HIDDEN 4
static pthread_mutex_t hidden_lock = PTHREAD_MUTEX_INITIALIZER;
static char hidden[SIM_MAX_HIDDEN][64];

int simcu_hide_entry_point(const char *symbol, int hide)
{
    int rc = hide ? -ENOSPC : 0;

    if (!symbol || !*symbol || strlen(symbol) >= sizeof(hidden[0]))
        return -EINVAL;
    pthread_mutex_lock(&hidden_lock);
    for (int i = 0; i < SIM_MAX_HIDDEN; i++) {
        if (strcmp(hidden[i], symbol) == 0)
            hidden[i][0] = '\0';
    }
    for (int i = 0; hide && i < SIM_MAX_HIDDEN && rc; i++) {
        if (!hidden[i][0]) {
            strcpy(hidden[i], symbol);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&hidden_lock);
    return rc;
}

static int is_hidden(const char *symbol)
{
    int found = 0;

    pthread_mutex_lock(&hidden_lock);
    for (int i = 0; i < SIM_MAX_HIDDEN && !found; i++)
        found = strcmp(hidden[i], symbol) == 0;
    pthread_mutex_unlock(&hidden_lock);
    return found;
}

/* Works before cuInit, like the real one.  The sim has no per-thread
 * variants (but cuMemFreeAsync's), so the flag selects the same functions. */
static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    CUresult rc = sim_begin("cuGetProcAddress", SIM_NO_INIT);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!symbol || !pfn || (flags & ~(cuuint64_t)PROC_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *pfn = NULL;
    int gone = is_hidden(symbol);
    for (size_t i = 0; !gone && i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].symbol, symbol) != 0)
            continue;
        if (table[i].since <= cudaVersion) {
            *pfn = table[i].fn;
            st = CU_GET_PROC_ADDRESS_SUCCESS;
            break;
        }
        st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    }
    if (*pfn == (void *)cuMemFreeAsync) {
        if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
            *pfn = (void *)sim_ptds_cuMemFreeAsync;
        else if (cudaVersion < 12000)
            *pfn = (void *)sim_v11_cuMemFreeAsync;
    }
    if (status)
        *status = st;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_IMPL CUresult impl_get_proc_v2(const char *symbol, void **pfn, int cudaVersion,
                                   cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}
SIM_ENTRY(cuGetProcAddress_v2, impl_get_proc_v2);

SIM_IMPL CUresult impl_get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
SIM_ENTRY(cuGetProcAddress, impl_get_proc);
