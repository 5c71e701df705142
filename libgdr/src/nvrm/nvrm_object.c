/*
 * nvrm_object.c - duplicate/import RM memory, verify it, map it (views)
 * and tear it down when the last reference goes.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_object.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "nvrm_rm.h"
#include "range.h"

static int key_matches(const struct nvrm_object *o, int ordinal, const struct nvrm_source *s)
{
    if (o->ordinal != ordinal || o->kind != s->kind)
        return 0;
    if (s->kind == NVRM_OBJ_DUP)
        return o->src_client == s->h_client && o->src_memory == s->h_memory &&
               o->serial == s->serial;
    return o->buffer_id == s->buffer_id;
}

/* The physical size of h, asked as the running branch answers it
 * (nvrm_layout.h): bytes in two halves (580), or 4 KiB units before. */
static int surface_size(struct nvrm_client *c, nvrm_handle_t h, uint64_t *size)
{
    int lo_hi = c->layout && c->layout->surface_size == NVRM_SURFACE_SIZE_LO_HI;
    struct nvrm_surface_info_entry e[2] = {
        { .index = lo_hi ? NVRM_SURFACE_INFO_PHYS_SIZE_LO : NVRM_SURFACE_INFO_PHYS_SIZE_4K },
        { .index = NVRM_SURFACE_INFO_PHYS_SIZE_HI },
    };
    struct nvrm_ctrl_surface_info si = { .count = lo_hi ? 2 : 1, .list = (uint64_t)(uintptr_t)e };
    int rc = nvrm_rm_control(c->ctl_fd, c->h_client, h, NVRM_CTRL_MEM_GET_SURFACE_INFO, &si,
                             sizeof(si));
    if (rc == 0)
        *size = lo_hi ? ((uint64_t)e[1].data << 32) | e[0].data
                      : (uint64_t)e[0].data * NVRM_SURFACE_SIZE_4K_SCALE;
    return rc;
}

/* Is h video memory, and how big is it?  The size query is advisory: if
 * the RM will not answer it, the source's own idea of the size is used. */
static int verify_memory(struct nvrm_client *c, nvrm_handle_t h, const struct nvrm_source *s,
                         uint64_t *size)
{
    struct nvrm_ctrl_addr_space as = { .h_object = h };
    int rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client,
                             NVRM_CTRL_CLIENT_GET_ADDR_SPACE_TYPE, &as, sizeof(as));
    if (rc) {
        gdrx_err("nvrm: address space of the duplicate unknown: %s (%s)", strerror(-rc),
                 nvrm_status_name(nvrm_last_status()));
        return rc;
    }
    if (as.addr_space != NVRM_ADDR_SPACE_VIDMEM) {
        gdrx_err("nvrm: the memory is not video memory (address space %u)", as.addr_space);
        return -EINVAL;
    }
    rc = surface_size(c, h, size);
    if (rc) {
        gdrx_dbg("nvrm: surface size query failed (%d); using the source's size", rc);
        *size = s->size_hint ? s->size_hint : s->min_size;
    }
    if (*size < s->min_size) {
        gdrx_err("nvrm: RM object of %#llx bytes cannot hold offset %#llx + %#llx",
                 (unsigned long long)*size, (unsigned long long)s->obj_off,
                 (unsigned long long)(s->min_size - s->obj_off));
        return -EINVAL;
    }
    return 0;
}

/* Import the single object exported to s->export_fd under gpu's device. */
static int import_from_fd(struct nvrm_client *c, const struct nvrm_gpu *g, int fd,
                          nvrm_handle_t h)
{
    /* fd and deviceInstance lead in every branch; maxObjects moved when
     * 545 added gpuInstanceId (nvrm_layout.h). */
    const struct nvrm_export_info_shape *sh = c->layout->export_info;
    uint8_t info[sizeof(struct nvrm_ctrl_export_info)] = { 0 };
    if (sh->size > sizeof(info))
        return -EPROTO;
    nvrm_wire_put32(info, offsetof(struct nvrm_ctrl_export_info, fd), (uint32_t)fd);
    int rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client,
                             NVRM_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO, info, sh->size);
    if (rc)
        return rc;
    uint32_t dev = nvrm_wire_u32(info, offsetof(struct nvrm_ctrl_export_info, device_instance));
    uint16_t max_objects;
    memcpy(&max_objects, info + sh->max_objects_off, sizeof(max_objects));
    if (dev != g->device_instance || max_objects < 1) {
        gdrx_err("nvrm: exported memory belongs to device instance %u, not %u", dev,
                 g->device_instance);
        return -EINVAL;
    }
    struct nvrm_ctrl_import_objects *imp = calloc(1, sizeof(*imp));
    if (!imp)
        return -ENOMEM;
    imp->fd = fd;
    imp->h_parent = g->h_device;
    imp->objects[0] = h;
    imp->num_objects = 1;
    rc = nvrm_rm_control(c->ctl_fd, c->h_client, c->h_client,
                         NVRM_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD, imp, sizeof(*imp));
    if (rc == 0 && imp->object_types[0] != NVRM_IMPORT_TYPE_VIDMEM) {
        gdrx_err("nvrm: imported object is of type %u, not video memory",
                 imp->object_types[0]);
        nvrm_rm_free(c->ctl_fd, c->h_client, g->h_device, h);
        rc = -EINVAL;
    }
    free(imp);
    return rc;
}

