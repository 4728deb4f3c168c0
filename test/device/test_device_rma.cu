/*
 * Device-initiated RMA on gpuic GPU windows (run with 2 or more ranks on one node; several
 * ranks on one GPU need MPS for the cross-process waits to be fast):
 *  1. put (thread, warp, block) into the right neighbour, then host checks of the data, and
 *     put/get/signal/flush through targets resolved once (MPIX_Win_target_device);
 *     8-byte puts from 384 threads at once, every third to the left neighbour and one lane of
 *     each warp a 16-byte put instead (on the proxy path through a mapping, the lanes of a
 *     warp share entries by target and size), each slot and the guards around them checked,
 *     in blocks of one row of 128 threads and of eight rows of 16 (warps spanning two rows:
 *     lanes are the hardware's, not threadIdx.x % 32); a warp's put from a 16 x 2 block;
 *  2. get (thread, warp, block) back from the right neighbour;
 *  3. fetch_and_add from 512 threads of every rank on one counter: exact total, no duplicate
 *     old values; compare_and_swap increments on another counter; fetching OR, XOR and AND
 *     (64-bit, and OR on a 32-bit word) of a bit of each thread's own: every old value one
 *     step of a chain (the old values' bit counts all differ), the final words exact;
 *  4. accumulate (SUM, MAX, MIN, BXOR, REPLACE, PROD on the six types) from every rank, and
 *     fetch_and_op with NO_OP to read back;
 *  5. put-with-signal ping-pong between ranks 0 and 1, data checked every round;
 *  6. errors: out of range, bad rank, invalid handle, misaligned atomic: the right class, no
 *     byte written outside the window, and the host's next flush reports the first error;
 *  7. host MPI calls on the same GPU windows (host and device buffers) in later epochs, and a
 *     window made by MPI_Win_create on cudaMalloc memory;
 *  8. large transfers in a window of their own (on the proxy path those of 64 KiB or more go
 *     without staging): puts by one thread and by a block, sizes just below, at and above
 *     64 KiB, 1 MiB and over 8 MiB at odd offsets, each origin overwritten as soon as the put
 *     returned (a put has read its origin by then); gets of them back; a put-with-signal of
 *     several MiB; the bytes around every transfer untouched.
 * With GPUIC_TEST_HOST_WINDOW=1 the window of 1-7 is host memory, so every device call goes
 * through the proxy path (work-queue entries executed by the proxy thread); with
 * OMPI_MCA_osc_gpuic_device_proxy=1 a GPU window's data moves through the proxy too.  With
 * OMPI_MCA_osc_gpuic_emulate_nodes=N (host windows only) ranks of other emulated nodes are
 * reached through UCX, by host calls and by the proxy alike, and the MPI_Win_create part
 * reaches their device memory through UCX, or is refused where this process's UCX cannot
 * register device memory.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/mpi_test.h"
#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define WIN_BYTES (64 * 1024)
#define OFF_PUT_THREAD 0
#define OFF_PUT_WARP 1024
#define OFF_PUT_BLOCK 8192
#define BLOCK_BYTES 8192
#define OFF_P8_R 16384  /* 1c: 8-byte puts to the right neighbour, one slot per thread */
#define OFF_P8_L 20480  /* 1c: 8-byte puts to the left neighbour */
#define OFF_P16 24576   /* 1c: a 16-byte put per warp */
#define P8_THREADS 384  /* 1c: 3 blocks of 128 */
#define OFF_PUT_WARP2D 32768 /* 1d: a warp's put from a two-row block */
#define WARP2D_BYTES 4099
#define OFF_COUNTER 60000
#define OFF_CAS 60008
#define OFF_BITS 60016 /* 3b: OR, XOR and AND words (64-bit), then a 32-bit OR word */
#define OFF_ACC 61000
#define OFF_SIG 63000
#define OFF_PINGPONG 63008
#define NRC 16

static int rank, nranks;
static bool host_window;   /* GPUIC_TEST_HOST_WINDOW: the window is host memory */
static bool forced_proxy;  /* osc_gpuic_device_proxy: device data through the proxy */
static int per_node;       /* osc_gpuic_emulate_nodes: ranks per emulated node, 0 none */

__device__ unsigned char pattern(int writer, int i)
{
    return (unsigned char)(writer * 37 + i * 11 + 5);
}

static unsigned char host_pattern(int writer, int i)
{
    return (unsigned char)(writer * 37 + i * 11 + 5);
}

/* 1. puts: one thread, warp 0, the whole block */
__global__ void k_put(MPIX_Win_device win, int me, int right, unsigned char *src, int *rc)
{
    for (int i = threadIdx.x; i < BLOCK_BYTES; i += blockDim.x) {
        src[i] = pattern(me, i);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        rc[0] = MPIX_Put_device(src, 256, right, OFF_PUT_THREAD, win);
    }
    if (threadIdx.x < 32) {
        int r = MPIX_Put_device_warp(src, 4096 + 3, right, OFF_PUT_WARP, win);
        if (threadIdx.x == 0) rc[1] = r;
    }
    int r = MPIX_Put_device_block(src, BLOCK_BYTES, right, OFF_PUT_BLOCK, win);
    if (threadIdx.x == 0) {
        rc[2] = r;
        rc[3] = MPIX_Win_flush_device(right, win);
        rc[4] = MPIX_Win_flush_all_device(win);
        rc[5] = MPIX_Win_flush_local_device(right, win);
    }
}

/* 1c. 8-byte puts from every thread, each into its own slot: lanes with t % 3 == 0 to the left
 * neighbour, the others to the right, lane 5 of each warp a 16-byte put instead. */
__host__ __device__ static uint64_t val8(int writer, int t)
{
    return ((uint64_t)(writer + 1) << 48) | (uint64_t)t * 2654435761u;
}

