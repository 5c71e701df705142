/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * mock_internal.h - state shared by the two halves of the mock NVIDIA P2P
 * provider: mock_p2p.c (the nvidia_p2p_* API, the module) and mock_ctl.c
 * (/dev/mock_nvp2p, the tests' control device).  mock_lock plays the GPU
 * driver's lock and protects everything below unless marked otherwise.
 */
#ifndef MOCK_INTERNAL_H
#define MOCK_INTERNAL_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/atomic.h>

#include "nv-p2p.h"
#include "mock_nvp2p_ioctl.h"

#define MOCK_NAME "mock_nvp2p"

struct mock_alloc {
	struct list_head node;
	pid_t tgid;
	u64 va, size, bar_off;
	u32 flags;
	bool freed;			/* "cudaFree"d; kept while pinned */
	/* CARVE: the file it was carved through, freed when its owner
	 * closes that file; NULL for ALLOC.  Only compared, never used. */
	const struct file *carved_by;
	unsigned int nr_tables;
};

struct mock_table {
	struct list_head node;
	struct mock_alloc *alloc;
	struct nvidia_p2p_page_table pt;
	struct nvidia_p2p_page *pagev;
	struct nvidia_p2p_page **ptrs;
	u8 uuid[16];
	void (*cb)(void *data);
	void *data;
	bool persistent;
	u64 va;
};

extern struct mutex mock_lock;
extern struct list_head mock_allocs;
extern struct mock_stats_args mock_stats;
extern u32 mock_cb_delay_ms;
extern int mock_fail_next_get;
extern bool mock_free_in_next_get;
extern int mock_fail_next_put;
/* Callback holding: lockless (READ_ONCE/WRITE_ONCE, atomics). */
extern bool mock_cb_hold;
extern wait_queue_head_t mock_cb_wq;
extern atomic64_t mock_cb_held, mock_puts_entered;
/* Set once at init. */
extern u64 mock_bar_phys, mock_bar_size;

u64 mock_bar_span(const struct mock_alloc *a);
void mock_free_locked(struct mock_alloc *a);	/* mock_lock held */

int mock_ctl_register(void);
void mock_ctl_unregister(void);

#endif /* MOCK_INTERNAL_H */
