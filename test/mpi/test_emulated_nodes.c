/*
 * Emulated nodes (MCA parameter osc_gpuic_emulate_nodes = N, read here through MPI_T):
 *
 * - MPIX_Win_gpuic_target_path for every flavor: a peer whose world rank / N differs from ours
 *   is served by UCX (create, allocate, dynamic windows, on MPI_COMM_WORLD and on a
 *   communicator whose ranks run backwards, since the emulated node follows the world rank);
 *   shared windows keep direct mappings to every process (the real node);
 * - MPI_Win_shared_query answers size 0 for such a peer on an allocate window, and memory that
 *   holds the peer's data where it reports a direct mapping;
 * - no byte to such a peer moves by mapping or cross-memory copy (MPI_T counters);
 * - the data of put, get, accumulate (one element and a block), get_accumulate, fetch_and_op
 *   and compare_and_swap under exclusive locks, lock_all, fence and PSCW, on create, allocate,
 *   dynamic and shared windows.
 *
 * Any N works, 0 included (every peer is then on this node).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"
#include "mpix_gpuic.h"

enum flavor { FL_CREATE, FL_ALLOCATE, FL_DYNAMIC, FL_SHARED, FL_COUNT };
enum sync { SY_LOCK, SY_LOCK_ALL, SY_FENCE, SY_PSCW, SY_COUNT };

static const char *flavor_names[FL_COUNT] = {"create", "allocate", "dynamic", "shared"};
static const char *sync_names[SY_COUNT] = {"lock", "lock_all", "fence", "pscw"};

#define BULK 8 /* elements of the block accumulate */

static int world_rank, nodes_n, direct_on;

/* Window layout, in int64_t elements, for a communicator of n processes. */
static int slot_put(int r) { return r; }
static int slot_acc(int n) { return n; }
static int slot_fop(int n) { return n + 1; }
static int slot_cas(int n) { return n + 2; }
static int slot_bulk(int n) { return n + 3; }
static int slots(int n) { return n + 3 + BULK; }

static int64_t put_value(int origin, int target, int round)
{
    return (int64_t)round * 1000003 + origin * 1009 + target * 7 + 1;
}

/* A control variable of the component, int or bool, read through MPI_T (-1 when it cannot
 * be).  A bool fills only the first byte of the zeroed int (little-endian hosts). */
static int cvar_int(const char *name)
{
    int provided, index = -1, count = 0, value = 0, ok = 0;
    MPI_T_cvar_handle handle;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return -1;
    }
    if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
        ok = count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS;
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return ok ? value : -1;
}

/* True when world rank @p w is on this process's emulated node. */
static int same_node(int w)
{
    return nodes_n == 0 || w / nodes_n == world_rank / nodes_n;
}

/* A window of one flavor and where its memory is: base (local) and each rank's address for
 * displacements (dynamic windows; 0 elsewhere). */
typedef struct testwin {
    MPI_Win  win;
    MPI_Comm comm;
    int      flavor, me, n;
    int64_t  *base;
    MPI_Aint *addr; /* per rank: address of its memory (dynamic), else 0 */
} testwin_t;

static void testwin_create(testwin_t *t, MPI_Comm comm, int flavor)
{
    size_t bytes;

    t->comm = comm;
    t->flavor = flavor;
    MPI_Comm_rank(comm, &t->me);
    MPI_Comm_size(comm, &t->n);
    bytes = (size_t)slots(t->n) * sizeof(int64_t);
    t->addr = calloc(t->n, sizeof(MPI_Aint));
    t->base = NULL;
    switch (flavor) {
    case FL_CREATE:
        t->base = calloc(1, bytes);
        MPI_Win_create(t->base, bytes, sizeof(int64_t), MPI_INFO_NULL, comm, &t->win);
        break;
    case FL_ALLOCATE:
        MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, comm, &t->base, &t->win);
        break;
    case FL_SHARED:
        MPI_Win_allocate_shared(bytes, sizeof(int64_t), MPI_INFO_NULL, comm, &t->base, &t->win);
        break;
    default: {
        MPI_Aint mine;

        t->base = calloc(1, bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &t->win);
        MPI_Win_attach(t->win, t->base, bytes);
        MPI_Get_address(t->base, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, t->addr, 1, MPI_AINT, comm);
        break;
    }
    }
    CHECK(mpi_test_is_gpuic(t->win));
}

