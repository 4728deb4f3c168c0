/*
 * Passive-target synchronization: lock/unlock, lock_all/unlock_all, flush*, sync.
 *
 * Each window's state block holds a lock word per process (osc_gpuic.h).  A shared lock adds 1
 * and backs out if it finds the exclusive bit, then waits by reading until the bit clears.  An
 * exclusive lock claims the bit by compare-and-swap, which keeps new shared lockers out, then
 * waits for the shared holders to leave: so a stream of shared lockers cannot starve it.
 * Waiters retry, yielding, until they succeed or the lock word stays unchanged for
 * osc_gpuic_timeout (its holder may have died): a lock that keeps changing hands is alive,
 * however long one waiter waits.  Unlock completes the holder's operations at the target
 * first, then releases the word.
 *
 * Fairness: a locker that has failed for OMPI_OSC_GPUIC_LOCK_PATIENCE_NS counts itself in the
 * target's lock_waiters word until it gets the lock.  A locker that reads that word without the
 * network (the target itself, or anyone on a state_direct window) and finds waiters stands back
 * first, progressing, until the lock changes hands or OMPI_OSC_GPUIC_LOCK_DEFER_NS pass: its own
 * attempts are local and immediate, while a remote waiter's may land only when the target
 * progresses, so a loop of local acquisitions would otherwise win every race (MPICH's
 * linked-list pattern over TCP).
 */
#include "ompi_config.h"

#include "mpi.h"
#include "opal/sys/atomic.h"

#include "osc_gpuic.h"

/* What a waiter watches of a lock word to tell a lock in use from a dead holder: while the
 * exclusive bit is set, the bit and the release count (shared lockers backing out move the low
 * bits meanwhile); otherwise the whole word. */
static uint64_t ompi_osc_gpuic_lock_signature(uint64_t word)
{
    return (word & OMPI_OSC_GPUIC_LOCK_EXCLUSIVE) ? word & ~OMPI_OSC_GPUIC_LOCK_SHARED_MASK
                                                  : word;
}

/* One round of a lock wait that found the word at @p word: yields, and fails once the word has
 * not changed for the timeout. */
static int ompi_osc_gpuic_lock_wait_round(ompi_osc_gpuic_module_t *module, int target,
                                          const char *what, gpuic_wait_t *wait, uint64_t word,
                                          uint64_t *seen)
{
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    uint64_t sig = ompi_osc_gpuic_lock_signature(word);
    unsigned progressed = sig != *seen;
    gpuic_status_t status;

    *seen = sig;
    /* Peers' UCX atomics may need our progress (software-emulated atomics). */
    (void)gpuic_context_progress(ctx);
    status = gpuic_context_wait_round(ctx, wait, progressed);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR,
                  "%s lock on rank %d of window %d: the lock word did not change for %.1f s "
                  "(osc_gpuic_timeout; its holder may have died); giving up",
                  what, target, module->id, gpuic_context_timeout(ctx));
    }
    return ompi_osc_gpuic_error(status);
}

/* The longest a locker that does not wait stands back for the lock's waiters: long enough for
 * a waiter that sleeps or lost its core on an oversubscribed node to retry; bounded, since a
 * waiter may have died. */
#define OMPI_OSC_GPUIC_LOCK_DEFER_NS 5000000ull

/* Before a first attempt on @p target's lock: while the target's waiters word, read without the
 * network, is nonzero, progress and yield until the lock word changes (someone got in or left)
 * or OMPI_OSC_GPUIC_LOCK_DEFER_NS pass.  Nothing to do where the words need the network. */
