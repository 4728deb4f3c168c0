/*
 * mpix_gpuic_stream_layout.h - what the stream-triggered calls share between the component's
 * host code that checks and enqueues them (osc_gpuic_stream*.c) and the kernels that run them
 * (osc_gpuic_stream_kernels.cu): the sync block and the kernels' arguments.  Internal: not
 * installed.
 *
 * Every process of a GPU window owns one sync block in device memory, which same-node peers
 * map through CUDA IPC like the window memory.  Its words, all 8 bytes and only ever growing:
 *
 *   fence[r]        the last fence epoch rank r announced to this process
 *   post[r]         how many MPIX_Win_post_enqueue of rank r named this process
 *   complete[r]     how many MPIX_Win_complete_enqueue of rank r named this process
 *   lock            shared holders of this process's window from enqueued lock_all epochs
 *                   (it is the one word that goes down: at unlock_all)
 *
 * followed by words only this process touches, through its own kernels:
 *
 *   epoch           fence epochs this process has entered
 *   posts_to[r]     posts it addressed to rank r
 *   starts_from[r]  starts it made naming rank r (= the post count it expects from r)
 *   completes_to[r] completes it addressed to rank r
 *   waits_from[r]   waits it made naming rank r (= the complete count it expects from r)
 *
 * Counting, not flags, is what lets a CUDA graph replay an epoch any number of times: the
 * kernel derives the value it waits for from its own counter, which it increments itself.
 */
#ifndef MPIX_GPUIC_STREAM_LAYOUT_H
#define MPIX_GPUIC_STREAM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "mpix_gpuic_device_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Group bitmaps of the PSCW and lock_all kernels: 64 words, so ranks 0..4095. */
#define MPIX_GPUIC_STREAM_GROUP_WORDS 64
#define MPIX_GPUIC_STREAM_GROUP_MAX (64 * MPIX_GPUIC_STREAM_GROUP_WORDS)

/* Word indices in a sync block of a window of n processes. */
#define MPIX_GPUIC_SYNC_FENCE(n, r)        ((size_t)(r))
#define MPIX_GPUIC_SYNC_POST(n, r)         ((size_t)(n) + (size_t)(r))
#define MPIX_GPUIC_SYNC_COMPLETE(n, r)     (2 * (size_t)(n) + (size_t)(r))
#define MPIX_GPUIC_SYNC_LOCK(n)            (3 * (size_t)(n))
#define MPIX_GPUIC_SYNC_EPOCH(n)           (3 * (size_t)(n) + 1)
#define MPIX_GPUIC_SYNC_POSTS_TO(n, r)     (3 * (size_t)(n) + 2 + (size_t)(r))
#define MPIX_GPUIC_SYNC_STARTS_FROM(n, r)  (4 * (size_t)(n) + 2 + (size_t)(r))
#define MPIX_GPUIC_SYNC_COMPLETES_TO(n, r) (5 * (size_t)(n) + 2 + (size_t)(r))
#define MPIX_GPUIC_SYNC_WAITS_FROM(n, r)   (6 * (size_t)(n) + 2 + (size_t)(r))
/** Bytes of a sync block of a window of n processes. */
#define MPIX_GPUIC_SYNC_BYTES(n)           ((7 * (size_t)(n) + 2) * sizeof(uint64_t))

/** Bits of the kernels' flags arguments. */
/** Every block or window word the kernel writes is on this GPU: device-scope ordering suffices
 *  (the scope the window's device handle chose for the target, or for all sync blocks). */
#define MPIX_GPUIC_STREAM_SAME_GPU 0x1u
/** Synchronization kernels: some target of the window takes the proxy path, so completing
 *  everything (fence, unlock_all, complete) must also drain the window's device queue. */
#define MPIX_GPUIC_STREAM_PROXY    0x2u
/** Synchronization kernels: every target of the window's device handle is on this GPU (its
 *  MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU), so the release fence before a signal may be
 *  device-scope; MPIX_GPUIC_STREAM_SAME_GPU there speaks of the sync blocks only. */
