/*
 * uct_gdrx_keycache.h - the interface's few most recent key-less mappings.
 *
 * SPDX-License-Identifier: MIT
 *
 * UCP's memory-type copies come without a remote key (the MD does not ask
 * for one): the endpoint finds the mapping by address.  A hit here skips
 * the registration cache's lookup and its lock.  Each entry holds its
 * registration (a reference on the cache region), so nothing unpins or
 * unmaps it while the interface may copy through it.  When CUDA frees the
 * memory, libgdrx revokes the pin and refuses the copy before touching
 * anything; after a graph launch the entry is confirmed by its buffer id
 * (uct_gdrx_mem_is_current); either way a dead entry is dropped and the
 * endpoint asks the MD again.  No
 * locks: used only where one thread at a time drives the interface (a
 * worker not in UCS_THREAD_MODE_MULTI), and only where libgdrx itself
 * revokes pins at CUDA frees.
 */
#ifndef UCT_GDRX_KEYCACHE_H
#define UCT_GDRX_KEYCACHE_H

#include "uct_gdrx_types.h"


#define UCT_GDRX_KEYCACHE_SIZE 4


typedef struct uct_gdrx_keycache_entry {
    uct_gdrx_mem_t *mem; /* held; NULL: empty */
    uct_gdrx_key_t key;  /* its key, packed once */
} uct_gdrx_keycache_entry_t;


typedef struct uct_gdrx_keycache {
    int                       enabled;
    unsigned                  next; /* round-robin victim */
    uct_gdrx_keycache_entry_t entry[UCT_GDRX_KEYCACHE_SIZE];
} uct_gdrx_keycache_t;


void uct_gdrx_keycache_init(uct_gdrx_keycache_t *cache, int enabled);

/* Release every registration the cache holds. */
void uct_gdrx_keycache_cleanup(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md);

/* The entry whose range holds [addr, addr+length), or NULL. */
const uct_gdrx_keycache_entry_t *
uct_gdrx_keycache_find(const uct_gdrx_keycache_t *cache, uint64_t addr,
                       size_t length);

/* Keep a mapped registration: the cache takes over the caller's reference
 * (and releases its victim's). */
void uct_gdrx_keycache_add(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                           uct_gdrx_mem_t *mem);

/* Forget and release a held registration (its copies were refused). */
void uct_gdrx_keycache_drop(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                            uct_gdrx_mem_t *mem);

#endif
