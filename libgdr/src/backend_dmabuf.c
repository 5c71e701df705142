/*
 * backend_dmabuf.c - mapping through a dma-buf the CUDA driver exports for
 * the range (cuMemGetHandleForAddressRange, CUDA >= 11.7), mmap'ed
 * write-combined, or cached on a coherent GPU (mapping_kind).  Needs no
 * kernel module of ours, but the NVIDIA driver must support mmap of its
 * dma-bufs; some drivers export them for device import only and refuse
 * mmap, which this backend reports as -EOPNOTSUPP.
 *
 * SPDX-License-Identifier: MIT
 *
 * No free callback exists for a dma-buf: the exporter keeps the pages it
 * handed out until the fd and its mappings are gone, so a stale mapping
 * still reaches the old pages, never a newer allocation.  The core learns of
 * a free from the buffer id or the free hook (see docs/semantics.md).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "cuda_loader.h"
#include "log.h"

/* Built with GDRX_DMABUF_TEST_SEAM (tests/libgdr/test_dmabuf), mmap goes to
 * the test program, which plays a driver that refuses it. */
#ifdef GDRX_DMABUF_TEST_SEAM
void *dmabuf_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
#define buf_mmap dmabuf_test_mmap
#else
#define buf_mmap mmap
#endif

/* The kernel's internal "not supported" code, which some drivers leak to
 * user space from mmap. */
#define KERNEL_ENOTSUPP 524

struct dmabuf_ctx {
    const struct gdrx_cuda *cu;
    size_t                  host_page;
    atomic_int              mmap_ok;  /* -1 unknown, 0 refused, 1 works */
};

struct dmabuf_pin {
    int                 fd;
    off_t               offset; /* where the range starts in the dma-buf */
    gdrx_mapping_type_t type;   /* what its mmap gives (mapping_kind) */
};

static int dmabuf_open(void **bctx)
{
    const struct gdrx_cuda *cu;
    int rc = gdrx_cuda_get(&cu);

    if (rc)
        return rc;
    if (!cu->MemGetHandleForAddressRange) {
        gdrx_info("dmabuf: the CUDA driver lacks cuMemGetHandleForAddressRange (needs 11.7+)");
        return -EOPNOTSUPP;
    }
    struct dmabuf_ctx *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->cu = cu;
    long pg = sysconf(_SC_PAGESIZE);
    d->host_page = pg > 0 ? (size_t)pg : 4096;
    atomic_init(&d->mmap_ok, -1);
    *bctx = d;
    return 0;
}

/* Without CUDA nothing tells whether dmabuf works: only a program that
 * initialised CUDA (with a GPU, on a driver of CUDA 11.7+) counts. */
static int dmabuf_precheck(void)
{
    const struct gdrx_cuda *cu;
    int count = 0;

    int rc = gdrx_cuda_get_if_initialised(&cu);
    if (rc) {
        gdrx_info("dmabuf: CUDA is not initialised, so it cannot be told to work");
        return rc;
    }
    if (!cu->MemGetHandleForAddressRange)
        return -EOPNOTSUPP;
    if (cu->DeviceGetCount(&count) != CUDA_SUCCESS || count <= 0)
        return -ENODEV;
    return 0;
}

static void dmabuf_close(void *bctx)
{
    free(bctx);
}

static int mmap_errno_is_unsupported(int err)
{
    return err == EOPNOTSUPP || err == KERNEL_ENOTSUPP || err == ENODEV;
}

/*
 * What the CPU mapping of an export will be, and the export's flags.  The
 * NVIDIA driver exports a coherent GPU's memory (Grace Hopper: the device
 * reports that pageable memory access uses the host's page tables, ATS
 * over NVLink-C2C; gdrcopy 2.6 decides from the same attribute) through
 * the coherent path, mapped cached, unless the export asks for the PCIe
 * BAR with CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE.  A PCIe GPU's
 * memory is the BAR whatever the flag says, mapped write-combined, and
 * the flag is not passed there: cuda.h allows an error for it "otherwise"
 * than on a supported platform, and drivers before CUDA 12.8 refuse any
 * flag.  An attribute the driver cannot answer means not coherent: a WC
 * mapping of coherent memory is slow, a cached one of the BAR wrong.
 */
static gdrx_mapping_type_t mapping_kind(struct dmabuf_ctx *d, CUdevice dev, int have_dev,
                                        uint32_t pin_flags, unsigned long long *export_flags)
{
    int coherent = 0;

    if (!have_dev ||
        d->cu->DeviceGetAttribute(&coherent,
                                  CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                  dev) != CUDA_SUCCESS)
        coherent = 0;
    *export_flags = 0;
    if (!coherent)
        return GDRX_MAPPING_WC;
    if (pin_flags & GDRX_PIN_FLAG_FORCE_PCIE) {
        *export_flags = CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE;
        return GDRX_MAPPING_WC;
    }
    return GDRX_MAPPING_CACHING;
}

static int export_fd(struct dmabuf_ctx *d, uint64_t base, size_t size,
                     unsigned long long flags, int *fd)
{
    int handle = -1;
    CUresult res = d->cu->MemGetHandleForAddressRange(&handle, (CUdeviceptr)base, size,
                                                       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                                       flags);
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    *fd = handle;
    return 0;
}

/* Whether this driver lets the CPU mmap its dma-bufs, tried once on the
 * first pin so that gdrx_pin (rather than a later gdrx_map) says so. */
