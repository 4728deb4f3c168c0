/*
 * The stream-triggered calls (MPIX_*_enqueue), the window's side:
 *
 *  - per GPU window, a sync block in device memory per process (layout in
 *    mpix_gpuic_stream_layout.h), exported to same-node peers through CUDA IPC like the window
 *    memory and, where some process has peers on other nodes, registered with UCX for them
 *    (reached through the window's device queue and the proxy), and a device handle
 *    describing the blocks as a byte-addressed window, so that the synchronization kernels
 *    reach them with the device API;
 *  - a host copy of what the window's device handle says of each target, for the checks made
 *    at enqueue time, and those checks (reach, access epoch, buffers).
 *
 * The calls themselves are in osc_gpuic_stream_rma.c and osc_gpuic_stream_epoch.c, the kernel
 * launches in osc_gpuic_stream_launch.c (osc_gpuic_stream.h lists them).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/proc/proc.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

/** What each process tells the others about its sync block. */
typedef struct ompi_osc_gpuic_stream_info {
    uint32_t         valid;
    uint32_t         off_node; /**< it has a peer on another node (which needs UCX keys) */
    uint64_t         addr;     /**< the block's address */
    gpuic_cuda_ipc_t ipc;
} ompi_osc_gpuic_stream_info_t;

/* Maps peer @p rank's sync block when it is on this node (other nodes: through UCX). */
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

/*
 * The sync blocks' UCX keys, for peers on other nodes (collective): each process with a block
 * registers it (@p have) and makes it executable for their fetch-and-adds, then every process
 * learns every packed key; a process that could not register its block sends none, and its
 * peers on other nodes leave it unreachable (enqueued epochs with it are refused).
 */
static int ompi_osc_gpuic_stream_keys_exchange(ompi_osc_gpuic_module_t *module,
                                               ompi_osc_gpuic_stream_state_t *st, bool have)
{
    struct ompi_communicator_t *comm = module->comm;
    int n = ompi_comm_size(comm), i, rc, len = 0, *lens = calloc(n, sizeof(int)),
        *displs = calloc(n, sizeof(int));
    void *blob = NULL;
    size_t blob_len = 0;
    char *all = NULL;
    long total = 0;

    if (have && gpuic_mr_register_device(mca_osc_gpuic_component.ctx, st->block,
                                         MPIX_GPUIC_SYNC_BYTES(n), &st->mr) == GPUIC_OK &&
        ompi_osc_gpuic_gpu_exec_add_region(module, st->block, MPIX_GPUIC_SYNC_BYTES(n)) ==
            OMPI_SUCCESS &&
        gpuic_mr_pack(st->mr, &blob, &blob_len) == GPUIC_OK && blob_len <= INT32_MAX) {
        len = (int)blob_len;
    }
    if (lens == NULL || displs == NULL) {
        /* as in window creation: the peers wait in the exchange, MPI has no way to tell them */
        free(lens);
        free(displs);
        gpuic_mr_blob_release(blob);
        return MPI_ERR_NO_MEM;
    }
    rc = comm->c_coll->coll_allgather(&len, 1, MPI_INT, lens, 1, MPI_INT, comm,
                                      comm->c_coll->coll_allgather_module);
    for (i = 0; rc == OMPI_SUCCESS && i < n; ++i) {
        displs[i] = (int)total;
        total += lens[i];
    }
    if (rc == OMPI_SUCCESS && total > INT32_MAX) {
        rc = MPI_ERR_NO_MEM; /* every process computes the same total */
    }
    if (rc == OMPI_SUCCESS) {
        all = malloc(total > 0 ? (size_t)total : 1);
        /* as above: a process without the buffer cannot take part */
        rc = all == NULL ? MPI_ERR_NO_MEM
                         : comm->c_coll->coll_allgatherv(blob, len, MPI_BYTE, all, lens, displs,
                                                         MPI_BYTE, comm,
                                                         comm->c_coll->coll_allgatherv_module);
    }
    /* a process without a block (none allocated, or no state) only took part */
    for (i = 0; rc == OMPI_SUCCESS && have && i < n; ++i) {
        if (lens[i] > 0 && st->mapped[i] == NULL && st->valid[i] &&
            !ompi_osc_gpuic_peer_on_node(module, i)) {
            st->rkey_blob[i] = malloc((size_t)lens[i]);
            if (st->rkey_blob[i] != NULL) {
                memcpy(st->rkey_blob[i], all + displs[i], (size_t)lens[i]);
            }
        }
    }
    free(all);
    free(lens);
    free(displs);
    gpuic_mr_blob_release(blob);
    return rc;
}

