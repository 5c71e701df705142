// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_ioctl.c - the ioctl handlers of /dev/gdrdrv.
 *
 * Each handler copies its argument struct in, works without touching user
 * memory, and copies the result out after every lock is dropped (see the
 * lock order in gdrdrv.h).  Commands are matched on their full number, so
 * a wrong direction or size encoding is -ENOTTY like an unknown command.
 */
#include <linux/uaccess.h>
#include <linux/mm.h>

#include "gdrdrv.h"
#include "gdrdrv_compat.h"

static int gdrdrv_copy_handle_out(struct gdrdrv_file *f, void __user *uarg,
				  void *args, size_t len, unsigned long handle)
{
	if (copy_to_user(uarg, args, len)) {
		/* The caller never learnt the handle: do not leak the pin. */
		gdrdrv_pin_destroy(f, handle);
		return -EFAULT;
	}
	return 0;
}

static int gdrdrv_ioc_pin(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_pin_buffer_args a;
	unsigned long handle;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	ret = gdrdrv_pin_create(f, a.addr, a.size, a.p2p_token, a.va_space,
				GDRDRV_PIN_FLAG_DEFAULT, &handle);
	if (ret)
		return ret;
	a.handle = handle;
	return gdrdrv_copy_handle_out(f, uarg, &a, sizeof(a), handle);
}

static int gdrdrv_ioc_pin_v2(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_pin_buffer_v2_args a;
	unsigned long handle;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.pad)
		return -EINVAL;
	ret = gdrdrv_pin_create(f, a.addr, a.size, 0, 0, a.flags, &handle);
	if (ret)
		return ret;
	a.handle = handle;
	return gdrdrv_copy_handle_out(f, uarg, &a, sizeof(a), handle);
}

static int gdrdrv_ioc_unpin(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_unpin_buffer_args a;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.handle >= GDRDRV_HANDLE_LIMIT)
		return -EINVAL;
	return gdrdrv_pin_destroy(f, (unsigned long)a.handle);
}

/* A snapshot of a pin taken under its semaphore. */
struct gdrdrv_pin_info {
	u64 va, size, tm_cycles;
	u32 map_type;
	bool mapped, cb_fired;
};

static int gdrdrv_pin_snapshot(struct gdrdrv_file *f, u64 handle,
			       struct gdrdrv_pin_info *s)
{
	struct gdrdrv_pin *pin;

	if (handle >= GDRDRV_HANDLE_LIMIT)
		return -EINVAL;
	pin = gdrdrv_pin_get(f, (unsigned long)handle);
	if (!pin)
		return -EINVAL;
	down_read(&pin->sem);
	s->va = pin->va;
	s->size = pin->size;
	s->tm_cycles = pin->tm_cycles;
	/* Revoked or released: the VMAs only fault now (gdrcopy says NONE). */
	s->mapped = pin->map_count > 0 && pin->nv_state == GDRDRV_NV_PINNED;
	s->map_type = s->mapped ? pin->map_type : GDRDRV_MAPPING_NONE;
	/* Known only once a fault read a PTE (gdrdrv_mmap.c). */
	if (s->map_type != GDRDRV_MAPPING_NONE && READ_ONCE(pin->type_lost))
		s->map_type = GDRDRV_MAPPING_DEVICE;
	s->cb_fired = pin->cb_fired;
	up_read(&pin->sem);
	gdrdrv_pin_put(pin);
	return 0;
}

/*
 * The ioctls that describe one pin all start the same way: the handle is
 * the first field of their argument, and the answer comes from a snapshot
 * taken under the pin's lock.
 */
static int gdrdrv_snapshot_from_user(struct gdrdrv_file *f, void __user *uarg,
				     gdrdrv_handle_t *handle,
				     struct gdrdrv_pin_info *s)
{
	if (copy_from_user(handle, uarg, sizeof(*handle)))
		return -EFAULT;
	return gdrdrv_pin_snapshot(f, *handle, s);
}

/* GET_INFO and GET_INFO_V2 share their leading fields (same names, same
 * layout up to tm_cycles) but are distinct structs in the ABI. */
#define GDRDRV_FILL_INFO_COMMON(a, h, s) do {			\
		(a)->handle = (h);				\
		(a)->va = (s)->va;				\
		(a)->mapped_size = (s)->size;			\
		(a)->page_size = GDRDRV_GPU_PAGE_SIZE;		\
		(a)->tsc_khz = gdrdrv_tsc_khz();		\
		(a)->tm_cycles = (s)->tm_cycles;		\
	} while (0)

