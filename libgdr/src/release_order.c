/*
 * release_order.c - an ALLOC event waits for the FREE events of the
 * releases in progress that overlap it (release_order.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "release_order.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "lock_order.h"

#define MAX_RELEASES 64

struct release {
    uint64_t  lo, hi;
    pthread_t owner;
    pid_t     pid; /* 0: free slot; another pid: a fork parent's, gone */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER; /* a slot was cleared */
static struct release slots[MAX_RELEASES];                /* under lock */

static bool in_progress(const struct release *r, pid_t self)
{
    return r->pid == self;
}

int gdrx_release_order_begin(uint64_t lo, uint64_t hi)
{
    pid_t self = getpid();

    gdrx_mutex_lock(&lock, GDRX_LOCK_RELEASES);
    for (;;) {
        for (int i = 0; i < MAX_RELEASES; i++) {
            if (in_progress(&slots[i], self))
                continue;
            slots[i] = (struct release){ .lo = lo, .hi = hi, .owner = pthread_self(), .pid = self };
            gdrx_mutex_unlock(&lock, GDRX_LOCK_RELEASES);
            return i;
        }
        /* Each release in progress ends without this lock's help. */
        pthread_cond_wait(&changed, &lock);
    }
}

void gdrx_release_order_end(int handle)
{
    if (handle < 0 || handle >= MAX_RELEASES)
        return;
    gdrx_mutex_lock(&lock, GDRX_LOCK_RELEASES);
    slots[handle].pid = 0;
    pthread_cond_broadcast(&changed);
    gdrx_mutex_unlock(&lock, GDRX_LOCK_RELEASES);
}

static bool overlapped(uint64_t lo, uint64_t hi, pid_t self)
{
    for (int i = 0; i < MAX_RELEASES; i++) {
        const struct release *r = &slots[i];
        if (in_progress(r, self) && r->lo < hi && r->hi > lo &&
            !pthread_equal(r->owner, pthread_self()))
            return true;
    }
    return false;
}

void gdrx_release_order_wait(uint64_t lo, uint64_t hi)
{
    pid_t self = getpid();

    gdrx_mutex_lock(&lock, GDRX_LOCK_RELEASES);
    while (overlapped(lo, hi, self))
        pthread_cond_wait(&changed, &lock);
    gdrx_mutex_unlock(&lock, GDRX_LOCK_RELEASES);
}

void gdrx_release_order_fork_lock(void)
{
    gdrx_mutex_lock(&lock, GDRX_LOCK_RELEASES);
}

void gdrx_release_order_fork_unlock(void)
{
    gdrx_mutex_unlock(&lock, GDRX_LOCK_RELEASES);
}
