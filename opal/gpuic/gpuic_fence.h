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
 * Completer -> waiter: the effects of completed operations (data placed, results written) are
 * visible to a thread that observes the completion counter or index that reports them.
 */
static inline GPUIC_HOST_DEVICE void gpuic_fence_completion_to_producer(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
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

/**
 * Called by a waiter between unsuccessful polls.  On the host it yields the processor after a
 * short spin: a waiter must let the thread it waits for run when threads outnumber cores.
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
