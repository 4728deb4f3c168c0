/*
 * Accumulate-family calls on GPU windows executed on the GPU: MPI_Accumulate,
 * MPI_Get_accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap (and their request forms) whose
 * target region this process maps (its own window, or a same-node peer's through CUDA IPC) run
 * as one kernel of the component's image (mpix_gpuic_k_host_acc, mpix_gpuic_k_host_cas in
 * osc_gpuic_stream_kernels.cu) on the window's own stream, and return once it has completed.
 *
 * Each target element is updated by one device atomic, so these calls are element-wise atomic
 * with each other and with the device API's atomics and accumulates on the same elements
 * (kernels of any process, any epoch).  Against the host's other accumulate paths (the
 * target's accumulate lock, taken by origins that cannot map the memory and by element types
 * the kernels do not know) they announce themselves like single-element CPU atomics:
 * ompi_osc_gpuic_acc_enter before the launch, ompi_osc_gpuic_acc_leave after it completed.
 *
 * Buffers: a device origin or result laid out as packed elements is handed to the kernel as
 * it is; anything else goes through the window's mapped pinned staging buffer, which the
 * kernel reads and writes directly.  A target datatype with gaps becomes a list of runs of
 * elements (one kernel block per run).
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

/* Most runs a target datatype may split into before the call takes the host's path instead. */
#define OMPI_OSC_GPUIC_GPU_ACC_RUNS_MAX (1u << 20)
/* Launch shape: threads per block, and most blocks of one launch. */
#define OMPI_OSC_GPUIC_GPU_ACC_THREADS 256u
#define OMPI_OSC_GPUIC_GPU_ACC_BLOCKS 2048u

/* The target side of a datatype walk, as runs of elements. */
typedef struct ompi_osc_gpuic_gpu_runs {
    mpix_gpuic_acc_run_t *run;
    size_t               n;
    size_t               max;
    size_t               esize;
    const char           *anchor;   /* the packed side's address of element 0 */
    char                 *remote;   /* the target region's first byte at the peer */
    char                 *mapped;   /* ...as mapped here */
} ompi_osc_gpuic_gpu_runs_t;

/* Anchor of the packed side of a walk: its addresses are offsets from here, never read. */
static char ompi_osc_gpuic_gpu_acc_anchor[1];

/* Appends one pair of blocks of a walk; MPI_ERR_TYPE for a misaligned element (the host path
 * takes the call), MPI_ERR_NO_MEM past the run limit. */
static int ompi_osc_gpuic_gpu_runs_add(char *a, char *b, size_t len, void *arg)
{
    ompi_osc_gpuic_gpu_runs_t *r = arg;
    uint64_t first = (uint64_t)(a - r->anchor), target;
    mpix_gpuic_acc_run_t *last = r->n > 0 ? &r->run[r->n - 1] : NULL;

    target = (uint64_t)(uintptr_t)(r->mapped + (b - r->remote));
    if (len % r->esize != 0 || first % r->esize != 0 || target % r->esize != 0) {
        return MPI_ERR_TYPE;
    }
    first /= r->esize;
    if (last != NULL && last->first + last->count == first &&
        last->target + last->count * r->esize == target) {
        last->count += len / r->esize;
        return OMPI_SUCCESS;
    }
    if (r->n == r->max) {
        size_t max = r->max > 0 ? 2 * r->max : 64;
        mpix_gpuic_acc_run_t *grown;

        if (max > OMPI_OSC_GPUIC_GPU_ACC_RUNS_MAX ||
            (grown = realloc(r->run, max * sizeof(*grown))) == NULL) {
            return MPI_ERR_NO_MEM;
        }
        r->run = grown;
        r->max = max;
    }
    r->run[r->n].target = target;
    r->run[r->n].first = first;
    r->run[r->n].count = len / r->esize;
    r->n++;
    return OMPI_SUCCESS;
}

/* Whether (buf, count, dt) is @p bytes of packed elements from buf + *lo_p. */
static bool ompi_osc_gpuic_gpu_acc_packed(int count, struct ompi_datatype_t *dt, size_t bytes,
                                          ptrdiff_t *lo_p)
{
    ptrdiff_t hi;

    if (!ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        return false;
    }
    ompi_osc_gpuic_dt_bounds(dt, count, lo_p, &hi);
    return (size_t)(hi - *lo_p) == bytes;
}

/* Whether @p buf is device memory the kernel may read or write in place. */
static bool ompi_osc_gpuic_gpu_acc_on_device(const void *buf)
{
    return buf != NULL && gpuic_cuda_is_device_ptr(buf);
}

