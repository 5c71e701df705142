/*
 * tool_sys.c - host facts for the tools' headers, the clock, size parsing.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_sys.h"

uint64_t tool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* First line of `path` that starts with `key`, the text after ": " in buf. */
static int read_field(const char *path, const char *key, char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen(path, "r");
    int found = 0;

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof(line), f)) {
        if (key && strncmp(line, key, strlen(key)) != 0)
            continue;
        char *v = key ? strchr(line, ':') : line;
        if (!v)
            continue;
        v += key ? 1 : 0;
        v += strspn(v, " \t");
        v[strcspn(v, "\n")] = '\0';
        snprintf(buf, len, "%s", v);
        found = 1;
    }
    fclose(f);
    return found;
}

void tool_cpu_name(char *buf, size_t len)
{
    if (!read_field("/proc/cpuinfo", "model name", buf, len))
        snprintf(buf, len, "unknown CPU");
}

void tool_nvidia_kmod_version(char *buf, size_t len)
{
    if (!read_field("/sys/module/nvidia/version", NULL, buf, len))
        snprintf(buf, len, "not loaded");
}

int tool_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);

    if (errno || end == s || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    }
    if (*end || (shift && v > (~0ull >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}
