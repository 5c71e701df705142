/*
 * hooks_opener.c - calls dlopen and dlsym itself, with DT_RUNPATH=$ORIGIN
 * and a DT_NEEDED on hooks_getpid: checks that the GOT hooks of dlopen and
 * dlsym still search from this library, not from the hook's.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>

void *hooks_opener_dlopen(const char *name, int mode);
void *hooks_opener_next(const char *name);
int hooks_opener_pid(void);
int hooks_call_getpid(void); /* libhooks_getpid */

/* The empty asm after each call keeps it from being compiled as a tail
 * call, which would make glibc see OUR caller as the caller. */
void *hooks_opener_dlopen(const char *name, int mode)
{
    void *h = dlopen(name, mode);
    __asm__ volatile("" ::: "memory");
    return h;
}

void *hooks_opener_next(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* A reference into libhooks_getpid, so the linker keeps the DT_NEEDED
 * even with --as-needed. */
int hooks_opener_pid(void)
{
    return hooks_call_getpid();
}
