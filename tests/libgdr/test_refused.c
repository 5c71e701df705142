/*
 * test_refused.c - a free that CUDA refuses changes nothing: the pin stays
 * live, copies through it go on, no FREE event is raised; and a free that
 * CUDA takes revokes its pins only once it did, with no copy through them
 * in between (issue 29, section 2).
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simcu.h"
#include "tcuda.h"

#define KiB 1024u

/* FREE events seen by a subscriber. */
static int frees;

static void count_free(const struct gdrx_mem_event *ev, void *arg)
{
    (void)arg;
    if (ev->type == GDRX_MEM_EVENT_FREE)
        __atomic_add_fetch(&frees, 1, __ATOMIC_RELAXED);
}

struct fixture {
    gdrx_t         g;
    CUdeviceptr    a;
    gdrx_pin_t     pin;
    void          *cpu;
    gdrx_mem_sub_t sub;
    size_t         len;
};

/* Device 0, a gdrx open, an allocation pinned and mapped with seed 1
 * written through it, a FREE subscription.  -1: the case failed. */
static int setup(struct fixture *f, size_t len)
{
    unsigned char *buf = malloc(len);

    memset(f, 0, sizeof(*f));
    frees = 0;
    if (!buf || tc_setup(0))
        goto fail;
    f->len = len;
    f->g = tc_open();
    f->a = tc_alloc(len);
    if (!f->a || gdrx_pin(f->g, f->a, len, 0, &f->pin) != 0 || gdrx_map(f->g, f->pin, &f->cpu))
        goto fail;
    tc_pattern(buf, len, 1);
    if (gdrx_copy_to_mapping(f->pin, f->cpu, buf, len) != 0 ||
        gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, count_free, NULL, &f->sub) != 0)
        goto fail;
    free(buf);
    return 0;
fail:
    CU_FAIL("setup failed");
    free(buf);
    return -1;
}

/* After a refused free: the pin is live and not stale, every byte reads
 * back through it, a write through it reaches the device, no event. */
static void check_untouched(struct fixture *f)
{
    struct gdrx_pin_info info;
    unsigned char *buf = malloc(f->len), *want = malloc(f->len);

    CU_ASSERT_EQUAL(frees, 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(f->g, f->pin, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f->pin, buf, f->cpu, f->len), 0);
    tc_pattern(want, f->len, 1);
    CU_ASSERT_EQUAL(memcmp(buf, want, f->len), 0);
    tc_pattern(buf, f->len, 2);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(f->pin, f->cpu, buf, f->len), 0);
    CU_ASSERT(tc_check(f->a, f->len, 2));
    free(buf);
    free(want);
}

/* The memory freed for real at the end: revoked, one event. */
static void teardown(struct fixture *f)
{
    char c;

    tc_free(f->a);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(f->pin, &c, f->cpu, 1), -ESTALE);
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(f->sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(f->g), 0);
}

static void *cuda_sym(const char *name)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *fn = lib ? dlsym(lib, name) : NULL;

    if (lib)
        dlclose(lib);
    return fn;
}

/* cuMemFreeAsync on a stream that does not exist. */
static void test_free_async_bad_stream(void)
{
    __typeof__(&cuMemFreeAsync) free_async = cuda_sym("cuMemFreeAsync");
    struct fixture f;
    int junk;

    if (setup(&f, 256 * KiB))
        return;
    CU_ASSERT_PTR_NOT_NULL_FATAL(free_async);
    CU_ASSERT_EQUAL(free_async(f.a, (CUstream)&junk), CUDA_ERROR_INVALID_HANDLE);
    check_untouched(&f);
    teardown(&f);
}

/* cuMemFree with no current context: CUDA refuses (and the hook cannot
 * read the range either). */
static void test_free_without_context(void)
{
    struct fixture f;
    CUcontext ctx = NULL;

    if (setup(&f, 256 * KiB))
        return;
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&ctx), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(tc.MemFree(f.a), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(tc.CtxSetCurrent(ctx), CUDA_SUCCESS);
    check_untouched(&f);
    teardown(&f);
}

