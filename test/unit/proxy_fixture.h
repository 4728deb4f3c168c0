/*
 * proxy_fixture.h - a proxy looping back to its own process: one serialized context, an
 * endpoint to itself, NT target regions (each inside a larger buffer whose edges are canary
 * bytes the proxy must never write), a key table naming them and a completion block.  Rings
 * are written by host threads through ring_producer.h.
 */
#ifndef GPUIC_PROXY_FIXTURE_H
#define GPUIC_PROXY_FIXTURE_H

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic.h"
#include "gpuic_mem.h"
#include "ring_producer.h"
#include "unit_test.h"

#define FIX_MAX_TARGETS 8
#define FIX_GUARD 4096
#define FIX_CANARY 0xa5

typedef struct fixture {
    gpuic_context_t *ctx;
    gpuic_ep_t *ep;
    gpuic_proxy_t *proxy;
    gpuic_keytable_t *keys;
    gpuic_cmpl_t *cmpl;
    unsigned ntargets;
    size_t region_len;
    uint8_t *buf[FIX_MAX_TARGETS];     /* guard | region | guard */
    /* FIX_HOST_UCX_ATOMICS: a second mapping of buf (WQEs name addresses in it, UCX the
     * buffer's own), else buf */
    uint8_t *alias[FIX_MAX_TARGETS];
    int mapped;                        /* buf and alias come from mmap */
    gpuic_mr_t *mr[FIX_MAX_TARGETS];
    gpuic_rkey_t *rkey[FIX_MAX_TARGETS];
    uint32_t key[FIX_MAX_TARGETS];
} fixture_t;

/* The registered region of target t. */
static inline uint8_t *fixture_region(fixture_t *f, unsigned t)
{
    return f->buf[t] + FIX_GUARD;
}

/* The address WQEs name for byte @p off of target t's region. */
static inline uint64_t fixture_raddr(fixture_t *f, unsigned t, size_t off)
{
    return (uint64_t)(uintptr_t)(f->alias[t] + FIX_GUARD + off);
}

/* Maps @p len bytes of one shared-memory file twice; 0 on failure. */
static inline int fixture_map_twice(size_t len, uint8_t **a, uint8_t **b)
{
    FILE *file = tmpfile();
    int fd = file != NULL ? fileno(file) : -1;
    void *p = MAP_FAILED, *q = MAP_FAILED;

    if (fd >= 0 && ftruncate(fd, (off_t)len) == 0) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (file != NULL) {
        fclose(file); /* the mappings keep the memory */
    }
    if (p == MAP_FAILED || q == MAP_FAILED) {
        return 0;
    }
    *a = p;
    *b = q;
    return 1;
}

/* Non-zero while every canary byte around every region is intact. */
static inline int fixture_canaries_ok(fixture_t *f)
{
    for (unsigned t = 0; t < f->ntargets; ++t) {
        for (size_t i = 0; i < FIX_GUARD; ++i) {
            if (f->buf[t][i] != FIX_CANARY ||
                f->buf[t][FIX_GUARD + f->region_len + i] != FIX_CANARY) {
                return 0;
            }
        }
    }
    return 1;
}

/* How fixture_create_kind() enters the regions in the key table. */
typedef enum fixture_kind {
    FIX_UCX,             /* endpoint and key: the proxy uses UCX */
    FIX_HOST_CPU_ATOMICS,/* a mapping of host memory with CPU atomics, no endpoint */
    FIX_HOST_UCX_ATOMICS,/* a mapping of host memory for data, endpoint and key for atomics */
    FIX_HOST_NO_ATOMICS, /* a mapping of host memory only: atomics are refused */
    FIX_DEVICE_REMOTE    /* as FIX_UCX, entered as device memory: atomics are remote calls to
                            the endpoint (the test sets the context's call handler) */
} fixture_kind_t;

/* The fixture of fixture_create_kind() with @p copy as the proxy's copy function
 * (gpuic_proxy_params_t.copy; NULL: none). */
