/*
 * test_fork_race.c - fork() while another thread is held, by an
 * interleaving point (libgdr/src/ipoint.h), where the forking thread must
 * not wait for it (issue 43, defects 7 to 10).
 *
 * SPDX-License-Identifier: MIT
 *
 * Each case runs in a process of its own with alarm(): a deadlock kills it
 * with SIGALRM and fails the case instead of hanging the suite.  The
 * process starts without CUDA (a fork child of a process that initialised
 * CUDA may not use it), so it can set up what the case needs in order:
 * CUDA, fork handlers, threads.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipoint.h"
#include "parked_call.h"
#include "tcuda.h"
#ifdef FORK_RACE_NVRM
#  include "nvrm_reexec.h"
#endif

#define KiB 1024u
#define MiB (1024u * KiB)
#define RACE_ALARM 10u /* seconds: every case takes well under one */
#define PARK_MS 5000u

/* Runs body in a child process under alarm(); the case passes if it
 * returned 0.  Its return value is a mask of the checks that failed. */
static void in_child(const char *what, int (*body)(void))
{
    int st = 0;

    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        alarm(RACE_ALARM);
        _exit(body());
    }
    CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        fprintf(stderr, "    %s: killed by signal %d%s\n", what, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (no progress: deadlocked)" : "");
    else if (WEXITSTATUS(st) != 0)
        fprintf(stderr, "    %s: failed checks, mask %#x\n", what, (unsigned)WEXITSTATUS(st));
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* fork() from this thread; the child only leaves (the system call: a
 * thread sanitizer's _exit would report the parent's threads that ended
 * unjoined just before the fork as leaked there).  0 once it has. */
static int fork_and_reap(void)
{
    int st = 0;

    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        syscall(SYS_exit_group, 0);
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? 0 : -1;
}

#define CHECK(cond) (bad |= (cond) ? 0 : 1 << bit, bit++)

#ifdef FORK_RACE_NVRM /* the trace is nvrm's */
/* ---- defect 7: a prepare handler after libgdrx's calls CUDA while
 * another thread is inside cuMemAlloc's traced ioctl ----
 * libcuda (here the simulated one) holds its lock from cuMemAlloc's start
 * to its end; the nvrm trace runs inside its ioctls.  Parked there, the
 * allocator holds libcuda's lock; released from the handler, it needs the
 * trace's lock.  If libgdrx's prepare handler held that, the handler's
 * own cuMemAlloc waited for the allocator, which waited for the forking
 * thread. */
static struct {
    int      armed;
    CUresult alloc, free;
} d7;

static void d7_prepare(void)
{
    CUdeviceptr p = 0;

    if (!d7.armed)
        return;
    d7.armed = 0;
    ipoint_release("nvrm_trace.observe");
    d7.alloc = tc.MemAlloc(&p, 4 * MiB);
    d7.free = d7.alloc == CUDA_SUCCESS ? parked_call_free(p) : d7.alloc;
}

static int d7_body(void)
{
    struct parked_call a = { .len = 4 * MiB };
    int bad = 0, bit = 0;
    gdrx_t g;

    if (tc_setup(0) || pthread_atfork(d7_prepare, NULL, NULL) || gdrx_open(NULL, &g))
        return 0x80; /* before libgdrx's, which the open registers */
    d7.alloc = d7.free = CUDA_ERROR_UNKNOWN;
    CHECK(parked_call_start(&a, "nvrm_trace.observe", PARK_MS) == 0);
    d7.armed = 1;
    CHECK(fork_and_reap() == 0);
    CHECK(pthread_join(a.t, NULL) == 0 && a.rc == CUDA_SUCCESS);
    CHECK(d7.alloc == CUDA_SUCCESS && d7.free == CUDA_SUCCESS);
    CHECK(parked_call_free(a.p) == CUDA_SUCCESS && gdrx_close(g) == 0);
    return bad;
}

static void test_handler_cuda_vs_traced_alloc(void)
{
    in_child("fork with a CUDA-calling handler while another thread allocates", d7_body);
}
#endif

/* ---- defect 8: a copy from a prepare handler after libgdrx's while
 * another thread's cuMemFree holds the pin ----
 * The free holds the pin's copies until it has revoked the pin, which
 * takes a lock the forking thread holds: waiting for it there never ends.
 * The copy refuses (-EDEADLK) after a bounded wait; after fork() returned
 * the free completes and the pin is stale. */
static struct {
    int        armed;
    gdrx_pin_t pin;
    void      *cpu;
    int        copy;
} d8;

static void d8_prepare(void)
{
    unsigned char byte = 1;

    if (!d8.armed)
        return;
    d8.armed = 0;
    ipoint_release("mem_events.after_driver_free");
    d8.copy = gdrx_copy_to_mapping(d8.pin, d8.cpu, &byte, 1);
}

static int d8_body(void)
{
    struct parked_call f = { 0 };
    unsigned char byte = 2;
    int bad = 0, bit = 0;
    gdrx_t g;

    if (tc_setup(0) || pthread_atfork(d8_prepare, NULL, NULL) || gdrx_open(NULL, &g))
        return 0x80;
    CUdeviceptr a = tc_alloc(4 * MiB);
    if (!a || gdrx_pin(g, a, 64 * KiB, 0, &d8.pin) || gdrx_map(g, d8.pin, &d8.cpu))
        return 0x40;
    d8.copy = 1;
    f.p = a;
    CHECK(parked_call_start(&f, "mem_events.after_driver_free", PARK_MS) == 0);
    d8.armed = 1;
    CHECK(fork_and_reap() == 0);
    CHECK(d8.copy == -EDEADLK);
    CHECK(pthread_join(f.t, NULL) == 0 && f.rc == CUDA_SUCCESS);
    CHECK(gdrx_copy_to_mapping(d8.pin, d8.cpu, &byte, 1) == -ESTALE);
    CHECK(gdrx_unpin(g, d8.pin) == 0 && gdrx_close(g) == 0);
    return bad;
}

static void test_handler_copy_vs_free(void)
{
    in_child("a copy from a handler while another thread frees the pin", d8_body);
}

/* ---- defect 10: a slot's lock held by a thread the child does not have
 * ----
 * A context closed under a thread that looked it up is free, and that
 * thread then read-locks it: forked there, the child's first gdrx_open
 * takes that slot.  A pin's lock held by another thread: the child's
 * context close walks every pin (nvrm only: the only backend here that
 * opens without CUDA).  The child opens as gdr_open does (no CUDA there)
 * and closes. */
/* nvrm opens without CUDA (its checks need only the RM); dmabuf cannot
 * (gdr_open returns NULL in such a child), after allocating the slot. */
#ifdef FORK_RACE_NVRM
#  define CHILD_OPENS 1
#else
#  define CHILD_OPENS 0
#endif

static int child_open_close(void)
{
    struct gdrx_open_params params;
    gdrx_t g;

    alarm(RACE_ALARM); /* not inherited: a hang here must end too */
    gdrx_open_params_init(&params);
    params.flags = GDRX_OPEN_FLAG_NO_CUDA_FALLBACK;
    int rc = gdrx_open(&params, &g);
    if (rc == 0)
        rc = gdrx_close(g);
    if (rc == -ENODEV && !CHILD_OPENS)
        return 0; /* it returned: what the case is about */
    if (rc)
        fprintf(stderr, "    child: gdr_open/gdr_close: %s\n", gdrx_strerror(rc));
    return rc != 0;
}

static int fork_child_opens(void)
{
    int st = 0;

    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_open_close());
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0
               ? 0 : -1;
}

