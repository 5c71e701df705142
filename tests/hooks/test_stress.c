/*
 * test_stress.c - installing the CUDA hooks while other threads run every
 * hooked entry point, on the simulated GPU: no call may crash or fail.
 *
 * SPDX-License-Identifier: MIT
 *
 * - cycles: this file's own copy of the hook installer (cuda_hooks.c,
 *   built in) armed and disarmed over and over while threads call the
 *   entry points through pointers fetched before, GDRX_STRESS_INSTALLS
 *   entry-point installs in all (default 100000);
 * - processes: libgdrx as programs meet it, in fresh processes whose
 *   threads already hammer libcuda: gdrx_open installs the hooks, then
 *   contexts open and close and subscribers come and go.
 * Before an install the main thread also parks a hammering thread between
 * two instructions of a hooked entry (a signal whose handler waits when it
 * interrupted one there), as the scheduler does at random: a patch of more
 * than the first instruction then crashes that thread when it resumes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "cuda_hooks.h"
#include "gdrx.h"
#include "gdrx_test.h"
#include "park.h"

#define THREADS 4

/* The exports, called through pointers taken before any patch (as a
 * runtime's table would hold them). */
static struct {
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t);
    CUresult (*gpa2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
} fn;

static CUcontext ctx;
static volatile int stop;
static unsigned long calls, errors; /* atomic */
static pthread_t threads[THREADS];

static void *entries[6];  /* the hooked entries of fn, as addresses */

