/*
 * The accumulate family: MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap and their request-based forms.
 *
 * Element-wise atomicity (MPI 3.1 section 11.7.1) has to hold between every origin that updates
 * an element, whatever path each takes.  Two paths, coordinated by the target's accumulate lock
 * word (osc_gpuic_state.c), which both claim with one atomic:
 *
 * - single-element calls on a naturally aligned element that atomics can cover (1, 2, 4 or 8
 *   bytes on all_direct windows, 4 or 8 bytes through UCX) announce themselves in the lock
 *   word's count (ompi_osc_gpuic_acc_enter), update the element with one CPU or UCX atomic (or
 *   a compare-and-swap loop), and leave; they run concurrently with each other.
 * - every other call takes the lock word's holder half (ompi_osc_gpuic_acc_lock), which also
 *   waits out the single-element atomics in flight, and then combines whole blocks at once:
 *   in place where this process maps the target's memory, else in local chunks that are
 *   fetched, combined and written back: by cross-memory copies for a same-node peer, else
 *   through UCX with several in flight.
 *
 * Target elements are visited in type-map order and each is combined where it lies, so a
 * target datatype that names an element twice (erroneous in MPI 3.1, but made by real
 * libraries) adds every contribution; a fetching call reads every element before it combines
 * any, so each result is the target's content before the call, as MPI 3.1 section 11.3.4
 * words it and as Open MPI's other components answer.
 * Every call completes at the target before it returns, which also gives the default
 * accumulate ordering (rar, raw, war, waw) between calls from one origin.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/osc/base/osc_base_obj_convert.h"
#include "ompi/op/op.h"

#include "osc_gpuic.h"

/* Chunks of a fetch-combine-write (UCX or cross-memory copies), and how many UCX ones are in
 * flight at once: few large requests, since without a transport that reaches user memory UCX
 * serves each through the target's progress, and a ring that stays in cache. */
#define OMPI_OSC_GPUIC_ACC_CHUNK (512 * 1024)
#define OMPI_OSC_GPUIC_ACC_DEPTH 2
/* Contiguous pieces one element of a type with gaps (pair types) may come in. */
#define OMPI_OSC_GPUIC_ACC_PIECES 16
/* Largest element extent (MPI_LONG_DOUBLE_INT, MPI_C_LONG_DOUBLE_COMPLEX: 32 bytes). */
#define OMPI_OSC_GPUIC_ACC_ELEM_MAX 64

/* One accumulate-family call, as the combining walkers see it. */
typedef struct ompi_osc_gpuic_acc {
    ompi_osc_gpuic_module_t *module;
    int                     target;
    ompi_osc_gpuic_region_t *region;
    struct ompi_op_t        *op;
    struct ompi_datatype_t  *prim;   /* the predefined element type */
    size_t                  esize;   /* its size */
    size_t                  extent;  /* its extent (larger than esize for pair types) */
    size_t                  nelem;   /* elements at the target */
    /* Packed buffers hold nelem elements of prim at its extent, the layout MPI's reduction
     * functions take. */
    const char              *obuf;   /* origin elements; NULL for MPI_NO_OP */
    char                    *old;    /* receives the old target elements; NULL: not fetching */
    /* The element of a type with gaps being assembled from its pieces, in type-map order: set
     * up by ompi_osc_gpuic_acc_apply() (left uninitialised before, it is large). */
    int                     npieces;
    size_t                  got;
    char                    elem[OMPI_OSC_GPUIC_ACC_ELEM_MAX];
    char                    *piece_at[OMPI_OSC_GPUIC_ACC_PIECES];
    size_t                  piece_off[OMPI_OSC_GPUIC_ACC_PIECES];
    size_t                  piece_len[OMPI_OSC_GPUIC_ACC_PIECES];
} ompi_osc_gpuic_acc_t;

/* Sets the fields every path reads (not the element assembly state). */
static void ompi_osc_gpuic_acc_init(ompi_osc_gpuic_acc_t *acc, ompi_osc_gpuic_module_t *module,
                                    int target, struct ompi_op_t *op)
{
    acc->module = module;
    acc->target = target;
    acc->region = NULL;
    acc->op = op;
    acc->prim = NULL;
    acc->esize = acc->extent = acc->nelem = 0;
    acc->obuf = NULL;
    acc->old = NULL;
    acc->npieces = 0;
    acc->got = 0;
}

/* Addresses of the packed side of a walk are offsets from here; never dereferenced. */
static char ompi_osc_gpuic_acc_anchor[1];

static bool ompi_osc_gpuic_op_is(const struct ompi_op_t *op, const struct ompi_op_t *which)
{
    return op == which;
}

/* Whether Open MPI's table of reduction functions has @p op for the predefined type @p prim. */
static bool ompi_osc_gpuic_op_defined(struct ompi_op_t *op, struct ompi_datatype_t *prim)
{
    char *msg = NULL;
    bool ok = ompi_op_is_valid(op, prim, &msg, "accumulate");

    free(msg);
    return ok;
}

/*
 * Whether an accumulate-family call may apply @p op to elements of @p prim (predefined): MPI 3.1
 * section 11.3.4 allows MPI_REPLACE and MPI_NO_OP on any type and a predefined reduction where
 * it is defined for the type (here: where Open MPI's reductions define it, as MPI_Reduce does),
 * never a user-defined op.  Open MPI checks MPI_Fetch_and_op for none of it, and an op without
 * a function for the type would be called through a null pointer.
 */
