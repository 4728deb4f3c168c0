/*
 * Proxy operations and validation through UCX loopback:
 *  - invalid WQEs (bad key index, stale generation, key of another target, out of range
 *    before/after/overflowing, unknown opcode, malformed, over the length limit, unsupported
 *    accumulate) complete with the right error in the window's error word (first error
 *    wins), count as failed, move the completion index past them and write no memory: the
 *    region and its canaries are unchanged; a WQE naming no target of the window holds up
 *    nothing after it;
 *  - key table rules on their own (generation bump, reuse, bounds, full table);
 *  - get, fetch-and-add, compare-and-swap, accumulates (native and CAS-loop), put-with-signal;
 *  - entries of several 8-byte puts (PUT8_MULTI): made through mappings, none of them made
 *    when one is out of range, refused over UCX;
 *  - all of it again with the regions entered as mappings of host memory (data by CPU copies;
 *    atomics by CPU atomics, or by UCX), where validation must refuse exactly the same WQEs;
 *    and a mapping with no atomic at all, where atomics, accumulates and signal adds are
 *    refused without writing anything;
 *  - UCX puts whose local and remote bytes continue each other's go as one UCX put;
 *  - and once more with the regions entered as device memory reached through UCX, where
 *    atomics, accumulates and signal adds are remote calls (gpuic_call.h) that a CPU handler
 *    of the target context executes: same results, and the handler saw them; a
 *    put-with-signal there is one call up to GPUIC_CALL_ATOMIC_INLINE bytes, a put, a flush
 *    and a signal call beyond, and the same where the target refuses the call.
 * WQEs are written by a host thread as the device producer writes them (ring_producer.h).
 */
#include <float.h>
#include <stdio.h>

#include "proxy_fixture.h"

#define NT 2
#define LEN 4096

static fixture_t fx;
static ring_producer_t rp;
static uint64_t posted_end; /* the sequence number after the last WQE posted */

static void post(gpuic_wqe_t *w, unsigned nbb, unsigned t)
{
    (void)t; /* the target is in the WQE */
    posted_end = ring_producer_post(&rp, w, nbb, NULL) + nbb;
}

/* Waits until the completion index covers every WQE posted. */
static void wait_all(void)
{
    CHECK(ring_producer_wait(&rp, posted_end, 10) == posted_end);
}

/* The window's error word (GPUIC_OK: none), cleared for what follows. */
static gpuic_status_t take_error(void)
{
    gpuic_status_t status = gpuic_cmpl_error(fx.cmpl);

    __atomic_store_n(&fx.cmpl->error, 0, __ATOMIC_RELEASE);
    return status;
}

/* The WQE just posted completes with @p expect in the error word. */
static void check_error(const char *what, gpuic_status_t expect)
{
    gpuic_status_t got;

    wait_all();
    got = take_error();
    if (got != expect) {
        fprintf(stderr, "case '%s': error %d (%s), expected %s\n", what, got,
                gpuic_status_string(got), gpuic_status_string(expect));
        CHECK(got == expect);
    }
}

