/*
 * test_nvrm_unit.c - the nvrm backend's parts on their own (built into
 * this program, not through libgdrx): status mapping, version policy, the
 * ioctl trace's bookkeeping, the VMM import route and the view page rules.
 * Runs under the RM-ioctl emulator like the end-to-end suite.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nvrm_test.h"
#include "nvrm_client.h"
#include "nvrm_discover.h"
#include "nvrm_object.h"
#include "nvrm_rm.h"
#include "nvrm_trace.h"

static void test_status_errno(void)
{
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_OK), 0);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INSUFFICIENT_PERMISSIONS), -EPERM);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INSUFFICIENT_RESOURCES), -ENOSPC);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_NO_MEMORY), -ENOMEM);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INVALID_OBJECT_HANDLE), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_NOT_SUPPORTED), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_STATE_IN_USE), -EBUSY);
    CU_ASSERT_EQUAL(nvrm_status_errno(0x12345), -EIO);
    CU_ASSERT_STRING_EQUAL(nvrm_status_name(NVRM_ERR_INVALID_CLIENT), "NV_ERR_INVALID_CLIENT");
    CU_ASSERT_PTR_NOT_NULL(nvrm_status_name(0x12345));
}

static void test_version_policy(void)
{
    CU_ASSERT(nvrm_version_validated("580.159.04"));
    CU_ASSERT(nvrm_version_validated("580.142"));
    CU_ASSERT(nvrm_version_validated("580"));
    CU_ASSERT(!nvrm_version_validated("575.64.05"));
    CU_ASSERT(!nvrm_version_validated("590.1"));
    CU_ASSERT(!nvrm_version_validated("5800.1"));
    CU_ASSERT(!nvrm_version_validated("580x.1"));
    CU_ASSERT(!nvrm_version_validated(""));
    CU_ASSERT(!nvrm_version_validated("abc"));
}

/* ------------------------------------------------------------ trace */

static void observe_map(int uvm, uint64_t base, uint64_t len, uint64_t off, uint32_t c,
                        uint32_t m)
{
    struct nvrm_uvm_map_external *p = calloc(1, sizeof(*p));
    p->base = base;
    p->length = len;
    p->offset = off;
    p->h_client = c;
    p->h_memory = m;
    nvrm_trace_observe(uvm, NVRM_UVM_MAP_EXTERNAL_ALLOCATION, p);
    free(p);
}

static void observe_free(uint32_t c, uint32_t obj)
{
    struct nvrm_rm_free f = { .h_root = c, .h_object = obj };
    nvrm_trace_observe(3, NVRM_IOWR(NVRM_ESC_RM_FREE, struct nvrm_rm_free), &f);
}

