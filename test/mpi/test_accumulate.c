/*
 * The accumulate family on MPI_Win_allocate windows (mapped: CPU atomics) and MPI_Win_create
 * windows (UCX, under the accumulate lock):
 *  1. every predefined op on every predefined datatype it is defined for, all ranks
 *     accumulating into every element at once; the expected value is MPI_Reduce_local of the
 *     same contributions (small integer values keep floating-point sums exact);
 *  2. MPI_REPLACE leaves one rank's value, MPI_NO_OP (get_accumulate) returns the current one;
 *  3. exactly-once atomicity: concurrent fetch_and_op(SUM, 1) results are all distinct,
 *     mixed with multi-element accumulates and compare_and_swap increments on the same words;
 *  4. derived datatypes on origin, target and result sides; count 0; MPI_PROC_NULL;
 *  5. request-based forms.
 */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define NELEM 16
#define MAXSZ 32 /* largest predefined element we test (long double int pair) */

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind; /* which ops apply */
} dtype_t;

enum { K_INT = 1, K_FLOAT = 2, K_COMPLEX = 4, K_LOGICAL = 8, K_BYTE = 16, K_PAIR = 32 };

static const struct {
    const char *name;
    MPI_Op op;
    int kinds;
} ops[] = {
    {"MAX", MPI_MAX, K_INT | K_FLOAT},       {"MIN", MPI_MIN, K_INT | K_FLOAT},
    {"SUM", MPI_SUM, K_INT | K_FLOAT | K_COMPLEX},
    {"PROD", MPI_PROD, K_INT | K_FLOAT | K_COMPLEX},
    {"LAND", MPI_LAND, K_INT | K_LOGICAL},   {"LOR", MPI_LOR, K_INT | K_LOGICAL},
    {"LXOR", MPI_LXOR, K_INT | K_LOGICAL},   {"BAND", MPI_BAND, K_INT | K_BYTE},
    {"BOR", MPI_BOR, K_INT | K_BYTE},        {"BXOR", MPI_BXOR, K_INT | K_BYTE},
    {"MAXLOC", MPI_MAXLOC, K_PAIR},          {"MINLOC", MPI_MINLOC, K_PAIR},
};

static dtype_t types[64];
static int ntypes;

static void add_type(const char *name, MPI_Datatype dt, int kind)
{
    types[ntypes].name = name;
    types[ntypes].dt = dt;
    types[ntypes].kind = kind;
    ntypes++;
}

