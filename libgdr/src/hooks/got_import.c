/*
 * got_import.c - patch one named import of one named object.
 *
 * SPDX-License-Identifier: MIT
 *
 * Two walks under dl_iterate_phdr (which holds the loader's list lock, so
 * the object cannot go away): the first finds the slots and what they
 * hold, the second writes them.  A lazy-binding stub is resolved between
 * the two, outside the lock, because dlopen/dlsym take the loader's other
 * lock in the opposite order.
 */
#include "got_import.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "got_elf.h"
#ifdef GDRX_HAVE_NVRM
#  include "lock_order.h"
#endif

enum import_pass { PASS_FIND, PASS_WRITE };

struct import_walk {
    enum import_pass pass;
    const char *object, *symbol;
    const struct dl_phdr_info *info;
    bool   found_object;
    void  *seen;          /* FIND: the first slot's content */
    bool   lazy;          /* FIND: it points into the object itself */
    void  *accept[2];     /* WRITE: contents a slot may have to be rewritten */
    void  *value;
    int    nslots, err;
    char   path[PATH_MAX];
};

static void visit(void **slot, const char *name, void *arg)
{
    struct import_walk *w = arg;
    void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    if (strcmp(name, w->symbol) != 0)
        return;
    w->nslots++;
    if (w->pass == PASS_FIND) {
        if (w->nslots == 1) {
            w->seen = cur;
            w->lazy = gdrx_got_elf_contains(w->info, cur);
        }
        return;
    }
    if (cur == w->value)
        return;
    if (cur != w->accept[0] && cur != w->accept[1] && !gdrx_got_elf_contains(w->info, cur)) {
        if (!w->err)
            w->err = -EBUSY;
        return;
    }
    int rc = gdrx_got_elf_write(w->info, slot, w->value);
    if (rc && !w->err)
        w->err = rc;
}

static int walk_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct import_walk *w = arg;

    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, w->object))
        return 0;
    w->found_object = true;
    w->info = info;
    if (w->pass == PASS_FIND)
        strncpy(w->path, info->dlpi_name, sizeof(w->path) - 1);
    int rc = gdrx_got_elf_walk(info, visit, w);
    if (rc && !w->err)
        w->err = rc;
    return 1; /* the first match only */
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The definition the loader binds symbol to in path's scope, or NULL. */
static void *bound_definition(const char *path, const char *symbol)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD), *def;

    if (!h)
        return NULL;
    def = dlsym(h, symbol);
    dlclose(h);
    return def;
}

int gdrx_got_patch_import(const char *object, const char *symbol, void *value, void **previous)
{
    struct import_walk w = { .pass = PASS_FIND, .object = object, .symbol = symbol, .value = value };
    void *prev;

    if (!object || !object[0] || !symbol || !symbol[0] || !value || !previous)
        return -EINVAL;
#ifdef GDRX_HAVE_NVRM
    /* in libgdrx, only the nvrm trace's install patches imports */
    gdrx_lock_order_expect(GDRX_LOCK_TRACE_INSTALL, "GOT import");
#endif
    pthread_mutex_lock(&lock);
    dl_iterate_phdr(walk_object, &w);
    if (w.err || !w.found_object || w.nslots == 0) {
        pthread_mutex_unlock(&lock);
        return w.err ? w.err : -ENOENT;
    }
    if (w.seen == value) {
        pthread_mutex_unlock(&lock);
        return -EEXIST;
    }
    prev = w.lazy ? bound_definition(w.path, symbol) : w.seen;
    if (!prev) {
        pthread_mutex_unlock(&lock);
        return -ENOENT;
    }
    /* Set before writing: a slot written before a later one fails
     * already leads to value, which must find its way on. */
    __atomic_store_n(previous, prev, __ATOMIC_RELEASE);
    w.pass = PASS_WRITE;
    w.accept[0] = w.seen;
    w.accept[1] = prev; /* the loader may have bound it meanwhile */
    w.nslots = 0;
    w.found_object = false;
    dl_iterate_phdr(walk_object, &w);
    pthread_mutex_unlock(&lock);
    if (!w.found_object)
        return -ENOENT; /* unloaded between the walks */
    return w.err;
}