static void cuda_setup(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    *(void **)&fn.alloc = dlsym(lib, "cuMemAlloc_v2");
    *(void **)&fn.free = dlsym(lib, "cuMemFree_v2");
    *(void **)&fn.alloc_async = dlsym(lib, "cuMemAllocAsync");
    *(void **)&fn.free_async = dlsym(lib, "cuMemFreeAsync");
    *(void **)&fn.gpa = dlsym(lib, "cuGetProcAddress");
    *(void **)&fn.gpa2 = dlsym(lib, "cuGetProcAddress_v2");
    CU_ASSERT_FATAL(fn.alloc && fn.free && fn.alloc_async && fn.free_async && fn.gpa && fn.gpa2);
    memcpy(entries, &fn, sizeof(entries));
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

static void count(CUresult r)
{
    __atomic_fetch_add(r == CUDA_SUCCESS ? &calls : &errors, 1, __ATOMIC_RELAXED);
}

/* One round over every hooked entry point the simulated libcuda has. */
static void one_round(void)
{
    CUdeviceptr p = 0;
    void *f = NULL;

    count(fn.alloc(&p, 4096));
    count(fn.free(p));
    count(fn.alloc_async(&p, 8192, NULL));
    count(fn.free_async(p, NULL));
    count(fn.gpa("cuMemFree", &f, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    count(fn.gpa2("cuMemFreeAsync", &f, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                  NULL));
}

/* threads[0] is the one parked: it calls cuGetProcAddress_v2 alone while
 * a park is tried (the others wait, so it never blocks on the sim's lock
 * and spends its time running, a fair share of it in the entry). */
static void *hammer(void *arg)
{
    int spinner = arg != NULL;
    void *f;

    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        __atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (!park_busy())
            one_round();
        else if (spinner)
            count(fn.gpa2("cuMemFree", &f, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
        else
            sched_yield();
    }
    return NULL;
}

static void start(void)
{
    CU_ASSERT_EQUAL_FATAL(park_init(entries, sizeof(entries) / sizeof(entries[0])), 0);
    stop = 0;
    for (int i = 0; i < THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], NULL, hammer, i ? NULL : &ctx), 0);
    while (__atomic_load_n(&calls, __ATOMIC_RELAXED) < 6 * THREADS)
        sched_yield();
}

static void finish(void)
{
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < THREADS; i++)
        CU_ASSERT_EQUAL(pthread_join(threads[i], NULL), 0);
}

static int getenv_is(const char *name, const char *value)
{
    const char *v = getenv(name);

    return v && strstr(v, value);
}

/* ------------------------------------------------- arm/disarm cycles */

static unsigned long events;        /* atomic: every event of every thread */
static _Thread_local unsigned long mine;

static void sink(const struct gdrx_mem_event *ev);
static const struct gdrx_cuda_hooks_sinks stress_sinks = { .event = sink };

static void sink(const struct gdrx_mem_event *ev)
{
    (void)ev;
    __atomic_fetch_add(&events, 1, __ATOMIC_RELAXED);
    mine++;
}

static unsigned long installs_wanted(void)
{
    const char *s = getenv("GDRX_STRESS_INSTALLS");
    long n = s ? atol(s) : 0;

    return n > 0 ? (unsigned long)n : 100000;
}

static void test_install_cycles(void)
{
    unsigned long installs = 0, want = installs_wanted();

    cuda_setup();
    start();
    /* Park before installs until a few installs had a thread parked (a
     * handful of tries on an idle machine, more under load), at most 400. */
    for (unsigned n = 0; installs < want; n++) {
        int p = park_count() < 4 && n < 400 && park_one(threads, 1, 50);
        CU_ASSERT_EQUAL_FATAL(gdrx_cuda_hooks_install(&stress_sinks), 0);
        park_release(p);
        installs += (unsigned long)gdrx_cuda_hooks_count();
        gdrx_cuda_hooks_remove();
    }
    finish();
    printf("\n    %lu entry-point installs, %u with a thread parked in an entry, "
           "%lu calls meanwhile, %lu events\n", installs, park_count(), calls, events);
    CU_ASSERT(park_count() > 0 || getenv_is("GDRX_SANITIZE", "thread")); /* TSan delays signals */
    CU_ASSERT_EQUAL(errors, 0);
    CU_ASSERT(events > 0); /* the hooks were live while the threads ran */
    CU_ASSERT(calls > 6 * THREADS);

    /* Installed once more, each call is reported once. */
    CU_ASSERT_EQUAL_FATAL(gdrx_cuda_hooks_install(&stress_sinks), 0);
    mine = 0;
    one_round();
    CU_ASSERT_EQUAL(mine, 4); /* two allocations, two frees */
    gdrx_cuda_hooks_remove();
    mine = 0;
    one_round();
    CU_ASSERT_EQUAL(mine, 0);
}

/* --------------------------------------------- processes, public API */

static void noop_cb(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev;
    (void)arg;
}

/* A fresh process: threads hammer libcuda, then libgdrx is opened (its
 * hooks installed) and used.  Exit status 0 if every call went well. */
static int child(void)
{
    gdrx_mem_sub_t sub;
    gdrx_t g;
    int bad = 0;

    cuda_setup();
    start();
    for (int i = 0; i < 3; i++) {
        int p = i == 0 && park_one(threads, 1, 200);
        bad |= gdrx_open(NULL, &g) != 0;
        park_release(p);
        for (int j = 0; !bad && j < 3; j++) {
            bad |= gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, noop_cb, NULL, &sub) != 0;
            bad |= !bad && gdrx_mem_events_unsubscribe(sub) != 0;
        }
        if (!bad)
            gdrx_close(g);
    }
    finish();
    if (bad || errors)
        return 1;
    return park_count() ? 0 : 4;
}

static void test_install_processes(void)
{
    const int rounds = 25;
    int crashed = 0, failed = 0, parked_in = 0;

    for (int i = 0; i < rounds; i++) {
        pid_t pid = fork();
        int st = 0;
        if (pid == 0)
            _exit(child());
        CU_ASSERT_FATAL(pid > 0 && waitpid(pid, &st, 0) == pid);
        crashed += WIFSIGNALED(st);
        failed += WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 4;
        parked_in += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf("\n    %d processes (%d with a thread parked in an entry): %d crashed, %d failed\n",
           rounds, parked_in, crashed, failed);
    CU_ASSERT_EQUAL(crashed, 0);
    CU_ASSERT_EQUAL(failed, 0);
    CU_ASSERT(parked_in > 0 || getenv_is("GDRX_SANITIZE", "thread"));
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_install_cycles),
    GDRX_TEST_CASE(test_install_processes),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "hooks/stress", NULL, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
