/*
 * test_api_meta.c - the API around the data path: versions, names,
 * backend selection by environment, logging only on request, and the
 * exported symbols of libgdrx.so.0.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h" /* GDRX_TEST_POINTS */
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_api.h"

static void test_version(void)
{
    int a = -1, b = -1, c = -1;

    gdrx_get_version(&a, &b, &c);
    CU_ASSERT_EQUAL(a, GDRX_API_VERSION_MAJOR);
    CU_ASSERT_EQUAL(b, GDRX_API_VERSION_MINOR);
    CU_ASSERT_EQUAL(c, GDRX_API_VERSION_PATCH);
    gdrx_get_version(NULL, NULL, NULL); /* must not crash */
}

static void test_strerror_and_names(void)
{
    CU_ASSERT_PTR_NOT_NULL(strstr(gdrx_strerror(-EINVAL), "EINVAL"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gdrx_strerror(-ESTALE), "ESTALE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gdrx_strerror(-ERANGE), "ERANGE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gdrx_strerror(-EBADF), "EBADF"));
    CU_ASSERT_STRING_EQUAL(gdrx_strerror(0), "success");
    CU_ASSERT_STRING_EQUAL(gdrx_strerror(-99999), "unknown error");
    /* Every errno the library's sources return has a name of its own. */
    static const struct { int err; const char *name; } returned[] = {
        { EBADF, "EBADF" }, { ECHILD, "ECHILD" }, { EEXIST, "EEXIST" },
        { EINVAL, "EINVAL" }, { EIO, "EIO" }, { ELIBACC, "ELIBACC" },
        { ENODEV, "ENODEV" }, { ENOENT, "ENOENT" }, { ENOMEM, "ENOMEM" },
        { ENOSPC, "ENOSPC" }, { EOPNOTSUPP, "EOPNOTSUPP" }, { EPERM, "EPERM" },
        { EPROTO, "EPROTO" }, { ERANGE, "ERANGE" }, { ESTALE, "ESTALE" },
    };
    for (size_t i = 0; i < sizeof(returned) / sizeof(returned[0]); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(gdrx_strerror(-returned[i].err), returned[i].name));
    /* Others (passed through from system calls) still get a description. */
    CU_ASSERT_STRING_NOT_EQUAL(gdrx_strerror(-EXDEV), "unknown error");
    CU_ASSERT_STRING_EQUAL(gdrx_strerror(EINVAL), gdrx_strerror(-EINVAL));
    CU_ASSERT_STRING_EQUAL(gdrx_backend_name(GDRX_BACKEND_GDRDRV), "gdrdrv");
    CU_ASSERT_STRING_EQUAL(gdrx_backend_name(GDRX_BACKEND_NVRM), "nvrm");
    CU_ASSERT_STRING_EQUAL(gdrx_backend_name(GDRX_BACKEND_DMABUF), "dmabuf");
    CU_ASSERT_STRING_EQUAL(gdrx_backend_name(GDRX_BACKEND_AUTO), "auto");
    CU_ASSERT_STRING_EQUAL(gdrx_backend_name((gdrx_backend_t)77), "unknown");
    CU_ASSERT_STRING_EQUAL(gdrx_mapping_type_name(GDRX_MAPPING_WC), "wc");
    CU_ASSERT_STRING_EQUAL(gdrx_mapping_type_name(GDRX_MAPPING_CACHING), "caching");
    CU_ASSERT_STRING_EQUAL(gdrx_mapping_type_name(GDRX_MAPPING_DEVICE), "device");
    CU_ASSERT_STRING_EQUAL(gdrx_mapping_type_name(GDRX_MAPPING_NONE), "none");
    CU_ASSERT_STRING_EQUAL(gdrx_mapping_type_name((gdrx_mapping_type_t)-3), "unknown");
    for (int v = GDRX_COPY_AUTO; v <= GDRX_COPY_MOVDIR64B + 1; v++)
        CU_ASSERT_PTR_NOT_NULL(gdrx_copy_variant_name((gdrx_copy_variant_t)v));
}

