/*
 * Component support of the stream-triggered calls (MPIX_*_enqueue, mpix_gpuic_stream.c):
 *
 *  - per GPU window, a sync block in device memory per process (layout in
 *    mpix_gpuic_stream_layout.h), exported to same-node peers through CUDA IPC like the window
 *    memory, and a device handle describing the blocks as a byte-addressed window, so that the
 *    synchronization kernels reach them with the device API;
 *  - a host copy of what the window's device handle says of each target, for the checks made
 *    at enqueue time;
 *  - kernel launches through the run-time-loaded driver (modules loaded once per context),
 *    with programmatic dependent launch where the loaded code allows it.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/proc/proc.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream_ext.h"

/** What a window keeps for the stream-triggered calls. */
typedef struct ompi_osc_gpuic_stream_state {
    ompi_osc_gpuic_stream_win_t  sw;     /**< handed to libmpix_gpuic */
    ompi_osc_gpuic_stream_peer_t *peers; /**< sw.peers */
    void             *block;      /**< this process's sync block (device memory) */
    gpuic_cuda_ipc_t *ipc;        /**< per rank: its export of its block (valid[r] set) */
    uint8_t          *valid;      /**< per rank: it has a block */
    void             **mapped;    /**< per rank: our mapping of its block (ours: block) */
    void             *sync_dev;   /**< device copy of the sync blocks' MPIX_Gpuic_device_win */
    void             *blocks_dev; /**< device array of the mapped sync blocks, by rank */
    void             *win_seen;   /**< the data handle the host copy was made from */
    bool             ready;       /**< sw is filled in */
} ompi_osc_gpuic_stream_state_t;

/** What each process tells the others about its sync block. */
typedef struct ompi_osc_gpuic_stream_info {
    uint32_t         valid;
    uint32_t         reserved;
    gpuic_cuda_ipc_t ipc;
} ompi_osc_gpuic_stream_info_t;

/* Loaded kernels: one module per (context, image), found by a short linear search. */
#define OMPI_OSC_GPUIC_STREAM_MODULES 16
#define OMPI_OSC_GPUIC_STREAM_KERNELS 32

typedef struct ompi_osc_gpuic_stream_module {
    void       *ctx;
    const void *image;
    void       *module;
    void       *fn[OMPI_OSC_GPUIC_STREAM_KERNELS];
    /** per kernel: gpuic_cuda_launch() flags, written before fn[] is published */
    unsigned   flags[OMPI_OSC_GPUIC_STREAM_KERNELS];
} ompi_osc_gpuic_stream_module_t;

static ompi_osc_gpuic_stream_module_t ompi_osc_gpuic_stream_modules[OMPI_OSC_GPUIC_STREAM_MODULES];
static int ompi_osc_gpuic_stream_nmodules;
static pthread_mutex_t ompi_osc_gpuic_stream_modules_lock = PTHREAD_MUTEX_INITIALIZER;

/* Maps peer @p rank's sync block when it is on this node (other nodes: not reachable yet). */
static void ompi_osc_gpuic_stream_map_peer(ompi_osc_gpuic_module_t *module,
                                           ompi_osc_gpuic_stream_state_t *st, int rank)
{
    void *ptr = NULL;

    if (!st->valid[rank]) {
        return;
    }
    if (rank == ompi_comm_rank(module->comm)) {
        st->mapped[rank] = st->block;
        return;
    }
    if (ompi_osc_gpuic_peer_on_node(module, rank) &&
        gpuic_cuda_ipc_import(&st->ipc[rank], &ptr) == GPUIC_OK) {
        st->mapped[rank] = ptr;
    }
}

/* Allocates, zeroes and exports this process's sync block; false when it cannot have one. */
static bool ompi_osc_gpuic_stream_block_create(ompi_osc_gpuic_stream_state_t *st, int n,
                                               gpuic_cuda_ipc_t *ipc)
{
    size_t len = MPIX_GPUIC_SYNC_BYTES(n);
    void *zeros;
    bool ok;

    if (gpuic_cuda_init_if_loaded() != GPUIC_OK || gpuic_cuda_mem_alloc(len, &st->block) !=
        GPUIC_OK) {
        st->block = NULL;
        return false;
    }
    /* A synchronous copy: peers may poll the block as soon as the exchange is over. */
    zeros = calloc(1, len);
    ok = zeros != NULL && gpuic_cuda_memcpy(st->block, zeros, len) == GPUIC_OK &&
         gpuic_cuda_ipc_export(st->block, ipc) == GPUIC_OK;
    free(zeros);
    if (!ok) {
        gpuic_cuda_mem_free(st->block);
        st->block = NULL;
    }
    return ok;
}