int ompi_osc_gpuic_stream_setup(ompi_osc_gpuic_module_t *module)
{
    struct ompi_communicator_t *comm = module->comm;
    int n = ompi_comm_size(comm), i, rc;
    ompi_osc_gpuic_stream_info_t mine, *all;
    ompi_osc_gpuic_stream_state_t *st;
    bool off_node;

    /* a collective step: every process agrees on whether it happens */
    if (!ompi_osc_gpuic_window_any_gpu(module)) {
        return OMPI_SUCCESS;
    }
    memset(&mine, 0, sizeof(mine));
    st = calloc(1, sizeof(*st));
    all = calloc(n, sizeof(*all));
    if (st != NULL) {
        st->ipc = calloc(n, sizeof(*st->ipc));
        st->valid = calloc(n, 1);
        st->mapped = calloc(n, sizeof(*st->mapped));
        st->addr = calloc(n, sizeof(*st->addr));
        st->rkey_blob = calloc(n, sizeof(*st->rkey_blob));
        st->peers = calloc(n, sizeof(*st->peers));
    }
    module->stream_state = st;
    if (all == NULL) {
        /* As in window creation: the peers wait in the exchange, MPI has no way to tell them. */
        return MPI_ERR_NO_MEM;
    }
    if (st != NULL && st->ipc != NULL && st->valid != NULL && st->mapped != NULL &&
        st->addr != NULL && st->rkey_blob != NULL && st->peers != NULL) {
        mine.valid = ompi_osc_gpuic_stream_block_create(st, n, &mine.ipc);
        mine.addr = (uint64_t)(uintptr_t)st->block;
        mine.off_node = ompi_osc_gpuic_peer_first_off_node(module) >= 0;
    }
    /* Collective whatever happened here: a process without a block takes part as invalid. */
    rc = comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine),
                                      MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    if (rc == OMPI_SUCCESS && mine.valid) {
        for (i = 0; i < n; ++i) {
            st->valid[i] = all[i].valid != 0;
            st->ipc[i] = all[i].ipc;
            st->addr[i] = all[i].addr;
            ompi_osc_gpuic_stream_map_peer(module, st, i);
        }
    }
    for (i = 0, off_node = false; rc == OMPI_SUCCESS && i < n; ++i) {
        off_node = off_node || all[i].off_node != 0;
    }
    free(all);
    /* every process saw the same records: all take this step or none */
    if (rc == OMPI_SUCCESS && off_node) {
        rc = ompi_osc_gpuic_stream_keys_exchange(module, st, mine.valid != 0);
    }
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
        pthread_mutex_destroy(&st->lock);
    }
    gpuic_cuda_mem_free(st->sync_dev);
    gpuic_cuda_mem_free(st->blocks_dev);
    /* the executor let go of the block with the window (ompi_osc_gpuic_gpu_exec_remove) */
    gpuic_mr_deregister(st->mr);
    gpuic_cuda_mem_free(st->block);
    for (i = 0; st->rkey_blob != NULL && i < n; ++i) {
        free(st->rkey_blob[i]);
    }
    free(st->rkey_blob);
    free(st->addr);
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
        } else if (st->rkey_blob[i] != NULL && data->queue != NULL &&
                   ompi_osc_gpuic_devqueue_key_sync(module, i, st->addr[i],
                                                    MPIX_GPUIC_SYNC_BYTES(n), st->rkey_blob[i],
                                                    &sync->peers[i].key) == OMPI_SUCCESS) {
            /* another node: signals are puts and lock counts fetch-and-adds through the
             * window's device queue, executed by the proxy with UCX */
            sync->peers[i].base = st->addr[i];
            sync->peers[i].path = MPIX_GPUIC_DEVICE_PATH_PROXY;
            all_same_gpu = false;
        } else {
            sync->peers[i].path = MPIX_GPUIC_DEVICE_PATH_NONE;
        }
        st->peers[i].sync_path = sync->peers[i].path;
    }
    sync->queue = data->queue;
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
    st->all_p2p = all_p2p;
    st->win_value = gpuic_dev_handle_of(win, data);
    st->sync_value = gpuic_dev_handle_of(st->sync_dev, sync);
    st->sync_flags = (all_same_gpu ? MPIX_GPUIC_STREAM_SAME_GPU : 0) |
                     (data->queue != NULL ? MPIX_GPUIC_STREAM_PROXY : 0) |
                     ((data->flags & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU)
                          ? MPIX_GPUIC_STREAM_DATA_SAME_GPU
                          : 0);
