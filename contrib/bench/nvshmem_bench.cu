/*
 * nvshmem_bench: the NVSHMEM peer of device_bench, same measures, same output format, so the
 * two run side by side (contrib/bench/run-device-bench.sh).  Two PEs bootstrapped over MPI.
 * Built only where NVSHMEM is installed (-DNVSHMEM_BENCH_NO_ATOMICS leaves the fetch-add row
 * out, for installs whose device library lacks the typed atomics or transports that lack
 * them):
 *   nvcc -arch=sm_90 -rdc=true -I$NVSHMEM/include nvshmem_bench.cu -L$NVSHMEM/lib \
 *        -lnvshmem_host -lnvshmem_device -lcuda $(mpicc --showme:link)
 * Options: --iters N, --csv FILE, --max-bytes N (as device_bench), --label NAME (component
 * column, default nvshmem), --no-signal (no ping-pong), --rate-per N (puts per thread in the
 * message-rate rows, default 64).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_peer.h"

static int rank;
static FILE *csv;
static const char *label = "nvshmem"; /* --label: the component column of the rows */

static void row(const char *measure, size_t size, double value, const char *unit)
{
    if (rank == 0) nvshmem_peer_row(csv, label, measure, size, value, unit);
}

/* Between phases: this PE's operations complete, then every PE here.  An MPI barrier rather than
 * nvshmem_barrier_all, whose atomics abort on the UCX remote transport without GDRCopy. */
static void pe_barrier(void)
{
    nvshmem_quiet();
    MPI_Barrier(MPI_COMM_WORLD);
}

__device__ static inline uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Rounds of a ping-pong kernel's untimed first run. */
#define WARM_ROUNDS 50

__global__ void k_put_quiet(char *sym, int peer, int iters, const char *src, uint64_t *ns)
{
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; ++i) {
        nvshmem_putmem_nbi(sym + (i % 1024) * 8, src, 8, peer);
        nvshmem_quiet();
    }
    *ns = now_ns() - t0;
}

__global__ void k_get(char *sym, int peer, int iters, uint64_t *out, uint64_t *ns)
{
    uint64_t t0 = now_ns(), sum = 0, v;
    for (int i = 0; i < iters; ++i) {
        nvshmem_getmem(&v, sym + (i % 1024) * 8, 8, peer);
        sum += v;
    }
    *ns = now_ns() - t0;
    *out = sum;
}

__global__ void k_fadd(int64_t *counter, int peer, int iters, int64_t *out, uint64_t *ns)
{
    uint64_t t0 = now_ns();
    int64_t acc = 0;
#ifndef NVSHMEM_BENCH_NO_ATOMICS
    for (int i = 0; i < iters; ++i) {
        acc += nvshmem_int64_atomic_fetch_add(counter, 1, peer);
    }
#endif
    *ns = now_ns() - t0;
    *out = acc;
}

__global__ void k_pingpong(char *data, uint64_t *sig, int me, int iters, const char *src,
                           uint64_t *ns)
{
    int peer = 1 - me;
    uint64_t t0 = now_ns();
    for (uint64_t r = 1; r <= (uint64_t)iters; ++r) {
        if (me == 0) {
            nvshmem_putmem_signal_nbi(data, src, 8, sig, r, NVSHMEM_SIGNAL_SET, peer);
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, r);
        } else {
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, r);
            nvshmem_putmem_signal_nbi(data, src, 8, sig, r, NVSHMEM_SIGNAL_SET, peer);
        }
    }
    *ns = now_ns() - t0;
}

__device__ static inline uint64_t payload_word(int writer, int r, size_t i)
{
    return ((uint64_t)(writer + 1) << 56) ^ ((uint64_t)r << 24) ^ (uint64_t)i;
}

/* device_bench's k_pingpong_payload with NVSHMEM: one thread writes round r's payload, puts it
 * with signal r (nvshmem_putmem_signal), waits for the peer's round r and checks every word. */
