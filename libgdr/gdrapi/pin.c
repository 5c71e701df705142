/*
 * pin.c - gdr_pin_buffer, gdr_pin_buffer_v2, gdr_unpin_buffer and
 * gdr_get_callback_flag over gdrx_pin/gdrx_unpin/gdrx_pin_query.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>

#include "gdrapi_internal.h"

int gdrapi_query(gdr_t g, gdr_mh_t mh, struct gdrx_pin_info *info)
{
    return gdrapi_err(gdrx_pin_query(gdrapi_ctx(g), gdrapi_pin(mh), info));
}

static int pin(gdr_t g, unsigned long addr, size_t size, uint32_t flags, gdr_mh_t *handle)
{
    struct gdrapi_range r;
    gdrx_pin_t p;

    if (!handle)
        return EINVAL;
    /* FORCE_PCIE is refused as gdrcopy refuses it where the driver cannot
     * force BAR1 (and GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE says 0). */
    if (flags != GDR_PIN_FLAG_DEFAULT)
        return EINVAL;
    int rc = gdrapi_pin_range(addr, size, &r);
    if (rc)
        return rc;
    rc = gdrx_pin(gdrapi_ctx(g), r.dptr, r.len, r.flags, &p);
    /* a span the backend cannot pin as one piece: the allocation the
     * request is for; any other error is the caller's */
    if ((rc == -EINVAL || rc == -EOPNOTSUPP) && r.flags == GDRX_PIN_FLAG_SPAN) {
        rc = gdrapi_fallback_range(addr, size, &r);
        if (rc)
            return rc;
        rc = gdrx_pin(gdrapi_ctx(g), r.dptr, r.len, r.flags, &p);
    }
    if (rc)
        return gdrapi_err(rc);
    *handle = gdrapi_mh(p);
    return 0;
}

GDRAPI_EXPORT int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token,
                                 uint32_t va_space, gdr_mh_t *handle)
{
    /* Obsolete since gdrcopy 2.5 (persistent pins): gdrdrv refuses them. */
    if (p2p_token || va_space)
        return EINVAL;
    return pin(g, addr, size, GDR_PIN_FLAG_DEFAULT, handle);
}

GDRAPI_EXPORT int gdr_pin_buffer_v2(gdr_t g, unsigned long addr, size_t size, uint32_t flags,
                                    gdr_mh_t *handle)
{
    return pin(g, addr, size, flags, handle);
}

/* gdrx_unpin removes a mapping still there first: gdrcopy asks callers to
 * unmap first, and leaving the mapping behind would leak it. */
GDRAPI_EXPORT int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle)
{
    return gdrapi_err(gdrx_unpin(gdrapi_ctx(g), gdrapi_pin(handle)));
}

GDRAPI_EXPORT int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag)
{
    struct gdrx_pin_info info;

    if (!flag)
        return EINVAL;
    int rc = gdrapi_query(g, handle, &info);
    if (rc == 0)
        *flag = info.stale;
    return rc;
}
