/*
 * fork_conc.c - fork() while other threads are inside libcuda, with fork
 * handlers that run after libgdrx's and call CUDA or copy, on a real GPU
 * (issue 43, defects 7 and 8; tests/libgdr/test_fork_race.c is the same on
 * the simulated GPU).  Run with GDRX_BACKEND=nvrm: defect 7 is the nvrm
 * ioctl trace's.
 *
 * SPDX-License-Identifier: MIT
 *
 *   fork_conc MODE [-s SEED] [-n N] [-t THREADS] [-c CASE]
 *
 *   alloc      THREADS (2-4) threads loop cuMemAlloc/cuMemFree and
 *              cuMemAllocAsync/cuMemFreeAsync (random sizes) while the main
 *              thread copies through a pin (every byte read back checked,
 *              re-pinned every 16 forks) and forks N times.  A prepare
 *              handler registered before libgdrx's (so it runs after it, as
 *              UCX 1.22's cache purge does) calls CUDA at every fork:
 *              cuMemHostRegister + cuMemHostUnregister of a host buffer and
 *              cuCtxSynchronize.  Half the children copy through the pin
 *              (-ECHILD expected), the rest just leave.
 *   park-alloc the same hang made certain: a thread is parked inside
 *              cuMemAlloc's traced RM ioctl (holding libcuda's lock) at the
 *              interleaving point nvrm_trace.observe; the handler lets it
 *              go and allocates and frees.  N rounds.
 *   copyfree   defect 8 left to the scheduler: another thread cuMemFree's a
 *              pinned allocation as the main thread forks; the handler
 *              copies through that pin both ways.  Each copy must return,
 *              0 (before the free took the pin), -EDEADLK (while it held
 *              it) or -ESTALE (after), a read that returned 0 must hold
 *              the allocation's bytes, and after fork() the pin is stale.
 *              N rounds.
 *   park-free  defect 8 made certain: the freeing thread parked at
 *              mem_events.after_driver_free or mem_events.held
 *              (alternately); the handler's copies must return -EDEADLK.
 *
 * park-* need a libgdrx built with test points (build.sh's $B/tp, first on
 * LD_LIBRARY_PATH); without one they say so and fail.  Every fork, join
 * and handler copy runs under a watchdog: a hang prints the RESULT line
 * with hang=... and exits 2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "gdrx.h"
#include "gpu_conc.h"
#include "gpu_pattern.h"
#include "ipoint.h" /* tests/harness/ipoint.h */

#define MiB       (1024u * 1024u)
#define BUF       (1 * MiB)
#define MAXLEN    8192u
#define FORK_S    20u   /* a fork, its child, a handler: milliseconds when well */
#define PARK_MS   3000u
#define COPY_MS   2000u /* a handler's copy: bounded, else it is the hang */
#define MAXTHR    4

/* tests/harness/ipoint.c is compiled with gdrx_test_ipoint_hook_set
 * renamed to this, so one program runs against both libgdrx builds: the
 * hook is looked up in whichever one was loaded. */
void fc_ipoint_hook_set(void (*fn)(const char *name));

void fc_ipoint_hook_set(void (*fn)(const char *name))
{
    void (*set)(void (*)(const char *)) = NULL;
    void *f = dlsym(RTLD_DEFAULT, "gdrx_test_ipoint_hook_set");

    memcpy(&set, &f, sizeof(f));
    if (set)
        set(fn);
}

static int have_test_points(void)
{
    return dlsym(RTLD_DEFAULT, "gdrx_test_ipoint_hook_set") != NULL;
}

static CUcontext ctx;
static gdrx_t g;
static uint64_t rs;
static atomic_int stop;
static CUresult (*host_register)(void *, size_t, unsigned);
static CUresult (*host_unregister)(void *);
static unsigned char hostbuf[64 * 1024] __attribute__((aligned(4096)));

static struct {
    long forks, bad_children, copies, copy_bad, bytes_bad, handler_calls, handler_errs, setup;
    long parked, not_parked, park_wrong, alloc_ops, rc0, rc_deadlk, rc_stale, rc_other, post_not_stale, read_bad;
    double max_fork_ms, max_copy_ms;
} st;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --------------------------------------------------------- fork handler */

/* What the prepare handler does at the next fork (NULL: nothing).  It is
 * registered before gdrx_open registers libgdrx's, so glibc runs it after
 * libgdrx's prepare handler, while the forking thread holds libgdrx's
 * locks. */
static void (*_Atomic handler_action)(void);

static void prepare(void)
{
    void (*fn)(void) = atomic_exchange(&handler_action, NULL);

    if (fn)
        fn();
}

