/*
 * The proxy's completions: rounds retire in order.  A round's local counts are applied once its
 * operations are locally complete and every earlier round's were; its remote counts and its
 * rings' completion indexes once its flush has completed too.  The free index of a queue
 * follows the completion index, held back at the first result its producer has not
 * acknowledged.
 */
#include "gpuic_proxy_internal.h"

void gpuic_proxy_flush_done(gpuic_rma_completion_t *comp, gpuic_status_t status)
{
    gpuic_proxy_round_t *round = (gpuic_proxy_round_t *)comp;

    if (status != GPUIC_OK) {
        round->flush_status = status;
    }
    round->flush_done = 1;
}

/* Owes @p a's completion index the ring's read index at the end of this round's drain (a
 * ring with nothing read this round owes nothing new, but recording it again is harmless). */
void gpuic_proxy_done_add(gpuic_proxy_round_t *round, gpuic_proxy_attached_t *a)
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
    round->dones[round->ndones].marked = a->q.failed != NULL;
    round->ndones++;
}

uint64_t gpuic_proxy_done_index(const gpuic_proxy_queue_t *q)
{
    uint64_t word = __atomic_load_n(q->done, __ATOMIC_RELAXED); /* the proxy's own store */

    return q->failed != NULL ? gpuic_ring_done_index(word) : word;
}

/* Marks the failures of @p t for its queue's producers (gpuic_proxy_queue_t.failed): the
 * marks, then a failure more in the completion word, with release so that a producer that
 * reads the count sees the marks.  The index part stays where it was. */
static void gpuic_proxy_mark_failed(const gpuic_proxy_tally_t *t)
{
    uint64_t word;

    if (t->marks == NULL || t->failed == 0) {
        return;
    }
    __atomic_store_n(&t->marks[0], 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&t->marks[1 + t->target], 1u, __ATOMIC_RELAXED);
    word = __atomic_load_n(t->done, __ATOMIC_RELAXED); /* the proxy's own store */
    __atomic_store_n(t->done,
                     gpuic_ring_done_word(gpuic_ring_done_index(word),
                                          gpuic_ring_done_failures(word) + 1),
                     __ATOMIC_RELEASE);
}

/* Publishes completion index @p d->end, keeping the failure count of a completion word. */
static void gpuic_proxy_done_publish(const gpuic_proxy_done_t *d)
{
    uint64_t word = d->end;

    if (d->marked) {
        word = gpuic_ring_done_word(d->end, gpuic_ring_done_failures(
                                                __atomic_load_n(d->done, __ATOMIC_RELAXED)));
    }
    __atomic_store_n(d->done, word, __ATOMIC_RELEASE);
}

void gpuic_proxy_retire(gpuic_proxy_t *proxy)
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
        GPUIC_TRACE_POINT(remote, round); /* before the indexes tell producers */
        for (unsigned i = 0; i < round->ntallies; ++i) {
            gpuic_proxy_tally_t *t = &round->tallies[i];
            if (round->flush_status != GPUIC_OK) {
                /* the transport lost the round: every WQE in it may have failed */
                gpuic_cmpl_set_error(t->cmpl, round->flush_status);
                t->failed = t->count;
            }
            gpuic_cmpl_complete(t->cmpl, t->target, t->count, t->failed);
            gpuic_proxy_mark_failed(t);
        }
        /* the data, results, counters and failure marks first: a producer that sees the
         * index reads them */
        gpuic_fence_completion_to_producer();
        for (unsigned i = 0; i < round->ndones; ++i) {
            gpuic_proxy_done_publish(&round->dones[i]);
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
int gpuic_proxy_free_update(gpuic_proxy_t *proxy)
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
        done = gpuic_proxy_done_index(&a->q);
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

/*
 * Progress until every round is retired (used when stopping and removing a ring).  Bounded by
 * the context's timeout: a round whose flush never completes (a peer that died) would
 * otherwise hold window release and finalize forever.  GPUIC_ERR_TIMED_OUT leaves the
 * unretired rounds in the FIFO; they still point into their queues, which must then outlive
 * the proxy.
 */
gpuic_status_t gpuic_proxy_drain_locked(gpuic_proxy_t *proxy)
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
