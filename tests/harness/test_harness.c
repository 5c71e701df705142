/*
 * test_harness.c - the runner itself: a hung case is killed after
 * GDRX_TEST_TIMEOUT seconds and counted as one failed test (even when it
 * blocks SIGALRM), and the cases after it still run; each case's scratch
 * directory is gone once the case has ended, also when it was killed.  The
 * cases under test run in a second copy of this program (gdrx_test_rerun()
 * with GDRX_TEST_HARNESS_INNER=1, or =scratch) whose output and exit status
 * are checked.
 *
 * SPDX-License-Identifier: MIT
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Fills the case's scratch directory (a file and a folder holding one) and
 * says where it is. */
static void inner_fill_scratch(void)
{
    const char *dir = getenv("GDRX_TEST_SCRATCH");
    char path[PATH_MAX];
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    printf("SCRATCH=%s\n", dir);
    snprintf(path, sizeof(path), "%s/file", dir);
    f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("left behind\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/sub", dir);
    CU_ASSERT_FATAL(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/sub/file", dir);
    f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    fflush(NULL);
}

static void inner_scratch_then_pass(void)
{
    inner_fill_scratch();
}

static void inner_scratch_then_killed(void)
{
    inner_fill_scratch();
    raise(SIGKILL);
}

static const struct gdrx_test_case scratch_cases[] = {
    GDRX_TEST_CASE(inner_scratch_then_pass),
    GDRX_TEST_CASE(inner_scratch_then_killed),
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

static void test_scratch_removed(void)
{
    static const char *const env[] = { INNER_ENV "=scratch", NULL };
    static struct gdrx_test_rerun r;
    const char *at = NULL;
    char dirs[2][PATH_MAX];
    struct stat st;
    int n = 0;

    gdrx_test_rerun(env, NULL, &r);
    CU_ASSERT_FATAL(r.status >= 0);
    CU_ASSERT(r.ran == 2 && r.passed == 1 && r.failed == 1);
    for (at = strstr(r.output, "SCRATCH="); at != NULL && n < 2;
         at = strstr(at + 1, "SCRATCH=")) {
        if (sscanf(at, "SCRATCH=%4095s", dirs[n]) == 1)
            n++;
    }
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(strcmp(dirs[0], dirs[1]) != 0);
    for (int i = 0; i < n; i++) {
        CU_ASSERT(strncmp(dirs[i], "/tmp/gdrx-case.", 15) == 0);
        CU_ASSERT(stat(dirs[i], &st) != 0);
    }
    if (n != 2 || r.failed != 1)
        fprintf(stderr, "    inner run said:\n%s\n", r.output);
}

static const struct gdrx_test_case outer_cases[] = {
    GDRX_TEST_CASE(test_timeout_setting),
    GDRX_TEST_CASE(test_hung_cases_fail),
    GDRX_TEST_CASE(test_scratch_removed),
    GDRX_TEST_END,
};

int main(int argc, char **argv)
{
    static const struct gdrx_test_suite outer[] = {
        { "harness", NULL, NULL, outer_cases }, GDRX_SUITE_END };
    static const struct gdrx_test_suite inner[] = {
        { "inner", NULL, NULL, inner_cases }, GDRX_SUITE_END };
    static const struct gdrx_test_suite scratch[] = {
        { "scratch", NULL, NULL, scratch_cases }, GDRX_SUITE_END };
    const char *which = getenv(INNER_ENV);

    if (which == NULL)
        return gdrx_test_main(argc, argv, outer);
    return gdrx_test_main(argc, argv, strcmp(which, "scratch") == 0 ? scratch : inner);
}
