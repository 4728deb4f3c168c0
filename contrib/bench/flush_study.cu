/*
 * flush_study: where one GPU thread's proxy put + flush spends its time, taken apart with
 * variants of the device API's own code (one H200, two ranks under MPS, a host window, so the
 * peer's target is on the proxy path; rank 0 alone drives).  A study, not a benchmark: several
 * variants below leave out something the API needs for correctness (the free-slot check, the
 * publication of the free bound, the acquire after a poll, the single-copy guarantee of the
 * entry's stores) to measure what it costs; the API itself is the "api" rows.
 *
 *   mpirun -np 2 --mca osc gpuic flush_study [ITERS] [--waits] [--parts] [--floors]
 *   (none of the three: all of them)
 *
 * --waits   the flush's wait for the completion index, after an API put: "instr" counts the
 *           index reads until the hit (histogram of 1..8+ reads) and times the push and the
 *           first read; "delay D" waits D ns after the push before the first read; "pipe T"
 *           keeps four relaxed reads in flight T ns apart (a fence after the hit; "nofence"
 *           without it, not correct); "nopush" skips the push.
 * --parts   the put and the flush with parts left out: "lone" writes a one-lane entry
 *           directly, "nofree" skips the free-slot check, "relaxedfa" makes the reservation's
 *           fetch-and-add relaxed, "wt" writes the entry with write-through stores (st.wt),
 *           "flushlite" polls the index without looking at done_seen and (unless nofree)
 *           publishes the free bound after every flush, "nopush" leaves out the push; "_st"
 *           rows time put, flush and the loop.
 * --floors  GPU -> CPU -> GPU round trips through mapped host memory answered by a host
 *           thread: a volatile store + __threadfence_system (device_bench's floor), st.mmio,
 *           a relaxed store or an entry's 8 x 16 bytes + a release reduction, write-through
 *           (st.wt) or streaming (st.cs) stores without a fence, delayed or pipelined reads,
 *           and the host thread's answer as a non-temporal store or flushed from its cache.
 *
 * Rows: name, parameter, us per iteration, then push / first-read times (--waits) or the
 * put / flush / between split ("_st" rows), and the read histogram where counted.
 */
#include <mpi.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

