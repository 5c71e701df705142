/*
 * test_copy.c - the copy engine's suite: dispatch and the shared algorithm
 * first, then one suite per copy variant this CPU can run (a variant the
 * CPU lacks is not registered, and the output says it was not tested).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "copy_tests.h"
#include "cpu_features.h"

gdrx_copy_variant_t test_current_variant(void)
{
    gdrx_copy_variant_t v = GDRX_COPY_AUTO;
    CU_pSuite suite = CU_get_current_suite();

    if (suite)
        gdrx_copy_variant_parse(suite->pName, &v);
    return v;
}

gdrx_copy_fn test_copy_fn(enum test_dir dir)
{
    struct gdrx_copy_impl impl;

    if (gdrx_copy_impl_get(test_current_variant(), &impl) != 0)
        return NULL;
    return dir == TEST_TO_MAP ? impl.to_mapping : impl.from_mapping;
}

void test_fill_random(uint8_t *p, size_t n, uint64_t *seed, uint8_t avoid)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)(gdrx_test_rand(seed) >> 56);
        p[i] = b == avoid ? (uint8_t)~b : b;
    }
}

size_t test_first_not(const uint8_t *p, size_t n, uint8_t c)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != c)
            return i;
    return n;
}

size_t test_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

uint8_t *test_map_guarded(size_t pages)
{
    size_t ps = test_page_size();
    uint8_t *p = mmap(NULL, (pages + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p + ps, pages * ps, PROT_READ | PROT_WRITE) != 0) {
        munmap(p, (pages + 2) * ps);
        return NULL;
    }
    return p + ps;
}

void test_unmap_guarded(uint8_t *p, size_t pages)
{
    if (p)
        munmap(p - test_page_size(), (pages + 2) * test_page_size());
}

/* Every variant: memcpy-equal and no access outside the buffers; every
 * variant but LIBC also stores each byte exactly once.  LIBC is memcpy,
 * which may store a byte twice (overlapping tails), so its suite starts
 * after the two exactly-once cases (LIBC_FIRST). */
static const struct gdrx_test_case variant_cases[] = {
#if !defined(__aarch64__)
    GDRX_TEST_CASE(test_once_to),
    GDRX_TEST_CASE(test_once_from),
#endif
    GDRX_TEST_CASE(test_equal_small_to),
    GDRX_TEST_CASE(test_equal_small_from),
    GDRX_TEST_CASE(test_equal_sampled_to),
    GDRX_TEST_CASE(test_equal_sampled_from),
    GDRX_TEST_CASE(test_guard_to),
    GDRX_TEST_CASE(test_guard_from),
    GDRX_TEST_END,
};
#define LIBC_FIRST 2

int main(int argc, char **argv)
{
#if defined(__aarch64__)
    /* The exactly-once cases single-step with x86's trap flag: on aarch64
     * the recording steps of the driver suite prove the same contract for
     * the one algorithm, and the barriers are checked in "dispatch". */
    static const gdrx_copy_variant_t all[] = { GDRX_COPY_LIBC, GDRX_COPY_NEON };
#define ONCE_FIRST(v) 0
#else
    static const gdrx_copy_variant_t all[] = {
        GDRX_COPY_LIBC, GDRX_COPY_SSE2, GDRX_COPY_SSE41,
        GDRX_COPY_AVX2, GDRX_COPY_AVX512, GDRX_COPY_MOVDIR64B,
    };
#define ONCE_FIRST(v) ((v) == GDRX_COPY_LIBC ? LIBC_FIRST : 0)
#endif
    struct gdrx_test_suite suites[4 + sizeof(all) / sizeof(all[0])];
    size_t n = 0;
    char feat[160], ran[128] = "", missing[128] = "";

    suites[n++] = (struct gdrx_test_suite){ "dispatch", NULL, NULL, test_dispatch_cases };
    suites[n++] = (struct gdrx_test_suite){ "driver", NULL, NULL, test_driver_cases };
#if !defined(__aarch64__)
    suites[n++] = (struct gdrx_test_suite){ "fences", NULL, NULL, test_fence_cases };
#endif
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        const char *name = gdrx_copy_variant_name(all[i]);
        char *list = gdrx_copy_variant_supported(all[i]) ? ran : missing;
        snprintf(list + strlen(list), sizeof(ran) - strlen(list), " %s", name);
        if (list == ran)
            suites[n++] = (struct gdrx_test_suite){
                name, NULL, NULL, variant_cases + ONCE_FIRST(all[i]) };
    }
    suites[n] = (struct gdrx_test_suite)GDRX_SUITE_END;

    printf("test_copy: CPU features: %s\n",
           gdrx_cpu_features_str(gdrx_cpu_features(), feat, sizeof(feat)));
    printf("test_copy: variants tested:%s\n", ran);
    if (*missing)
        printf("test_copy: NOT TESTED (this CPU/OS lacks them; not a pass):%s\n", missing);
    fflush(stdout);
    return gdrx_test_main(argc, argv, suites);
}
