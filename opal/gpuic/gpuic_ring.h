/*
 * gpuic_ring.h - a send queue: a ring of 64-byte WQE slots with a reservation counter, a
 * doorbell record and a consumer index.
 *
 * Protocol (many producers, one consumer):
 *  1. reserve: one successful CAS on the reservation counter takes n consecutive slots, after
 *     checking them against the consumer index, so a full ring answers GPUIC_ERR_NO_RESOURCE
 *     and nothing is ever overwritten or dropped.  (A fetch-add cannot give slots back when it
 *     overshoots a full ring, which is why the one atomic is a CAS.)  n > 1 serves batches
 *     and a warp leader reserving for its lanes.
 *  2. write: the producer copies each WQE into its slots (a two-BB WQE may wrap), fences,
 *     and stores each slot's valid marker last.  The marker names the slot's sequence number
 *     and whether it starts a WQE or continues one, so a WQE whose DS lies cannot swallow
 *     the next producer's WQE: the consumer stops at the next head marker.
 *  3. commit: the producer waits until the doorbell record equals its first slot and
 *     advances it past its last one.  Doorbells are therefore published in reservation
 *     order, one store per batch however many WQEs it holds.
 *  4. abandon: a producer that reserved slots and cannot fill them commits them as NOPs; the
 *     consumer skips NOPs, so an abandoned batch never leaves a hole that stalls the ring.
 *  5. consume: the consumer copies a published WQE out (so validation runs on a private copy
 *     the producer cannot change), then advances the consumer index to free its slots.  A
 *     consumer draining a batch bounds its reads by one doorbell sample and frees the slots
 *     it has read a batch at a time (gpuic_ring_peek_below(), gpuic_ring_take(),
 *     gpuic_ring_release()): the doorbell and the consumer index are the two lines producers
 *     and consumer both touch, and touching them once per WQE costs a cache-line transfer
 *     each time.
 *  6. notify: a consumer that sleeps when idle registers a waiter (gpuic_ring_waiter_t); a
 *     host producer's commit checks it after the doorbell store and wakes a sleeping
 *     consumer.  Device producers do not (they cannot call into the host): such a consumer
 *     must bound its sleeps.
 *
 * The structure and the producer side are inline and device-callable: a GPU producer runs the
 * same code against a ring in GPU-mapped host memory.  The consumer side is host code.
 */
#ifndef GPUIC_RING_H
#define GPUIC_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpuic_fence.h"
#include "gpuic_status.h"
#include "gpuic_wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One basic block of the ring. */
typedef struct gpuic_ring_slot {
    uint64_t words[GPUIC_WQE_BB_SIZE / 8]; /**< the slot's bytes, written as 8-byte words */
} __attribute__((aligned(GPUIC_WQE_BB_SIZE))) gpuic_ring_slot_t;

/**
 * How a consumer that sleeps when idle is woken by host producers.  The consumer sets
 * @c sleeping, then orders that store before its last look at the doorbells; a host producer
 * stores its doorbell, then looks at @c sleeping and calls @c wake if it is set.  Store-load
 * ordering on both sides makes one of them see the other's store, so a host producer's WQE
 * never waits for the end of a pause.  The consumer may order both sides at once (Linux
 * membarrier, at each sleep): producers then need only a compiler barrier.  Where it cannot,
 * it sets @c producer_fence and every host commit pays a store-load fence
 * (gpuic_fence_doorbell_to_waiter()), which waits for the commit's slot stores to leave the
 * core and would cost a fast producer a third of its time.
 */
typedef struct gpuic_ring_waiter {
    uint32_t sleeping;                               /**< non-zero while the consumer sleeps */
    uint32_t producer_fence;                         /**< producers must fence (see above) */
    void (*wake)(struct gpuic_ring_waiter *waiter);  /**< ends the sleep (host code) */
} gpuic_ring_waiter_t;

/**
 * A send queue.  The three counters are 64-bit sequence numbers that never wrap in practice;
 * slot i of the ring holds sequence numbers congruent to i modulo size.  Each counter has its
 * own cache line because different parties write them.
 */
