/*
 * Active-target synchronization: fence, and post/start/complete/wait/test.
 *
 * General active target uses two counters per pair of processes in each state block:
 * MPI_Win_post adds one to the counter each origin keeps for this target, MPI_Win_start waits
 * for it; MPI_Win_complete flushes, then adds one to the counter each target keeps for this
 * origin, and MPI_Win_wait waits for those.  Counting per peer (not per epoch) keeps a post for
 * a later epoch from being taken for a different group's start.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "mpi.h"
#include "opal/sys/atomic.h"
#include "ompi/group/group.h"

#include "osc_gpuic.h"

int ompi_osc_gpuic_group_ranks(ompi_osc_gpuic_module_t *module, struct ompi_group_t *group,
                               int **ranks_p, int *n_p)
{
    int n = ompi_group_size(group), i, rc;
    int *in = calloc(n > 0 ? n : 1, sizeof(int)), *out = calloc(n > 0 ? n : 1, sizeof(int));

    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < n; ++i) {
        in[i] = i;
    }
    rc = ompi_group_translate_ranks(group, n, in, module->comm->c_local_group, out);
    free(in);
    for (i = 0; rc == OMPI_SUCCESS && i < n; ++i) {
        if (out[i] == MPI_UNDEFINED) {
            rc = MPI_ERR_GROUP;
        }
    }
    if (rc != OMPI_SUCCESS) {
        free(out);
        return rc == MPI_ERR_GROUP ? rc : MPI_ERR_GROUP;
    }
    *ranks_p = out;
    *n_p = n;
    return OMPI_SUCCESS;
}

/* Waits until the counter at @p offset of our state block exceeds *seen, then consumes one.
 * @p what and @p peer name the wait in the log line of a timeout. */
static int ompi_osc_gpuic_wait_counter(ompi_osc_gpuic_module_t *module, size_t offset,
                                       uint64_t *seen, const char *what, int peer)
{
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    gpuic_status_t status;

    while (ompi_osc_gpuic_state_read_local(module, offset) <= *seen) {
        /* Peers' UCX atomics may need our progress (software-emulated atomics). */
        status = gpuic_context_wait_round(ctx, &wait, gpuic_context_progress(ctx));
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR,
                      "%s on window %d: rank %d did not signal within %.1f s "
                      "(osc_gpuic_timeout); giving up",
                      what, module->id, peer, gpuic_context_timeout(ctx));
            return ompi_osc_gpuic_error(status);
        }
    }
    (*seen)++;
    return OMPI_SUCCESS;
}

/*
 * Waits until word @p word of our state block counts this fence.  Silence is what times out,
 * and a peer that is still completing its transfers, or waiting on one that is, is not silent:
 * once our own progress stops, each round reads the awaited peer's fence_beat, and a move
 * counts as progress (which moves ours in turn, for whoever waits on us).
 */
static int ompi_osc_gpuic_fence_wait(ompi_osc_gpuic_module_t *module, size_t word, int from)
{
    const size_t beat_off = offsetof(ompi_osc_gpuic_state_t, fence_beat);
    gpuic_context_t *ctx = mca_osc_gpuic_component.ctx;
    gpuic_wait_t wait = GPUIC_WAIT_INIT;
    uint64_t beat = 0, last = 0;
    bool known = false;
    gpuic_status_t status;
    unsigned progressed;
    int rc;

    while (ompi_osc_gpuic_state_read_local(module, word) <= module->fences) {
        progressed = gpuic_context_progress(ctx);
        if (!progressed && wait.quiet_since_ns != 0) {
            rc = ompi_osc_gpuic_state_fetch(module, from, beat_off, GPUIC_ATOMIC_ADD, 0, 0,
                                            &beat);
            if (rc != OMPI_SUCCESS) {
                return rc;
            }
            progressed = known && beat != last;
            last = beat;
            known = true;
        }
        status = gpuic_context_wait_round(ctx, &wait, progressed);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR,
                      "MPI_Win_fence on window %d: rank %d did not signal, nor show progress, "
                      "within %.1f s (osc_gpuic_timeout); giving up",
                      module->id, from, gpuic_context_timeout(ctx));
            return ompi_osc_gpuic_error(status);
        }
    }
    return OMPI_SUCCESS;
}

/*
 * MPI_Win_fence's barrier, over the state blocks (a dissemination barrier): in round k this
 * process adds one to word k of rank (me + 2^k) mod n's block, then waits for its own word k
 * to count this fence.  Each wait is bounded by osc_gpuic_timeout like the other waits, so a
 * dead peer makes the survivors' fence fail instead of hanging (the communicator's barrier
 * has no bound).
 */
