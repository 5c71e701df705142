/*
 * free_hook.h - connects the CUDA free interception (libgdr/src/hooks/) to
 * the core's revocation of pins (gdrx_core_memory_freed()).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_FREE_HOOK_H
#define GDRX_FREE_HOOK_H

/* Install the hooks once per process (later calls do nothing).  Failure is
 * not fatal: staleness is then found by gdrx_pin_query() (backend flag,
 * buffer id) instead of at the moment of the free. */
void gdrx_free_hook_enable(void);

/* 1 if the hooks are installed and report frees to the core. */
int gdrx_free_hook_active(void);

#endif /* GDRX_FREE_HOOK_H */
