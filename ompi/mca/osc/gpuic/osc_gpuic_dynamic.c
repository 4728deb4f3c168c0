/*
 * Dynamic windows: MPI_Win_attach / MPI_Win_detach and the lookup of a target's attached
 * regions.
 *
 * Each process publishes its attached regions in a region table of two parts, both in
 * UCX-allocated memory (so that same-node peers map them): a fixed header, which peers reach
 * as the window, and an entry array, one entry per attached region sorted by base, whose
 * address and key the header names.  The array grows by doubling: the owner copies it into a
 * new one and points the header at it; outgrown arrays stay until the window is freed, so that
 * a peer still reading one reads stale entries, never unmapped memory.  A sequence number in
 * the header guards both parts: the owner makes it odd, rewrites, and makes it even again.
 *
 * An origin keeps a copy of each target's regions, in the same order, with their unpacked keys
 * and tagged with the sequence number it was read at; before every access it compares that
 * tag with the target's current sequence number (one load through a mapping, else one 8-byte
 * get) and rereads the table when it changed, so an access to a region that was detached
 * finds no region and fails with MPI_ERR_RMA_RANGE.  Lookups are binary searches; keys of
 * regions that stay attached are carried over from copy to copy.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/runtime/mpiruntime.h"

#include "osc_gpuic.h"

/* Largest packed key a table entry or the header holds. */
#define OMPI_OSC_GPUIC_RKEY_MAX 512
/* Progress rounds in a row that find nothing before MPI_Win_detach returns. */
#define OMPI_OSC_GPUIC_DETACH_IDLE_ROUNDS 4
/* Slots of a window's first entry array. */
#define OMPI_OSC_GPUIC_TABLE_SLOTS0 64

/* An entry of the array: the fixed part, then the packed key.  Entries are
 * table.entry_size bytes apart, room for the longest key published so far. */
typedef struct ompi_osc_gpuic_table_entry {
    uint64_t base;
    uint64_t size;
    uint64_t id;       /* the attachment's number */
    uint32_t rkey_len;
    uint32_t reserved;
    uint8_t  rkey[];
} ompi_osc_gpuic_table_entry_t;

typedef struct ompi_osc_gpuic_table {
    uint64_t seq;        /* odd while the owner rewrites the table */
    uint64_t count;      /* entries: the regions attached with size > 0, sorted by base */
    uint64_t array_addr; /* the entry array */
    uint64_t array_gen;  /* changes with every new array (never 0 once there is one) */
    uint32_t array_key_len;
    uint32_t entry_size; /* bytes from one entry of the array to the next */
    uint8_t  array_key[OMPI_OSC_GPUIC_RKEY_MAX];
} ompi_osc_gpuic_table_t;

size_t ompi_osc_gpuic_dynamic_table_size(int max_attached)
{
    (void)max_attached;
    return sizeof(ompi_osc_gpuic_table_t);
}

int ompi_osc_gpuic_dynamic_setup(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx)
{
    gpuic_status_t status;

    status = gpuic_mr_allocate(ctx, sizeof(ompi_osc_gpuic_table_t), &module->mr);
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    module->base = gpuic_mr_address(module->mr);
    module->size = sizeof(ompi_osc_gpuic_table_t);
    memset(module->base, 0, module->size);
    return OMPI_SUCCESS;
}

/* Entry @p k of an array whose entries are @p entry_size bytes apart. */
static ompi_osc_gpuic_table_entry_t *ompi_osc_gpuic_table_entry(void *array, uint64_t k,
                                                               size_t entry_size)
{
    return (ompi_osc_gpuic_table_entry_t *)((char *)array + k * entry_size);
}

/* Opens (odd) and closes (even) a rewrite of the published table. */
static void ompi_osc_gpuic_table_seq_bump(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_table_t *table = module->base;

    __atomic_fetch_add(&table->seq, 1, __ATOMIC_ACQ_REL);
    opal_atomic_wmb();
}

