/*
 * Creates and frees windows of every flavor in a loop, with one access each, so that a leak
 * per window shows up many times over (run under valgrind by valgrind_winloop.sh; also a plain
 * test).  WINLOOP_ITERS overrides the number of rounds (default 20).
 */
#include <stdlib.h>

#include "mpi_test.h"

#define WINLOOP_BYTES 256

int main(int argc, char **argv)
{
    int rank, n, peer, it, iters = 20, one = 1, got = 0;
    const char *env = getenv("WINLOOP_ITERS");
    char *base, *mem = malloc(WINLOOP_BYTES);
    MPI_Aint addr, peer_addr;
    MPI_Comm shm;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    peer = (rank + 1) % n;
    if (env != NULL) {
        iters = atoi(env);
    }
    for (it = 0; it < iters; ++it) {
        MPI_Win_allocate(WINLOOP_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        CHECK(mpi_test_is_gpuic(win));
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
        MPI_Put(&one, 1, MPI_INT, peer, 0, 1, MPI_INT, win);
        MPI_Fetch_and_op(&one, &got, MPI_INT, peer, 4, MPI_SUM, win);
        MPI_Win_unlock(peer, win);
        MPI_Win_free(&win);

        MPI_Win_create(mem, WINLOOP_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_fence(0, win);
        MPI_Get(&got, 1, MPI_INT, peer, 8, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        MPI_Win_free(&win);

        MPI_Win_allocate_shared(WINLOOP_BYTES, 1, MPI_INFO_NULL, shm, &base, &win);
        MPI_Win_lock_all(0, win);
        MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);

        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, mem, WINLOOP_BYTES);
        MPI_Get_address(mem, &addr);
        MPI_Sendrecv(&addr, 1, MPI_AINT, (rank + n - 1) % n, 0, &peer_addr, 1, MPI_AINT, peer, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
        MPI_Put(&one, 1, MPI_INT, peer, peer_addr + 16, 1, MPI_INT, win);
        MPI_Win_unlock(peer, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
    }
    MPI_Comm_free(&shm);
    free(mem);
    return mpi_test_finish("test_winloop");
}
