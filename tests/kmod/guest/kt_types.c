// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_types.c - the memory type of a mapping, as GET_INFO reports it: WC
 * downgraded by PAT, and the coherent (CACHING) path of page tables
 * flagged CPU-cacheable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_wc_conflict(void);
int kt_sc_caching(void);

/*
 * The BAR range is mapped uncached through sysfs resource2 first: PAT then
 * silently grants gdrdrv's WC mapping UC- too.  Once touched, GET_INFO
 * must report it as DEVICE (uncached), not WC.
 */
int kt_sc_wc_conflict(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 52 << 20;
	struct gdrdrv_get_info_v2_args info;
	struct gdrdrv_get_info_args v1;
	char path[sizeof(kt.bar_path)];
	volatile uint32_t *map;
	void *uc;
	uint64_t h;
	int fd = kt_open(), bfd;

	snprintf(path, sizeof(path), "%.*s", (int)(strlen(kt.bar_path) - 3), kt.bar_path);
	bfd = open(path, O_RDWR | O_CLOEXEC);
	KT_CHECK(fd >= 0 && bfd >= 0, "open %s: %s", path, strerror(errno));
	uc = mmap(NULL, kt.bar_size, PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0);
	KT_CHECK(uc != MAP_FAILED, "UC- mapping of the BAR: %s", strerror(errno));
	if (kt_alloc_pin_map(fd, va, len, off, &h, &map))
		return -1;
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_WC, "before a fault: %u", info.mapping_type);
	kt_fill(map, len, 41);
	KT_CHECK(kt_verify((volatile uint32_t *)uc + off / 4, len, 41) < 0, "alias");
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_DEVICE,
		 "a UC- mapping reported as type %u", info.mapping_type);
	v1 = (struct gdrdrv_get_info_args){ .handle = h };
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_GET_INFO, &v1));
	KT_CHECK(v1.mapped && !v1.wc_mapping, "GET_INFO: mapped %u wc %u", v1.mapped,
		 v1.wc_mapping);
	KT_OK(munmap((void *)map, len));
	KT_OK(munmap(uc, kt.bar_size));
	close(bfd);
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	return 0;
}

/*
 * A page table flagged CPU-cacheable (a coherent platform): the default
 * mapping type is CACHING and REQ_MAPPING_TYPE accepts it (WC too); no
 * WC reservation is made; data aliases the BAR.  On x86 an io range
 * without a WB reservation is UC- whatever was asked, so once touched
 * the mapping reads as DEVICE.
 */
int kt_sc_caching(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 56 << 20;
	struct gdrdrv_req_mapping_type_args req;
	struct gdrdrv_get_info_v2_args info;
	volatile uint32_t *bar = kt_bar_map(), *map;
	uint64_t h;
	int fd = kt_open();

	KT_CHECK(fd >= 0 && bar, "open");
	KT_OK(kt_alloc(va, len, off, MOCK_ALLOC_CACHEABLE));
	KT_OK(kt_pin(fd, va, len, &h));
	req = (struct gdrdrv_req_mapping_type_args){ .handle = h,
		.mapping_type = GDRDRV_MAPPING_CACHING };
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req));
	req.mapping_type = GDRDRV_MAPPING_DEVICE;
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req) == -EOPNOTSUPP, "device");
	req.mapping_type = GDRDRV_MAPPING_NONE;	/* back to the default */
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req));
	map = kt_map(fd, h, len);
	KT_CHECK(map, "mmap: %s", strerror(errno));
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_CACHING, "default type %u",
		 info.mapping_type);
	kt_fill(map, len, 51);
	KT_CHECK(kt_verify(bar + off / 4, len, 51) < 0, "alias");
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_DEVICE, "touched: type %u",
		 info.mapping_type);
	KT_OK(munmap((void *)map, len));
	/* WC stays available on such a pin. */
	req.mapping_type = GDRDRV_MAPPING_WC;
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req));
	map = kt_map(fd, h, len);
	KT_CHECK(map, "WC mmap: %s", strerror(errno));
	kt_fill(map, len, 52);
	KT_CHECK(kt_verify(bar + off / 4, len, 52) < 0, "WC alias");
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_WC, "WC type %u", info.mapping_type);
	KT_OK(munmap((void *)map, len));
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}
