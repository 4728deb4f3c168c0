/*
 * The proxy's lifecycle and its thread: create, add and remove queues, pause and resume, the
 * loop (a round, progress, retire, the free indexes) and its idle sleep.
 */
#include "gpuic_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuic_log.h"
#include "gpuic_proxy_internal.h"

#define GPUIC_PROXY_DEFAULT_SPIN_ROUNDS 2000
#define GPUIC_PROXY_DEFAULT_MAX_MSG (1u << 30)

/* ---- idle sleep ---- */

/*
 * Announces a sleep: sets the flag, then takes one more look at everything that should keep
 * the thread awake.  Returns 1 when it may sleep; 0 (flag cleared) when a request arrived
 * meanwhile or a ring keeps the proxy polling.  The fence pairs with the one in
 * gpuic_proxy_wake(): one of the two sees the other's store, so no wake-up is lost.
 * Under ctx_lock.
 *
 * Producers (GPU threads) cannot wake a sleeping proxy: a ring that has carried entries keeps
 * the proxy polling for as long as it is attached, so its entries are picked up within a
 * pass, not after a pause; only a proxy whose rings never carried anything sleeps.
 */
static int gpuic_proxy_sleep_prepare(gpuic_proxy_t *proxy, int for_pause)
{
    int awake = 0;

    __atomic_store_n(&proxy->sleeping, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (for_pause) {
        awake = !__atomic_load_n(&proxy->pause_requests, __ATOMIC_RELAXED);
    } else {
        awake = __atomic_load_n(&proxy->pause_requests, __ATOMIC_RELAXED) != 0;
        for (unsigned i = 0; i < proxy->nqueues && !awake; ++i) {
            awake = gpuic_ring_read_index(proxy->queues[i].q.ring) != 0;
        }
    }
    if (awake || __atomic_load_n(&proxy->stop, __ATOMIC_RELAXED)) {
        __atomic_store_n(&proxy->sleeping, 0, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

/* Sleeps up to ns after gpuic_proxy_sleep_prepare(), until a waker clears the flag. */
static void gpuic_proxy_sleep(gpuic_proxy_t *proxy, uint64_t ns)
{
    struct timespec deadline;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)(ns / 1000000000u);
    deadline.tv_nsec += (long)(ns % 1000000000u);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&proxy->wake_lock);
    while (__atomic_load_n(&proxy->sleeping, __ATOMIC_RELAXED)) {
        if (pthread_cond_timedwait(&proxy->wake_cond, &proxy->wake_lock, &deadline) ==
            ETIMEDOUT) {
            break;
        }
    }
    __atomic_store_n(&proxy->sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&proxy->wake_lock);
}

/* Ends a sleep (gpuic_proxy_wake()).  Clearing the flag under wake_lock is what the sleeper's
 * loop tests, so a wake-up between its last look and its wait is not lost. */
static void gpuic_proxy_wake_locked(gpuic_proxy_t *proxy)
{
    pthread_mutex_lock(&proxy->wake_lock);
    if (__atomic_load_n(&proxy->sleeping, __ATOMIC_RELAXED)) {
        __atomic_store_n(&proxy->sleeping, 0, __ATOMIC_RELAXED);
        pthread_cond_signal(&proxy->wake_cond);
    }
    pthread_mutex_unlock(&proxy->wake_lock);
}

/* Ends an idle pause early, for a request the thread must see (pause, resume, stop): the
 * request is stored before the flag is read. */
static void gpuic_proxy_wake(gpuic_proxy_t *proxy)
{
    /* pairs with the fence in gpuic_proxy_sleep_prepare() */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&proxy->sleeping, __ATOMIC_RELAXED)) {
        gpuic_proxy_wake_locked(proxy);
    }
}

/* ---- the thread ---- */

/*
 * Idle passes a proxy with rings attached spins before it starts yielding its core (its
 * producers are GPU threads, not on this core): a yield delays the next entry's pickup when
 * entries come a few microseconds apart, as one thread's device put + flush loop sends them.
 * Figures: docs/performance-history.md, "Proxy yield".
 */
#define GPUIC_PROXY_DEVICE_YIELD_PASSES 1024u

