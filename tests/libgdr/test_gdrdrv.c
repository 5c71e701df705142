/*
 * test_gdrdrv.c - the gdrdrv backend without a kernel module: its source is
 * built into this program with GDRX_GDRDRV_TEST_SEAM, so its ioctl and mmap
 * calls reach the fake driver below.  Checks the version handshake both
 * ways and that each ioctl is used only from the driver version that has
 * it, and that nothing it takes (descriptor, mapping, driver pin) is kept.
 * The real module is exercised by the kernel tests (qemu), which run
 * the other suites with GDRX_BACKEND=gdrdrv.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdrx_test.h"
#include "backend.h"
#include "backend_gdrdrv.h"
#include "gdrdrv_ioctl.h"

#define V(maj, min) (((uint32_t)(maj) << 16) | (uint32_t)(min))

static struct fake_driver {
    uint32_t      version, min_lib;
    int           version_errno;  /* GET_VERSION fails with it if set */
    int           pin_errno, mmap_errno, cb_errno;
    uint32_t      cb_flag;
    uint32_t      mapping_type;   /* reported once mapped */
    unsigned long calls[64];
    int           ncalls;
    uint64_t      handle;         /* the one pin's handle */
    uint64_t      addr, size;
    uint64_t      unpinned;
    int           live_pins;      /* pinned and not yet unpinned */
    int           mapped;
    uint32_t      persistent;     /* GET_ATTR USE_PERSISTENT_MAPPING */
    uint32_t      force_pcie;     /* GET_ATTR SUPPORT_PIN_FLAG_FORCE_PCIE */
    int           cacheable;      /* NVIDIA's pages are CPU-cacheable (coherent) */
    uint32_t      pin_flags;      /* of the last PIN_BUFFER_V2 */
    off_t         mmap_off;
    size_t        mmap_len;
} fk;

static void fake_reset(uint32_t version)
{
    memset(&fk, 0, sizeof(fk));
    fk.version = version;
    fk.min_lib = V(2, 0);
    fk.handle = 0x1230;
    fk.mapping_type = GDRDRV_MAPPING_WC;
}

static int called(unsigned long req)
{
    for (int i = 0; i < fk.ncalls; i++)
        if (fk.calls[i] == req)
            return 1;
    return 0;
}

static int fail_with(int err)
{
    errno = err;
    return -1;
}

int gdrdrv_test_ioctl(int fd, unsigned long req, void *arg);
void *gdrdrv_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int gdrdrv_test_munmap(void *addr, size_t len);

