/*
 * info_ucx.c - the UCX on this machine (the ucx_info on PATH and the
 * libucs.so.0 the dynamic linker finds) and whether the gdrx transport
 * loads into it, asked the way a user would: `ucx_info -d` lists it or not.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "info.h"

#define UCX_OUT_MAX (1 << 20)

/* The first executable `name` on PATH, into buf; 0 or -1. */
static int which(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");

    for (const char *p = path ? path : ""; *p;) {
        size_t l = strcspn(p, ":");
        snprintf(buf, len, "%.*s/%s", (int)l, p, name);
        if (l && access(buf, X_OK) == 0)
            return 0;
        p += l + (p[l] == ':');
    }
    return -1;
}

/* stdout and stderr of a command, NUL-terminated in a malloc'ed buffer. */
static char *run(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    char *out = malloc(UCX_OUT_MAX);
    size_t got = 0, n;

    if (!f || !out) {
        if (f)
            pclose(f);
        free(out);
        return NULL;
    }
    while (got + 1 < UCX_OUT_MAX && (n = fread(out + got, 1, UCX_OUT_MAX - 1 - got, f)) > 0)
        got += n;
    out[got] = '\0';
    pclose(f);
    return out;
}

/* "1.13.1" from `ucx_info -v` ("# Version 1.13.1" before 1.16, "# Library
 * version: 1.16.0" since). */
static void ucx_version(const char *out, char *buf, size_t len)
{
    static const char *const keys[] = { "# Version ", "# Library version: " };

    snprintf(buf, len, "unknown");
    for (size_t i = 0; i < 2; i++) {
        const char *v = strstr(out, keys[i]);
        if (v) {
            v += strlen(keys[i]);
            snprintf(buf, len, "%.*s", (int)strcspn(v, " \n"), v);
            return;
        }
    }
}

/* UCX's module directory: "ucx" next to the libucs.so.0 that ucx_info
 * loads, as the dynamic linker reports it (LD_TRACE_LOADED_OBJECTS, what
 * ldd uses), so that nothing of UCX is loaded into this process. */
static int module_dir(const char *exe, char *buf, size_t len)
{
    char cmd[600];
    const char *key = "libucs.so.0 => ";

    snprintf(cmd, sizeof(cmd), "LD_TRACE_LOADED_OBJECTS=1 '%s' 2>&1", exe);
    char *out = run(cmd), *p = out ? strstr(out, key) : NULL;
    int rc = -1;
    if (p && p[strlen(key)] == '/') {
        p += strlen(key);
        size_t n = strcspn(p, " \n");
        char *slash = memrchr(p, '/', n);
        if (slash && snprintf(buf, len, "%.*sucx", (int)(slash + 1 - p), p) < (int)len)
            rc = 0;
    }
    free(out);
    return rc;
}

static const char *const preload_fix =
    "LD_PRELOAD=" GDRX_UCX_MODULEDIR "/libuct_gdrx.so.0 (with Open MPI: mpirun -x "
    "LD_PRELOAD=...); UCX 1.22 and newer also load it from their module directory "
    "(ucx_plugin/README.md)";

void info_ucx(struct info_report *r)
{
    char exe[512], cmd[600], ver[64], dir[512], mod[600];
    struct stat st;
    const char *pre = getenv("LD_PRELOAD");
    int preloaded = pre && strstr(pre, "libuct_gdrx");

    if (which("ucx_info", exe, sizeof(exe)) != 0) {
        info_add(r, "ucx", -1, "ucx_info", "ucx_info", "not found on PATH (UCX is only needed "
                 "for the MPI transport; Debian: apt-get install ucx-utils)");
        return;
    }
    snprintf(cmd, sizeof(cmd), "'%s' -v 2>&1", exe);
    char *out = run(cmd);
    ucx_version(out ? out : "", ver, sizeof(ver));
    free(out);
    info_add(r, "ucx", -1, "ucx_info", "ucx_info", "%s", exe);
    info_add(r, "ucx", -1, "version", "version", "%s", ver);
    int installed = 0;
    if (module_dir(exe, dir, sizeof(dir)) == 0) {
        snprintf(mod, sizeof(mod), "%s/libuct_gdrx.so.0", dir);
        installed = stat(mod, &st) == 0;
        info_add(r, "ucx", -1, "module_dir", "module dir", "%s (libuct_gdrx.so.0 %s)", dir,
                 installed ? "installed there" : "not there");
    }
    info_add(r, "ucx", -1, "preloaded", "LD_PRELOAD", "%s", preloaded ? pre : "no libuct_gdrx");

    snprintf(cmd, sizeof(cmd), "'%s' -d 2>&1", exe);
    out = run(cmd);
    if (!out) {
        info_add(r, "ucx", -1, "gdrx", "gdrx transport", "unknown (could not run %s -d)", exe);
        return;
    }
    const char *wrong = strstr(out, "gdrx: libuct_gdrx was built for UCX");
    int listed = strstr(out, "Transport: gdrx\n") != NULL;
    info_add(r, "ucx", -1, "gdrx", "gdrx transport", "%s", listed ? "loads (ucx_info -d lists "
             "it)" : "not loaded (ucx_info -d does not list it)");
    if (listed) {
        free(out);
        return;
    }
    if (wrong)
        info_problem(r, "UCX", "rebuild gdrx against this UCX (./configure --with-ucx=PREFIX, "
                     "see configure --help) and reinstall the plugin", "%.*s", (int)strcspn(wrong, "\n"),
                     wrong);
    else if (preloaded || installed)
        info_problem(r, "UCX", preloaded ? "UCX_LOG_LEVEL=debug ucx_info -d shows why UCX drops "
                     "it; check that LD_PRELOAD names the libuct_gdrx.so.0 built for this UCX" :
                     preload_fix, "libuct_gdrx is %s, but UCX %s does not list the gdrx "
                     "transport", preloaded ? "preloaded" : "in UCX's module directory", ver);
    else
        info_problem(r, "UCX", "make install (puts libuct_gdrx.so.0 in " GDRX_UCX_MODULEDIR
                     "), then " "LD_PRELOAD=" GDRX_UCX_MODULEDIR "/libuct_gdrx.so.0",
                     "the gdrx transport is neither installed in UCX %s's module directory "
                     "nor preloaded", ver);
    free(out);
}
