/*
 * test_trace_device - device producers stamping through a trace mapped into the GPU
 * (gpuic_trace.h), and the clock calibration (gpuic_trace_calibrate.cuh).
 *
 * Checks structure and causality, never speed: every record a kernel opened is harvested once,
 * its producer stamps are non-decreasing and on the host clock after the harvest, and, moved by
 * the calibration, they lie between a host stamp taken before the launch and one taken after
 * the kernel finished (within the calibration's stated uncertainty).  Runs under mpirun like
 * the other device tests but uses no MPI.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuic_cuda.h"
#include "gpuic_trace.h"
#include "gpuic_trace_calibrate.cuh"

#define NREC 512

static int failures;

#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

__global__ void k_produce(gpuic_trace_view_t v, int n)
{
    for (int i = 0; i < n; ++i) {
        uint64_t t0 = gpuic_trace_now();
        gpuic_trace_open(v, (uint64_t)i, 0x08, 8, GPUIC_TRACE_CLOCK_DEVICE, t0);
        gpuic_trace_stamp(v, (uint64_t)i, GPUIC_TRACE_WRITTEN);
        __threadfence_system();
        gpuic_trace_stamp(v, (uint64_t)i, GPUIC_TRACE_FENCED);
        gpuic_trace_stamp(v, (uint64_t)i, GPUIC_TRACE_DOORBELL);
        gpuic_trace_stamp(v, (uint64_t)i, GPUIC_TRACE_SEEN);
    }
}

int main(void)
{
    gpuic_trace_calibration_t cal;
    gpuic_trace_t *trace;
    const gpuic_trace_record_t *log;
    const int stages[] = {GPUIC_TRACE_ISSUE, GPUIC_TRACE_WRITTEN, GPUIC_TRACE_FENCED,
                          GPUIC_TRACE_DOORBELL, GPUIC_TRACE_SEEN};
    int ndev = 0;
    size_t n;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_trace_device: no GPU\n");
        return 77;
    }
    cudaFree(0);
    EXPECT(gpuic_cuda_init() == GPUIC_OK);
    EXPECT(gpuic_trace_create(NREC, NREC, GPUIC_TRACE_DEVICE_MAPPED, &trace) == GPUIC_OK);
    EXPECT(gpuic_trace_view(trace, 1).records != NULL);
    EXPECT(gpuic_trace_calibrate_cuda(2000, &cal));
    EXPECT(cal.samples > 0 && cal.min_rtt_ns > 0 && 2 * cal.uncertainty_ns >= cal.min_rtt_ns);
    printf("calibration: offset %ld ns, +- %lu ns (min round trip %lu ns, %u samples)\n",
           (long)cal.offset_ns, (unsigned long)cal.uncertainty_ns,
           (unsigned long)cal.min_rtt_ns, cal.samples);
    gpuic_trace_set_calibration(trace, &cal);

    uint64_t before = gpuic_trace_now();
    k_produce<<<1, 1>>>(gpuic_trace_view(trace, 1), NREC);
    EXPECT(cudaDeviceSynchronize() == cudaSuccess);
    uint64_t after = gpuic_trace_now();

    EXPECT(gpuic_trace_harvest(trace, 0, NREC) == NREC);
    EXPECT(gpuic_trace_lost(trace) == 0);
    log = gpuic_trace_log(trace, &n);
    EXPECT(n == NREC);
    for (size_t i = 0; i < n; ++i) {
        EXPECT(log[i].seq == i + 1 && log[i].clock == GPUIC_TRACE_CLOCK_HOST);
        for (unsigned k = 1; k < sizeof(stages) / sizeof(stages[0]); ++k) {
            EXPECT(log[i].t[stages[k]] >= log[i].t[stages[k - 1]]);
        }
        /* the proxy's stages were never stamped */
        EXPECT(log[i].t[GPUIC_TRACE_PICKUP] == 0 && log[i].t[GPUIC_TRACE_REMOTE] == 0);
        EXPECT(log[i].t[GPUIC_TRACE_ISSUE] + cal.uncertainty_ns >= before);
        EXPECT(log[i].t[GPUIC_TRACE_SEEN] <= after + cal.uncertainty_ns);
        if (failures > 20) {
            break;
        }
    }
    /* harvested records were cleared: a second harvest logs nothing */
    EXPECT(gpuic_trace_harvest(trace, 0, 1) == 0);
    gpuic_trace_destroy(trace);
    printf("test_trace_device: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
