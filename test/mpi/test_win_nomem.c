/*
 * Window creation that cannot get its memory: MPI_Win_allocate of 2^50 bytes on every rank,
 * then on one rank only (the others asking for a page).  Each must fail on every rank (the
 * ranks agree, so nobody is left waiting in a collective) with MPI_ERR_NO_MEM from the
 * component, which Open MPI 4.1's MPI_Win_allocate reports as MPI_ERR_WIN (it replaces any
 * failure's class by that one), leave MPI_WIN_NULL behind, and the job goes on: a window created afterwards works (puts and gets
 * checked) and, repeated, the failures leave nothing behind (the sanitizer passes check for
 * leaks).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define HUGE_BYTES ((MPI_Aint)1 << 50)
#define SMALL_BYTES 4096

static int rank, nranks;

static int error_class(int rc)
{
    int cls = MPI_SUCCESS;

    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    }
    return cls;
}

/* A window that must fail: MPI_ERR_NO_MEM on every rank, nothing left behind. */
static void expect_nomem(MPI_Aint size)
{
    MPI_Win win = MPI_WIN_NULL;
    void *base = NULL;
    int rc = MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);

    if (error_class(rc) != MPI_ERR_NO_MEM && error_class(rc) != MPI_ERR_WIN) {
        fprintf(stderr, "[rank %d] MPI_Win_allocate of %lld bytes: class %d, expected "
                "MPI_ERR_NO_MEM or MPI_ERR_WIN\n", rank, (long long)size, error_class(rc));
        mpi_test_failures++;
    }
    CHECK(win == MPI_WIN_NULL);
    if (win != MPI_WIN_NULL) {
        MPI_Win_free(&win);
    }
}

/* A window created after the failures works: a ring of puts, then gets, data checked. */
static void check_window_works(void)
{
    int64_t *base = NULL, got[8], vals[8];
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks, bad = 0;
    MPI_Win win;

    CHECK(MPI_Win_allocate(SMALL_BYTES, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                           &win) == MPI_SUCCESS);
    CHECK(mpi_test_is_gpuic(win));
    for (int i = 0; i < 8; ++i) base[i] = -1;
    MPI_Win_fence(0, win);
    for (int i = 0; i < 8; ++i) {
        vals[i] = rank * 100 + i;
        CHECK(MPI_Put(&vals[i], 1, MPI_INT64_T, right, i, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    }
    MPI_Win_fence(0, win);
    for (int i = 0; i < 8; ++i) bad += base[i] != left * 100 + i;
    CHECK(MPI_Get(got, 8, MPI_INT64_T, left, 0, 8, MPI_INT64_T, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    /* the left neighbour's window holds what its own left neighbour put */
    for (int i = 0; i < 8; ++i) bad += got[i] != ((left + nranks - 1) % nranks) * 100 + i;
    CHECK(bad == 0);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    /* window creation reports through the communicator's error handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    for (int round = 0; round < 3; ++round) {
        expect_nomem(HUGE_BYTES);
        expect_nomem(rank == 0 ? HUGE_BYTES : SMALL_BYTES);
        check_window_works();
    }
    return mpi_test_finish("test_win_nomem");
}
