/*
 * stream_bench: stream-triggered RMA (MPIX_*_enqueue) on gpuic GPU windows, next to what a
 * program does without it (the host-driven loop) and to a stream-ordered copy.  Two ranks
 * (under MPS when they share a GPU); the NVSHMEM peer is nvshmem_stream_bench.cu.
 *
 *   mpirun -np 2 --mca osc gpuic stream_bench [--iters N] [--csv FILE]
 *
 * Rows (CSV: component,measure,size,value,unit), per operation or epoch, host wall clock over
 * N enqueues followed by one stream synchronization:
 *   gpuic stream_put            8 B MPIX_Put_enqueue (rank 0, in an enqueued lock_all epoch)
 *   gpuic stream_put_flush      8 B MPIX_Put_enqueue + MPIX_Win_flush_enqueue
 *   gpuic stream_put_host       host time of one MPIX_Put_enqueue call alone (batches of
 *                               ENQ_BATCH calls, each timed before its stream synchronization)
 *   gpuic stream_put_flush_host host time of one MPIX_Put_enqueue + MPIX_Win_flush_enqueue
 *   gpuic graph_lock_epoch      a captured passive epoch (kernel, lock_all, put, flush,
 *                               unlock_all) replayed 1000 times by rank 0, per epoch
 *   gpuic stream_fence_epoch    MPIX_Win_fence_enqueue alone (both ranks)
 *   gpuic stream_put_fence_epoch  MPIX_Put_enqueue + MPIX_Win_fence_enqueue (both ranks)
 *   gpuic graph_epoch           a captured epoch (kernel, put, fence, kernel) replayed 1000
 *                               times, per epoch
 *   host  host_put_flush        the host-driven loop: kernel, cudaStreamSynchronize, MPI_Put
 *                               from device memory, MPI_Win_flush
 *   host  host_put_fence_epoch  kernel, cudaStreamSynchronize, MPI_Put, MPI_Win_fence
 *   floor cudaMemcpyAsync_8B    cudaMemcpyAsync of 8 bytes device to device on the stream
 *   floor kernel_launch         an empty kernel launched on the stream, back to back (the
 *                               least any call that launches a kernel can cost per call)
 *   floor kernel_launch_pdl     the same, launched with cudaLaunchKernelEx and programmatic
 *                               stream serialization, the kernel beginning with the stream
 *                               kernels' griddepcontrol prologue (what the enqueued calls'
 *                               launches cost on sm_90+; OMPI_MCA_osc_gpuic_stream_pdl=0
 *                               turns theirs off)
 *   floor stream_write_value    cuStreamWriteValue32 to a device word, back to back (through
 *                               cudaGetDriverEntryPoint; no row where unavailable)
 *   floor stream_agent_rtt      a request the stream writes (cuStreamWriteValue32 to a device
 *                               word) answered by a kernel resident on another stream, which
 *                               the stream waits for (cuStreamWaitValue32 on a second word):
 *                               the least a stream-ordered call served by a GPU-resident agent
 *                               instead of a kernel launch per call would cost
 *   floor stream_agent_rtt_batch  the same request and wait as one cuStreamBatchMemOp
 *   floor stream_write_wait     the write and a wait already satisfied, no agent (the two
 *                               stream memory operations alone)
 *   floor graph_4_empty_kernels a captured graph of 4 empty kernels, replayed 1000 times, per
 *                               replay (the least graph_epoch's 4 kernel nodes can cost)
 *   floor graph_4_empty_kernels_pdl  the same, all 4 with the prologue and kernels 2 to 4
 *                               launched with the attribute (programmatic edges throughout)
 *   floor graph_4_empty_kernels_pdl_inner  the prologue and the attribute on kernels 2 and 3
 *                               only: graph_epoch's shape (kernel, put, fence, kernel), whose
 *                               first and last kernels are the program's, launched plainly
 *   floor pointer_attributes    cudaPointerGetAttributes on a device buffer (host time)
 *   ratio *                     the ratios the design aims at (printed, never enforced)
 */
#include <cuda.h> /* cuStreamWriteValue32's types only: called through the runtime */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "mpix_gpuic.h"

#define WIN_BYTES (1u << 20)
#define GRAPH_REPLAYS 1000
#define ENQ_BATCH 256 /* well below the stream's launch queue: the host never waits in a batch */

static int rank;
static FILE *csv;

