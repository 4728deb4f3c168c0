/*
 * dissect_p2p - the device API's direct path (CUDA IPC stores and loads) taken apart per
 * operation, stamped on the device with %globaltimer through gpuic_trace.h, and put on the
 * host timeline by a calibration.
 *
 * Two ranks (mpirun -np 2), one GPU window in device memory.  Rank 0 runs one thread that,
 * per operation, stamps (SM cycle counts converted to %globaltimer nanoseconds, see
 * k_dissect):
 *   issue     the operation is called
 *   resolved  MPIX_Win_target_device() returned: the window and rank checks, the peer's base
 *   stored    the operation returned: put/put_signal stores issued, get data loaded, atomic
 *             result back (the atomic is the by-rank call, so it resolves again)
 *   fenced    MPIX_Win_flush_target_device() returned: the fence that makes the data visible
 *             at the target (gpu scope when all ranks share the GPU, system scope otherwise)
 * The stamps end up in a trace mapped into the device (gpuic_trace_create() with
 * GPUIC_TRACE_DEVICE_MAPPED), in the record stages ISSUE, WRITTEN, FENCED and DOORBELL; the
 * host harvests them after the kernel, shifted by the calibration's offset.
 *
 * Calibration (gpuic_trace_calibrate.cuh): a kernel and a host thread exchange ping-pongs
 * through mapped pinned memory; gpuic_trace_calibration_fit() takes the offset from the
 * shortest round trips and reports the uncertainty.  The launch latency (host stamp before
 * the launch to the kernel's first %globaltimer reading) is reported on that timeline.
 *
 * Usage: mpirun -np 2 dissect_p2p [--op put|get|atomic|flush|put_signal] [--size BYTES]
 *                                  [--iters N] [--csv FILE]
 * Output: CSV like gpuic_dissect's (op,size,issue,resolved,stored,fenced; ns since issue),
 * with "# calibration" and "# launch" comment lines.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "gpuic_cuda.h"
#include "gpuic_trace.h"
#include "gpuic_trace_calibrate.cuh"
#include "mpix_gpuic.h"
#include "mpix_gpuic_device.cuh"

#define WIN_BYTES (8u << 20)
#define SIG_OFF (WIN_BYTES - 64)
#define CALIB_ROUNDS 2000

enum p2p_op { P2P_PUT, P2P_GET, P2P_ATOMIC, P2P_FLUSH, P2P_PUT_SIGNAL };

/* Cycle counter of the SM this thread runs on: fine-grained, unlike %globaltimer, which on
 * some GPUs advances in microsecond steps. */
__device__ static inline uint64_t p2p_cycles(void)
{
    return (uint64_t)clock64();
}

/* Stamps go to device memory while the operations run and into the mapped trace only at the
 * end: a store to mapped host memory crosses PCIe, and the next system-scope fence would wait
 * for it, charging the trace's own cost to the flush being measured.  Each stamp is an SM cycle
 * count, turned into %globaltimer nanoseconds at the end by interpolating between a timer
 * reading at the start and one at the end (one thread stays on one SM, so its counter is
 * monotonic).  info[0] receives the smallest step of %globaltimer seen, info[1] the cycles per
 * microsecond, info[2] the timer when the kernel started. */
