/*
 * device_bench: device-initiated RMA on gpuic GPU windows, with the raw floors of the same
 * machine measured in the same run.  Two ranks (under MPS when they share a GPU).
 *
 *   mpirun -np 2 --mca osc gpuic device_bench [--iters N] [--csv FILE] [--host-window]
 *                                             [--label NAME] [--latency-only] [--max-bytes N] [--memcpy-peer]
 *                                             [--bw-chunk N] [--bw-only] [--rate-only] [--rate-words N]
 *                                             [--quick] [--bw-blocks N] [--bw-spread]
 *                                             [--bw-idle-blocks N] [--bw-idle-flush]
 *                                             [--bw-one-flush] [--bw-min-bytes N]
 *
 * --quick runs the rank-0 latency rows (put + flush, get, fetch-add, their resolved forms), the
 * message-rate rows and the get's dissection (dissect_get_*) alone, for side-by-side runs of
 * builds against different headers.
 * --bw-only runs the bandwidth rows alone (put_bw, get_bw, the one block's put and get);
 * --rate-only the message-rate rows alone; --rate-words N (default 2^20, at most that; rounded
 * down to a power of two) spreads their puts over the first N words of the window (thread t's
 * i-th put goes to word (7t + i) & (N - 1), the index arithmetic of nvshmem_bench's k_rate).
 * --latency-only leaves out the message-rate and bandwidth rows (the forced proxy path on a GPU
 * window moves each entry with a driver copy: thousands of them take minutes).
 * --host-window puts the window in host memory, so every device call takes the proxy path
 * (work-queue entries executed by the proxy thread); rows are then labelled "proxy" (or
 * --label), and the floors that need a device mapping of the peer are left out.  With
 * OMPI_MCA_osc_gpuic_device_proxy=1 a GPU window's data goes through the proxy too.
 * --bw-min-bytes N leaves out the put_bw and get_bw sizes below N (a run about large transfers).
 * --bw-blocks N (default 132) sets put_bw's grid; --bw-spread prints, for each bandwidth row,
 * the fastest, median and slowest launch and, on the proxy path, the proxy thread's entries,
 * rounds, idle pauses, busy share and merged puts over the row (where a slow row loses its time).
 * --bw-idle-blocks N adds put_bw_1block_idleN: the one block's put while N more blocks of the
 * same launch only wait for it (whether a grid that waits slows the transfer itself); with
 * --bw-idle-flush the waiting blocks each call MPIX_Win_flush_device once the put is posted
 * (they wait for it in the device queue's protocol, as put_bw's blocks do).
 * --bw-one-flush: put_bw's blocks do not flush each; the last block to finish its puts
 * flushes once for the grid (whether the grid's flushes slow the transfer).
 * --max-bytes N (default 16 MiB) bounds the put_bw sizes, 8 B times powers of 4 (the largest
 * default row is 8 MiB; above 16 MiB, N itself is the last row); above 16 MiB the window grows
 * by N bytes and the bandwidth puts go to that extra part.  --memcpy-peer adds the copy-engine floor
 * of two GPUs (rank 0's device to the next one, both driven by rank 0).
 *
 * Rows (CSV: component,measure,size,value,unit):
 *   gpuic put_flush           8 B put + MPIX_Win_flush_device, per operation (origin side)
 *   gpuic *_resolved          the same through a target resolved once (MPIX_Win_target_device)
 *   gpuic split_put_resolved  where a resolved put + flush spends its time: rounds of 16 puts,
 *                             then a flush, then a flush with nothing outstanding; per put,
 *   gpuic split_flush_16_resolved   per flush of 16 puts,
 *   gpuic split_flush_empty_resolved  per flush with nothing outstanding (push + one read)
 *   gpuic pingpong_signal     put-with-signal ping-pong, one way
 *   gpuic pingpong_payload    the same carrying SIZE bytes (8, 64, 1024, 4096) that one thread
 *                             writes before each put and checks after each wait (GPU windows)
 *   gpuic get                 8 B get, per operation
 *   gpuic fetch_add           8 B fetch-and-add, per operation
 *   gpuic msg_rate            8 B puts from blocks x threads, then one flush each; on the
 *                             proxy path (--host-window) with the proxy's side of the run:
 *                             entries, entries per round of the proxy thread, reservations
 *                             that found the queue full per entry, the share of the run the
 *                             proxy spent in rounds and its time per entry (MPI_T counters)
 *   gpuic put_bw              MPIX_Put_device_block from 132 blocks of 1024 threads, the
 *                             blocks taking 256 KiB chunks round-robin (--bw-chunk N: N-byte
 *                             chunks, 0: one slice a block), one slice a block when that is
 *                             smaller, 8 B .. --max-bytes
 *   gpuic get_bw              the same with MPIX_Get_device_block (remote loads; P2P runs)
 *   gpuic put_bw_1block       one MPIX_Put_device_block of 8 MiB (or --max-bytes if smaller)
 *                             from one block of 1024 threads, then a flush (on the proxy path:
 *                             one call large enough to go without staging)
 *   gpuic get_bw_1block       the same with one MPIX_Get_device_block (proxy runs too)
 *   gpuic put_bw_one_flush    put_bw with one flush for the grid (--bw-one-flush)
 *   gpuic put_bw_1block_idleN (--bw-idle-blocks N) put_bw_1block beside N blocks that wait
 *                             (put_bw_1block_idleN_flush with --bw-idle-flush)
 *   floor ipc_store_pingpong  raw stores + fence through the same CUDA IPC mapping, one way
 *   floor gpu_cpu_gpu_rtt     kernel -> host thread -> kernel through mapped pinned memory
 *                             (the suffixed rows: other store, fence and load flavours,
 *                             rtt_modes in the source)
 *   floor cudaMemcpy_8B       host cudaMemcpy of 8 bytes device to peer device
 *   floor cudaMemcpyPeer_bw   (--memcpy-peer, two GPUs) cudaMemcpyPeerAsync from rank 0's GPU
 *                             to the next GPU, peer access enabled, 8 B .. --max-bytes
 *   floor dissect_*           put + flush taken apart: a raw store, a store plus each fence
 *                             flavour (acquire-release and release-only), MPIX_Put_device
 *                             without a flush, a raw remote load, a store + fence + load of
 *                             the window's description (what a call by rank reads next),
 *                             an 8-byte get taken apart (plain load, the API's copy, the API)
 * Times come from %globaltimer inside the kernels (ns), or host clocks for host-side floors.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define WIN_BYTES (32u << 20)
#define SIG_OFF (WIN_BYTES - 64)
#define DATA_OFF (WIN_BYTES - 128)
#define PAY_OFF (WIN_BYTES - 8192) /* the payload ping-pong's words, up to 4 KiB */
#define PAY_MAX 4096
#define BW_DEFAULT_MAX (16u << 20) /* largest put_bw size without --max-bytes */

static int rank;
static FILE *csv;
static const char *label = "gpuic"; /* component column of this run's rows */
static bool host_window;
static bool latency_only; /* --latency-only: no message-rate or bandwidth rows */
static bool bw_only;      /* --bw-only: the bandwidth rows alone */
static bool rate_only;    /* --rate-only: the message-rate rows alone */
/* --quick: the rank-0 latency rows (put + flush, get, fetch-add, resolved), the message-rate
 * rows and the get dissection alone (side-by-side runs of header variants) */
