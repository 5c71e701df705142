/*
 * proc_maps.h - the protection of a mapping, from /proc/self/maps.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_PROC_MAPS_H
#define GDRX_PROC_MAPS_H

#include <stdint.h>

/* PROT_* of the mapping holding addr, or -errno (-ENOENT if unmapped).
 * Patchers use it to put a page's protection back after writing it. */
int gdrx_maps_prot(uintptr_t addr);

#endif /* GDRX_PROC_MAPS_H */
