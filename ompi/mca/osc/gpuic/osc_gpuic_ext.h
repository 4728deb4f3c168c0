/*
 * osc_gpuic_ext.h - how code outside the component (the MPIX library) recognises a window
 * served by gpuic and reaches its extension entry points.
 *
 * Every gpuic module starts with Open MPI's ompi_osc_base_module_t followed immediately by an
 * ompi_osc_gpuic_ext_t.  Every other osc module is larger than the base module, so reading the
 * magic word after the base never leaves the module's memory; the magic (and the ABI number in
 * it) then tells whether the rest may be trusted.
 */
#ifndef OMPI_OSC_GPUIC_EXT_H
#define OMPI_OSC_GPUIC_EXT_H

#include <stdint.h>

/** "gpuic" in ASCII followed by the extension ABI number (2). */
#define OMPI_OSC_GPUIC_EXT_MAGIC 0x6770756963000002ULL

/** Entry points the MPIX library calls; each returns an MPI error class. */
typedef struct ompi_osc_gpuic_ext {
    uint64_t magic; /**< OMPI_OSC_GPUIC_EXT_MAGIC */
    /**
     * Tells which path serves @p rank's memory for host calls: one of the
     * OMPI_OSC_GPUIC_PATH_* values below.
     */
    int (*target_path)(void *module, int rank, int *path);
    /**
     * Returns the window's device handle (a device pointer to its MPIX_Gpuic_device_win),
     * built on first use and freed with the window.
     */
    int (*device_handle)(void *module, void **handle_p);
    /** Frees the device handle (kernels using it must have finished); a later device_handle
     *  call builds a new one. */
    int (*device_handle_release)(void *module);
    /** Tells the MPIX_GPUIC_DEVICE_PATH_* of @p rank in the current device handle
     *  (MPI_ERR_ARG when there is none). */
    int (*device_path)(void *module, int rank, int *path);
    /** Stream-triggered calls (osc_gpuic_stream_ext.h). */
    const struct ompi_osc_gpuic_stream_ops *stream;
} ompi_osc_gpuic_ext_t;

/** Paths a target can be served by (values shared with mpix_gpuic.h). */
#define OMPI_OSC_GPUIC_PATH_SELF   0 /**< the calling process itself */
#define OMPI_OSC_GPUIC_PATH_DIRECT 1 /**< same node: direct loads and stores through a mapping */
#define OMPI_OSC_GPUIC_PATH_UCX    2 /**< UCX RMA (network or copy engine) */
#define OMPI_OSC_GPUIC_PATH_IPC    3 /**< same node, device memory: copies through CUDA IPC */

#endif /* OMPI_OSC_GPUIC_EXT_H */
