/*
 * The proxy's rounds: a round takes what each attached ring has published (one look at each
 * ring's next block bounds its drain), copies every WQE out, hands it to validation and
 * execution (gpuic_proxy_issue.c) and accounts it in the round: per (window, target) tallies,
 * the ring's completion index owed.  Then it starts one flush of the worker; rounds complete in
 * order (gpuic_proxy_complete.c).
 */
#include "gpuic_mem.h"

#include <stdlib.h>

#include "gpuic_log.h"
#include "gpuic_proxy_internal.h"

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

void gpuic_proxy_op_put(gpuic_proxy_op_t *op)
{
    op->next_free = op->proxy->free_ops;
    op->proxy->free_ops = op;
}

void gpuic_proxy_op_done(gpuic_rma_completion_t *comp, gpuic_status_t status)
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
    round->ndones = 0;
    GPUIC_TRACE_POINT(round_open, round);
    round->stamp = ++proxy->round_stamp;
    return round;
}

/* Adds the time since @p t0 to the busy time (the proxy is its only writer). */
static void gpuic_proxy_busy_add(gpuic_proxy_t *proxy, uint64_t t0)
{
    __atomic_store_n(&proxy->stat_busy_ns,
                     __atomic_load_n(&proxy->stat_busy_ns, __ATOMIC_RELAXED) +
                         (gpuic_context_now_ns() - t0),
                     __ATOMIC_RELAXED);
}

int gpuic_proxy_grow(void **array, unsigned *cap, unsigned n, size_t elem_size)
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
    t->done = a->q.done;
    t->marks = a->q.failed;
    t->target = target;
    t->count = 0;
    t->failed = 0;
    return t;
}

/* Consumes one WQE copied into op: decode, execute, account in the round.  The op is
 * returned to the free list unless UCX still holds it.  Sets *result when the WQE is one
 * whose producer reads a result from its staging area (a get, an atomic) once it completes,
 * whether or not it executed; a get into device memory (GPUIC_WQE_LKEY_DEVICE) leaves none
 * there. */
static void gpuic_proxy_process(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                gpuic_proxy_round_t *round, gpuic_proxy_op_t *op, unsigned nbb,
                                int *result)
{
    gpuic_wqe_desc_t d;
    gpuic_proxy_tally_t *tally;
    gpuic_status_t status;

    status = gpuic_wqe_decode(&op->wqe, nbb, &d);
    *result = status == GPUIC_OK &&
              ((d.opcode == GPUIC_WQE_OP_RDMA_READ && d.lkey != GPUIC_WQE_LKEY_DEVICE) ||
               d.opcode == GPUIC_WQE_OP_ATOMIC_FA || d.opcode == GPUIC_WQE_OP_ATOMIC_CS);
    if (status == GPUIC_OK && d.opcode == GPUIC_WQE_OP_NOP) {
        gpuic_proxy_op_put(op); /* nothing to do, nothing counted */
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
    }
}

unsigned gpuic_proxy_round(gpuic_proxy_t *proxy)
{
    gpuic_proxy_round_t *round;
    unsigned consumed = 0;
    uint64_t *limits, t0;
    gpuic_status_t status;

    if (proxy->nqueues == 0) {
        return 0;
    }
    /* one look at each ring's next block per round: the bound holds for the whole drain */
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
    /* the clock is read only in rounds with work: an idle pass stays as short as it was */
    t0 = gpuic_context_now_ns();
    consumed = 0;
    round = gpuic_proxy_round_get(proxy);
    if (round == NULL) {
        return 0; /* retried next time round; nothing was consumed */
    }
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        gpuic_proxy_attached_t *a = &proxy->queues[i];
        gpuic_ring_t *ring = a->q.ring;

        while ((int64_t)(limits[i] - gpuic_ring_read_index(ring)) > 0) {
            gpuic_proxy_op_t *op = gpuic_proxy_op_get(proxy);
            uint64_t seq;
            unsigned nbb;
            int result;

            if (op == NULL) {
                break;
            }
            nbb = gpuic_ring_peek(ring, limits[i], &op->wqe, &seq);
            if (nbb == 0) {
                gpuic_proxy_op_put(op);
                break;
            }
            GPUIC_TRACE_POINT(pickup, a, round, op, seq, nbb);
            /* op holds a private copy: producers get the slots back with the free index */
            gpuic_ring_take(ring, nbb);
            gpuic_proxy_process(proxy, a, round, op, nbb, &result);
            if (result && a->held != NULL) {
                a->held[a->held_tail++ & ring->mask] = seq;
            }
            consumed++;
        }
        gpuic_proxy_done_add(round, a);
    }
    gpuic_proxy_puts_issue(proxy); /* before the round's flush */
    /* the proxy is the only writer: no locked instruction needed */
    __atomic_store_n(&proxy->stat_wqes,
                     __atomic_load_n(&proxy->stat_wqes, __ATOMIC_RELAXED) + consumed,
                     __ATOMIC_RELAXED);
    if (round->ntallies == 0 && round->ndones == 0) {
        round->next = proxy->free_rounds; /* only NOPs */
        proxy->free_rounds = round;
        gpuic_proxy_busy_add(proxy, t0);
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
    gpuic_proxy_busy_add(proxy, t0);
    return consumed;
}

void gpuic_proxy_free_lists(gpuic_proxy_t *proxy)
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
        free(round->dones);
        free(round->tranges);
        free(round);
    }
    free(proxy->puts);
    proxy->puts = NULL;
    proxy->put_cap = 0;
}
