#include "gpuic_build_config.h"
#include "gpuic_mem.h"
#include "gpuic_proxy.h"

#include <errno.h>
#include <pthread.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuic_log.h"
#include "gpuic_proxy_internal.h"
#include "gpuic_rma.h"

#define GPUIC_PROXY_DEFAULT_SPIN_ROUNDS 2000
#define GPUIC_PROXY_DEFAULT_MAX_MSG (1u << 30)

typedef struct gpuic_proxy_round gpuic_proxy_round_t;

/* What the proxy remembers of a ring to tell a stuck reservation from a slow one. */
typedef struct gpuic_proxy_watch {
    uint64_t doorbell;  /* the doorbell when last seen moving (or the ring empty) */
    uint64_t since_ns;  /* when that was; 0: not yet seen */
    int declared;       /* GPUIC_ERR_QUEUE_STUCK declared on the queue's counters */
} gpuic_proxy_watch_t;

/* One WQE in flight: the private copy the proxy validated and executes (an inline payload is
 * read from it, so it lives until UCX is done with the payload). */
typedef struct gpuic_proxy_op {
    gpuic_rma_completion_t comp;
    struct gpuic_proxy_op *next_free;
    gpuic_proxy_t *proxy;
    gpuic_proxy_round_t *round;
#ifdef GPUIC_TRACE
    gpuic_trace_view_t trace; /* the queue's trace, and the WQE's record in it */
    uint64_t seq;
#endif
    gpuic_wqe_t wqe;
} gpuic_proxy_op_t;

/* What a round owes one (window, target): applied when the round completes. */
typedef struct gpuic_proxy_tally {
    gpuic_cmpl_t *cmpl;
    uint32_t target;
    uint32_t count;
    uint32_t failed;
} gpuic_proxy_tally_t;

/* A ring's completion index owed by a round: every WQE below end is complete once the round
 * retires. */
typedef struct gpuic_proxy_done {
    uint64_t *done;
    uint64_t end;
} gpuic_proxy_done_t;
#ifdef GPUIC_TRACE
/* Consecutive traced WQEs of one ring in a round: stamped remote-complete when it retires. */
typedef struct gpuic_proxy_trace_range {
    gpuic_trace_view_t trace;
    uint64_t begin, end;
} gpuic_proxy_trace_range_t;
#endif

typedef struct gpuic_proxy_pending_cqe {
    gpuic_cq_t *cq;
    gpuic_cmpl_t *cmpl;
    gpuic_cqe_t cqe;
} gpuic_proxy_pending_cqe_t;

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
    gpuic_proxy_pending_cqe_t *cqes;
    unsigned ncqes, cqe_cap;
    gpuic_proxy_done_t *dones;
    unsigned ndones, done_cap;
#ifdef GPUIC_TRACE
    gpuic_proxy_trace_range_t *tranges;
    unsigned ntranges, trange_cap;
#endif
};

/* An attached queue and its per-target bookkeeping for the round being built. */
typedef struct gpuic_proxy_attached {
    gpuic_proxy_queue_t q;
    uint64_t *tally_stamp;    /* per target: round that last tallied it */
    unsigned *tally_index;    /* per target: its tally in that round */
    unsigned release_batch;   /* slots read before they are handed back to producers */
    uint64_t done_owed;       /* completion index last recorded in a round */
    /* WQEs with a result in a staging area whose producer has not acknowledged it yet
     * (queues with a free index): their sequence numbers in ring order, at most one lap */
    uint64_t *held;
    uint64_t held_head, held_tail;
    uint64_t free_pub;        /* free index last stored */
#ifdef GPUIC_TRACE
    gpuic_trace_view_t trace; /* the queue's trace, resolved once (NULL records: none) */
#endif
    gpuic_proxy_watch_t watch; /* stuck-reservation detection (gpuic_proxy_watch_queues) */
} gpuic_proxy_attached_t;

struct gpuic_proxy {
    gpuic_proxy_params_t params;
    pthread_t thread;
    int started;

    /* Held by the proxy thread while it works; pausers take it to own the context. */
    pthread_mutex_t ctx_lock;
    uint32_t pause_requests;  /* atomic */
    uint32_t stop;            /* atomic */

    /* Idle sleep: the thread waits on wake_cond while waiter.sleeping is set; whoever clears
     * the flag (under wake_lock) signals. */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;

    /* Host producers read the flag after every commit, so it has a line of its own that the
     * proxy writes only around a sleep. */
    gpuic_ring_waiter_t waiter __attribute__((aligned(64)));

    /* The thread's working state, off the waiter's line. */
    gpuic_proxy_attached_t *queues __attribute__((aligned(64)));   /* under ctx_lock */
    unsigned nqueues;

    gpuic_proxy_round_t *fifo_head, *fifo_tail, *free_rounds;
    gpuic_proxy_op_t *free_ops;
    uint64_t round_stamp;

    uint64_t stat_wqes, stat_errors, stat_rounds, stat_sleeps; /* atomic (read by stats) */

    /* Liveness for waiters (gpuic_health.h), on a line of its own; the thread writes it. */
    gpuic_health_t health;
    unsigned watch_tick;                  /* passes since the queues were last watched */
    unsigned watch_declared;              /* queues with GPUIC_ERR_QUEUE_STUCK declared at the
                                             last watch */
    uint32_t test_fault;                  /* gpuic_proxy_fault_t (gpuic_proxy_test_fault) */
    uint32_t test_fault_taken;            /* the thread has reached the fault */
};

/* ---- rounds and operations ---- */

static void gpuic_proxy_op_done(gpuic_rma_completion_t *comp, gpuic_status_t status);

static gpuic_proxy_op_t *gpuic_proxy_op_get(gpuic_proxy_t *proxy)
{
    gpuic_proxy_op_t *op = proxy->free_ops;

    if (op != NULL) {
        proxy->free_ops = op->next_free;
        return op;
    }
    op = gpuic_mem_aligned(GPUIC_WQE_BB_SIZE, sizeof(*op));
    if (op != NULL) {
        op->proxy = proxy;
        op->comp.cb = gpuic_proxy_op_done;
    }
    return op;
}

static void gpuic_proxy_op_put(gpuic_proxy_op_t *op)
{
    op->next_free = op->proxy->free_ops;
    op->proxy->free_ops = op;
}

static void gpuic_proxy_op_done(gpuic_rma_completion_t *comp, gpuic_status_t status)
{
    gpuic_proxy_op_t *op = (gpuic_proxy_op_t *)((char *)comp - offsetof(gpuic_proxy_op_t, comp));

    if (status != GPUIC_OK) {
        /* the remote side of the failure surfaces in the round's flush as well */
        gpuic_log(GPUIC_LOG_ERROR, "proxy: operation failed: %s", gpuic_status_string(status));
        op->round->flush_status = status;
    }
    op->round->local_pending--;
    gpuic_proxy_op_put(op);
}

static void gpuic_proxy_flush_done(gpuic_rma_completion_t *comp, gpuic_status_t status)
{
    gpuic_proxy_round_t *round = (gpuic_proxy_round_t *)comp;

    if (status != GPUIC_OK) {
        round->flush_status = status;
    }
    round->flush_done = 1;
}

