/*
 * Window info: MPI_Win_get_info reports the keys gpuic honours with the values in effect;
 * MPI_Win_set_info then MPI_Win_get_info round-trips, a value a key does not take is left
 * out; accumulate_ordering=none and
 * accumulate_ops=same_op windows still give correct accumulates; the memory model is
 * MPI_WIN_UNIFIED; zero-size windows, windows on MPI_COMM_SELF and on a sub-communicator, and
 * many windows alive at once work.  no_locks=true is a hint: lock, lock_all and the
 * lock_all(MPI_MODE_NOCHECK) + MPI_Win_sync idiom of shared windows still work on such a window
 * (other MPI libraries serve them, and codes rely on it).  A window freed inside a
 * passive-target epoch (lock_all, or a lock) ends the epoch as its unlock would: the puts land.
 */
#include <stdlib.h>

#include "mpi_test.h"

static int info_has(MPI_Info info, const char *key, const char *want)
{
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;

    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (!flag) {
        return want == NULL;
    }
    return want != NULL && strcmp(value, want) == 0;
}

int main(int argc, char **argv)
{
    int rank, n, *base, *model, flag;
    MPI_Info info, got;
    MPI_Win win, wins[32];
    MPI_Comm half;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    MPI_Info_set(info, "accumulate_ops", "same_op");
    MPI_Info_set(info, "same_size", "true");
    MPI_Info_set(info, "same_disp_unit", "true");
    MPI_Win_allocate(64 * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    CHECK(mpi_test_is_gpuic(win));
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED);
    MPI_Win_get_info(win, &got);
    CHECK(info_has(got, "accumulate_ordering", "none"));
    CHECK(info_has(got, "accumulate_ops", "same_op"));
    MPI_Info_free(&got);

    /* set_info, then get_info */
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "rar,raw");
    MPI_Win_set_info(win, info);
    MPI_Info_free(&info);
    MPI_Win_get_info(win, &got);
    CHECK(info_has(got, "accumulate_ordering", "rar,raw"));
    MPI_Info_free(&got);

    /* values a key does not take are not in use: get_info leaves them out */
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "maybe");
    MPI_Info_set(info, "accumulate_ordering", "rar,,waw");
    MPI_Info_set(info, "accumulate_ops", "bogus");
    MPI_Info_set(info, "same_size", "1");
    MPI_Win_set_info(win, info);
    MPI_Info_free(&info);
    MPI_Win_get_info(win, &got);
    CHECK(info_has(got, "no_locks", NULL));
    CHECK(info_has(got, "accumulate_ordering", NULL));
    CHECK(info_has(got, "accumulate_ops", NULL));
    CHECK(info_has(got, "same_size", "1"));
    MPI_Info_free(&got);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win); /* no_locks stayed false */
    MPI_Win_unlock(0, win);

    /* accumulates still right */
    for (int i = 0; i < 64; ++i) base[i] = 0;
    MPI_Win_fence(0, win);
    int ones[64];
    for (int i = 0; i < 64; ++i) ones[i] = 1;
    MPI_Accumulate(ones, 64, MPI_INT, 0, 0, 64, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 0) for (int i = 0; i < 64; ++i) CHECK(base[i] == n);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Win_free(&win);

    /* no_locks=true: locks are still served (create window, then a shared window read with
     * loads after MPI_Win_sync, as codes open the epoch that sync needs) */
    {
        int wbuf[4] = {0, 0, 0, 0}, peer = (rank + 1) % n, left = (rank + n - 1) % n, val;
        MPI_Win nl;
        int *sh, *root, du;
        MPI_Aint sz;
        MPI_Comm node;

        MPI_Info_create(&info);
        MPI_Info_set(info, "no_locks", "true");
        MPI_Win_create(wbuf, sizeof(wbuf), sizeof(int), info, MPI_COMM_WORLD, &nl);
        MPI_Win_get_info(nl, &got);
        CHECK(info_has(got, "no_locks", "true"));
        MPI_Info_free(&got);
        val = 100 + rank;
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, nl) == MPI_SUCCESS);
        CHECK(MPI_Put(&val, 1, MPI_INT, peer, 0, 1, MPI_INT, nl) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, nl) == MPI_SUCCESS);
        val = 1;
        CHECK(MPI_Win_lock_all(0, nl) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&val, 1, MPI_INT, peer, 1, 1, MPI_INT, MPI_SUM, nl) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_unlock_all(nl) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, nl) == MPI_SUCCESS);
        CHECK(wbuf[0] == 100 + left && wbuf[1] == 1);
        CHECK(MPI_Win_unlock(rank, nl) == MPI_SUCCESS);
        /* fence epochs work as usual on it */
        val = 2000 + rank;
        MPI_Win_fence(0, nl);
        CHECK(MPI_Put(&val, 1, MPI_INT, peer, 2, 1, MPI_INT, nl) == MPI_SUCCESS);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, nl);
        CHECK(wbuf[2] == 2000 + left);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_free(&nl);

        /* only the node's first rank gives memory; everyone writes its word and reads all */
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        int nr, nn;
        MPI_Comm_rank(node, &nr);
        MPI_Comm_size(node, &nn);
        MPI_Win_allocate_shared(nr == 0 ? (MPI_Aint)(nn * sizeof(int)) : 0, sizeof(int), info,
                                node, &sh, &nl);
        CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, nl) == MPI_SUCCESS);
        MPI_Win_shared_query(nl, MPI_PROC_NULL, &sz, &du, &root);
        CHECK(root != NULL && sz == (MPI_Aint)(nn * sizeof(int)) && du == sizeof(int));
        if (root != NULL) {
            root[nr] = 7 * nr + 1;
        }
        CHECK(MPI_Win_sync(nl) == MPI_SUCCESS);
        MPI_Barrier(node);
        CHECK(MPI_Win_sync(nl) == MPI_SUCCESS);
        for (int i = 0; root != NULL && i < nn; ++i) {
            CHECK(root[i] == 7 * i + 1);
        }
        CHECK(MPI_Win_unlock_all(nl) == MPI_SUCCESS);
        MPI_Win_free(&nl);
        MPI_Comm_free(&node);
        MPI_Info_free(&info);
    }

    /* MPI_Win_free inside lock_all, then inside a lock: the epoch ends, the puts have landed */
    for (int mode = 0; mode < 2; ++mode) {
        int ubuf[2] = {-1, -1}, val = 1000 * (mode + 1) + rank, peer = (rank + 1) % n;
        int left = (rank + n - 1) % n;
        MPI_Win fw;

        MPI_Win_create(ubuf, sizeof(ubuf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &fw);
        MPI_Win_set_errhandler(fw, MPI_ERRORS_RETURN);
        if (mode == 0) {
            CHECK(MPI_Win_lock_all(0, fw) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, fw) == MPI_SUCCESS);
        }
        CHECK(MPI_Put(&val, 1, MPI_INT, peer, mode, 1, MPI_INT, fw) == MPI_SUCCESS);
        CHECK(MPI_Win_free(&fw) == MPI_SUCCESS);
        CHECK(fw == MPI_WIN_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(ubuf[mode] == 1000 * (mode + 1) + left && ubuf[1 - mode] == -1);
    }

    /* zero-size window: synchronization works, any access is out of range */
    MPI_Win_allocate(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    int v = 1, rc = MPI_Put(&v, 1, MPI_INT, (rank + 1) % n, 0, 1, MPI_INT, win), cls = 0;
    if (rc) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE);
    CHECK(MPI_Put(&v, 0, MPI_INT, (rank + 1) % n, 0, 0, MPI_INT, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* MPI_COMM_SELF */
    MPI_Win_allocate(16, 1, MPI_INFO_NULL, MPI_COMM_SELF, &base, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    v = 4321;
    MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    CHECK(base[0] == 4321);
    MPI_Win_free(&win);

    /* a sub-communicator: even and odd ranks */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, half, &base, &win);
    *base = -1;
    MPI_Win_fence(0, win);
    v = rank;
    MPI_Put(&v, 1, MPI_INT, (hr + 1) % hn, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    /* my left neighbour in the half, as a world rank */
    int left_world = rank - 2 * ((hr == 0) ? -(hn - 1) : 1);
    CHECK(*base == left_world);
    MPI_Win_free(&win);
    MPI_Comm_free(&half);

    /* many windows alive at once, used in interleaved order */
    int *bases[32];
    for (int w = 0; w < 32; ++w) {
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bases[w],
                         &wins[w]);
        *bases[w] = 0;
        MPI_Win_lock_all(0, wins[w]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 31; w >= 0; --w) {
        int add = w + 1;
        MPI_Accumulate(&add, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, wins[w]);
        MPI_Win_flush(0, wins[w]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < 32; ++w) {
        MPI_Win_unlock_all(wins[w]);
        if (rank == 0) CHECK(*bases[w] == (w + 1) * n);
        MPI_Win_free(&wins[w]);
    }
    return mpi_test_finish("test_info");
}
