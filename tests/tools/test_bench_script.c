/*
 * test_bench_script.c - `make bench` (tools/run-benchmarks.sh) on the
 * simulated GPU: the banner, the tables, one CSV of every tool, the
 * summary; a tool that cannot run is listed as NOT RUN (never passed), a
 * failing one as FAILED with a non-zero exit status.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tt.h"

static const char *const tool_names[] = { "gdrx-copylat", "gdrx-copybw", "gdrx-apiperf",
                                          "gdrx-pplat" };

/* Run the script with the tools of bin (NULL: the build's), results in out. */
static int run_script(const char *bin, const char *out)
{
    char cmd[2048];
    const char *src = getenv("GDRX_TEST_SRCDIR");
    snprintf(cmd, sizeof(cmd), "env %s%s GDRX_BENCH_OUT='%s' GDRX_BENCH_QUICK=1 GDRX_BENCH_SIM=1 sh "
             "'%s/tools/run-benchmarks.sh' '%s' 2>&1", bin ? "GDRX_BENCH_BIN=" : "",
             bin ? bin : "", out, src && *src ? src : ".", tt_builddir());
    int st = gdrx_test_capture(cmd, tt_out, sizeof(tt_out));
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 1 if this build made the UCX plugin (apiperf then measures the cache). */
static int ut_has_plugin(void)
{
    char path[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s/ucx_plugin/.libs/libuct_gdrx.so.0", tt_builddir());
    return stat(path, &st) == 0;
}

static void test_bench_sim(void)
{
    char dir[64], csv[128];
    tt_tmpdir(dir, sizeof(dir));
    CU_ASSERT_EQUAL(run_script(NULL, dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "# SIMULATED GPU: no NVIDIA GPU here."));
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "== summary (P50) -- SIMULATED GPU: these numbers "
                                          "mean NOTHING about a GPU"));
    const char *const lines[] = {
        "copy 8 B host->GPU ", "copy 8 B GPU->host ", "copy 4 KiB host->GPU ",
        "bandwidth 4 MiB host->GPU ", "ping-pong (CPU writes) ", "ping-pong (CPU polls) ",
        "pin+map 64 KiB (warm) ", "unmap+unpin 64 KiB (warm) ",
        /* measured wherever the plugin was built (configure found UCX) */
        ut_has_plugin() ? "UCX registration cache     hit " : "UCX registration cache ",
    };
    const char *summary = strstr(tt_out, "== summary");
    for (size_t i = 0; summary && i < sizeof(lines) / sizeof(lines[0]); i++)
        if (!strstr(summary, lines[i])) {
            fprintf(stderr, "summary lacks '%s':\n%s\n", lines[i], summary);
            CU_FAIL("summary line");
        }
    CU_ASSERT_PTR_NULL(strstr(tt_out, "FAILED"));
    CU_ASSERT_PTR_NULL(strstr(tt_out, "NOT RUN:"));
    snprintf(csv, sizeof(csv), "%s/results.csv", dir);
    const char *text = tt_slurp(csv);
    CU_ASSERT_EQUAL(tt_count(text, "tool,test,op,"), 1);
    for (int i = 0; i < 4; i++) {
        char want[64];
        snprintf(want, sizeof(want), "\n%s,", tool_names[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    }
    snprintf(csv, sizeof(csv), "%s/tables.txt", dir);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_slurp(csv), "== summary"));
    tt_rmdir(dir);
}

/* bin/ holds wrappers of the build's tools; fake_rc >= 0 replaces tool
 * `fake` by a script that exits with it. */
static void make_bin(const char *bin, const char *fake, int fake_rc)
{
    mkdir(bin, 0755);
    for (int i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", bin, tool_names[i]);
        FILE *f = fopen(path, "w");
        if (!f)
            continue;
        if (strcmp(tool_names[i], fake) == 0)
            fprintf(f, "#!/bin/sh\necho '%s: NOT RUN: faked'\nexit %d\n", fake, fake_rc);
        else
            fprintf(f, "#!/bin/sh\nexec '%s/tools/%s' \"$@\"\n", tt_builddir(), tool_names[i]);
        fclose(f);
        chmod(path, 0755);
    }
}

