/*
 * osc_bench: latency and bandwidth of MPI one-sided communication between two ranks, served by
 * whichever osc component the run selects (mpirun --mca osc NAME).  Plain MPI-3 only, so that
 * the same binary measures every component the same way.
 *
 * Output, from rank 0, one CSV row per measurement:
 *     component,op,sync,size,metric,value,note
 * metric is latency_us (lower is better) or bandwidth_MBps (MB = 10^6 bytes, higher is better).
 * value is NA when the operation could not be measured; note then says why ("unsupported ...",
 * "error ...", "wrong_result").  Comment lines "# begin op sync size" / "# end ..." bracket each
 * measurement so that a driver can tell which one a crashed run was in.
 *
 * Every measurement is preceded by one guarded try: the operation runs once with
 * MPI_ERRORS_RETURN and its effect is checked (a put lands, a get returns the target's data,
 * an atomic returns and leaves the right values).  A failing or wrong operation is reported and
 * skipped; the benchmark never stops because a component lacks something.
 *
 *   mpirun -np 2 --mca osc NAME osc_bench [--ops LIST] [--sync LIST] [--min SIZE] [--max SIZE]
 *                                           [--iters N] [--window N] [--budget SECONDS]
 *                                           [--flavor allocate|create] [--label NAME] [--quick]
 *                                           [--patterns LIST]
 *
 * --patterns runs communication patterns instead (and the operations above only when --ops is
 * given too), on 2 or more ranks: put/get/fetch_and_op + flush, accumulates of up to 4 MiB,
 * fetch_and_op throughput on one counter, PSCW rounds, and many-target gets and puts.  Their
 * rows have metrics p50_us, p99_us, max_us (per iteration; a sample times a group of
 * iterations lasting about 2 us, divided by the group) and, for fop_rate, throughput_Mops; the
 * sync column reads SYNC/FLAVOR/npRANKS.  Each is checked on known data before and after the
 * timing.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define BENCH_ATOMIC_SIZE 8 /* atomics are measured on one 8-byte element only */

enum bench_kind {
    KIND_LATENCY,  /* rank 0 issues one operation per synchronization */
    KIND_BANDWIDTH, /* rank 0 issues a window of operations per synchronization */
    KIND_BIBW,     /* both ranks do, towards each other, at the same time */
};

enum bench_rma {
    RMA_PUT,
    RMA_GET,
    RMA_ACCUMULATE,
    RMA_GET_ACCUMULATE,
    RMA_FETCH_AND_OP,
    RMA_COMPARE_AND_SWAP,
};

struct bench_op {
    const char *name;
    enum bench_rma rma;
    enum bench_kind kind;
    bool atomic; /* measured at BENCH_ATOMIC_SIZE only */
};

static const struct bench_op bench_ops[] = {
    {"put", RMA_PUT, KIND_LATENCY, false},
    {"get", RMA_GET, KIND_LATENCY, false},
    {"accumulate", RMA_ACCUMULATE, KIND_LATENCY, true},
    {"get_accumulate", RMA_GET_ACCUMULATE, KIND_LATENCY, true},
    {"fetch_and_op", RMA_FETCH_AND_OP, KIND_LATENCY, true},
    {"compare_and_swap", RMA_COMPARE_AND_SWAP, KIND_LATENCY, true},
    {"put_bw", RMA_PUT, KIND_BANDWIDTH, false},
    {"get_bw", RMA_GET, KIND_BANDWIDTH, false},
    {"put_bibw", RMA_PUT, KIND_BIBW, false},
    {"get_bibw", RMA_GET, KIND_BIBW, false},
};
#define BENCH_NUM_OPS (int)(sizeof(bench_ops) / sizeof(bench_ops[0]))

/* Patterns: per-iteration timing (p50, p99, max) over any number of ranks, one window per
 * pattern and flavor, one lock_all epoch (or PSCW rounds) for the whole measurement.  Every rank
 * is an origin unless the pattern says otherwise; "right" is rank + 1, "left" rank - 1 (mod n). */
enum bench_pat {
    PAT_PUT_FLUSH,  /* put to right, flush(right) */
    PAT_GET_FLUSH,  /* get from right, flush(right) */
    PAT_FOP_FLUSH,  /* fetch_and_op MPI_SUM int64 on right, flush(right) */
    PAT_ACC,        /* accumulate MPI_SUM MPI_DOUBLE to right, flush(right) */
    PAT_GACC,       /* get_accumulate MPI_SUM MPI_DOUBLE on right, flush(right) */
    PAT_FOP_RATE,   /* every rank: fetch_and_op on rank 0's word, flush(0); throughput too */
    PAT_PSCW_ROUND, /* post(left)/start(right)/put/complete/wait */
    PAT_GET_ALL,    /* get from every rank (itself too), flush_all */
    PAT_GET_NBR,    /* get from left and right, flush_all */
    PAT_GET_ONE_ALL, /* rank 0 alone gets from every rank, flush_all */
    PAT_PUT_ALL,    /* put to every rank (itself too), flush_all */
    PAT_PUT_BIDIR,  /* put to right while right puts here, flush(right) */
    PAT_LOCK_PUT,   /* rank 0 alone: lock(exclusive, 1)/put/unlock */
    PAT_COUNT
};

struct bench_pattern {
    const char *name;
    size_t sizes[5]; /* default sizes, 0-terminated */
};

static const struct bench_pattern bench_patterns[PAT_COUNT] = {
    [PAT_PUT_FLUSH] = {"put_flush", {8}},
    [PAT_GET_FLUSH] = {"get_flush", {8}},
    [PAT_FOP_FLUSH] = {"fop_flush", {8}},
    [PAT_ACC] = {"acc_sum", {8, 65536, 1 << 20, 4 << 20}},
    [PAT_GACC] = {"gacc_sum", {8, 65536, 1 << 20, 4 << 20}},
    [PAT_FOP_RATE] = {"fop_rate", {8}},
    [PAT_PSCW_ROUND] = {"pscw_round", {8}},
    [PAT_GET_ALL] = {"get_all", {8, 1 << 20}},
    [PAT_GET_NBR] = {"get_nbr", {8, 1 << 20}},
    [PAT_GET_ONE_ALL] = {"get_one_all", {8, 1 << 20}},
    [PAT_PUT_ALL] = {"put_all", {8, 1 << 20}},
    [PAT_PUT_BIDIR] = {"put_bidir", {8, 1 << 20}},
    [PAT_LOCK_PUT] = {"lock_put_unlock", {8, 1 << 20}},
};

enum bench_sync {
    SYNC_FENCE,    /* MPI_Win_fence before and after each batch */
    SYNC_LOCK,     /* MPI_Win_lock(SHARED) / MPI_Win_unlock around each batch */
    SYNC_LOCK_ALL, /* one MPI_Win_lock_all for the whole measurement, MPI_Win_flush per batch */
    SYNC_PSCW,     /* MPI_Win_post/start/complete/wait around each batch */
    SYNC_COUNT
};

static const char *const bench_sync_names[SYNC_COUNT] = {"fence", "lock", "lock_all", "pscw"};