/* One call's device-visible buffers, decided before anything is written. */
typedef struct ompi_osc_gpuic_gpu_call {
    mpix_gpuic_acc_args_t args;
    size_t                bytes;      /* nelem * esize */
    bool                  stage_origin;
    bool                  stage_result;
    ptrdiff_t             olo, rlo;   /* packed buffers: offset of the first element */
} ompi_osc_gpuic_gpu_call_t;

/* The scope of the device atomics of a call (MPIX_GPUIC_STREAM_SAME_GPU when every window's
 * memory is on this GPU); the caller holds module->gpu_lock. */
static uint32_t ompi_osc_gpuic_gpu_acc_scope(ompi_osc_gpuic_module_t *module)
{
    return ompi_osc_gpuic_gpu_all_same(module) ? MPIX_GPUIC_STREAM_SAME_GPU : 0;
}

/*
 * Runs the kernel and waits for it.  The caller holds module->gpu_lock, and has entered the
 * target's accumulate section (ompi_osc_gpuic_acc_enter) before taking it.
 */
static int ompi_osc_gpuic_gpu_acc_launch(ompi_osc_gpuic_module_t *module, int kernel,
                                         unsigned grid, mpix_gpuic_acc_args_t *args)
{
    void *stream = NULL;
    int rc = ompi_osc_gpuic_gpu_stream(module, &stream);
    unsigned block = kernel == MPIX_GPUIC_K_HOST_CAS ? 1 : OMPI_OSC_GPUIC_GPU_ACC_THREADS;

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    args->flags = ompi_osc_gpuic_gpu_acc_scope(module);
    rc = ompi_osc_gpuic_stream_launch(kernel, grid, block, stream, args);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_error(gpuic_cuda_stream_synchronize(stream));
    }
    return rc;
}

/* The kernels' element type and op for the call; false when they have none. */
static bool ompi_osc_gpuic_gpu_acc_kind(struct ompi_datatype_t *prim, struct ompi_op_t *op,
                                        mpix_gpuic_acc_args_t *args)
{
    int type = 0, kop = 0;

    if (ompi_osc_gpuic_stream_named_type(prim, true, &type) != MPI_SUCCESS ||
        ompi_osc_gpuic_stream_op(op, type, true, &kop) != MPI_SUCCESS) {
        return false;
    }
    args->type = type;
    args->op = kop;
    return true;
}

/* Packs the origin elements into @p dst (nelem of prim). */
static int ompi_osc_gpuic_gpu_acc_pack(char *dst, const void *origin, int ocount,
                                       struct ompi_datatype_t *odt,
                                       struct ompi_datatype_t *prim, size_t nelem)
{
    ompi_osc_gpuic_bounce_t ob = {0};
    int rc = ompi_osc_gpuic_bounce_in(&ob, (void *)origin, ocount, odt), rc_b;

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_dt_copy(dst, (int)nelem, prim, ob.buf, ocount, odt);
    }
    rc_b = ompi_osc_gpuic_bounce_out(&ob, false);
    return rc != OMPI_SUCCESS ? rc : rc_b;
}

/* Unpacks the old elements (nelem of prim at @p src) into the caller's result layout. */
static int ompi_osc_gpuic_gpu_acc_unpack(void *result, int rcount, struct ompi_datatype_t *rdt,
                                         const char *src, struct ompi_datatype_t *prim,
                                         size_t nelem)
{
    ompi_osc_gpuic_bounce_t rb = {0};
    int rc = ompi_osc_gpuic_bounce_in(&rb, result, rcount, rdt), rc_b;

    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_dt_copy(rb.buf, rcount, rdt, (void *)src, (int)nelem, prim);
    }
    rc_b = ompi_osc_gpuic_bounce_out(&rb, rc == OMPI_SUCCESS);
    return rc != OMPI_SUCCESS ? rc : rc_b;
}

/*
 * A call of one run of at most MPIX_GPUIC_AGENT_INLINE bytes through the window agent: origin
 * and result in the command's inline bytes unless they are packed device memory.  The caller
 * holds module->gpu_lock (and is in the target's accumulate section).
 */
