/*
 * info.c - gdr_get_info_v2 (gdrcopy 2.4 and later; gdr_get_info names it in
 * gdrapi.h since then) and the names of the mapping types.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stddef.h>

#include "gdrapi_internal.h"

/* gdrcopy's layout on LP64: gdrcopy 2.3's 40-byte struct, then the type. */
_Static_assert(offsetof(gdr_info_v2_t, cycles_per_ms) == 32 &&
               offsetof(gdr_info_v2_t, mapping_type) == 40 && sizeof(gdr_info_v2_t) == 48,
               "gdr_info_v2_t");

/* GDRX_MAPPING_* and GDR_MAPPING_TYPE_* are the same numbers. */
_Static_assert((int)GDRX_MAPPING_NONE == (int)GDR_MAPPING_TYPE_NONE &&
               (int)GDRX_MAPPING_WC == (int)GDR_MAPPING_TYPE_WC &&
               (int)GDRX_MAPPING_CACHING == (int)GDR_MAPPING_TYPE_CACHING &&
               (int)GDRX_MAPPING_DEVICE == (int)GDR_MAPPING_TYPE_DEVICE, "mapping types");

GDRAPI_EXPORT int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info)
{
    struct gdrx_pin_info pi;

    if (!info)
        return EINVAL;
    int rc = gdrapi_query(g, handle, &pi);
    if (rc)
        return rc;
    GDRAPI_FILL_INFO(info, &pi);
    info->mapping_type = (gdr_mapping_type_t)pi.mapping_type;
    return 0;
}

GDRAPI_EXPORT int gdr_get_mapping_type_string(gdr_mapping_type_t mapping_type, const char **pstr)
{
    static const char *const names[GDR_MAPPING_TYPE_MAX] = {
        [GDR_MAPPING_TYPE_NONE] = "None",
        [GDR_MAPPING_TYPE_WC] = "Write Combining",
        [GDR_MAPPING_TYPE_CACHING] = "Caching",
        [GDR_MAPPING_TYPE_DEVICE] = "Device",
    };

    if (!pstr || (unsigned)mapping_type >= GDR_MAPPING_TYPE_MAX)
        return EINVAL;
    *pstr = names[mapping_type];
    return 0;
}
