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

/* gdrcopy's va, the first pinned GPU page, must not lie past addr: its
 * callers find addr at map + (addr - va).  A pin that could only take a
 * later allocation of the request (a fallback past addr's page) is
 * undone and refused. */
static int check_va(gdr_t g, gdrx_pin_t p, unsigned long addr)
{
    struct gdrx_pin_info info;
    int rc = gdrx_pin_query(gdrapi_ctx(g), p, &info);

    if (rc == 0 && info.pinned_base <= addr)
        return 0;
    gdrx_unpin(gdrapi_ctx(g), p);
    return rc ? gdrapi_err(rc) : EINVAL;
}

/* Whether g was opened without CUDA (gdr_open in a fork child of a
 * process that used CUDA, open.c): libgdrx answers -ENODEV for the CUDA
 * driver version of such a context only. */
static int opened_without_cuda(gdr_t g)
{
    uint64_t v;

    return gdrx_get_attr(gdrapi_ctx(g), GDRX_ATTR_CUDA_DRIVER_VERSION, &v) == -ENODEV;
}

static int pin(gdr_t g, unsigned long addr, size_t size, uint32_t flags, gdr_mh_t *handle)
{
    struct gdrapi_range r;
    gdrx_pin_t p;

    if (!handle)
        return EINVAL;
    if (flags & ~(uint32_t)GDR_PIN_FLAG_FORCE_PCIE)
        return EINVAL;
    /* An address inside a GPU page is pinned, never mapped, as gdrcopy
     * does: the mapping would start at the page, before addr, and reach
     * another allocation's bytes there.  FORCE_PCIE asks for the BAR
     * where the CPU could reach the memory coherently (a WC mapping
     * instead of a cached one); on PCIe hosts every mapping is the BAR. */
    uint32_t extra = (addr & GPU_PAGE_OFFSET) ? GDRX_PIN_FLAG_NO_MAP : 0;
    if (flags & GDR_PIN_FLAG_FORCE_PCIE)
        extra |= GDRX_PIN_FLAG_FORCE_PCIE;
    /* The range lookup needs CUDA and would fail with a misleading EINVAL
     * there: libgdrx refuses the pin itself (ENODEV) and logs why. */
    if (opened_without_cuda(g))
        return gdrapi_err(gdrx_pin(gdrapi_ctx(g), addr, size, extra, &p));
    int rc = gdrapi_pin_range(addr, size, &r);
    if (rc)
        return rc;
    rc = gdrx_pin(gdrapi_ctx(g), r.dptr, r.len, r.flags | extra, &p);
    /* a span the backend cannot pin as one piece: the allocation the
     * request is for; any other error is the caller's */
    if ((rc == -EINVAL || rc == -EOPNOTSUPP) && r.flags == GDRX_PIN_FLAG_SPAN) {
        rc = gdrapi_fallback_range(addr, size, &r);
        if (rc)
            return rc;
        rc = gdrx_pin(gdrapi_ctx(g), r.dptr, r.len, r.flags | extra, &p);
    }
    if (rc)
        return gdrapi_err(rc);
    rc = check_va(g, p, addr);
    if (rc)
        return rc;
    *handle = gdrapi_mh(p);
    return 0;
}

/* The P2P tokens are obsolete: gdrcopy 2.6 over gdrdrv 2.5 or later pins
 * with PIN_BUFFER_V2, which has no place for them, so they are dropped. */
GDRAPI_EXPORT int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token,
                                 uint32_t va_space, gdr_mh_t *handle)
{
    (void)p2p_token;
    (void)va_space;
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
