/*
 * test_concurrent.c - a randomised concurrent stress on the simulated GPU.
 *
 * SPDX-License-Identifier: MIT
 *
 * THREADS threads share SLOTS allocations of the primary context and draw
 * their steps from one seed: allocate, free, pin and map,
 * copy to and from the mapping with no lock held, unpin, verify, reset the primary context, cycle a private
 * context (create, allocate, pin, destroy), and fork a child that opens
 * libgdrx.  The simulated GPU hands freed addresses out again at once, so a
 * write that outlives its allocation lands in the next one.
 *
 * Invariants, checked at every step:
 *  - every allocation holds its own pattern, every byte (read through CUDA,
 *    never through libgdrx): writes through a mapping always write the
 *    bytes of the pattern of the allocation the pin was made on, and every
 *    allocation gets a pattern of its own, so a write that reached another
 *    allocation shows;
 *  - a copy through a pin returns 0 or -ESTALE; 0 from a read means the
 *    bytes are the pinned allocation's;
 *  - once a free or a context destroy returned, every copy through a pin of
 *    that memory fails with -ESTALE (no mapping of freed memory);
 *  - a fork child opens and closes a gdrx context within its deadline.
 * Frees wait for the copies already running through the same pin (a copy
 * still running when its memory is freed faults, as docs/semantics.md
 * says); copies that come later are the ones checked.
 * GDRX_STRESS_SEED picks the seed (default: a new one per run, printed);
 * a failure prints the seed and the step: the same seed replays the same
 * steps per thread (the interleaving is the scheduler's).
 * GDRX_STRESS_STEPS: steps per thread (default 1500, a quarter under a
 * sanitizer).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcuda.h"

#define THREADS     4
#define SLOTS       24
#define MAX_STALE   64
#define FORK_WAIT_S 20

enum slot_state { SLOT_EMPTY, SLOT_LIVE };

struct slot {
    pthread_mutex_t lock;
    enum slot_state state;
    CUdeviceptr     dptr;
    size_t          size;
    uint32_t        seed;  /* its pattern: unique per allocation */
    int             pinned;
    gdrx_pin_t      pin;
    void           *map;
    size_t          pin_off, pin_len;
    unsigned        busy;  /* copies in flight through pin */
    int             writing; /* one of them a write */
};

/* A pin whose memory was freed: every copy through it must fail. */
struct stale {
    gdrx_pin_t pin;
    void      *map;
    size_t     len;
};

struct worker {
    pthread_t     tid;
    int           index;
    uint64_t      rng;
    long          step;
    struct stale  stale[MAX_STALE];
    int           nstale;
    char         *buf;   /* scratch, one slot's largest size */
    char         *want;
};

static struct slot slots[SLOTS];
static gdrx_t ctx;
static CUcontext primary;
static uint64_t run_seed;
static long steps_per_thread;
static atomic_uint next_seed = 1;
static atomic_int failed;
/* Read for every step, written by a primary-context reset. */
static pthread_rwlock_t reset_lock;
static CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
static CUresult (*ctx_destroy)(CUcontext);
static char failure[512];
static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_SIZE (4u << 20)

