/*
 * test_handles.c - a dead pin handle stays dead on the copy path, even when
 * its slot and its CPU address now belong to a new pin (the simulated GPU;
 * test_core_unit checks the same on the core alone, deterministically).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "tcuda.h"

#define KiB 1024u

static void test_old_handle_after_reuse(void)
{
    gdrx_pin_t old, fresh;
    void *cpu_old, *cpu_new;
    unsigned char buf[64], back[64];

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(64 * KiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 64 * KiB, 0, &old), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, old, &cpu_old), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, old), 0);
    /* The freed slot is the next one handed out, and the kernel places a
     * mapping of the same size in the hole the old one left. */
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 64 * KiB, 0, &fresh), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, fresh, &cpu_new), 0);
    CU_ASSERT_EQUAL_FATAL(fresh.id & 0xffffff, old.id & 0xffffff); /* same slot */
    CU_ASSERT_NOT_EQUAL(fresh.id, old.id);
    CU_ASSERT_PTR_EQUAL_FATAL(cpu_new, cpu_old);

    tc_fill(a, sizeof(buf), 1);
    tc_pattern(buf, sizeof(buf), 2);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(old, cpu_new, buf, sizeof(buf)), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, back, cpu_new, sizeof(back)), -EINVAL);
    CU_ASSERT(tc_check(a, sizeof(buf), 1)); /* the new pin's memory untouched */
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(fresh, cpu_new, buf, sizeof(buf)), 0);
    CU_ASSERT(tc_check(a, sizeof(buf), 2));
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
}

static const struct gdrx_test_case handle_cases[] = {
    GDRX_TEST_CASE(test_old_handle_after_reuse),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "handles", NULL, NULL, handle_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    tc_load();
    return gdrx_test_main(argc, argv, suites);
}
