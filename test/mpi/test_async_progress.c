/*
 * Asynchronous progress (osc_gpuic_async_progress): a target that computes outside MPI for
 * longer than osc_gpuic_timeout still serves passive-target calls from other nodes over a
 * transport that emulates RMA and atomics in software (tcp, where each needs the target's
 * worker to progress).  Rank 0 computes (no MPI call) for BUSY_S; every other rank meanwhile
 * takes an exclusive lock on it, puts, accumulates, fetch-and-ops, flushes, gets and unlocks,
 * then lock_all, put, flush and unlock_all, on an allocate window and on a create window.  The
 * harness runs it with osc_gpuic_timeout below BUSY_S: without the progress thread the first
 * lock would fail with MPI_ERR_OTHER.  Every call returns MPI_SUCCESS, every origin ends before
 * the target's computation does (one machine's monotonic clock: the emulated nodes are one
 * machine), and the data is right afterwards.  Rank 0 also reports the CPU time its process
 * used while idle in a sleep (the thread's backed-off polling), for the README's figure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test.h"

#define INTS 1024
#define SUM_AT 1000
#define FOP_AT 1001
#define SLOT 8
#define BUSY_S 6.0

static int rank, nranks;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int value_of(int origin, int i)
{
    return origin * 1000 + i + 1;
}

/* One origin's calls on rank 0's window; returns when they ended (now_s()). */
static double origin_calls(MPI_Win win, const char *what)
{
    int put[SLOT], got[SLOT], second[SLOT], one = 1, old = -1, r;

    for (int i = 0; i < SLOT; ++i) {
        put[i] = value_of(rank, i);
        second[i] = -value_of(rank, i);
    }
    r = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    if (r != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] %s: MPI_Win_lock on the computing target: error %d\n", rank,
                what, r);
    }
    CHECK(r == MPI_SUCCESS);
    CHECK(MPI_Put(put, SLOT, MPI_INT, 0, rank * SLOT, SLOT, MPI_INT, win) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(&rank, 1, MPI_INT, 0, SUM_AT, 1, MPI_INT, MPI_SUM, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, FOP_AT, MPI_SUM, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    CHECK(MPI_Get(got, SLOT, MPI_INT, 0, rank * SLOT, SLOT, MPI_INT, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    CHECK(memcmp(got, put, sizeof(put)) == 0);
    CHECK(old >= 0 && old < nranks - 1);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(second, SLOT, MPI_INT, 0, INTS / 2 + rank * SLOT, SLOT, MPI_INT, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    return now_s();
}

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

/* Rank 0 computes for BUSY_S while every other rank makes its calls on @p win. */
static void run(MPI_Win win, int *mem, const char *what)
{
    double ends[256] = {0}, end = 0, busy_end = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = now_s();
        volatile double x = 0;

        /* computation: no MPI call, short sleeps so an oversubscribed machine runs the rest */
        while (now_s() - t0 < BUSY_S) {
            for (int i = 0; i < 10000; ++i) {
                x += i * 0.5;
            }
            usleep(1000);
        }
        busy_end = now_s();
    } else {
        usleep(200000);
        end = origin_calls(win, what);
    }
    MPI_Gather(&end, 1, MPI_DOUBLE, ends, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int o = 1; o < nranks && o < 256; ++o) {
            if (ends[o] > busy_end) {
                fprintf(stderr, "%s: rank %d ended its calls %.2f s after the target's "
                        "computation (served only once the target called MPI)\n", what, o,
                        ends[o] - busy_end);
            }
            CHECK(ends[o] <= busy_end);
        }
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        check_target(mem, what);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    int *mem, *owned;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    CHECK(MPI_Win_allocate(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                           &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(mem, 0, INTS * sizeof(int));
    MPI_Win_unlock(rank, win);
    run(win, mem, "allocate window");
    if (rank == 0) {
        double c0 = cpu_s();

        sleep(1); /* idle: only the progress thread's backed-off polling runs */
        printf("test_async_progress: %.1f ms of CPU time in 1 s idle\n",
               (cpu_s() - c0) * 1e3);
    }
    MPI_Win_free(&win);

    owned = calloc(INTS, sizeof(int));
    CHECK(MPI_Win_create(owned, INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                         &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    run(win, owned, "create window");
    MPI_Win_free(&win);
    free(owned);
    return mpi_test_finish("test_async_progress");
}
