/*
 * gpuic_health.h - liveness of a progress engine (the proxy thread), as its waiters see it.
 *
 * The engine counts a heartbeat on every pass of its loop (working, polling or waking from an
 * idle pause, which lasts at most its longest pause) and sets @c exited when its thread
 * returns.  A waiter that has work outstanding (gpuic_cmpl_wait()) concludes the engine has
 * failed when it sees @c exited, or the heartbeat standing still for @c stall_ns, and returns
 * GPUIC_ERR_ENGINE_FAILED instead of waiting forever.
 */
#ifndef GPUIC_HEALTH_H
#define GPUIC_HEALTH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The record an engine publishes (one cache line, written by the engine thread). */
typedef struct gpuic_health {
    uint64_t heartbeat __attribute__((aligned(64))); /**< passes of the engine's loop */
    uint64_t stall_ns; /**< a heartbeat standing still this long with work pending is a
                            failure (the context's timeout); 0: only an exit is */
    uint32_t exited;   /**< the engine's thread has returned */
    uint32_t reported; /**< a waiter has logged the failure (logged once) */
} gpuic_health_t;

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_HEALTH_H */
