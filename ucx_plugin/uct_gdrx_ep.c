/*
 * uct_gdrx_ep.c - gdrx endpoints.  Every operation is a copy between a
 * host buffer and the BAR mapping named by the remote key, by the CPU (or,
 * GPU to host from DMA_THRESH on, by the copy engine), finished before it
 * returns (so zcopy and get_bcopy complete in place, never pending).
 * Reaching the device memory of one copy: uct_gdrx_ep_copy.h.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_ep.h"
#include "uct_gdrx_ep_copy.h"
#include "uct_gdrx_dma.h"
#include "uct_gdrx_mem.h"

#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/type/class.h>


static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_copy_counted(uct_ep_h tl_ep, uct_gdrx_op_t op, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr,
                         uct_rkey_t rkey)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    ucs_status_t status;

    if (ucs_unlikely(rkey == UCT_INVALID_RKEY)) {
        status = uct_gdrx_ep_copy_keyless(iface, dir, buffer, length,
                                          remote_addr);
    } else {
        status = uct_gdrx_ep_copy(iface, dir, buffer, length, remote_addr,
                                  rkey);
        if (ucs_unlikely(status == UCS_ERR_INVALID_ADDR) &&
            uct_gdrx_ep_key_resolvable((const uct_gdrx_key_t*)rkey)) {
            /* UCP cannot recover a failed memory-type copy (it aborts) */
            status = uct_gdrx_ep_copy_resolve(iface, dir, buffer, length,
                                              remote_addr);
        }
    }
    if (status == UCS_OK) {
        uct_gdrx_iface_count(iface, op, dir, length);
    }
    return status;
}

ucs_status_t uct_gdrx_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    return uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_SHORT, UCT_GDRX_DIR_PUT,
                                    (void*)buffer, length, remote_addr, rkey);
}

ucs_status_t uct_gdrx_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    return uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_SHORT, UCT_GDRX_DIR_GET,
                                    buffer, length, remote_addr, rkey);
}

/* bcopy's bounce buffer of SEG_SIZE bytes: on_stack, or the interface's
 * own when SEG_SIZE is larger.  Only a second thread in the same interface
 * at the same time (UCS_THREAD_MODE_MULTI) takes one from the heap. */
static UCS_F_ALWAYS_INLINE void *
uct_gdrx_ep_bounce_get(uct_gdrx_iface_t *iface, void *on_stack)
{
    void *bounce;

    if (ucs_likely(iface->seg_size <= UCT_GDRX_STACK_BOUNCE)) {
        return on_stack;
    }

    if (ucs_likely(!__atomic_exchange_n(&iface->bounce_busy, 1,
                                        __ATOMIC_ACQUIRE))) {
        return iface->bounce;
    }

    bounce = ucs_malloc(iface->seg_size, "uct_gdrx_bounce");
    if (bounce == NULL) {
        ucs_error("gdrx: failed to allocate a %zu-byte bounce buffer",
                  iface->seg_size);
    }
    return bounce;
}

static UCS_F_ALWAYS_INLINE void
uct_gdrx_ep_bounce_put(uct_gdrx_iface_t *iface, void *bounce, void *on_stack)
{
    if (bounce == on_stack) {
        return;
    } else if (bounce == iface->bounce) {
        __atomic_store_n(&iface->bounce_busy, 0, __ATOMIC_RELEASE);
    } else {
        ucs_free(bounce);
    }
}

ssize_t uct_gdrx_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    uint8_t on_stack[UCT_GDRX_STACK_BOUNCE];
    ucs_status_t status;
    void *bounce;
    size_t length;

    bounce = uct_gdrx_ep_bounce_get(iface, on_stack);
    if (bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    length = pack_cb(bounce, arg);
    if (length > iface->seg_size) {
        ucs_error("gdrx: put_bcopy packed %zu bytes, more than %zu",
                  length, iface->seg_size);
        status = UCS_ERR_EXCEEDS_LIMIT;
    } else {
        status = uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_BCOPY,
                                          UCT_GDRX_DIR_PUT, bounce, length,
                                          remote_addr, rkey);
    }

    uct_gdrx_ep_bounce_put(iface, bounce, on_stack);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_gdrx_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    uint8_t on_stack[UCT_GDRX_STACK_BOUNCE];
    ucs_status_t status;
    void *bounce;

    if (length > iface->seg_size) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    bounce = uct_gdrx_ep_bounce_get(iface, on_stack);
    if (bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_BCOPY,
                                      UCT_GDRX_DIR_GET, bounce, length,
                                      remote_addr, rkey);
    if (status == UCS_OK) {
        unpack_cb(arg, bounce, length);
    }

    uct_gdrx_ep_bounce_put(iface, bounce, on_stack);
    return status;
}

