// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_edge.c - the edges: pins of tens of GiB (the mock aliases them onto
 * its BAR), a free during the first touch of a multi-GiB mapping,
 * put_pages failures, and handle allocation across the wrap of the
 * handle space.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_large_map(void);
int kt_sc_free_during_touch(void);
int kt_sc_put_pages_error(void);
int kt_sc_handles_wrap(void);
int kt_sc_map_readonly(void);

#define KT_GIB		(1ull << 30)
#define KT_CURSOR	"/sys/module/gdrdrv/parameters/handle_cursor"
#define KT_MODREF	"/sys/module/gdrdrv/refcnt"

/*
 * A 32 GiB pin: the array of its contiguous runs used to exceed the
 * kmalloc limit at mmap (a WARN, fatal with panic_on_warn).  Words far
 * apart must alias the BAR words the mock put behind them.
 */
int kt_sc_large_map(void)
{
	const uint64_t va = KT_VA_BASE, len = 32 * KT_GIB;
	static const uint64_t offs[] = {
		0, 16 * KT_GIB - 4, 16 * KT_GIB + 0x12340,
		31 * KT_GIB + 0x7654320, 32 * KT_GIB - 4,
	};
	struct gdrdrv_get_info_v2_args info;
	volatile uint32_t *bar = kt_bar_map(), *map;
	uint64_t h;
	int fd = kt_open();

	KT_CHECK(fd >= 0 && bar, "open");
	KT_OK(kt_alloc(va, len, 0, MOCK_ALLOC_ALIAS));
	KT_OK(kt_pin(fd, va, len, &h));
	map = kt_map(fd, h, len);
	KT_CHECK(map, "mmap of 32 GiB: %s", strerror(errno));
	KT_OK(kt_info(fd, h, &info));
	KT_CHECK(info.mapped_size == len && info.mapping_type == GDRDRV_MAPPING_WC,
		 "info size 0x%llx type %u", (unsigned long long)info.mapped_size,
		 info.mapping_type);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t o = offs[i], b = (o % kt.bar_size) / 4;
		uint32_t v = 0, want = 0xa5000000u + (uint32_t)i;

		bar[b] = want;
		kt_wmb();
		KT_CHECK(kt_try_read(map + o / 4, &v) == 0 && v == want,
			 "read at 0x%llx: 0x%x", (unsigned long long)o, v);
		KT_CHECK(kt_try_write(map + o / 4, ~want) == 0, "write at 0x%llx",
			 (unsigned long long)o);
		KT_CHECK(bar[b] == ~want, "BAR after write at 0x%llx: 0x%x",
			 (unsigned long long)o, bar[b]);
	}
	KT_OK(munmap((void *)map, len));
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}

struct kt_toucher {
	volatile uint32_t *map;
	uint64_t second;	/* offset touched after the free */
	atomic_int freed;
	int sig0, sig1;
};

static void *kt_toucher_main(void *arg)
{
	struct kt_toucher *t = arg;
	uint32_t v;

	t->sig0 = kt_try_read(t->map, &v);	/* the first touch */
	while (!atomic_load(&t->freed))
		sched_yield();
	t->sig1 = kt_try_read(t->map + t->second / 4, &v);
	return NULL;
}

/*
 * cudaFree right after the first touch of an 8 GiB mapping.  The free
 * callback needs pin->sem, which a fault holds while it inserts PTEs: the
 * free must not wait until the whole VMA is mapped.  Handshake: the free
 * starts once gdrdrv's faulted_pages counter moved, i.e. after the first
 * window was inserted (the counter is added to then), so the free may not
 * overlap that fault itself; what is checked is that one fault maps a
 * window, far fewer pages than the VMA's, so a free never waits for more.
 */
