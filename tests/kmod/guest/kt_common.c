// SPDX-License-Identifier: MIT OR GPL-2.0
/* kt_common.c - helpers of the gdrdrv guest scenarios. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include "kt.h"

struct kt kt;

int kt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int kt_open(void)
{
	int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int kt_pin(int fd, uint64_t addr, uint64_t size, uint64_t *handle)
{
	struct gdrdrv_pin_buffer_v2_args a = { .addr = addr, .size = size };
	int ret = kt_ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &a);

	if (!ret)
		*handle = a.handle;
	return ret;
}

int kt_unpin(int fd, uint64_t handle)
{
	struct gdrdrv_unpin_buffer_args a = { .handle = handle };

	return kt_ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &a);
}

int kt_info(int fd, uint64_t handle, struct gdrdrv_get_info_v2_args *info)
{
	memset(info, 0, sizeof(*info));
	info->handle = handle;
	return kt_ioctl(fd, GDRDRV_IOC_GET_INFO_V2, info);
}

int kt_cb_flag(int fd, uint64_t handle, uint32_t *flag)
{
	struct gdrdrv_get_cb_flag_args a = { .handle = handle };
	int ret = kt_ioctl(fd, GDRDRV_IOC_GET_CB_FLAG, &a);

	*flag = a.flag;
	return ret;
}

void *kt_map(int fd, uint64_t handle, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)(handle * (uint64_t)page));

	return p == MAP_FAILED ? NULL : p;
}

int kt_alloc(uint64_t va, uint64_t size, uint64_t bar_off, uint32_t flags)
{
	struct mock_alloc_args a = {
		.va = va, .size = size, .bar_off = bar_off, .flags = flags,
	};

	return kt_ioctl(kt.mock, MOCK_IOC_ALLOC, &a);
}

int kt_alloc_pin_map(int fd, uint64_t va, uint64_t len, uint64_t off,
		     uint64_t *h, volatile uint32_t **map)
{
	KT_OK(kt_alloc(va, len, off, 0));
	KT_OK(kt_pin(fd, va, len, h));
	*map = kt_map(fd, *h, len);
	KT_CHECK(*map, "mmap");
	return 0;
}

int kt_free(uint64_t va)
{
	return kt_free_of(va, 0);
}

int kt_free_of(uint64_t va, int tgid)
{
	struct mock_free_args a = { .va = va, .tgid = tgid };

	return kt_ioctl(kt.mock, MOCK_IOC_FREE, &a);
}

int kt_config(uint32_t cb_delay_ms, int32_t fail_next_get)
{
	return kt_config3(cb_delay_ms, fail_next_get, 0);
}

int kt_config3(uint32_t cb_delay_ms, int32_t fail_next_get, uint32_t free_in_get)
{
	struct mock_config_args a = {
		.cb_delay_ms = cb_delay_ms, .fail_next_get = fail_next_get,
		.free_in_next_get = free_in_get,
	};

	return kt_ioctl(kt.mock, MOCK_IOC_CONFIG, &a);
}

int kt_config_put(int32_t fail_next_put, uint32_t cb_hold)
{
	struct mock_config_args a = {
		.fail_next_put = fail_next_put, .cb_hold = cb_hold,
	};

	return kt_ioctl(kt.mock, MOCK_IOC_CONFIG, &a);
}

int kt_probe(struct mock_probe_args *p)
{
	return kt_ioctl(kt.mock, MOCK_IOC_PROBE, p);
}

int kt_cb_release(void)
{
	return kt_ioctl(kt.mock, MOCK_IOC_CB_RELEASE, NULL);
}

int kt_wait_cb_held(void)
{
	struct mock_probe_args p;

	do {
		if (kt_probe(&p))
			return -1;
		sched_yield();
	} while (!p.cb_held);
	return 0;
}

int kt_wait_puts_entered(uint64_t before)
{
	struct mock_probe_args p;

	do {
		if (kt_probe(&p))
			return -1;
		sched_yield();
	} while (p.puts_entered <= before);
	return 0;
}

int kt_mock_stats(struct mock_stats_args *s)
{
	return kt_ioctl(kt.mock, MOCK_IOC_STATS, s);
}

/* ---- faults ----------------------------------------------------------- */

static __thread sigjmp_buf kt_jmp;
static __thread volatile sig_atomic_t kt_armed;

