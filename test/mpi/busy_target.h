/*
 * busy_target.h - what the tests of a target busy outside MPI share (test_async_progress.c,
 * test/device/test_busy_target.cu): the passive-target calls every origin makes on rank 0's
 * window while rank 0 is busy, the check of the window afterwards, and a clock all processes
 * of one machine share.
 *
 * Window layout (ints): origin o puts SLOT values at o * SLOT, and their negations at
 * BUSY_INTS / 2 + o * SLOT; every origin adds its rank at BUSY_SUM_AT and 1 at BUSY_FOP_AT.
 */
#ifndef GPUIC_TEST_BUSY_TARGET_H
#define GPUIC_TEST_BUSY_TARGET_H

#include <string.h>
#include <time.h>

#include "mpi_test.h"

#define BUSY_INTS 1024
#define BUSY_SUM_AT 1000
#define BUSY_FOP_AT 1001
#define BUSY_SLOT 8

/* Seconds on the machine's monotonic clock, which every process of one machine shares (the
 * emulated nodes are one machine); Open MPI's MPI_Wtime counts from each process's first call. */
static inline double busy_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int busy_value_of(int origin, int i)
{
    return origin * 1000 + i + 1;
}

/* Says which call took more than a second (it waited for the target). */
static inline void busy_step(int rank, const char *what, const char *call, double *t)
{
    double now = busy_now_s();

    if (now - *t > 1.0) {
        fprintf(stderr, "[rank %d] %s: %s took %.2f s\n", rank, what, call, now - *t);
    }
    *t = now;
}

/* Origin @p rank's calls on rank 0's window (of @p nranks processes): exclusive lock, put,
 * accumulate, fetch-and-op, flush, get, unlock, then lock_all, put, flush, unlock_all, each
 * checked.  Returns when they ended (busy_now_s()). */
static inline double busy_origin_calls(MPI_Win win, int rank, int nranks, const char *what)
{
    int put[BUSY_SLOT], got[BUSY_SLOT], second[BUSY_SLOT], one = 1, old = -1, r;
    double t = busy_now_s();

    for (int i = 0; i < BUSY_SLOT; ++i) {
        put[i] = busy_value_of(rank, i);
        second[i] = -busy_value_of(rank, i);
    }
    r = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    if (r != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] %s: MPI_Win_lock on the busy target: error %d\n", rank, what,
                r);
    }
    CHECK(r == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_lock", &t);
    CHECK(MPI_Put(put, BUSY_SLOT, MPI_INT, 0, rank * BUSY_SLOT, BUSY_SLOT, MPI_INT, win) ==
          MPI_SUCCESS);
    busy_step(rank, what, "MPI_Put", &t);
    CHECK(MPI_Accumulate(&rank, 1, MPI_INT, 0, BUSY_SUM_AT, 1, MPI_INT, MPI_SUM, win) ==
          MPI_SUCCESS);
    busy_step(rank, what, "MPI_Accumulate", &t);
    CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, BUSY_FOP_AT, MPI_SUM, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Fetch_and_op", &t);
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_flush", &t);
    CHECK(MPI_Get(got, BUSY_SLOT, MPI_INT, 0, rank * BUSY_SLOT, BUSY_SLOT, MPI_INT, win) ==
          MPI_SUCCESS);
    busy_step(rank, what, "MPI_Get", &t);
    CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_unlock", &t);
    CHECK(memcmp(got, put, sizeof(put)) == 0);
    CHECK(old >= 0 && old < nranks - 1);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_lock_all", &t);
    CHECK(MPI_Put(second, BUSY_SLOT, MPI_INT, 0, BUSY_INTS / 2 + rank * BUSY_SLOT, BUSY_SLOT,
                  MPI_INT, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Put (lock_all)", &t);
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_flush (lock_all)", &t);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    busy_step(rank, what, "MPI_Win_unlock_all", &t);
    return t;
}

/* Rank 0's window once every origin of @p nranks processes is done (a host copy). */
static inline void busy_check_target(const int *mem, int nranks, const char *what)
{
    int sum = 0, bad = 0;

    for (int o = 1; o < nranks; ++o) {
        sum += o;
        for (int i = 0; i < BUSY_SLOT; ++i) {
            bad += mem[o * BUSY_SLOT + i] != busy_value_of(o, i);
            bad += mem[BUSY_INTS / 2 + o * BUSY_SLOT + i] != -busy_value_of(o, i);
        }
    }
    if (bad != 0 || mem[BUSY_SUM_AT] != sum || mem[BUSY_FOP_AT] != nranks - 1) {
        fprintf(stderr, "%s: %d wrong slot elements, sum %d (expected %d), fetch-and-op %d "
                "(expected %d)\n", what, bad, mem[BUSY_SUM_AT], sum, mem[BUSY_FOP_AT],
                nranks - 1);
    }
    CHECK(bad == 0 && mem[BUSY_SUM_AT] == sum && mem[BUSY_FOP_AT] == nranks - 1);
}

/* An allocate window of BUSY_INTS zeroed ints in host memory over MPI_COMM_WORLD that
 * returns its errors; *mem_p is this process's part. */
static inline void busy_host_window(int rank, int **mem_p, MPI_Win *win)
{
    CHECK(MPI_Win_allocate(BUSY_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                           mem_p, win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(*win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, *win);
    memset(*mem_p, 0, BUSY_INTS * sizeof(int));
    MPI_Win_unlock(rank, *win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0: every origin's end (gathered in @p ends) came before @p busy_end. */
static inline void busy_check_ends(const double *ends, int nranks, double busy_end,
                                   const char *what)
{
    for (int o = 1; o < nranks; ++o) {
        if (ends[o] > busy_end) {
            fprintf(stderr, "%s: rank %d ended its calls %.2f s after the target stopped being "
                    "busy (served only once the target called MPI)\n", what, o,
                    ends[o] - busy_end);
        }
        CHECK(ends[o] <= busy_end);
    }
}

#endif /* GPUIC_TEST_BUSY_TARGET_H */
