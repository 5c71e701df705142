/*
 * test_tools.c - gdrx as users meet it: ucx_info with LD_PRELOAD lists the
 * transport and its UCX_GDRX_* settings, a ucx.conf value takes effect, and
 * a plugin built for another UCX release, or in a process whose UCX
 * release it cannot tell, refuses to register.
 *
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uct/api/version.h>

#include "ut_uct.h"

/* Run `ucx_info args` in dir with the plugin at rel preloaded (rel NULL:
 * nothing preloaded, UCX_PLUGIN_PATH names the plugin's directory); stdout
 * and stderr go to out.  Returns the exit status or -1. */
static int ut_ucx_info(const char *dir, const char *rel, const char *args,
                       char *out, size_t size)
{
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    char sim[1100], plugin[512], env[2048], cmd[2560];

    /* The simulated GPU has no device node and serves through dmabuf only:
     * its libcuda, preloaded and initialised at load, stands for a CUDA
     * program (where gdrx lists its resource).  A sanitized plugin in
     * LD_PRELOAD needs its runtime first. */
    ut_sim_preload(sim, sizeof(sim));
    if (rel != NULL) {
        ut_build_path(plugin, sizeof(plugin), rel);
        snprintf(env, sizeof(env), "LD_PRELOAD='%s%s%s:%s'",
                 (rt && *rt) ? rt : "", (rt && *rt) ? ":" : "", sim, plugin);
    } else {
        ut_build_path(plugin, sizeof(plugin), "ucx_plugin/.libs");
        snprintf(env, sizeof(env), "LD_PRELOAD='%s%s%s' UCX_PLUGIN_PATH='%s'",
                 (rt && *rt) ? rt : "", (rt && *rt) ? ":" : "", sim, plugin);
    }
    snprintf(cmd, sizeof(cmd), "cd '%s' && env -u UCX_CONFIG_DIR %s '%s' %s "
             "2>&1", dir, env, GDRX_UCX_INFO, args);
    return gdrx_test_capture(cmd, out, size);
}

static char ut_out[1 << 20];

static void test_info_lists_gdrx(void)
{
    CU_ASSERT_EQUAL(ut_ucx_info("/", "ucx_plugin/.libs/libuct_gdrx.so.0", "-d",
                                ut_out, sizeof(ut_out)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "# Memory domain: gdrx\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "#      Transport: gdrx\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "#         Device: gdrx0\n"));
    CU_ASSERT_PTR_NULL(strstr(ut_out, "gdrx: libuct_gdrx was built"));
}

/* UCX 1.22+ also loads lib<framework>_<name>.so.0 from UCX_PLUGIN_PATH and
 * its module directory (1.21.0 reverted it before its release); older
 * releases only what their build names, which is why they need LD_PRELOAD. */
static void test_plugin_path(void)
{
    const char *listed;

    if (ut_ucx_info("/", NULL, "-d", ut_out, sizeof(ut_out)) != 0) {
        CU_FAIL("ucx_info -d failed");
        return;
    }
    listed = strstr(ut_out, "#      Transport: gdrx\n");
    if (UCT_API >= UCT_VERSION(1, 22)) {
        CU_ASSERT_PTR_NOT_NULL(listed);
    } else {
        CU_ASSERT_PTR_NULL(listed);
    }
}

static void test_info_config(void)
{
    static const char *const names[] = {
        "UCX_GDRX_BACKEND=auto", "UCX_GDRX_RCACHE=try",
        "UCX_GDRX_RCACHE_MAX_REGIONS=4096", "UCX_GDRX_RCACHE_MAX_SIZE=4G",
        "UCX_GDRX_REG_WINDOW=16M", "UCX_GDRX_MEM_EVENTS=y",
        "UCX_GDRX_STATS_DUMP=n", "UCX_GDRX_GET_LAT=1.00us",
        "UCX_GDRX_PUT_BW=16000.00MBps", "UCX_GDRX_SEG_SIZE=8K", NULL
    };
    const char *const *n;

    CU_ASSERT_EQUAL(ut_ucx_info("/", "ucx_plugin/.libs/libuct_gdrx.so.0", "-c",
                                ut_out, sizeof(ut_out)), 0);
    for (n = names; *n != NULL; ++n) {
        if (strstr(ut_out, *n) == NULL) {
            CU_FAIL(*n);
        }
    }
}

/* ./ucx.conf sets the read latency; the iface reports it (iface latency is
 * the read latency), and ucx_info -c shows it. */
static void test_ucx_conf(void)
{
    char dir[] = "/tmp/gdrx-ucxconf.XXXXXX", path[64];
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ucx.conf", dir);
    f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("# written by test_ucx_conf\nUCX_GDRX_GET_LAT=9us\nUCX_GDRX_PUT_LAT=7us\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(ut_ucx_info(dir, "ucx_plugin/.libs/libuct_gdrx.so.0", "-c",
                                ut_out, sizeof(ut_out)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "UCX_GDRX_GET_LAT=9.00us"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "UCX_GDRX_PUT_LAT=7.00us"));
    CU_ASSERT_EQUAL(ut_ucx_info(dir, "ucx_plugin/.libs/libuct_gdrx.so.0", "-d",
                                ut_out, sizeof(ut_out)), 0);
    /* the interface's figure is the faster direction's */
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "latency: 7000 nsec"));
    unlink(path);
    rmdir(dir);
}

