// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * mock_ctl.c - /dev/mock_nvp2p, the control device through which the
 * gdrdrv tests play the GPU driver's user: allocate and free "GPU
 * memory", inject failures, hold callbacks, read counters
 * (mock_nvp2p_ioctl.h).  The module and its nvidia_p2p_* API are in
 * mock_p2p.c.
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "mock_internal.h"

/* A live, bound allocation of @tgid overlapping [va, va + size). */
static bool mock_va_overlaps(const struct mock_alloc *o, pid_t tgid, u64 va,
			     u64 size)
{
	return !o->freed && o->va && o->tgid == tgid && va < o->va + o->size &&
	       o->va < va + size;
}

/* Whether any allocation overlaps as above.  Caller holds mock_lock. */
static bool mock_va_taken_locked(pid_t tgid, u64 va, u64 size)
{
	struct mock_alloc *o;

	list_for_each_entry(o, &mock_allocs, node)
		if (mock_va_overlaps(o, tgid, va, size))
			return true;
	return false;
}

/* A new allocation of the calling process, not yet on mock_allocs. */
static struct mock_alloc *mock_alloc_new(u64 va, u64 size)
{
	struct mock_alloc *a = kzalloc(sizeof(*a), GFP_KERNEL);

	if (a) {
		a->tgid = current->tgid;
		a->va = va;
		a->size = size;
	}
	return a;
}

static int mock_ioc_alloc(void __user *uarg)
{
	struct mock_alloc_args args;
	struct mock_alloc *a, *o;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!args.va || !args.size || args.pad ||
	    (args.flags & ~(MOCK_ALLOC_SCATTER | MOCK_ALLOC_ALIAS |
			    MOCK_ALLOC_CACHEABLE)) ||
	    ((args.va | args.size | args.bar_off) & (MOCK_NVP2P_CHUNK - 1)) ||
	    args.va + args.size < args.va || args.bar_off >= mock_bar_size)
		return -EINVAL;
	if (!(args.flags & MOCK_ALLOC_ALIAS) &&
	    args.size > mock_bar_size - args.bar_off)
		return -EINVAL;
	/* An alias claims the whole BAR (see mock_bar_span()). */
	if ((args.flags & MOCK_ALLOC_ALIAS) && args.bar_off)
		return -EINVAL;
	a = mock_alloc_new(args.va, args.size);
	if (!a)
		return -ENOMEM;
	a->bar_off = args.bar_off;
	a->flags = args.flags;

	mutex_lock(&mock_lock);
	list_for_each_entry(o, &mock_allocs, node) {
		/* BAR memory held by anyone, freed or not, is not reusable. */
		if (args.bar_off < o->bar_off + mock_bar_span(o) &&
		    o->bar_off < args.bar_off + mock_bar_span(a)) {
			ret = -EBUSY;
			break;
		}
		if (mock_va_overlaps(o, a->tgid, args.va, args.size)) {
			ret = -EEXIST;
			break;
		}
	}
	if (!ret) {
		list_add_tail(&a->node, &mock_allocs);
		a = NULL;
	}
	mutex_unlock(&mock_lock);
	kfree(a);
	return ret;
}

static int mock_ioc_free(void __user *uarg)
{
	struct mock_free_args args;
	struct mock_alloc *a, *found = NULL;
	pid_t tgid;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.pad || args.tgid < 0)
		return -EINVAL;
	tgid = args.tgid ? args.tgid : current->tgid;
	mutex_lock(&mock_lock);
	list_for_each_entry(a, &mock_allocs, node)
		if (!a->freed && a->tgid == tgid && a->va == args.va)
			found = a;
	if (found)
		mock_free_locked(found);
	mutex_unlock(&mock_lock);
	return found ? 0 : -EINVAL;
}

/* The lowest 64 KiB-aligned BAR offset where @size bytes are free. */
static int mock_bar_fit_locked(u64 size, u64 *off)
{
	struct mock_alloc *o;
	u64 start = 0;
	bool moved;

	do {
		moved = false;
		list_for_each_entry(o, &mock_allocs, node) {
			if (start < o->bar_off + mock_bar_span(o) &&
			    o->bar_off < start + size) {
				start = o->bar_off + mock_bar_span(o);
				moved = true;
			}
		}
		if (start > mock_bar_size || size > mock_bar_size - start)
			return -ENOSPC;
	} while (moved);
	*off = start;
	return 0;
}

static int mock_ioc_carve(struct file *filp, void __user *uarg)
{
	struct mock_carve_args args;
	struct mock_alloc *a;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!args.size || ((args.va | args.size) & (MOCK_NVP2P_CHUNK - 1)) ||
	    args.va + args.size < args.va || args.size > mock_bar_size)
		return -EINVAL;
	a = mock_alloc_new(args.va, args.size);
	if (!a)
		return -ENOMEM;
	a->carved_by = filp;

	mutex_lock(&mock_lock);
	if (args.va && mock_va_taken_locked(a->tgid, args.va, args.size))
		ret = -EEXIST;
	if (!ret)
		ret = mock_bar_fit_locked(args.size, &a->bar_off);
	if (!ret) {
		args.bar_off = a->bar_off;
		list_add_tail(&a->node, &mock_allocs);
	}
	mutex_unlock(&mock_lock);
	if (ret) {
		kfree(a);
		return ret;
	}
	/* The allocation stays even if the caller cannot read its offset:
	 * the process frees it by closing the file. */
	return copy_to_user(uarg, &args, sizeof(args)) ? -EFAULT : 0;
}

