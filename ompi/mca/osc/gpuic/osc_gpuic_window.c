/*
 * Window creation and free: memory registration, the state block, and the exchange of window
 * descriptions (worker address, base, size, displacement unit, keys) among the window's group.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/proc/proc.h"

#include "osc_gpuic.h"

/* What each process publishes about its window; followed in the blob by the worker address,
 * the serving worker's address (none when serve_address_len is 0), the window key and the
 * state key, in that order. */
typedef struct ompi_osc_gpuic_wininfo {
    uint64_t base;
    uint64_t size;
    uint64_t state_addr;
    uint64_t state_chunk;    /* the pool chunk holding the state block (osc_gpuic_state_pool.c) */
    int32_t  disp_unit;
    uint32_t address_len;
    uint32_t serve_address_len; /* where peers connect when non-zero (see ...peer_setup) */
    uint32_t rkey_len;
    uint32_t state_rkey_len;
    uint32_t gpu;            /* the window memory is device memory */
    uint32_t pid;            /* process id, for same-node cross-memory copies */
    gpuic_cuda_ipc_t ipc;    /* ...exported for same-node peers */
    uint64_t cma_token_addr; /* a word only this process holds, and its value */
    uint64_t cma_token;
    ompi_osc_gpuic_liveness_id_t live; /* for peers' waits: whether this process still runs */
} ompi_osc_gpuic_wininfo_t;

static int ompi_osc_gpuic_target_path(void *m, int rank, int *path)
{
    ompi_osc_gpuic_module_t *module = m;

    if (rank < 0 || rank >= ompi_comm_size(module->comm)) {
        return MPI_ERR_RANK;
    }
    if (rank == ompi_comm_rank(module->comm)) {
        *path = OMPI_OSC_GPUIC_PATH_SELF;
    } else if (module->peers[rank].win.gpu && module->peers[rank].win.direct != NULL) {
        *path = OMPI_OSC_GPUIC_PATH_IPC;
    } else if (module->peers[rank].win.direct != NULL) {
        *path = OMPI_OSC_GPUIC_PATH_DIRECT;
    } else if (__atomic_load_n(&module->peers[rank].cma_pid, __ATOMIC_RELAXED) > 0 &&
               mca_osc_gpuic_component.cma_min_bytes >= 0) {
        *path = OMPI_OSC_GPUIC_PATH_CMA;
    } else {
        *path = OMPI_OSC_GPUIC_PATH_UCX;
    }
    return MPI_SUCCESS;
}

static const ompi_osc_base_module_t ompi_osc_gpuic_module_template = {
    .osc_win_shared_query = ompi_osc_gpuic_win_shared_query,
    .osc_win_attach = ompi_osc_gpuic_win_attach,
    .osc_win_detach = ompi_osc_gpuic_win_detach,
    .osc_free = ompi_osc_gpuic_free,
    .osc_put = ompi_osc_gpuic_put,
    .osc_get = ompi_osc_gpuic_get,
    .osc_accumulate = ompi_osc_gpuic_accumulate,
    .osc_compare_and_swap = ompi_osc_gpuic_compare_and_swap,
    .osc_fetch_and_op = ompi_osc_gpuic_fetch_and_op,
    .osc_get_accumulate = ompi_osc_gpuic_get_accumulate,
    .osc_rput = ompi_osc_gpuic_rput,
    .osc_rget = ompi_osc_gpuic_rget,
    .osc_raccumulate = ompi_osc_gpuic_raccumulate,
    .osc_rget_accumulate = ompi_osc_gpuic_rget_accumulate,
    .osc_fence = ompi_osc_gpuic_fence,
    .osc_start = ompi_osc_gpuic_start,
    .osc_complete = ompi_osc_gpuic_complete,
    .osc_post = ompi_osc_gpuic_post,
    .osc_wait = ompi_osc_gpuic_wait,
    .osc_test = ompi_osc_gpuic_test,
    .osc_lock = ompi_osc_gpuic_lock,
    .osc_unlock = ompi_osc_gpuic_unlock,
    .osc_lock_all = ompi_osc_gpuic_lock_all,
    .osc_unlock_all = ompi_osc_gpuic_unlock_all,
    .osc_sync = ompi_osc_gpuic_sync,
    .osc_flush = ompi_osc_gpuic_flush,
    .osc_flush_all = ompi_osc_gpuic_flush_all,
    .osc_flush_local = ompi_osc_gpuic_flush_local,
    .osc_flush_local_all = ompi_osc_gpuic_flush_local_all,
};

