/*
 * The target side of atomics on GPU windows of other nodes: remote calls (gpuic_call.h)
 * carrying a gpuic_call_atomic_t, executed by the window agent of the GPU window holding the
 * address, as device atomics.  A transport cannot apply an atomic to device memory atomically
 * with the GPU's own atomics (over tcp UCX would apply it with the target's CPU), so every
 * atomic, accumulate and signal add that reaches such a window from another node comes here:
 * from peers' proxies (device calls, through this process's serving worker) and from peers'
 * host MPI calls (through the component's worker).  One request is at most
 * MPIX_GPUIC_AGENT_INLINE bytes of operands, one agent command, one round trip.
 *
 * The handler runs inside the progress of the worker the request came to: the proxy thread's,
 * or any thread's MPI progress.  That thread may hold a window's gpu_lock already (a host call
 * waiting on a peer), so the handler only tries the lock for a while and otherwise answers
 * GPUIC_ERR_NO_RESOURCE, which makes the origin send again.
 *
 * Windows register their device memory here at creation and leave before their memory goes;
 * the registry's lock is held while a request executes, so a window never leaves under one.
 * With osc_gpuic_gpu_agent=0 (or a build without the kernel image) requests are refused with
 * GPUIC_ERR_UNSUPPORTED, which the origin reports as MPI_ERR_UNSUPPORTED_OPERATION: the kernel
 * launch path would block the serving thread behind the window's stream.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

/* Tries of a window's gpu_lock (yielding between) before a request is answered as busy. */
#define OMPI_OSC_GPUIC_EXEC_LOCK_TRIES 256

/* One GPU window of this process. */
typedef struct ompi_osc_gpuic_exec_win {
    ompi_osc_gpuic_module_t *module;
    uint64_t                base, size;
} ompi_osc_gpuic_exec_win_t;

static struct {
    pthread_mutex_t            lock;
    ompi_osc_gpuic_exec_win_t  *win;
    size_t                     n, max;
    bool                       warned_agent;
} ompi_osc_gpuic_exec = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, false};

int ompi_osc_gpuic_gpu_exec_add(ompi_osc_gpuic_module_t *module)
{
    int rc = OMPI_SUCCESS;

    if (!module->gpu || module->size == 0 || module->base == NULL) {
        return OMPI_SUCCESS;
    }
    pthread_mutex_lock(&ompi_osc_gpuic_exec.lock);
    if (ompi_osc_gpuic_exec.n == ompi_osc_gpuic_exec.max) {
        size_t max = ompi_osc_gpuic_exec.max > 0 ? 2 * ompi_osc_gpuic_exec.max : 8;
        ompi_osc_gpuic_exec_win_t *grown = realloc(ompi_osc_gpuic_exec.win, max * sizeof(*grown));

        if (grown == NULL) {
            rc = MPI_ERR_NO_MEM;
        } else {
            ompi_osc_gpuic_exec.win = grown;
            ompi_osc_gpuic_exec.max = max;
        }
    }
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_exec_win_t *w = &ompi_osc_gpuic_exec.win[ompi_osc_gpuic_exec.n++];

        w->module = module;
        w->base = (uint64_t)(uintptr_t)module->base;
        w->size = module->size;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
    return rc;
}

