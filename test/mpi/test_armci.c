/*
 * ARMCI-MPI (Debian's libarmci-mpi-dev), unchanged, on gpuic windows: ARMCI_Malloc'd global
 * memory with contiguous put/get, scaled double accumulate, fetch-and-add and swap, strided
 * (2-D and 3-D) put/get/accumulate, value calls and ARMCI mutexes.  ARMCI-MPI maps these onto
 * MPI_Win_allocate/create, MPI_Win_lock_all, MPI_Put/Get/Accumulate, MPI_Fetch_and_op,
 * MPI_Win_flush and subarray datatypes, so every result is checked after the library's own
 * synchronization (ARMCI_Barrier, ARMCI_Fence) only.
 */
#include <armci.h>
#include <stdlib.h>

#include "mpi_test.h"

#define N 256     /* doubles per rank in the contiguous region */
#define ROWS 12   /* strided region: ROWS x COLS doubles per rank */
#define COLS 10
#define ITERS 10

static int me, nproc;

static double val(int rank, int i) { return rank * 1000.0 + i + 0.25; }

/* Every rank writes its slice into every rank's region; then each reads its left neighbor. */
static void contiguous(void)
{
    void **base = malloc(nproc * sizeof(void *));
    int chunk = N / nproc, left = (me + nproc - 1) % nproc;
    double *src = malloc(chunk * sizeof(double)), *got = malloc(N * sizeof(double));

    CHECK(ARMCI_Malloc(base, N * sizeof(double)) == 0);
    for (int i = 0; i < chunk; ++i) src[i] = val(me, i);
    for (int t = 0; t < nproc; ++t)
        ARMCI_Put(src, (double *)base[t] + me * chunk, chunk * sizeof(double), t);
    ARMCI_Barrier();   /* completes every put and synchronizes */

    ARMCI_Access_begin(base[me]);
    for (int r = 0; r < nproc; ++r)
        for (int i = 0; i < chunk; ++i)
            CHECK(((double *)base[me])[r * chunk + i] == val(r, i));
    ARMCI_Access_end(base[me]);

    ARMCI_Get(base[left], got, nproc * chunk * sizeof(double), left);
    for (int r = 0; r < nproc; ++r)
        for (int i = 0; i < chunk; ++i) CHECK(got[r * chunk + i] == val(r, i));

    /* scaled accumulate: rank 0's region += 2.5 * (rank + 1) from every rank */
    ARMCI_Barrier();
    double scale = 2.5;
    for (int i = 0; i < N; ++i) got[i] = me + 1;
    CHECK(ARMCI_Acc(ARMCI_ACC_DBL, &scale, got, base[0], N * sizeof(double), 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        double add = scale * nproc * (nproc + 1) / 2.0;
        ARMCI_Access_begin(base[0]);
        for (int r = 0; r < nproc; ++r)
            for (int i = 0; i < chunk; ++i)
                CHECK(((double *)base[0])[r * chunk + i] == val(r, i) + add);
        ARMCI_Access_end(base[0]);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_Free(base[me]) == 0);
    free(src); free(got); free(base);
}

/* ARMCI_Rmw fetch-and-add (int and long) on rank 0; every old value is seen exactly once. */
static void rmw(void)
{
    void **base = malloc(nproc * sizeof(void *));
    int olds[ITERS], *all = malloc(ITERS * nproc * sizeof(int)), *seen = calloc(ITERS * nproc, sizeof(int));
    long oldl;

    CHECK(ARMCI_Malloc(base, 4 * sizeof(long)) == 0);
    ARMCI_Access_begin(base[me]);
    ((long *)base[me])[0] = 0;   /* an int counter lives in the first long's bytes */
    ((long *)base[me])[1] = 1L << 40;
    ((long *)base[me])[2] = -1;
    ARMCI_Access_end(base[me]);
    ARMCI_Barrier();

    for (int k = 0; k < ITERS; ++k) {
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &olds[k], base[0], 1, 0) == 0);
        CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &oldl, (long *)base[0] + 1, 3, 0) == 0);
        CHECK(oldl >= (1L << 40) && oldl < (1L << 40) + 3L * ITERS * nproc && (oldl - (1L << 40)) % 3 == 0);
    }
    MPI_Allgather(olds, ITERS, MPI_INT, all, ITERS, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < ITERS * nproc; ++i) {
        CHECK(all[i] >= 0 && all[i] < ITERS * nproc);
        if (all[i] >= 0 && all[i] < ITERS * nproc) seen[all[i]]++;
    }
    for (int i = 0; i < ITERS * nproc; ++i) CHECK(seen[i] == 1);

    /* swap: each rank swaps its rank into rank 0's slot 2; the old values form a chain
       that contains -1 once and every rank but the last swapper once */
    long minel = me;
    CHECK(ARMCI_Rmw(ARMCI_SWAP_LONG, &minel, (long *)base[0] + 2, 0, 0) == 0);
    long *chain = malloc(nproc * sizeof(long));
    MPI_Allgather(&minel, 1, MPI_LONG, chain, 1, MPI_LONG, MPI_COMM_WORLD);
    int minus = 0;
    long sum = 0;
    for (int i = 0; i < nproc; ++i) {
        if (chain[i] == -1) minus++;
        else sum += chain[i];
    }
    CHECK(minus == 1);
    ARMCI_Barrier();
    long last = ARMCI_GetValueLong((long *)base[0] + 2, 0);
    CHECK(sum + last == (long)nproc * (nproc - 1) / 2);   /* the chain misses only the last */

    if (me == 0) {
        ARMCI_Access_begin(base[0]);
        CHECK(*(int *)base[0] == ITERS * nproc);
        CHECK(((long *)base[0])[1] == (1L << 40) + 3L * ITERS * nproc);
        ARMCI_Access_end(base[0]);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_Free(base[me]) == 0);
    free(all); free(seen); free(chain); free(base);
}

