// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_basic.c - version handshake, pin/map/copy through the mapping and the
 * BAR, write-combining in PAT, and handle allocation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_version(void);
int kt_sc_pin_map_copy(void);
int kt_sc_wc_pat(void);
int kt_sc_handles(void);

int kt_sc_version(void)
{
	struct gdrdrv_get_version_args v;
	struct gdrdrv_get_attr_args a;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open: %d", fd);
	memset(&v, 0xff, sizeof(v));
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_GET_VERSION, &v));
	KT_CHECK(v.driver_version == 0x00020005, "driver 0x%x", v.driver_version);
	KT_CHECK(v.min_lib_version == 0x00020000, "min lib 0x%x", v.min_lib_version);

	a = (struct gdrdrv_get_attr_args){ .attr = GDRDRV_ATTR_USE_PERSISTENT_MAPPING };
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_GET_ATTR, &a));
	KT_CHECK(a.val == kt.persistent, "persistent attr %u", a.val);
	a = (struct gdrdrv_get_attr_args){ .attr = GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE };
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_GET_ATTR, &a));
	KT_CHECK(a.val == kt.persistent, "force-pcie attr %u", a.val);
	for (uint32_t bad = 0; bad < 8; bad++) {
		if (bad == 1 || bad == 2)
			continue;
		a = (struct gdrdrv_get_attr_args){ .attr = bad };
		KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_GET_ATTR, &a) == -EINVAL, "attr %u", bad);
	}
	/* Same number with another size or direction is another command. */
	KT_CHECK(kt_ioctl(fd, _IOR(GDRDRV_IOC_MAGIC, 255, struct gdrdrv_get_version_args), &v) == -ENOTTY,
		 "_IOR version");
	KT_CHECK(kt_ioctl(fd, _IOWR(GDRDRV_IOC_MAGIC, 9, __u64), &v) == -ENOTTY, "nr 9");
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_GET_VERSION, NULL) == -EFAULT, "NULL arg");
	close(fd);
	return 0;
}

/* Copies of odd sizes at odd offsets, checked through the other view. */
static int kt_copy_sweep(volatile uint8_t *map, volatile uint8_t *bar,
			 size_t len)
{
	static const size_t sizes[] = { 1, 2, 3, 7, 8, 15, 64, 100, 4095, 4096, 65541 };
	uint8_t buf[65541 + 16];
	unsigned int seed = 7;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (size_t off = 0; off < 5; off += 2) {
			size_t n = sizes[s], at = (off * 4097 + s * 131) % (len - n);

			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)rand_r(&seed);
			memcpy((void *)(map + at), buf, n);
			kt_wmb();
			KT_CHECK(!memcmp((const void *)(bar + at), buf, n),
				 "mapping->BAR size %zu at %zu", n, at);
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)rand_r(&seed);
			memcpy((void *)(bar + at), buf, n);
			kt_wmb();
			KT_CHECK(!memcmp((const void *)(map + at), buf, n),
				 "BAR->mapping size %zu at %zu", n, at);
		}
	}
	return 0;
}

