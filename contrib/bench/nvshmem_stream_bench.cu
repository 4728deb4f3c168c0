/*
 * nvshmem_stream_bench: the NVSHMEM peer of stream_bench (same measures, same output format)
 * with NVSHMEM's stream-ordered calls.  Two PEs bootstrapped over MPI.  Built only where
 * NVSHMEM is installed (run-device-bench.sh does it when NVSHMEM_HOME is given or found):
 *   nvcc -arch=sm_90 -rdc=true -I$NVSHMEM/include nvshmem_stream_bench.cu -L$NVSHMEM/lib \
 *        -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link)
 *
 * Rows: stream_put (nvshmemx_putmem_on_stream), stream_put_flush (that plus
 * nvshmemx_quiet_on_stream), stream_fence_epoch (nvshmemx_barrier_all_on_stream),
 * stream_put_fence_epoch (put plus barrier), graph_epoch (kernel, put, barrier, kernel
 * captured once and replayed 1000 times), per operation or epoch.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_peer.h"

#define GRAPH_REPLAYS 1000

static int rank;
static FILE *csv;

static void row(const char *measure, size_t size, double value, const char *unit)
{
    if (rank == 0) nvshmem_peer_row(csv, "nvshmem", measure, size, value, unit);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

__global__ void k_touch_dev(uint64_t *p)
{
    *p += 1;
}

int main(int argc, char **argv)
{
    int nranks, iters = 20000;
    const char *csv_path = NULL;
    cudaStream_t s;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    }
    nvshmem_peer_init(rank, nranks);
    if (rank == 0 && csv_path) csv = fopen(csv_path, "a");
    int peer = 1 - rank;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

    char *sym = (char *)nvshmem_malloc(1u << 20);
    uint64_t *src, *dst;
    cudaMalloc(&src, 4096);
    cudaMalloc(&dst, 4096);
    cudaMemset(src, 1, 4096);
    cudaDeviceSynchronize();
    nvshmem_barrier_all();

    if (rank == 0) {
        for (int i = 0; i < 100; ++i) {
            nvshmemx_putmem_on_stream(sym, src, 8, peer, s);
            nvshmemx_quiet_on_stream(s);
        }
        cudaStreamSynchronize(s);
        t0 = now_us();
        for (int i = 0; i < iters; ++i) {
            nvshmemx_putmem_on_stream(sym + (i % 1024) * 8, src, 8, peer, s);
        }
        cudaStreamSynchronize(s);
        row("stream_put", 8, (now_us() - t0) / iters, "us");
        t0 = now_us();
        for (int i = 0; i < iters; ++i) {
            nvshmemx_putmem_on_stream(sym + (i % 1024) * 8, src, 8, peer, s);
            nvshmemx_quiet_on_stream(s);
        }
        cudaStreamSynchronize(s);
        row("stream_put_flush", 8, (now_us() - t0) / iters, "us");
    }
    nvshmem_barrier_all();

    int n = iters / 4 > 0 ? iters / 4 : 1;
    for (int i = 0; i < 100; ++i) nvshmemx_barrier_all_on_stream(s);
    cudaStreamSynchronize(s);
    nvshmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < n; ++i) nvshmemx_barrier_all_on_stream(s);
    cudaStreamSynchronize(s);
    row("stream_fence_epoch", 0, (now_us() - t0) / n, "us");
    nvshmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < n; ++i) {
        nvshmemx_putmem_on_stream(sym + (i % 1024) * 8, src, 8, peer, s);
        nvshmemx_barrier_all_on_stream(s);
    }
    cudaStreamSynchronize(s);
    row("stream_put_fence_epoch", 8, (now_us() - t0) / n, "us");

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    k_touch_dev<<<1, 1, 0, s>>>(src);
    nvshmemx_putmem_on_stream(sym, src, 8, peer, s);
    nvshmemx_barrier_all_on_stream(s);
    k_touch_dev<<<1, 1, 0, s>>>(dst);
    if (cudaStreamEndCapture(s, &graph) == cudaSuccess &&
        cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {
        cudaGraphLaunch(exec, s);
        cudaStreamSynchronize(s);
        nvshmem_barrier_all();
        t0 = now_us();
        for (int r = 0; r < GRAPH_REPLAYS; ++r) cudaGraphLaunch(exec, s);
        cudaStreamSynchronize(s);
        row("graph_epoch", 8, (now_us() - t0) / GRAPH_REPLAYS, "us");
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    } else if (rank == 0) {
        fprintf(stderr, "nvshmem_stream_bench: capture of the on-stream calls failed\n");
    }
    nvshmem_barrier_all();
    nvshmem_free(sym);
    cudaFree(src);
    cudaFree(dst);
    cudaStreamDestroy(s);
    if (csv) fclose(csv);
    nvshmem_finalize();
    MPI_Finalize();
    return 0;
}
