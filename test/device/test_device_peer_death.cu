/*
 * A target that dies while a kernel puts to it and flushes: the device flush must return an
 * error class within a bounded time (osc_gpuic_timeout), not hang and not MPI_SUCCESS (the
 * proxy marks the entries it could not complete, and the wait that covers them reads the
 * marks), and so must the host's next flush to it.  Run by peer_death_device.sh at 2 ranks
 * on 2 emulated nodes (the target reached through the proxy and UCX) with a short timeout:
 *   both ranks make a GPU window (a host window where the UCX cannot register device memory),
 *   rank 0's kernel puts to rank 1 and flushes (must succeed), then rank 1 kills itself;
 *   rank 0's kernel puts 64 KiB pieces (zero copy) and 8-byte words to rank 1 and flushes.
 * Rank 0 prints "peer_death_device: rank 0 CALL: rc C after S s: PASS|FAIL" for the device
 * flush (from the kernel's launch) and for MPI_Win_flush, and leaves without MPI_Finalize (the collective teardown would
 * wait for the dead rank).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define PIECE (64 << 10)
#define PIECES 16
#define WIN_BYTES ((size_t)PIECE * PIECES + 4096)
#define MAX_SECONDS 20.0 /* generous: the timeout under test is a few seconds */

/* One thread: @p pieces puts of PIECE bytes and @p words 8-byte puts, then a flush; rc[0] the
 * first failing put's status (or MPI_SUCCESS), rc[1] the flush's. */
__global__ void put_flush(MPIX_Win_device win, const char *src, int pieces, int words, int *rc)
{
    int first = MPI_SUCCESS, r;

    for (int i = 0; i < pieces; ++i) {
        r = MPIX_Put_device(src + (size_t)i * PIECE, PIECE, 1, (MPI_Aint)i * PIECE, win);
        if (first == MPI_SUCCESS) first = r;
    }
    for (int i = 0; i < words; ++i) {
        r = MPIX_Put_device(src, 8, 1, (MPI_Aint)(PIECES * PIECE + 8 * (i % 64)), win);
        if (first == MPI_SUCCESS) first = r;
    }
    rc[0] = first;
    rc[1] = MPIX_Win_flush_device(1, win);
}

/* @p must_fail: the call must return an error class; else only within the bound. */
static int report(const char *call, int rc, double t0, int must_fail)
{
    double s = MPI_Wtime() - t0;
    int cls = MPI_SUCCESS, ok;

    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    ok = (cls != MPI_SUCCESS || !must_fail) && s < MAX_SECONDS;
    printf("peer_death_device: rank 0 %s: rc %d after %.1f s: %s\n", call, cls, s,
           ok ? "PASS" : "FAIL");
    fflush(stdout);
    return ok;
}

int main(int argc, char **argv)
{
    int rank, n, *rc = NULL, path = -1;
    void *base = NULL, *owned = NULL;
    char *src = NULL;
    MPI_Win win;
    MPIX_Win_device dwin;
    MPI_Info info;
    double t0;

    if (!device_test_init(&argc, &argv, "test_device_peer_death", &rank, &n)) {
        return 77;
    }
    if (n != 2) {
        if (rank == 0) printf("test_device_peer_death: needs 2 ranks: FAIL\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* a GPU window; a host window where window creation refuses device memory of other nodes */
    if (device_test_gpu_window(MPI_WIN_FLAVOR_ALLOCATE, WIN_BYTES, 1, &base, &owned, &win) !=
        MPI_SUCCESS) {
        MPI_Info_create(&info);
        CHECK(MPI_Win_allocate((MPI_Aint)WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win) ==
              MPI_SUCCESS);
        MPI_Info_free(&info);
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        if (rank == 0) printf("peer_death_device: host window\n");
    }
    CHECK(MPIX_Win_get_device_handle(win, &dwin) == MPI_SUCCESS);
    CHECK(MPIX_Win_gpuic_device_path(win, 1, &path) == MPI_SUCCESS);
    if (rank == 0) printf("peer_death_device: device path to rank 1: %d\n", path);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMalloc((void **)&src, (size_t)PIECE * PIECES));
    CUDA_CHECK(cudaMemset(src, 7, (size_t)PIECE * PIECES));
    CUDA_CHECK(cudaMallocManaged((void **)&rc, 2 * sizeof(int)));
    if (rank == 0) {
        put_flush<<<1, 1>>>(dwin, src, 2, 4, rc);
        CUDA_CHECK(cudaDeviceSynchronize());
        CHECK(rc[0] == MPI_SUCCESS && rc[1] == MPI_SUCCESS);
        printf("peer_death_device: rank 0 put + flush while rank 1 lives: rc %d %d\n", rc[0],
               rc[1]);
    }
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mpi_test_failures != 0) {
        return mpi_test_finish("test_device_peer_death");
    }
    if (rank == 1) {
        fflush(stdout);
        raise(SIGKILL);
    }
    sleep(1); /* rank 1 is gone: its connections closed */
    t0 = MPI_Wtime();
    put_flush<<<1, 1>>>(dwin, src, 4, 8, rc); /* fits the queue: only the flush waits */
    CUDA_CHECK(cudaDeviceSynchronize()); /* the kernel's end: its flush returned */
    printf("peer_death_device: rank 0 puts after the death: first rc %d\n", rc[0]);
    int ok = report("MPIX_Win_flush_device", rc[1], t0, 1);
    t0 = MPI_Wtime();
    ok &= report("MPI_Win_flush", MPI_Win_flush(1, win), t0, 1);
    fflush(stdout);
    _exit(ok && mpi_test_failures == 0 ? 0 : 1);
}
