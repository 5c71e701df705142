/*
 * pin_state.c - the pin state machine: one transition per event, each run
 * with pin->lock held, each publishing what the copy fast path sees.
 *
 * SPDX-License-Identifier: MIT
 *
 *  state \ event   map          unmap          freed (revoke)     unpin    fork child
 *  UNUSED          -            -              -                  -        -
 *  PINNED          MAPPED       -EINVAL        REVOKED            UNUSED   FORKED
 *  MAPPED          -EEXIST      PINNED         REVOKED_MAPPED     UNUSED   FORKED
 *                                              (REVOKED_LEAKED if
 *                                               the replacement fails)
 *  REVOKED         -ESTALE      -EINVAL        (stays)            UNUSED   FORKED
 *  REVOKED_MAPPED  -ESTALE      REVOKED        (stays)            UNUSED   FORKED
 *  REVOKED_LEAKED  -ESTALE      REVOKED        (stays)            UNUSED   FORKED
 *  FORKED          (every call returns -ECHILD before reaching a transition)
 *
 * "pinned" (UNUSED -> PINNED) ends gdrx_pin.  What a copy returns in each
 * state is state_errno() below.  Leaving PINNED or MAPPED also takes the
 * pin out of the free hook's index (pin_index.h); the backend pin is held
 * exactly in PINNED and MAPPED.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "log.h"
#include "pin_index.h"

/* Built with GDRX_CORE_TEST_SEAM (tests/libgdr/test_core_unit), the
 * replacement of a revoked mapping goes to the test program, which can make it fail. */
#ifdef GDRX_CORE_TEST_SEAM
void *core_test_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
#define revoke_mmap core_test_mmap
#else
#define revoke_mmap mmap
#endif

/* What a copy through the pin returns in a state (0: it copies). */
static int state_errno(enum gdrx_pin_state s)
{
    switch (s) {
    case GDRX_PIN_MAPPED:
        return 0;
    case GDRX_PIN_REVOKED:
    case GDRX_PIN_REVOKED_MAPPED:
    case GDRX_PIN_REVOKED_LEAKED:
        return -ESTALE;
    case GDRX_PIN_FORKED:
        return -ECHILD;
    case GDRX_PIN_UNUSED:
    case GDRX_PIN_PINNED:
        break;
    }
    return -EINVAL;
}

static void enter(struct gdrx_pin *pin, enum gdrx_pin_state s)
{
    pin->state = s;
    gdrx_pin_fp_publish(pin, state_errno(s));
}

int gdrx_pin_is_revoked(const struct gdrx_pin *pin)
{
    return pin->state == GDRX_PIN_REVOKED || pin->state == GDRX_PIN_REVOKED_MAPPED ||
           pin->state == GDRX_PIN_REVOKED_LEAKED;
}

void gdrx_pin_on_pinned(struct gdrx_pin *pin)
{
    enter(pin, GDRX_PIN_PINNED);
}

static void forget_mapping(struct gdrx_pin *pin)
{
    pin->bp.cpu_base = NULL;
    pin->bp.map_size = 0;
    pin->bp.type = GDRX_MAPPING_NONE;
}

int gdrx_pin_on_map(struct gdrx_pin *pin)
{
    switch (pin->state) {
    case GDRX_PIN_PINNED:
        break;
    case GDRX_PIN_MAPPED:
        return -EEXIST;
    default:
        return state_errno(pin->state); /* -ESTALE, -ECHILD or -EINVAL */
    }
    gdrx_fork_hold(); /* no fork between the backend's mmap and its MADV_DONTFORK */
    int rc = pin->ops->map(pin->bctx, &pin->bp);
    gdrx_fork_release();
    if (rc)
        return rc;
    const struct gdrx_backend_pin *bp = &pin->bp;
    const struct gdrx_pin_req *req = &pin->req;
    if (!bp->cpu_base || !gdrx_range_within(bp->dbase, bp->map_size, req->dptr, req->len)) {
        gdrx_err("backend %s mapped [%#llx, +%zu), which misses the pin",
                 pin->ops->name, (unsigned long long)bp->dbase, bp->map_size);
        pin->ops->unmap(pin->bctx, &pin->bp);
        forget_mapping(pin);
        return -EIO;
    }
    enter(pin, GDRX_PIN_MAPPED);
    return 0;
}

int gdrx_pin_on_unmap(struct gdrx_pin *pin)
{
    int rc = 0;

    switch (pin->state) {
    case GDRX_PIN_MAPPED:
        /* Copies fail before the mapping goes. */
        enter(pin, GDRX_PIN_PINNED);
        rc = pin->ops->unmap(pin->bctx, &pin->bp);
        break;
    case GDRX_PIN_REVOKED_MAPPED:
        if (munmap(pin->bp.cpu_base, pin->bp.map_size) != 0)
            rc = -errno;
        enter(pin, GDRX_PIN_REVOKED);
        break;
    case GDRX_PIN_REVOKED_LEAKED:
        /* The range stays reserved for good: see revoke_mapping(). */
        enter(pin, GDRX_PIN_REVOKED);
        break;
    default:
        return -EINVAL;
    }
    forget_mapping(pin);
    return rc;
}

