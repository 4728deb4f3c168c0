/*
 * gpuic_mr.h - memory regions (registered with UCX) and the remote keys that name them.
 *
 * A region is registered once at window creation; its packed key travels to the peers, which
 * unpack it against their endpoint to the owner.
 */
#ifndef GPUIC_MR_H
#define GPUIC_MR_H

#include <stddef.h>
#include <stdint.h>

#include "gpuic_context.h"
#include "gpuic_ep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuic_mr gpuic_mr_t;
typedef struct gpuic_rkey gpuic_rkey_t;

/**
 * Registers existing memory [addr, addr+len) for remote access.  len must be > 0.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM, GPUIC_ERR_NO_MEMORY or GPUIC_ERR_TRANSPORT.
 */
gpuic_status_t gpuic_mr_register(gpuic_context_t *ctx, void *addr, size_t len, gpuic_mr_t **mr_p);

/**
 * Registers existing device (CUDA) memory [addr, addr+len) for remote access, for a context
 * whose gpuic_context_reaches_device_memory() holds.  len must be > 0.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM, GPUIC_ERR_UNSUPPORTED (UCX cannot register device
 *         memory), GPUIC_ERR_NO_MEMORY or GPUIC_ERR_TRANSPORT.
 */
gpuic_status_t gpuic_mr_register_device(gpuic_context_t *ctx, void *addr, size_t len,
                                        gpuic_mr_t **mr_p);

/**
 * Allocates len > 0 bytes through UCX and registers them.  Memory UCX allocates itself can be
 * mapped directly by same-node peers (see gpuic_rkey_ptr()), which user memory often cannot.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM, GPUIC_ERR_NO_MEMORY (also, without trying, for
 *         more than the node's available memory) or GPUIC_ERR_TRANSPORT.  Out of memory is
 *         logged at debug level only: the caller reports it.
 */
gpuic_status_t gpuic_mr_allocate(gpuic_context_t *ctx, size_t len, gpuic_mr_t **mr_p);

/** Deregisters the region (and frees memory that gpuic_mr_allocate() allocated). */
void gpuic_mr_deregister(gpuic_mr_t *mr);

/** The region's local start address. */
void *gpuic_mr_address(const gpuic_mr_t *mr);

/**
 * Packs the region's remote key for peers.  The blob is released with gpuic_mr_blob_release().
 */
gpuic_status_t gpuic_mr_pack(const gpuic_mr_t *mr, void **blob_p, size_t *len_p);

/** Releases a blob from gpuic_mr_pack(). */
void gpuic_mr_blob_release(void *blob);

/** Unpacks a peer's key blob for use on @p ep (the endpoint to the region's owner). */
gpuic_status_t gpuic_rkey_unpack(gpuic_ep_t *ep, const void *blob, gpuic_rkey_t **rkey_p);

/** Destroys an unpacked key. */
void gpuic_rkey_destroy(gpuic_rkey_t *rkey);

/**
 * Gives a local pointer through which remote address @p raddr can be loaded and stored directly
 * (same-node shared mapping).
 * @return GPUIC_OK with *ptr_p set, or GPUIC_ERR_UNSUPPORTED when the transport offers no mapping.
 */
gpuic_status_t gpuic_rkey_ptr(const gpuic_rkey_t *rkey, uint64_t raddr, void **ptr_p);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_MR_H */
