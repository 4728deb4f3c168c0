/*
 * Host MPI RMA calls on GPU windows, for peers on this node (CUDA IPC) and on other nodes
 * (UCX; emulated with osc_gpuic_emulate_nodes): both flavors (MPI_Win_allocate with
 * mpi_assert_memory_alloc_kinds=cuda:device, MPI_Win_create on cudaMalloc memory), origin and
 * result buffers in host and in device memory, every epoch kind:
 *   - fence: every rank puts a block into its right neighbour and gets one from its left;
 *   - PSCW: the same with a strided (vector) target datatype;
 *   - lock_all + flush: accumulates (MPI_SUM with a target type that names one element
 *     several times), get_accumulate, and rput/rget;
 *   - lock (shared), from every rank at once into rank 0: MPI_Fetch_and_op on one counter,
 *     whose fetched values must be a permutation of 0 .. total-1 (element-wise atomicity
 *     among host calls across nodes), and MPI_Compare_and_swap.
 * MPIX_Win_gpuic_target_path must say IPC for peers of this (emulated) node and UCX for the
 * others.  Window memory is read back with cudaMemcpy and checked element by element.
 *
 * Where the window has peers on other nodes and this process's UCX cannot register device
 * memory, window creation fails (MPI_ERR_UNSUPPORTED_OPERATION from the component; Open MPI
 * may report it as MPI_ERR_WIN) with a message: that is checked, and the
 * test then exits 77 (skip: run it with a CUDA-enabled UCX first on LD_LIBRARY_PATH).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"
#include "mpix_gpuic.h"

#define N 512           /* doubles per block */
#define ROUNDS 20       /* fetch_and_op rounds per rank */

static int rank, nranks, emulate;

/* The node of a rank as the component sees it (emulated nodes of `emulate` ranks each). */
static int same_node(int r)
{
    return emulate <= 0 || r / emulate == rank / emulate;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;

    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
}

/* Window of 4 blocks of N doubles plus a counter area, in device memory. */
static int win_make(int flavor, void **dev_p, void **owned_p, MPI_Win *win)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return device_test_gpu_window(flavor, (4 * N + 64) * sizeof(double), sizeof(double), dev_p,
                                  owned_p, win);
}

static void check_paths(MPI_Win win)
{
    int r, path = -1;

    for (r = 0; r < nranks; ++r) {
        CHECK(MPIX_Win_gpuic_target_path(win, r, &path) == MPI_SUCCESS);
        if (r == rank) {
            CHECK(path == MPIX_GPUIC_PATH_SELF);
        } else {
            CHECK(path == (same_node(r) ? MPIX_GPUIC_PATH_IPC : MPIX_GPUIC_PATH_UCX));
        }
    }
}

/* Reads n doubles at element off of the window memory. */
static void read_win(void *dev, size_t off, double *host, size_t n)
{
    CUDA_CHECK(cudaMemcpy(host, (double *)dev + off, n * sizeof(double), cudaMemcpyDeviceToHost));
}

