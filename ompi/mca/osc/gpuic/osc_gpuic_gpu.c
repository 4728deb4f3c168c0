/*
 * GPU windows: device memory as window memory, reached by same-node peers through CUDA IPC
 * mappings (host MPI calls copy through them with the driver; device code loads and stores
 * through them) and by peers on other nodes through UCX (the memory registered with a UCX
 * that handles CUDA memory, its key exchanged like a host window's), and the device handle
 * that kernels use with mpix_gpuic_device.cuh.
 *
 * The CUDA driver is loaded at run time (libgpuic's gpuic_cuda), and only in processes that
 * use CUDA themselves: a host-only job never loads it.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/info.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

/* True when the info asks for device memory: mpi_assert_memory_alloc_kinds lists cuda:device. */
bool ompi_osc_gpuic_info_wants_device(struct opal_info_t *info)
{
    char value[OPAL_MAX_INFO_VAL + 1] = "", *tok, *save = NULL;
    int flag = 0;

    if (info == NULL) {
        return false;
    }
    opal_info_get(info, "mpi_assert_memory_alloc_kinds", OPAL_MAX_INFO_VAL, value, &flag);
    for (tok = strtok_r(value, ", ", &save); flag && tok != NULL;
         tok = strtok_r(NULL, ", ", &save)) {
        if (strcmp(tok, "cuda:device") == 0) {
            return true;
        }
    }
    return false;
}

int ompi_osc_gpuic_gpu_allocate(ompi_osc_gpuic_module_t *module, size_t size)
{
    gpuic_status_t status = gpuic_cuda_init();

    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "device memory asked for, but no CUDA device is usable");
        return MPI_ERR_NO_MEM;
    }
    module->gpu = true;
    module->gpu_owned = true;
    if (size == 0) {
        return OMPI_SUCCESS;
    }
    status = gpuic_cuda_mem_alloc(size, &module->base);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot allocate device memory for the "
                  "window (%zu bytes): free device memory or ask for less",
                  ompi_comm_rank(module->comm), module->id, size);
        return MPI_ERR_NO_MEM;
    }
    return OMPI_SUCCESS;
}

bool ompi_osc_gpuic_gpu_detect(const void *base, size_t size)
{
    return size > 0 && gpuic_cuda_init_if_loaded() == GPUIC_OK && gpuic_cuda_is_device_ptr(base);
}

int ompi_osc_gpuic_gpu_register(ompi_osc_gpuic_module_t *module, gpuic_context_t *ctx)
{
    int i;
    gpuic_status_t status;

    if (!module->gpu || module->size == 0) {
        return OMPI_SUCCESS;
    }
    /* Peers' agents, copies and UCX write this memory following none of this process's
     * streams: its synchronous copies and memsets into the window must land before they
     * return (where the driver refuses that, as before: a fence after a cudaMemset of the
     * window does not wait for the memset). */
    if (gpuic_cuda_mem_sync_memops(module->base) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: window %d: synchronous memory operations stay "
                  "asynchronous on this memory", ompi_comm_rank(module->comm), module->id);
    }
    i = ompi_osc_gpuic_peer_first_off_node(module);
    if (i < 0) {
        return OMPI_SUCCESS; /* every peer maps the memory through CUDA IPC */
    }
    status = gpuic_mr_register_device(ctx, module->base, module->size, &module->mr);
    if (status == GPUIC_ERR_UNSUPPORTED) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d is device memory and rank %d is on "
                  "another node, but the UCX this process loaded cannot register device "
                  "memory: run with a CUDA-enabled UCX first on LD_LIBRARY_PATH (README: GPU "
                  "windows across nodes)", ompi_comm_rank(module->comm), module->id, i);
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_gpu_export(ompi_osc_gpuic_module_t *module, gpuic_cuda_ipc_t *ipc)
{
    memset(ipc, 0, sizeof(*ipc));
    if (!module->gpu || module->size == 0) {
        return OMPI_SUCCESS;
    }
    return gpuic_cuda_ipc_export(module->base, ipc) == GPUIC_OK ? OMPI_SUCCESS : MPI_ERR_WIN;
}

