/*
 * mpix_gpuic_device_check.h - argument and handle checks of the device API (plain C).
 *
 * Every device call of mpix_gpuic_device.cuh decides whether an access is allowed here, and
 * only here: the handle, the rank, the path, the range (without overflow), the alignment, the
 * element type and the operation.  The functions are pure (they read the window's description
 * and write only their out-arguments), compile as host C (gcc, clang) and as CUDA device code,
 * so the same checks run in kernels and in host tests and fuzzers.  Recording an error in the
 * window for the host is left to the caller (mpix_gpuic_device.cuh).
 *
 * The guarantee they give: when a check returns MPI_SUCCESS with an address, every byte the
 * call will touch, [addr, addr + bytes), lies inside the target's window
 * [base, base + size) as the window's description gives it.
 */
#ifndef MPIX_GPUIC_DEVICE_CHECK_H
#define MPIX_GPUIC_DEVICE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "mpix_gpuic_device_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the checks callable from host code and, under nvcc, from device code. */
#ifdef __CUDACC__
#define MPIX_GPUIC_HOST_DEVICE __host__ __device__
#else
#define MPIX_GPUIC_HOST_DEVICE
#endif

/**
 * One target of a window, resolved once: what device calls on it need, in registers.  Hot
 * loops resolve a target with MPIX_Win_target_device() and then call the *_target_device
 * functions, which check only the range (no loads from the window's description).
 */
typedef struct MPIX_Device_target {
    /** The window's description (for error recording); NULL when not a valid handle. */
    MPIX_Gpuic_device_win *desc;
    char     *base;       /**< start of the target's window (MPIX_Gpuic_device_peer.base) */
    uint64_t size;        /**< bytes */
    int32_t  disp_unit;   /**< the target's displacement unit */
    int32_t  status;      /**< MPI_SUCCESS, or the error resolving the target gave */
    bool     same_gpu;    /**< device-scope ordering suffices */
    bool     proxy;       /**< data moves through the window's device queue */
    bool     atomics_p2p; /**< atomics use device atomics on base (see the peer flags) */
    bool     loads;       /**< device code may load from base */
    bool     mapped;      /**< proxy path through a mapping (MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED) */
    uint32_t key;         /**< proxy path: the key-table key of the target's window */
    int32_t  rank;        /**< the target's rank */
    MPIX_Gpuic_device_queue *queue; /**< proxy path: the window's device queue */
} MPIX_Device_target;

/** MPI_SUCCESS when @p win is a handle from MPIX_Win_get_device_handle(), MPI_ERR_WIN
 *  otherwise.  Reads only the handle's value (no memory access). */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_check_win(MPIX_Win_device win)
{
    return (win.desc != NULL && win.magic == MPIX_GPUIC_DEVICE_MAGIC) ? MPI_SUCCESS
                                                                       : MPI_ERR_WIN;
}

/**
 * MPI_SUCCESS when @p win is a live handle and @p target one of its ranks; MPI_ERR_WIN or
 * MPI_ERR_RANK otherwise.
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_check_rank(MPIX_Win_device win, int target)
{
    if (gpuic_dev_check_win(win) != MPI_SUCCESS) {
        return MPI_ERR_WIN;
    }
    if (target < 0 || target >= win.nranks) {
        return MPI_ERR_RANK;
    }
    return MPI_SUCCESS;
}

/*
 * A copy of the description entry of @p target, whose checks (gpuic_dev_check_rank()) returned
 * @p rc: win.desc->peers[target] when they passed, else an entry of zeros (no memory).  The
 * description is written once, when the window is created, and is read-only while device code
 * may use it, so a load made earlier or once for many calls reads what each call would.
 *
 * In device code the entry is loaded by one instruction sequence that repeats the checks on the
 * handle's value and the rank and loads only when they pass.  The compiler sees a pure function
 * of those values: it may share it between calls and hoist it out of loops and above the calls'
 * own checks (a call by rank in a loop then loads its target's entry once, as a resolved target
 * does), and it stays harmless for any rank and handle.  A choice the compiler could see
 * through (rc == MPI_SUCCESS ? entry : zeros) would not: wherever an earlier check of the same
 * target passed, it may drop the choice and then move the bare load above that check.  (Every
 * operand is a register the caller computes: a constant operand, such as the address of a
 * global, keeps the compiler from hoisting the sequence.)
 */
