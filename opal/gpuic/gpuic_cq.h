/*
 * gpuic_cq.h - a completion queue for signalled WQEs (fm_ce_se has CQ_UPDATE) and for WQEs
 * that failed.  One writer (the engine), one reader (the window's owner).
 *
 * A full CQ is an overrun, as on hardware: the CQE is counted in gpuic_cq_overruns() and the
 * window's error word gets GPUIC_ERR_NO_RESOURCE; the completion counters stay exact.  Size
 * the CQ for the signalled WQEs that can be outstanding.
 */
#ifndef GPUIC_CQ_H
#define GPUIC_CQ_H

#include <stdint.h>

#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One completion. */
typedef struct gpuic_cqe {
    uint32_t ring_id;   /**< ring the WQE came from */
    uint32_t target;    /**< its target (QPN field) */
    uint16_t wqe_index; /**< its WQE index field */
    uint8_t  opcode;    /**< its opcode */
    uint8_t  reserved;  /**< zero */
    int32_t  status;    /**< GPUIC_OK or the error it completed with (gpuic_status_t) */
} gpuic_cqe_t;

typedef struct gpuic_cq gpuic_cq_t;

/** Creates a CQ of @p size entries (a power of two >= 2). */
gpuic_status_t gpuic_cq_create(uint32_t size, gpuic_cq_t **cq_p);

/** Destroys a CQ. */
void gpuic_cq_destroy(gpuic_cq_t *cq);

/** Writer: appends a CQE.  @return GPUIC_OK or GPUIC_ERR_NO_RESOURCE (full: overrun counted). */
gpuic_status_t gpuic_cq_push(gpuic_cq_t *cq, const gpuic_cqe_t *cqe);

/** Reader: moves up to @p max CQEs into @p out, oldest first; returns how many. */
unsigned gpuic_cq_poll(gpuic_cq_t *cq, gpuic_cqe_t *out, unsigned max);

/** CQEs lost because the CQ was full. */
uint64_t gpuic_cq_overruns(const gpuic_cq_t *cq);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CQ_H */
