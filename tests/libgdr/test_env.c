/*
 * test_env.c - libgdrx ignores its GDRX_* variables in a process the
 * kernel marks AT_SECURE (setuid, setgid, file capabilities), as the
 * loader ignores LD_* there: such a program must not be steered by whoever
 * starts it.  As root, a setgid-root copy of env_probe runs as user 65534
 * with GDRX_LOG_LEVEL=4; a plain copy is the control.  Elsewhere the case
 * is not run (only root can make a program setgid to another group).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "gdrx_test.h"

#define AS_NOBODY "setpriv --reuid=65534 --regid=65534 --clear-groups"

static char dir[] = "/tmp/gdrx-env.XXXXXX";
static int made;
static char out[4096];

static int probe(const char *copy)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "cd / && GDRX_LOG_LEVEL=4 " AS_NOBODY " '%s/%s' 2>&1", dir, copy);
    return gdrx_test_capture(cmd, out, sizeof(out));
}

static void test_secure_process_ignores_env(void)
{
    CU_ASSERT_EQUAL(probe("plain"), 0);
    CU_ASSERT_STRING_EQUAL(out, "level 4\n"); /* the control obeys */
    CU_ASSERT_EQUAL(probe("setgid"), 0);
    CU_ASSERT_STRING_EQUAL(out, "level 0\n");
}

/* No other GDRX_* read in libgdrx bypasses secure_getenv. */
static void test_every_read_is_secure(void)
{
    const char *src = getenv("GDRX_TEST_SRCDIR");
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "grep -rn --include='*.c' '[^_]getenv(\"GDRX_' '%s/libgdr/src'",
             src ? src : ".");
    CU_ASSERT_EQUAL(gdrx_test_capture(cmd, out, sizeof(out)) != 0, 1); /* grep finds nothing */
    CU_ASSERT_STRING_EQUAL(out, "");
}

/* The two copies of env_probe, readable by all; NULL, or why not. */
static const char *setup(void)
{
    const char *top = getenv("GDRX_TEST_BUILDDIR");
    char cmd[2048];

    if (geteuid() != 0)
        return "only root can make a program setgid to another group";
    if (!mkdtemp(dir))
        return "cannot make a directory in /tmp";
    made = 1;
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0 || (fs.f_flag & ST_NOSUID))
        return "/tmp is mounted nosuid: a setgid copy would not be setgid there";
    snprintf(cmd, sizeof(cmd),
             "chmod 755 '%1$s' && cp '%2$s/tests/libgdr/env_probe' '%1$s/plain' && "
             "cp '%1$s/plain' '%1$s/setgid' && chown 0:0 '%1$s/setgid' && "
             "chmod 755 '%1$s/plain' && chmod 2755 '%1$s/setgid' && "
             AS_NOBODY " test -x '%1$s/plain' 2>/dev/null",
             dir, top ? top : ".");
    if (system(cmd) != 0)
        return "cannot give user 65534 a setgid copy of env_probe in /tmp (no setpriv, or "
               "/tmp mounted noexec)";
    return NULL;
}

static int cleanup(void)
{
    char cmd[256];

    if (made) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return 0;
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_secure_process_ignores_env),
    GDRX_TEST_END
};

static const struct gdrx_test_case scan_cases[] = {
    GDRX_TEST_CASE(test_every_read_is_secure),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "env/secure", NULL, cleanup, cases },
    { "env/source", NULL, NULL, scan_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    const char *why = setup();

    if (why) {
        printf("NOT RUN: suite env/secure (%s); it is not registered\n", why);
        cleanup();
        return gdrx_test_main(argc, argv, suites + 1);
    }
    return gdrx_test_main(argc, argv, suites);
}
