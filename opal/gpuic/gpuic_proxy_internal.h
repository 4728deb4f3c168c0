/*
 * gpuic_proxy_internal.h - what the proxy's files share.  Not installed.
 */
#ifndef GPUIC_PROXY_INTERNAL_H
#define GPUIC_PROXY_INTERNAL_H

#include "gpuic_ep.h"
#include "gpuic_mr.h"
#include "gpuic_wqe.h"

/**
 * Executes a validated accumulate WQE (raddr range already checked against the region):
 * exact UCX atomics per element, a native one where UCX has the operation, a
 * compare-and-swap loop otherwise.  Returns when every element has been updated.
 * @return GPUIC_OK, GPUIC_ERR_UNSUPPORTED (op/type pair not executed here),
 *         GPUIC_ERR_INVALID_PARAM (misaligned) or a transport error.
 */
gpuic_status_t gpuic_proxy_accumulate(gpuic_ep_t *ep, const gpuic_rkey_t *rkey,
                                      const gpuic_wqe_desc_t *desc);

#endif /* GPUIC_PROXY_INTERNAL_H */
