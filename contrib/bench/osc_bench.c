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
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            "  --quick         sizes 8, 1K, 64K, 1M only, --budget 0.02\n");
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
    if (strcmp(arg, "--ops") == 0) return bench_parse_list(val, op_names, BENCH_NUM_OPS, opt->ops);
    if (strcmp(arg, "--sync") == 0) {
        return bench_parse_list(val, bench_sync_names, SYNC_COUNT, opt->syncs);
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
    if (!parsed || nranks != 2) {
        if (b.rank == 0 && parsed) fprintf(stderr, "osc_bench: needs exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    b.peer = 1 - b.rank;
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
    if (b.rank == 0) printf("# done\n");
    fflush(stdout);

    MPI_Group_free(&b.peer_group);
    free(b.origin_buf);
    free(b.result_buf);
    MPI_Finalize();
    return 0;
}
