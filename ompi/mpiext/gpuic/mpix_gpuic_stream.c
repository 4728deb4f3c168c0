/*
 * Stream-triggered MPI calls (MPIX_*_enqueue, mpix_gpuic.h): every call is checked here, on
 * the host, and then becomes one small kernel launched on the caller's stream
 * (mpix_gpuic_stream_kernels.cu, embedded in this library); the kernel does the call with the
 * device API.  The component launches it through the run-time-loaded driver, so this library
 * links no CUDA library, and builds the per-window synchronization state the epoch kernels use
 * (osc_gpuic_stream.c).
 */
#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/win/win.h"

#include "mpix_gpuic.h"
#include "mpix_gpuic_internal.h"
#include "osc_gpuic_stream_ext.h"

#ifdef MPIX_GPUIC_HAVE_STREAM

/* Operations and element types the kernels know (values of mpix_gpuic_device.cuh's enums,
 * which are C++ only). */
enum {
    MPIX_STREAM_SUM, MPIX_STREAM_PROD, MPIX_STREAM_MIN, MPIX_STREAM_MAX, MPIX_STREAM_BAND,
    MPIX_STREAM_BOR, MPIX_STREAM_BXOR, MPIX_STREAM_LAND, MPIX_STREAM_LOR, MPIX_STREAM_LXOR,
    MPIX_STREAM_REPLACE, MPIX_STREAM_NO_OP
};
enum {
    MPIX_STREAM_INT32, MPIX_STREAM_UINT32, MPIX_STREAM_INT64, MPIX_STREAM_UINT64,
    MPIX_STREAM_FLOAT, MPIX_STREAM_DOUBLE
};

/* Kernel names, by mpix_gpuic_stream_kernel_t. */
static const char *const mpix_stream_names[MPIX_GPUIC_K_COUNT] = {
    [MPIX_GPUIC_K_PUT] = "mpix_gpuic_k_put",
    [MPIX_GPUIC_K_GET] = "mpix_gpuic_k_get",
    [MPIX_GPUIC_K_ACC] = "mpix_gpuic_k_acc",
    [MPIX_GPUIC_K_FOP] = "mpix_gpuic_k_fop",
    [MPIX_GPUIC_K_CAS] = "mpix_gpuic_k_cas",
    [MPIX_GPUIC_K_FLUSH] = "mpix_gpuic_k_flush",
    [MPIX_GPUIC_K_FLUSH_ALL] = "mpix_gpuic_k_flush_all",
    [MPIX_GPUIC_K_FLUSH_LOCAL] = "mpix_gpuic_k_flush_local",
    [MPIX_GPUIC_K_FENCE] = "mpix_gpuic_k_fence",
    [MPIX_GPUIC_K_LOCK_ALL] = "mpix_gpuic_k_lock_all",
    [MPIX_GPUIC_K_UNLOCK_ALL] = "mpix_gpuic_k_unlock_all",
    [MPIX_GPUIC_K_POST] = "mpix_gpuic_k_post",
    [MPIX_GPUIC_K_START] = "mpix_gpuic_k_start",
    [MPIX_GPUIC_K_COMPLETE] = "mpix_gpuic_k_complete",
    [MPIX_GPUIC_K_WAIT] = "mpix_gpuic_k_wait",
    [MPIX_GPUIC_K_COPY_SMALL] = "mpix_gpuic_k_copy_small",
};

static const ompi_osc_gpuic_stream_image_t mpix_stream_image = {
    .image = mpix_gpuic_stream_image,
    .names = mpix_stream_names,
    .nkernels = MPIX_GPUIC_K_COUNT,
};

/* What a call works with: the window's extension entry points and stream state. */
typedef struct mpix_stream_ctx {
    MPI_Win                     win;
    ompi_osc_gpuic_ext_t        *ext;
    const ompi_osc_gpuic_stream_ops_t *ops;
    ompi_osc_gpuic_stream_win_t *sw;
} mpix_stream_ctx_t;

/* Kinds of reach a call needs of a target. */
typedef enum mpix_stream_reach {
    MPIX_STREAM_REACH_DATA, /* its window memory (RMA, flush) */
    MPIX_STREAM_REACH_SYNC  /* its sync block (fence, PSCW, lock_all) */
} mpix_stream_reach_t;

