/*
 * gpuic_trace.h - per-WQE stage stamps: where the time of one operation goes.
 *
 * A trace is a side array of records indexed by ring sequence number (modulo its size, a power
 * of two at least the ring's size).  The producer of a WQE opens its record and stamps the
 * producer stages; the proxy stamps its own stages into the same record; when the producer
 * sees the WQE complete it stamps the last stage and harvests the record (copies it into the
 * trace log) before the sequence number comes round again.  The array lives in host memory
 * that both sides can write; for a GPU producer it is pinned and mapped into the device
 * (gpuic_trace_create() with GPUIC_TRACE_DEVICE_MAPPED), so device code stamps through the
 * device address (gpuic_trace_view_t.records of gpuic_trace_view(trace, 1)).
 *
 * Clocks: host stamps are CLOCK_MONOTONIC nanoseconds; device stamps are %globaltimer
 * nanoseconds.  gpuic_trace_now() reads whichever applies where it runs.  A record's producer
 * stages are all on the producer's clock (the record says which: gpuic_trace_open()); the
 * proxy stages are always host time.  gpuic_trace_harvest() moves device stamps onto the host
 * timeline with the offset of a calibration (gpuic_trace_set_calibration(); measured by
 * gpuic_trace_calibrate_cuda() of gpuic_trace_calibrate.cuh, which fits its round trips with
 * gpuic_trace_calibration_fit()).
 *
 * Cost: the stamp helpers below are inline and always available.  The trace points inside
 * libgpuic (proxy pickup, UCX call issued, remote completion: GPUIC_TRACE_POINT() of
 * gpuic_proxy_internal.h) exist only in a build configured with --enable-trace (GPUIC_TRACE in
 * gpuic_build_config.h); otherwise they expand to nothing, and a queue's trace is ignored.
 *
 * Stamp API, for any producer (host thread, or a kernel through the mapped view):
 *
 *     uint64_t t0 = gpuic_trace_now();                       before anything else
 *     ... reserve n slots at seq ...
 *     gpuic_trace_open(v, seq, opcode, len, clock, t0);      GPUIC_TRACE_ISSUE
 *     ... build the WQE ...
 *     gpuic_trace_stamp(v, seq, GPUIC_TRACE_WRITTEN);
 *     ... fence a staged payload ...  gpuic_trace_stamp(v, seq, GPUIC_TRACE_FENCED);
 *     ... store the tagged words (gpuic_ring.h), which publishes the entry, stamping
 *     GPUIC_TRACE_DOORBELL as the stores begin (a host producer) or end (a GPU producer) ...
 *     ... completion seen ...  gpuic_trace_stamp(v, seq, GPUIC_TRACE_SEEN);
 *     gpuic_trace_harvest(trace, seq, 1);                   (host code)
 *
 * Every helper does nothing when the view's records pointer is NULL, so a producer can call
 * them unconditionally and pay one predictable branch when tracing is not set up.
 */
#ifndef GPUIC_TRACE_H
#define GPUIC_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuic_portable.h"
#include "gpuic_status.h"

#if !defined(__CUDA_ARCH__)
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The stages of one WQE, in the order they happen.  Who stamps each is in brackets. */
typedef enum gpuic_trace_stage {
    GPUIC_TRACE_ISSUE    = 0, /**< [producer] the operation was called */
    GPUIC_TRACE_WRITTEN  = 1, /**< [producer] slots reserved, descriptor built */
    GPUIC_TRACE_FENCED   = 2, /**< [producer] descriptor in the slots, ordering fence done */
    GPUIC_TRACE_DOORBELL = 3, /**< [producer] entry published (its tagged words stored) */
    GPUIC_TRACE_PICKUP   = 4, /**< [proxy] WQE copied out of the ring */
    GPUIC_TRACE_ISSUED   = 5, /**< [proxy] validated, UCX call issued (or nothing to issue) */
    GPUIC_TRACE_REMOTE   = 6, /**< [proxy] complete at the target (its round's flush done) */
    GPUIC_TRACE_SEEN     = 7, /**< [producer] completion seen by the producer */
    GPUIC_TRACE_NSTAGES  = 8  /**< number of stages */
} gpuic_trace_stage_t;

