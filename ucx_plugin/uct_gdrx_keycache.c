/*
 * uct_gdrx_keycache.c - the interface's few most recent key-less mappings
 * (see the header for why a held, revoked entry is harmless).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_keycache.h"
#include "uct_gdrx_md_reg.h"
#include "uct_gdrx_mem.h"

#include <string.h>


void uct_gdrx_keycache_init(uct_gdrx_keycache_t *cache, int enabled)
{
    memset(cache, 0, sizeof(*cache));
    cache->enabled = enabled;
}

void uct_gdrx_keycache_cleanup(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md)
{
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        if (cache->entry[i].mem != NULL) {
            uct_gdrx_md_dereg(md, cache->entry[i].mem);
            cache->entry[i].mem = NULL;
        }
    }
}

const uct_gdrx_keycache_entry_t *
uct_gdrx_keycache_find(const uct_gdrx_keycache_t *cache, uint64_t addr,
                       size_t length)
{
    const uct_gdrx_keycache_entry_t *e;
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        e = &cache->entry[i];
        if ((e->mem != NULL) &&
            uct_gdrx_range_holds(e->key.dptr, e->key.length, addr, length)) {
            return e;
        }
    }
    return NULL;
}

void uct_gdrx_keycache_add(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                           uct_gdrx_mem_t *mem)
{
    uct_gdrx_keycache_entry_t *e = &cache->entry[cache->next++ %
                                                 UCT_GDRX_KEYCACHE_SIZE];

    if (e->mem != NULL) {
        uct_gdrx_md_dereg(md, e->mem);
    }
    e->mem = mem;
    uct_gdrx_mem_pack_key(mem, &e->key);
}

void uct_gdrx_keycache_drop(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                            uct_gdrx_mem_t *mem)
{
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        if (cache->entry[i].mem == mem) {
            cache->entry[i].mem = NULL;
            uct_gdrx_md_dereg(md, mem);
        }
    }
}
