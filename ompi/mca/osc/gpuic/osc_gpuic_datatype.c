/*
 * Datatype layouts: the bytes a (buffer, count, datatype) description touches, and a walk over
 * two descriptions with the same type signature, pairing their contiguous blocks in type-map
 * order.  Used by put/get for non-contiguous transfers and by the accumulate family to pack,
 * unpack and visit target elements.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_gpuic.h"

/* iovecs fetched from the convertor per refill */
#define OMPI_OSC_GPUIC_IOV_BATCH 32

void ompi_osc_gpuic_dt_bounds(const struct ompi_datatype_t *dt, int count, ptrdiff_t *lo_p,
                              ptrdiff_t *hi_p)
{
    const opal_datatype_t *d = &dt->super;
    ptrdiff_t extent = d->ub - d->lb;
    ptrdiff_t step = extent * (ptrdiff_t)(count - 1);

    *lo_p = d->true_lb + (step < 0 ? step : 0);
    *hi_p = d->true_ub + (step > 0 ? step : 0);
}

static int ompi_osc_gpuic_range_find(ompi_osc_gpuic_module_t *module, int target,
                                     ptrdiff_t disp, int count, struct ompi_datatype_t *dt,
                                     uint64_t *raddr_p, ompi_osc_gpuic_region_t **region_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    ptrdiff_t lo, hi, offset;

    ptrdiff_t first, end;
    bool wrapped;

    ompi_osc_gpuic_dt_bounds(dt, count, &lo, &hi);
    if (module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* Displacements are absolute addresses (MPI_Get_address at the target).  An access
         * whose end wraps around the address space would look like a short one at address 0. */
        if ((uint64_t)disp + (uint64_t)hi < (uint64_t)disp ||
            (uint64_t)disp + (uint64_t)lo > (uint64_t)disp + (uint64_t)hi) {
            gpuic_log(GPUIC_LOG_DEBUG, "rank %d: access at %#tx wraps around the address space",
                      ompi_osc_gpuic_rank(module), disp);
            return MPI_ERR_RMA_RANGE;
        }
        *raddr_p = (uint64_t)disp;
        return ompi_osc_gpuic_dynamic_resolve(module, target, (uint64_t)(disp + lo),
                                              (uint64_t)(disp + hi), region_p);
    }
    /* A huge displacement must not wrap disp * disp_unit back into the window. */
    wrapped = __builtin_mul_overflow(disp, (ptrdiff_t)peer->disp_unit, &offset) ||
              __builtin_add_overflow(offset, lo, &first) ||
              __builtin_add_overflow(offset, hi, &end);
    if (wrapped || disp < 0 || first < 0 || (uint64_t)end > peer->win.size) {
        if (wrapped) {
            gpuic_log(GPUIC_LOG_DEBUG, "rank %d: displacement %td times %d overflows",
                      ompi_osc_gpuic_rank(module), disp, peer->disp_unit);
            return MPI_ERR_RMA_RANGE;
        }
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: access [%td, %td) outside target %d's window of "
                  "%" PRIu64 " bytes", ompi_osc_gpuic_rank(module), offset + lo, offset + hi,
                  target, peer->win.size);
        return MPI_ERR_RMA_RANGE;
    }
    *raddr_p = peer->win.base + (uint64_t)offset;
    *region_p = &peer->win;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_check_range(ompi_osc_gpuic_module_t *module, int target, ptrdiff_t disp,
                               int count, struct ompi_datatype_t *dt, uint64_t *raddr_p,
                               ompi_osc_gpuic_region_t **region_p)
{
    int rc = ompi_osc_gpuic_range_find(module, target, disp, count, dt, raddr_p, region_p);

    /* Counted here, where every range refusal passes, not at each of its causes. */
    if (rc == MPI_ERR_RMA_RANGE) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.range_errors, 1);
    }
    return rc;
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
    }
    *ptr_p = it->iov[it->i].iov_base;
    *len_p = it->iov[it->i].iov_len;
    it->i++;
    return true;
}

int ompi_osc_gpuic_dt_walk(void *a, int acount, struct ompi_datatype_t *adt, void *b,
                           int bcount, struct ompi_datatype_t *bdt,
                           ompi_osc_gpuic_walk_fn_t fn, void *arg)
{
    ompi_osc_gpuic_dt_iter_t ait, bit;
    char *aptr = NULL, *bptr = NULL;
    size_t aleft = 0, bleft = 0, len;
    int rc = OMPI_SUCCESS;

    ompi_osc_gpuic_dt_iter_init(&ait, a, acount, adt);
    ompi_osc_gpuic_dt_iter_init(&bit, b, bcount, bdt);
    while (rc == OMPI_SUCCESS) {
        if (aleft == 0 && !ompi_osc_gpuic_dt_iter_next(&ait, &aptr, &aleft)) {
            break;
        }
        if (bleft == 0 && !ompi_osc_gpuic_dt_iter_next(&bit, &bptr, &bleft)) {
            break;
        }
        len = aleft < bleft ? aleft : bleft;
        rc = fn(aptr, bptr, len, arg);
        aptr += len;
        bptr += len;
        aleft -= len;
        bleft -= len;
    }
    OBJ_DESTRUCT(&ait.conv);
    OBJ_DESTRUCT(&bit.conv);
    return rc;
}

static int ompi_osc_gpuic_copy_block(char *a, char *b, size_t len, void *arg)
{
    memcpy(a, b, len);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_dt_copy(void *dst, int dcount, struct ompi_datatype_t *ddt, const void *src,
                           int scount, struct ompi_datatype_t *sdt)
{
    return ompi_osc_gpuic_dt_walk(dst, dcount, ddt, (void *)src, scount, sdt,
                                  ompi_osc_gpuic_copy_block, NULL);
}