static void make_types(void)
{
    add_type("CHAR", MPI_SIGNED_CHAR, K_INT);
    add_type("UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, K_INT);
    add_type("SHORT", MPI_SHORT, K_INT);
    add_type("UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, K_INT);
    add_type("INT", MPI_INT, K_INT);
    add_type("UNSIGNED", MPI_UNSIGNED, K_INT);
    add_type("LONG", MPI_LONG, K_INT);
    add_type("UNSIGNED_LONG", MPI_UNSIGNED_LONG, K_INT);
    add_type("LONG_LONG", MPI_LONG_LONG, K_INT);
    add_type("INT8_T", MPI_INT8_T, K_INT);
    add_type("UINT16_T", MPI_UINT16_T, K_INT);
    add_type("INT32_T", MPI_INT32_T, K_INT);
    add_type("UINT64_T", MPI_UINT64_T, K_INT);
    add_type("FLOAT", MPI_FLOAT, K_FLOAT);
    add_type("DOUBLE", MPI_DOUBLE, K_FLOAT);
    add_type("LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLOAT);
    add_type("C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_COMPLEX);
    add_type("C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_COMPLEX);
    add_type("C_BOOL", MPI_C_BOOL, K_LOGICAL);
    add_type("BYTE", MPI_BYTE, K_BYTE);
    add_type("2INT", MPI_2INT, K_PAIR);
    add_type("FLOAT_INT", MPI_FLOAT_INT, K_PAIR);
    add_type("DOUBLE_INT", MPI_DOUBLE_INT, K_PAIR);
    add_type("LONG_INT", MPI_LONG_INT, K_PAIR);
    add_type("SHORT_INT", MPI_SHORT_INT, K_PAIR);
    add_type("LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, K_PAIR);
}

/* Writes a small value v (0..7) as element i of an array of type t. */
static void set_elem(const dtype_t *t, void *buf, int i, int v)
{
    MPI_Aint lb, ext;
    char *p;

    MPI_Type_get_extent(t->dt, &lb, &ext);
    p = (char *)buf + i * ext;
    memset(p, 0, ext);
    if (t->dt == MPI_SIGNED_CHAR || t->dt == MPI_INT8_T) *(int8_t *)p = (int8_t)v;
    else if (t->dt == MPI_UNSIGNED_CHAR || t->dt == MPI_BYTE) *(uint8_t *)p = (uint8_t)v;
    else if (t->dt == MPI_SHORT) *(short *)p = (short)v;
    else if (t->dt == MPI_UNSIGNED_SHORT || t->dt == MPI_UINT16_T) *(uint16_t *)p = (uint16_t)v;
    else if (t->dt == MPI_INT || t->dt == MPI_INT32_T) *(int *)p = v;
    else if (t->dt == MPI_UNSIGNED) *(unsigned *)p = (unsigned)v;
    else if (t->dt == MPI_LONG) *(long *)p = v;
    else if (t->dt == MPI_UNSIGNED_LONG) *(unsigned long *)p = (unsigned long)v;
    else if (t->dt == MPI_LONG_LONG) *(long long *)p = v;
    else if (t->dt == MPI_UINT64_T) *(uint64_t *)p = (uint64_t)v;
    else if (t->dt == MPI_FLOAT) *(float *)p = (float)v;
    else if (t->dt == MPI_DOUBLE) *(double *)p = v;
    else if (t->dt == MPI_LONG_DOUBLE) *(long double *)p = v;
    else if (t->dt == MPI_C_FLOAT_COMPLEX) *(float _Complex *)p = v + (v % 3) * I;
    else if (t->dt == MPI_C_DOUBLE_COMPLEX) *(double _Complex *)p = v + (v % 3) * I;
    else if (t->dt == MPI_C_BOOL) *(bool *)p = v & 1;
    else if (t->dt == MPI_2INT) { ((int *)p)[0] = v; ((int *)p)[1] = i + v; }
    else if (t->dt == MPI_FLOAT_INT) { struct { float a; int b; } *q = (void *)p; q->a = v; q->b = i + v; }
    else if (t->dt == MPI_DOUBLE_INT) { struct { double a; int b; } *q = (void *)p; q->a = v; q->b = i + v; }
    else if (t->dt == MPI_LONG_INT) { struct { long a; int b; } *q = (void *)p; q->a = v; q->b = i + v; }
    else if (t->dt == MPI_SHORT_INT) { struct { short a; int b; } *q = (void *)p; q->a = v; q->b = i + v; }
    else if (t->dt == MPI_LONG_DOUBLE_INT) { struct { long double a; int b; } *q = (void *)p; q->a = v; q->b = i + v; }
}

/* Compares two arrays of n elements field by field, so that padding never counts. */
static int elems_equal(const dtype_t *t, const void *a, const void *b, int n)
{
    int size;
    MPI_Aint lb, ext;

    MPI_Type_size(t->dt, &size);
    MPI_Type_get_extent(t->dt, &lb, &ext);
    for (int i = 0; i < n; ++i) {
        const char *p = (const char *)a + i * ext, *q = (const char *)b + i * ext;
        if (t->dt == MPI_LONG_DOUBLE) {
            if (*(const long double *)p != *(const long double *)q) return 0;
        } else if (t->dt == MPI_LONG_DOUBLE_INT) {
            const struct { long double a; int b; } *x = (const void *)p, *y = (const void *)q;
            if (x->a != y->a || x->b != y->b) return 0;
        } else if (t->dt == MPI_DOUBLE_INT) {
            const struct { double a; int b; } *x = (const void *)p, *y = (const void *)q;
            if (x->a != y->a || x->b != y->b) return 0;
        } else if (t->dt == MPI_LONG_INT) {
            const struct { long a; int b; } *x = (const void *)p, *y = (const void *)q;
            if (x->a != y->a || x->b != y->b) return 0;
        } else if (t->dt == MPI_SHORT_INT) {
            const struct { short a; int b; } *x = (const void *)p, *y = (const void *)q;
            if (x->a != y->a || x->b != y->b) return 0;
        } else if (memcmp(p, q, size) != 0) {
            return 0;
        }
    }
    return 1;
}

static int contribution(int rank, int op, int i)
{
    return 1 + (rank * 3 + op + i) % 3; /* 1..3: products of 8 ranks stay small */
}

static void all_ops_all_types(MPI_Win win, void *base, int rank, int n, const char *wname)
{
    char origin[NELEM * MAXSZ], expect[NELEM * MAXSZ], got[NELEM * MAXSZ];

    for (int ti = 0; ti < ntypes; ++ti) {
        const dtype_t *t = &types[ti];
        for (int oi = 0; oi < (int)(sizeof(ops) / sizeof(ops[0])); ++oi) {
            if (!(ops[oi].kinds & t->kind)) {
                continue;
            }
            /* target init: rank 0's window, value 2 in every element */
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                for (int i = 0; i < NELEM; ++i) set_elem(t, base, i, 2);
            }
            MPI_Win_lock_all(0, win);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < NELEM; ++i) set_elem(t, origin, i, contribution(rank, oi, i));
            int rc = MPI_Accumulate(origin, NELEM, t->dt, 0, 0, NELEM, t->dt, ops[oi].op, win);
            CHECK(rc == MPI_SUCCESS);
            MPI_Win_flush(0, win);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Win_sync(win);
                for (int i = 0; i < NELEM; ++i) set_elem(t, expect, i, 2);
                for (int r = 0; r < n; ++r) {
                    for (int i = 0; i < NELEM; ++i) set_elem(t, origin, i, contribution(r, oi, i));
                    MPI_Reduce_local(origin, expect, NELEM, t->dt, ops[oi].op);
                }
                /* read back through the window too (get_accumulate with MPI_NO_OP) */
                MPI_Get_accumulate(NULL, 0, t->dt, got, NELEM, t->dt, 0, 0, NELEM, t->dt,
                                   MPI_NO_OP, win);
                int ok = elems_equal(t, base, expect, NELEM) && elems_equal(t, got, expect, NELEM);
                if (!ok) {
                    fprintf(stderr, "%s: %s on %s wrong\n", wname, ops[oi].name, t->name);
                }
                CHECK(ok);
            }
            MPI_Win_unlock_all(win);
        }
    }
}

static void replace_and_fetch(MPI_Win win, long *base, int rank, int n)
{
    long mine[4], old[4];

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) base[0] = base[1] = base[2] = base[3] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < 4; ++i) mine[i] = 100 + rank;
    MPI_Get_accumulate(mine, 4, MPI_LONG, old, 4, MPI_LONG, 0, 0, 4, MPI_LONG, MPI_REPLACE, win);
    MPI_Win_flush(0, win);
    for (int i = 0; i < 4; ++i) CHECK(old[i] == -1 || (old[i] >= 100 && old[i] < 100 + n));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_sync(win);
        for (int i = 0; i < 4; ++i) CHECK(base[i] >= 100 && base[i] < 100 + n);
    }
}

