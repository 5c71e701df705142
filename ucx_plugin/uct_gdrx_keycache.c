/*
 * uct_gdrx_keycache.c - the interface's few most recent key-less mappings
 * (see the header for why a stale entry is harmless).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_keycache.h"

#include <string.h>


void uct_gdrx_keycache_init(uct_gdrx_keycache_t *cache, int enabled)
{
    memset(cache, 0, sizeof(*cache));
    cache->enabled = enabled;
}

int uct_gdrx_keycache_find(uct_gdrx_keycache_t *cache, uint64_t addr,
                           size_t length, uct_gdrx_key_t *key)
{
    uct_gdrx_keycache_entry_t *e;
    uint64_t seq, dptr, len;
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        e   = &cache->entry[i];
        seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if ((seq == 0) || (seq & 1)) {
            continue;
        }

        dptr = __atomic_load_n(&e->dptr, __ATOMIC_RELAXED);
        len  = __atomic_load_n(&e->length, __ATOMIC_RELAXED);
        if ((addr < dptr) || (length > len) || (addr - dptr > len - length)) {
            continue;
        }

        key->kind    = UCT_GDRX_MEM_KIND_MAPPED;
        key->dptr    = dptr;
        key->length  = len;
        key->pin_id  = __atomic_load_n(&e->pin_id, __ATOMIC_RELAXED);
        key->cpu_ptr = __atomic_load_n(&e->cpu_ptr, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq) {
            return 1;
        }
    }
    return 0;
}

/* Make entry e odd (ours to write); 0 if another writer has it. */
static int uct_gdrx_keycache_lock(uct_gdrx_keycache_entry_t *e, uint64_t *seq)
{
    *seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    return !(*seq & 1) &&
           __atomic_compare_exchange_n(&e->seq, seq, *seq + 1, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void uct_gdrx_keycache_write(uct_gdrx_keycache_entry_t *e,
                                    uint64_t seq, const uct_gdrx_key_t *key)
{
    __atomic_store_n(&e->pin_id, key ? key->pin_id : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->dptr, key ? key->dptr : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->length, key ? key->length : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->cpu_ptr, key ? key->cpu_ptr : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

void uct_gdrx_keycache_add(uct_gdrx_keycache_t *cache,
                           const uct_gdrx_key_t *key)
{
    unsigned i = __atomic_fetch_add(&cache->next, 1, __ATOMIC_RELAXED) %
                 UCT_GDRX_KEYCACHE_SIZE;
    uct_gdrx_keycache_entry_t *e = &cache->entry[i];
    uint64_t seq;

    if (key->kind == UCT_GDRX_MEM_KIND_MAPPED &&
        uct_gdrx_keycache_lock(e, &seq)) {
        uct_gdrx_keycache_write(e, seq, key);
    }
}

void uct_gdrx_keycache_drop(uct_gdrx_keycache_t *cache, uint64_t pin_id)
{
    uct_gdrx_keycache_entry_t *e;
    uint64_t seq;
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        e = &cache->entry[i];
        if ((__atomic_load_n(&e->pin_id, __ATOMIC_RELAXED) == pin_id) &&
            uct_gdrx_keycache_lock(e, &seq)) {
            uct_gdrx_keycache_write(e, seq, NULL);
        }
    }
}
