// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_stats.c - counters, readable in /sys/class/misc/gdrdrv/stats/.
 *
 * Live counters (files, pins, nv_pins, pinned_bytes, mappings) return to
 * zero when every file is closed; the others are running totals.  The
 * attributes are printed with scnprintf(), not sysfs_emit(): the latter is
 * GPL-only, which a module linked against the proprietary NVIDIA driver
 * may not use (see gdrdrv_compat.h).
 */
#include <linux/device.h>
#include <linux/kernel.h>

#include "gdrdrv.h"

struct gdrdrv_stats gdrdrv_stats;

#define GDRDRV_STAT_ATTR(name)						\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return scnprintf(buf, PAGE_SIZE, "%lld\n",			\
			 (long long)atomic64_read(&gdrdrv_stats.name));	\
}									\
static DEVICE_ATTR_RO(name)

GDRDRV_STAT_ATTR(files);
GDRDRV_STAT_ATTR(pins);
GDRDRV_STAT_ATTR(pinned_bytes);
GDRDRV_STAT_ATTR(nv_pins);
GDRDRV_STAT_ATTR(mappings);
GDRDRV_STAT_ATTR(invalidations);
GDRDRV_STAT_ATTR(errors);
GDRDRV_STAT_ATTR(pins_total);
GDRDRV_STAT_ATTR(faulted_pages);

static struct attribute *gdrdrv_stat_attrs[] = {
	&dev_attr_files.attr,
	&dev_attr_pins.attr,
	&dev_attr_pinned_bytes.attr,
	&dev_attr_nv_pins.attr,
	&dev_attr_mappings.attr,
	&dev_attr_invalidations.attr,
	&dev_attr_errors.attr,
	&dev_attr_pins_total.attr,
	&dev_attr_faulted_pages.attr,
	NULL,
};

static const struct attribute_group gdrdrv_stat_group = {
	.name	= "stats",
	.attrs	= gdrdrv_stat_attrs,
};

const struct attribute_group *gdrdrv_attr_groups[] = {
	&gdrdrv_stat_group,
	NULL,
};
