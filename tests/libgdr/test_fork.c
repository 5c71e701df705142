/*
 * test_fork.c - a fork child and its parent's gdrx objects: every call on
 * them returns -ECHILD (copies included), the parent's mappings are not
 * inherited, and the parent carries on unaffected.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcuda.h"
#ifdef FORK_NVRM
#  include "nvrm_reexec.h"
#endif

#define KiB 1024u

/* 1 if some line of /proc/self/maps covers addr. */
static int in_proc_maps(const void *addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo, hi, a = (unsigned long)addr;
    char line[512];
    int found = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
            found = 1;
    fclose(f);
    return found;
}

struct parent_state {
    gdrx_t     g;
    CUdeviceptr a;
    gdrx_pin_t mapped, unmapped;
    void      *cpu;
};

/* In the child: one bit per check that failed. */
static int child_checks(const struct parent_state *ps)
{
    char buf[8] = { 0 };
    void *cpu = NULL;
    gdrx_pin_t pin;
    struct gdrx_pin_info info;
    uint64_t v;
    unsigned char vec;
    int bad = 0, bit = 0;

#define EXPECT(cond) (bad |= (cond) ? 0 : 1 << bit, bit++)
    EXPECT(gdrx_copy_to_mapping(ps->mapped, ps->cpu, buf, 8) == -ECHILD);
    EXPECT(gdrx_copy_from_mapping(ps->mapped, buf, ps->cpu, 8) == -ECHILD);
    EXPECT(gdrx_copy_to_mapping(ps->mapped, ps->cpu, buf, 0) == -ECHILD);
    EXPECT(gdrx_pin(ps->g, ps->a, 4096, 0, &pin) == -ECHILD);
    EXPECT(gdrx_map(ps->g, ps->unmapped, &cpu) == -ECHILD && cpu == NULL);
    EXPECT(gdrx_unmap(ps->g, ps->mapped) == -ECHILD);
    EXPECT(gdrx_pin_query(ps->g, ps->mapped, &info) == -ECHILD);
    EXPECT(gdrx_get_attr(ps->g, GDRX_ATTR_PIN_COUNT, &v) == -ECHILD);
    EXPECT(gdrx_unpin(ps->g, ps->mapped) == -ECHILD);
    EXPECT(gdrx_unpin(ps->g, ps->unmapped) == -ECHILD);
    EXPECT(gdrx_close(ps->g) == -ECHILD);
    /* the parent's mapping is not there at all */
    uintptr_t page = (uintptr_t)ps->cpu & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    EXPECT(mincore((void *)page, 1, &vec) != 0 && errno == ENOMEM);
    EXPECT(in_proc_maps(ps->cpu) == 0);
    /* still -ECHILD the second time (nothing was released) */
    EXPECT(gdrx_copy_to_mapping(ps->mapped, ps->cpu, buf, 8) == -ECHILD);
    EXPECT(gdrx_close(ps->g) == -ECHILD);
#undef EXPECT
    return bad;
}

static void test_child_gets_echild(void)
{
    struct parent_state ps;
    unsigned char buf[64], want[64];

    if (tc_setup(0))
        return;
    ps.g = tc_open();
    ps.a = tc_alloc(64 * KiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(ps.g, ps.a, 64 * KiB, 0, &ps.mapped), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(ps.g, ps.a, 4096, 0, &ps.unmapped), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(ps.g, ps.mapped, &ps.cpu), 0);
    tc_pattern(want, sizeof(want), 7);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(ps.mapped, ps.cpu, want, sizeof(want)), 0);
    CU_ASSERT_EQUAL(in_proc_maps(ps.cpu), 1);

    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int bad = child_checks(&ps);
        if (bad) /* the mask does not fit an exit status */
            fprintf(stderr, "child: failed checks, mask %#x\n", (unsigned)bad);
        _exit(bad != 0);
    }
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);

    /* the parent is unaffected */
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(ps.mapped, buf, ps.cpu, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(memcmp(buf, want, sizeof(buf)), 0);
    CU_ASSERT(tc_check(ps.a, sizeof(want), 7));
    void *cpu2;
    CU_ASSERT_EQUAL(gdrx_map(ps.g, ps.unmapped, &cpu2), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(ps.g, ps.unmapped), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(ps.g, ps.mapped), 0);
    CU_ASSERT_EQUAL(gdrx_close(ps.g), 0);
    tc_free(ps.a);
}

/* A handle that was already dead in the parent stays an invalid handle in
 * the child (-EINVAL, not -ECHILD); a context the parent closed, -EBADF. */
static void test_child_dead_handles(void)
{
    gdrx_pin_t pin;
    void *cpu;
    char c = 0;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open(), closed = tc_open();
    CUdeviceptr a = tc_alloc(64 * KiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 4096, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(closed), 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        /* One statement per call: the operands of | have no evaluation order. */
        int bad = (gdrx_copy_to_mapping(pin, cpu, &c, 1) != -EINVAL);
        bad |= (gdrx_close(closed) != -EBADF) << 1;
        bad |= (gdrx_close(g) != -ECHILD) << 2;
        _exit(bad);
    }
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
}

/* ---- a fork while another thread maps ----
 * The backend mmaps GPU memory and then marks it MADV_DONTFORK.  This
 * program's madvise (exported, -rdynamic, so libgdrx calls it) opens that
 * window wide: at the armed MADV_DONTFORK it has another thread fork and
 * waits up to 300 ms for the fork to happen before marking.  libgdrx keeps
 * fork out until the map is done, so the child never has the mapping. */
static int race_armed;
static volatile int race_forked;
static void *race_addr;
static pid_t race_child;

static void *race_fork(void *arg)
{
    (void)arg;
    pid_t pid = fork();
    if (pid == 0)
        _exit(in_proc_maps(race_addr) == 0 ? 0 : 1);
    race_child = pid;
    race_forked = 1;
    return NULL;
}

int madvise(void *addr, size_t len, int advice);
int madvise(void *addr, size_t len, int advice)
{
    static pthread_t forker;

    if (advice == MADV_DONTFORK && __atomic_exchange_n(&race_armed, 0, __ATOMIC_ACQ_REL)) {
        race_addr = addr;
        if (pthread_create(&forker, NULL, race_fork, NULL) == 0)
            for (int i = 0; i < 300 && !race_forked; i++)
                usleep(1000);
    }
    return (int)syscall(SYS_madvise, addr, len, advice);
}

static void test_fork_during_map(void)
{
    void *cpu;
    gdrx_pin_t pin;
    int st = 0;

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(64 * KiB);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, 64 * KiB, 0, &pin), 0);
    __atomic_store_n(&race_armed, 1, __ATOMIC_RELEASE);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    CU_ASSERT_EQUAL(race_armed, 0); /* the window was opened */
    for (int i = 0; i < 5000 && !race_forked; i++)
        usleep(1000);
    CU_ASSERT_FATAL(race_forked);
    CU_ASSERT_EQUAL(waitpid(race_child, &st, 0), race_child);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* no live mapping in the child */
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
}

/* ---- another fork handler, registered before libgdrx's, calls in ----
 * glibc runs prepare handlers last-registered first, so this program's,
 * registered after CUDA's and before the first gdrx_open, runs after
 * libgdrx's (and before CUDA's), on the
 * forking thread, while libgdrx holds its locks: as UCX's registration
 * caches purge (and unpin) on fork.  There, unmap and unpin are done once
 * the locks are free, before fork() returns; a duplicate or unknown
 * handle is refused at once; calls that would lock are refused
 * (-EDEADLK); copies work; a CUDA free, whose hook libgdrx runs, returns.
 * Nothing hangs. */
