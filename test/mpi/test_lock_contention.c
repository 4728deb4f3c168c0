/*
 * Passive-target locks under contention (MPI 3.1 section 11.5.3): every process takes locks
 * on the same targets in a tight loop, with accumulate-family calls inside.  Every process
 * must get through its loop (no starvation, no hang), and the sums must be exact:
 *   exclusive: lock rank 0 exclusively, MPI_Accumulate(+1) and MPI_Get_accumulate(+1) on two
 *     counters, and a get-then-put increment of a third counter, which only mutual exclusion
 *     keeps exact; the values MPI_Get_accumulate returned are each seen exactly once;
 *   shared: lock rank 0 shared, MPI_Accumulate(+1), MPI_Fetch_and_op(+1) (values unique);
 *   mixed: even ranks lock exclusively, odd ones shared, on a target that rotates;
 *   lock_all: MPI_Win_lock_all / unlock_all with MPI_Get_accumulate to every process, while
 *     rank 0 takes exclusive locks on every process;
 *   crossed: two processes each hold a shared lock on one of ranks 0 and 1 and then take one
 *     on the other, in opposite orders, while two more wait for exclusive locks on them: a
 *     waiting exclusive locker must not keep a shared locker out for good (no deadlock);
 *   owner polling: rank 0 takes its own exclusive lock in a loop, reading a counter that every
 *     other process adds to under an exclusive lock on rank 0, until all have (MPICH's
 *     linked-list pattern: the owner's own locks must not starve the others').
 * Usage: test_lock_contention [ITERS]  (per process and phase, default 200)
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpi_test.h"

enum { C_ACC, C_GACC, C_RMW, C_FOP, C_MIXED, C_ALL, C_EXALL, C_POLL, NCOUNTERS };

static void lc_add(MPI_Win win, int target, int which)
{
    int64_t one = 1;

    CHECK(MPI_Accumulate(&one, 1, MPI_INT64_T, target, which, 1, MPI_INT64_T, MPI_SUM, win) ==
          MPI_SUCCESS);
}

static int64_t lc_fetch_add(MPI_Win win, int target, int which, int gacc)
{
    int64_t one = 1, old = -1;

    if (gacc) {
        CHECK(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, target, which, 1,
                                 MPI_INT64_T, MPI_SUM, win) == MPI_SUCCESS);
    } else {
        CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, target, which, MPI_SUM, win) ==
              MPI_SUCCESS);
    }
    return old;
}

/* Rank 0 checks that the values gathered from all processes are 0 .. n * iters - 1, once each. */
static void lc_check_unique(const int64_t *mine, int iters, int rank, int n, const char *what)
{
    int64_t *all = rank == 0 ? malloc(sizeof(int64_t) * (size_t)n * iters) : NULL;
    char *hit = rank == 0 ? calloc((size_t)n * iters, 1) : NULL;
    long i, total = (long)n * iters;

    MPI_Gather(mine, iters, MPI_INT64_T, all, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < total; ++i) {
            if (all[i] < 0 || all[i] >= total || hit[all[i]]) {
                fprintf(stderr, "%s: value %lld returned twice or out of range\n", what,
                        (long long)all[i]);
                mpi_test_failures++;
                break;
            }
            hit[all[i]] = 1;
        }
    }
    free(all);
    free(hit);
}

