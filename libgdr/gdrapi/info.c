/*
 * info.c - gdr_get_info_v2, the gdr_get_info of gdrcopy 2.0-2.3 (the
 * symbol their programs call, with the shorter struct), and the names of
 * the mapping types.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stddef.h>

#include "gdrapi_internal.h"

/* gdrapi.h's struct gdr_info under GDRX_GDRAPI_INFO_V1: the layout of
 * gdrcopy 2.0-2.3, which gdr_get_info fills (tests/gdrapi checks that
 * both declarations agree). */
struct gdrapi_info_v1 {
    uint64_t va;
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
};

/* The second version only appends mapping_type. */
_Static_assert(offsetof(gdr_info_v2_t, cycles_per_ms) ==
               offsetof(struct gdrapi_info_v1, cycles_per_ms), "v2 extends v1");
_Static_assert(offsetof(gdr_info_v2_t, mapping_type) == sizeof(struct gdrapi_info_v1),
               "mapping_type follows v1's fields");

/* GDRX_MAPPING_* and GDR_MAPPING_TYPE_* are the same numbers. */
_Static_assert((int)GDRX_MAPPING_NONE == (int)GDR_MAPPING_TYPE_NONE &&
               (int)GDRX_MAPPING_WC == (int)GDR_MAPPING_TYPE_WC &&
               (int)GDRX_MAPPING_CACHING == (int)GDR_MAPPING_TYPE_CACHING &&
               (int)GDRX_MAPPING_DEVICE == (int)GDR_MAPPING_TYPE_DEVICE, "mapping types");

static int info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info)
{
    struct gdrx_pin_info pi;
    int rc = gdrapi_query(g, handle, &pi);

    if (rc)
        return rc;
    gdr_mapping_type_t type = (gdr_mapping_type_t)pi.mapping_type;
    info->va = pi.pinned_base;
    info->mapped_size = pi.pinned_size;
    info->page_size = (uint32_t)pi.page_size;
    info->tm_cycles = 0;
    info->cycles_per_ms = 0;
    info->mapped = type != GDR_MAPPING_TYPE_NONE;
    info->wc_mapping = type == GDR_MAPPING_TYPE_WC;
    info->mapping_type = type;
    return 0;
}

GDRAPI_EXPORT int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info)
{
    return info ? info_v2(g, handle, info) : EINVAL;
}

#undef gdr_get_info
int gdr_get_info(gdr_t g, gdr_mh_t handle, struct gdrapi_info_v1 *info);

GDRAPI_EXPORT int gdr_get_info(gdr_t g, gdr_mh_t handle, struct gdrapi_info_v1 *info)
{
    gdr_info_v2_t v2;

    if (!info)
        return EINVAL;
    int rc = info_v2(g, handle, &v2);
    if (rc)
        return rc;
    info->va = v2.va;
    info->mapped_size = v2.mapped_size;
    info->page_size = v2.page_size;
    info->tm_cycles = v2.tm_cycles;
    info->cycles_per_ms = v2.cycles_per_ms;
    info->mapped = v2.mapped;
    info->wc_mapping = v2.wc_mapping;
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
