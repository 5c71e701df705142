/*
 * dl_caller.c - dlopen/dlsym emulated for the object that called a hook.
 *
 * SPDX-License-Identifier: MIT
 *
 * The emulation follows glibc's documented search rules closely enough for
 * the cases that matter in practice (an application that dlopens a plugin
 * by bare name through its $ORIGIN RUNPATH; an interposer calling
 * dlsym(RTLD_NEXT)); the differences are listed in
 * docs/free-interception.md.
 */
#include "dl_caller.h"
#include "got_elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct link_map *map_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;

    if (!addr || !dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

/* A return address may point just past the last instruction of its
 * function (a call to a noreturn function), so look one byte earlier. */
static struct link_map *caller_map(const void *ret_addr)
{
    return ret_addr ? map_of((const char *)ret_addr - 1) : NULL;
}

static bool is_self(const struct link_map *lm)
{
    return lm == map_of((const void *)&map_of);
}

/* DT_RPATH / DT_RUNPATH strings of a loaded object (NULL when absent). */
static void search_paths(const struct link_map *lm, const char **rpath, const char **runpath)
{
    ElfW(Addr) strtab = 0;
    ElfW(Xword) rp = 0, rup = 0;
    bool has_rp = false, has_rup = false;

    *rpath = *runpath = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = d->d_un.d_ptr;
        else if (d->d_tag == DT_RPATH)
            rp = d->d_un.d_val, has_rp = true;
        else if (d->d_tag == DT_RUNPATH)
            rup = d->d_un.d_val, has_rup = true;
    }
    if (!strtab)
        return;
    /* glibc usually relocates .dynamic pointers in place, not always. */
    if (lm->l_addr && strtab < lm->l_addr)
        strtab += lm->l_addr;
    if (has_rp)
        *rpath = (const char *)strtab + rp;
    if (has_rup)
        *runpath = (const char *)strtab + rup;
}

/* Directory of the object, for $ORIGIN. */
static bool origin_of(const struct link_map *lm, char *out, size_t size)
{
    char *slash;

    if (lm->l_name && lm->l_name[0]) {
        if (snprintf(out, size, "%s", lm->l_name) >= (int)size)
            return false;
    } else {
        /* The main program has an empty l_name. */
        ssize_t n = readlink("/proc/self/exe", out, size - 1);
        if (n <= 0)
            return false;
        out[n] = '\0';
    }
    slash = strrchr(out, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return true;
}

/* Copy src to out replacing $ORIGIN and ${ORIGIN}; false if it does not
 * fit or needs an origin we cannot find ($LIB and $PLATFORM are kept). */
static bool expand_origin(const struct link_map *lm, const char *src, size_t len, char *out, size_t size)
{
    char origin[PATH_MAX];
    bool have_origin = false;
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        size_t skip = 0;
        if (!strncmp(src + i, "$ORIGIN", 7))
            skip = 7;
        else if (!strncmp(src + i, "${ORIGIN}", 9))
            skip = 9;
        if (skip) {
            if (!have_origin && !(have_origin = origin_of(lm, origin, sizeof(origin))))
                return false;
            size_t ol = strlen(origin);
            if (o + ol >= size)
                return false;
            memcpy(out + o, origin, ol);
            o += ol;
            i += skip - 1;
        } else {
            if (o + 1 >= size)
                return false;
            out[o++] = src[i];
        }
    }
    out[o] = '\0';
    return true;
}

/* Try file in each directory of a colon-separated list. */
static void *try_dirs(const struct link_map *lm, const char *dirs, const char *file, int mode,
                      gdrx_dlopen_fn open_fn)
{
    char dir[PATH_MAX], path[PATH_MAX];

    while (dirs && *dirs) {
        const char *end = strchrnul(dirs, ':');
        size_t len = (size_t)(end - dirs);

        /* An empty entry means the current directory, as for the loader. */
        if (len == 0)
            snprintf(dir, sizeof(dir), ".");
        if ((len == 0 || expand_origin(lm, dirs, len, dir, sizeof(dir))) &&
            snprintf(path, sizeof(path), "%s/%s", dir, file) < (int)sizeof(path) &&
            access(path, F_OK) == 0) {
            void *h = open_fn(path, mode);
            if (h)
                return h;
        }
        dirs = *end ? end + 1 : end;
    }
    return NULL;
}

