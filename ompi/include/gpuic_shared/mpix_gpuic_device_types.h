/*
 * mpix_gpuic_device_types.h - the device-side description of a gpuic window (plain C, shared
 * by the host library that builds it and the device code that reads it).
 *
 * A kernel receives an MPIX_Win_device (a by-value handle that points to this structure) from
 * MPIX_Win_get_device_handle() and passes it to the MPIX_*_device calls of
 * mpix_gpuic_device.cuh.  Its fields are read-only for device code except *error_word.
 * The argument types of those calls (operations, element types, signal updates, conditions)
 * are here too, so that the plain-C checks of mpix_gpuic_device_check.h can name them.
 */
#ifndef MPIX_GPUIC_DEVICE_TYPES_H
#define MPIX_GPUIC_DEVICE_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** "gpuidev" followed by the layout version (3: the handle passed by value). */
#define MPIX_GPUIC_DEVICE_MAGIC 0x6770756964657603ULL

/** How device code reaches one target's window. */
typedef enum MPIX_Gpuic_device_path {
    MPIX_GPUIC_DEVICE_PATH_NONE = 0, /**< not reachable from device code (remote host memory) */
    MPIX_GPUIC_DEVICE_PATH_P2P = 1,  /**< loads and stores through a device mapping (CUDA IPC,
                                          or the calling process's own memory) */
    MPIX_GPUIC_DEVICE_PATH_PROXY = 2 /**< work-queue entries in the window's device queue,
                                          executed by the calling process's proxy thread */
} MPIX_Gpuic_device_path;

/** One target as device code sees it. */
typedef struct MPIX_Gpuic_device_peer {
    /** Start of the target's window: a device address on the P2P path; on the proxy path the
     *  address work-queue entries name (the target's own address of its window, or this
     *  process's mapping of it), never dereferenced by device code unless
     *  MPIX_GPUIC_DEVICE_PEER_ATOMICS_P2P or _LOADS says so. 0: none. */
    uint64_t base;
    uint64_t size;      /**< bytes */
    int32_t  disp_unit; /**< the target's displacement unit */
    int32_t  path;      /**< MPIX_Gpuic_device_path */
    uint32_t flags;     /**< MPIX_GPUIC_DEVICE_PEER_* */
    uint32_t key;       /**< proxy path: the key-table key of the target's window */
} MPIX_Gpuic_device_peer;

/** The target's memory is on the calling process's own GPU: device-scope ordering suffices. */
#define MPIX_GPUIC_DEVICE_PEER_SAME_GPU 0x1u
/** Proxy path chosen for data (forced), but @c base is a device mapping: atomics, accumulates
 *  and signal adds use device atomics on it, the only kind atomic against other device
 *  atomics on device memory. */
#define MPIX_GPUIC_DEVICE_PEER_ATOMICS_P2P 0x2u
/** Device code may load from @c base (the calling process's own host window, mapped into the
 *  device): what MPIX_Signal_wait_until_device needs. */
#define MPIX_GPUIC_DEVICE_PEER_LOADS 0x4u
/** Proxy path, and the proxy reaches the target through a mapping of its window (CPU copies
 *  for host memory, driver copies for device memory), not UCX: 8-byte puts of a warp may share
 *  entries (GPUIC_WQE_OP_PUT8_MULTI). */
#define MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED 0x8u

/** Fewest slots a device queue may have: one reservation takes up to 64 (a warp's 32 lanes
 *  with two-block entries), and its slots must not overlap one another. */
#define MPIX_GPUIC_DEVICE_QUEUE_MIN_SLOTS 64

/**
 * The window's device queue: a ring of work-queue entries in pinned host memory mapped into
 * the device, drained by the process's proxy thread.  The first four words and free_seen are
 * producer state in device memory (device atomics are not allowed on pinned host memory over
 * PCIe), each on its own line; the rest is read-only.
 */
