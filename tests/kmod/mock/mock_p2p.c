// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * mock_p2p.c - a test double of the NVIDIA driver's P2P interface, for
 * the gdrdrv kernel tests under qemu.  Never installed.
 *
 * It exports the nvidia_p2p_* calls gdrdrv uses and hands out page tables
 * of 64 KiB pages that live in BAR2 of a qemu ivshmem-plain device: real
 * non-RAM PCI memory, so gdrdrv's write-combined mappings go through PAT
 * exactly as they would for a GPU's BAR1.
 *
 * Behaviour copied from the real driver (facts from its nv-p2p.c):
 *   - free callbacks run with the driver's lock held (mock_lock here), and
 *     put_pages takes that lock, so put_pages waits for a running callback;
 *   - after a callback the page table is freed by the driver; put_pages on
 *     it then reports success; nvidia_p2p_free_page_table() frees nothing;
 *   - persistent pins are never called back and keep the memory out of
 *     circulation until put_pages_persistent, even after the "cudaFree".
 * It also records misuse (puts of unknown tables, free_page_table outside
 * a callback) so the tests can insist that gdrdrv made none.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/uaccess.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "mock_internal.h"

/* Plays the GPU driver's lock: held while free callbacks run. */
DEFINE_MUTEX(mock_lock);
LIST_HEAD(mock_allocs);
static LIST_HEAD(mock_tables);
struct mock_stats_args mock_stats;
static struct mock_table *mock_cb_table;	/* table being called back */
u32 mock_cb_delay_ms;
int mock_fail_next_get;
bool mock_free_in_next_get;
int mock_fail_next_put;
/* Callback holding: lockless, so CB_RELEASE and PROBE work meanwhile. */
bool mock_cb_hold;
DECLARE_WAIT_QUEUE_HEAD(mock_cb_wq);
atomic64_t mock_cb_held, mock_puts_entered;
static struct pci_dev *mock_pdev;
u64 mock_bar_phys, mock_bar_size;
static u64 mock_chunk_phys(const struct mock_alloc *a, u64 idx)
{
	u64 n = a->size / MOCK_NVP2P_CHUNK;

	if (a->flags & MOCK_ALLOC_ALIAS)
		return mock_bar_phys +
		       (a->bar_off + idx * MOCK_NVP2P_CHUNK) % mock_bar_size;
	if (a->flags & MOCK_ALLOC_SCATTER)
		idx = n - 1 - idx;
	return mock_bar_phys + a->bar_off + idx * MOCK_NVP2P_CHUNK;
}

/* The BAR bytes @a claims: an alias claims all of it. */
u64 mock_bar_span(const struct mock_alloc *a)
{
	return a->flags & MOCK_ALLOC_ALIAS ? mock_bar_size : a->size;
}

static struct mock_alloc *mock_find_alloc(pid_t tgid, u64 va, u64 len)
{
	struct mock_alloc *a;

	list_for_each_entry(a, &mock_allocs, node)
		if (!a->freed && a->va && a->tgid == tgid && va >= a->va &&
		    len <= a->size && va - a->va <= a->size - len)
			return a;
	return NULL;
}

static struct mock_table *mock_find_table(const struct nvidia_p2p_page_table *pt)
{
	struct mock_table *t;

	list_for_each_entry(t, &mock_tables, node)
		if (&t->pt == pt)
			return t;
	return NULL;
}

static void mock_table_free(struct mock_table *t)
{
	kvfree(t->ptrs);
	kvfree(t->pagev);
	kfree(t);
}

static struct mock_table *mock_table_new(u64 entries)
{
	struct mock_table *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	/* An aliased allocation may have millions of entries. */
	t->pagev = kvcalloc(entries, sizeof(*t->pagev), GFP_KERNEL);
	t->ptrs = kvcalloc(entries, sizeof(*t->ptrs), GFP_KERNEL);
	if (!t->pagev || !t->ptrs) {
		mock_table_free(t);
		return NULL;
	}
	return t;
}