__device__ static inline uint64_t tnow(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ static inline void spin_until(uint64_t until)
{
    while (tnow() < until) {
    }
}
__device__ static inline uint64_t ldr_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

enum { V_API, V_INSTR, V_DELAY, V_PIPE, V_PIPE_NOFENCE, V_NOPUSH };

/* stats: [0] total, [1] push ns, [2] first read ns, [3..10] hist reads 1..8+ */
__global__ void k_study(MPIX_Win_device win, int peer, int iters, const uint64_t *src, int v,
                        uint64_t param, uint64_t *st)
{
    MPIX_Device_target t;
    uint64_t push_ns = 0, first_ns = 0, hist[8] = {0};
    MPIX_Win_target_device(win, peer, &t);
    uint64_t t0 = tnow();
    for (int i = 0; i < iters; ++i) {
        MPIX_Put_target_device(&t, src, 8, (MPI_Aint)(i % 1024) * 8);
        if (v == V_API) {
            MPIX_Win_flush_target_device(&t);
            continue;
        }
        MPIX_Gpuic_device_queue *q = t.queue;
        const uint64_t *done = q->done;
        uint64_t a = tnow();
        if (v != V_NOPUSH) gpuic_dev_proxy_push(q);
        unsigned long long w = gpuic_dev_proxy_ld_relaxed(&q->tickets);
        uint64_t want = gpuic_dev_proxy_ticket_of(w);
        uint64_t b = tnow();
        push_ns += b - a;
        if (v == V_INSTR || v == V_DELAY) {
            if (v == V_DELAY) spin_until(b + param);
            int n = 0;
            uint64_t x, f;
            do {
                x = gpuic_dev_proxy_load_done(done, &f);
                if (++n == 1) first_ns += tnow() - b;
            } while (!gpuic_dev_proxy_reached(x, want));
            gpuic_dev_proxy_bound_publish(q, w, (uint32_t)f);
            hist[n > 8 ? 7 : n - 1]++;
        } else if (v == V_PIPE || v == V_PIPE_NOFENCE) {
            /* rolling pipeline of 4 relaxed reads, param ns apart */
            uint64_t r0, r1, r2, r3, x, tt = tnow();
            int n = 0;
            r0 = ldr_sys(done); spin_until(tt += param);
            r1 = ldr_sys(done); spin_until(tt += param);
            r2 = ldr_sys(done); spin_until(tt += param);
            r3 = ldr_sys(done);
            for (;;) {
                ++n; if (gpuic_dev_proxy_reached(x = r0, want)) break;
                r0 = ldr_sys(done); spin_until(tnow() + param);
                ++n; if (gpuic_dev_proxy_reached(x = r1, want)) break;
                r1 = ldr_sys(done); spin_until(tnow() + param);
                ++n; if (gpuic_dev_proxy_reached(x = r2, want)) break;
                r2 = ldr_sys(done); spin_until(tnow() + param);
                ++n; if (gpuic_dev_proxy_reached(x = r3, want)) break;
                r3 = ldr_sys(done); spin_until(tnow() + param);
            }
            if (n == 1) first_ns += tnow() - b;
            if (v == V_PIPE) asm volatile("fence.acq_rel.sys;" ::: "memory");
            gpuic_dev_proxy_max_release(&q->done_seen, x);
            hist[n > 8 ? 7 : n - 1]++;
        } else if (v == V_NOPUSH) {
            gpuic_dev_proxy_wait_pushed(&t, done, want, w);
        }
    }
    st[0] = tnow() - t0;
    st[1] = push_ns;
    st[2] = first_ns;
    for (int i = 0; i < 8; ++i) st[3 + i] = hist[i];
}


/* a lone lane's 8-byte put, knock-out flags for measurement */
enum { F_LONE = 1, F_NO_FREE = 4, F_FLUSH_LITE = 8, F_STAMPS = 16, F_RELAXED_FA = 256,
       F_WT = 512, F_NO_PUSH = 1024 };

/* the reservation's fetch-and-add relaxed (the API's is acquire, for its free bound) */
__device__ static inline unsigned long long fetch_add_relaxed(unsigned long long *p,
                                                              unsigned long long v)
{
    unsigned long long old;
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v)
                 : "memory");
    return old;
}

/* gpuic_dev_proxy_store_seg() with write-through stores (st.wt: through the L2 to system
 * memory at once; weak stores, so not the API's single-copy guarantee) */
