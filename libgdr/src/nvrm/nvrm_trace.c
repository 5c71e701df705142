/*
 * nvrm_trace.c - the ioctl wrapper patched into libcuda and the tables it
 * keeps: VA records (sorted by base), live source objects and the RM
 * objects (clients, devices) whose free kills the memory under them.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../ipoint.h" /* not tests/harness/ipoint.h, on some suites' paths */
#include "lock_order.h"
#include "log.h"
#include "nvrm_hmap.h"
#include "nvrm_layout.h"

struct va_record {
    uint64_t      base, length, offset;
    nvrm_handle_t h_client, h_memory;
    uint64_t      serial;
};

/*
 * Lock order: leaf (TRACE in lock_order.h), taken in every traced ioctl.
 * Never held while calling out of this file.
 *
 * fork(): not taken by the fork handlers.  libcuda makes its ioctls under
 * a lock of its own (an allocating thread holds it from cuMemAlloc's start
 * to its end), so a thread waits for this lock while holding libcuda's.
 * Held from libgdrx's prepare handler on, it deadlocked every fork where a
 * prepare handler that runs after libgdrx's (UCX's cache purge) calls CUDA
 * while another thread is inside cuMemAlloc/cuMemFree (issue 43, defect
 * 7).  Nothing here waits while holding it, so the forking thread's own
 * ioctls in such a handler take it as any thread does.  The child, where
 * it may be held by a thread that does not exist there, starts with a new
 * lock and empty tables (nvrm_trace_fork_child).
 * srcs:  (client, memory) -> a = serial, b = parent handle (0 if unknown).
 * conts: (client, client) and (client, device) -> a = the serial counter's
 *        value when it was last freed (0: never).  A source is dead once
 *        its client or parent was freed after it got its serial, so an
 *        RM_FREE of a whole device or client costs one hash update too.
 */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t             pid;     /* the process the tables describe */
    struct va_record *recs;    /* sorted by base, non-overlapping */
    size_t            nrecs, caprecs;
    struct nvrm_hmap  srcs, conts;
    uint64_t          next_serial;
} t;

/* What libcuda's slot held before we patched it: the call we chain to. */
static void *chain_ioctl;
static int installed;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* Tables inherited over fork describe the parent's CUDA: start over.  Set
 * aside, not freed: a parent thread may have been changing them when the
 * process was copied (the fork handlers do not take trace_lock). */
static void forget_tables(void)
{
    static struct va_record *set_aside; /* reachable, for leak checkers */
    set_aside = t.recs;
    (void)set_aside;
    memset(&t, 0, sizeof(t));
    t.pid = getpid();
}

static void check_owner_locked(void)
{
    if (t.pid != getpid())
        forget_tables();
}

static int container_freed_after(nvrm_handle_t c, nvrm_handle_t h, uint64_t serial)
{
    const struct nvrm_hmap_entry *e = nvrm_hmap_get(&t.conts, nvrm_hmap_key(c, h));
    return e && e->a > serial;
}

static int source_live_locked(nvrm_handle_t c, nvrm_handle_t m, uint64_t serial)
{
    const struct nvrm_hmap_entry *e = nvrm_hmap_get(&t.srcs, nvrm_hmap_key(c, m));
    if (!e || e->a != serial)
        return 0;
    return !container_freed_after(c, c, serial) &&
           !(e->b && container_freed_after(c, (nvrm_handle_t)e->b, serial));
}

/* Remember container (c, h) so that its RM_FREE is noticed. */
static int watch_container_locked(nvrm_handle_t c, nvrm_handle_t h)
{
    int is_new;
    return nvrm_hmap_put(&t.conts, nvrm_hmap_key(c, h), &is_new) ? 0 : -ENOMEM;
}

/* The live source (c, m), made live with a new serial when unknown, dead,
 * or `fresh` (an RM_ALLOC creates a new object whatever we knew). */
static struct nvrm_hmap_entry *adopt_locked(nvrm_handle_t c, nvrm_handle_t m, int fresh)
{
    int is_new;
    if (watch_container_locked(c, c))
        return NULL;
    struct nvrm_hmap_entry *e = nvrm_hmap_put(&t.srcs, nvrm_hmap_key(c, m), &is_new);
    if (e && (is_new || fresh || !source_live_locked(c, m, e->a))) {
        e->a = ++t.next_serial;
        e->b = 0;
    }
    return e;
}

