/*
 * The device calls' bad-input matrix (2 or more ranks, one node, a GPU).
 *
 * Three windows, each exposed with MPI_Win_create in the middle of a larger allocation so that
 * the guard bytes on both sides can be checked: A (device memory, displacement unit 1), B
 * (device memory, displacement unit 8) and H (host memory).  For each case every rank makes one
 * device call towards its right neighbour (or itself) and checks:
 *  - the class the call returned (every thread of a warp or block variant gets the same);
 *  - that each window's next host synchronization (MPI_Win_flush_all) reports the class the
 *    call recorded, on the window it was made on, and nothing on the others;
 *  - that every window with its guards, and the origin and result buffers, hold exactly what
 *    the case allows (the pattern, plus the one valid put of the control case).
 *
 * Rank 0 prints each case as a Markdown table row between the lines
 * "BEGIN device bad-input table" and "END device bad-input table"; contrib/gen-bad-input-doc.sh
 * turns a log of this output into the "Device calls" section of docs/bad-input.md.
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/mpi_test.h"
#include "device_test.h"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define GUARD 256
#define BUF_BYTES 512
#define MAX_THREADS 64

enum { WIN_A, WIN_B, WIN_H, NWIN };
static const size_t win_bytes[NWIN] = {4096, 1024, 4096};
static const int win_unit[NWIN] = {1, 8, 1};
static const char *const win_label[NWIN] = {"A", "B", "H"};

/* The calls under test. */
enum call_kind {
    CALL_PUT, CALL_PUT_WARP, CALL_PUT_BLOCK, CALL_GET, CALL_GET_WARP, CALL_ACC, CALL_ACC_BLOCK,
    CALL_FOP, CALL_FAA, CALL_CAS, CALL_PUT_SIGNAL, CALL_SIGNAL_WAIT, CALL_FLUSH,
    CALL_FLUSH_LOCAL, CALL_FLUSH_ALL, CALL_TARGET, CALL_PUT_TARGET, CALL_PUT_LOOP, CALL_GET_LOOP
};

static const char *const call_name[] = {
    "MPIX_Put_device", "MPIX_Put_device_warp", "MPIX_Put_device_block", "MPIX_Get_device",
    "MPIX_Get_device_warp", "MPIX_Accumulate_device", "MPIX_Accumulate_device_block",
    "MPIX_Fetch_and_op_device", "MPIX_Fetch_and_add_device", "MPIX_Compare_and_swap_device",
    "MPIX_Put_signal_device", "MPIX_Signal_wait_until_device", "MPIX_Win_flush_device",
    "MPIX_Win_flush_local_device", "MPIX_Win_flush_all_device", "MPIX_Win_target_device",
    "MPIX_Put_target_device", "MPIX_Put_device, 64 in a loop", "MPIX_Get_device, 64 in a loop"};

/* Calls a loop case makes: in a loop the compiler may load the target's description entry
 * once, ahead of the loop and of the checks (MPIX_GPUIC_LDG), which must stay harmless for
 * any rank and handle. */
#define LOOP_CALLS 64

/* Which handle the call gets: the window's own, NULL, or a copy whose magic is corrupted. */
enum { H_OWN, H_NULL, H_CORRUPT };
/* Which target: the right neighbour, the caller itself, the communicator size, or literal. */
enum { T_RIGHT, T_SELF, T_NRANKS, T_LITERAL };

typedef struct {
    const char *name;
    int call, win, handle, tsel, target;
    long long disp;
    unsigned long long bytes;
    int count, type, op;
    long long sig_disp;
    int cmp;
    int expect;
} dcase_t;

/* A case that is valid, so the checks of "untouched" are seen to notice a write. */
#define CONTROL_DISP 16

