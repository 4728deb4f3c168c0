/*
 * The send-queue ring: wrap-around, full-ring back-pressure, multi-slot reservations, two-BB
 * WQEs across the ring's end, abandoned batches (NOPs, no hole), batched freeing (slots read
 * but not released stay unavailable to producers; a read bounded by a doorbell sample stops
 * there), waking a sleeping consumer from a host commit, and many producer threads against
 * one consumer thread on a small ring, freeing slots in batches: every WQE arrives exactly
 * once, intact, and in each producer's order.  Tagged rings (GPU producers): a block is taken
 * only once every one of its words is there, in whatever order they land, across laps; a
 * continuation still on its way holds its WQE back; an over-long DS stops at the next head.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic_ring.h"
#include "unit_test.h"

#define NPROD 4
#define PER_PROD 20000
#define RING_SIZE 16

static uint8_t payload_byte(unsigned prod, uint32_t n, unsigned i)
{
    return (uint8_t)(prod * 131 + n * 17 + i * 7 + 3);
}

/* Builds producer prod's n-th WQE: an inline put whose rkey is n and raddr the producer. */
static unsigned build(gpuic_wqe_t *w, unsigned prod, uint32_t n, uint64_t seq)
{
    uint8_t data[GPUIC_WQE_MAX_INLINE];
    uint32_t len = (n * 2654435761u >> 7) % (GPUIC_WQE_MAX_INLINE + 1);
    gpuic_wqe_hdr_t h = {(uint16_t)seq, prod, 0};

    for (uint32_t i = 0; i < len; ++i) {
        data[i] = payload_byte(prod, n, i);
    }
    return gpuic_wqe_build_put_inline(w, &h, data, len, prod, n);
}

/* A one-BB WQE: an 8-byte inline put tagged n. */
static void build_small(gpuic_wqe_t *w, uint32_t n)
{
    gpuic_wqe_hdr_t h = {0, 0, 0};
    uint64_t v = n;

    gpuic_wqe_build_put_inline(w, &h, &v, sizeof(v), 0, n);
}

