/*
 * gpuic_status.h - the one status type of libgpuic.
 *
 * Every libgpuic function that can fail returns a gpuic_status_t.  Non-negative values are
 * success (GPUIC_OK) or "started, not finished" (GPUIC_INPROGRESS); negative values are errors.
 * Callers in other layers translate it at exactly one place (the osc component has one function
 * for that).  The values are stable: they are also written into window error words read by
 * device code.
 */
#ifndef GPUIC_STATUS_H
#define GPUIC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpuic_status {
    GPUIC_OK                = 0,   /**< done */
    GPUIC_INPROGRESS        = 1,   /**< started; completes later (flush, progress) */
    GPUIC_ERR_NO_MEMORY     = -1,  /**< host or device allocation failed */
    GPUIC_ERR_INVALID_PARAM = -2,  /**< a caller passed a bad argument */
    GPUIC_ERR_NO_RESOURCE   = -3,  /**< back-pressure: a ring or table is full; retry later */
    GPUIC_ERR_OUT_OF_RANGE  = -4,  /**< an access outside the registered region */
    GPUIC_ERR_UNSUPPORTED   = -5,  /**< not implemented on this path or build */
    GPUIC_ERR_TRANSPORT     = -6,  /**< UCX (or the NIC) reported a failure */
    GPUIC_ERR_BAD_KEY       = -7,  /**< key index or generation does not name a live region */
    GPUIC_ERR_TIMED_OUT     = -8,  /**< a bounded wait expired */
    GPUIC_ERR_PEER_FAILED   = -9,  /**< the peer process is unreachable */
    GPUIC_ERR_BAD_OPCODE    = -10, /**< a descriptor carries an unknown opcode */
    GPUIC_ERR_NO_DEVICE     = -11, /**< CUDA driver or device not available */
    GPUIC_ERR_ENGINE_FAILED = -12, /**< the progress engine (proxy thread) exited or stopped
                                        making progress with work pending */
    GPUIC_ERR_QUEUE_STUCK   = -13  /**< a producer reserved ring slots and never published
                                        them: later work on that ring cannot complete */
} gpuic_status_t;

/** Returns a short constant English description of a status; never NULL. */
const char *gpuic_status_string(gpuic_status_t status);

/** True for GPUIC_OK and GPUIC_INPROGRESS. */
static inline int gpuic_status_is_ok(gpuic_status_t status)
{
    return status >= 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_STATUS_H */
