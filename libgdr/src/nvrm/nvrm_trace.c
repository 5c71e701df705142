/*
 * nvrm_trace.c - the ioctl wrapper patched into libcuda and the two tables
 * it keeps: VA records (sorted by base) and live source objects.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hooks/got_import.h"
#include "log.h"

struct va_record {
    uint64_t      base, length, offset;
    nvrm_handle_t h_client, h_memory;
    uint64_t      serial;
};

struct source {
    nvrm_handle_t h_client, h_memory;
    nvrm_handle_t h_parent; /* 0 when unknown */
    uint64_t      serial;
};

/* Lock order: leaf.  Never held while calling out of this file. */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t             pid;     /* the process the tables describe */
    struct va_record *recs;    /* sorted by base, non-overlapping */
    size_t            nrecs, caprecs;
    struct source    *srcs;
    size_t            nsrcs, capsrcs;
    uint64_t          next_serial;
} t;

static int installed;      /* libcuda's ioctl import points at trace_ioctl */
static void *real_ioctl_ptr;

/* Tables inherited over fork describe the parent's CUDA: start over. */
static void check_owner_locked(void)
{
    pid_t me = getpid();
    if (t.pid == me)
        return;
    free(t.recs);
    free(t.srcs);
    memset(&t, 0, sizeof(t));
    t.pid = me;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

static struct source *find_source_locked(nvrm_handle_t c, nvrm_handle_t m)
{
    for (size_t i = 0; i < t.nsrcs; i++)
        if (t.srcs[i].h_client == c && t.srcs[i].h_memory == m)
            return &t.srcs[i];
    return NULL;
}

static struct source *adopt_locked(nvrm_handle_t c, nvrm_handle_t m)
{
    struct source *s = find_source_locked(c, m);
    if (s)
        return s;
    if (grow((void **)&t.srcs, &t.capsrcs, t.nsrcs, sizeof(*t.srcs)))
        return NULL;
    s = &t.srcs[t.nsrcs++];
    s->h_client = c;
    s->h_memory = m;
    s->h_parent = 0;
    s->serial = ++t.next_serial;
    return s;
}

/* First record whose end lies above va (binary search). */
static size_t first_above_locked(uint64_t va)
{
    size_t lo = 0, hi = t.nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t.recs[mid].base + t.recs[mid].length <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void drop_range_locked(uint64_t base, uint64_t length)
{
    uint64_t end = base + length < base ? UINT64_MAX : base + length;
    size_t i = first_above_locked(base), j = i;
    while (j < t.nrecs && t.recs[j].base < end)
        j++;
    if (j > i) {
        memmove(&t.recs[i], &t.recs[j], (t.nrecs - j) * sizeof(*t.recs));
        t.nrecs -= j - i;
    }
}

static void add_record_locked(const struct nvrm_uvm_map_external *p)
{
    struct source *s = adopt_locked(p->h_client, p->h_memory);
    if (!s || p->length == 0 || p->base + p->length < p->base)
        return;
    uint64_t serial = s->serial;
    drop_range_locked(p->base, p->length);
    if (grow((void **)&t.recs, &t.caprecs, t.nrecs, sizeof(*t.recs)))
        return;
    size_t i = first_above_locked(p->base);
    memmove(&t.recs[i + 1], &t.recs[i], (t.nrecs - i) * sizeof(*t.recs));
    t.recs[i] = (struct va_record){ .base = p->base, .length = p->length,
                                    .offset = p->offset, .h_client = p->h_client,
                                    .h_memory = p->h_memory, .serial = serial };
    t.nrecs++;
}

/* RM_FREE of (c, obj): obj may be the client, a device, or memory. */
static void object_freed_locked(nvrm_handle_t c, nvrm_handle_t obj)
{
    int whole_client = obj == c;
    size_t k = 0;
    for (size_t i = 0; i < t.nsrcs; i++) {
        const struct source *s = &t.srcs[i];
        if (s->h_client == c && (whole_client || s->h_memory == obj || s->h_parent == obj))
            continue; /* dies */
        t.srcs[k++] = *s;
    }
    t.nsrcs = k;
    k = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const struct va_record *r = &t.recs[i];
        if (r->h_client == c && !find_source_locked(c, r->h_memory))
            continue;
        t.recs[k++] = *r;
    }
    t.nrecs = k;
}

/* The /dev/nvidia-uvm commands are plain numbers, so the fd is checked. */
static int is_uvm_fd(int fd)
{
    char path[40], target[32];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strcmp(target, "/dev/nvidia-uvm") == 0;
}

void nvrm_trace_observe(int fd, unsigned long req, void *arg)
{
    if (!arg)
        return;
    if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION || req == NVRM_UVM_FREE ||
        req == NVRM_UVM_UNMAP_EXTERNAL) {
        if (!is_uvm_fd(fd))
            return;
        pthread_mutex_lock(&trace_lock);
        check_owner_locked();
        if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION) {
            const struct nvrm_uvm_map_external *p = arg;
            if (p->status == NVRM_OK)
                add_record_locked(p);
        } else if (req == NVRM_UVM_FREE) {
            const struct nvrm_uvm_free *p = arg;
            drop_range_locked(p->base, p->length ? p->length : 1);
        } else {
            const struct nvrm_uvm_unmap_external *p = arg;
            drop_range_locked(p->base, p->length);
        }
        pthread_mutex_unlock(&trace_lock);
        return;
    }
    if (_IOC_TYPE(req) != NVRM_IOCTL_MAGIC)
        return;
    unsigned nr = _IOC_NR(req);
    size_t size = _IOC_SIZE(req);
    if (nr == NVRM_ESC_RM_FREE && size == sizeof(struct nvrm_rm_free)) {
        const struct nvrm_rm_free *f = arg;
        if (f->status != NVRM_OK)
            return;
        pthread_mutex_lock(&trace_lock);
        check_owner_locked();
        object_freed_locked(f->h_root, f->h_object);
        pthread_mutex_unlock(&trace_lock);
    } else if (nr == NVRM_ESC_RM_ALLOC && (size == sizeof(struct nvrm_rm_alloc) ||
                                           size == sizeof(struct nvrm_rm_alloc_rights))) {
        const struct nvrm_rm_alloc *a = arg;
        nvrm_status_t st = size == sizeof(struct nvrm_rm_alloc)
                               ? a->status
                               : ((const struct nvrm_rm_alloc_rights *)arg)->status;
        if (st != NVRM_OK || a->h_class != NVRM_CLASS_MEMORY_LOCAL)
            return;
        pthread_mutex_lock(&trace_lock);
        check_owner_locked();
        struct source *s = adopt_locked(a->h_root, a->h_new);
        if (s)
            s->h_parent = a->h_parent;
        pthread_mutex_unlock(&trace_lock);
    }
}

