/*
 * MPI_Put and MPI_Get with derived datatypes on the origin side, the target side and both:
 * vector, indexed, hindexed, struct, subarray, resized with a nonzero lower bound.  The expected
 * result is what MPI's own message passing makes of the same (buffer, count, datatype) pairs:
 * a send of the origin description received into the target description.  Then one layout of
 * 1000 pieces (more than a batch of cross-memory copies holds) both ways.  The window is
 * MPI_Win_allocate memory, or with GPUIC_TEST_WIN_CREATE=1 MPI_Win_create memory (same-node
 * peers: cross-memory copies, gathered per call, and whole-span reads for dense gets).
 */
#include <stdlib.h>

#include "mpi_test.h"

#define WIN_DOUBLES 4096

typedef struct {
    const char *name;
    MPI_Datatype type;
    int count;
} layout_t;

static int nlayouts;
static layout_t layouts[16];

static void add(const char *name, MPI_Datatype t, int count)
{
    if (t != MPI_DOUBLE) {
        MPI_Type_commit(&t);
    }
    layouts[nlayouts].name = name;
    layouts[nlayouts].type = t;
    layouts[nlayouts].count = count;
    nlayouts++;
}

/* Every layout holds 96 doubles in total and spans less than 1024 doubles. */
static void make_layouts(void)
{
    MPI_Datatype t, u;
    int blens[4] = {3, 1, 8, 12}, displs[4] = {0, 5, 9, 40};
    MPI_Aint hdispls[4] = {0, 48, 96, 400};
    int sizes[2] = {16, 16}, subsizes[2] = {8, 12}, starts[2] = {3, 2};
    MPI_Aint sdispl[2] = {0, 64};
    MPI_Datatype stypes[2];
    int sblens[2] = {2, 6};

    add("contiguous", MPI_DOUBLE, 96);
    MPI_Type_vector(12, 8, 11, MPI_DOUBLE, &t);
    add("vector", t, 1);
    MPI_Type_indexed(4, blens, displs, MPI_DOUBLE, &t); /* 24 doubles */
    add("indexed", t, 4);
    MPI_Type_create_hindexed(4, blens, hdispls, MPI_DOUBLE, &t);
    add("hindexed", t, 4);
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
    add("subarray", t, 1);
    /* a struct of two runs of one type (MPI requires matching type signatures) */
    MPI_Type_contiguous(1, MPI_DOUBLE, &stypes[0]);
    stypes[1] = MPI_DOUBLE;
    MPI_Type_create_struct(2, sblens, sdispl, stypes, &t); /* 8 doubles */
    MPI_Type_free(&stypes[0]);
    add("struct", t, 12);
    /* 2 doubles at byte offset 16, extent 48, lower bound 8 */
    MPI_Type_create_hindexed(1, (int[]){2}, (MPI_Aint[]){16}, MPI_DOUBLE, &u);
    MPI_Type_create_resized(u, 8, 48, &t);
    MPI_Type_free(&u);
    add("resized-lb", t, 48);
}

