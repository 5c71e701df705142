/*
 * emu_ctrl.c - the RM controls the emulator implements: GPU discovery,
 * address-space and surface queries, and export/import through ctl fds.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

static int gpu_by_id(uint32_t gpu_id)
{
    for (int i = 0; i < emu.ngpus; i++)
        if (emu.gpus[i].gpu_id == gpu_id)
            return i;
    return -1;
}

static struct emu_export *export_of(int32_t fd)
{
    if (fd < 0 || fd >= EMU_MAX_FD || emu.fds[fd].kind != EMU_FD_CTL)
        return NULL;
    return emu.fds[fd].export;
}

static nvrm_status_t export_objects(uint32_t client, struct nvrm_ctrl_export_objects *p)
{
    if (p->fd < 0 || p->fd >= EMU_MAX_FD || emu.fds[p->fd].kind != EMU_FD_CTL ||
        emu.fds[p->fd].export)
        return NVRM_ERR_INVALID_ARGUMENT;
    struct emu_obj *dev = emu_find_obj(client, p->h_device);
    if (!dev || dev->cls != NVRM_CLASS_DEVICE || p->num_objects == 0 ||
        p->num_objects > 8 || p->max_objects < p->num_objects || p->index != 0)
        return NVRM_ERR_INVALID_ARGUMENT;
    struct emu_export *e = calloc(1, sizeof(*e));
    if (!e)
        return NVRM_ERR_NO_MEMORY;
    e->gpu = dev->gpu;
    e->max_objects = p->max_objects;
    memcpy(e->metadata, p->metadata, sizeof(e->metadata));
    for (int i = 0; i < p->num_objects; i++) {
        struct emu_obj *o = emu_find_obj(client, p->objects[i]);
        if (!o || !o->mem || o->mem->gpu != dev->gpu) {
            for (int j = 0; j < e->count; j++)
                emu_mem_put_locked(e->mems[j]);
            free(e);
            return NVRM_ERR_INVALID_OBJECT_HANDLE;
        }
        e->mems[e->count++] = o->mem;
        o->mem->refs++;
    }
    emu.fds[p->fd].export = e;
    return NVRM_OK;
}

static nvrm_status_t import_objects(uint32_t client, struct nvrm_ctrl_import_objects *p)
{
    struct emu_export *e = export_of(p->fd);
    struct emu_obj *dev = emu_find_obj(client, p->h_parent);
    if (!e)
        return NVRM_ERR_INVALID_ARGUMENT;
    if (!dev || dev->cls != NVRM_CLASS_DEVICE)
        return NVRM_ERR_INVALID_OBJECT_PARENT;
    if (dev->gpu != e->gpu)
        return NVRM_ERR_INVALID_DEVICE;
    if (p->num_objects == 0 || p->index != 0 || p->num_objects > e->count)
        return NVRM_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < p->num_objects; i++)
        if (p->objects[i] == 0 || emu_find_obj(client, p->objects[i]))
            return NVRM_ERR_INVALID_OBJECT_NEW;
    for (int i = 0; i < p->num_objects; i++) {
        if (!emu_new_memory_locked(client, p->objects[i], p->h_parent, e->mems[i]))
            return NVRM_ERR_NO_MEMORY;
        p->object_types[i] = NVRM_IMPORT_TYPE_VIDMEM;
    }
    return NVRM_OK;
}

static nvrm_status_t surface_info(uint32_t client, uint32_t object,
                                  struct nvrm_ctrl_surface_info *p)
{
    struct emu_obj *o = emu_find_obj(client, object);
    if (!o || !o->mem)
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    if (p->count == 0 || p->count > 32 || !p->list)
        return NVRM_ERR_INVALID_ARGUMENT;
    struct nvrm_surface_info_entry *e = (struct nvrm_surface_info_entry *)(uintptr_t)p->list;
    /* LO/HI exist in 580 only; PHYS_SIZE (4 KiB units) in every branch. */
    int lo_hi = emu_driver_layout(emu.kernel_version)->surface_size == NVRM_SURFACE_SIZE_LO_HI;
    for (uint32_t i = 0; i < p->count; i++) {
        switch (e[i].index) {
        case NVRM_SURFACE_INFO_PHYS_SIZE_LO:
        case NVRM_SURFACE_INFO_PHYS_SIZE_HI:
            if (!lo_hi)
                return NVRM_ERR_INVALID_ARGUMENT;
            e[i].data = (uint32_t)(e[i].index == NVRM_SURFACE_INFO_PHYS_SIZE_LO
                                       ? o->mem->size : o->mem->size >> 32);
            break;
        case NVRM_SURFACE_INFO_PHYS_SIZE_4K:
            e[i].data = (uint32_t)(o->mem->size / NVRM_SURFACE_SIZE_4K_SCALE);
            break;
        case NVRM_SURFACE_INFO_ADDR_SPACE:
            e[i].data = NVRM_ADDR_SPACE_VIDMEM;
            break;
        default:
            return NVRM_ERR_INVALID_ARGUMENT;
        }
    }
    return NVRM_OK;
}