typedef struct MPIX_Gpuic_device_queue {
    /** The reservation word: the next sequence number to reserve (modulo 2^32) in the high
     *  half, the free bound in the low half: the low 32 bits of a free index (done[1])
     *  producers have read, below which slots may be reserved again
     *  (mpix_gpuic_device_proxy.cuh). */
    unsigned long long tickets;
    uint64_t pad0[7];
    unsigned long long done_seen;     /**< highest completion index a producer has read */
    uint64_t pad1[7];
    /** Reservations that found the queue full and had to wait for the proxy (back-pressure;
     *  read by the host as the MPI_T counter osc_gpuic_proxy_queue_full_waits). */
    unsigned long long full_waits;
    uint64_t pad2[7];
    /** %globaltimer time until which one waiting thread is the queue's poller: the only one
     *  that reads the host's completion index, while the others watch done_seen (thousands
     *  of threads reading over PCIe would crowd out the entries they wait for). */
    unsigned long long poll_lease;
    uint64_t pad3[7];
    /** Device address of the ring's tagged blocks (gpuic_ring_t.tagged): an entry is written
     *  and published in the same 8-byte stores, each carrying its block's tag. */
    uint64_t *tagged;
    /** Device address of the proxy's completion word (done[0]: every entry below its index
     *  has completed; the format of gpuic_ring_done_word(), which also counts failures) and
     *  free index (done[1]: slots below it may be reserved again; it stops at a result not
     *  yet acknowledged in acks) */
    const uint64_t *done;
    char     *stage;          /**< device address of the staging area, stage_bytes per slot */
    uint64_t stage_host;      /**< host address of the same area (WQE local addresses) */
    uint64_t timeout_ns;      /**< longest wait for the proxy, 0: forever */
    uint32_t size;            /**< slots, a power of two */
    uint32_t stage_bytes;     /**< staging bytes per slot (a multiple of 64) */
    /** Stage stamps of the entries: device address of a gpuic_trace_record_t array
     *  (gpuic_trace.h) indexed by sequence number, or NULL (nothing stamped).  Read only by
     *  device code compiled with MPIX_GPUIC_DEVICE_TRACE (mpix_gpuic_device_proxy.cuh). */
    void    *trace_records;
    uint64_t trace_mask;      /**< records - 1 (a power of two minus one, at least size - 1) */
    /** Device address of the result acknowledgements: a thread that read the result of the
     *  entry at sequence number seq from its staging area stores gpuic_ring_ack_word(seq)
     *  at acks[seq & (size - 1)] (pinned host memory, read by the proxy). */
    uint64_t *acks;
    /** Device address of the proxy's failure marks (gpuic_proxy_queue_t.failed, pinned host
     *  memory): word 0 set once any entry failed, word 1 + r once an entry to rank r did.
     *  Read by a wait only when the completion word it read counts failures. */
    const uint32_t *failed;
    uint64_t pad4[6];
    /** Highest free index (done[1]) a producer has read: where reservations the free bound
     *  does not cover look before they wait (producer state, device memory). */
    unsigned long long free_seen;
    uint64_t pad5[7];
} MPIX_Gpuic_device_queue;

/** The device handle's structure. */
typedef struct MPIX_Gpuic_device_win {
    uint64_t magic;       /**< MPIX_GPUIC_DEVICE_MAGIC while the handle is valid */
    int32_t  rank;        /**< the calling process's rank in the window */
    int32_t  nranks;      /**< processes in the window */
    /** An error a device call met (an MPI error class), 0 when none: pinned host memory
     *  mapped into the device (plain stores, no atomics); the host reports it at its next
     *  synchronization call and clears it. */
    uint32_t *error_word;
    uint32_t flags;       /**< MPIX_GPUIC_DEVICE_WIN_* */
    uint32_t reserved;
    /** The device queue for proxy-path targets (device memory), or NULL when none. */
    MPIX_Gpuic_device_queue *queue;
    MPIX_Gpuic_device_peer peers[]; /**< nranks entries, by rank */
} MPIX_Gpuic_device_win;