static gpuic_proxy_round_t *gpuic_proxy_round_get(gpuic_proxy_t *proxy)
{
    gpuic_proxy_round_t *round = proxy->free_rounds;

    if (round != NULL) {
        proxy->free_rounds = round->next;
    } else {
        round = calloc(1, sizeof(*round));
        if (round == NULL) {
            return NULL;
        }
    }
    round->flush_comp.cb = gpuic_proxy_flush_done;
    round->next = NULL;
    round->flush_done = 0;
    round->ucx = 0;
    round->flush_status = GPUIC_OK;
    round->local_pending = 0;
    round->local_applied = 0;
    round->ntallies = 0;
    round->ncqes = 0;
    round->ndones = 0;
#ifdef GPUIC_TRACE
    round->ntranges = 0;
#endif
    round->stamp = ++proxy->round_stamp;
    return round;
}

/* Grows an array of elem_size elements to hold at least one more; 0 on allocation failure. */
static int gpuic_proxy_grow(void **array, unsigned *cap, unsigned n, size_t elem_size)
{
    void *bigger;
    unsigned new_cap;

    if (n < *cap) {
        return 1;
    }
    new_cap = *cap ? *cap * 2 : 16;
    bigger = realloc(*array, new_cap * elem_size);
    if (bigger == NULL) {
        return 0;
    }
    *array = bigger;
    *cap = new_cap;
    return 1;
}

/* The round's tally for (queue's window, target), created on first use. */
static gpuic_proxy_tally_t *gpuic_proxy_tally(gpuic_proxy_round_t *round,
                                              gpuic_proxy_attached_t *a, uint32_t target)
{
    gpuic_proxy_tally_t *t;

    if (a->tally_stamp[target] == round->stamp) {
        return &round->tallies[a->tally_index[target]];
    }
    if (!gpuic_proxy_grow((void **)&round->tallies, &round->tally_cap, round->ntallies,
                          sizeof(*round->tallies))) {
        return NULL;
    }
    a->tally_stamp[target] = round->stamp;
    a->tally_index[target] = round->ntallies;
    t = &round->tallies[round->ntallies++];
    t->cmpl = a->q.cmpl;
    t->target = target;
    t->count = 0;
    t->failed = 0;
    return t;
}

static void gpuic_proxy_cqe_add(gpuic_proxy_round_t *round, gpuic_proxy_attached_t *a,
                                const gpuic_wqe_desc_t *d, gpuic_status_t status)
{
    gpuic_proxy_pending_cqe_t *p;

    if (a->q.cq == NULL) {
        return;
    }
    if (!gpuic_proxy_grow((void **)&round->cqes, &round->cqe_cap, round->ncqes,
                          sizeof(*round->cqes))) {
        gpuic_cmpl_set_error(a->q.cmpl, GPUIC_ERR_NO_MEMORY);
        return;
    }
    p = &round->cqes[round->ncqes++];
    p->cq = a->q.cq;
    p->cmpl = a->q.cmpl;
    p->cqe.ring_id = a->q.ring->id;
    p->cqe.target = d->target;
    p->cqe.wqe_index = d->wqe_index;
    p->cqe.opcode = d->opcode;
    p->cqe.reserved = 0;
    p->cqe.status = status;
}

/* Owes @p a's completion index the ring's read index at the end of this round's drain (a
 * ring with nothing read this round owes nothing new, but recording it again is harmless). */
static void gpuic_proxy_done_add(gpuic_proxy_round_t *round, gpuic_proxy_attached_t *a)
{
    uint64_t end = gpuic_ring_read_index(a->q.ring);

    if (end == a->done_owed) {
        return;
    }
    if (!gpuic_proxy_grow((void **)&round->dones, &round->done_cap, round->ndones,
                          sizeof(*round->dones))) {
        /* the index lags until a later round records it; producers wait longer, no more */
        return;
    }
    a->done_owed = end;
    round->dones[round->ndones].done = a->q.done;
    round->dones[round->ndones].end = end;
    round->ndones++;
}

#ifdef GPUIC_TRACE
/* Stage stamps (gpuic_trace.h): compiled only into traced builds. */

/* A WQE was copied out of the ring: stamps its pickup and remembers it for its round's
 * remote completion. */
static void gpuic_proxy_trace_pickup(gpuic_proxy_attached_t *a, gpuic_proxy_round_t *round,
                                     gpuic_proxy_op_t *op, uint64_t seq, unsigned nbb)
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

/* The round's flush completed: its traced WQEs are complete at their targets. */
static void gpuic_proxy_trace_remote(gpuic_proxy_round_t *round)
{
    for (unsigned i = 0; i < round->ntranges; ++i) {
        gpuic_proxy_trace_range_t *r = &round->tranges[i];
        for (uint64_t seq = r->begin; seq != r->end; ++seq) {
            /* continuation slots and NOPs have no open record of their own */
            if (gpuic_trace_record(r->trace, seq)->seq == seq + 1) {
                gpuic_trace_stamp(r->trace, seq, GPUIC_TRACE_REMOTE);
            }
        }
    }
}
#endif

/* Just before a valid WQE goes to UCX: the measurement hook and the trace stamp. */
static void gpuic_proxy_issue_hook(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                   const gpuic_wqe_desc_t *d)
{
#ifdef GPUIC_TRACE
    gpuic_trace_stamp(op->trace, op->seq, GPUIC_TRACE_ISSUED);
#endif
    if (proxy->params.on_issue != NULL) {
        proxy->params.on_issue(proxy->params.on_issue_arg, d);
    }
}

/* ---- validation and execution ---- */

/* Looks up a key for an access and checks the region belongs to the WQE's target. */
static gpuic_status_t gpuic_proxy_check(const gpuic_proxy_attached_t *a, uint32_t target,
                                        uint32_t rkey, uint64_t raddr, uint64_t len,
                                        const gpuic_keytable_entry_t **e_p)
{
    gpuic_status_t status = gpuic_keytable_lookup(a->q.keys, rkey, raddr, len, e_p);

    if (status == GPUIC_OK && (*e_p)->target != target) {
        return GPUIC_ERR_BAD_KEY; /* a key of another target's region */
    }
    return status;
}

/* Copies through a direct entry's mapping (synchronous): CPU loads and stores for host
 * memory, the copy function for device memory. */
static gpuic_status_t gpuic_proxy_copy_direct(gpuic_proxy_t *proxy,
                                              const gpuic_keytable_entry_t *e, void *dst,
                                              const void *src, size_t len)
{
    if (e->direct == GPUIC_KEYTABLE_DIRECT_HOST) {
        memcpy(dst, src, len);
        return GPUIC_OK;
    }
    if (proxy->params.copy == NULL) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    return proxy->params.copy(dst, src, len);
}

/* Moves a put's or get's data through a direct entry's mapping (synchronous). */
static gpuic_status_t gpuic_proxy_copy(gpuic_proxy_t *proxy, const gpuic_keytable_entry_t *e,
                                       const gpuic_wqe_desc_t *d, uint64_t raddr, uint32_t len)
{
    void *remote = (void *)(uintptr_t)raddr;

    if (d->opcode == GPUIC_WQE_OP_RDMA_READ) {
        return gpuic_proxy_copy_direct(proxy, e, (void *)(uintptr_t)d->laddr, remote, len);
    }
    return gpuic_proxy_copy_direct(proxy, e, remote,
                                   d->inline_data != NULL ? (const void *)d->inline_data
                                                          : (const void *)(uintptr_t)d->laddr,
                                   len);
}

