/*
 * test_dmabuf.c - the dmabuf backend against a fake CUDA driver: its source
 * is built into this program with GDRX_DMABUF_TEST_SEAM, the CUDA entry
 * points come from the fake below, and mmap can be made to fail the way
 * drivers that do not support mmap of their dma-bufs fail.  (The suites on
 * the simulated GPU cover the backend's working path end to end.)
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdrx_test.h"
#include "backend.h"
#include "cuda_loader.h"

static struct fake_cuda {
    int       dmabuf_supported; /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
    int       reject_gpu_pages; /* refuse ranges that are not host-page covers */
    off_t     position;         /* file position of exported fds */
    int       exports;
    uint64_t  last_base;
    size_t    last_size;
    int       last_fd;
    int       mmap_errno;
    int       mmaps;
    off_t     mmap_off;
    int       initialised;      /* the program initialised CUDA */
    int       devices;          /* cuDeviceGetCount */
} fk;

static struct gdrx_cuda cu;

static CUresult fake_export(void *handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType type,
                            unsigned long long flags)
{
    (void)flags;
    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || size % 4096 || dptr % 4096)
        return CUDA_ERROR_INVALID_VALUE;
    if (fk.reject_gpu_pages && size % 65536 == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, fk.position + (off_t)size) != 0 ||
        lseek(fd, fk.position, SEEK_SET) != fk.position)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fk.exports++;
    fk.last_base = dptr;
    fk.last_size = size;
    fk.last_fd = fd;
    *(int *)handle = fd;
    return CUDA_SUCCESS;
}

static CUresult fake_device_get(CUdevice *dev, int ordinal)
{
    *dev = ordinal;
    return CUDA_SUCCESS;
}

static CUresult fake_attribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    (void)dev;
    if (attr != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
        return CUDA_ERROR_INVALID_VALUE;
    *value = fk.dmabuf_supported;
    return CUDA_SUCCESS;
}

static CUresult fake_device_count(int *count)
{
    *count = fk.devices;
    return CUDA_SUCCESS;
}

/* The functions of cuda_loader.c the backend uses. */
int gdrx_cuda_get(const struct gdrx_cuda **out)
{
    *out = &cu;
    return 0;
}

int gdrx_cuda_get_if_initialised(const struct gdrx_cuda **out)
{
    if (!fk.initialised)
        return -ENODEV;
    *out = &cu;
    return 0;
}

int gdrx_cuda_errno(CUresult res)
{
    return res == CUDA_SUCCESS ? 0 : res == CUDA_ERROR_INVALID_VALUE ? -EINVAL : -EIO;
}

void *dmabuf_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

void *dmabuf_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    fk.mmaps++;
    if (fk.mmap_errno) {
        errno = fk.mmap_errno;
        return MAP_FAILED;
    }
    fk.mmap_off = off;
    return mmap(addr, len, prot, flags, fd, off);
}

static const struct gdrx_backend_ops *ops = &gdrx_backend_dmabuf_ops;

static void *fresh(void)
{
    void *bctx = NULL;

    memset(&fk, 0, sizeof(fk));
    fk.dmabuf_supported = 1;
    memset(&cu, 0, sizeof(cu));
    cu.driver_version = 12080;
    cu.MemGetHandleForAddressRange = fake_export;
    cu.DeviceGet = fake_device_get;
    cu.DeviceGetAttribute = fake_attribute;
    cu.DeviceGetCount = fake_device_count;
    CU_ASSERT_EQUAL(ops->open(&bctx), 0);
    return bctx;
}

/* A request for [base + 0x1234, +100000), window of whole 64 KiB pages. */
static struct gdrx_pin_req request(void)
{
    struct gdrx_pin_req r = { .dptr = 0x7f0000001234ull, .len = 100000, .device = 1 };
    r.win_base = r.dptr & ~0xffffull;
    r.win_size = ((r.dptr + r.len + 0xffff) & ~0xffffull) - r.win_base;
    return r;
}

static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static void test_needs_the_entry_point(void)
{
    void *bctx = fresh();

    ops->close(bctx);
    cu.MemGetHandleForAddressRange = NULL; /* a driver older than 11.7 */
    CU_ASSERT_EQUAL(ops->open(&bctx), -EOPNOTSUPP);
}

/* Without CUDA (gdrx_probe's GDRX_PROBE_FLAG_NO_CUDA) dmabuf counts only
 * where the program initialised CUDA, sees a GPU, and the driver has the
 * export entry point. */
