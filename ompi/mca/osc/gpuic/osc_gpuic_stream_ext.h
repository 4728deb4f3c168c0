/*
 * osc_gpuic_stream_ext.h - what the component offers libmpix_gpuic for the stream-triggered
 * calls (MPIX_*_enqueue): a window's device-side synchronization state, kernel launches
 * through the run-time-loaded driver, and checks of buffers and host epochs.  Reached through
 * ompi_osc_gpuic_ext_t.stream (osc_gpuic_ext.h); implemented in osc_gpuic_stream.c.
 */
#ifndef OMPI_OSC_GPUIC_STREAM_EXT_H
#define OMPI_OSC_GPUIC_STREAM_EXT_H

#include <pthread.h>
#include <stdint.h>

#include "mpix_gpuic_stream_layout.h"

/** One target as the enqueue calls see it on the host (a copy of the device handles' view). */
typedef struct ompi_osc_gpuic_stream_peer {
    int32_t  data_path; /**< MPIX_Gpuic_device_path of the window's device handle */
    int32_t  sync_path; /**< ...of the sync-block handle (fence, PSCW, lock_all) */
    uint64_t size;      /**< bytes of the target's window */
    int32_t  disp_unit; /**< the target's displacement unit */
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

/** A window's stream state: built by the component, the epoch fields kept by libmpix_gpuic. */
typedef struct ompi_osc_gpuic_stream_win {
    int32_t  nranks;
    int32_t  rank;
    void     *win;       /**< the window's device handle (MPIX_Win_device) */
    void     *sync;      /**< device handle of the sync blocks; NULL when this process has none */
    uint64_t *own;       /**< device address of this process's sync block */
    const ompi_osc_gpuic_stream_peer_t *peers; /**< nranks entries */
    uint64_t *const *blocks_dev; /**< device array of every rank's peers[r].block */
    /** MPIX_GPUIC_STREAM_SAME_GPU when every sync block is on this GPU; _DATA_SAME_GPU when
     *  every target's window is; _PROXY when some target takes the proxy path (the window has a
     *  device queue).  The synchronization kernels' flags. */
    uint32_t sync_flags;
    /** Every target the window's device handle reaches takes the P2P path, and there is no
     *  device queue: every enqueued operation completes with its own kernel, so enqueued
     *  flush_all has nothing to do. */
    int      all_p2p;
    pthread_mutex_t lock; /**< guards the fields below */
    ompi_osc_gpuic_stream_epoch_t epoch; /**< access epoch opened by enqueued calls */
    int      exposed;    /**< an enqueued post is not yet matched by an enqueued wait */
    uint64_t start_group[MPIX_GPUIC_STREAM_GROUP_WORDS]; /**< group of the enqueued start */
    uint64_t post_group[MPIX_GPUIC_STREAM_GROUP_WORDS];  /**< group of the enqueued post */
} ompi_osc_gpuic_stream_win_t;

/** The kernels libmpix_gpuic embeds: an image cuModuleLoadData takes, and names by index. */
typedef struct ompi_osc_gpuic_stream_image {
    const void        *image;
    const char *const *names;
    int               nkernels;
} ompi_osc_gpuic_stream_image_t;

/** Entry points; each returns an MPI error class. */
typedef struct ompi_osc_gpuic_stream_ops {
    /**
     * The window's stream state.  MPI_ERR_UNSUPPORTED_OPERATION when no CUDA device is usable
     * in this process or no process of the window has device memory.
     */
    int (*window)(void *module, ompi_osc_gpuic_stream_win_t **sw_p);
    /**
     * The device address of a user buffer kernels read or write: device, managed, or pinned
     * and mapped host memory.  MPI_ERR_BUFFER for anything else.
     */
    int (*buffer)(const void *ptr, uint64_t *dptr_p);
    /**
     * Launches kernel @p kernel of @p image (loaded into the current context on first use) on
     * @p stream with one argument, the structure at @p args; with programmatic dependent
     * launch when the loaded code begins with the griddepcontrol prologue
     * (MPIX_GPUIC_STREAM_PDL_ARCH) and osc_gpuic_stream_pdl is true.
     */
    int (*launch)(const ompi_osc_gpuic_stream_image_t *image, int kernel, unsigned grid,
                  unsigned block, void *stream, void *args);
    /**
     * MPI_SUCCESS when a host access epoch covers @p target now; *passive_p tells whether it
     * is a passive-target one (lock, lock_all).
     */
    int (*host_access)(void *module, int target, int *passive_p);
} ompi_osc_gpuic_stream_ops_t;

#endif /* OMPI_OSC_GPUIC_STREAM_EXT_H */