int gdrdrv_test_ioctl(int fd, unsigned long req, void *arg)
{
    (void)fd;
    if (fk.ncalls < 64)
        fk.calls[fk.ncalls++] = req;
    if (req == GDRDRV_IOC_GET_VERSION) {
        struct gdrdrv_get_version_args *a = arg;
        if (fk.version_errno)
            return fail_with(fk.version_errno);
        a->driver_version = fk.version;
        a->min_lib_version = fk.min_lib;
        return 0;
    }
    if (req == GDRDRV_IOC_PIN_BUFFER || req == GDRDRV_IOC_PIN_BUFFER_V2) {
        if (fk.pin_errno)
            return fail_with(fk.pin_errno);
        if (req == GDRDRV_IOC_PIN_BUFFER_V2 && fk.version < V(2, 5))
            return fail_with(ENOTTY);
        if (req == GDRDRV_IOC_PIN_BUFFER) {
            struct gdrdrv_pin_buffer_args *a = arg;
            fk.addr = a->addr, fk.size = a->size, a->handle = fk.handle;
        } else {
            struct gdrdrv_pin_buffer_v2_args *a = arg;
            fk.addr = a->addr, fk.size = a->size, a->handle = fk.handle;
            fk.pin_flags = a->flags;
        }
        /* The driver's default type: cached for cacheable pages, which
         * FORCE_PCIE never pins (gdrdrv_mmap.c) */
        if (fk.cacheable)
            fk.mapping_type = fk.pin_flags & GDRDRV_PIN_FLAG_FORCE_PCIE ?
                              GDRDRV_MAPPING_WC : GDRDRV_MAPPING_CACHING;
        fk.live_pins++;
        return 0;
    }
    if (req == GDRDRV_IOC_GET_INFO || req == GDRDRV_IOC_GET_INFO_V2) {
        if (req == GDRDRV_IOC_GET_INFO_V2 && fk.version < V(2, 4))
            return fail_with(ENOTTY);
        if (req == GDRDRV_IOC_GET_INFO) {
            struct gdrdrv_get_info_args *a = arg;
            if (a->handle != fk.handle)
                return fail_with(EINVAL);
            a->va = fk.addr, a->mapped_size = fk.size, a->page_size = 65536;
            a->mapped = (uint32_t)fk.mapped;
            a->wc_mapping = fk.mapped && fk.mapping_type == GDRDRV_MAPPING_WC;
        } else {
            struct gdrdrv_get_info_v2_args *a = arg;
            if (a->handle != fk.handle)
                return fail_with(EINVAL);
            a->va = fk.addr, a->mapped_size = fk.size, a->page_size = 65536;
            a->mapping_type = fk.mapped ? fk.mapping_type : GDRDRV_MAPPING_NONE;
        }
        return 0;
    }
    if (req == GDRDRV_IOC_REQ_MAPPING_TYPE) {
        struct gdrdrv_req_mapping_type_args *a = arg;
        if (fk.version < V(2, 5))
            return fail_with(ENOTTY);
        fk.mapping_type = a->mapping_type;
        return 0;
    }
    if (req == GDRDRV_IOC_GET_CB_FLAG) {
        struct gdrdrv_get_cb_flag_args *a = arg;
        if (fk.cb_errno)
            return fail_with(fk.cb_errno);
        a->flag = fk.cb_flag;
        return 0;
    }
    if (req == GDRDRV_IOC_GET_ATTR) {
        struct gdrdrv_get_attr_args *a = arg;
        if (fk.version < V(2, 5))
            return fail_with(ENOTTY);
        if (a->attr == GDRDRV_ATTR_USE_PERSISTENT_MAPPING)
            a->val = fk.persistent;
        else if (a->attr == GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE)
            a->val = fk.force_pcie;
        else
            return fail_with(EINVAL);
        return 0;
    }
    if (req == GDRDRV_IOC_UNPIN_BUFFER) {
        struct gdrdrv_unpin_buffer_args *a = arg;
        fk.unpinned = a->handle;
        if (a->handle == fk.handle)
            fk.live_pins--;
        return 0;
    }
    return fail_with(ENOTTY);
}

void *gdrdrv_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    (void)addr, (void)flags, (void)fd;
    if (fk.mmap_errno) {
        errno = fk.mmap_errno;
        return MAP_FAILED;
    }
    fk.mmap_off = off;
    fk.mmap_len = len;
    fk.mapped = 1;
    return mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int gdrdrv_test_munmap(void *addr, size_t len)
{
    fk.mapped = 0;
    return munmap(addr, len);
}

static const struct gdrx_backend_ops *ops = &gdrx_backend_gdrdrv_ops;

static void *open_fake(uint32_t version, int expect)
{
    void *bctx = NULL;

    fake_reset(version);
    setenv("GDRX_GDRDRV_PATH", "/dev/null", 1);
    CU_ASSERT_EQUAL(ops->open(&bctx), expect);
    return bctx;
}

static void test_version_rules(void)
{
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(2, 0), V(2, 0)), 0);
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(2, 5), V(2, 0)), 0);
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(2, 6), V(2, 5)), 0);
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(3, 0), V(2, 0)), 0);
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(1, 9), V(1, 0)), -EPROTO); /* too old */
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(0, 0), -EPROTO);
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(2, 6), V(2, 6)), -EPROTO); /* wants newer us */
    CU_ASSERT_EQUAL(gdrx_gdrdrv_check_version(V(3, 0), V(3, 0)), -EPROTO);
}

static void test_open(void)
{
    void *bctx = NULL;
    uint64_t v = 0;

    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    CU_ASSERT_EQUAL(ops->open(&bctx), -ENODEV);
    open_fake(V(1, 5), -EPROTO);
    fake_reset(V(2, 5));
    fk.min_lib = V(9, 0);
    CU_ASSERT_EQUAL(ops->open(&bctx), -EPROTO);
    fake_reset(V(2, 5));
    fk.version_errno = ENOTTY; /* not a gdrdrv node */
    CU_ASSERT_EQUAL(ops->open(&bctx), -ENODEV);
    bctx = open_fake(V(2, 5), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bctx);
    CU_ASSERT_EQUAL(ops->driver_version(bctx, &v), 0);
    CU_ASSERT_EQUAL(v, V(2, 5));
    ops->close(bctx);
}

