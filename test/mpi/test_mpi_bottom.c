/*
 * MPI_BOTTOM as the origin or result buffer, with datatypes holding absolute addresses
 * (MPI_Get_address), in MPI_Put, MPI_Get, MPI_Accumulate and MPI_Get_accumulate.  ARMCI-MPI's
 * direct I/O-vector method (ARMCI_IOV_METHOD=DIRECT) issues exactly these calls.
 */
#include "mpi_test.h"

int main(int argc, char **argv)
{
    int rank, n, t, bl[2] = {1, 1};
    long mem[8], src[2] = {11, 22}, res[2];
    MPI_Aint disp[2];
    MPI_Datatype src_t, res_t;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    t = (rank + 1) % n;
    MPI_Get_address(&src[0], &disp[0]);
    MPI_Get_address(&src[1], &disp[1]);
    MPI_Type_create_hindexed(2, bl, disp, MPI_LONG, &src_t);
    MPI_Type_commit(&src_t);
    MPI_Get_address(&res[0], &disp[0]);
    MPI_Get_address(&res[1], &disp[1]);
    MPI_Type_create_hindexed(2, bl, disp, MPI_LONG, &res_t);
    MPI_Type_commit(&res_t);
    for (int i = 0; i < 8; ++i) mem[i] = 100 + i;
    MPI_Win_create(mem, sizeof mem, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(mpi_test_is_gpuic(win));

    /* each step touches its own slots of the right neighbor's window */
    MPI_Win_lock_all(0, win);
    MPI_Put(MPI_BOTTOM, 1, src_t, t, 0, 2, MPI_LONG, win);
    MPI_Accumulate(MPI_BOTTOM, 1, src_t, t, 2, 2, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush(t, win);
    res[0] = res[1] = -1;
    MPI_Get(MPI_BOTTOM, 1, res_t, t, 6, 2, MPI_LONG, win);
    MPI_Win_flush(t, win);
    CHECK(res[0] == 106 && res[1] == 107);
    res[0] = res[1] = -1;
    MPI_Get_accumulate(MPI_BOTTOM, 1, src_t, MPI_BOTTOM, 1, res_t, t, 4, 2, MPI_LONG, MPI_SUM,
                       win);
    MPI_Win_flush(t, win);
    CHECK(res[0] == 104 && res[1] == 105);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[0] == 11 && mem[1] == 22);    /* Put */
    CHECK(mem[2] == 113 && mem[3] == 125);  /* Accumulate */
    CHECK(mem[4] == 115 && mem[5] == 127);  /* Get_accumulate */
    if (mpi_test_failures)
        fprintf(stderr, "[rank %d] window: %ld %ld %ld %ld %ld %ld\n", rank, mem[0], mem[1],
                mem[2], mem[3], mem[4], mem[5]);
    MPI_Win_free(&win);
    MPI_Type_free(&src_t);
    MPI_Type_free(&res_t);
    return mpi_test_finish("test_mpi_bottom");
}
