/*
 * ring_producer.h - a host-thread producer of a send queue, following the protocol of
 * gpuic_ring.h as the device producer does (mpix_gpuic_device_proxy.cuh): sequence numbers
 * from a ticket counter (fetch-and-add), a slot written once the consumer's free index (or its
 * completion index) has passed it one lap earlier, and each basic block stored as tagged words,
 * which publishes it.  The host stores each word with release, which orders the producer's
 * earlier stores (a payload the entry points to) before the entry as the device's fence does.
 */
#ifndef GPUIC_RING_PRODUCER_H
#define GPUIC_RING_PRODUCER_H

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuic_proxy.h"
#include "gpuic_ring.h"

/* A ring in its own memory, its producers' ticket counter and the consumer's indexes. */
typedef struct ring_producer {
    gpuic_ring_t *ring;
    void *mem;
    uint64_t tickets __attribute__((aligned(64))); /* next sequence number (producers) */
    /* the completion index and the free index, one line, as a device queue lays them out */
    uint64_t idx[8] __attribute__((aligned(64)));
    uint64_t *acks; /* result acknowledgements (one per slot), or NULL: no free index */
    /* the proxy's failure marks (gpuic_proxy_queue_t.failed) for up to 7 targets, used when
     * with_marks is set before ring_producer_queue(): idx[0] is then a completion word */
    uint32_t marks[8];
    int with_marks;
} ring_producer_t;

/* Creates a ring of @p size slots; @p with_free adds the free index and acknowledgements.
 * Returns 0 on failure. */
static inline int ring_producer_create(ring_producer_t *rp, uint32_t size, uint32_t id,
                                       int with_free)
{
    size_t len = gpuic_ring_footprint_tagged(size);

    memset(rp, 0, sizeof(*rp));
    rp->mem = len != 0 ? aligned_alloc(64, (len + 63) / 64 * 64) : NULL;
    if (rp->mem == NULL || gpuic_ring_create_tagged_at(rp->mem, len, size, id, &rp->ring) !=
                               GPUIC_OK) {
        free(rp->mem);
        return 0;
    }
    if (with_free) {
        rp->acks = calloc(size, sizeof(*rp->acks));
    }
    return !with_free || rp->acks != NULL;
}

static inline void ring_producer_destroy(ring_producer_t *rp)
{
    free(rp->acks);
    free(rp->mem);
}

/* The proxy queue of the ring (the caller fills keys and cmpl). */
static inline void ring_producer_queue(ring_producer_t *rp, gpuic_proxy_queue_t *q)
{
    memset(q, 0, sizeof(*q));
    q->ring = rp->ring;
    q->done = &rp->idx[0];
    if (rp->acks != NULL) {
        q->free = &rp->idx[1];
        q->acks = rp->acks;
    }
    if (rp->with_marks) {
        q->failed = rp->marks;
    }
}

/* The consumer's completion index now (acquire: what completed is visible). */
static inline uint64_t ring_producer_done(const ring_producer_t *rp)
{
    uint64_t word = __atomic_load_n(&rp->idx[0], __ATOMIC_ACQUIRE);

    return rp->with_marks ? gpuic_ring_done_index(word) : word;
}

/* The bound below which slots may be reused: the free index, or the completion index. */
static inline uint64_t ring_producer_free(const ring_producer_t *rp)
{
    return rp->acks != NULL ? __atomic_load_n(&rp->idx[1], __ATOMIC_ACQUIRE)
                            : ring_producer_done(rp);
}

/* Reserves @p n consecutive slots and waits until they are free; returns the first sequence
 * number.  *full_p (if given) counts the waits. */
static inline uint64_t ring_producer_reserve(ring_producer_t *rp, unsigned n, unsigned *full_p)
{
    uint64_t seq = __atomic_fetch_add(&rp->tickets, n, __ATOMIC_RELAXED);

    while (seq + n > ring_producer_free(rp) + rp->ring->size) {
        if (full_p != NULL) {
            (*full_p)++;
        }
        sched_yield();
    }
    return seq;
}

/* Stores words [from, to) of each of the @p nbb blocks of @p w at @p seq. */
static inline void ring_producer_store(ring_producer_t *rp, uint64_t seq, const gpuic_wqe_t *w,
                                       unsigned nbb, unsigned from, unsigned to)
{
    gpuic_ring_t *ring = rp->ring;

    for (unsigned b = 0; b < nbb; ++b) {
        uint64_t *dst = ring->tagged + ((seq + b) & ring->mask) * GPUIC_RING_TAGGED_WORDS;
        uint32_t tag = gpuic_ring_tag(seq + b, b != 0), data[GPUIC_RING_TAGGED_WORDS];

        memcpy(data, w->bytes + b * GPUIC_WQE_BB_SIZE, sizeof(data));
        for (unsigned i = from; i < to && i < GPUIC_RING_TAGGED_WORDS; ++i) {
            __atomic_store_n(&dst[i], gpuic_ring_tagged_word(tag, data[i]), __ATOMIC_RELEASE);
        }
    }
}

/* Writes (and so publishes) the WQE of @p nbb blocks at @p seq, its WQE index set to seq. */
static inline void ring_producer_write(ring_producer_t *rp, uint64_t seq, gpuic_wqe_t *w,
                                       unsigned nbb)
{
    gpuic_wqe_ctrl_seg_t *ctrl = (gpuic_wqe_ctrl_seg_t *)w;

    ctrl->opmod_idx_opcode = gpuic_htobe32((gpuic_be32toh(ctrl->opmod_idx_opcode) & 0xff0000ffu) |
                                           ((uint32_t)(uint16_t)seq << 8));
    ring_producer_store(rp, seq, w, nbb, 0, GPUIC_RING_TAGGED_WORDS);
}

/* Reserves, writes and publishes one WQE; returns its sequence number. */
static inline uint64_t ring_producer_post(ring_producer_t *rp, gpuic_wqe_t *w, unsigned nbb,
                                          unsigned *full_p)
{
    uint64_t seq = ring_producer_reserve(rp, nbb, full_p);

    ring_producer_write(rp, seq, w, nbb);
    return seq;
}

/* Acknowledges the result of the WQE at @p seq (queues with a free index). */
static inline void ring_producer_ack(ring_producer_t *rp, uint64_t seq)
{
    __atomic_store_n(&rp->acks[seq & rp->ring->mask], gpuic_ring_ack_word(seq),
                     __ATOMIC_RELEASE);
}

/* Waits until the completion index reaches @p want (up to about @p seconds); the value seen. */
static inline uint64_t ring_producer_wait(const ring_producer_t *rp, uint64_t want,
                                          unsigned seconds)
{
    struct timespec pause = {0, 100000};
    uint64_t got = ring_producer_done(rp);

    for (unsigned long i = 0; got < want && i < seconds * 10000ul; ++i) {
        nanosleep(&pause, NULL);
        got = ring_producer_done(rp);
    }
    return got;
}

#endif
