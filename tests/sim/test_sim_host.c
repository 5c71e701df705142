/*
 * test_sim_host.c - registered host memory on the simulated GPU
 * (cuMemHostRegister/Unregister, sim_host.c): what pointer queries say of
 * it, and what registering refuses.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <stdlib.h>
#include <string.h>

#define BUF (64 * KiB)

/* Registered, queried, refused twice, unregistered: as UCX's cuda_copy
 * registers a host buffer (PORTABLE) and finds it host memory after. */
static void test_register_query_unregister(void)
{
    char *buf = aligned_alloc(4096, BUF);
    CUcontext ctx = NULL, owner = NULL;
    unsigned int type = 0;
    int ordinal = -1, managed = 7;
    void *hostp = NULL, *devp = NULL;

    CU_ASSERT_FATAL(buf != NULL);
    sim_test_setup();
    CU_ASSERT_EQUAL(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          (CUdeviceptr)(uintptr_t)buf),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL_FATAL(cuMemHostRegister(buf, BUF, CU_MEMHOSTREGISTER_PORTABLE),
                          CUDA_SUCCESS);
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)(buf + 100);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(type, CU_MEMORYTYPE_HOST);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(owner, ctx);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&hostp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p),
                    CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(hostp, buf + 100);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&devp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p),
                    CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(devp, buf + 100);
    /* the multi-attribute query UCX's cuda_copy makes */
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_CONTEXT };
    type = 0;
    owner = NULL;
    void *data[] = { &type, &managed, &ordinal, &owner };
    CU_ASSERT_EQUAL(cuPointerGetAttributes(4, attrs, data, p), CUDA_SUCCESS);
    CU_ASSERT(type == CU_MEMORYTYPE_HOST && managed == 0 && ordinal == 0 && owner == ctx);
    /* overlapping ranges, and an address no registration starts at */
    CU_ASSERT_EQUAL(cuMemHostRegister(buf + 4096, 4096, 0),
                    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
                    CUDA_ERROR_INVALID_VALUE);
    /* registered again, now it is free */
    CU_ASSERT_EQUAL(cuMemHostRegister(buf + 4096, 4096, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf + 4096), CUDA_SUCCESS);
    free(buf);
}

static void test_register_refusals(void)
{
    static char buf[8192];
    CUcontext popped;

    sim_test_setup();
    CUdeviceptr d = sim_test_alloc(4096);
    CU_ASSERT_EQUAL(cuMemHostRegister((void *)(uintptr_t)d, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemHostRegister(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemHostRegister(buf, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemHostRegister(buf, sizeof(buf), 0x100), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemHostRegister(buf, sizeof(buf), 0), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

/* A registration goes with its context (the documentation: it vanishes
 * with the device's state). */
static void test_register_dies_with_context(void)
{
    static char buf[8192];
    unsigned int type = 0;

    sim_test_setup();
    CU_ASSERT_EQUAL_FATAL(cuMemHostRegister(buf, sizeof(buf), 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          (CUdeviceptr)(uintptr_t)buf),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

const struct gdrx_test_case sim_host_cases[] = {
    GDRX_TEST_CASE(test_register_query_unregister),
    GDRX_TEST_CASE(test_register_refusals),
    GDRX_TEST_CASE(test_register_dies_with_context),
    GDRX_TEST_END,
};
