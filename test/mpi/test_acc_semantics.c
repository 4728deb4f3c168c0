/*
 * Accumulate semantics that data checks pin down, on MPI_Win_allocate, MPI_Win_create and
 * MPI_Win_create_dynamic windows:
 *  1. a target datatype that names an element more than once (indexed_block with repeated
 *     displacements, as star-forest reductions make them): every contribution is summed, and
 *     MPI_Get_accumulate returns the target's content from before the call for every entry
 *     (MPI 3.1 section 11.3.4; what osc/pt2pt and osc/rdma return), a repeated element's too;
 *  2. pair types (FLOAT_INT, DOUBLE_INT, LONG_INT, 2INT, SHORT_INT, LONG_DOUBLE_INT) with
 *     REPLACE, NO_OP, MINLOC and MAXLOC, counts 1 and 8, contiguous and strided targets: both
 *     members land whole, past the padding, and a NO_OP read racing REPLACE writes never
 *     returns a torn pair;
 *  3. argument edge cases: a zero-size datatype is a no-op, a negative result count is
 *     MPI_ERR_COUNT, a size that overflows is refused and writes nothing;
 *  4. atomicity: single-element fetch_and_op, compare_and_swap and small accumulates racing
 *     with large multi-element accumulates and get_accumulates on the same elements; the final
 *     sums are exact;
 *  5. accumulates of 1.6 MB (several chunks of the fetch-combine-write path on windows a peer
 *     cannot map) from every rank into every rank at once: exact sums, read back remotely;
 *  6. ordering (MPI 3.1 section 11.7.2, the default accumulate_ordering): one origin's
 *     accumulates on one element, with no flush between them, apply in program order: a chain
 *     of SUM, PROD, BXOR, REPLACE, MAX, BOR, BAND and two-element SUMs whose result depends on
 *     the order, checked after every step by MPI_Get_accumulate(MPI_NO_OP) and
 *     MPI_Fetch_and_op reads.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

enum { F_ALLOCATE, F_CREATE, F_DYNAMIC, F_COUNT };
static const char *flavor_name[F_COUNT] = {"allocate", "create", "dynamic"};

static int rank, nranks;

/* A window of @p bytes zeroed bytes per rank (disp_unit 1), errors returned. */
typedef struct {
    MPI_Win win;
    char *base;
    MPI_Aint *disp0; /* per rank: displacement of the first byte */
    int flavor;
} win_t;

