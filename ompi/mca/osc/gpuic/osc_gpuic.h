/*
 * osc_gpuic.h - the gpuic one-sided component: module and component state shared by its files.
 *
 * The component gives MPI semantics (epochs, datatypes, error classes) on top of libgpuic,
 * which moves the bytes.  Each file covers one MPI area:
 *   osc_gpuic_component.c       component, MCA parameters, endpoints, progress
 *   osc_gpuic_window.c          window creation and free, key exchange
 *   osc_gpuic_comm.c            put, get, rput, rget and datatype walking
 *   osc_gpuic_accumulate.c      the accumulate family (not yet implemented)
 *   osc_gpuic_active_target.c   fence, post/start/complete/wait/test
 *   osc_gpuic_passive_target.c  lock, lock_all, flush*, sync
 *   osc_gpuic_request.c         request objects of rput/rget
 *   osc_gpuic_state.c           state-block words: locks, accumulate lock, announcements
 *   osc_gpuic_state_pool.c      state blocks from a pool, peers' keys of it cached
 *   osc_gpuic_status.c          the one gpuic_status_t -> MPI error translation
 */
#ifndef OMPI_OSC_GPUIC_H
#define OMPI_OSC_GPUIC_H

#include "ompi_config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/class/opal_hash_table.h"
#include "opal/threads/mutex.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"

#include "gpuic.h"
#include "mpix_gpuic_device_types.h"
#include "osc_gpuic_ext.h"

BEGIN_C_DECLS

/** Access epoch the window is in, from this process's point of view. */
typedef enum ompi_osc_gpuic_epoch {
    OMPI_OSC_GPUIC_EPOCH_NONE,     /**< no access epoch: RMA calls fail with MPI_ERR_RMA_SYNC */
    OMPI_OSC_GPUIC_EPOCH_FENCE,    /**< between fences */
    OMPI_OSC_GPUIC_EPOCH_LOCK,     /**< one or more MPI_Win_lock held */
    OMPI_OSC_GPUIC_EPOCH_LOCK_ALL, /**< MPI_Win_lock_all held */
    OMPI_OSC_GPUIC_EPOCH_START     /**< between MPI_Win_start and MPI_Win_complete */
} ompi_osc_gpuic_epoch_t;

/** Rounds of MPI_Win_fence's barrier at most: ceil(log2(processes)). */
#define OMPI_OSC_GPUIC_FENCE_ROUNDS 32

/**
 * The window's remotely accessible state block: one per process and window, allocated by UCX
 * (so same-node peers can map it) and reached by peers' atomics.  Fixed words, then two words
 * per rank of the window for post/start/complete/wait.  Offsets come from offsetof and the
 * helpers below, never from hand counting.
 */
typedef struct ompi_osc_gpuic_state {
    /** Passive-target lock: bits 0-31 count shared holders, bit 32 (LOCK_EXCLUSIVE) is set
     *  while an exclusive holder owns it or waits for the shared ones to leave, bits 33-63
     *  count exclusive releases (so that a waiter sees the lock change hands). */
    uint64_t lock;
    /** Lockers that have waited for the lock a while and still wait.  A hint for fairness
     *  only (osc_gpuic_passive_target.c): a locker that reads this word without the network
     *  (this process, or any process of a state_direct window) stands back while it is
     *  nonzero. */
    uint64_t lock_waiters;
    /** Accumulate lock: high half 0 free, else 1 + rank of the holder of a bulk update; low
     *  half the number of single-element atomics in flight (osc_gpuic_state.c). */
    uint64_t acc_lock;
    /** [k]: signals of round k of MPI_Win_fence's barrier received (one per fence). */
    uint64_t fence[OMPI_OSC_GPUIC_FENCE_ROUNDS];
    /** Moves while this process is inside MPI_Win_fence and sees progress (its transfers
     *  complete, or the peer it waits for moves): read by the peers waiting on it. */
    uint64_t fence_beat;
    /** [2r]: MPI_Win_post calls rank r addressed to this process;
     *  [2r+1]: MPI_Win_complete calls rank r addressed to this process.
     *  Then, at ompi_osc_gpuic_state_acc_flag_offset(), one cache line per rank r: the number
     *  of single-element accumulates rank r has in flight here (all_direct windows). */
    uint64_t pscw[];
} ompi_osc_gpuic_state_t;

/** Bit of ompi_osc_gpuic_state_t.lock claimed by an exclusive locker.  Adding it again
 *  releases the lock: the carry clears the bit and counts one more release above it. */
#define OMPI_OSC_GPUIC_LOCK_EXCLUSIVE (1ULL << 32)
/** Bits of ompi_osc_gpuic_state_t.lock that count shared holders. */
#define OMPI_OSC_GPUIC_LOCK_SHARED_MASK (OMPI_OSC_GPUIC_LOCK_EXCLUSIVE - 1)

/** Bytes between the single-element accumulate announcements of two origins (one cache line
 *  each, so that announcing never moves another origin's line). */
#define OMPI_OSC_GPUIC_ACC_FLAG_STRIDE 64

/**
 * Offset of the word in which origin @p rank announces its single-element accumulates in
 * flight on all_direct windows (osc_gpuic_state.c), after the post/complete words of a window
 * of @p nranks processes.
 */
static inline size_t ompi_osc_gpuic_state_acc_flag_offset(int nranks, int rank)
{
    size_t pscw_end = offsetof(ompi_osc_gpuic_state_t, pscw) +
                      2 * (size_t)nranks * sizeof(uint64_t);
    size_t first = (pscw_end + OMPI_OSC_GPUIC_ACC_FLAG_STRIDE - 1) /
                   OMPI_OSC_GPUIC_ACC_FLAG_STRIDE * OMPI_OSC_GPUIC_ACC_FLAG_STRIDE;

    return first + (size_t)rank * OMPI_OSC_GPUIC_ACC_FLAG_STRIDE;
}

/** Size of the state block of a window of @p nranks processes. */
static inline size_t ompi_osc_gpuic_state_size(int nranks)
{
    return ompi_osc_gpuic_state_acc_flag_offset(nranks, nranks);
}

/** Offset of the counter of posts from @p rank. */
static inline size_t ompi_osc_gpuic_state_post_offset(int rank)
{
    return offsetof(ompi_osc_gpuic_state_t, pscw) + 2 * (size_t)rank * sizeof(uint64_t);
}

/** Offset of the counter of completes from @p rank. */
static inline size_t ompi_osc_gpuic_state_complete_offset(int rank)
{
    return ompi_osc_gpuic_state_post_offset(rank) + sizeof(uint64_t);
}

/** A contiguous piece of a peer's window memory, as this process reaches it. */
typedef struct ompi_osc_gpuic_region {
    uint64_t     base;   /**< address of the region's first byte at the peer */
    uint64_t     size;   /**< bytes */
    gpuic_rkey_t *rkey;  /**< key for UCX access; NULL when size is 0 */
    void         *direct; /**< local mapping of the region (loads and stores), or NULL */
    int          gpu;    /**< the region is device memory: direct is a device address */
    /* dynamic windows only (zero for the others) */
    uint64_t     id;     /**< the target's number for this attachment (key reuse on refresh) */
    uint32_t     run;    /**< regions after this one in its array, each adjacent to the last */
} ompi_osc_gpuic_region_t;

