/*
 * dissect_proxy - the device API's proxy path taken apart per operation: a GPU thread posts
 * work-queue entries into a device queue, the proxy thread executes them with UCX, the GPU
 * thread waits for the completion index.  Every entry's record (gpuic_trace.h) gets all eight
 * stages on one timeline:
 *   issue, written, fenced, doorbell   GPU producer (mpix_gpuic_device_proxy.cuh's hooks,
 *                                      compiled in by MPIX_GPUIC_DEVICE_TRACE below)
 *   pickup, issued, remote             proxy thread (this program's traced libgpuic)
 *   seen                               GPU producer: the call that waits for the completion
 *                                      returned (put and put_signal: the flush after them)
 * The device stages are moved onto the host clock by a calibration
 * (gpuic_trace_calibrate.cuh); the CSV's comment lines give its offset and uncertainty.
 *
 * One process, one GPU, no MPI: the queue is built here the way osc_gpuic_devqueue.c builds a
 * window's queue (a tagged ring created in a pinned block mapped into the device, entries
 * written and published in the same tagged stores, the completion index and the staging areas behind it, the producer counters in
 * device memory), next to a device window handle with one proxy-path target: a host-memory
 * region of this process reached by UCX loopback, as in gpuic_dissect's host path.  So the
 * proxy, the ring, the UCX calls and the device code are the library's; only the window setup
 * is this program's.  The program links the traced copy of libgpuic built next to it
 * (libgpuic_traced, GPUIC_TRACE defined), so it needs no --enable-trace build.
 *
 * Device stamps are SM cycle counts turned into %globaltimer nanoseconds by interpolating
 * between timer readings at the start and the end of the kernel (as dissect_p2p does; the
 * timer itself advances in steps as coarse as a microsecond on some GPUs); one thread on one SM
 * stamps, so its counter is monotonic.
 *
 * Usage: dissect_proxy [--op put|get|atomic|flush|put_signal] [--size BYTES] [--iters N]
 *                      [--warmup N] [--spin-rounds N] [--max-sleep-us US] [--csv FILE]
 * flush: a device flush posts no entry; the row is the flush call of an empty queue (issue,
 * seen).  --size: up to 1 MiB (one entry per operation: the staging area is sized to it).
 * Exit status: 0 done, 2 bad arguments, 3 no GPU, 1 setup or a run failed.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPIX_GPUIC_DEVICE_TRACE 1
#define MPIX_GPUIC_DEVICE_TRACE_CLOCK() ((uint64_t)clock64())

#include "dissect_loopback.h"
#include "gpuic.h"
#include "gpuic_trace_calibrate.cuh"
#include "mpix_gpuic_device.cuh"

#define PROXY_SLOTS 64u
#define PROXY_DONE_LINE 64u
#define PROXY_MAX_SIZE (1u << 20)
#define CALIB_ROUNDS 2000
#define PROXY_TIMEOUT_NS 10000000000ull

enum proxy_op { PX_PUT, PX_GET, PX_ATOMIC, PX_FLUSH, PX_PUT_SIGNAL };
static const char *const proxy_op_names[] = {"put", "get", "atomic", "flush", "put_signal"};

/* Per operation, in device memory while the kernel runs: the sequence number of its entry, the
 * cycle count when the call began (flush rows) and when the completion was seen. */
#define SCRATCH_PER_OP 3

/* Reads the cycle counter just after %globaltimer advances, into *g and *c: an anchor exact to
 * a few cycles even where the timer advances in microsecond steps (a reading at an arbitrary
 * moment would be up to one step behind). */
__device__ static void proxy_anchor(uint64_t *g, uint64_t *c)
{
    uint64_t g0 = gpuic_trace_now(), g1;

    while ((g1 = gpuic_trace_now()) == g0) {
    }
    *c = (uint64_t)clock64();
    *g = g1;
}

/*
 * One thread posts @p iters operations one at a time, each followed by what observes its
 * completion.  info receives: [0] smallest %globaltimer step seen, [1] timer at the start of
 * the measurement, [2] cycles then, [3] timer at its end, [4] cycles then, [5] the first error.
 */
