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
 * Views.  One RM_MAP_MEMORY (BAR1 space and a mapping slot) and one mmap of
 * it.  The first view of an object maps the whole object (up to
 * NVRM_WHOLE_OBJECT_MAX, else just the window asked for), so every pin of
 * the object shares it.  Within a view each 64 KiB page is handed to at
 * most one mapped pin, ever: when that pin is unmapped its pages are
 * replaced by PROT_NONE (late accesses fault) and never handed out again;
 * a pin that needs such a page, or a page another mapped pin holds, gets a
 * new view of just its window.  The core may also revoke a pin's window
 * (PROT_NONE of its own, see backend.h); those pages are the core's until
 * it unmaps them, and we never touch them again.  A view with no mapped
 * pin left is torn down: its other pages unmapped, then RM_UNMAP_MEMORY.
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
#define NVRM_WHOLE_OBJECT_MAX (1ull << 30)

enum nvrm_obj_kind { NVRM_OBJ_DUP = 1, NVRM_OBJ_IMPORT = 2 };

struct nvrm_view {
    struct nvrm_view *next;
    uint64_t          obj_off, len;  /* part of the object mapped */
    uint8_t          *cpu;
    uint64_t          linear;        /* RM's token for RM_UNMAP_MEMORY */
    uint8_t          *page;          /* per 64 KiB page: enum in .c */
    size_t            mapped_pages;  /* pages held by mapped pins */
};

struct nvrm_object {
    struct nvrm_object *next;        /* in the lookup list while linked */
    int                 linked;
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
/* Stop finding o by its key (its source was freed). */
void nvrm_object_unlink(struct nvrm_object **list, struct nvrm_object *o);

/* CPU address of [off, off+len) of o (64 KiB aligned) in a view whose pages
 * there are fresh; the pages are marked held.  0 or -errno. */
int nvrm_view_map(struct nvrm_client *c, struct nvrm_object *o, uint64_t off, uint64_t len,
                  struct nvrm_view **view, uint8_t **cpu);
/* Release the pages of [off, off+len) in view.  revoked = 0: we make them
 * PROT_NONE; revoked = 1: the core already did and owns the range. */
void nvrm_view_release(struct nvrm_client *c, struct nvrm_object *o, struct nvrm_view *view,
                       uint64_t off, uint64_t len, int revoked);

#endif /* GDRX_NVRM_OBJECT_H */
