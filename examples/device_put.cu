/*
 * device_put: a CUDA kernel puts into its right neighbour's GPU window, twice.
 *
 *  1. put + flush: every rank's kernel puts N integers into the right neighbour's window and
 *     flushes; after the kernel, MPI_Win_flush_all and a barrier, each rank checks on the host
 *     that its window holds what the left neighbour put.
 *  2. put-with-signal: every rank's kernel puts another N integers together with a signal word,
 *     then waits for the signal from its left neighbour; the host checks the data and the
 *     signal.
 *
 * The window is allocated in GPU memory by gpuic itself (info mpi_assert_memory_alloc_kinds =
 * cuda:device).  Build and run (one GPU per rank, or several ranks on one GPU with MPS):
 *
 *   nvcc -arch=sm_90 device_put.cu -I<gpuic include dir> $(mpicc --showme:compile) \
 *        $(mpicc --showme:link) -lmpix_gpuic -o device_put
 *   mpirun -np 2 --mca osc gpuic ./device_put
 *
 * Prints "device_put: verified" and exits 0 when every check passed.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>
#include <mpix_gpuic.h>
#include <mpix_gpuic_device.cuh>

#define N 1024                                 /* integers per put */
#define OFF_PUT 0                              /* displacements, in bytes (disp_unit 1) */
#define OFF_SIGNALED (N * sizeof(int))
#define OFF_SIGNAL (2 * N * sizeof(int))      /* 8-byte aligned */
#define WIN_BYTES (OFF_SIGNAL + sizeof(uint64_t))

/* What rank @p writer puts at index @p i: easy to check, different for every writer. */
__host__ __device__ static int value_of(int writer, int i)
{
    return writer * 100000 + i;
}

/* 1. The whole block fills the source, then one put of N integers and a flush. */
__global__ void put_and_flush(MPIX_Win_device win, int me, int right, int *src, int *rc)
{
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        src[i] = value_of(me, i);
    }
    __syncthreads();
    /* all threads share the copy; each gets the same status */
    int r = MPIX_Put_device_block(src, N * sizeof(int), right, OFF_PUT, win);
    if (threadIdx.x == 0) {
        /* complete at the target: the data is there once the host ends its part */
        rc[0] = r != MPI_SUCCESS ? r : MPIX_Win_flush_device(right, win);
    }
}

/* 2. One thread puts with a signal (value 1) and then waits for its own signal from the left. */
__global__ void put_with_signal(MPIX_Win_device win, int me, int right, int *src, int *rc)
{
    uint64_t seen = 0;

    for (int i = 0; i < N; ++i) {
        src[i] = value_of(me, -i);
    }
    rc[1] = MPIX_Put_signal_device(src, N * sizeof(int), right, OFF_SIGNALED, OFF_SIGNAL, 1,
                                   MPIX_DEVICE_SIGNAL_SET, win);
    /* the left neighbour's data is visible once its signal is */
    rc[2] = MPIX_Signal_wait_until_device(OFF_SIGNAL, MPIX_DEVICE_CMP_EQ, 1, &seen, win);
}

int main(int argc, char **argv)
{
    int rank, nranks, ndev = 0, bad = 0, any_bad = 0;
    int rc[3] = {-1, -1, -1}, *d_src, *d_rc, host[N];
    uint64_t signal = 0;
    char *base;
    MPI_Info info;
    MPI_Win win;
    MPIX_Win_device handle;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) printf("device_put: no CUDA device, nothing to do\n");
        MPI_Finalize();
        return 0;
    }
    cudaSetDevice(rank % ndev); /* before the window: its memory goes on this GPU */
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;

    /* A window in GPU memory, zeroed before anyone can put into it. */
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    cudaMemset(base, 0, WIN_BYTES);
    cudaDeviceSynchronize();
    if (MPIX_Win_get_device_handle(win, &handle) != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] no device handle (is the window served by gpuic?)\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cudaMalloc(&d_src, 2 * N * sizeof(int));
    cudaMalloc(&d_rc, sizeof(rc));
    cudaMemcpy(d_rc, rc, sizeof(rc), cudaMemcpyHostToDevice);

    /* Device calls run inside a passive-target epoch the host opens and closes. */
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD); /* every window is zeroed */

    /* 1. put + flush */
    put_and_flush<<<1, 128>>>(handle, rank, right, d_src, d_rc);
    cudaDeviceSynchronize();
    bad |= MPI_Win_flush_all(win) != MPI_SUCCESS; /* also reports errors device calls recorded */
    MPI_Barrier(MPI_COMM_WORLD);                  /* every rank's put is complete */
    cudaMemcpy(host, base + OFF_PUT, sizeof(host), cudaMemcpyDeviceToHost);
    for (int i = 0; i < N; ++i) bad |= host[i] != value_of(left, i);

    /* 2. put-with-signal: no barrier needed, the signal says when the data is there */
    put_with_signal<<<1, 1>>>(handle, rank, right, d_src + N, d_rc);
    cudaDeviceSynchronize();
    bad |= MPI_Win_flush_all(win) != MPI_SUCCESS;
    cudaMemcpy(host, base + OFF_SIGNALED, sizeof(host), cudaMemcpyDeviceToHost);
    cudaMemcpy(&signal, base + OFF_SIGNAL, sizeof(signal), cudaMemcpyDeviceToHost);
    for (int i = 0; i < N; ++i) bad |= host[i] != value_of(left, -i);
    bad |= signal != 1;

    cudaMemcpy(rc, d_rc, sizeof(rc), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 3; ++i) bad |= rc[i] != MPI_SUCCESS;
    bad |= cudaGetLastError() != cudaSuccess;
    MPI_Barrier(MPI_COMM_WORLD); /* nobody's window goes away while a neighbour still reads */
    MPI_Win_unlock_all(win);

    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("device_put: %d ranks, %d integers put and flushed, %d put with a signal: %s\n",
               nranks, N, N, any_bad ? "FAILED" : "verified");
    }
    cudaFree(d_src);
    cudaFree(d_rc);
    MPI_Win_free(&win);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