static int grow_recs(void)
{
    if (t.nrecs < t.caprecs)
        return 0;
    size_t ncap = t.caprecs ? t.caprecs * 2 : 64;
    void *p = realloc(t.recs, ncap * sizeof(*t.recs));
    if (!p)
        return -ENOMEM;
    t.recs = p;
    t.caprecs = ncap;
    return 0;
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

/* r: the record without its serial, read from the request at the shape's
 * offsets (nvrm_layout.h). */
static void add_record_locked(struct va_record r)
{
    if (r.length == 0 || r.base + r.length < r.base)
        return;
    const struct nvrm_hmap_entry *s = adopt_locked(r.h_client, r.h_memory, 0);
    if (!s)
        return;
    r.serial = s->a;
    drop_range_locked(r.base, r.length);
    if (grow_recs())
        return;
    size_t i = first_above_locked(r.base);
    memmove(&t.recs[i + 1], &t.recs[i], (t.nrecs - i) * sizeof(*t.recs));
    t.recs[i] = r;
    t.nrecs++;
}

/* RM_FREE of (c, obj): obj may be memory, a device, or the client itself.
 * Records of the memory die lazily (nvrm_trace_lookup checks the serial). */
static void object_freed_locked(nvrm_handle_t c, nvrm_handle_t obj)
{
    uint64_t key = nvrm_hmap_key(c, obj);
    nvrm_hmap_del(&t.srcs, key);
    struct nvrm_hmap_entry *e = nvrm_hmap_get(&t.conts, key);
    if (e)
        e->a = ++t.next_serial;
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

/* The map request's status, hClient and hMemory, at the active row's
 * offsets: 0, or -1 if they cannot be trusted to lie inside the request.
 * libcuda's request is as long as its branch lays it out, which the ioctl
 * number does not say (UVM's commands are plain numbers); a row not yet
 * proven for this driver (a wrong one: 256 GPUs against a 32-GPU request)
 * would read past it, into whatever follows, or fault.  So until the open
 * self-test passed, the three words are read with a read that cannot
 * fault: process_vm_readv on this process fails with EFAULT instead. */
static int uvm_map_words(const void *arg, const struct nvrm_uvm_map_shape *m, uint32_t w[3])
{
    const size_t off[3] = { m->status_off, m->h_client_off, m->h_memory_off };

    if (nvrm_layout_active_proven()) {
        for (int i = 0; i < 3; i++)
            w[i] = nvrm_wire_u32(arg, off[i]);
        return 0;
    }
    struct iovec local[3], remote[3];
    for (int i = 0; i < 3; i++) {
        local[i] = (struct iovec){ .iov_base = &w[i], .iov_len = sizeof(w[i]) };
        remote[i] = (struct iovec){ .iov_base = (uint8_t *)arg + off[i],
                                    .iov_len = sizeof(w[i]) };
    }
    /* where the kernel refuses it (ENOSYS, EPERM), nothing is recorded and
     * the self-test refuses the unproven branch, naming the step */
    return process_vm_readv(getpid(), local, 3, remote, 3, 0) == (ssize_t)sizeof(uint32_t[3])
               ? 0 : -1;
}

static void observe_uvm(int fd, unsigned long req, void *arg)
{
    if (!is_uvm_fd(fd))
        return;
    gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
    check_owner_locked();
    if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION) {
        /* The per-GPU array's length differs between branches: the tail
         * is where the running driver's layout puts it. */
        const struct nvrm_layout *l = nvrm_layout_active();
        const struct nvrm_uvm_map_shape *m = l ? l->uvm_map : NULL;
        const struct nvrm_uvm_map_external *p = arg; /* base, length, offset: all branches */
        uint32_t w[3]; /* status, hClient, hMemory */
        if (m && uvm_map_words(arg, m, w) == 0 && w[0] == NVRM_OK)
            add_record_locked((struct va_record){
                .base = p->base, .length = p->length, .offset = p->offset,
                .h_client = w[1], .h_memory = w[2] });
    } else if (req == NVRM_UVM_FREE) {
        const struct nvrm_uvm_free *p = arg;
        drop_range_locked(p->base, p->length ? p->length : 1);
    } else {
        const struct nvrm_uvm_unmap_external *p = arg;
        drop_range_locked(p->base, p->length);
    }
    gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
}

/* The dma-buf export the calling thread asked CUDA for (see
 * nvrm_trace_capture_begin); NULL on every other thread and at all other
 * times, so libcuda's own exports are ignored. */
static __thread struct nvrm_export_seen *capture;

void nvrm_trace_capture_begin(struct nvrm_export_seen *seen)
{
    memset(seen, 0, sizeof(*seen));
    capture = seen;
}

void nvrm_trace_capture_end(void)
{
    capture = NULL;
}

static void observe_export(unsigned nr, size_t size, void *arg)
{
    struct nvrm_export_seen *seen = capture;
    if (!seen)
        return;
    if (nr == NVRM_ESC_IOCTL_XFER) {
        const struct nvrm_ioctl_xfer *x = arg;
        if (size != sizeof(*x) || x->cmd != NVRM_ESC_EXPORT_TO_DMABUF || !x->ptr)
            return;
        arg = (void *)(uintptr_t)x->ptr;
        size = x->size;
    }
    /* The handle arrays move with the branch (nvrm_layout.h); the head
     * (fd, hClient, totalObjects, numObjects) does not. */
    const struct nvrm_layout *l = nvrm_layout_active();
    const struct nvrm_dmabuf_shape *d = l ? l->dmabuf : NULL;
    const struct nvrm_export_dmabuf *e = arg;
    if (!d || size != d->size || nvrm_wire_u32(arg, d->status_off) != NVRM_OK ||
        e->num_objects == 0)
        return;
    seen->count++;
    seen->num_objects = e->num_objects;
    seen->h_client = e->h_client;
    seen->h_memory = nvrm_wire_u32(arg, d->handles_off);
    seen->offset = nvrm_wire_u64(arg, d->offsets_off);
    seen->size = nvrm_wire_u64(arg, d->sizes_off);
}

void nvrm_trace_observe(int fd, unsigned long req, void *arg)
{
    if (!arg)
        return;
    if (req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION || req == NVRM_UVM_FREE ||
        req == NVRM_UVM_UNMAP_EXTERNAL) {
        observe_uvm(fd, req, arg);
        return;
    }
    if (_IOC_TYPE(req) != NVRM_IOCTL_MAGIC)
        return;
    unsigned nr = _IOC_NR(req);
    size_t size = _IOC_SIZE(req);
    if (nr == NVRM_ESC_EXPORT_TO_DMABUF || nr == NVRM_ESC_IOCTL_XFER) {
        observe_export(nr, size, arg);
    } else if (nr == NVRM_ESC_RM_FREE && size == sizeof(struct nvrm_rm_free)) {
        const struct nvrm_rm_free *f = arg;
        if (f->status != NVRM_OK)
            return;
        gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
        check_owner_locked();
        object_freed_locked(f->h_root, f->h_object);
        gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
    } else if (nr == NVRM_ESC_RM_ALLOC && (size == sizeof(struct nvrm_rm_alloc) ||
                                           size == sizeof(struct nvrm_rm_alloc_rights))) {
        const struct nvrm_rm_alloc *a = arg;
        nvrm_status_t st = size == sizeof(struct nvrm_rm_alloc)
                               ? a->status
                               : ((const struct nvrm_rm_alloc_rights *)arg)->status;
        if (st != NVRM_OK || a->h_class != NVRM_CLASS_MEMORY_LOCAL)
            return;
        gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
        check_owner_locked();
        /* The parent first: its entry must exist before the source's
         * serial is taken, so a later free of it is ordered after. */
        if (watch_container_locked(a->h_root, a->h_parent) == 0) {
            struct nvrm_hmap_entry *s = adopt_locked(a->h_root, a->h_new, 1);
            if (s)
                s->b = a->h_parent;
        }
        gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
    }
}

/* The only requests nvrm_trace_observe() looks at, tested on the request
 * number alone: an ioctl that is neither UVM nor RM leaves after two
 * compares, RM_CONTROL (libcuda's most frequent) after five, without
 * touching errno or a lock. */
_Static_assert(NVRM_ESC_RM_ALLOC == NVRM_ESC_RM_FREE + 2, "one compare finds FREE and ALLOC");
_Static_assert(NVRM_UVM_MAP_EXTERNAL_ALLOCATION < 128 && NVRM_UVM_FREE < 128 &&
                   NVRM_UVM_UNMAP_EXTERNAL < 128, "UVM commands are small numbers");
static inline int trace_wants(unsigned long req)
{
    if (__builtin_expect(req < 128, 0)) /* UVM's commands are plain numbers */
        return req == NVRM_UVM_MAP_EXTERNAL_ALLOCATION || req == NVRM_UVM_FREE ||
               req == NVRM_UVM_UNMAP_EXTERNAL;
    if (_IOC_TYPE(req) != NVRM_IOCTL_MAGIC)
        return 0;
    unsigned nr = _IOC_NR(req);
    return ((nr - NVRM_ESC_RM_FREE) | 2u) == 2u || /* FREE or ALLOC */
           ((nr == NVRM_ESC_EXPORT_TO_DMABUF || nr == NVRM_ESC_IOCTL_XFER) && capture);
}

/* What libcuda's `ioctl` slot points at once installed.  It calls what
 * the slot held before, so an earlier patcher still sees every call. */
static int trace_ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);

    int (*next)(int, unsigned long, ...) = ioctl; /* only if the patcher broke its contract */
    void *p = __atomic_load_n(&chain_ioctl, __ATOMIC_ACQUIRE);
    if (p)
        memcpy(&next, &p, sizeof(p));
    int rc = next(fd, req, arg);
    if (rc == 0 && trace_wants(req)) {
        int saved = errno;
        /* Inside libcuda's call, under its lock, before trace_lock: a
         * fork in this window must not wait for this thread (defect 7). */
        GDRX_IPOINT("nvrm_trace.observe");
        nvrm_trace_observe(fd, req, arg);
        errno = saved;
    }
    return rc;
}

