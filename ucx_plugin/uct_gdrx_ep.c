/*
 * uct_gdrx_ep.c - gdrx endpoints.  Every operation is a CPU copy between a
 * host buffer and the BAR mapping named by the remote key, finished before
 * it returns (so zcopy and get_bcopy complete in place, never pending).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_ep.h"
#include "uct_gdrx_dma.h"

#include <errno.h>
#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/type/class.h>


/* The first copy of the process through a key that maps nothing, said as
 * an error: GPU memory that UCX routed to a gdrx standing aside (UCX's own
 * CUDA hooks told it the memory type, and no other transport can copy
 * it), which UCX's own error message does not explain.  Other copies
 * outside their key are the caller's, said at debug level. */
static int uct_gdrx_ep_unmapped_said;

static UCS_F_NOINLINE void
uct_gdrx_ep_out_of_range(const uct_gdrx_key_t *key, uint64_t remote_addr,
                         size_t length)
{
    if ((key->kind == UCT_GDRX_MEM_KIND_EMPTY) &&
        !__atomic_exchange_n(&uct_gdrx_ep_unmapped_said, 1, __ATOMIC_RELAXED)) {
        ucs_error("gdrx: %zu bytes at 0x%" PRIx64 " not copied: gdrx maps "
                  "nothing (it stands aside, see its warning), and UCX has "
                  "no other transport for this memory (cuda_copy)", length,
                  remote_addr);
        return;
    }

    ucs_debug("gdrx: 0x%" PRIx64 " length %zu is outside the remote key "
              "0x%" PRIx64 " length %" PRIu64, remote_addr, length,
              key->dptr, key->length);
}

/* Copy length bytes between buffer and remote_addr of the key's range. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_copy(uct_gdrx_dir_t dir, void *buffer, size_t length,
                 uint64_t remote_addr, uct_rkey_t rkey)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    gdrx_pin_t pin;
    void *mapped;
    int ret;

    if (key->kind == UCT_GDRX_MEM_KIND_HOST) {
        /* a host registration: the remote address is memory of this process */
        if (dir == UCT_GDRX_DIR_PUT) {
            memcpy((void*)(uintptr_t)remote_addr, buffer, length);
        } else {
            memcpy(buffer, (void*)(uintptr_t)remote_addr, length);
        }
        return UCS_OK;
    }

    if (length == 0) {
        return UCS_OK; /* nothing to reach, whatever the key */
    }

    if (!uct_gdrx_range_holds(key->dptr, key->length, remote_addr, length)) {
        uct_gdrx_ep_out_of_range(key, remote_addr, length);
        return UCS_ERR_OUT_OF_RANGE;
    }

    pin.id = key->pin_id;
    mapped = (void*)(uintptr_t)(key->cpu_ptr + (remote_addr - key->dptr));
    if (dir == UCT_GDRX_DIR_PUT) {
        ret = gdrx_copy_to_mapping(pin, mapped, buffer, length);
    } else {
        ret = gdrx_copy_from_mapping(pin, buffer, mapped, length);
    }

    if (ucs_unlikely(ret != 0)) {
        /* -ESTALE: CUDA freed the memory; the key must not be used again */
        ucs_debug("gdrx: copy at 0x%" PRIx64 " length %zu failed: %s",
                  remote_addr, length, gdrx_strerror(ret));
        return (ret == -ESTALE) ? UCS_ERR_INVALID_ADDR :
                                  uct_gdrx_md_status(ret);
    }

    return UCS_OK;
}

/* A key made on the spot for an address of this process. */
typedef struct uct_gdrx_ep_local_key {
    uct_gdrx_key_t key;
    uct_gdrx_mem_t *mem;
} uct_gdrx_ep_local_key_t;

/* UCX's memory-type pipelines (1.13's shared-memory rendezvous) call the
 * memtype endpoint with no remote key: the remote address is then memory of
 * this process.  Register it through the MD (a cache hit after the first
 * time) and use that registration's key. */
static ucs_status_t
uct_gdrx_ep_key_by_address(uct_gdrx_iface_t *iface, uint64_t remote_addr,
                           size_t length, uct_gdrx_ep_local_key_t *local)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);
    ucs_status_t status;
    uct_mem_h memh;

    status = uct_gdrx_md_reg(md, (void*)(uintptr_t)remote_addr, length,
                             UCT_MD_MEM_ACCESS_ALL, &memh);
    if (status != UCS_OK) {
        ucs_debug("gdrx: no mapping for key-less access to 0x%" PRIx64
                  " length %zu: %s", remote_addr, length,
                  ucs_status_string(status));
        return status;
    }

    local->mem = memh;
    uct_gdrx_mem_pack_key(local->mem, &local->key);
    return UCS_OK;
}

