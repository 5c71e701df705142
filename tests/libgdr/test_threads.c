/*
 * test_threads.c - 16 threads hammering pin/map/copy/unmap/unpin, on shared
 * and private contexts, with every byte checked through CUDA; handles used
 * after they died; a context closed under running threads; frees (and the
 * free hook's revocations) racing with pins of other memory.  Meant to run
 * under -fsanitize=thread as well.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcuda.h"

#define NTHREADS 16
#define KiB 1024u

static int iterations(int normal)
{
    const char *s = getenv("GDRX_SANITIZE");
    return s && *s ? normal / 4 + 1 : normal; /* sanitizers are slow */
}

struct worker {
    pthread_t   tid;
    int         index;
    gdrx_t      shared;
    CUcontext   cuctx;
    atomic_int *failures;
    atomic_int *done;     /* cycles completed with every check passed */
};

static void fail(struct worker *w, const char *what, int rc)
{
    fprintf(stderr, "    thread %d: %s (%s)\n", w->index, what, gdrx_strerror(rc));
    atomic_fetch_add(w->failures, 1);
}

/* One full cycle on a fresh allocation; returns 0 if every check held. */
static int cycle(struct worker *w, gdrx_t g, uint64_t *rs, uint32_t seed)
{
    size_t alloc = 1 + gdrx_test_rand(rs) % (300 * KiB);
    size_t off = gdrx_test_rand(rs) % alloc;
    size_t len = 1 + gdrx_test_rand(rs) % (alloc - off);
    CUdeviceptr p = 0;
    gdrx_pin_t pin;
    void *cpu;
    int rc, bad = 0;

    if (tc.MemAlloc(&p, alloc) != CUDA_SUCCESS) {
        fail(w, "cuMemAlloc", 0);
        return -1;
    }
    unsigned char *buf = malloc(len), *back = malloc(len), *want = malloc(len);
    if ((rc = gdrx_pin(g, p + off, len, 0, &pin)) != 0) {
        fail(w, "pin", rc);
        bad = 1;
        goto out;
    }
    if ((rc = gdrx_map(g, pin, &cpu)) != 0) {
        fail(w, "map", rc);
        bad = 1;
        goto unpin;
    }
    tc_pattern(buf, len, seed);
    if ((rc = gdrx_copy_to_mapping(pin, cpu, buf, len)) != 0) {
        fail(w, "copy_to", rc);
        bad = 1;
    }
    if (tc.MemcpyDtoH(back, p + off, len) != CUDA_SUCCESS || memcmp(back, buf, len) != 0) {
        fail(w, "device does not hold what was copied", 0);
        bad = 1;
    }
    tc_pattern(want, len, seed + 1);
    if (tc.MemcpyHtoD(p + off, want, len) != CUDA_SUCCESS ||
        (rc = gdrx_copy_from_mapping(pin, back, cpu, len)) != 0 || memcmp(back, want, len) != 0) {
        fail(w, "copy_from does not return what the device holds", rc);
        bad = 1;
    }
    if (gdrx_test_rand(rs) & 1) {
        if ((rc = gdrx_unmap(g, pin)) != 0) {
            fail(w, "unmap", rc);
            bad = 1;
        }
    }
unpin:
    if ((rc = gdrx_unpin(g, pin)) != 0) {
        fail(w, "unpin", rc);
        bad = 1;
    }
    /* the dead handle stays dead, whatever else happens meanwhile */
    if (gdrx_copy_to_mapping(pin, cpu, buf, 1) != -EINVAL || gdrx_unpin(g, pin) != -EINVAL) {
        fail(w, "dead handle accepted", 0);
        bad = 1;
    }
out:
    tc.MemFree(p);
    free(buf);
    free(back);
    free(want);
    return bad ? -1 : 0;
}

static void *hammer(void *arg)
{
    struct worker *w = arg;
    uint64_t rs = 0x1234u + (uint64_t)w->index * 7919u;
    gdrx_t own = { 0 };

    tc.CtxSetCurrent(w->cuctx);
    /* odd threads also use a context of their own */
    if ((w->index & 1) && gdrx_open(NULL, &own) != 0)
        fail(w, "open", 0);
    int n = iterations(40);
    for (int i = 0; i < n; i++) {
        gdrx_t g = (w->index & 1) && (i & 1) ? own : w->shared;
        if (cycle(w, g, &rs, (uint32_t)(w->index * 1000 + i)) != 0)
            break;
        atomic_fetch_add(w->done, 1);
    }
    if ((w->index & 1) && gdrx_close(own) != 0)
        fail(w, "close", 0);
    return NULL;
}

