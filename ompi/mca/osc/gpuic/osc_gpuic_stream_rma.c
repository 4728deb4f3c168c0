/*
 * Stream-triggered RMA calls (MPIX_Put_enqueue ... MPIX_Win_flush_local_enqueue): each is
 * checked here, on the host, and becomes one small kernel launched on the caller's stream
 * (osc_gpuic_stream_kernels.cu) that makes the call with the device API.
 */
#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mpi.h"

#include "ompi/op/op.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

/* Operations and element types the kernels know (values of mpix_gpuic_device.cuh's enums,
 * which are C++ only). */
enum {
    OMPI_OSC_GPUIC_STREAM_SUM, OMPI_OSC_GPUIC_STREAM_PROD, OMPI_OSC_GPUIC_STREAM_MIN,
    OMPI_OSC_GPUIC_STREAM_MAX, OMPI_OSC_GPUIC_STREAM_BAND, OMPI_OSC_GPUIC_STREAM_BOR,
    OMPI_OSC_GPUIC_STREAM_BXOR, OMPI_OSC_GPUIC_STREAM_LAND, OMPI_OSC_GPUIC_STREAM_LOR,
    OMPI_OSC_GPUIC_STREAM_LXOR, OMPI_OSC_GPUIC_STREAM_REPLACE, OMPI_OSC_GPUIC_STREAM_NO_OP
};
enum {
    OMPI_OSC_GPUIC_STREAM_INT32, OMPI_OSC_GPUIC_STREAM_UINT32, OMPI_OSC_GPUIC_STREAM_INT64,
    OMPI_OSC_GPUIC_STREAM_UINT64, OMPI_OSC_GPUIC_STREAM_FLOAT, OMPI_OSC_GPUIC_STREAM_DOUBLE
};

/*
 * Bytes of (count, dt) when its elements are one contiguous run in type-map order, and the
 * offset of the run's first byte from the buffer address.
 */
static int ompi_osc_gpuic_stream_contig(int count, struct ompi_datatype_t *dt, size_t *bytes_p,
                                        ptrdiff_t *lb_p)
{
    ptrdiff_t hi;
    int rc;

    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    if (dt == NULL || dt == MPI_DATATYPE_NULL) {
        return MPI_ERR_TYPE;
    }
    rc = ompi_osc_gpuic_dt_span(dt, count, false, lb_p, &hi, bytes_p);
    if (rc == OMPI_SUCCESS && *bytes_p > 0 &&
        !ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        rc = MPI_ERR_TYPE; /* holes, or elements that do not follow each other */
    }
    return rc;
}

