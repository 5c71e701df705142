/*
 * emu_rm.c - the emulator's resource manager: clients, devices, memory
 * objects, dup/share, CPU mappings, and the escapes that reach them.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

struct emu_obj *emu_find_obj(uint32_t client, uint32_t handle)
{
    for (struct emu_obj *o = emu.objs; o; o = o->next)
        if (o->client == client && o->handle == handle)
            return o;
    return NULL;
}

/* clientValidate + the PID check of rm_create_mmap_context, which the
 * emulator applies to every request naming a client. */
int emu_client_check(int fd, uint32_t client)
{
    struct emu_obj *c = emu_find_obj(client, client);
    if (!c || c->cls != NVRM_CLASS_ROOT_CLIENT || c->owner_fd != fd || c->pid != getpid())
        return NVRM_ERR_INVALID_CLIENT;
    return NVRM_OK;
}

static struct emu_obj *new_obj(uint32_t client, uint32_t handle, uint32_t parent,
                               uint32_t cls, int gpu)
{
    struct emu_obj *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->client = client;
    o->handle = handle;
    o->parent = parent;
    o->cls = cls;
    o->gpu = gpu;
    o->owner_fd = -1;
    o->next = emu.objs;
    emu.objs = o;
    return o;
}

struct emu_obj *emu_new_memory_locked(uint32_t client, uint32_t handle, uint32_t parent,
                                      struct emu_mem *mem)
{
    struct emu_obj *o = new_obj(client, handle, parent, NVRM_CLASS_MEMORY_LOCAL, mem->gpu);
    if (!o)
        return NULL;
    o->mem = mem;
    mem->refs++;
    emu.stats.memory_objects++;
    return o;
}

void emu_mem_put_locked(struct emu_mem *mem)
{
    if (mem && --mem->refs == 0) {
        if (mem->memfd >= 0)
            emu.real.close(mem->memfd);
        free(mem);
    }
}

static void drop_rmmaps_locked(uint32_t client, uint32_t memory)
{
    for (struct emu_rmmap **pp = &emu.rmmaps; *pp;) {
        struct emu_rmmap *m = *pp;
        if (m->client == client && (memory == 0 || m->memory == memory)) {
            *pp = m->next;
            emu.stats.rm_mapped_bytes -= (long)m->length;
            free(m);
            emu.stats.rm_maps_live--;
        } else {
            pp = &m->next;
        }
    }
}

/* Free one object and, first, everything below it. */
static void free_tree_locked(uint32_t client, uint32_t handle)
{
    for (int again = 1; again;) {
        again = 0;
        for (struct emu_obj *o = emu.objs; o; o = o->next)
            if (o->client == client && o->parent == handle && o->handle != handle) {
                free_tree_locked(client, o->handle);
                again = 1;
                break;
            }
    }
    for (struct emu_obj **pp = &emu.objs; *pp; pp = &(*pp)->next) {
        struct emu_obj *o = *pp;
        if (o->client != client || o->handle != handle)
            continue;
        *pp = o->next;
        if (o->mem) {
            drop_rmmaps_locked(client, handle);
            emu_mem_put_locked(o->mem);
            emu.stats.memory_objects--;
        }
        if (o->cls == NVRM_CLASS_ROOT_CLIENT) {
            drop_rmmaps_locked(client, 0);
            emu.stats.clients--;
        }
        free(o);
        return;
    }
}

static uint32_t new_handle(uint32_t client, uint32_t wanted, nvrm_status_t *st)
{
    if (wanted == 0) {
        do
            wanted = emu.next_handle++;
        while (emu_find_obj(client, wanted));
    } else if (emu_find_obj(client, wanted)) {
        *st = NVRM_ERR_INVALID_OBJECT_NEW;
        return 0;
    }
    return wanted;
}

static struct emu_obj *find_device(uint32_t client, uint32_t handle)
{
    struct emu_obj *o = emu_find_obj(client, handle);
    return (o && (o->cls == NVRM_CLASS_DEVICE || o->cls == NVRM_CLASS_SUBDEVICE)) ? o : NULL;
}