static void testwin_free(testwin_t *t)
{
    if (t->flavor == FL_DYNAMIC) {
        MPI_Win_detach(t->win, t->base);
    }
    MPI_Win_free(&t->win);
    if (t->flavor == FL_CREATE || t->flavor == FL_DYNAMIC) {
        free(t->base);
    }
    free(t->addr);
}

/* Displacement of element @p slot at rank @p r. */
static MPI_Aint disp(const testwin_t *t, int r, int slot)
{
    if (t->flavor == FL_DYNAMIC) {
        return t->addr[r] + (MPI_Aint)slot * (MPI_Aint)sizeof(int64_t);
    }
    return slot;
}

/* The paths MPIX_Win_gpuic_target_path reports, and MPI_Win_shared_query's answers. */
static void check_paths(const testwin_t *t)
{
    int r, path;
    char seen[64] = "";

    for (r = 0; r < t->n; ++r) {
        int w = mpi_test_world_rank(t->comm, r);

        path = -1;
        CHECK(MPIX_Win_gpuic_target_path(t->win, r, &path) == MPI_SUCCESS);
        if (r < (int)sizeof(seen) - 1) {
            seen[r] = path == MPIX_GPUIC_PATH_SELF ? 's' : path == MPIX_GPUIC_PATH_DIRECT ? 'd'
                      : path == MPIX_GPUIC_PATH_UCX ? 'u' : path == MPIX_GPUIC_PATH_CMA ? 'c'
                      : '?';
        }
        if (r == t->me) {
            CHECK(path == MPIX_GPUIC_PATH_SELF);
        } else if (t->flavor == FL_SHARED) {
            /* the real node: a shared window's processes map each other */
            CHECK(path == (direct_on ? MPIX_GPUIC_PATH_DIRECT : MPIX_GPUIC_PATH_UCX));
        } else if (!same_node(w)) {
            if (path != MPIX_GPUIC_PATH_UCX) {
                fprintf(stderr, "[world %d] %s window: rank %d (world %d, another emulated "
                        "node) served by path %d, not UCX\n", world_rank,
                        flavor_names[t->flavor], r, w, path);
            }
            CHECK(path == MPIX_GPUIC_PATH_UCX);
        } else {
            /* same node: a mapping where UCX gives one (it depends on its transports), else
             * cross-memory copies for create or allocate memory UCX could not map, where the
             * system lets them through */
            CHECK(path == MPIX_GPUIC_PATH_DIRECT || path == MPIX_GPUIC_PATH_UCX ||
                  (path == MPIX_GPUIC_PATH_CMA && direct_on &&
                   (t->flavor == FL_CREATE || t->flavor == FL_ALLOCATE)));
        }
        if (t->flavor != FL_DYNAMIC && r != t->me) {
            MPI_Aint size = -1;
            int du = 0;
            int64_t *q = (int64_t *)1;

            CHECK(MPI_Win_shared_query(t->win, r, &size, &du, &q) == MPI_SUCCESS);
            if (path == MPIX_GPUIC_PATH_DIRECT) {
                CHECK(size == (MPI_Aint)(slots(t->n) * sizeof(int64_t)) && q != NULL &&
                      du == (int)sizeof(int64_t));
            } else if (t->flavor != FL_SHARED) {
                CHECK(size == 0 && q == NULL);
            }
        }
    }
    /* for the log: how world rank 0 reaches each rank (s self, d direct, u UCX) */
    if (world_rank == 0) {
        printf("%s window, %d ranks: paths %s\n", flavor_names[t->flavor], t->n, seen);
    }
}

/* Own memory to its starting state, visible to every peer on return (collective). */
static void reset_own(const testwin_t *t)
{
    int i;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t->me, 0, t->win);
    for (i = 0; i < slots(t->n); ++i) {
        t->base[i] = 0;
    }
    t->base[slot_cas(t->n)] = -1;
    MPI_Win_unlock(t->me, t->win);
    MPI_Barrier(t->comm);
}

static MPI_Group others(const testwin_t *t)
{
    MPI_Group g, o;

    MPI_Comm_group(t->comm, &g);
    MPI_Group_excl(g, 1, &t->me, &o);
    MPI_Group_free(&g);
    return o;
}

/* Opens the access epoch of @p sync over every target (collective for all but SY_LOCK, which
 * locks one target at a time in target_begin). */
