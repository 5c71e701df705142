/*
 * dl_caller.h - dlopen/dlsym on behalf of another object.
 *
 * SPDX-License-Identifier: MIT
 *
 * glibc's dlopen and dlsym look at their return address: dlopen searches
 * the CALLER's DT_RPATH/DT_RUNPATH and expands $ORIGIN relative to it;
 * dlsym(RTLD_NEXT) searches the objects after the caller and
 * dlsym(RTLD_DEFAULT) includes the caller's local scope.  A GOT hook that
 * forwards such a call would make libgdrx the caller and break all three,
 * so the hooks emulate them for the real caller here.
 */
#ifndef GDRX_DL_CALLER_H
#define GDRX_DL_CALLER_H

typedef void *(*gdrx_dlopen_fn)(const char *file, int mode);
typedef void *(*gdrx_dlsym_fn)(void *handle, const char *name);

/* dlopen(file, mode) as if called from the object containing `caller`
 * (a return address), loading through `open_fn` (the function the hook
 * replaced). */
void *gdrx_dl_open_for(const void *caller, const char *file, int mode, gdrx_dlopen_fn open_fn);

/* dlsym(handle, name) as if called from the object containing `caller`,
 * looking up through `sym_fn`. */
void *gdrx_dl_sym_for(const void *caller, void *handle, const char *name, gdrx_dlsym_fn sym_fn);

#endif /* GDRX_DL_CALLER_H */