nvrm_status_t emu_control_locked(int fd, struct nvrm_rm_control *c)
{
    nvrm_status_t st = emu_client_check(fd, c->h_client);
    void *params = (void *)(uintptr_t)c->params;

    if (st != NVRM_OK)
        return st;
    if (!emu_find_obj(c->h_client, c->h_object))
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    if (!params)
        return NVRM_ERR_INVALID_PARAM_STRUCT;

#define WANT(type)                                  \
    do {                                            \
        if (c->params_size != sizeof(type))         \
            return NVRM_ERR_INVALID_PARAM_STRUCT;   \
    } while (0)

    switch (c->cmd) {
    case NVRM_CTRL_GPU_GET_ATTACHED_IDS: {
        struct nvrm_ctrl_attached_ids *p = params;
        WANT(*p);
        for (int i = 0; i < NVRM_MAX_ATTACHED_GPUS; i++)
            p->gpu_ids[i] = i < emu.ngpus ? emu.gpus[i].gpu_id : NVRM_INVALID_GPU_ID;
        return NVRM_OK;
    }
    case NVRM_CTRL_GPU_GET_ID_INFO_V2: {
        struct nvrm_ctrl_id_info *p = params;
        WANT(*p);
        int g = gpu_by_id(p->gpu_id);
        if (g < 0)
            return NVRM_ERR_INVALID_ARGUMENT;
        memset((char *)p + sizeof(p->gpu_id), 0, sizeof(*p) - sizeof(p->gpu_id));
        p->device_instance = (uint32_t)g;
        p->gpu_instance = (uint32_t)g;
        p->numa_id = -1;
        return NVRM_OK;
    }
    case NVRM_CTRL_GPU_GET_PCI_INFO: {
        struct nvrm_ctrl_pci_info *p = params;
        WANT(*p);
        int g = gpu_by_id(p->gpu_id);
        if (g < 0)
            return NVRM_ERR_INVALID_ARGUMENT;
        p->domain = emu.gpus[g].domain;
        p->bus = (uint16_t)emu.gpus[g].bus;
        p->slot = (uint16_t)emu.gpus[g].slot;
        return NVRM_OK;
    }
    case NVRM_CTRL_CLIENT_GET_ADDR_SPACE_TYPE: {
        struct nvrm_ctrl_addr_space *p = params;
        WANT(*p);
        struct emu_obj *o = emu_find_obj(c->h_client, p->h_object);
        if (!o)
            return NVRM_ERR_INVALID_OBJECT_HANDLE;
        if (!o->mem)
            return NVRM_ERR_INVALID_OBJECT;
        p->addr_space = NVRM_ADDR_SPACE_VIDMEM;
        return NVRM_OK;
    }
    case NVRM_CTRL_MEM_GET_SURFACE_INFO: {
        struct nvrm_ctrl_surface_info *p = params;
        WANT(*p);
        return surface_info(c->h_client, c->h_object, p);
    }
    case NVRM_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD: {
        struct nvrm_ctrl_export_objects *p = params;
        WANT(*p);
        return export_objects(c->h_client, p);
    }
    case NVRM_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO: {
        /* 535 has no gpuInstanceId: maxObjects and metadata sit 4 bytes
         * earlier (nvrm_layout.h). */
        const struct nvrm_export_info_shape *sh =
            emu_driver_layout(emu.kernel_version)->export_info;
        uint8_t *p = params;
        if (c->params_size != sh->size)
            return NVRM_ERR_INVALID_PARAM_STRUCT;
        struct emu_export *e = export_of((int)nvrm_wire_u32(p, 0));
        if (!e)
            return NVRM_ERR_INVALID_ARGUMENT;
        nvrm_wire_put32(p, offsetof(struct nvrm_ctrl_export_info, device_instance),
                        (uint32_t)e->gpu);
        if (sh->max_objects_off > offsetof(struct nvrm_ctrl_export_info, gpu_instance_id))
            nvrm_wire_put32(p, offsetof(struct nvrm_ctrl_export_info, gpu_instance_id),
                            0xffffffffu);
        uint16_t max_objects = e->max_objects;
        memcpy(p + sh->max_objects_off, &max_objects, sizeof(max_objects));
        memcpy(p + sh->metadata_off, e->metadata, NVRM_EXPORT_METADATA_SIZE);
        return NVRM_OK;
    }
    case NVRM_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD: {
        struct nvrm_ctrl_import_objects *p = params;
        WANT(*p);
        return import_objects(c->h_client, p);
    }
    default:
        return NVRM_ERR_NOT_SUPPORTED;
    }
#undef WANT
}