int kt_sc_free_during_touch(void)
{
	const uint64_t va = KT_VA_BASE, len = 8 * KT_GIB;
	const long long pages = (long long)(len / (uint64_t)getpagesize());
	struct kt_toucher t = { .second = len / 2 };
	long long f0, f1;
	pthread_t th;
	uint64_t h;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open");
	KT_OK(kt_alloc(va, len, 0, MOCK_ALLOC_ALIAS));
	KT_OK(kt_pin(fd, va, len, &h));
	t.map = kt_map(fd, h, len);
	KT_CHECK(t.map, "mmap: %s", strerror(errno));
	f0 = kt_stat("faulted_pages");
	KT_CHECK(f0 >= 0, "faulted_pages counter");
	KT_OK(pthread_create(&th, NULL, kt_toucher_main, &t));
	while (kt_stat("faulted_pages") == f0)
		sched_yield();
	KT_OK(kt_free(va));
	f1 = kt_stat("faulted_pages");
	atomic_store(&t.freed, 1);
	pthread_join(th, NULL);
	/* The first touch may be retried after the zap and fail: either is right. */
	KT_CHECK(t.sig0 == 0 || t.sig0 == SIGBUS, "first touch: sig %d", t.sig0);
	KT_CHECK(t.sig1 == SIGBUS, "touch after the free: sig %d", t.sig1);
	KT_CHECK(f1 - f0 < pages / 2,
		 "the free waited for %lld of the %lld pages to be mapped",
		 f1 - f0, pages);
	KT_OK(munmap((void *)t.map, len));
	KT_OK(kt_unpin(fd, h));
	close(fd);
	return 0;
}

struct kt_unpinner {
	int fd;
	uint64_t h;
	int ret;
};

static void *kt_unpinner_main(void *arg)
{
	struct kt_unpinner *u = arg;

	u->ret = kt_unpin(u->fd, u->h);
	return NULL;
}

static void *kt_freer_main(void *arg)
{
	uint64_t *va = arg;

	*va = (uint64_t)kt_free(*va);		/* 0 or -errno */
	return NULL;
}

/* Nothing of the pin is left and the module reference count is @ref. */
static int kt_released(long long ref)
{
	struct mock_stats_args s;

	KT_CHECK(kt_stat("nv_pins") == 0 && kt_stat("pinned_bytes") == 0,
		 "nv_pins %lld pinned_bytes %lld", kt_stat("nv_pins"),
		 kt_stat("pinned_bytes"));
	KT_OK(kt_mock_stats(&s));
	KT_CHECK(s.tables == 0, "mock tables %llu", (unsigned long long)s.tables);
	KT_CHECK(kt_read_num(KT_MODREF) == ref, "module refcnt %lld, expected %lld",
		 kt_read_num(KT_MODREF), ref);
	return 0;
}

/*
 * put_pages fails (callback mode).  Without a callback yet, the driver
 * keeps the registration: the pin must wait for the callback and be
 * released by it, module reference included.  With a callback that ran
 * while put_pages waited, the registration is gone: nothing may wait.
 */
int kt_sc_put_pages_error(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 40 << 20;
	const long long ref = kt_read_num(KT_MODREF);
	volatile uint32_t *map;
	struct mock_probe_args p;
	struct kt_unpinner u;
	uint64_t h, fva = va;
	pthread_t tf, tu;
	uint32_t v;
	int fd = kt_open();

	KT_CHECK(fd >= 0 && ref >= 0, "open, refcnt %lld", ref);
	if (kt_alloc_pin_map(fd, va, len, off, &h, &map))
		return -1;
	map[0] = 1;
	KT_OK(kt_config_put(-ENOMEM, 0));
	KT_OK(kt_unpin(fd, h));
	KT_CHECK(kt_try_read(map, &v) == SIGBUS, "mapping after unpin");
	KT_OK(munmap((void *)map, len));
	close(fd);
	KT_CHECK(kt_stat("pins") == 0 && kt_stat("nv_pins") == 1,
		 "pins %lld nv_pins %lld while the driver keeps the registration",
		 kt_stat("pins"), kt_stat("nv_pins"));
	KT_CHECK(kt_read_num(KT_MODREF) == ref + 1, "refcnt %lld: no reference for the callback",
		 kt_read_num(KT_MODREF));
	KT_OK(kt_free(va));		/* the callback releases the pin */
	if (kt_released(ref))
		return -1;

	/* The callback runs while put_pages waits; put_pages then fails. */
	fd = kt_open();
	KT_CHECK(fd >= 0, "open");
	if (kt_alloc_pin_map(fd, va, len, off, &h, &map))
		return -1;
	KT_OK(kt_config_put(-EINVAL, 1));
	KT_OK(kt_probe(&p));
	KT_OK(pthread_create(&tf, NULL, kt_freer_main, &fva));
	KT_OK(kt_wait_cb_held());
	u = (struct kt_unpinner){ .fd = fd, .h = h };
	KT_OK(pthread_create(&tu, NULL, kt_unpinner_main, &u));
	KT_OK(kt_wait_puts_entered(p.puts_entered));
	KT_OK(kt_cb_release());
	pthread_join(tf, NULL);
	pthread_join(tu, NULL);
	KT_OK(kt_config(0, 0));
	KT_CHECK(fva == 0 && u.ret == 0, "free %d unpin %d", (int)fva, u.ret);
	KT_OK(munmap((void *)map, len));
	close(fd);
	return kt_released(ref);
}

