/*
 * gdrapi.h - gdrx's implementation of the API of NVIDIA gdrcopy's
 * libgdrapi.so.2 (API level 2.6): the same names, types, constants and
 * structure layouts, so that a program written for gdrcopy builds against
 * this header and runs on libgdrx with no change, on every gdrx backend
 * (gdrdrv, nvrm with no kernel module of its own, dmabuf).
 *
 * SPDX-License-Identifier: MIT
 *
 * Written for gdrx from gdrcopy's documented interface; the behaviour of
 * each call, and where it differs from gdrcopy's, is in docs/compat.md.
 *
 * Conventions (as gdrcopy's): int functions return 0 on success or a
 * positive errno value (EINVAL, ENOMEM, ...); gdr_open returns NULL on
 * failure.  Unlike gdrcopy, every function may be called from any thread,
 * a handle that is no longer pinned is refused with EINVAL instead of
 * being dereferenced, and a copy through a mapping whose memory CUDA has
 * freed fails with ESTALE instead of reaching the memory's next owner.
 *
 * Defining GDRX_GDRAPI_INFO_V1 before including this header declares the
 * API as gdrcopy 2.0-2.3 did: struct gdr_info without mapping_type and a
 * real gdr_get_info() (the symbol programs built against those versions
 * call); otherwise gdr_get_info names gdr_get_info_v2, as since 2.4.
 */
#ifndef __GDRAPI_H__
#define __GDRAPI_H__

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Versions are (major << 16) | minor. */
#define MAJOR_VERSION_SHIFT 16
#define MINOR_VERSION_MASK  (((uint32_t)1 << MAJOR_VERSION_SHIFT) - 1)

#define GDR_API_MAJOR_VERSION 2
#define GDR_API_MINOR_VERSION 6
#define GDR_API_VERSION ((GDR_API_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | GDR_API_MINOR_VERSION)

#define MINIMUM_GDRDRV_MAJOR_VERSION 2
#define MINIMUM_GDRDRV_MINOR_VERSION 0
#define MINIMUM_GDRDRV_VERSION \
    ((MINIMUM_GDRDRV_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | MINIMUM_GDRDRV_MINOR_VERSION)

/* The GPU page: the unit in which device memory is pinned and mapped. */
#define GPU_PAGE_SHIFT  16
#define GPU_PAGE_SIZE   (1UL << GPU_PAGE_SHIFT)
#define GPU_PAGE_OFFSET (GPU_PAGE_SIZE - 1)
#define GPU_PAGE_MASK   (~GPU_PAGE_OFFSET)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's state for one user (one gdrx context). */
struct gdr;
typedef struct gdr *gdr_t;

/* A pinned range of device memory. */
typedef struct gdr_mh_s {
    unsigned long h;
} gdr_mh_t;

typedef enum gdr_pin_flags {
    GDR_PIN_FLAG_DEFAULT    = 0,
    GDR_PIN_FLAG_FORCE_PCIE = 1, /* BAR1 even where a coherent path exists */
} gdr_pin_flags_t;

typedef enum gdr_mapping_type {
    GDR_MAPPING_TYPE_NONE    = 0,
    GDR_MAPPING_TYPE_WC      = 1, /* write-combined (BAR1 on x86) */
    GDR_MAPPING_TYPE_CACHING = 2, /* cache-coherent */
    GDR_MAPPING_TYPE_DEVICE  = 3, /* uncached device memory */
    GDR_MAPPING_TYPE_MAX          /* not a type: one past the last */
} gdr_mapping_type_t;

typedef enum gdr_map_flags {
    GDR_MAP_FLAG_DEFAULT            = 0,
    GDR_MAP_FLAG_REQ_WC_MAPPING     = 1,
    GDR_MAP_FLAG_REQ_CACHE_MAPPING  = 2,
    GDR_MAP_FLAG_REQ_DEVICE_MAPPING = 3,
} gdr_map_flags_t;

typedef enum gdr_attr {
    GDR_ATTR_USE_PERSISTENT_MAPPING      = 1,
    GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE = 2,
    GDR_ATTR_USING_DMA_BUF_MMAP          = 3,
    GDR_ATTR_MAX                              /* not an attribute */
} gdr_attr_t;

/*
 * What a pin covers: va is the GPU-page aligned device address the mapping
 * starts at (gdr_map returns the CPU address of va, not of the address
 * pinned), mapped_size the bytes from there.  tm_cycles and cycles_per_ms
 * are obsolete in gdrcopy and always 0 here.
 */
#ifdef GDRX_GDRAPI_INFO_V1
struct gdr_info {
    uint64_t va;
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
};
typedef struct gdr_info gdr_info_t;
#else
typedef struct gdr_info_v2 {
    uint64_t           va;
    uint64_t           mapped_size;
    uint32_t           page_size;
    uint64_t           tm_cycles;
    uint32_t           cycles_per_ms;
    unsigned           mapped : 1;
    unsigned           wc_mapping : 1;
    gdr_mapping_type_t mapping_type;
} gdr_info_v2_t;
typedef gdr_info_v2_t gdr_info_t;
#endif

/* Open the library (a gdrx context on the first backend that works);
 * NULL if none does. */
gdr_t gdr_open(void);

/* Unmap and unpin whatever g still holds, then release g. */
int gdr_close(gdr_t g);

/* Pin [addr, addr+size) of one CUDA allocation (any thread, with or
 * without a current CUDA context).  p2p_token and va_space are obsolete
 * and ignored.  An addr inside a GPU page pins but cannot be mapped. */
int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token,
                   uint32_t va_space, gdr_mh_t *handle);

