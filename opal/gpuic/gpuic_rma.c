#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#endif
#include "gpuic_rma.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "gpuic_log.h"
#include "gpuic_ucx_internal.h"

/* Non-blocking operations are issued without a callback: a returned request is released at
 * once and UCX completes it on its own; flush is what the caller waits on. */
static gpuic_status_t gpuic_rma_issued(ucs_status_ptr_t req)
{
    if (req == NULL) {
        return GPUIC_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return gpuic_status_from_ucs(UCS_PTR_STATUS(req));
    }
    ucp_request_free(req);
    return GPUIC_OK;
}

static void gpuic_rma_lcc_done(void *request, ucs_status_t st, void *user_data)
{
    gpuic_lcc_t *lcc = user_data;

    (void)st; /* a failed operation surfaces at the next flush of its endpoint */
    __atomic_fetch_sub(&lcc->outstanding, 1, __ATOMIC_RELEASE);
    ucp_request_free(request);
}

/* Parameters that count the operation in @p lcc.  The count is raised before the call, since
 * the callback may run inside it, and lowered again if UCX completed the operation in place. */
static void gpuic_rma_lcc_param(ucp_request_param_t *param, gpuic_lcc_t *lcc)
{
    if (lcc != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param->cb.send = gpuic_rma_lcc_done;
        param->user_data = lcc;
        __atomic_fetch_add(&lcc->outstanding, 1, __ATOMIC_RELAXED);
    }
}

static gpuic_status_t gpuic_rma_lcc_issued(ucs_status_ptr_t req, gpuic_lcc_t *lcc)
{
    if (lcc == NULL) {
        return gpuic_rma_issued(req);
    }
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        /* completed in place (or failed): the callback will not run */
        __atomic_fetch_sub(&lcc->outstanding, 1, __ATOMIC_RELEASE);
        return req == NULL ? GPUIC_OK : gpuic_status_from_ucs(UCS_PTR_STATUS(req));
    }
    return GPUIC_OK; /* the callback lowers the count and frees the request */
}

gpuic_status_t gpuic_rma_put(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                             const gpuic_rkey_t *rkey)
{
    return gpuic_rma_put_lcc(ep, buf, len, raddr, rkey, NULL);
}

gpuic_status_t gpuic_rma_get(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                             const gpuic_rkey_t *rkey)
{
    return gpuic_rma_get_lcc(ep, buf, len, raddr, rkey, NULL);
}

gpuic_status_t gpuic_rma_put_lcc(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                                 const gpuic_rkey_t *rkey, gpuic_lcc_t *lcc)
{
    ucp_request_param_t param = {0};

    gpuic_rma_lcc_param(&param, lcc);
    return gpuic_rma_lcc_issued(ucp_put_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param), lcc);
}

gpuic_status_t gpuic_rma_get_lcc(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                                 const gpuic_rkey_t *rkey, gpuic_lcc_t *lcc)
{
    ucp_request_param_t param = {0};

    gpuic_rma_lcc_param(&param, lcc);
    return gpuic_rma_lcc_issued(ucp_get_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param), lcc);
}

gpuic_status_t gpuic_lcc_wait(gpuic_context_t *ctx, gpuic_lcc_t *lcc)
{
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    gpuic_status_t status = GPUIC_OK;

    while (__atomic_load_n(&lcc->outstanding, __ATOMIC_ACQUIRE) != 0 && status == GPUIC_OK) {
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));
    }
    return status;
}

static void gpuic_rma_completion_done(void *request, ucs_status_t st, void *user_data)
{
    gpuic_rma_completion_t *comp = user_data;

    ucp_request_free(request);
    comp->cb(comp, gpuic_status_from_ucs(st));
}

/* Maps what a *_nbx call returned when a callback was given. */
static gpuic_status_t gpuic_rma_issued_nb(ucs_status_ptr_t req)
{
    if (req == NULL) {
        return GPUIC_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return gpuic_status_from_ucs(UCS_PTR_STATUS(req));
    }
    return GPUIC_INPROGRESS;
}

static void gpuic_rma_param_completion(ucp_request_param_t *param, gpuic_rma_completion_t *comp)
{
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param->cb.send = gpuic_rma_completion_done;
    param->user_data = comp;
}

gpuic_status_t gpuic_rma_put_nb(gpuic_ep_t *ep, const void *buf, size_t len, uint64_t raddr,
                                const gpuic_rkey_t *rkey, gpuic_rma_completion_t *comp)
{
    ucp_request_param_t param = {0};

    gpuic_rma_param_completion(&param, comp);
    return gpuic_rma_issued_nb(ucp_put_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param));
}

gpuic_status_t gpuic_rma_get_nb(gpuic_ep_t *ep, void *buf, size_t len, uint64_t raddr,
                                const gpuic_rkey_t *rkey, gpuic_rma_completion_t *comp)
{
    ucp_request_param_t param = {0};

    gpuic_rma_param_completion(&param, comp);
    return gpuic_rma_issued_nb(ucp_get_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param));
}

