// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv_mmap.c - CPU mappings of pinned GPU memory.
 *
 * Why the PTEs are filled at the first fault and not in ->mmap:
 * the mmap core links a new VMA into the file's address_space only after
 * ->mmap returns.  A free callback that ran in between would zap through
 * the address_space, miss the not-yet-linked VMA, and leave PTEs pointing
 * at memory the GPU driver is about to reuse.  A fault, by contrast, only
 * happens on a linked VMA and fills it under pin->sem, which the callback
 * takes for writing before it zaps; so every PTE is either zapped by the
 * callback or never created.  A fault maps the 2 MiB window around the
 * faulting page (GDRDRV_FAULT_WINDOW), not the whole VMA: see the fault
 * handler for why the bound matters.
 *
 * Why write-combining survives that: x86 PAT gives PFNs inserted one by
 * one the memtype recorded for their physical range, UC- when none is.
 * So ->mmap reserves WC for each physically contiguous run of the pin
 * (one reservation when the pin is contiguous) before anything is
 * inserted, and the reservation lives as long as the pin's pages.  It is
 * visible in /sys/kernel/debug/x86/pat_memtype_list.  An earlier UC-
 * reservation of the range (someone mapped it through sysfs resource2)
 * does NOT fail the reservation: PAT silently grants UC- instead, and the
 * PTEs become UC-.  The reservation API does not say so; the fault
 * handler reads the PTE it inserted and, if it is not WC, GET_INFO
 * reports the mapping as DEVICE (uncached) from then on.  The same holds
 * for CACHING on x86, where an io range without a WB reservation is UC-.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "gdrdrv.h"
#include "gdrdrv_compat.h"

/*
 * The physically contiguous run of @pt starting at entry *@i; *@i moves
 * past it.  No allocation: a 16 GiB pin alone would need a 4 MiB array.
 */
static void gdrdrv_next_run(const struct nvidia_p2p_page_table *pt, u32 *i,
			    struct gdrdrv_run *run)
{
	run->phys = pt->pages[*i]->physical_address;
	run->size = GDRDRV_GPU_PAGE_SIZE;
	for (++*i; *i < pt->entries &&
	     pt->pages[*i]->physical_address == run->phys + run->size; ++*i)
		run->size += GDRDRV_GPU_PAGE_SIZE;
}

/* Release the first @n runs of @pt.  The page table is still ours. */
static void gdrdrv_runs_release(const struct nvidia_p2p_page_table *pt,
				unsigned long n)
{
	struct gdrdrv_run run;
	u32 i = 0;

	while (n--) {
		gdrdrv_next_run(pt, &i, &run);
		gdrdrv_memtype_free_wc(run.phys, run.size);
		cond_resched();
	}
}

static void gdrdrv_runs_free(struct gdrdrv_pin *pin)
{
	lockdep_assert_held_write(&pin->sem);
	if (!pin->nr_runs)
		return;
	/* Reservations only exist while the page table is ours. */
	if (!WARN_ON_ONCE(!pin->page_table))
		gdrdrv_runs_release(pin->page_table, pin->nr_runs);
	pin->nr_runs = 0;
}

/* Reserve WC for every contiguous run of the page table. */
static int gdrdrv_runs_reserve(struct gdrdrv_pin *pin)
{
	const struct nvidia_p2p_page_table *pt = pin->page_table;
	struct gdrdrv_run run;
	unsigned long n = 0;
	u32 i = 0;
	int ret;

	lockdep_assert_held_write(&pin->sem);
	if (pin->nr_runs)
		return 0;
	while (i < pt->entries) {
		gdrdrv_next_run(pt, &i, &run);
		ret = gdrdrv_memtype_reserve_wc(run.phys, run.size);
		if (ret) {
			pr_err_ratelimited(GDRDRV_NAME ": cannot reserve WC for %pa+0x%llx: %d\n",
					   &run.phys, run.size, ret);
			gdrdrv_runs_release(pt, n);
			return ret;
		}
		n++;
		cond_resched();
	}
	pin->nr_runs = n;
	return 0;
}