int ompi_osc_gpuic_stream_setup(ompi_osc_gpuic_module_t *module)
{
    struct ompi_communicator_t *comm = module->comm;
    int n = ompi_comm_size(comm), i, rc;
    ompi_osc_gpuic_stream_info_t mine, *all;
    ompi_osc_gpuic_stream_state_t *st;
    bool any_gpu = false;

    /* Every process saw every peer's window kind in the creation exchange, so all of them
     * agree on whether this collective step happens. */
    for (i = 0; i < n; ++i) {
        any_gpu |= module->peers[i].win.gpu != 0;
    }
    if (!any_gpu) {
        return OMPI_SUCCESS;
    }
    memset(&mine, 0, sizeof(mine));
    st = calloc(1, sizeof(*st));
    all = calloc(n, sizeof(*all));
    if (st != NULL) {
        st->ipc = calloc(n, sizeof(*st->ipc));
        st->valid = calloc(n, 1);
        st->mapped = calloc(n, sizeof(*st->mapped));
        st->peers = calloc(n, sizeof(*st->peers));
    }
    module->stream_state = st;
    if (all == NULL) {
        /* As in window creation: the peers wait in the exchange, MPI has no way to tell them. */
        return MPI_ERR_NO_MEM;
    }
    if (st != NULL && st->ipc != NULL && st->valid != NULL && st->mapped != NULL &&
        st->peers != NULL) {
        mine.valid = ompi_osc_gpuic_stream_block_create(st, n, &mine.ipc);
    }
    /* Collective whatever happened here: a process without a block takes part as invalid. */
    rc = comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine),
                                      MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    if (rc == OMPI_SUCCESS && mine.valid) {
        for (i = 0; i < n; ++i) {
            st->valid[i] = all[i].valid != 0;
            st->ipc[i] = all[i].ipc;
            ompi_osc_gpuic_stream_map_peer(module, st, i);
        }
    }
    free(all);
    return rc;
}

void ompi_osc_gpuic_stream_cleanup(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_stream_state_t *st = module->stream_state;
    int i, n = module->comm != NULL ? ompi_comm_size(module->comm) : 0;

    if (st == NULL) {
        return;
    }
    for (i = 0; st->mapped != NULL && i < n; ++i) {
        if (st->mapped[i] != NULL && st->mapped[i] != st->block) {
            gpuic_cuda_ipc_release(&st->ipc[i], st->mapped[i]);
        }
    }
    if (st->ready) {
        pthread_mutex_destroy(&st->sw.lock);
    }
    gpuic_cuda_mem_free(st->sync_dev);
    gpuic_cuda_mem_free(st->blocks_dev);
    gpuic_cuda_mem_free(st->block);
    free(st->ipc);
    free(st->valid);
    free(st->mapped);
    free(st->peers);
    free(st);
    module->stream_state = NULL;
}

/*
 * Builds the sync blocks' device handle and the host copy of both handles' view of the
 * targets, from the window's device handle @p win (read back from the device, so that the
 * enqueue checks follow whatever the handle's builder decides).
 */
