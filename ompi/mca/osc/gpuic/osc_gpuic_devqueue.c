/*
 * Device queues: the proxy path of device calls.
 *
 * A window's device handle gets a queue when some target cannot be reached by device loads
 * and stores (host-memory windows, other nodes) or when osc_gpuic_device_proxy forces the
 * proxy path.  The queue is one block of pinned host memory mapped into the device (the ring
 * of libgpuic's gpuic_ring_create_at(), the proxy's completion index and the staging areas),
 * plus the producers' counters in device memory (MPIX_Gpuic_device_queue).  The process's
 * proxy thread drains it: each entry is checked against the window's key table (a key per
 * target region) and executed with UCX on the proxy's own context, or by driver copies
 * through this process's CUDA IPC mapping for a forced-proxy GPU window.
 *
 * The proxy has a UCX context of its own because its thread drives that context's worker
 * without locks; endpoints on it connect to the peers' component workers (one-sided
 * operations need nothing from the target's side) with the addresses and keys kept from the
 * window's creation, so building a queue needs no collective call.
 */
#include "ompi_config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/proc/proc.h"

#include "osc_gpuic.h"

/* The device queue of one window. */
typedef struct ompi_osc_gpuic_devqueue {
    void *block;               /* pinned host block: ring, completion and free indexes,
                                * staging, result acknowledgements */
    size_t block_len;
    char *block_dev;           /* its device address */
    gpuic_ring_t *ring;
    uint64_t *done;            /* the proxy's completion index (in block); its free index
                                * follows it (done[1]) */
    uint64_t *acks;            /* result acknowledgements, one per slot (in block) */
    uint32_t *failed;          /* the proxy's failure marks, 1 + nranks words (in block) */
    MPIX_Gpuic_device_queue *dev; /* device memory */
    gpuic_keytable_t *keys;
    gpuic_cmpl_t *cmpl;
    gpuic_rkey_t **rkeys;      /* per rank: key unpacked on the proxy's endpoint, or NULL */
    uint32_t *keyids;          /* per rank: key-table key (valid where the rank is proxied) */
    bool *keyed;
    /* per rank: its sync block of the stream-triggered calls, where the proxy reaches it
     * (ompi_osc_gpuic_devqueue_key_sync): unpacked key, key-table key, whether entered */
    gpuic_rkey_t **sync_rkeys;
    uint32_t *sync_keyids;
    bool *sync_keyed;
    int nranks;
    bool attached;             /* the proxy drains the ring */
    void *self_mapped;         /* our own host window registered for device loads by us (NULL:
                                * not registered, or registered by another library) */
    gpuic_status_t reported;   /* proxy error already returned to the program */
    bool reported_state;       /* ompi_osc_gpuic_devqueue_report() has logged */
    bool copies;               /* some target is reached by driver copies (forced proxy) */
} ompi_osc_gpuic_devqueue_t;

/* Bytes of the completion index's line in the block. */
#define OMPI_OSC_GPUIC_DONE_LINE 64

/* Starts the proxy and its context on first use. */
static int ompi_osc_gpuic_proxy_get(gpuic_proxy_t **proxy_p)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    gpuic_context_params_t cparams = {0};
    gpuic_proxy_params_t pparams = {0};
    gpuic_status_t status = GPUIC_OK;
    const void *serve;
    size_t serve_len;

    opal_mutex_lock(&c->lock);
    if (c->proxy == NULL) {
        /* the proxy thread is the context's one user; setup calls pause it */
        cparams.thread_serialized = 1;
        status = gpuic_context_create(&cparams, &c->proxy_ctx);
        if (status == GPUIC_OK) {
            gpuic_context_set_timeout(c->proxy_ctx, c->timeout);
            gpuic_context_set_alive(c->proxy_ctx, ompi_osc_gpuic_liveness_all_alive, NULL);
            pparams.ctx = c->proxy_ctx;
            /* peers' device queues reach this process through the serving worker */
            gpuic_context_serve_address(c->ctx, &serve, &serve_len);
            pparams.serve = serve_len > 0 ? c->ctx : NULL;
            pparams.copy = gpuic_cuda_copy_independent;
            pparams.device_range = gpuic_cuda_mem_range;
            status = gpuic_proxy_create(&pparams, &c->proxy);
        }
        if (status == GPUIC_OK && !c->proxy_endpoints_init) {
            OBJ_CONSTRUCT(&c->proxy_endpoints, opal_hash_table_t);
            if (opal_hash_table_init(&c->proxy_endpoints, 64) != OPAL_SUCCESS) {
                OBJ_DESTRUCT(&c->proxy_endpoints);
                status = GPUIC_ERR_NO_MEMORY;
            } else {
                c->proxy_endpoints_init = true;
            }
        }
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "cannot start the proxy for device calls: %s",
                      gpuic_status_string(status));
            gpuic_proxy_destroy(c->proxy);
            c->proxy = NULL;
            gpuic_context_destroy(c->proxy_ctx);
            c->proxy_ctx = NULL;
        }
    }
    *proxy_p = c->proxy;
    opal_mutex_unlock(&c->lock);
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_proxy_start(void)
{
    gpuic_proxy_t *proxy;
    int rc = ompi_osc_gpuic_proxy_get(&proxy);

    return rc == OMPI_SUCCESS ? ompi_osc_gpuic_error(gpuic_proxy_start(proxy)) : rc;
}

