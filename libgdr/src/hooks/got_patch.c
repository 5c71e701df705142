/*
 * got_patch.c - the hook registry and the GOT patcher built on got_elf.c.
 *
 * SPDX-License-Identifier: MIT
 *
 * Locking: `lock` serialises every change to the registry and every GOT
 * write we make.  It is taken before the dynamic linker's list lock (held
 * by dl_iterate_phdr while we patch) and never the other way round; while
 * holding `lock` we call no dlopen/dlsym/dladdr, which take the loader's
 * load lock, held by dlopen while constructors run (a constructor may call
 * gdrx_got_patch).
 */
#include "got_patch.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dl_caller.h"
#include "got_elf.h"

#define GOT_MAX_HOOKS 64

/* The value a patched slot held before, to put back on unpatch.  Entries
 * of objects unloaded since are never looked at again: unpatch only writes
 * slots it finds by walking the objects that are loaded now. */
struct saved_slot {
    void **slot;
    void  *old;
    void  *replacement;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct gdrx_got_hook reg[GOT_MAX_HOOKS];
static size_t nreg;
static struct saved_slot *saved;
static size_t nsaved, capsaved;

static void *real_dlopen;
static void *gotp_dlopen(const char *file, int mode);
static const struct gdrx_got_hook dlopen_hook = {
    "dlopen", (void *)gotp_dlopen, &real_dlopen, NULL, NULL
};

enum scan_mode { SCAN_PATCH, SCAN_UNPATCH, SCAN_COUNT };

struct scan {
    enum scan_mode mode;
    const struct dl_phdr_info *info;
    const bool *selected;     /* UNPATCH: hooks being removed; COUNT: counted */
    int   err;                /* first error */
    bool  need_original;      /* PATCH: a lazy slot waits for an original */
    char *pending_obj;        /* PATCH: first object with such a slot */
    long  count;
};

static void *load_ptr(void *const *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static bool same_hook(const struct gdrx_got_hook *a, const struct gdrx_got_hook *b)
{
    return a->replacement == b->replacement && strcmp(a->symbol, b->symbol) == 0;
}

static long find_hook(const struct gdrx_got_hook *h)
{
    for (size_t i = 0; i < nreg; i++)
        if (same_hook(&reg[i], h))
            return (long)i;
    return -1;
}

static bool is_replacement(const void *value)
{
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].replacement == value)
            return true;
    return false;
}

static bool object_selected(const struct gdrx_got_hook *h, const char *path)
{
    if (h->only_in && !strstr(path, h->only_in))
        return false;
    return !(h->not_in && strstr(path, h->not_in));
}

static struct saved_slot *find_saved(void **slot)
{
    for (size_t i = 0; i < nsaved; i++)
        if (saved[i].slot == slot)
            return &saved[i];
    return NULL;
}

static int remember(void **slot, void *old, void *replacement)
{
    struct saved_slot *s = find_saved(slot);

    if (!s) {
        if (nsaved == capsaved) {
            size_t cap = capsaved ? 2 * capsaved : 64;
            struct saved_slot *n = realloc(saved, cap * sizeof(*n));
            if (!n)
                return -ENOMEM;
            saved = n;
            capsaved = cap;
        }
        s = &saved[nsaved++];
    }
    /* Reusing an entry by address is right: the object that owned it
     * before was unloaded, or this is the same slot patched again. */
    *s = (struct saved_slot){ slot, old, replacement };
    return 0;
}

static void note_err(struct scan *s, int err)
{
    if (err && !s->err)
        s->err = err;
}

