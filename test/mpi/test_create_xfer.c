/*
 * Data through MPI_Win_create windows (user memory, reached through UCX or a same-node copy
 * path rather than a mapping) in the many-target patterns: every rank gets from every rank,
 * gets from both neighbours, puts to every rank and to its right neighbour at once, under
 * lock_all with flush_all or flush, and lock/put/unlock; sizes from 8 bytes to 4 MiB.  Every
 * byte is checked.  Runs at any number of ranks (2 or more).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

static unsigned char pattern(size_t i, int source, int round, size_t size)
{
    return (unsigned char)(i * 131u + size * 7u + (size_t)source * 61u + (size_t)round * 17u + 1u);
}

static void fill(unsigned char *buf, size_t size, int source, int round)
{
    for (size_t i = 0; i < size; ++i) buf[i] = pattern(i, source, round, size);
}

static int matches(const unsigned char *buf, size_t size, int source, int round)
{
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != pattern(i, source, round, size)) return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 4096, 65536 + 8, 1 << 20, (4 << 20) + 24};
    int rank, n;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        size_t size = sizes[k], total = (size_t)n * size;
        int right = (rank + 1) % n, left = (rank + n - 1) % n;
        unsigned char *mem = malloc(total), *src = malloc(size), *dst = malloc(total);
        MPI_Win win;

        CHECK(mem != NULL && src != NULL && dst != NULL);
        if (mem == NULL || src == NULL || dst == NULL) break;
        MPI_Win_create(mem, (MPI_Aint)total, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

        for (int round = 0; round < 3; ++round) {
            /* gets from every rank (itself too), then from both neighbours */
            for (int s = 0; s < n; ++s) fill(mem + (size_t)s * size, size, rank, round);
            memset(dst, 0, total);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_lock_all(0, win);
            for (int t = 0; t < n; ++t) {
                MPI_Get(dst + (size_t)t * size, (int)size, MPI_BYTE, t,
                        (MPI_Aint)((size_t)rank * size), (int)size, MPI_BYTE, win);
            }
            MPI_Win_flush_all(win);
            for (int t = 0; t < n; ++t) CHECK(matches(dst + (size_t)t * size, size, t, round));
            memset(dst, 0, total);
            MPI_Get(dst, (int)size, MPI_BYTE, right, (MPI_Aint)((size_t)rank * size), (int)size,
                    MPI_BYTE, win);
            MPI_Get(dst + size, (int)size, MPI_BYTE, left, (MPI_Aint)((size_t)rank * size),
                    (int)size, MPI_BYTE, win);
            MPI_Win_flush_all(win);
            CHECK(matches(dst, size, right, round));
            CHECK(matches(dst + size, size, left, round));
            MPI_Win_unlock_all(win);
            MPI_Barrier(MPI_COMM_WORLD);

            /* puts to every rank (its own slot at each), then to the right neighbour */
            memset(mem, 0, total);
            fill(src, size, rank, round);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_lock_all(0, win);
            for (int t = 0; t < n; ++t) {
                MPI_Put(src, (int)size, MPI_BYTE, t, (MPI_Aint)((size_t)rank * size), (int)size,
                        MPI_BYTE, win);
            }
            MPI_Win_flush_all(win);
            MPI_Win_unlock_all(win);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int o = 0; o < n; ++o) CHECK(matches(mem + (size_t)o * size, size, o, round));
            memset(mem, 0, total);
            fill(src, size, rank, round + 7);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_lock_all(0, win);
            MPI_Put(src, (int)size, MPI_BYTE, right, (MPI_Aint)((size_t)rank * size), (int)size,
                    MPI_BYTE, win);
            MPI_Win_flush(right, win);
            MPI_Win_unlock_all(win);
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK(matches(mem + (size_t)left * size, size, left, round + 7));

            /* lock/put/unlock, every rank to its right neighbour */
            memset(mem, 0, total);
            fill(src, size, rank, round + 13);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
            MPI_Put(src, (int)size, MPI_BYTE, right, (MPI_Aint)((size_t)rank * size), (int)size,
                    MPI_BYTE, win);
            MPI_Win_unlock(right, win);
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK(matches(mem + (size_t)left * size, size, left, round + 13));
        }
        MPI_Win_free(&win);
        free(mem);
        free(src);
        free(dst);
    }
    return mpi_test_finish("test_create_xfer");
}
