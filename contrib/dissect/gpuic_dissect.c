/*
 * gpuic_dissect - runs one kind of operation through one path, one at a time (or a batch per
 * doorbell), and writes every WQE's stage stamps (gpuic_trace.h) as CSV: one row per
 * operation, ns since its issue stamp, on the host clock.  contrib/gpuic-dissect turns the
 * rows into a stage table (median, p99, share) and a chart.
 *
 * Paths:
 *   host   a host thread writes WQEs into a proxy ring as GPU threads do (tagged words, a
 *          completion index: test/unit/ring_producer.h); the proxy executes them over UCX
 *          loopback (this process is origin and target).  Its fenced and doorbell stamps
 *          are both the moment the entry's stores begin: tagged words publish it, with no
 *          fence and no doorbell.
 *   proxy  entries posted by GPU threads through the device API: the separate CUDA program
 *          dissect_proxy (run it through contrib/gpuic-dissect --path proxy).
 *   p2p    the device API's direct stores (CUDA IPC): the separate program dissect_p2p,
 *          run under mpirun with two ranks.
 *
 * Usage: gpuic_dissect [--path host] [--op put|get|atomic|put_signal] [--size BYTES]
 *                      [--iters N] [--warmup N] [--batch K] [--gap-us US]
 *                      [--wait sleep|poll] [--spin-rounds N] [--max-sleep-us US] [--csv FILE]
 * --wait: how the producer waits for the completion index: spinning briefly, then napping
 * (sleep, the default) or polling it (poll: what a latency-bound producer does).
 * Exit status: 0 done, 2 bad arguments, 3 path not available in this build, 1 setup failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dissect_loopback.h"
#include "gpuic.h"
#include "ring_producer.h"

#define DISSECT_RING_SIZE 1024
#define DISSECT_MAX_BATCH 64

typedef struct dissect_opts {
    const char *path;
    const char *op;
    uint32_t size;
    unsigned iters, warmup, batch, gap_us;
    unsigned spin_rounds, max_sleep_us;
    int poll;          /* wait by polling the completion index instead of napping */
    const char *csv;
} dissect_opts_t;

/* A path the tool knows: run() is NULL where this build cannot exercise it. */
typedef struct dissect_path {
    const char *name;
    int (*run)(const dissect_opts_t *o, FILE *out);
    const char *unavailable; /* why run is NULL */
} dissect_path_t;

/* ---- host path: host thread -> ring -> proxy -> UCX loopback ---- */

typedef struct host_setup {
    dissect_loopback_t lb;
    gpuic_keytable_t *keys;
    gpuic_cmpl_t *cmpl;
    ring_producer_t rp;
    gpuic_trace_t *trace;
    gpuic_proxy_t *proxy;
    uint8_t *target, *src;
    uint64_t *result;
    size_t region;
    uint32_t key;
} host_setup_t;

static int host_setup(host_setup_t *h, const dissect_opts_t *o)
{
    gpuic_proxy_params_t pp = {0};
    gpuic_proxy_queue_t q;
    gpuic_keytable_entry_t e;

    memset(h, 0, sizeof(*h));
    h->region = ((size_t)o->size + 64 + 4095) / 4096 * 4096; /* data, then the signal word */
    h->target = aligned_alloc(4096, h->region);
    h->src = aligned_alloc(4096, h->region);
    h->result = aligned_alloc(64, 64);
    if (h->target == NULL || h->src == NULL || h->result == NULL) {
        return 0;
    }
    memset(h->target, 0, h->region);
    memset(h->src, 0x5a, h->region);
    if (!dissect_loopback_create(&h->lb, h->target, h->region)) {
        return 0;
    }
    if (gpuic_keytable_create(16, &h->keys) != GPUIC_OK ||
        gpuic_cmpl_create(1, &h->cmpl) != GPUIC_OK ||
        !ring_producer_create(&h->rp, DISSECT_RING_SIZE, 0, 0) ||
        gpuic_trace_create(DISSECT_RING_SIZE, (size_t)o->iters * o->batch, 0, &h->trace) !=
            GPUIC_OK) {
        return 0;
    }
    e = (gpuic_keytable_entry_t){h->lb.ep, h->lb.rkey, (uint64_t)(uintptr_t)h->target, h->region, 0};
    if (gpuic_keytable_insert(h->keys, &e, &h->key) != GPUIC_OK) {
        return 0;
    }
    pp.ctx = h->lb.ctx;
    pp.spin_rounds = o->spin_rounds;
    pp.max_sleep_us = o->max_sleep_us;
    if (gpuic_proxy_create(&pp, &h->proxy) != GPUIC_OK) {
        return 0;
    }
    ring_producer_queue(&h->rp, &q);
    q.keys = h->keys;
    q.cmpl = h->cmpl;
    q.trace = h->trace;
    return gpuic_proxy_add(h->proxy, &q) == GPUIC_OK;
}

static void host_teardown(host_setup_t *h)
{
    gpuic_proxy_destroy(h->proxy);
    gpuic_trace_destroy(h->trace);
    ring_producer_destroy(&h->rp);
    gpuic_cmpl_destroy(h->cmpl);
    gpuic_keytable_destroy(h->keys);
    dissect_loopback_destroy(&h->lb);
    free(h->target);
    free(h->src);
    free(h->result);
}

