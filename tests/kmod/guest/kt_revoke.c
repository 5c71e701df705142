// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_revoke.c - the GPU memory goes away under a live mapping: freed by
 * its owner (the mock's free callback, i.e. cudaFree), during a copy,
 * while unpin waits in put_pages, and unpin/close/exit with live mappings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_free_while_mapped(void);
int kt_sc_free_during_copy(void);
int kt_sc_free_during_unpin(void);
int kt_sc_unpin_close_exit(void);

/* Every word of the mapping faults. */
static int kt_all_fault(volatile uint32_t *map, size_t len)
{
	uint32_t v;

	for (size_t off = 0; off < len; off += 4096) {
		KT_CHECK(kt_try_read(map + off / 4, &v) == SIGBUS, "read at %zu: 0x%x", off, v);
		KT_CHECK(kt_try_write(map + off / 4, 1) == SIGBUS, "write at %zu", off);
	}
	return 0;
}

/* A pin of this process, mapped, and the BAR behind it seen directly. */
struct kt_mapped {
	volatile uint32_t *bar;
	volatile uint32_t *map;
	uint64_t h;
	int fd;
};

/* Open gdrdrv and the BAR, then allocate, pin and map @len bytes at @va. */
static int kt_open_mapped(struct kt_mapped *m, uint64_t va, uint64_t len, uint64_t off)
{
	m->bar = kt_bar_map();
	m->fd = kt_open();
	KT_CHECK(m->fd >= 0 && m->bar, "open");
	return kt_alloc_pin_map(m->fd, va, len, off, &m->h, &m->map);
}

int kt_sc_free_while_mapped(void)
{
	const uint64_t va = KT_VA_BASE, len = 4 * KT_CHUNK, off = 16 << 20;
	struct kt_mapped m;
	struct gdrdrv_get_info_v2_args info;
	uint32_t flag;

	if (kt_open_mapped(&m, va, len, off))
		return -1;
	kt_fill(m.map, len, 11);
	KT_CHECK(kt_verify(m.bar + off / 4, len, 11) < 0, "alias");
	KT_OK(kt_cb_flag(m.fd, m.h, &flag));
	KT_CHECK(flag == 0, "flag before free");

	KT_OK(kt_free(va));			/* cudaFree */
	KT_OK(kt_cb_flag(m.fd, m.h, &flag));
	KT_OK(kt_info(m.fd, m.h, &info));
	if (!kt.persistent) {
		struct gdrdrv_get_info_args v1 = { .handle = m.h };

		KT_CHECK(flag == 1, "callback flag not set");
		/* gdrcopy's libgdrapi reads the mapping as gone after a revoke. */
		KT_CHECK(info.mapping_type == GDRDRV_MAPPING_NONE,
			 "GET_INFO_V2 after revoke: type %u", info.mapping_type);
		KT_OK(kt_ioctl(m.fd, GDRDRV_IOC_GET_INFO, &v1));
		KT_CHECK(!v1.mapped && !v1.wc_mapping, "GET_INFO after revoke: mapped %u wc %u",
			 v1.mapped, v1.wc_mapping);
		KT_CHECK(kt_stat("invalidations") > 0, "invalidations counter");
		if (kt_all_fault(m.map, len))
			return -1;
		/* The memory is reused: the stale mapping must never show it. */
		KT_OK(kt_alloc(va + len, len, off, 0));
		kt_fill(m.bar + off / 4, len, 12);
		if (kt_all_fault(m.map, len))
			return -1;
		KT_CHECK(!kt_map(m.fd, m.h, len) && errno == EINVAL, "remap after revoke");
		KT_OK(munmap((void *)m.map, len));
		KT_CHECK(!kt_map(m.fd, m.h, len) && errno == EINVAL, "map after revoke");
		KT_OK(kt_unpin(m.fd, m.h));
		KT_OK(kt_free(va + len));
	} else {
		/* Persistent: never revoked, the pages stay out of circulation. */
		KT_CHECK(flag == 0, "persistent pin was called back");
		KT_CHECK(kt_verify(m.map, len, 11) < 0, "persistent data lost");
		KT_CHECK(kt_alloc(va + len, len, off, 0) == -EBUSY,
			 "freed-but-pinned memory handed out again");
		KT_OK(kt_unpin(m.fd, m.h));
		if (kt_all_fault(m.map, len))
			return -1;
		KT_OK(kt_alloc(va + len, len, off, 0));	/* now it is free */
		KT_OK(munmap((void *)m.map, len));
		KT_OK(kt_free(va + len));
	}
	close(m.fd);
	kt_bar_unmap(m.bar);
	return 0;
}

struct kt_copier {
	volatile uint32_t *map;
	size_t len;
	atomic_int stop;
	int sig;		/* signal that stopped the copy, 0 if none */
	long bad;		/* words read that were not the old data */
	atomic_ulong rounds;	/* passes over the mapping completed */
};

static void *kt_copier_main(void *arg)
{
	struct kt_copier *c = arg;
	uint32_t v;

	for (uint64_t t0 = kt_now_ms();
	     !atomic_load(&c->stop) && kt_now_ms() - t0 < 20000;
	     atomic_fetch_add(&c->rounds, 1)) {
		for (size_t i = 0; i < c->len / 4; i += 61) {
			int sig = kt_try_read(c->map + i, &v);

			if (!sig)
				sig = kt_try_write(c->map + i, v);
			if (sig) {
				c->sig = sig;
				return NULL;
			}
			if (v != 0x5a5a5a5a)
				c->bad++;
		}
	}
	return NULL;
}

int kt_sc_free_during_copy(void)
{
	const uint64_t va = KT_VA_BASE, len = 16 * KT_CHUNK, off = 20 << 20;
	struct kt_mapped m;
	struct kt_copier c;
	unsigned long rounds;
	pthread_t t;

	if (kt_open_mapped(&m, va, len, off))
		return -1;
	for (size_t i = 0; i < len / 4; i++)
		m.map[i] = 0x5a5a5a5a;
	kt_wmb();
	memset(&c, 0, sizeof(c));
	c.map = m.map;
	c.len = len;
	KT_OK(pthread_create(&t, NULL, kt_copier_main, &c));
	/* Handshake: the copier has been through the mapping once. */
	while (atomic_load(&c.rounds) < 1 && !c.sig)
		sched_yield();
	rounds = atomic_load(&c.rounds);
	KT_OK(kt_free(va));			/* while the copy runs */
	if (!kt.persistent) {
		/* Reuse right away, with data the copier must never see. */
		KT_OK(kt_alloc(va + len, len, off, 0));
		for (size_t i = 0; i < len / 4; i++)
			m.bar[off / 4 + i] = 0xdeadbeef;
		kt_wmb();
	} else {
		/* It goes on copying after the free: two more full passes. */
		while (atomic_load(&c.rounds) < rounds + 2 && !c.sig)
			sched_yield();
		atomic_store(&c.stop, 1);
	}
	pthread_join(t, NULL);
	KT_CHECK(c.bad == 0, "copier saw %ld foreign words", c.bad);
	if (!kt.persistent) {
		KT_CHECK(c.sig == SIGBUS, "copy not stopped by SIGBUS (sig %d, %lu rounds)",
			 c.sig, atomic_load(&c.rounds));
		KT_OK(kt_free(va + len));
	} else {
		KT_CHECK(c.sig == 0, "persistent copy faulted (sig %d)", c.sig);
	}
	KT_OK(munmap((void *)m.map, len));
	KT_OK(kt_unpin(m.fd, m.h));
	close(m.fd);
	kt_bar_unmap(m.bar);
	return 0;
}

struct kt_freer {
	uint64_t va;
	int ret;
};

static void *kt_freer_main(void *arg)
{
	struct kt_freer *f = arg;

	f->ret = kt_free(f->va);
	return NULL;
}

/* Unpin (variant 0), or close and then munmap (variant 1), in a thread. */
struct kt_releaser {
	int variant, fd, ret;
	uint64_t h, len;
	volatile uint32_t *map;
	atomic_int done;
};

static void *kt_releaser_main(void *arg)
{
	struct kt_releaser *r = arg;

	if (r->variant == 0) {
		r->ret = kt_unpin(r->fd, r->h);
	} else {
		close(r->fd);		/* the mapping still holds the file */
		/* close() with a live mapping releases nothing yet. */
		r->ret = kt_stat("pins") == 1 ? 0 : -1;
		if (munmap((void *)r->map, r->len))	/* last reference */
			r->ret = -1;
	}
	atomic_store(&r->done, 1);
	return NULL;
}

/*
 * The free callback is held inside the GPU driver's lock while unpin (or
 * the last close) reaches put_pages, which must wait for the callback and
 * then succeed, with nothing leaked or freed twice.  Ordered by handshakes
 * with the mock: the callback is held, then put_pages has begun, then the
 * callback is let go.
 */
int kt_sc_free_during_unpin(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 24 << 20;

	for (int variant = 0; variant < 2; variant++) {
		struct kt_freer fr = { .va = va };
		struct kt_releaser r = { .variant = variant, .len = len };
		struct mock_probe_args p;
		pthread_t tf, tr;
		uint32_t v;

		r.fd = kt_open();
		KT_CHECK(r.fd >= 0, "open");
		if (kt_alloc_pin_map(r.fd, va, len, off, &r.h, &r.map))
			return -1;
		r.map[0] = 1;
		KT_OK(kt_config_put(0, !kt.persistent));
		KT_OK(kt_probe(&p));
		KT_OK(pthread_create(&tf, NULL, kt_freer_main, &fr));
		if (!kt.persistent)
			KT_OK(kt_wait_cb_held());
		else
			pthread_join(tf, NULL);	/* no callback to hold */
		KT_OK(pthread_create(&tr, NULL, kt_releaser_main, &r));
		if (!kt.persistent) {
			KT_OK(kt_wait_puts_entered(p.puts_entered));
			/* put_pages is blocked behind the held callback. */
			KT_CHECK(!atomic_load(&r.done), "put_pages did not wait for the callback");
			KT_OK(kt_cb_release());
			pthread_join(tf, NULL);
		}
		pthread_join(tr, NULL);
		KT_OK(kt_config(0, 0));
		KT_OK(fr.ret);
		KT_OK(r.ret);
		if (variant == 0) {
			KT_CHECK(kt_try_read(r.map, &v) == SIGBUS, "mapping after unpin");
			KT_OK(munmap((void *)r.map, len));
			close(r.fd);
		} else {
			KT_CHECK(kt_try_read(r.map, &v) == SIGSEGV, "unmapped");
		}
		if (kt.persistent) {
			struct mock_stats_args s;

			KT_OK(kt_mock_stats(&s));
			KT_CHECK(s.zombies == 0 && s.tables == 0, "persistent leftovers");
		}
	}
	return 0;
}

/* A child pins and maps, then leaves in one of three ways. */
static int kt_child_leaves(int how, uint64_t va, uint64_t len, uint64_t off)
{
	volatile uint32_t *map;
	uint64_t h;
	int fd = kt_open();

	if (fd < 0 || kt_alloc(va, len, off, 0) || kt_pin(fd, va, len, &h))
		return 1;
	map = kt_map(fd, h, len);
	if (!map)
		return 1;
	kt_fill(map, len, 77);
	if (how == 0) {
		/* unpin with the mapping live: access faults, munmap works */
		uint32_t v;

		if (kt_unpin(fd, h) || kt_try_read(map, &v) != SIGBUS)
			return 1;
		if (munmap((void *)map, len))
			return 1;
		close(fd);
	} else if (how == 1) {
		/* close with the mapping live: it keeps working until munmap */
		close(fd);
		if (kt_verify(map, len, 77) >= 0 || kt_stat("pins") != 1)
			return 1;
		if (munmap((void *)map, len) || kt_stat("pins") != 0)
			return 1;
	}
	/* how == 2: exit with everything live */
	if (how != 2)
		return kt_free(va) ? 1 : 0;
	return 0;
}

int kt_sc_unpin_close_exit(void)
{
	const uint64_t va = KT_VA_BASE, len = 4 * KT_CHUNK, off = 28 << 20;

	for (int how = 0; how < 3; how++) {
		int status;
		pid_t pid = fork();

		KT_CHECK(pid >= 0, "fork");
		if (!pid)
			_exit(kt_child_leaves(how, va, len, off));
		KT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			 WEXITSTATUS(status) == 0, "child way %d status 0x%x", how, status);
		KT_CHECK(kt_stat("pins") == 0 && kt_stat("mappings") == 0 &&
			 kt_stat("files") == 0, "way %d left pins %lld mappings %lld",
			 how, kt_stat("pins"), kt_stat("mappings"));
		if (how == 2) {
			struct mock_stats_args s;

			KT_OK(kt_mock_stats(&s));
			KT_CHECK(s.tables == 0, "tables after exit");
			/* The GPU memory of the dead child, freed as its driver would. */
			KT_OK(kt_free_of(va, pid));
		}
	}
	return 0;
}
