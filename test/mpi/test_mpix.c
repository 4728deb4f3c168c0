/*
 * The MPIX host API: version and capability queries, recognising gpuic windows, the path
 * that serves each target (self, direct mapping, UCX), and the device handle's value on error.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"
#include "mpix_gpuic.h"

int main(int argc, char **argv)
{
    int rank, n, major = -1, minor = -1, patch = -1, caps = 0, flag = -1, path = -1;
    int *base, local[4];
    MPI_Win awin, cwin;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    CHECK(MPIX_Gpuic_get_version(&major, &minor, &patch) == MPI_SUCCESS);
    CHECK(major == MPIX_GPUIC_VERSION_MAJOR && minor == MPIX_GPUIC_VERSION_MINOR &&
          patch == MPIX_GPUIC_VERSION_PATCH);
    CHECK(MPIX_Gpuic_query_capabilities(&caps) == MPI_SUCCESS);
    CHECK(caps & MPIX_GPUIC_CAP_HOST_RMA);
    CHECK(MPIX_Win_is_gpuic(MPI_WIN_NULL, &flag) == MPI_ERR_WIN);

    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &awin);
    MPI_Win_create(local, sizeof(local), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &cwin);
    CHECK(MPIX_Win_is_gpuic(awin, &flag) == MPI_SUCCESS && flag == 1);
    CHECK(MPIX_Win_is_gpuic(cwin, &flag) == MPI_SUCCESS && flag == 1);
    CHECK(mpi_test_is_gpuic(awin) && mpi_test_is_gpuic(cwin));

    for (int r = 0; r < n; ++r) {
        CHECK(MPIX_Win_gpuic_target_path(awin, r, &path) == MPI_SUCCESS);
        if (r == rank) {
            CHECK(path == MPIX_GPUIC_PATH_SELF);
        } else {
            CHECK(path == MPIX_GPUIC_PATH_DIRECT || path == MPIX_GPUIC_PATH_CMA ||
                  path == MPIX_GPUIC_PATH_UCX);
        }
        if (rank == 0) {
            printf("allocate window: target %d served by %s\n", r,
                   path == MPIX_GPUIC_PATH_SELF ? "self" :
                   path == MPIX_GPUIC_PATH_DIRECT ? "direct mapping" :
                   path == MPIX_GPUIC_PATH_CMA ? "cross-memory copies" : "UCX");
        }
    }
    CHECK(MPIX_Win_gpuic_target_path(awin, n, &path) == MPI_ERR_RANK);
    /* no handle was handed out on this host-only window */
    CHECK(MPIX_Win_release_device_handle(awin) == MPI_ERR_ARG);
    CHECK(MPIX_Win_release_device_handle(MPI_WIN_NULL) == MPI_ERR_WIN);
    CHECK(MPIX_Win_gpuic_target_path(awin, -1, &path) == MPI_ERR_RANK);

    /* the device handle: a value, zero-filled (not valid) whenever the call fails */
    {
        static const MPIX_Win_device zero;
        MPIX_Win_device h;
        int rc;

        memset(&h, 0xab, sizeof(h));
        CHECK(MPIX_Win_get_device_handle(MPI_WIN_NULL, &h) == MPI_ERR_WIN);
        CHECK(memcmp(&h, &zero, sizeof(h)) == 0);
        memset(&h, 0xab, sizeof(h));
        rc = MPIX_Win_get_device_handle(awin, &h);
        if (rc == MPI_SUCCESS) {
            CHECK(h.desc != NULL && h.magic == MPIX_GPUIC_DEVICE_MAGIC && h.rank == rank &&
                  h.nranks == n);
            CHECK(MPIX_Win_release_device_handle(awin) == MPI_SUCCESS);
        } else {
            /* no usable CUDA device in this process */
            CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION);
            CHECK(memcmp(&h, &zero, sizeof(h)) == 0);
        }
    }

    /* MPI_Win_create memory: mapped where UCX maps it, else cross-memory copies where the
     * system allows them, else UCX */
    for (int r = 0; r < n; ++r) {
        CHECK(MPIX_Win_gpuic_target_path(cwin, r, &path) == MPI_SUCCESS);
        CHECK(r == rank ? path == MPIX_GPUIC_PATH_SELF
                        : path == MPIX_GPUIC_PATH_DIRECT || path == MPIX_GPUIC_PATH_CMA ||
                              path == MPIX_GPUIC_PATH_UCX);
        if (rank == 0 && r != rank) {
            printf("create window: target %d served by %s\n", r,
                   path == MPIX_GPUIC_PATH_DIRECT ? "direct mapping" :
                   path == MPIX_GPUIC_PATH_CMA ? "cross-memory copies" : "UCX");
        }
    }

    MPI_Win_free(&cwin);
    MPI_Win_free(&awin);
    return mpi_test_finish("test_mpix");
}