static void test_single_thread(void)
{
    gpuic_ring_t *ring;
    gpuic_wqe_t w, out;
    gpuic_wqe_desc_t d;
    uint64_t start, seq, s2;
    unsigned nbb;

    CHECK(gpuic_ring_create(12, 0, &ring) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ring_create(1, 0, &ring) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ring_create(4, 7, &ring) == GPUIC_OK);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);
    CHECK(gpuic_ring_reserve(ring, 0, &start) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ring_reserve(ring, 5, &start) == GPUIC_ERR_INVALID_PARAM);

    /* wrap the 4-slot ring many times, one-BB and two-BB WQEs, some across the end */
    for (uint32_t n = 0; n < 1000; ++n) {
        nbb = build(&w, 1, n, 0);
        CHECK(gpuic_ring_reserve(ring, nbb, &start) == GPUIC_OK);
        gpuic_ring_write(ring, start, &w, nbb);
        gpuic_ring_commit(ring, start, nbb);
        CHECK(gpuic_ring_peek(ring, &out, &seq) == nbb && seq == start);
        CHECK(gpuic_wqe_decode(&out, nbb, &d) == GPUIC_OK && d.rkey == n);
        CHECK(memcmp(out.bytes, w.bytes, nbb * GPUIC_WQE_BB_SIZE) == 0);
        gpuic_ring_consume(ring, nbb);
    }
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);

    /* back-pressure: a full ring refuses, never overwrites; consuming frees space */
    CHECK(gpuic_ring_reserve(ring, 3, &start) == GPUIC_OK);
    CHECK(gpuic_ring_reserve(ring, 2, &s2) == GPUIC_ERR_NO_RESOURCE);
    CHECK(gpuic_ring_reserve(ring, 1, &s2) == GPUIC_OK && s2 == start + 3);
    CHECK(gpuic_ring_reserve(ring, 1, &s2) == GPUIC_ERR_NO_RESOURCE);
    for (unsigned i = 0; i < 3; ++i) {
        build_small(&w, 100 + i);
        gpuic_ring_write(ring, start + i, &w, 1);
    }
    gpuic_ring_commit(ring, start, 3); /* one doorbell for three WQEs */
    CHECK(gpuic_ring_doorbell(ring) == start + 3);
    build_small(&w, 103);
    gpuic_ring_write(ring, start + 3, &w, 1);
    gpuic_ring_commit(ring, start + 3, 1);
    for (unsigned i = 0; i < 4; ++i) {
        CHECK(gpuic_ring_peek(ring, &out, &seq) == 1 && seq == start + i);
        CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == 100 + i);
        if (i == 0) {
            CHECK(gpuic_ring_reserve(ring, 1, &s2) == GPUIC_ERR_NO_RESOURCE); /* not consumed */
        }
        gpuic_ring_consume(ring, 1);
    }

    /* an abandoned batch between two real WQEs becomes NOPs and the consumer moves on */
    CHECK(gpuic_ring_reserve(ring, 1, &start) == GPUIC_OK);
    CHECK(gpuic_ring_reserve(ring, 2, &s2) == GPUIC_OK);
    build_small(&w, 1);
    gpuic_ring_write(ring, start, &w, 1);
    gpuic_ring_commit(ring, start, 1);
    gpuic_ring_abandon(ring, s2, 2);
    CHECK(gpuic_ring_reserve(ring, 1, &start) == GPUIC_OK);
    build_small(&w, 2);
    gpuic_ring_write(ring, start, &w, 1);
    gpuic_ring_commit(ring, start, 1);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == 1);
    gpuic_ring_consume(ring, 1);
    for (unsigned i = 0; i < 2; ++i) {
        CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
        CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_NOP);
        gpuic_ring_consume(ring, 1);
    }
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == 2);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);

    /* a WQE whose DS claims two BBs but was written as one cannot swallow the next WQE */
    CHECK(gpuic_ring_reserve(ring, 2, &start) == GPUIC_OK);
    build_small(&w, 7);
    ((gpuic_wqe_ctrl_seg_t *)&w)->qpn_ds = gpuic_htobe32(5);
    gpuic_ring_write(ring, start, &w, 1);
    build_small(&w, 8);
    gpuic_ring_write(ring, start + 1, &w, 1);
    gpuic_ring_commit(ring, start, 2);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_ERR_INVALID_PARAM);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == 8);
    gpuic_ring_consume(ring, 1);
    /* and a two-BB WQE whose DS says one leaves a continuation slot that decodes as invalid */
    nbb = build(&w, 1, 5, 0);
    for (uint32_t n = 6; nbb != 2; ++n) {
        nbb = build(&w, 1, n, 0);
    }
    CHECK(gpuic_ring_reserve(ring, 2, &start) == GPUIC_OK);
    ((gpuic_wqe_ctrl_seg_t *)&w)->qpn_ds = gpuic_htobe32(3);
    gpuic_ring_write(ring, start, &w, 2);
    gpuic_ring_commit(ring, start, 2);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
    CHECK(gpuic_wqe_decode(&out, 1, &d) != GPUIC_OK);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);
    gpuic_ring_destroy(ring);
}

/* Posts one 8-byte inline put tagged n (one BB). */
static void post_small(gpuic_ring_t *ring, uint32_t n)
{
    gpuic_wqe_t w;
    uint64_t start = 0;

    build_small(&w, n);
    CHECK(gpuic_ring_reserve(ring, 1, &start) == GPUIC_OK);
    gpuic_ring_write(ring, start, &w, 1);
    gpuic_ring_commit(ring, start, 1);
}

static void test_batched_release(void)
{
    gpuic_ring_t *ring;
    gpuic_wqe_t out;
    gpuic_wqe_desc_t d;
    uint64_t seq, limit, s2;

    CHECK(gpuic_ring_create(4, 3, &ring) == GPUIC_OK);
    for (uint32_t n = 0; n < 3; ++n) {
        post_small(ring, n);
    }
    limit = gpuic_ring_doorbell(ring);
    post_small(ring, 3); /* published after the sample: not part of this batch */
    for (uint32_t n = 0; n < 3; ++n) {
        CHECK(gpuic_ring_peek_below(ring, limit, &out, &seq) == 1 && seq == n);
        CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == n);
        gpuic_ring_take(ring, 1);
        CHECK(gpuic_ring_read_index(ring) == n + 1);
    }
    CHECK(gpuic_ring_peek_below(ring, limit, &out, &seq) == 0);
    /* read, not released: producers still see a full ring, and nothing was overwritten */
    CHECK(gpuic_ring_consumer_index(ring) == 0);
    CHECK(gpuic_ring_reserve(ring, 1, &s2) == GPUIC_ERR_NO_RESOURCE);
    gpuic_ring_release(ring);
    CHECK(gpuic_ring_consumer_index(ring) == 3);
    CHECK(gpuic_ring_reserve(ring, 3, &s2) == GPUIC_OK && s2 == 4);
    gpuic_ring_abandon(ring, s2, 3);
    /* the unbounded peek sees the WQE published after the sample, then the NOPs */
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 1 && seq == 3);
    CHECK(gpuic_wqe_decode(&out, 1, &d) == GPUIC_OK && d.rkey == 3);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_consumer_index(ring) == 4 && gpuic_ring_read_index(ring) == 4);
    for (unsigned i = 0; i < 3; ++i) {
        CHECK(gpuic_ring_peek(ring, &out, &seq) == 1);
        gpuic_ring_take(ring, 1);
    }
    gpuic_ring_release(ring);
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);
    CHECK(gpuic_ring_consumer_index(ring) == 7);
    gpuic_ring_destroy(ring);
}

