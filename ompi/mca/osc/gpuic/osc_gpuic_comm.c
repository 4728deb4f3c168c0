/*
 * Put, get, rput and rget: epoch and range checks, then contiguous transfers straight to
 * libgpuic (or direct copies through a same-node mapping), or a walk over the origin and
 * target datatype layouts that issues one transfer per overlapping block.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_gpuic.h"

int ompi_osc_gpuic_begin_op(ompi_osc_gpuic_module_t *module, int target)
{
    int rc = ompi_osc_gpuic_check_access(module, target);

    if (rc == OMPI_SUCCESS) {
        module->ops_since_fence++; /* a fence epoch with operations is an epoch */
    }
    return rc;
}

int ompi_osc_gpuic_check_access(ompi_osc_gpuic_module_t *module, int target)
{
    switch (module->epoch) {
    case OMPI_OSC_GPUIC_EPOCH_FENCE:
    case OMPI_OSC_GPUIC_EPOCH_LOCK_ALL:
        return OMPI_SUCCESS;
    case OMPI_OSC_GPUIC_EPOCH_LOCK:
        if (module->peers[target].lock_type != 0) {
            return OMPI_SUCCESS;
        }
        break;
    case OMPI_OSC_GPUIC_EPOCH_START:
        if (module->start_member[target]) {
            return OMPI_SUCCESS;
        }
        break;
    case OMPI_OSC_GPUIC_EPOCH_NONE:
        break;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "rank %d: RMA call to target %d outside an access epoch",
              ompi_osc_gpuic_rank(module), target);
    return MPI_ERR_RMA_SYNC;
}

/* Pieces of a layout gathered for one cross-memory call (osc_gpuic_comm.c's walks). */
#define OMPI_OSC_GPUIC_CMA_BATCH 256

typedef struct ompi_osc_gpuic_cma_batch {
    ompi_osc_gpuic_region_t *region; /* the region of every piece in it */
    int                     pid;     /* the peer's, when the first piece was gathered */
    size_t                  n;
    struct iovec            local[OMPI_OSC_GPUIC_CMA_BATCH];
    struct iovec            remote[OMPI_OSC_GPUIC_CMA_BATCH];
} ompi_osc_gpuic_cma_batch_t;

typedef struct ompi_osc_gpuic_xfer_arg {
    ompi_osc_gpuic_module_t *module;
    int                     target;
    ompi_osc_gpuic_region_t *region;
    bool                    is_put;
    bool                    local_dev; /* the origin buffer is device memory */
    bool                    used_cma;  /* set when a piece went by cross-memory copy */
    /* A layout's walk: pieces that go by cross-memory copy are gathered here, whatever their
     * size, and moved by one system call per batch (NULL: each piece on its own). */
    ompi_osc_gpuic_cma_batch_t *batch;
    /* Small cross-memory pieces may wait for the next completion point (osc_gpuic_cma.c):
     * false for request-based calls, whose request completes on return. */
    bool                    gather;
} ompi_osc_gpuic_xfer_arg_t;

/* A word only this process holds (its value is unlikely to sit at the same address in
 * another), published with the process id for peers to probe. */
static uint64_t ompi_osc_gpuic_cma_token;

void ompi_osc_gpuic_cma_publish(uint32_t *pid_p, uint64_t *token_addr_p, uint64_t *token_p)
{
    uint64_t token = __atomic_load_n(&ompi_osc_gpuic_cma_token, __ATOMIC_ACQUIRE), none = 0;

    if (token == 0) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        token = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                (uint64_t)(uintptr_t)&ts;
        token |= 1; /* never 0 */
        if (!__atomic_compare_exchange_n(&ompi_osc_gpuic_cma_token, &none, token, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            token = none; /* another thread published first */
        }
    }
    *pid_p = (uint32_t)getpid();
    *token_addr_p = (uint64_t)(uintptr_t)&ompi_osc_gpuic_cma_token;
    *token_p = token;
}

void ompi_osc_gpuic_cma_peer_setup(ompi_osc_gpuic_module_t *module, int rank, uint32_t pid,
                                   uint64_t token_addr, uint64_t token)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[rank];
    uint64_t seen = 0;

    peer->cma_pid = 0;
    if (!mca_osc_gpuic_component.direct || pid == 0 || token == 0 ||
        !ompi_osc_gpuic_peer_on_node(module, rank) ||
        (module->flavor != MPI_WIN_FLAVOR_CREATE && module->flavor != MPI_WIN_FLAVOR_ALLOCATE) ||
        peer->win.direct != NULL || peer->win.gpu || peer->win.size == 0) {
        return;
    }
    /* The probe also tells whether the system lets this process reach the peer at all. */
    if (gpuic_cma_copy((int)pid, &seen, token_addr, sizeof(seen), 0) == GPUIC_OK &&
        seen == token) {
        peer->cma_pid = (int)pid;
    } else {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d: no cross-memory copies to rank %d; "
                  "UCX carries put and get", ompi_osc_gpuic_rank(module), module->id, rank);
    }
}

/* A copy between a host buffer and device memory on the window's stream, complete on return. */
static int ompi_osc_gpuic_gpu_copy_wait(ompi_osc_gpuic_module_t *module, void *dst,
                                        const void *src, size_t len)
{
    int rc = ompi_osc_gpuic_gpu_copy(module, dst, src, len);

    return rc == OMPI_SUCCESS ? ompi_osc_gpuic_gpu_drain(module) : rc;
}

/* A UCX transfer whose local side is device memory: UCX here may not read device memory, so
 * the piece goes through a host buffer, completed locally before returning. */