static void ompi_osc_gpuic_lock_defer(ompi_osc_gpuic_module_t *module, int target)
{
    const size_t lock = offsetof(ompi_osc_gpuic_state_t, lock);
    const size_t waiters = offsetof(ompi_osc_gpuic_state_t, lock_waiters);
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t count, first, word, until;

    if (!ompi_osc_gpuic_state_peek(module, target, waiters, &count) || count == 0) {
        return;
    }
    (void)ompi_osc_gpuic_state_peek(module, target, lock, &first);
    until = gpuic_context_now_ns() + OMPI_OSC_GPUIC_LOCK_DEFER_NS;
    do {
        if (gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx)) != GPUIC_OK) {
            return; /* quiet for osc_gpuic_timeout: stop standing back, the attempt decides */
        }
        (void)ompi_osc_gpuic_state_peek(module, target, waiters, &count);
        (void)ompi_osc_gpuic_state_peek(module, target, lock, &word);
    } while (count != 0 && word == first && gpuic_context_now_ns() < until);
}

/* How long a locker waits before it counts itself among the lock's waiters: brief contention
 * costs no extra atomics, a locker that keeps losing races gets the others to stand back. */
#define OMPI_OSC_GPUIC_LOCK_PATIENCE_NS 1000000ull

/* A locker's place among the waiters of one lock acquisition. */
typedef struct ompi_osc_gpuic_lock_waiter {
    uint64_t since_ns; /**< first failed attempt; 0: none yet */
    bool     counted;  /**< counted in the target's lock_waiters */
} ompi_osc_gpuic_lock_waiter_t;

#define OMPI_OSC_GPUIC_LOCK_WAITER_INIT {0, false}

/* After a failed attempt: counts the locker in once it has waited
 * OMPI_OSC_GPUIC_LOCK_PATIENCE_NS. */
static int ompi_osc_gpuic_lock_waiter_failed(ompi_osc_gpuic_module_t *module, int target,
                                             ompi_osc_gpuic_lock_waiter_t *waiter)
{
    uint64_t now;
    int rc;

    if (waiter->counted) {
        return OMPI_SUCCESS;
    }
    now = gpuic_context_now_ns();
    if (waiter->since_ns == 0) {
        waiter->since_ns = now;
        return OMPI_SUCCESS;
    }
    if (now - waiter->since_ns < OMPI_OSC_GPUIC_LOCK_PATIENCE_NS) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_gpuic_state_add(module, target,
                                  offsetof(ompi_osc_gpuic_state_t, lock_waiters), 1);
    waiter->counted = rc == OMPI_SUCCESS;
    return rc;
}

/* At the end of an acquisition, got or failed: counts the locker out again. */
static void ompi_osc_gpuic_lock_waiter_done(ompi_osc_gpuic_module_t *module, int target,
                                            const ompi_osc_gpuic_lock_waiter_t *waiter)
{
    if (waiter->counted) {
        /* a failure is logged by the state layer; the word is only a hint */
        (void)ompi_osc_gpuic_state_add(module, target,
                                       offsetof(ompi_osc_gpuic_state_t, lock_waiters),
                                       (uint64_t)-1);
    }
}

static int ompi_osc_gpuic_lock_shared(ompi_osc_gpuic_module_t *module, int target)
{
    const size_t lock = offsetof(ompi_osc_gpuic_state_t, lock);
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    ompi_osc_gpuic_lock_waiter_t waiter = OMPI_OSC_GPUIC_LOCK_WAITER_INIT;
    uint64_t old, seen = 0;
    int rc;

    ompi_osc_gpuic_lock_defer(module, target);
    for (;;) {
        rc = ompi_osc_gpuic_state_fetch(module, target, lock, GPUIC_ATOMIC_ADD, 1, 0, &old);
        if (rc != OMPI_SUCCESS || !(old & OMPI_OSC_GPUIC_LOCK_EXCLUSIVE)) {
            break;
        }
        rc = ompi_osc_gpuic_state_add(module, target, lock, (uint64_t)-1);
        /* Wait by reading, so that the exclusive holder's wait for shared holders to leave
         * does not see this one come and go. */
        while (rc == OMPI_SUCCESS && (old & OMPI_OSC_GPUIC_LOCK_EXCLUSIVE)) {
            rc = ompi_osc_gpuic_lock_waiter_failed(module, target, &waiter);
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_lock_wait_round(module, target, "shared", &wait, old,
                                                    &seen);
            }
            if (rc == OMPI_SUCCESS) {
                rc = ompi_osc_gpuic_state_fetch(module, target, lock, GPUIC_ATOMIC_ADD, 0, 0,
                                                &old);
            }
        }
        if (rc != OMPI_SUCCESS) {
            break;
        }
    }
    ompi_osc_gpuic_lock_waiter_done(module, target, &waiter);
    return rc;
}

