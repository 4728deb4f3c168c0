/*
 * Host RMA calls right after synchronous CUDA memory operations on the buffers they use.
 *
 * A cudaMemset of device memory, and a cudaMemcpy from pageable host memory, may return before
 * their bytes land (CUDA's "API synchronization behavior"); a program that calls MPI right
 * after them expects the call to see those bytes, as it would after a memcpy on the host.
 * Every round, on a GPU window (both flavors), with the calls small enough for the window
 * agent (which follows none of the program's streams) and, in the testlist, without it:
 *   A. cudaMemset of a 256 MiB origin buffer, then MPI_Put of its last 256 bytes;
 *   B. cudaMemcpy of 64 MiB from pageable memory into it, then MPI_Put of the copy's last bytes;
 *   C. cudaMemset of the buffer, then MPI_Get into its last 256 bytes (the memset must not
 *      land over the fetched bytes);
 *   D. cudaMemset of the buffer, then MPI_Accumulate (MPI_SUM, int64) from its last word and
 *      MPI_Fetch_and_op (MPI_NO_OP) into the word before;
 *   E. the target's cudaMemset of its whole window, MPI_Win_sync and a barrier, then a peer's
 *      8-byte put into the window's last word (the memset must not land over the put).
 * Each value is checked with cudaMemcpy after a flush and a barrier.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"

#define BIG ((size_t)256 << 20)   /* the origin buffer: a memset of it takes ~100 us */
#define COPY ((size_t)64 << 20)   /* the pageable copy of part B */
#define WIN ((size_t)64 << 20)    /* window bytes: slots at the start, E's word at the end */
#define SLOT 256                  /* bytes a rank puts into its slot of the target's window */
#define ROUNDS 8

static int rank, nranks;

static unsigned char value_of(int r, int k, int part)
{
    return (unsigned char)(1 + (r * 37 + k * 11 + part * 5) % 250);
}

static int bytes_are(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != v) return 0;
    }
    return 1;
}

/* Rank's slot in every window (A and B write it, C reads it back). */
static MPI_Aint slot_disp(int k)
{
    return (MPI_Aint)k * SLOT;
}

/* The int64 counter of part D: after the slots. */
static MPI_Aint counter_disp(void)
{
    return (MPI_Aint)nranks * SLOT;
}

