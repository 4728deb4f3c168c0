/*
 * gpuic_info: what the gpuic MPIX host API reports about this run.
 *
 * Every rank asks for the library's version and capabilities, creates a window, asks whether
 * gpuic serves it and by which path each target is reached, and tries to get the window's
 * device handle (which works where a CUDA driver and device are usable).  Rank 0 prints what
 * every rank found.  Runs with or without a GPU:
 *
 *   mpicc gpuic_info.c -lmpix_gpuic -o gpuic_info
 *   mpirun -np 2 --mca osc gpuic ./gpuic_info
 *
 * Exit status 0 when every MPIX call answered as documented, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <mpix_gpuic.h>

#define LINE 256 /* bytes of report per rank */

static const char *path_name(int path)
{
    switch (path) {
    case MPIX_GPUIC_PATH_SELF:   return "self";
    case MPIX_GPUIC_PATH_DIRECT: return "direct (same node, mapped)";
    case MPIX_GPUIC_PATH_UCX:    return "UCX";
    case MPIX_GPUIC_PATH_IPC:    return "CUDA IPC (same node, GPU memory)";
    case MPIX_GPUIC_PATH_CMA:    return "cross-memory copies (same node, not mapped)";
    default:                     return "unknown";
    }
}

int main(int argc, char **argv)
{
    int rank, nranks, major, minor, patch, caps, flag = 0, bad = 0, any_bad = 0;
    char line[LINE], *all = NULL;
    size_t used;
    void *base;
    MPI_Win win;
    MPIX_Win_device handle;

    /* The only MPIX call allowed before MPI_Init. */
    MPIX_Gpuic_get_version(&major, &minor, &patch);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPIX_Gpuic_query_capabilities(&caps);

    if (rank == 0) {
        printf("gpuic library %d.%d.%d, headers %d.%d.%d%s\n", major, minor, patch,
               MPIX_GPUIC_VERSION_MAJOR, MPIX_GPUIC_VERSION_MINOR, MPIX_GPUIC_VERSION_PATCH,
               major == MPIX_GPUIC_VERSION_MAJOR ? "" : " (major versions differ!)");
        printf("capabilities: host RMA %s, device API %s\n",
               caps & MPIX_GPUIC_CAP_HOST_RMA ? "yes" : "no",
               caps & MPIX_GPUIC_CAP_DEVICE_API ? "yes" : "no");
    }

    /* A plain host-memory window: gpuic serves it when selected (--mca osc gpuic). */
    MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    bad |= MPIX_Win_is_gpuic(win, &flag) != MPI_SUCCESS;
    used = (size_t)snprintf(line, LINE, "rank %d: window %s", rank,
                            flag ? "served by gpuic" : "NOT served by gpuic");

    if (flag) {
        /* How host RMA calls reach each target: fixed when the window was created. */
        for (int t = 0; t < nranks && used < LINE; ++t) {
            int path = -1;

            bad |= MPIX_Win_gpuic_target_path(win, t, &path) != MPI_SUCCESS;
            used += (size_t)snprintf(line + used, LINE - used, "%s to %d: %s",
                                     t ? ";" : ",", t, path_name(path));
        }
        /* A rank outside the window is refused with an MPI error class. */
        bad |= MPIX_Win_gpuic_target_path(win, nranks, &flag) != MPI_ERR_RANK;

        /* The device handle needs a usable CUDA device; without one the call says so. */
        if (used < LINE) {
            int rc = MPIX_Win_get_device_handle(win, &handle);

            if (rc == MPI_SUCCESS) {
                used += (size_t)snprintf(line + used, LINE - used, "; device handle %p", (void *)handle.desc);
                bad |= MPIX_Win_release_device_handle(win) != MPI_SUCCESS;
            } else {
                used += (size_t)snprintf(line + used, LINE - used, "; no device handle (%s)",
                                         rc == MPI_ERR_UNSUPPORTED_OPERATION ? "no usable CUDA device"
                                                                             : "error");
                bad |= rc != MPI_ERR_UNSUPPORTED_OPERATION;
            }
        }
    }

    /* Rank 0 prints every rank's line in rank order. */
    if (rank == 0) {
        all = malloc((size_t)nranks * LINE);
    }
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < nranks; ++r) {
            printf("%.*s\n", LINE, all + (size_t)r * LINE);
        }
        free(all);
    }

    MPI_Win_free(&win);
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("gpuic_info: %s\n", any_bad ? "an MPIX call answered unexpectedly" : "done");
    }
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