static inline MPIX_GPUIC_HOST_DEVICE MPIX_Gpuic_device_peer
gpuic_dev_peer_load(MPIX_Win_device win, int target, int rc)
{
#ifdef __CUDA_ARCH__
    MPIX_Gpuic_device_peer e;

    static_assert(offsetof(MPIX_Gpuic_device_peer, size) == 8 &&
                      offsetof(MPIX_Gpuic_device_peer, disp_unit) == 16 &&
                      offsetof(MPIX_Gpuic_device_peer, path) == 20 &&
                      offsetof(MPIX_Gpuic_device_peer, flags) == 24 &&
                      offsetof(MPIX_Gpuic_device_peer, key) == 28,
                  "the loads below follow the entry's layout");
    static_assert(MPIX_GPUIC_DEVICE_MAGIC == 0x6770756964657603ULL,
                  "the magic below is MPIX_GPUIC_DEVICE_MAGIC");
    (void)rc;
    asm("{\n\t"
        ".reg .pred ok;\n\t"
        "setp.ne.u64 ok, %7, 0;\n\t"
        "setp.eq.and.u64 ok, %8, 0x6770756964657603, ok;\n\t"
        "setp.ge.and.s32 ok, %9, 0, ok;\n\t"
        "setp.lt.and.s32 ok, %9, %10, ok;\n\t"
        "mov.u64 %0, 0;\n\t"
        "mov.u64 %1, 0;\n\t"
        "mov.u32 %2, 0;\n\t"
        "mov.u32 %3, 0;\n\t"
        "mov.u32 %4, 0;\n\t"
        "mov.u32 %5, 0;\n\t"
        "@ok ld.global.nc.u64 %0, [%6];\n\t"
        "@ok ld.global.nc.u64 %1, [%6+8];\n\t"
        "@ok ld.global.nc.v2.s32 {%2, %3}, [%6+16];\n\t"
        "@ok ld.global.nc.v2.u32 {%4, %5}, [%6+24];\n\t"
        "}"
        : "=&l"(e.base), "=&l"(e.size), "=&r"(e.disp_unit), "=&r"(e.path), "=&r"(e.flags),
          "=&r"(e.key)
        : "l"(&win.desc->peers[target]), "l"(win.desc), "l"(win.magic), "r"(target),
          "r"(win.nranks));
    return e;
#else
    static const MPIX_Gpuic_device_peer none = {0, 0, 0, 0, 0, 0};

    return rc == MPI_SUCCESS ? win.desc->peers[target] : none;
#endif
}

