#include "gpuic_mem.h"
#include "gpuic_cmpl.h"

#include <stdlib.h>
#include <string.h>

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

    out->completed = __atomic_load_n(&c->completed, __ATOMIC_ACQUIRE);
    out->local_completed = __atomic_load_n(&c->local_completed, __ATOMIC_ACQUIRE);
    out->failed = __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE);
}
