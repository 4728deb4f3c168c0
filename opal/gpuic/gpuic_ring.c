#include "gpuic_mem.h"
#include "gpuic_ring.h"

#include <stdlib.h>
#include <string.h>

#include "gpuic_log.h"

static int gpuic_ring_size_valid(uint32_t size)
{
    return size >= 2 && size <= (1u << 24) && (size & (size - 1)) == 0;
}

/* Offset of the slots in a block from gpuic_ring_create_at(). */
static size_t gpuic_ring_slots_offset(void)
{
    return (sizeof(gpuic_ring_t) + GPUIC_WQE_BB_SIZE - 1) & ~(size_t)(GPUIC_WQE_BB_SIZE - 1);
}

size_t gpuic_ring_footprint(uint32_t size)
{
    if (!gpuic_ring_size_valid(size)) {
        return 0;
    }
    return gpuic_ring_slots_offset() + (size_t)size * sizeof(gpuic_ring_slot_t) +
           (size_t)size * sizeof(uint64_t);
}

gpuic_status_t gpuic_ring_create_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                    gpuic_ring_t **ring_p)
{
    gpuic_ring_t *ring = mem;
    size_t need = gpuic_ring_footprint(size);

    if (need == 0 || mem == NULL || len < need || ((uintptr_t)mem & 63) != 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "ring of %u slots does not fit %zu bytes at %p", size, len,
                  mem);
        return GPUIC_ERR_INVALID_PARAM;
    }
    /* every marker 0 (unwritten), every counter 0 */
    memset(mem, 0, need);
    ring->slots = (gpuic_ring_slot_t *)((char *)mem + gpuic_ring_slots_offset());
    ring->markers = (uint64_t *)(ring->slots + size);
    ring->size = size;
    ring->mask = size - 1;
    ring->id = id;
    ring->external = 1;
    *ring_p = ring;
    return GPUIC_OK;
}

size_t gpuic_ring_footprint_tagged(uint32_t size)
{
    size_t plain = gpuic_ring_footprint(size);

    return plain == 0 ? 0 : plain + (size_t)size * GPUIC_RING_TAGGED_WORDS * sizeof(uint64_t);
}

gpuic_status_t gpuic_ring_create_tagged_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                           gpuic_ring_t **ring_p)
{
    size_t plain = gpuic_ring_footprint(size), need = gpuic_ring_footprint_tagged(size);
    gpuic_status_t status;

    if (need == 0 || len < need) {
        gpuic_log(GPUIC_LOG_DEBUG, "tagged ring of %u slots does not fit %zu bytes", size, len);
        return GPUIC_ERR_INVALID_PARAM;
    }
    status = gpuic_ring_create_at(mem, plain, size, id, ring_p);
    if (status == GPUIC_OK) {
        memset((char *)mem + plain, 0, need - plain);
        (*ring_p)->tagged = (uint64_t *)((char *)mem + plain);
        (*ring_p)->publish_by_marker = 1;
    }
    return status;
}