/* Releases what ompi_osc_gpuic_window_create() built, in reverse; safe on a partial module. */
void ompi_osc_gpuic_module_destroy(ompi_osc_gpuic_module_t *module)
{
    int i, n;

    /* No remote atomic executes on the window from here on. */
    ompi_osc_gpuic_gpu_exec_remove(module);
    /* Then the window agent stops, before any mapping of peers' device memory it may use is
     * closed. */
    ompi_osc_gpuic_agent_release(module);
    /* Requests still waiting for the window's stream complete before the stream goes; then
     * mappings of peers' device memory: they are recorded in the peers array. */
    ompi_osc_gpuic_request_gpu_release(module);
    ompi_osc_gpuic_stream_cleanup(module);
    ompi_osc_gpuic_gpu_cleanup(module);
    if (module->peers != NULL) {
        n = ompi_comm_size(module->comm);
        ompi_osc_gpuic_dynamic_cleanup(module);
        ompi_osc_gpuic_cma_pend_free(module);
        for (i = 0; i < n; ++i) {
            gpuic_rkey_destroy(module->peers[i].win.rkey);
            /* state_rkey is the pool's */
            free(module->peers[i].address);
            free(module->peers[i].rkey_blob);
        }
        free(module->peers);
    }
    ompi_osc_gpuic_liveness_release(module);
    free(module->start_ranks);
    free(module->start_member);
    free(module->post_ranks);
    free(module->posts_seen);
    free(module->completes_seen);
    ompi_osc_gpuic_state_block_put(module->state, module->state_bytes);
    gpuic_mr_deregister(module->mr);
    ompi_osc_gpuic_shared_release(module);
    if (module->comm != NULL) {
        ompi_comm_free(&module->comm);
    }
    OBJ_DESTRUCT(&module->dyn_lock);
    OBJ_DESTRUCT(&module->gpu_lock);
    OBJ_DESTRUCT(&module->lock);
    free(module);
}

/* The one line for window memory that could not be had: what, how much, how to get more. */
static void ompi_osc_gpuic_window_log_nomem(ompi_osc_gpuic_module_t *module, const char *what,
                                            size_t bytes, const char *remedy)
{
    gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot allocate %s (%zu bytes): %s",
              ompi_comm_rank(module->comm), module->id, what, bytes, remedy);
}

/* The value a process contributes to an agreement on @p rc: 0 for success, else an MPI error
 * class (positive; Open MPI's internal codes are negative and count as MPI_ERR_INTERN). */
static int ompi_osc_gpuic_window_class(int rc)
{
    return rc == OMPI_SUCCESS ? 0 : rc > 0 ? rc : MPI_ERR_INTERN;
}

/*
 * Agrees on the outcome of the local steps of window creation: returns @p rc where this
 * process failed, MPI_ERR_NO_MEM (or the failing peers' largest class) where another one did,
 * OMPI_SUCCESS where all succeeded.  Collective over the window's communicator.
 */
static int ompi_osc_gpuic_window_agree(ompi_osc_gpuic_module_t *module, int rc)
{
    struct ompi_communicator_t *comm = module->comm;
    int mine = ompi_osc_gpuic_window_class(rc), worst = 0, crc;

    crc = comm->c_coll->coll_allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm,
                                       comm->c_coll->coll_allreduce_module);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (crc != OMPI_SUCCESS) {
        return crc;
    }
    if (worst != 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d: another process could not create its "
                  "part (class %d)", ompi_comm_rank(comm), module->id, worst);
    }
    return worst;
}

/* Blob bytes that travel in the first allgather of window creation; a larger blob anywhere
 * takes a second one.  Covers a worker address and two keys of host memory transports. */
#define OMPI_OSC_GPUIC_BLOB_INLINE 1016

/* One process's record in that first allgather: its outcome of the local steps, its blob's
 * length, and the blob where it fits. */
typedef struct ompi_osc_gpuic_blob_rec {
    int32_t rc;  /* 0, or the MPI error class of this process's failure */
    int32_t len;
    char    bytes[OMPI_OSC_GPUIC_BLOB_INLINE];
} ompi_osc_gpuic_blob_rec_t;

