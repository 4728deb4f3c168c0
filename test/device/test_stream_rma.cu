/*
 * Stream-triggered RMA (MPIX_*_enqueue) on gpuic GPU windows; run with 2 or more ranks on one
 * node (several ranks on one GPU: under MPS, or the cross-process waits are time-sliced).
 * Every rank puts to its right neighbour and checks what its left neighbour put:
 *  1. ordering: a kernel writes the origin, an enqueued put, an enqueued fence, a kernel on
 *     the target checks, five rounds with no host synchronization in between (one put of
 *     300 KB: several blocks, displacement unit 4);
 *  2. events: an event recorded after an enqueued flush; the target checks the data after
 *     cudaEventSynchronize at the origin and a host message;
 *  3. CUDA graphs: two whole epochs (kernel, put, fence, check) captured once and replayed
 *     1000 times with data that changes every epoch, checked on the device every epoch;
 *  4. two streams putting in one lock_all epoch, ordered by events;
 *  5. PSCW epochs enqueued, ten rounds;
 *  6. fetch_and_op (results in pinned host memory, each one read by a kernel right after it),
 *     accumulate (device and pinned origins, a contiguous derived type), compare_and_swap;
 *  7. host epochs, enqueued epochs, host epochs again on the same window;
 *  8. refused calls: each returns its class at enqueue time and nothing is written;
 *  9. flushes that launch nothing (every operation they cover completed with its own kernel,
 *     P2P targets): an event after the flush still means the data is at the target, for an
 *     8-byte put, a put larger than the one-warp path, a put on another stream joined by an
 *     event, and a get reading back a put right after its flush.
 * Run under OMPI_MCA_osc_gpuic_device_proxy=1 (testlist), every target takes the proxy path
 * and the same checks cover flushes that must wait for the proxy.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/mpi_test.h"
#include "device_test.h"
#include "mpix_gpuic.h"

#define WIN_BYTES (1 << 20)
#define DU 4 /* displacement unit: offsets below are in 4-byte units */
#define N_ORDER 75000
#define OFF_ORDER 0
#define N_SMALL 1024
#define OFF_GA 80000
#define OFF_GB 81024
#define OFF_EV 83000
#define OFF_S1 85000
#define OFF_S2 86100
#define OFF_PSCW 88000
#define OFF_CNT 90000  /* int64 */
#define OFF_CAS 90002  /* uint64 */
#define OFF_ACC 90004  /* 16 int32 */
#define OFF_ACCD 90020 /* double */
#define OFF_ACCT 90024 /* 16 int32 through a contiguous type */
#define OFF_MIX 92000
#define OFF_EL8 94000   /* 8 bytes */
#define OFF_ELB 94100   /* N_BIG units */
#define OFF_ELS 99000   /* N_SMALL units, put from the second stream */
#define OFF_ELG 101000  /* 8 bytes, put then read back */
#define N_BIG 4100      /* 16400 bytes: above the one-warp path */
#define GRAPH_REPLAYS 1000
#define FOP_ROUNDS 50

#define MPI_OK(call) CHECK_CLASS((call), MPI_SUCCESS)

static int rank, nranks, right, left;
static unsigned *base;     /* this rank's window (device memory) */
static int *d_bad;         /* mismatches found by check kernels */

__host__ __device__ static unsigned val(int writer, int iter, int i)
{
    return (unsigned)writer * 1000003u + (unsigned)iter * 7919u + (unsigned)i;
}

__global__ void k_fill(unsigned *dst, int n, int writer, int iter)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        dst[i] = val(writer, iter, i);
    }
}

__global__ void k_check(const unsigned *src, int n, int writer, int iter, int *bad)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (src[i] != val(writer, iter, i)) {
            atomicAdd(bad, 1);
        }
    }
}

/* Graph kernels: the epoch number comes from a device counter, advanced by the last check. */
__global__ void k_fill_iter(unsigned *dst, int n, int writer, const int *iter, int half)
{
    int it = 2 * *(volatile const int *)iter + half;

    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        dst[i] = val(writer, it, i);
    }
}

__global__ void k_check_iter(const unsigned *src, int n, int writer, int *iter, int half,
                             int *bad)
{
    int it = 2 * *(volatile int *)iter + half;

    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        if (src[i] != val(writer, it, i)) {
            atomicAdd(bad, 1);
        }
    }
    __syncthreads();
    if (half == 1 && threadIdx.x == 0) {
        *iter += 1;
    }
}

/* Copies a result right after the call that wrote it: it must already be there. */
__global__ void k_copy64(const volatile int64_t *src, int64_t *dst)
{
    *dst = *src;
}

