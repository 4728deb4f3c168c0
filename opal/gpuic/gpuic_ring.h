/*
 * gpuic_ring.h - a send queue: a ring of 64-byte WQE basic blocks that producers write as
 * tagged words, and the read index of its one consumer (the proxy).
 *
 * Protocol (many producers, one consumer):
 *  1. reserve: producers take consecutive sequence numbers from a counter of their own (for
 *     GPU threads a fetch-and-add in device memory) and may write a slot once the consumer's
 *     free index (gpuic_proxy_queue_t.free, or its completion index) has passed the sequence
 *     number one lap earlier.  The ring itself holds no producer state.
 *  2. write and publish: basic block seq is GPUIC_RING_TAGGED_WORDS 8-byte words, each holding
 *     4 bytes of the block in its low half and the block's tag (gpuic_ring_tag(): head of a WQE
 *     or continuation) in its high half (gpuic_ring_tagged_word()).  An aligned 8-byte store
 *     is seen whole or not at all, so the consumer takes a block once every word carries its
 *     tag: a producer publishes its data and the block in the same stores, with no fence
 *     between them and no wait for other producers.  Only data the entry points to (a staged
 *     payload) must be ordered before the entry's words.
 *  3. consume: the consumer copies a published WQE out (so validation runs on a private copy
 *     the producer cannot change) and moves its read index past it (gpuic_ring_peek(),
 *     gpuic_ring_take()).  A WQE whose DS claims more blocks than its producer wrote ends at
 *     the next head tag, so it cannot swallow the next producer's WQE.
 *  4. complete: the consumer publishes completion and free indexes (gpuic_proxy.h); producers
 *     wait on them, for completion and for free slots.
 *
 * The structure and the tag helpers are inline and device-callable: a GPU producer writes the
 * ring in GPU-mapped host memory (mpix_gpuic_device_proxy.cuh).  The consumer side is host
 * code.
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

/**
 * A send queue in memory its creator provides (gpuic_ring_create_tagged_at()).  Slot i of the
 * ring holds the sequence numbers congruent to i modulo size.
 */
typedef struct gpuic_ring {
    /** Read index: every block below it has been read (the consumer only; a line of its own,
     *  apart from what producers write). */
    uint64_t cursor __attribute__((aligned(64)));
    /**
     * The tagged blocks: the basic block at sequence number seq is GPUIC_RING_TAGGED_WORDS
     * 8-byte words at tagged + (seq & mask) * GPUIC_RING_TAGGED_WORDS (see the protocol).
     */
    uint64_t *tagged __attribute__((aligned(64)));
    uint32_t size; /**< slots, a power of two */
    uint32_t mask; /**< size - 1 */
    uint32_t id;   /**< ring number (logs) */
} gpuic_ring_t;

/** 8-byte words of one tagged basic block (4 bytes of the block each). */
#define GPUIC_RING_TAGGED_WORDS (GPUIC_WQE_BB_SIZE / 4)

/**
 * Bytes gpuic_ring_create_tagged_at() needs for a ring of @p size slots (a power of two,
 * 2 .. 2^24; 0 for an invalid size).  The structure and the tagged blocks lie in one block, so
 * that one registration (e.g. mapping it into a GPU's address space) covers everything
 * producers write.
 */
size_t gpuic_ring_footprint_tagged(uint32_t size);

/**
 * Creates a ring of @p size slots with ring number @p id in the @p len bytes at @p mem
 * (64-byte aligned, at least gpuic_ring_footprint_tagged(size)), which the caller keeps alive
 * while the ring is used and frees itself (there is no destroy).  The structure lies at offset
 * 0, the tagged blocks after it (ring->tagged points there), every word 0: no tag of a first
 * lap is 0.
 * @return GPUIC_OK or GPUIC_ERR_INVALID_PARAM.
 */
gpuic_status_t gpuic_ring_create_tagged_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                           gpuic_ring_t **ring_p);

/**
 * The tag of the basic block at @p seq: ((seq + 1) << 1) | @p cont (head of a WQE: 0, a
 * continuation: 1), truncated to 32 bits; never 0 for the ring's first lap (sizes are below
 * 2^24), and different from the tag the same slot carried one lap earlier.
 */
