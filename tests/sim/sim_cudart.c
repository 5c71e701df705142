/*
 * sim_cudart.c - the simulated GPU's CUDA runtime: the few cudart calls that
 * UCX's own CUDA transports (cuda_copy, gdr_copy, libucm_cuda) make, over
 * the simulated driver API.  Built as tests/sim/libcudart.so.N (N the
 * toolkit's major) so that a CUDA-enabled UCX, loaded in a test process
 * whose LD_LIBRARY_PATH starts with tests/sim/.libs, runs its CUDA
 * transports on the simulated GPU next to gdrx.  Never installed.
 *
 * SPDX-License-Identifier: MIT
 *
 * What the runtime does that these callers depend on, and so this does:
 * - a call that needs a context uses the calling thread's current one,
 *   else makes device 0's primary context current (retained once, as the
 *   runtime keeps it until exit);
 * - cudaGetDeviceCount initialises the driver; no device is
 *   cudaErrorNoDevice with a count of 0;
 * - streams are the driver's streams (cudaStream_t is CUstream);
 * - events are the driver's (cudaEvent_t is CUevent, tests/sim/sim_event.c);
 * - cudaMalloc/cudaFree are the driver's cuMemAlloc/cuMemFree in the
 *   implicit context (what gdrx's free hooks and UCX's memory hooks see of
 *   a runtime allocation: tests/mpi/gdrx_mpi_threads mixes both APIs);
 *   cudaFree(NULL) succeeds and does nothing;
 * - cudaHostRegister/Unregister are the driver's cuMemHostRegister/
 *   Unregister (the implicit context's registration): device memory is
 *   refused (cudaErrorInvalidValue), a range overlapping a registered one
 *   is cudaErrorHostMemoryAlreadyRegistered; unregistering an address no
 *   registration starts at is cudaErrorHostMemoryNotRegistered.
 * No header of the runtime is needed: its types and codes are restated
 * here (values from NVIDIA's documentation).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef int cudaError_t;
typedef CUstream cudaStream_t;
typedef CUevent cudaEvent_t;

#define cudaSuccess                          0
#define cudaErrorInvalidValue                1
#define cudaErrorMemoryAllocation            2
#define cudaErrorInitializationError         3
#define cudaErrorNoDevice                    100
#define cudaErrorInvalidDevice               101
#define cudaErrorInvalidResourceHandle       400
#define cudaErrorHostMemoryAlreadyRegistered 712
#define cudaErrorHostMemoryNotRegistered     713
#define cudaErrorUnknown                     999

/* The prototypes (this file is the library's only user of them). */
cudaError_t cudaGetDeviceCount(int *count);
const char *cudaGetErrorString(cudaError_t err);
cudaError_t cudaGetLastError(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind,
                            cudaStream_t stream);
cudaError_t cudaMalloc(void **ptr, size_t size);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned flags);
cudaError_t cudaHostUnregister(void *ptr);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local cudaError_t last_error;

static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

/* The driver's errors the callers can see, as the runtime reports them. */
static cudaError_t from_cu(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:                return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:    return ret(cudaErrorInvalidValue);
    case CUDA_ERROR_OUT_OF_MEMORY:    return ret(cudaErrorMemoryAllocation);
    case CUDA_ERROR_NO_DEVICE:        return ret(cudaErrorNoDevice);
    case CUDA_ERROR_INVALID_DEVICE:   return ret(cudaErrorInvalidDevice);
    case CUDA_ERROR_INVALID_HANDLE:   return ret(cudaErrorInvalidResourceHandle);
    case CUDA_ERROR_NOT_INITIALIZED:  return ret(cudaErrorInitializationError);
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
        return ret(cudaErrorHostMemoryAlreadyRegistered);
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
        return ret(cudaErrorHostMemoryNotRegistered);
    default:                          return ret(cudaErrorUnknown);
    }
}

/* The runtime's implicit context: the current one, else device 0's
 * primary context, retained once for the process. */
