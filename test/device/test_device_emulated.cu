/*
 * Device windows on emulated nodes (run with OMPI_MCA_osc_gpuic_emulate_nodes=N; a process's
 * emulated node is its world rank / N):
 *  1. a GPU window (MPI_Win_allocate, cuda:device) over processes of several emulated nodes:
 *     with a CUDA-enabled UCX, peers of other emulated nodes are reached through UCX (target
 *     path), and device calls reach them through the proxy (remote_device_calls), atomics
 *     included: they are executed by the target's window agent (remote_device_atomics);
 *     without one, creation fails on every process (MPI_ERR_UNSUPPORTED_OPERATION, or
 *     MPI_ERR_WIN as Open MPI reports a refusing component), and a later window works;
 *  2. a GPU window on the communicator of one emulated node: CUDA IPC (target path IPC, device
 *     path P2P), a device put to the right neighbour in it, checked on the host;
 *  3. a host window over every process: target path UCX to other emulated nodes, device path
 *     PROXY to every target (the proxy reaches other nodes through UCX, not its mappings), a
 *     device put to the right neighbour and a device get back, checked on the host.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define INTS 1024
#define WIN_BYTES (2 * INTS * sizeof(int)) /* [0, INTS): put here; [INTS, 2 INTS): spare */

static int rank, nranks, per_node;

__host__ __device__ static int value_of(int writer, int i)
{
    return writer * 100000 + i + 1;
}

/* One block: fills src, puts it to @p target at displacement 0, flushes; rc[0] the status. */
__global__ void put_flush(MPIX_Win_device win, int me, int target, int *src, int *rc)
{
    for (int i = threadIdx.x; i < INTS; i += blockDim.x) {
        src[i] = value_of(me, i);
    }
    __syncthreads();
    int r = MPIX_Put_device_block(src, INTS * sizeof(int), target, 0, win);
    if (threadIdx.x == 0) {
        rc[0] = r != MPI_SUCCESS ? r : MPIX_Win_flush_device(target, win);
    }
}

/* One block: gets @p target's first INTS integers into dst, flushes; rc[1] the status. */
__global__ void get_flush(MPIX_Win_device win, int target, int *dst, int *rc)
{
    int r = MPIX_Get_device_block(dst, INTS * sizeof(int), target, 0, win);
    if (threadIdx.x == 0) {
        rc[1] = r != MPI_SUCCESS ? r : MPIX_Win_flush_device(target, win);
    }
}

/* One thread: put-with-signal (SET) of the first 64 integers of src to @p target at element
 * INTS, signal word at element 2 * INTS - 2, then flush; rc[2] the status.  Then a
 * fetch-and-add of 1 on element 0..1 (executed by the target): rc[3]. */
__global__ void put_signal_fadd(MPIX_Win_device win, int target, const int *src, int *rc)
{
    int64_t old = 0;
    int r = MPIX_Put_signal_device(src, 64 * sizeof(int), target, INTS * sizeof(int),
                                   (2 * INTS - 2) * sizeof(int), 7, MPIX_DEVICE_SIGNAL_SET, win);

    rc[2] = r != MPI_SUCCESS ? r : MPIX_Win_flush_device(target, win);
    rc[3] = MPIX_Fetch_and_add_device(1, &old, target, 0, win);
}

static int same_node(int w)
{
    return per_node == 0 || w / per_node == rank / per_node;
}

/*
 * Device calls from rank 0's kernel to the first rank of the next emulated node, whose GPU
 * window it reaches through the proxy and UCX: a block put + flush, a get back, a
 * put-with-signal (SET) + flush; a fetch-and-add there (executed by the target's agent).
 * Every other rank waits in MPI calls meanwhile, which makes the progress a transport
 * emulating RMA in software needs on the target.
 */