static const dcase_t cases[] = {
    {"valid put of 8 bytes (control: the only write)", CALL_PUT, WIN_A, H_OWN, T_RIGHT, 0,
     CONTROL_DISP, 8, 0, 0, 0, 0, 0, MPI_SUCCESS},
    {"byte count -1 (SIZE_MAX)", CALL_PUT, WIN_A, H_OWN, T_RIGHT, 0, 0, (unsigned long long)-1,
     0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"byte count -8, warp", CALL_PUT_WARP, WIN_A, H_OWN, T_RIGHT, 0, 0, (unsigned long long)-8,
     0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"byte count 2^62, block", CALL_PUT_BLOCK, WIN_A, H_OWN, T_RIGHT, 0, 0, 1ull << 62, 0, 0, 0,
     0, 0, MPI_ERR_RMA_RANGE},
    {"byte count window size + 1", CALL_PUT, WIN_A, H_OWN, T_RIGHT, 0, 0, 4097, 0, 0, 0, 0, 0,
     MPI_ERR_RMA_RANGE},
    {"get, byte count -1", CALL_GET, WIN_A, H_OWN, T_RIGHT, 0, 0, (unsigned long long)-1, 0, 0,
     0, 0, 0, MPI_ERR_RMA_RANGE},
    {"get, 1 byte just past the end, warp", CALL_GET_WARP, WIN_A, H_OWN, T_RIGHT, 0, 4096, 1,
     0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"displacement -1", CALL_PUT, WIN_A, H_OWN, T_RIGHT, 0, -1, 8, 0, 0, 0, 0, 0,
     MPI_ERR_RMA_RANGE},
    {"displacement INT64_MIN", CALL_PUT, WIN_A, H_OWN, T_RIGHT, 0, INT64_MIN, 8, 0, 0, 0, 0, 0,
     MPI_ERR_RMA_RANGE},
    {"displacement INT64_MAX", CALL_GET, WIN_A, H_OWN, T_RIGHT, 0, INT64_MAX, 1, 0, 0, 0, 0, 0,
     MPI_ERR_RMA_RANGE},
    {"disp * disp_unit wraps to 8 (2^61 + 1 units of 8)", CALL_PUT, WIN_B, H_OWN, T_RIGHT, 0,
     (1ll << 61) + 1, 8, 0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"disp * disp_unit wraps to 0 (2^61 units of 8)", CALL_FAA, WIN_B, H_OWN, T_RIGHT, 0,
     1ll << 61, 0, 0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"accumulate count -1", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, -1, MPIX_DEVICE_INT32,
     MPIX_DEVICE_SUM, 0, 0, MPI_ERR_ARG},
    {"accumulate count INT_MAX of int64", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, INT_MAX,
     MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, 0, 0, MPI_ERR_RMA_RANGE},
    {"accumulate count 2^29 of int64, block", CALL_ACC_BLOCK, WIN_A, H_OWN, T_RIGHT, 0, 0, 0,
     1 << 29, MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, 0, 0, MPI_ERR_RMA_RANGE},
    {"MPIX_Device_type 6 (none)", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, 1, 6,
     MPIX_DEVICE_SUM, 0, 0, MPI_ERR_ARG},
    {"MPIX_Device_type -1", CALL_FOP, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, 1, -1, MPIX_DEVICE_SUM, 0,
     0, MPI_ERR_ARG},
    {"MPIX_Device_op 12 (none)", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, 1, MPIX_DEVICE_INT32,
     12, 0, 0, MPI_ERR_ARG},
    {"MPIX_Device_op -1", CALL_FOP, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, 1, MPIX_DEVICE_INT64, -1, 0,
     0, MPI_ERR_ARG},
    {"bitwise op on a floating type (BAND, double)", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 0, 0, 1,
     MPIX_DEVICE_DOUBLE, MPIX_DEVICE_BAND, 0, 0, MPI_ERR_ARG},
    {"rank -1", CALL_PUT, WIN_A, H_OWN, T_LITERAL, -1, 0, 8, 0, 0, 0, 0, 0, MPI_ERR_RANK},
    {"rank = number of ranks", CALL_GET, WIN_A, H_OWN, T_NRANKS, 0, 0, 8, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank INT_MAX", CALL_FAA, WIN_A, H_OWN, T_LITERAL, INT_MAX, 0, 0, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank INT_MIN", CALL_FLUSH, WIN_A, H_OWN, T_LITERAL, INT_MIN, 0, 0, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank = number of ranks", CALL_FLUSH_LOCAL, WIN_A, H_OWN, T_NRANKS, 0, 0, 0, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank INT_MAX", CALL_GET_LOOP, WIN_A, H_OWN, T_LITERAL, INT_MAX, 0, 8, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank INT_MIN", CALL_PUT_LOOP, WIN_A, H_OWN, T_LITERAL, INT_MIN, 0, 8, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"rank -1, resolved target", CALL_TARGET, WIN_A, H_OWN, T_LITERAL, -1, 0, 0, 0, 0, 0, 0, 0,
     MPI_ERR_RANK},
    {"fetch-and-add at disp 4 (not 8-aligned)", CALL_FAA, WIN_A, H_OWN, T_RIGHT, 0, 4, 0, 0, 0,
     0, 0, 0, MPI_ERR_ARG},
    {"compare-and-swap at disp 1", CALL_CAS, WIN_A, H_OWN, T_RIGHT, 0, 1, 0, 0, 0, 0, 0, 0,
     MPI_ERR_ARG},
    {"fetch-and-op int64 at disp 12", CALL_FOP, WIN_A, H_OWN, T_RIGHT, 0, 12, 0, 1,
     MPIX_DEVICE_INT64, MPIX_DEVICE_SUM, 0, 0, MPI_ERR_ARG},
    {"accumulate int32 at disp 2", CALL_ACC, WIN_A, H_OWN, T_RIGHT, 0, 2, 0, 1,
     MPIX_DEVICE_INT32, MPIX_DEVICE_SUM, 0, 0, MPI_ERR_ARG},
    {"signal word past the end (data in range)", CALL_PUT_SIGNAL, WIN_A, H_OWN, T_RIGHT, 0, 0, 8,
     0, 0, 0, 4092, 0, MPI_ERR_RMA_RANGE},
    {"signal word at disp 3 (not 8-aligned)", CALL_PUT_SIGNAL, WIN_A, H_OWN, T_RIGHT, 0, 0, 8, 0,
     0, 0, 3, 0, MPI_ERR_ARG},
    {"signal word at disp -8", CALL_PUT_SIGNAL, WIN_A, H_OWN, T_RIGHT, 0, 0, 8, 0, 0, 0, -8, 0,
     MPI_ERR_RMA_RANGE},
    {"wait on a signal word at the end", CALL_SIGNAL_WAIT, WIN_A, H_OWN, T_SELF, 0, 0, 0, 0, 0, 0,
     4096, MPIX_DEVICE_CMP_EQ, MPI_ERR_RMA_RANGE},
    {"wait with MPIX_Device_cmp 6 (none)", CALL_SIGNAL_WAIT, WIN_A, H_OWN, T_SELF, 0, 0, 0, 0, 0,
     0, 0, 6, MPI_ERR_ARG},
    {"handle with a corrupted magic (as a released one)", CALL_PUT, WIN_A, H_CORRUPT, T_RIGHT, 0,
     0, 8, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"handle with a corrupted magic", CALL_FAA, WIN_A, H_CORRUPT, T_RIGHT, 0, 0, 0, 0, 0, 0, 0, 0,
     MPI_ERR_WIN},
    {"NULL handle", CALL_PUT, WIN_A, H_NULL, T_RIGHT, 0, 0, 8, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"NULL handle", CALL_GET_WARP, WIN_A, H_NULL, T_RIGHT, 0, 0, 8, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"NULL handle", CALL_ACC, WIN_A, H_NULL, T_RIGHT, 0, 0, 0, 1, MPIX_DEVICE_INT32,
     MPIX_DEVICE_SUM, 0, 0, MPI_ERR_WIN},
    {"NULL handle", CALL_SIGNAL_WAIT, WIN_A, H_NULL, T_SELF, 0, 0, 0, 0, 0, 0, 0,
     MPIX_DEVICE_CMP_EQ, MPI_ERR_WIN},
    {"NULL handle", CALL_GET_LOOP, WIN_A, H_NULL, T_RIGHT, 0, 0, 8, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"handle with a corrupted magic", CALL_PUT_LOOP, WIN_A, H_CORRUPT, T_RIGHT, 0, 0, 8, 0, 0, 0,
     0, 0, MPI_ERR_WIN},
    {"NULL handle", CALL_FLUSH_ALL, WIN_A, H_NULL, T_RIGHT, 0, 0, 0, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"NULL handle", CALL_TARGET, WIN_A, H_NULL, T_RIGHT, 0, 0, 0, 0, 0, 0, 0, 0, MPI_ERR_WIN},
    {"target resolved on window B used for an access valid in A but past B's end", CALL_PUT_TARGET,
     WIN_B, H_OWN, T_RIGHT, 0, 200, 8, 0, 0, 0, 0, 0, MPI_ERR_RMA_RANGE},
    {"host-memory window: put past the end", CALL_PUT, WIN_H, H_OWN, T_RIGHT, 0, 4096, 8, 0, 0, 0,
     0, 0, MPI_ERR_RMA_RANGE},
    {"host-memory window: negative displacement", CALL_GET, WIN_H, H_OWN, T_RIGHT, 0, -8, 8, 0,
     0, 0, 0, 0, MPI_ERR_RMA_RANGE},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* The arguments of one call, as the kernel gets them. */
typedef struct {
    int call;
    MPIX_Win_device h;
    int target;
    long long disp;
    unsigned long long bytes;
    int count, type, op;
    long long sig_disp;
    int cmp;
    unsigned char *origin, *result;
} dargs_t;

/* Every thread of the block takes part in the _block variants, the first warp in the _warp
 * ones, thread 0 alone in the others; each records the status it got. */
__global__ void k_call(dargs_t a, int *rc)
{
    unsigned tid = threadIdx.x;
    int r = -1;

    switch (a.call) {
    case CALL_PUT_WARP:
        if (tid < 32) r = MPIX_Put_device_warp(a.origin, a.bytes, a.target, a.disp, a.h);
        break;
    case CALL_GET_WARP:
        if (tid < 32) r = MPIX_Get_device_warp(a.result, a.bytes, a.target, a.disp, a.h);
        break;
    case CALL_PUT_BLOCK:
        r = MPIX_Put_device_block(a.origin, a.bytes, a.target, a.disp, a.h);
        break;
    case CALL_ACC_BLOCK:
        r = MPIX_Accumulate_device_block(a.origin, a.count, (MPIX_Device_type)a.type,
                                         (MPIX_Device_op)a.op, a.target, a.disp, a.h);
        break;
    default:
        break;
    }
    if (tid == 0) {
        int64_t old;
        uint64_t seen;
        MPIX_Device_target t;

        switch (a.call) {
        case CALL_PUT: r = MPIX_Put_device(a.origin, a.bytes, a.target, a.disp, a.h); break;
        case CALL_GET: r = MPIX_Get_device(a.result, a.bytes, a.target, a.disp, a.h); break;
        case CALL_ACC:
            r = MPIX_Accumulate_device(a.origin, a.count, (MPIX_Device_type)a.type,
                                       (MPIX_Device_op)a.op, a.target, a.disp, a.h);
            break;
        case CALL_FOP:
            r = MPIX_Fetch_and_op_device(a.origin, a.result, (MPIX_Device_type)a.type,
                                         (MPIX_Device_op)a.op, a.target, a.disp, a.h);
            break;
        case CALL_FAA:
            r = MPIX_Fetch_and_add_device(1, &old, a.target, a.disp, a.h);
            break;
        case CALL_CAS:
            r = MPIX_Compare_and_swap_device(1, 0, &seen, a.target, a.disp, a.h);
            break;
        case CALL_PUT_SIGNAL:
            r = MPIX_Put_signal_device(a.origin, a.bytes, a.target, a.disp, a.sig_disp, 1,
                                       MPIX_DEVICE_SIGNAL_ADD, a.h);
            break;
        case CALL_SIGNAL_WAIT:
            /* the word holds the pattern, so EQ 0 would wait forever: only bad input returns */
            r = MPIX_Signal_wait_until_device(a.sig_disp, (MPIX_Device_cmp)a.cmp, 0, &seen, a.h);
            break;
        case CALL_FLUSH: r = MPIX_Win_flush_device(a.target, a.h); break;
        case CALL_FLUSH_LOCAL: r = MPIX_Win_flush_local_device(a.target, a.h); break;
        case CALL_FLUSH_ALL: r = MPIX_Win_flush_all_device(a.h); break;
        case CALL_TARGET: r = MPIX_Win_target_device(a.h, a.target, &t); break;
        case CALL_PUT_TARGET:
            r = MPIX_Win_target_device(a.h, a.target, &t);
            if (r == MPI_SUCCESS) r = MPIX_Put_target_device(&t, a.origin, a.bytes, a.disp);
            break;
        case CALL_PUT_LOOP:
        case CALL_GET_LOOP:
            /* every call must return the same class (-2 when one differs) */
            for (int i = 0; i < LOOP_CALLS; ++i) {
                int ri = a.call == CALL_PUT_LOOP
                             ? MPIX_Put_device(a.origin, a.bytes, a.target, a.disp, a.h)
                             : MPIX_Get_device(a.result, a.bytes, a.target, a.disp, a.h);
                r = i == 0 || ri == r ? ri : -2;
            }
            break;
        default: break;
        }
    }
    rc[tid] = r;
}

/* How many threads record a status for @p call. */
static int call_threads(int call)
{
    return call == CALL_PUT_BLOCK || call == CALL_ACC_BLOCK ? MAX_THREADS
           : call == CALL_PUT_WARP || call == CALL_GET_WARP ? 32
                                                             : 1;
}

static int rank, nranks;

typedef struct {
    MPI_Win win;
    MPIX_Win_device h;
    unsigned char *mem; /* GUARD + window + GUARD */
    size_t len;
    bool gpu;
} twin_t;

static unsigned char fill_byte(int who, int salt, size_t i)
{
    return (unsigned char)(i * 7 + (size_t)who * 13 + (size_t)salt * 29 + 1);
}

static void fill(unsigned char *host, size_t len, int who, int salt)
{
    for (size_t i = 0; i < len; ++i) host[i] = fill_byte(who, salt, i);
}

static const char *cls_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_UNSUPPORTED_OPERATION: return "MPI_ERR_UNSUPPORTED_OPERATION";
    default: return "(other)";
    }
}