/**
 * Resolves @p target of @p win into *t and returns t->status: MPI_SUCCESS, MPI_ERR_WIN (t->desc
 * is then NULL), MPI_ERR_RANK, MPI_ERR_RMA_RANGE (the target exposes no memory) or
 * MPI_ERR_UNSUPPORTED_OPERATION (the target is not reachable from device code).
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_target_resolve(MPIX_Win_device win,
                                                                  int target,
                                                                  MPIX_Device_target *t)
{
    int rc = gpuic_dev_check_rank(win, target);
    /* Every field of the entry is loaded at once, before any branch (the loads are in flight
     * together: one trip to the cache, not one per branch; where the target does not change,
     * the compiler may load them once for a whole loop): the rest comes with the handle's
     * value. */
    MPIX_Gpuic_device_peer e = gpuic_dev_peer_load(win, target, rc);

    t->desc = rc == MPI_ERR_WIN ? NULL : win.desc;
    t->rank = target;
    t->proxy = false;
    t->mapped = false;
    t->key = 0;
    t->queue = NULL;
    if (rc != MPI_SUCCESS) {
        t->base = NULL;
        t->size = 0;
        t->disp_unit = 1;
        t->same_gpu = false;
        t->atomics_p2p = false;
        t->loads = false;
        return t->status = rc;
    }
    t->size = e.size;
    t->base = (char *)(uintptr_t)e.base;
    t->disp_unit = e.disp_unit;
    t->same_gpu = (win.flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU) != 0;
    t->atomics_p2p = true;
    t->loads = true;
    if (e.path == MPIX_GPUIC_DEVICE_PATH_P2P) {
        return t->status = MPI_SUCCESS;
    }
    if (e.path == MPIX_GPUIC_DEVICE_PATH_PROXY) {
        t->queue = win.queue;
    }
    if (t->queue == NULL) {
        t->base = NULL;
        t->disp_unit = 1;
        t->same_gpu = false;
        t->atomics_p2p = false;
        t->loads = false;
        return t->status = t->size == 0 ? MPI_ERR_RMA_RANGE : MPI_ERR_UNSUPPORTED_OPERATION;
    }
    t->proxy = true;
    t->atomics_p2p = (e.flags & MPIX_GPUIC_DEVICE_PEER_ATOMICS_P2P) != 0;
    t->loads = (e.flags & MPIX_GPUIC_DEVICE_PEER_LOADS) != 0;
    t->mapped = (e.flags & MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED) != 0;
    t->key = e.key;
    return t->status = MPI_SUCCESS;
}

/**
 * *t for a flush of @p target of @p win on the proxy path (its queue non-NULL), from the
 * target's @p flags the caller loaded: what gpuic_dev_target_resolve() gives such a target but
 * the fields a transfer needs (base, size, displacement unit, key), left empty.
 */
static inline MPIX_GPUIC_HOST_DEVICE void gpuic_dev_target_for_flush(MPIX_Win_device win,
                                                                     int target, uint32_t flags,
                                                                     MPIX_Device_target *t)
{
    t->desc = win.desc;
    t->rank = target;
    t->status = MPI_SUCCESS;
    t->base = NULL;
    t->size = 0;
    t->disp_unit = 1;
    t->key = 0;
    t->queue = win.queue;
    t->proxy = true;
    t->same_gpu = (win.flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU) != 0;
    t->atomics_p2p = (flags & MPIX_GPUIC_DEVICE_PEER_ATOMICS_P2P) != 0;
    t->loads = (flags & MPIX_GPUIC_DEVICE_PEER_LOADS) != 0;
    t->mapped = (flags & MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED) != 0;
}

/**
 * The address of (@p disp, @p bytes) in a resolved target: MPI_SUCCESS with *addr, the
 * target's own status when it did not resolve, MPI_ERR_RMA_RANGE when the access leaves the
 * window (a negative displacement, disp * disp_unit overflowing, or past the end) and
 * MPI_ERR_ARG when *addr is not a multiple of @p align (a power of two; 1 for plain data).
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_target_range(const MPIX_Device_target *t,
                                                                MPI_Aint disp, size_t bytes,
                                                                size_t align, char **addr)
{
    /* disp * disp_unit as two 32 x 32 -> 64-bit multiplies and an add, with no branch: the
     * product does not fit when the high part has bits above 32 or the add carries.  A
     * negative unit counts as its 64-bit sign extension: times 0 or 1 it fits (times 1 it is
     * the extended unit itself), times anything larger it does not.  A chain of 64-bit
     * multiplies here held every call's load or store back (docs/performance.md, "Device
     * calls"). */
    uint64_t ud = (uint64_t)disp, unit = (uint32_t)t->disp_unit;
    uint64_t lo = (ud & 0xffffffffu) * unit, hi = (ud >> 32) * unit;
    uint64_t offset = lo + (hi << 32);
    bool negative = t->disp_unit < 0;
    bool overflow = (hi >> 32) != 0 || offset < lo || (negative && ud > 1);

    offset -= (uint64_t)(negative && ud == 1) << 32;

    if (t->status != MPI_SUCCESS) {
        return t->status;
    }
    if (disp < 0 || overflow || offset > t->size || bytes > t->size - offset) {
        return MPI_ERR_RMA_RANGE;
    }
    *addr = t->base + offset;
    if (((uintptr_t)*addr & (align - 1)) != 0) {
        return MPI_ERR_ARG;
    }
    return MPI_SUCCESS;
}