static inline int fixture_create_copy(fixture_t *f, unsigned ntargets, size_t region_len,
                                      fixture_kind_t kind,
                                      gpuic_status_t (*copy)(void *, const void *, size_t))
{
    gpuic_context_params_t cp = {0};
    gpuic_proxy_params_t pp = {0};
    const void *addr;
    size_t addr_len, blob_len;
    void *blob;

    memset(f, 0, sizeof(*f));
    f->ntargets = ntargets;
    f->region_len = region_len;
    cp.thread_serialized = 1;
    if (gpuic_context_create(&cp, &f->ctx) != GPUIC_OK) {
        return 0;
    }
    gpuic_context_address(f->ctx, &addr, &addr_len);
    CHECK(gpuic_ep_create(f->ctx, addr, addr_len, &f->ep) == GPUIC_OK);
    CHECK(gpuic_keytable_create(64, &f->keys) == GPUIC_OK);
    CHECK(gpuic_cmpl_create(ntargets, &f->cmpl) == GPUIC_OK);
    for (unsigned t = 0; t < ntargets; ++t) {
        gpuic_keytable_entry_t e = {0};

        f->mapped = kind == FIX_HOST_UCX_ATOMICS;
        if (f->mapped) {
            CHECK(fixture_map_twice(region_len + 2 * FIX_GUARD, &f->buf[t], &f->alias[t]));
        } else {
            f->buf[t] = gpuic_mem_aligned(4096, region_len + 2 * FIX_GUARD);
            f->alias[t] = f->buf[t];
        }
        memset(f->buf[t], FIX_CANARY, region_len + 2 * FIX_GUARD);
        memset(fixture_region(f, t), 0, region_len);
        /* register the whole buffer: the transport could reach the canaries, only the key
         * table's bounds keep the proxy off them */
        CHECK(gpuic_mr_register(f->ctx, f->buf[t], region_len + 2 * FIX_GUARD, &f->mr[t]) ==
              GPUIC_OK);
        CHECK(gpuic_mr_pack(f->mr[t], &blob, &blob_len) == GPUIC_OK);
        CHECK(gpuic_rkey_unpack(f->ep, blob, &f->rkey[t]) == GPUIC_OK);
        gpuic_mr_blob_release(blob);
        if (kind == FIX_UCX || kind == FIX_HOST_UCX_ATOMICS || kind == FIX_DEVICE_REMOTE) {
            e.ep = f->ep;
            e.rkey = f->rkey[t];
        }
        e.device_memory = kind == FIX_DEVICE_REMOTE;
        if (kind != FIX_UCX && kind != FIX_DEVICE_REMOTE) {
            e.direct = GPUIC_KEYTABLE_DIRECT_HOST;
            e.cpu_atomics = kind == FIX_HOST_CPU_ATOMICS;
            e.remote_base = (uint64_t)(uintptr_t)fixture_region(f, t);
        }
        e.base = fixture_raddr(f, t, 0);
        e.len = region_len;
        e.target = t;
        CHECK(gpuic_keytable_insert(f->keys, &e, &f->key[t]) == GPUIC_OK);
    }
    pp.ctx = f->ctx;
    pp.copy = copy;
    CHECK(gpuic_proxy_create(&pp, &f->proxy) == GPUIC_OK);
    return f->proxy != NULL;
}

static inline int fixture_create_kind(fixture_t *f, unsigned ntargets, size_t region_len,
                                      fixture_kind_t kind)
{
    return fixture_create_copy(f, ntargets, region_len, kind, NULL);
}

static inline int fixture_create(fixture_t *f, unsigned ntargets, size_t region_len)
{
    return fixture_create_kind(f, ntargets, region_len, FIX_UCX);
}

static inline void fixture_destroy(fixture_t *f)
{
    gpuic_proxy_destroy(f->proxy);
    for (unsigned t = 0; t < f->ntargets; ++t) {
        gpuic_rkey_destroy(f->rkey[t]);
        gpuic_mr_deregister(f->mr[t]);
        if (f->mapped) {
            munmap(f->buf[t], f->region_len + 2 * FIX_GUARD);
            munmap(f->alias[t], f->region_len + 2 * FIX_GUARD);
        } else {
            free(f->buf[t]);
        }
    }
    gpuic_cmpl_destroy(f->cmpl);
    gpuic_keytable_destroy(f->keys);
    gpuic_ep_destroy(f->ep);
    gpuic_context_destroy(f->ctx);
}

/* Attaches @p rp's ring to the fixture's proxy, with the fixture's key table and counters. */
static inline gpuic_status_t fixture_attach(fixture_t *f, ring_producer_t *rp)
{
    gpuic_proxy_queue_t q;

    ring_producer_queue(rp, &q);
    q.keys = f->keys;
    q.cmpl = f->cmpl;
    return gpuic_proxy_add(f->proxy, &q);
}

#endif