static bool quick;
static int rate_words = 1 << 20; /* --rate-words N: the message-rate puts go to N words */
/* --bw-chunk N: put_bw blocks take N-byte chunks round-robin (0: one slice each).  Across
 * NVLink (two H200s, 256 MiB) slices ran at 346 GB/s, 256 KiB .. 4 MiB chunks at 368-370. */
static size_t bw_chunk = 256u << 10;
static int bw_blocks = 132;  /* --bw-blocks N: put_bw's grid */
static bool bw_spread;       /* --bw-spread: launch times and proxy counters of each bw row */
static size_t bw_min_bytes = 8; /* --bw-min-bytes N: put_bw/get_bw rows from this size on */
static int bw_idle_blocks;   /* --bw-idle-blocks N: the one block's put beside N waiting blocks */
static unsigned *idle_done;  /* k_bw_idle's word (device memory) */
static bool bw_idle_flush;   /* --bw-idle-flush: k_bw_idle's waiting blocks flush instead */
static bool bw_one_flush;    /* --bw-one-flush: k_bw flushes once for the grid */
static unsigned *bw_arrived; /* k_bw's count of blocks done putting (--bw-one-flush) */

/* Fills window bytes: the window is device memory, or host memory with --host-window. */
static void win_memset(char *p, int byte, size_t len)
{
    if (host_window) {
        memset(p, byte, len);
    } else {
        cudaMemset(p, byte, len);
    }
}

static void row(const char *component, const char *measure, size_t size, double value,
                const char *unit)
{
    if (rank != 0) return;
    printf("%-6s %-20s %10zu %12.3f %s\n", component, measure, size, value, unit);
    if (csv) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", component, measure, size, value, unit);
        fflush(csv); /* a run cut short keeps what it measured */
    }
}

/* The proxy thread's MPI_T counters (this process's), read around each message-rate kernel on
 * the proxy path: entries it consumed, rounds that found work, idle pauses, reservations that
 * found the queue full, entries it refused, and its time in rounds.  Where MPI_T does not list
 * one, it reads as 0. */
static const char *const proxy_pv_names[] = {
    "osc_gpuic_proxy_descriptors", "osc_gpuic_proxy_rounds", "osc_gpuic_proxy_sleeps",
    "osc_gpuic_proxy_queue_full_waits", "osc_gpuic_proxy_validation_failures",
    "osc_gpuic_proxy_busy_ns", "osc_gpuic_proxy_merged_puts"};
#define PROXY_PV_COUNT 7
static MPI_T_pvar_session proxy_pv_session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle proxy_pv_handles[PROXY_PV_COUNT];
static bool proxy_pv_found[PROXY_PV_COUNT];

static void proxy_pv_open(void)
{
    int provided, num = 0, count;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&proxy_pv_session) != MPI_SUCCESS ||
        MPI_T_pvar_get_num(&num) != MPI_SUCCESS) {
        return;
    }
    for (int i = 0; i < num; ++i) {
        char name[256], desc[256];
        int name_len = sizeof(name), desc_len = sizeof(desc), verbosity, var_class, bind;
        int readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;

        if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &et, desc,
                                &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS) {
            continue;
        }
        for (int k = 0; k < PROXY_PV_COUNT; ++k) {
            if (!proxy_pv_found[k] && strcmp(name, proxy_pv_names[k]) == 0 &&
                MPI_T_pvar_handle_alloc(proxy_pv_session, i, NULL, &proxy_pv_handles[k],
                                        &count) == MPI_SUCCESS) {
                proxy_pv_found[k] = true;
            }
        }
    }
}

static void proxy_pv_read(unsigned long long v[PROXY_PV_COUNT])
{
    for (int k = 0; k < PROXY_PV_COUNT; ++k) {
        v[k] = 0;
        if (proxy_pv_found[k]) {
            MPI_T_pvar_read(proxy_pv_session, proxy_pv_handles[k], &v[k]);
        }
    }
}

/* Frees the counters' handles and the session and ends the tool interface; before
 * MPI_Finalize, which unloads the component whose counters the handles name. */
static void proxy_pv_close(void)
{
    for (int k = 0; k < PROXY_PV_COUNT; ++k) {
        if (proxy_pv_found[k]) {
            MPI_T_pvar_handle_free(proxy_pv_session, &proxy_pv_handles[k]);
            proxy_pv_found[k] = false;
        }
    }
    if (proxy_pv_session != MPI_T_PVAR_SESSION_NULL) {
        MPI_T_pvar_session_free(&proxy_pv_session);
    }
    MPI_T_finalize();
}

__device__ static inline uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_put_flush(MPIX_Win_device win, int peer, int iters, const uint64_t *src,
                            uint64_t *ns)
{
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; ++i) {
        MPIX_Put_device(src, 8, peer, (MPI_Aint)(i % 1024) * 8, win);
        MPIX_Win_flush_device(peer, win);
    }
    *ns = now_ns() - t0;
}

/* Where a resolved put + flush spends its time: rounds of SPLIT_PUTS puts then one flush,
 * each part timed on its own (ns[0]: the puts, ns[1]: the flushes), and flushes with nothing
 * outstanding (ns[2]: the push and the first read of the completion). */
#define SPLIT_PUTS 16
/* Rounds of a two-rank kernel's untimed first run (see the ping-pongs in main). */
#define WARM_ROUNDS 50
__global__ void k_put_split_target(MPIX_Win_device win, int peer, int rounds, const uint64_t *src,
                                   uint64_t *ns)
{
    MPIX_Device_target t;
    uint64_t put_ns = 0, flush_ns = 0, empty_ns = 0;
    MPIX_Win_target_device(win, peer, &t);
    for (int r = 0; r < rounds; ++r) {
        uint64_t t0 = now_ns(), t1, t2;
        for (int i = 0; i < SPLIT_PUTS; ++i) {
            MPIX_Put_target_device(&t, src, 8, (MPI_Aint)((r * SPLIT_PUTS + i) % 1024) * 8);
        }
        t1 = now_ns();
        MPIX_Win_flush_target_device(&t);
        t2 = now_ns();
        MPIX_Win_flush_target_device(&t);
        empty_ns += now_ns() - t2;
        put_ns += t1 - t0;
        flush_ns += t2 - t1;
    }
    ns[0] = put_ns;
    ns[1] = flush_ns;
    ns[2] = empty_ns;
}

/* The same with the target resolved once (MPIX_Win_target_device), as hot loops would. */
__global__ void k_put_flush_target(MPIX_Win_device win, int peer, int iters, const uint64_t *src,
                                   uint64_t *ns)
{
    MPIX_Device_target t;
    MPIX_Win_target_device(win, peer, &t);
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; ++i) {
        MPIX_Put_target_device(&t, src, 8, (MPI_Aint)(i % 1024) * 8);
        MPIX_Win_flush_target_device(&t);
    }
    *ns = now_ns() - t0;
}

