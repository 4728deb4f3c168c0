/*
 * peer_bw_variants: how fast SM store kernels on GPU 0 push data into GPU 1's memory (peer
 * access, NVLink), against cudaMemcpyPeerAsync of the same size in the same run.
 *
 *   nvcc -O3 -arch=sm_90 -o peer_bw_variants peer_bw_variants.cu
 *   ./peer_bw_variants [--bytes N[K|M|G]] [--iters N] [--only NAME[,NAME...]] [--list]
 *
 * src is cudaMalloc'd on GPU 0, dst on GPU 1 (256 MiB by default, a multiple of 16); every
 * kernel runs on GPU 0.  Each variant: dst is cleared, one warm-up launch, then --iters
 * (default 20) launches timed with events on GPU 0's stream; afterwards all of dst is compared
 * on GPU 1 with src's position-dependent pattern.  Output, one line per variant:
 *   variant<TAB>GB/s<TAB>ratio[<TAB>FAIL ...|ERROR ...]
 * GB/s counts 1e9 bytes; ratio is against memcpyPeer_first.  The cudaMemcpyPeerAsync
 * reference is measured first and last (memcpyPeer_last's ratio shows the drift); a final
 * "best" line names the fastest variant that copied right.  Lines starting with '#' are
 * notes.  A NAME ending in '*' selects by prefix.  Exit: 0; 1 when something failed or
 * erred; 2 on bad arguments; 77 without two GPUs with peer access.
 *
 * Variants, and why each is here:
 *  baseline       grid-stride 16-byte units, 1 in flight, 132 x 1024: today's put kernel.
 *  blockslice     each block a contiguous slice, block-stride inside it, then one system fence:
 *                 the shape of a block put (MPIX_Put_device_block) in device_bench's put_bw.
 *  uU_tT          U = 1, 2, 4, 8 units in flight per thread (all loads, then all stores), T
 *                 threads per block, grid = resident blocks per SM x SMs: stores do not wait,
 *                 but the local loads feeding them do; more of them in flight may keep more
 *                 stores queued to the link.
 *  uU_tT_gG       the same at G = 132, 264, 528 blocks: whether resident warps or waves matter.
 *  warpchunk_*    each warp owns a contiguous chunk (512-byte aligned) and walks it 512 bytes
 *                 a step, 4 steps in flight: a warp's stores fill whole lines in address order,
 *                 which may coalesce better in the NVLink packets than a grid-wide stride.
 *  hint_*         cache operators on u4_t1024 (inline PTX): st.cs / st.wt /
 *                 st.L1::no_allocate stores, ld.nc.L1::no_allocate (also with an L2 256-byte
 *                 prefetch) and ld.cs loads: data streamed once should not evict or allocate.
 *  tma_SxK_bB     Hopper bulk copies (cp.async.bulk): one thread per block moves the data
 *                 global -> shared (mbarrier complete_tx) -> peer global (bulk_group) through
 *                 S stages of K KiB, B blocks per SM: the SM's bulk-copy unit (TMA), not its
 *                 load/store pipes, feeds the link with large transfers.  They run last: if
 *                 bulk stores to peer memory fault, the error is sticky and ends the context
 *                 (later lines say so); a stage not filled within 2 s traps instead of hanging.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LD_PLAIN, LD_NC_NA, LD_NC_NA_256, LD_CS };
enum { ST_PLAIN, ST_CS, ST_WT, ST_NA };

#define LD_ASM(op) asm(op " {%0, %1, %2, %3}, [%4];" \
                        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p))
#define ST_ASM(op) asm volatile(op " [%0], {%1, %2, %3, %4};" \
                                :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory")

template <int LD> __device__ __forceinline__ uint4 ld16(const uint4 *p)
{
    uint4 v;
    if (LD == LD_NC_NA) LD_ASM("ld.global.nc.L1::no_allocate.v4.u32");
    else if (LD == LD_NC_NA_256) LD_ASM("ld.global.nc.L1::no_allocate.L2::256B.v4.u32");
    else if (LD == LD_CS) LD_ASM("ld.global.cs.v4.u32");
    else v = *p;
    return v;
}

template <int ST> __device__ __forceinline__ void st16(uint4 *p, uint4 v)
{
    if (ST == ST_CS) ST_ASM("st.global.cs.v4.u32");
    else if (ST == ST_WT) ST_ASM("st.global.wt.v4.u32");
    else if (ST == ST_NA) ST_ASM("st.global.L1::no_allocate.v4.u32");
    else *p = v;
}

/* n 16-byte units, grid-wide stride, U units in flight per thread.  No __restrict__ on these
 * copies: with it the loads become ld.global.nc, which ptxas may sink next to their stores
 * (u8 then used 32 registers, not 56: fewer loads in flight than written). */
