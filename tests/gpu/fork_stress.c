/*
 * fork_stress.c - fork() while other threads pin, map, copy and unpin, on a
 * real GPU (the H200 of the device tool, nvrm backend): one, then three
 * threads loop gdrx_pin / gdrx_map / a copy each way (every byte read back
 * checked against what was written) / gdrx_unmap / gdrx_unpin on a 64 KiB
 * cudaMalloc buffer each, while the main thread forks 1,000 times; each
 * child exits at once, the parent waits for it.
 *
 * SPDX-License-Identifier: MIT
 *
 *   fork_stress [FORKS]      (default 1000 per run; GDRX_BACKEND selects)
 *
 * A fork that does not return within 120 s (the hang of issue 29: prepare
 * handlers taking the library's locks out of order) ends the program with
 * "HANG" and exit status 2.  Exit status 0 only if every fork returned,
 * every child exited 0, every copy worked and every byte matched (the
 * buffers are checked through cudaMemcpy at the end too); 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gdrx.h"
#include "gpu_pattern.h"

#define BUF     (64u * 1024u)
#define MAXLEN  4096u
#define GUARD   64u
#define WATCHDOG_S 120

struct worker {
    pthread_t     tid;
    gdrx_t        g;
    void         *d;
    uint64_t      rs;
    unsigned char shadow[BUF];
    atomic_long   rounds;
    int           failed;
};

static atomic_int stop;
static volatile sig_atomic_t cur_fork, cur_threads;

static void on_alarm(int sig)
{
    char msg[160];
    (void)sig;
    int n = snprintf(msg, sizeof(msg), "HANG: fork %d with %d pinning thread(s) did not return "
                     "within %d s\n", (int)cur_fork, (int)cur_threads, WATCHDOG_S);
    if (n > 0 && write(2, msg, (size_t)n) < 0)
        _exit(2);
    _exit(2);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    unsigned char out[MAXLEN], in[MAXLEN + 2 * GUARD];

    while (!atomic_load(&stop) && !w->failed) {
        gdrx_pin_t pin;
        unsigned char *cpu = NULL;
        int rc = gdrx_pin(w->g, (uint64_t)(uintptr_t)w->d, BUF, 0, &pin);
        if (rc) {
            fprintf(stderr, "gdrx_pin: %s\n", gdrx_strerror(rc));
            w->failed = 1;
            break;
        }
        rc = gdrx_map(w->g, pin, (void **)&cpu);
        if (rc == 0) {
            size_t len = 1 + gp_rnd(&w->rs) % MAXLEN, off = gp_rnd(&w->rs) % (BUF - len + 1);
            for (size_t i = 0; i < len; i++)
                out[i] = (unsigned char)gp_rnd(&w->rs);
            rc = gdrx_copy_to_mapping(pin, cpu + off, out, len);
            if (rc == 0) {
                memcpy(w->shadow + off, out, len);
                size_t lo = off > GUARD ? off - GUARD : 0;
                size_t hi = off + len + GUARD < BUF ? off + len + GUARD : BUF;
                rc = gdrx_copy_from_mapping(pin, in, cpu + lo, hi - lo);
                if (rc == 0 && memcmp(in, w->shadow + lo, hi - lo) != 0) {
                    fprintf(stderr, "data read back differs at [%zu, %zu)\n", lo, hi);
                    w->failed = 1;
                }
            }
            int urc = gdrx_unmap(w->g, pin);
            rc = rc ? rc : urc;
        }
        int prc = gdrx_unpin(w->g, pin);
        rc = rc ? rc : prc;
        if (rc) {
            fprintf(stderr, "map/copy/unmap/unpin: %s\n", gdrx_strerror(rc));
            w->failed = 1;
        }
        atomic_fetch_add(&w->rounds, 1);
    }
    return NULL;
}

/* One run: nthreads pinning threads, forks forks.  0 if all went well. */
static int run(gdrx_t g, int nthreads, int forks)
{
    struct worker *w = calloc((size_t)nthreads, sizeof(*w));
    unsigned char *back = malloc(BUF);
    int bad_children = 0, bad = 0, done = 0;
    struct timespec t0, t1;

    if (!w || !back)
        return 1;
    atomic_store(&stop, 0);
    for (int i = 0; i < nthreads; i++) {
        w[i].g = g;
        w[i].rs = 0x9e3779b97f4a7c15ull + (uint64_t)i;
        if (cudaMalloc(&w[i].d, BUF) != cudaSuccess) {
            fprintf(stderr, "cudaMalloc failed\n");
            return 1;
        }
        for (size_t j = 0; j < BUF; j++)
            w[i].shadow[j] = (unsigned char)gp_rnd(&w[i].rs);
        if (cudaMemcpy(w[i].d, w[i].shadow, BUF, cudaMemcpyHostToDevice) != cudaSuccess)
            return 1;
    }
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
            return 1;
    for (int i = 0; i < nthreads; i++)
        while (atomic_load(&w[i].rounds) == 0 && !w[i].failed)
            sched_yield();

    cur_threads = nthreads;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (done = 0; done < forks; done++) {
        cur_fork = done + 1;
        alarm(WATCHDOG_S);
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0) {
            perror("fork");
            break;
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        bad_children += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    alarm(0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_store(&stop, 1);
    long rounds = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].tid, NULL);
        rounds += atomic_load(&w[i].rounds);
        bad |= w[i].failed;
        if (cudaMemcpy(back, w[i].d, BUF, cudaMemcpyDeviceToHost) != cudaSuccess ||
            memcmp(back, w[i].shadow, BUF) != 0) {
            fprintf(stderr, "thread %d: the buffer does not hold what was written\n", i);
            bad = 1;
        }
        cudaFree(w[i].d);
    }
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%d pinning thread(s): %d of %d forks returned in %.2f s, %d bad children, "
           "%ld pin/map/copy/unpin rounds, %s\n", nthreads, done, forks, s, bad_children, rounds,
           done == forks && !bad_children && !bad ? "ok" : "FAILED");
    free(back);
    free(w);
    return done != forks || bad_children || bad;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 ? atoi(argv[1]) : 1000;
    gdrx_t g;

    signal(SIGALRM, on_alarm);
    if (forks <= 0 || cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess) {
        fprintf(stderr, "usage: fork_stress [FORKS > 0]; needs a CUDA device\n");
        return 1;
    }
    int rc = gdrx_open(NULL, &g);
    if (rc) {
        fprintf(stderr, "gdrx_open: %s\n", gdrx_strerror(rc));
        return 1;
    }
    uint64_t backend = 0;
    gdrx_get_attr(g, GDRX_ATTR_BACKEND, &backend);
    printf("fork_stress: backend %s, %d forks per run\n",
           gdrx_backend_name((gdrx_backend_t)backend), forks);
    int bad = run(g, 1, forks);
    bad |= run(g, 3, forks);
    gdrx_close(g);
    printf("fork_stress: %s\n", bad ? "FAILED" : "all forks returned");
    return bad ? 1 : 0;
}