/*
 * Agrees on the outcome of the local steps of window creation and allgathers every process's
 * blob in the same collective (one more agreement and allgather only for blobs past
 * OMPI_OSC_GPUIC_BLOB_INLINE).  Returns @p rc where this process failed, the failing peers'
 * largest class where another one did, OMPI_SUCCESS where all succeeded, with *all_p holding
 * comm_size slots of *slot_p bytes; every process returns success or failure alike.
 */
static int ompi_osc_gpuic_blob_allgather(ompi_osc_gpuic_module_t *module, int rc,
                                         const void *blob, size_t len, char **all_p,
                                         size_t *slot_p)
{
    struct ompi_communicator_t *comm = module->comm;
    int n = ompi_comm_size(comm), i, crc, worst = 0;
    size_t slot = 0;
    ompi_osc_gpuic_blob_rec_t *recs = malloc(sizeof(*recs) * (n + 1)), mine;
    char *all = NULL, *big = NULL;

    memset(&mine, 0, sizeof(mine));
    if (rc == OMPI_SUCCESS && recs == NULL) {
        rc = MPI_ERR_NO_MEM;
    }
    mine.rc = ompi_osc_gpuic_window_class(rc);
    mine.len = rc == OMPI_SUCCESS ? (int32_t)len : 0;
    if (rc == OMPI_SUCCESS && len <= OMPI_OSC_GPUIC_BLOB_INLINE) {
        memcpy(mine.bytes, blob, len);
    }
    if (recs == NULL) {
        /* a few KiB per process not to be had: this process cannot take part (as with any
         * collective call that cannot allocate its buffers) */
        return rc;
    }
    crc = comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, recs, sizeof(mine),
                                       MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    for (i = 0; crc == OMPI_SUCCESS && i < n; ++i) {
        worst = recs[i].rc > worst ? recs[i].rc : worst;
        slot = (size_t)recs[i].len > slot ? (size_t)recs[i].len : slot;
    }
    if (rc != OMPI_SUCCESS || crc != OMPI_SUCCESS || worst != 0) {
        if (rc == OMPI_SUCCESS && crc == OMPI_SUCCESS) {
            gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d: another process could not create "
                      "its part (class %d)", ompi_comm_rank(comm), module->id, worst);
        }
        free(recs);
        return rc != OMPI_SUCCESS ? rc : crc != OMPI_SUCCESS ? crc : worst;
    }
    slot = slot == 0 ? 1 : slot;
    /* every process takes the same branch: they all saw the same lengths */
    if (slot <= OMPI_OSC_GPUIC_BLOB_INLINE) {
        /* the blobs move to the front of the records, in order: no slot overtakes a blob
         * not yet moved (slot is shorter than a record) */
        all = (char *)recs;
        for (i = 0; i < n; ++i) {
            memmove(all + slot * i, recs[i].bytes, recs[i].len);
        }
        *all_p = all;
        *slot_p = slot;
        return OMPI_SUCCESS;
    }
    free(recs);
    all = malloc(slot * n);
    big = calloc(1, slot);
    rc = ompi_osc_gpuic_window_agree(module, all != NULL && big != NULL ? OMPI_SUCCESS
                                                                        : MPI_ERR_NO_MEM);
    if (rc == OMPI_SUCCESS) {
        memcpy(big, blob, len);
        rc = comm->c_coll->coll_allgather(big, (int)slot, MPI_BYTE, all, (int)slot, MPI_BYTE,
                                          comm, comm->c_coll->coll_allgather_module);
    }
    free(big);
    if (rc != OMPI_SUCCESS) {
        free(all);
        return rc;
    }
    *all_p = all;
    *slot_p = slot;
    return OMPI_SUCCESS;
}