typedef struct gpuic_ring {
    /** Reservation counter: the first sequence number not yet reserved (producers, CAS). */
    uint64_t reserve __attribute__((aligned(64)));
    /** Doorbell record: every slot below it is published (producers, in reservation order). */
    uint64_t doorbell __attribute__((aligned(64)));
    /** Consumer index: every slot below it is free again (the consumer). */
    uint64_t consumer __attribute__((aligned(64)));
    /** Read index: every slot below it has been read; slots from the consumer index up to it
     *  are still owned by the consumer (the consumer only; apart from the consumer index so
     *  that reading a WQE does not take that line away from producers). */
    uint64_t cursor __attribute__((aligned(64)));
    /** size slots of WQE basic blocks. */
    gpuic_ring_slot_t *slots __attribute__((aligned(64)));
    /** Per-slot valid marker: ((sequence number + 1) << 1) | continuation, of the BB last
     *  written there (gpuic_ring_marker()). */
    uint64_t *markers;
    uint32_t size; /**< slots, a power of two */
    uint32_t mask; /**< size - 1 */
    uint32_t id;   /**< ring number reported in CQEs */
    /** Consumer to wake after a host commit, or NULL (gpuic_ring_set_waiter()). */
    gpuic_ring_waiter_t *waiter;
    /** The ring lives in memory its creator provided (gpuic_ring_create_at()). */
    uint32_t external;
    /**
     * Producers publish each WQE by storing its head marker last (after its slots and
     * continuation markers, with a fence between) instead of advancing the doorbell: the
     * consumer takes the WQE at its read index as soon as that marker is there.  For GPU
     * producers, whose doorbell advances would have to wait for one another in reservation
     * order (a chain of device-memory round trips across thousands of threads); the doorbell
     * record is then unused.  Set by the creator before any producer runs.
     */
    uint32_t publish_by_marker;
    /**
     * Slots written as tagged words (rings from gpuic_ring_create_tagged_at(), else NULL):
     * the basic block at sequence number seq is GPUIC_RING_TAGGED_WORDS 8-byte words at
     * tagged + (seq & mask) * GPUIC_RING_TAGGED_WORDS, each holding 4 bytes of the block in its
     * low half and the block's tag (gpuic_ring_tag()) in its high half.  An aligned 8-byte
     * store is seen whole or not at all, so the consumer takes a block once every word carries
     * its tag: a producer publishes its data and the block in the same stores, with no fence
     * between them (over PCIe a GPU's system-scope fence costs about a microsecond).  Such a
     * ring publishes by tag (publish_by_marker is set; slots and markers are unused).
     */
    uint64_t *tagged;
} gpuic_ring_t;

/** 8-byte words of one tagged basic block (4 bytes of the block each). */
#define GPUIC_RING_TAGGED_WORDS (GPUIC_WQE_BB_SIZE / 4)

/**
 * Creates a ring of @p size slots (a power of two, 2 .. 2^24), all free, with ring number @p id.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM or GPUIC_ERR_NO_MEMORY.
 */
gpuic_status_t gpuic_ring_create(uint32_t size, uint32_t id, gpuic_ring_t **ring_p);

/**
 * Bytes gpuic_ring_create_at() needs for a ring of @p size slots (0 for an invalid size).
 * The structure, the slots and the markers lie in one block, so that one registration (e.g.
 * mapping it into a GPU's address space) covers everything producers write.
 */
size_t gpuic_ring_footprint(uint32_t size);

/**
 * gpuic_ring_create() in the @p len bytes at @p mem (64-byte aligned, at least
 * gpuic_ring_footprint(size)), which the caller keeps alive until after gpuic_ring_destroy()
 * and frees itself.  Offsets of the fields in the block: the structure at 0, then the slots,
 * then the markers (ring->slots and ring->markers point there).
 * @return GPUIC_OK or GPUIC_ERR_INVALID_PARAM.
 */
gpuic_status_t gpuic_ring_create_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                    gpuic_ring_t **ring_p);

/** Bytes gpuic_ring_create_tagged_at() needs for a ring of @p size slots (0: invalid size). */
size_t gpuic_ring_footprint_tagged(uint32_t size);

/**
 * gpuic_ring_create_at() for a ring whose producers write tagged words (gpuic_ring_t.tagged):
 * the tagged blocks follow the markers in the block (every word 0: no tag of a first lap is
 * 0).  Producers store each block with gpuic_ring_tagged_word(); they need no commit.
 * @return GPUIC_OK or GPUIC_ERR_INVALID_PARAM.
 */
gpuic_status_t gpuic_ring_create_tagged_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                           gpuic_ring_t **ring_p);

/** Destroys a ring; no producer or consumer may use it any more. */
void gpuic_ring_destroy(gpuic_ring_t *ring);

/**
 * Reserves @p n consecutive slots (1 <= n <= size).  On success *start_p is the first slot's
 * sequence number; the caller must commit or abandon exactly these slots.
 * @return GPUIC_OK, GPUIC_ERR_NO_RESOURCE when fewer than n slots are free (retry after the
 *         consumer advances), or GPUIC_ERR_INVALID_PARAM.
 */
