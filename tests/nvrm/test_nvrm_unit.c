/*
 * test_nvrm_unit.c - the nvrm backend's parts on their own (built into
 * this program, not through libgdrx): status mapping, version policy, the
 * ioctl trace's bookkeeping and install, the VMM import route and the
 * view (BAR1 window) rules.
 * Runs under the RM-ioctl emulator like the end-to-end suite.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nvrm_test.h"
#include "nvrm_client.h"
#include "nvrm_discover.h"
#include "nvrm_hmap.h"
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
    CU_ASSERT(nvrm_version_known("580.159.04"));
    CU_ASSERT(nvrm_version_known("580.142"));
    CU_ASSERT(nvrm_version_known("580"));
    CU_ASSERT(nvrm_version_known("575.64.05"));
    CU_ASSERT(nvrm_version_known("535.43.02"));
    CU_ASSERT(!nvrm_version_known("530.41.03"));
    CU_ASSERT(!nvrm_version_known("590.1"));
    CU_ASSERT(!nvrm_version_known("999.10.01"));
    CU_ASSERT(!nvrm_version_known("5800.1"));
    CU_ASSERT(!nvrm_version_known("580x.1"));
    CU_ASSERT(!nvrm_version_known("580.1x"));
    CU_ASSERT(!nvrm_version_known(""));
    CU_ASSERT(!nvrm_version_known("abc"));
}

/* The rows: what the headers of each branch's tags said (docs/nvrm.md,
 * "Driver branches"), picked by the version, 550 split inside. */
static void test_layout_rows(void)
{
    const struct nvrm_layout *l;

    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("535.288.01"));
    CU_ASSERT_EQUAL(l->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(l->uvm_map->size, 1200);
    CU_ASSERT_EQUAL(l->uvm_map->h_memory_off, 1192);
    CU_ASSERT_EQUAL(l->dmabuf->size, 2600);
    CU_ASSERT_EQUAL(l->export_info->size, 76);
    CU_ASSERT_EQUAL(l->memory_alloc_size, 120);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_4K);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("550.40.07"));
    CU_ASSERT_EQUAL(l->uvm_map->max_gpus, 32);
    CU_ASSERT_PTR_NULL(nvrm_layout_for("550.40.20")); /* between the two layouts: unknown */
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("550.40.53"));
    CU_ASSERT_EQUAL(l->uvm_map->max_gpus, 256);
    CU_ASSERT_EQUAL(l->dmabuf->handles_off, 32);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("570.86.15"));
    CU_ASSERT_EQUAL(l->dmabuf->handles_off, 36);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_4K);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("580.159.04"));
    CU_ASSERT_EQUAL(l->status, NVRM_BRANCH_VALIDATED);
    /* validated up to the version run on hardware, no further */
    CU_ASSERT_EQUAL(nvrm_layout_for("580.65.06")->status, NVRM_BRANCH_VALIDATED);
    CU_ASSERT_EQUAL(nvrm_layout_for("580.159.05")->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(nvrm_layout_for("580.211.01")->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_LO_HI);
    CU_ASSERT_EQUAL(l->uvm_map->size, sizeof(struct nvrm_uvm_map_external));
    /* rows in order, none overlapping, every shape's tail inside its size */
    for (size_t i = 0; i < nvrm_layout_count(); i++) {
        l = nvrm_layout_at(i);
        CU_ASSERT(l->lo <= l->hi);
        if (i)
            CU_ASSERT(nvrm_layout_at(i - 1)->hi < l->lo);
        CU_ASSERT(l->uvm_map->status_off + 4 <= l->uvm_map->size);
        CU_ASSERT(l->dmabuf->status_off + 4 <= l->dmabuf->size);
        CU_ASSERT(l->export_info->metadata_off + NVRM_EXPORT_METADATA_SIZE <=
                  l->export_info->size);
    }
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

/* A device handle freed and then reused: memory under the new device is
 * live, memory of the old one stays dead.  The parent's free costs one
 * hash update, not a walk over every source. */
static void test_trace_handle_reuse(void)
{
    struct nvrm_trace_hit hit;
    int uvm = open("/dev/nvidia-uvm", O_RDWR | O_CLOEXEC);
    NVT_REQUIRE(uvm >= 0);
    struct nvrm_rm_alloc a = { .h_root = 0xc7, .h_parent = 0xd7, .h_new = 0x71,
                               .h_class = NVRM_CLASS_MEMORY_LOCAL };
    nvrm_trace_observe(3, NVRM_IOWR(NVRM_ESC_RM_ALLOC, struct nvrm_rm_alloc), &a);
    observe_map(uvm, 0x70000000, 2 * MiB, 0, 0xc7, 0x71);
    NVT_REQUIRE(nvrm_trace_lookup(0x70000000, &hit) == 0);
    uint64_t old = hit.serial;
    observe_free(0xc7, 0xd7);
    CU_ASSERT(!nvrm_trace_source_live(0xc7, 0x71, old));
    /* CUDA makes a new device with the same handle, and memory under it
     * with the same memory handle. */
    nvrm_trace_observe(3, NVRM_IOWR(NVRM_ESC_RM_ALLOC, struct nvrm_rm_alloc), &a);
    observe_map(uvm, 0x70000000, 2 * MiB, 0, 0xc7, 0x71);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x70000000, &hit), 0);
    CU_ASSERT(hit.serial != old);
    CU_ASSERT(nvrm_trace_source_live(0xc7, 0x71, hit.serial));
    CU_ASSERT(!nvrm_trace_source_live(0xc7, 0x71, old));
    /* A client freed kills it too, and the same client handle reused
     * later starts afresh. */
    observe_free(0xc7, 0xc7);
    CU_ASSERT(!nvrm_trace_source_live(0xc7, 0x71, hit.serial));
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x70000000, &hit), -ENOENT);
    uint64_t fresh = nvrm_trace_adopt(0xc7, 0x71);
    CU_ASSERT(fresh != 0 && nvrm_trace_source_live(0xc7, 0x71, fresh));
    close(uvm);
}