/* Makes room for one more entry whose key is @p key_len bytes: a new array of twice the
 * entries when it is full, or of wider entries when the key does not fit.  Caller holds
 * module->lock, the table open for rewrite. */
static int ompi_osc_gpuic_table_grow(ompi_osc_gpuic_module_t *module, size_t key_len)
{
    ompi_osc_gpuic_table_t *table = module->base;
    bool full = table->count == module->dyn_array_cap;
    uint32_t cap = full ? (module->dyn_array_cap ? module->dyn_array_cap * 2
                                                 : OMPI_OSC_GPUIC_TABLE_SLOTS0)
                        : module->dyn_array_cap;
    size_t need = (offsetof(ompi_osc_gpuic_table_entry_t, rkey) + key_len + 7) / 8 * 8;
    size_t stride = table->entry_size > need ? table->entry_size : need;
    gpuic_mr_t *mr, **old;
    gpuic_status_t status;
    uint64_t k;
    void *blob;
    size_t len;

    if (!full && stride == table->entry_size) {
        return OMPI_SUCCESS;
    }
    if (cap >= UINT32_MAX / 2) {
        return MPI_ERR_RMA_ATTACH;
    }
    old = realloc(module->dyn_array_old, sizeof(*old) * (module->ndyn_array_old + 1));
    if (old == NULL) {
        return MPI_ERR_NO_MEM;
    }
    module->dyn_array_old = old;
    status = gpuic_mr_allocate(mca_osc_gpuic_component.ctx, (size_t)cap * stride, &mr);
    if (status != GPUIC_OK) {
        return status == GPUIC_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_RMA_ATTACH;
    }
    status = gpuic_mr_pack(mr, &blob, &len);
    if (status != GPUIC_OK || len > OMPI_OSC_GPUIC_RKEY_MAX) {
        if (status == GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "packed key of %zu bytes exceeds the table's %d", len,
                      OMPI_OSC_GPUIC_RKEY_MAX);
            gpuic_mr_blob_release(blob);
        }
        gpuic_mr_deregister(mr);
        return MPI_ERR_RMA_ATTACH;
    }
    memset(gpuic_mr_address(mr), 0, (size_t)cap * stride);
    if (module->dyn_array_mr != NULL) {
        for (k = 0; k < table->count; ++k) {
            memcpy(ompi_osc_gpuic_table_entry(gpuic_mr_address(mr), k, stride),
                   ompi_osc_gpuic_table_entry(gpuic_mr_address(module->dyn_array_mr), k,
                                              table->entry_size),
                   table->entry_size);
        }
        module->dyn_array_old[module->ndyn_array_old++] = module->dyn_array_mr;
    }
    module->dyn_array_mr = mr;
    module->dyn_array_cap = cap;
    table->entry_size = (uint32_t)stride;
    gpuic_log(GPUIC_LOG_DEBUG, "window %d: region table array of %u entries of %zu bytes",
              module->id, cap, stride);
    table->array_addr = (uint64_t)(uintptr_t)gpuic_mr_address(mr);
    table->array_gen++;
    table->array_key_len = (uint32_t)len;
    memcpy(table->array_key, blob, len);
    gpuic_mr_blob_release(blob);
    return OMPI_SUCCESS;
}

