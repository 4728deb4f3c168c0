/*
 * Removing a queue whose work cannot complete: a round whose flush never completes (test
 * fault: a transport that lost its peer) at gpuic_proxy_remove().  The removal gives up after
 * the context's timeout with GPUIC_ERR_TIMED_OUT and leaves the ring attached, the queue's
 * completion index where it was; once flushes complete again the removal succeeds, the index
 * covers the WQE and its data is there.  A second removal is refused.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "gpuic_proxy_internal.h"
#include "proxy_fixture.h"

#define STALL_S 0.3

static uint64_t read_region(fixture_t *f, size_t off)
{
    uint64_t got;

    memcpy(&got, fixture_region(f, 0) + off, 8);
    return got;
}

static void test_remove_unflushed(void)
{
    fixture_t f;
    ring_producer_t rp;
    gpuic_wqe_t w;
    gpuic_wqe_hdr_t h = {0, 0, 0};
    uint64_t v = 0x7777, seq;
    struct timespec t0, t1;
    double took;

    if (!fixture_create(&f, 1, 4096) || !ring_producer_create(&rp, 16, 30, 0)) {
        CHECK(!"fixture");
        return;
    }
    gpuic_context_set_timeout(f.ctx, STALL_S);
    CHECK(fixture_attach(&f, &rp) == GPUIC_OK);
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_UNFLUSHED);
    gpuic_wqe_build_put_inline(&w, &h, &v, 8, fixture_raddr(&f, 0, 16), f.key[0]);
    seq = ring_producer_post(&rp, &w, 1, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(gpuic_proxy_remove(f.proxy, rp.ring) == GPUIC_ERR_TIMED_OUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(took >= STALL_S * 0.9 && took < 10 * STALL_S + 5);
    /* not completed, so not reported complete */
    CHECK(ring_producer_done(&rp) == seq);
    gpuic_proxy_test_fault(f.proxy, GPUIC_PROXY_FAULT_NONE);
    CHECK(gpuic_proxy_remove(f.proxy, rp.ring) == GPUIC_OK);
    CHECK(ring_producer_done(&rp) == seq + 1);
    CHECK(read_region(&f, 16) == v);
    CHECK(gpuic_proxy_remove(f.proxy, rp.ring) == GPUIC_ERR_INVALID_PARAM);
    CHECK(fixture_canaries_ok(&f));
    fixture_destroy(&f);
    ring_producer_destroy(&rp);
}

int main(void)
{
    test_remove_unflushed();
    return unit_test_result("test_proxy_remove");
}
