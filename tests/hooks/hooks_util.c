/*
 * hooks_util.c - finding the tree's libraries, for the hooks suites.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *hooks_lib_path(const char *dir, const char *file, char *buf, size_t size)
{
    const char *top = getenv("GDRX_TEST_BUILDDIR");
    char exe[PATH_MAX];
    ssize_t n;

    if (top) {
        snprintf(buf, size, "%s/%s/.libs/%s", top, dir, file);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    /* Run by hand: libtool's real binary sits in tests/hooks/.libs. */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *cut = strstr(exe, "/tests/hooks/");
        if (cut) {
            *cut = '\0';
            snprintf(buf, size, "%s/%s/.libs/%s", exe, dir, file);
        }
    }
    return buf;
}

void *hooks_dlopen(const char *dir, const char *file, int mode)
{
    char path[PATH_MAX];
    void *h = dlopen(hooks_lib_path(dir, file, path, sizeof(path)), mode);

    if (!h)
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}