static void remote_device_calls(MPI_Win win, void *base)
{
    int target = per_node % nranks, h_rc[4] = {-1, -1, -1, -1}, *d_src, *d_dst, *d_rc, rc;
    int *host = (int *)malloc(2 * INTS * sizeof(int));
    MPIX_Win_device h = {};
    int path = -1;

    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CHECK(MPIX_Win_gpuic_device_path(win, target, &path) == MPI_SUCCESS);
    CHECK(rank != 0 || path == MPIX_GPUIC_DEVICE_PATH_PROXY); /* rank 0 issues the calls */
    CUDA_CHECK(cudaMemset(base, 0, WIN_BYTES));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CUDA_CHECK(cudaMalloc(&d_src, INTS * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&d_dst, INTS * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&d_rc, sizeof(h_rc)));
        CUDA_CHECK(cudaMemcpy(d_rc, h_rc, sizeof(h_rc), cudaMemcpyHostToDevice));
        put_flush<<<1, 128>>>(h, 0, target, d_src, d_rc);
        get_flush<<<1, 128>>>(h, target, d_dst, d_rc);
        put_signal_fadd<<<1, 1>>>(h, target, d_src, d_rc);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(h_rc, d_rc, sizeof(h_rc), cudaMemcpyDeviceToHost));
        CHECK(h_rc[0] == MPI_SUCCESS && h_rc[1] == MPI_SUCCESS && h_rc[2] == MPI_SUCCESS);
        CHECK(h_rc[3] == MPI_SUCCESS);
        CUDA_CHECK(cudaMemcpy(host, d_dst, INTS * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < INTS; ++i) {
            CHECK(host[i] == value_of(0, i));
        }
        rc = MPI_Win_flush_all(win);
        CHECK(rc == MPI_SUCCESS);
        cudaFree(d_src);
        cudaFree(d_dst);
        cudaFree(d_rc);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the target progresses here */
    if (rank == target) {
        CUDA_CHECK(cudaMemcpy(host, base, 2 * INTS * sizeof(int), cudaMemcpyDeviceToHost));
        /* elements 0 and 1 hold the put's values plus the fetch-and-add's 1 (64-bit word) */
        {
            uint64_t w = 0, put = 0;
            int two[2] = {value_of(0, 0), value_of(0, 1)};

            memcpy(&w, host, 8);
            memcpy(&put, two, 8); /* not through an int pointer: put is a uint64_t */
            if (w != put + 1) {
                fprintf(stderr, "[rank %d] word 0 is %#llx, expected the put's %#llx plus 1\n",
                        rank, (unsigned long long)w, (unsigned long long)put);
            }
            CHECK(w == put + 1);
        }
        for (int i = 2; i < INTS; ++i) {
            CHECK(host[i] == value_of(0, i));
        }
        for (int i = 0; i < 64; ++i) {
            CHECK(host[INTS + i] == value_of(0, i));
        }
        {
            uint64_t sig = 0;

            memcpy(&sig, &host[2 * INTS - 2], 8);
            CHECK(sig == 7);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    free(host);
}

/* Byte offsets in the target's window of remote_device_atomics (the spare half). */
#define AT_COUNTER (INTS * sizeof(int))        /* uint64_t: everybody's fetch-and-adds */
#define AT_CAS     (AT_COUNTER + 8)            /* uint64_t: one compare-and-swap winner */
#define AT_DOUBLES (AT_COUNTER + 16)           /* AT_NDOUBLES doubles: accumulate SUM */
#define AT_SIGNAL  (AT_COUNTER + 768)          /* uint64_t: signal added to by every rank */
#define AT_DATA    (AT_COUNTER + 1024)         /* per rank 8 ints put with the signal */
#define AT_ROUNDS 64
#define AT_NDOUBLES 80                         /* 640 bytes: two remote calls per accumulate */

/* One thread of every rank: AT_ROUNDS fetch-and-adds of 1 on the counter (old values in
 * @p olds), one compare-and-swap 0 -> me + 1 (old value in *cas_old), an accumulate SUM of
 * AT_NDOUBLES doubles (me + 1 + i * 0.5), and a put of 8 ints with a signal add of 1 to
 * @p target; rc[0] the first failure. */
__global__ void atomics_kernel(MPIX_Win_device win, int me, int target, uint64_t *olds,
                               uint64_t *cas_old, double *dsrc, int *isrc, int *rc,
                               volatile uint64_t *step)
{
    int r = MPI_SUCCESS;

    for (int i = 0; i < AT_ROUNDS && r == MPI_SUCCESS; ++i) {
        int64_t old = -1;

        *step = 1 + i;
        r = MPIX_Fetch_and_add_device(1, &old, target, AT_COUNTER, win);
        olds[i] = (uint64_t)old;
    }
    *step = 100;
    if (r == MPI_SUCCESS) {
        r = MPIX_Compare_and_swap_device((uint64_t)me + 1, 0, cas_old, target, AT_CAS, win);
    }
    *step = 200;
    for (int i = 0; i < AT_NDOUBLES; ++i) {
        dsrc[i] = me + 1 + i * 0.5;
    }
    if (r == MPI_SUCCESS) {
        r = MPIX_Accumulate_device(dsrc, AT_NDOUBLES, MPIX_DEVICE_DOUBLE, MPIX_DEVICE_SUM, target,
                                   AT_DOUBLES, win);
    }
    for (int i = 0; i < 8; ++i) {
        isrc[i] = value_of(me, i);
    }
    *step = 300;
    if (r == MPI_SUCCESS) {
        r = MPIX_Put_signal_device(isrc, 8 * sizeof(int), target,
                                   AT_DATA + (MPI_Aint)me * 8 * sizeof(int), AT_SIGNAL, 1,
                                   MPIX_DEVICE_SIGNAL_ADD, win);
    }
    *step = 400;
    if (r == MPI_SUCCESS) {
        r = MPIX_Win_flush_device(target, win);
    }
    *step = 500;
    rc[0] = r;
}

/* The target's kernel: waits until every rank's signal add arrived, then checks every rank's
 * data is there (put before its signal); rc[1] 0 when all is right. */
__global__ void signal_wait_kernel(MPIX_Win_device win, int nranks, const int *base, int *rc)
{
    uint64_t seen = 0;
    int r = MPIX_Signal_wait_until_device(AT_SIGNAL, MPIX_DEVICE_CMP_GE, (uint64_t)nranks, &seen,
                                          win);

    for (int w = 0; r == MPI_SUCCESS && w < nranks; ++w) {
        for (int i = 0; i < 8; ++i) {
            if (base[(AT_DATA / sizeof(int)) + w * 8 + i] != value_of(w, i)) {
                r = -1;
            }
        }
    }
    rc[1] = r;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Prints which of remote_device_atomics' kernels still run and what this rank's window holds
 * of the counter and the signal, read on a stream of its own (the others are busy) into
 * @p words (mapped pinned memory: 2 words, 2 ints, then the atomics kernel's step in words[4];
 * a pageable copy may wait for the device), waiting at most 2 s for the copies. */
static void hang_report(void *base, const int *d_rc, cudaStream_t wait_stream, uint64_t *words)
{
    int *rc = (int *)(words + 2), copied = 0;
    cudaStream_t peek;

    words[0] = words[1] = 0;
    rc[0] = rc[1] = -9;
    CUDA_CHECK(cudaStreamCreateWithFlags(&peek, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMemcpyAsync(&words[0], (char *)base + AT_COUNTER, 8, cudaMemcpyDeviceToHost,
                               peek));
    CUDA_CHECK(cudaMemcpyAsync(&words[1], (char *)base + AT_SIGNAL, 8, cudaMemcpyDeviceToHost,
                               peek));
    CUDA_CHECK(cudaMemcpyAsync(rc, d_rc, 2 * sizeof(int), cudaMemcpyDeviceToHost, peek));
    for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 2;) {
        if (cudaStreamQuery(peek) != cudaErrorNotReady) {
            copied = 1;
            break;
        }
    }
    fprintf(stderr, "[rank %d] after 20 s: atomics kernel %s at step %llu (1..64: fetch-and-add, "
            "100 compare-and-swap, 200 accumulate, 300 put-with-signal, 400 flush, 500 done), "
            "signal-wait kernel %s; here the counter is %llu, the signal %llu; rc %d %d%s\n",
            rank,
            cudaStreamQuery(0) == cudaErrorNotReady ? "running" : "done",
            (unsigned long long)*(volatile uint64_t *)&words[4],
            cudaStreamQuery(wait_stream) == cudaErrorNotReady ? "running" : "done",
            (unsigned long long)words[0], (unsigned long long)words[1], rc[0], rc[1],
            copied ? "" : " (the copies did not complete within 2 s: values not read)");
    /* left to the process's end when the copies are still queued */
    if (copied) {
        CUDA_CHECK(cudaStreamDestroy(peek));
    }
}

/*
 * Every rank's kernel updates the GPU window of the first rank of the next emulated node at
 * once (the target's own kernel included, on the P2P path): concurrent fetch-and-adds on one
 * element give the exact sum and fetched values that are a permutation of 0 .. total - 1; one
 * compare-and-swap wins; accumulate SUM of doubles is exact (the values are exact in binary);
 * put-with-signal ADD: the target's kernel waits for every rank's signal, then sees every
 * rank's data.  Ranks keep making MPI progress while their kernels run.
 */
static void remote_device_atomics(MPI_Win win, void *base)
{
    int target = per_node % nranks, h_rc[2] = {-1, 0}, *d_rc, *d_isrc, flag;
    uint64_t *d_olds, *d_cas, h_olds[AT_ROUNDS], h_cas = 0, *all = NULL;
    double *d_dsrc;
    MPIX_Win_device h = {};
    cudaStream_t wait_stream;
    uint64_t *report = NULL, *d_step = NULL;

    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CUDA_CHECK(cudaHostAlloc(&report, 8 * sizeof(uint64_t), cudaHostAllocMapped));
    memset(report, 0, 8 * sizeof(uint64_t));
    CUDA_CHECK(cudaHostGetDevicePointer(&d_step, report + 4, 0));
    CUDA_CHECK(cudaMemset(base, 0, WIN_BYTES));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMalloc(&d_olds, AT_ROUNDS * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&d_cas, sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&d_dsrc, AT_NDOUBLES * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&d_isrc, 8 * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_rc, sizeof(h_rc)));
    CUDA_CHECK(cudaMemcpy(d_rc, h_rc, sizeof(h_rc), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamCreateWithFlags(&wait_stream, cudaStreamNonBlocking));
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* The kernel that waits for the others goes last: CUDA runs kernels of different streams
     * at the same time only where the driver gives the streams different hardware queues (MPS
     * gives each client few), so a waiting kernel may keep a later one of another stream from
     * starting, never an earlier one. */
    atomics_kernel<<<1, 1>>>(h, rank, target, d_olds, d_cas, d_dsrc, d_isrc, d_rc, d_step);
    if (rank == target) {
        signal_wait_kernel<<<1, 1, 0, wait_stream>>>(h, nranks, (const int *)base, d_rc);
    }
    /* MPI progress while the kernels run (a target without a proxy serves calls here); after
     * 20 s, where they are, for a hang report */
    for (double t0 = MPI_Wtime(), said = 0;
         cudaStreamQuery(0) == cudaErrorNotReady ||
         cudaStreamQuery(wait_stream) == cudaErrorNotReady;) {
        MPI_Iprobe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (!said && MPI_Wtime() - t0 > 20) {
            said = 1;
            hang_report(base, d_rc, wait_stream, report);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h_rc, d_rc, sizeof(h_rc), cudaMemcpyDeviceToHost));
    CHECK(h_rc[0] == MPI_SUCCESS);
    CHECK(rank != target || h_rc[1] == MPI_SUCCESS);
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(h_olds, d_olds, sizeof(h_olds), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&h_cas, d_cas, sizeof(h_cas), cudaMemcpyDeviceToHost));
    if (rank == target) {
        all = (uint64_t *)malloc((size_t)nranks * AT_ROUNDS * sizeof(uint64_t));
    }
    MPI_Gather(h_olds, AT_ROUNDS, MPI_UINT64_T, all, AT_ROUNDS, MPI_UINT64_T, target,
               MPI_COMM_WORLD);
    {
        /* exactly one compare-and-swap saw 0 */
        int won = h_cas == 0, winners = 0;

        MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(winners == 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        char *host = (char *)malloc(WIN_BYTES);
        uint64_t counter, cas;
        int total = nranks * AT_ROUNDS;

        CUDA_CHECK(cudaMemcpy(host, base, WIN_BYTES, cudaMemcpyDeviceToHost));
        memcpy(&counter, host + AT_COUNTER, 8);
        memcpy(&cas, host + AT_CAS, 8);
        CHECK(counter == (uint64_t)total);
        CHECK(cas >= 1 && cas <= (uint64_t)nranks);
        qsort(all, (size_t)total, sizeof(uint64_t), cmp_u64);
        for (int i = 0; i < total; ++i) {
            CHECK(all[i] == (uint64_t)i);
        }
        for (int i = 0; i < AT_NDOUBLES; ++i) {
            double d, expect = 0;

            memcpy(&d, host + AT_DOUBLES + i * sizeof(double), sizeof(double));
            for (int w = 0; w < nranks; ++w) {
                expect += w + 1 + i * 0.5;
            }
            CHECK(d == expect);
        }
        {
            uint64_t sig;

            memcpy(&sig, host + AT_SIGNAL, 8);
            CHECK(sig == (uint64_t)nranks);
        }
        free(host);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    cudaStreamDestroy(wait_stream);
    cudaFree(d_olds);
    cudaFree(d_cas);
    cudaFree(d_dsrc);
    cudaFree(d_isrc);
    cudaFree(d_rc);
    cudaFreeHost(report);
}

/*
 * Device put to the right neighbour of @p comm and get back from it, in a lock_all epoch:
 * checks the data in this process's window (@p base, device or host memory) and what the get
 * returned.
 */
static void put_get_right(MPI_Win win, MPI_Comm comm, void *base, int gpu)
{
    int me, n, right, left, h_rc[2] = {-1, -1}, *d_src, *d_dst, *d_rc;
    int *host = (int *)malloc(INTS * sizeof(int));
    MPIX_Win_device h = {};

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CUDA_CHECK(cudaMalloc(&d_src, INTS * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_dst, INTS * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_rc, sizeof(h_rc)));
    CUDA_CHECK(cudaMemcpy(d_rc, h_rc, sizeof(h_rc), cudaMemcpyHostToDevice));
    MPI_Win_lock_all(0, win);
    MPI_Barrier(comm);
    put_flush<<<1, 128>>>(h, mpi_test_world_rank(comm, me), right, d_src, d_rc);
    CUDA_CHECK(cudaDeviceSynchronize());
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(comm); /* every put is complete */
    if (gpu) {
        CUDA_CHECK(cudaMemcpy(host, base, INTS * sizeof(int), cudaMemcpyDeviceToHost));
    } else {
        MPI_Win_sync(win);
        memcpy(host, base, INTS * sizeof(int));
    }
    for (int i = 0; i < INTS; ++i) {
        CHECK(host[i] == value_of(mpi_test_world_rank(comm, left), i));
    }
    get_flush<<<1, 128>>>(h, right, d_dst, d_rc);
    CUDA_CHECK(cudaDeviceSynchronize());
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(host, d_dst, INTS * sizeof(int), cudaMemcpyDeviceToHost));
    /* the right neighbour holds what this process put */
    for (int i = 0; i < INTS; ++i) {
        CHECK(host[i] == value_of(mpi_test_world_rank(comm, me), i));
    }
    CUDA_CHECK(cudaMemcpy(h_rc, d_rc, sizeof(h_rc), cudaMemcpyDeviceToHost));
    CHECK(h_rc[0] == MPI_SUCCESS && h_rc[1] == MPI_SUCCESS);
    MPI_Barrier(comm); /* nobody's window goes away while a neighbour still reads */
    MPI_Win_unlock_all(win);
    cudaFree(d_src);
    cudaFree(d_dst);
    cudaFree(d_rc);
    free(host);
}

int main(int argc, char **argv)
{
    const char *env = getenv("OMPI_MCA_osc_gpuic_emulate_nodes");
    int several, rc, cls = MPI_SUCCESS, path = -1, n;
    void *base = NULL;
    MPI_Comm node;
    MPI_Info info;
    MPI_Win win;

    if (!device_test_init(&argc, &argv, "test_device_emulated", &rank, &nranks)) {
        return 77;
    }
    per_node = env != NULL ? atoi(env) : 0;
    several = per_node > 0 && nranks > per_node;
    if (rank == 0) {
        printf("osc_gpuic_emulate_nodes=%d, %d ranks\n", per_node, nranks);
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");

    /* 1. GPU window over several emulated nodes */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    } else {
        /* a CUDA-enabled UCX: peers of other emulated nodes through it (data checked by
         * test_gpu_window_host) */
        for (int r = 0; r < nranks; ++r) {
            CHECK(MPIX_Win_gpuic_target_path(win, r, &path) == MPI_SUCCESS);
            CHECK(path == (r == rank                         ? MPIX_GPUIC_PATH_SELF
                           : per_node <= 0 || r / per_node == rank / per_node
                               ? MPIX_GPUIC_PATH_IPC
                               : MPIX_GPUIC_PATH_UCX));
        }
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        if (several) {
            remote_device_calls(win, base);
            remote_device_atomics(win, base);
        }
        MPI_Win_free(&win);
    }
    /* refused only for peers on other nodes and a UCX without CUDA memory, on every process
     * (the component's class, or the one Open MPI turns a refusing component into) */
    CHECK(cls == MPI_SUCCESS ||
          (several && (cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN)));
    {
        int refused = cls != MPI_SUCCESS, all = 0;

        MPI_Allreduce(&refused, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(all == 0 || all == nranks);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* 2. GPU window on one emulated node */
    MPI_Comm_split(MPI_COMM_WORLD, per_node > 0 ? rank / per_node : 0, rank, &node);
    MPI_Comm_size(node, &n);
    CHECK(MPI_Win_allocate(WIN_BYTES, 1, info, node, &base, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CUDA_CHECK(cudaMemset(base, 0, WIN_BYTES));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(node);
    for (int r = 0; r < n; ++r) {
        CHECK(MPIX_Win_gpuic_target_path(win, r, &path) == MPI_SUCCESS);
        CHECK(path == (mpi_test_world_rank(node, r) == rank ? MPIX_GPUIC_PATH_SELF
                                                             : MPIX_GPUIC_PATH_IPC));
    }
    put_get_right(win, node, base, 1);
    for (int r = 0; r < n; ++r) {
        CHECK(MPIX_Win_gpuic_device_path(win, r, &path) == MPI_SUCCESS &&
              path == MPIX_GPUIC_DEVICE_PATH_P2P);
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Info_free(&info);

    /* 3. host window over every process: the proxy path, through UCX to other nodes */
    CHECK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win) ==
          MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    memset(base, 0, WIN_BYTES);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < nranks; ++r) {
        CHECK(MPIX_Win_gpuic_target_path(win, r, &path) == MPI_SUCCESS);
        if (r == rank) {
            CHECK(path == MPIX_GPUIC_PATH_SELF);
        } else if (!same_node(r)) {
            CHECK(path == MPIX_GPUIC_PATH_UCX);
        }
    }
    put_get_right(win, MPI_COMM_WORLD, base, 0);
    for (int r = 0; r < nranks; ++r) {
        CHECK(MPIX_Win_gpuic_device_path(win, r, &path) == MPI_SUCCESS &&
              path == MPIX_GPUIC_DEVICE_PATH_PROXY);
    }
    MPI_Win_free(&win);
    return mpi_test_finish("test_device_emulated");
}
