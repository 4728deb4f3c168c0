/*
 * proxy_bench - host-thread producers -> ring -> proxy_ucx -> UCX loopback, next to direct
 * gpuic_rma_put + flush from one thread, in one run.
 *
 * Reports, per message size (8 B .. 64 KiB): message rate (a window of puts, then a flush)
 * and latency (one put posted -> its completion seen, median) for both paths.  Then, for
 * 8-byte inline puts: the rate at which one producer posts WQEs into the proxy's ring (one
 * WQE per reservation and doorbell, then BATCH per reservation and doorbell), the proxy's
 * overhead from WQE posted to UCX call issued (median and 99th percentile, measured with the
 * proxy's on_issue hook against a timestamp the producer puts in the payload), and how long an
 * idle proxy takes to pick up a WQE (the commit wakes it), and the rate of a ring shaped like a
 * window's device queue (tagged words, a completion index; this thread as the GPU threads),
 * then its latency one entry at a time, back to back and 3 us apart (the proxy serves that
 * queue alone meanwhile, as a window's proxy does).
 *
 * Usage: proxy_bench [iterations-scale] [--no-sizes] [--direct-host]
 *   iterations-scale  default 1; --no-sizes skips the per-size table; --direct-host enters the
 *   target region as a direct host entry (GPUIC_KEYTABLE_DIRECT_HOST, CPU atomics), so the
 *   proxy's rows measure its per-WQE cost with copies through a mapping instead of UCX.
 * Benchmarks report, they never fail.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuic.h"

#define MAX_SIZE (64 * 1024)
#define RING_SIZE 4096
#define MAX_SAMPLES 200000
#define BATCH 16

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static double percentile(uint64_t *v, size_t n, double p)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(*v), cmp_u64);
    return (double)v[(size_t)(p * (double)(n - 1))];
}

/* on_issue samples: post timestamp (in the inline payload) to issue time */
static uint64_t *issue_samples;
static size_t nissue;
static int record_issue;

static void on_issue(void *arg, const gpuic_wqe_desc_t *d)
{
    uint64_t posted;

    (void)arg;
    if (!record_issue || d->inline_data == NULL || d->len != 8 || nissue >= MAX_SAMPLES) {
        return;
    }
    memcpy(&posted, d->inline_data, 8);
    issue_samples[nissue++] = now_ns() - posted;
}

typedef struct side {
    gpuic_context_t *ctx;
    gpuic_ep_t *ep;
    gpuic_mr_t *mr;
    gpuic_rkey_t *rkey;
    uint8_t *target;
} side_t;

static int side_create(side_t *s, int serialized)
{
    gpuic_context_params_t cp = {0};
    const void *addr;
    size_t addr_len, blob_len;
    void *blob;

    cp.thread_serialized = serialized;
    s->target = aligned_alloc(4096, MAX_SIZE);
    memset(s->target, 0, MAX_SIZE);
    if (gpuic_context_create(&cp, &s->ctx) != GPUIC_OK) {
        return 0;
    }
    gpuic_context_address(s->ctx, &addr, &addr_len);
    return gpuic_ep_create(s->ctx, addr, addr_len, &s->ep) == GPUIC_OK &&
           gpuic_mr_register(s->ctx, s->target, MAX_SIZE, &s->mr) == GPUIC_OK &&
           gpuic_mr_pack(s->mr, &blob, &blob_len) == GPUIC_OK &&
           gpuic_rkey_unpack(s->ep, blob, &s->rkey) == GPUIC_OK &&
           (gpuic_mr_blob_release(blob), 1);
}

static void side_destroy(side_t *s)
{
    gpuic_rkey_destroy(s->rkey);
    gpuic_mr_deregister(s->mr);
    gpuic_ep_destroy(s->ep);
    gpuic_context_destroy(s->ctx);
    free(s->target);
}

static gpuic_ring_t *ring;
static gpuic_cmpl_t *cmpl;
static gpuic_proxy_t *proxy;
static uint32_t key;
static side_t px, direct;
static uint8_t *src;

/* Posts one put of len bytes (inline when it fits); spins on a full ring.  8-byte puts carry
 * the post time when stamped (for the overhead measurement). */
static int stamp_posts = 1;

/* Back-pressure: a full ring is retried, politely (the proxy may share the core). */
static void ring_reserve(unsigned nbb, uint64_t *seq_p)
{
    unsigned spins = 0;

    while (gpuic_ring_reserve(ring, nbb, seq_p) != GPUIC_OK) {
        gpuic_cpu_relax(++spins);
    }
}

