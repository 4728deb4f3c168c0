/*
 * A distributed linked list on a dynamic window (MPI 3.1 sections 11.2.4 and 11.3.4).  Each
 * process appends N elements: it allocates an element, attaches it (one region per element),
 * swaps it in as the list's tail (a word at rank 0) with an atomic, then links the previous
 * tail's next pointer to it.  Elements are attached while other processes access earlier ones,
 * so every origin must refresh its copy of a target's regions when an address is not in it.
 * Finally rank 0 walks the list and checks that every element is in it exactly once.
 *
 * Three rounds, each on a fresh list, differ in how they synchronise and swap:
 *   0: MPI_Win_lock_all, MPI_Fetch_and_op(MPI_REPLACE) on the tail, MPI_Put of the link;
 *   1: a shared lock per target, MPI_Compare_and_swap loop on the tail, MPI_Accumulate
 *      (MPI_REPLACE) of the link; every process also walks the list while it grows, reading
 *      next pointers with MPI_Fetch_and_op(MPI_NO_OP);
 *   2: MPI_Win_lock_all, MPI_Get_accumulate(MPI_REPLACE) on the tail, MPI_Accumulate of the
 *      link;
 *   3: MPI_Win_lock_all and no tail word: a process finds the tail by walking, links its element
 *      by MPI_Compare_and_swap on the tail's next rank (nil to its own), then writes the next
 *      address with MPI_Accumulate(MPI_REPLACE); a process that lost the swap polls that address
 *      with MPI_Get_accumulate(MPI_NO_OP) until it is written, and walks on.
 * Usage: test_linked_list [N]  (elements per process and round, default 24)
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

/* A pointer to an element: 0 is nil, else (rank + 1) << 52 | the element's address. */
#define LL_RANK_SHIFT 52

typedef struct ll_elem {
    uint64_t next;      /* accessed only through RMA once attached */
    int64_t  value;     /* rank * N + i */
    int32_t  next_rank; /* round 3: the next element's rank + 1 (0: nil), swapped in first */
    int32_t  pad;
    uint64_t next_disp; /* round 3: its address, written after next_rank */
} ll_elem_t;

static uint64_t ll_ptr(int rank, void *addr)
{
    MPI_Aint a;

    MPI_Get_address(addr, &a);
    CHECK(((uint64_t)a >> LL_RANK_SHIFT) == 0);
    return ((uint64_t)(rank + 1) << LL_RANK_SHIFT) | (uint64_t)a;
}

static int ll_rank(uint64_t p)
{
    return (int)(p >> LL_RANK_SHIFT) - 1;
}

static MPI_Aint ll_disp(uint64_t p)
{
    return (MPI_Aint)(p & ((1ull << LL_RANK_SHIFT) - 1));
}

/* Reads the next pointer of the element at @p p atomically (it may be linked meanwhile). */
static uint64_t ll_read_next(MPI_Win win, uint64_t p)
{
    uint64_t next = 0, dummy = 0;

    CHECK(MPI_Fetch_and_op(&dummy, &next, MPI_UINT64_T, ll_rank(p),
                           ll_disp(p) + (MPI_Aint)offsetof(ll_elem_t, next), MPI_NO_OP,
                           win) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(ll_rank(p), win) == MPI_SUCCESS);
    return next;
}