#define ROUNDS 300

static void atomicity(MPI_Win win, long *base, int rank, int n)
{
    long one = 1, got, *seen = calloc((size_t)ROUNDS * n, sizeof(long));
    long ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) memset(base, 0, 16 * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < ROUNDS; ++i) {
        /* word 0: fetch_and_op; words 0..9: 10-element accumulate; word 1: CAS increments */
        MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        seen[i] = got;
        if (i % 3 == 0) {
            MPI_Accumulate(ten, 10, MPI_LONG, 0, 0, 10, MPI_LONG, MPI_SUM, win);
        }
        if (i % 5 == 0) {
            long cur = 0, next, prev;
            MPI_Fetch_and_op(NULL, &cur, MPI_LONG, 0, 1, MPI_NO_OP, win);
            MPI_Win_flush(0, win);
            for (;;) {
                next = cur + 1;
                MPI_Compare_and_swap(&next, &cur, &prev, MPI_LONG, 0, 1, win);
                MPI_Win_flush(0, win);
                if (prev == cur) break;
                cur = prev;
            }
        }
    }
    MPI_Win_unlock_all(win);
    long *all = malloc(sizeof(long) * ROUNDS * n);
    MPI_Gather(seen, ROUNDS, MPI_LONG, all, ROUNDS, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long acc_rounds = (ROUNDS + 2) / 3, cas_rounds = (ROUNDS + 4) / 5;
        long total_fop = (long)ROUNDS * n;
        MPI_Win_sync(win);
        CHECK(base[0] == total_fop + acc_rounds * n);
        CHECK(base[1] == acc_rounds * n + cas_rounds * n);
        for (int w = 2; w < 10; ++w) CHECK(base[w] == acc_rounds * n);
        CHECK(base[10] == 0);
        /* fetch_and_op results: distinct values (the accumulates add 1s in between) */
        char *hit = calloc(total_fop + acc_rounds * n + 1, 1);
        int dup = 0;
        for (long k = 0; k < total_fop; ++k) {
            if (all[k] < 0 || all[k] > total_fop + acc_rounds * n || hit[all[k]]++) dup++;
        }
        CHECK(dup == 0);
        free(hit);
    }
    free(all);
    free(seen);
}

