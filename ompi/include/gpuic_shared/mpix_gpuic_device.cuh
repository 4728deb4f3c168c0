/*
 * mpix_gpuic_device.cuh - MPI RMA from CUDA kernels on gpuic windows (header-only).
 *
 * Host code gets a window's device handle with MPIX_Win_get_device_handle() (mpix_gpuic.h)
 * and passes it to kernels by value, as an argument (its checks then read no memory).  Device
 * code then puts, gets, signals, updates atomically and flushes, with MPI semantics:
 *
 *  - Every call returns MPI_SUCCESS or an MPI error class, and never touches memory outside
 *    the target window: MPI_ERR_WIN (not a valid handle), MPI_ERR_RANK (no such target),
 *    MPI_ERR_RMA_RANGE (the access leaves the target window), MPI_ERR_ARG (a misaligned
 *    atomic or signal word, an unknown op or type), MPI_ERR_UNSUPPORTED_OPERATION (the target
 *    is not reachable from device code).  The error is also recorded in the window (the first
 *    one, or one of several failing at the same moment), and the host's next synchronization
 *    call on it (flush, unlock, fence, complete, wait) returns it.
 *  - Puts complete at the target at the next flush (MPIX_Win_flush_device and friends), gets
 *    and fetching atomics before they return.
 *  - Variants: the plain call is made by one thread; _warp is made by all 32 lanes of a warp
 *    with the same arguments; _block by all threads of a block with the same arguments (it
 *    synchronises the block).  Each lane or thread gets the same status.
 *
 * Paths: a target whose window is device memory on this node is reached through a CUDA IPC
 * mapping, with loads, stores and atomics (MPIX_GPUIC_DEVICE_PATH_P2P).  Atomics are atomic
 * with every device call from any process of the window: device scope when all of them share
 * one GPU, system scope otherwise.  Host MPI accumulates on a GPU window run as device
 * atomics too and are atomic with them on the same elements, but for the element types that
 * take the target's accumulate lock (complex, pair, long double, misaligned elements: keep
 * those in separate epochs; MPIX_Accumulate_device(3)).  Other targets (host-memory windows)
 * take the proxy path (MPIX_GPUIC_DEVICE_PATH_PROXY, mpix_gpuic_device_proxy.cuh): the call
 * posts work-queue entries that the process's proxy thread executes with UCX; its atomics are
 * UCX atomics, atomic with every other proxy-path device call on the window (host accumulates
 * on the same elements belong in other epochs), and host synchronization calls
 * complete what device code posted.  The _warp and _block variants
 * let one lane or thread post the whole call there.  MPIX_Win_gpuic_device_path() tells the
 * path of each target.
 *
 * Device calls may be mixed with host MPI calls on the same window across epochs: complete the
 * kernel (stream synchronisation) before the host synchronization call that ends the epoch.
 *
 * Whether a call is allowed is decided by the plain-C checks of mpix_gpuic_device_check.h
 * (shared with host tests); this file records their errors and moves the data.
 *
 * Requires compute capability 7.0 or newer (acquire/release fences and loads).
 */
#ifndef MPIX_GPUIC_DEVICE_CUH
#define MPIX_GPUIC_DEVICE_CUH

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mpi.h>

#include "mpix_gpuic_device_types.h"
#include "mpix_gpuic_device_check.h"

/* ---------------------------------------------------------------------------------------- */
/* Internal helpers (gpuic_dev_*): not part of the API.                                      */

/*
 * Orders this thread's stores into a target window before its later stores (a signal word, or
 * whatever announces completion), as seen by every observer of the target: kernels of other
 * processes on the same GPU, other GPUs, host threads.  Release ordering is all a flush owes:
 * a release fence where the architecture and compiler have one (sm_90, PTX 8.6: unlike an
 * acquire-release fence it leaves the L1 valid, so the next call's loads of the window's
 * description hit), an acquire-release fence before.  Device scope is enough when every
 * target shares our GPU (its L2 is where all of them meet), system scope otherwise.
 */
__device__ static inline void gpuic_dev_fence_data_to_peer(bool same_gpu)
{
#if __CUDA_ARCH__ >= 900 && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
    if (same_gpu) {
        asm volatile("fence.release.gpu;" ::: "memory");
    } else {
        asm volatile("fence.release.sys;" ::: "memory");
    }
#else
    if (same_gpu) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    } else {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
    }
#endif
}

/*
 * Orders a signal this thread observed before its later loads of the data the signal
 * announces (acquire side of gpuic_dev_fence_data_to_peer).  Device scope when every process
 * that can write the word shares our GPU, system scope otherwise.
 */
__device__ static inline uint64_t gpuic_dev_load_acquire_signal(const uint64_t *word,
                                                                bool same_gpu)
{
    uint64_t v;

    if (same_gpu) {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    } else {
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    }
    return v;
}

/*
 * Atomics on window words: device scope when every process of the window shares our GPU (all
 * of them then meet at its L2), system scope when another GPU or the host may take part.
 * Every origin of a window makes the same choice, so the two scopes never mix on one word.
 */
__device__ static inline bool gpuic_dev_all_same_gpu(MPIX_Win_device win)
{
    return (win.flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU) != 0;
}

/*
 * Publishes a signal: a release store (SET) or release reduction (ADD), which orders this
 * thread's earlier stores to the target before the signal for any observer that acquires it,
 * without waiting for a reply as a returning atomic would.
 */
__device__ static inline void gpuic_dev_signal_release(bool same_gpu, void *sig, uint64_t value,
                                                       bool add)
{
    if (same_gpu) {
        if (add) {
            asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(sig), "l"(value)
                         : "memory");
        } else {
            asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(sig), "l"(value)
                         : "memory");
        }
    } else {
        if (add) {
            asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(sig), "l"(value)
                         : "memory");
        } else {
            asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(sig), "l"(value)
                         : "memory");
        }
    }
}

__device__ static inline unsigned long long gpuic_dev_atomic_add64(MPIX_Win_device win, void *t,
                                                                   unsigned long long v)
{
    return gpuic_dev_all_same_gpu(win) ? atomicAdd((unsigned long long *)t, v)
                                       : atomicAdd_system((unsigned long long *)t, v);
}

/* Compare-and-swap at device scope when every accessor is on this GPU (@p same_gpu), else at
 * system scope: the scope that makes it atomic with the other accessors' atomics. */
__device__ static inline unsigned long long gpuic_dev_cas64_scoped(bool same_gpu, void *t,
                                                                   unsigned long long cmp,
                                                                   unsigned long long v)
{
    return same_gpu ? atomicCAS((unsigned long long *)t, cmp, v)
                    : atomicCAS_system((unsigned long long *)t, cmp, v);
}

__device__ static inline unsigned int gpuic_dev_cas32_scoped(bool same_gpu, void *t,
                                                             unsigned int cmp, unsigned int v)
{
    return same_gpu ? atomicCAS((unsigned int *)t, cmp, v)
                    : atomicCAS_system((unsigned int *)t, cmp, v);
}

__device__ static inline unsigned long long gpuic_dev_atomic_cas64(MPIX_Win_device win, void *t,
                                                                   unsigned long long cmp,
                                                                   unsigned long long v)
{
    return gpuic_dev_cas64_scoped(gpuic_dev_all_same_gpu(win), t, cmp, v);
}

/*
 * Records an error of the window for the host, and returns it.  The word is pinned host
 * memory, where device atomics are not allowed on PCIe-attached GPUs: a plain store of the
 * class when the word is clear (concurrent failures keep one of them), made visible to the
 * host by a system-scope fence.
 */
__device__ static inline int gpuic_dev_fail(MPIX_Gpuic_device_win *desc, int cls)
{
    volatile uint32_t *word = desc->error_word;

    if (*word == 0u) {
        *word = (uint32_t)cls;
        asm volatile("fence.acq_rel.sys;" ::: "memory");
    }
    return cls;
}

