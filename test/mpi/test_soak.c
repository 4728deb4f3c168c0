/*
 * test_soak.c - mixed random RMA for a given time, every result checked exactly, RSS sampled.
 *
 * The run is a sequence of phases.  Each phase opens one window (allocate, create, dynamic
 * with attach/detach, or allocate_shared), runs a few epochs of one synchronization mode
 * (fence, lock shared, lock exclusive, lock_all with flush/flush_local, or PSCW), verifies the
 * window's contents and frees it.  Within an epoch every rank issues random operations to
 * random targets with random sizes and contiguous or strided (vector) datatypes.
 *
 * The traffic is designed so that every value is known in advance:
 *  - owned slots: on every target, origin r owns SLOTS int64 slots that only r writes (put,
 *    accumulate SUM/REPLACE/MAX, get_accumulate, fetch_and_op, compare_and_swap and their
 *    request forms).  r keeps a shadow copy, so every fetched result and every get is checked
 *    against it, and a slot is touched at most once between two remote completions so that
 *    no two operations on it are ever unordered;
 *  - counters: NCNT slots per target updated by all ranks only with SUM accumulates (and the
 *    fetching forms), one MAX cell, and one ticket cell incremented by fetch_and_op(SUM, 1).
 *    Each origin tells each target what it added, so the target knows the final totals; the
 *    tickets handed out must be exactly 0..T-1 (their count, sum and sum of squares).
 * After each phase every origin sends its shadow and contributions to every target
 * (MPI_Alltoall), and each target compares its own memory with them.
 *
 * Options: --seconds N (default 20), --seed S (default: from the clock; printed),
 * --rss-interval N (seconds between RSS samples, default 10), --phases N (stop after N phases).
 * Exits non-zero on any mismatch; MPI errors abort the job (MPI_ERRORS_ARE_FATAL).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test.h"

#define SLOTS 64          /* owned slots per (origin, target) pair */
#define NCNT 16           /* SUM counters per target */
#define MAXCNT 8          /* most elements in one operation */
#define SPAN (2 * MAXCNT) /* elements a strided buffer of MAXCNT elements covers */
#define MAX_OPS 48        /* most operations per rank per epoch */
#define NPEND 96          /* operations in flight per rank */
#define MAX_REPORTED 10   /* mismatches printed per rank */
#define POISON INT64_C(0x5a5a5a5a5a5a5a5a)
#define WARN_GROWTH_PCT 10.0

enum flavor { FL_ALLOCATE, FL_CREATE, FL_DYNAMIC, FL_SHARED, NFLAVOR };
enum sync_mode { SY_FENCE, SY_LOCK_SHARED, SY_LOCK_EXCL, SY_LOCK_ALL, SY_PSCW, NSYNC };
static const char *flavor_name[] = {"allocate", "create", "dynamic", "shared"};
static const char *sync_name[] = {"fence", "lock_shared", "lock_exclusive", "lock_all", "pscw"};

/* What one origin tells one target at the end of a phase. */
typedef struct {
    int64_t owned[SLOTS]; /* the origin's slots on that target, as they must be */
    int64_t cnt[NCNT];    /* what it added to each counter */
    int64_t max;          /* the largest value it MAX-accumulated (0 if none) */
    int64_t tickets, ticket_sum, ticket_sumsq; /* tickets it fetched */
} report_t;

typedef struct {
    MPI_Win win;
    enum flavor flavor;
    int64_t *owned;  /* local: nranks * SLOTS */
    int64_t *shared; /* local: NCNT counters, the MAX cell, the ticket cell */
    void *mem[3];    /* what win_close frees (create, dynamic) */
    MPI_Aint *owned_base, *shared_base; /* dynamic: every target's region addresses */
} window_t;

enum check { CK_NONE, CK_OWNED, CK_TICKET };

/* One operation in flight: its buffers stay here until it completes. */
typedef struct {
    int used, target, slot, count, rstride;
    enum check check;
    const char *op;
    int64_t origin[SPAN], result[SPAN], compare;
    int64_t expected[MAXCNT];
    MPI_Request req;
} pending_t;

static int rank, nranks;
static uint64_t rank_rng, global_rng;
static report_t *report;        /* [target] */
static unsigned char *touched;  /* [target][SLOTS]: used since the last remote completion */
static pending_t pending[NPEND];
static MPI_Datatype vec2[MAXCNT + 1]; /* vec2[k]: k int64 elements, every other one */
static long long ops_done;
static long phase_no;
static enum flavor cur_flavor;
static enum sync_mode cur_sync;