static void test_keytable(void)
{
    gpuic_keytable_t *kt, *kt2;
    gpuic_keytable_entry_t e = {(gpuic_ep_t *)1, (gpuic_rkey_t *)1, 1000, 100, 0};
    const gpuic_keytable_entry_t *found;
    uint32_t k1, k2, k3, k_other;

    CHECK(gpuic_keytable_create(0, &kt) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_keytable_create(3, &kt) == GPUIC_OK);
    CHECK(gpuic_keytable_create(3, &kt2) == GPUIC_OK);
    CHECK(gpuic_keytable_insert(kt, &e, &k1) == GPUIC_OK);
    CHECK(gpuic_keytable_insert(kt2, &e, &k_other) == GPUIC_OK);
    CHECK(gpuic_keytable_lookup(kt, k1, 1000, 100, &found) == GPUIC_OK && found->base == 1000);
    CHECK(gpuic_keytable_lookup(kt, k1, 1100, 0, &found) == GPUIC_OK);
    CHECK(gpuic_keytable_lookup(kt, k1, 1001, 100, &found) == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(gpuic_keytable_lookup(kt, k1, 999, 1, &found) == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(gpuic_keytable_lookup(kt, k1, 1050, UINT64_MAX, &found) == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(gpuic_keytable_lookup(kt, k1, UINT64_MAX, 2, &found) == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(gpuic_keytable_lookup(kt, k1 ^ 2, 1000, 1, &found) == GPUIC_ERR_BAD_KEY); /* slot 2 */
    CHECK(gpuic_keytable_lookup(kt, (k1 & ~3u) | 3, 1000, 1, &found) == GPUIC_ERR_BAD_KEY);
    CHECK(gpuic_keytable_remove(kt, k1) == GPUIC_OK);
    CHECK(gpuic_keytable_remove(kt, k1) == GPUIC_ERR_BAD_KEY);
    CHECK(gpuic_keytable_lookup(kt, k1, 1000, 1, &found) == GPUIC_ERR_BAD_KEY);
    CHECK(gpuic_keytable_insert(kt, &e, &k2) == GPUIC_OK); /* same slot, new generation */
    CHECK((k2 & 3) == (k1 & 3) && k2 != k1);
    CHECK(gpuic_keytable_lookup(kt, k1, 1000, 1, &found) == GPUIC_ERR_BAD_KEY);
    CHECK(gpuic_keytable_lookup(kt, k2, 1000, 1, &found) == GPUIC_OK);
    CHECK(gpuic_keytable_insert(kt, &e, &k3) == GPUIC_OK);
    CHECK(gpuic_keytable_insert(kt, &e, &k3) == GPUIC_OK);
    CHECK(gpuic_keytable_insert(kt, &e, &k3) == GPUIC_ERR_NO_RESOURCE);
    e.base = UINT64_MAX - 10;
    CHECK(gpuic_keytable_insert(kt2, &e, &k3) == GPUIC_ERR_INVALID_PARAM);
    /* random initial generations: another table's key is (almost surely) not valid here */
    if (k_other != k2) {
        CHECK(gpuic_keytable_lookup(kt, k_other, 1000, 1, &found) == GPUIC_ERR_BAD_KEY);
    }
    gpuic_keytable_destroy(kt);
    gpuic_keytable_destroy(kt2);
}

static void test_invalid(void)
{
    const gpuic_wqe_hdr_t h0 = {0, 0, 0}, h1 = {0, 1, 0};
    uint8_t before[LEN];
    uint64_t v = 0xdeadbeefdeadbeefULL, stale_key;
    gpuic_keytable_entry_t e = {0};
    const gpuic_keytable_entry_t *found;
    gpuic_cmpl_counter_t c0, c;
    gpuic_wqe_t w;
    static uint8_t src[LEN + 64];
    unsigned n = 0, failures0;

    /* a stale key: insert a second region for target 0, then remove it */
    CHECK(gpuic_keytable_lookup(fx.keys, fx.key[0], fixture_raddr(&fx, 0, 0), 1, &found) ==
          GPUIC_OK);
    e = *found;
    CHECK(gpuic_keytable_insert(fx.keys, &e, (uint32_t *)&v) == GPUIC_OK);
    stale_key = (uint32_t)v;
    CHECK(gpuic_keytable_remove(fx.keys, (uint32_t)stale_key) == GPUIC_OK);
    v = 0xdeadbeefdeadbeefULL;
    memcpy(before, fixture_region(&fx, 0), LEN);
    gpuic_cmpl_query(fx.cmpl, 0, &c0);
    CHECK(take_error() == GPUIC_OK);
    /* the failure marks and count producers read (the proxy is idle: every WQE completed) */
    memset(rp.marks, 0, sizeof(rp.marks));
    failures0 = gpuic_ring_done_failures(__atomic_load_n(&rp.idx[0], __ATOMIC_ACQUIRE));

#define BAD(what_, expect_) (check_error((what_), (expect_)), n++)
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), 63);
    post(&w, 1, 0); BAD("key index of an empty slot", GPUIC_ERR_BAD_KEY);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), 0xffffffffu);
    post(&w, 1, 0); BAD("key index beyond the table", GPUIC_ERR_BAD_KEY);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), (uint32_t)stale_key);
    post(&w, 1, 0); BAD("stale generation", GPUIC_ERR_BAD_KEY);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 1, 0), fx.key[1]);
    post(&w, 1, 0); BAD("key of another target", GPUIC_ERR_BAD_KEY);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, LEN - 7), fx.key[0]);
    post(&w, 1, 0); BAD("one byte past the end", GPUIC_ERR_OUT_OF_RANGE);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0) - 1, fx.key[0]);
    post(&w, 1, 0); BAD("one byte before the start", GPUIC_ERR_OUT_OF_RANGE);
    gpuic_wqe_build_put(&w, &h0, (uint64_t)(uintptr_t)src, 0, 0x7fffffff,
                        fixture_raddr(&fx, 0, 16), fx.key[0]);
    post(&w, 1, 0); BAD("length past the end (and over the limit)", GPUIC_ERR_INVALID_PARAM);
    gpuic_wqe_build_put(&w, &h0, (uint64_t)(uintptr_t)src, 0, 64, UINT64_MAX - 8, fx.key[0]);
    post(&w, 1, 0); BAD("address that wraps", GPUIC_ERR_OUT_OF_RANGE);
    gpuic_wqe_build_get(&w, &h0, (uint64_t)(uintptr_t)src, 0, LEN + 1,
                        fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0); BAD("get longer than the region", GPUIC_ERR_OUT_OF_RANGE);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), fx.key[0]);
    w.bytes[3] = 0x77;
    post(&w, 1, 0); BAD("unknown opcode", GPUIC_ERR_BAD_OPCODE);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), fx.key[0]);
    ((gpuic_wqe_ctrl_seg_t *)&w)->qpn_ds = gpuic_htobe32(5); /* target 0, DS 5 */
    post(&w, 1, 0);
    /* the DS claims a second block: the consumer takes the WQE as far as the next head */
    gpuic_wqe_build_put_inline(&w, &h1, &v, 8, fixture_raddr(&fx, 1, 32), fx.key[1]);
    post(&w, 1, 1);
    BAD("DS that does not match the opcode", GPUIC_ERR_INVALID_PARAM);
    {
        int64_t one = 1;
        gpuic_wqe_build_accumulate(&w, &h0, GPUIC_ACC_PROD, GPUIC_ACC_INT64, 1, 8,
                                   (uint64_t)(uintptr_t)&one, 0, fixture_raddr(&fx, 0, 0),
                                   fx.key[0]);
        post(&w, 1, 0); BAD("unsupported accumulate op", GPUIC_ERR_UNSUPPORTED);
        gpuic_wqe_build_accumulate(&w, &h0, GPUIC_ACC_BXOR, GPUIC_ACC_DOUBLE, 1, 8,
                                   (uint64_t)(uintptr_t)&one, 0, fixture_raddr(&fx, 0, 0),
                                   fx.key[0]);
        post(&w, 1, 0); BAD("bitwise op on double", GPUIC_ERR_UNSUPPORTED);
        gpuic_wqe_build_accumulate(&w, &h0, GPUIC_ACC_SUM, GPUIC_ACC_INT64, 1, 8,
                                   (uint64_t)(uintptr_t)&one, 0, fixture_raddr(&fx, 0, 4),
                                   fx.key[0]);
        post(&w, 1, 0); BAD("misaligned accumulate", GPUIC_ERR_INVALID_PARAM);
    }
