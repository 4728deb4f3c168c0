/*
 * The kernels behind the stream-triggered calls (MPIX_*_enqueue, osc_gpuic_stream_rma.c and
 * osc_gpuic_stream_epoch.c).  nvcc builds them into a fatbin that is embedded in the component
 * and loaded once per context with cuModuleLoadData; the host code launches them through the
 * run-time-loaded driver (cuLaunchKernelEx with programmatic dependent launch where it can,
 * else cuLaunchKernel; osc_gpuic_stream_launch.c), so the component links no CUDA library.
 *
 * Each kernel is one enqueued call, and its body is made of device-API calls
 * (mpix_gpuic_device.cuh) on the window's device handle: whatever path the device API serves
 * for a target, the enqueued call takes it.  Synchronization kernels use the device API too, on
 * a second handle that describes the window's sync blocks (mpix_gpuic_stream_layout.h) as a
 * byte-addressed window: signals are 0-byte put-with-signal (a release store), waits are
 * MPIX_Signal_wait_until_device on this process's own block (an acquire load).
 *
 * Kernels only read their arguments and the counters of their own sync block, so a stream
 * capture records them as they are and a graph may replay them any number of times.
 *
 * Every kernel begins with gpuic_dev_stream_prologue() or gpuic_dev_stream_prologue_waiting()
 * (programmatic dependent launch, below).
 */
#include <stddef.h>
#include <stdint.h>

#include "mpix_gpuic_device.cuh"
#include "mpix_gpuic_stream_layout.h"

typedef mpix_gpuic_stream_rma_args_t rma_args_t;
typedef mpix_gpuic_acc_args_t acc_args_t;
typedef mpix_gpuic_stream_sync_args_t sync_args_t;

/* ---------------------------------------------------------------------------------------- */
/* Programmatic dependent launch (PDL).                                                      */

/*
 * Compiled for sm_90 or newer, the kernels are launched with
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (osc_gpuic_stream_launch.c decides by
 * the architecture of the loaded code, MPIX_GPUIC_STREAM_PDL_ARCH; osc_gpuic_stream_pdl=0 turns
 * it off):
 * such a kernel may be scheduled as soon as the kernel ahead of it on the stream has triggered
 * its dependents (griddepcontrol.launch_dependents in every block, or all its blocks exited),
 * which hides the launch latency behind the previous kernel's end.  That changes nothing either
 * observer of a kernel's boundary can see:
 *
 *  - The kernel itself.  Its threads execute griddepcontrol.wait before anything else, and it
 *    returns once every prerequisite grid has completed and its memory operations are performed
 *    and visible to this grid: what a plain launch guarantees at the kernel's first
 *    instruction.  Only the trigger comes before it, and the trigger accesses no memory.
 *  - The work after it on the stream.  The trigger only lets the next kernel be scheduled
 *    early.  If that kernel is one of these, launched with the attribute, it waits in its own
 *    prologue for this one to complete; anything else (a program's kernel launched without the
 *    attribute, a copy, an event, a host synchronization, the next graph launch) keeps full
 *    stream serialization and starts after this kernel has completed, so the kernel boundary
 *    the flush and completion rules rely on (docs/streams.md) is where it was.
 *
 * Launched without the attribute (older drivers, osc_gpuic_stream_pdl=0) or with no kernel ahead,
 * both instructions do nothing; compiled for an older architecture they are left out, and the
 * component then launches without the attribute (a wait must never be missing under it).
 *
 * The one thing an early dependent costs is room: its blocks are resident, holding registers and
 * thread slots, while they wait.  Harmless behind a kernel that completes on its own (the
 * trigger fires only once all of that kernel's blocks have started, so they are not crowded
 * out).  Not behind a kernel that waits for another process's kernel: a peer sharing the GPU
 * (MPS) could find no room for the kernel that would signal us while our dependent holds it,
 * waiting for us.  Fence, start and wait therefore begin with gpuic_dev_stream_prologue_waiting()
 * and trigger (gpuic_dev_stream_trigger()) only after their last wait for a peer.  Kernels that
 * wait for the proxy thread (proxy-path flushes and atomics) wait for the host, which needs no
 * room on the GPU.
 */