out:
    free(data);
    free(sync);
    free(blocks);
    return rc;
}

int ompi_osc_gpuic_stream_state_get(struct ompi_win_t *w, ompi_osc_gpuic_module_t **module_p,
                                    ompi_osc_gpuic_stream_state_t **st_p)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(w);
    ompi_osc_gpuic_stream_state_t *st = module->stream_state;
    void *win = NULL;
    int rc, saved = -1;
    bool ready;

    *module_p = module;
    *st_p = NULL;
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
    if (rc == OMPI_SUCCESS && ready && st->win == win) {
        *st_p = st;
        return OMPI_SUCCESS;
    }
    if (rc == OMPI_SUCCESS) {
        OPAL_THREAD_LOCK(&module->lock);
        if (!st->ready || st->win != win) {
            rc = ompi_osc_gpuic_stream_describe(module, st, win);
            if (rc == OMPI_SUCCESS && !st->ready) {
                st->nranks = ompi_comm_size(module->comm);
                st->rank = ompi_comm_rank(module->comm);
                st->epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_NONE;
                pthread_mutex_init(&st->lock, NULL);
            }
            if (rc == OMPI_SUCCESS) {
                st->win = win;
                __atomic_store_n(&st->ready, true, __ATOMIC_RELEASE);
            }
        }
        OPAL_THREAD_UNLOCK(&module->lock);
    }
    gpuic_cuda_capture_restore(saved);
    *st_p = rc == OMPI_SUCCESS ? st : NULL;
    return rc;
}

int ompi_osc_gpuic_stream_check_rank(const ompi_osc_gpuic_stream_state_t *st, int rank)
{
    return rank >= 0 && rank < st->nranks ? MPI_SUCCESS : MPI_ERR_RANK;
}

/* The kernels only use the device API, so a target it learns to reach needs no change here. */
int ompi_osc_gpuic_stream_check_reach(const ompi_osc_gpuic_stream_state_t *st, int rank,
                                      ompi_osc_gpuic_stream_reach_t reach)
{
    const ompi_osc_gpuic_stream_peer_t *p = &st->peers[rank];
    int32_t path = reach == OMPI_OSC_GPUIC_STREAM_REACH_DATA ? p->data_path : p->sync_path;

    return path == MPIX_GPUIC_DEVICE_PATH_NONE ? MPI_ERR_UNSUPPORTED_OPERATION : MPI_SUCCESS;
}

int ompi_osc_gpuic_stream_check_access(ompi_osc_gpuic_module_t *module,
                                       ompi_osc_gpuic_stream_state_t *st, int rank,
                                       bool passive)
{
    bool ok;

    pthread_mutex_lock(&st->lock);
    switch (st->epoch) {
    case OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL:
        ok = true;
        break;
    case OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE:
        ok = !passive;
        break;
    case OMPI_OSC_GPUIC_STREAM_EPOCH_START:
        ok = !passive && rank < MPIX_GPUIC_STREAM_GROUP_MAX &&
             ((st->start_group[rank / 64] >> (rank % 64)) & 1u);
        break;
    default:
        ok = false;
        break;
    }
    pthread_mutex_unlock(&st->lock);
    /* A host epoch serves too: the host's own check, and a passive-target one for a flush. */
    if (!ok && module->epoch != OMPI_OSC_GPUIC_EPOCH_NONE &&
        ompi_osc_gpuic_check_access(module, rank) == OMPI_SUCCESS) {
        ok = !passive || module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
             module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL;
    }
    return ok ? MPI_SUCCESS : MPI_ERR_RMA_SYNC;
}

int ompi_osc_gpuic_stream_buffer(const void *ptr, ptrdiff_t lb, size_t bytes, uint64_t *dptr_p)
{
    void *d = NULL;
    gpuic_status_t status;

    *dptr_p = 0;
    if (bytes == 0) {
        return MPI_SUCCESS;
    }
    if (ptr == NULL) {
        return MPI_ERR_BUFFER;
    }
    status = gpuic_cuda_device_address((const char *)ptr + lb, &d);
    if (status != GPUIC_OK) {
        /* the argument that is wrong is a buffer: its own class, not MPI_ERR_ARG */
        return status == GPUIC_ERR_INVALID_PARAM ? MPI_ERR_BUFFER : ompi_osc_gpuic_error(status);
    }
    *dptr_p = (uint64_t)(uintptr_t)d;
    return OMPI_SUCCESS;
}