static void proxy_post(uint32_t len, uint64_t raddr)
{
    gpuic_wqe_hdr_t h = {0, 0, 0};
    gpuic_wqe_t w;
    uint64_t seq = 0;
    unsigned nbb;

    if (len <= GPUIC_WQE_MAX_INLINE) {
        if (len == 8) {
            uint64_t t = stamp_posts ? now_ns() : 0;
            nbb = gpuic_wqe_build_put_inline(&w, &h, &t, 8, raddr, key);
        } else {
            nbb = gpuic_wqe_build_put_inline(&w, &h, src, len, raddr, key);
        }
    } else {
        nbb = gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)src, 0, len, raddr, key);
    }
    ring_reserve(nbb, &seq);
    gpuic_cmpl_post(cmpl, 0, 1);
    gpuic_ring_write(ring, seq, &w, nbb);
    gpuic_ring_commit(ring, seq, nbb); /* wakes the proxy if it sleeps */
}

/* Posts n (<= BATCH) 8-byte inline puts with one reservation, one count and one doorbell. */
static void proxy_post_batch(unsigned n, uint64_t raddr)
{
    static gpuic_wqe_t w[BATCH];
    static int built;
    uint64_t seq = 0, zero = 0;

    if (!built) {
        gpuic_wqe_hdr_t h = {0, 0, 0};
        for (unsigned i = 0; i < BATCH; ++i) {
            gpuic_wqe_build_put_inline(&w[i], &h, &zero, 8, raddr, key);
        }
        built = 1;
    }
    ring_reserve(n, &seq);
    gpuic_cmpl_post(cmpl, 0, n);
    for (unsigned i = 0; i < n; ++i) {
        gpuic_ring_write(ring, seq + i, &w[i], 1);
    }
    gpuic_ring_commit(ring, seq, n);
}

static void proxy_flush(void)
{
    gpuic_cmpl_wait(cmpl, 0, GPUIC_CMPL_REMOTE, 0);
}

/*
 * Device-queue emulation: a tagged ring with a completion index, as a window's device queue
 * (osc_gpuic_devqueue.c), fed by this thread the way GPU threads feed it
 * (mpix_gpuic_device_proxy.cuh): reserve against the completion index, write the entry as
 * tagged words, no doorbell and no commit.  n 8-byte inline puts to @p target; returns the rate
 * in M entries/s from the first post to the completion index covering the last.  With @p lat
 * (room for n samples) every entry is waited for before the next is written, @p gap_ns after
 * its completion, and lat[i] is the time from entry i's first word to the index covering it:
 * the proxy's reaction, as a device flush sees it without the PCIe crossings (a device thread's
 * put + flush comes every 3 us or so, which a gap of that size imitates).
 */
static double tagged_rate(gpuic_keytable_t *keys, uint32_t tkey, uint64_t target, unsigned n,
                          uint64_t *lat, uint64_t gap_ns)
{
    enum { SLOTS = 1024 };
    size_t len = gpuic_ring_footprint_tagged(SLOTS);
    void *mem = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    uint64_t *done = aligned_alloc(64, 64), zero = 0, t0;
    gpuic_ring_t *tr = NULL;
    gpuic_cmpl_t *tc = NULL;
    gpuic_proxy_queue_t tq = {0};
    double rate = 0;

    memset(mem, 0, len);
    *done = 0;
    if (gpuic_ring_create_tagged_at(mem, len, SLOTS, 1, &tr) != GPUIC_OK ||
        gpuic_cmpl_create(1, &tc) != GPUIC_OK) {
        goto out;
    }
    tq.ring = tr;
    tq.keys = keys;
    tq.cmpl = tc;
    tq.done = done;
    if (gpuic_proxy_add(proxy, &tq) != GPUIC_OK) {
        goto out;
    }
    t0 = now_ns();
    for (uint64_t seq = 0; seq < n; ++seq) {
        gpuic_wqe_hdr_t h = {(uint16_t)seq, 0, 0};
        gpuic_wqe_t w;
        uint64_t *dst = tr->tagged + (seq & tr->mask) * GPUIC_RING_TAGGED_WORDS;
        uint32_t tag = gpuic_ring_tag(seq, 0), words[GPUIC_RING_TAGGED_WORDS];
        unsigned spins = 0;

        while (seq + 1 - __atomic_load_n(done, __ATOMIC_ACQUIRE) > SLOTS) {
            gpuic_cpu_relax(++spins);
        }
        gpuic_wqe_build_put_inline(&w, &h, &zero, 8, target, tkey);
        memcpy(words, w.bytes, sizeof(words));
        uint64_t t_post = lat != NULL ? now_ns() : 0;
        for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
            __atomic_store_n(&dst[i], gpuic_ring_tagged_word(tag, words[i]), __ATOMIC_RELAXED);
        }
        if (lat != NULL) {
            while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < seq + 1) {
                /* polled like the device's poller: no pause, which would add its own delay */
            }
            lat[seq] = now_ns() - t_post;
            for (uint64_t until = now_ns() + gap_ns; now_ns() < until;) {
            }
        }
    }
    while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < n) {
        gpuic_cpu_relax(1000);
    }
    rate = n / ((double)(now_ns() - t0) * 1e-9) / 1e6;
    gpuic_proxy_remove(proxy, tr);
