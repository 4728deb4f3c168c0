/*
 * osc_gpuic_stream.h - what the files of the stream-triggered calls share (internal to the
 * component):
 *
 *   osc_gpuic_stream.c         a window's sync blocks and stream state, the checks every call
 *                              makes (reach, access epoch, buffers)
 *   osc_gpuic_stream_rma.c     put, get, the accumulate family, the flushes
 *   osc_gpuic_stream_epoch.c   fence, lock_all/unlock_all, post/start/complete/wait
 *   osc_gpuic_stream_launch.c  the embedded kernels (osc_gpuic_stream_kernels.cu): loading,
 *                              launch sizes, launches through the run-time-loaded driver
 */
#ifndef OMPI_OSC_GPUIC_STREAM_H
#define OMPI_OSC_GPUIC_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "osc_gpuic.h"
#include "mpix_gpuic_stream_layout.h"

/** One target as the enqueue calls see it (a copy of the device handles' view). */
typedef struct ompi_osc_gpuic_stream_peer {
    int32_t  data_path; /**< MPIX_Gpuic_device_path of the window's device handle */
    int32_t  sync_path; /**< ...of the sync-block handle (fence, PSCW, lock_all) */
    uint32_t flags;     /**< MPIX_GPUIC_DEVICE_PEER_* of the window's device handle */
    uint64_t base;      /**< device address of the target's window (P2P path; 0: none) */
    uint64_t *block;    /**< device address of the target's sync block as mapped here, or NULL */
} ompi_osc_gpuic_stream_peer_t;

/** Epoch kinds as the enqueue calls have opened them (enqueue order, not execution order). */
typedef enum ompi_osc_gpuic_stream_epoch {
    OMPI_OSC_GPUIC_STREAM_EPOCH_NONE,
    OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE,
    OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL,
    OMPI_OSC_GPUIC_STREAM_EPOCH_START
} ompi_osc_gpuic_stream_epoch_t;

/** What a window keeps for the stream-triggered calls (module->stream_state). */
typedef struct ompi_osc_gpuic_stream_state {
    /* Built at window creation (ompi_osc_gpuic_stream_setup). */
    void             *block;      /**< this process's sync block (device memory) */
    gpuic_cuda_ipc_t *ipc;        /**< per rank: its export of its block (valid[r] set) */
    uint8_t          *valid;      /**< per rank: it has a block */
    void             **mapped;    /**< per rank: our mapping of its block (ours: block) */
    /** Peers on other nodes reach a block through UCX and the proxy: its owner's address and
     *  packed key, per rank (NULL where it is mapped, or has no key); ours registered in mr. */
    uint64_t         *addr;
    void             **rkey_blob;
    gpuic_mr_t       *mr;
    ompi_osc_gpuic_stream_peer_t *peers; /**< per rank, filled in by the description */

    /* The description, made on first use from the window's device handle (and again when
     * that handle was released and rebuilt); read without a lock once ready is set. */
    int32_t  nranks;
    int32_t  rank;
    void     *win;        /**< the window's device description it was made from */
    void     *sync_dev;   /**< device copy of the sync blocks' MPIX_Gpuic_device_win */
    MPIX_Win_device win_value;  /**< the window's device handle, as kernels take it */
    MPIX_Win_device sync_value; /**< the sync blocks' device handle */
    void     *blocks_dev; /**< device array of the mapped sync blocks, by rank */
    /** MPIX_GPUIC_STREAM_SAME_GPU when every sync block is on this GPU; _DATA_SAME_GPU when
     *  every target's window is; _PROXY when some target takes the proxy path (the window has a
     *  device queue).  The synchronization kernels' flags. */
    uint32_t sync_flags;
    /** Every target the window's device handle reaches takes the P2P path, and there is no
     *  device queue: every enqueued operation completes with its own kernel, so enqueued
     *  flush_all has nothing to do. */
    bool     all_p2p;
    bool     ready;       /**< the description is made and lock initialised */

    /* The epochs the enqueue calls have opened, in enqueue order. */
    pthread_mutex_t lock; /**< guards the fields below, and orders one window's epoch launches */
    ompi_osc_gpuic_stream_epoch_t epoch; /**< access epoch opened by enqueued calls */
    bool     exposed;     /**< an enqueued post is not yet matched by an enqueued wait */
    uint64_t start_group[MPIX_GPUIC_STREAM_GROUP_WORDS]; /**< group of the enqueued start */
    uint64_t post_group[MPIX_GPUIC_STREAM_GROUP_WORDS];  /**< group of the enqueued post */
} ompi_osc_gpuic_stream_state_t;

/** Kinds of reach a call needs of a target. */
typedef enum ompi_osc_gpuic_stream_reach {
    OMPI_OSC_GPUIC_STREAM_REACH_DATA, /**< its window memory (RMA, flush) */
    OMPI_OSC_GPUIC_STREAM_REACH_SYNC  /**< its sync block (fence, PSCW, lock_all) */
} ompi_osc_gpuic_stream_reach_t;

/* osc_gpuic_stream.c */

/**
 * The stream state of @p win's window, described on first use: MPI_ERR_WIN for a window of
 * no gpuic module, MPI_ERR_UNSUPPORTED_OPERATION when no CUDA device is usable in this process
 * or no process of the window has device memory.
 */
int ompi_osc_gpuic_stream_state_get(struct ompi_win_t *win, ompi_osc_gpuic_module_t **module_p,
                                    ompi_osc_gpuic_stream_state_t **st_p);