static inline GPUIC_HOST_DEVICE uint32_t gpuic_ring_tag(uint64_t seq, unsigned cont)
{
    return (uint32_t)(((seq + 1) << 1) | (cont ? 1u : 0u));
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

/*
 * The completion word of a consumer that reports failures to its producers
 * (gpuic_proxy_queue_t.failed): the completion index in its low GPUIC_RING_DONE_INDEX_BITS
 * bits, and above them how many failure reports the consumer made (one per target of a round
 * that completed WQEs to it with an error; saturating at GPUIC_RING_DONE_FAILURES_MAX).  A
 * producer that reads the index for a wait learns in the same load whether it must look for
 * failures.  Both parts only grow, so the word does too (while the index stays below 2^48),
 * and a maximum of words producers have seen is a word.
 */
#define GPUIC_RING_DONE_INDEX_BITS 48
#define GPUIC_RING_DONE_FAILURES_MAX 0xffffu

/** The completion index of completion word @p word. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_done_index(uint64_t word)
{
    return word & ((1ull << GPUIC_RING_DONE_INDEX_BITS) - 1);
}

/** The failure count of completion word @p word. */
static inline GPUIC_HOST_DEVICE unsigned gpuic_ring_done_failures(uint64_t word)
{
    return (unsigned)(word >> GPUIC_RING_DONE_INDEX_BITS);
}

/** The completion word of index @p index and failure count @p failures (saturated). */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_done_word(uint64_t index, unsigned failures)
{
    uint64_t f = failures < GPUIC_RING_DONE_FAILURES_MAX ? failures : GPUIC_RING_DONE_FAILURES_MAX;

    return gpuic_ring_done_index(index) | (f << GPUIC_RING_DONE_INDEX_BITS);
}

/** Whether completion word @p word covers every WQE below sequence number @p seq (indexes
 *  compare modulo 2^48). */
static inline GPUIC_HOST_DEVICE int gpuic_ring_done_reached(uint64_t word, uint64_t seq)
{
    return (int64_t)((gpuic_ring_done_index(word) - seq) << (64 - GPUIC_RING_DONE_INDEX_BITS)) >=
           0;
}

/** Word @p i of a tagged block: bytes 4i .. 4i+3 of the block (@p data) under @p tag. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_ring_tagged_word(uint32_t tag, uint32_t data)
{
    return ((uint64_t)tag << 32) | data;
}

/**
 * Consumer: copies the WQE at the read index into @p wqe and returns its size in basic blocks
 * (0 when it is not all there yet); *seq_p receives its first sequence number.  @p limit is a
 * bound read earlier with gpuic_ring_published(): a batch reads it once.  The WQE's DS decides
 * its size, bounded by GPUIC_WQE_MAX_BB, by @p limit and by the next head tag, so a malformed
 * WQE costs at most its own slots (it then decodes as truncated).  A stray continuation block
 * is returned as one BB with an invalid opcode.  The read index stays until gpuic_ring_take().
 */
unsigned gpuic_ring_peek(gpuic_ring_t *ring, uint64_t limit, gpuic_wqe_t *wqe, uint64_t *seq_p);

/** Consumer: moves the read index past the @p nbb blocks the last peek returned. */
static inline void gpuic_ring_take(gpuic_ring_t *ring, unsigned nbb)
{
    /* only the consumer writes the read index: a plain read-modify-write is exact */
    __atomic_store_n(&ring->cursor, __atomic_load_n(&ring->cursor, __ATOMIC_RELAXED) + nbb,
                     __ATOMIC_RELAXED);
}

/**
 * Consumer: the bound to give gpuic_ring_peek() now: a whole ring ahead of the read index when
 * the first word of the block there carries its head tag (the peek then stops at the first
 * WQE not all there), else the read index itself (nothing to read).  The bound holds while
 * the read index it was taken at is at least the index producers reserve against (the
 * consumer publishes that index between batches, not during one): no producer can then
 * write a block at or past it, so no WQE straddles it.
 */
uint64_t gpuic_ring_published(const gpuic_ring_t *ring);

/** Consumer: the read index (the next sequence number a peek returns). */
static inline uint64_t gpuic_ring_read_index(const gpuic_ring_t *ring)
{
    return __atomic_load_n(&ring->cursor, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_RING_H */