int nvrm_trace_install(nvrm_patch_slot_fn patch)
{
    if (!patch)
        return -EINVAL;
    gdrx_mutex_lock(&install_lock, GDRX_LOCK_TRACE_INSTALL);
    int rc = 0;
    if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
        rc = patch("libcuda.so", "ioctl", (void *)trace_ioctl, &chain_ioctl);
        /* -EEXIST: a previous install of ours, chain_ioctl already set */
        if (rc == -EEXIST && __atomic_load_n(&chain_ioctl, __ATOMIC_ACQUIRE))
            rc = 0;
        if (rc == 0)
            __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
    }
    gdrx_mutex_unlock(&install_lock, GDRX_LOCK_TRACE_INSTALL);
    return rc;
}

int nvrm_trace_installed(void)
{
    return __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
}

/* The install lock only (trace_lock: see its comment); the GOT patcher's
 * lock is only ever taken under install_lock (nvrm_trace_install), so no
 * thread holds it now. */
void nvrm_trace_fork_lock(void)
{
    gdrx_mutex_lock(&install_lock, GDRX_LOCK_TRACE_INSTALL);
}

void nvrm_trace_fork_unlock(void)
{
    gdrx_mutex_unlock(&install_lock, GDRX_LOCK_TRACE_INSTALL);
}

