/*
 * test_sim_memory.c - the sim's memory model: PROT_NONE device pointers,
 * dma-buf aliasing, real frees, address reuse, sub-allocation, copies.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct simcu_alloc_info lookup(CUdeviceptr p)
{
    struct simcu_alloc_info info;
    memset(&info, 0, sizeof(info));
    CU_ASSERT_FATAL(simcu_lookup(p, &info) == 0);
    close(info.memfd);
    return info;
}

static uint64_t object_of(CUdeviceptr p)
{
    return lookup(p).object_id;
}

static int export_range(CUdeviceptr p, size_t size, int *fd)
{
    return cuMemGetHandleForAddressRange(fd, p, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
}

/* Map an exported fd the way the dmabuf backend does: at its position. */
static void *map_export(int fd, size_t size)
{
    off_t pos = lseek(fd, 0, SEEK_CUR);
    CU_ASSERT_FATAL(pos >= 0);
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pos);
    CU_ASSERT_FATAL(m != MAP_FAILED);
    return m;
}

static void test_device_pointer_faults(void)
{
    sim_test_setup();
    CUdeviceptr big = sim_test_alloc(4 * MiB);
    CUdeviceptr small = sim_test_alloc(100);
    CU_ASSERT(sim_test_read_faults(big));
    CU_ASSERT(sim_test_write_faults(big + 3 * MiB));
    CU_ASSERT(sim_test_read_faults(small));
    CU_ASSERT(sim_test_write_faults(small + 99));
    /* Still PROT_NONE after a copy and after a free. */
    char buf[100] = {1};
    CU_ASSERT(cuMemcpyHtoD(small, buf, sizeof(buf)) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_read_faults(small));
    CU_ASSERT(cuMemFree(big) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_read_faults(big));
}