#define IDX_MAX (NCNT)
#define IDX_TICKET (NCNT + 1)
#define NSHARED (NCNT + 2)

/* ---- random numbers (splitmix64) ---- */

static uint64_t next_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Per-rank choices (operations, targets, values). */
static int rnd(int n) { return (int)(next_rand(&rank_rng) % (uint64_t)n); }
/* Choices every rank makes identically (window flavor, sync mode, epochs, PSCW groups). */
static int grnd(int n) { return (int)(next_rand(&global_rng) % (uint64_t)n); }
/* Values stay below 2^40 so that sums of them never overflow. */
static int64_t rnd_value(void) { return (int64_t)(next_rand(&rank_rng) >> 24); }

/* Initial contents of origin o's slot j on target t, known to both. */
static int64_t initial_value(int t, int o, int j)
{
    uint64_t s = ((uint64_t)t << 40) ^ ((uint64_t)o << 20) ^ (uint64_t)j ^ (uint64_t)phase_no << 50;
    return (int64_t)(next_rand(&s) >> 24);
}

/* ---- RSS ---- */

static long rss_kib(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Gathers every rank's RSS into all_rss (rank 0) and prints one line there. */
static void rss_sample(const char *label, double elapsed, long *all_rss)
{
    long mine = rss_kib();
    long long total_ops = 0;
    int errors = 0;

    MPI_Gather(&mine, 1, MPI_LONG, all_rss, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Reduce(&ops_done, &total_ops, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mpi_test_failures, &errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    printf("soak: rss %-6s t=%4.0fs phase %ld ops %lld errors %d KiB:", label, elapsed, phase_no,
           total_ops, errors);
    for (int r = 0; r < nranks; r++) printf(" r%d=%ld", r, all_rss[r]);
    printf("\n");
    fflush(stdout);
}

/* ---- windows ---- */

static int shared_flavor_possible(void)
{
    MPI_Comm node;
    int size;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &size);
    MPI_Comm_free(&node);
    return size == nranks;
}

static void win_open(window_t *w, enum flavor fl)
{
    MPI_Aint owned_bytes = (MPI_Aint)nranks * SLOTS * 8, bytes = owned_bytes + NSHARED * 8;
    void *base = NULL;

    memset(w, 0, sizeof(*w));
    w->flavor = fl;
    switch (fl) {
    case FL_ALLOCATE:
        MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w->win);
        break;
    case FL_SHARED:
        MPI_Win_allocate_shared(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w->win);
        break;
    case FL_CREATE:
        base = w->mem[0] = malloc(bytes);
        MPI_Win_create(base, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        break;
    case FL_DYNAMIC: {
        /* owned slots and the shared cells in separate regions, plus a spare one attached
         * and detached again so that the region table changes every phase */
        MPI_Aint mine[2], *all = malloc(2 * nranks * sizeof(MPI_Aint));

        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        w->owned = w->mem[0] = malloc(owned_bytes);
        w->shared = w->mem[1] = malloc(NSHARED * 8);
        w->mem[2] = malloc(4096);
        MPI_Win_attach(w->win, w->mem[2], 4096);
        MPI_Win_attach(w->win, w->owned, owned_bytes);
        MPI_Win_attach(w->win, w->shared, NSHARED * 8);
        MPI_Win_detach(w->win, w->mem[2]);
        MPI_Get_address(w->owned, &mine[0]);
        MPI_Get_address(w->shared, &mine[1]);
        MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
        w->owned_base = malloc(nranks * sizeof(MPI_Aint));
        w->shared_base = malloc(nranks * sizeof(MPI_Aint));
        for (int t = 0; t < nranks; t++) {
            w->owned_base[t] = all[2 * t];
            w->shared_base[t] = all[2 * t + 1];
        }
        free(all);
        break;
    }
    default:
        break;
    }
    if (fl != FL_DYNAMIC) {
        w->owned = base;
        w->shared = (int64_t *)base + (size_t)nranks * SLOTS;
    }
    for (int o = 0; o < nranks; o++)
        for (int j = 0; j < SLOTS; j++) w->owned[o * SLOTS + j] = initial_value(rank, o, j);
    memset(w->shared, 0, NSHARED * 8);
}

static void win_close(window_t *w)
{
    if (w->flavor == FL_DYNAMIC) {
        MPI_Win_detach(w->win, w->owned);
        MPI_Win_detach(w->win, w->shared);
    }
    MPI_Win_free(&w->win);
    for (int i = 0; i < 3; i++) free(w->mem[i]);
    free(w->owned_base);
    free(w->shared_base);
}

/* Target displacement of origin rank's owned slot on target t. */
static MPI_Aint owned_disp(const window_t *w, int t, int slot)
{
    if (w->flavor == FL_DYNAMIC) return w->owned_base[t] + (MPI_Aint)(rank * SLOTS + slot) * 8;
    return (MPI_Aint)rank * SLOTS + slot;
}

/* Target displacement of shared cell i (counter, MAX cell or ticket) on target t. */
static MPI_Aint shared_disp(const window_t *w, int t, int i)
{
    if (w->flavor == FL_DYNAMIC) return w->shared_base[t] + (MPI_Aint)i * 8;
    return (MPI_Aint)nranks * SLOTS + i;
}

/* ---- operations in flight ---- */

static pending_t *new_pending(int t, const char *op, enum check check)
{
    for (int i = 0; i < NPEND; i++) {
        pending_t *p = &pending[i];

        if (p->used) continue;
        memset(p, 0, sizeof(*p));
        for (int k = 0; k < SPAN; k++) p->result[k] = POISON;
        p->used = 1;
        p->target = t;
        p->op = op;
        p->check = check;
        p->rstride = 1;
        p->req = MPI_REQUEST_NULL;
        return p;
    }
    return NULL;
}

static int pending_full(void)
{
    for (int i = 0; i < NPEND; i++)
        if (!pending[i].used) return 0;
    return 1;
}

static void mismatch(const char *what, int t, int origin, int slot, int64_t want, int64_t got)
{
    if (mpi_test_failures++ < MAX_REPORTED)
        fprintf(stderr,
                "[rank %d] MISMATCH phase %ld %s/%s: %s target %d origin %d slot %d: expected "
                "%" PRId64 " got %" PRId64 "\n",
                rank, phase_no, flavor_name[cur_flavor], sync_name[cur_sync], what, t, origin, slot, want, got);
}

static void verify_result(pending_t *p)
{
    if (p->check == CK_OWNED) {
        for (int i = 0; i < p->count; i++) {
            int64_t got = p->result[i * p->rstride];

            if (got != p->expected[i]) mismatch(p->op, p->target, rank, p->slot, p->expected[i], got);
        }
    } else if (p->check == CK_TICKET) {
        report_t *r = &report[p->target];

        r->tickets++;
        r->ticket_sum += p->result[0];
        r->ticket_sumsq += p->result[0] * p->result[0];
    }
}

/* Completes the requests of target t's operations (all targets if t < 0). */
static void wait_requests(int t)
{
    for (int i = 0; i < NPEND; i++) {
        pending_t *p = &pending[i];

        if (p->used && p->req != MPI_REQUEST_NULL && (t < 0 || p->target == t))
            MPI_Wait(&p->req, MPI_STATUS_IGNORE);
    }
}

/* After a flush, unlock, fence or complete for target t (all if t < 0): checks results and
 * frees buffers.  Only a remote completion lets the slots be touched again. */
static void retire(int t, int remote)
{
    for (int i = 0; i < NPEND; i++) {
        pending_t *p = &pending[i];

        if (!p->used || (t >= 0 && p->target != t)) continue;
        verify_result(p);
        p->used = 0;
    }
    if (!remote) return;
    if (t < 0) memset(touched, 0, (size_t)nranks * SLOTS);
    else memset(touched + (size_t)t * SLOTS, 0, SLOTS);
}

/* ---- choosing what an operation touches ---- */

/* An operation's datatype on one side: count contiguous elements, or one strided vector. */
static void layout(int stride, int count, int *mpi_count, MPI_Datatype *dt)
{
    if (stride == 1) {
        *mpi_count = count;
        *dt = MPI_INT64_T;
    } else {
        *mpi_count = 1;
        *dt = vec2[count];
    }
}

/* Picks count untouched owned slots on p's target, contiguous or every other one; marks them.
 * Returns the target stride, 0 when the slots are already in use this epoch. */
static int pick_owned(pending_t *p, int max_count)
{
    int stride = 1 + rnd(2), count = 1 + rnd(max_count);
    int span = (count - 1) * stride + 1, slot = rnd(SLOTS - span + 1);
    unsigned char *mine = touched + (size_t)p->target * SLOTS;

    for (int i = 0; i < count; i++)
        if (mine[slot + i * stride]) return 0;
    for (int i = 0; i < count; i++) mine[slot + i * stride] = 1;
    p->slot = slot;
    p->count = count;
    return stride;
}

static int64_t *shadow(int t, int slot) { return &report[t].owned[slot]; }

/* ---- the operations ---- */

enum kind {
    K_PUT, K_GET, K_ACC, K_GET_ACC, K_FETCH_OP, K_CAS,            /* owned slots */
    K_CNT_ACC, K_CNT_GET_ACC, K_CNT_FETCH_OP, K_MAX, K_TICKET,    /* shared cells */
    NKIND
};

static MPI_Op pick_op(const MPI_Op *ops, int n, const char **name, const char *const *names)
{
    int i = rnd(n);

    *name = names[i];
    return ops[i];
}

/* New value of an owned slot after op with operand v. */
static int64_t apply(MPI_Op op, int64_t old, int64_t v)
{
    if (op == MPI_SUM) return old + v;
    if (op == MPI_MAX) return old > v ? old : v;
    if (op == MPI_NO_OP) return old;
    return v; /* MPI_REPLACE */
}

/* put / rput, get / rget, accumulate / raccumulate, get_accumulate / rget_accumulate on owned
 * slots.  Returns 0 if nothing was issued. */
static int op_owned_multi(const window_t *w, int t, enum kind kind, int use_req)
{
    static const MPI_Op acc_ops[] = {MPI_SUM, MPI_REPLACE, MPI_MAX};
    static const char *const acc_names[] = {"acc_sum", "acc_replace", "acc_max"};
    static const MPI_Op gacc_ops[] = {MPI_SUM, MPI_REPLACE, MPI_NO_OP};
    static const char *const gacc_names[] = {"get_acc_sum", "get_acc_replace", "get_acc_no_op"};
    const char *name = kind == K_PUT ? "put" : "get";
    MPI_Op op = MPI_REPLACE;
    pending_t *p;
    int tstride, ostride = 1 + rnd(2), oc, tc, rc;
    MPI_Datatype odt, tdt, rdt;

    if (kind == K_ACC) op = pick_op(acc_ops, 3, &name, acc_names);
    if (kind == K_GET_ACC) op = pick_op(gacc_ops, 3, &name, gacc_names);
    p = new_pending(t, name, kind == K_PUT || kind == K_ACC ? CK_NONE : CK_OWNED);
    if (!p) return 0;
    tstride = pick_owned(p, MAXCNT);
    if (!tstride) {
        p->used = 0;
        return 0;
    }
    p->rstride = 1 + rnd(2);
    for (int i = 0; i < p->count; i++) {
        int64_t *s = shadow(t, p->slot + i * tstride);
        int64_t v = op == MPI_SUM ? 1 + rnd(1000000) : rnd_value();

        p->origin[i * ostride] = v;
        p->expected[i] = *s;
        if (kind != K_GET) *s = apply(op, *s, v);
    }
    layout(ostride, p->count, &oc, &odt);
    layout(tstride, p->count, &tc, &tdt);
    layout(p->rstride, p->count, &rc, &rdt);
    MPI_Aint disp = owned_disp(w, t, p->slot);
    MPI_Request *req = use_req ? &p->req : NULL;
    switch (kind) {
    case K_PUT:
        if (req) MPI_Rput(p->origin, oc, odt, t, disp, tc, tdt, w->win, req);
        else MPI_Put(p->origin, oc, odt, t, disp, tc, tdt, w->win);
        break;
    case K_GET:
        if (req) MPI_Rget(p->result, rc, rdt, t, disp, tc, tdt, w->win, req);
        else MPI_Get(p->result, rc, rdt, t, disp, tc, tdt, w->win);
        break;
    case K_ACC:
        if (req) MPI_Raccumulate(p->origin, oc, odt, t, disp, tc, tdt, op, w->win, req);
        else MPI_Accumulate(p->origin, oc, odt, t, disp, tc, tdt, op, w->win);
        break;
    default:
        if (req)
            MPI_Rget_accumulate(p->origin, oc, odt, p->result, rc, rdt, t, disp, tc, tdt, op,
                                w->win, req);
        else
            MPI_Get_accumulate(p->origin, oc, odt, p->result, rc, rdt, t, disp, tc, tdt, op,
                               w->win);
        break;
    }
    if (req && rnd(4) == 0) MPI_Wait(req, MPI_STATUS_IGNORE); /* sometimes right away */
    return 1;
}

/* fetch_and_op (SUM, REPLACE, NO_OP) or compare_and_swap (hit or miss) on one owned slot. */
static int op_owned_single(const window_t *w, int t, enum kind kind)
{
    static const MPI_Op fop_ops[] = {MPI_SUM, MPI_REPLACE, MPI_NO_OP};
    static const char *const fop_names[] = {"fetch_op_sum", "fetch_op_replace", "fetch_op_no_op"};
    const char *name = "compare_and_swap";
    MPI_Op op = MPI_REPLACE;
    pending_t *p;
    int64_t *s;

    if (kind == K_FETCH_OP) op = pick_op(fop_ops, 3, &name, fop_names);
    p = new_pending(t, name, CK_OWNED);
    if (!p) return 0;
    if (!pick_owned(p, 1)) {
        p->used = 0;
        return 0;
    }
    s = shadow(t, p->slot);
    p->expected[0] = *s;
    p->origin[0] = op == MPI_SUM ? 1 + rnd(1000000) : rnd_value();
    if (kind == K_CAS) {
        int hit = rnd(4) != 0;

        p->compare = hit ? *s : *s ^ 1;
        if (hit) *s = p->origin[0];
        MPI_Compare_and_swap(p->origin, &p->compare, p->result, MPI_INT64_T, t,
                             owned_disp(w, t, p->slot), w->win);
    } else {
        *s = apply(op, *s, p->origin[0]);
        MPI_Fetch_and_op(p->origin, p->result, MPI_INT64_T, t, owned_disp(w, t, p->slot), op,
                         w->win);
    }
    return 1;
}

/* SUM into counters (accumulate, get_accumulate, their request forms, fetch_and_op), MAX into
 * the MAX cell, fetch_and_op(SUM, 1) on the ticket cell. */
static int op_shared(const window_t *w, int t, enum kind kind, int use_req)
{
    static const char *const names[] = {
        [K_CNT_ACC] = "counter_acc", [K_CNT_GET_ACC] = "counter_get_acc",
        [K_CNT_FETCH_OP] = "counter_fetch_op", [K_MAX] = "max_acc", [K_TICKET] = "ticket"};
    pending_t *p = new_pending(t, names[kind], kind == K_TICKET ? CK_TICKET : CK_NONE);
    report_t *r = &report[t];
    MPI_Request *req;

    if (!p) return 0;
    req = use_req ? &p->req : NULL;
    if (kind == K_TICKET) {
        p->origin[0] = 1;
        MPI_Fetch_and_op(p->origin, p->result, MPI_INT64_T, t, shared_disp(w, t, IDX_TICKET),
                         MPI_SUM, w->win);
    } else if (kind == K_MAX) {
        p->origin[0] = rnd_value();
        if (p->origin[0] > r->max) r->max = p->origin[0];
        MPI_Accumulate(p->origin, 1, MPI_INT64_T, t, shared_disp(w, t, IDX_MAX), 1, MPI_INT64_T,
                       MPI_MAX, w->win);
    } else if (kind == K_CNT_FETCH_OP) {
        int c = rnd(NCNT);

        p->origin[0] = 1 + rnd(1000);
        r->cnt[c] += p->origin[0];
        MPI_Fetch_and_op(p->origin, p->result, MPI_INT64_T, t, shared_disp(w, t, c), MPI_SUM,
                         w->win);
    } else {
        int stride = 1 + rnd(2), count = 1 + rnd(MAXCNT);
        int c = rnd(NCNT - (count - 1) * stride), oc, tc;
        MPI_Datatype odt, tdt;

        for (int i = 0; i < count; i++) {
            p->origin[i] = 1 + rnd(1000);
            r->cnt[c + i * stride] += p->origin[i];
        }
        layout(1, count, &oc, &odt);
        layout(stride, count, &tc, &tdt);
        MPI_Aint disp = shared_disp(w, t, c);
        if (kind == K_CNT_ACC && req)
            MPI_Raccumulate(p->origin, oc, odt, t, disp, tc, tdt, MPI_SUM, w->win, req);
        else if (kind == K_CNT_ACC)
            MPI_Accumulate(p->origin, oc, odt, t, disp, tc, tdt, MPI_SUM, w->win);
        else if (req)
            MPI_Rget_accumulate(p->origin, oc, odt, p->result, oc, odt, t, disp, tc, tdt,
                                MPI_SUM, w->win, req);
        else
            MPI_Get_accumulate(p->origin, oc, odt, p->result, oc, odt, t, disp, tc, tdt, MPI_SUM,
                               w->win);
    }
    return 1;
}

/* One random operation to target t; request forms only in passive-target epochs. */
static void random_op(const window_t *w, int t, int passive)
{
    enum kind kind = (enum kind)rnd(NKIND);
    int use_req = passive && rnd(3) == 0, issued;

    if (kind <= K_GET_ACC) issued = op_owned_multi(w, t, kind, use_req);
    else if (kind <= K_CAS) issued = op_owned_single(w, t, kind);
    else issued = op_shared(w, t, kind, use_req);
    ops_done += issued;
}

/* ---- synchronization modes ---- */

/* Remote completion of everything in flight inside a passive epoch (lock_target < 0: lock_all). */
static void flush_everything(const window_t *w, int lock_target)
{
    wait_requests(lock_target);
    if (lock_target >= 0) MPI_Win_flush(lock_target, w->win);
    else MPI_Win_flush_all(w->win);
    retire(lock_target, 1);
}

/* Sometimes a flush or flush_local in the middle of a passive epoch. */
static void maybe_flush(const window_t *w, int lock_target)
{
    int t = lock_target >= 0 ? lock_target : rnd(nranks);

    switch (rnd(12)) {
    case 0:
        wait_requests(t);
        MPI_Win_flush(t, w->win);
        retire(t, 1);
        break;
    case 1:
        wait_requests(t);
        MPI_Win_flush_local(t, w->win);
        retire(t, 0);
        break;
    case 2:
        if (lock_target >= 0) break;
        wait_requests(-1);
        MPI_Win_flush_local_all(w->win);
        retire(-1, 0);
        break;
    case 3:
        if (lock_target < 0) flush_everything(w, -1);
        break;
    default:
        break;
    }
}

/* The operations of one epoch to targets[0..ntargets-1]. */
static void epoch_ops(const window_t *w, const int *targets, int ntargets, int passive,
                      int lock_target)
{
    int n = 1 + rnd(MAX_OPS);

    for (int i = 0; i < n; i++) {
        if (pending_full()) {
            if (!passive) return; /* active target: nothing completes before the epoch ends */
            flush_everything(w, lock_target);
        }
        random_op(w, targets[rnd(ntargets)], passive);
        if (passive) maybe_flush(w, lock_target);
    }
}

static void phase_fence(const window_t *w, int epochs, const int *all)
{
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    for (int e = 0; e < epochs; e++) {
        epoch_ops(w, all, nranks, 0, -1);
        MPI_Win_fence(e == epochs - 1 ? MPI_MODE_NOSUCCEED : 0, w->win);
        retire(-1, 1);
    }
}

static void phase_lock(const window_t *w, int epochs, int lock_type)
{
    for (int e = 0; e < epochs; e++) {
        int t = rnd(nranks);

        MPI_Win_lock(lock_type, t, 0, w->win);
        epoch_ops(w, &t, 1, 1, t);
        wait_requests(t);
        MPI_Win_unlock(t, w->win);
        retire(t, 1);
    }
}

static void phase_lock_all(const window_t *w, int epochs, const int *all)
{
    MPI_Win_lock_all(0, w->win);
    for (int e = 0; e < epochs; e++) {
        epoch_ops(w, all, nranks, 1, -1);
        if (rnd(2)) {
            flush_everything(w, -1);
        } else {
            wait_requests(-1);
            for (int t = 0; t < nranks; t++) MPI_Win_flush(t, w->win);
            retire(-1, 1);
        }
    }
    wait_requests(-1);
    MPI_Win_unlock_all(w->win);
    retire(-1, 1);
}

/* PSCW: each epoch every rank r accesses ranks r+d (mod n) for a few offsets d chosen alike
 * on all ranks, and so exposes itself to r-d. */
static void phase_pscw(const window_t *w, int epochs)
{
    MPI_Group world;
    int *offsets = malloc(nranks * sizeof(int)), *access = malloc(nranks * sizeof(int));
    int *expose = malloc(nranks * sizeof(int));

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int i = 0; i < nranks; i++) offsets[i] = i;
    for (int e = 0; e < epochs; e++) {
        int m = 1 + grnd(nranks < 3 ? nranks : 3);
        MPI_Group access_group, expose_group;

        for (int i = 0; i < m; i++) { /* the first m of a partial shuffle */
            int j = i + grnd(nranks - i), tmp = offsets[i];

            offsets[i] = offsets[j];
            offsets[j] = tmp;
        }
        for (int i = 0; i < m; i++) {
            access[i] = (rank + offsets[i]) % nranks;
            expose[i] = (rank - offsets[i] + nranks) % nranks;
        }
        MPI_Group_incl(world, m, access, &access_group);
        MPI_Group_incl(world, m, expose, &expose_group);
        MPI_Win_post(expose_group, 0, w->win);
        MPI_Win_start(access_group, 0, w->win);
        epoch_ops(w, access, m, 0, -1);
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        retire(-1, 1);
        MPI_Group_free(&access_group);
        MPI_Group_free(&expose_group);
    }
    MPI_Group_free(&world);
    free(offsets);
    free(access);
    free(expose);
}

/* ---- verification ---- */

/* Every origin's report to this rank against this rank's window memory. */
static void verify_phase(const window_t *w)
{
    report_t *in = malloc(nranks * sizeof(report_t));
    int64_t cnt[NCNT] = {0}, max = 0, tickets = 0, sum = 0, sumsq = 0;

    MPI_Barrier(MPI_COMM_WORLD); /* every epoch is over everywhere */
    __sync_synchronize();
    MPI_Alltoall(report, sizeof(report_t), MPI_BYTE, in, sizeof(report_t), MPI_BYTE,
                 MPI_COMM_WORLD);
    for (int o = 0; o < nranks; o++) {
        for (int j = 0; j < SLOTS; j++)
            if (w->owned[o * SLOTS + j] != in[o].owned[j])
                mismatch("final owned slot", rank, o, j, in[o].owned[j], w->owned[o * SLOTS + j]);
        for (int c = 0; c < NCNT; c++) cnt[c] += in[o].cnt[c];
        if (in[o].max > max) max = in[o].max;
        tickets += in[o].tickets;
        sum += in[o].ticket_sum;
        sumsq += in[o].ticket_sumsq;
    }
    for (int c = 0; c < NCNT; c++)
        if (w->shared[c] != cnt[c]) mismatch("final counter", rank, -1, c, cnt[c], w->shared[c]);
    if (w->shared[IDX_MAX] != max) mismatch("final max cell", rank, -1, IDX_MAX, max, w->shared[IDX_MAX]);
    if (w->shared[IDX_TICKET] != tickets)
        mismatch("final ticket count", rank, -1, IDX_TICKET, tickets, w->shared[IDX_TICKET]);
    /* tickets 0..T-1, each exactly once */
    if (sum != tickets * (tickets - 1) / 2)
        mismatch("ticket sum", rank, -1, IDX_TICKET, tickets * (tickets - 1) / 2, sum);
    if (sumsq != (tickets - 1) * tickets * (2 * tickets - 1) / 6)
        mismatch("ticket sum of squares", rank, -1, IDX_TICKET,
                 (tickets - 1) * tickets * (2 * tickets - 1) / 6, sumsq);
    free(in);
}

static void run_phase(enum flavor fl, enum sync_mode sy, int epochs, const int *all)
{
    window_t w;

    cur_flavor = fl;
    cur_sync = sy;
    win_open(&w, fl);
    memset(report, 0, nranks * sizeof(report_t));
    for (int t = 0; t < nranks; t++)
        for (int j = 0; j < SLOTS; j++) report[t].owned[j] = initial_value(t, rank, j);
    memset(touched, 0, (size_t)nranks * SLOTS);
    MPI_Barrier(MPI_COMM_WORLD); /* every target is initialized */
    switch (sy) {
    case SY_FENCE: phase_fence(&w, epochs, all); break;
    case SY_LOCK_SHARED: phase_lock(&w, epochs, MPI_LOCK_SHARED); break;
    case SY_LOCK_EXCL: phase_lock(&w, epochs, MPI_LOCK_EXCLUSIVE); break;
    case SY_LOCK_ALL: phase_lock_all(&w, epochs, all); break;
    default: phase_pscw(&w, epochs); break;
    }
    verify_phase(&w);
    if (phase_no == 0 && rank == 0)
        printf("soak: windows served by %s\n", mpi_test_is_gpuic(w.win) ? "gpuic" : "another osc component");
    win_close(&w);
}

/* ---- driver ---- */

typedef struct {
    double seconds, rss_interval;
    long max_phases;
    uint64_t seed;
    int seed_given;
} options_t;

static void parse_args(int argc, char **argv, options_t *o)
{
    o->seconds = 20;
    o->rss_interval = 10;
    o->max_phases = 0;
    o->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    o->seed_given = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) o->seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rss-interval")) o->rss_interval = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--phases")) o->max_phases = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) {
            o->seed = strtoull(argv[i + 1], NULL, 0);
            o->seed_given = 1;
        } else if (rank == 0) fprintf(stderr, "soak: unknown option %s\n", argv[i]);
    }
}