static struct {
    int armed;
    gdrx_t g;
    gdrx_pin_t mapped, plain, spare;
    void *cpu;
    CUdeviceptr a, extra;
    unsigned char byte;
    int freed;
    int child_armed, child_unpin;
    int unmap, unpin_mapped, unpin_plain, unpin_again, unpin_bad, pin, attr, close, copy;
} late;

static void late_prepare(void)
{
    gdrx_pin_t bad = { .id = late.plain.id ^ 0x5aull };
    gdrx_pin_t p;
    uint64_t v;

    if (!late.armed)
        return;
    late.armed = 0;
    late.copy = gdrx_copy_to_mapping(late.mapped, late.cpu, &late.byte, 1);
    late.unmap = gdrx_unmap(late.g, late.mapped);
    late.unpin_mapped = gdrx_unpin(late.g, late.mapped);
    late.unpin_plain = gdrx_unpin(late.g, late.plain);
    late.unpin_again = gdrx_unpin(late.g, late.plain);
    late.unpin_bad = gdrx_unpin(late.g, bad);
    late.pin = gdrx_pin(late.g, late.a, 64 * KiB, 0, &p);
    late.attr = gdrx_get_attr(late.g, GDRX_ATTR_PIN_COUNT, &v);
    late.close = gdrx_close(late.g);
    /* a CUDA free: libgdrx's hook runs inside it, on this thread, and must
     * not wait for the locks this thread holds */
    tc_free(late.extra);
    late.freed = 1;
}

/* its child handler, also registered before libgdrx's, runs before
 * libgdrx's child handler: an unpin there is refused, not queued */
static void late_child(void)
{
    if (late.child_armed)
        late.child_unpin = gdrx_unpin(late.g, late.spare);
}

static void test_handler_after_ours(void)
{
    uint64_t count = 0;
    int st = 0;

    if (tc_setup(0))
        return;
    /* after CUDA's own (the simulated libcuda's runs last, as a real one
     * set up first would), before libgdrx's (its first gdrx_open) */
    CU_ASSERT_EQUAL_FATAL(pthread_atfork(late_prepare, NULL, late_child), 0);
    late.g = tc_open();
    late.a = tc_alloc(256 * KiB);
    late.extra = tc_alloc(64 * KiB);
    CU_ASSERT_FATAL(late.a != 0 && late.extra != 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(late.g, late.a, 64 * KiB, 0, &late.mapped), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(late.g, late.mapped, &late.cpu), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(late.g, late.a + 64 * KiB, 64 * KiB, 0, &late.plain), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(late.g, late.a + 128 * KiB, 64 * KiB, 0, &late.spare), 0);
    tc_pattern(&late.byte, 1, 3);
    late.armed = 1;
    late.child_armed = 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(gdrx_get_attr(late.g, GDRX_ATTR_PIN_COUNT, &count) == -ECHILD &&
              late.child_unpin == -ECHILD ? 0 : 1);
    late.child_armed = 0;
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CU_ASSERT_EQUAL(late.armed, 0);
    CU_ASSERT_EQUAL(late.copy, 0);
    CU_ASSERT_EQUAL(late.unmap, 0);
    CU_ASSERT_EQUAL(late.unpin_mapped, 0);
    CU_ASSERT_EQUAL(late.unpin_plain, 0);
    CU_ASSERT_EQUAL(late.unpin_again, -EINVAL);
    CU_ASSERT_EQUAL(late.unpin_bad, -EINVAL);
    CU_ASSERT_EQUAL(late.pin, -EDEADLK);
    CU_ASSERT_EQUAL(late.attr, -EDEADLK);
    CU_ASSERT_EQUAL(late.close, -EDEADLK);
    CU_ASSERT_EQUAL(late.freed, 1);
    /* done before fork() returned: one pin left, the others' handles dead */
    CU_ASSERT_EQUAL(gdrx_get_attr(late.g, GDRX_ATTR_PIN_COUNT, &count), 0);
    CU_ASSERT_EQUAL(count, 1);
    CU_ASSERT_EQUAL(gdrx_unpin(late.g, late.mapped), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unpin(late.g, late.plain), -EINVAL);
    CU_ASSERT(tc_check(late.a, 1, 3)); /* the prepare handler's copy landed */
    /* the library works as before, forks included */
    gdrx_pin_t again;
    CU_ASSERT_EQUAL(gdrx_pin(late.g, late.a, 64 * KiB, 0, &again), 0);
    pid = fork();
    if (pid == 0)
        _exit(0);
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT_EQUAL(gdrx_unpin(late.g, again), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(late.g, late.spare), 0);
    CU_ASSERT_EQUAL(gdrx_close(late.g), 0);
    tc_free(late.a);
}

