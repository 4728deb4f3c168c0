/*
 * test_self_poll.c - a process that polls its own window memory with RMA calls to itself must
 * still serve the other processes' accesses to it.
 *
 * Rank 0 polls a word of its own window until every other rank has set its flag there; the
 * others set theirs with MPI_Accumulate(MPI_REPLACE) and flush.  Where the flags' memory is
 * not mapped by the writers (MPI_Win_create and dynamic windows), UCX may carry those
 * accumulates as messages that complete only when rank 0 progresses, while rank 0's calls to
 * itself complete at once.  MPI's progress rule makes the polling calls responsible for that
 * progress (MPICH's linked-list tests poll exactly so).  Three ways to poll, each on a created
 * and on a dynamic window, under MPI_Win_lock_all:
 *   gacc: MPI_Get_accumulate(MPI_NO_OP) to itself + MPI_Win_flush
 *   fop:  MPI_Fetch_and_op(MPI_NO_OP) to itself + MPI_Win_flush_all
 *   sync: MPI_Win_sync + a load (the unified model)
 * A poll that sees no flag for 30 s fails the test (the flags would never come).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define POLL_SECONDS 30.0

enum poll_mode { POLL_GACC, POLL_FOP, POLL_SYNC, NPOLL };
static const char *poll_name[] = {"gacc", "fop", "sync"};

/* Rank 0's view of its flag words (one per rank) after one poll. */
static int64_t poll_once(MPI_Win win, enum poll_mode mode, volatile int64_t *mine,
                         MPI_Aint base, int r)
{
    int64_t got = 0;

    switch (mode) {
    case POLL_GACC:
        MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, &got, 1, MPI_INT64_T, 0,
                           base + r * (MPI_Aint)sizeof(int64_t), 1, MPI_INT64_T, MPI_NO_OP, win);
        MPI_Win_flush(0, win);
        break;
    case POLL_FOP:
        MPI_Fetch_and_op(NULL, &got, MPI_INT64_T, 0, base + r * (MPI_Aint)sizeof(int64_t),
                         MPI_NO_OP, win);
        MPI_Win_flush_all(win);
        break;
    default:
        MPI_Win_sync(win);
        got = __atomic_load_n(&mine[r], __ATOMIC_ACQUIRE);
        break;
    }
    return got;
}

static void run_case(int dynamic, enum poll_mode mode, int rank, int n)
{
    int64_t *mem = calloc((size_t)n, sizeof(int64_t)), one = 1;
    MPI_Aint base = 0, disp;
    MPI_Win win;
    int r, seen = 0, left;
    double t0;

    if (dynamic) {
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, mem, (MPI_Aint)n * (MPI_Aint)sizeof(int64_t));
        MPI_Get_address(mem, &base);
        MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    } else {
        MPI_Win_create(mem, (MPI_Aint)n * (MPI_Aint)sizeof(int64_t), 1, MPI_INFO_NULL,
                       MPI_COMM_WORLD, &win);
    }
    CHECK(mpi_test_is_gpuic(win));
    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        /* rank 0's own flag is set by rank 0 last, after all others */
        t0 = MPI_Wtime();
        for (r = 1; r < n; ++r) {
            while (poll_once(win, mode, mem, base, r) != 1) {
                if (MPI_Wtime() - t0 > POLL_SECONDS) {
                    break;
                }
            }
            seen += mem[r] == 1;
        }
        left = n - 1 - seen;
        if (left != 0) {
            printf("rank 0: %s window, %s polling: %d flags never arrived\n",
                   dynamic ? "dynamic" : "created", poll_name[mode], left);
        }
        CHECK(left == 0);
    } else {
        disp = base + rank * (MPI_Aint)sizeof(int64_t);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, disp, 1, MPI_INT64_T, MPI_REPLACE, win);
        MPI_Win_flush(0, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) {
        MPI_Win_detach(win, mem);
    }
    MPI_Win_free(&win);
    free(mem);
}

int main(int argc, char **argv)
{
    int rank, n, mode;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (mode = 0; mode < NPOLL; ++mode) {
        run_case(0, (enum poll_mode)mode, rank, n);
        run_case(1, (enum poll_mode)mode, rank, n);
    }
    return mpi_test_finish("test_self_poll");
}
