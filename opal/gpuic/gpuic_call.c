/*
 * Remote calls over UCX active messages (gpuic_call.h).
 *
 * A request is an active message GPUIC_CALL_AM_REQUEST whose header names the call (a token
 * of the origin's context and the room for the reply) and whose data is the request bytes; it
 * is sent eagerly with UCP_AM_SEND_FLAG_REPLY, so the target answers on the reply endpoint
 * UCX gives its handler.  The reply, GPUIC_CALL_AM_REPLY, carries the token, the status and the
 * reply bytes.  The origin's waiter is on a list of its context under a lock; the reply
 * handler copies into it and marks it done, and a waiter that gave up takes itself off the
 * list first, so a late reply finds no waiter and is dropped.
 */
#include "gpuic_ucx_internal.h"

#include <stdlib.h>
#include <string.h>

#include "gpuic_call.h"
#include "gpuic_log.h"

#define GPUIC_CALL_AM_REQUEST 0x6701
#define GPUIC_CALL_AM_REPLY   0x6702

/* The header of a request. */
typedef struct gpuic_call_req_hdr {
    uint64_t token;
    uint32_t reply_cap; /* room for the reply at the origin */
    uint32_t reserved;
} gpuic_call_req_hdr_t;

/* The header of a reply; the reply bytes follow it in the message's data. */
typedef struct gpuic_call_reply_hdr {
    uint64_t token;
    int32_t  status;
    uint32_t len;
} gpuic_call_reply_hdr_t;

/* A reply on its way out: header and bytes live until UCX completes the send. */
typedef struct gpuic_call_reply {
    gpuic_call_reply_hdr_t hdr;
    uint8_t                data[GPUIC_CALL_MAX_BYTES];
} gpuic_call_reply_t;

/* One call waiting for its reply, on the origin's stack. */
struct gpuic_call_waiter {
    struct gpuic_call_waiter *next;
    uint64_t       token;
    void           *reply;
    size_t         reply_cap;
    size_t         reply_len;
    gpuic_status_t status;
    int            done; /* written by the reply handler, read with acquire */
};

static void gpuic_call_reply_sent(void *request, ucs_status_t st, void *user_data)
{
    (void)st;
    free(user_data);
    ucp_request_free(request);
}

static ucs_status_t gpuic_call_on_request(void *arg, const void *header, size_t header_length,
                                          void *data, size_t length,
                                          const ucp_am_recv_param_t *param)
{
    gpuic_context_t *ctx = arg;
    gpuic_call_req_hdr_t hdr;
    gpuic_call_handler_t fn = __atomic_load_n(&ctx->call_fn, __ATOMIC_ACQUIRE);
    ucp_request_param_t sp = {0};
    gpuic_call_reply_t *reply;
    ucs_status_ptr_t req;
    size_t cap, len = 0;
    gpuic_status_t status;

    if (header_length != sizeof(hdr) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        gpuic_log(GPUIC_LOG_WARN, "remote call without a header or a reply endpoint: dropped");
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    reply = malloc(sizeof(*reply));
    if (reply == NULL) {
        gpuic_log(GPUIC_LOG_ERROR, "remote call: no memory for the reply; the caller times out");
        return UCS_OK;
    }
    cap = hdr.reply_cap < GPUIC_CALL_MAX_BYTES ? hdr.reply_cap : GPUIC_CALL_MAX_BYTES;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        status = GPUIC_ERR_INVALID_PARAM; /* sent eagerly, so never: data we cannot read */
    } else if (fn == NULL) {
        status = GPUIC_ERR_UNSUPPORTED;
    } else {
        status = fn(ctx->call_arg, data, length, reply->data, cap, &len);
        if (len > cap) {
            len = 0;
            status = GPUIC_ERR_INVALID_PARAM;
        }
    }
    reply->hdr.token = hdr.token;
    reply->hdr.status = (int32_t)status;
    reply->hdr.len = (uint32_t)len;
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                      UCP_OP_ATTR_FIELD_USER_DATA;
    sp.flags = UCP_AM_SEND_FLAG_EAGER;
    sp.cb.send = gpuic_call_reply_sent;
    sp.user_data = reply;
    req = ucp_am_send_nbx(param->reply_ep, GPUIC_CALL_AM_REPLY, &reply->hdr, sizeof(reply->hdr),
                          reply->data, len, &sp);
    if (req == NULL) {
        free(reply);
    } else if (UCS_PTR_IS_ERR(req)) {
        gpuic_log(GPUIC_LOG_WARN, "remote call: the reply could not be sent: %s",
                  ucs_status_string(UCS_PTR_STATUS(req)));
        free(reply);
    }
    return UCS_OK;
}