static int mpix_stream_begin(MPI_Win win, mpix_stream_ctx_t *c)
{
    c->win = win;
    c->ext = mpix_gpuic_ext(win);
    if (c->ext == NULL) {
        return MPI_ERR_WIN;
    }
    c->ops = c->ext->stream;
    if (c->ops == NULL) {
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return c->ops->window(win->w_osc_module, &c->sw);
}

/*
 * The one place that refuses targets the device cannot reach: today those the window's
 * device handle marks MPIX_GPUIC_DEVICE_PATH_NONE (host-memory windows, other nodes).  The
 * kernels only use the device API, so a target it learns to reach needs no other change here.
 */
static int mpix_stream_reachable(const mpix_stream_ctx_t *c, int rank, mpix_stream_reach_t reach)
{
    const ompi_osc_gpuic_stream_peer_t *p = &c->sw->peers[rank];
    int32_t path = reach == MPIX_STREAM_REACH_DATA ? p->data_path : p->sync_path;

    return path == MPIX_GPUIC_DEVICE_PATH_NONE ? MPI_ERR_UNSUPPORTED_OPERATION : MPI_SUCCESS;
}

static int mpix_stream_check_rank(const mpix_stream_ctx_t *c, int rank)
{
    return rank >= 0 && rank < c->sw->nranks ? MPI_SUCCESS : MPI_ERR_RANK;
}

/*
 * Bytes of (count, dt) when its elements are one contiguous run, and the offset of the run's
 * first byte from the buffer address.
 */
static int mpix_stream_contig(int count, MPI_Datatype dt, size_t *bytes_p, MPI_Aint *lb_p)
{
    MPI_Count size = 0, lb, extent, tlb, textent;

    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    if (dt == MPI_DATATYPE_NULL || MPI_Type_size_x(dt, &size) != MPI_SUCCESS ||
        MPI_Type_get_extent_x(dt, &lb, &extent) != MPI_SUCCESS ||
        MPI_Type_get_true_extent_x(dt, &tlb, &textent) != MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (size > 0 && (textent != size || (count > 1 && extent != size))) {
        return MPI_ERR_TYPE; /* holes, or elements that do not follow each other */
    }
    *bytes_p = (size_t)count * (size_t)size;
    *lb_p = (MPI_Aint)tlb;
    return MPI_SUCCESS;
}

/* The predefined element type behind @p dt, if the kernels know it. */
static int mpix_stream_named_type(MPI_Datatype dt, int *type_p)
{
    if (dt == MPI_INT32_T || (dt == MPI_INT && sizeof(int) == 4)) {
        *type_p = MPIX_STREAM_INT32;
    } else if (dt == MPI_UINT32_T || (dt == MPI_UNSIGNED && sizeof(unsigned) == 4)) {
        *type_p = MPIX_STREAM_UINT32;
    } else if (dt == MPI_INT64_T || dt == MPI_LONG_LONG_INT || dt == MPI_LONG_LONG ||
               (dt == MPI_LONG && sizeof(long) == 8)) {
        *type_p = MPIX_STREAM_INT64;
    } else if (dt == MPI_UINT64_T || dt == MPI_UNSIGNED_LONG_LONG ||
               (dt == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8)) {
        *type_p = MPIX_STREAM_UINT64;
    } else if (dt == MPI_FLOAT) {
        *type_p = MPIX_STREAM_FLOAT;
    } else if (dt == MPI_DOUBLE) {
        *type_p = MPIX_STREAM_DOUBLE;
    } else {
        return MPI_ERR_TYPE;
    }
    return MPI_SUCCESS;
}

/*
 * Element type and elements per item of an accumulate datatype: a predefined type the
 * kernels know, or a contiguous or duplicated type built from one (depth-limited).
 */
static int mpix_stream_elem_type(MPI_Datatype dt, int depth, int *type_p, long *per_p)
{
    int ni = 0, na = 0, nd = 0, combiner = 0, ints[1] = {0}, rc;
    MPI_Aint addrs[1];
    MPI_Datatype inner = MPI_DATATYPE_NULL;
    long per = 1;

    if (dt == MPI_DATATYPE_NULL || depth > 8 ||
        MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (combiner == MPI_COMBINER_NAMED) {
        *per_p = 1;
        return mpix_stream_named_type(dt, type_p);
    }
    if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || ni > 1 ||
        na != 0 || nd != 1 || MPI_Type_get_contents(dt, ni, 0, 1, ints, addrs, &inner) !=
                                  MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (combiner == MPI_COMBINER_CONTIGUOUS) {
        per = ints[0];
    }
    rc = mpix_stream_elem_type(inner, depth + 1, type_p, per_p);
    *per_p *= per;
    if (MPI_Type_get_envelope(inner, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
        combiner != MPI_COMBINER_NAMED) {
        MPI_Type_free(&inner); /* get_contents handed us a copy */
    }
    return rc;
}

/* The kernels' operation for @p op; MPI_ERR_OP for what they cannot do. */
static int mpix_stream_op(MPI_Op op, int type, bool allow_no_op, int *op_p)
{
    static const struct {
        MPI_Op mpi;
        int op;
        bool integer_only;
    } map[] = {
        {MPI_SUM, MPIX_STREAM_SUM, false},
        {MPI_PROD, MPIX_STREAM_PROD, false},
        {MPI_MIN, MPIX_STREAM_MIN, false},
        {MPI_MAX, MPIX_STREAM_MAX, false},
        {MPI_BAND, MPIX_STREAM_BAND, true},
        {MPI_BOR, MPIX_STREAM_BOR, true},
        {MPI_BXOR, MPIX_STREAM_BXOR, true},
        {MPI_LAND, MPIX_STREAM_LAND, true},
        {MPI_LOR, MPIX_STREAM_LOR, true},
        {MPI_LXOR, MPIX_STREAM_LXOR, true},
        {MPI_REPLACE, MPIX_STREAM_REPLACE, false},
        {MPI_NO_OP, MPIX_STREAM_NO_OP, false},
    };
    bool is_float = type == MPIX_STREAM_FLOAT || type == MPIX_STREAM_DOUBLE;

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (op == map[i].mpi) {
            if ((map[i].integer_only && is_float) ||
                (map[i].op == MPIX_STREAM_NO_OP && !allow_no_op)) {
                return MPI_ERR_OP;
            }
            *op_p = map[i].op;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_OP;
}

/* MPI_ERR_RMA_RANGE unless [disp, disp + bytes) in the target's units lies in its window. */
static int mpix_stream_check_range(const mpix_stream_ctx_t *c, int rank, MPI_Aint disp,
                                   size_t bytes)
{
    const ompi_osc_gpuic_stream_peer_t *p = &c->sw->peers[rank];
    uint64_t du = p->disp_unit > 0 ? (uint64_t)p->disp_unit : 1, off;

    if (disp < 0 || (uint64_t)disp > UINT64_MAX / du) {
        return MPI_ERR_RMA_RANGE;
    }
    off = (uint64_t)disp * du;
    return off <= p->size && bytes <= p->size - off ? MPI_SUCCESS : MPI_ERR_RMA_RANGE;
}

/* MPI_ERR_RMA_SYNC unless an enqueued or host access epoch covers @p rank (a passive-target
 * one when @p passive). */
static int mpix_stream_check_access(const mpix_stream_ctx_t *c, int rank, bool passive)
{
    ompi_osc_gpuic_stream_win_t *sw = c->sw;
    bool ok;
    int host_passive = 0;

    pthread_mutex_lock(&sw->lock);
    switch (sw->epoch) {
    case OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL:
        ok = true;
        break;
    case OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE:
        ok = !passive;
        break;
    case OMPI_OSC_GPUIC_STREAM_EPOCH_START:
        ok = !passive && rank < MPIX_GPUIC_STREAM_GROUP_MAX &&
             ((sw->start_group[rank / 64] >> (rank % 64)) & 1u);
        break;
    default:
        ok = false;
        break;
    }
    pthread_mutex_unlock(&sw->lock);
    if (!ok && c->ops->host_access(c->win->w_osc_module, rank, &host_passive) == MPI_SUCCESS) {
        ok = !passive || host_passive;
    }
    return ok ? MPI_SUCCESS : MPI_ERR_RMA_SYNC;
}

/* The device address of a user buffer (NULL only when nothing is read or written there). */
static int mpix_stream_buffer(const mpix_stream_ctx_t *c, const void *ptr, MPI_Aint lb,
                              size_t bytes, uint64_t *dptr_p)
{
    *dptr_p = 0;
    if (bytes == 0) {
        return MPI_SUCCESS;
    }
    if (ptr == NULL) {
        return MPI_ERR_BUFFER;
    }
    return c->ops->buffer((const char *)ptr + lb, dptr_p);
}

/* The ordering scope of what the RMA kernels write at @p rank (MPIX_GPUIC_STREAM_SAME_GPU). */
static uint32_t mpix_stream_rma_flags(const mpix_stream_ctx_t *c, int rank)
{
    return (c->sw->peers[rank].flags & MPIX_GPUIC_DEVICE_PEER_SAME_GPU) ? MPIX_GPUIC_STREAM_SAME_GPU
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
static bool mpix_stream_self_completing(const mpix_stream_ctx_t *c, int rank)
{
    return c->sw->peers[rank].data_path == MPIX_GPUIC_DEVICE_PATH_P2P;
}

static int mpix_stream_launch(const mpix_stream_ctx_t *c, int kernel, unsigned grid,
                              unsigned block, void *stream, void *args)
{
    return c->ops->launch(&mpix_stream_image, kernel, grid, block, stream, args);
}

/* ---------------------------------------------------------------------------------------- */
/* Put and get.                                                                             */

static uint64_t mpix_stream_gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static int mpix_stream_xfer(bool is_put, void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Win win,
                            void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_rma_args_t a;
    size_t obytes, tbytes;
    MPI_Aint olb, tlb;
    uint64_t du = 1, unit, blocks, chunk, dptr;
    int rc;

    rc = mpix_stream_begin(win, &c);
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_rank(&c, target_rank);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_contig(origin_count, origin_datatype, &obytes, &olb);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_contig(target_count, target_datatype, &tbytes, &tlb);
    }
    if (rc == MPI_SUCCESS && obytes != tbytes) {
        rc = MPI_ERR_TYPE;
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_buffer(&c, origin_addr, olb, obytes, &dptr);
    }
    if (rc == MPI_SUCCESS) {
        du = c.sw->peers[target_rank].disp_unit > 0 ? (uint64_t)c.sw->peers[target_rank].disp_unit
                                                    : 1;
        if (tlb % (MPI_Aint)du != 0) {
            rc = MPI_ERR_TYPE; /* a target layout starting inside a displacement unit */
        } else if (tlb > 0 && target_disp > INT64_MAX - tlb / (MPI_Aint)du) {
            rc = MPI_ERR_RMA_RANGE;
        }
    }
    /* The range the data really covers, lower bound included: the small-copy kernel writes
     * where the host tells it, with no check of its own. */
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_range(&c, target_rank, target_disp + tlb / (MPI_Aint)du, tbytes);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_reachable(&c, target_rank, MPIX_STREAM_REACH_DATA);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_access(&c, target_rank, false);
    }
    if (rc != MPI_SUCCESS || obytes == 0) {
        return rc;
    }
    if (obytes <= MPIX_GPUIC_STREAM_SMALL_BYTES && mpix_stream_self_completing(&c, target_rank) &&
        c.sw->peers[target_rank].base != 0) {
        /* the range was checked above against the same description of the target */
        mpix_gpuic_stream_copy_args_t small;
        uint64_t remote = c.sw->peers[target_rank].base +
                          (uint64_t)(target_disp + tlb / (MPI_Aint)du) * du;

        small.dst = is_put ? remote : dptr;
        small.src = is_put ? dptr : remote;
        small.bytes = obytes;
        small.flags = mpix_stream_rma_flags(&c, target_rank);
        small.reserved = 0;
        return mpix_stream_launch(&c, MPIX_GPUIC_K_COPY_SMALL, 1, 32, stream, &small);
    }
    /* One block per chunk of about 64 KiB, each a whole number of the target's displacement
     * units and of 16 bytes (the widest copy unit). */
    memset(&a, 0, sizeof(a));
    unit = du / mpix_stream_gcd(du, 16) * 16;
    blocks = (obytes + 65535) / 65536;
    blocks = blocks > 1024 ? 1024 : blocks;
    chunk = (obytes + blocks - 1) / blocks;
    chunk = (chunk + unit - 1) / unit * unit;
    a.win = (MPIX_Win_device)c.sw->win;
    a.origin = is_put ? dptr : 0;
    a.result = is_put ? 0 : dptr;
    a.bytes = obytes;
    a.chunk = chunk;
    a.disp = (int64_t)target_disp + (int64_t)(tlb / (MPI_Aint)du);
    a.chunk_disp = (int64_t)(chunk / du);
    a.target = target_rank;
    a.flags = mpix_stream_rma_flags(&c, target_rank);
    return mpix_stream_launch(&c, is_put ? MPIX_GPUIC_K_PUT : MPIX_GPUIC_K_GET,
                              (unsigned)((obytes + chunk - 1) / chunk),
                              obytes <= 512 ? 32 : 256, stream, &a);
}

int MPIX_Put_enqueue(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    return mpix_stream_xfer(true, (void *)origin_addr, origin_count, origin_datatype,
                            target_rank, target_disp, target_count, target_datatype, win,
                            stream);
}

int MPIX_Get_enqueue(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    return mpix_stream_xfer(false, origin_addr, origin_count, origin_datatype, target_rank,
                            target_disp, target_count, target_datatype, win, stream);
}

/* ---------------------------------------------------------------------------------------- */
/* Accumulate family.                                                                       */

static size_t mpix_stream_type_size(int type)
{
    return type == MPIX_STREAM_INT32 || type == MPIX_STREAM_UINT32 || type == MPIX_STREAM_FLOAT
               ? 4
               : 8;
}

/* Checks shared by the atomic calls on one element: window, rank, datatype, range, reach,
 * epoch.  Sets a->win, target, disp, type. */
static int mpix_stream_atomic_prepare(mpix_stream_ctx_t *c, MPI_Datatype datatype,
                                      int target_rank, MPI_Aint target_disp, MPI_Win win,
                                      mpix_gpuic_stream_rma_args_t *a)
{
    long per = 0;
    int type = 0;
    int rc = mpix_stream_begin(win, c);

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_rank(c, target_rank);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_elem_type(datatype, 0, &type, &per);
        if (rc == MPI_SUCCESS && per != 1) {
            rc = MPI_ERR_TYPE;
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_range(c, target_rank, target_disp, mpix_stream_type_size(type));
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_reachable(c, target_rank, MPIX_STREAM_REACH_DATA);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_access(c, target_rank, false);
    }
    memset(a, 0, sizeof(*a));
    a->win = rc == MPI_SUCCESS ? (MPIX_Win_device)c->sw->win : NULL;
    a->target = target_rank;
    a->disp = (int64_t)target_disp;
    a->type = type;
    a->count = 1;
    a->flags = rc == MPI_SUCCESS ? mpix_stream_rma_flags(c, target_rank) : 0;
    return rc;
}

int MPIX_Accumulate_enqueue(const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_rma_args_t a;
    long oper = 0, tper = 0;
    int otype = 0, ttype = 0, kop = 0, rc;
    size_t bytes = 0;
    uint64_t dptr = 0;

    rc = mpix_stream_begin(win, &c);
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_rank(&c, target_rank);
    }
    if (rc == MPI_SUCCESS && (origin_count < 0 || target_count < 0)) {
        rc = MPI_ERR_COUNT;
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_elem_type(origin_datatype, 0, &otype, &oper);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_elem_type(target_datatype, 0, &ttype, &tper);
    }
    if (rc == MPI_SUCCESS && (otype != ttype || (long)origin_count * oper !=
                                                    (long)target_count * tper ||
                              (long)target_count * tper > INT32_MAX)) {
        rc = MPI_ERR_TYPE;
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_op(op, ttype, false, &kop);
    }
    if (rc == MPI_SUCCESS) {
        bytes = (size_t)target_count * (size_t)tper * mpix_stream_type_size(ttype);
        rc = mpix_stream_buffer(&c, origin_addr, 0, bytes, &dptr);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_range(&c, target_rank, target_disp, bytes);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_reachable(&c, target_rank, MPIX_STREAM_REACH_DATA);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_access(&c, target_rank, false);
    }
    if (rc != MPI_SUCCESS || bytes == 0) {
        return rc;
    }
    memset(&a, 0, sizeof(a));
    a.win = (MPIX_Win_device)c.sw->win;
    a.origin = dptr;
    a.target = target_rank;
    a.disp = (int64_t)target_disp;
    a.count = (int32_t)((long)target_count * tper);
    a.type = ttype;
    a.op = kop;
    a.flags = mpix_stream_rma_flags(&c, target_rank);
    return mpix_stream_launch(&c, MPIX_GPUIC_K_ACC, 1, a.count <= 32 ? 32 : 256, stream, &a);
}

int MPIX_Fetch_and_op_enqueue(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                              int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win,
                              void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_rma_args_t a;
    int rc = mpix_stream_atomic_prepare(&c, datatype, target_rank, target_disp, win, &a);
    size_t esize = mpix_stream_type_size(a.type);

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_op(op, a.type, true, &a.op);
    }
    if (rc == MPI_SUCCESS && a.op != MPIX_STREAM_NO_OP) {
        rc = mpix_stream_buffer(&c, origin_addr, 0, esize, &a.origin);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_buffer(&c, result_addr, 0, esize, &a.result);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return mpix_stream_launch(&c, MPIX_GPUIC_K_FOP, 1, 1, stream, &a);
}

int MPIX_Compare_and_swap_enqueue(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, MPI_Datatype datatype, int target_rank,
                                  MPI_Aint target_disp, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_rma_args_t a;
    int rc = mpix_stream_atomic_prepare(&c, datatype, target_rank, target_disp, win, &a);

    if (rc == MPI_SUCCESS && (a.type == MPIX_STREAM_FLOAT || a.type == MPIX_STREAM_DOUBLE)) {
        rc = MPI_ERR_TYPE; /* MPI allows integer, logical and byte types only */
    } else if (rc == MPI_SUCCESS && mpix_stream_type_size(a.type) != 8) {
        rc = MPI_ERR_UNSUPPORTED_OPERATION; /* the device API swaps 8-byte words */
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_buffer(&c, origin_addr, 0, 8, &a.origin);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_buffer(&c, compare_addr, 0, 8, &a.compare);
    }
    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_buffer(&c, result_addr, 0, 8, &a.result);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return mpix_stream_launch(&c, MPIX_GPUIC_K_CAS, 1, 1, stream, &a);
}

/* ---------------------------------------------------------------------------------------- */
/* Completion.                                                                              */

static void mpix_stream_sync_args(const mpix_stream_ctx_t *c, int target,
                                  mpix_gpuic_stream_sync_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->win = (MPIX_Win_device)c->sw->win;
    a->sync = (MPIX_Win_device)c->sw->sync;
    a->own = c->sw->own;
    a->blocks_dev = c->sw->blocks_dev;
    a->target = target;
    a->nranks = c->sw->nranks;
    a->rank = c->sw->rank;
    a->flags = c->sw->sync_flags;
    for (int r = 0; r < c->sw->nranks && r < MPIX_GPUIC_STREAM_INLINE_BLOCKS; ++r) {
        a->blocks[r] = c->sw->peers[r].block;
    }
}

/* Threads of a synchronization kernel: one per rank, up to 256. */
static unsigned mpix_stream_sync_threads(const mpix_stream_ctx_t *c)
{
    unsigned n = (unsigned)c->sw->nranks;

    n = (n + 31) / 32 * 32;
    return n > 256 ? 256 : n;
}

static int mpix_stream_flush(int kernel, int rank, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_rma_args_t a;
    int rc = mpix_stream_begin(win, &c), i;

    if (rc == MPI_SUCCESS && kernel != MPIX_GPUIC_K_FLUSH_ALL) {
        rc = mpix_stream_check_rank(&c, rank);
        if (rc == MPI_SUCCESS) {
            rc = mpix_stream_reachable(&c, rank, MPIX_STREAM_REACH_DATA);
        }
        if (rc == MPI_SUCCESS) {
            rc = mpix_stream_check_access(&c, rank, true);
        }
    } else if (rc == MPI_SUCCESS) {
        /* flush_all: a passive epoch covering the targets (any one tells) */
        for (i = 0, rc = MPI_ERR_RMA_SYNC; i < c.sw->nranks && rc != MPI_SUCCESS; ++i) {
            rc = mpix_stream_check_access(&c, i, true);
        }
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Nothing to run when every operation the flush covers completed with its own kernel
     * (mpix_stream_self_completing), and for flush_local always: every RMA kernel has read its
     * origin before it ends, on the proxy path into the entry or its staging area. */
    if (kernel == MPIX_GPUIC_K_FLUSH_LOCAL ||
        (kernel == MPIX_GPUIC_K_FLUSH && mpix_stream_self_completing(&c, rank)) ||
        (kernel == MPIX_GPUIC_K_FLUSH_ALL && c.sw->all_p2p)) {
        return MPI_SUCCESS;
    }
    memset(&a, 0, sizeof(a));
    a.win = (MPIX_Win_device)c.sw->win;
    a.target = rank;
    return mpix_stream_launch(&c, kernel, 1, 1, stream, &a);
}

int MPIX_Win_flush_enqueue(int rank, MPI_Win win, void *stream)
{
    return mpix_stream_flush(MPIX_GPUIC_K_FLUSH, rank, win, stream);
}

int MPIX_Win_flush_all_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_flush(MPIX_GPUIC_K_FLUSH_ALL, 0, win, stream);
}

int MPIX_Win_flush_local_enqueue(int rank, MPI_Win win, void *stream)
{
    return mpix_stream_flush(MPIX_GPUIC_K_FLUSH_LOCAL, rank, win, stream);
}

/* ---------------------------------------------------------------------------------------- */
/* Epochs: checked and recorded in enqueue order under the window's stream lock, and launched */
/* under it too, so that two threads cannot launch one window's epoch calls out of order.     */

static int mpix_stream_check_assert(int mpi_assert, int allowed)
{
    return (mpi_assert & ~allowed) == 0 ? MPI_SUCCESS : MPI_ERR_ASSERT;
}

/* Fills @p bits with the window ranks of @p group, each one sync-reachable. */
static int mpix_stream_group_bits(const mpix_stream_ctx_t *c, MPI_Group group, uint64_t *bits)
{
    MPI_Group wgroup = MPI_GROUP_NULL;
    int n = 0, i, rc;
    int *in = NULL, *out = NULL;

    memset(bits, 0, MPIX_GPUIC_STREAM_GROUP_WORDS * sizeof(uint64_t));
    if (group == MPI_GROUP_NULL || MPI_Group_size(group, &n) != MPI_SUCCESS) {
        return MPI_ERR_GROUP;
    }
    if (n == 0) {
        return MPI_SUCCESS;
    }
    in = malloc(2 * (size_t)n * sizeof(int));
    if (in == NULL) {
        return MPI_ERR_NO_MEM;
    }
    out = in + n;
    for (i = 0; i < n; ++i) {
        in[i] = i;
    }
    rc = MPI_Win_get_group(c->win, &wgroup);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Group_translate_ranks(group, n, in, wgroup, out) == MPI_SUCCESS ? MPI_SUCCESS
                                                                                : MPI_ERR_GROUP;
        MPI_Group_free(&wgroup);
    }
    for (i = 0; rc == MPI_SUCCESS && i < n; ++i) {
        if (out[i] == MPI_UNDEFINED) {
            rc = MPI_ERR_GROUP; /* not a process of the window */
        } else if (out[i] >= MPIX_GPUIC_STREAM_GROUP_MAX) {
            rc = MPI_ERR_UNSUPPORTED_OPERATION;
        } else {
            rc = mpix_stream_reachable(c, out[i], MPIX_STREAM_REACH_SYNC);
            bits[out[i] / 64] |= 1ull << (out[i] % 64);
        }
    }
    free(in);
    return rc;
}

int MPIX_Win_fence_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c), i;

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_assert(mpi_assert, MPI_MODE_NOSTORE | MPI_MODE_NOPUT |
                                                      MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED);
    }
    for (i = 0; rc == MPI_SUCCESS && i < c.sw->nranks; ++i) {
        rc = mpix_stream_reachable(&c, i, MPIX_STREAM_REACH_SYNC);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    mpix_stream_sync_args(&c, -1, &a);
    pthread_mutex_lock(&c.sw->lock);
    if (c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_NONE &&
        c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        rc = mpix_stream_launch(&c, MPIX_GPUIC_K_FENCE, 1, mpix_stream_sync_threads(&c), stream,
                                &a);
    }
    if (rc == MPI_SUCCESS) {
        c.sw->epoch = (mpi_assert & MPI_MODE_NOSUCCEED) ? OMPI_OSC_GPUIC_STREAM_EPOCH_NONE
                                                        : OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE;
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

int MPIX_Win_lock_all_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c), i;

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_assert(mpi_assert, MPI_MODE_NOCHECK);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    mpix_stream_sync_args(&c, -1, &a);
    /* Shared access to every target the lock words can be reached for. */
    for (i = 0; i < c.sw->nranks && i < MPIX_GPUIC_STREAM_GROUP_MAX; ++i) {
        if (mpix_stream_reachable(&c, i, MPIX_STREAM_REACH_SYNC) == MPI_SUCCESS) {
            a.group[i / 64] |= 1ull << (i % 64);
        }
    }
    pthread_mutex_lock(&c.sw->lock);
    if (c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_NONE &&
        c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        rc = mpix_stream_launch(&c, MPIX_GPUIC_K_LOCK_ALL, 1, mpix_stream_sync_threads(&c),
                                stream, &a);
    }
    if (rc == MPI_SUCCESS) {
        c.sw->epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL;
        memcpy(c.sw->start_group, a.group, sizeof(a.group)); /* unlock_all gives these back */
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

/*
 * Ends the access epoch @p open (lock_all or start) with kernel @p kernel, which gives back
 * what the opening call took for the group it recorded: the closing half of unlock_all and
 * complete.  MPI_ERR_RMA_SYNC when that epoch is not open.
 */
static int mpix_stream_epoch_close(MPI_Win win, void *stream, int open, int kernel)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    mpix_stream_sync_args(&c, -1, &a);
    pthread_mutex_lock(&c.sw->lock);
    if (c.sw->epoch != open) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        memcpy(a.group, c.sw->start_group, sizeof(a.group));
        rc = mpix_stream_launch(&c, kernel, 1, mpix_stream_sync_threads(&c), stream, &a);
    }
    if (rc == MPI_SUCCESS) {
        c.sw->epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_NONE;
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

int MPIX_Win_unlock_all_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_epoch_close(win, stream, OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL,
                                   MPIX_GPUIC_K_UNLOCK_ALL);
}

int MPIX_Win_post_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c);

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_assert(mpi_assert,
                                      MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT);
    }
    if (rc == MPI_SUCCESS) {
        mpix_stream_sync_args(&c, -1, &a);
        rc = mpix_stream_group_bits(&c, group, a.group);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&c.sw->lock);
    rc = c.sw->exposed ? MPI_ERR_RMA_SYNC
                       : mpix_stream_launch(&c, MPIX_GPUIC_K_POST, 1,
                                            mpix_stream_sync_threads(&c), stream, &a);
    if (rc == MPI_SUCCESS) {
        c.sw->exposed = 1;
        memcpy(c.sw->post_group, a.group, sizeof(a.group));
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

int MPIX_Win_start_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c);

    if (rc == MPI_SUCCESS) {
        rc = mpix_stream_check_assert(mpi_assert, MPI_MODE_NOCHECK);
    }
    if (rc == MPI_SUCCESS) {
        mpix_stream_sync_args(&c, -1, &a);
        rc = mpix_stream_group_bits(&c, group, a.group);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&c.sw->lock);
    if (c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_NONE &&
        c.sw->epoch != OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        rc = mpix_stream_launch(&c, MPIX_GPUIC_K_START, 1, mpix_stream_sync_threads(&c), stream,
                                &a);
    }
    if (rc == MPI_SUCCESS) {
        c.sw->epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_START;
        memcpy(c.sw->start_group, a.group, sizeof(a.group));
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

int MPIX_Win_complete_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_epoch_close(win, stream, OMPI_OSC_GPUIC_STREAM_EPOCH_START,
                                   MPIX_GPUIC_K_COMPLETE);
}

