/*
 * Host MPI accumulate-family calls and device-API atomics on the same elements of a GPU window,
 * from every rank into every rank, in one passive epoch (lock_all), both window flavors,
 * origin and result buffers in host and in device memory.
 *
 * Every rank launches a kernel whose thread e, round after round, for every target:
 *   MPIX_Accumulate_device (MPIX_DEVICE_SUM) of 1 into int64 element I+e and of 1.0 into double
 *   element D+e, MPIX_Fetch_and_add_device of 1 into V+2e, G+e and the counter C (its fetched
 *   values kept); thread 0, every CAS_EVERY rounds, one attempt to increment the word S
 *   (MPIX_Compare_and_swap_device on the value it just read), its wins counted.
 * While that kernel runs (it waits to be told to stop, so it spans the host calls), the host
 * of every rank, HROUNDS times for every target:
 *   MPI_Accumulate (MPI_SUM) of E int64 2s into I (contiguous), of E doubles 2.0 into D, of E
 *   int64 2s into V with a vector target type (every second element), MPI_Get_accumulate
 *   (MPI_SUM) of E int64 2s into G, MPI_Fetch_and_op (MPI_SUM) of 1 into C and a
 *   compare-and-swap increment of S (MPI_Compare_and_swap, retried until it wins).
 * After the epoch and a barrier every element must hold exactly what all callers added (the
 * kernels' round and win counts are exchanged), the odd elements of V must be untouched, each
 * counter's fetched values (host and device callers together) must be 0 .. n-1 each once, and
 * each rank's successive MPI_Get_accumulate results on an element must grow by at least 2.
 * A first pass does the same with the host calls and the kernel in separate epochs (the
 * documented way while host accumulates on GPU windows are done by copies): it tells a data
 * path fault from the concurrent pass's "host accumulate not atomic with device atomics".
 * With osc_gpuic_emulate_nodes, peers on other emulated nodes are reached through UCX: both
 * the host calls and the device atomics (through the proxy) to them are executed by the
 * target's window agent; where UCX cannot register device memory, creation is refused and
 * the test exits 77.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define E 32              /* elements per region, and threads of the kernel */
#define HROUNDS 16        /* host rounds per target */
#define MAX_ROUNDS 2048   /* device rounds per thread, at most */
#define CAS_TRIES 1000000 /* host compare-and-swap attempts per increment before giving up */
#define CAS_EVERY 8       /* device rounds per compare-and-swap attempt (the host's get a turn) */
/* window layout, in 8-byte elements (the window's displacement unit) */
#define OFF_I 0
#define OFF_D 64
#define OFF_C 128
#define OFF_S 129
#define OFF_V 256
#define OFF_G 512
#define WIN_ELEMS 1024

static int rank, nranks;

/* Thread e: rounds of device atomics on every target until *stop (mapped host memory) is set
 * and at least min_rounds are done, or MAX_ROUNDS.  olds[(t * E + e) * MAX_ROUNDS + k] is the
 * counter value fetched in round k from target t; rounds[e] the rounds done; wins[t] the
 * compare-and-swap increments of S that won at target t; *rc the first failing call's class. */
