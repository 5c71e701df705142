/*
 * gdrx.c - the public entry points (except the copies, in fastpath.c):
 * argument checks, handle lookup and locking around the work in context.c
 * and pin.c.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every bad input is rejected before anything changes, and outputs are
 * written only on success.
 */
#include <errno.h>
#include <string.h>

#include "core.h"
#include "export.h"
#include "fork_defer.h"
#include "log.h"

GDRX_EXPORT void gdrx_open_params_init(struct gdrx_open_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof(*params));
    params->struct_size = sizeof(*params);
    params->backend = GDRX_BACKEND_AUTO;
}

/* The backend and flags params ask for (NULL: defaults); flags outside
 * allowed are refused.  A caller built against a newer header may pass a
 * bigger struct; that is fine as long as the fields we do not know are
 * zero (not asked for). */
static int open_params_read(const struct gdrx_open_params *p, uint32_t allowed,
                            gdrx_backend_t *want, uint32_t *flags)
{
    if (!p) {
        *want = GDRX_BACKEND_AUTO;
        *flags = 0;
        return 0;
    }
    if (p->struct_size < sizeof(*p))
        return -EINVAL;
    const unsigned char *extra = (const unsigned char *)p + sizeof(*p);
    for (size_t i = 0; i < p->struct_size - sizeof(*p); i++)
        if (extra[i])
            return -EINVAL;
    if (p->flags & ~allowed)
        return -EINVAL;
    switch (p->backend) {
    case GDRX_BACKEND_AUTO:
    case GDRX_BACKEND_GDRDRV:
    case GDRX_BACKEND_NVRM:
    case GDRX_BACKEND_DMABUF:
        *want = p->backend;
        *flags = p->flags;
        return 0;
    }
    return -EINVAL;
}

GDRX_EXPORT int gdrx_open(const struct gdrx_open_params *params, gdrx_t *ctx_out)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    gdrx_backend_t want;
    uint32_t flags;
    uint64_t id;

    if (!ctx_out)
        return -EINVAL;
    int rc = open_params_read(params, GDRX_OPEN_FLAG_NO_CUDA_FALLBACK, &want, &flags);
    if (rc == 0)
        rc = gdrx_ctx_open(want, flags, &id);
    if (rc == 0)
        ctx_out->id = id;
    return rc;
}

GDRX_EXPORT int gdrx_probe(const struct gdrx_open_params *params, gdrx_backend_t *backend_out)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    gdrx_backend_t want, found = GDRX_BACKEND_AUTO;
    uint32_t flags;

    int rc = open_params_read(params, GDRX_PROBE_FLAG_NO_CUDA, &want, &flags);
    if (rc == 0 && (flags & GDRX_PROBE_FLAG_NO_CUDA))
        rc = gdrx_ctx_precheck(want, &found);
    else if (rc == 0)
        rc = gdrx_ctx_probe(want, &found);
    if (rc == 0 && backend_out)
        *backend_out = found;
    return rc;
}

GDRX_EXPORT int gdrx_close(gdrx_t ctx)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    return gdrx_ctx_close(ctx.id);
}

GDRX_EXPORT int gdrx_pin(gdrx_t ctx, uint64_t dptr, size_t len, uint32_t flags,
                         gdrx_pin_t *pin_out)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!pin_out || len == 0 || dptr == 0 || (flags & ~(GDRX_PIN_FLAG_SPAN | GDRX_PIN_FLAG_NO_MAP |
                                                      GDRX_PIN_FLAG_FORCE_PCIE)) ||
        len > UINT64_MAX - dptr)
        return -EINVAL;
    struct gdrx_ctx *c;
    int rc = gdrx_ctx_get(ctx.id, &c);
    if (rc)
        return rc;
    uint64_t id;
    if (atomic_load_explicit(&c->state, memory_order_relaxed) == GDRX_CTX_NO_CUDA) {
        gdrx_err("cannot pin: CUDA cannot be used in this process (a fork() child of a "
                 "process that used CUDA); pin in the parent, or exec a new program");
        rc = -ENODEV;
    } else {
        rc = gdrx_pin_create(c, dptr, len, flags, &id);
    }
    gdrx_ctx_put(c);
    if (rc == 0)
        pin_out->id = id;
    return rc;
}

/* The shape of every per-pin entry point: context read-locked, pin locked
 * and checked to be live and of this context, then op.  op returns with the
 * pin's lock still held, except the unpin op, which releases it. */
typedef int (*pin_op_fn)(struct gdrx_pin *pin, void *arg);