int ompi_osc_gpuic_stream_named_type(struct ompi_datatype_t *dt, bool small, int *type_p)
{
    enum { SIGNED, UNSIGNED, FLOATING } kind;
    bool narrow = false; /* a class of 8- and 16-bit integers */
    size_t size = 0;

    /* Open MPI's reduction class of the predefined type, so that every alias (MPI_INT,
     * MPI_INT32_T, MPI_INTEGER, MPI_AINT, MPI_DOUBLE_PRECISION, ...) maps alike, by size. */
    if (dt == NULL || !ompi_datatype_is_predefined(dt) || dt->id < 0 ||
        dt->id >= OMPI_DATATYPE_MAX_PREDEFINED) {
        return MPI_ERR_TYPE;
    }
    switch (ompi_op_ddt_map[dt->id]) {
    case OMPI_OP_BASE_TYPE_INT8_T:
    case OMPI_OP_BASE_TYPE_INT16_T:
    case OMPI_OP_BASE_TYPE_INTEGER1:
    case OMPI_OP_BASE_TYPE_INTEGER2:
        narrow = true;
        kind = SIGNED;
        break;
    case OMPI_OP_BASE_TYPE_UINT8_T:
    case OMPI_OP_BASE_TYPE_UINT16_T:
        narrow = true;
        kind = UNSIGNED;
        break;
    case OMPI_OP_BASE_TYPE_INT32_T:
    case OMPI_OP_BASE_TYPE_INT64_T:
    case OMPI_OP_BASE_TYPE_INTEGER:
    case OMPI_OP_BASE_TYPE_INTEGER4:
    case OMPI_OP_BASE_TYPE_INTEGER8:
    case OMPI_OP_BASE_TYPE_LONG:
        kind = SIGNED;
        break;
    case OMPI_OP_BASE_TYPE_UINT32_T:
    case OMPI_OP_BASE_TYPE_UINT64_T:
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG:
        kind = UNSIGNED;
        break;
    case OMPI_OP_BASE_TYPE_FLOAT:
    case OMPI_OP_BASE_TYPE_DOUBLE:
    case OMPI_OP_BASE_TYPE_REAL:
    case OMPI_OP_BASE_TYPE_REAL4:
    case OMPI_OP_BASE_TYPE_REAL8:
    case OMPI_OP_BASE_TYPE_DOUBLE_PRECISION:
        kind = FLOATING;
        break;
    default:
        return MPI_ERR_TYPE;
    }
    ompi_datatype_type_size(dt, &size);
    if (narrow) {
        if (!small || (size != 1 && size != 2)) {
            return MPI_ERR_TYPE;
        }
        *type_p = kind == SIGNED ? (size == 1 ? MPIX_GPUIC_ACC_INT8 : MPIX_GPUIC_ACC_INT16)
                                 : (size == 1 ? MPIX_GPUIC_ACC_UINT8 : MPIX_GPUIC_ACC_UINT16);
        return MPI_SUCCESS;
    }
    if (size != 4 && size != 8) {
        return MPI_ERR_TYPE;
    }
    *type_p = kind == SIGNED     ? (size == 4 ? OMPI_OSC_GPUIC_STREAM_INT32
                                              : OMPI_OSC_GPUIC_STREAM_INT64)
              : kind == UNSIGNED ? (size == 4 ? OMPI_OSC_GPUIC_STREAM_UINT32
                                              : OMPI_OSC_GPUIC_STREAM_UINT64)
                                 : (size == 4 ? OMPI_OSC_GPUIC_STREAM_FLOAT
                                              : OMPI_OSC_GPUIC_STREAM_DOUBLE);
    return MPI_SUCCESS;
}

/*
 * Element type and elements per item of an accumulate datatype: a predefined type the kernels
 * know, or a contiguous or duplicated type built from one (depth-limited), whose elements the
 * kernels may take as one packed run.  Through PMPI: the envelope calls are the interface
 * that is the same in every Open MPI.
 */