/* ---- the same position: what else such a handler may meet ----
 * Many queued calls (the queue grows), handles of another context or of
 * none, an unmap after the pin's unpin or a second unmap, and every other
 * call that would lock.  The queued calls run in the order they were made
 * and none fails (libgdrx would say so on stderr, captured here, in the
 * parent or the child). */
#define LATE2_PINS 40
static struct {
    int armed;
    gdrx_t g, g2;
    gdrx_pin_t pins[LATE2_PINS], mapped, other;
    CUdeviceptr a;
    int unpins_ok, unmap, unmap_again, unpin_mapped, unmap_after_unpin, unmap_unmapped;
    int other_ctx, no_ctx, query, mem_query, sync, subscribe, open;
} late2;

static void late2_event(const struct gdrx_mem_event *ev, void *arg)
{
    (void)ev;
    (void)arg;
}

static void late2_prepare(void)
{
    struct gdrx_pin_info info;
    struct gdrx_mem_info mem;
    gdrx_mem_sub_t sub;
    gdrx_t none = { .id = late2.g.id ^ 0x77ull };
    gdrx_t g;

    if (!late2.armed)
        return;
    late2.armed = 0;
    for (int i = 0; i < LATE2_PINS; i++)
        late2.unpins_ok += gdrx_unpin(late2.g, late2.pins[i]) == 0;
    late2.unmap = gdrx_unmap(late2.g, late2.mapped);
    late2.unmap_again = gdrx_unmap(late2.g, late2.mapped);
    late2.unpin_mapped = gdrx_unpin(late2.g, late2.mapped);
    late2.unmap_after_unpin = gdrx_unmap(late2.g, late2.mapped);
    /* a pin that was never mapped: what the locked path says (issue 43,
     * defect 12: the deferred path said 0 and only the log knew) */
    late2.unmap_unmapped = gdrx_unmap(late2.g, late2.other);
    late2.other_ctx = gdrx_unpin(late2.g2, late2.other);
    late2.no_ctx = gdrx_unpin(none, late2.other);
    late2.query = gdrx_pin_query(late2.g, late2.other, &info);
    late2.mem_query = gdrx_mem_query(late2.a, &mem);
    late2.sync = gdrx_mem_sync_memops(late2.a);
    late2.subscribe = gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, late2_event, NULL, &sub);
    late2.open = gdrx_open(NULL, &g);
}

