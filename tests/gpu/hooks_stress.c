/*
 * hooks_stress.c - libgdrx's CUDA hooks installed while other threads run
 * libcuda's hooked entry points, on a real GPU (the H200 of the device
 * tool; tests/hooks/test_stress.c is the same on the simulated GPU).
 *
 * SPDX-License-Identifier: MIT
 *
 *   hooks_stress LIBGDRX ROUNDS     fork ROUNDS processes; in each, 8 threads
 *                                   call cuMemFree_v2, cuGetProcAddress and
 *                                   cuMemAlloc_v2+cuMemFree_v2 in a loop
 *                                   while the main thread dlopens LIBGDRX
 *                                   and runs gdrx_open (the install),
 *                                   subscribe/unsubscribe and gdrx_close;
 *                                   before the first gdrx_open it parks a
 *                                   thread inside one of those entries
 *                                   (tests/hooks/park.h); prints how many
 *                                   processes crashed and how many had a
 *                                   thread parked
 *   hooks_stress trapcost           ns per int3 + SIGTRAP handler round trip
 *                                   (the cost a trap-based patch would add
 *                                   to every call)
 *
 * Exit status 0 when no process crashed or failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cuda.h>

#include "gdrx.h"
#include "park.h"

#define THREADS 8

static CUcontext ctx;
static volatile int stop;
static unsigned long calls;

static void *hammer(void *arg)
{
    CUdeviceptr p;
    void *f;

    (void)arg;
    cuCtxSetCurrent(ctx);
    for (unsigned long i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
        (void)cuMemFree(0); /* a cheap call: most of the time in entry code */
        (void)cuGetProcAddress("cuMemFree", &f, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL);
        if (i % 64 == 0 && cuMemAlloc(&p, 65536) == CUDA_SUCCESS)
            (void)cuMemFree(p);
        __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void noop_cb(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev;
    (void)arg;
}

/* Exit status of a child: 0 fine with a thread parked, 4 fine without. */
static int child(const char *lib)
{
    static void *entries[2];
    pthread_t t[THREADS];
    void *h;
    int bad = 0, parked = 0;

    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
        return 2;
    cuCtxSetCurrent(ctx);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    entries[0] = cuda ? dlsym(cuda, "cuMemFree_v2") : NULL;
    entries[1] = cuda ? dlsym(cuda, "cuGetProcAddress_v2") : NULL;
    if (!entries[0] || !entries[1] || park_init(entries, 2))
        return 2;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hammer, NULL);
    while (__atomic_load_n(&calls, __ATOMIC_RELAXED) < 100)
        sched_yield();
    if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
        return 3;
    int (*open_)(const struct gdrx_open_params *, gdrx_t *) = dlsym(h, "gdrx_open");
    int (*close_)(gdrx_t) = dlsym(h, "gdrx_close");
    int (*sub_)(unsigned, gdrx_mem_event_cb_t, void *, gdrx_mem_sub_t *) =
        dlsym(h, "gdrx_mem_events_subscribe");
    int (*unsub_)(gdrx_mem_sub_t) = dlsym(h, "gdrx_mem_events_unsubscribe");
    if (!open_ || !close_ || !sub_ || !unsub_)
        return 3;
    for (int i = 0; i < 3 && !bad; i++) {
        gdrx_t g;
        gdrx_mem_sub_t s;
        int p = i == 0 && park_one(t, THREADS, 300);
        bad |= open_(NULL, &g) != 0;
        park_release(p);
        parked |= p;
        bad |= !bad && sub_(GDRX_MEM_EVENT_FREE, noop_cb, NULL, &s) != 0;
        bad |= !bad && unsub_(s) != 0;
        if (!bad)
            close_(g);
        usleep(1000);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return bad ? 1 : parked ? 0 : 4;
}

/* ------------------------------------------------------- trap cost */

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc; /* resumes after the int3, as a trap-based hook would resume */
}

static double trap_ns(void)
{
    struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO }, old;
    struct timespec a, b;
    const int n = 200000;

    sigaction(SIGTRAP, &sa, &old);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        __asm__ __volatile__("int3" ::: "memory");
    clock_gettime(CLOCK_MONOTONIC, &b);
    sigaction(SIGTRAP, &old, NULL);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "trapcost") == 0) {
        printf("int3 + SIGTRAP round trip: %.0f ns\n", trap_ns());
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: hooks_stress LIBGDRX ROUNDS | hooks_stress trapcost\n");
        return 2;
    }
    int rounds = atoi(argv[2]), crashed = 0, failed = 0, parked = 0;
    for (int i = 0; i < rounds; i++) {
        pid_t pid = fork();
        int st = 0;
        if (pid == 0)
            _exit(child(argv[1]));
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 1;
        if (WIFSIGNALED(st)) {
            crashed++;
            printf("round %d: signal %d\n", i, WTERMSIG(st));
        } else if (WEXITSTATUS(st) == 0) {
            parked++;
        } else if (WEXITSTATUS(st) != 4) {
            failed++;
            printf("round %d: exit %d\n", i, WEXITSTATUS(st));
        }
    }
    printf("%s: %d processes (%d with a thread parked in an entry), %d crashed, %d failed\n",
           argv[1], rounds, parked, crashed, failed);
    return crashed || failed;
}