/* Index of the first attached region whose base is >= @p addr. */
static int ompi_osc_gpuic_attached_lower(const ompi_osc_gpuic_module_t *module, uintptr_t addr)
{
    int lo = 0, hi = module->nattached;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if ((uintptr_t)module->attached[mid].base < addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* True when [lo, hi) overlaps an attached region of nonzero size (the neighbours of the
 * insertion point @p at are the only candidates: attached regions never overlap). */
static bool ompi_osc_gpuic_attached_overlaps(const ompi_osc_gpuic_module_t *module, int at,
                                             uintptr_t lo, uintptr_t hi)
{
    int i;

    for (i = at - 1; i >= 0; --i) {
        const ompi_osc_gpuic_attached_t *a = &module->attached[i];

        if (a->size > 0) {
            if ((uintptr_t)a->base + a->size > lo) {
                return true;
            }
            break;
        }
    }
    for (i = at; i < module->nattached; ++i) {
        const ompi_osc_gpuic_attached_t *a = &module->attached[i];

        if ((uintptr_t)a->base >= hi) {
            break;
        }
        if (a->size > 0) {
            return true;
        }
    }
    return false;
}

/* Index of the first published entry whose base is >= @p addr. */
static uint64_t ompi_osc_gpuic_table_lower(ompi_osc_gpuic_module_t *module, uint64_t addr)
{
    ompi_osc_gpuic_table_t *table = module->base;
    void *array = gpuic_mr_address(module->dyn_array_mr);
    uint64_t lo = 0, hi = table->count;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (ompi_osc_gpuic_table_entry(array, mid, table->entry_size)->base < addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Publishes attached region @p a at its place in base order.  Caller holds module->lock. */
static int ompi_osc_gpuic_table_insert(ompi_osc_gpuic_module_t *module,
                                       const ompi_osc_gpuic_attached_t *a)
{
    ompi_osc_gpuic_table_t *table = module->base;
    ompi_osc_gpuic_table_entry_t *e;
    uint64_t at;
    char *array;
    void *blob;
    size_t len;
    int rc;

    if (gpuic_mr_pack(a->mr, &blob, &len) != GPUIC_OK) {
        return MPI_ERR_RMA_ATTACH;
    }
    if (len > OMPI_OSC_GPUIC_RKEY_MAX) {
        gpuic_log(GPUIC_LOG_ERROR, "packed key of %zu bytes exceeds the table's %d", len,
                  OMPI_OSC_GPUIC_RKEY_MAX);
        gpuic_mr_blob_release(blob);
        return MPI_ERR_RMA_ATTACH;
    }
    ompi_osc_gpuic_table_seq_bump(module); /* odd: being rewritten */
    rc = ompi_osc_gpuic_table_grow(module, len);
    if (rc == OMPI_SUCCESS) {
        array = gpuic_mr_address(module->dyn_array_mr);
        at = ompi_osc_gpuic_table_lower(module, (uint64_t)(uintptr_t)a->base);
        e = ompi_osc_gpuic_table_entry(array, at, table->entry_size);
        memmove((char *)e + table->entry_size, e, (table->count - at) * table->entry_size);
        e->base = (uint64_t)(uintptr_t)a->base;
        e->size = a->size;
        e->id = a->id;
        e->rkey_len = (uint32_t)len;
        memcpy(e->rkey, blob, len);
        table->count++;
    }
    ompi_osc_gpuic_table_seq_bump(module); /* even: stable */
    gpuic_mr_blob_release(blob);
    return rc;
}

/* Removes the published entry of attached region @p a.  Caller holds module->lock. */
static void ompi_osc_gpuic_table_remove(ompi_osc_gpuic_module_t *module,
                                        const ompi_osc_gpuic_attached_t *a)
{
    ompi_osc_gpuic_table_t *table = module->base;
    uint64_t at = ompi_osc_gpuic_table_lower(module, (uint64_t)(uintptr_t)a->base);
    char *e = (char *)ompi_osc_gpuic_table_entry(gpuic_mr_address(module->dyn_array_mr), at,
                                                 table->entry_size);

    if (at == table->count ||
        ((ompi_osc_gpuic_table_entry_t *)e)->base != (uint64_t)(uintptr_t)a->base) {
        gpuic_log(GPUIC_LOG_ERROR, "region %p is missing from the published table", a->base);
        return;
    }
    ompi_osc_gpuic_table_seq_bump(module);
    memmove(e, e + table->entry_size, (table->count - at - 1) * table->entry_size);
    table->count--;
    ompi_osc_gpuic_table_seq_bump(module);
}

int ompi_osc_gpuic_win_attach(struct ompi_win_t *win, void *base, size_t size)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    ompi_osc_gpuic_attached_t a = {base, size, NULL, 0};
    uintptr_t lo = (uintptr_t)base, hi;
    int at, rc = OMPI_SUCCESS, limit = mca_osc_gpuic_component.max_attach;
    gpuic_status_t status;

    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return MPI_ERR_RMA_FLAVOR;
    }
    if (__builtin_add_overflow(lo, size, &hi)) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_attach of %p+%zu wraps around the address space",
                  base, size);
        return MPI_ERR_RMA_ATTACH;
    }
    opal_mutex_lock(&module->lock);
    at = ompi_osc_gpuic_attached_lower(module, lo);
    if (size > 0 && ompi_osc_gpuic_attached_overlaps(module, at, lo, hi)) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_attach of %p+%zu overlaps an attached region",
                  base, size);
        return MPI_ERR_RMA_ATTACH;
    }
    if (limit > 0 && module->nattached >= limit) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_attach: %d regions attached already "
                  "(osc_gpuic_max_attach; 0 means no limit)", module->nattached);
        return MPI_ERR_RMA_ATTACH;
    }
    if (module->nattached == module->max_attached) {
        int cap = module->max_attached ? module->max_attached * 2 : 16;
        ompi_osc_gpuic_attached_t *grown;

        grown = cap > 0 ? realloc(module->attached, sizeof(*grown) * (size_t)cap) : NULL;
        if (grown == NULL) {
            opal_mutex_unlock(&module->lock);
            return MPI_ERR_NO_MEM;
        }
        module->attached = grown;
        module->max_attached = cap;
    }
    if (size > 0) {
        status = gpuic_mr_register(mca_osc_gpuic_component.ctx, base, size, &a.mr);
        if (status != GPUIC_OK) {
            opal_mutex_unlock(&module->lock);
            return MPI_ERR_RMA_ATTACH;
        }
        a.id = ++module->dyn_serial;
        rc = ompi_osc_gpuic_table_insert(module, &a);
        if (rc != OMPI_SUCCESS) {
            gpuic_mr_deregister(a.mr);
            opal_mutex_unlock(&module->lock);
            return rc;
        }
    }
    memmove(&module->attached[at + 1], &module->attached[at],
            sizeof(a) * (size_t)(module->nattached - at));
    module->attached[at] = a;
    module->nattached++;
    opal_mutex_unlock(&module->lock);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_win_detach(struct ompi_win_t *win, const void *base)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    ompi_osc_gpuic_attached_t a;
    int i, idle;

    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return MPI_ERR_RMA_FLAVOR;
    }
    opal_mutex_lock(&module->lock);
    i = ompi_osc_gpuic_attached_lower(module, (uintptr_t)base);
    if (i == module->nattached || module->attached[i].base != base) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_detach of %p, which is not attached", base);
        return MPI_ERR_ARG;
    }
    /* Of a zero-size and a sized region at the same base, the sized one goes first. */
    if (module->attached[i].size == 0 && i + 1 < module->nattached &&
        module->attached[i + 1].base == base) {
        ++i;
    }
    a = module->attached[i];
    memmove(&module->attached[i], &module->attached[i + 1],
            sizeof(a) * (size_t)(module->nattached - i - 1));
    module->nattached--;
    if (a.mr != NULL) {
        /* Unpublish before returning, so that no peer starts an access after the detach. */
        ompi_osc_gpuic_table_remove(module, &a);
    }
    opal_mutex_unlock(&module->lock);
    if (a.mr != NULL) {
        /* Accesses to the region that reached this process before the table changed are
         * applied now, not at some later progress call (see README: what detach promises):
         * progress until several rounds in a row find nothing. */
        for (idle = 0; idle < OMPI_OSC_GPUIC_DETACH_IDLE_ROUNDS; ) {
            idle = gpuic_context_progress(ctx) != 0 ? 0 : idle + 1;
        }
        gpuic_mr_deregister(a.mr);
    }
    return OMPI_SUCCESS;
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