/* A free the driver fails (an error of an earlier launch, say). */
static void test_free_fails(void)
{
    struct fixture f;

    if (setup(&f, 4 * KiB))
        return;
    CU_ASSERT_EQUAL_FATAL(tsim.fail_next("cuMemFree", CUDA_ERROR_LAUNCH_FAILED, 1), 0);
    CU_ASSERT_EQUAL(tc.MemFree(f.a), CUDA_ERROR_LAUNCH_FAILED);
    check_untouched(&f);
    teardown(&f);
}

/* A primary context reset the driver refuses frees nothing. */
static void test_reset_fails(void)
{
    struct fixture f;

    if (setup(&f, 64 * KiB))
        return;
    CU_ASSERT_EQUAL_FATAL(tsim.fail_next("cuDevicePrimaryCtxReset", CUDA_ERROR_NOT_PERMITTED, 1),
                          0);
    CU_ASSERT_EQUAL(tc.DevicePrimaryCtxReset(0), CUDA_ERROR_NOT_PERMITTED);
    check_untouched(&f);
    teardown(&f);
}

/* ------------------------------------------- no copy while CUDA frees */

struct copier {
    pthread_t  thread;
    gdrx_pin_t pin;
    void      *cpu;
    int        rc, done, copied;
};

#define COPIERS 3

/* Copies until one fails: each that succeeds after the free began read
 * memory CUDA was freeing (or had freed). */
