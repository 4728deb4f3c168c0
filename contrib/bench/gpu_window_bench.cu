/*
 * gpu_window_bench: host MPI RMA calls on a window in device memory (CUDA-aware one-sided
 * codes, OSU style), under whichever osc component the run selects.  Two ranks; rank 0
 * drives under MPI_Win_lock_all, rank 1's window is the target.
 *
 *   mpirun -np 2 --mca osc NAME gpu_window_bench [--origin host|cuda] [--flavor allocate|create]
 *                                                 [--iters N] [--min-bw-bytes N] [--max-bytes N]
 *                                                 [--row-seconds S] [--csv FILE] [--label NAME]
 *
 * The window: MPI_Win_allocate with mpi_assert_memory_alloc_kinds=cuda:device (allocate), or
 * MPI_Win_create on cudaMalloc memory (create).  The origin buffers (and fetch_and_op /
 * compare_and_swap operands) are in device memory with --origin cuda.  Rows, in
 * device_bench's format:
 *   put_flush 8, 1 MiB  MPI_Put + MPI_Win_flush (us)
 *   get_flush 8, 1 MiB  MPI_Get + MPI_Win_flush (us)
 *   acc_flush 8, 1 MiB  MPI_Accumulate (MPI_SUM, MPI_DOUBLE) + flush (us)
 *   fop_flush 8         MPI_Fetch_and_op (MPI_SUM, int64) + flush (us)
 *   cas_flush 8         MPI_Compare_and_swap (int64) + flush (us)
 *   put_bw SIZE         k puts of SIZE then one flush, k*SIZE = 16 MiB or SIZE (at most 16
 *                       operations) (GB/s), --min-bw-bytes (1 MiB) .. --max-bytes (64 MiB) by 2
 *   get_bw SIZE         the same with gets (GB/s)
 *   acc_bw MAX          the same with MPI_Accumulate (MPI_SUM, MPI_DOUBLE) at --max-bytes (GB/s)
 * Each row repeats its operation --iters times (default 1000), or fewer where that would take
 * longer than --row-seconds (default 0.5): a slow path costs seconds, not minutes.
 * Before timing, one put and one get are checked on known data; a component that cannot
 * create the window or moves wrong data gets one row "error" and no timings.
 */
#include <mpi.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_time.h"

static FILE *csv;
static const char *label = "gpuic";

static void row(const char *measure, size_t size, double value, const char *unit)
{
    printf("%-8s %-14s %10zu %12.3f %s\n", label, measure, size, value, unit);
    if (csv != NULL) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", label, measure, size, value, unit);
    }
}

static double row_seconds = 0.5;

static void *buffer(int cuda, size_t bytes)
{
    void *p = NULL;

    if (cuda) {
        if (cudaMalloc(&p, bytes) != cudaSuccess) return NULL;
        cudaMemset(p, 0, bytes);
        cudaDeviceSynchronize();
        return p;
    }
    return calloc(1, bytes);
}

static void fill(int cuda, void *p, int byte, size_t bytes)
{
    if (cuda) {
        cudaMemset(p, byte, bytes);
        cudaDeviceSynchronize();
    } else {
        memset(p, byte, bytes);
    }
}

static int first_byte(int cuda, const void *p)
{
    unsigned char b = 0;

    if (cuda) {
        cudaMemcpy(&b, p, 1, cudaMemcpyDeviceToHost);
    } else {
        b = *(const unsigned char *)p;
    }
    return b;
}

