/*
 * Passive-target operations on MPI_Win_create windows (user memory a peer
 * cannot map) complete while the target computes outside MPI: every rank but 0
 * computes for COMPUTE_S seconds without an MPI call; meanwhile rank 0, under
 * MPI_Win_lock (shared) on each, puts RUN 8-byte words and flushes, puts RUN
 * more and completes them locally (MPI_Win_flush_local), gets them all back and
 * flushes, rounds after round.  Every flush of rank 0 must return before its
 * target leaves the computation (same node: MPI_Wtime is one clock), and the
 * words read back must be those put.  Each round also makes the accumulate-family calls that
 * gpuic promises not to wait for the target (README, "Accumulate atomicity": those that UCX
 * would do by a compare-and-swap loop, and those of several elements): a double
 * MPI_Accumulate SUM, a double MPI_Fetch_and_op SUM, a 4-element MPI_Accumulate and an int64
 * MPI_Get_accumulate MAX, and flushes them; with osc_gpuic_async_progress=1 (a thread serves
 * the UCX atomics that one-atomic calls take) also an int64 MPI_Fetch_and_op SUM and an
 * MPI_Compare_and_swap.  Each target then checks its window.
 * Targets on other (emulated) nodes are reached through UCX, whose transport
 * may need their progress (README, "A process that dies"): only their data is
 * checked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_test.h"

#define RUN 64 /* small puts or gets between two completion points */
#define ROUNDS 20
#define COMPUTE_S 3.0
/* Window bytes: large enough that the C library maps it apart (as codes' arrays are); UCX
 * was seen to serve a small heap block of the peer and such a mapping differently. */
#define WIN_BYTES ((size_t)4 << 20)

/* Words of the accumulate part, past the puts' */
#define ACC_DBL  (2 * RUN)     /* a double, +1.0 a round */
#define ACC_FOP  (2 * RUN + 1) /* a double, +1.0 a round by fetch_and_op */
#define ACC_MAX  (2 * RUN + 2) /* MAX of the round numbers, by get_accumulate */
#define ACC_VEC  (2 * RUN + 3) /* 4 words, +1 each a round */
#define ACC_IFOP (2 * RUN + 7) /* +1 a round by fetch_and_op (with async progress) */
#define ACC_CAS  (2 * RUN + 8) /* r -> r + 1 by compare_and_swap (with async progress) */

static int async_progress; /* osc_gpuic_async_progress=1: the one-atomic calls too */

static int64_t word(int target, int round, int i)
{
    return (int64_t)target * 1000000 + round * 1000 + i;
}

/* The accumulate part of round @p r with target @p t (rank 0 alone updates these words, so
 * every fetched value is known). */