/** Which clock a record's producer stages were read from. */
typedef enum gpuic_trace_clock {
    GPUIC_TRACE_CLOCK_HOST   = 0, /**< CLOCK_MONOTONIC */
    GPUIC_TRACE_CLOCK_DEVICE = 1  /**< %globaltimer of the producing GPU */
} gpuic_trace_clock_t;

/** One WQE's stamps; a stage never stamped reads 0.  One record is 128 bytes. */
typedef struct gpuic_trace_record {
    uint64_t t[GPUIC_TRACE_NSTAGES]; /**< ns per stage, on the clock of whoever stamped it */
    uint64_t seq;                    /**< sequence number of the WQE's first slot, plus one
                                      *   (0: never opened) */
    uint32_t len;                    /**< bytes the operation moves */
    uint8_t  opcode;                 /**< enum gpuic_wqe_opcode */
    uint8_t  clock;                  /**< enum gpuic_trace_clock of the producer stages */
    uint16_t reserved;               /**< zero */
    uint64_t pad[6];                 /**< keeps records on their own pair of cache lines */
} __attribute__((aligned(64))) gpuic_trace_record_t;

/** What producers need to stamp: passed by value, also to kernels. */
typedef struct gpuic_trace_view {
    gpuic_trace_record_t *records; /**< the array (host or device address), or NULL: no trace */
    uint64_t mask;                 /**< records - 1 */
} gpuic_trace_view_t;

/** A calibration of one GPU's %globaltimer against CLOCK_MONOTONIC. */
typedef struct gpuic_trace_calibration {
    int64_t  offset_ns;      /**< device time - host time at the same instant */
    uint64_t uncertainty_ns; /**< half the shortest round trip: the offset is within +- this */
    uint64_t min_rtt_ns;     /**< shortest host -> device -> host round trip seen */
    unsigned samples;        /**< round trips the fit used */
} gpuic_trace_calibration_t;

/** One calibration round trip: host stamp before its request, device stamp of the answer,
 *  host stamp after it saw the answer. */
typedef struct gpuic_trace_pingpong {
    uint64_t host_send; /**< CLOCK_MONOTONIC when the host wrote its request */
    uint64_t device;    /**< %globaltimer when the kernel answered */
    uint64_t host_recv; /**< CLOCK_MONOTONIC when the host saw the answer */
} gpuic_trace_pingpong_t;

typedef struct gpuic_trace gpuic_trace_t;

/** Flags of gpuic_trace_create(). */
enum gpuic_trace_flag {
    /** Pin the records and map them into the current CUDA device (a GPU producer). */
    GPUIC_TRACE_DEVICE_MAPPED = 1
};