__device__ static inline void gpuic_dev_stream_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= MPIX_GPUIC_STREAM_PDL_ARCH * 10
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Waits until the kernels ahead on the stream have completed and their writes are visible. */
__device__ static inline void gpuic_dev_stream_wait_prior(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= MPIX_GPUIC_STREAM_PDL_ARCH * 10
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* The start of a kernel that completes without waiting for another process. */
__device__ static inline void gpuic_dev_stream_prologue(void)
{
    gpuic_dev_stream_trigger();
    gpuic_dev_stream_wait_prior();
}

/* The start of a kernel that waits for other processes (fence, start, wait): it triggers its
 * dependents itself once those waits are over. */
__device__ static inline void gpuic_dev_stream_prologue_waiting(void)
{
    gpuic_dev_stream_wait_prior();
}

/* The value, in bytes, of word @p index of a sync block: displacements on the sync handle. */
__device__ static inline MPI_Aint sync_disp(size_t index)
{
    return (MPI_Aint)(index * sizeof(uint64_t));
}

__device__ static inline bool group_has(const sync_args_t &a, int r)
{
    return r < MPIX_GPUIC_STREAM_GROUP_MAX && ((a.group[r >> 6] >> (r & 63)) & 1u) != 0;
}

/* Rank @p r's sync block as mapped here: from the arguments for the first ranks, else from the
 * device array (the host refuses calls naming a rank without a block). */
__device__ static inline uint64_t *sync_block(const sync_args_t &a, int r)
{
    return r < MPIX_GPUIC_STREAM_INLINE_BLOCKS ? a.blocks[r] : a.blocks_dev[r];
}

/*
 * Publishes @p value in word @p index of rank @p r's sync block.  Orders everything this
 * thread, and the kernels before it on the stream, wrote into any window (the producer side)
 * before the word as seen by rank r's synchronization kernel that waits on it with sync_wait
 * (the consumer side).  A block mapped here: a release store, system scope unless every block
 * is on this GPU; the host resolved its address when it described the window, so this is the
 * store alone (the device API's put-with-signal would check the handle and the range on every
 * call).  A block of another node: a 0-byte put-with-signal through the proxy, which writes the
 * word with UCX after everything posted before it (the callers flushed the window's data to
 * the targets first, where the epoch needs it) and after this kernel's earlier stores.
 */
__device__ static inline void sync_signal(const sync_args_t &a, int r, size_t index,
                                          uint64_t value)
{
    uint64_t *block = sync_block(a, r);

    if (block == NULL) {
        (void)MPIX_Put_signal_device(NULL, 0, r, 0, sync_disp(index), value,
                                     MPIX_DEVICE_SIGNAL_SET, a.sync);
        return;
    }
    gpuic_dev_signal_release((a.flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0, block + index, value,
                             false);
}

/*
 * Waits until word @p index of this process's own sync block reaches @p value: the acquire side
 * of sync_signal, so this thread, and the kernels after it on the stream, see what the
 * signalling process wrote before its signal.
 */
__device__ static inline void sync_wait(const sync_args_t &a, size_t index, uint64_t value)
{
    bool same_gpu = (a.flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0;

    while (gpuic_dev_load_acquire_signal(a.own + index, same_gpu) < value) {
    }
}

/*
 * What every epoch-closing kernel (fence, unlock_all, complete) owes before it signals: the
 * release fence of a flush, and the device queue drained when the window has proxy targets.
 */
__device__ static inline void sync_flush_all(const sync_args_t &a)
{
    if (a.flags & MPIX_GPUIC_STREAM_PROXY) {
        (void)MPIX_Win_flush_all_device(a.win);
    } else {
        gpuic_dev_fence_data_to_peer((a.flags & MPIX_GPUIC_STREAM_DATA_SAME_GPU) != 0);
    }
}

/*
 * Ends every RMA kernel, by every thread that wrote: the release fence a flush would make,
 * made by the writing thread itself.  With the kernel boundary after it (an event, the next
 * kernel, the host), a P2P operation is complete at the target when its kernel is, so an
 * enqueued flush that follows only P2P operations has nothing left to do
 * (osc_gpuic_stream_rma.c launches nothing for it).  Proxy-path operations are only posted
 * here; their flush still runs a kernel that waits for the proxy.
 */
__device__ static inline void rma_complete(uint32_t flags)
{
    gpuic_dev_fence_data_to_peer((flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Communication: each block moves its chunk, all threads of the block together.             */

extern "C" __global__ void mpix_gpuic_k_put(rma_args_t a)
{
    gpuic_dev_stream_prologue();

    uint64_t off = (uint64_t)blockIdx.x * a.chunk;

    if (off < a.bytes) {
        uint64_t len = a.bytes - off < a.chunk ? a.bytes - off : a.chunk;

        (void)MPIX_Put_device_block((const char *)(uintptr_t)a.origin + off, len, a.target,
                                    a.disp + (int64_t)blockIdx.x * a.chunk_disp, a.win);
    }
    rma_complete(a.flags);
}

extern "C" __global__ void mpix_gpuic_k_get(rma_args_t a)
{
    gpuic_dev_stream_prologue();

    uint64_t off = (uint64_t)blockIdx.x * a.chunk;

    if (off < a.bytes) {
        uint64_t len = a.bytes - off < a.chunk ? a.bytes - off : a.chunk;

        (void)MPIX_Get_device_block((char *)(uintptr_t)a.result + off, len, a.target,
                                    a.disp + (int64_t)blockIdx.x * a.chunk_disp, a.win);
    }
}

extern "C" __global__ void mpix_gpuic_k_acc(rma_args_t a)
{
    gpuic_dev_stream_prologue();
    (void)MPIX_Accumulate_device_block((const void *)(uintptr_t)a.origin, a.count,
                                       (MPIX_Device_type)a.type, (MPIX_Device_op)a.op, a.target,
                                       a.disp, a.win);
    rma_complete(a.flags);
}

extern "C" __global__ void mpix_gpuic_k_fop(rma_args_t a)
{
    gpuic_dev_stream_prologue();
    (void)MPIX_Fetch_and_op_device((const void *)(uintptr_t)a.origin,
                                   (void *)(uintptr_t)a.result, (MPIX_Device_type)a.type,
                                   (MPIX_Device_op)a.op, a.target, a.disp, a.win);
    rma_complete(a.flags);
}

extern "C" __global__ void mpix_gpuic_k_cas(rma_args_t a)
{
    gpuic_dev_stream_prologue();

    /* read after the prologue: a kernel ahead on the stream may produce them */
    uint64_t value = *(const volatile uint64_t *)(uintptr_t)a.origin;
    uint64_t compare = *(const volatile uint64_t *)(uintptr_t)a.compare;

    (void)MPIX_Compare_and_swap_device(value, compare, (uint64_t *)(uintptr_t)a.result,
                                       a.target, a.disp, a.win);
    rma_complete(a.flags);
}

/*
 * A put or get of at most MPIX_GPUIC_STREAM_SMALL_BYTES to a P2P target, by one warp, between
 * addresses the host resolved and checked against the target's window at enqueue time: no
 * handle loads before the copy, which is what a small enqueued put waits for otherwise.
 */
extern "C" __global__ void mpix_gpuic_k_copy_small(mpix_gpuic_stream_copy_args_t a)
{
    gpuic_dev_stream_prologue();
    gpuic_dev_copy((char *)(uintptr_t)a.dst, (const char *)(uintptr_t)a.src, a.bytes,
                   threadIdx.x, blockDim.x);
    rma_complete(a.flags);
}

/*
 * A large copy between two device buffers of this GPU for a host MPI_Put or MPI_Get (the
 * window's mapping of a same-node peer's memory, or our own), by the whole grid: loads and
 * stores through the mapping run at the memory's bandwidth, where the driver's copy between
 * an IPC mapping and device memory does not (docs/performance.md, CUDA-aware host RMA).
 */
extern "C" __global__ void mpix_gpuic_k_copy_bulk(mpix_gpuic_stream_copy_args_t a)
{
    gpuic_dev_stream_prologue();
    gpuic_dev_copy_team<4>((char *)(uintptr_t)a.dst, (const char *)(uintptr_t)a.src, a.bytes,
                           blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

/* ---------------------------------------------------------------------------------------- */
/* Completion.                                                                              */

/* The flushes take the small RMA argument block: a put + flush pair copies less per launch. */
extern "C" __global__ void mpix_gpuic_k_flush(rma_args_t a)
{
    gpuic_dev_stream_prologue();
    (void)MPIX_Win_flush_device(a.target, a.win);
}

extern "C" __global__ void mpix_gpuic_k_flush_all(rma_args_t a)
{
    gpuic_dev_stream_prologue();
    (void)MPIX_Win_flush_all_device(a.win);
}

extern "C" __global__ void mpix_gpuic_k_flush_local(rma_args_t a)
{
    gpuic_dev_stream_prologue();
    (void)MPIX_Win_flush_local_device(a.target, a.win);
}

/* ---------------------------------------------------------------------------------------- */
/* Epochs.  Thread t serves ranks t, t + blockDim.x, ...; every thread flushes before it      */
/* signals, so each signal is a release of the data the previous kernels wrote.              */

/*
 * Fence: flush everything, announce epoch e to every process, wait until every process has
 * announced e.  e is this process's own epoch counter, incremented here: a replayed graph
 * waits for the next value each time.
 */
/* The counters of this process's own block (epoch, posts_to, ...) are read and written only by
 * its own synchronization kernels, which one stream orders: plain volatile accesses suffice. */

extern "C" __global__ void mpix_gpuic_k_fence(sync_args_t a)
{
    gpuic_dev_stream_prologue_waiting();

    __shared__ uint64_t epoch;
    volatile uint64_t *counter = a.own + MPIX_GPUIC_SYNC_EPOCH(a.nranks);

    if (threadIdx.x == 0) {
        epoch = *counter + 1;
        *counter = epoch;
    }
    __syncthreads();
    sync_flush_all(a);
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        sync_signal(a, r, MPIX_GPUIC_SYNC_FENCE(a.nranks, a.rank), epoch);
    }
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        sync_wait(a, MPIX_GPUIC_SYNC_FENCE(a.nranks, r), epoch);
    }
    __syncthreads();
    gpuic_dev_stream_trigger();
}

/* Post: tell each origin of the group that this process's window is exposed to it. */
extern "C" __global__ void mpix_gpuic_k_post(sync_args_t a)
{
    gpuic_dev_stream_prologue();
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            volatile uint64_t *c = a.own + MPIX_GPUIC_SYNC_POSTS_TO(a.nranks, r);
            uint64_t v = *c + 1;

            *c = v;
            sync_signal(a, r, MPIX_GPUIC_SYNC_POST(a.nranks, a.rank), v);
        }
    }
}

/* Start: wait for the matching post of each target of the group. */
extern "C" __global__ void mpix_gpuic_k_start(sync_args_t a)
{
    gpuic_dev_stream_prologue_waiting();
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            volatile uint64_t *c = a.own + MPIX_GPUIC_SYNC_STARTS_FROM(a.nranks, r);
            uint64_t v = *c + 1;

            *c = v;
            sync_wait(a, MPIX_GPUIC_SYNC_POST(a.nranks, r), v);
        }
    }
    __syncthreads();
    gpuic_dev_stream_trigger();
}

/* Complete: flush, then tell each target of the start group that this origin is done. */
extern "C" __global__ void mpix_gpuic_k_complete(sync_args_t a)
{
    gpuic_dev_stream_prologue();
    sync_flush_all(a);
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            volatile uint64_t *c = a.own + MPIX_GPUIC_SYNC_COMPLETES_TO(a.nranks, r);
            uint64_t v = *c + 1;

            *c = v;
            sync_signal(a, r, MPIX_GPUIC_SYNC_COMPLETE(a.nranks, a.rank), v);
        }
    }
}