/*
 * Records the class a check of mpix_gpuic_device_check.h returned, and returns it.  A handle
 * that is not live (MPI_ERR_WIN) has no error word to record in.
 */
__device__ static inline int gpuic_dev_checked(MPIX_Gpuic_device_win *desc, int rc)
{
    if (__builtin_expect(rc != MPI_SUCCESS && rc != MPI_ERR_WIN, 0)) {
        return gpuic_dev_fail(desc, rc);
    }
    return rc;
}

/** Resolves @p target of @p win into *t (t->status holds the result, also returned). */
__device__ static inline int MPIX_Win_target_device(MPIX_Win_device win, int target,
                                                    MPIX_Device_target *t)
{
    return gpuic_dev_checked(win.desc, gpuic_dev_target_resolve(win, target, t));
}

/* The address of (disp, bytes) in a resolved target, checked: range without overflow, and
 * alignment @p align.  Records and returns the error class on failure (a target that did not
 * resolve recorded its error then). */
__device__ static inline int gpuic_dev_target_addr(const MPIX_Device_target *t, MPI_Aint disp,
                                                   size_t bytes, size_t align, char **addr)
{
    if (t->status != MPI_SUCCESS) {
        return t->status;
    }
    return gpuic_dev_checked(t->desc, gpuic_dev_target_range(t, disp, bytes, align, addr));
}

/*
 * The class @p rc of gpuic_dev_target_range() on @p t, recorded when the range check failed (a
 * target that did not resolve recorded its error then).  Calls test the range first and
 * record a failure on its own branch, away from their load or store: recording inside the
 * check (gpuic_dev_target_addr) puts the recording's volatile accesses and fence between the
 * check and the transfer, which holds the transfer back on every call.
 */
__device__ static inline int gpuic_dev_settled(const MPIX_Device_target *t, int rc)
{
    return t->status != MPI_SUCCESS ? rc : gpuic_dev_checked(t->desc, rc);
}

/* The data and signal word addresses of a put-with-signal in a resolved target, checked like
 * gpuic_dev_target_addr (the error recorded on failure). */
__device__ static inline int gpuic_dev_target_signal_addr(const MPIX_Device_target *t,
                                                          MPI_Aint disp, size_t bytes,
                                                          MPI_Aint sig_disp, char **dst,
                                                          char **sig)
{
    if (t->status != MPI_SUCCESS) {
        return t->status;
    }
    return gpuic_dev_checked(t->desc, gpuic_dev_target_signal(t, disp, bytes, sig_disp, dst, sig));
}

__device__ static inline int gpuic_dev_resolve(MPIX_Win_device win, int target, MPI_Aint disp,
                                               size_t bytes, size_t align, char **addr)
{
    MPIX_Device_target t;

    MPIX_Win_target_device(win, target, &t);
    return gpuic_dev_target_addr(&t, disp, bytes, align, addr);
}

/*
 * Copies between the origin buffer and a window.  A team (one thread, the lanes of a warp, the
 * threads of a block) moves the bytes together: member @p first of @p stride takes units
 * first, first + stride, ..., so that each warp touches consecutive units at once.  Every byte
 * of [dst, dst + bytes) is written exactly once and nothing outside it, for any size and any
 * alignment of the two pointers.
 *
 * The destination sets the shape: what is not 16-byte aligned at its ends is written by one
 * member with at most one store of each width 1, 2, 4 and 8 (a byte, then a halfword... up to
 * the alignment), and the middle with 16-byte vector stores.  For a put the destination is the
 * peer's memory across NVLink or PCIe, where full 16-byte writes move the most data per
 * transaction; the source is read in the widest unit its own alignment allows (a 16-byte load
 * when the two pointers agree modulo 16, else 8-, 4-, 2- or 1-byte loads packed into the
 * vector).  Plain coherent loads: the origin may have been written earlier by the same kernel,
 * which rules out the read-only (non-coherent) cache path.  The routines also compile for the
 * host, where a test runs the members of a team one after the other.
 */

/* T read from @p s through loads of L (L no wider than s's alignment allows). */
template <typename T, typename L, bool WIDE = (sizeof(L) >= sizeof(T))> struct gpuic_dev_loader {
    __host__ __device__ static T load(const char *s)
    {
        return *(const T *)s;
    }
};

template <typename T, typename L> struct gpuic_dev_loader<T, L, false> {
    __host__ __device__ static T load(const char *s)
    {
        union {
            T whole;
            L part[sizeof(T) / sizeof(L)];
        } u;

#pragma unroll
        for (unsigned k = 0; k < sizeof(T) / sizeof(L); ++k) {
            u.part[k] = ((const L *)s)[k];
        }
        return u.whole;
    }
};

/* One store of T at @p dst (aligned for T) from @p src (aligned for L). */
template <typename T, typename L>
__host__ __device__ static inline void gpuic_dev_copy_one(char *dst, const char *src)
{
    *(T *)dst = gpuic_dev_loader<T, L>::load(src);
}

/* Stores of width w (1, 2, 4 or 8) from a source aligned for L. */
template <typename L>
__host__ __device__ static inline void gpuic_dev_copy_width(char *dst, const char *src,
                                                            size_t w)
{
    switch (w) {
    case 1: gpuic_dev_copy_one<uint8_t, L>(dst, src); break;
    case 2: gpuic_dev_copy_one<uint16_t, L>(dst, src); break;
    case 4: gpuic_dev_copy_one<uint32_t, L>(dst, src); break;
    default: gpuic_dev_copy_one<uint64_t, L>(dst, src); break;
    }
}

/*
 * The copy, with source loads of L and @p UNROLL 16-byte units per member in flight (all
 * loaded before any is stored: the loads' latency overlaps).  Narrow loads keep at most 16 of
 * them in flight, so the registers a member holds stay those of four vectors.
 */
template <typename L, int UNROLL>
__host__ __device__ static inline void gpuic_dev_copy_from(char *dst, const char *src,
                                                           size_t bytes, unsigned first,
                                                           unsigned stride)
{
    enum { DEPTH = UNROLL * (int)sizeof(L) / 16 > 1 ? UNROLL * (int)sizeof(L) / 16 : 1 };
    size_t head = 0, w, n, i;

    /* the destination's way to 16-byte alignment: widths 1, 2, 4, 8 where its address has
     * that bit set; the first width that does not fit ends it, leaving the rest to the tail */
    for (w = 1; w < 16; w <<= 1) {
        if (((uintptr_t)(dst + head) & w) == 0) {
            continue;
        }
        if (bytes - head < w) {
            break;
        }
        if (first == 0) {
            gpuic_dev_copy_width<L>(dst + head, src + head, w);
        }
        head += w;
    }
    n = ((uintptr_t)(dst + head) & 15) == 0 ? (bytes - head) / 16 : 0;
    {
        uint4 *d = (uint4 *)(dst + head);
        const char *s = src + head;

        i = first;
        if (DEPTH > 1) {
            for (; i + (size_t)(DEPTH - 1) * stride < n; i += (size_t)DEPTH * stride) {
                uint4 v[DEPTH];

#pragma unroll
                for (int k = 0; k < DEPTH; ++k) {
                    v[k] = gpuic_dev_loader<uint4, L>::load(s + (i + (size_t)k * stride) * 16);
                }
#pragma unroll
                for (int k = 0; k < DEPTH; ++k) {
                    d[i + (size_t)k * stride] = v[k];
                }
            }
        }
        for (; i < n; i += stride) {
            d[i] = gpuic_dev_loader<uint4, L>::load(s + i * 16);
        }
    }
    /* the tail, below 16 bytes: widths downwards, each aligned by the ones before it */
    head += n * 16;
    if (first == stride - 1) {
        for (w = 8; w > 0; w >>= 1) {
            if (bytes - head >= w) {
                gpuic_dev_copy_width<L>(dst + head, src + head, w);
                head += w;
            }
        }
    }
}

/* Copies bytes [0, bytes) by a team of @p stride members (this one is @p first), with
 * @p UNROLL 16-byte units per member in flight. */
