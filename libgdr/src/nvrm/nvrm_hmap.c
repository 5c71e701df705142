/*
 * nvrm_hmap.c - open addressing with linear probing and back-shift deletion.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_hmap.h"

#include <stdlib.h>

/* A 64-bit mix (xorshift-multiply) so that handles differing in a few bits
 * spread over the table. */
static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

struct nvrm_hmap_entry *nvrm_hmap_get(const struct nvrm_hmap *m, uint64_t key)
{
    if (!m->cap || key == 0)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key)
            return &m->slots[i];
        if (m->slots[i].key == 0)
            return NULL;
    }
}

static int grow(struct nvrm_hmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    struct nvrm_hmap_entry *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = slot_of(m->slots[i].key, ncap);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

struct nvrm_hmap_entry *nvrm_hmap_put(struct nvrm_hmap *m, uint64_t key, int *is_new)
{
    struct nvrm_hmap_entry *e = nvrm_hmap_get(m, key);
    *is_new = 0;
    if (e || key == 0)
        return e;
    if ((m->count + 1) * 2 > m->cap && grow(m))
        return NULL;
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].key)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = (struct nvrm_hmap_entry){ .key = key };
    m->count++;
    *is_new = 1;
    return &m->slots[i];
}

void nvrm_hmap_del(struct nvrm_hmap *m, uint64_t key)
{
    struct nvrm_hmap_entry *e = nvrm_hmap_get(m, key);
    if (!e)
        return;
    size_t mask = m->cap - 1, hole = (size_t)(e - m->slots);
    /* Move later entries of the probe run back into the hole when their
     * home slot does not lie cyclically in (hole, j]. */
    for (size_t j = (hole + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(m->slots[j].key, m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->count--;
}

void nvrm_hmap_clear(struct nvrm_hmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}
