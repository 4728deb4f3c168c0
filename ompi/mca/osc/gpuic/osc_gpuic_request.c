/*
 * Request objects of the request-based RMA calls.  A request completes when an endpoint flush
 * issued right after its operation completes, which gives remote completion: stronger than the
 * local completion MPI_Rput promises, and exactly what MPI_Rget needs.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/request/request.h"

#include "osc_gpuic.h"

typedef struct ompi_osc_gpuic_request {
    ompi_request_t super;
    /* Set once MPI_Request_free was called on a request still in flight; whichever of free and
     * completion comes last releases the object. */
    bool freed;
} ompi_osc_gpuic_request_t;

static int ompi_osc_gpuic_request_free(struct ompi_request_t **req_p)
{
    ompi_osc_gpuic_request_t *req = (ompi_osc_gpuic_request_t *)*req_p;

    *req_p = MPI_REQUEST_NULL;
    if (!REQUEST_COMPLETE(&req->super)) {
        req->freed = true;
        return OMPI_SUCCESS;
    }
    OMPI_REQUEST_FINI(&req->super);
    OBJ_RELEASE(req);
    return OMPI_SUCCESS;
}

static int ompi_osc_gpuic_request_cancel(struct ompi_request_t *req, int complete)
{
    /* RMA requests cannot be cancelled; MPI_Cancel then has no effect. */
    return OMPI_SUCCESS;
}

static void ompi_osc_gpuic_request_construct(ompi_osc_gpuic_request_t *req)
{
    req->super.req_type = OMPI_REQUEST_WIN;
    req->super.req_status._cancelled = 0;
    req->super.req_free = ompi_osc_gpuic_request_free;
    req->super.req_cancel = ompi_osc_gpuic_request_cancel;
    req->freed = false;
}

static OBJ_CLASS_INSTANCE(ompi_osc_gpuic_request_t, ompi_request_t,
                          ompi_osc_gpuic_request_construct, NULL);

static void ompi_osc_gpuic_request_done(void *arg, gpuic_status_t status)
{
    ompi_osc_gpuic_request_t *req = arg;

    req->super.req_status.MPI_ERROR = ompi_osc_gpuic_error(status);
    if (req->freed) {
        OMPI_REQUEST_FINI(&req->super);
        OBJ_RELEASE(req);
        return;
    }
    ompi_request_complete(&req->super, true);
}

static ompi_osc_gpuic_request_t *ompi_osc_gpuic_request_new(struct ompi_win_t *win)
{
    ompi_osc_gpuic_request_t *req = OBJ_NEW(ompi_osc_gpuic_request_t);

    if (req != NULL) {
        OMPI_REQUEST_INIT(&req->super, false);
        req->super.req_mpi_object.win = win;
        req->super.req_state = OMPI_REQUEST_ACTIVE;
        req->super.req_status.MPI_ERROR = MPI_SUCCESS;
    }
    return req;
}

int ompi_osc_gpuic_request_completed(struct ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_gpuic_request_t *req = ompi_osc_gpuic_request_new(win);

    if (req == NULL) {
        return MPI_ERR_NO_MEM;
    }
    *request = &req->super;
    ompi_request_complete(&req->super, true);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_request_flush_ep(struct ompi_win_t *win, gpuic_ep_t *ep,
                                    struct ompi_request_t **request)
{
    ompi_osc_gpuic_request_t *req = ompi_osc_gpuic_request_new(win);
    gpuic_status_t status;

    if (req == NULL) {
        return MPI_ERR_NO_MEM;
    }
    *request = &req->super;

    status = gpuic_ep_flush_nb(ep, ompi_osc_gpuic_request_done, req);
    if (status == GPUIC_OK) {
        ompi_request_complete(&req->super, true);
    } else if (status != GPUIC_INPROGRESS) {
        *request = MPI_REQUEST_NULL;
        OBJ_RELEASE(req);
        return ompi_osc_gpuic_error(status);
    }
    return OMPI_SUCCESS;
}