static void epoch_begin(const testwin_t *t, int sync)
{
    MPI_Group g;

    switch (sync) {
    case SY_LOCK_ALL:
        MPI_Win_lock_all(0, t->win);
        break;
    case SY_FENCE:
        MPI_Win_fence(0, t->win);
        break;
    case SY_PSCW:
        g = others(t);
        MPI_Win_post(g, 0, t->win);
        MPI_Win_start(g, 0, t->win);
        MPI_Group_free(&g);
        break;
    }
}

static void epoch_end(const testwin_t *t, int sync)
{
    switch (sync) {
    case SY_LOCK_ALL:
        MPI_Win_flush_all(t->win);
        MPI_Win_unlock_all(t->win);
        break;
    case SY_FENCE:
        MPI_Win_fence(0, t->win);
        break;
    case SY_PSCW:
        MPI_Win_complete(t->win);
        MPI_Win_wait(t->win);
        break;
    }
}

static void target_begin(const testwin_t *t, int sync, int target)
{
    if (sync == SY_LOCK) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, t->win);
    }
}

static void target_end(const testwin_t *t, int sync, int target)
{
    if (sync == SY_LOCK) {
        MPI_Win_unlock(target, t->win);
    }
}

/* Origin and result buffers of one round, per target: each must live until its epoch ends. */
typedef struct roundbuf {
    int64_t *put, *acc, *bulk, *fop_got, *cas_got;
    int64_t one, minus1, mine_cas;
} roundbuf_t;

/* Every operation of one round from this process to @p target. */
static void ops_to(const testwin_t *t, int target, int round, roundbuf_t *b)
{
    int n = t->n, me = t->me, k;

    for (k = 0; k < BULK; ++k) {
        b->bulk[target * BULK + k] = (int64_t)(me + 1) * (k + 1);
    }
    b->put[target] = put_value(me, target, round);
    b->acc[target] = me + 1;
    MPI_Put(&b->put[target], 1, MPI_INT64_T, target, disp(t, target, slot_put(me)), 1,
            MPI_INT64_T, t->win);
    MPI_Accumulate(&b->acc[target], 1, MPI_INT64_T, target, disp(t, target, slot_acc(n)), 1,
                   MPI_INT64_T, MPI_SUM, t->win);
    MPI_Fetch_and_op(&b->one, &b->fop_got[target], MPI_INT64_T, target,
                     disp(t, target, slot_fop(n)), MPI_SUM, t->win);
    MPI_Compare_and_swap(&b->mine_cas, &b->minus1, &b->cas_got[target], MPI_INT64_T, target,
                         disp(t, target, slot_cas(n)), t->win);
    MPI_Accumulate(&b->bulk[target * BULK], BULK, MPI_INT64_T, target,
                   disp(t, target, slot_bulk(n)), BULK, MPI_INT64_T, MPI_SUM, t->win);
}

