/*
 * Asynchronous progress (osc_gpuic_async_progress): a target that computes outside MPI for
 * longer than osc_gpuic_timeout still serves passive-target calls from other nodes over a
 * transport that emulates RMA and atomics in software (tcp, where each needs the target's
 * worker to progress).  Rank 0 computes (no MPI call) for BUSY_S; every other rank meanwhile
 * takes an exclusive lock on it, puts, accumulates, fetch-and-ops, flushes, gets and unlocks,
 * then lock_all, put, flush and unlock_all, on an allocate window and on a create window.  The
 * harness runs it with osc_gpuic_timeout below BUSY_S: without the progress thread the first
 * lock would fail with MPI_ERR_OTHER.  Every call returns MPI_SUCCESS, every origin ends before
 * the target's computation does, and the data is right afterwards (busy_target.h).  Rank 0
 * also reports the CPU time its process used while idle in a sleep (the thread's backed-off
 * polling), for the README's figure.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "busy_target.h"

#define BUSY_S 6.0

static int rank, nranks;

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

/* Rank 0 computes for BUSY_S while every other rank makes its calls on @p win. */
static void run(MPI_Win win, int *mem, const char *what)
{
    double *ends = calloc(nranks, sizeof(double)), end = 0, busy_end = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = busy_now_s();
        volatile double x = 0;

        /* computation: no MPI call, short sleeps so an oversubscribed machine runs the rest */
        while (busy_now_s() - t0 < BUSY_S) {
            for (int i = 0; i < 10000; ++i) {
                x += i * 0.5;
            }
            usleep(1000);
        }
        busy_end = busy_now_s();
    } else {
        usleep(200000);
        end = busy_origin_calls(win, rank, nranks, what);
    }
    MPI_Gather(&end, 1, MPI_DOUBLE, ends, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        busy_check_ends(ends, nranks, busy_end, what);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        busy_check_target(mem, nranks, what);
        MPI_Win_unlock(0, win);
    }
    free(ends);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    int *mem, *owned;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    busy_host_window(rank, &mem, &win);
    run(win, mem, "allocate window");
    if (rank == 0) {
        double c0 = cpu_s();

        sleep(1); /* idle: only the progress thread's backed-off polling runs */
        printf("test_async_progress: %.1f ms of CPU time in 1 s idle\n",
               (cpu_s() - c0) * 1e3);
    }
    MPI_Win_free(&win);

    owned = calloc(BUSY_INTS, sizeof(int));
    CHECK(MPI_Win_create(owned, BUSY_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    run(win, owned, "create window");
    MPI_Win_free(&win);
    free(owned);
    return mpi_test_finish("test_async_progress");
}
