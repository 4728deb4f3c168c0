/*
 * Stream-triggered epochs (MPIX_Win_fence_enqueue, _lock_all/_unlock_all, _post/_start/
 * _complete/_wait): checked and recorded in enqueue order under the window's stream lock, and
 * launched under it too, so that two threads cannot launch one window's epoch calls out of
 * order.  The kernels (osc_gpuic_stream_kernels.cu) count in the window's sync blocks
 * (mpix_gpuic_stream_layout.h), so a captured graph may replay an epoch any number of times.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

static int ompi_osc_gpuic_stream_check_assert(int mpi_assert, int allowed)
{
    return (mpi_assert & ~allowed) == 0 ? MPI_SUCCESS : MPI_ERR_ASSERT;
}

/* The arguments every synchronization kernel takes, with an empty group. */
static void ompi_osc_gpuic_stream_sync_args(const ompi_osc_gpuic_stream_state_t *st,
                                            mpix_gpuic_stream_sync_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->win = st->win_value;
    a->sync = st->sync_value;
    a->own = st->block;
    a->blocks_dev = st->blocks_dev;
    a->target = -1;
    a->nranks = st->nranks;
    a->rank = st->rank;
    a->flags = st->sync_flags;
    for (int r = 0; r < st->nranks && r < MPIX_GPUIC_STREAM_INLINE_BLOCKS; ++r) {
        a->blocks[r] = st->peers[r].block;
    }
}

/* Launches synchronization kernel @p kernel with one thread per rank (up to 256). */
static int ompi_osc_gpuic_stream_sync_launch(const ompi_osc_gpuic_stream_state_t *st, int kernel,
                                             void *stream, mpix_gpuic_stream_sync_args_t *a)
{
    return ompi_osc_gpuic_stream_launch(kernel, 1, ompi_osc_gpuic_stream_sync_threads(st->nranks),
                                        stream, a);
}

/* Fills @p bits with the window ranks of @p group, each one sync-reachable. */
static int ompi_osc_gpuic_stream_group_bits(ompi_osc_gpuic_module_t *module,
                                            const ompi_osc_gpuic_stream_state_t *st,
                                            struct ompi_group_t *group, uint64_t *bits)
{
    int *ranks = NULL, n = 0, i, rc;

    memset(bits, 0, MPIX_GPUIC_STREAM_GROUP_WORDS * sizeof(uint64_t));
    if (group == NULL || group == MPI_GROUP_NULL) {
        return MPI_ERR_GROUP;
    }
    rc = ompi_osc_gpuic_group_ranks(module, group, &ranks, &n);
    for (i = 0; rc == MPI_SUCCESS && i < n; ++i) {
        if (ranks[i] >= MPIX_GPUIC_STREAM_GROUP_MAX) {
            rc = MPI_ERR_UNSUPPORTED_OPERATION;
        } else {
            rc = ompi_osc_gpuic_stream_check_reach(st, ranks[i], OMPI_OSC_GPUIC_STREAM_REACH_SYNC);
            bits[ranks[i] / 64] |= 1ull << (ranks[i] % 64);
        }
    }
    free(ranks);
    return rc;
}

/*
 * What every epoch call begins with: the window's stream state, @p mpi_assert checked against
 * @p allowed, the synchronization kernels' arguments in @p a, and with @p grouped the ranks of
 * @p group in a->group.
 */
static int ompi_osc_gpuic_stream_epoch_begin(struct ompi_win_t *win, int mpi_assert, int allowed,
                                             bool grouped, struct ompi_group_t *group,
                                             ompi_osc_gpuic_stream_state_t **st_p,
                                             mpix_gpuic_stream_sync_args_t *a)
{
    ompi_osc_gpuic_module_t *module;
    int rc = ompi_osc_gpuic_stream_state_get(win, &module, st_p);

    if (rc == MPI_SUCCESS) {
        rc = ompi_osc_gpuic_stream_check_assert(mpi_assert, allowed);
    }
    if (rc == MPI_SUCCESS) {
        ompi_osc_gpuic_stream_sync_args(*st_p, a);
        if (grouped) {
            rc = ompi_osc_gpuic_stream_group_bits(module, *st_p, group, a->group);
        }
    }
    return rc;
}