__global__ void k_get_target(MPIX_Win_device win, int peer, int iters, uint64_t *dst,
                             uint64_t *ns)
{
    MPIX_Device_target t;
    MPIX_Win_target_device(win, peer, &t);
    uint64_t t0 = now_ns(), sum = 0;
    for (int i = 0; i < iters; ++i) {
        uint64_t v;
        MPIX_Get_target_device(&t, &v, 8, (MPI_Aint)(i % 1024) * 8);
        sum += v;
    }
    *ns = now_ns() - t0;
    *dst = sum;
}

__global__ void k_pingpong_target(MPIX_Win_device win, int me, int iters, uint64_t *buf,
                                  uint64_t *ns)
{
    MPIX_Device_target peer, self;
    MPIX_Win_target_device(win, 1 - me, &peer);
    MPIX_Win_target_device(win, me, &self);
    uint64_t t0 = now_ns();
    for (int r = 1; r <= iters; ++r) {
        if (me == 0) {
            MPIX_Put_signal_target_device(&peer, buf, 8, DATA_OFF, SIG_OFF, r,
                                          MPIX_DEVICE_SIGNAL_SET);
            MPIX_Signal_wait_until_target_device(&self, SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL);
        } else {
            MPIX_Signal_wait_until_target_device(&self, SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL);
            MPIX_Put_signal_target_device(&peer, buf, 8, DATA_OFF, SIG_OFF, r,
                                          MPIX_DEVICE_SIGNAL_SET);
        }
    }
    *ns = now_ns() - t0;
}

__global__ void k_get(MPIX_Win_device win, int peer, int iters, uint64_t *dst, uint64_t *ns)
{
    uint64_t t0 = now_ns(), sum = 0;
    for (int i = 0; i < iters; ++i) {
        uint64_t v;
        MPIX_Get_device(&v, 8, peer, (MPI_Aint)(i % 1024) * 8, win);
        sum += v;
    }
    *ns = now_ns() - t0;
    *dst = sum; /* keeps the loads */
}

__global__ void k_fadd(MPIX_Win_device win, int peer, int iters, int64_t *out, uint64_t *ns)
{
    uint64_t t0 = now_ns();
    int64_t old = 0, acc = 0;
    for (int i = 0; i < iters; ++i) {
        MPIX_Fetch_and_add_device(1, &old, peer, DATA_OFF, win);
        acc += old;
    }
    *ns = now_ns() - t0;
    *out = acc;
}

__global__ void k_pingpong(MPIX_Win_device win, int me, int iters, uint64_t *buf, uint64_t *ns)
{
    int peer = 1 - me;
    uint64_t t0 = now_ns();
    for (int r = 1; r <= iters; ++r) {
        if (me == 0) {
            MPIX_Put_signal_device(buf, 8, peer, DATA_OFF, SIG_OFF, r, MPIX_DEVICE_SIGNAL_SET, win);
            MPIX_Signal_wait_until_device(SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL, win);
        } else {
            MPIX_Signal_wait_until_device(SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL, win);
            MPIX_Put_signal_device(buf, 8, peer, DATA_OFF, SIG_OFF, r, MPIX_DEVICE_SIGNAL_SET, win);
        }
    }
    *ns = now_ns() - t0;
}

/* Round r's payload word i from rank @p writer: every round and rank writes other bytes. */
__device__ static inline uint64_t payload_word(int writer, int r, size_t i)
{
    return ((uint64_t)(writer + 1) << 56) ^ ((uint64_t)r << 24) ^ (uint64_t)i;
}

/* One side's receive in k_pingpong_payload: waits for the peer's round r, then counts the
 * words of its payload (in this process's window) that are wrong. */
__device__ static uint64_t payload_receive(MPIX_Win_device win, const MPIX_Device_target *self,
                                           bool resolved, const uint64_t *mine, int peer, int r,
                                           size_t words)
{
    uint64_t errors = 0;

    if (resolved) {
        MPIX_Signal_wait_until_target_device(self, SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL);
    } else {
        MPIX_Signal_wait_until_device(SIG_OFF, MPIX_DEVICE_CMP_GE, r, NULL, win);
    }
    for (size_t i = 0; i < words; ++i) {
        errors += mine[i] != payload_word(peer, r, i);
    }
    return errors;
}

/*
 * Put-with-signal ping-pong carrying a payload, as a program written from the man pages does
 * it: one thread writes round r's payload into its buffer, puts it with signal r, waits for the
 * peer's round r and checks every word the peer put into its own window; by rank, or through
 * targets resolved once (@p resolved).  Mismatched words are counted in *bad.
 */
__global__ void k_pingpong_payload(MPIX_Win_device win, const uint64_t *mine, int me, int iters,
                                   size_t bytes, bool resolved, uint64_t *src, uint64_t *bad,
                                   uint64_t *ns)
{
    int peer = 1 - me;
    size_t words = bytes / 8;
    uint64_t errors = 0;
    MPIX_Device_target pt, self;

    if (resolved) {
        MPIX_Win_target_device(win, peer, &pt);
        MPIX_Win_target_device(win, me, &self);
    }
    uint64_t t0 = now_ns();
    for (int r = 1; r <= iters; ++r) {
        if (me == 1) {
            errors += payload_receive(win, &self, resolved, mine, peer, r, words);
        }
        for (size_t i = 0; i < words; ++i) {
            src[i] = payload_word(me, r, i);
        }
        if (resolved) {
            MPIX_Put_signal_target_device(&pt, src, bytes, PAY_OFF, SIG_OFF, r,
                                          MPIX_DEVICE_SIGNAL_SET);
        } else {
            MPIX_Put_signal_device(src, bytes, peer, PAY_OFF, SIG_OFF, r, MPIX_DEVICE_SIGNAL_SET,
                                   win);
        }
        if (me == 0) {
            errors += payload_receive(win, &self, resolved, mine, peer, r, words);
        }
    }
    *ns = now_ns() - t0;
    *bad = errors;
}

/* Thread t's i-th put goes to word (7t + i) & mask (mask = words - 1, words a power of two):
 * the same runtime mask as nvshmem_bench's k_rate, so both loops do the same index arithmetic. */
__global__ void k_rate(MPIX_Win_device win, int peer, int per_thread, const uint64_t *src,
                       int mask)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < per_thread; ++i) {
        MPIX_Put_device(src, 8, peer, (MPI_Aint)((t * 7 + i) & mask) * 8, win);
    }
    MPIX_Win_flush_device(peer, win);
}

/* Bandwidth: each block puts its slice of the buffer (any size: the slices need not be
 * aligned), then flushes.  Launched with 1024 threads a block: the launch fails if the kernel
 * ever needs more than 64 registers a thread (the loop below checks for it). */
/* This block's slice of [0, bytes) (equal slices, the last one shorter); false when the block
 * has none. */
__device__ static bool block_slice(size_t bytes, size_t *off, size_t *len)
{
    size_t chunk = (bytes + gridDim.x - 1) / gridDim.x;

    *off = chunk * blockIdx.x;
    *len = *off < bytes ? (bytes - *off < chunk ? bytes - *off : chunk) : 0;
    return *len != 0;
}

