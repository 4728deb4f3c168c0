/*
 * Small puts and gets to same-node peers whose window is not mapped here (MPI_Win_create on
 * user memory), gathered per peer and moved by cross-memory copy (process_vm_writev/readv) at
 * the next completion point: one system call for up to OMPI_OSC_GPUIC_CMA_PEND_MAX pieces
 * instead of one per piece, and no dependence on the target's progress, which UCX's emulation
 * of RMA on such memory has (docs/performance.md, "Intel MPI Benchmarks").
 *
 * A put's bytes are staged here when it is called (its origin buffer is free on return, as
 * with a copy made at once); a get's destination is the caller's buffer, written at the
 * completion point (MPI leaves it undefined until then).  Request-based calls do not gather:
 * their request completes when the call returns.  Nothing waits past the origin's next MPI call
 * that is not another put or get (ompi_osc_gpuic_cma_pend_settle()).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "osc_gpuic.h"

/* Pieces one gathering holds in each direction, and the bytes its puts may stage. */
#define OMPI_OSC_GPUIC_CMA_PEND_MAX 256
#define OMPI_OSC_GPUIC_CMA_PEND_STAGE (64 * 1024)

typedef struct ompi_osc_gpuic_cma_dir {
    size_t        n;
    struct iovec  local[OMPI_OSC_GPUIC_CMA_PEND_MAX];
    struct iovec  remote[OMPI_OSC_GPUIC_CMA_PEND_MAX];
    gpuic_rkey_t *rkey[OMPI_OSC_GPUIC_CMA_PEND_MAX]; /* for the fallback to UCX */
} ompi_osc_gpuic_cma_dir_t;

typedef struct ompi_osc_gpuic_cma_pend {
    opal_mutex_t             lock; /* another thread may gather or flush at once */
    size_t                   n;    /* pieces gathered in both directions (read unlocked) */
    size_t                   staged;
    ompi_osc_gpuic_cma_dir_t dir[2]; /* [0] gets, [1] puts */
    char                     stage[OMPI_OSC_GPUIC_CMA_PEND_STAGE];
} ompi_osc_gpuic_cma_pend_t;

/* Moves the pieces of one direction; where the system refuses (a changed ptrace policy: nothing
 * moved), the peer takes UCX from now on and the pieces go that way, a put's staged bytes
 * complete locally before the stage is reused.  Called with the gathering's lock held. */
static int ompi_osc_gpuic_cma_dir_issue(ompi_osc_gpuic_module_t *module, int target,
                                        ompi_osc_gpuic_cma_dir_t *d, bool is_put)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    size_t i, n = d->n;
    gpuic_status_t status;
    int rc = OMPI_SUCCESS;

    if (n == 0) {
        return OMPI_SUCCESS;
    }
    d->n = 0;
    status = gpuic_cma_copyv(__atomic_load_n(&peer->cma_pid, __ATOMIC_RELAXED), d->local,
                             d->remote, n, is_put);
    if (status != GPUIC_ERR_UNSUPPORTED) {
        return ompi_osc_gpuic_error(status);
    }
    __atomic_store_n(&peer->cma_pid, 0, __ATOMIC_RELAXED);
    /* refused at the first call: the lists are as gathered */
    for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        rc = ompi_osc_gpuic_ucx_issue(module, target, is_put, d->local[i].iov_base,
                                      d->local[i].iov_len,
                                      (uint64_t)(uintptr_t)d->remote[i].iov_base, d->rkey[i]);
    }
    if (rc == OMPI_SUCCESS && is_put) {
        /* the staged bytes are reused once this returns */
        rc = ompi_osc_gpuic_error(gpuic_lcc_wait(mca_osc_gpuic_component.ctx, &peer->lcc));
    }
    return rc;
}

/* Both directions (@p gets_only: the gets); called with the lock held. */
static int ompi_osc_gpuic_cma_pend_issue_locked(ompi_osc_gpuic_module_t *module, int target,
                                                ompi_osc_gpuic_cma_pend_t *p, bool gets_only)
{
    int rc = gets_only ? OMPI_SUCCESS
                       : ompi_osc_gpuic_cma_dir_issue(module, target, &p->dir[1], true);
    int rc_get = ompi_osc_gpuic_cma_dir_issue(module, target, &p->dir[0], false);

    if (p->dir[1].n == 0) {
        p->staged = 0;
    }
    __atomic_store_n(&p->n, p->dir[1].n, __ATOMIC_RELEASE);
    return rc != OMPI_SUCCESS ? rc : rc_get;
}