static void test_trace_records(void)
{
    struct nvrm_trace_hit hit;
    int uvm = open("/dev/nvidia-uvm", O_RDWR | O_CLOEXEC);
    int other = open("/dev/null", O_RDWR | O_CLOEXEC);
    NVT_REQUIRE(uvm >= 0 && other >= 0);

    observe_map(uvm, 0x10000000, 2 * MiB, 0x200000, 0xc1, 0x11);
    observe_map(uvm, 0x10400000, 2 * MiB, 0, 0xc1, 0x12);
    observe_map(other, 0x20000000, 2 * MiB, 0, 0xc1, 0x13); /* not UVM: ignored */
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x20000000, &hit), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10000000 + 5, &hit), 0);
    CU_ASSERT_EQUAL(hit.base, 0x10000000);
    CU_ASSERT_EQUAL(hit.offset, 0x200000);
    CU_ASSERT_EQUAL(hit.h_memory, 0x11);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10000000 + 2 * MiB, &hit), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10400000 + 2 * MiB - 1, &hit), 0);
    CU_ASSERT_EQUAL(hit.h_memory, 0x12);
    uint64_t s11 = nvrm_trace_adopt(0xc1, 0x11);
    CU_ASSERT(nvrm_trace_source_live(0xc1, 0x11, s11));

    /* A new mapping over part of an old one replaces it. */
    observe_map(uvm, 0x10000000 + MiB, 2 * MiB, 0, 0xc1, 0x14);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10000000, &hit), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10000000 + MiB, &hit), 0);
    CU_ASSERT_EQUAL(hit.h_memory, 0x14);

    /* CUDA frees 0x12: its records and its serial die; the same handle
     * value seen again is another object. */
    observe_free(0xc1, 0x12);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x10400000, &hit), -ENOENT);
    observe_free(0xc1, 0x11);
    CU_ASSERT(!nvrm_trace_source_live(0xc1, 0x11, s11));
    uint64_t again = nvrm_trace_adopt(0xc1, 0x11);
    CU_ASSERT(again != 0 && again != s11);

    /* Freeing a device frees the memory allocated under it. */
    struct nvrm_rm_alloc a = { .h_root = 0xc2, .h_parent = 0xd2, .h_new = 0x21,
                               .h_class = NVRM_CLASS_MEMORY_LOCAL };
    nvrm_trace_observe(3, NVRM_IOWR(NVRM_ESC_RM_ALLOC, struct nvrm_rm_alloc), &a);
    observe_map(uvm, 0x30000000, 2 * MiB, 0, 0xc2, 0x21);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x30000000, &hit), 0);
    uint64_t s21 = hit.serial;
    observe_free(0xc2, 0xd2);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x30000000, &hit), -ENOENT);
    CU_ASSERT(!nvrm_trace_source_live(0xc2, 0x21, s21));

    /* UVM_FREE drops the range only. */
    observe_map(uvm, 0x40000000, 2 * MiB, 0, 0xc3, 0x31);
    struct nvrm_uvm_free uf = { .base = 0x40000000, .length = 2 * MiB };
    nvrm_trace_observe(uvm, NVRM_UVM_FREE, &uf);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x40000000, &hit), -ENOENT);

    /* Freeing a client frees everything of it. */
    observe_map(uvm, 0x50000000, 2 * MiB, 0, 0xc4, 0x41);
    observe_map(uvm, 0x50200000, 2 * MiB, 0, 0xc4, 0x42);
    observe_free(0xc4, 0xc4);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x50000000, &hit), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x50200000, &hit), -ENOENT);

    /* A failed request records nothing. */
    struct nvrm_uvm_map_external *p = calloc(1, sizeof(*p));
    p->base = 0x60000000;
    p->length = 2 * MiB;
    p->h_client = 0xc5;
    p->h_memory = 0x51;
    p->status = NVRM_ERR_INVALID_ARGUMENT;
    nvrm_trace_observe(uvm, NVRM_UVM_MAP_EXTERNAL_ALLOCATION, p);
    free(p);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x60000000, &hit), -ENOENT);
    close(uvm);
    close(other);
}

/* ------------------------------------------------- client and objects */

static struct nvrm_client client;
static struct nvrm_object *objects;

static int client_up(void)
{
    const struct gdrx_cuda *cu;
    const struct nvrm_cuda *cx;

    if (nvt_setup(0, 0) || gdrx_cuda_get(&cu) || nvrm_cuda_get(&cx)) {
        CU_FAIL("CUDA setup");
        return -1;
    }
    int rc = nvrm_client_open(&client, cu, cx);
    CU_ASSERT_EQUAL(rc, 0);
    return rc;
}

/* A pin request for [p, p+len) as the core would describe it. */
static struct gdrx_pin_req req_for(CUdeviceptr base, size_t size, CUdeviceptr p, size_t len)
{
    struct gdrx_pin_req r = { .dptr = p, .len = len, .alloc_base = base, .alloc_size = size };
    r.win_base = p & ~(GDRX_GPU_PAGE_SIZE - 1);
    r.win_size = ((p + len + GDRX_GPU_PAGE_SIZE - 1) & ~(GDRX_GPU_PAGE_SIZE - 1)) - r.win_base;
    return r;
}

/* Memory exported as an fd (what cuMemExportToShareableHandle gives for
 * cuMemCreate'd memory) is imported and mapped. */
static void test_import_from_fd(void)
{
    struct nvrm_object *o = NULL;
    struct nvrm_view *v;
    uint8_t *cpu;
    int fd = -1;

    if (client_up())
        return;
    CUdeviceptr p = tc_alloc(4 * MiB);
    tc_fill(p, 4 * MiB, 5);
    NVT_REQUIRE(nvt_sim_export_fd(p, &fd) == 0);
    struct nvrm_source src = { .kind = NVRM_OBJ_IMPORT, .export_fd = fd, .buffer_id = 99,
                               .obj_off = 64 * KiB, .min_size = 192 * KiB };
    NVT_REQUIRE(nvrm_object_get(&client, &objects, 0, &src, &o) == 0);
    CU_ASSERT_EQUAL(src.export_fd, -1);
    CU_ASSERT_EQUAL(o->size, 4 * MiB);
    NVT_REQUIRE(nvrm_view_map(&client, o, 64 * KiB, 128 * KiB, &v, &cpu) == 0);
    /* The mapping starts at byte 64 KiB of the allocation. */
    unsigned char *all = malloc(192 * KiB);
    tc_pattern(all, 192 * KiB, 5);
    CU_ASSERT_EQUAL(memcmp(cpu, all + 64 * KiB, 128 * KiB), 0);
    free(all);
    nvrm_view_release(&client, o, v, 64 * KiB, 128 * KiB, 0);
    nvrm_object_put(&client, &objects, o);
    CU_ASSERT_PTR_NULL(objects);
    nvrm_client_close(&client);
    tc_free(p);
}

