/*
 * test_nvrm_unit_view.c - the nvrm backend's client, objects and views on
 * their own (test_nvrm_unit.c runs them): the VMM import route and the
 * view (BAR1 window) rules.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nvrm_test.h"
#include "nvrm_client.h"
#include "nvrm_discover.h"
#include "nvrm_object.h"

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

const struct gdrx_test_case nvrm_unit_view_cases[] = {
    GDRX_TEST_CASE(test_import_from_fd),
    GDRX_TEST_CASE(test_view_windows),
    GDRX_TEST_END,
};