static CUcontext current_ctx(void)
{
    CUcontext c = NULL;
    tc.CtxGetCurrent(&c);
    return c;
}

static void test_hammer_pin_map_copy_unpin(void)
{
    struct worker w[NTHREADS];
    atomic_int failures = 0, done = 0;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){ .index = i, .shared = g, .cuctx = current_ctx(),
                                .failures = &failures, .done = &done };
        CU_ASSERT_EQUAL_FATAL(pthread_create(&w[i].tid, NULL, hammer, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(w[i].tid, NULL);
    CU_ASSERT_EQUAL(atomic_load(&failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&done), NTHREADS * iterations(40));
    uint64_t n = 1;
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* Many threads copying through one pin, each to its own slice. */
struct slice_arg {
    gdrx_pin_t  pin;
    char       *cpu;
    CUdeviceptr dptr;
    size_t      slice;
    int         index;
    CUcontext   cuctx;
    atomic_int *failures;
    atomic_int *done;
};

static void *slice_worker(void *arg)
{
    struct slice_arg *a = arg;
    unsigned char *buf = malloc(a->slice), *back = malloc(a->slice);
    size_t off = (size_t)a->index * a->slice;

    tc.CtxSetCurrent(a->cuctx);
    for (int i = 0, n = iterations(200); i < n; i++) {
        tc_pattern(buf, a->slice, (uint32_t)(a->index * 100000 + i));
        if (gdrx_copy_to_mapping(a->pin, a->cpu + off, buf, a->slice) != 0 ||
            gdrx_copy_from_mapping(a->pin, back, a->cpu + off, a->slice) != 0 ||
            memcmp(buf, back, a->slice) != 0) {
            atomic_fetch_add(a->failures, 1);
            break;
        }
        if (i % 16 == 0 && (tc.MemcpyDtoH(back, a->dptr + off, a->slice) != CUDA_SUCCESS ||
                            memcmp(buf, back, a->slice) != 0)) {
            atomic_fetch_add(a->failures, 1);
            break;
        }
        atomic_fetch_add(a->done, 1);
    }
    free(buf);
    free(back);
    return NULL;
}

static void test_shared_pin_copies(void)
{
    pthread_t tid[NTHREADS];
    struct slice_arg a[NTHREADS];
    atomic_int failures = 0, done = 0;
    const size_t slice = 4 * KiB + 3;
    void *cpu;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr p = tc_alloc(slice * NTHREADS);
    gdrx_pin_t pin;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p, slice * NTHREADS, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    for (int i = 0; i < NTHREADS; i++) {
        a[i] = (struct slice_arg){ pin, cpu, p, slice, i, current_ctx(), &failures, &done };
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, slice_worker, &a[i]), 0);
    }
    /* meanwhile, queries on the same pin */
    struct gdrx_pin_info info;
    for (int i = 0; i < 200; i++)
        CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(tid[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&done), NTHREADS * iterations(200));
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

/* State shared by the threads of one race below. */
struct race {
    gdrx_t           g;
    CUdeviceptr      p;          /* a buffer the threads pin (may be 0) */
    CUcontext        cuctx;
    _Atomic uint64_t dead[64];   /* handles already unpinned ... */
    _Atomic uintptr_t dead_cpu[64]; /* ... and a mapping address of one */
    atomic_int       stop;
    atomic_int       failures;
    atomic_int       done;       /* operations completed */
    atomic_int       probes;
};

/* A fresh race: CUDA set up, a context, a buffer of alloc bytes. */
static struct race *race_start(size_t alloc)
{
    static struct race r;

    if (tc_setup(0))
        return NULL;
    memset(&r, 0, sizeof(r));
    r.g = tc_open();
    r.p = alloc ? tc_alloc(alloc) : 0;
    r.cuctx = current_ctx();
    return &r;
}

static void spawn(pthread_t *tid, int n, void *(*fn)(void *), struct race *r)
{
    for (int i = 0; i < n; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, fn, r), 0);
}

