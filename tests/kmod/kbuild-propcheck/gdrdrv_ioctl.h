/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * gdrdrv_ioctl.h - the ioctl ABI of /dev/gdrdrv.
 *
 * This header is shared by the kernel module (gdrdrv.ko) and by user space
 * (libgdrx's gdrdrv backend, the kernel tests).  The ABI is gdrcopy's
 * gdrdrv 2.x ABI, reproduced bit for bit: the same magic, command numbers,
 * _IOC size fields, struct layouts and constant values.  So libgdrx works on
 * NVIDIA's gdrdrv and NVIDIA's libgdrapi works on ours.  Any change here is
 * an ABI break; the assertions at the end pin every number down.
 *
 * The layouts below are those of an LP64 target (x86_64, arm64, ppc64le),
 * the only targets gdrcopy supports.  __u64 members are naturally aligned
 * there, so some structs carry implicit tail padding, exactly as gdrcopy's
 * do; the kernel clears it before copying a struct back to user space.
 *
 * Handles: a pin is named by a handle that is also its mmap offset in host
 * pages: user space maps a pin with mmap(..., fd, handle << PAGE_SHIFT).
 * Each pin therefore owns the disjoint offset range
 * [handle, handle + pinned_bytes / PAGE_SIZE).
 */
#ifndef GDRDRV_IOCTL_H
#define GDRDRV_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ---- versions --------------------------------------------------------- */

/* A version is (major << 16) | minor, in both directions of the handshake. */
#define GDRDRV_VERSION_MAJOR_SHIFT	16
#define GDRDRV_MKVERSION(major, minor) \
	(((__u32)(major) << GDRDRV_VERSION_MAJOR_SHIFT) | (__u32)(minor))
#define GDRDRV_VERSION_MAJOR_OF(v)	((__u32)(v) >> GDRDRV_VERSION_MAJOR_SHIFT)
#define GDRDRV_VERSION_MINOR_OF(v)	((__u32)(v) & 0xffffu)

/*
 * ABI level this module implements: 2.5 is the level that has every ioctl
 * below (GET_ATTR, PIN_BUFFER_V2 and REQ_MAPPING_TYPE arrived in 2.5).
 */
#define GDRDRV_ABI_MAJOR		2
#define GDRDRV_ABI_MINOR		5
#define GDRDRV_ABI_VERSION \
	GDRDRV_MKVERSION(GDRDRV_ABI_MAJOR, GDRDRV_ABI_MINOR)

/* The oldest user library the module accepts (reported by GET_VERSION). */
#define GDRDRV_MIN_LIB_VERSION		GDRDRV_MKVERSION(2, 0)

/* The driver level at which each optional ioctl became available. */
#define GDRDRV_VERSION_WITH_GET_INFO_V2		GDRDRV_MKVERSION(2, 4)
#define GDRDRV_VERSION_WITH_GET_ATTR		GDRDRV_MKVERSION(2, 5)
#define GDRDRV_VERSION_WITH_PIN_BUFFER_V2	GDRDRV_MKVERSION(2, 5)
#define GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE	GDRDRV_MKVERSION(2, 5)

/* ---- constants -------------------------------------------------------- */

#define GDRDRV_IOC_MAGIC		0xDA

/* The NVIDIA P2P API pins and reports GPU memory in 64 KiB pages. */
#define GDRDRV_GPU_PAGE_SHIFT		16
#define GDRDRV_GPU_PAGE_SIZE		(1ull << GDRDRV_GPU_PAGE_SHIFT)

/* CPU mapping types (GET_INFO_V2 mapping_type, REQ_MAPPING_TYPE). */
#define GDRDRV_MAPPING_NONE		0u	/* not mapped / no preference */
#define GDRDRV_MAPPING_WC		1u	/* write-combined */
#define GDRDRV_MAPPING_CACHING		2u	/* cached (coherent platforms) */
#define GDRDRV_MAPPING_DEVICE		3u	/* device / strongly ordered */
#define GDRDRV_MAPPING_MAX		GDRDRV_MAPPING_DEVICE

/* GET_ATTR attributes. */
#define GDRDRV_ATTR_USE_PERSISTENT_MAPPING	1u
#define GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE	2u

/* PIN_BUFFER_V2 flags. */
#define GDRDRV_PIN_FLAG_DEFAULT		0x0u
#define GDRDRV_PIN_FLAG_FORCE_PCIE	0x1u	/* force BAR1 on coherent hosts */
#define GDRDRV_PIN_FLAGS_ALL		GDRDRV_PIN_FLAG_FORCE_PCIE

typedef __u64 gdrdrv_handle_t;

/* ---- argument structs ------------------------------------------------- */

struct gdrdrv_pin_buffer_args {
	__u64 addr;		/* in: GPU virtual address */
	__u64 size;		/* in: bytes */
	__u64 p2p_token;	/* in: legacy, must be 0 in persistent mode */
	__u32 va_space;		/* in: legacy, must be 0 in persistent mode */
	/* 4 bytes of implicit padding */
	gdrdrv_handle_t handle;	/* out */
};

struct gdrdrv_unpin_buffer_args {
	gdrdrv_handle_t handle;	/* in */
};

struct gdrdrv_get_cb_flag_args {
	gdrdrv_handle_t handle;	/* in */
	__u32 flag;		/* out: 1 once the free callback revoked the pin */
	/* 4 bytes of implicit padding */
};

struct gdrdrv_get_info_args {
	gdrdrv_handle_t handle;	/* in */
	__u64 va;		/* out: pinned GPU VA, rounded down to 64 KiB */
	__u64 mapped_size;	/* out: pinned bytes, a multiple of 64 KiB */
	__u32 page_size;	/* out: GPU page size (65536) */
	__u32 tsc_khz;		/* out: deprecated, CPU clock in kHz */
	__u64 tm_cycles;	/* out: deprecated, cycles the pin took */
	__u32 mapped;		/* out: 1 while a CPU mapping exists */
	__u32 wc_mapping;	/* out: 1 if that mapping is write-combined */
};

struct gdrdrv_get_info_v2_args {
	gdrdrv_handle_t handle;	/* in */
	__u64 va;		/* out */
	__u64 mapped_size;	/* out */
	__u32 page_size;	/* out */
	__u32 tsc_khz;		/* out: deprecated */
	__u64 tm_cycles;	/* out: deprecated */
	__u32 mapping_type;	/* out: GDRDRV_MAPPING_*, NONE if unmapped */
	/* 4 bytes of implicit padding */
};

struct gdrdrv_get_attr_args {
	__u32 attr;		/* in: GDRDRV_ATTR_* */
	__u32 val;		/* out */
};

struct gdrdrv_pin_buffer_v2_args {
	__u64 addr;		/* in */
	__u64 size;		/* in */
	__u32 flags;		/* in: GDRDRV_PIN_FLAG_* */
	__u32 pad;		/* in: must be 0 */
	gdrdrv_handle_t handle;	/* out */
};

struct gdrdrv_req_mapping_type_args {
	gdrdrv_handle_t handle;	/* in */
	__u32 mapping_type;	/* in: GDRDRV_MAPPING_* */
	/* 4 bytes of implicit padding */
};

struct gdrdrv_get_version_args {
	__u32 driver_version;	/* out: GDRDRV_ABI_VERSION */
	__u32 min_lib_version;	/* out: GDRDRV_MIN_LIB_VERSION */
};

/* ---- command numbers -------------------------------------------------- */

/*
 * gdrcopy declares most of its commands as _IOWR(0xDA, nr, struct X *):
 * the size argument is a *pointer* type, so _IOC_SIZE() of those commands
 * is sizeof(void *) (8 on LP64), not the size of the struct.  Only
 * PIN_BUFFER and PIN_BUFFER_V2 encode the real struct size.  The numbers
 * are part of the ABI, so we build the same values; the size field carries
 * no meaning for those commands and the module never trusts it (it always
 * copies sizeof(the struct) bytes).
 */
#define GDRDRV_IOC_PTRSIZE_(nr) \
	_IOC(_IOC_READ | _IOC_WRITE, GDRDRV_IOC_MAGIC, (nr), sizeof(void *))

#define GDRDRV_IOC_PIN_BUFFER \
	_IOWR(GDRDRV_IOC_MAGIC, 1, struct gdrdrv_pin_buffer_args)
#define GDRDRV_IOC_UNPIN_BUFFER		GDRDRV_IOC_PTRSIZE_(2)
#define GDRDRV_IOC_GET_CB_FLAG		GDRDRV_IOC_PTRSIZE_(3)
#define GDRDRV_IOC_GET_INFO		GDRDRV_IOC_PTRSIZE_(4)
#define GDRDRV_IOC_GET_INFO_V2		GDRDRV_IOC_PTRSIZE_(5)
#define GDRDRV_IOC_GET_ATTR		GDRDRV_IOC_PTRSIZE_(6)
#define GDRDRV_IOC_PIN_BUFFER_V2 \
	_IOWR(GDRDRV_IOC_MAGIC, 7, struct gdrdrv_pin_buffer_v2_args)
#define GDRDRV_IOC_REQ_MAPPING_TYPE	GDRDRV_IOC_PTRSIZE_(8)
#define GDRDRV_IOC_GET_VERSION		GDRDRV_IOC_PTRSIZE_(255)

/* ---- ABI assertions --------------------------------------------------- */

#if defined(__cplusplus)
#define GDRDRV_ABI_ASSERT_(cond, msg) static_assert(cond, msg)
#else
#define GDRDRV_ABI_ASSERT_(cond, msg) _Static_assert(cond, msg)
#endif

/* Size of struct @s, and offset of its member @m. */
#define GDRDRV_ABI_SIZE_(s, size) \
	GDRDRV_ABI_ASSERT_(sizeof(struct s) == (size), "size of " #s)
#define GDRDRV_ABI_OFF_(s, m, off) \
	GDRDRV_ABI_ASSERT_(__builtin_offsetof(struct s, m) == (off), \
			   "offset of " #s "." #m)

#if defined(__x86_64__) || defined(__aarch64__)
/*
 * Exact command values on the asm-generic ioctl encoding
 * (dir << 30 | size << 16 | magic << 8 | nr, READ|WRITE = 3).
 */
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_PIN_BUFFER == 0xC028DA01u, "PIN_BUFFER");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_UNPIN_BUFFER == 0xC008DA02u, "UNPIN_BUFFER");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_GET_CB_FLAG == 0xC008DA03u, "GET_CB_FLAG");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_GET_INFO == 0xC008DA04u, "GET_INFO");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_GET_INFO_V2 == 0xC008DA05u, "GET_INFO_V2");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_GET_ATTR == 0xC008DA06u, "GET_ATTR");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_PIN_BUFFER_V2 == 0xC020DA07u, "PIN_BUFFER_V2");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_REQ_MAPPING_TYPE == 0xC008DA08u,
		   "REQ_MAPPING_TYPE");
