/*
 * uct_gdrx_version.h - gdrx registers with UCX only in the release it was
 * built for: at load where libucp tells, else at the first use.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_VERSION_H
#define UCT_GDRX_VERSION_H

#include <ucs/type/status.h>


/* Registers gdrx's component and transport with UCX, or undoes that
 * (given by the file that defines them, uct_gdrx_iface.c). */
typedef void (*uct_gdrx_version_reg_func_t)(void);

/* At load: calls reg unless the running UCX is another release; unreg
 * undoes it at unload, or when a later check finds another release. */
void uct_gdrx_version_load(uct_gdrx_version_reg_func_t reg,
                           uct_gdrx_version_reg_func_t unreg);

/* At unload: undoes the registration, if any. */
void uct_gdrx_version_unload(void);

/* UCS_OK if the running UCX is the release gdrx was built for (or cannot
 * tell: no libucp); UCS_ERR_UNSUPPORTED once refused */
ucs_status_t uct_gdrx_version_check(void);

#endif
