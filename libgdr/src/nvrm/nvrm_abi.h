/*
 * nvrm_abi.h - the subset of the NVIDIA resource manager (RM) and UVM
 * user-space ABI that the nvrm backend speaks, declared from scratch.
 *
 * SPDX-License-Identifier: MIT
 *
 * The RM ioctls are not a public, stable ABI.  Every layout below is the
 * 580 branch's (open-gpu-kernel-modules tags 580.x: nvos.h, nv-ioctl.h,
 * nv-ioctl-numbers.h, nv_escape.h, the ctrl0000 and ctrl0041 headers,
 * uvm_ioctl.h), and the names of the NVIDIA structures are given in
 * comments so a reviewer can compare them.  All of it was compared with
 * every release tag of branches 535 to 580: what differs there is data in
 * nvrm_layout.c, read at the offsets of the running driver's row; a
 * version with no row is refused, so a layout change in a future branch
 * cannot be misread silently.
 *
 * Every structure carries _Static_asserts on its size and on the offsets
 * the kernel reads, so a compiler or padding surprise fails the build.
 */
#ifndef GDRX_NVRM_ABI_H
#define GDRX_NVRM_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

typedef uint32_t nvrm_handle_t; /* NvHandle */
typedef uint32_t nvrm_status_t; /* NV_STATUS */

/* ---------------------------------------------------------------- escapes */

/* Every RM request is ioctl(fd, _IOWR('F', nr, struct), &struct): the
 * kernel takes the argument size from the request word and checks it. */
#define NVRM_IOCTL_MAGIC 'F'
#define NVRM_IOWR(nr, type) _IOWR(NVRM_IOCTL_MAGIC, (nr), type)

/* nv_escape.h (handled by the RM proper; ctl fd unless noted) */
#define NVRM_ESC_RM_FREE          0x29
#define NVRM_ESC_RM_CONTROL       0x2A
#define NVRM_ESC_RM_ALLOC         0x2B
#define NVRM_ESC_RM_DUP_OBJECT    0x34
#define NVRM_ESC_RM_SHARE         0x35
#define NVRM_ESC_RM_MAP_MEMORY    0x4E
#define NVRM_ESC_RM_UNMAP_MEMORY  0x4F
/* nv-ioctl-numbers.h (handled by nvidia.ko's ioctl front end) */
#define NVRM_ESC_BASE             200
#define NVRM_ESC_REGISTER_FD      (NVRM_ESC_BASE + 1)
#define NVRM_ESC_CHECK_VERSION    (NVRM_ESC_BASE + 10)
#define NVRM_ESC_IOCTL_XFER       (NVRM_ESC_BASE + 11) /* large structs: nvrm_ioctl_xfer */
#define NVRM_ESC_EXPORT_TO_DMABUF (NVRM_ESC_BASE + 17) /* /dev/nvidiaN fd */

/* --------------------------------------------------------------- classes */

#define NVRM_CLASS_ROOT_CLIENT    0x41u   /* NV01_ROOT_CLIENT */
#define NVRM_CLASS_MEMORY_LOCAL   0x40u   /* NV01_MEMORY_LOCAL_USER (vidmem) */
#define NVRM_CLASS_DEVICE         0x80u   /* NV01_DEVICE_0 */
#define NVRM_CLASS_SUBDEVICE      0x2080u /* NV20_SUBDEVICE_0 */

/* --------------------------------------------------------- status codes */