static void *copy_until_refused(void *arg)
{
    struct copier *c = arg;
    char byte;

    do
        c->rc = gdrx_copy_from_mapping(c->pin, &byte, c->cpu, 1);
    while (c->rc == 0 && ++c->copied < 1000);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static struct {
    struct copier copier[COPIERS];
    int           started, done_during_free, frees_during_free;
} during;

/* The sim's observer, inside cuMemFree, before the memory is reusable:
 * copies started now must neither reach the memory nor fail yet (CUDA has
 * not said yes), and none may slip through when the hold ends before the
 * revocation is seen; no FREE event has been raised. */
static void freed_cb(const struct simcu_alloc_info *a, void *arg)
{
    struct timespec ts = { 0, 50 * 1000 * 1000 };

    (void)a;
    (void)arg;
    during.frees_during_free = frees;
    for (int i = 0; i < COPIERS; i++) {
        if (pthread_create(&during.copier[i].thread, NULL, copy_until_refused,
                           &during.copier[i]) != 0)
            return;
        during.started++;
    }
    nanosleep(&ts, NULL);
    for (int i = 0; i < COPIERS; i++)
        during.done_during_free += __atomic_load_n(&during.copier[i].done, __ATOMIC_ACQUIRE);
}

static void free_with_copiers(void)
{
    __typeof__(&simcu_set_observer) set_observer = cuda_sym("simcu_set_observer");
    simcu_observer_t obs = { .alloc_freed = freed_cb };
    struct fixture f;

    if (setup(&f, 256 * KiB))
        return;
    CU_ASSERT_PTR_NOT_NULL_FATAL(set_observer);
    memset(&during, 0, sizeof(during));
    for (int i = 0; i < COPIERS; i++) {
        during.copier[i].pin = f.pin;
        during.copier[i].cpu = f.cpu;
    }
    CU_ASSERT_EQUAL_FATAL(set_observer(&obs), 0);
    tc_free(f.a);
    set_observer(NULL);
    CU_ASSERT_EQUAL_FATAL(during.started, COPIERS);
    for (int i = 0; i < COPIERS; i++) {
        pthread_join(during.copier[i].thread, NULL);
        CU_ASSERT_EQUAL(during.copier[i].copied, 0); /* not one got through */
        CU_ASSERT_EQUAL(during.copier[i].rc, -ESTALE); /* they saw the revocation */
    }
    CU_ASSERT_EQUAL(during.frees_during_free, 0); /* the event comes after */
    CU_ASSERT_EQUAL(during.done_during_free, 0);  /* the copies waited */
    CU_ASSERT_EQUAL(frees, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(f.sub), 0);
    CU_ASSERT_EQUAL(gdrx_close(f.g), 0);
}

/* The window between the end of the hold and the revocation is short:
 * several frees, each with its copiers. */
static void test_free_holds_copies(void)
{
    for (int round = 0; round < 30; round++)
        free_with_copiers();
}

/* ------------------------- a reuse is reported after the old FREE */

static struct {
    size_t      len;
    CUdeviceptr freed, got;
    int         in_free_cb, alloc_seen_in_free_cb, allocs_seen;
    pthread_t   thread;
    CUcontext   ctx;
} reuse;

static void *alloc_again(void *arg)
{
    (void)arg;
    if (tc.CtxSetCurrent(reuse.ctx) == CUDA_SUCCESS)
        (void)tc.MemAlloc(&reuse.got, reuse.len);
    return NULL;
}

/* FREE: while it runs, another thread gets the same address from CUDA;
 * its ALLOC must not be reported before this callback returned. */
static void reuse_cb(const struct gdrx_mem_event *ev, void *arg)
{
    struct timespec ts = { 0, 50 * 1000 * 1000 };

    (void)arg;
    if (ev->type == GDRX_MEM_EVENT_ALLOC) {
        if (ev->base == reuse.freed) {
            __atomic_add_fetch(&reuse.allocs_seen, 1, __ATOMIC_RELAXED);
            if (__atomic_load_n(&reuse.in_free_cb, __ATOMIC_ACQUIRE))
                reuse.alloc_seen_in_free_cb = 1;
        }
        return;
    }
    if (ev->base != reuse.freed || reuse.thread)
        return;
    __atomic_store_n(&reuse.in_free_cb, 1, __ATOMIC_RELEASE);
    if (pthread_create(&reuse.thread, NULL, alloc_again, NULL) == 0)
        nanosleep(&ts, NULL);
    __atomic_store_n(&reuse.in_free_cb, 0, __ATOMIC_RELEASE);
}

static void test_reuse_reported_after_free(void)
{
    gdrx_mem_sub_t sub;

    if (tc_setup(0) || !tsim.set_va_reuse)
        return;
    memset(&reuse, 0, sizeof(reuse));
    CU_ASSERT_EQUAL(tsim.set_va_reuse(1), 0);
    CU_ASSERT_EQUAL(tc.CtxGetCurrent(&reuse.ctx), CUDA_SUCCESS);
    reuse.len = 4 << 20;
    reuse.freed = tc_alloc(reuse.len);
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_ALLOC | GDRX_MEM_EVENT_FREE,
                                                    reuse_cb, NULL, &sub), 0);
    tc_free(reuse.freed);
    CU_ASSERT_FATAL(reuse.thread != 0);
    pthread_join(reuse.thread, NULL);
    CU_ASSERT_EQUAL(reuse.got, reuse.freed); /* the sim handed the address out again */
    CU_ASSERT_EQUAL(reuse.allocs_seen, 1);
    CU_ASSERT_EQUAL(reuse.alloc_seen_in_free_cb, 0);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    tc_free(reuse.got);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_free_async_bad_stream),
    GDRX_TEST_CASE(test_free_without_context),
    GDRX_TEST_END,
};

/* These need the simulated GPU's failure injection and observer. */
static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_free_fails),
    GDRX_TEST_CASE(test_reset_fails),
    GDRX_TEST_CASE(test_free_holds_copies),
    GDRX_TEST_CASE(test_reuse_reported_after_free),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "refused", NULL, NULL, cases },
    GDRX_SUITE_END,
};

static const struct gdrx_test_suite sim_suites[] = {
    { "refused_sim", NULL, NULL, sim_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main_with_sim(argc, argv, suites, sim_suites);
}