__global__ void __launch_bounds__(1024) k_bw(MPIX_Win_device win, int peer, const char *src,
                                             size_t bytes, size_t win_off, size_t chunk,
                                             unsigned *arrived)
{
    /* Chunks of at most @p chunk bytes dealt round-robin, so that the blocks write
     * neighbouring chunks at the same time, and never fewer chunks than blocks: below
     * blocks x chunk bytes each block takes one slice (whole 256-byte pieces, so that both
     * sides stay 16-byte aligned), as NVSHMEM's kernel does.  chunk 0: one slice a block.
     * One call site: a 1024-thread block has 64 registers a thread. */
    size_t slice = ((bytes + gridDim.x - 1) / gridDim.x + 255) & ~(size_t)255;

    if (chunk == 0 || chunk > slice) {
        chunk = slice;
    }
    for (size_t off = (size_t)blockIdx.x * chunk; off < bytes; off += (size_t)gridDim.x * chunk) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;

        MPIX_Put_device_block(src + off, len, peer, (MPI_Aint)(win_off + off), win);
    }
    if (threadIdx.x != 0) {
        return;
    }
    /* arrived (--bw-one-flush, a diagnostic): only the last block to get here flushes.  The
     * API promises a flush completes its own thread's puts; on the proxy path it waits for
     * every entry reserved before it, which the fence and the count put before it here. */
    if (arrived != NULL) {
        __threadfence();
        if (atomicAdd(arrived, 1u) != gridDim.x - 1) {
            return;
        }
    }
    MPIX_Win_flush_device(peer, win);
}

/* One block puts @p bytes whole and flushes while the grid's other blocks wait for it on
 * @p done (a device word, 0 before the launch: 1 once the put is posted, 2 once flushed),
 * napping, or with @p flush by flushing themselves once it is posted: whether blocks that only
 * wait slow a transfer the proxy makes (--bw-idle-blocks, --bw-idle-flush). */
__global__ void __launch_bounds__(1024) k_bw_idle(MPIX_Win_device win, int peer, const char *src,
                                                  size_t bytes, size_t win_off,
                                                  unsigned *done, bool flush)
{
    if (blockIdx.x == 0) {
        MPIX_Put_device_block(src, bytes, peer, (MPI_Aint)win_off, win);
        __syncthreads();
        if (threadIdx.x == 0) {
            atomicExch(done, 1u);
            MPIX_Win_flush_device(peer, win);
            atomicExch(done, 2u);
        }
    } else if (threadIdx.x == 0) {
        while (atomicAdd(done, 0u) < (flush ? 1u : 2u)) {
            __nanosleep(1000);
        }
        if (flush) {
            MPIX_Win_flush_device(peer, win);
        }
    }
}

/* The same with gets: each block reads its slice of the peer's window (remote loads). */
__global__ void k_get_bw(MPIX_Win_device win, int peer, char *dst, size_t bytes,
                         size_t win_off)
{
    size_t off, len;

    if (block_slice(bytes, &off, &len)) {
        MPIX_Get_device_block(dst + off, len, peer, (MPI_Aint)(win_off + off), win);
    }
}

/* qsort order of floats */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/*
 * Times @p reps launches, after one that warms up, of @p blocks blocks of 1024 threads putting
 * (k_bw, chunks of @p chunk) or getting (k_get_bw) @p bytes; returns GB/s, or -1 when a launch
 * failed (too many registers for 1024 threads: it would otherwise read as a huge bandwidth).
 * With --bw-spread it also prints the launches' spread and the proxy's counters over them.
 */
static double bw_measure(MPIX_Win_device h, int peer, char *d_src, size_t bytes, size_t bw_off,
                         int blocks, size_t chunk, bool get, int reps, int idle = 0)
{
    cudaEvent_t *ev = (cudaEvent_t *)malloc((reps + 2) * sizeof(*ev));
    float *lap = (float *)malloc((reps + 1) * sizeof(*lap));
    unsigned long long pv0[PROXY_PV_COUNT], pv1[PROXY_PV_COUNT];
    cudaError_t err;
    float ms = 0;

    for (int r = 0; r <= reps + 1; ++r) {
        cudaEventCreate(&ev[r]);
    }
    proxy_pv_read(pv0);
    for (int r = 0; r <= reps; ++r) {
        cudaEventRecord(ev[r]); /* ev[1] .. ev[reps + 1]: the timed launches (the first warms up) */
        if (idle > 0) {
            cudaMemsetAsync(idle_done, 0, sizeof(*idle_done));
            k_bw_idle<<<1 + idle, 1024>>>(h, peer, d_src, bytes, bw_off, idle_done,
                                          bw_idle_flush);
        } else if (get) {
            k_get_bw<<<blocks, 1024>>>(h, peer, d_src, bytes, bw_off);
        } else {
            if (bw_arrived != NULL) {
                cudaMemsetAsync(bw_arrived, 0, sizeof(*bw_arrived));
            }
            k_bw<<<blocks, 1024>>>(h, peer, d_src, bytes, bw_off, chunk, bw_arrived);
        }
    }
    cudaEventRecord(ev[reps + 1]);
    cudaEventSynchronize(ev[reps + 1]);
    proxy_pv_read(pv1);
    err = cudaGetLastError();
    if (err == cudaSuccess) {
        cudaEventElapsedTime(&ms, ev[1], ev[reps + 1]);
        if (bw_spread) {
            for (int r = 1; r <= reps; ++r) {
                cudaEventElapsedTime(&lap[r - 1], ev[r], ev[r + 1]);
            }
            qsort(lap, reps, sizeof(lap[0]), cmp_float);
            printf("# %s %zu B, %d blocks%s: launches %.3f / %.3f / %.3f ms (fastest / median / "
                   "slowest of %d); proxy: %llu entries, %llu rounds, %llu pauses, busy %.0f%%, "
                   "%llu merged\n",
                   get ? "get_bw" : "put_bw", bytes, blocks + idle, idle > 0 ? " (1 putting)" : "",
                   lap[0], lap[reps / 2],
                   lap[reps - 1], reps, pv1[0] - pv0[0], pv1[1] - pv0[1], pv1[2] - pv0[2],
                   ms > 0 ? 100.0 * (double)(pv1[5] - pv0[5]) / (ms * 1e6) : 0.0,
                   pv1[6] - pv0[6]);
        }
    } else {
        fprintf(stderr, "device_bench: %s at %zu bytes from %d blocks: %s\n",
                get ? "k_get_bw" : "k_bw", bytes, blocks, cudaGetErrorString(err));
    }
    for (int r = 0; r <= reps + 1; ++r) {
        cudaEventDestroy(ev[r]);
    }
    free(ev);
    free(lap);
    return err == cudaSuccess ? bytes * (double)reps / (ms * 1e-3) / 1e9 : -1;
}