__global__ void k_pingpong_payload(uint64_t *data, uint64_t *sig, int me, int iters, size_t bytes,
                                   uint64_t *src, uint64_t *bad, uint64_t *ns)
{
    int peer = 1 - me;
    size_t words = bytes / 8;
    uint64_t errors = 0, t0 = now_ns();
    for (uint64_t r = 1; r <= (uint64_t)iters; ++r) {
        if (me == 1) {
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, r);
            for (size_t i = 0; i < words; ++i) errors += data[i] != payload_word(peer, (int)r, i);
        }
        for (size_t i = 0; i < words; ++i) src[i] = payload_word(me, (int)r, i);
        nvshmem_putmem_signal(data, src, bytes, sig, r, NVSHMEM_SIGNAL_SET, peer);
        if (me == 0) {
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, r);
            for (size_t i = 0; i < words; ++i) errors += data[i] != payload_word(peer, (int)r, i);
        }
    }
    *ns = now_ns() - t0;
    *bad = errors;
}

/* Thread t's i-th put goes to word (7t + i) & mask, mask = 2^20 - 1 passed at run time: the
 * index arithmetic of device_bench's k_rate (a runtime mask there too). */
__global__ void k_rate(char *sym, int peer, int per_thread, const char *src, int mask)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < per_thread; ++i) {
        nvshmem_putmem_nbi(sym + (MPI_Aint)((t * 7 + i) & mask) * 8, src, 8, peer);
    }
    nvshmem_quiet();
}

__global__ void k_bw(char *sym, int peer, const char *src, size_t bytes)
{
    size_t chunk = (bytes + gridDim.x - 1) / gridDim.x;
    size_t off = chunk * blockIdx.x;
    if (off < bytes) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;
        nvshmemx_putmem_block(sym + off, src + off, len, peer);
    }
    if (threadIdx.x == 0) nvshmem_quiet();
}

static uint64_t read_ns(uint64_t *d)
{
    uint64_t v;
    cudaDeviceSynchronize();
    cudaMemcpy(&v, d, 8, cudaMemcpyDeviceToHost);
    return v;
}

