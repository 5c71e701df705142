/*
 * tt.c - helpers of the benchmark tools' suite (tt.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tt.h"

char tt_out[1 << 18];

const char *tt_builddir(void)
{
    const char *b = getenv("GDRX_TEST_BUILDDIR");
    return b && *b ? b : ".";
}

int tt_run(const char *fmt, ...)
{
    char spec[4096], cmd[8192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(spec, sizeof(spec), fmt, ap);
    va_end(ap);
    char *bar = strchr(spec, '|');
    const char *env = "", *rest = spec;
    if (bar) {
        *bar = '\0';
        env = spec;
        rest = bar + 1;
    }
    size_t len = strlen(rest);
    int quiet = len > 12 && strcmp(rest + len - 12, " 2>/dev/null") == 0;
    int n = snprintf(cmd, sizeof(cmd), "env %s '%s/tools/'%s%s", env, tt_builddir(), rest,
                     quiet ? "" : " 2>&1");
    if (n < 0 || (size_t)n >= sizeof(cmd))
        return -1;
    int st = gdrx_test_capture(cmd, tt_out, sizeof(tt_out));
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void tt_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/gdrx-tt.XXXXXX");
    if (!mkdtemp(buf))
        buf[0] = '\0';
}

void tt_rmdir(const char *dir)
{
    char cmd[512];
    if (!dir[0] || strncmp(dir, "/tmp/gdrx-tt.", 13) != 0)
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

int tt_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

const char *tt_slurp(const char *path)
{
    static char buf[1 << 18];
    FILE *f = fopen(path, "r");
    size_t n = 0;

    buf[0] = '\0';
    if (f) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}