/* Builds this process's blob: wininfo, worker address, window key, state key. */
static int ompi_osc_gpuic_blob_build(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx,
                                     char **blob_p, size_t *len_p)
{
    ompi_osc_gpuic_wininfo_t info = {0};
    void *rkey = NULL, *state_rkey = NULL;
    size_t rkey_len = 0, state_rkey_len = 0, address_len, serve_len;
    const void *address, *serve;
    gpuic_status_t status = GPUIC_OK;
    char *blob;

    gpuic_context_address(ctx, &address, &address_len);
    gpuic_context_serve_address(ctx, &serve, &serve_len);
    if (module->mr != NULL) {
        status = gpuic_mr_pack(module->mr, &rkey, &rkey_len);
    }
    if (status == GPUIC_OK) {
        status = gpuic_mr_pack(module->state_mr, &state_rkey, &state_rkey_len);
    }
    if (status != GPUIC_OK) {
        if (rkey != NULL) {
            gpuic_mr_blob_release(rkey);
        }
        return ompi_osc_gpuic_error(status);
    }
    if (ompi_osc_gpuic_gpu_export(module, &info.ipc) != OMPI_SUCCESS) {
        if (rkey != NULL) {
            gpuic_mr_blob_release(rkey);
        }
        gpuic_mr_blob_release(state_rkey);
        return MPI_ERR_WIN;
    }
    info.gpu = module->gpu;
    info.base = (uint64_t)(uintptr_t)module->base;
    info.size = module->size;
    info.state_addr = (uint64_t)(uintptr_t)module->state;
    info.state_chunk = module->state_chunk;
    info.disp_unit = module->disp_unit;
    ompi_osc_gpuic_cma_publish(&info.pid, &info.cma_token_addr, &info.cma_token);
    ompi_osc_gpuic_liveness_self(&info.live);
    info.address_len = (uint32_t)address_len;
    info.serve_address_len = (uint32_t)serve_len;
    info.rkey_len = (uint32_t)rkey_len;
    info.state_rkey_len = (uint32_t)state_rkey_len;
    *len_p = sizeof(info) + address_len + serve_len + rkey_len + state_rkey_len;
    blob = malloc(*len_p);
    if (blob != NULL) {
        char *p = blob;

        memcpy(p, &info, sizeof(info));
        p += sizeof(info);
        memcpy(p, address, address_len);
        p += address_len;
        if (serve_len > 0) {
            memcpy(p, serve, serve_len);
            p += serve_len;
        }
        if (rkey_len > 0) { /* zero-size windows have no key */
            memcpy(p, rkey, rkey_len);
            p += rkey_len;
        }
        memcpy(p, state_rkey, state_rkey_len);
    }
    if (rkey != NULL) {
        gpuic_mr_blob_release(rkey);
    }
    gpuic_mr_blob_release(state_rkey);
    *blob_p = blob;
    return blob != NULL ? OMPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Connects to one peer and unpacks its keys from its blob. */
static int ompi_osc_gpuic_peer_setup(ompi_osc_gpuic_module_t *module, int rank, const char *blob)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[rank];
    ompi_osc_gpuic_wininfo_t info;
    const char *address, *serve, *rkey, *state_rkey, *reach;
    gpuic_status_t status = GPUIC_OK;
    size_t reach_len;
    int rc;

    memcpy(&info, blob, sizeof(info));
    address = blob + sizeof(info);
    serve = address + info.address_len;
    rkey = serve + info.serve_address_len;
    state_rkey = rkey + info.rkey_len;

    /* The worker peers reach: the peer's serving worker where it has one (progressed by the
     * peer's proxy thread as well as by its MPI calls and waits), else its worker.  Operations
     * a transport emulates in software (tcp's RMA and atomics, the window state's lock words
     * among them) then complete while the peer's threads wait for a kernel or a stream,
     * however long, instead of running into osc_gpuic_timeout. */
    reach = info.serve_address_len > 0 ? serve : address;
    reach_len = info.serve_address_len > 0 ? info.serve_address_len : info.address_len;
    rc = ompi_osc_gpuic_endpoint_get(ompi_comm_peer_lookup(module->comm, rank), reach,
                                     reach_len, &peer->ep);
    if (rc == OMPI_SUCCESS && rank != ompi_comm_rank(module->comm)) {
        rc = ompi_osc_gpuic_liveness_add(module, &info.live);
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* kept for a device queue, whose proxy connects with a context of its own */
    peer->address_len = reach_len;
    peer->address = malloc(peer->address_len);
    peer->rkey_blob = info.rkey_len > 0 ? malloc(info.rkey_len) : NULL;
    if (peer->address == NULL || (info.rkey_len > 0 && peer->rkey_blob == NULL)) {
        return MPI_ERR_NO_MEM;
    }
    memcpy(peer->address, reach, peer->address_len);
    if (info.rkey_len > 0) {
        memcpy(peer->rkey_blob, rkey, info.rkey_len);
    }
    peer->rkey_blob_len = info.rkey_len;
    peer->win.base = info.base;
    peer->win.size = info.size;
    peer->state_addr = info.state_addr;
    peer->disp_unit = info.disp_unit;
    if (info.rkey_len > 0) {
        status = gpuic_rkey_unpack(peer->ep, rkey, &peer->win.rkey);
    }
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    rc = ompi_osc_gpuic_state_rkey_get(peer->ep, info.state_chunk, state_rkey, &peer->state_rkey);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (info.gpu) {
        /* Device memory: reached through CUDA IPC (host copies or device code). */
        rc = ompi_osc_gpuic_gpu_peer_setup(module, rank, &info.ipc);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    if (rank == ompi_comm_rank(module->comm)) {
        /* Our own window and state need no mapping. */
        peer->win.direct = peer->win.size > 0 ? module->base : NULL;
        peer->state_direct = (char *)module->state;
    } else if (mca_osc_gpuic_component.direct && ompi_osc_gpuic_peer_on_node(module, rank)) {
        void *ptr = NULL;

        if (info.gpu) {
            /* mapped above */
        } else if (module->flavor == MPI_WIN_FLAVOR_SHARED) {
            /* The whole segment is mapped here already. */
            peer->win.direct = peer->win.size > 0 ? module->shm_seg + module->shm_off[rank]
                                                  : NULL;
        } else if (peer->win.rkey != NULL &&
                   gpuic_rkey_ptr(peer->win.rkey, peer->win.base, &ptr) == GPUIC_OK) {
            peer->win.direct = ptr;
        }
        if (gpuic_rkey_ptr(peer->state_rkey, peer->state_addr, &ptr) == GPUIC_OK) {
            peer->state_direct = ptr;
        }
        ompi_osc_gpuic_cma_peer_setup(module, rank, info.pid, info.cma_token_addr,
                                      info.cma_token);
    }
    return OMPI_SUCCESS;
}

/*
 * all_direct holds when every process maps every peer's window (if not empty) and state;
 * state_direct when every process maps every peer's state block.  Agrees on @p rc in the same
 * collective, as ompi_osc_gpuic_window_agree() does (the paths are meaningless on failure).
 */
static int ompi_osc_gpuic_decide_direct(ompi_osc_gpuic_module_t *module, int rc)
{
    struct ompi_communicator_t *comm = module->comm;
    /* maximum over the processes of: failure class, not all mapped, not all states mapped */
    int n = ompi_comm_size(comm), i, mine[3] = {0, 0, 0}, all[3] = {0, 1, 1}, crc;

    mine[0] = ompi_osc_gpuic_window_class(rc);
    /* Attached user memory cannot be mapped by peers. */
    if (module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        mine[1] = 1;
    }
    for (i = 0; rc == OMPI_SUCCESS && i < n; ++i) {
        const ompi_osc_gpuic_peer_t *peer = &module->peers[i];

        /* CPU atomics cannot reach device memory. */
        if (peer->win.size > 0 && (peer->win.direct == NULL || peer->win.gpu)) {
            mine[1] = 1;
        }
        if (peer->state_direct == NULL) {
            mine[1] = mine[2] = 1;
        }
    }
    crc = comm->c_coll->coll_allreduce(mine, all, 3, MPI_INT, MPI_MAX, comm,
                                       comm->c_coll->coll_allreduce_module);
    module->all_direct = crc == OMPI_SUCCESS && all[1] == 0;
    module->state_direct = crc == OMPI_SUCCESS && all[2] == 0;
    if (rc != OMPI_SUCCESS || crc != OMPI_SUCCESS) {
        return rc != OMPI_SUCCESS ? rc : crc;
    }
    if (all[0] != 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d: another process could not reach its "
                  "peers (class %d)", ompi_comm_rank(comm), module->id, all[0]);
    }
    return all[0];
}

/*
 * Info keys gpuic honours, so that MPI_Win_get_info reports them after MPI_Win_set_info.  A
 * value the key does not take (no_locks=maybe, accumulate_ops=bogus) is rejected: the callback
 * returns NULL, Open MPI 4.1 then leaves the key out of MPI_Win_get_info (MPI 3.1 11.2.7: only
 * hints in use are reported) and the setting stays as it was.  Every accumulate completes at
 * its target before the call returns, which satisfies any accumulate_ordering and
 * accumulate_ops value; same_size and same_disp_unit are hints gpuic has no use for;
 * alloc_shared_noncontig takes effect at creation only.
 */

/* A boolean hint (Open MPI's reading of true and false) gpuic does not act on. */
static char *ompi_osc_gpuic_info_bool(opal_infosubscriber_t *obj, char *key, char *value)
{
    bool b;

    return opal_info_value_to_bool(value, &b) == OPAL_SUCCESS ? value : NULL;
}

/* accumulate_ordering: "none" or a comma-separated list of rar, raw, war and waw (MPI 3.1
 * 11.2.1). */
static char *ompi_osc_gpuic_info_acc_ordering(opal_infosubscriber_t *obj, char *key, char *value)
{
    const char *p = value;

    if (strcmp(value, "none") == 0) {
        return value;
    }
    for (;;) {
        if (strncmp(p, "rar", 3) != 0 && strncmp(p, "raw", 3) != 0 &&
            strncmp(p, "war", 3) != 0 && strncmp(p, "waw", 3) != 0) {
            return NULL;
        }
        p += 3;
        if (*p == '\0') {
            return value;
        }
        if (*p++ != ',') {
            return NULL;
        }
    }
}

/* accumulate_ops: same_op or same_op_no_op. */
static char *ompi_osc_gpuic_info_acc_ops(opal_infosubscriber_t *obj, char *key, char *value)
{
    return strcmp(value, "same_op") == 0 || strcmp(value, "same_op_no_op") == 0 ? value : NULL;
}

static char *ompi_osc_gpuic_info_no_locks(opal_infosubscriber_t *obj, char *key, char *value)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module((struct ompi_win_t *)obj);
    bool no_locks;

    if (opal_info_value_to_bool(value, &no_locks) != OPAL_SUCCESS) {
        return NULL;
    }
    if (module != NULL) {
        module->no_locks = no_locks;
    }
    return value;
}