int ompi_osc_gpuic_cma_pend_add(ompi_osc_gpuic_module_t *module, int target, bool is_put,
                                void *local, size_t len, uint64_t raddr, gpuic_rkey_t *rkey)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    ompi_osc_gpuic_cma_pend_t *p = __atomic_load_n(&peer->cma_pend, __ATOMIC_ACQUIRE);
    ompi_osc_gpuic_cma_dir_t *d;
    int rc = OMPI_SUCCESS;

    if (p == NULL) {
        ompi_osc_gpuic_cma_pend_t *fresh = malloc(sizeof(*fresh));

        if (fresh == NULL) {
            return MPI_ERR_NO_MEM;
        }
        OBJ_CONSTRUCT(&fresh->lock, opal_mutex_t);
        fresh->n = 0;
        fresh->staged = 0;
        fresh->dir[0].n = fresh->dir[1].n = 0;
        if (__atomic_compare_exchange_n(&peer->cma_pend, &p, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            p = fresh;
        } else {
            OBJ_DESTRUCT(&fresh->lock); /* another thread's came first: p is it */
            free(fresh);
        }
    }
    d = &p->dir[is_put];
    OPAL_THREAD_LOCK(&p->lock);
    if (d->n == OMPI_OSC_GPUIC_CMA_PEND_MAX ||
        (is_put && p->staged + len > OMPI_OSC_GPUIC_CMA_PEND_STAGE)) {
        rc = ompi_osc_gpuic_cma_pend_issue_locked(module, target, p, false);
    }
    if (rc == OMPI_SUCCESS) {
        if (is_put) {
            memcpy(p->stage + p->staged, local, len);
            local = p->stage + p->staged;
            p->staged += (len + 7) & ~(size_t)7;
        }
        d->local[d->n].iov_base = local;
        d->local[d->n].iov_len = len;
        d->remote[d->n].iov_base = (void *)(uintptr_t)raddr;
        d->remote[d->n].iov_len = len;
        d->rkey[d->n] = rkey;
        d->n++;
        __atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELEASE);
        if (!__atomic_load_n(&module->cma_pend_any, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&module->cma_pend_any, true, __ATOMIC_ACQ_REL)) {
            __atomic_fetch_add(&mca_osc_gpuic_component.cma_pend_windows, 1, __ATOMIC_RELEASE);
        }
    }
    OPAL_THREAD_UNLOCK(&p->lock);
    return rc;
}

/* The error a settle outside a completion point kept for the window (cleared: it is reported
 * once). */
static int ompi_osc_gpuic_cma_pend_kept(ompi_osc_gpuic_module_t *module)
{
    if (__atomic_load_n(&module->cma_pend_rc, __ATOMIC_RELAXED) == OMPI_SUCCESS) {
        return OMPI_SUCCESS;
    }
    return __atomic_exchange_n(&module->cma_pend_rc, OMPI_SUCCESS, __ATOMIC_ACQ_REL);
}

/* ompi_osc_gpuic_cma_pend_issue() without the kept error. */
static int ompi_osc_gpuic_cma_pend_move(ompi_osc_gpuic_module_t *module, int target,
                                        bool gets_only)
{
    ompi_osc_gpuic_cma_pend_t *p = __atomic_load_n(&module->peers[target].cma_pend,
                                                   __ATOMIC_ACQUIRE);
    int rc;

    if (p == NULL || __atomic_load_n(&p->n, __ATOMIC_ACQUIRE) == 0) {
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_LOCK(&p->lock);
    rc = ompi_osc_gpuic_cma_pend_issue_locked(module, target, p, gets_only);
    OPAL_THREAD_UNLOCK(&p->lock);
    return rc;
}

/* Every peer's gathered copies; cma_pend_any is cleared first (a piece gathered meanwhile
 * sets it again). */
static int ompi_osc_gpuic_cma_pend_move_all(ompi_osc_gpuic_module_t *module)
{
    int n = ompi_comm_size(module->comm), i, rc = OMPI_SUCCESS, rc_one;

    if (!__atomic_load_n(&module->cma_pend_any, __ATOMIC_ACQUIRE)) {
        return OMPI_SUCCESS;
    }
    ompi_osc_gpuic_cma_pend_forget(module);
    for (i = 0; i < n; ++i) {
        rc_one = ompi_osc_gpuic_cma_pend_move(module, i, false);
        rc = rc != OMPI_SUCCESS ? rc : rc_one;
    }
    return rc;
}

int ompi_osc_gpuic_cma_pend_issue(ompi_osc_gpuic_module_t *module, int target, bool gets_only)
{
    int rc = ompi_osc_gpuic_cma_pend_move(module, target, gets_only);
    int kept = ompi_osc_gpuic_cma_pend_kept(module);

    return rc != OMPI_SUCCESS ? rc : kept;
}

int ompi_osc_gpuic_cma_pend_issue_all(ompi_osc_gpuic_module_t *module)
{
    int rc = ompi_osc_gpuic_cma_pend_move_all(module);
    int kept = ompi_osc_gpuic_cma_pend_kept(module);

    return rc != OMPI_SUCCESS ? rc : kept;
}

void ompi_osc_gpuic_cma_pend_forget(ompi_osc_gpuic_module_t *module)
{
    if (__atomic_exchange_n(&module->cma_pend_any, false, __ATOMIC_ACQ_REL)) {
        __atomic_fetch_sub(&mca_osc_gpuic_component.cma_pend_windows, 1, __ATOMIC_RELEASE);
    }
}

void ompi_osc_gpuic_cma_pend_settle_all(bool may_wait)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    ompi_osc_gpuic_module_t *m;

    /* The window list's lock: a window is not freed while its copies move.  Progress may be
     * called with it held (by this thread, too): it then passes. */
    if (may_wait) {
        opal_mutex_lock(&c->lock);
    } else if (opal_mutex_trylock(&c->lock) != 0) {
        return;
    }
    for (m = c->windows; m != NULL; m = m->next) {
        int rc = ompi_osc_gpuic_cma_pend_move_all(m), ok = OMPI_SUCCESS;

        if (rc != OMPI_SUCCESS) {
            /* the first one is kept */
            __atomic_compare_exchange_n(&m->cma_pend_rc, &ok, rc, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
        }
    }
    opal_mutex_unlock(&c->lock);
}

void ompi_osc_gpuic_cma_pend_free(ompi_osc_gpuic_module_t *module)
{
    int n = ompi_comm_size(module->comm), i;

    ompi_osc_gpuic_cma_pend_forget(module);
    for (i = 0; i < n; ++i) {
        ompi_osc_gpuic_cma_pend_t *p = module->peers[i].cma_pend;

        if (p != NULL) {
            OBJ_DESTRUCT(&p->lock);
            free(p);
            module->peers[i].cma_pend = NULL;
        }
    }
}