/** What this process knows of one peer's window. */
typedef struct ompi_osc_gpuic_peer {
    gpuic_ep_t   *ep;          /**< the component's endpoint to the peer (not owned) */
    /** The peer's window memory; for dynamic windows, the peer's region table. */
    ompi_osc_gpuic_region_t win;
    gpuic_rkey_t *state_rkey;  /**< key of the peer's state block */
    uint64_t     state_addr;   /**< address of the peer's state block */
    char         *state_direct; /**< local mapping of the peer's state block, or NULL */
    int          disp_unit;    /**< the peer's displacement unit */
    int          lock_type;    /**< MPI_LOCK_* held on the peer; negated under NOCHECK; 0: none */
    bool         lock_pending; /**< an MPI_Win_lock on the peer is waiting for its lock */
    /* UCX operations issued to the peer, and how many of them a completed flush covered: a
     * flush with nothing new to cover costs no UCX call.  Counts, not a flag, so that a
     * thread's flush never returns on the strength of another thread's unfinished one. */
    uint64_t     ucx_issued;
    uint64_t     ucx_flushed;
    gpuic_lcc_t  lcc;          /**< UCX operations to the peer not yet complete locally */
    /** Same-node peer whose window is not mapped here: its process id, for put and get by
     *  cross-memory copies (process_vm_writev/readv); 0 when UCX carries them. */
    int          cma_pid;
    /** Pieces below osc_gpuic_cma_min_bytes sent to the peer by cross-memory copy at once
     *  since its last flush: the first few go that way (a lone put or get is latency-bound),
     *  the rest of a run is gathered (cma_pend) and moved by one call at the flush. */
    uint32_t     cma_small;
    /** Small cross-memory puts and gets to the peer gathered until the next completion point
     *  (osc_gpuic_cma.c); NULL until the first. */
    struct ompi_osc_gpuic_cma_pend *cma_pend;
    /* dynamic windows: the peer's attached regions as last read from its table */
    ompi_osc_gpuic_region_t *dyn;
    int          ndyn;
    uint64_t     dyn_seq;      /**< table sequence number dyn was read at (0: never) */
    gpuic_rkey_t *dyn_array_rkey; /**< key of the peer's current region-table array */
    void         *dyn_array_direct; /**< its local mapping, or NULL */
    uint64_t     dyn_array_gen;   /**< generation of that array (0: none unpacked) */
    /** Keys of the peer's regions that left the cache while an operation could still use
     *  them, kept until nothing can (ompi_osc_gpuic_regions_refresh) or the window is freed. */
    gpuic_rkey_t **dyn_dead;
    size_t       ndyn_dead;
    size_t       dyn_dead_cap;
    gpuic_cuda_ipc_t ipc;      /**< GPU windows: the peer's export of its memory */
    bool         ipc_mapped;   /**< win.direct is our CUDA IPC mapping of it */
    /* What a device queue needs to reach the peer from the proxy's own context, kept from the
     * window's creation exchange: the peer's worker address and its window's packed key. */
    void         *address;
    size_t       address_len;
    void         *rkey_blob;
    size_t       rkey_blob_len;
} ompi_osc_gpuic_peer_t;

/** A region this process attached to its dynamic window. */
typedef struct ompi_osc_gpuic_attached {
    void       *base;
    size_t     size;
    gpuic_mr_t *mr;   /**< NULL for size 0 */
    uint64_t   id;    /**< this attachment's number in the window (never reused) */
} ompi_osc_gpuic_attached_t;

typedef struct ompi_osc_gpuic_agent ompi_osc_gpuic_agent_t;

/** What a process publishes at window creation so that peers on the same kernel can see
 *  whether it still runs (osc_gpuic_liveness.c); a field is 0 where unknown. */
typedef struct ompi_osc_gpuic_liveness_id {
    uint32_t pid;
    uint32_t pad;
    uint64_t start; /**< start time in clock ticks since boot (/proc/PID/stat) */
    uint64_t pidns; /**< the pid namespace's device and inode */
    uint64_t boot;  /**< the kernel's boot id, first 8 bytes */
} ompi_osc_gpuic_liveness_id_t;

/** A window served by gpuic. */
typedef struct ompi_osc_gpuic_module {
    ompi_osc_base_module_t super;   /**< Open MPI's function table: must be first */
    ompi_osc_gpuic_ext_t   ext;     /**< must follow super (see osc_gpuic_ext.h) */

    struct ompi_win_t          *win;
    struct ompi_communicator_t *comm;      /**< private duplicate of the window's communicator */
    int                        id;         /**< process-local window number (for names, logs) */
    int                        flavor;     /**< MPI_WIN_FLAVOR_* */
    void                       *base;
    size_t                     size;
    int                        disp_unit;
    bool                       no_locks;   /**< info no_locks=true (locks still served) */
    bool                       no_locks_noted; /**< a lock call on it was logged */
    bool                       gpu;        /**< the window memory is device memory */
    bool                       gpu_owned;  /**< ...allocated by gpuic (MPI_Win_allocate) */
    void                       *dev_handle; /**< device copy of the MPIX_Gpuic_device_win */
    MPIX_Win_device            dev_value;  /**< the handle kernels get, pointing to it */
    uint32_t                   *dev_error;  /**< host word device calls record errors in */
    void                       *dev_error_dev; /**< its device address */
    struct ompi_osc_gpuic_devqueue *devq;   /**< the device queue, or NULL (devqueue.c) */
    int                        *dev_paths;  /**< per rank: device path in the handle, or NULL */
    /* Device work of host calls (osc_gpuic_gpu.c): the window's own stream, created on first
     * use, and the mapped pinned buffer the accumulate kernels read and write. */
    opal_mutex_t               gpu_lock;    /**< guards the four fields below */
    void                       *gpu_stream; /**< set once under gpu_lock; read atomically too */
    char                       *gpu_stage;
    size_t                     gpu_stage_len;
    int                        gpu_same;    /**< 1: every window memory is on this GPU; -1: unknown */
    struct ompi_osc_gpuic_agent *gpu_agent; /**< the window agent, or NULL (gpu_agent.c) */
    /* Work host calls queued on gpu_stream, and how much of it a completed synchronization of
     * the stream covered (atomics, not gpu_lock): a completion point with nothing new to cover
     * costs no driver call.  Counts, like ucx_issued and ucx_flushed, so that a thread never
     * returns on the strength of another thread's unfinished synchronization. */
    uint64_t                   gpu_queued;
    uint64_t                   gpu_synced;
    /** Holds a registration of the request poller (guarded by osc_gpuic_request.c's lock). */
    bool                       gpu_polled;
    /** Every process maps every peer's window and state block, so accumulates and state-word
     *  atomics use CPU atomics on the mappings.  Decided collectively at creation: every origin
     *  must use the same kind of atomics on a word, or atomicity is lost. */
    bool                       all_direct;
    /** Every process maps every peer's state block, so the state words (locks, the
     *  accumulate lock and announcements, PSCW counters) take CPU atomics on the mappings, also
     *  where the window memory is not mapped (GPU windows).  Collective like all_direct, and
     *  implied by it. */
    bool                       state_direct;
    gpuic_mr_t                 *mr;        /**< registration of the window; NULL when size is 0 */
    gpuic_mr_t                 *state_mr;  /**< registration of the state block's chunk (the
                                                pool's, osc_gpuic_state_pool.c) */
    uint64_t                   state_chunk; /**< that chunk, as peers know it */
    size_t                     state_bytes; /**< the block's size (0: none) */
    ompi_osc_gpuic_state_t     *state;
    ompi_osc_gpuic_peer_t      *peers;     /**< indexed by rank in comm */

    opal_mutex_t               lock;       /**< guards the epoch fields below */
    ompi_osc_gpuic_epoch_t     epoch;
    int                        locks_held; /**< per-target locks held (EPOCH_LOCK) */
    /** MPI_Win_lock calls waiting for their target's lock with the mutex released, so that
     *  the process's other threads' calls go on (MPI_THREAD_MULTIPLE); lock_all waits for
     *  none of them to be left */
    int                        locks_pending;
    uint64_t                   ops_since_fence; /**< RMA calls issued in this fence epoch */
    uint64_t                   fences;          /**< MPI_Win_fence barriers passed */
    uint64_t                   ucx_issued;      /**< UCX operations issued to any peer */
    uint64_t                   ucx_flushed;     /**< ...covered by a completed flush_all */
    bool                       cma_small_any;   /**< some peer's cma_small is not 0 */
    bool                       cma_pend_any;    /**< some peer has gathered copies pending */
    /** The first error of moving gathered copies outside a completion point
     *  (ompi_osc_gpuic_cma_pend_settle()): the window's next completion point returns it. */
    int                        cma_pend_rc;
    opal_mutex_t               dyn_lock;        /**< guards the peers' dynamic-region caches */
    /** Region arrays replaced by a refresh; kept until free so that a region found by one
     *  thread stays valid while another thread refreshes (MPI_THREAD_MULTIPLE only: otherwise
     *  no other call can hold one, and a replaced array is freed at once). */
    ompi_osc_gpuic_region_t    **dyn_retired;
    size_t                     ndyn_retired;
    size_t                     dyn_retired_cap;

    /* post/start/complete/wait */
    int                        *start_ranks;    /**< access group of MPI_Win_start (comm ranks) */
    int                        start_n;
    uint8_t                    *start_member;   /**< per rank: 1 when in the access group */
    int                        *post_ranks;     /**< exposure group of MPI_Win_post */
    int                        post_n;          /**< -1: no exposure epoch */
    uint64_t                   *posts_seen;     /**< per rank: posts from it consumed by start */
    uint64_t                   *completes_seen; /**< per rank: completes consumed by wait */
    /* MPI_Win_start waiting for posts, MPI_Win_wait for completes, each with the mutex
     * released (another thread's calls on the window go on meanwhile) */
    bool                       start_pending;
    bool                       wait_pending;

    /* shared windows (MPI_Win_allocate_shared) */
    char                       *shm_seg;  /**< the whole segment, mapped here */
    size_t                     shm_len;
    uint64_t                   *shm_off;  /**< per rank: offset of its part in the segment */
    bool                       shm_noncontig; /**< parts are page-aligned, not back to back */

    /* dynamic windows (MPI_Win_create_dynamic): what this process attached */
    ompi_osc_gpuic_attached_t  *attached;  /**< sorted by base */
    int                        nattached;
    int                        max_attached; /**< entries attached has room for */
    gpuic_mr_t                 *dyn_array_mr;  /**< the published table's entry array */
    uint32_t                   dyn_array_cap;  /**< entries it has room for */
    gpuic_mr_t                 **dyn_array_old; /**< outgrown arrays, kept until free */
    int                        ndyn_array_old;
    uint64_t                   dyn_serial;     /**< last attachment number given */

    struct ompi_osc_gpuic_module *next, *prev; /**< the component's list of live windows */

    /* peers whose liveness this process registered (osc_gpuic_liveness.c) */
    ompi_osc_gpuic_liveness_id_t *live;   /**< peers /proc shows here */
    size_t                     nlive;
    unsigned long              live_unknown; /**< peers it cannot look at */

    /** Stream-triggered calls: sync blocks and their mappings (osc_gpuic_stream.c); NULL when
     *  no process of the window has device memory. */
    struct ompi_osc_gpuic_stream_state *stream_state;
} ompi_osc_gpuic_module_t;