/*
 * Make every CPU mapping of @pin fault from now on and drop the WC
 * reservation.  pin->sem held for writing; the caller has already moved
 * nv_state away from PINNED or is about to, under the same hold.
 */
void gdrdrv_pin_revoke_cpu_locked(struct gdrdrv_pin *pin)
{
	if (pin->map_count)
		unmap_mapping_range(&pin->file->mapping,
				    (loff_t)pin->handle << PAGE_SHIFT,
				    (loff_t)pin->npages << PAGE_SHIFT, 1);
	gdrdrv_runs_free(pin);
}

static bool gdrdrv_pin_cacheable(const struct gdrdrv_pin *pin)
{
#ifdef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
	return pin->page_table &&
	       (pin->page_table->flags & NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE);
#else
	return false;
#endif
}

bool gdrdrv_mapping_type_supported(const struct gdrdrv_pin *pin, u32 type)
{
	switch (type) {
	case GDRDRV_MAPPING_NONE:
	case GDRDRV_MAPPING_WC:
		return true;
	case GDRDRV_MAPPING_CACHING:
		return gdrdrv_pin_cacheable(pin);
	default:
		/* DEVICE is for hosts that cannot do WC on PCIe; not ours. */
		return false;
	}
}

/* Map the page of @vma at @addr to its GPU page.  pin->sem held. */
static vm_fault_t gdrdrv_insert(struct gdrdrv_pin *pin,
				struct vm_area_struct *vma, unsigned long addr)
{
	u64 off = ((u64)(vma->vm_pgoff - pin->handle) << PAGE_SHIFT) +
		  (addr - vma->vm_start);
	const struct nvidia_p2p_page *pg =
		pin->page_table->pages[off >> GDRDRV_GPU_PAGE_SHIFT];
	u64 phys = pg->physical_address + (off & (GDRDRV_GPU_PAGE_SIZE - 1));

	lockdep_assert_held(&pin->sem);
	return vmf_insert_pfn_prot(vma, addr, PHYS_PFN(phys),
				   vma->vm_page_prot);
}

static vm_fault_t gdrdrv_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gdrdrv_pin *pin = vma->vm_private_data;
	unsigned long fault = vmf->address & PAGE_MASK;
	unsigned long start, end, addr, n = 1;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&pin->sem);
	/* Revoked, unpinned or closed: the access fails, nothing is mapped. */
	if (pin->nv_state != GDRDRV_NV_PINNED)
		goto out;
	/* Only the faulting page's own error fails the access. */
	ret = gdrdrv_insert(pin, vma, fault);
	if (ret & VM_FAULT_ERROR)
		goto out;
	/* Let GET_INFO tell the truth if PAT changed the type (see above). */
	if (!READ_ONCE(pin->type_lost) &&
	    !gdrdrv_pte_type_is(vma->vm_mm, fault, pin->map_type)) {
		pr_warn_ratelimited(GDRDRV_NAME ": mapping of va 0x%llx (type %u) got an uncached memory type\n",
				    pin->va, pin->map_type);
		WRITE_ONCE(pin->type_lost, true);
	}
	/*
	 * Its window is filled too, so that a linear walk costs one fault per
	 * window; the bound keeps pin->sem short, so a free callback (which
	 * blocks the GPU driver until it gets the lock) waits for one window,
	 * not for a whole multi-GiB VMA.  A failed neighbour stays unmapped
	 * and reports its error when it is touched.
	 */
	start = max(vma->vm_start, ALIGN_DOWN(fault, GDRDRV_FAULT_WINDOW));
	end = min(vma->vm_end, ALIGN_DOWN(fault, GDRDRV_FAULT_WINDOW) +
			       GDRDRV_FAULT_WINDOW);
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		if (addr == fault)
			continue;
		if (gdrdrv_insert(pin, vma, addr) & VM_FAULT_ERROR)
			break;
		n++;
	}
	atomic64_add(n, &gdrdrv_stats.faulted_pages);
	gdrdrv_dbg("fault at 0x%lx of handle 0x%lx: %lu pages mapped\n", fault,
		   pin->handle, n);
	ret = VM_FAULT_NOPAGE;
out:
	up_read(&pin->sem);
	return ret;
}