static int flush_class(MPI_Win win)
{
    int rc = MPI_Win_flush_all(win), cls = MPI_SUCCESS;

    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    return cls;
}

static void win_copy_out(const twin_t *w, unsigned char *host)
{
    if (w->gpu) {
        CUDA_CHECK(cudaMemcpy(host, w->mem, w->len, cudaMemcpyDeviceToHost));
    } else {
        memcpy(host, w->mem, w->len);
    }
}

static void win_reset(twin_t *w, int wi, unsigned char *host)
{
    fill(host, w->len, rank, wi);
    if (w->gpu) {
        CUDA_CHECK(cudaMemcpy(w->mem, host, w->len, cudaMemcpyHostToDevice));
    } else {
        memcpy(w->mem, host, w->len);
    }
}

static void win_make(twin_t *w, int wi)
{
    MPI_Aint size = (MPI_Aint)win_bytes[wi];

    w->gpu = wi != WIN_H;
    w->len = win_bytes[wi] + 2 * GUARD;
    if (w->gpu) {
        CUDA_CHECK(cudaMalloc(&w->mem, w->len));
    } else {
        w->mem = (unsigned char *)malloc(w->len);
    }
    CHECK(MPI_Win_create(w->mem + GUARD, size, win_unit[wi], MPI_INFO_NULL, MPI_COMM_WORLD,
                         &w->win) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    CHECK(mpi_test_is_gpuic(w->win));
    w->h = {};
    CHECK(MPIX_Win_get_device_handle(w->win, &w->h) == MPI_SUCCESS && w->h.desc != NULL);
}

/* The expected class for @p c; for the host-memory window it depends on whether device calls
 * can reach host memory in this build (@p host_reachable): either way the access is refused. */
static bool class_ok(const dcase_t *c, int got, bool host_reachable)
{
    if (c->win == WIN_H && !host_reachable) {
        return got == c->expect || got == MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return got == c->expect;
}

/* Whether device calls on window H's targets are carried out (a zero-byte put at its start). */
static bool probe_host_reachable(twin_t *wins, int *d_rc)
{
    dargs_t a;
    int r = -1;

    memset(&a, 0, sizeof(a));
    a.call = CALL_PUT;
    a.h = wins[WIN_H].h;
    a.target = (rank + 1) % nranks;
    k_call<<<1, MAX_THREADS>>>(a, d_rc);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(&r, d_rc, sizeof(int), cudaMemcpyDeviceToHost));
    flush_class(wins[WIN_H].win); /* takes the recorded class, if any */
    CHECK(r == MPI_SUCCESS || r == MPI_ERR_UNSUPPORTED_OPERATION);
    return r == MPI_SUCCESS;
}

static void run_cases(twin_t *wins)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int *d_rc, h_rc[MAX_THREADS];
    unsigned char *d_origin, *d_result, *d_corrupt, *host, *want;
    size_t hlen = sizeof(MPIX_Gpuic_device_win) + (size_t)nranks * sizeof(MPIX_Gpuic_device_peer);
    MPIX_Gpuic_device_win *hcopy = (MPIX_Gpuic_device_win *)malloc(hlen);
    bool host_reachable;
    int all_ok = 1;

    host = (unsigned char *)malloc(8192);
    want = (unsigned char *)malloc(8192);
    CUDA_CHECK(cudaMalloc(&d_rc, MAX_THREADS * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_origin, BUF_BYTES));
    CUDA_CHECK(cudaMalloc(&d_result, BUF_BYTES));
    /* a handle that fails the magic check: window A's handle with the magic flipped, pointing
     * to a copy of its description in device memory of its own (flipped too; a released
     * handle's memory is freed, so it cannot be used) */
    CUDA_CHECK(cudaMalloc(&d_corrupt, hlen));
    CUDA_CHECK(cudaMemcpy(hcopy, wins[WIN_A].h.desc, hlen, cudaMemcpyDeviceToHost));
    hcopy->magic ^= 0x1;
    CUDA_CHECK(cudaMemcpy(d_corrupt, hcopy, hlen, cudaMemcpyHostToDevice));
    MPIX_Win_device corrupt = wins[WIN_A].h;
    corrupt.magic ^= 0x1;
    corrupt.desc = (MPIX_Gpuic_device_win *)d_corrupt;

    for (int w = 0; w < NWIN; ++w) MPI_Win_lock_all(0, wins[w].win);
    host_reachable = probe_host_reachable(wins, d_rc);
    if (rank == 0) {
        printf("BEGIN device bad-input table\n");
        printf("| case | call | expected | got | data untouched |\n");
        printf("|---|---|---|---|---|\n");
    }
    for (int ci = 0; ci < NCASES; ++ci) {
        const dcase_t *c = &cases[ci];
        dargs_t a;
        int got, nthr = call_threads(c->call), same = 1, flush_ok = 1, data_ok = 1, ok[3], all[3];
        int flushed[NWIN];

        /* everything back to the pattern, and every rank ready, before anyone writes */
        for (int w = 0; w < NWIN; ++w) win_reset(&wins[w], w, host);
        fill(host, BUF_BYTES, rank, 100);
        CUDA_CHECK(cudaMemcpy(d_origin, host, BUF_BYTES, cudaMemcpyHostToDevice));
        fill(host, BUF_BYTES, rank, 101);
        CUDA_CHECK(cudaMemcpy(d_result, host, BUF_BYTES, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(d_rc, 0xff, MAX_THREADS * sizeof(int)));
        CUDA_CHECK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);

        memset(&a, 0, sizeof(a));
        a.call = c->call;
        a.h = c->handle == H_NULL ? MPIX_Win_device{}
              : c->handle == H_CORRUPT ? corrupt
                                       : wins[c->win].h;
        a.target = c->tsel == T_RIGHT ? right
                   : c->tsel == T_SELF ? rank
                   : c->tsel == T_NRANKS ? nranks
                                         : c->target;
        a.disp = c->disp;
        a.bytes = c->bytes;
        a.count = c->count;
        a.type = c->type;
        a.op = c->op;
        a.sig_disp = c->sig_disp;
        a.cmp = c->cmp;
        a.origin = d_origin;
        a.result = d_result;
        k_call<<<1, MAX_THREADS>>>(a, d_rc);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(h_rc, d_rc, sizeof(h_rc), cudaMemcpyDeviceToHost));
        got = h_rc[0];
        for (int i = 1; i < nthr; ++i) same &= h_rc[i] == got;

        /* the host's next synchronization reports what the call recorded, on its window only */
        for (int w = 0; w < NWIN; ++w) {
            int expect = w == c->win && got != MPI_SUCCESS && got != MPI_ERR_WIN ? got
                                                                                : MPI_SUCCESS;
            flushed[w] = flush_class(wins[w].win);
            flush_ok &= flushed[w] == expect;
            flush_ok &= flush_class(wins[w].win) == MPI_SUCCESS; /* reported once */
        }
        MPI_Barrier(MPI_COMM_WORLD);

        /* every window, guards included, and the origin and result buffers as allowed */
        for (int w = 0; w < NWIN; ++w) {
            win_copy_out(&wins[w], host);
            fill(want, wins[w].len, rank, w);
            if (c->call == CALL_PUT && c->expect == MPI_SUCCESS && w == c->win) {
                for (size_t i = 0; i < c->bytes; ++i) {
                    want[GUARD + CONTROL_DISP + i] = fill_byte(left, 100, i);
                }
            }
            data_ok &= memcmp(host, want, wins[w].len) == 0;
        }
        CUDA_CHECK(cudaMemcpy(host, d_origin, BUF_BYTES, cudaMemcpyDeviceToHost));
        fill(want, BUF_BYTES, rank, 100);
        data_ok &= memcmp(host, want, BUF_BYTES) == 0;
        CUDA_CHECK(cudaMemcpy(host, d_result, BUF_BYTES, cudaMemcpyDeviceToHost));
        fill(want, BUF_BYTES, rank, 101);
        data_ok &= memcmp(host, want, BUF_BYTES) == 0;

        ok[0] = class_ok(c, got, host_reachable) && same;
        ok[1] = flush_ok;
        ok[2] = data_ok;
        if (!ok[0] || !ok[1] || !ok[2]) {
            fprintf(stderr, "[rank %d] case %d (%s, %s): got %s%s, flush %s/%s/%s, data %s\n",
                    rank, ci, c->name, call_name[c->call], cls_name(got),
                    same ? "" : " (threads differ)", cls_name(flushed[WIN_A]),
                    cls_name(flushed[WIN_B]), cls_name(flushed[WIN_H]),
                    data_ok ? "untouched" : "CHANGED");
            mpi_test_failures++;
        }
        MPI_Allreduce(ok, all, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        all_ok &= all[0] && all[1] && all[2];
        if (rank == 0) {
            char expected[96];

            if (c->win == WIN_H && !host_reachable) {
                snprintf(expected, sizeof(expected), "`%s` or `%s`", cls_name(c->expect),
                         cls_name(MPI_ERR_UNSUPPORTED_OPERATION));
            } else {
                snprintf(expected, sizeof(expected), "`%s`", cls_name(c->expect));
            }
            printf("| %s (window %s) | `%s` | %s | `%s`%s; flush: %s | %s |\n", c->name,
                   win_label[c->win], call_name[c->call], expected, cls_name(got),
                   all[0] ? "" : " (WRONG)",
                   all[1] ? (got == MPI_SUCCESS || got == MPI_ERR_WIN ? "clean" : "reported once")
                          : "WRONG",
                   all[2] ? "yes" : "NO");
        }
    }
    if (rank == 0) {
        printf("END device bad-input table\n");
        printf("test_device_bad_input: %d cases on %d ranks, device calls to host memory %s\n",
               NCASES, nranks, host_reachable ? "carried out" : "refused");
    }
    for (int w = 0; w < NWIN; ++w) MPI_Win_unlock_all(wins[w].win);
    CHECK(all_ok);
    cudaFree(d_rc);
    cudaFree(d_origin);
    cudaFree(d_result);
    cudaFree(d_corrupt);
    free(hcopy);
    free(host);
    free(want);
}

int main(int argc, char **argv)
{
    int caps = 0;
    twin_t wins[NWIN];

    if (!device_test_init(&argc, &argv, "test_device_bad_input", &rank, &nranks)) {
        return 77;
    }
    CHECK(MPIX_Gpuic_query_capabilities(&caps) == MPI_SUCCESS &&
          (caps & MPIX_GPUIC_CAP_DEVICE_API));
    for (int w = 0; w < NWIN; ++w) win_make(&wins[w], w);
    run_cases(wins);
    for (int w = 0; w < NWIN; ++w) {
        MPI_Win_free(&wins[w].win);
        if (wins[w].gpu) {
            cudaFree(wins[w].mem);
        } else {
            free(wins[w].mem);
        }
    }
    return mpi_test_finish("test_device_bad_input");
}
