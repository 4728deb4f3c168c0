/*
 * Atomics on the words of a window's state block (locks, post/complete counters).  A window
 * whose processes all map each other's state blocks uses CPU atomics on the mappings; any other
 * window uses UCX atomics for every access, so that all origins agree on one kind of atomic per
 * word (CPU and network atomics are not atomic with each other).
 */
#include "ompi_config.h"

#include <inttypes.h>

#include "mpi.h"
#include "opal/sys/atomic.h"

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

    if (module->state_direct) {
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

bool ompi_osc_gpuic_state_peek(ompi_osc_gpuic_module_t *module, int target, size_t offset,
                               uint64_t *value)
{
    const char *block = module->state_direct ? module->peers[target].state_direct
                        : target == ompi_comm_rank(module->comm) ? (const char *)module->state
                                                                 : NULL;

    if (block == NULL) {
        return false;
    }
    *value = __atomic_load_n((const uint64_t *)(block + offset), __ATOMIC_ACQUIRE);
    return true;
}

/*
 * The accumulate lock word (ompi_osc_gpuic_state_t.acc_lock) keeps bulk updates and
 * single-element atomics of an element apart.  Its high half holds 1 + the rank of the process
 * holding it for a bulk update (0: none).  A single-element atomic announces itself first:
 * - through UCX, in the word's low half, a count of atomics in flight: the announcement and the
 *   check for a holder are then one atomic;
 * - on state_direct windows, in its origin's own announcement word (its own cache line, so that
 *   origins do not move each other's lines), then a sequentially consistent read of the lock
 *   word (Dekker: a holder sets the lock word, then reads every announcement).
 * It backs out while a holder is seen.  A bulk holder sets its half, then waits until every
 * announcement drains.  Neither can then touch an element while the other is.
 */
#define OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT 32
#define OMPI_OSC_GPUIC_ACC_COUNT_MASK   0xffffffffULL

static size_t ompi_osc_gpuic_acc_word(void)
{
    return offsetof(ompi_osc_gpuic_state_t, acc_lock);
}

/* Reads the target's accumulate lock word (an atomic add of 0 through UCX). */
static int ompi_osc_gpuic_acc_read(ompi_osc_gpuic_module_t *module, int target, uint64_t *v_p)
{
    if (module->state_direct) {
        *v_p = __atomic_load_n((uint64_t *)(module->peers[target].state_direct +
                                            ompi_osc_gpuic_acc_word()),
                               __ATOMIC_ACQUIRE);
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                      GPUIC_ATOMIC_ADD, 0, 0, v_p);
}

/* One round of a wait on @p target's accumulate words (@p seen: what the waiter last read
 * there): yields, and fails after the timeout. */
static int ompi_osc_gpuic_acc_wait(ompi_osc_gpuic_module_t *module, int target,
                                   gpuic_wait_t *wait, uint64_t seen, const char *what)
{
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_status_t status = gpuic_context_wait_round(ctx, wait, gpuic_context_progress(ctx));

    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR,
                  "%s on rank %d of window %d: still %#" PRIx64 " after %.1f s "
                  "(osc_gpuic_timeout); giving up",
                  what, target, module->id, seen, gpuic_context_timeout(ctx));
        return ompi_osc_gpuic_error(status);
    }
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_acc_lock(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t me = ((uint64_t)ompi_comm_rank(module->comm) + 1) << OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT;
    uint64_t expected = 0, old = 0;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    int rc;

    /* Take the holder half, keeping whatever count is there. */
    for (;;) {
        rc = ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                        GPUIC_ATOMIC_CSWAP, expected | me, expected, &old);
        if (rc != OMPI_SUCCESS || old == expected) {
            break;
        }
        if ((old >> OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT) == 0) {
            expected = old; /* only the count moved: try again at once */
            continue;
        }
        expected = old & OMPI_OSC_GPUIC_ACC_COUNT_MASK;
        rc = ompi_osc_gpuic_acc_wait(module, target, &wait, old, "accumulate lock");
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* Then wait for the single-element atomics already in flight. */
    wait = (gpuic_wait_t)GPUIC_WAIT_INIT;
    if (module->state_direct) {
        int n = ompi_comm_size(module->comm), r = 0;
        char *state = module->peers[target].state_direct;

        while (r < n) {
            uint64_t *flag = (uint64_t *)(state + ompi_osc_gpuic_state_acc_flag_offset(n, r));

            if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) == 0) {
                ++r;
                continue;
            }
            rc = ompi_osc_gpuic_acc_wait(module, target, &wait, __atomic_load_n(flag,
                                         __ATOMIC_RELAXED), r == ompi_comm_rank(module->comm)
                                         ? "accumulate lock: own single-element atomics"
                                         : "accumulate lock: a peer's single-element atomics");
            if (rc != OMPI_SUCCESS) {
                (void)ompi_osc_gpuic_acc_unlock(module, target);
                return rc;
            }
        }
        return OMPI_SUCCESS;
    }
    while ((old & OMPI_OSC_GPUIC_ACC_COUNT_MASK) != 0) {
        rc = ompi_osc_gpuic_acc_wait(module, target, &wait, old, "accumulate lock drain");
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_acc_read(module, target, &old);
        }
        if (rc != OMPI_SUCCESS) {
            (void)ompi_osc_gpuic_acc_unlock(module, target);
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* This process's announcement word in @p target's state block (state_direct windows). */
static uint64_t *ompi_osc_gpuic_acc_flag(ompi_osc_gpuic_module_t *module, int target)
{
    return (uint64_t *)(module->peers[target].state_direct +
                        ompi_osc_gpuic_state_acc_flag_offset(ompi_comm_size(module->comm),
                                                             ompi_comm_rank(module->comm)));
}

/* The state_direct form of acc_enter: announce, then look for a holder. */
static int ompi_osc_gpuic_acc_enter_direct(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t *flag = ompi_osc_gpuic_acc_flag(module, target), *lock;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t v;
    int rc;

    lock = (uint64_t *)(module->peers[target].state_direct + ompi_osc_gpuic_acc_word());
    for (;;) {
        /* A count, not a flag: threads of one process share the word. */
        __atomic_fetch_add(flag, 1, __ATOMIC_SEQ_CST);
        v = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
        if ((v >> OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT) == 0) {
            return OMPI_SUCCESS;
        }
        __atomic_fetch_sub(flag, 1, __ATOMIC_SEQ_CST);
        while ((v >> OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT) != 0) {
            rc = ompi_osc_gpuic_acc_wait(module, target, &wait, v, "accumulate entry");
            if (rc != OMPI_SUCCESS) {
                return rc;
            }
            v = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
        }
    }
}

int ompi_osc_gpuic_acc_unlock(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t me = ((uint64_t)ompi_comm_rank(module->comm) + 1) << OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT;
    uint64_t old = 0;

    /* The caller's updates are visible before the lock reads free. */
    opal_atomic_mb();
    return ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                      GPUIC_ATOMIC_ADD, (uint64_t)0 - me, 0, &old);
}

