/*
 * nvrm_layout.c - the per-branch layout table (nvrm_layout.h): facts read
 * from NVIDIA/open-gpu-kernel-modules at every release tag of branches
 * 535, 545, 550, 555, 560, 565, 570, 575 and 580 (139 tags, sizes and
 * offsets measured by compiling each tag's headers; docs/nvrm.md, "Driver
 * branches", says how), and the choice of the row at open.
 *
 * SPDX-License-Identifier: MIT
 */
#include "nvrm_layout.h"

#include <stdlib.h>

#include "nvrm_abi.h"

/* 32 GPUs: UVM_MAX_GPUS was NV_MAX_DEVICES up to 550.40.07. */
static const struct nvrm_uvm_map_shape uvm_map_32 = {
    .max_gpus = 32, .size = 1200, .count_off = 1176, .fd_off = 1184,
    .h_client_off = 1188, .h_memory_off = 1192, .status_off = 1196,
};
/* 256 GPUs (NV_MAX_DEVICES x 8 sub-processors): 550.40.53 on. */
static const struct nvrm_uvm_map_shape uvm_map_256 = {
    .max_gpus = NVRM_UVM_MAX_GPUS,
    .size = sizeof(struct nvrm_uvm_map_external),
    .count_off = offsetof(struct nvrm_uvm_map_external, gpu_attrs_count),
    .fd_off = offsetof(struct nvrm_uvm_map_external, rm_ctrl_fd),
    .h_client_off = offsetof(struct nvrm_uvm_map_external, h_client),
    .h_memory_off = offsetof(struct nvrm_uvm_map_external, h_memory),
    .status_off = offsetof(struct nvrm_uvm_map_external, status),
};
/* Before 570: no mappingType/bAllowMmap bytes, handles right after totalSize. */
static const struct nvrm_dmabuf_shape dmabuf_2600 = {
    .size = 2600, .handles_off = 32, .offsets_off = 544, .sizes_off = 1568, .status_off = 2592,
};
/* 570 on: mappingType (570) and bAllowMmap (580) take 2 bytes, padded to 4. */
static const struct nvrm_dmabuf_shape dmabuf_2608 = {
    .size = sizeof(struct nvrm_export_dmabuf),
    .handles_off = offsetof(struct nvrm_export_dmabuf, handles),
    .offsets_off = offsetof(struct nvrm_export_dmabuf, offsets),
    .sizes_off = offsetof(struct nvrm_export_dmabuf, sizes),
    .status_off = offsetof(struct nvrm_export_dmabuf, status),
};
/* 535: no gpuInstanceId. */
static const struct nvrm_export_info_shape export_info_76 = {
    .size = 76, .max_objects_off = 8, .metadata_off = 10,
};
static const struct nvrm_export_info_shape export_info_80 = {
    .size = sizeof(struct nvrm_ctrl_export_info),
    .max_objects_off = offsetof(struct nvrm_ctrl_export_info, max_objects),
    .metadata_off = offsetof(struct nvrm_ctrl_export_info, metadata),
};

#define V(a, b, c) (((uint64_t)(a) << 40) | ((uint64_t)(b) << 20) | (uint64_t)(c))
#define BRANCH_LO(a) V(a, 0, 0)
#define BRANCH_HI(a) V(a, 0xFFFFF, 0xFFFFF)

#define D_535 "UVM map: 32 GPUs (1200 B); dma-buf export: 2600 B, handles at 32; " \
              "export info: no gpuInstanceId (76 B); surface size: PHYS_SIZE x 4 KiB; " \
              "memory alloc params: 120 B"
#define D_545 "UVM map: 32 GPUs (1200 B); dma-buf export: 2600 B, handles at 32; " \
              "surface size: PHYS_SIZE x 4 KiB"
#define D_550 "dma-buf export: 2600 B, handles at 32; surface size: PHYS_SIZE x 4 KiB"
#define D_570 "surface size: PHYS_SIZE x 4 KiB"

