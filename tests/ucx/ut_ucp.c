/*
 * ut_ucp.c - shared UCP set-up and messages of the gdrx UCP suites (see
 * ut_ucp.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "ut_ucp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ut_ucp_memtype_cache;

ucs_status_t ut_ucp_init(struct ut_ucp *t, const char *tls,
                         const char *backend)
{
    ucp_params_t params = {0};
    ucp_config_t *config;
    ucs_status_t status;

    ut_stats_file(t->stats, sizeof(t->stats), "ucp");
    if (tls != NULL) {
        setenv("UCX_TLS", tls, 1);
    } else {
        unsetenv("UCX_TLS");
    }
    if (ut_ucp_memtype_cache != NULL) {
        setenv("UCX_MEMTYPE_CACHE", ut_ucp_memtype_cache, 1);
    } else {
        unsetenv("UCX_MEMTYPE_CACHE");
    }
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = (backend != NULL) ? ucp_config_modify(config,
                                                   UT_CONFIG_NAME("BACKEND"),
                                                   backend) :
                                 UCS_OK;
    if (status == UCS_OK) {
        status = ucp_init(&params, config, &t->context);
    }
    ucp_config_release(config);
    return status;
}

ucs_status_t ut_ucp_worker(struct ut_ucp *t)
{
    ucp_worker_params_t wparams = {0};
    ucp_ep_params_t eparams = {0};
    ucp_address_t *addr;
    ucs_status_t status;
    size_t addr_len;

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(t->context, &wparams, &t->worker);
    if (status != UCS_OK) {
        return status;
    }
    status = ucp_worker_get_address(t->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        return status;
    }
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    status = ucp_ep_create(t->worker, &eparams, &t->ep);
    ucp_worker_release_address(t->worker, addr);
    return status;
}

ucs_status_t ut_wait_status(struct ut_ucp *t, void *req)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    if (req == NULL) {
        return UCS_OK;
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(t->worker);
    }
    ucp_request_free(req);
    return status;
}

void ut_wait(struct ut_ucp *t, void *req)
{
    CU_ASSERT_EQUAL(ut_wait_status(t, req), UCS_OK);
}

void ut_ucp_open_tls(struct ut_ucp *t, const char *tls, const char *backend)
{
    CU_ASSERT_EQUAL_FATAL(ut_ucp_init(t, tls, backend), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_ucp_worker(t), UCS_OK);
}

void ut_ucp_close(struct ut_ucp *t)
{
    ucp_request_param_t param = {0};

    ut_wait(t, ucp_ep_close_nbx(t->ep, &param));
    ucp_worker_destroy(t->worker);
    ucp_cleanup(t->context);
}

static void *ut_buf(enum ut_kind kind, size_t len)
{
    return (kind == UT_DEV) ? (void*)tc_alloc(len) : calloc(1, len);
}

static void ut_buf_free(enum ut_kind kind, void *p)
{
    if (kind == UT_DEV) {
        tc_free((CUdeviceptr)p);
    } else {
        free(p);
    }
}

void ut_transfer_at(struct ut_ucp *t, void *src, enum ut_kind from,
                    void *dst, enum ut_kind to, size_t len, uint32_t seed)
{
    ucp_request_param_t param = {0};
    uint8_t *check            = malloc(len);
    void *rreq, *sreq;

    if (from == UT_DEV) {
        tc_fill((CUdeviceptr)src, len, seed);
    } else {
        tc_pattern(src, len, seed);
    }
    rreq = ucp_tag_recv_nbx(t->worker, dst, len, 7, (ucp_tag_t)-1, &param);
    sreq = ucp_tag_send_nbx(t->ep, src, len, 7, &param);
    ut_wait(t, sreq);
    ut_wait(t, rreq);
    if (to == UT_DEV) {
        CU_ASSERT(tc_check((CUdeviceptr)dst, len, seed));
    } else {
        tc_pattern(check, len, seed);
        CU_ASSERT_EQUAL(memcmp(dst, check, len), 0);
    }
    free(check);
}

void ut_transfer(struct ut_ucp *t, enum ut_kind from, enum ut_kind to,
                 size_t len, uint32_t seed)
{
    void *src = ut_buf(from, len), *dst = ut_buf(to, len);

    ut_transfer_at(t, src, from, dst, to, len, seed);
    ut_buf_free(from, src);
    ut_buf_free(to, dst);
}

long ut_gdrx_bytes(const char *stats)
{
    static const char *const ops[] = {
        "iface put_short", "iface put_bcopy", "iface put_zcopy",
        "iface get_short", "iface get_bcopy", "iface get_zcopy", NULL
    };
    const char *const *op;
    long total = 0, v;

    for (op = ops; *op != NULL; ++op) {
        v = ut_counter(stats, *op, "bytes");
        total += (v > 0) ? v : 0;
    }
    return total;
}

void ut_send_kept(struct ut_ucp *t, CUdeviceptr src, CUdeviceptr dst,
                  size_t len, uint32_t seed)
{
    ucp_request_param_t param = {0};
    void *rreq;

    tc_fill(src, len, seed);
    rreq = ucp_tag_recv_nbx(t->worker, (void*)dst, len, 9, (ucp_tag_t)-1,
                            &param);
    ut_wait(t, ucp_tag_send_nbx(t->ep, (void*)src, len, 9, &param));
    ut_wait(t, rreq);
    CU_ASSERT(tc_check(dst, len, seed));
}