#define MPIX_GPUIC_STREAM_DATA_SAME_GPU 0x4u

/** Puts and gets of at most this many bytes to a P2P target run as one warp on addresses the
 *  host resolved (mpix_gpuic_k_copy_small); larger ones take the device API's block copy. */
#define MPIX_GPUIC_STREAM_SMALL_BYTES 4096

/** The kernels begin with the programmatic-dependent-launch prologue (griddepcontrol) when
 *  compiled for this virtual architecture or a newer one (sm_90), and the component launches
 *  them with the PDL attribute only when the code loaded for them is such code (its
 *  CU_FUNC_ATTRIBUTE_PTX_VERSION). */
#define MPIX_GPUIC_STREAM_PDL_ARCH 90

/** Sync blocks whose addresses the synchronization kernels get in their arguments (the first
 *  ranks); the others' come from a device array. */
#define MPIX_GPUIC_STREAM_INLINE_BLOCKS 32

/** Arguments of the small P2P copy (put or get, addresses resolved on the host). */
typedef struct mpix_gpuic_stream_copy_args {
    uint64_t dst;      /**< device address written: the target's window (put) or the origin */
    uint64_t src;      /**< device address read */
    uint64_t bytes;
    uint32_t flags;    /**< MPIX_GPUIC_STREAM_SAME_GPU */
    uint32_t reserved;
} mpix_gpuic_stream_copy_args_t;

/** Arguments of the RMA kernels (put, get, accumulate, fetch_and_op, compare_and_swap) and of
 *  the flushes (win and target only). */
typedef struct mpix_gpuic_stream_rma_args {
    MPIX_Win_device win; /**< the window's device handle */
    uint64_t origin;     /**< device address of the origin buffer (0: none) */
    uint64_t result;     /**< device address of the result buffer (0: none) */
    uint64_t compare;    /**< device address of the compare value (CAS) */
    uint64_t bytes;      /**< put/get: bytes in all */
    uint64_t chunk;      /**< put/get: bytes per block, a multiple of the target's disp_unit */
    int64_t  disp;       /**< target displacement (the target's units) */
    int64_t  chunk_disp; /**< chunk in the target's units */
    int32_t  target;     /**< rank */
    int32_t  count;      /**< accumulate: elements */
    int32_t  type;       /**< accumulate family: MPIX_Device_type */
    int32_t  op;         /**< accumulate family: MPIX_Device_op */
    uint32_t flags;      /**< MPIX_GPUIC_STREAM_SAME_GPU when the target is on this GPU */
    uint32_t reserved;
} mpix_gpuic_stream_rma_args_t;

/** Arguments of the synchronization kernels (fence, lock_all, PSCW). */
typedef struct mpix_gpuic_stream_sync_args {
    MPIX_Win_device win;  /**< the window's device handle */
    MPIX_Win_device sync; /**< the handle of the window's sync blocks (a byte-addressed window) */
    uint64_t *own;        /**< device address of this process's own sync block */
    /** Device array of nranks entries: each rank's sync block as mapped here (NULL: none). */
    uint64_t *const *blocks_dev;
    int32_t  target;      /**< unused (-1) */
    int32_t  nranks;
    int32_t  rank;        /**< this process */
    uint32_t flags;       /**< MPIX_GPUIC_STREAM_SAME_GPU (all blocks), _PROXY, _DATA_SAME_GPU */
    /** blocks_dev's first entries, so that small windows' kernels load no address */
    uint64_t *blocks[MPIX_GPUIC_STREAM_INLINE_BLOCKS];
    /** post, start, complete, wait: the group; lock_all, unlock_all: the targets with a sync
     *  block.  Bit r of word r / 64 for rank r. */
    uint64_t group[MPIX_GPUIC_STREAM_GROUP_WORDS];
} mpix_gpuic_stream_sync_args_t;

/** One run of target elements of a host accumulate-family call: @p count elements at the
 *  device address @p target, combined with packed elements [first, first + count). */