void ompi_osc_gpuic_gpu_exec_remove(ompi_osc_gpuic_module_t *module)
{
    pthread_mutex_lock(&ompi_osc_gpuic_exec.lock);
    for (size_t i = 0; i < ompi_osc_gpuic_exec.n; ++i) {
        if (ompi_osc_gpuic_exec.win[i].module == module) {
            ompi_osc_gpuic_exec.win[i] = ompi_osc_gpuic_exec.win[--ompi_osc_gpuic_exec.n];
            break;
        }
    }
    if (ompi_osc_gpuic_exec.n == 0) {
        free(ompi_osc_gpuic_exec.win);
        ompi_osc_gpuic_exec.win = NULL;
        ompi_osc_gpuic_exec.max = 0;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
}

/* The kernels' codes beside libgpuic's (enum gpuic_acc_type, enum gpuic_acc_op). */
static const struct { int gpuic, kernel; } ompi_osc_gpuic_exec_types[] = {
    {GPUIC_ACC_INT32, MPIX_DEVICE_INT32},   {GPUIC_ACC_UINT32, MPIX_DEVICE_UINT32},
    {GPUIC_ACC_INT64, MPIX_DEVICE_INT64},   {GPUIC_ACC_UINT64, MPIX_DEVICE_UINT64},
    {GPUIC_ACC_FLOAT, MPIX_DEVICE_FLOAT},   {GPUIC_ACC_DOUBLE, MPIX_DEVICE_DOUBLE},
    {GPUIC_ACC_INT8, MPIX_GPUIC_ACC_INT8},  {GPUIC_ACC_UINT8, MPIX_GPUIC_ACC_UINT8},
    {GPUIC_ACC_INT16, MPIX_GPUIC_ACC_INT16}, {GPUIC_ACC_UINT16, MPIX_GPUIC_ACC_UINT16},
};
static const struct { int gpuic, kernel; } ompi_osc_gpuic_exec_ops[] = {
    {GPUIC_ACC_SUM, MPIX_DEVICE_SUM},         {GPUIC_ACC_PROD, MPIX_DEVICE_PROD},
    {GPUIC_ACC_MIN, MPIX_DEVICE_MIN},         {GPUIC_ACC_MAX, MPIX_DEVICE_MAX},
    {GPUIC_ACC_BAND, MPIX_DEVICE_BAND},       {GPUIC_ACC_BOR, MPIX_DEVICE_BOR},
    {GPUIC_ACC_BXOR, MPIX_DEVICE_BXOR},       {GPUIC_ACC_LAND, MPIX_DEVICE_LAND},
    {GPUIC_ACC_LOR, MPIX_DEVICE_LOR},         {GPUIC_ACC_LXOR, MPIX_DEVICE_LXOR},
    {GPUIC_ACC_REPLACE, MPIX_DEVICE_REPLACE}, {GPUIC_ACC_NO_OP, MPIX_DEVICE_NO_OP},
};

bool ompi_osc_gpuic_gpu_exec_codes(int kernel_type, int kernel_op, int *type_p, int *op_p)
{
    size_t i, j;

    for (i = 0; i < sizeof(ompi_osc_gpuic_exec_types) / sizeof(ompi_osc_gpuic_exec_types[0]);
         ++i) {
        if (ompi_osc_gpuic_exec_types[i].kernel == kernel_type) {
            break;
        }
    }
    for (j = 0; j < sizeof(ompi_osc_gpuic_exec_ops) / sizeof(ompi_osc_gpuic_exec_ops[0]); ++j) {
        if (ompi_osc_gpuic_exec_ops[j].kernel == kernel_op) {
            break;
        }
    }
    if (i == sizeof(ompi_osc_gpuic_exec_types) / sizeof(ompi_osc_gpuic_exec_types[0]) ||
        j == sizeof(ompi_osc_gpuic_exec_ops) / sizeof(ompi_osc_gpuic_exec_ops[0])) {
        return false;
    }
    *type_p = ompi_osc_gpuic_exec_types[i].gpuic;
    *op_p = ompi_osc_gpuic_exec_ops[j].gpuic;
    return true;
}

/* The kernels' type and op of a request; false when they have none. */
static bool ompi_osc_gpuic_exec_kernel_codes(const gpuic_call_atomic_t *a, int *type_p,
                                             int *op_p)
{
    size_t i, j;

    for (i = 0; i < sizeof(ompi_osc_gpuic_exec_types) / sizeof(ompi_osc_gpuic_exec_types[0]);
         ++i) {
        if (ompi_osc_gpuic_exec_types[i].gpuic == a->type) {
            break;
        }
    }
    for (j = 0; j < sizeof(ompi_osc_gpuic_exec_ops) / sizeof(ompi_osc_gpuic_exec_ops[0]); ++j) {
        if (ompi_osc_gpuic_exec_ops[j].gpuic == a->acc_op) {
            break;
        }
    }
    if (i == sizeof(ompi_osc_gpuic_exec_types) / sizeof(ompi_osc_gpuic_exec_types[0]) ||
        j == sizeof(ompi_osc_gpuic_exec_ops) / sizeof(ompi_osc_gpuic_exec_ops[0]) ||
        gpuic_acc_type_size((uint8_t)a->type) > 8) {
        return false;
    }
    *type_p = ompi_osc_gpuic_exec_types[i].kernel;
    *op_p = ompi_osc_gpuic_exec_ops[j].kernel;
    return true;
}

/* The element size of a gpuic type (the WQE helper knows the 4- and 8-byte ones). */
static size_t ompi_osc_gpuic_exec_type_size(int type)
{
    switch (type) {
    case GPUIC_ACC_INT8: case GPUIC_ACC_UINT8:   return 1;
    case GPUIC_ACC_INT16: case GPUIC_ACC_UINT16: return 2;
    }
    return gpuic_acc_type_size((uint8_t)type);
}

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

/* Takes module->gpu_lock, trying for a while; false: busy (the caller answers so). */
static bool ompi_osc_gpuic_exec_lock(ompi_osc_gpuic_module_t *module)
{
    for (int i = 0; i < OMPI_OSC_GPUIC_EXEC_LOCK_TRIES; ++i) {
        if (opal_mutex_trylock(&module->gpu_lock) == 0) {
            return true;
        }
        sched_yield();
    }
    return false;
}

/* Executes a checked request on @p module with its agent; the reply bytes into @p reply. */
static gpuic_status_t ompi_osc_gpuic_exec_run(ompi_osc_gpuic_module_t *module,
                                              const gpuic_call_atomic_t *a, int ktype, int kop,
                                              size_t bytes, void *reply, size_t *reply_len_p)
{
    mpix_gpuic_agent_cmd_t *cmd = NULL;
    bool fetch = (a->flags & GPUIC_CALL_FETCH) != 0;
    char *words;
    int rc;

    if (!ompi_osc_gpuic_exec_lock(module)) {
        return GPUIC_ERR_NO_RESOURCE;
    }
    rc = ompi_osc_gpuic_agent_begin(module, &cmd);
    if (rc == OMPI_SUCCESS) {
        words = (char *)cmd->data;
        /* System scope: every other updater of the element is on this GPU too, and the
         * scope is correct whatever the window's peers are. */
        cmd->flags = 0;
        cmd->target = a->addr;
        if (a->op == GPUIC_CALL_CAS) {
            /* compared and replaced as bits, like ompi_osc_gpuic_gpu_cas */
            cmd->what = MPIX_GPUIC_AGENT_CAS;
            cmd->type = a->esize == 1   ? MPIX_GPUIC_ACC_UINT8
                        : a->esize == 2 ? MPIX_GPUIC_ACC_UINT16
                        : a->esize == 4 ? MPIX_DEVICE_UINT32
                                        : MPIX_DEVICE_UINT64;
            cmd->op = 0;
            cmd->count = 1;
            memcpy(words, a->data, a->esize);
            memcpy(words + 8, a->compare, a->esize);
            cmd->origin = (uint64_t)(uintptr_t)words;
            cmd->compare = (uint64_t)(uintptr_t)(words + 8);
            cmd->result = (uint64_t)(uintptr_t)(words + 16);
        } else {
            cmd->what = MPIX_GPUIC_AGENT_ACC;
            cmd->type = ktype;
            cmd->op = kop;
            cmd->count = a->count;
            cmd->origin = 0;
            if (kop != MPIX_DEVICE_NO_OP) {
                memcpy(words, a->data, bytes);
                cmd->origin = (uint64_t)(uintptr_t)words;
            }
            /* the agent reads each origin element before it writes that element's old value */
            cmd->result = fetch ? (uint64_t)(uintptr_t)words : 0;
        }
        rc = ompi_osc_gpuic_agent_call(module);
    }
    if (rc == OMPI_SUCCESS && fetch) {
        memcpy(reply, a->op == GPUIC_CALL_CAS ? (const char *)cmd->data + 16
                                              : (const char *)cmd->data,
               bytes);
        *reply_len_p = bytes;
    }
    opal_mutex_unlock(&module->gpu_lock);
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
    }
    return rc == OMPI_SUCCESS ? GPUIC_OK : GPUIC_ERR_TRANSPORT;
}

