/*
 * Request objects of the request-based RMA calls.  A request completes when an endpoint flush
 * issued right after its operation completes, which gives remote completion: stronger than the
 * local completion MPI_Rput promises, and exactly what MPI_Rget needs.  A request whose copies
 * went on a GPU window's stream completes once the stream has run them: a poller registered
 * with opal_progress asks the driver (without waiting) while such requests are pending.
 */
#include "ompi_config.h"

#include <pthread.h>

#include "mpi.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

#include "osc_gpuic.h"

typedef struct ompi_osc_gpuic_request {
    ompi_request_t super;
    /* Set once MPI_Request_free was called on a request still in flight; whichever of free and
     * completion comes last releases the object. */
    bool freed;
    /* ompi_osc_gpuic_request_gpu: the window, the stream's count to wait for, the next pending */
    ompi_osc_gpuic_module_t *gpu_module;
    uint64_t gpu_ticket;
    struct ompi_osc_gpuic_request *gpu_next;
} ompi_osc_gpuic_request_t;

/* Requests waiting for a window's stream, and how many windows hold a registration of their
 * poller: registered while any does, and given back at the window's free, like the component's
 * own progress hook. */
static pthread_mutex_t ompi_osc_gpuic_gpu_req_lock = PTHREAD_MUTEX_INITIALIZER;
static ompi_osc_gpuic_request_t *ompi_osc_gpuic_gpu_req_pending;
static int ompi_osc_gpuic_gpu_req_windows;

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

/* Completes @p req with MPI error @p rc (or releases it, when it was freed already). */
static void ompi_osc_gpuic_request_finish(ompi_osc_gpuic_request_t *req, int rc)
{
    req->super.req_status.MPI_ERROR = rc;
    if (req->freed) {
        OMPI_REQUEST_FINI(&req->super);
        OBJ_RELEASE(req);
        return;
    }
    ompi_request_complete(&req->super, true);
}

static void ompi_osc_gpuic_request_done(void *arg, gpuic_status_t status)
{
    ompi_osc_gpuic_request_finish(arg, ompi_osc_gpuic_error(status));
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

/* opal_progress hook: completes the pending requests whose stream work is done, asking the
 * driver without waiting, and not again in the pass for the next request of a window whose
 * stream was busy.  Another thread polling already is enough. */
static int ompi_osc_gpuic_request_gpu_progress(void)
{
    ompi_osc_gpuic_request_t **link, *req;
    ompi_osc_gpuic_module_t *busy = NULL;
    int rc, done = 0;

    if (__atomic_load_n(&ompi_osc_gpuic_gpu_req_pending, __ATOMIC_ACQUIRE) == NULL ||
        pthread_mutex_trylock(&ompi_osc_gpuic_gpu_req_lock) != 0) {
        return 0;
    }
    link = &ompi_osc_gpuic_gpu_req_pending;
    while ((req = *link) != NULL) {
        if (req->gpu_module == busy ||
            !ompi_osc_gpuic_gpu_done(req->gpu_module, req->gpu_ticket, &rc)) {
            busy = req->gpu_module;
            link = &req->gpu_next;
            continue;
        }
        __atomic_store_n(link, req->gpu_next, __ATOMIC_RELEASE);
        ompi_osc_gpuic_request_finish(req, rc);
        done++;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_gpu_req_lock);
    return done;
}

int ompi_osc_gpuic_request_gpu(struct ompi_win_t *win, ompi_osc_gpuic_module_t *module,
                               uint64_t ticket, struct ompi_request_t **request)
{
    ompi_osc_gpuic_request_t *req = ompi_osc_gpuic_request_new(win);

    if (req == NULL) {
        return MPI_ERR_NO_MEM;
    }
    *request = &req->super;
    req->gpu_module = module;
    req->gpu_ticket = ticket;
    pthread_mutex_lock(&ompi_osc_gpuic_gpu_req_lock);
    if (!module->gpu_polled) {
        module->gpu_polled = true;
        if (ompi_osc_gpuic_gpu_req_windows++ == 0) {
            opal_progress_register(ompi_osc_gpuic_request_gpu_progress);
        }
    }
    req->gpu_next = ompi_osc_gpuic_gpu_req_pending;
    __atomic_store_n(&ompi_osc_gpuic_gpu_req_pending, req, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ompi_osc_gpuic_gpu_req_lock);
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_request_gpu_release(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_request_t **link, *req;
    int rc;

    pthread_mutex_lock(&ompi_osc_gpuic_gpu_req_lock);
    if (!module->gpu_polled) {
        pthread_mutex_unlock(&ompi_osc_gpuic_gpu_req_lock);
        return; /* no request of this window ever waited for its stream */
    }
    rc = ompi_osc_gpuic_gpu_drain(module);
    link = &ompi_osc_gpuic_gpu_req_pending;
    while ((req = *link) != NULL) {
        if (req->gpu_module != module) {
            link = &req->gpu_next;
            continue;
        }
        __atomic_store_n(link, req->gpu_next, __ATOMIC_RELEASE);
        ompi_osc_gpuic_request_finish(req, rc);
    }
    module->gpu_polled = false;
    if (--ompi_osc_gpuic_gpu_req_windows == 0) {
        opal_progress_unregister(ompi_osc_gpuic_request_gpu_progress);
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_gpu_req_lock);
}