/* Rank 0's decisions at a phase boundary, the same for all ranks. */
typedef struct {
    int go, warm_done, sample;
} control_t;

int main(int argc, char **argv)
{
    options_t opt;
    control_t ctl = {1, 0, 0};
    int shared_ok, warm = 0, *all;
    long *rss_start, *rss_now;
    double t0, warm_at = 0, next_sample = 0;
    long long total_ops = 0;
    int total_errors = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_args(argc, argv, &opt);
    MPI_Bcast(&opt.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); /* rank 0's clock seed wins */
    global_rng = opt.seed;
    rank_rng = opt.seed ^ (UINT64_C(0xd1b54a32d192ed03) * (uint64_t)(rank + 1));
    shared_ok = shared_flavor_possible();
    if (rank == 0)
        printf("soak: seed %" PRIu64 " ranks %d seconds %.0f rss-interval %.0f%s\n", opt.seed,
               nranks, opt.seconds, opt.rss_interval,
               shared_ok ? "" : " (allocate_shared skipped: ranks on several nodes)");
    for (int k = 1; k <= MAXCNT; k++) {
        MPI_Type_vector(k, 1, 2, MPI_INT64_T, &vec2[k]);
        MPI_Type_commit(&vec2[k]);
    }
    report = malloc(nranks * sizeof(report_t));
    touched = malloc((size_t)nranks * SLOTS);
    all = malloc(nranks * sizeof(int));
    rss_start = calloc(nranks, sizeof(long));
    rss_now = calloc(nranks, sizeof(long));
    for (int t = 0; t < nranks; t++) all[t] = t;

    t0 = MPI_Wtime();
    for (phase_no = 0;; phase_no++) {
        if (rank == 0) {
            double elapsed = MPI_Wtime() - t0;

            ctl.go = elapsed < opt.seconds && (!opt.max_phases || phase_no < opt.max_phases);
            /* warm-up: every flavor with every sync mode twice and a tenth of the time (at
             * most 30 s), so that pools and caches have reached their working size */
            ctl.warm_done = !warm && phase_no >= 2 * NFLAVOR * NSYNC &&
                            elapsed >= (opt.seconds / 10 < 30 ? opt.seconds / 10 : 30);
            ctl.sample = warm && elapsed >= next_sample;
            if (ctl.warm_done) next_sample = elapsed + opt.rss_interval;
            if (ctl.sample) next_sample += opt.rss_interval;
        }
        MPI_Bcast(&ctl, 3, MPI_INT, 0, MPI_COMM_WORLD);
        if (ctl.warm_done) {
            warm = 1;
            warm_at = MPI_Wtime() - t0;
            rss_sample("start", warm_at, rss_start);
        } else if (ctl.sample) {
            rss_sample("sample", MPI_Wtime() - t0, rss_now);
        }
        if (!ctl.go) break;

        /* the first phases cover every combination, then random ones */
        int combo = phase_no < NFLAVOR * NSYNC ? (int)phase_no : grnd(NFLAVOR * NSYNC);
        enum flavor fl = (enum flavor)(combo % NFLAVOR);
        enum sync_mode sy = (enum sync_mode)(combo / NFLAVOR);
        int epochs = 2 + grnd(8);

        if (fl == FL_SHARED && !shared_ok) fl = FL_ALLOCATE;
        run_phase(fl, sy, epochs, all);
    }
    if (!warm) rss_sample("start", MPI_Wtime() - t0, rss_start); /* too short to warm up */
    rss_sample("end", MPI_Wtime() - t0, rss_now);

    MPI_Reduce(&ops_done, &total_ops, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mpi_test_failures, &total_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long start = 0, end = 0;
        double worst = 0;
        int worst_rank = 0;

        for (int r = 0; r < nranks; r++) {
            double g = 100.0 * (rss_now[r] - rss_start[r]) / rss_start[r];

            start += rss_start[r];
            end += rss_now[r];
            if (g > worst) worst = g, worst_rank = r;
        }
        printf("soak: %ld phases in %.1f s (warm-up %.1f s), seed %" PRIu64 "\n", phase_no,
               MPI_Wtime() - t0, warm_at, opt.seed);
        if (worst > WARN_GROWTH_PCT)
            printf("soak: WARNING: RSS of rank %d grew %.1f%% after warm-up\n", worst_rank, worst);
        printf("soak: %lld ops, errors %d, rss start %ld KiB end %ld KiB (growth %.1f%%)\n",
               total_ops, total_errors, start, end, 100.0 * (end - start) / start);
        fflush(stdout);
    }
    for (int k = 1; k <= MAXCNT; k++) MPI_Type_free(&vec2[k]);
    free(report);
    free(touched);
    free(all);
    free(rss_start);
    free(rss_now);
    return mpi_test_finish("test_soak");
}
