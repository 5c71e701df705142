/*
 * backend_gdrdrv.c - mapping through /dev/gdrdrv, with the gdrdrv 2.x ioctl
 * ABI (gdrdrv/gdrdrv_ioctl.h): ours or NVIDIA's gdrdrv.ko.
 *
 * SPDX-License-Identifier: MIT
 *
 * The driver pins a 64 KiB-aligned range and returns a handle that is also
 * the mmap offset of the pin, in host pages.  Optional ioctls are used only
 * when the driver's version has them (GET_INFO_V2 from 2.4; PIN_BUFFER_V2
 * and GET_ATTR from 2.5; never REQ_MAPPING_TYPE, see gdrdrv_map).
 * GDRX_GDRDRV_PATH overrides the
 * device node (tests).  Built with GDRX_GDRDRV_TEST_SEAM, the ioctl and
 * mmap calls go to functions the test program provides.
 */
#include "backend_gdrdrv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "gdrdrv_ioctl.h"
#include "log.h"

#ifdef GDRX_GDRDRV_TEST_SEAM
int gdrdrv_test_ioctl(int fd, unsigned long request, void *arg);
void *gdrdrv_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int gdrdrv_test_munmap(void *addr, size_t len);
#define drv_ioctl  gdrdrv_test_ioctl
#define drv_mmap   gdrdrv_test_mmap
#define drv_munmap gdrdrv_test_munmap
#else
#define drv_ioctl(fd, req, arg) ioctl((fd), (req), (arg))
#define drv_mmap   mmap
#define drv_munmap munmap
#endif

#define VMAJ(v) ((unsigned)(v) >> 16)
#define VMIN(v) ((unsigned)(v) & 0xffffu)

struct gdrdrv_ctx {
    int      fd;
    uint32_t version;     /* driver's ABI version */
    unsigned page_shift;  /* host page shift: handles count host pages */
    /* 1: the driver pins persistently (no free callback, so GET_CB_FLAG
     * never reports a free); -1: unknown (driver older than 2.5). */
    int      persistent;
    /* 1: PIN_BUFFER_V2 takes FORCE_PCIE (the NVIDIA driver has the BAR1
     * flag); 0: not, or a driver older than 2.5. */
    int      force_pcie;
};

struct gdrdrv_pin {
    gdrdrv_handle_t handle;
};

int gdrx_gdrdrv_check_version(uint32_t driver_version, uint32_t min_lib_version)
{
    if (driver_version < GDRX_GDRDRV_MIN_DRIVER) {
        gdrx_err("gdrdrv: driver ABI %u.%u is older than %u.%u, the oldest libgdrx supports; "
                 "update gdrdrv", VMAJ(driver_version), VMIN(driver_version),
                 VMAJ(GDRX_GDRDRV_MIN_DRIVER), VMIN(GDRX_GDRDRV_MIN_DRIVER));
        return -EPROTO;
    }
    if (min_lib_version > GDRX_GDRDRV_CLIENT_VERSION) {
        gdrx_err("gdrdrv: driver ABI %u.%u requires a client of ABI %u.%u or newer; "
                 "libgdrx speaks %u.%u: update libgdrx",
                 VMAJ(driver_version), VMIN(driver_version), VMAJ(min_lib_version),
                 VMIN(min_lib_version), VMAJ(GDRX_GDRDRV_CLIENT_VERSION),
                 VMIN(GDRX_GDRDRV_CLIENT_VERSION));
        return -EPROTO;
    }
    return 0;
}