/* A build that records UCX 1.12.0 (the test build of the plugin). */
static void test_wrong_version_refused(void)
{
    char want[256];

    CU_ASSERT_EQUAL(ut_ucx_info("/", "tests/ucx/.libs/libuct_gdrx_wrongver.so",
                                "-d", ut_out, sizeof(ut_out)), 0);
    snprintf(want, sizeof(want), "gdrx: libuct_gdrx was built for UCX 1.12.0 "
             "but this process runs UCX %s; the gdrx transport is not "
             "registered", GDRX_UCX_BUILD_VERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, want));
    CU_ASSERT_PTR_NULL(strstr(ut_out, "Transport: gdrx"));
    CU_ASSERT_PTR_NULL(strstr(ut_out, "Memory domain: gdrx"));
}

/* Where no libucp is loaded (a UCT-only program; an MPI rank before
 * MPI_Init) the release is asked of the libucp next to libuct before
 * anything is registered: the plugin that records 1.12.0 puts nothing on
 * UCX's lists (it had registered unchecked, into a libuct of any release),
 * the plugin built for this UCX registers, and libucp is not left loaded. */
static void test_version_without_libucp(void)
{
    char prog[512], wrong[512], plugin[512], cmd[2048];

    ut_build_path(prog, sizeof(prog), "tests/ucx/ut_uct_only");
    ut_build_path(wrong, sizeof(wrong), "tests/ucx/.libs/libuct_gdrx_wrongver.so");
    ut_build_path(plugin, sizeof(plugin), "ucx_plugin/.libs/libuct_gdrx.so.0");
    snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' 2>&1", prog, wrong, plugin);
    CU_ASSERT_EQUAL(gdrx_test_capture(cmd, ut_out, sizeof(ut_out)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "libucp 0 gdrx 0 0 1 libucp 0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "gdrx: libuct_gdrx was built for "
                                  "UCX 1.12.0 but this process runs UCX"));
}

/* Lines of out that say the transport is not registered. */
static int ut_refusals(const char *out)
{
    const char *line, *end;
    int n = 0;

    for (line = out; *line != '\0'; line = (*end != '\0') ? end + 1 : end) {
        const char *hit = strstr(line, "is not registered");

        end = strchr(line, '\n');
        if (end == NULL) {
            end = line + strlen(line);
        }
        n += (hit != NULL) && (hit < end);
    }
    return n;
}

/* Run ut_uct_only with this UCX's libuct (and libucs, libucm) loaded from a
 * directory of their own, whose libucp.so.0 is the stand-in answering
 * `answer` (ut_fake_ucp.c), or which has none (answer NULL): the plugin
 * built for this UCX asks the libucp next to libuct, as a UCT-only
 * program makes it.  Its output in ut_out; the exit status. */
