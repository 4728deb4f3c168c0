/*
 * MPI_THREAD_MULTIPLE and blocking synchronization: a thread waiting inside one call blocks
 * only itself (MPI 3.1 12.4.2).
 *  - per-target locks: one thread per target, each locking its own target (exclusive, then
 *    alternating shared and exclusive), putting and fetch-and-adding a counter, unlocking; a
 *    thread waiting for one target's lock must not keep the others from releasing theirs,
 *    which across processes would be a cycle;
 *  - PSCW: one thread's exposure epoch (post, wait) and another thread's access epoch (start,
 *    put, complete) on the same window at once, in a ring, several rounds;
 * on an allocate and a create window.  Counters and data are checked.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define LOCK_ITERS 60
#define PSCW_ITERS 30

static MPI_Win win;
static long *buf; /* [counter][n slots] */
static int rank, n, lock_mode;

static void *lock_worker(void *arg)
{
    int t = (int)(intptr_t)arg;

    for (int i = 0; i < LOCK_ITERS; ++i) {
        long one = 1, old, v = (long)rank * 1000 + i;
        int type = lock_mode == 0 || i % 2 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;

        CHECK(MPI_Win_lock(type, t, 0, win) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_LONG, t, 1 + rank, 1, MPI_LONG, win) == MPI_SUCCESS);
        CHECK(MPI_Fetch_and_op(&one, &old, MPI_LONG, t, 0, MPI_SUM, win) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(t, win) == MPI_SUCCESS);
    }
    return NULL;
}

static void locks_by_threads(void)
{
    pthread_t *th = malloc(n * sizeof(*th));

    for (int i = 0; i <= n; ++i) buf[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (intptr_t t = 0; t < n; ++t) pthread_create(&th[t], NULL, lock_worker, (void *)t);
    for (int t = 0; t < n; ++t) pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win); /* the window's own copy, up to date */
    CHECK(buf[0] == (long)n * LOCK_ITERS);
    for (int r = 0; r < n; ++r) CHECK(buf[1 + r] == (long)r * 1000 + LOCK_ITERS - 1);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    free(th);
}

static MPI_Group left_group, right_group;
static int pscw_round;

static void *expose(void *arg)
{
    (void)arg;
    CHECK(MPI_Win_post(left_group, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
    return NULL;
}

static void *access_right(void *arg)
{
    long v = (long)rank * 1000 + pscw_round;

    (void)arg;
    CHECK(MPI_Win_start(right_group, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, (rank + 1) % n, 0, 1, MPI_LONG, win) == MPI_SUCCESS);
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
    return NULL;
}

static void pscw_by_threads(void)
{
    MPI_Group world;
    int left = (rank + n - 1) % n, right = (rank + 1) % n;

    MPI_Win_get_group(win, &world);
    MPI_Group_incl(world, 1, &left, &left_group);
    MPI_Group_incl(world, 1, &right, &right_group);
    for (pscw_round = 0; pscw_round < PSCW_ITERS; ++pscw_round) {
        pthread_t a, b;

        pthread_create(&a, NULL, expose, NULL);
        pthread_create(&b, NULL, access_right, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        CHECK(buf[0] == (long)left * 1000 + pscw_round);
    }
    MPI_Group_free(&left_group);
    MPI_Group_free(&right_group);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    int provided;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("test_thread_sync: MPI_THREAD_MULTIPLE not provided, skipped\n");
        MPI_Finalize();
        return 77;
    }
    for (int flavor = 0; flavor < 2; ++flavor) {
        size_t bytes = (1 + n) * sizeof(long);
        long *mem = NULL;

        if (flavor == 0) {
            MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &buf, &win);
        } else {
            mem = malloc(bytes);
            buf = mem;
            MPI_Win_create(buf, bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        CHECK(mpi_test_is_gpuic(win));
        for (lock_mode = 0; lock_mode < 2; ++lock_mode) {
            locks_by_threads();
        }
        pscw_by_threads();
        MPI_Win_free(&win);
        free(mem);
    }
    return mpi_test_finish("test_thread_sync");
}