static void release_backend_pin(struct gdrx_pin *pin)
{
    gdrx_pin_index_remove(pin, atomic_load_explicit(&pin->h.live_id, memory_order_relaxed),
                          pin->req.alloc_base);
    int rc = pin->ops->unpin(pin->bctx, &pin->bp);
    if (rc)
        gdrx_warn("backend %s: unpin failed: %d", pin->ops->name, rc);
}

/* The range a revoked mapping is replaced with: a shared mapping of an
 * empty memfd, every page of it past the file's end, so a late access
 * raises SIGBUS, the signal gdrcopy's non-persistent mode gives after a
 * free (callers such as gdrcopy's own tests catch that one).  Where no
 * memfd can be made, an inaccessible anonymous range (SIGSEGV). */
static void *revoke_replace(void *base, size_t size)
{
    int fd = memfd_create("gdrx-revoked", MFD_CLOEXEC);

    if (fd >= 0) {
        void *p = revoke_mmap(base, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, fd, 0);
        close(fd); /* the mapping keeps the (empty) file */
        if (p != MAP_FAILED)
            return p;
    }
    return revoke_mmap(base, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
}

/* Replace the mapping of a revoked pin by a faulting one of our own:
 * a late access through a kept pointer faults, and no unrelated mmap gets
 * the addresses while the caller may still hold them. */
static enum gdrx_pin_state revoke_mapping(struct gdrx_pin *pin)
{
    void *base = pin->bp.cpu_base;
    size_t size = pin->bp.map_size;
    void *p = revoke_replace(base, size);
    if (p != MAP_FAILED) {
        if (gdrx_mapping_dontfork(base, size) != 0)
            gdrx_warn("a revoked range will be inherited by fork children (errno %d)", errno);
        return GDRX_PIN_REVOKED_MAPPED;
    }
    /* Never unmap the backend's mapping here, nor later: that would free
     * the range for someone else's mmap while old pointers into it exist.
     * Make it inaccessible and leak it deliberately. */
    gdrx_err("cannot replace the mapping of a revoked pin (errno %d); its range is kept", errno);
    if (mprotect(base, size, PROT_NONE) != 0)
        gdrx_err("cannot protect the mapping of a revoked pin (errno %d)", errno);
    return GDRX_PIN_REVOKED_LEAKED;
}

void gdrx_pin_on_freed(struct gdrx_pin *pin)
{
    enum gdrx_pin_state next;

    switch (pin->state) {
    case GDRX_PIN_PINNED:
        next = GDRX_PIN_REVOKED;
        break;
    case GDRX_PIN_MAPPED:
        next = GDRX_PIN_REVOKED_MAPPED;
        break;
    default:
        return; /* already revoked, or not a pin */
    }
    /* New copies see -ESTALE before the mapping changes under them. */
    gdrx_pin_fp_publish(pin, -ESTALE);
    if (next == GDRX_PIN_REVOKED_MAPPED)
        next = revoke_mapping(pin);
    release_backend_pin(pin);
    enter(pin, next);
}

void gdrx_pin_fence(struct gdrx_pin *pin)
{
    if (pin->fences++ == 0)
        gdrx_pin_fp_publish(pin, state_errno(pin->state)); /* leaves the counter odd */
}

void gdrx_pin_unfence(struct gdrx_pin *pin)
{
    if (pin->fences && --pin->fences == 0)
        gdrx_pin_fp_publish(pin, state_errno(pin->state));
}

int gdrx_pin_on_unpin(struct gdrx_pin *pin)
{
    struct gdrx_ctx *ctx = pin->ctx;
    int rc = 0;

    /* A hold on a pin that goes is dropped with it: the slot's next pin
     * starts unheld (the holder finds the id dead and leaves it). */
    pin->fences = 0;

    if (pin->state == GDRX_PIN_MAPPED || pin->state == GDRX_PIN_REVOKED_MAPPED ||
        pin->state == GDRX_PIN_REVOKED_LEAKED)
        rc = gdrx_pin_on_unmap(pin);
    if (pin->state == GDRX_PIN_PINNED) {
        release_backend_pin(pin);
        memset(&pin->bp, 0, sizeof(pin->bp));
    }
    enter(pin, GDRX_PIN_UNUSED);
    gdrx_ht_retire(&pin->h);
    pin->ctx = NULL;
    atomic_fetch_sub_explicit(&ctx->pin_count, 1, memory_order_relaxed);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    gdrx_ht_free(&gdrx_pin_table, &pin->h);
    if (rc)
        gdrx_warn("unmapping at unpin failed (%d); the handle is gone regardless", rc);
    return rc;
}

void gdrx_pin_on_fork_child(struct gdrx_pin *pin)
{
    /* The parent's mappings are not inherited (MADV_DONTFORK) and its
     * backend pins are not ours to release: forget both (and holds of
     * the parent's threads, which the child does not have). */
    pin->state = GDRX_PIN_FORKED;
    pin->fences = 0;
    gdrx_pin_fp_publish(pin, -ECHILD);
}
