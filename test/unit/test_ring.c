/*
 * The send-queue ring (tagged blocks, gpuic_ring.h): creation and its size checks; a block is
 * taken only once every one of its words is there, in whatever order they land, across laps;
 * a continuation still on its way holds its WQE back; a two-BB WQE across the ring's end; an
 * over-long DS stops at the next head; a stray continuation decodes as invalid.  Then many
 * producer threads (written as the device producer writes, ring_producer.h) against one
 * consumer thread on a small ring that publishes its completion index in two_bb, as the proxy
 * does: every WQE arrives exactly once, intact, and in each producer's order.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic_ring.h"
#include "ring_producer.h"
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

typedef struct producer_arg {
    ring_producer_t *rp;
    unsigned prod;
    unsigned full_seen;
} producer_arg_t;

static void *producer(void *p)
{
    producer_arg_t *a = p;
    gpuic_wqe_t w;

    for (uint32_t n = 0; n < PER_PROD; ++n) {
        unsigned nbb = build(&w, a->prod, n, 0);

        ring_producer_post(a->rp, &w, nbb, &a->full_seen);
    }
    return NULL;
}

static void test_threads(void)
{
    ring_producer_t rp;
    pthread_t th[NPROD];
    producer_arg_t args[NPROD];
    uint32_t next[NPROD] = {0};
    unsigned long delivered = 0, bad = 0, idle = 0;
    unsigned full = 0;
    unsigned long two_bb = 0; /* two-block WQEs read */
    gpuic_wqe_t out;
    gpuic_wqe_desc_t d = {0};
    uint64_t seq;

    CHECK(ring_producer_create(&rp, RING_SIZE, 1, 0));
    for (unsigned p = 0; p < NPROD; ++p) {
        args[p] = (producer_arg_t){&rp, p, 0};
        CHECK(pthread_create(&th[p], NULL, producer, &args[p]) == 0);
    }
    /* the consumer reads up to one bound per batch and hands the slots back after the batch
     * through its completion index, as the proxy does after a round: the bound stays valid
     * because no producer can write past the index plus a lap while the batch is read */
    while (delivered < (unsigned long)NPROD * PER_PROD && bad < 10) {
        uint64_t limit = gpuic_ring_published(rp.ring);
        unsigned nbb = gpuic_ring_peek(rp.ring, limit, &out, &seq);

        if (nbb == 0) {
            if (++idle % 64 == 0) {
                sched_yield();
            }
            continue;
        }
        for (; nbb != 0; nbb = gpuic_ring_peek(rp.ring, limit, &out, &seq)) {
            if (gpuic_wqe_decode(&out, nbb, &d) != GPUIC_OK || d.wqe_index != (uint16_t)seq) {
                bad++;
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
            gpuic_ring_take(rp.ring, nbb);
            two_bb += nbb > 1;
        }
        __atomic_store_n(&rp.idx[0], gpuic_ring_read_index(rp.ring), __ATOMIC_RELEASE);
    }
    for (unsigned p = 0; p < NPROD; ++p) {
        pthread_join(th[p], NULL);
        CHECK(next[p] == PER_PROD);
        full += args[p].full_seen;
    }
    CHECK(bad == 0);
    CHECK(delivered == (unsigned long)NPROD * PER_PROD);
    CHECK(two_bb > 0);
    CHECK(gpuic_ring_peek(rp.ring, gpuic_ring_published(rp.ring), &out, &seq) == 0);
    CHECK(gpuic_ring_read_index(rp.ring) / RING_SIZE > 1000); /* wrapped many times */
    printf("delivered %lu WQEs, ring wrapped %lu times, producers saw a full ring %u times\n",
           delivered, (unsigned long)(gpuic_ring_read_index(rp.ring) / RING_SIZE), full);
    ring_producer_destroy(&rp);
}

