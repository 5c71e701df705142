/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * gdrdrv_nv.h - the NVIDIA P2P interface as gdrdrv sees it.
 *
 * nv-p2p.h comes from the include path the build sets up: the NVIDIA
 * driver source (open or proprietary flavour) or, for the kernel tests,
 * the mock provider's copy in tests/kmod/include.  Which flavour the
 * build found is passed in as one of
 *   GDRDRV_NV_FLAVOUR_OPEN, GDRDRV_NV_FLAVOUR_PROPRIETARY,
 *   GDRDRV_NV_FLAVOUR_MOCK.
 * Only with a GPL-compatible provider may gdrdrv use GPL-only kernel
 * symbols (see gdrdrv_compat.h).
 */
#ifndef GDRDRV_NV_H
#define GDRDRV_NV_H

#include <linux/types.h>
#include "nv-p2p.h"

#if defined(GDRDRV_NV_FLAVOUR_OPEN) || defined(GDRDRV_NV_FLAVOUR_MOCK)
#define GDRDRV_NV_GPL_OK 1
#elif !defined(GDRDRV_NV_FLAVOUR_PROPRIETARY)
#error "build with -DGDRDRV_NV_FLAVOUR_{OPEN,PROPRIETARY,MOCK}"
#endif

#if defined(GDRDRV_NV_FLAVOUR_OPEN)
#define GDRDRV_NV_FLAVOUR_NAME "open"
#elif defined(GDRDRV_NV_FLAVOUR_MOCK)
#define GDRDRV_NV_FLAVOUR_NAME "mock"
#else
#define GDRDRV_NV_FLAVOUR_NAME "proprietary"
#endif

#ifndef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
#error "nv-p2p.h lacks nvidia_p2p_get_pages_persistent (driver too old)"
#endif

/* Older headers have no BAR1-forcing flag: FORCE_PCIE is then refused. */
#ifdef NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
#define GDRDRV_NV_FORCE_BAR1	NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
#else
#define GDRDRV_NV_FORCE_BAR1	0u
#endif

#define GDRDRV_GPU_PAGE_MASK	(~(GDRDRV_GPU_PAGE_SIZE - 1))

#endif /* GDRDRV_NV_H */
