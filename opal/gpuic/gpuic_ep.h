/*
 * gpuic_ep.h - an endpoint: the path from a context to one peer process.
 */
#ifndef GPUIC_EP_H
#define GPUIC_EP_H

#include <stddef.h>

#include "gpuic_context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuic_ep gpuic_ep_t;

/**
 * Connects to the peer whose gpuic_context_address() is @p addr.
 * @return GPUIC_OK, GPUIC_ERR_NO_MEMORY, GPUIC_ERR_INVALID_PARAM (malformed address) or
 *         GPUIC_ERR_PEER_FAILED (unreachable).
 */
gpuic_status_t gpuic_ep_create(gpuic_context_t *ctx, const void *addr, size_t len,
                               gpuic_ep_t **ep_p);

/**
 * Closes the endpoint without a handshake (the peer may already be gone).  Operations must have
 * been flushed.
 */
void gpuic_ep_destroy(gpuic_ep_t *ep);

/**
 * Completes every operation issued on the endpoint at the target; blocks, progressing.
 * @return GPUIC_OK, GPUIC_ERR_TIMED_OUT after the context's timeout, or another error.
 */
gpuic_status_t gpuic_ep_flush(gpuic_ep_t *ep);

/** Completion callback of gpuic_ep_flush_nb(); @p status is the flush's outcome. */
typedef void (*gpuic_completion_cb_t)(void *arg, gpuic_status_t status);

/**
 * Starts a flush of the endpoint and returns at once.
 * @return GPUIC_OK when everything was already complete (@p cb is not called),
 *         GPUIC_INPROGRESS when @p cb will be called from gpuic_context_progress(),
 *         or an error (@p cb is not called).
 */
gpuic_status_t gpuic_ep_flush_nb(gpuic_ep_t *ep, gpuic_completion_cb_t cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_EP_H */
