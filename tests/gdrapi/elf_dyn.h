/*
 * elf_dyn.h - the dynamic-linking facts of an ELF64 file that the ABI
 * suite checks: DT_SONAME and DT_NEEDED, whether it defines symbol
 * versions, and its dynamic symbols with their version index.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_ELF_DYN_H
#define GDRX_ELF_DYN_H

#include <stddef.h>

struct elf_dyn;

/* Read path; NULL if it is not a readable ELF64 file with a dynamic
 * section. */
struct elf_dyn *elf_dyn_open(const char *path);
void elf_dyn_close(struct elf_dyn *e);

/* DT_SONAME, or NULL. */
const char *elf_dyn_soname(const struct elf_dyn *e);
/* Whether DT_NEEDED names `lib`. */
int elf_dyn_needs(const struct elf_dyn *e, const char *lib);
/* Whether the file defines symbol versions (a .gnu.version_d section). */
int elf_dyn_has_verdef(const struct elf_dyn *e);

struct elf_sym {
    const char *name;
    int         defined;  /* st_shndx != SHN_UNDEF */
    int         global;   /* STB_GLOBAL or STB_WEAK */
    int         function; /* STT_FUNC (else data or other) */
    int         version;  /* .gnu.version index, hidden bit cleared; -1: none */
};

/* The i-th dynamic symbol (i from 1); 0, or -1 past the last. */
int elf_dyn_sym(const struct elf_dyn *e, size_t i, struct elf_sym *out);

#endif /* GDRX_ELF_DYN_H */