/* The longest idle pause now: longer while the proxy serves its peers alone (no ring). */
static uint64_t gpuic_proxy_max_sleep_ns(const gpuic_proxy_t *proxy)
{
    uint64_t us = proxy->params.max_sleep_us;

    if (proxy->nqueues == 0 && proxy->params.serve != NULL) {
        us = GPUIC_PROXY_SERVE_ONLY_MAX_SLEEP_US;
    }
    return us * 1000;
}

static void *gpuic_proxy_main(void *arg)
{
    gpuic_proxy_t *proxy = arg;
    uint64_t sleep_ns = 1000, max_sleep_ns;
    unsigned idle = 0, passes = 0;
    int serving = 0;

    while (!__atomic_load_n(&proxy->stop, __ATOMIC_ACQUIRE)) {
        unsigned work;
        int outstanding, may_sleep = 0, device_fed = 0, holding;

        if (__atomic_load_n(&proxy->pause_requests, __ATOMIC_ACQUIRE)) {
            /* let a pauser take ctx_lock (mutexes are not fair); resume wakes us */
            if (gpuic_proxy_sleep_prepare(proxy, 1)) {
                gpuic_proxy_sleep(proxy, 50000);
            }
            continue;
        }
        pthread_mutex_lock(&proxy->ctx_lock);
        work = gpuic_proxy_round(proxy);
        /* a round executed through mappings completes here, before any progress call */
        gpuic_proxy_retire(proxy);
        /* Progress polls every transport: the costly part of an idle pass, and time a WQE
         * arriving meanwhile waits to be picked up.  Only UCX work in flight needs it; other
         * passes (busy with mapped targets, spinning or waking up) progress one time in 16,
         * for the transport's own housekeeping. */
        /* A proxy that serves its process (params.serve: progressed with its context) also
         * progresses each pass while that finds work and each pass between idle pauses, so
         * that peers' operations on this process wait neither for 16 passes nor longer than
         * one pause. */
        ++passes;
        if (proxy->fifo_head != NULL || (passes & 15) == 0 ||
            (proxy->params.serve != NULL && (serving || idle >= proxy->params.spin_rounds))) {
            unsigned n = gpuic_context_progress(proxy->params.ctx);

            serving = n != 0;
            work += n;
            gpuic_proxy_retire(proxy);
        }
        /* after both retires: a completion index either of them published moves the free
         * index in this pass too */
        holding = gpuic_proxy_free_update(proxy);
        outstanding = proxy->fifo_head != NULL;
        if (work == 0 && !outstanding && idle >= proxy->params.spin_rounds) {
            may_sleep = gpuic_proxy_sleep_prepare(proxy, 0);
            if (!may_sleep) {
                work = 1; /* a WQE or a request arrived just now */
            }
        }
        if (work == 0 && idle < GPUIC_PROXY_DEVICE_YIELD_PASSES) {
            /* every ring is fed by GPU threads (tagged words): they are not on this core */
            device_fed = holding || proxy->nqueues != 0;
        }
        max_sleep_ns = gpuic_proxy_max_sleep_ns(proxy); /* nqueues: under ctx_lock */
        pthread_mutex_unlock(&proxy->ctx_lock);

        if (work != 0) {
            idle = 0;
            sleep_ns = 1000;
        } else if (!may_sleep) {
            /* UCX has work in flight, or the burst may not be over: keep polling, but let
             * a producer on the same core run (GPU producers: only after a while) */
            ++idle;
            if (!device_fed) {
                gpuic_context_wait_idle(proxy->params.ctx, idle);
            }
        } else {
            idle++;
            __atomic_store_n(&proxy->stat_sleeps,
                             __atomic_load_n(&proxy->stat_sleeps, __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELAXED);
            /* doubling, but never past the longest pause, which a ring attached meanwhile
             * shortens: device producers wait that long */
            if (sleep_ns > max_sleep_ns) {
                sleep_ns = max_sleep_ns;
            }
            gpuic_proxy_sleep(proxy, sleep_ns);
            sleep_ns *= 2;
        }
    }
    pthread_mutex_lock(&proxy->ctx_lock);
    if (gpuic_proxy_drain_locked(proxy) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "proxy: operations still incomplete after the %.1f s "
                  "timeout at shutdown (a peer unreachable?); abandoning them",
                  gpuic_context_timeout(proxy->params.ctx));
    }
    pthread_mutex_unlock(&proxy->ctx_lock);
    return NULL;
}

/* ---- public ---- */