template <int U, int LD, int ST>
__global__ void __launch_bounds__(1024) k_stride(uint4 *d, const uint4 *s, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = ld16<LD>(s + i + k * stride);
#pragma unroll
        for (int k = 0; k < U; ++k) st16<ST>(d + i + k * stride, v[k]);
    }
    for (; i < n; i += stride) st16<ST>(d + i, ld16<LD>(s + i));
}

/* Each block its contiguous slice, the block's threads striding through it, then the fence a
 * flush to a peer makes. */
__global__ void __launch_bounds__(1024) k_blockslice(uint4 *d, const uint4 *s, size_t n)
{
    size_t chunk = (n + gridDim.x - 1) / gridDim.x;
    size_t beg = chunk * blockIdx.x, end = beg + chunk < n ? beg + chunk : n;

    for (size_t i = beg + threadIdx.x; i < end; i += blockDim.x) d[i] = s[i];
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Each warp a contiguous chunk of whole 512-byte steps; U steps in flight per lane. */
template <int U>
__global__ void __launch_bounds__(1024) k_warpchunk(uint4 *d, const uint4 *s, size_t n)
{
    size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    size_t chunk = ((n + warps - 1) / warps + 31) & ~(size_t)31;
    size_t beg = w * chunk, end = beg + chunk < n ? beg + chunk : n;
    size_t i = beg + (threadIdx.x & 31);

    for (; i + (U - 1) * 32 < end; i += U * 32) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = s[i + k * 32];
#pragma unroll
        for (int k = 0; k < U; ++k) d[i + k * 32] = v[k];
    }
    for (; i < end; i += 32) d[i] = s[i];
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Waits for the phase of @p parity; a stage not filled within 2 s traps (a launch failure
 * then, rather than a hang). */
__device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity)
{
    uint64_t t0 = 0, t;
    uint32_t done;

    for (;;) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
        if (done) return;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t0 == 0) {
            t0 = t;
        } else if (t - t0 > 2000000000ull) {
            __trap();
        }
    }
}

/* global -> shared stage, completing @p len bytes of the stage's barrier transaction. */
__device__ __forceinline__ void tma_load(char *stage, uint64_t *bar, const char *src,
                                         uint32_t len)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(smem_addr(bar)), "r"(len) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(stage)), "l"(__cvta_generic_to_global(src)), "r"(len),
                    "r"(smem_addr(bar))
                 : "memory");
}
#endif

/* One thread per block: chunk j (of stage_bytes, blocks taking every gridDim.x-th one) goes
 * through stage j % S.  Loads run up to S chunks ahead; the stage of chunk j-1 is refilled
 * once its bulk store has read it (wait_group.read 1 leaves chunk j's store in flight). */
template <int S>
__global__ void __launch_bounds__(32) k_tma(char *d, const char *s, size_t bytes,
                                            uint32_t stage_bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) char stage[];
    __shared__ __align__(8) uint64_t bar[S];
    size_t nchunks = (bytes + stage_bytes - 1) / stage_bytes;
    size_t m = nchunks > blockIdx.x ? (nchunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;

    if (threadIdx.x != 0) return;
    for (int k = 0; k < S; ++k) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&bar[k]))
                     : "memory");
    }
    /* the initialised barriers visible to the async proxy (the bulk copies' complete_tx) */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");

#define CHUNK_OFF(j) ((blockIdx.x + (size_t)(j) * gridDim.x) * stage_bytes)
#define CHUNK_LEN(j) ((uint32_t)(bytes - CHUNK_OFF(j) < stage_bytes ? bytes - CHUNK_OFF(j) \
                                                                     : stage_bytes))
    for (size_t j = 0; j < m && j < (size_t)S; ++j) {
        tma_load(stage + j * stage_bytes, &bar[j], s + CHUNK_OFF(j), CHUNK_LEN(j));
    }
    for (size_t j = 0; j < m; ++j) {
        int st = (int)(j % S);
        char *buf = stage + (size_t)st * stage_bytes;

        bar_wait(&bar[st], (uint32_t)((j / S) & 1));
        /* orders this thread's view of the stage (acquired by the wait) before the bulk
         * store's async-proxy read of it */
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(__cvta_generic_to_global(d + CHUNK_OFF(j))), "r"(smem_addr(buf)),
                        "r"(CHUNK_LEN(j))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (j >= 1 && j - 1 + S < m) {
            size_t r = j - 1 + S; /* goes where chunk j-1 was */
            int rs = (int)((j - 1) % S);

            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            tma_load(stage + (size_t)rs * stage_bytes, &bar[rs], s + CHUNK_OFF(r),
                     CHUNK_LEN(r));
        }
    }
    /* all bulk stores complete (not only read) before the block ends */
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#undef CHUNK_OFF
#undef CHUNK_LEN
#endif
}

