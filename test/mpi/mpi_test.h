/*
 * mpi_test.h - shared checking for gpuic's MPI tests.
 * CHECK records a failure and goes on; mpi_test_finish() combines every rank's verdict,
 * prints one line on rank 0 and returns the exit status.
 */
#ifndef GPUIC_MPI_TEST_H
#define GPUIC_MPI_TEST_H

#include <stdio.h>
#include <string.h>

#include <mpi.h>

static int mpi_test_failures;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            int r_;                                                                         \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                             \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s\n", r_, __FILE__, __LINE__, \
                    #cond);                                                                 \
            mpi_test_failures++;                                                            \
        }                                                                                   \
    } while (0)

/* Checks that an MPI call returned an error of class @p cls. */
#define CHECK_CLASS(call, cls)                                                              \
    do {                                                                                    \
        int rc_ = (call), c_ = MPI_SUCCESS;                                                 \
        if (rc_ != MPI_SUCCESS) MPI_Error_class(rc_, &c_);                                  \
        if (c_ != (cls)) {                                                                  \
            int r_;                                                                         \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                             \
            fprintf(stderr, "[rank %d] %s:%d: %s gave class %d, expected %s (%d)\n", r_,   \
                    __FILE__, __LINE__, #call, c_, #cls, (int)(cls));                       \
            mpi_test_failures++;                                                            \
        }                                                                                   \
    } while (0)

/* True when the window was served by gpuic (its name is set by the component). */
static inline int mpi_test_is_gpuic(MPI_Win win)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;

    MPI_Win_get_name(win, name, &len);
    return strncmp(name, "gpuic window", 12) == 0;
}

/* The rank in MPI_COMM_WORLD of rank @p r of @p comm. */
static inline int mpi_test_world_rank(MPI_Comm comm, int r)
{
    MPI_Group g, wg;
    int w = -1;

    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, 1, &r, wg, &w);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    return w;
}

static inline int mpi_test_finish(const char *name)
{
    int rank, total = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&mpi_test_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s: %s (%d failed checks)\n", name, total ? "FAIL" : "PASS", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