/**
 * Process-wide event counters, exported read-only as MPI_T performance variables
 * (osc_gpuic_<field>, registered in osc_gpuic_component.c).  Updated by MPI calls only (never
 * by the proxy thread), through ompi_osc_gpuic_count(): they order nothing, and a counter is
 * never worth a lock on the RMA path.
 */
typedef struct ompi_osc_gpuic_counters {
    unsigned long long ops_direct;   /**< put/get/rput/rget calls served through a mapping */
    unsigned long long ops_ucx;      /**< ...served through UCX */
    unsigned long long bytes_direct; /**< bytes those direct calls moved */
    unsigned long long bytes_ucx;    /**< bytes those UCX calls moved */
    unsigned long long accumulates_atomic; /**< accumulate-family calls done by CPU atomics alone */
    unsigned long long accumulates_locked; /**< ...that took the target's accumulate lock */
    unsigned long long accumulates_gpu; /**< ...executed by a kernel on GPU window memory */
    unsigned long long range_errors; /**< calls refused with MPI_ERR_RMA_RANGE */
    unsigned long long flushes_skipped; /**< flushes with no UCX operation to wait for */
    unsigned long long device_errors; /**< device-call errors reported at synchronization */
    unsigned long long ops_cma;   /**< put/get/rput/rget calls served by cross-memory copies */
    unsigned long long bytes_cma; /**< bytes those calls moved */
} ompi_osc_gpuic_counters_t;

/** Adds @p n to one of the component's counters (defined after the component). */
static inline void ompi_osc_gpuic_count(unsigned long long *counter, unsigned long long n);

/** The component: one per process. */
typedef struct ompi_osc_gpuic_component {
    ompi_osc_base_component_t super;

    /* MCA parameters */
    int  priority;
    int  verbose;
    bool direct;            /**< use direct load/store mappings to same-node peers */
    int  max_attach;        /**< regions a dynamic window can have attached at once; 0: no limit */
    double timeout;         /**< seconds a wait on a peer may take before it fails; 0: forever */
    bool device_proxy;      /**< device calls use the proxy path to every target */
    int  device_queue_slots; /**< slots of a window's device queue */
    int  device_stage_bytes; /**< staging bytes per device-queue slot */
    int  device;            /**< device when gpuic picks one: -1 by node-local rank, N that one */
    bool stream_pdl;        /**< stream kernels may use programmatic dependent launch */
    bool gpu_agent;         /**< small device work of host calls goes to the window agent */
    int  cma_min_bytes;     /**< smallest piece sent by cross-memory copy; -1: none */
    int  emulate_nodes;     /**< processes per emulated node (by world rank); 0: real nodes */
    bool async_progress;    /**< a thread serves peers' operations from the first window */

    ompi_osc_gpuic_counters_t counters; /**< MPI_T performance variables */

    /* Runtime state */
    bool              thread_multiple;
    opal_mutex_t      lock;        /**< guards everything below */
    gpuic_context_t   *ctx;        /**< created on first window */
    opal_hash_table_t endpoints;   /**< ompi_proc_t * -> gpuic_ep_t * */
    int               num_windows; /**< windows alive; progress is registered while > 0 */
    /** Windows alive whose peers reach some of this process's memory through UCX (not every
     *  peer mapped, or dynamic): ompi_osc_gpuic_progress_poll() serves them. */
    int               progress_windows;
    /** Windows whose cma_pend_any is set: ompi_osc_gpuic_cma_pend_settle() has work. */
    int               cma_pend_windows;
    ompi_osc_gpuic_module_t *windows; /**< live windows, released at finalize if never freed */
    int               next_id;
    /* The proxy thread that executes device-posted work-queue entries, with a context and
     * endpoints of its own (its thread drives them): created by the first device handle that
     * needs it, kept until finalize (osc_gpuic_devqueue.c). */
    gpuic_context_t   *proxy_ctx;
    struct gpuic_proxy *proxy;
    opal_hash_table_t proxy_endpoints; /**< ompi_proc_t * -> gpuic_ep_t * on proxy_ctx */
    bool              proxy_endpoints_init;
} ompi_osc_gpuic_component_t;

OMPI_MODULE_DECLSPEC extern ompi_osc_gpuic_component_t mca_osc_gpuic_component;

/* Below MPI_THREAD_MULTIPLE no two threads update a counter at once, so a relaxed load and store
 * (plain moves, no locked instruction) are exact, and a concurrent MPI_T read still sees a whole
 * value.  Only MPI_THREAD_MULTIPLE pays for an atomic read-modify-write. */
static inline void ompi_osc_gpuic_count(unsigned long long *counter, unsigned long long n)
{
    if (mca_osc_gpuic_component.thread_multiple) {
        __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n,
                         __ATOMIC_RELAXED);
    }
}

/* Component (osc_gpuic_component.c) */
int ompi_osc_gpuic_context_get(gpuic_context_t **ctx_p);
int ompi_osc_gpuic_endpoint_get(struct ompi_proc_t *proc, const void *addr, size_t len,
                                gpuic_ep_t **ep_p);
/**
 * The endpoint of @p ctx to @p proc in @p table (proc -> endpoint), created from the peer's
 * worker address on first use; under the component's lock.
 */
gpuic_status_t ompi_osc_gpuic_endpoint_lookup(opal_hash_table_t *table, gpuic_context_t *ctx,
                                              struct ompi_proc_t *proc, const void *addr,
                                              size_t len, gpuic_ep_t **ep_p);
void ompi_osc_gpuic_window_added(ompi_osc_gpuic_module_t *module);
void ompi_osc_gpuic_window_removed(ompi_osc_gpuic_module_t *module);
/**
 * True when @p module's process @p rank is on this process's node, as every same-node path
 * of the window sees it: direct loads and stores through UCX mappings (window memory, state
 * blocks, dynamic regions and tables), cross-memory copies, CUDA IPC mappings of windows and
 * sync blocks, the shared segment.  A false answer leaves every byte and atomic to UCX.
 * This process itself is always on the node.  With osc_gpuic_emulate_nodes = N > 0, a peer
 * is on the node only when it is on the real node, in this process's job, and in the same
 * emulated node: world rank / N (ranks of MPI_COMM_WORLD, so every communicator agrees).
 * Shared windows (MPI_Win_allocate_shared) see the real node only: their processes share
 * memory by construction (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) knows no emulated node).
 */