int kt_sc_pin_map_copy(void)
{
	const uint64_t va = KT_VA_BASE, len = 1 << 20, bar_off = 0;
	struct gdrdrv_get_info_v2_args info;
	struct gdrdrv_get_info_args info1;
	volatile uint32_t *bar = kt_bar_map(), *map;
	uint64_t h, h2;
	long page = sysconf(_SC_PAGESIZE);
	int fd = kt_open();

	KT_CHECK(fd >= 0 && bar, "open/bar");
	KT_OK(kt_alloc(va, len, bar_off, 0));
	KT_CHECK(kt_pin(fd, va - KT_CHUNK, len, &h) == -EINVAL, "pin outside the allocation");
	KT_CHECK(kt_pin(fd, va, len + 1, &h) == -EINVAL, "pin past the allocation");
	KT_OK(kt_pin(fd, va, len, &h));
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.va == va && info.mapped_size == len && info.page_size == 65536 &&
		 info.mapping_type == GDRDRV_MAPPING_NONE, "info before map");

	/* Bad mappings first. */
	KT_CHECK(!kt_map(fd, h + 1, len - page) && errno == EINVAL, "offset inside the pin");
	KT_CHECK(!kt_map(fd, h, len + page) && errno == EINVAL, "larger than the pin");
	KT_CHECK(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)(h * page)) == MAP_FAILED &&
		 errno == EINVAL, "MAP_PRIVATE");
	KT_CHECK(mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_SHARED, fd, (off_t)(h * page)) == MAP_FAILED,
		 "PROT_EXEC");

	map = kt_map(fd, h, len);
	KT_CHECK(map, "mmap: %s", strerror(errno));
	KT_CHECK(!kt_map(fd, h, len) && errno == EINVAL, "second mapping of a pin");
	kt_fill(map, len, 1);
	KT_CHECK(kt_verify(bar + bar_off / 4, len, 1) < 0, "mapping does not alias the BAR");
	kt_fill(bar + bar_off / 4, len, 2);
	KT_CHECK(kt_verify(map, len, 2) < 0, "BAR writes not seen in the mapping");
	if (kt_copy_sweep((volatile uint8_t *)map, (volatile uint8_t *)bar + bar_off, len))
		return -1;

	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_WC, "type %u", info.mapping_type);
	memset(&info1, 0, sizeof(info1));
	info1.handle = h;
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_GET_INFO, &info1));
	KT_CHECK(info1.mapped == 1 && info1.wc_mapping == 1 && info1.va == va, "v1 info");
	struct gdrdrv_req_mapping_type_args req = { .handle = h, .mapping_type = GDRDRV_MAPPING_WC };
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req) == -EBUSY, "req while mapped");

	KT_OK(munmap((void *)map, len));
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapping_type == GDRDRV_MAPPING_NONE, "unmapped type %u", info.mapping_type);
	req.mapping_type = GDRDRV_MAPPING_CACHING;
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req) == -EOPNOTSUPP, "caching");
	req.mapping_type = GDRDRV_MAPPING_DEVICE;
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req) == -EOPNOTSUPP, "device");
	req.mapping_type = 4;
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req) == -EINVAL, "type 4");
	req.mapping_type = GDRDRV_MAPPING_WC;
	KT_OK(kt_ioctl(fd, GDRDRV_IOC_REQ_MAPPING_TYPE, &req));

	/* A partial mapping of the first 64 KiB. */
	map = kt_map(fd, h, KT_CHUNK);
	KT_CHECK(map, "partial mmap: %s", strerror(errno));
	kt_fill(bar + bar_off / 4, KT_CHUNK, 2);	/* the copy sweep changed it */
	KT_CHECK(kt_verify(map, KT_CHUNK, 2) < 0, "partial mapping shows other data");
	kt_fill(map, KT_CHUNK, 3);
	KT_CHECK(kt_verify(bar + bar_off / 4, KT_CHUNK, 3) < 0, "partial alias");
	KT_OK(munmap((void *)map, KT_CHUNK));

	/* An unaligned pin works but cannot be mapped (gdrcopy semantics). */
	KT_OK(kt_pin(fd, va + 0x100, 100, &h2));
	KT_OK(kt_info(fd, h2, &info));
	KT_CHECK(info.va == va && info.mapped_size == KT_CHUNK, "unaligned info");
	KT_CHECK(!kt_map(fd, h2, KT_CHUNK) && errno == EINVAL, "unaligned map");
	KT_OK(kt_unpin(fd, h2));

	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}

/* Find "[mem START-END] write-combining" in the PAT memtype list. */
static int kt_pat_has_wc(uint64_t start, uint64_t end)
{
	FILE *f = fopen("/sys/kernel/debug/x86/pat_memtype_list", "r");
	char line[256];
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char *m = strstr(line, "[mem ");

		if (!m || sscanf(m, "[mem 0x%llx-0x%llx]", &s, &e) != 2)
			continue;
		if (s == start && e == end && strstr(line, "write-combining"))
			found = 1;
	}
	fclose(f);
	return found;
}

int kt_sc_wc_pat(void)
{
	const uint64_t va = KT_VA_BASE, len = 4 * KT_CHUNK, off = 2 << 20;
	const uint64_t sva = KT_VA_BASE + (1 << 24), soff = 3 << 20;
	volatile uint32_t *map, *smap;
	uint32_t v;
	uint64_t h, sh;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open");
	KT_OK(kt_alloc(va, len, off, 0));
	KT_OK(kt_alloc(sva, len, soff, MOCK_ALLOC_SCATTER));
	KT_OK(kt_pin(fd, va, len, &h));
	KT_OK(kt_pin(fd, sva, len, &sh));
	KT_CHECK(kt_pat_has_wc(kt.bar_phys + off, kt.bar_phys + off + len) == 0,
		 "WC reserved before any mapping");
	map = kt_map(fd, h, len);
	smap = kt_map(fd, sh, len);
	KT_CHECK(map && smap, "mmap");
	KT_CHECK(kt_try_read(map, &v) == 0 && kt_try_read(smap, &v) == 0, "fault in");
	/* Contiguous pin: one WC range; scattered: one per 64 KiB page. */
	KT_CHECK(kt_pat_has_wc(kt.bar_phys + off, kt.bar_phys + off + len) == 1,
		 "no write-combining entry for the contiguous pin");
	for (uint64_t i = 0; i < len / KT_CHUNK; i++) {
		uint64_t p = kt.bar_phys + soff + i * KT_CHUNK;

		KT_CHECK(kt_pat_has_wc(p, p + KT_CHUNK) == 1, "scattered chunk %llu",
			 (unsigned long long)i);
	}
	/* Scattered pages: the mapping's page i is BAR page n-1-i. */
	volatile uint32_t *bar = kt_bar_map();

	KT_CHECK(bar, "bar");
	for (uint64_t i = 0; i < len / KT_CHUNK; i++) {
		kt_fill(smap + i * KT_CHUNK / 4, KT_CHUNK, (uint32_t)(100 + i));
		KT_CHECK(kt_verify(bar + (soff + (len / KT_CHUNK - 1 - i) * KT_CHUNK) / 4,
				   KT_CHUNK, (uint32_t)(100 + i)) < 0, "scatter alias %llu",
			 (unsigned long long)i);
	}
	kt_bar_unmap(bar);
	KT_OK(munmap((void *)map, len));
	KT_OK(munmap((void *)smap, len));
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_unpin(fd, sh));
	KT_CHECK(kt_pat_has_wc(kt.bar_phys + off, kt.bar_phys + off + len) == 0,
		 "WC reservation outlived the pin");
	KT_OK(kt_free(va));
	KT_OK(kt_free(sva));
	close(fd);
	return 0;
}