gpuic_status_t gpuic_ring_create(uint32_t size, uint32_t id, gpuic_ring_t **ring_p)
{
    gpuic_ring_t *ring;

    if (!gpuic_ring_size_valid(size)) {
        gpuic_log(GPUIC_LOG_DEBUG, "ring size %u is not a power of two in [2, 2^24]", size);
        return GPUIC_ERR_INVALID_PARAM;
    }
    ring = gpuic_mem_aligned(64, sizeof(*ring));
    if (ring == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(ring, 0, sizeof(*ring));
    ring->slots = gpuic_mem_aligned(GPUIC_WQE_BB_SIZE, (size_t)size * sizeof(gpuic_ring_slot_t));
    if (ring->slots == NULL) {
        goto err_free_ring;
    }
    /* Marker 0 is no valid marker of any sequence number, so fresh slots read as unwritten. */
    ring->markers = gpuic_mem_calloc(size, sizeof(uint64_t));
    if (ring->markers == NULL) {
        goto err_free_slots;
    }
    memset(ring->slots, 0, (size_t)size * sizeof(gpuic_ring_slot_t));
    ring->size = size;
    ring->mask = size - 1;
    ring->id = id;
    *ring_p = ring;
    return GPUIC_OK;

err_free_slots:
    free(ring->slots);
err_free_ring:
    free(ring);
    return GPUIC_ERR_NO_MEMORY;
}

void gpuic_ring_destroy(gpuic_ring_t *ring)
{
    if (ring == NULL || ring->external) {
        return;
    }
    free(ring->markers);
    free(ring->slots);
    free(ring);
}

/* The marker slot seq carries now. */
static uint64_t gpuic_ring_slot_marker(const gpuic_ring_t *ring, uint64_t seq)
{
    return gpuic_atomic_load_acquire_u64(&ring->markers[seq & ring->mask]);
}

unsigned gpuic_ring_peek(gpuic_ring_t *ring, gpuic_wqe_t *wqe, uint64_t *seq_p)
{
    return gpuic_ring_peek_below(ring, gpuic_atomic_load_acquire_u64(&ring->doorbell), wqe,
                                 seq_p);
}

/* Blocks the WQE whose first block is in @p wqe claims (its DS), at least 1, at most
 * GPUIC_WQE_MAX_BB and what is published from @p seq on (below @p published). */
static unsigned gpuic_ring_claimed_bb(const gpuic_wqe_t *wqe, uint64_t seq, uint64_t published)
{
    const gpuic_wqe_ctrl_seg_t *ctrl = (const gpuic_wqe_ctrl_seg_t *)wqe;
    unsigned nbb = gpuic_wqe_ds_to_bb(gpuic_be32toh(ctrl->qpn_ds) & 0xff);

    nbb = nbb == 0 ? 1 : (nbb > GPUIC_WQE_MAX_BB ? GPUIC_WQE_MAX_BB : nbb);
    return nbb > published - seq ? (unsigned)(published - seq) : nbb;
}

/*
 * Copies the tagged block at @p seq into @p dst when every word of it carries @p tag; false
 * when one does not (not written yet, written only in part, or another block).  Each word is
 * read with acquire, so what the producer stored before its words (a staged payload, after its
 * own fence) is visible once the block is taken.
 */
static int gpuic_ring_tagged_read(const gpuic_ring_t *ring, uint64_t seq, uint32_t tag,
                                  void *dst)
{
    const uint64_t *w = ring->tagged + (seq & ring->mask) * GPUIC_RING_TAGGED_WORDS;
    uint32_t data[GPUIC_RING_TAGGED_WORDS];

    for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
        uint64_t v = gpuic_atomic_load_acquire_u64(&w[i]);

        if ((uint32_t)(v >> 32) != tag) {
            return 0;
        }
        data[i] = (uint32_t)v;
    }
    memcpy(dst, data, sizeof(data));
    return 1;
}

/* How far ahead of its read index the consumer of a tagged ring prefetches, in blocks. */
#define GPUIC_RING_PREFETCH_BB 4

/* Prefetches the tagged block at @p seq (both of its cache lines) for reading. */
static inline void gpuic_ring_prefetch(const gpuic_ring_t *ring, uint64_t seq)
{
    const char *p = (const char *)(ring->tagged + (seq & ring->mask) * GPUIC_RING_TAGGED_WORDS);

    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + 64, 0, 3);
}

/* gpuic_ring_peek_below() for a tagged ring: a block is there once all its words are. */
static unsigned gpuic_ring_peek_tagged(gpuic_ring_t *ring, uint64_t published, gpuic_wqe_t *wqe,
                                       uint64_t *seq_p)
{
    uint64_t seq = gpuic_atomic_load_relaxed_u64(&ring->cursor);
    gpuic_wqe_t next;
    unsigned nbb;

    if ((int64_t)(published - seq) <= 0) {
        return 0;
    }
    /* The producer's stores arrive from another agent (over PCIe from a GPU), so every block
     * is a cache miss: ask for the one GPUIC_RING_PREFETCH_BB ahead now, while this one is
     * read and executed (a slot not written yet costs one useless line fetch). */
    gpuic_ring_prefetch(ring, seq + GPUIC_RING_PREFETCH_BB);
    if (!gpuic_ring_tagged_read(ring, seq, gpuic_ring_tag(seq, 0), wqe->bytes)) {
        if (!gpuic_ring_tagged_read(ring, seq, gpuic_ring_tag(seq, 1), wqe->bytes)) {
            return 0; /* still on its way */
        }
        /* the rest of a WQE whose DS was too small: make sure it decodes as invalid */
        *seq_p = seq;
        memset(wqe->bytes, 0xff, GPUIC_WQE_SEG_SIZE);
        return 1;
    }
    nbb = gpuic_ring_claimed_bb(wqe, seq, published);
    for (unsigned b = 1; b < nbb; ++b) {
        if (gpuic_ring_tagged_read(ring, seq + b, gpuic_ring_tag(seq + b, 1),
                                   wqe->bytes + b * GPUIC_WQE_BB_SIZE)) {
            continue;
        }
        if (gpuic_ring_tagged_read(ring, seq + b, gpuic_ring_tag(seq + b, 0), next.bytes)) {
            nbb = b; /* the next WQE starts here: DS claimed more than was written */
            break;
        }
        return 0; /* a continuation still on its way: take the WQE once it is there */
    }
    *seq_p = seq;
    return nbb;
}