struct touch {
    volatile uint8_t *p;
};

static void touch(void *arg)
{
    const struct touch *t = arg;
    t->p[0] = 1;
}

/* One 64 KiB page is never held by two mapped pins of one view, and an
 * unmapped window faults while the rest of the view keeps working. */
static void test_view_pages(void)
{
    struct nvrm_object *o = NULL;
    struct nvrm_view *va, *vb, *vc;
    uint8_t *ca, *cb, *cc;

    if (client_up())
        return;
    setenv("GDRX_NVRM_IPC", "1", 1);
    CUdeviceptr p = tc_alloc(2 * MiB);
    struct gdrx_pin_req r = req_for(p, 2 * MiB, p, 2 * MiB);
    struct nvrm_source src;
    NVT_REQUIRE(nvrm_discover_ipc(&client, &r, &src) == 0);
    src.min_size = src.obj_off + r.win_size;
    NVT_REQUIRE(nvrm_object_get(&client, &objects, 0, &src, &o) == 0);
    struct nvrm_emu_stats before = nvt_stats();

    NVT_REQUIRE(nvrm_view_map(&client, o, 0, 128 * KiB, &va, &ca) == 0);
    NVT_REQUIRE(nvrm_view_map(&client, o, 256 * KiB, 64 * KiB, &vb, &cb) == 0);
    CU_ASSERT_PTR_EQUAL(va, vb);                    /* one RM mapping ... */
    CU_ASSERT_EQUAL(nvt_stats().rm_maps, before.rm_maps + 1);
    NVT_REQUIRE(nvrm_view_map(&client, o, 64 * KiB, 64 * KiB, &vc, &cc) == 0);
    CU_ASSERT_PTR_NOT_EQUAL(vc, va);                /* ... unless a page is held */
    CU_ASSERT_EQUAL(nvt_stats().rm_maps, before.rm_maps + 2);

    nvrm_view_release(&client, o, va, 0, 128 * KiB, 0);
    struct touch ta = { ca }, tb = { cb }, tcc = { cc };
    CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, &ta), SIGSEGV);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, &tb), 0);
    CU_ASSERT_EQUAL(gdrx_test_signal_of(touch, &tcc), 0);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps_live, before.rm_maps_live + 2);

    /* The released pages are not handed out again from that view. */
    struct nvrm_view *vd;
    uint8_t *cd;
    NVT_REQUIRE(nvrm_view_map(&client, o, 0, 64 * KiB, &vd, &cd) == 0);
    CU_ASSERT_PTR_NOT_EQUAL(vd, va);
    nvrm_view_release(&client, o, vd, 0, 64 * KiB, 0);
    nvrm_view_release(&client, o, vc, 64 * KiB, 64 * KiB, 0);
    /* A revoked window belongs to the core: we leave it mapped as is. */
    nvrm_view_release(&client, o, vb, 256 * KiB, 64 * KiB, 1);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live + 1); /* the core's piece */
    CU_ASSERT_EQUAL(munmap(cb, 64 * KiB), 0);                   /* as the core would */
    CU_ASSERT_EQUAL(nvt_stats().cpu_maps_live, before.cpu_maps_live);
    nvrm_object_put(&client, &objects, o);
    nvrm_client_close(&client);
    tc_free(p);
}

static const struct gdrx_test_case unit_cases[] = {
    GDRX_TEST_CASE(test_status_errno),
    GDRX_TEST_CASE(test_version_policy),
    GDRX_TEST_CASE(test_trace_records),
    GDRX_TEST_CASE(test_import_from_fd),
    GDRX_TEST_CASE(test_view_pages),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "nvrm_unit", NULL, NULL, unit_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return 2;
    return gdrx_test_main(argc, argv, suites);
}