static nvrm_status_t rm_alloc(int fd, uint32_t h_root, uint32_t h_parent, uint32_t *h_new,
                              uint32_t cls, const void *params, uint32_t params_size)
{
    nvrm_status_t st = NVRM_OK;

    if (cls == 0 || cls == NVRM_CLASS_ROOT_CLIENT || cls == 0x1u) {
        if (!emu.fds[fd].version_ok)
            return NVRM_ERR_INVALID_STATE;
        uint32_t h = emu.next_client++;
        struct emu_obj *c = new_obj(h, h, h, NVRM_CLASS_ROOT_CLIENT, -1);
        if (!c)
            return NVRM_ERR_NO_MEMORY;
        c->owner_fd = fd;
        c->pid = getpid();
        emu.stats.clients++;
        *h_new = h;
        return NVRM_OK;
    }
    if ((st = emu_client_check(fd, h_root)) != NVRM_OK)
        return st;

    switch (cls) {
    case NVRM_CLASS_DEVICE: {
        const struct nvrm_device_alloc *p = params;
        if (h_parent != h_root)
            return NVRM_ERR_INVALID_OBJECT_PARENT;
        if (!p || params_size != sizeof(*p) || p->device_id >= (uint32_t)emu.ngpus)
            return NVRM_ERR_INVALID_ARGUMENT;
        uint32_t h = new_handle(h_root, *h_new, &st);
        if (!h)
            return st;
        if (!new_obj(h_root, h, h_parent, cls, (int)p->device_id))
            return NVRM_ERR_NO_MEMORY;
        *h_new = h;
        return NVRM_OK;
    }
    case NVRM_CLASS_SUBDEVICE: {
        const struct nvrm_subdevice_alloc *p = params;
        struct emu_obj *dev = emu_find_obj(h_root, h_parent);
        if (!dev || dev->cls != NVRM_CLASS_DEVICE)
            return NVRM_ERR_INVALID_OBJECT_PARENT;
        if (!p || params_size != sizeof(*p) || p->subdevice_id != 0)
            return NVRM_ERR_INVALID_ARGUMENT;
        uint32_t h = new_handle(h_root, *h_new, &st);
        if (!h)
            return st;
        if (!new_obj(h_root, h, h_parent, cls, dev->gpu))
            return NVRM_ERR_NO_MEMORY;
        *h_new = h;
        return NVRM_OK;
    }
    case NVRM_CLASS_MEMORY_LOCAL: {
        const struct nvrm_memory_alloc *p = params;
        struct emu_obj *dev = emu_find_obj(h_root, h_parent);
        if (!dev || dev->cls != NVRM_CLASS_DEVICE)
            return NVRM_ERR_INVALID_OBJECT_PARENT;
        /* 120 bytes in 535, 128 since (numaNode); size at 64 in both */
        if (!p || params_size != emu_driver_layout(emu.kernel_version)->memory_alloc_size ||
            p->size == 0)
            return NVRM_ERR_INVALID_ARGUMENT;
        uint32_t h = new_handle(h_root, *h_new, &st);
        if (!h)
            return st;
        struct emu_mem *mem = calloc(1, sizeof(*mem));
        if (!mem)
            return NVRM_ERR_NO_MEMORY;
        mem->memfd = -1;
        mem->size = p->size;
        mem->gpu = dev->gpu;
        if (!emu_new_memory_locked(h_root, h, h_parent, mem)) {
            free(mem);
            return NVRM_ERR_NO_MEMORY;
        }
        *h_new = h;
        return NVRM_OK;
    }
    default:
        return NVRM_ERR_INVALID_CLASS;
    }
}

static nvrm_status_t rm_dup(int fd, struct nvrm_rm_dup *d)
{
    nvrm_status_t st = emu_client_check(fd, d->h_client);
    if (st != NVRM_OK)
        return st;
    struct emu_obj *parent = emu_find_obj(d->h_client, d->h_parent);
    if (!parent || parent->cls != NVRM_CLASS_DEVICE)
        return NVRM_ERR_INVALID_OBJECT_PARENT;
    struct emu_obj *src = emu_find_obj(d->h_client_src, d->h_object_src);
    struct emu_obj *src_client = emu_find_obj(d->h_client_src, d->h_client_src);
    if (!src || !src_client)
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    if (!src->mem)
        return NVRM_ERR_NOT_SUPPORTED; /* the emulator dups memory only */
    if (src_client->pid != getpid() && !src->shared_all)
        return NVRM_ERR_INSUFFICIENT_PERMISSIONS;
    if (parent->gpu != src->mem->gpu)
        return NVRM_ERR_INVALID_ARGUMENT;
    uint32_t h = new_handle(d->h_client, d->h_object, &st);
    if (!h)
        return st;
    if (!emu_new_memory_locked(d->h_client, h, d->h_parent, src->mem))
        return NVRM_ERR_NO_MEMORY;
    d->h_object = h;
    emu.stats.dups++;
    return NVRM_OK;
}

