#include "gpuic_ucx_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "gpuic_log.h"

/* Empty progress rounds before a waiter starts yielding the processor.  Short enough that an
 * oversubscribed node (several ranks per core) makes progress, long enough that a dedicated core
 * sees no sched_yield() cost on a fast completion. */
#define GPUIC_WAIT_SPINS_BEFORE_YIELD 64
/* Rounds (about a millisecond of yielding) before gpuic_context_wait_idle() sleeps between
 * rounds, and for how long: long waits cost no core, short ones never sleep. */
#define GPUIC_WAIT_SPINS_BEFORE_SLEEP 4096
#define GPUIC_WAIT_SLEEP_NS 50000
/* Silence (no progress seen) after which a bounded wait sleeps between rounds instead of
 * yielding.  Yielding is cheap while other processes are runnable and wakes as soon as this
 * one is scheduled again; a sleep adds its whole length to an answer that comes meanwhile, so
 * a wait only sleeps once its peer has said nothing for long enough that it is likely busy
 * elsewhere (a lock held across a computation, a peer not yet posted). */
#define GPUIC_WAIT_YIELD_NS 20000000ull

gpuic_status_t gpuic_status_from_ucs(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:                 return GPUIC_OK;
    case UCS_INPROGRESS:         return GPUIC_INPROGRESS;
    case UCS_ERR_NO_MEMORY:      return GPUIC_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:  return GPUIC_ERR_INVALID_PARAM;
    case UCS_ERR_NO_RESOURCE:    return GPUIC_ERR_NO_RESOURCE;
    case UCS_ERR_UNSUPPORTED:    return GPUIC_ERR_UNSUPPORTED;
    case UCS_ERR_TIMED_OUT:      return GPUIC_ERR_TIMED_OUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
        return GPUIC_ERR_PEER_FAILED;
    default:                     return GPUIC_ERR_TRANSPORT;
    }
}

/*
 * gpuic's own choices among UCX's settings, each left to the user when the environment sets
 * it.  RMA_PPLN_ENABLE (UCX 1.22 on): a put or get where either side is GPU memory that the
 * transport cannot reach directly (tcp, or a network without GPUDirect RDMA) goes as a
 * rendezvous staged through host memory in a pipeline, instead of UCX's software emulation,
 * which copies and sends each transport segment in turn (docs/performance.md, "GPU windows
 * across nodes").  UCX still picks its direct protocols where they are faster; host-memory
 * transfers never take it.  Only from UCX 1.22, where it was measured: an older UCX accepts
 * the name here and then warns at every worker's creation that it does not know it.
 */
static void gpuic_context_config_defaults(ucp_config_t *config)
{
    unsigned major = 0, minor = 0, release = 0;

    ucp_get_version(&major, &minor, &release);
    if (getenv("UCX_RMA_PPLN_ENABLE") == NULL && (major > 1 || (major == 1 && minor >= 22)) &&
        ucp_config_modify(config, "RMA_PPLN_ENABLE", "y") != UCS_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "UCX %u.%u refused RMA_PPLN_ENABLE=y: GPU memory reached "
                  "through a transport without GPU support uses its default protocol",
                  major, minor);
    }
}

