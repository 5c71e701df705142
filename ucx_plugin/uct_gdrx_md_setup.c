/*
 * uct_gdrx_md_setup.c - what the gdrx MD sets up at its first use rather
 * than at md_open: libgdrx's context (whose gdrx_open installs CUDA free
 * hooks), the CUDA event bridge, the registration cache.  UCP opens the MDs
 * of every component, also of transports UCX_TLS leaves out; those must
 * leave the process as they found it.
 *
 * A set-up that fails (a backend that does not open, CUDA that does not
 * initialise) does not fail the job: the MD stands aside.  UCP took the
 * MD's capabilities at ucp_init, before this, and would fail a registration
 * or a worker for an MD or interface that refuses, so they still answer:
 * the interface opens with only what UCP cannot do without, at figures
 * any transport beats (uct_gdrx_iface.c), memory queries claim nothing
 * (uct_gdrx_md.c), registrations map nothing (uct_gdrx_md_reg.c).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_md_setup.h"
#include "uct_gdrx_events.h"
#include "uct_gdrx_mem.h"
#include "uct_gdrx_rcache.h"

#include <stdio.h>
#include <ucs/debug/log.h>


/* The first MD of the process that stands aside says why as a warning,
 * later ones (more UCP contexts) at diag level. */
static int uct_gdrx_md_aside_said;


void uct_gdrx_md_setup_init(uct_gdrx_md_t *md,
                            const uct_gdrx_md_config_t *config)
{
    md->state               = UCT_GDRX_MD_STATE_IDLE;
    md->events_state        = UCT_GDRX_EVENTS_OFF;
    md->setup.backend       = (gdrx_backend_t)config->backend;
    md->setup.mem_events    = config->mem_events;
    md->setup.enable_rcache = config->enable_rcache;
    md->setup.status        = UCS_OK;
    uct_gdrx_rcache_params_init(&md->setup.rcache, config);
    pthread_mutex_init(&md->setup_lock, NULL);
}

static ucs_status_t uct_gdrx_md_open_ctx(uct_gdrx_md_t *md, char *why,
                                         size_t why_len)
{
    struct gdrx_open_params params;
    int ret;

    gdrx_open_params_init(&params);
    params.backend = md->setup.backend;
    ret            = gdrx_open(&params, &md->ctx);
    if (ret != 0) {
        snprintf(why, why_len, "cannot open a libgdrx context (backend %s): "
                 "%s", gdrx_backend_name(md->setup.backend),
                 gdrx_strerror(ret));
    }
    return uct_gdrx_mem_status(ret);
}

static void uct_gdrx_md_put_events(uct_gdrx_md_t *md)
{
    if (md->events_state != UCT_GDRX_EVENTS_OFF) {
        uct_gdrx_events_put();
    }
}

static ucs_status_t uct_gdrx_md_setup(uct_gdrx_md_t *md, char *why,
                                      size_t why_len)
{
    ucs_status_t status;

    /* Events before gdrx_open: UCX's bistro cannot move the one-byte entry
     * patch gdrx_open installs on libcuda, while gdrx chains behind UCX's,
     * so UCX's CUDA hooks go in first.  MEM_EVENTS=n installs nothing: UCX
     * then needs UCX_MEMTYPE_CACHE=n, and cache hits are checked against
     * the buffer id */
    md->events_state = md->setup.mem_events ? uct_gdrx_events_get() :
                                              UCT_GDRX_EVENTS_OFF;
    md->events       = 0;

    status = uct_gdrx_md_open_ctx(md, why, why_len);
    if (status != UCS_OK) {
        uct_gdrx_md_put_events(md);
        md->events_state = UCT_GDRX_EVENTS_OFF;
        return status;
    }

    /* Cache hits trust the events only where every free reaches them: the
     * bridge (or UCX's hooks) heard, and libgdrx hooked every free entry
     * point of this libcuda (gdrx_open installs them for a subscriber).
     * One landing missing, and hits check the buffer id (issue 29). */
    md->events = uct_gdrx_events_state_hears_frees(md->events_state) &&
                 uct_gdrx_events_gdrx_revokes();
    if (uct_gdrx_events_state_hears_frees(md->events_state) && !md->events) {
        ucs_debug("gdrx: not every CUDA free entry point is hooked: cache "
                  "hits are checked against the allocation's buffer id");
    }

    if (md->setup.enable_rcache != UCS_NO) {
        status = uct_gdrx_rcache_create(md);
        if ((status != UCS_OK) && (md->setup.enable_rcache == UCS_YES)) {
            snprintf(why, why_len, "cannot create the registration cache "
                     "(RCACHE=yes): %s", ucs_status_string(status));
            uct_gdrx_md_put_events(md);
            md->events_state = UCT_GDRX_EVENTS_OFF;
            gdrx_close(md->ctx);
            return status;
        } else if (status != UCS_OK) {
            md->rcache = NULL;
            ucs_debug("gdrx: no registration cache: %s",
                      ucs_status_string(status));
        }
    }
    if (uct_gdrx_events_state_hears_frees(md->events_state)) {
        uct_gdrx_events_keep();
    }
    ucs_debug("gdrx: md %p set up (events %s, %s)", md,
              uct_gdrx_events_state_name(md->events_state),
              (md->rcache != NULL) ? "rcache" : "no rcache");
    return UCS_OK;
}

/* Why the MD stands aside, once a warning per process: UCX goes on with
 * its other transports, and GPU memory is what they make of it. */
static void uct_gdrx_md_say_aside(const char *why)
{
    ucs_log_level_t level = __atomic_exchange_n(&uct_gdrx_md_aside_said, 1,
                                                __ATOMIC_RELAXED) ?
                            UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_WARN;

    ucs_log(level, "gdrx: %s; gdrx stands aside: UCX goes on with its "
            "other transports, and no GPU memory goes through gdrx", why);
}

ucs_status_t uct_gdrx_md_activate_slow(uct_gdrx_md_t *md)
{
    char why[256] = "set-up failed";
    ucs_status_t status;

    pthread_mutex_lock(&md->setup_lock);
    switch (md->state) {
    case UCT_GDRX_MD_STATE_IDLE:
        status           = uct_gdrx_md_setup(md, why, sizeof(why));
        md->setup.status = status;
        /* a failed set-up is not retried: each try costs a CUDA and
         * driver round; the MD stands aside from now on */
        if (status != UCS_OK) {
            uct_gdrx_md_say_aside(why);
        }
        __atomic_store_n(&md->state, (status == UCS_OK) ?
                         UCT_GDRX_MD_STATE_READY : UCT_GDRX_MD_STATE_ASIDE,
                         __ATOMIC_RELEASE);
        break;
    case UCT_GDRX_MD_STATE_READY:
        status = UCS_OK;
        break;
    default:
        status = md->setup.status;
        break;
    }
    pthread_mutex_unlock(&md->setup_lock);
    return status;
}

void uct_gdrx_md_setup_cleanup(uct_gdrx_md_t *md)
{
    if (md->state == UCT_GDRX_MD_STATE_READY) {
        if (md->rcache != NULL) {
            ucs_rcache_destroy(md->rcache);
        }
        uct_gdrx_md_put_events(md);
        gdrx_close(md->ctx);
    }
    pthread_mutex_destroy(&md->setup_lock);
}
