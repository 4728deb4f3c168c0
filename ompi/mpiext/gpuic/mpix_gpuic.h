/*
 * mpix_gpuic.h - the MPIX host API of gpuic (link with -lmpix_gpuic).
 *
 * Every function returns an MPI error code (MPI_SUCCESS on success) and may be called between
 * MPI_Init and MPI_Finalize, except MPIX_Gpuic_get_version, which may be called at any time.
 */
#ifndef MPIX_GPUIC_H
#define MPIX_GPUIC_H

#include <mpi.h>

#include "mpix_gpuic_device_types.h"
#include "mpix_gpuic_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Capability bits returned by MPIX_Gpuic_query_capabilities(). */
#define MPIX_GPUIC_CAP_HOST_RMA   0x1 /**< MPI RMA on host memory through gpuic windows */
#define MPIX_GPUIC_CAP_DEVICE_API 0x2 /**< GPU windows and the device API (mpix_gpuic_device.cuh);
                                           usable where a CUDA driver and device exist */
#define MPIX_GPUIC_CAP_DEVICE_PROXY 0x4 /**< device calls reach targets without a device
                                             mapping (host windows) through the proxy thread */

/** Paths a target can be served by (MPIX_Win_gpuic_target_path()). */
#define MPIX_GPUIC_PATH_SELF   0 /**< the calling process itself */
#define MPIX_GPUIC_PATH_DIRECT 1 /**< same node: direct loads and stores through a mapping */
#define MPIX_GPUIC_PATH_UCX    2 /**< UCX RMA */
#define MPIX_GPUIC_PATH_IPC    3 /**< same node, device memory: through a CUDA IPC mapping */

/**
 * Returns the version of the gpuic library linked in (which may differ from
 * MPIX_GPUIC_VERSION_* of the headers compiled against).
 */
int MPIX_Gpuic_get_version(int *major, int *minor, int *patch);

/** Returns in *caps the MPIX_GPUIC_CAP_* bits this build of gpuic supports. */
int MPIX_Gpuic_query_capabilities(int *caps);

/**
 * Sets *flag to 1 when @p win is served by the gpuic component, else to 0.
 * @return MPI_ERR_WIN for MPI_WIN_NULL or an invalid window.
 */
int MPIX_Win_is_gpuic(MPI_Win win, int *flag);

/**
 * Returns in *path the MPIX_GPUIC_PATH_* value that serves host RMA calls to @p rank on @p win.
 * @return MPI_ERR_WIN when @p win is not a gpuic window; MPI_ERR_RANK for a bad rank.
 */
int MPIX_Win_gpuic_target_path(MPI_Win win, int rank, int *path);

/**
 * Returns the device handle of @p win for kernels (mpix_gpuic_device.cuh).  The handle lives
 * as long as the window; calling again returns the same handle.  Errors that device calls
 * record are returned by the window's next synchronization call (flush, unlock, fence,
 * complete, wait) as their MPI error class.
 * @return MPI_ERR_WIN when @p win is not a gpuic window; MPI_ERR_UNSUPPORTED_OPERATION when
 *         no CUDA device is usable in this process.
 */
int MPIX_Win_get_device_handle(MPI_Win win, MPIX_Win_device *handle);

/**
 * Returns in *path the MPIX_GPUIC_DEVICE_PATH_* value (mpix_gpuic_device_types.h) that serves
 * device calls to @p rank through @p win's current device handle: P2P (loads and stores
 * through a device mapping), PROXY (work-queue entries executed by the proxy thread) or NONE
 * (not reachable from device code: device calls to it fail with
 * MPI_ERR_UNSUPPORTED_OPERATION).
 * @return MPI_ERR_WIN when @p win is not a gpuic window; MPI_ERR_RANK for a bad rank;
 *         MPI_ERR_ARG when the window has no device handle (MPIX_Win_get_device_handle()
 *         decides the paths).
 */
int MPIX_Win_gpuic_device_path(MPI_Win win, int rank, int *path);

/**
 * Frees @p win's device handle before the window is freed (kernels using it must have
 * finished).  A later MPIX_Win_get_device_handle() builds a new one.
 * @return MPI_ERR_WIN when @p win is not a gpuic window; MPI_ERR_ARG when it has no handle.
 */
int MPIX_Win_release_device_handle(MPI_Win win);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_H */
