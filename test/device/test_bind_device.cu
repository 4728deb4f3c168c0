/*
 * Which GPU each rank runs on (GPUIC_TEST_BIND_MODE selects how the device is chosen):
 *   auto     no CUDA call before the first GPU window: gpuic picks the node-local rank modulo
 *            the visible devices, or osc_gpuic_device when set;
 *   mpix     MPIX_Gpuic_bind_device() right after MPI_Init: the same rule, and its answer;
 *   program  the program calls cudaSetDevice() itself (in reverse order): gpuic keeps that
 *            choice whatever osc_gpuic_device says.
 * Every rank checks that its window memory, the CUDA runtime's current device and its device
 * handle agree on the expected device, then puts one word into its right neighbour's window
 * from a kernel (across GPUs where the ranks are on different ones) and checks what its left
 * neighbour put.  Rank lines "bind: rank R local L device D uuid GPU-..." let
 * bind_device.sh match ordinals with physical GPUs (CUDA_VISIBLE_DEVICES reordering).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/mpi_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define WIN_BYTES 4096

__global__ void put_word(MPIX_Win_device win, int right, const int *src, int *rc)
{
    int r = MPIX_Put_device(src, sizeof(int), right, 0, win);
    *rc = r != MPI_SUCCESS ? r : MPIX_Win_flush_device(right, win);
}

/* nvidia-smi's spelling of a GPU's UUID. */
static void uuid_string(const cudaUUID_t *u, char *out)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    int n = sprintf(out, "GPU-");
    for (int i = 0; i < 16; ++i) {
        n += sprintf(out + n, "%02x%s", b[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
    }
}

int main(int argc, char **argv)
{
    const char *mode = getenv("GPUIC_TEST_BIND_MODE");
    const char *env = getenv("OMPI_MCA_osc_gpuic_device");
    int requested = env != NULL && *env != '\0' ? atoi(env) : -1;
    int rank, nranks, local_rank, ndev = 0, expected, current = -1, bound = -1, rc_h = -1;
    int *d_src, *d_rc, got = -1, one;
    char *base = NULL, uuid[64] = "?";
    MPI_Comm node;
    MPI_Info info;
    MPI_Win win;
    MPIX_Win_device h = {};
    cudaPointerAttributes attr;
    cudaDeviceProp prop;

    mode = mode != NULL ? mode : "auto";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    /* counting devices makes no context current */
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) printf("test_bind_device: no GPU, skipped\n");
        MPI_Finalize();
        return 77;
    }
    expected = requested >= 0 ? requested : local_rank % ndev;
    if (strcmp(mode, "program") == 0) {
        expected = ndev - 1 - local_rank % ndev;
        CHECK(cudaSetDevice(expected) == cudaSuccess);
    } else if (strcmp(mode, "mpix") == 0) {
        CHECK(MPIX_Gpuic_bind_device(MPI_COMM_WORLD, &bound) == MPI_SUCCESS);
        CHECK(bound == expected);
    }

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    CHECK(MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Info_free(&info);

    /* the runtime adopts the context gpuic made current */
    CHECK(cudaGetDevice(&current) == cudaSuccess && current == expected);
    CHECK(cudaPointerGetAttributes(&attr, base) == cudaSuccess &&
          attr.type == cudaMemoryTypeDevice && attr.device == expected);
    if (cudaGetDeviceProperties(&prop, current) == cudaSuccess) {
        uuid_string(&prop.uuid, uuid);
    }
    printf("bind: rank %d local %d mode %s device %d uuid %s\n", rank, local_rank, mode,
           current, uuid);
    fflush(stdout);

    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CHECK(cudaMemset(base, 0xff, sizeof(int)) == cudaSuccess);
    CHECK(cudaMalloc(&d_src, sizeof(int)) == cudaSuccess);
    CHECK(cudaMalloc(&d_rc, sizeof(int)) == cudaSuccess);
    one = 1000 + rank;
    CHECK(cudaMemcpy(d_src, &one, sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    put_word<<<1, 1>>>(h, (rank + 1) % nranks, d_src, d_rc);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(cudaMemcpy(&rc_h, d_rc, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(rc_h == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(cudaMemcpy(&got, base, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(got == 1000 + (rank + nranks - 1) % nranks);

    cudaFree(d_src);
    cudaFree(d_rc);
    MPI_Win_free(&win);
    return mpi_test_finish("test_bind_device");
}