static void test_bench_not_run_and_failed(void)
{
    char dir[64], bin[128];
    tt_tmpdir(dir, sizeof(dir));
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    make_bin(bin, "gdrx-pplat", 3);
    CU_ASSERT_EQUAL(run_script(bin, dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "NOT RUN: gdrx-pplat"));
    CU_ASSERT_PTR_NULL(strstr(tt_out, "ping-pong (CPU writes) "));

    make_bin(bin, "gdrx-copybw", 1);
    CU_ASSERT_EQUAL(run_script(bin, dir), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(tt_out, "FAILED: gdrx-copybw(exit 1)"));
    tt_rmdir(dir);
}

/* The GPU machine's build (tests/gpu/build_tools.sh: gcc and nvcc, no
 * autotools) against the build tree's libgdrx, run on the simulated GPU;
 * its cuda.h is the one configure found (CUDA_HOME), which need not be in
 * /usr/local/cuda (Debian: /opt/gdrx-cuda or /usr). */
static void test_gpu_build_script(void)
{
    char dir[64], cmd[2048];
    const char *src = getenv("GDRX_TEST_SRCDIR");
    tt_tmpdir(dir, sizeof(dir));
    snprintf(cmd, sizeof(cmd), "cp '%s/libgdr/.libs/libgdrx.so.0' '%s/' && env -u UCX_SRC "
             "CUDA_HOME='%s' bash '%s/tests/gpu/build_tools.sh' '%s' 2>&1", tt_builddir(),
             dir, GDRX_TEST_CUDA_DIR, src && *src ? src : ".", dir);
    int st = gdrx_test_capture(cmd, tt_out, sizeof(tt_out));
    CU_ASSERT(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!strstr(tt_out, "built ")) {
        fprintf(stderr, "build_tools.sh printed:\n%s\n", tt_out);
        CU_FAIL("build_tools.sh");
    }
    /* A sanitized libgdrx wants its runtime loaded first. */
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    char preload[600] = "";
    if (rt && *rt)
        snprintf(preload, sizeof(preload), "env LD_PRELOAD='%s' ", rt);
    const char *const runs[] = { "gdrx-copylat -s 8 -n 3", "gdrx-copybw -s 4K -n 2",
                                 "gdrx-apiperf -s 4K -n 2", "gdrx-pplat -n 3 -w 3" };
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof(cmd), "%s'%s'/%s 2>&1", preload, dir, runs[i]);
        st = gdrx_test_capture(cmd, tt_out, sizeof(tt_out));
        CU_ASSERT(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        CU_ASSERT_EQUAL(strncmp(tt_out, "SIMULATED GPU: ", 15), 0);
    }
    tt_rmdir(dir);
}

/* bench.sh build with UCX_SRC: a tree that is not a configured UCX, or
 * libraries that are not there, stop the build before it starts. */
static void test_gpu_bench_ucx_checked(void)
{
    char dir[64], cmd[2048];
    const char *src = getenv("GDRX_TEST_SRCDIR");
    static const struct { const char *env, *msg; } cases[] = {
        { "UCX_SRC=/nonexistent", "UCX_SRC=/nonexistent is not a configured UCX tree" },
        { "UCX_SRC=%s/ucx UCX_LIBDIR=/nonexistent", "no libuct.so.0 in UCX_LIBDIR='/nonexistent'" },
    };
    tt_tmpdir(dir, sizeof(dir));
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/ucx/src/uct/api' && touch '%s/ucx/config.h' "
             "'%s/ucx/src/uct/api/uct.h'", dir, dir, dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char env[512];
        snprintf(env, sizeof(env), cases[i].env, dir);
        snprintf(cmd, sizeof(cmd), "env %s GDRX_GPU_BUILD='%s/b' OUT='%s/out' bash "
                 "'%s/tests/gpu/bench.sh' build 2>&1", env, dir, dir, src && *src ? src : ".");
        int st = gdrx_test_capture(cmd, tt_out, sizeof(tt_out));
        CU_ASSERT(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
        if (!strstr(tt_out, cases[i].msg)) {
            fprintf(stderr, "bench.sh build (%s) printed:\n%s\n", env, tt_out);
            CU_FAIL("bench.sh's UCX message");
        }
        CU_ASSERT_PTR_NULL(strstr(tt_out, "built "));
    }
    tt_rmdir(dir);
}

const struct gdrx_test_case tt_script_cases[] = {
    GDRX_TEST_CASE(test_bench_sim),
    GDRX_TEST_CASE(test_bench_not_run_and_failed),
    GDRX_TEST_CASE(test_gpu_build_script),
    GDRX_TEST_CASE(test_gpu_bench_ucx_checked),
    GDRX_TEST_END
};