/* The data of a put-with-signal, complete at the target on return (the signal may follow):
 * a synchronous copy through a direct entry's mapping, or a UCX put and an endpoint flush. */
static gpuic_status_t gpuic_proxy_put_signal_data(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                                  const gpuic_wqe_desc_t *d,
                                                  const gpuic_keytable_entry_t *e)
{
    gpuic_status_t status;

    if (d->len == 0) {
        return GPUIC_OK;
    }
    if (e->direct) {
        return gpuic_proxy_copy_direct(proxy, e, (void *)(uintptr_t)d->raddr,
                                       (const void *)(uintptr_t)d->laddr, d->len);
    }
    op->round->ucx = 1;
    status = gpuic_rma_put(e->ep, (const void *)(uintptr_t)d->laddr, d->len, d->raddr, e->rkey);
    if (status == GPUIC_OK) {
        status = gpuic_ep_flush(e->ep);
    }
    return status;
}

/* The signal update of a put-with-signal, once its data is in place: an atomic (CPU or UCX,
 * as the signal word's entry says, so that it is atomic against every other update of the
 * word), or, on a mapping without an atomic both sides share, a plain store for a set (an add
 * would not be atomic against the target's own updates). */
static gpuic_status_t gpuic_proxy_put_signal_word(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                                  const gpuic_wqe_desc_t *d,
                                                  const gpuic_keytable_entry_t *se)
{
    uint64_t value = d->ext_value, old;

    if (se->cpu_atomics || (se->ep != NULL && se->rkey != NULL)) {
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(se);
        if (d->ext_op == GPUIC_SIGNAL_ADD) {
            return gpuic_proxy_atomic(se, GPUIC_ATOMIC_ADD, value, 0, 8, d->sig_raddr,
                                      se->cpu_atomics ? &old : NULL);
        }
        return gpuic_proxy_atomic(se, GPUIC_ATOMIC_SWAP, value, 0, 8, d->sig_raddr, &old);
    }
    if (d->ext_op == GPUIC_SIGNAL_ADD) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    if (se->direct == GPUIC_KEYTABLE_DIRECT_HOST) {
        /* the data stores before it for whoever reads the word with acquire */
        __atomic_store_n((uint64_t *)(uintptr_t)d->sig_raddr, value, __ATOMIC_RELEASE);
        return GPUIC_OK;
    }
    return gpuic_proxy_copy_direct(proxy, se, (void *)(uintptr_t)d->sig_raddr, &value,
                                   sizeof(value));
}

/*
 * The puts of a GPUIC_WQE_OP_PUT8_MULTI entry: every one checked against the key table before
 * any is made (a bad one fails the entry with nothing written), then copied through the key's
 * mapping.  Producers use these entries only for targets the proxy reaches through a mapping
 * (MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED); over UCX each put would need its payload kept until
 * its local completion, so such entries are refused there.
 */
static gpuic_status_t gpuic_proxy_put8_multi(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                             gpuic_proxy_op_t *op, const gpuic_wqe_desc_t *d)
{
    const gpuic_keytable_entry_t *e = NULL;
    unsigned n = d->ds - 1;
    gpuic_status_t status;

    for (unsigned i = 0; i < n; ++i) {
        status = gpuic_proxy_check(a, d->target, d->rkey, gpuic_be64toh(d->put8[i].raddr), 8, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        if (!e->direct) {
            return GPUIC_ERR_UNSUPPORTED;
        }
    }
    gpuic_proxy_issue_hook(proxy, op, d);
    for (unsigned i = 0; i < n; ++i) {
        status = gpuic_proxy_copy_direct(proxy, e,
                                         (void *)(uintptr_t)gpuic_be64toh(d->put8[i].raddr),
                                         d->put8[i].data, 8);
        if (status != GPUIC_OK) {
            return status;
        }
    }
    return GPUIC_OK;
}

/* Issues a decoded, structurally valid WQE.  Returns GPUIC_OK when the operation is locally
 * complete, GPUIC_INPROGRESS when op->comp will report it (the op is then kept), or the
 * error that rejects it (nothing was touched). */
static gpuic_status_t gpuic_proxy_execute(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                          gpuic_proxy_op_t *op, const gpuic_wqe_desc_t *d)
{
    const gpuic_keytable_entry_t *e, *se;
    gpuic_status_t status;
    uint64_t old;

    if (d->len > proxy->params.max_msg_size) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if (d->flags & GPUIC_WQE_CTRL_FENCE) {
        /* hardware semantics: earlier WQEs complete before this one starts */
        status = gpuic_context_flush(proxy->params.ctx);
        if (status != GPUIC_OK) {
            return status;
        }
    }
    switch (d->opcode) {
    case GPUIC_WQE_OP_FLUSH:
        gpuic_proxy_issue_hook(proxy, op, d); /* nothing goes to UCX but the round's flush */
        return GPUIC_OK; /* completes with its round, after every earlier WQE */
    case GPUIC_WQE_OP_RDMA_WRITE:
    case GPUIC_WQE_OP_RDMA_READ:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->len == 0) {
            return GPUIC_OK;
        }
        if (d->inline_data == NULL && d->laddr == 0) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        gpuic_proxy_issue_hook(proxy, op, d);
        if (e->direct) {
            return gpuic_proxy_copy(proxy, e, d, d->raddr, d->len);
        }
        op->round->ucx = 1;
        if (d->opcode == GPUIC_WQE_OP_RDMA_READ) {
            return gpuic_rma_get_nb(e->ep, (void *)(uintptr_t)d->laddr, d->len, d->raddr,
                                    e->rkey, &op->comp);
        }
        return gpuic_rma_put_nb(e->ep, d->inline_data != NULL ? (const void *)d->inline_data
                                                              : (const void *)(uintptr_t)d->laddr,
                                d->len, d->raddr, e->rkey, &op->comp);
    case GPUIC_WQE_OP_ATOMIC_FA:
    case GPUIC_WQE_OP_ATOMIC_CS:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, 8, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->raddr % 8 != 0 || d->laddr == 0) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        if (e->direct == GPUIC_KEYTABLE_DIRECT_COPY) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        gpuic_proxy_issue_hook(proxy, op, d);
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(e);
        /* The proxy executes atomics in host byte order (the WQE operands are big-endian,
         * as on the wire; the decoder converted them). */
        status = gpuic_proxy_atomic(e, d->opcode == GPUIC_WQE_OP_ATOMIC_FA ? GPUIC_ATOMIC_ADD
                                                                           : GPUIC_ATOMIC_CSWAP,
                                    d->swap_add, d->compare, 8, d->raddr, &old);
        if (status == GPUIC_OK) {
            memcpy((void *)(uintptr_t)d->laddr, &old, sizeof(old));
        }
        return status;
    case GPUIC_WQE_OP_ACCUMULATE:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        gpuic_proxy_issue_hook(proxy, op, d);
        if (e->direct == GPUIC_KEYTABLE_DIRECT_COPY) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(e);
        return gpuic_proxy_accumulate(e, d);
    case GPUIC_WQE_OP_PUT8_MULTI:
        return gpuic_proxy_put8_multi(proxy, a, op, d);
    case GPUIC_WQE_OP_PUT_SIGNAL:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status == GPUIC_OK) {
            status = gpuic_proxy_check(a, d->target, d->sig_rkey, d->sig_raddr, 8, &se);
        }
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->sig_raddr % 8 != 0 || (d->len != 0 && d->laddr == 0)) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        gpuic_proxy_issue_hook(proxy, op, d);
        if (d->ext_op == GPUIC_SIGNAL_ADD && !se->cpu_atomics &&
            (se->ep == NULL || se->rkey == NULL)) {
            return GPUIC_ERR_UNSUPPORTED; /* refused before the data moves */
        }
        /* the data must be complete at the target before the signal can be seen */
        status = gpuic_proxy_put_signal_data(proxy, op, d, e);
        if (status != GPUIC_OK) {
            return status;
        }
        return gpuic_proxy_put_signal_word(proxy, op, d, se);
    }
    return GPUIC_ERR_BAD_OPCODE;
}

