/*
 * Dynamic windows with thousands of attached regions.
 *
 * Every rank attaches NREG small regions (in shuffled order, with gaps between them) and, in a
 * second buffer, 4 adjacent blocks per rank attached one by one.  Then:
 *  1. random accesses: every rank puts to a random region of a random target (itself
 *     included), in the 8-byte lane that belongs to it, gets it back and checks it; at the end
 *     each target checks every lane of every region against what its origins last wrote;
 *     then memory from MPI_Win_allocate (a longer packed key) is attached and used;
 *  2. spans: put, get, accumulate, get_accumulate, fetch_and_op and compare_and_swap of data
 *     that crosses from one attached region into the next (2 and 4 regions), contiguous and
 *     with a vector datatype;
 *  3. churn: in rounds, every rank detaches a set of its regions that all ranks can compute;
 *     accesses to them must fail with MPI_ERR_RMA_RANGE, accesses to the others succeed with
 *     the right data; then the regions are attached again;
 *  4. every region detached, one attached again and used, then detached.
 * Usage: test_dynamic_many [NREG]  (default 4096); DYN_MANY_THREADS=K (MPI_THREAD_MULTIPLE):
 * K threads of every rank make the churn phase's accesses at once, so that one thread's table
 * refresh meets another thread's access.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define LANES    8      /* 8-byte lanes per region: one per origin rank modulo 8 */
#define RSZ      (LANES * 8)
#define ADJ      4      /* adjacent blocks per origin in the adjacent buffer */
#define ITERS    1500
#define ROUNDS   12
#define MAX_THREADS 8

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Whether region @p i of @p target is detached in churn round @p round. */
static int churn_gone(int target, int round, int i)
{
    uint64_t s = 0x9E3779B97F4A7C15ull ^ ((uint64_t)target << 32) ^ (uint64_t)(round + 1) ^
                 ((uint64_t)i << 12);
    int k;

    for (k = 0; k < 3; ++k) {
        rng_next(&s);
    }
    return s % 8 == 0;
}

/* What one thread of the churn phase needs. */
typedef struct churn_arg {
    MPI_Win        win;
    const MPI_Aint *bases;
    int            rank, n, nreg, round, tid, nthreads;
    uint64_t       seed;
} churn_arg_t;

/* Random accesses to the regions i with i % nthreads == tid (threads never share a lane):
 * detached ones must be refused, attached ones must hold what was put. */