static int ompi_osc_gpuic_xfer_bounced(ompi_osc_gpuic_xfer_arg_t *x,
                                       ompi_osc_gpuic_region_t *region, char *local, size_t len,
                                       uint64_t raddr)
{
    ompi_osc_gpuic_peer_t *peer = &x->module->peers[x->target];
    char *tmp = malloc(len);
    gpuic_status_t status = GPUIC_OK;
    int rc;

    if (tmp == NULL) {
        return MPI_ERR_NO_MEM;
    }
    rc = x->is_put ? ompi_osc_gpuic_gpu_copy_wait(x->module, tmp, local, len) : OMPI_SUCCESS;
    if (rc == OMPI_SUCCESS) {
        status = x->is_put
                     ? gpuic_rma_put_lcc(peer->ep, tmp, len, raddr, region->rkey, &peer->lcc)
                     : gpuic_rma_get_lcc(peer->ep, tmp, len, raddr, region->rkey, &peer->lcc);
        if (status == GPUIC_OK) {
            status = gpuic_lcc_wait(mca_osc_gpuic_component.ctx, &peer->lcc);
        }
        rc = ompi_osc_gpuic_error(status);
    }
    if (rc == OMPI_SUCCESS && !x->is_put) {
        rc = ompi_osc_gpuic_gpu_copy_wait(x->module, local, tmp, len);
    }
    free(tmp);
    return rc;
}

/* A full memory barrier: this process's stores are globally visible before its later loads.
 * On x86-64 a locked instruction on the stack is one for ordinary (write-back) memory, at about
 * half mfence's cost; direct copies go only to such memory (device memory is copied by the
 * driver), and the C library fences its own non-temporal stores. */
static inline void ompi_osc_gpuic_full_barrier(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("lock; addl $0, -4(%%rsp)" ::: "memory", "cc");
#else
    opal_atomic_mb();
#endif
}

/* Pieces below osc_gpuic_cma_min_bytes a peer takes by cross-memory copy at once between two
 * flushes: a lone small put or get costs one system call instead of a UCX round trip through
 * the target's progress; the rest of a longer run is gathered and moved with one system call
 * at the completion point (osc_gpuic_cma.c; request-based calls, which cannot wait, go
 * through UCX). */
#define OMPI_OSC_GPUIC_CMA_SMALL_RUN 4

/* Whether a piece of @p len bytes to @p peer (which takes cross-memory copies) goes by copy;
 * counts the small ones. */
static inline bool ompi_osc_gpuic_cma_takes(ompi_osc_gpuic_module_t *module,
                                            ompi_osc_gpuic_peer_t *peer, size_t len)
{
    if (len >= (size_t)mca_osc_gpuic_component.cma_min_bytes) {
        return true;
    }
    /* not while UCX operations to the peer are pending: they would need a flush first */
    if (__atomic_load_n(&peer->cma_small, __ATOMIC_RELAXED) >= OMPI_OSC_GPUIC_CMA_SMALL_RUN ||
        __atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE) !=
            __atomic_load_n(&peer->ucx_flushed, __ATOMIC_ACQUIRE)) {
        return false;
    }
    __atomic_fetch_add(&peer->cma_small, 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&module->cma_small_any, __ATOMIC_RELAXED)) {
        __atomic_store_n(&module->cma_small_any, true, __ATOMIC_RELAXED);
    }
    return true;
}

static int ompi_osc_gpuic_cma_batch_add(ompi_osc_gpuic_xfer_arg_t *x,
                                        ompi_osc_gpuic_region_t *region, char *local,
                                        size_t len, uint64_t raddr);
static int ompi_osc_gpuic_xfer_block(char *a, char *b, size_t len, void *arg);
static int ompi_osc_gpuic_xfer(ompi_osc_gpuic_xfer_arg_t *x, char *local, size_t len,
                               uint64_t raddr);

/* One contiguous piece inside @p region: through the mapping when there is one, else by a
 * cross-memory copy or through UCX. */
static int ompi_osc_gpuic_xfer_one(ompi_osc_gpuic_xfer_arg_t *x, ompi_osc_gpuic_region_t *region,
                                   char *local, size_t len, uint64_t raddr)
{
    ompi_osc_gpuic_peer_t *peer = &x->module->peers[x->target];
    gpuic_status_t status;
    int rc = OMPI_SUCCESS;

    if (region->direct != NULL) {
        char *remote = (char *)region->direct + (raddr - region->base);

        if (region->gpu && ompi_osc_gpuic_agent_fits(len) &&
            (!x->local_dev || ompi_osc_gpuic_agent_buffer_ready(local))) {
            /* a few bytes to or from GPU window memory: the window agent, a round trip
             * through pinned memory where a copy costs a driver call and a synchronization */
            return ompi_osc_gpuic_agent_copy(x->module, x->is_put, local, x->local_dev, len,
                                             remote);
        }
        if (region->gpu || x->local_dev) {
            /* device memory on either side: the driver copies (host code never touches it),
             * queued on the window's stream and completed by the next completion point */
            return x->is_put ? ompi_osc_gpuic_gpu_copy(x->module, remote, local, len)
                             : ompi_osc_gpuic_gpu_copy(x->module, local, remote, len);
        }
        if (x->is_put) {
            memcpy(remote, local, len);
        } else {
            memcpy(local, remote, len);
        }
        return OMPI_SUCCESS;
    }
    if (!x->local_dev && !region->gpu && __atomic_load_n(&peer->cma_pid, __ATOMIC_RELAXED) > 0 &&
        mca_osc_gpuic_component.cma_min_bytes >= 0 &&
        (x->batch != NULL || ompi_osc_gpuic_cma_takes(x->module, peer, len))) {
        rc = ompi_osc_gpuic_peer_settle(x->module, x->target);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (x->batch != NULL) {
            return ompi_osc_gpuic_cma_batch_add(x, region, local, len, raddr);
        }
        status = gpuic_cma_copy(peer->cma_pid, local, raddr, len, x->is_put);
        if (status != GPUIC_ERR_UNSUPPORTED) {
            x->used_cma = true;
            return ompi_osc_gpuic_error(status);
        }
        /* The system refused (a changed ptrace policy): UCX from now on. */
        __atomic_store_n(&peer->cma_pid, 0, __ATOMIC_RELAXED);
    }
    if (x->gather && x->batch == NULL && !x->local_dev && !region->gpu &&
        __atomic_load_n(&peer->cma_pid, __ATOMIC_RELAXED) > 0 &&
        mca_osc_gpuic_component.cma_min_bytes > 0 &&
        len < (size_t)mca_osc_gpuic_component.cma_min_bytes &&
        len <= OMPI_OSC_GPUIC_CMA_GATHER_MAX) {
        /* a small piece past the run copied at once: one system call with the peer's others
         * at the completion point, not UCX, whose emulation here waits for the target */
        x->used_cma = true;
        return ompi_osc_gpuic_cma_pend_add(x->module, x->target, x->is_put, local, len, raddr,
                                           region->rkey);
    }
    if (x->local_dev) {
        rc = ompi_osc_gpuic_xfer_bounced(x, region, local, len, raddr);
        ompi_osc_gpuic_ucx_count(x->module, x->target);
        return rc;
    }
    return ompi_osc_gpuic_ucx_issue(x->module, x->target, x->is_put, local, len, raddr,
                                    region->rkey);
}