#define NVRM_OK                         0x00u
#define NVRM_ERR_GPU_IS_LOST            0x0Fu
#define NVRM_ERR_ILLEGAL_ACTION         0x16u
#define NVRM_ERR_IN_USE                 0x17u
#define NVRM_ERR_INSUFFICIENT_RESOURCES 0x1Au
#define NVRM_ERR_INSUFFICIENT_PERMISSIONS 0x1Bu
#define NVRM_ERR_INVALID_ADDRESS        0x1Eu
#define NVRM_ERR_INVALID_ARGUMENT       0x1Fu
#define NVRM_ERR_INVALID_CLASS          0x22u
#define NVRM_ERR_INVALID_CLIENT         0x23u
#define NVRM_ERR_INVALID_COMMAND        0x24u
#define NVRM_ERR_INVALID_DEVICE         0x26u
#define NVRM_ERR_INVALID_LIMIT          0x2Eu
#define NVRM_ERR_INVALID_OBJECT         0x31u
#define NVRM_ERR_INVALID_OBJECT_HANDLE  0x33u
#define NVRM_ERR_INVALID_OBJECT_NEW     0x34u
#define NVRM_ERR_INVALID_OBJECT_PARENT  0x36u
#define NVRM_ERR_INVALID_OFFSET         0x37u
#define NVRM_ERR_INVALID_PARAM_STRUCT   0x3Au
#define NVRM_ERR_INVALID_STATE          0x40u
#define NVRM_ERR_NO_MEMORY              0x51u
#define NVRM_ERR_NOT_READY              0x55u
#define NVRM_ERR_NOT_SUPPORTED          0x56u
#define NVRM_ERR_OBJECT_NOT_FOUND       0x57u
#define NVRM_ERR_OPERATING_SYSTEM       0x59u
#define NVRM_ERR_STATE_IN_USE           0x63u
#define NVRM_ERR_GENERIC                0xFFFFu

/* ------------------------------------------------------ ioctl arguments */

/* nv_ioctl_rm_api_version_t: NV_ESC_CHECK_VERSION_STR.  STRICT compares
 * the whole string; QUERY returns the kernel's. */
#define NVRM_VERSION_STRING_LEN 64
#define NVRM_VERSION_CMD_STRICT 0u
#define NVRM_VERSION_CMD_QUERY  0x32u /* '2' */
#define NVRM_VERSION_REPLY_RECOGNIZED 1u
struct nvrm_version_check {
    uint32_t cmd;
    uint32_t reply;
    char     version[NVRM_VERSION_STRING_LEN];
};
_Static_assert(sizeof(struct nvrm_version_check) == 72, "nv_ioctl_rm_api_version_t");
_Static_assert(offsetof(struct nvrm_version_check, version) == 8, "versionString");

/* nv_ioctl_register_fd_t: ties a /dev/nvidiaN fd to a ctl fd. */
struct nvrm_register_fd {
    int32_t ctl_fd;
};
_Static_assert(sizeof(struct nvrm_register_fd) == 4, "nv_ioctl_register_fd_t");

/* nv_ioctl_xfer_t: a request whose struct is too large for the request
 * word's size field is sent as IOCTL_XFER {real nr, size, pointer}. */
struct nvrm_ioctl_xfer {
    uint32_t cmd;
    uint32_t size;
    uint64_t ptr;
};
_Static_assert(sizeof(struct nvrm_ioctl_xfer) == 16, "nv_ioctl_xfer_t");

/* nv_ioctl_export_to_dma_buf_fd_t: what cuMemGetHandleForAddressRange
 * sends.  Entry i exports sizes[i] bytes of RM memory (h_client,
 * handles[i]) from offsets[i] in that object: for a device VA range, the
 * objects CUDA mapped there and where. */
#define NVRM_DMABUF_MAX_HANDLES 128
struct nvrm_export_dmabuf {
    int32_t       fd;
    nvrm_handle_t h_client;
    uint32_t      total_objects;
    uint32_t      num_objects;
    uint32_t      index;
    uint32_t      pad0_;
    uint64_t      total_size;
    uint8_t       mapping_type;
    uint8_t       allow_mmap;
    uint8_t       pad1_[2];
    nvrm_handle_t handles[NVRM_DMABUF_MAX_HANDLES];
    uint32_t      pad2_;
    uint64_t      offsets[NVRM_DMABUF_MAX_HANDLES];
    uint64_t      sizes[NVRM_DMABUF_MAX_HANDLES];
    nvrm_status_t status;
    uint32_t      pad3_;
};
_Static_assert(sizeof(struct nvrm_export_dmabuf) == 2608, "nv_ioctl_export_to_dma_buf_fd_t");
_Static_assert(offsetof(struct nvrm_export_dmabuf, total_size) == 24, "totalSize");
_Static_assert(offsetof(struct nvrm_export_dmabuf, handles) == 36, "handles");
_Static_assert(offsetof(struct nvrm_export_dmabuf, offsets) == 552, "offsets");
_Static_assert(offsetof(struct nvrm_export_dmabuf, sizes) == 1576, "sizes");
_Static_assert(offsetof(struct nvrm_export_dmabuf, status) == 2600, "status");

