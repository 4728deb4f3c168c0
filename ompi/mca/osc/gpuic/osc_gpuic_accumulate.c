/*
 * The accumulate family: MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap and their request-based forms.
 *
 * Element-wise atomicity (MPI 3.1 section 11.7.1) has to hold between every origin that updates
 * an element, whatever path each takes, so the path is chosen by what every origin sees alike:
 *
 * - all_direct windows (every process maps every peer's window): an element of 1, 2, 4 or 8
 *   bytes at a naturally aligned address is updated with a CPU compare-and-swap loop on the
 *   aligned word holding it; any other element (16-byte and pair types, misaligned ones) is
 *   updated under the target's accumulate lock.  Both choices depend only on the element's type
 *   and address, so every origin makes the same one.
 * - every other window: each call takes the target's accumulate lock, gets the target data,
 *   combines it locally and puts it back before releasing the lock.
 *
 * Every call completes at the target before it returns, which also gives the default
 * accumulate ordering (rar, raw, war, waw) between calls from one origin.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/osc/base/osc_base_obj_convert.h"
#include "ompi/op/op.h"

#include "osc_gpuic.h"

/* One accumulate-family call, as the element walkers see it. */
typedef struct ompi_osc_gpuic_acc {
    ompi_osc_gpuic_module_t *module;
    int                     target;
    ompi_osc_gpuic_region_t *region;
    struct ompi_op_t        *op;
    struct ompi_datatype_t  *prim;  /* the predefined element type */
    size_t                  esize;  /* its size */
    int                     nelem;  /* elements at the target */
    /* Local buffers hold nelem elements of prim at its extent, the layout MPI's reduction
     * functions take (pair types have padding). */
    char                    *obuf;  /* origin elements; NULL for MPI_NO_OP */
    char                    *old;   /* receives the old target elements */
    bool                    locked; /* some element needed the accumulate lock */
} ompi_osc_gpuic_acc_t;

static bool ompi_osc_gpuic_op_is(const struct ompi_op_t *op, const struct ompi_op_t *which)
{
    return op == which;
}

/* new = origin (op) old, for one or more packed elements; old is left as it was. */
static void ompi_osc_gpuic_acc_combine(const ompi_osc_gpuic_acc_t *acc, const char *origin,
                                       char *inout, size_t nelem)
{
    if (ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_replace.op)) {
        memcpy(inout, origin, nelem * acc->esize);
    } else if (!ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_no_op.op)) {
        ompi_op_reduce(acc->op, (void *)origin, inout, nelem, acc->prim);
    }
}

/*
 * The aligned 4- or 8-byte word holding a naturally aligned element of 1, 2, 4 or 8 bytes,
 * updated by compare-and-swap.  Its value is handled as an image: the word's bytes in memory
 * order in the first 4 or 8 bytes of a uint64_t, so the element sits at byte @p shift of the
 * image whatever the word size.
 */
typedef struct ompi_osc_gpuic_word {
    uintptr_t addr;
    size_t    size;
    size_t    shift;
} ompi_osc_gpuic_word_t;

static ompi_osc_gpuic_word_t ompi_osc_gpuic_word_of(char *t, size_t esize)
{
    ompi_osc_gpuic_word_t w;

    w.size = esize == 8 ? 8 : 4;
    w.addr = (uintptr_t)t & ~(uintptr_t)(w.size - 1);
    w.shift = (uintptr_t)t - w.addr;
    return w;
}

static uint64_t ompi_osc_gpuic_word_load(const ompi_osc_gpuic_word_t *w)
{
    uint64_t image = 0;

    if (w->size == 8) {
        image = __atomic_load_n((uint64_t *)w->addr, __ATOMIC_ACQUIRE);
    } else {
        uint32_t v = __atomic_load_n((uint32_t *)w->addr, __ATOMIC_ACQUIRE);

        memcpy(&image, &v, sizeof(v));
    }
    return image;
}

