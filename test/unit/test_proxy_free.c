/*
 * The proxy's free index (gpuic_proxy_queue_t.free): the completion index held back at the
 * first WQE whose producer has not acknowledged its result (a get's data, an atomic's old
 * value), so that no producer reserving against it reuses that staging area before the result
 * is read:
 *  - a put completes and frees its slot; a fetch-and-add or a get completes (done passes it)
 *    but holds the free index at its slot, and WQEs after it complete without freeing;
 *  - the acknowledgement of the held WQE releases the free index up to done, and one of an
 *    earlier lap of the same slot (gpuic_ring_ack_word() of seq - size) does not;
 *  - an acknowledgement stored before the proxy takes the WQE (a producer that gave up)
 *    releases it as soon as it completes;
 *  - over several laps of the ring, with holds in every lap;
 *  - a queue with a free index but no acknowledgement array, or without a completion index, is
 *    refused.
 */
#include <stdio.h>

#include "proxy_fixture.h"

#define LEN 4096
#define SLOTS 8

static fixture_t fx;
static ring_producer_t rp; /* its idx[0] and idx[1]: the completion and free indexes */
static uint64_t *idx;
static uint64_t results[SLOTS];
static uint64_t seq_next;

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Waits (up to ~10 s) until *p reaches @p want; the value found. */
static uint64_t wait_for(const uint64_t *p, uint64_t want)
{
    for (long i = 0; i < 10000000 && load(p) < want; ++i) {
        sched_yield();
    }
    return load(p);
}

/* Gives the proxy time to move the free index (if it wrongly would). */
static void settle(void)
{
    for (int i = 0; i < 2000; ++i) {
        sched_yield();
    }
}

static void ack(uint64_t seq)
{
    ring_producer_ack(&rp, seq);
}

/* Posts a put (no result), a fetch-and-add or a get of 8 bytes into results[] at the slot's
 * index, returns its sequence number. */
enum { OP_PUT, OP_FADD, OP_GET };
static uint64_t post(int op)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    static uint64_t one = 1;
    uint64_t seq = seq_next++;
    gpuic_wqe_t w;

    if (op == OP_PUT) {
        gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)&one, 0, 8, fixture_raddr(&fx, 0, 64),
                            fx.key[0]);
    } else if (op == OP_FADD) {
        gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_FA, 1, 0,
                               (uint64_t)(uintptr_t)&results[seq % SLOTS], 0,
                               fixture_raddr(&fx, 0, 0), fx.key[0]);
    } else {
        gpuic_wqe_build_get(&w, &h, (uint64_t)(uintptr_t)&results[seq % SLOTS], 0, 8,
                            fixture_raddr(&fx, 0, 64), fx.key[0]);
    }
    CHECK(ring_producer_post(&rp, &w, 1, NULL) == seq);
    return seq;
}

/* Posts a WQE with a result and a put after it: done passes both, the free index stays at the
 * first until it is acknowledged (an acknowledgement of the slot's previous lap does not
 * count).  Returns the result. */
static uint64_t hold_then_release(int op)
{
    uint64_t r = post(op), c = post(OP_PUT), got;

    CHECK(wait_for(&idx[0], c + 1) == c + 1);
    settle();
    CHECK(load(&idx[1]) == r);
    got = results[r % SLOTS];
    __atomic_store_n(&rp.acks[r % SLOTS], gpuic_ring_ack_word(r - SLOTS), __ATOMIC_RELEASE);
    settle();
    CHECK(load(&idx[1]) == r);
    ack(r);
    CHECK(wait_for(&idx[1], c + 1) == c + 1);
    return got;
}

static void test_hold_release(void)
{
    uint64_t *counter = (uint64_t *)fixture_region(&fx, 0);
    uint64_t a, g;

    /* a put frees its slot */
    a = post(OP_PUT);
    CHECK(wait_for(&idx[0], a + 1) == a + 1);
    CHECK(wait_for(&idx[1], a + 1) == a + 1);

    /* a fetch-and-add, then a get (of the first put's word) */
    *counter = 40;
    CHECK(hold_then_release(OP_FADD) == 40);
    CHECK(hold_then_release(OP_GET) == 1);

    /* acknowledged before the proxy took it (a producer that gave up waiting) */
    ack(seq_next);
    g = post(OP_GET);
    CHECK(wait_for(&idx[0], g + 1) == g + 1);
    CHECK(wait_for(&idx[1], g + 1) == g + 1);
}

/* Several laps: in each, two atomics held until the end of the lap, then acknowledged in
 * reverse order; the free index moves only when the first of them is acknowledged. */
static void test_laps(void)
{
    uint64_t *counter = (uint64_t *)fixture_region(&fx, 0), start = *counter;
    int ok = 1;

    for (int lap = 0; lap < 5; ++lap) {
        uint64_t first = post(OP_FADD), second = post(OP_FADD), last = 0;

        for (int i = 0; i < SLOTS - 3; ++i) {
            last = post(OP_PUT);
        }
        ok &= wait_for(&idx[0], last + 1) == last + 1;
        ack(second);
        settle();
        ok &= load(&idx[1]) == first;
        ok &= results[first % SLOTS] == start + 2 * (uint64_t)lap;
        ok &= results[second % SLOTS] == start + 2 * (uint64_t)lap + 1;
        ack(first);
        ok &= wait_for(&idx[1], last + 1) == last + 1;
    }
    CHECK(ok);
    CHECK(*counter == start + 10);
}

int main(void)
{
    gpuic_proxy_queue_t q;

    CHECK(ring_producer_create(&rp, SLOTS, 9, 1));
    idx = rp.idx;
    if (!fixture_create_kind(&fx, 1, LEN, FIX_HOST_CPU_ATOMICS)) {
        CHECK(!"fixture");
        return unit_test_result("test_proxy_free");
    }
    ring_producer_queue(&rp, &q);
    q.keys = fx.keys;
    q.cmpl = fx.cmpl;
    q.acks = NULL;
    CHECK(gpuic_proxy_add(fx.proxy, &q) == GPUIC_ERR_INVALID_PARAM); /* no acks */
    q.acks = rp.acks;
    q.done = NULL;
    CHECK(gpuic_proxy_add(fx.proxy, &q) == GPUIC_ERR_INVALID_PARAM); /* no done */
    q.done = &rp.idx[0];
    CHECK(gpuic_proxy_add(fx.proxy, &q) == GPUIC_OK);
    test_hold_release();
    test_laps();
    CHECK(fixture_canaries_ok(&fx));
    fixture_destroy(&fx);
    ring_producer_destroy(&rp);
    return unit_test_result("test_proxy_free");
}
