// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_pin.c - the per-file pin table, handle allocation, pinning,
 * unpinning and the NVIDIA free callback.
 *
 * Locking is described in gdrdrv.h.  The protocol between unpin and the
 * free callback is the delicate part:
 *   - whoever first moves pin->nv_state away from PINNED (under pin->sem)
 *     owns the page table;
 *   - unpin moves it to RELEASING, drops pin->sem and only then calls
 *     put_pages, which waits for a callback that is already running; that
 *     callback sees RELEASING and does nothing;
 *   - the callback moves it to REVOKED, zaps the CPU mappings, hands the
 *     page table back and drops the NVIDIA reference itself; unpin then
 *     has nothing to put;
 *   - a put_pages that fails without a callback having run moves it to
 *     ORPHANED: the registration is still the driver's, so its reference
 *     and the page table wait for the callback (gdrdrv_pin_orphan()).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/timex.h>
#include <linux/overflow.h>

#include "gdrdrv.h"
#include "gdrdrv_compat.h"

void gdrdrv_pin_hold(struct gdrdrv_pin *pin)
{
	refcount_inc(&pin->ref);
}

void gdrdrv_pin_put(struct gdrdrv_pin *pin)
{
	if (!refcount_dec_and_test(&pin->ref))
		return;
	/* Runs are released with the pages, always before the last put. */
	WARN_ON_ONCE(pin->nr_runs);
	kfree(pin);
}

bool gdrdrv_force_pcie_supported(const struct gdrdrv_file *f)
{
	return f->persistent && GDRDRV_NV_FORCE_BAR1 != 0;
}

static bool gdrdrv_page_table_ok(const struct gdrdrv_pin *pin,
				 const struct nvidia_p2p_page_table *pt)
{
	u32 i;

	if (!NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(pt)) {
		pr_err_ratelimited(GDRDRV_NAME ": page table version 0x%x unsupported\n",
				   pt->version);
		return false;
	}
	/* Mapping and handle arithmetic assume 64 KiB GPU pages. */
	if (pt->page_size != NVIDIA_P2P_PAGE_SIZE_64KB ||
	    (u64)pt->entries << GDRDRV_GPU_PAGE_SHIFT != pin->size) {
		pr_err_ratelimited(GDRDRV_NAME ": page table of %u pages of type %u for %llu bytes\n",
				   pt->entries, pt->page_size, pin->size);
		return false;
	}
	for (i = 0; i < pt->entries; i++) {
		if (!pt->pages[i] ||
		    pt->pages[i]->physical_address & ~GDRDRV_GPU_PAGE_MASK)
			return false;
		/* 16M entries for a 1 TiB pin, under pin->sem (an rwsem: may
		 * sleep); a free callback waiting on it must not wait long */
		if (!(i & 4095))
			cond_resched();
	}
	return true;
}

/*
 * put_pages(@pt) failed with @err.  Unless the free callback already ran
 * during it (the registration is then gone, whatever put_pages said), the
 * driver still holds the registration and will call us back some day: the
 * page table, the registration's pin reference and a module reference
 * (the callback is code of this module) are handed to that callback,
 * which drops each exactly once.  Returns whether the pin was orphaned.
 */
static bool gdrdrv_pin_orphan(struct gdrdrv_pin *pin,
			      struct nvidia_p2p_page_table *pt, int err)
{
	bool orphan;

	down_write(&pin->sem);
	orphan = !pin->cb_in_release;
	if (orphan) {
		pin->page_table = pt;
		pin->nv_state = GDRDRV_NV_ORPHANED;
		__module_get(THIS_MODULE);
	}
	up_write(&pin->sem);
	pr_err_ratelimited(GDRDRV_NAME ": put_pages(va 0x%llx) failed: %d; %s\n",
			   pin->va, err, orphan ? "the free callback will release the pin" :
			   "the free callback already ran");
	return orphan;
}

/*
 * Give the pages back to the NVIDIA driver unless the free callback already
 * took them.  Zaps the CPU mappings first.  No lock held on entry.
 */
