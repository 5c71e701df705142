/*
 * test_harness.c - the runner itself: a hung case is killed after
 * GDRX_TEST_TIMEOUT seconds and counted as one failed test (even when it
 * blocks SIGALRM), and the cases after it still run.  The hanging cases
 * run in a second copy of this program (gdrx_test_rerun() with
 * GDRX_TEST_HARNESS_INNER=1) whose output and exit status are checked.
 *
 * SPDX-License-Identifier: MIT
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrx_test.h"

#define INNER_ENV "GDRX_TEST_HARNESS_INNER"

/* ---- the inner suite: what a bad test case may do ---- */

static void inner_hang_alarm_blocked(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;)
        pause();
}

static void inner_pass(void)
{
    CU_ASSERT_EQUAL(1 + 1, 2);
}

/* a file-scope counter: gcc 16 warns of a local one as set but unused */
static volatile unsigned long spins;

static void inner_hang_spinning(void)
{
    signal(SIGALRM, SIG_IGN);
    for (;;)
        spins++;
}

static const struct gdrx_test_case inner_cases[] = {
    GDRX_TEST_CASE(inner_hang_alarm_blocked),
    GDRX_TEST_CASE(inner_pass),
    GDRX_TEST_CASE(inner_hang_spinning),
    GDRX_TEST_END,
};

/* ---- the outer suite ---- */

static void test_timeout_setting(void)
{
    static const struct { const char *value; unsigned seconds; } cases[] = {
        { NULL, 60 }, { "5", 5 }, { "600", 600 }, { "0", 60 }, { "-3", 60 },
        { "ten", 60 }, { "12s", 60 }, { "", 60 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].value)
            setenv("GDRX_TEST_TIMEOUT", cases[i].value, 1);
        else
            unsetenv("GDRX_TEST_TIMEOUT");
        CU_ASSERT_EQUAL(gdrx_test_timeout(), cases[i].seconds);
    }
}

static void test_hung_cases_fail(void)
{
    static const char *const env[] = { INNER_ENV "=1", "GDRX_TEST_TIMEOUT=2", NULL };
    static struct gdrx_test_rerun r;

    gdrx_test_rerun(env, NULL, &r);
    CU_ASSERT_FATAL(r.status >= 0);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.output, "TIMED OUT inner/inner_hang_alarm_blocked"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.output, "TIMED OUT inner/inner_hang_spinning"));
    CU_ASSERT_PTR_NULL(strstr(r.output, "TIMED OUT inner/inner_pass"));
    CU_ASSERT(r.ran == 3 && r.passed == 1 && r.failed == 2);
    if (r.ran != 3 || r.failed != 2)
        fprintf(stderr, "    inner run said:\n%s\n", r.output);
}

static const struct gdrx_test_case outer_cases[] = {
    GDRX_TEST_CASE(test_timeout_setting),
    GDRX_TEST_CASE(test_hung_cases_fail),
    GDRX_TEST_END,
};

int main(int argc, char **argv)
{
    static const struct gdrx_test_suite outer[] = {
        { "harness", NULL, NULL, outer_cases }, GDRX_SUITE_END };
    static const struct gdrx_test_suite inner[] = {
        { "inner", NULL, NULL, inner_cases }, GDRX_SUITE_END };

    return gdrx_test_main(argc, argv, getenv(INNER_ENV) ? inner : outer);
}