static void join(pthread_t *tid, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

/* Threads pin and map one buffer, keeping the last few pins; each one they
 * unpin is published dead with the address its mapping had, and the next
 * pin mostly gets its slot (new generation) and its address.  Other threads
 * throw those handles, with those addresses, and garbage at the API: a
 * dead handle must never be accepted. */
#define CHURN_KEEP 4

static int churn_unpin(struct race *c, gdrx_pin_t pin, void *cpu, unsigned k)
{
    if (gdrx_unpin(c->g, pin) != 0)
        return -1;
    /* id and address may pair up from two dead pins: both are dead */
    atomic_store(&c->dead[k % 64], pin.id);
    atomic_store(&c->dead_cpu[k % 64], (uintptr_t)cpu);
    return 0;
}

static void *churn_pinner(void *arg)
{
    struct race *c = arg;
    gdrx_pin_t kept[CHURN_KEEP] = { { 0 } };
    void *cpu[CHURN_KEEP] = { NULL };
    int n = iterations(300), i;

    tc.CtxSetCurrent(c->cuctx);
    for (i = 0; i < n; i++) {
        unsigned k = (unsigned)i % CHURN_KEEP;
        if (kept[k].id && churn_unpin(c, kept[k], cpu[k], (unsigned)i) != 0)
            break;
        kept[k].id = 0;
        if (gdrx_pin(c->g, c->p + (uint64_t)(i % 7), 4096, 0, &kept[k]) != 0 ||
            gdrx_map(c->g, kept[k], &cpu[k]) != 0)
            break;
        atomic_fetch_add(&c->done, 1);
    }
    if (i < n)
        atomic_fetch_add(&c->failures, 1);
    for (unsigned k = 0; k < CHURN_KEEP; k++)
        if (kept[k].id && churn_unpin(c, kept[k], cpu[k], k) != 0)
            atomic_fetch_add(&c->failures, 1);
    return NULL;
}

static void *churn_abuser(void *arg)
{
    struct race *c = arg;
    uint64_t rs = 99;
    char byte = 0;

    while (!atomic_load(&c->stop)) {
        unsigned k = (unsigned)(gdrx_test_rand(&rs) % 64);
        uint64_t id = atomic_load(&c->dead[k]);
        void *cpu = (void *)atomic_load(&c->dead_cpu[k]);
        struct gdrx_pin_info info;
        if (!id)
            continue; /* nothing published there yet */
        int rc = gdrx_pin_query(c->g, (gdrx_pin_t){ id }, &info);
        int rc_from = gdrx_copy_from_mapping((gdrx_pin_t){ id }, &byte, cpu, 1);
        int rc_to = gdrx_copy_to_mapping((gdrx_pin_t){ id }, cpu, &byte, 1);
        if (rc != -EINVAL || rc_from != -EINVAL || rc_to != -EINVAL) {
            fprintf(stderr, "    dead handle %#llx at %p: query %d, copy from %d, to %d\n",
                    (unsigned long long)id, cpu, rc, rc_from, rc_to);
            atomic_fetch_add(&c->failures, 1);
        }
        /* garbage may meet nothing valid either; none may crash */
        id = gdrx_test_rand(&rs);
        rc = gdrx_copy_from_mapping((gdrx_pin_t){ id }, &byte, cpu, 1);
        if (rc != -EINVAL && rc != -ERANGE)
            atomic_fetch_add(&c->failures, 1);
        atomic_fetch_add(&c->probes, 1);
    }
    return NULL;
}

static void test_dead_handles_under_churn(void)
{
    pthread_t pinners[4], abusers[4];
    struct race *c = race_start(64 * KiB);

    if (!c)
        return;
    spawn(pinners, 4, churn_pinner, c);
    spawn(abusers, 4, churn_abuser, c);
    join(pinners, 4);
    atomic_store(&c->stop, 1);
    join(abusers, 4);
    CU_ASSERT_EQUAL(atomic_load(&c->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&c->done), 4 * iterations(300));
    CU_ASSERT(atomic_load(&c->probes) > 0);
    CU_ASSERT_EQUAL(gdrx_close(c->g), 0);
    tc_free(c->p);
}

/* A context closed while other threads use it: every call returns 0 or a
 * clean error, and after the close only -EBADF/-EINVAL. */
static void *use_until_closed(void *arg)
{
    struct race *c = arg;

    tc.CtxSetCurrent(c->cuctx);
    for (int i = 0; i < 100000; i++) {
        gdrx_pin_t pin;
        void *cpu;
        struct gdrx_pin_info info;
        int rc = gdrx_pin(c->g, c->p, 4096, 0, &pin);
        if (rc == -EBADF)
            return NULL; /* closed: done */
        if (rc != 0) {
            atomic_fetch_add(&c->failures, 1);
            return NULL;
        }
        rc = gdrx_map(c->g, pin, &cpu);
        if (rc == 0)
            rc = gdrx_pin_query(c->g, pin, &info);
        if (rc == 0)
            rc = gdrx_unpin(c->g, pin);
        /* close may take the pin away between any two calls */
        if (rc != 0 && rc != -EBADF && rc != -EINVAL)
            atomic_fetch_add(&c->failures, 1);
        atomic_fetch_add(&c->done, 1);
    }
    return NULL;
}

static void test_close_under_use(void)
{
    pthread_t tid[6];
    struct race *c = race_start(64 * KiB);

    if (!c)
        return;
    spawn(tid, 6, use_until_closed, c);
    /* Let them get going; bounded, so workers that fail early cannot
     * hang the case (their failures are asserted below). */
    for (long spins = 0; atomic_load(&c->done) < 200 && spins < 100000000L; spins++)
        sched_yield();
    CU_ASSERT_EQUAL(gdrx_close(c->g), 0);
    join(tid, 6);
    CU_ASSERT_EQUAL(atomic_load(&c->failures), 0);
    CU_ASSERT_EQUAL(gdrx_close(c->g), -EBADF);
    tc_free(c->p);
}

/* Frees (each one scanned by the free hook) racing with pins of other
 * memory: the pins of live memory never go stale, data stays right. */
static void *alloc_free_loop(void *arg)
{
    struct race *f = arg;

    tc.CtxSetCurrent(f->cuctx);
    while (!atomic_load(&f->stop)) {
        CUdeviceptr p;
        gdrx_pin_t pin;
        if (tc.MemAlloc(&p, 3000) != CUDA_SUCCESS)
            break;
        /* pinned memory freed under its pin */
        if (gdrx_pin(f->g, p, 3000, 0, &pin) != 0)
            atomic_fetch_add(&f->failures, 1);
        tc_free(p);
        struct gdrx_pin_info info;
        if (gdrx_pin_query(f->g, pin, &info) != 0 || !info.stale)
            atomic_fetch_add(&f->failures, 1);
        gdrx_unpin(f->g, pin);
        atomic_fetch_add(&f->probes, 1);
    }
    return NULL;
}

static void *live_pins_loop(void *arg)
{
    struct race *f = arg;
    struct worker w = { .index = 99, .failures = &f->failures };
    uint64_t rs = 5;

    tc.CtxSetCurrent(f->cuctx);
    for (int i = 0, n = iterations(60); i < n; i++) {
        if (cycle(&w, f->g, &rs, (uint32_t)i) != 0)
            break;
        atomic_fetch_add(&f->done, 1);
    }
    return NULL;
}

static void test_frees_race_pins(void)
{
    pthread_t freers[3], pinners[5];
    struct race *f = race_start(0);

    if (!f)
        return;
    spawn(freers, 3, alloc_free_loop, f);
    spawn(pinners, 5, live_pins_loop, f);
    join(pinners, 5);
    atomic_store(&f->stop, 1);
    join(freers, 3);
    CU_ASSERT_EQUAL(atomic_load(&f->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&f->done), 5 * iterations(60));
    CU_ASSERT(atomic_load(&f->probes) > 0);
    CU_ASSERT_EQUAL(gdrx_close(f->g), 0);
}

static const struct gdrx_test_case thread_cases[] = {
    GDRX_TEST_CASE(test_hammer_pin_map_copy_unpin),
    GDRX_TEST_CASE(test_shared_pin_copies),
    GDRX_TEST_CASE(test_dead_handles_under_churn),
    GDRX_TEST_CASE(test_close_under_use),
    GDRX_TEST_CASE(test_frees_race_pins),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "threads", NULL, NULL, thread_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    tc_default_backend();
    tc_load();
    return gdrx_test_main(argc, argv, suites);
}