static int bad_count(void)
{
    int bad = -1;

    CUDA_CHECK(cudaMemcpy(&bad, d_bad, sizeof(bad), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemset(d_bad, 0, sizeof(int)));
    return bad;
}

/* Checks n values of writer/iter at unit offset off of this rank's window from the host. */
static int host_check(int off, int n, int writer, int iter)
{
    unsigned *h = (unsigned *)malloc(n * sizeof(unsigned));
    int bad = 0;

    CUDA_CHECK(cudaMemcpy(h, base + off, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        bad += h[i] != val(writer, iter, i);
    }
    free(h);
    return bad;
}

/* 1. ordering against kernels before and after, fence epochs */
static void test_order(MPI_Win win, cudaStream_t s)
{
    unsigned *src;

    CUDA_CHECK(cudaMalloc(&src, N_ORDER * sizeof(unsigned)));
    MPI_OK(MPIX_Win_fence_enqueue(MPI_MODE_NOPRECEDE, win, s));
    for (int round = 0; round < 5; ++round) {
        k_fill<<<64, 256, 0, s>>>(src, N_ORDER, rank, round);
        MPI_OK(MPIX_Put_enqueue(src, N_ORDER, MPI_UNSIGNED, right, OFF_ORDER, N_ORDER,
                                MPI_UNSIGNED, win, s));
        MPI_OK(MPIX_Win_fence_enqueue(0, win, s));
        k_check<<<64, 256, 0, s>>>(base + OFF_ORDER, N_ORDER, left, round, d_bad);
        /* nobody writes the region again before everyone checked it */
        MPI_OK(MPIX_Win_fence_enqueue(0, win, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(bad_count() == 0);
    CHECK(host_check(OFF_ORDER, N_ORDER, left, 4) == 0);
    cudaFree(src);
}

/* 3. a graph of two epochs replayed GRAPH_REPLAYS times (the enqueued fence epoch is open) */
static void test_graph(MPI_Win win, cudaStream_t s)
{
    unsigned *src_a, *src_b;
    int *iter, final_iter = -1;
    cudaGraph_t graph;
    cudaGraphExec_t exec;

    CUDA_CHECK(cudaMalloc(&src_a, N_SMALL * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&src_b, N_SMALL * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&iter, sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(iter, 0, sizeof(int), s));
    CUDA_CHECK(cudaStreamSynchronize(s));

    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_fill_iter<<<1, 256, 0, s>>>(src_a, N_SMALL, rank, iter, 0);
    MPI_OK(MPIX_Put_enqueue(src_a, N_SMALL, MPI_UNSIGNED, right, OFF_GA, N_SMALL, MPI_UNSIGNED,
                            win, s));
    MPI_OK(MPIX_Win_fence_enqueue(0, win, s));
    k_check_iter<<<1, 256, 0, s>>>(base + OFF_GA, N_SMALL, left, iter, 0, d_bad);
    /* the second epoch writes elsewhere, so the next replay's put to A follows every check of
     * A (it waits for this epoch's fence) */
    k_fill_iter<<<1, 256, 0, s>>>(src_b, N_SMALL, rank, iter, 1);
    MPI_OK(MPIX_Put_enqueue(src_b, N_SMALL, MPI_UNSIGNED, right, OFF_GB, N_SMALL, MPI_UNSIGNED,
                            win, s));
    MPI_OK(MPIX_Win_fence_enqueue(0, win, s));
    k_check_iter<<<1, 256, 0, s>>>(base + OFF_GB, N_SMALL, left, iter, 1, d_bad);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    /* replay only where every rank has its graph: a rank without one would leave the others
     * waiting in their fences */
    int ok = mpi_test_failures == 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    CHECK(all_ok);
    for (int r = 0; all_ok && r < GRAPH_REPLAYS; ++r) {
        CUDA_CHECK(cudaGraphLaunch(exec, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(&final_iter, iter, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(final_iter == GRAPH_REPLAYS);
    CHECK(bad_count() == 0);
    CHECK(host_check(OFF_GB, N_SMALL, left, 2 * GRAPH_REPLAYS - 1) == 0);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(iter);
    cudaFree(src_a);
    cudaFree(src_b);
}

/* 2. an event after an enqueued flush: the data is at the target when it fires */
static void test_event(MPI_Win win, cudaStream_t s)
{
    unsigned *src;
    cudaEvent_t ev;
    int token = rank, got = -1;

    CUDA_CHECK(cudaMalloc(&src, N_SMALL * sizeof(unsigned)));
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    MPI_OK(MPIX_Win_lock_all_enqueue(0, win, s));
    k_fill<<<4, 256, 0, s>>>(src, N_SMALL, rank, 77);
    MPI_OK(MPIX_Put_enqueue(src, N_SMALL, MPI_UNSIGNED, right, OFF_EV, N_SMALL, MPI_UNSIGNED,
                            win, s));
    MPI_OK(MPIX_Win_flush_enqueue(right, win, s));
    CUDA_CHECK(cudaEventRecord(ev, s));
    MPI_OK(MPIX_Win_unlock_all_enqueue(win, s));
    CUDA_CHECK(cudaEventSynchronize(ev));
    MPI_Sendrecv(&token, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(got == left);
    CHECK(host_check(OFF_EV, N_SMALL, left, 77) == 0);
    CUDA_CHECK(cudaStreamSynchronize(s));
    cudaEventDestroy(ev);
    cudaFree(src);
}

/* 4. two streams in one lock_all epoch */
static void test_streams(MPI_Win win, cudaStream_t s1, cudaStream_t s2)
{
    unsigned *src1, *src2;
    cudaEvent_t opened, done2;

    CUDA_CHECK(cudaMalloc(&src1, N_SMALL * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&src2, N_SMALL * sizeof(unsigned)));
    CUDA_CHECK(cudaEventCreateWithFlags(&opened, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&done2, cudaEventDisableTiming));
    MPI_OK(MPIX_Win_lock_all_enqueue(0, win, s1));
    CUDA_CHECK(cudaEventRecord(opened, s1));
    CUDA_CHECK(cudaStreamWaitEvent(s2, opened, 0));
    k_fill<<<4, 256, 0, s1>>>(src1, N_SMALL, rank, 11);
    k_fill<<<4, 256, 0, s2>>>(src2, N_SMALL, rank, 22);
    MPI_OK(MPIX_Put_enqueue(src1, N_SMALL, MPI_UNSIGNED, right, OFF_S1, N_SMALL, MPI_UNSIGNED,
                            win, s1));
    MPI_OK(MPIX_Put_enqueue(src2, N_SMALL, MPI_UNSIGNED, right, OFF_S2, N_SMALL, MPI_UNSIGNED,
                            win, s2));
    MPI_OK(MPIX_Win_flush_all_enqueue(win, s2));
    CUDA_CHECK(cudaEventRecord(done2, s2));
    CUDA_CHECK(cudaStreamWaitEvent(s1, done2, 0));
    MPI_OK(MPIX_Win_unlock_all_enqueue(win, s1));
    CUDA_CHECK(cudaStreamSynchronize(s1));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(host_check(OFF_S1, N_SMALL, left, 11) == 0);
    CHECK(host_check(OFF_S2, N_SMALL, left, 22) == 0);
    cudaEventDestroy(opened);
    cudaEventDestroy(done2);
    cudaFree(src1);
    cudaFree(src2);
}

/* 5. PSCW: expose to the left neighbour, access the right one */
static void test_pscw(MPI_Win win, cudaStream_t s)
{
    MPI_Group wg, g_left, g_right;
    unsigned *src;

    CUDA_CHECK(cudaMalloc(&src, N_SMALL * sizeof(unsigned)));
    MPI_Win_get_group(win, &wg);
    MPI_Group_incl(wg, 1, &left, &g_left);
    MPI_Group_incl(wg, 1, &right, &g_right);
    for (int round = 0; round < 10; ++round) {
        MPI_OK(MPIX_Win_post_enqueue(g_left, 0, win, s));
        MPI_OK(MPIX_Win_start_enqueue(g_right, 0, win, s));
        k_fill<<<4, 256, 0, s>>>(src, N_SMALL, rank, 100 + round);
        MPI_OK(MPIX_Put_enqueue(src, N_SMALL, MPI_UNSIGNED, right, OFF_PSCW, N_SMALL,
                                MPI_UNSIGNED, win, s));
        MPI_OK(MPIX_Win_complete_enqueue(win, s));
        MPI_OK(MPIX_Win_wait_enqueue(win, s));
        k_check<<<4, 256, 0, s>>>(base + OFF_PSCW, N_SMALL, left, 100 + round, d_bad);
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(bad_count() == 0);
    MPI_Group_free(&g_left);
    MPI_Group_free(&g_right);
    MPI_Group_free(&wg);
    cudaFree(src);
}

/* 6. the accumulate family, results in stream order */
static void test_atomics(MPI_Win win, cudaStream_t s)
{
    int64_t *h_one, *h_res, *d_seen, *h_seen;
    int32_t *d_acc, h_acc[16];
    double *h_dbl;
    uint64_t *d_cas; /* [0] value, [1] compare, [2] result */
    MPI_Datatype four;
    int64_t *all;

    CUDA_CHECK(cudaMallocHost(&h_one, sizeof(int64_t)));
    CUDA_CHECK(cudaMallocHost(&h_res, FOP_ROUNDS * sizeof(int64_t)));
    CUDA_CHECK(cudaMallocHost(&h_dbl, sizeof(double)));
    CUDA_CHECK(cudaMalloc(&d_seen, FOP_ROUNDS * sizeof(int64_t)));
    CUDA_CHECK(cudaMalloc(&d_acc, sizeof(h_acc)));
    CUDA_CHECK(cudaMalloc(&d_cas, 3 * sizeof(uint64_t)));
    h_seen = (int64_t *)malloc(FOP_ROUNDS * sizeof(int64_t));
    all = (int64_t *)malloc((size_t)nranks * FOP_ROUNDS * sizeof(int64_t));
    *h_one = 1;
    *h_dbl = 0.25 * rank;
    for (int i = 0; i < 16; ++i) h_acc[i] = rank + i;
    CUDA_CHECK(cudaMemcpy(d_acc, h_acc, sizeof(h_acc), cudaMemcpyHostToDevice));
    {
        uint64_t c[3] = {(uint64_t)rank + 1, 0, ~0ull};
        CUDA_CHECK(cudaMemcpy(d_cas, c, sizeof(c), cudaMemcpyHostToDevice));
    }
    if (rank == 0) {
        CUDA_CHECK(cudaMemset(base + OFF_CNT, 0, (OFF_ACCT + 16 - OFF_CNT) * DU));
        double lowest = -1.0;
        CUDA_CHECK(cudaMemcpy(base + OFF_ACCD, &lowest, sizeof(lowest), cudaMemcpyHostToDevice));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_contiguous(4, MPI_INT32_T, &four);
    MPI_Type_commit(&four);

    MPI_OK(MPIX_Win_lock_all_enqueue(0, win, s));
    for (int i = 0; i < FOP_ROUNDS; ++i) {
        MPI_OK(MPIX_Fetch_and_op_enqueue(h_one, &h_res[i], MPI_INT64_T, 0, OFF_CNT, MPI_SUM,
                                         win, s));
        k_copy64<<<1, 1, 0, s>>>(&h_res[i], &d_seen[i]);
    }
    MPI_OK(MPIX_Accumulate_enqueue(d_acc, 16, MPI_INT32_T, 0, OFF_ACC, 16, MPI_INT32_T, MPI_SUM,
                                   win, s));
    MPI_OK(MPIX_Accumulate_enqueue(d_acc, 16, MPI_INT32_T, 0, OFF_ACCT, 4, four, MPI_SUM, win,
                                   s));
    MPI_OK(MPIX_Accumulate_enqueue(h_dbl, 1, MPI_DOUBLE, 0, OFF_ACCD, 1, MPI_DOUBLE, MPI_MAX,
                                   win, s));
    MPI_OK(MPIX_Compare_and_swap_enqueue(&d_cas[0], &d_cas[1], &d_cas[2], MPI_UINT64_T, 0,
                                         OFF_CAS, win, s));
    MPI_OK(MPIX_Win_unlock_all_enqueue(win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(h_seen, d_seen, FOP_ROUNDS * sizeof(int64_t), cudaMemcpyDeviceToHost));
    for (int i = 0; i < FOP_ROUNDS; ++i) {
        CHECK(h_seen[i] == h_res[i]);
        if (i > 0) CHECK(h_res[i] > h_res[i - 1]); /* one stream: its own calls in order */
    }
    MPI_Allgather(h_res, FOP_ROUNDS, MPI_INT64_T, all, FOP_ROUNDS, MPI_INT64_T, MPI_COMM_WORLD);
    {
        /* every old value 0 .. n*rounds-1 exactly once */
        int total = nranks * FOP_ROUNDS, bad = 0;
        char *seen = (char *)calloc(total, 1);
        for (int i = 0; i < total; ++i) {
            if (all[i] < 0 || all[i] >= total || seen[all[i]]) bad++;
            else seen[all[i]] = 1;
        }
        CHECK(bad == 0);
        free(seen);
    }
    uint64_t cas[3], *cas_all = (uint64_t *)malloc(nranks * sizeof(uint64_t));
    CUDA_CHECK(cudaMemcpy(cas, d_cas, sizeof(cas), cudaMemcpyDeviceToHost));
    MPI_Allgather(&cas[2], 1, MPI_UINT64_T, cas_all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t cnt = -1;
        uint64_t word = 0;
        int32_t acc[16], acct[16];
        double d = 0;
        int winners = 0, winner = -1;
        CUDA_CHECK(cudaMemcpy(&cnt, base + OFF_CNT, 8, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&word, base + OFF_CAS, 8, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(acc, base + OFF_ACC, sizeof(acc), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(acct, base + OFF_ACCT, sizeof(acct), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&d, base + OFF_ACCD, 8, cudaMemcpyDeviceToHost));
        CHECK(cnt == (int64_t)nranks * FOP_ROUNDS);
        for (int i = 0; i < 16; ++i) {
            int32_t want = 0;
            for (int r = 0; r < nranks; ++r) want += r + i;
            CHECK(acc[i] == want && acct[i] == want);
        }
        CHECK(d == 0.25 * (nranks - 1));
        for (int r = 0; r < nranks; ++r) {
            if (cas_all[r] == 0) {
                winners++;
                winner = r;
            }
        }
        CHECK(winners == 1 && word == (uint64_t)winner + 1);
        for (int r = 0; r < nranks; ++r) CHECK(cas_all[r] == 0 || cas_all[r] == word);
    }
    MPI_Type_free(&four);
    free(cas_all);
    free(all);
    free(h_seen);
    cudaFree(d_cas);
    cudaFree(d_acc);
    cudaFree(d_seen);
    cudaFreeHost(h_dbl);
    cudaFreeHost(h_res);
    cudaFreeHost(h_one);
}

/* 7. host fence epochs, enqueued fence epochs, host again, on one window */
static void test_mixing(MPI_Win win, cudaStream_t s)
{
    unsigned *h = (unsigned *)malloc(N_SMALL * sizeof(unsigned)), *src;

    CUDA_CHECK(cudaMalloc(&src, N_SMALL * sizeof(unsigned)));
    for (int i = 0; i < N_SMALL; ++i) h[i] = val(rank, 500, i);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Put(h, N_SMALL, MPI_UNSIGNED, right, OFF_MIX, N_SMALL, MPI_UNSIGNED, win));
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(host_check(OFF_MIX, N_SMALL, left, 500) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_OK(MPIX_Win_fence_enqueue(MPI_MODE_NOPRECEDE, win, s));
    k_fill<<<4, 256, 0, s>>>(src, N_SMALL, rank, 501);
    MPI_OK(MPIX_Put_enqueue(src, N_SMALL, MPI_UNSIGNED, right, OFF_MIX, N_SMALL, MPI_UNSIGNED,
                            win, s));
    MPI_OK(MPIX_Win_fence_enqueue(MPI_MODE_NOSUCCEED, win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(host_check(OFF_MIX, N_SMALL, left, 501) == 0);

    for (int i = 0; i < N_SMALL; ++i) h[i] = val(rank, 502, i);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Put(h, N_SMALL, MPI_UNSIGNED, right, OFF_MIX, N_SMALL, MPI_UNSIGNED, win));
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(host_check(OFF_MIX, N_SMALL, left, 502) == 0);

    /* enqueued puts inside a host lock_all epoch, completed by an enqueued flush */
    MPI_OK(MPI_Win_lock_all(0, win));
    k_fill<<<4, 256, 0, s>>>(src, N_SMALL, rank, 503);
    MPI_OK(MPIX_Put_enqueue(src, N_SMALL, MPI_UNSIGNED, right, OFF_MIX, N_SMALL, MPI_UNSIGNED,
                            win, s));
    MPI_OK(MPIX_Win_flush_enqueue(right, win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(host_check(OFF_MIX, N_SMALL, left, 503) == 0);
    cudaFree(src);
    free(h);
}

/* 8. calls refused at enqueue time */
static void test_errors(MPI_Win win, cudaStream_t s)
{
    unsigned char *before = (unsigned char *)malloc(WIN_BYTES);
    unsigned char *after = (unsigned char *)malloc(WIN_BYTES);
    unsigned *src, pageable[16] = {0};
    uint64_t *d64;
    MPI_Datatype vec, strct;
    MPI_Win hwin;
    void *hbase;
    int blens[2] = {1, 1};
    MPI_Aint displs[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT32_T, MPI_DOUBLE};

    /* Pageable memory is refused where the driver does not know it (no registration); a
     * system that reports it as device-accessible host memory accepts it. */
    cudaPointerAttributes pa;
    int pageable_unregistered = cudaPointerGetAttributes(&pa, pageable) == cudaSuccess &&
                                pa.type == cudaMemoryTypeUnregistered;
    cudaGetLastError();
    CUDA_CHECK(cudaMalloc(&src, 64 * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d64, 4 * sizeof(uint64_t)));
    CUDA_CHECK(cudaMemset(src, 0xab, 64 * sizeof(unsigned)));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Type_vector(2, 1, 2, MPI_INT32_T, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_create_struct(2, blens, displs, types, &strct);
    MPI_Type_commit(&strct);
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemcpy(before, base, WIN_BYTES, cudaMemcpyDeviceToHost));
    MPI_Barrier(MPI_COMM_WORLD);

    /* outside any epoch */
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, 0, 4, MPI_UNSIGNED, win, s),
                MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPIX_Win_flush_enqueue(right, win, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPIX_Win_unlock_all_enqueue(win, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPIX_Win_complete_enqueue(win, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPIX_Win_wait_enqueue(win, s), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPIX_Win_fence_enqueue(0x7fff0000, win, s), MPI_ERR_ASSERT);

    MPI_OK(MPIX_Win_lock_all_enqueue(0, win, s));
    CHECK_CLASS(MPIX_Win_fence_enqueue(0, win, s), MPI_ERR_RMA_SYNC); /* inside lock_all */
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, nranks, 0, 4, MPI_UNSIGNED, win, s),
                MPI_ERR_RANK);
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, -1, 0, 4, MPI_UNSIGNED, win, s),
                MPI_ERR_RANK);
    CHECK_CLASS(MPIX_Win_flush_enqueue(nranks, win, s), MPI_ERR_RANK);
    CHECK_CLASS(MPIX_Put_enqueue(src, -1, MPI_UNSIGNED, right, 0, -1, MPI_UNSIGNED, win, s),
                MPI_ERR_COUNT);
    CHECK_CLASS(MPIX_Put_enqueue(src, 2, vec, right, 0, 2, vec, win, s), MPI_ERR_TYPE);
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, 0, 2, MPI_UNSIGNED, win, s),
                MPI_ERR_TYPE);
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, WIN_BYTES / DU - 3, 4,
                                 MPI_UNSIGNED, win, s),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, -1, 4, MPI_UNSIGNED, win, s),
                MPI_ERR_RMA_RANGE);
    {
        /* 4 unsigned 2 units into the type (true lower bound 8 bytes): the last 4 units of the
         * window plus that lower bound leave it */
        MPI_Datatype shifted;
        int one = 4;
        MPI_Aint at = 2 * DU;

        MPI_OK(MPI_Type_create_hindexed(1, &one, &at, MPI_UNSIGNED, &shifted));
        MPI_OK(MPI_Type_commit(&shifted));
        CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, WIN_BYTES / DU - 4, 1, shifted,
                                     win, s),
                    MPI_ERR_RMA_RANGE);
        MPI_Type_free(&shifted);
    }
    CHECK_CLASS(MPIX_Get_enqueue(src, 4, MPI_UNSIGNED, right, WIN_BYTES, 4, MPI_UNSIGNED, win,
                                 s),
                MPI_ERR_RMA_RANGE);
    if (pageable_unregistered) {
        CHECK_CLASS(MPIX_Put_enqueue(pageable, 4, MPI_UNSIGNED, right, 0, 4, MPI_UNSIGNED, win,
                                     s),
                    MPI_ERR_BUFFER);
        CHECK_CLASS(MPIX_Fetch_and_op_enqueue(src, pageable, MPI_INT64_T, right, 0, MPI_SUM,
                                              win, s),
                    MPI_ERR_BUFFER);
    }
    CHECK_CLASS(MPIX_Put_enqueue(NULL, 4, MPI_UNSIGNED, right, 0, 4, MPI_UNSIGNED, win, s),
                MPI_ERR_BUFFER);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 4, MPI_INT32_T, right, 0, 4, MPI_INT32_T,
                                        MPI_MAXLOC, win, s),
                MPI_ERR_OP);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 4, MPI_FLOAT, right, 0, 4, MPI_FLOAT, MPI_BAND,
                                        win, s),
                MPI_ERR_OP);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 4, MPI_INT32_T, right, 0, 4, MPI_INT32_T,
                                        MPI_NO_OP, win, s),
                MPI_ERR_OP);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 1, strct, right, 0, 1, strct, MPI_SUM, win, s),
                MPI_ERR_TYPE);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 4, MPI_INT32_T, right, 0, 4, MPI_FLOAT, MPI_SUM,
                                        win, s),
                MPI_ERR_TYPE);
    CHECK_CLASS(MPIX_Accumulate_enqueue(src, 4, MPI_INT32_T, right, WIN_BYTES / DU, 4,
                                        MPI_INT32_T, MPI_SUM, win, s),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPIX_Fetch_and_op_enqueue(src, d64, MPI_INT64_T, right, 0, MPI_MINLOC, win, s),
                MPI_ERR_OP);
    CHECK_CLASS(MPIX_Compare_and_swap_enqueue(d64, d64 + 1, d64 + 2, MPI_DOUBLE, right, 0, win,
                                              s),
                MPI_ERR_TYPE);
    CHECK_CLASS(MPIX_Compare_and_swap_enqueue(d64, d64 + 1, d64 + 2, MPI_INT32_T, right, 0, win,
                                              s),
                MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, 0, 4, MPI_UNSIGNED, MPI_WIN_NULL,
                                 s),
                MPI_ERR_WIN);
    CHECK_CLASS(MPIX_Win_fence_enqueue(0, MPI_WIN_NULL, s), MPI_ERR_WIN);
    MPI_OK(MPIX_Win_unlock_all_enqueue(win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));

    /* a host-memory window: no target is reachable from the device */
    CHECK(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &hbase, &hwin) ==
          MPI_SUCCESS);
    MPI_Win_set_errhandler(hwin, MPI_ERRORS_RETURN);
    MPI_OK(MPI_Win_lock_all(0, hwin));
    CHECK_CLASS(MPIX_Put_enqueue(src, 4, MPI_UNSIGNED, right, 0, 4, MPI_UNSIGNED, hwin, s),
                MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_CLASS(MPIX_Win_fence_enqueue(0, hwin, s), MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_OK(MPI_Win_unlock_all(hwin));
    MPI_Win_free(&hwin);

    /* nothing was written, and no error waits for the next host synchronization */
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemcpy(after, base, WIN_BYTES, cudaMemcpyDeviceToHost));
    CHECK(memcmp(before, after, WIN_BYTES) == 0);
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Win_flush_all(win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Type_free(&vec);
    MPI_Type_free(&strct);
    cudaFree(d64);
    cudaFree(src);
    free(before);
    free(after);
}

/* Tells the left neighbour "my event fired" and waits for the right one's: the origin's event
 * is the only thing that orders the target's host check after the put. */
static void event_handshake(int tag)
{
    int token = rank, got = -1;

    MPI_Sendrecv(&token, 1, MPI_INT, right, tag, &got, 1, MPI_INT, left, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(got == left);
}

/* 9. flushes with nothing left to run still give remote completion at their event */
static void test_flush_elision(MPI_Win win, cudaStream_t s, cudaStream_t s2)
{
    unsigned *src, *back;
    cudaEvent_t ev, joined;
    unsigned h[2] = {0, 0};

    CUDA_CHECK(cudaMalloc(&src, N_BIG * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&back, 2 * sizeof(unsigned)));
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    MPI_OK(MPIX_Win_lock_all_enqueue(0, win, s));

    /* an 8-byte put, flushed: one warp, no flush kernel on the P2P path */
    k_fill<<<1, 32, 0, s>>>(src, 2, rank, 301);
    MPI_OK(MPIX_Put_enqueue(src, 2, MPI_UNSIGNED, right, OFF_EL8, 2, MPI_UNSIGNED, win, s));
    MPI_OK(MPIX_Win_flush_enqueue(right, win, s));
    CUDA_CHECK(cudaEventRecord(ev, s));
    CUDA_CHECK(cudaEventSynchronize(ev));
    event_handshake(31);
    CHECK(host_check(OFF_EL8, 2, left, 301) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a larger put (the device API's block copy), flushed with flush_all */
    k_fill<<<8, 256, 0, s>>>(src, N_BIG, rank, 302);
    MPI_OK(MPIX_Put_enqueue(src, N_BIG, MPI_UNSIGNED, right, OFF_ELB, N_BIG, MPI_UNSIGNED, win,
                            s));
    MPI_OK(MPIX_Win_flush_all_enqueue(win, s));
    CUDA_CHECK(cudaEventRecord(ev, s));
    CUDA_CHECK(cudaEventSynchronize(ev));
    event_handshake(32);
    CHECK(host_check(OFF_ELB, N_BIG, left, 302) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a put on the second stream, which the first joins before its flush */
    CUDA_CHECK(cudaEventRecord(joined, s));
    CUDA_CHECK(cudaStreamWaitEvent(s2, joined, 0));
    k_fill<<<4, 256, 0, s2>>>(src, N_SMALL, rank, 303);
    MPI_OK(MPIX_Put_enqueue(src, N_SMALL, MPI_UNSIGNED, right, OFF_ELS, N_SMALL, MPI_UNSIGNED,
                            win, s2));
    CUDA_CHECK(cudaEventRecord(joined, s2));
    CUDA_CHECK(cudaStreamWaitEvent(s, joined, 0));
    MPI_OK(MPIX_Win_flush_enqueue(right, win, s));
    CUDA_CHECK(cudaEventRecord(ev, s));
    CUDA_CHECK(cudaEventSynchronize(ev));
    event_handshake(33);
    CHECK(host_check(OFF_ELS, N_SMALL, left, 303) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* put, flush, get of the same words: the get sees the put (flush_local in between, which
     * never runs anything, must not reorder either) */
    k_fill<<<1, 32, 0, s>>>(src, 2, rank, 304);
    MPI_OK(MPIX_Put_enqueue(src, 2, MPI_UNSIGNED, right, OFF_ELG, 2, MPI_UNSIGNED, win, s));
    MPI_OK(MPIX_Win_flush_local_enqueue(right, win, s));
    MPI_OK(MPIX_Win_flush_enqueue(right, win, s));
    MPI_OK(MPIX_Get_enqueue(back, 2, MPI_UNSIGNED, right, OFF_ELG, 2, MPI_UNSIGNED, win, s));
    MPI_OK(MPIX_Win_unlock_all_enqueue(win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(h, back, sizeof(h), cudaMemcpyDeviceToHost));
    CHECK(h[0] == val(rank, 304, 0) && h[1] == val(rank, 304, 1));
    MPI_Barrier(MPI_COMM_WORLD);

    cudaEventDestroy(ev);
    cudaEventDestroy(joined);
    cudaFree(back);
    cudaFree(src);
}

/* Loads the test's kernels before any epoch: CUDA loads kernels lazily by default, and a kernel
 * loaded for the first time while an enqueued flush waits for the proxy can hold up the
 * proxy's copies (forced proxy path) until the wait times out (docs/streams.md). */
static void preload_kernels(void)
{
    const void *fns[] = {(const void *)k_fill, (const void *)k_check, (const void *)k_fill_iter,
                         (const void *)k_check_iter, (const void *)k_copy64};
    cudaFuncAttributes attr;

    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); ++i) {
        CUDA_CHECK(cudaFuncGetAttributes(&attr, fns[i]));
    }
}

int main(int argc, char **argv)
{
    int caps = 0;
    MPI_Win win;
    MPI_Info info;
    cudaStream_t s, s2;

    if (!device_test_init(&argc, &argv, "test_stream_rma", &rank, &nranks)) {
        return 77;
    }
    right = (rank + 1) % nranks;
    left = (rank + nranks - 1) % nranks;
    CHECK(MPIX_Gpuic_query_capabilities(&caps) == MPI_SUCCESS && (caps & MPIX_GPUIC_CAP_STREAM));
    preload_kernels();
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&d_bad, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_bad, 0, sizeof(int)));

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    /* with peers on other emulated nodes, a UCX that cannot register device memory refuses
     * the window on every rank (documented): a skip */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int rc = MPI_Win_allocate(WIN_BYTES, DU, info, MPI_COMM_WORLD, &base, &win);

        MPI_Info_free(&info);
        if (rc != MPI_SUCCESS) {
            return device_test_window_refused(rc, rank, "test_stream_rma");
        }
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(mpi_test_is_gpuic(win));
    CUDA_CHECK(cudaMemset(base, 0, WIN_BYTES));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);

    /* Every rank can enqueue and run the kernels (calls that wait for no other rank), or the
     * collective parts below would leave the others waiting on the device. */
    {
        int ok = MPIX_Win_lock_all_enqueue(0, win, s) == MPI_SUCCESS &&
                 MPIX_Win_unlock_all_enqueue(win, s) == MPI_SUCCESS &&
                 cudaStreamSynchronize(s) == cudaSuccess,
            all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(ok);
        if (!all_ok) {
            if (rank == 0) fprintf(stderr, "enqueued calls do not run on every rank\n");
            MPI_Win_free(&win);
            return mpi_test_finish("test_stream_rma");
        }
    }

    test_order(win, s);        /* leaves the enqueued fence epoch open */
    test_graph(win, s);
    MPI_OK(MPIX_Win_fence_enqueue(MPI_MODE_NOSUCCEED, win, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    MPI_Barrier(MPI_COMM_WORLD);
    test_event(win, s);
    test_streams(win, s, s2);
    test_atomics(win, s);
    test_pscw(win, s);
    test_mixing(win, s);
    test_flush_elision(win, s, s2);
    test_errors(win, s);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    cudaFree(d_bad);
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s);
    return mpi_test_finish("test_stream_rma");
}
