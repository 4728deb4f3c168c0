#include "gpuic_mem.h"

/* Allocations left before the injected failures start; negative: no limit.  Only tests set
 * it, so the common path is one relaxed load. */
static long gpuic_mem_budget = -1;

void gpuic_mem_fail_after(long n)
{
    __atomic_store_n(&gpuic_mem_budget, n < 0 ? -1 : n, __ATOMIC_RELAXED);
}

bool gpuic_mem_injected_failure(void)
{
    long left = __atomic_load_n(&gpuic_mem_budget, __ATOMIC_RELAXED);

    while (left >= 0) {
        if (left == 0) {
            return true;
        }
        if (__atomic_compare_exchange_n(&gpuic_mem_budget, &left, left - 1, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return false;
        }
    }
    return false;
}