static int ompi_osc_gpuic_gpu_acc_agent(ompi_osc_gpuic_module_t *module,
                                        ompi_osc_gpuic_gpu_call_t *c, const void *origin,
                                        int ocount, struct ompi_datatype_t *odt, void *result,
                                        int rcount, struct ompi_datatype_t *rdt,
                                        struct ompi_datatype_t *prim, size_t nelem)
{
    mpix_gpuic_agent_cmd_t *cmd = NULL;
    int rc = ompi_osc_gpuic_agent_begin(module, &cmd);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    cmd->what = MPIX_GPUIC_AGENT_ACC;
    cmd->flags = ompi_osc_gpuic_gpu_acc_scope(module);
    cmd->type = c->args.type;
    cmd->op = c->args.op;
    cmd->count = nelem;
    cmd->target = c->args.target;
    cmd->origin = 0;
    if (origin != NULL && c->stage_origin) {
        rc = ompi_osc_gpuic_gpu_acc_pack((char *)cmd->data, origin, ocount, odt, prim, nelem);
        cmd->origin = (uint64_t)(uintptr_t)cmd->data;
    } else if (origin != NULL) {
        cmd->origin = (uint64_t)(uintptr_t)origin + (uint64_t)c->olo;
    }
    cmd->result = rdt == NULL       ? 0
                  : c->stage_result ? (uint64_t)(uintptr_t)cmd->data
                                    : (uint64_t)(uintptr_t)result + (uint64_t)c->rlo;
    if (rc != OMPI_SUCCESS) {
        return rc; /* the slot stays unpublished: the next call reuses it */
    }
    rc = ompi_osc_gpuic_agent_call(module);
    if (rc == OMPI_SUCCESS && rdt != NULL && c->stage_result) {
        rc = ompi_osc_gpuic_gpu_acc_unpack(result, rcount, rdt, (const char *)cmd->data, prim,
                                           nelem);
    }
    return rc;
}

bool ompi_osc_gpuic_gpu_acc(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, int ocount, struct ompi_datatype_t *odt,
                            void *result, int rcount, struct ompi_datatype_t *rdt, int tcount,
                            struct ompi_datatype_t *tdt, struct ompi_op_t *op,
                            struct ompi_datatype_t *prim, size_t nelem, int *rc_p)
{
    ompi_osc_gpuic_gpu_runs_t runs = {0};
    ompi_osc_gpuic_gpu_call_t c;
    bool has_origin = op != &ompi_mpi_op_no_op.op, fetching = rdt != NULL;
    size_t esize, runs_bytes = 0, off;
    ptrdiff_t lo;
    unsigned grid;
    char *stage = NULL;
    int rc, rc_leave;

    if (!region->gpu || region->direct == NULL || !gpuic_cuda_available()) {
        return false;
    }
    memset(&c, 0, sizeof(c));
    if (!ompi_osc_gpuic_gpu_acc_kind(prim, op, &c.args)) {
        return false;
    }
    ompi_datatype_type_size(prim, &esize);
    c.bytes = nelem * esize;
    c.args.count = nelem;
    if (ompi_osc_gpuic_gpu_acc_packed(tcount, tdt, c.bytes, &lo)) {
        c.args.target = (uint64_t)(uintptr_t)region->direct + (raddr + (uint64_t)lo - region->base);
        if (c.args.target % esize != 0) {
            return false;
        }
    } else {
        runs.esize = esize;
        runs.anchor = ompi_osc_gpuic_gpu_acc_anchor;
        runs.remote = (char *)(uintptr_t)region->base;
        runs.mapped = region->direct;
        if (ompi_osc_gpuic_dt_walk(ompi_osc_gpuic_gpu_acc_anchor, (int)nelem, prim,
                                   (char *)(uintptr_t)raddr, tcount, tdt,
                                   ompi_osc_gpuic_gpu_runs_add, &runs) != OMPI_SUCCESS) {
            free(runs.run);
            return false;
        }
        c.args.nruns = (uint32_t)runs.n;
        runs_bytes = (runs.n * sizeof(mpix_gpuic_acc_run_t) + 15) & ~(size_t)15;
    }
    c.stage_origin = has_origin && !(ompi_osc_gpuic_gpu_acc_on_device(origin) &&
                                     ompi_osc_gpuic_gpu_acc_packed(ocount, odt, c.bytes, &c.olo));
    c.stage_result = fetching && !(ompi_osc_gpuic_gpu_acc_on_device(result) &&
                                   ompi_osc_gpuic_gpu_acc_packed(rcount, rdt, c.bytes, &c.rlo));

