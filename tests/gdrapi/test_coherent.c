/*
 * test_coherent.c - gdrcopy 2.6's coherent-platform semantics through
 * libgdrapi.so.2, on a simulated GPU told it is coherent (SIMCU_COHERENT=1,
 * Grace Hopper's NVLink-C2C) and on a PCIe one: gdr_get_info_v2's
 * mapping_type is GDR_MAPPING_TYPE_CACHING for a coherent GPU's memory,
 * GDR_MAPPING_TYPE_WC with GDR_PIN_FLAG_FORCE_PCIE (which reaches the
 * driver as the export's PCIe flag) and on a PCIe GPU, and
 * GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE says 1.  dmabuf backend only (the
 * program registers these cases there, test_gdrapi.c).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>

#include "simcu.h"
#include "test_gdrapi.h"

static void coherent(int on)
{
    if (on)
        setenv("SIMCU_COHERENT", "1", 1);
    else
        unsetenv("SIMCU_COHERENT");
}

/* Pin the first GPU page of d with flags, map it (map_flags), check the
 * type the driver exported for and the type gdr_get_info_v2 reports, and
 * move data both ways. */
static void pin_map_expect(gdr_t g, CUdeviceptr d, uint32_t flags, int map_flags,
                           unsigned long long export_flags, gdr_mapping_type_t type)
{
    gdr_mh_t mh;
    gdr_info_v2_t info;
    void *map = NULL;
    unsigned long long seen = ~0ull;

    GDRX_REQUIRE(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, flags, &mh) == 0);
    CU_ASSERT_EQUAL(simcu_last_export(&seen), 0);
    CU_ASSERT_EQUAL(seen, export_flags);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, map_flags), 0);
    CU_ASSERT_EQUAL(gdr_get_info_v2(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, type);
    CU_ASSERT_EQUAL(info.wc_mapping, type == GDR_MAPPING_TYPE_WC);
    CU_ASSERT_EQUAL(info.mapped, 1);
    if (map) {
        CU_ASSERT(ga_roundtrip(mh, map, d, GPU_PAGE_SIZE, 45));
        CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, GPU_PAGE_SIZE), 0);
    }
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
}

/* A pin mapped with a type the memory does not have is refused, as
 * gdrcopy's dmabuf path refuses it, and leaves nothing mapped. */
static void map_refused(gdr_t g, CUdeviceptr d, uint32_t flags, int map_flags)
{
    gdr_mh_t mh;
    gdr_info_v2_t info;
    void *map = NULL;

    GDRX_REQUIRE(gdr_pin_buffer_v2(g, d, GPU_PAGE_SIZE, flags, &mh) == 0);
    CU_ASSERT_NOT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, map_flags), 0);
    CU_ASSERT_EQUAL(gdr_get_info_v2(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapped, 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
}

/* body(g, d) on a fresh allocation and gdr_open of a GPU that is coherent
 * (SIMCU_COHERENT=1) or not; GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE is 1 on
 * either (the dmabuf backend). */
static void on_gpu(int is_coherent, void (*body)(gdr_t g, CUdeviceptr d))
{
    CUdeviceptr d;
    gdr_t g;
    int v = -1;

    coherent(is_coherent);
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    body(g, d);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
    coherent(0);
}

static void coherent_body(gdr_t g, CUdeviceptr d)
{
    pin_map_expect(g, d, 0, GDR_MAP_FLAG_DEFAULT, 0, GDR_MAPPING_TYPE_CACHING);
    pin_map_expect(g, d, 0, GDR_MAP_FLAG_REQ_CACHE_MAPPING, 0, GDR_MAPPING_TYPE_CACHING);
    map_refused(g, d, 0, GDR_MAP_FLAG_REQ_WC_MAPPING);
}

static void force_pcie_body(gdr_t g, CUdeviceptr d)
{
    pin_map_expect(g, d, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_DEFAULT,
                   CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, GDR_MAPPING_TYPE_WC);
    pin_map_expect(g, d, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_REQ_WC_MAPPING,
                   CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, GDR_MAPPING_TYPE_WC);
    map_refused(g, d, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_REQ_CACHE_MAPPING);
}

static void pcie_body(gdr_t g, CUdeviceptr d)
{
    pin_map_expect(g, d, 0, GDR_MAP_FLAG_DEFAULT, 0, GDR_MAPPING_TYPE_WC);
    pin_map_expect(g, d, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_DEFAULT, 0, GDR_MAPPING_TYPE_WC);
    map_refused(g, d, 0, GDR_MAP_FLAG_REQ_CACHE_MAPPING);
}

static void test_coherent_gpu_caching(void)
{
    on_gpu(1, coherent_body);
}

static void test_coherent_gpu_force_pcie(void)
{
    on_gpu(1, force_pcie_body);
}

static void test_pcie_gpu_wc(void)
{
    on_gpu(0, pcie_body);
}

const struct gdrx_test_case gapi_coherent_cases[] = {
    GDRX_TEST_CASE(test_coherent_gpu_caching),
    GDRX_TEST_CASE(test_coherent_gpu_force_pcie),
    GDRX_TEST_CASE(test_pcie_gpu_wc),
    GDRX_TEST_END,
};