/* The proxy's endpoint to @p rank (its serving worker), on the proxy's context: the caller
 * has paused the proxy thread. */
static gpuic_status_t ompi_osc_gpuic_devqueue_ep(ompi_osc_gpuic_module_t *module, int rank,
                                                 gpuic_ep_t **ep_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[rank];

    return ompi_osc_gpuic_endpoint_lookup(&mca_osc_gpuic_component.proxy_endpoints,
                                          mca_osc_gpuic_component.proxy_ctx,
                                          ompi_comm_peer_lookup(module->comm, rank),
                                          peer->address, peer->address_len, ep_p);
}

/*
 * Enters @p rank's window into the queue's key table, as @p direct says: through UCX on the
 * proxy context (GPUIC_KEYTABLE_DIRECT_NONE), or through this process's mapping of it, device
 * memory (_COPY) or host memory (_HOST).  A host mapping takes CPU atomics where the host
 * component uses them too (all_direct windows), so device-posted and host atomics on the
 * window stay atomic with each other; elsewhere its atomics keep going through UCX.
 */
static int ompi_osc_gpuic_devqueue_key(ompi_osc_gpuic_module_t *module,
                                       ompi_osc_gpuic_devqueue_t *q, int rank,
                                       gpuic_keytable_direct_t direct)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[rank];
    gpuic_keytable_entry_t e = {0};
    gpuic_status_t status = GPUIC_OK;

    e.target = (uint32_t)rank;
    e.len = peer->win.size;
    e.direct = direct;
    e.cpu_atomics = direct == GPUIC_KEYTABLE_DIRECT_HOST && module->all_direct;
    e.device_memory = direct == GPUIC_KEYTABLE_DIRECT_NONE && peer->win.gpu;
    if (direct != GPUIC_KEYTABLE_DIRECT_NONE) {
        e.base = (uint64_t)(uintptr_t)peer->win.direct;
    }
    if (direct == GPUIC_KEYTABLE_DIRECT_NONE ||
        (direct == GPUIC_KEYTABLE_DIRECT_HOST && !e.cpu_atomics)) {
        if (direct == GPUIC_KEYTABLE_DIRECT_NONE) {
            e.base = peer->win.base;
        } else {
            e.remote_base = peer->win.base; /* for its UCX atomics */
        }
        status = ompi_osc_gpuic_devqueue_ep(module, rank, &e.ep);
        if (status == GPUIC_OK) {
            status = gpuic_rkey_unpack(e.ep, peer->rkey_blob, &q->rkeys[rank]);
        }
        e.rkey = q->rkeys[rank];
    }
    if (status == GPUIC_OK) {
        status = gpuic_keytable_insert(q->keys, &e, &q->keyids[rank]);
    }
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: device queue of window %d cannot reach rank %d: %s",
                  ompi_osc_gpuic_rank(module), module->id, rank, gpuic_status_string(status));
        return ompi_osc_gpuic_error(status);
    }
    q->keyed[rank] = true;
    return OMPI_SUCCESS;
}

