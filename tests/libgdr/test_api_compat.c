/*
 * test_api_compat.c - what libgdrx gives the gdrcopy layer (issue 30):
 * gdrx_mem_query from a thread with no current CUDA context (progress
 * threads pin that way), GDRX_PIN_FLAG_NO_MAP, and the signal an access
 * through a mapping raises once CUDA freed the memory (SIGBUS).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "test_api.h"

#define KiB 1024u

struct query_job {
    CUdeviceptr          p;
    int                  rc;
    struct gdrx_mem_info mi;
};

static void *query_thread(void *arg)
{
    struct query_job *j = arg;

    j->rc = gdrx_mem_query(j->p + 100, &j->mi);
    return NULL;
}

/* The driver answers pointer attributes with no current context; the
 * allocation's range must come from them, not cuMemGetAddressRange. */
static void test_mem_query_without_context(void)
{
    struct query_job j = { .rc = -1 };
    pthread_t th;

    if (tc_setup(0))
        return;
    j.p = tc_alloc(256 * KiB);
    GDRX_REQUIRE(j.p != 0);
    GDRX_REQUIRE(pthread_create(&th, NULL, query_thread, &j) == 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(j.rc, 0);
    CU_ASSERT_EQUAL(j.mi.base, j.p);
    CU_ASSERT_EQUAL(j.mi.size, 256 * KiB);
    tc_free(j.p);
}

/* A NO_MAP pin is a pin in every other way; gdrx_map refuses it. */
static void test_pin_no_map(void)
{
    struct gdrx_pin_info info;
    gdrx_pin_t pin;
    void *cpu = NULL;
    char c = 0;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(256 * KiB);
    GDRX_REQUIRE(p != 0);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, 4096, GDRX_PIN_FLAG_FORCE_PCIE << 1, &pin), -EINVAL);
    GDRX_REQUIRE(gdrx_pin(g, p + 100, 4096, GDRX_PIN_FLAG_NO_MAP, &pin) == 0);
    CU_ASSERT_EQUAL(gdrx_map(g, pin, &cpu), -EPERM);
    CU_ASSERT_PTR_NULL(cpu);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT_EQUAL(info.dptr, p + 100);
    CU_ASSERT_EQUAL(info.mapping_type, GDRX_MAPPING_NONE);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, (void *)(uintptr_t)p, &c, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

static void read_byte(void *arg)
{
    volatile char *p = arg;
    (void)*p;
}

/* gdrcopy's non-persistent mode zaps the mapping at a free, and its users
 * catch SIGBUS on a late access: gdrx's replacement raises the same. */
static void test_access_after_free_sigbus(void)
{
    gdrx_pin_t pin;
    void *cpu;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(256 * KiB);
    GDRX_REQUIRE(p != 0);
    GDRX_REQUIRE(gdrx_pin(g, p, 256 * KiB, 0, &pin) == 0);
    GDRX_REQUIRE(gdrx_map(g, pin, &cpu) == 0);
    tc_free(p);
    CU_ASSERT_EQUAL(gdrx_test_signal_here(read_byte, cpu), SIGBUS);
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

const struct gdrx_test_case api_compat_cases[] = {
    GDRX_TEST_CASE(test_mem_query_without_context),
    GDRX_TEST_CASE(test_pin_no_map),
    GDRX_TEST_CASE(test_access_after_free_sigbus),
    GDRX_TEST_END,
};