static int xioctl(struct gdrdrv_ctx *g, unsigned long request, void *arg)
{
    int r;

    do
        r = drv_ioctl(g->fd, request, arg);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static unsigned host_page_shift(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    unsigned shift = 12;

    while (pg > 0 && (1L << shift) < pg)
        shift++;
    return shift;
}

static int gdrdrv_open(void **bctx)
{
    const char *path = secure_getenv("GDRX_GDRDRV_PATH");

    if (!path || !*path)
        path = "/dev/gdrdrv";
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT || err == ENXIO || err == ENODEV) {
            gdrx_info("gdrdrv: %s not found: the gdrdrv module is not loaded", path);
            return -ENODEV;
        }
        gdrx_err("gdrdrv: cannot open %s (errno %d)", path, err);
        return -err;
    }
    struct gdrdrv_ctx *g = calloc(1, sizeof(*g));
    if (!g) {
        close(fd);
        return -ENOMEM;
    }
    g->fd = fd;
    g->page_shift = host_page_shift();

    struct gdrdrv_get_version_args ver = { 0 };
    int rc = xioctl(g, GDRDRV_IOC_GET_VERSION, &ver);
    if (rc) {
        gdrx_err("gdrdrv: %s does not answer GET_VERSION (%d): not a gdrdrv 2.x device",
                 path, rc);
        rc = -ENODEV;
    } else {
        rc = gdrx_gdrdrv_check_version(ver.driver_version, ver.min_lib_version);
    }
    if (rc) {
        close(fd);
        free(g);
        return rc;
    }
    g->version = ver.driver_version;
    g->persistent = -1;
    if (g->version >= GDRDRV_VERSION_WITH_GET_ATTR) {
        struct gdrdrv_get_attr_args attr = { .attr = GDRDRV_ATTR_USE_PERSISTENT_MAPPING };
        if (xioctl(g, GDRDRV_IOC_GET_ATTR, &attr) == 0)
            g->persistent = attr.val != 0;
        attr = (struct gdrdrv_get_attr_args){ .attr = GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE };
        g->force_pcie = xioctl(g, GDRDRV_IOC_GET_ATTR, &attr) == 0 && attr.val != 0;
    }
    gdrx_info("gdrdrv: %s, driver ABI %u.%u, persistent pins: %s", path, VMAJ(g->version),
              VMIN(g->version), g->persistent < 0 ? "unknown" : g->persistent ? "yes" : "no");
    *bctx = g;
    return 0;
}

static void gdrdrv_close(void *bctx)
{
    struct gdrdrv_ctx *g = bctx;

    close(g->fd);
    free(g);
}

/* The device node and the version check need no CUDA: open and close. */
static int gdrdrv_precheck(void)
{
    void *bctx = NULL;

    int rc = gdrdrv_open(&bctx);
    if (rc == 0)
        gdrdrv_close(bctx);
    return rc;
}

static int gdrdrv_force_pcie(void *bctx)
{
    return ((struct gdrdrv_ctx *)bctx)->force_pcie;
}

static int do_pin(struct gdrdrv_ctx *g, uint64_t addr, uint64_t size, uint32_t pin_flags,
                  gdrdrv_handle_t *handle)
{
    int rc;
    int force = (pin_flags & GDRX_PIN_FLAG_FORCE_PCIE) != 0;

    if (force && !g->force_pcie) {
        gdrx_info("gdrdrv: this driver cannot force a mapping through the PCIe BAR");
        return -EOPNOTSUPP;
    }
    if (g->version >= GDRDRV_VERSION_WITH_PIN_BUFFER_V2) {
        struct gdrdrv_pin_buffer_v2_args a = { .addr = addr, .size = size,
                                               .flags = force ? GDRDRV_PIN_FLAG_FORCE_PCIE :
                                                                GDRDRV_PIN_FLAG_DEFAULT };
        rc = xioctl(g, GDRDRV_IOC_PIN_BUFFER_V2, &a);
        *handle = a.handle;
    } else {
        struct gdrdrv_pin_buffer_args a = { .addr = addr, .size = size };
        rc = xioctl(g, GDRDRV_IOC_PIN_BUFFER, &a);
        *handle = a.handle;
    }
    return rc;
}

/* GET_INFO_V2 or GET_INFO, normalised: pinned range, page size, mapping. */
struct drv_info {
    uint64_t            va;
    uint64_t            size;
    uint32_t            page_size;
    gdrx_mapping_type_t type;
};

static int get_info(struct gdrdrv_ctx *g, gdrdrv_handle_t handle, struct drv_info *out)
{
    int rc;

    if (g->version >= GDRDRV_VERSION_WITH_GET_INFO_V2) {
        struct gdrdrv_get_info_v2_args a = { .handle = handle };
        rc = xioctl(g, GDRDRV_IOC_GET_INFO_V2, &a);
        if (rc)
            return rc;
        *out = (struct drv_info){ a.va, a.mapped_size, a.page_size,
                                  a.mapping_type <= GDRDRV_MAPPING_MAX ?
                                  (gdrx_mapping_type_t)a.mapping_type : GDRX_MAPPING_NONE };
    } else {
        struct gdrdrv_get_info_args a = { .handle = handle };
        rc = xioctl(g, GDRDRV_IOC_GET_INFO, &a);
        if (rc)
            return rc;
        *out = (struct drv_info){ a.va, a.mapped_size, a.page_size,
                                  !a.mapped ? GDRX_MAPPING_NONE :
                                  a.wc_mapping ? GDRX_MAPPING_WC : GDRX_MAPPING_CACHING };
    }
    return 0;
}

