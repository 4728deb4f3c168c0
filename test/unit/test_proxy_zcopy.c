/*
 * Puts, gets and puts-with-signal whose local buffer is device memory (lkey
 * GPUIC_WQE_LKEY_DEVICE), as large device transfers post them: the proxy never loads or stores
 * that buffer itself.  A host buffer stands in for device memory and the proxy's copy function
 * is a counting memcpy, so the tests see that every byte of it went through the copy function:
 *  - into and out of regions entered as mappings of host memory (one copy per entry), and
 *    through UCX loopback (a transport without device memory: piece by piece through the
 *    proxy's bounce buffer, transfers of several pieces and odd sizes and offsets);
 *  - the data lands exactly (the region's canaries and the fake device buffer's guards
 *    intact), a put-with-signal's signal after its data;
 *  - a get into device memory leaves no result in a staging area: the free index passes it
 *    without an acknowledgement;
 *  - atomics and accumulates naming device memory are refused (the CPU would store or load
 *    it), and without a copy function every device transfer that needs one is refused with
 *    nothing written.
 * WQEs are written by a host thread as the device producer writes them (ring_producer.h).
 */
#include <stdio.h>

#include "gpuic_proxy_internal.h" /* GPUIC_PROXY_BOUNCE_BYTES */
#include "proxy_fixture.h"

#define NT 1
#define REGION (4u << 20)
#define DEV_GUARD 4096
#define DEV_LEN (REGION + 2 * DEV_GUARD)
#define DEV_CANARY 0x5a

static fixture_t fx;
static ring_producer_t rp;
static uint64_t posted_end;
static uint8_t *dev; /* stands in for device memory: guard | DEV_LEN - 2 guards | guard */
static uint64_t copy_bytes; /* bytes through fake_copy (written by the proxy thread) */

static gpuic_status_t fake_copy(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    __atomic_fetch_add(&copy_bytes, len, __ATOMIC_RELAXED);
    return GPUIC_OK;
}

/* Bytes through the copy function since the last call (read after the completion index, which
 * the proxy stores after its copies). */
static uint64_t copied(void)
{
    return __atomic_exchange_n(&copy_bytes, 0, __ATOMIC_RELAXED);
}

static uint8_t pattern(size_t i, unsigned seed)
{
    return (uint8_t)(i * 131 + seed * 17 + (i >> 11));
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; ++i) {
        p[i] = pattern(i, seed);
    }
}

static int matches(const uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != pattern(i, seed)) {
            fprintf(stderr, "byte %zu of %zu: 0x%02x, expected 0x%02x\n", i, len, p[i],
                    pattern(i, seed));
            return 0;
        }
    }
    return 1;
}

static int dev_guards_ok(void)
{
    for (size_t i = 0; i < DEV_GUARD; ++i) {
        if (dev[i] != DEV_CANARY || dev[DEV_LEN - 1 - i] != DEV_CANARY) {
            return 0;
        }
    }
    return 1;
}

/* The fake device address of byte @p off past the front guard. */
static uint64_t dev_addr(size_t off)
{
    return (uint64_t)(uintptr_t)(dev + DEV_GUARD + off);
}

/* Posts a WQE and waits for it (and every earlier one) to complete; its sequence number. */
static uint64_t post_wait(gpuic_wqe_t *w, unsigned nbb)
{
    uint64_t seq = ring_producer_post(&rp, w, nbb, NULL);

    posted_end = seq + nbb;
    CHECK(ring_producer_wait(&rp, posted_end, 30) == posted_end);
    return seq;
}

static gpuic_status_t take_error(void)
{
    gpuic_status_t status = gpuic_cmpl_error(fx.cmpl);

    __atomic_store_n(&fx.cmpl->error, 0, __ATOMIC_RELEASE);
    return status;
}

/* Whether the kind's puts and gets go through the copy function (mappings, or UCX without
 * device memory, through the bounce buffer); UCX that reaches device memory takes the fake
 * device buffer (host memory) as it is. */
