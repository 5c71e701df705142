/*
 * sim_backing.h - where the simulated GPU's physical pages come from.
 *
 * SPDX-License-Identifier: MIT
 *
 * An object's pages are a range of a file: [offset, offset + size) of fd.
 * The sim keeps its own CPU view of that range (for cuMemcpy/cuMemset) and
 * exports the file through cuMemGetHandleForAddressRange.  The default
 * backing gives every object its own memfd; another backing (e.g. pages of
 * a qemu ivshmem BAR) only has to implement these two operations and be
 * added to sim_backing_select() in sim_backing.c.
 */
#ifndef SIM_BACKING_H
#define SIM_BACKING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sim_backing_object {
    int    fd;     /* file holding the pages; owned by the backing */
    off_t  offset; /* file offset of the object's first byte */
    void  *cpu;    /* the sim's private read-write CPU view of the object */
    size_t size;   /* object size as requested from create() */
    void  *priv;   /* for the backing's own use */
};

struct sim_backing_ops {
    const char *name; /* value of SIMCU_BACKING selecting it */
    /* Provide zero-filled pages for object `id` of `size` bytes (a multiple
     * of 2 MiB) on GPU `device`.  0 or a negative errno; on error *out is
     * left unusable and nothing is held. */
    int (*create)(uint64_t id, int device, size_t size, struct sim_backing_object *out);
    /* Drop every reference the sim holds (CPU view, fd).  Pages stay alive
     * while others still hold them. */
    void (*destroy)(struct sim_backing_object *obj);
};

extern const struct sim_backing_ops sim_backing_memfd;

/* The backing named by $SIMCU_BACKING (default "memfd"); NULL if unknown. */
const struct sim_backing_ops *sim_backing_select(void);

#endif /* SIM_BACKING_H */