static bool ompi_osc_gpuic_acc_op_valid(struct ompi_op_t *op, struct ompi_datatype_t *prim)
{
    if (ompi_osc_gpuic_op_is(op, &ompi_mpi_op_replace.op) ||
        ompi_osc_gpuic_op_is(op, &ompi_mpi_op_no_op.op)) {
        return true;
    }
    return ompi_op_is_intrinsic(op) && ompi_osc_gpuic_op_defined(op, prim);
}

/* inout = origin (op) inout, for @p nelem elements at the prim's extent. */
static void ompi_osc_gpuic_acc_combine(const ompi_osc_gpuic_acc_t *acc, const char *origin,
                                       char *inout, size_t nelem)
{
    if (ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_replace.op)) {
        memcpy(inout, origin, nelem * acc->extent);
    } else if (!ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_no_op.op)) {
        ompi_op_reduce(acc->op, (void *)origin, inout, nelem, acc->prim);
    }
}

/* The assembled element @p e is complete: old value out, combine, pieces written back. */
static void ompi_osc_gpuic_acc_elem_done(ompi_osc_gpuic_acc_t *acc, size_t e)
{
    int i;

    if (acc->old != NULL) {
        memcpy(acc->old + e * acc->extent, acc->elem, acc->extent);
    }
    if (acc->obuf != NULL) {
        ompi_osc_gpuic_acc_combine(acc, acc->obuf + e * acc->extent, acc->elem, 1);
        for (i = 0; i < acc->npieces; ++i) {
            memcpy(acc->piece_at[i], acc->elem + acc->piece_off[i], acc->piece_len[i]);
        }
    }
    acc->npieces = 0;
    acc->got = 0;
}

/*
 * dt_walk callback combining in place: a walks the packed elements (offsets from the anchor),
 * b the target's bytes (a mapping of the target, or a local image of them).  Blocks of a type
 * without gaps hold whole elements and are combined at once; a type with gaps is assembled
 * element by element.  Each element is combined where it lies before the next is read.
 */
static int ompi_osc_gpuic_acc_apply_block(char *a, char *b, size_t len, void *arg)
{
    ompi_osc_gpuic_acc_t *acc = arg;
    size_t off = (size_t)(a - ompi_osc_gpuic_acc_anchor), e, sub, take;

    if (acc->extent == acc->esize) {
        if (acc->old != NULL) {
            memcpy(acc->old + off, b, len);
        }
        if (acc->obuf != NULL) {
            ompi_osc_gpuic_acc_combine(acc, acc->obuf + off, b, len / acc->esize);
        }
        return OMPI_SUCCESS;
    }
    while (len > 0) {
        e = off / acc->extent;
        sub = off % acc->extent;
        take = acc->extent - sub < len ? acc->extent - sub : len;
        if (acc->npieces == OMPI_OSC_GPUIC_ACC_PIECES || sub + take > sizeof(acc->elem)) {
            gpuic_log(GPUIC_LOG_ERROR, "accumulate element of %zu bytes in too many pieces",
                      acc->esize);
            return MPI_ERR_INTERN;
        }
        memcpy(acc->elem + sub, b, take);
        acc->piece_at[acc->npieces] = b;
        acc->piece_off[acc->npieces] = sub;
        acc->piece_len[acc->npieces] = take;
        acc->npieces++;
        acc->got += take;
        if (acc->got >= acc->esize) {
            ompi_osc_gpuic_acc_elem_done(acc, e);
        }
        off += take;
        b += take;
        len -= take;
    }
    return OMPI_SUCCESS;
}

/*
 * Combines in place over the target layout (@p tbase, tcount, tdt), addressable here.  A
 * fetching call over a layout that is not one contiguous range walks it twice, reading every
 * old element first and then combining: a layout that names an element twice must return its
 * value from before the call both times.  The caller holds the accumulate lock, so no other
 * update comes between the two walks.
 */
static int ompi_osc_gpuic_acc_apply(ompi_osc_gpuic_acc_t *acc, char *tbase, int tcount,
                                    struct ompi_datatype_t *tdt)
{
    bool contiguous = ompi_datatype_is_contiguous_memory_layout(tdt, tcount);
    const char *obuf = acc->obuf;
    char *old = acc->old;
    ptrdiff_t lo, hi;
    int rc;

    acc->npieces = 0;
    acc->got = 0;
    if (acc->extent == acc->esize && contiguous) {
        ompi_osc_gpuic_dt_bounds(tdt, tcount, &lo, &hi);
        return ompi_osc_gpuic_acc_apply_block(ompi_osc_gpuic_acc_anchor, tbase + lo,
                                              acc->nelem * acc->esize, acc);
    }
    if (contiguous || old == NULL || obuf == NULL) {
        return ompi_osc_gpuic_dt_walk(ompi_osc_gpuic_acc_anchor, (int)acc->nelem, acc->prim,
                                      tbase, tcount, tdt, ompi_osc_gpuic_acc_apply_block, acc);
    }
    acc->obuf = NULL; /* the reading walk */
    rc = ompi_osc_gpuic_dt_walk(ompi_osc_gpuic_acc_anchor, (int)acc->nelem, acc->prim, tbase,
                                tcount, tdt, ompi_osc_gpuic_acc_apply_block, acc);
    acc->obuf = obuf;
    if (rc == OMPI_SUCCESS) {
        acc->old = NULL; /* the combining walk */
        acc->npieces = 0;
        acc->got = 0;
        rc = ompi_osc_gpuic_dt_walk(ompi_osc_gpuic_acc_anchor, (int)acc->nelem, acc->prim,
                                    tbase, tcount, tdt, ompi_osc_gpuic_acc_apply_block, acc);
        acc->old = old;
    }
    return rc;
}

