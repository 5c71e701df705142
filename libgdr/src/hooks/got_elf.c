/*
 * got_elf.c - find an object's GOT slots for named symbols, and rewrite
 * a slot even when RELRO made its page read-only.
 *
 * SPDX-License-Identifier: MIT
 */
#include "got_elf.h"
#include "proc_maps.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 64-bit RELA targets only (ELF64_R_* below). */
#if defined(__x86_64__)
#define GOT_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define GOT_R_GLOB_DAT  R_X86_64_GLOB_DAT
#define GOT_R_ABS64     R_X86_64_64
#elif defined(__aarch64__)
#define GOT_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GOT_R_GLOB_DAT  R_AARCH64_GLOB_DAT
#define GOT_R_ABS64     R_AARCH64_ABS64
#endif

bool gdrx_got_elf_contains(const struct dl_phdr_info *info, const void *addr)
{
    uintptr_t a = (uintptr_t)addr;

    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && a >= start && a - start < ph->p_memsz)
            return true;
    }
    return false;
}

/* Dynamic-section pointers: glibc rewrites most of them to run-time
 * addresses in place, but not when .dynamic is read-only (some linkers,
 * some architectures).  A value already inside the object is relocated. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) ptr)
{
    if (gdrx_got_elf_contains(info, (const void *)(uintptr_t)ptr))
        return ptr;
    return info->dlpi_addr + ptr;
}

struct dyn_tables {
    const ElfW(Sym) *symtab;
    const char      *strtab;
    size_t           strsz;
    const ElfW(Rela) *tab[2]; /* DT_JMPREL (if RELA), DT_RELA */
    size_t           len[2];  /* in entries */
};

static bool read_dynamic(const struct dl_phdr_info *info, struct dyn_tables *t)
{
    const ElfW(Dyn) *dyn = NULL;
    size_t pltrelsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
    ElfW(Addr) jmprel = 0, rela = 0;
    long pltrel = DT_RELA;

    memset(t, 0, sizeof(*t));
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return false; /* static executable or odd object: nothing imported */

    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:   t->symtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB:   t->strtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_STRSZ:    t->strsz = dyn->d_un.d_val; break;
        case DT_JMPREL:   jmprel = dyn->d_un.d_ptr; break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL:   pltrel = (long)dyn->d_un.d_val; break;
        case DT_RELA:     rela = dyn->d_un.d_ptr; break;
        case DT_RELASZ:   relasz = dyn->d_un.d_val; break;
        case DT_RELAENT:  relaent = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!t->symtab || !t->strtab || relaent != sizeof(ElfW(Rela)))
        return false;
    /* DT_PLTREL says whether DT_JMPREL holds REL or RELA entries; only RELA
     * is used on the 64-bit targets we support. */
    if (jmprel && pltrel == DT_RELA) {
        t->tab[0] = (const void *)dyn_addr(info, jmprel);
        t->len[0] = pltrelsz / sizeof(ElfW(Rela));
    }
    if (rela) {
        t->tab[1] = (const void *)dyn_addr(info, rela);
        t->len[1] = relasz / sizeof(ElfW(Rela));
    }
    return true;
}

int gdrx_got_elf_walk(const struct dl_phdr_info *info, gdrx_got_visit_fn fn, void *arg)
{
#ifndef GOT_R_JUMP_SLOT
    (void)info; (void)fn; (void)arg;
    return -ENOTSUP;
#else
    struct dyn_tables t;

    if (!read_dynamic(info, &t))
        return 0;
    /* The symbol index comes straight from the relocation, so no hash
     * table (DT_HASH / DT_GNU_HASH) is needed.  JMPREL may lie inside the
     * RELA range; visiting a slot twice is harmless for the callers. */
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < t.len[k]; i++) {
            const ElfW(Rela) *r = &t.tab[k][i];
            unsigned long type = ELF64_R_TYPE(r->r_info);
            size_t sym = ELF64_R_SYM(r->r_info);
            ElfW(Word) off;

            if (sym == 0)
                continue;
            if (type != GOT_R_JUMP_SLOT && type != GOT_R_GLOB_DAT &&
                !(type == GOT_R_ABS64 && r->r_addend == 0))
                continue;
            off = t.symtab[sym].st_name;
            if (t.strsz && off >= t.strsz)
                continue;
            fn((void **)(info->dlpi_addr + r->r_offset), t.strtab + off, arg);
        }
    }
    return 0;
#endif
}

/* The page is read-only when the object's RELRO segment covers it (the
 * loader protects whole pages inside it) or its PT_LOAD is not writable;
 * /proc/self/maps then confirms, because an object still being relocated
 * in another thread has not had its RELRO applied yet. */
static bool maybe_readonly(const struct dl_phdr_info *info, uintptr_t a, size_t page)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;

        if (ph->p_type == PT_GNU_RELRO) {
            start &= ~(page - 1);
            end &= ~(page - 1);
            if (a >= start && a < end)
                return true;
        } else if (ph->p_type == PT_LOAD && a >= start && a < end && !(ph->p_flags & PF_W)) {
            return true;
        }
    }
    return false;
}

int gdrx_got_elf_write(const struct dl_phdr_info *info, void **slot, void *value)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)slot;
    void *pg = (void *)(a & ~(page - 1));
    int prot = PROT_READ | PROT_WRITE;

    if (a % sizeof(void *))
        return -EINVAL;
    if (maybe_readonly(info, a, page)) {
        prot = gdrx_maps_prot(a);
        if (prot < 0)
            return prot;
    }
    if (!(prot & PROT_WRITE) && mprotect(pg, page, prot | PROT_WRITE) != 0)
        return -errno;
    /* One aligned pointer store: a thread calling through the slot sees
     * either the old or the new target, never a torn one. */
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (!(prot & PROT_WRITE) && mprotect(pg, page, prot) != 0)
        return -errno;
    return 0;
}