static void test_handler_after_ours_more(void)
{
    char log[8192] = "";
    uint64_t count = 0;
    void *cpu;
    int st = 0, saved, fd;
    FILE *f;

    setenv("GDRX_LOG_LEVEL", "1", 1); /* errors: read at libgdrx's first log */
    if (tc_setup(0))
        return;
    CU_ASSERT_EQUAL_FATAL(pthread_atfork(late2_prepare, NULL, NULL), 0);
    late2.g = tc_open();
    late2.g2 = tc_open();
    late2.a = tc_alloc((LATE2_PINS + 2) * 64 * KiB);
    CU_ASSERT_FATAL(late2.a != 0);
    for (int i = 0; i < LATE2_PINS; i++)
        CU_ASSERT_EQUAL_FATAL(gdrx_pin(late2.g, late2.a + i * 64 * KiB, 64 * KiB, 0,
                                       &late2.pins[i]), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(late2.g, late2.a + LATE2_PINS * 64 * KiB, 64 * KiB, 0,
                                   &late2.mapped), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(late2.g, late2.mapped, &cpu), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(late2.g, late2.a + (LATE2_PINS + 1) * 64 * KiB, 64 * KiB,
                                   0, &late2.other), 0);

    /* libgdrx's error lines, of both processes, into a file */
    f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fflush(NULL);
    saved = dup(2);
    CU_ASSERT_FATAL(saved >= 0 && dup2(fileno(f), 2) == 2);
    late2.armed = 1;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    fflush(NULL);
    dup2(saved, 2);
    close(saved);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fd = fileno(f);
    CU_ASSERT(pread(fd, log, sizeof(log) - 1, 0) >= 0);
    fclose(f);

    CU_ASSERT_EQUAL(late2.armed, 0);
    CU_ASSERT_EQUAL(late2.unpins_ok, LATE2_PINS);
    CU_ASSERT_EQUAL(late2.unmap, 0);
    CU_ASSERT_EQUAL(late2.unmap_again, -EINVAL);
    CU_ASSERT_EQUAL(late2.unpin_mapped, 0);
    CU_ASSERT_EQUAL(late2.unmap_after_unpin, -EINVAL);
    CU_ASSERT_EQUAL(late2.unmap_unmapped, -EINVAL);
    CU_ASSERT_EQUAL(gdrx_unmap(late2.g, late2.other), -EINVAL); /* the same, locked */
    CU_ASSERT_EQUAL(late2.other_ctx, -EINVAL);
    CU_ASSERT_EQUAL(late2.no_ctx, -EBADF);
    CU_ASSERT_EQUAL(late2.query, -EDEADLK);
    CU_ASSERT_EQUAL(late2.mem_query, -EDEADLK);
    CU_ASSERT_EQUAL(late2.sync, -EDEADLK);
    CU_ASSERT_EQUAL(late2.subscribe, -EDEADLK);
    CU_ASSERT_EQUAL(late2.open, -EDEADLK);
    /* every queued call made, in order, none failed; the refusals above
     * were said, so the log was read (GDRX_LOG_LEVEL took effect) */
    CU_ASSERT_PTR_NULL(strstr(log, "deferred from a fork handler failed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "refused (-EDEADLK)"));
    if (strstr(log, "deferred from a fork handler failed") || !strstr(log, "refused (-EDEADLK)"))
        fprintf(stderr, "    libgdrx said:\n%s\n", log);
    CU_ASSERT_EQUAL(gdrx_get_attr(late2.g, GDRX_ATTR_PIN_COUNT, &count), 0);
    CU_ASSERT_EQUAL(count, 1);
    CU_ASSERT_EQUAL(gdrx_unpin(late2.g, late2.other), 0);
    CU_ASSERT_EQUAL(gdrx_close(late2.g), 0);
    CU_ASSERT_EQUAL(gdrx_close(late2.g2), 0);
    tc_free(late2.a);
}

static const struct gdrx_test_case fork_cases[] = {
    GDRX_TEST_CASE(test_child_gets_echild),
    GDRX_TEST_CASE(test_child_dead_handles),
    GDRX_TEST_CASE(test_fork_during_map),
    GDRX_TEST_CASE(test_handler_after_ours),
    GDRX_TEST_CASE(test_handler_after_ours_more),
    GDRX_TEST_END,
};

/* FORK_NVRM: the same cases on nvrm, under the RM-ioctl emulator, where
 * libgdrx's ioctl trace runs inside every CUDA call, the hooked frees in
 * the handlers after libgdrx's included: it must take none of the locks
 * the forking thread holds there. */
#ifdef FORK_NVRM
#  define SUITE  "fork_nvrm"
#  define BEFORE nvt_use_nvrm
#else
#  define SUITE  "fork"
#  define BEFORE NULL
#endif

static const struct gdrx_test_suite suites[] = {
    { SUITE, NULL, NULL, fork_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, BEFORE);
}