/* Frees a cached region array and the keys it still owns (size 0 ends it). */
static void ompi_osc_gpuic_regions_free(ompi_osc_gpuic_region_t *regions)
{
    ompi_osc_gpuic_region_t *r;

    for (r = regions; r != NULL && r->size > 0; ++r) {
        gpuic_rkey_destroy(r->rkey);
    }
    free(regions);
}

/* Copies @p len bytes at @p raddr of the target: through @p direct when mapped, else a get. */
static int ompi_osc_gpuic_table_copy(ompi_osc_gpuic_peer_t *peer, void *dst, size_t len,
                                     const void *direct, uint64_t raddr, gpuic_rkey_t *rkey)
{
    gpuic_status_t status;

    if (len == 0) {
        return OMPI_SUCCESS;
    }
    if (direct != NULL) {
        memcpy(dst, direct, len);
        opal_atomic_rmb();
        return OMPI_SUCCESS;
    }
    status = gpuic_rma_get(peer->ep, dst, len, raddr, rkey);
    if (status == GPUIC_OK) {
        status = gpuic_ep_flush(peer->ep);
    }
    return ompi_osc_gpuic_error(status);
}

/* Unpacks the key of the entry array @p hdr names (a header read at a stable sequence). */
static int ompi_osc_gpuic_table_array_open(ompi_osc_gpuic_peer_t *peer,
                                           const ompi_osc_gpuic_table_t *hdr)
{
    gpuic_rkey_t *rkey;
    void *ptr = NULL;
    int rc;

    if (hdr->array_gen == peer->dyn_array_gen || hdr->array_gen == 0) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_error(gpuic_rkey_unpack(peer->ep, hdr->array_key, &rkey));
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (peer->win.direct == NULL || gpuic_rkey_ptr(rkey, hdr->array_addr, &ptr) != GPUIC_OK) {
        ptr = NULL;
    }
    gpuic_rkey_destroy(peer->dyn_array_rkey);
    peer->dyn_array_rkey = rkey;
    peer->dyn_array_direct = ptr;
    peer->dyn_array_gen = hdr->array_gen;
    return OMPI_SUCCESS;
}

