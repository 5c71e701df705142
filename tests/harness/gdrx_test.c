/*
 * gdrx_test.c - fork-per-case runner on top of CUnit's basic interface.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gdrx_test.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* CUnit test functions take no argument, so the trampoline finds the case
 * to run by the name CUnit reports as current. */
static const struct gdrx_test_suite *registered_suites;

static const struct gdrx_test_case *find_case(const char *suite, const char *name)
{
    for (const struct gdrx_test_suite *s = registered_suites; s->name; s++) {
        if (strcmp(s->name, suite) != 0)
            continue;
        for (const struct gdrx_test_case *c = s->cases; c->name; c++)
            if (strcmp(c->name, name) == 0)
                return c;
    }
    return NULL;
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

unsigned gdrx_test_timeout(void)
{
    const char *v = getenv("GDRX_TEST_TIMEOUT");
    char *end = NULL;
    long t = v ? strtol(v, &end, 10) : 0;
    return t > 0 && t < 100000 && end && !*end ? (unsigned)t : 60;
}

/* A child the harness forked dies with the process that forked it, so a
 * case killed for hanging (or a harness stopped by ^C) leaves nothing
 * running behind. */
static void die_with_parent(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
}

/* The running case, killed from SIGALRM when its time is up; enforced by
 * the parent, so a case that blocks or catches SIGALRM hangs no longer. */
static volatile sig_atomic_t running_case, case_timed_out;

static void kill_running_case(int sig)
{
    (void)sig;
    if (running_case > 0) {
        kill((pid_t)running_case, SIGKILL);
        case_timed_out = 1;
    }
}

/* Wait for the case's child, killing it after `seconds`; its wait status. */
static int wait_case(pid_t pid, unsigned seconds, int *timed_out)
{
    struct sigaction on_alarm, old;
    int status = 0;

    memset(&on_alarm, 0, sizeof(on_alarm));
    on_alarm.sa_handler = kill_running_case; /* no SA_RESTART: wake waitpid */
    sigemptyset(&on_alarm.sa_mask);
    case_timed_out = 0;
    running_case = pid;
    sigaction(SIGALRM, &on_alarm, &old);
    alarm(seconds);
    /* Left a zombie (WNOWAIT) until the alarm is off, so a late SIGALRM
     * can never kill a process that reused the pid. */
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    alarm(0);
    running_case = 0;
    sigaction(SIGALRM, &old, NULL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    *timed_out = case_timed_out;
    return status;
}

/* In the child: run the case, then report failed assertions via exit code.
 * CUnit's state was inherited from the parent, so CU_ASSERT works as usual
 * and prints nothing until we walk the failure list here. */
static void run_case_in_child(const struct gdrx_test_case *c, CU_pTest test)
{
    unsigned before = CU_get_number_of_failures();
    /* A failed CU_ASSERT_*_FATAL longjmps to test->pJumpBuf, which CUnit
     * set up in its runner: in the child that would resume CUnit's loop
     * and run the rest of the suite a second time.  Catch it here. */
    jmp_buf fatal_jump;
    jmp_buf *cunit_jump = test->pJumpBuf;
    test->pJumpBuf = &fatal_jump;
    if (setjmp(fatal_jump) == 0)
        c->fn();
    test->pJumpBuf = cunit_jump;
    unsigned after = CU_get_number_of_failures();
    if (after != before) {
        unsigned i = 0;
        for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext, i++) {
            if (i < before)
                continue;
            fprintf(stderr, "    FAILED %s:%u: %s\n", f->strFileName ? f->strFileName : "?",
                    f->uiLineNumber, f->strCondition ? f->strCondition : "?");
        }
    }
    fflush(NULL);
    _exit(after != before ? 1 : 0);
}

/* Each forked case gets a scratch directory (GDRX_TEST_SCRATCH) that the
 * parent removes once the case has ended, however it ended: files a case
 * leaves there (UCX stats dumps, logs) do not pile up in /tmp. */
static int remove_entry(const char *path, const struct stat *sb, int type,
                        struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_scratch(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void trampoline(void)
{
    CU_pSuite suite = CU_get_current_suite();
    CU_pTest test = CU_get_current_test();
    const struct gdrx_test_case *c = find_case(suite->pName, test->pName);

    if (!c) {
        CU_FAIL_FATAL("test case not found in registry");
        return;
    }
    if (env_flag("GDRX_TEST_NOFORK")) {
        c->fn();
        return;
    }

    char scratch[] = "/tmp/gdrx-case.XXXXXX";
    int have_scratch = mkdtemp(scratch) != NULL;

    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        CU_FAIL("fork failed");
        if (have_scratch)
            remove_scratch(scratch);
        return;
    }
    if (pid == 0) {
        die_with_parent(parent);
        if (have_scratch)
            setenv("GDRX_TEST_SCRATCH", scratch, 1);
        else
            unsetenv("GDRX_TEST_SCRATCH");
        run_case_in_child(c, test);
    }

    int timed_out;
    unsigned seconds = gdrx_test_timeout();
    int status = wait_case(pid, seconds, &timed_out);
    if (have_scratch)
        remove_scratch(scratch);
    if (timed_out) {
        fprintf(stderr, "    TIMED OUT %s/%s: killed after %u s (GDRX_TEST_TIMEOUT)\n",
                suite->pName, test->pName, seconds);
        CU_FAIL("test case timed out");
    } else if (WIFSIGNALED(status)) {
        fprintf(stderr, "    CRASHED %s/%s: signal %d (%s)\n", suite->pName, test->pName,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
        CU_FAIL("test case crashed");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        CU_FAIL("test case had failed assertions (see FAILED lines above)");
    } else {
        CU_PASS("test case passed in child");
    }
}

int gdrx_test_main(int argc, char **argv, const struct gdrx_test_suite *suites)
{
    (void)argc;
    (void)argv;
    const char *filter = getenv("GDRX_TEST_FILTER");

    registered_suites = suites;
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
        return 2;
    }
    for (const struct gdrx_test_suite *s = suites; s->name; s++) {
        CU_pSuite cs = CU_add_suite(s->name, s->init, s->cleanup);
        if (!cs)
            goto cunit_error;
        for (const struct gdrx_test_case *c = s->cases; c->name; c++) {
            char full[256];
            snprintf(full, sizeof(full), "%s/%s", s->name, c->name);
            if (filter && *filter && !strstr(full, filter))
                continue;
            if (!CU_add_test(cs, c->name, trampoline))
                goto cunit_error;
        }
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (CU_basic_run_tests() != CUE_SUCCESS)
        goto cunit_error;

    unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;

cunit_error:
    fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
    CU_cleanup_registry();
    return 2;
}

int gdrx_test_signal_of(void (*fn)(void *arg), void *arg)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        die_with_parent(parent);
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        alarm(gdrx_test_timeout());
        fn(arg);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status))
        return WTERMSIG(status);
    return 0;
}

