// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_stress.c - 16 threads pinning and mapping at once, randomised
 * malformed ioctls and mmaps, and a long pin/unpin loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_threads(void);
int kt_sc_fuzz(void);
int kt_sc_cycles(void);

static uint64_t kt_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- 16 threads ------------------------------------------------------- */

#define KT_THREADS	16
#define KT_T_CHUNKS	8
#define KT_T_ITERS	24

struct kt_worker {
	int fd;
	int id;
	volatile uint32_t *bar;
	char why[160];
};

static void *kt_worker_main(void *arg)
{
	struct kt_worker *w = arg;
	const uint64_t region = KT_T_CHUNKS * KT_CHUNK;
	const uint64_t va = KT_VA_BASE + (uint64_t)w->id * region * 2;
	const uint64_t off = (40ull << 20) + (uint64_t)w->id * region;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);

	if (kt_alloc(va, region, off, 0)) {
		snprintf(w->why, sizeof(w->why), "alloc");
		return NULL;
	}
	for (int it = 0; it < KT_T_ITERS; it++) {
		uint64_t first = kt_rand(&seed) % KT_T_CHUNKS;
		uint64_t n = 1 + kt_rand(&seed) % (KT_T_CHUNKS - first);
		uint64_t len = n * KT_CHUNK, h;
		uint32_t tag = (uint32_t)(w->id * 1000 + it);
		volatile uint32_t *map;
		int ret = kt_pin(w->fd, va + first * KT_CHUNK, len, &h);

		if (ret) {
			snprintf(w->why, sizeof(w->why), "pin: %d", ret);
			return NULL;
		}
		map = kt_map(w->fd, h, len);
		if (!map) {
			snprintf(w->why, sizeof(w->why), "map: %d", errno);
			return NULL;
		}
		kt_fill(map, len, tag);
		if (kt_verify(w->bar + (off + first * KT_CHUNK) / 4, len, tag) >= 0 ||
		    kt_verify(map, len, tag) >= 0) {
			snprintf(w->why, sizeof(w->why), "data, iteration %d", it);
			return NULL;
		}
		/* Every other round unpin first, with the mapping live. */
		if (it & 1) {
			uint32_t v;

			if (kt_unpin(w->fd, h) || kt_try_read(map, &v) != SIGBUS ||
			    munmap((void *)map, len)) {
				snprintf(w->why, sizeof(w->why), "unpin-first, iteration %d", it);
				return NULL;
			}
		} else if (munmap((void *)map, len) || kt_unpin(w->fd, h)) {
			snprintf(w->why, sizeof(w->why), "unmap/unpin, iteration %d", it);
			return NULL;
		}
	}
	if (kt_free(va))
		snprintf(w->why, sizeof(w->why), "free");
	return NULL;
}

int kt_sc_threads(void)
{
	struct kt_worker w[KT_THREADS];
	pthread_t t[KT_THREADS];
	volatile uint32_t *bar = kt_bar_map();
	int fd = kt_open();

	KT_CHECK(fd >= 0 && bar, "open");
	for (int i = 0; i < KT_THREADS; i++) {
		w[i] = (struct kt_worker){ .fd = fd, .id = i, .bar = bar };
		KT_OK(pthread_create(&t[i], NULL, kt_worker_main, &w[i]));
	}
	for (int i = 0; i < KT_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < KT_THREADS; i++)
		KT_CHECK(!w[i].why[0], "thread %d: %s", i, w[i].why);
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}

/* ---- randomised malformed calls --------------------------------------- */

#define KT_FUZZ_OPS	14000
#define KT_FUZZ_PINS	24

static const unsigned long kt_cmds[] = {
	GDRDRV_IOC_PIN_BUFFER, GDRDRV_IOC_UNPIN_BUFFER, GDRDRV_IOC_GET_CB_FLAG,
	GDRDRV_IOC_GET_INFO, GDRDRV_IOC_GET_INFO_V2, GDRDRV_IOC_GET_ATTR,
	GDRDRV_IOC_PIN_BUFFER_V2, GDRDRV_IOC_REQ_MAPPING_TYPE,
	GDRDRV_IOC_GET_VERSION,
};

