/*
 * test_sim_pointer.c - the pointer attributes UCX 1.22's cuda_ipc and
 * cuda_copy read (IS_LEGACY_CUDA_IPC_CAPABLE, ALLOWED_HANDLE_TYPES,
 * MEMPOOL_HANDLE, CONTEXT) for each kind of device memory, as an H100
 * answers them (results/h100-defaults-a33064a/graph-probe.txt), and the
 * default memory pool's refusals.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <string.h>

struct ipc_attrs {
    int          legacy;
    uint64_t     handle_types;
    CUmemoryPool pool;
};

/* UCX's cuda_ipc query: an int, a uint64_t and a pointer, pre-filled with
 * garbage so that a short write shows. */
static CUresult query(CUdeviceptr p, struct ipc_attrs *out)
{
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                    CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                                    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE };
    void *data[] = { &out->legacy, &out->handle_types, &out->pool };

    memset(out, 0xa5, sizeof(*out));
    return cuPointerGetAttributes(3, attrs, data, p);
}

static void test_ipc_attributes_by_kind(void)
{
    struct ipc_attrs a;
    CUmemoryPool pool = NULL;
    CUcontext owner = (CUcontext)1;
    CUdeviceptr d, async;

    sim_test_setup();
    CU_ASSERT_EQUAL(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(pool);

    d = sim_test_alloc(3 * MiB);
    CU_ASSERT_EQUAL(query(d, &a), CUDA_SUCCESS);
    CU_ASSERT(a.legacy == 1 && a.handle_types == 0 && a.pool == NULL);

    CU_ASSERT_EQUAL_FATAL(cuMemAllocAsync(&async, MiB, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(query(async + 64, &a), CUDA_SUCCESS);
    CU_ASSERT(a.legacy == 0 && a.handle_types == 0 && a.pool == pool);
    /* pool memory is the device's, no context's */
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, async),
                    CUDA_SUCCESS);
    CU_ASSERT_PTR_NULL(owner);
    uint64_t types = 7;
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(types, 0);

    /* VMM memory: what cuMemCreate asked for */
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_ASSERT_EQUAL_FATAL(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(query(va + 4096, &a), CUDA_SUCCESS);
    CU_ASSERT(a.legacy == 0 && a.pool == NULL &&
              a.handle_types == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);

    /* freed memory: the single query fails, the multiple one reads zeros */
    CU_ASSERT_EQUAL(cuMemFree(d), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(query(d, &a), CUDA_SUCCESS);
    CU_ASSERT(a.legacy == 0 && a.handle_types == 0 && a.pool == NULL);

    CU_ASSERT_EQUAL(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 2 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemFreeAsync(async, NULL), CUDA_SUCCESS);
}

/* The default pool exports nothing, cannot be destroyed, and no pool or
 * pointer the sim handed out can be imported. */
static void test_default_pool_refusals(void)
{
    CUmemoryPool pool = NULL, imported = NULL;
    CUmemPoolPtrExportData share;
    CUdeviceptr async, got = 0;
    int fd = -1;
    CUmemAccessDesc acc = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };

    sim_test_setup();
    CU_ASSERT_EQUAL(cuDeviceGetDefaultMemPool(&pool, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT_EQUAL_FATAL(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAllocAsync(&async, MiB, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemPoolExportToShareableHandle(&fd, pool,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemPoolExportPointer(&share, async), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemPoolImportFromShareableHandle(&imported, (void *)(intptr_t)0,
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                    CUDA_ERROR_INVALID_VALUE);
    memset(&share, 0, sizeof(share));
    CU_ASSERT_EQUAL(cuMemPoolImportPointer(&got, pool, &share), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemPoolSetAccess(pool, &acc, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemPoolSetAccess((CUmemoryPool)&acc, &acc, 1), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemFreeAsync(async, NULL), CUDA_SUCCESS);
}

const struct gdrx_test_case sim_pointer_cases[] = {
    GDRX_TEST_CASE(test_ipc_attributes_by_kind),
    GDRX_TEST_CASE(test_default_pool_refusals),
    GDRX_TEST_END,
};
