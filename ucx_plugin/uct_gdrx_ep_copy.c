/*
 * uct_gdrx_ep_copy.c - the slow paths of one endpoint copy (see
 * uct_gdrx_ep_copy.h): device memory gdrx could not pin, copied by the
 * copy engine; copies without a remote key; a copy outside its key.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_ep_copy.h"
#include "uct_gdrx_dma.h"
#include "uct_gdrx_keycache.h"
#include "uct_gdrx_md_reg.h"
#include "uct_gdrx_mem.h"


/* The first copy of the process through a key that maps nothing, said as
 * an error: GPU memory that UCX routed to a gdrx standing aside (UCX's own
 * CUDA hooks told it the memory type, and no other transport can copy
 * it), which UCX's own error message does not explain.  Other copies
 * outside their key are the caller's, said at debug level. */
static int uct_gdrx_ep_unmapped_said;

void uct_gdrx_ep_out_of_range(const uct_gdrx_key_t *key,
                              uint64_t remote_addr, size_t length)
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

/* Copy between buffer and remote_addr, one of them device memory gdrx
 * could not pin (dev_addr), by the copy engine, which nothing can replace
 * here; memory CUDA freed is UCS_ERR_INVALID_ADDR, as on the pinned
 * paths. */
ucs_status_t
uct_gdrx_ep_copy_unpinned(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                          void *buffer, size_t length, uint64_t remote_addr,
                          uint64_t dev_addr)
{
    void *remote = (void*)(uintptr_t)remote_addr;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    status = (dir == UCT_GDRX_DIR_PUT) ?
             uct_gdrx_dma_copy(&iface->dma, remote, buffer, length,
                               dev_addr) :
             uct_gdrx_dma_copy(&iface->dma, buffer, remote, length,
                               dev_addr);
    if (ucs_likely(status == UCS_OK)) {
        return UCS_OK;
    } else if (uct_gdrx_mem_is_host((void*)(uintptr_t)dev_addr, length)) {
        ucs_debug("gdrx: 0x%" PRIx64 " was freed", dev_addr);
        return UCS_ERR_INVALID_ADDR;
    } else if (status == UCS_ERR_UNSUPPORTED) {
        ucs_error("gdrx: cannot copy %zu bytes at 0x%" PRIx64 ": not pinned, "
                  "and no copy engine for it", length, dev_addr);
        return UCS_ERR_IO_ERROR;
    }
    return status;
}

/* UCX's memory-type pipelines (1.13's shared-memory rendezvous) call the
 * memtype endpoint with no remote key: the remote address is then memory of
 * this process.  Register it through the MD (a cache hit after the first
 * time) and use that registration's key. */
ucs_status_t
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

void uct_gdrx_ep_key_release(uct_gdrx_iface_t *iface,
                             uct_gdrx_ep_local_key_t *local)
{
    uct_gdrx_md_dereg(ucs_derived_of(iface->super.md, uct_gdrx_md_t),
                      local->mem);
}

/* A copy through the interface's recent mappings, or a registration of
 * the address; device_only: the address was device memory when UCX
 * registered it, and if it no longer is, CUDA freed it (the CPU must not
 * copy it as host memory). */
static ucs_status_t
uct_gdrx_ep_copy_by_address(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                            void *buffer, size_t length, uint64_t remote_addr,
                            int device_only)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);
    const uct_gdrx_keycache_entry_t *held;
    uct_gdrx_ep_local_key_t local;
    ucs_status_t status;

    if (iface->keycache.enabled) {
        held = uct_gdrx_keycache_find(&iface->keycache, remote_addr, length);
        if (held != NULL) {
            if (ucs_likely(uct_gdrx_mem_is_current(md, held->mem))) {
                status = uct_gdrx_ep_copy(iface, dir, buffer, length,
                                          remote_addr, (uintptr_t)&held->key);
                if (ucs_likely(status == UCS_OK)) {
                    return UCS_OK;
                }
            }
            /* CUDA freed it: libgdrx revoked the pin (nothing was copied),
             * or a graph's free node did (the buffer id changed) */
            uct_gdrx_keycache_drop(&iface->keycache, md, held->mem);
        }
    }

    status = device_only ?
             uct_gdrx_ep_key_resolve(iface, remote_addr, length, &local) :
             uct_gdrx_ep_key_by_address(iface, remote_addr, length, &local);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gdrx_ep_copy(iface, dir, buffer, length, remote_addr,
                              (uintptr_t)&local.key);
    if ((status == UCS_OK) && iface->keycache.enabled &&
        (local.mem->kind == UCT_GDRX_MEM_KIND_MAPPED)) {
        uct_gdrx_keycache_add(&iface->keycache, md, local.mem);
    } else {
        uct_gdrx_ep_key_release(iface, &local);
    }
    return status;
}

ucs_status_t
uct_gdrx_ep_copy_keyless(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr)
{
    return uct_gdrx_ep_copy_by_address(iface, dir, buffer, length,
                                       remote_addr, 0);
}

ucs_status_t
uct_gdrx_ep_key_resolve(uct_gdrx_iface_t *iface, uint64_t addr,
                        size_t length, uct_gdrx_ep_local_key_t *local)
{
    ucs_status_t status;

    status = uct_gdrx_ep_key_by_address(iface, addr, length, local);
    if ((status == UCS_OK) && (local->mem->kind == UCT_GDRX_MEM_KIND_HOST)) {
        ucs_debug("gdrx: 0x%" PRIx64 " length %zu is no device memory any "
                  "more", addr, length);
        uct_gdrx_ep_key_release(iface, local);
        return UCS_ERR_INVALID_ADDR;
    }
    return status;
}

ucs_status_t
uct_gdrx_ep_copy_resolve(uct_gdrx_iface_t *iface, uct_gdrx_dir_t dir,
                         void *buffer, size_t length, uint64_t remote_addr)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);

    uct_gdrx_count(&md->counters.resolved);
    return uct_gdrx_ep_copy_by_address(iface, dir, buffer, length,
                                       remote_addr, 1);
}
