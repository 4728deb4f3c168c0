/*
 * Large transfers under fence (MPI 3.1 section 11.5.1): each process puts 64 MiB into the next
 * process's window and gets 64 MiB from the previous one, each in one call, and checks the
 * data.  Run with a small osc_gpuic_timeout (testlist: 2 s, and 0.2 s over TCP loopback) on
 * oversubscribed ranks, where such a transfer takes longer than the timeout while it keeps
 * moving: a timeout is for a silent peer, so every call must succeed.  A barrier before each
 * fence keeps the processes' own loops (filling and checking 64 MiB) out of the fence's wait:
 * a peer that computes longer than the timeout before its fence is silent to the others.
 * Usage: test_large_transfer [MiB]  (default 64)
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

static uint64_t lt_pattern(int owner, int what, size_t i)
{
    return ((uint64_t)owner << 56) ^ ((uint64_t)what << 48) ^ (uint64_t)i * 2654435761u;
}

int main(int argc, char **argv)
{
    int rank, n, next, prev, rep;
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64, words, i, bad;
    uint64_t *base, *buf;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    words = (mib > 0 ? mib : 1) * (1u << 20) / sizeof(uint64_t);
    next = (rank + 1) % n;
    prev = (rank + n - 1) % n;
    buf = malloc(words * sizeof(uint64_t));
    CHECK(buf != NULL);
    CHECK(MPI_Win_allocate((MPI_Aint)(words * sizeof(uint64_t)), sizeof(uint64_t), MPI_INFO_NULL,
                           MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    for (rep = 0; rep < 2 && mpi_test_failures == 0; ++rep) {
        /* put: our pattern into the next process's window */
        for (i = 0; i < words; ++i) {
            base[i] = 0;
            buf[i] = lt_pattern(rank, rep, i);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
        CHECK(MPI_Put(buf, (int)words, MPI_UINT64_T, next, 0, (int)words, MPI_UINT64_T, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
        for (i = 0, bad = 0; i < words; ++i) {
            bad += base[i] != lt_pattern(prev, rep, i);
        }
        if (bad != 0) {
            fprintf(stderr, "[rank %d] put %d: %zu of %zu words wrong\n", rank, rep, bad, words);
            mpi_test_failures++;
        }

        /* get: the previous process's window, which holds its own pattern now */
        for (i = 0; i < words; ++i) {
            base[i] = lt_pattern(rank, rep + 2, i);
            buf[i] = 0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
        CHECK(MPI_Get(buf, (int)words, MPI_UINT64_T, prev, 0, (int)words, MPI_UINT64_T, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
        for (i = 0, bad = 0; i < words; ++i) {
            bad += buf[i] != lt_pattern(prev, rep + 2, i);
        }
        if (bad != 0) {
            fprintf(stderr, "[rank %d] get %d: %zu of %zu words wrong\n", rank, rep, bad, words);
            mpi_test_failures++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    MPI_Win_free(&win);
    free(buf);
    return mpi_test_finish("test_large_transfer");
}