/* Handle ranges of all live pins never overlap; stale handles are dead. */
int kt_sc_handles(void)
{
	static const uint64_t sizes[] = { 1, 2, 16, 3, 1, 32, 5, 1 };	/* chunks */
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	const uint64_t va = KT_VA_BASE, region = 64 * KT_CHUNK, bar_off = 8 << 20;
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t h[N], at[N], h_other;
	bool live[N];
	volatile uint32_t *map[N], *bar = kt_bar_map();
	struct gdrdrv_get_info_v2_args info;
	int fd = kt_open(), fd2 = kt_open();

	KT_CHECK(fd >= 0 && fd2 >= 0 && bar, "open");
	KT_OK(kt_alloc(va, region, bar_off, 0));
	for (int i = 0, pos = 0; i < N; pos += (int)sizes[i], i++) {
		at[i] = (uint64_t)pos * KT_CHUNK;
		KT_OK(kt_pin(fd, va + at[i], sizes[i] * KT_CHUNK, &h[i]));
		live[i] = true;
		if (i)
			KT_CHECK(h[i] >= h[i - 1] + sizes[i - 1] * KT_CHUNK / page,
				 "pin %d handle %llu overlaps %llu", i,
				 (unsigned long long)h[i], (unsigned long long)h[i - 1]);
	}
	for (int i = 0; i < N; i++) {
		map[i] = kt_map(fd, h[i], sizes[i] * KT_CHUNK);
		KT_CHECK(map[i], "map %d: %s", i, strerror(errno));
		kt_fill(map[i], sizes[i] * KT_CHUNK, (uint32_t)(1000 + i));
	}
	for (int i = 0; i < N; i++)
		KT_CHECK(kt_verify(bar + (bar_off + at[i]) / 4, sizes[i] * KT_CHUNK,
				   (uint32_t)(1000 + i)) < 0, "pin %d aliases wrong memory", i);
	/* Unpin some, then stale handles and handles inside ranges fail. */
	for (int i = 1; i < N; i += 2) {
		KT_OK(munmap((void *)map[i], sizes[i] * KT_CHUNK));
		KT_OK(kt_unpin(fd, h[i]));
		live[i] = false;
		KT_CHECK(kt_unpin(fd, h[i]) == -EINVAL, "double unpin");
		KT_CHECK(kt_info(fd, h[i], &info) == -EINVAL, "stale info");
		KT_CHECK(!kt_map(fd, h[i], KT_CHUNK) && errno == EINVAL, "stale map");
	}
	KT_CHECK(kt_info(fd, h[2] + 1, &info) == -EINVAL, "inside a range");
	KT_CHECK(kt_unpin(fd, h[2] + 1) == -EINVAL, "unpin inside a range");
	KT_CHECK(kt_info(fd, 0, &info) == -EINVAL && kt_info(fd, ~0ull, &info) == -EINVAL &&
		 kt_info(fd, 1ull << 32, &info) == -EINVAL, "edge handles");
	/*
	 * Handle spaces are per file (as in gdrcopy): fd2's first pin gets
	 * the first handle whatever fd holds, each file finds its own pin
	 * under that number, and fd's other handles mean nothing to fd2.
	 */
	KT_OK(kt_pin(fd2, va + at[1], KT_CHUNK, &h_other));
	KT_CHECK(h_other == 1 && h[0] == 1, "first handles: fd2 %llu, fd %llu",
		 (unsigned long long)h_other, (unsigned long long)h[0]);
	KT_OK(kt_info(fd2, h_other, &info));
	KT_CHECK(info.va == va + at[1], "fd2's pin under its handle");
	KT_OK(kt_info(fd, h[0], &info));
	KT_CHECK(info.va == va + at[0], "fd's pin under the same number");
	for (int i = 1; i < N; i++) {
		KT_CHECK(kt_info(fd2, h[i], &info) == -EINVAL, "foreign handle %d", i);
		KT_CHECK(kt_unpin(fd2, h[i]) == -EINVAL, "foreign unpin %d", i);
	}
	/* New pins never land on a live range nor on a just-freed one. */
	for (int i = 1; i < N; i += 2) {
		uint64_t nh;

		KT_OK(kt_pin(fd, va + at[i], sizes[i] * KT_CHUNK, &nh));
		for (int j = 0; j < N; j++)
			KT_CHECK(nh + sizes[i] * KT_CHUNK / page <= h[j] ||
				 nh >= h[j] + sizes[j] * KT_CHUNK / page,
				 "new handle %llu overlaps pin %d", (unsigned long long)nh, j);
		h[i] = nh;
		live[i] = true;
	}
	for (int i = 0; i < N; i++) {
		if (i % 2 == 0)
			KT_OK(munmap((void *)map[i], sizes[i] * KT_CHUNK));
		KT_OK(kt_unpin(fd, h[i]));
	}
	KT_OK(kt_unpin(fd2, h_other));
	KT_OK(kt_free(va));
	close(fd);
	close(fd2);
	kt_bar_unmap(bar);
	(void)live;
	return 0;
}

