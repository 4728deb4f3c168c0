/*
 * gpuic_proxy_internal.h - what the proxy's files share.  Not installed.
 *
 * The proxy's files, by seam:
 *   gpuic_proxy.c          lifecycle (create, destroy, add, remove, pause, resume, stats) and
 *                          the thread's loop with its idle sleep
 *   gpuic_proxy_round.c    rounds: draining the rings into operations, accounting each WQE
 *   gpuic_proxy_issue.c    validation and execution of one WQE (key checks, copies, UCX)
 *   gpuic_proxy_complete.c retiring rounds in order: counters, completion and free indexes
 *   gpuic_proxy_acc.c      atomics and accumulates
 *   gpuic_proxy_merge.c    UCX puts held through a round and issued merged
 */
#ifndef GPUIC_PROXY_INTERNAL_H
#define GPUIC_PROXY_INTERNAL_H

#include "gpuic_build_config.h"

#include <pthread.h>

#include "gpuic_ep.h"
#include "gpuic_keytable.h"
#include "gpuic_mr.h"
#include "gpuic_proxy.h"
#include "gpuic_rma.h"
#include "gpuic_trace.h"
#include "gpuic_wqe.h"

/* Functions shared by the proxy's files only: not exported from libgpuic, so calls between
 * the files are direct. */
#define GPUIC_PROXY_LOCAL __attribute__((visibility("hidden")))

typedef struct gpuic_proxy_round gpuic_proxy_round_t;

/* One WQE in flight: the private copy the proxy validated and executes (an inline payload is
 * read from it, so it lives until UCX is done with the payload). */
typedef struct gpuic_proxy_op {
    gpuic_rma_completion_t comp;
    struct gpuic_proxy_op *next_free;
    gpuic_proxy_t *proxy;
    gpuic_proxy_round_t *round;
    gpuic_trace_view_t trace; /* the queue's trace (traced builds; else unused) */
    uint64_t seq;             /* the WQE's first sequence number (traced builds) */
    gpuic_wqe_t wqe;
} gpuic_proxy_op_t;

/* What a round owes one (window, target): applied when the round completes. */
typedef struct gpuic_proxy_tally {
    gpuic_cmpl_t *cmpl;
    uint64_t *done;       /* the queue's completion word (failure marks: its count) */
    uint32_t *marks;      /* the queue's failure marks, or NULL (gpuic_proxy_queue_t.failed) */
    uint32_t target;
    uint32_t count;
    uint32_t failed;
} gpuic_proxy_tally_t;

/* A ring's completion index owed by a round: every WQE below end is complete once the round
 * retires. */
typedef struct gpuic_proxy_done {
    uint64_t *done;
    uint64_t end;
    int marked;               /* the queue has failure marks: done is a completion word */
} gpuic_proxy_done_t;

/* Consecutive traced WQEs of one ring in a round: stamped remote-complete when it retires. */
typedef struct gpuic_proxy_trace_range {
    gpuic_trace_view_t trace;
    uint64_t begin, end;
} gpuic_proxy_trace_range_t;

struct gpuic_proxy_round {
    gpuic_rma_completion_t flush_comp;
    gpuic_proxy_round_t *next;
    int flush_done;
    /* some operation of the round went to UCX: its completion needs the worker's flush (a
     * round executed wholly through mappings is complete once executed) */
    int ucx;
    gpuic_status_t flush_status;
    unsigned local_pending;   /* operations whose local completion is outstanding */
    int local_applied;
    uint64_t stamp;           /* round number: marks tallies of this round in the queues */
    gpuic_proxy_tally_t *tallies;
    unsigned ntallies, tally_cap;
    gpuic_proxy_done_t *dones;
    unsigned ndones, done_cap;
    gpuic_proxy_trace_range_t *tranges; /* traced builds only */
    unsigned ntranges, trange_cap;
};

/* A UCX put held until its round's puts are issued (gpuic_proxy_merge.c). */
typedef struct gpuic_proxy_put {
    gpuic_proxy_op_t *op;
    gpuic_ep_t *ep;
    const gpuic_rkey_t *rkey;
    const char *src;          /* the WQE's local buffer */
    uint64_t raddr;
    uint64_t len;
    unsigned order;           /* position among the held puts */
    int device;               /* src is device memory (GPUIC_WQE_LKEY_DEVICE) */
} gpuic_proxy_put_t;