static nvrm_status_t rm_map(int fd, struct nvrm_rm_map *m)
{
    nvrm_status_t st = emu_client_check(fd, m->h_client);
    if (st != NVRM_OK)
        return st;
    struct emu_obj *dev = find_device(m->h_client, m->h_device);
    struct emu_obj *mo = emu_find_obj(m->h_client, m->h_memory);
    if (!dev || !mo || !mo->mem)
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    if (mo->mem->memfd < 0)
        return NVRM_ERR_INVALID_STATE;
    if (m->length == 0 || m->offset + m->length < m->offset ||
        m->offset + m->length > mo->mem->size)
        return NVRM_ERR_INVALID_LIMIT;
    if ((m->offset | m->length) & 0xfffu)
        return NVRM_ERR_INVALID_OFFSET;
    if (m->fd < 0 || m->fd >= EMU_MAX_FD || emu.fds[m->fd].kind != EMU_FD_DEV ||
        emu.fds[m->fd].gpu != mo->mem->gpu || dev->gpu != mo->mem->gpu)
        return NVRM_ERR_INVALID_ARGUMENT;
    struct emu_fd *f = &emu.fds[m->fd];
    if (f->has_ctx)
        return NVRM_ERR_STATE_IN_USE; /* one mmap context per file */
    /* kbusMapFbAperture: BAR1 space is finite (256 MiB on some GPUs). */
    if (emu.bar1_size && (uint64_t)emu.stats.rm_mapped_bytes + m->length > emu.bar1_size)
        return NVRM_ERR_INSUFFICIENT_RESOURCES;
    struct emu_rmmap *r = calloc(1, sizeof(*r));
    if (!r)
        return NVRM_ERR_NO_MEMORY;
    f->has_ctx = 1;
    f->ctx_mem = mo->mem;
    mo->mem->refs++;
    f->ctx_offset = m->offset;
    f->ctx_length = m->length;
    r->client = m->h_client;
    r->memory = m->h_memory;
    r->length = m->length;
    r->linear = emu.next_linear;
    emu.next_linear += (m->length + 0xffffu) & ~0xffffull;
    r->next = emu.rmmaps;
    emu.rmmaps = r;
    m->linear_addr = r->linear;
    emu.stats.rm_maps++;
    emu.stats.rm_maps_live++;
    emu.stats.rm_mapped_bytes += (long)m->length;
    return NVRM_OK;
}

static nvrm_status_t rm_unmap(int fd, const struct nvrm_rm_unmap *u)
{
    nvrm_status_t st = emu_client_check(fd, u->h_client);
    if (st != NVRM_OK)
        return st;
    if (!find_device(u->h_client, u->h_device) || !emu_find_obj(u->h_client, u->h_memory))
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    for (struct emu_rmmap **pp = &emu.rmmaps; *pp; pp = &(*pp)->next) {
        struct emu_rmmap *r = *pp;
        if (r->client == u->h_client && r->memory == u->h_memory && r->linear == u->linear_addr) {
            *pp = r->next;
            emu.stats.rm_mapped_bytes -= (long)r->length;
            free(r);
            emu.stats.rm_maps_live--;
            return NVRM_OK;
        }
    }
    return NVRM_ERR_INVALID_ARGUMENT;
}

static int check_version(int fd, struct nvrm_version_check *v, size_t size)
{
    if (size != sizeof(*v))
        return -EINVAL;
    long inj = emu_injected_locked("version");
    if (inj < 0)
        return (int)inj;
    v->reply = NVRM_VERSION_REPLY_RECOGNIZED;
    if (v->cmd == NVRM_VERSION_CMD_QUERY) {
        snprintf(v->version, sizeof(v->version), "%s", emu.kernel_version);
        return 0;
    }
    if (v->cmd != NVRM_VERSION_CMD_STRICT || inj > 0 ||
        strncmp(v->version, emu.kernel_version, sizeof(v->version)) != 0) {
        snprintf(v->version, sizeof(v->version), "%s", emu.kernel_version);
        return -EINVAL;
    }
    emu.fds[fd].version_ok = 1;
    emu.stats.version_checks++;
    return 0;
}

/* The injected status for op, written to *status; 1 if one applied. */
static int injected(const char *op, nvrm_status_t *status, int *rc)
{
    long v = emu_injected_locked(op);
    if (v < 0)
        *rc = (int)v;
    else if (v > 0)
        *status = (nvrm_status_t)v;
    return v != 0;
}