/* Consumes one WQE copied into op: decode, execute, account in the round.  The op is
 * returned to the free list unless UCX still holds it.  Sets *result when the WQE is one
 * whose producer reads a result from its staging area (a get, an atomic) once it completes,
 * whether or not it executed. */
static void gpuic_proxy_process(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                gpuic_proxy_round_t *round, gpuic_proxy_op_t *op, unsigned nbb,
                                int *result)
{
    gpuic_wqe_desc_t d;
    gpuic_proxy_tally_t *tally;
    gpuic_status_t status;

    status = gpuic_wqe_decode(&op->wqe, nbb, &d);
    *result = status == GPUIC_OK &&
              (d.opcode == GPUIC_WQE_OP_RDMA_READ || d.opcode == GPUIC_WQE_OP_ATOMIC_FA ||
               d.opcode == GPUIC_WQE_OP_ATOMIC_CS);
    if (status == GPUIC_OK && d.opcode == GPUIC_WQE_OP_NOP) {
        gpuic_proxy_op_put(op); /* abandoned slots: nothing posted, nothing counted */
        return;
    }
    if (d.target >= a->q.cmpl->ntargets) {
        /* no counter to complete; the error word is all the window can learn */
        gpuic_log(GPUIC_LOG_DEBUG, "proxy: ring %u WQE %u names target %u of %u",
                  a->q.ring->id, d.wqe_index, d.target, a->q.cmpl->ntargets);
        gpuic_cmpl_set_error(a->q.cmpl, GPUIC_ERR_INVALID_PARAM);
        __atomic_fetch_add(&proxy->stat_errors, 1, __ATOMIC_RELAXED);
        gpuic_proxy_op_put(op);
        return;
    }
    tally = gpuic_proxy_tally(round, a, d.target);
    if (tally == NULL) {
        status = GPUIC_ERR_NO_MEMORY; /* still completes: as an error, right now */
        gpuic_cmpl_complete_local(a->q.cmpl, d.target, 1);
        gpuic_cmpl_complete(a->q.cmpl, d.target, 1, 1);
    } else {
        tally->count++;
        if (status == GPUIC_OK) {
            op->round = round;
            status = gpuic_proxy_execute(proxy, a, op, &d);
        }
    }
    if (status == GPUIC_INPROGRESS) {
        round->local_pending++;
        status = GPUIC_OK;
    } else {
        gpuic_proxy_op_put(op);
    }
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "proxy: ring %u WQE %u (opcode 0x%x, target %u) rejected: %s",
                  a->q.ring->id, d.wqe_index, d.opcode, d.target, gpuic_status_string(status));
        if (tally != NULL) {
            tally->failed++;
        }
        gpuic_cmpl_set_error(a->q.cmpl, status);
        __atomic_fetch_add(&proxy->stat_errors, 1, __ATOMIC_RELAXED);
        gpuic_proxy_cqe_add(round, a, &d, status);
    } else if (d.flags & GPUIC_WQE_CTRL_CQ_UPDATE) {
        gpuic_proxy_cqe_add(round, a, &d, GPUIC_OK);
    }
}

/* One round: drain every ring up to the doorbell sampled now, then flush.  Returns the
 * number of WQEs consumed. */
