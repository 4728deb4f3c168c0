/*
 * gpuic_trace_calibrate.cuh - measures the offset between a GPU's %globaltimer and the host's
 * CLOCK_MONOTONIC, for CUDA sources that put device stamps on the host timeline
 * (gpuic_trace.h).  Header-only; include it from a .cu file compiled by nvcc.
 *
 * A one-thread kernel and the calling host thread exchange ping-pongs through mapped pinned
 * memory: the host stamps its request, the kernel stamps its answer with %globaltimer, the
 * host stamps the answer's arrival.  gpuic_trace_calibration_fit() turns the round trips into
 * an offset and its uncertainty.
 */
#ifndef GPUIC_TRACE_CALIBRATE_CUH
#define GPUIC_TRACE_CALIBRATE_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic_trace.h"

/* The kernel's half: answers request k with its own clock, k = 1 .. rounds. */
static __global__ void gpuic_trace_calibrate_kernel(volatile uint64_t *req,
                                                    volatile uint64_t *resp,
                                                    volatile uint64_t *dev_t, int rounds)
{
    for (uint64_t k = 1; k <= (uint64_t)rounds; ++k) {
        while (*req < k) {
        }
        dev_t[k - 1] = gpuic_trace_now();
        /* kernel -> host thread: the stamp is visible before the answer announcing it */
        __threadfence_system();
        *resp = k;
    }
}

/**
 * Calibrates the current device against the host with @p rounds ping-pongs (1000 or more;
 * each costs one GPU -> CPU -> GPU round trip).  Gives up after 5 s without an answer (a
 * kernel that could not start).  The device must be idle enough to run one extra block.
 * @return 1 with *cal filled, 0 on failure (a message on stderr).
 */
static inline int gpuic_trace_calibrate_cuda(int rounds, gpuic_trace_calibration_t *cal)
{
    gpuic_trace_pingpong_t *s = (gpuic_trace_pingpong_t *)calloc((size_t)rounds, sizeof(*s));
    volatile uint64_t *h_words = NULL, *d_words = NULL;
    int ok = 0;

    if (s == NULL || rounds <= 0) {
        free(s);
        return 0;
    }
    if (cudaHostAlloc((void **)&h_words, (2 + (size_t)rounds) * 8, cudaHostAllocMapped) !=
            cudaSuccess ||
        cudaHostGetDevicePointer((void **)&d_words, (void *)h_words, 0) != cudaSuccess) {
        fprintf(stderr, "gpuic trace: cannot map calibration memory\n");
        goto out;
    }
    memset((void *)h_words, 0, (2 + (size_t)rounds) * 8);
    gpuic_trace_calibrate_kernel<<<1, 1>>>(d_words, d_words + 1, d_words + 2, rounds);
    for (uint64_t k = 1; k <= (uint64_t)rounds; ++k) {
        s[k - 1].host_send = gpuic_trace_now();
        h_words[0] = k;
        while (h_words[1] < k) {
            if (gpuic_trace_now() - s[k - 1].host_send > 5000000000ull) {
                fprintf(stderr, "gpuic trace: calibration kernel does not answer (%s)\n",
                        cudaGetErrorString(cudaGetLastError()));
                goto out;
            }
        }
        s[k - 1].host_recv = gpuic_trace_now();
    }
    if (cudaDeviceSynchronize() != cudaSuccess) {
        goto out;
    }
    for (int k = 0; k < rounds; ++k) {
        s[k].device = h_words[2 + k];
    }
    ok = gpuic_trace_calibration_fit(s, (size_t)rounds, cal) == GPUIC_OK;
out:
    if (h_words != NULL) {
        cudaFreeHost((void *)h_words);
    }
    free(s);
    return ok;
}

#endif /* GPUIC_TRACE_CALIBRATE_CUH */