/* An attached queue and its per-target bookkeeping for the round being built. */
typedef struct gpuic_proxy_attached {
    gpuic_proxy_queue_t q;
    uint64_t *tally_stamp;    /* per target: round that last tallied it */
    unsigned *tally_index;    /* per target: its tally in that round */
    uint64_t done_owed;       /* completion index last recorded in a round */
    /* WQEs with a result in a staging area whose producer has not acknowledged it yet
     * (queues with a free index): their sequence numbers in ring order, at most one lap */
    uint64_t *held;
    uint64_t held_head, held_tail;
    uint64_t free_pub;        /* free index last stored */
    gpuic_trace_view_t trace; /* the queue's trace, resolved once (traced builds) */
} gpuic_proxy_attached_t;

struct gpuic_proxy {
    gpuic_proxy_params_t params;
    pthread_t thread;
    int started;

    /* Held by the proxy thread while it works; pausers take it to own the context. */
    pthread_mutex_t ctx_lock;
    uint32_t pause_requests;  /* atomic */
    uint32_t stop;            /* atomic */

    /* Idle sleep: the thread waits on wake_cond while sleeping is set; whoever clears the
     * flag (under wake_lock) signals. */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    uint32_t sleeping;        /* atomic */

    /* The thread's working state. */
    gpuic_proxy_attached_t *queues __attribute__((aligned(64)));   /* under ctx_lock */
    unsigned nqueues;

    gpuic_proxy_round_t *fifo_head, *fifo_tail, *free_rounds;
    gpuic_proxy_op_t *free_ops;
    uint64_t round_stamp;

    uint64_t stat_wqes, stat_errors, stat_rounds, stat_sleeps; /* atomic (read by stats) */
    uint64_t stat_merged;                                      /* atomic (read by stats) */
    uint64_t stat_busy_ns;                                     /* atomic (read by stats) */

    /* Puts held while a round drains (gpuic_proxy_merge.c), and the device allocation the
     * last merge looked up ([merge_lo, merge_hi); empty when lo == hi). */
    gpuic_proxy_put_t *puts;
    unsigned nputs, put_cap;
    uintptr_t merge_lo, merge_hi;

    /* Device memory named by WQEs (GPUIC_WQE_LKEY_DEVICE) over UCX: handed to UCX as it is when
     * the context's transports reach device memory, else moved through bounce, a host buffer
     * of GPUIC_PROXY_BOUNCE_BYTES allocated on first use, with the copy function. */
    int ucx_device;
    void *bounce;

    uint32_t test_fault;      /* gpuic_proxy_fault_t (gpuic_proxy_test_fault) */
};

/* ---- rounds (gpuic_proxy_round.c) ---- */

/* One round: drains every ring up to the bound sampled now, then starts the round's flush.
 * Returns the number of WQEs consumed.  Under ctx_lock. */
GPUIC_PROXY_LOCAL
unsigned gpuic_proxy_round(gpuic_proxy_t *proxy);

/* Returns an operation to the free list. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_op_put(gpuic_proxy_op_t *op);

/* An operation's local completion with @p status (its completion callback): counted in its
 * round, an error failing the round; the op goes back to the free list. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_op_done(gpuic_rma_completion_t *comp, gpuic_status_t status);

/* Frees the proxy's cached operations and rounds. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_free_lists(gpuic_proxy_t *proxy);

/* Grows an array of elem_size elements to hold at least one more; 0 on allocation failure. */
GPUIC_PROXY_LOCAL
int gpuic_proxy_grow(void **array, unsigned *cap, unsigned n, size_t elem_size);

/* ---- validation and execution (gpuic_proxy_issue.c) ---- */

/* Bytes of the proxy's bounce buffer, the piece of a device transfer it moves at a time when
 * UCX cannot reach device memory: large enough that the per-piece costs (a copy call, a UCX
 * round trip) stay small against the piece's transfer. */
#define GPUIC_PROXY_BOUNCE_BYTES (1u << 20)