int ompi_osc_gpuic_ucx_issue(ompi_osc_gpuic_module_t *module, int target, bool is_put,
                             void *local, size_t len, uint64_t raddr, gpuic_rkey_t *rkey)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_status_t status = is_put ? gpuic_rma_put_lcc(peer->ep, local, len, raddr, rkey, &peer->lcc)
                                   : gpuic_rma_get_lcc(peer->ep, local, len, raddr, rkey, &peer->lcc);

    ompi_osc_gpuic_ucx_count(module, target);
    return ompi_osc_gpuic_error(status);
}

/*
 * Moves the pieces gathered in x->batch with one cross-memory call per
 * GPUIC_CMA_IOV_MAX pieces.  Where the system refuses it (a changed ptrace policy), the peer
 * takes UCX from now on and the pieces go that way, one by one.
 */
static int ompi_osc_gpuic_cma_batch_issue(ompi_osc_gpuic_xfer_arg_t *x)
{
    ompi_osc_gpuic_cma_batch_t *b = x->batch;
    size_t i, n = b->n;
    gpuic_status_t status;
    int rc = OMPI_SUCCESS;

    if (n == 0) {
        return OMPI_SUCCESS;
    }
    b->n = 0;
    status = gpuic_cma_copyv(b->pid, b->local, b->remote, n, x->is_put);
    if (status != GPUIC_ERR_UNSUPPORTED) {
        x->used_cma = true;
        return ompi_osc_gpuic_error(status);
    }
    /* refused at the first call, so nothing moved and the lists are as gathered */
    __atomic_store_n(&x->module->peers[x->target].cma_pid, 0, __ATOMIC_RELAXED);
    x->batch = NULL;
    for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        rc = ompi_osc_gpuic_xfer_one(x, b->region, b->local[i].iov_base, b->local[i].iov_len,
                                     (uint64_t)(uintptr_t)b->remote[i].iov_base);
    }
    x->batch = b;
    return rc;
}

/* Adds a piece to x->batch, moving the batch first when it is of another region and after
 * when it is full. */
static int ompi_osc_gpuic_cma_batch_add(ompi_osc_gpuic_xfer_arg_t *x,
                                        ompi_osc_gpuic_region_t *region, char *local,
                                        size_t len, uint64_t raddr)
{
    ompi_osc_gpuic_cma_batch_t *b = x->batch;
    int rc;

    if (b->n > 0 && b->region != region && (rc = ompi_osc_gpuic_cma_batch_issue(x)) !=
                                                OMPI_SUCCESS) {
        return rc;
    }
    if (b->n == 0) {
        b->region = region;
        b->pid = __atomic_load_n(&x->module->peers[x->target].cma_pid, __ATOMIC_RELAXED);
    } else if ((char *)b->local[b->n - 1].iov_base + b->local[b->n - 1].iov_len == local &&
               (uint64_t)(uintptr_t)b->remote[b->n - 1].iov_base + b->remote[b->n - 1].iov_len ==
                   raddr) {
        /* adjacent on both sides (the fields of a struct, say): one piece */
        b->local[b->n - 1].iov_len += len;
        b->remote[b->n - 1].iov_len += len;
        return OMPI_SUCCESS;
    }
    b->local[b->n].iov_base = local;
    b->local[b->n].iov_len = len;
    b->remote[b->n].iov_base = (void *)(uintptr_t)raddr;
    b->remote[b->n].iov_len = len;
    return ++b->n == OMPI_OSC_GPUIC_CMA_BATCH ? ompi_osc_gpuic_cma_batch_issue(x) : OMPI_SUCCESS;
}

/* The largest span a get reads whole by one cross-memory copy (ompi_osc_gpuic_get_span). */
#define OMPI_OSC_GPUIC_SPAN_MAX ((size_t)16 << 20)

/* What ompi_osc_gpuic_get_span()'s walk needs: the span's copy and its target address. */
typedef struct ompi_osc_gpuic_span {
    char     *copy;
    uint64_t raddr;
} ompi_osc_gpuic_span_t;

/* Whether a call may move its target range in one piece (ompi_osc_gpuic_put_packed,
 * ompi_osc_gpuic_get_span): a host buffer, and window memory of one region that is neither
 * mapped here nor device memory (a dynamic window may have holes between its regions). */
static bool ompi_osc_gpuic_xfer_whole(const ompi_osc_gpuic_xfer_arg_t *x)
{
    return !x->local_dev && x->module->flavor != MPI_WIN_FLAVOR_DYNAMIC && x->region != NULL &&
           !x->region->gpu && x->region->direct == NULL;
}

/* dt_walk callback: a is the origin block, b its target address inside the span. */
static int ompi_osc_gpuic_span_block(char *a, char *b, size_t len, void *arg)
{
    const ompi_osc_gpuic_span_t *sp = arg;

    memcpy(a, sp->copy + ((uint64_t)(uintptr_t)b - sp->raddr), len);
    return OMPI_SUCCESS;
}