static unsigned gpuic_proxy_round(gpuic_proxy_t *proxy)
{
    gpuic_proxy_round_t *round;
    unsigned consumed = 0;
    uint64_t *limits;
    gpuic_status_t status;

    if (proxy->nqueues == 0) {
        return 0;
    }
    /* one doorbell read per ring and round: the line moves between producer and proxy each
     * time it is read after a commit */
    limits = __builtin_alloca(proxy->nqueues * sizeof(*limits));
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        limits[i] = gpuic_ring_published(proxy->queues[i].q.ring);
        if (limits[i] != gpuic_ring_read_index(proxy->queues[i].q.ring)) {
            consumed = 1;
        }
    }
    if (!consumed) {
        return 0;
    }
    consumed = 0;
    round = gpuic_proxy_round_get(proxy);
    if (round == NULL) {
        return 0; /* retried next time round; nothing was consumed */
    }
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        gpuic_proxy_attached_t *a = &proxy->queues[i];
        gpuic_ring_t *ring = a->q.ring;
        unsigned taken = 0;

        while ((int64_t)(limits[i] - gpuic_ring_read_index(ring)) > 0) {
            gpuic_proxy_op_t *op = gpuic_proxy_op_get(proxy);
            uint64_t seq;
            unsigned nbb;
            int result;

            if (op == NULL) {
                break;
            }
            nbb = gpuic_ring_peek_below(ring, limits[i], &op->wqe, &seq);
            if (nbb == 0) {
                gpuic_proxy_op_put(op);
                break;
            }
#ifdef GPUIC_TRACE
            gpuic_proxy_trace_pickup(a, round, op, seq, nbb);
#endif
            /* the slots can go back to producers (op holds a private copy), a batch at a
             * time: every store of the consumer index costs producers a cache miss */
            gpuic_ring_take(ring, nbb);
            taken += nbb;
            if (taken >= a->release_batch) {
                gpuic_ring_release(ring);
                taken = 0;
            }
            gpuic_proxy_process(proxy, a, round, op, nbb, &result);
            if (result && a->held != NULL) {
                a->held[a->held_tail++ & ring->mask] = seq;
            }
            consumed++;
        }
        if (taken != 0) {
            gpuic_ring_release(ring);
        }
        if (a->q.done != NULL) {
            gpuic_proxy_done_add(round, a);
        }
    }
    /* the proxy is the only writer: no locked instruction needed */
    __atomic_store_n(&proxy->stat_wqes,
                     __atomic_load_n(&proxy->stat_wqes, __ATOMIC_RELAXED) + consumed,
                     __ATOMIC_RELAXED);
    if (round->ntallies == 0 && round->ncqes == 0 && round->ndones == 0) {
        round->next = proxy->free_rounds; /* only NOPs */
        proxy->free_rounds = round;
        return consumed;
    }
    __atomic_store_n(&proxy->stat_rounds,
                     __atomic_load_n(&proxy->stat_rounds, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    /* A round executed wholly through mappings (copies and CPU atomics, synchronous) is
     * complete already: no flush, so gpuic_proxy_retire() can publish it in this pass. */
    status = round->ucx ? gpuic_context_flush_nb(proxy->params.ctx, &round->flush_comp)
                        : GPUIC_OK;
    if (status != GPUIC_INPROGRESS) {
        gpuic_proxy_flush_done(&round->flush_comp, status);
    }
    if (proxy->fifo_tail != NULL) {
        proxy->fifo_tail->next = round;
    } else {
        proxy->fifo_head = round;
    }
    proxy->fifo_tail = round;
    return consumed;
}

/* Applies completed rounds, oldest first, stopping at the first incomplete one. */
static void gpuic_proxy_retire(gpuic_proxy_t *proxy)
{
    gpuic_proxy_round_t *round;

    while ((round = proxy->fifo_head) != NULL) {
        if (!round->local_applied) {
            if (round->local_pending != 0) {
                return;
            }
            for (unsigned i = 0; i < round->ntallies; ++i) {
                gpuic_cmpl_complete_local(round->tallies[i].cmpl, round->tallies[i].target,
                                          round->tallies[i].count);
            }
            round->local_applied = 1;
        }
        if (!round->flush_done ||
            __atomic_load_n(&proxy->test_fault, __ATOMIC_RELAXED) == GPUIC_PROXY_FAULT_UNFLUSHED) {
            return;
        }
#ifdef GPUIC_TRACE
        gpuic_proxy_trace_remote(round); /* before the counters tell producers */
#endif
        for (unsigned i = 0; i < round->ncqes; ++i) {
            gpuic_proxy_pending_cqe_t *p = &round->cqes[i];
            if (round->flush_status != GPUIC_OK && p->cqe.status == GPUIC_OK) {
                p->cqe.status = round->flush_status;
            }
            if (gpuic_cq_push(p->cq, &p->cqe) != GPUIC_OK) {
                gpuic_cmpl_set_error(p->cmpl, GPUIC_ERR_NO_RESOURCE);
            }
        }
        for (unsigned i = 0; i < round->ntallies; ++i) {
            gpuic_proxy_tally_t *t = &round->tallies[i];
            if (round->flush_status != GPUIC_OK) {
                /* the transport lost the round: every WQE in it may have failed */
                gpuic_cmpl_set_error(t->cmpl, round->flush_status);
                t->failed = t->count;
            }
            gpuic_cmpl_complete(t->cmpl, t->target, t->count, t->failed);
        }
        /* the data, results and counters first: a producer that sees the index reads them */
        gpuic_fence_completion_to_producer();
        for (unsigned i = 0; i < round->ndones; ++i) {
            __atomic_store_n(round->dones[i].done, round->dones[i].end, __ATOMIC_RELEASE);
        }
        proxy->fifo_head = round->next;
        if (proxy->fifo_head == NULL) {
            proxy->fifo_tail = NULL;
        }
        round->next = proxy->free_rounds;
        proxy->free_rounds = round;
    }
}

/*
 * Moves the free index of every queue that has one (gpuic_proxy_queue_t.free): past each
 * held WQE whose producer acknowledged its result, up to the completion index.  Returns
 * whether some result is still unacknowledged (the thread then keeps polling, as for GPU
 * producers: the acknowledgement comes within microseconds of the completion).
 */
static int gpuic_proxy_free_update(gpuic_proxy_t *proxy)
{
    int holding = 0;

    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        gpuic_proxy_attached_t *a = &proxy->queues[i];
        uint64_t done, next;

        if (a->held == NULL) {
            continue;
        }
        while (a->held_head != a->held_tail) {
            uint64_t seq = a->held[a->held_head & a->q.ring->mask];

            /* acquire: the producer's reads of the result happen before the area is reused */
            if (__atomic_load_n(&a->q.acks[seq & a->q.ring->mask], __ATOMIC_ACQUIRE) !=
                gpuic_ring_ack_word(seq)) {
                break;
            }
            a->held_head++;
        }
        done = __atomic_load_n(a->q.done, __ATOMIC_RELAXED); /* this thread's own store */
        next = done;
        if (a->held_head != a->held_tail) {
            uint64_t first = a->held[a->held_head & a->q.ring->mask];

            holding = 1;
            if ((int64_t)(first - done) < 0) {
                next = first;
            }
        }
        if (next != a->free_pub) {
            a->free_pub = next;
            __atomic_store_n(a->q.free, next, __ATOMIC_RELEASE);
        }
    }
    return holding;
}

/* ---- the thread ---- */

/* Whether this process can order other threads' memory accesses from one thread
 * (registered once; Linux 4.14 and later). */
static int gpuic_proxy_membarrier_register(void)
{
#if defined(__linux__) && defined(__NR_membarrier)
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

    return cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
           syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return 0;
#endif
}

/* The sleeper's half of the store-load ordering with host producers (gpuic_ring_waiter_t):
 * a full fence on every thread of the process that is running, so producers need none. */
static void gpuic_proxy_fence_producers(gpuic_proxy_t *proxy)
{
    if (!__atomic_load_n(&proxy->waiter.producer_fence, __ATOMIC_RELAXED)) {
#if defined(__linux__) && defined(__NR_membarrier)
        if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
            return;
        }
#endif
        /* registered, so it cannot fail; if it does, producers fence from now on (a commit
         * already past its look at the flag may wait for this pause) */
        gpuic_log(GPUIC_LOG_ERROR, "proxy: membarrier failed: %s", strerror(errno));
        __atomic_store_n(&proxy->waiter.producer_fence, 1, __ATOMIC_RELAXED);
    }
    gpuic_fence_doorbell_to_waiter();
}

/* Announces a sleep: sets the waiter flag, then takes one more look at everything that
 * should keep the thread awake.  Returns 1 when it may sleep; 0 (flag cleared) when work or
 * a request arrived meanwhile.  The fence pairs with the one a host producer makes between
 * its doorbell store and its look at the flag (gpuic_ring_notify()).  Under ctx_lock. */
