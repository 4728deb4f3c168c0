/*
 * The proxy's validation and execution of one WQE: every access is checked against the
 * queue's key table (index, generation, live entry, the entry's target, the whole range)
 * before anything is touched, then made through UCX, through a local mapping (copies, CPU
 * atomics) or through the copy function for device memory (gpuic_proxy_params_t.copy).
 *
 * A put's or get's local buffer may be device memory of the queue's owner (lkey
 * GPUIC_WQE_LKEY_DEVICE): the copy function moves it to or from a mapped target, UCX takes it
 * as it is where it reaches device memory, and otherwise it goes through the proxy's bounce
 * buffer piece by piece.  That range is not checked against a key: it is the producer's own
 * memory (as the staging areas it may name are), and it goes only to the copy engine or the
 * transport; the proxy thread never loads or stores it.
 *
 * A put-with-signal to device memory of another process carrying at most
 * GPUIC_CALL_ATOMIC_INLINE bytes is one remote call the target executes in order (data, then
 * signal); a larger one is a put, an endpoint flush, then the signal update.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuic_call.h"
#include "gpuic_log.h"
#include "gpuic_proxy_internal.h"

/* Looks up a key for an access and checks the region belongs to the WQE's target. */
static gpuic_status_t gpuic_proxy_check(const gpuic_proxy_attached_t *a, uint32_t target,
                                        uint32_t rkey, uint64_t raddr, uint64_t len,
                                        const gpuic_keytable_entry_t **e_p)
{
    gpuic_status_t status = gpuic_keytable_lookup(a->q.keys, rkey, raddr, len, e_p);

    if (status == GPUIC_OK && (*e_p)->target != target) {
        return GPUIC_ERR_BAD_KEY; /* a key of another target's region */
    }
    return status;
}

/* Whether the WQE's local buffer is device memory (GPUIC_WQE_LKEY_DEVICE). */
static int gpuic_proxy_local_device(const gpuic_wqe_desc_t *d)
{
    return d->inline_data == NULL && d->lkey == GPUIC_WQE_LKEY_DEVICE;
}

/* Copies through a direct entry's mapping (synchronous): CPU loads and stores for host
 * memory on both sides, the copy function where either side is device memory (the entry's,
 * or the WQE's local buffer when @p local_device). */
static gpuic_status_t gpuic_proxy_copy_direct(gpuic_proxy_t *proxy,
                                              const gpuic_keytable_entry_t *e, int local_device,
                                              void *dst, const void *src, size_t len)
{
    if (e->direct == GPUIC_KEYTABLE_DIRECT_HOST && !local_device) {
        memcpy(dst, src, len);
        return GPUIC_OK;
    }
    if (proxy->params.copy == NULL) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    return proxy->params.copy(dst, src, len);
}

/* Moves a put's or get's data through a direct entry's mapping (synchronous). */
static gpuic_status_t gpuic_proxy_copy(gpuic_proxy_t *proxy, const gpuic_keytable_entry_t *e,
                                       const gpuic_wqe_desc_t *d, uint64_t raddr, uint32_t len)
{
    void *remote = (void *)(uintptr_t)raddr;
    int device = gpuic_proxy_local_device(d);

    if (d->opcode == GPUIC_WQE_OP_RDMA_READ) {
        return gpuic_proxy_copy_direct(proxy, e, device, (void *)(uintptr_t)d->laddr, remote,
                                       len);
    }
    return gpuic_proxy_copy_direct(proxy, e, device, remote,
                                   d->inline_data != NULL ? (const void *)d->inline_data
                                                          : (const void *)(uintptr_t)d->laddr,
                                   len);
}

/*
 * A put or get (or a put-with-signal's data) between device memory of the WQE and a region
 * reached through UCX, when UCX cannot reach device memory: through the bounce buffer, one
 * piece at a time, each locally complete before the next (a put's piece read out of the
 * buffer, a get's arrived and copied to the device); the last piece's put completes at the
 * target with the round's flush, as any UCX put.
 */