struct attr_thread {
    pthread_t t;
    gdrx_t    g;
    int       rc;
};

static void *attr_main(void *arg)
{
    struct attr_thread *a = arg;
    uint64_t v;

    a->rc = gdrx_get_attr(a->g, GDRX_ATTR_PIN_COUNT, &v);
    return NULL;
}

static int d10_ctx_body(void)
{
    struct attr_thread t;
    int bad = 0, bit = 0;

    if (tc_setup(0) || gdrx_open(NULL, &t.g))
        return 0x80;
    CHECK(ipoint_arm("context.get_before_lock") == 0);
    CHECK(ipoint_arm("context.get_locked") == 0);
    CHECK(pthread_create(&t.t, NULL, attr_main, &t) == 0);
    CHECK(ipoint_wait("context.get_before_lock", PARK_MS) == 0);
    CHECK(gdrx_close(t.g) == 0); /* the slot is free, first in line */
    CHECK(ipoint_release("context.get_before_lock") == 0);
    CHECK(ipoint_wait("context.get_locked", PARK_MS) == 0);
    CHECK(fork_child_opens() == 0);
    CHECK(ipoint_release("context.get_locked") == 0);
    CHECK(pthread_join(t.t, NULL) == 0 && t.rc == -EBADF);
    return bad;
}

