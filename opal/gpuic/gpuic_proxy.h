/*
 * gpuic_proxy.h - the proxy_ucx engine: a progress thread that drains send-queue rings,
 * validates every WQE and executes it with UCX.
 *
 * Worker ownership: the proxy drives one gpuic context whose worker it progresses from its
 * own thread.  The context must be created with thread_serialized (or thread_multiple): the
 * proxy thread is its main user, and any other thread that needs the context (to create
 * endpoints, register memory, unpack keys for a new window) brackets those calls with
 * gpuic_proxy_pause()/gpuic_proxy_resume().  A serialized worker keeps UCX's fast path
 * lock-free, which a thread_multiple worker would not; the pauses happen at setup only.
 *
 * Per WQE: decode (gpuic_wqe_decode), check the opcode, the key (index, generation, live),
 * that the key's region belongs to the WQE's target and holds the whole access, and the
 * length limit; then issue it.  An invalid WQE touches no memory: it completes with an error
 * (counted as failed) and sets the window's error word.  A put's or get's local buffer is
 * the producer's own memory and has no key: staging memory the proxy reads and writes, or
 * device memory (lkey GPUIC_WQE_LKEY_DEVICE) that it only hands to the copy function or to UCX.
 *
 * Completion: the proxy works in rounds.  A round takes what every ring has published, drains
 * it, then starts one flush of the worker.  Rounds complete in order: a round's local counts
 * are applied once its operations are locally complete and every earlier round's were; its
 * remote counts and its rings' completion indexes once its flush has completed too.  So a
 * queue's completion index (gpuic_proxy_queue_t.done) never passes a WQE that is not complete
 * at its target, and the per-target counters of gpuic_cmpl.h count in the same order.
 *
 * Idle: the thread starts when the first ring is added, spins a short while after its last
 * work, then sleeps in growing pauses (1 us doubling up to max_sleep_us), which sets an idle
 * proxy's CPU use.  Producers (GPU threads) cannot wake it: once a ring has carried entries
 * the proxy keeps polling while that ring is attached, so entries never wait for a pause.
 * Pause, resume and destroy end a pause at once.
 * Destroy drains what is published, completes it and joins the thread.
 */
#ifndef GPUIC_PROXY_H
#define GPUIC_PROXY_H

#include <stdint.h>

#include "gpuic_cmpl.h"
#include "gpuic_context.h"
#include "gpuic_keytable.h"
#include "gpuic_ring.h"
#include "gpuic_status.h"
#include "gpuic_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuic_proxy gpuic_proxy_t;

/** Longest idle pause by default, in microseconds: the worst-case pick-up delay of the first
 *  WQE a proxy that never had work sees. */
#define GPUIC_PROXY_DEFAULT_MAX_SLEEP_US 5000

/** Longest idle pause of a proxy that serves a context (gpuic_proxy_params_t.serve), in
 *  microseconds: the worst-case delay a peer's operation on this process sees while the proxy
 *  is idle, against a wake-up this often (a few thousand a second cost no core). */
#define GPUIC_PROXY_SERVE_MAX_SLEEP_US 100

/** Longest idle pause, in microseconds, of a serving proxy that drains no ring (started by
 *  gpuic_proxy_start() for its peers alone): the first operation of a peer after an idle
 *  while waits up to this long, against a tenth of the wake-ups (and of the idle thread's
 *  CPU time: README, osc_gpuic_async_progress) of GPUIC_PROXY_SERVE_MAX_SLEEP_US; a ring
 *  attached brings the shorter bound back. */
#define GPUIC_PROXY_SERVE_ONLY_MAX_SLEEP_US 1000

/** Parameters of gpuic_proxy_create(); zero fields take their defaults. */
typedef struct gpuic_proxy_params {
    gpuic_context_t *ctx;     /**< context the proxy progresses (thread_serialized) */
    /** A context whose serving worker (gpuic_context_params_t.serve) the proxy thread also
     *  progresses, so that peers' operations that need this process's progress complete
     *  while its other threads are elsewhere (e.g. waiting for a kernel that waits for
     *  them); its idle pauses are then bounded by GPUIC_PROXY_SERVE_MAX_SLEEP_US.  NULL:
     *  none. */
    gpuic_context_t *serve;
    unsigned spin_rounds;     /**< empty rounds before the first sleep (default 2000) */
    unsigned max_sleep_us;    /**< longest idle pause in microseconds
                               *   (default GPUIC_PROXY_DEFAULT_MAX_SLEEP_US) */
    uint32_t max_msg_size;    /**< largest put/get/accumulate accepted (default 1 GiB) */
    /** Copies between a WQE's local buffer and a region the proxy reaches through a local
     *  mapping (key-table entries with @c direct set, e.g. device memory of a same-node GPU
     *  mapped by CUDA IPC), and to or from a local buffer in device memory (lkey
     *  GPUIC_WQE_LKEY_DEVICE: with any mapped region, and through a host bounce buffer for
     *  UCX when the context's transports do not reach device memory); takes unified
     *  addresses on either side; synchronous: the data is in place when it returns.  NULL:
     *  WQEs that would need it are refused (GPUIC_ERR_UNSUPPORTED) with nothing moved. */
    gpuic_status_t (*copy)(void *dst, const void *src, size_t len);
    /** The allocation holding device memory at @p addr (its first byte and size), so that
     *  UCX puts from adjacent device buffers of several WQEs merge only within one
     *  allocation; any thread.  NULL: such puts are never merged (host buffers still are). */
    gpuic_status_t (*device_range)(const void *addr, uintptr_t *base_p, size_t *size_p);
} gpuic_proxy_params_t;

