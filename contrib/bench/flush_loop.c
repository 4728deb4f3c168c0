/*
 * flush_loop: the tightest loop of the commonest call, for instruction counts (callgrind) and
 * A/B timings of one build against another.  Rank 0, in one lock_all epoch on a 4 KiB window:
 * ITERS x (8-byte MPI_Put + MPI_Win_flush(1)), then ITERS x (8-byte MPI_Get + flush), five
 * times, printing the time per pair of each; rank 1 waits in MPI_Win_free's barrier.
 *
 *   mpirun -np 2 --mca osc NAME flush_loop [ITERS] [create]
 *   valgrind --tool=callgrind --toggle-collect=flush_loop_put --toggle-collect=flush_loop_get
 *       (on rank 0 only) counts the instructions of the two loops
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double flush_loop_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) void flush_loop_put(MPI_Win win, char *buf, long n)
{
    for (long i = 0; i < n; ++i) {
        MPI_Put(buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(1, win);
    }
}

__attribute__((noinline)) void flush_loop_get(MPI_Win win, char *buf, long n)
{
    for (long i = 0; i < n; ++i) {
        MPI_Get(buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(1, win);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int create = argc > 2 && strcmp(argv[2], "create") == 0, rank, size;
    char *base = NULL, buf[64] = {0};
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || n <= 0) {
        if (rank == 0) fprintf(stderr, "flush_loop: 2 ranks, ITERS > 0\n");
        MPI_Finalize();
        return 2;
    }
    if (create) {
        base = calloc(1, 4096);
        MPI_Win_create(base, 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        flush_loop_put(win, buf, 1000); /* warm-up */
        flush_loop_get(win, buf, 1000);
        for (int rep = 0; rep < 5; ++rep) {
            double t0 = flush_loop_now_ns(), t1, t2;

            flush_loop_put(win, buf, n);
            t1 = flush_loop_now_ns();
            flush_loop_get(win, buf, n);
            t2 = flush_loop_now_ns();
            printf("put+flush %.1f ns get+flush %.1f ns\n", (t1 - t0) / (double)n,
                   (t2 - t1) / (double)n);
        }
        MPI_Win_unlock_all(win);
    }
    MPI_Win_free(&win);
    if (create) free(base);
    MPI_Finalize();
    return 0;
}