#undef BAD
    gpuic_cmpl_query(fx.cmpl, 0, &c);
    CHECK(c.failed - c0.failed == n && c.completed - c0.completed == n &&
          c.local_completed - c0.local_completed == n);
    /* each failing round counted once in the completion word; only target 0 marked */
    CHECK(gpuic_ring_done_failures(__atomic_load_n(&rp.idx[0], __ATOMIC_ACQUIRE)) -
              failures0 >= 1);
    CHECK(rp.marks[0] == 1 && rp.marks[1] == 1 && rp.marks[2] == 0);
    CHECK(gpuic_ring_done_reached(__atomic_load_n(&rp.idx[0], __ATOMIC_ACQUIRE), posted_end));
    /* first error wins */
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, 0), 63);
    post(&w, 1, 0);
    gpuic_wqe_build_put_inline(&w, &h0, &v, 8, fixture_raddr(&fx, 0, LEN - 7), fx.key[0]);
    post(&w, 1, 0);
    check_error("two errors", GPUIC_ERR_BAD_KEY);
    CHECK(memcmp(before, fixture_region(&fx, 0), LEN) == 0);
    CHECK(fixture_canaries_ok(&fx));
    /* a WQE naming no target of the window: no counter to complete, only the error word; the
     * put after it completes */
    gpuic_cmpl_query(fx.cmpl, 1, &c0);
    gpuic_wqe_build_put_inline(&w, &h1, &v, 8, fixture_raddr(&fx, 1, 8), fx.key[1]);
    w.bytes[4] = 0; w.bytes[5] = 0; w.bytes[6] = 9; /* QPN 9: no such target */
    post(&w, 1, 1);
    gpuic_wqe_build_put_inline(&w, &h1, &v, 8, fixture_raddr(&fx, 1, 16), fx.key[1]);
    post(&w, 1, 1);
    check_error("no such target", GPUIC_ERR_INVALID_PARAM);
    gpuic_cmpl_query(fx.cmpl, 1, &c);
    CHECK(c.completed - c0.completed == 1 && c.failed == c0.failed);
    {
        gpuic_proxy_stats_t s;

        gpuic_proxy_stats(fx.proxy, &s);
        CHECK(s.errors >= n + 3);
    }
    CHECK(memcmp(fixture_region(&fx, 1) + 16, &v, 8) == 0);
    CHECK(memcmp(fixture_region(&fx, 1) + 8, "\0\0\0\0\0\0\0\0", 8) == 0);
}

