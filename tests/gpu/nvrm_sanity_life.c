/*
 * nvrm_sanity_life.c - the H200 sanity program's checks around a mapping's
 * life (free then realloc, fork) and the copy latencies.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvrm_sanity.h"

/* In a child: read [cpu, cpu+n) of the old mapping; exit 3 if it shows
 * pattern `seed` (the new allocation's data), 0 if not; a fault ends it
 * with SIGSEGV/SIGBUS. */
static int probe_old_mapping(const volatile uint8_t *cpu, size_t n, uint32_t seed)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        size_t same = 0;
        for (size_t i = 0; i < n; i++)
            same += cpu[i] == gp_byte(i, seed);
        _exit(same == n ? 3 : 0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 1000 + WEXITSTATUS(status);
}

int check_free_realloc(size_t n)
{
    CUdeviceptr keep, p, q;
    gdrx_pin_t pin, pin2;
    void *cpu = NULL, *cpu2 = NULL;
    int before = g_failures;
    uint8_t *h = malloc(n);

    /* A neighbour keeps a small buffer's RM object alive, so the address
     * comes back inside the same object. */
    if (!h || cu_ok(cuMemAlloc(&keep, n), "cuMemAlloc") || cu_ok(cuMemAlloc(&p, n), "cuMemAlloc"))
        return -1;
    if (gdrx_pin(g_ctx, p, n, 0, &pin) || gdrx_map(g_ctx, pin, &cpu)) {
        fail("free/realloc %zu: pin or map failed", n);
        return -1;
    }
    fill_pattern(h, n, 90);
    gdrx_copy_to_mapping(pin, cpu, h, n);
    if (gk_verify_write(p, n, 90, 0) != 0)
        fail("free/realloc %zu: first write not seen by the GPU", n);

    cu_ok(cuMemFree(p), "cuMemFree");
    if (cu_ok(cuMemAlloc(&q, n), "cuMemAlloc"))
        return -1;
    fill_pattern(h, n, 91);
    cu_ok(cuMemcpyHtoD(q, h, n), "cuMemcpyHtoD");

    uint8_t byte;
    int rc = gdrx_copy_from_mapping(pin, &byte, cpu, 1);
    if (rc != -ESTALE)
        fail("free/realloc %zu: copy through the old pin returned %d, want -ESTALE", n, rc);
    struct gdrx_pin_info info;
    if (gdrx_pin_query(g_ctx, pin, &info) != 0 || info.stale != 1)
        fail("free/realloc %zu: old pin not reported stale", n);
    int probe = probe_old_mapping(cpu, n, 91);
    if (probe == 1003)
        fail("free/realloc %zu: the old mapping shows the new allocation's data", n);
    else if (probe != SIGSEGV && probe != SIGBUS && probe != 1000)
        fail("free/realloc %zu: probe of the old mapping failed (%d)", n, probe);

    if (gdrx_pin(g_ctx, q, n, 0, &pin2) || gdrx_map(g_ctx, pin2, &cpu2)) {
        fail("free/realloc %zu: pin or map of the new allocation failed", n);
    } else {
        uint8_t *got = malloc(n);
        gdrx_copy_from_mapping(pin2, got, cpu2, n);
        if (memcmp(got, h, n) != 0)
            fail("free/realloc %zu: the new pin does not show the new data", n);
        free(got);
        gdrx_unpin(g_ctx, pin2);
    }
    gdrx_unpin(g_ctx, pin);
    cuMemFree(q);
    cuMemFree(keep);
    free(h);
    if (g_failures == before)
        printf("ok   free then realloc %-13zu %s address; old pin stale; old mapping %s\n", n,
               q == p ? "same" : "other",
               probe == SIGSEGV ? "faults (SIGSEGV)" : probe == SIGBUS ? "faults (SIGBUS)"
                                                                      : "shows no new data");
    return g_failures == before ? 0 : -1;
}

/* The fork child's exit status: bit 0 unmap, bit 1 map, bit 2 open
 * differed from the documented result (docs/nvrm.md, fork); 8 when
 * gdrx_open hung.  Set before the calls that may hang. */
static volatile sig_atomic_t child_verdict;

static void child_timeout(int sig)
{
    (void)sig;
    static const char msg[] = "     fork child: gdrx_open did not return in 30 s\n";
    ssize_t w = write(1, msg, sizeof(msg) - 1);
    (void)w;
    _exit(child_verdict | 8);
}

/* In the child of fork(): the documented behaviour, exactly. */
static void fork_child(gdrx_pin_t pin)
{
    void *cpu2 = NULL;
    gdrx_t g2;

    /* unmap and map reach the backend, which refuses another process's
     * pin before any ioctl or CUDA call. */
    int r_unmap = gdrx_unmap(g_ctx, pin);
    int r_map = gdrx_map(g_ctx, pin, &cpu2);
    printf("     fork child: unmap %d (%s), map %d (%s) on the parent's pin\n", r_unmap,
           gdrx_strerror(r_unmap), r_map, gdrx_strerror(r_map));
    child_verdict = (r_unmap != -ECHILD) | ((r_map != -ECHILD) << 1) | 4;
    fflush(NULL);
    /* CUDA refuses every call in a forked child (cuDeviceGetCount:
     * CUDA_ERROR_NOT_INITIALIZED), so gdrx_open fails with -ENODEV. */
    signal(SIGALRM, child_timeout);
    alarm(30);
    struct gdrx_open_params params;
    gdrx_open_params_init(&params);
    params.backend = GDRX_BACKEND_NVRM;
    int r_open = gdrx_open(&params, &g2);
    alarm(0);
    printf("     fork child: gdrx_open %d (%s)\n", r_open,
           r_open ? gdrx_strerror(r_open) : "opened, although CUDA should refuse a forked child");
    if (r_open == 0)
        gdrx_close(g2);
    if (r_open == -ENODEV)
        child_verdict &= ~4;
    fflush(NULL);
    _exit(child_verdict);
}