static void acc_run(MPI_Win win, int t, int r)
{
    double one = 1.0, fetched = -1.0;
    int64_t old = -1, vec[4] = {1, 1, 1, 1}, rr = r;

    CHECK(MPI_Accumulate(&one, 1, MPI_DOUBLE, t, ACC_DBL, 1, MPI_DOUBLE, MPI_SUM, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Fetch_and_op(&one, &fetched, MPI_DOUBLE, t, ACC_FOP, MPI_SUM, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Accumulate(vec, 4, MPI_INT64_T, t, ACC_VEC, 4, MPI_INT64_T, MPI_SUM, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    CHECK(fetched == (double)r);
    CHECK(MPI_Get_accumulate(&rr, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, t, ACC_MAX, 1,
                             MPI_INT64_T, MPI_MAX, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    CHECK(old == (r > 0 ? r - 1 : 0));
    if (async_progress) {
        int64_t inc = 1, next = r + 1, expect = r, prev = -1;

        old = -1;
        CHECK(MPI_Fetch_and_op(&inc, &old, MPI_INT64_T, t, ACC_IFOP, MPI_SUM, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Compare_and_swap(&next, &expect, &prev, MPI_INT64_T, t, ACC_CAS, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
        CHECK(old == r && prev == r);
    }
}

/* One round with target @p t: puts and a flush, puts, a local flush and a flush, gets and a
 * flush; the words read back are checked. */
static void round_run(MPI_Win win, int t, int r)
{
    int64_t got[2 * RUN], src[2 * RUN];
    int i;

    for (i = 0; i < 2 * RUN; ++i) {
        src[i] = word(t, r, i);
    }
    for (i = 0; i < RUN; ++i) {
        CHECK(MPI_Put(&src[i], 1, MPI_INT64_T, t, i, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    for (i = RUN; i < 2 * RUN; ++i) {
        CHECK(MPI_Put(&src[i], 1, MPI_INT64_T, t, i, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush_local(t, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    for (i = 0; i < 2 * RUN; ++i) {
        got[i] = -1;
        CHECK(MPI_Get(&got[i], 1, MPI_INT64_T, t, i, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    acc_run(win, t, r);
    for (i = 0; i < 2 * RUN; ++i) {
        if (got[i] != word(t, r, i)) {
            fprintf(stderr, "round %d target %d word %d: %lld, expected %lld\n", r, t, i,
                    (long long)got[i], (long long)word(t, r, i));
            mpi_test_failures++;
            break;
        }
    }
}

int main(int argc, char **argv)
{
    int rank, n, t, r, i, pass;
    int64_t *base;
    double ends[64], done = 0, busy_until, t0;
    volatile double sink = 0;
    const char *e = getenv("OMPI_MCA_osc_gpuic_emulate_nodes");
    int emulate = e != NULL ? atoi(e) : 0;
    const char *a = getenv("OMPI_MCA_osc_gpuic_async_progress");
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    async_progress = a != NULL && (strcmp(a, "1") == 0 || strcmp(a, "true") == 0);
    if (n > 64) {
        if (rank == 0) {
            printf("test_passive_progress: at most 64 ranks: FAIL\n");
        }
        MPI_Finalize();
        return 1;
    }
    base = calloc(WIN_BYTES, 1);
    CHECK(MPI_Win_create(base, WIN_BYTES, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win) ==
          MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rank == 0) {
        for (t = 1; t < n; ++t) {
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win) == MPI_SUCCESS);
        }
        /* targets of rank 0's node first, timed; then the others */
        for (pass = 0; pass < 2; ++pass) {
            for (r = 0; r < ROUNDS; ++r) {
                for (t = 1; t < n; ++t) {
                    if ((emulate <= 0 || t < emulate) != (pass == 0)) {
                        continue;
                    }
                    round_run(win, t, r);
                }
            }
            if (pass == 0) {
                done = MPI_Wtime();
                printf("test_passive_progress: rank 0's %d rounds with the targets of its "
                       "node took %.3f s\n", ROUNDS, done - t0);
            }
        }
        for (t = 1; t < n; ++t) {
            CHECK(MPI_Win_unlock(t, win) == MPI_SUCCESS);
        }
    } else {
        /* compute outside MPI; the other ranks' wait starts at the barrier above */
        busy_until = t0 + COMPUTE_S;
        while (MPI_Wtime() < busy_until) {
            sink = sink + 1.0;
        }
        done = MPI_Wtime();
    }
    MPI_Gather(&done, 1, MPI_DOUBLE, ends, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (t = 1; t < n && (emulate <= 0 || t < emulate); ++t) {
            /* rank 0 finished every round before this same-node target left its computation */
            if (ends[0] >= ends[t]) {
                fprintf(stderr, "rank 0's operations ended %.3f s after target %d computed "
                        "(they waited for it)\n", ends[0] - ends[t], t);
                mpi_test_failures++;
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        double d;

        for (i = 0; i < 2 * RUN; ++i) {
            CHECK(base[i] == word(rank, ROUNDS - 1, i));
        }
        memcpy(&d, &base[ACC_DBL], sizeof(d));
        CHECK(d == (double)ROUNDS);
        memcpy(&d, &base[ACC_FOP], sizeof(d));
        CHECK(d == (double)ROUNDS);
        CHECK(base[ACC_MAX] == ROUNDS - 1);
        CHECK(!async_progress || (base[ACC_IFOP] == ROUNDS && base[ACC_CAS] == ROUNDS));
        for (i = 0; i < 4; ++i) {
            CHECK(base[ACC_VEC + i] == ROUNDS);
        }
    }
    MPI_Win_free(&win);
    free(base);
    return mpi_test_finish("test_passive_progress");
}
