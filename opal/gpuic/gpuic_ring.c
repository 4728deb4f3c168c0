#include "gpuic_ring.h"

#include <string.h>

#include "gpuic_log.h"

static int gpuic_ring_size_valid(uint32_t size)
{
    return size >= 2 && size <= (1u << 24) && (size & (size - 1)) == 0;
}

/* Offset of the tagged blocks in a block from gpuic_ring_create_tagged_at(). */
static size_t gpuic_ring_tagged_offset(void)
{
    return (sizeof(gpuic_ring_t) + GPUIC_WQE_BB_SIZE - 1) & ~(size_t)(GPUIC_WQE_BB_SIZE - 1);
}

size_t gpuic_ring_footprint_tagged(uint32_t size)
{
    if (!gpuic_ring_size_valid(size)) {
        return 0;
    }
    return gpuic_ring_tagged_offset() + (size_t)size * GPUIC_RING_TAGGED_WORDS * sizeof(uint64_t);
}

gpuic_status_t gpuic_ring_create_tagged_at(void *mem, size_t len, uint32_t size, uint32_t id,
                                           gpuic_ring_t **ring_p)
{
    gpuic_ring_t *ring = mem;
    size_t need = gpuic_ring_footprint_tagged(size);

    if (need == 0 || mem == NULL || len < need || ((uintptr_t)mem & 63) != 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "ring of %u slots does not fit %zu bytes at %p", size, len,
                  mem);
        return GPUIC_ERR_INVALID_PARAM;
    }
    /* every word 0 (no tag of a first lap), the read index 0 */
    memset(mem, 0, need);
    ring->tagged = (uint64_t *)((char *)mem + gpuic_ring_tagged_offset());
    ring->size = size;
    ring->mask = size - 1;
    ring->id = id;
    *ring_p = ring;
    return GPUIC_OK;
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

/* How far ahead of its read index the consumer of a tagged ring prefetches, in blocks: eight
 * two-block entries, so that a block a GPU wrote (a miss to memory) is asked for several
 * entries' work before it is read. */
#define GPUIC_RING_PREFETCH_BB 16

/* Prefetches the tagged block at @p seq (both of its cache lines) for reading. */
static inline void gpuic_ring_prefetch(const gpuic_ring_t *ring, uint64_t seq)
{
    const char *p = (const char *)(ring->tagged + (seq & ring->mask) * GPUIC_RING_TAGGED_WORDS);

    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + 64, 0, 3);
}

/* A block is there once all its words are. */
unsigned gpuic_ring_peek(gpuic_ring_t *ring, uint64_t published, gpuic_wqe_t *wqe,
                         uint64_t *seq_p)
{
    /* Only the consumer writes the read index, so a relaxed read of it is exact. */
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
    /* the blocks after the one asked for above, so that a lap of multi-block WQEs has every
     * block asked for once, not one block per WQE */
    for (unsigned b = 1; b < nbb; ++b) {
        gpuic_ring_prefetch(ring, seq + b + GPUIC_RING_PREFETCH_BB);
    }
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

uint64_t gpuic_ring_published(const gpuic_ring_t *ring)
{
    uint64_t seq = gpuic_atomic_load_relaxed_u64(&ring->cursor);
    /* the first word tells; gpuic_ring_peek() waits for the rest */
    uint64_t w = gpuic_atomic_load_relaxed_u64(
        &ring->tagged[(seq & ring->mask) * GPUIC_RING_TAGGED_WORDS]);

    return (uint32_t)(w >> 32) == gpuic_ring_tag(seq, 0) ? seq + ring->size : seq;
}
