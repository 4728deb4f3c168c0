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
#define MPIX_GPUIC_CAP_STREAM     0x4 /**< stream-triggered calls (MPIX_*_enqueue below): built
                                           with CUDA and nvcc; usable where a CUDA driver and
                                           device exist.  Off: they return
                                           MPI_ERR_UNSUPPORTED_OPERATION */
#define MPIX_GPUIC_CAP_DEVICE_PROXY 0x8 /**< device calls reach targets without a device
                                             mapping (host windows) through the proxy thread */

/** Paths a target can be served by (MPIX_Win_gpuic_target_path()). */
#define MPIX_GPUIC_PATH_SELF   0 /**< the calling process itself */
#define MPIX_GPUIC_PATH_DIRECT 1 /**< same node: direct loads and stores through a mapping */
#define MPIX_GPUIC_PATH_UCX    2 /**< UCX RMA */
#define MPIX_GPUIC_PATH_IPC    3 /**< same node, device memory: through a CUDA IPC mapping */
/** same node, host memory of a create or allocate window that UCX could not map: puts and
 *  gets by cross-memory copies (pieces of osc_gpuic_cma_min_bytes and more), the rest and
 *  atomics through UCX */
#define MPIX_GPUIC_PATH_CMA    4

/**
 * Returns the version of the gpuic library linked in (which may differ from
 * MPIX_GPUIC_VERSION_* of the headers compiled against).
 */
int MPIX_Gpuic_get_version(int *major, int *minor, int *patch);

/** Returns in *caps the MPIX_GPUIC_CAP_* bits this build of gpuic supports. */
int MPIX_Gpuic_query_capabilities(int *caps);

/**
 * Binds the calling process to a GPU the way gpuic does when it picks one itself, and returns
 * the device in *device (a CUDA device ordinal, as cudaSetDevice() takes).  Collective over
 * @p comm: the process's rank among the processes of @p comm on its node
 * (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED) modulo the number of visible devices,
 * unless the MCA parameter osc_gpuic_device (or OMPI_MCA_osc_gpuic_device in the environment)
 * names a device.  The chosen device becomes current on the calling thread (the CUDA runtime
 * then uses it, as after cudaSetDevice()) and gpuic's threads use it too.  Call after MPI_Init
 * and before creating GPU windows or allocating device memory.
 * @return MPI_ERR_COMM for an invalid or null communicator; MPI_ERR_ARG when @p device is NULL
 *         or osc_gpuic_device names a device that is not visible (*device is then -1);
 *         MPI_ERR_UNSUPPORTED_OPERATION when no CUDA driver or device is usable (*device is
 *         then -1; a process without a GPU may carry on with host windows).
 */
int MPIX_Gpuic_bind_device(MPI_Comm comm, int *device);

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
 * Returns the device handle of @p win for kernels (mpix_gpuic_device.cuh): a value that kernels
 * take as an argument and pass to the device calls (*handle is zero-filled on error).  The
 * handle lives as long as the window; calling again returns the same handle.  Errors that device calls
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

/* ---------------------------------------------------------------------------------------- */
/* Stream-triggered calls (docs/streams.md).                                                 */
/*
 * Each MPIX_*_enqueue call adds one MPI call to a CUDA stream, with no host thread involved
 * when it runs: it starts after all work enqueued on the stream before it and is complete, as
 * MPI defines completion for the call it mirrors, before work enqueued after it starts.  A CUDA
 * event recorded after MPIX_Win_flush_enqueue (or a fence, unlock_all or complete) fires only
 * once the data is visible at the target.  The calls may be captured into CUDA graphs; a graph
 * may replay whole epochs any number of times.
 *
 * stream: a cudaStream_t (or CUstream) of the calling thread's current CUDA context, passed as
 *         void * so that C code needs no CUDA header; NULL is the legacy default stream, and
 *         cudaStreamPerThread is accepted.
 * Buffers (origin, result, compare): read or written when the call runs, in stream order;
 *         device memory, managed memory, or host memory pinned and mapped into the device
 *         (cudaMallocHost, cudaHostAlloc, cudaHostRegister).  Pageable host memory is refused
 *         with MPI_ERR_BUFFER.
 * Datatypes: put and get take any datatype whose count elements are contiguous (size equals
 *         extent equals true extent); the accumulate family takes MPI_INT32_T, MPI_UINT32_T,
 *         MPI_INT64_T, MPI_UINT64_T, MPI_FLOAT, MPI_DOUBLE, the C types of the same size and
 *         kind (MPI_INT, MPI_UNSIGNED, MPI_LONG, ...), and contiguous or duplicated types of
 *         them, with the same element type on both sides.
 * Targets: those the device API reaches (MPIX_Win_gpuic_device_path() other than
 *         MPIX_GPUIC_DEVICE_PATH_NONE: device-memory windows of processes on this node
 *         through P2P loads and stores, host-memory windows through the proxy path).  Other
 *         targets are refused at enqueue time with MPI_ERR_UNSUPPORTED_OPERATION.  The epoch
 *         calls (fence, lock_all, post/start/complete/wait) need every process's window
 *         synchronization block, which exists where some process of the window has device
 *         memory, and is reached on this node only.
 * Epochs: access to a target needs an epoch opened by enqueued calls on the window (fence,
 *         lock_all, start naming it) or a host epoch open at the time of the enqueue call;
 *         the flush calls need a passive-target one (MPI_ERR_RMA_SYNC otherwise).  Epoch
 *         calls on one window are matched in the order they are enqueued: enqueue them on one
 *         stream, or order their streams.  Enqueued and host epochs may follow each other on a
 *         window when separated by stream synchronization and a host synchronization among the
 *         processes (for example MPI_Barrier).  Enqueued lock_all epochs take shared access
 *         in device memory and do not exclude host MPI_Win_lock epochs: never overlap the two.
 * Errors: bad arguments are refused at enqueue time with their MPI error class and nothing is
 *         enqueued.  Errors met while the call runs are recorded in the window and returned
 *         by its next host synchronization call (flush, unlock, fence, complete, wait).
 * Lifetime: work enqueued on a window must be complete (stream or event synchronization)
 *         before MPI_Win_free or MPIX_Win_release_device_handle.  The first enqueued call on
 *         a window builds its device state, and the first one in a CUDA context loads the
 *         kernels; both are allowed inside a stream capture of a non-blocking stream (they
 *         synchronize the legacy default stream, which a capture of a blocking stream forbids:
 *         make one call before capturing such a stream).
 */