gpuic_status_t gpuic_context_flush_nb(gpuic_context_t *ctx, gpuic_rma_completion_t *comp)
{
    ucp_request_param_t param = {0};

    gpuic_rma_param_completion(&param, comp);
    return gpuic_rma_issued_nb(ucp_worker_flush_nbx(ctx->worker, &param));
}

static int gpuic_rma_atomic_ucp_op(gpuic_atomic_op_t op, ucp_atomic_op_t *ucp_op)
{
    switch (op) {
    case GPUIC_ATOMIC_ADD:   *ucp_op = UCP_ATOMIC_OP_ADD;   return 1;
    case GPUIC_ATOMIC_AND:   *ucp_op = UCP_ATOMIC_OP_AND;   return 1;
    case GPUIC_ATOMIC_OR:    *ucp_op = UCP_ATOMIC_OP_OR;    return 1;
    case GPUIC_ATOMIC_XOR:   *ucp_op = UCP_ATOMIC_OP_XOR;   return 1;
    case GPUIC_ATOMIC_SWAP:  *ucp_op = UCP_ATOMIC_OP_SWAP;  return 1;
    case GPUIC_ATOMIC_CSWAP: *ucp_op = UCP_ATOMIC_OP_CSWAP; return 1;
    }
    return 0;
}

