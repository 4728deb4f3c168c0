/*
 * acc_bench: host accumulate costs, plain MPI, run under any osc component.
 *
 *   mpirun -np 2 --mca osc NAME acc_bench sizes [reps]
 *       MPI_Accumulate and MPI_Get_accumulate (MPI_SUM, MPI_DOUBLE) from rank 0 to rank 1 of
 *       8 B, 64 KiB, 1 MiB and 4 MiB, MPI_Win_flush after each, in one MPI_Win_lock_all epoch,
 *       on MPI_Win_allocate and MPI_Win_create windows: microseconds per call, the best and
 *       the median of @p reps repetitions (default 5; the best is the figure for a busy host).
 *   mpirun -np N --mca osc NAME acc_bench small [reps]
 *       single-element accumulate-family calls (and one of 8 doubles) on an MPI_Win_create
 *       window, every rank on rank 0's elements at once, MPI_Win_flush after each, in one
 *       MPI_Win_lock_all epoch, each kind after 5 ms of untimed calls: microseconds per call,
 *       the slowest rank's; the sums are checked (a line "check: ok" or "check: WRONG").
 *   mpirun -np 8 --mca osc NAME acc_bench atomics [seconds]
 *       every rank issues MPI_Fetch_and_op (MPI_SUM, int64) + MPI_Win_flush on one counter at
 *       rank 0 for about @p seconds (default 1): operations per second, all ranks together
 *       (total operations over the longest rank's time; rank 0's, the target's own, and the
 *       others' apart); the counter is checked exactly.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static MPI_Win open_window(int create, size_t bytes, void **base)
{
    MPI_Win win;

    if (create) {
        *base = calloc(1, bytes);
        MPI_Win_create(*base, (MPI_Aint)bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate((MPI_Aint)bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, &win);
        memset(*base, 0, bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return win;
}

static void close_window(int create, MPI_Win *win, void *base)
{
    MPI_Win_free(win);
    if (create) {
        free(base);
    }
}

static void bench_sizes(int reps)
{
    static const size_t sizes[] = {8, 64 * 1024, 1 << 20, 4 << 20};
    double *t = malloc(sizeof(double) * (size_t)reps);
    int create, s, gacc, r, i;

    if (rank == 0) {
        printf("%-8s %-5s %8s %12s %12s\n", "window", "op", "bytes", "best_us", "median_us");
    }
    for (create = 0; create < 2; ++create) {
        for (s = 0; s < 4; ++s) {
            size_t bytes = sizes[s];
            int count = (int)(bytes / sizeof(double)), iters = bytes >= (1 << 20) ? 10 : 200;
            double *origin = malloc(bytes), *result = malloc(bytes);
            void *base;
            MPI_Win win = open_window(create, bytes, &base);

            for (i = 0; i < count; ++i) {
                origin[i] = 1.0;
            }
            for (gacc = 0; gacc < 2; ++gacc) {
                for (r = 0; r < reps; ++r) {
                    double t0;

                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Win_lock_all(0, win);
                    t0 = MPI_Wtime();
                    for (i = 0; rank == 0 && i < iters; ++i) {
                        if (gacc) {
                            MPI_Get_accumulate(origin, count, MPI_DOUBLE, result, count,
                                               MPI_DOUBLE, 1, 0, count, MPI_DOUBLE, MPI_SUM,
                                               win);
                        } else {
                            MPI_Accumulate(origin, count, MPI_DOUBLE, 1, 0, count, MPI_DOUBLE,
                                           MPI_SUM, win);
                        }
                        MPI_Win_flush(1, win);
                    }
                    t[r] = (MPI_Wtime() - t0) / iters * 1e6;
                    MPI_Win_unlock_all(win);
                }
                qsort(t, (size_t)reps, sizeof(double), cmp_double);
                if (rank == 0) {
                    printf("%-8s %-5s %8zu %12.1f %12.1f\n", create ? "create" : "allocate",
                           gacc ? "gacc" : "acc", bytes, t[0], t[reps / 2]);
                    fflush(stdout);
                }
            }
            close_window(create, &win, base);
            free(origin);
            free(result);
        }
    }
    free(t);
}

static void bench_atomics(double seconds)
{
    int create;

    for (create = 0; create < 2; ++create) {
        int64_t one = 1, old, *base;
        long ops = 0, total = 0;
        double t0, elapsed, longest = 0;
        MPI_Win win = open_window(create, 64, (void **)&base);

        MPI_Win_lock_all(0, win);
        t0 = MPI_Wtime();
        do {
            for (int i = 0; i < 100; ++i) {
                MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
                MPI_Win_flush(0, win);
            }
            ops += 100;
            elapsed = MPI_Wtime() - t0;
        } while (elapsed < seconds);
        MPI_Win_unlock_all(win);
        MPI_Reduce(&ops, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&elapsed, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            /* the target's own operations apart: a component may serve them and starve the
             * others */
            printf("%-8s fetch_and_op %d ranks: %.0f ops/s (%ld ops in %.2f s; rank 0 %.0f "
                   "ops/s, the others %.0f), counter %s\n",
                   create ? "create" : "allocate", nranks, (double)total / longest, total,
                   longest, (double)ops / longest, (double)(total - ops) / longest,
                   base[0] == total ? "exact" : "WRONG");
            fflush(stdout);
        }
        close_window(create, &win, base);
    }
}

/* acc_bench small: the calls, in the order they are timed. */
enum { S_ACC_DBL, S_ACC_I64, S_FOP_DBL, S_FOP_I64, S_CAS, S_GACC_DBL, S_ACC_VEC, S_ACC_MAX,
       S_ACC_REPLACE, S_GACC_NOOP, S_COUNT };