static gpuic_status_t gpuic_proxy_bounce(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                         const gpuic_keytable_entry_t *e,
                                         const gpuic_wqe_desc_t *d)
{
    int get = d->opcode == GPUIC_WQE_OP_RDMA_READ;
    char *local = (char *)(uintptr_t)d->laddr;
    gpuic_status_t status = GPUIC_OK;

    if (proxy->bounce == NULL) {
        proxy->bounce = malloc(GPUIC_PROXY_BOUNCE_BYTES);
        if (proxy->bounce == NULL) {
            return GPUIC_ERR_NO_MEMORY;
        }
    }
    op->round->ucx = 1;
    for (size_t off = 0, n; off < d->len && status == GPUIC_OK; off += n) {
        gpuic_lcc_t lcc = {0};

        n = d->len - off < GPUIC_PROXY_BOUNCE_BYTES ? d->len - off : GPUIC_PROXY_BOUNCE_BYTES;
        if (get) {
            status = gpuic_rma_get_lcc(e->ep, proxy->bounce, n, d->raddr + off, e->rkey, &lcc);
        } else {
            status = proxy->params.copy(proxy->bounce, local + off, n);
            if (status == GPUIC_OK) {
                status = gpuic_rma_put_lcc(e->ep, proxy->bounce, n, d->raddr + off, e->rkey,
                                           &lcc);
            }
        }
        if (status == GPUIC_OK) {
            status = gpuic_lcc_wait(proxy->params.ctx, &lcc);
        }
        if (status == GPUIC_OK && get) {
            status = proxy->params.copy(local + off, proxy->bounce, n);
        }
    }
    return status;
}

/*
 * Whether a put or get whose local buffer is device memory cannot be made here: a mapped
 * target, or UCX without device memory, needs the copy function.  Checked before anything
 * moves.
 */
static int gpuic_proxy_device_refused(const gpuic_proxy_t *proxy,
                                      const gpuic_keytable_entry_t *e, const gpuic_wqe_desc_t *d)
{
    return gpuic_proxy_local_device(d) && proxy->params.copy == NULL &&
           (e->direct || !proxy->ucx_device);
}

/* A UCX put through an entry's endpoint and key, complete at the target on return (its
 * endpoint flushed), so that what follows it is seen after it. */
static gpuic_status_t gpuic_proxy_put_complete(gpuic_proxy_op_t *op,
                                               const gpuic_keytable_entry_t *e, const void *src,
                                               size_t len, uint64_t raddr)
{
    gpuic_status_t status;

    op->round->ucx = 1;
    status = gpuic_rma_put(e->ep, src, len, raddr, e->rkey);
    return status == GPUIC_OK ? gpuic_ep_flush(e->ep) : status;
}

/* The data of a put-with-signal, complete at the target on return (the signal may follow):
 * a synchronous copy through a direct entry's mapping, or a UCX put (through the bounce
 * buffer for device memory UCX does not reach) and an endpoint flush. */
static gpuic_status_t gpuic_proxy_put_signal_data(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                                  const gpuic_wqe_desc_t *d,
                                                  const gpuic_keytable_entry_t *e)
{
    gpuic_status_t status;

    if (d->len == 0) {
        return GPUIC_OK;
    }
    if (e->direct) {
        return gpuic_proxy_copy_direct(proxy, e, gpuic_proxy_local_device(d),
                                       (void *)(uintptr_t)d->raddr,
                                       (const void *)(uintptr_t)d->laddr, d->len);
    }
    if (gpuic_proxy_local_device(d) && !proxy->ucx_device) {
        status = gpuic_proxy_bounce(proxy, op, e, d);
        return status == GPUIC_OK ? gpuic_ep_flush(e->ep) : status;
    }
    return gpuic_proxy_put_complete(op, e, (const void *)(uintptr_t)d->laddr, d->len, d->raddr);
}

/* The signal update of a put-with-signal, once its data is in place: an atomic (CPU or UCX,
 * as the signal word's entry says, so that it is atomic against every other update of the
 * word), or, on a mapping without an atomic both sides share and on device memory reached
 * through UCX, a plain 8-byte write for a set (an add would not be atomic against the target's
 * own updates), complete at the target before the entry completes. */