static const struct nvrm_layout rows[] = {
    { 535, BRANCH_LO(535), BRANCH_HI(535), "535.43.02", "535.288.01", NVRM_BRANCH_CHECKED,
      D_535, &uvm_map_32, &dmabuf_2600, &export_info_76, NVRM_SURFACE_SIZE_4K, 120 },
    { 545, BRANCH_LO(545), BRANCH_HI(545), "545.23.06", "545.29.06", NVRM_BRANCH_CHECKED,
      D_545, &uvm_map_32, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    /* 550 changed UVM's array inside the branch: the one earlier tag
     * alone, nothing between it and 550.40.53 (unknown: refused). */
    { 550, V(550, 40, 7), V(550, 40, 7), "550.40.07", "550.40.07", NVRM_BRANCH_CHECKED,
      D_545, &uvm_map_32, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 550, V(550, 40, 53), BRANCH_HI(550), "550.40.53", "550.163.01", NVRM_BRANCH_CHECKED,
      D_550, &uvm_map_256, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 555, BRANCH_LO(555), BRANCH_HI(555), "555.42.02", "555.58.02", NVRM_BRANCH_CHECKED,
      D_550, &uvm_map_256, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 560, BRANCH_LO(560), BRANCH_HI(560), "560.28.03", "560.35.03", NVRM_BRANCH_CHECKED,
      D_550, &uvm_map_256, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 565, BRANCH_LO(565), BRANCH_HI(565), "565.57.01", "565.77", NVRM_BRANCH_CHECKED,
      D_550, &uvm_map_256, &dmabuf_2600, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 570, BRANCH_LO(570), BRANCH_HI(570), "570.86.15", "570.211.01", NVRM_BRANCH_CHECKED,
      D_570, &uvm_map_256, &dmabuf_2608, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    { 575, BRANCH_LO(575), BRANCH_HI(575), "575.51.02", "575.64.05", NVRM_BRANCH_CHECKED,
      D_570, &uvm_map_256, &dmabuf_2608, &export_info_80, NVRM_SURFACE_SIZE_4K, 128 },
    /* Run on the H200 with 580.159.04 (docs/nvrm.md): validated up to
     * there; a later 580 may have changed a layout inside the branch, as
     * 550 did, so it proves itself at open (issue 43, defect 11). */
    { 580, BRANCH_LO(580), V(580, 159, 4), "580.65.06", "580.142", NVRM_BRANCH_VALIDATED,
      "none (the layouts of nvrm_abi.h)", &uvm_map_256, &dmabuf_2608, &export_info_80,
      NVRM_SURFACE_SIZE_LO_HI, sizeof(struct nvrm_memory_alloc) },
    { 580, V(580, 159, 5), BRANCH_HI(580), "580.65.06", "580.142", NVRM_BRANCH_CHECKED,
      "none (the layouts of nvrm_abi.h)", &uvm_map_256, &dmabuf_2608, &export_info_80,
      NVRM_SURFACE_SIZE_LO_HI, sizeof(struct nvrm_memory_alloc) },
};

uint64_t nvrm_version_key(const char *version)
{
    unsigned long part[3] = { 0, 0, 0 };
    const char *s = version;

    for (int i = 0; i < 3; i++) {
        char *end;
        if (*s < '0' || *s > '9')
            return 0;
        part[i] = strtoul(s, &end, 10);
        if (part[i] > 0xFFFFF || (i == 0 && part[i] == 0))
            return 0;
        s = end;
        if (*s != '.')
            break;
        s++;
    }
    return *s == '\0' ? V(part[0], part[1], part[2]) : 0;
}

const struct nvrm_layout *nvrm_layout_for(const char *version)
{
    uint64_t k = version ? nvrm_version_key(version) : 0;

    for (size_t i = 0; k && i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].lo <= k && k <= rows[i].hi)
            return &rows[i];
    return NULL;
}

size_t nvrm_layout_count(void)
{
    return sizeof(rows) / sizeof(rows[0]);
}

const struct nvrm_layout *nvrm_layout_at(size_t i)
{
    return i < nvrm_layout_count() ? &rows[i] : NULL;
}

static const struct nvrm_layout *active;
static int active_proven;

const struct nvrm_layout *nvrm_layout_active(void)
{
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

void nvrm_layout_set_active(const struct nvrm_layout *l)
{
    /* unproven first: a reader never pairs the new row with the old
     * row's proof */
    __atomic_store_n(&active_proven, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&active, l, __ATOMIC_RELEASE);
    if (l && l->status == NVRM_BRANCH_VALIDATED)
        __atomic_store_n(&active_proven, 1, __ATOMIC_RELEASE);
}

int nvrm_layout_active_proven(void)
{
    return __atomic_load_n(&active_proven, __ATOMIC_ACQUIRE);
}

void nvrm_layout_set_proven(void)
{
    __atomic_store_n(&active_proven, 1, __ATOMIC_RELEASE);
}

const char *nvrm_branch_status_name(enum nvrm_branch_status s)
{
    return s == NVRM_BRANCH_VALIDATED ? "validated" : s == NVRM_BRANCH_CHECKED ? "checked" : "unknown";
}