/* Swaps @p mine in as the tail; returns the previous tail. */
static uint64_t ll_swap_tail(MPI_Win win, int round, MPI_Aint tail_disp, uint64_t mine)
{
    uint64_t prev = 0, seen = 0;

    switch (round) {
    case 0:
        CHECK(MPI_Fetch_and_op(&mine, &prev, MPI_UINT64_T, 0, tail_disp, MPI_REPLACE, win) ==
              MPI_SUCCESS);
        break;
    case 1:
        /* read the tail, then try to replace what was read until no one came in between */
        CHECK(MPI_Fetch_and_op(&mine, &seen, MPI_UINT64_T, 0, tail_disp, MPI_NO_OP, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
        for (;;) {
            CHECK(MPI_Compare_and_swap(&mine, &seen, &prev, MPI_UINT64_T, 0, tail_disp, win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
            if (prev == seen || mpi_test_failures > 0) {
                break;
            }
            seen = prev;
        }
        break;
    default:
        CHECK(MPI_Get_accumulate(&mine, 1, MPI_UINT64_T, &prev, 1, MPI_UINT64_T, 0, tail_disp, 1,
                                 MPI_UINT64_T, MPI_REPLACE, win) == MPI_SUCCESS);
        break;
    }
    CHECK(MPI_Win_flush(0, win) == MPI_SUCCESS);
    return prev;
}

static void ll_link(MPI_Win win, int round, uint64_t prev, uint64_t mine)
{
    MPI_Aint disp = ll_disp(prev) + (MPI_Aint)offsetof(ll_elem_t, next);

    if (round == 0) {
        CHECK(MPI_Put(&mine, 1, MPI_UINT64_T, ll_rank(prev), disp, 1, MPI_UINT64_T, win) ==
              MPI_SUCCESS);
    } else {
        CHECK(MPI_Accumulate(&mine, 1, MPI_UINT64_T, ll_rank(prev), disp, 1, MPI_UINT64_T,
                             MPI_REPLACE, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush(ll_rank(prev), win) == MPI_SUCCESS);
}

/* Round 3: appends the element at @p mine after the list's tail, found from @p *tail_p. */
static void ll_append_walk(MPI_Win win, uint64_t *tail_p, uint64_t mine)
{
    int32_t nil = 0, me = ll_rank(mine) + 1, seen = 0;
    uint64_t disp = (uint64_t)ll_disp(mine), next = 0, dummy = 0;
    uint64_t tail = *tail_p;
    long polls;

    while (mpi_test_failures == 0) {
        CHECK(MPI_Compare_and_swap(&me, &nil, &seen, MPI_INT32_T, ll_rank(tail),
                                   ll_disp(tail) + (MPI_Aint)offsetof(ll_elem_t, next_rank),
                                   win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(ll_rank(tail), win) == MPI_SUCCESS);
        if (seen == nil) {
            CHECK(MPI_Accumulate(&disp, 1, MPI_UINT64_T, ll_rank(tail),
                                 ll_disp(tail) + (MPI_Aint)offsetof(ll_elem_t, next_disp), 1,
                                 MPI_UINT64_T, MPI_REPLACE, win) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(ll_rank(tail), win) == MPI_SUCCESS);
            *tail_p = mine;
            return;
        }
        /* another process linked first: wait for its address, then move to its element */
        for (polls = 0, next = 0; next == 0 && mpi_test_failures == 0; ++polls) {
            CHECK(MPI_Get_accumulate(&dummy, 1, MPI_UINT64_T, &next, 1, MPI_UINT64_T,
                                     ll_rank(tail),
                                     ll_disp(tail) + (MPI_Aint)offsetof(ll_elem_t, next_disp),
                                     1, MPI_UINT64_T, MPI_NO_OP, win) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(ll_rank(tail), win) == MPI_SUCCESS);
        }
        tail = ((uint64_t)seen << LL_RANK_SHIFT) | next;
    }
}

/* Round 3's list as rank 0 checks it: next_rank and next_disp instead of next. */
static int ll_walk3(MPI_Win win, uint64_t head, int *seen, int n, int max)
{
    uint64_t p = head, disp;
    int32_t r;
    int64_t value;
    int count = 0;

    for (;;) {
        CHECK(MPI_Get(&r, 1, MPI_INT32_T, ll_rank(p),
                      ll_disp(p) + (MPI_Aint)offsetof(ll_elem_t, next_rank), 1, MPI_INT32_T,
                      win) == MPI_SUCCESS);
        CHECK(MPI_Get(&disp, 1, MPI_UINT64_T, ll_rank(p),
                      ll_disp(p) + (MPI_Aint)offsetof(ll_elem_t, next_disp), 1, MPI_UINT64_T,
                      win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(ll_rank(p), win) == MPI_SUCCESS);
        if (r == 0 || r > n || count > max || mpi_test_failures > 0) {
            break;
        }
        p = ((uint64_t)r << LL_RANK_SHIFT) | disp;
        CHECK(MPI_Get(&value, 1, MPI_INT64_T, ll_rank(p),
                      ll_disp(p) + (MPI_Aint)offsetof(ll_elem_t, value), 1, MPI_INT64_T,
                      win) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(ll_rank(p), win) == MPI_SUCCESS);
        CHECK(value >= 0 && value < max);
        if (value >= 0 && value < max) {
            seen[value]++;
        }
        count++;
    }
    return count;
}

/* Walks the list from @p head as far as it is linked; returns the number of elements. */
static int ll_walk(MPI_Win win, uint64_t head, int *seen, int n, int max)
{
    uint64_t p = ll_read_next(win, head);
    int count = 0;
    ll_elem_t e;

    while (p != 0 && count <= max && mpi_test_failures == 0) {
        CHECK(ll_rank(p) >= 0 && ll_rank(p) < n);
        if (ll_rank(p) < 0 || ll_rank(p) >= n) {
            break;
        }
        if (seen != NULL) {
            CHECK(MPI_Get(&e.value, 1, MPI_INT64_T, ll_rank(p),
                          ll_disp(p) + (MPI_Aint)offsetof(ll_elem_t, value), 1, MPI_INT64_T,
                          win) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(ll_rank(p), win) == MPI_SUCCESS);
            CHECK(e.value >= 0 && e.value < max);
            if (e.value >= 0 && e.value < max) {
                seen[e.value]++;
            }
        }
        count++;
        p = ll_read_next(win, p);
    }
    return count;
}

static void ll_round(MPI_Win win, int round, int rank, int n, int per)
{
    ll_elem_t *elems = calloc((size_t)per + 1, sizeof(ll_elem_t));
    uint64_t *tail = calloc(1, sizeof(uint64_t)), head = 0, tailp, mine;
    int total = n * per, i, *seen, count;

    /* rank 0 holds the head (a sentinel element) and the tail word */
    if (rank == 0) {
        CHECK(MPI_Win_attach(win, tail, sizeof(*tail)) == MPI_SUCCESS);
        CHECK(MPI_Win_attach(win, &elems[per], sizeof(ll_elem_t)) == MPI_SUCCESS);
        head = ll_ptr(0, &elems[per]);
        *tail = head;
    }
    MPI_Bcast(&head, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    tailp = rank == 0 ? ll_ptr(0, tail) : 0;
    MPI_Bcast(&tailp, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (round == 3) {
        tailp = head; /* where this process starts looking for the tail */
    }

    if (round != 1) {
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    }
    for (i = 0; i < per && mpi_test_failures == 0; ++i) {
        elems[i].value = (int64_t)rank * per + i;
        elems[i].next = 0;
        CHECK(MPI_Win_attach(win, &elems[i], sizeof(ll_elem_t)) == MPI_SUCCESS);
        mine = ll_ptr(rank, &elems[i]);
        if (round == 3) {
            ll_append_walk(win, &tailp, mine);
            continue;
        }
        if (round == 1) {
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win) == MPI_SUCCESS);
        }
        {
            uint64_t old = ll_swap_tail(win, round, ll_disp(tailp), mine);

            if (round == 1) {
                CHECK(MPI_Win_unlock(0, win) == MPI_SUCCESS);
                CHECK(MPI_Win_lock(MPI_LOCK_SHARED, ll_rank(old), 0, win) == MPI_SUCCESS);
            }
            ll_link(win, round, old, mine);
            if (round == 1) {
                CHECK(MPI_Win_unlock(ll_rank(old), win) == MPI_SUCCESS);
            }
        }
        if (round == 1 && i % 4 == 3) {
            /* walk the list as linked so far, one shared lock per element read */
            uint64_t p = head, next;
            int steps = 0;

            while (p != 0 && steps <= total && mpi_test_failures == 0) {
                CHECK(MPI_Win_lock(MPI_LOCK_SHARED, ll_rank(p), 0, win) == MPI_SUCCESS);
                next = ll_read_next(win, p);
                CHECK(MPI_Win_unlock(ll_rank(p), win) == MPI_SUCCESS);
                p = next;
                steps++;
            }
            CHECK(steps <= total + 1);
        }
    }
    if (round != 1) {
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        seen = calloc((size_t)total, sizeof(int));
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
        count = round == 3 ? ll_walk3(win, head, seen, n, total)
                           : ll_walk(win, head, seen, n, total);
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
        CHECK(count == total);
        for (i = 0; i < total; ++i) {
            if (seen[i] != 1) {
                fprintf(stderr, "round %d: element %d (rank %d's %d) found %d times\n", round, i,
                        i / per, i % per, seen[i]);
                mpi_test_failures++;
                break;
            }
        }
        free(seen);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < per; ++i) {
        MPI_Win_detach(win, &elems[i]);
    }
    if (rank == 0) {
        MPI_Win_detach(win, tail);
        MPI_Win_detach(win, &elems[per]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(elems);
    free(tail);
}

int main(int argc, char **argv)
{
    int rank, n, per = argc > 1 ? atoi(argv[1]) : 24, round;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (round = 0; round < 4 && mpi_test_failures == 0; ++round) {
        ll_round(win, round, rank, n, per > 0 ? per : 1);
    }
    MPI_Win_free(&win);
    return mpi_test_finish("test_linked_list");
}