/* One pin of the wrap scenario: its size, handle and chunk in the buffer. */
struct kt_wpin {
	uint64_t chunks, h, co;
	int live;
};

static int kt_wrap_pin(int fd, uint64_t va, struct kt_wpin *p,
		       uint64_t *next_co, uint64_t want)
{
	p->co = *next_co;
	*next_co += p->chunks;
	KT_OK(kt_pin(fd, va + p->co * KT_CHUNK, p->chunks * KT_CHUNK, &p->h));
	p->live = 1;
	KT_CHECK(p->h == want, "pin of %llu chunks: handle 0x%llx, expected 0x%llx",
		 (unsigned long long)p->chunks, (unsigned long long)p->h,
		 (unsigned long long)want);
	return 0;
}

/*
 * Handles are allocated cyclically in [1, 2^32) pages.  With the cursor
 * moved next to the end (a mock-build parameter), pins fill the end
 * exactly, wrap, skip live ranges and fill holes; each gets exactly the
 * first free range after the cursor, all are disjoint, and each mapping
 * aliases its own memory.
 */
int kt_sc_handles_wrap(void)
{
	const uint64_t L = 1ull << 32, P = KT_CHUNK / (uint64_t)getpagesize();
	const uint64_t va = KT_VA_BASE, off = 32 << 20;
	/* Sizes in chunks: A1..A5 low, B1..B5 across the end, C. */
	static const uint64_t sizes[11] = { 1, 2, 1, 3, 1, 1, 2, 3, 1, 2, 1 };
	const int n = sizeof(sizes) / sizeof(sizes[0]);
	struct kt_wpin pins[sizeof(sizes) / sizeof(sizes[0])];
	volatile uint32_t *bar = kt_bar_map();
	uint64_t co = 0;
	int fd = kt_open();

	KT_CHECK(fd >= 0 && bar, "open");
	memset(pins, 0, sizeof(pins));
	for (int i = 0; i < n; i++)
		pins[i].chunks = sizes[i];
	KT_OK(kt_alloc(va, 24 * KT_CHUNK, off, 0));
	KT_OK(kt_write_num(KT_CURSOR, 1));
	if (kt_wrap_pin(fd, va, &pins[0], &co, 1) ||
	    kt_wrap_pin(fd, va, &pins[1], &co, 1 + P) ||
	    kt_wrap_pin(fd, va, &pins[2], &co, 1 + 3 * P) ||
	    kt_wrap_pin(fd, va, &pins[3], &co, 1 + 4 * P) ||
	    kt_wrap_pin(fd, va, &pins[4], &co, 1 + 7 * P))
		return -1;
	/* Holes of 2 and 3 chunks. */
	KT_OK(kt_unpin(fd, pins[1].h));
	KT_OK(kt_unpin(fd, pins[3].h));
	pins[1].live = pins[3].live = 0;
	KT_CHECK(kt_write_num(KT_CURSOR, 1 + 3 * P + 1) == -EBUSY,
		 "cursor inside a live range accepted");
	KT_CHECK(kt_write_num(KT_CURSOR, L) == -ERANGE, "cursor at the limit");
	KT_OK(kt_write_num(KT_CURSOR, L - 3 * P));
	/* B1, B2 end exactly at the limit; B3 wraps into the 3-chunk hole. */
	if (kt_wrap_pin(fd, va, &pins[5], &co, L - 3 * P) ||
	    kt_wrap_pin(fd, va, &pins[6], &co, L - 2 * P) ||
	    kt_wrap_pin(fd, va, &pins[7], &co, 1 + 4 * P) ||
	    kt_wrap_pin(fd, va, &pins[8], &co, 1 + 8 * P) ||
	    kt_wrap_pin(fd, va, &pins[9], &co, 1 + 9 * P))
		return -1;
	/* From a cursor whose range would overlap B2: wrap to the 2-chunk hole. */
	KT_OK(kt_unpin(fd, pins[5].h));
	pins[5].live = 0;
	KT_OK(kt_write_num(KT_CURSOR, L - 3 * P + 8));
	if (kt_wrap_pin(fd, va, &pins[10], &co, 1 + P))
		return -1;

	for (int i = 0; i < n; i++) {
		const struct kt_wpin *a = &pins[i];

		if (!a->live)
			continue;
		KT_CHECK(a->h >= 1 && a->h + a->chunks * P <= L, "pin %d out of range", i);
		for (int j = i + 1; j < n; j++) {
			const struct kt_wpin *b = &pins[j];

			KT_CHECK(!b->live || a->h + a->chunks * P <= b->h ||
				 b->h + b->chunks * P <= a->h, "pins %d and %d overlap", i, j);
		}
	}
	for (int i = 0; i < n; i++) {
		uint64_t len = pins[i].chunks * KT_CHUNK;
		volatile uint32_t *map;

		if (!pins[i].live)
			continue;
		map = kt_map(fd, pins[i].h, len);
		KT_CHECK(map, "map pin %d: %s", i, strerror(errno));
		kt_fill(map, len, 100 + i);
		KT_CHECK(kt_verify(bar + (off + pins[i].co * KT_CHUNK) / 4, len,
				   100 + i) < 0, "pin %d aliases other memory", i);
		KT_OK(munmap((void *)map, len));
		KT_OK(kt_unpin(fd, pins[i].h));
	}
	KT_OK(kt_free(va));
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}

