/*
 * dissect_loopback.h - the target both dissection programs stamp against: a UCX context whose
 * endpoint leads back to its own worker, and a region registered on it with its remote key.
 * Header-only, C and CUDA (gpuic_dissect.c, dissect_proxy.cu).
 */
#ifndef GPUIC_DISSECT_LOOPBACK_H
#define GPUIC_DISSECT_LOOPBACK_H

#include <stddef.h>
#include <string.h>

#include "gpuic.h"

typedef struct dissect_loopback {
    gpuic_context_t *ctx;
    gpuic_ep_t *ep;
    gpuic_mr_t *mr;
    gpuic_rkey_t *rkey;
} dissect_loopback_t;

/*
 * Creates the context (serialized: one thread at a time drives it, the proxy's once it runs),
 * its endpoint to itself, and registers [region, region + len).  Returns 0 on a failure;
 * dissect_loopback_destroy() frees what was made, either way.  @p lb must be zeroed first.
 */
static inline int dissect_loopback_create(dissect_loopback_t *lb, void *region, size_t len)
{
    gpuic_context_params_t cp;
    const void *addr;
    size_t addr_len, blob_len;
    void *blob;
    int ok;

    memset(&cp, 0, sizeof(cp));
    cp.thread_serialized = 1;
    if (gpuic_context_create(&cp, &lb->ctx) != GPUIC_OK) {
        return 0;
    }
    gpuic_context_address(lb->ctx, &addr, &addr_len);
    if (gpuic_ep_create(lb->ctx, addr, addr_len, &lb->ep) != GPUIC_OK ||
        gpuic_mr_register(lb->ctx, region, len, &lb->mr) != GPUIC_OK ||
        gpuic_mr_pack(lb->mr, &blob, &blob_len) != GPUIC_OK) {
        return 0;
    }
    ok = gpuic_rkey_unpack(lb->ep, blob, &lb->rkey) == GPUIC_OK;
    gpuic_mr_blob_release(blob);
    return ok;
}

static inline void dissect_loopback_destroy(dissect_loopback_t *lb)
{
    if (lb->rkey != NULL) {
        gpuic_rkey_destroy(lb->rkey);
    }
    if (lb->mr != NULL) {
        gpuic_mr_deregister(lb->mr);
    }
    if (lb->ep != NULL) {
        gpuic_ep_destroy(lb->ep);
    }
    if (lb->ctx != NULL) {
        gpuic_context_destroy(lb->ctx);
    }
}

#endif /* GPUIC_DISSECT_LOOPBACK_H */