template <int UNROLL>
__host__ __device__ static inline void gpuic_dev_copy_team(char *dst, const char *src,
                                                           size_t bytes, unsigned first,
                                                           unsigned stride)
{
    uintptr_t skew = ((uintptr_t)dst ^ (uintptr_t)src) & 15; /* alignment the two share */

    if (skew == 0) {
        gpuic_dev_copy_from<uint4, UNROLL>(dst, src, bytes, first, stride);
    } else if ((skew & 7) == 0) {
        gpuic_dev_copy_from<uint64_t, UNROLL>(dst, src, bytes, first, stride);
    } else if ((skew & 3) == 0) {
        gpuic_dev_copy_from<uint32_t, UNROLL>(dst, src, bytes, first, stride);
    } else if ((skew & 1) == 0) {
        gpuic_dev_copy_from<uint16_t, UNROLL>(dst, src, bytes, first, stride);
    } else {
        gpuic_dev_copy_from<uint8_t, UNROLL>(dst, src, bytes, first, stride);
    }
}

/* 16-byte units each member of a warp or block keeps in flight.  Stores do not wait, so puts
 * keep one, which keeps a 1024-thread block that puts within its 64 registers per thread; a
 * get's remote loads do wait, and four per thread keep the link busy
 * (docs/performance-history.md, "Device copy unrolling"). */
#define GPUIC_DEV_PUT_UNROLL 1
#define GPUIC_DEV_GET_UNROLL 4

/* The copy of a single thread (also the proxy's staging copies): no unrolling, which keeps
 * the registers a kernel spends on a plain put low.  A word or two (the common 8-byte put)
 * with both pointers and the size multiples of 8 is stored word by word ahead of the alignment
 * machinery (five source-alignment variants, a head and a tail), which would triple the code
 * of a put + flush kernel and slow the 8-byte put (docs/performance-history.md). */
__host__ __device__ static inline void gpuic_dev_copy(char *dst, const char *src, size_t bytes,
                                                      unsigned first, unsigned stride)
{
    if (stride == 1 && bytes <= 16 && (((uintptr_t)dst | (uintptr_t)src | bytes) & 7) == 0) {
        for (size_t i = 0; i < bytes; i += 8) {
            *(uint64_t *)(dst + i) = *(const uint64_t *)(src + i);
        }
        return;
    }
    gpuic_dev_copy_team<1>(dst, src, bytes, first, stride);
}

/*
 * One 8-byte word, the common get of a single thread: loaded and stored whole, through a
 * register, so that an origin that is a local variable stays in a register (the general copy
 * writes the destination in pieces, which puts it on the stack).  @p src in any alignment
 * (the widest loads it allows), @p dst too (an unaligned one by memcpy, which also keeps a
 * local variable whole).
 */
__host__ __device__ static inline uint64_t gpuic_dev_load_word(const char *src)
{
    switch ((uintptr_t)src & 7) {
    case 0:  return *(const uint64_t *)src;
    case 4:  return gpuic_dev_loader<uint64_t, uint32_t>::load(src);
    case 2:
    case 6:  return gpuic_dev_loader<uint64_t, uint16_t>::load(src);
    default: return gpuic_dev_loader<uint64_t, uint8_t>::load(src);
    }
}

__host__ __device__ static inline void gpuic_dev_store_word(void *dst, uint64_t v)
{
    if (((uintptr_t)dst & 7) == 0) {
        *(uint64_t *)dst = v;
    } else {
        memcpy(dst, &v, sizeof(v));
    }
}

/* A single thread's get from @p src into @p dst: one word whole, anything else by
 * gpuic_dev_copy(). */
__host__ __device__ static inline void gpuic_dev_get_copy(char *dst, const char *src,
                                                          size_t bytes)
{
    if (bytes == sizeof(uint64_t)) {
        gpuic_dev_store_word(dst, gpuic_dev_load_word(src));
    } else {
        gpuic_dev_copy(dst, src, bytes, 0, 1);
    }
}