enum { CALL_ACC, CALL_FOP, CALL_CAS, CALL_GACC };
enum { OP_SUM, OP_MAX, OP_REPLACE, OP_NOOP };
static const struct {
    const char *name;
    int call, is_double, op, count;
} small_kinds[S_COUNT] = {
    {"acc_double_sum", CALL_ACC, 1, OP_SUM, 1},      {"acc_int64_sum", CALL_ACC, 0, OP_SUM, 1},
    {"fop_double_sum", CALL_FOP, 1, OP_SUM, 1},      {"fop_int64_sum", CALL_FOP, 0, OP_SUM, 1},
    {"cas_int64", CALL_CAS, 0, OP_SUM, 1},           {"gacc_double_sum", CALL_GACC, 1, OP_SUM, 1},
    {"acc_8double_sum", CALL_ACC, 1, OP_SUM, 8},     {"acc_double_max", CALL_ACC, 1, OP_MAX, 1},
    {"acc_double_replace", CALL_ACC, 1, OP_REPLACE, 1},
    {"gacc_int64_noop", CALL_GACC, 0, OP_NOOP, 1}};

/* One small call of kind @p k, round @p r, at rank 0, then a flush (each kind its own 1 KiB of
 * the window; a round's element is one of 64, a round's 8 doubles one of 8 runs). */
static void small_call(MPI_Win win, int k, int r)
{
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_REPLACE, MPI_NO_OP};
    int count = small_kinds[k].count;
    MPI_Datatype dt = small_kinds[k].is_double ? MPI_DOUBLE : MPI_INT64_T;
    MPI_Op op = ops[small_kinds[k].op];
    /* 8 bytes an element either way: ones as doubles or as int64 */
    double dv[8] = {1, 1, 1, 1, 1, 1, 1, 1}, res[8];
    int64_t iv[8] = {1, 1, 1, 1, 1, 1, 1, 1}, cmp = 0;
    const void *origin = small_kinds[k].is_double ? (const void *)dv : (const void *)iv;
    MPI_Aint disp = 1024 * k + 8 * count * (r % (64 / count));

    switch (small_kinds[k].call) {
    case CALL_ACC:
        MPI_Accumulate(origin, count, dt, 0, disp, count, dt, op, win);
        break;
    case CALL_FOP:
        MPI_Fetch_and_op(origin, res, dt, 0, disp, op, win);
        break;
    case CALL_CAS:
        MPI_Compare_and_swap(origin, &cmp, res, dt, 0, disp, win);
        break;
    default:
        MPI_Get_accumulate(op == MPI_NO_OP ? NULL : origin, op == MPI_NO_OP ? 0 : count, dt,
                           res, count, dt, 0, disp, count, dt, op, win);
        break;
    }
    MPI_Win_flush(0, win);
}

/* The sum of the 64 elements (doubles or int64) of kind @p k's part of @p base. */
static double small_sum(const char *base, int k, int is_double)
{
    double s = 0;

    for (int e = 0; e < 64; ++e) {
        double v;
        int64_t w;

        if (is_double) {
            memcpy(&v, base + 1024 * k + 8 * e, 8);
            s += v;
        } else {
            memcpy(&w, base + 1024 * k + 8 * e, 8);
            s += (double)w;
        }
    }
    return s;
}

static void bench_small(int reps)
{
    size_t bytes = 1024 * S_COUNT;
    char *base = calloc(1, bytes);
    MPI_Win win;
    long calls[S_COUNT];
    int bad = 0, any = 0;

    MPI_Win_create(base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < S_COUNT; ++k) {
        double t0, el, slowest = 0;
        long warm = 0;

        /* untimed calls for 5 ms first: a path's first uses set up its connections (UCX's
         * lanes for atomics, for one), which would otherwise land in whichever kind takes it
         * first */
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 5e-3) {
            small_call(win, k, (int)warm++);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int r = 0; r < reps; ++r) {
            small_call(win, k, r);
        }
        el = MPI_Wtime() - t0;
        calls[k] = warm + reps;
        MPI_Reduce(&el, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-20s %10.2f us\n", small_kinds[k].name, slowest / reps * 1e6);
            fflush(stdout);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, calls, S_COUNT, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        /* every call added 1 to one element (8 to the 8-double kind's) */
        bad = small_sum(base, S_ACC_DBL, 1) != calls[S_ACC_DBL] ||
              small_sum(base, S_ACC_I64, 0) != calls[S_ACC_I64] ||
              small_sum(base, S_FOP_DBL, 1) != calls[S_FOP_DBL] ||
              small_sum(base, S_FOP_I64, 0) != calls[S_FOP_I64] ||
              small_sum(base, S_GACC_DBL, 1) != calls[S_GACC_DBL] ||
              small_sum(base, S_ACC_VEC, 1) != 8.0 * calls[S_ACC_VEC];
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("check: %s\n", any ? "WRONG" : "ok");
    }
    MPI_Win_free(&win);
    free(base);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sizes";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (strcmp(mode, "atomics") == 0) {
        bench_atomics(argc > 2 ? atof(argv[2]) : 1.0);
    } else if (strcmp(mode, "small") == 0) {
        bench_small(argc > 2 ? atoi(argv[2]) : 200);
    } else if (nranks >= 2) {
        bench_sizes(argc > 2 ? atoi(argv[2]) : 5);
    } else if (rank == 0) {
        fprintf(stderr, "acc_bench sizes needs 2 ranks\n");
    }
    MPI_Finalize();
    return 0;
}
