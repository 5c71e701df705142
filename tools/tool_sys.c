/*
 * tool_sys.c - host facts for the tools' headers, the clock, CPU pinning.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>
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

int tool_pci_numa_node(const char *busid)
{
    char path[128], lower[64], val[32];
    size_t i;

    for (i = 0; busid[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)(busid[i] >= 'A' && busid[i] <= 'F' ? busid[i] + 32 : busid[i]);
    lower[i] = '\0';
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", lower);
    if (!read_field(path, NULL, val, sizeof(val)))
        return -1;
    return atoi(val);
}

/* Parse a sysfs CPU list ("0-3,8,10-11") into set. */
static void cpulist_parse(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        s = *end == ',' ? end + 1 : end;
        if (*s == '\n')
            break;
    }
}

int tool_cpu_node(int cpu)
{
    char path[96], list[1024];
    cpu_set_t set;

    for (int node = 0; node < 1024; node++) {
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
        if (!read_field(path, NULL, list, sizeof(list))) {
            if (node > 64)
                break;
            continue;
        }
        cpulist_parse(list, &set);
        if (CPU_ISSET(cpu, &set))
            return node;
    }
    return -1;
}

int tool_pin_cpu(int cpu, int node, int *chosen, char *why, size_t whylen)
{
    cpu_set_t allowed, want;
    char path[96], list[1024];

    *chosen = -1;
    if (cpu == -2)
        return 0;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
        snprintf(why, whylen, "sched_getaffinity: %s", strerror(errno));
        return -1;
    }
    if (cpu < 0) {
        CPU_ZERO(&want);
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
        if (node >= 0 && read_field(path, NULL, list, sizeof(list)))
            cpulist_parse(list, &want);
        CPU_AND(&want, &want, &allowed);
        if (CPU_COUNT(&want) == 0)
            want = allowed;
        for (int c = CPU_SETSIZE - 1; c >= 0 && cpu < 0; c--)
            if (CPU_ISSET(c, &want))
                cpu = c;
    } else if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
        snprintf(why, whylen, "CPU %d is not one this process may run on "
                 "(see taskset -p %d)", cpu, (int)getpid());
        return -1;
    }
    CPU_ZERO(&want);
    CPU_SET(cpu, &want);
    if (sched_setaffinity(0, sizeof(want), &want) != 0) {
        snprintf(why, whylen, "sched_setaffinity(CPU %d): %s", cpu, strerror(errno));
        return -1;
    }
    *chosen = cpu;
    return 0;
}
