/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * gdrdrv.h - internal declarations of gdrdrv.ko.
 *
 * Objects
 *   struct gdrdrv_file   one per open() of /dev/gdrdrv: the owner process,
 *                        its pins and a private address_space, so that
 *                        revoking a pin zaps exactly the mappings made
 *                        through this file.
 *   the handle table     one xarray per file, handle -> pin, with its own
 *                        cyclic allocator (gdrdrv_table.c): handle spaces
 *                        of different files are independent, as in
 *                        gdrcopy.
 *   struct gdrdrv_pin    one pinned GPU range: the NVIDIA page table, its
 *                        handle (= its mmap offset in host pages) and the
 *                        state of its CPU mappings.
 *
 * Lifetime of a pin: a refcount with these holders
 *   - the file's table, from insertion until unpin/close takes it out;
 *   - the NVIDIA registration, from just before nvidia_p2p_get_pages*()
 *     until put_pages returned or the free callback finished (the callback
 *     receives the pin as its data pointer, so the pin must outlive it);
 *     when put_pages fails, until the free callback (ORPHANED state);
 *   - each VMA (vm_private_data), from mmap/vm_open until vm_close;
 *   - short lookups done by ioctl handlers.
 *
 * LOCK ORDER (outer first); no other nesting exists:
 *
 *   mmap_lock (held by the core around ->mmap, ->fault, ->close)
 *     -> file->table_lock        (mutex; the file's handle table)
 *   mmap_lock
 *     -> pin->sem                (rw_semaphore; page table, mapping state)
 *          -> i_mmap_rwsem, page-table locks (unmap_mapping_range,
 *             vmf_insert_pfn_prot)
 *   NVIDIA driver locks (held while it runs our free callback)
 *     -> pin->sem -> i_mmap_rwsem
 *
 * Consequences, relied on throughout:
 *   - a table_lock and pin->sem are never held together;
 *   - no gdrdrv lock is held while calling into the NVIDIA driver
 *     (get_pages, put_pages), because put_pages waits for a free callback
 *     that is running, and that callback takes pin->sem;
 *   - no gdrdrv lock is held across copy_{from,to}_user(), which may fault
 *     and take mmap_lock (the reverse of the first two edges).
 */
#ifndef GDRDRV_H
#define GDRDRV_H

#include <linux/types.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/refcount.h>
#include <linux/list.h>
#include <linux/atomic.h>
#include <linux/xarray.h>

#include "gdrdrv_ioctl.h"
#include "gdrdrv_nv.h"

#define GDRDRV_NAME		"gdrdrv"

/*
 * Handles are mmap page offsets.  They are allocated cyclically from
 * [GDRDRV_HANDLE_MIN, GDRDRV_HANDLE_LIMIT): below 2^32 so that libraries
 * that keep a handle in 32 bits (gdrcopy's libgdrapi does) never truncate
 * it, and never 0 so that a zeroed struct is never a valid handle.
 */
#define GDRDRV_HANDLE_MIN	1ul
#define GDRDRV_HANDLE_LIMIT	(1ul << 32)

/* Bytes of a VMA mapped by one fault: one PMD's worth of PTEs. */
#define GDRDRV_FAULT_WINDOW	(2ul << 20)

/* Largest single pin accepted (bytes); larger requests get -EINVAL. */
#define GDRDRV_MAX_PIN_BYTES	(1ull << 40)

/* NVIDIA side of a pin, protected by pin->sem. */
enum gdrdrv_nv_state {
	GDRDRV_NV_NONE,		/* get_pages not (yet successfully) called */
	GDRDRV_NV_PINNED,	/* we own page_table */
	GDRDRV_NV_RELEASING,	/* unpin took page_table, put_pages pending */
	GDRDRV_NV_ORPHANED,	/* put_pages failed: page_table and the
				 * registration's reference wait for the
				 * free callback, which drops both */
	GDRDRV_NV_REVOKED,	/* the free callback took the pages back */
};

/*
 * A physically contiguous run of a pin, for the PAT memtype reservation.
 * Runs are recomputed from the page table when needed, never stored: a
 * pin of 100+ GiB may have millions of them.
 */
struct gdrdrv_run {
	phys_addr_t phys;
	u64 size;
};

struct gdrdrv_file;

struct gdrdrv_pin {
	refcount_t ref;
	struct gdrdrv_file *file;	/* owner; outlives every use of it (an
					 * ORPHANED pin may outlive the file
					 * but never touches it again) */
	struct list_head file_node;	/* in file->pins, file->table_lock */

	/* Immutable after creation. */
	unsigned long handle;		/* first mmap page offset */
	unsigned long npages;		/* host pages in the offset range */
	u64 va;				/* GPU VA, rounded down to 64 KiB */
	u64 size;			/* bytes pinned, multiple of 64 KiB */
	u32 va_offset;			/* caller's addr - va */
	u64 p2p_token;
	u32 va_space;
	bool persistent;
	u32 nv_flags;
	u64 tm_cycles;

	struct rw_semaphore sem;	/* protects everything below */
	enum gdrdrv_nv_state nv_state;
	struct nvidia_p2p_page_table *page_table; /* valid in NV_PINNED */
	bool table_live;		/* reachable by handle (table_lock) */
	bool cb_fired;			/* the free callback revoked it */
	bool cb_in_release;		/* the callback ran during put_pages */
	u32 req_type;			/* GDRDRV_MAPPING_* asked for */
	u32 map_type;			/* type of the live mappings */
	bool type_lost;			/* a faulted PTE is not of map_type
					 * (PAT gave UC-); set with pin->sem
					 * read-held, so WRITE_ONCE */
	unsigned int map_count;		/* VMAs referring to the pin */
	unsigned long nr_runs;		/* leading runs reserved WC, or 0 */
};

struct gdrdrv_file {
	struct mutex table_lock;	/* protects the next three */
	struct xarray table;		/* handle -> pin */
	struct list_head pins;		/* its pins */
	unsigned long cursor;		/* next handle to try */
#ifdef GDRDRV_NV_FLAVOUR_MOCK
	struct list_head test_node;	/* in gdrdrv_table.c's list */
#endif
	pid_t owner_tgid;		/* opener's thread group ... */
	u64 owner_start;		/* ... and its start time (no reuse) */
	bool persistent;		/* pinning mode, fixed at open */
	struct address_space mapping;	/* replaces filp->f_mapping */
};

/* gdrdrv_main.c */
extern bool gdrdrv_use_persistent;
bool gdrdrv_caller_is_owner(const struct gdrdrv_file *f);

/* gdrdrv_table.c */
void gdrdrv_table_init(struct gdrdrv_file *f);
void gdrdrv_table_fini(struct gdrdrv_file *f);
int gdrdrv_table_insert(struct gdrdrv_file *f, struct gdrdrv_pin *pin);
void gdrdrv_table_publish(struct gdrdrv_pin *pin);
void gdrdrv_table_remove(struct gdrdrv_pin *pin);
struct gdrdrv_pin *gdrdrv_table_take(struct gdrdrv_file *f,
				     unsigned long handle, bool any);
struct gdrdrv_pin *gdrdrv_pin_get(struct gdrdrv_file *f, unsigned long handle);
#ifdef GDRDRV_NV_FLAVOUR_MOCK
void gdrdrv_table_track(struct gdrdrv_file *f, bool add);
#else
static inline void gdrdrv_table_track(struct gdrdrv_file *f, bool add) {}
#endif

/* gdrdrv_pin.c */
int gdrdrv_pin_create(struct gdrdrv_file *f, u64 addr, u64 size,
		      u64 p2p_token, u32 va_space, u32 pin_flags,
		      unsigned long *handle);
int gdrdrv_pin_destroy(struct gdrdrv_file *f, unsigned long handle);
void gdrdrv_pin_destroy_all(struct gdrdrv_file *f);
void gdrdrv_pin_put(struct gdrdrv_pin *pin);
void gdrdrv_pin_hold(struct gdrdrv_pin *pin);
bool gdrdrv_force_pcie_supported(const struct gdrdrv_file *f);

/* gdrdrv_mmap.c */
int gdrdrv_mmap(struct file *filp, struct vm_area_struct *vma);
void gdrdrv_pin_revoke_cpu_locked(struct gdrdrv_pin *pin);
bool gdrdrv_mapping_type_supported(const struct gdrdrv_pin *pin, u32 type);

/* gdrdrv_gdrcopy.c: what gdrcopy's scripts and users expect besides the ABI */
extern bool gdrdrv_dbg_enabled, gdrdrv_info_enabled;
int gdrdrv_gdrcopy_init(const struct file_operations *fops);
void gdrdrv_gdrcopy_exit(void);

/* Event logs, as gdrcopy's info_enabled/dbg_enabled parameters give. */
#define gdrdrv_info(fmt, ...)						\
	do {								\
		if (READ_ONCE(gdrdrv_info_enabled) ||			\
		    READ_ONCE(gdrdrv_dbg_enabled))			\
			pr_info(GDRDRV_NAME ": " fmt, ##__VA_ARGS__);	\
	} while (0)
#define gdrdrv_dbg(fmt, ...)						\
	do {								\
		if (READ_ONCE(gdrdrv_dbg_enabled))			\
			pr_info(GDRDRV_NAME ": " fmt, ##__VA_ARGS__);	\
	} while (0)

/* gdrdrv_ioctl.c */
long gdrdrv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);

/* gdrdrv_stats.c */
struct gdrdrv_stats {
	atomic64_t files;		/* open files */
	atomic64_t pins;		/* live handles */
	atomic64_t pinned_bytes;	/* bytes held from the NVIDIA driver */
	atomic64_t nv_pins;		/* page tables held from NVIDIA */
	atomic64_t mappings;		/* live VMAs */
	atomic64_t invalidations;	/* free callbacks that revoked (total) */
	atomic64_t errors;		/* failed ioctl/mmap calls (total) */
	atomic64_t pins_total;		/* successful pins (total) */
	atomic64_t faulted_pages;	/* pages mapped by faults (total) */
};

extern struct gdrdrv_stats gdrdrv_stats;
extern const struct attribute_group *gdrdrv_attr_groups[];

static inline void gdrdrv_stat_add(atomic64_t *c, s64 v)
{
	atomic64_add(v, c);
}

static inline long gdrdrv_count_error(long ret)
{
	if (ret < 0)
		atomic64_inc(&gdrdrv_stats.errors);
	return ret;
}

#endif /* GDRDRV_H */
