/*
 * regcount: the register cost of the device API.  Two kernels that do the same work, one of
 * them also calling MPIX_Put_device once; compile with -Xptxas -v and compare (see
 * run-device-bench.sh, which prints the two counts).
 */
#include "mpix_gpuic_device.cuh"

__global__ void saxpy_plain(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

/* the same 64 bytes copied by hand, for scale */
__global__ void saxpy_with_copy(float a, const float *x, float *y, int n, uint64_t *dst)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    if (i == 0) {
        for (int k = 0; k < 8; ++k) dst[k] = ((const uint64_t *)y)[k];
    }
}

__global__ void saxpy_with_put(float a, const float *x, float *y, int n, MPIX_Win_device win,
                               int peer)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    if (i == 0) MPIX_Put_device(y, 64, peer, 0, win);
}
