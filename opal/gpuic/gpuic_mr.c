#include "gpuic_ucx_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpuic_log.h"

/* Maps a region; @p device names CUDA memory (UCX is told rather than left to detect it). */
static gpuic_status_t gpuic_mr_map(gpuic_context_t *ctx, void *addr, size_t len, int allocate,
                                   int device, gpuic_mr_t **mr_p)
{
    ucp_mem_map_params_t params = {0};
    ucp_mem_attr_t attr = {0};
    gpuic_mr_t *mr;
    ucs_status_t st;

    if (len == 0 || (!allocate && addr == NULL)) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = allocate ? NULL : addr;
    params.length = len;
    params.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
    if (device) {
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        params.memory_type = UCS_MEMORY_TYPE_CUDA;
    }
    st = ucp_mem_map(ctx->context, &params, &mr->memh);
    if (st != UCS_OK) {
        /* out of memory is the caller's to report (it knows what the memory was for) */
        gpuic_log(st == UCS_ERR_NO_MEMORY ? GPUIC_LOG_DEBUG : GPUIC_LOG_ERROR,
                  "ucp_mem_map of %zu bytes failed: %s", len, ucs_status_string(st));
        free(mr);
        return gpuic_status_from_ucs(st);
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    st = ucp_mem_query(mr->memh, &attr);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_mem_query failed: %s", ucs_status_string(st));
        ucp_mem_unmap(ctx->context, mr->memh);
        free(mr);
        return gpuic_status_from_ucs(st);
    }
    mr->ctx = ctx;
    mr->addr = attr.address;
    mr->len = len;
    mr->allocated = allocate;
    *mr_p = mr;
    return GPUIC_OK;
}

gpuic_status_t gpuic_mr_register(gpuic_context_t *ctx, void *addr, size_t len, gpuic_mr_t **mr_p)
{
    return gpuic_mr_map(ctx, addr, len, 0, 0, mr_p);
}

gpuic_status_t gpuic_mr_register_device(gpuic_context_t *ctx, void *addr, size_t len,
                                        gpuic_mr_t **mr_p)
{
    if (!gpuic_context_reaches_device_memory(ctx)) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    return gpuic_mr_map(ctx, addr, len, 0, 1, mr_p);
}

/* MemAvailable of /proc/meminfo in bytes; SIZE_MAX where it cannot be read. */
static size_t gpuic_mr_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[128];
    size_t avail = (size_t)-1;

    if (f == NULL) {
        return avail;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            avail = kb > (size_t)-1 / 1024 ? (size_t)-1 : (size_t)kb * 1024;
            break;
        }
    }
    fclose(f);
    return avail;
}

gpuic_status_t gpuic_mr_allocate(gpuic_context_t *ctx, size_t len, gpuic_mr_t **mr_p)
{
    size_t avail = gpuic_mr_mem_available();

    /* UCX backs an allocated region with shared memory (SysV or POSIX) so that same-node
     * peers can map it, and reserves all of it at once: a region larger than what the node
     * has left fills memory until the kernel kills a process, instead of failing.  Such a
     * request is refused before UCX sees it.  Several requests that fit one by one can still
     * add up past the limit; this catches the ones that cannot fit at all. */
    if (len > avail) {
        gpuic_log(GPUIC_LOG_DEBUG, "%zu bytes asked for, %zu available on this node", len,
                  avail);
        return GPUIC_ERR_NO_MEMORY;
    }
    return gpuic_mr_map(ctx, NULL, len, 1, 0, mr_p);
}

void gpuic_mr_deregister(gpuic_mr_t *mr)
{
    if (mr == NULL) {
        return;
    }
    ucp_mem_unmap(mr->ctx->context, mr->memh);
    free(mr);
}

void *gpuic_mr_address(const gpuic_mr_t *mr)
{
    return mr->addr;
}

gpuic_status_t gpuic_mr_pack(const gpuic_mr_t *mr, void **blob_p, size_t *len_p)
{
    ucs_status_t st = ucp_rkey_pack(mr->ctx->context, mr->memh, blob_p, len_p);

    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_rkey_pack failed: %s", ucs_status_string(st));
    }
    return gpuic_status_from_ucs(st);
}

void gpuic_mr_blob_release(void *blob)
{
    ucp_rkey_buffer_release(blob);
}

gpuic_status_t gpuic_rkey_unpack(gpuic_ep_t *ep, const void *blob, gpuic_rkey_t **rkey_p)
{
    gpuic_rkey_t *rkey;
    ucs_status_t st;

    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    st = ucp_ep_rkey_unpack(ep->ep, blob, &rkey->rkey);
    if (st != UCS_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "ucp_ep_rkey_unpack failed: %s", ucs_status_string(st));
        free(rkey);
        return gpuic_status_from_ucs(st);
    }
    *rkey_p = rkey;
    return GPUIC_OK;
}

void gpuic_rkey_destroy(gpuic_rkey_t *rkey)
{
    if (rkey == NULL) {
        return;
    }
    ucp_rkey_destroy(rkey->rkey);
    free(rkey);
}

gpuic_status_t gpuic_rkey_ptr(const gpuic_rkey_t *rkey, uint64_t raddr, void **ptr_p)
{
    ucs_status_t st = ucp_rkey_ptr(rkey->rkey, raddr, ptr_p);

    return st == UCS_OK ? GPUIC_OK : GPUIC_ERR_UNSUPPORTED;
}