int ompi_osc_gpuic_gpu_peer_setup(ompi_osc_gpuic_module_t *module, int rank,
                                  const gpuic_cuda_ipc_t *ipc)
{
    ompi_osc_gpuic_peer_t *peer = &module->peers[rank];
    void *ptr = NULL;

    peer->win.gpu = 1;
    peer->ipc = *ipc;
    if (peer->win.size == 0) {
        return OMPI_SUCCESS;
    }
    if (rank == ompi_comm_rank(module->comm)) {
        peer->win.direct = module->base;
        return OMPI_SUCCESS;
    }
    if (!ompi_osc_gpuic_peer_on_node(module, rank)) {
        /* UCX with the key the peer registered (ompi_osc_gpuic_gpu_register) */
        return peer->win.rkey != NULL ? OMPI_SUCCESS : MPI_ERR_WIN;
    }
    if (gpuic_cuda_ipc_import(ipc, &ptr) != GPUIC_OK) {
        return MPI_ERR_WIN;
    }
    peer->win.direct = ptr;
    peer->ipc_mapped = true;
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_gpu_cleanup(ompi_osc_gpuic_module_t *module)
{
    int i, n = module->comm != NULL ? ompi_comm_size(module->comm) : 0;

    /* first: the proxy may still be copying through the peers' mappings */
    ompi_osc_gpuic_devqueue_release(module);
    free(module->dev_paths);
    module->dev_paths = NULL;

    ompi_osc_gpuic_agent_release(module);
    if (module->gpu_stream != NULL) {
        /* the stream's work ends before the mappings it uses go */
        (void)gpuic_cuda_stream_synchronize(module->gpu_stream);
        gpuic_cuda_stream_destroy(module->gpu_stream);
        module->gpu_stream = NULL;
    }
    gpuic_cuda_host_free(module->gpu_stage);
    module->gpu_stage = NULL;
    module->gpu_stage_len = 0;

    for (i = 0; module->peers != NULL && i < n; ++i) {
        if (module->peers[i].ipc_mapped) {
            gpuic_cuda_ipc_release(&module->peers[i].ipc, module->peers[i].win.direct);
            module->peers[i].ipc_mapped = false;
        }
    }
    if (module->dev_handle != NULL) {
        gpuic_cuda_mem_free(module->dev_handle);
        module->dev_handle = NULL;
    }
    if (module->dev_error != NULL) {
        gpuic_cuda_host_unregister(module->dev_error);
        free(module->dev_error);
        module->dev_error = NULL;
    }
    if (module->gpu_owned) {
        /* UCX lets go of the memory before the driver frees it */
        gpuic_mr_deregister(module->mr);
        module->mr = NULL;
        gpuic_cuda_mem_free(module->base);
        module->base = NULL;
        module->gpu_owned = false;
    }
}

int ompi_osc_gpuic_gpu_stream(ompi_osc_gpuic_module_t *module, void **stream_p)
{
    void *stream = module->gpu_stream;

    if (stream == NULL) {
        if (gpuic_cuda_stream_create(&stream, true) != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot create a CUDA stream for the "
                      "window's device work", ompi_comm_rank(module->comm), module->id);
            return MPI_ERR_OTHER;
        }
        /* published whole: ompi_osc_gpuic_gpu_copy and the drain read it without the lock */
        __atomic_store_n(&module->gpu_stream, stream, __ATOMIC_RELEASE);
    }
    *stream_p = stream;
    return OMPI_SUCCESS;
}

/* Copies of at least this many bytes between two buffers of this GPU go to the bulk copy
 * kernel (a launch costs about what a driver copy call does; below this the copy is short
 * either way). */
#define OMPI_OSC_GPUIC_GPU_BULK_MIN (256 * 1024)

/* Queues @p len bytes from @p src to @p dst, both device memory of this GPU, as a bulk copy
 * kernel on @p stream; false when the kernel image is not there (the driver copies then). */
static bool ompi_osc_gpuic_gpu_copy_bulk(void *dst, const void *src, size_t len, void *stream,
                                         int *rc_p)
{
#ifdef OMPI_OSC_GPUIC_HAVE_STREAM
    mpix_gpuic_stream_copy_args_t a;
    size_t grid = (len + 16383) / 16384;

    a.dst = (uint64_t)(uintptr_t)dst;
    a.src = (uint64_t)(uintptr_t)src;
    a.bytes = len;
    a.flags = 0;
    a.reserved = 0;
    *rc_p = ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_COPY_BULK,
                                         (unsigned)(grid > 1024 ? 1024 : grid), 256, stream, &a);
    return *rc_p != MPI_ERR_UNSUPPORTED_OPERATION;
