/*
 * uct_gdrx_ep_copy.h - reaching the device memory of one copy of a gdrx
 * endpoint: the remote key's range and mapping (inline: every operation's
 * path), and in uct_gdrx_ep_copy.c what is off that path: memory gdrx
 * could not pin (the copy engine), copies without a key, and the report of
 * a copy outside its key.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_EP_COPY_H
#define UCT_GDRX_EP_COPY_H

#include "uct_gdrx_iface.h"
#include "uct_gdrx_mem.h"
#include "uct_gdrx_share.h"

#include <inttypes.h>
#include <string.h>
#include <ucs/debug/log.h>


/* A key made on the spot for an address of this process. */
typedef struct uct_gdrx_ep_local_key {
    uct_gdrx_key_t key;
    uct_gdrx_mem_t *mem;
} uct_gdrx_ep_local_key_t;


/* Says why [remote_addr, remote_addr + length) is not copied: outside the
 * key (debug), or through a key that maps nothing (once, as an error). */
void uct_gdrx_ep_out_of_range(const uct_gdrx_key_t *key,
                              uint64_t remote_addr, size_t length);

/* Copy between buffer and remote_addr, one of them device memory gdrx
 * could not pin (dev_addr), by the copy engine. */
ucs_status_t
uct_gdrx_ep_copy_unpinned(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                          void *buffer, size_t length, uint64_t remote_addr,
                          uint64_t dev_addr);

/* A key for remote_addr, memory of this process, registered through the
 * MD; uct_gdrx_ep_key_release gives it back. */
ucs_status_t
uct_gdrx_ep_key_by_address(uct_gdrx_iface_t *iface, uint64_t remote_addr,
                           size_t length, uct_gdrx_ep_local_key_t *local);
void uct_gdrx_ep_key_release(uct_gdrx_iface_t *iface,
                             uct_gdrx_ep_local_key_t *local);

/* A copy with no remote key (UCT_INVALID_RKEY): remote_addr is memory of
 * this process, found through the interface's recent mappings or the MD. */
ucs_status_t
uct_gdrx_ep_copy_keyless(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr);

/* Whether a copy through this key that failed with UCS_ERR_INVALID_ADDR is
 * served by the device memory now at its address: a span (it maps
 * nothing), or a mapping whose pin a graph launch since it was made may
 * have revoked.  UCP >= 1.15 keeps memhs in its own registration cache,
 * which a graph's free nodes do not invalidate (they raise no FREE event),
 * and a relaunch puts a new allocation at the node's address: failing the
 * copy would abort UCP, where a CUDA copy of the address would succeed.
 * A key whose memory a seen free revoked stays refused (UCX's caches
 * dropped it at that FREE; a caller holding it on is wrong).  Keys are of
 * this process only, so the address is the caller's own. */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_ep_key_resolvable(const uct_gdrx_key_t *key)
{
    return (key->kind == UCT_GDRX_MEM_KIND_SPAN) ||
           ((key->kind == UCT_GDRX_MEM_KIND_MAPPED) &&
            (key->checked != uct_gdrx_events_graph_epoch()));
}

/* The copy of a key uct_gdrx_ep_key_resolvable accepts, through the
 * allocation now at remote_addr (as a CUDA copy of that address would):
 * UCS_ERR_INVALID_ADDR where there is none (the memory was freed: never a
 * CPU copy of the address). */
ucs_status_t
uct_gdrx_ep_copy_resolve(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr);

/* A key for the device memory now at addr, as uct_gdrx_ep_copy_resolve
 * uses (host memory, or none: UCS_ERR_INVALID_ADDR); released with
 * uct_gdrx_ep_key_release. */
ucs_status_t
uct_gdrx_ep_key_resolve(uct_gdrx_iface_t *iface, uint64_t addr,
                        size_t length, uct_gdrx_ep_local_key_t *local);


/* The one remote range check of every keyed copy, by the CPU or by the
 * copy engine (which libgdrx's own check does not cover). */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_key_check(const uct_gdrx_key_t *key, uint64_t remote_addr,
                      size_t length)
{
    if (ucs_unlikely(!uct_gdrx_range_holds(key->dptr, key->length,
                                           remote_addr, length))) {
        uct_gdrx_ep_out_of_range(key, remote_addr, length);
        return UCS_ERR_OUT_OF_RANGE;
    }
    return UCS_OK;
}

/* The CPU address of [remote_addr, remote_addr + length) in the key's
 * mapping, once the range is checked. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_key_map(const uct_gdrx_key_t *key, uint64_t remote_addr,
                    size_t length, void **mapped_p)
{
    ucs_status_t status = uct_gdrx_ep_key_check(key, remote_addr, length);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    *mapped_p = (void*)(uintptr_t)(key->cpu_ptr + (remote_addr - key->dptr));
    return UCS_OK;
}

/* The key's pin is still live (CUDA did not free the memory): what a copy
 * that bypasses the mapping checks first, the copy engine's between memory
 * gdrx could not pin and a mapped key, as the CPU path's own copy does.  A
 * zero-length copy checks the handle, revocation and the address; keys of
 * other kinds have no pin to check. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_key_live(const uct_gdrx_key_t *key, uint64_t remote_addr,
                     size_t length)
{
    ucs_status_t status;
    gdrx_pin_t pin;
    void *mapped;
    int ret;

    if ((key->kind != UCT_GDRX_MEM_KIND_MAPPED) || (length == 0)) {
        return UCS_OK; /* nothing to reach, as for uct_gdrx_ep_copy */
    }

    status = uct_gdrx_ep_key_map(key, remote_addr, length, &mapped);
    if (status != UCS_OK) {
        return status;
    }

    pin.id = key->pin_id;
    ret    = gdrx_copy_from_mapping(pin, &pin, mapped, 0);
    if (ucs_unlikely(ret != 0)) {
        ucs_debug("gdrx: remote 0x%" PRIx64 " length %zu not copied: %s",
                  remote_addr, length, gdrx_strerror(ret));
        return uct_gdrx_mem_status(ret);
    }
    return UCS_OK;
}

/* Copy length bytes between buffer and remote_addr of the key's range. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_ep_copy(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir, void *buffer,
                 size_t length, uint64_t remote_addr, uct_rkey_t rkey)
{
    const uct_gdrx_key_t *key = (const uct_gdrx_key_t*)rkey;
    ucs_status_t status;
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

    uct_gdrx_share_check(key->dptr);
    status = uct_gdrx_ep_key_map(key, remote_addr, length, &mapped);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    if (ucs_unlikely(key->kind != UCT_GDRX_MEM_KIND_MAPPED)) {
        if (key->kind == UCT_GDRX_MEM_KIND_UNPINNED) {
            return uct_gdrx_ep_copy_unpinned(iface, dir, buffer, length,
                                             remote_addr, remote_addr);
        }
        /* a span maps nothing: uct_gdrx_ep_copy_resolve serves it */
        return UCS_ERR_INVALID_ADDR;
    }

    pin.id = key->pin_id;
    if (dir == UCT_GDRX_DIR_PUT) {
        ret = gdrx_copy_to_mapping(pin, mapped, buffer, length);
    } else {
        ret = gdrx_copy_from_mapping(pin, buffer, mapped, length);
    }

    if (ucs_unlikely(ret != 0)) {
        ucs_debug("gdrx: copy at 0x%" PRIx64 " length %zu failed: %s",
                  remote_addr, length, gdrx_strerror(ret));
        return uct_gdrx_mem_status(ret);
    }

    return UCS_OK;
}

#endif