static int kind_copies(fixture_kind_t kind)
{
    return kind != FIX_UCX || !gpuic_context_reaches_device_memory(fx.ctx);
}

/* A put of @p len bytes from fake device memory at @p doff to the region at @p roff, then a
 * get of it back into fake device memory at @p goff. */
static void put_get(fixture_kind_t kind, size_t len, size_t doff, size_t roff, size_t goff,
                    unsigned seed)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    gpuic_wqe_t w;

    memset(r, 0, REGION);
    fill(dev + DEV_GUARD + doff, len, seed);
    copied();
    gpuic_wqe_build_put(&w, &h, dev_addr(doff), GPUIC_WQE_LKEY_DEVICE, (uint32_t)len,
                        fixture_raddr(&fx, 0, roff), fx.key[0]);
    post_wait(&w, 1);
    CHECK(take_error() == GPUIC_OK);
    CHECK(matches(r + roff, len, seed));
    CHECK(copied() == (kind_copies(kind) ? len : 0));

    memset(dev + DEV_GUARD, 0, REGION);
    gpuic_wqe_build_get(&w, &h, dev_addr(goff), GPUIC_WQE_LKEY_DEVICE, (uint32_t)len,
                        fixture_raddr(&fx, 0, roff), fx.key[0]);
    post_wait(&w, 1);
    CHECK(take_error() == GPUIC_OK);
    CHECK(matches(dev + DEV_GUARD + goff, len, seed));
    CHECK(copied() == (kind_copies(kind) ? len : 0));
    /* no result was left in a staging area: nothing to acknowledge, the slot is free */
    CHECK(ring_producer_free(&rp) == posted_end);
    CHECK(fixture_canaries_ok(&fx) && dev_guards_ok());
}

static void test_put_signal(fixture_kind_t kind)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    size_t len = (3u << 20) / 2 + 5;
    uint64_t sig = 0;
    gpuic_wqe_t w;
    unsigned nbb;

    memset(r, 0, REGION);
    fill(dev + DEV_GUARD + 3, len, 9);
    copied();
    nbb = gpuic_wqe_build_put_signal(&w, &h, dev_addr(3), GPUIC_WQE_LKEY_DEVICE, (uint32_t)len,
                                     fixture_raddr(&fx, 0, 64), fx.key[0],
                                     fixture_raddr(&fx, 0, 0), fx.key[0], GPUIC_SIGNAL_SET, 77);
    post_wait(&w, nbb);
    CHECK(take_error() == GPUIC_OK);
    memcpy(&sig, r, 8);
    CHECK(sig == 77 && matches(r + 64, len, 9));
    CHECK(copied() == (kind_copies(kind) ? len : 0));
    CHECK(fixture_canaries_ok(&fx));
}

/* Atomics and accumulates naming device memory are refused, the target unchanged. */
static void test_refused_ops(void)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    uint64_t v = 40, got;
    gpuic_wqe_t w;

    memcpy(r, &v, 8);
    memset(dev, DEV_CANARY, DEV_LEN);
    gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_FA, 2, 0, dev_addr(0),
                           GPUIC_WQE_LKEY_DEVICE, fixture_raddr(&fx, 0, 0), fx.key[0]);
    ring_producer_ack(&rp, post_wait(&w, 1)); /* an atomic's result is held until acknowledged */
    CHECK(take_error() == GPUIC_ERR_UNSUPPORTED);
    gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_SUM, GPUIC_ACC_INT64, 1, 8, dev_addr(0),
                               GPUIC_WQE_LKEY_DEVICE, fixture_raddr(&fx, 0, 0), fx.key[0]);
    post_wait(&w, 1);
    CHECK(take_error() == GPUIC_ERR_UNSUPPORTED);
    memcpy(&got, r, 8);
    CHECK(got == 40);
    CHECK(copied() == 0);
    for (size_t i = 0; i < DEV_LEN; ++i) {
        if (dev[i] != DEV_CANARY) {
            CHECK(!"device memory written by a refused atomic");
            break;
        }
    }
}

