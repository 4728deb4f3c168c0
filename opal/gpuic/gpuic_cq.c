#include "gpuic_mem.h"
#include "gpuic_cq.h"

#include <stdlib.h>
#include <string.h>

#include "gpuic_fence.h"
#include "gpuic_log.h"

struct gpuic_cq {
    uint64_t head __attribute__((aligned(64))); /* next CQE to read (reader) */
    uint64_t tail __attribute__((aligned(64))); /* next CQE to write (writer) */
    uint64_t overruns;
    uint32_t mask;
    gpuic_cqe_t *entries;
};

gpuic_status_t gpuic_cq_create(uint32_t size, gpuic_cq_t **cq_p)
{
    gpuic_cq_t *cq;

    if (size < 2 || (size & (size - 1)) != 0) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    cq = gpuic_mem_aligned(64, sizeof(*cq));
    if (cq == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    memset(cq, 0, sizeof(*cq));
    cq->entries = calloc(size, sizeof(*cq->entries));
    if (cq->entries == NULL) {
        free(cq);
        return GPUIC_ERR_NO_MEMORY;
    }
    cq->mask = size - 1;
    *cq_p = cq;
    return GPUIC_OK;
}

void gpuic_cq_destroy(gpuic_cq_t *cq)
{
    if (cq == NULL) {
        return;
    }
    free(cq->entries);
    free(cq);
}

gpuic_status_t gpuic_cq_push(gpuic_cq_t *cq, const gpuic_cqe_t *cqe)
{
    uint64_t tail = cq->tail; /* only the writer writes tail */

    if (tail - gpuic_atomic_load_acquire_u64(&cq->head) > cq->mask) {
        __atomic_fetch_add(&cq->overruns, 1, __ATOMIC_RELAXED);
        gpuic_log(GPUIC_LOG_WARN, "CQ overrun: a completion was lost");
        return GPUIC_ERR_NO_RESOURCE;
    }
    cq->entries[tail & cq->mask] = *cqe;
    gpuic_fence_completion_to_producer();
    gpuic_atomic_store_release_u64(&cq->tail, tail + 1);
    return GPUIC_OK;
}

unsigned gpuic_cq_poll(gpuic_cq_t *cq, gpuic_cqe_t *out, unsigned max)
{
    uint64_t head = cq->head; /* only the reader writes head */
    uint64_t tail = gpuic_atomic_load_acquire_u64(&cq->tail);
    unsigned n = 0;

    while (n < max && head + n != tail) {
        out[n] = cq->entries[(head + n) & cq->mask];
        n++;
    }
    if (n != 0) {
        gpuic_fence_slots_to_producer();
        gpuic_atomic_store_release_u64(&cq->head, head + n);
    }
    return n;
}

uint64_t gpuic_cq_overruns(const gpuic_cq_t *cq)
{
    return __atomic_load_n(&cq->overruns, __ATOMIC_RELAXED);
}