static inline GPUIC_HOST_DEVICE gpuic_status_t gpuic_ring_reserve(gpuic_ring_t *ring,
                                                                  unsigned n,
                                                                  uint64_t *start_p)
{
    uint64_t cur = gpuic_atomic_load_relaxed_u64(&ring->reserve);
    uint64_t cons;

    if (n == 0 || n > ring->size) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    for (;;) {
        cons = gpuic_atomic_load_acquire_u64(&ring->consumer);
        /* cur may be stale and even below cons; a stale cur only makes the CAS fail */
        if ((int64_t)(cur - cons) >= 0 && cur - cons + n > ring->size) {
            uint64_t now = gpuic_atomic_load_relaxed_u64(&ring->reserve);
            if (now == cur) {
                return GPUIC_ERR_NO_RESOURCE;
            }
            cur = now;
            continue;
        }
        if (gpuic_atomic_cas_u64(&ring->reserve, &cur, cur + n)) {
            *start_p = cur;
            return GPUIC_OK;
        }
    }
}

/** Slot that holds sequence number @p seq. */
static inline GPUIC_HOST_DEVICE gpuic_ring_slot_t *gpuic_ring_slot(gpuic_ring_t *ring,
                                                                   uint64_t seq)
{
    return &ring->slots[seq & ring->mask];
}

/** The valid marker of the BB at @p seq: head of a WQE (@p cont 0) or a continuation. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_marker(uint64_t seq, unsigned cont)
{
    return ((seq + 1) << 1) | (cont ? 1u : 0u);
}

/**
 * The tag of the basic block at @p seq in a tagged ring: the low half of its valid marker,
 * never 0 for the ring's first lap (sizes are below 2^24), and different from the tag the
 * same slot carried one lap earlier.
 */
static inline GPUIC_HOST_DEVICE uint32_t gpuic_ring_tag(uint64_t seq, unsigned cont)
{
    return (uint32_t)gpuic_ring_marker(seq, cont);
}

/**
 * The word a producer stores in the acknowledgement array of a ring whose consumer writes
 * results into the producers' staging areas (gpuic_proxy_queue_t.acks), at index
 * seq & mask, once it has read the result of the WQE at @p seq: the low 32 bits of seq + 1
 * and a valid bit, so that no word of a fresh (zeroed) array matches any sequence number.
 */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_ack_word(uint64_t seq)
{
    return (1ull << 32) | (uint32_t)(seq + 1);
}

/** Word @p i of a tagged block: bytes 4i .. 4i+3 of the block (@p data) under @p tag. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_tagged_word(uint32_t tag, uint32_t data)
{
    return ((uint64_t)tag << 32) | data;
}

/**
 * Copies a WQE of @p nbb basic blocks into reserved slots starting at sequence number @p seq
 * (wrapping at the ring's end), then stores their valid markers, last.  The consumer reads
 * nothing before the commit that covers these slots.
 */
static inline GPUIC_HOST_DEVICE void gpuic_ring_write(gpuic_ring_t *ring, uint64_t seq,
                                                      const gpuic_wqe_t *wqe, unsigned nbb)
{
    for (unsigned b = 0; b < nbb; ++b) {
        gpuic_ring_slot_t *slot = gpuic_ring_slot(ring, seq + b);
        for (unsigned i = 0; i < GPUIC_WQE_BB_SIZE / 8; ++i) {
            slot->words[i] = wqe->words[b * (GPUIC_WQE_BB_SIZE / 8) + i];
        }
    }
    gpuic_fence_wqe_to_consumer();
    for (unsigned b = 0; b < nbb; ++b) {
        gpuic_atomic_store_release_u64(&ring->markers[(seq + b) & ring->mask],
                                       gpuic_ring_marker(seq + b, b));
    }
}

#if !defined(__CUDA_ARCH__)
/**
 * Host producer, after a doorbell store: wakes the ring's consumer if it sleeps.  Costs two
 * loads of a line the consumer writes only around a sleep (plus a fence where the consumer
 * asks for one, see gpuic_ring_waiter_t).
 */
