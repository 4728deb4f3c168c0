/*
 * Datatype layouts: the bytes a (buffer, count, datatype) description touches, and a walk over
 * two descriptions with the same type signature, pairing their contiguous blocks in type-map
 * order.  Used by put/get for non-contiguous transfers and by the accumulate family to pack,
 * unpack and visit target elements.
 */
#include "ompi_config.h"

#include <stdint.h>

#include "mpi.h"
#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_gpuic.h"

/* iovecs fetched from the convertor per refill */
#define OMPI_OSC_GPUIC_IOV_BATCH 32

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

void ompi_osc_gpuic_dt_bounds(const struct ompi_datatype_t *dt, int count, ptrdiff_t *lo_p,
                              ptrdiff_t *hi_p)
{
    const opal_datatype_t *d = &dt->super;
    ptrdiff_t extent = d->ub - d->lb;
    ptrdiff_t step = extent * (ptrdiff_t)(count - 1);

    *lo_p = d->true_lb + (step < 0 ? step : 0);
    *hi_p = d->true_ub + (step > 0 ? step : 0);
}

/*
 * The blocks of one element of @p dt, as the convertor computes their addresses from base 0,
 * all lie in [true_lb, true_ub).  Open MPI computes a derived type's bounds and its blocks'
 * displacements in wrapping 64-bit arithmetic: when a constructor overflowed, the stored bounds
 * no longer enclose the blocks, and this is where that shows.
 */
static bool ompi_osc_gpuic_dt_blocks_inside(const struct ompi_datatype_t *dt)
{
    const opal_datatype_t *d = &dt->super;
    ompi_osc_gpuic_dt_iter_t it;
    char *ptr;
    size_t len;
    bool inside = true;

    ompi_osc_gpuic_dt_iter_init(&it, NULL, 1, (struct ompi_datatype_t *)dt);
    while (inside && ompi_osc_gpuic_dt_iter_next(&it, &ptr, &len)) {
        ptrdiff_t first = (ptrdiff_t)(uintptr_t)ptr, end;

        inside = len <= (size_t)PTRDIFF_MAX &&
                 !__builtin_add_overflow(first, (ptrdiff_t)len, &end) && first >= d->true_lb &&
                 end <= d->true_ub;
    }
    OBJ_DESTRUCT(&it.conv);
    return inside;
}

int ompi_osc_gpuic_dt_span(const struct ompi_datatype_t *dt, int count, bool check_blocks,
                           ptrdiff_t *lo_p, ptrdiff_t *hi_p, size_t *bytes_p)
{
    const opal_datatype_t *d = &dt->super;
    ptrdiff_t extent, step;
    size_t bytes;

    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    if (__builtin_sub_overflow(d->ub, d->lb, &extent) || d->true_lb > d->true_ub) {
        gpuic_log(GPUIC_LOG_DEBUG, "datatype bounds [%td, %td) are inverted or overflow "
                  "(a constructor's arithmetic wrapped)", d->true_lb, d->true_ub);
        return MPI_ERR_TYPE;
    }
    if (count > 0 && check_blocks && !ompi_datatype_is_contiguous_memory_layout(dt, 1) &&
        !ompi_osc_gpuic_dt_blocks_inside(dt)) {
        gpuic_log(GPUIC_LOG_DEBUG, "datatype blocks lie outside its bounds [%td, %td) "
                  "(a constructor's arithmetic wrapped)", d->true_lb, d->true_ub);
        return MPI_ERR_TYPE;
    }
    if (__builtin_mul_overflow(d->size, (size_t)count, &bytes) || bytes > (size_t)PTRDIFF_MAX ||
        __builtin_mul_overflow(extent, (ptrdiff_t)(count > 0 ? count - 1 : 0), &step) ||
        __builtin_add_overflow(d->true_lb, step < 0 ? step : 0, lo_p) ||
        __builtin_add_overflow(d->true_ub, step > 0 ? step : 0, hi_p)) {
        gpuic_log(GPUIC_LOG_DEBUG, "%d elements of a datatype of extent %td and %zu bytes "
                  "overflow 64-bit sizes", count, extent, d->size);
        return MPI_ERR_COUNT;
    }
    if (bytes_p != NULL) {
        *bytes_p = bytes;
    }
    return OMPI_SUCCESS;
}

static int ompi_osc_gpuic_range_find(ompi_osc_gpuic_module_t *module, int target,
                                     ptrdiff_t disp, int count, struct ompi_datatype_t *dt,
                                     uint64_t *raddr_p, ompi_osc_gpuic_region_t **region_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    ptrdiff_t lo, hi, offset;
    ptrdiff_t first, end;
    bool wrapped;
    int rc;

    rc = ompi_osc_gpuic_dt_span(dt, count, true, &lo, &hi, NULL);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
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
        return ompi_osc_gpuic_dynamic_resolve(module, target, (uint64_t)disp + (uint64_t)lo,
                                              (uint64_t)disp + (uint64_t)hi, region_p);
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
                  "%" PRIu64 " bytes", ompi_osc_gpuic_rank(module), first, end,
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
