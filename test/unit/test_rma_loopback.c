/*
 * libgpuic's host RMA path through UCX to the process itself: registration, key packing and
 * unpacking, put, get, non-fetching and fetching atomics, endpoint and context flush, the
 * non-blocking flush callback, local-completion counters, and direct mapping of UCX-allocated
 * memory.
 */
#include <stdint.h>
#include <string.h>

#include "gpuic.h"
#include "unit_test.h"

#define LEN 4096

static int flush_cb_calls;
static gpuic_status_t flush_cb_status = GPUIC_ERR_TRANSPORT;

static void flush_cb(void *arg, gpuic_status_t status)
{
    (void)arg;
    flush_cb_calls++;
    flush_cb_status = status;
}

int main(void)
{
    gpuic_context_params_t params = {0};
    gpuic_context_t *ctx = NULL;
    gpuic_ep_t *ep = NULL;
    gpuic_mr_t *user_mr = NULL, *ucx_mr = NULL;
    gpuic_rkey_t *user_rkey = NULL, *ucx_rkey = NULL;
    static uint8_t target[LEN], origin[LEN], back[LEN];
    const void *addr;
    size_t addr_len, blob_len;
    void *blob, *mapped = NULL;
    uint64_t *words, old = 0;
    gpuic_status_t st;

    CHECK(gpuic_context_create(&params, &ctx) == GPUIC_OK);
    if (ctx == NULL) {
        return unit_test_result("test_rma_loopback");
    }
    gpuic_context_address(ctx, &addr, &addr_len);
    CHECK(addr_len > 0);
    CHECK(gpuic_ep_create(ctx, addr, addr_len, &ep) == GPUIC_OK);
    CHECK(gpuic_ep_create(ctx, NULL, 0, &ep) == GPUIC_ERR_INVALID_PARAM);

    /* user memory */
    CHECK(gpuic_mr_register(ctx, target, 0, &user_mr) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_mr_register(ctx, target, LEN, &user_mr) == GPUIC_OK);
    CHECK(gpuic_mr_address(user_mr) == target);
    CHECK(gpuic_mr_pack(user_mr, &blob, &blob_len) == GPUIC_OK);
    CHECK(gpuic_rkey_unpack(ep, blob, &user_rkey) == GPUIC_OK);
    gpuic_mr_blob_release(blob);

    for (int i = 0; i < LEN; ++i) {
        origin[i] = (uint8_t)(i * 31 + 7);
    }
    CHECK(gpuic_rma_put(ep, origin, LEN / 2, (uint64_t)(uintptr_t)target + 16, user_rkey) ==
          GPUIC_OK);
    CHECK(gpuic_ep_flush(ep) == GPUIC_OK);
    CHECK(memcmp(target + 16, origin, LEN / 2) == 0);
    CHECK(target[15] == 0 && target[16 + LEN / 2] == 0);

    CHECK(gpuic_rma_get(ep, back, LEN / 2, (uint64_t)(uintptr_t)target + 16, user_rkey) ==
          GPUIC_OK);
    CHECK(gpuic_context_flush(ctx) == GPUIC_OK);
    CHECK(memcmp(back, origin, LEN / 2) == 0);

    /* UCX-allocated memory: atomics and (where the transport allows) a direct mapping */
    CHECK(gpuic_mr_allocate(ctx, LEN, &ucx_mr) == GPUIC_OK);
    words = gpuic_mr_address(ucx_mr);
    memset(words, 0, LEN);
    CHECK(gpuic_mr_pack(ucx_mr, &blob, &blob_len) == GPUIC_OK);
    CHECK(gpuic_rkey_unpack(ep, blob, &ucx_rkey) == GPUIC_OK);
    gpuic_mr_blob_release(blob);
    uint64_t w0 = (uint64_t)(uintptr_t)&words[0], w1 = (uint64_t)(uintptr_t)&words[1];

    CHECK(gpuic_rma_atomic_post(ep, GPUIC_ATOMIC_ADD, 5, 8, w0, ucx_rkey) == GPUIC_OK);
    CHECK(gpuic_rma_atomic_post(ep, GPUIC_ATOMIC_ADD, 7, 8, w0, ucx_rkey) == GPUIC_OK);
    CHECK(gpuic_rma_atomic_post(ep, GPUIC_ATOMIC_SWAP, 7, 8, w0, ucx_rkey) ==
          GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_rma_atomic_post(ep, GPUIC_ATOMIC_ADD, 7, 2, w0, ucx_rkey) ==
          GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ep_flush(ep) == GPUIC_OK);
    CHECK(words[0] == 12);
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_ADD, 3, 0, 8, w0, ucx_rkey, &old) == GPUIC_OK);
    CHECK(old == 12 && words[0] == 15);
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_CSWAP, 100, 14, 8, w0, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 15 && words[0] == 15); /* compare failed: unchanged */
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_CSWAP, 100, 15, 8, w0, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 15 && words[0] == 100);
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_SWAP, 1, 0, 8, w0, ucx_rkey, &old) == GPUIC_OK);
    CHECK(old == 100 && words[0] == 1);
    /* fetching bitwise atomics leave the right word (UCX 1.13's own zeroed it over shm/self) */
    words[0] = 0x1234;
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_XOR, 0xff, 0, 8, w0, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 0x1234 && words[0] == 0x12cb);
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_AND, 0xff, 0, 8, w0, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 0x12cb && words[0] == 0xcb);
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_OR, 0x300, 0, 8, w0, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 0xcb && words[0] == 0x3cb);
    words[1] = 0xffffffff000000f0ULL;
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_XOR, 0xff, 0, 4, w1, ucx_rkey, &old) ==
          GPUIC_OK);
    CHECK(old == 0xf0 && words[1] == 0xffffffff0000000fULL);
    words[0] = 1;
    /* 32-bit atomics touch 4 bytes only */
    words[1] = 0xffffffff00000000ULL;
    CHECK(gpuic_rma_atomic_fetch(ep, GPUIC_ATOMIC_ADD, 2, 0, 4, w1, ucx_rkey, &old) == GPUIC_OK);
    CHECK(old == 0 && words[1] == 0xffffffff00000002ULL);

    st = gpuic_rkey_ptr(ucx_rkey, w0, &mapped);
    CHECK(st == GPUIC_OK || st == GPUIC_ERR_UNSUPPORTED);
    if (st == GPUIC_OK) {
        CHECK(*(volatile uint64_t *)mapped == 1);
    }

    /* non-blocking flush: either done at once or exactly one callback */
    CHECK(gpuic_rma_put(ep, origin, 64, (uint64_t)(uintptr_t)target, user_rkey) == GPUIC_OK);
    st = gpuic_ep_flush_nb(ep, flush_cb, NULL);
    CHECK(st == GPUIC_OK || st == GPUIC_INPROGRESS);
    if (st == GPUIC_INPROGRESS) {
        for (int i = 0; i < 1000000 && flush_cb_calls == 0; ++i) {
            gpuic_context_progress(ctx);
        }
        CHECK(flush_cb_calls == 1 && flush_cb_status == GPUIC_OK);
    }
    CHECK(memcmp(target, origin, 64) == 0);

    /* local completion: a counted get's data is there after gpuic_lcc_wait, no flush needed */
    {
        gpuic_lcc_t lcc = {0};
        memset(back, 0, LEN);
        memset(target, 0x5a, LEN);
        CHECK(gpuic_rma_put_lcc(ep, origin, LEN, (uint64_t)(uintptr_t)target, user_rkey, &lcc) ==
              GPUIC_OK);
        CHECK(gpuic_lcc_wait(ctx, &lcc) == GPUIC_OK);
        CHECK(lcc.outstanding == 0);
        CHECK(gpuic_ep_flush(ep) == GPUIC_OK);
        CHECK(gpuic_rma_get_lcc(ep, back, LEN, (uint64_t)(uintptr_t)target, user_rkey, &lcc) ==
              GPUIC_OK);
        CHECK(gpuic_lcc_wait(ctx, &lcc) == GPUIC_OK);
        CHECK(memcmp(back, origin, LEN) == 0);
    }

    gpuic_rkey_destroy(ucx_rkey);
    gpuic_rkey_destroy(user_rkey);
    gpuic_mr_deregister(ucx_mr);
    gpuic_mr_deregister(user_mr);
    gpuic_ep_destroy(ep);
    gpuic_context_destroy(ctx);
    return unit_test_result("test_rma_loopback");
}
