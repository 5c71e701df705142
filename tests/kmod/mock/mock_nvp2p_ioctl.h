/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * mock_nvp2p_ioctl.h - test-only control interface of the mock NVIDIA P2P
 * provider (mock_nvp2p.ko, /dev/mock_nvp2p).  Shared by the module and the
 * guest test programs.
 *
 * The mock plays the GPU driver: a test "allocates GPU memory" by
 * registering a range of its own address space (the device VA range; it
 * never needs to be mapped) backed by a range of the ivshmem BAR, which is
 * physically contiguous non-RAM memory like a GPU's BAR1.  gdrdrv's
 * nvidia_p2p_get_pages*() then finds the range by VA and caller.  Freeing
 * it runs the free callbacks of every callback pin, like cudaFree.
 */
#ifndef MOCK_NVP2P_IOCTL_H
#define MOCK_NVP2P_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define MOCK_NVP2P_MAGIC	0xDB
#define MOCK_NVP2P_CHUNK	0x10000ull	/* GPU page: 64 KiB */

/* mock_alloc.flags */
#define MOCK_ALLOC_SCATTER	0x1u	/* chunks in reverse BAR order */
/* ALIAS: the allocation may be larger than the BAR; its chunks wrap
 * around the BAR from bar_off, so a 32 GiB "GPU buffer" costs 64 MiB.  It
 * claims the whole BAR while it lives. */
#define MOCK_ALLOC_ALIAS	0x2u
/* CACHEABLE: page tables carry NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE,
 * as on a coherent platform. */
#define MOCK_ALLOC_CACHEABLE	0x4u

struct mock_alloc_args {
	__u64 va;		/* in: 64 KiB aligned, never 0 */
	__u64 size;		/* in: multiple of 64 KiB */
	__u64 bar_off;		/* in: 64 KiB aligned offset into the BAR */
	__u32 flags;		/* in: MOCK_ALLOC_* */
	__u32 pad;
};

struct mock_free_args {
	__u64 va;		/* in: start of a live allocation */
	__s32 tgid;		/* in: its owner; 0 = the caller */
	__u32 pad;
};

/*
 * CARVE: the mock picks a free BAR range itself (first fit, 64 KiB aligned)
 * for an allocation of the caller, like the GPU driver placing a cudaMalloc
 * in VRAM; bar_off comes back.  va may be 0: the allocation then holds its
 * BAR range but get_pages cannot find it until BIND gives it its VA (the
 * simulated GPU learns its device VA only after the pages exist).  Carved
 * allocations also die with their process: when it closes the file it
 * carved them through (normally at exit), they are freed as by FREE, as the
 * GPU driver frees a dead process's memory.
 */
struct mock_carve_args {
	__u64 va;		/* in: 0, or as for ALLOC */
	__u64 size;		/* in: multiple of 64 KiB */
	__u64 bar_off;		/* out */
};

/* BIND: the caller's unbound carved allocation at bar_off gets its VA.
 * FREE_BAR: free the caller's allocation at bar_off (bound or not). */
struct mock_bar_args {
	__u64 bar_off;		/* in: start of the caller's allocation */
	__u64 va;		/* in (BIND only; 0 for FREE_BAR) */
};

struct mock_config_args {
	__u32 cb_delay_ms;	/* sleep before each free callback (<= 5000) */
	__s32 fail_next_get;	/* next get_pages returns this (<= 0) */
	__u32 free_in_next_get;	/* 1: the next callback get_pages frees its
				 * allocation (running the callbacks) after
				 * registering, before returning: the owner's
				 * cudaFree racing with the pin */
	__s32 fail_next_put;	/* next put_pages* returns this (<= 0) and
				 * keeps the registration, as the driver does
				 * under memory pressure */
	__u32 cb_hold;		/* 1: each free callback waits, with the
				 * driver lock held, until CB_RELEASE */
	__u32 pad;
};

/* PROBE: answered without the driver lock, so it works while a callback
 * is held (a test's handshake with the callback and put_pages). */
struct mock_probe_args {
	__u64 cb_held;		/* callbacks waiting for CB_RELEASE now */
	__u64 puts_entered;	/* put_pages* calls begun (total) */
};

struct mock_info_args {
	__u64 bar_phys;		/* physical address of the BAR */
	__u64 bar_size;
};

struct mock_stats_args {
	__u64 allocs;		/* live allocations */
	__u64 zombies;		/* freed, BAR held by persistent pins */
	__u64 tables;		/* live page tables (both kinds) */
	__u64 persistent_tables;
	__u64 gets;		/* successful get_pages* (total) */
	__u64 puts;		/* successful put_pages* (total) */
	__u64 callbacks;	/* free callbacks run (total) */
	__u64 misuse;		/* API misuse detected (total; must stay 0) */
};

#define MOCK_IOC_ALLOC	_IOW(MOCK_NVP2P_MAGIC, 1, struct mock_alloc_args)
#define MOCK_IOC_FREE	_IOW(MOCK_NVP2P_MAGIC, 2, struct mock_free_args)
#define MOCK_IOC_CONFIG	_IOW(MOCK_NVP2P_MAGIC, 3, struct mock_config_args)
#define MOCK_IOC_INFO	_IOR(MOCK_NVP2P_MAGIC, 4, struct mock_info_args)
#define MOCK_IOC_STATS	_IOR(MOCK_NVP2P_MAGIC, 5, struct mock_stats_args)
#define MOCK_IOC_CARVE	_IOWR(MOCK_NVP2P_MAGIC, 6, struct mock_carve_args)
#define MOCK_IOC_BIND	_IOW(MOCK_NVP2P_MAGIC, 7, struct mock_bar_args)
#define MOCK_IOC_FREE_BAR _IOW(MOCK_NVP2P_MAGIC, 8, struct mock_bar_args)
#define MOCK_IOC_PROBE	_IOR(MOCK_NVP2P_MAGIC, 9, struct mock_probe_args)
/* CB_RELEASE: held callbacks go on; later ones are not held (cb_hold = 0). */
#define MOCK_IOC_CB_RELEASE _IO(MOCK_NVP2P_MAGIC, 10)

#endif /* MOCK_NVP2P_IOCTL_H */
