// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_main.c - module entry points, parameters, /dev/gdrdrv and its
 * per-file state.
 *
 * gdrdrv pins NVIDIA GPU memory through the NVIDIA P2P API and maps it
 * write-combined into the process that pinned it.  The ioctl ABI is
 * gdrcopy's gdrdrv 2.x (gdrdrv_ioctl.h).  See gdrdrv.h for the object
 * model and the lock order.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/fs.h>

#include "gdrdrv.h"
#include "gdrdrv_compat.h"

/*
 * Default pinning mode: callback (non-persistent) pins.  With them the
 * NVIDIA driver calls us back when the owner frees the GPU memory, and we
 * revoke every CPU mapping of it before the memory can be handed to
 * anyone else: a later access gets SIGBUS and GET_CB_FLAG reports 1.  A
 * persistent pin is never revoked: after cudaFree the mapping still points
 * at the old pages (which the NVIDIA driver keeps out of circulation until
 * unpin), so a stale user silently reads and writes memory nobody owns any
 * more.  Persistent mode is needed for FORCE_PCIE and on MIG/vGPU setups
 * where callbacks are unsupported; the mode of a file is fixed at open().
 */
bool gdrdrv_use_persistent;
module_param_named(use_persistent_mapping, gdrdrv_use_persistent, bool, 0644);
MODULE_PARM_DESC(use_persistent_mapping,
		 "Pin with nvidia_p2p_get_pages_persistent (never revoked) instead of the free-callback variant; applies to files opened afterwards (default: 0)");

bool gdrdrv_caller_is_owner(const struct gdrdrv_file *f)
{
	/*
	 * tgid alone could be recycled after the opener exits; the group
	 * leader's start time makes the pair unique for the file's lifetime
	 * without holding a reference on the process.
	 */
	return current->tgid == f->owner_tgid &&
	       current->group_leader->start_time == f->owner_start;
}

static int gdrdrv_open(struct inode *inode, struct file *filp)
{
	struct gdrdrv_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;

	gdrdrv_table_init(f);
	f->owner_tgid = current->tgid;
	f->owner_start = current->group_leader->start_time;
	f->persistent = READ_ONCE(gdrdrv_use_persistent);

	/*
	 * A private address_space: VMAs of this file are linked into it by
	 * the mmap core, so unmap_mapping_range() on a pin's offset range
	 * zaps this file's mappings of that pin and nothing else.
	 */
	address_space_init_once(&f->mapping);
	f->mapping.host = inode;
	f->mapping.a_ops = inode->i_mapping->a_ops;
	filp->f_mapping = &f->mapping;
	filp->private_data = f;

	gdrdrv_table_track(f, true);
	atomic64_inc(&gdrdrv_stats.files);
	return nonseekable_open(inode, filp);
}

/*
 * Last reference to the file: no ioctl is running and no VMA exists (each
 * VMA holds a file reference), whichever process drops it.
 */
static int gdrdrv_release(struct inode *inode, struct file *filp)
{
	struct gdrdrv_file *f = filp->private_data;

	gdrdrv_table_track(f, false);
	gdrdrv_pin_destroy_all(f);
	gdrdrv_table_fini(f);
	filp->f_mapping = inode->i_mapping;
	filp->private_data = NULL;
	kfree(f);
	atomic64_dec(&gdrdrv_stats.files);
	return 0;
}

static const struct file_operations gdrdrv_fops = {
	.owner		= THIS_MODULE,
	.open		= gdrdrv_open,
	.release	= gdrdrv_release,
	.unlocked_ioctl	= gdrdrv_ioctl,
	.mmap		= gdrdrv_mmap,
};

/*
 * A misc device: dynamic minor, no static major to collide with (gdrcopy
 * issue #115), and udev creates /dev/gdrdrv with the mode and group set by
 * config/99-gdrdrv.rules.  gdrcopy's scripts get a /proc/devices major of
 * their own (gdrdrv_gdrcopy.c).
 */
static struct miscdevice gdrdrv_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= GDRDRV_NAME,
	.fops	= &gdrdrv_fops,
	.groups	= gdrdrv_attr_groups,
};

static int __init gdrdrv_init(void)
{
	int ret;

	ret = misc_register(&gdrdrv_misc);
	if (ret) {
		pr_err(GDRDRV_NAME ": misc_register failed: %d\n", ret);
		return ret;
	}
	ret = gdrdrv_gdrcopy_init(&gdrdrv_fops);
	if (ret) {
		pr_err(GDRDRV_NAME ": /proc/devices or /proc/driver entry failed: %d\n", ret);
		misc_deregister(&gdrdrv_misc);
		return ret;
	}
	pr_info(GDRDRV_NAME ": ABI %u.%u, %s NVIDIA P2P provider, %s pins by default\n",
		GDRDRV_ABI_MAJOR, GDRDRV_ABI_MINOR, GDRDRV_NV_FLAVOUR_NAME,
		gdrdrv_use_persistent ? "persistent" : "callback");
	return 0;
}

static void __exit gdrdrv_exit(void)
{
	gdrdrv_gdrcopy_exit();
	misc_deregister(&gdrdrv_misc);
	/*
	 * Every file holds a module reference, so nothing can be left here;
	 * say so loudly if the counters disagree rather than crash.
	 */
	if (atomic64_read(&gdrdrv_stats.pins) ||
	    atomic64_read(&gdrdrv_stats.nv_pins) ||
	    atomic64_read(&gdrdrv_stats.mappings) ||
	    atomic64_read(&gdrdrv_stats.files))
		pr_err(GDRDRV_NAME ": unloading with live objects: pins=%lld nv_pins=%lld mappings=%lld files=%lld\n",
		       (long long)atomic64_read(&gdrdrv_stats.pins),
		       (long long)atomic64_read(&gdrdrv_stats.nv_pins),
		       (long long)atomic64_read(&gdrdrv_stats.mappings),
		       (long long)atomic64_read(&gdrdrv_stats.files));
}

module_init(gdrdrv_init);
module_exit(gdrdrv_exit);

MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdrx: CPU mappings of pinned NVIDIA GPU memory (gdrdrv 2.x ABI)");
MODULE_VERSION("2.5");