/* Builds the WQE of operation @p op for slot @p seq; returns its basic blocks. */
static unsigned host_build(host_setup_t *h, const char *op, uint32_t size, uint64_t seq,
                           gpuic_wqe_t *w, uint8_t *opcode)
{
    gpuic_wqe_hdr_t hdr = {(uint16_t)seq, 0, 0};
    uint64_t raddr = (uint64_t)(uintptr_t)h->target;
    uint64_t sig = raddr + h->region - 64;

    if (strcmp(op, "put") == 0) {
        *opcode = GPUIC_WQE_OP_RDMA_WRITE;
        if (size <= GPUIC_WQE_MAX_INLINE) {
            return gpuic_wqe_build_put_inline(w, &hdr, h->src, size, raddr, h->key);
        }
        return gpuic_wqe_build_put(w, &hdr, (uint64_t)(uintptr_t)h->src, 0, size, raddr, h->key);
    }
    if (strcmp(op, "get") == 0) {
        *opcode = GPUIC_WQE_OP_RDMA_READ;
        return gpuic_wqe_build_get(w, &hdr, (uint64_t)(uintptr_t)h->src, 0, size, raddr, h->key);
    }
    if (strcmp(op, "atomic") == 0) {
        *opcode = GPUIC_WQE_OP_ATOMIC_FA;
        return gpuic_wqe_build_atomic(w, &hdr, GPUIC_WQE_OP_ATOMIC_FA, 1, 0,
                                      (uint64_t)(uintptr_t)h->result, 0, raddr, h->key);
    }
    *opcode = GPUIC_WQE_OP_PUT_SIGNAL;
    return gpuic_wqe_build_put_signal(w, &hdr, (uint64_t)(uintptr_t)h->src, 0, size, raddr,
                                      h->key, sig, h->key, GPUIC_SIGNAL_ADD, 1);
}

/*
 * Waits for the completion index to reach @p end: polling it (@p poll), yielding the core now
 * and then (gpuic_cpu_relax()) but never sleeping, as a latency-bound producer would; or
 * spinning 256 times, then napping from 1 us doubling up to 256 us (a nap costs the timer's
 * slack, tens of microseconds).
 */
static void host_wait(const ring_producer_t *rp, uint64_t end, int poll)
{
    struct timespec pause = {0, 1000};
    unsigned spins = 0;

    while (ring_producer_done(rp) < end) {
        if (poll || ++spins < 256) {
            gpuic_cpu_relax(spins);
            continue;
        }
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < 256000) {
            pause.tv_nsec *= 2;
        }
    }
}

/* Writes one batch of @p n operations (one reservation), waits for their completion, harvests
 * their records. */
static void host_one(host_setup_t *h, const dissect_opts_t *o, unsigned n)
{
    gpuic_trace_view_t v = gpuic_trace_view(h->trace, 0);
    gpuic_wqe_t w[DISSECT_MAX_BATCH];
    unsigned nbb[DISSECT_MAX_BATCH], total = 0;
    uint8_t opcode = 0;
    uint64_t seq, t0 = gpuic_trace_now(), s;

    /* the slot count depends on the WQE, which needs the slot number: build once to size */
    for (unsigned i = 0; i < n; ++i) {
        nbb[i] = host_build(h, o->op, o->size, 0, &w[i], &opcode);
        total += nbb[i];
    }
    seq = ring_producer_reserve(&h->rp, total, NULL);
    s = seq;
    for (unsigned i = 0; i < n; ++i) {
        gpuic_trace_open(v, s, opcode, o->size, GPUIC_TRACE_CLOCK_HOST, t0);
        host_build(h, o->op, o->size, s, &w[i], &opcode);
        gpuic_trace_stamp(v, s, GPUIC_TRACE_WRITTEN);
        s += nbb[i];
    }
    s = seq;
    for (unsigned i = 0; i < n; ++i) {
        /* the stores publish the entry: both stamps first, so the proxy's come after them */
        gpuic_trace_stamp(v, s, GPUIC_TRACE_FENCED);
        gpuic_trace_stamp(v, s, GPUIC_TRACE_DOORBELL);
        ring_producer_write(&h->rp, s, &w[i], nbb[i]);
        s += nbb[i];
    }
    host_wait(&h->rp, seq + total, o->poll);
    for (s = seq; s != seq + total; ++s) {
        gpuic_trace_stamp(v, s, GPUIC_TRACE_SEEN);
    }
    s = seq;
    for (unsigned i = 0; i < n; ++i) {
        gpuic_trace_harvest(h->trace, s, 1);
        s += nbb[i];
    }
}