/* Wait: wait for the matching complete of each origin of the post group. */
extern "C" __global__ void mpix_gpuic_k_wait(sync_args_t a)
{
    gpuic_dev_stream_prologue_waiting();
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            volatile uint64_t *c = a.own + MPIX_GPUIC_SYNC_WAITS_FROM(a.nranks, r);
            uint64_t v = *c + 1;

            *c = v;
            sync_wait(a, MPIX_GPUIC_SYNC_COMPLETE(a.nranks, r), v);
        }
    }
    __syncthreads();
    gpuic_dev_stream_trigger();
}

/*
 * Lock_all: become a shared holder of each target's window (its lock word counts enqueued
 * shared holders).  Shared access is all enqueued epochs take, so nothing waits here; the count
 * lets unlock_all detect an unlock without its lock, which a wrongly built graph can cause.
 */
extern "C" __global__ void mpix_gpuic_k_lock_all(sync_args_t a)
{
    gpuic_dev_stream_prologue();
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            (void)MPIX_Fetch_and_add_device(1, NULL, r, sync_disp(MPIX_GPUIC_SYNC_LOCK(a.nranks)),
                                            a.sync);
        }
    }
}

/* Unlock_all: complete everything at the targets, then give the shared holds back. */
extern "C" __global__ void mpix_gpuic_k_unlock_all(sync_args_t a)
{
    gpuic_dev_stream_prologue();
    sync_flush_all(a);
    for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
        if (group_has(a, r)) {
            int64_t old = 0;

            if (MPIX_Fetch_and_add_device(-1, &old, r, sync_disp(MPIX_GPUIC_SYNC_LOCK(a.nranks)),
                                          a.sync) == MPI_SUCCESS &&
                old <= 0) {
                /* undo, and report the unmatched unlock at the next host synchronization */
                (void)MPIX_Fetch_and_add_device(1, NULL, r,
                                                sync_disp(MPIX_GPUIC_SYNC_LOCK(a.nranks)),
                                                a.sync);
                (void)gpuic_dev_fail(a.win.desc, MPI_ERR_RMA_SYNC);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Host accumulate-family calls on GPU windows (osc_gpuic_gpu_acc.c).                         */

/*
 * These are not stream-ordered calls: the host launches them on the window's own stream and
 * waits for them (the prologue only keeps programmatic dependent launch correct).  Every element is one device atomic (a native add
 * or exchange where there is one, else the device API's compare-and-swap loop), so the call is
 * element-wise atomic with the device API's atomics on the same elements and with other such
 * calls.  Scope: device scope only when every accessor of the window is on this GPU.
 */

template <typename T> __device__ static inline T host_acc_add(bool same_gpu, T *t, T v)
{
    return same_gpu ? atomicAdd(t, v) : atomicAdd_system(t, v);
}

template <typename T> __device__ static inline T host_acc_exch(bool same_gpu, T *t, T v)
{
    return same_gpu ? atomicExch(t, v) : atomicExch_system(t, v);
}

/* One native atomic (A: add or exchange) on the element at @p t with the origin element;
 * the result element, when there is one, receives the old value. */
template <typename T, T (*A)(bool, T *, T)>
__device__ static inline void host_acc_native(bool same_gpu, char *t, const char *origin,
                                              char *result)
{
    T v, old;

    memcpy(&v, origin, sizeof(T));
    old = A(same_gpu, (T *)t, v);
    if (result != NULL) {
        memcpy(result, &old, sizeof(T));
    }
}

/* Bytes of an element of @p type (MPIX_Device_type or MPIX_GPUIC_ACC_*). */
__device__ static inline size_t host_acc_esize(int type)
{
    switch (type) {
    case MPIX_GPUIC_ACC_INT8:
    case MPIX_GPUIC_ACC_UINT8:
        return 1;
    case MPIX_GPUIC_ACC_INT16:
    case MPIX_GPUIC_ACC_UINT16:
        return 2;
    case MPIX_DEVICE_INT32:
    case MPIX_DEVICE_UINT32:
    case MPIX_DEVICE_FLOAT:
        return 4;
    default:
        return 8;
    }
}

/* An 8- or 16-bit integer element at @p t, by compare-and-swap on the aligned 32-bit word
 * holding it (little-endian: the element is at byte t % 4 of the word); the word's other
 * bytes are written back as read. */
template <typename T, typename U>
__device__ static inline void host_acc_sub(bool same_gpu, MPIX_Device_op op, char *t,
                                           const char *origin, char *result)
{
    unsigned int *w = (unsigned int *)((uintptr_t)t & ~(uintptr_t)3);
    unsigned int shift = (unsigned int)((uintptr_t)t & 3) * 8;
    unsigned int mask = (unsigned int)(U)~(U)0 << shift;
    unsigned int cur = *(volatile unsigned int *)w, seen;
    T o = 0, oldv, newv;

    if (origin != NULL) {
        memcpy(&o, origin, sizeof(T));
    }
    for (;;) {
        oldv = (T)(U)(cur >> shift);
        (void)gpuic_dev_combiner<T, true>::apply(op, o, oldv, &newv);
        if (op == MPIX_DEVICE_NO_OP) {
            break;
        }
        seen = gpuic_dev_cas32_scoped(same_gpu, w, cur,
                                      (cur & ~mask) | ((unsigned int)(U)newv << shift));
        if (seen == cur) {
            break;
        }
        cur = seen;
    }
    if (result != NULL) {
        memcpy(result, &oldv, sizeof(T));
    }
}

/* Combines packed element @p p into the target element at @p t. */
__device__ static inline void host_acc_elem(const acc_args_t &a, bool same_gpu, char *t,
                                            uint64_t p)
{
    MPIX_Device_type type = (MPIX_Device_type)a.type;
    MPIX_Device_op op = (MPIX_Device_op)a.op;
    size_t esize = host_acc_esize(a.type);
    const char *origin = a.origin != 0 ? (const char *)(uintptr_t)a.origin + p * esize : NULL;
    char *result = a.result != 0 ? (char *)(uintptr_t)a.result + p * esize : NULL;

    switch (a.type) {
    case MPIX_GPUIC_ACC_INT8:
        host_acc_sub<int8_t, uint8_t>(same_gpu, op, t, origin, result);
        return;
    case MPIX_GPUIC_ACC_UINT8:
        host_acc_sub<uint8_t, uint8_t>(same_gpu, op, t, origin, result);
        return;
    case MPIX_GPUIC_ACC_INT16:
        host_acc_sub<int16_t, uint16_t>(same_gpu, op, t, origin, result);
        return;
    case MPIX_GPUIC_ACC_UINT16:
        host_acc_sub<uint16_t, uint16_t>(same_gpu, op, t, origin, result);
        return;
    default:
        break;
    }

    if (origin != NULL && op == MPIX_DEVICE_SUM) {
        switch (type) {
        case MPIX_DEVICE_INT32:
        case MPIX_DEVICE_UINT32:
            host_acc_native<unsigned int, host_acc_add<unsigned int>>(same_gpu, t, origin,
                                                                      result);
            return;
        case MPIX_DEVICE_INT64:
        case MPIX_DEVICE_UINT64:
            host_acc_native<unsigned long long, host_acc_add<unsigned long long>>(same_gpu, t,
                                                                                  origin, result);
            return;
        case MPIX_DEVICE_FLOAT:
            host_acc_native<float, host_acc_add<float>>(same_gpu, t, origin, result);
            return;
        case MPIX_DEVICE_DOUBLE:
            host_acc_native<double, host_acc_add<double>>(same_gpu, t, origin, result);
            return;
        }
    }
    if (origin != NULL && op == MPIX_DEVICE_REPLACE) {
        if (esize == 4) {
            host_acc_native<unsigned int, host_acc_exch<unsigned int>>(same_gpu, t, origin,
                                                                       result);
        } else {
            host_acc_native<unsigned long long, host_acc_exch<unsigned long long>>(
                same_gpu, t, origin, result);
        }
        return;
    }
    /* the host maps only op/type pairs the combiner takes, so this cannot fail */
    (void)gpuic_dev_acc_one(same_gpu, t, origin, result, 0, type, op);
}

/*
 * Accumulate, get_accumulate or fetch_and_op: without runs, count elements from a.target, one
 * per thread of the grid; with runs, a block per run.
 */
extern "C" __global__ void mpix_gpuic_k_host_acc(acc_args_t a)
{
    gpuic_dev_stream_prologue();

    bool same_gpu = (a.flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0;
    size_t esize = host_acc_esize(a.type);

    if (a.runs == 0) {
        uint64_t stride = (uint64_t)gridDim.x * blockDim.x;

        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.count;
             i += stride) {
            host_acc_elem(a, same_gpu, (char *)(uintptr_t)a.target + i * esize, i);
        }
        return;
    }
    const mpix_gpuic_acc_run_t *runs = (const mpix_gpuic_acc_run_t *)(uintptr_t)a.runs;

    for (uint32_t r = blockIdx.x; r < a.nruns; r += gridDim.x) {
        mpix_gpuic_acc_run_t run = runs[r];

        for (uint64_t i = threadIdx.x; i < run.count; i += blockDim.x) {
            host_acc_elem(a, same_gpu, (char *)(uintptr_t)run.target + i * esize, run.first + i);
        }
    }
}

/* Compare-and-swap of one element of 1, 2, 4 or 8 bytes (@p type's size); elements of 1 and
 * 2 bytes by compare-and-swap on the aligned 32-bit word holding them. */
__device__ static inline void host_cas(bool same_gpu, int type, uint64_t target, uint64_t origin,
                                       uint64_t compare, uint64_t result)
{
    void *t = (void *)(uintptr_t)target;
    size_t esize = host_acc_esize(type);

    if (esize < 4) {
        unsigned int *w = (unsigned int *)(target & ~(uint64_t)3);
        unsigned int shift = (unsigned int)(target & 3) * 8;
        unsigned int mask = (esize == 1 ? 0xffu : 0xffffu) << shift;
        unsigned int v = 0, c = 0, cur = *(volatile unsigned int *)w, seen;

        memcpy(&v, (const void *)(uintptr_t)origin, esize);
        memcpy(&c, (const void *)(uintptr_t)compare, esize);
        while (((cur & mask) >> shift) == c) {
            seen = gpuic_dev_cas32_scoped(same_gpu, w, cur, (cur & ~mask) | (v << shift));
            if (seen == cur) {
                break;
            }
            cur = seen;
        }
        c = (cur & mask) >> shift;
        memcpy((void *)(uintptr_t)result, &c, esize);
    } else if (esize == 4) {
        unsigned int v = *(const unsigned int *)(uintptr_t)origin;
        unsigned int c = *(const unsigned int *)(uintptr_t)compare;

        *(unsigned int *)(uintptr_t)result = gpuic_dev_cas32_scoped(same_gpu, t, c, v);
    } else {
        unsigned long long v = *(const unsigned long long *)(uintptr_t)origin;
        unsigned long long c = *(const unsigned long long *)(uintptr_t)compare;

        *(unsigned long long *)(uintptr_t)result = gpuic_dev_cas64_scoped(same_gpu, t, c, v);
    }
}

/* Compare-and-swap of one element, by one thread. */
extern "C" __global__ void mpix_gpuic_k_host_cas(acc_args_t a)
{
    gpuic_dev_stream_prologue();
    host_cas((a.flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0, a.type, a.target, a.origin, a.compare,
             a.result);
}

/* ---------------------------------------------------------------------------------------- */
/* The window agent (mpix_gpuic_stream_layout.h has its protocol; osc_gpuic_gpu_agent.c).    */

/* The host's command and state words: acquire loads and release stores at system scope,
 * which order the command's fields and inline bytes (host stores before its seq store) before
 * the agent's reads of them, and the command's writes before done for the host. */
__device__ static inline uint64_t agent_load_acquire(const uint64_t *word)
{
    uint64_t v;

    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    return v;
}

__device__ static inline void agent_store_release(uint64_t *word, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
}

__device__ static inline uint64_t agent_now(void)
{
    uint64_t t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Where a command's operand at @p addr is read from: its copy in @p copy when @p addr points
 * into the inline bytes of @p slot (the host's mapped slot), else @p addr itself. */
__device__ static inline uint64_t agent_src(const mpix_gpuic_agent_cmd_t *slot,
                                            const mpix_gpuic_agent_cmd_t *copy, uint64_t addr)
{
    uint64_t off = addr - (uint64_t)(uintptr_t)slot->data;

    return off < MPIX_GPUIC_AGENT_INLINE ? (uint64_t)(uintptr_t)(copy->data + off) : addr;
}

/* Executes command @p c (the warp's copy of @p slot) with the 32 lanes of the warp: operands
 * are read from the copy, results written where the command says (the slot for inline ones). */
__device__ static inline void agent_exec(const mpix_gpuic_agent_cmd_t *slot,
                                         const mpix_gpuic_agent_cmd_t *c, unsigned lane)
{
    bool same_gpu = (c->flags & MPIX_GPUIC_STREAM_SAME_GPU) != 0;

    switch (c->what) {
    case MPIX_GPUIC_AGENT_PUT:
        gpuic_dev_copy((char *)(uintptr_t)c->target,
                       (const char *)(uintptr_t)agent_src(slot, c, c->origin), c->count, lane, 32);
        break;
    case MPIX_GPUIC_AGENT_GET:
        gpuic_dev_copy((char *)(uintptr_t)c->result, (const char *)(uintptr_t)c->target,
                       c->count, lane, 32);
        break;
    case MPIX_GPUIC_AGENT_ACC: {
        acc_args_t a;
        size_t esize = host_acc_esize(c->type);

        a.origin = c->origin != 0 ? agent_src(slot, c, c->origin) : 0;
        a.result = c->result;
        a.type = c->type;
        a.op = c->op;
        for (uint64_t i = lane; i < c->count; i += 32) {
            host_acc_elem(a, same_gpu, (char *)(uintptr_t)c->target + i * esize, i);
        }
        break;
    }
    case MPIX_GPUIC_AGENT_CAS:
        if (lane == 0) {
            host_cas(same_gpu, c->type, c->target, agent_src(slot, c, c->origin),
                     agent_src(slot, c, c->compare), c->result);
        }
        break;
    default:
        break;
    }
}

static_assert(MPIX_GPUIC_AGENT_TAGGED_WORDS == 32, "one tagged word per lane");
static_assert(offsetof(mpix_gpuic_agent_cmd_t, data) - offsetof(mpix_gpuic_agent_cmd_t, what) ==
                  MPIX_GPUIC_AGENT_TAGGED_FIELDS,
              "the tagged fields run from what to data");

/* Reads the tagged copy of command @p seq (one word per lane) into @p copy; false, with
 * nothing stored, while some word does not carry seq's tag yet.  The loads are volatile:
 * each polls host memory again. */
__device__ static inline bool agent_fetch_tagged(const uint64_t *tagged, uint64_t seq,
                                                 mpix_gpuic_agent_cmd_t *copy, unsigned lane)
{
    uint64_t w = ((const volatile uint64_t *)tagged)[lane];
    bool ok = __all_sync(0xffffffffu, (uint32_t)(w >> 32) == (uint32_t)seq);

    if (ok) {
        unsigned off = lane * 4;
        uint32_t v = (uint32_t)w;
        char *dst = off < MPIX_GPUIC_AGENT_TAGGED_FIELDS
                        ? (char *)&copy->what + off
                        : (char *)copy->data + (off - MPIX_GPUIC_AGENT_TAGGED_FIELDS);

        *(uint32_t *)dst = v;
        __syncwarp();
    }
    return ok;
}

/* Inline bytes command @p c reads from its slot: the extent of its operands that point into
 * @p slot's inline bytes (agent_src). */
__device__ static inline uint64_t agent_inline_need(const mpix_gpuic_agent_cmd_t *slot,
                                                    const mpix_gpuic_agent_cmd_t *c)
{
    uint64_t lo = (uint64_t)(uintptr_t)slot->data, need = 0, esize = host_acc_esize(c->type);

    switch (c->what) {
    case MPIX_GPUIC_AGENT_PUT:
        need = c->origin - lo < MPIX_GPUIC_AGENT_INLINE ? c->origin - lo + c->count : 0;
        break;
    case MPIX_GPUIC_AGENT_ACC:
        need = c->origin != 0 && c->origin - lo < MPIX_GPUIC_AGENT_INLINE
                   ? c->origin - lo + c->count * esize
                   : 0;
        break;
    case MPIX_GPUIC_AGENT_CAS:
        need = c->origin - lo < MPIX_GPUIC_AGENT_INLINE ? c->origin - lo + esize : 0;
        if (c->compare - lo < MPIX_GPUIC_AGENT_INLINE && c->compare - lo + esize > need) {
            need = c->compare - lo + esize;
        }
        break;
    default:
        break;
    }
    return need;
}

/* Completes @p copy with the inline bytes past the tagged ones, read from @p slot by the warp
 * once lane 0's acquire load of the slot's seq word returned @p seq (the host stores it after
 * the bytes); the warp barrier orders the other lanes' loads after it. */
__device__ static inline void agent_fetch_rest(const mpix_gpuic_agent_cmd_t *slot, uint64_t seq,
                                               mpix_gpuic_agent_cmd_t *copy, uint64_t need,
                                               unsigned lane)
{
    const volatile uint32_t *src = (const volatile uint32_t *)slot->data;
    uint32_t *dst = (uint32_t *)copy->data;

    if (lane == 0) {
        while (agent_load_acquire(&slot->seq) != seq) {
        }
    }
    __syncwarp();
    need = need > MPIX_GPUIC_AGENT_INLINE ? MPIX_GPUIC_AGENT_INLINE : need;
    for (uint64_t i = MPIX_GPUIC_AGENT_TAGGED_DATA / 4 + lane; i < (need + 3) / 4; i += 32) {
        dst[i] = src[i];
    }
    __syncwarp();
}

/*
 * The agent: one warp, launched with the ring.  Lane 0 watches the next slot; the warp
 * executes each command, then lane 0 publishes it done.  After MPIX_GPUIC_AGENT_IDLE_NS
 * without a command, or at an exit command, it stops.
 */
extern "C" __global__ void mpix_gpuic_k_agent(mpix_gpuic_agent_ring_t *ring)
{
    gpuic_dev_stream_prologue();

    __shared__ mpix_gpuic_agent_cmd_t copy; /* the command being executed */

    const unsigned full = 0xffffffffu;
    unsigned lane = threadIdx.x;
    uint64_t next = *(volatile uint64_t *)&ring->done + 1;
    uint64_t idle_since = agent_now();

    for (;;) {
        const mpix_gpuic_agent_cmd_t *c = &ring->cmd[next % MPIX_GPUIC_AGENT_SLOTS];
        int stop = 0;

        if (agent_fetch_tagged(ring->tagged[next % MPIX_GPUIC_AGENT_SLOTS], next, &copy,
                               lane)) {
            uint64_t need = agent_inline_need(c, &copy);

            if (need > MPIX_GPUIC_AGENT_TAGGED_DATA) {
                agent_fetch_rest(c, next, &copy, need, lane);
            }
            if (copy.what == MPIX_GPUIC_AGENT_EXIT) {
                if (lane == 0) {
                    agent_store_release(&ring->done, next);
                    agent_store_release(&ring->state, MPIX_GPUIC_AGENT_STOPPED);
                }
                return;
            }
            agent_exec(c, &copy, lane);
            /* every lane's writes before done */
            __syncwarp();
            if (lane == 0) {
                __threadfence_system();
                agent_store_release(&ring->done, next);
            }
            ++next;
            idle_since = agent_now();
            continue;
        }
        /* lane 0's clock decides for the warp: each lane's idle_since differs (lane 0 sets
         * its own after the done store), and a lane that went on to the next slot's
         * __all_sync while the others wait in the __shfl_sync below would never meet them */
        if (!__shfl_sync(full, agent_now() - idle_since >= MPIX_GPUIC_AGENT_IDLE_NS, 0)) {
            continue;
        }
        if (lane == 0) {
            agent_store_release(&ring->state, MPIX_GPUIC_AGENT_STOPPING);
            __threadfence_system(); /* the state store before the last look at the slot */
            if (agent_load_acquire(&c->seq) == next) {
                agent_store_release(&ring->state, MPIX_GPUIC_AGENT_RUNNING);
            } else {
                agent_store_release(&ring->state, MPIX_GPUIC_AGENT_STOPPED);
                stop = 1;
            }
        }
        if (__shfl_sync(full, stop, 0)) {
            return;
        }
        idle_since = agent_now();
    }
}