static int gdrdrv_ioc_get_cb_flag(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_get_cb_flag_args a;
	struct gdrdrv_pin_info s;
	gdrdrv_handle_t handle;
	int ret;

	ret = gdrdrv_snapshot_from_user(f, uarg, &handle, &s);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));	/* clears the implicit padding too */
	a.handle = handle;
	a.flag = s.cb_fired;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_get_info(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_get_info_args a;
	struct gdrdrv_pin_info s;
	gdrdrv_handle_t handle;
	int ret;

	ret = gdrdrv_snapshot_from_user(f, uarg, &handle, &s);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));	/* clears the implicit padding too */
	GDRDRV_FILL_INFO_COMMON(&a, handle, &s);
	a.mapped = s.mapped;
	a.wc_mapping = s.map_type == GDRDRV_MAPPING_WC;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_get_info_v2(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_get_info_v2_args a;
	struct gdrdrv_pin_info s;
	gdrdrv_handle_t handle;
	int ret;

	ret = gdrdrv_snapshot_from_user(f, uarg, &handle, &s);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));	/* clears the implicit padding too */
	GDRDRV_FILL_INFO_COMMON(&a, handle, &s);
	a.mapping_type = s.map_type;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_get_attr(struct gdrdrv_file *f, void __user *uarg)
{
	struct gdrdrv_get_attr_args a;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	switch (a.attr) {
	case GDRDRV_ATTR_USE_PERSISTENT_MAPPING:
		a.val = f->persistent;
		break;
	case GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE:
		a.val = gdrdrv_force_pcie_supported(f);
		break;
	default:
		return -EINVAL;
	}
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_req_mapping_type(struct gdrdrv_file *f,
				       void __user *uarg)
{
	struct gdrdrv_req_mapping_type_args a;
	struct gdrdrv_pin *pin;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.mapping_type > GDRDRV_MAPPING_MAX || a.handle >= GDRDRV_HANDLE_LIMIT)
		return -EINVAL;
	pin = gdrdrv_pin_get(f, (unsigned long)a.handle);
	if (!pin)
		return -EINVAL;
	down_write(&pin->sem);
	if (pin->map_count)
		ret = -EBUSY;		/* the type is fixed while mapped */
	else if (!gdrdrv_mapping_type_supported(pin, a.mapping_type))
		ret = -EOPNOTSUPP;
	else
		pin->req_type = a.mapping_type;
	up_write(&pin->sem);
	gdrdrv_pin_put(pin);
	return ret;
}

static int gdrdrv_ioc_get_version(void __user *uarg)
{
	struct gdrdrv_get_version_args a = {
		.driver_version = GDRDRV_ABI_VERSION,
		.min_lib_version = GDRDRV_MIN_LIB_VERSION,
	};

	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long gdrdrv_ioctl_dispatch(struct gdrdrv_file *f, unsigned int cmd,
				  void __user *uarg)
{
	switch (cmd) {
	case GDRDRV_IOC_PIN_BUFFER:
		return gdrdrv_ioc_pin(f, uarg);
	case GDRDRV_IOC_PIN_BUFFER_V2:
		return gdrdrv_ioc_pin_v2(f, uarg);
	case GDRDRV_IOC_UNPIN_BUFFER:
		return gdrdrv_ioc_unpin(f, uarg);
	case GDRDRV_IOC_GET_CB_FLAG:
		return gdrdrv_ioc_get_cb_flag(f, uarg);
	case GDRDRV_IOC_GET_INFO:
		return gdrdrv_ioc_get_info(f, uarg);
	case GDRDRV_IOC_GET_INFO_V2:
		return gdrdrv_ioc_get_info_v2(f, uarg);
	case GDRDRV_IOC_GET_ATTR:
		return gdrdrv_ioc_get_attr(f, uarg);
	case GDRDRV_IOC_REQ_MAPPING_TYPE:
		return gdrdrv_ioc_req_mapping_type(f, uarg);
	case GDRDRV_IOC_GET_VERSION:
		return gdrdrv_ioc_get_version(uarg);
	default:
		return -ENOTTY;
	}
}

long gdrdrv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct gdrdrv_file *f = filp->private_data;

	/* The pins and mappings of a file belong to the process that opened it. */
	if (!gdrdrv_caller_is_owner(f))
		return gdrdrv_count_error(-EACCES);
	return gdrdrv_count_error(gdrdrv_ioctl_dispatch(f, cmd,
							(void __user *)arg));
}
