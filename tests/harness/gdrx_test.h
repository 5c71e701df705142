/*
 * gdrx_test.h - thin layer over CUnit shared by every gdrx test suite.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each test case runs in a forked child, so a test that crashes, or hangs
 * past GDRX_TEST_TIMEOUT seconds (default 60; raise it for slow sanitizer
 * or debugger runs), is reported as one failed test ("CRASHED" or "TIMED
 * OUT") and the rest of its suite still runs.  Set GDRX_TEST_NOFORK=1 to run
 * cases in-process (for a debugger).  GDRX_TEST_FILTER=substring runs only
 * the cases whose "suite/case" name contains it.  A forked case finds in
 * GDRX_TEST_SCRATCH a directory of its own for files it writes; the harness
 * removes it when the case ends.
 *
 * A suite binary:
 *
 *   static void test_foo(void) { CU_ASSERT_EQUAL(1 + 1, 2); }
 *   static const struct gdrx_test_case cases[] = {
 *       GDRX_TEST_CASE(test_foo), GDRX_TEST_END };
 *   static const struct gdrx_test_suite suites[] = {
 *       { "foo", NULL, NULL, cases }, GDRX_SUITE_END };
 *   int main(int argc, char **argv) { return gdrx_test_main(argc, argv, suites); }
 *
 * It prints CUnit's run summary and exits non-zero if any test failed.
 */
#ifndef GDRX_TEST_H
#define GDRX_TEST_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

struct gdrx_test_case {
    const char *name;
    void      (*fn)(void);
};

struct gdrx_test_suite {
    const char                  *name;
    int                        (*init)(void);    /* may be NULL; runs in the parent */
    int                        (*cleanup)(void); /* may be NULL */
    const struct gdrx_test_case *cases;
};

/* In a case: a failed precondition fails the case and ends it.  (CUnit's
 * *_FATAL assertions longjmp into the runner, which in a forked case is
 * the child's copy.) */
#define GDRX_REQUIRE(cond)                 \
    do {                                   \
        if (!(cond)) {                     \
            CU_FAIL("required: " #cond);   \
            return;                        \
        }                                  \
    } while (0)

#define GDRX_TEST_CASE(fn) { #fn, fn }
#define GDRX_TEST_END      { NULL, NULL }
#define GDRX_SUITE_END     { NULL, NULL, NULL, NULL }

int gdrx_test_main(int argc, char **argv, const struct gdrx_test_suite *suites);

/*
 * Run fn(arg) in a forked child with the default disposition for SIGSEGV
 * and SIGBUS (so a sanitizer's handler does not turn the fault into a
 * report).  Returns the signal that ended the child, 0 if fn returned
 * normally, -1 if the child could not be run.
 */
int gdrx_test_signal_of(void (*fn)(void *arg), void *arg);

/*
 * Run fn(arg) in this process, catching SIGSEGV and SIGBUS: the signal fn
 * raised (fn is left at the fault), or 0 if it returned.  For mappings a
 * fork child would not inherit (MADV_DONTFORK), where gdrx_test_signal_of
 * sees only SIGSEGV.  Not thread-safe; the previous handlers are restored.
 */
int gdrx_test_signal_here(void (*fn)(void *arg), void *arg);

/* What gdrx_test_rerun() saw. */
struct gdrx_test_rerun {
    int      status;               /* wait status; -1 if it did not run */
    unsigned ran, passed, failed;  /* CUnit's test counts; 0 without a summary */
    char     output[32768];        /* its stdout and stderr (their start) */
};

/*
 * Run this program again in a child process, with the variables of env
 * ("NAME=VALUE" strings, NULL-terminated) set and GDRX_TEST_FILTER set to
 * filter (unset if NULL): for cases that need a process started with a
 * given environment.  The caller's case chooses the suites the copy
 * registers by those variables.
 */
void gdrx_test_rerun(const char *const *env, const char *filter, struct gdrx_test_rerun *r);

/*
 * Run cmd with the shell and keep the start of what it writes to stdout
 * (add 2>&1 for stderr) in out, NUL-terminated; the rest is read and
 * dropped, so the command never blocks on a full pipe.  Returns the wait
 * status (pclose), or -1 if the command could not be started.
 */
int gdrx_test_capture(const char *cmd, char *out, size_t size);

/* Seconds a case may run before it is killed and failed:
 * GDRX_TEST_TIMEOUT if it is a positive number, else 60. */
unsigned gdrx_test_timeout(void);

/* What the process holds (gdrx_test_proc.c): open file descriptors, lines
 * of /proc/self/maps (MAP_SHARED ones only, if shared_only: private ones
 * come and go with malloc and the sanitizers' allocators), whether an
 * address lies in a mapping (-1: /proc unreadable). */
long gdrx_test_count_fds(void);
long gdrx_test_count_maps(int shared_only);
int  gdrx_test_is_mapped(const void *p);

/* A deterministic pseudo-random generator for tests (xorshift64*). */
uint64_t gdrx_test_rand(uint64_t *state);

#endif /* GDRX_TEST_H */
