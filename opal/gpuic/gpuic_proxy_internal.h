/*
 * gpuic_proxy_internal.h - what the proxy's files share.  Not installed.
 */
#ifndef GPUIC_PROXY_INTERNAL_H
#define GPUIC_PROXY_INTERNAL_H

#include "gpuic_ep.h"
#include "gpuic_keytable.h"
#include "gpuic_mr.h"
#include "gpuic_proxy.h"
#include "gpuic_rma.h"
#include "gpuic_wqe.h"

/**
 * One atomic of @p size (4 or 8) bytes at @p raddr of the region of @p e (raddr validated):
 * a CPU atomic instruction on the mapping when e->cpu_atomics, else a UCX atomic.  With
 * @p old_p the old value is stored there on return; without, the atomic is posted (SWAP and
 * CSWAP need @p old_p) and completes with the next flush of the context.
 * @return GPUIC_OK, GPUIC_ERR_UNSUPPORTED (a mapping without cpu_atomics and no endpoint)
 *         or a transport error.
 */
gpuic_status_t gpuic_proxy_atomic(const gpuic_keytable_entry_t *e, gpuic_atomic_op_t op,
                                  uint64_t value, uint64_t compare, uint32_t size,
                                  uint64_t raddr, uint64_t *old_p);

/** Whether gpuic_proxy_atomic() on @p e goes through UCX (so a flush must complete it). */
int gpuic_proxy_atomic_uses_ucx(const gpuic_keytable_entry_t *e);

/**
 * Executes a validated accumulate WQE (raddr range already checked against the region of
 * @p e): exact atomics per element (gpuic_proxy_atomic()), a native one where there is the
 * operation, a compare-and-swap loop otherwise.  Returns when every element has been updated
 * (posted UCX atomics: issued, complete with the next flush).
 * @return GPUIC_OK, GPUIC_ERR_UNSUPPORTED (op/type pair not executed here, or no atomic for
 *         the region), GPUIC_ERR_INVALID_PARAM (misaligned) or a transport error.
 */
gpuic_status_t gpuic_proxy_accumulate(const gpuic_keytable_entry_t *e,
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