/**
 * Nanoseconds now: %globaltimer on the device, CLOCK_MONOTONIC on the host.  The two clocks
 * differ by an offset gpuic_trace_calibration_fit() measures.
 */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_trace_now(void)
{
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/** The record of sequence number @p seq, or NULL when @p v traces nothing. */
static inline GPUIC_HOST_DEVICE gpuic_trace_record_t *gpuic_trace_record(gpuic_trace_view_t v,
                                                                         uint64_t seq)
{
    return v.records == NULL ? NULL : &v.records[seq & v.mask];
}

/**
 * Producer: gpuic_trace_open() without clearing the other stages, for a producer whose stores
 * nothing orders before the consumer's stamps (a GPU thread publishing an entry without a
 * fence): the record's other stages must already be zero (a fresh trace, no record used
 * twice).  Returns the record, or NULL when the view has none.
 */
static inline GPUIC_HOST_DEVICE gpuic_trace_record_t *gpuic_trace_open_fields(
    gpuic_trace_view_t v, uint64_t seq, uint8_t opcode, uint32_t len, gpuic_trace_clock_t clock,
    uint64_t t_issue)
{
    gpuic_trace_record_t *r = gpuic_trace_record(v, seq);

    if (r != NULL) {
        r->t[GPUIC_TRACE_ISSUE] = t_issue;
        r->seq = seq + 1;
        r->len = len;
        r->opcode = opcode;
        r->clock = (uint8_t)clock;
        r->reserved = 0;
    }
    return r;
}

/**
 * Producer: starts the record of the WQE at @p seq, stamping GPUIC_TRACE_ISSUE with @p t_issue
 * (read with gpuic_trace_now() when the operation was called, before its reservation) and
 * clearing the other stages.  @p clock says which clock the producer reads.
 */
static inline GPUIC_HOST_DEVICE void gpuic_trace_open(gpuic_trace_view_t v, uint64_t seq,
                                                      uint8_t opcode, uint32_t len,
                                                      gpuic_trace_clock_t clock,
                                                      uint64_t t_issue)
{
    gpuic_trace_record_t *r = gpuic_trace_record(v, seq);

    if (r == NULL) {
        return;
    }
    for (unsigned i = 1; i < GPUIC_TRACE_NSTAGES; ++i) {
        r->t[i] = 0;
    }
    gpuic_trace_open_fields(v, seq, opcode, len, clock, t_issue);
}

/**
 * Stamps @p stage of the record of @p seq with the time now (gpuic_trace_now()).  Producers
 * stamp their stages, the proxy its own; a stage is stamped by one party only, and the record
 * was opened before the stores that hand the WQE to the proxy, so plain stores suffice: the
 * ring's own ordering (tagged words, completion index) orders them.
 */
static inline GPUIC_HOST_DEVICE void gpuic_trace_stamp(gpuic_trace_view_t v, uint64_t seq,
                                                       gpuic_trace_stage_t stage)
{
    gpuic_trace_record_t *r = gpuic_trace_record(v, seq);

    if (r != NULL) {
        r->t[stage] = gpuic_trace_now();
    }
}

/**
 * Creates a trace of at least @p nrecords records (rounded up to a power of two; pass at least
 * the ring's size) and an empty log that keeps up to @p log_cap harvested records.
 * @param flags  enum gpuic_trace_flag
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM, GPUIC_ERR_NO_MEMORY, or the CUDA error of mapping.
 */
gpuic_status_t gpuic_trace_create(uint64_t nrecords, size_t log_cap, unsigned flags,
                                  gpuic_trace_t **trace_p);

/** Frees a trace; nobody may stamp into it any more. */
void gpuic_trace_destroy(gpuic_trace_t *trace);

/** The view producers stamp through: host addresses, or (@p device) the device mapping. */
gpuic_trace_view_t gpuic_trace_view(const gpuic_trace_t *trace, int device);

/**
 * Producer, after it saw completion of the @p n WQEs whose first slots are @p seq ..
 * @p seq + n - 1: copies their records into the log, device stamps moved onto the host
 * timeline, and clears them.  A record whose sequence number does not match (overwritten: the
 * producer let more WQEs than records be outstanding) is counted as lost, not logged.
 * @return the number of records logged.
 */
size_t gpuic_trace_harvest(gpuic_trace_t *trace, uint64_t seq, size_t n);

/** The harvested records, in harvest order, all on the host clock; *n_p their number. */
const gpuic_trace_record_t *gpuic_trace_log(const gpuic_trace_t *trace, size_t *n_p);

/** Records that could not be logged: overwritten before harvest, or the log was full. */
uint64_t gpuic_trace_lost(const gpuic_trace_t *trace);

/** Empties the log (the lost count too). */
void gpuic_trace_log_reset(gpuic_trace_t *trace);

/** Sets the calibration gpuic_trace_harvest() applies to device stamps. */
void gpuic_trace_set_calibration(gpuic_trace_t *trace, const gpuic_trace_calibration_t *cal);

/**
 * Fits a device/host clock offset to @p n round trips (a kernel and a host thread exchanging
 * ping-pongs through mapped memory).  The round trips with the shortest duration bound the
 * offset best: the device stamp lies between their two host stamps, so offset = device -
 * (host_send + host_recv) / 2 within half the round trip.  The fit takes the median offset of
 * the round trips within 10 % of the shortest one.
 * @return GPUIC_OK, or GPUIC_ERR_INVALID_PARAM when no sample is usable.
 */
gpuic_status_t gpuic_trace_calibration_fit(const gpuic_trace_pingpong_t *samples, size_t n,
                                           gpuic_trace_calibration_t *cal);

/** Short stage names ("issue", "written", ...), for logs and tables. */
const char *gpuic_trace_stage_name(gpuic_trace_stage_t stage);

#ifndef __cplusplus
_Static_assert(sizeof(gpuic_trace_record_t) == 128, "trace record size");
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_TRACE_H */
