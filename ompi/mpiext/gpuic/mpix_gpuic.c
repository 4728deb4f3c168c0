/*
 * libmpix_gpuic: finds the gpuic module behind an MPI_Win and forwards to it.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/win/win.h"

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
    void *h = NULL;
    int rc;

    if (ext == NULL) {
        return MPI_ERR_WIN;
    }
    rc = ext->device_handle(win->w_osc_module, &h);
    *handle = rc == MPI_SUCCESS ? (MPIX_Win_device)h : NULL;
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