typedef struct mpix_gpuic_acc_run {
    uint64_t target;
    uint64_t first;
    uint64_t count;
} mpix_gpuic_acc_run_t;

/** Element types of the host accumulate-family kernels beyond MPIX_Device_type (8- and
 *  16-bit integers, updated by compare-and-swap on the aligned 32-bit word holding them; no
 *  device API call takes them). */
#define MPIX_GPUIC_ACC_INT8   16
#define MPIX_GPUIC_ACC_UINT8  17
#define MPIX_GPUIC_ACC_INT16  18
#define MPIX_GPUIC_ACC_UINT16 19

/** Arguments of the kernels that execute host accumulate-family calls on GPU windows
 *  (osc_gpuic_gpu_acc.c): every address is one the launching context reaches. */
typedef struct mpix_gpuic_acc_args {
    uint64_t target;   /**< first target element when there are no runs */
    uint64_t origin;   /**< packed origin elements (0: MPI_NO_OP) */
    uint64_t result;   /**< receives the packed old elements (0: not fetching) */
    uint64_t compare;  /**< compare-and-swap: the compare element */
    uint64_t runs;     /**< nruns mpix_gpuic_acc_run_t, or 0: count elements from target */
    uint64_t count;    /**< elements in all */
    uint32_t nruns;
    int32_t  type;     /**< MPIX_Device_type or MPIX_GPUIC_ACC_* */
    int32_t  op;       /**< MPIX_Device_op */
    uint32_t flags;    /**< MPIX_GPUIC_STREAM_SAME_GPU: the target memory is on this GPU */
} mpix_gpuic_acc_args_t;

/*
 * The window agent (osc_gpuic_gpu_agent.c, mpix_gpuic_k_agent): one warp that stays resident
 * while host calls keep it busy and executes their small device work (puts, gets,
 * accumulate-family calls on GPU window memory) from a ring of commands in mapped pinned host
 * memory, so that such a call costs a round trip through that memory instead of a kernel
 * launch and a stream synchronization.  It exits after MPIX_GPUIC_AGENT_IDLE_NS without a
 * command; the host launches it again when it finds it stopped.
 *
 * Protocol, host (one poster at a time, under the window's gpu_lock) and agent:
 *  - the host fills slot (seq % SLOTS) of command seq (1, 2, ...), then writes the slot's
 *    tagged copy (tagged[seq % SLOTS]: its fields and first MPIX_GPUIC_AGENT_TAGGED_DATA
 *    inline bytes, 4 bytes per 8-byte word whose upper half is the low 32 bits of seq), then
 *    stores seq in the slot's seq word (release);
 *  - the agent reads the tagged copy, one word per lane, until every word carries the seq it
 *    expects: each word is written and read whole, so a word with the right tag holds that
 *    command's bytes, and the command arrives in one bus round trip with no ordering between
 *    the words needed.  A command whose inline operands go past the tagged bytes is read
 *    from the slot after an acquire load of its seq word (system scope) has returned seq;
 *  - the agent executes the command and stores seq in done (release, system scope) after the
 *    command's writes; the host reads inline results once done >= seq;
 *  - the host reuses a slot only once done shows its command finished;
 *  - stopping: the agent stores STOPPING, fences, checks the next slot once more, and stores
 *    STOPPED and exits only if it is still empty (else back to RUNNING); the host, after
 *    publishing a command, fences, waits while it reads STOPPING (the agent's look may have
 *    come before the command), and launches a new agent if it then reads STOPPED.  Each side
 *    stores before it loads the other's word, so one of them sees the other's store.
 */
#define MPIX_GPUIC_AGENT_SLOTS    64
#define MPIX_GPUIC_AGENT_INLINE   448   /**< inline bytes of a command: origin in, result out */
#define MPIX_GPUIC_AGENT_IDLE_NS  1000000ull
#define MPIX_GPUIC_AGENT_STOPPED  0
#define MPIX_GPUIC_AGENT_RUNNING  1
#define MPIX_GPUIC_AGENT_STOPPING 2

