/*
 * ut_ucp.h - what the gdrx UCP suites share: a UCP context, worker and
 * endpoint to itself over a chosen UCX_TLS, tag messages between host or
 * device buffers with the data checked, and the bytes gdrx moved.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UT_UCP_H
#define UT_UCP_H

#include <ucp/api/ucp.h>

#include "ut_uct.h"

enum ut_kind { UT_HOST, UT_DEV };

struct ut_ucp {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    char          stats[128]; /* UCX_GDRX_STATS_DUMP file */
};

/* UCX_MEMTYPE_CACHE for the next ut_ucp_init (NULL: UCX's default). */
extern const char *ut_ucp_memtype_cache;

/* UCP over UCX_TLS=tls (NULL: unset, UCX's default), gdrx's counters to t->stats; backend, if not NULL,
 * is set for gdrx's MD through UCP's own configuration (ucp_config_modify,
 * as a program or MPI library may do).  No CUnit assertion in this and the
 * two below (children run them outside any test case): the status. */
ucs_status_t ut_ucp_init(struct ut_ucp *t, const char *tls,
                         const char *backend);
/* A worker of t's context and an endpoint to itself. */
ucs_status_t ut_ucp_worker(struct ut_ucp *t);
/* A request's final status (one that completed at once: UCS_OK). */
ucs_status_t ut_wait_status(struct ut_ucp *t, void *req);

/* Waits for a request, failing the test case unless it ends with UCS_OK. */
void ut_wait(struct ut_ucp *t, void *req);

/* ut_ucp_init and ut_ucp_worker, failing the test case if either fails. */
void ut_ucp_open_tls(struct ut_ucp *t, const char *tls, const char *backend);
void ut_ucp_close(struct ut_ucp *t);

/* One tag message of len bytes from a buffer of kind from to one of kind
 * to, seeded pattern, checked at the receiver. */
void ut_transfer(struct ut_ucp *t, enum ut_kind from, enum ut_kind to,
                 size_t len, uint32_t seed);

/* The same between given buffers (not freed). */
void ut_transfer_at(struct ut_ucp *t, void *src, enum ut_kind from,
                    void *dst, enum ut_kind to, size_t len, uint32_t seed);

/* One tagged message from src to dst, both device memory that stays
 * allocated (so the registrations the rendezvous made stay cached),
 * seeded pattern, checked at the receiver. */
void ut_send_kept(struct ut_ucp *t, CUdeviceptr src, CUdeviceptr dst,
                  size_t len, uint32_t seed);

/* Bytes gdrx moved (every operation and direction) in a counter dump. */
long ut_gdrx_bytes(const char *stats);

#endif