/* A consumer's waiter that counts wake-ups. */
typedef struct {
    gpuic_ring_waiter_t w;
    unsigned wakes;
} test_waiter_t;

static void test_waiter_wake(gpuic_ring_waiter_t *w)
{
    ((test_waiter_t *)w)->wakes++;
    __atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
}

static void test_notify(void)
{
    gpuic_ring_t *ring;
    test_waiter_t tw = {{0, 0, test_waiter_wake}, 0};
    uint64_t seq;
    gpuic_wqe_t out;

    CHECK(gpuic_ring_create(8, 4, &ring) == GPUIC_OK);
    post_small(ring, 0); /* no waiter: nothing to wake */
    gpuic_ring_set_waiter(ring, &tw.w);
    post_small(ring, 1); /* consumer awake: no wake-up */
    CHECK(tw.wakes == 0);
    for (unsigned fence = 0; fence < 2; ++fence) {
        tw.w.producer_fence = fence;
        tw.w.sleeping = 1;
        post_small(ring, 2 + fence); /* every host commit wakes a sleeping consumer */
        CHECK(tw.wakes == fence + 1 && tw.w.sleeping == 0);
    }
    gpuic_ring_set_waiter(ring, NULL);
    tw.w.sleeping = 1;
    post_small(ring, 4);
    CHECK(tw.wakes == 2);
    for (unsigned i = 0; i < 5; ++i) {
        CHECK(gpuic_ring_peek(ring, &out, &seq) == 1 && seq == i);
        gpuic_ring_consume(ring, 1);
    }
    gpuic_ring_destroy(ring);
}

typedef struct {
    gpuic_ring_t *ring;
    unsigned prod;
    unsigned full_seen;
} producer_arg_t;

static void *producer(void *p)
{
    producer_arg_t *a = p;
    uint32_t n = 0, rnd = a->prod * 7919 + 1;
    gpuic_wqe_t w[3];
    unsigned nbb[3];

    while (n < PER_PROD) {
        /* batches of 1..3 WQEs under one reservation and one doorbell */
        unsigned k = 1 + (rnd >> 8) % 3, total = 0, abandon;
        uint64_t start = 0;

        rnd = rnd * 1103515245u + 12345u;
        abandon = (rnd >> 16) % 16 == 0;
        if (k > PER_PROD - n) {
            k = PER_PROD - n;
        }
        for (unsigned i = 0; i < k; ++i) {
            nbb[i] = build(&w[i], a->prod, n + i, 0);
            total += nbb[i];
        }
        while (gpuic_ring_reserve(a->ring, total, &start) == GPUIC_ERR_NO_RESOURCE) {
            a->full_seen++;
            sched_yield();
        }
        if (abandon) {
            gpuic_ring_abandon(a->ring, start, total);
            continue; /* the same WQEs are retried in a later batch */
        }
        for (unsigned i = 0, off = 0; i < k; off += nbb[i], ++i) {
            /* the WQE index field is the slot's sequence number */
            ((gpuic_wqe_ctrl_seg_t *)&w[i])->opmod_idx_opcode = gpuic_htobe32(
                ((uint32_t)(uint16_t)(start + off) << 8) | GPUIC_WQE_OP_RDMA_WRITE);
            gpuic_ring_write(a->ring, start + off, &w[i], nbb[i]);
        }
        gpuic_ring_commit(a->ring, start, total);
        n += k;
    }
    return NULL;
}