/* NVOS21_PARAMETERS: NV_ESC_RM_ALLOC without requested rights.  The kernel
 * also accepts the 48-byte NVOS64 form (struct nvrm_rm_alloc_rights);
 * it tells them apart by the size encoded in the request. */
struct nvrm_rm_alloc {
    nvrm_handle_t h_root;
    nvrm_handle_t h_parent;
    nvrm_handle_t h_new;        /* in: wanted handle, 0 = RM picks; out */
    uint32_t      h_class;
    uint64_t      params;       /* user pointer to class parameters */
    uint32_t      params_size;
    nvrm_status_t status;
};
_Static_assert(sizeof(struct nvrm_rm_alloc) == 32, "NVOS21_PARAMETERS");
_Static_assert(offsetof(struct nvrm_rm_alloc, h_class) == 12, "NVOS21.hClass");
_Static_assert(offsetof(struct nvrm_rm_alloc, params) == 16, "NVOS21.pAllocParms");
_Static_assert(offsetof(struct nvrm_rm_alloc, status) == 28, "NVOS21.status");

/* NVOS64_PARAMETERS (libcuda's form of NV_ESC_RM_ALLOC). */
struct nvrm_rm_alloc_rights {
    nvrm_handle_t h_root;
    nvrm_handle_t h_parent;
    nvrm_handle_t h_new;
    uint32_t      h_class;
    uint64_t      params;
    uint64_t      rights;       /* user pointer to an access mask, or 0 */
    uint32_t      params_size;
    uint32_t      flags;
    nvrm_status_t status;
    uint32_t      pad_;
};
_Static_assert(sizeof(struct nvrm_rm_alloc_rights) == 48, "NVOS64_PARAMETERS");
_Static_assert(offsetof(struct nvrm_rm_alloc_rights, params_size) == 32, "NVOS64.paramsSize");
_Static_assert(offsetof(struct nvrm_rm_alloc_rights, status) == 40, "NVOS64.status");

/* NVOS00_PARAMETERS: NV_ESC_RM_FREE.  Freeing the client frees all. */
struct nvrm_rm_free {
    nvrm_handle_t h_root;
    nvrm_handle_t h_parent;
    nvrm_handle_t h_object;
    nvrm_status_t status;
};
_Static_assert(sizeof(struct nvrm_rm_free) == 16, "NVOS00_PARAMETERS");

/* NVOS54_PARAMETERS: NV_ESC_RM_CONTROL.  params points at the command's
 * own structure; the kernel copies params_size bytes in and out. */
struct nvrm_rm_control {
    nvrm_handle_t h_client;
    nvrm_handle_t h_object;
    uint32_t      cmd;
    uint32_t      flags;
    uint64_t      params;
    uint32_t      params_size;
    nvrm_status_t status;
};
_Static_assert(sizeof(struct nvrm_rm_control) == 32, "NVOS54_PARAMETERS");
_Static_assert(offsetof(struct nvrm_rm_control, params) == 16, "NVOS54.params");
_Static_assert(offsetof(struct nvrm_rm_control, status) == 28, "NVOS54.status");

/* NVOS55_PARAMETERS: NV_ESC_RM_DUP_OBJECT, from any client the share
 * policy allows into h_client under h_parent. */
