#include "gpuic_mem.h"
#include "gpuic_trace.h"

#include <stdlib.h>
#include <string.h>

#include "gpuic_cuda.h"
#include "gpuic_log.h"

struct gpuic_trace {
    gpuic_trace_record_t *records;     /* host address */
    gpuic_trace_record_t *dev_records; /* device mapping, or NULL */
    uint64_t mask;
    gpuic_trace_record_t *log;
    size_t log_len, log_cap;
    uint64_t lost;
    gpuic_trace_calibration_t cal;
};

static const char *const gpuic_trace_stage_names[GPUIC_TRACE_NSTAGES] = {
    "issue", "written", "fenced", "doorbell", "pickup", "issued", "remote", "seen"};

gpuic_status_t gpuic_trace_create(uint64_t nrecords, size_t log_cap, unsigned flags,
                                  gpuic_trace_t **trace_p)
{
    gpuic_trace_t *trace;
    uint64_t size = 1;
    gpuic_status_t status;
    void *dptr;

    if (nrecords == 0 || nrecords > (1ull << 30)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    while (size < nrecords) {
        size <<= 1;
    }
    trace = calloc(1, sizeof(*trace));
    if (trace == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    /* page-aligned: the device mapping pins whole pages */
    trace->records = gpuic_mem_aligned(4096, size * sizeof(gpuic_trace_record_t));
    trace->log = malloc((log_cap ? log_cap : 1) * sizeof(gpuic_trace_record_t));
    if (trace->records == NULL || trace->log == NULL) {
        status = GPUIC_ERR_NO_MEMORY;
        goto err_free;
    }
    memset(trace->records, 0, size * sizeof(gpuic_trace_record_t));
    trace->mask = size - 1;
    trace->log_cap = log_cap;
    if (flags & GPUIC_TRACE_DEVICE_MAPPED) {
        status = gpuic_cuda_host_register(trace->records, size * sizeof(gpuic_trace_record_t),
                                          &dptr);
        if (status != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "trace: cannot map its records into the device: %s",
                      gpuic_status_string(status));
            goto err_free;
        }
        trace->dev_records = dptr;
    }
    *trace_p = trace;
    return GPUIC_OK;

err_free:
    free(trace->records);
    free(trace->log);
    free(trace);
    return status;
}

void gpuic_trace_destroy(gpuic_trace_t *trace)
{
    if (trace == NULL) {
        return;
    }
    if (trace->dev_records != NULL) {
        gpuic_cuda_host_unregister(trace->records);
    }
    free(trace->records);
    free(trace->log);
    free(trace);
}

gpuic_trace_view_t gpuic_trace_view(const gpuic_trace_t *trace, int device)
{
    gpuic_trace_view_t v = {NULL, 0};

    if (trace != NULL) {
        v.records = device ? trace->dev_records : trace->records;
        v.mask = trace->mask;
    }
    return v;
}

/* Stages the producer stamped (on its own clock); the proxy's are host time already. */
static int gpuic_trace_stage_is_producer(unsigned stage)
{
    return stage <= GPUIC_TRACE_DOORBELL || stage == GPUIC_TRACE_SEEN;
}

size_t gpuic_trace_harvest(gpuic_trace_t *trace, uint64_t seq, size_t n)
{
    size_t logged = 0;

    for (size_t i = 0; i < n; ++i) {
        gpuic_trace_record_t *r = &trace->records[(seq + i) & trace->mask];
        gpuic_trace_record_t *out;

        if (r->seq != seq + i + 1 || trace->log_len >= trace->log_cap) {
            trace->lost++;
            continue;
        }
        out = &trace->log[trace->log_len++];
        *out = *r;
        if (out->clock == GPUIC_TRACE_CLOCK_DEVICE) {
            for (unsigned s = 0; s < GPUIC_TRACE_NSTAGES; ++s) {
                if (out->t[s] != 0 && gpuic_trace_stage_is_producer(s)) {
                    out->t[s] = (uint64_t)((int64_t)out->t[s] - trace->cal.offset_ns);
                }
            }
            out->clock = GPUIC_TRACE_CLOCK_HOST;
        }
        memset(r, 0, sizeof(*r));
        logged++;
    }
    return logged;
}

const gpuic_trace_record_t *gpuic_trace_log(const gpuic_trace_t *trace, size_t *n_p)
{
    *n_p = trace->log_len;
    return trace->log;
}

uint64_t gpuic_trace_lost(const gpuic_trace_t *trace)
{
    return trace->lost;
}

void gpuic_trace_log_reset(gpuic_trace_t *trace)
{
    trace->log_len = 0;
    trace->lost = 0;
}

void gpuic_trace_set_calibration(gpuic_trace_t *trace, const gpuic_trace_calibration_t *cal)
{
    trace->cal = *cal;
}

static int gpuic_trace_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

gpuic_status_t gpuic_trace_calibration_fit(const gpuic_trace_pingpong_t *samples, size_t n,
                                           gpuic_trace_calibration_t *cal)
{
    uint64_t min_rtt = UINT64_MAX, bound;
    int64_t *offsets;
    size_t k = 0;

    for (size_t i = 0; i < n; ++i) {
        if (samples[i].host_recv >= samples[i].host_send &&
            samples[i].host_recv - samples[i].host_send < min_rtt) {
            min_rtt = samples[i].host_recv - samples[i].host_send;
        }
    }
    if (min_rtt == UINT64_MAX) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    offsets = malloc(n * sizeof(*offsets));
    if (offsets == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    /* the fastest round trips pin the device stamp closest to the host's midpoint; a few of
     * them, not one, so a single lucky sample does not decide */
    bound = min_rtt + min_rtt / 10;
    for (size_t i = 0; i < n; ++i) {
        uint64_t rtt = samples[i].host_recv - samples[i].host_send;
        if (samples[i].host_recv >= samples[i].host_send && rtt <= bound) {
            uint64_t mid = samples[i].host_send + rtt / 2;
            offsets[k++] = (int64_t)(samples[i].device - mid);
        }
    }
    qsort(offsets, k, sizeof(*offsets), gpuic_trace_cmp_i64);
    cal->offset_ns = offsets[k / 2];
    cal->min_rtt_ns = min_rtt;
    cal->uncertainty_ns = (bound + 1) / 2;
    cal->samples = (unsigned)k;
    free(offsets);
    return GPUIC_OK;
}

const char *gpuic_trace_stage_name(gpuic_trace_stage_t stage)
{
    return (unsigned)stage < GPUIC_TRACE_NSTAGES ? gpuic_trace_stage_names[stage] : "?";
}