static void patch_slot(struct scan *s, void **slot, const struct gdrx_got_hook *h)
{
    void *cur = load_ptr(slot);
    bool lazy;
    int err;

    if (cur == h->replacement || is_replacement(cur))
        return; /* done already, or another hook on this symbol won */
    if (!gdrx_got_elf_plausible(cur))
        return; /* not relocated yet: the object is mid-load elsewhere */
    /* A slot pointing into its own object is a lazy-binding PLT stub (or
     * a self-reference), not a definition we may call from elsewhere. */
    lazy = gdrx_got_elf_contains(s->info, cur);
    if (h->original && !lazy) {
        void *expected = NULL;
        __atomic_compare_exchange_n(h->original, &expected, cur, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (h->original && !load_ptr(h->original)) {
        /* Resolved outside the lock, then rescanned.  The object's name
         * lets the lookup search its local scope as the loader would. */
        s->need_original = true;
        if (!s->pending_obj && s->info->dlpi_name[0])
            s->pending_obj = strdup(s->info->dlpi_name);
        return;
    }
    if ((err = remember(slot, cur, h->replacement))) {
        note_err(s, err);
        return;
    }
    note_err(s, gdrx_got_elf_write(s->info, slot, h->replacement));
}

static void unpatch_slot(struct scan *s, void **slot, const struct gdrx_got_hook *h)
{
    struct saved_slot *old = find_saved(slot);
    void *value = old ? old->old : h->original ? load_ptr(h->original) : NULL;

    if (load_ptr(slot) != h->replacement)
        return; /* someone else rewrote it since: leave theirs */
    if (!value) {
        note_err(s, -ENOENT); /* nothing safe to put back: keep the hook */
        return;
    }
    note_err(s, gdrx_got_elf_write(s->info, slot, value));
}

static void visit(void **slot, const char *name, void *arg)
{
    struct scan *s = arg;

    for (size_t i = 0; i < nreg; i++) {
        const struct gdrx_got_hook *h = &reg[i];

        if (strcmp(name, h->symbol) != 0 || !object_selected(h, s->info->dlpi_name))
            continue;
        if (s->mode == SCAN_PATCH) {
            patch_slot(s, slot, h);
            if (load_ptr(slot) == h->replacement)
                return;
        } else if (s->selected[i] && load_ptr(slot) == h->replacement) {
            if (s->mode == SCAN_UNPATCH)
                unpatch_slot(s, slot, h);
            else
                s->count++;
            return;
        }
    }
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *s = arg;

    (void)size;
    /* Our own object keeps calling the real functions (and libgdrx's own
     * dlopen/dlsym/ioctl calls must not loop back into its hooks). */
    if (gdrx_got_elf_contains(info, (const void *)&scan_object) || !gdrx_got_elf_in_base_ns(info))
        return 0;
    s->info = info;
    note_err(s, gdrx_got_elf_walk(info, visit, s));
    s->info = NULL;
    return 0;
}

static int scan_locked(struct scan *s)
{
    dl_iterate_phdr(scan_object, s);
    return s->err;
}

/* Fill the originals a lazy slot is waiting for with the definition the
 * loader would bind: the global one, else the one in the scope of the
 * object holding the slot (its DT_NEEDED libraries, when it was loaded
 * RTLD_LOCAL).  Runs without `lock` because dlsym takes the loader lock. */
static bool resolve_originals(const char *obj)
{
    const char *names[GOT_MAX_HOOKS];
    void **originals[GOT_MAX_HOOKS];
    void *h = obj ? dlopen(obj, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    size_t n = 0;
    bool any = false;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nreg; i++) {
        if (reg[i].original && !load_ptr(reg[i].original)) {
            names[n] = reg[i].symbol;
            originals[n++] = reg[i].original;
        }
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(RTLD_DEFAULT, names[i]), *expected = NULL;
        if (!p && h)
            p = dlsym(h, names[i]);
        if (p && __atomic_compare_exchange_n(originals[i], &expected, p, false,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            any = true;
    }
    if (h)
        dlclose(h);
    return any;
}

static int patch_all(void)
{
    struct scan s = { .mode = SCAN_PATCH };
    int err;

    pthread_mutex_lock(&lock);
    err = scan_locked(&s);
    pthread_mutex_unlock(&lock);
    if (s.need_original && resolve_originals(s.pending_obj)) {
        struct scan again = { .mode = SCAN_PATCH };
        pthread_mutex_lock(&lock);
        int err2 = scan_locked(&again);
        pthread_mutex_unlock(&lock);
        free(again.pending_obj);
        if (!err)
            err = err2;
    }
    free(s.pending_obj);
    return err;
}

/* A fork while another thread holds `lock` would leave it held forever in
 * the child, whose next dlopen (a hooked one rescans) would then hang: hold
 * it across fork instead.  glibc drops these handlers if we are unloaded. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&lock);
}

static void register_atfork(void)
{
    (void)pthread_atfork(fork_prepare, fork_release, fork_release);
}

static bool valid_hook(const struct gdrx_got_hook *h)
{
    return h->symbol && h->symbol[0] && h->replacement;
}

int gdrx_got_patch(const struct gdrx_got_hook *hooks, size_t n)
{
    size_t fresh = 0;

    if (!hooks || n == 0 || n > GOT_MAX_HOOKS)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!valid_hook(&hooks[i]))
            return -EINVAL;

    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&lock);
    /* Count first so that running out of room changes nothing. */
    for (size_t i = 0; i < n; i++) {
        bool dup = find_hook(&hooks[i]) >= 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = same_hook(&hooks[j], &hooks[i]);
        fresh += !dup;
    }
    if (nreg + fresh + (find_hook(&dlopen_hook) < 0) > GOT_MAX_HOOKS) {
        pthread_mutex_unlock(&lock);
        return -ENOSPC;
    }
    /* The dlopen hook goes first so objects loaded from now on are seen. */
    if (find_hook(&dlopen_hook) < 0)
        reg[nreg++] = dlopen_hook;
    for (size_t i = 0; i < n; i++)
        if (find_hook(&hooks[i]) < 0)
            reg[nreg++] = hooks[i];
    pthread_mutex_unlock(&lock);
    return patch_all();
}

int gdrx_got_rescan(void)
{
    return patch_all();
}

static void drop_saved(const bool *removed)
{
    size_t k = 0;

    for (size_t i = 0; i < nsaved; i++) {
        bool gone = false;
        for (size_t j = 0; j < nreg; j++)
            gone |= removed[j] && reg[j].replacement == saved[i].replacement;
        if (!gone)
            saved[k++] = saved[i];
    }
    nsaved = k;
}

int gdrx_got_unpatch(const struct gdrx_got_hook *hooks, size_t n)
{
    bool removed[GOT_MAX_HOOKS] = { false };
    struct scan s = { .mode = SCAN_UNPATCH, .selected = removed };
    int missing = 0;
    size_t k = 0, users = 0;
    long dl;

    if (!hooks || n == 0 || n > GOT_MAX_HOOKS)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!valid_hook(&hooks[i]))
            return -EINVAL;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++) {
        long idx = find_hook(&hooks[i]);
        if (idx < 0)
            missing = -ENOENT;
        else
            removed[idx] = true;
    }
    /* The dlopen hook is only there for the others: drop it with the last. */
    dl = find_hook(&dlopen_hook);
    for (size_t i = 0; i < nreg; i++)
        users += !removed[i] && (long)i != dl;
    if (dl >= 0 && users == 0)
        removed[dl] = true;

    scan_locked(&s);
    drop_saved(removed);
    for (size_t i = 0; i < nreg; i++)
        if (!removed[i])
            reg[k++] = reg[i];
    nreg = k;
    pthread_mutex_unlock(&lock);
    return s.err ? s.err : missing;
}

long gdrx_got_count(const char *symbol)
{
    bool sel[GOT_MAX_HOOKS] = { false };
    struct scan s = { .mode = SCAN_COUNT, .selected = sel };

    if (!symbol)
        return -EINVAL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nreg; i++)
        sel[i] = strcmp(reg[i].symbol, symbol) == 0;
    scan_locked(&s);
    pthread_mutex_unlock(&lock);
    return s.err ? s.err : s.count;
}

/* dlopen as reached through a patched GOT slot: load as the real caller
 * would have, then patch whatever the call brought in. */
static __attribute__((noinline)) void *gotp_dlopen(const char *file, int mode)
{
    gdrx_dlopen_fn real = (gdrx_dlopen_fn)load_ptr(&real_dlopen);
    void *h;

    if (!real)
        real = dlopen;
    h = gdrx_dl_open_for(__builtin_return_address(0), file, mode, real);
    if (h && !(mode & RTLD_NOLOAD)) {
        int saved_errno = errno;
        (void)gdrx_got_rescan(); /* nothing to report it to: dlopen worked */
        errno = saved_errno;
    }
    return h;
}