static struct gdrx_pin_req request(void)
{
    struct gdrx_pin_req r = { .dptr = 0x7f0000012345ull, .len = 100000,
                              .alloc_base = 0x7f0000000000ull, .alloc_size = 1 << 20 };
    r.win_base = r.dptr & ~0xffffull;
    r.win_size = ((r.dptr + r.len + 0xffff) & ~0xffffull) - r.win_base;
    return r;
}

/* Pin + map + unmap + unpin on a driver of the given version. */
static void cycle(uint32_t version, unsigned long pin_ioc, unsigned long info_ioc)
{
    void *bctx = open_fake(version, 0);
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    CU_ASSERT_PTR_NOT_NULL_FATAL(bctx);
    CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
    CU_ASSERT(called(pin_ioc));
    CU_ASSERT_EQUAL(fk.addr, r.win_base);
    CU_ASSERT_EQUAL(fk.size, r.win_size);
    CU_ASSERT_EQUAL(bp.pin_base, r.win_base);
    CU_ASSERT_EQUAL(bp.pin_size, r.win_size);
    CU_ASSERT_EQUAL(bp.page_size, 65536);
    CU_ASSERT_EQUAL_FATAL(ops->map(bctx, &bp), 0);
    CU_ASSERT(called(info_ioc));
    /* the driver's default type is the right one (gdrdrv_map) */
    CU_ASSERT(!called(GDRDRV_IOC_REQ_MAPPING_TYPE));
    CU_ASSERT_EQUAL(fk.mmap_off, (off_t)(fk.handle * (uint64_t)sysconf(_SC_PAGESIZE)));
    CU_ASSERT_EQUAL(fk.mmap_len, r.win_size);
    CU_ASSERT_EQUAL(bp.dbase, r.win_base);
    CU_ASSERT_EQUAL(bp.map_size, r.win_size);
    CU_ASSERT_EQUAL(bp.type, GDRX_MAPPING_WC);
    CU_ASSERT_EQUAL(ops->is_stale(bctx, &bp), 0);
    fk.cb_flag = 1;
    CU_ASSERT_EQUAL(ops->is_stale(bctx, &bp), 1);
    fk.cb_errno = EINVAL;
    CU_ASSERT_EQUAL(ops->is_stale(bctx, &bp), -EINVAL);
    CU_ASSERT_EQUAL(ops->unmap(bctx, &bp), 0);
    CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    CU_ASSERT_EQUAL(fk.unpinned, fk.handle);
    ops->close(bctx);
}

static void test_driver_2_5(void)
{
    cycle(V(2, 5), GDRDRV_IOC_PIN_BUFFER_V2, GDRDRV_IOC_GET_INFO_V2);
    CU_ASSERT(called(GDRDRV_IOC_GET_ATTR));
    CU_ASSERT(!called(GDRDRV_IOC_PIN_BUFFER));
    CU_ASSERT(!called(GDRDRV_IOC_GET_INFO));
}

static void test_driver_2_4(void)
{
    cycle(V(2, 4), GDRDRV_IOC_PIN_BUFFER, GDRDRV_IOC_GET_INFO_V2);
    CU_ASSERT(!called(GDRDRV_IOC_GET_ATTR));
    CU_ASSERT(!called(GDRDRV_IOC_PIN_BUFFER_V2));
    CU_ASSERT(!called(GDRDRV_IOC_GET_INFO));
}

static void test_driver_2_0(void)
{
    cycle(V(2, 0), GDRDRV_IOC_PIN_BUFFER, GDRDRV_IOC_GET_INFO);
    CU_ASSERT(!called(GDRDRV_IOC_PIN_BUFFER_V2));
    CU_ASSERT(!called(GDRDRV_IOC_GET_INFO_V2));
}

static void test_failures(void)
{
    void *bctx = open_fake(V(2, 5), 0);
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };

    CU_ASSERT_PTR_NOT_NULL_FATAL(bctx);
    fk.pin_errno = EINVAL;
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -EINVAL);
    fk.pin_errno = 0;
    CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
    fk.mmap_errno = EACCES;
    CU_ASSERT_EQUAL(ops->map(bctx, &bp), -EACCES);
    fk.mmap_errno = 0;
    /* whatever type the driver gives is what the mapping says */
    fk.mapping_type = GDRDRV_MAPPING_CACHING;
    CU_ASSERT_EQUAL_FATAL(ops->map(bctx, &bp), 0);
    CU_ASSERT_EQUAL(bp.type, GDRX_MAPPING_CACHING);
    CU_ASSERT_EQUAL(ops->unmap(bctx, &bp), 0);
    CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    ops->close(bctx);
}

