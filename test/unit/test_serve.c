/*
 * A context's serving worker (gpuic_context_params_t.serve): a second context connects to it
 * and puts into, gets from and atomically updates memory the first context registered, while
 * the first context's own worker is never progressed.  Only a thread calling
 * gpuic_context_serve_progress() (as the proxy thread does) serves those operations, which a
 * transport emulating RMA in software (UCX_TLS=tcp, set here unless the environment sets it)
 * cannot complete without the target's progress.  Also: a context made without serve has no
 * serving address, and gpuic_context_serve_progress() on it does nothing.
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
    return unit_test_result("test_serve");
}