unsigned gpuic_ring_peek_below(gpuic_ring_t *ring, uint64_t published, gpuic_wqe_t *wqe,
                               uint64_t *seq_p)
{
    /* Only the consumer writes the read index, so a relaxed read of it is exact. */
    uint64_t seq = gpuic_atomic_load_relaxed_u64(&ring->cursor);
    uint64_t marker;
    unsigned nbb;

    if (ring->tagged != NULL) {
        return gpuic_ring_peek_tagged(ring, published, wqe, seq_p);
    }
    if ((int64_t)(published - seq) <= 0) {
        return 0;
    }
    marker = gpuic_ring_slot_marker(ring, seq);
    if (marker != gpuic_ring_marker(seq, 0) && marker != gpuic_ring_marker(seq, 1)) {
        return 0; /* published but not written: cannot happen with a correct producer */
    }
    gpuic_fence_doorbell_to_wqe();
    memcpy(wqe->bytes, gpuic_ring_slot(ring, seq), GPUIC_WQE_BB_SIZE);
    *seq_p = seq;
    if (marker == gpuic_ring_marker(seq, 1)) {
        /* the rest of a WQE whose DS was too small: make sure it decodes as invalid */
        memset(wqe->bytes, 0xff, GPUIC_WQE_SEG_SIZE);
        return 1;
    }
    nbb = gpuic_ring_claimed_bb(wqe, seq, published);
    for (unsigned b = 1; b < nbb; ++b) {
        if (gpuic_ring_slot_marker(ring, seq + b) != gpuic_ring_marker(seq + b, 1)) {
            nbb = b; /* the next WQE starts here: DS claimed more than was written */
            break;
        }
        memcpy(wqe->bytes + b * GPUIC_WQE_BB_SIZE, gpuic_ring_slot(ring, seq + b),
               GPUIC_WQE_BB_SIZE);
    }
    return nbb;
}

void gpuic_ring_consume(gpuic_ring_t *ring, unsigned nbb)
{
    gpuic_ring_take(ring, nbb);
    gpuic_ring_release(ring);
}

uint64_t gpuic_ring_doorbell(const gpuic_ring_t *ring)
{
    return gpuic_atomic_load_acquire_u64(&ring->doorbell);
}

uint64_t gpuic_ring_published(const gpuic_ring_t *ring)
{
    uint64_t seq;

    if (!ring->publish_by_marker) {
        return gpuic_ring_doorbell(ring);
    }
    seq = gpuic_atomic_load_relaxed_u64(&ring->cursor);
    if (ring->tagged != NULL) {
        /* the first word tells; gpuic_ring_peek_tagged() waits for the rest */
        uint64_t w = gpuic_atomic_load_relaxed_u64(
            &ring->tagged[(seq & ring->mask) * GPUIC_RING_TAGGED_WORDS]);

        return (uint32_t)(w >> 32) == gpuic_ring_tag(seq, 0) ? seq + ring->size : seq;
    }
    return gpuic_ring_slot_marker(ring, seq) == gpuic_ring_marker(seq, 0) ? seq + ring->size : seq;
}

uint64_t gpuic_ring_consumer_index(const gpuic_ring_t *ring)
{
    return gpuic_atomic_load_relaxed_u64(&ring->consumer);
}

void gpuic_ring_set_waiter(gpuic_ring_t *ring, gpuic_ring_waiter_t *waiter)
{
    __atomic_store_n(&ring->waiter, waiter, __ATOMIC_RELEASE);
}
