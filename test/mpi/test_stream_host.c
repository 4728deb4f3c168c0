/*
 * Stream-triggered calls (MPIX_*_enqueue) where no device can serve them: on a host-memory
 * window every call is refused at enqueue time with MPI_ERR_UNSUPPORTED_OPERATION (or
 * MPI_ERR_WIN for a window that is not gpuic's), nothing is written, and host RMA on the same
 * window keeps working.  Runs on any machine; the device side is test/device/test_stream_rma.
 */
#include <stdlib.h>

#include "mpi_test.h"
#include "mpix_gpuic.h"

#define UNSUP MPI_ERR_UNSUPPORTED_OPERATION

int main(int argc, char **argv)
{
    int rank, n, caps = 0, right, left;
    int64_t *base, one = 1, res = -1, cmp = 0;
    MPI_Win win;
    MPI_Group wg;
    int s = 0; /* stands for a stream: never dereferenced on a refused call */
    void *stream = &s;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    right = (rank + 1) % n;
    left = (rank + n - 1) % n;

    CHECK(MPIX_Gpuic_query_capabilities(&caps) == MPI_SUCCESS);
    /* the stream calls are built on the device API */
    CHECK(!(caps & MPIX_GPUIC_CAP_STREAM) || (caps & MPIX_GPUIC_CAP_DEVICE_API));

    MPI_Win_allocate(64 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 64; ++i) base[i] = -7;
    MPI_Win_get_group(win, &wg);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    CHECK_CLASS(MPIX_Put_enqueue(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win, stream),
                UNSUP);
    CHECK_CLASS(MPIX_Get_enqueue(&res, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win, stream),
                UNSUP);
    CHECK_CLASS(MPIX_Accumulate_enqueue(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T,
                                        MPI_SUM, win, stream),
                UNSUP);
    CHECK_CLASS(MPIX_Fetch_and_op_enqueue(&one, &res, MPI_INT64_T, right, 0, MPI_SUM, win,
                                          stream),
                UNSUP);
    CHECK_CLASS(MPIX_Compare_and_swap_enqueue(&one, &cmp, &res, MPI_INT64_T, right, 0, win,
                                              stream),
                UNSUP);
    CHECK_CLASS(MPIX_Win_flush_enqueue(right, win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_flush_all_enqueue(win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_flush_local_enqueue(right, win, stream), UNSUP);
    MPI_Win_unlock_all(win);
    CHECK_CLASS(MPIX_Win_fence_enqueue(0, win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_lock_all_enqueue(0, win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_unlock_all_enqueue(win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_post_enqueue(wg, 0, win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_start_enqueue(wg, 0, win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_complete_enqueue(win, stream), UNSUP);
    CHECK_CLASS(MPIX_Win_wait_enqueue(win, stream), UNSUP);
    CHECK_CLASS(MPIX_Put_enqueue(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_WIN_NULL,
                                 stream),
                MPI_ERR_WIN);
    CHECK_CLASS(MPIX_Win_fence_enqueue(0, MPI_WIN_NULL, stream), MPI_ERR_WIN);
    CHECK(res == -1);

    /* nothing reached any window, and host RMA works as before */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 64; ++i) CHECK(base[i] == -7);
    MPI_Win_fence(0, win);
    int64_t mine = 1000 + rank;
    CHECK(MPI_Put(&mine, 1, MPI_INT64_T, right, 5, 1, MPI_INT64_T, win) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win) == MPI_SUCCESS);
    CHECK(base[5] == 1000 + left);

    MPI_Group_free(&wg);
    MPI_Win_free(&win);
    return mpi_test_finish("test_stream_host");
}