gpuic_status_t gpuic_context_create(const gpuic_context_params_t *params, gpuic_context_t **ctx_p)
{
    ucp_params_t ucp_params = {0};
    ucp_worker_params_t worker_params = {0};
    ucp_config_t *config;
    gpuic_context_t *ctx;
    ucs_status_t st;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_config_read failed: %s", ucs_status_string(st));
        goto err_free;
    }
    gpuic_context_config_defaults(config);
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    /* active messages: remote calls (gpuic_call.h) */
    ucp_params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                          UCP_FEATURE_AM;
    /* a serving worker is progressed by other threads than the context's own worker */
    ucp_params.mt_workers_shared = params->thread_multiple || params->serve ? 1 : 0;
    st = ucp_init(&ucp_params, config, &ctx->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_init failed: %s", ucs_status_string(st));
        goto err_free;
    }

    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = params->thread_multiple     ? UCS_THREAD_MODE_MULTI
                                : params->thread_serialized ? UCS_THREAD_MODE_SERIALIZED
                                                            : UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(ctx->context, &worker_params, &ctx->worker);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_worker_create failed: %s", ucs_status_string(st));
        goto err_cleanup_context;
    }
    st = ucp_worker_get_address(ctx->worker, &ctx->address, &ctx->address_len);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_worker_get_address failed: %s", ucs_status_string(st));
        goto err_destroy_worker;
    }
    if (params->serve) {
        worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
        st = ucp_worker_create(ctx->context, &worker_params, &ctx->serve_worker);
        if (st == UCS_OK) {
            st = ucp_worker_get_address(ctx->serve_worker, &ctx->serve_address,
                                        &ctx->serve_address_len);
            if (st != UCS_OK) {
                ucp_worker_destroy(ctx->serve_worker);
            }
        }
        if (st == UCS_OK) {
            pthread_mutex_init(&ctx->serve_lock, NULL);
            /* a thread waiting on a peer through this context serves that peer meanwhile */
            ctx->also_serve = ctx;
        } else {
            /* peers then reach this process through its own worker, served by its calls */
            gpuic_log(GPUIC_LOG_WARN, "no serving worker (%s): peers' device calls on this "
                      "process wait for its MPI calls where UCX emulates RMA in software",
                      ucs_status_string(st));
            ctx->serve_worker = NULL;
        }
    }
    if (gpuic_call_init(ctx) != GPUIC_OK) {
        st = UCS_ERR_UNSUPPORTED;
        goto err_destroy_serve;
    }
    *ctx_p = ctx;
    return GPUIC_OK;

err_destroy_serve:
    if (ctx->serve_worker != NULL) {
        ucp_worker_release_address(ctx->serve_worker, ctx->serve_address);
        ucp_worker_destroy(ctx->serve_worker);
        pthread_mutex_destroy(&ctx->serve_lock);
    }
    ucp_worker_release_address(ctx->worker, ctx->address);
err_destroy_worker:
    ucp_worker_destroy(ctx->worker);
err_cleanup_context:
    ucp_cleanup(ctx->context);
err_free:
    free(ctx);
    return st == UCS_ERR_NO_MEMORY ? GPUIC_ERR_NO_MEMORY : GPUIC_ERR_TRANSPORT;
}

void gpuic_context_destroy(gpuic_context_t *ctx)
{
    if (ctx == NULL) {
        return;
    }
    gpuic_call_fini(ctx);
    if (ctx->serve_worker != NULL) {
        ucp_worker_release_address(ctx->serve_worker, ctx->serve_address);
        ucp_worker_destroy(ctx->serve_worker);
        pthread_mutex_destroy(&ctx->serve_lock);
    }
    ucp_worker_release_address(ctx->worker, ctx->address);
    ucp_worker_destroy(ctx->worker);
    ucp_cleanup(ctx->context);
    free(ctx);
}

void gpuic_context_serve_address(const gpuic_context_t *ctx, const void **addr_p,
                                 size_t *len_p)
{
    *addr_p = ctx->serve_address;
    *len_p = ctx->serve_worker != NULL ? ctx->serve_address_len : 0;
}

unsigned gpuic_context_serve_progress(gpuic_context_t *ctx)
{
    unsigned n;

    if (ctx == NULL || ctx->serve_worker == NULL || pthread_mutex_trylock(&ctx->serve_lock)) {
        return 0;
    }
    n = ucp_worker_progress(ctx->serve_worker);
    pthread_mutex_unlock(&ctx->serve_lock);
    return n;
}

