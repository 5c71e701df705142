/*
 * nvrm_object.h - our duplicates of CUDA's RM memory objects and their CPU
 * mappings ("views"), shared and reference-counted.
 *
 * SPDX-License-Identifier: MIT
 *
 * Objects.  One per (GPU, CUDA's hClient, hMemory, source serial) for
 * duplicated memory, or per (GPU, buffer id) for memory imported from an
 * exported fd.  Pins hold references; the last one frees our duplicate.
 * An object whose source CUDA freed is unlinked from lookups at once, so
 * a handle value CUDA reuses for new memory gets a new object.
 *
 * Views.  One RM_MAP_MEMORY (BAR1 space and a mapping slot) of part of an
 * object, and the /dev/nvidiaN fd that holds its mmap context.  A view is
 * made for the window of the pin that first needs it, never more, so BAR1
 * use follows what is pinned and no neighbouring memory is exposed.  A
 * later pin whose window lies inside an existing view shares it: every
 * mapped pin gets an mmap of its own (the fd's context allows any number),
 * trimmed to its window, so a pin's CPU range is never another pin's and
 * the core may revoke it alone (PROT_NONE, backend.h).  Mappings are
 * MADV_DONTFORK: the driver's VMA is not VM_DONTCOPY, and a forked child
 * must not reach the parent's GPU memory.  The last mapped pin's release
 * gives the view back (RM_UNMAP_MEMORY, close).
 *
 * Callers hold the backend lock.
 */
#ifndef GDRX_NVRM_OBJECT_H
#define GDRX_NVRM_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "nvrm_client.h"

#define NVRM_PAGE_SHIFT 16
#define NVRM_PAGE_SIZE  (1ull << NVRM_PAGE_SHIFT)

enum nvrm_obj_kind { NVRM_OBJ_DUP = 1, NVRM_OBJ_IMPORT = 2 };

struct nvrm_view {
    struct nvrm_view *next;
    uint64_t          obj_off, len;  /* part of the object mapped */
    int               fd;            /* /dev/nvidiaN holding the mmap context */
    uint64_t          linear;        /* RM's token for RM_UNMAP_MEMORY */
    unsigned          refs;          /* mapped pins */
};

/* Whether lookups still find an object (its source may have been freed). */
enum nvrm_obj_state {
    NVRM_OBJ_FINDABLE = 1, /* in the lookup list: new pins of its key share it */
    NVRM_OBJ_ORPHANED,     /* CUDA freed the source: kept for its pins only */
};

struct nvrm_object {
    struct nvrm_object *next;        /* in the lookup list while FINDABLE */
    enum nvrm_obj_state state;
    int                 ordinal;     /* CUDA device */
    enum nvrm_obj_kind  kind;
    nvrm_handle_t       src_client, src_memory; /* NVRM_OBJ_DUP */
    uint64_t            serial;                 /* NVRM_OBJ_DUP */
    uint64_t            buffer_id;              /* NVRM_OBJ_IMPORT */
    nvrm_handle_t       h_memory;    /* ours, under the GPU's device */
    uint64_t            size;
    int                 refs;
    struct nvrm_view   *views;
};

/* Where a pin's memory comes from (nvrm_discover.c fills it). */
struct nvrm_source {
    enum nvrm_obj_kind kind;
    nvrm_handle_t      h_client, h_memory;  /* DUP: CUDA's handles */
    uint64_t           serial;              /* DUP */
    int                export_fd;           /* IMPORT: ctl fd, consumed */
    uint64_t           buffer_id;           /* IMPORT */
    uint64_t           obj_off;  /* object offset of the pin's window */
    uint64_t           min_size; /* the object must be at least this big */
    uint64_t           size_hint;/* object size known from the source, or 0 */
};

/* Find the object for src or make one (dup/import + verification), with a
 * reference taken.  Consumes src->export_fd.  0 or -errno. */
int nvrm_object_get(struct nvrm_client *c, struct nvrm_object **list, int ordinal,
                    struct nvrm_source *src, struct nvrm_object **out);
/* Drop a reference; the last frees our handle. */
void nvrm_object_put(struct nvrm_client *c, struct nvrm_object **list, struct nvrm_object *o);
/* In a forked child: close our copies of the views' fds, touching no RM
 * state and no mapping (both are the parent's). */
void nvrm_object_abandon_all(struct nvrm_object *list);
/* Stop finding o by its key (its source was freed). */
void nvrm_object_unlink(struct nvrm_object **list, struct nvrm_object *o);

/* A CPU mapping of exactly [off, off+len) of o (64 KiB aligned), in a
 * view that covers it (made if none does).  0 or -errno; on failure
 * nothing is left behind. */
int nvrm_view_map(struct nvrm_client *c, struct nvrm_object *o, uint64_t off, uint64_t len,
                  struct nvrm_view **view, uint8_t **cpu);
/* Drop a pin's mapping cpu (len bytes) of view.  revoked = 0: we unmap it;
 * revoked = 1: the core replaced it and owns the range. */
void nvrm_view_release(struct nvrm_client *c, struct nvrm_object *o, struct nvrm_view *view,
                       uint8_t *cpu, uint64_t len, int revoked);

#endif /* GDRX_NVRM_OBJECT_H */
