/*
 * gpuic's MPI_T performance variables: found by name through the MPI_T interface, with the
 * declared class and flags, and moved by RMA calls by the amounts those calls account for.
 * Counters are per process and counted at the origin, so every rank checks its own.
 *
 * Exact where the path is fixed: calls to oneself are always served through the mapping,
 * and with OMPI_MCA_osc_gpuic_direct=0 every call to a peer goes through UCX and every
 * accumulate takes the accumulate lock.  Elsewhere the two paths must add up exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

enum {
    PV_OPS_DIRECT,
    PV_OPS_UCX,
    PV_BYTES_DIRECT,
    PV_BYTES_UCX,
    PV_ACC_ATOMIC,
    PV_ACC_LOCKED,
    PV_RANGE_ERRORS,
    PV_FLUSHES_SKIPPED,
    PV_DEVICE_ERRORS,
    PV_PROXY_DESCRIPTORS,
    PV_PROXY_FAILURES,
    PV_PROXY_ROUNDS,
    PV_PROXY_SLEEPS,
    PV_PROXY_FULL_WAITS,
    PV_PROXY_BUSY_NS,
    PV_PROXY_MERGED,
    PV_COUNT
};

static const char *pv_names[PV_COUNT] = {
    "osc_gpuic_ops_direct",         "osc_gpuic_ops_ucx",          "osc_gpuic_bytes_direct",
    "osc_gpuic_bytes_ucx",          "osc_gpuic_accumulates_atomic",
    "osc_gpuic_accumulates_locked", "osc_gpuic_range_errors",     "osc_gpuic_flushes_skipped",
    "osc_gpuic_device_errors",      "osc_gpuic_proxy_descriptors",
    "osc_gpuic_proxy_validation_failures", "osc_gpuic_proxy_rounds", "osc_gpuic_proxy_sleeps",
    "osc_gpuic_proxy_queue_full_waits", "osc_gpuic_proxy_busy_ns",
    "osc_gpuic_proxy_merged_puts",
};

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[PV_COUNT];

/* Finds every variable by name and checks what it declares; returns how many were found. */
static int pv_find(int index[PV_COUNT])
{
    int num = 0, i, k, found = 0;

    for (k = 0; k < PV_COUNT; ++k) {
        index[k] = -1;
    }
    CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS);
    for (i = 0; i < num; ++i) {
        char name[256], desc[1024];
        int name_len = sizeof(name), desc_len = sizeof(desc), verbosity, var_class, bind;
        int readonly, continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum enumtype;

        if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &enumtype,
                                desc, &desc_len, &bind, &readonly, &continuous,
                                &atomic) != MPI_SUCCESS) {
            continue; /* an invalidated variable of some other component */
        }
        for (k = 0; k < PV_COUNT; ++k) {
            if (strcmp(name, pv_names[k]) != 0) {
                continue;
            }
            index[k] = i;
            found++;
            CHECK(var_class == MPI_T_PVAR_CLASS_COUNTER);
            CHECK(dt == MPI_UNSIGNED_LONG_LONG);
            CHECK(bind == MPI_T_BIND_NO_OBJECT);
            CHECK(readonly == 1);
            CHECK(continuous == 1);
            CHECK(desc_len > 1);
        }
    }
    for (k = 0; k < PV_COUNT; ++k) {
        if (index[k] < 0) {
            fprintf(stderr, "MPI_T variable %s not found\n", pv_names[k]);
        }
    }
    return found;
}

static void pv_read(unsigned long long v[PV_COUNT])
{
    int k;

    for (k = 0; k < PV_COUNT; ++k) {
        v[k] = 0;
        CHECK(MPI_T_pvar_read(session, handles[k], &v[k]) == MPI_SUCCESS);
    }
}

/* after - before, per variable */
static void pv_delta(const unsigned long long a[PV_COUNT], const unsigned long long b[PV_COUNT],
                     unsigned long long d[PV_COUNT])
{
    int k;

    for (k = 0; k < PV_COUNT; ++k) {
        d[k] = b[k] - a[k];
    }
}

