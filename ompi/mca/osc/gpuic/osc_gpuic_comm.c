/*
 * Put, get, rput and rget: epoch and range checks, then contiguous transfers straight to
 * libgpuic (or direct copies through a same-node mapping), or a walk over the origin and
 * target datatype layouts that issues one transfer per overlapping block.
 */
#include "ompi_config.h"

#include <string.h>

#include "mpi.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/sys/atomic.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_gpuic.h"

/* iovecs fetched from the convertor per refill */
#define OMPI_OSC_GPUIC_IOV_BATCH 32

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
    case OMPI_OSC_GPUIC_EPOCH_NONE:
        break;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "rank %d: RMA call to target %d outside an access epoch",
              ompi_osc_gpuic_rank(module), target);
    return MPI_ERR_RMA_SYNC;
}

/* Lowest and one-past-highest byte offsets that count elements of dt touch, relative to the
 * buffer address (negative extents and lower bounds included). */
static void ompi_osc_gpuic_dt_bounds(const struct ompi_datatype_t *dt, int count,
                                     ptrdiff_t *lo_p, ptrdiff_t *hi_p)
{
    const opal_datatype_t *d = &dt->super;
    ptrdiff_t extent = d->ub - d->lb;
    ptrdiff_t step = extent * (ptrdiff_t)(count - 1);

    *lo_p = d->true_lb + (step < 0 ? step : 0);
    *hi_p = d->true_ub + (step > 0 ? step : 0);
}

/* Walks the contiguous blocks of (base, count, dt) in type-map order. */
typedef struct ompi_osc_gpuic_dt_iter {
    opal_convertor_t conv;
    struct iovec     iov[OMPI_OSC_GPUIC_IOV_BATCH];
    uint32_t         n, i;
    bool             drained;
} ompi_osc_gpuic_dt_iter_t;

static void ompi_osc_gpuic_dt_iter_init(ompi_osc_gpuic_dt_iter_t *it, const void *base,
                                        int count, struct ompi_datatype_t *dt)
{
    OBJ_CONSTRUCT(&it->conv, opal_convertor_t);
    /* The convertor only computes addresses from base; it never dereferences it, so a remote
     * address works as well as a local one. */
    opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, base,
                                             0, &it->conv);
    it->n = it->i = 0;
    it->drained = false;
}

static bool ompi_osc_gpuic_dt_iter_next(ompi_osc_gpuic_dt_iter_t *it, char **ptr_p,
                                        size_t *len_p)
{
    size_t bytes;

    while (it->i == it->n) {
        if (it->drained) {
            return false;
        }
        it->n = OMPI_OSC_GPUIC_IOV_BATCH;
        it->drained = opal_convertor_raw(&it->conv, it->iov, &it->n, &bytes) != 0;
        it->i = 0;
        if (it->n == 0 && it->drained) {
            return false;
        }
    }
    *ptr_p = it->iov[it->i].iov_base;
    *len_p = it->iov[it->i].iov_len;
    it->i++;
    return true;
}

static void ompi_osc_gpuic_dt_iter_fini(ompi_osc_gpuic_dt_iter_t *it)
{
    OBJ_DESTRUCT(&it->conv);
}

/* One contiguous piece: through the mapping when there is one, else through UCX. */
static gpuic_status_t ompi_osc_gpuic_xfer(ompi_osc_gpuic_peer_t *peer, bool is_put, char *local,
                                          size_t len, uint64_t raddr)
{
    if (peer->direct != NULL) {
        char *remote = (char *)peer->direct + (raddr - peer->base);

        if (is_put) {
            memcpy(remote, local, len);
        } else {
            memcpy(local, remote, len);
        }
        return GPUIC_OK;
    }
    return is_put ? gpuic_rma_put(peer->ep, local, len, raddr, peer->rkey)
                  : gpuic_rma_get(peer->ep, local, len, raddr, peer->rkey);
}

static gpuic_status_t ompi_osc_gpuic_xfer_noncontig(ompi_osc_gpuic_peer_t *peer, bool is_put,
                                                    void *origin, int ocount,
                                                    struct ompi_datatype_t *odt,
                                                    uint64_t raddr, int tcount,
                                                    struct ompi_datatype_t *tdt)
{
    ompi_osc_gpuic_dt_iter_t oit, tit;
    char *optr = NULL, *tptr = NULL;
    size_t oleft = 0, tleft = 0, len;
    gpuic_status_t status = GPUIC_OK;

