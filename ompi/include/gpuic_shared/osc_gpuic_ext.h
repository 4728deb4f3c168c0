/*
 * osc_gpuic_ext.h - the interface between the MPIX library (libmpix_gpuic) and the component:
 * how libmpix_gpuic recognises a window served by gpuic and reaches its extension entry points.
 * Not installed.
 *
 * Every gpuic module starts with Open MPI's ompi_osc_base_module_t followed immediately by an
 * ompi_osc_gpuic_ext_t.  Every other osc module is larger than the base module, so reading the
 * magic word after the base never leaves the module's memory; the magic (and the ABI number in
 * it) then tells whether the rest may be trusted.
 *
 * Only Open MPI's handle types cross it (MPI_Win is struct ompi_win_t *, and so on), so this
 * header needs neither mpi.h nor the component's headers.
 */
#ifndef OMPI_OSC_GPUIC_EXT_H
#define OMPI_OSC_GPUIC_EXT_H

#include <stddef.h>
#include <stdint.h>

struct ompi_win_t;
struct ompi_datatype_t;
struct ompi_op_t;
struct ompi_group_t;
struct MPIX_Win_device;

/** "gpuic" in ASCII followed by the extension ABI number (4). */
#define OMPI_OSC_GPUIC_EXT_MAGIC 0x6770756963000004ULL

/**
 * The stream-triggered calls (MPIX_*_enqueue, mpix_gpuic.h), one entry per call with the same
 * arguments (MPI_Aint as ptrdiff_t, @p stream a CUstream or cudaStream_t).  Each checks the
 * call, keeps the window's enqueued-epoch state and launches the call's kernel on @p stream;
 * each returns an MPI error class.  Implemented in osc_gpuic_stream_rma.c and
 * osc_gpuic_stream_epoch.c.
 */
typedef struct ompi_osc_gpuic_stream_ops {
    /** MPIX_Put_enqueue */
    int (*put)(const void *origin, int origin_count, struct ompi_datatype_t *origin_dt,
               int target, ptrdiff_t target_disp, int target_count,
               struct ompi_datatype_t *target_dt, struct ompi_win_t *win, void *stream);
    /** MPIX_Get_enqueue */
    int (*get)(void *origin, int origin_count, struct ompi_datatype_t *origin_dt, int target,
               ptrdiff_t target_disp, int target_count, struct ompi_datatype_t *target_dt,
               struct ompi_win_t *win, void *stream);
    /** MPIX_Accumulate_enqueue */
    int (*accumulate)(const void *origin, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                      struct ompi_win_t *win, void *stream);
    /** MPIX_Fetch_and_op_enqueue */
    int (*fetch_and_op)(const void *origin, void *result, struct ompi_datatype_t *dt,
                        int target, ptrdiff_t target_disp, struct ompi_op_t *op,
                        struct ompi_win_t *win, void *stream);
    /** MPIX_Compare_and_swap_enqueue */
    int (*compare_and_swap)(const void *origin, const void *compare, void *result,
                            struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                            struct ompi_win_t *win, void *stream);
    /** MPIX_Win_flush_enqueue */
    int (*flush)(int target, struct ompi_win_t *win, void *stream);
    /** MPIX_Win_flush_all_enqueue */
    int (*flush_all)(struct ompi_win_t *win, void *stream);
    /** MPIX_Win_flush_local_enqueue */
    int (*flush_local)(int target, struct ompi_win_t *win, void *stream);
    /** MPIX_Win_fence_enqueue */
    int (*fence)(int mpi_assert, struct ompi_win_t *win, void *stream);
    /** MPIX_Win_lock_all_enqueue */
    int (*lock_all)(int mpi_assert, struct ompi_win_t *win, void *stream);
    /** MPIX_Win_unlock_all_enqueue */
    int (*unlock_all)(struct ompi_win_t *win, void *stream);
    /** MPIX_Win_post_enqueue */
    int (*post)(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win,
                void *stream);
    /** MPIX_Win_start_enqueue */
    int (*start)(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win,
                 void *stream);
    /** MPIX_Win_complete_enqueue */
    int (*complete)(struct ompi_win_t *win, void *stream);
    /** MPIX_Win_wait_enqueue */
    int (*wait)(struct ompi_win_t *win, void *stream);
} ompi_osc_gpuic_stream_ops_t;

/** Entry points the MPIX library calls; each returns an MPI error class. */
typedef struct ompi_osc_gpuic_ext {
    uint64_t magic; /**< OMPI_OSC_GPUIC_EXT_MAGIC */
    /**
     * Tells which path serves @p rank's memory for host calls: one of the
     * OMPI_OSC_GPUIC_PATH_* values below.
     */
    int (*target_path)(void *module, int rank, int *path);
    /**
     * Returns the window's device handle (mpix_gpuic_device_types.h: a value that points to
     * the window's MPIX_Gpuic_device_win in device memory), built on first use and freed
     * with the window.
     */
    int (*device_handle)(void *module, struct MPIX_Win_device *handle);
    /** Frees the device handle (kernels using it must have finished); a later device_handle
     *  call builds a new one. */
    int (*device_handle_release)(void *module);
    /** Tells the MPIX_GPUIC_DEVICE_PATH_* of @p rank in the current device handle
     *  (MPI_ERR_ARG when there is none). */
    int (*device_path)(void *module, int rank, int *path);
    /** The stream-triggered calls; NULL when the component was built without their kernels
     *  (no CUDA headers or no nvcc). */
    const ompi_osc_gpuic_stream_ops_t *stream;
} ompi_osc_gpuic_ext_t;

/** Paths a target can be served by (values shared with mpix_gpuic.h). */
#define OMPI_OSC_GPUIC_PATH_SELF   0 /**< the calling process itself */
#define OMPI_OSC_GPUIC_PATH_DIRECT 1 /**< same node: direct loads and stores through a mapping */
#define OMPI_OSC_GPUIC_PATH_UCX    2 /**< UCX RMA (network or copy engine) */
#define OMPI_OSC_GPUIC_PATH_IPC    3 /**< same node, device memory: copies through CUDA IPC */
#define OMPI_OSC_GPUIC_PATH_CMA    4 /**< same node, window not mapped: cross-memory copies */

#endif /* OMPI_OSC_GPUIC_EXT_H */
