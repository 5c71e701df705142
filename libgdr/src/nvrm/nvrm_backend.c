/*
 * nvrm_backend.c - the nvrm backend's ops table: BAR1 mappings of CUDA
 * memory through the NVIDIA driver's own RM ioctls (no extra kernel module).
 *
 * SPDX-License-Identifier: MIT
 *
 * State is per process, shared by every gdrx context: one RM client (RM
 * clients belong to the process that made them), one table of duplicated
 * objects so pins of one memory object share our duplicate and, where
 * their windows fit, its BAR1 views, and the ioctl trace (installed by the
 * first open that passes the driver version checks).  Contexts only count
 * references.
 *
 * fork(): a child inherits the parent's contexts, pins and mappings, but
 * the RM would refuse the parent's client to it, and freeing anything
 * would harm the parent.  Every op on a context or pin made by another
 * process returns -ECHILD and touches nothing.  A child that opens a new
 * context gets a client of its own (the inherited state is set aside
 * without any RM call).
 *
 * Lock order (lock_order.h): the core's pin lock -> the fork guard ->
 * `lock` below (BACKEND) -> the trace's install lock -> the trace's leaf
 * lock.  CUDA calls made under `lock` (IPC handle, VMM export) only reach
 * the trace lock through libcuda's ioctls; libcuda is loaded before `lock`
 * is taken.  fork() takes `lock` and the install lock in that order
 * through the ops table's fork_lock (fork.c), not the leaf lock, which
 * libcuda's threads take inside their own lock (nvrm_trace.c says why);
 * the backend registers no fork handler itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "cuda_loader.h"
#include "hooks/got_import.h"
#include "lock_order.h"
#include "log.h"
#include "nvrm_client.h"
#include "nvrm_cuda.h"
#include "nvrm_discover.h"
#include "nvrm_object.h"
#include "nvrm_rm.h"
#include "nvrm_selftest.h"
#include "nvrm_trace.h"

struct nvrm_state {
    struct nvrm_state  *abandoned_next;
    pid_t               pid;
    int                 refs;     /* open contexts */
    struct nvrm_client  client;
    struct nvrm_object *objects;  /* findable objects */
};

struct nvrm_bctx {
    pid_t pid;
};