__device__ static inline void store_seg_wt(uint64_t *tagged, uint64_t mask, uint64_t seq,
                                           unsigned s, uint64_t lo, uint64_t hi)
{
    unsigned b = s / GPUIC_WQE_SEGS_PER_BB;
    uint64_t tag = (uint64_t)gpuic_ring_tag(seq + b, b != 0) << 32;
    uint64_t *dst = tagged + ((seq + b) & mask) * GPUIC_RING_TAGGED_WORDS +
                    (s % GPUIC_WQE_SEGS_PER_BB) * 4;
    asm volatile("st.global.wt.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(tag | (uint32_t)lo),
                 "l"(tag | (lo >> 32)) : "memory");
    asm volatile("st.global.wt.v2.u64 [%0], {%1, %2};" ::"l"(dst + 2), "l"(tag | (uint32_t)hi),
                 "l"(tag | (hi >> 32)) : "memory");
}
__device__ static inline uint64_t put8_lone(const MPIX_Device_target *t, const void *origin,
                                            uint64_t raddr, unsigned fl)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint64_t *tagged = q->tagged, mask = q->size - 1, data, seq;
    uint32_t size = q->size;

    asm volatile("ld.u64 %0, [%1];" : "=l"(data) : "l"(origin) : "memory");
    unsigned long long rw = (fl & F_RELAXED_FA) ? fetch_add_relaxed(&q->tickets, 1ull << 32)
                                                : gpuic_dev_proxy_fetch_add(&q->tickets, 1ull << 32);
    seq = gpuic_dev_proxy_ticket_of(rw);
    if (!(fl & F_NO_FREE) && (uint32_t)(seq + 1 - gpuic_dev_proxy_bound_of(rw)) > size) {
        gpuic_dev_proxy_reserve_slow(t, (uint32_t)seq, 1);
    }
    gpuic_wqe_ctrl_seg_t ctrl;
    uint64_t w[2];
    gpuic_wqe_set_ctrl(&ctrl, (uint16_t)seq, GPUIC_WQE_OP_PUT8_MULTI, 0, (uint32_t)t->rank, 0, 2,
                       0, gpuic_htobe32(t->key));
    memcpy(w, &ctrl, sizeof(w));
    if (fl & F_WT) {
        store_seg_wt(tagged, mask, seq, 1, gpuic_htobe64(raddr), data);
        store_seg_wt(tagged, mask, seq, 0, w[0], w[1]);
        store_seg_wt(tagged, mask, seq, 2, 0, 0);
        store_seg_wt(tagged, mask, seq, 3, 0, 0);
        return seq;
    }
    gpuic_dev_proxy_store_seg(tagged, mask, seq, 1, gpuic_htobe64(raddr), data);
    gpuic_dev_proxy_store_seg(tagged, mask, seq, 0, w[0], w[1]);
    gpuic_dev_proxy_store_seg(tagged, mask, seq, 2, 0, 0);
    gpuic_dev_proxy_store_seg(tagged, mask, seq, 3, 0, 0);
    return seq;
}

/* st: [0] total [1] put [2] flush [3] between */
__global__ void k_study2(MPIX_Win_device win, int peer, int iters, const uint64_t *src,
                         unsigned fl, uint64_t *st)
{
    MPIX_Device_target t;
    uint64_t sp = 0, sf = 0, sb = 0, e = 0;
    MPIX_Win_target_device(win, peer, &t);
    uint64_t t0 = tnow();
    for (int i = 0; i < iters; ++i) {
        uint64_t a = 0, b = 0, seq = 0;
        if (fl & F_STAMPS) { a = tnow(); if (e) sb += a - e; }
        if (fl & F_LONE) {
            char *dst;
            gpuic_dev_target_addr(&t, (MPI_Aint)(i % 1024) * 8, 8, 1, &dst);
            seq = put8_lone(&t, src, (uint64_t)(uintptr_t)dst, fl);
        } else {
            MPIX_Put_target_device(&t, src, 8, (MPI_Aint)(i % 1024) * 8);
        }
        if (fl & F_STAMPS) { b = tnow(); sp += b - a; }
        if (fl & F_FLUSH_LITE) {
            const uint64_t *done = t.queue->done;
            uint64_t x, f;
            if (!(fl & F_NO_PUSH)) gpuic_dev_proxy_push(t.queue);
            do {
                x = gpuic_dev_proxy_load_done(done, &f);
            } while (!gpuic_dev_proxy_reached(x, seq + 1));
            if (!(fl & F_NO_FREE)) {
                gpuic_dev_proxy_bound_publish(t.queue, gpuic_dev_proxy_ld_relaxed(&t.queue->tickets),
                                              (uint32_t)f);
            }
        } else {
            MPIX_Win_flush_target_device(&t);
        }
        if (fl & F_STAMPS) { e = tnow(); sf += e - b; }
    }
    st[0] = tnow() - t0;
    st[1] = sp;
    st[2] = sf;
    for (int i = 3; i < 11; ++i) st[i] = 0;
    st[3] = sb;
}

