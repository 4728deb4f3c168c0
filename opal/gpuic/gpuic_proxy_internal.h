/*
 * gpuic_proxy_internal.h - what the proxy's files share.  Not installed.
 */
#ifndef GPUIC_PROXY_INTERNAL_H
#define GPUIC_PROXY_INTERNAL_H

#include "gpuic_ep.h"
#include "gpuic_mr.h"
#include "gpuic_proxy.h"
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

/** Faults the proxy thread can be made to have, for tests of its waiters. */
typedef enum gpuic_proxy_fault {
    GPUIC_PROXY_FAULT_NONE, /**< run normally (clears a hang) */
    GPUIC_PROXY_FAULT_EXIT, /**< return from the thread at its next pass, draining nothing,
                                 as if it had died */
    GPUIC_PROXY_FAULT_HANG, /**< stop at its next pass (heartbeat standing still) until the
                                 fault is cleared or the proxy destroyed */
    GPUIC_PROXY_FAULT_UNFLUSHED /**< keep running, but treat no round as flushed (a transport
                                     that never completes a flush, as to a dead peer) until
                                     the fault is cleared */
} gpuic_proxy_fault_t;

/**
 * Test hook: gives the proxy thread @p fault from the next pass of its loop on; for a fault,
 * returns once the thread has reached it (if the thread runs).
 */
void gpuic_proxy_test_fault(gpuic_proxy_t *proxy, gpuic_proxy_fault_t fault);

#endif /* GPUIC_PROXY_INTERNAL_H */
