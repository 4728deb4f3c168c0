/*
 * nvshmem_peer.h: what the NVSHMEM peer benchmarks share (nvshmem_bench, nvshmem_stream_bench,
 * nvshmem_host_bench): the start of NVSHMEM on MPI's processes and the output row.
 */
#ifndef GPUIC_BENCH_NVSHMEM_PEER_H
#define GPUIC_BENCH_NVSHMEM_PEER_H

#include <cuda_runtime.h>
#include <stdio.h>

#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

/* Picks this rank's device (rank modulo the visible ones) and starts NVSHMEM with PE = MPI
 * rank, through a unique id that rank 0 makes and broadcasts over MPI_COMM_WORLD. */
static inline void nvshmem_peer_init(int rank, int nranks)
{
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    int ndev = 0;

    cudaGetDeviceCount(&ndev);
    cudaSetDevice(rank % (ndev > 0 ? ndev : 1));
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
}

/* One result: a line on stdout and, when @p csv is open, a CSV row
 * component,measure,size,value,unit (flushed, so a later crash keeps it). */
static inline void nvshmem_peer_row(FILE *csv, const char *component, const char *measure,
                                    size_t size, double value, const char *unit)
{
    printf("%-12s %-24s %10zu %12.3f %s\n", component, measure, size, value, unit);
    if (csv) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", component, measure, size, value, unit);
        fflush(csv);
    }
}

#endif
