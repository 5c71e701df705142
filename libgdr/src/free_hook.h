/*
 * free_hook.h - installs the CUDA memory interception (libgdr/src/hooks/)
 * when it is first needed, and routes its events (mem_events.c).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_FREE_HOOK_H
#define GDRX_FREE_HOOK_H

/*
 * Install the hooks if libcuda is loaded and they are not yet installed;
 * called by gdrx_open() and gdrx_mem_events_subscribe(), never at library
 * load.  Returns 0 (installed, now or before), -ENOSYS (disabled by
 * GDRX_FREE_HOOKS=0, or not built in), -ENOENT (libcuda not loaded yet:
 * the next call tries again), or the patcher's -errno.  Without hooks,
 * staleness is found by gdrx_pin_query() (backend flag, buffer id).
 */
int gdrx_free_hook_enable(void);

/* The fork handlers (fork.c) hold the installer's lock across fork. */
void gdrx_free_hook_fork_lock(void);
void gdrx_free_hook_fork_unlock(void);

#endif /* GDRX_FREE_HOOK_H */