/* Drop a table from its allocation; a freed one goes with its last table. */
static void mock_unlink_table(struct mock_table *t)
{
	struct mock_alloc *a = t->alloc;

	list_del(&t->node);
	mock_stats.tables--;
	if (t->persistent)
		mock_stats.persistent_tables--;
	if (!--a->nr_tables && a->freed) {
		list_del(&a->node);
		kfree(a);
	}
}

/*
 * With cb_hold set, wait for CB_RELEASE.  The bound only keeps a broken
 * test from hanging the guest; reaching it counts as misuse.
 */
static void mock_cb_wait(void)
{
	if (!READ_ONCE(mock_cb_hold))
		return;
	atomic64_inc(&mock_cb_held);
	if (!wait_event_timeout(mock_cb_wq, !READ_ONCE(mock_cb_hold), 60 * HZ))
		mock_stats.misuse++;
	atomic64_dec(&mock_cb_held);
}

/*
 * "cudaFree": run the free callback of every callback table of @a, each
 * after the configured delay and with mock_lock held, then free the
 * tables.  Persistent tables keep the allocation (and its BAR range).
 */
void mock_free_locked(struct mock_alloc *a)
{
	struct mock_table *t, *tmp;

	a->freed = true;
	list_for_each_entry_safe(t, tmp, &mock_tables, node) {
		if (t->alloc != a || t->persistent)
			continue;
		list_del(&t->node);
		mock_stats.tables--;
		a->nr_tables--;
		if (mock_cb_delay_ms)
			msleep(mock_cb_delay_ms);
		mock_cb_wait();
		WRITE_ONCE(mock_cb_table, t);
		t->cb(t->data);
		WRITE_ONCE(mock_cb_table, NULL);
		mock_stats.callbacks++;
		/* The driver frees the table after the callback returns. */
		mock_table_free(t);
	}
	if (!a->nr_tables) {
		list_del(&a->node);
		kfree(a);
	}
}

