/*
 * uct_gdrx_md_setup.h - the MD's set-up at its first use (libgdrx's
 * context, the CUDA events, the registration cache), its undoing at close,
 * and standing aside when it fails.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_MD_SETUP_H
#define UCT_GDRX_MD_SETUP_H

#include "uct_gdrx_types.h"


/* At md_open: remember what the set-up needs; nothing set up yet. */
void uct_gdrx_md_setup_init(uct_gdrx_md_t *md,
                            const uct_gdrx_md_config_t *config);
ucs_status_t uct_gdrx_md_activate_slow(uct_gdrx_md_t *md);
void uct_gdrx_md_setup_cleanup(uct_gdrx_md_t *md);

/* Make the MD usable (context, events, cache): UCS_OK once set up, else
 * the set-up's error, and the MD stands aside from then on. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_md_activate(uct_gdrx_md_t *md)
{
    if (ucs_likely(__atomic_load_n(&md->state, __ATOMIC_ACQUIRE) ==
                   UCT_GDRX_MD_STATE_READY)) {
        return UCS_OK;
    }
    return uct_gdrx_md_activate_slow(md);
}

/* 1 once the MD's set-up failed: it stands aside for good. */
static UCS_F_ALWAYS_INLINE int uct_gdrx_md_is_aside(uct_gdrx_md_t *md)
{
    return __atomic_load_n(&md->state, __ATOMIC_ACQUIRE) ==
           UCT_GDRX_MD_STATE_ASIDE;
}

#endif