/* Counts a UCX operation to the target for the flush that completes it. */
static void ompi_osc_gpuic_acc_issued(ompi_osc_gpuic_acc_t *acc)
{
    __atomic_fetch_add(&acc->module->peers[acc->target].ucx_issued, 1, __ATOMIC_ACQ_REL);
    __atomic_fetch_add(&acc->module->ucx_issued, 1, __ATOMIC_ACQ_REL);
}

/* A chunk of the pipelined combine: fetched, combined, written back, then free again. */
typedef enum {
    OMPI_OSC_GPUIC_ACC_SLOT_FREE,
    OMPI_OSC_GPUIC_ACC_SLOT_GETTING,
    OMPI_OSC_GPUIC_ACC_SLOT_GOT,
    OMPI_OSC_GPUIC_ACC_SLOT_PUTTING
} ompi_osc_gpuic_acc_slot_state_t;

typedef struct ompi_osc_gpuic_acc_slot {
    gpuic_rma_completion_t          comp;   /* first: the callback recovers the slot */
    ompi_osc_gpuic_acc_slot_state_t state;
    gpuic_status_t                  *error; /* the pipeline's first error */
    char                            *buf;
    size_t                          off, len;
} ompi_osc_gpuic_acc_slot_t;

static void ompi_osc_gpuic_acc_slot_cb(gpuic_rma_completion_t *comp, gpuic_status_t status)
{
    ompi_osc_gpuic_acc_slot_t *slot = (ompi_osc_gpuic_acc_slot_t *)comp;

    if (status != GPUIC_OK && *slot->error == GPUIC_OK) {
        *slot->error = status;
    }
    slot->state = slot->state == OMPI_OSC_GPUIC_ACC_SLOT_GETTING ? OMPI_OSC_GPUIC_ACC_SLOT_GOT
                                                                 : OMPI_OSC_GPUIC_ACC_SLOT_FREE;
}

/*
 * Contiguous target bytes [raddr, raddr + total) of a same-node peer read and written by
 * cross-memory copies, a chunk at a time (each copy is complete on return: no target progress,
 * no flush).  GPUIC_ERR_UNSUPPORTED in *status_p, with nothing done, when the system refuses
 * the first copy: the caller goes through UCX then.  The caller holds the accumulate lock.
 */
static int ompi_osc_gpuic_acc_cma(ompi_osc_gpuic_acc_t *acc, uint64_t raddr, size_t total,
                                  size_t chunk, gpuic_status_t *status_p)
{
    ompi_osc_gpuic_peer_t *peer = &acc->module->peers[acc->target];
    gpuic_status_t status = GPUIC_OK;
    char *buf = malloc(chunk);
    size_t off, len;
    bool replace_only = acc->old == NULL && acc->obuf != NULL &&
                        ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_replace.op);
    int rc = OMPI_SUCCESS;

    *status_p = GPUIC_OK;
    if (buf == NULL) {
        return MPI_ERR_NO_MEM;
    }
    rc = ompi_osc_gpuic_peer_settle(acc->module, acc->target);
    for (off = 0; rc == OMPI_SUCCESS && status == GPUIC_OK && off < total; off += len) {
        len = total - off < chunk ? total - off : chunk;
        /* a REPLACE that fetches nothing overwrites whole elements: no need to read them */
        if (!replace_only) {
            status = gpuic_cma_copy(peer->cma_pid, buf, raddr + off, len, 0);
        }
        if (status == GPUIC_OK) {
            /* whole elements of a type without gaps: it cannot fail */
            (void)ompi_osc_gpuic_acc_apply_block(ompi_osc_gpuic_acc_anchor + off, buf, len, acc);
            if (acc->obuf != NULL) {
                status = gpuic_cma_copy(peer->cma_pid, buf, raddr + off, len, 1);
            }
        }
        if (status == GPUIC_ERR_UNSUPPORTED && off == 0) {
            /* refused at the first copy, which moved nothing */
            *status_p = status;
            break;
        }
    }
    free(buf);
    if (rc == OMPI_SUCCESS && status != GPUIC_OK && *status_p == GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "accumulate by cross-memory copy to rank %d failed: %s",
                  acc->target, gpuic_status_string(status));
        rc = ompi_osc_gpuic_error(status);
    }
    return rc;
}

/*
 * Contiguous target bytes [raddr, raddr + nelem * esize): by cross-memory copies where the
 * peer takes them (osc_gpuic_cma_min_bytes not negative), else through UCX, chunks fetched,
 * combined and written back with up to OMPI_OSC_GPUIC_ACC_DEPTH in flight, then flushed.  The
 * caller holds the target's accumulate lock.
 */
