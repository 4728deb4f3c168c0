/*
 * Bad input to the host MPI calls on gpuic windows, table-driven.  Each case makes one call
 * (with whatever epoch it needs) from every rank towards the next rank, and states the error
 * class it expects (or MPI_SUCCESS) and which layer decides it: Open MPI's own argument checks
 * (MPI_PARAM_CHECK, before any osc component is called) or gpuic.  After each case every rank
 * checks, as a target, that its window memory holds what the case allows (unchanged for an
 * error) and that the guard bytes around the window, the dynamic window's regions and the
 * origin buffer did not change.
 *
 * Rank 0 prints a Markdown table (contrib/gen-bad-input-doc.sh turns it into
 * docs/bad-input.md); the test fails on any mismatch.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define WIN_BYTES 64
#define GUARD     64
#define OBUF_INTS 32

/* What the processes of one run share with the cases. */
typedef struct bad_ctx {
    int         rank, n, peer;
    MPI_Win     win1;           /* MPI_Win_create, disp_unit 1, over mem + GUARD */
    MPI_Win     win4;           /* the same memory, disp_unit 4 */
    MPI_Win     dyn;            /* dynamic: dyn_mem + GUARD attached */
    MPI_Aint    dyn_peer;       /* the peer's attached region */
    MPI_Aint    gone_peer;      /* a region the peer attached and detached */
    char        *mem, *dyn_mem, *gone_mem;
    int         obuf[GUARD / 4 + OBUF_INTS + GUARD / 4]; /* origin buffer with guards */
} bad_ctx_t;

static int *bad_obuf(bad_ctx_t *t)
{
    return t->obuf + GUARD / 4;
}

/* Pattern every byte of the target side starts with (and keeps, for errors). */
static unsigned char bad_pattern(size_t i)
{
    return (unsigned char)(0xA0 + i % 31);
}

/* ---- the cases: each returns the code of the call under test and ends its epoch ---- */

static int bad_lock(bad_ctx_t *t, MPI_Win win)
{
    return MPI_Win_lock(MPI_LOCK_SHARED, t->peer, 0, win);
}

