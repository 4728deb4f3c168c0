#include "gpuic_mem.h"
#include "gpuic_cmpl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuic_log.h"

gpuic_status_t gpuic_cmpl_create(uint32_t ntargets, gpuic_cmpl_t **cmpl_p)
{
    gpuic_cmpl_t *cmpl;

    if (ntargets == 0 || ntargets >= (1u << 24)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    cmpl = gpuic_mem_aligned(64, sizeof(*cmpl));
    if (cmpl == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(cmpl, 0, sizeof(*cmpl));
    cmpl->counters = gpuic_mem_aligned(64, ntargets * sizeof(gpuic_cmpl_counter_t));
    if (cmpl->counters == NULL) {
        free(cmpl);
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(cmpl->counters, 0, ntargets * sizeof(gpuic_cmpl_counter_t));
    cmpl->ntargets = ntargets;
    *cmpl_p = cmpl;
    return GPUIC_OK;
}

void gpuic_cmpl_destroy(gpuic_cmpl_t *cmpl)
{
    if (cmpl == NULL) {
        return;
    }
    free(cmpl->counters);
    free(cmpl);
}

void gpuic_cmpl_complete(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n, uint64_t failed)
{
    gpuic_cmpl_counter_t *c = &cmpl->counters[target];

    if (failed != 0) {
        __atomic_fetch_add(&c->failed, failed, __ATOMIC_RELAXED);
    }
    /* what the completed WQEs did is visible before a waiter sees them counted */
    gpuic_fence_completion_to_producer();
    __atomic_fetch_add(&c->completed, n, __ATOMIC_RELEASE);
}

void gpuic_cmpl_complete_local(gpuic_cmpl_t *cmpl, uint32_t target, uint64_t n)
{
    gpuic_fence_completion_to_producer();
    __atomic_fetch_add(&cmpl->counters[target].local_completed, n, __ATOMIC_RELEASE);
}

void gpuic_cmpl_set_error(gpuic_cmpl_t *cmpl, gpuic_status_t status)
{
    uint64_t none = 0;

    if (status >= 0) {
        return;
    }
    /* first error wins: later ones are usually consequences of it */
    __atomic_compare_exchange_n(&cmpl->error, &none, (uint64_t)(int64_t)status, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

gpuic_status_t gpuic_cmpl_error(const gpuic_cmpl_t *cmpl)
{
    return (gpuic_status_t)(int64_t)__atomic_load_n(&cmpl->error, __ATOMIC_ACQUIRE);
}

void gpuic_cmpl_query(const gpuic_cmpl_t *cmpl, uint32_t target, gpuic_cmpl_counter_t *out)
{
    const gpuic_cmpl_counter_t *c = &cmpl->counters[target];

    out->posted = __atomic_load_n(&c->posted, __ATOMIC_ACQUIRE);
    out->completed = __atomic_load_n(&c->completed, __ATOMIC_ACQUIRE);
    out->local_completed = __atomic_load_n(&c->local_completed, __ATOMIC_ACQUIRE);
    out->failed = __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE);
}

void gpuic_cmpl_watch(gpuic_cmpl_t *cmpl, gpuic_health_t *engine)
{
    __atomic_store_n(&cmpl->engine, engine, __ATOMIC_RELEASE);
}

void gpuic_cmpl_set_engine_error(gpuic_cmpl_t *cmpl, gpuic_status_t status, uint64_t beat)
{
    __atomic_store_n(&cmpl->engine_error_beat, beat, __ATOMIC_RELAXED);
    __atomic_store_n(&cmpl->engine_error, (int32_t)(status < 0 ? status : GPUIC_OK),
                     __ATOMIC_RELEASE);
}

/* What a waiter remembers of the engine's heartbeat: its value when the waiter began looking,
 * its last value and when it changed. */
typedef struct gpuic_cmpl_watcher {
    uint64_t start_beat;
    uint64_t beat;
    uint64_t since_ns;
} gpuic_cmpl_watcher_t;

/*
 * GPUIC_OK while the engine can still complete the wait's work: no engine error declared, its
 * thread running, and its heartbeat moving (or still for less than its stall time).  The
 * first waiter to find it failed logs it.
 */
static gpuic_status_t gpuic_cmpl_engine_check(const gpuic_cmpl_t *cmpl, gpuic_cmpl_watcher_t *w,
                                              uint64_t now)
{
    gpuic_health_t *h = __atomic_load_n(&cmpl->engine, __ATOMIC_ACQUIRE);
    int32_t declared;
    uint64_t beat, stall_ns;
    int exited;

    if (h == NULL) {
        return GPUIC_OK;
    }
    if (w->since_ns == 0) {
        /* Whatever the engine finds from its next pass on sees the state this wait began
         * with (a producer's late commit included): the engine fences between counting a
         * pass and looking at the rings, this waiter between them and reading the count. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        w->start_beat = __atomic_load_n(&h->heartbeat, __ATOMIC_RELAXED);
    }
    declared = __atomic_load_n(&cmpl->engine_error, __ATOMIC_ACQUIRE);
    if (declared < 0 &&
        (int64_t)(__atomic_load_n(&cmpl->engine_error_beat, __ATOMIC_RELAXED) -
                  w->start_beat) > 0) {
        return (gpuic_status_t)declared; /* logged by the engine */
    }
    exited = __atomic_load_n(&h->exited, __ATOMIC_ACQUIRE) != 0;
    beat = __atomic_load_n(&h->heartbeat, __ATOMIC_RELAXED);
    stall_ns = __atomic_load_n(&h->stall_ns, __ATOMIC_RELAXED);
    if (!exited && (beat != w->beat || w->since_ns == 0)) {
        w->beat = beat;
        w->since_ns = now;
        return GPUIC_OK;
    }
    if (!exited && (stall_ns == 0 || now - w->since_ns < stall_ns)) {
        return GPUIC_OK;
    }
    if (__atomic_exchange_n(&h->reported, 1, __ATOMIC_RELAXED) == 0) {
        if (exited) {
            gpuic_log(GPUIC_LOG_ERROR, "the proxy thread has exited with work outstanding: "
                      "those operations cannot complete");
        } else {
            gpuic_log(GPUIC_LOG_ERROR, "the proxy thread has made no progress for %.1f s with "
                      "work outstanding (the timeout, osc_gpuic_timeout): giving up",
                      (double)stall_ns / 1e9);
        }
    }
    return GPUIC_ERR_ENGINE_FAILED;
}

static uint64_t gpuic_cmpl_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

gpuic_status_t gpuic_cmpl_wait(const gpuic_cmpl_t *cmpl, uint32_t target,
                               gpuic_cmpl_kind_t kind, uint64_t timeout_ns)
{
    const gpuic_cmpl_counter_t *c;
    const uint64_t *done;
    uint64_t goal, start = 0;
    struct timespec pause = {0, 1000};
    gpuic_cmpl_watcher_t watcher = {0, 0, 0};
    gpuic_status_t status;
    unsigned spins = 0;

    if (target >= cmpl->ntargets) {
        gpuic_log(GPUIC_LOG_DEBUG, "wait: target %u >= %u targets", target, cmpl->ntargets);
        return GPUIC_ERR_INVALID_PARAM;
    }
    c = &cmpl->counters[target];
    done = kind == GPUIC_CMPL_LOCAL ? &c->local_completed : &c->completed;
    goal = __atomic_load_n(&c->posted, __ATOMIC_ACQUIRE);
    while ((int64_t)(__atomic_load_n(done, __ATOMIC_ACQUIRE) - goal) < 0) {
        if (++spins < 256) {
            gpuic_cpu_relax(0);
            continue;
        }
        {
            uint64_t now = gpuic_cmpl_now_ns();

            status = gpuic_cmpl_engine_check(cmpl, &watcher, now);
            if (status != GPUIC_OK) {
                return status;
            }
            if (timeout_ns != 0) {
                if (start == 0) {
                    start = now;
                } else if (now - start >= timeout_ns) {
                    return GPUIC_ERR_TIMED_OUT;
                }
            }
        }
        /* The engine may need this core (2-core machines, oversubscribed ranks). */
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < 256000) {
            pause.tv_nsec *= 2;
        }
    }
    return GPUIC_OK;
}
