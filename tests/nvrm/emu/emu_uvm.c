/*
 * emu_uvm.c - the few /dev/nvidia-uvm commands the simulated libcuda issues:
 * INITIALIZE, MAP_EXTERNAL_ALLOCATION, FREE, UNMAP_EXTERNAL.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "emu_internal.h"

static void drop_range_locked(uint64_t base, uint64_t length)
{
    for (struct emu_uvm **pp = &emu.uvms; *pp;) {
        struct emu_uvm *u = *pp;
        if (u->base < base + length && base < u->base + u->length) {
            *pp = u->next;
            free(u);
            emu.stats.uvm_records--;
        } else {
            pp = &u->next;
        }
    }
}

/* p: base, length, offset lead in every branch; the rest is where the
 * reported version's layout puts it (emu_layout.h). */
static nvrm_status_t map_external(const struct nvrm_uvm_map_external *p,
                                  const struct nvrm_uvm_map_shape *m)
{
    uint32_t h_client = nvrm_wire_u32(p, m->h_client_off);
    struct emu_obj *client = emu_find_obj(h_client, h_client);
    struct emu_obj *mem = emu_find_obj(h_client, nvrm_wire_u32(p, m->h_memory_off));
    if (!client || client->pid != getpid())
        return NVRM_ERR_INVALID_CLIENT;
    if (!mem || !mem->mem)
        return NVRM_ERR_INVALID_OBJECT_HANDLE;
    if (p->length == 0 || p->offset + p->length > mem->mem->size)
        return NVRM_ERR_INVALID_LIMIT;
    struct emu_uvm *u = calloc(1, sizeof(*u));
    if (!u)
        return NVRM_ERR_NO_MEMORY;
    drop_range_locked(p->base, p->length);
    u->base = p->base;
    u->length = p->length;
    u->next = emu.uvms;
    emu.uvms = u;
    emu.stats.uvm_records++;
    return NVRM_OK;
}

int emu_uvm_ioctl_locked(int fd, unsigned long req, void *arg)
{
    (void)fd;
    switch (req) {
    case NVRM_UVM_INITIALIZE: {
        struct nvrm_uvm_initialize *p = arg;
        p->status = NVRM_OK;
        return 0;
    }
    case NVRM_UVM_MAP_EXTERNAL_ALLOCATION: {
        struct nvrm_uvm_map_external *p = arg;
        const struct nvrm_uvm_map_shape *m = emu_uvm_map_shape(emu.kernel_version);
        long inj = emu_injected_locked("uvm_map");
        if (inj < 0)
            return (int)inj;
        nvrm_wire_put32(p, m->status_off, inj > 0 ? (nvrm_status_t)inj : map_external(p, m));
        emu_log("emu: UVM_MAP_EXTERNAL 0x%llx+0x%llx -> 0x%x/0x%x status 0x%x (%u GPUs)",
                (unsigned long long)p->base, (unsigned long long)p->length,
                nvrm_wire_u32(p, m->h_client_off), nvrm_wire_u32(p, m->h_memory_off),
                nvrm_wire_u32(p, m->status_off), m->max_gpus);
        return 0;
    }
    case NVRM_UVM_FREE: {
        struct nvrm_uvm_free *p = arg;
        drop_range_locked(p->base, p->length ? p->length : 1);
        p->status = NVRM_OK;
        return 0;
    }
    case NVRM_UVM_UNMAP_EXTERNAL: {
        struct nvrm_uvm_unmap_external *p = arg;
        drop_range_locked(p->base, p->length);
        p->status = NVRM_OK;
        return 0;
    }
    default:
        return -EINVAL;
    }
}