static int ompi_osc_gpuic_acc_pipeline(ompi_osc_gpuic_acc_t *acc, uint64_t raddr)
{
    ompi_osc_gpuic_peer_t *peer = &acc->module->peers[acc->target];
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    ompi_osc_gpuic_acc_slot_t slots[OMPI_OSC_GPUIC_ACC_DEPTH];
    size_t total = acc->nelem * acc->esize, issued = 0, done = 0;
    size_t chunk = OMPI_OSC_GPUIC_ACC_CHUNK / acc->esize * acc->esize;
    gpuic_status_t error = GPUIC_OK, status;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    bool busy, moved;
    char *ring;
    int i, rc;

    if (chunk > total) {
        chunk = total;
    }
    /* every size: a fetch and a write-back by copy finish on return, where through UCX they
     * are two transfers and a flush */
    if (__atomic_load_n(&peer->cma_pid, __ATOMIC_RELAXED) > 0 &&
        mca_osc_gpuic_component.cma_min_bytes >= 0) {
        rc = ompi_osc_gpuic_acc_cma(acc, raddr, total, chunk, &status);
        if (status != GPUIC_ERR_UNSUPPORTED) {
            return rc;
        }
        /* The system refused (a changed ptrace policy): UCX from now on. */
        __atomic_store_n(&peer->cma_pid, 0, __ATOMIC_RELAXED);
    }
    ring = malloc(chunk * OMPI_OSC_GPUIC_ACC_DEPTH);
    if (ring == NULL) {
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < OMPI_OSC_GPUIC_ACC_DEPTH; ++i) {
        slots[i].comp.cb = ompi_osc_gpuic_acc_slot_cb;
        slots[i].state = OMPI_OSC_GPUIC_ACC_SLOT_FREE;
        slots[i].error = &error;
        slots[i].buf = ring + (size_t)i * chunk;
    }
    /* Runs until every chunk is combined and nothing is in flight (also after an error: the
     * ring must outlive every transfer into or out of it). */
    for (;;) {
        moved = false;
        busy = false;
        for (i = 0; i < OMPI_OSC_GPUIC_ACC_DEPTH; ++i) {
            ompi_osc_gpuic_acc_slot_t *slot = &slots[i];

            if (slot->state == OMPI_OSC_GPUIC_ACC_SLOT_FREE && issued < total &&
                error == GPUIC_OK) {
                slot->off = issued;
                slot->len = total - issued < chunk ? total - issued : chunk;
                issued += slot->len;
                slot->state = OMPI_OSC_GPUIC_ACC_SLOT_GETTING;
                status = gpuic_rma_get_nb(peer->ep, slot->buf, slot->len, raddr + slot->off,
                                          acc->region->rkey, &slot->comp);
                ompi_osc_gpuic_acc_issued(acc);
                if (status == GPUIC_OK) {
                    slot->state = OMPI_OSC_GPUIC_ACC_SLOT_GOT;
                } else if (status != GPUIC_INPROGRESS) {
                    slot->state = OMPI_OSC_GPUIC_ACC_SLOT_FREE;
                    error = status;
                }
                moved = true;
            }
            if (slot->state == OMPI_OSC_GPUIC_ACC_SLOT_GOT) {
                char *a = ompi_osc_gpuic_acc_anchor + slot->off;

                slot->state = OMPI_OSC_GPUIC_ACC_SLOT_FREE;
                if (error == GPUIC_OK) {
                    /* whole elements of a type without gaps: it cannot fail */
                    (void)ompi_osc_gpuic_acc_apply_block(a, slot->buf, slot->len, acc);
                }
                if (error == GPUIC_OK && acc->obuf != NULL) {
                    slot->state = OMPI_OSC_GPUIC_ACC_SLOT_PUTTING;
                    status = gpuic_rma_put_nb(peer->ep, slot->buf, slot->len,
                                              raddr + slot->off, acc->region->rkey,
                                              &slot->comp);
                    ompi_osc_gpuic_acc_issued(acc);
                    if (status == GPUIC_OK) {
                        slot->state = OMPI_OSC_GPUIC_ACC_SLOT_FREE;
                    } else if (status != GPUIC_INPROGRESS) {
                        slot->state = OMPI_OSC_GPUIC_ACC_SLOT_FREE;
                        error = status;
                    }
                }
                done += slot->len;
                moved = true;
            }
            busy = busy || slot->state != OMPI_OSC_GPUIC_ACC_SLOT_FREE;
        }
        if (!busy && (done == total || error != GPUIC_OK)) {
            break;
        }
        if (!moved) {
            status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));
            if (status != GPUIC_OK) {
                /* Transfers still in flight may write the ring: it is leaked, not freed. */
                gpuic_log(GPUIC_LOG_ERROR,
                          "accumulate transfers to rank %d of window %d took over %.1f s "
                          "(osc_gpuic_timeout); giving up",
                          acc->target, acc->module->id, gpuic_context_timeout(ctx));
                return ompi_osc_gpuic_error(status);
            }
        } else {
            wait = (gpuic_wait_t)GPUIC_WAIT_INIT;
        }
    }
    free(ring);
    if (error != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "accumulate transfer to rank %d failed: %s", acc->target,
                  gpuic_status_string(error));
        return ompi_osc_gpuic_error(error);
    }
    rc = acc->obuf != NULL ? ompi_osc_gpuic_peer_flush(acc->module, acc->target)
                           : OMPI_SUCCESS;
    return rc;
}

/*
 * Any target layout reached through transfers: its bytes are read into a local image of its
 * span (only the layout's own bytes travel), combined there in type-map order, and the layout
 * is written back.  The caller holds the target's accumulate lock.
 */
static int ompi_osc_gpuic_acc_image(ompi_osc_gpuic_acc_t *acc, uint64_t raddr, int tcount,
                                    struct ompi_datatype_t *tdt)
{
    ptrdiff_t lo, hi;
    char *image, *tbase;
    int rc;