GDRDRV_ABI_ASSERT_(GDRDRV_IOC_GET_VERSION == 0xC008DAFFu, "GET_VERSION");
#endif

#if defined(__LP64__) || defined(_LP64)
GDRDRV_ABI_SIZE_(gdrdrv_pin_buffer_args, 40);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_args, addr, 0);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_args, size, 8);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_args, p2p_token, 16);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_args, va_space, 24);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_args, handle, 32);

GDRDRV_ABI_SIZE_(gdrdrv_unpin_buffer_args, 8);
GDRDRV_ABI_OFF_(gdrdrv_unpin_buffer_args, handle, 0);

GDRDRV_ABI_SIZE_(gdrdrv_get_cb_flag_args, 16);
GDRDRV_ABI_OFF_(gdrdrv_get_cb_flag_args, handle, 0);
GDRDRV_ABI_OFF_(gdrdrv_get_cb_flag_args, flag, 8);

GDRDRV_ABI_SIZE_(gdrdrv_get_info_args, 48);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, handle, 0);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, va, 8);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, mapped_size, 16);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, page_size, 24);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, tsc_khz, 28);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, tm_cycles, 32);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, mapped, 40);
GDRDRV_ABI_OFF_(gdrdrv_get_info_args, wc_mapping, 44);

GDRDRV_ABI_SIZE_(gdrdrv_get_info_v2_args, 48);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, handle, 0);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, va, 8);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, mapped_size, 16);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, page_size, 24);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, tsc_khz, 28);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, tm_cycles, 32);
GDRDRV_ABI_OFF_(gdrdrv_get_info_v2_args, mapping_type, 40);

