/*
 * Remote calls (gpuic_call.h) between two contexts of one process, over UCX_TLS=tcp unless the
 * environment says otherwise:
 * - a target context with a serving worker and a CPU handler (a fetch-and-add of a 64-bit
 *   word, fed through gpuic_call_atomic_t), served only by a thread progressing its serving
 *   worker; several threads of the origin call at once and every fetched value is distinct,
 *   the final word exact;
 * - the handler's error status reaches the caller, with no reply bytes; a context without a
 *   handler answers GPUIC_ERR_UNSUPPORTED; bad sizes are refused before anything is sent;
 * - with nobody serving, a call times out (the context's timeout), and once serving resumes
 *   the late reply is dropped and new calls are answered;
 * - two sides, each a serving context with a handler and an issuing context linked to it with
 *   gpuic_context_serve_also(), call each other from two threads at once with nothing else
 *   progressing: each thread's wait serves the other's calls.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic.h"
#include "unit_test.h"

#define THREADS 4
#define CALLS_PER_THREAD 200
#define CROSS_ROUNDS 200

/* The handler's state: the word it adds to, how many requests it saw. */
typedef struct target_state {
    uint64_t word;
    uint64_t calls;
    int      busy;  /* requests still to answer as busy */
} target_state_t;

/* A CPU executor of fetch-add requests: GPUIC_CALL_ACC, GPUIC_ACC_SUM on one uint64_t at
 * @p addr (the handler's word; anything else is GPUIC_ERR_INVALID_PARAM). */
