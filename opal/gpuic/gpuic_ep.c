#include "gpuic_ucx_internal.h"

#include <stdlib.h>

#include "gpuic_log.h"

gpuic_status_t gpuic_ep_create(gpuic_context_t *ctx, const void *addr, size_t len,
                               gpuic_ep_t **ep_p)
{
    ucp_ep_params_t params = {0};
    gpuic_ep_t *ep;
    ucs_status_t st;

    if (addr == NULL || len == 0) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = (const ucp_address_t *)addr;
    st = ucp_ep_create(ctx->worker, &params, &ep->ep);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_ep_create failed: %s", ucs_status_string(st));
        free(ep);
        return gpuic_status_from_ucs(st);
    }
    ep->ctx = ctx;
    *ep_p = ep;
    return GPUIC_OK;
}

void gpuic_ep_destroy(gpuic_ep_t *ep)
{
    ucp_request_param_t param = {0};

    if (ep == NULL) {
        return;
    }
    /* Forced close: a graceful close needs the peer to progress, and at finalize it may not. */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    (void)gpuic_context_wait_request(ep->ctx, ucp_ep_close_nbx(ep->ep, &param));
    free(ep);
}

gpuic_status_t gpuic_ep_flush(gpuic_ep_t *ep)
{
    ucp_request_param_t param = {0};

    return gpuic_context_wait_request(ep->ctx, ucp_ep_flush_nbx(ep->ep, &param));
}

typedef struct gpuic_ep_flush_req {
    gpuic_completion_cb_t cb;
    void *arg;
} gpuic_ep_flush_req_t;

static void gpuic_ep_flush_done(void *request, ucs_status_t st, void *user_data)
{
    gpuic_ep_flush_req_t *fr = user_data;

    fr->cb(fr->arg, gpuic_status_from_ucs(st));
    free(fr);
    ucp_request_free(request);
}

gpuic_status_t gpuic_ep_flush_nb(gpuic_ep_t *ep, gpuic_completion_cb_t cb, void *arg)
{
    ucp_request_param_t param = {0};
    gpuic_ep_flush_req_t *fr;
    ucs_status_ptr_t req;

    fr = malloc(sizeof(*fr));
    if (fr == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    fr->cb = cb;
    fr->arg = arg;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = gpuic_ep_flush_done;
    param.user_data = fr;
    req = ucp_ep_flush_nbx(ep->ep, &param);
    if (req == NULL) {
        free(fr);
        return GPUIC_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        free(fr);
        return gpuic_status_from_ucs(UCS_PTR_STATUS(req));
    }
    return GPUIC_INPROGRESS;
}