GDRDRV_ABI_SIZE_(gdrdrv_get_attr_args, 8);
GDRDRV_ABI_OFF_(gdrdrv_get_attr_args, attr, 0);
GDRDRV_ABI_OFF_(gdrdrv_get_attr_args, val, 4);

GDRDRV_ABI_SIZE_(gdrdrv_pin_buffer_v2_args, 32);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_v2_args, addr, 0);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_v2_args, size, 8);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_v2_args, flags, 16);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_v2_args, pad, 20);
GDRDRV_ABI_OFF_(gdrdrv_pin_buffer_v2_args, handle, 24);

GDRDRV_ABI_SIZE_(gdrdrv_req_mapping_type_args, 16);
GDRDRV_ABI_OFF_(gdrdrv_req_mapping_type_args, handle, 0);
GDRDRV_ABI_OFF_(gdrdrv_req_mapping_type_args, mapping_type, 8);

GDRDRV_ABI_SIZE_(gdrdrv_get_version_args, 8);
GDRDRV_ABI_OFF_(gdrdrv_get_version_args, driver_version, 0);
GDRDRV_ABI_OFF_(gdrdrv_get_version_args, min_lib_version, 4);
#endif

GDRDRV_ABI_ASSERT_(GDRDRV_ABI_VERSION == 0x00020005u, "ABI version 2.5");
GDRDRV_ABI_ASSERT_(GDRDRV_MIN_LIB_VERSION == 0x00020000u, "min lib 2.0");

#endif /* GDRDRV_IOCTL_H */