    ompi_osc_gpuic_dt_bounds(tdt, tcount, &lo, &hi);
    /* Range-checked already: the span lies inside the target's region. */
    image = malloc((size_t)(hi - lo));
    if (image == NULL) {
        return MPI_ERR_NO_MEM;
    }
    tbase = image - lo;
    rc = ompi_osc_gpuic_rma_layout(acc->module, acc->target, acc->region, false, tbase, tcount,
                                   tdt, raddr, tcount, tdt);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_peer_flush(acc->module, acc->target);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_peer_flush_local(acc->module, acc->target);
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_acc_apply(acc, tbase, tcount, tdt);
    }
    if (rc == OMPI_SUCCESS && acc->obuf != NULL) {
        rc = ompi_osc_gpuic_rma_layout(acc->module, acc->target, acc->region, true, tbase,
                                       tcount, tdt, raddr, tcount, tdt);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_peer_flush(acc->module, acc->target);
        }
    }
    free(image);
    return rc;
}

/* The bulk path: under the target's accumulate lock, in place or through transfers. */
static int ompi_osc_gpuic_acc_bulk(ompi_osc_gpuic_acc_t *acc, uint64_t raddr, int tcount,
                                   struct ompi_datatype_t *tdt)
{
    ompi_osc_gpuic_region_t *region = acc->region;
    int rc, rc_unlock;

    rc = ompi_osc_gpuic_acc_lock(acc->module, acc->target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (region->direct != NULL && !region->gpu) {
        rc = ompi_osc_gpuic_acc_apply(acc, (char *)region->direct + (raddr - region->base),
                                      tcount, tdt);
    } else if (!region->gpu && acc->extent == acc->esize &&
               ompi_datatype_is_contiguous_memory_layout(tdt, tcount)) {
        ptrdiff_t lo, hi;

        ompi_osc_gpuic_dt_bounds(tdt, tcount, &lo, &hi);
        rc = ompi_osc_gpuic_acc_pipeline(acc, raddr + (uint64_t)lo);
    } else {
        rc = ompi_osc_gpuic_acc_image(acc, raddr, tcount, tdt);
    }
    rc_unlock = ompi_osc_gpuic_acc_unlock(acc->module, acc->target);
    return rc != OMPI_SUCCESS ? rc : rc_unlock;
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
    uint64_t cur = ompi_osc_gpuic_word_load(&w), next;

    do {
        next = cur;
        memcpy(old, (char *)&next + w.shift, acc->esize);
        if (origin == NULL) {
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

static int ompi_osc_gpuic_acc_ucx_fetch(ompi_osc_gpuic_acc_t *acc, gpuic_atomic_op_t op,
                                        uint64_t value, uint64_t compare, uint64_t raddr,
                                        uint64_t *old_p)
{
    gpuic_status_t status;

    status = gpuic_rma_atomic_fetch(acc->module->peers[acc->target].ep, op, value, compare,
                                    acc->esize, raddr, acc->region->rkey, old_p);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "accumulate atomic on rank %d of window %d failed: %s",
                  acc->target, acc->module->id, gpuic_status_string(status));
    }
    return ompi_osc_gpuic_error(status);
}

/* The element as a word image of esize (4 or 8) bytes and back. */
static uint64_t ompi_osc_gpuic_acc_to_word(const void *p, size_t esize)
{
    uint32_t v32;
    uint64_t v64;

    if (esize == 4) {
        memcpy(&v32, p, 4);
        return v32;
    }
    memcpy(&v64, p, 8);
    return v64;
}

static void ompi_osc_gpuic_acc_from_word(void *p, uint64_t v, size_t esize)
{
    uint32_t v32 = (uint32_t)v;

    if (esize == 4) {
        memcpy(p, &v32, 4);
    } else {
        memcpy(p, &v, 8);
    }
}

/* Per thread: the value this thread last left in an element through a compare-and-swap loop. */
static __thread struct {
    const ompi_osc_gpuic_module_t *module;
    int                           target;
    uint64_t                      raddr;
    uint64_t                      value;
} ompi_osc_gpuic_acc_guess;

/* The UCX atomic that does the call's op on one element (@p origin NULL: a read), or
 * GPUIC_ATOMIC_CSWAP where it takes a compare-and-swap loop. */
static gpuic_atomic_op_t ompi_osc_gpuic_acc_native(const ompi_osc_gpuic_acc_t *acc,
                                                   const char *origin)
{
    bool is_int = (acc->prim->super.flags & OMPI_DATATYPE_FLAG_DATA_TYPE) ==
                  OMPI_DATATYPE_FLAG_DATA_INT;

    if (origin == NULL) {
        return GPUIC_ATOMIC_ADD; /* value 0: a read */
    }
    if (ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_replace.op)) {
        return GPUIC_ATOMIC_SWAP;
    }
    if (is_int && ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_sum.op)) {
        return GPUIC_ATOMIC_ADD;
    }
    if (is_int && ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_band.op)) {
        return GPUIC_ATOMIC_AND;
    }
    if (is_int && ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_bor.op)) {
        return GPUIC_ATOMIC_OR;
    }
    if (is_int && ompi_osc_gpuic_op_is(acc->op, &ompi_mpi_op_bxor.op)) {
        return GPUIC_ATOMIC_XOR;
    }
    return GPUIC_ATOMIC_CSWAP;
}

/*
 * One aligned element of 4 or 8 bytes through UCX atomics: the native one where the op is an
 * integer add, and, or, xor, swap or read; else a compare-and-swap loop.
 */
