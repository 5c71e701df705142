/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * gdrdrv_compat.h - every kernel-version and NVIDIA-flavour difference
 * gdrdrv cares about, in one place.  Supported kernels: 5.10 .. 6.18
 * (CI builds 5.10, 6.1 and 6.12 and boots 6.1 and 6.12).
 *
 * Rule for this file: the rest of the module calls only the gdrdrv_*()
 * helpers below.  API differences are found by Kbuild compile probes
 * (GDRDRV_HAVE_*, see Kbuild), never by LINUX_VERSION_CODE: enterprise
 * kernels backport APIs without changing their version.
 */
#ifndef GDRDRV_COMPAT_H
#define GDRDRV_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/io.h>
#include <linux/mem_encrypt.h>

#include "gdrdrv_nv.h"	/* GDRDRV_NV_GPL_OK */
#include "gdrdrv_ioctl.h"	/* GDRDRV_MAPPING_* */

/* The oldest kernel built in CI (Debian 11); RHEL 9 and SLES 15 SP4+ are 5.14. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 10, 0)
#error "gdrdrv needs Linux 5.10 or newer"
#endif

/* Handles, offsets and the ABI's layouts assume a 64-bit kernel. */
#if BITS_PER_LONG != 64
#error "gdrdrv needs a 64-bit kernel"
#endif

/*
 * vm_flags became read-only in 6.3; vm_flags_set()/vm_flags_clear() are
 * the only way to change them there and do not exist in older kernels
 * without the backport (probed).  Called from ->mmap with mmap_lock held
 * for writing.
 */
static inline void gdrdrv_vma_flags_set(struct vm_area_struct *vma,
					unsigned long set, unsigned long clear)
{
#ifdef GDRDRV_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, set);
	vm_flags_clear(vma, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/*
 * Write-combined protection bits.
 *
 * With the proprietary NVIDIA flavour every symbol gdrdrv imports must be
 * a plain EXPORT_SYMBOL: a module that uses GPL-only symbols may not link
 * against a proprietary module (the kernel refuses to load it), and on x86
 * pgprot_writecombine() is EXPORT_SYMBOL_GPL.  Linux programs PAT entry 1
 * (PWT set, PCD and PAT clear) as write-combining on every x86 CPU with
 * PAT, so setting the PWT bit alone selects WC.  Besides, the PFN
 * insertion path overwrites the cache bits with the memtype reserved for
 * the range (gdrdrv reserves WC), so this value only has to agree.
 */
static inline pgprot_t gdrdrv_pgprot_wc(pgprot_t prot)
{
#if defined(CONFIG_X86) && !defined(GDRDRV_NV_GPL_OK)
	return __pgprot((pgprot_val(prot) & ~(pgprotval_t)_PAGE_CACHE_MASK) |
			_PAGE_PWT);
#else
	return pgprot_writecombine(prot);
#endif
}

/*
 * BAR memory is never encrypted: clear the memory-encryption bit of the
 * PTEs on SME/SEV/TDX hosts, as the kernel's own io mappings do.  On x86
 * pgprot_decrypted() calls the GPL-only cc_mkdec() since 5.18; the
 * proprietary flavour clears the SME/SEV C-bit (sme_me_mask, a plain
 * export) and cannot set TDX's shared bit (docs/gdrdrv.md).
 */
static inline pgprot_t gdrdrv_pgprot_io(pgprot_t prot)
{
#if defined(CONFIG_X86) && !defined(GDRDRV_NV_GPL_OK)
	return __pgprot(__sme_clr(pgprot_val(prot)));
#else
	return pgprot_decrypted(prot);
#endif
}

/*
 * PAT memtype reservation of a physical range as write-combining.  Both
 * are plain exports on x86 and no-ops elsewhere.  Available in every
 * supported kernel under these names.
 */
static inline int gdrdrv_memtype_reserve_wc(phys_addr_t start, u64 size)
{
	return arch_io_reserve_memtype_wc(start, size);
}

static inline void gdrdrv_memtype_free_wc(phys_addr_t start, u64 size)
{
	arch_io_free_memtype_wc(start, size);
}

/*
 * Whether the PTE that maps @addr in @mm has the memory type of mapping
 * @type (WC or CACHING).  On x86, PAT silently gives an io range UC- when
 * an earlier mapping reserved it so (e.g. through sysfs resource2), and an
 * unreserved io range UC- whatever was asked: only the PTE tells what was
 * granted.  Linux programs PAT entry 0 as WB and entry 1 as WC (see
 * gdrdrv_pgprot_wc()).  Only inline page-table helpers are used, so the
 * proprietary flavour can do it too.  The caller holds the mmap lock or
 * the VMA's lock, so the page tables cannot go away under the walk.
 * Elsewhere, and where the walk finds nothing, the answer is "yes".
 */
static inline bool gdrdrv_pte_type_is(struct mm_struct *mm, unsigned long addr,
				      u32 type)
{
#if defined(CONFIG_X86)
	pgd_t *pgd = pgd_offset(mm, addr);
	pteval_t bits;
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;
	pte_t pte;

	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return true;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return true;
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud) || pud_bad(*pud))
		return true;
	pmd = pmd_offset(pud, addr);
	if (pmd_none(*pmd) || pmd_bad(*pmd))
		return true;
	pte = *pte_offset_kernel(pmd, addr);
	if (!pte_present(pte))
		return true;
	bits = pte_flags(pte) & (_PAGE_PWT | _PAGE_PCD | _PAGE_PAT);
	return bits == (type == GDRDRV_MAPPING_WC ? _PAGE_PWT : 0);
#else
	return true;
#endif
}

/* CPU clock for the deprecated tsc_khz field of GET_INFO. */
#if defined(CONFIG_X86)
#include <asm/tsc.h>
static inline u32 gdrdrv_tsc_khz(void)
{
	return tsc_khz;
}
#else
static inline u32 gdrdrv_tsc_khz(void)
{
	return 0;
}
#endif

#endif /* GDRDRV_COMPAT_H */