/* Without a copy function: every device transfer that needs one is refused with nothing
 * moved (UCX that reaches device memory needs none). */
static void test_no_copy(fixture_kind_t kind)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    gpuic_status_t expect = kind_copies(kind) ? GPUIC_ERR_UNSUPPORTED : GPUIC_OK;
    uint64_t sig = 0;
    gpuic_wqe_t w;
    unsigned nbb;

    memset(r, 0, REGION);
    fill(dev + DEV_GUARD, 1u << 20, 3);
    gpuic_wqe_build_put(&w, &h, dev_addr(0), GPUIC_WQE_LKEY_DEVICE, 1u << 20,
                        fixture_raddr(&fx, 0, 0), fx.key[0]);
    post_wait(&w, 1);
    CHECK(take_error() == expect);
    nbb = gpuic_wqe_build_put_signal(&w, &h, dev_addr(0), GPUIC_WQE_LKEY_DEVICE, 1u << 20,
                                     fixture_raddr(&fx, 0, 64), fx.key[0],
                                     fixture_raddr(&fx, 0, 0), fx.key[0], GPUIC_SIGNAL_SET, 5);
    post_wait(&w, nbb);
    CHECK(take_error() == expect);
    if (expect != GPUIC_OK) {
        memcpy(&sig, r, 8);
        CHECK(sig == 0);
        for (size_t i = 0; i < REGION; ++i) {
            if (r[i] != 0) {
                CHECK(!"region written by a refused device put");
                break;
            }
        }
        fill(r, 1u << 20, 4);
        gpuic_wqe_build_get(&w, &h, dev_addr(0), GPUIC_WQE_LKEY_DEVICE, 1u << 20,
                            fixture_raddr(&fx, 0, 0), fx.key[0]);
        post_wait(&w, 1);
        CHECK(take_error() == GPUIC_ERR_UNSUPPORTED);
        CHECK(matches(dev + DEV_GUARD, 1u << 20, 3)); /* unchanged */
    }
    CHECK(fixture_canaries_ok(&fx) && dev_guards_ok());
}

static void run_kind(fixture_kind_t kind, int with_copy)
{
    if (!fixture_create_copy(&fx, NT, REGION, kind, with_copy ? fake_copy : NULL)) {
        CHECK(!"fixture");
        return;
    }
    CHECK(fixture_attach(&fx, &rp) == GPUIC_OK);
    memset(dev, DEV_CANARY, DEV_LEN);
    if (with_copy) {
        /* several bounce pieces and a short last one; sizes about the device path's
         * threshold; odd offsets everywhere */
        put_get(kind, 3 * GPUIC_PROXY_BOUNCE_BYTES + 7, 1, 3, 5, 1);
        put_get(kind, 1u << 20, 0, 0, 0, 2);
        put_get(kind, (64u << 10) - 1, 13, 4096 + 1, 8, 3);
        put_get(kind, (64u << 10) + 1, 7, 11, 2, 4);
        put_get(kind, REGION, 0, 0, 0, 5);
        test_put_signal(kind);
        test_refused_ops();
    } else {
        test_no_copy(kind);
    }
    fixture_destroy(&fx); /* the proxy first: it drains and stops */
}

int main(void)
{
    static const fixture_kind_t kinds[] = {FIX_UCX, FIX_HOST_CPU_ATOMICS};

    dev = malloc(DEV_LEN);
    CHECK(dev != NULL);
    /* with a free index: a device get must not hold it */
    CHECK(ring_producer_create(&rp, 8, 6, 1));
    for (unsigned i = 0; dev != NULL && i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
        run_kind(kinds[i], 1);
        run_kind(kinds[i], 0);
    }
    ring_producer_destroy(&rp);
    free(dev);
    return unit_test_result("test_proxy_zcopy");
}