bool ompi_osc_gpuic_peer_on_node(ompi_osc_gpuic_module_t *module, int rank);
/** The lowest rank of @p module's communicator not on this node (ompi_osc_gpuic_peer_on_node),
 *  or -1 when every process is. */
int ompi_osc_gpuic_peer_first_off_node(ompi_osc_gpuic_module_t *module);
/** Whether some process's window memory is device memory: the same answer on every process
 *  (all saw every peer's memory kind in the creation exchange), so it may decide a collective
 *  step. */
bool ompi_osc_gpuic_window_any_gpu(const ompi_osc_gpuic_module_t *module);

/* State-block atomics (osc_gpuic_state.c) */
/**
 * Fetching atomic on the 8-byte word at @p offset of @p target's state block: CPU atomics on
 * the mapping when the window is all_direct, UCX atomics otherwise.
 */
int ompi_osc_gpuic_state_fetch(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                               gpuic_atomic_op_t op, uint64_t value, uint64_t compare,
                               uint64_t *old_p);
/** Non-fetching atomic add to @p target's state word; complete at the target on return. */
int ompi_osc_gpuic_state_add(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                             uint64_t value);
/** Reads a word of this process's own state block (written by peers). */
uint64_t ompi_osc_gpuic_state_read_local(ompi_osc_gpuic_module_t *module, size_t offset);
/** Reads @p target's state word at @p offset into @p *value where that takes no network
 *  operation (the own block, or a mapped one); returns false, reading nothing, otherwise. */
bool ompi_osc_gpuic_state_peek(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                               uint64_t *value);
/** Takes @p target's accumulate lock, waiting (yielding) while another process holds it. */
int ompi_osc_gpuic_acc_lock(ompi_osc_gpuic_module_t *module, int target);
/** Gives @p target's accumulate lock back. */
int ompi_osc_gpuic_acc_unlock(ompi_osc_gpuic_module_t *module, int target);
/**
 * Announces a single-element atomic on @p target's window: returns once no process holds the
 * target's accumulate lock, and keeps any from taking it (acc_lock waits) until
 * ompi_osc_gpuic_acc_leave().  Waits yield while a holder works.
 */
int ompi_osc_gpuic_acc_enter(ompi_osc_gpuic_module_t *module, int target);
/** Ends what ompi_osc_gpuic_acc_enter() began; the atomic's update is visible first. */
int ompi_osc_gpuic_acc_leave(ompi_osc_gpuic_module_t *module, int target);

/* State blocks (osc_gpuic_state_pool.c) */
/**
 * A block of at least @p size bytes of shared memory for a window's state (not cleared: a
 * block may have served an earlier window): *mr_p the registration of the chunk holding it
 * (owned by the pool), *chunk_p the chunk's identity for peers (its address).  Thread-safe.
 */
int ompi_osc_gpuic_state_block_get(size_t size, gpuic_mr_t **mr_p, void **block_p,
                                   uint64_t *chunk_p);
/** Gives a block of ompi_osc_gpuic_state_block_get() back (NULL: nothing). */
void ompi_osc_gpuic_state_block_put(void *block, size_t size);
/**
 * The key of a peer's state chunk @p chunk reached through @p ep: unpacked from @p blob the
 * first time, the same key afterwards (owned by the pool, never destroyed by a window).
 */
int ompi_osc_gpuic_state_rkey_get(gpuic_ep_t *ep, uint64_t chunk, const void *blob,
                                  gpuic_rkey_t **rkey_p);
/** Destroys every cached key and chunk (component finalize, after every window is gone and
 *  before the endpoints go). */
void ompi_osc_gpuic_state_pool_finalize(void);

/* Status translation (osc_gpuic_status.c) */
int ompi_osc_gpuic_error(gpuic_status_t status);

/* Window (osc_gpuic_window.c) */
/** Releases a window's resources without communicating (finalize of a window never freed). */
void ompi_osc_gpuic_module_destroy(ompi_osc_gpuic_module_t *module);
int ompi_osc_gpuic_window_create(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                                 struct ompi_communicator_t *comm, struct opal_info_t *info,
                                 int flavor, int *model);
int ompi_osc_gpuic_free(struct ompi_win_t *win);
int ompi_osc_gpuic_win_attach(struct ompi_win_t *win, void *base, size_t size);
int ompi_osc_gpuic_win_detach(struct ompi_win_t *win, const void *base);
int ompi_osc_gpuic_win_shared_query(struct ompi_win_t *win, int rank, size_t *size,
                                    int *disp_unit, void *baseptr);

/* Datatypes (osc_gpuic_datatype.c) */
/** Lowest and one-past-highest byte offsets (from the buffer) that count elements of dt touch. */
void ompi_osc_gpuic_dt_bounds(const struct ompi_datatype_t *dt, int count, ptrdiff_t *lo_p,
                              ptrdiff_t *hi_p);
/**
 * Checked form of ompi_osc_gpuic_dt_bounds() for user input: *lo_p and *hi_p as there, and
 * *bytes_p (may be NULL) the data size of @p count elements.  MPI_ERR_COUNT when a size or an
 * offset overflows 64-bit arithmetic (count < 0 included); MPI_ERR_TYPE when the datatype's
 * stored bounds are inverted or, with @p check_blocks, when a block of one element (as the
 * convertor addresses it) lies outside them: Open MPI stores wrapped bounds for constructors
 * whose arithmetic overflowed, and the blocks then fall outside.  check_blocks walks the blocks
 * of one element of a non-contiguous type; contiguous types cost nothing.
 */
int ompi_osc_gpuic_dt_span(const struct ompi_datatype_t *dt, int count, bool check_blocks,
                           ptrdiff_t *lo_p, ptrdiff_t *hi_p, size_t *bytes_p);
/**
 * MPI_ERR_RMA_RANGE unless (disp, count, dt) lies inside @p target's window: for a dynamic
 * window, inside one attached region or a run of adjacent attached regions.  On success
 * *raddr_p is the target address of displacement @p disp and *region_p the region holding the
 * access's first byte; when the access runs on into the regions after it (dynamic windows
 * only), ompi_osc_gpuic_rma_layout() splits it per region, and code that uses region->direct
 * itself finds each piece's region with ompi_osc_gpuic_region_piece().  MPI_ERR_COUNT or
 * MPI_ERR_TYPE as ompi_osc_gpuic_dt_span() (with check_blocks).
 */
int ompi_osc_gpuic_check_range(ompi_osc_gpuic_module_t *module, int target, ptrdiff_t disp,
                               int count, struct ompi_datatype_t *dt, uint64_t *raddr_p,
                               ompi_osc_gpuic_region_t **region_p);
/** Called by dt_walk for each pair of blocks of equal length; returns an MPI error code. */
typedef int (*ompi_osc_gpuic_walk_fn_t)(char *a, char *b, size_t len, void *arg);
/**
 * Pairs the contiguous blocks of (a, acount, adt) and (b, bcount, bdt), which must have the
 * same size, in type-map order, calling @p fn for each piece.  Addresses are computed, never
 * dereferenced, so either side may be a remote address.  Stops at the first error.
 */
int ompi_osc_gpuic_dt_walk(void *a, int acount, struct ompi_datatype_t *adt, void *b,
                           int bcount, struct ompi_datatype_t *bdt,
                           ompi_osc_gpuic_walk_fn_t fn, void *arg);
/** Copies the data of (src, scount, sdt) into the layout (dst, dcount, ddt). */
int ompi_osc_gpuic_dt_copy(void *dst, int dcount, struct ompi_datatype_t *ddt, const void *src,
                           int scount, struct ompi_datatype_t *sdt);

/* Communication (osc_gpuic_comm.c) */
int ompi_osc_gpuic_put(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win);
int ompi_osc_gpuic_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win);
int ompi_osc_gpuic_rput(const void *origin_addr, int origin_count,
                        struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                        int target_count, struct ompi_datatype_t *target_dt,
                        struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_gpuic_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                        int target, ptrdiff_t target_disp, int target_count,
                        struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                        struct ompi_request_t **request);
/** Fills @p id with this process's liveness identity (zeros where /proc says nothing). */
void ompi_osc_gpuic_liveness_self(ompi_osc_gpuic_liveness_id_t *id);
/**
 * Registers peer @p peer of @p module: a process on this kernel and pid namespace is looked at
 * by ompi_osc_gpuic_liveness_all_alive() until ompi_osc_gpuic_liveness_release(); any other
 * counts as unknown meanwhile.  MPI_ERR_NO_MEM on allocation failure.
 */