#else
    (void)dst, (void)src, (void)len, (void)stream, (void)rc_p;
    return false;
#endif
}

int ompi_osc_gpuic_gpu_copy(ompi_osc_gpuic_module_t *module, void *dst, const void *src,
                            size_t len)
{
    void *stream = __atomic_load_n(&module->gpu_stream, __ATOMIC_ACQUIRE);
    gpuic_status_t status;
    int rc;

    if (stream == NULL) {
        opal_mutex_lock(&module->gpu_lock);
        rc = ompi_osc_gpuic_gpu_stream(module, &stream);
        opal_mutex_unlock(&module->gpu_lock);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    if (len >= OMPI_OSC_GPUIC_GPU_BULK_MIN && gpuic_cuda_ptr_on_current_device(dst) &&
        gpuic_cuda_ptr_on_current_device(src) &&
        ompi_osc_gpuic_gpu_copy_bulk(dst, src, len, stream, &rc)) {
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    } else {
        status = gpuic_cuda_memcpy_async(dst, src, len, stream);
        if (status != GPUIC_OK) {
            return ompi_osc_gpuic_error(status);
        }
    }
    /* Counted after it is queued: a drain that sees the count synchronizes after the copy. */
    ompi_osc_gpuic_gpu_count_queued(module);
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_gpu_sync(ompi_osc_gpuic_module_t *module)
{
    uint64_t queued = __atomic_load_n(&module->gpu_queued, __ATOMIC_ACQUIRE);
    void *stream = __atomic_load_n(&module->gpu_stream, __ATOMIC_ACQUIRE);
    gpuic_status_t status;

    if (stream == NULL) {
        return OMPI_SUCCESS; /* nothing was ever queued */
    }
    status = gpuic_cuda_stream_synchronize(stream);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: device copies of host RMA calls failed",
                  ompi_comm_rank(module->comm), module->id);
        return ompi_osc_gpuic_error(status);
    }
    ompi_osc_gpuic_counter_raise(&module->gpu_synced, queued);
    return OMPI_SUCCESS;
}

bool ompi_osc_gpuic_gpu_done(ompi_osc_gpuic_module_t *module, uint64_t ticket, int *rc_p)
{
    uint64_t queued;
    gpuic_status_t status;

    *rc_p = OMPI_SUCCESS;
    if (__atomic_load_n(&module->gpu_synced, __ATOMIC_ACQUIRE) >= ticket) {
        return true;
    }
    /* What was queued before the query is done when the stream is idle. */
    queued = __atomic_load_n(&module->gpu_queued, __ATOMIC_ACQUIRE);
    status = gpuic_cuda_stream_query(__atomic_load_n(&module->gpu_stream, __ATOMIC_ACQUIRE));
    if (status == GPUIC_INPROGRESS) {
        return false;
    }
    if (status != GPUIC_OK) {
        *rc_p = ompi_osc_gpuic_error(status);
        return true;
    }
    ompi_osc_gpuic_counter_raise(&module->gpu_synced, queued);
    return true;
}

int ompi_osc_gpuic_gpu_stage(ompi_osc_gpuic_module_t *module, size_t len, char **stage_p)
{
    size_t want = module->gpu_stage_len > 0 ? module->gpu_stage_len : 64 * 1024;
    void *p = NULL;

    if (len > module->gpu_stage_len) {
        while (want < len) {
            want *= 2;
        }
        /* the old buffer may still be read by queued work */
        if (module->gpu_stream != NULL) {
            (void)gpuic_cuda_stream_synchronize(module->gpu_stream);
        }
        if (gpuic_cuda_host_alloc(want, &p) != GPUIC_OK) {
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot allocate %zu bytes of pinned "
                      "host memory for device work", ompi_comm_rank(module->comm), module->id,
                      want);
            return MPI_ERR_NO_MEM;
        }
        gpuic_cuda_host_free(module->gpu_stage);
        module->gpu_stage = p;
        module->gpu_stage_len = want;
    }
    *stage_p = module->gpu_stage;
    return OMPI_SUCCESS;
}

