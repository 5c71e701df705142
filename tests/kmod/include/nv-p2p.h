/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * nv-p2p.h (test double) - the subset of the NVIDIA P2P kernel interface
 * that gdrdrv uses, for building gdrdrv and the mock provider
 * (tests/kmod/mock) without the NVIDIA driver source.
 *
 * Names, values and struct layouts are those of the NVIDIA driver's own
 * nv-p2p.h (r535 and later, with the r550+ BAR1-forcing flag), so a module
 * built against this header is binary-compatible with one built against
 * the real header.  Declarations only; the implementation is the mock.
 */
#ifndef _NV_P2P_H_
#define _NV_P2P_H_

#include <linux/types.h>

/* Versions are (major << 16) | minor; a minor bump stays compatible. */
#define NVIDIA_P2P_MAJOR_VERSION(v)	(((v) & 0xffff0000u) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v)	((v) & 0x0000ffffu)
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v)				\
	(NVIDIA_P2P_MAJOR_VERSION((p)->version) ==			\
		NVIDIA_P2P_MAJOR_VERSION(v) &&				\
	 NVIDIA_P2P_MINOR_VERSION((p)->version) >=			\
		NVIDIA_P2P_MINOR_VERSION(v))

/* The persistent pinning calls below exist. */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
	uint64_t physical_address;	/* bus address of the GPU page */
	union nvidia_p2p_request_registers {
		struct {
			uint32_t wreqmb_h;
			uint32_t rreqmb_h;
			uint32_t rreqmb_0;
			uint32_t reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

/* 2.x: the table has flags (coherent platforms' CPU-cacheable memory). */
#define NVIDIA_P2P_PAGE_TABLE_VERSION	0x00020000
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

typedef struct nvidia_p2p_page_table {
	uint32_t version;
	uint32_t page_size;		/* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	uint32_t entries;
	uint8_t *gpu_uuid;
	uint32_t flags;			/* NVIDIA_P2P_PAGE_TABLE_FLAGS_* */
} nvidia_p2p_page_table_t;

/* The CPU may map the pages cached (coherent, e.g. Grace Hopper). */
#define NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE	1

/* Flags of the persistent calls. */
#define NVIDIA_P2P_FLAGS_DEFAULT		0
#define NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING	1

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table,
				    uint32_t flags);
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    uint32_t flags);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);

#endif /* _NV_P2P_H_ */
