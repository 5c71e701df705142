/*
 * test_cuda_load.c - a failed load of libcuda is not remembered: once the
 * application has loaded libcuda itself, the next gdrx_open works.
 *
 * SPDX-License-Identifier: MIT
 *
 * The case re-executes this program with a library path that lacks the
 * simulated GPU, so that libgdrx's dlopen("libcuda.so.1") fails; the
 * program then loads the sim by its full path (as an application that
 * finds libcuda its own way would) and opens again.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrx.h"
#include "gdrx_test.h"

/* Exit codes of the re-executed program. */
enum { RETRY_OK = 0, FIRST_OPEN_WORKED = 10, SIM_NOT_LOADED = 11, RETRY_FAILED = 12 };

static int retry_main(const char *sim)
{
    gdrx_t g;
    int rc = gdrx_open(NULL, &g);

    if (rc != -ELIBACC) {
        fprintf(stderr, "first gdrx_open: %d, expected -ELIBACC\n", rc);
        return FIRST_OPEN_WORKED;
    }
    if (!dlopen(sim, RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "cannot load %s: %s\n", sim, dlerror());
        return SIM_NOT_LOADED;
    }
    rc = gdrx_open(NULL, &g);
    if (rc != 0) {
        fprintf(stderr, "second gdrx_open: %d\n", rc);
        return RETRY_FAILED;
    }
    return gdrx_close(g) == 0 ? RETRY_OK : RETRY_FAILED;
}

static void test_failed_load_is_retried(void)
{
    const char *build = getenv("GDRX_TEST_BUILDDIR");
    char sim[4096], libpath[4096];

    CU_ASSERT_PTR_NOT_NULL_FATAL(build);
    snprintf(sim, sizeof(sim), "%s/tests/sim/.libs/libcuda.so.1", build);
    snprintf(libpath, sizeof(libpath), "%s/libgdr/.libs", build);
    CU_ASSERT_EQUAL_FATAL(access(sim, R_OK), 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        setenv("LD_LIBRARY_PATH", libpath, 1);
        setenv("GDRX_BACKEND", "dmabuf", 1);
        execl("/proc/self/exe", "test_cuda_load", "--retry-child", sim, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), RETRY_OK);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_failed_load_is_retried),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "cuda_load", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--retry-child") == 0)
        return retry_main(argv[2]);
    return gdrx_test_main(argc, argv, suites);
}