static gpuic_status_t fetch_add_handler(void *arg, const void *req, size_t req_len, void *reply,
                                        size_t reply_cap, size_t *reply_len_p)
{
    target_state_t *t = arg;
    gpuic_call_atomic_t a;
    uint64_t v, old;

    *reply_len_p = 0;
    if (__atomic_load_n(&t->busy, __ATOMIC_RELAXED) > 0) {
        __atomic_fetch_sub(&t->busy, 1, __ATOMIC_RELAXED);
        return GPUIC_ERR_NO_RESOURCE; /* nothing done: the origin asks again */
    }
    __atomic_fetch_add(&t->calls, 1, __ATOMIC_RELAXED);
    if (req_len < gpuic_call_atomic_len(8) || req_len > sizeof(a)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    memcpy(&a, req, req_len);
    if (a.op != GPUIC_CALL_ACC || a.acc_op != GPUIC_ACC_SUM || a.type != GPUIC_ACC_UINT64 ||
        a.count != 1 || a.esize != 8 || a.addr != (uint64_t)(uintptr_t)&t->word) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if ((a.flags & GPUIC_CALL_FETCH) && reply_cap < 8) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    memcpy(&v, a.data, 8);
    old = __atomic_fetch_add(&t->word, v, __ATOMIC_SEQ_CST);
    if (a.flags & GPUIC_CALL_FETCH) {
        memcpy(reply, &old, 8);
        *reply_len_p = 8;
    }
    return GPUIC_OK;
}

/* One fetch-add call of @p v on @p addr; the old value in *old_p. */
static gpuic_status_t call_fetch_add(gpuic_ep_t *ep, uint64_t addr, uint64_t v, uint64_t *old_p,
                                     size_t *len_p)
{
    gpuic_call_atomic_t a;

    memset(&a, 0, sizeof(a));
    a.addr = addr;
    a.count = 1;
    a.op = GPUIC_CALL_ACC;
    a.flags = GPUIC_CALL_FETCH;
    a.esize = 8;
    a.type = GPUIC_ACC_UINT64;
    a.acc_op = GPUIC_ACC_SUM;
    memcpy(a.data, &v, 8);
    return gpuic_ep_call(ep, &a, gpuic_call_atomic_len(8), old_p, sizeof(*old_p), len_p);
}

static int stop_serving;

static void *serve_main(void *arg)
{
    gpuic_context_t *ctx = arg;

    while (!__atomic_load_n(&stop_serving, __ATOMIC_ACQUIRE)) {
        gpuic_context_serve_progress(ctx);
    }
    return NULL;
}

typedef struct caller {
    gpuic_ep_t *ep;
    uint64_t   addr;
    int        index;
    uint64_t   old[CALLS_PER_THREAD];
    int        failures;
} caller_t;

/* Thread i adds i + 1 each time: the fetched values of all threads are all different. */
static void *caller_main(void *arg)
{
    caller_t *c = arg;

    for (int i = 0; i < CALLS_PER_THREAD; ++i) {
        size_t len = 0;

        if (call_fetch_add(c->ep, c->addr, (uint64_t)c->index + 1, &c->old[i], &len) !=
                GPUIC_OK ||
            len != 8) {
            c->failures++;
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void concurrent_test(gpuic_ep_t *ep, target_state_t *t)
{
    static caller_t caller[THREADS];
    static uint64_t all[THREADS * CALLS_PER_THREAD];
    pthread_t thread[THREADS];
    uint64_t expect = 0;
    int n = 0;

    for (int i = 0; i < THREADS; ++i) {
        caller[i].ep = ep;
        caller[i].addr = (uint64_t)(uintptr_t)&t->word;
        caller[i].index = i;
        CHECK(pthread_create(&thread[i], NULL, caller_main, &caller[i]) == 0);
        expect += (uint64_t)(i + 1) * CALLS_PER_THREAD;
    }
    for (int i = 0; i < THREADS; ++i) {
        pthread_join(thread[i], NULL);
        CHECK(caller[i].failures == 0);
        for (int j = 0; j < CALLS_PER_THREAD; ++j) {
            all[n++] = caller[i].old[j];
        }
    }
    CHECK(__atomic_load_n(&t->word, __ATOMIC_SEQ_CST) == expect);
    qsort(all, (size_t)n, sizeof(all[0]), cmp_u64);
    for (int i = 1; i < n; ++i) {
        CHECK(all[i] != all[i - 1]);
    }
    CHECK(all[0] == 0);
}

/* Errors: the handler's status, no handler, sizes refused at the origin. */
static void error_test(gpuic_ep_t *ep, gpuic_ep_t *ep_self, target_state_t *t)
{
    uint64_t old = 12345, before = __atomic_load_n(&t->word, __ATOMIC_SEQ_CST);
    static uint8_t big[GPUIC_CALL_MAX_BYTES + 1];
    size_t len = 99;

    /* a word the handler does not own: its error, nothing written, no reply bytes */
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&old, 1, &old, &len) ==
          GPUIC_ERR_INVALID_PARAM);
    CHECK(len == 0);
    CHECK(old == 12345);
    CHECK(__atomic_load_n(&t->word, __ATOMIC_SEQ_CST) == before);
    /* a reply that does not fit the caller's room: refused by the handler, nothing done */
    {
        gpuic_call_atomic_t a;

        memset(&a, 0, sizeof(a));
        a.addr = (uint64_t)(uintptr_t)&t->word;
        a.count = 1;
        a.op = GPUIC_CALL_ACC;
        a.flags = GPUIC_CALL_FETCH;
        a.esize = 8;
        a.type = GPUIC_ACC_UINT64;
        a.acc_op = GPUIC_ACC_SUM;
        a.data[0] = 1;
        CHECK(gpuic_ep_call(ep, &a, gpuic_call_atomic_len(8), NULL, 0, &len) ==
              GPUIC_ERR_INVALID_PARAM);
        CHECK(__atomic_load_n(&t->word, __ATOMIC_SEQ_CST) == before);
    }
    /* a busy target: the call is sent again until it is done, once */
    __atomic_store_n(&t->busy, 3, __ATOMIC_RELAXED);
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&t->word, 5, &old, &len) == GPUIC_OK);
    CHECK(len == 8 && old == before);
    CHECK(__atomic_load_n(&t->word, __ATOMIC_SEQ_CST) == before + 5);
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&t->word, (uint64_t)0 - 5, &old, &len) ==
          GPUIC_OK);
    /* sizes */
    CHECK(gpuic_ep_call(ep, big, 0, NULL, 0, NULL) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ep_call(ep, big, sizeof(big), NULL, 0, NULL) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_ep_call(ep, NULL, 8, NULL, 0, NULL) == GPUIC_ERR_INVALID_PARAM);
    /* a context with no handler says so (the origin calling itself: its wait serves it) */
    CHECK(call_fetch_add(ep_self, (uint64_t)(uintptr_t)&t->word, 0, &old, &len) ==
          GPUIC_ERR_UNSUPPORTED);
    CHECK(len == 0);
}

/* A context that is not served times out; the late reply, once served, is dropped. */
static void timeout_test(gpuic_context_t *origin, gpuic_ep_t *ep, gpuic_context_t *target,
                         target_state_t *t)
{
    pthread_t thread;
    uint64_t old = 0, before = __atomic_load_n(&t->word, __ATOMIC_SEQ_CST);
    size_t len = 0;

    gpuic_context_set_timeout(origin, 0.5);
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&t->word, 1, &old, &len) ==
          GPUIC_ERR_TIMED_OUT);
    gpuic_context_set_timeout(origin, 20);
    __atomic_store_n(&stop_serving, 0, __ATOMIC_RELEASE);
    CHECK(pthread_create(&thread, NULL, serve_main, target) == 0);
    /* the timed-out request is executed when served; its reply finds no waiter */
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&t->word, 1, &old, &len) == GPUIC_OK);
    CHECK(len == 8);
    CHECK(old == before || old == before + 1);
    CHECK(call_fetch_add(ep, (uint64_t)(uintptr_t)&t->word, 0, &old, &len) == GPUIC_OK);
    CHECK(old == before + 2);
    __atomic_store_n(&stop_serving, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
}

