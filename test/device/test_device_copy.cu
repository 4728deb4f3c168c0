/*
 * Every byte of device puts and gets of any size and alignment (2 or more ranks; the P2P
 * path's copy, or the proxy's where the target is not mapped):
 *  1. small puts: sizes 1..300, origin offsets 0..17, target offsets 0..17, each made by one
 *     thread, by a warp and by a block, into the right neighbour's window; the neighbour
 *     checks each slot byte by byte, and that the bytes around the put kept their guard value;
 *  2. large block and warp puts (64 KiB + 13 up to 1 MiB + 13, skewed offsets), which reach
 *     the copy's unrolled loop and its remainder, checked the same way;
 *  3. block gets of the small sizes and offsets, and a 1 MiB + 13 one, from the right
 *     neighbour into guarded local slots.
 * Each case has its own slot, so one kernel launch makes all cases of a kind at once.
 * Where the right neighbour is on the proxy path (another emulated node, a forced proxy), each
 * small case takes one entry and one flush through UCX: a fixed sample of one case in
 * PROXY_EVERY (every size, every offset pair and every variant still occur) runs there, and the
 * slots of the others must keep their guard bytes.  GPUIC_TEST_COPY_EVERY=1 runs all.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/mpi_test.h"
#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define GUARD 0xee
#define MAX_OFF 18       /* origin and target offsets 0..17 */
#define SMALL_MAX 300    /* small sizes 1..300 */
#define SLOT 352         /* a small case's slot: 16 guard bytes, offset, data, guard after */
#define SLOT_LEAD 16
#define NVARIANT 3       /* thread, warp, block */
#define NSMALL (SMALL_MAX * MAX_OFF * MAX_OFF)
#define NLARGE 8
#define LARGE_SLOT ((1u << 20) + 4096)
#define SRC_BYTES ((1u << 20) + 4096)
#define PROXY_EVERY 16

static int rank, nranks;

/* the byte a case's origin holds at index i: differs between cases, origins and positions */
__host__ __device__ static inline unsigned char case_byte(int writer, int c, size_t i)
{
    uint32_t x = (uint32_t)writer * 2654435761u ^ (uint32_t)c * 40503u ^ (uint32_t)i * 2246822519u;
    x ^= x >> 15;
    return (unsigned char)(x * 97u >> 24);
}

struct small_case {
    int size, src_off, dst_off;
};

/* Whether small case @p c (of variant @p v) runs when one in @p every does: a hash of the
 * case spreads the sample over sizes, offsets and variants. */
__host__ __device__ static inline bool case_runs(int c, int v, int every)
{
    uint32_t x = ((uint32_t)c * NVARIANT + (uint32_t)v) * 2654435761u;
    return every <= 1 || (x >> 16) % (uint32_t)every == 0;
}

__host__ __device__ static inline small_case small_of(int c)
{
    small_case k;
    k.size = c / (MAX_OFF * MAX_OFF) + 1;
    k.src_off = c / MAX_OFF % MAX_OFF;
    k.dst_off = c % MAX_OFF;
    return k;
}

/* large cases: sizes and offsets that reach the unrolled loop, its remainder and both ends */
__host__ __device__ static inline small_case large_of(int c)
{
    const int sizes[NLARGE] = {65536 + 13, (1 << 20) + 13, 1 << 20, 100000 + 7,
                               (1 << 20) - 3, 262144 + 1, 65536, 300000};
    const int soff[NLARGE] = {0, 1, 0, 3, 8, 4, 2, 15};
    const int doff[NLARGE] = {0, 0, 1, 3, 0, 12, 6, 1};
    small_case k = {sizes[c], soff[c], doff[c]};
    return k;
}

/* Fills each case's origin (slot c of src) with its bytes. */
__global__ void k_fill(unsigned char *src, int me, int ncase, size_t slot, bool large)
{
    for (int c = blockIdx.x; c < ncase; c += gridDim.x) {
        small_case k = large ? large_of(c) : small_of(c);
        for (int i = threadIdx.x; i < k.size; i += blockDim.x) {
            src[c * slot + SLOT_LEAD + k.src_off + i] = case_byte(me, c, i);
        }
    }
}

/* 1. one block per (case, variant): variant 0 is thread 0 alone, 1 is warp 0, 2 the block */
__global__ void k_put_small(MPIX_Win_device win, int right, const unsigned char *src, int every,
                            int *rc)
{
    int c = blockIdx.x / NVARIANT, v = blockIdx.x % NVARIANT, r = MPI_SUCCESS;
    small_case k = small_of(c);

    if (!case_runs(c, v, every)) {
        return;
    }
    const unsigned char *o = src + (size_t)c * SLOT + SLOT_LEAD + k.src_off;
    MPI_Aint disp = (MPI_Aint)blockIdx.x * SLOT + SLOT_LEAD + k.dst_off;

    if (v == 0 && threadIdx.x == 0) {
        r = MPIX_Put_device(o, k.size, right, disp, win);
    } else if (v == 1 && threadIdx.x < 32) {
        r = MPIX_Put_device_warp(o, k.size, right, disp, win);
    } else if (v == 2) {
        r = MPIX_Put_device_block(o, k.size, right, disp, win);
    }
    if (r != MPI_SUCCESS) atomicExch(rc, r);
    if (threadIdx.x == 0 && MPIX_Win_flush_device(right, win) != MPI_SUCCESS) atomicExch(rc, -1);
}

/* 2. one block per large case: even cases by the block, odd ones by warp 0 */
__global__ void k_put_large(MPIX_Win_device win, int right, const unsigned char *src,
                            MPI_Aint base, int *rc)
{
    int c = blockIdx.x, r = MPI_SUCCESS;
    small_case k = large_of(c);
    const unsigned char *o = src + (size_t)c * LARGE_SLOT + SLOT_LEAD + k.src_off;
    MPI_Aint disp = base + (MPI_Aint)c * LARGE_SLOT + SLOT_LEAD + k.dst_off;

    if (c % 2 == 0) {
        r = MPIX_Put_device_block(o, k.size, right, disp, win);
    } else if (threadIdx.x < 32) {
        r = MPIX_Put_device_warp(o, k.size, right, disp, win);
    }
    if (r != MPI_SUCCESS) atomicExch(rc, r);
    if (threadIdx.x == 0 && MPIX_Win_flush_device(right, win) != MPI_SUCCESS) atomicExch(rc, -1);
}

/* 3. block gets of the small cases, from the right neighbour's origin-filled window */
__global__ void k_get_small(MPIX_Win_device win, int right, unsigned char *dst, int every,
                            int *rc)
{
    int c = blockIdx.x;
    small_case k = small_of(c);
    int r;

    if (!case_runs(c, 0, every)) {
        return;
    }
    r = MPIX_Get_device_block(dst + (size_t)c * SLOT + SLOT_LEAD + k.dst_off, k.size, right,
                                  (MPI_Aint)c * SLOT + SLOT_LEAD + k.src_off, win);

    if (r != MPI_SUCCESS) atomicExch(rc, r);
}

__global__ void k_get_large(MPIX_Win_device win, int right, unsigned char *dst, MPI_Aint base,
                            int *rc)
{
    small_case k = large_of(1);
    int r = MPIX_Get_device_block(dst + SLOT_LEAD + k.dst_off, k.size, right,
                                  base + LARGE_SLOT + SLOT_LEAD + k.src_off, win);

    if (r != MPI_SUCCESS) atomicExch(rc, r);
}

/* Checks slot @p s of @p buf: the case's bytes (from @p writer's case @p c) at
 * [lead + off, + size), the guard everywhere else in the slot.  Returns the wrong bytes. */
static long check_slot(const unsigned char *buf, size_t slot, size_t s, int writer, int c,
                       int off, int size, const char *what)
{
    const unsigned char *p = buf + s * slot;
    long bad = 0;

    for (size_t i = 0; i < slot; ++i) {
        long j = (long)i - SLOT_LEAD - off;
        unsigned char want = j >= 0 && j < size ? case_byte(writer, c, (size_t)j) : GUARD;
        if (p[i] != want) {
            if (bad == 0) {
                fprintf(stderr, "[rank %d] %s case %d (size %d, offset %d): byte %ld is %#x, "
                        "expected %#x%s\n", rank, what, c, size, off, j, p[i], want,
                        j < 0 || j >= size ? " (outside the put)" : "");
            }
            bad++;
        }
    }
    return bad;
}

static void run(MPI_Win win, unsigned char *base, size_t win_bytes, int *d_rc)
{
    MPIX_Win_device h = {};
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks, path = -1, h_rc = 0;
    MPI_Aint large_base = (MPI_Aint)NSMALL * NVARIANT * SLOT;
    size_t src_bytes = (size_t)NSMALL * SLOT > (size_t)NLARGE * LARGE_SLOT
                           ? (size_t)NSMALL * SLOT : (size_t)NLARGE * LARGE_SLOT;
    unsigned char *d_src, *host;
    const char *env = getenv("GPUIC_TEST_COPY_EVERY");
    int every = 1;
    long bad;

    CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
    CHECK(MPIX_Win_gpuic_device_path(win, right, &path) == MPI_SUCCESS);
    if (rank == 0) {
        printf("# device path to the right neighbour: %s\n",
               path == MPIX_GPUIC_DEVICE_PATH_P2P ? "P2P" : "proxy");
    }
    if (env != NULL) {
        every = atoi(env);
    } else if (path != MPIX_GPUIC_DEVICE_PATH_P2P) {
        every = PROXY_EVERY;
    }
    /* every rank samples alike: a rank checks what its left neighbour put */
    MPI_Allreduce(MPI_IN_PLACE, &every, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && every > 1) {
        printf("# one small case in %d\n", every);
    }
    host = (unsigned char *)malloc(win_bytes > src_bytes ? win_bytes : src_bytes);
    CUDA_CHECK(cudaMalloc(&d_src, src_bytes));
    CUDA_CHECK(cudaMemset(base, GUARD, win_bytes));
    CUDA_CHECK(cudaMemset(d_src, GUARD, src_bytes));
    CUDA_CHECK(cudaMemset(d_rc, 0, sizeof(int)));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* 1 and 2: puts into the right neighbour */
    k_fill<<<1024, 128>>>(d_src, rank, NSMALL, SLOT, false);
    k_put_small<<<NSMALL * NVARIANT, 64>>>(h, right, d_src, every, d_rc);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemset(d_src, GUARD, src_bytes));
    k_fill<<<NLARGE, 1024>>>(d_src, rank, NLARGE, LARGE_SLOT, true);
    k_put_large<<<NLARGE, 1024>>>(h, right, d_src, large_base, d_rc);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(&h_rc, d_rc, sizeof(int), cudaMemcpyDefault));
    CHECK(h_rc == MPI_SUCCESS);
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);

    CUDA_CHECK(cudaMemcpy(host, base, win_bytes, cudaMemcpyDefault));
    bad = 0;
    for (int s = 0; s < NSMALL * NVARIANT; ++s) {
        small_case k = small_of(s / NVARIANT);
        static const char *names[NVARIANT] = {"thread put", "warp put", "block put"};
        bool ran = case_runs(s / NVARIANT, s % NVARIANT, every);

        bad += check_slot(host, SLOT, s, left, s / NVARIANT, k.dst_off, ran ? k.size : 0,
                          names[s % NVARIANT]);
    }
    for (int c = 0; c < NLARGE; ++c) {
        small_case k = large_of(c);
        bad += check_slot(host + large_base, LARGE_SLOT, c, left, c, k.dst_off, k.size,
                          c % 2 == 0 ? "large block put" : "large warp put");
    }
    if (bad) fprintf(stderr, "[rank %d] puts: %ld wrong bytes\n", rank, bad);
    CHECK(bad == 0);

    /* 3: gets.  Every window takes its own origins' bytes at the origin offsets, so a get of
     * case c from the right neighbour finds that neighbour's case c. */
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemset(base, GUARD, win_bytes));
    k_fill<<<1024, 128>>>(base, rank, NSMALL, SLOT, false);
    k_fill<<<NLARGE, 1024>>>(base + large_base, rank, NLARGE, LARGE_SLOT, true);
    CUDA_CHECK(cudaMemset(d_src, GUARD, src_bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    k_get_small<<<NSMALL, 96>>>(h, right, d_src, every, d_rc);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host, d_src, (size_t)NSMALL * SLOT, cudaMemcpyDefault));
    bad = 0;
    for (int c = 0; c < NSMALL; ++c) {
        small_case k = small_of(c);
        bad += check_slot(host, SLOT, c, right, c, k.dst_off,
                          case_runs(c, 0, every) ? k.size : 0, "block get");
    }
    CUDA_CHECK(cudaMemset(d_src, GUARD, LARGE_SLOT));
    k_get_large<<<1, 1024>>>(h, right, d_src, large_base, d_rc);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host, d_src, LARGE_SLOT, cudaMemcpyDefault));
    {
        small_case k = large_of(1);
        bad += check_slot(host, LARGE_SLOT, 0, right, 1, k.dst_off, k.size, "large block get");
    }
    CUDA_CHECK(cudaMemcpy(&h_rc, d_rc, sizeof(int), cudaMemcpyDefault));
    CHECK(h_rc == MPI_SUCCESS);
    if (bad) fprintf(stderr, "[rank %d] gets: %ld wrong bytes\n", rank, bad);
    CHECK(bad == 0);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaFree(d_src);
    free(host);
}

int main(int argc, char **argv)
{
    int *d_rc = NULL;
    size_t win_bytes = (size_t)NSMALL * NVARIANT * SLOT + (size_t)NLARGE * LARGE_SLOT;
    unsigned char *base = NULL;
    MPI_Win win;
    MPI_Info info;

    if (!device_test_init(&argc, &argv, "test_device_copy", &rank, &nranks)) {
        return 77;
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    /* with peers on other emulated nodes, a UCX that cannot register device memory refuses
     * the window on every rank (documented): a skip */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int rc = MPI_Win_allocate((MPI_Aint)win_bytes, 1, info, MPI_COMM_WORLD, &base, &win);

        MPI_Info_free(&info);
        if (rc != MPI_SUCCESS) {
            return device_test_window_refused(rc, rank, "test_device_copy");
        }
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(mpi_test_is_gpuic(win));
    CUDA_CHECK(cudaMalloc(&d_rc, sizeof(int)));
    run(win, base, win_bytes, d_rc);
    cudaFree(d_rc);
    MPI_Win_free(&win);
    return mpi_test_finish("test_device_copy");
}