#else /* !OMPI_OSC_GPUIC_HAVE_STREAM */

static gpuic_status_t ompi_osc_gpuic_exec_run(ompi_osc_gpuic_module_t *module,
                                              const gpuic_call_atomic_t *a, int ktype, int kop,
                                              size_t bytes, void *reply, size_t *reply_len_p)
{
    (void)module, (void)a, (void)ktype, (void)kop, (void)bytes, (void)reply, (void)reply_len_p;
    return GPUIC_ERR_UNSUPPORTED;
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */

gpuic_status_t ompi_osc_gpuic_gpu_exec_handler(void *arg, const void *req, size_t req_len,
                                               void *reply, size_t reply_cap,
                                               size_t *reply_len_p)
{
    gpuic_call_atomic_t a;
    ompi_osc_gpuic_module_t *module = NULL;
    bool has_origin, fetch;
    size_t bytes;
    int ktype = 0, kop = 0;
    gpuic_status_t status;

    (void)arg;
    *reply_len_p = 0;
    if (req_len < gpuic_call_atomic_len(0) || req_len > sizeof(a)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    memset(&a, 0, sizeof(a));
    memcpy(&a, req, req_len);
    fetch = (a.flags & GPUIC_CALL_FETCH) != 0;
    if (a.op == GPUIC_CALL_CAS) {
        has_origin = true;
        if (a.count != 1 || (a.esize != 1 && a.esize != 2 && a.esize != 4 && a.esize != 8)) {
            return GPUIC_ERR_INVALID_PARAM;
        }
    } else if (a.op == GPUIC_CALL_ACC) {
        if (!ompi_osc_gpuic_exec_kernel_codes(&a, &ktype, &kop) ||
            ompi_osc_gpuic_exec_type_size(a.type) != a.esize) {
            gpuic_log(GPUIC_LOG_DEBUG, "remote atomic: op %d on type %d is not executed here",
                      a.acc_op, a.type);
            return GPUIC_ERR_UNSUPPORTED;
        }
        has_origin = kop != MPIX_DEVICE_NO_OP;
    } else {
        return GPUIC_ERR_INVALID_PARAM;
    }
    bytes = (size_t)a.count * a.esize;
    if (a.count == 0 || bytes > MPIX_GPUIC_AGENT_INLINE || bytes > GPUIC_CALL_ATOMIC_INLINE ||
        (has_origin && req_len != gpuic_call_atomic_len(a.op == GPUIC_CALL_CAS ? a.esize
                                                                                 : bytes)) ||
        (fetch && reply_cap < bytes) || a.addr % a.esize != 0) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&ompi_osc_gpuic_exec.lock);
    for (size_t i = 0; i < ompi_osc_gpuic_exec.n; ++i) {
        const ompi_osc_gpuic_exec_win_t *w = &ompi_osc_gpuic_exec.win[i];

        if (a.addr >= w->base && a.addr - w->base <= w->size &&
            bytes <= w->size - (a.addr - w->base)) {
            module = w->module;
            break;
        }
    }
    if (module == NULL) {
        gpuic_log(GPUIC_LOG_DEBUG, "remote atomic: %zu bytes at %#llx are in no GPU window of "
                  "this process", bytes, (unsigned long long)a.addr);
        status = GPUIC_ERR_BAD_KEY;
    } else if (!mca_osc_gpuic_component.gpu_agent) {
        if (!ompi_osc_gpuic_exec.warned_agent) {
            ompi_osc_gpuic_exec.warned_agent = true;
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: atomics from other nodes on GPU window %d are "
                      "refused: they need the window agent (osc_gpuic_gpu_agent=0)",
                      ompi_comm_rank(module->comm), module->id);
        }
        status = GPUIC_ERR_UNSUPPORTED;
    } else {
        status = ompi_osc_gpuic_exec_run(module, &a, ktype, kop, bytes, reply, reply_len_p);
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
    return status;
}
