/*
 * test_got_patch.c - the GOT patcher on a synthetic symbol (getpid in a
 * test library), and the dlopen/dlsym hooks' caller emulation.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_free_hooks.h"
#include "got_patch.h"

#define FAKE_PID 424242

typedef pid_t (*pid_fn)(void);
typedef void *(*ptr_fn)(void);

static void *getpid_original;

static pid_t fake_getpid(void)
{
    return FAKE_PID;
}

static const struct gdrx_got_hook getpid_hook = {
    "getpid", (void *)fake_getpid, &getpid_original, "/libhooks_", NULL
};

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static void test_patch_call_unpatch(void)
{
    void *h = hooks_dlopen("libhooks_getpid.so", RTLD_NOW | RTLD_LOCAL);
    pid_fn call = (pid_fn)sym(h, "hooks_call_getpid");
    ptr_fn addr = (ptr_fn)sym(h, "hooks_getpid_address");
    pid_t pid = getpid();

    CU_ASSERT_EQUAL(call(), pid);
    CU_ASSERT_EQUAL_FATAL(gdrx_got_patch(&getpid_hook, 1), 0);
    /* The call through the library's JUMP_SLOT and its &getpid
     * (GLOB_DAT) both lead to the replacement now ... */
    CU_ASSERT_EQUAL(call(), FAKE_PID);
    CU_ASSERT_PTR_EQUAL(addr(), (void *)fake_getpid);
    CU_ASSERT(gdrx_got_count("getpid") >= 1);
    /* ... the original is the real one, and the filter kept our own
     * imports (this program's GOT) away from the hook. */
    CU_ASSERT_PTR_NOT_NULL_FATAL(getpid_original);
    CU_ASSERT_EQUAL(((pid_fn)getpid_original)(), pid);
    CU_ASSERT_EQUAL(getpid(), pid);

    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), 0);
    CU_ASSERT_EQUAL(call(), pid);
    CU_ASSERT_PTR_NOT_EQUAL(addr(), (void *)fake_getpid);
    CU_ASSERT_EQUAL(gdrx_got_count("getpid"), 0);
    dlclose(h);
}

static void test_patch_idempotent(void)
{
    void *h = hooks_dlopen("libhooks_getpid.so", RTLD_NOW | RTLD_LOCAL);
    pid_fn call = (pid_fn)sym(h, "hooks_call_getpid");
    long once;

    CU_ASSERT_EQUAL_FATAL(gdrx_got_patch(&getpid_hook, 1), 0);
    once = gdrx_got_count("getpid");
    CU_ASSERT(once >= 1);
    CU_ASSERT_EQUAL(gdrx_got_patch(&getpid_hook, 1), 0);
    CU_ASSERT_EQUAL(gdrx_got_rescan(), 0);
    CU_ASSERT_EQUAL(gdrx_got_count("getpid"), once);
    CU_ASSERT_EQUAL(call(), FAKE_PID);
    /* Registered once, so one unpatch removes it and a second finds none. */
    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), 0);
    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), -ENOENT);
    CU_ASSERT_EQUAL(call(), getpid());
    dlclose(h);
}

static void test_patch_bad_input(void)
{
    struct gdrx_got_hook bad = getpid_hook;

    CU_ASSERT_EQUAL(gdrx_got_patch(NULL, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_got_patch(&getpid_hook, 0), -EINVAL);
    bad.symbol = NULL;
    CU_ASSERT_EQUAL(gdrx_got_patch(&bad, 1), -EINVAL);
    bad.symbol = "";
    CU_ASSERT_EQUAL(gdrx_got_patch(&bad, 1), -EINVAL);
    bad = getpid_hook;
    bad.replacement = NULL;
    CU_ASSERT_EQUAL(gdrx_got_patch(&bad, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_got_unpatch(NULL, 1), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), -ENOENT);
    CU_ASSERT_EQUAL(gdrx_got_count(NULL), -EINVAL);
    /* Nothing was registered by any of that. */
    CU_ASSERT_EQUAL(gdrx_got_count("getpid"), 0);
}

/* A library loaded after the patch is patched when dlopen returns. */
static void test_patch_later_dlopen(void)
{
    void *h;
    pid_fn call;

    CU_ASSERT_EQUAL_FATAL(gdrx_got_patch(&getpid_hook, 1), 0);
    h = hooks_dlopen("libhooks_getpid.so", RTLD_NOW | RTLD_LOCAL);
    call = (pid_fn)sym(h, "hooks_call_getpid");
    CU_ASSERT_EQUAL(call(), FAKE_PID);
    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), 0);
    CU_ASSERT_EQUAL(call(), getpid());
}

static int copy_file(const char *from, const char *to)
{
    char buf[65536];
    ssize_t n;
    int in = open(from, O_RDONLY | O_CLOEXEC), out, rc = 0;

    if (in < 0)
        return -1;
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return -1;
    }
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    if (n < 0)
        rc = -1;
    close(in);
    close(out);
    return rc;
}