static int ompi_osc_gpuic_acc_elem_ucx(ompi_osc_gpuic_acc_t *acc, uint64_t raddr,
                                       const char *origin, char *old)
{
    uint64_t value = origin != NULL ? ompi_osc_gpuic_acc_to_word(origin, acc->esize) : 0;
    uint64_t cur = 0, seen = 0;
    char next[8];
    gpuic_atomic_op_t native = ompi_osc_gpuic_acc_native(acc, origin);
    int rc;

    if (native != GPUIC_ATOMIC_CSWAP) {
        rc = ompi_osc_gpuic_acc_ucx_fetch(acc, native, value, 0, raddr, &cur);
        if (rc == OMPI_SUCCESS) {
            ompi_osc_gpuic_acc_from_word(old, cur, acc->esize);
        }
        return rc;
    }
    /* The loop starts from a guess (what this thread last saw there): a wrong one costs what a
     * first read would, and the common case of one origin updating an element saves it. */
    cur = ompi_osc_gpuic_acc_guess.module == acc->module &&
                  ompi_osc_gpuic_acc_guess.target == acc->target &&
                  ompi_osc_gpuic_acc_guess.raddr == raddr
              ? ompi_osc_gpuic_acc_guess.value
              : 0;
    for (;;) {
        ompi_osc_gpuic_acc_from_word(old, cur, acc->esize);
        memcpy(next, old, acc->esize);
        ompi_osc_gpuic_acc_combine(acc, origin, next, 1);
        value = ompi_osc_gpuic_acc_to_word(next, acc->esize);
        rc = ompi_osc_gpuic_acc_ucx_fetch(acc, GPUIC_ATOMIC_CSWAP, value, cur, raddr, &seen);
        if (rc != OMPI_SUCCESS || seen == cur) {
            break;
        }
        cur = seen;
    }
    ompi_osc_gpuic_acc_guess.module = acc->module;
    ompi_osc_gpuic_acc_guess.target = acc->target;
    ompi_osc_gpuic_acc_guess.raddr = raddr;
    ompi_osc_gpuic_acc_guess.value = value;
    return rc;
}

/*
 * Whether a single element at @p target that UCX would update by a compare-and-swap loop is
 * better updated under the accumulate lock (the bulk path, by cross-memory copies): on a
 * window whose processes map each other's state blocks but not each other's memory
 * (MPI_Win_create on a node), the lock is CPU atomics and the element a cross-memory copy away,
 * so the call waits for no other process, where UCX emulates atomics on such memory through
 * the target's progress and the loop takes two or more of them.  Calls that one UCX atomic
 * does (integer sum and bitwise ops, replace, reads, compare-and-swap) keep it: with the target
 * inside MPI it answers in a fraction of the two system calls the lock path costs.
 */
static bool ompi_osc_gpuic_acc_prefers_lock(const ompi_osc_gpuic_module_t *module, int target,
                                            const ompi_osc_gpuic_region_t *region)
{
    return !module->all_direct && module->state_direct && !region->gpu &&
           __atomic_load_n(&module->peers[target].cma_pid, __ATOMIC_RELAXED) > 0 &&
           mca_osc_gpuic_component.cma_min_bytes >= 0;
}

/*
 * The single-element path: one element that an atomic covers, updated between acc_enter and
 * acc_leave.  Returns false (nothing done) when the call does not qualify.
 */
static bool ompi_osc_gpuic_acc_single(ompi_osc_gpuic_acc_t *acc, const char *origin,
                                      char *old, uint64_t taddr, int *rc_p)
{
    ompi_osc_gpuic_module_t *module = acc->module;
    char *t = NULL;
    int rc;

    if (acc->nelem != 1 || acc->extent != acc->esize) {
        return false;
    }
    if (module->all_direct) {
        t = (char *)acc->region->direct + (taddr - acc->region->base);
        if (!ompi_osc_gpuic_acc_atomic_class(acc->esize, t)) {
            return false;
        }
    } else if (acc->region->gpu || (acc->esize != 4 && acc->esize != 8) ||
               taddr % acc->esize != 0) {
        return false;
    } else if (ompi_osc_gpuic_acc_prefers_lock(module, acc->target, acc->region) &&
               ompi_osc_gpuic_acc_native(acc, origin) == GPUIC_ATOMIC_CSWAP) {
        return false;
    }
    rc = ompi_osc_gpuic_acc_enter(module, acc->target);
    if (rc == OMPI_SUCCESS) {
        if (module->all_direct) {
            ompi_osc_gpuic_acc_elem_atomic(acc, t, origin, old);
        } else {
            rc = ompi_osc_gpuic_acc_elem_ucx(acc, taddr, origin, old);
        }
        int rc_leave = ompi_osc_gpuic_acc_leave(module, acc->target);

        rc = rc != OMPI_SUCCESS ? rc : rc_leave;
    }
    *rc_p = rc;
    return true;
}

/* Whether (buf, count, dt) lies as packed elements of a type without gaps, from buf + *lo_p. */
static bool ompi_osc_gpuic_acc_is_packed(const ompi_osc_gpuic_acc_t *acc, int count,
                                         struct ompi_datatype_t *dt, ptrdiff_t *lo_p)
{
    ptrdiff_t hi;

    if (acc->extent != acc->esize || !ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        return false;
    }
    ompi_osc_gpuic_dt_bounds(dt, count, lo_p, &hi);
    return true;
}

