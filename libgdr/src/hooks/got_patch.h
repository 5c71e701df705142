/*
 * got_patch.h - redirect a process's calls to a named function by rewriting
 * the GOT slots of the loaded ELF objects that import it.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every object in the base link-map namespace except the one holding this
 * code (libgdrx itself, so its own calls reach the real functions) has its
 * JUMP_SLOT / GLOB_DAT relocations (DT_JMPREL and DT_RELA tables) for the
 * symbol pointed at the replacement.  Objects loaded later are patched
 * when dlopen returns: the first gdrx_got_patch() also hooks dlopen itself
 * (through the same mechanism) and rescans after every successful call.
 *
 * Limits (see docs/free-interception.md):
 *  - only calls that go through a GOT slot are redirected: not calls inside
 *    the defining object, not statically linked callers, not function
 *    pointers fetched (dlsym, &func) before the patch was installed;
 *  - objects in other dlmopen() namespaces are left alone;
 *  - a replacement calls ONE original for all objects (the first resolved
 *    definition found, or the one the caller supplied).
 */
#ifndef GDRX_GOT_PATCH_H
#define GDRX_GOT_PATCH_H

#include <stddef.h>

struct gdrx_got_hook {
    /* Imported symbol name, e.g. "cuMemFree_v2" (no version suffix).
     * Must stay valid until the hook is unpatched (use string literals). */
    const char *symbol;
    /* The function slots will point to.  A hook is identified by
     * (symbol, replacement): registering it again is a no-op. */
    void       *replacement;
    /* Where the function the replacement should call lives.  If *original
     * is NULL, gdrx_got_patch() stores the definition the patched slots
     * led to (atomically, at most once); a non-NULL *original is kept, so
     * the caller may choose the target itself.  May be NULL. */
    void      **original;
    /* Optional filters on the object's path as the dynamic linker reports
     * it (substring match): only_in = patch only matching objects (e.g.
     * "libcuda.so" to catch libcuda's own ioctl import), not_in = skip
     * matching objects.  NULL = no filter. */
    const char *only_in;
    const char *not_in;
};

/*
 * Register hooks[0..n) and patch every matching slot in the loaded
 * objects; later dlopen()ed objects are patched too.  Thread-safe and
 * idempotent.  Returns 0, -EINVAL (bad input: nothing changed), -ENOMEM,
 * or the first -errno of an mprotect that failed (the other slots are
 * patched and the hooks stay registered; gdrx_got_unpatch undoes them).
 */
int gdrx_got_patch(const struct gdrx_got_hook *hooks, size_t n);

/*
 * Unregister hooks[0..n) (matched by symbol and replacement) and restore
 * every slot that still points to a replacement to the value it had before
 * patching.  Slots someone else rewrote since are left alone.  When no hook
 * is left, the dlopen hook is removed too.  Returns 0, -EINVAL, -ENOENT if
 * a hook was not registered (the others are still removed), or -errno.
 */
int gdrx_got_unpatch(const struct gdrx_got_hook *hooks, size_t n);

/* Patch objects loaded by means the dlopen hook does not see (e.g. dlmopen
 * into the base namespace, or dlopen through a pointer obtained before
 * installation).  Returns 0 or the first -errno. */
int gdrx_got_rescan(void);

/* Number of slots currently pointing to a replacement of `symbol` (for
 * tests and diagnostics); -errno on error. */
long gdrx_got_count(const char *symbol);

#endif /* GDRX_GOT_PATCH_H */