/* Strided: a 4 x 5 block from a local array with another leading dimension lands at (3, 2) of
   the right neighbor's ROWS x COLS array; read back with GetS into a third layout; AccS adds
   into the same block; a 3-D (2 levels) put fills two planes. */
static void strided(void)
{
    void **base = malloc(nproc * sizeof(void *));
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    enum { BR = 4, BC = 5, LD = 7, R0 = 3, C0 = 2 };
    double local[BR][LD], back[BR][BC + 1];
    int src_stride[2] = {LD * sizeof(double)}, dst_stride[2] = {COLS * sizeof(double)};
    int count[3] = {BC * sizeof(double), BR};

    CHECK(ARMCI_Malloc(base, 2 * ROWS * COLS * sizeof(double)) == 0);
    ARMCI_Access_begin(base[me]);
    for (int i = 0; i < 2 * ROWS * COLS; ++i) ((double *)base[me])[i] = -1;
    ARMCI_Access_end(base[me]);
    ARMCI_Barrier();

    for (int r = 0; r < BR; ++r)
        for (int c = 0; c < LD; ++c) local[r][c] = c < BC ? val(me, r * 100 + c) : -7;
    double *dst = (double *)base[right] + R0 * COLS + C0;
    CHECK(ARMCI_PutS(local, src_stride, dst, dst_stride, count, 1, right) == 0);
    ARMCI_Barrier();

    ARMCI_Access_begin(base[me]);
    for (int r = 0; r < ROWS; ++r)
        for (int c = 0; c < COLS; ++c) {
            int in = r >= R0 && r < R0 + BR && c >= C0 && c < C0 + BC;
            CHECK(((double *)base[me])[r * COLS + c] == (in ? val(left, (r - R0) * 100 + c - C0) : -1));
        }
    ARMCI_Access_end(base[me]);

    int back_stride[1] = {(BC + 1) * sizeof(double)};
    CHECK(ARMCI_GetS(dst, dst_stride, back, back_stride, count, 1, right) == 0);
    for (int r = 0; r < BR; ++r)
        for (int c = 0; c < BC; ++c) CHECK(back[r][c] == val(me, r * 100 + c));

    /* every rank adds 0.5 * (rank + 1) to rank 0's block */
    ARMCI_Barrier();
    double ones[BR][LD], scale = 0.5;
    for (int r = 0; r < BR; ++r)
        for (int c = 0; c < LD; ++c) ones[r][c] = me + 1;
    CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &scale, ones, src_stride,
                     (double *)base[0] + R0 * COLS + C0, dst_stride, count, 1, 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        ARMCI_Access_begin(base[0]);
        for (int r = 0; r < BR; ++r)
            for (int c = 0; c < BC; ++c)
                CHECK(((double *)base[0])[(R0 + r) * COLS + C0 + c] ==
                      val(nproc - 1, r * 100 + c) + 0.5 * nproc * (nproc + 1) / 2.0);
        ARMCI_Access_end(base[0]);
    }

    /* 3-D: 2 planes x 3 rows x 4 columns into the second half (plane stride ROWS*COLS) */
    double cube[2][3][4];
    int cs[2] = {4 * sizeof(double), 3 * 4 * sizeof(double)};
    int ds[2] = {COLS * sizeof(double), ROWS * COLS * sizeof(double) / 2};
    int cnt3[3] = {4 * sizeof(double), 3, 2};
    for (int p = 0; p < 2; ++p)
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) cube[p][r][c] = val(me, p * 10000 + r * 100 + c);
    ARMCI_Barrier();
    CHECK(ARMCI_PutS(cube, cs, (double *)base[right] + ROWS * COLS, ds, cnt3, 2, right) == 0);
    ARMCI_Barrier();
    ARMCI_Access_begin(base[me]);
    for (int p = 0; p < 2; ++p)
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c)
                CHECK(((double *)base[me])[ROWS * COLS + p * (ROWS * COLS / 2) + r * COLS + c] ==
                      val(left, p * 10000 + r * 100 + c));
    ARMCI_Access_end(base[me]);
    ARMCI_Barrier();
    CHECK(ARMCI_Free(base[me]) == 0);
    free(base);
}

/* ARMCI mutexes (built on MPI RMA) protect a non-atomic get-increment-put on rank 0. */
static void mutexes(void)
{
    void **base = malloc(nproc * sizeof(void *));

    CHECK(ARMCI_Malloc(base, sizeof(long)) == 0);
    ARMCI_Access_begin(base[me]);
    *(long *)base[me] = 0;
    ARMCI_Access_end(base[me]);
    CHECK(ARMCI_Create_mutexes(1) == 0);
    ARMCI_Barrier();
    for (int k = 0; k < ITERS; ++k) {
        ARMCI_Lock(0, 0);
        long v = ARMCI_GetValueLong(base[0], 0);
        ARMCI_PutValueLong(v + 1, base[0], 0);
        ARMCI_Fence(0);   /* the put completes before the mutex is released */
        ARMCI_Unlock(0, 0);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_GetValueLong(base[0], 0) == (long)ITERS * nproc);
    ARMCI_Barrier();
    CHECK(ARMCI_Destroy_mutexes() == 0);
    CHECK(ARMCI_Free(base[me]) == 0);
    free(base);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(ARMCI_Init() == 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    contiguous();
    rmw();
    strided();
    mutexes();
    ARMCI_Finalize();
    return mpi_test_finish("test_armci");
}