/**
 * The data (@p disp, @p bytes) and the 8-byte, 8-aligned signal word at @p sig_disp of a
 * put-with-signal, both in the resolved target: the classes of gpuic_dev_target_range().
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_target_signal(const MPIX_Device_target *t,
                                                                 MPI_Aint disp, size_t bytes,
                                                                 MPI_Aint sig_disp, char **dst,
                                                                 char **sig)
{
    int rc = gpuic_dev_target_range(t, disp, bytes, 1, dst);

    if (rc == MPI_SUCCESS) {
        rc = gpuic_dev_target_range(t, sig_disp, 8, 8, sig);
    }
    return rc;
}

/** MPI_SUCCESS when @p cmp is an MPIX_Device_cmp, MPI_ERR_ARG otherwise. */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_check_cmp(MPIX_Device_cmp cmp)
{
    return (unsigned)cmp > MPIX_DEVICE_CMP_LE ? MPI_ERR_ARG : MPI_SUCCESS;
}

/** Bytes of one element of @p type (an MPIX_Device_type; 8 for any other value). */
static inline MPIX_GPUIC_HOST_DEVICE size_t gpuic_dev_type_size(MPIX_Device_type type)
{
    return (type == MPIX_DEVICE_INT32 || type == MPIX_DEVICE_UINT32 || type == MPIX_DEVICE_FLOAT)
               ? 4
               : 8;
}

/**
 * MPI_SUCCESS when @p count elements of @p type can be combined with @p op: a known type and
 * op, a non-negative count, and no bitwise or logical op on a floating-point type;
 * MPI_ERR_ARG otherwise.
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_check_acc(int count, MPIX_Device_type type,
                                                             MPIX_Device_op op)
{
    if ((unsigned)type > MPIX_DEVICE_DOUBLE || (unsigned)op > MPIX_DEVICE_NO_OP || count < 0 ||
        ((type == MPIX_DEVICE_FLOAT || type == MPIX_DEVICE_DOUBLE) && op >= MPIX_DEVICE_BAND &&
         op <= MPIX_DEVICE_LXOR)) {
        return MPI_ERR_ARG;
    }
    return MPI_SUCCESS;
}

/**
 * The checks of an accumulate or fetch-and-op call on @p target of @p win: the handle, the
 * arguments (gpuic_dev_check_acc), then the target and the range of @p count elements at
 * @p disp, aligned to the element size.  MPI_SUCCESS with *t the first target element, or the
 * error class.
 */
static inline MPIX_GPUIC_HOST_DEVICE int gpuic_dev_acc_check(int count, MPIX_Device_type type,
                                                             MPIX_Device_op op, int target,
                                                             MPI_Aint disp, MPIX_Win_device win,
                                                             char **t)
{
    MPIX_Device_target res;
    size_t esize = gpuic_dev_type_size(type);
    int rc = gpuic_dev_check_win(win);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = gpuic_dev_check_acc(count, type, op);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    gpuic_dev_target_resolve(win, target, &res);
    return gpuic_dev_target_range(&res, disp, (size_t)count * esize, esize, t);
}

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_DEVICE_CHECK_H */
