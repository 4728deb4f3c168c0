/*
 * A peer that takes longer than osc_gpuic_timeout to get to its side of a synchronization is
 * slow, not dead: MPI lets a process compute as long as it likes before a fence, a post, a
 * complete or an unlock, and the calls that wait for it must return MPI_SUCCESS.  The harness
 * runs this with osc_gpuic_timeout below SLOW_S; every process runs on this machine, so gpuic
 * can see that the silent peer still runs.  On a window of every flavor (allocate, create,
 * dynamic, shared):
 *   fence     rank 0 computes, then puts and reaches the fence the others wait in;
 *   lock      rank 0 holds an exclusive lock on rank 1 while it computes; the others wait for
 *             that lock, then read what rank 0 wrote last and add one each;
 *   post      rank 0 posts late: the others' start, put and complete wait for it;
 *   complete  rank 1 completes late: rank 0's MPI_Win_wait waits for it;
 *   busy      rank 0 computes outside MPI while the others lock it, put, flush and unlock
 *             (over a transport that emulates RMA in software the flush waits for rank 0's
 *             next MPI call).
 * Every call is checked for MPI_SUCCESS, and the data afterwards.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test.h"

#define SLOW_S 2.5
#define INTS 64
#define FENCE_AT 0   /* rank r's fence put lands at FENCE_AT + r of rank (r + 1) % n */
#define LOCK_AT 32   /* rank 0's value under the exclusive lock, on rank 1 */
#define COUNT_AT 33  /* the others' increments after it, on rank 1 */
#define SEEN_AT 34   /* where each of the others puts what it read at LOCK_AT */
#define PSCW_AT 48   /* origin r's post-late put, on rank 0, at PSCW_AT + r (r < 8) */
#define BUSY_AT 56   /* origin r's busy-target put, on rank 0, at BUSY_AT + r (r < 8) */

static int rank, nranks;
/* dynamic windows: each rank's attached memory, as addresses (NULL: other flavors) */
static MPI_Aint *bases;

/* The displacement of int @p idx in @p target's window memory. */
static MPI_Aint at(int target, int idx)
{
    return bases != NULL ? bases[target] + (MPI_Aint)(idx * sizeof(int)) : idx;
}

#define OK(call) CHECK((call) == MPI_SUCCESS)

/* Computation outside MPI for SLOW_S, in short sleeps (an oversubscribed machine runs the
 * others meanwhile). */
static void compute_slowly(void)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        usleep(2000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < SLOW_S);
}

static void fence_late(MPI_Win win, int *mem)
{
    int v = 1000 + rank;

    OK(MPI_Win_fence(0, win));
    if (rank == 0) {
        compute_slowly();
    }
    OK(MPI_Put(&v, 1, MPI_INT, (rank + 1) % nranks, at((rank + 1) % nranks, FENCE_AT + rank), 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    {
        int from = (rank + nranks - 1) % nranks;

        CHECK(mem[FENCE_AT + from] == 1000 + from);
    }
}

static void lock_held_late(MPI_Win win, int *mem)
{
    int first = 7, last = 77, one = 1, seen = -1;

    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        OK(MPI_Put(&first, 1, MPI_INT, 1, at(1, LOCK_AT), 1, MPI_INT, win));
        OK(MPI_Win_flush(1, win)); /* the lock is held from here at the latest */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        compute_slowly();
        OK(MPI_Put(&last, 1, MPI_INT, 1, at(1, LOCK_AT), 1, MPI_INT, win));
        OK(MPI_Win_unlock(1, win));
    } else {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        OK(MPI_Get(&seen, 1, MPI_INT, 1, at(1, LOCK_AT), 1, MPI_INT, win));
        OK(MPI_Accumulate(&one, 1, MPI_INT, 1, at(1, COUNT_AT), 1, MPI_INT, MPI_SUM, win));
        OK(MPI_Win_unlock(1, win));
        CHECK(seen == last);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        CHECK(mem[LOCK_AT] == last);
        CHECK(mem[COUNT_AT] == nranks - 1);
        OK(MPI_Win_unlock(1, win));
    }
}

/* Rank 0 exposes its window to every other rank; @p late_post: it posts after computing,
 * otherwise rank 1 completes after computing. */
static void pscw_late(MPI_Win win, int *mem, int late_post)
{
    MPI_Group world, target, origins;
    int zero = 0, v = 2000 + rank + (late_post ? 0 : 100);

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &zero, &target);
    MPI_Group_excl(world, 1, &zero, &origins);
    if (rank == 0) {
        if (late_post) {
            compute_slowly();
        }
        OK(MPI_Win_post(origins, 0, win));
        OK(MPI_Win_wait(win));
        for (int r = 1; r < nranks && r < 8; ++r) {
            CHECK(mem[PSCW_AT + r] == 2000 + r + (late_post ? 0 : 100));
        }
    } else {
        OK(MPI_Win_start(target, 0, win));
        if (rank < 8) {
            OK(MPI_Put(&v, 1, MPI_INT, 0, at(0, PSCW_AT + rank), 1, MPI_INT, win));
        }
        if (!late_post && rank == 1) {
            compute_slowly();
        }
        OK(MPI_Win_complete(win));
    }
    MPI_Group_free(&origins);
    MPI_Group_free(&target);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void busy_target(MPI_Win win, int *mem)
{
    int v = 3000 + rank;

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        compute_slowly();
    } else if (rank < 8) {
        usleep(100000);
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Put(&v, 1, MPI_INT, 0, at(0, BUSY_AT + rank), 1, MPI_INT, win));
        OK(MPI_Win_flush(0, win));
        OK(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (int r = 1; r < nranks && r < 8; ++r) {
            CHECK(mem[BUSY_AT + r] == 3000 + r);
        }
        OK(MPI_Win_unlock(0, win));
    }
}

static void run(MPI_Win win, int *mem, const char *what)
{
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(mpi_test_is_gpuic(win));
    fence_late(win, mem);
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    lock_held_late(win, mem);
    pscw_late(win, mem, 1);
    pscw_late(win, mem, 0);
    busy_target(win, mem);
    if (rank == 0) {
        printf("slow_peer: %s done (%d failed checks so far on rank 0)\n", what,
               mpi_test_failures);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    MPI_Win win;
    int *mem;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) {
        if (rank == 0) {
            printf("slow_peer: needs 2 ranks or more\n");
        }
        MPI_Finalize();
        return 77;
    }

    MPI_Win_allocate(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    run(win, mem, "allocate window");
    MPI_Win_free(&win);

    mem = calloc(INTS, sizeof(int));
    MPI_Win_create(mem, INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    run(win, mem, "create window");
    MPI_Win_free(&win);

    memset(mem, 0, INTS * sizeof(int));
    bases = malloc(nranks * sizeof(*bases));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, mem, INTS * sizeof(int));
    MPI_Get_address(mem, &bases[rank]);
    MPI_Allgather(MPI_IN_PLACE, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    run(win, mem, "dynamic window");
    MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(bases);
    bases = NULL;
    free(mem);

    MPI_Win_allocate_shared(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                            &win);
    memset(mem, 0, INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    run(win, mem, "shared window");
    MPI_Win_free(&win);
    return mpi_test_finish("slow_peer");
}