static void test_child_open_slot_locked(void)
{
    in_child("gdr_open in a child, a free context slot locked in the parent", d10_ctx_body);
}

#if CHILD_OPENS
struct query_thread {
    pthread_t  t;
    gdrx_t     g;
    gdrx_pin_t pin;
    int        rc;
};

static void *query_main(void *arg)
{
    struct query_thread *q = arg;
    struct gdrx_pin_info info;

    q->rc = gdrx_pin_query(q->g, q->pin, &info);
    return NULL;
}

static int d10_pin_body(void)
{
    struct query_thread q;
    int bad = 0, bit = 0;

    if (tc_setup(0) || gdrx_open(NULL, &q.g))
        return 0x80;
    CUdeviceptr a = tc_alloc(4 * MiB);
    if (!a || gdrx_pin(q.g, a, 64 * KiB, 0, &q.pin))
        return 0x40;
    CHECK(ipoint_arm("pin.get_locked") == 0);
    CHECK(pthread_create(&q.t, NULL, query_main, &q) == 0);
    CHECK(ipoint_wait("pin.get_locked", PARK_MS) == 0);
    CHECK(fork_child_opens() == 0);
    CHECK(ipoint_release("pin.get_locked") == 0);
    CHECK(pthread_join(q.t, NULL) == 0 && q.rc == 0);
    CHECK(gdrx_unpin(q.g, q.pin) == 0 && gdrx_close(q.g) == 0);
    return bad;
}

static void test_child_close_pin_locked(void)
{
    in_child("gdr_close in a child, a pin locked in the parent", d10_pin_body);
}
#endif

#ifndef FORK_RACE_NVRM /* once is enough: no nvrm call in the window */
/* ---- defect 9: a fork during the first cuInit, with libgdrx's handlers
 * registered early, on a glibc that holds its fork-handler lock across
 * the prepare handlers ----
 * glibc 2.28 to 2.35 take the lock pthread_atfork takes before the first
 * prepare handler and release it after the last parent or child handler;
 * 2.36 releases it while each handler runs.  This program keeps the older
 * rule on any glibc: its __register_atfork (what pthread_atfork calls;
 * exported with -rdynamic, so libcuda's registrations reach it too) waits
 * while a fork runs its handlers.  libcuda registers its handler inside
 * cuInit, which libgdrx calls holding its loader's lock; a prepare handler
 * that takes that lock waits for a thread that waits for the fork. */
static pthread_mutex_t old_glibc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t old_glibc_cond = PTHREAD_COND_INITIALIZER;
static int old_glibc_on, old_glibc_forking, old_glibc_forks;

typedef int (*register_atfork_fn)(void (*)(void), void (*)(void), void (*)(void), void *);
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                      void *dso);
/* Not instrumented: a thread sanitizer registers its own handlers through
 * here before it is initialised.  Only the case's own process waits. */
__attribute__((no_sanitize_thread))
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                      void *dso)
{
    register_atfork_fn real;
    void *f = dlsym(RTLD_NEXT, "__register_atfork");

    if (!f)
        return ENOSYS;
    memcpy(&real, &f, sizeof(f));
    if (__atomic_load_n(&old_glibc_on, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&old_glibc_lock);
        while (old_glibc_forking)
            pthread_cond_wait(&old_glibc_cond, &old_glibc_lock);
        pthread_mutex_unlock(&old_glibc_lock);
    }
    return real(prepare, parent, child, dso);
}