static int ompi_osc_gpuic_stream_elem_type(MPI_Datatype dt, int depth, int *type_p, long *per_p)
{
    int ni = 0, na = 0, nd = 0, combiner = 0, ints[1] = {0}, rc;
    MPI_Aint addrs[1];
    MPI_Datatype inner = MPI_DATATYPE_NULL;
    long per = 1;

    if (dt == NULL || dt == MPI_DATATYPE_NULL || depth > 8 ||
        PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (combiner == MPI_COMBINER_NAMED) {
        *per_p = 1;
        return ompi_osc_gpuic_stream_named_type(dt, false, type_p);
    }
    if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || ni > 1 ||
        na != 0 || nd != 1 ||
        PMPI_Type_get_contents(dt, ni, 0, 1, ints, addrs, &inner) != MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (combiner == MPI_COMBINER_CONTIGUOUS) {
        per = ints[0];
    }
    rc = ompi_osc_gpuic_stream_elem_type(inner, depth + 1, type_p, per_p);
    *per_p *= per;
    if (PMPI_Type_get_envelope(inner, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
        combiner != MPI_COMBINER_NAMED) {
        PMPI_Type_free(&inner); /* get_contents handed us a copy */
    }
    return rc;
}

static size_t ompi_osc_gpuic_stream_type_size(int type)
{
    return type == OMPI_OSC_GPUIC_STREAM_INT32 || type == OMPI_OSC_GPUIC_STREAM_UINT32 ||
                   type == OMPI_OSC_GPUIC_STREAM_FLOAT
               ? 4
               : 8;
}

int ompi_osc_gpuic_stream_op(struct ompi_op_t *op, int type, bool allow_no_op, int *op_p)
{
    static const struct {
        MPI_Op mpi;
        int    op;
        bool   integer_only;
    } map[] = {
        {MPI_SUM, OMPI_OSC_GPUIC_STREAM_SUM, false},
        {MPI_PROD, OMPI_OSC_GPUIC_STREAM_PROD, false},
        {MPI_MIN, OMPI_OSC_GPUIC_STREAM_MIN, false},
        {MPI_MAX, OMPI_OSC_GPUIC_STREAM_MAX, false},
        {MPI_BAND, OMPI_OSC_GPUIC_STREAM_BAND, true},
        {MPI_BOR, OMPI_OSC_GPUIC_STREAM_BOR, true},
        {MPI_BXOR, OMPI_OSC_GPUIC_STREAM_BXOR, true},
        {MPI_LAND, OMPI_OSC_GPUIC_STREAM_LAND, true},
        {MPI_LOR, OMPI_OSC_GPUIC_STREAM_LOR, true},
        {MPI_LXOR, OMPI_OSC_GPUIC_STREAM_LXOR, true},
        {MPI_REPLACE, OMPI_OSC_GPUIC_STREAM_REPLACE, false},
        {MPI_NO_OP, OMPI_OSC_GPUIC_STREAM_NO_OP, false},
    };
    bool is_float = type == OMPI_OSC_GPUIC_STREAM_FLOAT || type == OMPI_OSC_GPUIC_STREAM_DOUBLE;

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (op == map[i].mpi) {
            if ((map[i].integer_only && is_float) ||
                (map[i].op == OMPI_OSC_GPUIC_STREAM_NO_OP && !allow_no_op)) {
                return MPI_ERR_OP;
            }
            *op_p = map[i].op;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_OP;
}

/* MPI_ERR_RMA_RANGE unless @p count elements of @p dt at @p disp lie in @p target's window: the
 * component's own range check, with the same window description the device handle carries. */
static int ompi_osc_gpuic_stream_check_range(ompi_osc_gpuic_module_t *module, int target,
                                             ptrdiff_t disp, int count,
                                             struct ompi_datatype_t *dt)
{
    ompi_osc_gpuic_region_t *region = NULL;
    uint64_t raddr = 0;

    return ompi_osc_gpuic_check_range(module, target, disp, count, dt, &raddr, &region);
}

/* The ordering scope of what the RMA kernels write at @p rank (MPIX_GPUIC_STREAM_SAME_GPU). */
static uint32_t ompi_osc_gpuic_stream_rma_flags(const ompi_osc_gpuic_stream_state_t *st, int rank)
{
    return (st->peers[rank].flags & MPIX_GPUIC_DEVICE_PEER_SAME_GPU) ? MPIX_GPUIC_STREAM_SAME_GPU
                                                                      : 0;
}

/*
 * Whether an operation on @p rank is complete at the target when its own kernel is: P2P
 * targets, where the kernel stores into the target's window itself and ends with the release
 * fence of a flush (rma_complete in the kernels).  A flush of such a target has nothing left
 * to do, whatever stream the operations were enqueued on: a flush on one stream completes
 * what stream order puts before it, and every P2P operation before it is complete with its
 * kernel.  Proxy-path operations are only posted by their kernel, so their flush still waits
 * for the proxy; the path is fixed by the window's device handle, never by the call.
 */
static bool ompi_osc_gpuic_stream_self_completing(const ompi_osc_gpuic_stream_state_t *st,
                                                  int rank)
{
    return st->peers[rank].data_path == MPIX_GPUIC_DEVICE_PATH_P2P;
}

/* The window's stream state and a valid target rank: how every call on a target begins. */
static int ompi_osc_gpuic_stream_target_begin(struct ompi_win_t *win, int target,
                                              ompi_osc_gpuic_module_t **module_p,
                                              ompi_osc_gpuic_stream_state_t **st_p)
{
    int rc = ompi_osc_gpuic_stream_state_get(win, module_p, st_p);

    return rc == MPI_SUCCESS ? ompi_osc_gpuic_stream_check_rank(*st_p, target) : rc;
}

/* The device reaches @p target's window and an access epoch covers it (a passive-target one
 * when @p passive): how every call on a target ends its checks. */
static int ompi_osc_gpuic_stream_target_ready(ompi_osc_gpuic_module_t *module,
                                              ompi_osc_gpuic_stream_state_t *st, int target,
                                              bool passive)
{
    int rc = ompi_osc_gpuic_stream_check_reach(st, target, OMPI_OSC_GPUIC_STREAM_REACH_DATA);

    return rc == MPI_SUCCESS ? ompi_osc_gpuic_stream_check_access(module, st, target, passive)
                             : rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Put and get.                                                                             */

static int ompi_osc_gpuic_stream_xfer(bool is_put, void *origin, int ocount,
                                      struct ompi_datatype_t *odt, int target, ptrdiff_t tdisp,
                                      int tcount, struct ompi_datatype_t *tdt,
                                      struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_module_t *module;
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_rma_args_t a;
    size_t obytes, tbytes;
    ptrdiff_t olb, tlb, du = 1;
    uint64_t chunk, dptr;
    unsigned grid, block;
    int rc;

    rc = ompi_osc_gpuic_stream_target_begin(win, target, &module, &st);
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_contig(ocount, odt, &obytes, &olb);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_contig(tcount, tdt, &tbytes, &tlb);
    }
    if (rc == MPI_SUCCESS && obytes != tbytes) {
        rc = MPI_ERR_TYPE;
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_buffer(origin, olb, obytes, &dptr);
    }
    if (rc == MPI_SUCCESS) {
        du = module->peers[target].disp_unit > 0 ? module->peers[target].disp_unit : 1;
        if (tlb % du != 0) {
            rc = MPI_ERR_TYPE; /* a target layout starting inside a displacement unit */
        }
    }
    /* The range the data really covers, lower bound included: the small-copy kernel writes
     * where the host tells it, with no check of its own.  Nothing is moved for 0 bytes. */
    if (rc == MPI_SUCCESS && tbytes > 0) {
        rc = ompi_osc_gpuic_stream_check_range(module, target, tdisp, tcount, tdt);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_target_ready(module, st, target, false);
    }
    if (rc != MPI_SUCCESS || obytes == 0) {
        return rc;
    }
    /* tdisp + tlb / du cannot overflow: the range check computed tdisp * du + tlb */
    if (obytes <= MPIX_GPUIC_STREAM_SMALL_BYTES &&
        ompi_osc_gpuic_stream_self_completing(st, target) && st->peers[target].base != 0) {
        mpix_gpuic_stream_copy_args_t small;
        uint64_t remote = st->peers[target].base + (uint64_t)(tdisp + tlb / du) * (uint64_t)du;

        small.dst = is_put ? remote : dptr;
        small.src = is_put ? dptr : remote;
        small.bytes = obytes;
        small.flags = ompi_osc_gpuic_stream_rma_flags(st, target);
        small.reserved = 0;
        return ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_COPY_SMALL, 1, 32, stream, &small);
    }
    ompi_osc_gpuic_stream_xfer_shape(obytes, (uint64_t)du, &grid, &block, &chunk);
    memset(&a, 0, sizeof(a));
    a.win = st->win_value;
    a.origin = is_put ? dptr : 0;
    a.result = is_put ? 0 : dptr;
    a.bytes = obytes;
    a.chunk = chunk;
    a.disp = (int64_t)tdisp + (int64_t)(tlb / du);
    a.chunk_disp = (int64_t)(chunk / (uint64_t)du);
    a.target = target;
    a.flags = ompi_osc_gpuic_stream_rma_flags(st, target);
    return ompi_osc_gpuic_stream_launch(is_put ? MPIX_GPUIC_K_PUT : MPIX_GPUIC_K_GET, grid, block,
                                        stream, &a);
}

int ompi_osc_gpuic_stream_put(const void *origin, int ocount, struct ompi_datatype_t *odt,
                              int target, ptrdiff_t tdisp, int tcount,
                              struct ompi_datatype_t *tdt, struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_xfer(true, (void *)origin, ocount, odt, target, tdisp, tcount,
                                      tdt, win, stream);
}

int ompi_osc_gpuic_stream_get(void *origin, int ocount, struct ompi_datatype_t *odt, int target,
                              ptrdiff_t tdisp, int tcount, struct ompi_datatype_t *tdt,
                              struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_xfer(false, origin, ocount, odt, target, tdisp, tcount, tdt, win,
                                      stream);
}

/* ---------------------------------------------------------------------------------------- */
/* Accumulate family.                                                                       */

/* Checks shared by the atomic calls on one element: window, rank, datatype, range, reach,
 * epoch.  Sets a->win, target, disp, type. */
static int ompi_osc_gpuic_stream_atomic_prepare(struct ompi_win_t *win,
                                                struct ompi_datatype_t *dt, int target,
                                                ptrdiff_t tdisp, mpix_gpuic_stream_rma_args_t *a)
{
    ompi_osc_gpuic_module_t *module;
    ompi_osc_gpuic_stream_state_t *st = NULL;
    long per = 0;
    int type = 0;
    int rc = ompi_osc_gpuic_stream_target_begin(win, target, &module, &st);

    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_elem_type(dt, 0, &type, &per);
        if (rc == MPI_SUCCESS && per != 1) {
            rc = MPI_ERR_TYPE;
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_check_range(module, target, tdisp, 1, dt);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_target_ready(module, st, target, false);
    }
    memset(a, 0, sizeof(*a));
    if (rc == MPI_SUCCESS) {
        a->win = st->win_value; /* else zero: not a valid handle */
    }
    a->target = target;
    a->disp = (int64_t)tdisp;
    a->type = type;
    a->count = 1;
    a->flags = rc == MPI_SUCCESS ? ompi_osc_gpuic_stream_rma_flags(st, target) : 0;
    return rc;
}

int ompi_osc_gpuic_stream_accumulate(const void *origin, int ocount,
                                     struct ompi_datatype_t *odt, int target, ptrdiff_t tdisp,
                                     int tcount, struct ompi_datatype_t *tdt,
                                     struct ompi_op_t *op, struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_module_t *module;
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_rma_args_t a;
    long oper = 0, tper = 0;
    int otype = 0, ttype = 0, kop = 0, rc;
    size_t bytes = 0;
    uint64_t dptr = 0;

    rc = ompi_osc_gpuic_stream_target_begin(win, target, &module, &st);
    if (rc == MPI_SUCCESS && (ocount < 0 || tcount < 0)) {
        rc = MPI_ERR_COUNT;
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_elem_type(odt, 0, &otype, &oper);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_elem_type(tdt, 0, &ttype, &tper);
    }
    if (rc == MPI_SUCCESS &&
        (otype != ttype || (long)ocount * oper != (long)tcount * tper ||
         (long)tcount * tper > INT32_MAX)) {
        rc = MPI_ERR_TYPE;
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_op(op, ttype, false, &kop);
    }
    if (rc == MPI_SUCCESS) {
        bytes = (size_t)tcount * (size_t)tper * ompi_osc_gpuic_stream_type_size(ttype);
        rc = ompi_osc_gpuic_stream_buffer(origin, 0, bytes, &dptr);
    }
    /* Nothing is combined for 0 bytes. */
    if (rc == MPI_SUCCESS && bytes > 0) {
        rc = ompi_osc_gpuic_stream_check_range(module, target, tdisp, tcount, tdt);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_target_ready(module, st, target, false);
    }
    if (rc != MPI_SUCCESS || bytes == 0) {
        return rc;
    }
    memset(&a, 0, sizeof(a));
    a.win = st->win_value;
    a.origin = dptr;
    a.target = target;
    a.disp = (int64_t)tdisp;
    a.count = (int32_t)((long)tcount * tper);
    a.type = ttype;
    a.op = kop;
    a.flags = ompi_osc_gpuic_stream_rma_flags(st, target);
    return ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_ACC, 1, a.count <= 32 ? 32 : 256, stream, &a);
}

int ompi_osc_gpuic_stream_fetch_and_op(const void *origin, void *result,
                                       struct ompi_datatype_t *dt, int target, ptrdiff_t tdisp,
                                       struct ompi_op_t *op, struct ompi_win_t *win,
                                       void *stream)
{
    mpix_gpuic_stream_rma_args_t a;
    int rc = ompi_osc_gpuic_stream_atomic_prepare(win, dt, target, tdisp, &a);
    size_t esize = ompi_osc_gpuic_stream_type_size(a.type);

    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_op(op, a.type, true, &a.op);
    }
    if (rc == MPI_SUCCESS && a.op != OMPI_OSC_GPUIC_STREAM_NO_OP) {
        rc = ompi_osc_gpuic_stream_buffer(origin, 0, esize, &a.origin);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_buffer(result, 0, esize, &a.result);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_FOP, 1, 1, stream, &a);
}

