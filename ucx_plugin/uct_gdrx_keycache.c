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
        if (cache->mem[i] != NULL) {
            uct_gdrx_md_dereg(md, cache->mem[i]);
            cache->mem[i] = NULL;
        }
    }
}

uct_gdrx_mem_t *uct_gdrx_keycache_find(uct_gdrx_keycache_t *cache,
                                       uint64_t addr, size_t length)
{
    uct_gdrx_mem_t *mem;
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        mem = cache->mem[i];
        if ((mem != NULL) && (addr >= mem->dptr) && (length <= mem->length) &&
            (addr - mem->dptr <= mem->length - length)) {
            return mem;
        }
    }
    return NULL;
}

void uct_gdrx_keycache_add(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                           uct_gdrx_mem_t *mem)
{
    unsigned i = cache->next++ % UCT_GDRX_KEYCACHE_SIZE;

    if (cache->mem[i] != NULL) {
        uct_gdrx_md_dereg(md, cache->mem[i]);
    }
    cache->mem[i] = mem;
}

void uct_gdrx_keycache_drop(uct_gdrx_keycache_t *cache, uct_gdrx_md_t *md,
                            uct_gdrx_mem_t *mem)
{
    unsigned i;

    for (i = 0; i < UCT_GDRX_KEYCACHE_SIZE; ++i) {
        if (cache->mem[i] == mem) {
            cache->mem[i] = NULL;
            uct_gdrx_md_dereg(md, mem);
        }
    }
}
