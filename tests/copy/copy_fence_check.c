/*
 * copy_fence_check.c - the fences copy.h promises, checked in the machine
 * code of every routine the dispatcher can hand out (fence_flow.c), on any
 * CPU: nothing is executed, so the AVX-512 and MOVDIR64B routines are
 * checked where they cannot run.
 *  - every routine ends with SFENCE after its last store (WC buffers are
 *    drained before the caller goes on; LIBC keeps it too);
 *  - every from_mapping routine but LIBC's runs LFENCE before its first
 *    load (loads from WC memory are weakly ordered).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "copy_select.h"
#include "copy_tests.h"
#include "fence_flow.h"

/* A CPU with every feature: the dispatcher then gives out every routine. */
static struct gdrx_cpu_features every_feature(void)
{
    struct gdrx_cpu_features f;

    memset(&f, 0, sizeof(f));
    f.sse2 = f.sse41 = f.osxsave = f.os_avx = f.os_avx512 = 1;
    f.avx = f.avx2 = f.avx512f = f.avx512bw = f.avx512vl = f.movdir64b = 1;
    return f;
}

static void check_one(gdrx_copy_fn fn, gdrx_copy_variant_t v, enum test_dir dir)
{
    struct fence_flow r;
    const void *code;
    int need_lfence = dir == TEST_FROM_MAP && v != GDRX_COPY_LIBC;

    memcpy(&code, &fn, sizeof(code));
    int rc = fence_flow_check(code, need_lfence, &r);
    printf("\n    %-24s (%s): %u insns, %u exits, %u stores, %u vector loads", r.name,
           gdrx_copy_variant_name(v), r.insns, r.exits, r.stores, r.vector_loads);
    if (rc != 0)
        printf("\n    NOT AS PROMISED: %s", r.problem);
    CU_ASSERT_EQUAL(rc, 0);
    /* The check saw what it checks (else it would pass vacuously). */
    CU_ASSERT(r.exits > 0);
    if (v != GDRX_COPY_LIBC && dir == TEST_TO_MAP)
        CU_ASSERT(r.stores > 0);
    if (need_lfence)
        CU_ASSERT(r.vector_loads > 0);
}

static void check_direction(enum test_dir dir)
{
    struct gdrx_cpu_features f = every_feature();

    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_MOVDIR64B; v++) {
        struct gdrx_copy_impl impl;
        CU_ASSERT_EQUAL_FATAL(gdrx_copy_impl_for(&f, (gdrx_copy_variant_t)v, &impl), 0);
        if (dir == TEST_TO_MAP)
            check_one(impl.to_mapping, impl.variant, dir);
        else
            check_one(impl.from_mapping, impl.from_variant, dir);
    }
    printf("\n");
}

static void test_fences_to(void)
{
    check_direction(TEST_TO_MAP);
}

static void test_fences_from(void)
{
    check_direction(TEST_FROM_MAP);
}

const struct gdrx_test_case test_fence_cases[] = {
    GDRX_TEST_CASE(test_fences_to),
    GDRX_TEST_CASE(test_fences_from),
    GDRX_TEST_END,
};
