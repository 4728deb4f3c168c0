/*
 * device_test.h - what the CUDA tests share on top of test/mpi/mpi_test.h: a check of CUDA
 * runtime calls that counts a failure (and prints where) without stopping the test, and the
 * start every test makes (MPI, a device per rank, or a skip).
 */
#ifndef GPUIC_DEVICE_TEST_H
#define GPUIC_DEVICE_TEST_H

#include <cuda_runtime.h>
#include <stdio.h>

#include "../mpi/mpi_test.h"

/* A statement macro (do/while) so it reads as a call; it never returns from the caller. */
#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                    \
                    cudaGetErrorString(e_));                                                 \
            mpi_test_failures++;                                                             \
        }                                                                                    \
    } while (0)

/* What follows MPI's initialization in device_test_init() and device_test_init_thread(). */
static inline int device_test_start(const char *name, int *rank, int *nranks)
{
    int ndev = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (*rank == 0) printf("%s: no CUDA device: SKIP\n", name);
        MPI_Finalize();
        return 0;
    }
    CUDA_CHECK(cudaSetDevice(*rank % ndev));
    return 1;
}

/*
 * MPI_Init, this process's rank and size, and a device for it (its rank modulo the visible
 * devices).  Returns 0 where no device is visible, having printed "NAME: no CUDA device: SKIP"
 * (rank 0) and finalized MPI: the caller then exits with 77, the harness's code for a skip.
 */
static inline int device_test_init(int *argc, char ***argv, const char *name, int *rank,
                                   int *nranks)
{
    MPI_Init(argc, argv);
    return device_test_start(name, rank, nranks);
}

/* device_test_init() with MPI_Init_thread: *provided is the thread level MPI gives. */
static inline int device_test_init_thread(int *argc, char ***argv, int required,
                                          int *provided, const char *name, int *rank,
                                          int *nranks)
{
    MPI_Init_thread(argc, argv, required, provided);
    return device_test_start(name, rank, nranks);
}

#endif /* GPUIC_DEVICE_TEST_H */