/* UCX 1.22's purge in short: host memory unregistered, and a context sync. */
static void handler_calls_cuda(void)
{
    CUresult r = CUDA_SUCCESS;

    if (host_register) {
        r = host_register(hostbuf, sizeof(hostbuf), 0);
        if (r == CUDA_SUCCESS)
            r = host_unregister(hostbuf);
    }
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    st.handler_calls++;
    st.handler_errs += r != CUDA_SUCCESS;
}

/* fork() under the watchdog; the child runs child_fn (or leaves). */
static int fork_and_reap(int (*child_fn)(void), const char *what, long n)
{
    int status = 0;

    gc_watch(FORK_S, "fork %ld (%s)", n, what);
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        alarm(FORK_S);
        _exit(child_fn ? child_fn() : 0);
    }
    double dt = now_ms() - t0;
    st.max_fork_ms = dt > st.max_fork_ms ? dt : st.max_fork_ms;
    if (pid < 0) {
        perror("fork");
        st.setup++;
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    gc_watch(0, NULL);
    st.forks++;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        st.bad_children++;
        printf("  fork %ld: child status %#x\n", n, status);
    }
    return 0;
}

/* ------------------------------------------------------ the main pin */

static CUdeviceptr dbuf;
static unsigned char shadow[BUF];
static gdrx_pin_t pin;
static unsigned char *cpu;

static int pin_buf(void)
{
    int rc = gdrx_pin(g, dbuf, BUF, 0, &pin);
    if (rc == 0)
        rc = gdrx_map(g, pin, (void **)&cpu);
    if (rc)
        printf("  gdrx_pin/map: %s\n", gdrx_strerror(rc));
    return rc;
}

/* One random write through the pin, then the window around it read back. */
static void copy_round(void)
{
    static unsigned char out[MAXLEN], in[MAXLEN + 128];
    size_t len = 1 + gp_rnd(&rs) % MAXLEN, off = gp_rnd(&rs) % (BUF - len + 1);
    size_t lo = off > 64 ? off - 64 : 0, hi = off + len + 64 < BUF ? off + len + 64 : BUF;

    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)gp_rnd(&rs);
    int rc = gdrx_copy_to_mapping(pin, cpu + off, out, len);
    if (rc == 0)
        memcpy(shadow + off, out, len);
    if (rc == 0)
        rc = gdrx_copy_from_mapping(pin, in, cpu + lo, hi - lo);
    st.copies++;
    if (rc || memcmp(in, shadow + lo, hi - lo)) {
        st.copy_bad++;
        printf("  copy through the pin: %s\n", rc ? gdrx_strerror(rc) : "bytes differ");
    }
}

static int child_copies(void)
{
    unsigned char b = 0;
    return gdrx_copy_to_mapping(pin, cpu, &b, 1) == -ECHILD ? 0 : 3;
}

/* ----------------------------------------------------------- mode alloc */

struct allocator {
    pthread_t t;
    uint64_t  rs;
    CUstream  s;
    atomic_long ops;
    long      errs;
};

static atomic_long oom;

static void *allocate(void *arg)
{
    struct allocator *a = arg;
    CUdeviceptr p;

    if (GC_CU(cuCtxSetCurrent(ctx)) || GC_CU(cuStreamCreate(&a->s, CU_STREAM_NON_BLOCKING))) {
        a->errs++;
        return NULL;
    }
    while (!atomic_load(&stop)) {
        size_t size = 4096 + gp_rnd(&a->rs) % (16 * MiB);
        int async = gp_rnd(&a->rs) % 4 == 0, bad;
        /* Out of memory is no defect here (the RM emulator's memory is
         * small): counted, not failed. */
        CUresult r = async ? cuMemAllocAsync(&p, size, a->s) : cuMemAlloc(&p, size);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            atomic_fetch_add(&oom, 1);
            continue;
        }
        if (async)
            bad = GC_CU(r) || GC_CU(cuMemFreeAsync(p, a->s)) || GC_CU(cuStreamSynchronize(a->s));
        else
            bad = GC_CU(r) || GC_CU(cuMemFree(p));
        a->errs += bad;
        if (bad && a->errs > 10)
            break;
        atomic_fetch_add(&a->ops, 1);
    }
    cuStreamDestroy(a->s);
    return NULL;
}

