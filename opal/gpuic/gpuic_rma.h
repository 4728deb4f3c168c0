/*
 * gpuic_rma.h - host-initiated RMA on an endpoint: put, get and remote atomics.
 *
 * Puts, gets and non-fetching atomics are non-blocking: they return once issued, and complete
 * at the target by the next flush of the endpoint or context (gpuic_ep_flush(),
 * gpuic_context_flush()).  Until then neither the origin buffer of a put nor the result
 * buffer of a get may be touched.  Fetching atomics block until the result is in hand.
 */
#ifndef GPUIC_RMA_H
#define GPUIC_RMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "gpuic_ep.h"
#include "gpuic_mr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Remote atomic operations on 4- or 8-byte integers. */
typedef enum gpuic_atomic_op {
    GPUIC_ATOMIC_ADD,   /**< *raddr += value */
    GPUIC_ATOMIC_AND,   /**< *raddr &= value */
    GPUIC_ATOMIC_OR,    /**< *raddr |= value */
    GPUIC_ATOMIC_XOR,   /**< *raddr ^= value */
    GPUIC_ATOMIC_SWAP,  /**< *raddr = value (fetching only) */
    GPUIC_ATOMIC_CSWAP  /**< if (*raddr == compare) *raddr = value (fetching only) */
} gpuic_atomic_op_t;

/**
 * Local-completion counter: how many operations issued with it have not yet completed locally
 * (a put's source buffer may be reused, a get's data has arrived).  Zero-initialise it.
 */
typedef struct gpuic_lcc {
    uint64_t outstanding; /**< accessed atomically */
} gpuic_lcc_t;

/**
 * Waits, progressing @p ctx, until every operation counted by @p lcc is complete locally.
 * Remote completion of puts is not waited for.
 * @return GPUIC_OK, or GPUIC_ERR_TIMED_OUT after the context's timeout (gpuic_context_set_timeout()).
 */
gpuic_status_t gpuic_lcc_wait(gpuic_context_t *ctx, gpuic_lcc_t *lcc);

/**
 * Completion record of the callback-reporting calls (gpuic_rma_put_nb(), gpuic_rma_get_nb(),
 * gpuic_context_flush_nb()).  The caller embeds it in its own per-operation structure and
 * recovers that structure in the callback; nothing is allocated per operation.
 */
typedef struct gpuic_rma_completion {
    /** Called once from gpuic_context_progress() with the operation's outcome. */
    void (*cb)(struct gpuic_rma_completion *self, gpuic_status_t status);
} gpuic_rma_completion_t;

/** Issues a put of @p len bytes from @p buf to @p raddr under @p rkey. */
gpuic_status_t gpuic_rma_put(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                             const gpuic_rkey_t *rkey);

/** Issues a get of @p len bytes from @p raddr under @p rkey into @p buf. */
gpuic_status_t gpuic_rma_get(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                             const gpuic_rkey_t *rkey);

/** gpuic_rma_put(), counted in @p lcc until the source buffer may be reused. */
gpuic_status_t gpuic_rma_put_lcc(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                                 const gpuic_rkey_t *rkey, gpuic_lcc_t *lcc);

/** gpuic_rma_get(), counted in @p lcc until the data has arrived. */
gpuic_status_t gpuic_rma_get_lcc(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                                 const gpuic_rkey_t *rkey, gpuic_lcc_t *lcc);

/**
 * Issues a put and reports its local completion (the buffer may be reused).
 * @return GPUIC_OK when it completed locally at once (@p comp is not called),
 *         GPUIC_INPROGRESS when @p comp->cb will be called, or an error (not called).
 *         Remote completion still comes from a flush.
 */
gpuic_status_t gpuic_rma_put_nb(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                                const gpuic_rkey_t *rkey, gpuic_rma_completion_t *comp);

/**
 * Issues a get and reports its completion (the data is in @p buf).
 * @return as gpuic_rma_put_nb().
 */
gpuic_status_t gpuic_rma_get_nb(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                                const gpuic_rkey_t *rkey, gpuic_rma_completion_t *comp);

/**
 * Starts a flush of every endpoint of the context (remote completion of everything issued so
 * far).  @return GPUIC_OK when nothing was outstanding (@p comp is not called),
 * GPUIC_INPROGRESS when @p comp->cb will be called, or an error (not called).
 */
gpuic_status_t gpuic_context_flush_nb(gpuic_context_t *ctx, gpuic_rma_completion_t *comp);

/**
 * Issues a non-fetching atomic (ADD, AND, OR, XOR) of @p size (4 or 8) bytes.
 * @return GPUIC_ERR_INVALID_PARAM for SWAP/CSWAP or another size.
 */
gpuic_status_t gpuic_rma_atomic_post(gpuic_ep_t *ep, gpuic_atomic_op_t op, uint64_t value,
                                     size_t size, uint64_t raddr, const gpuic_rkey_t *rkey);

/**
 * Performs a fetching atomic of @p size (4 or 8) bytes and waits for its result: the target's
 * old value goes to *result_p (zero-extended for size 4).  @p compare is used by CSWAP only.
 * AND, OR and XOR take compare-and-swap rounds (UCX 1.13's own fetching forms corrupt the word
 * over shared memory).  Gives up with GPUIC_ERR_TIMED_OUT after the context's timeout; the
 * atomic may still happen.
 */
gpuic_status_t gpuic_rma_atomic_fetch(gpuic_ep_t *ep, gpuic_atomic_op_t op, uint64_t value,
                                      uint64_t compare, size_t size, uint64_t raddr,
                                      const gpuic_rkey_t *rkey, uint64_t *result_p);

/**
 * Copies @p len bytes between @p local in this process and address @p raddr in process @p pid
 * on the same node (cross-memory attach, process_vm_writev/readv): into the peer when
 * @p is_put, else out of it.  Complete at both ends on return; no UCX involved.
 * GPUIC_ERR_UNSUPPORTED when the system refuses this process access to the peer (ptrace
 * policy, no such call), GPUIC_ERR_PEER_FAILED when the peer is gone, GPUIC_ERR_OUT_OF_RANGE
 * when an address is not mapped.
 */
gpuic_status_t gpuic_cma_copy(int pid, void *local, uint64_t raddr, size_t len, int is_put);

/** Pairs of pieces one cross-memory call moves at most (the kernel's UIO_MAXIOV). */
#define GPUIC_CMA_IOV_MAX 1024

/**
 * gpuic_cma_copy() of @p n pieces at once: piece i moves between @p local[i] and @p remote[i]
 * (addresses in process @p pid), which must have the same length; one system call per
 * GPUIC_CMA_IOV_MAX pieces.  Both arrays are consumed (changed) on the way.  Same statuses.
 */
gpuic_status_t gpuic_cma_copyv(int pid, struct iovec *local, struct iovec *remote, size_t n,
                               int is_put);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_RMA_H */
