/*
 * Compatibility header for Open MPI installations that do not ship fint_2_int.h, which
 * ompi/op/op.h includes.  MPI_Fint and int have the same size on every platform gpuic targets,
 * so the conversions are plain casts.  Used by the out-of-tree build only.
 */
#ifndef GPUIC_COMPAT_FINT_2_INT_H
#define GPUIC_COMPAT_FINT_2_INT_H

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))

#endif
