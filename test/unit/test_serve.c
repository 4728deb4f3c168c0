/*
 * A context's serving worker (gpuic_context_params_t.serve): a second context connects to it
 * and puts into, gets from and atomically updates memory the first context registered, while
 * the first context's own worker is never progressed.  Only a thread calling
 * gpuic_context_serve_progress() (as the proxy thread does) serves those operations, which a
 * transport emulating RMA in software (UCX_TLS=tcp, set here unless the environment sets it)
 * cannot complete without the target's progress.  Also: a context made without serve has no
 * serving address, and gpuic_context_serve_progress() on it does nothing.
 * Then two sides, each a serving context and an issuing context linked to it with
 * gpuic_context_serve_also(), issue fetching atomics on each other's memory from two threads
 * at once with nothing else progressing: each thread's waits serve the other's atomics.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic.h"
#include "unit_test.h"

#define LEN 65536

static int stop;

/* The serving side's only activity: progress its serving worker until told to stop. */
static void *serve_main(void *arg)
{
    gpuic_context_t *ctx = arg;

    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        gpuic_context_serve_progress(ctx);
    }
    return NULL;
}

#define CROSS_ROUNDS 200

static int cross_done; /* sides that issued all their atomics */

typedef struct side {
    gpuic_context_t *serving, *issuing;
    gpuic_mr_t *mr;
    gpuic_ep_t *ep;       /* issuing -> the other side's serving worker */
    gpuic_rkey_t *rkey;   /* the other side's word */
    uint64_t word;        /* updated by the other side */
    uint64_t *remote;     /* the other side's word */
    int ok;
} side_t;

/* CROSS_ROUNDS fetch-and-adds of 1 on the other side's word; each must see a new value. */
static void *cross_main(void *arg)
{
    side_t *s = arg;
    uint64_t old = 0, last = 0;
    int i;

    s->ok = 1;
    for (i = 0; i < CROSS_ROUNDS; ++i) {
        if (gpuic_rma_atomic_fetch(s->ep, GPUIC_ATOMIC_ADD, 1, 0, 8,
                                   (uint64_t)(uintptr_t)s->remote, s->rkey, &old) != GPUIC_OK ||
            (i > 0 && old != last + 1)) {
            s->ok = 0;
            break;
        }
        last = old;
    }
    /* then keep serving, as a proxy thread does, until the other side is done too */
    __atomic_fetch_add(&cross_done, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&cross_done, __ATOMIC_ACQUIRE) < 2) {
        gpuic_context_progress(s->issuing);
    }
    return NULL;
}

static void cross_test(void)
{
    gpuic_context_params_t sp = {0}, ip = {0};
    side_t side[2] = {{0}};
    pthread_t thread[2];
    const void *addr;
    size_t len, blob_len;
    void *blob;
    int i;

    sp.serve = 1;
    for (i = 0; i < 2; ++i) {
        CHECK(gpuic_context_create(&sp, &side[i].serving) == GPUIC_OK);
        CHECK(gpuic_context_create(&ip, &side[i].issuing) == GPUIC_OK);
        if (side[i].serving == NULL || side[i].issuing == NULL) {
            return;
        }
        gpuic_context_set_timeout(side[i].issuing, 20);
        gpuic_context_serve_also(side[i].issuing, side[i].serving);
        CHECK(gpuic_mr_register(side[i].serving, &side[i].word, sizeof(uint64_t),
                                &side[i].mr) == GPUIC_OK);
    }
    for (i = 0; i < 2; ++i) {
        side_t *me = &side[i], *other = &side[1 - i];

        gpuic_context_serve_address(other->serving, &addr, &len);
        CHECK(gpuic_ep_create(me->issuing, addr, len, &me->ep) == GPUIC_OK);
        CHECK(gpuic_mr_pack(other->mr, &blob, &blob_len) == GPUIC_OK);
        CHECK(gpuic_rkey_unpack(me->ep, blob, &me->rkey) == GPUIC_OK);
        gpuic_mr_blob_release(blob);
        me->remote = &other->word;
    }
    for (i = 0; i < 2; ++i) {
        CHECK(pthread_create(&thread[i], NULL, cross_main, &side[i]) == 0);
    }
    for (i = 0; i < 2; ++i) {
        pthread_join(thread[i], NULL);
        CHECK(side[i].ok);
        CHECK(__atomic_load_n(&side[i].word, __ATOMIC_RELAXED) == CROSS_ROUNDS);
    }
    for (i = 0; i < 2; ++i) {
        gpuic_rkey_destroy(side[i].rkey);
        gpuic_ep_destroy(side[i].ep);
    }
    for (i = 0; i < 2; ++i) {
        gpuic_mr_deregister(side[i].mr);
        gpuic_context_destroy(side[i].issuing);
        gpuic_context_destroy(side[i].serving);
    }
}

