/*
 * map.c - gdr_map, gdr_map_v2 and gdr_unmap over gdrx_map/gdrx_unmap.
 *
 * SPDX-License-Identifier: MIT
 *
 * gdrcopy's mapping starts at the first pinned GPU page (gdr_info's va);
 * gdrx_map gives the CPU address of the pin's first byte, so the address
 * returned is moved back to the page.  Bytes between the two belong to
 * the same allocation (range.c), and the copies reach them.  A pin of an
 * address inside a GPU page is not mapped at all (pin.c), as gdrcopy.
 */
#include <errno.h>

#include "gdrapi_internal.h"

/* The mapping type each gdr_map_flags_t asks for (NONE: any). */
static const gdrx_mapping_type_t wanted[] = {
    [GDR_MAP_FLAG_DEFAULT] = GDRX_MAPPING_NONE,
    [GDR_MAP_FLAG_REQ_WC_MAPPING] = GDRX_MAPPING_WC,
    [GDR_MAP_FLAG_REQ_CACHE_MAPPING] = GDRX_MAPPING_CACHING,
    [GDR_MAP_FLAG_REQ_DEVICE_MAPPING] = GDRX_MAPPING_DEVICE,
};

/* gdrx cannot choose the kind of a mapping: one of another kind than
 * asked for is undone and refused with gdrdrv's answer to a kind it
 * cannot give (EOPNOTSUPP). */
static int check_kind(gdr_t g, gdr_mh_t handle, int flags)
{
    struct gdrx_pin_info info;

    if (wanted[flags] == GDRX_MAPPING_NONE)
        return 0;
    int rc = gdrapi_query(g, handle, &info);
    if (rc == 0 && info.mapping_type != wanted[flags])
        rc = EOPNOTSUPP;
    if (rc)
        gdrx_unmap(gdrapi_ctx(g), gdrapi_pin(handle));
    return rc;
}

GDRAPI_EXPORT int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags)
{
    struct gdrx_pin_info info;
    void *cpu;

    if (!va || flags < GDR_MAP_FLAG_DEFAULT || flags > GDR_MAP_FLAG_REQ_DEVICE_MAPPING)
        return EINVAL;
    int rc = gdrapi_query(g, handle, &info);
    if (rc)
        return rc;
    if (info.mapping_type != GDRX_MAPPING_NONE)
        return EAGAIN; /* gdrcopy's answer for a pin mapped already */
    if (size == 0 || size > info.pinned_size)
        return EINVAL;
    rc = gdrx_map(gdrapi_ctx(g), gdrapi_pin(handle), &cpu);
    if (rc == -EEXIST) /* another thread mapped it meanwhile */
        return EAGAIN;
    if (rc == -EPERM) /* inside a GPU page (pin.c): gdrdrv's answer */
        return EINVAL;
    if (rc)
        return gdrapi_err(rc);
    rc = check_kind(g, handle, flags);
    if (rc)
        return rc;
    *va = gdrapi_map_base(&info, cpu);
    return 0;
}

GDRAPI_EXPORT int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size)
{
    return gdr_map_v2(g, handle, va, size, GDR_MAP_FLAG_DEFAULT);
}

/* The whole mapping goes, whatever size says (gdrcopy would unmap part of
 * it and still count it unmapped); va must be what gdr_map returned.  A
 * mapping revoked by a CUDA free has no address left to compare: its
 * reserved range is released. */
GDRAPI_EXPORT int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size)
{
    struct gdrx_pin_info info;
    int rc = gdrapi_query(g, handle, &info);

    if (rc)
        return rc;
    if (info.mapping_type != GDRX_MAPPING_NONE &&
        (va != gdrapi_map_base(&info, info.cpu_ptr) || size == 0 || size > info.pinned_size))
        return EINVAL;
    return gdrapi_err(gdrx_unmap(gdrapi_ctx(g), gdrapi_pin(handle)));
}
