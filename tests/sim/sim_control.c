/*
 * sim_control.c - the sim's global state and its control API: failure
 * injection, configuration, counters and the lifecycle observer.
 *
 * SPDX-License-Identifier: MIT
 */
#include "sim_internal.h"
#include "sim_rm.h"

#include <errno.h>
#include <string.h>

struct sim_global sim = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .suballoc_threshold = SIM_OBJECT_ALIGN,
    .suballoc_align = 512,
    .va_reuse = 1,
};

void sim_lock(void)
{
    pthread_mutex_lock(&sim.lock);
}

void sim_unlock(void)
{
    pthread_mutex_unlock(&sim.lock);
}

/* The driver refuses every call in a fork() child of a process that
 * initialised CUDA (CUDA_ERROR_NOT_INITIALIZED, cuInit included); the
 * handlers are registered at the first successful cuInit, so a child of a
 * process that never got that far may still initialise. */
static void sim_fork_child(void)
{
    __atomic_store_n(&sim.forked, 1, __ATOMIC_RELEASE);
    sim_unlock();
}

/* A test may fork while other threads are inside the sim: the child must
 * not inherit sim.lock held by a thread that does not exist there. */
void sim_register_atfork(void)
{
    pthread_atfork(sim_lock, sim_unlock, sim_fork_child);
}

/* ---- failure injection ---- */

#define SIM_MAX_RULES 32

struct fail_rule {
    char     name[64]; /* cuda.h source name, without a _v2 suffix */
    CUresult err;
    int      count;    /* 0 = free slot */
};

/* Own lock: rules are consulted on every call, before sim.lock is taken. */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fail_rule rules[SIM_MAX_RULES];
static int nrules; /* slots in use; read without fail_lock as a fast path */

/* "cuMemAlloc_v2" and "cuMemAlloc" name the same rule. */
static int rule_name(const char *in, char out[64])
{
    size_t n = in ? strlen(in) : 0;
    if (n == 0 || n >= 64)
        return -EINVAL;
    if (n > 3 && strcmp(in + n - 3, "_v2") == 0)
        n -= 3;
    memcpy(out, in, n);
    out[n] = '\0';
    return 0;
}

static struct fail_rule *find_rule(const char *name)
{
    for (int i = 0; i < SIM_MAX_RULES; i++)
        if (rules[i].count > 0 && strcmp(rules[i].name, name) == 0)
            return &rules[i];
    return NULL;
}

int simcu_fail_next(const char *function_name, CUresult err, int count)
{
    char name[64];
    int rc = rule_name(function_name, name);
    if (rc != 0)
        return rc;
    if (err == CUDA_SUCCESS && count > 0)
        return -EINVAL;

    pthread_mutex_lock(&fail_lock);
    struct fail_rule *r = find_rule(name);
    if (!r && count > 0) {
        for (int i = 0; i < SIM_MAX_RULES && !r; i++)
            if (rules[i].count == 0)
                r = &rules[i];
        if (!r)
            rc = -ENOSPC;
        else
            __atomic_add_fetch(&nrules, 1, __ATOMIC_RELAXED);
    } else if (r && count <= 0) {
        __atomic_sub_fetch(&nrules, 1, __ATOMIC_RELAXED);
    }
    if (r) {
        memcpy(r->name, name, sizeof(name));
        r->err = err;
        r->count = count > 0 ? count : 0;
    }
    pthread_mutex_unlock(&fail_lock);
    return rc;
}

void simcu_fail_clear(void)
{
    pthread_mutex_lock(&fail_lock);
    memset(rules, 0, sizeof(rules));
    __atomic_store_n(&nrules, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fail_lock);
}

CUresult sim_injected_failure(const char *function_name)
{
    CUresult err = CUDA_SUCCESS;

    if (__atomic_load_n(&nrules, __ATOMIC_RELAXED) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fail_lock);
    struct fail_rule *r = find_rule(function_name);
    if (r) {
        err = r->err;
        if (--r->count == 0)
            __atomic_sub_fetch(&nrules, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&fail_lock);
    return err;
}

/* ---- configuration ---- */

int simcu_set_device_count(int n)
{
    int rc = 0;
    if (n < 1 || n > SIMCU_MAX_DEVICES)
        return -EINVAL;
    sim_lock();
    if (sim_is_initialized())
        rc = -EBUSY;
    else
        sim.requested_devices = n;
    sim_unlock();
    return rc;
}

int simcu_set_suballoc_threshold(size_t bytes)
{
    sim_lock();
    sim.suballoc_threshold = bytes;
    sim_unlock();
    return 0;
}

int simcu_set_suballoc_alignment(size_t bytes)
{
    if (bytes == 0 || bytes > SIM_OBJECT_ALIGN || (bytes & (bytes - 1)))
        return -EINVAL;
    sim_lock();
    sim.suballoc_align = bytes;
    sim_unlock();
    return 0;
}

int simcu_set_va_reuse(int on)
{
    sim_lock();
    sim.va_reuse = on != 0;
    sim_unlock();
    return 0;
}

CUresult simcu_free_unhooked(CUdeviceptr p)
{
    return sim_mem_free(p);
}

/* ---- counters ---- */

static long read_counter(const long *c)
{
    sim_lock();
    long v = *c;
    sim_unlock();
    return v;
}

long simcu_live_allocations(void)
{
    return read_counter(&sim.live_allocs);
}

long simcu_live_objects(void)
{
    return read_counter(&sim.live_objects);
}

/* ---- observer ---- */

int simcu_set_observer(const simcu_observer_t *observer)
{
    sim_lock();
    if (observer)
        sim.observer = *observer;
    else
        memset(&sim.observer, 0, sizeof(sim.observer));
    sim_unlock();
    return 0;
}

static simcu_observer_t current_observer(void)
{
    sim_lock();
    simcu_observer_t o = sim.observer;
    sim_unlock();
    return o;
}

void sim_notify_object_created(const struct simcu_alloc_info *obj)
{
    simcu_rm_object_created(obj);
    simcu_observer_t o = current_observer();
    if (o.object_created)
        o.object_created(obj, o.arg);
}

void sim_notify_object_destroyed(uint64_t object_id)
{
    simcu_observer_t o = current_observer();
    if (o.object_destroyed)
        o.object_destroyed(object_id, o.arg);
    simcu_rm_object_destroyed(object_id);
}

void sim_notify_alloc_created(const struct simcu_alloc_info *a)
{
    simcu_observer_t o = current_observer();
    if (o.alloc_created)
        o.alloc_created(a, o.arg);
}

void sim_notify_alloc_freed(const struct simcu_alloc_info *a)
{
    simcu_observer_t o = current_observer();
    if (o.alloc_freed)
        o.alloc_freed(a, o.arg);
}