static gpuic_status_t gpuic_proxy_put_signal_word(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                                  const gpuic_wqe_desc_t *d,
                                                  const gpuic_keytable_entry_t *se)
{
    uint64_t value = d->ext_value, old;

    if (se->device_memory) {
        /* a set is a write; an add is executed by the target on its GPU (remote call) */
        if (d->ext_op == GPUIC_SIGNAL_ADD) {
            return gpuic_proxy_atomic(se, GPUIC_ATOMIC_ADD, value, 0, 8, d->sig_raddr, NULL);
        }
        return gpuic_proxy_put_complete(op, se, &value, sizeof(value), d->sig_raddr);
    }
    if (se->cpu_atomics || (se->ep != NULL && se->rkey != NULL)) {
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(se);
        if (d->ext_op == GPUIC_SIGNAL_ADD) {
            return gpuic_proxy_atomic(se, GPUIC_ATOMIC_ADD, value, 0, 8, d->sig_raddr,
                                      se->cpu_atomics ? &old : NULL);
        }
        return gpuic_proxy_atomic(se, GPUIC_ATOMIC_SWAP, value, 0, 8, d->sig_raddr, &old);
    }
    if (d->ext_op == GPUIC_SIGNAL_ADD) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    if (se->direct == GPUIC_KEYTABLE_DIRECT_HOST) {
        /* the data stores before it for whoever reads the word with acquire */
        __atomic_store_n((uint64_t *)(uintptr_t)d->sig_raddr, value, __ATOMIC_RELEASE);
        return GPUIC_OK;
    }
    return gpuic_proxy_copy_direct(proxy, se, 0, (void *)(uintptr_t)d->sig_raddr, &value,
                                   sizeof(value));
}

/* Whether a put-with-signal goes as one remote call (gpuic_proxy_put_signal_call()): data and
 * signal word in device memory of one target reached through UCX, the data small enough to
 * travel in the request, and bytes the proxy can read (a device buffer only with the copy
 * function). */
static int gpuic_proxy_put_signal_fits(const gpuic_proxy_t *proxy, const gpuic_wqe_desc_t *d,
                                       const gpuic_keytable_entry_t *e,
                                       const gpuic_keytable_entry_t *se)
{
    return !e->direct && !se->direct && e->device_memory && se->device_memory &&
           e->ep != NULL && e->ep == se->ep && d->len <= GPUIC_CALL_ATOMIC_INLINE &&
           (!gpuic_proxy_local_device(d) || proxy->params.copy != NULL);
}

/*
 * A put-with-signal to device memory of another process as one remote call, which the target
 * executes in order (the data, then the signal update, on its GPU): complete at the target on
 * return, one round trip where a put, its flush and then the signal would take two.  The
 * endpoint is flushed first, as the data's put was before: the signal is a release, so earlier
 * puts to the target (still in flight through UCX, whose active messages are not ordered with
 * its RMA) complete before it; with nothing in flight that flush returns at once.
 * GPUIC_ERR_UNSUPPORTED when the target executes no such call (nothing was written there).
 */
static gpuic_status_t gpuic_proxy_put_signal_call(gpuic_proxy_t *proxy,
                                                  const gpuic_wqe_desc_t *d,
                                                  const gpuic_keytable_entry_t *e)
{
    gpuic_call_atomic_t a;
    gpuic_status_t status = GPUIC_OK;

    memset(&a, 0, offsetof(gpuic_call_atomic_t, data));
    a.addr = d->raddr;
    a.count = d->len;
    a.op = GPUIC_CALL_PUT_SIGNAL;
    a.esize = 1;
    a.type = GPUIC_ACC_UINT64;
    a.acc_op = d->ext_op == GPUIC_SIGNAL_ADD ? GPUIC_ACC_SUM : GPUIC_ACC_REPLACE;
    a.sig_addr = d->sig_raddr;
    memcpy(a.compare, &d->ext_value, sizeof(d->ext_value));
    if (d->len > 0) {
        if (d->inline_data != NULL) {
            memcpy(a.data, d->inline_data, d->len);
        } else if (gpuic_proxy_local_device(d)) {
            status = proxy->params.copy(a.data, (const void *)(uintptr_t)d->laddr, d->len);
        } else {
            memcpy(a.data, (const void *)(uintptr_t)d->laddr, d->len);
        }
    }
    if (status == GPUIC_OK) {
        status = gpuic_ep_flush(e->ep);
    }
    if (status == GPUIC_OK) {
        status = gpuic_ep_call(e->ep, &a, gpuic_call_atomic_len(d->len), NULL, 0, NULL);
    }
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "put-with-signal to device memory of the target at %#llx, "
                  "executed there: %s", (unsigned long long)d->raddr,
                  gpuic_status_string(status));
    }
    return status;
}