/* Fills a buffer of n doubles (host or device) with value(i) = base + i. */
static double *origin_make(int on_device, double base, size_t n)
{
    double *h = (double *)malloc(n * sizeof(double)), *d;
    size_t i;

    for (i = 0; i < n; ++i) h[i] = base + (double)i;
    if (!on_device) return h;
    d = (double *)dev_alloc(n * sizeof(double));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(double), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void origin_free(int on_device, void *p)
{
    if (on_device) CUDA_CHECK(cudaFree(p)); else free(p);
}

static void copy_out(int on_device, double *host, const double *buf, size_t n)
{
    if (on_device) {
        CUDA_CHECK(cudaMemcpy(host, buf, n * sizeof(double), cudaMemcpyDeviceToHost));
    } else {
        memcpy(host, buf, n * sizeof(double));
    }
}

/* Fence: put block 0 into the right neighbour, get its block 0 back into a buffer. */
static void phase_fence(MPI_Win win, void *dev, int odev)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    double *src = origin_make(odev, 1000.0 * rank, N), *dst = origin_make(odev, -1, N);
    double *h = (double *)malloc(N * sizeof(double));
    size_t i;

    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(src, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    CHECK(MPI_Get(dst, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    read_win(dev, 0, h, N);
    for (i = 0; i < N; ++i) CHECK(h[i] == 1000.0 * left + (double)i);
    copy_out(odev, h, dst, N);
    for (i = 0; i < N; ++i) CHECK(h[i] == 1000.0 * rank + (double)i);
    origin_free(odev, src);
    origin_free(odev, dst);
    free(h);
}

/* PSCW: a vector target type (every second element of block 1) from the left neighbour. */
static void phase_pscw(MPI_Win win, void *dev, int odev)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    double *src = origin_make(odev, 7.0 + rank, N / 2), *h = (double *)malloc(N * sizeof(double));
    MPI_Group world, to, from;
    MPI_Datatype vec;
    size_t i;

    MPI_Type_vector(N / 2, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &right, &to);
    MPI_Group_incl(world, 1, &left, &from);
    CHECK(MPI_Win_post(from, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Win_start(to, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(src, N / 2, MPI_DOUBLE, right, N, 1, vec, win) == MPI_SUCCESS);
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
    CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
    read_win(dev, N, h, N);
    for (i = 0; i < N; ++i) {
        CHECK(h[i] == (i % 2 == 0 ? 7.0 + left + (double)(i / 2) : 0.0));
    }
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Group_free(&world);
    MPI_Type_free(&vec);
    origin_free(odev, src);
    free(h);
}

/* lock_all: every rank accumulates into block 2 of every rank with a target type that names
 * element j three times (indexed: j, j, j for j < N/4), then get_accumulate, rput and rget. */
static void phase_acc(MPI_Win win, void *dev, int odev)
{
    int q = N / 4, t, j, blen[3 * N / 4], disp[3 * N / 4];
    double *one = origin_make(odev, 0, 3 * q), *res = origin_make(odev, 0, N);
    double *h = (double *)malloc(N * sizeof(double)), *ones = (double *)malloc(3 * q * sizeof(double));
    MPI_Datatype idx;
    MPI_Request req[2];

    for (j = 0; j < 3 * q; ++j) { blen[j] = 1; disp[j] = j % q; ones[j] = 1.0; }
    if (odev) {
        CUDA_CHECK(cudaMemcpy(one, ones, 3 * q * sizeof(double), cudaMemcpyHostToDevice));
    } else {
        memcpy(one, ones, 3 * q * sizeof(double));
    }
    MPI_Type_indexed(3 * q, blen, disp, MPI_DOUBLE, &idx);
    MPI_Type_commit(&idx);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    for (t = 0; t < nranks; ++t) {
        CHECK(MPI_Accumulate(one, 3 * q, MPI_DOUBLE, t, 2 * N, 1, idx, MPI_SUM, win) ==
              MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    /* get_accumulate of no_op reads what everyone added: 3 * nranks per element */
    t = (rank + 1) % nranks;
    CHECK(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, res, q, MPI_DOUBLE, t, 2 * N, q, MPI_DOUBLE,
                             MPI_NO_OP, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
    copy_out(odev, h, res, q);
    for (j = 0; j < q; ++j) CHECK(h[j] == 3.0 * nranks);
    MPI_Barrier(MPI_COMM_WORLD);
    /* rput into block 3 of the right neighbour, rget it back */
    {
        double *src = origin_make(odev, 0.5 + rank, N);

        CHECK(MPI_Rput(src, N, MPI_DOUBLE, t, 3 * N, N, MPI_DOUBLE, win, &req[0]) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req[0], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
        CHECK(MPI_Rget(res, N, MPI_DOUBLE, t, 3 * N, N, MPI_DOUBLE, win, &req[1]) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req[1], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        copy_out(odev, h, res, N);
        for (j = 0; j < N; ++j) CHECK(h[j] == 0.5 + rank + (double)j);
        origin_free(odev, src);
    }
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    read_win(dev, 2 * N, h, N);
    for (j = 0; j < N; ++j) CHECK(h[j] == (j < q ? 3.0 * nranks : 0.0));
    MPI_Type_free(&idx);
    origin_free(odev, one);
    origin_free(odev, res);
    free(h);
    free(ones);
}

/* Every rank fetch-and-adds 1 into rank 0's counter ROUNDS times under a shared lock; the
 * fetched values over all ranks must be 0 .. total-1, each once.  Then compare-and-swap. */
static void phase_atomic(MPI_Win win, void *dev, int odev)
{
    int64_t *fetched = (int64_t *)malloc(ROUNDS * sizeof(int64_t)), *all = NULL, one = 1;
    int64_t *res = (int64_t *)(odev ? dev_alloc(sizeof(int64_t)) : malloc(sizeof(int64_t)));
    int64_t *src = (int64_t *)(odev ? dev_alloc(2 * sizeof(int64_t)) : malloc(2 * sizeof(int64_t)));
    int64_t total = (int64_t)ROUNDS * nranks, v, cmpnew[2];
    MPI_Aint slot = (MPI_Aint)(4 * N); /* the counter, in units of the window's disp_unit */
    int i;

    cmpnew[0] = one;
    if (odev) {
        CUDA_CHECK(cudaMemcpy(src, cmpnew, sizeof(int64_t), cudaMemcpyHostToDevice));
    } else {
        src[0] = one;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < ROUNDS; ++i) {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win) == MPI_SUCCESS);
        CHECK(MPI_Fetch_and_op(src, res, MPI_INT64_T, 0, slot, MPI_SUM, win) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
        if (odev) {
            CUDA_CHECK(cudaMemcpy(&fetched[i], res, sizeof(int64_t), cudaMemcpyDeviceToHost));
        } else {
            fetched[i] = *res;
        }
    }
    if (rank == 0) all = (int64_t *)malloc(total * sizeof(int64_t));
    MPI_Gather(fetched, ROUNDS, MPI_INT64_T, all, ROUNDS, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = (char *)calloc(total, 1);

        for (i = 0; i < total; ++i) {
            CHECK(all[i] >= 0 && all[i] < total);
            if (all[i] >= 0 && all[i] < total) {
                CHECK(!seen[all[i]]);
                seen[all[i]] = 1;
            }
        }
        read_win(dev, 4 * N, (double *)&v, 1);
        CHECK(v == total);
        free(seen);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* compare-and-swap: total -> total + 100 succeeds for exactly one rank */
    cmpnew[0] = total + 100; /* new value */
    cmpnew[1] = total;       /* compare */
    if (odev) {
        CUDA_CHECK(cudaMemcpy(src, cmpnew, 2 * sizeof(int64_t), cudaMemcpyHostToDevice));
    } else {
        memcpy(src, cmpnew, sizeof(cmpnew));
    }
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Compare_and_swap(&src[0], &src[1], res, MPI_INT64_T, 0, slot, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
    if (odev) {
        CUDA_CHECK(cudaMemcpy(&v, res, sizeof(int64_t), cudaMemcpyDeviceToHost));
    } else {
        v = *res;
    }
    {
        int won = v == total, winners = 0;

        CHECK(v == total || v == total + 100);
        MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(winners == 1);
    }
    if (rank == 0) {
        read_win(dev, 4 * N, (double *)&v, 1);
        CHECK(v == total + 100);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    origin_free(odev, res);
    origin_free(odev, src);
    free(fetched);
}

int main(int argc, char **argv)
{
    const char *e = getenv("OMPI_MCA_osc_gpuic_emulate_nodes");
    int flavors[2] = {MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_CREATE}, f, odev, rc, cls, remote = 0;
    int r;

    if (!device_test_init(&argc, &argv, "test_gpu_window_host", &rank, &nranks)) {
        return 77;
    }
    emulate = e != NULL ? atoi(e) : 0;
    for (r = 0; r < nranks; ++r) remote |= !same_node(r);
    for (f = 0; f < 2; ++f) {
        for (odev = 0; odev < 2; ++odev) {
            void *dev = NULL, *owned = NULL;
            MPI_Win win;

            rc = win_make(flavors[f], &dev, &owned, &win);
            if (rc != MPI_SUCCESS) {
                MPI_Error_class(rc, &cls);
                /* the component's class, or the one Open MPI's window creation turns a
                 * refusing component into */
                CHECK(remote && (cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN));
                if (rank == 0) printf("window creation refused with class %d\n", cls);
                if (owned != NULL) CUDA_CHECK(cudaFree(owned));
                if (rank == 0 && mpi_test_failures == 0) {
                    printf("test_gpu_window_host: peers on other nodes and a UCX without CUDA "
                           "memory: window creation refused as documented: SKIP\n");
                }
                if (mpi_test_failures == 0) {
                    MPI_Finalize();
                    return 77;
                }
                return mpi_test_finish("test_gpu_window_host");
            }
            check_paths(win);
            /* each phase's end shows in the log, so that a hang says where it stopped */
            phase_fence(win, dev, odev);
            fprintf(stderr, "[rank %d] flavor %d origin %d: fence done\n", rank, f, odev);
            phase_pscw(win, dev, odev);
            fprintf(stderr, "[rank %d] flavor %d origin %d: pscw done\n", rank, f, odev);
            phase_acc(win, dev, odev);
            fprintf(stderr, "[rank %d] flavor %d origin %d: accumulates done\n", rank, f, odev);
            phase_atomic(win, dev, odev);
            fprintf(stderr, "[rank %d] flavor %d origin %d: atomics done\n", rank, f, odev);
            CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
            if (owned != NULL) CUDA_CHECK(cudaFree(owned));
        }
    }
    return mpi_test_finish("test_gpu_window_host");
}
