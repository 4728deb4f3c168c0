/*
 * Atomics and accumulate WQEs on the proxy.  Every element update is a single atomic on the
 * target word, so concurrent accumulates from any origin combine exactly, without a window
 * lock: integer SUM/BAND/BOR/BXOR map to add/and/or/xor; everything else (MIN, MAX, REPLACE,
 * floating-point SUM) reads the word atomically and retries a compare-and-swap until the word
 * did not change under it.  The atomic is a UCX one, or a CPU atomic instruction on a mapping
 * where the key-table entry allows it (gpuic_keytable_entry_t.cpu_atomics).
 *
 * Device memory of another process reached through UCX (gpuic_keytable_entry_t.device_memory)
 * takes no UCX atomic: a transport emulating it in software would apply it with the target's
 * CPU, not atomically with the GPU's own atomics.  There every atomic and accumulate is a
 * remote call (gpuic_call.h) to the entry's endpoint, executed by the target on its GPU: one
 * round trip per atomic, per accumulate piece of GPUIC_CALL_ATOMIC_INLINE bytes.
 */
#include <string.h>

#include "gpuic_call.h"
#include "gpuic_keytable.h"

#include "gpuic_log.h"
#include "gpuic_proxy_internal.h"
#include "gpuic_rma.h"

/* The new value of one element; returns 0 for an op/type pair not executed here. */
static int gpuic_proxy_acc_combine(uint8_t op, uint8_t type, uint64_t old, uint64_t operand,
                                   uint64_t *out)
{
    union { uint64_t u; double d; int64_t i; } o64 = {old}, a64 = {operand}, r64;
    union { uint32_t u; float f; int32_t i; } o32 = {(uint32_t)old}, a32 = {(uint32_t)operand},
                                              r32;

    if (op == GPUIC_ACC_REPLACE) {
        *out = operand;
        return 1;
    }
    switch (type) {
    case GPUIC_ACC_INT32:
        r32.i = op == GPUIC_ACC_SUM ? (int32_t)((uint32_t)o32.i + (uint32_t)a32.i)
              : op == GPUIC_ACC_MIN ? (o32.i < a32.i ? o32.i : a32.i)
              : op == GPUIC_ACC_MAX ? (o32.i > a32.i ? o32.i : a32.i) : 0;
        break;
    case GPUIC_ACC_UINT32:
        r32.u = op == GPUIC_ACC_SUM ? o32.u + a32.u
              : op == GPUIC_ACC_MIN ? (o32.u < a32.u ? o32.u : a32.u)
              : op == GPUIC_ACC_MAX ? (o32.u > a32.u ? o32.u : a32.u) : 0;
        break;
    case GPUIC_ACC_FLOAT:
        r32.f = op == GPUIC_ACC_SUM ? o32.f + a32.f
              : op == GPUIC_ACC_MIN ? (a32.f < o32.f ? a32.f : o32.f)
              : op == GPUIC_ACC_MAX ? (a32.f > o32.f ? a32.f : o32.f) : 0;
        break;
    case GPUIC_ACC_INT64:
        r64.i = op == GPUIC_ACC_SUM ? (int64_t)((uint64_t)o64.i + (uint64_t)a64.i)
              : op == GPUIC_ACC_MIN ? (o64.i < a64.i ? o64.i : a64.i)
              : op == GPUIC_ACC_MAX ? (o64.i > a64.i ? o64.i : a64.i) : 0;
        break;
    case GPUIC_ACC_UINT64:
        r64.u = op == GPUIC_ACC_SUM ? o64.u + a64.u
              : op == GPUIC_ACC_MIN ? (o64.u < a64.u ? o64.u : a64.u)
              : op == GPUIC_ACC_MAX ? (o64.u > a64.u ? o64.u : a64.u) : 0;
        break;
    case GPUIC_ACC_DOUBLE:
        r64.d = op == GPUIC_ACC_SUM ? o64.d + a64.d
              : op == GPUIC_ACC_MIN ? (a64.d < o64.d ? a64.d : o64.d)
              : op == GPUIC_ACC_MAX ? (a64.d > o64.d ? a64.d : o64.d) : 0;
        break;
    default:
        return 0;
    }
    if (op != GPUIC_ACC_SUM && op != GPUIC_ACC_MIN && op != GPUIC_ACC_MAX) {
        return 0;
    }
    *out = gpuic_acc_type_size(type) == 4 ? r32.u : r64.u;
    return 1;
}

/* Native UCX atomic for integer SUM and bitwise ops; returns 0 when there is none. */
static int gpuic_proxy_acc_native(uint8_t op, uint8_t type, gpuic_atomic_op_t *aop)
{
    if (type == GPUIC_ACC_FLOAT || type == GPUIC_ACC_DOUBLE) {
        return 0;
    }
    switch (op) {
    case GPUIC_ACC_SUM:  *aop = GPUIC_ATOMIC_ADD; return 1;
    case GPUIC_ACC_BAND: *aop = GPUIC_ATOMIC_AND; return 1;
    case GPUIC_ACC_BOR:  *aop = GPUIC_ATOMIC_OR;  return 1;
    case GPUIC_ACC_BXOR: *aop = GPUIC_ATOMIC_XOR; return 1;
    }
    return 0;
}