bool ompi_osc_gpuic_gpu_all_same(ompi_osc_gpuic_module_t *module)
{
    int i, n = ompi_comm_size(module->comm);

    if (module->gpu_same < 0) {
        module->gpu_same = 1;
        for (i = 0; i < n; ++i) {
            const ompi_osc_gpuic_peer_t *peer = &module->peers[i];

            if (peer->win.size > 0 &&
                (!peer->win.gpu || peer->win.direct == NULL ||
                 !gpuic_cuda_ptr_on_current_device(peer->win.direct))) {
                module->gpu_same = 0;
            }
        }
    }
    return module->gpu_same == 1;
}

int ompi_osc_gpuic_device_error(ompi_osc_gpuic_module_t *module)
{
    uint32_t cls;

    if (module->dev_error == NULL) {
        return OMPI_SUCCESS;
    }
    /* Written by device code through the mapping; taken once, so the next call is clean. */
    cls = __atomic_exchange_n(module->dev_error, 0, __ATOMIC_ACQ_REL);
    if (cls == MPI_ERR_OTHER && !ompi_osc_gpuic_devqueue_failed(module)) {
        /* what device waits for the proxy record when they time out (or, handled above,
         * when the proxy marked their entries failed) */
        ompi_osc_gpuic_devqueue_report(module);
    }
    if (cls == 0) {
        /* transfers the proxy could not complete (logged by the proxy where they failed) */
        cls = (uint32_t)ompi_osc_gpuic_devqueue_quiesce(module);
    }
    if (cls != 0) {
        ompi_osc_gpuic_count(&mca_osc_gpuic_component.counters.device_errors, 1);
        gpuic_log(GPUIC_LOG_DEBUG, "rank %d: a device call on window %d failed with class %u",
                  ompi_osc_gpuic_rank(module), module->id, cls);
    }
    return (int)cls;
}

/* Builds the device handle: the window's description in device memory (ext entry point). */
int ompi_osc_gpuic_device_handle(void *m, void **handle_p)
{
    ompi_osc_gpuic_module_t *module = m;
    int n = ompi_comm_size(module->comm), i;
    size_t len = sizeof(MPIX_Gpuic_device_win) + (size_t)n * sizeof(MPIX_Gpuic_device_peer);
    MPIX_Gpuic_device_win *host;
    void *error_dev = NULL;
    bool all_same_gpu = true;
    int rc = OMPI_SUCCESS;

    if (module->dev_handle != NULL) {
        *handle_p = module->dev_handle;
        return OMPI_SUCCESS;
    }
    if (gpuic_cuda_init() != GPUIC_OK) {
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    host = calloc(1, len);
    if (host == NULL) {
        return MPI_ERR_NO_MEM;
    }
    if (module->dev_error == NULL) {
        /* a page of its own: CUDA registers whole pages, and a page registered twice fails;
         * kept until the window is freed (a released handle's kernels may have written it) */
        module->dev_error = ompi_osc_gpuic_pages_alloc(64);
        if (module->dev_error == NULL) {
            free(host);
            return MPI_ERR_NO_MEM;
        }
        if (gpuic_cuda_host_register(module->dev_error, 64, &module->dev_error_dev) !=
            GPUIC_OK) {
            free(host);
            free(module->dev_error);
            module->dev_error = NULL;
            return MPI_ERR_OTHER;
        }
    }
    error_dev = module->dev_error_dev;
    host->magic = MPIX_GPUIC_DEVICE_MAGIC;
    host->rank = ompi_comm_rank(module->comm);
    host->nranks = n;
    host->error_word = error_dev;
    for (i = 0; i < n; ++i) {
        const ompi_osc_gpuic_peer_t *peer = &module->peers[i];

        host->peers[i].size = peer->win.size;
        host->peers[i].disp_unit = peer->disp_unit;
        /* Device code can use a mapping of device memory, or of our own host memory only if
         * it were registered, which it is not: GPU windows only. */
        if (peer->win.gpu && peer->win.direct != NULL) {
            host->peers[i].base = (uint64_t)(uintptr_t)peer->win.direct;
            host->peers[i].path = MPIX_GPUIC_DEVICE_PATH_P2P;
            if (gpuic_cuda_ptr_on_current_device(peer->win.direct)) {
                host->peers[i].flags |= MPIX_GPUIC_DEVICE_PEER_SAME_GPU;
            } else {
                all_same_gpu = false;
            }
        } else {
            host->peers[i].path = MPIX_GPUIC_DEVICE_PATH_NONE;
        }
    }
    host->flags = all_same_gpu ? MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU : 0;
    rc = ompi_osc_gpuic_devqueue_setup(module, host);
    if (rc != OMPI_SUCCESS) {
        free(host);
        return rc;
    }
    module->dev_paths = malloc((size_t)n * sizeof(int));
    if (module->dev_paths == NULL) {
        ompi_osc_gpuic_devqueue_release(module);
        free(host);
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < n; ++i) {
        module->dev_paths[i] = host->peers[i].path;
    }
    if (gpuic_cuda_mem_alloc(len, &module->dev_handle) != GPUIC_OK ||
        gpuic_cuda_memcpy(module->dev_handle, host, len) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot allocate the device handle "
                  "(%zu bytes of device memory): free device memory",
                  ompi_comm_rank(module->comm), module->id, len);
        gpuic_cuda_mem_free(module->dev_handle);
        module->dev_handle = NULL;
        rc = MPI_ERR_NO_MEM;
    } else {
        module->dev_value = gpuic_dev_handle_of(module->dev_handle, host);
    }
    free(host);
    *handle_p = module->dev_handle;
    return rc;
}

