/*
 * Dynamic windows: MPI_Win_attach / MPI_Win_detach and the lookup of a target's attached
 * regions.
 *
 * Each process publishes its attached regions in a region table: UCX-allocated memory (so that
 * same-node peers map it) guarded by a sequence lock.  The owner makes the sequence number odd,
 * rewrites the entries, and makes it even again.  An origin keeps a copy of each target's
 * regions with their unpacked keys, tagged with the sequence number it was read at; before
 * every access it compares that tag with the target's current sequence number (one load
 * through a mapping, else one 8-byte get) and rereads the table when it changed, so an access
 * to a region that was detached finds no region and fails with MPI_ERR_RMA_RANGE.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/sys/atomic.h"

#include "osc_gpuic.h"

/* Largest packed key a table entry holds. */
#define OMPI_OSC_GPUIC_RKEY_MAX 512

typedef struct ompi_osc_gpuic_table_entry {
    uint64_t base;
    uint64_t size;
    uint32_t rkey_len;
    uint32_t reserved;
    uint8_t  rkey[OMPI_OSC_GPUIC_RKEY_MAX];
} ompi_osc_gpuic_table_entry_t;

typedef struct ompi_osc_gpuic_table {
    uint64_t                     seq;   /* odd while the owner rewrites the table */
    uint64_t                     count;
    ompi_osc_gpuic_table_entry_t entries[];
} ompi_osc_gpuic_table_t;

size_t ompi_osc_gpuic_dynamic_table_size(int max_attached)
{
    return offsetof(ompi_osc_gpuic_table_t, entries) +
           (size_t)max_attached * sizeof(ompi_osc_gpuic_table_entry_t);
}

int ompi_osc_gpuic_dynamic_setup(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx)
{
    size_t len;
    gpuic_status_t status;

    module->max_attached = mca_osc_gpuic_component.max_attach;
    module->attached = calloc(module->max_attached, sizeof(*module->attached));
    if (module->attached == NULL) {
        return MPI_ERR_NO_MEM;
    }
    len = ompi_osc_gpuic_dynamic_table_size(module->max_attached);
    status = gpuic_mr_allocate(ctx, len, &module->mr);
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    module->base = gpuic_mr_address(module->mr);
    module->size = len;
    memset(module->base, 0, len);
    return OMPI_SUCCESS;
}

/* Rewrites the published table from module->attached (caller holds module->lock). */
static int ompi_osc_gpuic_table_publish(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_table_t *table = module->base;
    uint64_t count = 0;
    int i, rc = OMPI_SUCCESS;

    __atomic_fetch_add(&table->seq, 1, __ATOMIC_ACQ_REL); /* odd: being rewritten */
    for (i = 0; i < module->nattached; ++i) {
        ompi_osc_gpuic_attached_t *a = &module->attached[i];
        ompi_osc_gpuic_table_entry_t *e = &table->entries[count];
        void *blob;
        size_t len;

        if (a->mr == NULL) {
            continue; /* size 0: nothing to reach */
        }
        if (gpuic_mr_pack(a->mr, &blob, &len) != GPUIC_OK) {
            rc = MPI_ERR_RMA_ATTACH;
            continue;
        }
        if (len > OMPI_OSC_GPUIC_RKEY_MAX) {
            gpuic_log(GPUIC_LOG_ERROR, "packed key of %zu bytes exceeds the table's %d", len,
                      OMPI_OSC_GPUIC_RKEY_MAX);
            rc = MPI_ERR_RMA_ATTACH;
        } else {
            e->base = (uint64_t)(uintptr_t)a->base;
            e->size = a->size;
            e->rkey_len = (uint32_t)len;
            memcpy(e->rkey, blob, len);
            count++;
        }
        gpuic_mr_blob_release(blob);
    }
    table->count = count;
    __atomic_fetch_add(&table->seq, 1, __ATOMIC_ACQ_REL); /* even: stable */
    return rc;
}

int ompi_osc_gpuic_win_attach(struct ompi_win_t *win, void *base, size_t size)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    ompi_osc_gpuic_attached_t *a;
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    gpuic_status_t status;
    int i, rc;

    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return MPI_ERR_RMA_FLAVOR;
    }
    opal_mutex_lock(&module->lock);
    for (i = 0; i < module->nattached; ++i) {
        uintptr_t alo = (uintptr_t)module->attached[i].base;
        uintptr_t ahi = alo + module->attached[i].size;

        if (size > 0 && module->attached[i].size > 0 && lo < ahi && alo < hi) {
            opal_mutex_unlock(&module->lock);
            gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_attach of %p+%zu overlaps an attached region",
                      base, size);
            return MPI_ERR_RMA_ATTACH;
        }
    }
    if (module->nattached == module->max_attached) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_attach: %d regions attached already (raise "
                  "osc_gpuic_max_attach)", module->max_attached);
        return MPI_ERR_RMA_ATTACH;
    }
    a = &module->attached[module->nattached];
    a->base = base;
    a->size = size;
    a->mr = NULL;
    if (size > 0) {
        status = gpuic_mr_register(mca_osc_gpuic_component.ctx, base, size, &a->mr);
        if (status != GPUIC_OK) {
            opal_mutex_unlock(&module->lock);
            return MPI_ERR_RMA_ATTACH;
        }
    }
    module->nattached++;
    rc = ompi_osc_gpuic_table_publish(module);
    opal_mutex_unlock(&module->lock);
    return rc;
}