static void test_ops(void)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    static uint8_t data[256], back[256];
    uint64_t old = 0, w64;
    int32_t i32[4] = {5, -7, 100, 0};
    double d[3] = {1.5, -2.0, 8.0};
    gpuic_cmpl_counter_t c;
    gpuic_wqe_t w;
    unsigned nbb;

    memset(r, 0, LEN);
    for (unsigned i = 0; i < sizeof(data); ++i) {
        data[i] = (uint8_t)(i * 3 + 1);
    }
    /* put, then a get of it back */
    gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)data, 0, 256, fixture_raddr(&fx, 0, 512),
                        fx.key[0]);
    post(&w, 1, 0);
    wait_all();
    gpuic_wqe_build_get(&w, &h, (uint64_t)(uintptr_t)back, 0, 256, fixture_raddr(&fx, 0, 512),
                        fx.key[0]);
    post(&w, 1, 0);
    wait_all();
    CHECK(memcmp(back, data, 256) == 0);

    /* fetch-and-add, compare-and-swap (hit and miss) */
    w64 = 40;
    memcpy(r, &w64, 8);
    gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_FA, 2, 0, (uint64_t)(uintptr_t)&old, 0,
                           fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0);
    wait_all();
    memcpy(&w64, r, 8);
    CHECK(old == 40 && w64 == 42);
    gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_CS, 7, 41, (uint64_t)(uintptr_t)&old, 0,
                           fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0);
    wait_all();
    memcpy(&w64, r, 8);
    CHECK(old == 42 && w64 == 42);
    gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_CS, 7, 42, (uint64_t)(uintptr_t)&old, 0,
                           fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0);
    wait_all();
    memcpy(&w64, r, 8);
    CHECK(old == 42 && w64 == 7);

    /* accumulates: int32 SUM (native), MIN and MAX (CAS loop), double SUM/MAX, REPLACE */
    {
        int32_t t32[4] = {1, 2, 3, 4}, got32[4];
        double t64[3] = {10.0, 10.0, 10.0}, got64[3];
        memcpy(r + 64, t32, sizeof(t32));
        memcpy(r + 128, t64, sizeof(t64));
        gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_SUM, GPUIC_ACC_INT32, 4, 4,
                                   (uint64_t)(uintptr_t)i32, 0, fixture_raddr(&fx, 0, 64),
                                   fx.key[0]);
        post(&w, 1, 0);
        gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_MIN, GPUIC_ACC_INT32, 4, 4,
                                   (uint64_t)(uintptr_t)i32, 0, fixture_raddr(&fx, 0, 64),
                                   fx.key[0]);
        post(&w, 1, 0);
        gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_SUM, GPUIC_ACC_DOUBLE, 3, 8,
                                   (uint64_t)(uintptr_t)d, 0, fixture_raddr(&fx, 0, 128),
                                   fx.key[0]);
        post(&w, 1, 0);
        gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_MAX, GPUIC_ACC_DOUBLE, 3, 8,
                                   (uint64_t)(uintptr_t)d, 0, fixture_raddr(&fx, 0, 128),
                                   fx.key[0]);
        post(&w, 1, 0);
        wait_all();
        memcpy(got32, r + 64, sizeof(got32));
        /* sum: {6,-5,103,4}; then min with {5,-7,100,0}: {5,-7,100,0} */
        CHECK(got32[0] == 5 && got32[1] == -7 && got32[2] == 100 && got32[3] == 0);
        memcpy(got64, r + 128, sizeof(got64));
        /* sum: {11.5, 8, 18}; max with {1.5,-2,8}: unchanged */
        CHECK(got64[0] == 11.5 && got64[1] == 8.0 && got64[2] == 18.0);
        gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_REPLACE, GPUIC_ACC_DOUBLE, 3, 8,
                                   (uint64_t)(uintptr_t)d, 0, fixture_raddr(&fx, 0, 128),
                                   fx.key[0]);
        post(&w, 1, 0);
        wait_all();
        memcpy(got64, r + 128, sizeof(got64));
        CHECK(memcmp(got64, d, sizeof(d)) == 0);
    }

    /* put-with-signal: data first, then the signal word */
    {
        uint64_t sig = 0;
        memcpy(r + 1024, &sig, 8);
        nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)data, 0, 200,
                                         fixture_raddr(&fx, 0, 2048), fx.key[0],
                                         fixture_raddr(&fx, 0, 1024), fx.key[0],
                                         GPUIC_SIGNAL_ADD, 3);
        post(&w, nbb, 0);
        nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)data, 0, 8,
                                         fixture_raddr(&fx, 0, 3000), fx.key[0],
                                         fixture_raddr(&fx, 0, 1032), fx.key[0],
                                         GPUIC_SIGNAL_SET, 99);
        post(&w, nbb, 0);
        wait_all();
        memcpy(&sig, r + 1024, 8);
        CHECK(sig == 3);
        memcpy(&sig, r + 1032, 8);
        CHECK(sig == 99);
        CHECK(memcmp(r + 2048, data, 200) == 0 && memcmp(r + 3000, data, 8) == 0);
    }
    gpuic_cmpl_query(fx.cmpl, 0, &c);
    CHECK(c.local_completed == c.completed);
    CHECK(take_error() == GPUIC_OK);
    CHECK(fixture_canaries_ok(&fx));
}

/* A mapping with no atomic the proxy may use: every update that needs one is refused, and
 * nothing is written (not even a put-with-signal's data); plain puts still work. */