static int host_run(const dissect_opts_t *o, FILE *out)
{
    host_setup_t h;
    const gpuic_trace_record_t *log;
    size_t n;
    struct timespec gap = {0, (long)o->gap_us * 1000};
    gpuic_status_t err;

    if (!host_setup(&h, o)) {
        fprintf(stderr, "gpuic_dissect: UCX loopback setup failed\n");
        host_teardown(&h);
        return 1;
    }
    for (unsigned i = 0; i < o->warmup; ++i) {
        host_one(&h, o, o->batch);
    }
    gpuic_trace_log_reset(h.trace);
    for (unsigned i = 0; i < o->iters; ++i) {
        if (o->gap_us != 0) {
            nanosleep(&gap, NULL);
        }
        host_one(&h, o, o->batch);
    }
    err = gpuic_cmpl_error(h.cmpl);
    log = gpuic_trace_log(h.trace, &n);
    fprintf(out, "# gpuic_dissect path=host op=%s size=%u iters=%u batch=%u gap_us=%u "
            "wait=%s clock=host lost=%lu error=%s\n", o->op, o->size, o->iters, o->batch,
            o->gap_us, o->poll ? "poll" : "sleep",
            (unsigned long)gpuic_trace_lost(h.trace), gpuic_status_string(err));
    fprintf(out, "op,size");
    for (unsigned s = 0; s < GPUIC_TRACE_NSTAGES; ++s) {
        fprintf(out, ",%s", gpuic_trace_stage_name((gpuic_trace_stage_t)s));
    }
    fprintf(out, "\n");
    for (size_t i = 0; i < n; ++i) {
        fprintf(out, "%s,%u", o->op, log[i].len);
        for (unsigned s = 0; s < GPUIC_TRACE_NSTAGES; ++s) {
            /* an unstamped stage stays empty: the reader must not take it for time zero */
            if (log[i].t[s] == 0) {
                fprintf(out, ",");
            } else {
                fprintf(out, ",%ld", (long)(log[i].t[s] - log[i].t[GPUIC_TRACE_ISSUE]));
            }
        }
        fprintf(out, "\n");
    }
    host_teardown(&h);
    return err == GPUIC_OK ? 0 : 1;
}

static const dissect_path_t dissect_paths[] = {
    {"host", host_run, NULL},
    {"proxy", NULL, "the proxy path with GPU producers is the CUDA program dissect_proxy (run "
                    "it through contrib/gpuic-dissect --path proxy)"},
    {"p2p", NULL, "the p2p path is the MPI+CUDA program dissect_p2p (run it through "
                  "contrib/gpuic-dissect --path p2p)"},
};

static int usage(void)
{
    fprintf(stderr, "usage: gpuic_dissect [--path host|proxy|p2p] "
            "[--op put|get|atomic|put_signal] [--size BYTES] [--iters N] [--warmup N] "
            "[--batch K] [--gap-us US] [--wait sleep|poll] [--spin-rounds N] [--max-sleep-us US] "
            "[--csv FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    dissect_opts_t o = {"host", "put", 8, 1000, 100, 1, 0, 0, 0, 0, NULL};
    static const char *const ops[] = {"put", "get", "atomic", "put_signal"};
    const dissect_path_t *path = NULL;
    FILE *out = stdout;
    int known = 0, rc;

    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            return usage();
        }
        if (strcmp(a, "--path") == 0) {
            o.path = v;
        } else if (strcmp(a, "--op") == 0) {
            o.op = v;
        } else if (strcmp(a, "--size") == 0) {
            o.size = (uint32_t)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--iters") == 0) {
            o.iters = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--warmup") == 0) {
            o.warmup = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--batch") == 0) {
            o.batch = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--gap-us") == 0) {
            o.gap_us = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--spin-rounds") == 0) {
            o.spin_rounds = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--max-sleep-us") == 0) {
            o.max_sleep_us = (unsigned)strtoul(v, NULL, 0);
        } else if (strcmp(a, "--wait") == 0) {
            if (strcmp(v, "poll") != 0 && strcmp(v, "sleep") != 0) {
                return usage();
            }
            o.poll = strcmp(v, "poll") == 0;
        } else if (strcmp(a, "--csv") == 0) {
            o.csv = v;
        } else {
            return usage();
        }
        ++i;
    }
    for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        known |= strcmp(o.op, ops[i]) == 0;
    }
    if (!known || o.iters == 0 || o.batch == 0 || o.batch > DISSECT_MAX_BATCH ||
        o.gap_us >= 1000000 || o.size == 0 ||
        o.size > (64u << 20)) {
        return usage();
    }
    if (strcmp(o.op, "atomic") == 0) {
        o.size = strcmp(o.op, "atomic") == 0 ? 8 : 0;
    }
    for (unsigned i = 0; i < sizeof(dissect_paths) / sizeof(dissect_paths[0]); ++i) {
        if (strcmp(o.path, dissect_paths[i].name) == 0) {
            path = &dissect_paths[i];
        }
    }
    if (path == NULL) {
        return usage();
    }
    if (path->run == NULL) {
        printf("gpuic_dissect: path %s not available in this build: %s\n", path->name,
               path->unavailable);
        return 3;
    }
    if (o.csv != NULL && (out = fopen(o.csv, "w")) == NULL) {
        perror(o.csv);
        return 1;
    }
    rc = path->run(&o, out);
    if (out != stdout) {
        fclose(out);
    }
    return rc;
}