static void uct_gdrx_ep_key_release(uct_gdrx_iface_t *iface,
                                    uct_gdrx_ep_local_key_t *local)
{
    uct_gdrx_md_dereg(ucs_derived_of(iface->super.md, uct_gdrx_md_t),
                      local->mem);
}

static ucs_status_t
uct_gdrx_ep_copy_keyless(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);
    const uct_gdrx_keycache_entry_t *held;
    uct_gdrx_ep_local_key_t local;
    ucs_status_t status;

    if (iface->keycache.enabled) {
        held = uct_gdrx_keycache_find(&iface->keycache, remote_addr, length);
        if (held != NULL) {
            if (ucs_likely(uct_gdrx_ep_copy(dir, buffer, length, remote_addr,
                                            (uintptr_t)&held->key) == UCS_OK)) {
                return UCS_OK;
            }
            /* CUDA freed it: libgdrx revoked the pin, nothing was copied */
            uct_gdrx_keycache_drop(&iface->keycache, md, held->mem);
        }
    }

    status = uct_gdrx_ep_key_by_address(iface, remote_addr, length, &local);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gdrx_ep_copy(dir, buffer, length, remote_addr,
                              (uintptr_t)&local.key);
    if ((status == UCS_OK) && iface->keycache.enabled &&
        (local.mem->kind == UCT_GDRX_MEM_KIND_MAPPED)) {
        uct_gdrx_keycache_add(&iface->keycache, md, local.mem);
    } else {
        uct_gdrx_ep_key_release(iface, &local);
    }
    return status;
}

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
        status = uct_gdrx_ep_copy(dir, buffer, length, remote_addr, rkey);
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

ssize_t uct_gdrx_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    uint8_t bounce[UCT_GDRX_MAX_SEG_SIZE];
    ucs_status_t status;
    size_t length;

    length = pack_cb(bounce, arg);
    if (length > iface->seg_size) {
        ucs_error("gdrx: put_bcopy packed %zu bytes, more than %zu",
                  length, iface->seg_size);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_BCOPY,
                                      UCT_GDRX_DIR_PUT, bounce, length,
                                      remote_addr, rkey);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_gdrx_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_gdrx_iface_t);
    uint8_t bounce[UCT_GDRX_MAX_SEG_SIZE];
    ucs_status_t status;

    if (length > iface->seg_size) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_gdrx_ep_copy_counted(tl_ep, UCT_GDRX_OP_BCOPY,
                                      UCT_GDRX_DIR_GET, bounce, length,
                                      remote_addr, rkey);
    if (status == UCS_OK) {
        unpack_cb(arg, bounce, length);
    }
    return status;
}

/* GPU to host memory, for zcopy: the GPU's copy engine from the interface's
 * DMA threshold on, once libgdrx confirmed the pin is live (a zero-length
 * copy checks the handle, revocation and the address); else, or where CUDA
 * cannot, CPU reads through the mapping. */
static ucs_status_t uct_gdrx_ep_read(uct_gdrx_iface_t *iface, gdrx_pin_t pin,
                                     void *dst, const void *mapped,
                                     uint64_t dptr, size_t length)
{
    int ret;

    if ((length >= iface->dma_thresh) &&
        (gdrx_copy_from_mapping(pin, dst, mapped, 0) == 0) &&
        (uct_gdrx_dma_from_device(dst, dptr, length) == UCS_OK)) {
        uct_gdrx_iface_count(iface, UCT_GDRX_OP_DMA, UCT_GDRX_DIR_GET, length);
        return UCS_OK;
    }

    ret = gdrx_copy_from_mapping(pin, dst, mapped, length);
    if (ucs_unlikely(ret != 0)) {
        return (ret == -ESTALE) ? UCS_ERR_INVALID_ADDR : uct_gdrx_md_status(ret);
    }
    return UCS_OK;
}