static void gdrdrv_pin_release_pages(struct gdrdrv_pin *pin)
{
	struct nvidia_p2p_page_table *pt = NULL;
	int ret;

	down_write(&pin->sem);
	gdrdrv_pin_revoke_cpu_locked(pin);
	if (pin->nv_state == GDRDRV_NV_PINNED) {
		pt = pin->page_table;
		pin->page_table = NULL;
		pin->nv_state = GDRDRV_NV_RELEASING;
	}
	up_write(&pin->sem);
	if (!pt)
		return;

	/* May wait for a free callback in flight; we hold no lock it takes. */
	if (pin->persistent)
		ret = nvidia_p2p_put_pages_persistent(pin->va, pt, 0);
	else
		ret = nvidia_p2p_put_pages(pin->p2p_token, pin->va_space,
					   pin->va, pt);
	if (ret && !pin->persistent && gdrdrv_pin_orphan(pin, pt, ret))
		return;
	/* Nothing would ever release a persistent pin: it is gone anyway. */
	if (ret && pin->persistent)
		pr_err_ratelimited(GDRDRV_NAME ": put_pages_persistent(va 0x%llx) failed: %d\n",
				   pin->va, ret);
	atomic64_dec(&gdrdrv_stats.nv_pins);
	atomic64_sub(pin->size, &gdrdrv_stats.pinned_bytes);
	gdrdrv_pin_put(pin);	/* the NVIDIA registration's reference */
}

/*
 * Called by the NVIDIA driver, with its own locks held, when the memory
 * under a callback pin is freed.  Takes only pin->sem (see gdrdrv.h).
 */
static void gdrdrv_free_callback(void *data)
{
	struct gdrdrv_pin *pin = data;
	bool drop = true, orphan = false;

	gdrdrv_info("free callback for va 0x%llx\n", pin->va);
	down_write(&pin->sem);
	switch (pin->nv_state) {
	case GDRDRV_NV_RELEASING:
		/* Unpin owns the page table and waits in put_pages for us. */
		pin->cb_in_release = true;
		drop = false;
		break;
	case GDRDRV_NV_ORPHANED:
		/* put_pages failed and left the release to us. */
		nvidia_p2p_free_page_table(pin->page_table);
		pin->page_table = NULL;
		atomic64_dec(&gdrdrv_stats.nv_pins);
		atomic64_sub(pin->size, &gdrdrv_stats.pinned_bytes);
		pin->nv_state = GDRDRV_NV_REVOKED;
		orphan = true;
		break;
	default:
		/* Nothing may touch the pages from here on. */
		gdrdrv_pin_revoke_cpu_locked(pin);
		/*
		 * In NONE the callback fired before get_pages returned to us:
		 * that page table is the driver's again and is never stored.
		 */
		if (pin->nv_state == GDRDRV_NV_PINNED) {
			nvidia_p2p_free_page_table(pin->page_table);
			pin->page_table = NULL;
			atomic64_dec(&gdrdrv_stats.nv_pins);
			atomic64_sub(pin->size, &gdrdrv_stats.pinned_bytes);
		}
		pin->nv_state = GDRDRV_NV_REVOKED;
		pin->cb_fired = true;
		atomic64_inc(&gdrdrv_stats.invalidations);
	}
	up_write(&pin->sem);
	if (drop)
		gdrdrv_pin_put(pin);	/* the NVIDIA registration's reference */
	/*
	 * Last: the reference taken by gdrdrv_pin_orphan().  Only the return
	 * into the driver runs after it; rmmod frees the module's text after
	 * an RCU grace period, which that return does not wait for, a window
	 * of a few instructions the kernel cannot close for a module callback.
	 */
	if (orphan)
		module_put(THIS_MODULE);
}

static int gdrdrv_pin_check_args(const struct gdrdrv_file *f, u64 addr,
				 u64 size, u64 p2p_token, u32 va_space,
				 u32 pin_flags, u64 *va, u64 *len)
{
	u64 end;

	if (!addr || !size)
		return -EINVAL;
	if (check_add_overflow(addr, size, &end) ||
	    end > U64_MAX - (GDRDRV_GPU_PAGE_SIZE - 1))
		return -EINVAL;
	*va = addr & GDRDRV_GPU_PAGE_MASK;
	*len = round_up(end, GDRDRV_GPU_PAGE_SIZE) - *va;
	if (*len > GDRDRV_MAX_PIN_BYTES)
		return -EINVAL;
	if (pin_flags & ~GDRDRV_PIN_FLAGS_ALL)
		return -EINVAL;
	if (f->persistent) {
		/* Tokens are a callback-API concept (deprecated by NVIDIA). */
		if (p2p_token || va_space)
			return -EINVAL;
		if ((pin_flags & GDRDRV_PIN_FLAG_FORCE_PCIE) &&
		    !gdrdrv_force_pcie_supported(f))
			return -EINVAL;
	} else if (pin_flags) {
		return -EINVAL;
	}
	return 0;
}