/* How long an exclusive claim waits for the shared holders to leave without any leaving
 * before it stands back, and how long it then stands back: a shared holder may be waiting for
 * another lock that this process's claim keeps from its own holders, so a claim never blocks
 * shared lockers for long (no deadlock), yet a steady stream of them cannot starve it. */
#define OMPI_OSC_GPUIC_LOCK_CLAIM_NS 2000000ull

/* Waits, with the exclusive bit claimed and @p *word read at the claim, until no shared holder
 * is left (*drained = true) or none has left for OMPI_OSC_GPUIC_LOCK_CLAIM_NS (*drained =
 * false).  Only a holder leaving counts as progress for the timeout. */
static int ompi_osc_gpuic_lock_drain(ompi_osc_gpuic_module_t *module, int target,
                                     gpuic_wait_t *wait, uint64_t *word, bool *drained)
{
    const size_t lock = offsetof(ompi_osc_gpuic_state_t, lock);
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    uint64_t cur, since = gpuic_context_now_ns();
    unsigned progressed = 0;
    gpuic_status_t status;
    int rc;

    while (*word & OMPI_OSC_GPUIC_LOCK_SHARED_MASK) {
        (void)gpuic_context_progress(ctx);
        status = gpuic_context_wait_round(ctx, wait, progressed);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR,
                      "exclusive lock on rank %d of window %d: %llu shared holders did not "
                      "leave for %.1f s (osc_gpuic_timeout; a holder may have died); giving up",
                      target, module->id,
                      (unsigned long long)(*word & OMPI_OSC_GPUIC_LOCK_SHARED_MASK),
                      gpuic_context_timeout(ctx));
            return ompi_osc_gpuic_error(status);
        }
        rc = ompi_osc_gpuic_state_fetch(module, target, lock, GPUIC_ATOMIC_ADD, 0, 0, &cur);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        progressed = (cur & OMPI_OSC_GPUIC_LOCK_SHARED_MASK) <
                     (*word & OMPI_OSC_GPUIC_LOCK_SHARED_MASK);
        *word = cur;
        if (progressed) {
            since = gpuic_context_now_ns();
        } else if (gpuic_context_now_ns() - since >= OMPI_OSC_GPUIC_LOCK_CLAIM_NS) {
            *drained = false;
            return OMPI_SUCCESS;
        }
    }
    *drained = true;
    return OMPI_SUCCESS;
}

