/*
 * sim_errors.c - cuGetErrorName and cuGetErrorString.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every CUresult of cuda.h has its name; the codes the sim produces and a
 * few common ones have a short description, the others describe
 * themselves by name.  An unknown code gives CUDA_ERROR_INVALID_VALUE and
 * *pStr = NULL, as the real driver does.
 */
#include "sim_internal.h"

#include <stddef.h>

struct error_text {
    CUresult    code;
    const char *name;
    const char *desc;
};

/* Codes CUDA 12.8 and later name; an older cuda.h (Debian's 12.4, which
 * config/deps.sh can provide) lacks them, and the table then omits them. */
#define GDRX_SIM_CUDA_12_8 (CUDA_VERSION >= 12080)
#define E(code, desc) { code, #code, desc }
static const struct error_text errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, NULL),
    E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, NULL),
    E(CUDA_ERROR_PROFILER_ALREADY_STARTED, NULL),
    E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, NULL),
    E(CUDA_ERROR_STUB_LIBRARY, NULL),
#if GDRX_SIM_CUDA_12_8
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, NULL),
#endif
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, NULL),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, NULL),
    E(CUDA_ERROR_INVALID_IMAGE, NULL),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, NULL),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, NULL),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, NULL),
    E(CUDA_ERROR_ALREADY_MAPPED, NULL),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, NULL),
    E(CUDA_ERROR_ALREADY_ACQUIRED, NULL),
    E(CUDA_ERROR_NOT_MAPPED, NULL),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, NULL),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, NULL),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, NULL),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, NULL),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, NULL),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, NULL),
    E(CUDA_ERROR_INVALID_PTX, NULL),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, NULL),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, NULL),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, NULL),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, NULL),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, NULL),
    E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, NULL),
    E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, NULL),
#if GDRX_SIM_CUDA_12_8
    E(CUDA_ERROR_CONTAINED, NULL),
#endif
    E(CUDA_ERROR_INVALID_SOURCE, NULL),
    E(CUDA_ERROR_FILE_NOT_FOUND, NULL),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, NULL),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, NULL),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, NULL),
    E(CUDA_ERROR_LOSSY_QUERY, NULL),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, NULL),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, NULL),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, NULL),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, NULL),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, NULL),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, NULL),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, NULL),
    E(CUDA_ERROR_TOO_MANY_PEERS, NULL),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, NULL),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, NULL),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, NULL),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, NULL),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, NULL),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, NULL),
    E(CUDA_ERROR_INVALID_PC, NULL),
    E(CUDA_ERROR_LAUNCH_FAILED, NULL),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, NULL),
#if GDRX_SIM_CUDA_12_8
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK, NULL),
#endif
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, NULL),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, NULL),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, NULL),
    E(CUDA_ERROR_MPS_CONNECTION_FAILED, NULL),
    E(CUDA_ERROR_MPS_RPC_FAILURE, NULL),
    E(CUDA_ERROR_MPS_SERVER_NOT_READY, NULL),
    E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, NULL),
    E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, NULL),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED, NULL),
    E(CUDA_ERROR_CDP_NOT_SUPPORTED, NULL),
    E(CUDA_ERROR_CDP_VERSION_MISMATCH, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, NULL),
    E(CUDA_ERROR_CAPTURED_EVENT, NULL),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, NULL),
    E(CUDA_ERROR_TIMEOUT, NULL),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, NULL),
    E(CUDA_ERROR_EXTERNAL_DEVICE, NULL),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, NULL),
    E(CUDA_ERROR_FUNCTION_NOT_LOADED, NULL),
    E(CUDA_ERROR_INVALID_RESOURCE_TYPE, NULL),
    E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, NULL),
#if GDRX_SIM_CUDA_12_8
    E(CUDA_ERROR_KEY_ROTATION, NULL),
#endif
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct error_text *find_error(CUresult code)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

/* Both work before cuInit, like the real ones. */
static CUresult error_text(const char *function_name, CUresult error, const char **pStr,
                           int want_desc)
{
    CUresult rc = sim_begin_out(function_name, SIM_NO_INIT, pStr);
    if (rc != CUDA_SUCCESS)
        return rc;
    const struct error_text *e = find_error(error);
    if (!e) {
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = want_desc && e->desc ? e->desc : e->name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    return error_text("cuGetErrorName", error, pStr, 0);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    return error_text("cuGetErrorString", error, pStr, 1);
}