void *gdrx_dl_open_for(const void *caller, const char *file, int mode, gdrx_dlopen_fn open_fn)
{
    struct link_map *lm;
    const char *rpath, *runpath;
    char path[PATH_MAX];
    void *h;

    if (!file || !(lm = caller_map(caller)) || is_self(lm))
        return open_fn(file, mode);
    if (strchr(file, '/')) {
        /* Only $ORIGIN in the name itself depends on the caller. */
        if (strchr(file, '$') && expand_origin(lm, file, strlen(file), path, sizeof(path)))
            return open_fn(path, mode);
        return open_fn(file, mode);
    }
    search_paths(lm, &rpath, &runpath);
    if (!rpath && !runpath)
        return open_fn(file, mode);
    /* A bare name: an object already loaded under that name wins, as in
     * the loader (this also applies mode's promotions, e.g. RTLD_GLOBAL). */
    h = open_fn(file, mode | RTLD_NOLOAD);
    if (h || (mode & RTLD_NOLOAD))
        return h;
    if (rpath && !runpath) {
        /* DT_RPATH of the caller, then of the main program, then what the
         * real dlopen searches (LD_LIBRARY_PATH, cache, defaults). */
        const char *exe_rpath, *exe_runpath;
        if ((h = try_dirs(lm, rpath, file, mode, open_fn)))
            return h;
        if (_r_debug.r_map && _r_debug.r_map != lm) {
            search_paths(_r_debug.r_map, &exe_rpath, &exe_runpath);
            if (exe_rpath && !exe_runpath &&
                (h = try_dirs(_r_debug.r_map, exe_rpath, file, mode, open_fn)))
                return h;
        }
    } else if (runpath) {
        /* LD_LIBRARY_PATH comes before DT_RUNPATH. */
        if ((h = try_dirs(lm, getenv("LD_LIBRARY_PATH"), file, mode, open_fn)) ||
            (h = try_dirs(lm, runpath, file, mode, open_fn)))
            return h;
    }
    return open_fn(file, mode);
}

/* The definition of name in the object loaded as `path` itself (not in
 * its dependencies). */
static void *sym_in_object(const char *path, const char *name, gdrx_dlsym_fn sym_fn)
{
    struct link_map *l = NULL;
    void *h, *p;

    h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL; /* unloaded meanwhile */
    /* A handle's lookup starts with the object itself, so a hit located in
     * the object is its own definition. */
    p = sym_fn(h, name);
    if (p && (dlinfo(h, RTLD_DI_LINKMAP, &l) != 0 || map_of(p) != l))
        p = NULL;
    dlclose(h);
    return p;
}

/* Names of the base-namespace objects loaded after the one holding
 * `caller`, copied under the loader's list lock (the link_map list may
 * change as soon as it is released). */
struct next_objs {
    const void *caller;
    bool        seen;
    char      **names;
    size_t      n, cap;
};

static int next_objs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct next_objs *c = arg;

    (void)size;
    if (!gdrx_got_elf_in_base_ns(info))
        return 0;
    if (!c->seen) {
        c->seen = gdrx_got_elf_contains(info, c->caller);
        return 0;
    }
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        char **names = realloc(c->names, cap * sizeof(*names));
        if (!names)
            return 1;
        c->names = names;
        c->cap = cap;
    }
    if ((c->names[c->n] = strdup(info->dlpi_name)))
        c->n++;
    return 0;
}

static void *sym_next(const void *caller, const char *name, gdrx_dlsym_fn sym_fn)
{
    struct next_objs c = { (const char *)caller - 1, false, NULL, 0, 0 };
    void *p = NULL;

    dl_iterate_phdr(next_objs_cb, &c);
    for (size_t i = 0; i < c.n; i++) {
        if (!p)
            p = sym_in_object(c.names[i], name, sym_fn);
        free(c.names[i]);
    }
    free(c.names);
    return p;
}

void *gdrx_dl_sym_for(const void *caller, void *handle, const char *name, gdrx_dlsym_fn sym_fn)
{
    struct link_map *lm;
    void *p, *h;

    if ((handle != RTLD_NEXT && handle != RTLD_DEFAULT) || !name ||
        !(lm = caller_map(caller)) || is_self(lm))
        return sym_fn(handle, name);

    if (handle == RTLD_DEFAULT) {
        /* The global scope, then the caller's own local scope (matters
         * for a caller loaded RTLD_LOCAL). */
        if ((p = sym_fn(RTLD_DEFAULT, name)) || !lm->l_name || !lm->l_name[0])
            return p;
        if (!(h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD)))
            return NULL;
        p = sym_fn(h, name);
        dlclose(h);
        return p;
    }
    /* RTLD_NEXT: the first definition in the objects loaded after the
     * caller, in load order. */
    return sym_next(caller, name, sym_fn);
}
