// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * gdrdrv-nvstub.c - build helper, never installed or loaded.
 *
 * When gdrdrv is built against nv-p2p.h without the NVIDIA driver's
 * Module.symvers, modpost cannot resolve the nvidia_p2p_* symbols (an
 * error since Linux 6.0).  This module exports stubs declared by the very
 * same nv-p2p.h, so modpost records the CRCs that nvidia.ko, built from
 * that header for this kernel, exports.  At load time the real NVIDIA
 * module provides the symbols.
 */
#include <linux/module.h>
#include "nv-p2p.h"

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	return -ENODEV;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table,
				    uint32_t flags)
{
	return -ENODEV;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return -ENODEV;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    uint32_t flags)
{
	return -ENODEV;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdrdrv build helper: NVIDIA P2P symbol stubs (never loaded)");