/* NV_ESC_EXPORT_TO_DMABUF_FD on a /dev/nvidiaN fd, in one request: the
 * client must be this process's, each piece a memory object of the fd's
 * GPU, page-aligned and inside it.  The fd handed out is a dup of the
 * first piece's pages (an emulated dma-buf nobody maps). */
static nvrm_status_t export_dmabuf(int fd, struct nvrm_export_dmabuf *e,
                                   const struct nvrm_dmabuf_shape *d)
{
    struct emu_obj *client = emu_find_obj(e->h_client, e->h_client);
    uint64_t total = 0;

    if (!client || client->cls != NVRM_CLASS_ROOT_CLIENT || client->pid != getpid())
        return NVRM_ERR_INVALID_CLIENT;
    if (e->fd != -1 || e->index != 0 || e->num_objects == 0 ||
        e->num_objects != e->total_objects || e->num_objects > NVRM_DMABUF_MAX_HANDLES)
        return NVRM_ERR_NOT_SUPPORTED; /* the emulator takes one-shot exports only */
    for (uint32_t i = 0; i < e->num_objects; i++) {
        uint64_t off = nvrm_wire_u64(e, d->offsets_off + 8 * i);
        uint64_t size = nvrm_wire_u64(e, d->sizes_off + 8 * i);
        struct emu_obj *m = emu_find_obj(e->h_client, nvrm_wire_u32(e, d->handles_off + 4 * i));
        if (!m || !m->mem || m->mem->memfd < 0)
            return NVRM_ERR_INVALID_OBJECT_HANDLE;
        if (m->mem->gpu != emu.fds[fd].gpu)
            return NVRM_ERR_INVALID_DEVICE;
        if (((off | size) & 0xfffu) || size == 0 || off + size < off ||
            off + size > m->mem->size)
            return NVRM_ERR_INVALID_ARGUMENT;
        total += size;
    }
    if (total != e->total_size)
        return NVRM_ERR_INVALID_ARGUMENT;
    struct emu_obj *first = emu_find_obj(e->h_client, nvrm_wire_u32(e, d->handles_off));
    e->fd = fcntl(first->mem->memfd, F_DUPFD_CLOEXEC, 0);
    if (e->fd < 0)
        return NVRM_ERR_OPERATING_SYSTEM;
    emu.stats.dmabuf_exports++;
    return NVRM_OK;
}