static void row(const char *component, const char *measure, size_t size, double value,
                const char *unit)
{
    if (rank != 0) return;
    printf("%-6s %-24s %10zu %12.3f %s\n", component, measure, size, value, unit);
    if (csv) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", component, measure, size, value, unit);
        fflush(csv);
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * Replays a captured @p graph: instantiates it, runs it once, then times GRAPH_REPLAYS launches
 * (after a barrier of all ranks when @p together: both sides of an epoch start at once).
 * Returns the time per replay in µs and the graph's node count in *nodes; frees the graph.
 */
static double graph_replay_us(cudaGraph_t graph, cudaStream_t s, bool together, size_t *nodes)
{
    cudaGraphExec_t exec;
    double t0, us;

    *nodes = 0;
    cudaGraphGetNodes(graph, NULL, nodes);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    if (together) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    t0 = now_us();
    for (int r = 0; r < GRAPH_REPLAYS; ++r) {
        cudaGraphLaunch(exec, s);
    }
    cudaStreamSynchronize(s);
    us = (now_us() - t0) / GRAPH_REPLAYS;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return us;
}

/* Time per call of @p enqueue(i), called @p iters times back to back, with one stream
 * synchronization of @p s at the end (what the GPU's work costs once the queue is full). */
template <typename F> static double per_call_us(cudaStream_t s, int iters, F enqueue)
{
    double t0 = now_us();

    for (int i = 0; i < iters; ++i) {
        enqueue(i);
    }
    cudaStreamSynchronize(s);
    return (now_us() - t0) / iters;
}

static void must(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] %s failed: %d\n", rank, what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Stands for the producer of the data a put sends. */
__global__ void k_touch(uint64_t *p, uint64_t v)
{
    *p = v;
}

__global__ void k_empty(void)
{
}

/* An empty kernel with the stream kernels' prologue (osc_gpuic_stream_kernels.cu): let the next
 * kernel be scheduled, then wait for the previous one. */
__global__ void k_empty_pdl(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* k_empty_pdl launched on @p s with programmatic stream serialization (cudaErrorNotSupported
 * where the runtime predates the attribute). */
static cudaError_t launch_empty_pdl(cudaStream_t s)
{
#if CUDART_VERSION >= 11080
    cudaLaunchAttribute attr = {};
    cudaLaunchConfig_t cfg = {};

    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, k_empty_pdl);
#else
    (void)s;
    return cudaErrorNotSupported;
#endif
}

/*
 * Captures 4 empty kernels on @p s and returns the time per replay (graph_replay_us), or -1
 * when the capture failed.  Kernel i is k_empty_pdl launched with the attribute (a programmatic
 * edge from kernel i - 1) when bit i of @p pdl is set, k_empty_pdl launched plainly when only
 * bit i of @p prologue is, and k_empty (a program's kernel) otherwise.
 */
static double graph_4_kernels_us(cudaStream_t s, unsigned prologue, unsigned pdl)
{
    cudaGraph_t graph = NULL;
    size_t nodes;
    bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;

    for (int k = 0; ok && k < 4; ++k) {
        if (pdl & (1u << k)) {
            ok = launch_empty_pdl(s) == cudaSuccess;
        } else if (prologue & (1u << k)) {
            k_empty_pdl<<<1, 32, 0, s>>>();
        } else {
            k_empty<<<1, 32, 0, s>>>();
        }
    }
    if (cudaStreamEndCapture(s, &graph) != cudaSuccess || !ok || graph == NULL) {
        if (graph != NULL) cudaGraphDestroy(graph);
        cudaGetLastError();
        return -1;
    }
    return graph_replay_us(graph, s, false, &nodes);
}

/* A driver function through the runtime (no -lcuda); NULL if unavailable. */
static void *get_driver_fn(const char *name)
{
    void *fn = NULL;
    cudaError_t rc;
    bool found = true;

#if CUDART_VERSION >= 12050
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    rc = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
    found = q == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    rc = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q);
    found = q == cudaDriverEntryPointSuccess;
#else
    rc = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault);
#endif
    if (rc != cudaSuccess || !found) {
        cudaGetLastError();
        return NULL;
    }
    return fn;
}

typedef CUresult (*write_value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*wait_value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*batch_mem_op_fn)(CUstream, unsigned int, CUstreamBatchMemOpParams *,
                                    unsigned int);

/* The agent: answers every request value in *req by storing it in *resp, until it has
 * answered @p last (or two seconds passed: a stream that stopped must not hang the bench). */