/* A zcopy part from the key's GPU range into host memory. */
static ucs_status_t uct_gdrx_ep_get_large(uct_gdrx_iface_t *iface,
                                          void *buffer, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    gdrx_pin_t pin;

    if ((key->kind != UCT_GDRX_MEM_KIND_MAPPED) ||
        !uct_gdrx_range_holds(key->dptr, key->length, remote_addr, length)) {
        return uct_gdrx_ep_copy(UCT_GDRX_DIR_GET, buffer, length, remote_addr,
                                rkey); /* host key, or the range error */
    }

    pin.id = key->pin_id;
    return uct_gdrx_ep_read(iface, pin, buffer,
                            (void*)(uintptr_t)(key->cpu_ptr +
                                               (remote_addr - key->dptr)),
                            remote_addr, length);
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
    uint8_t bounce[4096];
    ucs_status_t status;
    uint8_t *mapped;
    size_t done, chunk;
    int ret;

    if (!uct_gdrx_range_holds(local->dptr, local->length, laddr, length)) {
        return UCS_ERR_OUT_OF_RANGE;
    }

    mapped = (uint8_t*)local->cpu_ptr + (laddr - local->dptr);
    if ((key->kind == UCT_GDRX_MEM_KIND_HOST) && (dir == UCT_GDRX_DIR_PUT)) {
        return uct_gdrx_ep_read(iface, local->pin, (void*)(uintptr_t)remote_addr,
                                mapped, laddr, length);
    }
    if (key->kind == UCT_GDRX_MEM_KIND_HOST) {
        ret = gdrx_copy_to_mapping(local->pin, mapped,
                                   (void*)(uintptr_t)remote_addr, length);
        return uct_gdrx_md_status(ret);
    }

    for (done = 0; done < length; done += chunk) {
        chunk = ucs_min(length - done, sizeof(bounce));
        if (dir == UCT_GDRX_DIR_PUT) {
            ret    = gdrx_copy_from_mapping(local->pin, bounce, mapped + done,
                                            chunk);
            status = (ret == 0) ?
                     uct_gdrx_ep_copy(dir, bounce, chunk, remote_addr + done,
                                      rkey) : uct_gdrx_md_status(ret);
        } else {
            status = uct_gdrx_ep_copy(dir, bounce, chunk, remote_addr + done,
                                      rkey);
            if (status == UCS_OK) {
                status = uct_gdrx_md_status(gdrx_copy_to_mapping(
                        local->pin, mapped + done, bounce, chunk));
            }
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* The iov entries are consecutive in the remote range. */
static ucs_status_t uct_gdrx_ep_zcopy_iov(uct_gdrx_iface_t *iface,
                                          uct_gdrx_dir_t dir,
                                          const uct_iov_t *iov, size_t iovcnt,
                                          uint64_t remote_addr, uct_rkey_t rkey)
{
    size_t total = 0;
    const uct_gdrx_mem_t *local;
    ucs_status_t status;
    size_t i, n, stride;
    uint8_t *buffer;

    for (i = 0; i < iovcnt; ++i) {
        local  = iov[i].memh;
        buffer = iov[i].buffer;
        stride = iov[i].stride ? iov[i].stride : iov[i].length;
        for (n = 0; n < ucs_max(iov[i].count, 1u); ++n) {
            if ((local != UCT_MEM_HANDLE_NULL) &&
                (local->kind == UCT_GDRX_MEM_KIND_MAPPED)) {
                status = uct_gdrx_ep_copy_local(iface, dir, local,
                                                buffer + n * stride,
                                                iov[i].length,
                                                remote_addr + total, rkey);
            } else if (dir == UCT_GDRX_DIR_GET) {
                status = uct_gdrx_ep_get_large(iface, buffer + n * stride,
                                               iov[i].length,
                                               remote_addr + total, rkey);
            } else {
                status = uct_gdrx_ep_copy(dir, buffer + n * stride,
                                          iov[i].length, remote_addr + total,
                                          rkey);
            }
            if (status != UCS_OK) {
                return status;
            }
            total += iov[i].length;
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
    size_t i, total;

    if ((iovcnt > UCT_GDRX_MAX_IOV) || ((iov == NULL) && (iovcnt > 0))) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (ucs_likely(rkey != UCT_INVALID_RKEY)) {
        return uct_gdrx_ep_zcopy_iov(iface, dir, iov, iovcnt, remote_addr,
                                     rkey);
    }

    for (i = 0, total = 0; i < iovcnt; ++i) {
        total += iov[i].length * ucs_max(iov[i].count, 1u);
    }
    if (total == 0) {
        return UCS_OK;
    }

    status = uct_gdrx_ep_key_by_address(iface, remote_addr, total, &local);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gdrx_ep_zcopy_iov(iface, dir, iov, iovcnt, remote_addr,
                                   (uintptr_t)&local.key);
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
