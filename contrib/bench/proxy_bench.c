/*
 * proxy_bench - a host thread writing a send queue the way GPU threads write a window's device
 * queue (tagged words, a completion index: test/unit/ring_producer.h) -> proxy_ucx -> UCX
 * loopback, next to direct gpuic_rma_put + flush from one thread, in one run.
 *
 * Reports, per message size (8 B .. 64 KiB): message rate (a window of puts, then the wait for
 * the completion index) and latency (one put written -> the index covering it, median) for both
 * paths.  Then, for 8-byte inline puts: the rate at which one producer writes entries, the
 * latency one entry at a time, back to back and 3 us apart (a device thread's put + flush comes
 * every 3 us or so), the proxy's overhead from entry written to UCX call issued (its trace
 * stamps: only with a libgpuic configured --enable-trace), and the pick-up after an idle spell;
 * with --direct-host also the rate of 8-byte puts in PUT8_MULTI entries.
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
#include "gpuic_build_config.h"
#include "ring_producer.h"

#define MAX_SIZE (64 * 1024)
#define RING_SIZE 1024
#define MAX_SAMPLES 200000

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

static ring_producer_t rp;
static gpuic_cmpl_t *cmpl;
static gpuic_proxy_t *proxy;
static gpuic_trace_t *trace;
static uint32_t key;
static side_t px, direct;
static uint8_t *src;
static uint64_t posted_end; /* the sequence number after the last entry written */

/* Writes one put of len bytes (inline when it fits) as a GPU thread would; waits politely for
 * a free slot (the proxy may share the core).  Returns the entry's sequence number. */
static uint64_t proxy_post(uint32_t len, uint64_t raddr)
{
    gpuic_wqe_hdr_t h = {0, 0, 0};
    gpuic_wqe_t w;
    unsigned nbb;
    uint64_t seq;

    if (len <= GPUIC_WQE_MAX_INLINE) {
        nbb = gpuic_wqe_build_put_inline(&w, &h, src, len, raddr, key);
    } else {
        nbb = gpuic_wqe_build_put(&w, &h, (uint64_t)(uintptr_t)src, 0, len, raddr, key);
    }
    seq = ring_producer_reserve(&rp, nbb, NULL);
    gpuic_trace_open(gpuic_trace_view(trace, 0), seq, GPUIC_WQE_OP_RDMA_WRITE, len,
                     GPUIC_TRACE_CLOCK_HOST,
                     gpuic_trace_now());
    ring_producer_write(&rp, seq, &w, nbb);
    posted_end = seq + nbb;
    return seq;
}

/* Waits for the completion index to cover every entry written, polled like the device's
 * poller: no pause, which would add its own delay. */