__global__ void k_proxy(MPIX_Win_device win, uint64_t *scratch, uint64_t *info, int op,
                        size_t size, uint64_t sig_off, uint64_t amo_off, int iters,
                        const char *src, char *dst, int64_t *result)
{
    MPIX_Device_target t;
    uint64_t step = UINT64_MAX, prev = gpuic_trace_now();
    int rc = MPIX_Win_target_device(win, 0, &t);

    for (int k = 0; k < 2000; ++k) {
        uint64_t now = gpuic_trace_now();

        if (now != prev && now - prev < step) {
            step = now - prev;
        }
        prev = now;
    }
    info[0] = step;
    proxy_anchor(&info[1], &info[2]);
    for (int i = 0; i < iters && rc == MPI_SUCCESS; ++i) {
        /* the only producer: the next reservation is this operation's entry */
        uint64_t seq = *(volatile unsigned long long *)&t.queue->tickets >> 32;
        uint64_t c0 = (uint64_t)clock64();

        switch (op) {
        case PX_PUT:
            rc = MPIX_Put_target_device(&t, src, size, 0);
            if (rc == MPI_SUCCESS) {
                rc = MPIX_Win_flush_target_device(&t);
            }
            break;
        case PX_GET:
            rc = MPIX_Get_target_device(&t, dst, size, 0);
            break;
        case PX_ATOMIC:
            rc = MPIX_Fetch_and_add_device(1, result, 0, (MPI_Aint)amo_off, win);
            break;
        case PX_PUT_SIGNAL:
            rc = MPIX_Put_signal_target_device(&t, src, size, 0, (MPI_Aint)sig_off,
                                               (uint64_t)i + 1, MPIX_DEVICE_SIGNAL_SET);
            if (rc == MPI_SUCCESS) {
                rc = MPIX_Win_flush_target_device(&t);
            }
            break;
        default:
            rc = MPIX_Win_flush_target_device(&t);
            break;
        }
        /* stamps stay in device memory until the host reads them after the kernel: a store
         * to the mapped trace here would cross PCIe and delay the next entry's fence */
        scratch[SCRATCH_PER_OP * i] = seq;
        scratch[SCRATCH_PER_OP * i + 1] = c0;
        scratch[SCRATCH_PER_OP * i + 2] = (uint64_t)clock64();
    }
    proxy_anchor(&info[3], &info[4]);
    info[5] = (uint64_t)rc;
}

/* ---- the queue, its target and the proxy ---- */

typedef struct proxy_setup {
    dissect_loopback_t lb;
    gpuic_keytable_t *keys;
    gpuic_cmpl_t *cmpl;
    gpuic_ring_t *ring;
    gpuic_trace_t *trace;
    gpuic_proxy_t *proxy;
    void *block;              /* pinned: ring, completion and free indexes, staging, acks */
    size_t block_len;
    char *block_dev;
    uint8_t *target;          /* the target region (host memory) */
    size_t region;
    uint32_t key;
    uint32_t stage_bytes;
    uint32_t *error_word;     /* mapped pinned */
    MPIX_Gpuic_device_queue *dq;  /* device memory */
    MPIX_Gpuic_device_win *dwin;  /* device memory */
    MPIX_Win_device handle;       /* the handle kernels take, pointing to dwin */
} proxy_setup_t;