static uint64_t rnd(struct worker *w)
{
    uint64_t x = (w->rng += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void fail(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct worker *w, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&failure_lock);
    if (!atomic_exchange(&failed, 1)) {
        int n = snprintf(failure, sizeof(failure), "seed %" PRIu64 ", thread %d, step %ld: ",
                         run_seed, w->index, w->step);
        va_start(ap, fmt);
        vsnprintf(failure + n, sizeof(failure) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&failure_lock);
}

/* Sizes from 1 B to 4 MiB, log-uniform: sub-allocations and whole objects. */
static size_t draw_size(struct worker *w)
{
    unsigned bits = (unsigned)(rnd(w) % 22);
    return 1 + (size_t)(rnd(w) % (1ull << (bits + 1)));
}

static void stale_add(struct worker *w, gdrx_pin_t pin, void *map, size_t len)
{
    if (w->nstale == MAX_STALE) {
        gdrx_unmap(ctx, w->stale[0].pin);
        gdrx_unpin(ctx, w->stale[0].pin);
        memmove(&w->stale[0], &w->stale[1], sizeof(w->stale[0]) * (MAX_STALE - 1));
        w->nstale--;
    }
    w->stale[w->nstale++] = (struct stale){ pin, map, len };
}

/* A copy through each of this thread's stale pins must fail: the memory was
 * freed before the pin went stale here. */
static void check_stale(struct worker *w)
{
    for (int i = 0; i < w->nstale; i++) {
        struct stale *s = &w->stale[i];
        size_t len = s->len < 64 ? s->len : 64;
        int rc = gdrx_copy_to_mapping(s->pin, s->map, w->want, len);
        if (rc != -ESTALE)
            fail(w, "a write through a pin of freed memory returned %d, not -ESTALE", rc);
        rc = gdrx_copy_from_mapping(s->pin, w->buf, s->map, len);
        if (rc != -ESTALE)
            fail(w, "a read through a pin of freed memory returned %d, not -ESTALE", rc);
    }
}

static void slot_verify_locked(struct worker *w, struct slot *s, const char *when)
{
    if (s->state == SLOT_LIVE && !tc_check(s->dptr, s->size, s->seed))
        fail(w, "allocation 0x%llx (%zu B, pattern %u) changed %s",
             (unsigned long long)s->dptr, s->size, s->seed, when);
}

static void op_alloc(struct worker *w, struct slot *s)
{
    CUdeviceptr p;

    pthread_mutex_lock(&s->lock);
    if (s->state == SLOT_EMPTY) {
        size_t size = draw_size(w);
        if (tc.MemAlloc(&p, size) == CUDA_SUCCESS) {
            s->state = SLOT_LIVE;
            s->dptr  = p;
            s->size  = size;
            s->seed  = atomic_fetch_add(&next_seed, 1);
            s->pinned = 0;
            tc_fill(p, size, s->seed);
            slot_verify_locked(w, s, "at once after its fill");
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* No copy through the slot's pin in flight. */
static void slot_wait_idle(struct slot *s)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        unsigned busy = s->busy;
        pthread_mutex_unlock(&s->lock);
        if (!busy)
            return;
        sched_yield();
    }
}

/* Free: the slot empties under its lock, the driver's free runs without
 * it, once the copies through the slot's pin are done. */
static void op_free(struct worker *w, struct slot *s)
{
    gdrx_pin_t pin;
    CUdeviceptr p  = 0;
    void *map = NULL;
    size_t len = 0;
    int pinned = 0;

    pthread_mutex_lock(&s->lock);
    if (s->state == SLOT_LIVE) {
        p = s->dptr;
        pinned = s->pinned;
        pin = s->pin;
        map = s->map;
        len = s->pin_len;
        s->state = SLOT_EMPTY;
    }
    pthread_mutex_unlock(&s->lock);
    if (!p)
        return;
    /* The slot is empty: no new copy starts on it, and the copies already
     * running finish before the free.  A copy still running when another
     * thread's free revokes its pin faults, by design (docs/semantics.md,
     * "Revocation": freeing memory in use is the caller's bug); under load
     * that took 3 runs in 6 when this waited only after the free. */
    slot_wait_idle(s);
    if (tc.MemFree(p) != CUDA_SUCCESS)
        fail(w, "cuMemFree(0x%llx) failed", (unsigned long long)p);
    if (pinned)
        stale_add(w, pin, map, len);
}

static void op_pin(struct worker *w, struct slot *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->state == SLOT_LIVE && !s->pinned) {
        size_t off = rnd(w) % 2 ? 0 : (size_t)(rnd(w) % s->size);
        size_t len = 1 + (size_t)(rnd(w) % (s->size - off));
        gdrx_pin_t pin;
        void *map;
        int rc = gdrx_pin(ctx, s->dptr + off, len, GDRX_PIN_FLAG_DEFAULT, &pin);
        if (rc == 0) {
            rc = gdrx_map(ctx, pin, &map);
            if (rc == 0) {
                s->pinned = 1;
                s->pin = pin;
                s->map = map;
                s->pin_off = off;
                s->pin_len = len;
            } else {
                gdrx_unpin(ctx, pin);
            }
        }
        if (rc != 0)
            fail(w, "pin/map of live memory 0x%llx+%zu (%zu B) failed: %d",
                 (unsigned long long)s->dptr, off, len, rc);
    }
    pthread_mutex_unlock(&s->lock);
}

static void op_unpin(struct worker *w, struct slot *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->state == SLOT_LIVE && s->pinned && !s->busy) {
        if (gdrx_unmap(ctx, s->pin) != 0 || gdrx_unpin(ctx, s->pin) != 0)
            fail(w, "unmap/unpin of a live pin failed");
        s->pinned = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

/* A copy with no lock held: a free may run meanwhile.  A write writes the
 * pinned allocation's own pattern bytes, so a live allocation never
 * changes; one that reached another allocation changes that one.  A write
 * runs alone among the slot's copies and checks: the same bytes written
 * and read at once are still a data race to a thread sanitizer, and the
 * race this stress is after is the copy against the free. */
static void op_copy(struct worker *w, struct slot *s, int write)
{
    size_t off, len, pin_off;
    uint32_t seed;
    gdrx_pin_t pin;
    char *map;
    int rc;

    pthread_mutex_lock(&s->lock);
    if (s->state != SLOT_LIVE || !s->pinned || s->writing || (write && s->busy)) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->busy++;
    s->writing = write;
    pin = s->pin;
    map = s->map;
    seed = s->seed;
    pin_off = s->pin_off;
    off = (size_t)(rnd(w) % s->pin_len);
    len = 1 + (size_t)(rnd(w) % (s->pin_len - off));
    pthread_mutex_unlock(&s->lock);

    /* the pattern of the whole allocation, then the window of it */
    tc_pattern(w->want, pin_off + off + len, seed);
    if (write) {
        rc = gdrx_copy_to_mapping(pin, map + off, w->want + pin_off + off, len);
    } else {
        rc = gdrx_copy_from_mapping(pin, w->buf, map + off, len);
        if (rc == 0 && memcmp(w->buf, w->want + pin_off + off, len) != 0)
            fail(w, "a read of %zu B through a pin returned 0 and bytes that are not "
                 "the pinned allocation's", len);
    }
    if (rc != 0 && rc != -ESTALE)
        fail(w, "a %s of %zu B through a pin returned %d", write ? "write" : "read", len, rc);

    pthread_mutex_lock(&s->lock);
    s->busy--;
    s->writing = 0;
    pthread_mutex_unlock(&s->lock);
}

static void op_verify(struct worker *w, struct slot *s)
{
    pthread_mutex_lock(&s->lock);
    if (!s->writing)
        slot_verify_locked(w, s, "while nothing wrote it but its own pattern");
    pthread_mutex_unlock(&s->lock);
}

/* A private context: allocate, pin, map, destroy the context (which frees
 * the memory): the pin goes stale. */
static void op_private_context(struct worker *w)
{
    CUcontext c, cur;
    CUdeviceptr p;
    gdrx_pin_t pin;
    void *map;
    size_t size = draw_size(w);
    CUdevice dev;

    tc.CtxGetCurrent(&cur);
    if (tc.DeviceGet(&dev, 0) != CUDA_SUCCESS || ctx_create(&c, 0, dev) != CUDA_SUCCESS) {
        fail(w, "cuCtxCreate failed");
        return;
    }
    if (tc.MemAlloc(&p, size) == CUDA_SUCCESS) {
        if (gdrx_pin(ctx, p, size, GDRX_PIN_FLAG_DEFAULT, &pin) == 0) {
            if (gdrx_map(ctx, pin, &map) == 0)
                stale_add(w, pin, map, size);
            else
                gdrx_unpin(ctx, pin);
        }
    }
    if (ctx_destroy(c) != CUDA_SUCCESS)
        fail(w, "cuCtxDestroy failed");
    tc.CtxSetCurrent(cur);
}

/* Reset the primary context: every slot's memory goes, with no free of
 * its own.  Under the write lock: no other step runs meanwhile (each step
 * holds the read lock). */
static void op_reset(struct worker *w)
{
    pthread_rwlock_wrlock(&reset_lock);
    for (int i = 0; i < SLOTS; i++) {
        struct slot *s = &slots[i];
        if (s->state == SLOT_LIVE && s->pinned)
            stale_add(w, s->pin, s->map, s->pin_len);
        s->state = SLOT_EMPTY;
    }
    CUdevice dev;
    if (tc.DeviceGet(&dev, 0) != CUDA_SUCCESS || tc.DevicePrimaryCtxReset(dev) != CUDA_SUCCESS ||
        tc.DevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS)
        fail(w, "primary context reset failed");
    pthread_rwlock_unlock(&reset_lock);
}

/* fork while the other threads work: the child opens and closes a gdrx
 * context and exits; it must do so within FORK_WAIT_S. */
static void op_fork(struct worker *w)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        gdrx_t c;
        alarm(FORK_WAIT_S);
        _exit(gdrx_open(NULL, &c) == 0 && gdrx_close(c) == 0 ? 0 : 3);
    }
    if (pid < 0) {
        fail(w, "fork failed: %s", strerror(errno));
        return;
    }
    for (int i = 0; i < FORK_WAIT_S * 100; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            /* open may fail in a child (CUDA refuses it there): it must
             * fail, not hang or crash */
            if (!WIFEXITED(status))
                fail(w, "the fork child died (signal %d)",
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            return;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    fail(w, "the fork child hung for %d s in gdrx_open/gdrx_close", FORK_WAIT_S);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    for (w->step = 0; w->step < steps_per_thread && !atomic_load(&failed); w->step++) {
        struct slot *s = &slots[rnd(w) % SLOTS];
        unsigned op = (unsigned)(rnd(w) % 1000);
        if (op >= 996) {
            op_reset(w);
            continue;
        }
        pthread_rwlock_rdlock(&reset_lock);
        tc.CtxSetCurrent(primary);
        if (op < 200)
            op_alloc(w, s);
        else if (op < 330)
            op_free(w, s);
        else if (op < 450)
            op_pin(w, s);
        else if (op < 520)
            op_unpin(w, s);
        else if (op < 720)
            op_copy(w, s, 1);
        else if (op < 900)
            op_copy(w, s, 0);
        else if (op < 980)
            op_verify(w, s);
        else if (op < 990)
            op_private_context(w);
        else
            op_fork(w);
        check_stale(w);
        /* one more allocation checked per step, round the slots */
        op_verify(w, &slots[(w->step + (long)w->index) % SLOTS]);
        pthread_rwlock_unlock(&reset_lock);
    }
    return NULL;
}

static void test_concurrent_stress(void)
{
    struct worker workers[THREADS];
    const char *env = getenv("GDRX_STRESS_SEED");
    const char *steps = getenv("GDRX_STRESS_STEPS");
    const char *san = getenv("GDRX_SANITIZE");

    pthread_rwlockattr_t attr;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (tc_setup(0) != 0)
        return;
    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    *(void **)&ctx_create = dlsym(lib, "cuCtxCreate_v2");
    *(void **)&ctx_destroy = dlsym(lib, "cuCtxDestroy_v2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx_create && ctx_destroy);
    /* a reset waits for the steps in flight, and new steps wait for it */
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&reset_lock, &attr);
    CU_ASSERT_EQUAL_FATAL(tc.CtxGetCurrent(&primary), CUDA_SUCCESS);
    if (tsim.set_va_reuse)
        tsim.set_va_reuse(1);
    run_seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    steps_per_thread = steps && *steps ? atol(steps) : (san && *san ? 400 : 1500);
    printf("\n    stress: seed %" PRIu64 " (GDRX_STRESS_SEED), %d threads x %ld steps\n",
           run_seed, THREADS, steps_per_thread);
    ctx = tc_open();
    CU_ASSERT_FATAL(ctx.id != 0);
    for (int i = 0; i < SLOTS; i++)
        pthread_mutex_init(&slots[i].lock, NULL);
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){ .index = i, .rng = run_seed * 1000003u + (uint64_t)i };
        workers[i].buf = malloc(MAX_SIZE);
        workers[i].want = malloc(MAX_SIZE);
        CU_ASSERT_PTR_NOT_NULL_FATAL(workers[i].buf && workers[i].want);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(workers[i].tid, NULL);
    if (atomic_load(&failed))
        fprintf(stderr, "    stress FAILED: %s\n    replay: GDRX_STRESS_SEED=%" PRIu64 "\n",
                failure, run_seed);
    CU_ASSERT_FALSE(atomic_load(&failed));
    for (int i = 0; i < THREADS; i++) {
        for (int j = 0; j < workers[i].nstale; j++) {
            gdrx_unmap(ctx, workers[i].stale[j].pin);
            gdrx_unpin(ctx, workers[i].stale[j].pin);
        }
        free(workers[i].buf);
        free(workers[i].want);
    }
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].state == SLOT_LIVE) {
            if (slots[i].pinned) {
                gdrx_unmap(ctx, slots[i].pin);
                gdrx_unpin(ctx, slots[i].pin);
            }
            tc.MemFree(slots[i].dptr);
        }
        slots[i].state = SLOT_EMPTY;
    }
    gdrx_close(ctx);
    if (tsim.set_va_reuse)
        tsim.set_va_reuse(0);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_concurrent_stress),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "concurrent", NULL, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, NULL);
}