static void test_tagged(void)
{
    enum { SIZE = 8 };
    size_t len = gpuic_ring_footprint_tagged(SIZE);
    void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
    ring_producer_t rp; /* stores words only (ring_producer_store()) */
    gpuic_ring_t *ring;
    gpuic_wqe_t w, out;
    uint64_t seq = 0, got;
    unsigned nbb;

    CHECK(gpuic_ring_footprint_tagged(12) == 0);
    CHECK(gpuic_ring_footprint_tagged(1) == 0);
    CHECK(gpuic_ring_footprint_tagged((1u << 24) + 1) == 0 &&
          gpuic_ring_footprint_tagged(1u << 25) == 0);
    CHECK(gpuic_ring_create_tagged_at((char *)mem + 8, len, SIZE, 3, &ring) ==
          GPUIC_ERR_INVALID_PARAM); /* misaligned */
    CHECK(gpuic_ring_create_tagged_at(mem, len - 8, SIZE, 3, &ring) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ring_create_tagged_at(mem, len, SIZE, 3, &ring) == GPUIC_OK);
    CHECK(ring->tagged != NULL && ring->size == SIZE && ring->id == 3);
    rp.ring = ring;
    CHECK(gpuic_ring_published(ring) == 0);
    /* five laps of one-BB WQEs whose words land in two halves, the second half first */
    for (uint32_t n = 0; n < 5 * SIZE; ++n, ++seq) {
        build_small(&w, n + 100);
        ring_producer_store(&rp, seq, &w, 1, 8, 16);
        CHECK(gpuic_ring_published(ring) == seq); /* word 0 not there yet */
        CHECK(gpuic_ring_peek(ring, seq + SIZE, &out, &got) == 0);
        ring_producer_store(&rp, seq, &w, 1, 0, 1);
        CHECK(gpuic_ring_published(ring) == seq + SIZE);
        CHECK(gpuic_ring_peek(ring, seq + SIZE, &out, &got) == 0); /* words 1..7 missing */
        ring_producer_store(&rp, seq, &w, 1, 1, 8);
        nbb = gpuic_ring_peek(ring, gpuic_ring_published(ring), &out, &got);
        CHECK(nbb == 1 && got == seq && memcmp(out.bytes, w.bytes, GPUIC_WQE_BB_SIZE) == 0);
        gpuic_ring_take(ring, nbb);
    }
    /* a two-BB WQE across the ring's end: held back until its continuation is whole */
    seq = 5 * SIZE + SIZE - 1;
    while (gpuic_ring_read_index(ring) < seq) {
        build_small(&w, 7);
        ring_producer_store(&rp, gpuic_ring_read_index(ring), &w, 1, 0, 16);
        CHECK(gpuic_ring_peek(ring, gpuic_ring_published(ring), &out, &got) == 1);
        gpuic_ring_take(ring, 1);
    }
    nbb = build(&w, 1, 3, seq); /* n = 3 gives a long inline put */
    for (uint32_t n = 0; nbb < 2; ++n) {
        nbb = build(&w, 1, n, seq);
    }
    ring_producer_store(&rp, seq, &w, 1, 0, 16);
    ring_producer_store(&rp, seq, &w, nbb, 0, 15); /* every block but the last word of the last */
    CHECK(gpuic_ring_peek(ring, gpuic_ring_published(ring), &out, &got) == 0);
    ring_producer_store(&rp, seq, &w, nbb, 15, 16);
    CHECK(gpuic_ring_peek(ring, gpuic_ring_published(ring), &out, &got) == nbb);
    CHECK(got == seq && memcmp(out.bytes, w.bytes, nbb * GPUIC_WQE_BB_SIZE) == 0);
    gpuic_ring_take(ring, nbb);
    /* a DS claiming two blocks when the next slot holds the next WQE's head: one block */
    seq += nbb;
    build_small(&w, 9);
    w.bytes[7] = (uint8_t)(w.bytes[7] + 4); /* ds + 4 segments: two blocks */
    ring_producer_store(&rp, seq, &w, 1, 0, 16);
    CHECK(gpuic_ring_peek(ring, seq + 2, &out, &got) == 0); /* slot seq + 1 unwritten */
    build_small(&w, 10);
    ring_producer_store(&rp, seq + 1, &w, 1, 0, 16);
    CHECK(gpuic_ring_peek(ring, seq + 2, &out, &got) == 1 && got == seq);
    gpuic_ring_take(ring, 1);
    CHECK(gpuic_ring_peek(ring, seq + 2, &out, &got) == 1 && got == seq + 1);
    CHECK(memcmp(out.bytes, w.bytes, GPUIC_WQE_BB_SIZE) == 0);
    gpuic_ring_take(ring, 1);
    /* a stray continuation decodes as one invalid block */
    seq += 2;
    build_small(&w, 11);
    for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
        uint32_t d;

        memcpy(&d, w.bytes + 4 * i, 4);
        ring->tagged[(seq & ring->mask) * GPUIC_RING_TAGGED_WORDS + i] =
            gpuic_ring_tagged_word(gpuic_ring_tag(seq, 1), d);
    }
    CHECK(gpuic_ring_peek(ring, seq + 1, &out, &got) == 1 && got == seq);
    CHECK(out.bytes[0] == 0xff && out.bytes[GPUIC_WQE_SEG_SIZE - 1] == 0xff);
    gpuic_ring_take(ring, 1);
    CHECK(gpuic_ring_published(ring) == gpuic_ring_read_index(ring));
    free(mem);
}

int main(void)
{
    test_tagged();
    test_threads();
    return unit_test_result("test_ring");
}