static void test_threads(void)
{
    gpuic_ring_t *ring;
    pthread_t th[NPROD];
    producer_arg_t args[NPROD];
    uint32_t next[NPROD] = {0};
    unsigned long delivered = 0, nops = 0, bad = 0, idle = 0;
    unsigned full = 0;
    gpuic_wqe_t out;
    gpuic_wqe_desc_t d;
    uint64_t seq;

    CHECK(gpuic_ring_create(RING_SIZE, 1, &ring) == GPUIC_OK);
    for (unsigned p = 0; p < NPROD; ++p) {
        args[p] = (producer_arg_t){ring, p, 0};
        CHECK(pthread_create(&th[p], NULL, producer, &args[p]) == 0);
    }
    /* the consumer reads each batch up to one doorbell sample and frees slots three at a
     * time, as the proxy does */
    while (delivered < (unsigned long)NPROD * PER_PROD && bad < 10) {
        uint64_t limit = gpuic_ring_doorbell(ring);
        unsigned nbb = gpuic_ring_peek_below(ring, limit, &out, &seq), taken = 0;

        if (nbb == 0) {
            if (++idle % 64 == 0) {
                sched_yield();
            }
            continue;
        }
        for (; nbb != 0; nbb = gpuic_ring_peek_below(ring, limit, &out, &seq)) {
            if (gpuic_wqe_decode(&out, nbb, &d) != GPUIC_OK || d.wqe_index != (uint16_t)seq) {
                bad++;
            } else if (d.opcode == GPUIC_WQE_OP_NOP) {
                nops++;
            } else if (d.raddr >= NPROD || d.rkey != next[d.raddr]) {
                bad++; /* lost, duplicated or reordered */
            } else {
                for (uint32_t i = 0; i < d.len; ++i) {
                    if (d.inline_data[i] != payload_byte((unsigned)d.raddr, d.rkey, i)) {
                        bad++;
                        break;
                    }
                }
                next[d.raddr]++;
                delivered++;
            }
            gpuic_ring_take(ring, nbb);
            if ((taken += nbb) >= 3) {
                gpuic_ring_release(ring);
                taken = 0;
            }
        }
        gpuic_ring_release(ring);
    }
    for (unsigned p = 0; p < NPROD; ++p) {
        pthread_join(th[p], NULL);
        CHECK(next[p] == PER_PROD);
        full += args[p].full_seen;
    }
    CHECK(bad == 0);
    CHECK(delivered == (unsigned long)NPROD * PER_PROD);
    CHECK(nops > 0); /* some batches were abandoned */
    CHECK(gpuic_ring_peek(ring, &out, &seq) == 0);
    CHECK(gpuic_ring_consumer_index(ring) / RING_SIZE > 1000); /* wrapped many times */
    printf("delivered %lu WQEs, %lu NOPs, ring wrapped %lu times, producers saw a full ring "
           "%u times\n", delivered, nops, (unsigned long)(gpuic_ring_consumer_index(ring) /
           RING_SIZE), full);
    gpuic_ring_destroy(ring);
}

/* Producer side of a tagged ring: stores words [from, to) of the nbb blocks of w at seq. */
static void tagged_store(gpuic_ring_t *ring, uint64_t seq, const gpuic_wqe_t *w, unsigned nbb,
                         unsigned from, unsigned to)
{
    for (unsigned b = 0; b < nbb; ++b) {
        uint64_t *dst = ring->tagged + ((seq + b) & ring->mask) * GPUIC_RING_TAGGED_WORDS;
        uint32_t data[GPUIC_RING_TAGGED_WORDS];

        memcpy(data, w->bytes + b * GPUIC_WQE_BB_SIZE, sizeof(data));
        for (unsigned i = from; i < to && i < GPUIC_RING_TAGGED_WORDS; ++i) {
            dst[i] = gpuic_ring_tagged_word(gpuic_ring_tag(seq + b, b != 0), data[i]);
        }
    }
}

