/*
 * A process that dies inside an epoch must not hang the others (osc_gpuic_timeout).  Run by
 * peer_death.sh at 3 ranks with a short timeout:
 *   rank 2 takes an exclusive lock on rank 0's window, opens an access epoch (MPI_Win_start)
 *   towards rank 0 on a second window, then kills itself;
 *   rank 0 waits for rank 2's MPI_Win_complete (MPI_Win_wait), then locks its own window;
 *   rank 1 locks rank 0's window;
 *   then ranks 0 and 1 call MPI_Win_fence on a third window, which rank 2 never reaches.
 * Each wait must fail within a bounded time.  Each survivor prints one line
 *   "peer_death: rank R CALL: class C after S s: PASS|FAIL"
 * and leaves without MPI_Finalize (the collective teardown would wait for the dead rank).
 * The script checks these lines: the launcher's exit status reflects the killed rank.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpi_test.h"

/* Generous: the timeout under test is a few seconds. */
#define PEER_DEATH_MAX_SECONDS 20.0

static int peer_death_report(int rank, const char *call, int rc, double t0)
{
    double elapsed = MPI_Wtime() - t0;
    int cls = MPI_SUCCESS, ok;

    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    }
    ok = cls == MPI_ERR_OTHER && elapsed < PEER_DEATH_MAX_SECONDS;
    printf("peer_death: rank %d %s: class %d after %.1f s: %s\n", rank, call, cls, elapsed,
           ok ? "PASS" : "FAIL");
    fflush(stdout);
    return ok;
}

int main(int argc, char **argv)
{
    int rank, n, *base1, *base2, *base3, ok = 1, zero = 0, two = 2;
    MPI_Win win1, win2, win3;
    MPI_Group world, group0, group2;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 3) {
        if (rank == 0) {
            fprintf(stderr, "test_peer_death needs 3 ranks\n");
        }
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base1, &win1);
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base2, &win2);
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base3, &win3);
    if (!mpi_test_is_gpuic(win1)) {
        fprintf(stderr, "not a gpuic window\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_set_errhandler(win1, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(win2, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(win3, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &zero, &group0);
    MPI_Group_incl(world, 1, &two, &group2);

    if (rank == 0) {
        MPI_Win_post(group2, 0, win2);
    } else if (rank == 2) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win1);
        MPI_Win_start(group0, 0, win2);
    }
    /* Everyone knows rank 2 holds the lock and the access epoch before it dies. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2) {
        raise(SIGKILL);
    }
    /* Let the launcher see the death first, as it would in a real failure. */
    sleep(1);

    if (rank == 0) {
        t0 = MPI_Wtime();
        ok &= peer_death_report(rank, "MPI_Win_wait", MPI_Win_wait(win2), t0);
        t0 = MPI_Wtime();
        ok &= peer_death_report(rank, "MPI_Win_lock(shared, 0)",
                                MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win1), t0);
    } else {
        t0 = MPI_Wtime();
        ok &= peer_death_report(rank, "MPI_Win_lock(exclusive, 0)",
                                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win1), t0);
    }
    /* A fence is a barrier over the window: without rank 2 it cannot complete. */
    t0 = MPI_Wtime();
    ok &= peer_death_report(rank, "MPI_Win_fence", MPI_Win_fence(0, win3), t0);
    /* The job cannot end normally (MPI_Finalize is collective); leave at once. */
    _exit(ok ? 0 : 1);
}