/* Replaces *cur by next if the word still holds *cur; else loads what it holds into *cur. */
static bool ompi_osc_gpuic_word_cas(const ompi_osc_gpuic_word_t *w, uint64_t *cur, uint64_t next)
{
    uint32_t cur32, next32;
    bool done;

    if (w->size == 8) {
        return __atomic_compare_exchange_n((uint64_t *)w->addr, cur, next, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    memcpy(&cur32, cur, sizeof(cur32));
    memcpy(&next32, &next, sizeof(next32));
    done = __atomic_compare_exchange_n((uint32_t *)w->addr, &cur32, next32, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    memcpy(cur, &cur32, sizeof(cur32));
    return done;
}

/*
 * Updates one naturally aligned element of 1, 2, 4 or 8 bytes at @p t with a compare-and-swap
 * loop on the aligned word holding it; the other bytes of that word are written back as read.
 */
static void ompi_osc_gpuic_acc_elem_atomic(const ompi_osc_gpuic_acc_t *acc, char *t,
                                           const char *origin, char *old)
{
    ompi_osc_gpuic_word_t w = ompi_osc_gpuic_word_of(t, acc->esize);
    bool no_op = ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_no_op.op);
    uint64_t cur = ompi_osc_gpuic_word_load(&w), next;

    do {
        next = cur;
        memcpy(old, (char *)&next + w.shift, acc->esize);
        if (no_op) {
            return;
        }
        ompi_osc_gpuic_acc_combine(acc, origin, (char *)&next + w.shift, 1);
    } while (!ompi_osc_gpuic_word_cas(&w, &cur, next));
}

static bool ompi_osc_gpuic_acc_atomic_class(size_t esize, const char *t)
{
    return (esize == 1 || esize == 2 || esize == 4 || esize == 8) &&
           ((uintptr_t)t % esize) == 0;
}

/* dt_walk callback on all_direct windows for gap-free elements of 1, 2, 4 or 8 bytes: a walks
 * the old-value buffer (whole elements), b the mapped target block. */
static int ompi_osc_gpuic_acc_direct_block(char *a, char *b, size_t len, void *arg)
{
    ompi_osc_gpuic_acc_t *acc = arg;
    size_t off = (size_t)(a - acc->old), n = len / acc->esize, k;
    const char *origin = acc->obuf != NULL ? acc->obuf + off : NULL;
    int rc;

    /* Every element of a block has the same size and alignment class. */
    if (ompi_osc_gpuic_acc_atomic_class(acc->esize, b)) {
        for (k = 0; k < n; ++k) {
            ompi_osc_gpuic_acc_elem_atomic(acc, b + k * acc->esize,
                                           origin != NULL ? origin + k * acc->esize : NULL,
                                           a + k * acc->esize);
        }
        return OMPI_SUCCESS;
    }
    acc->locked = true;
    rc = ompi_osc_gpuic_acc_lock(acc->module, acc->target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    memcpy(a, b, len);
    if (origin != NULL) {
        ompi_osc_gpuic_acc_combine(acc, origin, b, n);
    }
    opal_atomic_wmb(); /* the update is visible before the lock reads free */
    return ompi_osc_gpuic_acc_unlock(acc->module, acc->target);
}

/* Lock, get, combine, put, unlock: the path of windows that are not all_direct, and of
 * elements that CPU atomics cannot cover. */
static int ompi_osc_gpuic_acc_locked(ompi_osc_gpuic_acc_t *acc, size_t bytes, uint64_t raddr,
                                     int tcount, struct ompi_datatype_t *tdt)
{
    char *next = NULL;
    int rc, rc_unlock;

    rc = ompi_osc_gpuic_acc_lock(acc->module, acc->target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    rc = ompi_osc_gpuic_rma_layout(acc->module, acc->target, acc->region, false, acc->old,
                                   acc->nelem, acc->prim, raddr, tcount, tdt);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_peer_flush(acc->module, acc->target);
    }
    if (rc == OMPI_SUCCESS && acc->obuf != NULL) {
        next = malloc(bytes);
        if (next == NULL) {
            rc = MPI_ERR_NO_MEM;
        } else {
            memcpy(next, acc->old, bytes);
            ompi_osc_gpuic_acc_combine(acc, acc->obuf, next, acc->nelem);
            rc = ompi_osc_gpuic_rma_layout(acc->module, acc->target, acc->region, true, next,
                                           acc->nelem, acc->prim, raddr, tcount, tdt);
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_peer_flush(acc->module, acc->target);
            }
        }
    }
    opal_atomic_wmb();
    rc_unlock = ompi_osc_gpuic_acc_unlock(acc->module, acc->target);
    free(next);
    return rc != OMPI_SUCCESS ? rc : rc_unlock;
}

/*
 * The fast path of fetch_and_op and single-element accumulates on all_direct windows: one
 * predefined element on every side, updated in place with the CPU atomics of the general path
 * (so the two paths stay atomic with each other).  Returns false when the call does not
 * qualify.
 */
static bool ompi_osc_gpuic_acc_single(ompi_osc_gpuic_acc_t *acc, const void *origin, int ocount,
                                      struct ompi_datatype_t *odt, void *result, int rcount,
                                      struct ompi_datatype_t *rdt, uint64_t raddr, int tcount,
                                      struct ompi_datatype_t *tdt, bool has_origin,
                                      bool fetching)
{
    char *t, scratch[8];
    ptrdiff_t lb, extent;

    /* Buffers at MPI_BOTTOM (address 0 plus absolute datatypes) take the general path. */
    if (!acc->module->all_direct || tcount != 1 || !ompi_datatype_is_predefined(tdt) ||
        (gpuic_cuda_available() &&
         (gpuic_cuda_is_device_ptr(origin) || gpuic_cuda_is_device_ptr(result))) ||
        (has_origin && (origin == NULL || ocount != 1 || odt != tdt)) ||
        (fetching && (result == NULL || rcount != 1 || rdt != tdt))) {
        return false;
    }
    ompi_datatype_type_size(tdt, &acc->esize);
    ompi_datatype_get_extent(tdt, &lb, &extent);
    t = (char *)acc->region->direct + (raddr - acc->region->base);
    if ((size_t)extent != acc->esize || !ompi_osc_gpuic_acc_atomic_class(acc->esize, t)) {
        return false;
    }
    acc->prim = tdt;
    ompi_osc_gpuic_acc_elem_atomic(acc, t, has_origin ? origin : NULL,
                                   fetching ? result : scratch);
    return true;
}

/*
 * The common body: origin (NULL for MPI_NO_OP) combined into the target, old target data into
 * result (NULL when not fetching).
 */
static int ompi_osc_gpuic_acc_run(ompi_osc_gpuic_module_t *module, const void *origin,
                                  int ocount, struct ompi_datatype_t *odt, void *result,
                                  int rcount, struct ompi_datatype_t *rdt, int target,
                                  ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt,
                                  struct ompi_op_t *op)
{
    ompi_osc_gpuic_acc_t acc = {module, target, NULL, op, NULL, 0, 0, NULL, NULL, false};
    ompi_osc_gpuic_bounce_t ob = {0}, rb = {0};
    bool has_origin, fetching;
    int rc_b;
    size_t tsize, osize, rsize, nbytes, bytes;
    ptrdiff_t lb, extent;
    uint32_t prim_count;
    uint64_t raddr;
    int rc;

    rc = ompi_osc_gpuic_begin_op(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ompi_datatype_type_size(tdt, &tsize);
    nbytes = tsize * (size_t)tcount;
    /* Whether there is an origin or a result is told by the op and the result datatype, not
     * by the addresses: MPI_BOTTOM (NULL) with absolute datatypes is a valid buffer. */
    has_origin = !ompi_osc_gpuic_op_is(op, &ompi_mpi_op_no_op.op);
    fetching = rdt != NULL;
    if (has_origin) {
        ompi_datatype_type_size(odt, &osize);
        if (osize * (size_t)ocount != nbytes) {
            return MPI_ERR_TYPE;
        }
    }
    if (fetching) {
        ompi_datatype_type_size(rdt, &rsize);
        if (rsize * (size_t)rcount != nbytes) {
            return MPI_ERR_TYPE;
        }
    }
    if (nbytes == 0) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_check_range(module, target, tdisp, tcount, tdt, &raddr, &acc.region);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (ompi_osc_gpuic_acc_single(&acc, origin, ocount, odt, result, rcount, rdt, raddr, tcount,
                                  tdt, has_origin, fetching)) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_atomic, 1);
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_base_get_primitive_type_info(tdt, &acc.prim, &prim_count);
    if (rc != OMPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    ompi_datatype_type_size(acc.prim, &acc.esize);
    ompi_datatype_get_extent(acc.prim, &lb, &extent);
    acc.nelem = (int)(nbytes / acc.esize);
    bytes = (size_t)acc.nelem * (size_t)extent;

    acc.old = malloc(bytes);
    acc.obuf = has_origin ? malloc(bytes) : NULL;
    if (acc.old == NULL || (has_origin && acc.obuf == NULL)) {
        rc = MPI_ERR_NO_MEM;
        goto out_free;
    }
    /* origin and result may be device memory: work on host copies */
    if (has_origin) {
        rc = ompi_osc_gpuic_bounce_in(&ob, (void *)origin, ocount, odt);
    }
    if (rc == OMPI_SUCCESS && fetching) {
        rc = ompi_osc_gpuic_bounce_in(&rb, result, rcount, rdt);
    }
    if (rc != OMPI_SUCCESS) {
        goto out_free;
    }
    if (has_origin) {
        rc = ompi_osc_gpuic_dt_copy(acc.obuf, acc.nelem, acc.prim, ob.buf, ocount, odt);
        if (rc != OMPI_SUCCESS) {
            goto out_free;
        }
    }
    if (module->all_direct && (size_t)extent == acc.esize &&
        (acc.esize == 1 || acc.esize == 2 || acc.esize == 4 || acc.esize == 8)) {
        rc = ompi_osc_gpuic_dt_walk(acc.old, acc.nelem, acc.prim,
                                    (char *)acc.region->direct + (raddr - acc.region->base),
                                    tcount, tdt,
                                    ompi_osc_gpuic_acc_direct_block, &acc);
    } else {
        acc.locked = true;
        rc = ompi_osc_gpuic_acc_locked(&acc, bytes, raddr, tcount, tdt);
    }
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(acc.locked ? &mca_osc_gpuic_component.counters.accumulates_locked
                                        : &mca_osc_gpuic_component.counters.accumulates_atomic,
                             1);
    }
    if (rc == OMPI_SUCCESS && fetching) {
        rc = ompi_osc_gpuic_dt_copy(rb.buf, rcount, rdt, acc.old, acc.nelem, acc.prim);
    }
out_free:
    rc_b = ompi_osc_gpuic_bounce_out(&ob, false);
    rc = rc != OMPI_SUCCESS ? rc : rc_b;
    rc_b = ompi_osc_gpuic_bounce_out(&rb, rc == OMPI_SUCCESS);
    rc = rc != OMPI_SUCCESS ? rc : rc_b;
    free(acc.old);
    free(acc.obuf);
    return rc;
}

int ompi_osc_gpuic_accumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_run(ompi_osc_gpuic_module(win), origin_addr, origin_count,
                                  origin_dt, NULL, 0, NULL, target, target_disp, target_count,
                                  target_dt, op);
}

int ompi_osc_gpuic_get_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win)
{
    return ompi_osc_gpuic_acc_run(ompi_osc_gpuic_module(win), origin_addr, origin_count,
                                  origin_dt, result_addr, result_count, result_dt, target,
                                  target_disp, target_count, target_dt, op);
}

