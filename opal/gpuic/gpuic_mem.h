/*
 * gpuic_mem.h - host allocation helpers of libgpuic (internal, not installed).
 *
 * The objects whose creation must fail cleanly when memory runs out (rings, completion
 * counters, key tables, the proxy) allocate through these helpers, so that tests can make any
 * one of their allocations fail (gpuic_mem_fail_after) and check that creation returns
 * GPUIC_ERR_NO_MEMORY with nothing half-built and nothing leaked.
 */
#ifndef GPUIC_MEM_H
#define GPUIC_MEM_H

#include <stdbool.h>
#include <stdlib.h>

/**
 * Makes the allocations of the gpuic_mem helpers fail after @p n more have succeeded (0: the
 * next one fails); a negative @p n removes the limit.  For tests: allocation failure injection.
 */
void gpuic_mem_fail_after(long n);

/** True when an injected failure is due now (uses up one allocation of the limit). */
bool gpuic_mem_injected_failure(void);

/**
 * aligned_alloc() with the size rounded up to a multiple of the alignment, as C11 requires
 * (sanitizers and some libcs reject other sizes).  NULL when the size overflows.  Free with
 * free().
 */
static inline void *gpuic_mem_aligned(size_t align, size_t size)
{
    if (size > (size_t)-1 - align || gpuic_mem_injected_failure()) {
        return NULL;
    }
    return aligned_alloc(align, (size + align - 1) / align * align);
}

/** calloc(), subject to gpuic_mem_fail_after().  Free with free(). */
static inline void *gpuic_mem_calloc(size_t n, size_t size)
{
    return gpuic_mem_injected_failure() ? NULL : calloc(n, size);
}

#endif /* GPUIC_MEM_H */