int ompi_osc_gpuic_liveness_add(ompi_osc_gpuic_module_t *module,
                                const ompi_osc_gpuic_liveness_id_t *peer);
/** Unregisters what ompi_osc_gpuic_liveness_add() registered for @p module; idempotent. */
void ompi_osc_gpuic_liveness_release(ompi_osc_gpuic_module_t *module);
/**
 * The contexts' liveness check (gpuic_context_set_alive()): true when every peer of every
 * window can be looked at and still runs, so that a silent wait is a peer that has not got
 * there yet; false when a window has a peer elsewhere, when one has exited, or when there is
 * no window.  Logs once, at info level, the first time it lets a wait go on.  @p arg unused.
 */
bool ompi_osc_gpuic_liveness_all_alive(void *arg);

/**
 * What this process publishes at window creation for same-node cross-memory copies: its
 * process id and the address and value of a word only it holds, so that a peer can check that
 * the id names this process (and not another one in a different pid namespace).
 */
void ompi_osc_gpuic_cma_publish(uint32_t *pid_p, uint64_t *token_addr_p, uint64_t *token_p);
/**
 * Sets peers[rank].cma_pid when put and get to that peer can go by cross-memory copies: same
 * node, direct paths allowed (osc_gpuic_direct), a host window of fixed layout that is not
 * mapped here, and a probe read of the peer's published word that returns its value.
 */
void ompi_osc_gpuic_cma_peer_setup(ompi_osc_gpuic_module_t *module, int rank, uint32_t pid,
                                   uint64_t token_addr, uint64_t token);
/** MPI_ERR_RMA_SYNC unless the window is in an access epoch that covers @p target. */
int ompi_osc_gpuic_check_access(ompi_osc_gpuic_module_t *module, int target);
/** ompi_osc_gpuic_check_access(), and on success counts the operation for its fence epoch. */
int ompi_osc_gpuic_begin_op(ompi_osc_gpuic_module_t *module, int target);
/**
 * Completes this process's operations to @p target at the target: a memory barrier for direct
 * stores, and a UCX flush when UCX operations went to it since its last flush.
 */
int ompi_osc_gpuic_peer_flush(ompi_osc_gpuic_module_t *module, int target);
/**
 * ompi_osc_gpuic_peer_flush() only when UCX operations to @p target are pending: what a
 * cross-memory copy to or from the target does first, so that it lands after them (accumulate
 * ordering) and skips the flush otherwise.
 */
int ompi_osc_gpuic_peer_settle(ompi_osc_gpuic_module_t *module, int target);
/** The same for every target of the window. */
int ompi_osc_gpuic_module_flush(ompi_osc_gpuic_module_t *module);
/**
 * Flushes every peer's UCX endpoint, whether or not operations went to it, so that no
 * connection of the window is left half set up (UCX 1.13 aborts in ucp_worker_destroy on an
 * endpoint whose wireup request never left).  Called in MPI_Win_free before the barrier: every
 * peer makes progress until it has passed the barrier.
 */
int ompi_osc_gpuic_module_settle(ompi_osc_gpuic_module_t *module);
/** Completes this process's operations to @p target locally (buffers reusable, data arrived). */
int ompi_osc_gpuic_peer_flush_local(ompi_osc_gpuic_module_t *module, int target);
/** MPI_ERR_RMA_SYNC unless the window is in a passive-target epoch (request-based calls). */
int ompi_osc_gpuic_check_passive(ompi_osc_gpuic_module_t *module);
/**
 * Moves data between local (buf, bcount, bdt) and the target layout (raddr, tcount, tdt): a put
 * when @p is_put, else a get.  Completes at the next flush (at once through a mapping).
 */
int ompi_osc_gpuic_rma_layout(ompi_osc_gpuic_module_t *module, int target,
                              ompi_osc_gpuic_region_t *region, bool is_put, void *buf,
                              int bcount, struct ompi_datatype_t *bdt, uint64_t raddr,
                              int tcount, struct ompi_datatype_t *tdt);

/* Shared windows (osc_gpuic_shared.c) */
/**
 * Creates and maps the window's shared segment (collective); sets module->base to this
 * process's part.  MPI_ERR_RMA_SHARED when the processes are not all on this node.
 */
int ompi_osc_gpuic_shared_allocate(ompi_osc_gpuic_module_t *module, struct opal_info_t *info,
                                   size_t size);
/** Unmaps the shared segment. */
void ompi_osc_gpuic_shared_release(ompi_osc_gpuic_module_t *module);

/* GPU windows (osc_gpuic_gpu.c) */
/** True when @p info asks for device memory (mpi_assert_memory_alloc_kinds has cuda:device). */
bool ompi_osc_gpuic_info_wants_device(struct opal_info_t *info);
/** Allocates the window's device memory (MPI_Win_allocate); sets module->base. */
int ompi_osc_gpuic_gpu_allocate(ompi_osc_gpuic_module_t *module, size_t size);
/** True when @p base (MPI_Win_create) is device memory; loads nothing in host-only processes. */
bool ompi_osc_gpuic_gpu_detect(const void *base, size_t size);
/**
 * Registers the window's device memory with UCX when some peer is on another node (those
 * cannot map it through CUDA IPC); nothing otherwise.  MPI_ERR_UNSUPPORTED_OPERATION when the
 * UCX this process loaded cannot register device memory (logged here).
 */
int ompi_osc_gpuic_gpu_register(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx);
/** Describes the window's device memory for same-node peers (zeroes for host windows). */
int ompi_osc_gpuic_gpu_export(ompi_osc_gpuic_module_t *module, gpuic_cuda_ipc_t *ipc);
/** Maps peer @p rank's device memory (or our own) into peers[rank].win. */
int ompi_osc_gpuic_gpu_peer_setup(ompi_osc_gpuic_module_t *module, int rank,
                                  const gpuic_cuda_ipc_t *ipc);
/** Unmaps peers, frees the device handle, error word and owned device memory. */
void ompi_osc_gpuic_gpu_cleanup(ompi_osc_gpuic_module_t *module);
/** The MPI error class a device call recorded since the last check (0 when none); clears it. */
int ompi_osc_gpuic_device_error(ompi_osc_gpuic_module_t *module);
/** The window's device description (built on first use): its device address in *handle_p. */
int ompi_osc_gpuic_device_handle(void *module, void **handle_p);
/** ext entry point: the window's device handle, the value kernels receive (built on first
 *  use). */
int ompi_osc_gpuic_device_handle_get(void *module, MPIX_Win_device *handle);
/** ext entry point: frees the device handle; MPI_ERR_ARG when none exists. */
int ompi_osc_gpuic_device_handle_release(void *module);
/** ext entry point: the device path of @p rank in the current handle. */
int ompi_osc_gpuic_device_path(void *module, int rank, int *path);

/**
 * Zeroed memory in whole pages, for memory mapped into the device: CUDA registers whole
 * pages, and registering a page a second time (two small blocks sharing it) fails.
 */
static inline void *ompi_osc_gpuic_pages_alloc(size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), rounded = (len + page - 1) / page * page;
    void *p = aligned_alloc(page, rounded > 0 ? rounded : page);

    if (p != NULL) {
        memset(p, 0, rounded > 0 ? rounded : page);
    }
    return p;
}

/* Device queues (osc_gpuic_devqueue.c) */
/**
 * Starts the proxy thread now, without a device queue (osc_gpuic_async_progress): it then
 * progresses the serving worker that peers' operations on this process reach.
 */
int ompi_osc_gpuic_proxy_start(void);
/**
 * Builds the device queue of @p module's device handle when a target needs the proxy path,
 * and fills @p host (the handle's host copy): each peer's path, base, flags and key, and the
 * queue pointer.  Peers device code reaches directly are left as the caller set them.
 */
int ompi_osc_gpuic_devqueue_setup(ompi_osc_gpuic_module_t *module,
                                  MPIX_Gpuic_device_win *host);
/**
 * Waits until every entry device code has published in the window's queue is complete: the
 * completion primitives under every host synchronization call do this first, since a finished
 * kernel does not mean the proxy has executed what it posted.  MPI_ERR_OTHER after the
 * timeout.  Returns at once for windows without a queue.
 */
