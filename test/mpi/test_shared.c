/*
 * MPI_Win_allocate_shared: MPI_Win_shared_query gives every process's part, contiguous by
 * default (each part right after the previous one) and page-aligned with
 * alloc_shared_noncontig; direct loads and stores through the query pointers, and MPI RMA calls
 * on the same window, see the same memory; zero-size parts; MPI_PROC_NULL query.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

static void run(int noncontig, int rank, int n)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win win;
    int *mybase, disp;
    MPI_Aint sz;
    size_t mysize = (rank % 2 == 1) ? 0 : (size_t)(rank + 1) * 100 * sizeof(int);

    if (noncontig) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    }
    CHECK(MPI_Win_allocate_shared(mysize, sizeof(int), info, MPI_COMM_WORLD, &mybase, &win) ==
          MPI_SUCCESS);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    CHECK(mpi_test_is_gpuic(win));

    char *prev_end = NULL;
    for (int r = 0; r < n; ++r) {
        int *p;
        MPI_Win_shared_query(win, r, &sz, &disp, &p);
        size_t want = (r % 2 == 1) ? 0 : (size_t)(r + 1) * 100 * sizeof(int);
        CHECK((size_t)sz == want && disp == (int)sizeof(int));
        if (r == rank) CHECK(sz == 0 || p == mybase);
        if (sz > 0) {
            if (!noncontig && prev_end != NULL) CHECK((char *)p == prev_end);
            if (noncontig) CHECK(((uintptr_t)p % 4096) == 0);
            prev_end = (char *)p + sz;
        }
    }
    int *first;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &disp, &first);
    CHECK(sz == 100 * sizeof(int));

    /* stores through my pointer, loads through the query pointer of others */
    MPI_Win_lock_all(0, win);
    for (size_t i = 0; i < mysize / sizeof(int); ++i) mybase[i] = rank * 10000 + (int)i;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    for (int r = 0; r < n; ++r) {
        int *p;
        MPI_Win_shared_query(win, r, &sz, &disp, &p);
        int bad = 0;
        for (MPI_Aint i = 0; i < sz / (MPI_Aint)sizeof(int); ++i) bad += p[i] != r * 10000 + i;
        CHECK(bad == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* RMA on the same window: everyone adds 1 to element 7 of rank 0 and puts into rank 2 */
    int one = 1;
    MPI_Accumulate(&one, 1, MPI_INT, 0, 7, 1, MPI_INT, MPI_SUM, win);
    if (n > 2) {
        int v = 555 + rank;
        MPI_Put(&v, 1, MPI_INT, 2, rank, 1, MPI_INT, win);
    }
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    CHECK(first[7] == 7 + n);
    if (n > 2) {
        int *p2;
        MPI_Win_shared_query(win, 2, &sz, &disp, &p2);
        for (int r = 0; r < n; ++r) CHECK(p2[r] == 555 + r);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int rank, n;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    run(0, rank, n);
    run(1, rank, n);
    return mpi_test_finish("test_shared");
}