/* size * count for a user count, refusing negative counts and overflows. */
static int ompi_osc_gpuic_acc_bytes(struct ompi_datatype_t *dt, int count, size_t *bytes_p)
{
    size_t size;

    if (count < 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate with a negative count (%d)", count);
        return MPI_ERR_COUNT;
    }
    ompi_datatype_type_size(dt, &size);
    if (__builtin_mul_overflow(size, (size_t)count, bytes_p) || *bytes_p > (size_t)PTRDIFF_MAX) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate of %d elements of %zu bytes overflows", count,
                  size);
        return MPI_ERR_COUNT;
    }
    return OMPI_SUCCESS;
}

/*
 * The common body: origin combined into the target (no origin for MPI_NO_OP), old target data
 * into result (rdt NULL when not fetching).
 */
static int ompi_osc_gpuic_acc_run(ompi_osc_gpuic_module_t *module, const void *origin,
                                  int ocount, struct ompi_datatype_t *odt, void *result,
                                  int rcount, struct ompi_datatype_t *rdt, int target,
                                  ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt,
                                  struct ompi_op_t *op)
{
    ompi_osc_gpuic_acc_t acc;
    ompi_osc_gpuic_bounce_t ob = {0}, rb = {0};
    char *obuf_own = NULL, *old_own = NULL, rbuf[8];
    bool has_origin, fetching;
    size_t nbytes, osize = 0, rsize = 0, bytes;
    ptrdiff_t lb, extent, lo;
    uint32_t prim_count;
    uint64_t raddr;
    int rc, rc_b;

    rc = ompi_osc_gpuic_begin_op(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* earlier puts land first: an atomic often tells a peer they are there */
    ompi_osc_gpuic_cma_pend_settle(true);
    ompi_osc_gpuic_acc_init(&acc, module, target, op);
    /* Whether there is an origin or a result is told by the op and the result datatype, not
     * by the addresses: MPI_BOTTOM (NULL) with absolute datatypes is a valid buffer. */
    has_origin = !ompi_osc_gpuic_op_is(op, &ompi_mpi_op_no_op.op);
    fetching = rdt != NULL;
    rc = ompi_osc_gpuic_acc_bytes(tdt, tcount, &nbytes);
    if (rc == OMPI_SUCCESS && has_origin) {
        rc = ompi_osc_gpuic_acc_bytes(odt, ocount, &osize);
    }
    if (rc == OMPI_SUCCESS && fetching) {
        rc = ompi_osc_gpuic_acc_bytes(rdt, rcount, &rsize);
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if ((has_origin && osize != nbytes) || (fetching && rsize != nbytes)) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate buffers of different sizes");
        return MPI_ERR_TYPE;
    }
    /* Nothing to combine (count 0 or a datatype of size 0): a no-op, as MPI 3.1 has it. */
    if (nbytes == 0) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_check_range(module, target, tdisp, tcount, tdt, &raddr, &acc.region);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (ompi_datatype_is_predefined(tdt)) {
        acc.prim = tdt;
    } else if (ompi_osc_base_get_primitive_type_info(tdt, &acc.prim, &prim_count) !=
               OMPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (!ompi_osc_gpuic_acc_op_valid(op, acc.prim)) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate: %s is not defined on %s", op->o_name,
                  acc.prim->name);
        return MPI_ERR_OP;
    }
    ompi_datatype_type_size(acc.prim, &acc.esize);
    ompi_datatype_get_extent(acc.prim, &lb, &extent);
    acc.extent = (size_t)extent;
    if (acc.esize == 0 || nbytes % acc.esize != 0 || acc.extent < acc.esize ||
        acc.extent > OMPI_OSC_GPUIC_ACC_ELEM_MAX) {
        return MPI_ERR_TYPE;
    }
    acc.nelem = nbytes / acc.esize;
    if (acc.nelem > INT_MAX || __builtin_mul_overflow(acc.nelem, acc.extent, &bytes)) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate of %zu elements is too large", acc.nelem);
        return MPI_ERR_COUNT;
    }

    /* GPU window memory this process maps: one kernel of device atomics. */
    if (acc.region->gpu &&
        ompi_osc_gpuic_gpu_acc(module, target, acc.region, raddr, has_origin ? origin : NULL,
                               ocount, odt, result, rcount, rdt, tcount, tdt, op, acc.prim,
                               acc.nelem, &rc)) {
        return rc;
    }
    /* GPU window memory of another node: device atomics by the target's window agent. */
    if (acc.region->gpu &&
        ompi_osc_gpuic_gpu_acc_remote(module, target, acc.region, raddr,
                                      has_origin ? origin : NULL, ocount, odt, result, rcount,
                                      rdt, tcount, tdt, op, acc.prim, acc.nelem, &rc)) {
        return rc;
    }
    /* A single predefined element on every side: no copies, no allocation. */
    if (acc.nelem == 1 && (!has_origin || ompi_datatype_is_predefined(odt)) &&
        (!fetching || ompi_datatype_is_predefined(rdt)) && acc.esize <= sizeof(rbuf) &&
        !(gpuic_cuda_available() &&
          ((has_origin && gpuic_cuda_is_device_ptr(origin)) ||
           (fetching && gpuic_cuda_is_device_ptr(result))))) {
        uint64_t taddr = raddr + (uint64_t)tdt->super.true_lb;

        if (ompi_osc_gpuic_acc_single(&acc, has_origin ? origin : NULL,
                                      fetching ? result : rbuf, taddr, &rc)) {
            if (rc == OMPI_SUCCESS) {
                ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_atomic, 1);
            }
            return rc;
        }
    }
    /* origin and result may be device memory: work on host copies */
    if (has_origin) {
        rc = ompi_osc_gpuic_bounce_in(&ob, (void *)origin, ocount, odt);
    }
    if (rc == OMPI_SUCCESS && fetching) {
        rc = ompi_osc_gpuic_bounce_in(&rb, result, rcount, rdt);
    }
    if (rc != OMPI_SUCCESS) {
        goto out;
    }
    if (has_origin) {
        if (ompi_osc_gpuic_acc_is_packed(&acc, ocount, odt, &lo)) {
            acc.obuf = (const char *)ob.buf + lo;
        } else {
            obuf_own = malloc(bytes);
            if (obuf_own == NULL) {
                rc = MPI_ERR_NO_MEM;
                goto out;
            }
            rc = ompi_osc_gpuic_dt_copy(obuf_own, (int)acc.nelem, acc.prim, ob.buf, ocount,
                                        odt);
            if (rc != OMPI_SUCCESS) {
                goto out;
            }
            acc.obuf = obuf_own;
        }
    }
    if (fetching) {
        if (ompi_osc_gpuic_acc_is_packed(&acc, rcount, rdt, &lo)) {
            acc.old = (char *)rb.buf + lo;
        } else {
            old_own = malloc(bytes);
            if (old_own == NULL) {
                rc = MPI_ERR_NO_MEM;
                goto out;
            }
            acc.old = old_own;
        }
    }
    rc = ompi_osc_gpuic_acc_bulk(&acc, raddr, tcount, tdt);
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_locked, 1);
    }
    if (rc == OMPI_SUCCESS && old_own != NULL) {
        rc = ompi_osc_gpuic_dt_copy(rb.buf, rcount, rdt, old_own, (int)acc.nelem, acc.prim);
    }
