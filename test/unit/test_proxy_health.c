/*
 * Waiters on the proxy's completions when the proxy cannot complete their work:
 *  1. the proxy thread dies (test fault: it returns without draining) with a WQE posted: the
 *     flush returns GPUIC_ERR_ENGINE_FAILED instead of waiting out its 10 s bound;
 *  2. the proxy thread hangs (heartbeat standing still) with a WQE posted: the flush returns
 *     GPUIC_ERR_ENGINE_FAILED after the context's timeout; once the thread runs again the
 *     WQE completes and its data arrives;
 *  3. a producer reserves a slot, counts it posted and does not commit (stuck queue): the
 *     flush returns GPUIC_ERR_QUEUE_STUCK after the timeout; once the producer publishes,
 *     the flush completes and the data arrives;
 *  4. a healthy proxy idle for longer than the timeout is not taken for a failed one;
 *  5. a round whose flush never completes (test fault: a transport that lost its peer) at
 *     gpuic_proxy_remove(): the removal gives up after the context's timeout with
 *     GPUIC_ERR_TIMED_OUT and leaves the ring attached; once flushes complete again the
 *     removal succeeds and the data is there.
 * Every bound is the wait's own timeout: a missed detection fails as GPUIC_ERR_TIMED_OUT.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "gpuic_proxy_internal.h"
#include "proxy_fixture.h"

#define WAIT_BOUND_NS 10000000000ull /* far above the 0.3 s timeout below */
#define STALL_S 0.3

static void put_wqe(fixture_t *f, gpuic_wqe_t *w, uint64_t *value, size_t off)
{
    gpuic_wqe_hdr_t h = {0, 0, 0};

    gpuic_wqe_build_put_inline(w, &h, value, 8, fixture_raddr(f, 0, off), f->key[0]);
}

static uint64_t read_region(fixture_t *f, size_t off)
{
    uint64_t got;

    memcpy(&got, fixture_region(f, 0) + off, 8);
    return got;
}

/* A fixture with one ring attached, the context's timeout set first (the proxy's stall time). */
static int setup(fixture_t *f, gpuic_ring_t **ring, double timeout_s)
{
    gpuic_proxy_queue_t q = {0};

    if (!fixture_create(f, 1, 4096)) {
        return 0;
    }
    gpuic_context_set_timeout(f->ctx, timeout_s);
    CHECK(gpuic_ring_create(16, 30, ring) == GPUIC_OK);
    q.ring = *ring;
    q.keys = f->keys;
    q.cmpl = f->cmpl;
    CHECK(gpuic_proxy_add(f->proxy, &q) == GPUIC_OK);
    return 1;
}

static void teardown(fixture_t *f, gpuic_ring_t *ring)
{
    fixture_destroy(f);
    gpuic_ring_destroy(ring);
}

static void test_dead_proxy(void)
{
    fixture_t f;
    gpuic_ring_t *ring;
    gpuic_wqe_t w;
    uint64_t v = 0x1234;

    /* no timeout: an exited thread is detected without one */
    if (!setup(&f, &ring, 0)) {
        CHECK(!"fixture");
        return;
    }
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_EXIT);
    put_wqe(&f, &w, &v, 0);
    fixture_post(&f, ring, &w, 1, 0, NULL);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) ==
          GPUIC_ERR_ENGINE_FAILED);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_LOCAL, WAIT_BOUND_NS) ==
          GPUIC_ERR_ENGINE_FAILED);
    CHECK(read_region(&f, 0) == 0); /* nothing executed it */
    teardown(&f, ring);
}

static void test_hung_proxy(void)
{
    fixture_t f;
    gpuic_ring_t *ring;
    gpuic_wqe_t w;
    uint64_t v = 0x5678;

    if (!setup(&f, &ring, STALL_S)) {
        CHECK(!"fixture");
        return;
    }
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_HANG);
    put_wqe(&f, &w, &v, 8);
    fixture_post(&f, ring, &w, 1, 0, NULL);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) ==
          GPUIC_ERR_ENGINE_FAILED);
    CHECK(read_region(&f, 8) == 0);
    /* the thread comes back: the work completes after all */
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_NONE);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) == GPUIC_OK);
    CHECK(read_region(&f, 8) == v);
    teardown(&f, ring);
}