__global__ void k_atomics(MPIX_Win_device win, int nranks, const volatile int *stop,
                          volatile int *started, int min_rounds, const int64_t *one_i64,
                          const double *one_dbl, int64_t *olds, int *rounds, int64_t *wins,
                          int *rc)
{
    int e = threadIdx.x, k = 0, t, r;

    if (e == 0) {
        *started = 1;
        __threadfence_system();
    }
    while (k < MAX_ROUNDS && (k < min_rounds || !*stop)) {
        for (t = 0; t < nranks; ++t) {
            int64_t old = 0, cur = 0;
            uint64_t seen = 0;

            r = MPIX_Accumulate_device(one_i64, 1, MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, t,
                                       OFF_I + e, win);
            if (r == MPI_SUCCESS) {
                r = MPIX_Accumulate_device(one_dbl, 1, MPIX_DEVICE_DOUBLE, MPIX_DEVICE_SUM, t,
                                           OFF_D + e, win);
            }
            if (r == MPI_SUCCESS) r = MPIX_Fetch_and_add_device(1, NULL, t, OFF_V + 2 * e, win);
            if (r == MPI_SUCCESS) r = MPIX_Fetch_and_add_device(1, NULL, t, OFF_G + e, win);
            if (r == MPI_SUCCESS) r = MPIX_Fetch_and_add_device(1, &old, t, OFF_C, win);
            olds[((size_t)t * E + e) * MAX_ROUNDS + k] = old;
            if (r == MPI_SUCCESS && e == 0 && k % CAS_EVERY == 0) {
                r = MPIX_Fetch_and_add_device(0, &cur, t, OFF_S, win);
                if (r == MPI_SUCCESS) {
                    r = MPIX_Compare_and_swap_device((uint64_t)cur + 1, (uint64_t)cur, &seen, t,
                                                     OFF_S, win);
                }
                if (r == MPI_SUCCESS && seen == (uint64_t)cur) wins[t]++;
            }
            if (r != MPI_SUCCESS) atomicCAS(rc, MPI_SUCCESS, r);
        }
        ++k;
    }
    rounds[e] = k;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;

    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
}

/* A buffer of @p bytes in device (odev) or host memory, a copy of @p init when not NULL. */
static void *buf_make(int odev, size_t bytes, const void *init)
{
    void *p = odev ? dev_alloc(bytes) : calloc(1, bytes);

    if (init != NULL) {
        if (odev) CUDA_CHECK(cudaMemcpy(p, init, bytes, cudaMemcpyHostToDevice));
        else memcpy(p, init, bytes);
    }
    return p;
}

static void buf_free(int odev, void *p)
{
    if (odev) CUDA_CHECK(cudaFree(p)); else free(p);
}

static void buf_read(int odev, void *host, const void *buf, size_t bytes)
{
    if (odev) CUDA_CHECK(cudaMemcpy(host, buf, bytes, cudaMemcpyDeviceToHost));
    else memcpy(host, buf, bytes);
}

/* What one pass's host calls fetched, per target: MPI_Get_accumulate's old values
 * [t][round][e] and MPI_Fetch_and_op's [t][round]. */
struct host_fetched {
    int64_t gacc[HROUNDS * E];
    int64_t fop[HROUNDS];
};

/* One compare-and-swap increment of S at @p t, retried until it wins; false if it never did. */
static int host_cas_increment(MPI_Win win, int t, int odev, int64_t *ops, int64_t *res)
{
    int64_t guess = 0, v[2], seen = -1;
    int tries;

    for (tries = 0; tries < CAS_TRIES; ++tries) {
        v[0] = guess + 1; /* new value */
        v[1] = guess;     /* compare */
        if (odev) CUDA_CHECK(cudaMemcpy(ops, v, sizeof(v), cudaMemcpyHostToDevice));
        else memcpy(ops, v, sizeof(v));
        CHECK(MPI_Compare_and_swap(&ops[0], &ops[1], res, MPI_INT64_T, t, OFF_S, win) ==
              MPI_SUCCESS);
        CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
        buf_read(odev, &seen, res, sizeof(seen));
        if (seen == guess) return 1;
        guess = seen;
    }
    return 0;
}

/* The host calls' operand and result buffers, in device (odev) or host memory.  Made before
 * the kernel starts and freed after it ended: cudaMalloc and cudaFree may wait for the device's
 * running kernels, and this process's kernel runs until the host calls are done. */
struct host_bufs {
    void *oi, *od, *o1, *ops, *cres, *gres, *fres;
};

static void host_bufs_make(struct host_bufs *b, int odev)
{
    int64_t two_i[E], one = 1;
    double two_d[E];
    int e;

    for (e = 0; e < E; ++e) {
        two_i[e] = 2;
        two_d[e] = 2.0;
    }
    b->oi = buf_make(odev, sizeof(two_i), two_i);
    b->od = buf_make(odev, sizeof(two_d), two_d);
    b->o1 = buf_make(odev, sizeof(one), &one);
    b->ops = buf_make(odev, 2 * sizeof(int64_t), NULL);
    b->cres = buf_make(odev, sizeof(int64_t), NULL);
    b->gres = buf_make(odev, (size_t)nranks * HROUNDS * E * sizeof(int64_t), NULL);
    b->fres = buf_make(odev, (size_t)nranks * HROUNDS * sizeof(int64_t), NULL);
}