struct bench_options {
    bool ops[BENCH_NUM_OPS];
    bool syncs[SYNC_COUNT];
    size_t min_size, max_size;
    long iters;        /* batches per timed repetition; 0: fit to budget_s */
    int window;        /* operations per synchronization in the bandwidth tests */
    double budget_s;   /* seconds of timed loops per measurement, roughly */
    bool quick;        /* fewer sizes and iterations */
    bool use_create;   /* MPI_Win_create on malloc'ed memory instead of MPI_Win_allocate */
    char label[64];    /* component column; empty: taken from the window's name */
    bool ops_given;    /* --ops was on the command line */
    bool patterns[PAT_COUNT];
    size_t psizes[9]; /* --psizes: sizes for every pattern instead of its own, 0-terminated */
    bool any_pattern;  /* --patterns selected some: the classic ops run only with --ops */
};

/* Which side of the communication this rank plays in one measurement. */
struct bench_role {
    bool origin;
    bool target;
};

struct bench {
    struct bench_options opt;
    int rank, peer;
    MPI_Group peer_group;
    size_t win_size;
    MPI_Win win;
    unsigned char *win_base;
    unsigned char *origin_buf; /* source of puts and accumulates */
    unsigned char *result_buf; /* destination of gets and fetching atomics */
    unsigned char *win_memory; /* our allocation behind win_base for --flavor create */
};

/* Errors of one guarded try, kept apart because a failed epoch call leaves the window unusable
 * while a failed operation inside a good epoch does not. */
struct bench_try {
    int epoch_rc;
    int op_rc;
    bool opened; /* some epoch call succeeded on this rank */
};

/* ---------------------------------------------------------------------------------------- */
/* Reporting                                                                                  */

static const char *bench_component(const struct bench *b)
{
    return b->opt.label;
}

static const char *bench_metric(const struct bench_op *op)
{
    return op->kind == KIND_LATENCY ? "latency_us" : "bandwidth_MBps";
}

static void bench_emit_value(const struct bench *b, const struct bench_op *op,
                             enum bench_sync sync, size_t size, double value)
{
    if (b->rank == 0) {
        printf("%s,%s,%s,%zu,%s,%.3f,\n", bench_component(b), op->name, bench_sync_names[sync],
               size, bench_metric(op), value);
        fflush(stdout);
    }
}

static void bench_emit_na(const struct bench *b, const struct bench_op *op, enum bench_sync sync,
                          size_t size, const char *note)
{
    if (b->rank == 0) {
        printf("%s,%s,%s,%zu,%s,NA,%s\n", bench_component(b), op->name, bench_sync_names[sync],
               size, bench_metric(op), note);
        fflush(stdout);
    }
}

/* The driver script keys crash detection on these lines, so they go to stdout, flushed, before
 * the measurement can crash. */
static void bench_mark(const struct bench *b, const char *what, const struct bench_op *op,
                       enum bench_sync sync, size_t size)
{
    if (b->rank == 0) {
        printf("# %s %s %s %zu\n", what, op->name, bench_sync_names[sync], size);
        fflush(stdout);
    }
}

