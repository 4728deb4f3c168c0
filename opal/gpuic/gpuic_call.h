/*
 * gpuic_call.h - a remote call: a small request executed by a handler in the target process,
 * answered with a status and a few bytes, over UCX active messages.
 *
 * It carries what one-sided UCX operations cannot: work the target must do itself, such as an
 * atomic on device memory, which only the target's GPU can apply atomically with the device's
 * own atomics (gpuic_call_atomic_t below is the request the osc component executes).
 *
 * Every context answers calls on its worker and on its serving worker (if any): with the
 * handler set by gpuic_context_set_call_handler(), or with GPUIC_ERR_UNSUPPORTED where none is
 * set.  A request is served when the target progresses the worker its origin's endpoint
 * connects to (gpuic_context_progress(), gpuic_context_serve_progress()).
 */
#ifndef GPUIC_CALL_H
#define GPUIC_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuic_context.h"
#include "gpuic_ep.h"
#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most bytes of a request and of a reply. */
#define GPUIC_CALL_MAX_BYTES 1024

/**
 * A call handler: executes one request and writes its reply.  Runs inside the progress of the
 * worker the request came to (any thread that progresses it); it may block briefly, and must
 * not progress that worker itself.
 * @param arg        gpuic_context_set_call_handler()'s @p arg
 * @param req        the request bytes (valid during the call only)
 * @param req_len    their length
 * @param reply      where the reply bytes go
 * @param reply_cap  room there (the origin's reply capacity, at most GPUIC_CALL_MAX_BYTES)
 * @param reply_len_p receives the reply's length (0 when none)
 * @return the status the origin's gpuic_ep_call() returns; GPUIC_ERR_NO_RESOURCE says the
 *         target was busy and did nothing: gpuic_ep_call() sends the request again.
 */
typedef gpuic_status_t (*gpuic_call_handler_t)(void *arg, const void *req, size_t req_len,
                                               void *reply, size_t reply_cap,
                                               size_t *reply_len_p);

/**
 * Sets the handler of the calls the context's workers receive (NULL: answer
 * GPUIC_ERR_UNSUPPORTED).  Set it before peers call; changing it while calls are served is
 * not supported.
 */
void gpuic_context_set_call_handler(gpuic_context_t *ctx, gpuic_call_handler_t fn, void *arg);

/**
 * Sends a request to the peer of @p ep and waits for its reply, progressing the endpoint's
 * context (and the serving worker named by gpuic_context_serve_also()) like the other waits of
 * the context.  Thread-safe on a context made for several threads: each call's reply is
 * matched by a token.
 * @param ep          the peer (its worker or serving worker)
 * @param req         request bytes (at most GPUIC_CALL_MAX_BYTES)
 * @param req_len     their length (> 0)
 * @param reply       receives the reply bytes (may be NULL when @p reply_cap is 0)
 * @param reply_cap   room in @p reply (at most GPUIC_CALL_MAX_BYTES are used)
 * @param reply_len_p receives the reply's length (may be NULL)
 * @return the handler's status; GPUIC_ERR_INVALID_PARAM for sizes out of range;
 *         GPUIC_ERR_TIMED_OUT when the context's timeout passed without a reply (a reply that
 *         comes later is dropped: the request may still have been executed);
 *         GPUIC_ERR_UNSUPPORTED when the peer has no handler; another error when the
 *         transport failed.  A handler's GPUIC_ERR_NO_RESOURCE (busy) makes the call send the
 *         request again, backing off, until the context's timeout (then GPUIC_ERR_TIMED_OUT).
 */
gpuic_status_t gpuic_ep_call(gpuic_ep_t *ep, const void *req, size_t req_len, void *reply,
                             size_t reply_cap, size_t *reply_len_p);

/** Operations of a gpuic_call_atomic_t. */
enum gpuic_call_atomic_op {
    GPUIC_CALL_ACC   = 1, /**< element-wise accumulate with acc_op (a fetch returns the old
                               elements: get_accumulate, fetch_and_op, fetch-add, swap) */
    GPUIC_CALL_CAS   = 2, /**< compare-and-swap of one element (operand, then compare) */
    GPUIC_CALL_PUT_SIGNAL = 3 /**< a put of count bytes (esize 1, data) to addr, then, once
                                   they are in place, the 8-byte signal word at sig_addr
                                   updated with acc_op GPUIC_ACC_REPLACE (set) or
                                   GPUIC_ACC_SUM (add) by the value in compare: a
                                   put-with-signal in one message, so that the origin need not
                                   wait for the data's completion before it sends the signal */
};

/** gpuic_call_atomic_t.flags */
enum gpuic_call_atomic_flag {
    GPUIC_CALL_FETCH = 1  /**< the reply carries the old elements */
};

/** The most operand bytes one gpuic_call_atomic_t carries (a window agent command's inline
 *  bytes); a larger accumulate is sent in pieces, each element atomic on its own. */
#define GPUIC_CALL_ATOMIC_INLINE 448

/**
 * An atomic, accumulate or put-with-signal executed at the target, on its own memory (a GPU
 * window's device memory): the request gpuic_ep_call() sends; the reply is the old elements
 * (count * element size bytes) when GPUIC_CALL_FETCH is set, nothing otherwise.  Fields in the origin's byte
 * order (the peers of one job share it).
 */
typedef struct gpuic_call_atomic {
    uint64_t addr;     /**< the first target element, an address in the target process */
    uint32_t count;    /**< elements */
    uint8_t  op;       /**< enum gpuic_call_atomic_op */
    uint8_t  flags;    /**< enum gpuic_call_atomic_flag */
    uint8_t  esize;    /**< bytes per element: 1, 2, 4 or 8 */
    uint8_t  reserved;
    int32_t  type;     /**< element type: enum gpuic_acc_type (CAS: any of esize bytes) */
    int32_t  acc_op;   /**< GPUIC_CALL_ACC, GPUIC_CALL_PUT_SIGNAL: enum gpuic_acc_op */
    uint64_t sig_addr; /**< GPUIC_CALL_PUT_SIGNAL: the signal word (8-byte aligned) */
    uint8_t  compare[8]; /**< GPUIC_CALL_CAS: the compare element (esize bytes);
                              GPUIC_CALL_PUT_SIGNAL: the signal operand (8 bytes) */
    uint8_t  data[GPUIC_CALL_ATOMIC_INLINE]; /**< count operands (none for a no-op fetch) */
} gpuic_call_atomic_t;

/** The request length of a gpuic_call_atomic_t with @p bytes operand bytes. */
static inline size_t gpuic_call_atomic_len(size_t bytes)
{
    return offsetof(gpuic_call_atomic_t, data) + bytes;
}

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CALL_H */