/* Dissection of put + flush on the same mapping: what a store, each fence flavour and the
 * API's checks cost per operation (mode 0: store only, 1: store + fence.acq_rel.gpu,
 * 2: store + fence.sc.gpu (__threadfence), 3: store + fence.acq_rel.sys, 4: MPIX_Put_device
 * without a flush, 5: raw 8-byte load, 6: store of a value loaded from the origin buffer,
 * 7: the API's checks alone, 8: MPIX_Put_device to one address, 9 and 10: store +
 * fence.release.gpu / .sys, 11 and 12: store + fence.acq_rel.gpu / fence.release.gpu, then a
 * load of the target's entry in the window's description, 13: a plain load of the peer's word,
 * 14: the same through the API's copy into a local variable, 15: MPIX_Get_target_device). */
__global__ void k_dissect(MPIX_Win_device win, volatile uint64_t *remote, int peer, int mode,
                          int iters, const uint64_t *src, uint64_t *ns)
{
    MPIX_Device_target t;

    MPIX_Win_target_device(win, peer, &t);
    uint64_t t0 = now_ns(), sum = 0;
    for (int i = 0; i < iters; ++i) {
        volatile uint64_t *p = remote + (i % 1024);
        switch (mode) {
        case 0: *p = i; break;
        case 1: *p = i; asm volatile("fence.acq_rel.gpu;" ::: "memory"); break;
        case 2: *p = i; __threadfence(); break;
        case 3: *p = i; asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
        case 4: MPIX_Put_device(src, 8, peer, (MPI_Aint)(i % 1024) * 8, win); break;
        case 5: sum += *p; break;
        case 6: *p = src[0]; break; /* the origin load too */
        case 7: { char *a = NULL; sum += gpuic_dev_resolve(win, peer, (MPI_Aint)(i % 1024) * 8,
                                                         8, 1, &a) + (uintptr_t)a; } break;
        case 8: MPIX_Put_device(src, 8, peer, 0, win); break; /* same address each time */
        case 9: *p = i; asm volatile("fence.release.gpu;" ::: "memory"); break;
        case 10: *p = i; asm volatile("fence.release.sys;" ::: "memory"); break;
        /* a store, a fence, then a load of the window's description (what the next call by
         * rank reads first): does the fence cost that load its L1 hit? */
        case 11:
            *p = i;
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            sum += __ldg(&win.desc->peers[peer].size);
            break;
        case 12:
            *p = i;
            asm volatile("fence.release.gpu;" ::: "memory");
            sum += __ldg(&win.desc->peers[peer].size);
            break;
        /* where an 8-byte get spends its time: a plain (cacheable) load of the peer's word,
         * the same through the API's copy into a local variable, the API's resolved get */
        case 13: sum += *(const uint64_t *)p; break;
        case 14: {
            uint64_t v;
            gpuic_dev_get_copy((char *)&v, (const char *)p, 8);
            sum += v;
        } break;
        default: {
            uint64_t v;
            MPIX_Get_target_device(&t, &v, 8, (MPI_Aint)(i % 1024) * 8);
            sum += v;
        } break;
        }
    }
    *ns = now_ns() - t0;
    if (sum == 42) *ns += 1; /* keeps the loads */
}

/* Raw floor: the same mapping, no API: store, system fence, spin on the peer's store. */
__global__ void k_raw_pingpong(volatile uint64_t *mine, volatile uint64_t *theirs, int me,
                               int iters, uint64_t *ns)
{
    uint64_t t0 = now_ns();
    for (uint64_t r = 1; r <= (uint64_t)iters; ++r) {
        if (me == 0) {
            *theirs = r;
            __threadfence_system();
            while (*mine < r) {
            }
        } else {
            while (*mine < r) {
            }
            *theirs = r;
            __threadfence_system();
        }
    }
    *ns = now_ns() - t0;
}

/* Raw floor: kernel writes a request into mapped host memory, a host thread answers.  The
 * kernel's side in several flavours (rows gpu_cpu_gpu_rtt*, rtt_modes below): the request
 * store volatile or relaxed at system scope, then no fence, fence.acq_rel.sys, fence.sc.sys
 * (__threadfence_system) or a release reduction on a device-memory word (what the device API's
 * proxy waits begin with, gpuic_dev_proxy_push()), then volatile, acquire or relaxed loads until
 * the answer. */
enum { RTT_ST_VOLATILE, RTT_ST_RELAXED };
enum { RTT_FENCE_NONE, RTT_FENCE_ACQ_REL, RTT_FENCE_SC, RTT_FENCE_RED_RELEASE };
enum { RTT_LD_VOLATILE, RTT_LD_ACQUIRE, RTT_LD_RELAXED };

struct rtt_mode {
    const char *name;
    int st, fence, ld;
};

static const struct rtt_mode rtt_modes[] = {
    {"gpu_cpu_gpu_rtt", RTT_ST_VOLATILE, RTT_FENCE_SC, RTT_LD_VOLATILE},
    {"gpu_cpu_gpu_rtt_nofence", RTT_ST_VOLATILE, RTT_FENCE_NONE, RTT_LD_VOLATILE},
    {"gpu_cpu_gpu_rtt_acquire", RTT_ST_RELAXED, RTT_FENCE_NONE, RTT_LD_ACQUIRE},
    {"gpu_cpu_gpu_rtt_relaxed", RTT_ST_RELAXED, RTT_FENCE_NONE, RTT_LD_RELAXED},
    {"gpu_cpu_gpu_rtt_acqrel_acquire", RTT_ST_RELAXED, RTT_FENCE_ACQ_REL, RTT_LD_ACQUIRE},
    {"gpu_cpu_gpu_rtt_sc_acquire", RTT_ST_RELAXED, RTT_FENCE_SC, RTT_LD_ACQUIRE},
    {"gpu_cpu_gpu_rtt_acqrel_relaxed", RTT_ST_RELAXED, RTT_FENCE_ACQ_REL, RTT_LD_RELAXED},
    {"gpu_cpu_gpu_rtt_redrelease_acquire", RTT_ST_RELAXED, RTT_FENCE_RED_RELEASE, RTT_LD_ACQUIRE},
};

__global__ void k_gpu_cpu(uint64_t *req, uint64_t *resp, int iters, rtt_mode m, uint64_t *ns,
                          unsigned long long *dword)
{
    uint64_t t0 = now_ns();
    for (uint64_t r = 1; r <= (uint64_t)iters; ++r) {
        uint64_t v;

        if (m.st == RTT_ST_VOLATILE) {
            *(volatile uint64_t *)req = r;
        } else {
            asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(req), "l"(r) : "memory");
        }
        if (m.fence == RTT_FENCE_ACQ_REL) {
            asm volatile("fence.acq_rel.sys;" ::: "memory");
        } else if (m.fence == RTT_FENCE_SC) {
            __threadfence_system();
        } else if (m.fence == RTT_FENCE_RED_RELEASE) {
            asm volatile("red.release.sys.global.add.u64 [%0], 0;" ::"l"(dword) : "memory");
        }
        do {
            if (m.ld == RTT_LD_VOLATILE) {
                v = *(volatile uint64_t *)resp;
            } else if (m.ld == RTT_LD_ACQUIRE) {
                asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(resp) : "memory");
            } else {
                asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(resp) : "memory");
            }
        } while (v < r);
    }
    *ns = now_ns() - t0;
}

struct echo_arg {
    volatile uint64_t *req, *resp;
    int iters;
};