struct kt_fuzz {
	int fd;
	uint64_t seed, va, len;
	uint64_t h[KT_FUZZ_PINS];
	int n;
	long ioctls, mmaps, pins;
};

static uint64_t kt_fuzz_value(struct kt_fuzz *z)
{
	static const uint64_t edge[] = {
		0, 1, 0xffff, 0x10000, 0x10001, 0xffffffffull, 1ull << 32,
		1ull << 40, (1ull << 40) + 1, ~0ull, ~0ull - 0xffff, 1ull << 63,
	};
	uint64_t r = kt_rand(&z->seed);

	switch (r % 6) {
	case 0:
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:		/* near the registered range */
		return z->va + ((r >> 8) % (2 * z->len)) - z->len / 2;
	case 2:		/* a live handle, or next to one */
		return z->n ? z->h[(r >> 8) % z->n] + ((r >> 16) % 3) - 1 : r;
	case 3:
		return (r >> 8) % 64 * KT_CHUNK;
	default:
		return kt_rand(&z->seed);
	}
}

static void kt_fuzz_ioctl(struct kt_fuzz *z)
{
	uint64_t buf[8], r = kt_rand(&z->seed);
	unsigned long cmd = kt_cmds[r % (sizeof(kt_cmds) / sizeof(kt_cmds[0]))];
	void *arg = buf;

	for (int i = 0; i < 8; i++)
		buf[i] = kt_fuzz_value(z);
	if ((r >> 8) % 8 == 0)		/* a random command number */
		cmd = (unsigned long)(uint32_t)kt_rand(&z->seed);
	else if ((r >> 8) % 8 == 1)	/* right number, wrong size/direction */
		cmd = _IOC((r >> 12) & 3, GDRDRV_IOC_MAGIC, _IOC_NR(cmd), (r >> 16) % 64);
	if ((r >> 20) % 16 == 0)	/* bad pointers */
		arg = (void *)(uintptr_t)((r >> 24) % 2 ? 0xffff888000000000ull : 8ull);
	if (!ioctl(z->fd, cmd, arg) &&
	    (cmd == GDRDRV_IOC_PIN_BUFFER || cmd == GDRDRV_IOC_PIN_BUFFER_V2)) {
		uint64_t h = cmd == GDRDRV_IOC_PIN_BUFFER ? buf[4] : buf[3];

		if (z->n < KT_FUZZ_PINS)
			z->h[z->n++] = h;
		else
			kt_unpin(z->fd, h);
		z->pins++;
	}
	z->ioctls++;
}

static void kt_fuzz_mmap(struct kt_fuzz *z)
{
	static const int prots[] = {
		PROT_READ | PROT_WRITE, PROT_READ, PROT_NONE, PROT_WRITE,
		PROT_READ | PROT_EXEC,
	};
	const long page = sysconf(_SC_PAGESIZE);
	uint64_t r = kt_rand(&z->seed), pages;
	uint64_t off = kt_fuzz_value(z);
	int flags = (r >> 4) % 4 ? MAP_SHARED : MAP_PRIVATE;
	void *p;

	pages = (r >> 8) % 4 == 0 ? kt_rand(&z->seed) % 64 : 1 + (r >> 12) % 20;
	if (off < (1ull << 40) / (uint64_t)page)
		off *= (uint64_t)page;
	p = mmap(NULL, pages * page, prots[(r >> 16) % 5], flags, z->fd,
		 (off_t)(off & ~((uint64_t)page - 1) & INT64_MAX));
	z->mmaps++;
	if (p == MAP_FAILED)
		return;
	if ((r >> 20) % 2) {
		uint32_t v;

		kt_try_read(p, &v);	/* may fault if revoked or PROT_NONE */
	}
	/* Split it sometimes (vm_open), try to grow it (refused). */
	if (pages > 2 && (r >> 24) % 2)
		munmap((char *)p + page, page);
	if (mremap(p, page, 64 * page, 0) != MAP_FAILED)
		z->mmaps = -1000000;	/* DONTEXPAND broken: make it fail */
	munmap(p, pages * page);
}

