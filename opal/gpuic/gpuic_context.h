/*
 * gpuic_context.h - a libgpuic context: one private UCP context and worker.
 *
 * The context owns the UCX objects every other libgpuic object hangs from.  It is private to
 * its user (the osc component keeps one per process), so it never shares a worker or endpoint
 * with other UCX users in the process.
 */
#ifndef GPUIC_CONTEXT_H
#define GPUIC_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuic_context gpuic_context_t;

/** Parameters of gpuic_context_create(). */
typedef struct gpuic_context_params {
    int thread_multiple; /**< non-zero: several threads may call into this context at once */
    int thread_serialized; /**< non-zero: several threads call in, never at the same time (the
                                caller serialises them, e.g. a proxy thread and its pausers) */
    /** Non-zero: the context also gets a serving worker (gpuic_context_serve_address()) that
     *  issues nothing and is progressed with gpuic_context_serve_progress() from any thread.
     *  Peers whose endpoints connect to it reach this process's registered memory with
     *  operations that need this process's progress (RMA and atomics a transport emulates in
     *  software) while the context's own worker is left to its thread.  Every progress of
     *  the context progresses it too (gpuic_context_serve_also() with the context itself), so
     *  that two processes waiting on each other's answers both move on.  Where UCX cannot
     *  create it, the context has none (a warning says so) and the call still succeeds. */
    int serve;
} gpuic_context_params_t;

/**
 * Creates a context: a UCP context with RMA and 32/64-bit atomics and one worker.
 * @param params  creation parameters (not kept)
 * @param ctx_p   receives the context
 * @return GPUIC_OK, GPUIC_ERR_NO_MEMORY or GPUIC_ERR_TRANSPORT (UCX could not start).
 */
gpuic_status_t gpuic_context_create(const gpuic_context_params_t *params, gpuic_context_t **ctx_p);

/** Destroys a context; every endpoint, region and key made from it must be gone. */
void gpuic_context_destroy(gpuic_context_t *ctx);

/**
 * Returns the worker address other processes pass to gpuic_ep_create().  The buffer belongs
 * to the context and stays valid until gpuic_context_destroy().
 */
void gpuic_context_address(const gpuic_context_t *ctx, const void **addr_p, size_t *len_p);

/** Advances outstanding communication once; returns non-zero when something happened. */
unsigned gpuic_context_progress(gpuic_context_t *ctx);

/**
 * Completes every operation issued on any endpoint of the context at its target (remote
 * completion), progressing until done.
 * @return GPUIC_OK, GPUIC_ERR_TIMED_OUT (the context's timeout passed) or another error.
 */
gpuic_status_t gpuic_context_flush(gpuic_context_t *ctx);

/**
 * Bounds every blocking wait of the context that depends on a peer (endpoint and worker
 * flushes, fetching atomics, local completion, and the caller's own waits through
 * gpuic_context_wait_round()): such a wait gives up with GPUIC_ERR_TIMED_OUT once it has seen
 * no progress for @p seconds.  The timeout measures silence, not duration: a transfer that
 * keeps moving never times out, however long it takes.  0 (the default) waits forever.  Set it
 * before waits start.
 */
void gpuic_context_set_timeout(gpuic_context_t *ctx, double seconds);

/** Tells whether every process a wait of the context can depend on is known to be alive
 *  (gpuic_context_set_alive()); @p arg is the one given there. */
typedef bool (*gpuic_context_alive_fn_t)(void *arg);

/**
 * Sets what a wait asks once it has been silent for the timeout (gpuic_context_set_timeout()):
 * when @p alive returns true the wait goes on and measures its silence afresh (a peer that is
 * alive and has not got there yet, which may take as long as it likes); when false, or with no
 * function (NULL, the default), it gives up with GPUIC_ERR_TIMED_OUT.  @p alive is called from
 * any thread that waits, the proxy's included, and must not wait itself.  Set it before waits
 * start.
 */
void gpuic_context_set_alive(gpuic_context_t *ctx, gpuic_context_alive_fn_t alive, void *arg);

