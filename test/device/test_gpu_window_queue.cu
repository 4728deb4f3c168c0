/*
 * Host puts and gets on a GPU window whose copies the driver runs later, on the window's own
 * stream: every completion point must wait for them.  Origin buffers in pageable host memory,
 * pinned host memory (cudaMallocHost: the copies are fully asynchronous) and device memory;
 * each rank works on its right neighbour's window (CUDA IPC, or itself with one rank):
 *   - many puts (small blocks and one large block), one MPI_Win_flush, then the target reads
 *     its memory; many gets, one MPI_Win_flush_all, then the origin reads its buffers;
 *   - MPI_Rput with MPI_Waitall then a flush; MPI_Rget completed by an MPI_Test loop and by
 *     MPI_Waitall (data in the buffer on completion); an MPI_Rput whose request is freed;
 *   - MPI_Win_flush_local, then the origin buffer refilled and put again elsewhere: the first
 *     put must carry the first contents;
 *   - a put then a get of the same block across a flush (the get sees the put);
 *   - exclusive lock/unlock, fence and post/start/complete/wait epochs;
 *   - under MPI_THREAD_MULTIPLE, threads without a CUDA context of their own each putting many
 *     pieces, flushing and reading them back with MPI_Rget at the same time.
 * Window memory is read back with cudaMemcpy after a barrier and checked element by element.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"

#define NB 64          /* small blocks per phase */
#define B 16           /* doubles per small block */
#define LN (1 << 18)   /* doubles in the large block (2 MiB) */
#define SMALL0 0       /* window layout, in doubles: the small blocks */
#define LARGE0 4096    /* the large block */
#define AUX0 (LARGE0 + LN) /* second area: rput/rget, flush_local, epochs */
#define WIN_N (AUX0 + LN)
#define NT 4           /* threads of the threads phase */

enum { ORIGIN_PAGEABLE, ORIGIN_PINNED, ORIGIN_DEVICE, ORIGIN_KINDS };
static const char *kind_name[ORIGIN_KINDS] = {"pageable", "pinned", "device"};

static int rank, nranks, right, left;

/* Distinct for every rank, fill number (below 100) and element (below 1e6), and exact. */
static double value(int r, int k, size_t i)
{
    return 1e8 * (r + 1) + 1e6 * k + (double)i;
}

static double *buf_alloc(int kind, size_t n)
{
    void *p = NULL;

    if (kind == ORIGIN_PAGEABLE) {
        p = malloc(n * sizeof(double));
    } else if (kind == ORIGIN_PINNED) {
        CUDA_CHECK(cudaMallocHost(&p, n * sizeof(double)));
    } else {
        CUDA_CHECK(cudaMalloc(&p, n * sizeof(double)));
    }
    return (double *)p;
}

static void buf_free(int kind, double *p)
{
    if (kind == ORIGIN_PAGEABLE) {
        free(p);
    } else if (kind == ORIGIN_PINNED) {
        CUDA_CHECK(cudaFreeHost(p));
    } else {
        CUDA_CHECK(cudaFree(p));
    }
}

/* buf[i] = value(r, k, i) (device buffers through a synchronous copy) */
static void buf_fill(int kind, double *buf, size_t n, int r, int k)
{
    double *h = kind == ORIGIN_DEVICE ? (double *)malloc(n * sizeof(double)) : buf;
    size_t i;

    for (i = 0; i < n; ++i) h[i] = value(r, k, i);
    if (kind == ORIGIN_DEVICE) {
        CUDA_CHECK(cudaMemcpy(buf, h, n * sizeof(double), cudaMemcpyHostToDevice));
        free(h);
    }
}

/* Elements of buf (host or device) that are not value(r, k, i). */
static size_t buf_mismatches(const double *buf, size_t n, int r, int k)
{
    double *h = (double *)malloc(n * sizeof(double));
    size_t i, bad = 0;

    CUDA_CHECK(cudaMemcpy(h, buf, n * sizeof(double), cudaMemcpyDefault));
    for (i = 0; i < n; ++i) bad += h[i] != value(r, k, i);
    if (bad > 0) {
        fprintf(stderr, "rank %d: %zu of %zu elements wrong (first: %g, want %g)\n", rank, bad,
                n, h[0], value(r, k, 0));
    }
    free(h);
    return bad;
}