__global__ void k_put8(MPIX_Win_device win, int me, int right, int left, uint64_t *src, int *rc)
{
    /* blocks of 128 threads in one row or in 8 rows of 16 (a warp then spans two rows) */
    int in_block = threadIdx.x + blockDim.x * threadIdx.y;
    int t = blockIdx.x * blockDim.x * blockDim.y + in_block, warp = t / 32, r;

    if ((in_block & 31) == 5) {
        src[2 * t] = val8(me, 1000 + warp);
        src[2 * t + 1] = val8(me, 2000 + warp);
        r = MPIX_Put_device(&src[2 * t], 16, right, OFF_P16 + warp * 16, win);
    } else {
        src[2 * t] = val8(me, t);
        r = MPIX_Put_device(&src[2 * t], 8, t % 3 == 0 ? left : right,
                            (t % 3 == 0 ? OFF_P8_L : OFF_P8_R) + t * 8, win);
    }
    if (r != MPI_SUCCESS) {
        atomicExch(&rc[0], r);
    }
    r = MPIX_Win_flush_all_device(win);
    if (r != MPI_SUCCESS) {
        atomicExch(&rc[1], r);
    }
}

/* 1d. a warp's put in a block of 16 x 2 threads: its lanes 16-31 are threadIdx.x 0-15 of the
 * second row, and each lane must still move its own share */
__global__ void k_put_warp_2d(MPIX_Win_device win, int me, int right, unsigned char *src, int *rc)
{
    int lane = threadIdx.x + 16 * threadIdx.y;

    for (int i = lane; i < WARP2D_BYTES; i += 32) {
        src[i] = pattern(me + 7, i);
    }
    __syncwarp();
    int r = MPIX_Put_device_warp(src, WARP2D_BYTES, right, OFF_PUT_WARP2D, win);
    if (lane == 0) {
        rc[0] = r;
        rc[1] = MPIX_Win_flush_device(right, win);
    }
}

/* 2. gets back what we put */
__global__ void k_get(MPIX_Win_device win, int right, unsigned char *dst, int *rc)
{
    if (threadIdx.x == 0) {
        rc[0] = MPIX_Get_device(dst, 256, right, OFF_PUT_THREAD, win);
    }
    if (threadIdx.x < 32) {
        int r = MPIX_Get_device_warp(dst + 256, 4096 + 3, right, OFF_PUT_WARP, win);
        if (threadIdx.x == 0) rc[1] = r;
    }
    int r = MPIX_Get_device_block(dst + 256 + 4099, BLOCK_BYTES, right, OFF_PUT_BLOCK, win);
    if (threadIdx.x == 0) rc[2] = r;
}

/* 3. atomics on rank 0's counters */
__global__ void k_atomics(MPIX_Win_device win, int64_t *olds, int *rc)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = MPIX_Fetch_and_add_device(1, &olds[t], 0, OFF_COUNTER, win);

    if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    if (t < 64) {
        for (int k = 0; k < 10; ++k) {
            uint64_t cur = 0, seen;
            /* read, then try until our increment lands */
            r = MPIX_Fetch_and_op_device(NULL, &cur, MPIX_DEVICE_UINT64, MPIX_DEVICE_NO_OP, 0,
                                         OFF_CAS, win);
            if (r != MPI_SUCCESS) atomicExch(&rc[1], r);
            for (;;) {
                r = MPIX_Compare_and_swap_device(cur + 1, cur, &seen, 0, OFF_CAS, win);
                if (r != MPI_SUCCESS) { atomicExch(&rc[1], r); break; }
                if (seen == cur) break;
                cur = seen;
            }
        }
    }
    if (t == 0) rc[2] = MPIX_Win_flush_device(0, win);
}

/* 3b. fetching bitwise atomics on rank 0's words: 8 threads of each rank, bit me * 8 + t each
 * (on the proxy path through UCX, compare-and-swap rounds); olds[4 * t + k] the old values */
__global__ void k_bits(MPIX_Win_device win, int me, uint64_t *olds, int *rc)
{
    int t = threadIdx.x, bit = me * 8 + t;
    uint64_t mask = 1ull << bit, clear = ~mask;
    uint32_t mask32 = bit < 32 ? 1u << bit : 0u, old32 = 0;
    int r = MPIX_Fetch_and_op_device(&mask, &olds[4 * t], MPIX_DEVICE_UINT64, MPIX_DEVICE_BOR,
                                     0, OFF_BITS, win);

    if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    r = MPIX_Fetch_and_op_device(&mask, &olds[4 * t + 1], MPIX_DEVICE_UINT64, MPIX_DEVICE_BXOR,
                                 0, OFF_BITS + 8, win);
    if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    r = MPIX_Fetch_and_op_device(&clear, &olds[4 * t + 2], MPIX_DEVICE_UINT64, MPIX_DEVICE_BAND,
                                 0, OFF_BITS + 16, win);
    if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    r = MPIX_Fetch_and_op_device(&mask32, &old32, MPIX_DEVICE_UINT32, MPIX_DEVICE_BOR, 0,
                                 OFF_BITS + 24, win);
    if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    olds[4 * t + 3] = old32;
    __syncthreads();
    if (t == 0) rc[1] = MPIX_Win_flush_device(0, win);
}

/* Whether the old values of @p n one-bit updates, entry i's at olds[4 * i] (k_bits' layout
 * gathered: rank i / 8, thread i % 8, bit i), form one chain (@p set: bits set, else bits
 * cleared from all ones): each old lacks (set) or has (cleared) its writer's bit, and their
 * bit counts are 0 .. n-1 once each, as n updates applied one after another give. */
static bool bits_chain(const uint64_t *olds, int n, bool set)
{
    char seen[65] = {0};

    for (int i = 0; i < n; ++i) {
        uint64_t v = set ? olds[4 * i] : ~olds[4 * i];
        int c = __builtin_popcountll(v);

        if ((v >> i) & 1u || c >= n || seen[c]++) return false;
    }
    return true;
}

/* 4. accumulates: 8 elements of each type into rank 0, 64 bytes per (type, op) slot */
struct acc_case {
    MPIX_Device_type type;
    MPIX_Device_op op;
};

__constant__ acc_case acc_cases[] = {
    {MPIX_DEVICE_INT32, MPIX_DEVICE_SUM},    {MPIX_DEVICE_UINT32, MPIX_DEVICE_BXOR},
    {MPIX_DEVICE_INT64, MPIX_DEVICE_MAX},    {MPIX_DEVICE_UINT64, MPIX_DEVICE_BOR},
    {MPIX_DEVICE_FLOAT, MPIX_DEVICE_SUM},    {MPIX_DEVICE_DOUBLE, MPIX_DEVICE_MIN},
    {MPIX_DEVICE_INT32, MPIX_DEVICE_PROD},   {MPIX_DEVICE_DOUBLE, MPIX_DEVICE_REPLACE},
    {MPIX_DEVICE_INT64, MPIX_DEVICE_LOR},    {MPIX_DEVICE_DOUBLE, MPIX_DEVICE_MAX},
};
#define NACC 10