static void test_precheck_needs_initialised_cuda(void)
{
    ops->close(fresh());
    fk.devices = 1;
    CU_ASSERT_EQUAL(ops->precheck(), -ENODEV);
    fk.initialised = 1;
    CU_ASSERT_EQUAL(ops->precheck(), 0);
    fk.devices = 0;
    CU_ASSERT_EQUAL(ops->precheck(), -ENODEV);
    fk.devices = 1;
    cu.MemGetHandleForAddressRange = NULL;
    CU_ASSERT_EQUAL(ops->precheck(), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(fk.exports, 0);
}

static void test_window_pin_and_map(void)
{
    void *bctx = fresh();
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    fk.position = 3 * 65536; /* as the simulated GPU does */
    CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
    CU_ASSERT_EQUAL(fk.last_base, r.win_base);
    CU_ASSERT_EQUAL(fk.last_size, r.win_size);
    CU_ASSERT_EQUAL(bp.pin_base, r.win_base);
    CU_ASSERT_EQUAL(bp.pin_size, r.win_size);
    CU_ASSERT_EQUAL(bp.page_size, 65536);
    CU_ASSERT_EQUAL_FATAL(ops->map(bctx, &bp), 0);
    CU_ASSERT_EQUAL(fk.mmap_off, 3 * 65536); /* the fd's position */
    CU_ASSERT_EQUAL(bp.type, GDRX_MAPPING_WC);
    CU_ASSERT_EQUAL(bp.dbase, r.win_base);
    CU_ASSERT_EQUAL(bp.map_size, r.win_size);
    CU_ASSERT_PTR_NOT_NULL(bp.cpu_base);
    int fd = fk.last_fd;
    CU_ASSERT_EQUAL(ops->unmap(bctx, &bp), 0);
    CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    CU_ASSERT(!fd_is_open(fd));
    ops->close(bctx);
}

static void test_host_page_cover_when_window_refused(void)
{
    void *bctx = fresh();
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

    fk.reject_gpu_pages = 1;
    CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
    CU_ASSERT_EQUAL(fk.exports, 1);
    CU_ASSERT_EQUAL(bp.pin_base, r.dptr & ~(pg - 1));
    CU_ASSERT_EQUAL(bp.pin_base + bp.pin_size, (r.dptr + r.len + pg - 1) & ~(pg - 1));
    CU_ASSERT_EQUAL(bp.page_size, pg);
    CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    ops->close(bctx);
}

/* A driver that refuses mmap of dma-bufs: -EOPNOTSUPP at the first pin,
 * and from then on without trying again. */
static void refuses_mmap(int err)
{
    void *bctx = fresh();
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    fk.mmap_errno = err;
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -EOPNOTSUPP);
    CU_ASSERT(!fd_is_open(fk.last_fd));
    CU_ASSERT_EQUAL(fk.mmaps, 1);
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(fk.mmaps, 1);
    CU_ASSERT(!fd_is_open(fk.last_fd));
    ops->close(bctx);
}

static void test_refuses_mmap_eopnotsupp(void)
{
    refuses_mmap(EOPNOTSUPP);
}

static void test_refuses_mmap_enotsupp(void)
{
    refuses_mmap(524); /* the kernel's ENOTSUPP */
}

static void test_refuses_mmap_enodev(void)
{
    refuses_mmap(ENODEV);
}

static void test_other_mmap_errors_are_not_remembered(void)
{
    void *bctx = fresh();
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    fk.mmap_errno = ENOMEM;
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -ENOMEM);
    fk.mmap_errno = 0;
    CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
    /* a map failing later reports the refusal too */
    fk.mmap_errno = EOPNOTSUPP;
    CU_ASSERT_EQUAL(ops->map(bctx, &bp), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    ops->close(bctx);
}

static void test_device_without_dmabuf(void)
{
    void *bctx = fresh();
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    fk.dmabuf_supported = 0;
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(fk.exports, 0);
    ops->close(bctx);
}

static void test_driver_version(void)
{
    void *bctx = fresh();
    uint64_t v = 0;

    CU_ASSERT_EQUAL(ops->driver_version(bctx, &v), 0);
    CU_ASSERT_EQUAL(v, (12u << 16) | 8u);
    CU_ASSERT_PTR_NULL(ops->is_stale); /* a dma-buf has no free callback */
    ops->close(bctx);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_needs_the_entry_point),
    GDRX_TEST_CASE(test_precheck_needs_initialised_cuda),
    GDRX_TEST_CASE(test_window_pin_and_map),
    GDRX_TEST_CASE(test_host_page_cover_when_window_refused),
    GDRX_TEST_CASE(test_refuses_mmap_eopnotsupp),
    GDRX_TEST_CASE(test_refuses_mmap_enotsupp),
    GDRX_TEST_CASE(test_refuses_mmap_enodev),
    GDRX_TEST_CASE(test_other_mmap_errors_are_not_remembered),
    GDRX_TEST_CASE(test_device_without_dmabuf),
    GDRX_TEST_CASE(test_driver_version),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "dmabuf_backend", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