/* Allocates the pinned block, the ring in it, the key table and the counters. */
static int ompi_osc_gpuic_devqueue_alloc(ompi_osc_gpuic_module_t *module,
                                         ompi_osc_gpuic_devqueue_t **q_p)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    uint32_t slots = (uint32_t)c->device_queue_slots;
    size_t stage = (size_t)c->device_stage_bytes, ring_len = gpuic_ring_footprint_tagged(slots);
    ompi_osc_gpuic_devqueue_t *q;
    int n = ompi_comm_size(module->comm);
    void *dev = NULL;

    if (ring_len == 0 || slots < MPIX_GPUIC_DEVICE_QUEUE_MIN_SLOTS || slots > 65536 ||
        stage < 64 || stage > (1u << 20) || stage % 64 != 0) {
        gpuic_log(GPUIC_LOG_ERROR, "osc_gpuic_device_queue_slots (%u) must be a power of two "
                  "in %u .. 65536 and osc_gpuic_device_stage_bytes (%zu) a multiple of 64 in "
                  "64 .. 1048576", slots, (unsigned)MPIX_GPUIC_DEVICE_QUEUE_MIN_SLOTS, stage);
        return MPI_ERR_ARG;
    }
    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return MPI_ERR_NO_MEM;
    }
    *q_p = q;
    q->nranks = n;
    q->rkeys = calloc((size_t)n, sizeof(*q->rkeys));
    q->keyids = calloc((size_t)n, sizeof(*q->keyids));
    q->keyed = calloc((size_t)n, sizeof(*q->keyed));
    q->sync_rkeys = calloc((size_t)n, sizeof(*q->sync_rkeys));
    q->sync_keyids = calloc((size_t)n, sizeof(*q->sync_keyids));
    q->sync_keyed = calloc((size_t)n, sizeof(*q->sync_keyed));
    q->block_len = ring_len + OMPI_OSC_GPUIC_DONE_LINE + (size_t)slots * stage +
                   (size_t)slots * sizeof(uint64_t) + (1 + (size_t)n) * sizeof(uint32_t);
    q->block = ompi_osc_gpuic_pages_alloc(q->block_len);
    if (q->rkeys == NULL || q->keyids == NULL || q->keyed == NULL || q->sync_rkeys == NULL ||
        q->sync_keyids == NULL || q->sync_keyed == NULL || q->block == NULL) {
        gpuic_log(GPUIC_LOG_ERROR, "cannot allocate the %zu-byte device queue of window %d "
                  "(lower osc_gpuic_device_queue_slots or osc_gpuic_device_stage_bytes)",
                  q->block_len, module->id);
        return MPI_ERR_NO_MEM;
    }
    if (gpuic_cuda_host_register(q->block, q->block_len, &dev) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "cannot pin the %zu-byte device queue of window %d for the "
                  "device (lower osc_gpuic_device_queue_slots or osc_gpuic_device_stage_bytes, "
                  "or raise the locked-memory limit)", q->block_len, module->id);
        free(q->block);
        q->block = NULL;
        return MPI_ERR_NO_MEM;
    }
    q->block_dev = dev;
    q->done = (uint64_t *)((char *)q->block + ring_len);
    q->acks = (uint64_t *)((char *)q->done + OMPI_OSC_GPUIC_DONE_LINE + (size_t)slots * stage);
    q->failed = (uint32_t *)(q->acks + slots);
    /* GPU threads write and publish each entry in the same tagged stores
     * (mpix_gpuic_device_proxy.cuh) */
    (void)gpuic_ring_create_tagged_at(q->block, ring_len, slots, (uint32_t)module->id, &q->ring);
    if (q->ring == NULL ||
        /* a window and a sync block per rank */
        gpuic_keytable_create((uint32_t)(n < 32768 ? 2 * n : 65536), &q->keys) != GPUIC_OK ||
        gpuic_cmpl_create((uint32_t)n, &q->cmpl) != GPUIC_OK) {
        return MPI_ERR_NO_MEM;
    }
    return OMPI_SUCCESS;
}