int nvrm_object_get(struct nvrm_client *c, struct nvrm_object **list, int ordinal,
                    struct nvrm_source *src, struct nvrm_object **out)
{
    int rc;
    struct nvrm_gpu *g = NULL;

    for (struct nvrm_object *o = *list; o; o = o->next) {
        if (!key_matches(o, ordinal, src))
            continue;
        if (src->export_fd >= 0)
            close(src->export_fd);
        src->export_fd = -1;
        if (o->size < src->min_size)
            return -EINVAL;
        o->refs++;
        *out = o;
        return 0;
    }
    rc = nvrm_client_gpu(c, ordinal, &g);
    nvrm_handle_t h = nvrm_client_handle(c);
    if (rc == 0 && src->kind == NVRM_OBJ_DUP) {
        rc = nvrm_rm_dup(c->ctl_fd, c->h_client, g->h_device, &h, src->h_client,
                         src->h_memory);
        if (rc)
            gdrx_err("nvrm: cannot duplicate CUDA's memory 0x%x/0x%x: %s (%s)", src->h_client,
                     src->h_memory, strerror(-rc), nvrm_status_name(nvrm_last_status()));
    } else if (rc == 0) {
        rc = import_from_fd(c, g, src->export_fd, h);
        if (rc)
            gdrx_err("nvrm: cannot import the exported memory: %s", strerror(-rc));
    }
    if (src->export_fd >= 0)
        close(src->export_fd);
    src->export_fd = -1;
    if (rc)
        return rc;

    uint64_t size = 0;
    struct nvrm_object *o = NULL;
    rc = verify_memory(c, h, src, &size);
    if (rc == 0 && !(o = calloc(1, sizeof(*o))))
        rc = -ENOMEM;
    if (rc) {
        nvrm_rm_free(c->ctl_fd, c->h_client, g->h_device, h);
        return rc;
    }
    o->ordinal = ordinal;
    o->kind = src->kind;
    o->src_client = src->h_client;
    o->src_memory = src->h_memory;
    o->serial = src->serial;
    o->buffer_id = src->buffer_id;
    o->h_memory = h;
    o->size = size;
    o->refs = 1;
    o->state = NVRM_OBJ_FINDABLE;
    o->next = *list;
    *list = o;
    gdrx_dbg("nvrm: object 0x%x (%#llx bytes) on device %d", h, (unsigned long long)size,
             ordinal);
    *out = o;
    return 0;
}

void nvrm_object_abandon_all(struct nvrm_object *list)
{
    for (struct nvrm_object *o = list; o; o = o->next)
        for (struct nvrm_view *v = o->views; v; v = v->next)
            if (v->fd >= 0) {
                close(v->fd);
                v->fd = -1;
            }
}

void nvrm_object_unlink(struct nvrm_object **list, struct nvrm_object *o)
{
    if (o->state != NVRM_OBJ_FINDABLE)
        return;
    for (struct nvrm_object **pp = list; *pp; pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    }
    o->next = NULL;
    o->state = NVRM_OBJ_ORPHANED;
}

/* Give the RM mapping back; every pin's CPU mapping of it is gone. */
static void view_destroy(struct nvrm_client *c, struct nvrm_object *o, struct nvrm_view *v)
{
    int rc = nvrm_rm_unmap(c->ctl_fd, c->h_client, c->gpus[o->ordinal].h_device, o->h_memory,
                           v->linear);
    if (rc)
        gdrx_warn("nvrm: RM_UNMAP_MEMORY failed: %s (%s)", strerror(-rc),
                  nvrm_status_name(nvrm_last_status()));
    close(v->fd);
    for (struct nvrm_view **pp = &o->views; *pp; pp = &(*pp)->next) {
        if (*pp == v) {
            *pp = v->next;
            break;
        }
    }
    free(v);
}