static ucs_status_t gpuic_call_on_reply(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length,
                                        const ucp_am_recv_param_t *param)
{
    gpuic_context_t *ctx = arg;
    struct gpuic_call_waiter **pw, *w;
    gpuic_call_reply_hdr_t hdr;

    if (header_length != sizeof(hdr) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    pthread_mutex_lock(&ctx->call_lock);
    for (pw = &ctx->call_waiters; (w = *pw) != NULL; pw = &w->next) {
        if (w->token == hdr.token) {
            *pw = w->next;
            break;
        }
    }
    if (w != NULL) {
        if (hdr.len > length || hdr.len > w->reply_cap) {
            w->status = GPUIC_ERR_TRANSPORT; /* a malformed reply */
            w->reply_len = 0;
        } else {
            if (hdr.len > 0) { /* data may be NULL for an empty reply */
                memcpy(w->reply, data, hdr.len);
            }
            w->reply_len = hdr.len;
            w->status = (gpuic_status_t)hdr.status;
        }
        __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ctx->call_lock);
    /* else the waiter gave up (timeout): the answer is dropped */
    return UCS_OK;
}

/* Registers both handlers on one worker. */
static gpuic_status_t gpuic_call_worker_init(gpuic_context_t *ctx, ucp_worker_h worker)
{
    ucp_am_handler_param_t p = {0};
    ucs_status_t st;

    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                   UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    p.arg = ctx;
    p.id = GPUIC_CALL_AM_REQUEST;
    p.cb = gpuic_call_on_request;
    st = ucp_worker_set_am_recv_handler(worker, &p);
    if (st == UCS_OK) {
        p.id = GPUIC_CALL_AM_REPLY;
        p.cb = gpuic_call_on_reply;
        st = ucp_worker_set_am_recv_handler(worker, &p);
    }
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "cannot register the remote call handlers: %s",
                  ucs_status_string(st));
    }
    return gpuic_status_from_ucs(st);
}

gpuic_status_t gpuic_call_init(gpuic_context_t *ctx)
{
    gpuic_status_t status;

    pthread_mutex_init(&ctx->call_lock, NULL);
    ctx->call_waiters = NULL;
    ctx->call_next_token = 1;
    status = gpuic_call_worker_init(ctx, ctx->worker);
    if (status == GPUIC_OK && ctx->serve_worker != NULL) {
        status = gpuic_call_worker_init(ctx, ctx->serve_worker);
    }
    if (status != GPUIC_OK) {
        pthread_mutex_destroy(&ctx->call_lock);
    }
    return status;
}

void gpuic_call_fini(gpuic_context_t *ctx)
{
    pthread_mutex_destroy(&ctx->call_lock);
}

void gpuic_context_set_call_handler(gpuic_context_t *ctx, gpuic_call_handler_t fn, void *arg)
{
    ctx->call_arg = arg;
    __atomic_store_n(&ctx->call_fn, fn, __ATOMIC_RELEASE);
}

