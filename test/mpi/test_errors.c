/*
 * Error classes under MPI_ERRORS_RETURN, and that a rejected call writes nothing and leaves the
 * window usable:
 *   MPI_ERR_RMA_SYNC   put/get outside an epoch, flush/unlock/unlock_all without a lock,
 *                      lock on a no_locks window, fence inside lock_all, rput under fence
 *   MPI_ERR_RMA_RANGE  an access past the end of the target window (and at a negative offset)
 *   MPI_ERR_RANK       flush to a rank outside the group
 *   MPI_ERR_UNSUPPORTED_OPERATION  calls gpuic does not implement yet
 */
#include <stdlib.h>

#include "mpi_test.h"

#define WIN_INTS 64

int main(int argc, char **argv)
{
    int rank, n, peer, *base, buf[WIN_INTS * 2], i, bad;
    MPI_Win win, nolock_win;
    MPI_Info info;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    peer = (rank + 1) % n;
    for (i = 0; i < WIN_INTS * 2; ++i) {
        buf[i] = 1000 + i;
    }

    MPI_Win_allocate(WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    CHECK(mpi_test_is_gpuic(win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (i = 0; i < WIN_INTS; ++i) {
        base[i] = -7;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* no epoch yet */
    CHECK_CLASS(MPI_Put(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Get(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_flush(peer, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_flush_local(peer, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_unlock(peer, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);

    /* out of range, in a fence epoch: nothing may be written */
    MPI_Win_fence(0, win);
    CHECK_CLASS(MPI_Put(buf, 2, MPI_INT, peer, WIN_INTS - 1, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Put(buf, WIN_INTS + 1, MPI_INT, peer, 0, WIN_INTS + 1, MPI_INT, win),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Put(buf, 1, MPI_INT, peer, -1, 1, MPI_INT, win), MPI_ERR_DISP);
    CHECK_CLASS(MPI_Get(buf, 1, MPI_INT, peer, WIN_INTS, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Rput(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win, &req), MPI_ERR_RMA_SYNC);
    /* a mismatched type signature */
    CHECK_CLASS(MPI_Put(buf, 2, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    /* the window still works: the last valid element */
    CHECK(MPI_Put(buf, 1, MPI_INT, peer, WIN_INTS - 1, 1, MPI_INT, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    bad = 0;
    for (i = 0; i < WIN_INTS - 1; ++i) {
        bad += base[i] != -7;
    }
    CHECK(bad == 0);
    CHECK(base[WIN_INTS - 1] == 1000);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

    /* passive target */
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    CHECK_CLASS(MPI_Win_flush(n, win), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Win_flush(-5, win), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Win_flush_local(n, win), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_flush(peer, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win) == MPI_SUCCESS);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win), MPI_ERR_RMA_SYNC); /* twice */
    CHECK_CLASS(MPI_Win_flush(n, win), MPI_ERR_RANK);
    if (n > 2) {
        /* flush to a target that is not locked */
        CHECK_CLASS(MPI_Win_flush((rank + 2) % n, win), MPI_ERR_RMA_SYNC);
    }
    CHECK(MPI_Win_unlock(peer, win) == MPI_SUCCESS);
    CHECK_CLASS(MPI_Win_unlock(peer, win), MPI_ERR_RMA_SYNC);

    /* the accumulate family: epochs and ranges, nothing written on error */
    {
        long lv = 5, lres = 0;
        CHECK_CLASS(MPI_Accumulate(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, win),
                    MPI_ERR_RMA_SYNC);
        CHECK_CLASS(MPI_Fetch_and_op(&lv, &lres, MPI_LONG, peer, 0, MPI_SUM, win),
                    MPI_ERR_RMA_SYNC);
        MPI_Win_lock_all(0, win);
        CHECK_CLASS(MPI_Accumulate(buf, 2, MPI_INT, peer, WIN_INTS - 1, 2, MPI_INT, MPI_SUM, win),
                    MPI_ERR_RMA_RANGE);
        /* an 8-byte atomic whose last 4 bytes are past the end */
        CHECK_CLASS(MPI_Fetch_and_op(&lv, &lres, MPI_LONG, peer, WIN_INTS - 1, MPI_SUM, win),
                    MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Compare_and_swap(&lv, &lv, &lres, MPI_LONG, peer, WIN_INTS - 1, win),
                    MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Get_accumulate(buf, 1, MPI_INT, buf + 4, 1, MPI_INT, peer, WIN_INTS, 1,
                                       MPI_INT, MPI_SUM, win), MPI_ERR_RMA_RANGE);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        bad = 0;
        for (i = 0; i < WIN_INTS - 1; ++i) {
            bad += base[i] != -7;
        }
        CHECK(bad == 0 && base[WIN_INTS - 1] == 1000);
    }

    /* no_locks: lock is erroneous, lock_all too */
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_Win_create(base, WIN_INTS * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &nolock_win);
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(nolock_win, MPI_ERRORS_RETURN);
    CHECK_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, nolock_win), MPI_ERR_RMA_SYNC);
    CHECK_CLASS(MPI_Win_lock_all(0, nolock_win), MPI_ERR_RMA_SYNC);
    /* fence epochs work as usual on it */
    MPI_Win_fence(0, nolock_win);
    CHECK(MPI_Put(buf, 1, MPI_INT, peer, 1, 1, MPI_INT, nolock_win) == MPI_SUCCESS);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, nolock_win);
    CHECK(base[1] == 1000);
    MPI_Win_free(&nolock_win);

    /* flavors not implemented yet fail cleanly at creation */
    {
        void *sbase = NULL;
        MPI_Win w = MPI_WIN_NULL;
        int rc = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &sbase, &w);
        int cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION);
        if (cls != MPI_ERR_UNSUPPORTED_OPERATION) fprintf(stderr, "allocate_shared: class %d\n", cls);
        if (rc == MPI_SUCCESS) MPI_Win_free(&w);
        /* Open MPI 4.1's MPI_Win_create_dynamic reports any failure as MPI_ERR_WIN */
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN);
        if (rc == MPI_SUCCESS) MPI_Win_free(&w);
    }

    MPI_Win_free(&win);
    return mpi_test_finish("test_errors");
}