__device__ __host__ static int acc_value(int rank, int i)
{
    return 1 + (rank + i) % 3;
}

__global__ void k_acc(MPIX_Win_device win, int me, int *rc)
{
    __shared__ __align__(16) unsigned char buf[NACC][64];
    int c = threadIdx.x;

    if (c < NACC) {
        for (int i = 0; i < 8; ++i) {
            int v = acc_value(me, i);
            switch (acc_cases[c].type) {
            case MPIX_DEVICE_INT32: ((int32_t *)buf[c])[i] = v; break;
            case MPIX_DEVICE_UINT32: ((uint32_t *)buf[c])[i] = 1u << (me + i); break;
            case MPIX_DEVICE_INT64: ((int64_t *)buf[c])[i] = v * 100 + me; break;
            case MPIX_DEVICE_UINT64: ((uint64_t *)buf[c])[i] = 1ull << (me + 40); break;
            case MPIX_DEVICE_FLOAT: ((float *)buf[c])[i] = (float)v; break;
            case MPIX_DEVICE_DOUBLE: ((double *)buf[c])[i] = v + 0.5 * me; break;
            }
        }
    }
    __syncthreads();
    if (c < NACC) {
        int r = MPIX_Accumulate_device(buf[c], 8, acc_cases[c].type, acc_cases[c].op, 0,
                                       OFF_ACC + 64 * c, win);
        if (r != MPI_SUCCESS) atomicExch(&rc[0], r);
    }
    __syncthreads();
    /* the block variant on one more slot: SUM of int64 */
    int r = MPIX_Accumulate_device_block(buf[2], 8, MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, 0,
                                         OFF_ACC + 64 * NACC, win);
    if (threadIdx.x == 0) {
        if (r != MPI_SUCCESS) atomicExch(&rc[1], r);
        rc[2] = MPIX_Win_flush_all_device(win);
        /* a bitwise op on a float is refused */
        rc[3] = MPIX_Accumulate_device(buf[4], 1, MPIX_DEVICE_FLOAT, MPIX_DEVICE_BAND, 0,
                                       OFF_ACC, win);
    }
}

/* 5. ping-pong with put-with-signal: rank 0 sends round r, rank 1 checks and answers */
__global__ void k_pingpong(MPIX_Win_device win, int me, int rounds, uint64_t *data, int *rc)
{
    int peer = 1 - me;
    int bad = 0;

    for (int r = 1; r <= rounds; ++r) {
        if (me == 0) {
            data[0] = 1000 + r;
            rc[0] |= MPIX_Put_signal_device(data, 8, peer, OFF_PINGPONG, OFF_SIG, r,
                                            MPIX_DEVICE_SIGNAL_SET, win);
            rc[1] |= MPIX_Signal_wait_until_device(OFF_SIG, MPIX_DEVICE_CMP_GE, r, NULL, win);
        } else {
            uint64_t seen = 0;
            rc[1] |= MPIX_Signal_wait_until_device(OFF_SIG, MPIX_DEVICE_CMP_GE, r, &seen, win);
            /* the data announced by the signal is visible */
            uint64_t got = 0;
            MPIX_Get_device(&got, 8, me, OFF_PINGPONG, win);
            bad += got != (uint64_t)(1000 + r);
            data[0] = 2000 + r;
            rc[0] |= MPIX_Put_signal_device(data, 8, peer, OFF_PINGPONG, OFF_SIG, r,
                                            MPIX_DEVICE_SIGNAL_SET, win);
        }
    }
    rc[2] = bad;
}

/* 1b. the same through resolved targets */
__global__ void k_target(MPIX_Win_device win, int me, int right, int nranks, unsigned char *buf,
                         int *rc)
{
    MPIX_Device_target t, bad, self;

    rc[0] = MPIX_Win_target_device(win, right, &t);
    rc[1] = MPIX_Put_target_device(&t, buf, 64, OFF_PUT_THREAD + 256 + 64);
    rc[2] = MPIX_Win_flush_target_device(&t);
    rc[3] = MPIX_Get_target_device(&t, buf + 64, 64, OFF_PUT_THREAD + 256 + 64);
    rc[4] = MPIX_Put_target_device(&t, buf, 8, WIN_BYTES - 4);          /* past the end */
    rc[5] = MPIX_Win_target_device(win, nranks, &bad);                  /* no such rank */
    rc[6] = MPIX_Put_target_device(&bad, buf, 8, 0);                    /* keeps failing */
    rc[7] = MPIX_Win_target_device(win, me, &self);
    rc[8] = MPIX_Put_signal_target_device(&t, buf, 8, OFF_PINGPONG, OFF_SIG - 8, 5,
                                          MPIX_DEVICE_SIGNAL_ADD);
    rc[9] = MPIX_Win_flush_target_device(&t);
}

/* 6. errors */
__global__ void k_errors(MPIX_Win_device win, int right, int nranks, unsigned char *src, int *rc)
{
    int64_t old;

    rc[0] = MPIX_Put_device(src, 8, right, WIN_BYTES - 4, win);              /* past the end */
    rc[1] = MPIX_Put_device(src, 8, nranks, 0, win);                          /* no such rank */
    rc[2] = MPIX_Put_device(src, 8, -1, 0, win);
    rc[3] = MPIX_Put_device(src, 8, right, 0, MPIX_Win_device{});             /* no handle */
    rc[4] = MPIX_Fetch_and_add_device(1, &old, right, 4, win);                /* misaligned */
    rc[5] = MPIX_Get_device(src, 1, right, WIN_BYTES, win);                   /* just past it */
    rc[6] = MPIX_Put_device(src, 0, right, WIN_BYTES, win);                   /* empty, at end */
    rc[7] = MPIX_Put_device(src, 8, right, -8, win);                          /* negative */
    rc[8] = MPIX_Accumulate_device(src, 2, MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, right,
                                   WIN_BYTES - 8, win);                       /* straddles */
}