/* GPU to host memory, for zcopy: the GPU's copy engine from the interface's
 * DMA threshold on, once libgdrx confirmed the pin is live (a zero-length
 * copy checks the handle, revocation and the address); else, or where the
 * copy engine cannot be used, CPU reads through the mapping. */
static ucs_status_t uct_gdrx_ep_read(uct_gdrx_iface_t *iface, gdrx_pin_t pin,
                                     void *dst, const void *mapped,
                                     uint64_t dptr, size_t length)
{
    ucs_status_t status;
    int ret;

    if (length >= iface->dma_thresh) {
        ret = gdrx_copy_from_mapping(pin, dst, mapped, 0);
        if (ucs_unlikely(ret != 0)) {
            return uct_gdrx_mem_status(ret);
        }

        status = uct_gdrx_dma_copy(&iface->dma, dst,
                                   (const void*)(uintptr_t)dptr, length, dptr);
        if (status == UCS_OK) {
            uct_gdrx_iface_count(iface, UCT_GDRX_OP_DMA, UCT_GDRX_DIR_GET,
                                 length);
        }
        if (status != UCS_ERR_UNSUPPORTED) {
            return status;
        }
    }

    return uct_gdrx_mem_status(gdrx_copy_from_mapping(pin, dst, mapped, length));
}

/* A zcopy part from the key's GPU range into host memory. */
static ucs_status_t uct_gdrx_ep_get_large(uct_gdrx_iface_t *iface,
                                          void *buffer, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    ucs_status_t status;
    gdrx_pin_t pin;
    void *mapped;

    if ((key->kind != UCT_GDRX_MEM_KIND_MAPPED) || (length == 0)) {
        return uct_gdrx_ep_copy(iface, UCT_GDRX_DIR_GET, buffer, length,
                                remote_addr, rkey);
    }

    status = uct_gdrx_ep_key_map(key, remote_addr, length, &mapped);
    if (status != UCS_OK) {
        return status;
    }

    pin.id = key->pin_id;
    return uct_gdrx_ep_read(iface, pin, buffer, mapped, remote_addr, length);
}

/* A zcopy's local buffer may be device memory registered with gdrx (UCP's
 * rendezvous puts from a GPU buffer into a host one): copy through its
 * mapping, bouncing through the stack when both sides are on a GPU. */