/* Many open / pin / map / unmap / unpin / close rounds leave no
 * descriptor, no mapping (at any address map gave) and no pin in the
 * driver behind. */
static void test_nothing_left_behind(void)
{
    struct gdrx_pin_req r = request();
    static void *cpu[20 * 10];
    int n = 0, still = 0;

    ops->close(open_fake(V(2, 5), 0)); /* what is taken once */
    long fds = gdrx_test_count_fds();
    CU_ASSERT_FATAL(fds > 0);
    for (int round = 0; round < 20; round++) {
        void *bctx = open_fake(round & 1 ? V(2, 4) : V(2, 5), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bctx);
        for (int i = 0; i < 10; i++) {
            struct gdrx_backend_pin bp = { 0 };
            CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
            CU_ASSERT_EQUAL_FATAL(ops->map(bctx, &bp), 0);
            cpu[n++] = bp.cpu_base;
            CU_ASSERT_EQUAL(ops->unmap(bctx, &bp), 0);
            CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
        }
        ops->close(bctx);
        CU_ASSERT_EQUAL(fk.live_pins, 0);
    }
    CU_ASSERT_EQUAL(gdrx_test_count_fds(), fds);
    for (int i = 0; i < n; i++)
        still += gdrx_test_is_mapped(cpu[i]) != 0;
    CU_ASSERT_EQUAL(still, 0);
}

/* A coherent platform (NVIDIA's page tables CPU-cacheable): mapped cached
 * without the flag, WC through the BAR with FORCE_PCIE, which reaches the
 * driver as its PIN_BUFFER_V2 flag; refused where the driver cannot. */
static void test_coherent_driver(void)
{
    struct gdrx_pin_req r = request();
    struct gdrx_backend_pin bp = { 0 };
    void *bctx = open_fake(V(2, 5), 0);

    CU_ASSERT_PTR_NOT_NULL_FATAL(bctx);
    fk.cacheable = 1;
    CU_ASSERT_EQUAL(ops->force_pcie(bctx), 0);
    r.flags = GDRX_PIN_FLAG_FORCE_PCIE;
    CU_ASSERT_EQUAL(ops->pin(bctx, &r, &bp), -EOPNOTSUPP);
    CU_ASSERT(!called(GDRDRV_IOC_PIN_BUFFER_V2));
    ops->close(bctx);

    fake_reset(V(2, 5));
    fk.cacheable = 1;
    fk.force_pcie = 1;
    CU_ASSERT_EQUAL_FATAL(ops->open(&bctx), 0);
    CU_ASSERT_EQUAL(ops->force_pcie(bctx), 1);
    for (int force = 0; force < 2; force++) {
        r.flags = force ? GDRX_PIN_FLAG_FORCE_PCIE : 0;
        CU_ASSERT_EQUAL_FATAL(ops->pin(bctx, &r, &bp), 0);
        CU_ASSERT_EQUAL(fk.pin_flags, force ? GDRDRV_PIN_FLAG_FORCE_PCIE : 0);
        CU_ASSERT_EQUAL_FATAL(ops->map(bctx, &bp), 0);
        CU_ASSERT_EQUAL(bp.type, force ? GDRX_MAPPING_WC : GDRX_MAPPING_CACHING);
        CU_ASSERT_EQUAL(ops->unmap(bctx, &bp), 0);
        CU_ASSERT_EQUAL(ops->unpin(bctx, &bp), 0);
    }
    ops->close(bctx);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_version_rules),
    GDRX_TEST_CASE(test_open),
    GDRX_TEST_CASE(test_driver_2_5),
    GDRX_TEST_CASE(test_driver_2_4),
    GDRX_TEST_CASE(test_driver_2_0),
    GDRX_TEST_CASE(test_failures),
    GDRX_TEST_CASE(test_coherent_driver),
    GDRX_TEST_CASE(test_nothing_left_behind),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "gdrdrv_backend", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