/* Takes a waiter off its context's list if the reply handler has not; true when it had. */
static int gpuic_call_waiter_remove(gpuic_context_t *ctx, struct gpuic_call_waiter *me)
{
    struct gpuic_call_waiter **pw;
    int found = 0;

    pthread_mutex_lock(&ctx->call_lock);
    for (pw = &ctx->call_waiters; *pw != NULL; pw = &(*pw)->next) {
        if (*pw == me) {
            *pw = me->next;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&ctx->call_lock);
    return found;
}

/* One request and its reply. */
static gpuic_status_t gpuic_call_once(gpuic_ep_t *ep, const void *req, size_t req_len,
                                      void *reply, size_t reply_cap, size_t *reply_len_p)
{
    gpuic_context_t *ctx = ep->ctx;
    struct gpuic_call_waiter me = {0};
    gpuic_call_req_hdr_t hdr = {0};
    ucp_request_param_t sp = {0};
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    ucs_status_ptr_t sreq;
    ucs_status_t st = UCS_OK;
    gpuic_status_t status = GPUIC_OK;

    if (reply_len_p != NULL) {
        *reply_len_p = 0;
    }
    if (req == NULL || req_len == 0 || req_len > GPUIC_CALL_MAX_BYTES ||
        (reply == NULL && reply_cap != 0)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    me.reply = reply;
    me.reply_cap = reply_cap < GPUIC_CALL_MAX_BYTES ? reply_cap : GPUIC_CALL_MAX_BYTES;
    pthread_mutex_lock(&ctx->call_lock);
    me.token = ctx->call_next_token++;
    me.next = ctx->call_waiters;
    ctx->call_waiters = &me;
    pthread_mutex_unlock(&ctx->call_lock);

    hdr.token = me.token;
    hdr.reply_cap = (uint32_t)me.reply_cap;
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    sp.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    sreq = ucp_am_send_nbx(ep->ep, GPUIC_CALL_AM_REQUEST, &hdr, sizeof(hdr), req, req_len, &sp);
    if (UCS_PTR_IS_ERR(sreq)) {
        (void)gpuic_call_waiter_remove(ctx, &me);
        gpuic_log(GPUIC_LOG_ERROR, "remote call: send failed: %s",
                  ucs_status_string(UCS_PTR_STATUS(sreq)));
        return gpuic_status_from_ucs(UCS_PTR_STATUS(sreq));
    }
    /* The request bytes and the header are the caller's: the send must finish before return,
     * and so must the reply. */
    for (;;) {
        unsigned progressed = 0;

        if (sreq != NULL) {
            st = ucp_request_check_status(sreq);
            if (st != UCS_INPROGRESS) {
                ucp_request_free(sreq);
                sreq = NULL;
                progressed = 1;
                if (st != UCS_OK) {
                    break;
                }
            }
        }
        if (sreq == NULL && __atomic_load_n(&me.done, __ATOMIC_ACQUIRE)) {
            break;
        }
        progressed += gpuic_context_progress(ctx);
        status = gpuic_context_wait_round(ctx, &wait, progressed);
        if (status != GPUIC_OK) {
            break;
        }
    }
    if (sreq != NULL) {
        /* timed out while sending: UCX releases the request when it ends */
        ucp_request_cancel(ctx->worker, sreq);
        ucp_request_free(sreq);
    }
    if (!__atomic_load_n(&me.done, __ATOMIC_ACQUIRE) && !gpuic_call_waiter_remove(ctx, &me)) {
        /* the reply handler took the waiter off the list and is filling it in: wait for it */
        while (!__atomic_load_n(&me.done, __ATOMIC_ACQUIRE)) {
            gpuic_context_wait_idle(ctx, 0);
        }
    }
    if (__atomic_load_n(&me.done, __ATOMIC_ACQUIRE)) {
        if (reply_len_p != NULL) {
            *reply_len_p = me.reply_len;
        }
        return me.status;
    }
    if (st != UCS_OK && st != UCS_INPROGRESS) {
        gpuic_log(GPUIC_LOG_ERROR, "remote call: send failed: %s", ucs_status_string(st));
        return gpuic_status_from_ucs(st);
    }
    return status; /* GPUIC_ERR_TIMED_OUT: the caller logs it, knowing the peer */
}

gpuic_status_t gpuic_ep_call(gpuic_ep_t *ep, const void *req, size_t req_len, void *reply,
                             size_t reply_cap, size_t *reply_len_p)
{
    gpuic_wait_t busy = GPUIC_WAIT_INIT;
    gpuic_status_t status;

    /* A busy target did nothing: ask again, backing off; a target busy for the whole timeout
     * counts as silent (its answers are not progress). */
    while ((status = gpuic_call_once(ep, req, req_len, reply, reply_cap, reply_len_p)) ==
           GPUIC_ERR_NO_RESOURCE) {
        status = gpuic_context_wait_round(ep->ctx, &busy, 0);
        if (status != GPUIC_OK) {
            return status;
        }
    }
    return status;
}
