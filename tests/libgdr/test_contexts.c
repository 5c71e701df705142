/*
 * test_contexts.c - a context that goes takes its own pins along, and
 * only once CUDA destroyed it: cuCtxDestroy revokes the pins of memory
 * that context owns, a primary context reset those of the primary context
 * only (not of another context on the device), and a destroy or reset
 * CUDA refuses revokes nothing (issue 29, section 2).
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcuda.h"

#define KiB 1024u

static int frees;

static void count_free(const struct gdrx_mem_event *ev, void *arg)
{
    (void)arg;
    if (ev->type == GDRX_MEM_EVENT_FREE)
        frees++;
}

static CUresult (*ctx_create)(CUcontext *, unsigned int, CUdevice);
static CUresult (*ctx_destroy)(CUcontext);
static CUresult (*ctx_pop)(CUcontext *);

static void *cuda_sym(const char *name)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *fn = lib ? dlsym(lib, name) : NULL;

    if (lib)
        dlclose(lib);
    return fn;
}

/* A pinned, mapped allocation of len in the current context. */
struct pinned {
    CUdeviceptr p;
    gdrx_pin_t  pin;
    void       *cpu;
};

static void pin_new(gdrx_t g, size_t len, struct pinned *out)
{
    unsigned char *buf = malloc(len);

    out->p = tc_alloc(len);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, out->p, len, 0, &out->pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, out->pin, &out->cpu), 0);
    tc_pattern(buf, len, 7);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(out->pin, out->cpu, buf, len), 0);
    free(buf);
}

static int copy_rc(const struct pinned *x)
{
    char c;

    return gdrx_copy_from_mapping(x->pin, &c, x->cpu, 1);
}

/* Device 0's primary context current, a gdrx open and a FREE subscription;
 * a context created on device 0 (then popped: the primary is current). */
static int setup(gdrx_t *g, gdrx_mem_sub_t *sub, CUcontext *created)
{
    ctx_create = cuda_sym("cuCtxCreate_v2");
    ctx_destroy = cuda_sym("cuCtxDestroy_v2");
    ctx_pop = cuda_sym("cuCtxPopCurrent_v2");
    frees = 0;
    if (tc_setup(0) || !ctx_create || !ctx_destroy || !ctx_pop) {
        CU_FAIL("no cuCtxCreate_v2 / cuCtxDestroy_v2 / cuCtxPopCurrent_v2");
        return -1;
    }
    *g = tc_open();
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, NULL, sub), 0);
    CU_ASSERT_EQUAL_FATAL(ctx_create(created, 0, 0), CUDA_SUCCESS);
    return 0;
}

/* cuCtxDestroy revokes the pins of the memory the context owned, and no
 * other; one FREE per pinned allocation. */
static void test_destroy_revokes_its_pins(void)
{
    struct pinned in_c, in_c2, in_prim;
    gdrx_mem_sub_t sub;
    CUcontext c, popped;
    gdrx_t g;

    if (setup(&g, &sub, &c))
        return;
    pin_new(g, 256 * KiB, &in_c);
    pin_new(g, 4 * KiB, &in_c2);
    CU_ASSERT_EQUAL(ctx_pop(&popped), CUDA_SUCCESS);
    pin_new(g, 256 * KiB, &in_prim);
    CU_ASSERT_EQUAL(ctx_destroy(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&in_c), -ESTALE);
    CU_ASSERT_EQUAL(copy_rc(&in_c2), -ESTALE);
    CU_ASSERT_EQUAL(copy_rc(&in_prim), 0);
    CU_ASSERT_EQUAL(frees, 2);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(in_prim.p);
}

/* A destroy CUDA refuses (here an injected error) revokes nothing. */
static void test_refused_destroy_revokes_nothing(void)
{
    struct pinned in_c;
    gdrx_mem_sub_t sub;
    CUcontext c;
    gdrx_t g;

    if (setup(&g, &sub, &c))
        return;
    pin_new(g, 64 * KiB, &in_c);
    CU_ASSERT_EQUAL_FATAL(tsim.fail_next("cuCtxDestroy", CUDA_ERROR_LAUNCH_FAILED, 1), 0);
    CU_ASSERT_EQUAL(ctx_destroy(c), CUDA_ERROR_LAUNCH_FAILED);
    CU_ASSERT_EQUAL(copy_rc(&in_c), 0);
    CU_ASSERT_EQUAL(frees, 0);
    CU_ASSERT(tc_check(in_c.p, 64 * KiB, 7));
    CU_ASSERT_EQUAL(ctx_destroy(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&in_c), -ESTALE);
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* A primary context reset revokes the pins of the primary's memory, not
 * of memory another context on the device owns. */
static void test_reset_revokes_primary_only(void)
{
    struct pinned in_c, in_prim;
    gdrx_mem_sub_t sub;
    CUcontext c, popped;
    gdrx_t g;

    if (setup(&g, &sub, &c))
        return;
    pin_new(g, 128 * KiB, &in_c);
    CU_ASSERT_EQUAL(ctx_pop(&popped), CUDA_SUCCESS);
    pin_new(g, 128 * KiB, &in_prim);
    CU_ASSERT_EQUAL(tc.DevicePrimaryCtxReset(0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&in_prim), -ESTALE);
    CU_ASSERT_EQUAL(copy_rc(&in_c), 0);
    CU_ASSERT(tc_check(in_c.p, 128 * KiB, 7));
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(ctx_destroy(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(copy_rc(&in_c), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_destroy_revokes_its_pins),
    GDRX_TEST_CASE(test_reset_revokes_primary_only),
    GDRX_TEST_END,
};

static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_refused_destroy_revokes_nothing),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "contexts", NULL, NULL, cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite sim_suites[] = {
    { "contexts_sim", NULL, NULL, sim_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main_with_sim(argc, argv, suites, sim_suites);
}