/* The same with gdr_pin_flags_t flags instead of the obsolete arguments
 * (GDR_PIN_FLAG_FORCE_PCIE is accepted; docs/compat.md). */
int gdr_pin_buffer_v2(gdr_t g, unsigned long addr, size_t size, uint32_t flags,
                      gdr_mh_t *handle);

/* Unpin (removing the CPU mapping first if there still is one). */
int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle);

/* *flag = 1 once CUDA freed the pinned memory, else 0. */
int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag);

#ifdef GDRX_GDRAPI_INFO_V1
int gdr_get_info(gdr_t g, gdr_mh_t handle, gdr_info_t *info);
#else
int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info);
#define gdr_get_info gdr_get_info_v2
#endif

/* Map a pin into the CPU: *va receives the CPU address of info.va (see
 * gdr_info_v2); size is at most mapped_size.  EINVAL for a pin whose addr
 * is inside a GPU page, as gdrcopy. */
int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size);

/* The same, refusing with EOPNOTSUPP a mapping of another kind than flags
 * (gdr_map_flags_t) asks for. */
int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags);

/* Remove the CPU mapping that gdr_map returned as va. */
int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size);

/* Copy size bytes between host memory and a mapping of handle, at any
 * alignment; gdr_copy_to_mapping's stores are fenced before it returns. */
int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size);
int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size);

/* The API level of this library: GDR_API_MAJOR_VERSION.MINOR. */
void gdr_runtime_get_version(int *major, int *minor);

/* gdrdrv's version on the gdrdrv backend; elsewhere the API level. */
int gdr_driver_get_version(gdr_t g, int *major, int *minor);

/* A library-wide attribute (gdr_attr_t) into *v. */
int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v);

/* The name of a mapping type. */
int gdr_get_mapping_type_string(gdr_mapping_type_t mapping_type, const char **pstr);

/* Not in gdrcopy: present only in gdrx's libgdrapi, so that a program (and
 * gdrx-info) can tell which libgdrapi.so.2 it loaded: "gdrx <version>". */
extern const char gdrx_gdrapi_impl[];

#ifdef __cplusplus
}
#endif

#endif /* __GDRAPI_H__ */
