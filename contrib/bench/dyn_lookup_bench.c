/*
 * dyn_lookup_bench: the cost of finding a region in a dynamic window with many regions.
 *
 * Rank 1 attaches N regions of 64 bytes (with 64-byte gaps) to a dynamic window; rank 0 times
 * an 8-byte MPI_Put + MPI_Win_flush into a random one of them (and into the same one every
 * time), and 8-byte puts to random regions with a flush every 250 (the per-call cost, lookup
 * included), inside one MPI_Win_lock_all epoch, for each N given; then a put + flush just
 * after rank 1 detached and attached a region again (the origin rereads the table).  Plain
 * MPI: runs under any osc component.  Prints the median and the range of the per-operation
 * time over the repetitions.
 *
 *   mpirun -np 2 [--mca osc NAME] dyn_lookup_bench [N ...]    (default 1 64 4096)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#define RSZ   64
#define ITERS 2000
#define REPS  7

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Microseconds per put to the addresses in @p disp (cycled), a flush after every @p batch
 * puts; median and range over the repetitions. */
static void bench_run(MPI_Win win, const MPI_Aint *disp, int ndisp, int batch, double out[3])
{
    double t[REPS];
    uint64_t v = 1;
    int r, i;

    for (i = 0; i < 200; ++i) { /* warm-up: table read, keys unpacked */
        MPI_Put(&v, 1, MPI_UINT64_T, 1, disp[i % ndisp], 1, MPI_UINT64_T, win);
        MPI_Win_flush(1, win);
    }
    for (r = 0; r < REPS; ++r) {
        double t0 = MPI_Wtime();

        for (i = 0; i < ITERS; ++i) {
            MPI_Put(&v, 1, MPI_UINT64_T, 1, disp[i % ndisp], 1, MPI_UINT64_T, win);
            if ((i + 1) % batch == 0) {
                MPI_Win_flush(1, win);
            }
        }
        MPI_Win_flush(1, win);
        t[r] = (MPI_Wtime() - t0) * 1e6 / ITERS;
    }
    qsort(t, REPS, sizeof(double), cmp_double);
    out[0] = t[REPS / 2];
    out[1] = t[0];
    out[2] = t[REPS - 1];
}

int main(int argc, char **argv)
{
    static const int defaults[] = {1, 64, 4096};
    int rank, n, k, nsizes = argc > 1 ? argc - 1 : 3;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (rank == 0) {
            fprintf(stderr, "dyn_lookup_bench: run with 2 ranks\n");
        }
        MPI_Finalize();
        return 1;
    }
    for (k = 0; k < nsizes; ++k) {
        int nreg = argc > 1 ? atoi(argv[k + 1]) : defaults[k], i;
        char *mem = rank == 1 ? calloc((size_t)nreg * 2, RSZ) : NULL;
        MPI_Aint base = 0, *disp = malloc(sizeof(MPI_Aint) * ITERS);
        double rnd[3], same[3], issue[3], refresh[REPS * 3];
        MPI_Win win;
        unsigned s = 12345;

        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_get_name(win, name, &len);
        if (rank == 1) {
            for (i = 0; i < nreg; ++i) {
                MPI_Win_attach(win, mem + (size_t)i * 2 * RSZ, RSZ);
            }
            MPI_Get_address(mem, &base);
        }
        MPI_Bcast(&base, 1, MPI_AINT, 1, MPI_COMM_WORLD);
        for (i = 0; i < ITERS; ++i) {
            s = s * 1103515245u + 12345u;
            disp[i] = base + (MPI_Aint)((s >> 8) % (unsigned)nreg) * 2 * RSZ;
        }
        MPI_Win_lock_all(0, win);
        if (rank == 0) {
            bench_run(win, disp, ITERS, 1, rnd);
            bench_run(win, disp, 1, 1, same);
            bench_run(win, disp, ITERS, 250, issue);
            printf("%-16s regions %6d  put8+flush: random region %6.2f us (%.2f-%.2f), "
                   "same region %6.2f us (%.2f-%.2f); put8, flush per 250, random region "
                   "%5.2f us (%.2f-%.2f)\n", name, nreg, rnd[0], rnd[1], rnd[2], same[0],
                   same[1], same[2], issue[0], issue[1], issue[2]);
            fflush(stdout);
        }
        /* a put + flush right after the target changed its table: the origin rereads it */
        MPI_Barrier(MPI_COMM_WORLD); /* the timings above are done */
        for (i = 0; i < REPS * 3; ++i) {
            if (rank == 1) {
                MPI_Win_detach(win, mem);
                MPI_Win_attach(win, mem, RSZ);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                uint64_t v = 2;
                double t0 = MPI_Wtime();

                MPI_Put(&v, 1, MPI_UINT64_T, 1, disp[i], 1, MPI_UINT64_T, win);
                MPI_Win_flush(1, win);
                refresh[i] = (MPI_Wtime() - t0) * 1e6;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            qsort(refresh, REPS * 3, sizeof(double), cmp_double);
            printf("%-16s regions %6d  put8+flush after the table changed %8.1f us (%.1f-%.1f)\n",
                   name, nreg, refresh[REPS * 3 / 2], refresh[0], refresh[REPS * 3 - 1]);
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (i = 0; i < nreg; ++i) {
                MPI_Win_detach(win, mem + (size_t)i * 2 * RSZ);
            }
        }
        MPI_Win_free(&win);
        free(disp);
        free(mem);
    }
    MPI_Finalize();
    return 0;
}
