/*
 * gpuic_fence.h - the memory-ordering vocabulary of the ring protocol, shared by host and
 * device code.
 *
 * Every ordering point of the protocol has a name saying which two observers it orders, so a
 * reader can check each one against the protocol instead of guessing why a fence is there.
 * Host code uses the GCC/Clang __atomic builtins (the operations C11 <stdatomic.h> is built
 * on) on plain integers, so the shared structures keep one layout for host and device; under
 * nvcc's device pass the same names become volatile accesses plus __threadfence_system(),
 * because the consumer (a host proxy or the NIC) is outside the GPU.
 */
#ifndef GPUIC_FENCE_H
#define GPUIC_FENCE_H

#include <stdint.h>

#include "gpuic_portable.h"

#if !defined(__CUDA_ARCH__)
#include <sched.h>
#endif

/**
 * Producer -> consumer: the WQE's fields (and an inline payload) become visible to the consumer
 * before the valid marker or doorbell record the producer writes next.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_wqe_to_consumer(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/**
 * Consumer <- producer: after the consumer has seen a doorbell or valid marker, its reads of
 * the WQE slots return what the producer wrote before publishing.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_doorbell_to_wqe(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/**
 * Consumer -> producer: the consumer has finished reading the slots it frees before a producer
 * can see the new consumer index and overwrite them.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_slots_to_producer(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/**
 * Completer -> waiter: the effects of completed operations (data placed, results written) are
 * visible to a thread that observes the completion counter or CQE that reports them.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_completion_to_producer(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/**
 * Producer's doorbell <-> sleeping consumer's flag: a store-load fence.  The producer stores
 * the doorbell, fences, reads the consumer's sleeping flag; the consumer stores the flag,
 * fences, reads the doorbell.  With both fences at least one side sees the other's store, so
 * no wake-up is lost.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_doorbell_to_waiter(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/** Load with acquire ordering (host) or a volatile load followed by a system fence (device). */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_atomic_load_acquire_u64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    uint64_t v = *(const volatile uint64_t *)p;
    __threadfence_system();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/** Load with no ordering, but without tearing and visible to race detectors as atomic. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_atomic_load_relaxed_u64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    return *(const volatile uint64_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/** Store with release ordering (host) or a system fence then a volatile store (device). */
static inline GPUIC_HOST_DEVICE void gpuic_atomic_store_release_u64(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/** Atomic add returning the old value; relaxed: ordering comes from the named fences. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_atomic_fetch_add_u64(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    return atomicAdd((unsigned long long *)p, (unsigned long long)v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/**
 * Compare-and-swap with acquire-release ordering.  On failure *expected receives the current
 * value.  Returns non-zero on success.
 */
static inline GPUIC_HOST_DEVICE int gpuic_atomic_cas_u64(uint64_t *p, uint64_t *expected,
                                                         uint64_t desired)
{
#if defined(__CUDA_ARCH__)
    unsigned long long old = atomicCAS((unsigned long long *)p, (unsigned long long)*expected,
                                       (unsigned long long)desired);
    int ok = old == *expected;
    *expected = old;
    return ok;
#else
    return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
#endif
}

/**
 * Called by a waiter between unsuccessful polls.  On the host it yields the processor after a
 * short spin: producers waiting for an earlier producer's doorbell must let that producer run
 * when threads outnumber cores.
 */
static inline GPUIC_HOST_DEVICE void gpuic_cpu_relax(unsigned spins)
{
#if defined(__CUDA_ARCH__)
    (void)spins;
    __nanosleep(32);
#else
    if (spins >= 64) {
        sched_yield();
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
#endif
}

#endif /* GPUIC_FENCE_H */