/* A CPU atomic of @p size (4 or 8) bytes at @p p; returns the old value (zero-extended).
 * Sequentially consistent, like the host component's CPU atomics on the same windows. */
static uint64_t gpuic_proxy_cpu_atomic(gpuic_atomic_op_t op, void *p, uint32_t size,
                                       uint64_t value, uint64_t compare)
{
    if (size == 4) {
        uint32_t *w = p, v = (uint32_t)value, c = (uint32_t)compare;

        switch (op) {
        case GPUIC_ATOMIC_ADD:  return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_AND:  return __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_OR:   return __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_XOR:  return __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_SWAP: return __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_CSWAP:
            __atomic_compare_exchange_n(w, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return c;
        }
        return 0;
    }
    {
        uint64_t *w = p, c = compare;

        switch (op) {
        case GPUIC_ATOMIC_ADD:  return __atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_AND:  return __atomic_fetch_and(w, value, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_OR:   return __atomic_fetch_or(w, value, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_XOR:  return __atomic_fetch_xor(w, value, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_SWAP: return __atomic_exchange_n(w, value, __ATOMIC_SEQ_CST);
        case GPUIC_ATOMIC_CSWAP:
            __atomic_compare_exchange_n(w, &c, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return c;
        }
    }
    return 0;
}

/*
 * A remote call executing @p count elements of an atomic at the target (device memory):
 * @p call_op GPUIC_CALL_ACC (with @p acc_op) or GPUIC_CALL_CAS, operands little-endian at
 * @p operands, old elements into @p old when not NULL.
 */
static gpuic_status_t gpuic_proxy_remote(const gpuic_keytable_entry_t *e, uint8_t call_op,
                                         int acc_op, int type, uint32_t esize, uint32_t count,
                                         const void *operands, const void *compare,
                                         uint64_t raddr, void *old)
{
    gpuic_call_atomic_t a;
    size_t bytes = (size_t)count * esize, len = 0, in = acc_op == GPUIC_ACC_NO_OP ? 0 : bytes;
    gpuic_status_t status;

    memset(&a, 0, offsetof(gpuic_call_atomic_t, data));
    a.addr = raddr;
    a.count = count;
    a.op = call_op;
    a.flags = old != NULL ? GPUIC_CALL_FETCH : 0;
    a.esize = (uint8_t)esize;
    a.type = type;
    a.acc_op = acc_op;
    if (compare != NULL) {
        memcpy(a.compare, compare, esize);
    }
    memcpy(a.data, operands, in);
    status = gpuic_ep_call(e->ep, &a, gpuic_call_atomic_len(in), old, old != NULL ? bytes : 0,
                           &len);
    if (status == GPUIC_OK && old != NULL && len != bytes) {
        status = GPUIC_ERR_TRANSPORT; /* a reply of the wrong size */
    }
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "atomic on device memory of the target at %#llx, executed "
                  "there: %s", (unsigned long long)raddr, gpuic_status_string(status));
    }
    return status;
}

/* gpuic_proxy_atomic() on device memory of another process: a remote call. */
static gpuic_status_t gpuic_proxy_atomic_remote(const gpuic_keytable_entry_t *e,
                                                gpuic_atomic_op_t op, uint64_t value,
                                                uint64_t compare, uint32_t size,
                                                uint64_t raddr, uint64_t *old_p)
{
    int type = size == 4 ? GPUIC_ACC_UINT32 : GPUIC_ACC_UINT64, acc_op;
    uint64_t old = 0;
    gpuic_status_t status;

    if (size != 4 && size != 8) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    switch (op) {
    case GPUIC_ATOMIC_ADD:  acc_op = GPUIC_ACC_SUM; break;
    case GPUIC_ATOMIC_AND:  acc_op = GPUIC_ACC_BAND; break;
    case GPUIC_ATOMIC_OR:   acc_op = GPUIC_ACC_BOR; break;
    case GPUIC_ATOMIC_XOR:  acc_op = GPUIC_ACC_BXOR; break;
    case GPUIC_ATOMIC_SWAP: acc_op = GPUIC_ACC_REPLACE; break;
    case GPUIC_ATOMIC_CSWAP:
        /* little-endian: the low bytes of the words are the element */
        status = gpuic_proxy_remote(e, GPUIC_CALL_CAS, 0, type, size, 1, &value, &compare, raddr,
                                    &old);
        if (status == GPUIC_OK && old_p != NULL) {
            *old_p = old;
        }
        return status;
    default:
        return GPUIC_ERR_UNSUPPORTED;
    }
    status = gpuic_proxy_remote(e, GPUIC_CALL_ACC, acc_op, type, size, 1, &value, NULL, raddr,
                                old_p != NULL ? &old : NULL);
    if (status == GPUIC_OK && old_p != NULL) {
        *old_p = old;
    }
    return status;
}

int gpuic_proxy_atomic_uses_ucx(const gpuic_keytable_entry_t *e)
{
    return !e->cpu_atomics;
}

gpuic_status_t gpuic_proxy_atomic(const gpuic_keytable_entry_t *e, gpuic_atomic_op_t op,
                                  uint64_t value, uint64_t compare, uint32_t size,
                                  uint64_t raddr, uint64_t *old_p)
{
    if (e->cpu_atomics) {
        uint64_t old = gpuic_proxy_cpu_atomic(op, (void *)(uintptr_t)raddr, size, value, compare);

        if (old_p != NULL) {
            *old_p = old;
        }
        return GPUIC_OK;
    }
    if (e->device_memory && e->ep != NULL) {
        /* executed by the target on its GPU */
        return gpuic_proxy_atomic_remote(e, op, value, compare, size, raddr, old_p);
    }
    if (e->ep == NULL || e->rkey == NULL || e->device_memory) {
        /* a mapping only, or mapped device memory: no atomic both sides share */
        return GPUIC_ERR_UNSUPPORTED;
    }
    if (e->direct) {
        raddr = e->remote_base + (raddr - e->base); /* from the mapping to the owner's */
    }
    if (old_p == NULL) {
        return gpuic_rma_atomic_post(e->ep, op, value, size, raddr, e->rkey);
    }
    return gpuic_rma_atomic_fetch(e->ep, op, value, compare, size, raddr, e->rkey, old_p);
}

static gpuic_status_t gpuic_proxy_acc_cas(const gpuic_keytable_entry_t *e, uint8_t op,
                                          uint8_t type, uint32_t size, uint64_t raddr,
                                          uint64_t operand)
{
    uint64_t old, seen, desired;
    gpuic_status_t status;

    /* fetch-add of zero: an atomic read of the current value */
    status = gpuic_proxy_atomic(e, GPUIC_ATOMIC_ADD, 0, 0, size, raddr, &old);
    while (status == GPUIC_OK) {
        gpuic_proxy_acc_combine(op, type, old, operand, &desired);
        if (desired == old) {
            return GPUIC_OK; /* e.g. MAX that does not change the word */
        }
        status = gpuic_proxy_atomic(e, GPUIC_ATOMIC_CSWAP, desired, old, size, raddr, &seen);
        if (status == GPUIC_OK && seen == old) {
            return GPUIC_OK;
        }
        old = seen;
    }
    return status;
}

gpuic_status_t gpuic_proxy_accumulate(const gpuic_keytable_entry_t *e,
                                      const gpuic_wqe_desc_t *d)
{
    const uint32_t size = gpuic_acc_type_size(d->ext_type);
    const uint8_t *src = (const uint8_t *)(uintptr_t)d->laddr;
    gpuic_atomic_op_t aop;
    uint64_t probe;
    int native;

    if (!gpuic_proxy_acc_combine(d->ext_op, d->ext_type, 0, 0, &probe) &&
        !gpuic_proxy_acc_native(d->ext_op, d->ext_type, &aop)) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate op %u on type %u is not supported", d->ext_op,
                  d->ext_type);
        return GPUIC_ERR_UNSUPPORTED;
    }
    if (d->raddr % size != 0 || (d->ext_count != 0 && src == NULL)) {
        gpuic_log(GPUIC_LOG_DEBUG, "accumulate: misaligned target or no origin buffer");
        return GPUIC_ERR_INVALID_PARAM;
    }
    if (e->device_memory && e->ep != NULL) {
        /* executed by the target on its GPU, in pieces of whole elements */
        uint32_t per = GPUIC_CALL_ATOMIC_INLINE / size;

        for (uint32_t i = 0; i < d->ext_count; i += per) {
            uint32_t n = d->ext_count - i < per ? d->ext_count - i : per;
            gpuic_status_t status = gpuic_proxy_remote(e, GPUIC_CALL_ACC, d->ext_op, d->ext_type,
                                                       size, n, src + (size_t)i * size, NULL,
                                                       d->raddr + (uint64_t)i * size, NULL);

            if (status != GPUIC_OK) {
                return status;
            }
        }
        return GPUIC_OK;
    }
    native = gpuic_proxy_acc_native(d->ext_op, d->ext_type, &aop);
    for (uint32_t i = 0; i < d->ext_count; ++i) {
        uint64_t operand = 0, raddr = d->raddr + (uint64_t)i * size;
        gpuic_status_t status;

        memcpy(&operand, src + (size_t)i * size, size); /* little-endian: low bytes first */
        status = native ? gpuic_proxy_atomic(e, aop, operand, 0, size, raddr, NULL)
                        : gpuic_proxy_acc_cas(e, d->ext_op, d->ext_type, size, raddr, operand);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_DEBUG, "accumulate element %u failed: %s", i,
                      gpuic_status_string(status));
            return status;
        }
    }
    return GPUIC_OK;
}