void nvrm_object_put(struct nvrm_client *c, struct nvrm_object **list, struct nvrm_object *o)
{
    if (--o->refs > 0)
        return;
    while (o->views)
        view_destroy(c, o, o->views); /* only if a pin leaked its mapping */
    int rc = nvrm_rm_free(c->ctl_fd, c->h_client, c->gpus[o->ordinal].h_device, o->h_memory);
    if (rc)
        gdrx_warn("nvrm: freeing our handle 0x%x failed: %s", o->h_memory, strerror(-rc));
    nvrm_object_unlink(list, o);
    free(o);
}

/* A new RM mapping of [off, off+len) of o on a fresh /dev/nvidiaN (the
 * kernel keeps one mmap context per open file), kept open for the mmaps. */
static int view_create(struct nvrm_client *c, struct nvrm_object *o, uint64_t off,
                       uint64_t len, struct nvrm_view **out)
{
    const struct nvrm_gpu *g = &c->gpus[o->ordinal];
    char path[32];

    snprintf(path, sizeof(path), "/dev/nvidia%d", g->minor);
    struct nvrm_view *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->fd = open(path, O_RDWR | O_CLOEXEC);
    if (v->fd < 0) {
        int e = errno;
        gdrx_err("nvrm: cannot open %s: %s", path, strerror(e));
        free(v);
        return -e;
    }
    int rc = nvrm_rm_map(c->ctl_fd, c->h_client, g->h_device, o->h_memory, off, len, v->fd,
                         &v->linear);
    if (rc) {
        gdrx_err("nvrm: RM_MAP_MEMORY of %#llx bytes at %#llx failed: %s (%s)",
                 (unsigned long long)len, (unsigned long long)off, strerror(-rc),
                 nvrm_status_name(nvrm_last_status()));
        close(v->fd);
        free(v);
        return rc;
    }
    v->obj_off = off;
    v->len = len;
    v->next = o->views;
    o->views = v;
    *out = v;
    return 0;
}

/* Map all of v (the driver maps a context only whole), keep [off, off+len)
 * of the object and unmap the rest.  The result is MADV_DONTFORK. */
static int view_mmap(const struct nvrm_view *v, uint64_t off, uint64_t len, uint8_t **cpu)
{
    uint8_t *base = mmap(NULL, v->len, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        gdrx_err("nvrm: mmap of a BAR1 view failed: %s", strerror(e));
        return -e;
    }
    uint64_t head = off - v->obj_off, tail = v->len - head - len;
    uint8_t *p = base + head;
    if ((head && munmap(base, head) != 0) || (tail && munmap(p + len, tail) != 0) ||
        madvise(p, len, MADV_DONTFORK) != 0) {
        int e = errno;
        gdrx_err("nvrm: cannot trim or protect a BAR1 mapping: %s", strerror(e));
        munmap(base, v->len);
        return -e;
    }
    *cpu = p;
    return 0;
}

int nvrm_view_map(struct nvrm_client *c, struct nvrm_object *o, uint64_t off, uint64_t len,
                  struct nvrm_view **view, uint8_t **cpu)
{
    if ((off | len) & (NVRM_PAGE_SIZE - 1) || len == 0 || !gdrx_range_within(0, o->size, off, len))
        return -EINVAL;
    struct nvrm_view *v;
    for (v = o->views; v; v = v->next)
        if (off >= v->obj_off && off + len <= v->obj_off + v->len)
            break;
    int made = 0;
    if (!v) {
        int rc = view_create(c, o, off, len, &v);
        if (rc)
            return rc;
        made = 1;
    }
    int rc = view_mmap(v, off, len, cpu);
    if (rc) {
        if (made)
            view_destroy(c, o, v);
        return rc;
    }
    v->refs++;
    *view = v;
    return 0;
}

void nvrm_view_release(struct nvrm_client *c, struct nvrm_object *o, struct nvrm_view *v,
                       uint8_t *cpu, uint64_t len, int revoked)
{
    /* Late accesses through an unmapped pin fault. */
    if (!revoked && munmap(cpu, len) != 0)
        gdrx_warn("nvrm: munmap of a BAR1 mapping failed: %s", strerror(errno));
    if (--v->refs == 0)
        view_destroy(c, o, v);
}