/* The exclusive lock's attempts, noting its failures in @p waiter. */
static int ompi_osc_gpuic_lock_exclusive_loop(ompi_osc_gpuic_module_t *module, int target,
                                              ompi_osc_gpuic_lock_waiter_t *waiter)
{
    const size_t lock = offsetof(ompi_osc_gpuic_state_t, lock);
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t old, guess = 0, seen = 0, until;
    bool drained = false;
    int rc;

    for (;;) {
        /* Claim the exclusive bit, whatever shared holders there are. */
        rc = ompi_osc_gpuic_state_fetch(module, target, lock, GPUIC_ATOMIC_CSWAP,
                                        guess | OMPI_OSC_GPUIC_LOCK_EXCLUSIVE, guess, &old);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (old != guess) {
            if (old & OMPI_OSC_GPUIC_LOCK_EXCLUSIVE) {
                /* after the holder's release: the bit clear, one more release counted */
                guess = (old + OMPI_OSC_GPUIC_LOCK_EXCLUSIVE) & ~OMPI_OSC_GPUIC_LOCK_SHARED_MASK;
                rc = ompi_osc_gpuic_lock_waiter_failed(module, target, waiter);
                if (rc != OMPI_SUCCESS) {
                    return rc;
                }
                rc = ompi_osc_gpuic_lock_wait_round(module, target, "exclusive", &wait, old,
                                                    &seen);
                if (rc != OMPI_SUCCESS) {
                    return rc;
                }
            } else {
                guess = old; /* no exclusive holder: try again on what is there */
            }
            continue;
        }
        /* Wait for the shared holders to leave; new ones back out on seeing the bit. */
        old = guess;
        rc = ompi_osc_gpuic_lock_drain(module, target, &wait, &old, &drained);
        if (rc == OMPI_SUCCESS && drained) {
            return OMPI_SUCCESS;
        }
        /* Give the claim back (counted as a release); after a failure, that is all. */
        (void)ompi_osc_gpuic_state_fetch(module, target, lock, GPUIC_ATOMIC_ADD,
                                         OMPI_OSC_GPUIC_LOCK_EXCLUSIVE, 0, &old);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        /* Stand back a while, so that shared lockers waiting for the bit get in. */
        rc = ompi_osc_gpuic_lock_waiter_failed(module, target, waiter);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        guess = old + OMPI_OSC_GPUIC_LOCK_EXCLUSIVE;
        seen = ompi_osc_gpuic_lock_signature(guess);
        until = gpuic_context_now_ns() + OMPI_OSC_GPUIC_LOCK_CLAIM_NS;
        while (gpuic_context_now_ns() < until) {
            if (gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx)) != GPUIC_OK) {
                gpuic_log(GPUIC_LOG_ERROR,
                          "exclusive lock on rank %d of window %d: shared holders did not "
                          "leave for %.1f s (osc_gpuic_timeout; a holder may have died); "
                          "giving up",
                          target, module->id, gpuic_context_timeout(ctx));
                return ompi_osc_gpuic_error(GPUIC_ERR_TIMED_OUT);
            }
        }
    }
}

static int ompi_osc_gpuic_lock_exclusive(ompi_osc_gpuic_module_t *module, int target)
{
    ompi_osc_gpuic_lock_waiter_t waiter = OMPI_OSC_GPUIC_LOCK_WAITER_INIT;
    int rc;

    ompi_osc_gpuic_lock_defer(module, target);
    rc = ompi_osc_gpuic_lock_exclusive_loop(module, target, &waiter);
    ompi_osc_gpuic_lock_waiter_done(module, target, &waiter);
    return rc;
}

static int ompi_osc_gpuic_lock_acquire(ompi_osc_gpuic_module_t *module, int target,
                                       int lock_type)
{
    return lock_type == MPI_LOCK_EXCLUSIVE ? ompi_osc_gpuic_lock_exclusive(module, target)
                                           : ompi_osc_gpuic_lock_shared(module, target);
}

static int ompi_osc_gpuic_lock_release(ompi_osc_gpuic_module_t *module, int target,
                                       int lock_type)
{
    /* An exclusive release adds the bit once more: the carry clears it and counts a release. */
    uint64_t delta = lock_type == MPI_LOCK_EXCLUSIVE ? OMPI_OSC_GPUIC_LOCK_EXCLUSIVE
                                                     : (uint64_t)-1;
    int rc;

    /* Everything issued under the lock must be complete at the target before another process
     * can take the lock. */
    rc = ompi_osc_gpuic_peer_flush(module, target);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_state_add(module, target, offsetof(ompi_osc_gpuic_state_t, lock),
                                      delta);
    }
    /* Serve peers' lock attempts on this process now that its lock is free: UCX executes them
     * only when this process progresses, and the flush above progressed it while the lock was
     * still held, so a process taking its own lock in a loop would otherwise starve them. */
    ompi_osc_gpuic_progress_poll();
    return rc;
}

/*
 * no_locks=true lets an implementation assume that no lock or lock_all comes (MPI 3.1 section
 * 11.2.1); gpuic keeps its lock words either way, so such a call is served as on any window.
 * Codes do call MPI_Win_lock_all(MPI_MODE_NOCHECK) on no_locks shared windows, to open the
 * epoch MPI_Win_sync needs, and osc/sm and osc/ucx serve it.  Noted once per window.
 */
