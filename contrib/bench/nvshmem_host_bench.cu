/*
 * nvshmem_host_bench: NVSHMEM's host-initiated API on symmetric GPU memory, the peer of
 * gpu_window_bench (host MPI calls on a GPU window) with the same measures and output format,
 * so the two run side by side (contrib/bench/run-cuda-aware-bench.sh).  Two PEs bootstrapped
 * over MPI (unique id); PE 0 drives, PE 1's heap is the target; source and destination are
 * both symmetric (device) memory.
 *
 *   nvshmem_host_bench [--iters N] [--min-bw-bytes N] [--max-bytes N] [--row-seconds S]
 *                      [--csv FILE] [--atomics]
 *   nvcc -arch=sm_90 -rdc=true -I$NVSHMEM/include nvshmem_host_bench.cu -L$NVSHMEM/lib \
 *        -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link)
 *
 * Rows, component "nvshmem_host":
 *   put_flush 8, 1 MiB  nvshmem_putmem + nvshmem_quiet (us)
 *   get_flush 8, 1 MiB  nvshmem_getmem (blocking) (us)
 *   put_bw SIZE         k nvshmem_putmem_nbi of SIZE then nvshmem_quiet, k*SIZE = 16 MiB or
 *                       SIZE (at most 16) (GB/s), --min-bw-bytes (1 MiB) .. --max-bytes (64 MiB)
 *   get_bw SIZE         the same with nvshmem_getmem_nbi (GB/s)
 * With --atomics, only the host-called atomics (a separate run, since an install whose
 * transport lacks them may abort the program):
 *   fop_flush 8         nvshmem_int64_atomic_fetch_add from the host (us)
 *   cas_flush 8         nvshmem_int64_atomic_compare_swap from the host (us)
 * Each is first checked to change the peer's counter as it should; one that does not gets a
 * row with no figure (NA) and the reason.
 * Built with -DNVSHMEM_HOST_BENCH_NO_ATOMICS (an install whose host library does not link
 * them), --atomics prints those two rows with no figure and the reason.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_peer.h"
#include "op_time.h"

static int rank;
static FILE *csv;

static void row(const char *measure, size_t size, double value, const char *unit)
{
    if (rank == 0) nvshmem_peer_row(csv, "nvshmem_host", measure, size, value, unit);
}

/* A row with no figure: the CSV's value is NA and its unit column says why. */
static void row_none(const char *measure, size_t size, const char *why)
{
    if (rank != 0) return;
    printf("%-12s %-24s %10zu %12s %s\n", "nvshmem_host", measure, size, "-", why);
    if (csv) {
        fprintf(csv, "nvshmem_host,%s,%zu,NA,%s\n", measure, size, why);
        fflush(csv);
    }
}