int main(int argc, char **argv)
{
    int nranks, iters = 20000, rate_per = 64;
    bool signals = true;
    size_t max_bytes = 16u << 20, sym_bytes;
    const char *csv_path = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
        /* --no-signal: no put-with-signal ping-pong (remote transports without atomics abort
         * on the signal) */
        else if (!strcmp(argv[i], "--no-signal")) signals = false;
        /* --rate-per N: puts per thread in the message-rate rows (a slow transport: fewer) */
        else if (!strcmp(argv[i], "--rate-per") && i + 1 < argc) rate_per = atoi(argv[++i]);
    }
    /* the ping-pong uses the 16th MiB; --max-bytes (largest put_bw size, as device_bench's)
     * only ever grows the heap */
    if (max_bytes < 8) max_bytes = 8;
    sym_bytes = max_bytes > (16u << 20) ? max_bytes : (16u << 20);
    nvshmem_peer_init(rank, nranks);
    if (rank == 0 && csv_path) csv = fopen(csv_path, "a");
    int peer = 1 - rank;

    char *sym = (char *)nvshmem_malloc(sym_bytes);
    uint64_t *sig = (uint64_t *)nvshmem_malloc(64);
    int64_t *counter = (int64_t *)nvshmem_malloc(64);
    uint64_t *d_ns, *d_out;
    char *d_src;
    cudaMalloc(&d_ns, 64);
    cudaMalloc(&d_out, 64);
    cudaMalloc(&d_src, sym_bytes);
    cudaMemset(d_src, 1, sym_bytes);
    cudaMemset(sig, 0, 64);
    cudaMemset(counter, 0, 64);
    cudaDeviceSynchronize();
    pe_barrier();

    if (rank == 0) {
        k_put_quiet<<<1, 1>>>(sym, peer, 100, d_src, d_ns);
        cudaDeviceSynchronize();
        k_put_quiet<<<1, 1>>>(sym, peer, iters, d_src, d_ns);
        row("put_flush", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
        k_get<<<1, 1>>>(sym, peer, iters, d_out, d_ns);
        row("get", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
#ifndef NVSHMEM_BENCH_NO_ATOMICS
        k_fadd<<<1, 1>>>(counter, peer, iters, (int64_t *)d_out, d_ns);
        row("fetch_add", 8, read_ns(d_ns) / (double)iters / 1e3, "us");
#endif
    }
    pe_barrier();
    if (signals) {
        /* each ping-pong kernel runs WARM_ROUNDS rounds untimed first, as in device_bench: a
         * rank still loading a kernel (lazy loading) shows in the other rank's time */
        for (int timed = 0; timed < 2; ++timed) {
            int n = timed ? iters : WARM_ROUNDS;

            cudaMemset(sig, 0, 8);
            cudaDeviceSynchronize();
            pe_barrier();
            k_pingpong<<<1, 1>>>(sym + (15u << 20), sig, rank, n, d_src, d_ns);
            double us = read_ns(d_ns) / (double)n / 2 / 1e3;
            if (timed) row("pingpong_signal", 8, us, "us");
            pe_barrier();
        }
        static const size_t pay[] = {8, 64, 1024, 4096};
        uint64_t *d_pay, *d_bad;
        cudaMalloc(&d_pay, 4096);
        cudaMalloc(&d_bad, 8);
        for (size_t k = 0; k < sizeof(pay) / sizeof(pay[0]); ++k) {
            uint64_t bad = 0;
            double us = 0;

            /* the first size runs untimed first, as above (the kernel loads once) */
            for (int timed = k == 0 ? 0 : 1; timed < 2; ++timed) {
                int n = timed ? iters : WARM_ROUNDS;

                cudaMemset(sig, 0, 8);
                cudaDeviceSynchronize();
                pe_barrier();
                k_pingpong_payload<<<1, 1>>>((uint64_t *)(sym + (14u << 20)), sig, rank, n,
                                             pay[k], d_pay, d_bad, d_ns);
                us = read_ns(d_ns) / (double)n / 2 / 1e3;
            }
            cudaMemcpy(&bad, d_bad, 8, cudaMemcpyDeviceToHost);
            MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            if (bad == 0) {
                row("pingpong_payload", pay[k], us, "us");
            } else if (rank == 0) {
                printf("# %s: pingpong_payload %zu B: %llu words wrong\n", label, pay[k],
                       (unsigned long long)bad);
            }
            pe_barrier();
        }
        cudaFree(d_pay);
        cudaFree(d_bad);
    }
    if (rank == 0) {
        int shapes[][2] = {{1, 32}, {8, 256}, {132, 256}, {132, 1024}};
        for (int s = 0; s < 4; ++s) {
            int blocks = shapes[s][0], threads = shapes[s][1], per = rate_per;
            cudaEvent_t e0, e1;
            float ms;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            k_rate<<<blocks, threads>>>(sym, peer, per, d_src, (1 << 20) - 1);
            cudaEventRecord(e0);
            k_rate<<<blocks, threads>>>(sym, peer, per, d_src, (1 << 20) - 1);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            cudaEventElapsedTime(&ms, e0, e1);
            char name[64];
            snprintf(name, sizeof(name), "msg_rate_%dx%d", blocks, threads);
            row(name, 8, (double)blocks * threads * per / (ms * 1e-3) / 1e6, "Mmsg/s");
        }
        for (size_t bytes = 8; bytes <= max_bytes;
             bytes = bytes < max_bytes && bytes * 4 > max_bytes && max_bytes > (16u << 20)
                         ? max_bytes : bytes * 4) {
            int reps = bytes < (1 << 20) ? 200 : 20;
            cudaEvent_t e0, e1;
            float ms;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            k_bw<<<132, 1024>>>(sym, peer, d_src, bytes);
            cudaEventRecord(e0);
            for (int r = 0; r < reps; ++r) k_bw<<<132, 1024>>>(sym, peer, d_src, bytes);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            cudaEventElapsedTime(&ms, e0, e1);
            row("put_bw", bytes, bytes * (double)reps / (ms * 1e-3) / 1e9, "GB/s");
        }
    }
    pe_barrier();
    nvshmem_free(sym);
    nvshmem_free(sig);
    nvshmem_free(counter);
    if (csv) fclose(csv);
    nvshmem_finalize();
    MPI_Finalize();
    return 0;
}
