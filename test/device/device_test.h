/*
 * device_test.h - what the CUDA tests share on top of test/mpi/mpi_test.h: a check of CUDA
 * runtime calls that counts a failure (and prints where) without stopping the test, and the
 * start every test makes (MPI, a device per rank, or a skip).
 */
#ifndef GPUIC_DEVICE_TEST_H
#define GPUIC_DEVICE_TEST_H

#include <cuda_runtime.h>
#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../mpi/mpi_test.h"

/* A statement macro (do/while) so it reads as a call; it never returns from the caller. */
#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                    \
                    cudaGetErrorString(e_));                                                 \
            mpi_test_failures++;                                                             \
        }                                                                                    \
    } while (0)

/*
 * SIGUSR2: every thread of the process prints its stack to stderr (the harness sends it to a
 * device test that is about to time out, so that a hang report says where each thread waits).
 * The first thread to get it passes it on to the others.  Diagnostics only: the calls are not
 * all async-signal-safe.
 */
static void device_test_stacks(int sig)
{
    static volatile int passed_on;
    void *frames[48];
    char head[64];
    long tid = syscall(SYS_gettid);
    int n = backtrace(frames, 48), len;

    len = snprintf(head, sizeof(head), "--- pid %ld thread %ld:\n", (long)getpid(), tid);
    if (write(2, head, (size_t)len) < 0) return;
    backtrace_symbols_fd(frames, n, 2);
    if (__sync_bool_compare_and_swap(&passed_on, 0, 1)) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;

        while (d != NULL && (e = readdir(d)) != NULL) {
            long t = atol(e->d_name);

            if (t > 0 && t != tid) {
                syscall(SYS_tgkill, (long)getpid(), t, sig);
                usleep(20000); /* one thread's lines at a time */
            }
        }
        if (d != NULL) closedir(d);
    }
}

/* What follows MPI's initialization in device_test_init() and device_test_init_thread(). */
static inline int device_test_start(const char *name, int *rank, int *nranks)
{
    int ndev = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (*rank == 0) printf("%s: no CUDA device: SKIP\n", name);
        MPI_Finalize();
        return 0;
    }
    CUDA_CHECK(cudaSetDevice(*rank % ndev));
    signal(SIGUSR2, device_test_stacks);
    return 1;
}

/*
 * MPI_Init, this process's rank and size, and a device for it (its rank modulo the visible
 * devices).  Returns 0 where no device is visible, having printed "NAME: no CUDA device: SKIP"
 * (rank 0) and finalized MPI: the caller then exits with 77, the harness's code for a skip.
 */
static inline int device_test_init(int *argc, char ***argv, const char *name, int *rank,
                                   int *nranks)
{
    MPI_Init(argc, argv);
    return device_test_start(name, rank, nranks);
}

/* device_test_init() with MPI_Init_thread: *provided is the thread level MPI gives. */
static inline int device_test_init_thread(int *argc, char ***argv, int required,
                                          int *provided, const char *name, int *rank,
                                          int *nranks)
{
    MPI_Init_thread(argc, argv, required, provided);
    return device_test_start(name, rank, nranks);
}

/*
 * A window on @p bytes of device memory of displacement unit @p disp_unit over MPI_COMM_WORLD:
 * MPI_Win_allocate with mpi_assert_memory_alloc_kinds=cuda:device (MPI_WIN_FLAVOR_ALLOCATE),
 * or MPI_Win_create on cudaMalloc memory that *owned_p then holds for the caller to free (NULL
 * otherwise).  On success the window returns its errors and its memory is zeroed on every rank
 * (a barrier follows).  Returns the creation's status.
 */
static inline int device_test_gpu_window(int flavor, size_t bytes, int disp_unit, void **dev_p,
                                         void **owned_p, MPI_Win *win)
{
    MPI_Info info;
    int rc;

    *owned_p = NULL;
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
        rc = MPI_Win_allocate((MPI_Aint)bytes, disp_unit, info, MPI_COMM_WORLD, dev_p, win);
        MPI_Info_free(&info);
    } else {
        CUDA_CHECK(cudaMalloc(owned_p, bytes));
        *dev_p = *owned_p;
        rc = MPI_Win_create(*dev_p, (MPI_Aint)bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD,
                            win);
    }
    if (rc == MPI_SUCCESS) {
        MPI_Win_set_errhandler(*win, MPI_ERRORS_RETURN);
        CUDA_CHECK(cudaMemset(*dev_p, 0, bytes));
        CUDA_CHECK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return rc;
}

/*
 * After a GPU window's creation failed with @p rc (MPI_COMM_WORLD returning errors): with
 * peers on other emulated nodes and a UCX that cannot register device memory, every rank is
 * refused as documented (the component's MPI_ERR_UNSUPPORTED_OPERATION, or the MPI_ERR_WIN
 * Open MPI turns a refusing component into): "NAME: ... SKIP", MPI finalized, 77.  Any other
 * failure counts and ends the test.  Returns the process's exit code.
 */
static inline int device_test_window_refused(int rc, int rank, const char *name)
{
    const char *e = getenv("OMPI_MCA_osc_gpuic_emulate_nodes");
    int cls = 0;

    MPI_Error_class(rc, &cls);
    CHECK(e != NULL && atoi(e) > 0 &&
          (cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN));
    if (mpi_test_failures != 0) {
        return mpi_test_finish(name);
    }
    if (rank == 0) {
        printf("%s: peers on other nodes and a UCX without CUDA memory: window creation "
               "refused as documented: SKIP\n", name);
    }
    MPI_Finalize();
    return 77;
}

#endif /* GPUIC_DEVICE_TEST_H */