/* One round of every operation in one synchronization mode, then the checks. */
static void exercise(const testwin_t *t, int sync, int round)
{
    int n = t->n, me = t->me, r, k;
    int64_t *fop_seen = calloc(n, sizeof(int64_t)), *cas_seen = calloc(n, sizeof(int64_t));
    int64_t *got = calloc((size_t)n * n, sizeof(int64_t)), *acc_got = calloc(n, sizeof(int64_t));
    int64_t sum = 0, winners = 0;
    roundbuf_t b;
    char where[96];

    b.put = calloc(n, sizeof(int64_t));
    b.acc = calloc(n, sizeof(int64_t));
    b.bulk = calloc((size_t)n * BULK, sizeof(int64_t));
    b.fop_got = calloc(n, sizeof(int64_t));
    b.cas_got = calloc(n, sizeof(int64_t));
    b.one = 1;
    b.minus1 = -1;
    b.mine_cas = me;
    snprintf(where, sizeof(where), "%s window, %s, %d ranks", flavor_names[t->flavor],
             sync_names[sync], n);
    reset_own(t);
    epoch_begin(t, sync);
    for (r = 0; r < n; ++r) {
        if (sync == SY_PSCW && r == me) {
            continue; /* PSCW reaches the others; this process's own part comes below */
        }
        target_begin(t, sync, r);
        ops_to(t, r, round, &b);
        target_end(t, sync, r);
    }
    epoch_end(t, sync);
    if (sync == SY_PSCW) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, t->win);
        ops_to(t, me, round, &b);
        MPI_Win_unlock(me, t->win);
    }
    MPI_Barrier(t->comm);

    /* What each origin fetched from this target: a permutation of 0..n-1 for fetch_and_op,
     * one winner for compare_and_swap. */
    MPI_Alltoall(b.fop_got, 1, MPI_INT64_T, fop_seen, 1, MPI_INT64_T, t->comm);
    MPI_Alltoall(b.cas_got, 1, MPI_INT64_T, cas_seen, 1, MPI_INT64_T, t->comm);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, t->win);
    for (r = 0; r < n; ++r) {
        sum += r + 1;
        if (t->base[slot_put(r)] != put_value(r, me, round)) {
            fprintf(stderr, "[world %d] %s: slot of rank %d holds %lld, expected %lld\n",
                    world_rank, where, r, (long long)t->base[slot_put(r)],
                    (long long)put_value(r, me, round));
        }
        CHECK(t->base[slot_put(r)] == put_value(r, me, round));
    }
    CHECK(t->base[slot_acc(n)] == sum);
    CHECK(t->base[slot_fop(n)] == n);
    for (k = 0; k < BULK; ++k) {
        CHECK(t->base[slot_bulk(n) + k] == sum * (k + 1));
    }
    {
        int64_t w = t->base[slot_cas(n)];

        CHECK(w >= 0 && w < n);
        for (r = 0; r < n; ++r) {
            if (cas_seen[r] == -1) {
                winners++;
                CHECK(r == w);
            } else {
                CHECK(cas_seen[r] == w);
            }
        }
        CHECK(winners == 1);
    }
    MPI_Win_unlock(me, t->win);
    {
        int64_t *hits = calloc(n, sizeof(int64_t));

        for (r = 0; r < n; ++r) {
            CHECK(fop_seen[r] >= 0 && fop_seen[r] < n);
            if (fop_seen[r] >= 0 && fop_seen[r] < n) {
                hits[fop_seen[r]]++;
            }
        }
        for (r = 0; r < n; ++r) {
            CHECK(hits[r] == 1);
        }
        free(hits);
    }
    MPI_Barrier(t->comm);

    /* Read everything back from every target, in the same mode. */
    epoch_begin(t, sync);
    for (r = 0; r < n; ++r) {
        if (sync == SY_PSCW && r == me) {
            continue;
        }
        target_begin(t, sync, r);
        MPI_Get(&got[(size_t)r * n], n, MPI_INT64_T, r, disp(t, r, slot_put(0)), n,
                MPI_INT64_T, t->win);
        MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &acc_got[r], 1, MPI_INT64_T, r,
                           disp(t, r, slot_acc(n)), 1, MPI_INT64_T, MPI_NO_OP, t->win);
        target_end(t, sync, r);
    }
    epoch_end(t, sync);
    for (r = 0; r < n; ++r) {
        if (sync == SY_PSCW && r == me) {
            continue;
        }
        for (k = 0; k < n; ++k) {
            CHECK(got[(size_t)r * n + k] == put_value(k, r, round));
        }
        CHECK(acc_got[r] == sum);
    }
    MPI_Barrier(t->comm);
    if (mpi_test_failures > 0) {
        fprintf(stderr, "[world %d] after %s: %d failed checks so far\n", world_rank, where,
                mpi_test_failures);
    }
    free(b.put);
    free(b.acc);
    free(b.bulk);
    free(b.fop_got);
    free(b.cas_got);
    free(fop_seen);
    free(cas_seen);
    free(got);
    free(acc_got);
}

/* A put and a get of 64 KiB (past the cross-memory-copy threshold) to a peer of another
 * emulated node on a create window, each origin in its own part: served by UCX only, never by
 * a mapping or a cross-memory copy (MPI_T counters). */