static int ompi_osc_gpuic_stream_describe(ompi_osc_gpuic_module_t *module,
                                          ompi_osc_gpuic_stream_state_t *st, void *win)
{
    int n = ompi_comm_size(module->comm), i;
    size_t len = sizeof(MPIX_Gpuic_device_win) + (size_t)n * sizeof(MPIX_Gpuic_device_peer);
    MPIX_Gpuic_device_win *data = calloc(1, len), *sync = calloc(1, len);
    size_t blocks_len = (size_t)n * sizeof(uint64_t *);
    uint64_t **blocks = calloc(n, sizeof(uint64_t *));
    bool all_same_gpu = true, all_p2p;
    int rc = OMPI_SUCCESS;

    if (data == NULL || sync == NULL || blocks == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if (gpuic_cuda_memcpy(data, win, len) != GPUIC_OK) {
        rc = MPI_ERR_OTHER;
        goto out;
    }
    sync->magic = MPIX_GPUIC_DEVICE_MAGIC;
    sync->rank = data->rank;
    sync->nranks = n;
    sync->error_word = data->error_word; /* errors surface with the window's */
    all_p2p = data->queue == NULL;
    for (i = 0; i < n; ++i) {
        st->peers[i].data_path = data->peers[i].path;
        st->peers[i].size = data->peers[i].size;
        st->peers[i].disp_unit = data->peers[i].disp_unit;
        st->peers[i].flags = data->peers[i].flags;
        st->peers[i].base = data->peers[i].base;
        st->peers[i].block = st->mapped[i];
        blocks[i] = st->mapped[i];
        all_p2p = all_p2p && data->peers[i].path != MPIX_GPUIC_DEVICE_PATH_PROXY;
        sync->peers[i].size = MPIX_GPUIC_SYNC_BYTES(n);
        sync->peers[i].disp_unit = 1;
        if (st->mapped[i] != NULL) {
            sync->peers[i].base = (uint64_t)(uintptr_t)st->mapped[i];
            sync->peers[i].path = MPIX_GPUIC_DEVICE_PATH_P2P;
            if (gpuic_cuda_ptr_on_current_device(st->mapped[i])) {
                sync->peers[i].flags |= MPIX_GPUIC_DEVICE_PEER_SAME_GPU;
            } else {
                all_same_gpu = false;
            }
        } else {
            sync->peers[i].path = MPIX_GPUIC_DEVICE_PATH_NONE;
        }
        st->peers[i].sync_path = sync->peers[i].path;
    }
    /* The scope of the sync words' atomics and signals must be the same in every process:
     * device scope only when all blocks are on this GPU, as the data handle decides. */
    sync->flags = all_same_gpu ? MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU : 0;
    if (st->sync_dev == NULL && gpuic_cuda_mem_alloc(len, &st->sync_dev) != GPUIC_OK) {
        st->sync_dev = NULL;
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if (st->blocks_dev == NULL && gpuic_cuda_mem_alloc(blocks_len, &st->blocks_dev) != GPUIC_OK) {
        st->blocks_dev = NULL;
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if (gpuic_cuda_memcpy(st->sync_dev, sync, len) != GPUIC_OK ||
        gpuic_cuda_memcpy(st->blocks_dev, blocks, blocks_len) != GPUIC_OK) {
        rc = MPI_ERR_OTHER;
        goto out;
    }
    st->sw.all_p2p = all_p2p;
    st->sw.sync_flags = (all_same_gpu ? MPIX_GPUIC_STREAM_SAME_GPU : 0) |
                        (data->queue != NULL ? MPIX_GPUIC_STREAM_PROXY : 0) |
                        ((data->flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU)
                             ? MPIX_GPUIC_STREAM_DATA_SAME_GPU
                             : 0);
    st->win_seen = win;
out:
    free(data);
    free(sync);
    free(blocks);
    return rc;
}

/* ext entry point: the window's stream state, described on first use (and again when the
 * window's device handle was released and rebuilt). */
static int ompi_osc_gpuic_stream_window(void *m, ompi_osc_gpuic_stream_win_t **sw_p)
{
    ompi_osc_gpuic_module_t *module = m;
    ompi_osc_gpuic_stream_state_t *st = module->stream_state;
    void *win = NULL;
    int rc, saved = -1;
    bool ready;

    *sw_p = NULL;
    if (st == NULL || st->block == NULL) {
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    ready = __atomic_load_n(&st->ready, __ATOMIC_ACQUIRE);
    if (!ready) {
        /* First use may come inside a stream capture: building the handles allocates and
         * copies, which is no stream work of the caller's (the copies wait on the legacy
         * stream only), so the capture must not refuse it. */
        saved = gpuic_cuda_capture_relax();
    }
    rc = ompi_osc_gpuic_device_handle(module, &win);
    if (rc == OMPI_SUCCESS && ready && st->win_seen == win) {
        *sw_p = &st->sw;
        return OMPI_SUCCESS;
    }
    if (rc == OMPI_SUCCESS) {
        OPAL_THREAD_LOCK(&module->lock);
        if (!st->ready || st->win_seen != win) {
            rc = ompi_osc_gpuic_stream_describe(module, st, win);
            if (rc == OMPI_SUCCESS && !st->ready) {
                st->sw.nranks = ompi_comm_size(module->comm);
                st->sw.rank = ompi_comm_rank(module->comm);
                st->sw.own = st->block;
                st->sw.peers = st->peers;
                st->sw.blocks_dev = st->blocks_dev;
                st->sw.epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_NONE;
                pthread_mutex_init(&st->sw.lock, NULL);
            }
            if (rc == OMPI_SUCCESS) {
                st->sw.win = win;
                st->sw.sync = st->sync_dev;
                __atomic_store_n(&st->ready, true, __ATOMIC_RELEASE);
            }
        }
        OPAL_THREAD_UNLOCK(&module->lock);
    }
    gpuic_cuda_capture_restore(saved);
    *sw_p = rc == OMPI_SUCCESS ? &st->sw : NULL;
    return rc;
}

static int ompi_osc_gpuic_stream_buffer(const void *ptr, uint64_t *dptr_p)
{
    void *d = NULL;
    gpuic_status_t status = gpuic_cuda_device_address(ptr, &d);

    if (status != GPUIC_OK) {
        *dptr_p = 0;
        /* the argument that is wrong is a buffer: its own class, not MPI_ERR_ARG */
        return status == GPUIC_ERR_INVALID_PARAM ? MPI_ERR_BUFFER : ompi_osc_gpuic_error(status);
    }
    *dptr_p = (uint64_t)(uintptr_t)d;
    return OMPI_SUCCESS;
}

/*
 * The launch flags of a loaded kernel: programmatic dependent launch when the code loaded for it
 * was compiled for MPIX_GPUIC_STREAM_PDL_ARCH or newer, the code that begins with the
 * griddepcontrol prologue (mpix_gpuic_stream_kernels.cu; older code, or PTX of an older
 * architecture JIT-compiled for a newer device, has none and must keep plain stream order),
 * unless the MCA parameter osc_gpuic_stream_pdl turns it off (for comparison).
 */
static unsigned ompi_osc_gpuic_stream_flags(const char *name, void *fn)
{
    int arch = gpuic_cuda_function_arch(fn);
    bool off = !mca_osc_gpuic_component.stream_pdl;
    bool pdl = !off && arch >= MPIX_GPUIC_STREAM_PDL_ARCH;

    gpuic_log(GPUIC_LOG_DEBUG, "stream kernel %s: code for compute_%d, programmatic dependent "
              "launch %s", name, arch, pdl ? "on" : off ? "off (osc_gpuic_stream_pdl)" : "off");
    return pdl ? GPUIC_CUDA_LAUNCH_PDL : 0;
}

/* The loaded function of @p kernel for the current context, loading the image (all its
 * kernels) on first use, and its launch flags. */
static int ompi_osc_gpuic_stream_function(const ompi_osc_gpuic_stream_image_t *image,
                                          int kernel, void **fn_p, unsigned *flags_p)
{
    ompi_osc_gpuic_stream_module_t *m = NULL;
    gpuic_status_t status;
    void *ctx = NULL;
    int i;

    status = gpuic_cuda_context_current(&ctx);
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    if (kernel < 0 || kernel >= image->nkernels || kernel >= OMPI_OSC_GPUIC_STREAM_KERNELS) {
        return MPI_ERR_ARG;
    }
    /* Every launch comes here: entries and functions are published once (release) and never
     * change, so the common case reads them without the lock. */
    for (i = 0; i < __atomic_load_n(&ompi_osc_gpuic_stream_nmodules, __ATOMIC_ACQUIRE); ++i) {
        m = &ompi_osc_gpuic_stream_modules[i];
        if (m->ctx == ctx && m->image == image->image) {
            *fn_p = __atomic_load_n(&m->fn[kernel], __ATOMIC_ACQUIRE);
            if (*fn_p != NULL) {
                *flags_p = m->flags[kernel];
                return OMPI_SUCCESS;
            }
            break;
        }
    }
    m = NULL;
    pthread_mutex_lock(&ompi_osc_gpuic_stream_modules_lock);
    for (i = 0; i < ompi_osc_gpuic_stream_nmodules; ++i) {
        if (ompi_osc_gpuic_stream_modules[i].ctx == ctx &&
            ompi_osc_gpuic_stream_modules[i].image == image->image) {
            m = &ompi_osc_gpuic_stream_modules[i];
            break;
        }
    }
    if (m == NULL) {
        if (ompi_osc_gpuic_stream_nmodules == OMPI_OSC_GPUIC_STREAM_MODULES) {
            status = GPUIC_ERR_NO_RESOURCE;
            gpuic_log(GPUIC_LOG_ERROR, "stream kernels loaded in %d contexts already",
                      OMPI_OSC_GPUIC_STREAM_MODULES);
        } else {
            m = &ompi_osc_gpuic_stream_modules[ompi_osc_gpuic_stream_nmodules];
            status = gpuic_cuda_module_load(image->image, &m->module);
            if (status == GPUIC_OK) {
                m->ctx = ctx;
                m->image = image->image;
                __atomic_store_n(&ompi_osc_gpuic_stream_nmodules,
                                 ompi_osc_gpuic_stream_nmodules + 1, __ATOMIC_RELEASE);
            } else {
                m = NULL;
            }
        }
    }
    /* Every kernel of the image at once, on its first launch in this context: under lazy
     * loading (gpuic_cuda_lazy_loading()) fetching a function loads it, which may wait for the
     * context's running kernels; fetched later, in the middle of an epoch, that wait could
     * fall on a kernel waiting for this process (a proxy-path flush waits for the proxy
     * thread, whose copies the loading holds up) until the device timeout. */
    for (i = 0; m != NULL && i < image->nkernels && i < OMPI_OSC_GPUIC_STREAM_KERNELS; ++i) {
        void *fn = NULL;
        gpuic_status_t s;

        if (m->fn[i] != NULL) {
            continue;
        }
        s = gpuic_cuda_module_function(m->module, image->names[i], &fn);
        if (i == kernel) {
            status = s;
        }
        m->flags[i] = fn != NULL ? ompi_osc_gpuic_stream_flags(image->names[i], fn) : 0;
        __atomic_store_n(&m->fn[i], fn, __ATOMIC_RELEASE);
    }
    *fn_p = m != NULL ? m->fn[kernel] : NULL;
    *flags_p = m != NULL ? m->flags[kernel] : 0;
    pthread_mutex_unlock(&ompi_osc_gpuic_stream_modules_lock);
    return *fn_p != NULL ? OMPI_SUCCESS : ompi_osc_gpuic_error(status);
}

static int ompi_osc_gpuic_stream_launch(const ompi_osc_gpuic_stream_image_t *image, int kernel,
                                        unsigned grid, unsigned block, void *stream, void *args)
{
    void *fn = NULL;
    unsigned flags = 0;
    int rc = ompi_osc_gpuic_stream_function(image, kernel, &fn, &flags);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_error(gpuic_cuda_launch(fn, grid, block, stream, args, flags));
}

static int ompi_osc_gpuic_stream_host_access(void *m, int target, int *passive_p)
{
    ompi_osc_gpuic_module_t *module = m;

    *passive_p = module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
                 module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL;
    return module->epoch == OMPI_OSC_GPUIC_EPOCH_NONE ? MPI_ERR_RMA_SYNC
                                                      : ompi_osc_gpuic_check_access(module, target);
}

const ompi_osc_gpuic_stream_ops_t ompi_osc_gpuic_stream_ops = {
    .window = ompi_osc_gpuic_stream_window,
    .buffer = ompi_osc_gpuic_stream_buffer,
    .launch = ompi_osc_gpuic_stream_launch,
    .host_access = ompi_osc_gpuic_stream_host_access,
};
