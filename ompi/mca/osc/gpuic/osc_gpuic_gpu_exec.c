/*
 * The target side of atomics on GPU windows of other nodes: remote calls (gpuic_call.h)
 * carrying a gpuic_call_atomic_t, executed by the window agent of the GPU window holding the
 * address, as device atomics.  A transport cannot apply an atomic to device memory atomically
 * with the GPU's own atomics (over tcp UCX would apply it with the target's CPU), so every
 * atomic, accumulate and signal add that reaches such a window from another node comes here:
 * from peers' proxies (device calls, through this process's serving worker) and from peers'
 * host MPI calls (through the component's worker).  One request is at most
 * MPIX_GPUIC_AGENT_INLINE bytes of operands, one agent command, one round trip.  A peer's
 * device put-with-signal of at most that many bytes comes here too, data and signal in one
 * request (the data written before the signal: a set by two driver copies, an add by two agent
 * commands), so that its origin sends the signal without first waiting for the data's remote
 * completion.
 *
 * The handler runs inside the progress of the worker the request came to: the proxy thread's,
 * or any thread's MPI progress.  That thread may hold a window's gpu_lock already (a host call
 * waiting on a peer), so the handler only tries the lock for a while and otherwise answers
 * GPUIC_ERR_NO_RESOURCE, which makes the origin send again.
 *
 * Windows register their device memory here at creation and leave before their memory goes;
 * the registry's lock is held while a request executes, so a window never leaves under one.
 * They use the agent whatever osc_gpuic_gpu_agent says (that parameter is about this process's
 * own host calls): the kernel launch path would block the serving thread behind the window's
 * stream.  A build without the kernel image refuses them with GPUIC_ERR_UNSUPPORTED, which the
 * origin reports as MPI_ERR_UNSUPPORTED_OPERATION.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/datatype/ompi_datatype.h"

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
} ompi_osc_gpuic_exec = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Enters [base, base + size) of @p module's device memory into the registry. */
static int ompi_osc_gpuic_exec_insert(ompi_osc_gpuic_module_t *module, uint64_t base,
                                      uint64_t size)
{
    int rc = ompi_osc_gpuic_agent_prepare(module);

    if (rc != OMPI_SUCCESS) {
        return rc;
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
        w->base = base;
        w->size = size;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
    return rc;
}

int ompi_osc_gpuic_gpu_exec_add(ompi_osc_gpuic_module_t *module)
{
    if (!module->gpu || module->size == 0 || module->base == NULL) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_exec_insert(module, (uint64_t)(uintptr_t)module->base, module->size);
}

int ompi_osc_gpuic_gpu_exec_add_region(ompi_osc_gpuic_module_t *module, void *base, size_t size)
{
    return ompi_osc_gpuic_exec_insert(module, (uint64_t)(uintptr_t)base, size);
}

void ompi_osc_gpuic_gpu_exec_remove(ompi_osc_gpuic_module_t *module)
{
    pthread_mutex_lock(&ompi_osc_gpuic_exec.lock);
    for (size_t i = 0; i < ompi_osc_gpuic_exec.n;) {
        if (ompi_osc_gpuic_exec.win[i].module == module) {
            ompi_osc_gpuic_exec.win[i] = ompi_osc_gpuic_exec.win[--ompi_osc_gpuic_exec.n];
        } else {
            ++i;
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

/*
 * Executes a checked put-with-signal on @p module.  A set: the data, then the signal word, two
 * driver copies in one stream (the signal's starts after the data landed) with one wait, as a
 * transport writes them; the copy engine needs no SM, so a kernel of this GPU that holds
 * every SM while it waits for the signal still gets it.  An add must be a device atomic, atomic
 * with the kernels' own updates of the word: the agent executes the data as one command and the
 * update as the next, and finishes a command with a system-scope fence before it takes the
 * next one, which orders the data before the signal for every observer.
 */
static gpuic_status_t ompi_osc_gpuic_exec_put_signal(ompi_osc_gpuic_module_t *module,
                                                     const gpuic_call_atomic_t *a)
{
    mpix_gpuic_agent_cmd_t *cmd = NULL;
    uint64_t seq = 0;
    int rc = OMPI_SUCCESS;

    if (a->acc_op == GPUIC_ACC_REPLACE) {
        const gpuic_cuda_copy_t copies[2] = {
            {(void *)(uintptr_t)a->addr, a->data, a->count},
            {(void *)(uintptr_t)a->sig_addr, a->compare, sizeof(uint64_t)}};

        return gpuic_cuda_copies_independent(copies, 2);
    }
    if (!ompi_osc_gpuic_exec_lock(module)) {
        return GPUIC_ERR_NO_RESOURCE;
    }
    if (a->count > 0) {
        rc = ompi_osc_gpuic_agent_begin(module, &cmd);
        if (rc == OMPI_SUCCESS) {
            cmd->what = MPIX_GPUIC_AGENT_PUT;
            cmd->flags = 0;
            cmd->count = a->count;
            cmd->target = a->addr;
            memcpy(cmd->data, a->data, a->count);
            cmd->origin = (uint64_t)(uintptr_t)cmd->data;
            rc = ompi_osc_gpuic_agent_commit(module, &seq);
        }
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_agent_begin(module, &cmd);
    }
    if (rc == OMPI_SUCCESS) {
        cmd->what = MPIX_GPUIC_AGENT_ACC;
        cmd->flags = 0;
        cmd->type = MPIX_DEVICE_UINT64;
        cmd->op = MPIX_DEVICE_SUM;
        cmd->count = 1;
        cmd->target = a->sig_addr;
        memcpy(cmd->data, a->compare, sizeof(uint64_t));
        cmd->origin = (uint64_t)(uintptr_t)cmd->data;
        cmd->result = 0;
        rc = ompi_osc_gpuic_agent_call(module);
    }
    opal_mutex_unlock(&module->gpu_lock);
    return rc == OMPI_SUCCESS ? GPUIC_OK : GPUIC_ERR_TRANSPORT;
}

#else /* !OMPI_OSC_GPUIC_HAVE_STREAM */

static gpuic_status_t ompi_osc_gpuic_exec_put_signal(ompi_osc_gpuic_module_t *module,
                                                     const gpuic_call_atomic_t *a)
{
    (void)module, (void)a;
    return GPUIC_ERR_UNSUPPORTED;
}

static gpuic_status_t ompi_osc_gpuic_exec_run(ompi_osc_gpuic_module_t *module,
                                              const gpuic_call_atomic_t *a, int ktype, int kop,
                                              size_t bytes, void *reply, size_t *reply_len_p)
{
    (void)module, (void)a, (void)ktype, (void)kop, (void)bytes, (void)reply, (void)reply_len_p;
    return GPUIC_ERR_UNSUPPORTED;
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */

/* The registered window holding [addr, addr + bytes); NULL when none does.  Under the
 * registry's lock. */
static ompi_osc_gpuic_module_t *ompi_osc_gpuic_exec_find(uint64_t addr, size_t bytes)
{
    for (size_t i = 0; i < ompi_osc_gpuic_exec.n; ++i) {
        const ompi_osc_gpuic_exec_win_t *w = &ompi_osc_gpuic_exec.win[i];

        if (addr >= w->base && addr - w->base <= w->size &&
            bytes <= w->size - (addr - w->base)) {
            return w->module;
        }
    }
    return NULL;
}

/* A GPUIC_CALL_PUT_SIGNAL request: checked whole (the data and the signal word in one GPU
 * window of this process) before anything is written. */
static gpuic_status_t ompi_osc_gpuic_exec_put_signal_call(const gpuic_call_atomic_t *a,
                                                          size_t req_len)
{
    ompi_osc_gpuic_module_t *module;
    gpuic_status_t status;

    if (a->esize != 1 || a->count > MPIX_GPUIC_AGENT_INLINE ||
        a->count > GPUIC_CALL_ATOMIC_INLINE || req_len != gpuic_call_atomic_len(a->count) ||
        (a->flags & GPUIC_CALL_FETCH) || a->sig_addr % 8 != 0 ||
        (a->acc_op != GPUIC_ACC_REPLACE && a->acc_op != GPUIC_ACC_SUM)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&ompi_osc_gpuic_exec.lock);
    module = ompi_osc_gpuic_exec_find(a->sig_addr, sizeof(uint64_t));
    if (module == NULL || (a->count > 0 && ompi_osc_gpuic_exec_find(a->addr, a->count) != module)) {
        gpuic_log(GPUIC_LOG_DEBUG, "remote put-with-signal: %u bytes at %#llx and the signal at "
                  "%#llx are not in one GPU window of this process", a->count,
                  (unsigned long long)a->addr, (unsigned long long)a->sig_addr);
        status = GPUIC_ERR_BAD_KEY;
    } else {
        status = ompi_osc_gpuic_exec_put_signal(module, a);
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
    return status;
}

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
    if (a.op == GPUIC_CALL_PUT_SIGNAL) {
        return ompi_osc_gpuic_exec_put_signal_call(&a, req_len);
    }
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
    module = ompi_osc_gpuic_exec_find(a.addr, bytes);
    if (module == NULL) {
        gpuic_log(GPUIC_LOG_DEBUG, "remote atomic: %zu bytes at %#llx are in no GPU window of "
                  "this process", bytes, (unsigned long long)a.addr);
        status = GPUIC_ERR_BAD_KEY;
    } else {
        status = ompi_osc_gpuic_exec_run(module, &a, ktype, kop, bytes, reply, reply_len_p);
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_exec.lock);
    return status;
}

/*
 * The origin side: host accumulate-family calls on a GPU window of a peer this process does
 * not map (another node).  Origin elements are packed on the host (device buffers through the
 * bounce helpers), the target's elements are walked as runs of naturally aligned elements, and
 * each run goes in requests of at most GPUIC_CALL_ATOMIC_INLINE bytes; the old elements come
 * back in the replies.  Each element is one device atomic at the target, so these calls are
 * atomic with every device atomic on the same elements.  Against the target's accumulate lock
 * (calls that take the lock path) they announce themselves as single-element atomics do.
 */

/* Runs of target elements, at the owner's addresses. */
typedef struct ompi_osc_gpuic_exec_runs {
    mpix_gpuic_acc_run_t *run;
    size_t               n, max, esize;
    const char           *anchor; /* the packed side's element 0 */
} ompi_osc_gpuic_exec_runs_t;

static char ompi_osc_gpuic_exec_anchor[1];

static int ompi_osc_gpuic_exec_runs_add(char *a, char *b, size_t len, void *arg)
{
    ompi_osc_gpuic_exec_runs_t *r = arg;
    uint64_t first = (uint64_t)(a - r->anchor), target = (uint64_t)(uintptr_t)b;
    mpix_gpuic_acc_run_t *last = r->n > 0 ? &r->run[r->n - 1] : NULL;

    if (len % r->esize != 0 || first % r->esize != 0 || target % r->esize != 0) {
        return MPI_ERR_TYPE; /* misaligned: the lock path takes the call */
    }
    first /= r->esize;
    if (last != NULL && last->first + last->count == first &&
        last->target + last->count * r->esize == target) {
        last->count += len / r->esize;
        return OMPI_SUCCESS;
    }
    if (r->n == r->max) {
        size_t max = r->max > 0 ? 2 * r->max : 16;
        mpix_gpuic_acc_run_t *grown = realloc(r->run, max * sizeof(*grown));

        if (grown == NULL) {
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

/* One request to the target; reply bytes (old elements) into @p old when fetching. */
static int ompi_osc_gpuic_exec_send(ompi_osc_gpuic_module_t *module, int target,
                                    gpuic_call_atomic_t *a, size_t in_bytes, void *old,
                                    size_t old_bytes)
{
    size_t len = 0;
    gpuic_status_t status;

    status = gpuic_ep_call(module->peers[target].ep, a, gpuic_call_atomic_len(in_bytes), old,
                           old_bytes, &len);
    if (status == GPUIC_OK && len != old_bytes) {
        status = GPUIC_ERR_TRANSPORT;
    }
    if (status != GPUIC_OK) {
        gpuic_log(status == GPUIC_ERR_BAD_KEY ? GPUIC_LOG_DEBUG : GPUIC_LOG_ERROR,
                  "rank %d: window %d: atomic on GPU window memory of rank %d, executed there, "
                  "failed: %s", ompi_comm_rank(module->comm), module->id, target,
                  gpuic_status_string(status));
    }
    return ompi_osc_gpuic_error(status);
}

/* Every run in requests; between acc_enter and acc_leave on the target. */
static int ompi_osc_gpuic_exec_runs_send(ompi_osc_gpuic_module_t *module, int target,
                                         const ompi_osc_gpuic_exec_runs_t *runs, int type,
                                         int op, const char *obuf, char *rbuf)
{
    size_t esize = runs->esize, per = GPUIC_CALL_ATOMIC_INLINE / esize;
    gpuic_call_atomic_t a;
    int rc = ompi_osc_gpuic_acc_enter(module, target), rc_leave;

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    memset(&a, 0, offsetof(gpuic_call_atomic_t, data));
    a.op = GPUIC_CALL_ACC;
    a.flags = rbuf != NULL ? GPUIC_CALL_FETCH : 0;
    a.esize = (uint8_t)esize;
    a.type = type;
    a.acc_op = op;
    for (size_t i = 0; i < runs->n && rc == OMPI_SUCCESS; ++i) {
        const mpix_gpuic_acc_run_t *run = &runs->run[i];

        for (uint64_t k = 0; k < run->count && rc == OMPI_SUCCESS; k += per) {
            size_t n = run->count - k < per ? (size_t)(run->count - k) : per;
            size_t off = (size_t)(run->first + k) * esize, in = obuf != NULL ? n * esize : 0;

            a.addr = run->target + k * esize;
            a.count = (uint32_t)n;
            if (in > 0) {
                memcpy(a.data, obuf + off, in);
            }
            rc = ompi_osc_gpuic_exec_send(module, target, &a, in,
                                          rbuf != NULL ? rbuf + off : NULL,
                                          rbuf != NULL ? n * esize : 0);
        }
    }
    rc_leave = ompi_osc_gpuic_acc_leave(module, target);
    return rc != OMPI_SUCCESS ? rc : rc_leave;
}

bool ompi_osc_gpuic_gpu_acc_remote(ompi_osc_gpuic_module_t *module, int target,
                                   const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                                   const void *origin, int ocount, struct ompi_datatype_t *odt,
                                   void *result, int rcount, struct ompi_datatype_t *rdt,
                                   int tcount, struct ompi_datatype_t *tdt,
                                   struct ompi_op_t *op, struct ompi_datatype_t *prim,
                                   size_t nelem, int *rc_p)
{
    ompi_osc_gpuic_exec_runs_t runs = {0};
    ompi_osc_gpuic_bounce_t ob = {0}, rb = {0};
    bool has_origin, fetching = rdt != NULL;
    int ktype = 0, kop = 0, type = 0, gop = 0, rc, rc_b;
    char *obuf = NULL, *rbuf = NULL;
    size_t esize;

    if (!region->gpu || region->direct != NULL || module->peers[target].ep == NULL ||
        ompi_osc_gpuic_stream_named_type(prim, true, &ktype) != MPI_SUCCESS ||
        ompi_osc_gpuic_stream_op(op, ktype, true, &kop) != MPI_SUCCESS ||
        !ompi_osc_gpuic_gpu_exec_codes(ktype, kop, &type, &gop)) {
        return false;
    }
    /* told by the op, not the address: MPI_BOTTOM with absolute datatypes is a buffer */
    has_origin = kop != MPIX_DEVICE_NO_OP;
    ompi_datatype_type_size(prim, &esize);
    runs.esize = esize;
    runs.anchor = ompi_osc_gpuic_exec_anchor;
    if (ompi_osc_gpuic_dt_walk(ompi_osc_gpuic_exec_anchor, (int)nelem, prim,
                               (char *)(uintptr_t)raddr, tcount, tdt,
                               ompi_osc_gpuic_exec_runs_add, &runs) != OMPI_SUCCESS) {
        free(runs.run);
        return false;
    }
    /* From here on the call is the target GPU's: every outcome is its result. */
    obuf = has_origin ? malloc(nelem * esize) : NULL;
    rbuf = fetching ? malloc(nelem * esize) : NULL;
    rc = (has_origin && obuf == NULL) || (fetching && rbuf == NULL) ? MPI_ERR_NO_MEM
                                                                     : OMPI_SUCCESS;
    if (rc == OMPI_SUCCESS && has_origin) {
        rc = ompi_osc_gpuic_bounce_in(&ob, (void *)origin, ocount, odt);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_dt_copy(obuf, (int)nelem, prim, ob.buf, ocount, odt);
        }
        rc_b = ompi_osc_gpuic_bounce_out(&ob, false);
        rc = rc != OMPI_SUCCESS ? rc : rc_b;
    }
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_exec_runs_send(module, target, &runs, type, gop, obuf, rbuf);
    }
    if (rc == OMPI_SUCCESS && fetching) {
        rc = ompi_osc_gpuic_bounce_in(&rb, result, rcount, rdt);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_dt_copy(rb.buf, rcount, rdt, rbuf, (int)nelem, prim);
        }
        rc_b = ompi_osc_gpuic_bounce_out(&rb, rc == OMPI_SUCCESS);
        rc = rc != OMPI_SUCCESS ? rc : rc_b;
    }
    free(obuf);
    free(rbuf);
    free(runs.run);
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
    }
    *rc_p = rc;
    return true;
}

bool ompi_osc_gpuic_gpu_cas_remote(ompi_osc_gpuic_module_t *module, int target,
                                   const ompi_osc_gpuic_region_t *region, uint64_t raddr,
                                   const void *origin, const void *compare, void *result,
                                   struct ompi_datatype_t *dt, int *rc_p)
{
    ompi_osc_gpuic_bounce_t b[3] = {{0}};
    const void *in[3] = {origin, compare, result};
    gpuic_call_atomic_t a;
    size_t esize;
    int rc = OMPI_SUCCESS, rc_b, i;
    char old[8];

    ompi_datatype_type_size(dt, &esize);
    if (!region->gpu || region->direct != NULL || module->peers[target].ep == NULL ||
        (esize != 1 && esize != 2 && esize != 4 && esize != 8) || raddr % esize != 0) {
        return false;
    }
    for (i = 0; i < 3 && rc == OMPI_SUCCESS; ++i) {
        rc = ompi_osc_gpuic_bounce_in(&b[i], (void *)in[i], 1, dt);
    }
    if (rc == OMPI_SUCCESS) {
        memset(&a, 0, offsetof(gpuic_call_atomic_t, data));
        a.addr = raddr;
        a.count = 1;
        a.op = GPUIC_CALL_CAS;
        a.flags = GPUIC_CALL_FETCH;
        a.esize = (uint8_t)esize;
        memcpy(a.data, b[0].buf, esize);
        memcpy(a.compare, b[1].buf, esize);
        rc = ompi_osc_gpuic_acc_enter(module, target);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_exec_send(module, target, &a, esize, old, esize);
            rc_b = ompi_osc_gpuic_acc_leave(module, target);
            rc = rc != OMPI_SUCCESS ? rc : rc_b;
        }
        if (rc == OMPI_SUCCESS) {
            memcpy(b[2].buf, old, esize);
        }
    }
    for (i = 2; i >= 0; --i) {
        rc_b = ompi_osc_gpuic_bounce_out(&b[i], i == 2 && rc == OMPI_SUCCESS);
        rc = rc != OMPI_SUCCESS ? rc : rc_b;
    }
    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.accumulates_gpu, 1);
    }
    *rc_p = rc;
    return true;
}