/* 8. a large put by thread 0 or by the whole block, its origin overwritten as soon as the put
 * returned (MPIX_Win_flush_local_device: it has been read), then flushed */
__global__ void k_large_put(MPIX_Win_device win, int me, int right, unsigned char *src,
                            size_t bytes, size_t win_off, bool block, int *rc)
{
    int r = MPI_SUCCESS;

    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) {
        src[i] = pattern(me, (int)i);
    }
    __syncthreads();
    if (block) {
        r = MPIX_Put_device_block(src, bytes, right, (MPI_Aint)win_off, win);
    } else if (threadIdx.x == 0) {
        r = MPIX_Put_device(src, bytes, right, (MPI_Aint)win_off, win);
    }
    if (threadIdx.x == 0) {
        rc[0] = r;
        rc[1] = MPIX_Win_flush_local_device(right, win);
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) {
        src[i] = 0x5c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        rc[2] = MPIX_Win_flush_device(right, win);
    }
}

/* 8. a large get by thread 0 or by the whole block */
__global__ void k_large_get(MPIX_Win_device win, int right, unsigned char *dst, size_t bytes,
                            size_t win_off, bool block, int *rc)
{
    int r = MPI_SUCCESS;

    if (block) {
        r = MPIX_Get_device_block(dst, bytes, right, (MPI_Aint)win_off, win);
    } else if (threadIdx.x == 0) {
        r = MPIX_Get_device(dst, bytes, right, (MPI_Aint)win_off, win);
    }
    if (threadIdx.x == 0) {
        rc[0] = r;
    }
}

/* 8. a large put-with-signal by thread 0, its origin overwritten once the call returned */
__global__ void k_large_signal(MPIX_Win_device win, int me, int right, unsigned char *src,
                               size_t bytes, size_t win_off, size_t sig_off, int *rc)
{
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) {
        src[i] = pattern(me + 3, (int)i);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        rc[0] = MPIX_Put_signal_device(src, bytes, right, (MPI_Aint)win_off, (MPI_Aint)sig_off,
                                       1000 + me, MPIX_DEVICE_SIGNAL_SET, win);
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) {
        src[i] = 0x5c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        rc[1] = MPIX_Win_flush_device(right, win);
    }
}

static int run_kernel_rc(int *d_rc, int *h_rc)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h_rc, d_rc, NRC * sizeof(int), cudaMemcpyDefault));
    return 0;
}

/* After a kernel of puts: checks that its first @p n return codes are MPI_SUCCESS, completes
 * the puts from the host side and, once every rank got there, reads the window into @p host. */
static void puts_done_read_window(int *d_rc, int n, MPI_Win win, const unsigned char *base,
                                  unsigned char *host)
{
    int h_rc[NRC];

    run_kernel_rc(d_rc, h_rc);
    for (int i = 0; i < n; ++i) CHECK(h_rc[i] == MPI_SUCCESS);
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemcpy(host, base, WIN_BYTES, cudaMemcpyDefault));
}