/*
 * An O_RDONLY file: MAP_SHARED with PROT_READ works (the core clears
 * VM_SHARED of such a mapping); writing is refused by the core; private
 * (copy-on-write) mappings are refused by gdrdrv.
 */
int kt_sc_map_readonly(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 44 << 20;
	const off_t pgoff = (off_t)getpagesize();
	volatile uint32_t *bar = kt_bar_map();
	void *ro, *p;
	uint64_t h;
	int fd = open("/dev/gdrdrv", O_RDONLY | O_CLOEXEC);

	KT_CHECK(fd >= 0 && bar, "open O_RDONLY: %s", strerror(errno));
	KT_OK(kt_alloc(va, len, off, 0));
	KT_OK(kt_pin(fd, va, len, &h));
	kt_fill(bar + off / 4, len, 31);
	ro = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)h * pgoff);
	KT_CHECK(ro != MAP_FAILED, "read-only shared mmap: %s", strerror(errno));
	KT_CHECK(kt_verify(ro, len, 31) < 0, "read-only mapping aliases other memory");
	KT_CHECK(mprotect(ro, len, PROT_READ | PROT_WRITE) == -1 && errno == EACCES,
		 "mprotect to writable");
	KT_OK(munmap(ro, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)h * pgoff);
	KT_CHECK(p == MAP_FAILED && errno == EACCES, "writable mmap of O_RDONLY");
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)h * pgoff);
	KT_CHECK(p == MAP_FAILED && errno == EINVAL, "private mmap");
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	kt_bar_unmap(bar);
	return 0;
}
