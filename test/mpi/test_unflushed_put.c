/*
 * Puts a program never flushes still land: gpuic gathers small puts to same-node peers'
 * MPI_Win_create windows until a completion point, and moves them at the origin's next MPI call
 * that is not another put or get (README, "When a put lands").  Programs rely on it: OpenSHMEM
 * over MPI (OSHMPI) polls its own window for a peer's unflushed puts, and releases a lock with
 * an atomic on one window after unflushed puts to another.  Windows of MPI_Win_create on
 * malloc'd memory, lock_all on both, every rank in every part:
 *  1. poll: each rank puts RUN words to its right neighbour (past the few copied at once), no
 *     flush, then polls its own window with MPI_Fetch_and_op(MPI_NO_OP) to itself and
 *     MPI_Win_flush_local, as OSHMPI's shmem_wait_until does, until its left neighbour's words
 *     are all there;
 *  2. progress: rank 0 puts RUN words to rank 1 and waits in MPI_Recv (only MPI's progress)
 *     for rank 1's word that they are there (rank 1 reads its window after MPI_Win_sync);
 *  3. lock: a counter on rank 0 in one window and a spin lock (compare-and-swap) in another;
 *     each rank, ITERS times: take the lock, get the counter (flush_local), put counter + 1
 *     (no flush), release the lock with an atomic on the lock window.  The count must come out
 *     exact: the put lands before the release.
 * A part that does not see its data within LIMIT_S seconds fails (no hang).
 * Part 3 is a property of gpuic, not of MPI (which orders nothing across windows): it runs
 * only on a gpuic window.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define RUN 32      /* puts to one neighbour between two looks */
#define ITERS 50    /* lock rounds per rank */
#define LIMIT_S 30.0

static int64_t word(int origin, int part, int i)
{
    return (int64_t)(origin + 1) * 100000 + part * 1000 + i + 1;
}

/* Whether words [0, RUN) of @p mem hold what @p origin put in @p part. */
static int words_there(volatile int64_t *mem, int origin, int part)
{
    for (int i = 0; i < RUN; ++i) {
        if (mem[i] != word(origin, part, i)) {
            return 0;
        }
    }
    return 1;
}

static void puts_run(MPI_Win win, int right, int rank, int part, int64_t *src)
{
    for (int i = 0; i < RUN; ++i) {
        src[i] = word(rank, part, i);
        CHECK(MPI_Put(&src[i], 1, MPI_INT64_T, right, i, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    }
}

/* Part 1: the target polls with an atomic on itself. */
static void part_poll(MPI_Win win, int64_t *mem, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size, ok = 0;
    int64_t src[RUN], v;
    double t0;

    puts_run(win, right, rank, 1, src);
    t0 = MPI_Wtime();
    while (!ok && MPI_Wtime() - t0 < LIMIT_S) {
        ok = 1;
        for (int i = 0; i < RUN && ok; ++i) {
            CHECK(MPI_Fetch_and_op(NULL, &v, MPI_INT64_T, rank, i, MPI_NO_OP, win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Win_flush_local(rank, win) == MPI_SUCCESS);
            ok = v == word(left, 1, i);
        }
    }
    if (!ok) {
        fprintf(stderr, "[rank %d] poll: rank %d's unflushed puts not there after %.0f s\n",
                rank, left, LIMIT_S);
    }
    CHECK(ok);
    CHECK(words_there(mem, left, 1));
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Part 2: rank 0 puts to rank 1 and then waits in MPI_Recv (MPI's progress only) for rank 1's
 * word that they are there; rank 1 reads its window after MPI_Win_sync. */
static void part_progress(MPI_Win win, int64_t *mem, int rank)
{
    int64_t src[RUN];
    int ok = 0;
    double t0;

    if (rank == 0) {
        puts_run(win, 1, rank, 2, src);
        MPI_Recv(&ok, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        t0 = MPI_Wtime();
        while (!ok && MPI_Wtime() - t0 < LIMIT_S) {
            CHECK(MPI_Win_sync(win) == MPI_SUCCESS);
            ok = words_there(mem, 0, 2);
        }
        if (!ok) {
            fprintf(stderr, "[rank 1] progress: rank 0's unflushed puts not there after %.0f s\n",
                    LIMIT_S);
        }
        CHECK(ok);
        MPI_Send(&ok, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Part 3: a spin lock in @p lwin guards a counter in @p win at rank 0. */
static void part_lock(MPI_Win win, MPI_Win lwin, int64_t *mem, int rank, int size)
{
    const int64_t one = 1, zero = 0;
    int64_t old, count;
    double t0 = MPI_Wtime();
    int timed_out = 0;

    for (int it = 0; it < ITERS && !timed_out; ++it) {
        do {
            CHECK(MPI_Compare_and_swap(&one, &zero, &old, MPI_INT64_T, 0, 0, lwin) ==
                  MPI_SUCCESS);
            CHECK(MPI_Win_flush(0, lwin) == MPI_SUCCESS);
            timed_out = MPI_Wtime() - t0 > LIMIT_S;
        } while (old != 0 && !timed_out);
        if (timed_out) {
            break;
        }
        CHECK(MPI_Get(&count, 1, MPI_INT64_T, 0, RUN, 1, MPI_INT64_T, win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush_local(0, win) == MPI_SUCCESS);
        count++;
        CHECK(MPI_Put(&count, 1, MPI_INT64_T, 0, RUN, 1, MPI_INT64_T, win) == MPI_SUCCESS);
        /* no flush of win: the release is the next call */
        CHECK(MPI_Accumulate(&zero, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_REPLACE, lwin) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, lwin) == MPI_SUCCESS);
    }
    if (timed_out) {
        fprintf(stderr, "[rank %d] lock: not done within %.0f s\n", rank, LIMIT_S);
    }
    CHECK(!timed_out);
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(MPI_Win_sync(win) == MPI_SUCCESS);
        if (mem[RUN] != (int64_t)size * ITERS) {
            fprintf(stderr, "[rank 0] lock: counter %lld, expected %lld\n",
                    (long long)mem[RUN], (long long)size * ITERS);
        }
        CHECK(mem[RUN] == (int64_t)size * ITERS);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    int64_t *mem, *lmem;
    MPI_Win win, lwin;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* user memory a peer cannot map (the case that gathers) */
    mem = calloc(RUN + 1, sizeof(*mem));
    lmem = calloc(1, sizeof(*lmem));
    MPI_Win_create(mem, (RUN + 1) * sizeof(*mem), sizeof(*mem), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    MPI_Win_create(lmem, sizeof(*lmem), sizeof(*lmem), MPI_INFO_NULL, MPI_COMM_WORLD, &lwin);
    MPI_Win_lock_all(0, win);
    MPI_Win_lock_all(0, lwin);
    part_poll(win, mem, rank, size);
    part_progress(win, mem, rank);
    if (mpi_test_is_gpuic(win)) {
        part_lock(win, lwin, mem, rank, size);
    }
    MPI_Win_unlock_all(lwin);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&lwin);
    MPI_Win_free(&win);
    free(lmem);
    free(mem);
    return mpi_test_finish("test_unflushed_put");
}