/* The device-memory descriptor of the queue. */
static int ompi_osc_gpuic_devqueue_publish(ompi_osc_gpuic_devqueue_t *q)
{
    MPIX_Gpuic_device_queue d;
    void *dev = NULL;
    char *b = q->block_dev;
    size_t ring_len = (char *)q->done - (char *)q->block;

    memset(&d, 0, sizeof(d));
    d.tagged = (uint64_t *)(b + ((char *)q->ring->tagged - (char *)q->block));
    d.done = (const uint64_t *)(b + ring_len);
    d.stage = b + ring_len + OMPI_OSC_GPUIC_DONE_LINE;
    d.stage_host = (uint64_t)(uintptr_t)((char *)q->block + ring_len + OMPI_OSC_GPUIC_DONE_LINE);
    d.timeout_ns = (uint64_t)(mca_osc_gpuic_component.timeout * 1e9);
    d.size = q->ring->size;
    d.stage_bytes = (uint32_t)mca_osc_gpuic_component.device_stage_bytes;
    d.acks = (uint64_t *)(b + ((char *)q->acks - (char *)q->block));
    d.failed = (const uint32_t *)(b + ((char *)q->failed - (char *)q->block));
    if (gpuic_cuda_mem_alloc(sizeof(d), &dev) != GPUIC_OK ||
        gpuic_cuda_memcpy(dev, &d, sizeof(d)) != GPUIC_OK) {
        gpuic_cuda_mem_free(dev);
        return MPI_ERR_NO_MEM;
    }
    q->dev = dev;
    return OMPI_SUCCESS;
}

/*
 * Warns once per process when the proxy moves data with CUDA copies (a GPU window on the
 * forced proxy path) while the driver loads kernels lazily: a kernel loaded for the first time
 * while a device call waits for the proxy (a flush, a get, an enqueued epoch) may hold the
 * proxy's copy until the wait gives up at osc_gpuic_timeout (docs/streams.md).
 */
static void ompi_osc_gpuic_devqueue_warn_lazy(void)
{
    static bool warned;

    if (!warned && gpuic_cuda_lazy_loading()) {
        warned = true;
        gpuic_log(GPUIC_LOG_WARN, "osc_gpuic_device_proxy=1 on a GPU window: the proxy copies "
                  "with the CUDA driver, and CUDA loads kernels lazily; a kernel first "
                  "launched while device code waits for the proxy can stall that wait until "
                  "osc_gpuic_timeout. Run with CUDA_MODULE_LOADING=EAGER, or launch (or "
                  "cudaFuncGetAttributes) every kernel once before such waits");
    }
}