static void win_open(win_t *w, int flavor, size_t bytes)
{
    MPI_Aint mine = 0;

    w->flavor = flavor;
    w->disp0 = calloc(nranks, sizeof(MPI_Aint));
    if (flavor == F_ALLOCATE) {
        MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win);
    } else if (flavor == F_CREATE) {
        w->base = malloc(bytes);
        MPI_Win_create(w->base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
    } else {
        w->base = malloc(bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->base, (MPI_Aint)bytes);
        MPI_Get_address(w->base, &mine);
    }
    MPI_Allgather(&mine, 1, MPI_AINT, w->disp0, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    memset(w->base, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void win_close(win_t *w)
{
    if (w->flavor == F_DYNAMIC) {
        MPI_Win_detach(w->win, w->base);
    }
    MPI_Win_free(&w->win);
    if (w->flavor != F_ALLOCATE) {
        free(w->base);
    }
    free(w->disp0);
}

/* Own window bytes, read under an exclusive self-lock so that they are current. */
static void win_read_own(win_t *w, void *dst, size_t off, size_t len)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memcpy(dst, w->base + off, len);
    MPI_Win_unlock(rank, w->win);
}

static void win_write_own(win_t *w, const void *src, size_t off, size_t len)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memcpy(w->base + off, src, len);
    MPI_Win_unlock(rank, w->win);
}

/* ---- 1. repeated target entries ---------------------------------------------------------- */

/* Target element of origin entry k: element 0 three times, 1 twice, 2 once. */
static const int rep_disp[] = {0, 0, 1, 0, 2, 1};
#define REP_N 6

static void test_repeated(int flavor)
{
    MPI_Datatype tdt_d, tdt_i;
    double od[REP_N], got_d[3], res_d[REP_N];
    int oi[REP_N], got_i[3], k, e, t;
    long expect_d[3] = {0, 0, 0}, expect_i[3] = {0, 0, 0};
    win_t w;

    MPI_Type_create_indexed_block(REP_N, 1, rep_disp, MPI_DOUBLE, &tdt_d);
    MPI_Type_commit(&tdt_d);
    MPI_Type_create_indexed_block(REP_N, 1, rep_disp, MPI_INT, &tdt_i);
    MPI_Type_commit(&tdt_i);
    win_open(&w, flavor, 64);

    /* Every rank sums into every target at once: doubles at byte 0, ints at byte 32. */
    for (k = 0; k < REP_N; ++k) {
        od[k] = (double)((rank + 1) * (k + 1));
        oi[k] = (rank + 1) * (k + 1) * 10;
    }
    MPI_Win_lock_all(0, w.win);
    for (t = 0; t < nranks; ++t) {
        CHECK(MPI_Accumulate(od, REP_N, MPI_DOUBLE, t, w.disp0[t], 1, tdt_d, MPI_SUM, w.win) ==
              MPI_SUCCESS);
        CHECK(MPI_Accumulate(oi, REP_N, MPI_INT, t, w.disp0[t] + 32, 1, tdt_i, MPI_SUM,
                             w.win) == MPI_SUCCESS);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (t = 0; t < nranks; ++t) {
        for (k = 0; k < REP_N; ++k) {
            expect_d[rep_disp[k]] += (long)(t + 1) * (k + 1);
            expect_i[rep_disp[k]] += (long)(t + 1) * (k + 1) * 10;
        }
    }
    win_read_own(&w, got_d, 0, sizeof(got_d));
    win_read_own(&w, got_i, 32, sizeof(got_i));
    for (e = 0; e < 3; ++e) {
        if (got_d[e] != (double)expect_d[e] || got_i[e] != (int)expect_i[e]) {
            fprintf(stderr, "[rank %d] %s repeated entries: element %d is %g / %d, expected "
                    "%ld / %ld\n", rank, flavor_name[flavor], e, got_d[e], got_i[e],
                    expect_d[e], expect_i[e]);
        }
        CHECK(got_d[e] == (double)expect_d[e]);
        CHECK(got_i[e] == (int)expect_i[e]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Get_accumulate, one origin at a time: each entry's result is its element before the
     * call, however often the layout names it. */
    {
        double base_d[3] = {100, 200, 300}, run[3], expect_res[REP_N];

        win_write_own(&w, base_d, 0, sizeof(base_d));
        MPI_Barrier(MPI_COMM_WORLD);
        for (k = 0; k < REP_N; ++k) {
            od[k] = (double)(k + 1);
        }
        memcpy(run, base_d, sizeof(run));
        for (k = 0; k < REP_N; ++k) {
            expect_res[k] = base_d[rep_disp[k]];
            run[rep_disp[k]] += od[k];
        }
        if (rank == 0) {
            for (t = 0; t < nranks; ++t) {
                memset(res_d, 0, sizeof(res_d));
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win);
                CHECK(MPI_Get_accumulate(od, REP_N, MPI_DOUBLE, res_d, REP_N, MPI_DOUBLE, t,
                                         w.disp0[t], 1, tdt_d, MPI_SUM, w.win) == MPI_SUCCESS);
                MPI_Win_unlock(t, w.win);
                for (k = 0; k < REP_N; ++k) {
                    CHECK(res_d[k] == expect_res[k]);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        win_read_own(&w, got_d, 0, sizeof(got_d));
        for (e = 0; e < 3; ++e) {
            CHECK(got_d[e] == run[e]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* The same with a pair type whose elements have a gap (DOUBLE_INT, MAXLOC): element 0
     * named twice, the results the pairs before the call. */
    {
        struct { double v; int i; } base_p[2] = {{5, 1}, {7, 2}}, op_p[3] = {{6, 10}, {9, 11},
                                                                             {1, 12}},
                                     res_p[3], got_p[2];
        const int pdisp[3] = {0, 0, 1};
        MPI_Datatype tdt_p;

        MPI_Type_create_indexed_block(3, 1, pdisp, MPI_DOUBLE_INT, &tdt_p);
        MPI_Type_commit(&tdt_p);
        win_write_own(&w, base_p, 0, sizeof(base_p));
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            for (t = 0; t < nranks; ++t) {
                memset(res_p, 0, sizeof(res_p));
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win);
                CHECK(MPI_Get_accumulate(op_p, 3, MPI_DOUBLE_INT, res_p, 3, MPI_DOUBLE_INT, t,
                                         w.disp0[t], 1, tdt_p, MPI_MAXLOC, w.win) ==
                      MPI_SUCCESS);
                MPI_Win_unlock(t, w.win);
                for (k = 0; k < 3; ++k) {
                    if (res_p[k].v != base_p[pdisp[k]].v || res_p[k].i != base_p[pdisp[k]].i) {
                        fprintf(stderr, "[rank 0] %s repeated pairs: result %d is (%g, %d), "
                                "expected (%g, %d)\n", flavor_name[flavor], k, res_p[k].v,
                                res_p[k].i, base_p[pdisp[k]].v, base_p[pdisp[k]].i);
                    }
                    CHECK(res_p[k].v == base_p[pdisp[k]].v && res_p[k].i == base_p[pdisp[k]].i);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        win_read_own(&w, got_p, 0, sizeof(got_p));
        /* element 0: max(5, 6, 9) with its index; element 1: max(7, 1) */
        CHECK(got_p[0].v == 9 && got_p[0].i == 11);
        CHECK(got_p[1].v == 7 && got_p[1].i == 2);
        MPI_Type_free(&tdt_p);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    MPI_Type_free(&tdt_d);
    MPI_Type_free(&tdt_i);
}

/* ---- 2. pair types ----------------------------------------------------------------------- */

typedef struct { float a; int b; } p_float_int;
typedef struct { double a; int b; } p_double_int;
typedef struct { long a; int b; } p_long_int;
typedef struct { int a; int b; } p_2int;
typedef struct { short a; int b; } p_short_int;
typedef struct { long double a; int b; } p_long_double_int;

typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t extent, boff;
    void (*set_a)(void *p, long v);
    long (*get_a)(const void *p);
} pair_t;

#define PAIR_ACCESS(T, A)                                                                     \
    static void set_##T(void *p, long v) { ((T *)p)->a = (A)v; }                              \
    static long get_##T(const void *p) { return (long)((const T *)p)->a; }
PAIR_ACCESS(p_float_int, float)
PAIR_ACCESS(p_double_int, double)
PAIR_ACCESS(p_long_int, long)
PAIR_ACCESS(p_2int, int)
PAIR_ACCESS(p_short_int, short)
PAIR_ACCESS(p_long_double_int, long double)

#define PAIR(T, DT) {#DT, DT, sizeof(T), offsetof(T, b), set_##T, get_##T}

static int pair_b(const pair_t *p, const char *elem)
{
    int b;

    memcpy(&b, elem + p->boff, sizeof(b));
    return b;
}

static void pair_set(const pair_t *p, char *elem, long a, int b)
{
    p->set_a(elem, a);
    memcpy(elem + p->boff, &b, sizeof(b));
}

#define PCOUNT 8
#define PSTRIDE 2 /* strided target: every other element */

/* Checks REPLACE, NO_OP, MINLOC, MAXLOC of one pair type at count @p count. */
static void test_pair(int flavor, const pair_t *p, int count, bool strided)
{
    size_t span = p->extent * PCOUNT * PSTRIDE;
    char *org = calloc(PCOUNT, p->extent), *res = calloc(PCOUNT, p->extent);
    char *own = calloc(PCOUNT * PSTRIDE, p->extent), *exp = calloc(PCOUNT, p->extent);
    MPI_Datatype tdt = p->dt;
    int tcount = count, i, t, r;
    win_t w;

    if (strided) {
        MPI_Type_vector(count, 1, PSTRIDE, p->dt, &tdt);
        MPI_Type_commit(&tdt);
        tcount = 1;
    }
    win_open(&w, flavor, span);
#define TELEM(buf, i) ((buf) + (size_t)(i) * p->extent * (strided ? PSTRIDE : 1))

    /* REPLACE by rank 0 into every target: .b carries bits above 16. */
    if (rank == 0) {
        for (i = 0; i < count; ++i) {
            pair_set(p, org + i * p->extent, 1000 + i, 0x12340000 + i);
        }
        MPI_Win_lock_all(0, w.win);
        for (t = 0; t < nranks; ++t) {
            CHECK(MPI_Accumulate(org, count, p->dt, t, w.disp0[t], tcount, tdt, MPI_REPLACE,
                                 w.win) == MPI_SUCCESS);
        }
        MPI_Win_unlock_all(w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    win_read_own(&w, own, 0, span);
    for (i = 0; i < count; ++i) {
        const char *e = TELEM(own, i);

        if (p->get_a(e) != 1000 + i || pair_b(p, e) != 0x12340000 + i) {
            fprintf(stderr, "[rank %d] %s %s count %d%s REPLACE: element %d is (%ld, %#x)\n",
                    rank, flavor_name[flavor], p->name, count, strided ? " strided" : "", i,
                    p->get_a(e), pair_b(p, e));
        }
        CHECK(p->get_a(e) == 1000 + i);
        CHECK(pair_b(p, e) == 0x12340000 + i);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* NO_OP reads what REPLACE wrote. */
    MPI_Win_lock_all(0, w.win);
    t = (rank + 1) % nranks;
    memset(res, 0, PCOUNT * p->extent);
    CHECK(MPI_Get_accumulate(NULL, 0, p->dt, res, count, p->dt, t, w.disp0[t], tcount, tdt,
                             MPI_NO_OP, w.win) == MPI_SUCCESS);
    MPI_Win_unlock_all(w.win);
    for (i = 0; i < count; ++i) {
        CHECK(p->get_a(res + i * p->extent) == 1000 + i);
        CHECK(pair_b(p, res + i * p->extent) == 0x12340000 + i);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* MINLOC then MAXLOC from every rank: values whose order depends on rank and element. */
    for (int pass = 0; pass < 2; ++pass) {
        MPI_Op op = pass == 0 ? MPI_MINLOC : MPI_MAXLOC;

        for (i = 0; i < count; ++i) {
            /* start: (1000 + i, 0x12340000 + i); contributions below and above it */
            pair_set(p, exp + i * p->extent, 1000 + i, 0x12340000 + i);
        }
        for (r = 0; r < nranks; ++r) {
            for (i = 0; i < count; ++i) {
                long a = pass == 0 ? 500 + ((r * 3 + i) % nranks) : 1500 + ((r * 5 + i) % nranks);
                char tmp[64];

                pair_set(p, tmp, a, 0x10000 * (r + 1) + i);
                MPI_Reduce_local(tmp, exp + i * p->extent, 1, p->dt, op);
                if (r == rank) {
                    memcpy(org + i * p->extent, tmp, p->extent);
                }
            }
        }
        MPI_Win_lock_all(0, w.win);
        for (t = 0; t < nranks; ++t) {
            CHECK(MPI_Accumulate(org, count, p->dt, t, w.disp0[t], tcount, tdt, op, w.win) ==
                  MPI_SUCCESS);
        }
        MPI_Win_unlock_all(w.win);
        MPI_Barrier(MPI_COMM_WORLD);
        win_read_own(&w, own, 0, span);
        for (i = 0; i < count; ++i) {
            const char *e = TELEM(own, i), *x = exp + i * p->extent;

            if (p->get_a(e) != p->get_a(x) || pair_b(p, e) != pair_b(p, x)) {
                fprintf(stderr, "[rank %d] %s %s count %d%s %s: element %d is (%ld, %#x), "
                        "expected (%ld, %#x)\n", rank, flavor_name[flavor], p->name, count,
                        strided ? " strided" : "", pass ? "MAXLOC" : "MINLOC", i, p->get_a(e),
                        pair_b(p, e), p->get_a(x), pair_b(p, x));
            }
            CHECK(p->get_a(e) == p->get_a(x));
            CHECK(pair_b(p, e) == pair_b(p, x));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* back to the REPLACE values for the next pass */
        for (i = 0; i < count; ++i) {
            pair_set(p, TELEM(own, i), 1000 + i, 0x12340000 + i);
        }
        win_write_own(&w, own, 0, span);
        MPI_Barrier(MPI_COMM_WORLD);
    }
#undef TELEM
    win_close(&w);
    if (strided) {
        MPI_Type_free(&tdt);
    }
    free(org);
    free(res);
    free(own);
    free(exp);
}

/* A NO_OP reader racing a REPLACE writer on one pair never sees a torn pair (a == b). */
static void test_pair_torn(int flavor, const pair_t *p)
{
    char elem[64], res[64];
    int k, iters = 300, torn = 0;
    win_t w;

    win_open(&w, flavor, p->extent);
    MPI_Win_lock_all(0, w.win);
    if (nranks >= 2 && rank == 0) {
        for (k = 1; k <= iters; ++k) {
            pair_set(p, elem, k, k);
            CHECK(MPI_Accumulate(elem, 1, p->dt, 1, w.disp0[1], 1, p->dt, MPI_REPLACE,
                                 w.win) == MPI_SUCCESS);
            MPI_Win_flush(1, w.win);
        }
    } else if (nranks >= 2) {
        for (k = 1; k <= iters; ++k) {
            memset(res, 0, sizeof(res));
            CHECK(MPI_Get_accumulate(NULL, 0, p->dt, res, 1, p->dt, 1, w.disp0[1], 1, p->dt,
                                     MPI_NO_OP, w.win) == MPI_SUCCESS);
            MPI_Win_flush(1, w.win);
            torn += p->get_a(res) != pair_b(p, res);
        }
    }
    MPI_Win_unlock_all(w.win);
    if (torn) {
        fprintf(stderr, "[rank %d] %s %s: %d torn reads\n", rank, flavor_name[flavor], p->name,
                torn);
    }
    CHECK(torn == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
}

static void test_pairs(int flavor)
{
    const pair_t pairs[] = {
        PAIR(p_float_int, MPI_FLOAT_INT),   PAIR(p_double_int, MPI_DOUBLE_INT),
        PAIR(p_long_int, MPI_LONG_INT),     PAIR(p_2int, MPI_2INT),
        PAIR(p_short_int, MPI_SHORT_INT),   PAIR(p_long_double_int, MPI_LONG_DOUBLE_INT),
    };
    size_t i;

    for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); ++i) {
        test_pair(flavor, &pairs[i], 1, false);
        test_pair(flavor, &pairs[i], PCOUNT, false);
        test_pair(flavor, &pairs[i], PCOUNT, true);
        test_pair_torn(flavor, &pairs[i]);
    }
}

/* ---- 3. argument edge cases -------------------------------------------------------------- */

static void test_args(int flavor)
{
    MPI_Datatype zero, huge1, huge2;
    int one[4] = {1, 1, 1, 1}, res[4], own[4], t = (rank + 1) % nranks, i;
    win_t w;

    MPI_Type_contiguous(0, MPI_INT, &zero);
    MPI_Type_commit(&zero);
    /* 2^30 * 2^30 ints: 2^62 bytes; four of them overflow a size_t. */
    MPI_Type_contiguous(1 << 30, MPI_INT, &huge1);
    MPI_Type_contiguous(1 << 30, huge1, &huge2);
    MPI_Type_commit(&huge2);
    win_open(&w, flavor, 64);
    MPI_Win_lock_all(0, w.win);
    CHECK_CLASS(MPI_Accumulate(one, 1, zero, t, w.disp0[t], 1, zero, MPI_SUM, w.win),
                MPI_SUCCESS);
    CHECK_CLASS(MPI_Get_accumulate(one, 1, zero, res, 1, zero, t, w.disp0[t], 1, zero, MPI_SUM,
                                   w.win), MPI_SUCCESS);
    CHECK_CLASS(MPI_Get_accumulate(one, 4, MPI_INT, res, -1, MPI_INT, t, w.disp0[t], 4, MPI_INT,
                                   MPI_SUM, w.win), MPI_ERR_COUNT);
    {
        int rc = MPI_Accumulate(one, 4, MPI_INT, t, w.disp0[t], 4, huge2, MPI_SUM, w.win), c;

        MPI_Error_class(rc, &c);
        CHECK(rc != MPI_SUCCESS);
        CHECK(c == MPI_ERR_COUNT || c == MPI_ERR_TYPE || c == MPI_ERR_RMA_RANGE ||
              c == MPI_ERR_ARG);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    win_read_own(&w, own, 0, sizeof(own));
    for (i = 0; i < 4; ++i) {
        CHECK(own[i] == 0); /* nothing was written */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    MPI_Type_free(&zero);
    MPI_Type_free(&huge1);
    MPI_Type_free(&huge2);
}

/* ---- 4. atomicity between single-element and bulk updates -------------------------------- */

#define ATOM_N 12000 /* int64 elements: 96 KB, several pipeline chunks */
#define ATOM_HOT 4   /* elements every call family hits */

static void test_atomicity(int flavor)
{
    int64_t *ones = malloc(ATOM_N * sizeof(int64_t)), *res = malloc(ATOM_N * sizeof(int64_t));
    int64_t *own = malloc(ATOM_N * sizeof(int64_t)), one = 1, old, cmp, nv;
    double done = 1.0, dres, *ownd = malloc(ATOM_N * sizeof(double));
    double *dones = malloc(ATOM_N * sizeof(double));
    const int iters = 40, bulk_every = 8;
    long bulk_calls = 0, singles = 0, all_bulk, all_singles;
    int i, k, t = 0;
    win_t w;

    for (i = 0; i < ATOM_N; ++i) {
        ones[i] = 1;
    }
    /* int64 elements at byte 0, doubles after them */
    win_open(&w, flavor, ATOM_N * (sizeof(int64_t) + sizeof(double)));
    MPI_Win_lock_all(0, w.win);
    for (k = 0; k < iters; ++k) {
        for (i = 0; i < ATOM_HOT; ++i) {
            MPI_Aint d = w.disp0[t] + i * (MPI_Aint)sizeof(int64_t);

            CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, d, MPI_SUM, w.win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Accumulate(&one, 1, MPI_INT64_T, t, d, 1, MPI_INT64_T, MPI_SUM, w.win) ==
                  MPI_SUCCESS);
            /* increment by compare-and-swap, retried until it lands */
            CHECK(MPI_Fetch_and_op(NULL, &cmp, MPI_INT64_T, t, d, MPI_NO_OP, w.win) ==
                  MPI_SUCCESS);
            for (;;) {
                nv = cmp + 1;
                CHECK(MPI_Compare_and_swap(&nv, &cmp, &old, MPI_INT64_T, t, d, w.win) ==
                      MPI_SUCCESS);
                if (old == cmp) {
                    break;
                }
                cmp = old;
            }
            CHECK(MPI_Fetch_and_op(&done, &dres, MPI_DOUBLE, t,
                                   w.disp0[t] + ATOM_N * (MPI_Aint)sizeof(int64_t) +
                                       i * (MPI_Aint)sizeof(double),
                                   MPI_SUM, w.win) == MPI_SUCCESS);
            singles += 4;
        }
        if (k % bulk_every == rank % bulk_every) {
            CHECK(MPI_Accumulate(ones, ATOM_N, MPI_INT64_T, t, w.disp0[t], ATOM_N, MPI_INT64_T,
                                 MPI_SUM, w.win) == MPI_SUCCESS);
            CHECK(MPI_Get_accumulate(ones, ATOM_N, MPI_INT64_T, res, ATOM_N, MPI_INT64_T, t,
                                     w.disp0[t], ATOM_N, MPI_INT64_T, MPI_SUM, w.win) ==
                  MPI_SUCCESS);
            for (i = 0; i < ATOM_N; ++i) {
                dones[i] = 1.0;
            }
            CHECK(MPI_Accumulate(dones, ATOM_N, MPI_DOUBLE, t,
                                 w.disp0[t] + ATOM_N * (MPI_Aint)sizeof(int64_t), ATOM_N,
                                 MPI_DOUBLE, MPI_SUM, w.win) == MPI_SUCCESS);
            bulk_calls += 2;
        }
        MPI_Win_flush(t, w.win);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Allreduce(&bulk_calls, &all_bulk, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&singles, &all_singles, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == t) {
        long per_hot_int = all_singles / ATOM_HOT / 4 * 3, per_hot_dbl = all_singles / ATOM_HOT / 4;

        win_read_own(&w, own, 0, ATOM_N * sizeof(int64_t));
        win_read_own(&w, ownd, ATOM_N * sizeof(int64_t), ATOM_N * sizeof(double));
        for (i = 0; i < ATOM_N; ++i) {
            int64_t expect = all_bulk + (i < ATOM_HOT ? per_hot_int : 0);
            double expectd = (double)(all_bulk / 2 + (i < ATOM_HOT ? per_hot_dbl : 0));

            if (own[i] != expect || ownd[i] != expectd) {
                fprintf(stderr, "[rank %d] %s atomicity: element %d is %lld / %g, expected "
                        "%lld / %g\n", rank, flavor_name[flavor], i, (long long)own[i],
                        ownd[i], (long long)expect, expectd);
                CHECK(own[i] == expect);
                CHECK(ownd[i] == expectd);
                break;
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    free(ones);
    free(res);
    free(own);
    free(ownd);
    free(dones);
}

/* ---- 5. large contiguous accumulates, several transfer chunks each ------------------------ */

#define BIG_N 200000 /* int64 elements: 1.6 MB, four chunks of the combine */

/* Every rank adds (rank + 1) * (i % 7 + 1) to element i of every target at once, then reads a
 * neighbour's elements back with a NO_OP get_accumulate: each sum is exact and the read
 * matches. */
static void test_big(int flavor)
{
    int64_t *add = malloc(BIG_N * sizeof(int64_t)), *got = malloc(BIG_N * sizeof(int64_t));
    int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
    int i, t, bad = -1;
    win_t w;

    for (i = 0; i < BIG_N; ++i) {
        add[i] = (int64_t)(rank + 1) * (i % 7 + 1);
    }
    win_open(&w, flavor, BIG_N * sizeof(int64_t));
    MPI_Win_lock_all(0, w.win);
    for (t = 0; t < nranks; ++t) {
        int tt = (rank + t) % nranks;

        CHECK(MPI_Accumulate(add, BIG_N, MPI_INT64_T, tt, w.disp0[tt], BIG_N, MPI_INT64_T,
                             MPI_SUM, w.win) == MPI_SUCCESS);
    }
    MPI_Win_flush_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    t = (rank + 1) % nranks;
    CHECK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, got, BIG_N, MPI_INT64_T, t, w.disp0[t], BIG_N,
                             MPI_INT64_T, MPI_NO_OP, w.win) == MPI_SUCCESS);
    MPI_Win_unlock_all(w.win);
    for (i = 0; i < BIG_N && bad < 0; ++i) {
        if (got[i] != tri * (i % 7 + 1)) {
            bad = i;
        }
    }
    win_read_own(&w, add, 0, BIG_N * sizeof(int64_t));
    for (i = 0; i < BIG_N && bad < 0; ++i) {
        if (add[i] != tri * (i % 7 + 1)) {
            bad = i;
        }
    }
    if (bad >= 0) {
        fprintf(stderr, "[rank %d] %s large accumulate: element %d is %lld (read %lld), "
                "expected %lld\n", rank, flavor_name[flavor], bad, (long long)add[bad],
                (long long)got[bad], (long long)(tri * (bad % 7 + 1)));
    }
    CHECK(bad < 0);
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    free(add);
    free(got);
}

/* ---- 6. accumulate ordering from one origin ------------------------------------------------ */

/* Rank r updates element 0 (and for two-element steps element 1) of its slot at rank r + 1:
 * nobody else touches that slot, so every value is known in advance. */
static void test_ordering(int flavor)
{
    const int steps = 300;
    int t = (rank + 1) % nranks, i;
    MPI_Aint slot = (MPI_Aint)rank * 2 * sizeof(uint64_t);
    uint64_t expect[2] = {0, 0}, v, two[2], got, old;
    win_t w;

    win_open(&w, flavor, (size_t)nranks * 2 * sizeof(uint64_t));
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win);
    for (i = 0; i < steps; ++i) {
        MPI_Op op;

        v = (uint64_t)i * 2654435761u + 7;
        switch (i % 8) {
        case 0:  op = MPI_SUM;     expect[0] += v;                              break;
        case 1:  op = MPI_PROD;    v = 3 + i % 5; expect[0] *= v;               break;
        case 2:  op = MPI_BXOR;    expect[0] ^= v;                              break;
        case 3:  op = MPI_REPLACE; v = (uint64_t)i << 20; expect[0] = v;        break;
        case 4:  op = MPI_MAX;     v = expect[0] + (i % 2 ? 5 : 0); expect[0] = v; break;
        case 5:  op = MPI_BOR;     expect[0] |= v;                              break;
        case 6:  op = MPI_BAND;    v |= 0xff00ff00ull; expect[0] &= v;          break;
        default: op = MPI_SUM;     break;
        }
        if (i % 8 == 7) {
            two[0] = v;
            two[1] = v / 3;
            expect[0] += two[0];
            expect[1] += two[1];
            CHECK(MPI_Accumulate(two, 2, MPI_UINT64_T, t, w.disp0[t] + slot, 2, MPI_UINT64_T,
                                 MPI_SUM, w.win) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Accumulate(&v, 1, MPI_UINT64_T, t, w.disp0[t] + slot, 1, MPI_UINT64_T, op,
                                 w.win) == MPI_SUCCESS);
        }
        /* Reads from the same origin come after the updates before them (raw). */
        if (i % 2 == 0) {
            got = 0;
            CHECK(MPI_Get_accumulate(NULL, 0, MPI_DATATYPE_NULL, &got, 1, MPI_UINT64_T, t,
                                     w.disp0[t] + slot, 1, MPI_UINT64_T, MPI_NO_OP,
                                     w.win) == MPI_SUCCESS);
            CHECK(got == expect[0]);
        } else {
            uint64_t one = 1;

            old = 0;
            CHECK(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, t, w.disp0[t] + slot, MPI_SUM,
                                   w.win) == MPI_SUCCESS);
            CHECK(old == expect[0]);
            expect[0] += 1;
        }
        if (i % 50 == 49) {
            CHECK(MPI_Win_flush(t, w.win) == MPI_SUCCESS);
        }
    }
    MPI_Win_unlock(t, w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* what rank - 1 wrote into this rank's window */
    {
        int from = (rank + nranks - 1) % nranks;
        uint64_t mine[2], want[2];

        win_read_own(&w, mine, (size_t)from * 2 * sizeof(uint64_t), sizeof(mine));
        MPI_Sendrecv(expect, 2, MPI_UINT64_T, t, 7, want, 2, MPI_UINT64_T, from, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(mine[0] == want[0] && mine[1] == want[1]);
        if (mine[0] != want[0] || mine[1] != want[1]) {
            fprintf(stderr, "rank %d (%s): ordering: slot of rank %d holds %llu %llu, expected "
                    "%llu %llu\n", rank, flavor_name[flavor], from,
                    (unsigned long long)mine[0], (unsigned long long)mine[1],
                    (unsigned long long)want[0], (unsigned long long)want[1]);
        }
    }
    win_close(&w);
}

int main(int argc, char **argv)
{
    int f;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (f = 0; f < F_COUNT; ++f) {
        test_repeated(f);
        test_pairs(f);
        test_args(f);
        test_atomicity(f);
        test_big(f);
        test_ordering(f);
    }
    return mpi_test_finish("test_acc_semantics");
}