/* What the fake patcher saw, and what the "previous" slot value got. */
static struct {
    int           patches, chained;
    unsigned long last_req;
    void         *replacement;
} fake;

static int previous_ioctl(int fd, unsigned long req, ...)
{
    (void)fd;
    fake.chained++;
    fake.last_req = req;
    return 0; /* as the driver would for the requests used below */
}

static int fake_patch(const char *object, const char *symbol, void *replacement,
                      void **previous)
{
    int (*prev)(int, unsigned long, ...) = previous_ioctl;
    void *p;
    CU_ASSERT_STRING_EQUAL(object, "libcuda.so");
    CU_ASSERT_STRING_EQUAL(symbol, "ioctl");
    memcpy(&p, &prev, sizeof(p));
    __atomic_store_n(previous, p, __ATOMIC_RELEASE);
    fake.patches++;
    fake.replacement = replacement;
    return 0;
}

static int refusing_patch(const char *object, const char *symbol, void *replacement,
                          void **previous)
{
    (void)object, (void)symbol, (void)replacement, (void)previous;
    return -ENOENT;
}

/* The trace installs through the patcher it is given, once; its wrapper
 * calls what the slot held before for every request (an earlier patcher
 * sees them all) and records the RM requests it watches. */
static void test_trace_install_chains(void)
{
    CU_ASSERT_EQUAL(nvrm_trace_install(NULL), -EINVAL);
    CU_ASSERT_EQUAL(nvrm_trace_install(refusing_patch), -ENOENT);
    CU_ASSERT(!nvrm_trace_installed());
    CU_ASSERT_EQUAL(nvrm_trace_install(fake_patch), 0);
    CU_ASSERT(nvrm_trace_installed());
    CU_ASSERT_EQUAL(nvrm_trace_install(fake_patch), 0);
    CU_ASSERT_EQUAL(fake.patches, 1);
    NVT_REQUIRE(fake.replacement != NULL);

    int (*wrapper)(int, unsigned long, ...);
    memcpy(&wrapper, &fake.replacement, sizeof(wrapper));
    int dummy = 0;
    CU_ASSERT_EQUAL(wrapper(5, 0x5401ul, &dummy), 0); /* not an RM request */
    CU_ASSERT_EQUAL(fake.chained, 1);
    CU_ASSERT_EQUAL(fake.last_req, 0x5401ul);

    struct nvrm_rm_alloc a = { .h_root = 0xc8, .h_parent = 0xd8, .h_new = 0x81,
                               .h_class = NVRM_CLASS_MEMORY_LOCAL };
    unsigned long alloc_req = NVRM_IOWR(NVRM_ESC_RM_ALLOC, struct nvrm_rm_alloc);
    CU_ASSERT_EQUAL(wrapper(3, alloc_req, &a), 0);
    CU_ASSERT_EQUAL(fake.chained, 2);
    uint64_t s = nvrm_trace_adopt(0xc8, 0x81); /* known: same serial */
    CU_ASSERT(nvrm_trace_source_live(0xc8, 0x81, s));
    struct nvrm_rm_free f = { .h_root = 0xc8, .h_object = 0x81 };
    CU_ASSERT_EQUAL(wrapper(3, NVRM_IOWR(NVRM_ESC_RM_FREE, struct nvrm_rm_free), &f), 0);
    CU_ASSERT_EQUAL(fake.chained, 3);
    CU_ASSERT(!nvrm_trace_source_live(0xc8, 0x81, s));
}