    ompi_osc_gpuic_dt_iter_init(&oit, origin, ocount, odt);
    ompi_osc_gpuic_dt_iter_init(&tit, (void *)(uintptr_t)raddr, tcount, tdt);
    while (status == GPUIC_OK) {
        if (oleft == 0 && !ompi_osc_gpuic_dt_iter_next(&oit, &optr, &oleft)) {
            break;
        }
        if (tleft == 0 && !ompi_osc_gpuic_dt_iter_next(&tit, &tptr, &tleft)) {
            break;
        }
        len = oleft < tleft ? oleft : tleft;
        status = ompi_osc_gpuic_xfer(peer, is_put, optr, len, (uint64_t)(uintptr_t)tptr);
        optr += len;
        tptr += len;
        oleft -= len;
        tleft -= len;
    }
    ompi_osc_gpuic_dt_iter_fini(&oit);
    ompi_osc_gpuic_dt_iter_fini(&tit);
    return status;
}

/* Common body of put and get (and of their request-based forms). */
static int ompi_osc_gpuic_rma(ompi_osc_gpuic_module_t *module, bool is_put, void *origin,
                              int ocount, struct ompi_datatype_t *odt, int target,
                              ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    ptrdiff_t olo, ohi, tlo, thi, offset;
    size_t osize, tsize;
    gpuic_status_t status;
    int rc;

    rc = ompi_osc_gpuic_check_access(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    module->ops_since_fence++;
    ompi_datatype_type_size(odt, &osize);
    ompi_datatype_type_size(tdt, &tsize);
    if (osize * (size_t)ocount != tsize * (size_t)tcount) {
        gpuic_log(GPUIC_LOG_DEBUG, "origin (%zu bytes) and target (%zu bytes) do not match",
                  osize * (size_t)ocount, tsize * (size_t)tcount);
        return MPI_ERR_TYPE;
    }
    if (tsize * (size_t)tcount == 0) {
        return OMPI_SUCCESS;
    }
    offset = tdisp * (ptrdiff_t)peer->disp_unit;
    ompi_osc_gpuic_dt_bounds(tdt, tcount, &tlo, &thi);
    if (tdisp < 0 || offset + tlo < 0 || (uint64_t)(offset + thi) > peer->size) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: access [%td, %td) outside target %d's window of "
                  "%" PRIu64 " bytes", ompi_osc_gpuic_rank(module), offset + tlo, offset + thi,
                  target, peer->size);
        return MPI_ERR_RMA_RANGE;
    }
    if (ompi_datatype_is_contiguous_memory_layout(odt, ocount) &&
        ompi_datatype_is_contiguous_memory_layout(tdt, tcount)) {
        ompi_osc_gpuic_dt_bounds(odt, ocount, &olo, &ohi);
        status = ompi_osc_gpuic_xfer(peer, is_put, (char *)origin + olo, tsize * (size_t)tcount,
                                     peer->base + (uint64_t)(offset + tlo));
    } else {
        status = ompi_osc_gpuic_xfer_noncontig(peer, is_put, origin, ocount, odt,
                                               peer->base + (uint64_t)offset, tcount, tdt);
    }
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "%s to rank %d failed: %s", is_put ? "put" : "get", target,
                  gpuic_status_string(status));
    }
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_put(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win)
{
    return ompi_osc_gpuic_rma(ompi_osc_gpuic_module(win), true, (void *)origin_addr,
                              origin_count, origin_dt, target, target_disp, target_count,
                              target_dt);
}

int ompi_osc_gpuic_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return ompi_osc_gpuic_rma(ompi_osc_gpuic_module(win), false, origin_addr, origin_count,
                              origin_dt, target, target_disp, target_count, target_dt);
}

/* Request-based operations exist only in passive-target epochs (MPI 3.1 section 11.3.5). */
static int ompi_osc_gpuic_check_passive(ompi_osc_gpuic_module_t *module)
{
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL) {
        return OMPI_SUCCESS;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "request-based RMA outside a passive-target epoch");
    return MPI_ERR_RMA_SYNC;
}

int ompi_osc_gpuic_rput(const void *origin_addr, int origin_count,
                        struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                        int target_count, struct ompi_datatype_t *target_dt,
                        struct ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_passive(module);

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_rma(module, true, (void *)origin_addr, origin_count, origin_dt,
                                target, target_disp, target_count, target_dt);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_request_flush_ep(win, module->peers[target].ep, request);
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

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_rma(module, false, origin_addr, origin_count, origin_dt, target,
                                target_disp, target_count, target_dt);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_request_flush_ep(win, module->peers[target].ep, request);
    }
    return rc;
}
