/*
 * ipoint.c - parking threads at interleaving points (see ipoint.h).
 *
 * SPDX-License-Identifier: MIT
 *
 * One mutex and one condition variable (on CLOCK_MONOTONIC, so a clock
 * step cannot stretch a timeout) guard a small table of slots; a slot
 * lives from ipoint_arm() until its parked thread has left, or until a
 * release or reset finds it unused.  Threads passing a point while no
 * name is armed read one atomic counter and return.
 */
#include "ipoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* libgdrx's side (libgdr/src/ipoint.h), exported in test builds. */
void gdrx_test_ipoint_hook_set(void (*fn)(const char *name));

#define IPOINT_SLOTS    16
#define IPOINT_NAME_MAX 64

enum ipoint_state {
    IPOINT_FREE,
    IPOINT_ARMED,    /* waiting for a thread */
    IPOINT_PARKED,   /* a thread waits in ipoint_hook() */
    IPOINT_RELEASED, /* told to go; the thread frees the slot as it leaves */
    IPOINT_OVERSTAY, /* left by itself: kept to tell ipoint_release() */
};

struct ipoint_slot {
    char              name[IPOINT_NAME_MAX];
    enum ipoint_state state;
};

static pthread_once_t     ipoint_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t    ipoint_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t     ipoint_cond;
static struct ipoint_slot ipoint_slots[IPOINT_SLOTS];
/* Slots not FREE: the hook's lock-free early exit. */
static atomic_uint        ipoint_in_use;

static void ipoint_init(void)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ipoint_cond, &attr);
    pthread_condattr_destroy(&attr);
}

static struct timespec ipoint_deadline(unsigned timeout_ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* The slot of name in one of the states of mask (1 << state); lock held. */
static struct ipoint_slot *ipoint_find(const char *name, unsigned mask)
{
    for (int i = 0; i < IPOINT_SLOTS; i++) {
        struct ipoint_slot *s = &ipoint_slots[i];
        if (s->state != IPOINT_FREE && (mask & (1u << s->state)) &&
            strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

static void ipoint_free_slot(struct ipoint_slot *s)
{
    s->state = IPOINT_FREE;
    atomic_fetch_sub_explicit(&ipoint_in_use, 1, memory_order_relaxed);
}

/* Runs in the thread that reached a point, wherever it is in libgdrx or
 * the transport, with that place's locks held. */
static void ipoint_hook(const char *name)
{
    struct ipoint_slot *s;
    struct timespec until;
    int rc = 0;

    if (atomic_load_explicit(&ipoint_in_use, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&ipoint_lock);
    s = ipoint_find(name, 1u << IPOINT_ARMED);
    if (s == NULL) {
        pthread_mutex_unlock(&ipoint_lock);
        return;
    }
    s->state = IPOINT_PARKED;
    pthread_cond_broadcast(&ipoint_cond);
    until = ipoint_deadline(IPOINT_PARK_MAX_MS);
    while (s->state == IPOINT_PARKED && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ipoint_cond, &ipoint_lock, &until);
    if (s->state == IPOINT_PARKED) {
        /* Nobody released it: go on rather than hang the case; the
         * test's ipoint_release() reports it. */
        fprintf(stderr, "ipoint: %s: not released within %u ms, going on\n", name,
                IPOINT_PARK_MAX_MS);
        s->state = IPOINT_OVERSTAY;
    } else {
        ipoint_free_slot(s);
    }
    pthread_cond_broadcast(&ipoint_cond);
    pthread_mutex_unlock(&ipoint_lock);
}

int ipoint_arm(const char *name)
{
    struct ipoint_slot *s = NULL;
    int rc = -ENOSPC;

    if (name == NULL || name[0] == '\0' || strlen(name) >= IPOINT_NAME_MAX)
        return -EINVAL;
    pthread_once(&ipoint_once, ipoint_init);
    pthread_mutex_lock(&ipoint_lock);
    if (ipoint_find(name, (1u << IPOINT_ARMED) | (1u << IPOINT_PARKED)) != NULL) {
        rc = -EBUSY;
    } else {
        for (int i = 0; i < IPOINT_SLOTS && s == NULL; i++)
            if (ipoint_slots[i].state == IPOINT_FREE)
                s = &ipoint_slots[i];
        if (s != NULL) {
            strcpy(s->name, name);
            s->state = IPOINT_ARMED;
            atomic_fetch_add_explicit(&ipoint_in_use, 1, memory_order_release);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&ipoint_lock);
    /* Installed by the first arm, kept: with nothing armed it returns at
     * once. */
    if (rc == 0)
        gdrx_test_ipoint_hook_set(ipoint_hook);
    return rc;
}

int ipoint_wait(const char *name, unsigned timeout_ms)
{
    struct timespec until = ipoint_deadline(timeout_ms);
    int rc = 0;

    pthread_once(&ipoint_once, ipoint_init);
    pthread_mutex_lock(&ipoint_lock);
    while (ipoint_find(name, 1u << IPOINT_PARKED) == NULL && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ipoint_cond, &ipoint_lock, &until);
    rc = ipoint_find(name, 1u << IPOINT_PARKED) != NULL ? 0 : -ETIMEDOUT;
    pthread_mutex_unlock(&ipoint_lock);
    return rc;
}

int ipoint_release(const char *name)
{
    struct ipoint_slot *s;
    int rc = -ENOENT;

    pthread_once(&ipoint_once, ipoint_init);
    pthread_mutex_lock(&ipoint_lock);
    s = ipoint_find(name, (1u << IPOINT_ARMED) | (1u << IPOINT_PARKED) |
                              (1u << IPOINT_OVERSTAY));
    if (s != NULL) {
        if (s->state == IPOINT_PARKED) {
            s->state = IPOINT_RELEASED;
            rc = 0;
        } else {
            rc = s->state == IPOINT_OVERSTAY ? -ETIMEDOUT : -ENOENT;
            ipoint_free_slot(s);
        }
        pthread_cond_broadcast(&ipoint_cond);
    }
    pthread_mutex_unlock(&ipoint_lock);
    return rc;
}

void ipoint_reset(void)
{
    pthread_once(&ipoint_once, ipoint_init);
    pthread_mutex_lock(&ipoint_lock);
    for (int i = 0; i < IPOINT_SLOTS; i++) {
        struct ipoint_slot *s = &ipoint_slots[i];
        if (s->state == IPOINT_PARKED)
            s->state = IPOINT_RELEASED;
        else if (s->state == IPOINT_ARMED || s->state == IPOINT_OVERSTAY)
            ipoint_free_slot(s);
    }
    pthread_cond_broadcast(&ipoint_cond);
    pthread_mutex_unlock(&ipoint_lock);
}