/* floors: request store flavours and poll flavours, answered by a host thread */
enum {
    F_VOL_SC, F_MMIO_NOFENCE, F_MMIO_ACQ, F_RELAXED_RED, F_VOL_SC_DELAY, F_VOL_SC_PIPE, F_8ST_RED,
    F_WT_NOFENCE, F_8ST_WT, F_CS_NOFENCE
};
__global__ void k_floor(uint64_t *req, uint64_t *resp, int iters, int mode, uint64_t param,
                        unsigned long long *dword, uint64_t *st)
{
    uint64_t hist[8] = {0};
    uint64_t t0 = tnow();
    for (uint64_t r = 1; r <= (uint64_t)iters; ++r) {
        uint64_t v;
        int n = 0;
        if (mode == F_VOL_SC || mode == F_VOL_SC_DELAY || mode == F_VOL_SC_PIPE) {
            *(volatile uint64_t *)req = r;
            __threadfence_system();
        } else if (mode == F_MMIO_NOFENCE || mode == F_MMIO_ACQ) {
#ifndef NO_MMIO
            asm volatile("st.mmio.relaxed.sys.global.u64 [%0], %1;" ::"l"(req), "l"(r)
                         : "memory");
#else
            *(volatile uint64_t *)req = r;
#endif
        } else if (mode == F_WT_NOFENCE) {
            asm volatile("st.global.wt.u64 [%0], %1;" ::"l"(req), "l"(r) : "memory");
        } else if (mode == F_CS_NOFENCE) {
            asm volatile("st.global.cs.u64 [%0], %1;" ::"l"(req), "l"(r) : "memory");
        } else if (mode == F_8ST_WT) {
            for (int k = 7; k >= 0; --k) {
                asm volatile("st.global.wt.v2.u64 [%0], {%1, %2};"
                             ::"l"(req + 2 * k), "l"(r), "l"(r) : "memory");
            }
        } else if (mode == F_8ST_RED) {
            /* an entry's worth: 8 x 16 bytes, the request word last */
            for (int k = 7; k >= 0; --k) {
                asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};"
                             ::"l"(req + 2 * k), "l"(r), "l"(r) : "memory");
            }
            asm volatile("red.release.sys.global.add.u64 [%0], 0;" ::"l"(dword) : "memory");
        } else {
            asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(req), "l"(r) : "memory");
            asm volatile("red.release.sys.global.add.u64 [%0], 0;" ::"l"(dword) : "memory");
        }
        if (mode == F_VOL_SC_DELAY) spin_until(tnow() + param);
        if (mode == F_VOL_SC_PIPE) {
            uint64_t r0, r1, r2, r3, tt = tnow();
            r0 = ldr_sys(resp); spin_until(tt += param);
            r1 = ldr_sys(resp); spin_until(tt += param);
            r2 = ldr_sys(resp); spin_until(tt += param);
            r3 = ldr_sys(resp);
            for (;;) {
                ++n; if (r0 >= r) break;
                r0 = ldr_sys(resp); spin_until(tnow() + param);
                ++n; if (r1 >= r) break;
                r1 = ldr_sys(resp); spin_until(tnow() + param);
                ++n; if (r2 >= r) break;
                r2 = ldr_sys(resp); spin_until(tnow() + param);
                ++n; if (r3 >= r) break;
                r3 = ldr_sys(resp); spin_until(tnow() + param);
            }
            asm volatile("fence.acq_rel.sys;" ::: "memory");
        } else {
            do {
                if (mode == F_MMIO_NOFENCE) {
                    v = *(volatile uint64_t *)resp;
                } else {
                    asm volatile("ld.acquire.sys.global.u64 %0, [%1];"
                                 : "=l"(v) : "l"(resp) : "memory");
                }
                ++n;
            } while (v < r);
        }
        hist[n > 8 ? 7 : n - 1]++;
    }
    st[0] = tnow() - t0;
    for (int i = 0; i < 8; ++i) st[3 + i] = hist[i];
}