static void *echo_thread(void *p)
{
    struct echo_arg *a = (struct echo_arg *)p;
    for (uint64_t r = 1; r <= (uint64_t)a->iters; ++r) {
        while (*a->req < r) {
        }
        __sync_synchronize();
        *a->resp = r;
    }
    return NULL;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t read_ns(uint64_t *d)
{
    uint64_t v;
    cudaDeviceSynchronize();
    cudaMemcpy(&v, d, 8, cudaMemcpyDeviceToHost);
    return v;
}

/* Bandwidth sizes: 8 B times powers of 4, and --max-bytes itself when it is larger than the
 * default and not on that ladder (256 MiB after 128 MiB), so the default rows stay as they were. */
static size_t bw_next_size(size_t bytes, size_t max_bytes)
{
    if (bytes < max_bytes && bytes * 4 > max_bytes && max_bytes > BW_DEFAULT_MAX) {
        return max_bytes;
    }
    return bytes * 4;
}

/* The copy engines' bandwidth between this GPU and the next one (what a put can hope for):
 * cudaMemcpyPeerAsync with peer access enabled, sizes as put_bw's. */
static void memcpy_peer_floor(int dev, int ndev, const char *d_src, size_t max_bytes)
{
    int other = (dev + 1) % ndev, can = 0;
    char *d_dst = NULL;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    float ms;

    if (ndev < 2 || cudaDeviceCanAccessPeer(&can, dev, other) != cudaSuccess || !can) {
        fprintf(stderr, "device_bench: --memcpy-peer needs two GPUs with peer access\n");
        return;
    }
    /* the IPC mapping of the peer's window may have enabled it already */
    if (cudaDeviceEnablePeerAccess(other, 0) != cudaSuccess) (void)cudaGetLastError();
    cudaSetDevice(other);
    if (cudaDeviceEnablePeerAccess(dev, 0) != cudaSuccess) (void)cudaGetLastError();
    if (cudaMalloc(&d_dst, max_bytes) != cudaSuccess) {
        fprintf(stderr, "device_bench: no %zu bytes on device %d\n", max_bytes, other);
        cudaSetDevice(dev);
        return;
    }
    cudaSetDevice(dev);
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (size_t bytes = 8; bytes <= max_bytes;
         bytes = bw_next_size(bytes, max_bytes)) {
        int reps = bytes < (1 << 20) ? 200 : 20;
        cudaMemcpyPeerAsync(d_dst, other, d_src, dev, bytes, st);
        cudaEventRecord(e0, st);
        for (int r = 0; r < reps; ++r) cudaMemcpyPeerAsync(d_dst, other, d_src, dev, bytes, st);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        row("floor", "cudaMemcpyPeer_bw", bytes, bytes * (double)reps / (ms * 1e-3) / 1e9, "GB/s");
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(st);
    cudaFree(d_dst);
}

int main(int argc, char **argv)
{
    int nranks, iters = 20000, ndev = 0;
    size_t max_bytes = BW_DEFAULT_MAX, win_bytes = WIN_BYTES, bw_off = 0;
    bool memcpy_peer = false;
    const char *csv_path = NULL;
    char *base;
    MPI_Win win;
    MPI_Info info;
    MPIX_Win_device h;
    uint64_t *d_ns, *d_buf;
    char *d_src;

    MPI_Init(&argc, &argv);
    proxy_pv_open();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
        else if (!strcmp(argv[i], "--latency-only")) latency_only = true;
        else if (!strcmp(argv[i], "--bw-only")) bw_only = true;
        else if (!strcmp(argv[i], "--rate-only")) rate_only = bw_only = true;
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--rate-words") && i + 1 < argc) rate_words = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--memcpy-peer")) memcpy_peer = true;
        else if (!strcmp(argv[i], "--bw-chunk") && i + 1 < argc) bw_chunk = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--bw-blocks") && i + 1 < argc) bw_blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bw-min-bytes") && i + 1 < argc)
            bw_min_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--bw-spread")) bw_spread = true;
        else if (!strcmp(argv[i], "--bw-idle-blocks") && i + 1 < argc) bw_idle_blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bw-idle-flush")) bw_idle_flush = true;
        else if (!strcmp(argv[i], "--bw-one-flush")) bw_one_flush = true;
        else if (!strcmp(argv[i], "--host-window")) {
            host_window = true;
            if (!strcmp(label, "gpuic")) label = "proxy";
        }
    }
    if (nranks != 2 || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) fprintf(stderr, "device_bench: needs 2 ranks and a GPU\n");
        proxy_pv_close();
        MPI_Finalize();
        return 1;
    }
    if (max_bytes < 8) max_bytes = 8;
    if (bw_blocks < 1) bw_blocks = 1;
    if (rate_words < 1 || rate_words > (1 << 20)) rate_words = 1 << 20;
    while (rate_words & (rate_words - 1)) rate_words &= rate_words - 1; /* a power of two */
    if (max_bytes > BW_DEFAULT_MAX) {
        /* the fixed words (signal, data) stay where they are; the large puts get their own part */
        bw_off = WIN_BYTES;
        win_bytes = WIN_BYTES + max_bytes;
    }
    cudaSetDevice(rank % ndev);
    if (rank == 0 && csv_path) csv = fopen(csv_path, "a");
    int peer = 1 - rank;

    MPI_Info_create(&info);
    if (!host_window) {
        MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    }
    if (MPI_Win_allocate((MPI_Aint)win_bytes, 1, info, MPI_COMM_WORLD, &base, &win) !=
        MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "device_bench: no window of %zu bytes\n", win_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Info_free(&info);
    win_memset(base, 0, win_bytes);
    if (MPIX_Win_get_device_handle(win, &h) != MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "device_bench: no device handle\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    {
        int path = -1;
        MPIX_Win_gpuic_device_path(win, peer, &path);
        if (rank == 0) {
            printf("# %s: device path to the peer: %s\n", label,
                   path == MPIX_GPUIC_DEVICE_PATH_P2P ? "P2P"
                   : path == MPIX_GPUIC_DEVICE_PATH_PROXY ? "proxy" : "none");
        }
    }
    cudaMalloc(&d_ns, 64);
    cudaMalloc(&d_buf, 64);
    cudaMalloc(&d_src, max_bytes);
    cudaMemset(d_src, 1, max_bytes);
    cudaMemset(d_buf, 0, 64);
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* put + flush, get, fetch_add: rank 0 alone */
    if (rank == 0 && !bw_only) {
        k_put_flush<<<1, 1>>>(h, peer, 100, d_buf, d_ns);
        cudaDeviceSynchronize();
        k_put_flush<<<1, 1>>>(h, peer, iters, d_buf, d_ns);
        row(label, "put_flush", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        k_get<<<1, 1>>>(h, peer, iters, d_buf, d_ns);
        row(label, "get", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        k_fadd<<<1, 1>>>(h, peer, iters, (int64_t *)d_buf, d_ns);
        row(label, "fetch_add", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        k_put_flush_target<<<1, 1>>>(h, peer, iters, d_buf, d_ns);
        row(label, "put_flush_resolved", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        k_get_target<<<1, 1>>>(h, peer, iters, d_buf, d_ns);
        row(label, "get_resolved", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        {
            int rounds = iters / SPLIT_PUTS > 0 ? iters / SPLIT_PUTS : 1;
            uint64_t split[3] = {0, 0, 0};

            k_put_split_target<<<1, 1>>>(h, peer, rounds, d_buf, d_ns);
            /* synchronized first, as read_ns(): with osc_gpuic_device_proxy the proxy's driver
             * copies wait behind a blocking copy issued while the kernel waits for them
             * (docs/streams.md, "Blocking copies and waits for the proxy") */
            cudaDeviceSynchronize();
            cudaMemcpy(split, d_ns, sizeof(split), cudaMemcpyDeviceToHost);
            row(label, "split_put_resolved", 8, split[0] / ((double)rounds * SPLIT_PUTS) / 1e3,
                "us");
            row(label, "split_flush_16_resolved", 8, split[1] / (double)rounds / 1e3, "us");
            row(label, "split_flush_empty_resolved", 0, split[2] / (double)rounds / 1e3, "us");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* ping-pong with put-with-signal, by rank then resolved.  Each kernel runs WARM_ROUNDS
     * rounds untimed first: a kernel's first launch loads it (lazy loading), and a rank that
     * is still loading shows in the other rank's time (a few milliseconds over the run). */
    for (int resolved = 0; resolved < 2 && !bw_only && !quick; ++resolved) {
        for (int timed = 0; timed < 2; ++timed) {
            int n = timed ? iters : WARM_ROUNDS;

            win_memset(base + SIG_OFF, 0, 8);
            cudaDeviceSynchronize();
            MPI_Barrier(MPI_COMM_WORLD);
            if (resolved) {
                k_pingpong_target<<<1, 1>>>(h, rank, n, d_buf, d_ns);
            } else {
                k_pingpong<<<1, 1>>>(h, rank, n, d_buf, d_ns);
            }
            double us = read_ns(d_ns) / (double)n / 2 / 1e3;
            if (timed) {
                row(label, resolved ? "pingpong_signal_resolved" : "pingpong_signal", 8, us,
                    "us");
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }

    /* ping-pong with a payload written and checked every round (the window's own words are
     * read by the kernel: GPU windows only) */
    if (!host_window && !bw_only && !quick) {
        static const size_t pay[] = {8, 64, 1024, PAY_MAX};
        uint64_t *d_pay, *d_bad;

        cudaMalloc(&d_pay, PAY_MAX);
        cudaMalloc(&d_bad, 8);
        for (int resolved = 0; resolved < 2; ++resolved) {
            for (size_t k = 0; k < sizeof(pay) / sizeof(pay[0]); ++k) {
                uint64_t bad = 0;
                double us = 0;

                /* the first size runs untimed first, as above (the kernel loads once) */
                for (int timed = resolved == 0 && k == 0 ? 0 : 1; timed < 2; ++timed) {
                    int n = timed ? iters : WARM_ROUNDS;

                    win_memset(base + SIG_OFF, 0, 8);
                    cudaDeviceSynchronize();
                    MPI_Barrier(MPI_COMM_WORLD);
                    k_pingpong_payload<<<1, 1>>>(h, (const uint64_t *)(base + PAY_OFF), rank, n,
                                                 pay[k], resolved != 0, d_pay, d_bad, d_ns);
                    us = read_ns(d_ns) / (double)n / 2 / 1e3;
                }
                cudaMemcpy(&bad, d_bad, 8, cudaMemcpyDeviceToHost);
                MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
                if (bad == 0) {
                    row(label, resolved ? "pingpong_payload_resolved" : "pingpong_payload",
                        pay[k], us, "us");
                } else if (rank == 0) {
                    printf("# %s: pingpong_payload %zu B: %llu words wrong\n", label, pay[k],
                           (unsigned long long)bad);
                }
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        cudaFree(d_pay);
        cudaFree(d_bad);
    }

    /* message rate */
    if (rank == 0 && !latency_only) {
        int shapes[][2] = {{1, 32}, {8, 256}, {132, 256}, {132, 1024}};
        for (int s = 0; s < 4 && (!bw_only || rate_only); ++s) {
            int blocks = shapes[s][0], threads = shapes[s][1];
            /* the proxy path moves a few M msg/s, the P2P path tens of G: fewer per thread there
             * (by the window's kind, not the row's label, so that a relabelled run does the same
             * work) */
            int per = host_window ? 8 : 64;
            cudaEvent_t e0, e1;
            float ms;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            unsigned long long pv0[PROXY_PV_COUNT], pv1[PROXY_PV_COUNT];
            k_rate<<<blocks, threads>>>(h, peer, per, d_buf, rate_words - 1);
            cudaDeviceSynchronize();
            proxy_pv_read(pv0);
            cudaEventRecord(e0);
            k_rate<<<blocks, threads>>>(h, peer, per, d_buf, rate_words - 1);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            proxy_pv_read(pv1);
            cudaEventElapsedTime(&ms, e0, e1);
            char name[64];
            snprintf(name, sizeof(name), "msg_rate_%dx%d", blocks, threads);
            row(label, name, 8, (double)blocks * threads * per / (ms * 1e-3) / 1e6, "Mmsg/s");
            if (host_window && pv1[0] > pv0[0]) {
                /* the proxy's side of the run: how many entries each round found, how many
                 * reservations found the queue full (per entry) */
                unsigned long long entries = pv1[0] - pv0[0], rounds = pv1[1] - pv0[1];
                snprintf(name, sizeof(name), "msg_rate_%dx%d_entries", blocks, threads);
                row(label, name, 8, (double)entries, "entries");
                snprintf(name, sizeof(name), "msg_rate_%dx%d_per_round", blocks, threads);
                row(label, name, 8, rounds ? (double)entries / rounds : 0.0, "entries/round");
                snprintf(name, sizeof(name), "msg_rate_%dx%d_full_waits", blocks, threads);
                row(label, name, 8, (double)(pv1[3] - pv0[3]) / entries, "per entry");
                snprintf(name, sizeof(name), "msg_rate_%dx%d_proxy_busy", blocks, threads);
                row(label, name, 8, 100.0 * (double)(pv1[5] - pv0[5]) / (ms * 1e6), "%");
                snprintf(name, sizeof(name), "msg_rate_%dx%d_ns_per_entry", blocks, threads);
                row(label, name, 8, (double)(pv1[5] - pv0[5]) / entries, "ns busy");
                if (pv1[4] != pv0[4]) {
                    snprintf(name, sizeof(name), "msg_rate_%dx%d_refused", blocks, threads);
                    row(label, name, 8, (double)(pv1[4] - pv0[4]), "entries");
                }
            }
            cudaEventDestroy(e0);
            cudaEventDestroy(e1);
        }
        /* bandwidth: puts (local loads, remote stores), then on the P2P path gets (remote
         * loads; through the proxy they would double the run's time for no target) */
        int kinds = rate_only || quick ? 0 : !host_window && strcmp(label, "gpuic") == 0 ? 2 : 1;
        if (bw_one_flush && kinds > 0) {
            cudaMalloc((void **)&bw_arrived, sizeof(*bw_arrived));
        }
        for (int get = 0; get < kinds; ++get) {
            for (size_t bytes = 8; bytes <= max_bytes;
                 bytes = bw_next_size(bytes, max_bytes)) {
                if (bytes < bw_min_bytes) {
                    continue;
                }
                double gbs = bw_measure(h, peer, d_src, bytes, bw_off, bw_blocks, bw_chunk, get,
                                        bytes < (1 << 20) ? 200 : 20);
                if (gbs < 0) {
                    break;
                }
                row(label, get ? "get_bw" : bw_one_flush ? "put_bw_one_flush" : "put_bw", bytes,
                    gbs, "GB/s");
            }
        }
        cudaFree(bw_arrived);
        bw_arrived = NULL;
        /* one block, one call: what a single large put or get moves (through the proxy, the
         * transfer the copy engine takes whole) */
        for (int get = 0; get < 2 && !rate_only && !quick; ++get) {
            size_t bytes = max_bytes < (8u << 20) ? max_bytes : (8u << 20);
            double gbs = bw_measure(h, peer, d_src, bytes, bw_off, 1, 0, get, 20);
            if (gbs >= 0) {
                row(label, get ? "get_bw_1block" : "put_bw_1block", bytes, gbs, "GB/s");
            }
        }
        if (bw_idle_blocks > 0 && !rate_only && !quick) {
            size_t bytes = max_bytes < (8u << 20) ? max_bytes : (8u << 20);
            double gbs;

            cudaMalloc((void **)&idle_done, sizeof(*idle_done));
            gbs = bw_measure(h, peer, d_src, bytes, bw_off, 1, 0, false, 20, bw_idle_blocks);
            if (gbs >= 0) {
                char name[64];

                snprintf(name, sizeof(name), "put_bw_1block_idle%d%s", bw_idle_blocks,
                         bw_idle_flush ? "_flush" : "");
                row(label, name, bytes, gbs, "GB/s");
            }
            cudaFree(idle_done);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* floors: raw IPC store ping-pong through the same mapping (P2P runs only) */
    if (!host_window && !bw_only && !quick && strcmp(label, "gpuic") == 0) {
        MPIX_Gpuic_device_win *hw = (MPIX_Gpuic_device_win *)malloc(
            sizeof(MPIX_Gpuic_device_win) + 2 * sizeof(MPIX_Gpuic_device_peer));
        cudaMemcpy(hw, h.desc, sizeof(MPIX_Gpuic_device_win) + 2 * sizeof(MPIX_Gpuic_device_peer),
                   cudaMemcpyDeviceToHost);
        volatile uint64_t *mine = (volatile uint64_t *)(base + SIG_OFF - 8);
        volatile uint64_t *theirs = (volatile uint64_t *)(hw->peers[peer].base + SIG_OFF - 8);
        for (int timed = 0; timed < 2; ++timed) { /* untimed first, as the ping-pongs above */
            int n = timed ? iters : WARM_ROUNDS;

            cudaMemset(base + SIG_OFF - 8, 0, 8);
            cudaDeviceSynchronize();
            MPI_Barrier(MPI_COMM_WORLD);
            k_raw_pingpong<<<1, 1>>>(mine, theirs, rank, n, d_ns);
            double us = read_ns(d_ns) / (double)n / 2 / 1e3;
            if (timed) row("floor", "ipc_store_pingpong", 8, us, "us");
            MPI_Barrier(MPI_COMM_WORLD);
        }
        free(hw);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* dissection of put + flush, rank 0 (P2P runs only) */
    if (rank == 0 && !host_window && !bw_only && strcmp(label, "gpuic") == 0) {
        static const char *names[] = {"dissect_store", "dissect_store_fence_acqrel_gpu",
                                      "dissect_store_threadfence", "dissect_store_fence_acqrel_sys",
                                      "dissect_api_put_noflush", "dissect_raw_load",
                                      "dissect_store_with_origin_load", "dissect_resolve_only",
                                      "dissect_api_put_same_address",
                                      "dissect_store_fence_release_gpu",
                                      "dissect_store_fence_release_sys",
                                      "dissect_store_acqrel_gpu_desc_load",
                                      "dissect_store_release_gpu_desc_load",
                                      "dissect_get_plain_load", "dissect_get_copy_local",
                                      "dissect_get_api_resolved"};
        MPIX_Gpuic_device_win *hw = (MPIX_Gpuic_device_win *)malloc(
            sizeof(MPIX_Gpuic_device_win) + 2 * sizeof(MPIX_Gpuic_device_peer));
        cudaMemcpy(hw, h.desc, sizeof(MPIX_Gpuic_device_win) + 2 * sizeof(MPIX_Gpuic_device_peer),
                   cudaMemcpyDeviceToHost);
        volatile uint64_t *remote = (volatile uint64_t *)hw->peers[peer].base;
        int nmodes = (int)(sizeof(names) / sizeof(names[0])), first = 0;

        /* --quick: the get's rows alone, from the first of them in the table */
        while (quick && first < nmodes && strncmp(names[first], "dissect_get_", 12) != 0) {
            ++first;
        }
        for (int mode = first; mode < nmodes; ++mode) {
            k_dissect<<<1, 1>>>(h, remote, peer, mode, 100, d_buf, d_ns);
            cudaDeviceSynchronize();
            k_dissect<<<1, 1>>>(h, remote, peer, mode, iters, d_buf, d_ns);
            row("floor", names[mode], 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        }
        free(hw);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* floors: GPU -> CPU -> GPU and cudaMemcpy, rank 0 */
    if (rank == 0 && !bw_only && !quick) {
        uint64_t *hostw;
        uint64_t *d_hostw;
        cudaHostAlloc(&hostw, 128, cudaHostAllocMapped);
        memset(hostw, 0, 128);
        cudaHostGetDevicePointer(&d_hostw, hostw, 0);
        int n = iters / 10;
        for (size_t mode = 0; mode < sizeof(rtt_modes) / sizeof(rtt_modes[0]); ++mode) {
            struct echo_arg a = {hostw, hostw + 8, n};
            pthread_t th;

            memset(hostw, 0, 128);
            pthread_create(&th, NULL, echo_thread, &a);
            k_gpu_cpu<<<1, 1>>>(d_hostw, d_hostw + 8, n, rtt_modes[mode], d_ns,
                                (unsigned long long *)d_buf);
            uint64_t ns = read_ns(d_ns);
            pthread_join(th, NULL);
            row("floor", rtt_modes[mode].name, 8, ns / (double)n / 1e3, "us");
        }
        cudaFreeHost(hostw);

        char *d_peer;
        cudaMalloc(&d_peer, 64);
        double t0 = wall();
        for (int i = 0; i < 1000; ++i) cudaMemcpy(d_peer, d_buf, 8, cudaMemcpyDeviceToDevice);
        row("floor", "cudaMemcpy_8B", 8, (wall() - t0) / 1000 * 1e6, "us");
        cudaFree(d_peer);
        if (memcpy_peer) memcpy_peer_floor(rank % ndev, ndev, d_src, max_bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (csv) fclose(csv);
    proxy_pv_close();
    MPI_Finalize();
    return 0;
}
