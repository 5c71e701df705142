/*
 * info_v1.c - gdr_get_info as gdrcopy 2.0-2.3 declared it: the symbol the
 * programs built against those versions call, filling their 40-byte
 * struct gdr_info, which has no mapping_type.  (Since 2.4 gdrapi.h turns
 * the name into gdr_get_info_v2, info.c.)
 *
 * SPDX-License-Identifier: MIT
 */
#define GDRX_GDRAPI_INFO_V1 1 /* gdrapi.h as gdrcopy 2.3 had it */

#include <errno.h>
#include <stddef.h>

#include "gdrapi_internal.h"

_Static_assert(offsetof(gdr_info_t, cycles_per_ms) == 32 && sizeof(gdr_info_t) == 40,
               "gdrcopy 2.3's struct gdr_info");

GDRAPI_EXPORT int gdr_get_info(gdr_t g, gdr_mh_t handle, gdr_info_t *info)
{
    struct gdrx_pin_info pi;

    if (!info)
        return EINVAL;
    int rc = gdrapi_query(g, handle, &pi);
    if (rc == 0)
        GDRAPI_FILL_INFO(info, &pi);
    return rc;
}