struct nvrm_rm_dup {
    nvrm_handle_t h_client;     /* destination client */
    nvrm_handle_t h_parent;     /* destination parent (a device) */
    nvrm_handle_t h_object;     /* in: wanted handle, 0 = RM picks; out */
    nvrm_handle_t h_client_src;
    nvrm_handle_t h_object_src;
    uint32_t      flags;
    nvrm_status_t status;
};
_Static_assert(sizeof(struct nvrm_rm_dup) == 28, "NVOS55_PARAMETERS");
_Static_assert(offsetof(struct nvrm_rm_dup, h_object_src) == 16, "NVOS55.hObjectSrc");

/* RS_SHARE_POLICY + NVOS57_PARAMETERS: NV_ESC_RM_SHARE. */
#define NVRM_SHARE_TYPE_ALL 1u
#define NVRM_SHARE_TYPE_PID 4u
struct nvrm_share_policy {
    uint32_t target;
    uint32_t access_mask;       /* RS_ACCESS_MASK: one 32-bit limb */
    uint16_t type;
    uint8_t  action;
    uint8_t  pad_;
};
_Static_assert(sizeof(struct nvrm_share_policy) == 12, "RS_SHARE_POLICY");
struct nvrm_rm_share {
    nvrm_handle_t            h_client;
    nvrm_handle_t            h_object;
    struct nvrm_share_policy policy;
    nvrm_status_t            status;
};
_Static_assert(sizeof(struct nvrm_rm_share) == 24, "NVOS57_PARAMETERS");

/* NVOS33_PARAMETERS followed by the fd of the /dev/nvidiaN file that will
 * carry the mmap context (nv_ioctl_nvos33_parameters_with_fd):
 * NV_ESC_RM_MAP_MEMORY.  The caching type in flags is forced to DEFAULT by
 * the kernel, which gives a write-combined BAR1 mapping of vidmem. */
struct nvrm_rm_map {
    nvrm_handle_t h_client;
    nvrm_handle_t h_device;     /* device (or subdevice) parent */
    nvrm_handle_t h_memory;
    uint32_t      pad0_;
    uint64_t      offset;       /* into the memory object */
    uint64_t      length;
    uint64_t      linear_addr;  /* out: the token RM_UNMAP_MEMORY takes */
    nvrm_status_t status;
    uint32_t      flags;
    int32_t       fd;
    uint32_t      pad1_;
};
_Static_assert(sizeof(struct nvrm_rm_map) == 56, "nv_ioctl_nvos33_parameters_with_fd");
_Static_assert(offsetof(struct nvrm_rm_map, offset) == 16, "NVOS33.offset");
_Static_assert(offsetof(struct nvrm_rm_map, linear_addr) == 32, "NVOS33.pLinearAddress");
_Static_assert(offsetof(struct nvrm_rm_map, status) == 40, "NVOS33.status");
_Static_assert(offsetof(struct nvrm_rm_map, fd) == 48, "..._with_fd.fd");

/* NVOS34_PARAMETERS: NV_ESC_RM_UNMAP_MEMORY. */
struct nvrm_rm_unmap {
    nvrm_handle_t h_client;
    nvrm_handle_t h_device;
    nvrm_handle_t h_memory;
    uint32_t      pad_;
    uint64_t      linear_addr;
    nvrm_status_t status;
    uint32_t      flags;
};
_Static_assert(sizeof(struct nvrm_rm_unmap) == 32, "NVOS34_PARAMETERS");
_Static_assert(offsetof(struct nvrm_rm_unmap, linear_addr) == 16, "NVOS34.pLinearAddress");

/* ------------------------------------------------- class alloc parameters */