static void host_bufs_free(struct host_bufs *b, int odev)
{
    buf_free(odev, b->oi);
    buf_free(odev, b->od);
    buf_free(odev, b->o1);
    buf_free(odev, b->ops);
    buf_free(odev, b->cres);
    buf_free(odev, b->gres);
    buf_free(odev, b->fres);
}

/* The host's calls of one pass, inside an epoch the caller opened. */
static void host_calls(MPI_Win win, int odev, const struct host_bufs *b, struct host_fetched *got)
{
    int t, k;
    MPI_Datatype vec;

    MPI_Type_vector(E, 1, 2, MPI_INT64_T, &vec);
    MPI_Type_commit(&vec);
    for (k = 0; k < HROUNDS; ++k) {
        for (t = 0; t < nranks; ++t) {
            int64_t *g = (int64_t *)b->gres + ((size_t)t * HROUNDS + k) * E;
            int64_t *f = (int64_t *)b->fres + (size_t)t * HROUNDS + k;

            CHECK(MPI_Accumulate(b->oi, E, MPI_INT64_T, t, OFF_I, E, MPI_INT64_T, MPI_SUM,
                                 win) == MPI_SUCCESS);
            CHECK(MPI_Accumulate(b->od, E, MPI_DOUBLE, t, OFF_D, E, MPI_DOUBLE, MPI_SUM, win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Accumulate(b->oi, E, MPI_INT64_T, t, OFF_V, 1, vec, MPI_SUM, win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Get_accumulate(b->oi, E, MPI_INT64_T, g, E, MPI_INT64_T, t, OFF_G, E,
                                     MPI_INT64_T, MPI_SUM, win) == MPI_SUCCESS);
            CHECK(MPI_Fetch_and_op(b->o1, f, MPI_INT64_T, t, OFF_C, MPI_SUM, win) ==
                  MPI_SUCCESS);
            CHECK(MPI_Win_flush(t, win) == MPI_SUCCESS);
            CHECK(host_cas_increment(win, t, odev, (int64_t *)b->ops, (int64_t *)b->cres));
        }
    }
    for (t = 0; t < nranks; ++t) {
        buf_read(odev, got[t].gacc, (int64_t *)b->gres + (size_t)t * HROUNDS * E,
                 sizeof(got[t].gacc));
        buf_read(odev, got[t].fop, (int64_t *)b->fres + (size_t)t * HROUNDS,
                 sizeof(got[t].fop));
    }
    MPI_Type_free(&vec);
}

/* Counts a failed check of one pass, with the pass's message on its first failure. */
static int pass_check(int ok, const char *what, const char *why, int *printed)
{
    if (!ok) {
        mpi_test_failures++;
        if (!*printed) {
            fprintf(stderr, "[rank %d] %s: %s\n", rank, why, what);
            *printed = 1;
        }
    }
    return ok;
}

/*
 * One pass: host calls and the kernel in one lock_all epoch (concurrent) or in two epochs
 * (the host's first), then the checks on this rank's window memory and fetched values.
 */
static void run_pass(MPI_Win win, MPIX_Win_device h, void *dev, int odev, int concurrent)
{
    const char *why = concurrent ? "host accumulate not atomic with device atomics"
                                 : "host accumulates and device atomics in separate epochs";
    struct host_fetched *got = (struct host_fetched *)calloc(nranks, sizeof(*got));
    int64_t one_i = 1, *d_one_i, *d_olds, *olds, *sendv, *recvv, win_i[WIN_ELEMS];
    int64_t *d_wins, *wins, *wins_here, cas_expect = (int64_t)HROUNDS * nranks;
    double one_d = 1.0, *d_one_d, *win_d = (double *)win_i;
    int *d_rounds, *d_rc, rounds[E], *all_rounds, h_rc, *stop, *started, *d_stop, *d_started;
    int *scounts, *sdispls, *rcounts, *rdispls, printed = 0, t, e, k, s;
    int64_t mine = 0, total_callers_sum = 0, expect, n;
    cudaStream_t stream;
    char what[160];
    struct host_bufs bufs;

    host_bufs_make(&bufs, odev);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaHostAlloc((void **)&stop, sizeof(int), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostAlloc((void **)&started, sizeof(int), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&d_stop, stop, 0));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&d_started, started, 0));
    *(volatile int *)stop = concurrent ? 0 : 1;
    *(volatile int *)started = 0;
    d_one_i = (int64_t *)buf_make(1, sizeof(one_i), &one_i);
    d_one_d = (double *)buf_make(1, sizeof(one_d), &one_d);
    d_olds = (int64_t *)dev_alloc((size_t)nranks * E * MAX_ROUNDS * sizeof(int64_t));
    d_rounds = (int *)dev_alloc(E * sizeof(int));
    d_rc = (int *)dev_alloc(sizeof(int));
    d_wins = (int64_t *)dev_alloc((size_t)nranks * sizeof(int64_t));

    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    if (concurrent) {
        double t0;

        k_atomics<<<1, E, 0, stream>>>(h, nranks, d_stop, d_started, 1, d_one_i, d_one_d, d_olds,
                                       d_rounds, d_wins, d_rc);
        CUDA_CHECK(cudaGetLastError());
        /* the host calls start once the kernel runs, so the two overlap */
        for (t0 = MPI_Wtime(); !*(volatile int *)started && MPI_Wtime() - t0 < 30;) sched_yield();
        CHECK(*(volatile int *)started);
        host_calls(win, odev, &bufs, got);
        *(volatile int *)stop = 1;
        CUDA_CHECK(cudaStreamSynchronize(stream));
    } else {
        host_calls(win, odev, &bufs, got);
        CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
        k_atomics<<<1, E, 0, stream>>>(h, nranks, d_stop, d_started, 64, d_one_i, d_one_d, d_olds,
                                       d_rounds, d_wins, d_rc);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    host_bufs_free(&bufs, odev);

    CUDA_CHECK(cudaMemcpy(&h_rc, d_rc, sizeof(h_rc), cudaMemcpyDeviceToHost));
    CHECK(h_rc == MPI_SUCCESS);
    wins = (int64_t *)malloc(2 * (size_t)nranks * sizeof(int64_t));
    wins_here = wins + nranks;
    CUDA_CHECK(cudaMemcpy(wins, d_wins, (size_t)nranks * sizeof(int64_t), cudaMemcpyDeviceToHost));
    MPI_Alltoall(wins, 1, MPI_INT64_T, wins_here, 1, MPI_INT64_T, MPI_COMM_WORLD);
    for (s = 0; s < nranks; ++s) cas_expect += wins_here[s];
    CUDA_CHECK(cudaMemcpy(rounds, d_rounds, sizeof(rounds), cudaMemcpyDeviceToHost));
    all_rounds = (int *)malloc((size_t)nranks * E * sizeof(int));
    MPI_Allgather(rounds, E, MPI_INT, all_rounds, E, MPI_INT, MPI_COMM_WORLD);
    CUDA_CHECK(cudaMemcpy(win_i, dev, sizeof(win_i), cudaMemcpyDeviceToHost));

    /* every element: each rank's thread e added 1 per round, each rank's host 2 per round */
    for (e = 0; e < E; ++e) {
        expect = 2 * (int64_t)HROUNDS * nranks;
        for (s = 0; s < nranks; ++s) expect += all_rounds[s * E + e];
        snprintf(what, sizeof(what), "int64 MPI_Accumulate element %d is %lld, expected %lld", e,
                 (long long)win_i[OFF_I + e], (long long)expect);
        pass_check(win_i[OFF_I + e] == expect, what, why, &printed);
        snprintf(what, sizeof(what), "double MPI_Accumulate element %d is %.1f, expected %lld", e,
                 win_d[OFF_D + e], (long long)expect);
        pass_check(win_d[OFF_D + e] == (double)expect, what, why, &printed);
        snprintf(what, sizeof(what), "vector MPI_Accumulate element %d is %lld, expected %lld",
                 2 * e, (long long)win_i[OFF_V + 2 * e], (long long)expect);
        pass_check(win_i[OFF_V + 2 * e] == expect, what, why, &printed);
        snprintf(what, sizeof(what), "vector target type wrote the gap element %d (%lld)",
                 2 * e + 1, (long long)win_i[OFF_V + 2 * e + 1]);
        pass_check(win_i[OFF_V + 2 * e + 1] == 0, what, why, &printed);
        snprintf(what, sizeof(what), "MPI_Get_accumulate element %d is %lld, expected %lld", e,
                 (long long)win_i[OFF_G + e], (long long)expect);
        pass_check(win_i[OFF_G + e] == expect, what, why, &printed);
        /* this rank's successive fetches at each target grow by its own 2 at least */
        for (t = 0; t < nranks; ++t) {
            for (k = 1; k < HROUNDS; ++k) {
                int64_t a = got[t].gacc[(k - 1) * E + e], b = got[t].gacc[k * E + e];

                snprintf(what, sizeof(what), "MPI_Get_accumulate at rank %d element %d fetched "
                         "%lld after %lld", t, e, (long long)b, (long long)a);
                pass_check(b >= a + 2, what, why, &printed);
            }
        }
    }

    /* the counter and the compare-and-swap word: one increment per caller and round */
    for (s = 0; s < nranks; ++s) {
        for (e = 0; e < E; ++e) total_callers_sum += all_rounds[s * E + e];
    }
    total_callers_sum += (int64_t)HROUNDS * nranks;
    snprintf(what, sizeof(what), "MPI_Fetch_and_op counter is %lld, expected %lld",
             (long long)win_i[OFF_C], (long long)total_callers_sum);
    pass_check(win_i[OFF_C] == total_callers_sum, what,
               concurrent ? "host fetch_and_op not atomic with device atomics" : why, &printed);
    snprintf(what, sizeof(what), "MPI_Compare_and_swap word is %lld, expected %lld",
             (long long)win_i[OFF_S], (long long)cas_expect);
    pass_check(win_i[OFF_S] == cas_expect, what,
               concurrent ? "host compare_and_swap not atomic with device atomics" : why,
               &printed);

    /* fetched counter values: each target gets, from every rank, its device then host ones */
    for (e = 0; e < E; ++e) mine += rounds[e];
    mine += HROUNDS;
    olds = (int64_t *)malloc((size_t)nranks * E * MAX_ROUNDS * sizeof(int64_t));
    CUDA_CHECK(cudaMemcpy(olds, d_olds, (size_t)nranks * E * MAX_ROUNDS * sizeof(int64_t),
                          cudaMemcpyDeviceToHost));
    sendv = (int64_t *)malloc((size_t)nranks * mine * sizeof(int64_t));
    for (t = 0; t < nranks; ++t) {
        int64_t *p = sendv + (size_t)t * mine;

        for (e = 0; e < E; ++e) {
            for (k = 0; k < rounds[e]; ++k) *p++ = olds[((size_t)t * E + e) * MAX_ROUNDS + k];
        }
        for (k = 0; k < HROUNDS; ++k) *p++ = got[t].fop[k];
    }
    scounts = (int *)malloc(4 * nranks * sizeof(int));
    sdispls = scounts + nranks;
    rcounts = sdispls + nranks;
    rdispls = rcounts + nranks;
    for (t = 0; t < nranks; ++t) {
        scounts[t] = (int)mine;
        sdispls[t] = (int)(t * mine);
    }
    MPI_Alltoall(scounts, 1, MPI_INT, rcounts, 1, MPI_INT, MPI_COMM_WORLD);
    for (n = 0, s = 0; s < nranks; ++s) {
        rdispls[s] = (int)n;
        n += rcounts[s];
    }
    recvv = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    MPI_Alltoallv(sendv, scounts, sdispls, MPI_INT64_T, recvv, rcounts, rdispls, MPI_INT64_T,
                  MPI_COMM_WORLD);
    {
        char *seen = (char *)calloc((size_t)n, 1);
        int64_t i, bad = 0;

        for (i = 0; i < n; ++i) {
            if (recvv[i] < 0 || recvv[i] >= n || seen[recvv[i]]++) bad++;
        }
        snprintf(what, sizeof(what), "%lld of the %lld fetched counter values are out of range "
                 "or repeated", (long long)bad, (long long)n);
        pass_check(bad == 0 && n == total_callers_sum, what,
                   concurrent ? "host fetch_and_op not atomic with device atomics" : why,
                   &printed);
        free(seen);
    }

    free(recvv);
    free(scounts);
    free(sendv);
    free(olds);
    free(all_rounds);
    free(wins);
    free(got);
    CUDA_CHECK(cudaFree(d_one_i));
    CUDA_CHECK(cudaFree(d_one_d));
    CUDA_CHECK(cudaFree(d_olds));
    CUDA_CHECK(cudaFree(d_rounds));
    CUDA_CHECK(cudaFree(d_rc));
    CUDA_CHECK(cudaFree(d_wins));
    CUDA_CHECK(cudaFreeHost(stop));
    CUDA_CHECK(cudaFreeHost(started));
    CUDA_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char **argv)
{
    int flavors[2] = {MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_CREATE}, f, odev, concurrent;
    int before, mine, failed = 0, rc, remote;
    const char *e = getenv("OMPI_MCA_osc_gpuic_emulate_nodes");

    if (!device_test_init(&argc, &argv, "test_gpu_window_atomics", &rank, &nranks)) {
        return 77;
    }
    /* with emulated nodes of fewer ranks than the job, some peers are on other nodes: host
     * and device atomics to them are executed by their window agents (remote calls) */
    remote = e != NULL && atoi(e) > 0 && atoi(e) < nranks;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (concurrent = 0; concurrent < 2; ++concurrent) {
        for (f = 0; f < 2; ++f) {
            for (odev = 0; odev < 2; ++odev) {
                void *dev = NULL, *owned = NULL;
                MPIX_Win_device h = {};
                MPI_Win win;

                before = mpi_test_failures;
                rc = device_test_gpu_window(flavors[f], WIN_ELEMS * 8, 8, &dev, &owned, &win);
                if (rc != MPI_SUCCESS && remote) {
                    int cls = 0;

                    /* peers on other (emulated) nodes and a UCX that cannot register device
                     * memory: creation is refused, with the component's class or the one Open
                     * MPI turns a refusing component into */
                    MPI_Error_class(rc, &cls);
                    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_WIN);
                    if (owned != NULL) CUDA_CHECK(cudaFree(owned));
                    if (rank == 0) {
                        printf("SKIP: GPU windows across nodes need a CUDA-enabled UCX\n");
                    }
                    return mpi_test_finish("test_gpu_window_atomics") == 0 ? 77 : 1;
                }
                if (rc != MPI_SUCCESS) {
                    CHECK(!"GPU window creation failed");
                    if (owned != NULL) CUDA_CHECK(cudaFree(owned));
                    continue;
                }
                CHECK(MPIX_Win_get_device_handle(win, &h) == MPI_SUCCESS && h.desc != NULL);
                if (h.desc != NULL) run_pass(win, h, dev, odev, concurrent);
                CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
                if (owned != NULL) CUDA_CHECK(cudaFree(owned));
                mine = mpi_test_failures - before;
                MPI_Allreduce(&mine, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                if (rank == 0) {
                    printf("%s epoch%s, MPI_Win_%s, %s origin: %s\n",
                           concurrent ? "one" : "separate", concurrent ? "" : "s",
                           f == 0 ? "allocate" : "create", odev ? "device" : "host",
                           failed == 0 ? "ok" : "FAILED");
                }
            }
        }
    }
    return mpi_test_finish("test_gpu_window_atomics");
}
