/*
 * tool_clock.c - calibration of the time-stamp counter (see tool_clock.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "tool_clock.h"

/* Only a counter that ticks at one rate whatever the core's frequency and
 * sleep state measures time; x86 says so in /proc/cpuinfo. */
static int counter_invariant(void)
{
#if defined(__x86_64__)
    char line[4096];
    int constant = 0, nonstop = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#elif defined(__aarch64__)
    return 1; /* the generic timer is architecturally constant */
#else
    return 0;
#endif
}

void tool_clock_init(struct tool_clock *c)
{
    memset(c, 0, sizeof(*c));
    c->ns_per_tick = 1.0;
    snprintf(c->name, sizeof(c->name), "CLOCK_MONOTONIC_RAW");
    if (!counter_invariant())
        return;
    /* The median of three 7 ms windows: a preemption between the two reads
     * of one window skews only that window. */
    double hz3[3], best;
    for (int i = 0; i < 3; i++) {
        uint64_t n0 = tool_clock_mono_ns(), t0 = tool_tsc_begin(), n1, t1;
        do
            n1 = tool_clock_mono_ns();
        while (n1 - n0 < 7000000);
        t1 = tool_tsc_end();
        hz3[i] = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    }
    best = hz3[0] > hz3[1] ? (hz3[1] > hz3[2] ? hz3[1] : (hz3[0] > hz3[2] ? hz3[2] : hz3[0]))
                           : (hz3[0] > hz3[2] ? hz3[0] : (hz3[1] > hz3[2] ? hz3[2] : hz3[1]));
    if (best < 1e6)
        return;
    c->counter = 1;
    c->ns_per_tick = 1e9 / best;
#if defined(__x86_64__)
    snprintf(c->name, sizeof(c->name), "TSC %.1f MHz", best / 1e6);
#else
    snprintf(c->name, sizeof(c->name), "CNTVCT %.1f MHz", best / 1e6);
#endif
}