/* The trace's hash map: keys that collide and wrap around the table
 * survive deletions of their neighbours (back-shift), through growth. */
/* The export capture: only the thread that armed it records, only while
 * armed, only successful requests; the IOCTL_XFER form counts too. */
static void observe_export(struct nvrm_export_dmabuf *e)
{
    nvrm_trace_observe(5, NVRM_IOWR(NVRM_ESC_EXPORT_TO_DMABUF, struct nvrm_export_dmabuf), e);
}

static void *observe_export_thread(void *arg)
{
    observe_export(arg);
    return NULL;
}

static void test_trace_export_capture(void)
{
    static struct nvrm_export_dmabuf e;
    struct nvrm_export_seen seen;
    pthread_t th;

    memset(&e, 0, sizeof(e));
    e.h_client = 0xc1d0001c;
    e.num_objects = e.total_objects = 1;
    e.handles[0] = 0x5c000098;
    e.offsets[0] = 0x9000;
    e.sizes[0] = 0x1000;
    observe_export(&e); /* not armed: ignored */

    nvrm_trace_capture_begin(&seen);
    NVT_REQUIRE(pthread_create(&th, NULL, observe_export_thread, &e) == 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(seen.count, 0); /* another thread's export */
    e.status = NVRM_ERR_INVALID_ARGUMENT;
    observe_export(&e);
    CU_ASSERT_EQUAL(seen.count, 0); /* refused by the RM */
    e.status = NVRM_OK;
    observe_export(&e);
    CU_ASSERT_EQUAL(seen.count, 1);
    CU_ASSERT_EQUAL(seen.num_objects, 1);
    CU_ASSERT_EQUAL(seen.h_client, 0xc1d0001c);
    CU_ASSERT_EQUAL(seen.h_memory, 0x5c000098);
    CU_ASSERT_EQUAL(seen.offset, 0x9000);
    CU_ASSERT_EQUAL(seen.size, 0x1000);
    struct nvrm_ioctl_xfer x = { .cmd = NVRM_ESC_EXPORT_TO_DMABUF, .size = sizeof(e),
                                 .ptr = (uint64_t)(uintptr_t)&e };
    e.offsets[0] = 0xa000;
    nvrm_trace_observe(5, NVRM_IOWR(NVRM_ESC_IOCTL_XFER, struct nvrm_ioctl_xfer), &x);
    CU_ASSERT_EQUAL(seen.count, 2);
    CU_ASSERT_EQUAL(seen.offset, 0xa000);
    nvrm_trace_capture_end();
    observe_export(&e);
    CU_ASSERT_EQUAL(seen.count, 2); /* disarmed */
}

static void test_hmap(void)
{
    struct nvrm_hmap m = { 0 };
    enum { N = 5000 };
    int is_new;

    CU_ASSERT_PTR_NULL(nvrm_hmap_put(&m, 0, &is_new)); /* 0 is the empty key */
    for (uint32_t i = 1; i <= N; i++) {
        struct nvrm_hmap_entry *e = nvrm_hmap_put(&m, nvrm_hmap_key(i % 7 + 1, i), &is_new);
        NVT_REQUIRE(e != NULL && is_new);
        e->a = i;
    }
    CU_ASSERT_EQUAL(m.count, N);
    for (uint32_t i = 1; i <= N; i += 2)
        nvrm_hmap_del(&m, nvrm_hmap_key(i % 7 + 1, i));
    CU_ASSERT_EQUAL(m.count, N / 2);
    int wrong = 0;
    for (uint32_t i = 1; i <= N; i++) {
        const struct nvrm_hmap_entry *e = nvrm_hmap_get(&m, nvrm_hmap_key(i % 7 + 1, i));
        wrong += (i % 2) ? e != NULL : (!e || e->a != i);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    struct nvrm_hmap_entry *e = nvrm_hmap_put(&m, nvrm_hmap_key(3, 2), &is_new);
    CU_ASSERT(e && !is_new && e->a == 2);
    nvrm_hmap_clear(&m);
    CU_ASSERT_PTR_NULL(nvrm_hmap_get(&m, nvrm_hmap_key(3, 2)));
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
    nvrm_view_release(&client, o, v, cpu, 128 * KiB, 0);
    nvrm_object_put(&client, &objects, o);
    CU_ASSERT_PTR_NULL(objects);
    nvrm_client_close(&client);
    tc_free(p);
}

/* A view maps only the window that first needed it.  A window inside it
 * shares its RM mapping (BAR1) through a CPU mapping of its own; one
 * outside gets its own view; the last release gives the view back, and an
 * unmapped window faults while the others keep working. */
static void test_view_windows(void)
{
    struct nvrm_object *o = NULL;
    struct nvrm_view *va, *vb, *vc;
    uint8_t *ca, *cb, *cc;

    if (client_up())
        return;
    setenv("GDRX_NVRM_IPC", "1", 1);
    CUdeviceptr p = tc_alloc(2 * MiB);
    tc_fill(p, 2 * MiB, 9);
    struct gdrx_pin_req r = req_for(p, 2 * MiB, p, 2 * MiB);
    struct nvrm_source src;
    NVT_REQUIRE(nvrm_discover_ipc(&client, &r, &src) == 0);
    src.min_size = src.obj_off + r.win_size;
    NVT_REQUIRE(nvrm_object_get(&client, &objects, 0, &src, &o) == 0);
    struct nvrm_emu_stats before = nvt_stats();

    NVT_REQUIRE(nvrm_view_map(&client, o, 0, 128 * KiB, &va, &ca) == 0);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(128 * KiB));
    CU_ASSERT_EQUAL(va->obj_off, 0);
    CU_ASSERT_EQUAL(va->len, 128 * KiB);

    NVT_REQUIRE(nvrm_view_map(&client, o, 64 * KiB, 64 * KiB, &vc, &cc) == 0);
    CU_ASSERT_PTR_EQUAL(vc, va);                 /* fits: shares the RM mapping */
    CU_ASSERT_EQUAL(va->refs, 2);
    CU_ASSERT(cc < ca || cc >= ca + 128 * KiB);  /* ... but not the CPU range */
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(128 * KiB));
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live + 2);
    ca[64 * KiB + 5] = 0x5a;                     /* the same GPU bytes */
    CU_ASSERT_EQUAL(cc[5], 0x5a);
    unsigned char *all = malloc(128 * KiB);
    tc_pattern(all, 128 * KiB, 9);
    all[64 * KiB + 5] = 0x5a;
    CU_ASSERT_EQUAL(memcmp(cc, all + 64 * KiB, 64 * KiB), 0);
    free(all);

    NVT_REQUIRE(nvrm_view_map(&client, o, 256 * KiB, 64 * KiB, &vb, &cb) == 0);
    CU_ASSERT_PTR_NOT_EQUAL(vb, va);             /* outside: a view of its own */
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 2);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(192 * KiB));

    nvrm_view_release(&client, o, va, ca, 128 * KiB, 0);
    /* The mappings are MADV_DONTFORK, so a forked prober would see none:
     * ask the kernel here instead (msync: ENOMEM where nothing is mapped). */
    CU_ASSERT(msync(ca, 4096, MS_ASYNC) == -1 && errno == ENOMEM);
    CU_ASSERT_EQUAL(msync(cb, 4096, MS_ASYNC), 0);
    CU_ASSERT_EQUAL(msync(cc, 4096, MS_ASYNC), 0);
    cc[7] = 0x77;                                /* still the GPU's bytes */
    uint8_t byte = 0;
    CU_ASSERT_EQUAL(tc.MemcpyDtoH(&byte, p + 64 * KiB + 7, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(byte, 0x77);
    CU_ASSERT_EQUAL(nvt_stats().rm_maps_live, before.rm_maps_live + 2); /* c holds va */
    nvrm_view_release(&client, o, vc, cc, 64 * KiB, 0);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(64 * KiB));

    /* A revoked window belongs to the core: we leave it mapped as is. */
    nvrm_view_release(&client, o, vb, cb, 64 * KiB, 1);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live + 1); /* the core's piece */
    CU_ASSERT_EQUAL(munmap(cb, 64 * KiB), 0);                   /* as the core would */
    CU_ASSERT_EQUAL(nvt_stats().cpu_maps_live, before.cpu_maps_live);
    nvrm_object_put(&client, &objects, o);
    nvrm_client_close(&client);
    tc_free(p);
}

