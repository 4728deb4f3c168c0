/*
 * sync_bench: latency of synchronization, per call, under any osc component.
 *   pscw: one post/start/put 8 B/complete/wait round between process pairs (both directions
 *         at once); prints the mean and median round.
 *   fence: one MPI_Win_fence + 8-byte put to the next process per round.
 *   lockall: under MPI_Win_lock_all, 8-byte MPI_Put + MPI_Win_flush, and MPI_Fetch_and_op +
 *         MPI_Win_flush, to the next process; every call is timed and the p50, p99 and max over
 *         all processes are printed, with the number of calls over 1 ms.
 * Usage: mpirun -np N sync_bench [pscw|fence|lockall|all] [ITERS]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Gathers every process's samples on rank 0 and prints their distribution. */
static void report(const char *what, double *t, int iters, int rank, int n)
{
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)iters * n) : NULL;
    long total = (long)iters * n, i, over = 0;

    MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0) {
        return;
    }
    qsort(all, (size_t)total, sizeof(double), cmp_double);
    for (i = 0; i < total; ++i) {
        over += all[i] > 1e-3;
    }
    printf("%-22s np=%d calls=%ld p50=%.2f us p99=%.2f us max=%.1f us over_1ms=%ld\n", what, n,
           total, all[total / 2] * 1e6, all[total * 99 / 100] * 1e6, all[total - 1] * 1e6, over);
    free(all);
}

static void bench_pscw(MPI_Win win, int iters, int rank, int n)
{
    MPI_Group world, peer;
    int partner = rank ^ 1, i, warm = iters / 10;
    uint64_t v = (uint64_t)rank;
    double *t = malloc(sizeof(double) * (size_t)iters), t0, sum = 0;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (partner >= n) {
        partner = rank; /* odd count: the last process pairs with itself */
    }
    MPI_Group_incl(world, 1, &partner, &peer);
    for (i = -warm; i < iters; ++i) {
        t0 = MPI_Wtime();
        MPI_Win_post(peer, 0, win);
        MPI_Win_start(peer, 0, win);
        MPI_Put(&v, 1, MPI_UINT64_T, partner, 0, 1, MPI_UINT64_T, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        if (i >= 0) {
            t[i] = MPI_Wtime() - t0;
            sum += t[i];
        }
    }
    if (rank == 0) {
        printf("pscw round (8 B put)   np=%d mean=%.2f us ", n, sum / iters * 1e6);
        fflush(stdout);
    }
    report("", t, iters, rank, n);
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
    free(t);
}

static void bench_fence(MPI_Win win, int iters, int rank, int n)
{
    int i, warm = iters / 10;
    uint64_t v = (uint64_t)rank;
    double *t = malloc(sizeof(double) * (size_t)iters), t0, sum = 0;

    MPI_Win_fence(0, win);
    for (i = -warm; i < iters; ++i) {
        t0 = MPI_Wtime();
        MPI_Put(&v, 1, MPI_UINT64_T, (rank + 1) % n, 0, 1, MPI_UINT64_T, win);
        MPI_Win_fence(0, win);
        if (i >= 0) {
            t[i] = MPI_Wtime() - t0;
            sum += t[i];
        }
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (rank == 0) {
        printf("fence round (8 B put)  np=%d mean=%.2f us ", n, sum / iters * 1e6);
        fflush(stdout);
    }
    report("", t, iters, rank, n);
    free(t);
}

static void bench_lockall(MPI_Win win, int iters, int rank, int n)
{
    int target = (rank + 1) % n, i, warm = iters / 10;
    uint64_t v = (uint64_t)rank, one = 1, old;
    double *t = malloc(sizeof(double) * (size_t)iters), t0;

    MPI_Win_lock_all(0, win);
    for (i = -warm; i < iters; ++i) {
        t0 = MPI_Wtime();
        MPI_Put(&v, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, win);
        MPI_Win_flush(target, win);
        if (i >= 0) {
            t[i] = MPI_Wtime() - t0;
        }
    }
    MPI_Win_unlock_all(win);
    report("lock_all put 8 B+flush", t, iters, rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (i = -warm; i < iters; ++i) {
        t0 = MPI_Wtime();
        MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, target, 1, MPI_SUM, win);
        MPI_Win_flush(target, win);
        if (i >= 0) {
            t[i] = MPI_Wtime() - t0;
        }
    }
    MPI_Win_unlock_all(win);
    report("lock_all fetch_and_op", t, iters, rank, n);
    free(t);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    int iters = argc > 2 ? atoi(argv[2]) : 10000, rank, n;
    uint64_t *base;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Win_allocate(64, sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "pscw") == 0 || strcmp(mode, "all") == 0) {
        bench_pscw(win, iters, rank, n);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "fence") == 0 || strcmp(mode, "all") == 0) {
        bench_fence(win, iters, rank, n);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "lockall") == 0 || strcmp(mode, "all") == 0) {
        bench_lockall(win, iters, rank, n);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
