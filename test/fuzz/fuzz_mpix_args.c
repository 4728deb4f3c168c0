/*
 * libFuzzer harness for the argument and handle checks of the device API
 * (mpix_gpuic_device_check.h), run on the host.  Each input builds a device window
 * description (a random number of ranks; peers with random base, size, displacement unit and
 * path; sometimes a corrupted magic or a NULL handle) and then makes random calls on it
 * (target, displacement, bytes, count, element type, op, signal displacement, condition).
 *
 * Every result is compared with a reference decision computed independently in 128-bit
 * arithmetic, and:
 *  - an accepted access lies entirely inside the target's window, with the alignment asked
 *    for; peers backed by real memory (exactly the window's size, from malloc) have the
 *    accepted bytes written, so AddressSanitizer sees any access that leaves the window;
 *  - a rejected one returns a class the API documents and leaves the address untouched;
 *  - nothing crashes (built with -fsanitize=fuzzer,address,undefined).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpix_gpuic_device_check.h"

#define MAX_RANKS 8
#define MAX_REAL_SIZE 4096
#define MAX_CALLS 32

typedef unsigned __int128 u128;

/* The input, consumed front to back; zeros once it runs out. */
typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static uint64_t input_take(input_t *in, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; ++i) {
        v <<= 8;
        if (in->n > 0) {
            v |= *in->p++;
            in->n--;
        }
    }
    return v;
}

/* What the harness knows of each peer besides its description. */
typedef struct {
    char *mem; /* malloc'd window of exactly size bytes, or NULL for a fake address */
} peer_shadow_t;

static void fail_if(int cond)
{
    if (cond) {
        abort();
    }
}

/* A displacement unit: usually a real one, sometimes a hostile one. */
static int32_t input_disp_unit(input_t *in)
{
    static const int32_t units[] = {1, 4, 8, 1, 16, 0, -1, INT32_MAX, INT32_MIN, 3};
    uint8_t sel = (uint8_t)input_take(in, 1);

    return sel < 200 ? units[sel % 10] : (int32_t)(uint32_t)input_take(in, 4);
}

/* A rank: the valid ones, their edges and extremes. */
static int input_rank(input_t *in, int nranks)
{
    uint8_t sel = (uint8_t)input_take(in, 1);

    switch (sel % 8) {
    case 0:  return -1;
    case 1:  return nranks;
    case 2:  return sel & 0x80 ? INT_MAX : INT_MIN;
    case 3:  return (int)(uint32_t)input_take(in, 4);
    default: return nranks > 0 ? sel % nranks : 0;
    }
}

/* A displacement near the interesting places of @p peer: 0, its end, the 64-bit edges. */
static MPI_Aint input_disp(input_t *in, const MPIX_Gpuic_device_peer *peer)
{
    uint8_t sel = (uint8_t)input_take(in, 1);
    int64_t delta = (int8_t)input_take(in, 1);
    uint64_t unit = peer->disp_unit > 0 ? (uint64_t)peer->disp_unit : 1;

    switch (sel % 6) {
    case 0:  return (MPI_Aint)delta;
    case 1:  return (MPI_Aint)(peer->size / unit + (uint64_t)delta);
    case 2:  return (MPI_Aint)((uint64_t)INT64_MAX / unit + (uint64_t)delta);
    case 3:  return delta < 0 ? INT64_MIN - (delta + 1) : INT64_MAX - delta;
    default: return (MPI_Aint)input_take(in, 8);
    }
}

/* A byte count near the window's size or the 64-bit edge. */
static size_t input_bytes(input_t *in, const MPIX_Gpuic_device_peer *peer)
{
    uint8_t sel = (uint8_t)input_take(in, 1);
    int64_t delta = (int8_t)input_take(in, 1);

    switch (sel % 5) {
    case 0:  return (size_t)(delta < 0 ? -delta : delta);
    case 1:  return (size_t)(peer->size + (uint64_t)delta);
    case 2:  return SIZE_MAX - (size_t)(delta & 0x7f);
    default: return (size_t)input_take(in, sel & 0x10 ? 8 : 2);
    }
}