/* The only requests nvrm_trace_observe() looks at, tested on the request
 * number alone: most of libcuda's ioctls (RM_CONTROL above all) leave the
 * wrapper after these few compares, without touching errno or a lock. */
static inline int trace_wants(unsigned long req)
{
    if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION || req == NVRM_UVM_FREE ||
        req == NVRM_UVM_UNMAP_EXTERNAL)
        return 1;
    if (_IOC_TYPE(req) != NVRM_IOCTL_MAGIC)
        return 0;
    return _IOC_NR(req) == NVRM_ESC_RM_FREE || _IOC_NR(req) == NVRM_ESC_RM_ALLOC;
}

/* What libcuda's `ioctl` slot points at once installed. */
static int trace_ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);

    int (*real)(int, unsigned long, ...) = NULL;
    void *p = __atomic_load_n(&real_ioctl_ptr, __ATOMIC_ACQUIRE);
    if (!p)
        p = dlsym(RTLD_DEFAULT, "ioctl");
    memcpy(&real, &p, sizeof(p));
    int rc = real(fd, req, arg);
    if (rc == 0 && trace_wants(req)) {
        int saved = errno;
        nvrm_trace_observe(fd, req, arg);
        errno = saved;
    }
    return rc;
}

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static int registered;                     /* under install_lock */
static enum nvrm_trace_since since = NVRM_TRACE_OFF; /* under install_lock */

/* Patch libcuda's ioctl import (only libcuda's, only once it is loaded);
 * the previous slot value is what trace_ioctl calls. */
