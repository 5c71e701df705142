/*
 * backend_select.c - which backend a context uses.
 *
 * SPDX-License-Identifier: MIT
 *
 * An explicit choice in gdrx_open_params wins; with GDRX_BACKEND_AUTO the
 * environment variable GDRX_BACKEND (gdrdrv|nvrm|dmabuf|auto) decides, and
 * without it the first backend that opens, in the order gdrdrv, nvrm,
 * dmabuf.  The nvrm backend lives in libgdr/src/nvrm/ and is referenced
 * only when its local.mk defines GDRX_HAVE_NVRM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "log.h"

static const struct gdrx_backend_ops *const backends[] = {
    &gdrx_backend_gdrdrv_ops,
#ifdef GDRX_HAVE_NVRM
    &gdrx_backend_nvrm_ops,
#endif
    &gdrx_backend_dmabuf_ops,
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* GDRX_BACKEND, or AUTO when unset or empty; -EINVAL for an unknown name
 * (a typo should not silently select another backend). */
static int backend_from_env(gdrx_backend_t *out)
{
    static const gdrx_backend_t ids[] = {
        GDRX_BACKEND_AUTO, GDRX_BACKEND_GDRDRV, GDRX_BACKEND_NVRM, GDRX_BACKEND_DMABUF,
    };
    const char *v = secure_getenv("GDRX_BACKEND");

    *out = GDRX_BACKEND_AUTO;
    if (!v || !*v)
        return 0;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        if (strcmp(v, gdrx_backend_name(ids[i])) == 0) {
            *out = ids[i];
            return 0;
        }
    }
    gdrx_err("GDRX_BACKEND=%s: expected gdrdrv, nvrm, dmabuf or auto", v);
    return -EINVAL;
}

/* What select_backend does with each backend it tries. */
enum select_mode {
    SELECT_OPEN,     /* open it (gdrx_open) */
    SELECT_PROBE,    /* open and close it, or its probe op (gdrx_probe) */
    SELECT_PRECHECK, /* its prerequisites only, no CUDA (GDRX_PROBE_FLAG_NO_CUDA) */
};

static int open_one(const struct gdrx_backend_ops *ops, void **bctx, enum select_mode mode)
{
    int rc;

    switch (mode) {
    case SELECT_OPEN:
        rc = ops->open(bctx);
        break;
    case SELECT_PROBE:
        if (ops->probe) {
            rc = ops->probe();
        } else {
            rc = ops->open(bctx);
            if (rc == 0)
                ops->close(*bctx);
        }
        break;
    default:
        rc = ops->precheck ? ops->precheck() : -EOPNOTSUPP;
        break;
    }
    if (rc)
        gdrx_info("backend %s unavailable: %s", ops->name, gdrx_strerror(rc));
    return rc;
}

static int select_backend(gdrx_backend_t want, enum select_mode mode,
                          const struct gdrx_backend_ops **ops, void **bctx)
{
    if (want == GDRX_BACKEND_AUTO) {
        int rc = backend_from_env(&want);
        if (rc)
            return rc;
    }
    if (want != GDRX_BACKEND_AUTO) {
        for (size_t i = 0; i < NBACKENDS; i++) {
            if (backends[i]->id != want)
                continue;
            *ops = backends[i];
            return open_one(backends[i], bctx, mode);
        }
        gdrx_err("backend %s is not built into this libgdrx", gdrx_backend_name(want));
        return -ENODEV;
    }
    int rc = -ENODEV;
    for (size_t i = 0; i < NBACKENDS; i++) {
        rc = open_one(backends[i], bctx, mode);
        if (rc == 0) {
            *ops = backends[i];
            return 0;
        }
    }
    /* a precheck that finds nothing is an answer, not a failure */
    if (mode == SELECT_PRECHECK)
        gdrx_info("no backend can be told to work without CUDA (last error %s)",
                  gdrx_strerror(rc));
    else
        gdrx_err("no backend works (last error %s)", gdrx_strerror(rc));
    return rc;
}

int gdrx_backend_open(gdrx_backend_t want, const struct gdrx_backend_ops **ops, void **bctx)
{
    return select_backend(want, SELECT_OPEN, ops, bctx);
}

int gdrx_backend_probe(gdrx_backend_t want, const struct gdrx_backend_ops **ops)
{
    void *bctx = NULL;

    return select_backend(want, SELECT_PROBE, ops, &bctx);
}

int gdrx_backend_precheck(gdrx_backend_t want, const struct gdrx_backend_ops **ops)
{
    void *bctx = NULL;

    return select_backend(want, SELECT_PRECHECK, ops, &bctx);
}

void gdrx_backends_fork_lock(void)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (backends[i]->fork_lock)
            backends[i]->fork_lock();
}

void gdrx_backends_fork_unlock(void)
{
    for (size_t i = NBACKENDS; i-- > 0;)
        if (backends[i]->fork_unlock)
            backends[i]->fork_unlock();
}

void gdrx_backends_fork_child(void)
{
    for (size_t i = NBACKENDS; i-- > 0;) {
        if (backends[i]->fork_child)
            backends[i]->fork_child();
        else if (backends[i]->fork_unlock)
            backends[i]->fork_unlock();
    }
}
