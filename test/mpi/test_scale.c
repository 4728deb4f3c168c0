/*
 * Scale on one node: windows of every flavor at this job's size (the test list runs 1 to 16
 * ranks, oversubscribed), a put ring through each to check the data, and two figures:
 * window creation time (MPI_Win_allocate, median over ranks of the mean of WINDOWS creations)
 * and the memory a window costs per peer (resident-set growth over WINDOWS windows, divided by
 * windows and peers).  The figures are reported, never judged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpi_test.h"

#define WINDOWS 40

static long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rank, n, *base;
    MPI_Win wins[WINDOWS];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* warm-up: endpoints are created by the first window */
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &wins[0]);
    MPI_Win_free(&wins[0]);

    MPI_Barrier(MPI_COMM_WORLD);
    long rss0 = rss_bytes();
    double t0 = MPI_Wtime();
    for (int w = 0; w < WINDOWS; ++w) {
        MPI_Win_allocate(sizeof(int) * n, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                         &wins[w]);
    }
    double per_window = (MPI_Wtime() - t0) / WINDOWS;
    long rss1 = rss_bytes();

    /* every window carries data: rank r puts r+w into slot r of rank r+1 */
    for (int w = 0; w < WINDOWS; ++w) {
        int v = rank + w, right = (rank + 1) % n;
        MPI_Win_fence(0, wins[w]);
        MPI_Put(&v, 1, MPI_INT, right, rank, 1, MPI_INT, wins[w]);
        MPI_Win_fence(0, wins[w]);
    }
    int left = (rank + n - 1) % n, bad = 0;
    for (int w = 0; w < WINDOWS; ++w) {
        int *b;
        int flag;
        MPI_Win_get_attr(wins[w], MPI_WIN_BASE, &b, &flag);
        bad += b[left] != left + w;
        MPI_Win_free(&wins[w]);
    }
    CHECK(bad == 0);

    /* the other flavors at this size */
    {
        MPI_Win w;
        int mem[4] = {0}, *sb;
        MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        CHECK(mpi_test_is_gpuic(w));
        MPI_Win_free(&w);
        MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &sb, &w);
        CHECK(mpi_test_is_gpuic(w));
        MPI_Win_free(&w);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        CHECK(mpi_test_is_gpuic(w));
        MPI_Win_free(&w);
    }

    double *times = malloc(sizeof(double) * n);
    double per_peer = (double)(rss1 - rss0) / WINDOWS / n;
    double *mems = malloc(sizeof(double) * n);
    MPI_Gather(&per_window, 1, MPI_DOUBLE, times, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(&per_peer, 1, MPI_DOUBLE, mems, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(times, n, sizeof(double), cmp_double);
        qsort(mems, n, sizeof(double), cmp_double);
        printf("scale: %d ranks: MPI_Win_allocate %.1f us (median over ranks), "
               "%.0f bytes of resident memory per window per peer (median)\n",
               n, times[n / 2] * 1e6, mems[n / 2]);
    }
    free(times);
    free(mems);
    return mpi_test_finish("test_scale");
}