static cudaError_t need_context(void)
{
    static CUcontext primary;
    CUcontext cur = NULL;
    CUresult rc   = cuInit(0);

    if (rc == CUDA_SUCCESS)
        rc = cuCtxGetCurrent(&cur);
    if (rc != CUDA_SUCCESS || cur != NULL)
        return from_cu(rc);
    pthread_mutex_lock(&lock);
    if (primary == NULL)
        rc = cuDevicePrimaryCtxRetain(&primary, 0);
    cur = primary;
    pthread_mutex_unlock(&lock);
    if (rc == CUDA_SUCCESS)
        rc = cuCtxSetCurrent(cur);
    return from_cu(rc);
}

cudaError_t cudaGetDeviceCount(int *count)
{
    int n      = 0;
    CUresult rc;

    if (count == NULL)
        return ret(cudaErrorInvalidValue);
    rc = cuInit(0);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGetCount(&n);
    *count = (rc == CUDA_SUCCESS) ? n : 0;
    if (rc == CUDA_SUCCESS && n == 0)
        return ret(cudaErrorNoDevice);
    return from_cu(rc);
}

const char *cudaGetErrorString(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:                          return "no error";
    case cudaErrorInvalidValue:                return "invalid argument";
    case cudaErrorMemoryAllocation:            return "out of memory";
    case cudaErrorInitializationError:         return "initialization error";
    case cudaErrorNoDevice:                    return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:               return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:       return "invalid resource handle";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered:     return "pointer does not correspond to a registered memory region";
    default:                                   return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;

    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    cudaError_t e = need_context();

    if (stream == NULL)
        return ret(cudaErrorInvalidValue);
    return e != cudaSuccess ? e : from_cu(cuStreamCreate(stream, flags));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    return from_cu(cuStreamDestroy(stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    cudaError_t e = need_context();

    return e != cudaSuccess ? e : from_cu(cuStreamSynchronize(stream));
}

/* Every kind behaves as cudaMemcpyDefault: unified addressing tells host
 * from device memory. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind,
                            cudaStream_t stream)
{
    cudaError_t e = need_context();

    (void)kind;
    if (e != cudaSuccess)
        return e;
    return from_cu(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst,
                                 (CUdeviceptr)(uintptr_t)src, count, stream));
}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
    cudaError_t e = need_context();
    CUdeviceptr d = 0;
    CUresult rc;

    if (ptr == NULL)
        return ret(cudaErrorInvalidValue);
    if (e != cudaSuccess)
        return e;
    rc     = cuMemAlloc(&d, size);
    *ptr   = (void *)(uintptr_t)d;
    return from_cu(rc);
}

cudaError_t cudaFree(void *ptr)
{
    cudaError_t e = need_context();

    if (e != cudaSuccess || ptr == NULL)
        return e;
    return from_cu(cuMemFree((CUdeviceptr)(uintptr_t)ptr));
}

/* cudaEvent_t is CUevent: an event made by either API is the other's too
 * (UCX makes them with cuEventCreate and destroys them with
 * cudaEventDestroy). */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    cudaError_t e = need_context();

    return e != cudaSuccess ? e : from_cu(cuEventCreate(event, flags));
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    return from_cu(cuEventDestroy(event));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    cudaError_t e = need_context();

    return e != cudaSuccess ? e : from_cu(cuEventRecord(event, stream));
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return from_cu(cuEventQuery(event));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    return from_cu(cuEventSynchronize(event));
}

/* The driver's registration (tests/sim/sim_host.c): the runtime's is
 * cuMemHostRegister in the implicit context. */
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
    if (ptr == NULL || size == 0)
        return ret(cudaErrorInvalidValue);
    if (need_context() != cudaSuccess)
        return last_error;
    return from_cu(cuMemHostRegister(ptr, size, flags));
}

cudaError_t cudaHostUnregister(void *ptr)
{
    return from_cu(cuMemHostUnregister(ptr));
}
