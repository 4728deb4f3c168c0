/*
 * Creation under memory exhaustion: every allocation of a completion block, a key table and
 * a proxy is made to fail in turn (gpuic_mem_fail_after).  Each failure must give
 * GPUIC_ERR_NO_MEMORY, leave the caller's pointer untouched (no partial object) and free what
 * was allocated before it (the sanitizer passes check for leaks); once enough allocations
 * succeed the object is whole and works.  Sizes whose byte counts would overflow are refused.
 */
#include <stdint.h>
#include <string.h>

#include "gpuic.h"
#include "gpuic_mem.h"
#include "unit_test.h"

#define MAX_ALLOCS 16

/* The object's own sentinel: creation must not write the pointer unless it succeeds. */
static void *const untouched = (void *)(uintptr_t)0x5a5a5a50;

static void test_cmpl_keytable(void)
{
    int cmpl_ok = 0, kt_ok = 0;

    for (long n = 0; n <= MAX_ALLOCS && !(cmpl_ok && kt_ok); ++n) {
        gpuic_cmpl_t *cmpl = untouched;
        gpuic_keytable_t *kt = untouched;
        gpuic_status_t st;

        if (!cmpl_ok) {
            gpuic_mem_fail_after(n);
            st = gpuic_cmpl_create(64, &cmpl);
            gpuic_mem_fail_after(-1);
            CHECK(st == GPUIC_OK ? cmpl != untouched : st == GPUIC_ERR_NO_MEMORY &&
                                                           cmpl == untouched);
            if (st == GPUIC_OK) {
                gpuic_cmpl_destroy(cmpl);
                cmpl_ok = 1;
            }
        }
        if (!kt_ok) {
            gpuic_mem_fail_after(n);
            st = gpuic_keytable_create(256, &kt);
            gpuic_mem_fail_after(-1);
            CHECK(st == GPUIC_OK ? kt != untouched : st == GPUIC_ERR_NO_MEMORY &&
                                                         kt == untouched);
            if (st == GPUIC_OK) {
                gpuic_keytable_destroy(kt);
                kt_ok = 1;
            }
        }
    }
    CHECK(cmpl_ok && kt_ok);
}

static void test_proxy(void)
{
    gpuic_context_params_t cp = {0};
    gpuic_proxy_params_t pp = {0};
    gpuic_context_t *ctx;
    gpuic_proxy_t *proxy = untouched;

    cp.thread_serialized = 1;
    if (gpuic_context_create(&cp, &ctx) != GPUIC_OK) {
        CHECK(!"no context");
        return;
    }
    pp.ctx = ctx;
    gpuic_mem_fail_after(0);
    CHECK(gpuic_proxy_create(&pp, &proxy) == GPUIC_ERR_NO_MEMORY);
    gpuic_mem_fail_after(-1);
    CHECK(proxy == untouched);
    CHECK(gpuic_proxy_create(&pp, &proxy) == GPUIC_OK && proxy != untouched);
    gpuic_proxy_destroy(proxy);
    gpuic_context_destroy(ctx);
}

static void test_sizes(void)
{
    static uint64_t mem[64] __attribute__((aligned(64)));
    gpuic_ring_t *ring = untouched;
    gpuic_cmpl_t *cmpl = untouched;
    gpuic_keytable_t *kt = untouched;

    /* slot counts whose byte size would not fit, or that are not powers of two */
    CHECK(gpuic_ring_footprint_tagged(1u << 31) == 0);
    CHECK(gpuic_ring_footprint_tagged(UINT32_MAX) == 0);
    CHECK(gpuic_ring_create_tagged_at(mem, SIZE_MAX, (1u << 24) + 1, 0, &ring) ==
          GPUIC_ERR_INVALID_PARAM);
    CHECK(ring == untouched);
    CHECK(gpuic_cmpl_create(UINT32_MAX, &cmpl) == GPUIC_ERR_INVALID_PARAM && cmpl == untouched);
    CHECK(gpuic_keytable_create(UINT32_MAX, &kt) == GPUIC_ERR_INVALID_PARAM && kt == untouched);
    /* the aligned helper refuses a size that overflows when rounded up */
    CHECK(gpuic_mem_aligned(64, SIZE_MAX - 10) == NULL);
}

int main(void)
{
    gpuic_log_set_level(0);
    test_cmpl_keytable();
    test_proxy();
    test_sizes();
    return unit_test_result("test_alloc_fail");
}