/* One thread here: trace_lock may be held by a parent thread that was
 * inside libcuda's ioctl when the process was copied; a new lock, and the
 * tables set aside (they describe the parent's CUDA, and may be half
 * changed). */
void nvrm_trace_fork_child(void)
{
    gdrx_mutex_child_reset(&trace_lock, GDRX_LOCK_TRACE);
    forget_tables();
    gdrx_mutex_unlock(&install_lock, GDRX_LOCK_TRACE_INSTALL);
}

int nvrm_trace_lookup(uint64_t va, struct nvrm_trace_hit *out)
{
    int rc = -ENOENT;
    gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
    check_owner_locked();
    size_t i = first_above_locked(va);
    if (i < t.nrecs && t.recs[i].base <= va) {
        const struct va_record *r = &t.recs[i];
        if (source_live_locked(r->h_client, r->h_memory, r->serial)) {
            *out = (struct nvrm_trace_hit){ .base = r->base, .length = r->length,
                                             .offset = r->offset, .h_client = r->h_client,
                                             .h_memory = r->h_memory, .serial = r->serial };
            rc = 0;
        } else {
            drop_range_locked(r->base, r->length); /* its object was freed */
        }
    }
    gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
    return rc;
}

uint64_t nvrm_trace_adopt(nvrm_handle_t h_client, nvrm_handle_t h_memory)
{
    gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
    check_owner_locked();
    const struct nvrm_hmap_entry *s = adopt_locked(h_client, h_memory, 0);
    uint64_t serial = s ? s->a : 0;
    gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
    return serial;
}

int nvrm_trace_source_live(nvrm_handle_t h_client, nvrm_handle_t h_memory, uint64_t serial)
{
    gdrx_mutex_lock(&trace_lock, GDRX_LOCK_TRACE);
    check_owner_locked();
    int live = source_live_locked(h_client, h_memory, serial);
    gdrx_mutex_unlock(&trace_lock, GDRX_LOCK_TRACE);
    return live;
}