static int c_put_neg_count(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), -1, MPI_INT, t->peer, 0, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_neg_tcount(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, 0, -1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_huge_count(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), INT_MAX, MPI_INT, t->peer, 0, INT_MAX, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_get_huge_count(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Get(bad_obuf(t), INT_MAX, MPI_INT, t->peer, 0, INT_MAX, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_neg_disp(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, -4, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_disp_end(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, WIN_BYTES, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_straddle(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 2, MPI_INT, t->peer, WIN_BYTES - 4, 2, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_huge_disp(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, (MPI_Aint)1 << 40, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_disp_wraps(bad_ctx_t *t)
{
    /* disp * disp_unit is 2^64 + 4: wrapping would land at byte 4 of the window */
    MPI_Aint disp = (MPI_Aint)(((uint64_t)1 << 62) + 1);
    int rc;
    bad_lock(t, t->win4);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, disp, 1, MPI_INT, t->win4);
    MPI_Win_unlock(t->peer, t->win4);
    return rc;
}

static int c_get_disp_max(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win4);
    rc = MPI_Get(bad_obuf(t), 1, MPI_INT, t->peer, (MPI_Aint)(INTPTR_MAX), 1, MPI_INT, t->win4);
    MPI_Win_unlock(t->peer, t->win4);
    return rc;
}

static int c_put_size_mismatch(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, 0, 1, MPI_DOUBLE, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_int_as_float(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, 0, 1, MPI_FLOAT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_dt_null(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_DATATYPE_NULL, t->peer, 0, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_uncommitted(bad_ctx_t *t)
{
    MPI_Datatype vec;
    int rc;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 2, MPI_INT, t->peer, 0, 1, vec, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&vec);
    return rc;
}

static int c_acc_bad_op(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 1, MPI_DOUBLE, t->peer, 0, 1, MPI_DOUBLE, MPI_BAND,
                        t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_acc_type_mismatch(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 2, MPI_INT, t->peer, 0, 1, MPI_DOUBLE, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_getacc_result_mismatch(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Get_accumulate(bad_obuf(t), 1, MPI_INT, bad_obuf(t) + 4, 2, MPI_INT, t->peer, 0,
                            1, MPI_INT, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_fop_bad_op(bad_ctx_t *t, MPI_Datatype dt, MPI_Op op)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Fetch_and_op(bad_obuf(t), bad_obuf(t) + 4, dt, t->peer, 0, op, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_fop_band_double(bad_ctx_t *t) { return c_fop_bad_op(t, MPI_DOUBLE, MPI_BAND); }
static int c_fop_land_double(bad_ctx_t *t) { return c_fop_bad_op(t, MPI_DOUBLE, MPI_LAND); }
static int c_fop_maxloc_long(bad_ctx_t *t) { return c_fop_bad_op(t, MPI_LONG, MPI_MAXLOC); }

static void bad_user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

static int c_fop_user_op(bad_ctx_t *t)
{
    MPI_Op op;
    int rc;
    MPI_Op_create(bad_user_fn, 1, &op);
    rc = c_fop_bad_op(t, MPI_INT, op);
    MPI_Op_free(&op);
    return rc;
}

static int c_getacc_derived_bad_op(bad_ctx_t *t)
{
    MPI_Datatype c2;
    int rc;
    MPI_Type_contiguous(2, MPI_DOUBLE, &c2);
    MPI_Type_commit(&c2);
    bad_lock(t, t->win1);
    rc = MPI_Get_accumulate(bad_obuf(t), 1, c2, bad_obuf(t) + 8, 1, c2, t->peer, 0, 1, c2,
                            MPI_BXOR, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&c2);
    return rc;
}

static int c_cas_type(bad_ctx_t *t, MPI_Datatype dt)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Compare_and_swap(bad_obuf(t), bad_obuf(t) + 4, bad_obuf(t) + 8, dt, t->peer, 0,
                              t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_cas_double(bad_ctx_t *t) { return c_cas_type(t, MPI_DOUBLE); }
static int c_cas_2int(bad_ctx_t *t) { return c_cas_type(t, MPI_2INT); }
static int c_cas_complex(bad_ctx_t *t) { return c_cas_type(t, MPI_C_FLOAT_COMPLEX); }

static int c_fop_derived(bad_ctx_t *t)
{
    MPI_Datatype c2;
    int rc;
    MPI_Type_contiguous(2, MPI_INT, &c2);
    MPI_Type_commit(&c2);
    bad_lock(t, t->win1);
    rc = MPI_Fetch_and_op(bad_obuf(t), bad_obuf(t) + 4, c2, t->peer, 0, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&c2);
    return rc;
}

static int c_put_win_null(bad_ctx_t *t)
{
    MPI_Win w;
    MPI_Win_create(t->mem + GUARD, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_free(&w);
    return MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, 0, 1, MPI_INT, w);
}

static int c_lock_win_null(bad_ctx_t *t)
{
    return MPI_Win_lock(MPI_LOCK_SHARED, t->peer, 0, MPI_WIN_NULL);
}

static int c_put_no_epoch(bad_ctx_t *t)
{
    return MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, 0, 1, MPI_INT, t->win1);
}

static int c_unlock_no_lock(bad_ctx_t *t)
{
    return MPI_Win_unlock(t->peer, t->win1);
}

static int c_lock_twice(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = bad_lock(t, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_complete_no_start(bad_ctx_t *t)
{
    return MPI_Win_complete(t->win1);
}

static int c_fence_in_lock(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Win_fence(0, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_put_bad_rank(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->n, 0, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_lock_bad_rank(bad_ctx_t *t)
{
    return MPI_Win_lock(MPI_LOCK_SHARED, -5, 0, t->win1);
}

static int c_flush_bad_rank(bad_ctx_t *t)
{
    int rc;
    MPI_Win_lock_all(0, t->win1);
    rc = MPI_Win_flush(t->n, t->win1);
    MPI_Win_unlock_all(t->win1);
    return rc;
}

static int c_lock_bad_type(bad_ctx_t *t)
{
    return MPI_Win_lock(99, t->peer, 0, t->win1);
}

/* Misaligned 8-byte atomics at byte 3: served under the target's accumulate lock. */
static int c_fop_misaligned(bad_ctx_t *t)
{
    int64_t one = 1, old = 0;
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t->peer, 3, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static void e_fop_misaligned(unsigned char *img)
{
    int64_t v;
    memcpy(&v, img + 3, 8);
    v += 1;
    memcpy(img + 3, &v, 8);
}

static int c_cas_misaligned(bad_ctx_t *t)
{
    int64_t cmp, val = 0x1122334455667788, old = 0;
    unsigned char pat[8];
    size_t i;
    int rc;
    for (i = 0; i < 8; ++i) {
        pat[i] = bad_pattern(5 + i);
    }
    memcpy(&cmp, pat, 8);
    bad_lock(t, t->win1);
    rc = MPI_Compare_and_swap(&val, &cmp, &old, MPI_INT64_T, t->peer, 5, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static void e_cas_misaligned(unsigned char *img)
{
    int64_t val = 0x1122334455667788;
    memcpy(img + 5, &val, 8);
}

static int c_dyn_unattached(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->dyn);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, t->dyn_peer + WIN_BYTES + 8, 1, MPI_INT,
                 t->dyn);
    MPI_Win_unlock(t->peer, t->dyn);
    return rc;
}

static int c_dyn_detached(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->dyn);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, t->gone_peer, 1, MPI_INT, t->dyn);
    MPI_Win_unlock(t->peer, t->dyn);
    return rc;
}

static int c_dyn_straddle(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->dyn);
    rc = MPI_Put(bad_obuf(t), 2, MPI_INT, t->peer, t->dyn_peer + WIN_BYTES - 4, 2, MPI_INT,
                 t->dyn);
    MPI_Win_unlock(t->peer, t->dyn);
    return rc;
}

static int c_dyn_neg_disp(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->dyn);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, t->peer, -8, 1, MPI_INT, t->dyn);
    MPI_Win_unlock(t->peer, t->dyn);
    return rc;
}

static int c_put_proc_null(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_acc_proc_null(bad_ctx_t *t)
{
    int rc;
    MPI_Win_fence(0, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 1, MPI_INT, MPI_PROC_NULL, WIN_BYTES * 2, 1, MPI_INT,
                        MPI_SUM, t->win1);
    MPI_Win_fence(0, t->win1);
    return rc;
}

static int c_lock_proc_null(bad_ctx_t *t)
{
    int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, t->win1);
    if (rc == MPI_SUCCESS) {
        MPI_Win_unlock(MPI_PROC_NULL, t->win1);
    }
    return rc;
}

static int c_unlock_proc_null(bad_ctx_t *t)
{
    return MPI_Win_unlock(MPI_PROC_NULL, t->win1);
}

static int c_flush_proc_null(bad_ctx_t *t)
{
    int rc;
    MPI_Win_lock_all(0, t->win1);
    rc = MPI_Win_flush(MPI_PROC_NULL, t->win1);
    MPI_Win_unlock_all(t->win1);
    return rc;
}

/*
 * Spans that wrap 64-bit arithmetic.  The target type strides 2^40 bytes per element, so
 * 2^24 + 1 elements reach 2^64 bytes past the first: (count - 1) * extent wraps to 0 and the
 * span looks like one int.  The origin side is an int of extent 0 repeated (the same bytes, the
 * same size), so the origin never reads past its buffer.
 */
#define BAD_WRAP_COUNT ((1 << 24) + 1)

static void bad_wrap_types(MPI_Datatype *origin, MPI_Datatype *target)
{
    MPI_Type_create_resized(MPI_INT, 0, 0, origin);
    MPI_Type_commit(origin);
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 40, target);
    MPI_Type_commit(target);
}

/* which: 0 put, 1 accumulate */
static int bad_wrap_call(bad_ctx_t *t, int which, MPI_Win win, MPI_Aint disp)
{
    MPI_Datatype o, tt;
    int rc;
    bad_wrap_types(&o, &tt);
    bad_lock(t, win);
    if (which == 0) {
        rc = MPI_Put(bad_obuf(t), BAD_WRAP_COUNT, o, t->peer, disp, BAD_WRAP_COUNT, tt, win);
    } else {
        rc = MPI_Accumulate(bad_obuf(t), BAD_WRAP_COUNT, o, t->peer, disp, BAD_WRAP_COUNT, tt,
                            MPI_SUM, win);
    }
    MPI_Win_unlock(t->peer, win);
    MPI_Type_free(&o);
    MPI_Type_free(&tt);
    return rc;
}

static int c_put_span_wraps(bad_ctx_t *t)
{
    return bad_wrap_call(t, 0, t->win1, 0);
}

static int c_get_span_wraps(bad_ctx_t *t)
{
    MPI_Datatype o, tt;
    int rc;
    /* the result side: ints of extent 0, so that a get that passed writes 4 bytes */
    bad_wrap_types(&o, &tt);
    bad_lock(t, t->win1);
    rc = MPI_Get(bad_obuf(t), BAD_WRAP_COUNT, o, t->peer, 0, BAD_WRAP_COUNT, tt, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&o);
    MPI_Type_free(&tt);
    return rc;
}

static int c_acc_span_wraps(bad_ctx_t *t)
{
    return bad_wrap_call(t, 1, t->win1, 0);
}

static int c_dyn_span_wraps(bad_ctx_t *t)
{
    return bad_wrap_call(t, 0, t->dyn, t->dyn_peer);
}

/* An hvector of 3 ints 2^62 bytes apart: its upper bound, 2^63 + 4, is stored wrapped. */
static int bad_hvector_put(bad_ctx_t *t, int count)
{
    MPI_Datatype hv;
    int rc;
    MPI_Type_create_hvector(count, 1, (MPI_Aint)1 << 62, MPI_INT, &hv);
    MPI_Type_commit(&hv);
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), count, MPI_INT, t->peer, 0, 1, hv, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&hv);
    return rc;
}

static int c_put_hvector_wraps(bad_ctx_t *t)
{
    return bad_hvector_put(t, 3);
}

/* 5 ints 2^62 apart: the upper bound wraps to exactly 4, as if the type were one int. */
static int c_put_hvector_wraps_small(bad_ctx_t *t)
{
    return bad_hvector_put(t, 5);
}

/* A type of 2^40 bytes (never touched) times 2^24: the data size, 2^64, wraps to 0. */
static int c_put_size_wraps(bad_ctx_t *t)
{
    MPI_Datatype mb, tb;
    int rc;
    MPI_Type_contiguous(1 << 20, MPI_BYTE, &mb);
    MPI_Type_contiguous(1 << 20, mb, &tb);
    MPI_Type_commit(&tb);
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 1 << 24, tb, t->peer, 0, 1 << 24, tb, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&tb);
    MPI_Type_free(&mb);
    return rc;
}

static int c_put_count0(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Put(bad_obuf(t), 0, MPI_INT, t->peer, 0, 0, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_get_count0_past_end(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Get(bad_obuf(t), 0, MPI_INT, t->peer, WIN_BYTES + 100, 0, MPI_INT, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

static int c_acc_count0(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 0, MPI_INT, t->peer, 0, 0, MPI_INT, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

/* A datatype of size 0 (a contiguous type of no element) on both sides: nothing to combine,
 * like count 0. */
static int c_acc_size0_type(bad_ctx_t *t)
{
    MPI_Datatype none;
    int rc;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    bad_lock(t, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 1, none, t->peer, 0, 1, none, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    MPI_Type_free(&none);
    return rc;
}

/* Count 0 of MPI_INT at the origin, count 0 of MPI_DOUBLE at the target: Open MPI's own
 * argument check of MPI_Accumulate wants both types built from one and the same predefined
 * type whatever the counts, and refuses the pair before gpuic is called (with
 * mpi_param_check 0 gpuic treats it as the no-op it is). */
static int c_acc_count0_mixed(bad_ctx_t *t)
{
    int rc;
    bad_lock(t, t->win1);
    rc = MPI_Accumulate(bad_obuf(t), 0, MPI_INT, t->peer, 0, 0, MPI_DOUBLE, MPI_SUM, t->win1);
    MPI_Win_unlock(t->peer, t->win1);
    return rc;
}

/* ---- the table ---- */

typedef struct bad_case {
    const char *name;
    const char *call;
    int        expected;                    /* error class, or MPI_SUCCESS */
    const char *decided_by;                 /* "Open MPI" (MPI_PARAM_CHECK) or "gpuic" */
    int        (*run)(bad_ctx_t *t);
    void       (*expect)(unsigned char *img); /* the change a success makes; NULL: none */
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {"negative origin count", "MPI_Put(count=-1)", MPI_ERR_COUNT, "Open MPI", c_put_neg_count, NULL},
    {"negative target count", "MPI_Put(target_count=-1)", MPI_ERR_COUNT, "Open MPI", c_put_neg_tcount, NULL},
    {"huge count (INT_MAX ints)", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_put_huge_count, NULL},
    {"huge count (INT_MAX ints)", "MPI_Get", MPI_ERR_RMA_RANGE, "gpuic", c_get_huge_count, NULL},
    {"negative displacement", "MPI_Put(disp=-4)", MPI_ERR_DISP, "Open MPI", c_put_neg_disp, NULL},
    {"displacement at the window end", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_put_disp_end, NULL},
    {"access straddling the window end", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_put_straddle, NULL},
    {"huge displacement (2^40)", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_put_huge_disp, NULL},
    {"disp * disp_unit overflows to byte 4", "MPI_Put(disp_unit=4)", MPI_ERR_RMA_RANGE, "gpuic", c_put_disp_wraps, NULL},
    {"displacement INTPTR_MAX", "MPI_Get(disp_unit=4)", MPI_ERR_RMA_RANGE, "gpuic", c_get_disp_max, NULL},
    {"origin/target sizes differ (int vs double)", "MPI_Put", MPI_ERR_TYPE, "gpuic", c_put_size_mismatch, NULL},
    {"same size, other type (int vs float)", "MPI_Put", MPI_SUCCESS, "- (bytes copied; signatures not compared)", c_put_int_as_float, NULL},
    {"MPI_DATATYPE_NULL", "MPI_Put", MPI_ERR_TYPE, "Open MPI", c_put_dt_null, NULL},
    {"uncommitted derived datatype", "MPI_Put", MPI_ERR_TYPE, "Open MPI", c_put_uncommitted, NULL},
    {"op not defined for the type (BAND on double)", "MPI_Accumulate", MPI_ERR_OP, "Open MPI", c_acc_bad_op, NULL},
    {"origin 2 int, target 1 double", "MPI_Accumulate", MPI_ERR_ARG, "Open MPI", c_acc_type_mismatch, NULL},
    {"result size differs from origin", "MPI_Get_accumulate", MPI_ERR_TYPE, "gpuic", c_getacc_result_mismatch, NULL},
    {"derived datatype", "MPI_Fetch_and_op", MPI_ERR_TYPE, "gpuic", c_fop_derived, NULL},
    {"op not defined for the type (BAND on double)", "MPI_Fetch_and_op", MPI_ERR_OP, "gpuic", c_fop_band_double, NULL},
    {"op not defined for the type (LAND on double)", "MPI_Fetch_and_op", MPI_ERR_OP, "gpuic", c_fop_land_double, NULL},
    {"op not defined for the type (MAXLOC on long)", "MPI_Fetch_and_op", MPI_ERR_OP, "gpuic", c_fop_maxloc_long, NULL},
    {"user-defined op", "MPI_Fetch_and_op", MPI_ERR_OP, "gpuic", c_fop_user_op, NULL},
    {"BXOR on a contiguous type of doubles", "MPI_Get_accumulate", MPI_ERR_OP, "Open MPI (gpuic: the same with mpi_param_check 0)", c_getacc_derived_bad_op, NULL},
    {"floating-point type (double)", "MPI_Compare_and_swap", MPI_ERR_TYPE, "gpuic", c_cas_double, NULL},
    {"pair type (MPI_2INT)", "MPI_Compare_and_swap", MPI_ERR_TYPE, "gpuic", c_cas_2int, NULL},
    {"complex type", "MPI_Compare_and_swap", MPI_ERR_TYPE, "gpuic", c_cas_complex, NULL},
    {"freed window (MPI_WIN_NULL)", "MPI_Put", MPI_ERR_WIN, "Open MPI", c_put_win_null, NULL},
    {"MPI_WIN_NULL", "MPI_Win_lock", MPI_ERR_WIN, "Open MPI", c_lock_win_null, NULL},
    {"no epoch", "MPI_Put", MPI_ERR_RMA_SYNC, "gpuic", c_put_no_epoch, NULL},
    {"unlock without lock", "MPI_Win_unlock", MPI_ERR_RMA_SYNC, "gpuic", c_unlock_no_lock, NULL},
    {"lock the same target twice", "MPI_Win_lock", MPI_ERR_RMA_SYNC, "gpuic", c_lock_twice, NULL},
    {"complete without start", "MPI_Win_complete", MPI_ERR_RMA_SYNC, "gpuic", c_complete_no_start, NULL},
    {"fence inside a lock epoch", "MPI_Win_fence", MPI_ERR_RMA_SYNC, "gpuic", c_fence_in_lock, NULL},
    {"target rank = size", "MPI_Put", MPI_ERR_RANK, "Open MPI", c_put_bad_rank, NULL},
    {"rank -5", "MPI_Win_lock", MPI_ERR_RANK, "Open MPI", c_lock_bad_rank, NULL},
    {"rank = size", "MPI_Win_flush", MPI_ERR_RANK, "Open MPI", c_flush_bad_rank, NULL},
    {"lock type 99", "MPI_Win_lock", MPI_ERR_LOCKTYPE, "Open MPI", c_lock_bad_type, NULL},
    {"misaligned int64 at byte 3", "MPI_Fetch_and_op(SUM)", MPI_SUCCESS, "gpuic (accumulate lock)", c_fop_misaligned, e_fop_misaligned},
    {"misaligned int64 at byte 5", "MPI_Compare_and_swap", MPI_SUCCESS, "gpuic (accumulate lock)", c_cas_misaligned, e_cas_misaligned},
    {"dynamic: address past the attached region", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_dyn_unattached, NULL},
    {"dynamic: detached region", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_dyn_detached, NULL},
    {"dynamic: straddling the region end", "MPI_Put", MPI_ERR_RMA_RANGE, "gpuic", c_dyn_straddle, NULL},
    {"dynamic: negative address", "MPI_Put(disp=-8)", MPI_ERR_RMA_RANGE, "gpuic", c_dyn_neg_disp, NULL},
    {"MPI_PROC_NULL", "MPI_Put", MPI_SUCCESS, "Open MPI (no-op)", c_put_proc_null, NULL},
    {"MPI_PROC_NULL, disp past the end", "MPI_Accumulate", MPI_SUCCESS, "Open MPI (no-op)", c_acc_proc_null, NULL},
    {"MPI_PROC_NULL (not a communication call)", "MPI_Win_lock", MPI_ERR_RANK, "Open MPI", c_lock_proc_null, NULL},
    {"MPI_PROC_NULL (not a communication call)", "MPI_Win_unlock", MPI_ERR_RANK, "Open MPI", c_unlock_proc_null, NULL},
    {"MPI_PROC_NULL (not a communication call)", "MPI_Win_flush", MPI_ERR_RANK, "gpuic", c_flush_proc_null, NULL},
    {"2^24+1 ints 2^40 apart: span wraps 2^64", "MPI_Put", MPI_ERR_COUNT, "gpuic", c_put_span_wraps, NULL},
    {"2^24+1 ints 2^40 apart: span wraps 2^64", "MPI_Get", MPI_ERR_COUNT, "gpuic", c_get_span_wraps, NULL},
    {"2^24+1 ints 2^40 apart: span wraps 2^64", "MPI_Accumulate", MPI_ERR_COUNT, "gpuic", c_acc_span_wraps, NULL},
    {"dynamic: 2^24+1 ints 2^40 apart", "MPI_Put", MPI_ERR_COUNT, "gpuic", c_dyn_span_wraps, NULL},
    {"hvector(3) of stride 2^62 (bounds stored wrapped)", "MPI_Put", MPI_ERR_TYPE, "gpuic", c_put_hvector_wraps, NULL},
    {"hvector(5) of stride 2^62 (upper bound wraps to 4)", "MPI_Put", MPI_ERR_TYPE, "gpuic", c_put_hvector_wraps_small, NULL},
    {"2^24 elements of 2^40 bytes: size wraps to 0", "MPI_Put", MPI_ERR_COUNT, "gpuic", c_put_size_wraps, NULL},
    {"count 0", "MPI_Put", MPI_SUCCESS, "gpuic (no-op)", c_put_count0, NULL},
    {"count 0, disp past the end", "MPI_Get", MPI_SUCCESS, "gpuic (no-op)", c_get_count0_past_end, NULL},
    {"count 0", "MPI_Accumulate", MPI_SUCCESS, "gpuic (no-op)", c_acc_count0, NULL},
    {"datatype of size 0 (contiguous of 0 ints) on both sides", "MPI_Accumulate", MPI_SUCCESS, "gpuic (no-op)", c_acc_size0_type, NULL},
    {"count 0, int origin and double target", "MPI_Accumulate", MPI_ERR_ARG, "Open MPI (gpuic: no-op with mpi_param_check 0)", c_acc_count0_mixed, NULL},
};

static const char *bad_class_name(int cls)
{
    static char other[32];
    static const struct {
        int cls;
        const char *name;
    } names[] = {
        {MPI_SUCCESS, "MPI_SUCCESS"}, {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
        {MPI_ERR_DISP, "MPI_ERR_DISP"}, {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
        {MPI_ERR_OP, "MPI_ERR_OP"}, {MPI_ERR_WIN, "MPI_ERR_WIN"},
        {MPI_ERR_RANK, "MPI_ERR_RANK"}, {MPI_ERR_ARG, "MPI_ERR_ARG"},
        {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE"}, {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC"},
        {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE"}, {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR"},
        {MPI_ERR_OTHER, "MPI_ERR_OTHER"}, {MPI_ERR_INTERN, "MPI_ERR_INTERN"},
        {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"}, {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (names[i].cls == cls) {
            return names[i].name;
        }
    }
    snprintf(other, sizeof(other), "class %d", cls);
    return other;
}

/* Resets every byte this rank exposes or uses to its pattern. */
static void bad_reset(bad_ctx_t *t)
{
    size_t i;

    for (i = 0; i < GUARD + WIN_BYTES + GUARD; ++i) {
        t->mem[i] = (char)(i >= GUARD && i < GUARD + WIN_BYTES ? bad_pattern(i - GUARD)
                                                             : bad_pattern(i + 7));
        t->dyn_mem[i] = (char)bad_pattern(i + 11);
    }
    for (i = 0; i < WIN_BYTES; ++i) {
        t->gone_mem[i] = (char)bad_pattern(i + 13);
    }
    for (i = 0; i < sizeof(t->obuf) / sizeof(int); ++i) {
        t->obuf[i] = (int)(0x5000 + i);
    }
}

/* True when everything matches bad_reset() except the window bytes a success may change. */
static int bad_memory_intact(bad_ctx_t *t, const bad_case_t *c, int rc)
{
    unsigned char img[WIN_BYTES];
    size_t i;

    for (i = 0; i < WIN_BYTES; ++i) {
        img[i] = bad_pattern(i);
    }
    if (rc == MPI_SUCCESS && c->expect != NULL) {
        c->expect(img);
    }
    if (c->run == c_put_int_as_float && rc == MPI_SUCCESS) {
        memcpy(img, &t->obuf[GUARD / 4], 4); /* the int's bytes, as they are */
    }
    for (i = 0; i < GUARD + WIN_BYTES + GUARD; ++i) {
        if (i >= GUARD && i < GUARD + WIN_BYTES) {
            if ((unsigned char)t->mem[i] != img[i - GUARD]) {
                return 0;
            }
        } else if ((unsigned char)t->mem[i] != bad_pattern(i + 7)) {
            return 0;
        }
        if ((unsigned char)t->dyn_mem[i] != bad_pattern(i + 11)) {
            return 0;
        }
    }
    for (i = 0; i < WIN_BYTES; ++i) {
        if ((unsigned char)t->gone_mem[i] != bad_pattern(i + 13)) {
            return 0;
        }
    }
    /* the origin buffer: results land only in its first OBUF_INTS ints */
    for (i = 0; i < sizeof(t->obuf) / sizeof(int); ++i) {
        if ((i < GUARD / 4 || i >= GUARD / 4 + OBUF_INTS) && t->obuf[i] != (int)(0x5000 + i)) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    bad_ctx_t t;
    MPI_Aint mine[2], *all;
    size_t i, ncases = sizeof(bad_cases) / sizeof(bad_cases[0]);
    int failures = 0;

    MPI_Init(&argc, &argv);
    memset(&t, 0, sizeof(t));
    MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    t.peer = (t.rank + 1) % t.n;
    t.mem = malloc(GUARD + WIN_BYTES + GUARD);
    t.dyn_mem = malloc(GUARD + WIN_BYTES + GUARD);
    t.gone_mem = malloc(WIN_BYTES);
    all = malloc(sizeof(MPI_Aint) * 2 * t.n);
    bad_reset(&t);

    MPI_Win_create(t.mem + GUARD, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &t.win1);
    MPI_Win_create(t.mem + GUARD, WIN_BYTES, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &t.win4);
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &t.dyn);
    CHECK(mpi_test_is_gpuic(t.win1) && mpi_test_is_gpuic(t.win4) && mpi_test_is_gpuic(t.dyn));
    MPI_Win_set_errhandler(t.win1, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(t.win4, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(t.dyn, MPI_ERRORS_RETURN);
    MPI_Win_attach(t.dyn, t.dyn_mem + GUARD, WIN_BYTES);
    MPI_Win_attach(t.dyn, t.gone_mem, WIN_BYTES);
    MPI_Get_address(t.dyn_mem + GUARD, &mine[0]);
    MPI_Get_address(t.gone_mem, &mine[1]);
    MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    t.dyn_peer = all[2 * t.peer];
    t.gone_peer = all[2 * t.peer + 1];
    /* Let every origin cache the peer's table while the region is there, then detach. */
    MPI_Win_lock(MPI_LOCK_SHARED, t.peer, 0, t.dyn);
    MPI_Get(bad_obuf(&t), 1, MPI_INT, t.peer, t.gone_peer, 1, MPI_INT, t.dyn);
    MPI_Win_unlock(t.peer, t.dyn);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_detach(t.dyn, t.gone_mem);

    if (t.rank == 0) {
        printf("| # | case | call | expected | got | memory untouched | decided by |\n");
        printf("|---|---|---|---|---|---|---|\n");
    }
    for (i = 0; i < ncases; ++i) {
        const bad_case_t *c = &bad_cases[i];
        int rc, cls = MPI_SUCCESS, intact, mine_ok, all_ok, cls_min, cls_max;

        bad_reset(&t);
        MPI_Barrier(MPI_COMM_WORLD);
        rc = c->run(&t);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &cls);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* every origin is done before targets look */
        intact = bad_memory_intact(&t, c, cls);
        mine_ok = intact && cls == c->expected;
        MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        MPI_Allreduce(&intact, &intact, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        MPI_Allreduce(&cls, &cls_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&cls, &cls_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!all_ok || cls_min != cls_max) {
            failures++;
        }
        if (t.rank == 0) {
            char got[96];

            snprintf(got, sizeof(got), "%s%s%s", bad_class_name(cls_min),
                     cls_min != cls_max ? " / " : "",
                     cls_min != cls_max ? bad_class_name(cls_max) : "");
            printf("| %zu | %s | `%s` | `%s` | `%s`%s | %s | %s |\n", i + 1, c->name, c->call,
                   bad_class_name(c->expected), got,
                   all_ok && cls_min == cls_max ? "" : " **MISMATCH**", intact ? "yes" : "**NO**",
                   c->decided_by);
            fflush(stdout);
        }
    }
    mpi_test_failures += failures;

    MPI_Win_detach(t.dyn, t.dyn_mem + GUARD);
    MPI_Win_free(&t.dyn);
    MPI_Win_free(&t.win4);
    MPI_Win_free(&t.win1);
    free(all);
    free(t.gone_mem);
    free(t.dyn_mem);
    free(t.mem);
    return mpi_test_finish("test_bad_input");
}