/* A VMA was split or copied (not on fork: VM_DONTCOPY). */
static void gdrdrv_vm_open(struct vm_area_struct *vma)
{
	struct gdrdrv_pin *pin = vma->vm_private_data;

	gdrdrv_pin_hold(pin);
	down_write(&pin->sem);
	pin->map_count++;
	up_write(&pin->sem);
	atomic64_inc(&gdrdrv_stats.mappings);
}

static void gdrdrv_vm_close(struct vm_area_struct *vma)
{
	struct gdrdrv_pin *pin = vma->vm_private_data;

	down_write(&pin->sem);
	if (!--pin->map_count) {
		pin->map_type = GDRDRV_MAPPING_NONE;
		pin->type_lost = false;
	}
	up_write(&pin->sem);
	atomic64_dec(&gdrdrv_stats.mappings);
	gdrdrv_pin_put(pin);
}

static const struct vm_operations_struct gdrdrv_vm_ops = {
	.open	= gdrdrv_vm_open,
	.close	= gdrdrv_vm_close,
	.fault	= gdrdrv_vm_fault,
};

static int gdrdrv_mmap_pin(struct gdrdrv_pin *pin, struct vm_area_struct *vma)
{
	unsigned long pages = vma_pages(vma);
	u32 type;
	int ret;

	if (pin->nv_state != GDRDRV_NV_PINNED)
		return -EINVAL;		/* revoked by the free callback */
	if (pin->map_count)
		return -EINVAL;		/* one mapping per pin, as in gdrcopy */
	if (pin->va_offset)
		return -EINVAL;		/* pinned address not 64 KiB aligned */
	if (pages > pin->npages)
		return -EINVAL;

	type = pin->req_type;
	if (type == GDRDRV_MAPPING_NONE)
		type = gdrdrv_pin_cacheable(pin) ? GDRDRV_MAPPING_CACHING :
						   GDRDRV_MAPPING_WC;
	if (!gdrdrv_mapping_type_supported(pin, type))
		return -EINVAL;
	vma->vm_page_prot = gdrdrv_pgprot_io(vma->vm_page_prot);
	if (type == GDRDRV_MAPPING_WC) {
		ret = gdrdrv_runs_reserve(pin);
		if (ret)
			return ret;
		vma->vm_page_prot = gdrdrv_pgprot_wc(vma->vm_page_prot);
	}

	/*
	 * IO|PFNMAP: no struct pages, no GUP, so nothing can keep the pages
	 * past a revocation.  DONTCOPY: a fork child never sees them.
	 * DONTEXPAND: mremap cannot grow past the pin.
	 */
	gdrdrv_vma_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTCOPY |
			     VM_DONTEXPAND | VM_DONTDUMP, VM_MAYEXEC);
	vma->vm_ops = &gdrdrv_vm_ops;
	vma->vm_private_data = pin;
	pin->map_count = 1;
	pin->map_type = type;
	return 0;
}

int gdrdrv_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct gdrdrv_file *f = filp->private_data;
	struct gdrdrv_pin *pin;
	int ret;

	if (!gdrdrv_caller_is_owner(f))
		return gdrdrv_count_error(-EACCES);
	/*
	 * A private mapping would be a COW mapping of device memory.  Test
	 * MAYSHARE, not SHARED: the core clears VM_SHARED of a MAP_SHARED
	 * mapping of an O_RDONLY file, which is legitimately read-only.
	 */
	if (!(vma->vm_flags & VM_MAYSHARE) || (vma->vm_flags & VM_EXEC))
		return gdrdrv_count_error(-EINVAL);

	pin = gdrdrv_pin_get(f, vma->vm_pgoff);
	if (!pin)
		return gdrdrv_count_error(-EINVAL);

	down_write(&pin->sem);
	ret = gdrdrv_mmap_pin(pin, vma);
	up_write(&pin->sem);
	if (ret) {
		gdrdrv_pin_put(pin);
		return gdrdrv_count_error(ret);
	}
	/* The lookup reference now belongs to the VMA. */
	atomic64_inc(&gdrdrv_stats.mappings);
	return 0;
}
