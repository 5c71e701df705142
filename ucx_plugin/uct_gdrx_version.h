/*
 * uct_gdrx_version.h - gdrx registers with UCX only in the release it was
 * built for, known at load (from the loaded libucp, or the one next to
 * libuct) before anything is registered.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_VERSION_H
#define UCT_GDRX_VERSION_H

#include <ucs/type/status.h>


/* Registers gdrx's component and transport with UCX, or undoes that
 * (given by the file that defines them, uct_gdrx_iface.c). */
typedef void (*uct_gdrx_version_reg_func_t)(void);

/* At load: calls reg only where the running UCX is known to be the
 * release gdrx was built for; unreg undoes it at unload. */
void uct_gdrx_version_load(uct_gdrx_version_reg_func_t reg,
                           uct_gdrx_version_reg_func_t unreg);

/* At unload: undoes the registration, if any. */
void uct_gdrx_version_unload(void);

/* UCS_OK if gdrx registered (the running UCX is the release it was built
 * for); UCS_ERR_UNSUPPORTED else */
ucs_status_t uct_gdrx_version_check(void);

#endif