/* Copies a consistent snapshot of the target's table: its header into @p hdr and its entries
 * into *entries_p (malloc'd, hdr->count entries of hdr->entry_size bytes); hdr->seq is the
 * sequence it was read at. */
static int ompi_osc_gpuic_table_read(ompi_osc_gpuic_module_t *module, int target,
                                     ompi_osc_gpuic_table_t *hdr, void **entries_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    void *entries = NULL;
    uint64_t before, after, last = 0;
    gpuic_status_t status;
    unsigned moved;
    size_t len;
    int rc;

    for (;;) {
        rc = ompi_osc_gpuic_table_seq(module, target, &before);
        if (rc == OMPI_SUCCESS && !(before & 1)) {
            rc = ompi_osc_gpuic_table_copy(peer, hdr, sizeof(*hdr), peer->win.direct,
                                           peer->win.base, peer->win.rkey);
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_table_seq(module, target, &after);
            }
            if (rc == OMPI_SUCCESS && after == before) {
                /* the header is consistent: its array key may be unpacked */
                rc = ompi_osc_gpuic_table_array_open(peer, hdr);
                len = (size_t)hdr->count * hdr->entry_size;
                if (rc == OMPI_SUCCESS && hdr->count > 0) {
                    free(entries);
                    entries = malloc(len);
                    rc = entries == NULL ? MPI_ERR_NO_MEM
                                         : ompi_osc_gpuic_table_copy(peer, entries, len,
                                                                     peer->dyn_array_direct,
                                                                     hdr->array_addr,
                                                                     peer->dyn_array_rkey);
                }
                if (rc == OMPI_SUCCESS) {
                    rc = ompi_osc_gpuic_table_seq(module, target, &after);
                }
                if (rc == OMPI_SUCCESS && after == before) {
                    hdr->seq = before;
                    *entries_p = entries;
                    return OMPI_SUCCESS;
                }
            }
        }
        if (rc != OMPI_SUCCESS) {
            free(entries);
            return rc;
        }
        /* A table that keeps changing is a live target, not a silent one. */
        moved = before != last;
        last = before;
        /* The target is rewriting its table (odd sequence), or rewrote it while we copied. */
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx) || moved);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR,
                      "region table of rank %d of window %d stayed mid-update for %.1f s "
                      "(osc_gpuic_timeout); giving up",
                      target, module->id, gpuic_context_timeout(ctx));
            free(entries);
            return ompi_osc_gpuic_error(status);
        }
    }
}