/** A ring and the window objects its WQEs refer to. */
typedef struct gpuic_proxy_queue {
    gpuic_ring_t     *ring; /**< the send queue drained */
    gpuic_keytable_t *keys; /**< the window's key table (rkey fields) */
    gpuic_cmpl_t     *cmpl; /**< the window's counters and error word (QPN field = target) */
    /** Completion index (required): after each round the proxy stores there the ring's
     *  sequence number below which every WQE is complete (remotely, results written), in
     *  order.  Producers wait on it for completion, and without a free index for free
     *  slots: a slot's staging data outlives its WQE. */
    uint64_t         *done;
    /**
     * Free index, or NULL (then slots are free once done passes them): the sequence number
     * below which slots may be reused, the completion index held back at the first WQE whose
     * result (a get's data, an atomic's old value, written into the producer's staging area)
     * its producer has not acknowledged in @c acks yet.  Producers that reserve against done
     * could otherwise reuse such a staging area (a staged payload, or a result of the next
     * lap) before its owner read it.  Written with release after each change.
     */
    uint64_t         *free;
    /** With @c free: one word per slot, where the producer of a WQE with a result stores
     *  gpuic_ring_ack_word(seq) at index seq & mask after reading it (zeroed at creation). */
    const uint64_t   *acks;
    /** Stage stamps of the ring's WQEs (pickup, UCX call issued, remote completion), or NULL.
     *  Only a build configured with --enable-trace stamps; others ignore it. */
    gpuic_trace_t    *trace;
    /**
     * Failure marks for the producers, or NULL: 1 + cmpl->ntargets words, zeroed by the
     * caller.  When a round retires WQEs that failed (an error of their own or of the round's
     * transport flush), the proxy stores 1 into word 0 and into word 1 + target of each such
     * WQE's target (they stay set), then raises the failure count of the completion word,
     * which @c done then holds in the format of gpuic_ring_done_word(), all before the index
     * passes those WQEs.  A producer whose wait reads a word with failures looks at the marks
     * of its target.  Without marks @c done holds the plain index.
     */
    uint32_t         *failed;
} gpuic_proxy_queue_t;

/** Counters of the proxy's work. */
typedef struct gpuic_proxy_stats {
    uint64_t wqes;     /**< WQEs consumed (NOPs included) */
    uint64_t errors;   /**< WQEs completed with an error */
    uint64_t rounds;   /**< rounds that found work */
    uint64_t sleeps;   /**< idle pauses taken */
    uint64_t merged;   /**< puts that went to UCX as part of another's (adjacent bytes) */
    uint64_t cpu_ns;   /**< CPU time the proxy thread has used (0 before it starts) */
    uint64_t busy_ns;  /**< time the thread spent in rounds that found work (draining and
                            executing entries), its idle polling left out */
} gpuic_proxy_stats_t;

/**
 * Creates a proxy for @p params->ctx; its thread starts with the first gpuic_proxy_add().
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM or GPUIC_ERR_NO_MEMORY.
 */
gpuic_status_t gpuic_proxy_create(const gpuic_proxy_params_t *params, gpuic_proxy_t **proxy_p);

/**
 * Drains what producers have published, completes it, stops the thread and frees the proxy.
 * Producers must have stopped.  Completion is awaited for at most the context's timeout;
 * work still incomplete then is abandoned (logged), and its memory is not freed.
 */
void gpuic_proxy_destroy(gpuic_proxy_t *proxy);

/**
 * Starts the thread now rather than with the first ring: a proxy that serves a context
 * (gpuic_proxy_params_t.serve) then progresses it from the start, for a process whose peers'
 * operations need its progress while it has no ring.  Does nothing when the thread runs.
 * @return GPUIC_OK or GPUIC_ERR_TRANSPORT (thread creation failed).
 */
gpuic_status_t gpuic_proxy_start(gpuic_proxy_t *proxy);

/**
 * Starts draining a ring (starting the thread on first use).  The queue's objects must stay
 * alive until gpuic_proxy_remove() or destroy.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM, GPUIC_ERR_NO_MEMORY or GPUIC_ERR_TRANSPORT
 *         (thread creation failed).
 */
gpuic_status_t gpuic_proxy_add(gpuic_proxy_t *proxy, const gpuic_proxy_queue_t *queue);

/**
 * Stops draining @p ring after completing everything consumed from it.  Waits at most the
 * context's timeout (gpuic_context_set_timeout()) for that completion.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM (not attached) or GPUIC_ERR_TIMED_OUT (some of
 *         the proxy's work did not complete in time: the ring stays attached, and the queue's
 *         objects must stay alive until gpuic_proxy_destroy(), or be leaked).
 */
gpuic_status_t gpuic_proxy_remove(gpuic_proxy_t *proxy, gpuic_ring_t *ring);

/**
 * Takes the context away from the proxy thread until gpuic_proxy_resume(), so the caller may
 * use it (endpoints, registrations, keys).  Pauses nest across threads; they serialise.
 */
void gpuic_proxy_pause(gpuic_proxy_t *proxy);

/** Gives the context back to the proxy thread. */
void gpuic_proxy_resume(gpuic_proxy_t *proxy);

/** Reads the proxy's counters. */
void gpuic_proxy_stats(gpuic_proxy_t *proxy, gpuic_proxy_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_PROXY_H */