static int with_pin(gdrx_t ctx, gdrx_pin_t pin, pin_op_fn op, void *arg, int op_unlocks)
{
    struct gdrx_ctx *c;
    struct gdrx_pin *p;
    int rc = gdrx_ctx_get(ctx.id, &c);

    if (rc)
        return rc;
    rc = gdrx_pin_get_locked(c, pin.id, &p);
    if (rc) {
        gdrx_ctx_put(c);
        return rc;
    }
    rc = op(p, arg);
    if (!op_unlocks)
        gdrx_mutex_unlock(&p->lock, GDRX_LOCK_PIN);
    gdrx_ctx_put(c);
    return rc;
}

static int unpin_op(struct gdrx_pin *p, void *arg)
{
    (void)arg;
    return gdrx_pin_on_unpin(p);
}

static int map_op(struct gdrx_pin *p, void *arg)
{
    return gdrx_pin_map_locked(p, arg);
}

static int unmap_op(struct gdrx_pin *p, void *arg)
{
    (void)arg;
    return gdrx_pin_on_unmap(p);
}

static int query_op(struct gdrx_pin *p, void *arg)
{
    return gdrx_pin_query_locked(p, arg);
}

GDRX_EXPORT int gdrx_unpin(gdrx_t ctx, gdrx_pin_t pin)
{
    int rc;

    if (gdrx_fork_defer(gdrx_unpin, 1, ctx, pin, &rc))
        return rc;
    return with_pin(ctx, pin, unpin_op, NULL, 1);
}

GDRX_EXPORT int gdrx_map(gdrx_t ctx, gdrx_pin_t pin, void **cpu_ptr)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!cpu_ptr)
        return -EINVAL;
    return with_pin(ctx, pin, map_op, cpu_ptr, 0);
}

GDRX_EXPORT int gdrx_unmap(gdrx_t ctx, gdrx_pin_t pin)
{
    int rc;

    if (gdrx_fork_defer(gdrx_unmap, 0, ctx, pin, &rc))
        return rc;
    return with_pin(ctx, pin, unmap_op, NULL, 0);
}

GDRX_EXPORT int gdrx_pin_query(gdrx_t ctx, gdrx_pin_t pin, struct gdrx_pin_info *info)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!info)
        return -EINVAL;
    return with_pin(ctx, pin, query_op, info, 0);
}

struct variants_arg {
    gdrx_copy_variant_t *to, *from;
};

static int variants_op(struct gdrx_pin *p, void *arg)
{
    struct variants_arg *a = arg;

    return gdrx_pin_copy_variants_locked(p, a->to, a->from);
}

GDRX_EXPORT int gdrx_pin_copy_variants(gdrx_t ctx, gdrx_pin_t pin, gdrx_copy_variant_t *to,
                                       gdrx_copy_variant_t *from)
{
    struct variants_arg a = { to, from };

    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    return with_pin(ctx, pin, variants_op, &a, 0);
}

static int ctx_attr(struct gdrx_ctx *c, gdrx_attr_t attr, uint64_t *value)
{
    uint64_t v = 0;
    int rc = 0;

    /* no backend context and no CUDA to ask (context.c) */
    int no_cuda = atomic_load_explicit(&c->state, memory_order_relaxed) == GDRX_CTX_NO_CUDA;
    switch (attr) {
    case GDRX_ATTR_BACKEND:
        v = (uint64_t)c->ops->id;
        break;
    case GDRX_ATTR_DRIVER_VERSION:
        if (no_cuda)
            return -ENODEV;
        if (!c->ops->driver_version)
            return -EOPNOTSUPP;
        rc = c->ops->driver_version(c->bctx, &v);
        break;
    case GDRX_ATTR_CUDA_DRIVER_VERSION:
        if (no_cuda)
            return -ENODEV;
        v = (uint64_t)c->dev.cu->driver_version;
        break;
    case GDRX_ATTR_DEVICE_COUNT:
        v = (uint64_t)c->dev.count;
        break;
    case GDRX_ATTR_COPY_TO_VARIANT:
        v = (uint64_t)gdrx_copy_default()->variant;
        break;
    case GDRX_ATTR_COPY_FROM_VARIANT:
        v = (uint64_t)gdrx_copy_default()->from_variant;
        break;
    case GDRX_ATTR_PIN_FLAG_FORCE_PCIE:
        if (no_cuda)
            return -ENODEV;
        v = c->ops->force_pcie ? (uint64_t)c->ops->force_pcie(c->bctx) : 1;
        break;
    case GDRX_ATTR_PIN_COUNT:
        v = atomic_load_explicit(&c->pin_count, memory_order_relaxed);
        break;
    default:
        return -EINVAL;
    }
    if (rc == 0)
        *value = v;
    return rc;
}

GDRX_EXPORT int gdrx_get_attr(gdrx_t ctx, gdrx_attr_t attr, uint64_t *value)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!value)
        return -EINVAL;
    struct gdrx_ctx *c;
    int rc = gdrx_ctx_get(ctx.id, &c);
    if (rc)
        return rc;
    rc = ctx_attr(c, attr, value);
    gdrx_ctx_put(c);
    return rc;
}
