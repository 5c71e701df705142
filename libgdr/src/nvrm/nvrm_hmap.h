/*
 * nvrm_hmap.h - a small open-addressing hash map from a non-zero 64-bit key
 * to two 64-bit words, for the trace's per-handle tables (O(1) per ioctl).
 *
 * SPDX-License-Identifier: MIT
 *
 * Not thread-safe: the trace calls it under its own lock.  Grows (doubling)
 * at half load; deletion shifts entries back, so no tombstones accumulate.
 */
#ifndef GDRX_NVRM_HMAP_H
#define GDRX_NVRM_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct nvrm_hmap_entry {
    uint64_t key;   /* 0 = empty slot */
    uint64_t a, b;  /* the caller's two words */
};

struct nvrm_hmap {
    struct nvrm_hmap_entry *slots;
    size_t                  cap;   /* power of two, or 0 */
    size_t                  count;
};

/* The entry of key, or NULL. */
struct nvrm_hmap_entry *nvrm_hmap_get(const struct nvrm_hmap *m, uint64_t key);
/* The entry of key, inserted with a = b = 0 if new (*is_new says which);
 * NULL when key is 0 or memory runs out (the map is unchanged). */
struct nvrm_hmap_entry *nvrm_hmap_put(struct nvrm_hmap *m, uint64_t key, int *is_new);
/* Remove key if present.  Entry pointers obtained before are invalid. */
void nvrm_hmap_del(struct nvrm_hmap *m, uint64_t key);
/* Free the storage; the map is empty afterwards. */
void nvrm_hmap_clear(struct nvrm_hmap *m);

/* The key of an RM object: its client and its handle. */
static inline uint64_t nvrm_hmap_key(uint32_t h_client, uint32_t h_object)
{
    return (uint64_t)h_client << 32 | h_object;
}

#endif /* GDRX_NVRM_HMAP_H */