/*
 * The puts of a GPUIC_WQE_OP_PUT8_MULTI entry: every one checked before any is made (a bad one
 * fails the entry with nothing written), then copied through the key's mapping.  The puts share
 * the entry's key: it is looked up once, and each address checked against its region.  On host
 * memory each put is one 8-byte store; producers post these entries by the million, so the
 * per-put cost is the proxy's message rate.  Producers use these entries only for targets the
 * proxy reaches through a mapping (MPIX_GPUIC_DEVICE_PEER_PROXY_MAPPED); over UCX each put
 * would need its payload kept until its local completion, so such entries are refused there.
 */
static gpuic_status_t gpuic_proxy_put8_multi(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                             gpuic_proxy_op_t *op, const gpuic_wqe_desc_t *d)
{
    const gpuic_keytable_entry_t *e = NULL;
    unsigned n = d->ds - 1;
    gpuic_status_t status;

    status = gpuic_proxy_check(a, d->target, d->rkey, gpuic_be64toh(d->put8[0].raddr), 8, &e);
    if (status != GPUIC_OK) {
        return status;
    }
    if (!e->direct) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    for (unsigned i = 1; i < n; ++i) {
        if (!gpuic_keytable_covers(e, gpuic_be64toh(d->put8[i].raddr), 8)) {
            return GPUIC_ERR_OUT_OF_RANGE;
        }
    }
    GPUIC_TRACE_POINT(issued, op);
    if (e->direct == GPUIC_KEYTABLE_DIRECT_HOST) {
        for (unsigned i = 0; i < n; ++i) {
            memcpy((void *)(uintptr_t)gpuic_be64toh(d->put8[i].raddr), d->put8[i].data, 8);
        }
        return GPUIC_OK;
    }
    for (unsigned i = 0; i < n; ++i) {
        status = gpuic_proxy_copy_direct(proxy, e, 0,
                                         (void *)(uintptr_t)gpuic_be64toh(d->put8[i].raddr),
                                         d->put8[i].data, 8);
        if (status != GPUIC_OK) {
            return status;
        }
    }
    return GPUIC_OK;
}