static void test_no_atomics(void)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t before[LEN], *r = fixture_region(&fx, 0);
    uint64_t v = 0x1122334455667788ULL, old = 0;
    int64_t one = 1;
    gpuic_cmpl_counter_t c0, c;
    gpuic_wqe_t w;
    unsigned nbb;

    memset(r, 0, LEN);
    memcpy(before, r, LEN);
    gpuic_cmpl_query(fx.cmpl, 0, &c0);
    gpuic_wqe_build_atomic(&w, &h, GPUIC_WQE_OP_ATOMIC_FA, 2, 0, (uint64_t)(uintptr_t)&old, 0,
                           fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0);
    check_error("fetch-and-add without atomics", GPUIC_ERR_UNSUPPORTED);
    gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_SUM, GPUIC_ACC_INT64, 1, 8,
                               (uint64_t)(uintptr_t)&one, 0, fixture_raddr(&fx, 0, 8),
                               fx.key[0]);
    post(&w, 1, 0);
    check_error("accumulate without atomics", GPUIC_ERR_UNSUPPORTED);
    nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)&v, 0, 8,
                                     fixture_raddr(&fx, 0, 64), fx.key[0],
                                     fixture_raddr(&fx, 0, 16), fx.key[0], GPUIC_SIGNAL_ADD, 1);
    post(&w, nbb, 0);
    check_error("signal add without atomics", GPUIC_ERR_UNSUPPORTED);
    gpuic_cmpl_query(fx.cmpl, 0, &c);
    CHECK(c.failed - c0.failed == 3 && c.completed - c0.completed == 3);
    CHECK(memcmp(before, r, LEN) == 0 && old == 0);
    /* a signal set is a plain store after the data */
    nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)&v, 0, 8,
                                     fixture_raddr(&fx, 0, 64), fx.key[0],
                                     fixture_raddr(&fx, 0, 16), fx.key[0], GPUIC_SIGNAL_SET, 5);
    post(&w, nbb, 0);
    wait_all();
    memcpy(&old, r + 16, 8);
    CHECK(old == 5 && memcmp(r + 64, &v, 8) == 0);
    CHECK(take_error() == GPUIC_OK);
    CHECK(fixture_canaries_ok(&fx));
}

/* One fixture of @p kind on the ring: the validation cases and the operations. */
/* Several 8-byte puts in one entry (GPUIC_WQE_OP_PUT8_MULTI): executed through a mapping,
 * all-or-nothing when one of them is out of range, refused (nothing written) over UCX. */
static void test_put8_multi(fixture_kind_t kind)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0), before[LEN];
    uint64_t raddrs[GPUIC_WQE_PUT8_MAX], data[GPUIC_WQE_PUT8_MAX];
    gpuic_wqe_t w;
    unsigned nbb;

    memset(r, 0, LEN);
    for (unsigned i = 0; i < GPUIC_WQE_PUT8_MAX; ++i) {
        raddrs[i] = fixture_raddr(&fx, 0, 24 * i + 8); /* not adjacent, not in order below */
        data[i] = 0x1111111111111111ull * (i + 1);
    }
    raddrs[6] = fixture_raddr(&fx, 0, LEN - 8); /* the last 8 bytes of the region */
    nbb = gpuic_wqe_build_put8_multi(&w, &h, fx.key[0], GPUIC_WQE_PUT8_MAX, raddrs, data);
    CHECK(nbb == 2);
    post(&w, nbb, 0);
    wait_all();
    if (kind == FIX_UCX || kind == FIX_DEVICE_REMOTE) {
        CHECK(take_error() == GPUIC_ERR_UNSUPPORTED);
        for (unsigned i = 0; i < LEN; ++i) {
            if (r[i] != 0) {
                CHECK(!"a refused PUT8_MULTI wrote memory");
                break;
            }
        }
        CHECK(fixture_canaries_ok(&fx));
        return;
    }
    for (unsigned i = 0; i < GPUIC_WQE_PUT8_MAX; ++i) {
        CHECK(memcmp(r + (raddrs[i] - fixture_raddr(&fx, 0, 0)), &data[i], 8) == 0);
    }
    /* three puts: one block */
    nbb = gpuic_wqe_build_put8_multi(&w, &h, fx.key[0], 3, raddrs, data + 4);
    CHECK(nbb == 1);
    post(&w, nbb, 0);
    wait_all();
    CHECK(memcmp(r + 8, &data[4], 8) == 0 && memcmp(r + 32, &data[5], 8) == 0 &&
          memcmp(r + 56, &data[6], 8) == 0 && memcmp(r + 80, &data[3], 8) == 0);
    /* one put past the end: none of them is made */
    memcpy(before, r, LEN);
    raddrs[4] = fixture_raddr(&fx, 0, LEN - 4);
    nbb = gpuic_wqe_build_put8_multi(&w, &h, fx.key[0], 5, raddrs, data + 2);
    post(&w, nbb, 0);
    wait_all();
    CHECK(take_error() == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(memcmp(before, r, LEN) == 0);
    /* one put before the start, the first put past the end: the same */
    raddrs[4] = fixture_raddr(&fx, 0, 16);
    raddrs[2] = fixture_raddr(&fx, 0, 0) - 8;
    nbb = gpuic_wqe_build_put8_multi(&w, &h, fx.key[0], 5, raddrs, data + 2);
    post(&w, nbb, 0);
    wait_all();
    CHECK(take_error() == GPUIC_ERR_OUT_OF_RANGE);
    raddrs[2] = fixture_raddr(&fx, 0, 32);
    raddrs[0] = fixture_raddr(&fx, 0, LEN);
    nbb = gpuic_wqe_build_put8_multi(&w, &h, fx.key[0], 5, raddrs, data + 2);
    post(&w, nbb, 0);
    wait_all();
    CHECK(take_error() == GPUIC_ERR_OUT_OF_RANGE);
    CHECK(memcmp(before, r, LEN) == 0);
    CHECK(fixture_canaries_ok(&fx));
}