int emu_rm_ioctl_locked(int fd, unsigned nr, void *arg, size_t size)
{
    char op[40];
    int rc = 0;

    if (emu.fds[fd].kind == EMU_FD_DEV) {
        if (nr == NVRM_ESC_REGISTER_FD && size == sizeof(struct nvrm_register_fd))
            return 0;
        /* the size in the request word is the branch's (570 added 8 bytes) */
        const struct nvrm_dmabuf_shape *d = emu_driver_layout(emu.kernel_version)->dmabuf;
        if (nr != NVRM_ESC_EXPORT_TO_DMABUF || size != d->size)
            return -EINVAL;
        struct nvrm_export_dmabuf *e = arg; /* the head only: same in every branch */
        nvrm_status_t st = NVRM_OK;
        if (!injected("export", &st, &rc))
            st = export_dmabuf(fd, e, d);
        else if (rc)
            return rc;
        nvrm_wire_put32(e, d->status_off, st);
        emu_log("emu: EXPORT_TO_DMABUF 0x%x/0x%x off 0x%llx status 0x%x", e->h_client,
                nvrm_wire_u32(e, d->handles_off),
                (unsigned long long)nvrm_wire_u64(e, d->offsets_off), st);
        return 0;
    }
    switch (nr) {
    case NVRM_ESC_CHECK_VERSION:
        return check_version(fd, arg, size);
    case NVRM_ESC_RM_ALLOC: {
        struct nvrm_rm_alloc *a = arg;
        struct nvrm_rm_alloc_rights *b = arg;
        if (size != sizeof(*a) && size != sizeof(*b))
            return -EINVAL;
        int wide = size == sizeof(*b);
        nvrm_status_t *status = wide ? &b->status : &a->status;
        snprintf(op, sizeof(op), "alloc:0x%x", a->h_class);
        if (injected(op, status, &rc))
            return rc;
        *status = rm_alloc(fd, a->h_root, a->h_parent, &a->h_new, a->h_class,
                           (const void *)(uintptr_t)a->params,
                           wide ? b->params_size : a->params_size);
        emu_log("emu: RM_ALLOC class 0x%x -> 0x%x status 0x%x", a->h_class, a->h_new, *status);
        return 0;
    }
    case NVRM_ESC_RM_FREE: {
        struct nvrm_rm_free *f = arg;
        if (size != sizeof(*f))
            return -EINVAL;
        if (injected("free", &f->status, &rc))
            return rc;
        f->status = emu_client_check(fd, f->h_root);
        if (f->status == NVRM_OK && !emu_find_obj(f->h_root, f->h_object))
            f->status = NVRM_ERR_INVALID_OBJECT_HANDLE;
        if (f->status == NVRM_OK)
            free_tree_locked(f->h_root, f->h_object);
        emu_log("emu: RM_FREE 0x%x/0x%x status 0x%x", f->h_root, f->h_object, f->status);
        return 0;
    }
    case NVRM_ESC_RM_CONTROL: {
        struct nvrm_rm_control *c = arg;
        if (size != sizeof(*c))
            return -EINVAL;
        snprintf(op, sizeof(op), "control:0x%x", c->cmd);
        if (injected(op, &c->status, &rc))
            return rc;
        c->status = emu_control_locked(fd, c);
        emu_log("emu: RM_CONTROL 0x%x status 0x%x", c->cmd, c->status);
        return 0;
    }
    case NVRM_ESC_RM_DUP_OBJECT: {
        struct nvrm_rm_dup *d = arg;
        if (size != sizeof(*d))
            return -EINVAL;
        if (injected("dup", &d->status, &rc))
            return rc;
        d->status = rm_dup(fd, d);
        emu_log("emu: RM_DUP 0x%x/0x%x -> 0x%x status 0x%x", d->h_client_src, d->h_object_src,
                d->h_object, d->status);
        return 0;
    }
    case NVRM_ESC_RM_SHARE: {
        struct nvrm_rm_share *s = arg;
        if (size != sizeof(*s))
            return -EINVAL;
        if (injected("share", &s->status, &rc))
            return rc;
        s->status = emu_client_check(fd, s->h_client);
        struct emu_obj *o = emu_find_obj(s->h_client, s->h_object);
        if (s->status == NVRM_OK && !o)
            s->status = NVRM_ERR_INVALID_OBJECT_HANDLE;
        if (s->status == NVRM_OK && s->policy.type == NVRM_SHARE_TYPE_ALL) {
            o->shared_all = 1;
            emu.stats.shares_all++;
        }
        return 0;
    }
    case NVRM_ESC_RM_MAP_MEMORY: {
        struct nvrm_rm_map *m = arg;
        if (size != sizeof(*m))
            return -EINVAL;
        if (injected("map", &m->status, &rc))
            return rc;
        m->status = rm_map(fd, m);
        emu_log("emu: RM_MAP 0x%x off 0x%llx len 0x%llx fd %d status 0x%x", m->h_memory,
                (unsigned long long)m->offset, (unsigned long long)m->length, m->fd, m->status);
        return 0;
    }
    case NVRM_ESC_RM_UNMAP_MEMORY: {
        struct nvrm_rm_unmap *u = arg;
        if (size != sizeof(*u))
            return -EINVAL;
        if (injected("unmap", &u->status, &rc))
            return rc;
        u->status = rm_unmap(fd, u);
        return 0;
    }
    default:
        return -EINVAL;
    }
}

void emu_fd_closed_locked(int fd)
{
    struct emu_fd *f = &emu.fds[fd];

    if (f->kind == EMU_FD_CTL) {
        /* Closing the ctl file frees the clients made through it, once
         * the last reference goes: a forked child closing its inherited
         * copy leaves the parent's clients alone. */
        for (int again = 1; again;) {
            again = 0;
            for (struct emu_obj *o = emu.objs; o; o = o->next)
                if (o->cls == NVRM_CLASS_ROOT_CLIENT && o->owner_fd == fd &&
                    o->pid == getpid()) {
                    free_tree_locked(o->client, o->client);
                    again = 1;
                    break;
                }
        }
        if (f->export) {
            for (int i = 0; i < f->export->count; i++)
                emu_mem_put_locked(f->export->mems[i]);
            free(f->export);
        }
    }
    if (f->ctx_mem)
        emu_mem_put_locked(f->ctx_mem);
    memset(f, 0, sizeof(*f));
}