/* NV0080_ALLOC_PARAMETERS (NV01_DEVICE_0). */
struct nvrm_device_alloc {
    uint32_t      device_id;    /* deviceInstance of the GPU */
    nvrm_handle_t h_client_share;
    nvrm_handle_t h_target_client;
    nvrm_handle_t h_target_device;
    uint32_t      flags;
    uint32_t      pad_;
    uint64_t      va_space_size;
    uint64_t      va_start_internal;
    uint64_t      va_limit_internal;
    uint32_t      va_mode;
    uint32_t      pad2_;
};
_Static_assert(sizeof(struct nvrm_device_alloc) == 56, "NV0080_ALLOC_PARAMETERS");
_Static_assert(offsetof(struct nvrm_device_alloc, va_space_size) == 24, "NV0080.vaSpaceSize");

/* NV2080_ALLOC_PARAMETERS (NV20_SUBDEVICE_0). */
struct nvrm_subdevice_alloc {
    uint32_t subdevice_id;
};
_Static_assert(sizeof(struct nvrm_subdevice_alloc) == 4, "NV2080_ALLOC_PARAMETERS");

/* NV_MEMORY_ALLOCATION_PARAMS (NV01_MEMORY_LOCAL_USER).  The backend never
 * allocates memory; the layout is here for the test emulator and the
 * simulated libcuda, which allocate like the real one does. */
struct nvrm_memory_alloc {
    uint32_t owner, type, flags, width, height;
    int32_t  pitch;
    uint32_t attr, attr2, format, compr_covg, zcull_covg;
    uint32_t pad_;
    uint64_t range_lo, range_hi, size, alignment, offset, limit, address;
    uint32_t ctag_offset;
    nvrm_handle_t h_va_space;
    uint32_t internal_flags, tag;
    int32_t  numa_node;
    uint32_t pad2_;
};
_Static_assert(sizeof(struct nvrm_memory_alloc) == 128, "NV_MEMORY_ALLOCATION_PARAMS");
_Static_assert(offsetof(struct nvrm_memory_alloc, size) == 64, "NV_MEMORY_ALLOCATION_PARAMS.size");

/* ---------------------------------------------------------- controls */

/* NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS (on the client). */
#define NVRM_CTRL_GPU_GET_ATTACHED_IDS 0x0201u
#define NVRM_MAX_ATTACHED_GPUS         32
#define NVRM_INVALID_GPU_ID            0xffffffffu
struct nvrm_ctrl_attached_ids {
    uint32_t gpu_ids[NVRM_MAX_ATTACHED_GPUS];
};
_Static_assert(sizeof(struct nvrm_ctrl_attached_ids) == 128, "GET_ATTACHED_IDS_PARAMS");

/* NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 (on the client). */
#define NVRM_CTRL_GPU_GET_ID_INFO_V2 0x0205u
struct nvrm_ctrl_id_info {
    uint32_t gpu_id;            /* in */
    uint32_t gpu_flags;
    uint32_t device_instance;   /* what NV01_DEVICE_0 takes as deviceId */
    uint32_t subdevice_instance;
    uint32_t sli_status;
    uint32_t board_id;
    uint32_t gpu_instance;
    int32_t  numa_id;
};
_Static_assert(sizeof(struct nvrm_ctrl_id_info) == 32, "GET_ID_INFO_V2_PARAMS");

/* NV0000_CTRL_CMD_GPU_GET_PCI_INFO (on the client). */
#define NVRM_CTRL_GPU_GET_PCI_INFO 0x021Bu
struct nvrm_ctrl_pci_info {
    uint32_t gpu_id;            /* in */
    uint32_t domain;
    uint16_t bus;
    uint16_t slot;
};
_Static_assert(sizeof(struct nvrm_ctrl_pci_info) == 12, "GET_PCI_INFO_PARAMS");

/* NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE (on the client). */
#define NVRM_CTRL_CLIENT_GET_ADDR_SPACE_TYPE 0x0D01u
#define NVRM_ADDR_SPACE_SYSMEM 1u
#define NVRM_ADDR_SPACE_VIDMEM 2u
struct nvrm_ctrl_addr_space {
    nvrm_handle_t h_object;     /* in */
    uint32_t      map_flags;    /* in */
    uint32_t      addr_space;   /* out */
};
_Static_assert(sizeof(struct nvrm_ctrl_addr_space) == 12, "GET_ADDR_SPACE_TYPE_PARAMS");