int ompi_osc_gpuic_win_detach(struct ompi_win_t *win, const void *base)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int i, rc;

    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return MPI_ERR_RMA_FLAVOR;
    }
    opal_mutex_lock(&module->lock);
    for (i = 0; i < module->nattached && module->attached[i].base != base; ++i) {
    }
    if (i == module->nattached) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_detach of %p, which is not attached", base);
        return MPI_ERR_ARG;
    }
    gpuic_mr_deregister(module->attached[i].mr);
    module->attached[i] = module->attached[--module->nattached];
    /* Unpublish before returning, so that no peer reads the region after the detach. */
    rc = ompi_osc_gpuic_table_publish(module);
    opal_mutex_unlock(&module->lock);
    return rc;
}

/* Reads the target's table sequence number. */
static int ompi_osc_gpuic_table_seq(ompi_osc_gpuic_module_t *module, int target, uint64_t *seq)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_status_t status;

    if (peer->win.direct != NULL) {
        *seq = __atomic_load_n(&((ompi_osc_gpuic_table_t *)peer->win.direct)->seq,
                               __ATOMIC_ACQUIRE);
        return OMPI_SUCCESS;
    }
    status = gpuic_rma_get(peer->ep, seq, sizeof(*seq), peer->win.base, peer->win.rkey);
    if (status == GPUIC_OK) {
        status = gpuic_ep_flush(peer->ep);
    }
    return ompi_osc_gpuic_error(status);
}

/* Moves the peer's cached regions to the retired list (their keys stay alive: another thread
 * may be using a region it found a moment ago).  Caller holds module->dyn_lock. */
static int ompi_osc_gpuic_peer_regions_retire(ompi_osc_gpuic_module_t *module,
                                              ompi_osc_gpuic_peer_t *peer)
{
    ompi_osc_gpuic_region_t **list;

    if (peer->dyn == NULL) {
        return OMPI_SUCCESS;
    }
    list = realloc(module->dyn_retired, sizeof(*list) * (module->ndyn_retired + 1));
    if (list == NULL) {
        return MPI_ERR_NO_MEM;
    }
    /* The array's end is marked by a region of size 0 and no key (see refresh). */
    list[module->ndyn_retired++] = peer->dyn;
    module->dyn_retired = list;
    peer->dyn = NULL;
    peer->ndyn = 0;
    peer->dyn_seq = 0;
    return OMPI_SUCCESS;
}

static void ompi_osc_gpuic_regions_free(ompi_osc_gpuic_region_t *regions)
{
    ompi_osc_gpuic_region_t *r;

    for (r = regions; r != NULL && r->rkey != NULL; ++r) {
        gpuic_rkey_destroy(r->rkey);
    }
    free(regions);
}

/* Copies a consistent snapshot of the target's table into @p copy and returns its sequence. */
static int ompi_osc_gpuic_table_read(ompi_osc_gpuic_module_t *module, int target,
                                     ompi_osc_gpuic_table_t *copy, uint64_t *seq_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t before, after, last = 0;
    gpuic_status_t status;
    unsigned moved;
    int rc;

    for (;;) {
        rc = ompi_osc_gpuic_table_seq(module, target, &before);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        /* A table that keeps changing is a live target, not a silent one. */
        moved = before != last;
        last = before;
        if (!(before & 1)) {
            if (peer->win.direct != NULL) {
                memcpy(copy, peer->win.direct, peer->win.size);
                opal_atomic_rmb();
            } else {
                status = gpuic_rma_get(peer->ep, copy, peer->win.size, peer->win.base,
                                       peer->win.rkey);
                if (status == GPUIC_OK) {
                    status = gpuic_ep_flush(peer->ep);
                }
                if (status != GPUIC_OK) {
                    return ompi_osc_gpuic_error(status);
                }
            }
            rc = ompi_osc_gpuic_table_seq(module, target, &after);
            if (rc != OMPI_SUCCESS) {
                return rc;
            }
            if (after == before) {
                *seq_p = before;
                return OMPI_SUCCESS;
            }
        }
        /* The target is rewriting its table (odd sequence), or rewrote it while we copied. */
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx) || moved);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR,
                      "region table of rank %d of window %d stayed mid-update for %.1f s "
                      "(osc_gpuic_timeout); giving up",
                      target, module->id, gpuic_context_timeout(ctx));
            return ompi_osc_gpuic_error(status);
        }
    }
}