__device__ static inline unsigned gpuic_dev_block_rank(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* This thread's lane in its warp: warps are runs of 32 consecutive linear thread indices, so
 * the lane is threadIdx.x % 32 only in blocks whose x extent is a multiple of 32 (a 16 x 2
 * block has lanes 16-31 at threadIdx.x 0-15 of its second row); warp collectives and the
 * _warp calls' shares of a transfer go by it.  Computed rather than read from %laneid, which
 * keeps a register more live in kernels that use the whole API (docs/performance-history.md,
 * "Device register counts"). */
__device__ static inline unsigned gpuic_dev_lane(void)
{
    return gpuic_dev_block_rank() & 31u;
}

__device__ static inline unsigned gpuic_dev_block_size(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

/* new = origin (op) old for one element of type T; false for an op T cannot take. */
template <typename T>
__device__ static inline bool gpuic_dev_combine(MPIX_Device_op op, T origin, T old, T *out)
{
    switch (op) {
    case MPIX_DEVICE_SUM:     *out = old + origin; return true;
    case MPIX_DEVICE_PROD:    *out = old * origin; return true;
    case MPIX_DEVICE_MIN:     *out = origin < old ? origin : old; return true;
    case MPIX_DEVICE_MAX:     *out = origin > old ? origin : old; return true;
    case MPIX_DEVICE_LAND:    *out = (T)((old != (T)0) && (origin != (T)0)); return true;
    case MPIX_DEVICE_LOR:     *out = (T)((old != (T)0) || (origin != (T)0)); return true;
    case MPIX_DEVICE_LXOR:    *out = (T)((old != (T)0) != (origin != (T)0)); return true;
    case MPIX_DEVICE_REPLACE: *out = origin; return true;
    case MPIX_DEVICE_NO_OP:   *out = old; return true;
    default:                  return false;
    }
}

template <typename T>
__device__ static inline bool gpuic_dev_combine_bits(MPIX_Device_op op, T origin, T old, T *out)
{
    switch (op) {
    case MPIX_DEVICE_BAND: *out = old & origin; return true;
    case MPIX_DEVICE_BOR:  *out = old | origin; return true;
    case MPIX_DEVICE_BXOR: *out = old ^ origin; return true;
    default:               return gpuic_dev_combine<T>(op, origin, old, out);
    }
}

/* Chooses the combine function by whether T is an integer type (bitwise ops allowed). */
template <typename T, bool INTEGER> struct gpuic_dev_combiner {
    __device__ static bool apply(MPIX_Device_op op, T origin, T old, T *out)
    {
        return gpuic_dev_combine<T>(op, origin, old, out);
    }
};

template <typename T> struct gpuic_dev_combiner<T, true> {
    __device__ static bool apply(MPIX_Device_op op, T origin, T old, T *out)
    {
        return gpuic_dev_combine_bits<T>(op, origin, old, out);
    }
};

#include "mpix_gpuic_device_proxy.cuh"

/* ---------------------------------------------------------------------------------------- */
/* Put and get.                                                                             */

/*
 * The common single-thread put or get (8 or 16 bytes, 8-aligned on both sides, a displacement
 * below 2^31 and a positive displacement unit) on the P2P path, decided by one test and one
 * branch; the caller takes the full path (which checks and records everything again) when it
 * fails, so that the common call costs one branch before its store or load instead of several.
 *
 * gpuic_dev_p2p_limit() folds everything about the target into one integer: the largest
 * offset such an access may start at, or -1 when the target cannot take it (not P2P, a unit
 * of 0 or below, a window smaller than the access or of 2^62 bytes or more).  A value rather
 * than a predicate: the compiler keeps a loop-invariant value out of a loop (the target's
 * entry is loaded once there), whereas compares are sunk next to their branch and redone on
 * every call.  gpuic_dev_p2p_words_ok() then needs, per call, one 32 x 32 -> 64-bit multiply
 * (disp < 2^31 and 0 < unit < 2^31: no overflow), one signed compare against the limit (the
 * full range check, offset <= size and bytes <= size - offset, for such an offset), the
 * displacement's bound and the alignment.
 */
__device__ static inline int64_t gpuic_dev_p2p_limit(bool p2p, uint64_t size, int32_t unit,
                                                     size_t bytes)
{
    bool ok = p2p & (unit > 0) & ((bytes == 8) | (bytes == 16)) & (bytes <= size) &
              ((size >> 62) == 0);

    return ok ? (int64_t)(size - bytes) : (int64_t)-1;
}

/*
 * gpuic_dev_p2p_limit() of @p target of @p win for a call by rank, with the target's base and
 * displacement unit, in one instruction sequence that checks the handle's value and the rank
 * (as gpuic_dev_peer_load(): zeros, hence -1, unless they pass), loads the target's entry and
 * computes the limit from it.  A pure function of register operands: in a loop of calls to one
 * target the compiler keeps the whole sequence, limit included, out of the loop (with the
 * loads alone out of the loop, the limit's compares were redone on every call).  @p bytes is 8
 * or 16.
 */
__device__ static inline int64_t gpuic_dev_peer_fast(MPIX_Win_device win, int target,
                                                     size_t bytes, uint64_t *base,
                                                     int32_t *unit)
{
    uint64_t b;
    int64_t limit;
    int32_t u;

    static_assert(offsetof(MPIX_Gpuic_device_peer, size) == 8 &&
                      offsetof(MPIX_Gpuic_device_peer, disp_unit) == 16 &&
                      offsetof(MPIX_Gpuic_device_peer, path) == 20,
                  "the loads below follow the entry's layout");
    static_assert(MPIX_GPUIC_DEVICE_MAGIC == 0x6770756964657603ULL &&
                      MPIX_GPUIC_DEVICE_PATH_P2P == 1,
                  "the constants below are MPIX_GPUIC_DEVICE_MAGIC and _PATH_P2P");
    /* the access size is written into the sequence (8 or 16), not passed: a constant operand
     * is materialized in the loop and keeps the compiler from hoisting the sequence */
#define GPUIC_DEV_PEER_FAST_ASM(BYTES)                                                          \
    asm("{\n\t"                                                                                \
        ".reg .pred ok, f;\n\t"                                                                \
        ".reg .b64 sz, lim;\n\t"                                                               \
        ".reg .b32 path;\n\t"                                                                  \
        "setp.ne.u64 ok, %4, 0;\n\t"                                                           \
        "setp.eq.and.u64 ok, %5, 0x6770756964657603, ok;\n\t"                                  \
        "setp.ge.and.s32 ok, %6, 0, ok;\n\t"                                                   \
        "setp.lt.and.s32 ok, %6, %7, ok;\n\t"                                                  \
        "mov.u64 %0, 0;\n\t"                                                                   \
        "mov.u64 sz, 0;\n\t"                                                                   \
        "mov.u32 %1, 0;\n\t"                                                                   \
        "mov.u32 path, 0;\n\t"                                                                 \
        "@ok ld.global.nc.u64 %0, [%3];\n\t"                                                   \
        "@ok ld.global.nc.u64 sz, [%3+8];\n\t"                                                 \
        "@ok ld.global.nc.v2.s32 {%1, path}, [%3+16];\n\t"                                     \
        "setp.eq.s32 f, path, 1;\n\t"                                                          \
        "setp.gt.and.s32 f, %1, 0, f;\n\t"                                                     \
        "setp.ge.and.u64 f, sz, " #BYTES ", f;\n\t"                                            \
        "setp.lt.and.u64 f, sz, 0x4000000000000000, f;\n\t"                                    \
        "sub.s64 lim, sz, " #BYTES ";\n\t"                                                     \
        "selp.b64 %2, lim, -1, f;\n\t"                                                         \
        "}"                                                                                     \
        : "=&l"(b), "=&r"(u), "=&l"(limit)                                                      \
        : "l"(&win.desc->peers[target]), "l"(win.desc), "l"(win.magic), "r"(target),            \
          "r"(win.nranks))
    if (bytes == 16) {
        GPUIC_DEV_PEER_FAST_ASM(16);
    } else {
        GPUIC_DEV_PEER_FAST_ASM(8);
    }
#undef GPUIC_DEV_PEER_FAST_ASM
    *base = b;
    *unit = u;
    return limit;
}

/* Whether a single thread's 8- or 16-byte access at @p disp takes the fast path, given the
 * target's limit (gpuic_dev_p2p_limit), base and unit; *addr is the target address either way.
 * @p other is the origin or result buffer, which must be 8-aligned too. */
__device__ static inline bool gpuic_dev_p2p_words_ok(int64_t limit, uint64_t base, int32_t unit,
                                                     MPI_Aint disp, const void *other,
                                                     char **addr)
{
    uint64_t ud = (uint64_t)disp;
    uint64_t off = (uint64_t)(uint32_t)ud * (uint32_t)unit;
    uint64_t a = base + off;

    *addr = (char *)(uintptr_t)a;
    return ((int64_t)off <= limit) & (ud < (1ull << 31)) & (((a | (uintptr_t)other) & 7) == 0);
}

/* The words of a put that passed gpuic_dev_p2p_words_ok(): one or two 8-byte stores. */
__device__ static inline void gpuic_dev_p2p_put_words(char *dst, const void *origin, size_t bytes)
{
    *(uint64_t *)dst = *(const uint64_t *)origin;
    if (bytes == 16) {
        *(uint64_t *)(dst + 8) = *((const uint64_t *)origin + 1);
    }
}

/*
 * An 8-byte get's word: loaded into *v when @p ok (gpuic_dev_p2p_words_ok() passed), and @p ok
 * returned.  The load is predicated on @p ok and issued ahead of the branch to the full path,
 * so that in a loop of gets the next load is in flight while the previous word is consumed (a
 * load behind the branch waits for it).  Volatile, with a memory clobber: never merged with
 * another get or moved across other accesses.
 */
__device__ static inline bool gpuic_dev_p2p_get_word(bool ok, const char *src, uint64_t *v)
{
    uint64_t w = 0;

    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.b32 p, %2, 0;\n\t"
                 "@p ld.u64 %0, [%1];\n\t"
                 "}"
                 : "+l"(w)
                 : "l"(src), "r"((int)ok)
                 : "memory");
    *v = w;
    return ok;
}

/* The body of every put and get variant: a copy of [first, bytes) in steps of @p stride
 * between the origin and the resolved target address. */
__device__ static inline int gpuic_dev_xfer(void *origin, size_t bytes, int target, MPI_Aint disp,
                                            MPIX_Win_device win, bool is_put, unsigned first,
                                            unsigned stride)
{
    MPIX_Device_target t;
    char *remote;
    int rc;

    /* A single thread's put of one or two aligned words on the P2P path: one test, then the
     * stores (gpuic_dev_p2p_words_ok).  Here rather than in MPIX_Put_device, where the same
     * code (folded away for a 64-byte put) changed a one-put kernel's registers
     * (regcount.cu) from 32 to 40.  gpuic_dev_peer_fast() checks the handle and the rank
     * (limit -1 unless they pass and the target is P2P); the full path below loads and checks
     * everything again when the test fails. */
    if (stride == 1 && is_put && (bytes == 8 || bytes == 16)) {
        uint64_t base;
        int32_t unit;
        int64_t limit = gpuic_dev_peer_fast(win, target, bytes, &base, &unit);

        if (__builtin_expect(gpuic_dev_p2p_words_ok(limit, base, unit, disp, origin, &remote),
                             1)) {
            gpuic_dev_p2p_put_words(remote, origin, bytes);
            return MPI_SUCCESS;
        }
    }
    MPIX_Win_target_device(win, target, &t);
    rc = gpuic_dev_target_addr(&t, disp, bytes, 1, &remote);
    if (rc == MPI_SUCCESS && t.proxy) {
        /* one entry stream per call: the first lane or thread posts it all */
        if (first == 0) {
            rc = is_put ? gpuic_dev_proxy_put(&t, origin, bytes, (uint64_t)(uintptr_t)remote)
                        : gpuic_dev_proxy_get(&t, origin, bytes, (uint64_t)(uintptr_t)remote);
        }
    } else if (rc == MPI_SUCCESS) {
        char *dst = is_put ? remote : (char *)origin;
        const char *src = is_put ? (const char *)origin : remote;

        if (stride == 1 && !is_put) {
            gpuic_dev_get_copy(dst, src, bytes);
        } else if (stride == 1) {
            gpuic_dev_copy(dst, src, bytes, 0, 1);
        } else {
            if (is_put) {
                gpuic_dev_copy_team<GPUIC_DEV_PUT_UNROLL>(dst, src, bytes, first, stride);
            } else {
                gpuic_dev_copy_team<GPUIC_DEV_GET_UNROLL>(dst, src, bytes, first, stride);
            }
        }
    }
    return rc;
}

/**
 * Puts @p bytes from device memory @p origin into @p target's window at displacement @p disp
 * (in the target's displacement units).  Complete at the target after a flush.
 */
__device__ static inline int MPIX_Put_device(const void *origin, size_t bytes, int target,
                                             MPI_Aint disp, MPIX_Win_device win)
{
    return gpuic_dev_xfer((void *)origin, bytes, target, disp, win, true, 0, 1);
}

/** MPIX_Put_device by the 32 lanes of a warp together. */
__device__ static inline int MPIX_Put_device_warp(const void *origin, size_t bytes, int target,
                                                  MPI_Aint disp, MPIX_Win_device win)
{
    int rc = gpuic_dev_xfer((void *)origin, bytes, target, disp, win, true, gpuic_dev_lane(), 32);

    __syncwarp();
    return __shfl_sync(0xffffffffu, rc, 0); /* lane 0 posted on the proxy path */
}

/** MPIX_Put_device by all threads of a block together (synchronises the block).  To move a
 *  large buffer with several blocks, deal it out in chunks of a few hundred KiB round-robin
 *  rather than one slice a block: that keeps more of the link busy (docs/perf-2gpu.md). */
__device__ static inline int MPIX_Put_device_block(const void *origin, size_t bytes, int target,
                                                   MPI_Aint disp, MPIX_Win_device win)
{
    __shared__ int first_rc;
    int rc = gpuic_dev_xfer((void *)origin, bytes, target, disp, win, true,
                            gpuic_dev_block_rank(), gpuic_dev_block_size());

    if (gpuic_dev_block_rank() == 0) {
        first_rc = rc; /* thread 0 posted on the proxy path */
    }
    __syncthreads();
    rc = first_rc;
    __syncthreads();
    return rc;
}

/* Declared ahead for MPIX_Get_device, which resolves its target and then runs it (the
 * definition, with its documentation, is with the other calls on a resolved target). */
__device__ static inline int MPIX_Get_target_device(const MPIX_Device_target *t, void *origin,
                                                    size_t bytes, MPI_Aint disp);
__device__ static inline int gpuic_dev_get_target_full(const MPIX_Device_target *t, void *origin,
                                                       size_t bytes, MPI_Aint disp);

/** Gets @p bytes from @p target's window at @p disp into device memory @p origin; complete
 *  on return. */
__device__ static inline int MPIX_Get_device(void *origin, size_t bytes, int target,
                                             MPI_Aint disp, MPIX_Win_device win)
{
    MPIX_Device_target t;
    int rc;

    if (bytes == sizeof(uint64_t)) {
        uint64_t base, v;
        int32_t unit;
        char *src;
        int64_t limit = gpuic_dev_peer_fast(win, target, bytes, &base, &unit);
        bool ok = gpuic_dev_p2p_words_ok(limit, base, unit, disp, origin, &src);

        if (__builtin_expect(gpuic_dev_p2p_get_word(ok, src, &v), 1)) {
            *(uint64_t *)origin = v;
            return MPI_SUCCESS;
        }
    }
    rc = gpuic_dev_target_resolve(win, target, &t);
    if (__builtin_expect(rc != MPI_SUCCESS, 0)) {
        return gpuic_dev_checked(win.desc, rc);
    }
    return MPIX_Get_target_device(&t, origin, bytes, disp);
}

/** MPIX_Get_device by the 32 lanes of a warp together. */
__device__ static inline int MPIX_Get_device_warp(void *origin, size_t bytes, int target,
                                                  MPI_Aint disp, MPIX_Win_device win)
{
    int rc = gpuic_dev_xfer(origin, bytes, target, disp, win, false, gpuic_dev_lane(), 32);

    __syncwarp();
    return __shfl_sync(0xffffffffu, rc, 0); /* lane 0 posted on the proxy path */
}

/** MPIX_Get_device by all threads of a block together (synchronises the block). */
__device__ static inline int MPIX_Get_device_block(void *origin, size_t bytes, int target,
                                                   MPI_Aint disp, MPIX_Win_device win)
{
    __shared__ int first_rc;
    int rc = gpuic_dev_xfer(origin, bytes, target, disp, win, false, gpuic_dev_block_rank(),
                            gpuic_dev_block_size());

    if (gpuic_dev_block_rank() == 0) {
        first_rc = rc; /* thread 0 posted on the proxy path */
    }
    __syncthreads();
    rc = first_rc;
    __syncthreads();
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Calls on a resolved target (MPIX_Win_target_device): the same semantics and error classes   */
/* as the calls by rank, without loading the target's entry of the description.             */

/** MPIX_Put_device on a resolved target. */
__device__ static inline int MPIX_Put_target_device(const MPIX_Device_target *t, const void *origin,
                                                    size_t bytes, MPI_Aint disp)
{
    char *dst = NULL;
    int64_t limit = gpuic_dev_p2p_limit((t->status == MPI_SUCCESS) & !t->proxy, t->size,
                                        t->disp_unit, bytes);
    int rc;

    if (__builtin_expect(gpuic_dev_p2p_words_ok(limit, (uint64_t)(uintptr_t)t->base,
                                                t->disp_unit, disp, origin, &dst),
                         1)) {
        gpuic_dev_p2p_put_words(dst, origin, bytes);
        return MPI_SUCCESS;
    }
    rc = gpuic_dev_target_range(t, disp, bytes, 1, &dst);
    if (__builtin_expect(rc != MPI_SUCCESS, 0)) {
        return gpuic_dev_settled(t, rc);
    }
    if (t->proxy) {
        return gpuic_dev_proxy_put(t, origin, bytes, (uint64_t)(uintptr_t)dst);
    }
    gpuic_dev_copy(dst, (const char *)origin, bytes, 0, 1);
    return MPI_SUCCESS;
}

/** MPIX_Get_device on a resolved target. */
__device__ static inline int MPIX_Get_target_device(const MPIX_Device_target *t, void *origin,
                                                    size_t bytes, MPI_Aint disp)
{
    char *src = NULL;

    if (bytes == sizeof(uint64_t)) {
        uint64_t v;
        int64_t limit = gpuic_dev_p2p_limit((t->status == MPI_SUCCESS) & !t->proxy, t->size,
                                            t->disp_unit, bytes);
        bool ok = gpuic_dev_p2p_words_ok(limit, (uint64_t)(uintptr_t)t->base, t->disp_unit,
                                         disp, origin, &src);

        if (__builtin_expect(gpuic_dev_p2p_get_word(ok, src, &v), 1)) {
            *(uint64_t *)origin = v;
            return MPI_SUCCESS;
        }
    }
    return gpuic_dev_get_target_full(t, origin, bytes, disp);
}

/* The full path of MPIX_Get_target_device (any size, the proxy path, every check recorded). */
__device__ static inline int gpuic_dev_get_target_full(const MPIX_Device_target *t, void *origin,
                                                       size_t bytes, MPI_Aint disp)
{
    char *src = NULL;
    int rc = gpuic_dev_target_range(t, disp, bytes, 1, &src);

    if (__builtin_expect(rc != MPI_SUCCESS, 0)) {
        return gpuic_dev_settled(t, rc);
    }
    if (t->proxy) {
        return gpuic_dev_proxy_get(t, origin, bytes, (uint64_t)(uintptr_t)src);
    }
    gpuic_dev_get_copy((char *)origin, src, bytes);
    return MPI_SUCCESS;
}

/** MPIX_Win_flush_device on a resolved target. */
__device__ static inline int MPIX_Win_flush_target_device(const MPIX_Device_target *t)
{
    if (t->status != MPI_SUCCESS) {
        return t->status;
    }
    if (t->proxy) {
        /* Entries are complete once the proxy's completion index passes them, which the
         * wait reads with acquire; only device atomics on a mapping (forced proxy path)
         * need the data fence too.  Without it the wait starts a PCIe round trip sooner. */
        if (t->atomics_p2p) {
            gpuic_dev_fence_data_to_peer(t->same_gpu);
        }
        return gpuic_dev_proxy_flush(t);
    }
    gpuic_dev_fence_data_to_peer(t->same_gpu);
    return MPI_SUCCESS;
}

/*
 * Put-with-signal on the proxy path.  A signal add on device memory (a forced proxy path on a
 * mapped GPU window) must stay a device atomic, so the data goes through the proxy, is
 * flushed, and the add is made here; everything else is one proxy entry.
 */
__device__ static inline int gpuic_dev_proxy_put_signal_target(const MPIX_Device_target *t,
                                                               const void *origin, size_t bytes,
                                                               char *dst, char *sig,
                                                               uint64_t value,
                                                               MPIX_Device_signal_op sig_op)
{
    int rc;

    if (sig_op == MPIX_DEVICE_SIGNAL_ADD && t->atomics_p2p) {
        rc = gpuic_dev_proxy_put(t, origin, bytes, (uint64_t)(uintptr_t)dst);
        if (rc == MPI_SUCCESS) {
            rc = gpuic_dev_proxy_flush(t);
        }
        if (rc == MPI_SUCCESS) {
            gpuic_dev_signal_release(t->same_gpu, sig, value, true);
        }
        return rc;
    }
    return gpuic_dev_proxy_put_signal(t, origin, bytes, (uint64_t)(uintptr_t)dst,
                                      (uint64_t)(uintptr_t)sig, value,
                                      sig_op == MPIX_DEVICE_SIGNAL_ADD ? GPUIC_SIGNAL_ADD
                                                                       : GPUIC_SIGNAL_SET);
}

/** MPIX_Put_signal_device on a resolved target. */
__device__ static inline int MPIX_Put_signal_target_device(const MPIX_Device_target *t,
                                                           const void *origin, size_t bytes,
                                                           MPI_Aint disp, MPI_Aint sig_disp,
                                                           uint64_t value,
                                                           MPIX_Device_signal_op sig_op)
{
    char *dst, *sig;
    int rc = gpuic_dev_target_signal_addr(t, disp, bytes, sig_disp, &dst, &sig);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (t->proxy) {
        return gpuic_dev_proxy_put_signal_target(t, origin, bytes, dst, sig, value, sig_op);
    }
    gpuic_dev_copy(dst, (const char *)origin, bytes, 0, 1);
    gpuic_dev_signal_release(t->same_gpu, sig, value, sig_op == MPIX_DEVICE_SIGNAL_ADD);
    return MPI_SUCCESS;
}

/**
 * MPIX_Signal_wait_until_device on a resolved target, which must be the calling process's own
 * rank (the word waited on is in its own window).
 */
__device__ static inline int MPIX_Signal_wait_until_target_device(const MPIX_Device_target *self,
                                                                  MPI_Aint sig_disp,
                                                                  MPIX_Device_cmp cmp,
                                                                  uint64_t value,
                                                                  uint64_t *observed)
{
    char *sig;
    uint64_t v;
    bool done;
    int rc = gpuic_dev_target_addr(self, sig_disp, 8, 8, &sig);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!self->loads) {
        /* our own window is host memory the device has no mapping of */
        return gpuic_dev_fail(self->desc, MPI_ERR_UNSUPPORTED_OPERATION);
    }
    if (gpuic_dev_check_cmp(cmp) != MPI_SUCCESS) {
        return gpuic_dev_fail(self->desc, MPI_ERR_ARG);
    }
    do {
        v = gpuic_dev_load_acquire_signal((const uint64_t *)sig, self->same_gpu);
        switch (cmp) {
        case MPIX_DEVICE_CMP_EQ: done = v == value; break;
        case MPIX_DEVICE_CMP_NE: done = v != value; break;
        case MPIX_DEVICE_CMP_GT: done = v > value; break;
        case MPIX_DEVICE_CMP_GE: done = v >= value; break;
        case MPIX_DEVICE_CMP_LT: done = v < value; break;
        default:                 done = v <= value; break;
        }
    } while (!done);
    if (observed != NULL) {
        *observed = v;
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Completion.                                                                              */

/* MPI_SUCCESS when @p win is a live handle and @p target one of its ranks (recorded if not). */
__device__ static inline int gpuic_dev_check_target(MPIX_Win_device win, int target)
{
    return gpuic_dev_checked(win.desc, gpuic_dev_check_rank(win, target));
}

/** Completes this thread's puts and atomics to @p target at the target. */
__device__ static inline int MPIX_Win_flush_device(int target, MPIX_Win_device win)
{
    int rc = gpuic_dev_check_target(win, target);
    /* the path is loaded with the flags, before the fence: a load after an acquire fence
     * misses the L1 and would put a cache round trip on every P2P flush (after a call to the
     * same target, or in a loop, the compiler may share or hoist it: gpuic_dev_peer_load) */
    MPIX_Gpuic_device_peer e = gpuic_dev_peer_load(win, target, rc);
    int32_t path = e.path;
    uint32_t flags = e.flags;

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* a window without a device queue has no proxy-path target; when all its processes
     * share this GPU, the handle's value says all the flush needs */
    if (win.queue == NULL && (win.flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU) != 0) {
        gpuic_dev_fence_data_to_peer(true);
        return MPI_SUCCESS;
    }

    if (path == MPIX_GPUIC_DEVICE_PATH_PROXY && win.queue != NULL) {
        /* the two loads above hold all a flush needs of the target: no second round of loads
         * to resolve it, after the put's acquire emptied the L1 */
        MPIX_Device_target t;

        gpuic_dev_target_for_flush(win, target, flags, &t);
        return MPIX_Win_flush_target_device(&t);
    }
    if (path == MPIX_GPUIC_DEVICE_PATH_PROXY) {
        MPIX_Device_target t;

        rc = MPIX_Win_target_device(win, target, &t); /* records the class it fails with */
        return rc == MPI_SUCCESS ? MPIX_Win_flush_target_device(&t) : rc;
    }
    gpuic_dev_fence_data_to_peer(flags & MPIX_GPUIC_DEVICE_PEER_SAME_GPU);
    return MPI_SUCCESS;
}

/** Completes this thread's puts and atomics to every target. */
__device__ static inline int MPIX_Win_flush_all_device(MPIX_Win_device win)
{
    MPIX_Device_target t;

    if (gpuic_dev_check_win(win) != MPI_SUCCESS) {
        return MPI_ERR_WIN;
    }
    gpuic_dev_fence_data_to_peer(gpuic_dev_all_same_gpu(win));
    t.desc = win.desc;
    t.queue = win.queue;
    t.rank = -1; /* every target (gpuic_dev_proxy_outcome()) */
    if (t.queue != NULL) {
        return gpuic_dev_proxy_flush(&t);
    }
    return MPI_SUCCESS;
}

/**
 * Local completion: the origin buffers of this thread's puts may be reused.  Device puts read
 * their origin before they return (on the proxy path into the entry or its staging area, or,
 * for a large put without staging, by the proxy, which the put waits for), so this only
 * validates its arguments.
 */
__device__ static inline int MPIX_Win_flush_local_device(int target, MPIX_Win_device win)
{
    return gpuic_dev_check_target(win, target);
}

/* ---------------------------------------------------------------------------------------- */
/* Signals.                                                                                 */

/* Resolves the data and the signal word of a put-with-signal. */
__device__ static inline int gpuic_dev_resolve_signal(MPIX_Win_device win, int target,
                                                      MPI_Aint disp, size_t bytes,
                                                      MPI_Aint sig_disp, char **dst, char **sig)
{
    MPIX_Device_target t;

    MPIX_Win_target_device(win, target, &t);
    return gpuic_dev_target_signal_addr(&t, disp, bytes, sig_disp, dst, sig);
}

/**
 * Puts @p bytes like MPIX_Put_device, then updates the 8-byte signal word at @p sig_disp of
 * the same target (SET or atomic ADD of @p value) so that a target that sees the new signal
 * value also sees the data.  The put is complete at the target once the signal is seen.
 */
__device__ static inline int MPIX_Put_signal_device(const void *origin, size_t bytes,
                                                    int target, MPI_Aint disp,
                                                    MPI_Aint sig_disp, uint64_t value,
                                                    MPIX_Device_signal_op sig_op,
                                                    MPIX_Win_device win)
{
    MPIX_Device_target t;

    MPIX_Win_target_device(win, target, &t);
    return MPIX_Put_signal_target_device(&t, origin, bytes, disp, sig_disp, value, sig_op);
}

/** MPIX_Put_signal_device by a warp: the lanes copy, lane 0 signals after all copied. */
__device__ static inline int MPIX_Put_signal_device_warp(const void *origin, size_t bytes,
                                                         int target, MPI_Aint disp,
                                                         MPI_Aint sig_disp, uint64_t value,
                                                         MPIX_Device_signal_op sig_op,
                                                         MPIX_Win_device win)
{
    char *dst, *sig;
    int rc = gpuic_dev_resolve_signal(win, target, disp, bytes, sig_disp, &dst, &sig);
    MPIX_Gpuic_device_peer e = gpuic_dev_peer_load(win, target, rc); /* shares resolve's */

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (e.path == MPIX_GPUIC_DEVICE_PATH_PROXY) {
        if (gpuic_dev_lane() == 0) {
            rc = MPIX_Put_signal_device(origin, bytes, target, disp, sig_disp, value, sig_op,
                                        win);
        }
        __syncwarp();
        return __shfl_sync(0xffffffffu, rc, 0);
    }
    gpuic_dev_copy_team<GPUIC_DEV_PUT_UNROLL>(dst, (const char *)origin, bytes, gpuic_dev_lane(),
                                              32);
    /* every lane's stores ordered before lane 0's signal */
    gpuic_dev_fence_data_to_peer(e.flags & MPIX_GPUIC_DEVICE_PEER_SAME_GPU);
    __syncwarp();
    if (gpuic_dev_lane() == 0) {
        gpuic_dev_signal_release(gpuic_dev_all_same_gpu(win), sig, value,
                                 sig_op == MPIX_DEVICE_SIGNAL_ADD);
    }
    __syncwarp();
    return MPI_SUCCESS;
}

/**
 * Waits until the 8-byte signal word at @p sig_disp of the calling process's own window
 * satisfies (word CMP value); the data announced with it is visible afterwards.  The word's
 * value is stored in *observed when @p observed is not NULL.
 */
__device__ static inline int MPIX_Signal_wait_until_device(MPI_Aint sig_disp, MPIX_Device_cmp cmp,
                                                           uint64_t value, uint64_t *observed,
                                                           MPIX_Win_device win)
{
    MPIX_Device_target self;

    if (gpuic_dev_check_win(win) != MPI_SUCCESS) {
        return MPI_ERR_WIN;
    }
    MPIX_Win_target_device(win, win.rank, &self);
    return MPIX_Signal_wait_until_target_device(&self, sig_disp, cmp, value, observed);
}

/* ---------------------------------------------------------------------------------------- */
/* Atomics and accumulate.                                                                  */

/** Atomically adds @p value to the 8-byte integer at @p disp of @p target; the old value goes
 *  to *result (when not NULL). */
__device__ static inline int MPIX_Fetch_and_add_device(int64_t value, int64_t *result, int target,
                                                       MPI_Aint disp, MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc;
    unsigned long long old;

    MPIX_Win_target_device(win, target, &tg);
    rc = gpuic_dev_target_addr(&tg, disp, 8, 8, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!tg.atomics_p2p) {
        uint64_t o;

        rc = gpuic_dev_proxy_atomic(&tg, GPUIC_WQE_OP_ATOMIC_FA, (uint64_t)value, 0,
                                    (uint64_t)(uintptr_t)t, &o);
        if (rc == MPI_SUCCESS && result != NULL) {
            *result = (int64_t)o;
        }
        return rc;
    }
    old = gpuic_dev_atomic_add64(win, t, (unsigned long long)value);
    if (result != NULL) {
        *result = (int64_t)old;
    }
    return MPI_SUCCESS;
}

/** Atomically replaces the 8-byte word at @p disp of @p target by @p value if it equals
 *  @p compare; the old value goes to *result (when not NULL). */
__device__ static inline int MPIX_Compare_and_swap_device(uint64_t value, uint64_t compare,
                                                          uint64_t *result, int target,
                                                          MPI_Aint disp, MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc;
    unsigned long long old;

    MPIX_Win_target_device(win, target, &tg);
    rc = gpuic_dev_target_addr(&tg, disp, 8, 8, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!tg.atomics_p2p) {
        uint64_t o;

        rc = gpuic_dev_proxy_atomic(&tg, GPUIC_WQE_OP_ATOMIC_CS, value, compare,
                                    (uint64_t)(uintptr_t)t, &o);
        if (rc == MPI_SUCCESS && result != NULL) {
            *result = o;
        }
        return rc;
    }
    old = gpuic_dev_atomic_cas64(win, t, (unsigned long long)compare,
                                 (unsigned long long)value);
    if (result != NULL) {
        *result = (uint64_t)old;
    }
    return MPI_SUCCESS;
}


/* One element of 4 or 8 bytes updated with a compare-and-swap loop (device scope when
 * @p same_gpu, else system scope). */
template <typename T, typename W, bool INTEGER>
__device__ static inline bool gpuic_dev_acc_elem(bool same_gpu, MPIX_Device_op op, T *t,
                                                 T origin, T *old_out)
{
    W *w = (W *)t;
    W cur = *(volatile W *)w, seen;
    T oldv, newv;

    do {
        memcpy(&oldv, &cur, sizeof(T));
        if (!gpuic_dev_combiner<T, INTEGER>::apply(op, origin, oldv, &newv)) {
            return false;
        }
        if (op == MPIX_DEVICE_NO_OP) {
            break;
        }
        W next;
        memcpy(&next, &newv, sizeof(T));
        seen = sizeof(W) == 8
                   ? (W)gpuic_dev_cas64_scoped(same_gpu, w, (unsigned long long)cur,
                                               (unsigned long long)next)
                   : (W)gpuic_dev_cas32_scoped(same_gpu, w, (unsigned int)cur,
                                               (unsigned int)next);
        if (seen == cur) {
            break;
        }
        cur = seen;
    } while (true);
    if (old_out != NULL) {
        *old_out = oldv;
    }
    return true;
}

/* Element @p i of a run of T at @p t, with the matching origin and result elements (either
 * may be absent). */
template <typename T, typename W, bool INTEGER>
__device__ static inline bool gpuic_dev_acc_at(bool same_gpu, MPIX_Device_op op, char *t,
                                               const void *origin, void *result, int64_t i)
{
    return gpuic_dev_acc_elem<T, W, INTEGER>(same_gpu, op, (T *)t + i,
                                             origin ? ((const T *)origin)[i] : (T)0,
                                             result ? (T *)result + i : NULL);
}

/* Updates element @p i of the run at @p t (origin and result elements alike), atomically at
 * the scope @p same_gpu names; false for an op/type mismatch. */
__device__ static inline bool gpuic_dev_acc_one(bool same_gpu, char *t, const void *origin,
                                                void *result, int64_t i, MPIX_Device_type type,
                                                MPIX_Device_op op)
{
    switch (type) {
    case MPIX_DEVICE_INT32:
        return gpuic_dev_acc_at<int32_t, unsigned int, true>(same_gpu, op, t, origin, result, i);
    case MPIX_DEVICE_UINT32:
        return gpuic_dev_acc_at<uint32_t, unsigned int, true>(same_gpu, op, t, origin, result, i);
    case MPIX_DEVICE_INT64:
        return gpuic_dev_acc_at<int64_t, unsigned long long, true>(same_gpu, op, t, origin,
                                                                   result, i);
    case MPIX_DEVICE_UINT64:
        return gpuic_dev_acc_at<uint64_t, unsigned long long, true>(same_gpu, op, t, origin,
                                                                    result, i);
    case MPIX_DEVICE_FLOAT:
        return gpuic_dev_acc_at<float, unsigned int, false>(same_gpu, op, t, origin, result, i);
    case MPIX_DEVICE_DOUBLE:
        return gpuic_dev_acc_at<double, unsigned long long, false>(same_gpu, op, t, origin,
                                                                   result, i);
    default:
        return false;
    }
}

/* Updates elements [first, count) in steps of @p stride, atomically at the scope @p same_gpu
 * names; false for an op/type mismatch. */
__device__ static inline bool gpuic_dev_acc_range_scoped(bool same_gpu, char *t,
                                                         const void *origin, void *result,
                                                         int64_t count, MPIX_Device_type type,
                                                         MPIX_Device_op op, uint64_t first,
                                                         uint64_t stride)
{
    for (int64_t i = (int64_t)first; i < count; i += (int64_t)stride) {
        if (!gpuic_dev_acc_one(same_gpu, t, origin, result, i, type, op)) {
            return false;
        }
    }
    return true;
}

/* gpuic_dev_acc_range_scoped at the scope of @p win's targets. */
__device__ static inline bool gpuic_dev_acc_range(MPIX_Win_device win, char *t,
                                                  const void *origin, void *result,
                                                  int count, MPIX_Device_type type,
                                                  MPIX_Device_op op, unsigned first,
                                                  unsigned stride)
{
    return gpuic_dev_acc_range_scoped(gpuic_dev_all_same_gpu(win), t, origin, result, count,
                                      type, op, first, stride);
}

/* Shared checks of the accumulate calls; *t is the first target element. */
__device__ static inline int gpuic_dev_acc_prepare(int count, MPIX_Device_type type,
                                                   MPIX_Device_op op, int target, MPI_Aint disp,
                                                   MPIX_Win_device win, char **t)
{
    return gpuic_dev_checked(win.desc, gpuic_dev_acc_check(count, type, op, target, disp, win, t));
}

/* True when @p target's accumulates go through the proxy (checked arguments), with *t set. */
__device__ static inline bool gpuic_dev_acc_proxied(MPIX_Win_device win, int target,
                                                    MPIX_Device_target *t)
{
    if (gpuic_dev_peer_load(win, target, MPI_SUCCESS).path != MPIX_GPUIC_DEVICE_PATH_PROXY) {
        return false;
    }
    gpuic_dev_target_resolve(win, target, t);
    return !t->atomics_p2p;
}

/**
 * Accumulates @p count elements of @p type from device memory @p origin into @p target's
 * window at @p disp with @p op, each element atomically.  Complete at the target after a
 * flush.  MPI_ERR_ARG for a bitwise or logical op on a floating-point type.
 */
__device__ static inline int MPIX_Accumulate_device(const void *origin, int count,
                                                    MPIX_Device_type type, MPIX_Device_op op,
                                                    int target, MPI_Aint disp,
                                                    MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc = gpuic_dev_acc_prepare(count, type, op, target, disp, win, &t);

    if (rc == MPI_SUCCESS && gpuic_dev_acc_proxied(win, target, &tg)) {
        return gpuic_dev_proxy_acc(&tg, origin, count, type, op, (uint64_t)(uintptr_t)t);
    }
    if (rc == MPI_SUCCESS && !gpuic_dev_acc_range(win, t, origin, NULL, count, type, op, 0, 1)) {
        rc = gpuic_dev_fail(win.desc, MPI_ERR_ARG);
    }
    return rc;
}

/** MPIX_Accumulate_device by the 32 lanes of a warp together. */
__device__ static inline int MPIX_Accumulate_device_warp(const void *origin, int count,
                                                         MPIX_Device_type type,
                                                         MPIX_Device_op op, int target,
                                                         MPI_Aint disp, MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc = gpuic_dev_acc_prepare(count, type, op, target, disp, win, &t);

    if (rc == MPI_SUCCESS && gpuic_dev_acc_proxied(win, target, &tg)) {
        if (gpuic_dev_lane() == 0) {
            rc = gpuic_dev_proxy_acc(&tg, origin, count, type, op, (uint64_t)(uintptr_t)t);
        }
        __syncwarp();
        return __shfl_sync(0xffffffffu, rc, 0);
    }
    if (rc == MPI_SUCCESS &&
        !gpuic_dev_acc_range(win, t, origin, NULL, count, type, op, gpuic_dev_lane(), 32)) {
        rc = gpuic_dev_fail(win.desc, MPI_ERR_ARG);
    }
    __syncwarp();
    return rc;
}

/** MPIX_Accumulate_device by all threads of a block together (synchronises the block). */
__device__ static inline int MPIX_Accumulate_device_block(const void *origin, int count,
                                                          MPIX_Device_type type,
                                                          MPIX_Device_op op, int target,
                                                          MPI_Aint disp, MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc = gpuic_dev_acc_prepare(count, type, op, target, disp, win, &t);
    __shared__ int proxy_rc;

    if (rc == MPI_SUCCESS && gpuic_dev_acc_proxied(win, target, &tg)) {
        if (gpuic_dev_block_rank() == 0) {
            proxy_rc = gpuic_dev_proxy_acc(&tg, origin, count, type, op, (uint64_t)(uintptr_t)t);
        }
        __syncthreads();
        rc = proxy_rc;
        __syncthreads();
        return rc;
    }
    if (rc == MPI_SUCCESS && !gpuic_dev_acc_range(win, t, origin, NULL, count, type, op,
                                                  gpuic_dev_block_rank(),
                                                  gpuic_dev_block_size())) {
        rc = gpuic_dev_fail(win.desc, MPI_ERR_ARG);
    }
    __syncthreads();
    return rc;
}

/**
 * Fetch-and-op on one element: the old target value goes to *result, the target becomes
 * origin (op) old (MPIX_DEVICE_NO_OP only reads).  Complete on return.
 */
__device__ static inline int MPIX_Fetch_and_op_device(const void *origin, void *result,
                                                      MPIX_Device_type type, MPIX_Device_op op,
                                                      int target, MPI_Aint disp,
                                                      MPIX_Win_device win)
{
    MPIX_Device_target tg;
    char *t;
    int rc = gpuic_dev_acc_prepare(1, type, op, target, disp, win, &t);

    if (rc == MPI_SUCCESS && gpuic_dev_acc_proxied(win, target, &tg)) {
        return gpuic_dev_proxy_fetch_op_at(&tg, (uint64_t)(uintptr_t)t, type, op,
                                           op == MPIX_DEVICE_NO_OP ? NULL : origin, result, 0);
    }
    if (rc == MPI_SUCCESS && !gpuic_dev_acc_range(win, t, op == MPIX_DEVICE_NO_OP ? NULL : origin,
                                                  result, 1, type, op, 0, 1)) {
        rc = gpuic_dev_fail(win.desc, MPI_ERR_ARG);
    }
    return rc;
}

#endif /* MPIX_GPUIC_DEVICE_CUH */