/* The four phases on one window; returns after checking the sums. */
static void lc_phases(MPI_Win win, int64_t *base, int64_t *vals, int iters, int rank, int n)
{
    int64_t v, expect;
    int i, t;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (i = 0; i < NCOUNTERS; ++i) {
        base[i] = 0;
    }
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* exclusive on rank 0 */
    for (i = 0; i < iters; ++i) {
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win) == MPI_SUCCESS);
        lc_add(win, 0, C_ACC);
        vals[i] = lc_fetch_add(win, 0, C_GACC, 1);
        CHECK(MPI_Get(&v, 1, MPI_INT64_T, 0, C_RMW, 1, MPI_INT64_T, win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
        v++;
        CHECK(MPI_Put(&v, 1, MPI_INT64_T, 0, C_RMW, 1, MPI_INT64_T, win) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    }
    lc_check_unique(vals, iters, rank, n, "exclusive: MPI_Get_accumulate");

    /* shared on rank 0 */
    for (i = 0; i < iters; ++i) {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win) == MPI_SUCCESS);
        lc_add(win, 0, C_ACC);
        vals[i] = lc_fetch_add(win, 0, C_FOP, 0);
        CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    }
    lc_check_unique(vals, iters, rank, n, "shared: MPI_Fetch_and_op");

    /* mixed exclusive and shared, rotating target */
    for (i = 0; i < iters; ++i) {
        t = i % n;
        CHECK(MPI_Win_lock(rank % 2 == 0 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win) ==
              MPI_SUCCESS);
        (void)lc_fetch_add(win, t, C_MIXED, i % 2);
        CHECK(MPI_Win_unlock(t, win) == MPI_SUCCESS);
    }

    /* lock_all against exclusive locks from rank 0 */
    for (i = 0; i < iters; ++i) {
        if (rank == 0 && i % 2 == 1) {
            for (t = 0; t < n; ++t) {
                CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win) == MPI_SUCCESS);
                lc_add(win, t, C_EXALL);
                CHECK(MPI_Win_unlock(t, win) == MPI_SUCCESS);
            }
            continue;
        }
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
        for (t = 0; t < n; ++t) {
            (void)lc_fetch_add(win, t, C_ALL, 1);
        }
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    }

    /* crossed shared locks beside exclusive waiters */
    for (i = 0; i < iters / 10 + 1; ++i) {
        int first = rank % 4 == 0 ? 1 % n : 0, second = first == 0 ? 1 % n : 0;

        MPI_Barrier(MPI_COMM_WORLD);
        if (rank % 4 < 2) {
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, first, 0, win) == MPI_SUCCESS);
            usleep(1000); /* let the exclusive lockers start waiting */
            if (second != first) {
                CHECK(MPI_Win_lock(MPI_LOCK_SHARED, second, 0, win) == MPI_SUCCESS);
                CHECK(MPI_Win_unlock(second, win) == MPI_SUCCESS);
            }
            CHECK(MPI_Win_unlock(first, win) == MPI_SUCCESS);
        } else {
            t = (rank % 4 - 2) % n;
            CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(t, win) == MPI_SUCCESS);
        }
    }

    /* the owner polls under its own exclusive lock until every other process got in */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t seen = 0;

        while (seen < n - 1) {
            CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win) == MPI_SUCCESS);
            CHECK(MPI_Get(&seen, 1, MPI_INT64_T, 0, C_POLL, 1, MPI_INT64_T, win) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
        }
    } else {
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win) == MPI_SUCCESS);
        lc_add(win, 0, C_POLL);
        CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (rank == 0) {
        CHECK(base[C_POLL] == n - 1);
        CHECK(base[C_ACC] == 2 * (int64_t)n * iters);
        CHECK(base[C_GACC] == (int64_t)n * iters);
        CHECK(base[C_RMW] == (int64_t)n * iters);
        CHECK(base[C_FOP] == (int64_t)n * iters);
        if (base[C_RMW] != (int64_t)n * iters) {
            fprintf(stderr, "exclusive lock: get-then-put counter %lld, expected %lld\n",
                    (long long)base[C_RMW], (long long)n * iters);
        }
    }
    /* rank r was the target of iterations i with i % n == r */
    expect = 0;
    for (i = 0; i < iters; ++i) {
        expect += i % n == rank;
    }
    CHECK(base[C_MIXED] == expect * n);
    expect = (int64_t)(n - 1) * iters + (iters - iters / 2); /* lock_all rounds of all */
    CHECK(base[C_ALL] == expect);
    CHECK(base[C_EXALL] == iters / 2);
    MPI_Win_unlock(rank, win);

}

int main(int argc, char **argv)
{
    int rank, n, iters = argc > 1 ? atoi(argv[1]) : 200;
    int64_t *base, *vals, *mem;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    iters = iters > 0 ? iters : 1;
    vals = malloc(sizeof(int64_t) * (size_t)iters);

    /* memory the MPI library allocates (mapped by same-node peers) */
    CHECK(MPI_Win_allocate(NCOUNTERS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                           MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    lc_phases(win, base, vals, iters, rank, n);
    MPI_Win_free(&win);

    /* user memory (reached through the network layer) */
    mem = calloc(NCOUNTERS, sizeof(int64_t));
    CHECK(MPI_Win_create(mem, NCOUNTERS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    lc_phases(win, mem, vals, iters, rank, n);
    MPI_Win_free(&win);
    free(mem);
    free(vals);
    return mpi_test_finish("test_lock_contention");
}