struct echo_arg {
    volatile uint64_t *req, *resp;
    int iters, how; /* 0 plain store, 1 non-temporal store + sfence, 2 store + clflushopt */
};
static void *echo_thread(void *p)
{
    struct echo_arg *a = (struct echo_arg *)p;
    for (uint64_t r = 1; r <= (uint64_t)a->iters; ++r) {
        while (*a->req < r) {
        }
        __sync_synchronize();
        if (a->how == 1) {
            __builtin_ia32_movnti64((long long *)a->resp, (long long)r);
            __builtin_ia32_sfence();
        } else if (a->how == 2) {
            *a->resp = r;
            asm volatile("clflushopt (%0)" ::"r"(a->resp) : "memory");
        } else {
            *a->resp = r;
        }
    }
    return NULL;
}

static void report(const char *name, uint64_t param, int iters, const uint64_t *st)
{
    printf("%-22s %5llu  %6.3f us  push %5.3f  first %5.3f  reads:", name,
           (unsigned long long)param, st[0] / (double)iters / 1e3, st[1] / (double)iters / 1e3,
           st[2] / (double)iters / 1e3);
    for (int i = 0; i < 8; ++i) printf(" %llu", (unsigned long long)st[3 + i]);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, iters = 2000;
    char *base;
    MPI_Win win;
    MPIX_Win_device h;
    uint64_t *d_st, *d_src, st[11];

    bool waits = false, parts = false, floors = false;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--waits")) waits = true;
        else if (!strcmp(argv[i], "--parts")) parts = true;
        else if (!strcmp(argv[i], "--floors")) floors = true;
        else iters = atoi(argv[i]);
    }
    if (!waits && !parts && !floors) waits = parts = floors = true;
    cudaSetDevice(0);
    MPI_Win_allocate(1 << 16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, 1 << 16);
    MPIX_Win_get_device_handle(win, &h);
    cudaMalloc(&d_st, 128);
    cudaMalloc(&d_src, 64);
    cudaMemset(d_src, 1, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (rank == 0 && waits) {
        struct { const char *n; int v; uint64_t p; } vs[] = {
            {"api", V_API, 0}, {"instr", V_INSTR, 0}, {"nopush", V_NOPUSH, 0},
            {"delay", V_DELAY, 100}, {"delay", V_DELAY, 200}, {"delay", V_DELAY, 300},
            {"delay", V_DELAY, 400}, {"delay", V_DELAY, 500}, {"delay", V_DELAY, 700},
            {"pipe", V_PIPE, 100}, {"pipe", V_PIPE, 200}, {"pipe", V_PIPE, 300},
            {"pipe_nofence", V_PIPE_NOFENCE, 100}, {"pipe_nofence", V_PIPE_NOFENCE, 200},
            {"api", V_API, 0}, {"instr", V_INSTR, 0},
        };
        k_study<<<1, 1>>>(h, 1, 200, d_src, V_API, 0, d_st);
        cudaDeviceSynchronize();
        for (int rep = 0; rep < 2; ++rep)
            for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); ++i) {
                k_study<<<1, 1>>>(h, 1, iters, d_src, vs[i].v, vs[i].p, d_st);
                cudaDeviceSynchronize();
                cudaMemcpy(st, d_st, sizeof(st), cudaMemcpyDeviceToHost);
                report(vs[i].n, vs[i].p, iters, st);
            }
    }
    if (rank == 0 && parts) {
        struct { const char *n; unsigned f; } vs[] = {
            {"api", 0}, {"api_stamps", F_STAMPS}, {"lone", F_LONE},
            {"lone_stamps", F_LONE | F_STAMPS}, {"lone_nofree", F_LONE | F_NO_FREE},
            {"lone_nofree_st", F_LONE | F_NO_FREE | F_STAMPS},
            {"lone_relaxedfa_nofree", F_LONE | F_RELAXED_FA | F_NO_FREE},
            {"lone_flushlite", F_LONE | F_FLUSH_LITE},
            {"lone_flushlite_stamps", F_LONE | F_FLUSH_LITE | F_STAMPS},
            {"lone_nofree_flushlite", F_LONE | F_NO_FREE | F_FLUSH_LITE},
            {"lone_nofree_flushlite_st", F_LONE | F_NO_FREE | F_FLUSH_LITE | F_STAMPS},
            {"lone_wt", F_LONE | F_WT},
            {"lone_wt_flushlite_nopush", F_LONE | F_WT | F_FLUSH_LITE | F_NO_PUSH},
            {"lone_flushlite_nopush", F_LONE | F_FLUSH_LITE | F_NO_PUSH},
            {"api", 0}, {"lone", F_LONE}, {"lone_nofree", F_LONE | F_NO_FREE},
        };
        k_study2<<<1, 1>>>(h, 1, 200, d_src, 0, d_st);
        cudaDeviceSynchronize();
        for (int rep = 0; rep < 2; ++rep)
            for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); ++i) {
                k_study2<<<1, 1>>>(h, 1, iters, d_src, vs[i].f, d_st);
                cudaDeviceSynchronize();
                cudaMemcpy(st, d_st, sizeof(st), cudaMemcpyDeviceToHost);
                printf("%-26s %6.3f us  put %5.3f  flush %5.3f  between %5.3f\n", vs[i].n,
                       st[0] / (double)iters / 1e3, st[1] / (double)iters / 1e3,
                       st[2] / (double)iters / 1e3, st[3] / (double)iters / 1e3);
                fflush(stdout);
            }
    }
    if (rank == 0 && floors) {
        uint64_t *hostw, *d_hostw;
        cudaHostAlloc(&hostw, 512, cudaHostAllocMapped);
        cudaHostGetDevicePointer(&d_hostw, hostw, 0);
        /* p: the host thread's answer (echo_arg.how) for F_VOL_SC rows, the delay or the
         * read spacing (ns) for the _delay and _pipe rows */
        struct { const char *n; int m; uint64_t p; } fs[] = {
            {"floor_vol_sc", F_VOL_SC, 0}, {"floor_mmio_nofence", F_MMIO_NOFENCE, 0},
            {"floor_mmio_acq", F_MMIO_ACQ, 0}, {"floor_relaxed_red", F_RELAXED_RED, 0},
            {"floor_8st_red", F_8ST_RED, 0},
            {"floor_sc_delay", F_VOL_SC_DELAY, 100}, {"floor_sc_delay", F_VOL_SC_DELAY, 300},
            {"floor_sc_pipe", F_VOL_SC_PIPE, 100}, {"floor_sc_pipe", F_VOL_SC_PIPE, 250},
            {"floor_vol_sc_echo_nt", F_VOL_SC, 1}, {"floor_vol_sc_echo_clflush", F_VOL_SC, 2},
            {"floor_wt_nofence", F_WT_NOFENCE, 0}, {"floor_8st_wt", F_8ST_WT, 0},
            {"floor_cs_nofence", F_CS_NOFENCE, 0}, {"floor_vol_sc", F_VOL_SC, 0},
        };
        for (int rep = 0; rep < 2; ++rep)
            for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); ++i) {
                struct echo_arg a = {hostw, hostw + 32, iters,
                                     fs[i].m == F_VOL_SC ? (int)fs[i].p : 0};
                pthread_t th;
                memset(hostw, 0, 512);
                pthread_create(&th, NULL, echo_thread, &a);
                k_floor<<<1, 1>>>(d_hostw, d_hostw + 32, iters, fs[i].m, fs[i].p,
                                  (unsigned long long *)d_st + 12, d_st);
                cudaDeviceSynchronize();
                pthread_join(th, NULL);
                cudaMemcpy(st, d_st, sizeof(st), cudaMemcpyDeviceToHost);
                st[1] = st[2] = 0;
                report(fs[i].n, fs[i].p, iters, st);
            }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
