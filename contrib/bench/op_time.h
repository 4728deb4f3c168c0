/*
 * op_time.h: the timing loop that gpu_window_bench and nvshmem_host_bench share, so their
 * rows are measured the same way.
 */
#ifndef GPUIC_BENCH_OP_TIME_H
#define GPUIC_BENCH_OP_TIME_H

#include <stddef.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double op_time_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Average microseconds of one call of BODY: two untimed calls (the first pays one-time costs,
 * the second sizes the repetitions so that the row takes about ROW_SECONDS), a tenth of the
 * repetitions as warm-up, then MAX_REPS timed repetitions or fewer: a slow path costs seconds,
 * not minutes. */
template <class F> static double op_us(int max_reps, double row_seconds, F body)
{
    double t, one;
    int reps, i;

    body();
    t = op_time_now();
    body();
    one = op_time_now() - t;
    reps = one > 0 && one * max_reps > row_seconds ? (int)(row_seconds / one) : max_reps;
    if (reps < 1) reps = 1;
    for (i = 0; i < reps / 10; ++i) body();
    t = op_time_now();
    for (i = 0; i < reps; ++i) body();
    return (op_time_now() - t) / reps * 1e6;
}

/* GB/s of operations of @p size bytes issued k at a time then completed together: OP(j) issues
 * the j-th of them (j < k), COMPLETE waits for all; k x size is 16 MiB (at most 16 operations),
 * or one operation of a larger size.  Repetitions as op_us. */
template <class OP, class COMPLETE>
static double op_bw(size_t size, int max_reps, double row_seconds, OP op, COMPLETE complete)
{
    size_t k = size >= ((size_t)16 << 20) ? 1 : ((size_t)16 << 20) / size;

    if (k > 16) k = 16;
    return k * size / op_us(max_reps, row_seconds, [&] {
               for (size_t j = 0; j < k; ++j) op(j);
               complete();
           }) / 1e3;
}

#endif