static void test_device_calls(MPI_Win win, unsigned char *base)
{
    MPIX_Win_device h = {};
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int *d_rc, h_rc[NRC];
    unsigned char *d_buf, *host = (unsigned char *)malloc(WIN_BYTES);
    int path = -1;

    CHECK(MPIX_Win_gpuic_device_path(win, right, &path) == MPI_ERR_ARG); /* no handle yet */
    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CHECK(MPIX_Win_gpuic_target_path(win, right, &path) == MPI_SUCCESS);
    {
        /* host windows: mapped unless osc_gpuic_direct=0 sends host calls through UCX, or
         * the right neighbour is on another emulated node */
        const char *direct = getenv("OMPI_MCA_osc_gpuic_direct");
        int host_path = (direct != NULL && strcmp(direct, "0") == 0) ||
                                (per_node > 0 && right / per_node != rank / per_node)
                            ? MPIX_GPUIC_PATH_UCX
                            : MPIX_GPUIC_PATH_DIRECT;

        bool right_remote = per_node > 0 && right / per_node != rank / per_node;

        CHECK(nranks == 1 || right == rank ||
              path == (host_window    ? host_path
                       : right_remote ? MPIX_GPUIC_PATH_UCX
                                      : MPIX_GPUIC_PATH_IPC));
    }
    for (int r = 0; r < nranks; ++r) {
        /* a GPU window of another (emulated) node is reached through the device queue too */
        bool remote = per_node > 0 && r / per_node != rank / per_node;

        CHECK(MPIX_Win_gpuic_device_path(win, r, &path) == MPI_SUCCESS);
        CHECK(path == (host_window || forced_proxy || remote ? MPIX_GPUIC_DEVICE_PATH_PROXY
                                                             : MPIX_GPUIC_DEVICE_PATH_P2P));
    }
    CHECK(MPIX_Win_gpuic_device_path(win, nranks, &path) == MPI_ERR_RANK);
    CUDA_CHECK(cudaMalloc(&d_rc, NRC * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_buf, 4 * BLOCK_BYTES));
    CUDA_CHECK(cudaMemset(base, 0xee, WIN_BYTES));
    CUDA_CHECK(cudaMemset(base + OFF_COUNTER, 0, WIN_BYTES - OFF_COUNTER));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);

    /* 1. puts */
    CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
    k_put<<<1, 128>>>(h, rank, right, d_buf, d_rc);
    puts_done_read_window(d_rc, 6, win, base, host);
    {
        int bad = 0;
        for (int i = 0; i < 256; ++i) bad += host[OFF_PUT_THREAD + i] != host_pattern(left, i);
        for (int i = 0; i < 4099; ++i) bad += host[OFF_PUT_WARP + i] != host_pattern(left, i);
        for (int i = 0; i < BLOCK_BYTES; ++i) bad += host[OFF_PUT_BLOCK + i] != host_pattern(left, i);
        bad += host[OFF_PUT_THREAD + 256] != 0xee; /* nothing past the puts */
        bad += host[OFF_PUT_WARP + 4099] != 0xee;
        if (bad) fprintf(stderr, "[rank %d] put: %d wrong bytes\n", rank, bad);
        CHECK(bad == 0);
    }

    /* 1c. 8-byte puts from many threads, in blocks of one row and of eight rows */
    for (int shape = 0; shape < 2; ++shape) {
        dim3 block = shape == 0 ? dim3(128) : dim3(16, 8);

        CUDA_CHECK(cudaMemset(base + OFF_P8_R, 0xee, OFF_PUT_WARP2D - OFF_P8_R));
        CUDA_CHECK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemset(d_rc, 0, NRC * sizeof(int)));
        /* sources after everything else in d_buf: 1b reuses what k_put left at its start */
        k_put8<<<P8_THREADS / 128, block>>>(h, rank, right, left,
                                            (uint64_t *)(d_buf + 3 * BLOCK_BYTES), d_rc);
        puts_done_read_window(d_rc, 2, win, base, host);
        {
            int bad = 0;
            uint64_t v, guard;

            memset(&guard, 0xee, sizeof(guard));
            for (int t = 0; t < P8_THREADS; ++t) {
                bool lane5 = t % 32 == 5;
                /* the right region holds what the left neighbour put to its right, and so on */
                memcpy(&v, host + OFF_P8_R + t * 8, 8);
                bad += v != (lane5 || t % 3 == 0 ? guard : val8(left, t));
                memcpy(&v, host + OFF_P8_L + t * 8, 8);
                bad += v != (lane5 || t % 3 != 0 ? guard : val8(right, t));
            }
            for (int w = 0; w < P8_THREADS / 32; ++w) {
                memcpy(&v, host + OFF_P16 + w * 16, 8);
                bad += v != val8(left, 1000 + w);
                memcpy(&v, host + OFF_P16 + w * 16 + 8, 8);
                bad += v != val8(left, 2000 + w);
            }
            memcpy(&v, host + OFF_P8_R + P8_THREADS * 8, 8);
            bad += v != guard;
            memcpy(&v, host + OFF_P16 + P8_THREADS / 32 * 16, 8);
            bad += v != guard;
            if (bad) {
                fprintf(stderr, "[rank %d] 8-byte puts, block shape %d: %d wrong slots\n", rank,
                        shape, bad);
            }
            CHECK(bad == 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 1d. a warp's put from a block of two rows */
    CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
    k_put_warp_2d<<<1, dim3(16, 2)>>>(h, rank, right, d_buf + 3 * BLOCK_BYTES, d_rc);
    puts_done_read_window(d_rc, 2, win, base, host);
    {
        int bad = 0;
        for (int i = 0; i < WARP2D_BYTES; ++i) {
            bad += host[OFF_PUT_WARP2D + i] != host_pattern(left + 7, i);
        }
        bad += host[OFF_PUT_WARP2D + WARP2D_BYTES] != 0xee;
        if (bad) {
            fprintf(stderr, "[rank %d] warp put from a 16 x 2 block: %d wrong bytes\n", rank, bad);
        }
        CHECK(bad == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1b. resolved targets */
    CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
    k_target<<<1, 1>>>(h, rank, right, nranks, d_buf, d_rc);
    run_kernel_rc(d_rc, h_rc);
    CHECK(h_rc[0] == MPI_SUCCESS && h_rc[1] == MPI_SUCCESS && h_rc[2] == MPI_SUCCESS &&
          h_rc[3] == MPI_SUCCESS);
    CHECK(h_rc[4] == MPI_ERR_RMA_RANGE && h_rc[5] == MPI_ERR_RANK && h_rc[6] == MPI_ERR_RANK);
    CHECK(h_rc[7] == MPI_SUCCESS && h_rc[8] == MPI_SUCCESS && h_rc[9] == MPI_SUCCESS);
    if (h_rc[7] != MPI_SUCCESS || h_rc[8] != MPI_SUCCESS || h_rc[9] != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] resolved self %d, signal add %d, flush %d\n", rank, h_rc[7],
                h_rc[8], h_rc[9]);
    }
    {
        int rc = MPI_Win_flush_all(win), cls = MPI_SUCCESS; /* the recorded range error */
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    {
        unsigned char got[64];
        uint64_t sig = 0;
        CUDA_CHECK(cudaMemcpy(got, base + OFF_PUT_THREAD + 256 + 64, 64, cudaMemcpyDefault));
        CUDA_CHECK(cudaMemcpy(&sig, base + OFF_SIG - 8, 8, cudaMemcpyDefault));
        int bad = 0;
        for (int i = 0; i < 64; ++i) bad += got[i] != host_pattern(left, i);
        CHECK(bad == 0);
        CHECK(sig == 5);
        /* the get brought our own pattern back from the right neighbour */
        CUDA_CHECK(cudaMemcpy(got, d_buf + 64, 64, cudaMemcpyDefault));
        bad = 0;
        for (int i = 0; i < 64; ++i) bad += got[i] != host_pattern(rank, i);
        CHECK(bad == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. gets */
    CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
    CUDA_CHECK(cudaMemset(d_buf, 0, 4 * BLOCK_BYTES));
    k_get<<<1, 128>>>(h, right, d_buf, d_rc);
    run_kernel_rc(d_rc, h_rc);
    for (int i = 0; i < 3; ++i) CHECK(h_rc[i] == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(host, d_buf, 256 + 4099 + BLOCK_BYTES, cudaMemcpyDefault));
    {
        int bad = 0;
        for (int i = 0; i < 256; ++i) bad += host[i] != host_pattern(rank, i);
        for (int i = 0; i < 4099; ++i) bad += host[256 + i] != host_pattern(rank, i);
        for (int i = 0; i < BLOCK_BYTES; ++i) bad += host[256 + 4099 + i] != host_pattern(rank, i);
        CHECK(bad == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. atomics */
    {
        const int threads = 4 * 128;
        int64_t *d_olds, *olds = (int64_t *)malloc(sizeof(int64_t) * threads);
        int64_t *all = (int64_t *)malloc(sizeof(int64_t) * threads * nranks);
        CUDA_CHECK(cudaMalloc(&d_olds, sizeof(int64_t) * threads));
        CUDA_CHECK(cudaMemset(d_rc, 0, NRC * sizeof(int)));
        k_atomics<<<4, 128>>>(h, d_olds, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == 0 && h_rc[1] == 0 && h_rc[2] == MPI_SUCCESS);
        CUDA_CHECK(cudaMemcpy(olds, d_olds, sizeof(int64_t) * threads, cudaMemcpyDefault));
        MPI_Gather(olds, threads, MPI_INT64_T, all, threads, MPI_INT64_T, 0, MPI_COMM_WORLD);
        MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            int64_t counter = 0;
            uint64_t cas = 0;
            CUDA_CHECK(cudaMemcpy(&counter, base + OFF_COUNTER, 8, cudaMemcpyDefault));
            CUDA_CHECK(cudaMemcpy(&cas, base + OFF_CAS, 8, cudaMemcpyDefault));
            CHECK(counter == (int64_t)threads * nranks);
            CHECK(cas == (uint64_t)640 * nranks);
            char *seen = (char *)calloc(threads * nranks, 1);
            int dup = 0;
            for (int i = 0; i < threads * nranks; ++i) {
                if (all[i] < 0 || all[i] >= threads * nranks || seen[all[i]]++) dup++;
            }
            CHECK(dup == 0);
            free(seen);
        }
        cudaFree(d_olds);
        free(olds);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3b. fetching bitwise atomics (8 bits a rank: up to 8 ranks) */
    if (nranks <= 8) {
        const int n = 8 * nranks;
        uint64_t *d_olds, olds[32], *all = (uint64_t *)malloc(sizeof(olds) * nranks);
        if (rank == 0) {
            uint64_t init[4] = {0, 0, ~0ull, 0};
            CUDA_CHECK(cudaMemcpy(base + OFF_BITS, init, sizeof(init), cudaMemcpyDefault));
            CUDA_CHECK(cudaDeviceSynchronize());
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMalloc(&d_olds, sizeof(olds)));
        CUDA_CHECK(cudaMemset(d_rc, 0, NRC * sizeof(int)));
        k_bits<<<1, 8>>>(h, rank, d_olds, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == 0 && h_rc[1] == MPI_SUCCESS);
        CUDA_CHECK(cudaMemcpy(olds, d_olds, sizeof(olds), cudaMemcpyDefault));
        MPI_Gather(olds, 32, MPI_UINT64_T, all, 32, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            uint64_t got[4], full = n == 64 ? ~0ull : (1ull << n) - 1;
            int n32 = n < 32 ? n : 32;
            CUDA_CHECK(cudaMemcpy(got, base + OFF_BITS, sizeof(got), cudaMemcpyDefault));
            CHECK(got[0] == full && got[1] == full && got[2] == ~full);
            CHECK((uint32_t)got[3] == (uint32_t)(n32 == 32 ? ~0u : (1u << n32) - 1));
            CHECK(bits_chain(all, n, true));     /* OR */
            CHECK(bits_chain(all + 1, n, true)); /* XOR */
            CHECK(bits_chain(all + 2, n, false)); /* AND */
            CHECK(bits_chain(all + 3, n32, true)); /* 32-bit OR */
        }
        cudaFree(d_olds);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. accumulates */
    if (rank == 0) {
        /* slot inits: PROD starts at 1, MIN at +inf-ish, others 0 */
        unsigned char init[64 * (NACC + 1)];
        memset(init, 0, sizeof(init));
        for (int i = 0; i < 8; ++i) ((int32_t *)(init + 64 * 6))[i] = 1;
        for (int i = 0; i < 8; ++i) ((double *)(init + 64 * 5))[i] = 1e30;
        for (int i = 0; i < 8; ++i) ((double *)(init + 64 * 9))[i] = -1e30;
        for (int i = 0; i < 8; ++i) ((int64_t *)(init + 64 * 2))[i] = -1;
        CUDA_CHECK(cudaMemcpy(base + OFF_ACC, init, sizeof(init), cudaMemcpyDefault));
        CUDA_CHECK(cudaDeviceSynchronize()); /* a pageable copy may still be in flight */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemset(d_rc, 0, NRC * sizeof(int)));
    k_acc<<<1, 64>>>(h, rank, d_rc);
    run_kernel_rc(d_rc, h_rc);
    CHECK(h_rc[0] == 0 && h_rc[1] == 0 && h_rc[2] == MPI_SUCCESS && h_rc[3] == MPI_ERR_ARG);
    /* the refused float BAND was recorded: the next host synchronization reports it */
    {
        int rc = MPI_Win_flush_all(win), cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG);
        CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS); /* reported once */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char got[64 * (NACC + 1)];
        CUDA_CHECK(cudaMemcpy(got, base + OFF_ACC, sizeof(got), cudaMemcpyDefault));
        int bad = 0;
        for (int i = 0; i < 8; ++i) {
            int32_t sum = 0, prod = 1;
            uint32_t x = 0;
            int64_t mx = -1, lor = 0, bsum = 0;
            uint64_t bor = 0;
            float fsum = 0;
            double mn = 1e30, dmx = -1e30;
            for (int r = 0; r < nranks; ++r) {
                int v = acc_value(r, i);
                sum += v;
                prod *= v;
                x ^= 1u << (r + i);
                mx = (v * 100 + r) > mx ? (v * 100 + r) : mx;
                bor |= 1ull << (r + 40);
                fsum += (float)v;
                mn = (v + 0.5 * r) < mn ? (v + 0.5 * r) : mn;
                dmx = (v + 0.5 * r) > dmx ? (v + 0.5 * r) : dmx;
                lor = lor || (v * 100 + r);
                bsum += v * 100 + r;
            }
            bad += ((int32_t *)(got + 0))[i] != sum;
            bad += ((uint32_t *)(got + 64))[i] != x;
            bad += ((int64_t *)(got + 128))[i] != mx;
            bad += ((uint64_t *)(got + 192))[i] != bor;
            bad += ((float *)(got + 256))[i] != fsum;
            bad += ((double *)(got + 320))[i] != mn;
            bad += ((int32_t *)(got + 384))[i] != prod;
            double rep = ((double *)(got + 448))[i];
            int ok_rep = 0;
            for (int r = 0; r < nranks; ++r) ok_rep |= rep == acc_value(r, i) + 0.5 * r;
            bad += !ok_rep;
            bad += ((int64_t *)(got + 512))[i] != lor;
            bad += ((double *)(got + 576))[i] != dmx;
            bad += ((int64_t *)(got + 640))[i] != bsum;
        }
        if (bad) fprintf(stderr, "accumulate: %d wrong elements\n", bad);
        CHECK(bad == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. put-with-signal ping-pong */
    if (nranks >= 2 && rank < 2) {
        uint64_t *d_data;
        CUDA_CHECK(cudaMalloc(&d_data, 64));
        CUDA_CHECK(cudaMemset(d_rc, 0, NRC * sizeof(int)));
        k_pingpong<<<1, 1>>>(h, rank, 200, d_data, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == 0 && h_rc[1] == 0 && h_rc[2] == 0);
        cudaFree(d_data);
    }
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 6. errors */
    {
        unsigned char tail_before[64], tail_after[64];
        CUDA_CHECK(cudaMemcpy(tail_before, base + WIN_BYTES - 64, 64, cudaMemcpyDefault));
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
        k_errors<<<1, 1>>>(h, right, nranks, d_buf, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == MPI_ERR_RMA_RANGE);
        CHECK(h_rc[1] == MPI_ERR_RANK && h_rc[2] == MPI_ERR_RANK);
        CHECK(h_rc[3] == MPI_ERR_WIN);
        CHECK(h_rc[4] == MPI_ERR_ARG);
        CHECK(h_rc[5] == MPI_ERR_RMA_RANGE);
        CHECK(h_rc[6] == MPI_SUCCESS);
        CHECK(h_rc[7] == MPI_ERR_RMA_RANGE);
        CHECK(h_rc[8] == MPI_ERR_RMA_RANGE);
        int rc = MPI_Win_flush(right, win), cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE); /* the first one recorded */
        CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemcpy(tail_after, base + WIN_BYTES - 64, 64, cudaMemcpyDefault));
        CHECK(memcmp(tail_before, tail_after, 64) == 0);
    }
    MPI_Win_unlock_all(win);

    cudaFree(d_rc);
    cudaFree(d_buf);
    free(host);
}

/* 7. host MPI calls on GPU windows, with host and device origin buffers */
static void test_host_calls(MPI_Win win, unsigned char *base)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int32_t hbuf[64], back[64], *dbuf;

    CUDA_CHECK(cudaMalloc(&dbuf, sizeof(hbuf)));
    for (int i = 0; i < 64; ++i) hbuf[i] = rank * 1000 + i;
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(hbuf, 64, MPI_INT32_T, right, 0, 64, MPI_INT32_T, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    /* get it back from the right neighbour into device memory */
    CHECK(MPI_Get(dbuf, 64, MPI_INT32_T, right, 0, 64, MPI_INT32_T, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    CUDA_CHECK(cudaMemcpy(back, dbuf, sizeof(back), cudaMemcpyDefault));
    int bad = 0;
    for (int i = 0; i < 64; ++i) bad += back[i] != rank * 1000 + i;
    CHECK(bad == 0);
    /* my own window holds the left neighbour's values */
    CUDA_CHECK(cudaMemcpy(back, base, sizeof(back), cudaMemcpyDefault));
    bad = 0;
    for (int i = 0; i < 64; ++i) bad += back[i] != left * 1000 + i;
    CHECK(bad == 0);
    /* accumulate from device memory into rank 0 */
    CUDA_CHECK(cudaMemcpy(dbuf, hbuf, sizeof(hbuf), cudaMemcpyDefault));
    /* the program's own writes to its window complete before the epoch that exposes them */
    if (rank == 0) CUDA_CHECK(cudaMemset(base + 512, 0, 256));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Win_fence(0, win);
    CHECK(MPI_Accumulate(dbuf, 64, MPI_INT32_T, 0, 512, 64, MPI_INT32_T, MPI_SUM, win) ==
          MPI_SUCCESS);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        CUDA_CHECK(cudaMemcpy(back, base + 512, sizeof(back), cudaMemcpyDefault));
        bad = 0;
        for (int i = 0; i < 64; ++i) {
            int32_t want = 0;
            for (int r = 0; r < nranks; ++r) want += r * 1000 + i;
            bad += back[i] != want;
        }
        CHECK(bad == 0);
    }
    /* fetch_and_op from the host: every rank gets a distinct old value */
    int64_t one = 1, old = -1, *olds = (int64_t *)malloc(sizeof(int64_t) * nranks);
    if (rank == 0) CUDA_CHECK(cudaMemset(base + 2048, 0, 8));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Win_fence(0, win);
    CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 2048, MPI_SUM, win) == MPI_SUCCESS);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Allgather(&old, 1, MPI_INT64_T, olds, 1, MPI_INT64_T, MPI_COMM_WORLD);
    for (int i = 0; i < nranks; ++i) {
        CHECK(olds[i] >= 0 && olds[i] < nranks);
        for (int j = 0; j < i; ++j) CHECK(olds[i] != olds[j]);
    }
    free(olds);
    cudaFree(dbuf);
}

/* 8. large transfers, in a window of LARGE_WIN bytes of the same kind as the first one */
#define LARGE_WIN ((9u << 20) + 4096)
#define LARGE_SIG (LARGE_WIN - 8)

/* Wrong bytes of [off, off + len) of @p host (the window or the get's buffer) against
 * @p writer's pattern, plus one for each neighbouring byte that is not @p guard. */
static long large_bad(const unsigned char *host, size_t off, size_t len, int writer, int guard)
{
    long bad = 0;

    for (size_t i = 0; i < len; ++i) {
        bad += host[off + i] != host_pattern(writer, (int)i);
    }
    bad += off > 0 && host[off - 1] != guard;
    bad += off + len < LARGE_WIN - 8 && host[off + len] != guard;
    return bad;
}

/* Checks that a large transfer's check found @p bad wrong bytes: none. */
static void large_report(const char *what, size_t bytes, size_t off, bool block, long bad)
{
    if (bad) {
        fprintf(stderr, "[rank %d] large %s of %zu bytes at %zu (%s): %ld wrong bytes\n", rank,
                what, bytes, off, block ? "block" : "thread", bad);
    }
    CHECK(bad == 0);
}

static void test_large(MPI_Info info)
{
    /* sizes about the proxy's zero-copy threshold (64 KiB), 1 MiB, and over one 8 MiB entry;
     * window offsets and buffer offsets odd where the size allows */
    static const struct {
        size_t bytes, win_off, buf_off;
        bool block;
    } cases[] = {
        {(64u << 10) - 1, 5, 3, false},  {64u << 10, 0, 0, false},
        {(64u << 10) + 1, 4093, 7, true}, {1u << 20, 64, 0, false},
        {(1u << 20) + 13, 1, 1, true},    {(8u << 20) + 3, 7, 5, false},
    };
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    unsigned char *base = NULL, *d_buf, *host = (unsigned char *)malloc(LARGE_WIN);
    int *d_rc, h_rc[NRC];
    MPIX_Win_device h = {};
    MPI_Win win;

    CHECK(MPI_Win_allocate(LARGE_WIN, 1, info, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CUDA_CHECK(cudaMalloc(&d_rc, NRC * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_buf, LARGE_WIN));
    MPI_Win_lock_all(0, win);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        size_t bytes = cases[c].bytes, off = cases[c].win_off, boff = cases[c].buf_off;

        CUDA_CHECK(cudaMemset(base, 0xee, LARGE_WIN));
        CUDA_CHECK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
        k_large_put<<<1, 256>>>(h, rank, right, d_buf + boff, bytes, off, cases[c].block, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == MPI_SUCCESS && h_rc[1] == MPI_SUCCESS && h_rc[2] == MPI_SUCCESS);
        CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemcpy(host, base, LARGE_WIN, cudaMemcpyDefault));
        large_report("put", bytes, off, cases[c].block, large_bad(host, off, bytes, left, 0xee));
        MPI_Barrier(MPI_COMM_WORLD);

        /* the right neighbour's window holds this rank's pattern now */
        CUDA_CHECK(cudaMemset(d_buf, 0, LARGE_WIN));
        CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
        k_large_get<<<1, 256>>>(h, right, d_buf + boff, bytes, off, cases[c].block, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == MPI_SUCCESS);
        CUDA_CHECK(cudaMemcpy(host, d_buf, LARGE_WIN, cudaMemcpyDefault));
        large_report("get", bytes, off, cases[c].block, large_bad(host, boff, bytes, rank, 0));
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* put-with-signal: the signal set once the data is complete */
    {
        size_t bytes = (3u << 20) + 5, off = 3;
        uint64_t sig = 0;

        CUDA_CHECK(cudaMemset(base, 0xee, LARGE_WIN));
        CUDA_CHECK(cudaMemset(base + LARGE_SIG, 0, 8));
        CUDA_CHECK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemset(d_rc, 0xff, NRC * sizeof(int)));
        k_large_signal<<<1, 256>>>(h, rank, right, d_buf + 1, bytes, off, LARGE_SIG, d_rc);
        run_kernel_rc(d_rc, h_rc);
        CHECK(h_rc[0] == MPI_SUCCESS && h_rc[1] == MPI_SUCCESS);
        CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_CHECK(cudaMemcpy(host, base, LARGE_WIN, cudaMemcpyDefault));
        memcpy(&sig, host + LARGE_SIG, 8);
        CHECK(sig == (uint64_t)(1000 + left));
        large_report("put-with-signal", bytes, off, false,
                     large_bad(host, off, bytes, left + 3, 0xee));
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    cudaFree(d_rc);
    cudaFree(d_buf);
    free(host);
}

int main(int argc, char **argv)
{
    int caps = 0;
    unsigned char *base = NULL;
    MPI_Win win;
    MPI_Info info;

    if (!device_test_init(&argc, &argv, "test_device_rma", &rank, &nranks)) {
        return 77;
    }
    CHECK(MPIX_Gpuic_query_capabilities(&caps) == MPI_SUCCESS && (caps & MPIX_GPUIC_CAP_DEVICE_API));

    host_window = getenv("GPUIC_TEST_HOST_WINDOW") != NULL &&
                  strcmp(getenv("GPUIC_TEST_HOST_WINDOW"), "1") == 0;
    forced_proxy = getenv("OMPI_MCA_osc_gpuic_device_proxy") != NULL &&
                   strcmp(getenv("OMPI_MCA_osc_gpuic_device_proxy"), "1") == 0;
    per_node = getenv("OMPI_MCA_osc_gpuic_emulate_nodes") != NULL
                   ? atoi(getenv("OMPI_MCA_osc_gpuic_emulate_nodes"))
                   : 0;
    CHECK(caps & MPIX_GPUIC_CAP_DEVICE_PROXY);

    /* device memory from MPI_Win_allocate (or host memory: the proxy path) */
    MPI_Info_create(&info);
    if (!host_window) {
        MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    }
    CHECK(MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(mpi_test_is_gpuic(win));
    if (!host_window) {
        cudaPointerAttributes attr;
        CHECK(cudaPointerGetAttributes(&attr, base) == cudaSuccess &&
              attr.type == cudaMemoryTypeDevice);
    }
    test_device_calls(win, base);
    test_host_calls(win, base);
    MPI_Win_free(&win);
    test_large(info);
    MPI_Info_free(&info);

    /* MPI_Win_create on cudaMalloc memory: CUDA IPC within an emulated node, UCX to the
     * others (where this process's UCX cannot register device memory, creation is refused:
     * test_device_emulated and test_gpu_window_host check that) */
    {
        unsigned char *mem;
        int path = -1, rc, cls = MPI_SUCCESS;
        MPIX_Win_device h;
        CUDA_CHECK(cudaMalloc(&mem, WIN_BYTES));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        rc = MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &cls);
            CHECK(per_node > 0 && nranks > per_node &&
                  (cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN));
            cudaFree(mem);
            return mpi_test_finish("test_device_rma");
        }
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        CHECK(MPIX_Win_gpuic_target_path(win, (rank + 1) % nranks, &path) == MPI_SUCCESS);
        CHECK(nranks == 1 || path == (per_node > 0 && ((rank + 1) % nranks) / per_node !=
                                                           rank / per_node
                                          ? MPIX_GPUIC_PATH_UCX
                                          : MPIX_GPUIC_PATH_IPC));
        CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS);
        CHECK(MPIX_Win_release_device_handle(win) == MPI_SUCCESS);
        CHECK(MPIX_Win_release_device_handle(win) == MPI_ERR_ARG);
        CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
        test_host_calls(win, mem);
        MPI_Win_free(&win);
        cudaFree(mem);
    }
    return mpi_test_finish("test_device_rma");
}