/* Issues a decoded, structurally valid WQE of queue @p a.  Returns GPUIC_OK when the operation
 * is locally complete, GPUIC_INPROGRESS when op->comp will report it (the op is then kept), or
 * the error that rejects it (nothing was touched). */
GPUIC_PROXY_LOCAL
gpuic_status_t gpuic_proxy_execute(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                   gpuic_proxy_op_t *op, const gpuic_wqe_desc_t *d);

/* ---- put merging (gpuic_proxy_merge.c) ---- */

/* Holds a validated UCX put of @p op (from @p src, not an inline payload, @p device when it
 * is device memory) to @p raddr of @p e's region until gpuic_proxy_puts_issue().  Returns
 * GPUIC_INPROGRESS (op->comp will report it), or, where it cannot be held, what issuing it
 * at once returned. */
GPUIC_PROXY_LOCAL
gpuic_status_t gpuic_proxy_put_hold(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                    const gpuic_keytable_entry_t *e, const void *src,
                                    uint64_t len, uint64_t raddr, int device);

/* Issues the held puts, adjacent ones merged; each op's completion comes as for any UCX put
 * (an issue that fails fails the round).  Called before any other WQE is executed and at the
 * end of each round's drain, before its flush. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_puts_issue(gpuic_proxy_t *proxy);

/* ---- completion (gpuic_proxy_complete.c) ---- */

/* The round's flush completed with @p status (also called for a round that needs none). */
GPUIC_PROXY_LOCAL
void gpuic_proxy_flush_done(gpuic_rma_completion_t *comp, gpuic_status_t status);

/* Owes @p a's completion index the ring's read index at the end of this round's drain. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_done_add(gpuic_proxy_round_t *round, gpuic_proxy_attached_t *a);

/* The completion index last published for @p q (the index part of a completion word). */
GPUIC_PROXY_LOCAL
uint64_t gpuic_proxy_done_index(const gpuic_proxy_queue_t *q);

/* Applies completed rounds, oldest first, stopping at the first incomplete one. */
GPUIC_PROXY_LOCAL
void gpuic_proxy_retire(gpuic_proxy_t *proxy);

/* Moves the free index of every queue that has one; returns whether some result is still
 * unacknowledged. */
GPUIC_PROXY_LOCAL
int gpuic_proxy_free_update(gpuic_proxy_t *proxy);

/* Progress until every round is retired, bounded by the context's timeout: GPUIC_OK or
 * GPUIC_ERR_TIMED_OUT (unretired rounds stay queued).  Under ctx_lock. */
GPUIC_PROXY_LOCAL
gpuic_status_t gpuic_proxy_drain_locked(gpuic_proxy_t *proxy);

/* ---- atomics and accumulates (gpuic_proxy_acc.c) ---- */

/**
 * One atomic of @p size (4 or 8) bytes at @p raddr of the region of @p e (raddr validated):
 * a CPU atomic instruction on the mapping when e->cpu_atomics, else a UCX atomic.  With
 * @p old_p the old value is stored there on return; without, the atomic is posted (SWAP and
 * CSWAP need @p old_p) and completes with the next flush of the context.
 * @return GPUIC_OK, GPUIC_ERR_UNSUPPORTED (a mapping without cpu_atomics and no endpoint)
 *         or a transport error.
 */
gpuic_status_t gpuic_proxy_atomic(const gpuic_keytable_entry_t *e, gpuic_atomic_op_t op,
                                  uint64_t value, uint64_t compare, uint32_t size,
                                  uint64_t raddr, uint64_t *old_p);

/** Whether gpuic_proxy_atomic() on @p e goes through UCX (so a flush must complete it). */
int gpuic_proxy_atomic_uses_ucx(const gpuic_keytable_entry_t *e);

/**
 * Executes a validated accumulate WQE (raddr range already checked against the region of
 * @p e): exact atomics per element (gpuic_proxy_atomic()), a native one where there is the
 * operation, a compare-and-swap loop otherwise.  Returns when every element has been updated
 * (posted UCX atomics: issued, complete with the next flush).
 * @return GPUIC_OK, GPUIC_ERR_UNSUPPORTED (op/type pair not executed here, or no atomic for
 *         the region), GPUIC_ERR_INVALID_PARAM (misaligned) or a transport error.
 */
