/*
 * A target whose threads are all inside CUDA for longer than osc_gpuic_timeout (a kernel runs,
 * the host waits in cudaStreamSynchronize) still serves the passive-target calls of processes
 * on other nodes: exclusive lock, put, accumulate, fetch_and_op, get, unlock, then lock_all,
 * put, flush and unlock_all, on a host-memory window and on a GPU window, over a transport that
 * emulates RMA and atomics in software (tcp: the target's UCX worker must progress for each).
 * Rank 0 is the busy target: its device API is in use (a device handle of each window), so its
 * proxy thread runs and progresses the worker peers connect to.  The harness runs this with
 * osc_gpuic_timeout shorter than the busy time: an origin whose lock waited for the target's
 * own MPI calls would fail with MPI_ERR_OTHER there.  Every origin must be done before the
 * target's kernel ends, and every byte must be right afterwards (busy_target.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_test.h"
#include "mpix_gpuic.h"
#include "../mpi/busy_target.h"

#define BUSY_S 9.0 /* longer than the harness's osc_gpuic_timeout */

static int rank, nranks;

static __device__ uint64_t now_ns(void)
{
    uint64_t t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Spins for @p ns nanoseconds of the GPU's clock, then stores 1 into *done. */
__global__ void busy(uint64_t ns, volatile int *done)
{
    uint64_t t0 = now_ns();

    while (now_ns() - t0 < ns) {
        __nanosleep(1000);
    }
    *done = 1;
}

/* Rank 0 busy in CUDA for BUSY_S while every other rank makes its calls on @p win. */
static void run(MPI_Win win, int *mem, int gpu, const char *what)
{
    MPIX_Win_device h = {};
    double *ends = (double *)calloc(nranks, sizeof(double)), end = 0, busy_end = 0;
    int *done = NULL, host_done = 0;
    cudaStream_t s;

    /* the device API in use: the proxy thread runs on every rank with proxied peers */
    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUDA_CHECK(cudaMalloc(&done, sizeof(int)));
        CUDA_CHECK(cudaMemset(done, 0, sizeof(int)));
        CUDA_CHECK(cudaDeviceSynchronize());
        busy<<<1, 1, 0, s>>>((uint64_t)(BUSY_S * 1e9), done);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the kernel is launched: rank 0 makes no MPI call now */
    /* where each rank is, on stderr (unbuffered): a run killed at the harness's limit shows
     * which step it stopped in */
    fprintf(stderr, "[rank %d] %s: busy phase begins\n", rank, what);
    if (rank == 0) {
        CUDA_CHECK(cudaStreamSynchronize(s));
        busy_end = busy_now_s();
        CUDA_CHECK(cudaMemcpy(&host_done, done, sizeof(int), cudaMemcpyDeviceToHost));
        CHECK(host_done == 1);
        cudaFree(done);
        cudaStreamDestroy(s);
    } else {
        usleep(200000); /* well inside rank 0's wait */
        end = busy_origin_calls(win, rank, nranks, what);
    }
    fprintf(stderr, "[rank %d] %s: busy phase done\n", rank, what);
    MPI_Gather(&end, 1, MPI_DOUBLE, ends, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int *host = (int *)malloc(BUSY_INTS * sizeof(int));

        busy_check_ends(ends, nranks, busy_end, what);
        if (gpu) {
            CUDA_CHECK(cudaMemcpy(host, mem, BUSY_INTS * sizeof(int), cudaMemcpyDeviceToHost));
        } else {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            memcpy(host, mem, BUSY_INTS * sizeof(int));
            MPI_Win_unlock(0, win);
        }
        busy_check_target(host, nranks, what);
        free(host);
    }
    free(ends);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    void *mem, *owned;
    int rc, *host_mem;

    if (!device_test_init(&argc, &argv, "test_busy_target", &rank, &nranks)) {
        return 77;
    }
    busy_host_window(rank, &host_mem, &win);
    run(win, host_mem, 0, "host window");
    MPI_Win_free(&win);
    /* a GPU window (where UCX cannot register device memory for the other nodes, creation
     * is refused on every rank and this part is left out) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = device_test_gpu_window(MPI_WIN_FLAVOR_ALLOCATE, BUSY_INTS * sizeof(int), sizeof(int),
                                &mem, &owned, &win);
    if (rc == MPI_SUCCESS) {
        run(win, (int *)mem, 1, "GPU window");
        MPI_Win_free(&win);
    } else if (rank == 0) {
        printf("test_busy_target: GPU window across nodes refused (error %d): host window only\n",
               rc);
    }
    return mpi_test_finish("test_busy_target");
}