static sigjmp_buf here_jmp;

static void here_on_fault(int sig)
{
    siglongjmp(here_jmp, sig);
}

int gdrx_test_signal_here(void (*fn)(void *arg), void *arg)
{
    struct sigaction sa, old_segv, old_bus;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = here_on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    int sig = sigsetjmp(here_jmp, 1);
    if (sig == 0)
        fn(arg);
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    return sig;
}

/* CUnit's summary line: "  tests  <total> <ran> <passed> <failed> <inactive>". */
static void parse_summary(struct gdrx_test_rerun *r)
{
    for (const char *line = r->output; line; line = strchr(line, '\n')) {
        unsigned total;
        line += *line == '\n';
        if (sscanf(line, " tests %u %u %u %u", &total, &r->ran, &r->passed, &r->failed) == 4)
            return;
        r->ran = r->passed = r->failed = 0;
    }
}

void gdrx_test_rerun(const char *const *env, const char *filter, struct gdrx_test_rerun *r)
{
    int fds[2];
    size_t used = 0;

    memset(r, 0, sizeof(*r));
    r->status = -1;
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        die_with_parent(parent);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        for (; env && *env; env++)
            putenv((char *)*env);
        if (filter)
            setenv("GDRX_TEST_FILTER", filter, 1);
        else
            unsetenv("GDRX_TEST_FILTER");
        unsetenv("GDRX_TEST_NOFORK");
        execl("/proc/self/exe", "gdrx-test-rerun", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    for (;;) { /* all of it, so the child never blocks on a full pipe */
        char sink[4096];
        int room = used + 1 < sizeof(r->output);
        ssize_t n = read(fds[0], room ? r->output + used : sink,
                         room ? sizeof(r->output) - 1 - used : sizeof(sink));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (room)
            used += (size_t)n;
    }
    r->output[used] = '\0';
    close(fds[0]);
    if (pid > 0 && waitpid(pid, &r->status, 0) != pid)
        r->status = -1;
    parse_summary(r);
}

uint64_t gdrx_test_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int gdrx_test_capture(const char *cmd, char *out, size_t size)
{
    char spill[4096];
    size_t n = 0, got;
    FILE *p = popen(cmd, "r");

    if (!p)
        return -1;
    if (!out || !size) {
        pclose(p);
        return -1;
    }
    do {
        got = (n + 1 < size) ? fread(out + n, 1, size - n - 1, p)
                             : fread(spill, 1, sizeof(spill), p);
        if (n + 1 < size)
            n += got;
    } while (got != 0);
    out[n] = '\0';
    return pclose(p);
}