    /* From here on the call is the GPU's: every outcome is its result.  The target's
     * accumulate section is entered before gpu_lock is taken: entering may wait for an origin
     * on another node that holds the target's accumulate lock, whose request this process's
     * executor must be able to run meanwhile (it takes gpu_lock). */
    rc = ompi_osc_gpuic_acc_enter(module, target);
    if (rc != OMPI_SUCCESS) {
        free(runs.run);
        *rc_p = rc;
        return true;
    }
    opal_mutex_lock(&module->gpu_lock);
    if (runs.n == 0 && c.bytes <= MPIX_GPUIC_AGENT_INLINE && mca_osc_gpuic_component.gpu_agent &&
        (!has_origin || c.stage_origin || ompi_osc_gpuic_agent_buffer_ready(origin)) &&
        (!fetching || c.stage_result || ompi_osc_gpuic_agent_buffer_ready(result))) {
        rc = ompi_osc_gpuic_gpu_acc_agent(module, &c, has_origin ? origin : NULL, ocount, odt,
                                          result, rcount, rdt, prim, nelem);
        opal_mutex_unlock(&module->gpu_lock);
        rc_leave = ompi_osc_gpuic_acc_leave(module, target);
        rc = rc != OMPI_SUCCESS ? rc : rc_leave;
        if (rc == OMPI_SUCCESS) {
            ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
        }
        *rc_p = rc;
        return true;
    }
    rc = ompi_osc_gpuic_gpu_stage(module,
                                  runs_bytes + (c.stage_origin ? c.bytes + 16 : 0) +
                                      (c.stage_result ? c.bytes : 0),
                                  &stage);
    off = runs_bytes;
    if (rc == OMPI_SUCCESS && runs.n > 0) {
        memcpy(stage, runs.run, runs.n * sizeof(mpix_gpuic_acc_run_t));
        c.args.runs = (uint64_t)(uintptr_t)stage;
    }
    if (rc == OMPI_SUCCESS && has_origin) {
        if (c.stage_origin) {
            rc = ompi_osc_gpuic_gpu_acc_pack(stage + off, origin, ocount, odt, prim, nelem);
            c.args.origin = (uint64_t)(uintptr_t)(stage + off);
            off += (c.bytes + 15) & ~(size_t)15;
        } else {
            c.args.origin = (uint64_t)(uintptr_t)origin + (uint64_t)c.olo;
        }
    }
    if (rc == OMPI_SUCCESS && fetching) {
        c.args.result = c.stage_result ? (uint64_t)(uintptr_t)(stage + off)
                                       : (uint64_t)(uintptr_t)result + (uint64_t)c.rlo;
    }
    if (rc == OMPI_SUCCESS) {
        if (runs.n > 0) {
            grid = runs.n < OMPI_OSC_GPUIC_GPU_ACC_BLOCKS ? (unsigned)runs.n
                                                          : OMPI_OSC_GPUIC_GPU_ACC_BLOCKS;
        } else {
            size_t blocks = (nelem + OMPI_OSC_GPUIC_GPU_ACC_THREADS - 1) /
                            OMPI_OSC_GPUIC_GPU_ACC_THREADS;

            grid = blocks < OMPI_OSC_GPUIC_GPU_ACC_BLOCKS ? (unsigned)blocks
                                                          : OMPI_OSC_GPUIC_GPU_ACC_BLOCKS;
        }
        rc = ompi_osc_gpuic_gpu_acc_launch(module, MPIX_GPUIC_K_HOST_ACC, grid, &c.args);
    }
    if (rc == OMPI_SUCCESS && c.stage_result) {
        rc = ompi_osc_gpuic_gpu_acc_unpack(result, rcount, rdt,
                                           (const char *)(uintptr_t)c.args.result, prim, nelem);
    }
    opal_mutex_unlock(&module->gpu_lock);
    rc_leave = ompi_osc_gpuic_acc_leave(module, target);
    rc = rc != OMPI_SUCCESS ? rc : rc_leave;
    free(runs.run);
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
    }
    *rc_p = rc;
    return true;
}

bool ompi_osc_gpuic_gpu_cas(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, const void *compare, void *result,
                            struct ompi_datatype_t *dt, int *rc_p)
{
    mpix_gpuic_acc_args_t args;
    mpix_gpuic_agent_cmd_t *cmd = NULL;
    const void *in[2] = {origin, compare};
    bool on_dev[3];
    uint64_t *slot[2];
    size_t esize;
    char *words = NULL;
    int rc, rc_leave, i;