/** What a command asks for. */
enum {
    MPIX_GPUIC_AGENT_PUT = 1, /**< count bytes from origin to target */
    MPIX_GPUIC_AGENT_GET,     /**< count bytes from target to result */
    MPIX_GPUIC_AGENT_ACC,     /**< count elements combined as by mpix_gpuic_k_host_acc */
    MPIX_GPUIC_AGENT_CAS,     /**< one element as by mpix_gpuic_k_host_cas */
    MPIX_GPUIC_AGENT_EXIT     /**< stop now (the window is being freed) */
};

/** One command: the fields of mpix_gpuic_acc_args_t (no runs).  Addresses are device
 *  addresses; the host points them into data (mapped, at the same address) for inline bytes:
 *  an accumulate's origin and result elements may share them (each element is read before it
 *  is written, by the same lane). */
typedef struct mpix_gpuic_agent_cmd {
    uint64_t seq;
    uint32_t what;
    uint32_t flags;     /**< MPIX_GPUIC_STREAM_SAME_GPU */
    int32_t  type;
    int32_t  op;
    uint64_t count;
    uint64_t target;
    uint64_t origin;
    uint64_t result;
    uint64_t compare;
    uint64_t pad;
    uint8_t  data[MPIX_GPUIC_AGENT_INLINE];
} mpix_gpuic_agent_cmd_t;

/** Inline bytes a command's tagged copy carries; the fields before them are the command's
 *  bytes from what to pad (64). */
#define MPIX_GPUIC_AGENT_TAGGED_DATA  64
#define MPIX_GPUIC_AGENT_TAGGED_FIELDS 64
/** Words of a tagged copy: 4 payload bytes each, one per lane of the agent's warp. */
#define MPIX_GPUIC_AGENT_TAGGED_WORDS \
    ((MPIX_GPUIC_AGENT_TAGGED_FIELDS + MPIX_GPUIC_AGENT_TAGGED_DATA) / 4)

/** The ring, in mapped pinned host memory. */
typedef struct mpix_gpuic_agent_ring {
    uint64_t done;       /**< agent: the last command executed */
    uint64_t pad0[7];
    uint64_t state;      /**< MPIX_GPUIC_AGENT_* */
    uint64_t pad1[7];
    mpix_gpuic_agent_cmd_t cmd[MPIX_GPUIC_AGENT_SLOTS];
    /** per slot: the tagged copy of its command (the protocol above) */
    uint64_t tagged[MPIX_GPUIC_AGENT_SLOTS][MPIX_GPUIC_AGENT_TAGGED_WORDS];
} mpix_gpuic_agent_ring_t;

/** The kernels of the embedded image, by index (names in osc_gpuic_stream_launch.c). */
typedef enum mpix_gpuic_stream_kernel {
    MPIX_GPUIC_K_PUT,
    MPIX_GPUIC_K_GET,
    MPIX_GPUIC_K_ACC,
    MPIX_GPUIC_K_FOP,
    MPIX_GPUIC_K_CAS,
    MPIX_GPUIC_K_FLUSH,
    MPIX_GPUIC_K_FLUSH_ALL,
    MPIX_GPUIC_K_FLUSH_LOCAL,
    MPIX_GPUIC_K_FENCE,
    MPIX_GPUIC_K_LOCK_ALL,
    MPIX_GPUIC_K_UNLOCK_ALL,
    MPIX_GPUIC_K_POST,
    MPIX_GPUIC_K_START,
    MPIX_GPUIC_K_COMPLETE,
    MPIX_GPUIC_K_WAIT,
    MPIX_GPUIC_K_COPY_SMALL,
    MPIX_GPUIC_K_HOST_ACC,
    MPIX_GPUIC_K_HOST_CAS,
    MPIX_GPUIC_K_AGENT,
    MPIX_GPUIC_K_COPY_BULK,
    MPIX_GPUIC_K_COUNT
} mpix_gpuic_stream_kernel_t;

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_STREAM_LAYOUT_H */
