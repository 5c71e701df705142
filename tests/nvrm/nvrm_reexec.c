/*
 * nvrm_reexec.c - run a test program under the RM-ioctl emulator: re-exec
 * it with the emulator preloaded (nvrm_reexec.h).  Uses neither libgdrx
 * nor CUDA, so suites of other libraries (tests/gdrapi) link it too.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_reexec.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvrm_emu.h"

#pragma weak nvrm_emu_present

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

int nvt_find_built(const char *rel, char *out, size_t size)
{
    const char *bd = getenv("GDRX_TEST_BUILDDIR");
    char exe[4096], dir[4096];

    if (bd && *bd && snprintf(out, size, "%s/tests/nvrm/%s", bd, rel) < (int)size &&
        readable(out))
        return 0;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(dir, sizeof(dir), "%s", dirname(exe));
    /* tests/nvrm/X or (libtool) tests/nvrm/.libs/X; a program of another
     * test directory (tests/gdrapi) finds tests/nvrm beside its own. */
    static const char *const where[] = { "%s/%s", "%s/../%s", "%s/.libs/%s", "%s/../nvrm/%s",
                                         "%s/../../nvrm/%s" };
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        int len = snprintf(out, size, where[i], dir, rel);
        if (len > 0 && len < (int)size && readable(out))
            return 0;
    }
    return -1;
}

static int find_emulator(char *out, size_t size)
{
    if (nvt_find_built(".libs/libnvrm_emu.so", out, size) == 0)
        return 0;
    return nvt_find_built("libnvrm_emu.so", out, size);
}

int nvt_under_emulator(char **argv)
{
    char emu[4096], preload[12288];

    if (nvrm_emu_present && nvrm_emu_present())
        return 0;
    if (getenv("NVRM_TEST_REEXEC")) {
        fprintf(stderr, "the RM emulator is not loaded although LD_PRELOAD names it\n");
        return -1;
    }
    if (find_emulator(emu, sizeof(emu)) != 0) {
        fprintf(stderr, "libnvrm_emu.so not found (set GDRX_TEST_BUILDDIR)\n");
        return -1;
    }
    /* A sanitized library in an LD_PRELOAD list needs its runtime first. */
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof(preload), "%s%s%s%s%s", rt && *rt ? rt : "", rt && *rt ? ":" : "",
             emu, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("NVRM_TEST_REEXEC", "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "re-exec under the emulator failed: %s\n", strerror(errno));
    return -1;
}

int nvt_use_nvrm(char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return -1;
    setenv("GDRX_BACKEND", "nvrm", 1);
    return 0;
}
