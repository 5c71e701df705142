/*
 * uct_gdrx_keycache.h - the interface's few most recent key-less mappings.
 *
 * SPDX-License-Identifier: MIT
 *
 * UCP's memory-type copies come without a remote key (the MD does not ask
 * for one): the endpoint finds the mapping by address.  A hit here skips
 * the registration cache's lookup and reference count.  An entry is a copy
 * of a key, never a reference: a pin unpinned or revoked since is refused
 * by libgdrx's copy (handle generation, revocation, bounds), and the caller
 * then drops the entry and asks the MD.  Entries are read under a sequence
 * count, so a reader never mixes the fields of two keys.  Used only where
 * libgdrx itself revokes pins when CUDA frees their memory.
 */
#ifndef UCT_GDRX_KEYCACHE_H
#define UCT_GDRX_KEYCACHE_H

#include "uct_gdrx_md.h"


#define UCT_GDRX_KEYCACHE_SIZE 4


typedef struct uct_gdrx_keycache_entry {
    uint64_t seq;      /* odd while written; 0: never filled */
    uint64_t pin_id;
    uint64_t dptr;
    uint64_t length;
    uint64_t cpu_ptr;
} uct_gdrx_keycache_entry_t;


typedef struct uct_gdrx_keycache {
    int                       enabled;
    unsigned                  next;   /* round-robin victim */
    uct_gdrx_keycache_entry_t entry[UCT_GDRX_KEYCACHE_SIZE];
} uct_gdrx_keycache_t;


void uct_gdrx_keycache_init(uct_gdrx_keycache_t *cache, int enabled);

/* 1 and a consistent copy of the key whose range holds [addr, addr+length). */
int uct_gdrx_keycache_find(uct_gdrx_keycache_t *cache, uint64_t addr,
                           size_t length, uct_gdrx_key_t *key);

/* Remember a mapped key (a writer that loses a race just skips). */
void uct_gdrx_keycache_add(uct_gdrx_keycache_t *cache,
                           const uct_gdrx_key_t *key);

/* Forget every entry of this pin. */
void uct_gdrx_keycache_drop(uct_gdrx_keycache_t *cache, uint64_t pin_id);

#endif
