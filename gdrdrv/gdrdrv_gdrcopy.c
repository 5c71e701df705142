// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_gdrcopy.c - what gdrcopy's tools and scripts expect of a gdrdrv
 * beyond the ioctl ABI:
 *   - a "gdrdrv" line in /proc/devices: gdrcopy's insmod.sh and init
 *     scripts read the major there, delete /dev/gdrdrv and mknod
 *     "c MAJOR 0".  The misc device has no such line, so a dynamic
 *     character major with the same file operations is registered too,
 *     and the node they make works.  udev keeps using the misc device.
 *   - /proc/driver/gdrdrv/params, listing the parameters;
 *   - the dbg_enabled and info_enabled parameters (event logging).
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

#include "gdrdrv.h"

bool gdrdrv_dbg_enabled;
module_param_named(dbg_enabled, gdrdrv_dbg_enabled, bool, 0644);
MODULE_PARM_DESC(dbg_enabled, "Log every pin, mapping, fault window and callback (default: 0)");

bool gdrdrv_info_enabled;
module_param_named(info_enabled, gdrdrv_info_enabled, bool, 0644);
MODULE_PARM_DESC(info_enabled, "Log pins, unpins and callbacks (default: 0)");

static int gdrdrv_major;
static struct proc_dir_entry *gdrdrv_proc_dir;

static int gdrdrv_params_show(struct seq_file *m, void *v)
{
	seq_printf(m, "dbg_enabled=%d\n", READ_ONCE(gdrdrv_dbg_enabled));
	seq_printf(m, "info_enabled=%d\n", READ_ONCE(gdrdrv_info_enabled));
	seq_printf(m, "use_persistent_mapping=%d\n", READ_ONCE(gdrdrv_use_persistent));
	return 0;
}

int gdrdrv_gdrcopy_init(const struct file_operations *fops)
{
	int major = register_chrdev(0, GDRDRV_NAME, fops);

	if (major < 0)
		return major;
	gdrdrv_major = major;
	gdrdrv_proc_dir = proc_mkdir("driver/" GDRDRV_NAME, NULL);
	if (!gdrdrv_proc_dir ||
	    !proc_create_single("params", 0444, gdrdrv_proc_dir,
				gdrdrv_params_show)) {
		gdrdrv_gdrcopy_exit();
		return -ENOMEM;
	}
	return 0;
}

void gdrdrv_gdrcopy_exit(void)
{
	if (gdrdrv_proc_dir)
		proc_remove(gdrdrv_proc_dir);
	gdrdrv_proc_dir = NULL;
	if (gdrdrv_major > 0)
		unregister_chrdev(gdrdrv_major, GDRDRV_NAME);
	gdrdrv_major = 0;
}