__global__ void k_dissect(MPIX_Win_device win, gpuic_trace_view_t v, uint64_t *scratch,
                          uint64_t *info, int peer, int op, size_t size, int iters, char *src,
                          int64_t *result)
{
    uint64_t g_start, g_end, c_start, c_end, step = UINT64_MAX, prev = gpuic_trace_now();

    info[2] = prev;

    for (int k = 0; k < 2000; ++k) {
        uint64_t now = gpuic_trace_now();
        if (now != prev && now - prev < step) {
            step = now - prev;
        }
        prev = now;
    }
    g_start = gpuic_trace_now();
    c_start = p2p_cycles();
    for (int i = 0; i < iters; ++i) {
        MPIX_Device_target t;
        uint64_t c0 = p2p_cycles(), c1, c2, c3;

        MPIX_Win_target_device(win, peer, &t);
        c1 = p2p_cycles();
        switch (op) {
        case P2P_PUT:
            MPIX_Put_target_device(&t, src, size, 0);
            break;
        case P2P_GET:
            MPIX_Get_target_device(&t, src, size, 0);
            break;
        case P2P_ATOMIC:
            MPIX_Fetch_and_add_device(1, result, peer, SIG_OFF - 64, win);
            break;
        case P2P_PUT_SIGNAL:
            MPIX_Put_signal_target_device(&t, src, size, 0, SIG_OFF, (uint64_t)i + 1,
                                          MPIX_DEVICE_SIGNAL_SET);
            break;
        default:
            break;
        }
        c2 = p2p_cycles();
        MPIX_Win_flush_target_device(&t);
        c3 = p2p_cycles();
        scratch[4 * i] = c0;
        scratch[4 * i + 1] = c1;
        scratch[4 * i + 2] = c2;
        scratch[4 * i + 3] = c3;
    }
    c_end = p2p_cycles();
    g_end = gpuic_trace_now();
    double ns_per_cycle = c_end > c_start ? (double)(g_end - g_start) / (double)(c_end - c_start)
                                          : 0.0;
    for (int i = 0; i < iters; ++i) {
        uint64_t t[4];
        gpuic_trace_record_t *r;

        for (int k = 0; k < 4; ++k) {
            t[k] = g_start + (uint64_t)((double)(scratch[4 * i + k] - c_start) * ns_per_cycle);
        }
        gpuic_trace_open(v, (uint64_t)i, 0, (uint32_t)size, GPUIC_TRACE_CLOCK_DEVICE, t[0]);
        r = gpuic_trace_record(v, (uint64_t)i);
        r->t[GPUIC_TRACE_WRITTEN] = t[1];
        r->t[GPUIC_TRACE_FENCED] = t[2];
        r->t[GPUIC_TRACE_DOORBELL] = t[3];
    }
    info[0] = step;
    info[1] = ns_per_cycle > 0 ? (uint64_t)(1000.0 / ns_per_cycle) : 0;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"put", "get", "atomic", "flush", "put_signal"};
    int rank, nranks, ndev = 0, iters = 1000, op = P2P_PUT;
    size_t size = 8;
    const char *csv_path = NULL;
    gpuic_trace_calibration_t cal = {0, 0, 0, 0};
    gpuic_trace_t *trace = NULL;
    MPIX_Win_device h;
    MPI_Info info;
    MPI_Win win;
    char *base, *d_src;
    int64_t *d_result;
    uint64_t *d_scratch;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = strtoul(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--csv")) csv_path = argv[i + 1];
        else if (!strcmp(argv[i], "--op")) {
            op = -1;
            for (int k = 0; k < 5; ++k) {
                if (!strcmp(argv[i + 1], names[k])) op = k;
            }
        }
    }
    if (op < 0 || iters <= 0 || size == 0 || size > WIN_BYTES / 2) {
        if (rank == 0) fprintf(stderr, "dissect_p2p: bad arguments\n");
        MPI_Finalize();
        return 2;
    }
    if (op == P2P_ATOMIC) size = 8;
    if (op == P2P_FLUSH) size = 0;
    if (nranks != 2 || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) printf("dissect_p2p: path p2p not available: needs 2 ranks and a GPU\n");
        MPI_Finalize();
        return 3;
    }
    cudaSetDevice(rank % ndev);
    cudaFree(0); /* the runtime's primary context: the one gpuic_cuda uses too */

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    cudaMemset(base, 0, WIN_BYTES);
    MPIX_Win_get_device_handle(win, &h);
    cudaMalloc(&d_src, WIN_BYTES / 2);
    cudaMalloc(&d_result, 64);
    cudaMalloc(&d_scratch, ((size_t)iters * 4 + 3) * sizeof(uint64_t));
    cudaMemset(d_src, 1, WIN_BYTES / 2);
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    if (rank == 0) {
        FILE *out = csv_path ? fopen(csv_path, "w") : stdout;
        gpuic_status_t st = gpuic_cuda_init();

        if (st == GPUIC_OK) {
            st = gpuic_trace_create((uint64_t)iters, (size_t)iters, GPUIC_TRACE_DEVICE_MAPPED,
                                    &trace);
        }
        if (out == NULL || st != GPUIC_OK || !gpuic_trace_calibrate_cuda(CALIB_ROUNDS, &cal)) {
            fprintf(stderr, "dissect_p2p: setup failed (%s)\n", gpuic_status_string(st));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        gpuic_trace_set_calibration(trace, &cal);
        gpuic_trace_view_t v = gpuic_trace_view(trace, 1);
        k_dissect<<<1, 1>>>(h, v, d_scratch, d_scratch + 4 * (size_t)iters, 1, op, size,
                             100 < iters ? 100 : iters, d_src, d_result);
        cudaDeviceSynchronize();
        gpuic_trace_harvest(trace, 0, 100 < iters ? 100 : iters); /* warm-up */
        gpuic_trace_log_reset(trace);
        uint64_t t_launch = gpuic_trace_now();
        k_dissect<<<1, 1>>>(h, v, d_scratch, d_scratch + 4 * (size_t)iters, 1, op, size, iters,
                             d_src, d_result);
        cudaError_t err = cudaDeviceSynchronize();
        gpuic_trace_harvest(trace, 0, (size_t)iters);
        size_t n;
        const gpuic_trace_record_t *log = gpuic_trace_log(trace, &n);
        fprintf(out, "# dissect_p2p path=p2p op=%s size=%zu iters=%d clock=device->host "
                "lost=%lu error=%s\n", names[op], size, iters,
                (unsigned long)gpuic_trace_lost(trace), cudaGetErrorString(err));
        uint64_t info[3] = {0, 0, 0};
        cudaMemcpy(info, d_scratch + 4 * (size_t)iters, sizeof(info), cudaMemcpyDeviceToHost);
        fprintf(out, "# device clock: SM cycles at %.3f GHz anchored to globaltimer (its "
                "smallest step seen: %lu ns)\n", (double)info[1] / 1000.0,
                (unsigned long)info[0]);
        fprintf(out, "# calibration offset_ns=%ld uncertainty_ns=%lu min_rtt_ns=%lu samples=%u\n",
                (long)cal.offset_ns, (unsigned long)cal.uncertainty_ns,
                (unsigned long)cal.min_rtt_ns, cal.samples);
        fprintf(out, "# launch host_to_kernel_start_ns=%ld (+- %lu)\n",
                (long)(info[2] - cal.offset_ns - t_launch), (unsigned long)cal.uncertainty_ns);
        fprintf(out, "op,size,issue,resolved,stored,fenced\n");
        for (size_t i = 0; i < n; ++i) {
            const uint64_t *t = log[i].t;
            fprintf(out, "%s,%zu,0,%ld,%ld,%ld\n", names[op], size,
                    (long)(t[GPUIC_TRACE_WRITTEN] - t[GPUIC_TRACE_ISSUE]),
                    (long)(t[GPUIC_TRACE_FENCED] - t[GPUIC_TRACE_ISSUE]),
                    (long)(t[GPUIC_TRACE_DOORBELL] - t[GPUIC_TRACE_ISSUE]));
        }
        if (out != stdout) fclose(out);
        gpuic_trace_destroy(trace);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaFree(d_src);
    cudaFree(d_result);
    cudaFree(d_scratch);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