/*
 * Opens access epoch @p next (fence, lock_all, start) with kernel @p kernel when no epoch but a
 * fence one is open, recording a->group as the epoch's group when @p record (the closing call
 * gives back what the opening one took).  MPI_ERR_RMA_SYNC when another epoch is open.
 */
static int ompi_osc_gpuic_stream_epoch_open(ompi_osc_gpuic_stream_state_t *st, int kernel,
                                            void *stream, mpix_gpuic_stream_sync_args_t *a,
                                            ompi_osc_gpuic_stream_epoch_t next, bool record)
{
    int rc;

    pthread_mutex_lock(&st->lock);
    rc = st->epoch == OMPI_OSC_GPUIC_STREAM_EPOCH_NONE ||
                 st->epoch == OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE
             ? ompi_osc_gpuic_stream_sync_launch(st, kernel, stream, a)
             : MPI_ERR_RMA_SYNC;
    if (rc == MPI_SUCCESS) {
        st->epoch = next;
        if (record) {
            memcpy(st->start_group, a->group, sizeof(a->group));
        }
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int ompi_osc_gpuic_stream_fence(int mpi_assert, struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_sync_args_t a;
    int rc, i;

    rc = ompi_osc_gpuic_stream_epoch_begin(win, mpi_assert,
                                           MPI_MODE_NOSTORE | MPI_MODE_NOPUT |
                                               MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED,
                                           false, NULL, &st, &a);
    for (i = 0; rc == MPI_SUCCESS && i < st->nranks; ++i) {
        rc = ompi_osc_gpuic_stream_check_reach(st, i, OMPI_OSC_GPUIC_STREAM_REACH_SYNC);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_stream_epoch_open(st, MPIX_GPUIC_K_FENCE, stream, &a,
                                            (mpi_assert & MPI_MODE_NOSUCCEED)
                                                ? OMPI_OSC_GPUIC_STREAM_EPOCH_NONE
                                                : OMPI_OSC_GPUIC_STREAM_EPOCH_FENCE,
                                            false);
}

int ompi_osc_gpuic_stream_lock_all(int mpi_assert, struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_sync_args_t a;
    int rc, i;

    rc = ompi_osc_gpuic_stream_epoch_begin(win, mpi_assert, MPI_MODE_NOCHECK, false, NULL, &st,
                                           &a);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Shared access to every target the lock words can be reached for; unlock_all gives
     * these back. */
    for (i = 0; i < st->nranks && i < MPIX_GPUIC_STREAM_GROUP_MAX; ++i) {
        if (ompi_osc_gpuic_stream_check_reach(st, i, OMPI_OSC_GPUIC_STREAM_REACH_SYNC) ==
            MPI_SUCCESS) {
            a.group[i / 64] |= 1ull << (i % 64);
        }
    }
    return ompi_osc_gpuic_stream_epoch_open(st, MPIX_GPUIC_K_LOCK_ALL, stream, &a,
                                            OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL, true);
}

int ompi_osc_gpuic_stream_start(struct ompi_group_t *group, int mpi_assert,
                                struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_sync_args_t a;
    int rc = ompi_osc_gpuic_stream_epoch_begin(win, mpi_assert, MPI_MODE_NOCHECK, true, group,
                                               &st, &a);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_stream_epoch_open(st, MPIX_GPUIC_K_START, stream, &a,
                                            OMPI_OSC_GPUIC_STREAM_EPOCH_START, true);
}

/*
 * Ends an epoch with kernel @p kernel, which gives back what the opening call took for the
 * group it recorded: with @p exposure the exposure epoch post opened (wait), else the access
 * epoch @p open (lock_all or start: unlock_all, complete).  MPI_ERR_RMA_SYNC when that epoch
 * is not open.
 */
static int ompi_osc_gpuic_stream_epoch_close(struct ompi_win_t *win, void *stream,
                                             bool exposure, ompi_osc_gpuic_stream_epoch_t open,
                                             int kernel)
{
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_sync_args_t a;
    int rc = ompi_osc_gpuic_stream_epoch_begin(win, 0, 0, false, NULL, &st, &a);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    if (exposure ? !st->exposed : st->epoch != open) {
        rc = MPI_ERR_RMA_SYNC;
    } else {
        memcpy(a.group, exposure ? st->post_group : st->start_group, sizeof(a.group));
        rc = ompi_osc_gpuic_stream_sync_launch(st, kernel, stream, &a);
    }
    if (rc == MPI_SUCCESS && exposure) {
        st->exposed = false;
    } else if (rc == MPI_SUCCESS) {
        st->epoch = OMPI_OSC_GPUIC_STREAM_EPOCH_NONE;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int ompi_osc_gpuic_stream_unlock_all(struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_epoch_close(win, stream, false,
                                             OMPI_OSC_GPUIC_STREAM_EPOCH_LOCK_ALL,
                                             MPIX_GPUIC_K_UNLOCK_ALL);
}

int ompi_osc_gpuic_stream_complete(struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_epoch_close(win, stream, false,
                                             OMPI_OSC_GPUIC_STREAM_EPOCH_START,
                                             MPIX_GPUIC_K_COMPLETE);
}

/* The exposure epoch: post opens it (one at a time), wait closes it with post's group. */
int ompi_osc_gpuic_stream_post(struct ompi_group_t *group, int mpi_assert,
                               struct ompi_win_t *win, void *stream)
{
    ompi_osc_gpuic_stream_state_t *st;
    mpix_gpuic_stream_sync_args_t a;
    int rc = ompi_osc_gpuic_stream_epoch_begin(win, mpi_assert,
                                               MPI_MODE_NOCHECK | MPI_MODE_NOSTORE |
                                                   MPI_MODE_NOPUT,
                                               true, group, &st, &a);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&st->lock);
    rc = st->exposed ? MPI_ERR_RMA_SYNC
                     : ompi_osc_gpuic_stream_sync_launch(st, MPIX_GPUIC_K_POST, stream, &a);
    if (rc == MPI_SUCCESS) {
        st->exposed = true;
        memcpy(st->post_group, a.group, sizeof(a.group));
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int ompi_osc_gpuic_stream_wait(struct ompi_win_t *win, void *stream)
{
    return ompi_osc_gpuic_stream_epoch_close(win, stream, true, OMPI_OSC_GPUIC_STREAM_EPOCH_NONE,
                                             MPIX_GPUIC_K_WAIT);
}

/* The table libmpix_gpuic forwards the MPIX_*_enqueue calls through (osc_gpuic_ext.h). */
static const ompi_osc_gpuic_stream_ops_t ompi_osc_gpuic_stream_table = {
    .put = ompi_osc_gpuic_stream_put,
    .get = ompi_osc_gpuic_stream_get,
    .accumulate = ompi_osc_gpuic_stream_accumulate,
    .fetch_and_op = ompi_osc_gpuic_stream_fetch_and_op,
    .compare_and_swap = ompi_osc_gpuic_stream_compare_and_swap,
    .flush = ompi_osc_gpuic_stream_flush,
    .flush_all = ompi_osc_gpuic_stream_flush_all,
    .flush_local = ompi_osc_gpuic_stream_flush_local,
    .fence = ompi_osc_gpuic_stream_fence,
    .lock_all = ompi_osc_gpuic_stream_lock_all,
    .unlock_all = ompi_osc_gpuic_stream_unlock_all,
    .post = ompi_osc_gpuic_stream_post,
    .start = ompi_osc_gpuic_stream_start,
    .complete = ompi_osc_gpuic_stream_complete,
    .wait = ompi_osc_gpuic_stream_wait,
};

const ompi_osc_gpuic_stream_ops_t *const ompi_osc_gpuic_stream_ops = &ompi_osc_gpuic_stream_table;

#else /* !OMPI_OSC_GPUIC_HAVE_STREAM: built without CUDA headers or nvcc */

const ompi_osc_gpuic_stream_ops_t *const ompi_osc_gpuic_stream_ops = NULL;

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */
