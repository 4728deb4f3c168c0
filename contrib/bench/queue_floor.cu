/*
 * queue_floor: what the parts of a device put through the proxy cost on their own, one GPU
 * thread, per iteration of a loop (no MPI, no gpuic): a fetch-and-add on a device-memory word
 * (the reservation), with an acquire load of a second word beside it (the free-slot check),
 * sixteen-byte relaxed stores to pinned host memory (the entry's tagged words), and all of it
 * together with an aligned 8-byte origin load.  The real put (device_bench's
 * split_put_resolved row) adds the warp grouping and entry building around these.
 *
 *   queue_floor [--iters N]
 *
 * Rows: "floor queue_<part> <us per iteration>".
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum part {
    PART_FETCH_ADD,
    PART_FETCH_ADD_ACQUIRE,
    PART_FETCH_ADD_RELAXED,
    PART_STORES_8,
    PART_STORES_2,
    PART_FETCH_ADD_ACQUIRE_STORES_8,
    PART_FETCH_ADD_RELAXED_STORES_8,
    PART_ORIGIN_FETCH_ADD_ACQUIRE_STORES_8,
    PART_ACQUIRE,
    PART_WEAK_STORES_8,
    PART_COUNT
};

static const char *const part_names[PART_COUNT] = {
    "fetch_add", "fetch_add_acquire", "fetch_add_relaxed", "stores_8x16B", "stores_2x16B",
    "fetch_add_acquire_stores_8x16B", "fetch_add_relaxed_stores_8x16B",
    "origin_fetch_add_acquire_stores_8x16B", "acquire_load", "weak_stores_8x16B",
};

__device__ static inline uint64_t now_ns(void)
{
    uint64_t t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static inline unsigned long long ld_acquire(const unsigned long long *p)
{
    unsigned long long v;

    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ static inline unsigned long long ld_relaxed(const unsigned long long *p)
{
    unsigned long long v;

    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ static inline void st_relaxed_sys(uint64_t *p, uint64_t a, uint64_t b)
{
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                 : "memory");
}

__device__ static inline void st_weak(uint64_t *p, uint64_t a, uint64_t b)
{
    asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__global__ void k_part(unsigned long long *counter, unsigned long long *seen, uint64_t *host,
                       const uint64_t *origin, int iters, int part, uint64_t *ns,
                       unsigned long long *sink)
{
    unsigned long long acc = 0;
    uint64_t t0 = now_ns();

    for (int i = 0; i < iters; i++) {
        unsigned long long s = (unsigned long long)i, l = 0;

        switch (part) {
        case PART_FETCH_ADD:
            s = atomicAdd(counter, 1ull);
            break;
        case PART_FETCH_ADD_ACQUIRE:
        case PART_FETCH_ADD_ACQUIRE_STORES_8:
            s = atomicAdd(counter, 1ull);
            l = ld_acquire(seen);
            break;
        case PART_FETCH_ADD_RELAXED:
        case PART_FETCH_ADD_RELAXED_STORES_8:
            s = atomicAdd(counter, 1ull);
            l = ld_relaxed(seen);
            break;
        case PART_ORIGIN_FETCH_ADD_ACQUIRE_STORES_8: {
            uint64_t d;

            memcpy(&d, origin, 8);
            s = atomicAdd(counter, 1ull);
            l = ld_acquire(seen);
            acc += d;
            break;
        }
        case PART_ACQUIRE:
            l = ld_acquire(seen);
            break;
        default:
            break;
        }
        if (s + 1 - l > 1000000000ull) {
            acc += 1; /* both values used, as the free-slot check uses them */
        }
        uint64_t *dst = host + (s & 63) * 32;
        switch (part) {
        case PART_STORES_8:
        case PART_FETCH_ADD_ACQUIRE_STORES_8:
        case PART_FETCH_ADD_RELAXED_STORES_8:
        case PART_ORIGIN_FETCH_ADD_ACQUIRE_STORES_8:
            for (int j = 0; j < 8; j++) st_relaxed_sys(dst + 2 * j, s | j, s);
            break;
        case PART_STORES_2:
            st_relaxed_sys(dst, s, s);
            st_relaxed_sys(dst + 2, s, s);
            break;
        case PART_WEAK_STORES_8:
            for (int j = 0; j < 8; j++) st_weak(dst + 2 * j, s | j, s);
            break;
        default:
            break;
        }
        acc += s;
    }
    ns[part] = now_ns() - t0;
    *sink = acc;
}

int main(int argc, char **argv)
{
    unsigned long long *counter, *seen, *sink;
    uint64_t *host, *host_dev, *ns, *origin;
    int iters = 20000;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    }
    if (cudaMalloc(&counter, 256) != cudaSuccess) {
        fprintf(stderr, "queue_floor: no CUDA device\n");
        return 77;
    }
    cudaMalloc(&seen, 256);
    cudaMalloc(&sink, 64);
    cudaMalloc(&origin, 64);
    cudaMemset(counter, 0, 256);
    cudaMemset(seen, 0, 256);
    cudaHostAlloc((void **)&host, 64 * 32 * 8, cudaHostAllocMapped);
    cudaHostGetDevicePointer((void **)&host_dev, host, 0);
    cudaMallocManaged(&ns, PART_COUNT * sizeof(*ns));
    for (int p = 0; p < PART_COUNT; ++p) {
        k_part<<<1, 1>>>(counter, seen, host_dev, origin, 100, p, ns, sink); /* warm-up */
        cudaDeviceSynchronize();
        k_part<<<1, 1>>>(counter, seen, host_dev, origin, iters, p, ns, sink);
        cudaDeviceSynchronize();
        printf("floor  queue_%-40s %8.3f us\n", part_names[p], ns[p] / 1e3 / iters);
    }
    if (cudaGetLastError() != cudaSuccess) {
        fprintf(stderr, "queue_floor: CUDA error\n");
        return 1;
    }
    cudaFree(counter);
    cudaFree(seen);
    cudaFree(sink);
    cudaFree(origin);
    cudaFree(ns);
    cudaFreeHost(host);
    return 0;
}