static int ompi_osc_gpuic_fence_barrier(ompi_osc_gpuic_module_t *module)
{
    int n = ompi_comm_size(module->comm), me = ompi_comm_rank(module->comm), k, rc;
    size_t word;

    for (k = 0; k < OMPI_OSC_GPUIC_FENCE_ROUNDS && ((int64_t)1 << k) < n; ++k) {
        int dist = 1 << k;

        word = offsetof(ompi_osc_gpuic_state_t, fence) + (size_t)k * sizeof(uint64_t);
        rc = ompi_osc_gpuic_state_add(module, (me + dist) % n, word, 1);
        if (rc == OMPI_SUCCESS) {
            rc = ompi_osc_gpuic_fence_wait(module, word, (me + n - dist) % n);
        }
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    module->fences++;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_fence(int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc = OMPI_SUCCESS;

    opal_mutex_lock(&module->lock);
    if (module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_LOCK_ALL ||
        module->epoch == OMPI_OSC_GPUIC_EPOCH_START || module->post_n >= 0 ||
        module->start_pending || module->locks_pending > 0) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_fence inside another epoch");
        return MPI_ERR_RMA_SYNC;
    }
    /* Complete our operations at their targets, then wait until every process has done the
     * same, so that after the fence each window holds everything put into it.  Meanwhile the
     * peers waiting on us in the barrier see our waits progress. */
    gpuic_context_beat_set(&module->state->fence_beat);
    if (!(mpi_assert & MPI_MODE_NOPRECEDE)) {
        rc = ompi_osc_gpuic_module_flush(module);
    }
    /* Direct stores through same-node mappings are ordered before the barrier's signals. */
    opal_atomic_mb();
    if (rc == OMPI_SUCCESS) {
        rc = ompi_osc_gpuic_fence_barrier(module);
    }
    gpuic_context_beat_set(NULL);
    /* The other processes' stores before their fence are seen by our loads after it. */
    opal_atomic_mb();
    module->epoch = (mpi_assert & MPI_MODE_NOSUCCEED) ? OMPI_OSC_GPUIC_EPOCH_NONE
                                                      : OMPI_OSC_GPUIC_EPOCH_FENCE;
    module->ops_since_fence = 0;
    opal_mutex_unlock(&module->lock);
    return ompi_osc_gpuic_sync_result(module, rc);
}

int ompi_osc_gpuic_start(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int *ranks, n, i, rc;

    opal_mutex_lock(&module->lock);
    if (!ompi_osc_gpuic_epoch_may_open(module) || module->locks_pending > 0) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_start in a conflicting epoch");
        return MPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_gpuic_group_ranks(module, group, &ranks, &n);
    if (rc != OMPI_SUCCESS) {
        opal_mutex_unlock(&module->lock);
        return rc;
    }
    /* Each target's MPI_Win_post adds one to our counter for it; NOCHECK says it has.  The
     * wait runs without the mutex, so that another thread's exposure epoch on this window
     * (MPI_Win_post, MPI_Win_wait) goes on meanwhile: it may be what the targets wait for. */
    module->start_pending = true;
    opal_mutex_unlock(&module->lock);
    for (i = 0; i < n && !(mpi_assert & MPI_MODE_NOCHECK); ++i) {
        rc = ompi_osc_gpuic_wait_counter(module, ompi_osc_gpuic_state_post_offset(ranks[i]),
                                         &module->posts_seen[ranks[i]],
                                         "MPI_Win_start (waiting for MPI_Win_post)", ranks[i]);
        if (rc != OMPI_SUCCESS) {
            break;
        }
    }
    opal_mutex_lock(&module->lock);
    module->start_pending = false;
    if (rc != OMPI_SUCCESS) {
        /* No access epoch opened; posts already consumed stay consumed. */
        free(ranks);
        opal_mutex_unlock(&module->lock);
        return rc;
    }
    for (i = 0; i < n; ++i) {
        module->start_member[ranks[i]] = 1;
    }
    module->start_ranks = ranks;
    module->start_n = n;
    module->epoch = OMPI_OSC_GPUIC_EPOCH_START;
    opal_mutex_unlock(&module->lock);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_complete(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int me = ompi_comm_rank(module->comm), i, rc, rc_i;

    opal_mutex_lock(&module->lock);
    if (module->epoch != OMPI_OSC_GPUIC_EPOCH_START) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_complete without MPI_Win_start");
        return MPI_ERR_RMA_SYNC;
    }
    /* Our operations land before the targets learn that we are done. */
    rc = ompi_osc_gpuic_module_flush(module);
    for (i = 0; i < module->start_n; ++i) {
        rc_i = ompi_osc_gpuic_state_add(module, module->start_ranks[i],
                                        ompi_osc_gpuic_state_complete_offset(me), 1);
        rc = rc == OMPI_SUCCESS ? rc_i : rc;
        module->start_member[module->start_ranks[i]] = 0;
    }
    free(module->start_ranks);
    module->start_ranks = NULL;
    module->start_n = 0;
    module->epoch = OMPI_OSC_GPUIC_EPOCH_NONE;
    opal_mutex_unlock(&module->lock);
    return ompi_osc_gpuic_sync_result(module, rc);
}

int ompi_osc_gpuic_post(struct ompi_group_t *group, int mpi_assert, struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int me = ompi_comm_rank(module->comm), *ranks, n, i, rc, rc_i = OMPI_SUCCESS;

    opal_mutex_lock(&module->lock);
    if (module->post_n >= 0) {
        opal_mutex_unlock(&module->lock);
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_post inside an exposure epoch");
        return MPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_gpuic_group_ranks(module, group, &ranks, &n);
    if (rc != OMPI_SUCCESS) {
        opal_mutex_unlock(&module->lock);
        return rc;
    }
    /* Local stores to the window before the post are visible to the origins' accesses. */
    opal_atomic_mb();
    for (i = 0; i < n && !(mpi_assert & MPI_MODE_NOCHECK); ++i) {
        rc_i = ompi_osc_gpuic_state_add(module, ranks[i], ompi_osc_gpuic_state_post_offset(me),
                                        1);
        rc = rc == OMPI_SUCCESS ? rc_i : rc;
    }
    module->post_ranks = ranks;
    module->post_n = n;
    opal_mutex_unlock(&module->lock);
    return rc;
}

/* Consumes one complete from every origin of the exposure group if all have arrived (or,
 * when @p block, once they have).  Called with the mutex held; a blocking call releases it
 * while it waits. */
static int ompi_osc_gpuic_exposure_end(ompi_osc_gpuic_module_t *module, bool block, int *flag)
{
    int i, rc = OMPI_SUCCESS;

    if (module->post_n < 0 || module->wait_pending) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_wait/test without MPI_Win_post");
        return MPI_ERR_RMA_SYNC;
    }
    if (!block) {
        gpuic_context_progress(mca_osc_gpuic_component.ctx);
        for (i = 0; i < module->post_n; ++i) {
            int o = module->post_ranks[i];

            if (ompi_osc_gpuic_state_read_local(module,
                                                ompi_osc_gpuic_state_complete_offset(o)) <=
                module->completes_seen[o]) {
                *flag = 0;
                return OMPI_SUCCESS;
            }
        }
    }
    /* The wait runs without the mutex, so that another thread's access epoch on this window
     * (MPI_Win_start, MPI_Win_complete) goes on meanwhile: it may be what the origins wait
     * for.  wait_pending keeps the exposure epoch this call's. */
    module->wait_pending = true;
    opal_mutex_unlock(&module->lock);
    for (i = 0; i < module->post_n && rc == OMPI_SUCCESS; ++i) {
        int o = module->post_ranks[i];

        rc = ompi_osc_gpuic_wait_counter(module, ompi_osc_gpuic_state_complete_offset(o),
                                         &module->completes_seen[o],
                                         "MPI_Win_wait (waiting for MPI_Win_complete)", o);
    }
    opal_mutex_lock(&module->lock);
    module->wait_pending = false;
    /* A timed-out wait ends the exposure epoch too: the missing origin is presumed gone, and
     * the window can still be used with the others (or freed). */
    free(module->post_ranks);
    module->post_ranks = NULL;
    module->post_n = -1;
    /* The origins' data is in the window: order our later loads after their arrival. */
    opal_atomic_mb();
    *flag = 1;
    return rc;
}

int ompi_osc_gpuic_wait(struct ompi_win_t *win)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int flag, rc;

    opal_mutex_lock(&module->lock);
    rc = ompi_osc_gpuic_exposure_end(module, true, &flag);
    opal_mutex_unlock(&module->lock);
    return ompi_osc_gpuic_sync_result(module, rc);
}

int ompi_osc_gpuic_test(struct ompi_win_t *win, int *flag)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int rc;

    opal_mutex_lock(&module->lock);
    rc = ompi_osc_gpuic_exposure_end(module, false, flag);
    opal_mutex_unlock(&module->lock);
    return rc == OMPI_SUCCESS && *flag ? ompi_osc_gpuic_sync_result(module, rc) : rc;
}
