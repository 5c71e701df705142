/*
 * test_sim_vmm.c - the simulated GPU's virtual memory management: create,
 * reserve, map, access, unmap, release, export; IPC handles across
 * processes; and what each refuses.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static CUmemAllocationProp device_prop(int dev, CUmemAllocationHandleType types)
{
    CUmemAllocationProp prop;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = types;
    return prop;
}

/* The whole life: data written through one mapping is seen through a
 * second mapping of the same pages, and survives an unmap while the
 * handle lives. */
static void test_map_unmap_release(void)
{
    CUmemAllocationProp prop = device_prop(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemAccessDesc acc = { .location = prop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemGenericAllocationHandle h;
    CUdeviceptr va, base = 0;
    size_t gran = 0, size = 0;
    unsigned long long flags = 0, id1 = 0, id2 = 0;
    CUcontext owner = (CUcontext)1;
    unsigned char in[4096], out[4096];

    sim_test_setup();
    CU_ASSERT_EQUAL(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gran, 2 * MiB);
    CU_ASSERT_EQUAL_FATAL(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemSetAccess(va, 4 * MiB, &acc, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemGetAccess(&flags, &prop.location, va), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_ASSERT_EQUAL(cuMemGetAddressRange(&base, &size, va + 12345), CUDA_SUCCESS);
    CU_ASSERT(base == va && size == 4 * MiB);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, va),
                    CUDA_SUCCESS);
    CU_ASSERT_PTR_NULL(owner); /* VMM memory belongs to no context */
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, va),
                    CUDA_SUCCESS);
    sim_test_fill(in, sizeof(in), 5);
    CU_ASSERT_EQUAL(cuMemcpyHtoD(va + 2 * MiB, in, sizeof(in)), CUDA_SUCCESS);
    /* the same pages at the second half of the reservation */
    CU_ASSERT_EQUAL(cuMemMap(va + 4 * MiB, 2 * MiB, 2 * MiB, h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemcpyDtoH(out, va + 4 * MiB, sizeof(out)), CUDA_SUCCESS);
    CU_ASSERT(sim_test_check(out, sizeof(out), 5));
    /* cuMemFree refuses mapped memory; a primary reset leaves it */
    CU_ASSERT_EQUAL(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
    sim_test_setup();
    CU_ASSERT_EQUAL(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, va),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_SUCCESS);
    /* released but still mapped at va + 4 MiB: the data lives */
    CU_ASSERT_EQUAL(cuMemcpyDtoH(out, va + 4 * MiB, sizeof(out)), CUDA_SUCCESS);
    CU_ASSERT(sim_test_check(out, sizeof(out), 5));
    /* mapped again: a new buffer id */
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    CU_ASSERT_EQUAL(cuMemUnmap(va + 4 * MiB, 2 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
}

/* What each call refuses, changing nothing. */
static void test_refusals(void)
{
    CUmemAllocationProp prop = device_prop(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle h, bad = 12345;
    CUdeviceptr va;
    int fd = -1;

    sim_test_setup();
    CU_ASSERT_EQUAL(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemCreate(NULL, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = 99;
    CU_ASSERT_EQUAL(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
    prop.location.id = 0;
    CU_ASSERT_EQUAL_FATAL(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemMap(va, 2 * MiB, 0, bad, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* > handle */
    CU_ASSERT_EQUAL(cuMemMap(va + 4 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* nothing mapped */
    CU_ASSERT_EQUAL_FATAL(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* taken */
    CU_ASSERT_EQUAL(cuMemUnmap(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE); /* not one mapping */
    CU_ASSERT_EQUAL(simcu_fail_next("cuMemUnmap", CUDA_ERROR_LAUNCH_FAILED, 1), 0);
    CU_ASSERT_EQUAL(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_LAUNCH_FAILED);
    CU_ASSERT_EQUAL(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 0),
                    CUDA_ERROR_INVALID_VALUE); /* not created exportable */
    CU_ASSERT_EQUAL(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* not all of it */
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
}

/* A handle created exportable as a POSIX fd gives an fd of its pages. */
static void test_export_fd(void)
{
    CUmemAllocationProp prop = device_prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    unsigned char in[256];
    int fd = -1;

    sim_test_setup();
    CU_ASSERT_EQUAL_FATAL(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    sim_test_fill(in, sizeof(in), 9);
    CU_ASSERT_EQUAL(cuMemcpyHtoD(va, in, sizeof(in)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 0),
                    CUDA_SUCCESS);
    CU_ASSERT(fd >= 0);
    if (fd >= 0) {
        void *p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
        CU_ASSERT(p != MAP_FAILED);
        if (p != MAP_FAILED) {
            CU_ASSERT(sim_test_check(p, sizeof(in), 9));
            munmap(p, 2 * MiB);
        }
        close(fd);
    }
    CU_ASSERT_EQUAL(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 2 * MiB), CUDA_SUCCESS);
}

/* IPC across processes: a child opens the parent's allocation at an
 * address of its own, sees the parent's bytes and writes its own that the
 * parent then reads; the import is its own allocation (range), cuMemFree
 * and cuMemUnmap refuse it, cuIpcCloseMemHandle unmaps it once, and the
 * parent's memory is untouched by the close.  The child is forked before
 * the parent initialises CUDA and initialises its own, as the driver
 * requires (it refuses CUDA in a fork child of a process that used it);
 * the handle comes over a pipe.  Exit status: the child's failed checks.
 * The exported allocation starts its object, or sits inside one after a
 * smaller allocation (the driver suballocates: the import is then the
 * allocation at its offset, every byte of it reachable, UCX's cuda_ipc
 * copies it whole). */
static int ipc_child(int rfd, size_t len)
{
    CUipcMemHandle handle;
    CUcontext ctx;
    unsigned char want[8192], got[8192];
    CUdeviceptr p = 0, base = 0;
    size_t size = 0;
    int bad = 0;

    if (read(rfd, &handle, sizeof(handle)) != (ssize_t)sizeof(handle))
        return 100; /* the parent failed before sending it */
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 101;
    bad += cuIpcOpenMemHandle_v2(&p, handle, 2) != CUDA_ERROR_INVALID_VALUE; /* bad flags */
    bad += cuIpcOpenMemHandle_v2(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS;
    bad += p == 0;
    bad += cuMemGetAddressRange(&base, &size, p + 100) != CUDA_SUCCESS || base != p || size != len;
    sim_test_fill(want, sizeof(want), 7);
    bad += cuMemcpyDtoH(got, p, sizeof(got)) != CUDA_SUCCESS || memcmp(got, want, sizeof(got));
    sim_test_fill(want, sizeof(want), 8);
    bad += cuMemcpyHtoD(p + 4096, want, sizeof(want)) != CUDA_SUCCESS;
    bad += cuMemcpyDtoH(got, p + len - sizeof(got), sizeof(got)) != CUDA_SUCCESS; /* its end */
    bad += cuMemcpyDtoH(got, p + len - sizeof(got) + 1, sizeof(got)) == CUDA_SUCCESS;
    bad += cuMemFree(p) != CUDA_ERROR_INVALID_VALUE;       /* not cuMemAlloc's */
    bad += cuMemUnmap(p, len) != CUDA_ERROR_INVALID_VALUE; /* nor a VMM mapping */
    bad += cuIpcCloseMemHandle(p) != CUDA_SUCCESS;
    bad += cuIpcCloseMemHandle(p) != CUDA_ERROR_INVALID_VALUE; /* once */
    bad += cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS;
    return bad;
}

static void ipc_case(size_t before, size_t len)
{
    unsigned char in[8192], out[8192];
    CUipcMemHandle handle;
    CUdeviceptr d, other, first = 0, base = 0;
    size_t size = 0;
    int status = -1, fds[2];

    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        _exit(ipc_child(fds[0], len));
    }
    close(fds[0]);
    sim_test_setup();
    if (before)
        CU_ASSERT_EQUAL_FATAL(cuMemAlloc(&first, before), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAlloc(&d, len), CUDA_SUCCESS);
    /* the case it names: d at the start of an object, or inside one */
    CU_ASSERT_EQUAL(cuMemGetAddressRange(&base, &size, d), CUDA_SUCCESS);
    if (before)
        CU_ASSERT_EQUAL(d, first + before);
    CU_ASSERT_EQUAL_FATAL(cuMemAlloc(&other, 4096), CUDA_SUCCESS);
    sim_test_fill(in, sizeof(in), 7);
    CU_ASSERT_EQUAL(cuMemcpyHtoD(d, in, sizeof(in)), CUDA_SUCCESS);
    /* a pointer inside the allocation names all of it (a real GPU gives
     * the base's handle: openucx/ucx#11724; UCX 1.22's cuda_ipc passes
     * the pointer it registers) */
    CU_ASSERT_EQUAL(cuIpcGetMemHandle(&handle, d + 4097), CUDA_SUCCESS);
    CUipcMemHandle at_base;
    CU_ASSERT_EQUAL(cuIpcGetMemHandle(&at_base, d), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(&handle, &at_base, sizeof(handle)), 0);
    CU_ASSERT_EQUAL(cuIpcGetMemHandle(&at_base, (CUdeviceptr)(uintptr_t)in), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(write(fds[1], &handle, sizeof(handle)), (ssize_t)sizeof(handle));
    close(fds[1]);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sim_test_fill(in, sizeof(in), 8);
    CU_ASSERT_EQUAL(cuMemcpyDtoH(out, d + 4096, sizeof(out)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(in, out, sizeof(out)), 0); /* the child's bytes */
    CU_ASSERT_EQUAL(cuMemFree(d), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemFree(other), CUDA_SUCCESS);
    if (before)
        CU_ASSERT_EQUAL(cuMemFree(first), CUDA_SUCCESS);
}

static void test_ipc(void)
{
    ipc_case(0, 3 * MiB + 4096);
}

static void test_ipc_suballocated(void)
{
    ipc_case(64 * 1024, MiB);
}

/* cuMemRetainAllocationHandle: the mapping's handle, one more reference;
 * memory cuMemMap did not map is refused (UCX's VMM detection). */
static void test_retain_handle(void)
{
    CUmemAllocationProp prop = device_prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), got;
    CUmemGenericAllocationHandle h, r1 = 0, r2 = 0;
    CUdeviceptr va, async;
    static char host[64];

    sim_test_setup();
    CUdeviceptr d = sim_test_alloc(4096);
    CU_ASSERT_EQUAL_FATAL(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)(va + 3 * MiB)),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(r1, h);
    memset(&got, 0xff, sizeof(got));
    CU_ASSERT_EQUAL(cuMemGetAllocationPropertiesFromHandle(&got, r1), CUDA_SUCCESS);
    CU_ASSERT(got.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
              got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0 &&
              got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    /* two references: the creation's and the retain's */
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemGetAllocationPropertiesFromHandle(&got, h), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(r1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    /* released but mapped: retaining gives it back */
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r2, (void *)(uintptr_t)va), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(r2, h);
    CU_ASSERT_EQUAL(cuMemRelease(r2), CUDA_SUCCESS);
    /* not VMM memory */
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)d),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL_FATAL(cuMemAllocAsync(&async, MiB, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)async),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r1, host), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(NULL, (void *)(uintptr_t)va),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)va),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemFreeAsync(async, NULL), CUDA_SUCCESS);
}

const struct gdrx_test_case sim_vmm_cases[] = {
    GDRX_TEST_CASE(test_map_unmap_release),
    GDRX_TEST_CASE(test_refusals),
    GDRX_TEST_CASE(test_export_fd),
    GDRX_TEST_CASE(test_ipc),
    GDRX_TEST_CASE(test_ipc_suballocated),
    GDRX_TEST_CASE(test_retain_handle),
    GDRX_TEST_END,
};
