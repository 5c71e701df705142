/*
 * got_import.h - redirect ONE object's import of one function (its GOT
 * slots), chaining to what was there.
 *
 * SPDX-License-Identifier: MIT
 *
 * Used by the nvrm backend for libcuda's `ioctl` import alone; no other
 * object is touched and nothing is patched behind the caller's back (no
 * dlopen hook, no rescans).
 */
#ifndef GDRX_GOT_IMPORT_H
#define GDRX_GOT_IMPORT_H

/*
 * Point the GOT slots through which the first loaded object whose path
 * contains `object` imports `symbol` at `value`.  *previous gets the
 * function those slots led to before, for value to chain to: the slot's
 * content, or, when the slot still held its lazy-binding stub, the
 * definition the loader would bind (looked up in the object's scope).
 * Returns 0; -EINVAL for a NULL argument; -ENOENT if no such object is
 * loaded or it does not import symbol; -EEXIST if the slots already point
 * at value (nothing changed); -EBUSY if a slot changed under us (someone
 * else patching: the others are left as they were found); -errno of
 * mprotect (for these two, *previous is set: some slots may already lead
 * to value).  Thread-safe against itself.
 */
int gdrx_got_patch_import(const char *object, const char *symbol, void *value, void **previous);

#endif /* GDRX_GOT_IMPORT_H */
