/*
 * MPI_THREAD_MULTIPLE: several threads of every rank issue RMA on one window at once — puts
 * into disjoint slots, fetch_and_op on a shared counter, gets with flush — inside one
 * lock_all epoch; then the data and the counter are checked.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define THREADS 4
#define ITERS 200

static MPI_Win win;
static int rank, n;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    long one = 1, old, val, back;

    for (int i = 0; i < ITERS; ++i) {
        int target = (rank + i) % n;
        /* slot layout at every target: [counter][n * THREADS slots] */
        val = ((long)rank << 32) | ((long)t << 16) | i;
        MPI_Put(&val, 1, MPI_LONG, target, 1 + rank * THREADS + t, 1, MPI_LONG, win);
        MPI_Win_flush(target, win);
        MPI_Get(&back, 1, MPI_LONG, target, 1 + rank * THREADS + t, 1, MPI_LONG, win);
        MPI_Win_flush(target, win);
        CHECK(back == val);
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        CHECK(old >= 0 && old < (long)n * THREADS * ITERS);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    long *base;
    pthread_t th[THREADS];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("test_threads: MPI_THREAD_MULTIPLE not provided: SKIP\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Win_allocate((1 + n * THREADS) * sizeof(long), sizeof(long), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < 1 + n * THREADS; ++i) base[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(base[0] == (long)n * THREADS * ITERS);
    MPI_Win_free(&win);
    return mpi_test_finish("test_threads");
}