/* Remote calls the handler executed (FIX_DEVICE_REMOTE). */
static unsigned remote_calls;

/* A 4- or 8-byte element's new value under @p op; 0 when the handler does not know it. */
static int remote_combine(int op, int type, uint64_t old, uint64_t v, uint64_t *out)
{
    union { uint64_t u; double d; int64_t i; } o = {old}, a = {v}, r = {0};
    int32_t o32 = (int32_t)old, a32 = (int32_t)v;

    switch (op) {
    case GPUIC_ACC_REPLACE: *out = v; return 1;
    case GPUIC_ACC_BAND:    *out = old & v; return 1;
    case GPUIC_ACC_BOR:     *out = old | v; return 1;
    case GPUIC_ACC_BXOR:    *out = old ^ v; return 1;
    case GPUIC_ACC_SUM:
        if (type == GPUIC_ACC_DOUBLE) {
            r.d = o.d + a.d;
            *out = r.u;
        } else {
            *out = old + v;
        }
        return 1;
    case GPUIC_ACC_MIN:
    case GPUIC_ACC_MAX:
        if (type == GPUIC_ACC_DOUBLE) {
            r.d = (op == GPUIC_ACC_MIN) == (a.d < o.d) ? a.d : o.d;
            *out = r.u;
        } else if (type == GPUIC_ACC_INT32) {
            *out = (uint32_t)((op == GPUIC_ACC_MIN) == (a32 < o32) ? a32 : o32);
        } else {
            *out = (op == GPUIC_ACC_MIN) == (a.i < o.i) ? (uint64_t)a.i : (uint64_t)o.i;
        }
        return 1;
    }
    return 0;
}

static unsigned remote_put_signals;       /* GPUIC_CALL_PUT_SIGNAL requests executed */
static unsigned remote_put_signal_refused; /* ... answered GPUIC_ERR_UNSUPPORTED */
static int remote_put_signal_refuse;       /* answer them so (a target without the call) */

