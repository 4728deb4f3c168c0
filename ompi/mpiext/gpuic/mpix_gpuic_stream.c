/*
 * Stream-triggered MPI calls (MPIX_*_enqueue, mpix_gpuic.h): each finds the window's gpuic
 * extension and forwards to the component's stream table (osc_gpuic_ext.h), which checks the
 * call, keeps the enqueued epochs and launches the call's kernel.  A window of another
 * component is MPI_ERR_WIN; a component built without the kernels (no CUDA headers or no nvcc)
 * has no table: MPI_ERR_UNSUPPORTED_OPERATION, after the same window check in every build.
 */
#include "ompi_config.h"

#include "mpi.h"

#include "mpix_gpuic.h"
#include "mpix_gpuic_internal.h"

/* The stream table of @p win's component, or NULL with *rc_p the call's error class. */
static const ompi_osc_gpuic_stream_ops_t *mpix_gpuic_stream_ops(MPI_Win win, int *rc_p)
{
    ompi_osc_gpuic_ext_t *ext = mpix_gpuic_ext(win);

    if (ext == NULL) {
        *rc_p = MPI_ERR_WIN;
        return NULL;
    }
    *rc_p = ext->stream != NULL ? MPI_SUCCESS : MPI_ERR_UNSUPPORTED_OPERATION;
    return ext->stream;
}

int MPIX_Put_enqueue(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc
                       : ops->put(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, win, stream);
}

int MPIX_Get_enqueue(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc
                       : ops->get(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, win, stream);
}

int MPIX_Accumulate_enqueue(const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc
                       : ops->accumulate(origin_addr, origin_count, origin_datatype, target_rank,
                                         target_disp, target_count, target_datatype, op, win,
                                         stream);
}

int MPIX_Fetch_and_op_enqueue(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                              int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win,
                              void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc
                       : ops->fetch_and_op(origin_addr, result_addr, datatype, target_rank,
                                           target_disp, op, win, stream);
}

int MPIX_Compare_and_swap_enqueue(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, MPI_Datatype datatype, int target_rank,
                                  MPI_Aint target_disp, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc
                       : ops->compare_and_swap(origin_addr, compare_addr, result_addr, datatype,
                                               target_rank, target_disp, win, stream);
}

int MPIX_Win_flush_enqueue(int rank, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->flush(rank, win, stream);
}

int MPIX_Win_flush_all_enqueue(MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->flush_all(win, stream);
}

int MPIX_Win_flush_local_enqueue(int rank, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->flush_local(rank, win, stream);
}

int MPIX_Win_fence_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->fence(mpi_assert, win, stream);
}

int MPIX_Win_lock_all_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->lock_all(mpi_assert, win, stream);
}

int MPIX_Win_unlock_all_enqueue(MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->unlock_all(win, stream);
}

int MPIX_Win_post_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->post(group, mpi_assert, win, stream);
}

int MPIX_Win_start_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->start(group, mpi_assert, win, stream);
}

int MPIX_Win_complete_enqueue(MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->complete(win, stream);
}

int MPIX_Win_wait_enqueue(MPI_Win win, void *stream)
{
    int rc;
    const ompi_osc_gpuic_stream_ops_t *ops = mpix_gpuic_stream_ops(win, &rc);

    return ops == NULL ? rc : ops->wait(win, stream);
}
