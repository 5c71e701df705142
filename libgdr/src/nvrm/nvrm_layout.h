/*
 * nvrm_layout.h - where the RM/UVM ioctl layouts that differ between
 * NVIDIA driver branches put their fields, as data: one row per range of
 * driver versions, chosen at open from the version the RM reports.
 *
 * SPDX-License-Identifier: MIT
 *
 * nvrm_abi.h declares every structure as the 580 branch lays it out.  For
 * 535-580, only four of them differ (docs/nvrm.md, "Driver branches"):
 * UVM_MAP_EXTERNAL_ALLOCATION's per-GPU array (32 entries before 550.40.53,
 * 256 since), the dma-buf export request (mappingType added in 570 moves
 * the handle arrays by 8), GET_EXPORT_OBJECT_INFO (gpuInstanceId added in
 * 545), the surface size query (PHYS_SIZE_LO/HI only in 580) and the class
 * 0x40 allocation parameters (numaNode added in 545).  Every other size,
 * offset, escape, class and control number nvrm uses is the same in every
 * tag checked.  Code that reads or writes a differing structure goes
 * through the shape of the active row, never through a copy of the code.
 */
#ifndef GDRX_NVRM_LAYOUT_H
#define GDRX_NVRM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* VALIDATED: run on hardware (tests/gpu); CHECKED: every layout compared
 * with the branch's headers, never run here: served only after the open
 * self-test (nvrm_selftest.h) passed in this process. */
enum nvrm_branch_status { NVRM_BRANCH_VALIDATED = 1, NVRM_BRANCH_CHECKED = 2 };

/* UVM_MAP_EXTERNAL_ALLOCATION_PARAMS: base, length, offset at 0/8/16 in
 * every branch, then max_gpus UvmGpuMappingAttributes of 36 bytes. */
struct nvrm_uvm_map_shape {
    unsigned max_gpus;
    size_t   size, count_off, fd_off, h_client_off, h_memory_off, status_off;
};

/* nv_ioctl_export_to_dma_buf_fd_t: fd, hClient, totalObjects,
 * numObjects, index, totalSize at 0/4/8/12/16/24 in every branch. */
struct nvrm_dmabuf_shape {
    size_t size, handles_off, offsets_off, sizes_off, status_off;
};

/* NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS: fd and
 * deviceInstance at 0/4 in every branch. */
struct nvrm_export_info_shape {
    size_t size, max_objects_off, metadata_off;
};

/* How NV0041_CTRL_CMD_GET_SURFACE_INFO gives the physical size. */
enum nvrm_surface_size {
    NVRM_SURFACE_SIZE_LO_HI = 1,  /* indices 2 and 3: bytes, two halves */
    NVRM_SURFACE_SIZE_4K    = 2,  /* index 7: units of 4 KiB */
};
#define NVRM_SURFACE_INFO_PHYS_SIZE_4K 7u
#define NVRM_SURFACE_SIZE_4K_SCALE     4096u

struct nvrm_layout {
    unsigned                   branch;
    uint64_t                   lo, hi;   /* versions served: nvrm_version_key() */
    const char                *first_checked, *last_checked; /* open-gpu-kernel-modules tags */
    enum nvrm_branch_status    status;
    const char                *differs;  /* from the 580 layout, for docs and gdrx-info */
    const struct nvrm_uvm_map_shape     *uvm_map;
    const struct nvrm_dmabuf_shape      *dmabuf;
    const struct nvrm_export_info_shape *export_info;
    enum nvrm_surface_size     surface_size;
    size_t                     memory_alloc_size; /* NV_MEMORY_ALLOCATION_PARAMS */
};

/* "535.288.01" -> a key ordered as the versions are; 0 if not a version. */
uint64_t nvrm_version_key(const char *version);

/* The row serving `version`, or NULL (no such row: refuse). */
const struct nvrm_layout *nvrm_layout_for(const char *version);

/* The rows, oldest first (gdrx-info, tests). */
size_t nvrm_layout_count(void);
const struct nvrm_layout *nvrm_layout_at(size_t i);

/* The row of the RM this process talks to, set by the open that passed
 * the version checks (before the trace is installed), and read by the
 * trace and the object code.  NULL before. */
const struct nvrm_layout *nvrm_layout_active(void);
void nvrm_layout_set_active(const struct nvrm_layout *l);
/* Whether the active row's offsets are proven for this driver: a row
 * validated on hardware is from set_active on; a checked one once the
 * open self-test passed (set_proven).  Until then the trace reads the
 * fields a row places beyond what every branch shares without trusting
 * them to lie inside libcuda's request (issue 43, defect 11). */
int nvrm_layout_active_proven(void);
void nvrm_layout_set_proven(void);

const char *nvrm_branch_status_name(enum nvrm_branch_status s);

/* Field access at a shape's offsets (no alignment assumed). */
static inline uint32_t nvrm_wire_u32(const void *base, size_t off)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)base + off, sizeof(v));
    return v;
}

static inline uint64_t nvrm_wire_u64(const void *base, size_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)base + off, sizeof(v));
    return v;
}

static inline void nvrm_wire_put32(void *base, size_t off, uint32_t v)
{
    memcpy((uint8_t *)base + off, &v, sizeof(v));
}

static inline void nvrm_wire_put64(void *base, size_t off, uint64_t v)
{
    memcpy((uint8_t *)base + off, &v, sizeof(v));
}

#endif /* GDRX_NVRM_LAYOUT_H */
