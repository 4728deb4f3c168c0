/*
 * gpuic_ucx_internal.h - private definitions shared by the UCX-backed files of libgpuic.
 * Not installed.
 */
#ifndef GPUIC_UCX_INTERNAL_H
#define GPUIC_UCX_INTERNAL_H

#include <pthread.h>

#include <ucp/api/ucp.h>

#include "gpuic_call.h"
#include "gpuic_context.h"
#include "gpuic_ep.h"
#include "gpuic_mr.h"

struct gpuic_context {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_address_t *address;
    size_t        address_len;
    uint64_t      timeout_ns;  /* bound of peer-dependent waits; 0: none */
    gpuic_context_alive_fn_t alive; /* gpuic_context_set_alive(), or NULL */
    void          *alive_arg;
    /* the serving worker (gpuic_context_params_t.serve), or NULL */
    ucp_worker_h  serve_worker;
    ucp_address_t *serve_address;
    size_t        serve_address_len;
    pthread_mutex_t serve_lock; /* one thread progresses it at a time */
    gpuic_context_t *also_serve; /* gpuic_context_serve_also(), or NULL */
    /* remote calls (gpuic_call.c) */
    gpuic_call_handler_t call_fn;  /* read atomically by the request handler */
    void            *call_arg;
    pthread_mutex_t call_lock;     /* guards the two fields below */
    struct gpuic_call_waiter *call_waiters; /* calls of this context awaiting their reply */
    uint64_t        call_next_token;
};

struct gpuic_ep {
    gpuic_context_t *ctx;
    ucp_ep_h        ep;
};

struct gpuic_mr {
    gpuic_context_t *ctx;
    ucp_mem_h       memh;
    void            *addr;
    size_t          len;
    int             allocated; /* memory came from UCX and goes back with the region */
};

struct gpuic_rkey {
    ucp_rkey_h rkey;
};

/** Translates a UCX status; the one place libgpuic does so. */
gpuic_status_t gpuic_status_from_ucs(ucs_status_t status);

/**
 * Waits for a request returned by a *_nbx call, progressing the context, and releases it.
 * NULL (completed in place) gives GPUIC_OK.  After the context's timeout it cancels the
 * request and returns GPUIC_ERR_TIMED_OUT; the request is then released by UCX whenever it
 * ends, so buffers UCX writes on completion must outlive the call (see gpuic_rma_atomic_fetch).
 */
gpuic_status_t gpuic_context_wait_request(gpuic_context_t *ctx, ucs_status_ptr_t request);

/**
 * Sets up remote calls on a new context (gpuic_call.c): registers the request and reply
 * handlers on its worker and serving worker.  GPUIC_OK or the UCX error (logged).
 */
gpuic_status_t gpuic_call_init(gpuic_context_t *ctx);

/** Releases what gpuic_call_init() set up; no call may be waiting. */
void gpuic_call_fini(gpuic_context_t *ctx);

#endif /* GPUIC_UCX_INTERNAL_H */