/* Issue 43, defect 11: a 32-GPU map request (535's 1200 bytes) that ends
 * where an inaccessible page starts, seen while a row not yet proven for
 * this driver expects 256 GPUs (575's, checked only): that row's status,
 * hClient and hMemory lie past the request.  Nothing is read there (no
 * fault) and nothing recorded; once proven, the row's fields are read in
 * place again. */
struct short_map {
    int      uvm;
    uint8_t *req;
};

static void observe_short_map(void *arg)
{
    struct short_map *s = arg;
    nvrm_trace_observe(s->uvm, NVRM_UVM_MAP_EXTERNAL_ALLOCATION, s->req);
}

static void test_trace_unproven_row_stays_inside(void)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 1200;
    /* inaccessible up to past the largest request any row reads */
    const size_t guard = (sizeof(struct nvrm_uvm_map_external) / page + 1) * page;
    struct nvrm_trace_hit hit;
    struct short_map s = { .uvm = open("/dev/nvidia-uvm", O_RDWR | O_CLOEXEC) };
    uint8_t *two = mmap(NULL, page + guard, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    NVT_REQUIRE(s.uvm >= 0 && two != MAP_FAILED && mprotect(two + page, guard, PROT_NONE) == 0);
    const uint64_t head[3] = { 0x30000000, 2 * MiB, 0 }; /* base, length, offset */
    s.req = two + page - size;
    memset(s.req, 0, size);
    memcpy(s.req, head, sizeof(head));

    nvrm_layout_set_active(nvrm_layout_for("575.64.05"));
    CU_ASSERT_EQUAL(nvrm_layout_active()->uvm_map->max_gpus, 256);
    CU_ASSERT(!nvrm_layout_active_proven());
    CU_ASSERT_EQUAL(gdrx_test_signal_of(observe_short_map, &s), 0);
    observe_short_map(&s);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x30000000, &hit), -ENOENT);
    /* a request of the row's size is recorded, read safely or in place */
    observe_map(s.uvm, 0x30000000, 2 * MiB, 0, 0xc1, 0x31);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x30000000, &hit), 0);
    nvrm_layout_set_proven();
    CU_ASSERT(nvrm_layout_active_proven());
    observe_map(s.uvm, 0x30400000, 2 * MiB, 0, 0xc1, 0x32);
    CU_ASSERT_EQUAL(nvrm_trace_lookup(0x30400000, &hit), 0);
    CU_ASSERT_EQUAL(hit.h_memory, 0x32);
    nvrm_layout_set_active(nvrm_layout_for("580.159.04"));
    CU_ASSERT(nvrm_layout_active_proven()); /* validated */
    munmap(two, page + guard);
    close(s.uvm);
}

static const struct gdrx_test_case unit_cases[] = {
    GDRX_TEST_CASE(test_status_errno),
    GDRX_TEST_CASE(test_version_policy),
    GDRX_TEST_CASE(test_layout_rows),
    GDRX_TEST_CASE(test_trace_records),
    GDRX_TEST_CASE(test_trace_handle_reuse),
    GDRX_TEST_CASE(test_trace_install_chains),
    GDRX_TEST_CASE(test_trace_export_capture),
    GDRX_TEST_CASE(test_trace_unproven_row_stays_inside),
    GDRX_TEST_CASE(test_hmap),
    GDRX_TEST_CASE(test_import_from_fd),
    GDRX_TEST_CASE(test_view_windows),
    GDRX_TEST_END,
};

/* The trace reads the active row's layouts: 580's, as the emulator's
 * default version. */
static int unit_init(void)
{
    nvrm_layout_set_active(nvrm_layout_for("580.159.04"));
    return 0;
}

static const struct gdrx_test_suite suites[] = {
    { "nvrm_unit", unit_init, NULL, unit_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return 2;
    return gdrx_test_main(argc, argv, suites);
}