bool gpuic_context_reaches_device_memory(const gpuic_context_t *ctx)
{
    ucp_context_attr_t attr = {0};

    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    return ucp_context_query(ctx->context, &attr) == UCS_OK &&
           (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

void gpuic_context_address(const gpuic_context_t *ctx, const void **addr_p, size_t *len_p)
{
    *addr_p = ctx->address;
    *len_p = ctx->address_len;
}

void gpuic_context_serve_also(gpuic_context_t *ctx, gpuic_context_t *served)
{
    ctx->also_serve = served;
}

unsigned gpuic_context_progress(gpuic_context_t *ctx)
{
    unsigned n = ucp_worker_progress(ctx->worker);

    if (ctx->also_serve != NULL) {
        n += gpuic_context_serve_progress(ctx->also_serve);
    }
    return n;
}

void gpuic_context_wait_idle(gpuic_context_t *ctx, unsigned spins)
{
    (void)ctx;
    if (spins >= GPUIC_WAIT_SPINS_BEFORE_SLEEP) {
        /* A wait this long is on another process (a held lock, a peer not yet posted): sleep
         * briefly instead of yielding in a loop, which would still keep a core busy. */
        struct timespec ts = {0, GPUIC_WAIT_SLEEP_NS};

        nanosleep(&ts, NULL);
    } else if (spins >= GPUIC_WAIT_SPINS_BEFORE_YIELD) {
        sched_yield();
    }
}

void gpuic_context_set_timeout(gpuic_context_t *ctx, double seconds)
{
    ctx->timeout_ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
}

void gpuic_context_set_alive(gpuic_context_t *ctx, gpuic_context_alive_fn_t alive, void *arg)
{
    ctx->alive = alive;
    ctx->alive_arg = arg;
}

double gpuic_context_timeout(const gpuic_context_t *ctx)
{
    return (double)ctx->timeout_ns / 1e9;
}

uint64_t gpuic_context_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's liveness word (gpuic_context_beat_set()), or NULL. */
static __thread uint64_t *gpuic_context_beat_word;

void gpuic_context_beat_set(uint64_t *word)
{
    gpuic_context_beat_word = word;
}

gpuic_status_t gpuic_context_wait_round(gpuic_context_t *ctx, gpuic_wait_t *wait,
                                        unsigned progressed)
{
    struct timespec ts = {0, GPUIC_WAIT_SLEEP_NS};
    uint64_t now, quiet, *beat = gpuic_context_beat_word;

    if (progressed) {
        /* Alive: both the backoff and the silence that the timeout measures start over. */
        wait->spins = 0;
        wait->quiet_since_ns = 0;
        if (beat != NULL) {
            /* only this thread writes it; peers read it */
            __atomic_store_n(beat, __atomic_load_n(beat, __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELAXED);
        }
        return GPUIC_OK;
    }
    if (++wait->spins < GPUIC_WAIT_SPINS_BEFORE_YIELD) {
        return GPUIC_OK;
    }
    /* From here each round yields or sleeps, which costs far more than reading the clock. */
    now = gpuic_context_now_ns();
    if (wait->quiet_since_ns == 0) {
        wait->quiet_since_ns = now;
    }
    quiet = now - wait->quiet_since_ns;
    if (ctx->timeout_ns != 0 && quiet >= ctx->timeout_ns) {
        if (ctx->alive == NULL || !ctx->alive(ctx->alive_arg)) {
            return GPUIC_ERR_TIMED_OUT;
        }
        /* every peer runs: one that has not got there yet; the silence is measured afresh */
        wait->quiet_since_ns = now;
        quiet = 0;
    }
    if (quiet < GPUIC_WAIT_YIELD_NS) {
        sched_yield();
    } else {
        nanosleep(&ts, NULL);
    }
    return GPUIC_OK;
}

gpuic_status_t gpuic_context_wait_request(gpuic_context_t *ctx, ucs_status_ptr_t request)
{
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    gpuic_status_t status;
    ucs_status_t st;

    if (request == NULL) {
        return GPUIC_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return gpuic_status_from_ucs(UCS_PTR_STATUS(request));
    }
    while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));
        if (status != GPUIC_OK) {
            /* The peer did not answer in time.  Freeing an unfinished request hands it back
             * to UCX when it ends (or is cancelled); this wait no longer owns it. */
            ucp_request_cancel(ctx->worker, request);
            ucp_request_free(request);
            return status;
        }
    }
    ucp_request_free(request);
    return gpuic_status_from_ucs(st);
}

gpuic_status_t gpuic_context_flush(gpuic_context_t *ctx)
{
    ucp_request_param_t param = {0};
    gpuic_status_t status;

    status = gpuic_context_wait_request(ctx, ucp_worker_flush_nbx(ctx->worker, &param));
    if (status == GPUIC_ERR_TIMED_OUT) {
        gpuic_log(GPUIC_LOG_ERROR, "worker flush (all peers) gave up after the %.1f s timeout",
                  gpuic_context_timeout(ctx));
    } else if (!gpuic_status_is_ok(status)) {
        gpuic_log(GPUIC_LOG_ERROR, "worker flush failed: %s", gpuic_status_string(status));
    }
    return status;
}
