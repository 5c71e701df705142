/*
 * test_pin_align.c - any address and length inside one allocation: GPU-page
 * alignment handled by the library, the CPU pointer naming the exact byte,
 * sub-allocated small buffers sharing a 64 KiB page, sizes from 1 byte up.
 * Every check reads or writes the device through CUDA.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcuda.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define GPU_PAGE (64u * KiB)

/* Pin [p+off, +len) of an allocation of alloc_len bytes; check the query,
 * write a pattern through the mapping and check through CUDA that exactly
 * those bytes changed; read a pattern CUDA wrote back through the mapping. */
static void pin_and_check(gdrx_t g, CUdeviceptr p, size_t alloc_len, size_t off, size_t len,
                          uint32_t seed)
{
    gdrx_pin_t pin;
    void *cpu;
    struct gdrx_pin_info info;
    uint64_t d = p + off;

    tc_fill(p, alloc_len, seed);
    int rc = gdrx_pin(g, d, len, 0, &pin);
    if (rc) {
        fprintf(stderr, "    pin(+%zu, %zu) of %zu: %s\n", off, len, alloc_len, gdrx_strerror(rc));
        CU_FAIL("pin failed");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.dptr, d);
    CU_ASSERT_EQUAL(info.len, len);
    CU_ASSERT_EQUAL(info.alloc_base, p);
    CU_ASSERT_EQUAL(info.alloc_size, alloc_len);
    CU_ASSERT_PTR_EQUAL(info.cpu_ptr, cpu);
    CU_ASSERT(info.page_size > 0 && (info.page_size & (info.page_size - 1)) == 0);
    CU_ASSERT_EQUAL(info.pinned_base % info.page_size, 0);
    CU_ASSERT_EQUAL(info.pinned_size % info.page_size, 0);
    CU_ASSERT(info.pinned_base <= d && d + len <= info.pinned_base + info.pinned_size);
    /* the cover is minimal: less than one page of slack on either side */
    CU_ASSERT(d - info.pinned_base < info.page_size);
    CU_ASSERT(info.pinned_base + info.pinned_size - (d + len) < info.page_size);
    if (info.page_size == GPU_PAGE)
        CU_ASSERT_EQUAL(info.pinned_base, d & ~(uint64_t)(GPU_PAGE - 1));

    /* read: bytes CUDA wrote at [d, d+len) */
    unsigned char *want = malloc(alloc_len), *got = malloc(len);
    tc_pattern(want, alloc_len, seed);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, got, cpu, len), 0);
    CU_ASSERT_EQUAL(memcmp(got, want + off, len), 0);
    /* write: only [d, d+len) changes */
    tc_pattern(got, len, seed + 1000);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, cpu, got, len), 0);
    memcpy(want + off, got, len);
    unsigned char *dev = malloc(alloc_len);
    CU_ASSERT_EQUAL(tc.MemcpyDtoH(dev, p, alloc_len), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(dev, want, alloc_len), 0);
    /* the byte before and after are out of range for this pin */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, (char *)cpu - 1, got, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, (char *)cpu + len, got, 1), -ERANGE);
    free(want);
    free(got);
    free(dev);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
}