/* The window's own memory at element off, once every rank has reached this point. */
static size_t win_mismatches(double *win, size_t off, size_t n, int r, int k)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return buf_mismatches(win + off, n, r, k);
}

/* Fills n elements of the window's own memory at off with value(rank, k, .), for gets. */
static void win_fill(double *win, size_t off, size_t n, int k)
{
    buf_fill(ORIGIN_DEVICE, win + off, n, rank, k);
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
}

/* NB small puts and one large put, one flush; then NB small gets and a large get, one
 * flush_all; then a put and a get of one block across a flush. */
static void phase_flush(MPI_Win win, double *mem, int kind)
{
    double *src = buf_alloc(kind, NB * B), *big = buf_alloc(kind, LN), *dst = buf_alloc(kind, NB * B);
    int k;

    buf_fill(kind, src, NB * B, rank, 1);
    buf_fill(kind, big, LN, rank, 2);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    for (k = 0; k < NB; ++k) {
        CHECK(MPI_Put(src + k * B, B, MPI_DOUBLE, right, SMALL0 + k * B, B, MPI_DOUBLE, win) ==
              MPI_SUCCESS);
    }
    CHECK(MPI_Put(big, LN, MPI_DOUBLE, right, LARGE0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
    CHECK(win_mismatches(mem, SMALL0, NB * B, left, 1) == 0);
    CHECK(win_mismatches(mem, LARGE0, LN, left, 2) == 0);

    /* gets of what the target wrote itself */
    win_fill(mem, SMALL0, NB * B, 3);
    win_fill(mem, LARGE0, LN, 4);
    for (k = NB - 1; k >= 0; --k) {
        CHECK(MPI_Get(dst + k * B, B, MPI_DOUBLE, right, SMALL0 + k * B, B, MPI_DOUBLE, win) ==
              MPI_SUCCESS);
    }
    CHECK(MPI_Get(big, LN, MPI_DOUBLE, right, LARGE0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    CHECK(buf_mismatches(dst, NB * B, right, 3) == 0);
    CHECK(buf_mismatches(big, LN, right, 4) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a put, a flush, then a get of the same block sees the put */
    buf_fill(kind, big, LN, rank, 5);
    CHECK(MPI_Put(big, LN, MPI_DOUBLE, right, LARGE0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
    buf_fill(kind, big, LN, rank, 6);
    CHECK(MPI_Get(big, LN, MPI_DOUBLE, right, LARGE0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
    CHECK(buf_mismatches(big, LN, rank, 5) == 0);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    buf_free(kind, src);
    buf_free(kind, big);
    buf_free(kind, dst);
}

/* Request-based calls: rput + waitall + flush; rget completed by test and by waitall. */
static void phase_requests(MPI_Win win, double *mem, int kind)
{
    double *src = buf_alloc(kind, LN), *dst = buf_alloc(kind, LN);
    MPI_Request req[NB + 1];
    int k, flag = 0;

    buf_fill(kind, src, LN, rank, 7);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    for (k = 0; k < NB; ++k) {
        CHECK(MPI_Rput(src + k * B, B, MPI_DOUBLE, right, AUX0 + k * B, B, MPI_DOUBLE, win,
                       &req[k]) == MPI_SUCCESS);
    }
    CHECK(MPI_Rput(src + NB * B, LN - NB * B, MPI_DOUBLE, right, AUX0 + NB * B, LN - NB * B,
                   MPI_DOUBLE, win, &req[NB]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(NB + 1, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
    CHECK(win_mismatches(mem, AUX0, LN, left, 7) == 0);

    /* a large rget completed by testing */
    win_fill(mem, AUX0, LN, 8);
    CHECK(MPI_Rget(dst, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win, &req[0]) == MPI_SUCCESS);
    while (!flag) {
        CHECK(MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    }
    CHECK(buf_mismatches(dst, LN, right, 8) == 0);
    /* small rgets completed by waitall, without a flush */
    buf_fill(kind, dst, NB * B, rank, 0);
    for (k = 0; k < NB; ++k) {
        CHECK(MPI_Rget(dst + k * B, B, MPI_DOUBLE, right, AUX0 + k * B, B, MPI_DOUBLE, win,
                       &req[k]) == MPI_SUCCESS);
    }
    CHECK(MPI_Waitall(NB, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    CHECK(buf_mismatches(dst, NB * B, right, 8) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* an rput whose request is freed at once: the flush completes it */
    buf_fill(kind, src, LN, rank, 9);
    CHECK(MPI_Rput(src, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win, &req[0]) == MPI_SUCCESS);
    CHECK(MPI_Request_free(&req[0]) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, win) == MPI_SUCCESS);
    CHECK(win_mismatches(mem, AUX0, LN, left, 9) == 0);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    buf_free(kind, src);
    buf_free(kind, dst);
}

/* flush_local lets the origin buffer be reused: the first put carries the first contents. */
static void phase_flush_local(MPI_Win win, double *mem, int kind)
{
    double *src = buf_alloc(kind, LN / 2);

    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    buf_fill(kind, src, LN / 2, rank, 10);
    CHECK(MPI_Put(src, LN / 2, MPI_DOUBLE, right, AUX0, LN / 2, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush_local(right, win) == MPI_SUCCESS);
    buf_fill(kind, src, LN / 2, rank, 11);
    CHECK(MPI_Put(src, LN / 2, MPI_DOUBLE, right, AUX0 + LN / 2, LN / 2, MPI_DOUBLE, win) ==
          MPI_SUCCESS);
    CHECK(MPI_Win_flush_local_all(win) == MPI_SUCCESS);
    buf_fill(kind, src, LN / 2, rank, 12);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    CHECK(win_mismatches(mem, AUX0, LN / 2, left, 10) == 0);
    CHECK(win_mismatches(mem, AUX0 + LN / 2, LN / 2, left, 11) == 0);
    buf_free(kind, src);
}

/* Exclusive lock/unlock, fence and PSCW epochs, each closed right after its calls. */
static void phase_epochs(MPI_Win win, double *mem, int kind)
{
    double *src = buf_alloc(kind, LN), *dst = buf_alloc(kind, LN);
    MPI_Group world, to, from;

    /* lock/unlock: put, and get of what the target wrote */
    buf_fill(kind, src, LN, rank, 13);
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(src, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(right, win) == MPI_SUCCESS);
    CHECK(win_mismatches(mem, AUX0, LN, left, 13) == 0);
    win_fill(mem, LARGE0, LN, 14);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Get(dst, LN, MPI_DOUBLE, right, LARGE0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(right, win) == MPI_SUCCESS);
    CHECK(buf_mismatches(dst, LN, right, 14) == 0);

    /* fence: a put, then a get of it in the next epoch */
    buf_fill(kind, src, LN, rank, 15);
    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(src, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, win) == MPI_SUCCESS);
    CHECK(buf_mismatches(mem + AUX0, LN, left, 15) == 0);
    CHECK(MPI_Get(dst, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win) == MPI_SUCCESS);
    CHECK(buf_mismatches(dst, LN, rank, 15) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    /* post/start/complete/wait: the target reads after its wait */
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &right, &to);
    MPI_Group_incl(world, 1, &left, &from);
    buf_fill(kind, src, LN, rank, 16);
    CHECK(MPI_Win_post(from, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Win_start(to, 0, win) == MPI_SUCCESS);
    CHECK(MPI_Put(src, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
    CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
    CHECK(buf_mismatches(mem + AUX0, LN, left, 16) == 0);
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    buf_free(kind, src);
    buf_free(kind, dst);
}

typedef struct thread_arg {
    MPI_Win win;
    double *src, *dst; /* this thread's n elements, in main-thread allocations */
    size_t off, n;     /* its part of the window */
    int bad;           /* calls that failed */
} thread_arg_t;

/* NB puts of the thread's part, a flush, then an rget of it completed by MPI_Wait. */
static void *thread_body(void *p)
{
    thread_arg_t *a = (thread_arg_t *)p;
    size_t piece = a->n / NB;
    MPI_Request req;
    int k;

    for (k = 0; k < NB; ++k) {
        a->bad += MPI_Put(a->src + k * piece, (int)piece, MPI_DOUBLE, right,
                          (MPI_Aint)(a->off + k * piece), (int)piece, MPI_DOUBLE,
                          a->win) != MPI_SUCCESS;
    }
    a->bad += MPI_Win_flush(right, a->win) != MPI_SUCCESS;
    a->bad += MPI_Rget(a->dst, (int)a->n, MPI_DOUBLE, right, (MPI_Aint)a->off, (int)a->n,
                       MPI_DOUBLE, a->win, &req) != MPI_SUCCESS;
    a->bad += MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    return NULL;
}

/* NT threads put into their own parts of the right neighbour's second area at once. */
static void phase_threads(MPI_Win win, double *mem, int kind)
{
    thread_arg_t arg[NT];
    pthread_t tid[NT];
    int t;

    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    for (t = 0; t < NT; ++t) {
        arg[t].win = win;
        arg[t].n = LN / NT;
        arg[t].off = AUX0 + (size_t)t * arg[t].n;
        arg[t].src = buf_alloc(kind, arg[t].n);
        arg[t].dst = buf_alloc(kind, arg[t].n);
        arg[t].bad = 0;
        buf_fill(kind, arg[t].src, arg[t].n, rank, 20 + t);
    }
    for (t = 0; t < NT; ++t) CHECK(pthread_create(&tid[t], NULL, thread_body, &arg[t]) == 0);
    for (t = 0; t < NT; ++t) CHECK(pthread_join(tid[t], NULL) == 0);
    for (t = 0; t < NT; ++t) {
        CHECK(arg[t].bad == 0);
        CHECK(buf_mismatches(arg[t].dst, arg[t].n, rank, 20 + t) == 0);
    }
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    for (t = 0; t < NT; ++t) {
        CHECK(win_mismatches(mem, arg[t].off, arg[t].n, left, 20 + t) == 0);
        buf_free(kind, arg[t].src);
        buf_free(kind, arg[t].dst);
    }
}

int main(int argc, char **argv)
{
    MPI_Info info;
    MPI_Win win;
    double *mem = NULL;
    int kind, provided = MPI_THREAD_SINGLE;

    if (!device_test_init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided,
                                 "test_gpu_window_queue", &rank, &nranks)) {
        return 77;
    }
    right = (rank + 1) % nranks;
    left = (rank + nranks - 1) % nranks;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    CHECK(MPI_Win_allocate((MPI_Aint)WIN_N * sizeof(double), sizeof(double), info,
                           MPI_COMM_WORLD, &mem, &win) == MPI_SUCCESS);
    MPI_Info_free(&info);
    if (mpi_test_failures > 0) {
        return mpi_test_finish("test_gpu_window_queue");
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (rank == 0 && provided != MPI_THREAD_MULTIPLE) {
        printf("test_gpu_window_queue: no MPI_THREAD_MULTIPLE: threads phase skipped\n");
    }
    for (kind = 0; kind < ORIGIN_KINDS; ++kind) {
        int before = mpi_test_failures;

        phase_flush(win, mem, kind);
        phase_requests(win, mem, kind);
        phase_flush_local(win, mem, kind);
        phase_epochs(win, mem, kind);
        if (provided == MPI_THREAD_MULTIPLE) {
            phase_threads(win, mem, kind);
        }
        if (mpi_test_failures > before) {
            fprintf(stderr, "rank %d: failures with %s origin buffers\n", rank, kind_name[kind]);
        }
    }
    /* queued puts right before the free: the free completes them first */
    {
        double *src = buf_alloc(ORIGIN_DEVICE, LN);

        buf_fill(ORIGIN_DEVICE, src, LN, rank, 17);
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
        CHECK(MPI_Put(src, LN, MPI_DOUBLE, right, AUX0, LN, MPI_DOUBLE, win) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
        CHECK(win_mismatches(mem, AUX0, LN, left, 17) == 0);
        buf_free(ORIGIN_DEVICE, src);
    }
    CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
    return mpi_test_finish("test_gpu_window_queue");
}