static void test_dmabuf_aliases_device_memory(void)
{
    sim_test_setup();
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 4 * MiB, n = 8 * page;
    unsigned char *buf = malloc(len), *back = malloc(n);
    CU_ASSERT_FATAL(buf && back);
    CUdeviceptr p = sim_test_alloc(len);
    sim_test_fill(buf, len, 1);
    CU_ASSERT(cuMemcpyHtoD(p, buf, len) == CUDA_SUCCESS);

    CUdeviceptr start = p + 2 * MiB + 3 * page;
    int fd = -1;
    CU_ASSERT_FATAL(export_range(start, n, &fd) == CUDA_SUCCESS);
    struct simcu_alloc_info info = lookup(start);
    CU_ASSERT(lseek(fd, 0, SEEK_CUR) == info.memfd_offset + (off_t)(start - info.object_va));
    CU_ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CU_ASSERT((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR);

    unsigned char *m = map_export(fd, n);
    CU_ASSERT(memcmp(m, buf + (start - p), n) == 0);
    memset(m + page, 0xab, page);
    CU_ASSERT(cuMemcpyDtoH(back, start + page, page) == CUDA_SUCCESS);
    CU_ASSERT(back[0] == 0xab && back[page - 1] == 0xab);
    CU_ASSERT(cuMemsetD8(start, 0x11, 1) == CUDA_SUCCESS);
    CU_ASSERT(m[0] == 0x11);

    /* A second export is a new open file description: its own position. */
    int fd2 = -1;
    CU_ASSERT_FATAL(export_range(p, page, &fd2) == CUDA_SUCCESS);
    CU_ASSERT(lseek(fd2, 0, SEEK_CUR) == info.memfd_offset + (off_t)(p - info.object_va));
    CU_ASSERT(lseek(fd, 0, SEEK_CUR) == info.memfd_offset + (off_t)(start - info.object_va));
    munmap(m, n);
    close(fd);
    close(fd2);
    free(buf);
    free(back);
}

static void test_dmabuf_of_suballocation(void)
{
    sim_test_setup();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CUdeviceptr a = sim_test_alloc(page);
    CUdeviceptr b = sim_test_alloc(page);
    CU_ASSERT_FATAL(object_of(a) == object_of(b));
    CU_ASSERT(b % (64 * KiB) != 0);
    unsigned char data[64];
    sim_test_fill(data, sizeof(data), 5);
    CU_ASSERT(cuMemcpyHtoD(b, data, sizeof(data)) == CUDA_SUCCESS);
    int fd = -1;
    CU_ASSERT_FATAL(export_range(b, page, &fd) == CUDA_SUCCESS);
    unsigned char *m = map_export(fd, page);
    CU_ASSERT(sim_test_check(m, sizeof(data), 5));
    munmap(m, page);
    close(fd);
}

static void test_dmabuf_export_validation(void)
{
    sim_test_setup();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CUdeviceptr p = sim_test_alloc(2 * MiB);
    int fd = -1;
    CU_ASSERT(export_range(p + 1, page, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(export_range(p, page + 1, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(export_range(p, 0, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(export_range(p + page, 2 * MiB, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(export_range(p, 4 * MiB, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemGetHandleForAddressRange(NULL, p, page, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemGetHandleForAddressRange(&fd, p, page, (CUmemRangeHandleType)2, 0) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemGetHandleForAddressRange(&fd, p, page, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 4) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(export_range((CUdeviceptr)(uintptr_t)&fd & ~(uintptr_t)(page - 1), page, &fd) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(fd == -1);
    CU_ASSERT(cuMemGetHandleForAddressRange(&fd, p, page, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                            CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) ==
              CUDA_SUCCESS);
    close(fd);
    /* the last successful export's flags, per thread; failures change nothing */
    unsigned long long flags = 0;
    CU_ASSERT(simcu_last_export(NULL) == -EINVAL);
    CU_ASSERT(simcu_last_export(&flags) == 0 && flags == CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    CU_ASSERT(export_range(p + 1, page, &fd) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(simcu_last_export(&flags) == 0 && flags == CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    CU_ASSERT_FATAL(export_range(p, page, &fd) == CUDA_SUCCESS);
    close(fd);
    CU_ASSERT(simcu_last_export(&flags) == 0 && flags == 0);
    CU_ASSERT(cuMemFree(p) == CUDA_SUCCESS);
    CU_ASSERT(export_range(p, page, &fd) == CUDA_ERROR_INVALID_VALUE);
}

/* SIMCU_COHERENT=1, read at each call: the attributes a coherent GPU
 * (Grace Hopper) reports are 1, and 0 again without it. */
static void test_coherent_knob(void)
{
    static const CUdevice_attribute attrs[] = {
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
    };
    sim_test_setup();
    for (int on = 1; on >= 0; on--) {
        if (on)
            setenv("SIMCU_COHERENT", "1", 1);
        else
            unsetenv("SIMCU_COHERENT");
        for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
            int v = -1;
            CU_ASSERT(cuDeviceGetAttribute(&v, attrs[i], 0) == CUDA_SUCCESS);
            CU_ASSERT_EQUAL(v, on);
        }
    }
}

static void test_free_really_frees(void)
{
    sim_test_setup();
    CUdeviceptr p = sim_test_alloc(2 * MiB);
    uint64_t id = object_of(p);
    char buf[16] = {0};
    CU_ASSERT(sim_test_fd_held(id) == 1);
    CU_ASSERT(sim_test_mapping_held(id) == 1);

    CU_ASSERT(cuMemFree(p) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_fd_held(id) == 0);
    CU_ASSERT(sim_test_mapping_held(id) == 0);
    CU_ASSERT(cuMemcpyHtoD(p, buf, sizeof(buf)) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoH(buf, p, sizeof(buf)) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemsetD8(p, 0, 1) == CUDA_ERROR_INVALID_VALUE);
    unsigned int type = 0;
    CU_ASSERT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemGetAddressRange(NULL, NULL, p) == CUDA_ERROR_NOT_FOUND);
    struct simcu_alloc_info info;
    CU_ASSERT(simcu_lookup(p, &info) == -ENOENT);
    CU_ASSERT(cuMemFree(p) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(simcu_live_allocations() == 0);
    CU_ASSERT(simcu_live_objects() == 0);
}

static void test_export_outlives_free(void)
{
    sim_test_setup();
    size_t len = 2 * MiB;
    unsigned char *buf = malloc(len);
    CU_ASSERT_FATAL(buf != NULL);
    CUdeviceptr p = sim_test_alloc(len);
    uint64_t id = object_of(p);
    sim_test_fill(buf, len, 7);
    CU_ASSERT(cuMemcpyHtoD(p, buf, len) == CUDA_SUCCESS);
    int fd = -1;
    CU_ASSERT_FATAL(export_range(p, len, &fd) == CUDA_SUCCESS);

    CU_ASSERT(cuMemFree(p) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_fd_held(id) == 1);      /* only the export */
    CU_ASSERT(sim_test_mapping_held(id) == 0); /* the sim's view is gone */
    unsigned char *m = map_export(fd, len);
    CU_ASSERT(sim_test_check(m, len, 7));

    /* The same address comes back, on new pages. */
    CUdeviceptr q = sim_test_alloc(len);
    CU_ASSERT(q == p);
    CU_ASSERT(object_of(q) != id);
    sim_test_fill(buf, len, 8);
    CU_ASSERT(cuMemcpyHtoD(q, buf, len) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_check(m, len, 7));
    memset(m, 0, 4096);
    CU_ASSERT(cuMemcpyDtoH(buf, q, len) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_check(buf, len, 8));
    munmap(m, len);
    close(fd);
    CU_ASSERT(sim_test_fd_held(id) == 0);
    CU_ASSERT(sim_test_mapping_held(id) == 0);
    free(buf);
}

static uint64_t buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CU_ASSERT(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
    return id;
}

static void test_address_reuse(void)
{
    sim_test_setup();
    CUdeviceptr big = sim_test_alloc(3 * MiB), small = sim_test_alloc(1000);
    uint64_t big_id = buffer_id(big), small_id = buffer_id(small);
    CU_ASSERT(cuMemFree(big) == CUDA_SUCCESS);
    CU_ASSERT(cuMemFree(small) == CUDA_SUCCESS);
    CUdeviceptr small2 = sim_test_alloc(1000), big2 = sim_test_alloc(3 * MiB);
    CU_ASSERT(big2 == big);
    CU_ASSERT(small2 == small);
    CU_ASSERT(buffer_id(big2) != big_id && buffer_id(big2) != small_id);
    CU_ASSERT(buffer_id(small2) != small_id && buffer_id(small2) != big_id);

    /* A freed offset in a still-live object is reusable at once. */
    CUdeviceptr x = sim_test_alloc(1000);
    CU_ASSERT(cuMemFree(small2) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_alloc(1000) == small2);

    CU_ASSERT(simcu_set_va_reuse(0) == 0);
    CU_ASSERT(cuMemFree(big2) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_alloc(3 * MiB) != big);
    CU_ASSERT(cuMemFree(x) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_alloc(1000) != x);
}

static void test_suballocation(void)
{
    sim_test_setup();
    CUdeviceptr a = sim_test_alloc(4 * KiB), b = sim_test_alloc(4 * KiB);
    struct simcu_alloc_info ia = lookup(a), ib = lookup(b);
    CU_ASSERT(ia.object_id == ib.object_id);
    CU_ASSERT(ia.offset != ib.offset);
    CU_ASSERT(ia.object_size == 2 * MiB);
    CU_ASSERT(ia.object_va % (2 * MiB) == 0);
    CU_ASSERT(b % (64 * KiB) != 0);
    CU_ASSERT(b == ib.object_va + ib.offset);
    CU_ASSERT(ib.alloc_base == b && ib.alloc_size == 4 * KiB);
    /* 512-byte alignment by default. */
    CUdeviceptr c = sim_test_alloc(100), d = sim_test_alloc(100);
    CU_ASSERT(d - c == 512);
    CU_ASSERT(object_of(c) == ia.object_id);

    CU_ASSERT(simcu_set_suballoc_alignment(3) == -EINVAL);
    CU_ASSERT(simcu_set_suballoc_alignment(0) == -EINVAL);
    CU_ASSERT(simcu_set_suballoc_alignment(4 * MiB) == -EINVAL);
    CU_ASSERT(simcu_set_suballoc_alignment(64 * KiB) == 0);
    CU_ASSERT(lookup(sim_test_alloc(100)).offset % (64 * KiB) == 0);

    /* At or above the threshold: an object of its own, 2 MiB rounded. */
    CUdeviceptr e = sim_test_alloc(2 * MiB + 1);
    struct simcu_alloc_info ie = lookup(e);
    CU_ASSERT(ie.object_va == e && ie.offset == 0 && ie.object_size == 4 * MiB);

    CU_ASSERT(simcu_set_suballoc_threshold(64 * KiB) == 0);
    CUdeviceptr f = sim_test_alloc(128 * KiB);
    CU_ASSERT(lookup(f).object_va == f);
    CU_ASSERT(lookup(f).object_size == 2 * MiB);

    CU_ASSERT(simcu_set_suballoc_threshold(0) == 0);
    CUdeviceptr g = sim_test_alloc(4 * KiB), h = sim_test_alloc(4 * KiB);
    CU_ASSERT(object_of(g) != object_of(h));
    CU_ASSERT(g % (2 * MiB) == 0 && h % (2 * MiB) == 0);
}

static void test_copies_and_memset(void)
{
    sim_test_setup();
    enum { N = 10000 };
    static unsigned char buf[N], back[N];
    CUdeviceptr p = sim_test_alloc(N), q = sim_test_alloc(N);
    sim_test_fill(buf, N, 11);
    CU_ASSERT(cuMemcpyHtoD(p, buf, N) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoD(q, p, N) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoH(back, q, N) == CUDA_SUCCESS);
    CU_ASSERT(memcmp(back, buf, N) == 0);

    /* Unified cuMemcpy in every direction. */
    memset(back, 0, N);
    CU_ASSERT(cuMemcpy((CUdeviceptr)(uintptr_t)back, p, N) == CUDA_SUCCESS);
    CU_ASSERT(memcmp(back, buf, N) == 0);
    CU_ASSERT(cuMemsetD8(q, 0, N) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpy(q + 10, (CUdeviceptr)(uintptr_t)buf, 20) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpy(q + 100, q + 10, 20) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoH(back, q, N) == CUDA_SUCCESS);
    CU_ASSERT(back[9] == 0 && memcmp(back + 10, buf, 20) == 0 && back[30] == 0);
    CU_ASSERT(memcmp(back + 100, buf, 20) == 0 && back[120] == 0);

    CU_ASSERT(cuMemsetD8(p + 1, 0x5a, 9) == CUDA_SUCCESS);
    CU_ASSERT(cuMemsetD32(p + 12, 0x01020304u, 10) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoH(back, p, 64) == CUDA_SUCCESS);
    CU_ASSERT(back[0] == buf[0] && back[1] == 0x5a && back[9] == 0x5a && back[10] == buf[10]);
    uint32_t w;
    memcpy(&w, back + 12, 4);
    CU_ASSERT(w == 0x01020304u);
    memcpy(&w, back + 48, 4);
    CU_ASSERT(w == 0x01020304u);
    CU_ASSERT(back[52] == buf[52]);
    CU_ASSERT(cuMemsetD32(p + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyHtoD(p, buf, 0) == CUDA_SUCCESS);
}

static void test_out_of_range_changes_nothing(void)
{
    sim_test_setup();
    enum { N = 10000 };
    static unsigned char buf[N + 8], back[N];
    CUdeviceptr p = sim_test_alloc(N), q = sim_test_alloc(N);
    CU_ASSERT(cuMemsetD8(p, 0x33, N) == CUDA_SUCCESS);
    memset(buf, 0x44, sizeof(buf));
    CU_ASSERT(cuMemcpyHtoD(p, buf, N + 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyHtoD(p + N - 1, buf, 2) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoH(buf, p + 9999, 2) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoD(q, p + 1, N) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoD(p, q, N + 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemsetD8(p, 0, N + 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemsetD32(p, 0, N / 4 + 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemsetD32(p, 0, SIZE_MAX / 2) == CUDA_ERROR_INVALID_VALUE);
    /* Host memory where device memory is required. */
    CU_ASSERT(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)back, buf, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoH(back, (CUdeviceptr)(uintptr_t)buf, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyHtoD(p, NULL, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoH(NULL, p, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemcpyDtoH(back, p, N) == CUDA_SUCCESS);
    for (int i = 0; i < N; i++)
        if (back[i] != 0x33) {
            CU_FAIL("a failed copy changed device memory");
            break;
        }
}

static void test_counters_return_to_zero(void)
{
    sim_test_setup();
    CU_ASSERT(simcu_live_allocations() == 0 && simcu_live_objects() == 0);
    CUdeviceptr p[5] = {sim_test_alloc(10), sim_test_alloc(20), sim_test_alloc(30),
                        sim_test_alloc(2 * MiB), sim_test_alloc(5 * MiB)};
    CU_ASSERT(simcu_live_allocations() == 5);
    CU_ASSERT(simcu_live_objects() == 3);
    for (int i = 0; i < 5; i++)
        CU_ASSERT(cuMemFree(p[i]) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_allocations() == 0);
    CU_ASSERT(simcu_live_objects() == 0);
}

static void test_context_destruction_frees(void)
{
    sim_test_setup();
    sim_test_alloc(10);
    sim_test_alloc(3 * MiB);
    CU_ASSERT(cuDevicePrimaryCtxReset(0) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_allocations() == 0 && simcu_live_objects() == 0);
    CUdeviceptr p = sim_test_alloc(10);
    CU_ASSERT(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_allocations() == 0 && simcu_live_objects() == 0);
    CU_ASSERT(cuMemAlloc(&p, 10) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuDevicePrimaryCtxRelease(0) == CUDA_ERROR_INVALID_CONTEXT);
    CUcontext ctx;
    CU_ASSERT(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    CU_ASSERT(cuMemAlloc(&p, 10) == CUDA_SUCCESS);
}

/* simcu_place_next_alloc: the calling thread's next allocation in an
 * object of its own, at a chosen free address or refused. */
static void test_place_next_alloc(void)
{
    sim_test_setup();
    CU_ASSERT(simcu_place_next_alloc(4 * KiB, 0) == -EINVAL);
    CU_ASSERT(simcu_place_next_alloc(0, 2) == -EINVAL);
    CUdeviceptr pool = sim_test_alloc(4 * KiB), x = sim_test_alloc(4 * MiB);
    CUdeviceptr y = sim_test_alloc(2 * MiB), p;

    /* 0: a small one gets a pool object of its own, not pool's */
    CU_ASSERT(simcu_place_next_alloc(0, 0) == 0);
    CUdeviceptr own = sim_test_alloc(4 * KiB);
    CU_ASSERT(object_of(own) != object_of(pool));
    CU_ASSERT(own % (2 * MiB) == 0);
    /* consumed: the next small one goes where the allocator puts it */
    CU_ASSERT(object_of(sim_test_alloc(4 * KiB)) == object_of(own));

    /* freed VA, taken in any order and in parts, though y's hole is on
     * top of the LIFO stack */
    CU_ASSERT(cuMemFree(x) == CUDA_SUCCESS);
    CU_ASSERT(cuMemFree(y) == CUDA_SUCCESS);
    CU_ASSERT(simcu_place_next_alloc(x + 2 * MiB, 0) == 0);
    CUdeviceptr hi = sim_test_alloc(2 * MiB);
    CU_ASSERT(hi == x + 2 * MiB);
    CU_ASSERT(simcu_place_next_alloc(x, 0) == 0);
    CUdeviceptr lo = sim_test_alloc(100);
    CU_ASSERT(lo == x);
    CU_ASSERT(lookup(lo).object_size == 2 * MiB);
    CU_ASSERT(sim_test_alloc(2 * MiB) == y); /* the rest of the stack */

    /* VA in use, or part of it: refused, nothing allocated */
    long live = simcu_live_allocations();
    CU_ASSERT(simcu_place_next_alloc(x, 0) == 0);
    CU_ASSERT(cuMemAlloc(&p, 100) == CUDA_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(cuMemFree(hi) == CUDA_SUCCESS);
    CU_ASSERT(simcu_place_next_alloc(x + 2 * MiB, 0) == 0);
    CU_ASSERT(cuMemAlloc(&p, 4 * MiB) == CUDA_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(simcu_live_allocations() == live - 1);
    /* outside the device's VA */
    CU_ASSERT(simcu_place_next_alloc(2 * MiB, 0) == 0);
    CU_ASSERT(cuMemAlloc(&p, 100) == CUDA_ERROR_OUT_OF_MEMORY);

    /* alone: nothing else is sub-allocated in its object */
    CU_ASSERT(simcu_place_next_alloc(0, SIMCU_PLACE_ALONE) == 0);
    CUdeviceptr solo = sim_test_alloc(4 * KiB);
    CU_ASSERT(object_of(sim_test_alloc(4 * KiB)) != object_of(solo));

    /* never-used VA past the bump pointer; what it skips is free VA */
    CUdeviceptr far = y + 64 * MiB;
    CU_ASSERT(simcu_place_next_alloc(far, 0) == 0);
    CU_ASSERT(sim_test_alloc(2 * MiB) == far);
    CU_ASSERT(simcu_place_next_alloc(y + 8 * MiB, 0) == 0);
    CU_ASSERT(sim_test_alloc(2 * MiB) == y + 8 * MiB);
}

const struct gdrx_test_case sim_memory_cases[] = {
    GDRX_TEST_CASE(test_device_pointer_faults),
    GDRX_TEST_CASE(test_dmabuf_aliases_device_memory),
    GDRX_TEST_CASE(test_dmabuf_of_suballocation),
    GDRX_TEST_CASE(test_dmabuf_export_validation),
    GDRX_TEST_CASE(test_coherent_knob),
    GDRX_TEST_CASE(test_free_really_frees),
    GDRX_TEST_CASE(test_export_outlives_free),
    GDRX_TEST_CASE(test_address_reuse),
    GDRX_TEST_CASE(test_suballocation),
    GDRX_TEST_CASE(test_copies_and_memset),
    GDRX_TEST_CASE(test_out_of_range_changes_nothing),
    GDRX_TEST_CASE(test_counters_return_to_zero),
    GDRX_TEST_CASE(test_context_destruction_frees),
    GDRX_TEST_CASE(test_place_next_alloc),
    GDRX_TEST_END,
};