static int proxy_setup(proxy_setup_t *p, size_t size, uint64_t nrecords, unsigned spin_rounds,
                       unsigned max_sleep_us)
{
    gpuic_proxy_params_t pp;
    gpuic_proxy_queue_t q;
    gpuic_keytable_entry_t e;
    MPIX_Gpuic_device_queue d;
    size_t ring_len = gpuic_ring_footprint_tagged(PROXY_SLOTS), win_len, acks_off;
    void *dptr = NULL;
    uint32_t *werr_dev = NULL;
    char *b;

    memset(&pp, 0, sizeof(pp));
    /* device memory the entries name (zero-copy puts and gets) goes through the driver */
    pp.copy = gpuic_cuda_copy_independent;
    memset(&q, 0, sizeof(q));
    memset(&d, 0, sizeof(d));
    /* data at 0, then the fetch-and-add word and the signal word on lines of their own */
    p->region = ((size + 128 + 4095) / 4096) * 4096;
    p->target = (uint8_t *)aligned_alloc(4096, p->region);
    if (p->target == NULL) {
        return 0;
    }
    memset(p->target, 0, p->region);
    if (!dissect_loopback_create(&p->lb, p->target, p->region)) {
        return 0;
    }

    /* the block of osc_gpuic_devqueue.c: ring, completion index line, staging per slot, the
     * result acknowledgements (one word per slot) */
    p->stage_bytes = (uint32_t)((size + 63) / 64 * 64);
    p->stage_bytes = p->stage_bytes < 64 ? 64 : p->stage_bytes;
    acks_off = ring_len + PROXY_DONE_LINE + (size_t)PROXY_SLOTS * p->stage_bytes;
    p->block_len = acks_off + (size_t)PROXY_SLOTS * sizeof(uint64_t);
    p->block_len = (p->block_len + 4095) / 4096 * 4096; /* registration pins whole pages */
    p->block = aligned_alloc(4096, p->block_len);
    if (p->block == NULL) {
        return 0;
    }
    memset(p->block, 0, p->block_len);
    if (gpuic_cuda_host_register(p->block, p->block_len, &dptr) != GPUIC_OK) {
        free(p->block);
        p->block = NULL;
        return 0;
    }
    p->block_dev = (char *)dptr;
    if (gpuic_ring_create_tagged_at(p->block, ring_len, PROXY_SLOTS, 0, &p->ring) != GPUIC_OK) {
        return 0;
    }
    if (gpuic_keytable_create(16, &p->keys) != GPUIC_OK ||
        gpuic_cmpl_create(1, &p->cmpl) != GPUIC_OK ||
        gpuic_trace_create(nrecords, nrecords, GPUIC_TRACE_DEVICE_MAPPED, &p->trace) !=
            GPUIC_OK) {
        return 0;
    }
    memset(&e, 0, sizeof(e));
    e.ep = p->lb.ep;
    e.rkey = p->lb.rkey;
    e.base = (uint64_t)(uintptr_t)p->target;
    e.len = p->region;
    if (gpuic_keytable_insert(p->keys, &e, &p->key) != GPUIC_OK) {
        return 0;
    }
    pp.ctx = p->lb.ctx;
    pp.spin_rounds = spin_rounds;
    pp.max_sleep_us = max_sleep_us;
    if (gpuic_proxy_create(&pp, &p->proxy) != GPUIC_OK) {
        return 0;
    }
    q.ring = p->ring;
    q.keys = p->keys;
    q.cmpl = p->cmpl;
    q.done = (uint64_t *)((char *)p->block + ring_len);
    q.free = q.done + 1;
    q.acks = (const uint64_t *)((char *)p->block + acks_off);
    q.trace = p->trace;
    if (gpuic_proxy_add(p->proxy, &q) != GPUIC_OK) {
        return 0;
    }

    /* the device-memory descriptor (ompi_osc_gpuic_devqueue_publish()) */
    b = p->block_dev;
    d.tagged = (uint64_t *)(b + ((char *)p->ring->tagged - (char *)p->block));
    d.done = (const uint64_t *)(b + ring_len);
    d.stage = b + ring_len + PROXY_DONE_LINE;
    d.stage_host = (uint64_t)(uintptr_t)((char *)p->block + ring_len + PROXY_DONE_LINE);
    d.timeout_ns = PROXY_TIMEOUT_NS;
    d.size = p->ring->size;
    d.stage_bytes = p->stage_bytes;
    d.trace_records = gpuic_trace_view(p->trace, 1).records;
    d.trace_mask = gpuic_trace_view(p->trace, 1).mask;
    d.acks = (uint64_t *)(b + acks_off);
    if (cudaMalloc((void **)&p->dq, sizeof(d)) != cudaSuccess ||
        cudaMemcpy(p->dq, &d, sizeof(d), cudaMemcpyHostToDevice) != cudaSuccess) {
        return 0;
    }

    /* a device window of one rank whose only target is the host region, on the proxy path */
    if (cudaHostAlloc((void **)&p->error_word, 64, cudaHostAllocMapped) != cudaSuccess ||
        cudaHostGetDevicePointer((void **)&werr_dev, p->error_word, 0) != cudaSuccess) {
        return 0;
    }
    *p->error_word = 0;
    win_len = sizeof(MPIX_Gpuic_device_win) + sizeof(MPIX_Gpuic_device_peer);
    {
        MPIX_Gpuic_device_win *w = (MPIX_Gpuic_device_win *)calloc(1, win_len);
        int ok;

        if (w == NULL) {
            return 0;
        }
        w->magic = MPIX_GPUIC_DEVICE_MAGIC;
        w->rank = 0;
        w->nranks = 1;
        w->error_word = werr_dev;
        w->queue = p->dq;
        w->peers[0].base = (uint64_t)(uintptr_t)p->target;
        w->peers[0].size = p->region;
        w->peers[0].disp_unit = 1;
        w->peers[0].path = MPIX_GPUIC_DEVICE_PATH_PROXY;
        w->peers[0].key = p->key;
        ok = cudaMalloc((void **)&p->dwin, win_len) == cudaSuccess &&
             cudaMemcpy(p->dwin, w, win_len, cudaMemcpyHostToDevice) == cudaSuccess;
        p->handle = gpuic_dev_handle_of(p->dwin, w);
        free(w);
        return ok;
    }
}