#define WIN_BYTES 4096

int main(int argc, char **argv)
{
    unsigned long long initial[PV_COUNT], before[PV_COUNT], after[PV_COUNT], d[PV_COUNT];
    int index[PV_COUNT], provided, rank, nranks, k, i, peer;
    const char *env_direct = getenv("OMPI_MCA_osc_gpuic_direct");
    int no_direct = env_direct != NULL && strcmp(env_direct, "0") == 0;
    int32_t src[64], dst[64], one = 1, cmp = 0, swp = 5, res = 0;
    struct { double v; int i; } pair = {3.0, 1};
    char *base;
    MPI_Win win;
    MPI_Request req[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    peer = (rank + 1) % nranks;
    for (i = 0; i < 64; ++i) {
        src[i] = rank * 1000 + i;
    }

    /* The component registers its variables when the osc framework opens (in MPI_Init). */
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);
    if (pv_find(index) != PV_COUNT) {
        mpi_test_failures++;
        MPI_T_finalize();
        return mpi_test_finish("test_mpit");
    }
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS);
    for (k = 0; k < PV_COUNT; ++k) {
        int count = 0, rc;

        CHECK(MPI_T_pvar_handle_alloc(session, index[k], NULL, &handles[k], &count) ==
              MPI_SUCCESS);
        CHECK(count == 1);
        /* Continuous variables run from allocation: start may say there is nothing to start. */
        rc = MPI_T_pvar_start(session, handles[k]);
        CHECK(rc == MPI_SUCCESS || rc == MPI_T_ERR_PVAR_NO_STARTSTOP);
    }

    pv_read(initial);

    MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    CHECK(mpi_test_is_gpuic(win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    memset(base, 0, WIN_BYTES);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* Calls to oneself: always through the mapping, and their flush has no UCX work. */
    pv_read(before);
    for (i = 0; i < 5; ++i) {
        CHECK(MPI_Put(src, 16, MPI_INT32_T, rank, 64 * i, 16, MPI_INT32_T, win) == MPI_SUCCESS);
    }
    for (i = 0; i < 3; ++i) {
        CHECK(MPI_Get(dst, 8, MPI_INT32_T, rank, 64 * i, 8, MPI_INT32_T, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush(rank, win) == MPI_SUCCESS);
    pv_read(after);
    pv_delta(before, after, d);
    CHECK(d[PV_OPS_DIRECT] == 8);
    CHECK(d[PV_BYTES_DIRECT] == 5 * 16 * 4 + 3 * 8 * 4);
    CHECK(d[PV_OPS_UCX] == 0);
    CHECK(d[PV_BYTES_UCX] == 0);
    CHECK(d[PV_FLUSHES_SKIPPED] >= 1);
    CHECK(d[PV_RANGE_ERRORS] == 0);

    /* Calls to a peer: one path or the other, every call and byte counted once. */
    pv_read(before);
    for (i = 0; i < 4; ++i) {
        CHECK(MPI_Put(src, 32, MPI_INT32_T, peer, 1024 + 128 * i, 32, MPI_INT32_T, win) ==
              MPI_SUCCESS);
    }
    CHECK(MPI_Get(dst, 64, MPI_INT32_T, peer, 1024, 64, MPI_INT32_T, win) == MPI_SUCCESS);
    CHECK(MPI_Rput(src, 10, MPI_INT32_T, peer, 2048, 10, MPI_INT32_T, win, &req[0]) ==
          MPI_SUCCESS);
    CHECK(MPI_Rget(dst, 6, MPI_INT32_T, peer, 2048, 6, MPI_INT32_T, win, &req[1]) ==
          MPI_SUCCESS);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    CHECK(MPI_Win_flush(peer, win) == MPI_SUCCESS);
    pv_read(after);
    pv_delta(before, after, d);
    CHECK(d[PV_OPS_DIRECT] + d[PV_OPS_UCX] == 7);
    CHECK(d[PV_BYTES_DIRECT] + d[PV_BYTES_UCX] == (4 * 32 + 64 + 10 + 6) * 4);
    if (no_direct && nranks > 1) {
        CHECK(d[PV_OPS_UCX] == 7);
        CHECK(d[PV_BYTES_UCX] == (4 * 32 + 64 + 10 + 6) * 4);
    }

    /* The accumulate family: each call counted once, as atomic or locked.  A pair type
     * (12 bytes of data in a 16-byte extent) is beyond CPU atomics on every window. */
    pv_read(before);
    for (i = 0; i < 3; ++i) {
        CHECK(MPI_Accumulate(&src[i], 4, MPI_INT32_T, peer, 3072, 4, MPI_INT32_T, MPI_SUM,
                             win) == MPI_SUCCESS);
    }
    CHECK(MPI_Fetch_and_op(&one, &res, MPI_INT32_T, peer, 3200, MPI_SUM, win) == MPI_SUCCESS);
    CHECK(MPI_Compare_and_swap(&swp, &cmp, &res, MPI_INT32_T, peer, 3204, win) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(&pair, 1, MPI_DOUBLE_INT, peer, 3328, 1, MPI_DOUBLE_INT, MPI_MAXLOC,
                         win) == MPI_SUCCESS);
    pv_read(after);
    pv_delta(before, after, d);
    CHECK(d[PV_ACC_ATOMIC] + d[PV_ACC_LOCKED] == 6);
    CHECK(d[PV_ACC_LOCKED] >= 1);
    CHECK(d[PV_OPS_DIRECT] + d[PV_OPS_UCX] == 0); /* internal transfers are not RMA calls */
    /* Through UCX, the 4-byte fetch_and_op and compare_and_swap are single UCX atomics; the
     * multi-element and pair-type calls take the lock. */
    if (no_direct && nranks > 1) {
        CHECK(d[PV_ACC_LOCKED] == 4);
        CHECK(d[PV_ACC_ATOMIC] == 2);
    }

    /* Refused calls: counted as range errors, and as nothing else. */
    pv_read(before);
    CHECK_CLASS(MPI_Put(src, 4, MPI_INT32_T, peer, WIN_BYTES - 8, 4, MPI_INT32_T, win),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Get(dst, 1, MPI_INT32_T, rank, WIN_BYTES, 1, MPI_INT32_T, win),
                MPI_ERR_RMA_RANGE);
    CHECK_CLASS(MPI_Accumulate(src, 2, MPI_INT32_T, peer, WIN_BYTES - 4, 2, MPI_INT32_T, MPI_SUM,
                               win),
                MPI_ERR_RMA_RANGE);
    pv_read(after);
    pv_delta(before, after, d);
    CHECK(d[PV_RANGE_ERRORS] == 3);
    CHECK(d[PV_OPS_DIRECT] + d[PV_OPS_UCX] == 0);
    CHECK(d[PV_ACC_ATOMIC] + d[PV_ACC_LOCKED] == 0);

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);

    /* No device calls were made, so none can have failed, and no proxy thread ran. */
    pv_read(after);
    CHECK(after[PV_DEVICE_ERRORS] == initial[PV_DEVICE_ERRORS]);
    CHECK(after[PV_PROXY_DESCRIPTORS] == 0 && after[PV_PROXY_FAILURES] == 0);
    CHECK(after[PV_PROXY_ROUNDS] == 0 && after[PV_PROXY_SLEEPS] == 0);
    CHECK(after[PV_PROXY_FULL_WAITS] == 0 && after[PV_PROXY_BUSY_NS] == 0);
    CHECK(after[PV_PROXY_MERGED] == 0);

    for (k = 0; k < PV_COUNT; ++k) {
        CHECK(MPI_T_pvar_handle_free(session, &handles[k]) == MPI_SUCCESS);
    }
    CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS);
    MPI_T_finalize();
    return mpi_test_finish("test_mpit");
}