    ompi_datatype_type_size(dt, &esize);
    if (!region->gpu || region->direct == NULL || !gpuic_cuda_available() ||
        (esize != 1 && esize != 2 && esize != 4 && esize != 8)) {
        return false;
    }
    memset(&args, 0, sizeof(args));
    args.target = (uint64_t)(uintptr_t)region->direct + (raddr - region->base);
    if (args.target % esize != 0) {
        return false;
    }
    /* compared and replaced as bits: the element's size is all that counts */
    args.type = esize == 1   ? MPIX_GPUIC_ACC_UINT8
                : esize == 2 ? MPIX_GPUIC_ACC_UINT16
                : esize == 4 ? MPIX_DEVICE_UINT32
                             : MPIX_DEVICE_UINT64;
    args.count = 1;
    slot[0] = &args.origin;
    slot[1] = &args.compare;
    on_dev[0] = ompi_osc_gpuic_gpu_acc_on_device(origin);
    on_dev[1] = ompi_osc_gpuic_gpu_acc_on_device(compare);
    on_dev[2] = ompi_osc_gpuic_gpu_acc_on_device(result);

    /* entered before gpu_lock is taken, as in ompi_osc_gpuic_gpu_acc() */
    rc = ompi_osc_gpuic_acc_enter(module, target);
    if (rc != OMPI_SUCCESS) {
        *rc_p = rc;
        return true;
    }
    opal_mutex_lock(&module->gpu_lock);
    /* three 8-byte words for origin, compare and result: the agent command's inline bytes, or
     * the stage for a launched kernel; device memory is used in place */
    if (mca_osc_gpuic_component.gpu_agent &&
        (!on_dev[0] || ompi_osc_gpuic_agent_buffer_ready(origin)) &&
        (!on_dev[1] || ompi_osc_gpuic_agent_buffer_ready(compare)) &&
        (!on_dev[2] || ompi_osc_gpuic_agent_buffer_ready(result))) {
        rc = ompi_osc_gpuic_agent_begin(module, &cmd);
        words = rc == OMPI_SUCCESS ? (char *)cmd->data : NULL;
    } else {
        rc = ompi_osc_gpuic_gpu_stage(module, 3 * sizeof(uint64_t), &words);
    }
    for (i = 0; rc == OMPI_SUCCESS && i < 2; ++i) {
        if (on_dev[i]) {
            *slot[i] = (uint64_t)(uintptr_t)in[i];
        } else {
            memcpy(words + 8 * i, in[i], esize);
            *slot[i] = (uint64_t)(uintptr_t)(words + 8 * i);
        }
    }
    args.result = on_dev[2] ? (uint64_t)(uintptr_t)result : (uint64_t)(uintptr_t)(words + 16);
    if (rc == OMPI_SUCCESS && cmd != NULL) {
        cmd->what = MPIX_GPUIC_AGENT_CAS;
        cmd->flags = ompi_osc_gpuic_gpu_acc_scope(module);
        cmd->type = args.type;
        cmd->count = 1;
        cmd->target = args.target;
        cmd->origin = args.origin;
        cmd->compare = args.compare;
        cmd->result = args.result;
        rc = ompi_osc_gpuic_agent_call(module);
    } else if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_gpu_acc_launch(module, MPIX_GPUIC_K_HOST_CAS, 1, &args);
    }
    if (rc == OMPI_SUCCESS && args.result == (uint64_t)(uintptr_t)(words + 16)) {
        memcpy(result, words + 16, esize);
    }
    opal_mutex_unlock(&module->gpu_lock);
    rc_leave = ompi_osc_gpuic_acc_leave(module, target);
    rc = rc != OMPI_SUCCESS ? rc : rc_leave;
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
    }
    *rc_p = rc;
    return true;
}

#else /* !OMPI_OSC_GPUIC_HAVE_STREAM: no kernels, the host paths take every call */

bool ompi_osc_gpuic_gpu_acc(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, int ocount, struct ompi_datatype_t *odt,
                            void *result, int rcount, struct ompi_datatype_t *rdt, int tcount,
                            struct ompi_datatype_t *tdt, struct ompi_op_t *op,
                            struct ompi_datatype_t *prim, size_t nelem, int *rc_p)
{
    (void)module, (void)target, (void)region, (void)raddr, (void)origin, (void)ocount;
    (void)odt, (void)result, (void)rcount, (void)rdt, (void)tcount, (void)tdt, (void)op;
    (void)prim, (void)nelem, (void)rc_p;
    return false;
}

bool ompi_osc_gpuic_gpu_cas(ompi_osc_gpuic_module_t *module, int target,
                            const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                            const void *origin, const void *compare, void *result,
                            struct ompi_datatype_t *dt, int *rc_p)
{
    (void)module, (void)target, (void)region, (void)raddr, (void)origin, (void)compare;
    (void)result, (void)dt, (void)rc_p;
    return false;
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */
