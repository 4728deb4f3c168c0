/*
 * gpu_window_bench: host MPI RMA calls on a window in device memory (CUDA-aware one-sided
 * codes, OSU style), under whichever osc component the run selects.  Two ranks; rank 0
 * drives under MPI_Win_lock_all, rank 1's window is the target.
 *
 *   mpirun -np 2 --mca osc NAME gpu_window_bench [--origin host|cuda] [--flavor allocate|create]
 *                                                 [--iters N] [--max-bytes N] [--csv FILE]
 *                                                 [--label NAME]
 *
 * The window: MPI_Win_allocate with mpi_assert_memory_alloc_kinds=cuda:device (allocate), or
 * MPI_Win_create on cudaMalloc memory (create).  Rows, in device_bench's format:
 *   put_flush 8        MPI_Put + MPI_Win_flush (us)
 *   get_flush 8        MPI_Get + MPI_Win_flush (us)
 *   acc_flush SIZE     MPI_Accumulate (MPI_SUM, MPI_DOUBLE) + flush, 8 B and 1 MiB (us)
 *   fop_flush 8        MPI_Fetch_and_op (MPI_SUM, int64) + flush (us)
 *   cas_flush 8        MPI_Compare_and_swap (int64) + flush (us)
 *   put_bw SIZE        16 puts then one flush (GB/s), 8 B .. --max-bytes by powers of 4
 *   get_bw SIZE        16 gets then one flush (GB/s)
 * Before timing, one put and one get are checked on known data; a component that cannot
 * create the window or moves wrong data gets one row "error" and no timings.
 */
#include <mpi.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *csv;
static const char *label = "gpuic";

static void row(const char *measure, size_t size, double value, const char *unit)
{
    printf("%-8s %-14s %10zu %12.3f %s\n", label, measure, size, value, unit);
    if (csv != NULL) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", label, measure, size, value, unit);
    }
}

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
    size_t max_bytes = 16u << 20, win_bytes, size;
    const char *csv_path = NULL;
    void *wbase = NULL, *owned = NULL, *origin, *result;
    MPI_Win win;
    MPI_Info info;
    double t;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
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
    win_bytes = max_bytes * 16;
    origin = buffer(ocuda, max_bytes * 16);
    result = buffer(ocuda, max_bytes * 16);
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
    if (!ok) {
        if (rank == 0) row("error", 0, 0, "wrong data");
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        int64_t one = 1, cmp = 0, got = 0;

#define TIME_LOOP(measure, bytes, body)                                                    \
    do {                                                                                   \
        for (i = 0; i < iters / 10 + 1; ++i) { body; }                                     \
        t = MPI_Wtime();                                                                   \
        for (i = 0; i < iters; ++i) { body; }                                              \
        row(measure, bytes, (MPI_Wtime() - t) / iters * 1e6, "us");                        \
    } while (0)
        TIME_LOOP("put_flush", 8, MPI_Put(origin, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                  MPI_Win_flush(1, win));
        TIME_LOOP("get_flush", 8, MPI_Get(result, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                  MPI_Win_flush(1, win));
        TIME_LOOP("acc_flush", 8, MPI_Accumulate(origin, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE,
                                                 MPI_SUM, win); MPI_Win_flush(1, win));
        {
            int n = (1 << 20) / 8, saved = iters;

            iters = iters / 10 + 1;
            TIME_LOOP("acc_flush", 1u << 20, MPI_Accumulate(origin, n, MPI_DOUBLE, 1, 0, n,
                                                            MPI_DOUBLE, MPI_SUM, win);
                      MPI_Win_flush(1, win));
            iters = saved;
        }
        TIME_LOOP("fop_flush", 8, MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 1, 64, MPI_SUM, win);
                  MPI_Win_flush(1, win));
        TIME_LOOP("cas_flush", 8, MPI_Compare_and_swap(&one, &cmp, &got, MPI_INT64_T, 1, 64, win);
                  MPI_Win_flush(1, win));
        for (size = 8; size <= max_bytes; size *= 4) {
            int reps = size >= (1u << 20) ? 10 : 100, r, k;

            t = MPI_Wtime();
            for (r = 0; r < reps; ++r) {
                for (k = 0; k < 16; ++k) {
                    MPI_Put((char *)origin + k * size, (int)size, MPI_BYTE, 1, (MPI_Aint)(k * size),
                            (int)size, MPI_BYTE, win);
                }
                MPI_Win_flush(1, win);
            }
            row("put_bw", size, (double)size * 16 * reps / (MPI_Wtime() - t) / 1e9, "GB/s");
            t = MPI_Wtime();
            for (r = 0; r < reps; ++r) {
                for (k = 0; k < 16; ++k) {
                    MPI_Get((char *)result + k * size, (int)size, MPI_BYTE, 1, (MPI_Aint)(k * size),
                            (int)size, MPI_BYTE, win);
                }
                MPI_Win_flush(1, win);
            }
            row("get_bw", size, (double)size * 16 * reps / (MPI_Wtime() - t) / 1e9, "GB/s");
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