static int mode_alloc(int forks, int nthreads)
{
    struct allocator a[MAXTHR];
    long ops_before = 0, ops_after = 0, errs = 0;

    if (pin_buf())
        return -1;
    atomic_store(&stop, 0);
    for (int i = 0; i < nthreads; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        a[i].rs = rs + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        if (pthread_create(&a[i].t, NULL, allocate, &a[i]))
            return -1;
    }
    for (int i = 0; i < nthreads; i++) /* every allocator running */
        while (atomic_load(&a[i].ops) == 0 && a[i].errs == 0)
            sched_yield();
    for (int i = 0; i < nthreads; i++)
        ops_before += atomic_load(&a[i].ops);
    for (long n = 1; n <= forks; n++) {
        if (n % 16 == 0 && (gdrx_unpin(g, pin) || pin_buf()))
            return -1;
        copy_round();
        atomic_store(&handler_action, handler_calls_cuda);
        if (fork_and_reap(n % 2 ? child_copies : NULL, "allocating threads, CUDA-calling handler",
                          n))
            return -1;
    }
    for (int i = 0; i < nthreads; i++)
        ops_after += atomic_load(&a[i].ops);
    atomic_store(&stop, 1);
    gc_watch(FORK_S, "joining the allocating threads");
    for (int i = 0; i < nthreads; i++) {
        pthread_join(a[i].t, NULL);
        errs += a[i].errs;
    }
    gc_watch(0, NULL);
    static unsigned char back[BUF];
    if (GC_CU(cuMemcpyDtoH(back, dbuf, BUF)))
        return -1;
    for (size_t i = 0; i < BUF; i++)
        st.bytes_bad += back[i] != shadow[i];
    gdrx_unpin(g, pin);
    printf("  allocator calls during the forks: %ld, allocator errors: %ld, out of memory: %ld\n",
           ops_after - ops_before, errs, atomic_load(&oom));
    st.alloc_ops = ops_after - ops_before;
    st.setup += errs != 0 || ops_after == ops_before;
    return 0;
}

/* ------------------------------------------------------ mode park-alloc */

static const char *park_name;

static void handler_release_and_alloc(void)
{
    CUdeviceptr p;

    ipoint_release(park_name);
    CUresult r = cuMemAlloc(&p, 4 * MiB);
    if (r == CUDA_SUCCESS)
        r = cuMemFree(p);
    st.handler_errs += r != CUDA_SUCCESS;
    handler_calls_cuda();
}

struct one_call {
    pthread_t   t;
    CUdeviceptr p;
    size_t      size;
    int         free; /* 1: cuMemFree(p); 0: cuMemAlloc(&p, size) */
    CUresult    rc;
    atomic_int  go;   /* the call starts once set */
    atomic_int  done;
};

static void *one_call_main(void *arg)
{
    struct one_call *c = arg;

    c->rc = cuCtxSetCurrent(ctx);
    while (!atomic_load(&c->go))
        ;
    if (c->rc == CUDA_SUCCESS)
        c->rc = c->free ? cuMemFree(c->p) : cuMemAlloc(&c->p, c->size);
    atomic_store(&c->done, 1);
    return NULL;
}

