// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_table.c - the handle table of a file: handle allocation, lookup
 * and removal of its pins.
 *
 * Every file has its own handle space, as in gdrcopy: handles of one user
 * say nothing about another's pins, and nobody can exhaust or probe
 * another file's space.  A handle is the first mmap page offset of its
 * pin's range.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "gdrdrv.h"

/*
 * Find a free handle range of @npages in @f, starting at its cursor and
 * wrapping once.  Invariant: the cursor is never strictly inside a live
 * range (it is the end of the range allocated last, and ranges are
 * disjoint), so a range is free exactly when no entry *starts* inside it.
 * Allocation is cyclic, so an unpinned handle is not handed out again
 * before the whole space has been used.
 */
static int gdrdrv_handle_alloc(struct gdrdrv_file *f, unsigned long npages,
			       unsigned long *handle)
{
	unsigned long start = f->cursor;
	bool wrapped = false;

	lockdep_assert_held(&f->table_lock);
	for (;;) {
		struct gdrdrv_pin *next;
		unsigned long idx;

		if (start < GDRDRV_HANDLE_MIN)
			start = GDRDRV_HANDLE_MIN;
		if (start >= GDRDRV_HANDLE_LIMIT ||
		    npages > GDRDRV_HANDLE_LIMIT - start) {
			if (wrapped)
				return -ENOSPC;
			wrapped = true;
			start = GDRDRV_HANDLE_MIN;
			continue;
		}
		idx = start;
		next = xa_find(&f->table, &idx, start + npages - 1,
			       XA_PRESENT);
		if (!next) {
			*handle = start;
			f->cursor = start + npages;
			return 0;
		}
		start = next->handle + next->npages;
	}
}

void gdrdrv_table_init(struct gdrdrv_file *f)
{
	mutex_init(&f->table_lock);
	xa_init(&f->table);
	INIT_LIST_HEAD(&f->pins);
	f->cursor = GDRDRV_HANDLE_MIN;
}

/* After every pin is gone (release()). */
void gdrdrv_table_fini(struct gdrdrv_file *f)
{
	WARN_ON_ONCE(!list_empty(&f->pins));
	xa_destroy(&f->table);
	mutex_destroy(&f->table_lock);
}

/* Give @pin a handle range of @f; lookups ignore it until published. */
int gdrdrv_table_insert(struct gdrdrv_file *f, struct gdrdrv_pin *pin)
{
	int ret;

	mutex_lock(&f->table_lock);
	ret = gdrdrv_handle_alloc(f, pin->npages, &pin->handle);
	if (!ret)
		ret = xa_insert(&f->table, pin->handle, pin,
				GFP_KERNEL_ACCOUNT);
	if (!ret)
		list_add_tail(&pin->file_node, &f->pins);
	mutex_unlock(&f->table_lock);
	return ret == -EBUSY ? -ENOSPC : ret;
}

/* Make @pin reachable by its handle. */
void gdrdrv_table_publish(struct gdrdrv_pin *pin)
{
	struct gdrdrv_file *f = pin->file;

	mutex_lock(&f->table_lock);
	pin->table_live = true;
	atomic64_inc(&gdrdrv_stats.pins);
	atomic64_inc(&gdrdrv_stats.pins_total);
	mutex_unlock(&f->table_lock);
}

static void gdrdrv_table_unlink(struct gdrdrv_pin *pin)
{
	lockdep_assert_held(&pin->file->table_lock);
	xa_erase(&pin->file->table, pin->handle);
	list_del_init(&pin->file_node);
	if (pin->table_live)
		atomic64_dec(&gdrdrv_stats.pins);
	pin->table_live = false;
}

void gdrdrv_table_remove(struct gdrdrv_pin *pin)
{
	mutex_lock(&pin->file->table_lock);
	gdrdrv_table_unlink(pin);
	mutex_unlock(&pin->file->table_lock);
}