int ompi_osc_gpuic_acc_enter(ompi_osc_gpuic_module_t *module, int target)
{
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t old = 0;
    int rc;

    if (module->state_direct) {
        return ompi_osc_gpuic_acc_enter_direct(module, target);
    }
    for (;;) {
        rc = ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                        GPUIC_ATOMIC_ADD, 1, 0, &old);
        if (rc != OMPI_SUCCESS || (old >> OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT) == 0) {
            return rc;
        }
        /* A bulk update holds the lock: back out, wait until it is gone, try again. */
        rc = ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                        GPUIC_ATOMIC_ADD, (uint64_t)0 - 1, 0, &old);
        while (rc == OMPI_SUCCESS && (old >> OMPI_OSC_GPUIC_ACC_HOLDER_SHIFT) != 0) {
            rc = ompi_osc_gpuic_acc_wait(module, target, &wait, old, "accumulate entry");
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_acc_read(module, target, &old);
            }
        }
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
}

int ompi_osc_gpuic_acc_leave(ompi_osc_gpuic_module_t *module, int target)
{
    uint64_t old = 0;

    if (module->state_direct) {
        __atomic_fetch_sub(ompi_osc_gpuic_acc_flag(module, target), 1, __ATOMIC_RELEASE);
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_state_fetch(module, target, ompi_osc_gpuic_acc_word(),
                                      GPUIC_ATOMIC_ADD, (uint64_t)0 - 1, 0, &old);
}