int ompi_osc_gpuic_device_handle_get(void *m, MPIX_Win_device *handle)
{
    ompi_osc_gpuic_module_t *module = m;
    void *desc = NULL;
    int rc = ompi_osc_gpuic_device_handle(module, &desc);

    if (rc == OMPI_SUCCESS) {
        *handle = module->dev_value;
    }
    return rc;
}

int ompi_osc_gpuic_bounce_in(ompi_osc_gpuic_bounce_t *b, void *buf, int count,
                             struct ompi_datatype_t *dt)
{
    ptrdiff_t lo, hi;

    b->user = buf;
    b->host = NULL;
    b->buf = buf;
    if (buf == NULL || count == 0 || !gpuic_cuda_available() || !gpuic_cuda_is_device_ptr(buf)) {
        return OMPI_SUCCESS;
    }
    ompi_osc_gpuic_dt_bounds(dt, count, &lo, &hi);
    b->lo = lo;
    b->span = (size_t)(hi - lo);
    b->host = malloc(b->span > 0 ? b->span : 1);
    if (b->host == NULL) {
        return MPI_ERR_NO_MEM;
    }
    /* Copied in for results too: the gaps of a non-contiguous layout must go back as they
     * were. */
    if (gpuic_cuda_memcpy(b->host, (char *)buf + lo, b->span) != GPUIC_OK) {
        free(b->host);
        b->host = NULL;
        return MPI_ERR_OTHER;
    }
    b->buf = b->host - lo;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_bounce_out(ompi_osc_gpuic_bounce_t *b, bool copy_out)
{
    int rc = OMPI_SUCCESS;

    if (b->host == NULL) {
        return OMPI_SUCCESS;
    }
    if (copy_out && gpuic_cuda_memcpy((char *)b->user + b->lo, b->host, b->span) != GPUIC_OK) {
        rc = MPI_ERR_OTHER;
    }
    free(b->host);
    b->host = NULL;
    return rc;
}

int ompi_osc_gpuic_device_handle_release(void *m)
{
    ompi_osc_gpuic_module_t *module = m;

    if (module->dev_handle == NULL) {
        return MPI_ERR_ARG; /* nothing was handed out */
    }
    ompi_osc_gpuic_devqueue_release(module);
    gpuic_cuda_mem_free(module->dev_handle);
    module->dev_handle = NULL;
    memset(&module->dev_value, 0, sizeof(module->dev_value));
    free(module->dev_paths);
    module->dev_paths = NULL;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_device_path(void *m, int rank, int *path)
{
    ompi_osc_gpuic_module_t *module = m;

    if (rank < 0 || rank >= ompi_comm_size(module->comm)) {
        return MPI_ERR_RANK;
    }
    if (module->dev_paths == NULL) {
        return MPI_ERR_ARG;
    }
    *path = module->dev_paths[rank];
    return MPI_SUCCESS;
}