/* The live pin of @f named @handle, or NULL. */
static struct gdrdrv_pin *gdrdrv_table_find(struct gdrdrv_file *f,
					    unsigned long handle)
{
	struct gdrdrv_pin *pin;

	lockdep_assert_held(&f->table_lock);
	if (handle < GDRDRV_HANDLE_MIN || handle >= GDRDRV_HANDLE_LIMIT)
		return NULL;
	pin = xa_load(&f->table, handle);
	if (!pin || !pin->table_live)
		return NULL;
	return pin;
}

struct gdrdrv_pin *gdrdrv_pin_get(struct gdrdrv_file *f, unsigned long handle)
{
	struct gdrdrv_pin *pin;

	mutex_lock(&f->table_lock);
	pin = gdrdrv_table_find(f, handle);
	if (pin)
		gdrdrv_pin_hold(pin);
	mutex_unlock(&f->table_lock);
	return pin;
}

/*
 * Unlink the live pin named @handle (or, with @any, the first pin of @f)
 * and hand its table reference to the caller; NULL if none.
 */
struct gdrdrv_pin *gdrdrv_table_take(struct gdrdrv_file *f,
				     unsigned long handle, bool any)
{
	struct gdrdrv_pin *pin;

	mutex_lock(&f->table_lock);
	if (any)
		pin = list_first_entry_or_null(&f->pins, struct gdrdrv_pin,
					       file_node);
	else
		pin = gdrdrv_table_find(f, handle);
	if (pin)
		gdrdrv_table_unlink(pin);
	mutex_unlock(&f->table_lock);
	return pin;
}

#ifdef GDRDRV_NV_FLAVOUR_MOCK
/*
 * Tests only (mock flavour): the handle_cursor parameter moves the cursor
 * of every open file, e.g. next to the end of the handle space so that
 * allocations run across the wrap.  A value inside a live range of some
 * file would break the allocator's invariant and is refused.
 * Lock order: gdrdrv_files_lock -> file->table_lock.
 */
static DEFINE_MUTEX(gdrdrv_files_lock);
static LIST_HEAD(gdrdrv_files);
static unsigned long gdrdrv_cursor_param = GDRDRV_HANDLE_MIN;

void gdrdrv_table_track(struct gdrdrv_file *f, bool add)
{
	mutex_lock(&gdrdrv_files_lock);
	if (add)
		list_add(&f->test_node, &gdrdrv_files);
	else
		list_del(&f->test_node);
	mutex_unlock(&gdrdrv_files_lock);
}

static int gdrdrv_cursor_check(struct gdrdrv_file *f, unsigned long v)
{
	struct gdrdrv_pin *pin;
	unsigned long idx;

	lockdep_assert_held(&f->table_lock);
	xa_for_each(&f->table, idx, pin)
		if (v > pin->handle && v - pin->handle < pin->npages)
			return -EBUSY;
	return 0;
}

static int gdrdrv_cursor_set(const char *val, const struct kernel_param *kp)
{
	struct gdrdrv_file *f;
	unsigned long v;
	int ret;

	ret = kstrtoul(val, 0, &v);
	if (ret)
		return ret;
	if (v < GDRDRV_HANDLE_MIN || v >= GDRDRV_HANDLE_LIMIT)
		return -ERANGE;
	mutex_lock(&gdrdrv_files_lock);
	list_for_each_entry(f, &gdrdrv_files, test_node) {
		mutex_lock(&f->table_lock);
		ret = gdrdrv_cursor_check(f, v);
		mutex_unlock(&f->table_lock);
		if (ret)
			goto out;
	}
	list_for_each_entry(f, &gdrdrv_files, test_node) {
		mutex_lock(&f->table_lock);
		f->cursor = v;
		mutex_unlock(&f->table_lock);
	}
	gdrdrv_cursor_param = v;
out:
	mutex_unlock(&gdrdrv_files_lock);
	return ret;
}

static const struct kernel_param_ops gdrdrv_cursor_ops = {
	.set	= gdrdrv_cursor_set,
	.get	= param_get_ulong,
};
module_param_cb(handle_cursor, &gdrdrv_cursor_ops, &gdrdrv_cursor_param, 0600);
MODULE_PARM_DESC(handle_cursor, "Move the handle cursor of every open file (mock test builds only)");
#endif