static int ompi_osc_gpuic_region_cmp(const void *a, const void *b)
{
    const ompi_osc_gpuic_region_t *ra = a, *rb = b;

    return ra->base < rb->base ? -1 : ra->base > rb->base;
}

/* Index of the last of the @p n regions whose base is <= @p addr, or -1. */
static int ompi_osc_gpuic_regions_floor(const ompi_osc_gpuic_region_t *r, int n, uint64_t addr)
{
    int lo = 0, hi = n;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (r[mid].base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo - 1;
}

/* Whether no operation can still use a key of @p target's regions that left the cache: without
 * MPI_THREAD_MULTIPLE no other call holds a region, and every UCX operation issued to the
 * target is covered by a completed flush and complete locally. */
static bool ompi_osc_gpuic_dyn_keys_idle(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];

    return !ompi_mpi_thread_multiple &&
           __atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE) ==
               __atomic_load_n(&peer->ucx_flushed, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&peer->lcc.outstanding, __ATOMIC_ACQUIRE) == 0;
}

/* Destroys the keys of @p peer's regions that left the cache earlier. */
static void ompi_osc_gpuic_dyn_dead_free(ompi_osc_gpuic_peer_t *peer)
{
    size_t k;

    for (k = 0; k < peer->ndyn_dead; ++k) {
        gpuic_rkey_destroy(peer->dyn_dead[k]);
    }
    peer->ndyn_dead = 0;
}

/* Room in *@p array (*@p cap elements of @p elem_size) for element @p n: the capacity doubles,
 * since the lists kept here grow by one element at a time to tens of thousands. */
static int ompi_osc_gpuic_list_reserve(void **array, size_t *cap, size_t n, size_t elem_size)
{
    size_t grown = *cap ? *cap * 2 : 16;
    void *bigger;

    if (n < *cap) {
        return OMPI_SUCCESS;
    }
    bigger = realloc(*array, grown * elem_size);
    if (bigger == NULL) {
        return MPI_ERR_NO_MEM;
    }
    *array = bigger;
    *cap = grown;
    return OMPI_SUCCESS;
}

/* Keeps a key of a region that left the cache until nothing can use it (another thread may
 * hold the region it found a moment ago, an operation in flight may name it). */
static int ompi_osc_gpuic_rkey_bury(ompi_osc_gpuic_peer_t *peer, gpuic_rkey_t *rkey)
{
    int rc = ompi_osc_gpuic_list_reserve((void **)&peer->dyn_dead, &peer->dyn_dead_cap,
                                         peer->ndyn_dead, sizeof(*peer->dyn_dead));

    if (rc == OMPI_SUCCESS) {
        peer->dyn_dead[peer->ndyn_dead++] = rkey;
    }
    return rc;
}