int ompi_osc_gpuic_devqueue_setup(ompi_osc_gpuic_module_t *module, MPIX_Gpuic_device_win *host)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    int n = ompi_comm_size(module->comm), me = ompi_comm_rank(module->comm), i, rc;
    ompi_osc_gpuic_devqueue_t *q = NULL;
    gpuic_proxy_queue_t pq = {0};
    gpuic_proxy_t *proxy;
    bool need = false;

    if (module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        return OMPI_SUCCESS; /* attached regions are not reachable from device code */
    }
    for (i = 0; i < n; ++i) {
        if (module->peers[i].win.size > 0 &&
            (host->peers[i].path == MPIX_GPUIC_DEVICE_PATH_NONE || c->device_proxy)) {
            need = true;
        }
    }
    if (!need) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_proxy_get(&proxy);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_devqueue_alloc(module, &q);
        module->devq = q;
    }
    if (rc != OMPI_SUCCESS) {
        ompi_osc_gpuic_devqueue_release(module);
        return rc;
    }
    /* endpoints and keys on the proxy's context: its thread must stand still meanwhile */
    gpuic_proxy_pause(proxy);
    for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        const ompi_osc_gpuic_peer_t *peer = &module->peers[i];
        MPIX_Gpuic_device_peer *dp = &host->peers[i];

        if (peer->win.size == 0) {
            continue;
        }
        if (dp->path == MPIX_GPUIC_DEVICE_PATH_P2P) {
            if (!c->device_proxy) {
                continue;
            }
            /* forced: data through the proxy's copies over our mapping, atomics on it */
            rc = ompi_osc_gpuic_devqueue_key(module, q, i, GPUIC_KEYTABLE_DIRECT_COPY);
            q->copies = true;
            dp->flags |= MPIX_GPUIC_DEVICE_PEER_ATOMICS_P2P | MPIX_GPUIC_DEVICE_PEER_LOADS |
                         MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED;
        } else if (peer->win.gpu && peer->win.rkey == NULL) {
            continue; /* device memory this process cannot reach */
        } else if (c->direct && peer->win.direct != NULL) {
            /* host memory this process maps (a same-node peer's window allocated by UCX, or
             * our own): the proxy executes entries with CPU copies and atomics on the mapping,
             * so entries name addresses in it; osc_gpuic_direct=0 keeps them on UCX */
            rc = ompi_osc_gpuic_devqueue_key(module, q, i, GPUIC_KEYTABLE_DIRECT_HOST);
            dp->base = (uint64_t)(uintptr_t)peer->win.direct;
            dp->flags |= MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED;
        } else {
            rc = ompi_osc_gpuic_devqueue_key(module, q, i, GPUIC_KEYTABLE_DIRECT_NONE);
            dp->base = peer->win.base;
        }
        dp->path = MPIX_GPUIC_DEVICE_PATH_PROXY;
        dp->key = q->keyids[i];
    }
    gpuic_proxy_resume(proxy);
    if (rc == OMPI_SUCCESS && q->copies) {
        ompi_osc_gpuic_devqueue_warn_lazy();
    }
    if (rc == OMPI_SUCCESS && !module->gpu && module->size > 0 &&
        host->peers[me].path == MPIX_GPUIC_DEVICE_PATH_PROXY) {
        /* our own host window, mapped so device code can wait on signal words in it; where
         * the memory cannot be registered, signal waits are unsupported (nothing else needs
         * it) */
        void *dptr = NULL;
        bool registered = false;

        if (gpuic_cuda_host_map(module->base, module->size, &dptr, &registered) == GPUIC_OK) {
            q->self_mapped = registered ? module->base : NULL;
            if (dptr == module->base) {
                host->peers[me].flags |= MPIX_GPUIC_DEVICE_PEER_LOADS;
            }
        }
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_devqueue_publish(q);
    }
    if (rc == OMPI_SUCCESS) {
        pq.ring = q->ring;
        pq.keys = q->keys;
        pq.cmpl = q->cmpl;
        pq.done = q->done;
        pq.free = q->done + 1;
        pq.acks = q->acks;
        pq.failed = q->failed;
        rc = ompi_osc_gpuic_error(gpuic_proxy_add(proxy, &pq));
        q->attached = rc == OMPI_SUCCESS;
    }
    if (rc != OMPI_SUCCESS) {
        ompi_osc_gpuic_devqueue_release(module);
        for (i = 0; i < n; ++i) {
            if (host->peers[i].path == MPIX_GPUIC_DEVICE_PATH_PROXY) {
                host->peers[i].path = MPIX_GPUIC_DEVICE_PATH_NONE;
            }
        }
        return rc;
    }
    host->queue = q->dev;
    gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d has a device queue of %u slots",
              me, module->id, q->ring->size);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_devqueue_key_sync(ompi_osc_gpuic_module_t *module, int rank, uint64_t base,
                                     uint64_t len, const void *rkey_blob, uint32_t *key_p)
{
    ompi_osc_gpuic_devqueue_t *q = module->devq;
    gpuic_keytable_entry_t e = {0};
    gpuic_status_t status;

    if (q == NULL || !q->attached) {
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    if (q->sync_keyed[rank]) {
        *key_p = q->sync_keyids[rank];
        return OMPI_SUCCESS;
    }
    e.target = (uint32_t)rank;
    e.base = base;
    e.len = len;
    e.direct = GPUIC_KEYTABLE_DIRECT_NONE;
    e.device_memory = 1; /* its fetch-and-adds go to the owner's agent (lock_all) */
    gpuic_proxy_pause(mca_osc_gpuic_component.proxy);
    status = ompi_osc_gpuic_devqueue_ep(module, rank, &e.ep);
    if (status == GPUIC_OK) {
        status = gpuic_rkey_unpack(e.ep, rkey_blob, &q->sync_rkeys[rank]);
    }
    if (status == GPUIC_OK) {
        e.rkey = q->sync_rkeys[rank];
        status = gpuic_keytable_insert(q->keys, &e, &q->sync_keyids[rank]);
    }
    gpuic_proxy_resume(mca_osc_gpuic_component.proxy);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: device queue of window %d cannot reach the sync "
                  "block of rank %d: %s", ompi_osc_gpuic_rank(module), module->id, rank,
                  gpuic_status_string(status));
        return ompi_osc_gpuic_error(status);
    }
    q->sync_keyed[rank] = true;
    *key_p = q->sync_keyids[rank];
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_devqueue_drain(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_devqueue_t *q = module->devq;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    gpuic_status_t status;
    uint64_t published;

    if (q == NULL || !q->attached) {
        return OMPI_SUCCESS;
    }
    /* Finished kernels have published all they posted: done once the proxy has nothing
     * published left to read (gpuic_ring_published() is its read index) and has completed
     * everything it read. */
    for (;;) {
        published = gpuic_ring_published(q->ring);
        if (published == gpuic_ring_read_index(q->ring) &&
            gpuic_ring_done_reached(__atomic_load_n(q->done, __ATOMIC_ACQUIRE), published)) {
            return OMPI_SUCCESS;
        }
        /* the proxy thread does the work: nothing to progress here */
        status = gpuic_context_wait_round(mca_osc_gpuic_component.ctx, &wait, 0);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: device queue of window %d: entries not "
                      "completed by the proxy (read up to %" PRIu64 ", complete below %" PRIu64
                      ")", ompi_osc_gpuic_rank(module), module->id,
                      gpuic_ring_read_index(q->ring),
                      gpuic_ring_done_index(__atomic_load_n(q->done, __ATOMIC_ACQUIRE)));
            return MPI_ERR_OTHER;
        }
    }
}

/*
 * Logs where the window's device queue stands, for a device wait that ended by timeout: how
 * far GPU threads reserved and saw completions (device memory, read with a copy that does not
 * wait for the program's kernels), how far the proxy read and completed (host memory), and
 * how many words of the block at the read index carry the tag the proxy waits for there (a
 * block it cannot take yet: 0 means nothing of the entry arrived).
 */
void ompi_osc_gpuic_devqueue_report(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_devqueue_t *q = module->devq;
    MPIX_Gpuic_device_queue d;
    gpuic_proxy_stats_t ps = {0};
    uint64_t read, done;
    const uint64_t *blk;
    uint32_t tag;
    unsigned tagged = 0;

    if (q == NULL || q->reported_state) {
        return;
    }
    q->reported_state = true;
    memset(&d, 0, sizeof(d));
    if (q->dev == NULL || gpuic_cuda_copy_independent(&d, q->dev, sizeof(d)) != GPUIC_OK) {
        d.tickets = d.done_seen = d.free_seen = (unsigned long long)-1;
    }
    read = gpuic_ring_read_index(q->ring);
    done = gpuic_ring_done_index(__atomic_load_n(q->done, __ATOMIC_ACQUIRE));
    tag = gpuic_ring_tag(read, 0);
    blk = q->ring->tagged + (read & q->ring->mask) * GPUIC_RING_TAGGED_WORDS;
    for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
        tagged += (uint32_t)(__atomic_load_n(&blk[i], __ATOMIC_RELAXED) >> 32) == tag;
    }
    if (mca_osc_gpuic_component.proxy != NULL) {
        gpuic_proxy_stats(mca_osc_gpuic_component.proxy, &ps);
    }
    gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: a device call waited for the proxy past "
              "osc_gpuic_timeout; device queue: reserved %llu (modulo 2^32), free bound %llu, "
              "completions seen on the device %llu, free index seen %llu, full waits %llu; "
              "proxy: read %" PRIu64 ", complete %" PRIu64 ", free %" PRIu64 ", %u of %u words "
              "at the read index tagged, %" PRIu64 " entries, %" PRIu64 " errors, %" PRIu64
              " sleeps%s",
              ompi_osc_gpuic_rank(module), module->id, d.tickets >> 32, d.tickets & 0xffffffffull,
              d.done_seen == (unsigned long long)-1 ? d.done_seen
                                                    : gpuic_ring_done_index(d.done_seen),
              d.free_seen, d.full_waits, read, done,
              __atomic_load_n(q->done + 1, __ATOMIC_ACQUIRE), tagged,
              (unsigned)GPUIC_RING_TAGGED_WORDS, ps.wqes, ps.errors, ps.sleeps,
              q->copies && gpuic_cuda_lazy_loading()
                  ? " (the proxy copies with the CUDA driver and kernels load lazily: a kernel "
                    "launched for the first time during the wait holds the copies up; load "
                    "kernels first or set CUDA_MODULE_LOADING=EAGER)"
                  : "");
}

bool ompi_osc_gpuic_devqueue_failed(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_devqueue_t *q = module->devq;
    gpuic_status_t err;

    if (q == NULL || __atomic_load_n(&q->failed[0], __ATOMIC_ACQUIRE) == 0) {
        return false;
    }
    err = gpuic_cmpl_error(q->cmpl);
    if (err != GPUIC_OK) {
        q->reported = err; /* a device wait returned it */
    }
    return true;
}

