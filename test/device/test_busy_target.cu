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
 * target's kernel ends, and every byte must be right afterwards.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device_test.h"
#include "mpix_gpuic.h"

#define INTS 1024
#define SUM_AT 1000   /* accumulated by every origin */
#define FOP_AT 1001   /* fetch-and-op'ed by every origin */
#define SLOT 8        /* ints each origin puts, at rank * SLOT */
#define BUSY_S 9.0    /* longer than the harness's osc_gpuic_timeout */

static int rank, nranks;

/* Seconds on the machine's monotonic clock, which every process of one machine shares (the
 * emulated nodes are one machine); MPI_Wtime may count from each process's own origin. */
static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static int value_of(int origin, int i)
{
    return origin * 1000 + i + 1;
}

/* Says which call of an origin took more than a second (the target's wait it waited for). */
static double step_t0;
static void step(const char *what, const char *call)
{
    double now = now_s();

    if (now - step_t0 > 1.0) {
        fprintf(stderr, "[rank %d] %s: %s took %.2f s\n", rank, what, call, now - step_t0);
    }
    step_t0 = now;
}

/* One origin's calls on rank 0's window; returns the time they ended (now_s()). */
static double origin_calls(MPI_Win win, const char *what)
{
    int put[SLOT], got[SLOT], one = 1, old = -1, r;
    int lock_all_put[SLOT];

    for (int i = 0; i < SLOT; ++i) {
        put[i] = value_of(rank, i);
        lock_all_put[i] = -value_of(rank, i);
    }
    step_t0 = now_s();
    r = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    if (r != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] %s: MPI_Win_lock on the busy target: error %d\n", rank, what,
                r);
    }
    CHECK(r == MPI_SUCCESS);
    step(what, "MPI_Win_lock");
    CHECK(MPI_Put(put, SLOT, MPI_INT, 0, rank * SLOT, SLOT, MPI_INT, win) == MPI_SUCCESS);
    step(what, "MPI_Put");
    CHECK(MPI_Accumulate(&rank, 1, MPI_INT, 0, SUM_AT, 1, MPI_INT, MPI_SUM, win) ==
          MPI_SUCCESS);
    step(what, "MPI_Accumulate");
    CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, FOP_AT, MPI_SUM, win) == MPI_SUCCESS);
    step(what, "MPI_Fetch_and_op");
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    step(what, "MPI_Win_flush");
    CHECK(MPI_Get(got, SLOT, MPI_INT, 0, rank * SLOT, SLOT, MPI_INT, win) == MPI_SUCCESS);
    step(what, "MPI_Get");
    CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    step(what, "MPI_Win_unlock");
    CHECK(memcmp(got, put, sizeof(put)) == 0);
    CHECK(old >= 0 && old < nranks - 1);
    /* the shared lock of every target, and a put of the slot's second half */
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    step(what, "MPI_Win_lock_all");
    CHECK(MPI_Put(lock_all_put, SLOT, MPI_INT, 0, INTS / 2 + rank * SLOT, SLOT, MPI_INT, win) ==
          MPI_SUCCESS);
    step(what, "MPI_Put (lock_all)");
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    step(what, "MPI_Win_flush (lock_all)");
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    step(what, "MPI_Win_unlock_all");
    return now_s();
}

/* The window's contents once every origin is done (rank 0 reads them). */
static void check_target(const int *mem, const char *what)
{
    int sum = 0, bad = 0;

    for (int o = 1; o < nranks; ++o) {
        sum += o;
        for (int i = 0; i < SLOT; ++i) {
            bad += mem[o * SLOT + i] != value_of(o, i);
            bad += mem[INTS / 2 + o * SLOT + i] != -value_of(o, i);
        }
    }
    if (bad != 0 || mem[SUM_AT] != sum || mem[FOP_AT] != nranks - 1) {
        fprintf(stderr, "%s: %d wrong slot elements, sum %d (expected %d), fetch-and-op %d "
                "(expected %d)\n", what, bad, mem[SUM_AT], sum, mem[FOP_AT], nranks - 1);
    }
    CHECK(bad == 0 && mem[SUM_AT] == sum && mem[FOP_AT] == nranks - 1);
}

/* Rank 0 busy in CUDA for BUSY_S while every other rank makes its calls on @p win. */
static void run(MPI_Win win, int *mem, int gpu, const char *what)
{
    MPIX_Win_device h = {};
    double ends[64] = {0}, end = 0, busy_end = 0;
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
    if (rank == 0) {
        CUDA_CHECK(cudaStreamSynchronize(s));
        busy_end = now_s();
        CUDA_CHECK(cudaMemcpy(&host_done, done, sizeof(int), cudaMemcpyDeviceToHost));
        CHECK(host_done == 1);
        cudaFree(done);
        cudaStreamDestroy(s);
    } else {
        usleep(200000); /* well inside rank 0's wait */
        end = origin_calls(win, what);
    }
    MPI_Gather(&end, 1, MPI_DOUBLE, ends, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int *host = (int *)malloc(INTS * sizeof(int));

        for (int o = 1; o < nranks && o < 64; ++o) {
            if (ends[o] > busy_end) {
                fprintf(stderr, "%s: rank %d ended its calls %.2f s after the target's kernel "
                        "(served only once the target called MPI)\n", what, o,
                        ends[o] - busy_end);
            }
            CHECK(ends[o] <= busy_end);
        }
        if (gpu) {
            CUDA_CHECK(cudaMemcpy(host, mem, INTS * sizeof(int), cudaMemcpyDeviceToHost));
        } else {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            memcpy(host, mem, INTS * sizeof(int));
            MPI_Win_unlock(0, win);
        }
        check_target(host, what);
        free(host);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    void *mem, *owned;
    int rc;

    if (!device_test_init(&argc, &argv, "test_busy_target", &rank, &nranks)) {
        return 77;
    }
    /* a host-memory window */
    CHECK(MPI_Win_allocate(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                           &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(mem, 0, INTS * sizeof(int));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    run(win, (int *)mem, 0, "host window");
    MPI_Win_free(&win);
    /* a GPU window (where UCX cannot register device memory for the other nodes, creation
     * is refused on every rank and this part is left out) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = device_test_gpu_window(MPI_WIN_FLAVOR_ALLOCATE, INTS * sizeof(int), sizeof(int), &mem,
                                &owned, &win);
    if (rc == MPI_SUCCESS) {
        run(win, (int *)mem, 1, "GPU window");
        MPI_Win_free(&win);
    } else if (rank == 0) {
        printf("test_busy_target: GPU window across nodes refused (error %d): host window only\n",
               rc);
    }
    return mpi_test_finish("test_busy_target");
}