gpuic_status_t gpuic_proxy_execute(gpuic_proxy_t *proxy, gpuic_proxy_attached_t *a,
                                   gpuic_proxy_op_t *op, const gpuic_wqe_desc_t *d)
{
    const gpuic_keytable_entry_t *e, *se;
    gpuic_status_t status;
    uint64_t old;

    if (d->len > proxy->params.max_msg_size) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if (d->opcode != GPUIC_WQE_OP_RDMA_WRITE || (d->flags & GPUIC_WQE_CTRL_FENCE)) {
        gpuic_proxy_puts_issue(proxy); /* held puts go before it, as they were posted */
    }
    if (d->flags & GPUIC_WQE_CTRL_FENCE) {
        /* hardware semantics: earlier WQEs complete before this one starts */
        status = gpuic_context_flush(proxy->params.ctx);
        if (status != GPUIC_OK) {
            return status;
        }
    }
    switch (d->opcode) {
    case GPUIC_WQE_OP_RDMA_WRITE:
    case GPUIC_WQE_OP_RDMA_READ:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->len == 0) {
            return GPUIC_OK;
        }
        if (d->inline_data == NULL && d->laddr == 0) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        if (gpuic_proxy_device_refused(proxy, e, d)) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        GPUIC_TRACE_POINT(issued, op);
        if (e->direct) {
            return gpuic_proxy_copy(proxy, e, d, d->raddr, d->len);
        }
        if (gpuic_proxy_local_device(d) && !proxy->ucx_device) {
            return gpuic_proxy_bounce(proxy, op, e, d);
        }
        /* device memory otherwise goes to UCX as it is: UCX finds its memory type */
        op->round->ucx = 1;
        if (d->opcode == GPUIC_WQE_OP_RDMA_READ) {
            return gpuic_rma_get_nb(e->ep, (void *)(uintptr_t)d->laddr, d->len, d->raddr,
                                    e->rkey, &op->comp);
        }
        if (d->inline_data != NULL) {
            return gpuic_rma_put_nb(e->ep, d->inline_data, d->len, d->raddr, e->rkey, &op->comp);
        }
        /* a buffer's bytes may continue another put's: held and merged (gpuic_proxy_merge.c) */
        return gpuic_proxy_put_hold(proxy, op, e, (const void *)(uintptr_t)d->laddr, d->len,
                                    d->raddr, gpuic_proxy_local_device(d));
    case GPUIC_WQE_OP_ATOMIC_FA:
    case GPUIC_WQE_OP_ATOMIC_CS:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, 8, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->raddr % 8 != 0 || d->laddr == 0) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        /* the old value is stored by the CPU: not into device memory */
        if (e->direct == GPUIC_KEYTABLE_DIRECT_COPY || d->lkey == GPUIC_WQE_LKEY_DEVICE) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        GPUIC_TRACE_POINT(issued, op);
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(e);
        /* The proxy executes atomics in host byte order (the WQE operands are big-endian,
         * as on the wire; the decoder converted them). */
        status = gpuic_proxy_atomic(e, d->opcode == GPUIC_WQE_OP_ATOMIC_FA ? GPUIC_ATOMIC_ADD
                                                                           : GPUIC_ATOMIC_CSWAP,
                                    d->swap_add, d->compare, 8, d->raddr, &old);
        if (status == GPUIC_OK) {
            memcpy((void *)(uintptr_t)d->laddr, &old, sizeof(old));
        }
        return status;
    case GPUIC_WQE_OP_ACCUMULATE:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status != GPUIC_OK) {
            return status;
        }
        GPUIC_TRACE_POINT(issued, op);
        /* the operands are read by the CPU: not from device memory */
        if (e->direct == GPUIC_KEYTABLE_DIRECT_COPY || d->lkey == GPUIC_WQE_LKEY_DEVICE) {
            return GPUIC_ERR_UNSUPPORTED;
        }
        op->round->ucx |= gpuic_proxy_atomic_uses_ucx(e);
        return gpuic_proxy_accumulate(e, d);
    case GPUIC_WQE_OP_PUT8_MULTI:
        return gpuic_proxy_put8_multi(proxy, a, op, d);
    case GPUIC_WQE_OP_PUT_SIGNAL:
        status = gpuic_proxy_check(a, d->target, d->rkey, d->raddr, d->len, &e);
        if (status == GPUIC_OK) {
            status = gpuic_proxy_check(a, d->target, d->sig_rkey, d->sig_raddr, 8, &se);
        }
        if (status != GPUIC_OK) {
            return status;
        }
        if (d->sig_raddr % 8 != 0 || (d->len != 0 && d->laddr == 0)) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        if (gpuic_proxy_device_refused(proxy, e, d)) {
            return GPUIC_ERR_UNSUPPORTED; /* refused before the data moves */
        }
        GPUIC_TRACE_POINT(issued, op);
        if (d->ext_op == GPUIC_SIGNAL_ADD && !se->cpu_atomics &&
            (se->ep == NULL || se->rkey == NULL)) {
            return GPUIC_ERR_UNSUPPORTED; /* refused before the data moves */
        }
        if (gpuic_proxy_put_signal_fits(proxy, d, e, se)) {
            status = gpuic_proxy_put_signal_call(proxy, d, e);
            if (status != GPUIC_ERR_UNSUPPORTED) {
                return status;
            }
            /* a target without the call: the data, then the signal, as below */
        }
        /* the data must be complete at the target before the signal can be seen */
        status = gpuic_proxy_put_signal_data(proxy, op, d, e);
        if (status != GPUIC_OK) {
            return status;
        }
        return gpuic_proxy_put_signal_word(proxy, op, d, se);
    }
    return GPUIC_ERR_BAD_OPCODE;
}
