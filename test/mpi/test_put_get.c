/*
 * Contiguous MPI_Put and MPI_Get (and MPI_Rput/MPI_Rget) between every pair of ranks, in every
 * synchronization mode the component offers, on MPI_Win_create and MPI_Win_allocate windows.
 * Each rank writes a distinct pattern into a distinct slot of every peer and reads it back.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi_test.h"

#define SLOT 257 /* ints per (writer, target) slot: odd, so transfers are not 8-byte multiples */

enum sync_mode { SYNC_FENCE, SYNC_LOCK_ALL, SYNC_LOCK_EXCL, SYNC_LOCK_SHARED, SYNC_NMODES };
static const char *sync_names[] = {"fence", "lock_all+flush", "lock exclusive", "lock shared"};

static int pattern(int writer, int target, int i)
{
    return writer * 1000003 + target * 1009 + i;
}

static void run(int flavor_allocate, enum sync_mode mode, int rank, int n)
{
    size_t bytes = (size_t)SLOT * n * sizeof(int);
    int *base, *mem = NULL, *src = malloc(SLOT * sizeof(int)), *dst = malloc(SLOT * sizeof(int));
    MPI_Win win;

    if (flavor_allocate) {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    } else {
        mem = malloc(bytes);
        base = mem;
        MPI_Win_create(base, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    CHECK(mpi_test_is_gpuic(win));
    for (size_t i = 0; i < (size_t)SLOT * n; ++i) {
        base[i] = -1;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* phase 1: put my pattern into slot [rank] of every target */
    if (mode == SYNC_FENCE) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    } else if (mode == SYNC_LOCK_ALL) {
        MPI_Win_lock_all(0, win);
    }
    for (int k = 0; k < n; ++k) {
        int t = (rank + k) % n;
        for (int i = 0; i < SLOT; ++i) {
            src[i] = pattern(rank, t, i);
        }
        if (mode == SYNC_LOCK_EXCL || mode == SYNC_LOCK_SHARED) {
            MPI_Win_lock(mode == SYNC_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win);
            MPI_Put(src, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
            MPI_Win_unlock(t, win);
        } else if (mode == SYNC_LOCK_ALL) {
            MPI_Request req;
            if (k % 2) {
                CHECK(MPI_Rput(src, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win,
                               &req) == MPI_SUCCESS);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Put(src, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
            }
            MPI_Win_flush(t, win);
        } else {
            MPI_Put(src, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
            /* the origin buffer may be reused only after the epoch: keep one per target */
            MPI_Win_fence(0, win);
        }
    }
    if (mode == SYNC_FENCE) {
        MPI_Win_fence(0, win);
    } else if (mode == SYNC_LOCK_ALL) {
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);

    /* my own window now holds every writer's pattern */
    for (int w = 0; w < n; ++w) {
        int bad = 0;
        for (int i = 0; i < SLOT; ++i) {
            bad += base[(size_t)w * SLOT + i] != pattern(w, rank, i);
        }
        if (bad) {
            fprintf(stderr, "[rank %d] %s %s: slot of writer %d has %d wrong ints\n", rank,
                    flavor_allocate ? "allocate" : "create", sync_names[mode], w, bad);
        }
        CHECK(bad == 0);
    }

    /* phase 2: get back what I wrote into every target and compare */
    if (mode == SYNC_FENCE) {
        MPI_Win_fence(0, win);
    } else if (mode == SYNC_LOCK_ALL) {
        MPI_Win_lock_all(0, win);
    }
    for (int k = 0; k < n; ++k) {
        int t = (rank + n - k) % n;
        for (int i = 0; i < SLOT; ++i) {
            dst[i] = 0;
        }
        if (mode == SYNC_LOCK_EXCL || mode == SYNC_LOCK_SHARED) {
            MPI_Win_lock(mode == SYNC_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win);
            MPI_Get(dst, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
            MPI_Win_unlock(t, win);
        } else if (mode == SYNC_LOCK_ALL) {
            MPI_Request req;
            if (k % 2) {
                MPI_Rget(dst, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE); /* data is in dst now */
            } else {
                MPI_Get(dst, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
                MPI_Win_flush_local(t, win);
            }
        } else {
            MPI_Get(dst, SLOT, MPI_INT, t, (MPI_Aint)rank * SLOT, SLOT, MPI_INT, win);
            MPI_Win_fence(0, win);
        }
        int bad = 0;
        for (int i = 0; i < SLOT; ++i) {
            bad += dst[i] != pattern(rank, t, i);
        }
        CHECK(bad == 0);
    }
    if (mode == SYNC_FENCE) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    } else if (mode == SYNC_LOCK_ALL) {
        MPI_Win_unlock_all(win);
    }
    CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
    free(mem);
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    int rank, n;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int flavor = 0; flavor < 2; ++flavor) {
        for (int mode = 0; mode < SYNC_NMODES; ++mode) {
            run(flavor, (enum sync_mode)mode, rank, n);
        }
    }
    return mpi_test_finish("test_put_get");
}