int main(void)
{
    gpuic_context_params_t tparams = {0}, oparams = {0};
    gpuic_context_t *target = NULL, *origin = NULL;
    gpuic_ep_t *ep = NULL;
    gpuic_mr_t *mr = NULL;
    gpuic_rkey_t *rkey = NULL;
    static uint8_t window[LEN], src[LEN], back[LEN];
    uint64_t *word = (uint64_t *)(window + LEN - 8), old = 0;
    const void *addr;
    size_t addr_len, blob_len;
    void *blob;
    pthread_t thread;
    int i;

    setenv("UCX_TLS", "tcp", 0);
    CHECK(gpuic_context_create(&oparams, &origin) == GPUIC_OK);
    tparams.serve = 1;
    CHECK(gpuic_context_create(&tparams, &target) == GPUIC_OK);
    if (origin == NULL || target == NULL) {
        return unit_test_result("test_serve");
    }
    gpuic_context_set_timeout(origin, 20);
    gpuic_context_serve_address(origin, &addr, &addr_len);
    CHECK(addr_len == 0);
    CHECK(gpuic_context_serve_progress(origin) == 0);
    gpuic_context_serve_address(target, &addr, &addr_len);
    CHECK(addr_len > 0);

    CHECK(gpuic_mr_register(target, window, LEN, &mr) == GPUIC_OK);
    CHECK(gpuic_mr_pack(mr, &blob, &blob_len) == GPUIC_OK);
    CHECK(pthread_create(&thread, NULL, serve_main, target) == 0);
    CHECK(gpuic_ep_create(origin, addr, addr_len, &ep) == GPUIC_OK);
    CHECK(gpuic_rkey_unpack(ep, blob, &rkey) == GPUIC_OK);
    gpuic_mr_blob_release(blob);

    for (i = 0; i < LEN; ++i) {
        src[i] = (uint8_t)(i * 13 + 5);
    }
    CHECK(gpuic_rma_put(ep, src, LEN - 8, (uint64_t)(uintptr_t)window, rkey) == GPUIC_OK);
    CHECK(gpuic_ep_flush(ep) == GPUIC_OK);
    CHECK(memcmp(window, src, LEN - 8) == 0);
    CHECK(gpuic_rma_get(ep, back, LEN - 8, (uint64_t)(uintptr_t)window, rkey) == GPUIC_OK);
    CHECK(gpuic_ep_flush(ep) == GPUIC_OK);
    CHECK(memcmp(back, src, LEN - 8) == 0);
    for (i = 0; i < 100; ++i) {
        CHECK(gpuic_rma_atomic_post(ep, GPUIC_ATOMIC_ADD, 3, 8, (uint64_t)(uintptr_t)word,
                                    rkey) == GPUIC_OK);
    }
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_ADD, 0, 0, 8, (uint64_t)(uintptr_t)word, rkey,
                                 &old) == GPUIC_OK);
    CHECK(old == 300);
    CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == 300);

    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    gpuic_rkey_destroy(rkey);
    gpuic_ep_destroy(ep);
    gpuic_mr_deregister(mr);
    gpuic_context_destroy(origin);
    gpuic_context_destroy(target);
    cross_test();
    return unit_test_result("test_serve");
}
