/*
 * copy.c - gdr_copy_to_mapping and gdr_copy_from_mapping: gdrx's copies,
 * which take no lock and check the handle, the mapping and the range.
 *
 * SPDX-License-Identifier: MIT
 *
 * Any alignment and size, as gdrcopy: gdrx's routines store to the mapping
 * only with naturally aligned accesses, each byte once, fenced before they
 * return, and read it in whole aligned blocks (libgdr/src/copy).  Where gdrcopy copies
 * through any address it is given, these refuse one outside the pin's
 * allocation (ERANGE) or whose memory CUDA freed (ESTALE).
 */
#include "gdrapi_internal.h"

GDRAPI_EXPORT int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                      size_t size)
{
    return gdrapi_err(gdrx_copy_to_mapping(gdrapi_pin(handle), map_d_ptr, h_ptr, size));
}

GDRAPI_EXPORT int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                        size_t size)
{
    return gdrapi_err(gdrx_copy_from_mapping(gdrapi_pin(handle), h_ptr, map_d_ptr, size));
}