static ucs_status_t uct_gdrx_ep_copy_local(uct_gdrx_iface_t *iface,
                                           uct_gdrx_dir_t dir,
                                           const uct_gdrx_mem_t *local,
                                           uint8_t *buffer, size_t length,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    uint64_t laddr            = (uintptr_t)buffer;
    uint8_t bounce[UCT_GDRX_STACK_BOUNCE];
    ucs_status_t status;
    uint8_t *mapped;
    size_t done, chunk;

    mapped = (uint8_t*)local->cpu_ptr + (laddr - local->dptr);
    if ((key->kind == UCT_GDRX_MEM_KIND_HOST) && (dir == UCT_GDRX_DIR_PUT)) {
        return uct_gdrx_ep_read(iface, local->pin, (void*)(uintptr_t)remote_addr,
                                mapped, laddr, length);
    }
    if (key->kind == UCT_GDRX_MEM_KIND_HOST) {
        return uct_gdrx_mem_status(gdrx_copy_to_mapping(
                local->pin, mapped, (void*)(uintptr_t)remote_addr, length));
    }

    for (done = 0; done < length; done += chunk) {
        chunk = ucs_min(length - done, sizeof(bounce));
        if (dir == UCT_GDRX_DIR_PUT) {
            status = uct_gdrx_mem_status(gdrx_copy_from_mapping(
                    local->pin, bounce, mapped + done, chunk));
            if (status == UCS_OK) {
                status = uct_gdrx_ep_copy(iface, dir, bounce, chunk,
                                          remote_addr + done, rkey);
            }
        } else {
            status = uct_gdrx_ep_copy(iface, dir, bounce, chunk,
                                      remote_addr + done, rkey);
            if (status == UCS_OK) {
                status = uct_gdrx_mem_status(gdrx_copy_to_mapping(
                        local->pin, mapped + done, bounce, chunk));
            }
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* The local memh of an iov entry, if it is device memory registered with
 * gdrx (mapped, copied by CUDA where the pin was refused, or a span). */
static UCS_F_ALWAYS_INLINE const uct_gdrx_mem_t *
uct_gdrx_ep_iov_local(const uct_iov_t *iov)
{
    const uct_gdrx_mem_t *local = iov->memh;

    return ((local != UCT_MEM_HANDLE_NULL) &&
            ((local->kind == UCT_GDRX_MEM_KIND_MAPPED) ||
             (local->kind == UCT_GDRX_MEM_KIND_UNPINNED) ||
             (local->kind == UCT_GDRX_MEM_KIND_SPAN))) ? local : NULL;
}

/* Bytes of an iov entry, and whether each of its elements lies in its
 * local registration: checked for all before the first copy, so that a bad
 * range changes nothing. */
static ucs_status_t uct_gdrx_ep_iov_check(const uct_iov_t *iov, size_t iovcnt,
                                          size_t *total_p)
{
    const uct_gdrx_mem_t *local;
    size_t i, n, stride, total;
    uint64_t laddr;

    for (i = 0, total = 0; i < iovcnt; ++i) {
        local  = uct_gdrx_ep_iov_local(&iov[i]);
        stride = iov[i].stride ? iov[i].stride : iov[i].length;
        for (n = 0; n < ucs_max(iov[i].count, 1u); ++n) {
            laddr = (uintptr_t)iov[i].buffer + n * stride;
            if ((local != NULL) &&
                !uct_gdrx_range_holds(local->dptr, local->length, laddr,
                                      iov[i].length)) {
                ucs_debug("gdrx: local 0x%" PRIx64 " length %zu is outside "
                          "its registration", laddr, iov[i].length);
                return UCS_ERR_OUT_OF_RANGE;
            }
            total += iov[i].length;
        }
    }

    *total_p = total;
    return UCS_OK;
}

/* One element of a zcopy: between buffer (local: its device memh, or NULL
 * for host memory) and the key's remote_addr. */
static ucs_status_t uct_gdrx_ep_zcopy_one(uct_gdrx_iface_t *iface,
                                          uct_gdrx_dir_t dir,
                                          const uct_gdrx_mem_t *local,
                                          uint8_t *buffer, size_t length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    ucs_status_t status;

    if ((local != NULL) && (local->kind == UCT_GDRX_MEM_KIND_SPAN)) {
        return UCS_ERR_INVALID_ADDR; /* maps nothing: resolved by address */
    } else if ((local != NULL) && (local->kind == UCT_GDRX_MEM_KIND_UNPINNED)) {
        /* the copy engine writes or reads the remote memory itself: a pin
         * CUDA's free revoked is refused first */
        status = uct_gdrx_ep_key_live((const uct_gdrx_key_t*)rkey,
                                      remote_addr, length);
        return (status != UCS_OK) ? status :
               uct_gdrx_ep_copy_unpinned(iface, dir, buffer, length,
                                         remote_addr, (uintptr_t)buffer);
    } else if (local != NULL) {
        return uct_gdrx_ep_copy_local(iface, dir, local, buffer, length,
                                      remote_addr, rkey);
    } else if (dir == UCT_GDRX_DIR_GET) {
        return uct_gdrx_ep_get_large(iface, buffer, length, remote_addr, rkey);
    }
    return uct_gdrx_ep_copy(iface, dir, buffer, length, remote_addr, rkey);
}

/* A zcopy element that failed on a span or a revoked pin, on either side:
 * that side again through the device memory now at its address (UCP
 * cannot recover a failed copy; a CUDA copy of the addresses would reach
 * that memory too).  A side that resolves to no device memory fails. */
static ucs_status_t
uct_gdrx_ep_zcopy_resolve(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                          const uct_gdrx_mem_t *local, uint8_t *buffer,
                          size_t length, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);
    uct_gdrx_ep_local_key_t lkey, rkey_now;
    int local_now, remote_now;
    ucs_status_t status;

    local_now  = (local != NULL) &&
                 ((local->kind == UCT_GDRX_MEM_KIND_SPAN) ||
                  ((local->kind == UCT_GDRX_MEM_KIND_MAPPED) &&
                   (local->checked != uct_gdrx_events_graph_epoch())));
    remote_now = uct_gdrx_ep_key_resolvable((const uct_gdrx_key_t*)rkey);
    if (!local_now && !remote_now) {
        return UCS_ERR_INVALID_ADDR;
    }

    uct_gdrx_count(&md->counters.resolved);
    if (local_now) {
        status = uct_gdrx_ep_key_resolve(iface, (uintptr_t)buffer, length,
                                         &lkey);
        if (status != UCS_OK) {
            return status;
        }
        local = lkey.mem;
    }
    if (remote_now) {
        status = uct_gdrx_ep_key_resolve(iface, remote_addr, length,
                                         &rkey_now);
        if (status != UCS_OK) {
            goto out;
        }
        rkey = (uintptr_t)&rkey_now.key;
    }

    status = uct_gdrx_ep_zcopy_one(iface, dir, local, buffer, length,
                                   remote_addr, rkey);
    if (remote_now) {
        uct_gdrx_ep_key_release(iface, &rkey_now);
    }
out:
    if (local_now) {
        uct_gdrx_ep_key_release(iface, &lkey);
    }
    return status;
}

/* The iov entries are consecutive in the remote range. */
static ucs_status_t uct_gdrx_ep_zcopy_iov(uct_gdrx_iface_t *iface,
                                          uct_gdrx_dir_t dir,
                                          const uct_iov_t *iov, size_t iovcnt,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          size_t total)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    size_t offset             = 0;
    const uct_gdrx_mem_t *local;
    ucs_status_t status;
    size_t i, n, stride;
    uint8_t *buffer;

    /* the whole remote range before the first copy: a bad one changes
     * nothing */
    if ((key->kind != UCT_GDRX_MEM_KIND_HOST) && (total > 0)) {
        status = uct_gdrx_ep_key_check(key, remote_addr, total);
        if (status != UCS_OK) {
            return status;
        }
    }

    for (i = 0; i < iovcnt; ++i) {
        local  = uct_gdrx_ep_iov_local(&iov[i]);
        stride = iov[i].stride ? iov[i].stride : iov[i].length;
        for (n = 0; n < ucs_max(iov[i].count, 1u); ++n) {
            buffer = (uint8_t*)iov[i].buffer + n * stride;
            status = uct_gdrx_ep_zcopy_one(iface, dir, local, buffer,
                                           iov[i].length,
                                           remote_addr + offset, rkey);
            if (ucs_unlikely(status == UCS_ERR_INVALID_ADDR)) {
                status = uct_gdrx_ep_zcopy_resolve(iface, dir, local, buffer,
                                                   iov[i].length,
                                                   remote_addr + offset,
                                                   rkey);
            }
            if (status != UCS_OK) {
                return status;
            }
            offset += iov[i].length;
        }
    }

    uct_gdrx_iface_count(iface, UCT_GDRX_OP_ZCOPY, dir, total);
    return UCS_OK;
}

static ucs_status_t uct_gdrx_ep_zcopy(uct_ep_h tl_ep, uct_gdrx_dir_t dir,
                                      const uct_iov_t *iov, size_t iovcnt,
                                      uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    uct_gdrx_ep_local_key_t local;
    ucs_status_t status;
    size_t total;

    if ((iovcnt > UCT_GDRX_MAX_IOV) || ((iov == NULL) && (iovcnt > 0))) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gdrx_ep_iov_check(iov, iovcnt, &total);
    if (status != UCS_OK) {
        return status;
    }

    if (ucs_likely(rkey != UCT_INVALID_RKEY)) {
        return uct_gdrx_ep_zcopy_iov(iface, dir, iov, iovcnt, remote_addr,
                                     rkey, total);
    }

    if (total == 0) {
        return UCS_OK;
    }

    status = uct_gdrx_ep_key_by_address(iface, remote_addr, total, &local);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gdrx_ep_zcopy_iov(iface, dir, iov, iovcnt, remote_addr,
                                   (uintptr_t)&local.key, total);
    uct_gdrx_ep_key_release(iface, &local);
    return status;
}

ucs_status_t uct_gdrx_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_gdrx_ep_zcopy(tl_ep, UCT_GDRX_DIR_PUT, iov, iovcnt,
                             remote_addr, rkey);
}

ucs_status_t uct_gdrx_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_gdrx_ep_zcopy(tl_ep, UCT_GDRX_DIR_GET, iov, iovcnt,
                             remote_addr, rkey);
}

static UCS_CLASS_INIT_FUNC(uct_gdrx_ep_t, const uct_ep_params_t *params)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(params->iface, uct_gdrx_iface_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL)) {
        ucs_error("gdrx: an endpoint needs the interface address");
        return UCS_ERR_INVALID_PARAM;
    }

    /* Keys carry this process's pointers: only our own iface is reachable. */
    if (!uct_gdrx_iface_is_reachable_addr(params->iface, params->iface_addr)) {
        return UCS_ERR_UNREACHABLE;
    }

    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gdrx_ep_t)
{
}

UCS_CLASS_DEFINE(uct_gdrx_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gdrx_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gdrx_ep_t, uct_ep_t);