static void derived_and_edges(MPI_Win win, int *base, int rank, int n)
{
    MPI_Datatype vec;
    int src[8], res[16], peer = (rank + 1) % n;
    MPI_Request req;

    MPI_Type_vector(4, 1, 3, MPI_INT, &vec); /* 4 ints, stride 3 */
    MPI_Type_commit(&vec);
    for (int i = 0; i < 64; ++i) base[i] = i;
    for (int i = 0; i < 8; ++i) src[i] = 1000 * (i + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    /* contiguous origin -> vector target at disp 10: ints 10, 13, 16, 19 */
    MPI_Accumulate(src, 4, MPI_INT, peer, 10, 1, vec, MPI_SUM, win);
    /* vector result <- contiguous target at disp 40 */
    for (int i = 0; i < 16; ++i) res[i] = -1;
    MPI_Get_accumulate(src, 4, MPI_INT, res, 1, vec, peer, 40, 4, MPI_INT, MPI_SUM, win);
    MPI_Win_flush(peer, win);
    CHECK(res[0] == 40 && res[3] == 41 && res[6] == 42 && res[9] == 43);
    CHECK(res[1] == -1 && res[2] == -1 && res[10] == -1);
    /* count 0 and MPI_PROC_NULL are no-ops */
    CHECK(MPI_Accumulate(src, 0, MPI_INT, peer, 0, 0, MPI_INT, MPI_SUM, win) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(src, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, win) ==
          MPI_SUCCESS);
    /* request-based forms */
    CHECK(MPI_Raccumulate(src, 1, MPI_INT, peer, 60, 1, MPI_INT, MPI_SUM, win, &req) ==
          MPI_SUCCESS);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    int old = -1;
    CHECK(MPI_Rget_accumulate(src, 1, MPI_INT, &old, 1, MPI_INT, peer, 61, 1, MPI_INT,
                              MPI_REPLACE, win, &req) == MPI_SUCCESS);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(old == 61);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    CHECK(base[10] == 1010 && base[13] == 2013 && base[16] == 3016 && base[19] == 4019);
    CHECK(base[11] == 11 && base[12] == 12);
    CHECK(base[40] == 1040 && base[43] == 4043);
    CHECK(base[60] == 1060 && base[61] == 1000);
    /* fence epoch too */
    MPI_Win_fence(0, win);
    MPI_Accumulate(src, 1, MPI_INT, peer, 62, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(base[62] == 1062);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    int rank, n;
    void *base, *mem;
    MPI_Win win;
    size_t bytes = 64 * 1024;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    make_types();
    for (int flavor = 0; flavor < 2; ++flavor) {
        const char *wname = flavor == 0 ? "allocate" : "create";
        mem = NULL;
        if (flavor == 0) {
            MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        } else {
            mem = calloc(1, bytes);
            base = mem;
            MPI_Win_create(base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        CHECK(mpi_test_is_gpuic(win));
        all_ops_all_types(win, base, rank, n, wname);
        replace_and_fetch(win, base, rank, n);
        MPI_Win_free(&win);
        free(mem);
        /* windows with element displacements for the rest */
        if (flavor == 0) {
            MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        } else {
            mem = calloc(1, bytes);
            base = mem;
            MPI_Win_create(base, bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        atomicity(win, base, rank, n);
        MPI_Win_free(&win);
        free(mem);
        mem = NULL;
        if (flavor == 0) {
            MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        } else {
            mem = calloc(1, bytes);
            base = mem;
            MPI_Win_create(base, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        derived_and_edges(win, base, rank, n);
        MPI_Win_free(&win);
        free(mem);
    }
    return mpi_test_finish("test_accumulate");
}