int ompi_osc_gpuic_fetch_and_op(const void *origin_addr, void *result_addr,
                                struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                                struct ompi_op_t *op, struct ompi_win_t *win)
{
    /* MPI 3.1 section 11.3.4.3: one element of a predefined datatype.  Open MPI does not
     * check it. */
    if (!ompi_datatype_is_predefined(dt)) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Fetch_and_op with a derived datatype");
        return MPI_ERR_TYPE;
    }
    return ompi_osc_gpuic_acc_run(ompi_osc_gpuic_module(win), origin_addr, 1, dt, result_addr,
                                  1, dt, target, target_disp, 1, dt, op);
}

/* Compare-and-swap of one element at a mapped, naturally aligned address. */
static void ompi_osc_gpuic_cas_atomic(char *t, const void *value, const void *compare,
                                      void *result, size_t esize)
{
    ompi_osc_gpuic_word_t w = ompi_osc_gpuic_word_of(t, esize);
    uint64_t cur = ompi_osc_gpuic_word_load(&w), next;

    do {
        next = cur;
        memcpy(result, (char *)&next + w.shift, esize);
        if (memcmp(result, compare, esize) != 0) {
            return;
        }
        memcpy((char *)&next + w.shift, value, esize);
    } while (!ompi_osc_gpuic_word_cas(&w, &cur, next));
}