struct nvrm_pin {
    pid_t               pid;
    struct nvrm_object *obj;
    uint64_t            off, len; /* the pinned window, in the object */
    struct nvrm_view   *view;     /* while mapped ... */
    uint8_t            *cpu;      /* ... at this address */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvrm_state *state;
/* States inherited over fork stay reachable (leak checkers) but unused. */
static struct nvrm_state *abandoned;

/* The library's fork handlers: the backend's locks, in the order, so that
 * none is left held in the child by another thread; the trace's leaf lock
 * is reset in the child instead (nvrm_trace.c). */
static void nvrm_fork_lock(void)
{
    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    nvrm_trace_fork_lock();
}

static void nvrm_fork_unlock(void)
{
    nvrm_trace_fork_unlock();
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
}

static void nvrm_fork_child(void)
{
    nvrm_trace_fork_child();
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
}

static int nvrm_prove(struct nvrm_bctx *b, const struct gdrx_cuda *cu,
                      const struct nvrm_cuda *cx, const struct nvrm_layout *layout);
static void nvrm_close(void *bctx);

static int nvrm_open(void **out)
{
    const struct gdrx_cuda *cu = NULL;
    const struct nvrm_cuda *cx = NULL;
    int rc;

    /* libcuda first, with no lock held (the loader's lock ranks above
     * `lock`; a CUDA-less process fails here, changing nothing) */
    rc = gdrx_cuda_get(&cu);
    if (rc == 0)
        rc = nvrm_cuda_get(&cx);
    if (rc)
        return rc;
    struct nvrm_bctx *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->pid = getpid();

    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    if (state && state->pid != b->pid) {
        gdrx_info("nvrm: new process (fork): setting the parent's RM client aside");
        nvrm_client_abandon(&state->client);
        nvrm_object_abandon_all(state->objects);
        state->abandoned_next = abandoned;
        abandoned = state;
        state = NULL;
    }
    if (!state) {
        struct nvrm_state *s = calloc(1, sizeof(*s));
        rc = s ? nvrm_client_open(&s->client, cu, cx) : -ENOMEM;
        if (rc) {
            free(s);
            gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
            free(b);
            return rc;
        }
        s->pid = b->pid;
        state = s;
        /* Only now: the driver version passed nvrm_client_open's checks
         * (the trace reads the layouts of its row in nvrm_layout.c) and
         * libcuda is loaded. */
        nvrm_layout_set_active(s->client.layout);
        rc = nvrm_trace_install(gdrx_got_patch_import);
        if (rc)
            gdrx_warn("nvrm: cannot watch libcuda's ioctls (%s); only GDRX_NVRM_IPC=1 and "
                      "exported VMM memory can be pinned", strerror(-rc));
        else
            gdrx_info("nvrm: CUDA memory mapped from now on is traced");
    }
    state->refs++;
    const struct nvrm_layout *layout = state->client.layout;
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    /* A branch checked only against its headers proves itself first
     * (once per process; nvrm_selftest.h), with no lock held: the test
     * goes through the ops, which lock. */
    const char *force = secure_getenv("GDRX_NVRM_SELFTEST"); /* also on a validated branch */
    if (layout->status != NVRM_BRANCH_VALIDATED || (force && strcmp(force, "1") == 0)) {
        rc = nvrm_prove(b, cu, cx, layout);
        if (rc) {
            nvrm_close(b);
            return rc;
        }
    }
    *out = b;
    return 0;
}

/* gdrx_probe: would nvrm_open work?  An RM client of its own, made and
 * freed again: no trace, no fork handlers, no state kept, and no lock (a
 * fork during the probe must not leave `lock` held in the child before
 * any fork handler exists). */
static int nvrm_probe(void)
{
    const struct gdrx_cuda *cu = NULL;
    const struct nvrm_cuda *cx = NULL;
    struct nvrm_client client;

    int rc = gdrx_cuda_get(&cu);
    if (rc == 0)
        rc = nvrm_cuda_get(&cx);
    if (rc == 0)
        rc = nvrm_client_open(&client, cu, cx);
    if (rc == 0)
        nvrm_client_close(&client);
    return rc;
}

static void nvrm_close(void *bctx)
{
    struct nvrm_bctx *b = bctx;

    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    if (b->pid == getpid() && state && state->pid == b->pid && --state->refs == 0) {
        struct nvrm_state *s = state;
        /* Pins are gone (the core unpins before closing); objects left
         * here would be leaks, freed with the client anyway. */
        while (s->objects) {
            struct nvrm_object *o = s->objects;
            gdrx_warn("nvrm: object 0x%x still referenced at close", o->h_memory);
            o->refs = 1;
            nvrm_object_put(&s->client, &s->objects, o);
        }
        nvrm_client_close(&s->client);
        free(s);
        state = NULL;
    }
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    free(b);
}

/* An op on a context or pin another process made: -ECHILD, said once per
 * process at error level, since the usual cause is fork() and the fix is
 * not in the call that failed.  Called without `lock`. */
static int refuse_inherited(pid_t owner)
{
    static pid_t told;
    pid_t me = getpid();

    if (__atomic_exchange_n(&told, me, __ATOMIC_RELAXED) != me)
        gdrx_err("nvrm: this context or pin belongs to process %d, not to this one (%d): after "
                 "fork() a child can use neither its parent's gdrx handles nor CUDA itself "
                 "(CUDA refuses every call in a forked child, so gdrx_open fails there with "
                 "-ENODEV); use gdrx and CUDA in the parent, or exec a new program "
                 "(docs/nvrm.md, fork)", (int)owner, (int)me);
    return -ECHILD;
}

/* The shared state if the caller is the process that made bctx. */
static struct nvrm_state *state_for(pid_t owner)
{
    if (owner != getpid() || !state || state->pid != owner)
        return NULL;
    return state;
}

/* Take the lock for an op on pin bp of bctx: 0 with *s set and the lock
 * held, or -EINVAL / -ECHILD (another process's pin) with it released. */
static int lock_pin(const struct nvrm_bctx *b, const struct gdrx_backend_pin *bp,
                    struct nvrm_state **s)
{
    const struct nvrm_pin *p = bp->priv;