int MPIX_Win_wait_enqueue(MPI_Win win, void *stream)
{
    mpix_stream_ctx_t c;
    mpix_gpuic_stream_sync_args_t a;
    int rc = mpix_stream_begin(win, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    mpix_stream_sync_args(&c, -1, &a);
    pthread_mutex_lock(&c.sw->lock);
    if (!c.sw->exposed) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        memcpy(a.group, c.sw->post_group, sizeof(a.group));
        rc = mpix_stream_launch(&c, MPIX_GPUIC_K_WAIT, 1, mpix_stream_sync_threads(&c), stream,
                                &a);
    }
    if (rc == MPI_SUCCESS) {
        c.sw->exposed = 0;
    }
    pthread_mutex_unlock(&c.sw->lock);
    return rc;
}

#else /* !MPIX_GPUIC_HAVE_STREAM: built without CUDA or nvcc */

/* The window is still checked, so that a wrong handle reads the same in every build. */
static int mpix_stream_unsupported(MPI_Win win)
{
    return mpix_gpuic_ext(win) == NULL ? MPI_ERR_WIN : MPI_ERR_UNSUPPORTED_OPERATION;
}

int MPIX_Put_enqueue(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Get_enqueue(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Accumulate_enqueue(const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Fetch_and_op_enqueue(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                              int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win,
                              void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Compare_and_swap_enqueue(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, MPI_Datatype datatype, int target_rank,
                                  MPI_Aint target_disp, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_flush_enqueue(int rank, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_flush_all_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_flush_local_enqueue(int rank, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_fence_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_lock_all_enqueue(int mpi_assert, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_unlock_all_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_post_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_start_enqueue(MPI_Group group, int mpi_assert, MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_complete_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

int MPIX_Win_wait_enqueue(MPI_Win win, void *stream)
{
    return mpix_stream_unsupported(win);
}

#endif /* MPIX_GPUIC_HAVE_STREAM */
