/*
 * gpuic_cmpl.h - a window's completion block: per-target completion counters and the error word.
 *
 * The engine (the proxy) counts each WQE it completes, per target, in the order its rounds
 * complete (gpuic_proxy.h); producers learn of completion from the queue's completion index,
 * these counters are the engine's account of it (failures included).
 *
 * The error word keeps the first error any WQE of the window met (first error wins).
 */
#ifndef GPUIC_CMPL_H
#define GPUIC_CMPL_H

#include <stdint.h>

#include "gpuic_fence.h"
#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Counters of one target, written by the engine once per round. */
typedef struct gpuic_cmpl_counter {
    uint64_t completed;       /**< WQEs complete at the target (or failed) */
    uint64_t local_completed; /**< WQEs whose local buffers may be reused (or failed) */
    uint64_t failed;          /**< WQEs that completed with an error */
} __attribute__((aligned(64))) gpuic_cmpl_counter_t;

/** A completion block. */
typedef struct gpuic_cmpl {
    uint64_t error __attribute__((aligned(64))); /**< first error (a gpuic_status_t), 0 if none */
    uint32_t ntargets;                           /**< number of counters */
    gpuic_cmpl_counter_t *counters;              /**< one per target */
} gpuic_cmpl_t;

/**
 * Creates a completion block for @p ntargets targets (>= 1), all counters zero.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM or GPUIC_ERR_NO_MEMORY.
 */
gpuic_status_t gpuic_cmpl_create(uint32_t ntargets, gpuic_cmpl_t **cmpl_p);

/** Destroys a completion block. */
void gpuic_cmpl_destroy(gpuic_cmpl_t *cmpl);

/** Engine: counts @p n WQEs complete at @p target (@p failed of them with an error). */
void gpuic_cmpl_complete(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n, uint64_t failed);

/** Engine: counts @p n WQEs to @p target whose local buffers are reusable. */
void gpuic_cmpl_complete_local(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n);

/** Records @p status as the window's error unless an earlier error is already recorded. */
void gpuic_cmpl_set_error(gpuic_cmpl_t *cmpl, gpuic_status_t status);

/** The window's first error, GPUIC_OK when none. */
gpuic_status_t gpuic_cmpl_error(const gpuic_cmpl_t *cmpl);

/** Reads a target's counters (each read atomically; the three are not one snapshot). */
void gpuic_cmpl_query(const gpuic_cmpl_t *cmpl, uint32_t target, gpuic_cmpl_counter_t *out);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CMPL_H */