static char *ompi_osc_gpuic_info_creation_only(opal_infosubscriber_t *obj, char *key,
                                               char *value)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module((struct ompi_win_t *)obj);

    /* During creation (no module yet) the value is taken; later it cannot change. */
    if (module == NULL) {
        return value;
    }
    return module->shm_noncontig ? "true" : "false";
}

static void ompi_osc_gpuic_info_subscribe(ompi_osc_gpuic_module_t *module)
{
    opal_infosubscriber_t *obj = &module->win->super;

    opal_infosubscribe_subscribe(obj, "no_locks", module->no_locks ? "true" : "false",
                                 ompi_osc_gpuic_info_no_locks);
    opal_infosubscribe_subscribe(obj, "accumulate_ordering", "rar,raw,war,waw",
                                 ompi_osc_gpuic_info_acc_ordering);
    opal_infosubscribe_subscribe(obj, "accumulate_ops", "same_op_no_op",
                                 ompi_osc_gpuic_info_acc_ops);
    opal_infosubscribe_subscribe(obj, "same_size", "false", ompi_osc_gpuic_info_bool);
    opal_infosubscribe_subscribe(obj, "same_disp_unit", "false", ompi_osc_gpuic_info_bool);
    if (module->flavor == MPI_WIN_FLAVOR_SHARED) {
        opal_infosubscribe_subscribe(obj, "alloc_shared_noncontig", "false",
                                     ompi_osc_gpuic_info_creation_only);
    }
}