/* Fills what MPI message passing produces for target layout tl receiving origin layout ol. */
static void expected(const double *origin, const layout_t *ol, double *target, const layout_t *tl)
{
    MPI_Sendrecv(origin, ol->count, ol->type, 0, 7, target, tl->count, tl->type, 0, 7,
                 MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, n, peer;
    double *base, *origin, *ref, *got, *created = NULL;
    MPI_Win win;
    MPI_Datatype sparse;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    peer = (rank + 1) % n;
    make_layouts();
    origin = malloc(WIN_DOUBLES * sizeof(double));
    ref = malloc(WIN_DOUBLES * sizeof(double));
    got = malloc(WIN_DOUBLES * sizeof(double));
    if (getenv("GPUIC_TEST_WIN_CREATE") != NULL) {
        base = malloc(WIN_DOUBLES * sizeof(double));
        MPI_Win_create(base, WIN_DOUBLES * sizeof(double), sizeof(double), MPI_INFO_NULL,
                       MPI_COMM_WORLD, &win);
        created = base;
    } else {
        MPI_Win_allocate(WIN_DOUBLES * sizeof(double), sizeof(double), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &base, &win);
    }
    CHECK(mpi_test_is_gpuic(win));

    for (int o = 0; o < nlayouts; ++o) {
        for (int t = 0; t < nlayouts; ++t) {
            const layout_t *ol = &layouts[o], *tl = &layouts[t];
            /* put: origin layout ol -> target layout tl, at displacement 100 */
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                origin[i] = rank * 100000.0 + o * 1000 + t * 10 + i * 0.5;
                base[i] = -1.0;
                ref[i] = -1.0;
            }
            MPI_Win_fence(0, win);
            MPI_Put(origin, ol->count, ol->type, peer, 100, tl->count, tl->type, win);
            MPI_Win_fence(0, win);
            /* my window was written by rank-1 with its origin values */
            int writer = (rank + n - 1) % n;
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                origin[i] = writer * 100000.0 + o * 1000 + t * 10 + i * 0.5;
            }
            expected(origin, ol, ref + 100, tl);
            int bad = 0;
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                bad += base[i] != ref[i];
            }
            if (bad) {
                fprintf(stderr, "[rank %d] put %s -> %s: %d wrong doubles\n", rank, ol->name,
                        tl->name, bad);
            }
            CHECK(bad == 0);

            /* get: target layout tl (in the peer's window, at 200) -> origin layout ol */
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                base[i] = rank * 7.0 + i;
                got[i] = -2.0;
                ref[i] = -2.0;
            }
            MPI_Win_fence(0, win);
            MPI_Get(got, ol->count, ol->type, peer, 200, tl->count, tl->type, win);
            MPI_Win_fence(0, win);
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                origin[i] = peer * 7.0 + i; /* the peer's window contents */
            }
            expected(origin + 200, tl, ref, ol);
            bad = 0;
            for (int i = 0; i < WIN_DOUBLES; ++i) {
                bad += got[i] != ref[i];
            }
            if (bad) {
                fprintf(stderr, "[rank %d] get %s <- %s: %d wrong doubles\n", rank, ol->name,
                        tl->name, bad);
            }
            CHECK(bad == 0);
        }
    }
    /* 1000 doubles to and from every third double of the peer's window, at displacement 10 */
    MPI_Type_vector(1000, 1, 3, MPI_DOUBLE, &sparse);
    MPI_Type_commit(&sparse);
    for (int i = 0; i < WIN_DOUBLES; ++i) {
        origin[i] = rank * 3.0 + i * 0.25;
        base[i] = -1.0;
    }
    MPI_Win_fence(0, win);
    MPI_Put(origin, 1000, MPI_DOUBLE, peer, 10, 1, sparse, win);
    MPI_Win_fence(0, win);
    {
        int writer = (rank + n - 1) % n, bad = 0;

        for (int i = 0; i < WIN_DOUBLES; ++i) {
            int k = (i - 10) / 3;
            double want = i >= 10 && (i - 10) % 3 == 0 && k < 1000 ? writer * 3.0 + k * 0.25
                                                                     : -1.0;
            bad += base[i] != want;
        }
        if (bad) {
            fprintf(stderr, "[rank %d] put of 1000 pieces: %d wrong doubles\n", rank, bad);
        }
        CHECK(bad == 0);
    }
    for (int i = 0; i < WIN_DOUBLES; ++i) {
        base[i] = rank * 5.0 + i;
        got[i] = -2.0;
    }
    MPI_Win_fence(0, win);
    MPI_Get(got, 1000, MPI_DOUBLE, peer, 10, 1, sparse, win);
    MPI_Win_fence(0, win);
    {
        int bad = 0;

        for (int i = 0; i < WIN_DOUBLES; ++i) {
            bad += got[i] != (i < 1000 ? peer * 5.0 + 10 + 3 * i : -2.0);
        }
        if (bad) {
            fprintf(stderr, "[rank %d] get of 1000 pieces: %d wrong doubles\n", rank, bad);
        }
        CHECK(bad == 0);
    }
    MPI_Type_free(&sparse);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Win_free(&win);
    free(created);
    for (int i = 0; i < nlayouts; ++i) {
        if (layouts[i].type != MPI_DOUBLE) {
            MPI_Type_free(&layouts[i].type);
        }
    }
    free(origin);
    free(ref);
    free(got);
    return mpi_test_finish("test_datatypes");
}