static inline void gpuic_ring_notify(gpuic_ring_t *ring)
{
    gpuic_ring_waiter_t *waiter = __atomic_load_n(&ring->waiter, __ATOMIC_ACQUIRE);

    if (waiter == NULL) {
        return;
    }
    if (__atomic_load_n(&waiter->producer_fence, __ATOMIC_RELAXED)) {
        gpuic_fence_doorbell_to_waiter();
    } else {
        /* the consumer's barrier orders this thread too; only the compiler must keep the
         * doorbell store before the load */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    if (__atomic_load_n(&waiter->sleeping, __ATOMIC_RELAXED)) {
        waiter->wake(waiter);
    }
}
#endif

/**
 * Publishes the @p n slots reserved at @p start (all written): waits until every earlier
 * reservation is published, then advances the doorbell record past them.  On the host it
 * then wakes a sleeping consumer (gpuic_ring_notify()).
 */
static inline GPUIC_HOST_DEVICE void gpuic_ring_commit(gpuic_ring_t *ring, uint64_t start,
                                                       unsigned n)
{
    unsigned spins = 0;

    gpuic_fence_wqe_to_consumer();
    while (gpuic_atomic_load_acquire_u64(&ring->doorbell) != start) {
        gpuic_cpu_relax(++spins);
    }
    gpuic_atomic_store_release_u64(&ring->doorbell, start + n);
#if !defined(__CUDA_ARCH__)
    gpuic_ring_notify(ring);
#endif
}

/**
 * Gives back the @p n slots reserved at @p start without a WQE: each becomes a one-BB NOP the
 * consumer skips, and they are committed so later producers are not held up.
 */
static inline GPUIC_HOST_DEVICE void gpuic_ring_abandon(gpuic_ring_t *ring, uint64_t start,
                                                        unsigned n)
{
    gpuic_wqe_t nop;
    gpuic_wqe_hdr_t hdr = {0, 0, 0};

    for (unsigned i = 0; i < GPUIC_WQE_BB_SIZE / 8; ++i) {
        nop.words[i] = 0;
    }
    for (unsigned i = 0; i < n; ++i) {
        hdr.wqe_index = (uint16_t)(start + i);
        gpuic_wqe_build_nop(&nop, &hdr);
        gpuic_ring_write(ring, start + i, &nop, 1);
    }
    gpuic_ring_commit(ring, start, n);
}

/**
 * Consumer: copies the next published WQE (at the read index) into @p wqe and returns its
 * size in basic blocks (0 when nothing is published).  *seq_p receives its first sequence
 * number.  The WQE's DS decides its size, bounded by GPUIC_WQE_MAX_BB, by what is published
 * and by the next head marker, so a malformed WQE costs at most its own slots (it then decodes
 * as truncated).  A stray continuation slot is returned as one BB with an invalid opcode.
 * The slots stay owned until gpuic_ring_consume() (or gpuic_ring_take() and
 * gpuic_ring_release()).
 */
unsigned gpuic_ring_peek(gpuic_ring_t *ring, gpuic_wqe_t *wqe, uint64_t *seq_p);

/**
 * Consumer: gpuic_ring_peek() bounded by @p limit, a doorbell value read earlier with
 * gpuic_ring_doorbell(), instead of the doorbell now; a batch reads the doorbell once.
 */
unsigned gpuic_ring_peek_below(gpuic_ring_t *ring, uint64_t limit, gpuic_wqe_t *wqe,
                               uint64_t *seq_p);

/**
 * Consumer: moves the read index past the @p nbb slots the last peek returned.  They stay
 * owned (producers cannot reuse them) until gpuic_ring_release().
 */
static inline void gpuic_ring_take(gpuic_ring_t *ring, unsigned nbb)
{
    /* only the consumer writes the read index: a plain read-modify-write is exact */
    __atomic_store_n(&ring->cursor, __atomic_load_n(&ring->cursor, __ATOMIC_RELAXED) + nbb,
                     __ATOMIC_RELAXED);
}

/** Consumer: frees every slot taken so far (one store producers see). */
static inline void gpuic_ring_release(gpuic_ring_t *ring)
{
    gpuic_fence_slots_to_producer();
    gpuic_atomic_store_release_u64(&ring->consumer,
                                   __atomic_load_n(&ring->cursor, __ATOMIC_RELAXED));
}

/** Consumer: frees the @p nbb slots returned by the last peek (take, then release). */
void gpuic_ring_consume(gpuic_ring_t *ring, unsigned nbb);

/** Consumer: the doorbell record now (every slot below it is published). */
uint64_t gpuic_ring_doorbell(const gpuic_ring_t *ring);

/**
 * Consumer: the bound to give gpuic_ring_peek_below() now: the doorbell record, or for a ring
 * that publishes by marker, a whole ring ahead of the read index when the WQE there is
 * published (the peek then stops at the first WQE whose head marker is missing), else the
 * read index itself (nothing to read).
 */
uint64_t gpuic_ring_published(const gpuic_ring_t *ring);

/** Consumer: the consumer index (every slot below it is free for producers again). */
uint64_t gpuic_ring_consumer_index(const gpuic_ring_t *ring);

/** Consumer: the read index (the next sequence number a peek returns). */
static inline uint64_t gpuic_ring_read_index(const gpuic_ring_t *ring)
{
    return __atomic_load_n(&ring->cursor, __ATOMIC_RELAXED);
}

/**
 * Consumer: registers @p waiter (or NULL) as the one host producers wake after a commit.
 * Producers already running may miss the change for a while; a consumer must not depend on
 * every commit waking it (device producers never do).
 */
void gpuic_ring_set_waiter(gpuic_ring_t *ring, gpuic_ring_waiter_t *waiter);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_RING_H */