int kt_sc_fuzz(void)
{
	struct kt_fuzz z = { .seed = 0x1234567887654321ull, .va = KT_VA_BASE,
			     .len = 16 * KT_CHUNK };
	const uint64_t off = 56 << 20;
	struct gdrdrv_get_info_v2_args info;
	long long errors0 = kt_stat("errors");
	volatile uint32_t *map;
	uint64_t h;

	z.fd = kt_open();
	KT_CHECK(z.fd >= 0, "open");
	KT_OK(kt_alloc(z.va, z.len, off, 0));
	for (int op = 0; op < KT_FUZZ_OPS; op++) {
		uint64_t r = kt_rand(&z.seed) % 100;

		if (r < 55) {
			kt_fuzz_ioctl(&z);
		} else if (r < 85) {
			kt_fuzz_mmap(&z);
		} else if (r < 93 && z.n < KT_FUZZ_PINS) {
			if (!kt_pin(z.fd, z.va + kt_rand(&z.seed) % 16 * KT_CHUNK,
				    1 + kt_rand(&z.seed) % (4 * KT_CHUNK), &h))
				z.h[z.n++] = h;
		} else if (r < 99 && z.n) {
			int i = (int)(kt_rand(&z.seed) % (uint64_t)z.n);

			kt_unpin(z.fd, z.h[i]);
			z.h[i] = z.h[--z.n];
		} else if (!kt.persistent) {
			/* cudaFree + a new allocation: every pin is revoked. */
			KT_OK(kt_free(z.va));
			KT_OK(kt_alloc(z.va, z.len, off, 0));
		}
	}
	KT_CHECK(z.mmaps > 3000 && z.ioctls + z.mmaps >= 10000, "only %ld mmaps, %ld ioctls",
		 z.mmaps, z.ioctls);
	KT_CHECK(kt_stat("errors") > errors0 + 5000, "errors counter %lld", kt_stat("errors"));
	/* The file still works normally afterwards. */
	while (z.n)
		kt_unpin(z.fd, z.h[--z.n]);
	KT_OK(kt_pin(z.fd, z.va, 2 * KT_CHUNK, &h));
	KT_OK(kt_info(z.fd, h, &info));
	map = kt_map(z.fd, h, 2 * KT_CHUNK);
	KT_CHECK(map, "map after fuzzing");
	kt_fill(map, 2 * KT_CHUNK, 99);
	KT_CHECK(kt_verify(map, 2 * KT_CHUNK, 99) < 0, "data after fuzzing");
	KT_OK(munmap((void *)map, 2 * KT_CHUNK));
	KT_OK(kt_unpin(z.fd, h));
	KT_OK(kt_free(z.va));
	close(z.fd);
	printf("  fuzz: %ld ioctls, %ld mmaps, %ld random pins\n", z.ioctls, z.mmaps, z.pins);
	return 0;
}

/* ---- long pin/unpin loop ---------------------------------------------- */

#define KT_CYCLES 100000

int kt_sc_cycles(void)
{
	const uint64_t va = KT_VA_BASE, off = 60 << 20;
	long long total0 = kt_stat("pins_total");
	uint64_t h, t0 = kt_now_ms(), prev = 0;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open");
	KT_OK(kt_alloc(va, 2 * KT_CHUNK, off, 0));
	for (int i = 0; i < KT_CYCLES; i++) {
		KT_OK(kt_pin(fd, va + (i & 1) * KT_CHUNK, KT_CHUNK, &h));
		KT_CHECK(h != prev, "handle reused at once (%d)", i);
		prev = h;
		KT_OK(kt_unpin(fd, h));
	}
	KT_CHECK(kt_stat("pins_total") - total0 == KT_CYCLES, "pins_total %lld",
		 kt_stat("pins_total"));
	KT_CHECK(kt_stat("pins") == 0 && kt_stat("nv_pins") == 0 &&
		 kt_stat("pinned_bytes") == 0, "live counters");
	KT_OK(kt_free(va));
	close(fd);
	printf("  cycles: %d pin/unpin in %llu ms\n", KT_CYCLES,
	       (unsigned long long)(kt_now_ms() - t0));
	return 0;
}
