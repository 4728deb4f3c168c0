/*
 * The one place where a libgpuic status becomes an Open MPI / MPI error code.  User-visible
 * failures map to positive MPI error classes: Open MPI's negative internal codes reach users as
 * MPI_ERR_INTERN.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/constants.h"

#include "osc_gpuic.h"

int ompi_osc_gpuic_error(gpuic_status_t status)
{
    switch (status) {
    case GPUIC_OK:
    case GPUIC_INPROGRESS:
        return OMPI_SUCCESS;
    case GPUIC_ERR_NO_MEMORY:
        return MPI_ERR_NO_MEM;
    case GPUIC_ERR_INVALID_PARAM:
        return MPI_ERR_ARG;
    case GPUIC_ERR_OUT_OF_RANGE:
    case GPUIC_ERR_BAD_KEY:
        return MPI_ERR_RMA_RANGE;
    case GPUIC_ERR_UNSUPPORTED:
    case GPUIC_ERR_NO_DEVICE:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case GPUIC_ERR_NO_RESOURCE:
    case GPUIC_ERR_TRANSPORT:
    case GPUIC_ERR_TIMED_OUT:
    case GPUIC_ERR_PEER_FAILED:
    case GPUIC_ERR_BAD_OPCODE:
    case GPUIC_ERR_QUEUE_STUCK:
        return MPI_ERR_OTHER;
    case GPUIC_ERR_ENGINE_FAILED:
        return MPI_ERR_INTERN;
    }
    return MPI_ERR_OTHER;
}