static int probe_mmap(struct dmabuf_ctx *d, int fd, off_t offset)
{
    int ok = atomic_load(&d->mmap_ok);

    if (ok >= 0)
        return ok ? 0 : -EOPNOTSUPP;
    void *p = buf_mmap(NULL, d->host_page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    if (p == MAP_FAILED) {
        int err = errno;
        if (!mmap_errno_is_unsupported(err))
            return -err; /* something else; decide on a later pin */
        gdrx_err("dmabuf: this NVIDIA driver does not support mmap of its dma-bufs "
                 "(errno %d); use the gdrdrv or nvrm backend", err);
        atomic_store(&d->mmap_ok, 0);
        return -EOPNOTSUPP;
    }
    munmap(p, d->host_page);
    atomic_store(&d->mmap_ok, 1);
    return 0;
}

static int dmabuf_pin(void *bctx, const struct gdrx_pin_req *req, struct gdrx_backend_pin *bp)
{
    struct dmabuf_ctx *d = bctx;
    CUdevice dev = 0;
    int value = 0;
    int have_dev = d->cu->DeviceGet(&dev, req->device) == CUDA_SUCCESS;

    /* An attribute the driver cannot report is not a "no": try the export. */
    if (have_dev &&
        d->cu->DeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                                  dev) == CUDA_SUCCESS && !value) {
        gdrx_info("dmabuf: device %d does not support dma-buf", req->device);
        return -EOPNOTSUPP;
    }
    struct dmabuf_pin *dp = malloc(sizeof(*dp));
    if (!dp)
        return -ENOMEM;
    uint64_t base = req->win_base;
    size_t size = req->win_size, page = GDRX_GPU_PAGE_SIZE;
    unsigned long long flags;
    dp->type = mapping_kind(d, dev, have_dev, req->flags, &flags);
    int rc = export_fd(d, base, size, flags, &dp->fd);
    if (rc == -EINVAL) {
        /* The GPU-page window may reach past a small (sub-allocated)
         * allocation; the driver wants host-page alignment only. */
        uint64_t hp = d->host_page;
        uint64_t lo = req->dptr & ~(hp - 1);
        uint64_t hi = (req->dptr + req->len + hp - 1) & ~(hp - 1);
        if (lo != base || hi - lo != size) {
            base = lo;
            size = hi - lo;
            page = hp;
            rc = export_fd(d, base, size, flags, &dp->fd);
        }
    }
    if (rc) {
        gdrx_dbg("dmabuf: cuMemGetHandleForAddressRange([%#llx, +%zu)) failed: %d",
                 (unsigned long long)base, size, rc);
        free(dp);
        return rc;
    }
    /* Real dma-bufs start at offset 0; the simulated GPU's fd is positioned
     * at the range's offset in its backing file. */
    off_t pos = lseek(dp->fd, 0, SEEK_CUR);
    dp->offset = pos > 0 ? pos : 0;
    rc = probe_mmap(d, dp->fd, dp->offset);
    if (rc) {
        close(dp->fd);
        free(dp);
        return rc;
    }
    bp->priv = dp;
    bp->pin_base = base;
    bp->pin_size = size;
    bp->page_size = page;
    return 0;
}

static int dmabuf_unpin(void *bctx, struct gdrx_backend_pin *bp)
{
    struct dmabuf_pin *dp = bp->priv;

    (void)bctx;
    int rc = close(dp->fd) == 0 ? 0 : -errno;
    free(dp);
    bp->priv = NULL;
    return rc;
}

static int dmabuf_map(void *bctx, struct gdrx_backend_pin *bp)
{
    struct dmabuf_pin *dp = bp->priv;

    (void)bctx;
    void *p = buf_mmap(NULL, bp->pin_size, PROT_READ | PROT_WRITE, MAP_SHARED, dp->fd,
                       dp->offset);
    if (p == MAP_FAILED) {
        int err = errno;
        if (mmap_errno_is_unsupported(err)) {
            gdrx_err("dmabuf: the driver refuses mmap of its dma-buf (errno %d)", err);
            return -EOPNOTSUPP;
        }
        return -err;
    }
    if (gdrx_mapping_dontfork(p, bp->pin_size) != 0) {
        int err = errno;
        gdrx_err("dmabuf: cannot keep the mapping out of fork children (errno %d)", err);
        munmap(p, bp->pin_size);
        return -err;
    }
    bp->cpu_base = p;
    bp->dbase = bp->pin_base;
    bp->map_size = bp->pin_size;
    bp->type = dp->type;
    return 0;
}

static int dmabuf_unmap(void *bctx, struct gdrx_backend_pin *bp)
{
    (void)bctx;
    if (munmap(bp->cpu_base, bp->map_size) != 0)
        return -errno;
    return 0;
}

static int dmabuf_driver_version(void *bctx, uint64_t *version)
{
    const struct dmabuf_ctx *d = bctx;
    int v = d->cu->driver_version;

    /* The CUDA driver is the one that exports the dma-buf: 13000 -> 13.0. */
    *version = ((uint64_t)(v / 1000) << 16) | (uint64_t)((v % 1000) / 10);
    return 0;
}

const struct gdrx_backend_ops gdrx_backend_dmabuf_ops = {
    .name           = "dmabuf",
    .id             = GDRX_BACKEND_DMABUF,
    .open           = dmabuf_open,
    .close          = dmabuf_close,
    .precheck       = dmabuf_precheck,
    .pin            = dmabuf_pin,
    .unpin          = dmabuf_unpin,
    .map            = dmabuf_map,
    .unmap          = dmabuf_unmap,
    .is_stale       = NULL,
    .driver_version = dmabuf_driver_version,
};