int check_fork(void)
{
    CUdeviceptr p;
    gdrx_pin_t pin;
    void *cpu = NULL;
    int before = g_failures;
    size_t n = 1u << 20;
    uint8_t *h = malloc(n), *got = malloc(n);

    if (cu_ok(cuMemAlloc(&p, n), "cuMemAlloc") || gdrx_pin(g_ctx, p, n, 0, &pin) ||
        gdrx_map(g_ctx, pin, &cpu)) {
        fail("fork: setup failed");
        return -1;
    }
    fill_pattern(h, n, 95);
    gdrx_copy_to_mapping(pin, cpu, h, n);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        fork_child(pin);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        fail("fork: the child crashed or could not run (status %#x)", status);
    else if (WEXITSTATUS(status) != 0)
        fail("fork: the child saw other results than documented (-ECHILD, -ECHILD, -ENODEV):"
             "%s%s%s%s", WEXITSTATUS(status) & 1 ? " unmap" : "",
             WEXITSTATUS(status) & 2 ? " map" : "", WEXITSTATUS(status) & 4 ? " open" : "",
             WEXITSTATUS(status) & 8 ? " (open hung)" : "");
    /* The parent's mapping and data are intact. */
    if (gdrx_copy_from_mapping(pin, got, cpu, n) != 0 || memcmp(got, h, n) != 0)
        fail("fork: the parent's mapping changed");
    fill_pattern(h, n, 96);
    gdrx_copy_to_mapping(pin, cpu, h, n);
    if (gk_verify_write(p, n, 96, 0) != 0)
        fail("fork: the parent's writes after fork are not seen by the GPU");
    gdrx_unpin(g_ctx, pin);
    cuMemFree(p);
    free(h);
    free(got);
    if (g_failures == before)
        printf("ok   fork: child got -ECHILD for the parent's pin and -ENODEV from gdrx_open; "
               "parent unaffected\n");
    return g_failures == before ? 0 : -1;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum op { GDRX_TO, GDRX_FROM, CU_HTOD, CU_DTOH };

/* Median (and p10/p90) in microseconds of `iters` single copies. */
static void time_op(enum op op, gdrx_pin_t pin, void *cpu, CUdeviceptr p, uint8_t *buf,
                    size_t n, int iters, double q[3])
{
    double *t = malloc(sizeof(*t) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        double t0 = now_ns();
        switch (op) {
        case GDRX_TO: gdrx_copy_to_mapping(pin, cpu, buf, n); break;
        case GDRX_FROM: gdrx_copy_from_mapping(pin, buf, cpu, n); break;
        case CU_HTOD: cuMemcpyHtoD(p, buf, n); break;
        case CU_DTOH: cuMemcpyDtoH(buf, p, n); break;
        }
        t[i] = (now_ns() - t0) / 1e3;
    }
    qsort(t, (size_t)iters, sizeof(*t), cmp_double);
    q[0] = t[iters / 10];
    q[1] = t[iters / 2];
    q[2] = t[iters * 9 / 10];
    free(t);
}

void measure_latency(void)
{
    static const size_t ns[] = { 8, 4096 };
    CUdeviceptr p;
    gdrx_pin_t pin;
    void *cpu = NULL;
    uint8_t buf[4096];
    uint64_t variant = 0;

    if (cu_ok(cuMemAlloc(&p, 65536), "cuMemAlloc") || gdrx_pin(g_ctx, p, 65536, 0, &pin) ||
        gdrx_map(g_ctx, pin, &cpu)) {
        fail("latency: setup failed");
        return;
    }
    memset(buf, 0x5a, sizeof(buf));
    gdrx_get_attr(g_ctx, GDRX_ATTR_COPY_TO_VARIANT, &variant);
    printf("latency (us; median [p10, p90]; pageable host buffer for cuMemcpy; copy_to "
           "variant %s):\n", gdrx_copy_variant_name((gdrx_copy_variant_t)variant));
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        double a[3], b[3], c[3], d[3];
        time_op(GDRX_TO, pin, cpu, p, buf, ns[i], 20000, a);
        time_op(CU_HTOD, pin, cpu, p, buf, ns[i], 2000, b);
        time_op(GDRX_FROM, pin, cpu, p, buf, ns[i], 5000, c);
        time_op(CU_DTOH, pin, cpu, p, buf, ns[i], 2000, d);
        printf("  %5zu B  H2D: gdrx_copy_to_mapping %7.3f [%.3f, %.3f]   cuMemcpyHtoD %7.3f "
               "[%.3f, %.3f]\n", ns[i], a[1], a[0], a[2], b[1], b[0], b[2]);
        printf("  %5zu B  D2H: gdrx_copy_from_mapping %6.3f [%.3f, %.3f]   cuMemcpyDtoH %7.3f "
               "[%.3f, %.3f]\n", ns[i], c[1], c[0], c[2], d[1], d[0], d[2]);
    }
    gdrx_unpin(g_ctx, pin);
    cuMemFree(p);
}