/* The caller's live allocation starting at BAR offset @off. */
static struct mock_alloc *mock_find_bar_locked(u64 off)
{
	struct mock_alloc *a;

	list_for_each_entry(a, &mock_allocs, node)
		if (!a->freed && a->tgid == current->tgid && a->bar_off == off)
			return a;
	return NULL;
}

static int mock_ioc_bind(void __user *uarg)
{
	struct mock_bar_args args;
	struct mock_alloc *a;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!args.va || (args.va & (MOCK_NVP2P_CHUNK - 1)))
		return -EINVAL;
	mutex_lock(&mock_lock);
	a = mock_find_bar_locked(args.bar_off);
	if (!a || a->va || args.va + a->size < args.va) {
		ret = -EINVAL;
		goto out;
	}
	/* @a itself is not bound yet, so it never overlaps. */
	if (mock_va_taken_locked(a->tgid, args.va, a->size))
		ret = -EEXIST;
	else
		a->va = args.va;
out:
	mutex_unlock(&mock_lock);
	return ret;
}

static int mock_ioc_free_bar(void __user *uarg)
{
	struct mock_bar_args args;
	struct mock_alloc *a;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.va)
		return -EINVAL;
	mutex_lock(&mock_lock);
	a = mock_find_bar_locked(args.bar_off);
	if (a)
		mock_free_locked(a);
	mutex_unlock(&mock_lock);
	return a ? 0 : -EINVAL;
}

/*
 * Every close of the file, including the one at exit: the closing process
 * frees what it carved through this file (running the free callbacks), as
 * the GPU driver does when a process dies with memory allocated.
 */
static int mock_flush(struct file *filp, fl_owner_t id)
{
	struct mock_alloc *a, *tmp;

	mutex_lock(&mock_lock);
	list_for_each_entry_safe(a, tmp, &mock_allocs, node)
		if (!a->freed && a->carved_by == filp &&
		    a->tgid == current->tgid)
			mock_free_locked(a);
	mutex_unlock(&mock_lock);
	return 0;
}

static int mock_ioc_config(void __user *uarg)
{
	struct mock_config_args args;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.cb_delay_ms > 5000 || args.fail_next_get > 0 ||
	    args.fail_next_get < -MAX_ERRNO || args.free_in_next_get > 1 ||
	    args.fail_next_put > 0 || args.fail_next_put < -MAX_ERRNO ||
	    args.cb_hold > 1 || args.pad)
		return -EINVAL;
	mutex_lock(&mock_lock);
	mock_cb_delay_ms = args.cb_delay_ms;
	mock_fail_next_get = args.fail_next_get;
	mock_free_in_next_get = args.free_in_next_get;
	mock_fail_next_put = args.fail_next_put;
	WRITE_ONCE(mock_cb_hold, args.cb_hold);
	mutex_unlock(&mock_lock);
	return 0;
}

static int mock_ioc_stats(void __user *uarg)
{
	struct mock_stats_args s;
	struct mock_alloc *a;

	mutex_lock(&mock_lock);
	s = mock_stats;
	s.allocs = 0;
	s.zombies = 0;
	list_for_each_entry(a, &mock_allocs, node) {
		if (a->freed)
			s.zombies++;
		else
			s.allocs++;
	}
	mutex_unlock(&mock_lock);
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

static long mock_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case MOCK_IOC_ALLOC:
		return mock_ioc_alloc(uarg);
	case MOCK_IOC_FREE:
		return mock_ioc_free(uarg);
	case MOCK_IOC_CONFIG:
		return mock_ioc_config(uarg);
	case MOCK_IOC_INFO: {
		struct mock_info_args info = {
			.bar_phys = mock_bar_phys,
			.bar_size = mock_bar_size,
		};

		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	}
	case MOCK_IOC_STATS:
		return mock_ioc_stats(uarg);
	case MOCK_IOC_CARVE:
		return mock_ioc_carve(filp, uarg);
	case MOCK_IOC_BIND:
		return mock_ioc_bind(uarg);
	case MOCK_IOC_FREE_BAR:
		return mock_ioc_free_bar(uarg);
	case MOCK_IOC_PROBE: {
		struct mock_probe_args p = {
			.cb_held = atomic64_read(&mock_cb_held),
			.puts_entered = atomic64_read(&mock_puts_entered),
		};

		return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
	}
	case MOCK_IOC_CB_RELEASE:
		WRITE_ONCE(mock_cb_hold, false);
		wake_up_all(&mock_cb_wq);
		return 0;
	default:
		return -ENOTTY;
	}
}

static const struct file_operations mock_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= mock_ioctl,
	.flush		= mock_flush,
};

static struct miscdevice mock_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= MOCK_NAME,
	.fops	= &mock_fops,
};

int mock_ctl_register(void)
{
	return misc_register(&mock_misc);
}

void mock_ctl_unregister(void)
{
	misc_deregister(&mock_misc);
}