/* Replaces the cached regions of @p target with its current table. */
static int ompi_osc_gpuic_regions_refresh(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    void *entries = NULL;
    ompi_osc_gpuic_region_t *old = peer->dyn, *dyn;
    bool self = target == ompi_comm_rank(module->comm);
    bool idle = ompi_osc_gpuic_dyn_keys_idle(module, target);
    ompi_osc_gpuic_table_t hdr;
    int i, j, n = 0, nold = peer->ndyn, rc;
    bool sorted = true;
    uint64_t k;

    rc = ompi_osc_gpuic_table_read(module, target, &hdr, &entries);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* one spare zeroed entry (size 0) terminates the array */
    dyn = calloc(hdr.count + 1, sizeof(*dyn));
    if (dyn == NULL ||
        ompi_osc_gpuic_list_reserve((void **)&module->dyn_retired, &module->dyn_retired_cap,
                                    module->ndyn_retired, sizeof(*module->dyn_retired)) !=
            OMPI_SUCCESS) {
        free(dyn);
        free(entries);
        return MPI_ERR_NO_MEM;
    }
    for (k = 0; k < hdr.count; ++k) {
        ompi_osc_gpuic_table_entry_t *e = ompi_osc_gpuic_table_entry(entries, k,
                                                                     hdr.entry_size);

        dyn[n].base = e->base;
        dyn[n].size = e->size;
        dyn[n].id = e->id;
        dyn[n].rkey = (gpuic_rkey_t *)e; /* the packed key, until unpacked */
        sorted = sorted && (n == 0 || dyn[n - 1].base < e->base);
        n++;
    }
    /* The owner publishes its entries sorted by base: sorting here is a safeguard only. */
    if (!sorted) {
        qsort(dyn, n, sizeof(*dyn), ompi_osc_gpuic_region_cmp);
    }
    /* Both copies are sorted by base: one walk pairs each region with its old self. */
    for (i = 0, j = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        ompi_osc_gpuic_region_t *r = &dyn[i];
        const ompi_osc_gpuic_table_entry_t *e = (const void *)r->rkey;

        while (j < nold && old[j].base < r->base) {
            ++j;
        }
        if (j < nold && old[j].base == r->base && old[j].id == r->id && old[j].rkey != NULL) {
            /* the same attachment: its key and mapping move to the new copy */
            r->rkey = old[j].rkey;
            r->direct = old[j].direct;
            old[j].rkey = NULL;
            continue;
        }
        r->rkey = NULL;
        rc = ompi_osc_gpuic_error(gpuic_rkey_unpack(peer->ep, e->rkey, &r->rkey));
        if (rc != OMPI_SUCCESS) {
            r->rkey = NULL;
        } else if (self) {
            r->direct = (void *)(uintptr_t)r->base;
        } else if (!mca_osc_gpuic_component.direct ||
                   !ompi_osc_gpuic_peer_on_node(module, target) ||
                   gpuic_rkey_ptr(r->rkey, r->base, &r->direct) != GPUIC_OK) {
            r->direct = NULL;
        }
    }
    for (; i < n; ++i) {
        dyn[i].rkey = NULL; /* not unpacked after an error */
    }
    free(entries);
    /* Runs of adjacent regions, from the end: an access may span a run. */
    for (i = n - 2; i >= 0; --i) {
        dyn[i].run = dyn[i].base + dyn[i].size == dyn[i + 1].base ? dyn[i + 1].run + 1 : 0;
    }
    /* Keys of regions that left: destroyed with the old copy where nothing can use them any
     * more (and those buried earlier with them), else buried. */
    if (idle) {
        ompi_osc_gpuic_dyn_dead_free(peer);
    }
    for (j = 0; !idle && j < nold; ++j) {
        if (old[j].rkey != NULL && ompi_osc_gpuic_rkey_bury(peer, old[j].rkey) == OMPI_SUCCESS) {
            old[j].rkey = NULL;
        }
    }
    /* Without MPI_THREAD_MULTIPLE no other call can hold a region of the old copy (a key that
     * could not be buried goes with it: the process is out of memory). */
    if (old != NULL && !ompi_mpi_thread_multiple) {
        ompi_osc_gpuic_regions_free(old);
    } else if (old != NULL) {
        module->dyn_retired[module->ndyn_retired++] = old;
    }
    peer->dyn = dyn;
    peer->ndyn = n;
    peer->dyn_seq = rc == OMPI_SUCCESS ? hdr.seq : 0;
    return rc;
}