/* NV0041_CTRL_CMD_GET_SURFACE_INFO (on a memory object): a list of
 * {index, data} pairs the kernel fills through an embedded pointer. */
#define NVRM_CTRL_MEM_GET_SURFACE_INFO   0x410110u
#define NVRM_SURFACE_INFO_PHYS_SIZE_LO   2u
#define NVRM_SURFACE_INFO_PHYS_SIZE_HI   3u
#define NVRM_SURFACE_INFO_ADDR_SPACE     9u
struct nvrm_surface_info_entry {
    uint32_t index;
    uint32_t data;
};
_Static_assert(sizeof(struct nvrm_surface_info_entry) == 8, "NVXXXX_CTRL_XXX_INFO");
struct nvrm_ctrl_surface_info {
    uint32_t count;
    uint32_t pad_;
    uint64_t list;              /* user pointer to the entries */
};
_Static_assert(sizeof(struct nvrm_ctrl_surface_info) == 16, "GET_SURFACE_INFO_PARAMS");
_Static_assert(offsetof(struct nvrm_ctrl_surface_info, list) == 8, "surfaceInfoList");

/* NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO (on the client). */
#define NVRM_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO 0x3D08u
#define NVRM_EXPORT_METADATA_SIZE 64
struct nvrm_ctrl_export_info {
    int32_t  fd;                /* in: the exported ctl-device fd */
    uint32_t device_instance;
    uint32_t gpu_instance_id;
    uint16_t max_objects;
    uint8_t  metadata[NVRM_EXPORT_METADATA_SIZE];
    uint16_t pad_;
};
_Static_assert(sizeof(struct nvrm_ctrl_export_info) == 80, "GET_EXPORT_OBJECT_INFO_PARAMS");
_Static_assert(offsetof(struct nvrm_ctrl_export_info, metadata) == 14, "metadata");

/* NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD (on the client; used by the
 * simulated libcuda, which exports like the real one). */
#define NVRM_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD 0x3D0Bu
#define NVRM_EXPORT_MAX_OBJECTS 512
struct nvrm_ctrl_export_objects {
    int32_t       fd;
    nvrm_handle_t h_device;
    uint16_t      max_objects;
    uint8_t       metadata[NVRM_EXPORT_METADATA_SIZE];
    uint16_t      pad_;
    nvrm_handle_t objects[NVRM_EXPORT_MAX_OBJECTS];
    uint16_t      num_objects;
    uint16_t      index;
};
_Static_assert(sizeof(struct nvrm_ctrl_export_objects) == 2128, "EXPORT_OBJECTS_TO_FD_PARAMS");
_Static_assert(offsetof(struct nvrm_ctrl_export_objects, objects) == 76, "objects");

/* NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD (on the client). */
#define NVRM_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD 0x3D0Cu
#define NVRM_IMPORT_MAX_OBJECTS 128
#define NVRM_IMPORT_TYPE_VIDMEM 1u
struct nvrm_ctrl_import_objects {
    int32_t       fd;
    nvrm_handle_t h_parent;     /* a device of the importing client */
    nvrm_handle_t objects[NVRM_IMPORT_MAX_OBJECTS]; /* in: new handles */
    uint8_t       object_types[NVRM_IMPORT_MAX_OBJECTS]; /* out */
    uint16_t      num_objects;
    uint16_t      index;
};
_Static_assert(sizeof(struct nvrm_ctrl_import_objects) == 652, "IMPORT_OBJECTS_FROM_FD_PARAMS");
_Static_assert(offsetof(struct nvrm_ctrl_import_objects, object_types) == 520, "objectTypes");
_Static_assert(offsetof(struct nvrm_ctrl_import_objects, num_objects) == 648, "numObjects");

/* ------------------------------------------------------------------ UVM */

