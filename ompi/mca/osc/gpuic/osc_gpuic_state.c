/*
 * Atomics on the words of a window's state block (locks, post/complete counters).  A window
 * whose processes all map each other's state blocks uses CPU atomics on the mappings; any other
 * window uses UCX atomics for every access, so that all origins agree on one kind of atomic per
 * word (CPU and network atomics are not atomic with each other).
 */
#include "ompi_config.h"

#include "mpi.h"

#include "osc_gpuic.h"

static uint64_t ompi_osc_gpuic_cpu_atomic(uint64_t *word, gpuic_atomic_op_t op, uint64_t value,
                                          uint64_t compare)
{
    uint64_t expected = compare;

    switch (op) {
    case GPUIC_ATOMIC_ADD:
        return __atomic_fetch_add(word, value, __ATOMIC_SEQ_CST);
    case GPUIC_ATOMIC_AND:
        return __atomic_fetch_and(word, value, __ATOMIC_SEQ_CST);
    case GPUIC_ATOMIC_OR:
        return __atomic_fetch_or(word, value, __ATOMIC_SEQ_CST);
    case GPUIC_ATOMIC_XOR:
        return __atomic_fetch_xor(word, value, __ATOMIC_SEQ_CST);
    case GPUIC_ATOMIC_SWAP:
        return __atomic_exchange_n(word, value, __ATOMIC_SEQ_CST);
    case GPUIC_ATOMIC_CSWAP:
        __atomic_compare_exchange_n(word, &expected, value, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return expected;
    }
    return 0;
}

int ompi_osc_gpuic_state_fetch(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                               gpuic_atomic_op_t op, uint64_t value, uint64_t compare,
                               uint64_t *old_p)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[target];
    gpuic_status_t status;

    if (module->all_direct) {
        *old_p = ompi_osc_gpuic_cpu_atomic((uint64_t *)(peer->state_direct + offset), op, value,
                                           compare);
        return OMPI_SUCCESS;
    }
    status = gpuic_rma_atomic_fetch(peer->ep, op, value, compare, 8, peer->state_addr + offset,
                                    peer->state_rkey, old_p);
    if (status == GPUIC_ERR_TIMED_OUT) {
        gpuic_log(GPUIC_LOG_ERROR,
                  "atomic on the state of rank %d of window %d got no answer in %.1f s "
                  "(osc_gpuic_timeout); giving up",
                  target, module->id, gpuic_context_timeout(mca_osc_gpuic_component.ctx));
    } else if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "atomic on the state of rank %d failed: %s", target,
                  gpuic_status_string(status));
    }
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_state_add(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                             uint64_t value)
{
    uint64_t old;

    /* Fetching, so that the update has landed when the caller goes on. */
    return ompi_osc_gpuic_state_fetch(module, target, offset, GPUIC_ATOMIC_ADD, value, 0, &old);
}

uint64_t ompi_osc_gpuic_state_read_local(ompi_osc_gpuic_module_t *module, size_t offset)
{
    return __atomic_load_n((uint64_t *)((char *)module->state + offset), __ATOMIC_ACQUIRE);
}

int ompi_osc_gpuic_acc_lock(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t me = (uint64_t)ompi_comm_rank(module->comm) + 1, old = 0;
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    gpuic_status_t status;
    int rc;

    for (;;) {
        rc = ompi_osc_gpuic_state_fetch(module, target,
                                        offsetof(ompi_osc_gpuic_state_t, acc_lock),
                                        GPUIC_ATOMIC_CSWAP, me, 0, &old);
        if (rc != OMPI_SUCCESS || old == 0) {
            return rc;
        }
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));
        if (status != GPUIC_OK) {
            /* old - 1 is the holder's rank */
            gpuic_log(GPUIC_LOG_ERROR,
                      "accumulate lock on rank %d of window %d still held by rank %d after "
                      "%.1f s (osc_gpuic_timeout); giving up",
                      target, module->id, (int)(old - 1), gpuic_context_timeout(ctx));
            return ompi_osc_gpuic_error(status);
        }
    }
}

int ompi_osc_gpuic_acc_unlock(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t me = (uint64_t)ompi_comm_rank(module->comm) + 1, old = 0;

    return ompi_osc_gpuic_state_fetch(module, target, offsetof(ompi_osc_gpuic_state_t, acc_lock),
                                      GPUIC_ATOMIC_CSWAP, 0, me, &old);
}
