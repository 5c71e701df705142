/*
 * elf_dyn.c - a reader of the dynamic symbol table and dynamic section of
 * an ELF64 file (the suites run on x86-64 only), with every offset checked
 * against the file's size.
 *
 * SPDX-License-Identifier: MIT
 */
#include "elf_dyn.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf_dyn {
    const unsigned char *base;
    size_t               size;
    const Elf64_Dyn     *dyn;
    size_t               ndyn;
    const char          *dynstr;   /* string table of the dynamic section */
    size_t               dynstr_size;
    const Elf64_Sym     *syms;
    size_t               nsyms;
    const char          *symstr;   /* string table of .dynsym */
    size_t               symstr_size;
    const Elf64_Half    *versym;   /* NULL without .gnu.version */
    size_t               nversym;
    int                  has_verdef;
};

/* [off, off+len) inside the file. */
static int in_file(const struct elf_dyn *e, uint64_t off, uint64_t len)
{
    return off <= e->size && len <= e->size - off;
}

static const Elf64_Shdr *section(const struct elf_dyn *e, size_t i)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->base;

    if (i >= eh->e_shnum)
        return NULL;
    return (const Elf64_Shdr *)(e->base + eh->e_shoff + i * eh->e_shentsize);
}

/* The string table section `link` names: base and size. */
static const char *strtab(const struct elf_dyn *e, size_t link, size_t *size)
{
    const Elf64_Shdr *s = section(e, link);

    if (!s || s->sh_type != SHT_STRTAB || !in_file(e, s->sh_offset, s->sh_size))
        return NULL;
    *size = s->sh_size;
    return (const char *)e->base + s->sh_offset;
}

static int load_sections(struct elf_dyn *e)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->base;

    if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = section(e, i);
        if (s->sh_type != SHT_NOBITS && !in_file(e, s->sh_offset, s->sh_size))
            return -1;
        const void *p = e->base + s->sh_offset;
        switch (s->sh_type) {
        case SHT_DYNAMIC:
            e->dyn = p;
            e->ndyn = s->sh_size / sizeof(Elf64_Dyn);
            e->dynstr = strtab(e, s->sh_link, &e->dynstr_size);
            break;
        case SHT_DYNSYM:
            e->syms = p;
            e->nsyms = s->sh_size / sizeof(Elf64_Sym);
            e->symstr = strtab(e, s->sh_link, &e->symstr_size);
            break;
        case SHT_GNU_versym:
            e->versym = p;
            e->nversym = s->sh_size / sizeof(Elf64_Half);
            break;
        case SHT_GNU_verdef:
            e->has_verdef = 1;
            break;
        }
    }
    return e->dyn && e->dynstr && e->syms && e->symstr ? 0 : -1;
}

struct elf_dyn *elf_dyn_open(const char *path)
{
    struct elf_dyn *e = calloc(1, sizeof(*e));
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (!e || fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr))
        goto fail;
    e->size = (size_t)st.st_size;
    void *m = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        goto fail;
    e->base = m;
    close(fd);
    fd = -1;
    const Elf64_Ehdr *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        load_sections(e) != 0)
        goto fail;
    return e;
fail:
    if (fd >= 0)
        close(fd);
    elf_dyn_close(e);
    return NULL;
}

void elf_dyn_close(struct elf_dyn *e)
{
    if (!e)
        return;
    if (e->base)
        munmap((void *)e->base, e->size);
    free(e);
}

/* A string of the dynamic section's table, or NULL if out of range. */
static const char *dyn_string(const struct elf_dyn *e, uint64_t off)
{
    if (off >= e->dynstr_size || !memchr(e->dynstr + off, '\0', e->dynstr_size - off))
        return NULL;
    return e->dynstr + off;
}

const char *elf_dyn_soname(const struct elf_dyn *e)
{
    for (size_t i = 0; i < e->ndyn && e->dyn[i].d_tag != DT_NULL; i++)
        if (e->dyn[i].d_tag == DT_SONAME)
            return dyn_string(e, e->dyn[i].d_un.d_val);
    return NULL;
}

int elf_dyn_needs(const struct elf_dyn *e, const char *lib)
{
    for (size_t i = 0; i < e->ndyn && e->dyn[i].d_tag != DT_NULL; i++) {
        if (e->dyn[i].d_tag != DT_NEEDED)
            continue;
        const char *s = dyn_string(e, e->dyn[i].d_un.d_val);
        if (s && strcmp(s, lib) == 0)
            return 1;
    }
    return 0;
}

int elf_dyn_has_verdef(const struct elf_dyn *e)
{
    return e->has_verdef;
}

int elf_dyn_sym(const struct elf_dyn *e, size_t i, struct elf_sym *out)
{
    if (i == 0 || i >= e->nsyms)
        return -1;
    const Elf64_Sym *s = &e->syms[i];
    if (s->st_name >= e->symstr_size ||
        !memchr(e->symstr + s->st_name, '\0', e->symstr_size - s->st_name))
        return -1;
    out->name = e->symstr + s->st_name;
    out->defined = s->st_shndx != SHN_UNDEF;
    out->global = ELF64_ST_BIND(s->st_info) == STB_GLOBAL ||
                  ELF64_ST_BIND(s->st_info) == STB_WEAK;
    out->function = ELF64_ST_TYPE(s->st_info) == STT_FUNC;
    out->version = e->versym && i < e->nversym ? (int)(e->versym[i] & 0x7fff) : -1;
    return 0;
}