/* A put-with-signal request: the data, then the signal word, in that order. */
static gpuic_status_t remote_put_signal(const gpuic_call_atomic_t *a, size_t req_len)
{
    uint64_t sig, v;

    if (remote_put_signal_refuse) {
        __atomic_fetch_add(&remote_put_signal_refused, 1, __ATOMIC_RELAXED);
        return GPUIC_ERR_UNSUPPORTED;
    }
    if (a->esize != 1 || a->count > GPUIC_CALL_ATOMIC_INLINE ||
        req_len != gpuic_call_atomic_len(a->count) || a->sig_addr % 8 != 0 ||
        (a->acc_op != GPUIC_ACC_REPLACE && a->acc_op != GPUIC_ACC_SUM)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    __atomic_fetch_add(&remote_put_signals, 1, __ATOMIC_RELAXED);
    memcpy((void *)(uintptr_t)a->addr, a->data, a->count);
    memcpy(&v, a->compare, 8);
    memcpy(&sig, (void *)(uintptr_t)a->sig_addr, 8);
    sig = a->acc_op == GPUIC_ACC_SUM ? sig + v : v;
    memcpy((void *)(uintptr_t)a->sig_addr, &sig, 8);
    return GPUIC_OK;
}

/* The target's executor for the test: the request on host memory, by the CPU (the proxy
 * thread is the only updater). */
static gpuic_status_t remote_handler(void *arg, const void *req, size_t req_len, void *reply,
                                     size_t reply_cap, size_t *reply_len_p)
{
    gpuic_call_atomic_t a;
    uint8_t *t;
    size_t bytes;

    (void)arg;
    *reply_len_p = 0;
    if (req_len < gpuic_call_atomic_len(0) || req_len > sizeof(a)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    memcpy(&a, req, req_len);
    if (a.op == GPUIC_CALL_PUT_SIGNAL) {
        return remote_put_signal(&a, req_len);
    }
    bytes = (size_t)a.count * a.esize;
    if ((a.esize != 4 && a.esize != 8) || bytes > GPUIC_CALL_ATOMIC_INLINE ||
        ((a.flags & GPUIC_CALL_FETCH) && reply_cap < bytes)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    __atomic_fetch_add(&remote_calls, 1, __ATOMIC_RELAXED);
    t = (uint8_t *)(uintptr_t)a.addr;
    for (uint32_t i = 0; i < a.count; ++i) {
        uint64_t old = 0, v = 0, cmp = 0, next;

        memcpy(&old, t + (size_t)i * a.esize, a.esize);
        memcpy(&v, a.data + (size_t)i * a.esize, a.esize);
        if (a.op == GPUIC_CALL_CAS) {
            memcpy(&cmp, a.compare, a.esize);
            next = old == cmp ? v : old;
        } else if (!remote_combine(a.acc_op, a.type, old, v, &next)) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        memcpy(t + (size_t)i * a.esize, &next, a.esize);
        if (a.flags & GPUIC_CALL_FETCH) {
            memcpy((uint8_t *)reply + (size_t)i * a.esize, &old, a.esize);
        }
    }
    if (a.flags & GPUIC_CALL_FETCH) {
        *reply_len_p = bytes;
    }
    return GPUIC_OK;
}

/* An accumulate larger than one remote call: split into pieces, every element combined. */
static void test_remote_pieces(void)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    static double d[200], got[200];
    unsigned before = __atomic_load_n(&remote_calls, __ATOMIC_RELAXED);
    gpuic_wqe_t w;

    for (unsigned i = 0; i < 200; ++i) {
        d[i] = (double)i + 0.5;
    }
    memset(r, 0, sizeof(got));
    gpuic_wqe_build_accumulate(&w, &h, GPUIC_ACC_SUM, GPUIC_ACC_DOUBLE, 200, 8,
                               (uint64_t)(uintptr_t)d, 0, fixture_raddr(&fx, 0, 0), fx.key[0]);
    post(&w, 1, 0);
    post(&w, 1, 0);
    wait_all();
    CHECK(take_error() == GPUIC_OK);
    memcpy(got, r, sizeof(got));
    for (unsigned i = 0; i < 200; ++i) {
        CHECK(got[i] == 2 * d[i]);
    }
    /* 1600 bytes in pieces of at most GPUIC_CALL_ATOMIC_INLINE, twice */
    CHECK(__atomic_load_n(&remote_calls, __ATOMIC_RELAXED) - before ==
          2 * ((sizeof(d) + GPUIC_CALL_ATOMIC_INLINE - 1) / GPUIC_CALL_ATOMIC_INLINE));
    CHECK(fixture_canaries_ok(&fx));
}

/* Put-with-signal to device memory of the target: one remote call (data and signal) up to
 * GPUIC_CALL_ATOMIC_INLINE bytes, the data's put, its flush and a signal add beyond, and the
 * same without the call where the target refuses it; data and signals right every way. */
static void test_put_signal_remote(void)
{
    const gpuic_wqe_hdr_t h = {0, 0, 0};
    uint8_t *r = fixture_region(&fx, 0);
    static uint8_t data[600];
    unsigned calls = __atomic_load_n(&remote_put_signals, __ATOMIC_RELAXED);
    uint64_t sig = 0;
    gpuic_wqe_t w;
    unsigned nbb;

    for (unsigned i = 0; i < sizeof(data); ++i) {
        data[i] = (uint8_t)(i * 13 + 5);
    }
    memset(r + 1040, 0, 16);
    memset(r + 2048, 0, 1024);
    memset(r + 3072, 0, 1024 - 64);
    /* 200 bytes and a set: one call */
    nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)data, 0, 200,
                                     fixture_raddr(&fx, 0, 2048), fx.key[0],
                                     fixture_raddr(&fx, 0, 1040), fx.key[0], GPUIC_SIGNAL_SET, 7);
    post(&w, nbb, 0);
    wait_all();
    CHECK(__atomic_load_n(&remote_put_signals, __ATOMIC_RELAXED) == calls + 1);
    memcpy(&sig, r + 1040, 8);
    CHECK(sig == 7 && memcmp(r + 2048, data, 200) == 0 && r[2048 + 200] == 0);
    /* 600 bytes and an add: the data's put, then the add as an atomic call */
    nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)data, 0, 600,
                                     fixture_raddr(&fx, 0, 3200), fx.key[0],
                                     fixture_raddr(&fx, 0, 1040), fx.key[0], GPUIC_SIGNAL_ADD, 2);
    post(&w, nbb, 0);
    /* no data, an add: one call */
    nbb = gpuic_wqe_build_put_signal(&w, &h, 0, 0, 0, fixture_raddr(&fx, 0, 2048), fx.key[0],
                                     fixture_raddr(&fx, 0, 1040), fx.key[0], GPUIC_SIGNAL_ADD, 5);
    post(&w, nbb, 0);
    wait_all();
    CHECK(__atomic_load_n(&remote_put_signals, __ATOMIC_RELAXED) == calls + 2);
    memcpy(&sig, r + 1040, 8);
    CHECK(sig == 14 && memcmp(r + 3200, data, 600) == 0 && r[3199] == 0 && r[3800] == 0);
    /* a target without the call: the data, then the signal, as for a larger put */
    remote_put_signal_refuse = 1;
    nbb = gpuic_wqe_build_put_signal(&w, &h, (uint64_t)(uintptr_t)data + 1, 0, 8,
                                     fixture_raddr(&fx, 0, 3000), fx.key[0],
                                     fixture_raddr(&fx, 0, 1048), fx.key[0], GPUIC_SIGNAL_SET, 11);
    post(&w, nbb, 0);
    wait_all();
    remote_put_signal_refuse = 0;
    CHECK(__atomic_load_n(&remote_put_signal_refused, __ATOMIC_RELAXED) >= 1);
    CHECK(__atomic_load_n(&remote_put_signals, __ATOMIC_RELAXED) == calls + 2);
    memcpy(&sig, r + 1048, 8);
    CHECK(sig == 11 && memcmp(r + 3000, data + 1, 8) == 0);
    CHECK(take_error() == GPUIC_OK);
    CHECK(fixture_canaries_ok(&fx));
}

