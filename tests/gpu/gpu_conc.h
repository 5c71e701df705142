/*
 * gpu_conc.h - what the concurrency programs on a real GPU share
 * (graph_alias.c, fork_conc.c; run by concurrency.sh): a watchdog that
 * turns a hang into a FAIL line instead of a run that never ends, the
 * result line the script collects, and a CUDA call check.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every program ends with exactly one line
 *   RESULT <case> PASS|FAIL key=value ...
 * (the watchdog prints it too, with "hang=..."), and exits 0 on PASS, 1 on
 * FAIL, 2 on a hang.
 */
#ifndef GDRX_GPU_CONC_H
#define GDRX_GPU_CONC_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

static const char *gc_case = "?";
/* The whole line the SIGALRM handler writes, made before alarm() is set:
 * the handler may only call async-signal-safe functions. */
static char gc_hang_line[320];

static void gc_on_alarm(int sig)
{
    (void)sig;
    if (write(1, gc_hang_line, strlen(gc_hang_line)) < 0)
        _exit(2);
    _exit(2);
}

/* From now on, SECONDS until the step described by fmt counts as hung;
 * gc_watch(0, NULL) disarms.  alarm() is per process, so one step at a
 * time: the main thread's fork, copy or launch. */
__attribute__((format(printf, 2, 3), unused))
static void gc_watch(unsigned seconds, const char *fmt, ...)
{
    char what[200] = "";
    va_list ap;

    if (seconds == 0) {
        alarm(0);
        return;
    }
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
    }
    alarm(0);
    snprintf(gc_hang_line, sizeof(gc_hang_line),
             "RESULT %s FAIL hang=\"%s did not return within %u s\"\n", gc_case, what, seconds);
    signal(SIGALRM, gc_on_alarm);
    alarm(seconds);
}

/* A CUDA call that must work: says which failed (with the program's
 * case) and returns 1, else 0. */
#define GC_CU(call) gc_cu_check((call), #call, __LINE__)

static inline int gc_cu_check(CUresult r, const char *what, int line)
{
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    fprintf(stderr, "%s: line %d: %s failed: %d %s\n", gc_case, line, what, (int)r,
            name ? name : "");
    return 1;
}

#endif /* GDRX_GPU_CONC_H */