static int ut_uct_only_beside(const char *answer)
{
    static const char *const libs[] = {"libuct.so.0", "libucs.so.0",
                                       "libucm.so.0"};
    char dir[] = "/tmp/gdrx-ucxlib.XXXXXX", from[1024], to[1100];
    char prog[512], plugin[512], cmd[4096];
    const char *path = getenv("LD_LIBRARY_PATH");
    size_t i;
    int rc;

    if (mkdtemp(dir) == NULL) {
        CU_FAIL("mkdtemp");
        return -1;
    }
    for (i = 0; i < sizeof(libs) / sizeof(libs[0]); ++i) {
        snprintf(from, sizeof(from), "%s/%s", GDRX_UCX_LIBDIR, libs[i]);
        snprintf(to, sizeof(to), "%s/%s", dir, libs[i]);
        CU_ASSERT_EQUAL(symlink(from, to), 0);
    }
    snprintf(to, sizeof(to), "%s/libucp.so.0", dir);
    if (answer != NULL) {
        ut_build_path(from, sizeof(from), "tests/ucx/.libs/libut_fake_ucp.so");
        CU_ASSERT_EQUAL(symlink(from, to), 0);
    }
    ut_build_path(prog, sizeof(prog), "tests/ucx/ut_uct_only");
    ut_build_path(plugin, sizeof(plugin), "ucx_plugin/.libs/libuct_gdrx.so.0");
    snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s%s%s' UT_FAKE_UCP_VERSION='%s' "
             "'%s' '%s' 2>&1", dir, path ? ":" : "", path ? path : "",
             answer ? answer : "", prog, plugin);
    rc = gdrx_test_capture(cmd, ut_out, sizeof(ut_out));
    unlink(to);
    for (i = 0; i < sizeof(libs) / sizeof(libs[0]); ++i) {
        snprintf(to, sizeof(to), "%s/%s", dir, libs[i]);
        unlink(to);
    }
    rmdir(dir);
    return rc;
}

/* The stand-in libucp answering this UCX's release: the plugin registers
 * (so the cases below reach the question, and refuse only for its
 * answer). */
static void test_version_told_beside_libuct(void)
{
    CU_ASSERT_EQUAL(ut_uct_only_beside(GDRX_UCX_BUILD_VERSION), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "libucp 0 gdrx 0 1 libucp 0\n"));
    CU_ASSERT_EQUAL(ut_refusals(ut_out), 0);
}

/* No libucp in the process or beside libuct: ucp_get_version cannot be
 * found, the release cannot be told, nothing is registered, and the
 * plugin says so in one line. */
static void test_version_unknown_no_libucp(void)
{
    CU_ASSERT_EQUAL(ut_uct_only_beside(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "libucp 0 gdrx 0 0 libucp 0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "gdrx: no libucp in this process or "
                                  "next to libuct tells the UCX release"));
    CU_ASSERT_EQUAL(ut_refusals(ut_out), 1);
}

/* A libucp whose ucp_get_version writes nothing (or answers 0.x, which no
 * UCX release is): not registered, said once. */
static void test_version_unknown_answer(void)
{
    static const char *const answers[] = {"silent", "0.0.0"};
    size_t i;

    for (i = 0; i < sizeof(answers) / sizeof(answers[0]); ++i) {
        CU_ASSERT_EQUAL(ut_uct_only_beside(answers[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "libucp 0 gdrx 0 0 libucp 0\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ut_out, "gdrx: libucp answers UCX 0.0.0, "
                                      "not a release gdrx can tell"));
        CU_ASSERT_EQUAL(ut_refusals(ut_out), 1);
    }
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_info_lists_gdrx),
    GDRX_TEST_CASE(test_plugin_path),
    GDRX_TEST_CASE(test_info_config),
    GDRX_TEST_CASE(test_ucx_conf),
    GDRX_TEST_CASE(test_wrong_version_refused),
    GDRX_TEST_CASE(test_version_without_libucp),
    GDRX_TEST_CASE(test_version_told_beside_libuct),
    GDRX_TEST_CASE(test_version_unknown_no_libucp),
    GDRX_TEST_CASE(test_version_unknown_answer),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_tools", NULL, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    setenv("GDRX_BACKEND", "dmabuf", 0);
    return gdrx_test_main(argc, argv, suites);
}