/* dt_walk callback: the origin block a goes to its place in the copy of the target range. */
static int ompi_osc_gpuic_pack_block(char *a, char *b, size_t len, void *arg)
{
    const ompi_osc_gpuic_span_t *sp = arg;

    memcpy(sp->copy + ((uint64_t)(uintptr_t)b - sp->raddr), a, len);
    return OMPI_SUCCESS;
}

/*
 * A put from a scattered origin layout in host memory into a contiguous target range of an
 * unmapped window (up to OMPI_OSC_GPUIC_SPAN_MAX): the origin packed here, then one piece, by
 * cross-memory copy or UCX (completed in the call, so the packed copy can go).  *done_p says
 * whether it took the put.
 */
static int ompi_osc_gpuic_put_packed(ompi_osc_gpuic_xfer_arg_t *x, void *buf, int bcount,
                                     struct ompi_datatype_t *bdt, uint64_t raddr, int tcount,
                                     struct ompi_datatype_t *tdt, bool *done_p)
{
    ompi_osc_gpuic_peer_t *peer = &x->module->peers[x->target];
    ompi_osc_gpuic_span_t sp;
    ptrdiff_t lo, hi;
    uint64_t issued;
    int rc;

    *done_p = false;
    if (!x->is_put || !ompi_osc_gpuic_xfer_whole(x) ||
        !ompi_datatype_is_contiguous_memory_layout(tdt, tcount)) {
        return OMPI_SUCCESS;
    }
    ompi_osc_gpuic_dt_bounds(tdt, tcount, &lo, &hi);
    if (hi <= lo || (size_t)(hi - lo) > OMPI_OSC_GPUIC_SPAN_MAX ||
        (sp.copy = malloc((size_t)(hi - lo))) == NULL) {
        return OMPI_SUCCESS;
    }
    sp.raddr = raddr + (uint64_t)lo;
    *done_p = true;
    rc = ompi_osc_gpuic_dt_walk(buf, bcount, bdt, (void *)(uintptr_t)raddr, tcount, tdt,
                                ompi_osc_gpuic_pack_block, &sp);
    issued = __atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_xfer(x, sp.copy, (size_t)(hi - lo), sp.raddr);
    }
    if (__atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE) != issued) {
        /* through UCX: complete before the copy goes (kept if it cannot be) */
        rc = rc == OMPI_SUCCESS ? ompi_osc_gpuic_peer_flush(x->module, x->target) : rc;
        if (rc != OMPI_SUCCESS) {
            sp.copy = NULL;
        }
    }
    free(sp.copy);
    return rc;
}

/*
 * A get whose target layout is dense (its span at most twice its bytes, up to
 * OMPI_OSC_GPUIC_SPAN_MAX) from an unmapped window, into host memory: one read of the whole
 * span (a cross-memory copy where the peer takes them, else one UCX get completed here), then
 * the pieces from that copy (the gaps are read, never written).  Piece by piece, the kernel
 * pins the peer's pages for every piece, and UCX makes a round trip of each; either costs far
 * more than reading the gap bytes.  *done_p says whether it took the get; window memory only
 * (the window's layout bounds were checked; a dynamic window may have holes between regions).
 */
static int ompi_osc_gpuic_get_span(ompi_osc_gpuic_xfer_arg_t *x, void *buf, int bcount,
                                   struct ompi_datatype_t *bdt, uint64_t raddr, int tcount,
                                   struct ompi_datatype_t *tdt, bool *done_p)
{
    ompi_osc_gpuic_peer_t *peer = &x->module->peers[x->target];
    int pid = __atomic_load_n(&peer->cma_pid, __ATOMIC_RELAXED), rc = OMPI_SUCCESS;
    ompi_osc_gpuic_span_t sp;
    ptrdiff_t lo, hi;
    size_t esize = 0, bytes, span;
    gpuic_status_t status;
    char *copy;

    *done_p = false;
    if (mca_osc_gpuic_component.cma_min_bytes < 0) {
        pid = 0;
    }
    if (x->is_put || !ompi_osc_gpuic_xfer_whole(x) || (pid <= 0 && x->region->rkey == NULL)) {
        return OMPI_SUCCESS;
    }
    ompi_osc_gpuic_dt_bounds(tdt, tcount, &lo, &hi);
    (void)ompi_datatype_type_size(tdt, &esize);
    bytes = esize * (size_t)tcount; /* no overflow: the caller checked the layout's sizes */
    span = hi > lo ? (size_t)(hi - lo) : 0;
    if (span == 0 || span > OMPI_OSC_GPUIC_SPAN_MAX || span / 2 > bytes ||
        (copy = malloc(span)) == NULL) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_peer_settle(x->module, x->target);
    if (rc != OMPI_SUCCESS) {
        status = GPUIC_OK;
    } else if (pid > 0) {
        status = gpuic_cma_copy(pid, copy, raddr + (uint64_t)lo, span, false);
    } else {
        status = gpuic_rma_get_lcc(peer->ep, copy, span, raddr + (uint64_t)lo, x->region->rkey,
                                   &peer->lcc);
        ompi_osc_gpuic_ucx_count(x->module, x->target);
        if (status == GPUIC_OK) {
            rc = ompi_osc_gpuic_peer_flush(x->module, x->target); /* the copy is needed now */
        }
        if (rc != OMPI_SUCCESS) {
            copy = NULL; /* the get may still land in it: kept for the rest of the process */
        }
    }
    if (rc == OMPI_SUCCESS && status == GPUIC_OK) {
        sp.copy = copy;
        sp.raddr = raddr + (uint64_t)lo;
        rc = ompi_osc_gpuic_dt_walk(buf, bcount, bdt, (void *)(uintptr_t)raddr, tcount, tdt,
                                    ompi_osc_gpuic_span_block, &sp);
        x->used_cma = pid > 0;
        *done_p = true;
    } else if (rc == OMPI_SUCCESS && status != GPUIC_ERR_UNSUPPORTED) {
        rc = ompi_osc_gpuic_error(status);
        *done_p = true;
    }
    /* refused by the system: the walk below takes the pieces (and turns the peer to UCX) */
    free(copy);
    return rc;
}