/* Copy a tests/hooks library into dir under `as`. */
static bool stage(const char *dir, const char *file, const char *as)
{
    char from[PATH_MAX], to[PATH_MAX];
    int rc;

    snprintf(to, sizeof(to), "%s/%s", dir, as);
    rc = copy_file(hooks_lib_path(file, from, sizeof(from)), to);
    CU_ASSERT_EQUAL(rc, 0);
    return rc == 0;
}

static const char *const staged[] = {
    "libhooks_opener.so", "libhooks_getpid.so", "libhooks_rpath_probe.so"
};

/* Non-fatal checks only: the caller removes the staged files after. */
static void runpath_case(const char *dir)
{
    char path[PATH_MAX];
    void *(*opener_dlopen)(const char *, int);
    void *h, *probe;

    /* Control: the bare name is not on this program's search path. */
    CU_ASSERT_PTR_NULL(dlopen(staged[2], RTLD_NOW));
    CU_ASSERT_EQUAL(gdrx_got_patch(&getpid_hook, 1), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, staged[0]);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CU_ASSERT_PTR_NOT_NULL(h);
    opener_dlopen = h ? (void *(*)(const char *, int))dlsym(h, "hooks_opener_dlopen") : NULL;
    CU_ASSERT_PTR_NOT_NULL(opener_dlopen);
    if (!opener_dlopen)
        return;
    /* The opener's own dlopen slot was patched when it was loaded. */
    CU_ASSERT(gdrx_got_count("dlopen") >= 2);
    probe = opener_dlopen(staged[2], RTLD_NOW | RTLD_LOCAL);
    CU_ASSERT_PTR_NOT_NULL(probe);
    if (probe) {
        /* ... and what it loaded got patched too. */
        pid_fn call = (pid_fn)dlsym(probe, "hooks_call_getpid");
        CU_ASSERT(call && call() == FAKE_PID);
    }
    CU_ASSERT_EQUAL(gdrx_got_unpatch(&getpid_hook, 1), 0);
}

/* A library whose DT_RUNPATH is $ORIGIN dlopens a bare name found only
 * there: the dlopen hook must search as the library, not as itself. */
static void test_dlopen_keeps_caller_runpath(void)
{
    char dir[] = "/tmp/gdrx-hooks-XXXXXX", path[PATH_MAX];
    size_t n = sizeof(staged) / sizeof(staged[0]);

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    if (stage(dir, "libhooks_opener.so", staged[0]) && stage(dir, "libhooks_getpid.so", staged[1]) &&
        stage(dir, "libhooks_getpid.so", staged[2]))
        runpath_case(dir);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, staged[i]);
        unlink(path);
    }
    CU_ASSERT_EQUAL(rmdir(dir), 0);
}

/* dlsym(RTLD_NEXT) through the hooked dlsym still searches from the
 * caller.  From this program, the first definition of gdrx_got_patch after
 * it is the hook library's own; a lookup made from the hook library would
 * skip that and find none.  A dlopen()ed library gets what glibc gave it
 * before the hook. */
static void test_dlsym_next_keeps_caller(void)
{
    void *late = hooks_dlopen("libhooks_late.so", RTLD_NOW | RTLD_GLOBAL);
    void *opener = hooks_dlopen("libhooks_opener.so", RTLD_NOW | RTLD_LOCAL);
    void *(*next)(const char *) = (void *(*)(const char *))sym(opener, "hooks_opener_next");
    void *before = next("hooks_probe"), *before_missing = next("hooks_no_such_symbol");

    CU_ASSERT_PTR_NOT_NULL(before);
    CU_ASSERT_PTR_NULL(before_missing);
    CU_ASSERT_EQUAL_FATAL(gdrx_free_hooks_install(), 0); /* hooks dlsym */
    CU_ASSERT(gdrx_got_count("dlsym") >= 2);             /* us and the opener */
    CU_ASSERT_PTR_EQUAL(next("hooks_probe"), before);
    CU_ASSERT_PTR_NULL(next("hooks_no_such_symbol"));
    CU_ASSERT_PTR_EQUAL(dlsym(RTLD_NEXT, "gdrx_got_patch"), (void *)gdrx_got_patch);
    CU_ASSERT_PTR_EQUAL(dlsym(RTLD_DEFAULT, "hooks_probe"), dlsym(late, "hooks_probe"));
    CU_ASSERT_EQUAL(gdrx_free_hooks_uninstall(), 0);
    CU_ASSERT_PTR_EQUAL(dlsym(RTLD_NEXT, "gdrx_got_patch"), (void *)gdrx_got_patch);
    dlclose(opener);
    dlclose(late);
}

const struct gdrx_test_case got_patch_cases[] = {
    GDRX_TEST_CASE(test_patch_call_unpatch),
    GDRX_TEST_CASE(test_patch_idempotent),
    GDRX_TEST_CASE(test_patch_bad_input),
    GDRX_TEST_CASE(test_patch_later_dlopen),
    GDRX_TEST_CASE(test_dlopen_keeps_caller_runpath),
    GDRX_TEST_CASE(test_dlsym_next_keeps_caller),
    GDRX_TEST_END
};