int main(int argc, char **argv)
{
    int rank, nranks, i, iters = 1000, ocuda = 0, create = 0, ok = 1, rc;
    size_t min_bw = 1u << 20, max_bytes = 64u << 20, win_bytes, size;
    const char *csv_path = NULL;
    void *wbase = NULL, *owned = NULL, *origin, *result;
    MPI_Win win;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--min-bw-bytes") && i + 1 < argc)
            min_bw = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--row-seconds") && i + 1 < argc) row_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
        else if (!strcmp(argv[i], "--origin") && i + 1 < argc) ocuda = !strcmp(argv[++i], "cuda");
        else if (!strcmp(argv[i], "--flavor") && i + 1 < argc)
            create = !strcmp(argv[++i], "create");
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "gpu_window_bench: run with 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0 && csv_path != NULL) csv = fopen(csv_path, "a");
    if (max_bytes < (1u << 20)) max_bytes = 1u << 20;
    if (min_bw < 8) min_bw = 8;
    /* the bandwidth loops touch max(16 MiB, --max-bytes); the atomics use the last 64 bytes */
    win_bytes = (max_bytes > (16u << 20) ? max_bytes : 16u << 20) + 64;
    origin = buffer(ocuda, win_bytes);
    result = buffer(ocuda, win_bytes);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (create) {
        owned = wbase = buffer(1, win_bytes);
        rc = MPI_Win_create(wbase, (MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
        rc = MPI_Win_allocate((MPI_Aint)win_bytes, 1, info, MPI_COMM_WORLD, &wbase, &win);
        MPI_Info_free(&info);
    }
    if (rc != MPI_SUCCESS || origin == NULL || result == NULL) {
        if (rank == 0) row("error", 0, 0, "window creation failed");
        if (csv != NULL) fclose(csv);
        MPI_Finalize();
        return 0;
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* one checked put and get on known data */
    fill(1, wbase, 0, 64);
    fill(ocuda, origin, 0x5a, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        ok = MPI_Put(origin, 64, MPI_BYTE, 1, 0, 64, MPI_BYTE, win) == MPI_SUCCESS &&
             MPI_Win_flush(1, win) == MPI_SUCCESS &&
             MPI_Get(result, 64, MPI_BYTE, 1, 0, 64, MPI_BYTE, win) == MPI_SUCCESS &&
             MPI_Win_flush(1, win) == MPI_SUCCESS && first_byte(ocuda, result) == 0x5a;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    fill(ocuda, origin, 0, win_bytes); /* zeros: the accumulates add 0.0 */
    if (!ok) {
        if (rank == 0) row("error", 0, 0, "wrong data");
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        /* fetch_and_op / compare_and_swap operands live where the origin buffers do */
        int64_t *one = (int64_t *)((char *)origin + win_bytes - 64);
        int64_t *cmp = one + 1, *got = (int64_t *)((char *)result + win_bytes - 64);
        size_t mib = (size_t)1 << 20;
        int nd = (int)(mib / sizeof(double));

        if (ocuda) {
            const int64_t ops[2] = {1, 0};

            cudaMemcpy(one, ops, sizeof(ops), cudaMemcpyHostToDevice);
        } else {
            *one = 1;
            *cmp = 0;
        }
        row("put_flush", 8, op_us(iters, row_seconds, [&] {
                MPI_Put(origin, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("get_flush", 8, op_us(iters, row_seconds, [&] {
                MPI_Get(result, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("put_flush", mib, op_us(iters, row_seconds, [&] {
                MPI_Put(origin, (int)mib, MPI_BYTE, 1, 0, (int)mib, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("get_flush", mib, op_us(iters, row_seconds, [&] {
                MPI_Get(result, (int)mib, MPI_BYTE, 1, 0, (int)mib, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("acc_flush", 8, op_us(iters, row_seconds, [&] {
                MPI_Accumulate(origin, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE, MPI_SUM, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("acc_flush", mib, op_us(iters, row_seconds, [&] {
                MPI_Accumulate(origin, nd, MPI_DOUBLE, 1, 0, nd, MPI_DOUBLE, MPI_SUM, win);
                MPI_Win_flush(1, win);
            }), "us");
        row("fop_flush", 8, op_us(iters, row_seconds, [&] {
                MPI_Fetch_and_op(one, got, MPI_INT64_T, 1, (MPI_Aint)(win_bytes - 64), MPI_SUM,
                                 win);
                MPI_Win_flush(1, win);
            }), "us");
        row("cas_flush", 8, op_us(iters, row_seconds, [&] {
                MPI_Compare_and_swap(one, cmp, got, MPI_INT64_T, 1, (MPI_Aint)(win_bytes - 64),
                                     win);
                MPI_Win_flush(1, win);
            }), "us");
        /* bandwidth: op_bw's k operations of SIZE bytes then one flush */
        for (size = min_bw; size <= max_bytes; size *= 2) {
            int n = (int)size, c = (int)(size / sizeof(double));
            auto flush = [&] { MPI_Win_flush(1, win); };

            row("put_bw", size, op_bw(size, iters, row_seconds, [&](size_t j) {
                    MPI_Put((char *)origin + j * size, n, MPI_BYTE, 1, (MPI_Aint)(j * size), n,
                            MPI_BYTE, win);
                }, flush), "GB/s");
            row("get_bw", size, op_bw(size, iters, row_seconds, [&](size_t j) {
                    MPI_Get((char *)result + j * size, n, MPI_BYTE, 1, (MPI_Aint)(j * size), n,
                            MPI_BYTE, win);
                }, flush), "GB/s");
            if (size == max_bytes) {
                row("acc_bw", size, op_bw(size, iters, row_seconds, [&](size_t j) {
                        MPI_Accumulate((char *)origin + j * size, c, MPI_DOUBLE, 1,
                                       (MPI_Aint)(j * size), c, MPI_DOUBLE, MPI_SUM, win);
                    }, flush), "GB/s");
            }
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    if (owned != NULL) cudaFree(owned);
    if (ocuda) { cudaFree(origin); cudaFree(result); } else { free(origin); free(result); }
    if (csv != NULL) fclose(csv);
    MPI_Finalize();
    return 0;
}