static void *churn_accesses(void *p)
{
    churn_arg_t *a = p;
    int iter, lane = a->rank % LANES;

    for (iter = 0; iter < 100; ++iter) {
        uint64_t v = ((uint64_t)a->rank << 48) | ((uint64_t)a->round << 24) |
                     ((uint64_t)a->tid << 16) | (uint64_t)iter, back = 0;
        int t = (int)(rng_next(&a->seed) % (uint64_t)a->n), gone, i;
        int mine = (a->nreg - a->tid + a->nthreads - 1) / a->nthreads;
        MPI_Aint disp;

        if (mine <= 0) {
            break;
        }
        i = (int)(rng_next(&a->seed) % (uint64_t)mine) * a->nthreads + a->tid;
        gone = churn_gone(t, a->round, i);
        disp = a->bases[2 * t] + (MPI_Aint)i * 2 * RSZ + lane * 8;
        CHECK_CLASS(MPI_Put(&v, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, a->win),
                    gone ? MPI_ERR_RMA_RANGE : MPI_SUCCESS);
        MPI_Win_flush(t, a->win);
        CHECK_CLASS(MPI_Get(&back, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, a->win),
                    gone ? MPI_ERR_RMA_RANGE : MPI_SUCCESS);
        MPI_Win_flush(t, a->win);
        if (!gone && a->n <= LANES) {
            CHECK(back == v);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, n, nreg, i, t, r, iter, lane, nthreads, provided;
    const char *env;
    char *sparse, *adj;
    MPI_Aint mine[2], *bases;
    uint64_t seed, *expect, *got_expect;
    int *order;
    MPI_Win win;

    env = getenv("DYN_MANY_THREADS");
    nthreads = env != NULL ? atoi(env) : 1;
    nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    if (nthreads > 1) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            nthreads = 1;
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    nreg = argc > 1 ? atoi(argv[1]) : 4096;
    lane = rank % LANES;
    seed = 0x1234567ull + (uint64_t)rank * 7919;

    /* region i lives at sparse + 2 * i * RSZ: a gap of RSZ bytes after each */
    sparse = calloc((size_t)nreg * 2, RSZ);
    adj = calloc((size_t)n * ADJ, RSZ);
    order = malloc(sizeof(int) * nreg);
    bases = malloc(sizeof(MPI_Aint) * 2 * n);
    expect = calloc((size_t)n * nreg, sizeof(uint64_t));     /* [target][region]: my lane */
    got_expect = calloc((size_t)n * nreg, sizeof(uint64_t)); /* [origin][region]: my memory */
    CHECK(sparse && adj && order && bases && expect && got_expect);

    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(mpi_test_is_gpuic(win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (i = 0; i < nreg; ++i) {
        order[i] = i;
    }
    for (i = nreg - 1; i > 0; --i) {
        int j = (int)(rng_next(&seed) % (uint64_t)(i + 1)), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (i = 0; i < nreg; ++i) {
        CHECK_CLASS(MPI_Win_attach(win, sparse + (size_t)order[i] * 2 * RSZ, RSZ), MPI_SUCCESS);
    }
    for (i = 0; i < n * ADJ; ++i) {
        CHECK_CLASS(MPI_Win_attach(win, adj + (size_t)i * RSZ, RSZ), MPI_SUCCESS);
    }
    MPI_Get_address(sparse, &mine[0]);
    MPI_Get_address(adj, &mine[1]);
    MPI_Allgather(mine, 2, MPI_AINT, bases, 2, MPI_AINT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. random accesses, each to my lane of a random region of a random target */
    MPI_Win_lock_all(0, win);
    for (iter = 0; iter < ITERS; ++iter) {
        uint64_t v = ((uint64_t)rank << 48) | (uint64_t)(iter + 1), back = 0;
        MPI_Aint disp;

        t = (int)(rng_next(&seed) % (uint64_t)n);
        i = (int)(rng_next(&seed) % (uint64_t)nreg);
        disp = bases[2 * t] + (MPI_Aint)i * 2 * RSZ + lane * 8;
        CHECK_CLASS(MPI_Put(&v, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK_CLASS(MPI_Get(&back, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        if (n <= LANES) {
            CHECK(back == v);
        }
        expect[(size_t)t * nreg + i] = v;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (n <= LANES) {
        int bad = 0, o;

        MPI_Alltoall(expect, nreg, MPI_UINT64_T, got_expect, nreg, MPI_UINT64_T,
                     MPI_COMM_WORLD);
        for (o = 0; o < n; ++o) {
            for (i = 0; i < nreg; ++i) {
                uint64_t have;
                memcpy(&have, sparse + (size_t)i * 2 * RSZ + (o % LANES) * 8, 8);
                bad += have != got_expect[(size_t)o * nreg + i];
                /* the gap after each region is never written */
                memcpy(&have, sparse + (size_t)i * 2 * RSZ + RSZ + (o % LANES) * 8, 8);
                bad += have != 0;
            }
        }
        if (bad) {
            fprintf(stderr, "[rank %d] %d lanes differ from what their origins wrote\n", rank,
                    bad);
        }
        CHECK(bad == 0);
    }

    /* 1b. memory UCX allocated (MPI_Win_allocate) packs a longer key than malloc'd memory:
     * attaching it after thousands of regions moves the table to wider entries */
    {
        MPI_Win wa;
        char *amem;
        MPI_Aint aaddr, *aall = malloc(sizeof(MPI_Aint) * n);

        MPI_Win_allocate(RSZ, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &amem, &wa);
        memset(amem, 0, RSZ);
        CHECK_CLASS(MPI_Win_attach(win, amem, RSZ), MPI_SUCCESS);
        MPI_Get_address(amem, &aaddr);
        MPI_Allgather(&aaddr, 1, MPI_AINT, aall, 1, MPI_AINT, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        for (t = 0; t < n; ++t) {
            uint64_t v = 0x5A5A0000ull + (uint64_t)rank, back = 0;
            MPI_Aint disp[2] = {aall[t] + lane * 8,
                                bases[2 * t] + (MPI_Aint)(nreg / 2) * 2 * RSZ + lane * 8};
            int k;

            for (k = 0; k < 2; ++k) {
                CHECK_CLASS(MPI_Put(&v, 1, MPI_UINT64_T, t, disp[k], 1, MPI_UINT64_T, win),
                            MPI_SUCCESS);
                MPI_Win_flush(t, win);
                CHECK_CLASS(MPI_Get(&back, 1, MPI_UINT64_T, t, disp[k], 1, MPI_UINT64_T, win),
                            MPI_SUCCESS);
                MPI_Win_flush(t, win);
                CHECK(n > LANES || back == v);
            }
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_CLASS(MPI_Win_detach(win, amem), MPI_SUCCESS);
        MPI_Win_free(&wa);
        free(aall);
    }

    /* 2. accesses that span adjacent attached regions: my 4 blocks at every target */
    MPI_Win_lock_all(0, win);
    for (t = 0; t < n; ++t) {
        MPI_Aint mybase = bases[2 * t + 1] + (MPI_Aint)rank * ADJ * RSZ;
        uint64_t out[3 * LANES], back[3 * LANES], add[4] = {1, 2, 3, 4}, old[4];
        MPI_Datatype vec;
        int k;

        for (k = 0; k < 3 * LANES; ++k) {
            out[k] = ((uint64_t)rank << 40) | ((uint64_t)t << 20) | (uint64_t)k;
        }
        /* 16 bytes across the boundary of blocks 0 and 1 */
        CHECK_CLASS(MPI_Put(out, 2, MPI_UINT64_T, t, mybase + RSZ - 8, 2, MPI_UINT64_T, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        memset(back, 0, sizeof(back));
        CHECK_CLASS(MPI_Get(back, 2, MPI_UINT64_T, t, mybase + RSZ - 8, 2, MPI_UINT64_T, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK(back[0] == out[0] && back[1] == out[1]);
        /* 3 blocks' worth from the middle of block 0 into block 3 (4 regions) */
        CHECK_CLASS(MPI_Put(out, 3 * LANES, MPI_UINT64_T, t, mybase + RSZ / 2, 3 * LANES,
                            MPI_UINT64_T, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        memset(back, 0, sizeof(back));
        CHECK_CLASS(MPI_Get(back, 3 * LANES, MPI_UINT64_T, t, mybase + RSZ / 2, 3 * LANES,
                            MPI_UINT64_T, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK(memcmp(back, out, sizeof(out)) == 0);
        /* a vector target type whose blocks fall on both sides of each boundary */
        MPI_Type_vector(3 * LANES / 2, 1, 2, MPI_UINT64_T, &vec);
        MPI_Type_commit(&vec);
        CHECK_CLASS(MPI_Put(out, 3 * LANES / 2, MPI_UINT64_T, t, mybase + 8, 1, vec, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        memset(back, 0, sizeof(back));
        CHECK_CLASS(MPI_Get(back, 3 * LANES / 2, MPI_UINT64_T, t, mybase + 8, 1, vec, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK(memcmp(back, out, sizeof(uint64_t) * 3 * LANES / 2) == 0);
        MPI_Type_free(&vec);
        /* accumulate and get_accumulate across blocks 1 and 2 */
        CHECK_CLASS(MPI_Put(out, 4, MPI_UINT64_T, t, mybase + 2 * RSZ - 16, 4, MPI_UINT64_T,
                            win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK_CLASS(MPI_Accumulate(add, 4, MPI_UINT64_T, t, mybase + 2 * RSZ - 16, 4,
                                   MPI_UINT64_T, MPI_SUM, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK_CLASS(MPI_Get_accumulate(add, 4, MPI_UINT64_T, old, 4, MPI_UINT64_T, t,
                                       mybase + 2 * RSZ - 16, 4, MPI_UINT64_T, MPI_SUM, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        for (k = 0; k < 4; ++k) {
            CHECK(old[k] == out[k] + add[k]);
        }
        memset(back, 0, sizeof(back));
        CHECK_CLASS(MPI_Get(back, 4, MPI_UINT64_T, t, mybase + 2 * RSZ - 16, 4, MPI_UINT64_T,
                            win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        for (k = 0; k < 4; ++k) {
            CHECK(back[k] == out[k] + 2 * add[k]);
        }
        /* fetch_and_op and compare_and_swap on an int64 across the boundary of blocks 2 and 3
         * (under the target's accumulate lock: it is not aligned) */
        {
            int64_t one = 1, prev = 0, cmp, swap = -5, init = 1000 + rank;
            MPI_Aint at = mybase + 3 * RSZ - 4;

            CHECK_CLASS(MPI_Put(&init, 1, MPI_INT64_T, t, at, 1, MPI_INT64_T, win),
                        MPI_SUCCESS);
            MPI_Win_flush(t, win);
            CHECK_CLASS(MPI_Fetch_and_op(&one, &prev, MPI_INT64_T, t, at, MPI_SUM, win),
                        MPI_SUCCESS);
            MPI_Win_flush(t, win);
            CHECK(prev == init);
            cmp = init + 1;
            CHECK_CLASS(MPI_Compare_and_swap(&swap, &cmp, &prev, MPI_INT64_T, t, at, win),
                        MPI_SUCCESS);
            MPI_Win_flush(t, win);
            CHECK(prev == init + 1);
            prev = 0;
            CHECK_CLASS(MPI_Get(&prev, 1, MPI_INT64_T, t, at, 1, MPI_INT64_T, win),
                        MPI_SUCCESS);
            MPI_Win_flush(t, win);
            CHECK(prev == swap);
        }
        /* past the last adjacent block of the whole buffer: not attached */
        if (rank == n - 1) {
            CHECK_CLASS(MPI_Put(out, 2, MPI_UINT64_T, t, mybase + ADJ * RSZ - 8, 2,
                                MPI_UINT64_T, win), MPI_ERR_RMA_RANGE);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. churn: detach a computable set, check refusals and data, attach again */
    for (r = 0; r < ROUNDS; ++r) {
        for (i = 0; i < nreg; ++i) {
            if (churn_gone(rank, r, i)) {
                CHECK_CLASS(MPI_Win_detach(win, sparse + (size_t)i * 2 * RSZ), MPI_SUCCESS);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        {
            churn_arg_t args[MAX_THREADS];
            pthread_t th[MAX_THREADS];
            int k;

            for (k = 0; k < nthreads; ++k) {
                args[k] = (churn_arg_t){win, bases, rank, n, nreg, r, k, nthreads,
                                        seed + (uint64_t)k * 104729};
                if (k > 0) {
                    pthread_create(&th[k], NULL, churn_accesses, &args[k]);
                }
            }
            churn_accesses(&args[0]);
            for (k = 1; k < nthreads; ++k) {
                pthread_join(th[k], NULL);
            }
            seed = args[0].seed;
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < nreg; ++i) {
            if (churn_gone(rank, r, i)) {
                CHECK_CLASS(MPI_Win_attach(win, sparse + (size_t)i * 2 * RSZ, RSZ), MPI_SUCCESS);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 4. almost empty again: detach everything, attach one region back, use it, detach it
     * (the table keeps its size; freed slots are reused) */
    for (i = 0; i < nreg; ++i) {
        CHECK_CLASS(MPI_Win_detach(win, sparse + (size_t)i * 2 * RSZ), MPI_SUCCESS);
    }
    CHECK_CLASS(MPI_Win_attach(win, sparse + (size_t)(nreg - 1) * 2 * RSZ, RSZ), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (t = 0; t < n; ++t) {
        uint64_t v = 0xABCD0000ull + (uint64_t)rank, back = 0;
        MPI_Aint disp = bases[2 * t] + (MPI_Aint)(nreg - 1) * 2 * RSZ + lane * 8;

        CHECK_CLASS(MPI_Put(&v, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, win), MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK_CLASS(MPI_Get(&back, 1, MPI_UINT64_T, t, disp, 1, MPI_UINT64_T, win),
                    MPI_SUCCESS);
        MPI_Win_flush(t, win);
        CHECK(n > LANES || back == v);
        CHECK_CLASS(MPI_Put(&v, 1, MPI_UINT64_T, t, bases[2 * t] + lane * 8, 1, MPI_UINT64_T,
                            win), MPI_ERR_RMA_RANGE);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_CLASS(MPI_Win_detach(win, sparse + (size_t)(nreg - 1) * 2 * RSZ), MPI_SUCCESS);
    for (i = 0; i < n * ADJ; ++i) {
        CHECK_CLASS(MPI_Win_detach(win, adj + (size_t)i * RSZ), MPI_SUCCESS);
    }
    MPI_Win_free(&win);
    free(got_expect);
    free(expect);
    free(bases);
    free(order);
    free(adj);
    free(sparse);
    return mpi_test_finish("test_dynamic_many");
}
