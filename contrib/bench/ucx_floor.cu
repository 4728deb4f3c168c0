/*
 * ucx_floor: raw UCX one-sided floor between two processes, the peer that gpuic's paths to
 * other nodes are compared with on the same UCX build and UCX_TLS.
 *
 *   mpirun -np 2 ucx_floor [--mem cuda|host] [--origin cuda|host] [--iters N] [--max-bytes N]
 *                          [--csv FILE]
 *
 * Rank 0 drives; rank 1 only progresses its worker (transports that emulate RMA in software,
 * such as tcp, need the target's progress) until rank 0 is done.  Both sides' buffers are of
 * the --mem kind (default cuda: cudaMalloc, registered with ucp_mem_map as CUDA memory); rank
 * 0's origin buffer is of the --origin kind (default: as --mem; host: malloc, unregistered).
 * Rows, in device_bench's format (component "ucx"):
 *   put_flush  8     ucp_put_nbx of 8 bytes + ucp_ep_flush_nbx, waited, per round (us)
 *   get        8     ucp_get_nbx of 8 bytes, waited (us)
 *   put_bw     SIZE  16 puts of SIZE bytes in flight, then one flush (GB/s), 8 B .. --max-bytes
 * MPI only bootstraps (worker addresses and keys) and says when to stop.
 */
#include <mpi.h>
#include <cuda_runtime.h>
#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *csv;