static void ompi_osc_gpuic_no_locks_note(ompi_osc_gpuic_module_t *module, const char *call)
{
    if (module->no_locks && !__atomic_exchange_n(&module->no_locks_noted, true,
                                                 __ATOMIC_RELAXED)) {
        gpuic_log(GPUIC_LOG_DEBUG, "%s on window %d, created with no_locks=true: served as usual",
                  call, module->id);
    }
}

static bool ompi_osc_gpuic_rank_valid(const ompi_osc_gpuic_module_t *module, int target)
{
    return target >= 0 && target < ompi_comm_size(module->comm);
}

int ompi_osc_gpuic_lock(int lock_type, int target, int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = OMPI_SUCCESS;

    if (!ompi_osc_gpuic_rank_valid(module, target)) {
        return MPI_ERR_RANK;
    }
    ompi_osc_gpuic_no_locks_note(module, "MPI_Win_lock");
    opal_mutex_lock(&module->lock);
    if (!(module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK || ompi_osc_gpuic_epoch_may_open(module)) ||
        module->peers[target].lock_type != 0 || module->peers[target].lock_pending) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_lock(%d) in a conflicting epoch", target);
        return MPI_ERR_RMA_SYNC;
    }
    if (!(mpi_assert & MPI_MODE_NOCHECK)) {
        /* The wait for the target's lock word runs without the mutex: another thread of this
         * process may meanwhile lock and unlock other targets (MPI 3.1 11.5.3), and a thread
         * holding this window's lock on a third process may be what that process waits for. */
        module->peers[target].lock_pending = true;
        module->locks_pending++;
        opal_mutex_unlock(&module->lock);
        rc = ompi_osc_gpuic_lock_acquire(module, target, lock_type);
        opal_mutex_lock(&module->lock);
        module->peers[target].lock_pending = false;
        module->locks_pending--;
    }
    if (rc == OMPI_SUCCESS) {
        /* Negative: held under MPI_MODE_NOCHECK, nothing was taken at the target. */
        module->peers[target].lock_type = (mpi_assert & MPI_MODE_NOCHECK) ? -lock_type
                                                                           : lock_type;
        module->locks_held++;
        module->epoch = OMPI_OSC_GPUIC_EPOCH_LOCK;
    }
    opal_mutex_unlock(&module->lock);
    return rc;
}

int ompi_osc_gpuic_unlock(int target, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc, lock_type;

    if (!ompi_osc_gpuic_rank_valid(module, target)) {
        return MPI_ERR_RANK;
    }
    opal_mutex_lock(&module->lock);
    lock_type = module->peers[target].lock_type;
    if (module->epoch != OMPI_OSC_GPUIC_EPOCH_LOCK || lock_type == 0) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_unlock(%d) without a matching lock", target);
        return MPI_ERR_RMA_SYNC;
    }
    /* A NOCHECK lock took nothing at the target, so there is nothing to give back; its
     * operations still complete here. */
    if (lock_type > 0) {
        rc = ompi_osc_gpuic_lock_release(module, target, lock_type);
    } else {
        rc = ompi_osc_gpuic_peer_flush(module, target);
    }
    module->peers[target].lock_type = 0;
    if (--module->locks_held == 0) {
        module->epoch = OMPI_OSC_GPUIC_EPOCH_NONE;
    }
    opal_mutex_unlock(&module->lock);
    return ompi_osc_gpuic_sync_result(module, rc);
}