/** Every reachable target is on the calling process's own GPU. */
#define MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU 0x1u

/**
 * What kernels receive: the window's device handle, a small structure passed by value.  As a
 * kernel argument it lives in the kernel's parameter space, so the checks every call makes
 * (a live handle, a rank in range) and the window-wide facts (scope, device queue) cost no
 * memory access; only the target's entry of the description is loaded.  A zero-filled handle
 * is not valid (device calls return MPI_ERR_WIN).
 */
typedef struct MPIX_Win_device {
    /** Device address of the window's description (peers, error word), NULL when none. */
    MPIX_Gpuic_device_win *desc;
    uint64_t magic;  /**< MPIX_GPUIC_DEVICE_MAGIC in a handle from MPIX_Win_get_device_handle */
    int32_t  rank;   /**< desc->rank */
    int32_t  nranks; /**< desc->nranks */
    uint32_t flags;  /**< desc->flags */
    uint32_t reserved;
    MPIX_Gpuic_device_queue *queue; /**< desc->queue */
} MPIX_Win_device;

/**
 * The handle of the window description at device address @p desc whose host copy is @p host:
 * what MPIX_Win_get_device_handle() returns (for host code that builds descriptions: the
 * component, tests, studies).
 */
static inline MPIX_Win_device gpuic_dev_handle_of(MPIX_Gpuic_device_win *desc,
                                                  const MPIX_Gpuic_device_win *host)
{
    MPIX_Win_device h;

    h.desc = desc;
    h.magic = host->magic;
    h.rank = host->rank;
    h.nranks = host->nranks;
    h.flags = host->flags;
    h.reserved = 0;
    h.queue = host->queue;
    return h;
}

/** Predefined operations of MPIX_Accumulate_device and MPIX_Fetch_and_op_device. */
typedef enum MPIX_Device_op {
    MPIX_DEVICE_SUM,
    MPIX_DEVICE_PROD,
    MPIX_DEVICE_MIN,
    MPIX_DEVICE_MAX,
    MPIX_DEVICE_BAND, /**< integer types only */
    MPIX_DEVICE_BOR,  /**< integer types only */
    MPIX_DEVICE_BXOR, /**< integer types only */
    MPIX_DEVICE_LAND, /**< integer types only */
    MPIX_DEVICE_LOR,  /**< integer types only */
    MPIX_DEVICE_LXOR, /**< integer types only */
    MPIX_DEVICE_REPLACE,
    MPIX_DEVICE_NO_OP
} MPIX_Device_op;

/** Predefined element types of the device accumulate calls (MPI_INT32_T ... MPI_DOUBLE). */
typedef enum MPIX_Device_type {
    MPIX_DEVICE_INT32,
    MPIX_DEVICE_UINT32,
    MPIX_DEVICE_INT64,
    MPIX_DEVICE_UINT64,
    MPIX_DEVICE_FLOAT,
    MPIX_DEVICE_DOUBLE
} MPIX_Device_type;

/** How MPIX_Put_signal_device updates the signal word. */
typedef enum MPIX_Device_signal_op {
    MPIX_DEVICE_SIGNAL_SET, /**< word = value */
    MPIX_DEVICE_SIGNAL_ADD  /**< word += value */
} MPIX_Device_signal_op;

/** Conditions of MPIX_Signal_wait_until_device. */
typedef enum MPIX_Device_cmp {
    MPIX_DEVICE_CMP_EQ,
    MPIX_DEVICE_CMP_NE,
    MPIX_DEVICE_CMP_GT,
    MPIX_DEVICE_CMP_GE,
    MPIX_DEVICE_CMP_LT,
    MPIX_DEVICE_CMP_LE
} MPIX_Device_cmp;

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_DEVICE_TYPES_H */
