/*
 * uct_gdrx_md.h - the gdrx memory domain and its component: pins and maps
 * CUDA device memory through libgdrx, behind a registration cache.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_MD_H
#define UCT_GDRX_MD_H

#include "uct_gdrx_types.h"


/* Registered with UCX at load, with the transport (uct_gdrx_iface.c). */
extern uct_component_t uct_gdrx_component;

#endif