int ompi_osc_gpuic_lock_all(int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int n = ompi_comm_size(module->comm), i, rc = OMPI_SUCCESS;

    ompi_osc_gpuic_no_locks_note(module, "MPI_Win_lock_all");
    opal_mutex_lock(&module->lock);
    if (!ompi_osc_gpuic_epoch_may_open(module) || module->locks_pending > 0) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_lock_all in a conflicting epoch");
        return MPI_ERR_RMA_SYNC;
    }
    if (!(mpi_assert & MPI_MODE_NOCHECK)) {
        for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
            rc = ompi_osc_gpuic_lock_acquire(module, i, MPI_LOCK_SHARED);
        }
        if (rc != OMPI_SUCCESS) {
            /* Give back the locks taken before the failure. */
            while (--i > 0) {
                (void)ompi_osc_gpuic_lock_release(module, i - 1, MPI_LOCK_SHARED);
            }
            opal_mutex_unlock(&module->lock);
            return rc;
        }
        for (i = 0; i < n; ++i) {
            module->peers[i].lock_type = MPI_LOCK_SHARED;
        }
    }
    module->epoch = OMPI_OSC_GPUIC_EPOCH_LOCK_ALL;
    opal_mutex_unlock(&module->lock);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_unlock_all(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int n = ompi_comm_size(module->comm), i, rc = OMPI_SUCCESS, rc_i;

    opal_mutex_lock(&module->lock);
    if (module->epoch != OMPI_OSC_GPUIC_EPOCH_LOCK_ALL) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_unlock_all without MPI_Win_lock_all");
        return MPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_gpuic_module_flush(module);
    for (i = 0; i < n; ++i) {
        if (module->peers[i].lock_type != 0) {
            rc_i = ompi_osc_gpuic_lock_release(module, i, MPI_LOCK_SHARED);
            rc = rc == OMPI_SUCCESS ? rc_i : rc; /* keep the first error */
            module->peers[i].lock_type = 0;
        }
    }
    module->epoch = OMPI_OSC_GPUIC_EPOCH_NONE;
    opal_mutex_unlock(&module->lock);
    return ompi_osc_gpuic_sync_result(module, rc);
}

int ompi_osc_gpuic_sync(struct ompi_win_t *win)
{
    /* The window is in the unified model: a full memory barrier orders this process's direct
     * loads and stores against everything else.  Programs poll with it: peers' messages are
     * served too, and this process's gathered puts move. */
    ompi_osc_gpuic_cma_pend_settle(true);
    opal_atomic_mb();
    ompi_osc_gpuic_progress_poll();
    return OMPI_SUCCESS;
}

/* A flush needs a passive epoch that covers its target. */
static int ompi_osc_gpuic_check_flush(ompi_osc_gpuic_module_t *module, int target)
{
    if (!ompi_osc_gpuic_rank_valid(module, target)) {
        return MPI_ERR_RANK;
    }
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL ||
        (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK && module->peers[target].lock_type != 0)) {
        return OMPI_SUCCESS;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "flush outside a passive-target epoch for target %d", target);
    return MPI_ERR_RMA_SYNC;
}

/* flush_all needs any passive epoch. */
static int ompi_osc_gpuic_check_flush_all(ompi_osc_gpuic_module_t *module)
{
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK) {
        return OMPI_SUCCESS;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "flush_all outside a passive-target epoch");
    return MPI_ERR_RMA_SYNC;
}

int ompi_osc_gpuic_flush(int target, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_flush(module, target);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_sync_result(module, ompi_osc_gpuic_peer_flush(module, target));
}

int ompi_osc_gpuic_flush_all(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_flush_all(module);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_sync_result(module, ompi_osc_gpuic_module_flush(module));
}

int ompi_osc_gpuic_flush_local(int target, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = ompi_osc_gpuic_check_flush(module, target);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* gathered puts are complete locally once staged, but a program that calls this after a
     * put (OpenSHMEM's shmem_p over MPI) expects it on its way */
    ompi_osc_gpuic_cma_pend_settle(true);
    return ompi_osc_gpuic_sync_result(module, ompi_osc_gpuic_peer_flush_local(module, target));
}

int ompi_osc_gpuic_flush_local_all(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int n = ompi_comm_size(module->comm), i, rc = ompi_osc_gpuic_check_flush_all(module);

    if (rc == OMPI_SUCCESS) {
        ompi_osc_gpuic_cma_pend_settle(true); /* as ompi_osc_gpuic_flush_local() */
    }
    for (i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        rc = ompi_osc_gpuic_peer_flush_local(module, i);
    }
    return ompi_osc_gpuic_sync_result(module, rc);
}