gpuic_status_t gpuic_rma_atomic_post(gpuic_ep_t *ep, gpuic_atomic_op_t op, uint64_t value,
                                     size_t size, uint64_t raddr, const gpuic_rkey_t *rkey)
{
    ucp_request_param_t param = {0};
    ucp_atomic_op_t ucp_op;
    uint32_t value32 = (uint32_t)value;

    if ((size != 4 && size != 8) || op == GPUIC_ATOMIC_SWAP || op == GPUIC_ATOMIC_CSWAP ||
        !gpuic_rma_atomic_ucp_op(op, &ucp_op)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(size);
    /* UCX copies the operand before returning, so a stack variable is fine. */
    return gpuic_rma_issued(ucp_atomic_op_nbx(ep->ep, ucp_op, size == 4 ? (void *)&value32
                                                                         : (void *)&value,
                                              1, raddr, rkey->rkey, &param));
}

/* The reply buffer of this thread's fetching atomics.  A wait that times out leaves its
 * request to UCX, which may still write the reply later: that slot is then abandoned (a few
 * bytes, once per timeout) and the thread's next atomic takes a fresh one.  Keeping it per
 * thread rather than on the stack costs nothing on the path that completes. */
typedef struct gpuic_rma_reply {
    uint64_t reply;
    uint32_t reply32;
} gpuic_rma_reply_t;

/* The calling thread's slot, freed when the thread exits (a slot abandoned after a timeout is
 * taken out of the key first and never freed: a late reply may still land in it). */
static pthread_key_t gpuic_rma_reply_key;
static pthread_once_t gpuic_rma_reply_once = PTHREAD_ONCE_INIT;

static void gpuic_rma_reply_key_create(void)
{
    (void)pthread_key_create(&gpuic_rma_reply_key, free);
}

/* One fetching UCX atomic, waited for. */
static gpuic_status_t gpuic_rma_atomic_fetch_one(gpuic_ep_t *ep, gpuic_atomic_op_t op,
                                                 uint64_t value, uint64_t compare, size_t size,
                                                 uint64_t raddr, const gpuic_rkey_t *rkey,
                                                 uint64_t *result_p)
{
    ucp_request_param_t param = {0};
    ucp_atomic_op_t ucp_op;
    /* For CSWAP UCX compares with the operand buffer and swaps in the reply buffer's value,
     * which it then overwrites with the old value.  UCX copies the operand before returning. */
    uint64_t operand = op == GPUIC_ATOMIC_CSWAP ? compare : value;
    uint32_t operand32 = (uint32_t)operand;
    gpuic_rma_reply_t *slot;
    gpuic_status_t status;

    if ((size != 4 && size != 8) || !gpuic_rma_atomic_ucp_op(op, &ucp_op)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    pthread_once(&gpuic_rma_reply_once, gpuic_rma_reply_key_create);
    slot = pthread_getspecific(gpuic_rma_reply_key);
    if (slot == NULL) {
        slot = malloc(sizeof(*slot));
        if (slot == NULL || pthread_setspecific(gpuic_rma_reply_key, slot) != 0) {
            free(slot);
            return GPUIC_ERR_NO_MEMORY;
        }
    }
    slot->reply = op == GPUIC_ATOMIC_CSWAP ? value : 0;
    slot->reply32 = (uint32_t)slot->reply;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(size);
    param.reply_buffer = size == 4 ? (void *)&slot->reply32 : (void *)&slot->reply;
    status = gpuic_context_wait_request(
        ep->ctx, ucp_atomic_op_nbx(ep->ep, ucp_op, size == 4 ? (void *)&operand32
                                                              : (void *)&operand,
                                   1, raddr, rkey->rkey, &param));
    if (status == GPUIC_OK) {
        *result_p = size == 4 ? slot->reply32 : slot->reply;
    } else if (status == GPUIC_ERR_TIMED_OUT) {
        (void)pthread_setspecific(gpuic_rma_reply_key, NULL); /* abandoned, see above */
    }
    return status;
}

/* Fetching AND, OR or XOR as compare-and-swap rounds.  UCX 1.13 returns the right old value
 * for its own fetching forms of these, but over its shared-memory and self transports leaves
 * the target word as if swapped with 0 (its non-fetching forms, ADD, SWAP and CSWAP are
 * right), and nothing tells which transport serves a word. */
static gpuic_status_t gpuic_rma_atomic_fetch_bitwise(gpuic_ep_t *ep, gpuic_atomic_op_t op,
                                                     uint64_t value, size_t size,
                                                     uint64_t raddr, const gpuic_rkey_t *rkey,
                                                     uint64_t *result_p)
{
    uint64_t mask = size == 4 ? 0xffffffffull : ~0ull, cur = 0, seen = 0, next;
    gpuic_status_t status;

    for (;;) {
        next = op == GPUIC_ATOMIC_AND ? cur & value
               : op == GPUIC_ATOMIC_OR ? cur | value
                                       : cur ^ value;
        status = gpuic_rma_atomic_fetch_one(ep, GPUIC_ATOMIC_CSWAP, next & mask, cur, size,
                                            raddr, rkey, &seen);
        if (status != GPUIC_OK || seen == cur) {
            break;
        }
        cur = seen; /* the first round is a read unless the word held 0 */
    }
    if (status == GPUIC_OK) {
        *result_p = seen;
    }
    return status;
}

gpuic_status_t gpuic_rma_atomic_fetch(gpuic_ep_t *ep, gpuic_atomic_op_t op, uint64_t value,
                                      uint64_t compare, size_t size, uint64_t raddr,
                                      const gpuic_rkey_t *rkey, uint64_t *result_p)
{
    if ((size == 4 || size == 8) &&
        (op == GPUIC_ATOMIC_AND || op == GPUIC_ATOMIC_OR || op == GPUIC_ATOMIC_XOR)) {
        return gpuic_rma_atomic_fetch_bitwise(ep, op, value, size, raddr, rkey, result_p);
    }
    return gpuic_rma_atomic_fetch_one(ep, op, value, compare, size, raddr, rkey, result_p);
}

/* The status of a cross-memory copy that failed with @p err. */
static gpuic_status_t gpuic_cma_status(int pid, int err)
{
    switch (err) {
    case EPERM:
    case ENOSYS:
        return GPUIC_ERR_UNSUPPORTED;
    case ESRCH:
        return GPUIC_ERR_PEER_FAILED;
    case EFAULT:
        return GPUIC_ERR_OUT_OF_RANGE;
    default:
        gpuic_log(GPUIC_LOG_DEBUG, "cross-memory copy with process %d: %s", pid, strerror(err));
        return GPUIC_ERR_TRANSPORT;
    }
}

gpuic_status_t gpuic_cma_copy(int pid, void *local, uint64_t raddr, size_t len, int is_put)
{
    struct iovec liov = {local, len}, riov = {(void *)(uintptr_t)raddr, len};

    return gpuic_cma_copyv(pid, &liov, &riov, 1, is_put);
}

gpuic_status_t gpuic_cma_copyv(int pid, struct iovec *local, struct iovec *remote, size_t n,
                               int is_put)
{
    ssize_t done;

    /* The kernel may move less than asked (it stops at a page it cannot reach or after a
     * large chunk): go on from where it stopped, in both lists at once (pair i has one length
     * on both sides). */
    while (n > 0) {
        size_t m = n < GPUIC_CMA_IOV_MAX ? n : GPUIC_CMA_IOV_MAX;

        done = is_put ? process_vm_writev(pid, local, m, remote, m, 0)
                      : process_vm_readv(pid, local, m, remote, m, 0);
        if (done < 0 && errno == EINTR) {
            continue;
        }
        if (done < 0 || (done == 0 && local->iov_len > 0)) {
            return gpuic_cma_status(pid, done < 0 ? errno : EFAULT);
        }
        while (n > 0 && (size_t)done >= local->iov_len) {
            done -= (ssize_t)local->iov_len;
            ++local;
            ++remote;
            --n;
        }
        if (done > 0) {
            local->iov_base = (char *)local->iov_base + done;
            local->iov_len -= (size_t)done;
            remote->iov_base = (char *)remote->iov_base + done;
            remote->iov_len -= (size_t)done;
        }
    }
    return GPUIC_OK;
}
