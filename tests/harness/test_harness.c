/*
 * test_harness.c - the runner itself: a hung case is killed after
 * GDRX_TEST_TIMEOUT seconds and counted as one failed test (even when it
 * blocks SIGALRM), and the cases after it still run.  The hanging cases
 * run in a second copy of this program (GDRX_TEST_HARNESS_INNER=1) whose
 * output and exit status are checked here.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
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

static void inner_hang_spinning(void)
{
    signal(SIGALRM, SIG_IGN);
    for (volatile unsigned long i = 0;; i++)
        ;
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

/* Run the inner suite with a 1 s timeout; its output into out. */
static int run_inner(char *out, size_t size)
{
    int fds[2];
    size_t used = 0;

    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        setenv(INNER_ENV, "1", 1);
        setenv("GDRX_TEST_TIMEOUT", "1", 1);
        unsetenv("GDRX_TEST_FILTER");
        unsetenv("GDRX_TEST_NOFORK");
        execl("/proc/self/exe", "test_harness", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    for (ssize_t n = 1; n > 0 && used + 1 < size; used += (size_t)n) {
        n = read(fds[0], out + used, size - 1 - used);
        if (n < 0 && errno == EINTR)
            n = 0;
        if (n <= 0)
            break;
    }
    out[used] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void test_hung_cases_fail(void)
{
    static char out[65536];
    int status = run_inner(out, sizeof(out));

    CU_ASSERT_FATAL(status >= 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "TIMED OUT inner/inner_hang_alarm_blocked"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "TIMED OUT inner/inner_hang_spinning"));
    CU_ASSERT_PTR_NULL(strstr(out, "TIMED OUT inner/inner_pass"));
    /* CUnit's summary: "tests  <total> <ran> <passed> <failed> <inactive>" */
    unsigned total = 0, ran = 0, passed = 0, failed = 0;
    const char *line = strstr(out, "               tests");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    CU_ASSERT_EQUAL(sscanf(line, " tests %u %u %u %u", &total, &ran, &passed, &failed), 4);
    CU_ASSERT(total == 3 && ran == 3 && passed == 1 && failed == 2);
    if (failed != 2)
        fprintf(stderr, "    inner run said:\n%s\n", out);
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