/* "unsupported (MPI_ERR_...)" or "error (MPI_ERR_...)": a CSV-safe note for an MPI error. */
static void bench_error_note(int rc, char *note, size_t len)
{
    static const struct {
        int cls;
        const char *name;
    } names[] = {
        {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION"},
        {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC"},
        {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT"},
        {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE"},
        {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH"},
        {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED"},
        {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR"},
        {MPI_ERR_WIN, "MPI_ERR_WIN"},
        {MPI_ERR_OP, "MPI_ERR_OP"},
        {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
        {MPI_ERR_RANK, "MPI_ERR_RANK"},
        {MPI_ERR_ARG, "MPI_ERR_ARG"},
        {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
        {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
        {MPI_ERR_INTERN, "MPI_ERR_INTERN"},
    };
    int cls = MPI_ERR_UNKNOWN;

    MPI_Error_class(rc, &cls);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (names[i].cls == cls) {
            snprintf(note, len, "%s (%s)",
                     cls == MPI_ERR_UNSUPPORTED_OPERATION ? "unsupported" : "error", names[i].name);
            return;
        }
    }
    snprintf(note, len, "error (class %d)", cls);
}

/* ---------------------------------------------------------------------------------------- */
/* Epochs                                                                                     */

/* Opens what one batch of operations needs.  Passive modes leave the target alone: it waits in
 * a barrier, which also gives software-progress components their target-side progress. */
static int bench_epoch_open(struct bench *b, enum bench_sync sync, struct bench_role role)
{
    int rc = MPI_SUCCESS;

    switch (sync) {
    case SYNC_FENCE:
        return MPI_Win_fence(0, b->win);
    case SYNC_LOCK:
        return role.origin ? MPI_Win_lock(MPI_LOCK_SHARED, b->peer, 0, b->win) : MPI_SUCCESS;
    case SYNC_LOCK_ALL:
        return MPI_SUCCESS; /* the lock_all epoch spans the whole measurement */
    case SYNC_PSCW:
        /* Post before start: with both ranks in both roles, a blocking start then always finds
         * the peer's post already issued. */
        if (role.target) {
            rc = MPI_Win_post(b->peer_group, 0, b->win);
        }
        if (rc == MPI_SUCCESS && role.origin) {
            rc = MPI_Win_start(b->peer_group, 0, b->win);
        }
        return rc;
    default:
        return MPI_ERR_ARG;
    }
}

static int bench_epoch_close(struct bench *b, enum bench_sync sync, struct bench_role role)
{
    int rc = MPI_SUCCESS;

    switch (sync) {
    case SYNC_FENCE:
        return MPI_Win_fence(0, b->win);
    case SYNC_LOCK:
        return role.origin ? MPI_Win_unlock(b->peer, b->win) : MPI_SUCCESS;
    case SYNC_LOCK_ALL:
        return role.origin ? MPI_Win_flush(b->peer, b->win) : MPI_SUCCESS;
    case SYNC_PSCW:
        if (role.origin) {
            rc = MPI_Win_complete(b->win);
        }
        if (rc == MPI_SUCCESS && role.target) {
            rc = MPI_Win_wait(b->win);
        }
        return rc;
    default:
        return MPI_ERR_ARG;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Operations                                                                                 */

/* One operation of @p size bytes at the start of the peer's window.  The atomics work on one
 * double (accumulates, MPI_SUM) or one int64_t (fetch_and_op MPI_SUM, compare_and_swap). */
static int bench_issue(struct bench *b, enum bench_rma rma, size_t size)
{
    const int64_t *compare = (const int64_t *)(b->origin_buf + sizeof(int64_t));

    switch (rma) {
    case RMA_PUT:
        return MPI_Put(b->origin_buf, (int)size, MPI_BYTE, b->peer, 0, (int)size, MPI_BYTE, b->win);
    case RMA_GET:
        return MPI_Get(b->result_buf, (int)size, MPI_BYTE, b->peer, 0, (int)size, MPI_BYTE, b->win);
    case RMA_ACCUMULATE:
        return MPI_Accumulate(b->origin_buf, 1, MPI_DOUBLE, b->peer, 0, 1, MPI_DOUBLE, MPI_SUM,
                              b->win);
    case RMA_GET_ACCUMULATE:
        return MPI_Get_accumulate(b->origin_buf, 1, MPI_DOUBLE, b->result_buf, 1, MPI_DOUBLE,
                                  b->peer, 0, 1, MPI_DOUBLE, MPI_SUM, b->win);
    case RMA_FETCH_AND_OP:
        return MPI_Fetch_and_op(b->origin_buf, b->result_buf, MPI_INT64_T, b->peer, 0, MPI_SUM,
                                b->win);
    case RMA_COMPARE_AND_SWAP:
        return MPI_Compare_and_swap(b->origin_buf, compare, b->result_buf, MPI_INT64_T, b->peer,
                                    0, b->win);
    default:
        return MPI_ERR_ARG;
    }
}

/* Runs @p batches synchronizations with @p per_batch operations each.  It never leaves early:
 * in the active modes the peer is counting on every fence or post, so stopping on an error
 * would turn an error into a hang.  Returns the first error. */
static int bench_run(struct bench *b, const struct bench_op *op, enum bench_sync sync,
                     struct bench_role role, size_t size, long batches, int per_batch)
{
    int first = MPI_SUCCESS, rc;

    for (long i = 0; i < batches; ++i) {
        rc = bench_epoch_open(b, sync, role);
        if (first == MPI_SUCCESS) first = rc;
        for (int k = 0; role.origin && k < per_batch; ++k) {
            rc = bench_issue(b, op->rma, size);
            if (first == MPI_SUCCESS) first = rc;
        }
        rc = bench_epoch_close(b, sync, role);
        if (first == MPI_SUCCESS) first = rc;
    }
    return first;
}

/* ---------------------------------------------------------------------------------------- */
/* The guarded try and its check                                                             */

/* Data written by rank @p source for a transfer of @p size bytes.  Depends on both so that data
 * left over from another size or the other rank never passes the check. */
static unsigned char bench_pattern(size_t i, int source, size_t size)
{
    return (unsigned char)(i * 131u + size * 7u + (size_t)source * 61u + 1u);
}

static void bench_fill(unsigned char *buf, size_t size, int source)
{
    for (size_t i = 0; i < size; ++i) buf[i] = bench_pattern(i, source, size);
}

static bool bench_matches(const unsigned char *buf, size_t size, int source)
{
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != bench_pattern(i, source, size)) return false;
    }
    return true;
}

/* Known starting values: target element 1.0 or 5, origin operand 2.0 or 3 (compare value 5,
 * swap value 9). */
static void bench_prepare(struct bench *b, const struct bench_op *op, struct bench_role role,
                          size_t size)
{
    int64_t ints[2] = {0, 5};
    double operand = 2.0, initial = 1.0;
    int64_t initial_int = 5;

    memset(b->result_buf, 0, size);
    switch (op->rma) {
    case RMA_PUT:
    case RMA_GET:
        if (role.origin) bench_fill(b->origin_buf, size, b->rank);
        if (role.target) bench_fill(b->win_base, size, b->rank);
        break;
    case RMA_ACCUMULATE:
    case RMA_GET_ACCUMULATE:
        memcpy(b->origin_buf, &operand, sizeof(operand));
        memcpy(b->win_base, &initial, sizeof(initial));
        break;
    case RMA_FETCH_AND_OP:
    case RMA_COMPARE_AND_SWAP:
        ints[0] = op->rma == RMA_FETCH_AND_OP ? 3 : 9;
        memcpy(b->origin_buf, ints, sizeof(ints));
        memcpy(b->win_base, &initial_int, sizeof(initial_int));
        break;
    }
}

/* Whether this rank sees the effect the try should have had. */
static bool bench_check(const struct bench *b, const struct bench_op *op, struct bench_role role,
                        size_t size)
{
    double d_target, d_result;
    int64_t i_target, i_result;
    bool ok = true;

    memcpy(&d_target, b->win_base, sizeof(d_target));
    memcpy(&d_result, b->result_buf, sizeof(d_result));
    memcpy(&i_target, b->win_base, sizeof(i_target));
    memcpy(&i_result, b->result_buf, sizeof(i_result));
    switch (op->rma) {
    case RMA_PUT:
        if (role.target) ok = bench_matches(b->win_base, size, b->peer);
        break;
    case RMA_GET:
        if (role.origin) ok = bench_matches(b->result_buf, size, b->peer);
        break;
    case RMA_ACCUMULATE:
        if (role.target) ok = d_target == 3.0;
        break;
    case RMA_GET_ACCUMULATE:
        if (role.target) ok = d_target == 3.0;
        if (role.origin) ok = ok && d_result == 1.0;
        break;
    case RMA_FETCH_AND_OP:
        if (role.target) ok = i_target == 8;
        if (role.origin) ok = ok && i_result == 5;
        break;
    case RMA_COMPARE_AND_SWAP:
        if (role.target) ok = i_target == 9;
        if (role.origin) ok = ok && i_result == 5;
        break;
    }
    return ok;
}

static void bench_keep_first(int *first, int rc)
{
    if (*first == MPI_SUCCESS) *first = rc;
}

/* One batch with one operation, on known data, then the check.  The barriers order the local
 * initialisation before the peer's access, and the access before the local check, also in the
 * passive modes where nothing else synchronizes the target. */
static struct bench_try bench_try_once(struct bench *b, const struct bench_op *op,
                                       enum bench_sync sync, struct bench_role role, size_t size,
                                       bool *ok)
{
    struct bench_try t = {MPI_SUCCESS, MPI_SUCCESS, false};
    int rc;

    bench_prepare(b, op, role, size);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = bench_epoch_open(b, sync, role);
    bench_keep_first(&t.epoch_rc, rc);
    t.opened = t.opened || (rc == MPI_SUCCESS && (role.origin || sync == SYNC_FENCE ||
                                                  sync == SYNC_PSCW));
    if (rc == MPI_SUCCESS && role.origin) {
        t.op_rc = bench_issue(b, op->rma, size);
    }
    /* Close even after a failed operation: the epoch itself is still good. */
    if (rc == MPI_SUCCESS) {
        bench_keep_first(&t.epoch_rc, bench_epoch_close(b, sync, role));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    *ok = t.epoch_rc == MPI_SUCCESS && t.op_rc == MPI_SUCCESS && bench_check(b, op, role, size);
    return t;
}

/* ---------------------------------------------------------------------------------------- */
/* Measurements                                                                               */

static struct bench_role bench_role_of(const struct bench *b, const struct bench_op *op)
{
    struct bench_role role;

    role.origin = op->kind == KIND_BIBW || b->rank == 0;
    role.target = op->kind == KIND_BIBW || b->rank == 1;
    return role;
}

#define BENCH_REPS 3             /* timed repetitions; the best one is reported */
#define BENCH_MAX_BATCHES 1000000 /* per repetition, for operations of a few nanoseconds */

/* Warm-up that also calibrates: runs growing numbers of batches until one round takes a tenth
 * of the budget.  Returns rank 0's seconds per batch; rank 0 alone decides when to stop so that
 * both ranks run the same number of batches, which the active modes need. */
static double bench_calibrate(struct bench *b, const struct bench_op *op, enum bench_sync sync,
                              struct bench_role role, size_t size, int per_batch, int *rc)
{
    double per = 0, t0, elapsed;
    int more;

    for (long n = 1;; n *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        bench_keep_first(rc, bench_run(b, op, sync, role, size, n, per_batch));
        elapsed = MPI_Wtime() - t0;
        per = elapsed / (double)n;
        more = elapsed < b->opt.budget_s / 10 && n * 4 <= BENCH_MAX_BATCHES;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more) break;
    }
    MPI_Bcast(&per, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return per;
}

/* Batches per repetition: --iters when given, else what fits the budget.  Large transfers thus
 * get few batches and tiny ones many, and the whole run stays predictable. */
static long bench_batches(const struct bench *b, const struct bench_op *op, double per_batch_s)
{
    long min = op->kind == KIND_LATENCY ? 10 : 2;
    double fit;

    if (b->opt.iters > 0) return b->opt.iters;
    fit = per_batch_s > 0 ? b->opt.budget_s / BENCH_REPS / per_batch_s : BENCH_MAX_BATCHES;
    if (fit > BENCH_MAX_BATCHES) return BENCH_MAX_BATCHES;
    return fit < min ? min : (long)fit;
}

/* Seconds for @p batches, as the slowest origin saw them (rank 0 gets the result).  In the
 * passive modes the target only waits; its time is not part of the result. */
static double bench_timed(struct bench *b, const struct bench_op *op, enum bench_sync sync,
                          struct bench_role role, size_t size, long batches, int per_batch,
                          int *rc)
{
    double t0, elapsed, slowest = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    bench_keep_first(rc, bench_run(b, op, sync, role, size, batches, per_batch));
    elapsed = role.origin ? MPI_Wtime() - t0 : 0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return slowest;
}

/* Times the operation (after a successful try) and reports the best of BENCH_REPS
 * repetitions, which filters out the other tenants of a small machine. */
static void bench_time(struct bench *b, const struct bench_op *op, enum bench_sync sync,
                       struct bench_role role, size_t size)
{
    int per_batch = op->kind == KIND_LATENCY ? 1 : b->opt.window;
    int rc = MPI_SUCCESS, cls = MPI_SUCCESS;
    double per, best = 0;
    long batches;
    char note[96];

    per = bench_calibrate(b, op, sync, role, size, per_batch, &rc);
    batches = bench_batches(b, op, per);
    for (int rep = 0; rep < BENCH_REPS; ++rep) {
        double t = bench_timed(b, op, sync, role, size, batches, per_batch, &rc);
        if (rep == 0 || t < best) best = t;
    }

    /* Either rank's error class will do; both ranks must report the same one. */
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    MPI_Allreduce(MPI_IN_PLACE, &cls, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (cls != MPI_SUCCESS) {
        bench_error_note(cls, note, sizeof(note));
        bench_emit_na(b, op, sync, size, note);
    } else if (op->kind == KIND_LATENCY) {
        bench_emit_value(b, op, sync, size, best / (double)batches * 1e6);
    } else {
        double bytes = (double)size * per_batch * (double)batches;
        if (op->kind == KIND_BIBW) bytes *= 2;
        bench_emit_value(b, op, sync, size, bytes / best / 1e6);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Windows                                                                                    */

static int bench_win_open(struct bench *b)
{
    int rc;

    if (b->opt.use_create) {
        b->win_memory = calloc(1, b->win_size);
        if (b->win_memory == NULL) return MPI_ERR_NO_MEM;
        b->win_base = b->win_memory;
        rc = MPI_Win_create(b->win_base, (MPI_Aint)b->win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                            &b->win);
    } else {
        b->win_memory = NULL;
        rc = MPI_Win_allocate((MPI_Aint)b->win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                              &b->win_base, &b->win);
    }
    if (rc == MPI_SUCCESS) {
        MPI_Win_set_errhandler(b->win, MPI_ERRORS_RETURN);
    }
    return rc;
}

/* A window whose epochs failed on one rank but not the other may be stuck in an epoch that
 * cannot be ended; freeing it could hang, so such a window is left behind. */
static void bench_win_close(struct bench *b, bool abandon)
{
    if (!abandon) {
        MPI_Win_free(&b->win);
        free(b->win_memory);
    }
    b->win = MPI_WIN_NULL;
    b->win_memory = NULL;
}

/* The first window's name tells which component served it; it becomes the label unless the
 * command line gave one. */
static void bench_name_component(struct bench *b)
{
    static bool done;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;

    if (done) return;
    done = true;
    MPI_Win_get_name(b->win, name, &len);
    if (b->rank == 0) printf("# window name: %s\n", len > 0 ? name : "(none)");
    if (b->opt.label[0] == '\0') {
        snprintf(b->opt.label, sizeof(b->opt.label), "%s", len > 0 ? name : "unknown");
        b->opt.label[strcspn(b->opt.label, " ,")] = '\0';
    }
}

/* ---------------------------------------------------------------------------------------- */
/* One (operation, sync mode): a fresh window, then every size                               */

static size_t bench_next_size(const struct bench *b, size_t size)
{
    /* --quick keeps the sizes the summary reports and a few in between. */
    static const size_t quick[] = {8, 1024, 65536, 1048576};

    if (!b->opt.quick) return size * 2;
    for (size_t i = 0; i < sizeof(quick) / sizeof(quick[0]); ++i) {
        if (quick[i] > size) return quick[i];
    }
    return SIZE_MAX;
}

static size_t bench_first_size(const struct bench *b)
{
    size_t size = 1;

    while (size < b->opt.min_size) size *= 2;
    if (b->opt.quick) {
        size_t q = bench_next_size(b, 0);
        while (q < size) q = bench_next_size(b, q);
        size = q;
    }
    return size;
}

/* Agrees on the try's outcome across both ranks: the error class (largest wins), whether the
 * check passed everywhere, and whether an epoch was opened anywhere. */
static void bench_agree(struct bench_try *t, bool *ok)
{
    int v[3], cls_epoch = MPI_SUCCESS, cls_op = MPI_SUCCESS;

    if (t->epoch_rc != MPI_SUCCESS) MPI_Error_class(t->epoch_rc, &cls_epoch);
    if (t->op_rc != MPI_SUCCESS) MPI_Error_class(t->op_rc, &cls_op);
    v[0] = cls_epoch;
    v[1] = cls_op;
    v[2] = *ok ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    t->epoch_rc = v[0];
    t->op_rc = v[1];
    *ok = v[2] == 0;
    v[0] = t->opened ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    t->opened = v[0] != 0;
}

static void bench_cell(struct bench *b, const struct bench_op *op, enum bench_sync sync)
{
    struct bench_role role = bench_role_of(b, op);
    size_t first = op->atomic ? BENCH_ATOMIC_SIZE : bench_first_size(b);
    size_t last = op->atomic ? BENCH_ATOMIC_SIZE : b->opt.max_size;
    char broken[96] = ""; /* set once the window's epochs failed: the rest is reported, not run */
    bool abandon = false, locked_all = false, ok;
    int rc;

    rc = bench_win_open(b);
    if (rc != MPI_SUCCESS) {
        bench_error_note(rc, broken, sizeof(broken));
        b->win = MPI_WIN_NULL;
    } else {
        bench_name_component(b);
    }
    if (rc == MPI_SUCCESS && sync == SYNC_LOCK_ALL && role.origin) {
        rc = MPI_Win_lock_all(0, b->win);
        locked_all = rc == MPI_SUCCESS;
    }
    if (rc != MPI_SUCCESS && broken[0] == '\0') {
        bench_error_note(rc, broken, sizeof(broken));
    }
    rc = broken[0] == '\0' ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc && broken[0] == '\0') snprintf(broken, sizeof(broken), "error (on the peer)");

    for (size_t size = first; size <= last; size = bench_next_size(b, size)) {
        struct bench_try t;

        bench_mark(b, "begin", op, sync, size);
        if (broken[0] != '\0') {
            bench_emit_na(b, op, sync, size, broken);
            bench_mark(b, "end", op, sync, size);
            continue;
        }
        t = bench_try_once(b, op, sync, role, size, &ok);
        bench_agree(&t, &ok);
        if (t.epoch_rc != MPI_SUCCESS) {
            bench_error_note(t.epoch_rc, broken, sizeof(broken));
            /* A failed flush leaves the lock_all epoch ours to end; other modes may have left
             * the peer in an epoch that nothing can end now. */
            abandon = t.opened && sync != SYNC_LOCK_ALL;
            bench_emit_na(b, op, sync, size, broken);
        } else if (t.op_rc != MPI_SUCCESS) {
            char note[96];
            bench_error_note(t.op_rc, note, sizeof(note));
            bench_emit_na(b, op, sync, size, note);
        } else if (!ok) {
            bench_emit_na(b, op, sync, size, "wrong_result");
        } else {
            bench_time(b, op, sync, role, size);
        }
        bench_mark(b, "end", op, sync, size);
    }

    if (b->win != MPI_WIN_NULL) {
        if (locked_all && !abandon) MPI_Win_unlock_all(b->win);
        MPI_Barrier(MPI_COMM_WORLD);
        bench_win_close(b, abandon);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Patterns: per-iteration p50/p99/max over any number of ranks                              */

#define PAT_MIN_SAMPLES 20
#define PAT_MAX_SAMPLES 20000 /* per rank */
#define PAT_SAMPLE_US 2.0     /* a sample groups iterations until it lasts about this long */
#define PAT_MAX_GROUP 256
#define PAT_CALIBRATE_ITERS 8

struct pat {
    struct bench *b;
    enum bench_pat id;
    int n, rank, left, right;
    bool origin;      /* this rank issues the pattern's operations */
    size_t size;      /* bytes per transfer */
    size_t slot;      /* bytes per origin in the window, the origin and the result buffers */
    MPI_Win win;
    unsigned char *base, *memory, *src, *dst;
    MPI_Group left_group, right_group;
    int seed;         /* added to the source rank in the byte patterns of one try */
};

static double pat_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The sync column of a pattern's rows: its synchronization, the window flavor and the number
 * of ranks, e.g. "lock_all/create/np2". */
static const char *pat_sync(const struct pat *p)
{
    static char text[48];
    const char *sync = p->id == PAT_PSCW_ROUND ? "pscw" : p->id == PAT_LOCK_PUT ? "lock" : "lock_all";

    snprintf(text, sizeof(text), "%s/%s/np%d", sync, p->b->opt.use_create ? "create" : "allocate",
             p->n);
    return text;
}

static bool pat_uses_lock_all(enum bench_pat id)
{
    return id != PAT_PSCW_ROUND && id != PAT_LOCK_PUT;
}

/* One iteration of the pattern.  Returns the first error but never stops early: in a PSCW
 * round the peers count on every post and complete. */
static int pat_iter(struct pat *p)
{
    const MPI_Aint disp = (MPI_Aint)((size_t)p->rank * p->slot);
    const int count = (int)p->size, dcount = (int)(p->size / sizeof(double));
    int rc = MPI_SUCCESS;

    if (!p->origin) return MPI_SUCCESS;
    switch (p->id) {
    case PAT_PUT_FLUSH:
    case PAT_PUT_BIDIR:
        bench_keep_first(&rc, MPI_Put(p->src, count, MPI_BYTE, p->right, disp, count, MPI_BYTE,
                                      p->win));
        bench_keep_first(&rc, MPI_Win_flush(p->right, p->win));
        break;
    case PAT_GET_FLUSH:
        bench_keep_first(&rc, MPI_Get(p->dst, count, MPI_BYTE, p->right, disp, count, MPI_BYTE,
                                      p->win));
        bench_keep_first(&rc, MPI_Win_flush(p->right, p->win));
        break;
    case PAT_FOP_FLUSH:
    case PAT_FOP_RATE: {
        int t = p->id == PAT_FOP_RATE ? 0 : p->right;
        bench_keep_first(&rc, MPI_Fetch_and_op(p->src, p->dst, MPI_INT64_T, t,
                                               p->id == PAT_FOP_RATE ? 0 : disp, MPI_SUM, p->win));
        bench_keep_first(&rc, MPI_Win_flush(t, p->win));
        break;
    }
    case PAT_ACC:
        bench_keep_first(&rc, MPI_Accumulate(p->src, dcount, MPI_DOUBLE, p->right, disp, dcount,
                                             MPI_DOUBLE, MPI_SUM, p->win));
        bench_keep_first(&rc, MPI_Win_flush(p->right, p->win));
        break;
    case PAT_GACC:
        bench_keep_first(&rc, MPI_Get_accumulate(p->src, dcount, MPI_DOUBLE, p->dst, dcount,
                                                 MPI_DOUBLE, p->right, disp, dcount, MPI_DOUBLE,
                                                 MPI_SUM, p->win));
        bench_keep_first(&rc, MPI_Win_flush(p->right, p->win));
        break;
    case PAT_PSCW_ROUND:
        bench_keep_first(&rc, MPI_Win_post(p->left_group, 0, p->win));
        bench_keep_first(&rc, MPI_Win_start(p->right_group, 0, p->win));
        bench_keep_first(&rc, MPI_Put(p->src, count, MPI_BYTE, p->right, disp, count, MPI_BYTE,
                                      p->win));
        bench_keep_first(&rc, MPI_Win_complete(p->win));
        bench_keep_first(&rc, MPI_Win_wait(p->win));
        break;
    case PAT_GET_ALL:
    case PAT_GET_ONE_ALL:
        for (int t = 0; t < p->n; ++t) {
            bench_keep_first(&rc, MPI_Get(p->dst + (size_t)t * p->slot, count, MPI_BYTE, t, disp,
                                          count, MPI_BYTE, p->win));
        }
        bench_keep_first(&rc, MPI_Win_flush_all(p->win));
        break;
    case PAT_GET_NBR:
        bench_keep_first(&rc, MPI_Get(p->dst, count, MPI_BYTE, p->right, disp, count, MPI_BYTE,
                                      p->win));
        bench_keep_first(&rc, MPI_Get(p->dst + p->slot, count, MPI_BYTE, p->left, disp, count,
                                      MPI_BYTE, p->win));
        bench_keep_first(&rc, MPI_Win_flush_all(p->win));
        break;
    case PAT_PUT_ALL:
        for (int t = 0; t < p->n; ++t) {
            bench_keep_first(&rc, MPI_Put(p->src, count, MPI_BYTE, t, disp, count, MPI_BYTE,
                                          p->win));
        }
        bench_keep_first(&rc, MPI_Win_flush_all(p->win));
        break;
    case PAT_LOCK_PUT:
        bench_keep_first(&rc, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, p->win));
        bench_keep_first(&rc, MPI_Put(p->src, count, MPI_BYTE, 1, disp, count, MPI_BYTE, p->win));
        bench_keep_first(&rc, MPI_Win_unlock(1, p->win));
        break;
    default:
        rc = MPI_ERR_ARG;
    }
    return rc;
}

/* Known data before the try: every window slot and the origin buffer hold this rank's byte
 * pattern; accumulates start from 1.0 (operand 2.0), fetch_and_op from 5 (operand 3). */
static void pat_prepare(struct pat *p)
{
    size_t total = (size_t)p->n * p->slot;
    double one = 1.0, two = 2.0;
    int64_t five = 5, three = 3;

    memset(p->dst, 0, total);
    for (int s = 0; s < p->n; ++s) {
        bench_fill(p->base + (size_t)s * p->slot, p->size, p->rank + p->seed);
    }
    bench_fill(p->src, p->size, p->rank + p->seed);
    if (p->id == PAT_ACC || p->id == PAT_GACC) {
        for (size_t i = 0; i + sizeof(double) <= p->size; i += sizeof(double)) {
            memcpy(p->src + i, &two, sizeof(two));
            for (int s = 0; s < p->n; ++s) memcpy(p->base + (size_t)s * p->slot + i, &one, sizeof(one));
        }
    } else if (p->id == PAT_FOP_FLUSH || p->id == PAT_FOP_RATE) {
        memcpy(p->src, &three, sizeof(three));
        for (int s = 0; s < p->n; ++s) memcpy(p->base + (size_t)s * p->slot, &five, sizeof(five));
    }
}

static bool pat_doubles_are(const unsigned char *buf, size_t size, double v)
{
    for (size_t i = 0; i + sizeof(double) <= size; i += sizeof(double)) {
        double d;
        memcpy(&d, buf + i, sizeof(d));
        if (d != v) return false;
    }
    return true;
}

/* Whether this rank sees what one iteration from the prepared data should have left. */
static bool pat_check(const struct pat *p)
{
    const unsigned char *from_left = p->base + (size_t)p->left * p->slot;
    int64_t word, result;
    bool ok = true;

    memcpy(&word, p->id == PAT_FOP_RATE ? p->base : from_left, sizeof(word));
    memcpy(&result, p->dst, sizeof(result));
    switch (p->id) {
    case PAT_PUT_FLUSH:
    case PAT_PUT_BIDIR:
    case PAT_PSCW_ROUND:
        return bench_matches(from_left, p->size, p->left + p->seed);
    case PAT_PUT_ALL:
        for (int o = 0; o < p->n; ++o) ok = ok && bench_matches(p->base + (size_t)o * p->slot,
                                                                  p->size, o + p->seed);
        return ok;
    case PAT_LOCK_PUT:
        return p->rank != 1 || bench_matches(p->base, p->size, p->seed);
    case PAT_GET_FLUSH:
        return bench_matches(p->dst, p->size, p->right + p->seed);
    case PAT_GET_NBR:
        return bench_matches(p->dst, p->size, p->right + p->seed) &&
               bench_matches(p->dst + p->slot, p->size, p->left + p->seed);
    case PAT_GET_ALL:
    case PAT_GET_ONE_ALL:
        for (int t = 0; p->origin && t < p->n; ++t) {
            ok = ok && bench_matches(p->dst + (size_t)t * p->slot, p->size, t + p->seed);
        }
        return ok;
    case PAT_ACC:
        return pat_doubles_are(from_left, p->size, 3.0);
    case PAT_GACC:
        return pat_doubles_are(from_left, p->size, 3.0) && pat_doubles_are(p->dst, p->size, 1.0);
    case PAT_FOP_FLUSH:
        return word == 8 && result == 5;
    case PAT_FOP_RATE:
        return (p->rank != 0 || word == 5 + 3 * (int64_t)p->n) && result >= 5 &&
               result < 5 + 3 * (int64_t)p->n && (result - 5) % 3 == 0;
    default:
        return false;
    }
}

static void pat_emit(const struct pat *p, const char *metric, double value, const char *note)
{
    if (p->rank != 0) return;
    if (note != NULL) {
        printf("%s,%s,%s,%zu,%s,NA,%s\n", bench_component(p->b), bench_patterns[p->id].name,
               pat_sync(p), p->size, metric, note);
    } else {
        printf("%s,%s,%s,%zu,%s,%.3f,\n", bench_component(p->b), bench_patterns[p->id].name,
               pat_sync(p), p->size, metric, value);
    }
    fflush(stdout);
}

static void pat_emit_na(const struct pat *p, const char *note)
{
    pat_emit(p, "p50_us", 0, note);
    pat_emit(p, "p99_us", 0, note);
    pat_emit(p, "max_us", 0, note);
    if (p->id == PAT_FOP_RATE) pat_emit(p, "throughput_Mops", 0, note);
}

static int pat_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The MPI error class of @p rc on any rank (largest wins), MPI_SUCCESS when none failed. */
static int pat_agree_error(int rc)
{
    int cls = MPI_SUCCESS;

    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    MPI_Allreduce(MPI_IN_PLACE, &cls, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return cls;
}

/* One iteration on fresh data (patterns offset by @p seed), checked on every rank.  Returns
 * the agreed error class; *ok_p tells whether every rank saw the right data. */
static int pat_try(struct pat *p, int seed, bool *ok_p)
{
    int rc, cls, ok;

    p->seed = seed;
    pat_prepare(p);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = pat_iter(p);
    MPI_Barrier(MPI_COMM_WORLD);
    ok = rc == MPI_SUCCESS && pat_check(p);
    cls = pat_agree_error(rc);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    *ok_p = ok != 0;
    return cls;
}

/* Times the pattern at one size: samples of `group` iterations each, every origin's samples
 * gathered at rank 0.  A second try after the timing, on other data, catches a component
 * whose completion runs ahead of the data once it is warm. */
static void pat_measure(struct pat *p)
{
    double per, t0, loop_us, slowest = 0, *mine, *all = NULL;
    long group, samples, ops = 0, total_ops = 0;
    int rc = MPI_SUCCESS, cls, count = 0, *counts = NULL, *displs = NULL, total = 0;
    bool ok;
    char note[96];

    cls = pat_try(p, 0, &ok);
    if (cls != MPI_SUCCESS) {
        bench_error_note(cls, note, sizeof(note));
        pat_emit_na(p, note);
        return;
    }
    if (!ok) {
        pat_emit_na(p, "wrong_result");
        return;
    }

    /* calibration: every rank runs the same number of iterations (PSCW needs it) */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = pat_now_us();
    for (int i = 0; i < PAT_CALIBRATE_ITERS; ++i) bench_keep_first(&rc, pat_iter(p));
    per = (pat_now_us() - t0) / PAT_CALIBRATE_ITERS;
    MPI_Allreduce(MPI_IN_PLACE, &per, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    group = per >= PAT_SAMPLE_US ? 1 : (long)(PAT_SAMPLE_US / (per > 0.001 ? per : 0.001)) + 1;
    if (group > PAT_MAX_GROUP) group = PAT_MAX_GROUP;
    samples = (long)(p->b->opt.budget_s * 1e6 / ((double)group * (per > 0.001 ? per : 0.001)));
    if (samples < PAT_MIN_SAMPLES) samples = PAT_MIN_SAMPLES;
    if (samples > PAT_MAX_SAMPLES) samples = PAT_MAX_SAMPLES;

    mine = malloc(sizeof(double) * (size_t)samples);
    if (mine == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = pat_now_us();
    for (long s = 0; s < samples; ++s) {
        double s0 = pat_now_us();
        for (long i = 0; i < group; ++i) bench_keep_first(&rc, pat_iter(p));
        if (p->origin) mine[count++] = (pat_now_us() - s0) / (double)group;
    }
    loop_us = p->origin ? pat_now_us() - t0 : 0;
    ops = p->origin ? samples * group : 0;

    cls = pat_agree_error(rc);
    MPI_Reduce(&loop_us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&ops, &total_ops, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (p->rank == 0) {
        counts = malloc(sizeof(int) * (size_t)p->n);
        displs = malloc(sizeof(int) * (size_t)p->n);
        if (counts == NULL || displs == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (p->rank == 0) {
        for (int r = 0; r < p->n; ++r) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc(sizeof(double) * (size_t)(total > 0 ? total : 1));
        if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gatherv(mine, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (cls == MPI_SUCCESS) {
        cls = pat_try(p, 1 + (int)(samples % 97), &ok);
    }
    if (cls != MPI_SUCCESS) {
        bench_error_note(cls, note, sizeof(note));
        pat_emit_na(p, note);
    } else if (!ok) {
        pat_emit_na(p, "wrong_result (after timing)");
    } else if (p->rank == 0) {
        qsort(all, (size_t)total, sizeof(double), pat_cmp_double);
        pat_emit(p, "p50_us", all[(total - 1) / 2], NULL);
        pat_emit(p, "p99_us", all[(size_t)((double)total * 0.99 + 0.999999) - 1], NULL);
        pat_emit(p, "max_us", all[total - 1], NULL);
        if (p->id == PAT_FOP_RATE) pat_emit(p, "throughput_Mops", (double)total_ops / slowest, NULL);
    }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

static bool pat_size_selected(const struct bench *b, size_t size)
{
    if (size < b->opt.min_size || size > b->opt.max_size) return false;
    return !b->opt.quick || size <= (1u << 20);
}

/* One pattern: a window of n slots of its largest size, then every selected size. */
static void pat_cell(struct bench *b, enum bench_pat id)
{
    struct pat p = {.b = b, .id = id, .win = MPI_WIN_NULL};
    const size_t *sizes = b->opt.psizes[0] != 0 ? b->opt.psizes : bench_patterns[id].sizes;
    size_t total;
    int rc, ranks[1], epoch_rc = MPI_SUCCESS;
    MPI_Group world;
    char broken[96] = "";

    MPI_Comm_size(MPI_COMM_WORLD, &p.n);
    p.rank = b->rank;
    p.right = (p.rank + 1) % p.n;
    p.left = (p.rank + p.n - 1) % p.n;
    p.origin = (id != PAT_GET_ONE_ALL && id != PAT_LOCK_PUT) || p.rank == 0;
    p.slot = 64;
    for (int i = 0; sizes[i] != 0; ++i) {
        if (pat_size_selected(b, sizes[i]) && sizes[i] > p.slot) p.slot = sizes[i];
    }
    total = (size_t)p.n * p.slot;
    p.src = calloc(1, total);
    p.dst = calloc(1, total);
    if (p.src == NULL || p.dst == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    ranks[0] = p.left;
    MPI_Group_incl(world, 1, ranks, &p.left_group);
    ranks[0] = p.right;
    MPI_Group_incl(world, 1, ranks, &p.right_group);
    MPI_Group_free(&world);

    if (b->opt.use_create) {
        p.memory = calloc(1, total);
        if (p.memory == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
        p.base = p.memory;
        rc = MPI_Win_create(p.base, (MPI_Aint)total, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p.win);
    } else {
        rc = MPI_Win_allocate((MPI_Aint)total, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p.base, &p.win);
    }
    if (rc == MPI_SUCCESS) {
        MPI_Win_set_errhandler(p.win, MPI_ERRORS_RETURN);
        b->win = p.win;
        bench_name_component(b);
        if (pat_uses_lock_all(id) && p.origin) epoch_rc = MPI_Win_lock_all(0, p.win);
    }
    rc = pat_agree_error(rc != MPI_SUCCESS ? rc : epoch_rc);
    if (rc != MPI_SUCCESS) bench_error_note(rc, broken, sizeof(broken));

    for (int i = 0; sizes[i] != 0; ++i) {
        if (!pat_size_selected(b, sizes[i])) continue;
        p.size = sizes[i];
        if (b->rank == 0) {
            printf("# begin %s %s %zu\n", bench_patterns[id].name, pat_sync(&p), p.size);
        }
        if (broken[0] != '\0') {
            pat_emit_na(&p, broken);
        } else {
            pat_measure(&p);
        }
        if (b->rank == 0) printf("# end %s %s %zu\n", bench_patterns[id].name, pat_sync(&p), p.size);
        fflush(stdout);
    }

    if (p.win != MPI_WIN_NULL) {
        if (pat_uses_lock_all(id) && p.origin && epoch_rc == MPI_SUCCESS) MPI_Win_unlock_all(p.win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_free(&p.win);
    }
    b->win = MPI_WIN_NULL;
    MPI_Group_free(&p.left_group);
    MPI_Group_free(&p.right_group);
    free(p.memory);
    free(p.src);
    free(p.dst);
}

/* ---------------------------------------------------------------------------------------- */
/* Options                                                                                    */

static void bench_usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np 2 [--mca osc NAME] osc_bench [options]\n"
            "  --ops LIST      comma-separated, or all (default):");
    for (int i = 0; i < BENCH_NUM_OPS; ++i) fprintf(stderr, " %s", bench_ops[i].name);
    fprintf(stderr,
            "\n"
            "  --sync LIST     comma-separated, or all (default): fence lock lock_all pscw\n"
            "  --min SIZE      smallest transfer (default 1; K and M suffixes allowed)\n"
            "  --max SIZE      largest transfer (default 4M)\n"
            "  --iters N       synchronizations per timed repetition (default: fit --budget)\n"
            "  --window N      operations per synchronization in bandwidth tests (default 64)\n"
            "  --budget S      seconds of timing per measurement, roughly (default 0.1)\n"
            "  --flavor F      allocate (default) or create\n"
            "  --label NAME    component column (default: from the window's name)\n"
            "  --quick         sizes 8, 1K, 64K, 1M only, --budget 0.02\n"
            "  --patterns LIST comma-separated, or all: per-iteration p50/p99/max on any number\n"
            "                  of ranks (the ops above run only with --ops then):");
    for (int i = 0; i < PAT_COUNT; ++i) fprintf(stderr, " %s", bench_patterns[i].name);
    fprintf(stderr, "\n  --psizes LIST   sizes for every pattern (up to 8), instead of its own\n");
}

static bool bench_parse_size(const char *text, size_t *size)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);

    if (end == text) return false;
    if (*end == 'K' || *end == 'k') v <<= 10, ++end;
    else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
    if (*end != '\0' || v == 0) return false;
    *size = (size_t)v;
    return true;
}

/* Sets flags[i] for every name in the comma-separated @p list; false on an unknown name. */
static bool bench_parse_list(const char *list, const char *const *names, int count, bool *flags)
{
    char copy[512], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", list);
    for (int i = 0; i < count; ++i) flags[i] = false;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (int i = 0; i < count; ++i) {
            if (strcmp(tok, "all") == 0 || strcmp(tok, names[i]) == 0) flags[i] = known = true;
        }
        if (!known) {
            fprintf(stderr, "osc_bench: unknown name '%s'\n", tok);
            return false;
        }
    }
    return true;
}

/* One "--name value" option; false when the name is unknown or the value bad. */
static bool bench_parse_option(struct bench_options *opt, const char *arg, const char *val)
{
    const char *op_names[BENCH_NUM_OPS];

    for (int i = 0; i < BENCH_NUM_OPS; ++i) op_names[i] = bench_ops[i].name;
    const char *pat_names[PAT_COUNT];

    for (int i = 0; i < PAT_COUNT; ++i) pat_names[i] = bench_patterns[i].name;
    if (strcmp(arg, "--ops") == 0) {
        opt->ops_given = true;
        return bench_parse_list(val, op_names, BENCH_NUM_OPS, opt->ops);
    }
    if (strcmp(arg, "--patterns") == 0) {
        opt->any_pattern = true;
        return bench_parse_list(val, pat_names, PAT_COUNT, opt->patterns);
    }
    if (strcmp(arg, "--sync") == 0) {
        return bench_parse_list(val, bench_sync_names, SYNC_COUNT, opt->syncs);
    }
    if (strcmp(arg, "--psizes") == 0) {
        char copy[256], *save = NULL;
        int n = 0;

        snprintf(copy, sizeof(copy), "%s", val);
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (n == 8 || !bench_parse_size(tok, &opt->psizes[n++])) return false;
        }
        opt->psizes[n] = 0;
        return n > 0;
    }
    if (strcmp(arg, "--min") == 0) return bench_parse_size(val, &opt->min_size);
    if (strcmp(arg, "--max") == 0) return bench_parse_size(val, &opt->max_size);
    if (strcmp(arg, "--iters") == 0) {
        opt->iters = atol(val);
        return opt->iters > 0;
    }
    if (strcmp(arg, "--window") == 0) {
        opt->window = atoi(val);
        return opt->window > 0;
    }
    if (strcmp(arg, "--budget") == 0) {
        opt->budget_s = atof(val);
        return opt->budget_s > 0;
    }
    if (strcmp(arg, "--flavor") == 0) {
        opt->use_create = strcmp(val, "create") == 0;
        return opt->use_create || strcmp(val, "allocate") == 0;
    }
    if (strcmp(arg, "--label") == 0) {
        snprintf(opt->label, sizeof(opt->label), "%s", val);
        return true;
    }
    return false;
}

static bool bench_parse(int argc, char **argv, struct bench_options *opt)
{
    *opt = (struct bench_options){.min_size = 1, .max_size = 4u << 20, .window = 64};
    for (int i = 0; i < BENCH_NUM_OPS; ++i) opt->ops[i] = true;
    for (int i = 0; i < SYNC_COUNT; ++i) opt->syncs[i] = true;

    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            opt->quick = true;
        } else if (i + 1 < argc && bench_parse_option(opt, argv[i], argv[i + 1])) {
            ++i;
        } else {
            fprintf(stderr, "osc_bench: bad option %s %s\n", argv[i], i + 1 < argc ? argv[i + 1] : "");
            bench_usage();
            return false;
        }
    }
    /* --min above --max selects no sizes (the driver resumes past a crash at the last size). */
    if (opt->budget_s == 0) opt->budget_s = opt->quick ? 0.02 : 0.1;
    return true;
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    struct bench b = {0};
    int nranks, parsed;
    int ranks[1];
    MPI_Group world_group;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parsed = bench_parse(argc, argv, &b.opt);
    if (parsed && b.opt.any_pattern && !b.opt.ops_given) {
        for (int i = 0; i < BENCH_NUM_OPS; ++i) b.opt.ops[i] = false;
    }
    if (!parsed || nranks < 2 || (nranks != 2 && !(b.opt.any_pattern && !b.opt.ops_given))) {
        if (b.rank == 0 && parsed) {
            fprintf(stderr, "osc_bench: needs exactly 2 ranks (--patterns alone: 2 or more)\n");
        }
        MPI_Finalize();
        return 2;
    }
    b.peer = b.rank ^ 1;
    if (b.peer >= nranks) b.peer = b.rank; /* an odd rank count runs patterns only */
    ranks[0] = b.peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, ranks, &b.peer_group);
    MPI_Group_free(&world_group);

    /* Atomics need two 8-byte slots of origin data (operand and compare value). */
    b.win_size = b.opt.max_size < 64 ? 64 : b.opt.max_size;
    b.origin_buf = calloc(1, b.win_size);
    b.result_buf = calloc(1, b.win_size);
    if (b.origin_buf == NULL || b.result_buf == NULL) {
        fprintf(stderr, "osc_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (int i = 0; i < BENCH_NUM_OPS; ++i) {
        for (int s = 0; s < SYNC_COUNT; ++s) {
            if (b.opt.ops[i] && b.opt.syncs[s]) bench_cell(&b, &bench_ops[i], (enum bench_sync)s);
        }
    }
    for (int i = 0; i < PAT_COUNT; ++i) {
        if (b.opt.patterns[i]) pat_cell(&b, (enum bench_pat)i);
    }
    if (b.rank == 0) printf("# done\n");
    fflush(stdout);

    MPI_Group_free(&b.peer_group);
    free(b.origin_buf);
    free(b.result_buf);
    MPI_Finalize();
    return 0;
}