int ompi_osc_gpuic_devqueue_quiesce(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_devqueue_t *q = module->devq;
    gpuic_status_t err;
    int rc = ompi_osc_gpuic_devqueue_drain(module);

    if (rc != OMPI_SUCCESS || q == NULL) {
        return rc;
    }
    err = gpuic_cmpl_error(q->cmpl);
    if (err != GPUIC_OK && err != q->reported) {
        q->reported = err; /* the word keeps the first error: report it once */
        return ompi_osc_gpuic_error(err);
    }
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_devqueue_release(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    ompi_osc_gpuic_devqueue_t *q = module->devq;

    if (q == NULL) {
        return;
    }
    if (q->attached && gpuic_proxy_remove(c->proxy, q->ring) != GPUIC_OK) {
        /* The proxy's rounds still point into the queue (a peer that no longer completes
         * anything): its memory, keys and counters are kept for the rest of the process
         * rather than freed under the proxy. */
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: device operations through the proxy "
                  "did not complete within osc_gpuic_timeout (%.1f s); the window's device "
                  "queue is abandoned", ompi_osc_gpuic_rank(module), module->id,
                  mca_osc_gpuic_component.timeout);
        module->devq = NULL;
        return;
    }
    if (c->proxy != NULL) {
        gpuic_proxy_pause(c->proxy);
    }
    for (int i = 0; i < q->nranks; ++i) {
        if (q->keyed != NULL && q->keyed[i]) {
            (void)gpuic_keytable_remove(q->keys, q->keyids[i]);
        }
        if (q->rkeys != NULL) {
            gpuic_rkey_destroy(q->rkeys[i]);
        }
        if (q->sync_keyed != NULL && q->sync_keyed[i]) {
            (void)gpuic_keytable_remove(q->keys, q->sync_keyids[i]);
        }
        if (q->sync_rkeys != NULL) {
            gpuic_rkey_destroy(q->sync_rkeys[i]);
        }
    }
    if (c->proxy != NULL) {
        gpuic_proxy_resume(c->proxy);
    }
    gpuic_keytable_destroy(q->keys);
    gpuic_cmpl_destroy(q->cmpl);
    gpuic_cuda_mem_free(q->dev);
    if (q->self_mapped != NULL) {
        gpuic_cuda_host_unregister(q->self_mapped);
    }
    if (q->block != NULL) {
        gpuic_cuda_host_unregister(q->block);
        free(q->block);
    }
    free(q->rkeys);
    free(q->keyids);
    free(q->keyed);
    free(q->sync_rkeys);
    free(q->sync_keyids);
    free(q->sync_keyed);
    free(q);
    module->devq = NULL;
}

void ompi_osc_gpuic_devqueue_finalize(void)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    uint64_t key;
    void *value, *node = NULL;
    int rc;

    gpuic_proxy_destroy(c->proxy);
    c->proxy = NULL;
    if (c->proxy_endpoints_init) {
        rc = opal_hash_table_get_first_key_uint64(&c->proxy_endpoints, &key, &value, &node);
        while (rc == OPAL_SUCCESS) {
            gpuic_ep_destroy(value);
            rc = opal_hash_table_get_next_key_uint64(&c->proxy_endpoints, &key, &value, node,
                                                     &node);
        }
        OBJ_DESTRUCT(&c->proxy_endpoints);
        c->proxy_endpoints_init = false;
    }
    gpuic_context_destroy(c->proxy_ctx);
    c->proxy_ctx = NULL;
}

unsigned long long ompi_osc_gpuic_devqueue_full_waits(void)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    unsigned long long total = 0;

    opal_mutex_lock(&c->lock);
    for (ompi_osc_gpuic_module_t *m = c->windows; m != NULL; m = m->next) {
        unsigned long long n = 0;

        /* a copy that does not wait for the program's kernels (they may be what fills it) */
        if (m->devq != NULL && m->devq->dev != NULL &&
            gpuic_cuda_copy_independent(&n, &m->devq->dev->full_waits, sizeof(n)) == GPUIC_OK) {
            total += n;
        }
    }
    opal_mutex_unlock(&c->lock);
    return total;
}