int kt_sc_pin_args(void);

/* Malformed pins, failing NVIDIA calls and a free racing with the pin. */
int kt_sc_pin_args(void)
{
	const uint64_t va = KT_VA_BASE, len = 4 * KT_CHUNK, off = 12 << 20;
	struct gdrdrv_pin_buffer_v2_args a2;
	struct gdrdrv_pin_buffer_args a1;
	uint64_t h;
	uint32_t flag;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open");
	KT_OK(kt_alloc(va, len, off, 0));
	KT_CHECK(kt_pin(fd, 0, len, &h) == -EINVAL, "addr 0");
	KT_CHECK(kt_pin(fd, va, 0, &h) == -EINVAL, "size 0");
	KT_CHECK(kt_pin(fd, ~0ull - 10, 100, &h) == -EINVAL, "wraps");
	KT_CHECK(kt_pin(fd, va, (1ull << 40) + 1, &h) == -EINVAL, "too large");
	a2 = (struct gdrdrv_pin_buffer_v2_args){ .addr = va, .size = len, .flags = 2 };
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &a2) == -EINVAL, "unknown flag");
	a2 = (struct gdrdrv_pin_buffer_v2_args){ .addr = va, .size = len, .pad = 1 };
	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &a2) == -EINVAL, "pad");
	a2 = (struct gdrdrv_pin_buffer_v2_args){ .addr = va, .size = len,
						 .flags = GDRDRV_PIN_FLAG_FORCE_PCIE };
	if (kt.persistent) {
		KT_OK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &a2));
		KT_OK(kt_unpin(fd, a2.handle));
	} else {
		KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &a2) == -EINVAL,
			 "FORCE_PCIE needs persistent mode");
	}
	/* v1: tokens are legal only for callback pins. */
	a1 = (struct gdrdrv_pin_buffer_args){ .addr = va, .size = len, .p2p_token = 5,
					      .va_space = 1 };
	if (kt.persistent) {
		KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER, &a1) == -EINVAL, "token");
	} else {
		KT_OK(kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER, &a1));
		KT_OK(kt_unpin(fd, a1.handle));
	}
	/* The NVIDIA driver refuses: the error comes back, nothing is kept. */
	KT_OK(kt_config(0, -ENOMEM));
	KT_CHECK(kt_pin(fd, va, len, &h) == -ENOMEM, "injected ENOMEM");
	KT_OK(kt_config(0, -EIO));
	KT_CHECK(kt_pin(fd, va, len, &h) == -EIO, "injected EIO");
	KT_CHECK(kt_stat("pins") == 0 && kt_stat("nv_pins") == 0, "failed pins kept");
	if (!kt.persistent) {
		/* The owner frees the memory while get_pages is returning. */
		KT_OK(kt_config3(0, 0, 1));
		KT_OK(kt_pin(fd, va, len, &h));
		KT_OK(kt_cb_flag(fd, h, &flag));
		KT_CHECK(flag == 1, "pin revoked during get_pages not flagged");
		KT_CHECK(kt_stat("nv_pins") == 0, "page table of a revoked pin kept");
		KT_CHECK(!kt_map(fd, h, len) && errno == EINVAL, "map of a revoked pin");
		KT_OK(kt_unpin(fd, h));
	} else {
		KT_OK(kt_free(va));
	}
	KT_OK(kt_config(0, 0));
	close(fd);
	return 0;
}