/* Registered after libgdrx's: its prepare runs first, the others last. */
static void old_glibc_prepare(void)
{
    if (!__atomic_load_n(&old_glibc_on, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&old_glibc_lock);
    old_glibc_forking = 1;
    old_glibc_forks++;
    pthread_mutex_unlock(&old_glibc_lock);
}

static void old_glibc_done(void)
{
    if (!__atomic_load_n(&old_glibc_on, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&old_glibc_lock);
    old_glibc_forking = 0;
    pthread_cond_broadcast(&old_glibc_cond);
    pthread_mutex_unlock(&old_glibc_lock);
}

void gdrx_test_ipoint_hook_set(void (*fn)(const char *name));

static void *d9_open(void *arg)
{
    struct attr_thread *a = arg;

    a->rc = gdrx_open(NULL, &a->g);
    return NULL;
}

/* The child: its first gdrx_open loads CUDA itself, past the point (no
 * parking in a child, whose copy of the harness's lock may be held). */
static void *d9_fork(void *arg)
{
    int *rc = arg, st = 0;

    pid_t pid = fork();
    if (pid == 0) {
        gdrx_test_ipoint_hook_set(NULL);
        _exit(child_open_close());
    }
    *rc = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return NULL;
}

static int d9_body(void)
{
    struct attr_thread opener = { .rc = 1 };
    pthread_t forker;
    int bad = 0, bit = 0, forked = -1, seen = 0;

    if (gdrx_fork_handlers_register() != 0 ||
        pthread_atfork(old_glibc_prepare, old_glibc_done, old_glibc_done) != 0)
        return 0x80;
    __atomic_store_n(&old_glibc_on, 1, __ATOMIC_RELEASE);
    CHECK(ipoint_arm("cuda_loader.before_init") == 0);
    CHECK(pthread_create(&opener.t, NULL, d9_open, &opener) == 0);
    CHECK(ipoint_wait("cuda_loader.before_init", PARK_MS) == 0);
    fflush(NULL);
    CHECK(pthread_create(&forker, NULL, d9_fork, &forked) == 0);
    for (int i = 0; i < 5000 && !seen; i++) {
        pthread_mutex_lock(&old_glibc_lock);
        seen = old_glibc_forks;
        pthread_mutex_unlock(&old_glibc_lock);
        usleep(1000);
    }
    CHECK(seen); /* the fork runs its handlers: let cuInit register */
    CHECK(ipoint_release("cuda_loader.before_init") == 0);
    CHECK(pthread_join(forker, NULL) == 0 && forked == 0);
    CHECK(pthread_join(opener.t, NULL) == 0 && opener.rc == 0);
    CHECK(gdrx_close(opener.g) == 0);
    return bad;
}

static void test_fork_during_first_cuinit(void)
{
    in_child("fork during the first cuInit, glibc < 2.36's handler lock", d9_body);
}
#endif

static const struct gdrx_test_case race_cases[] = {
#ifdef FORK_RACE_NVRM
    GDRX_TEST_CASE(test_handler_cuda_vs_traced_alloc),
#endif
    GDRX_TEST_CASE(test_handler_copy_vs_free),
    GDRX_TEST_CASE(test_child_open_slot_locked),
#if CHILD_OPENS
    GDRX_TEST_CASE(test_child_close_pin_locked),
#endif
#ifndef FORK_RACE_NVRM
    GDRX_TEST_CASE(test_fork_during_first_cuinit),
#endif
    GDRX_TEST_END,
};

/* FORK_RACE_NVRM: on nvrm under the RM-ioctl emulator, where libgdrx's
 * ioctl trace runs inside libcuda's calls. */
#ifdef FORK_RACE_NVRM
#  define SUITE  "fork_race_nvrm"
#  define BEFORE nvt_use_nvrm
#else
#  define SUITE  "fork_race"
#  define BEFORE NULL
#endif

static const struct gdrx_test_suite suites[] = {
    { SUITE, NULL, NULL, race_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, BEFORE);
}