gpuic_status_t gpuic_proxy_create(const gpuic_proxy_params_t *params, gpuic_proxy_t **proxy_p)
{
    pthread_condattr_t cattr;
    gpuic_proxy_t *proxy;

    if (params == NULL || params->ctx == NULL) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    proxy = gpuic_mem_aligned(64, sizeof(*proxy));
    if (proxy == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(proxy, 0, sizeof(*proxy));
    proxy->params = *params;
    if (proxy->params.spin_rounds == 0) {
        proxy->params.spin_rounds = GPUIC_PROXY_DEFAULT_SPIN_ROUNDS;
    }
    if (proxy->params.max_sleep_us == 0) {
        proxy->params.max_sleep_us = GPUIC_PROXY_DEFAULT_MAX_SLEEP_US;
    }
    if (proxy->params.serve != NULL &&
        proxy->params.max_sleep_us > GPUIC_PROXY_SERVE_MAX_SLEEP_US) {
        proxy->params.max_sleep_us = GPUIC_PROXY_SERVE_MAX_SLEEP_US;
    }
    /* the proxy's own waits on peers (fetching atomics, flushes) keep serving them: two
     * proxies waiting on each other's answers would otherwise both wait forever */
    gpuic_context_serve_also(proxy->params.ctx, proxy->params.serve);
    if (proxy->params.max_msg_size == 0) {
        proxy->params.max_msg_size = GPUIC_PROXY_DEFAULT_MAX_MSG;
    }
    proxy->ucx_device = gpuic_context_reaches_device_memory(proxy->params.ctx);
    pthread_mutex_init(&proxy->ctx_lock, NULL);
    pthread_mutex_init(&proxy->wake_lock, NULL);
    /* sleeps are timed on the monotonic clock: a wall-clock step must not stretch one */
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&proxy->wake_cond, &cattr);
    pthread_condattr_destroy(&cattr);
    *proxy_p = proxy;
    return GPUIC_OK;
}

/* Frees the per-queue arrays of an attached queue (tallies, held results). */
static void gpuic_proxy_attached_free(gpuic_proxy_attached_t *a)
{
    free(a->tally_stamp);
    free(a->tally_index);
    free(a->held);
}

void gpuic_proxy_destroy(gpuic_proxy_t *proxy)
{
    if (proxy == NULL) {
        return;
    }
    if (proxy->started) {
        __atomic_store_n(&proxy->stop, 1, __ATOMIC_SEQ_CST);
        gpuic_proxy_wake(proxy);
        pthread_join(proxy->thread, NULL);
    }
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        gpuic_proxy_attached_free(&proxy->queues[i]);
    }
    free(proxy->queues);
    gpuic_proxy_free_lists(proxy);
    free(proxy->bounce);
    pthread_cond_destroy(&proxy->wake_cond);
    pthread_mutex_destroy(&proxy->wake_lock);
    pthread_mutex_destroy(&proxy->ctx_lock);
    free(proxy);
}

/* Starts the thread unless it runs; the caller has paused the proxy (or it has no thread). */
static gpuic_status_t gpuic_proxy_thread_start(gpuic_proxy_t *proxy)
{
    int rc;

    if (proxy->started) {
        return GPUIC_OK;
    }
    rc = pthread_create(&proxy->thread, NULL, gpuic_proxy_main, proxy);
    if (rc != 0) {
        gpuic_log(GPUIC_LOG_ERROR, "proxy: cannot start its thread: %s", strerror(rc));
        return GPUIC_ERR_TRANSPORT;
    }
    proxy->started = 1;
    return GPUIC_OK;
}

gpuic_status_t gpuic_proxy_start(gpuic_proxy_t *proxy)
{
    gpuic_status_t status;

    gpuic_proxy_pause(proxy);
    status = gpuic_proxy_thread_start(proxy);
    gpuic_proxy_resume(proxy);
    return status;
}