/* compare_and_swap with some buffers in device memory: through host copies of all three. */
static int ompi_osc_gpuic_cas_bounced(const void *origin_addr, const void *compare_addr,
                                      void *result_addr, struct ompi_datatype_t *dt, int target,
                                      ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_gpuic_bounce_t ob = {0}, cb = {0}, rb = {0};
    int rc, rc_b;

    rc = ompi_osc_gpuic_bounce_in(&ob, (void *)origin_addr, 1, dt);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_bounce_in(&cb, (void *)compare_addr, 1, dt);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_bounce_in(&rb, result_addr, 1, dt);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_compare_and_swap(ob.buf, cb.buf, rb.buf, dt, target, target_disp,
                                             win);
    }
    rc_b = ompi_osc_gpuic_bounce_out(&rb, rc == OMPI_SUCCESS);
    rc = rc != OMPI_SUCCESS ? rc : rc_b;
    (void)ompi_osc_gpuic_bounce_out(&cb, false);
    (void)ompi_osc_gpuic_bounce_out(&ob, false);
    return rc;
}

int ompi_osc_gpuic_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                    void *result_addr, struct ompi_datatype_t *dt, int target,
                                    ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    ompi_osc_gpuic_region_t *region;
    size_t esize;
    uint64_t raddr;
    char *t;
    int rc, rc_unlock;

    /* MPI 3.1 section 11.3.4.4: a predefined datatype (Open MPI does not check it). */
    if (!ompi_datatype_is_predefined(dt)) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Compare_and_swap with a derived datatype");
        return MPI_ERR_TYPE;
    }
    rc = ompi_osc_gpuic_begin_op(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    rc = ompi_osc_gpuic_check_range(module, target, target_disp, 1, dt, &raddr, &region);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ompi_datatype_type_size(dt, &esize);
    if (gpuic_cuda_available() &&
        (gpuic_cuda_is_device_ptr(origin_addr) || gpuic_cuda_is_device_ptr(compare_addr) ||
         gpuic_cuda_is_device_ptr(result_addr))) {
        return ompi_osc_gpuic_cas_bounced(origin_addr, compare_addr, result_addr, dt, target,
                                          target_disp, win);
    }
    if (module->all_direct) {
        t = (char *)region->direct + (raddr - region->base);
        if (ompi_osc_gpuic_acc_atomic_class(esize, t)) {
            ompi_osc_gpuic_cas_atomic(t, origin_addr, compare_addr, result_addr, esize);
            ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_atomic, 1);
            return OMPI_SUCCESS;
        }
    }
    /* Under the accumulate lock, like every other update of such an element. */
    rc = ompi_osc_gpuic_acc_lock(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    rc = ompi_osc_gpuic_rma_layout(module, target, region, false, result_addr, 1, dt, raddr, 1,
                                   dt);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_peer_flush(module, target);
    }
    if (rc == OMPI_SUCCESS && memcmp(result_addr, compare_addr, esize) == 0) {
        rc = ompi_osc_gpuic_rma_layout(module, target, region, true, (void *)origin_addr, 1, dt,
                                       raddr, 1, dt);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_peer_flush(module, target);
        }
    }
    opal_atomic_wmb();
    rc_unlock = ompi_osc_gpuic_acc_unlock(module, target);
    rc = rc != OMPI_SUCCESS ? rc : rc_unlock;
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_locked, 1);
    }
    return rc;
}