static void test_tagged(void)
{
    enum { SIZE = 8 };
    size_t len = gpuic_ring_footprint_tagged(SIZE);
    void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
    gpuic_ring_t *ring;
    gpuic_wqe_t w, out;
    uint64_t seq = 0, got;
    unsigned nbb;

    CHECK(gpuic_ring_footprint_tagged(12) == 0);
    CHECK(gpuic_ring_create_tagged_at(mem, len - 8, SIZE, 3, &ring) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ring_create_tagged_at(mem, len, SIZE, 3, &ring) == GPUIC_OK);
    CHECK(ring->tagged != NULL && ring->publish_by_marker);
    CHECK(gpuic_ring_published(ring) == 0);
    /* five laps of one-BB WQEs whose words land in two halves, the second half first */
    for (uint32_t n = 0; n < 5 * SIZE; ++n, ++seq) {
        build_small(&w, n + 100);
        tagged_store(ring, seq, &w, 1, 8, 16);
        CHECK(gpuic_ring_published(ring) == seq); /* word 0 not there yet */
        CHECK(gpuic_ring_peek_below(ring, seq + SIZE, &out, &got) == 0);
        tagged_store(ring, seq, &w, 1, 0, 1);
        CHECK(gpuic_ring_published(ring) == seq + SIZE);
        CHECK(gpuic_ring_peek_below(ring, seq + SIZE, &out, &got) == 0); /* words 1..7 missing */
        tagged_store(ring, seq, &w, 1, 1, 8);
        nbb = gpuic_ring_peek_below(ring, gpuic_ring_published(ring), &out, &got);
        CHECK(nbb == 1 && got == seq && memcmp(out.bytes, w.bytes, GPUIC_WQE_BB_SIZE) == 0);
        gpuic_ring_consume(ring, nbb);
    }
    /* a two-BB WQE across the ring's end: held back until its continuation is whole */
    seq = 5 * SIZE + SIZE - 1;
    while (gpuic_ring_read_index(ring) < seq) {
        build_small(&w, 7);
        tagged_store(ring, gpuic_ring_read_index(ring), &w, 1, 0, 16);
        CHECK(gpuic_ring_peek_below(ring, gpuic_ring_published(ring), &out, &got) == 1);
        gpuic_ring_consume(ring, 1);
    }
    nbb = build(&w, 1, 3, seq); /* n = 3 gives a long inline put */
    for (uint32_t n = 0; nbb < 2; ++n) {
        nbb = build(&w, 1, n, seq);
    }
    tagged_store(ring, seq, &w, 1, 0, 16);
    tagged_store(ring, seq, &w, nbb, 0, 15); /* every block but the last word of the last */
    CHECK(gpuic_ring_peek_below(ring, gpuic_ring_published(ring), &out, &got) == 0);
    tagged_store(ring, seq, &w, nbb, 15, 16);
    CHECK(gpuic_ring_peek_below(ring, gpuic_ring_published(ring), &out, &got) == nbb);
    CHECK(got == seq && memcmp(out.bytes, w.bytes, nbb * GPUIC_WQE_BB_SIZE) == 0);
    gpuic_ring_consume(ring, nbb);
    /* a DS claiming two blocks when the next slot holds the next WQE's head: one block */
    seq += nbb;
    build_small(&w, 9);
    w.bytes[7] = (uint8_t)(w.bytes[7] + 4); /* ds + 4 segments: two blocks */
    tagged_store(ring, seq, &w, 1, 0, 16);
    CHECK(gpuic_ring_peek_below(ring, seq + 2, &out, &got) == 0); /* slot seq + 1 unwritten */
    build_small(&w, 10);
    tagged_store(ring, seq + 1, &w, 1, 0, 16);
    CHECK(gpuic_ring_peek_below(ring, seq + 2, &out, &got) == 1 && got == seq);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_peek_below(ring, seq + 2, &out, &got) == 1 && got == seq + 1);
    CHECK(memcmp(out.bytes, w.bytes, GPUIC_WQE_BB_SIZE) == 0);
    gpuic_ring_consume(ring, 1);
    /* a stray continuation decodes as one invalid block */
    seq += 2;
    build_small(&w, 11);
    for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
        uint32_t d;

        memcpy(&d, w.bytes + 4 * i, 4);
        ring->tagged[(seq & ring->mask) * GPUIC_RING_TAGGED_WORDS + i] =
            gpuic_ring_tagged_word(gpuic_ring_tag(seq, 1), d);
    }
    CHECK(gpuic_ring_peek_below(ring, seq + 1, &out, &got) == 1 && got == seq);
    CHECK(out.bytes[0] == 0xff && out.bytes[GPUIC_WQE_SEG_SIZE - 1] == 0xff);
    gpuic_ring_consume(ring, 1);
    CHECK(gpuic_ring_published(ring) == gpuic_ring_read_index(ring));
    gpuic_ring_destroy(ring);
    free(mem);
}

int main(void)
{
    test_tagged();
    test_single_thread();
    test_batched_release();
    test_notify();
    test_threads();
    return unit_test_result("test_ring");
}