static int cross_done;

typedef struct side {
    gpuic_context_t *serving, *issuing;
    gpuic_ep_t      *ep;    /* issuing -> the other side's serving worker */
    target_state_t  state;  /* updated by the other side's calls */
    uint64_t        remote; /* the other side's word */
    int             ok;
} side_t;

static void *cross_main(void *arg)
{
    side_t *s = arg;
    uint64_t old = 0;
    size_t len = 0;

    s->ok = 1;
    for (int i = 0; i < CROSS_ROUNDS; ++i) {
        if (call_fetch_add(s->ep, s->remote, 1, &old, &len) != GPUIC_OK || old != (uint64_t)i) {
            s->ok = 0;
            break;
        }
    }
    __atomic_fetch_add(&cross_done, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&cross_done, __ATOMIC_ACQUIRE) < 2) {
        gpuic_context_progress(s->issuing);
    }
    return NULL;
}

static void cross_test(void)
{
    gpuic_context_params_t sp = {0}, ip = {0};
    static side_t side[2];
    pthread_t thread[2];
    const void *addr;
    size_t len;
    int i;

    sp.serve = 1;
    for (i = 0; i < 2; ++i) {
        CHECK(gpuic_context_create(&sp, &side[i].serving) == GPUIC_OK);
        CHECK(gpuic_context_create(&ip, &side[i].issuing) == GPUIC_OK);
        if (side[i].serving == NULL || side[i].issuing == NULL) {
            return;
        }
        gpuic_context_set_call_handler(side[i].serving, fetch_add_handler, &side[i].state);
        gpuic_context_set_timeout(side[i].issuing, 20);
        gpuic_context_serve_also(side[i].issuing, side[i].serving);
    }
    for (i = 0; i < 2; ++i) {
        gpuic_context_serve_address(side[1 - i].serving, &addr, &len);
        CHECK(gpuic_ep_create(side[i].issuing, addr, len, &side[i].ep) == GPUIC_OK);
        side[i].remote = (uint64_t)(uintptr_t)&side[1 - i].state.word;
    }
    for (i = 0; i < 2; ++i) {
        CHECK(pthread_create(&thread[i], NULL, cross_main, &side[i]) == 0);
    }
    for (i = 0; i < 2; ++i) {
        pthread_join(thread[i], NULL);
        CHECK(side[i].ok);
        CHECK(__atomic_load_n(&side[i].state.word, __ATOMIC_SEQ_CST) == CROSS_ROUNDS);
    }
    for (i = 0; i < 2; ++i) {
        gpuic_ep_destroy(side[i].ep);
    }
    for (i = 0; i < 2; ++i) {
        gpuic_context_destroy(side[i].issuing);
        gpuic_context_destroy(side[i].serving);
    }
}

int main(void)
{
    gpuic_context_params_t tparams = {0}, oparams = {0};
    gpuic_context_t *target = NULL, *origin = NULL;
    gpuic_ep_t *ep = NULL, *ep_self = NULL;
    static target_state_t state;
    const void *addr;
    size_t addr_len;
    pthread_t thread;

    setenv("UCX_TLS", "tcp", 0);
    oparams.thread_multiple = 1;
    CHECK(gpuic_context_create(&oparams, &origin) == GPUIC_OK);
    tparams.serve = 1;
    CHECK(gpuic_context_create(&tparams, &target) == GPUIC_OK);
    if (origin == NULL || target == NULL) {
        return unit_test_result("test_call");
    }
    gpuic_context_set_timeout(origin, 20);
    gpuic_context_set_call_handler(target, fetch_add_handler, &state);

    gpuic_context_serve_address(target, &addr, &addr_len);
    CHECK(gpuic_ep_create(origin, addr, addr_len, &ep) == GPUIC_OK);
    CHECK(pthread_create(&thread, NULL, serve_main, target) == 0);
    concurrent_test(ep, &state);
    CHECK(__atomic_load_n(&state.calls, __ATOMIC_RELAXED) == THREADS * CALLS_PER_THREAD);
    gpuic_context_address(origin, &addr, &addr_len);
    CHECK(gpuic_ep_create(origin, addr, addr_len, &ep_self) == GPUIC_OK);
    error_test(ep, ep_self, &state);
    gpuic_ep_destroy(ep_self);
    __atomic_store_n(&stop_serving, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    timeout_test(origin, ep, target, &state);
    gpuic_ep_destroy(ep);
    gpuic_context_destroy(target);
    gpuic_context_destroy(origin);
    cross_test();
    return unit_test_result("test_call");
}
