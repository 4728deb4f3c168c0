/*
 * Global Arrays (Debian's libglobalarrays-dev), unchanged, on gpuic windows: GA runs on
 * ARMCI-MPI, so its one-sided patch operations become MPI RMA.  Patches are chosen to cross the
 * owners' blocks, so most of the traffic is remote; every result is checked after GA_Sync.
 */
#include <ga.h>
#include <macdecls.h>
#include <stdlib.h>

#include "mpi_test.h"

#define NR 40
#define NC 30
#define ITERS 10

static double f(int i, int j) { return i * 1000.0 + j + 0.5; }

int main(int argc, char **argv)
{
    static double buf[NR][NC];
    int me, n, dims[2] = {NR, NC}, chunk[2] = {-1, -1}, ld[1] = {NC};

    MPI_Init(&argc, &argv);
    GA_Initialize();
    /* GA's gather and scatter stage their index lists in MA's stack */
    CHECK(MA_init(C_DBL, 1 << 16, 1 << 16));
    me = GA_Nodeid();
    n = GA_Nnodes();
    int g = NGA_Create(C_DBL, 2, dims, "a", chunk);
    CHECK(g != 0);
    GA_Zero(g);

    /* each rank puts a band of rows cut independently of GA's distribution */
    int r0 = me * NR / n, r1 = (me + 1) * NR / n - 1;
    for (int i = r0; i <= r1; ++i)
        for (int j = 0; j < NC; ++j) buf[i - r0][j] = f(i, j);
    int lo[2] = {r0, 0}, hi[2] = {r1, NC - 1};
    NGA_Put(g, lo, hi, buf, ld);
    GA_Sync();

    /* each rank reads the whole array */
    int all_lo[2] = {0, 0}, all_hi[2] = {NR - 1, NC - 1};
    NGA_Get(g, all_lo, all_hi, buf, ld);
    for (int i = 0; i < NR; ++i)
        for (int j = 0; j < NC; ++j) CHECK(buf[i][j] == f(i, j));

    /* every rank adds 2 * (rank + 1) to a patch crossing all owners */
    int plo[2] = {3, 2}, phi[2] = {NR - 4, NC - 5}, pld[1] = {NC};
    double alpha = 2.0;
    for (int i = 0; i < NR; ++i)
        for (int j = 0; j < NC; ++j) buf[i][j] = me + 1;
    GA_Sync();
    NGA_Acc(g, plo, phi, buf, pld, &alpha);
    GA_Sync();
    NGA_Get(g, all_lo, all_hi, buf, ld);
    for (int i = 0; i < NR; ++i)
        for (int j = 0; j < NC; ++j) {
            int in = i >= plo[0] && i <= phi[0] && j >= plo[1] && j <= phi[1];
            CHECK(buf[i][j] == f(i, j) + (in ? alpha * n * (n + 1) / 2.0 : 0));
        }

    /* whole-array operations: copy, scale, add, dot */
    int h = GA_Duplicate(g, "b");
    CHECK(h != 0);
    GA_Copy(g, h);
    double half = 0.5, one = 1.0, mone = -1.0;
    GA_Scale(h, &half);
    GA_Add(&one, g, &mone, h, h);   /* h = g - g/2 = g/2 */
    double want = 0;
    for (int i = 0; i < NR; ++i)
        for (int j = 0; j < NC; ++j) want += buf[i][j] * buf[i][j] / 2.0;
    double dot = GA_Ddot(g, h);
    CHECK(dot > want * (1 - 1e-12) && dot < want * (1 + 1e-12));

    /* scatter single elements to remote owners, gather them back */
    enum { K = 8 };
    double sv[K], gv[K];
    int subs[K][2], *sp[K];
    for (int k = 0; k < K; ++k) {
        subs[k][0] = (me * 7 + k * 5) % NR;
        subs[k][1] = (me * 3 + k * 11) % NC;
        sp[k] = subs[k];
        sv[k] = -(me * 100.0 + k);
    }
    GA_Sync();
    if (me == n - 1) NGA_Scatter(h, sv, sp, K);   /* one writer: no conflicting elements */
    GA_Sync();
    if (me == n - 1) {
        NGA_Gather(h, gv, sp, K);
        for (int k = 0; k < K; ++k) CHECK(gv[k] == sv[k]);
    }

    /* a shared counter: NGA_Read_inc hands every value out exactly once */
    int cdims[1] = {1}, cchunk[1] = {1}, zero[1] = {0};
    int c = NGA_Create(C_LONG, 1, cdims, "counter", cchunk);
    GA_Zero(c);
    GA_Sync();
    long got[ITERS], *every = malloc(sizeof(long) * ITERS * n);
    int *seen = calloc(ITERS * n, sizeof(int));
    for (int k = 0; k < ITERS; ++k) got[k] = NGA_Read_inc(c, zero, 1);
    MPI_Allgather(got, ITERS, MPI_LONG, every, ITERS, MPI_LONG, MPI_COMM_WORLD);
    for (int k = 0; k < ITERS * n; ++k) {
        CHECK(every[k] >= 0 && every[k] < ITERS * n);
        if (every[k] >= 0 && every[k] < ITERS * n) seen[every[k]]++;
    }
    for (int k = 0; k < ITERS * n; ++k) CHECK(seen[k] == 1);
    GA_Sync();
    long final = 0;
    NGA_Get(c, zero, zero, &final, NULL);
    CHECK(final == (long)ITERS * n);

    GA_Destroy(c);
    GA_Destroy(h);
    GA_Destroy(g);
    free(every);
    free(seen);
    GA_Terminate();
    return mpi_test_finish("test_ga");
}