/* /dev/nvidia-uvm takes plain command numbers (no _IOC encoding). */
#define NVRM_UVM_INITIALIZE              0x30000001u
#define NVRM_UVM_MAP_EXTERNAL_ALLOCATION 33u
#define NVRM_UVM_FREE                    34u
#define NVRM_UVM_UNMAP_EXTERNAL          66u

#define NVRM_UVM_MAX_GPUS 256  /* NV_MAX_DEVICES (32) x 8 sub-processors */

/* UVM_INITIALIZE_PARAMS */
struct nvrm_uvm_initialize {
    uint64_t      flags;
    nvrm_status_t status;
    uint32_t      pad_;
};
_Static_assert(sizeof(struct nvrm_uvm_initialize) == 16, "UVM_INITIALIZE_PARAMS");

/* UvmGpuMappingAttributes */
struct nvrm_uvm_gpu_attrs {
    uint8_t  gpu_uuid[16];
    uint32_t mapping_type, caching_type, format_type, element_bits,
             compression_type;
};
_Static_assert(sizeof(struct nvrm_uvm_gpu_attrs) == 36, "UvmGpuMappingAttributes");

/* UVM_MAP_EXTERNAL_ALLOCATION_PARAMS: maps [base, base+length) of the
 * process's GPU VA onto RM memory (h_client, h_memory) from byte `offset`.
 * This is the one place where libcuda tells the kernel which RM object
 * backs a device address, so the backend watches it. */
struct nvrm_uvm_map_external {
    uint64_t                  base;
    uint64_t                  length;
    uint64_t                  offset;
    struct nvrm_uvm_gpu_attrs per_gpu[NVRM_UVM_MAX_GPUS];
    uint64_t                  gpu_attrs_count;
    int32_t                   rm_ctrl_fd;
    nvrm_handle_t             h_client;
    nvrm_handle_t             h_memory;
    nvrm_status_t             status;
};
_Static_assert(sizeof(struct nvrm_uvm_map_external) == 9264, "UVM_MAP_EXTERNAL_ALLOCATION_PARAMS");
_Static_assert(offsetof(struct nvrm_uvm_map_external, gpu_attrs_count) == 9240, "gpuAttributesCount");
_Static_assert(offsetof(struct nvrm_uvm_map_external, rm_ctrl_fd) == 9248, "rmCtrlFd");
_Static_assert(offsetof(struct nvrm_uvm_map_external, h_client) == 9252, "hClient");
_Static_assert(offsetof(struct nvrm_uvm_map_external, h_memory) == 9256, "hMemory");
_Static_assert(offsetof(struct nvrm_uvm_map_external, status) == 9260, "rmStatus");

/* UVM_FREE_PARAMS */
struct nvrm_uvm_free {
    uint64_t      base;
    uint64_t      length;
    nvrm_status_t status;
    uint32_t      pad_;
};
_Static_assert(sizeof(struct nvrm_uvm_free) == 24, "UVM_FREE_PARAMS");

/* UVM_UNMAP_EXTERNAL_PARAMS */
struct nvrm_uvm_unmap_external {
    uint64_t      base;
    uint64_t      length;
    uint8_t       gpu_uuid[16];
    nvrm_status_t status;
    uint32_t      pad_;
};
_Static_assert(sizeof(struct nvrm_uvm_unmap_external) == 40, "UVM_UNMAP_EXTERNAL_PARAMS");

/* ---------------------------------------------------------- IPC handle */

/* cuIpcGetMemHandle's 64-byte handle, read as 16 uint32 words.  The layout
 * is CUDA-internal and undocumented; it was observed with CUDA 13.0 on
 * driver 580.159.04 (see docs/nvrm.md) and is only a hint that the backend
 * verifies before use. */
#define NVRM_IPC_WORD_SIZE     4   /* allocation size (low 32 bits) */
#define NVRM_IPC_WORD_OFFSET   7   /* offset of the allocation in the object */
#define NVRM_IPC_WORD_HCLIENT 12
#define NVRM_IPC_WORD_HMEMORY 13

#endif /* GDRX_NVRM_ABI_H */
