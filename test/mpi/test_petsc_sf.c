/*
 * test_petsc_sf.c - PETSc's star forests (PetscSF) on MPI windows: a real user of MPI RMA, run
 * unchanged.  With -sf_type window PetscSF moves data by MPI_Get (broadcast), MPI_Accumulate
 * (reduce) and MPI_Get_accumulate (fetch-and-op) whose target datatypes are indexed blocks of
 * the roots each rank reaches; several leaves of one rank meet in one root, so one accumulate
 * names a root several times.  MPI 3.1 calls overlapping target entries erroneous, but PETSc
 * relies on every entry being applied, as the stock components do.
 *
 * The graph: leaf i of rank r points to root (7 i + r) mod 5 of rank (r + i / 6) mod size
 * (six leaves per target rank, at most five roots: repeats at any size).
 * Three rounds of reduce (MPI_SUM), broadcast (MPI_REPLACE) and fetch-and-op (MPI_SUM), each
 * checked exactly against totals computed with MPI_Allreduce.  The window flavor and
 * synchronization come from PETSc options (-sf_window_flavor, -sf_window_sync): see
 * test_petsc_sf.sh.  Prints "test_petsc_sf: PASS" and exits 0 when every value is right.
 */
#include <stdio.h>

#include <petscsf.h>

#define NROOTS 8
#define NLEAVES 24
#define ROUNDS 3
#define MAX_REPORTED 5

static int errors;

static void expect_eq(int rank, const char *what, int round, int i, PetscInt got, PetscInt want)
{
    if (got != want) {
        if (errors < MAX_REPORTED) {
            printf("[%d] %s round %d entry %d: %d, expected %d\n", rank, what, round, i,
                   (int)got, (int)want);
        }
        errors++;
    }
}

/* total[r * NROOTS + k]: what all leaves add to root k of rank r (leaf values from @p leaf) */
static void totals(const PetscSFNode *remote, const PetscInt *leaf, PetscInt *part,
                   PetscInt *total, int size)
{
    int i;

    for (i = 0; i < NROOTS * size; ++i) {
        part[i] = 0;
    }
    for (i = 0; i < NLEAVES; ++i) {
        part[remote[i].rank * NROOTS + remote[i].index] += leaf[i];
    }
    MPI_Allreduce(part, total, NROOTS * size, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD);
}

int main(int argc, char **argv)
{
    PetscMPIInt rank, size;
    PetscSF sf;
    PetscSFNode *remote;
    PetscInt root[NROOTS], before[NROOTS], leaf[NLEAVES], fetched[NLEAVES], *part, *total;
    int i, round, all;

    PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
    MPI_Comm_size(PETSC_COMM_WORLD, &size);
    PetscCall(PetscMalloc1(NLEAVES, &remote));
    PetscCall(PetscMalloc2(NROOTS * size, &part, NROOTS * size, &total));
    for (i = 0; i < NLEAVES; ++i) {
        remote[i].rank = (rank + i / 6) % size;
        remote[i].index = (7 * i + rank) % 5;
    }
    PetscCall(PetscSFCreate(PETSC_COMM_WORLD, &sf));
    PetscCall(PetscSFSetFromOptions(sf));
    PetscCall(PetscSFSetGraph(sf, NROOTS, NLEAVES, NULL, PETSC_COPY_VALUES, remote,
                              PETSC_COPY_VALUES));
    PetscCall(PetscSFSetUp(sf));
    for (round = 0; round < ROUNDS; ++round) {
        /* reduce: every leaf's value summed into its root */
        for (i = 0; i < NROOTS; ++i) {
            root[i] = before[i] = 1000 * rank + i;
        }
        for (i = 0; i < NLEAVES; ++i) {
            leaf[i] = 1 + i + 100 * rank + round;
        }
        totals(remote, leaf, part, total, size);
        PetscCall(PetscSFReduceBegin(sf, MPIU_INT, leaf, root, MPI_SUM));
        PetscCall(PetscSFReduceEnd(sf, MPIU_INT, leaf, root, MPI_SUM));
        for (i = 0; i < NROOTS; ++i) {
            expect_eq(rank, "reduce", round, i, root[i], before[i] + total[rank * NROOTS + i]);
        }
        /* broadcast: every leaf receives its root's value */
        PetscCall(PetscSFBcastBegin(sf, MPIU_INT, root, leaf, MPI_REPLACE));
        PetscCall(PetscSFBcastEnd(sf, MPIU_INT, root, leaf, MPI_REPLACE));
        for (i = 0; i < NLEAVES; ++i) {
            int r = (int)remote[i].rank, k = (int)remote[i].index;
            expect_eq(rank, "bcast", round, i, leaf[i], 1000 * r + k + total[r * NROOTS + k]);
        }
        /* fetch-and-op: every leaf adds 1; each root gains its number of leaves, and the old
         * values the leaves fetched are distinct steps of that root's count */
        for (i = 0; i < NROOTS; ++i) {
            before[i] = root[i];
        }
        for (i = 0; i < NLEAVES; ++i) {
            leaf[i] = 1;
        }
        totals(remote, leaf, part, total, size);
        PetscCall(PetscSFFetchAndOpBegin(sf, MPIU_INT, root, leaf, fetched, MPI_SUM));
        PetscCall(PetscSFFetchAndOpEnd(sf, MPIU_INT, root, leaf, fetched, MPI_SUM));
        for (i = 0; i < NROOTS; ++i) {
            expect_eq(rank, "fetch-and-op", round, i, root[i],
                      before[i] + total[rank * NROOTS + i]);
        }
    }
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, PETSC_COMM_WORLD);
    if (rank == 0) {
        printf("test_petsc_sf: %s (%d wrong values)\n", all == 0 ? "PASS" : "FAIL", all);
    }
    PetscCall(PetscFree2(part, total));
    PetscCall(PetscFree(remote));
    PetscCall(PetscSFDestroy(&sf));
    PetscCall(PetscFinalize());
    return all == 0 ? 0 : 1;
}
