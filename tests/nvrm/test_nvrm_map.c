/*
 * test_nvrm_map.c - finding CUDA's RM handle for a pointer (ioctl trace,
 * IPC opt-in), duplicating it, mapping it, and the offsets of
 * sub-allocations (views shared between pins: test_nvrm_window.c).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvrm_test.h"

/* Allocated after gdrx_open: the trace knows it; data goes both ways. */
static void test_trace_map_roundtrip(void)
{
    gdrx_t g;
    gdrx_pin_t pin;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr p = tc_alloc(1 * MiB);
    struct nvrm_emu_stats before = nvt_stats();
    void *cpu = nvt_pin_map(g, p, 1 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    struct nvrm_emu_stats after = nvt_stats();
    CU_ASSERT_EQUAL(after.dups, before.dups + 1);
    CU_ASSERT_EQUAL(after.rm_maps, before.rm_maps + 1);
    CU_ASSERT(nvt_roundtrip(pin, cpu, p, 1 * MiB, 11));

    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.backend, GDRX_BACKEND_NVRM);
    CU_ASSERT_EQUAL(info.mapping_type, GDRX_MAPPING_WC);
    CU_ASSERT_PTR_EQUAL(info.cpu_ptr, cpu);
    CU_ASSERT_EQUAL(info.stale, 0);

    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    nvt_assert_released(&before);
    tc_free(p);
    gdrx_close(g);
}

/* Sizes from 4 B to 64 MiB, pinned whole and at odd interior ranges. */
static void test_sizes_and_interior_ranges(void)
{
    static const size_t sizes[] = { 4, 100, 4 * KiB, 64 * KiB + 3, 2 * MiB, 3 * MiB + 5,
                                    64 * MiB };
    gdrx_t g;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        CUdeviceptr p = tc_alloc(n);
        gdrx_pin_t pin;
        void *cpu = nvt_pin_map(g, p, n, &pin);
        NVT_REQUIRE(cpu != NULL);
        CU_ASSERT(nvt_roundtrip(pin, cpu, p, n, (uint32_t)(20 + i)));
        CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
        if (n > 70 * KiB) {
            /* A range that starts mid-page and crosses 64 KiB pages. */
            size_t off = 65 * KiB + 7, len = n - off - 1;
            cpu = nvt_pin_map(g, p + off, len, &pin);
            NVT_REQUIRE(cpu != NULL);
            CU_ASSERT(nvt_roundtrip(pin, cpu, p + off, len, (uint32_t)(40 + i)));
            CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
        }
        tc_free(p);
    }
    gdrx_close(g);
}

/* Small buffers packed into one 2 MiB object, at 512 B alignment: each
 * mapping reaches its own bytes, and writes stay inside them. */
static void test_suballocation_offsets(void)
{
    static const size_t sizes[] = { 4, 100, 4 * KiB, 70 * KiB, 1000, 128 * KiB };
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    CUdeviceptr p[N];
    gdrx_pin_t pin[N];
    void *cpu[N];
    gdrx_t g;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    for (int i = 0; i < N; i++) {
        p[i] = tc_alloc(sizes[i]);
        tc_fill(p[i], sizes[i], 100 + (uint32_t)i);
    }
    /* They share an object, and not all start on a GPU page. */
    CU_ASSERT(p[1] - p[0] < 2 * MiB && (p[1] & 0xffff) != 0);
    for (int i = 0; i < N; i++) {
        cpu[i] = nvt_pin_map(g, p[i], sizes[i], &pin[i]);
        NVT_REQUIRE(cpu[i] != NULL);
        /* Reading through the mapping shows this buffer's bytes. */
        unsigned char *want = malloc(sizes[i]), *got = malloc(sizes[i]);
        tc_pattern(want, sizes[i], 100 + (uint32_t)i);
        CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin[i], got, cpu[i], sizes[i]), 0);
        CU_ASSERT_EQUAL(memcmp(want, got, sizes[i]), 0);
        free(want);
        free(got);
    }
    /* Writing one buffer through its mapping leaves the others alone. */
    for (int i = 0; i < N; i++) {
        unsigned char *buf = malloc(sizes[i]);
        tc_pattern(buf, sizes[i], 200 + (uint32_t)i);
        CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin[i], cpu[i], buf, sizes[i]), 0);
        free(buf);
    }
    for (int i = 0; i < N; i++)
        CU_ASSERT(tc_check(p[i], sizes[i], 200 + (uint32_t)i));
    CU_ASSERT_EQUAL(nvt_stats().rm_maps_live >= 1, 1);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(gdrx_unpin(g, pin[i]), 0);
        tc_free(p[i]);
    }
    gdrx_close(g);
}

/* CUDA frees an object and a new one reuses its address (and could reuse
 * its handle value): the new pin must duplicate the new object. */
static void test_new_object_at_old_address(void)
{
    struct nvt_mapped m;

    if (nvt_mapped_alloc(&m, 4 * MiB))
        return;
    gdrx_t g = m.g;
    gdrx_pin_t pin;
    CUdeviceptr p = m.p;
    CU_ASSERT_EQUAL(gdrx_unpin(g, m.pin), 0);
    tc_free(p);
    struct nvrm_emu_stats before = nvt_stats();
    CUdeviceptr q = tc_alloc(4 * MiB);
    CU_ASSERT_EQUAL(q, p);
    void *cpu = nvt_pin_map(g, q, 4 * MiB, &pin);
    NVT_REQUIRE(cpu != NULL);
    CU_ASSERT_EQUAL(nvt_stats().dups, before.dups + 1);
    CU_ASSERT(nvt_roundtrip(pin, cpu, q, 4 * MiB, 9));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    tc_free(q);
    gdrx_close(g);
}

/* Map, unmap, map again: the second mapping is a fresh view of the same
 * memory. */
static void test_remap_after_unmap(void)
{
    struct nvt_mapped m;
    void *cpu2 = NULL;

    if (nvt_mapped_alloc(&m, 128 * KiB))
        return;
    gdrx_t g = m.g;
    gdrx_pin_t pin = m.pin;
    CUdeviceptr p = m.p;
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_map(g, pin, &cpu2), 0);
    NVT_REQUIRE(cpu2 != NULL);
    CU_ASSERT(nvt_roundtrip(pin, cpu2, p, 128 * KiB, 5));
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    tc_free(p);
    gdrx_close(g);
}

const struct gdrx_test_case nvrm_map_cases[] = {
    GDRX_TEST_CASE(test_trace_map_roundtrip),
    GDRX_TEST_CASE(test_sizes_and_interior_ranges),
    GDRX_TEST_CASE(test_suballocation_offsets),
    GDRX_TEST_CASE(test_new_object_at_old_address),
    GDRX_TEST_CASE(test_remap_after_unmap),
    GDRX_TEST_END,
};