static int mock_get(u64 va, u64 len, struct nvidia_p2p_page_table **ppt,
		    void (*cb)(void *), void *data, bool persistent)
{
	struct mock_alloc *a;
	struct mock_table *t;
	u64 i, n;
	int ret;

	/* mock_find_alloc() bounds len by the allocation's size. */
	if (!ppt || !len || ((va | len) & (MOCK_NVP2P_CHUNK - 1)) ||
	    va + len < va)
		return -EINVAL;
	n = len / MOCK_NVP2P_CHUNK;
	t = mock_table_new(n);
	if (!t)
		return -ENOMEM;

	mutex_lock(&mock_lock);
	if (mock_fail_next_get) {
		ret = mock_fail_next_get;
		mock_fail_next_get = 0;
		goto fail;
	}
	a = mock_find_alloc(current->tgid, va, len);
	if (!a) {
		ret = -EINVAL;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		t->pagev[i].physical_address =
			mock_chunk_phys(a, (va - a->va) / MOCK_NVP2P_CHUNK + i);
		t->ptrs[i] = &t->pagev[i];
	}
	memset(t->uuid, 0x5a, sizeof(t->uuid));
	t->pt.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	t->pt.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	t->pt.pages = t->ptrs;
	t->pt.entries = n;
	t->pt.gpu_uuid = t->uuid;
	if (a->flags & MOCK_ALLOC_CACHEABLE)
		t->pt.flags = NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE;
	t->alloc = a;
	t->cb = cb;
	t->data = data;
	t->persistent = persistent;
	t->va = va;
	list_add_tail(&t->node, &mock_tables);
	a->nr_tables++;
	mock_stats.tables++;
	if (persistent)
		mock_stats.persistent_tables++;
	mock_stats.gets++;
	*ppt = &t->pt;
	if (cb && mock_free_in_next_get) {
		/*
		 * The owner frees the memory the moment the pin is registered:
		 * the caller gets a page table that is already gone.
		 */
		mock_free_in_next_get = false;
		mock_free_locked(a);
	}
	mutex_unlock(&mock_lock);
	return 0;

fail:
	mutex_unlock(&mock_lock);
	mock_table_free(t);
	return ret;
}

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	if (!free_callback)
		return -EINVAL;
	return mock_get(virtual_address, length, page_table, free_callback,
			data, false);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table,
				    uint32_t flags)
{
	if (flags & ~(u32)NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING)
		return -EINVAL;
	return mock_get(virtual_address, length, page_table, NULL, NULL, true);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

static int mock_put(uint64_t va, struct nvidia_p2p_page_table *pt,
		    bool persistent)
{
	struct mock_table *t;
	int ret = 0;

	atomic64_inc(&mock_puts_entered);
	/* Waits here while a free callback runs, like the real driver. */
	mutex_lock(&mock_lock);
	t = mock_find_table(pt);
	if (mock_fail_next_put) {
		/* The registration stays; a later free calls it back. */
		ret = mock_fail_next_put;
		mock_fail_next_put = 0;
	} else if (!t) {
		/* Unknown: fine only for a callback table already revoked. */
		if (persistent) {
			mock_stats.misuse++;
			ret = -EINVAL;
		}
	} else if (t->persistent != persistent || t->va != va) {
		mock_stats.misuse++;
		ret = -EINVAL;
	} else {
		mock_unlink_table(t);
		mock_table_free(t);
		mock_stats.puts++;
	}
	mutex_unlock(&mock_lock);
	return ret;
}

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return mock_put(virtual_address, page_table, false);
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    uint32_t flags)
{
	if (flags) {
		mutex_lock(&mock_lock);
		mock_stats.misuse++;
		mutex_unlock(&mock_lock);
		return -EINVAL;
	}
	return mock_put(virtual_address, page_table, true);
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

/* Legal only from inside the free callback of that very table. */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct mock_table *t = READ_ONCE(mock_cb_table);

	if (!t || page_table != &t->pt) {
		/* mock_lock is held by the running callback's dispatcher. */
		mock_stats.misuse++;
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

/* qemu's ivshmem-plain: Red Hat vendor id, shared memory in BAR2. */
#define MOCK_IVSHMEM_VENDOR	0x1af4
#define MOCK_IVSHMEM_DEVICE	0x1110
#define MOCK_IVSHMEM_BAR	2

static int __init mock_init(void)
{
	int ret;

	mock_pdev = pci_get_device(MOCK_IVSHMEM_VENDOR, MOCK_IVSHMEM_DEVICE,
				   NULL);
	if (!mock_pdev) {
		pr_err(MOCK_NAME ": no ivshmem device\n");
		return -ENODEV;
	}
	ret = pci_enable_device_mem(mock_pdev);
	if (ret)
		goto put;
	mock_bar_phys = pci_resource_start(mock_pdev, MOCK_IVSHMEM_BAR);
	mock_bar_size = pci_resource_len(mock_pdev, MOCK_IVSHMEM_BAR);
	if (!mock_bar_phys || mock_bar_size < MOCK_NVP2P_CHUNK ||
	    (mock_bar_phys & (MOCK_NVP2P_CHUNK - 1))) {
		ret = -ENODEV;
		goto disable;
	}
	ret = mock_ctl_register();
	if (ret)
		goto disable;
	pr_info(MOCK_NAME ": BAR at 0x%llx, %llu MiB\n", mock_bar_phys,
		mock_bar_size >> 20);
	return 0;

disable:
	pci_disable_device(mock_pdev);
put:
	pci_dev_put(mock_pdev);
	return ret;
}

static void __exit mock_exit(void)
{
	struct mock_table *t, *tt;
	struct mock_alloc *a, *ta;

	mock_ctl_unregister();
	/* gdrdrv depends on us, so it is gone; what is left was leaked. */
	list_for_each_entry_safe(t, tt, &mock_tables, node) {
		pr_err(MOCK_NAME ": leaked page table va 0x%llx\n", t->va);
		list_del(&t->node);
		mock_table_free(t);
	}
	list_for_each_entry_safe(a, ta, &mock_allocs, node) {
		list_del(&a->node);
		kfree(a);
	}
	pci_disable_device(mock_pdev);
	pci_dev_put(mock_pdev);
}

module_init(mock_init);
module_exit(mock_exit);

MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdrx tests: mock NVIDIA P2P provider on an ivshmem BAR");
