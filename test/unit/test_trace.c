/*
 * test_trace - the trace's bookkeeping without a proxy: records opened and stamped in stage
 * order, harvested once and cleared, overwritten records counted as lost, a full log, device
 * stamps moved by the calibration, and the calibration fit on synthetic round trips.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic.h"
#include "unit_test.h"

static void test_records(void)
{
    gpuic_trace_t *trace;
    gpuic_trace_view_t v;
    const gpuic_trace_record_t *log;
    size_t n;

    CHECK(gpuic_trace_create(0, 4, 0, &trace) == GPUIC_ERR_INVALID_PARAM);
    CHECK(gpuic_trace_create(6, 4, 0, &trace) == GPUIC_OK); /* rounded up to 8 */
    v = gpuic_trace_view(trace, 0);
    CHECK(v.records != NULL && v.mask == 7);
    CHECK(gpuic_trace_view(trace, 1).records == NULL); /* not device-mapped */

    gpuic_trace_open(v, 10, GPUIC_WQE_OP_RDMA_WRITE, 8, GPUIC_TRACE_CLOCK_HOST, 1000);
    for (unsigned s = 1; s < GPUIC_TRACE_NSTAGES; ++s) {
        gpuic_trace_stamp(v, 10, (gpuic_trace_stage_t)s);
    }
    CHECK(gpuic_trace_harvest(trace, 10, 1) == 1);
    log = gpuic_trace_log(trace, &n);
    CHECK(n == 1 && log[0].seq == 11 && log[0].len == 8 && log[0].t[0] == 1000);
    for (unsigned s = 1; s < GPUIC_TRACE_NSTAGES; ++s) {
        CHECK(log[0].t[s] >= log[0].t[s - 1]);
    }
    /* harvested records are cleared: a second harvest finds nothing */
    CHECK(gpuic_trace_harvest(trace, 10, 1) == 0 && gpuic_trace_lost(trace) == 1);

    /* seq 3 and seq 11 share a record: opening 11 overwrites 3 */
    gpuic_trace_open(v, 3, 0, 0, GPUIC_TRACE_CLOCK_HOST, 5);
    gpuic_trace_open(v, 11, 0, 0, GPUIC_TRACE_CLOCK_HOST, 6);
    CHECK(gpuic_trace_harvest(trace, 3, 1) == 0 && gpuic_trace_lost(trace) == 2);
    CHECK(gpuic_trace_harvest(trace, 11, 1) == 1);

    /* the log keeps at most 4 */
    gpuic_trace_log_reset(trace);
    for (uint64_t s = 0; s < 6; ++s) {
        gpuic_trace_open(v, s, 0, 0, GPUIC_TRACE_CLOCK_HOST, 1 + s);
    }
    CHECK(gpuic_trace_harvest(trace, 0, 6) == 4 && gpuic_trace_lost(trace) == 2);
    log = gpuic_trace_log(trace, &n);
    CHECK(n == 4 && log[3].t[0] == 4);

    /* device stamps of the producer stages move by the offset; proxy stages do not */
    {
        gpuic_trace_calibration_t cal = {500, 10, 20, 1};
        gpuic_trace_record_t *r;

        gpuic_trace_log_reset(trace);
        gpuic_trace_set_calibration(trace, &cal);
        gpuic_trace_open(v, 20, 0, 0, GPUIC_TRACE_CLOCK_DEVICE, 10500);
        r = gpuic_trace_record(v, 20);
        r->t[GPUIC_TRACE_DOORBELL] = 10600;
        r->t[GPUIC_TRACE_PICKUP] = 10200;
        CHECK(gpuic_trace_harvest(trace, 20, 1) == 1);
        log = gpuic_trace_log(trace, &n);
        CHECK(log[0].t[GPUIC_TRACE_ISSUE] == 10000 && log[0].t[GPUIC_TRACE_DOORBELL] == 10100);
        CHECK(log[0].t[GPUIC_TRACE_PICKUP] == 10200 && log[0].t[GPUIC_TRACE_WRITTEN] == 0);
        CHECK(log[0].clock == GPUIC_TRACE_CLOCK_HOST);
    }
    gpuic_trace_destroy(trace);

    /* a NULL view stamps nothing and does not crash */
    v.records = NULL;
    gpuic_trace_open(v, 1, 0, 0, GPUIC_TRACE_CLOCK_HOST, 1);
    gpuic_trace_stamp(v, 1, GPUIC_TRACE_SEEN);
    CHECK(gpuic_trace_record(v, 1) == NULL);
}

static void test_calibration(void)
{
    enum { N = 1000 };
    gpuic_trace_pingpong_t s[N];
    gpuic_trace_calibration_t cal;
    const int64_t offset = -123456789;

    /* round trips of 2000 ns plus noise; the device answers at a random point of each, but
     * the fastest ones (1000 ns, every 50th) answer at their midpoint */
    srand(7);
    for (int i = 0; i < N; ++i) {
        uint64_t send = 1000000 + (uint64_t)i * 10000;
        uint64_t rtt = i % 50 == 0 ? 1000 : 2000 + (uint64_t)(rand() % 3000);
        uint64_t at = i % 50 == 0 ? rtt / 2 : (uint64_t)(rand() % (int)rtt);
        s[i].host_send = send;
        s[i].host_recv = send + rtt;
        s[i].device = (uint64_t)((int64_t)(send + at) + offset);
    }
    CHECK(gpuic_trace_calibration_fit(s, N, &cal) == GPUIC_OK);
    CHECK(cal.offset_ns == offset);
    CHECK(cal.min_rtt_ns == 1000 && cal.samples == N / 50);
    CHECK(cal.uncertainty_ns >= 500 && cal.uncertainty_ns <= 600);
    /* no usable sample: every receive before its send */
    s[0].host_recv = s[0].host_send - 1;
    CHECK(gpuic_trace_calibration_fit(s, 1, &cal) == GPUIC_ERR_INVALID_PARAM);
}

int main(void)
{
    test_records();
    test_calibration();
    return unit_test_result("test_trace");
}