static void kt_on_fault(int sig)
{
	if (kt_armed) {
		kt_armed = 0;
		siglongjmp(kt_jmp, sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void kt_catch_faults(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kt_on_fault;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

int kt_try_read(const volatile uint32_t *p, uint32_t *out)
{
	int sig = sigsetjmp(kt_jmp, 1);

	if (sig)
		return sig;
	kt_armed = 1;
	*out = *p;
	kt_armed = 0;
	return 0;
}

int kt_try_write(volatile uint32_t *p, uint32_t v)
{
	int sig = sigsetjmp(kt_jmp, 1);

	if (sig)
		return sig;
	kt_armed = 1;
	*p = v;
	kt_wmb();
	kt_armed = 0;
	return 0;
}

void kt_wmb(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("sfence" ::: "memory");
#else
	__sync_synchronize();
#endif
}

static uint32_t kt_word(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + 1;

	x ^= x >> 15;
	return x * 2246822519u;
}

void kt_fill(volatile uint32_t *p, size_t bytes, uint32_t seed)
{
	for (size_t i = 0; i < bytes / 4; i++)
		p[i] = kt_word(seed, i);
	kt_wmb();
}

long kt_verify(const volatile uint32_t *p, size_t bytes, uint32_t seed)
{
	for (size_t i = 0; i < bytes / 4; i++)
		if (p[i] != kt_word(seed, i))
			return (long)i;
	return -1;
}

/* ---- BAR view --------------------------------------------------------- */

static int kt_find_bar(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int found = -ENODEV;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && found) {
		char path[320], buf[32] = "";
		FILE *f;
		unsigned int ven = 0, dev = 0;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			ven = (unsigned int)strtoul(buf, NULL, 0);
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			dev = (unsigned int)strtoul(buf, NULL, 0);
		fclose(f);
		if (ven == 0x1af4 && dev == 0x1110) {
			snprintf(kt.bar_path, sizeof(kt.bar_path),
				 "/sys/bus/pci/devices/%s/resource2_wc", e->d_name);
			found = 0;
		}
	}
	closedir(d);
	return found;
}

volatile uint32_t *kt_bar_map(void)
{
	int fd = open(kt.bar_path, O_RDWR | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, kt.bar_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

void kt_bar_unmap(volatile uint32_t *bar)
{
	if (bar)
		munmap((void *)bar, kt.bar_size);
}

/* ---- counters --------------------------------------------------------- */

long long kt_stat(const char *name)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/gdrdrv/stats/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoll(buf, NULL, 10);
}

/* A file's first line as a number, or -1. */
long long kt_read_num(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] ? strtoll(buf, NULL, 0) : -1;
}

/* Write @v to a file (a module parameter): 0 or -errno. */
int kt_write_num(const char *path, unsigned long long v)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%llu\n", v) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

int kt_expect_idle(void)
{
	static const char *const live[] = {
		"files", "pins", "nv_pins", "pinned_bytes", "mappings",
	};
	struct mock_stats_args s;

	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		KT_CHECK(kt_stat(live[i]) == 0, "gdrdrv %s = %lld", live[i],
			 kt_stat(live[i]));
	KT_OK(kt_mock_stats(&s));
	KT_CHECK(s.tables == 0 && s.allocs == 0 && s.zombies == 0,
		 "mock tables %llu allocs %llu zombies %llu",
		 (unsigned long long)s.tables, (unsigned long long)s.allocs,
		 (unsigned long long)s.zombies);
	KT_CHECK(s.misuse == 0, "mock saw %llu API misuses",
		 (unsigned long long)s.misuse);
	return 0;
}

uint64_t kt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int kt_setup(void)
{
	struct mock_info_args info;
	struct gdrdrv_get_attr_args attr = {
		.attr = GDRDRV_ATTR_USE_PERSISTENT_MAPPING,
	};
	int fd, ret;

	kt_catch_faults();
	kt.mock = open("/dev/mock_nvp2p", O_RDWR | O_CLOEXEC);
	if (kt.mock < 0)
		return -errno;
	ret = kt_ioctl(kt.mock, MOCK_IOC_INFO, &info);
	if (ret)
		return ret;
	kt.bar_phys = info.bar_phys;
	kt.bar_size = info.bar_size;
	ret = kt_find_bar();
	if (ret)
		return ret;
	fd = kt_open();
	if (fd < 0)
		return fd;
	ret = kt_ioctl(fd, GDRDRV_IOC_GET_ATTR, &attr);
	close(fd);
	kt.persistent = attr.val != 0;
	return ret;
}