int ompi_osc_gpuic_stream_compare_and_swap(const void *origin, const void *compare,
                                           void *result, struct ompi_datatype_t *dt, int target,
                                           ptrdiff_t tdisp, struct ompi_win_t *win, void *stream)
{
    mpix_gpuic_stream_rma_args_t a;
    int rc = ompi_osc_gpuic_stream_atomic_prepare(win, dt, target, tdisp, &a);

    if (rc == MPI_SUCCESS &&
        (a.type == OMPI_OSC_GPUIC_STREAM_FLOAT || a.type == OMPI_OSC_GPUIC_STREAM_DOUBLE)) {
        rc = MPI_ERR_TYPE; /* MPI allows integer, logical and byte types only */
    } else if (rc == MPI_SUCCESS && ompi_osc_gpuic_stream_type_size(a.type) != 8) {
        rc = MPI_ERR_UNSUPPORTED_OPERATION; /* the device API swaps 8-byte words */
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_buffer(origin, 0, 8, &a.origin);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_buffer(compare, 0, 8, &a.compare);
    }
    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_buffer(result, 0, 8, &a.result);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_CAS, 1, 1, stream, &a);
}

/* ---------------------------------------------------------------------------------------- */
/* Completion.                                                                              */

static int ompi_osc_gpuic_stream_flush_any(int kernel, int target, struct ompi_win_t *win,
                                           void *stream)
{
    ompi_osc_gpuic_module_t *module;
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_rma_args_t a;
    int rc, i;

    if (kernel != MPIX_GPUIC_K_FLUSH_ALL) {
        rc = ompi_osc_gpuic_stream_target_begin(win, target, &module, &st);
        if (rc == MPI_SUCCESS) {
            rc = ompi_osc_gpuic_stream_target_ready(module, st, target, true);
        }
    } else {
        rc = ompi_osc_gpuic_stream_state_get(win, &module, &st);
        if (rc == MPI_SUCCESS) {
            /* flush_all: a passive epoch covering the targets (any one tells) */
            for (i = 0, rc = MPI_ERR_RMA_SYNC; i < st->nranks && rc != MPI_SUCCESS; ++i) {
                rc = ompi_osc_gpuic_stream_check_access(module, st, i, true);
            }
        }
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Nothing to run when every operation the flush covers completed with its own kernel
     * (ompi_osc_gpuic_stream_self_completing), and for flush_local always: every RMA kernel
     * has read its origin before it ends, on the proxy path into the entry or its staging
     * area. */
    if (kernel == MPIX_GPUIC_K_FLUSH_LOCAL ||
        (kernel == MPIX_GPUIC_K_FLUSH && ompi_osc_gpuic_stream_self_completing(st, target)) ||
        (kernel == MPIX_GPUIC_K_FLUSH_ALL && st->all_p2p)) {
        return MPI_SUCCESS;
    }
    memset(&a, 0, sizeof(a));
    a.win = st->win_value;
    a.target = target;
    return ompi_osc_gpuic_stream_launch(kernel, 1, 1, stream, &a);
}

int ompi_osc_gpuic_stream_flush(int target, struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_flush_any(MPIX_GPUIC_K_FLUSH, target, win, stream);
}

int ompi_osc_gpuic_stream_flush_all(struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_flush_any(MPIX_GPUIC_K_FLUSH_ALL, 0, win, stream);
}

int ompi_osc_gpuic_stream_flush_local(int target, struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_flush_any(MPIX_GPUIC_K_FLUSH_LOCAL, target, win, stream);
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */
