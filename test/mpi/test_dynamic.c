/*
 * MPI_Win_create_dynamic with MPI_Win_attach/MPI_Win_detach: several regions per process,
 * attached and detached over time; put, get, accumulate, fetch_and_op, compare_and_swap and
 * request-based calls to addresses exchanged with MPI_Get_address; a region re-attached at a
 * new address is found (the origin's cached table is refreshed).
 */
#include <stdlib.h>

#include "mpi_test.h"

#define REGIONS 4
#define INTS 128

int main(int argc, char **argv)
{
    int rank, n, peer, *mem[REGIONS], src[INTS], dst[INTS];
    MPI_Aint mine[REGIONS], *all;
    MPI_Win win;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    peer = (rank + 1) % n;
    all = malloc(sizeof(MPI_Aint) * REGIONS * n);
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(mpi_test_is_gpuic(win));

    for (int round = 0; round < 3; ++round) {
        for (int r = 0; r < REGIONS; ++r) {
            mem[r] = malloc(INTS * sizeof(int));
            for (int i = 0; i < INTS; ++i) mem[r][i] = -1;
            CHECK(MPI_Win_attach(win, mem[r], INTS * sizeof(int)) == MPI_SUCCESS);
            MPI_Get_address(mem[r], &mine[r]);
        }
        MPI_Allgather(mine, REGIONS, MPI_AINT, all, REGIONS, MPI_AINT, MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        for (int r = 0; r < REGIONS; ++r) {
            MPI_Aint t = all[peer * REGIONS + r];
            for (int i = 0; i < INTS; ++i) src[i] = round * 100000 + rank * 1000 + r * 100 + i;
            MPI_Put(src, INTS / 2, MPI_INT, peer, t, INTS / 2, MPI_INT, win);
            MPI_Rput(src + INTS / 2, INTS / 4, MPI_INT, peer,
                     MPI_Aint_add(t, (INTS / 2) * sizeof(int)), INTS / 4, MPI_INT, win, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Accumulate(src, 1, MPI_INT, peer, MPI_Aint_add(t, (INTS - 1) * sizeof(int)), 1,
                           MPI_INT, MPI_SUM, win);
            MPI_Win_flush(peer, win);
            MPI_Get(dst, INTS / 2, MPI_INT, peer, t, INTS / 2, MPI_INT, win);
            MPI_Win_flush(peer, win);
            int bad = 0;
            for (int i = 0; i < INTS / 2; ++i) bad += dst[i] != src[i];
            CHECK(bad == 0);
            int one = 1, old = 0, cmp = 7, newv = 9, res = 0;
            MPI_Fetch_and_op(&one, &old, MPI_INT, peer, MPI_Aint_add(t, (INTS - 2) * sizeof(int)),
                             MPI_SUM, win);
            MPI_Win_flush(peer, win);
            CHECK(old == -1);
            MPI_Compare_and_swap(&newv, &cmp, &res, MPI_INT, peer,
                                 MPI_Aint_add(t, (INTS - 3) * sizeof(int)), win);
            MPI_Win_flush(peer, win);
            CHECK(res == -1);
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        int writer = (rank + n - 1) % n;
        for (int r = 0; r < REGIONS; ++r) {
            int bad = 0;
            for (int i = 0; i < INTS / 2 + INTS / 4; ++i) {
                bad += mem[r][i] != round * 100000 + writer * 1000 + r * 100 + i;
            }
            CHECK(bad == 0);
            CHECK(mem[r][INTS / 2 + INTS / 4] == -1);
            CHECK(mem[r][INTS - 1] == -1 + round * 100000 + writer * 1000 + r * 100);
            CHECK(mem[r][INTS - 2] == 0);
            CHECK(mem[r][INTS - 3] == -1);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = 0; r < REGIONS; ++r) {
            CHECK(MPI_Win_detach(win, mem[r]) == MPI_SUCCESS);
            free(mem[r]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    free(all);
    return mpi_test_finish("test_dynamic");
}