int main(int argc, char **argv)
{
    int nranks, iters = 1000, atomics = 0, peer, i;
    size_t min_bw = 1u << 20, max_bytes = 64u << 20, region, size, mib = 1u << 20;
    double row_seconds = 0.5;
    const char *csv_path = NULL;
    char *dst, *src;
    int64_t *counter;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else if (!strcmp(argv[i], "--min-bw-bytes") && i + 1 < argc)
            min_bw = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--row-seconds") && i + 1 < argc) row_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--atomics")) atomics = 1;
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "nvshmem_host_bench: run with 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    if (max_bytes < mib) max_bytes = mib;
    if (min_bw < 8) min_bw = 8;
    /* the bandwidth loops touch max(16 MiB, --max-bytes) of each of source and destination */
    region = max_bytes > (16u << 20) ? max_bytes : 16u << 20;
    nvshmem_peer_init(rank, nranks);
    if (rank == 0 && csv_path) csv = fopen(csv_path, "a");
    peer = 1 - rank;

    dst = (char *)nvshmem_malloc(region);
    src = (char *)nvshmem_malloc(region);
    counter = (int64_t *)nvshmem_malloc(64);
    if (dst == NULL || src == NULL || counter == NULL) {
        row_none("error", 0, "nvshmem_malloc failed (NVSHMEM_SYMMETRIC_SIZE too small?)");
        nvshmem_global_exit(1);
    }
    cudaMemset(dst, 0, region);
    cudaMemset(src, 1, region);
    cudaMemset(counter, 0, 64);
    cudaDeviceSynchronize();
    nvshmem_barrier_all();

    if (rank == 0 && atomics) {
#ifndef NVSHMEM_HOST_BENCH_NO_ATOMICS
        int64_t sink = 0, a, b, c, now = -1;

        /* an install may link the host atomics yet leave them unimplemented (an error
         * message, then a return that did nothing): each is checked on the peer's counter
         * before it is timed */
        a = nvshmem_int64_atomic_fetch_add(counter, 1, peer);
        b = nvshmem_int64_atomic_fetch_add(counter, 1, peer);
        nvshmem_getmem(src, counter, sizeof(now), peer);
        cudaMemcpy(&now, src, sizeof(now), cudaMemcpyDeviceToHost);
        if (a == 0 && b == 1 && now == 2) {
            row("fop_flush", 8, op_us(iters, row_seconds, [&] {
                    sink += nvshmem_int64_atomic_fetch_add(counter, 1, peer);
                }), "us");
        } else {
            row_none("fop_flush", 8, "host-called nvshmem_int64_atomic_fetch_add links but "
                                     "does not act (not implemented in this install)");
        }
        now = 7;
        cudaMemcpy(src, &now, sizeof(now), cudaMemcpyHostToDevice);
        nvshmem_putmem(counter, src, sizeof(now), peer);
        nvshmem_quiet();
        c = nvshmem_int64_atomic_compare_swap(counter, 7, 9, peer);
        now = -1;
        nvshmem_getmem(src, counter, sizeof(now), peer);
        cudaMemcpy(&now, src, sizeof(now), cudaMemcpyDeviceToHost);
        if (c == 7 && now == 9) {
            row("cas_flush", 8, op_us(iters, row_seconds, [&] {
                    sink += nvshmem_int64_atomic_compare_swap(counter, 0, 1, peer);
                }), "us");
        } else {
            row_none("cas_flush", 8, "host-called nvshmem_int64_atomic_compare_swap links but "
                                     "does not act (not implemented in this install)");
        }
        if (sink == -1) printf("\n"); /* keeps the fetched values used */
#else
        row_none("fop_flush", 8, "host-called nvshmem_int64_atomic_fetch_add does not link");
        row_none("cas_flush", 8, "host-called nvshmem_int64_atomic_compare_swap does not link");
#endif
    } else if (rank == 0) {
        row("put_flush", 8, op_us(iters, row_seconds, [&] {
                nvshmem_putmem(dst, src, 8, peer);
                nvshmem_quiet();
            }), "us");
        row("get_flush", 8, op_us(iters, row_seconds, [&] {
                nvshmem_getmem(src, dst, 8, peer);
            }), "us");
        row("put_flush", mib, op_us(iters, row_seconds, [&] {
                nvshmem_putmem(dst, src, mib, peer);
                nvshmem_quiet();
            }), "us");
        row("get_flush", mib, op_us(iters, row_seconds, [&] {
                nvshmem_getmem(src, dst, mib, peer);
            }), "us");
        for (size = min_bw; size <= max_bytes; size *= 2) {
            row("put_bw", size, op_bw(size, iters, row_seconds, [&](size_t j) {
                    nvshmem_putmem_nbi(dst + j * size, src + j * size, size, peer);
                }, [] { nvshmem_quiet(); }), "GB/s");
            row("get_bw", size, op_bw(size, iters, row_seconds, [&](size_t j) {
                    nvshmem_getmem_nbi(src + j * size, dst + j * size, size, peer);
                }, [] { nvshmem_quiet(); }), "GB/s");
        }
    }
    nvshmem_barrier_all();
    nvshmem_free(counter);
    nvshmem_free(src);
    nvshmem_free(dst);
    if (csv) fclose(csv);
    nvshmem_finalize();
    MPI_Finalize();
    return 0;
}