static int register_locked(void)
{
    if (registered)
        return 0;
    int rc = gdrx_got_patch_import("libcuda.so", "ioctl", (void *)trace_ioctl, &real_ioctl_ptr);
    if (rc == 0 || rc == -EEXIST)
        registered = 1;
    return rc == -EEXIST ? 0 : rc;
}

int nvrm_trace_install(void)
{
    int rc = 0;

    pthread_mutex_lock(&install_lock);
    if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
        rc = register_locked();
        if (registered) {
            if (since == NVRM_TRACE_OFF)
                since = NVRM_TRACE_SINCE_OPEN; /* deferred (GDRX_NVRM_TRACE=0) */
            __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&install_lock);
    return rc;
}

int nvrm_trace_installed(void)
{
    return __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
}

enum nvrm_trace_since nvrm_trace_since(void)
{
    pthread_mutex_lock(&install_lock);
    enum nvrm_trace_since s = since;
    pthread_mutex_unlock(&install_lock);
    return s;
}

/* A fork while another thread holds trace_lock would leave it held in the
 * child, whose next traced ioctl would hang.  Registered at load, before
 * the backend registers its own handler, so that fork takes the backend's
 * lock first and this leaf lock second (prepare handlers run in reverse
 * order of registration), as everywhere else. */
static void trace_fork_prepare(void) { pthread_mutex_lock(&trace_lock); }
static void trace_fork_release(void) { pthread_mutex_unlock(&trace_lock); }

/*
 * Watch libcuda's ioctls from the moment libgdrx is loaded, not from the
 * first gdrx_open: CUDA sub-allocates small buffers from chunks it maps
 * early (at context creation, at the first allocation), and a chunk
 * mapped before the trace is unknown to it for good.  If libcuda is not
 * loaded yet, the dlopen hook patches it when it comes.  Cost for a
 * process that never uses the nvrm backend: a few compares per libcuda
 * ioctl, plus one small record per CUDA memory object.
 * GDRX_NVRM_TRACE=0 defers it to the first nvrm gdrx_open (memory
 * mapped before that then needs GDRX_NVRM_IPC=1, docs/nvrm.md).
 * Builds that compile this file into a test program define
 * NVRM_TRACE_NO_LOAD_HOOK: the program's copy then waits to be asked.
 */
__attribute__((constructor)) static void nvrm_trace_at_load(void)
{
    (void)pthread_atfork(trace_fork_prepare, trace_fork_release, trace_fork_release);
#ifndef NVRM_TRACE_NO_LOAD_HOOK
    const char *v = getenv("GDRX_NVRM_TRACE");
    if (v && strcmp(v, "0") == 0)
        return;
    pthread_mutex_lock(&install_lock);
    (void)register_locked(); /* on failure, nvrm_trace_install() retries */
    if (registered)
        since = NVRM_TRACE_SINCE_LOAD;
    pthread_mutex_unlock(&install_lock);
#endif
}

int nvrm_trace_lookup(uint64_t va, struct nvrm_trace_hit *out)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&trace_lock);
    check_owner_locked();
    size_t i = first_above_locked(va);
    if (i < t.nrecs && t.recs[i].base <= va) {
        const struct va_record *r = &t.recs[i];
        *out = (struct nvrm_trace_hit){ .base = r->base, .length = r->length,
                                         .offset = r->offset, .h_client = r->h_client,
                                         .h_memory = r->h_memory, .serial = r->serial };
        rc = 0;
    }
    pthread_mutex_unlock(&trace_lock);
    return rc;
}

uint64_t nvrm_trace_adopt(nvrm_handle_t h_client, nvrm_handle_t h_memory)
{
    pthread_mutex_lock(&trace_lock);
    check_owner_locked();
    struct source *s = adopt_locked(h_client, h_memory);
    uint64_t serial = s ? s->serial : 0;
    pthread_mutex_unlock(&trace_lock);
    return serial;
}

int nvrm_trace_source_live(nvrm_handle_t h_client, nvrm_handle_t h_memory, uint64_t serial)
{
    pthread_mutex_lock(&trace_lock);
    check_owner_locked();
    struct source *s = find_source_locked(h_client, h_memory);
    int live = s && s->serial == serial;
    pthread_mutex_unlock(&trace_lock);
    return live;
}
