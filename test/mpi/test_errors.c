/*
 * Error classes under MPI_ERRORS_RETURN, and that a rejected call writes nothing and leaves the
 * window usable:
 *   MPI_ERR_RMA_SYNC   put/get outside an epoch, flush/unlock/unlock_all without a lock,
 *                      fence inside lock_all, rput under fence
 *   MPI_ERR_RMA_RANGE  an access past the end of the target window, or to memory not attached
 *                      to a dynamic window (before attach, past a region, after detach)
 *   MPI_ERR_DISP       a negative displacement (checked by Open MPI itself)
 *   MPI_ERR_RANK       flush to a rank outside the group
 *   MPI_ERR_RMA_FLAVOR attach and detach on the wrong flavor
 *   MPI_ERR_RMA_ATTACH overlapping attach; MPI_ERR_ARG detach of memory not attached
 */
#include <stdlib.h>

#include "mpi_test.h"

#define WIN_INTS 64

int main(int argc, char **argv)
{
    int rank, n, peer, *base, buf[WIN_INTS * 2], i, bad;
    MPI_Win win;
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

    /* flavor-specific calls on the wrong flavor */
    CHECK_CLASS(MPI_Win_attach(win, buf, sizeof(buf)), MPI_ERR_RMA_FLAVOR);
    CHECK_CLASS(MPI_Win_detach(win, buf), MPI_ERR_RMA_FLAVOR);


    /* dynamic windows: overlapping attach, detach of what is not attached, access to memory
     * that is not attached (nothing written), access after detach */
    {
        MPI_Win dwin;
        int *mem = malloc(64 * sizeof(int)), *other = malloc(16 * sizeof(int));
        MPI_Aint addrs[2], *all = malloc(2 * n * sizeof(MPI_Aint));
        for (i = 0; i < 64; ++i) mem[i] = -3;
        for (i = 0; i < 16; ++i) other[i] = -4;
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dwin);
        MPI_Win_set_errhandler(dwin, MPI_ERRORS_RETURN);
        CHECK(MPI_Win_attach(dwin, mem, 32 * sizeof(int)) == MPI_SUCCESS);
        CHECK_CLASS(MPI_Win_attach(dwin, mem + 16, 32 * sizeof(int)), MPI_ERR_RMA_ATTACH);
        CHECK_CLASS(MPI_Win_detach(dwin, mem + 1), MPI_ERR_ARG);
        MPI_Get_address(mem, &addrs[0]);
        MPI_Get_address(other, &addrs[1]);
        MPI_Allgather(addrs, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
        MPI_Win_lock_all(0, dwin);
        MPI_Aint pmem = all[2 * peer], pother = all[2 * peer + 1];
        /* straddles the end of the attached 32 ints */
        CHECK_CLASS(MPI_Put(buf, 2, MPI_INT, peer, MPI_Aint_add(pmem, 31 * sizeof(int)), 2,
                            MPI_INT, dwin), MPI_ERR_RMA_RANGE);
        /* memory never attached */
        CHECK_CLASS(MPI_Put(buf, 1, MPI_INT, peer, pother, 1, MPI_INT, dwin), MPI_ERR_RMA_RANGE);
        CHECK_CLASS(MPI_Accumulate(buf, 1, MPI_INT, peer, pother, 1, MPI_INT, MPI_SUM, dwin),
                    MPI_ERR_RMA_RANGE);
        CHECK(MPI_Put(buf, 1, MPI_INT, peer, MPI_Aint_add(pmem, 31 * sizeof(int)), 1, MPI_INT,
                      dwin) == MPI_SUCCESS);
        MPI_Win_flush(peer, dwin);
        MPI_Win_unlock_all(dwin);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(mem[31] == 1000 && mem[32] == -3);
        for (i = 0; i < 16; ++i) CHECK(other[i] == -4);
        /* detach, then an access to the detached memory fails and writes nothing */
        CHECK(MPI_Win_detach(dwin, mem) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, dwin);
        CHECK_CLASS(MPI_Put(buf, 1, MPI_INT, peer, pmem, 1, MPI_INT, dwin), MPI_ERR_RMA_RANGE);
        MPI_Win_unlock_all(dwin);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(mem[0] == -3);
        MPI_Win_free(&dwin);
        free(all);
        free(mem);
        free(other);
    }

    /* MPI_Win_shared_query on a window that is not a shared one (MPI 4.0 12.2.3): this
     * process's own memory, a peer's memory where it can be loaded and stored (its base must
     * then hold what the peer wrote), else size 0 and no base */
    {
        MPI_Aint qsize;
        int qdisp, r, val;
        int *qbase;
        MPI_Win_fence(0, win);
        base[WIN_INTS - 1] = 7000 + rank;
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        for (r = 0; r < n; ++r) {
            CHECK(MPI_Win_shared_query(win, r, &qsize, &qdisp, &qbase) == MPI_SUCCESS);
            CHECK(qdisp == (int)sizeof(int));
            if (r == rank) {
                CHECK(qbase == base && qsize == (MPI_Aint)(WIN_INTS * sizeof(int)));
            } else if (qbase != NULL) {
                CHECK(qsize == (MPI_Aint)(WIN_INTS * sizeof(int)));
                val = __atomic_load_n(&qbase[WIN_INTS - 1], __ATOMIC_ACQUIRE);
                CHECK(val == 7000 + r);
            } else {
                CHECK(qsize == 0);
            }
        }
        CHECK(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &qbase) == MPI_SUCCESS);
        CHECK_CLASS(MPI_Win_shared_query(win, n, &qsize, &qdisp, &qbase), MPI_ERR_RANK);
    }

    MPI_Win_free(&win);
    return mpi_test_finish("test_errors");
}