/* Walks the two layouts, moving each piece with ompi_osc_gpuic_xfer(); the pieces that take
 * cross-memory copies are gathered and moved in batches, the last one before return. */
static int ompi_osc_gpuic_xfer_walk(ompi_osc_gpuic_xfer_arg_t *x, void *buf, int bcount,
                                    struct ompi_datatype_t *bdt, uint64_t raddr, int tcount,
                                    struct ompi_datatype_t *tdt)
{
    ompi_osc_gpuic_cma_batch_t batch;
    bool done = false;
    int rc;

    rc = ompi_osc_gpuic_get_span(x, buf, bcount, bdt, raddr, tcount, tdt, &done);
    if (rc == OMPI_SUCCESS && !done) {
        rc = ompi_osc_gpuic_put_packed(x, buf, bcount, bdt, raddr, tcount, tdt, &done);
    }
    if (rc != OMPI_SUCCESS || done) {
        return rc;
    }
    batch.n = 0;
    x->batch = &batch;
    rc = ompi_osc_gpuic_dt_walk(buf, bcount, bdt, (void *)(uintptr_t)raddr, tcount, tdt,
                                ompi_osc_gpuic_xfer_block, x);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_cma_batch_issue(x);
    }
    x->batch = NULL;
    return rc;
}

/* One contiguous piece, split where it crosses from one attached region into the next. */
static int ompi_osc_gpuic_xfer(ompi_osc_gpuic_xfer_arg_t *x, char *local, size_t len,
                               uint64_t raddr)
{
    ompi_osc_gpuic_region_t *piece = x->region;
    size_t n;
    int rc = OMPI_SUCCESS;

    if (raddr >= piece->base && raddr - piece->base <= piece->size &&
        len <= piece->size - (raddr - piece->base)) {
        return ompi_osc_gpuic_xfer_one(x, piece, local, len, raddr);
    }
    while (len > 0 && rc == OMPI_SUCCESS) {
        n = ompi_osc_gpuic_region_piece(x->region, raddr, len, &piece);
        if (n == 0) {
            /* the range check covered the layout's bounds: a block outside is a bug */
            gpuic_log(GPUIC_LOG_ERROR, "block at %#" PRIx64 " outside the checked range",
                      raddr);
            return MPI_ERR_INTERN;
        }
        rc = ompi_osc_gpuic_xfer_one(x, piece, local, n, raddr);
        local += n;
        raddr += n;
        len -= n;
    }
    return rc;
}

/* dt_walk callback: a is the origin block, b the target block (a remote address). */
static int ompi_osc_gpuic_xfer_block(char *a, char *b, size_t len, void *arg)
{
    return ompi_osc_gpuic_xfer(arg, a, len, (uint64_t)(uintptr_t)b);
}

/* The UCX part of a peer flush, covering the first @p issued operations to the peer.  Kept out
 * of line so that a flush with nothing to wait for sets up no frame for it. */
static __attribute__((noinline)) int ompi_osc_gpuic_peer_flush_ucx(ompi_osc_gpuic_module_t *module,
                                                                   int target, uint64_t issued)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_status_t status;

    status = gpuic_ep_flush(peer->ep);
    if (status == GPUIC_OK) {
        /* and every get has landed: with UCX 1.13 a get's reply (a get emulated through
         * active messages) once arrived after the flush of its endpoint had completed */
        status = gpuic_lcc_wait(mca_osc_gpuic_component.ctx, &peer->lcc);
    }
    if (status == GPUIC_OK) {
        ompi_osc_gpuic_counter_raise(&peer->ucx_flushed, issued);
    } else if (status == GPUIC_ERR_TIMED_OUT) {
        gpuic_log(GPUIC_LOG_ERROR,
                  "flush to rank %d of window %d not acknowledged within %.1f s "
                  "(osc_gpuic_timeout); giving up",
                  target, module->id, gpuic_context_timeout(mca_osc_gpuic_component.ctx));
    }
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_peer_flush(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    uint64_t issued;
    int rc;

    if ((rc = ompi_osc_gpuic_cma_pend_issue(module, target, false)) != OMPI_SUCCESS) {
        return rc;
    }
    /* What device code posted to the proxy, and copies queued on the window's stream, are
     * complete first. */
    if (module->devq != NULL && (rc = ompi_osc_gpuic_devqueue_drain(module)) != OMPI_SUCCESS) {
        return rc;
    }
    if ((rc = ompi_osc_gpuic_gpu_drain(module)) != OMPI_SUCCESS) {
        return rc;
    }
    /* Direct stores are complete once they are globally visible. */
    ompi_osc_gpuic_full_barrier();
    ompi_osc_gpuic_progress_poll();
    if (__atomic_load_n(&peer->cma_small, __ATOMIC_RELAXED) != 0) {
        __atomic_store_n(&peer->cma_small, 0, __ATOMIC_RELAXED); /* a new run begins */
    }
    issued = __atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE);
    if (issued == __atomic_load_n(&peer->ucx_flushed, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&peer->lcc.outstanding, __ATOMIC_ACQUIRE) == 0) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.flushes_skipped, 1);
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_peer_flush_ucx(module, target, issued);
}

int ompi_osc_gpuic_peer_settle(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];

    if (__atomic_load_n(&peer->ucx_issued, __ATOMIC_ACQUIRE) ==
        __atomic_load_n(&peer->ucx_flushed, __ATOMIC_ACQUIRE)) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_peer_flush(module, target);
}

