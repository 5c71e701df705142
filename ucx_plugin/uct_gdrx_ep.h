/*
 * uct_gdrx_ep.h - gdrx endpoints: put/get of every size class, done by the
 * CPU through the remote key's BAR mapping before the call returns.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_EP_H
#define UCT_GDRX_EP_H

#include "uct_gdrx_iface.h"


typedef struct uct_gdrx_ep {
    uct_base_ep_t super;
} uct_gdrx_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_gdrx_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gdrx_ep_t, uct_ep_t);

ucs_status_t uct_gdrx_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ucs_status_t uct_gdrx_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                   unsigned length, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ssize_t uct_gdrx_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                              void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_gdrx_ep_get_bcopy(uct_ep_h tl_ep,
                                   uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_gdrx_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_gdrx_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                   size_t iovcnt, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);

#endif