int ompi_osc_gpuic_window_create(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                                 struct ompi_communicator_t *comm, struct opal_info_t *info,
                                 int flavor, int *model)
{
    ompi_osc_gpuic_module_t *module;
    gpuic_context_t *ctx;
    gpuic_status_t status = GPUIC_OK;
    const char *what = "window memory";
    char *blob = NULL, *all = NULL;
    size_t blob_len = 0, slot = 0;
    char name[MPI_MAX_OBJECT_NAME];
    int rc, i, n;

    rc = ompi_osc_gpuic_context_get(&ctx);
    if (rc == OMPI_SUCCESS && mca_osc_gpuic_component.async_progress) {
        rc = ompi_osc_gpuic_proxy_start();
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    module = calloc(1, sizeof(*module));
    if (module == NULL) {
        return MPI_ERR_NO_MEM;
    }
    OBJ_CONSTRUCT(&module->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->dyn_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->gpu_lock, opal_mutex_t);
    module->gpu_same = -1;
    module->super = ompi_osc_gpuic_module_template;
    module->ext.magic = OMPI_OSC_GPUIC_EXT_MAGIC;
    module->ext.target_path = ompi_osc_gpuic_target_path;
    module->ext.device_handle = ompi_osc_gpuic_device_handle_get;
    module->ext.device_path = ompi_osc_gpuic_device_path;
    module->ext.device_handle_release = ompi_osc_gpuic_device_handle_release;
    module->ext.stream = ompi_osc_gpuic_stream_ops;
    module->win = win;
    module->flavor = flavor;
    module->size = size;
    module->disp_unit = disp_unit;
    module->epoch = OMPI_OSC_GPUIC_EPOCH_NONE;
    if (info != NULL) {
        bool value = false;
        int found = 0;

        opal_info_get_bool(info, "no_locks", &value, &found);
        module->no_locks = found && value;
    }

    rc = ompi_comm_dup(comm, &module->comm);
    if (rc != OMPI_SUCCESS) {
        module->comm = NULL;
        goto err_destroy;
    }
    n = ompi_comm_size(module->comm);

    module->id = __atomic_fetch_add(&mca_osc_gpuic_component.next_id, 1, __ATOMIC_RELAXED);
    /* A process that uses CUDA may hand device buffers to any window: be ready to tell. */
    (void)gpuic_cuda_init_if_loaded();
    switch (flavor) {
    case MPI_WIN_FLAVOR_ALLOCATE:
        if (ompi_osc_gpuic_info_wants_device(info)) {
            /* a failure here (logged there) is agreed on with the peers below */
            rc = ompi_osc_gpuic_gpu_allocate(module, size);
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_gpu_register(module, ctx);
            }
            *base = module->base;
            break;
        }
        /* UCX allocates the memory so that same-node peers can map it directly. */
        if (size > 0) {
            status = gpuic_mr_allocate(ctx, size, &module->mr);
            module->base = status == GPUIC_OK ? gpuic_mr_address(module->mr) : NULL;
            what = "shared memory for the window";
        }
        *base = module->base;
        break;
    case MPI_WIN_FLAVOR_SHARED:
        rc = ompi_osc_gpuic_shared_allocate(module, info, size);
        if (rc != OMPI_SUCCESS) {
            goto err_destroy;
        }
        if (size > 0) {
            status = gpuic_mr_register(ctx, module->base, size, &module->mr);
        }
        *base = module->base;
        break;
    case MPI_WIN_FLAVOR_DYNAMIC:
        /* The "window" peers see is the region table; attached memory comes later. */
        module->disp_unit = 1;
        rc = ompi_osc_gpuic_dynamic_setup(module, ctx);
        if (rc != OMPI_SUCCESS) {
            goto err_destroy;
        }
        break;
    default:
        module->base = *base;
        if (ompi_osc_gpuic_gpu_detect(module->base, size)) {
            /* cudaMalloc memory: CUDA IPC for this node, UCX for the others */
            module->gpu = true;
            rc = ompi_osc_gpuic_gpu_register(module, ctx);
        } else if (size > 0) {
            status = gpuic_mr_register(ctx, module->base, size, &module->mr);
            what = "a registration of the window's memory";
        }
        break;
    }
    if (rc == OMPI_SUCCESS && status == GPUIC_OK) {
        size_t bytes = ompi_osc_gpuic_state_size(n);
        void *block = NULL;

        rc = ompi_osc_gpuic_state_block_get(bytes, &module->state_mr, &block,
                                            &module->state_chunk);
        if (rc == OMPI_SUCCESS) {
            module->state = block;
            module->state_bytes = bytes;
        } else if (rc == MPI_ERR_NO_MEM) {
            ompi_osc_gpuic_window_log_nomem(module, "shared memory for the window's state", bytes,
                                            "free memory, or raise the shared-memory limits "
                                            "(/dev/shm size, kernel.shmmax)");
        }
    }
    if (rc == OMPI_SUCCESS && status != GPUIC_OK) {
        rc = ompi_osc_gpuic_error(status);
        if (status == GPUIC_ERR_NO_MEMORY) {
            ompi_osc_gpuic_window_log_nomem(module, what, size,
                                            "free memory, ask for less, or raise the locked-"
                                            "memory limit (ulimit -l) and the shared-memory "
                                            "limits (/dev/shm size, kernel.shmmax)");
        }
    }
    if (rc == OMPI_SUCCESS) {
        memset(module->state, 0, module->state_bytes);
        module->peers = calloc(n, sizeof(*module->peers));
        module->start_member = calloc(n, 1);
        module->posts_seen = calloc(n, sizeof(uint64_t));
        module->completes_seen = calloc(n, sizeof(uint64_t));
        if (module->peers == NULL || module->start_member == NULL ||
            module->posts_seen == NULL || module->completes_seen == NULL) {
            rc = MPI_ERR_NO_MEM;
        }
    }
    module->post_n = -1;
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_blob_build(module, ctx, &blob, &blob_len);
    }
    /* before any peer knows the memory: their atomics may come as soon as they do */
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_gpu_exec_add(module);
    }
    /* Window creation is collective and MPI gives no way to report one process's failure to
     * the others: every process learns with the blobs whether all could get their memory,
     * and all fail together (nobody is left waiting in a later collective). */
    rc = ompi_osc_gpuic_blob_allgather(module, rc, blob, blob_len, &all, &slot);
    free(blob);
    if (rc != OMPI_SUCCESS) {
        goto err_destroy;
    }
    for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        rc = ompi_osc_gpuic_peer_setup(module, i, all + slot * i);
    }
    free(all);
    /* A peer this process cannot reach (device memory on another node) fails here only: the
     * others learn it in the same step that settles the paths. */
    rc = ompi_osc_gpuic_decide_direct(module, rc);
    if (rc != OMPI_SUCCESS) {
        goto err_destroy;
    }
    rc = ompi_osc_gpuic_stream_setup(module);
    if (rc != OMPI_SUCCESS) {
        goto err_destroy;
    }

    snprintf(name, sizeof(name), "gpuic window %d", module->id);
    ompi_win_set_name(win, name);
    win->w_osc_module = &module->super;
    *model = MPI_WIN_UNIFIED;
    ompi_osc_gpuic_info_subscribe(module);
    ompi_osc_gpuic_window_added(module);
    gpuic_log(GPUIC_LOG_INFO, "rank %d: window %d created (flavor %d, %zu bytes, %d ranks, %s)",
              ompi_comm_rank(module->comm), module->id, flavor, size, n,
              module->all_direct ? "all peers mapped" : "UCX atomics");
    return OMPI_SUCCESS;