static int mode_park_alloc(int rounds)
{
    park_name = "nvrm_trace.observe";
    for (int r = 0; r < rounds; r++) {
        struct one_call c = { .size = (size_t)(64 + 64 * (r % 4)) * MiB, .go = 1 };
        if (ipoint_arm(park_name) || pthread_create(&c.t, NULL, one_call_main, &c))
            return -1;
        if (ipoint_wait(park_name, PARK_MS) != 0) {
            ipoint_reset();
            st.not_parked++;
        } else {
            st.parked += !atomic_load(&c.done); /* ours, inside cuMemAlloc */
            atomic_store(&handler_action, handler_release_and_alloc);
            if (fork_and_reap(NULL, "a thread parked in cuMemAlloc's traced ioctl", r + 1))
                return -1;
        }
        gc_watch(FORK_S, "the parked cuMemAlloc of round %d", r + 1);
        pthread_join(c.t, NULL);
        gc_watch(0, NULL);
        if (GC_CU(c.rc) || GC_CU(cuMemFree(c.p)))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------- modes copyfree, park-free */

static struct {
    gdrx_pin_t     pin;
    unsigned char *cpu;
    size_t         len, off;
    uint32_t       seed;
    int            to, from;
} hc;

static void classify(int rc)
{
    if (rc == 0)
        st.rc0++;
    else if (rc == -EDEADLK)
        st.rc_deadlk++;
    else if (rc == -ESTALE)
        st.rc_stale++;
    else {
        st.rc_other++;
        printf("  handler copy: %s\n", gdrx_strerror(rc));
    }
}

/* Both copies through the pin being freed: the write puts back the bytes
 * already there, so a read that returns 0 must find the pattern. */
static void handler_copies(void)
{
    static unsigned char out[MAXLEN], in[MAXLEN];

    if (park_name)
        ipoint_release(park_name);
    gp_fill(out, hc.len, hc.off, hc.seed);
    memset(in, 0, hc.len);
    double t0 = now_ms();
    hc.to = gdrx_copy_to_mapping(hc.pin, hc.cpu, out, hc.len);
    hc.from = gdrx_copy_from_mapping(hc.pin, in, hc.cpu, hc.len);
    double dt = now_ms() - t0;
    st.max_copy_ms = dt > st.max_copy_ms ? dt : st.max_copy_ms;
    if (hc.from == 0 && gp_count_bad(in, hc.len, hc.off, hc.seed))
        st.read_bad++;
}

static int mode_copyfree(int rounds, int park)
{
    for (int r = 0; r < rounds; r++) {
        struct one_call c = { .free = 1, .go = park };
        static unsigned char fill[MAXLEN];
        size_t size = park ? 4 * MiB : MiB + gp_rnd(&rs) % (31 * MiB);

        hc.seed = (uint32_t)gp_rnd(&rs) | 1;
        hc.len = 1 + gp_rnd(&rs) % MAXLEN;
        hc.off = gp_rnd(&rs) % (size - hc.len);
        gp_fill(fill, hc.len, hc.off, hc.seed); /* the window is all a copy reads */
        if (GC_CU(cuMemAlloc(&c.p, size)) || GC_CU(cuMemcpyHtoD(c.p + hc.off, fill, hc.len)))
            return -1;
        int rc = gdrx_pin(g, c.p + hc.off, hc.len, 0, &hc.pin);
        if (rc == 0)
            rc = gdrx_map(g, hc.pin, (void **)&hc.cpu);
        if (rc)
            return printf("  gdrx_pin/map: %s\n", gdrx_strerror(rc)), -1;
        park_name = !park ? NULL : r % 2 ? "mem_events.held" : "mem_events.after_driver_free";
        if (park && ipoint_arm(park_name))
            return -1;
        if (pthread_create(&c.t, NULL, one_call_main, &c))
            return -1;
        if (park && ipoint_wait(park_name, PARK_MS) != 0) {
            printf("  round %d: the free did not reach %s\n", r + 1, park_name);
            ipoint_reset();
            st.not_parked++;
        } else {
            st.parked += park;
            /* Unparked: let the free go, and fork at a random moment of it
             * (the driver's free of MiBs takes tens of microseconds or
             * more; the thread is already running, in a spin). */
            if (!park) {
                double until = now_ms() + (double)(gp_rnd(&rs) % 400) / 1000.0;
                atomic_store(&c.go, 1);
                while (now_ms() < until)
                    ;
            }
            atomic_store(&handler_action, handler_copies);
            gc_watch(COPY_MS / 1000 + FORK_S, "fork %d: a handler's copy while cuMemFree", r + 1);
            if (fork_and_reap(NULL, "a handler copies while another thread frees", r + 1))
                return -1;
            classify(hc.to);
            classify(hc.from);
            if (park && (hc.to != -EDEADLK || hc.from != -EDEADLK)) {
                printf("  round %d (%s): handler copies %d %d, not -EDEADLK\n", r + 1, park_name,
                       hc.to, hc.from);
                st.park_wrong++;
            }
        }
        gc_watch(FORK_S, "cuMemFree of round %d after the fork", r + 1);
        pthread_join(c.t, NULL);
        gc_watch(0, NULL);
        unsigned char b = 0;
        int post = gdrx_copy_to_mapping(hc.pin, hc.cpu, &b, 1);
        st.post_not_stale += post != -ESTALE;
        if (GC_CU(c.rc) || gdrx_unpin(g, hc.pin))
            return -1;
    }
    park_name = NULL;
    return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    int n = 200, nthreads = 2, opt;
    const char *mode = argc > 1 ? argv[1] : "";

    gc_case = mode;
    optind = 2;
    while ((opt = getopt(argc, argv, "s:n:t:c:")) != -1) {
        if (opt == 's')
            seed = strtoull(optarg, NULL, 0);
        else if (opt == 'n')
            n = atoi(optarg);
        else if (opt == 't')
            nthreads = atoi(optarg);
        else if (opt == 'c')
            gc_case = optarg;
        else
            n = -1;
    }
    int park = strncmp(mode, "park-", 5) == 0;
    if (n <= 0 || nthreads < 1 || nthreads > MAXTHR ||
        (strcmp(mode, "alloc") && strcmp(mode, "park-alloc") && strcmp(mode, "copyfree") &&
         strcmp(mode, "park-free"))) {
        fprintf(stderr, "usage: fork_conc alloc|park-alloc|copyfree|park-free [-s SEED] [-n N] "
                        "[-t THREADS 1-4] [-c CASE]\n");
        return 2;
    }
    rs = seed ? seed : 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (GC_CU(cuInit(0)) || GC_CU(cuDevicePrimaryCtxRetain(&ctx, 0)) ||
        GC_CU(cuCtxSetCurrent(ctx)) || pthread_atfork(prepare, NULL, NULL)) {
        printf("RESULT %s FAIL setup=cuda\n", gc_case);
        return 1;
    }
    /* Looked up, not linked: the simulated GPU has no host registration
     * (the handler then only synchronises). */
    *(void **)&host_register = dlsym(RTLD_DEFAULT, "cuMemHostRegister_v2");
    *(void **)&host_unregister = dlsym(RTLD_DEFAULT, "cuMemHostUnregister");
    if (!host_unregister)
        host_register = NULL;
    int rc = gdrx_open(NULL, &g); /* registers libgdrx's fork handlers: after ours */
    if (rc || (park && !have_test_points())) {
        printf("RESULT %s FAIL setup=\"%s\"\n", gc_case,
               rc ? gdrx_strerror(rc) : "libgdrx without test points: LD_LIBRARY_PATH=$B/tp");
        return 1;
    }
    uint64_t backend = 0;
    gdrx_get_attr(g, GDRX_ATTR_BACKEND, &backend);
    const char *bname = gdrx_backend_name((gdrx_backend_t)backend);
    printf("fork_conc %s: seed %llu, n %d, threads %d, backend %s, handler: %s\n", mode,
           (unsigned long long)seed, n, nthreads, bname,
           host_register ? "cuMemHostRegister/Unregister + cuCtxSynchronize" : "cuCtxSynchronize");
    if (GC_CU(cuMemAlloc(&dbuf, BUF)))
        return 1;
    for (size_t i = 0; i < BUF; i++)
        shadow[i] = (unsigned char)gp_rnd(&rs);
    if (GC_CU(cuMemcpyHtoD(dbuf, shadow, BUF)))
        return 1;

    if (!strcmp(mode, "alloc"))
        rc = mode_alloc(n, nthreads);
    else if (!strcmp(mode, "park-alloc"))
        rc = mode_park_alloc(n);
    else
        rc = mode_copyfree(n, park);
    st.setup += rc != 0;
    int pass = st.setup == 0 && st.bad_children == 0 && st.copy_bad == 0 && st.bytes_bad == 0 &&
               st.handler_errs == 0 && st.rc_other == 0 && st.park_wrong == 0 && st.read_bad == 0 &&
               st.post_not_stale == 0 && st.max_copy_ms < COPY_MS && st.not_parked == 0 &&
               (!park || st.parked > 0);
    printf("RESULT %s %s mode=%s seed=%llu backend=%s forks=%ld max_fork_ms=%.1f "
           "bad_children=%ld",
           gc_case, pass ? "PASS" : "FAIL", mode, (unsigned long long)seed, bname, st.forks,
           st.max_fork_ms, st.bad_children);
    if (!strcmp(mode, "alloc") || !strcmp(mode, "park-alloc"))
        printf(" threads=%d handler_cuda_calls=%ld handler_cuda_errors=%ld",
               park ? 1 : nthreads, st.handler_calls, st.handler_errs);
    if (!strcmp(mode, "alloc"))
        printf(" alloc_calls_during_forks=%ld out_of_memory=%ld pin_copies=%ld copy_errors=%ld "
               "bytes_changed=%ld", st.alloc_ops, atomic_load(&oom), st.copies, st.copy_bad,
               st.bytes_bad);
    if (park)
        printf(" parked=%ld not_parked=%ld not_edeadlk_while_parked=%ld", st.parked,
               st.not_parked, st.park_wrong);
    if (!strcmp(mode, "copyfree") || !strcmp(mode, "park-free"))
        printf(" handler_copies_0=%ld edeadlk=%ld estale=%ld other=%ld read_bad=%ld "
               "max_copy_ms=%.1f post_fork_not_estale=%ld",
               st.rc0, st.rc_deadlk, st.rc_stale, st.rc_other, st.read_bad, st.max_copy_ms,
               st.post_not_stale);
    printf(" setup_errors=%ld\n", st.setup);
    gdrx_close(g);
    return pass ? 0 : 1;
}