__global__ void k_agent(const volatile uint32_t *req, volatile uint32_t *resp, uint32_t last)
{
    uint64_t t0, t;
    uint32_t seen = *resp;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (seen != last) {
        uint32_t v = *req;

        if (v != seen) {
            seen = v;
            __threadfence_system();
            *resp = v;
            continue;
        }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > 2000000000ull) {
            break;
        }
    }
}

/* The stream_agent_rtt and stream_write_wait floors (rows only where the driver has the stream
 * memory operations). */
static void agent_floors(cudaStream_t s, int iters)
{
    write_value32_fn write_value32 = (write_value32_fn)get_driver_fn("cuStreamWriteValue32");
    wait_value32_fn wait_value32 = (wait_value32_fn)get_driver_fn("cuStreamWaitValue32");
    batch_mem_op_fn batch = (batch_mem_op_fn)get_driver_fn("cuStreamBatchMemOp");
    uint32_t *words = NULL;
    cudaStream_t side;

    if (write_value32 == NULL || wait_value32 == NULL || cudaMalloc(&words, 64) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    CUdeviceptr req = (CUdeviceptr)(uintptr_t)words, resp = req + 32, self = req + 16;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    for (int variant = 0; variant < 2; ++variant) {
        if (variant == 1 && batch == NULL) {
            break;
        }
        cudaMemset(words, 0, 64);
        cudaDeviceSynchronize();
        k_agent<<<1, 1, 0, side>>>((const volatile uint32_t *)req, (volatile uint32_t *)resp,
                                   (uint32_t)iters);
        double us = per_call_us(s, iters, [&](int i) {
            cuuint32_t v = (cuuint32_t)(i + 1);
            if (variant == 0) {
                write_value32((CUstream)s, req, v, 0);
                wait_value32((CUstream)s, resp, v, CU_STREAM_WAIT_VALUE_GEQ);
            } else {
                CUstreamBatchMemOpParams ops[2];
                memset(ops, 0, sizeof(ops));
                ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
                ops[0].writeValue.address = req;
                ops[0].writeValue.value = v;
                ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
                ops[1].waitValue.address = resp;
                ops[1].waitValue.value = v;
                ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
                batch((CUstream)s, 2, ops, 0);
            }
        });
        cudaStreamSynchronize(side);
        uint32_t answered = 0;
        cudaMemcpy(&answered, words + 8, 4, cudaMemcpyDeviceToHost);
        if (cudaGetLastError() == cudaSuccess && answered == (uint32_t)iters) {
            row("floor", variant == 0 ? "stream_agent_rtt" : "stream_agent_rtt_batch", 4, us,
                "us");
        } else {
            fprintf(stderr, "stream_bench: agent floor %d incomplete (%u of %d)\n", variant,
                    answered, iters);
        }
    }
    row("floor", "stream_write_wait", 4, per_call_us(s, iters, [&](int i) {
            write_value32((CUstream)s, self, (cuuint32_t)i, 0);
            wait_value32((CUstream)s, self, 0, CU_STREAM_WAIT_VALUE_GEQ);
        }), "us");
    cudaGetLastError();
    cudaStreamDestroy(side);
    cudaFree(words);
}

__global__ void k_touch_dev(uint64_t *p)
{
    *p += 1;
}

int main(int argc, char **argv)
{
    int nranks, iters = 20000, ndev = 0, caps = 0;
    const char *csv_path = NULL;
    MPI_Win win;
    MPI_Info info;
    void *base;
    uint64_t *src, *dst;
    cudaStream_t s;
    double t0;
    double put_flush = 0, host_put_flush = 0, host_epoch = 0, graph_epoch = 0;
    double graph_lock_epoch = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    }
    if (nranks != 2 || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) fprintf(stderr, "stream_bench: needs 2 ranks and a CUDA device\n");
        MPI_Finalize();
        return 77;
    }
    MPIX_Gpuic_query_capabilities(&caps);
    if (!(caps & MPIX_GPUIC_CAP_STREAM)) {
        if (rank == 0) fprintf(stderr, "stream_bench: gpuic built without stream calls\n");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(rank % ndev);
    if (rank == 0 && csv_path) csv = fopen(csv_path, "a");
    int peer = 1 - rank;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc(&src, 4096);
    cudaMalloc(&dst, 4096);
    cudaMemset(src, 1, 4096);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_memory_alloc_kinds", "cuda:device");
    must(MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win), "MPI_Win_allocate");
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);

    /* per-operation put and put+flush, rank 0 to rank 1 */
    if (rank == 0) {
        must(MPIX_Win_lock_all_enqueue(0, win, s), "lock_all_enqueue");
        for (int i = 0; i < 100; ++i) { /* loads the kernels, warms the path */
            must(MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, win, s), "put");
            must(MPIX_Win_flush_enqueue(peer, win, s), "flush");
        }
        cudaStreamSynchronize(s);
        row("gpuic", "stream_put", 8, per_call_us(s, iters, [&](int i) {
                MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win, s);
            }), "us");
        put_flush = per_call_us(s, iters, [&](int i) {
            MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win, s);
            MPIX_Win_flush_enqueue(peer, win, s);
        });
        row("gpuic", "stream_put_flush", 8, put_flush, "us");

        /* the host's part alone: batches short enough that no call waits for the GPU */
        double host_put = 0, host_pf = 0;
        int batches = iters / ENQ_BATCH > 0 ? iters / ENQ_BATCH : 1;
        for (int b = 0; b < batches; ++b) {
            t0 = now_us();
            for (int i = 0; i < ENQ_BATCH; ++i) {
                MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win, s);
            }
            host_put += now_us() - t0;
            cudaStreamSynchronize(s);
            t0 = now_us();
            for (int i = 0; i < ENQ_BATCH / 2; ++i) {
                MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win, s);
                MPIX_Win_flush_enqueue(peer, win, s);
            }
            host_pf += now_us() - t0;
            cudaStreamSynchronize(s);
        }
        row("gpuic", "stream_put_host", 8, host_put / ((double)batches * ENQ_BATCH), "us");
        row("gpuic", "stream_put_flush_host", 8, host_pf / ((double)batches * (ENQ_BATCH / 2)),
            "us");
        must(MPIX_Win_unlock_all_enqueue(win, s), "unlock_all_enqueue");
        cudaStreamSynchronize(s);

        /* a passive-target epoch captured once, replayed */
        {
            cudaGraph_t graph;
            size_t nodes;
            cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
            k_touch_dev<<<1, 1, 0, s>>>(src);
            must(MPIX_Win_lock_all_enqueue(0, win, s), "lock_all_enqueue");
            must(MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, win, s), "put");
            must(MPIX_Win_flush_enqueue(peer, win, s), "flush");
            must(MPIX_Win_unlock_all_enqueue(win, s), "unlock_all_enqueue");
            cudaStreamEndCapture(s, &graph);
            graph_lock_epoch = graph_replay_us(graph, s, false, &nodes);
            row("gpuic", "graph_lock_epoch", 8, graph_lock_epoch, "us");
            row("gpuic", "graph_lock_epoch_nodes", 0, (double)nodes, "nodes");
        }

        /* floor: a stream-ordered copy of the same size */
        cudaMemcpyAsync(dst, src, 8, cudaMemcpyDeviceToDevice, s);
        cudaStreamSynchronize(s);
        row("floor", "cudaMemcpyAsync_8B", 8, per_call_us(s, iters, [&](int i) {
                cudaMemcpyAsync(dst + (i % 512), src, 8, cudaMemcpyDeviceToDevice, s);
            }), "us");
        k_empty<<<1, 32, 0, s>>>();
        cudaStreamSynchronize(s);
        row("floor", "kernel_launch", 0,
            per_call_us(s, iters, [&](int) { k_empty<<<1, 32, 0, s>>>(); }), "us");
        if (launch_empty_pdl(s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess) {
            row("floor", "kernel_launch_pdl", 0,
                per_call_us(s, iters, [&](int) { launch_empty_pdl(s); }), "us");
        }
        cudaGetLastError();
        {
            write_value32_fn write_value32 = (write_value32_fn)get_driver_fn("cuStreamWriteValue32");
            uint32_t *word = NULL;

            if (write_value32 != NULL && cudaMalloc(&word, sizeof(*word)) == cudaSuccess &&
                write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)word, 0, 0) == CUDA_SUCCESS &&
                cudaStreamSynchronize(s) == cudaSuccess) {
                row("floor", "stream_write_value", 4, per_call_us(s, iters, [&](int i) {
                        write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)word, (cuuint32_t)i,
                                      0);
                    }), "us");
            }
            cudaGetLastError();
            cudaFree(word);
        }
        agent_floors(s, iters);
        {
            /* kernels with the prologue, kernels launched with the attribute (bit 0: the first) */
            static const struct { const char *name; unsigned prologue, pdl; } g4[] = {
                {"graph_4_empty_kernels", 0x0, 0x0},
                {"graph_4_empty_kernels_pdl", 0xf, 0xe},
                {"graph_4_empty_kernels_pdl_inner", 0x6, 0x6},
            };
            for (size_t g = 0; g < sizeof(g4) / sizeof(g4[0]); ++g) {
                double us = graph_4_kernels_us(s, g4[g].prologue, g4[g].pdl);
                if (us >= 0) row("floor", g4[g].name, 0, us, "us");
            }
        }
        t0 = now_us();
        for (int i = 0; i < iters; ++i) {
            cudaPointerAttributes pa;
            cudaPointerGetAttributes(&pa, src + (i & 7));
        }
        row("floor", "pointer_attributes", 0, (now_us() - t0) / iters, "us");

        /* the host-driven loop */
        int n = iters / 10 > 0 ? iters / 10 : 1;
        must(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
        t0 = now_us();
        for (int i = 0; i < n; ++i) {
            k_touch<<<1, 1, 0, s>>>(src, i);
            cudaStreamSynchronize(s);
            MPI_Put(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win);
            MPI_Win_flush(peer, win);
        }
        host_put_flush = (now_us() - t0) / n;
        row("host", "host_put_flush", 8, host_put_flush, "us");
        must(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* fence epochs, both ranks */
    {
        int n = iters / 4 > 0 ? iters / 4 : 1;
        must(MPIX_Win_fence_enqueue(0, win, s), "fence_enqueue");
        for (int i = 0; i < 100; ++i) MPIX_Win_fence_enqueue(0, win, s);
        cudaStreamSynchronize(s);
        MPI_Barrier(MPI_COMM_WORLD);
        row("gpuic", "stream_fence_epoch", 0,
            per_call_us(s, n, [&](int) { MPIX_Win_fence_enqueue(0, win, s); }), "us");
        MPI_Barrier(MPI_COMM_WORLD);
        row("gpuic", "stream_put_fence_epoch", 8, per_call_us(s, n, [&](int i) {
                MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win, s);
                MPIX_Win_fence_enqueue(0, win, s);
            }), "us");

        /* one epoch captured, replayed */
        cudaGraph_t graph;
        size_t nodes;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        k_touch_dev<<<1, 1, 0, s>>>(src);
        MPIX_Put_enqueue(src, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, win, s);
        MPIX_Win_fence_enqueue(0, win, s);
        k_touch_dev<<<1, 1, 0, s>>>(dst);
        cudaStreamEndCapture(s, &graph);
        graph_epoch = graph_replay_us(graph, s, true, &nodes);
        row("gpuic", "graph_epoch", 8, graph_epoch, "us");
        row("gpuic", "graph_epoch_nodes", 0, (double)nodes, "nodes");
        must(MPIX_Win_fence_enqueue(MPI_MODE_NOSUCCEED, win, s), "fence_enqueue");
        cudaStreamSynchronize(s);

        /* the host-driven epoch */
        MPI_Barrier(MPI_COMM_WORLD);
        n = n / 5 > 0 ? n / 5 : 1;
        must(MPI_Win_fence(0, win), "MPI_Win_fence");
        t0 = now_us();
        for (int i = 0; i < n; ++i) {
            k_touch<<<1, 1, 0, s>>>(src, i);
            cudaStreamSynchronize(s);
            MPI_Put(src, 8, MPI_BYTE, peer, (i % 1024) * 8, 8, MPI_BYTE, win);
            MPI_Win_fence(0, win);
        }
        host_epoch = (now_us() - t0) / n;
        row("host", "host_put_fence_epoch", 8, host_epoch, "us");
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    }
    MPI_Bcast(&put_flush, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&host_put_flush, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (host_epoch > 0) row("ratio", "graph_epoch/host_epoch", 8, graph_epoch / host_epoch, "x");
    if (host_put_flush > 0) {
        row("ratio", "stream_put_flush/host_put_flush", 8, put_flush / host_put_flush, "x");
        row("ratio", "graph_epoch/host_put_flush", 8, graph_epoch / host_put_flush, "x");
        row("ratio", "graph_lock_epoch/host_put_flush", 8, graph_lock_epoch / host_put_flush,
            "x");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    cudaFree(src);
    cudaFree(dst);
    cudaStreamDestroy(s);
    if (csv) fclose(csv);
    MPI_Finalize();
    return 0;
}
