/*
 * The proxy's put merging.  A put through UCX from a buffer the WQE names (staging or device
 * memory, not an inline payload) is held while its round drains and issued with the round's
 * other held puts before anything else of the round is executed: sorted by endpoint, key and
 * remote address, and where a put's local and remote bytes both continue the previous one's,
 * the two go as one UCX put (up to GPUIC_PROXY_MERGE_BYTES).  A kernel whose blocks each put a
 * slice of one buffer to consecutive addresses of a target then costs the transport a few
 * messages instead of one per block.  Puts are not ordered among themselves (MPI, device
 * API), so their order of issue is free; every other WQE (gets, atomics, accumulates,
 * signals, fences) waits for the held puts to be issued, so its place after them in its ring
 * is kept.
 */
#include <stdlib.h>

#include "gpuic_proxy_internal.h"

/* Held puts after which the proxy issues them without waiting for the round's end: bounds
 * the array and the delay of the first. */
#define GPUIC_PROXY_PUTS_MAX 1024

/* Largest merged put: past a few hundred KiB a message's fixed cost is small against its
 * bytes, and a larger message can take a slower protocol of the transport (device memory over
 * tcp: docs/performance.md).  A single put larger than this still goes whole. */
#define GPUIC_PROXY_MERGE_BYTES (256u << 10)

static int gpuic_proxy_put_cmp(const void *pa, const void *pb)
{
    const gpuic_proxy_put_t *a = pa, *b = pb;

    if (a->ep != b->ep) {
        return (uintptr_t)a->ep < (uintptr_t)b->ep ? -1 : 1;
    }
    if (a->rkey != b->rkey) {
        return (uintptr_t)a->rkey < (uintptr_t)b->rkey ? -1 : 1;
    }
    if (a->raddr != b->raddr) {
        return a->raddr < b->raddr ? -1 : 1;
    }
    return a->order < b->order ? -1 : a->order > b->order; /* posting order among equals */
}

/* Whether @p next continues the run that starts at @p head and holds @p len bytes so far:
 * same endpoint, key and memory kind, local and remote bytes adjacent, device memory within
 * one allocation (what UCX registers or copies as one), the whole at most
 * GPUIC_PROXY_MERGE_BYTES. */
static int gpuic_proxy_put_continues(gpuic_proxy_t *proxy, const gpuic_proxy_put_t *head,
                                     uint64_t len, const gpuic_proxy_put_t *next)
{
    uintptr_t end = (uintptr_t)next->src + next->len;

    if (next->ep != head->ep || next->rkey != head->rkey || next->device != head->device ||
        next->raddr != head->raddr + len || next->src != head->src + len ||
        len + next->len > GPUIC_PROXY_MERGE_BYTES) {
        return 0;
    }
    if (!head->device) {
        return 1;
    }
    if ((uintptr_t)head->src < proxy->merge_lo || (uintptr_t)head->src >= proxy->merge_hi) {
        size_t size = 0;
        uintptr_t base = 0;

        if (proxy->params.device_range == NULL ||
            proxy->params.device_range(head->src, &base, &size) != GPUIC_OK) {
            return 0;
        }
        proxy->merge_lo = base;
        proxy->merge_hi = base + size;
    }
    return end <= proxy->merge_hi;
}

void gpuic_proxy_puts_issue(gpuic_proxy_t *proxy)
{
    gpuic_proxy_put_t *puts = proxy->puts;
    unsigned n = proxy->nputs;
    uint64_t merged = 0;

    if (n == 0) {
        return;
    }
    proxy->nputs = 0;
    /* allocations come and go between rounds: no range is trusted across them */
    proxy->merge_lo = proxy->merge_hi = 0;
    if (n > 1) {
        qsort(puts, n, sizeof(*puts), gpuic_proxy_put_cmp);
    }
    for (unsigned i = 0, j; i < n; i = j) {
        gpuic_proxy_put_t *head = &puts[i];
        uint64_t len = head->len;
        gpuic_status_t status;

        for (j = i + 1; j < n && gpuic_proxy_put_continues(proxy, head, len, &puts[j]); ++j) {
            len += puts[j].len;
        }
        status = gpuic_rma_put_nb(head->ep, head->src, len, head->raddr, head->rkey,
                                  &head->op->comp);
        if (status != GPUIC_OK && status != GPUIC_INPROGRESS) {
            /* the round fails with it (gpuic_proxy_op_done), as when UCX reports it later */
            __atomic_fetch_add(&proxy->stat_errors, j - i, __ATOMIC_RELAXED);
        }
        if (status != GPUIC_INPROGRESS) {
            gpuic_proxy_op_done(&head->op->comp, status);
        }
        /* the others' bytes complete with the head's; their ops hold nothing UCX reads */
        for (unsigned k = i + 1; k < j; ++k) {
            gpuic_proxy_op_done(&puts[k].op->comp, GPUIC_OK);
        }
        merged += j - i - 1;
    }
    if (merged != 0) {
        __atomic_store_n(&proxy->stat_merged,
                         __atomic_load_n(&proxy->stat_merged, __ATOMIC_RELAXED) + merged,
                         __ATOMIC_RELAXED);
    }
}

gpuic_status_t gpuic_proxy_put_hold(gpuic_proxy_t *proxy, gpuic_proxy_op_t *op,
                                    const gpuic_keytable_entry_t *e, const void *src,
                                    uint64_t len, uint64_t raddr, int device)
{
    gpuic_proxy_put_t *p;

    if (proxy->nputs >= GPUIC_PROXY_PUTS_MAX) {
        gpuic_proxy_puts_issue(proxy);
    }
    if (!gpuic_proxy_grow((void **)&proxy->puts, &proxy->put_cap, proxy->nputs,
                          sizeof(*proxy->puts))) {
        return gpuic_rma_put_nb(e->ep, src, len, raddr, e->rkey, &op->comp); /* not held */
    }
    p = &proxy->puts[proxy->nputs];
    p->op = op;
    p->ep = e->ep;
    p->rkey = e->rkey;
    p->src = src;
    p->raddr = raddr;
    p->len = len;
    p->order = proxy->nputs;
    p->device = device;
    proxy->nputs++;
    return GPUIC_INPROGRESS;
}