gpuic_status_t gpuic_proxy_add(gpuic_proxy_t *proxy, const gpuic_proxy_queue_t *queue)
{
    gpuic_proxy_attached_t *queues, *a;
    gpuic_status_t status = GPUIC_OK;

    if (queue->ring == NULL || queue->keys == NULL || queue->cmpl == NULL ||
        queue->done == NULL || (queue->free != NULL && queue->acks == NULL)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    gpuic_proxy_pause(proxy);
    queues = realloc(proxy->queues, (proxy->nqueues + 1) * sizeof(*queues));
    if (queues == NULL) {
        status = GPUIC_ERR_NO_MEMORY;
        goto out_resume;
    }
    proxy->queues = queues;
    a = &queues[proxy->nqueues];
    a->q = *queue;
    a->done_owed = gpuic_proxy_done_index(queue);
    a->held = NULL;
    a->held_head = a->held_tail = 0;
    if (queue->free != NULL) {
        a->free_pub = __atomic_load_n(queue->free, __ATOMIC_RELAXED);
        a->held = malloc(queue->ring->size * sizeof(*a->held));
    }
    a->trace = gpuic_trace_view(queue->trace, 0);
    a->tally_stamp = calloc(queue->cmpl->ntargets, sizeof(*a->tally_stamp));
    a->tally_index = calloc(queue->cmpl->ntargets, sizeof(*a->tally_index));
    if (a->tally_stamp == NULL || a->tally_index == NULL ||
        (queue->free != NULL && a->held == NULL)) {
        gpuic_proxy_attached_free(a);
        status = GPUIC_ERR_NO_MEMORY;
        goto out_resume;
    }
    proxy->nqueues++;
    status = gpuic_proxy_thread_start(proxy);
    if (status != GPUIC_OK) {
        proxy->nqueues--;
        gpuic_proxy_attached_free(a);
    }
out_resume:
    gpuic_proxy_resume(proxy);
    return status;
}

gpuic_status_t gpuic_proxy_remove(gpuic_proxy_t *proxy, gpuic_ring_t *ring)
{
    gpuic_status_t status = GPUIC_ERR_INVALID_PARAM;

    gpuic_proxy_pause(proxy);
    for (unsigned i = 0; i < proxy->nqueues; ++i) {
        if (proxy->queues[i].q.ring != ring) {
            continue;
        }
        /* complete what was consumed: its rounds point into this queue's window */
        if (gpuic_proxy_drain_locked(proxy) != GPUIC_OK) {
            /* still attached: the caller keeps the queue's objects alive (the error is the
             * caller's to report, with the window it knows) */
            status = GPUIC_ERR_TIMED_OUT;
            break;
        }
        gpuic_proxy_attached_free(&proxy->queues[i]);
        proxy->queues[i] = proxy->queues[--proxy->nqueues];
        status = GPUIC_OK;
        break;
    }
    gpuic_proxy_resume(proxy);
    return status;
}

void gpuic_proxy_pause(gpuic_proxy_t *proxy)
{
    __atomic_fetch_add(&proxy->pause_requests, 1, __ATOMIC_SEQ_CST);
    gpuic_proxy_wake(proxy);
    pthread_mutex_lock(&proxy->ctx_lock);
}

void gpuic_proxy_resume(gpuic_proxy_t *proxy)
{
    pthread_mutex_unlock(&proxy->ctx_lock);
    __atomic_fetch_sub(&proxy->pause_requests, 1, __ATOMIC_SEQ_CST);
    gpuic_proxy_wake(proxy);
}

void gpuic_proxy_stats(gpuic_proxy_t *proxy, gpuic_proxy_stats_t *stats)
{
    clockid_t cid;
    struct timespec ts;

    stats->wqes = __atomic_load_n(&proxy->stat_wqes, __ATOMIC_RELAXED);
    stats->errors = __atomic_load_n(&proxy->stat_errors, __ATOMIC_RELAXED);
    stats->rounds = __atomic_load_n(&proxy->stat_rounds, __ATOMIC_RELAXED);
    stats->sleeps = __atomic_load_n(&proxy->stat_sleeps, __ATOMIC_RELAXED);
    stats->merged = __atomic_load_n(&proxy->stat_merged, __ATOMIC_RELAXED);
    stats->busy_ns = __atomic_load_n(&proxy->stat_busy_ns, __ATOMIC_RELAXED);
    stats->cpu_ns = 0;
    if (proxy->started && pthread_getcpuclockid(proxy->thread, &cid) == 0 &&
        clock_gettime(cid, &ts) == 0) {
        stats->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
}

void gpuic_proxy_test_fault(gpuic_proxy_t *proxy, gpuic_proxy_fault_t fault)
{
    __atomic_store_n(&proxy->test_fault, (uint32_t)fault, __ATOMIC_RELEASE);
    gpuic_proxy_wake(proxy);
}