static void proxy_flush(void)
{
    while (ring_producer_done(&rp) < posted_end) {
    }
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    int sizes = 1, direct_host = 0;
    gpuic_proxy_params_t pp = {0};
    gpuic_proxy_queue_t q;
    gpuic_keytable_entry_t e;
    gpuic_keytable_t *keys;
    uint64_t *lat = malloc(MAX_SAMPLES * sizeof(uint64_t));
    gpuic_proxy_stats_t st;

    for (int i = 2; i < argc; ++i) {
        sizes &= strcmp(argv[i], "--no-sizes") != 0;
        direct_host |= strcmp(argv[i], "--direct-host") == 0;
    }
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
    if (!ring_producer_create(&rp, RING_SIZE, 0, 0) ||
        gpuic_trace_create(RING_SIZE, 0, 0, &trace) != GPUIC_OK) {
        fprintf(stderr, "proxy_bench: setup failed\n");
        return 0;
    }
    pp.ctx = px.ctx;
    gpuic_proxy_create(&pp, &proxy);
    ring_producer_queue(&rp, &q);
    q.keys = keys;
    q.cmpl = cmpl;
    q.trace = trace;
    gpuic_proxy_add(proxy, &q);

    printf("# proxy_bench: UCX loopback in one process%s; latency = entry written -> completion "
           "index covering it\n",
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

    /* producer writing rate: one producer, 8-byte inline puts, the proxy draining */
    {
        unsigned n = (unsigned)(scale * 2000000);
        uint64_t t0, t1, t2;

        t0 = now_ns();
        for (unsigned i = 0; i < n; ++i) {
            proxy_post(8, (uint64_t)(uintptr_t)px.target);
        }
        t1 = now_ns();
        proxy_flush();
        t2 = now_ns();
        printf("producer: %u 8-byte puts written at %.2f M entries/s (end to end incl. the "
               "completion index: %.2f M/s)\n", n, n / ((double)(t1 - t0) * 1e-9) / 1e6,
               n / ((double)(t2 - t0) * 1e-9) / 1e6);
    }

    /* 8-byte puts in PUT8_MULTI entries of GPUIC_WQE_PUT8_MAX (what a warp of 8-byte puts to a
     * same-node host window becomes; direct host entries only): the rate the proxy makes
     * them at, the puts 56 bytes apart over the region as a warp's are */
    if (direct_host) {
        unsigned n = (unsigned)(scale * 300000);
        uint64_t raddrs[GPUIC_WQE_PUT8_MAX], data[GPUIC_WQE_PUT8_MAX], base, t0, t1, seq;
        const uint64_t words = MAX_SIZE / 8;
        gpuic_wqe_hdr_t h = {0, 0, 0};
        gpuic_wqe_t w;
        unsigned nbb;

        gpuic_proxy_stats_t s0, s1;
        uint64_t rounds;

        base = (uint64_t)(uintptr_t)px.target;
        memset(data, 0x5a, sizeof(data));
        gpuic_proxy_stats(proxy, &s0);
        t0 = now_ns();
        for (unsigned i = 0; i < n; ++i) {
            for (unsigned k = 0; k < GPUIC_WQE_PUT8_MAX; ++k) {
                raddrs[k] = base + ((uint64_t)(i * GPUIC_WQE_PUT8_MAX + k) * 7 % words) * 8;
            }
            nbb = gpuic_wqe_build_put8_multi(&w, &h, key, GPUIC_WQE_PUT8_MAX, raddrs, data);
            seq = ring_producer_reserve(&rp, nbb, NULL);
            ring_producer_write(&rp, seq, &w, nbb);
            posted_end = seq + nbb;
        }
        proxy_flush();
        t1 = now_ns();
        gpuic_proxy_stats(proxy, &s1);
        rounds = s1.rounds > s0.rounds ? s1.rounds - s0.rounds : 1;
        printf("PUT8_MULTI: %u entries of %u 8-byte puts: %.2f M puts/s (end to end); proxy "
               "busy %.0f%% of it, %.0f ns an entry, %.1f entries a round\n", n,
               (unsigned)GPUIC_WQE_PUT8_MAX,
               (double)n * GPUIC_WQE_PUT8_MAX / ((double)(t1 - t0) * 1e-9) / 1e6,
               100.0 * (double)(s1.busy_ns - s0.busy_ns) / (double)(t1 - t0),
               (double)(s1.busy_ns - s0.busy_ns) / n,
               (double)(s1.wqes - s0.wqes) / (double)rounds);
    }

    /* one entry at a time, back to back and 3 us apart: entry written -> completion index, and
     * (traced libgpuic) entry written -> UCX call issued from the proxy's trace stamps */
    {
        unsigned n = (unsigned)(scale * 20000);
        uint64_t *issue = malloc(MAX_SAMPLES * sizeof(uint64_t));
        size_t nissue = 0;

        if (n > MAX_SAMPLES) {
            n = MAX_SAMPLES;
        }
        for (uint64_t gap_ns = 0; gap_ns <= 3000; gap_ns += 3000) {
            nissue = 0;
            for (unsigned i = 0; i < n; ++i) {
                uint64_t t0 = now_ns(), seq = proxy_post(8, (uint64_t)(uintptr_t)px.target);
                const gpuic_trace_record_t *r = gpuic_trace_record(gpuic_trace_view(trace, 0), seq);

                proxy_flush();
                lat[i] = now_ns() - t0;
                if (r->t[GPUIC_TRACE_ISSUED] != 0) {
                    issue[nissue++] = r->t[GPUIC_TRACE_ISSUED] - r->t[GPUIC_TRACE_ISSUE];
                }
                for (uint64_t until = now_ns() + gap_ns; now_ns() < until;) {
                }
            }
            printf("one entry at a time (%.0f us apart), %u 8-byte puts: entry written -> "
                   "completion index: median %.3f us, p99 %.3f us\n", gap_ns / 1000.0, n,
                   percentile(lat, n, 0.5) / 1000.0, percentile(lat, n, 0.99) / 1000.0);
        }
#ifdef GPUIC_TRACE
        printf("proxy overhead (entry written -> UCX put issued), %zu samples: median %.3f us, "
               "p99 %.3f us\n", nissue, percentile(issue, nissue, 0.5) / 1000.0,
               percentile(issue, nissue, 0.99) / 1000.0);
#else
        printf("proxy overhead (entry written -> UCX put issued): not measured, libgpuic is "
               "not traced (configure --enable-trace; contrib/gpuic-dissect has its own)\n");
#endif
        free(issue);
    }
    /* pick-up after an idle spell (the ring has carried entries: the proxy polls it) */
    {
        struct timespec idle = {0, 200000000};
        uint64_t t0;

        nanosleep(&idle, NULL);
        t0 = now_ns();
        proxy_post(8, (uint64_t)(uintptr_t)px.target);
        proxy_flush();
        printf("after 0.2 s idle: entry written -> completion index in %.1f us\n",
               (double)(now_ns() - t0) / 1000.0);
    }
    gpuic_proxy_stats(proxy, &st);
    printf("proxy: %lu WQEs, %lu rounds, %lu errors, %.2f s CPU\n", (unsigned long)st.wqes,
           (unsigned long)st.rounds, (unsigned long)st.errors, (double)st.cpu_ns * 1e-9);

    gpuic_proxy_destroy(proxy);
    ring_producer_destroy(&rp);
    gpuic_trace_destroy(trace);
    gpuic_cmpl_destroy(cmpl);
    gpuic_keytable_destroy(keys);
    side_destroy(&px);
    side_destroy(&direct);
    free(lat);
    free(src);
    return 0;
}
