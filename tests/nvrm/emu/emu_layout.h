/*
 * emu_layout.h - which layouts the emulated driver speaks: those of the
 * version it reports, so that the nvrm suites run against every branch.
 * The emulator and the simulated libcuda (tests/sim/sim_rm.c) both take
 * them from here, as a matched kernel and libcuda would.
 *
 * SPDX-License-Identifier: MIT
 *
 * UVM_MAP_EXTERNAL_ALLOCATION, the request the nvrm trace reads at a
 * branch's offsets before anything else, is laid out from the driver
 * headers' declaration (below), not from nvrm's table
 * (libgdr/src/nvrm/nvrm_layout.c): were both sides to read that table, a
 * wrong offset there would be written and read at the same wrong place
 * and no test could see it.  The other structures that differ between
 * branches still come from nvrm's rows.
 *
 * NVRM_EMU_UVM_LAYOUT=<version>: UVM_MAP_EXTERNAL_ALLOCATION is laid out
 * as that version's branch would (both sides), whatever version is
 * reported: a driver whose layout differs from what nvrm's table says,
 * for the test that the open self-test refuses it.
 */
#ifndef GDRX_EMU_LAYOUT_H
#define GDRX_EMU_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "nvrm_layout.h"

/* A version with no row (e.g. 999.x, which nvrm must refuse) still needs
 * answers: the newest row's. */
static inline const struct nvrm_layout *emu_driver_layout(const char *version)
{
    const struct nvrm_layout *l = nvrm_layout_for(version);
    return l ? l : nvrm_layout_at(nvrm_layout_count() - 1);
}

/* uvm_types.h's UvmGpuMappingAttributes: the GPU's 16-byte UUID, then
 * mapping, caching, format, element bits and compression as 32-bit
 * enums (36 bytes, 4-byte aligned). */
struct emu_uvm_gpu_attrs {
    uint8_t  gpu_uuid[16];
    uint32_t mapping_type, caching_type, format_type, element_bits, compression_type;
};

/* uvm_ioctl.h's UVM_MAP_EXTERNAL_ALLOCATION_PARAMS with UVM_MAX_GPUS = n:
 * base, length, offset (NvU64), the per-GPU attributes, the count
 * (NvLength), rmCtrlFd (NvS32), hClient, hMemory (NvHandle), rmStatus. */
#define EMU_UVM_MAP_PARAMS(n)                                                  \
    struct {                                                                   \
        uint64_t                 base, length, offset;                         \
        struct emu_uvm_gpu_attrs per_gpu[n];                                   \
        uint64_t                 gpu_attrs_count;                              \
        int32_t                  rm_ctrl_fd;                                   \
        uint32_t                 h_client, h_memory, rm_status;                \
    }
typedef EMU_UVM_MAP_PARAMS(32) emu_uvm_map_32_t;
typedef EMU_UVM_MAP_PARAMS(256) emu_uvm_map_256_t;

#define EMU_UVM_SHAPE(type, n)                                                           \
    { .max_gpus = (n), .size = sizeof(type), .count_off = offsetof(type, gpu_attrs_count), \
      .fd_off = offsetof(type, rm_ctrl_fd), .h_client_off = offsetof(type, h_client),      \
      .h_memory_off = offsetof(type, h_memory), .status_off = offsetof(type, rm_status) }

/* The driver's layout of UVM_MAP_EXTERNAL_ALLOCATION for `version` (or for
 * NVRM_EMU_UVM_LAYOUT's).  UVM_MAX_GPUS was NV_MAX_DEVICES (32) up to
 * 550.40.07 and is 256 (32 devices x 8 sub-processors) from 550.40.53 on;
 * a string that is no version gets the newest. */
static inline const struct nvrm_uvm_map_shape *emu_uvm_map_shape(const char *version)
{
    static const struct nvrm_uvm_map_shape gpus_32 = EMU_UVM_SHAPE(emu_uvm_map_32_t, 32);
    static const struct nvrm_uvm_map_shape gpus_256 = EMU_UVM_SHAPE(emu_uvm_map_256_t, 256);
    const char *o = getenv("NVRM_EMU_UVM_LAYOUT");
    uint64_t k = nvrm_version_key(o && *o ? o : version);

    return k && k < nvrm_version_key("550.40.53") ? &gpus_32 : &gpus_256;
}

#endif /* GDRX_EMU_LAYOUT_H */