static void test_stuck_queue(void)
{
    fixture_t f;
    gpuic_ring_t *ring;
    gpuic_wqe_t w;
    uint64_t v = 0x9abc, seq = 0;

    if (!setup(&f, &ring, STALL_S)) {
        CHECK(!"fixture");
        return;
    }
    /* a producer that stops between reserve and commit */
    CHECK(gpuic_ring_reserve(ring, 1, &seq) == GPUIC_OK);
    gpuic_cmpl_post(f.cmpl, 0, 1);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) ==
          GPUIC_ERR_QUEUE_STUCK);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_LOCAL, WAIT_BOUND_NS) == GPUIC_ERR_QUEUE_STUCK);
    /* it resumes: writes and publishes its WQE, which completes */
    put_wqe(&f, &w, &v, 16);
    ((gpuic_wqe_ctrl_seg_t *)&w)->opmod_idx_opcode =
        gpuic_htobe32((gpuic_be32toh(((gpuic_wqe_ctrl_seg_t *)&w)->opmod_idx_opcode) &
                       0xff0000ffu) | ((uint32_t)(uint16_t)seq << 8));
    gpuic_ring_write(ring, seq, &w, 1);
    gpuic_ring_commit(ring, seq, 1);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) == GPUIC_OK);
    CHECK(read_region(&f, 16) == v);
    teardown(&f, ring);
}

static void test_idle_is_not_stalled(void)
{
    fixture_t f;
    gpuic_ring_t *ring;
    gpuic_wqe_t w;
    uint64_t v = 0xdef0;
    struct timespec idle = {0, 600000000}; /* twice the timeout */

    if (!setup(&f, &ring, STALL_S)) {
        CHECK(!"fixture");
        return;
    }
    nanosleep(&idle, NULL);
    put_wqe(&f, &w, &v, 24);
    fixture_post(&f, ring, &w, 1, 0, NULL);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) == GPUIC_OK);
    CHECK(read_region(&f, 24) == v);
    CHECK(fixture_canaries_ok(&f));
    teardown(&f, ring);
}

static void test_remove_unflushed(void)
{
    fixture_t f;
    gpuic_ring_t *ring;
    gpuic_wqe_t w;
    uint64_t v = 0x7777;
    struct timespec t0, t1;
    double took;

    if (!setup(&f, &ring, STALL_S)) {
        CHECK(!"fixture");
        return;
    }
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_UNFLUSHED);
    put_wqe(&f, &w, &v, 16);
    fixture_post(&f, ring, &w, 1, 0, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(gpuic_proxy_remove(f.proxy, ring) == GPUIC_ERR_TIMED_OUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(took >= STALL_S * 0.9 && took < 10 * STALL_S + 5);
    /* not completed, so not reported complete */
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, 1000000ull) != GPUIC_OK);
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_NONE);
    CHECK(gpuic_proxy_remove(f.proxy, ring) == GPUIC_OK);
    CHECK(gpuic_cmpl_wait(f.cmpl, 0, GPUIC_CMPL_REMOTE, WAIT_BOUND_NS) == GPUIC_OK);
    CHECK(read_region(&f, 16) == v);
    CHECK(gpuic_proxy_remove(f.proxy, ring) == GPUIC_ERR_INVALID_PARAM);
    fixture_destroy(&f);
    gpuic_ring_destroy(ring);
}

int main(void)
{
    test_dead_proxy();
    test_hung_proxy();
    test_stuck_queue();
    test_idle_is_not_stalled();
    test_remove_unflushed();
    return unit_test_result("test_proxy_health");
}