gpuic_status_t gpuic_proxy_accumulate(const gpuic_keytable_entry_t *e,
                                      const gpuic_wqe_desc_t *d);

/* ---- trace points (gpuic_trace.h) ---- */

/*
 * GPUIC_TRACE_POINT(point, args...) stamps one stage of a WQE's trace record: pickup (the WQE
 * copied out of its ring), issued (validated, about to be executed) and remote (its round's
 * flush completed), plus round_open (a round starts with no traced range).  A build configured
 * with --enable-trace (GPUIC_TRACE) calls gpuic_proxy_trace_<point>(args); any other build
 * expands it to nothing and evaluates no argument.  Queues without a trace cost a traced build
 * one branch per point.
 */
#ifdef GPUIC_TRACE
#define GPUIC_TRACE_POINT(_point, ...) gpuic_proxy_trace_##_point(__VA_ARGS__)

/* The WQE in @p op was copied out of @p a's ring at @p seq: stamps its pickup and remembers it
 * for its round's remote stamp. */
static inline void gpuic_proxy_trace_pickup(gpuic_proxy_attached_t *a,
                                            gpuic_proxy_round_t *round, gpuic_proxy_op_t *op,
                                            uint64_t seq, unsigned nbb)
{
    gpuic_proxy_trace_range_t *last;

    op->trace = a->trace;
    if (op->trace.records == NULL) {
        return;
    }
    op->seq = seq;
    gpuic_trace_stamp(op->trace, seq, GPUIC_TRACE_PICKUP);
    last = round->ntranges ? &round->tranges[round->ntranges - 1] : NULL;
    if (last != NULL && last->trace.records == op->trace.records && last->end == seq) {
        last->end = seq + nbb;
        return;
    }
    if (!gpuic_proxy_grow((void **)&round->tranges, &round->trange_cap, round->ntranges,
                          sizeof(*round->tranges))) {
        return; /* the record just misses its remote stamp */
    }
    round->tranges[round->ntranges++] = (gpuic_proxy_trace_range_t){op->trace, seq, seq + nbb};
}

/* The WQE in @p op is valid and about to be executed (UCX called, or a copy made). */
static inline void gpuic_proxy_trace_issued(const gpuic_proxy_op_t *op)
{
    gpuic_trace_stamp(op->trace, op->seq, GPUIC_TRACE_ISSUED);
}

/* The round's flush completed: its traced WQEs are complete at their targets. */
static inline void gpuic_proxy_trace_remote(const gpuic_proxy_round_t *round)
{
    for (unsigned i = 0; i < round->ntranges; ++i) {
        const gpuic_proxy_trace_range_t *r = &round->tranges[i];

        for (uint64_t seq = r->begin; seq != r->end; ++seq) {
            /* continuation slots and NOPs have no open record of their own */
            if (gpuic_trace_record(r->trace, seq)->seq == seq + 1) {
                gpuic_trace_stamp(r->trace, seq, GPUIC_TRACE_REMOTE);
            }
        }
    }
}

/* A round (new or reused) starts with no traced range. */
static inline void gpuic_proxy_trace_round_open(gpuic_proxy_round_t *round)
{
    round->ntranges = 0;
}
#else
#define GPUIC_TRACE_POINT(_point, ...) ((void)0)
#endif

/* ---- test hooks ---- */

/** Faults the proxy thread can be made to have, for tests. */
typedef enum gpuic_proxy_fault {
    GPUIC_PROXY_FAULT_NONE,     /**< run normally */
    GPUIC_PROXY_FAULT_UNFLUSHED /**< keep running, but treat no round as flushed (a transport
                                     that never completes a flush, as to a dead peer) until
                                     the fault is cleared */
} gpuic_proxy_fault_t;

/** Test hook: gives the proxy thread @p fault; rounds retired from now on see it. */
void gpuic_proxy_test_fault(gpuic_proxy_t *proxy, gpuic_proxy_fault_t fault);

#endif /* GPUIC_PROXY_INTERNAL_H */
