/*
 * device_test.h - what the CUDA tests share on top of test/mpi/mpi_test.h: a check of CUDA
 * runtime calls that counts a failure (and prints where) without stopping the test.
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

#endif /* GPUIC_DEVICE_TEST_H */