err_destroy:
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED) {
        *base = NULL;
    }
    ompi_osc_gpuic_module_destroy(module);
    return rc;
}

bool ompi_osc_gpuic_window_any_gpu(const ompi_osc_gpuic_module_t *module)
{
    int i, n = ompi_comm_size(module->comm);

    for (i = 0; module->peers != NULL && i < n; ++i) {
        if (module->peers[i].win.gpu) {
            return true;
        }
    }
    return false;
}

int ompi_osc_gpuic_free(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    struct ompi_communicator_t *comm = module->comm;
    int rc;

    /* rejected before anything changes: the window stays as it was */
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_START || module->post_n >= 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_free with an active-target epoch open");
        return MPI_ERR_RMA_SYNC;
    }
    /* A passive-target epoch left open is ended here as its unlock would end it (MPI 3.1
     * section 11.2.5 calls the free erroneous; osc/rdma and osc/pt2pt end the epoch too, and
     * codes that forget the unlock run on them). */
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_free on window %d inside MPI_Win_lock_all: "
                  "unlocking first", module->id);
        rc = ompi_osc_gpuic_unlock_all(win);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    } else if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_free on window %d with locks held: unlocking first",
                  module->id);
        for (int t = 0; t < ompi_comm_size(comm); ++t) {
            if (module->peers[t].lock_type != 0 && (rc = ompi_osc_gpuic_unlock(t, win)) !=
                                                       OMPI_SUCCESS) {
                return rc;
            }
        }
    }
    /* Our own operations are complete after the last synchronization; the barrier keeps our
     * memory registered until every peer has stopped accessing it. */
    rc = ompi_osc_gpuic_module_flush(module);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_module_settle(module);
    }
    if (rc == OMPI_SUCCESS) {
        rc = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
    }
    if (rc == OMPI_SUCCESS && ompi_osc_gpuic_window_any_gpu(module)) {
        /* Every peer's calls on the window are done: the window agent stops before anything
         * of the window is unmapped or freed.  Under gpu_lock: the executor of peers'
         * requests still knows the window. */
        opal_mutex_lock(&module->gpu_lock);
        ompi_osc_gpuic_agent_release(module);
        opal_mutex_unlock(&module->gpu_lock);
    }
    ompi_osc_gpuic_window_removed(module);
    win->w_osc_module = NULL;
    ompi_osc_gpuic_module_destroy(module);
    return rc;
}
