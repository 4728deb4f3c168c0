/*
 * cuda_floor_bench: what the CUDA runtime alone costs on this GPU, the floors that host MPI
 * calls on GPU windows are compared with (contrib/bench/run-cuda-aware-bench.sh).  One
 * process, no MPI.
 *
 *   cuda_floor_bench [--iters N] [--min-bw-bytes N] [--max-bytes N] [--csv FILE]
 *
 * Rows, component "floor", in device_bench's format:
 *   memcpy_h2d_8B 8    cudaMemcpyAsync of 8 bytes pinned host -> device on a stream, then
 *                      cudaEventRecord + cudaEventSynchronize (us, host clock)
 *   empty_kernel 0     an empty kernel launch + cudaStreamSynchronize (us, host clock)
 *   d2d_bw SIZE        copy-engine cudaMemcpyAsync device -> device of SIZE bytes, repeated,
 *                      bytes copied per second (GB/s, CUDA events), --min-bw-bytes (1 MiB) ..
 *                      --max-bytes (64 MiB) by 2
 *   d2d_bw_flushed SIZE the same copies in the shape of gpu_window_bench's bandwidth rows
 *                      (op_time.h's op_bw: k copies of SIZE to distinct offsets, k x SIZE =
 *                      16 MiB, then a stream synchronization, as k puts and a flush), host
 *                      clock (GB/s)
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "op_time.h"

static FILE *csv;

static void row(const char *measure, size_t size, double value, const char *unit)
{
    printf("%-8s %-14s %10zu %12.3f %s\n", "floor", measure, size, value, unit);
    if (csv != NULL) {
        fprintf(csv, "floor,%s,%zu,%.4f,%s\n", measure, size, value, unit);
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__global__ void k_empty(void) {}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "cuda_floor_bench: %s: %s\n", what, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int i, iters = 1000;
    size_t min_bw = 1u << 20, max_bytes = 64u << 20, size;
    const char *csv_path = NULL;
    char *host = NULL, *src = NULL, *dst = NULL;
    cudaStream_t stream;
    cudaEvent_t done, e0, e1;
    double t;

    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-bw-bytes") && i + 1 < argc)
            min_bw = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    }
    if (iters < 1) iters = 1;
    if (min_bw < 8) min_bw = 8;
    if (!check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream") ||
        !check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "event") ||
        !check(cudaEventCreate(&e0), "event") || !check(cudaEventCreate(&e1), "event") ||
        !check(cudaMallocHost((void **)&host, 64), "cudaMallocHost") ||
        !check(cudaMalloc((void **)&src, max_bytes), "cudaMalloc") ||
        !check(cudaMalloc((void **)&dst, max_bytes), "cudaMalloc")) {
        return 1;
    }
    if (csv_path != NULL) csv = fopen(csv_path, "a");
    memset(host, 1, 64);
    cudaMemset(src, 1, max_bytes);
    cudaMemset(dst, 0, max_bytes);
    cudaDeviceSynchronize();

    for (i = 0; i < iters / 10 + 1; ++i) {
        cudaMemcpyAsync(dst, host, 8, cudaMemcpyHostToDevice, stream);
        cudaEventRecord(done, stream);
        cudaEventSynchronize(done);
    }
    t = now_s();
    for (i = 0; i < iters; ++i) {
        cudaMemcpyAsync(dst, host, 8, cudaMemcpyHostToDevice, stream);
        cudaEventRecord(done, stream);
        cudaEventSynchronize(done);
    }
    row("memcpy_h2d_8B", 8, (now_s() - t) / iters * 1e6, "us");

    for (i = 0; i < iters / 10 + 1; ++i) {
        k_empty<<<1, 1, 0, stream>>>();
        cudaStreamSynchronize(stream);
    }
    t = now_s();
    for (i = 0; i < iters; ++i) {
        k_empty<<<1, 1, 0, stream>>>();
        cudaStreamSynchronize(stream);
    }
    row("empty_kernel", 0, (now_s() - t) / iters * 1e6, "us");

    for (size = min_bw; size <= max_bytes; size *= 2) {
        /* about 1 GiB copied per row, at least 4 copies */
        int reps = (int)((1u << 30) / size), r;
        float ms = 0;

        if (reps < 4) reps = 4;
        cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream);
        cudaEventRecord(e0, stream);
        for (r = 0; r < reps; ++r) {
            cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream);
        }
        cudaEventRecord(e1, stream);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        row("d2d_bw", size, (double)size * reps / (ms * 1e-3) / 1e9, "GB/s");
    }
    for (size = min_bw; size <= max_bytes; size *= 2) {
        row("d2d_bw_flushed", size, op_bw(size, iters, 0.5, [&](size_t j) {
                cudaMemcpyAsync(dst + j * size, src + j * size, size, cudaMemcpyDeviceToDevice,
                                stream);
            }, [&] { cudaStreamSynchronize(stream); }), "GB/s");
    }
    if (!check(cudaGetLastError(), "run")) return 1;
    if (csv != NULL) fclose(csv);
    cudaFree(src);
    cudaFree(dst);
    cudaFreeHost(host);
    return 0;
}
