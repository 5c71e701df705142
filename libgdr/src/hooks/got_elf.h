/*
 * got_elf.h - internal to got_import.c: walk one loaded object's GOT
 * relocations and rewrite a slot safely.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every function here takes the dl_phdr_info that dl_iterate_phdr() passed
 * to its callback and must be called from inside that callback: the
 * dynamic linker then holds its list lock, so the object cannot be
 * unmapped under us.  Nothing here calls dlopen/dlsym/dladdr (they take the
 * loader's other lock, in the opposite order).
 */
#ifndef GDRX_GOT_ELF_H
#define GDRX_GOT_ELF_H

#include <link.h>
#include <stdbool.h>

/* Called for each GOT slot of the object that a JUMP_SLOT, GLOB_DAT or
 * zero-addend absolute relocation binds to symbol `name`. */
typedef void (*gdrx_got_visit_fn)(void **slot, const char *name, void *arg);

/* Visit the slots of the object's DT_JMPREL and DT_RELA tables (RELA only).
 * Returns 0, or -ENOTSUP on an architecture whose relocation types we do
 * not know (nothing visited). */
int gdrx_got_elf_walk(const struct dl_phdr_info *info, gdrx_got_visit_fn fn, void *arg);

/* Store value in *slot, making its page writable for the store when it is
 * read-only (RELRO) and restoring the protection afterwards.  0 or -errno. */
int gdrx_got_elf_write(const struct dl_phdr_info *info, void **slot, void *value);

/* Whether addr lies in one of the object's PT_LOAD segments. */
bool gdrx_got_elf_contains(const struct dl_phdr_info *info, const void *addr);

#endif /* GDRX_GOT_ELF_H */