static void check_counters(MPI_Comm comm)
{
    static const char *names[3] = {"osc_gpuic_ops_direct", "osc_gpuic_ops_cma",
                                   "osc_gpuic_ops_ucx"};
    unsigned long long before[3] = {0}, after[3] = {0};
    int idx[3] = {-1, -1, -1}, provided, num = 0, i, k, count, me, n, target = -1;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[3];
    size_t len = 65536;
    char *mem, *src = malloc(len);
    MPI_Win win;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    mem = calloc(n, len);
    for (i = 0; i < n; ++i) {
        if (!same_node(mpi_test_world_rank(comm, i))) {
            target = i;
            break;
        }
    }
    memset(src, 0x5a, len);
    MPI_Win_create(mem, (MPI_Aint)len * n, 1, MPI_INFO_NULL, comm, &win);
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);
    CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS);
    for (i = 0; i < num; ++i) {
        char name[256], desc[256];
        int nl = sizeof(name), dl = sizeof(desc), verb, cls, bind, ro, cont, at;
        MPI_Datatype dt;
        MPI_T_enum et;

        if (MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &et, desc, &dl, &bind, &ro,
                                &cont, &at) != MPI_SUCCESS) {
            continue;
        }
        for (k = 0; k < 3; ++k) {
            if (strcmp(name, names[k]) == 0) {
                idx[k] = i;
            }
        }
    }
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS);
    for (k = 0; k < 3; ++k) {
        CHECK(idx[k] >= 0);
        CHECK(MPI_T_pvar_handle_alloc(session, idx[k] >= 0 ? idx[k] : 0, NULL, &handles[k],
                                      &count) == MPI_SUCCESS);
        CHECK(MPI_T_pvar_read(session, handles[k], &before[k]) == MPI_SUCCESS);
    }
    if (target >= 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        MPI_Put(src, (int)len, MPI_BYTE, target, (MPI_Aint)len * me, (int)len, MPI_BYTE, win);
        MPI_Win_flush(target, win);
        memset(src, 0, len);
        MPI_Get(src, (int)len, MPI_BYTE, target, (MPI_Aint)len * me, (int)len, MPI_BYTE, win);
        MPI_Win_unlock(target, win);
        CHECK(src[0] == 0x5a && src[len - 1] == 0x5a);
    }
    for (k = 0; k < 3; ++k) {
        CHECK(MPI_T_pvar_read(session, handles[k], &after[k]) == MPI_SUCCESS);
        CHECK(MPI_T_pvar_handle_free(session, &handles[k]) == MPI_SUCCESS);
    }
    CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS);
    MPI_T_finalize();
    if (target >= 0) {
        CHECK(after[0] == before[0]); /* no direct loads and stores */
        CHECK(after[1] == before[1]); /* no cross-memory copies */
        CHECK(after[2] >= before[2] + 2);
    }
    MPI_Win_free(&win);
    free(mem);
    free(src);
}

/* A shared window across emulated nodes: one segment, every part reachable by load/store. */
static void check_shared_segment(void)
{
    testwin_t t;
    int r;

    testwin_create(&t, MPI_COMM_WORLD, FL_SHARED);
    check_paths(&t);
    reset_own(&t);
    MPI_Win_lock_all(0, t.win);
    t.base[0] = 1000 + t.me;
    MPI_Win_sync(t.win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(t.win);
    for (r = 0; r < t.n; ++r) {
        MPI_Aint size = 0;
        int du = 0;
        int64_t *q = NULL;

        CHECK(MPI_Win_shared_query(t.win, r, &size, &du, &q) == MPI_SUCCESS);
        CHECK(q != NULL && size == (MPI_Aint)(slots(t.n) * sizeof(int64_t)));
        if (q != NULL) {
            CHECK(q[0] == 1000 + r);
        }
    }
    MPI_Win_unlock_all(t.win);
    MPI_Barrier(MPI_COMM_WORLD);
    testwin_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Comm comms[2];
    int n, c, f, s, round = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    nodes_n = cvar_int("osc_gpuic_emulate_nodes");
    direct_on = cvar_int("osc_gpuic_direct");
    CHECK(nodes_n >= 0 && direct_on >= 0);
    if (nodes_n < 0) {
        return mpi_test_finish("test_emulated_nodes");
    }
    if (world_rank == 0) {
        printf("osc_gpuic_emulate_nodes=%d: %d emulated node(s) of %d rank(s)\n", nodes_n,
               nodes_n > 0 ? (n + nodes_n - 1) / nodes_n : 1, nodes_n > 0 ? nodes_n : n);
    }
    /* World, and the same processes ranked backwards: paths follow the world rank. */
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - world_rank, &comms[1]);
    for (c = 0; c < 2; ++c) {
        for (f = 0; f < FL_COUNT; ++f) {
            testwin_t t;

            testwin_create(&t, comms[c], f);
            check_paths(&t);
            for (s = 0; s < SY_COUNT; ++s) {
                exercise(&t, s, ++round);
            }
            testwin_free(&t);
        }
    }
    check_counters(comms[1]);
    check_shared_segment();
    MPI_Comm_free(&comms[1]);
    return mpi_test_finish("test_emulated_nodes");
}