/** MPI_ERR_RANK unless @p rank is a rank of the window. */
int ompi_osc_gpuic_stream_check_rank(const ompi_osc_gpuic_stream_state_t *st, int rank);
/**
 * MPI_ERR_UNSUPPORTED_OPERATION when the device cannot reach @p rank as @p reach needs: the
 * one place that refuses such targets (today those the device handles mark
 * MPIX_GPUIC_DEVICE_PATH_NONE: dynamic windows, device memory UCX cannot reach).
 */
int ompi_osc_gpuic_stream_check_reach(const ompi_osc_gpuic_stream_state_t *st, int rank,
                                      ompi_osc_gpuic_stream_reach_t reach);
/** MPI_ERR_RMA_SYNC unless an enqueued or host access epoch covers @p rank (a passive-target
 *  one when @p passive). */
int ompi_osc_gpuic_stream_check_access(ompi_osc_gpuic_module_t *module,
                                       ompi_osc_gpuic_stream_state_t *st, int rank,
                                       bool passive);
/**
 * The device address of the user buffer @p ptr + @p lb that kernels read or write @p bytes of:
 * device, managed, or pinned and mapped host memory; 0 when @p bytes is 0.  MPI_ERR_BUFFER for
 * anything else.
 */
int ompi_osc_gpuic_stream_buffer(const void *ptr, ptrdiff_t lb, size_t bytes,
                                 uint64_t *dptr_p);

/* osc_gpuic_stream_rma.c and osc_gpuic_stream_epoch.c: the entries of
 * ompi_osc_gpuic_stream_ops (osc_gpuic_ext.h documents them, by MPIX call). */

int ompi_osc_gpuic_stream_put(const void *origin, int ocount, struct ompi_datatype_t *odt,
                              int target, ptrdiff_t tdisp, int tcount,
                              struct ompi_datatype_t *tdt, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_get(void *origin, int ocount, struct ompi_datatype_t *odt, int target,
                              ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt,
                              struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_accumulate(const void *origin, int ocount,
                                     struct ompi_datatype_t *odt, int target, ptrdiff_t tdisp,
                                     int tcount, struct ompi_datatype_t *tdt,
                                     struct ompi_op_t *op, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_fetch_and_op(const void *origin, void *result,
                                       struct ompi_datatype_t *dt, int target, ptrdiff_t tdisp,
                                       struct ompi_op_t *op, struct ompi_win_t *win,
                                       void *stream);
int ompi_osc_gpuic_stream_compare_and_swap(const void *origin, const void *compare,
                                           void *result, struct ompi_datatype_t *dt, int target,
                                           ptrdiff_t tdisp, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_flush(int target, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_flush_all(struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_flush_local(int target, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_fence(int mpi_assert, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_lock_all(int mpi_assert, struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_unlock_all(struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_post(struct ompi_group_t *group, int mpi_assert,
                               struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_start(struct ompi_group_t *group, int mpi_assert,
                                struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_complete(struct ompi_win_t *win, void *stream);
int ompi_osc_gpuic_stream_wait(struct ompi_win_t *win, void *stream);

/* osc_gpuic_stream_launch.c */

/* The window agent (osc_gpuic_gpu_agent.c); every call under module->gpu_lock. */
/** The slot of the next command (set up on first use), once it is free; the caller fills in
 *  everything but seq, then commits. */
int ompi_osc_gpuic_agent_begin(ompi_osc_gpuic_module_t *module, mpix_gpuic_agent_cmd_t **cmd_p);
/** Publishes the command begun (launching the agent if it stopped); *seq_p its number. */
int ompi_osc_gpuic_agent_commit(ompi_osc_gpuic_module_t *module, uint64_t *seq_p);
/** Commits the command begun and waits until it is done (its inline results readable). */
int ompi_osc_gpuic_agent_call(ompi_osc_gpuic_module_t *module);

/** The kernels' element type (MPIX_Device_type) of the predefined @p dt, by Open MPI's
 *  reduction class and size; with @p small also the host kernels' 8- and 16-bit integers
 *  (MPIX_GPUIC_ACC_*, which no device call takes).  MPI_ERR_TYPE when they have none. */
int ompi_osc_gpuic_stream_named_type(struct ompi_datatype_t *dt, bool small, int *type_p);
/** The kernels' operation (MPIX_Device_op) for @p op on elements of @p type; MPI_ERR_OP for
 *  what they cannot do (MPI_NO_OP only when @p allow_no_op). */
int ompi_osc_gpuic_stream_op(struct ompi_op_t *op, int type, bool allow_no_op, int *op_p);

/** Threads of a synchronization kernel for a window of @p nranks: one per rank, up to 256. */
unsigned ompi_osc_gpuic_stream_sync_threads(int nranks);
/**
 * How the put and get kernels split @p bytes for a target of displacement unit @p disp_unit:
 * one block per chunk of about 64 KiB, each chunk a whole number of displacement units and of
 * 16 bytes (the widest copy unit).
 */
void ompi_osc_gpuic_stream_xfer_shape(uint64_t bytes, uint64_t disp_unit, unsigned *grid_p,
                                      unsigned *block_p, uint64_t *chunk_p);
/**
 * Loads the embedded image, every kernel of it, into the current context, as the first launch
 * there would (a no-op once loaded).
 */
int ompi_osc_gpuic_stream_load(void);
/**
 * Launches kernel @p kernel (mpix_gpuic_stream_kernel_t) of the embedded image, loaded into
 * the current context on first use, on @p stream with one argument, the structure at @p args;
 * with programmatic dependent launch when the loaded code begins with the griddepcontrol
 * prologue (MPIX_GPUIC_STREAM_PDL_ARCH) and osc_gpuic_stream_pdl is true.
 */
int ompi_osc_gpuic_stream_launch(int kernel, unsigned grid, unsigned block, void *stream,
                                 void *args);

#endif /* OMPI_OSC_GPUIC_STREAM_H */