/** MPI_Put enqueued on @p stream. */
int MPIX_Put_enqueue(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream);

/** MPI_Get enqueued on @p stream: @p origin_addr holds the data once the call has run. */
int MPIX_Get_enqueue(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream);

/**
 * MPI_Accumulate enqueued on @p stream, each element atomic with the device calls and other
 * enqueued calls on the window.  @p op: MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR,
 * MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_REPLACE (bitwise and logical ops on integer types
 * only); anything else: MPI_ERR_OP.
 */
int MPIX_Accumulate_enqueue(const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, void *stream);

/**
 * MPI_Fetch_and_op enqueued on @p stream: *result_addr holds the old value once the call has
 * run.  @p op as for MPIX_Accumulate_enqueue, or MPI_NO_OP (then @p origin_addr may be NULL).
 */
int MPIX_Fetch_and_op_enqueue(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                              int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win,
                              void *stream);

/**
 * MPI_Compare_and_swap enqueued on @p stream; the values at @p origin_addr and @p compare_addr
 * are read when the call runs.  8-byte integer types only (4-byte ones:
 * MPI_ERR_UNSUPPORTED_OPERATION).
 */
int MPIX_Compare_and_swap_enqueue(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, MPI_Datatype datatype, int target_rank,
                                  MPI_Aint target_disp, MPI_Win win, void *stream);

/** MPI_Win_flush enqueued on @p stream: earlier operations to @p rank are complete there. */
int MPIX_Win_flush_enqueue(int rank, MPI_Win win, void *stream);

/** MPI_Win_flush_all enqueued on @p stream. */
int MPIX_Win_flush_all_enqueue(MPI_Win win, void *stream);

/** MPI_Win_flush_local enqueued on @p stream: origin buffers of earlier operations reusable. */
int MPIX_Win_flush_local_enqueue(int rank, MPI_Win win, void *stream);

/**
 * MPI_Win_fence enqueued on @p stream (collective: every process of the window enqueues it):
 * completes every process's operations and synchronizes the processes, on the devices.
 * Every process needs a device sync block (every process has CUDA, all on one node for now).
 */
int MPIX_Win_fence_enqueue(int mpi_assert, MPI_Win win, void *stream);

/** MPI_Win_lock_all enqueued on @p stream (shared access to every reachable target). */
int MPIX_Win_lock_all_enqueue(int mpi_assert, MPI_Win win, void *stream);

/** MPI_Win_unlock_all enqueued on @p stream: completes the epoch's operations at the targets. */
int MPIX_Win_unlock_all_enqueue(MPI_Win win, void *stream);

/** MPI_Win_post enqueued on @p stream (groups of at most 4096 ranks' numbers). */
int MPIX_Win_post_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream);

/** MPI_Win_start enqueued on @p stream: later work waits for the group's matching posts. */
int MPIX_Win_start_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream);

/** MPI_Win_complete enqueued on @p stream: completes the access epoch at its targets. */
int MPIX_Win_complete_enqueue(MPI_Win win, void *stream);

/** MPI_Win_wait enqueued on @p stream: later work waits for the group's matching completes. */
int MPIX_Win_wait_enqueue(MPI_Win win, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_H */