int ompi_osc_gpuic_peer_flush_local(ompi_osc_gpuic_module_t *module, int target)
{
    gpuic_status_t status;
    int rc;

    /* Direct copies completed in place, gathered cross-memory puts once staged and gets once
     * moved, copies on the window's stream once it has run them; UCX operations are counted
     * until local completion. */
    if ((rc = ompi_osc_gpuic_cma_pend_issue(module, target, true)) != OMPI_SUCCESS ||
        (rc = ompi_osc_gpuic_gpu_drain(module)) != OMPI_SUCCESS) {
        return rc;
    }
    ompi_osc_gpuic_full_barrier();
    ompi_osc_gpuic_progress_poll();
    status = gpuic_lcc_wait(mca_osc_gpuic_component.ctx, &module->peers[target].lcc);
    if (status == GPUIC_ERR_TIMED_OUT) {
        gpuic_log(GPUIC_LOG_ERROR,
                  "local completion of operations to rank %d of window %d took over %.1f s "
                  "(osc_gpuic_timeout); giving up",
                  target, module->id, gpuic_context_timeout(mca_osc_gpuic_component.ctx));
    }
    return ompi_osc_gpuic_error(status);
}

/* Endpoint flushes in flight for one flush_all: on the heap, since a flush that times out
 * leaves the rest to UCX, whose callbacks still reach it (it is then never freed). */
typedef struct ompi_osc_gpuic_flush_set {
    int pending;
    int status; /* the first failure, a gpuic_status_t */
} ompi_osc_gpuic_flush_set_t;

static void ompi_osc_gpuic_flush_set_done(void *arg, gpuic_status_t status)
{
    ompi_osc_gpuic_flush_set_t *set = arg;
    int ok = GPUIC_OK;

    if (status != GPUIC_OK) {
        __atomic_compare_exchange_n(&set->status, &ok, (int)status, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
    __atomic_fetch_sub(&set->pending, 1, __ATOMIC_RELEASE);
}

/*
 * Flushes, all at once, the endpoints of the peers that were issued UCX operations since their
 * last flush (@p peer_issued: the counts the flush covers), or, with @p peer_issued NULL, every
 * peer's endpoint.  Endpoint flushes rather than one worker flush: a worker flush was seen to
 * return before large gets through UCX's shared-memory transports had delivered their data,
 * and it waits for every endpoint of the context.
 */
static gpuic_status_t ompi_osc_gpuic_flush_peers(ompi_osc_gpuic_module_t *module,
                                                 const uint64_t *peer_issued)
{
    int n = ompi_comm_size(module->comm), i;
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    ompi_osc_gpuic_flush_set_t *set = malloc(sizeof(*set));
    gpuic_status_t status = GPUIC_OK;

    if (set == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    set->pending = 1; /* held until every flush is issued */
    set->status = GPUIC_OK;
    for (i = 0; i < n && status == GPUIC_OK; ++i) {
        if (module->peers[i].ep == NULL ||
            (peer_issued != NULL &&
             peer_issued[i] == __atomic_load_n(&module->peers[i].ucx_flushed, __ATOMIC_ACQUIRE))) {
            continue;
        }
        __atomic_fetch_add(&set->pending, 1, __ATOMIC_RELAXED);
        status = gpuic_ep_flush_nb(module->peers[i].ep, ompi_osc_gpuic_flush_set_done, set);
        if (status != GPUIC_INPROGRESS) {
            __atomic_fetch_sub(&set->pending, 1, __ATOMIC_RELAXED); /* done or failed now */
        } else {
            status = GPUIC_OK;
        }
    }
    __atomic_fetch_sub(&set->pending, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&set->pending, __ATOMIC_ACQUIRE) > 0) {
        gpuic_status_t st = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));

        if (st != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "flush_all of window %d not acknowledged within %.1f s "
                      "(osc_gpuic_timeout); giving up", module->id, gpuic_context_timeout(ctx));
            return st; /* set stays allocated: late callbacks still write to it */
        }
    }
    if (status == GPUIC_OK) {
        status = (gpuic_status_t)__atomic_load_n(&set->status, __ATOMIC_ACQUIRE);
    }
    free(set);
    return status;
}

int ompi_osc_gpuic_module_flush(ompi_osc_gpuic_module_t *module)
{
    int n = ompi_comm_size(module->comm), i, rc;
    uint64_t issued, *peer_issued, small[64];
    gpuic_status_t status;

    if ((rc = ompi_osc_gpuic_cma_pend_issue_all(module)) != OMPI_SUCCESS) {
        return rc;
    }
    /* What device code posted to the proxy, and copies queued on the window's stream, are
     * complete first. */
    if (module->devq != NULL && (rc = ompi_osc_gpuic_devqueue_drain(module)) != OMPI_SUCCESS) {
        return rc;
    }
    if ((rc = ompi_osc_gpuic_gpu_drain(module)) != OMPI_SUCCESS) {
        return rc;
    }
    ompi_osc_gpuic_full_barrier();
    ompi_osc_gpuic_progress_poll();
    if (__atomic_load_n(&module->cma_small_any, __ATOMIC_RELAXED)) {
        /* a new run of small cross-memory copies begins at every peer */
        __atomic_store_n(&module->cma_small_any, false, __ATOMIC_RELAXED);
        for (i = 0; i < n; ++i) {
            __atomic_store_n(&module->peers[i].cma_small, 0, __ATOMIC_RELAXED);
        }
    }
    issued = __atomic_load_n(&module->ucx_issued, __ATOMIC_ACQUIRE);
    if (issued == __atomic_load_n(&module->ucx_flushed, __ATOMIC_ACQUIRE)) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.flushes_skipped, 1);
        return OMPI_SUCCESS;
    }
    /* What each peer had issued before the flush is what the flush covers. */
    peer_issued = n <= 64 ? small : malloc(sizeof(uint64_t) * n);
    for (i = 0; peer_issued != NULL && i < n; ++i) {
        peer_issued[i] = __atomic_load_n(&module->peers[i].ucx_issued, __ATOMIC_ACQUIRE);
    }
    status = peer_issued != NULL ? ompi_osc_gpuic_flush_peers(module, peer_issued)
                                 : gpuic_context_flush(mca_osc_gpuic_component.ctx);
    for (i = 0; status == GPUIC_OK && i < n; ++i) {
        /* every get landed too (see ompi_osc_gpuic_peer_flush_ucx) */
        status = gpuic_lcc_wait(mca_osc_gpuic_component.ctx, &module->peers[i].lcc);
    }
    if (status == GPUIC_OK) {
        ompi_osc_gpuic_counter_raise(&module->ucx_flushed, issued);
        for (i = 0; peer_issued != NULL && i < n; ++i) {
            ompi_osc_gpuic_counter_raise(&module->peers[i].ucx_flushed, peer_issued[i]);
        }
    }
    if (peer_issued != small) {
        free(peer_issued);
    }
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_module_settle(ompi_osc_gpuic_module_t *module)
{
    return ompi_osc_gpuic_error(ompi_osc_gpuic_flush_peers(module, NULL));
}