static int gpuic_proxy_sleep_prepare(gpuic_proxy_t *proxy, int for_pause)
{
    int awake = 0;

    __atomic_store_n(&proxy->waiter.sleeping, 1, __ATOMIC_RELAXED);
    gpuic_proxy_fence_producers(proxy);
    if (for_pause) {
        awake = !__atomic_load_n(&proxy->pause_requests, __ATOMIC_RELAXED);
    } else {
        awake = __atomic_load_n(&proxy->pause_requests, __ATOMIC_RELAXED) != 0;
        for (unsigned i = 0; i < proxy->nqueues && !awake; ++i) {
            gpuic_ring_t *ring = proxy->queues[i].q.ring;
            awake = gpuic_ring_doorbell(ring) != gpuic_ring_read_index(ring);
        }
    }
    if (awake || __atomic_load_n(&proxy->stop, __ATOMIC_RELAXED)) {
        __atomic_store_n(&proxy->waiter.sleeping, 0, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

/* Sleeps up to ns after gpuic_proxy_sleep_prepare(), until a waker clears the flag. */
static void gpuic_proxy_sleep(gpuic_proxy_t *proxy, uint64_t ns)
{
    struct timespec deadline;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)(ns / 1000000000u);
    deadline.tv_nsec += (long)(ns % 1000000000u);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&proxy->wake_lock);
    while (__atomic_load_n(&proxy->waiter.sleeping, __ATOMIC_RELAXED)) {
        if (pthread_cond_timedwait(&proxy->wake_cond, &proxy->wake_lock, &deadline) ==
            ETIMEDOUT) {
            break;
        }
    }
    __atomic_store_n(&proxy->waiter.sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&proxy->wake_lock);
}

/* The waiter's wake-up, called by host producers (gpuic_ring_notify()) and by
 * gpuic_proxy_wake().  Clearing the flag under wake_lock is what the sleeper's loop tests,
 * so a wake-up between its last look and its wait is not lost. */
static void gpuic_proxy_waiter_wake(gpuic_ring_waiter_t *waiter)
{
    gpuic_proxy_t *proxy = (gpuic_proxy_t *)((char *)waiter - offsetof(gpuic_proxy_t, waiter));

    pthread_mutex_lock(&proxy->wake_lock);
    if (__atomic_load_n(&waiter->sleeping, __ATOMIC_RELAXED)) {
        __atomic_store_n(&waiter->sleeping, 0, __ATOMIC_RELAXED);
        pthread_cond_signal(&proxy->wake_cond);
    }
    pthread_mutex_unlock(&proxy->wake_lock);
}

/*
 * Progress until every round is retired (used when stopping and removing a ring).  Bounded by
 * the context's timeout: a round whose flush never completes (a peer that died) would
 * otherwise hold window release and finalize forever.  GPUIC_ERR_TIMED_OUT leaves the
 * unretired rounds in the FIFO; they still point into their queues, which must then outlive
 * the proxy.
 */
static gpuic_status_t gpuic_proxy_drain_locked(gpuic_proxy_t *proxy)
{
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    unsigned progressed;

    for (;;) {
        progressed = gpuic_proxy_round(proxy);
        progressed += gpuic_context_progress(proxy->params.ctx);
        gpuic_proxy_retire(proxy);
        if (progressed == 0 && proxy->fifo_head == NULL) {
            return GPUIC_OK;
        }
        if (gpuic_context_wait_round(proxy->params.ctx, &wait, progressed) != GPUIC_OK) {
            return GPUIC_ERR_TIMED_OUT;
        }
    }
}

/* ---- liveness (gpuic_health.h) ---- */

/* The stall time waiters apply: the context's timeout (0: none), but never less than a few
 * of the longest idle pauses, during which a healthy thread does not count passes. */
static uint64_t gpuic_proxy_stall_ns(const gpuic_proxy_t *proxy)
{
    uint64_t ns = (uint64_t)(gpuic_context_timeout(proxy->params.ctx) * 1e9);
    uint64_t floor_ns = 4ull * proxy->params.max_sleep_us * 1000;

    return ns == 0 ? 0 : ns < floor_ns ? floor_ns : ns;
}

/*
 * One pass of the loop: counts the heartbeat waiters check.  False when the thread must exit
 * at once, without draining (a test fault standing for a thread that died); a hang fault
 * blocks here, heartbeat stopped, until it is cleared.
 */
static int gpuic_proxy_beat(gpuic_proxy_t *proxy)
{
    __atomic_store_n(&proxy->health.heartbeat,
                     __atomic_load_n(&proxy->health.heartbeat, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    if (__atomic_load_n(&proxy->test_fault, __ATOMIC_ACQUIRE) == GPUIC_PROXY_FAULT_NONE) {
        return 1;
    }
    __atomic_store_n(&proxy->test_fault_taken, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&proxy->wake_lock);
    for (;;) {
        /* announced as a sleep, so that destroy's wake-up ends it: the flag is stored before
         * stop is read, destroy stores stop before reading the flag (one of the two sees the
         * other) */
        __atomic_store_n(&proxy->waiter.sleeping, 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&proxy->test_fault, __ATOMIC_ACQUIRE) != GPUIC_PROXY_FAULT_HANG ||
            __atomic_load_n(&proxy->stop, __ATOMIC_ACQUIRE)) {
            break;
        }
        pthread_cond_wait(&proxy->wake_cond, &proxy->wake_lock);
    }
    __atomic_store_n(&proxy->waiter.sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&proxy->wake_lock);
    return __atomic_load_n(&proxy->test_fault, __ATOMIC_ACQUIRE) != GPUIC_PROXY_FAULT_EXIT;
}

void gpuic_proxy_test_fault(gpuic_proxy_t *proxy, gpuic_proxy_fault_t fault)
{
    struct timespec pause = {0, 100000};

    __atomic_store_n(&proxy->test_fault_taken, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&proxy->wake_lock);
    __atomic_store_n(&proxy->test_fault, (uint32_t)fault, __ATOMIC_RELEASE);
    __atomic_store_n(&proxy->waiter.sleeping, 0, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&proxy->wake_cond);
    pthread_mutex_unlock(&proxy->wake_lock);
    /* the thread finishes the pass it is in first: wait for it to reach the fault, so that
     * nothing posted from now on is executed (it sleeps at most its longest pause) */
    while (fault != GPUIC_PROXY_FAULT_NONE && proxy->started &&
           !__atomic_load_n(&proxy->test_fault_taken, __ATOMIC_ACQUIRE)) {
        nanosleep(&pause, NULL);
    }
}

/*
 * Whether every queue attached is fed by GPU threads (entries published by their own tagged
 * words): they cannot be on this thread's core, so yielding it gains them nothing.  Called
 * with ctx_lock held (queues change under it).
 */
static int gpuic_proxy_device_fed(const gpuic_proxy_t *proxy)
{
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        if (!proxy->queues[i].q.ring->publish_by_marker) {
            return 0;
        }
    }
    return proxy->nqueues != 0;
}

/*
 * Finds rings where a producer reserved slots and has not published them for the stall time
 * (the context's timeout): the doorbell stands still below the reservation counter.  Every
 * later commit on such a ring waits for that one, so the queue's outstanding work can never
 * complete: its counters get GPUIC_ERR_QUEUE_STUCK, confirmed on every pass while it lasts
 * (waiters trust only a confirmation newer than their wait), and one line is logged.  A
 * doorbell that moves again clears it.  Caller holds ctx_lock.
 */
static void gpuic_proxy_watch_queues(gpuic_proxy_t *proxy)
{
    uint64_t stall_ns = proxy->health.stall_ns, now = 0;
    uint64_t beat = __atomic_load_n(&proxy->health.heartbeat, __ATOMIC_RELAXED);
    unsigned declared = 0;
    struct timespec ts;

    if (stall_ns == 0) {
        return;
    }
    if (proxy->watch_declared != 0) {
        /* this pass's count is visible before the doorbells are read (see the waiter's side
         * in gpuic_cmpl.c): a confirmation stamped with it saw every commit made before a
         * waiter read an older count */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        gpuic_proxy_attached_t *a = &proxy->queues[i];
        gpuic_proxy_watch_t *w = &a->watch;
        uint64_t doorbell = gpuic_ring_doorbell(a->q.ring);
        uint64_t reserved = __atomic_load_n(&a->q.ring->reserve, __ATOMIC_RELAXED);

        if (a->q.ring->publish_by_marker) {
            /* its producers reserve in GPU memory, out of the host's sight; they bound their
             * own waits (the device queue's timeout) */
            continue;
        }

        if (doorbell != w->doorbell || reserved == doorbell || w->since_ns == 0) {
            if (w->declared) {
                gpuic_cmpl_set_engine_error(a->q.cmpl, GPUIC_OK, beat);
                w->declared = 0;
            }
            w->doorbell = doorbell;
            w->since_ns = now;
        } else if (w->declared) {
            gpuic_cmpl_set_engine_error(a->q.cmpl, GPUIC_ERR_QUEUE_STUCK, beat);
        } else if (now - w->since_ns >= stall_ns) {
            gpuic_log(GPUIC_LOG_ERROR, "proxy: ring %u: %llu slot(s) reserved from sequence %llu "
                      "not published for %.1f s: a producer stopped between reserve and commit; "
                      "the ring's later work cannot complete", a->q.ring->id,
                      (unsigned long long)(reserved - doorbell), (unsigned long long)doorbell,
                      (double)stall_ns / 1e9);
            gpuic_cmpl_set_engine_error(a->q.cmpl, GPUIC_ERR_QUEUE_STUCK, beat);
            w->declared = 1;
        }
        declared += w->declared;
    }
    proxy->watch_declared = declared;
}

/*
 * Idle passes a proxy fed only by GPU threads spins before it starts yielding its core (then
 * sleeping after spin_rounds, as every proxy does).  A yield costs the next entry's pickup
 * up to a microsecond when entries come a few microseconds apart, as one thread's device
 * put + flush loop sends them; host producers keep the early yield (they may share the core).
 * Figures: docs/performance-history.md, "Proxy yield".
 */
#define GPUIC_PROXY_DEVICE_YIELD_PASSES 1024u

static void *gpuic_proxy_main(void *arg)
{
    gpuic_proxy_t *proxy = arg;
    uint64_t sleep_ns = 1000;
    unsigned idle = 0, passes = 0;

    while (!__atomic_load_n(&proxy->stop, __ATOMIC_ACQUIRE)) {
        unsigned work;
        int outstanding, may_sleep = 0, device_fed = 0, holding;

        if (!gpuic_proxy_beat(proxy)) {
            __atomic_store_n(&proxy->health.exited, 1, __ATOMIC_RELEASE);
            return NULL;
        }

        if (__atomic_load_n(&proxy->pause_requests, __ATOMIC_ACQUIRE)) {
            /* let a pauser take ctx_lock (mutexes are not fair); resume wakes us */
            if (gpuic_proxy_sleep_prepare(proxy, 1)) {
                gpuic_proxy_sleep(proxy, 50000);
            }
            continue;
        }
        pthread_mutex_lock(&proxy->ctx_lock);
        work = gpuic_proxy_round(proxy);
        /* a round executed through mappings completes here, before any progress call */
        gpuic_proxy_retire(proxy);
        /* Progress polls every transport: the costly part of an idle pass, and time a WQE
         * arriving meanwhile waits to be picked up.  Only UCX work in flight needs it; other
         * passes (busy with mapped targets, spinning or waking up) progress one time in 16,
         * for the transport's own housekeeping. */
        if (proxy->fifo_head != NULL || (++passes & 15) == 0) {
            work += gpuic_context_progress(proxy->params.ctx);
            gpuic_proxy_retire(proxy);
        }
        /* after both retires: a completion index either of them published moves the free
         * index in this pass too */
        holding = gpuic_proxy_free_update(proxy);
        outstanding = proxy->fifo_head != NULL;
        /* idle passes are cheap to spend on it; busy ones only now and then */
        if (work == 0 || proxy->watch_declared != 0 || (++proxy->watch_tick & 1023) == 0) {
            gpuic_proxy_watch_queues(proxy);
        }
        if (work == 0 && !outstanding && idle >= proxy->params.spin_rounds) {
            may_sleep = gpuic_proxy_sleep_prepare(proxy, 0);
            if (!may_sleep) {
                work = 1; /* a WQE or a request arrived just now */
            }
        }
        if (work == 0 && idle < GPUIC_PROXY_DEVICE_YIELD_PASSES) {
            device_fed = holding || gpuic_proxy_device_fed(proxy);
        }
        pthread_mutex_unlock(&proxy->ctx_lock);

        if (work != 0) {
            idle = 0;
            sleep_ns = 1000;
        } else if (!may_sleep) {
            /* UCX has work in flight, or the burst may not be over: keep polling, but let
             * a producer on the same core run (GPU producers: only after a while) */
            ++idle;
            if (!device_fed) {
                gpuic_context_wait_idle(proxy->params.ctx, idle);
            }
        } else {
            idle++;
            __atomic_store_n(&proxy->stat_sleeps,
                             __atomic_load_n(&proxy->stat_sleeps, __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELAXED);
            gpuic_proxy_sleep(proxy, sleep_ns);
            /* doubling, but never past the longest pause: device producers wait that long */
            sleep_ns *= 2;
            if (sleep_ns > (uint64_t)proxy->params.max_sleep_us * 1000) {
                sleep_ns = (uint64_t)proxy->params.max_sleep_us * 1000;
            }
        }
    }
    pthread_mutex_lock(&proxy->ctx_lock);
    if (gpuic_proxy_drain_locked(proxy) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "proxy: operations still incomplete after the %.1f s "
                  "timeout at shutdown (a peer unreachable?); abandoning them",
                  gpuic_context_timeout(proxy->params.ctx));
    }
    pthread_mutex_unlock(&proxy->ctx_lock);
    __atomic_store_n(&proxy->health.exited, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* ---- public ---- */

gpuic_status_t gpuic_proxy_create(const gpuic_proxy_params_t *params, gpuic_proxy_t **proxy_p)
{
    pthread_condattr_t cattr;
    gpuic_proxy_t *proxy;

    if (params == NULL || params->ctx == NULL) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    proxy = gpuic_mem_aligned(64, sizeof(*proxy));
    if (proxy == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(proxy, 0, sizeof(*proxy));
    proxy->params = *params;
    proxy->waiter.wake = gpuic_proxy_waiter_wake;
    proxy->waiter.producer_fence = !gpuic_proxy_membarrier_register();
    if (proxy->params.spin_rounds == 0) {
        proxy->params.spin_rounds = GPUIC_PROXY_DEFAULT_SPIN_ROUNDS;
    }
    if (proxy->params.max_sleep_us == 0) {
        proxy->params.max_sleep_us = GPUIC_PROXY_DEFAULT_MAX_SLEEP_US;
    }
    if (proxy->params.max_msg_size == 0) {
        proxy->params.max_msg_size = GPUIC_PROXY_DEFAULT_MAX_MSG;
    }
    proxy->health.stall_ns = gpuic_proxy_stall_ns(proxy);
    pthread_mutex_init(&proxy->ctx_lock, NULL);
    pthread_mutex_init(&proxy->wake_lock, NULL);
    /* sleeps are timed on the monotonic clock: a wall-clock step must not stretch one */
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&proxy->wake_cond, &cattr);
    pthread_condattr_destroy(&cattr);
    *proxy_p = proxy;
    return GPUIC_OK;
}

static void gpuic_proxy_free_lists(gpuic_proxy_t *proxy)
{
    while (proxy->free_ops != NULL) {
        gpuic_proxy_op_t *op = proxy->free_ops;
        proxy->free_ops = op->next_free;
        free(op);
    }
    while (proxy->free_rounds != NULL) {
        gpuic_proxy_round_t *round = proxy->free_rounds;
        proxy->free_rounds = round->next;
        free(round->tallies);
        free(round->cqes);
        free(round->dones);
#ifdef GPUIC_TRACE
        free(round->tranges);
#endif
        free(round);
    }
}

/* Frees the per-queue arrays of an attached queue (tallies, held results). */
static void gpuic_proxy_attached_free(gpuic_proxy_attached_t *a)
{
    free(a->tally_stamp);
    free(a->tally_index);
    free(a->held);
}

void gpuic_proxy_destroy(gpuic_proxy_t *proxy)
{
    if (proxy == NULL) {
        return;
    }
    if (proxy->started) {
        __atomic_store_n(&proxy->stop, 1, __ATOMIC_SEQ_CST);
        gpuic_proxy_wake(proxy);
        pthread_join(proxy->thread, NULL);
    }
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        /* the ring may outlive the proxy: its commits must not call into freed memory */
        gpuic_ring_set_waiter(proxy->queues[i].q.ring, NULL);
        gpuic_cmpl_watch(proxy->queues[i].q.cmpl, NULL);
        gpuic_proxy_attached_free(&proxy->queues[i]);
    }
    free(proxy->queues);
    gpuic_proxy_free_lists(proxy);
    pthread_cond_destroy(&proxy->wake_cond);
    pthread_mutex_destroy(&proxy->wake_lock);
    pthread_mutex_destroy(&proxy->ctx_lock);
    free(proxy);
}

gpuic_status_t gpuic_proxy_add(gpuic_proxy_t *proxy, const gpuic_proxy_queue_t *queue)
{
    gpuic_proxy_attached_t *queues, *a;
    gpuic_status_t status = GPUIC_OK;
    int rc;

    if (queue->ring == NULL || queue->keys == NULL || queue->cmpl == NULL ||
        (queue->free != NULL && (queue->done == NULL || queue->acks == NULL))) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    gpuic_proxy_pause(proxy);
    queues = realloc(proxy->queues, (proxy->nqueues + 1) * sizeof(*queues));
    if (queues == NULL) {
        status = GPUIC_ERR_NO_MEMORY;
        goto out_resume;
    }
    proxy->queues = queues;
    a = &queues[proxy->nqueues];
    a->q = *queue;
    a->done_owed = queue->done != NULL ? __atomic_load_n(queue->done, __ATOMIC_RELAXED) : 0;
    a->held = NULL;
    a->held_head = a->held_tail = 0;
    if (queue->free != NULL) {
        a->free_pub = __atomic_load_n(queue->free, __ATOMIC_RELAXED);
        a->held = malloc(queue->ring->size * sizeof(*a->held));
    }
#ifdef GPUIC_TRACE
    a->trace = gpuic_trace_view(queue->trace, 0);
#endif
    /* a quarter of the ring keeps producers going while the proxy reads; 64 slots already
     * make the consumer index's line transfer cheap per WQE */
    a->release_batch = queue->ring->size / 4 < 64 ? queue->ring->size / 4 : 64;
    if (a->release_batch == 0) {
        a->release_batch = 1;
    }
    a->tally_stamp = calloc(queue->cmpl->ntargets, sizeof(*a->tally_stamp));
    a->tally_index = calloc(queue->cmpl->ntargets, sizeof(*a->tally_index));
    if (a->tally_stamp == NULL || a->tally_index == NULL ||
        (queue->free != NULL && a->held == NULL)) {
        gpuic_proxy_attached_free(a);
        status = GPUIC_ERR_NO_MEMORY;
        goto out_resume;
    }
    memset(&a->watch, 0, sizeof(a->watch));
    proxy->nqueues++;
    gpuic_ring_set_waiter(queue->ring, &proxy->waiter);
    /* the timeout may have been set since the proxy was created */
    proxy->health.stall_ns = gpuic_proxy_stall_ns(proxy);
    gpuic_cmpl_watch(queue->cmpl, &proxy->health);
    if (!proxy->started) {
        rc = pthread_create(&proxy->thread, NULL, gpuic_proxy_main, proxy);
        if (rc != 0) {
            gpuic_log(GPUIC_LOG_ERROR, "proxy: cannot start its thread: %s", strerror(rc));
            proxy->nqueues--;
            gpuic_ring_set_waiter(queue->ring, NULL);
            gpuic_proxy_attached_free(a);
            status = GPUIC_ERR_TRANSPORT;
            goto out_resume;
        }
        proxy->started = 1;
    }
out_resume:
    gpuic_proxy_resume(proxy);
    return status;
}

gpuic_status_t gpuic_proxy_remove(gpuic_proxy_t *proxy, gpuic_ring_t *ring)
{
    gpuic_status_t status = GPUIC_ERR_INVALID_PARAM;

    gpuic_proxy_pause(proxy);
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        if (proxy->queues[i].q.ring != ring) {
            continue;
        }
        /* complete what was consumed: its rounds point into this queue's window */
        if (gpuic_proxy_drain_locked(proxy) != GPUIC_OK) {
            /* still attached: the caller keeps the queue's objects alive (the error is the
             * caller's to report, with the window it knows) */
            status = GPUIC_ERR_TIMED_OUT;
            break;
        }
        gpuic_ring_set_waiter(ring, NULL);
        gpuic_proxy_attached_free(&proxy->queues[i]);
        proxy->queues[i] = proxy->queues[--proxy->nqueues];
        status = GPUIC_OK;
        break;
    }
    gpuic_proxy_resume(proxy);
    return status;
}

void gpuic_proxy_pause(gpuic_proxy_t *proxy)
{
    __atomic_fetch_add(&proxy->pause_requests, 1, __ATOMIC_SEQ_CST);
    gpuic_proxy_wake(proxy);
    pthread_mutex_lock(&proxy->ctx_lock);
}

void gpuic_proxy_resume(gpuic_proxy_t *proxy)
{
    pthread_mutex_unlock(&proxy->ctx_lock);
    __atomic_fetch_sub(&proxy->pause_requests, 1, __ATOMIC_SEQ_CST);
    gpuic_proxy_wake(proxy);
}

void gpuic_proxy_wake(gpuic_proxy_t *proxy)
{
    /* pairs with the fence in gpuic_proxy_sleep_prepare(), like a commit's */
    gpuic_fence_doorbell_to_waiter();
    if (__atomic_load_n(&proxy->waiter.sleeping, __ATOMIC_RELAXED)) {
        gpuic_proxy_waiter_wake(&proxy->waiter);
    }
}

void gpuic_proxy_stats(gpuic_proxy_t *proxy, gpuic_proxy_stats_t *stats)
{
    clockid_t cid;
    struct timespec ts;

    stats->wqes = __atomic_load_n(&proxy->stat_wqes, __ATOMIC_RELAXED);
    stats->errors = __atomic_load_n(&proxy->stat_errors, __ATOMIC_RELAXED);
    stats->rounds = __atomic_load_n(&proxy->stat_rounds, __ATOMIC_RELAXED);
    stats->sleeps = __atomic_load_n(&proxy->stat_sleeps, __ATOMIC_RELAXED);
    stats->cpu_ns = 0;
    if (proxy->started && pthread_getcpuclockid(proxy->thread, &cid) == 0 &&
        clock_gettime(cid, &ts) == 0) {
        stats->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
}