static void proxy_teardown(proxy_setup_t *p)
{
    gpuic_proxy_destroy(p->proxy);
    if (p->dwin != NULL) {
        cudaFree(p->dwin);
    }
    if (p->dq != NULL) {
        cudaFree(p->dq);
    }
    if (p->error_word != NULL) {
        cudaFreeHost(p->error_word);
    }
    gpuic_trace_destroy(p->trace);
    if (p->block != NULL) {
        gpuic_cuda_host_unregister(p->block);
        free(p->block);
    }
    gpuic_cmpl_destroy(p->cmpl);
    gpuic_keytable_destroy(p->keys);
    dissect_loopback_destroy(&p->lb);
    free(p->target);
}

/* Cycle count @p c of the kernel whose anchors are @p info, as %globaltimer nanoseconds. */
static uint64_t proxy_cycles_to_ns(const uint64_t *info, uint64_t c)
{
    double ns_per_cycle = info[4] > info[2] ? (double)(info[3] - info[1]) /
                                                  (double)(info[4] - info[2])
                                            : 0.0;

    return info[1] + (uint64_t)((double)(int64_t)(c - info[2]) * ns_per_cycle);
}

/* The producer stages of the record of @p seq, stamped in cycles, as timer nanoseconds; the
 * seen stamp from @p seen_cycles. */
static void proxy_record_to_ns(gpuic_trace_view_t v, uint64_t seq, const uint64_t *info,
                               uint64_t seen_cycles)
{
    static const unsigned producer[] = {GPUIC_TRACE_ISSUE, GPUIC_TRACE_WRITTEN,
                                        GPUIC_TRACE_FENCED, GPUIC_TRACE_DOORBELL};
    gpuic_trace_record_t *r = gpuic_trace_record(v, seq);

    if (r->seq != seq + 1) {
        return; /* overwritten: gpuic_trace_harvest() counts it lost */
    }
    for (unsigned k = 0; k < sizeof(producer) / sizeof(producer[0]); ++k) {
        if (r->t[producer[k]] != 0) {
            r->t[producer[k]] = proxy_cycles_to_ns(info, r->t[producer[k]]);
        }
    }
    r->t[GPUIC_TRACE_SEEN] = proxy_cycles_to_ns(info, seen_cycles);
}