static void row(const char *measure, size_t size, double value, const char *unit)
{
    printf("%-6s %-20s %10zu %12.3f %s\n", "ucx", measure, size, value, unit);
    if (csv != NULL) {
        fprintf(csv, "%s,%s,%zu,%.4f,%s\n", "ucx", measure, size, value, unit);
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t st)
{
    fprintf(stderr, "ucx_floor: %s: %s\n", what, ucs_status_string(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Waits for a request of a *_nbx call and frees it. */
static void wait_request(ucp_worker_h worker, ucs_status_ptr_t req, const char *what)
{
    ucs_status_t st;

    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        die(what, UCS_PTR_STATUS(req));
    }
    do {
        ucp_worker_progress(worker);
        st = ucp_request_check_status(req);
    } while (st == UCS_INPROGRESS);
    ucp_request_free(req);
    if (st != UCS_OK) {
        die(what, st);
    }
}

/* Exchanges a blob with the other rank (two ranks). */
static void *swap_blob(const void *mine, size_t len, size_t *peer_len)
{
    unsigned long my_len = len, other_len = 0;
    int rank;
    void *other;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Sendrecv(&my_len, 1, MPI_UNSIGNED_LONG, 1 - rank, 0, &other_len, 1, MPI_UNSIGNED_LONG,
                 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    other = malloc(other_len);
    MPI_Sendrecv(mine, (int)len, MPI_BYTE, 1 - rank, 1, other, (int)other_len, MPI_BYTE,
                 1 - rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    *peer_len = other_len;
    return other;
}

int main(int argc, char **argv)
{
    size_t max_bytes = 64u << 20, len, peer_len, blob_len, size;
    int iters = 2000, rank, nranks, i, done = 0, cuda = 1, ocuda = -1;
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    ucp_mem_map_params_t mparams = {0};
    ucp_ep_params_t eparams = {0};
    ucp_request_param_t rp = {0}, none = {0};
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    ucp_mem_h memh;
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    void *buf, *blob, *peer_addr, *peer_rkey;
    uint64_t peer_base = 0, my_base;
    const char *csv_path = NULL;
    ucs_status_t st;
    MPI_Request stop;
    double t;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else if (!strcmp(argv[i], "--mem") && i + 1 < argc) cuda = strcmp(argv[++i], "host") != 0;
        else if (!strcmp(argv[i], "--origin") && i + 1 < argc)
            ocuda = strcmp(argv[++i], "host") != 0;
    }
    if (ocuda < 0) {
        ocuda = cuda;
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "ucx_floor: run with 2 processes\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0 && csv_path != NULL) {
        csv = fopen(csv_path, "a");
    }

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_RMA;
    st = ucp_init(&params, NULL, &context);
    if (st != UCS_OK) die("ucp_init", st);
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context, &wparams, &worker);
    if (st != UCS_OK) die("ucp_worker_create", st);
    st = ucp_worker_get_address(worker, &address, &len);
    if (st != UCS_OK) die("ucp_worker_get_address", st);

    if (cuda) {
        if (cudaMalloc(&buf, max_bytes) != cudaSuccess) {
            fprintf(stderr, "ucx_floor: cudaMalloc of %zu bytes failed\n", max_bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        cudaMemset(buf, rank, max_bytes);
        cudaDeviceSynchronize();
    } else {
        buf = malloc(max_bytes);
        memset(buf, rank, max_bytes);
    }
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                         UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mparams.address = buf;
    mparams.length = max_bytes;
    mparams.memory_type = cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    st = ucp_mem_map(context, &mparams, &memh);
    if (st != UCS_OK) die("ucp_mem_map (a UCX without CUDA support cannot map device memory)", st);
    st = ucp_rkey_pack(context, memh, &blob, &blob_len);
    if (st != UCS_OK) die("ucp_rkey_pack", st);

    peer_addr = swap_blob(address, len, &peer_len);
    peer_rkey = swap_blob(blob, blob_len, &peer_len);
    my_base = (uint64_t)(uintptr_t)buf;
    MPI_Sendrecv(&my_base, 1, MPI_UINT64_T, 1 - rank, 2, &peer_base, 1, MPI_UINT64_T, 1 - rank,
                 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address = (const ucp_address_t *)peer_addr;
    st = ucp_ep_create(worker, &eparams, &ep);
    if (st != UCS_OK) die("ucp_ep_create", st);
    st = ucp_ep_rkey_unpack(ep, peer_rkey, &rkey);
    if (st != UCS_OK) die("ucp_ep_rkey_unpack", st);
    MPI_Barrier(MPI_COMM_WORLD);

    rp.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    rp.memory_type = ocuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    if (rank == 1) {
        /* the target: progress until rank 0 says it is done */
        MPI_Irecv(&done, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &stop);
        for (;;) {
            int flag = 0;

            for (i = 0; i < 64; ++i) {
                ucp_worker_progress(worker);
            }
            MPI_Test(&stop, &flag, MPI_STATUS_IGNORE);
            if (flag) {
                break;
            }
        }
    } else {
        /* the origin: the upper half of the registered buffer, or host memory */
        char *local = ocuda == cuda ? (char *)buf + max_bytes / 2 : NULL;

        if (local == NULL && !ocuda) {
            local = (char *)calloc(1, max_bytes / 2);
        } else if (local == NULL && cudaMalloc((void **)&local, max_bytes / 2) != cudaSuccess) {
            fprintf(stderr, "ucx_floor: cudaMalloc of the origin failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }

        for (i = 0; i < iters / 10; ++i) { /* warm-up: connections, registrations */
            wait_request(worker, ucp_put_nbx(ep, local, 8, peer_base, rkey, &rp), "put");
            wait_request(worker, ucp_ep_flush_nbx(ep, &none), "flush");
        }
        t = now_s();
        for (i = 0; i < iters; ++i) {
            wait_request(worker, ucp_put_nbx(ep, local, 8, peer_base, rkey, &rp), "put");
            wait_request(worker, ucp_ep_flush_nbx(ep, &none), "flush");
        }
        row("put_flush", 8, (now_s() - t) / iters * 1e6, "us");
        t = now_s();
        for (i = 0; i < iters; ++i) {
            wait_request(worker, ucp_get_nbx(ep, local, 8, peer_base, rkey, &rp), "get");
        }
        row("get", 8, (now_s() - t) / iters * 1e6, "us");
        for (size = 8; size <= max_bytes / 2; size *= 4) {
            int reps = size >= (1u << 20) ? 20 : 200, inflight = 16, r, k;

            t = now_s();
            for (r = 0; r < reps; ++r) {
                for (k = 0; k < inflight; ++k) {
                    ucs_status_ptr_t req = ucp_put_nbx(ep, local, size, peer_base, rkey, &rp);

                    if (UCS_PTR_IS_ERR(req)) die("put", UCS_PTR_STATUS(req));
                    if (req != NULL) ucp_request_free(req); /* the flush covers it */
                }
                wait_request(worker, ucp_ep_flush_nbx(ep, &none), "flush");
            }
            row("put_bw", size, (double)size * reps * inflight / (now_s() - t) / 1e9, "GB/s");
        }
        MPI_Send(&done, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
        if (ocuda != cuda && ocuda) cudaFree(local);
        if (ocuda != cuda && !ocuda) free(local);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ucp_rkey_destroy(rkey);
    {
        /* both sides close at once: a reset by the peer is the expected end */
        ucp_request_param_t force = {0};
        ucs_status_ptr_t req;

        force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        force.flags = UCP_EP_CLOSE_FLAG_FORCE;
        req = ucp_ep_close_nbx(ep, &force);
        while (req != NULL && !UCS_PTR_IS_ERR(req) &&
               ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        if (req != NULL && !UCS_PTR_IS_ERR(req)) ucp_request_free(req);
    }
    ucp_rkey_buffer_release(blob);
    ucp_mem_unmap(context, memh);
    ucp_worker_release_address(worker, address);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    if (cuda) cudaFree(buf); else free(buf);
    free(peer_addr);
    free(peer_rkey);
    if (csv != NULL) fclose(csv);
    MPI_Finalize();
    return 0;
}
