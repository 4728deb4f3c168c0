/*
 * MPIX_Gpuic_bind_device and the osc_gpuic_device parameter, with or without a GPU: argument
 * errors, the parameter as MPI_T sees it, and a device that follows the node-local rank or the
 * parameter.  Where no GPU is usable the call must say so (MPI_ERR_UNSUPPORTED_OPERATION,
 * device -1); test/device/test_bind_device checks the GPU each rank really runs on.
 */
#include <stdlib.h>

#include "mpi_test.h"
#include "mpix_gpuic.h"

/* osc_gpuic_device through MPI_T, as any tool sees it; -2 when it is not registered. */
static int cvar_device(void)
{
    int provided, index = -1, count = 0, value = -2;
    MPI_T_cvar_handle handle;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return -2;
    }
    if (MPI_T_cvar_get_index("osc_gpuic_device", &index) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
        if (count != 1 || MPI_T_cvar_read(handle, &value) != MPI_SUCCESS) {
            value = -2;
        }
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return value;
}

int main(int argc, char **argv)
{
    const char *env = getenv("OMPI_MCA_osc_gpuic_device");
    int requested = env != NULL ? atoi(env) : -1;
    int rank, local_rank, device = -7, self_device = -7, rc, cls = MPI_SUCCESS;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);

    CHECK(cvar_device() == requested);
    CHECK_CLASS(MPIX_Gpuic_bind_device(MPI_COMM_NULL, &device), MPI_ERR_COMM);
    CHECK_CLASS(MPIX_Gpuic_bind_device(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);

    rc = MPIX_Gpuic_bind_device(MPI_COMM_WORLD, &device);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
    }
    if (rc == MPI_SUCCESS) {
        /* the device count is unknown here: the rule's visible parts only */
        if (requested >= 0) {
            CHECK(device == requested);
        } else {
            CHECK(device >= 0 && device <= local_rank);
            CHECK(local_rank != 0 || device == 0);
        }
    } else {
        /* no GPU, or a parameter naming a device that is not there */
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION || (cls == MPI_ERR_ARG && requested >= 0));
        CHECK(device == -1);
    }
    /* alone on a communicator, a process is node-local rank 0 */
    rc = MPIX_Gpuic_bind_device(MPI_COMM_SELF, &self_device);
    if (rc == MPI_SUCCESS) {
        CHECK(self_device == (requested >= 0 ? requested : 0));
    } else {
        CHECK(self_device == -1);
    }
    if (rank == 0) {
        printf("bind: rank 0 device %d (MPI_COMM_SELF: %d), osc_gpuic_device %d\n", device,
               self_device, requested);
    }
    return mpi_test_finish("test_bind_device");
}
