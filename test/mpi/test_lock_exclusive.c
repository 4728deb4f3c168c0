/*
 * Mutual exclusion of MPI_Win_lock(MPI_LOCK_EXCLUSIVE) under contention: every rank increments
 * a counter on rank 0 ITERS times with get + put inside an exclusive lock.  Without real
 * exclusion increments are lost.  Shared locks taken at the same time by readers must never
 * see a counter in the middle of an update (the two words are written together).
 */
#include <stdlib.h>

#include "mpi_test.h"

#define ITERS 200

int main(int argc, char **argv)
{
    int rank, n;
    long *base, pair[2];
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    base[0] = base[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < ITERS; ++i) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(pair, 2, MPI_LONG, 0, 0, 2, MPI_LONG, win);
        MPI_Win_flush(0, win);
        CHECK(pair[0] == pair[1]);
        pair[0]++;
        pair[1] = pair[0];
        MPI_Put(pair, 2, MPI_LONG, 0, 0, 2, MPI_LONG, win);
        MPI_Win_unlock(0, win);
        if (i % 10 == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Get(pair, 2, MPI_LONG, 0, 0, 2, MPI_LONG, win);
            MPI_Win_unlock(0, win);
            CHECK(pair[0] == pair[1]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(base[0] == (long)ITERS * n);
        CHECK(base[1] == (long)ITERS * n);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
    return mpi_test_finish("test_lock_exclusive");
}