int ompi_osc_gpuic_devqueue_drain(ompi_osc_gpuic_module_t *module);
/** ompi_osc_gpuic_devqueue_drain(), then the error the proxy recorded for the window's
 *  entries, returned once. */
int ompi_osc_gpuic_devqueue_quiesce(ompi_osc_gpuic_module_t *module);
/** Whether the proxy marked entries of the window's device queue failed (device waits then
 *  return MPI_ERR_OTHER); its recorded error then counts as returned already. */
bool ompi_osc_gpuic_devqueue_failed(ompi_osc_gpuic_module_t *module);
/** Logs the device queue's state once (a device wait for the proxy timed out). */
void ompi_osc_gpuic_devqueue_report(ompi_osc_gpuic_module_t *module);
/**
 * Enters @p rank's sync block of the stream-triggered calls (device memory of @p len bytes at
 * the owner's address @p base, UCX key @p rkey_blob) into the window's device queue, so that
 * synchronization kernels reach it through the proxy; *key_p receives its key-table key (the
 * same one again on later calls).  MPI_ERR_UNSUPPORTED_OPERATION when the window has no queue.
 */
int ompi_osc_gpuic_devqueue_key_sync(ompi_osc_gpuic_module_t *module, int rank, uint64_t base,
                                     uint64_t len, const void *rkey_blob, uint32_t *key_p);
/** Detaches and frees the window's device queue (completing what was published). */
void ompi_osc_gpuic_devqueue_release(ompi_osc_gpuic_module_t *module);
/** Stops the proxy and frees its context (component finalize, after every window). */
void ompi_osc_gpuic_devqueue_finalize(void);
/** Reservations device code made on the live windows' queues that found them full. */
unsigned long long ompi_osc_gpuic_devqueue_full_waits(void);

/**
 * The window's own stream (a blocking stream of the current context, created on first use:
 * its work follows the program's work on the legacy default stream, as a cudaMemcpy's would),
 * for the device work of host calls; the caller holds module->gpu_lock.
 */
int ompi_osc_gpuic_gpu_stream(ompi_osc_gpuic_module_t *module, void **stream_p);
/**
 * At least @p len bytes of mapped pinned memory for the accumulate kernels (grown on demand,
 * kept until the window is freed); the caller holds module->gpu_lock.
 */
int ompi_osc_gpuic_gpu_stage(ompi_osc_gpuic_module_t *module, size_t len, char **stage_p);
/** Whether every process's window memory is on the GPU of the current context (device-scope
 *  atomics then suffice); the caller holds module->gpu_lock. */
bool ompi_osc_gpuic_gpu_all_same(ompi_osc_gpuic_module_t *module);
/**
 * Small cross-memory copies (osc_gpuic_cma.c): a put or get of @p len bytes (below
 * osc_gpuic_cma_min_bytes) between @p local and @p raddr in @p target's process, gathered and
 * moved with the peer's others in one system call at the next completion point
 * (ompi_osc_gpuic_cma_pend_issue, called by every flush) or when the gathering is full.  A put's
 * bytes are copied here, so its origin buffer may be reused at once; a get lands at the
 * completion point.  @p rkey serves the fallback to UCX where the system refuses the copy.
 * The peer takes cross-memory copies (cma_pid > 0).
 */
/** The largest piece ompi_osc_gpuic_cma_pend_add() gathers. */
#define OMPI_OSC_GPUIC_CMA_GATHER_MAX 4096
int ompi_osc_gpuic_cma_pend_add(ompi_osc_gpuic_module_t *module, int target, bool is_put,
                                void *local, size_t len, uint64_t raddr, gpuic_rkey_t *rkey);
/** Moves what is gathered for @p target (nothing to do: one load); @p gets_only: its gets
 *  (local completion: a gathered put is locally complete once staged). */
int ompi_osc_gpuic_cma_pend_issue(ompi_osc_gpuic_module_t *module, int target, bool gets_only);
/** ompi_osc_gpuic_cma_pend_issue() for every peer. */
int ompi_osc_gpuic_cma_pend_issue_all(ompi_osc_gpuic_module_t *module);
/**
 * Moves the gathered copies of every window of this process, so that none waits past the
 * origin's next MPI call that is not another put or get: called by the accumulates and
 * atomics, MPI_Win_sync, the local flushes and MPI's progress (MPI_Test, MPI_Iprobe, ...).
 * Programs signal with those after unflushed puts (an atomic on another window that releases
 * a lock, a poll of their own window) and expect the puts to land; one load when nothing is
 * gathered.  @p may_wait false (the progress callback): skipped when another thread holds
 * the window list.  A failure is kept for the window's next completion point.
 */
void ompi_osc_gpuic_cma_pend_settle_all(bool may_wait);
static inline void ompi_osc_gpuic_cma_pend_settle(bool may_wait)
{
    if (__atomic_load_n(&mca_osc_gpuic_component.cma_pend_windows, __ATOMIC_RELAXED) > 0) {
        ompi_osc_gpuic_cma_pend_settle_all(may_wait);
    }
}
/** Marks @p module as having nothing gathered (its window leaves the list). */
void ompi_osc_gpuic_cma_pend_forget(ompi_osc_gpuic_module_t *module);
/** Frees the gatherings (window destruction: completed before by the window's last flush). */
void ompi_osc_gpuic_cma_pend_free(ompi_osc_gpuic_module_t *module);
/** Whether an access epoch (lock, lock_all, start) may open, under the window's mutex: none is
 *  open, or only a fence that issued nothing (such a fence opened no epoch: MPI 3.1 section
 *  11.5.1), and no MPI_Win_start is waiting for its posts. */
static inline bool ompi_osc_gpuic_epoch_may_open(const ompi_osc_gpuic_module_t *module)
{
    return !module->start_pending &&
           (module->epoch == OMPI_OSC_GPUIC_EPOCH_NONE ||
            (module->epoch == OMPI_OSC_GPUIC_EPOCH_FENCE && module->ops_since_fence == 0));
}
/** Counts a UCX operation issued: an atomic read-modify-write only where another thread may
 *  count or flush at the same time (MPI_THREAD_MULTIPLE). */
