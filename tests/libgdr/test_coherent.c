/*
 * test_coherent.c - the mapping type and copy variants libgdrx picks at
 * map time, coherent GPU (SIMCU_COHERENT=1, Grace Hopper's NVLink-C2C) or
 * PCIe: cached mapping and LIBC copies for coherent memory, write-combined
 * and the default streaming variants through the BAR, GDRX_PIN_FLAG_FORCE_PCIE
 * for the BAR on a coherent GPU.  A wrong choice fails here, not only
 * slows down: each case asserts the type, the variants the pin's copies
 * run (gdrx_pin_copy_variants) and the export's flags the driver saw
 * (simcu_last_export), and moves data both ways checked through CUDA.
 * Needs the simulated GPU and the dmabuf backend (the nvrm backend maps
 * the BAR only; gdrdrv's choice is test_gdrdrv's).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "simcu.h" /* CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE before CUDA 12.8 */
#include "tcuda.h"

#define LEN (256u * 1024u)

struct want {
    gdrx_mapping_type_t type;
    gdrx_copy_variant_t to, from;
    unsigned long long  export_flags;
};

static void coherent(int on)
{
    if (on)
        setenv("SIMCU_COHERENT", "1", 1);
    else
        unsetenv("SIMCU_COHERENT");
}

/* The process's default variants: what a WC mapping must get. */
static struct want wc_want(gdrx_t g)
{
    uint64_t to = 0, from = 0;

    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_COPY_TO_VARIANT, &to), 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_COPY_FROM_VARIANT, &from), 0);
    return (struct want){ GDRX_MAPPING_WC, (gdrx_copy_variant_t)to,
                          (gdrx_copy_variant_t)from, 0 };
}

/* Pin [p+off, +len) with flags, map, check what was chosen against w,
 * and move data both ways through the mapping. */
static void pin_map_check(gdrx_t g, CUdeviceptr p, uint32_t flags, const struct want *w)
{
    gdrx_pin_t pin;
    void *cpu;
    struct gdrx_pin_info info;
    gdrx_copy_variant_t to = GDRX_COPY_AUTO, from = GDRX_COPY_AUTO;
    unsigned long long export_flags = ~0ull;

    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, LEN, flags, &pin), 0);
    CU_ASSERT_EQUAL(tsim.last_export(&export_flags), 0);
    CU_ASSERT_EQUAL(export_flags, w->export_flags);
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, pin, &to, &from), -EINVAL); /* not mapped */
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, w->type);
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, pin, &to, &from), 0);
    CU_ASSERT_EQUAL(to, w->to);
    CU_ASSERT_EQUAL(from, w->from);
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, pin, NULL, NULL), 0);

    unsigned char *buf = malloc(LEN), *want = malloc(LEN);
    GDRX_REQUIRE(buf && want);
    tc_pattern(buf, LEN, 31);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, cpu, buf, LEN), 0);
    CU_ASSERT(tc_check(p, LEN, 31));
    tc_fill(p, LEN, 32);
    tc_pattern(want, LEN, 32);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, buf, cpu, LEN), 0);
    CU_ASSERT_EQUAL(memcmp(buf, want, LEN), 0);
    free(buf);
    free(want);

    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, pin, &to, &from), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, pin, &to, &from), -EINVAL);
}

/* body(g, p) on a fresh allocation and context of a GPU that is coherent
 * (SIMCU_COHERENT=1) or not. */
static void on_gpu(int is_coherent, void (*body)(gdrx_t g, CUdeviceptr p))
{
    coherent(is_coherent);
    GDRX_REQUIRE(tc_setup(0) == 0);
    CUdeviceptr p = tc_alloc(LEN);
    gdrx_t g = tc_open();
    body(g, p);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
    coherent(0);
}

static const struct want cached = { GDRX_MAPPING_CACHING, GDRX_COPY_LIBC, GDRX_COPY_LIBC, 0 };

/* A coherent GPU: cached mapping, memcpy both ways, the default export. */
static void coherent_body(gdrx_t g, CUdeviceptr p)
{
    pin_map_check(g, p, 0, &cached);
}

/* FORCE_PCIE on a coherent GPU: the export asks for the BAR, the mapping
 * is write-combined and the copies are the streaming ones; the next pin
 * without the flag is cached again (the choice is per pin). */
static void force_pcie_body(gdrx_t g, CUdeviceptr p)
{
    struct want w = wc_want(g);

    w.export_flags = CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE;
    pin_map_check(g, p, GDRX_PIN_FLAG_FORCE_PCIE, &w);
    pin_map_check(g, p, 0, &cached);
}

/* A PCIe GPU: write-combined with or without the flag, which is not
 * passed on (drivers before CUDA 12.8 refuse any export flag). */
static void pcie_body(gdrx_t g, CUdeviceptr p)
{
    struct want w = wc_want(g);

    pin_map_check(g, p, 0, &w);
    pin_map_check(g, p, GDRX_PIN_FLAG_FORCE_PCIE, &w);
}

static void test_coherent_gpu_maps_cached(void)
{
    on_gpu(1, coherent_body);
}

static void test_force_pcie_maps_bar(void)
{
    on_gpu(1, force_pcie_body);
}

static void test_pcie_gpu_maps_wc(void)
{
    on_gpu(0, pcie_body);
}

/* The dmabuf backend honours the flag everywhere; unknown flags stay
 * refused; a handle that names no pin has no variants. */
static void test_force_pcie_attribute(void)
{
    uint64_t v = 7;

    GDRX_REQUIRE(tc_setup(0) == 0);
    gdrx_t g = tc_open();
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_FLAG_FORCE_PCIE, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CUdeviceptr p = tc_alloc(LEN);
    gdrx_pin_t pin;
    CU_ASSERT_EQUAL(gdrx_pin(g, p, LEN, 8u, &pin), -EINVAL);
    gdrx_pin_t none = { 0 };
    CU_ASSERT_EQUAL(gdrx_pin_copy_variants(g, none, NULL, NULL), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_coherent_gpu_maps_cached),
    GDRX_TEST_CASE(test_force_pcie_maps_bar),
    GDRX_TEST_CASE(test_pcie_gpu_maps_wc),
    GDRX_TEST_CASE(test_force_pcie_attribute),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "coherent", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    const char *backend = getenv("GDRX_BACKEND");
    if (!tc_load() || !tsim.last_export || !backend || strcmp(backend, "dmabuf") != 0) {
        static const struct gdrx_test_suite none[] = { GDRX_SUITE_END };
        tc_report_skip("coherent", "needs the simulated GPU and GDRX_BACKEND=dmabuf");
        return gdrx_test_main(argc, argv, none);
    }
    return gdrx_test_main(argc, argv, suites);
}
