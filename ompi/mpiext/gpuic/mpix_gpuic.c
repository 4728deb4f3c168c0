/*
 * libmpix_gpuic: finds the gpuic module behind an MPI_Win and forwards to it.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/base/mca_base_var.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/win/win.h"

#include "gpuic_cuda.h"
#include "osc_gpuic_ext.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_internal.h"

/* The extension block of a gpuic window, or NULL for any other window. */
ompi_osc_gpuic_ext_t *mpix_gpuic_ext(MPI_Win win)
{
    ompi_osc_gpuic_ext_t *ext;

    if (win == MPI_WIN_NULL || ompi_win_invalid(win) || win->w_osc_module == NULL) {
        return NULL;
    }
    ext = (ompi_osc_gpuic_ext_t *)((char *)win->w_osc_module + sizeof(ompi_osc_base_module_t));
    return ext->magic == OMPI_OSC_GPUIC_EXT_MAGIC ? ext : NULL;
}

int MPIX_Gpuic_get_version(int *major, int *minor, int *patch)
{
    *major = MPIX_GPUIC_VERSION_MAJOR;
    *minor = MPIX_GPUIC_VERSION_MINOR;
    *patch = MPIX_GPUIC_VERSION_PATCH;
    return MPI_SUCCESS;
}

int MPIX_Gpuic_query_capabilities(int *caps)
{
    *caps = MPIX_GPUIC_CAP_HOST_RMA;
#ifdef MPIX_GPUIC_BUILT_WITH_CUDA
    *caps |= MPIX_GPUIC_CAP_DEVICE_API | MPIX_GPUIC_CAP_DEVICE_PROXY;
#endif
#ifdef MPIX_GPUIC_HAVE_STREAM
    *caps |= MPIX_GPUIC_CAP_STREAM;
#endif
    return MPI_SUCCESS;
}

/* osc_gpuic_device as Open MPI resolved it (command line, environment, parameter files) when
 * the component is loaded; else the environment's value; else -1 (by node-local rank). */
static int mpix_gpuic_device_requested(void)
{
    const void *value = NULL;
    const char *env;
    int index = -1;

    if (mca_base_var_find_by_name("osc_gpuic_device", &index) == OPAL_SUCCESS &&
        mca_base_var_get_value(index, &value, NULL, NULL) == OPAL_SUCCESS && value != NULL) {
        return *(const int *)value;
    }
    env = getenv("OMPI_MCA_osc_gpuic_device");
    return env != NULL && *env != '\0' ? atoi(env) : -1;
}

int MPIX_Gpuic_bind_device(MPI_Comm comm, int *device)
{
    MPI_Comm node = MPI_COMM_NULL;
    int local_rank = 0, count = 0, requested, ordinal, rc;

    if (comm == MPI_COMM_NULL || ompi_comm_invalid(comm)) {
        return MPI_ERR_COMM;
    }
    if (device == NULL) {
        return MPI_ERR_ARG;
    }
    *device = -1;
    rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Comm_rank(node, &local_rank);
    (void)MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (gpuic_cuda_device_count(&count) != GPUIC_OK || count < 1) {
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    requested = mpix_gpuic_device_requested();
    ordinal = gpuic_cuda_device_pick(requested, local_rank, count);
    if (ordinal < 0) {
        return MPI_ERR_ARG; /* osc_gpuic_device names a device this process cannot see */
    }
    /* later choices by gpuic (threads without a context) follow the same rule */
    gpuic_cuda_device_prefer(requested, local_rank);
    switch (gpuic_cuda_device_bind(ordinal)) {
    case GPUIC_OK:
        *device = ordinal;
        return MPI_SUCCESS;
    case GPUIC_ERR_INVALID_PARAM:
        return MPI_ERR_ARG;
    default:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
}

int MPIX_Win_is_gpuic(MPI_Win win, int *flag)
{
    if (win == MPI_WIN_NULL || ompi_win_invalid(win)) {
        return MPI_ERR_WIN;
    }
    *flag = mpix_gpuic_ext(win) != NULL;
    return MPI_SUCCESS;
}

int MPIX_Win_gpuic_target_path(MPI_Win win, int rank, int *path)
{
    ompi_osc_gpuic_ext_t *ext = mpix_gpuic_ext(win);

    if (ext == NULL) {
        return MPI_ERR_WIN;
    }
    return ext->target_path(win->w_osc_module, rank, path);
}

int MPIX_Win_gpuic_device_path(MPI_Win win, int rank, int *path)
{
    ompi_osc_gpuic_ext_t *ext = mpix_gpuic_ext(win);

    if (ext == NULL) {
        return MPI_ERR_WIN;
    }
    return ext->device_path(win->w_osc_module, rank, path);
}

int MPIX_Win_get_device_handle(MPI_Win win, MPIX_Win_device *handle)
{
    ompi_osc_gpuic_ext_t *ext = mpix_gpuic_ext(win);
    MPIX_Win_device h;
    int rc;

    memset(&h, 0, sizeof(h));
    if (ext == NULL) {
        memset(handle, 0, sizeof(*handle));
        return MPI_ERR_WIN;
    }
    rc = ext->device_handle(win->w_osc_module, &h);
    if (rc != MPI_SUCCESS) {
        memset(&h, 0, sizeof(h));
    }
    *handle = h;
    return rc;
}

int MPIX_Win_release_device_handle(MPI_Win win)
{
    ompi_osc_gpuic_ext_t *ext = mpix_gpuic_ext(win);

    if (ext == NULL) {
        return MPI_ERR_WIN;
    }
    return ext->device_handle_release(win->w_osc_module);
}