/* The reference decision: MPI_SUCCESS with the offset of the access, or the class expected. */
static int ref_resolve(MPIX_Win_device win, int target)
{
    const MPIX_Gpuic_device_peer *p;

    if (win.desc == NULL || win.magic != MPIX_GPUIC_DEVICE_MAGIC) {
        return MPI_ERR_WIN;
    }
    if (target < 0 || target >= win.nranks) {
        return MPI_ERR_RANK;
    }
    p = &win.desc->peers[target];
    /* the proxy path needs the window's device queue */
    if (p->path != MPIX_GPUIC_DEVICE_PATH_P2P &&
        !(p->path == MPIX_GPUIC_DEVICE_PATH_PROXY && win.queue != NULL)) {
        return p->size == 0 ? MPI_ERR_RMA_RANGE : MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return MPI_SUCCESS;
}

static int ref_range(const MPIX_Gpuic_device_peer *p, MPI_Aint disp, size_t bytes, size_t align,
                     uint64_t *offset)
{
    /* the displacement unit is used as the unsigned value of its 64-bit sign extension */
    u128 off = (u128)(uint64_t)disp * (u128)(uint64_t)(int64_t)p->disp_unit;

    if (disp < 0 || off > (u128)p->size || (u128)bytes > (u128)p->size - off) {
        return MPI_ERR_RMA_RANGE;
    }
    *offset = (uint64_t)off;
    return ((p->base + *offset) & (align - 1)) != 0 ? MPI_ERR_ARG : MPI_SUCCESS;
}

/* Checks an accepted access against the peer and writes it when the peer is real memory. */
static void check_inside(const MPIX_Gpuic_device_peer *p, const peer_shadow_t *s,
                         const char *addr, size_t bytes, size_t align, uint64_t ref_offset)
{
    uint64_t off = (uint64_t)(uintptr_t)addr - p->base;

    fail_if((uint64_t)(uintptr_t)addr < p->base);
    fail_if(off != ref_offset);
    fail_if(off > p->size || bytes > p->size - off);
    fail_if(((uintptr_t)addr & (align - 1)) != 0);
    if (s->mem != NULL && bytes > 0) {
        memset((char *)addr, 0xa5, bytes); /* ASan: must stay inside the malloc'd window */
    }
}

static int is_documented(int rc)
{
    return rc == MPI_SUCCESS || rc == MPI_ERR_WIN || rc == MPI_ERR_RANK ||
           rc == MPI_ERR_RMA_RANGE || rc == MPI_ERR_ARG || rc == MPI_ERR_UNSUPPORTED_OPERATION;
}

/* One call on a resolved target: a plain range, an aligned (atomic) one, or a signal. */
static void call_target(input_t *in, MPIX_Win_device win, const peer_shadow_t *shadow,
                        int nranks)
{
    static char *const untouched = (char *)(uintptr_t)0x5a5a5a5a;
    MPIX_Device_target t;
    int target = input_rank(in, nranks);
    int rc = gpuic_dev_target_resolve(win, target, &t), ref = ref_resolve(win, target);
    const MPIX_Gpuic_device_peer *p = ref == MPI_SUCCESS ? &win.desc->peers[target] : NULL;
    MPIX_Gpuic_device_peer none = {0, 0, 1, 0, 0, 0};
    uint8_t kind = (uint8_t)input_take(in, 1);
    MPI_Aint disp = input_disp(in, p != NULL ? p : &none);
    size_t bytes = input_bytes(in, p != NULL ? p : &none);
    char *addr = untouched, *sig = untouched;
    uint64_t off = 0, sig_off = 0;

    fail_if(rc != ref || t.status != rc);
    fail_if(rc == MPI_ERR_WIN ? t.desc != NULL : t.desc != win.desc);
    if (kind % 3 == 2) {
        MPI_Aint sig_disp = input_disp(in, p != NULL ? p : &none);

        rc = gpuic_dev_target_signal(&t, disp, bytes, sig_disp, &addr, &sig);
        if (ref == MPI_SUCCESS) {
            ref = ref_range(p, disp, bytes, 1, &off);
        }
        if (ref == MPI_SUCCESS) {
            ref = ref_range(p, sig_disp, 8, 8, &sig_off);
        }
        fail_if(rc != ref || !is_documented(rc));
        if (rc == MPI_SUCCESS) {
            check_inside(p, &shadow[target], addr, bytes, 1, off);
            check_inside(p, &shadow[target], sig, 8, 8, sig_off);
        } else {
            /* only a misaligned signal word leaves its computed address behind */
            fail_if(rc != MPI_ERR_ARG && sig != untouched);
        }
        return;
    }
    {
        size_t align = kind % 3 == 1 ? 8 : 1;

        rc = gpuic_dev_target_range(&t, disp, bytes, align, &addr);
        if (ref == MPI_SUCCESS) {
            ref = ref_range(p, disp, bytes, align, &off);
        }
        fail_if(rc != ref || !is_documented(rc));
        if (rc == MPI_SUCCESS) {
            check_inside(p, &shadow[target], addr, bytes, align, off);
        } else {
            /* a misaligned access leaves a computed address behind, never an out-of-range one */
            fail_if(rc != MPI_ERR_ARG && addr != untouched);
        }
    }
}

/* One accumulate or fetch-and-op check, with random count, element type and op. */
static void call_acc(input_t *in, MPIX_Win_device win, const peer_shadow_t *shadow, int nranks)
{
    static char *const untouched = (char *)(uintptr_t)0x5a5a5a5a;
    int target = input_rank(in, nranks);
    int type = (int)(int8_t)input_take(in, 1) % 8;
    int op = (int)(int8_t)input_take(in, 1) % 14;
    uint8_t sel = (uint8_t)input_take(in, 1);
    int count = sel < 128 ? sel % 16 : (int)(uint32_t)input_take(in, 4);
    int ok_win = win.desc != NULL && win.magic == MPIX_GPUIC_DEVICE_MAGIC;
    const MPIX_Gpuic_device_peer *p = NULL;
    MPIX_Gpuic_device_peer none = {0, 0, 1, 0, 0, 0};
    MPI_Aint disp;
    char *addr = untouched;
    uint64_t off = 0;
    size_t esize = (type == MPIX_DEVICE_INT32 || type == MPIX_DEVICE_UINT32 ||
                    type == MPIX_DEVICE_FLOAT)
                       ? 4
                       : 8;
    int rc, ref;

    if (ok_win && target >= 0 && target < win.nranks) {
        p = &win.desc->peers[target];
    }
    disp = input_disp(in, p != NULL ? p : &none);
    rc = gpuic_dev_acc_check(count, (MPIX_Device_type)type, (MPIX_Device_op)op, target, disp,
                             win, &addr);
    if (!ok_win) {
        ref = MPI_ERR_WIN;
    } else if (type < 0 || type > MPIX_DEVICE_DOUBLE || op < 0 || op > MPIX_DEVICE_NO_OP ||
               count < 0 ||
               (type >= MPIX_DEVICE_FLOAT && op >= MPIX_DEVICE_BAND && op <= MPIX_DEVICE_LXOR)) {
        ref = MPI_ERR_ARG;
    } else {
        ref = ref_resolve(win, target);
        if (ref == MPI_SUCCESS) {
            ref = ref_range(p, disp, (size_t)count * esize, esize, &off);
        }
    }
    fail_if(rc != ref || !is_documented(rc));
    if (rc == MPI_SUCCESS) {
        check_inside(p, &shadow[target], addr, (size_t)count * esize, esize, off);
    } else {
        fail_if(rc != MPI_ERR_ARG && addr != untouched);
    }
}

/* The rank check of the flush calls and the condition check of the signal wait. */
static void call_misc(input_t *in, MPIX_Win_device win, int nranks)
{
    int target = input_rank(in, nranks);
    int cmp = (int)(int8_t)input_take(in, 1) % 8;
    int rc = gpuic_dev_check_rank(win, target), ref = ref_resolve(win, target);

    if (ref == MPI_ERR_RMA_RANGE || ref == MPI_ERR_UNSUPPORTED_OPERATION) {
        ref = MPI_SUCCESS; /* the flushes check the rank only */
    }
    fail_if(rc != ref);
    fail_if(gpuic_dev_check_win(win) != (win.desc != NULL && win.magic == MPIX_GPUIC_DEVICE_MAGIC
                                              ? MPI_SUCCESS
                                              : MPI_ERR_WIN));
    fail_if(gpuic_dev_check_cmp((MPIX_Device_cmp)cmp) !=
            (cmp >= 0 && cmp <= MPIX_DEVICE_CMP_LE ? MPI_SUCCESS : MPI_ERR_ARG));
}

/* Builds the window description: peers of real memory or fake (never touched) addresses. */
static MPIX_Gpuic_device_win *window_build(input_t *in, peer_shadow_t *shadow, int *nranks_out,
                                           int *null_handle)
{
    int nranks = (int)(input_take(in, 1) % (MAX_RANKS + 1));
    uint8_t handle = (uint8_t)input_take(in, 1);
    MPIX_Gpuic_device_win *win = malloc(sizeof(*win) + (size_t)nranks * sizeof(win->peers[0]));

    fail_if(win == NULL);
    win->magic = MPIX_GPUIC_DEVICE_MAGIC;
    if (handle % 16 == 0) {
        win->magic ^= 1ull << (handle >> 4); /* a released or corrupted handle */
    }
    win->rank = 0;
    win->nranks = nranks;
    win->error_word = NULL;
    win->flags = handle & MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU;
    win->reserved = 0;
    /* a queue is never touched by the checks: any non-NULL address stands for one */
    win->queue = (handle & 0x20) ? (MPIX_Gpuic_device_queue *)(uintptr_t)0x1000 : NULL;
    for (int i = 0; i < nranks; ++i) {
        MPIX_Gpuic_device_peer *p = &win->peers[i];
        uint8_t kind = (uint8_t)input_take(in, 1);

        p->disp_unit = input_disp_unit(in);
        p->path = kind % 4 == 0 ? MPIX_GPUIC_DEVICE_PATH_NONE
                  : kind % 4 == 3 ? (int32_t)(kind >> 2) - 32
                                  : MPIX_GPUIC_DEVICE_PATH_P2P;
        p->flags = kind >> 7;
        p->key = 0;
        shadow[i].mem = NULL;
        if (kind & 0x10) {
            /* fake: any size, a base above the null page that keeps base + size inside the
             * address space (as every real window does) */
            p->size = input_take(in, 8) >> (input_take(in, 1) % 64);
            p->base = input_take(in, 8);
            if (p->size > UINT64_MAX - 0x1000) {
                p->size = UINT64_MAX - 0x1000;
            }
            if (p->base < 0x1000) {
                p->base = 0x1000;
            }
            if (p->base > UINT64_MAX - p->size) {
                p->base = UINT64_MAX - p->size;
            }
        } else {
            p->size = input_take(in, 2) % (MAX_REAL_SIZE + 1);
            /* a window of exactly size bytes (malloc(0) may be NULL: a base of its own) */
            shadow[i].mem = malloc(p->size > 0 ? p->size : 1);
            fail_if(shadow[i].mem == NULL);
            p->base = (uint64_t)(uintptr_t)shadow[i].mem;
            if (p->size == 0) {
                free(shadow[i].mem);
                shadow[i].mem = NULL; /* nothing may be touched in an empty window */
            }
        }
    }
    *nranks_out = nranks;
    *null_handle = handle % 16 == 1;
    return win;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size};
    peer_shadow_t shadow[MAX_RANKS];
    int nranks, null_handle;
    MPIX_Gpuic_device_win *built = window_build(&in, shadow, &nranks, &null_handle);
    MPIX_Win_device win;

    /* the handle as MPIX_Win_get_device_handle makes it (all zero: no handle) */
    memset(&win, 0, sizeof(win));
    if (!null_handle) {
        win = gpuic_dev_handle_of(built, built);
    }

    for (int call = 0; call < MAX_CALLS && in.n > 0; ++call) {
        switch (input_take(&in, 1) % 3) {
        case 0:  call_target(&in, win, shadow, nranks); break;
        case 1:  call_acc(&in, win, shadow, nranks); break;
        default: call_misc(&in, win, nranks); break;
        }
    }
    for (int i = 0; i < nranks; ++i) {
        free(shadow[i].mem);
    }
    free(built);
    return 0;
}