/**
 * True when the context's UCX can register and move device (CUDA) memory: its loaded
 * transports include one for CUDA memory (cuda_copy, cuda_ipc, gdr_copy or a network transport
 * with GPUDirect).  A UCX built without CUDA answers false, and then device memory can be
 * reached only through CUDA IPC on the same node.
 */
bool gpuic_context_reaches_device_memory(const gpuic_context_t *ctx);

/** The serving worker's address (gpuic_context_params_t.serve); *len_p is 0 when there is
 *  none.  Valid until gpuic_context_destroy(). */
void gpuic_context_serve_address(const gpuic_context_t *ctx, const void **addr_p,
                                 size_t *len_p);

/**
 * Progresses the serving worker once, unless another thread is doing so; thread-safe.
 * @return what ucp_worker_progress() returned (0 without a serving worker or when busy).
 */
unsigned gpuic_context_serve_progress(gpuic_context_t *ctx);

/**
 * Makes every progress of @p ctx (gpuic_context_progress() and the waits of its operations)
 * also progress @p served's serving worker (NULL: none): a thread blocked on a peer's answer
 * keeps serving that peer's operations on this process, so two processes whose threads wait
 * on each other's answers both move on.  Call it before any other thread uses @p ctx.
 */
void gpuic_context_serve_also(gpuic_context_t *ctx, gpuic_context_t *served);

/** Returns the timeout set by gpuic_context_set_timeout(), in seconds (0: none). */
double gpuic_context_timeout(const gpuic_context_t *ctx);

/** The monotonic clock the waits' deadlines are read from, in nanoseconds. */
uint64_t gpuic_context_now_ns(void);

/**
 * The state of one blocking wait, kept by the waiter on its stack and zero-initialised
 * (GPUIC_WAIT_INIT) before the wait's first round.
 */
typedef struct gpuic_wait {
    unsigned spins;          /**< rounds without progress in a row (when to yield) */
    uint64_t quiet_since_ns; /**< CLOCK_MONOTONIC time since which the wait has seen no
                                  progress; 0 while it is still spinning after progress */
} gpuic_wait_t;

/** Initialiser of a gpuic_wait_t. */
#define GPUIC_WAIT_INIT {0, 0}

/**
 * Called by a blocking wait that depends on a peer after each round that found its condition
 * unmet.  @p progressed tells whether the round saw the peer (or the operation) move: the
 * round's gpuic_context_progress() did something, or the awaited word changed.  Progress
 * restarts both the backoff and the silence the timeout measures.  Without progress the wait
 * spins a few rounds, then yields the processor (cheap while other processes are runnable), and
 * only after a long silence (20 ms) sleeps briefly between rounds, so that an idle wait costs
 * no core while an answer that comes soon is seen at once.  It does not log: the caller knows
 * which wait and which peer it was.
 * @return GPUIC_OK to wait on, or GPUIC_ERR_TIMED_OUT once the wait has seen no progress for
 *         the context's timeout and the context's liveness check (gpuic_context_set_alive())
 *         does not vouch for every peer.
 */
gpuic_status_t gpuic_context_wait_round(gpuic_context_t *ctx, gpuic_wait_t *wait,
                                        unsigned progressed);

/**
 * Sets the calling thread's liveness word, or clears it (NULL): while it is set, every round of
 * a wait of this thread that sees progress adds one to it.  A peer that waits on this process
 * (a barrier) reads the word to tell a process that waits on others and is being answered (or
 * is completing its transfers) from a silent one.  The word belongs to the caller and must
 * outlive the setting.
 */
void gpuic_context_beat_set(uint64_t *word);

/**
 * Called by blocking waits between unsuccessful progress rounds.  It keeps an idle waiter
 * from holding a core that other processes on an oversubscribed node need: after a short
 * spin it yields the processor, and after about a millisecond of yielding it sleeps 50 us
 * between rounds.  @p spins counts the rounds so far of one wait.  It does not
 * bound the wait: waits that depend on a peer use gpuic_context_wait_round().
 */
void gpuic_context_wait_idle(gpuic_context_t *ctx, unsigned spins);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CONTEXT_H */