__host__ __device__ static inline uint64_t pattern(size_t i)
{
    return (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
}

#define FOR_GRID(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

__global__ void k_fill(uint64_t *p, size_t nw)
{
    FOR_GRID(i, nw) p[i] = pattern(i);
}

/* Runs on GPU 1: counts the words of dst that differ from the pattern, and the first one. */
__global__ void k_check(const uint64_t *p, size_t nw, unsigned long long *res)
{
    FOR_GRID(i, nw) {
        if (p[i] != pattern(i)) {
            atomicAdd(&res[0], 1ull);
            atomicMin(&res[1], (unsigned long long)i);
        }
    }
}

typedef void (*plain_fn)(uint4 *, const uint4 *, size_t);
typedef void (*tma_fn)(char *, const char *, size_t, uint32_t);

struct variant {
    const char *name;
    plain_fn plain;
    tma_fn tma;
    int threads, blocks; /* blocks 0: resident blocks per SM x SMs; TMA: blocks per SM */
    int stages;          /* TMA: stages of stage_kib KiB */
    uint32_t stage_kib;
};

#define STRIDE(u, ld, st) k_stride<u, ld, st>
static const variant variants[] = {
    {"baseline", STRIDE(1, LD_PLAIN, ST_PLAIN), NULL, 1024, 132, 0, 0},
    {"blockslice", k_blockslice, NULL, 1024, 132, 0, 0},
    {"u1_t1024", STRIDE(1, LD_PLAIN, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"u2_t512", STRIDE(2, LD_PLAIN, ST_PLAIN), NULL, 512, 0, 0, 0},
    {"u2_t1024", STRIDE(2, LD_PLAIN, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"u4_t512", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 512, 0, 0, 0},
    {"u4_t1024", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"u8_t512", STRIDE(8, LD_PLAIN, ST_PLAIN), NULL, 512, 0, 0, 0},
    {"u8_t1024", STRIDE(8, LD_PLAIN, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"u4_t512_g132", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 512, 132, 0, 0},
    {"u4_t512_g264", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 512, 264, 0, 0},
    {"u4_t512_g528", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 512, 528, 0, 0},
    {"u4_t1024_g132", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 1024, 132, 0, 0},
    {"u4_t1024_g264", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 1024, 264, 0, 0},
    {"u4_t1024_g528", STRIDE(4, LD_PLAIN, ST_PLAIN), NULL, 1024, 528, 0, 0},
    {"warpchunk_u4_t512", k_warpchunk<4>, NULL, 512, 0, 0, 0},
    {"warpchunk_u4_t1024", k_warpchunk<4>, NULL, 1024, 0, 0, 0},
    {"hint_st_cs", STRIDE(4, LD_PLAIN, ST_CS), NULL, 1024, 0, 0, 0},
    {"hint_st_wt", STRIDE(4, LD_PLAIN, ST_WT), NULL, 1024, 0, 0, 0},
    {"hint_st_na", STRIDE(4, LD_PLAIN, ST_NA), NULL, 1024, 0, 0, 0},
    {"hint_ld_ncna", STRIDE(4, LD_NC_NA, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"hint_ld_ncna256", STRIDE(4, LD_NC_NA_256, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"hint_ld_cs", STRIDE(4, LD_CS, ST_PLAIN), NULL, 1024, 0, 0, 0},
    {"hint_ld_ncna_st_cs", STRIDE(4, LD_NC_NA, ST_CS), NULL, 1024, 0, 0, 0},
    /* last: a fault here is sticky */
    {"tma_4x32k_b1", NULL, k_tma<4>, 32, 1, 4, 32},
    {"tma_6x32k_b1", NULL, k_tma<6>, 32, 1, 6, 32},
    {"tma_2x32k_b2", NULL, k_tma<2>, 32, 2, 2, 32},
    {"tma_4x16k_b2", NULL, k_tma<4>, 32, 2, 4, 16},
    {"tma_4x8k_b4", NULL, k_tma<4>, 32, 4, 4, 8},
};
#define NVARIANTS (int)(sizeof(variants) / sizeof(variants[0]))

static char *src, *dst;
static size_t nbytes = 256ull << 20;
static int iters = 20, sms, cc_major;
static cudaStream_t stream;
static cudaEvent_t ev0, ev1;
static unsigned long long *d_res; /* on GPU 1 */
static bool ctx_lost;

/* Clears dst (on GPU 1) and leaves GPU 0 current. */
static cudaError_t clear_dst(void)
{
    cudaError_t e;

    cudaSetDevice(1);
    e = cudaMemset(dst, 0, nbytes);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaSetDevice(0);
    return e;
}

/* Words of dst that differ from src's pattern (res[1]: the first), checked on GPU 1. */
static cudaError_t check_dst(unsigned long long res[2])
{
    cudaError_t e;

    res[0] = 0;
    res[1] = ~0ull;
    cudaSetDevice(1);
    cudaMemcpy(d_res, res, 2 * sizeof(*res), cudaMemcpyHostToDevice);
    k_check<<<1024, 256>>>((const uint64_t *)dst, nbytes / 8, d_res);
    e = cudaMemcpy(res, d_res, 2 * sizeof(*res), cudaMemcpyDeviceToHost);
    cudaSetDevice(0);
    return e;
}

/* Launch of variant v (NULL: the cudaMemcpyPeerAsync reference). */
static cudaError_t launch(const variant *v, int grid)
{
    if (v == NULL) return cudaMemcpyPeerAsync(dst, 1, src, 0, nbytes, stream);
    if (v->plain) {
        v->plain<<<grid, v->threads, 0, stream>>>((uint4 *)dst, (const uint4 *)src, nbytes / 16);
    } else {
        v->tma<<<grid, v->threads, (size_t)v->stages * v->stage_kib * 1024, stream>>>(
            dst, src, nbytes, v->stage_kib * 1024);
    }
    return cudaGetLastError();
}

/* Grid of variant v (0 when it cannot run), after setting what its launch needs. */
static int grid_of(const variant *v, cudaError_t *e)
{
    const void *fn = v->plain ? (const void *)v->plain : (const void *)v->tma;
    int smem = v->plain ? 0 : v->stages * (int)v->stage_kib * 1024, per_sm = 0;

    *e = v->plain || cc_major >= 9 ? cudaSuccess : cudaErrorNotSupported; /* bulk copies */
    if (smem && *e == cudaSuccess) {
        *e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    }
    if (*e == cudaSuccess) {
        *e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, v->threads, smem);
    }
    if (*e != cudaSuccess) return 0;
    if (per_sm == 0) {
        *e = cudaErrorInvalidConfiguration;
        return 0;
    }
    if (v->plain) return v->blocks ? v->blocks : per_sm * sms;
    if (per_sm < v->blocks) printf("# %s: only %d blocks per SM fit\n", v->name, per_sm);
    return v->blocks * sms;
}

/* Times variant v (NULL: the reference); GB/s, or a negative value after an error.  @p ref:
 * the reference's GB/s (0 while measuring it first, negative when that failed). */
static double measure(const variant *v, const char *name, double ref, bool *failed)
{
    cudaError_t e = cudaSuccess;
    unsigned long long res[2];
    int grid = 0;
    float ms = 0;

    *failed = true;
    if (ctx_lost) {
        printf("%s\t-\t-\tERROR: not run, the context was lost earlier\n", name);
        return -1;
    }
    if (v) grid = grid_of(v, &e);
    if (e == cudaSuccess) e = clear_dst();
    if (e == cudaSuccess) e = launch(v, grid); /* warm-up */
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e == cudaSuccess) e = cudaEventRecord(ev0, stream);
    for (int i = 0; i < iters && e == cudaSuccess; ++i) e = launch(v, grid);
    if (e == cudaSuccess) e = cudaEventRecord(ev1, stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(ev1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, ev0, ev1);
    if (e == cudaSuccess) e = check_dst(res);
    if (e != cudaSuccess) {
        printf("%s\t-\t-\tERROR: %s\n", name, cudaGetErrorString(e));
        cudaGetLastError(); /* an error that is not sticky is gone after this */
        if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) {
            ctx_lost = true;
        }
        return -1;
    }
    double gbs = (double)nbytes * iters / (ms * 1e-3) / 1e9;
    printf("%s\t%.1f\t", name, gbs);
    if (ref > 0) {
        printf("%.3f", gbs / ref);
    } else {
        printf("%s", ref == 0 && v == NULL ? "1.000" : "-");
    }
    if (res[0]) {
        printf("\tFAIL: %llu of %zu words wrong, the first at byte %llu", res[0], nbytes / 8,
               res[1] * 8);
    } else {
        *failed = false;
    }
    printf("\n");
    fflush(stdout);
    return gbs;
}

static bool selected(const char *only, const char *name)
{
    size_t nl = strlen(name);

    if (only == NULL) return true;
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0 && p[len - 1] == '*') {
            if (len - 1 <= nl && strncmp(p, name, len - 1) == 0) return true;
        } else if (len == nl && strncmp(p, name, len) == 0) {
            return true;
        }
        p += len + (p[len] == ',');
    }
    return false;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int ndev = 0, can = 0, rc = 0, best = -1, nsel = 0;
    double ref, best_gbs = 0;
    bool failed;
    cudaError_t e;

    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--list") == 0) {
            for (int k = 0; k < NVARIANTS; ++k) printf("%s\n", variants[k].name);
            return 0;
        } else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
            char *end;
            nbytes = strtoull(argv[++i], &end, 0);
            int u = *end | 0x20; /* lower case */
            nbytes <<= u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : 0;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--bytes N[K|M|G]] [--iters N] [--only NAME[,NAME...]]"
                            " [--list]\n", argv[0]);
            return 2;
        }
    }
    for (int k = 0; k < NVARIANTS; ++k) nsel += selected(only, variants[k].name);
    if (nbytes == 0 || nbytes % 16 != 0 || iters < 1 || nsel == 0) {
        fprintf(stderr, "peer_bw_variants: --bytes must be a positive multiple of 16, --iters "
                        "positive, --only a name from --list\n");
        return 2;
    }

    e = cudaGetDeviceCount(&ndev);
    if (e == cudaSuccess && ndev >= 2) e = cudaDeviceCanAccessPeer(&can, 0, 1);
    if (e != cudaSuccess || ndev < 2 || !can) {
        fprintf(stderr, "peer_bw_variants: needs two GPUs with peer access (GPU 0 -> GPU 1): "
                        "%s\n", e != cudaSuccess ? cudaGetErrorString(e)
                                : ndev < 2 ? "fewer than two GPUs" : "no peer access");
        return 77;
    }

    cudaDeviceProp p0, p1;
    cudaGetDeviceProperties(&p0, 0);
    cudaGetDeviceProperties(&p1, 1);
    sms = p0.multiProcessorCount;
    cc_major = p0.major;
    cudaSetDevice(1);
    e = cudaMalloc(&dst, nbytes);
    if (e == cudaSuccess) e = cudaMalloc(&d_res, 2 * sizeof(*d_res));
    cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaDeviceEnablePeerAccess(1, 0);
    if (e == cudaSuccess) e = cudaMalloc(&src, nbytes);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreate(&ev0);
    if (e == cudaSuccess) e = cudaEventCreate(&ev1);
    if (e == cudaSuccess) {
        k_fill<<<1024, 256>>>((uint64_t *)src, nbytes / 8);
        e = cudaDeviceSynchronize();
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "peer_bw_variants: setup: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("# GPU 0 %s (%d SMs) -> GPU 1 %s, %zu bytes, %d iterations\n", p0.name, sms,
           p1.name, nbytes, iters);

    ref = measure(NULL, "memcpyPeer_first", 0, &failed);
    rc |= failed;
    for (int k = 0; k < NVARIANTS; ++k) {
        if (!selected(only, variants[k].name)) continue;
        double gbs = measure(&variants[k], variants[k].name, ref, &failed);
        rc |= failed;
        if (!failed && gbs > best_gbs) {
            best_gbs = gbs;
            best = k;
        }
    }
    measure(NULL, "memcpyPeer_last", ref, &failed);
    rc |= failed;
    if (best >= 0) {
        printf("best\t%s\t%.1f\t", variants[best].name, best_gbs);
        ref > 0 ? printf("%.3f\n", best_gbs / ref) : printf("-\n");
    } else {
        printf("best\t-\t-\t-\n"); /* nothing copied right */
    }
    return rc ? 1 : 0;
}