static void put_checked(MPI_Win win, char *win_dev, char *big, int target, int source,
                        int r, int part)
{
    unsigned char got[SLOT];

    CHECK(MPI_Put(big + (part == 0 ? BIG : COPY) - SLOT, SLOT, MPI_BYTE, target,
                  slot_disp(rank), SLOT, MPI_BYTE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(target, win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_sync(win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(got, win_dev + slot_disp(source), SLOT, cudaMemcpyDeviceToHost));
    if (!bytes_are(got, SLOT, value_of(r, source, part))) {
        fprintf(stderr, "[rank %d] round %d part %c: slot of rank %d holds %u, expected %u\n",
                rank, r, 'A' + part, source, got[0], value_of(r, source, part));
        mpi_test_failures++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void round_run(MPI_Win win, char *win_dev, char *big, unsigned char *pageable, int r)
{
    int target = (rank + 1) % nranks, source = (rank + nranks - 1) % nranks;
    unsigned char got[SLOT];
    int64_t fetched = -1, expect;

    /* A: the origin's memset, then a put of its last bytes */
    CUDA_CHECK(cudaMemset(big, value_of(r, rank, 0), BIG));
    put_checked(win, win_dev, big, target, source, r, 0);

    /* B: a copy from pageable memory, then a put of its last bytes */
    memset(pageable, value_of(r, rank, 1), COPY);
    CUDA_CHECK(cudaMemcpy(big, pageable, COPY, cudaMemcpyHostToDevice));
    put_checked(win, win_dev, big, target, source, r, 1);

    /* C: the result buffer's memset must not land over what a get fetched into it */
    CUDA_CHECK(cudaMemset(big, 0xEE, BIG));
    CHECK(MPI_Get(big + BIG - SLOT, SLOT, MPI_BYTE, target, slot_disp(rank), SLOT, MPI_BYTE,
                  win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(target, win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(got, big + BIG - SLOT, SLOT, cudaMemcpyDeviceToHost));
    if (!bytes_are(got, SLOT, value_of(r, rank, 1))) {
        fprintf(stderr, "[rank %d] round %d part C: got %u, expected %u\n", rank, r, got[0],
                value_of(r, rank, 1));
        mpi_test_failures++;
    }

    /* D: an accumulate from a word the memset just wrote, a fetch into a word it overwrote;
     * only this rank adds to the target's counter, 0x0101..01 per round */
    CUDA_CHECK(cudaMemset(big, 0x01, BIG));
    CHECK(MPI_Accumulate(big + BIG - 8, 1, MPI_INT64_T, target, counter_disp(), 1, MPI_INT64_T,
                         MPI_SUM, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(target, win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemset(big, 0xEE, BIG));
    CHECK(MPI_Fetch_and_op(&fetched, big + BIG - 16, MPI_INT64_T, target, counter_disp(),
                           MPI_NO_OP, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(target, win) == MPI_SUCCESS);
    CUDA_CHECK(cudaMemcpy(&fetched, big + BIG - 16, 8, cudaMemcpyDeviceToHost));
    expect = (int64_t)((uint64_t)r * 0x0101010101010101ULL);
    if (fetched != expect) {
        fprintf(stderr, "[rank %d] round %d part D: counter %lld, expected %lld\n", rank, r,
                (long long)fetched, (long long)expect);
        mpi_test_failures++;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* E: the target's memset of its window must land before the barrier lets a peer put */
    {
        int64_t word = 1000 * r + source, mine = 1000 * r + rank, seen = 0;
        char *last = win_dev + WIN - 8;

        CUDA_CHECK(cudaMemset(win_dev + counter_disp() + 8, value_of(r, rank, 4),
                              WIN - (size_t)counter_disp() - 8));
        CHECK(MPI_Win_sync(win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Put(&mine, 1, MPI_INT64_T, target, (MPI_Aint)(WIN - 8), 1, MPI_INT64_T,
                      win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(target, win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_sync(win) == MPI_SUCCESS);
        CUDA_CHECK(cudaMemcpy(&seen, last, 8, cudaMemcpyDeviceToHost));
        if (seen != word) {
            fprintf(stderr, "[rank %d] round %d part E: last word %lld, expected %lld\n", rank,
                    r, (long long)seen, (long long)word);
            mpi_test_failures++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int flavors[2] = {MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_CREATE}, f, r, rc;
    unsigned char *pageable;
    char *big = NULL;

    if (!device_test_init(&argc, &argv, "test_sync_memops", &rank, &nranks)) {
        return 77;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pageable = (unsigned char *)malloc(COPY);
    CUDA_CHECK(cudaMalloc((void **)&big, BIG));
    CHECK(pageable != NULL);
    for (f = 0; f < 2 && pageable != NULL; ++f) {
        void *dev = NULL, *owned = NULL;
        MPI_Win win;

        rc = device_test_gpu_window(flavors[f], WIN, 1, &dev, &owned, &win);
        if (rc != MPI_SUCCESS) {
            /* peers on other (emulated) nodes and a UCX without CUDA memory */
            rc = device_test_window_refused(rc, rank, "test_sync_memops");
            if (owned != NULL) CUDA_CHECK(cudaFree(owned));
            CUDA_CHECK(cudaFree(big));
            free(pageable);
            return rc;
        }
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
        for (r = 1; r <= ROUNDS; ++r) {
            round_run(win, (char *)dev, big, pageable, r);
        }
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
        fprintf(stderr, "[rank %d] flavor %d done\n", rank, f);
        CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
        if (owned != NULL) CUDA_CHECK(cudaFree(owned));
    }
    CUDA_CHECK(cudaFree(big));
    free(pageable);
    return mpi_test_finish("test_sync_memops");
}