static void test_backend_env(void)
{
    struct gdrx_open_params p;
    gdrx_t g;
    uint64_t v;

    if (tc_setup(0))
        return;
    setenv("GDRX_BACKEND", "no-such-backend", 1);
    CU_ASSERT_EQUAL(gdrx_open(NULL, &g), -EINVAL);

    /* No gdrdrv device node: forced gdrdrv fails cleanly, AUTO falls through. */
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    setenv("GDRX_BACKEND", "gdrdrv", 1);
    CU_ASSERT_EQUAL(gdrx_open(NULL, &g), -ENODEV);
    gdrx_open_params_init(&p);
    p.backend = GDRX_BACKEND_GDRDRV; /* explicit choice, env aside */
    unsetenv("GDRX_BACKEND");
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -ENODEV);

    /* A node that is not gdrdrv (GET_VERSION fails): also -ENODEV. */
    setenv("GDRX_GDRDRV_PATH", "/dev/null", 1);
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -ENODEV);

    setenv("GDRX_BACKEND", "auto", 1);
    CU_ASSERT_EQUAL_FATAL(gdrx_open(NULL, &g), 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &v), 0);
    CU_ASSERT_NOT_EQUAL(v, GDRX_BACKEND_GDRDRV);
    CU_ASSERT_NOT_EQUAL(v, GDRX_BACKEND_AUTO);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);

    /* Forced dmabuf: the env wins over AUTO params only. */
    setenv("GDRX_BACKEND", "dmabuf", 1);
    CU_ASSERT_EQUAL_FATAL(gdrx_open(NULL, &g), 0);
    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_BACKEND, &v), 0);
    CU_ASSERT_EQUAL(v, GDRX_BACKEND_DMABUF);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(gdrx_open(&p, &g), -ENODEV); /* params say gdrdrv */
}

/* Runs fn with stderr redirected to a file; returns how many bytes it got. */
static long stderr_bytes_of(void (*fn)(void))
{
    char path[] = "/tmp/gdrx-test-log-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = lseek(fd, 0, SEEK_END);
    close(fd);
    return n;
}

static void failing_calls(void)
{
    gdrx_t g = tc_open();
    gdrx_pin_t pin;
    static char host[4096];

    CU_ASSERT_EQUAL(gdrx_pin(g, (uint64_t)(uintptr_t)host, 4096, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), -EBADF);
    setenv("GDRX_BACKEND", "bogus", 1);
    CU_ASSERT_EQUAL(gdrx_open(NULL, &g), -EINVAL);
}

static void test_silent_without_log_level(void)
{
    unsetenv("GDRX_LOG_LEVEL");
    if (tc_setup(0))
        return;
    CU_ASSERT_EQUAL(stderr_bytes_of(failing_calls), 0);
}

static void test_logs_with_log_level(void)
{
    setenv("GDRX_LOG_LEVEL", "4", 1);
    if (tc_setup(0))
        return;
    CU_ASSERT(stderr_bytes_of(failing_calls) > 0);
}

static void test_exports_only_gdrx(void)
{
    const char *dir = getenv("GDRX_TEST_BUILDDIR");
    char cmd[1024], line[512];
    int count = 0, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s/libgdr/.libs/libgdrx.so.0' 2>&1", dir);
    FILE *f = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while (fgets(line, sizeof(line), f)) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3) {
            fprintf(stderr, "    unexpected nm output: %s", line);
            bad++;
            continue;
        }
        if (strcmp(type, "A") == 0 && strncmp(name, "GDRX_", 5) == 0)
            continue; /* the version node of libgdrx.map */
        count++;
        if (strncmp(name, "gdrx_", 5) != 0) {
            fprintf(stderr, "    exported symbol outside gdrx_*: %s\n", name);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(pclose(f), 0);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(count >= 16); /* every public function */
}

/* The interleaving points' entries (libgdr/src/ipoint.h) are exported by a
 * test-point build, and by no other: a release library has none. */
static void test_test_points_exported_only_in_test_builds(void)
{
    const char *dir = getenv("GDRX_TEST_BUILDDIR");
    char cmd[1024], out[4096];

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(cmd, sizeof(cmd),
             "nm -D --defined-only '%s/libgdr/.libs/libgdrx.so.0' | "
             "sed 's/@.*//' | grep -E ' (gdrx_test_.*|gdrx_open)$' 2>&1", dir);
    gdrx_test_capture(cmd, out, sizeof(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " gdrx_open\n")); /* nm did read it */
#ifdef GDRX_TEST_POINTS
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " gdrx_test_ipoint\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " gdrx_test_ipoint_hook_set\n"));
#else
    CU_ASSERT_PTR_NULL(strstr(out, "gdrx_test_"));
#endif
}

static void test_soname(void)
{
    const char *dir = getenv("GDRX_TEST_BUILDDIR");
    char cmd[1024], line[512];
    int found = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(cmd, sizeof(cmd), "readelf -d '%s/libgdr/.libs/libgdrx.so.0' 2>&1", dir);
    FILE *f = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "SONAME") && strstr(line, "[libgdrx.so.0]"))
            found = 1;
    pclose(f);
    CU_ASSERT(found);
}

const struct gdrx_test_case api_meta_cases[] = {
    GDRX_TEST_CASE(test_version),
    GDRX_TEST_CASE(test_strerror_and_names),
    GDRX_TEST_CASE(test_backend_env),
    GDRX_TEST_CASE(test_silent_without_log_level),
    GDRX_TEST_CASE(test_logs_with_log_level),
    GDRX_TEST_CASE(test_exports_only_gdrx),
    GDRX_TEST_CASE(test_test_points_exported_only_in_test_builds),
    GDRX_TEST_CASE(test_soname),
    GDRX_TEST_END,
};