    if (!p)
        return -EINVAL;
    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    *s = state_for(b->pid);
    if (!*s || p->pid != b->pid) {
        gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
        return refuse_inherited(p->pid);
    }
    return 0;
}

static int nvrm_pin(void *bctx, const struct gdrx_pin_req *req, struct gdrx_backend_pin *bp)
{
    struct nvrm_bctx *b = bctx;
    struct nvrm_source src;
    struct nvrm_object *obj = NULL;
    struct nvrm_gpu *g;

    struct nvrm_pin *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    struct nvrm_state *s = state_for(b->pid);
    int rc = s ? 0 : -ECHILD;
    if (rc == 0)
        rc = nvrm_client_gpu(&s->client, req->device, &g);
    if (rc == 0)
        rc = nvrm_discover(&s->client, req, &src);
    if (rc == 0)
        rc = nvrm_object_get(&s->client, &s->objects, req->device, &src, &obj);
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    if (!s)
        refuse_inherited(b->pid);
    if (rc) {
        free(p);
        return rc;
    }
    p->pid = b->pid;
    p->obj = obj;
    p->off = src.obj_off;
    p->len = req->win_size;
    bp->priv = p;
    bp->pin_base = req->win_base;
    bp->pin_size = req->win_size;
    bp->page_size = GDRX_GPU_PAGE_SIZE;
    return 0;
}

static int nvrm_unpin(void *bctx, struct gdrx_backend_pin *bp)
{
    struct nvrm_pin *p = bp->priv;
    struct nvrm_state *s;
    int rc = lock_pin(bctx, bp, &s);

    if (rc)
        return rc;
    /* Still mapped here means the core revoked the mapping (backend.h):
     * the range is the core's now. */
    if (p->view)
        nvrm_view_release(&s->client, p->obj, p->view, p->cpu, p->len, 1);
    nvrm_object_put(&s->client, &s->objects, p->obj);
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    free(p);
    bp->priv = NULL;
    return 0;
}

static int nvrm_map(void *bctx, struct gdrx_backend_pin *bp)
{
    struct nvrm_pin *p = bp->priv;
    struct nvrm_state *s;
    uint8_t *cpu = NULL;
    int rc = lock_pin(bctx, bp, &s);

    if (rc)
        return rc;
    rc = p->view ? -EEXIST : nvrm_view_map(&s->client, p->obj, p->off, p->len, &p->view, &cpu);
    if (rc == 0)
        p->cpu = cpu;
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    if (rc)
        return rc;
    bp->cpu_base = cpu;
    bp->dbase = bp->pin_base;
    bp->map_size = p->len;
    bp->type = GDRX_MAPPING_WC;
    return 0;
}

static int nvrm_unmap(void *bctx, struct gdrx_backend_pin *bp)
{
    struct nvrm_pin *p = bp->priv;
    struct nvrm_state *s;
    int rc = lock_pin(bctx, bp, &s);

    if (rc)
        return rc;
    if (p->view) {
        nvrm_view_release(&s->client, p->obj, p->view, p->cpu, p->len, 0);
        p->view = NULL;
        p->cpu = NULL;
    } else {
        rc = -EINVAL;
    }
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    if (rc == 0) {
        bp->cpu_base = NULL;
        bp->map_size = 0;
        bp->type = GDRX_MAPPING_NONE;
    }
    return rc;
}

/* CUDA freed the object we duplicated (seen in its RM_FREE). */
static int nvrm_is_stale(void *bctx, struct gdrx_backend_pin *bp)
{
    struct nvrm_pin *p = bp->priv;
    struct nvrm_state *s;
    int rc = lock_pin(bctx, bp, &s);

    if (rc)
        return rc;
    if (p->obj->kind == NVRM_OBJ_DUP &&
        !nvrm_trace_source_live(p->obj->src_client, p->obj->src_memory, p->obj->serial)) {
        nvrm_object_unlink(&s->objects, p->obj);
        rc = 1;
    }
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    return rc;
}

static int nvrm_driver_version(void *bctx, uint64_t *version)
{
    struct nvrm_bctx *b = bctx;

    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    struct nvrm_state *s = state_for(b->pid);
    if (s)
        *version = s->client.version_code;
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    return s ? 0 : refuse_inherited(b->pid);
}

/* ---------------------------------------------------- the open self-test */

static nvrm_handle_t selftest_pin_handle(const struct gdrx_backend_pin *bp)
{
    const struct nvrm_pin *p = bp->priv;
    return p && p->obj ? p->obj->h_memory : 0;
}

/* Whether our client still has object h: an RM control naming it. */
static int selftest_handle_live(void *bctx, nvrm_handle_t h)
{
    struct nvrm_bctx *b = bctx;
    int live = 0;

    gdrx_mutex_lock(&lock, GDRX_LOCK_BACKEND);
    struct nvrm_state *s = state_for(b->pid);
    if (s && h) {
        struct nvrm_ctrl_addr_space as = { .h_object = h };
        live = nvrm_rm_control(s->client.ctl_fd, s->client.h_client, s->client.h_client,
                               NVRM_CTRL_CLIENT_GET_ADDR_SPACE_TYPE, &as, sizeof(as)) == 0;
    }
    gdrx_mutex_unlock(&lock, GDRX_LOCK_BACKEND);
    return live;
}

/* The self-test's state, one word: (pid << 2) | NONE/RUNNING/PASSED/FAILED.
 * No lock is held across the test (it calls CUDA and the ops): a second
 * opener waits for the first, and a child forked while its parent ran
 * the test (the word says RUNNING under another pid) runs its own. */
enum { PROOF_NONE, PROOF_RUNNING, PROOF_PASSED, PROOF_FAILED };
static uint64_t proof_word;
static struct nvrm_selftest proof;

static int nvrm_prove(struct nvrm_bctx *b, const struct gdrx_cuda *cu,
                      const struct nvrm_cuda *cx, const struct nvrm_layout *layout)
{
    const char *opt = secure_getenv("GDRX_NVRM_CHECKED");
    if (opt && strcmp(opt, "0") == 0) {
        gdrx_err("nvrm: driver branch %u was checked against its headers but not run on "
                 "hardware, and GDRX_NVRM_CHECKED=0 refuses such branches", layout->branch);
        nvrm_layout_set_active(NULL);
        return -ENOTSUP;
    }
    uint64_t me = (uint64_t)getpid() << 2;
    for (;;) {
        uint64_t w = __atomic_load_n(&proof_word, __ATOMIC_ACQUIRE);
        if ((w & 3) == PROOF_PASSED || (w & 3) == PROOF_FAILED)
            break;
        if ((w & 3) == PROOF_RUNNING && (w & ~3ull) == me) {
            nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
            continue;
        }
        /* NONE, or RUNNING in the parent we were forked from */
        if (!__atomic_compare_exchange_n(&proof_word, &w, me | PROOF_RUNNING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue;
        struct nvrm_selftest_env env = {
            .ops = &gdrx_backend_nvrm_ops, .bctx = b, .cu = cu, .cx = cx,
            .pin_handle = selftest_pin_handle, .handle_live = selftest_handle_live,
        };
        nvrm_selftest_run(&env, &proof);
        __atomic_store_n(&proof_word, me | (proof.rc ? PROOF_FAILED : PROOF_PASSED),
                         __ATOMIC_RELEASE);
        if (proof.rc == 0)
            gdrx_info("nvrm: driver branch %u (%s, headers %s to %s): open self-test passed "
                      "in %llu us%s", layout->branch, nvrm_branch_status_name(layout->status),
                      layout->first_checked, layout->last_checked,
                      (unsigned long long)(proof.nsec / 1000),
                      proof.export_checked ? "" : " (CUDA made no dma-buf: export not checked)");
        else
            gdrx_err("nvrm: driver branch %u (checked against headers %s to %s, not validated "
                     "on hardware) failed the open self-test at step \"%s\": %s; refusing "
                     "the nvrm backend (docs/nvrm.md, \"Driver branches\")", layout->branch,
                     layout->first_checked, layout->last_checked, proof.step, proof.detail);
        break;
    }
    if (proof.rc == 0) {
        /* also where the parent we were forked from proved it: the open
         * in the child made the row active, unproven, again */
        nvrm_layout_set_proven();
        return 0;
    }
    /* the trace must not read layouts that failed */
    nvrm_layout_set_active(NULL);
    return -ENOTSUP;
}

const struct gdrx_backend_ops gdrx_backend_nvrm_ops = {
    .name = "nvrm",
    .id = GDRX_BACKEND_NVRM,
    .open = nvrm_open,
    .close = nvrm_close,
    .probe = nvrm_probe,
    .precheck = nvrm_client_precheck,
    .pin = nvrm_pin,
    .unpin = nvrm_unpin,
    .map = nvrm_map,
    .unmap = nvrm_unmap,
    .is_stale = nvrm_is_stale,
    .driver_version = nvrm_driver_version,
    .fork_lock = nvrm_fork_lock,
    .fork_unlock = nvrm_fork_unlock,
    .fork_child = nvrm_fork_child,
};
