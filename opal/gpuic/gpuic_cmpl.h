/*
 * gpuic_cmpl.h - a window's completion block: per-target completion counters and the error word.
 *
 * Producers count each WQE they post to a target (gpuic_cmpl_post(), before ringing the
 * doorbell); the engine counts each WQE it completes.  flush(target) samples the posted count
 * and waits for the completed count to reach it: one counter, however many rings feed the
 * target.  The proxy completes a target's WQEs in the order their doorbells were rung (it
 * drains every ring up to the doorbells it sampled, and applies counts round by round), so the
 * completed count can only reach the sample once every WQE posted before the flush is done;
 * producers running concurrently can only make the flush wait longer.
 *
 * The error word keeps the first error any WQE of the window met (first error wins).
 * The structure and the producer-side calls are inline and device-callable.
 */
#ifndef GPUIC_CMPL_H
#define GPUIC_CMPL_H

#include <stdint.h>

#include "gpuic_fence.h"
#include "gpuic_health.h"
#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Counters of one target.  Producers write @c posted for every WQE and the engine the others
 * once per batch: each side has its own cache line, so neither steals the other's.
 */
typedef struct gpuic_cmpl_counter {
    uint64_t posted __attribute__((aligned(64)));    /**< WQEs producers posted to the target */
    uint64_t completed __attribute__((aligned(64))); /**< WQEs complete at the target (or failed) */
    uint64_t local_completed; /**< WQEs whose local buffers may be reused (or failed) */
    uint64_t failed;          /**< WQEs that completed with an error */
} __attribute__((aligned(64))) gpuic_cmpl_counter_t;

/** A completion block. */
typedef struct gpuic_cmpl {
    uint64_t error __attribute__((aligned(64))); /**< first error (a gpuic_status_t), 0 if none */
    uint32_t ntargets;                           /**< number of counters */
    /** An error the engine declared that keeps outstanding WQEs from ever completing
     *  (GPUIC_ERR_QUEUE_STUCK), 0 if none: waiters return it instead of waiting. */
    int32_t engine_error;
    /** The engine's heartbeat when it last found engine_error still true: a waiter trusts
     *  only a confirmation made after it began waiting. */
    uint64_t engine_error_beat;
    gpuic_cmpl_counter_t *counters;              /**< one per target */
    /** The liveness of the engine that completes these counters, NULL if not watched
     *  (gpuic_cmpl_watch()). */
    gpuic_health_t *engine;
} gpuic_cmpl_t;

/** Which completion gpuic_cmpl_wait() waits for. */
typedef enum gpuic_cmpl_kind {
    GPUIC_CMPL_REMOTE, /**< complete at the target (flush) */
    GPUIC_CMPL_LOCAL   /**< local buffers reusable (flush_local) */
} gpuic_cmpl_kind_t;

/**
 * Creates a completion block for @p ntargets targets (>= 1), all counters zero.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM or GPUIC_ERR_NO_MEMORY.
 */
gpuic_status_t gpuic_cmpl_create(uint32_t ntargets, gpuic_cmpl_t **cmpl_p);

/** Destroys a completion block. */
void gpuic_cmpl_destroy(gpuic_cmpl_t *cmpl);

/** Producer: counts @p n WQEs posted to @p target; call before the doorbell that publishes them. */
static inline GPUIC_HOST_DEVICE void gpuic_cmpl_post(gpuic_cmpl_t *cmpl, uint32_t target,
                                                     uint64_t n)
{
    gpuic_atomic_fetch_add_u64(&cmpl->counters[target].posted, n);
}

/** Engine: counts @p n WQEs complete at @p target (@p failed of them with an error). */
void gpuic_cmpl_complete(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n, uint64_t failed);

/** Engine: counts @p n WQEs to @p target whose local buffers are reusable. */
void gpuic_cmpl_complete_local(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n);

/** Records @p status as the window's error unless an earlier error is already recorded. */
void gpuic_cmpl_set_error(gpuic_cmpl_t *cmpl, gpuic_status_t status);

/** The window's first error, GPUIC_OK when none. */
gpuic_status_t gpuic_cmpl_error(const gpuic_cmpl_t *cmpl);

/**
 * Engine: names the health record waiters check while they wait (NULL: none).  Set when a
 * queue feeding these counters is attached to an engine, cleared before the engine goes.
 */
void gpuic_cmpl_watch(gpuic_cmpl_t *cmpl, gpuic_health_t *engine);

/**
 * Engine: declares or confirms (@p status < 0) or clears (GPUIC_OK) an error that keeps
 * outstanding WQEs from completing, found true at heartbeat @p beat (the engine confirms it on
 * each pass while it lasts).  Waiters with work outstanding return it once it is confirmed at
 * a heartbeat later than the start of their wait.  The engine logs it.
 */
void gpuic_cmpl_set_engine_error(gpuic_cmpl_t *cmpl, gpuic_status_t status, uint64_t beat);

/** Reads a target's counters (each read atomically; the four are not one snapshot). */
void gpuic_cmpl_query(const gpuic_cmpl_t *cmpl, uint32_t target, gpuic_cmpl_counter_t *out);

/**
 * flush(target) / flush_local(target): waits until every WQE posted to @p target before the
 * call has completed (remotely or locally).  Spins briefly, then sleeps with growing pauses.
 * While it sleeps it checks the engine (gpuic_cmpl_watch()): an engine whose thread exited,
 * or whose heartbeat stood still for its stall time, ends the wait (logged once per engine);
 * so does an engine error (gpuic_cmpl_set_engine_error()).
 * @param timeout_ns  give up after this long; 0 waits forever
 * @return GPUIC_OK, GPUIC_ERR_TIMED_OUT, GPUIC_ERR_ENGINE_FAILED, the engine error
 *         (GPUIC_ERR_QUEUE_STUCK), or GPUIC_ERR_INVALID_PARAM for a bad target.
 *         Failed WQEs count as completed: check gpuic_cmpl_error().
 */
gpuic_status_t gpuic_cmpl_wait(const gpuic_cmpl_t *cmpl, uint32_t target,
                               gpuic_cmpl_kind_t kind, uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CMPL_H */
