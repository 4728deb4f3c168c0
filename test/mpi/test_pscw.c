/*
 * General active-target synchronization: post/start/complete/wait and test.
 *  - ring: every rank exposes to its left neighbour and accesses its right one, for many
 *    epochs, each putting an epoch-stamped value; the target checks it after wait;
 *  - changing groups between epochs (all-to-all, then pairs), MPI_Win_test polling;
 *  - MPI_MODE_NOCHECK;
 *  - errors: complete without start, wait without post, an access outside the start group,
 *    a fence inside an access epoch.
 */
#include <stdlib.h>

#include "mpi_test.h"

#define EPOCHS 50

static MPI_Group group_of(MPI_Group world, int *ranks, int n)
{
    MPI_Group g;

    MPI_Group_incl(world, n, ranks, &g);
    return g;
}

int main(int argc, char **argv)
{
    int rank, n, left, right, *base, val;
    MPI_Group world, to_left, to_right, all;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    left = (rank + n - 1) % n;
    right = (rank + 1) % n;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    to_left = group_of(world, &left, 1);
    to_right = group_of(world, &right, 1);
    MPI_Win_allocate(sizeof(int) * (n + 4), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < n + 4; ++i) base[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);

    /* ring: my left neighbour writes into me, I write into my right neighbour */
    for (int e = 0; e < EPOCHS; ++e) {
        CHECK(MPI_Win_post(to_left, 0, win) == MPI_SUCCESS);
        CHECK(MPI_Win_start(to_right, 0, win) == MPI_SUCCESS);
        val = e * 1000 + rank;
        CHECK(MPI_Put(&val, 1, MPI_INT, right, 0, 1, MPI_INT, win) == MPI_SUCCESS);
        if (n > 2) {
            /* outside the access group */
            int c = MPI_SUCCESS, rc = MPI_Put(&val, 1, MPI_INT, left, 1, 1, MPI_INT, win);
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
            CHECK(c == MPI_ERR_RMA_SYNC);
        }
        {
            int c = MPI_SUCCESS, rc = MPI_Win_fence(0, win);
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
            CHECK(c == MPI_ERR_RMA_SYNC);
        }
        CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
        CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
        CHECK(base[0] == e * 1000 + left);
    }

    /* all-to-all with test polling: everyone writes its rank into slot [rank + 1] */
    {
        int *ranks = malloc(sizeof(int) * n);
        for (int i = 0; i < n; ++i) ranks[i] = i;
        all = group_of(world, ranks, n);
        free(ranks);
        for (int e = 0; e < 5; ++e) {
            int flag = 0, polls = 0;
            MPI_Win_post(all, 0, win);
            MPI_Win_start(all, 0, win);
            val = e * 100 + rank;
            for (int t = 0; t < n; ++t) {
                MPI_Accumulate(&val, 1, MPI_INT, t, rank + 1, 1, MPI_INT, MPI_REPLACE, win);
            }
            MPI_Win_complete(win);
            while (!flag) {
                CHECK(MPI_Win_test(win, &flag) == MPI_SUCCESS);
                polls++;
            }
            for (int r = 0; r < n; ++r) CHECK(base[r + 1] == e * 100 + r);
        }
    }

    /* NOCHECK: the post is known to have happened (a barrier orders it) */
    MPI_Win_post(to_left, MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_start(to_right, MPI_MODE_NOCHECK, win);
    val = 4242 + rank;
    MPI_Put(&val, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(base[0] == 4242 + left);

    /* errors */
    {
        int c, rc;
        rc = MPI_Win_complete(win); c = MPI_SUCCESS; if (rc) MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_RMA_SYNC);
        rc = MPI_Win_wait(win); c = MPI_SUCCESS; if (rc) MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_RMA_SYNC);
        int flag;
        rc = MPI_Win_test(win, &flag); c = MPI_SUCCESS; if (rc) MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_RMA_SYNC);
        rc = MPI_Put(&val, 1, MPI_INT, right, 0, 1, MPI_INT, win); c = MPI_SUCCESS;
        if (rc) MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_RMA_SYNC);
    }

    MPI_Group_free(&all);
    MPI_Group_free(&to_left);
    MPI_Group_free(&to_right);
    MPI_Group_free(&world);
    MPI_Win_free(&win);
    return mpi_test_finish("test_pscw");
}