static void test_offsets_and_lengths(void)
{
    static const size_t offs[] = { 0, 1, 7, 63, 4095, 4096, 4097, 65535, 65536, 65537,
                                   100000, 3 * 65536 - 1 };
    static const size_t lens[] = { 1, 2, 3, 8, 63, 64, 65, 4095, 4096, 4097,
                                   65535, 65536, 65537, 131072 + 5 };
    const size_t alloc = 512 * KiB;
    uint32_t seed = 1;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(alloc);
    for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
        for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
            pin_and_check(g, p, alloc, offs[i], lens[j], seed++);
    /* the very last byte, and the whole allocation */
    pin_and_check(g, p, alloc, alloc - 1, 1, seed++);
    pin_and_check(g, p, alloc, 0, alloc, seed++);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

static void test_random_ranges(void)
{
    const size_t alloc = 3 * MiB + 12345; /* not a page multiple, own object */
    uint64_t rs = 42;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(alloc);
    for (int i = 0; i < 60; i++) {
        size_t off = gdrx_test_rand(&rs) % alloc;
        size_t max = alloc - off;
        size_t len = 1 + gdrx_test_rand(&rs) % (max < 300000 ? max : 300000);
        pin_and_check(g, p, alloc, off, len, (uint32_t)i + 7);
    }
    pin_and_check(g, p, alloc, 0, alloc, 99);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

static void test_odd_allocation_sizes(void)
{
    static const size_t sizes[] = { 1, 100, 4096, 65535, 65536, 65537, 200001, 2 * MiB + 1 };

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        CUdeviceptr p = tc_alloc(sizes[i]);
        pin_and_check(g, p, sizes[i], 0, sizes[i], (uint32_t)i);
        if (sizes[i] > 2)
            pin_and_check(g, p, sizes[i], 1, sizes[i] - 2, (uint32_t)i + 50);
        gdrx_pin_t pin;
        CU_ASSERT_EQUAL(gdrx_pin(g, p, sizes[i] + 1, 0, &pin), -EINVAL);
        CU_ASSERT_EQUAL(gdrx_pin(g, p + sizes[i] - 1, 2, 0, &pin), -EINVAL);
        tc_free(p);
    }
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* Two small buffers, usually in one 64 KiB GPU page: pinned and mapped
 * independently, each confined to its own bytes. */
static void test_suballocated_neighbours(void)
{
    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(1000), b = tc_alloc(3000);
    if ((a >> 16) != (b >> 16))
        printf("note: the two small buffers landed in different 64 KiB pages\n");
    tc_fill(a, 1000, 1);
    tc_fill(b, 3000, 2);
    gdrx_pin_t pa, pb;
    void *ca, *cb;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 1000, 0, &pa), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, b, 3000, 0, &pb), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pa, &ca), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pb, &cb), 0);
    unsigned char buf[3000], want[3000];
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pa, buf, ca, 1000), 0);
    tc_pattern(want, 1000, 1);
    CU_ASSERT_EQUAL(memcmp(buf, want, 1000), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pb, buf, cb, 3000), 0);
    tc_pattern(want, 3000, 2);
    CU_ASSERT_EQUAL(memcmp(buf, want, 3000), 0);
    /* a write through one never reaches the other */
    tc_pattern(buf, 1000, 3);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pa, ca, buf, 1000), 0);
    CU_ASSERT(tc_check(a, 1000, 3));
    CU_ASSERT(tc_check(b, 3000, 2));
    /* each pin refuses the other's bytes, even inside the shared page */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pa, (char *)ca + 1000, buf, 1), -ERANGE);
    if ((a >> 16) == (b >> 16)) {
        char *b_via_a = (char *)ca + (b - a);
        CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pa, b_via_a, buf, 1), -ERANGE);
    }
    /* unpinning one leaves the other working */
    CU_ASSERT_EQUAL(gdrx_unpin(g, pa), 0);
    tc_pattern(buf, 3000, 4);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pb, cb, buf, 3000), 0);
    CU_ASSERT(tc_check(b, 3000, 4));
    CU_ASSERT(tc_check(a, 1000, 3));
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
    tc_free(b);
}

/* Overlapping pins of one range alias the same memory. */
static void test_overlapping_pins(void)
{
    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(256 * KiB);
    gdrx_pin_t p1, p2;
    char *c1, *c2;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, 256 * KiB, 0, &p1), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p + 70000, 1000, 0, &p2), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, p1, (void **)&c1), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, p2, (void **)&c2), 0);
    unsigned char buf[1000], back[1000];
    tc_pattern(buf, sizeof(buf), 5);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(p2, c2, buf, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(p1, back, c1 + 70000, sizeof(back)), 0);
    CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
    CU_ASSERT(tc_check(p + 70000, sizeof(buf), 5));
    /* a pointer into p1's mapping is not p2's, even for the same device bytes */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(p2, c1 + 70000, buf, 1), -ERANGE);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

/* Sub-allocations at byte alignment (sim only): odd device addresses. */
static void test_odd_device_addresses(void)
{
    CU_ASSERT_EQUAL_FATAL(tsim.set_suballoc_alignment(1), 0);
    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(1), b = tc_alloc(777), c = tc_alloc(70001);
    CU_ASSERT((b & 1) || (c & 1)); /* at least one odd address */
    pin_and_check(g, a, 1, 0, 1, 1);
    pin_and_check(g, b, 777, 0, 777, 2);
    pin_and_check(g, b, 777, 3, 700, 3);
    pin_and_check(g, c, 70001, 0, 70001, 4);
    pin_and_check(g, c, 70001, 65530, 4000, 5);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
    tc_free(b);
    tc_free(c);
}

/* Without sub-allocation every buffer has its own object (sim only). */
static void test_no_suballocation(void)
{
    CU_ASSERT_EQUAL_FATAL(tsim.set_suballoc_threshold(0), 0);
    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(100), b = tc_alloc(100);
    CU_ASSERT_NOT_EQUAL(a >> 16, b >> 16);
    pin_and_check(g, a, 100, 0, 100, 1);
    pin_and_check(g, b, 100, 50, 50, 2);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
    tc_free(b);
}

static const struct gdrx_test_case align_cases[] = {
    GDRX_TEST_CASE(test_offsets_and_lengths),
    GDRX_TEST_CASE(test_random_ranges),
    GDRX_TEST_CASE(test_odd_allocation_sizes),
    GDRX_TEST_CASE(test_suballocated_neighbours),
    GDRX_TEST_CASE(test_overlapping_pins),
    GDRX_TEST_END,
};

static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_odd_device_addresses),
    GDRX_TEST_CASE(test_no_suballocation),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite base[] = {
    { "pin_align", NULL, NULL, align_cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite sim_only[] = {
    { "pin_align_sim", NULL, NULL, sim_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    int sim = tc_load();
    if (!sim)
        tc_report_skip("pin_align_sim", "simcu_* not available: not the simulated GPU");
    return gdrx_test_main(argc, argv, tc_suites(base, sim ? sim_only : NULL));
}
