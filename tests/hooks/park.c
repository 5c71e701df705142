/*
 * park.c - see park.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "park.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

enum park { PARK_IDLE, PARK_WANTED, PARK_PARKED, PARK_GO };

static void *const *entries;
static size_t n_entries;
static int state;         /* enum park, atomic */
static unsigned parked;

static void on_park(int sig, siginfo_t *si, void *ucv)
{
    const uint8_t *ip = (const uint8_t *)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
    int want = PARK_WANTED;

    (void)sig;
    (void)si;
    for (size_t i = 0; i < n_entries; i++) {
        const uint8_t *e = entries[i];
        if (ip > e && ip < e + 8 &&
            __atomic_compare_exchange_n(&state, &want, PARK_PARKED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != PARK_GO)
                sched_yield();
            __atomic_store_n(&state, PARK_IDLE, __ATOMIC_RELEASE);
            return;
        }
    }
}

int park_init(void *const *e, size_t n)
{
    struct sigaction sa = { .sa_sigaction = on_park, .sa_flags = SA_SIGINFO | SA_RESTART };

    entries = e;
    n_entries = n;
    return sigaction(SIGURG, &sa, NULL) ? -errno : 0;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int park_one(const pthread_t *threads, size_t n, unsigned budget_ms)
{
    int want = PARK_WANTED;
    double end = now_ms() + budget_ms;

    __atomic_store_n(&state, PARK_WANTED, __ATOMIC_RELEASE);
    for (size_t i = 0; now_ms() < end; i++) {
        pthread_kill(threads[i % n], SIGURG);
        sched_yield();
        if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == PARK_PARKED)
            break;
    }
    if (__atomic_compare_exchange_n(&state, &want, PARK_IDLE, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return 0;
    parked++; /* PARKED: the exchange found a thread parked */
    return 1;
}

void park_release(int was_parked)
{
    if (!was_parked)
        return;
    __atomic_store_n(&state, PARK_GO, __ATOMIC_RELEASE);
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != PARK_IDLE)
        sched_yield();
}

int park_busy(void)
{
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) != PARK_IDLE;
}

unsigned park_count(void)
{
    return parked;
}