static int gdrdrv_pin(void *bctx, const struct gdrx_pin_req *req, struct gdrx_backend_pin *bp)
{
    struct gdrdrv_ctx *g = bctx;
    struct gdrdrv_pin *gp = malloc(sizeof(*gp));

    if (!gp)
        return -ENOMEM;
    int rc = do_pin(g, req->win_base, req->win_size, req->flags, &gp->handle);
    if (rc) {
        gdrx_dbg("gdrdrv: pin of [%#llx, +%zu) failed: %d",
                 (unsigned long long)req->win_base, req->win_size, rc);
        free(gp);
        return rc;
    }
    struct drv_info info;
    rc = get_info(g, gp->handle, &info);
    if (rc == 0 && info.size > 0 && info.page_size > 0) {
        bp->pin_base = info.va;
        bp->pin_size = info.size;
        bp->page_size = info.page_size;
    } else {
        /* The driver pinned exactly the 64 KiB-aligned window we asked for. */
        bp->page_size = GDRDRV_GPU_PAGE_SIZE;
    }
    bp->priv = gp;
    return 0;
}

static int gdrdrv_unpin(void *bctx, struct gdrx_backend_pin *bp)
{
    struct gdrdrv_pin *gp = bp->priv;
    struct gdrdrv_unpin_buffer_args a = { .handle = gp->handle };

    int rc = xioctl(bctx, GDRDRV_IOC_UNPIN_BUFFER, &a);
    free(gp);
    bp->priv = NULL;
    return rc;
}

static int gdrdrv_map(void *bctx, struct gdrx_backend_pin *bp)
{
    struct gdrdrv_ctx *g = bctx;
    struct gdrdrv_pin *gp = bp->priv;

    /*
     * No REQ_MAPPING_TYPE: the driver's default is the right type.  It
     * maps CACHING exactly the pages NVIDIA's driver marked CPU-cacheable
     * (a coherent platform, NVLink-C2C; never after FORCE_PCIE, which pins
     * the BAR) and WC the others.  Asking for WC, as libgdrx did before,
     * gets a WC mapping of coherent memory too: slower, and on arm64
     * cacheable memory mapped with a mismatched (Normal-NC) attribute.
     * GET_INFO after mmap says what the driver gave.
     */
    off_t offset = (off_t)(gp->handle << g->page_shift);
    void *p = drv_mmap(NULL, bp->pin_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, offset);
    if (p == MAP_FAILED) {
        int err = errno;
        gdrx_err("gdrdrv: mmap of handle %#llx failed (errno %d)",
                 (unsigned long long)gp->handle, err);
        return -err;
    }
    if (gdrx_mapping_dontfork(p, bp->pin_size) != 0) {
        int err = errno;
        gdrx_err("gdrdrv: cannot keep the mapping out of fork children (errno %d)", err);
        drv_munmap(p, bp->pin_size);
        return -err;
    }
    struct drv_info info;
    bp->type = GDRX_MAPPING_WC;
    if (get_info(g, gp->handle, &info) == 0 && info.type != GDRX_MAPPING_NONE)
        bp->type = info.type;
    bp->cpu_base = p;
    bp->dbase = bp->pin_base;
    bp->map_size = bp->pin_size;
    return 0;
}

static int gdrdrv_unmap(void *bctx, struct gdrx_backend_pin *bp)
{
    (void)bctx;
    return drv_munmap(bp->cpu_base, bp->map_size) == 0 ? 0 : -errno;
}

static int gdrdrv_is_stale(void *bctx, struct gdrx_backend_pin *bp)
{
    struct gdrdrv_pin *gp = bp->priv;
    struct gdrdrv_get_cb_flag_args a = { .handle = gp->handle };

    int rc = xioctl(bctx, GDRDRV_IOC_GET_CB_FLAG, &a);
    return rc ? rc : a.flag != 0;
}

static int gdrdrv_driver_version(void *bctx, uint64_t *version)
{
    const struct gdrdrv_ctx *g = bctx;

    *version = g->version;
    return 0;
}

const struct gdrx_backend_ops gdrx_backend_gdrdrv_ops = {
    .name           = "gdrdrv",
    .id             = GDRX_BACKEND_GDRDRV,
    .open           = gdrdrv_open,
    .close          = gdrdrv_close,
    .precheck       = gdrdrv_precheck,
    .pin            = gdrdrv_pin,
    .unpin          = gdrdrv_unpin,
    .map            = gdrdrv_map,
    .unmap          = gdrdrv_unmap,
    .is_stale       = gdrdrv_is_stale,
    .force_pcie     = gdrdrv_force_pcie,
    .driver_version = gdrdrv_driver_version,
};
