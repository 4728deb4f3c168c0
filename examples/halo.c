/*
 * halo: a 1-D halo exchange with MPI_Put, run twice: once in fence epochs and once in a
 * lock_all epoch with MPI_Win_flush.  Each rank owns N cells plus one ghost cell on each side;
 * every step it puts its edge cells into its neighbours' ghost cells, then averages.  The
 * result is checked against the same computation done serially, and the program prints which
 * osc component served the window.
 *
 *   mpirun -np 4 --mca osc gpuic ./halo
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define N     64  /* cells per rank */
#define STEPS 20

static double initial(long i)
{
    return (double)((i * 7919) % 101);
}

/* One smoothing step over [1, n] using ghost cells 0 and n+1. */
static void smooth(const double *in, double *out, long n)
{
    for (long i = 1; i <= n; ++i) {
        out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0;
    }
}

/* The same STEPS on the whole domain in one array (periodic), as the reference. */
static double *reference(int nranks)
{
    long total = (long)N * nranks;
    double *a = calloc(total + 2, sizeof(double)), *b = calloc(total + 2, sizeof(double));

    for (long i = 0; i < total; ++i) {
        a[i + 1] = initial(i);
    }
    for (int s = 0; s < STEPS; ++s) {
        a[0] = a[total];
        a[total + 1] = a[1];
        smooth(a, b, total);
        double *t = a; a = b; b = t;
    }
    free(b);
    return a;
}

/* Runs the exchange; mode 0: fence, mode 1: lock_all + flush + barrier. */
static int run(int mode, int rank, int nranks, const double *ref)
{
    int left = (rank + nranks - 1) % nranks, right = (rank + 1) % nranks;
    double *cur, *next = calloc(N + 2, sizeof(double));
    char name[MPI_MAX_OBJECT_NAME];
    int len, errors = 0;
    MPI_Win win;

    MPI_Win_allocate((N + 2) * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &cur, &win);
    for (long i = 0; i < N; ++i) {
        cur[i + 1] = initial((long)rank * N + i);
    }
    if (mode == 0) {
        MPI_Win_fence(0, win);
    } else {
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int s = 0; s < STEPS; ++s) {
        /* my first cell -> left neighbour's right ghost; my last cell -> right's left ghost */
        MPI_Put(&cur[1], 1, MPI_DOUBLE, left, N + 1, 1, MPI_DOUBLE, win);
        MPI_Put(&cur[N], 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, win);
        if (mode == 0) {
            MPI_Win_fence(0, win);
        } else {
            MPI_Win_flush(left, win);
            MPI_Win_flush(right, win);
            MPI_Barrier(MPI_COMM_WORLD); /* neighbours' puts into my ghosts are complete */
            MPI_Win_sync(win);
        }
        smooth(cur, next, N);
        if (mode == 1) {
            MPI_Barrier(MPI_COMM_WORLD); /* nobody overwrites my ghosts before I read them */
        }
        memcpy(&cur[1], &next[1], N * sizeof(double));
        if (mode == 0) {
            MPI_Win_fence(0, win);
        }
    }
    if (mode == 0) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    } else {
        MPI_Win_unlock_all(win);
    }
    for (long i = 0; i < N; ++i) {
        if (fabs(cur[i + 1] - ref[(long)rank * N + i + 1]) > 1e-9) {
            errors++;
        }
    }
    MPI_Win_get_name(win, name, &len);
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("halo %-15s %d ranks x %d cells, %d steps: %s (window \"%s\")\n",
               mode == 0 ? "fence" : "lock_all+flush", nranks, N, STEPS,
               errors == 0 ? "verified" : "WRONG", name);
    }
    MPI_Win_free(&win);
    free(next);
    return errors;
}

int main(int argc, char **argv)
{
    int rank, nranks, errors;
    double *ref;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    ref = reference(nranks);
    errors = run(0, rank, nranks, ref) + run(1, rank, nranks, ref);
    free(ref);
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
}