size_t ompi_osc_gpuic_region_piece(ompi_osc_gpuic_region_t *region, uint64_t raddr, size_t len,
                                   ompi_osc_gpuic_region_t **piece_p)
{
    ompi_osc_gpuic_region_t *r = region;
    uint64_t left;
    int i;

    if (raddr < region->base) {
        return 0;
    }
    if (raddr - region->base >= region->size) {
        i = ompi_osc_gpuic_regions_floor(region, (int)region->run + 1, raddr);
        r = &region[i];
        if (raddr - r->base >= r->size) {
            return 0;
        }
    }
    *piece_p = r;
    left = r->size - (raddr - r->base);
    return len < left ? len : (size_t)left;
}

/* The region holding [lo, hi) (hi > lo), alone or followed by adjacent ones, or NULL. */
static ompi_osc_gpuic_region_t *ompi_osc_gpuic_regions_find(ompi_osc_gpuic_peer_t *peer,
                                                           uint64_t lo, uint64_t hi)
{
    int i = ompi_osc_gpuic_regions_floor(peer->dyn, peer->ndyn, lo);
    ompi_osc_gpuic_region_t *r, *last;

    if (i < 0 || hi < lo) {
        return NULL;
    }
    r = &peer->dyn[i];
    last = &peer->dyn[i + r->run];
    if (r->rkey == NULL || lo - r->base >= r->size || hi > last->base + last->size) {
        return NULL;
    }
    for (; last > r; --last) {
        if (last->rkey == NULL) {
            return NULL; /* a key that failed to unpack */
        }
    }
    return r;
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
    if (rc == OMPI_SUCCESS && *region_p == NULL) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: [%#" PRIx64 ", %#" PRIx64 ") is not attached at "
                  "rank %d (%d regions in its table at sequence %" PRIu64 ")",
                  ompi_osc_gpuic_rank(module), lo, hi, target, peer->ndyn, peer->dyn_seq);
        rc = MPI_ERR_RMA_RANGE;
    }
    opal_mutex_unlock(&module->dyn_lock);
    return rc;
}

void ompi_osc_gpuic_dynamic_cleanup(ompi_osc_gpuic_module_t *module)
{
    int i, n = module->comm != NULL ? ompi_comm_size(module->comm) : 0;
    size_t k;

    for (i = 0; module->peers != NULL && i < n; ++i) {
        ompi_osc_gpuic_regions_free(module->peers[i].dyn);
        module->peers[i].dyn = NULL;
        ompi_osc_gpuic_dyn_dead_free(&module->peers[i]);
        free(module->peers[i].dyn_dead);
        module->peers[i].dyn_dead = NULL;
        module->peers[i].dyn_dead_cap = 0;
        gpuic_rkey_destroy(module->peers[i].dyn_array_rkey);
        module->peers[i].dyn_array_rkey = NULL;
    }
    for (k = 0; k < module->ndyn_retired; ++k) {
        ompi_osc_gpuic_regions_free(module->dyn_retired[k]);
    }
    free(module->dyn_retired);
    module->dyn_retired = NULL;
    module->ndyn_retired = 0;
    module->dyn_retired_cap = 0;
    for (i = 0; module->attached != NULL && i < module->nattached; ++i) {
        gpuic_mr_deregister(module->attached[i].mr);
    }
    free(module->attached);
    module->attached = NULL;
    module->nattached = 0;
    for (i = 0; i < module->ndyn_array_old; ++i) {
        gpuic_mr_deregister(module->dyn_array_old[i]);
    }
    free(module->dyn_array_old);
    module->dyn_array_old = NULL;
    module->ndyn_array_old = 0;
    gpuic_mr_deregister(module->dyn_array_mr);
    module->dyn_array_mr = NULL;
}