static inline void ompi_osc_gpuic_issued_add(uint64_t *issued)
{
    if (mca_osc_gpuic_component.thread_multiple) {
        __atomic_fetch_add(issued, 1, __ATOMIC_ACQ_REL);
    } else {
        __atomic_store_n(issued, __atomic_load_n(issued, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    }
}
/** Counts a UCX operation issued to @p target, for the peer's flushes and the window's.
 *  Called after the issue: a flush that sees the count was issued after the operation, so it
 *  covers it (counting first would let another thread's flush claim it too early). */
static inline void ompi_osc_gpuic_ucx_count(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_issued_add(&module->peers[target].ucx_issued);
    ompi_osc_gpuic_issued_add(&module->ucx_issued);
}
/** Puts (@p is_put) or gets @p len bytes between host memory @p local and @p raddr of
 *  @p target through UCX, completed locally by the peer's counter, and counts it. */
int ompi_osc_gpuic_ucx_issue(ompi_osc_gpuic_module_t *module, int target, bool is_put,
                             void *local, size_t len, uint64_t raddr, gpuic_rkey_t *rkey);
/** Raises *counter to at least @p value (never lowers it: flushes and synchronizations may
 *  finish out of order). */
static inline void ompi_osc_gpuic_counter_raise(uint64_t *counter, uint64_t value)
{
    uint64_t cur = __atomic_load_n(counter, __ATOMIC_ACQUIRE);

    while (cur < value && !__atomic_compare_exchange_n(counter, &cur, value, false,
                                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
}
/**
 * A put or get of at most MPIX_GPUIC_AGENT_INLINE (448) bytes between @p local (host memory,
 * or device memory when @p local_dev) and @p remote, GPU window memory this process maps, by
 * the window agent (osc_gpuic_gpu_agent.c; takes module->gpu_lock).  A put from host memory
 * returns once its bytes are in the command (complete at the next ompi_osc_gpuic_gpu_drain);
 * a put from device memory and a get return done.  Device memory only when
 * ompi_osc_gpuic_agent_device_ready().
 */
/** Whether a put or get of @p len bytes may go to the window agent (it exists in this build,
 *  osc_gpuic_gpu_agent is true, and the bytes fit in a command). */
bool ompi_osc_gpuic_agent_fits(size_t len);
/**
 * Whether the window agent may read or write the program's device buffer @p buf now.  The agent
 * follows none of the program's streams, so the program's synchronous copies and memsets into
 * the buffer must have landed when they returned: gpuic_cuda_mem_sync_memops() on its
 * allocation (set on first use); where the driver refuses that, only while the legacy default
 * stream has no work left.  Work of the program's streams that writes the buffer must be
 * synchronized before the call, as CUDA-aware MPI requires.
 */
bool ompi_osc_gpuic_agent_buffer_ready(const void *buf);
int ompi_osc_gpuic_agent_copy(ompi_osc_gpuic_module_t *module, bool is_put, void *local,
                              bool local_dev, size_t len, void *remote);
/** Waits until every command committed to the window agent before the call is done
 *  (completion points; with or without module->gpu_lock held). */
int ompi_osc_gpuic_agent_complete(ompi_osc_gpuic_module_t *module);
/**
 * Queues a copy of @p len bytes on the window's stream (either side host or device memory; the
 * caller does not hold module->gpu_lock) and counts it in module->gpu_queued.  The copy is
 * complete, and its source may be reused, after ompi_osc_gpuic_gpu_drain().
 */
int ompi_osc_gpuic_gpu_copy(ompi_osc_gpuic_module_t *module, void *dst, const void *src,
                            size_t len);
/**
 * Counts one piece of work queued on the window's stream by other means (a kernel launch),
 * after it was queued: the next ompi_osc_gpuic_gpu_drain() then waits for it.
 */
static inline void ompi_osc_gpuic_gpu_count_queued(ompi_osc_gpuic_module_t *module)
{
    __atomic_fetch_add(&module->gpu_queued, 1, __ATOMIC_ACQ_REL);
}
/** What the window's stream had been given so far, for ompi_osc_gpuic_gpu_done(). */
static inline uint64_t ompi_osc_gpuic_gpu_ticket(ompi_osc_gpuic_module_t *module)
{
    return __atomic_load_n(&module->gpu_queued, __ATOMIC_ACQUIRE);
}
/** Synchronizes the window's stream, covering what was queued before the call. */
int ompi_osc_gpuic_gpu_sync(ompi_osc_gpuic_module_t *module);
/**
 * Completes everything queued on the window's stream before the call (synchronizing the
 * stream only when something is not yet covered).  Every completion point of the window calls
 * it (flushes, unlock, fence, complete, free); code that reads or writes window or origin
 * memory by other means than the stream calls it first.  Callable with or without
 * module->gpu_lock held.
 */
static inline int ompi_osc_gpuic_gpu_drain(ompi_osc_gpuic_module_t *module)
{
    int rc = ompi_osc_gpuic_agent_complete(module);

    if (rc != OMPI_SUCCESS ||
        __atomic_load_n(&module->gpu_queued, __ATOMIC_ACQUIRE) ==
            __atomic_load_n(&module->gpu_synced, __ATOMIC_ACQUIRE)) {
        return rc;
    }
    return ompi_osc_gpuic_gpu_sync(module);
}
/**
 * Whether the work the stream had been given when ompi_osc_gpuic_gpu_ticket() returned
 * @p ticket is done; asks the driver without waiting when no synchronization covered it yet.
 * *rc_p: an error the stream's work reported (then true is returned).
 */
bool ompi_osc_gpuic_gpu_done(ompi_osc_gpuic_module_t *module, uint64_t ticket, int *rc_p);

/**
 * Executes an accumulate-family call (origin NULL-typed for MPI_NO_OP: op says; rdt NULL when
 * not fetching) on a GPU window with a kernel, when it can: the target region mapped here, an
 * op and element type (@p prim, @p nelem elements) the kernels know, naturally aligned
 * elements (osc_gpuic_gpu_acc.c).  false: it cannot, nothing was done; true: done, its
 * result in *rc_p.
 */
bool ompi_osc_gpuic_gpu_acc(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, int ocount, struct ompi_datatype_t *odt,
                            void *result, int rcount, struct ompi_datatype_t *rdt, int tcount,
                            struct ompi_datatype_t *tdt, struct ompi_op_t *op,
                            struct ompi_datatype_t *prim, size_t nelem, int *rc_p);
/** MPI_Compare_and_swap of a 4- or 8-byte element the same way; false: it cannot. */
bool ompi_osc_gpuic_gpu_cas(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, const void *compare, void *result,
                            struct ompi_datatype_t *dt, int *rc_p);

/**
 * Registers a GPU window's device memory with the executor of remote atomics
 * (osc_gpuic_gpu_exec.c), before peers can reach it; does nothing for other windows.
 * MPI_ERR_NO_MEM when the registry cannot grow.
 */
int ompi_osc_gpuic_gpu_exec_add(ompi_osc_gpuic_module_t *module);
/** Registers other device memory of @p module's process with the executor, its atomics run
 *  by the window's agent (the sync block of the stream-triggered calls); as
 *  ompi_osc_gpuic_gpu_exec_add(). */
int ompi_osc_gpuic_gpu_exec_add_region(ompi_osc_gpuic_module_t *module, void *base, size_t size);
/** Takes the window and its other regions out of the executor's registry, waiting for a
 *  request executing on them; before their memory and the agent go. */
void ompi_osc_gpuic_gpu_exec_remove(ompi_osc_gpuic_module_t *module);
/**
 * The remote call handler (gpuic_call_handler_t) of the component's context in processes that
 * use CUDA: executes a gpuic_call_atomic_t on a GPU window of this process with its agent.
 * GPUIC_ERR_BAD_KEY when the range is in no GPU window, GPUIC_ERR_UNSUPPORTED for a type or op
 * the kernels lack or with the agent off, GPUIC_ERR_NO_RESOURCE when the window is busy.
 */
gpuic_status_t ompi_osc_gpuic_gpu_exec_handler(void *arg, const void *req, size_t req_len,
                                               void *reply, size_t reply_cap,
                                               size_t *reply_len_p);
/** libgpuic's codes (enum gpuic_acc_type, enum gpuic_acc_op) of the kernels' element type and
 *  op; false when the pair has none. */
bool ompi_osc_gpuic_gpu_exec_codes(int kernel_type, int kernel_op, int *type_p, int *op_p);

/**
 * An accumulate-family call (arguments as ompi_osc_gpuic_gpu_acc) on GPU window memory of a
 * peer this process does not map (another node), executed by the peer's window agent through
 * remote calls (osc_gpuic_gpu_exec.c), when the kernels know the op and element type and the
 * target elements are naturally aligned.  false: it cannot, nothing was done (the lock path
 * takes it); true: done, its result in *rc_p.
 */
bool ompi_osc_gpuic_gpu_acc_remote(ompi_osc_gpuic_module_t *module, int target,
                                   const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                                   const void *origin, int ocount, struct ompi_datatype_t *odt,
                                   void *result, int rcount, struct ompi_datatype_t *rdt,
                                   int tcount, struct ompi_datatype_t *tdt,
                                   struct ompi_op_t *op, struct ompi_datatype_t *prim,
                                   size_t nelem, int *rc_p);
/** MPI_Compare_and_swap of a 1-, 2-, 4- or 8-byte element the same way; false: it cannot. */
bool ompi_osc_gpuic_gpu_cas_remote(ompi_osc_gpuic_module_t *module, int target,
                                   const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                                   const void *origin, const void *compare, void *result,
                                   struct ompi_datatype_t *dt, int *rc_p);

/** Sets up the window agent's command ring and stream (no launch) when osc_gpuic_gpu_agent is
 *  on or some peer is on another node (its atomics on this window go to the agent): at window
 *  creation, so that peers' requests executed inside UCX callbacks find them
 *  and make no allocations in the CUDA driver there. */
int ompi_osc_gpuic_agent_prepare(ompi_osc_gpuic_module_t *module);
/** Stops the window agent and frees it (window free; osc_gpuic_gpu_agent.c). */
void ompi_osc_gpuic_agent_release(ompi_osc_gpuic_module_t *module);

/** A host copy of a user buffer in device memory (host code never dereferences device memory). */
typedef struct ompi_osc_gpuic_bounce {
    void      *user;  /**< the caller's buffer */
    void      *buf;   /**< what to use instead: user itself, or the host copy (same layout) */
    char      *host;  /**< the host copy of [user + lo, user + lo + span), NULL when none */
    ptrdiff_t lo;
    size_t    span;
} ompi_osc_gpuic_bounce_t;
/** Sets b->buf: @p buf itself for host memory, else a host copy of its layout's bytes. */
int ompi_osc_gpuic_bounce_in(ompi_osc_gpuic_bounce_t *b, void *buf, int count,
                             struct ompi_datatype_t *dt);
/** Frees the host copy, first writing it back to the device when @p copy_out. */
int ompi_osc_gpuic_bounce_out(ompi_osc_gpuic_bounce_t *b, bool copy_out);

/* Dynamic windows (osc_gpuic_dynamic.c) */
/** Allocates and registers the window's region table (module->base/size describe it). */
int ompi_osc_gpuic_dynamic_setup(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx);
/** Size of the region table's header, the fixed part a dynamic window publishes. */
size_t ompi_osc_gpuic_dynamic_table_size(int max_attached);
/**
 * Finds the region of @p target's dynamic window holding lo, rereading the target's table
 * when it changed.  MPI_ERR_RMA_RANGE unless [lo, hi) lies in that region and the adjacent
 * regions after it (region->run).  Binary search: O(log regions).
 */
int ompi_osc_gpuic_dynamic_resolve(ompi_osc_gpuic_module_t *module, int target, uint64_t lo,
                                   uint64_t hi, ompi_osc_gpuic_region_t **region_p);
/** Releases the cached regions of every peer and every region still attached. */
void ompi_osc_gpuic_dynamic_cleanup(ompi_osc_gpuic_module_t *module);
/**
 * The piece of [raddr, raddr + len) that one region holds, for an access that
 * ompi_osc_gpuic_check_range() accepted with @p region: *piece_p is the region (@p region or
 * one of the run of adjacent regions after it) holding raddr; returns the bytes from raddr
 * it holds, at most @p len; 0 when raddr lies outside the run.
 */
size_t ompi_osc_gpuic_region_piece(ompi_osc_gpuic_region_t *region, uint64_t raddr, size_t len,
                                   ompi_osc_gpuic_region_t **piece_p);

/* Accumulate family (osc_gpuic_accumulate.c) */
int ompi_osc_gpuic_accumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win);
int ompi_osc_gpuic_raccumulate(const void *origin_addr, int origin_count,
                               struct ompi_datatype_t *origin_dt, int target,
                               ptrdiff_t target_disp, int target_count,
                               struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                               struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_gpuic_get_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win);
int ompi_osc_gpuic_rget_accumulate(const void *origin_addr, int origin_count,
                                   struct ompi_datatype_t *origin_dt, void *result_addr,
                                   int result_count, struct ompi_datatype_t *result_dt,
                                   int target, ptrdiff_t target_disp, int target_count,
                                   struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                   struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_gpuic_fetch_and_op(const void *origin_addr, void *result_addr,
                                struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                                struct ompi_op_t *op, struct ompi_win_t *win);
int ompi_osc_gpuic_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                    void *result_addr, struct ompi_datatype_t *dt, int target,
                                    ptrdiff_t target_disp, struct ompi_win_t *win);

/* Active target (osc_gpuic_active_target.c) */
/**
 * Translates @p group to ranks of the window's communicator: *ranks_p (freed by the caller)
 * holds *n_p ranks.  MPI_ERR_GROUP if one is not in it.
 */
int ompi_osc_gpuic_group_ranks(ompi_osc_gpuic_module_t *module, struct ompi_group_t *group,
                               int **ranks_p, int *n_p);
int ompi_osc_gpuic_fence(int mpi_assert, struct ompi_win_t *win);
int ompi_osc_gpuic_start(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win);
int ompi_osc_gpuic_complete(struct ompi_win_t *win);
int ompi_osc_gpuic_post(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win);
int ompi_osc_gpuic_wait(struct ompi_win_t *win);
int ompi_osc_gpuic_test(struct ompi_win_t *win, int *flag);

/* Passive target (osc_gpuic_passive_target.c) */
int ompi_osc_gpuic_lock(int lock_type, int target, int mpi_assert, struct ompi_win_t *win);
int ompi_osc_gpuic_unlock(int target, struct ompi_win_t *win);
int ompi_osc_gpuic_lock_all(int mpi_assert, struct ompi_win_t *win);
int ompi_osc_gpuic_unlock_all(struct ompi_win_t *win);
int ompi_osc_gpuic_sync(struct ompi_win_t *win);
int ompi_osc_gpuic_flush(int target, struct ompi_win_t *win);
int ompi_osc_gpuic_flush_all(struct ompi_win_t *win);
int ompi_osc_gpuic_flush_local(int target, struct ompi_win_t *win);
int ompi_osc_gpuic_flush_local_all(struct ompi_win_t *win);

/* Requests (osc_gpuic_request.c) */
/** Creates a request for @p win that completes when every operation so far on @p ep is done. */
int ompi_osc_gpuic_request_flush_ep(struct ompi_win_t *win, gpuic_ep_t *ep,
                                    struct ompi_request_t **request);
/** Creates a request for @p win that is complete already. */
int ompi_osc_gpuic_request_completed(struct ompi_win_t *win, struct ompi_request_t **request);
/**
 * Creates a request for @p win that completes once the window's stream has run the work it
 * had when ompi_osc_gpuic_gpu_ticket() returned @p ticket, as the next opal_progress call after
 * that notices (a synchronization that covered it, or the stream found idle).
 */
int ompi_osc_gpuic_request_gpu(struct ompi_win_t *win, ompi_osc_gpuic_module_t *module,
                               uint64_t ticket, struct ompi_request_t **request);
/**
 * Completes the requests of ompi_osc_gpuic_request_gpu() on @p module still pending (with the
 * error of the window's stream, if it reports one) and gives back the module's hold on the
 * progress poller: the window's free, after its last synchronization.
 */
void ompi_osc_gpuic_request_gpu_release(ompi_osc_gpuic_module_t *module);

/**
 * Gives UCX a turn while some live window is reached through UCX.  Peers' operations that UCX
 * carries as messages (its shared-memory transports emulate RMA and atomics on memory they
 * cannot map) complete only when this process progresses; a program polling a window with
 * calls that finish at once (an atomic and a flush to itself) would otherwise never serve them.
 * Called by the flushes and MPI_Win_sync; one load when every window is mapped.
 */
static inline void ompi_osc_gpuic_progress_poll(void)
{
    if (__atomic_load_n(&mca_osc_gpuic_component.progress_windows, __ATOMIC_RELAXED) > 0) {
        (void)gpuic_context_progress(mca_osc_gpuic_component.ctx);
    }
}

/** The module behind a window. */
static inline ompi_osc_gpuic_module_t *ompi_osc_gpuic_module(struct ompi_win_t *win)
{
    return (ompi_osc_gpuic_module_t *)win->w_osc_module;
}

/**
 * What a synchronization call returns: its own error @p rc, or else the error a device call on
 * the window recorded since the last synchronization (device errors surface here).
 */
static inline int ompi_osc_gpuic_sync_result(ompi_osc_gpuic_module_t *module, int rc)
{
    /* A window without a device error word has nothing to report (the common, host case). */
    if (rc != OMPI_SUCCESS || module->dev_error == NULL) {
        return rc;
    }
    return ompi_osc_gpuic_device_error(module);
}

/* Stream-triggered calls (osc_gpuic_stream*.c; osc_gpuic_stream.h lists the files) */
/**
 * Collective, at window creation: when any process of the window has device memory, gives
 * each process that can a sync block and maps the same-node peers' blocks.  A process that
 * cannot (no CUDA) takes part without one; only the exchange itself can fail.
 */
int ompi_osc_gpuic_stream_setup(ompi_osc_gpuic_module_t *module);
/** Unmaps and frees what ompi_osc_gpuic_stream_setup() built. */
void ompi_osc_gpuic_stream_cleanup(ompi_osc_gpuic_module_t *module);
/** ext entry points of the stream-triggered calls (osc_gpuic_ext.h); NULL when the component
 *  was built without their kernels. */
extern const ompi_osc_gpuic_stream_ops_t *const ompi_osc_gpuic_stream_ops;

/** Log helper: this process's rank in the window. */
static inline int ompi_osc_gpuic_rank(const ompi_osc_gpuic_module_t *module)
{
    return ompi_comm_rank(module->comm);
}

END_C_DECLS

#endif /* OMPI_OSC_GPUIC_H */
