/*
 * tool_clock.h - the benchmark clock: the CPU's time-stamp counter,
 * calibrated against CLOCK_MONOTONIC_RAW, or that clock itself where the
 * counter is not invariant (or not x86-64/aarch64).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_CLOCK_H
#define GDRX_TOOL_CLOCK_H

#include <stdint.h>
#include <time.h>

struct tool_clock {
    double ns_per_tick;
    int    counter;   /* 1: hardware counter; 0: clock_gettime ticks (ns) */
    char   name[48];  /* e.g. "TSC 2100.0 MHz (invariant)" */
};

/* Calibrate (about 20 ms).  Never fails: falls back to clock_gettime. */
void tool_clock_init(struct tool_clock *c);

#if defined(__x86_64__)
/* lfence keeps the timed work from starting before (or finishing after)
 * the counter is read.  rdtscp waits for the earlier loads but not for the
 * earlier stores: the mfence before it waits until they left the core
 * (out of the store and write-combining buffers), so a batch of stores
 * and sfences is timed until its last store is on its way. */
static inline uint64_t tool_tsc_begin(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) :: "memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t tool_tsc_end(void)
{
    uint32_t lo, hi, aux;
    __asm__ __volatile__("mfence\n\trdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) :: "memory");
    return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
static inline uint64_t tool_tsc_begin(void)
{
    uint64_t v;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) :: "memory");
    return v;
}
#define tool_tsc_end tool_tsc_begin
#else
static inline uint64_t tool_tsc_begin(void) { return 0; }
#define tool_tsc_end tool_tsc_begin
#endif

static inline uint64_t tool_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tool_clock_begin(const struct tool_clock *c)
{
    return c->counter ? tool_tsc_begin() : tool_clock_mono_ns();
}

static inline uint64_t tool_clock_end(const struct tool_clock *c)
{
    return c->counter ? tool_tsc_end() : tool_clock_mono_ns();
}

static inline double tool_clock_ns(const struct tool_clock *c, uint64_t ticks)
{
    return (double)ticks * c->ns_per_tick;
}

#endif /* GDRX_TOOL_CLOCK_H */
