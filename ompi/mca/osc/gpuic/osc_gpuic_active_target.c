/*
 * Active-target synchronization: fence, and (not yet) post/start/complete/wait/test.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/mca/coll/coll.h"

#include "osc_gpuic.h"

int ompi_osc_gpuic_fence(int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    struct ompi_communicator_t *comm = module->comm;
    int rc = OMPI_SUCCESS;

    opal_mutex_lock(&module->lock);
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_fence inside a passive-target epoch");
        return MPI_ERR_RMA_SYNC;
    }
    /* Complete our operations at their targets, then wait until every process has done the
     * same, so that after the fence each window holds everything put into it. */
    if (!(mpi_assert & MPI_MODE_NOPRECEDE)) {
        rc = ompi_osc_gpuic_error(gpuic_context_flush(mca_osc_gpuic_component.ctx));
    }
    /* Direct stores through same-node mappings are ordered before the barrier's messages. */
    opal_atomic_mb();
    if (rc == OMPI_SUCCESS) {
        rc = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
    }
    module->epoch = (mpi_assert & MPI_MODE_NOSUCCEED) ? OMPI_OSC_GPUIC_EPOCH_NONE
                                                      : OMPI_OSC_GPUIC_EPOCH_FENCE;
    module->ops_since_fence = 0;
    opal_mutex_unlock(&module->lock);
    return rc;
}

int ompi_osc_gpuic_start(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win)
{
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_complete(struct ompi_win_t *win)
{
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_post(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win)
{
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_wait(struct ompi_win_t *win)
{
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_test(struct ompi_win_t *win, int *flag)
{
    return MPI_ERR_UNSUPPORTED_OPERATION;
}
