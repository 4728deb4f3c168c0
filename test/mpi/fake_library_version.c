/*
 * Preloaded into a test's processes (LD_PRELOAD) to make MPI report another Open MPI version:
 * the component's version guard asks PMPI_Get_library_version, and this definition is found
 * first.  GPUIC_FAKE_OMPI_VERSION gives the version (default 9.9.9).
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

int PMPI_Get_library_version(char *version, int *resultlen)
{
    const char *v = getenv("GPUIC_FAKE_OMPI_VERSION");

    *resultlen = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "Open MPI v%s",
                          v != NULL ? v : "9.9.9");
    return MPI_SUCCESS;
}
