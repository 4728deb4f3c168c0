/*
 * mpix_gpuic_internal.h - what the files of libmpix_gpuic share (not installed).
 */
#ifndef MPIX_GPUIC_INTERNAL_H
#define MPIX_GPUIC_INTERNAL_H

#include <stddef.h>

#include <mpi.h>

#include "osc_gpuic_ext.h"

#define MPIX_GPUIC_HIDDEN __attribute__((visibility("hidden")))

/** The extension block of a gpuic window, or NULL for any other window. */
MPIX_GPUIC_HIDDEN ompi_osc_gpuic_ext_t *mpix_gpuic_ext(MPI_Win win);

#endif /* MPIX_GPUIC_INTERNAL_H */