/* Replaces the cached regions of @p target with its current table. */
static int ompi_osc_gpuic_regions_refresh(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    ompi_osc_gpuic_table_t *copy = malloc(peer->win.size);
    bool self = target == ompi_comm_rank(module->comm);
    uint64_t seq = 0, i;
    int rc;

    if (copy == NULL) {
        return MPI_ERR_NO_MEM;
    }
    rc = ompi_osc_gpuic_table_read(module, target, copy, &seq);
    if (rc != OMPI_SUCCESS) {
        free(copy);
        return rc;
    }
    rc = ompi_osc_gpuic_peer_regions_retire(module, peer);
    if (rc != OMPI_SUCCESS) {
        free(copy);
        return rc;
    }
    /* one spare zeroed entry terminates the array */
    peer->dyn = calloc(copy->count + 1, sizeof(*peer->dyn));
    if (peer->dyn == NULL) {
        free(copy);
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < copy->count && rc == OMPI_SUCCESS; ++i) {
        ompi_osc_gpuic_region_t *r = &peer->dyn[peer->ndyn];

        r->base = copy->entries[i].base;
        r->size = copy->entries[i].size;
        rc = ompi_osc_gpuic_error(gpuic_rkey_unpack(peer->ep, copy->entries[i].rkey, &r->rkey));
        if (rc == OMPI_SUCCESS) {
            if (self) {
                r->direct = (void *)(uintptr_t)r->base;
            } else if (!mca_osc_gpuic_component.direct ||
                       gpuic_rkey_ptr(r->rkey, r->base, &r->direct) != GPUIC_OK) {
                r->direct = NULL;
            }
            peer->ndyn++;
        }
    }
    peer->dyn_seq = rc == OMPI_SUCCESS ? seq : 0;
    free(copy);
    return rc;
}

static ompi_osc_gpuic_region_t *ompi_osc_gpuic_regions_find(ompi_osc_gpuic_peer_t *peer,
                                                           uint64_t lo, uint64_t hi)
{
    int i;

    for (i = 0; i < peer->ndyn; ++i) {
        ompi_osc_gpuic_region_t *r = &peer->dyn[i];

        if (lo >= r->base && hi <= r->base + r->size && lo <= hi) {
            return r;
        }
    }
    return NULL;
}

int ompi_osc_gpuic_dynamic_resolve(ompi_osc_gpuic_module_t *module, int target, uint64_t lo,
                                   uint64_t hi, ompi_osc_gpuic_region_t **region_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    uint64_t seq;
    int rc;

    opal_mutex_lock(&module->dyn_lock);
    rc = ompi_osc_gpuic_table_seq(module, target, &seq);
    if (rc == OMPI_SUCCESS && (seq != peer->dyn_seq || peer->dyn_seq == 0)) {
        rc = ompi_osc_gpuic_regions_refresh(module, target);
    }
    *region_p = rc == OMPI_SUCCESS ? ompi_osc_gpuic_regions_find(peer, lo, hi) : NULL;
    opal_mutex_unlock(&module->dyn_lock);
    if (rc == OMPI_SUCCESS && *region_p == NULL) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: [%#" PRIx64 ", %#" PRIx64 ") is not attached at "
                  "rank %d", ompi_osc_gpuic_rank(module), lo, hi, target);
        rc = MPI_ERR_RMA_RANGE;
    }
    return rc;
}

void ompi_osc_gpuic_dynamic_cleanup(ompi_osc_gpuic_module_t *module)
{
    int i, n = module->comm != NULL ? ompi_comm_size(module->comm) : 0;

    for (i = 0; module->peers != NULL && i < n; ++i) {
        ompi_osc_gpuic_regions_free(module->peers[i].dyn);
        module->peers[i].dyn = NULL;
    }
    for (i = 0; i < module->ndyn_retired; ++i) {
        ompi_osc_gpuic_regions_free(module->dyn_retired[i]);
    }
    free(module->dyn_retired);
    module->dyn_retired = NULL;
    module->ndyn_retired = 0;
    for (i = 0; module->attached != NULL && i < module->nattached; ++i) {
        gpuic_mr_deregister(module->attached[i].mr);
    }
    free(module->attached);
    module->attached = NULL;
    module->nattached = 0;
}