/* Counts one put or get of @p bytes under the path it took (its first region's). */
static void ompi_osc_gpuic_count_call(const ompi_osc_gpuic_xfer_arg_t *x, size_t bytes)
{
    ompi_osc_gpuic_counters_t *c = &mca_osc_gpuic_component.counters;

    if (x->region->direct != NULL) {
        ompi_osc_gpuic_count(&c->ops_direct, 1);
        ompi_osc_gpuic_count(&c->bytes_direct, bytes);
    } else if (x->used_cma) {
        ompi_osc_gpuic_count(&c->ops_cma, 1);
        ompi_osc_gpuic_count(&c->bytes_cma, bytes);
    } else {
        ompi_osc_gpuic_count(&c->ops_ucx, 1);
        ompi_osc_gpuic_count(&c->bytes_ucx, bytes);
    }
}

/*
 * The common case in a handful of loads: the same predefined gap-free type and count on both
 * sides, a window of fixed layout in a fence or lock_all epoch, host memory only, and a range
 * that lies inside the target's window.  Returns false, having done nothing, whenever any of
 * that does not hold: the general path then decides, reports errors and counts them.
 */
static inline bool ompi_osc_gpuic_rma_fast(ompi_osc_gpuic_module_t *module, bool is_put,
                                           void *origin, int count, struct ompi_datatype_t *dt,
                                           int target, ptrdiff_t tdisp,
                                           struct ompi_datatype_t *tdt, int tcount,
                                           bool gather, int *rc_p)
{
    const uint32_t want = OMPI_DATATYPE_FLAG_PREDEFINED | OPAL_DATATYPE_FLAG_NO_GAPS;
    ompi_osc_gpuic_epoch_t epoch = module->epoch;
    ompi_osc_gpuic_peer_t *peer;
    uint64_t offset;
    size_t len;

    if (dt != tdt || count != tcount || count <= 0 || (dt->super.flags & want) != want ||
        dt->super.true_lb != 0 || dt->super.size == 0 ||
        (epoch != OMPI_OSC_GPUIC_EPOCH_LOCK_ALL && epoch != OMPI_OSC_GPUIC_EPOCH_FENCE) ||
        module->flavor == MPI_WIN_FLAVOR_DYNAMIC || tdisp < 0) {
        return false;
    }
    peer = &module->peers[target];
    len = dt->super.size * (size_t)count; /* an int count of a predefined type: no overflow */
    /* overflow-safe: offset = tdisp * disp_unit and offset + len <= size */
    if (peer->win.gpu || __builtin_mul_overflow((uint64_t)tdisp, (uint64_t)peer->disp_unit,
                                                &offset) ||
        offset > peer->win.size || len > peer->win.size - offset) {
        return false;
    }
    /* Only a process that uses CUDA can hold device buffers: it takes the general path. */
    if (gpuic_cuda_available()) {
        return false;
    }
    module->ops_since_fence++;
    if (peer->win.direct != NULL) {
        char *remote = (char *)peer->win.direct + offset;

        if (len == sizeof(uint64_t)) {
            /* the commonest size, copied inline rather than through the library call */
            memcpy(is_put ? remote : origin, is_put ? origin : remote, sizeof(uint64_t));
        } else if (is_put) {
            memcpy(remote, origin, len);
        } else {
            memcpy(origin, remote, len);
        }
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.ops_direct, 1);
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.bytes_direct, len);
        *rc_p = OMPI_SUCCESS;
    } else {
        ompi_osc_gpuic_xfer_arg_t x = {module,        target, &peer->win, is_put, false,
                                       false,         NULL,   gather};

        *rc_p = ompi_osc_gpuic_xfer(&x, origin, len, peer->win.base + offset);
        if (*rc_p != OMPI_SUCCESS) {
            gpuic_log(GPUIC_LOG_ERROR, "%s to rank %d failed", is_put ? "put" : "get", target);
            return true;
        }
        ompi_osc_gpuic_count_call(&x, len);
    }
    return true;
}