/* UCX puts from a buffer whose bytes continue each other's (local and remote) go as one: six
 * slices of one buffer posted in reverse order while the proxy is paused (so one round takes
 * them all) land whole, five of them merged into another's put; a seventh put whose local
 * bytes continue theirs but whose remote ones do not goes on its own. */
static void test_put_merge(void)
{
    const gpuic_wqe_hdr_t h = {0, 1, 0};
    uint8_t *r = fixture_region(&fx, 1);
    static uint8_t data[7 * 256];
    gpuic_proxy_stats_t s0, s1;
    gpuic_wqe_t w;
    unsigned nbb;

    for (unsigned i = 0; i < sizeof(data); ++i) {
        data[i] = (uint8_t)(i * 7 + 3);
    }
    memset(r, 0, LEN);
    gpuic_proxy_stats(fx.proxy, &s0);
    gpuic_proxy_pause(fx.proxy);
    for (unsigned i = 6; i-- > 0;) {
        nbb = gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)(data + i * 256), 0, 256,
                                  fixture_raddr(&fx, 1, 512 + i * 256), fx.key[1]);
        post(&w, nbb, 1);
    }
    nbb = gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)(data + 6 * 256), 0, 256,
                              fixture_raddr(&fx, 1, 3072), fx.key[1]);
    post(&w, nbb, 1);
    gpuic_proxy_resume(fx.proxy);
    wait_all();
    CHECK(take_error() == GPUIC_OK);
    gpuic_proxy_stats(fx.proxy, &s1);
    CHECK(s1.merged - s0.merged == 5);
    CHECK(memcmp(r + 512, data, 6 * 256) == 0 && memcmp(r + 3072, data + 6 * 256, 256) == 0);
    CHECK(r[511] == 0 && r[512 + 6 * 256] == 0 && r[3071] == 0 && r[3072 + 256] == 0);
    CHECK(fixture_canaries_ok(&fx));
}

static void run_kind(fixture_kind_t kind)
{
    if (!fixture_create_kind(&fx, NT, LEN, kind)) {
        CHECK(!"fixture");
        return;
    }
    if (kind == FIX_DEVICE_REMOTE) {
        /* the fixture's endpoint loops back: the proxy's own waits serve its calls */
        gpuic_context_set_call_handler(fx.ctx, remote_handler, NULL);
        remote_calls = 0;
    }
    CHECK(fixture_attach(&fx, &rp) == GPUIC_OK);
    if (kind == FIX_DEVICE_REMOTE) {
        test_remote_pieces();
    }
    if (kind == FIX_HOST_NO_ATOMICS) {
        test_no_atomics();
    } else {
        test_invalid();
        test_ops();
    }
    test_put8_multi(kind);
    if (kind == FIX_UCX || kind == FIX_DEVICE_REMOTE) {
        test_put_merge();
    }
    if (kind == FIX_DEVICE_REMOTE) {
        test_put_signal_remote();
        /* fetch-add, two compare-and-swaps, four accumulates, one signal add, the pieces */
        CHECK(__atomic_load_n(&remote_calls, __ATOMIC_RELAXED) >= 8);
    }
    fixture_destroy(&fx); /* the proxy first: it drains and stops */
}

int main(void)
{
    static const fixture_kind_t kinds[] = {FIX_UCX, FIX_HOST_CPU_ATOMICS, FIX_HOST_UCX_ATOMICS,
                                           FIX_HOST_NO_ATOMICS, FIX_DEVICE_REMOTE};
    gpuic_keytable_t *kt;
    gpuic_keytable_entry_t e = {0};
    uint32_t key;

    test_keytable();
    /* direct entries: no endpoint needed, but a known kind, and CPU atomics on host memory
     * only */
    CHECK(gpuic_keytable_create(4, &kt) == GPUIC_OK);
    e.base = 4096;
    e.len = 64;
    CHECK(gpuic_keytable_insert(kt, &e, &key) == GPUIC_ERR_INVALID_PARAM);
    e.cpu_atomics = 1;
    e.direct = GPUIC_KEYTABLE_DIRECT_COPY;
    CHECK(gpuic_keytable_insert(kt, &e, &key) == GPUIC_ERR_INVALID_PARAM);
    e.direct = 3;
    CHECK(gpuic_keytable_insert(kt, &e, &key) == GPUIC_ERR_INVALID_PARAM);
    e.direct = GPUIC_KEYTABLE_DIRECT_HOST;
    CHECK(gpuic_keytable_insert(kt, &e, &key) == GPUIC_OK);
    gpuic_keytable_destroy(kt);

    CHECK(ring_producer_create(&rp, 8, 5, 0));
    rp.with_marks = 1; /* as device queues are attached */
    for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
        run_kind(kinds[i]);
    }
    ring_producer_destroy(&rp);
    return unit_test_result("test_proxy_ops");
}