out:
    gpuic_cmpl_destroy(tc);
    gpuic_ring_destroy(tr);
    free(mem);
    free(done);
    return rate;
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    int sizes = 1, direct_host = 0;
    gpuic_proxy_params_t pp = {0};
    gpuic_proxy_queue_t q = {0};
    gpuic_keytable_entry_t e;
    gpuic_keytable_t *keys;
    uint64_t *lat = malloc(MAX_SAMPLES * sizeof(uint64_t));
    gpuic_proxy_stats_t st;

    for (int i = 2; i < argc; ++i) {
        sizes &= strcmp(argv[i], "--no-sizes") != 0;
        direct_host |= strcmp(argv[i], "--direct-host") == 0;
    }
    issue_samples = malloc(MAX_SAMPLES * sizeof(uint64_t));
    src = aligned_alloc(4096, MAX_SIZE);
    memset(src, 0x3c, MAX_SIZE);
    if (!side_create(&px, 1) || !side_create(&direct, 0)) {
        fprintf(stderr, "proxy_bench: UCX setup failed\n");
        return 0;
    }
    gpuic_keytable_create(16, &keys);
    e = (gpuic_keytable_entry_t){px.ep, px.rkey, (uint64_t)(uintptr_t)px.target, MAX_SIZE, 0};
    if (direct_host) {
        e.direct = GPUIC_KEYTABLE_DIRECT_HOST;
        e.cpu_atomics = 1;
    }
    gpuic_keytable_insert(keys, &e, &key);
    gpuic_cmpl_create(1, &cmpl);
    gpuic_ring_create(RING_SIZE, 0, &ring);
    pp.ctx = px.ctx;
    pp.on_issue = on_issue;
    gpuic_proxy_create(&pp, &proxy);
    q.ring = ring;
    q.keys = keys;
    q.cmpl = cmpl;
    gpuic_proxy_add(proxy, &q);

    printf("# proxy_bench: UCX loopback in one process%s; latency = post -> completion seen\n",
           direct_host ? " (proxy rows: direct host entry, CPU copies)" : "");
    printf("%8s %14s %14s %14s %14s\n", "size", "proxy Mmsg/s", "proxy lat us", "direct Mmsg/s",
           "direct lat us");
    for (uint32_t len = 8; sizes && len <= MAX_SIZE; len *= 2) {
        unsigned n_rate = (unsigned)(scale * (len <= 4096 ? 50000 : 5000));
        unsigned n_lat = (unsigned)(scale * (len <= 4096 ? 2000 : 500));
        uint64_t raddr = (uint64_t)(uintptr_t)px.target;
        uint64_t draddr = (uint64_t)(uintptr_t)direct.target, t0;
        double prate, drate, plat, dlat;

        if (n_lat > MAX_SAMPLES) {
            n_lat = MAX_SAMPLES;
        }
        t0 = now_ns();
        for (unsigned i = 0; i < n_rate; ++i) {
            proxy_post(len, raddr);
        }
        proxy_flush();
        prate = n_rate / ((double)(now_ns() - t0) * 1e-9) / 1e6;
        for (unsigned i = 0; i < n_lat; ++i) {
            t0 = now_ns();
            proxy_post(len, raddr);
            proxy_flush();
            lat[i] = now_ns() - t0;
        }
        plat = percentile(lat, n_lat, 0.5) / 1000.0;

        t0 = now_ns();
        for (unsigned i = 0; i < n_rate; ++i) {
            gpuic_rma_put(direct.ep, src, len, draddr, direct.rkey);
        }
        gpuic_ep_flush(direct.ep);
        drate = n_rate / ((double)(now_ns() - t0) * 1e-9) / 1e6;
        for (unsigned i = 0; i < n_lat; ++i) {
            t0 = now_ns();
            gpuic_rma_put(direct.ep, src, len, draddr, direct.rkey);
            gpuic_ep_flush(direct.ep);
            lat[i] = now_ns() - t0;
        }
        dlat = percentile(lat, n_lat, 0.5) / 1000.0;
        printf("%8u %14.3f %14.2f %14.3f %14.2f\n", len, prate, plat, drate, dlat);
    }

    /* producer posting rate: one producer, 8-byte inline puts, the proxy draining */
    {
        unsigned n = (unsigned)(scale * 2000000);
        uint64_t t0, t1, t2;

        stamp_posts = 0; /* no clock read in the producer's loop */
        t0 = now_ns();
        for (unsigned i = 0; i < n; ++i) {
            proxy_post(8, (uint64_t)(uintptr_t)px.target);
        }
        t1 = now_ns();
        proxy_flush();
        t2 = now_ns();
        stamp_posts = 1;
        printf("producer: %u 8-byte puts posted at %.2f M WQEs/s (end to end incl. flush: "
               "%.2f M/s)\n", n, n / ((double)(t1 - t0) * 1e-9) / 1e6,
               n / ((double)(t2 - t0) * 1e-9) / 1e6);

        t0 = now_ns();
        for (unsigned i = 0; i < n; i += BATCH) {
            proxy_post_batch(BATCH, (uint64_t)(uintptr_t)px.target);
        }
        t1 = now_ns();
        proxy_flush();
        t2 = now_ns();
        printf("producer, %d WQEs per doorbell: %u 8-byte puts posted at %.2f M WQEs/s (end to "
               "end incl. flush: %.2f M/s)\n", BATCH, n, n / ((double)(t1 - t0) * 1e-9) / 1e6,
               n / ((double)(t2 - t0) * 1e-9) / 1e6);
    }

    /* the device queue's shape: tagged words, completion index; the proxy serves that queue
     * alone meanwhile, as a window's proxy does (it paces itself for GPU producers then) */
    gpuic_proxy_remove(proxy, ring);
    {
        unsigned n = (unsigned)(scale * 2000000);

        printf("tagged ring (device-queue shape), %u 8-byte puts: %.2f M entries/s end to end\n",
               n, tagged_rate(keys, key, (uint64_t)(uintptr_t)px.target, n, NULL, 0));
        n = (unsigned)(scale * 20000);
        if (n > MAX_SAMPLES) {
            n = MAX_SAMPLES;
        }
        for (uint64_t gap_ns = 0; gap_ns <= 3000; gap_ns += 3000) {
            if (tagged_rate(keys, key, (uint64_t)(uintptr_t)px.target, n, lat, gap_ns) > 0) {
                printf("tagged ring, one entry at a time (%.0f us apart), %u 8-byte puts: entry "
                       "written -> completion index: median %.3f us, p99 %.3f us\n",
                       gap_ns / 1000.0, n, percentile(lat, n, 0.5) / 1000.0,
                       percentile(lat, n, 0.99) / 1000.0);
            }
        }
    }
    gpuic_proxy_add(proxy, &q);

    /* proxy overhead: posted (timestamp in the payload) -> UCX put issued, one at a time */
    {
        unsigned n = (unsigned)(scale * 20000);
        if (n > MAX_SAMPLES) {
            n = MAX_SAMPLES;
        }
        nissue = 0;
        gpuic_proxy_pause(proxy); /* publish record_issue to the proxy thread */
        record_issue = 1;
        gpuic_proxy_resume(proxy);
        for (unsigned i = 0; i < n; ++i) {
            proxy_post(8, (uint64_t)(uintptr_t)px.target);
            proxy_flush();
        }
        gpuic_proxy_pause(proxy);
        record_issue = 0;
        printf("proxy overhead (WQE posted -> UCX put issued), %zu samples: median %.3f us, "
               "p99 %.3f us\n", nissue, percentile(issue_samples, nissue, 0.5) / 1000.0,
               percentile(issue_samples, nissue, 0.99) / 1000.0);
        gpuic_proxy_resume(proxy);
    }
    /* pick-up after idle: the proxy is in a long pause; the commit must wake it */
    {
        struct timespec idle = {0, 200000000};
        uint64_t t0;

        nanosleep(&idle, NULL);
        t0 = now_ns();
        proxy_post(8, (uint64_t)(uintptr_t)px.target);
        proxy_flush();
        printf("idle proxy (pauses up to the default): WQE posted -> completion seen in %.1f us\n",
               (double)(now_ns() - t0) / 1000.0);
    }
    gpuic_proxy_stats(proxy, &st);
    printf("proxy: %lu WQEs, %lu rounds, %lu errors, %.2f s CPU\n", (unsigned long)st.wqes,
           (unsigned long)st.rounds, (unsigned long)st.errors, (double)st.cpu_ns * 1e-9);

    gpuic_proxy_destroy(proxy);
    gpuic_ring_destroy(ring);
    gpuic_cmpl_destroy(cmpl);
    gpuic_keytable_destroy(keys);
    side_destroy(&px);
    side_destroy(&direct);
    free(lat);
    free(issue_samples);
    free(src);
    return 0;
}