int gdrdrv_pin_create(struct gdrdrv_file *f, u64 addr, u64 size,
		      u64 p2p_token, u32 va_space, u32 pin_flags,
		      unsigned long *handle)
{
	struct nvidia_p2p_page_table *pt = NULL;
	struct gdrdrv_pin *pin;
	cycles_t t0;
	u64 va, len;
	bool bad_table;
	int ret;

	ret = gdrdrv_pin_check_args(f, addr, size, p2p_token, va_space,
				    pin_flags, &va, &len);
	if (ret)
		return ret;

	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return -ENOMEM;
	refcount_set(&pin->ref, 1);	/* the table's reference */
	init_rwsem(&pin->sem);
	INIT_LIST_HEAD(&pin->file_node);
	pin->file = f;
	pin->va = va;
	pin->size = len;
	pin->va_offset = (u32)(addr - va);
	pin->npages = DIV_ROUND_UP(len, PAGE_SIZE);
	pin->p2p_token = p2p_token;
	pin->va_space = va_space;
	pin->persistent = f->persistent;
	if (pin_flags & GDRDRV_PIN_FLAG_FORCE_PCIE)
		pin->nv_flags = GDRDRV_NV_FORCE_BAR1;
	pin->nv_state = GDRDRV_NV_NONE;

	/* Reserve the handle range now; lookups ignore it until published. */
	ret = gdrdrv_table_insert(f, pin);
	if (ret) {
		kfree(pin);
		return ret;
	}

	gdrdrv_pin_hold(pin);	/* the NVIDIA registration's reference */
	t0 = get_cycles();
	if (pin->persistent)
		ret = nvidia_p2p_get_pages_persistent(va, len, &pt,
						      pin->nv_flags);
	else
		ret = nvidia_p2p_get_pages(p2p_token, va_space, va, len, &pt,
					   gdrdrv_free_callback, pin);
	pin->tm_cycles = (u64)(get_cycles() - t0);
	if (ret) {
		gdrdrv_pin_put(pin);	/* no callback can come now */
		goto out_remove;
	}

	down_write(&pin->sem);
	if (pin->nv_state == GDRDRV_NV_NONE) {
		pin->page_table = pt;
		pin->nv_state = GDRDRV_NV_PINNED;
		atomic64_inc(&gdrdrv_stats.nv_pins);
		atomic64_add(len, &gdrdrv_stats.pinned_bytes);
	}
	bad_table = pin->nv_state == GDRDRV_NV_PINNED &&
		    !gdrdrv_page_table_ok(pin, pt);
	up_write(&pin->sem);
	if (bad_table) {
		ret = -EINVAL;
		gdrdrv_pin_release_pages(pin);
		goto out_remove;
	}

	gdrdrv_table_publish(pin);
	*handle = pin->handle;
	gdrdrv_info("pinned va 0x%llx size 0x%llx (%s) as handle 0x%lx\n", va, len,
		    pin->persistent ? "persistent" : "callback", pin->handle);
	return 0;

out_remove:
	gdrdrv_table_remove(pin);
	gdrdrv_pin_put(pin);
	return ret;
}

int gdrdrv_pin_destroy(struct gdrdrv_file *f, unsigned long handle)
{
	struct gdrdrv_pin *pin = gdrdrv_table_take(f, handle, false);

	if (!pin)
		return -EINVAL;
	gdrdrv_info("unpinning handle 0x%lx (va 0x%llx)\n", handle, pin->va);
	gdrdrv_pin_release_pages(pin);
	gdrdrv_pin_put(pin);	/* the table's reference */
	return 0;
}

/* From release(): no ioctl can be running on @f any more. */
void gdrdrv_pin_destroy_all(struct gdrdrv_file *f)
{
	struct gdrdrv_pin *pin;

	while ((pin = gdrdrv_table_take(f, 0, true))) {
		gdrdrv_pin_release_pages(pin);
		gdrdrv_pin_put(pin);
		cond_resched();
	}
}