int ompi_osc_gpuic_raccumulate(const void *origin_addr, int origin_count,
                               struct ompi_datatype_t *origin_dt, int target,
                               ptrdiff_t target_disp, int target_count,
                               struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                               struct ompi_win_t *win, struct ompi_request_t **request)
{
    int rc = ompi_osc_gpuic_check_passive(ompi_osc_gpuic_module(win));

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_accumulate(origin_addr, origin_count, origin_dt, target, target_disp,
                                       target_count, target_dt, op, win);
    }
    if (rc == OMPI_SUCCESS) {
        /* The operation is complete at the target already. */
        rc = ompi_osc_gpuic_request_completed(win, request);
    }
    return rc;
}

int ompi_osc_gpuic_rget_accumulate(const void *origin_addr, int origin_count,
                                   struct ompi_datatype_t *origin_dt, void *result_addr,
                                   int result_count, struct ompi_datatype_t *result_dt,
                                   int target, ptrdiff_t target_disp, int target_count,
                                   struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                   struct ompi_win_t *win, struct ompi_request_t **request)
{
    int rc = ompi_osc_gpuic_check_passive(ompi_osc_gpuic_module(win));

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_get_accumulate(origin_addr, origin_count, origin_dt, result_addr,
                                           result_count, result_dt, target, target_disp,
                                           target_count, target_dt, op, win);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_request_completed(win, request);
    }
    return rc;
}