static int usage(void)
{
    fprintf(stderr, "usage: dissect_proxy [--op put|get|atomic|flush|put_signal] [--size BYTES] "
            "[--iters N] [--warmup N] [--spin-rounds N] [--max-sleep-us US] [--csv FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int op = PX_PUT, iters = 1000, warmup = 100, ndev = 0, rc = 0;
    unsigned spin_rounds = 0, max_sleep_us = 0;
    size_t size = 8;
    const char *csv_path = NULL;
    gpuic_trace_calibration_t cal = {0, 0, 0, 0};
    proxy_setup_t p;
    uint64_t *d_scratch = NULL, *scratch, info[6] = {0, 0, 0, 0, 0, 0}, nrecords;
    char *d_src = NULL, *d_dst = NULL;
    int64_t *d_result = NULL;
    cudaError_t err;
    gpuic_status_t perr;
    FILE *out = stdout;

    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (v == NULL) {
            return usage();
        }
        if (!strcmp(a, "--op")) {
            op = -1;
            for (int k = 0; k < 5; ++k) {
                if (!strcmp(v, proxy_op_names[k])) {
                    op = k;
                }
            }
        } else if (!strcmp(a, "--size")) {
            size = strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--iters")) {
            iters = atoi(v);
        } else if (!strcmp(a, "--warmup")) {
            warmup = atoi(v);
        } else if (!strcmp(a, "--spin-rounds")) {
            spin_rounds = (unsigned)strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--max-sleep-us")) {
            max_sleep_us = (unsigned)strtoul(v, NULL, 0);
        } else if (!strcmp(a, "--csv")) {
            csv_path = v;
        } else {
            return usage();
        }
    }
    if (op < 0 || iters <= 0 || iters > 1000000 || warmup < 0 || size == 0 ||
        size > PROXY_MAX_SIZE) {
        return usage();
    }
    if (op == PX_ATOMIC) {
        size = 8;
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("dissect_proxy: path proxy not available: no GPU\n");
        return 3;
    }
    cudaSetDevice(0);
    cudaFree(0); /* the runtime's primary context: the one gpuic_cuda uses too */
    memset(&p, 0, sizeof(p));
    /* every entry of one kernel keeps its record until the host harvests it after the kernel:
     * at most 2 slots per operation (put-with-signal), plus a ring's worth of margin */
    nrecords = 2 * (uint64_t)(iters > warmup ? iters : warmup) + PROXY_SLOTS;
    if (gpuic_cuda_init() != GPUIC_OK ||
        !proxy_setup(&p, op == PX_FLUSH ? 8 : size, nrecords, spin_rounds, max_sleep_us) ||
        !gpuic_trace_calibrate_cuda(CALIB_ROUNDS, &cal)) {
        fprintf(stderr, "dissect_proxy: setup failed (UCX loopback, pinned queue, trace or "
                "calibration)\n");
        proxy_teardown(&p);
        return 1;
    }
    gpuic_trace_set_calibration(p.trace, &cal);
    scratch = (uint64_t *)malloc((size_t)iters * SCRATCH_PER_OP * sizeof(uint64_t));
    if (scratch == NULL ||
        cudaMalloc((void **)&d_scratch, ((size_t)(iters > warmup ? iters : warmup) *
                                         SCRATCH_PER_OP + 8) * sizeof(uint64_t)) != cudaSuccess ||
        cudaMalloc((void **)&d_src, size) != cudaSuccess ||
        cudaMalloc((void **)&d_dst, size) != cudaSuccess ||
        cudaMalloc((void **)&d_result, 64) != cudaSuccess ||
        cudaMemset(d_src, 0x5a, size) != cudaSuccess) {
        fprintf(stderr, "dissect_proxy: out of device memory\n");
        proxy_teardown(&p);
        return 1;
    }
    uint64_t amo_off = (size + 63) / 64 * 64, sig_off = amo_off + 64;
    uint64_t *d_info = d_scratch + (size_t)(iters > warmup ? iters : warmup) * SCRATCH_PER_OP;

    if (warmup > 0) {
        k_proxy<<<1, 1>>>(p.handle, d_scratch, d_info, op, size, sig_off, amo_off, warmup, d_src,
                          d_dst, d_result);
        cudaDeviceSynchronize();
    }
    k_proxy<<<1, 1>>>(p.handle, d_scratch, d_info, op, size, sig_off, amo_off, iters, d_src,
                      d_dst, d_result);
    err = cudaDeviceSynchronize();
    if (err == cudaSuccess) {
        err = cudaMemcpy(info, d_info, sizeof(info), cudaMemcpyDeviceToHost);
    }
    if (err == cudaSuccess) {
        err = cudaMemcpy(scratch, d_scratch, (size_t)iters * SCRATCH_PER_OP * sizeof(uint64_t),
                         cudaMemcpyDeviceToHost);
    }
    perr = gpuic_cmpl_error(p.cmpl);
    if (err != cudaSuccess || info[5] != 0 || *p.error_word != 0 || perr != GPUIC_OK) {
        fprintf(stderr, "dissect_proxy: %s failed: CUDA %s, device call %lu, error word %u, "
                "proxy %s\n", proxy_op_names[op], cudaGetErrorString(err),
                (unsigned long)info[5], *p.error_word, gpuic_status_string(perr));
        rc = 1;
    }
    if (rc == 0 && csv_path != NULL && (out = fopen(csv_path, "w")) == NULL) {
        perror(csv_path);
        rc = 1;
    }
    if (rc == 0) {
        gpuic_trace_view_t v = gpuic_trace_view(p.trace, 0);
        const gpuic_trace_record_t *log;
        size_t n;

        gpuic_trace_log_reset(p.trace);
        for (int i = 0; op != PX_FLUSH && i < iters; ++i) {
            uint64_t seq = scratch[SCRATCH_PER_OP * i];

            proxy_record_to_ns(v, seq, info, scratch[SCRATCH_PER_OP * i + 2]);
            gpuic_trace_harvest(p.trace, seq, 1);
        }
        log = gpuic_trace_log(p.trace, &n);
        fprintf(out, "# dissect_proxy path=proxy op=%s size=%zu iters=%d slots=%u "
                "stage_bytes=%u clock=device->host lost=%lu\n", proxy_op_names[op],
                op == PX_FLUSH ? (size_t)0 : size, iters, PROXY_SLOTS, p.stage_bytes,
                (unsigned long)gpuic_trace_lost(p.trace));
        fprintf(out, "# device clock: SM cycles at %.3f GHz anchored to globaltimer (its "
                "smallest step seen: %lu ns)\n",
                info[3] > info[1] ? (double)(info[4] - info[2]) / (double)(info[3] - info[1])
                                  : 0.0,
                (unsigned long)info[0]);
        fprintf(out, "# calibration offset_ns=%ld uncertainty_ns=%lu min_rtt_ns=%lu samples=%u\n",
                (long)cal.offset_ns, (unsigned long)cal.uncertainty_ns,
                (unsigned long)cal.min_rtt_ns, cal.samples);
        if (op == PX_FLUSH) {
            /* no entry: the call's own two stamps, both on the device clock */
            fprintf(out, "op,size,issue,seen\n");
            for (int i = 0; i < iters; ++i) {
                uint64_t t0 = proxy_cycles_to_ns(info, scratch[SCRATCH_PER_OP * i + 1]);
                uint64_t t1 = proxy_cycles_to_ns(info, scratch[SCRATCH_PER_OP * i + 2]);

                fprintf(out, "flush,0,0,%ld\n", (long)(t1 - t0));
            }
        } else {
            fprintf(out, "op,size");
            for (unsigned s = 0; s < GPUIC_TRACE_NSTAGES; ++s) {
                fprintf(out, ",%s", gpuic_trace_stage_name((gpuic_trace_stage_t)s));
            }
            fprintf(out, "\n");
            for (size_t i = 0; i < n; ++i) {
                fprintf(out, "%s,%u", proxy_op_names[op], log[i].len);
                for (unsigned s = 0; s < GPUIC_TRACE_NSTAGES; ++s) {
                    /* an unstamped stage stays empty: the reader must not take it for 0 */
                    if (log[i].t[s] == 0) {
                        fprintf(out, ",");
                    } else {
                        fprintf(out, ",%ld",
                                (long)(int64_t)(log[i].t[s] - log[i].t[GPUIC_TRACE_ISSUE]));
                    }
                }
                fprintf(out, "\n");
            }
        }
        if (out != stdout) {
            fclose(out);
        }
    }
    cudaFree(d_src);
    cudaFree(d_dst);
    cudaFree(d_result);
    cudaFree(d_scratch);
    free(scratch);
    proxy_teardown(&p);
    return rc;
}