out:
    rc_b = ompi_osc_gpuic_bounce_out(&ob, false);
    rc = rc != OMPI_SUCCESS ? rc : rc_b;
    rc_b = ompi_osc_gpuic_bounce_out(&rb, rc == OMPI_SUCCESS);
    rc = rc != OMPI_SUCCESS ? rc : rc_b;
    free(obuf_own);
    free(old_own);
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

    /* MPI 3.1 section 11.3.4.4: a predefined integer, logical, multi-language or byte type
     * (Open MPI does not check it): those on which MPI_BAND or MPI_LAND is defined. */
    if (!ompi_datatype_is_predefined(dt) ||
        !(ompi_osc_gpuic_op_defined(&ompi_mpi_op_band.op, dt) ||
          ompi_osc_gpuic_op_defined(&ompi_mpi_op_land.op, dt))) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Compare_and_swap on %s", dt->name);
        return MPI_ERR_TYPE;
    }
    rc = ompi_osc_gpuic_begin_op(module, target);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ompi_osc_gpuic_cma_pend_settle(true); /* as in ompi_osc_gpuic_acc_run() */
    rc = ompi_osc_gpuic_check_range(module, target, target_disp, 1, dt, &raddr, &region);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ompi_datatype_type_size(dt, &esize);
    if (region->gpu && ompi_osc_gpuic_gpu_cas(module, target, region, raddr, origin_addr,
                                              compare_addr, result_addr, dt, &rc)) {
        return rc;
    }
    if (region->gpu && ompi_osc_gpuic_gpu_cas_remote(module, target, region, raddr, origin_addr,
                                                     compare_addr, result_addr, dt, &rc)) {
        return rc;
    }
    if (gpuic_cuda_available() &&
        (gpuic_cuda_is_device_ptr(origin_addr) || gpuic_cuda_is_device_ptr(compare_addr) ||
         gpuic_cuda_is_device_ptr(result_addr))) {
        return ompi_osc_gpuic_cas_bounced(origin_addr, compare_addr, result_addr, dt, target,
                                          target_disp, win);
    }
    if (module->all_direct ? ompi_osc_gpuic_acc_atomic_class(
                                 esize, (char *)region->direct + (raddr - region->base))
                           : !region->gpu && (esize == 4 || esize == 8) && raddr % esize == 0) {
        /* One atomic, announced like every single-element atomic. */
        rc = ompi_osc_gpuic_acc_enter(module, target);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (module->all_direct) {
            t = (char *)region->direct + (raddr - region->base);
            ompi_osc_gpuic_cas_atomic(t, origin_addr, compare_addr, result_addr, esize);
        } else {
            ompi_osc_gpuic_acc_t acc;
            uint64_t seen = 0;

            ompi_osc_gpuic_acc_init(&acc, module, target, NULL);
            acc.region = region;
            acc.esize = esize;
            rc = ompi_osc_gpuic_acc_ucx_fetch(&acc, GPUIC_ATOMIC_CSWAP,
                                              ompi_osc_gpuic_acc_to_word(origin_addr, esize),
                                              ompi_osc_gpuic_acc_to_word(compare_addr, esize),
                                              raddr, &seen);
            if (rc == OMPI_SUCCESS) {
                ompi_osc_gpuic_acc_from_word(result_addr, seen, esize);
            }
        }
        rc_unlock = ompi_osc_gpuic_acc_leave(module, target);
        rc = rc != OMPI_SUCCESS ? rc : rc_unlock;
        if (rc == OMPI_SUCCESS) {
            ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_atomic, 1);
        }
        return rc;
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