/* Common body of put and get (and of their request-based forms). */
static int ompi_osc_gpuic_rma(ompi_osc_gpuic_module_t *module, bool is_put, void *origin,
                              int ocount, struct ompi_datatype_t *odt, int target,
                              ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt,
                              bool gather)
{
    ompi_osc_gpuic_xfer_arg_t x = {module, target, NULL, is_put, false, false, NULL, gather};
    ptrdiff_t olo, ohi;
    size_t osize, tsize;
    uint64_t raddr;
    int rc;

    if (ompi_osc_gpuic_rma_fast(module, is_put, origin, ocount, odt, target, tdisp, tdt, tcount,
                                gather, &rc)) {
        return rc;
    }
    rc = ompi_osc_gpuic_begin_op(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* Sizes and spans of user input are computed with overflow checks. */
    rc = ompi_osc_gpuic_dt_span(odt, ocount, false, &olo, &ohi, &osize);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_dt_span(tdt, tcount, false, &olo, &ohi, &tsize);
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (osize != tsize) {
        gpuic_log(GPUIC_LOG_DEBUG, "origin (%zu bytes) and target (%zu bytes) do not match",
                  osize, tsize);
        return MPI_ERR_TYPE;
    }
    if (tsize == 0) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_check_range(module, target, tdisp, tcount, tdt, &raddr, &x.region);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* Only a process that uses CUDA can hold device buffers; the check costs nothing elsewhere. */
    x.local_dev = gpuic_cuda_available() && gpuic_cuda_is_device_ptr(origin);
    if (ompi_datatype_is_contiguous_memory_layout(odt, ocount) &&
        ompi_datatype_is_contiguous_memory_layout(tdt, tcount)) {
        ptrdiff_t tlo, thi;

        ompi_osc_gpuic_dt_bounds(odt, ocount, &olo, &ohi);
        ompi_osc_gpuic_dt_bounds(tdt, tcount, &tlo, &thi);
        rc = ompi_osc_gpuic_xfer(&x, (char *)origin + olo, tsize, raddr + tlo);
    } else {
        rc = ompi_osc_gpuic_xfer_walk(&x, origin, ocount, odt, raddr, tcount, tdt);
    }
    if (rc != OMPI_SUCCESS) {
        gpuic_log(GPUIC_LOG_ERROR, "%s to rank %d failed", is_put ? "put" : "get", target);
        return rc;
    }
    /* Counted by the path of the call's first region (a span of adjacent dynamic regions may
     * mix paths; for cross-memory copies the first piece decides, and a refusal by the system
     * switches to UCX for good). */
    ompi_osc_gpuic_count_call(&x, tsize);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_rma_layout(ompi_osc_gpuic_module_t *module, int target,
                              ompi_osc_gpuic_region_t *region, bool is_put, void *buf,
                              int bcount, struct ompi_datatype_t *bdt, uint64_t raddr,
                              int tcount, struct ompi_datatype_t *tdt)
{
    ompi_osc_gpuic_xfer_arg_t x = {module, target, region, is_put, false, false, NULL};

    return ompi_osc_gpuic_xfer_walk(&x, buf, bcount, bdt, raddr, tcount, tdt);
}

int ompi_osc_gpuic_put(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win)
{
    return ompi_osc_gpuic_rma(ompi_osc_gpuic_module(win), true, (void *)origin_addr,
                              origin_count, origin_dt, target, target_disp, target_count,
                              target_dt, true);
}

int ompi_osc_gpuic_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return ompi_osc_gpuic_rma(ompi_osc_gpuic_module(win), false, origin_addr, origin_count,
                              origin_dt, target, target_disp, target_count, target_dt, true);
}

/* Request-based operations exist only in passive-target epochs (MPI 3.1 section 11.3.5). */
int ompi_osc_gpuic_check_passive(ompi_osc_gpuic_module_t *module)
{
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL) {
        return OMPI_SUCCESS;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "request-based RMA outside a passive-target epoch");
    return MPI_ERR_RMA_SYNC;
}

/* The request of an rput or rget to @p target, given the target's UCX count (@p issued) and
 * the window stream's (@p queued) before the call: complete at once when the call added to
 * neither, since direct and cross-memory copies are done on return; complete once the stream
 * has run what it was given when the call queued copies on it; else complete when the
 * endpoint's flush is.  Another thread's work in the meantime only makes the request wait for
 * that work too. */
static int ompi_osc_gpuic_request_for(struct ompi_win_t *win, ompi_osc_gpuic_module_t *module,
                                      int target, uint64_t issued, uint64_t queued,
                                      struct ompi_request_t **request)
{
    bool ucx = __atomic_load_n(&module->peers[target].ucx_issued, __ATOMIC_ACQUIRE) != issued;
    uint64_t ticket = ompi_osc_gpuic_gpu_ticket(module);
    int rc;

    if (ticket != queued) {
        if (!ucx) {
            return ompi_osc_gpuic_request_gpu(win, module, ticket, request);
        }
        /* both kinds (regions of mixed paths): the stream's part completes here */
        if ((rc = ompi_osc_gpuic_gpu_drain(module)) != OMPI_SUCCESS) {
            return rc;
        }
    }
    if (!ucx) {
        return ompi_osc_gpuic_request_completed(win, request);
    }
    return ompi_osc_gpuic_request_flush_ep(win, module->peers[target].ep, request);
}

int ompi_osc_gpuic_rput(const void *origin_addr, int origin_count,
                        struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                        int target_count, struct ompi_datatype_t *target_dt,
                        struct ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_passive(module);
    uint64_t issued, queued;

    if (rc == OMPI_SUCCESS) {
        issued = __atomic_load_n(&module->peers[target].ucx_issued, __ATOMIC_ACQUIRE);
        queued = ompi_osc_gpuic_gpu_ticket(module);
        rc = ompi_osc_gpuic_rma(module, true, (void *)origin_addr, origin_count, origin_dt,
                                target, target_disp, target_count, target_dt, false);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_request_for(win, module, target, issued, queued, request);
    }
    return rc;
}

int ompi_osc_gpuic_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                        int target, ptrdiff_t target_disp, int target_count,
                        struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                        struct ompi_request_t **request)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_passive(module);
    uint64_t issued, queued;

    if (rc == OMPI_SUCCESS) {
        issued = __atomic_load_n(&module->peers[target].ucx_issued, __ATOMIC_ACQUIRE);
        queued = ompi_osc_gpuic_gpu_ticket(module);
        rc = ompi_osc_gpuic_rma(module, false, origin_addr, origin_count, origin_dt, target,
                                target_disp, target_count, target_dt, false);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_request_for(win, module, target, issued, queued, request);
    }
    return rc;
}
