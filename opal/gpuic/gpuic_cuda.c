/*
 * The CUDA driver API through dlopen/dlsym: no link-time dependency on libcuda.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include "gpuic_cuda.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "gpuic_log.h"
#include "gpuic_build_config.h"

int gpuic_cuda_device_pick(int requested, int local_rank, int count)
{
    if (count < 1 || requested < -1 || requested >= count) {
        return -1;
    }
    if (requested >= 0) {
        return requested;
    }
    return local_rank < 0 ? 0 : local_rank % count;
}

/* How gpuic_cuda_ensure_context() picks a device when nothing is current; written once before
 * the driver is used, read under the driver's first use. */
static int gpuic_cuda_pref_requested = 0;
static int gpuic_cuda_pref_local_rank = 0;

void gpuic_cuda_device_prefer(int requested, int local_rank)
{
    __atomic_store_n(&gpuic_cuda_pref_requested, requested, __ATOMIC_RELAXED);
    __atomic_store_n(&gpuic_cuda_pref_local_rank, local_rank, __ATOMIC_RELEASE);
}

#ifdef GPUIC_HAVE_CUDA
#include <cuda.h>

/* Entry points, resolved by their versioned names (cuda.h maps the plain names to them). */
typedef struct gpuic_cuda_api {
    CUresult (*init)(unsigned int);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_count)(int *);
    CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_synchronize)(void);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*pointer_get_attribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*pointer_get_attributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
    CUresult (*pointer_set_attribute)(const void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*stream_query)(CUstream);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*memcpy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*stream_create)(CUstream *, unsigned int);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned int);
    CUresult (*mem_free_host)(void *);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ipc_get_mem_handle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*ipc_open_mem_handle)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close_mem_handle)(CUdeviceptr);
    CUresult (*mem_host_register)(void *, size_t, unsigned int);
    CUresult (*mem_host_unregister)(void *);
    CUresult (*mem_host_get_device_pointer)(CUdeviceptr *, void *, unsigned int);
    CUresult (*get_error_string)(CUresult, const char **);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int, CUstream, void **,
                              void **);
    CUresult (*thread_exchange_capture_mode)(CUstreamCaptureMode *);
    CUresult (*func_get_attribute)(int *, CUfunction_attribute, CUfunction);
#if CUDA_VERSION >= 12000
    /* Optional (drivers of CUDA 12.0 and newer): NULL when absent, and launches go through
     * launch_kernel without attributes. */
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    /* Optional: NULL when absent (the driver then loads every kernel with its module). */
    CUresult (*module_get_loading_mode)(CUmoduleLoadingMode *);
    CUresult (*func_load)(CUfunction); /* optional: loads a fetched function now */
#endif
} gpuic_cuda_api_t;

static gpuic_cuda_api_t gpuic_cuda;
static void *gpuic_cuda_lib;
static int gpuic_cuda_loaded; /* 1 loaded, -1 failed, 0 not tried */
#if CUDA_VERSION >= 12000
/* Set once the driver refused a launch with the programmatic-dependent-launch attribute: every
 * later launch goes without it (gpuic_cuda_launch). */
static int gpuic_cuda_pdl_refused;
#endif
static pthread_mutex_t gpuic_cuda_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *gpuic_cuda_error(CUresult r)
{
    const char *s = NULL;

    if (gpuic_cuda.get_error_string == NULL || gpuic_cuda.get_error_string(r, &s) != CUDA_SUCCESS ||
        s == NULL) {
        return "unknown CUDA error";
    }
    return s;
}

static gpuic_status_t gpuic_cuda_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS) {
        return GPUIC_OK;
    }
    /* out of memory is the caller's to report (it knows what the memory was for) */
    gpuic_log(r == CUDA_ERROR_OUT_OF_MEMORY ? GPUIC_LOG_DEBUG : GPUIC_LOG_ERROR, "%s failed: %s",
              what, gpuic_cuda_error(r));
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GPUIC_ERR_NO_MEMORY : GPUIC_ERR_NO_DEVICE;
}

static int gpuic_cuda_load(void)
{
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cuInit", (void **)&gpuic_cuda.init},
        {"cuDeviceGet", (void **)&gpuic_cuda.device_get},
        {"cuDeviceGetCount", (void **)&gpuic_cuda.device_get_count},
        {"cuDevicePrimaryCtxRetain", (void **)&gpuic_cuda.primary_ctx_retain},
        {"cuCtxGetCurrent", (void **)&gpuic_cuda.ctx_get_current},
        {"cuCtxSetCurrent", (void **)&gpuic_cuda.ctx_set_current},
        {"cuCtxSynchronize", (void **)&gpuic_cuda.ctx_synchronize},
        {"cuCtxGetDevice", (void **)&gpuic_cuda.ctx_get_device},
        {"cuPointerGetAttribute", (void **)&gpuic_cuda.pointer_get_attribute},
        {"cuPointerGetAttributes", (void **)&gpuic_cuda.pointer_get_attributes},
        {"cuPointerSetAttribute", (void **)&gpuic_cuda.pointer_set_attribute},
        {"cuStreamSynchronize", (void **)&gpuic_cuda.stream_synchronize},
        {"cuStreamQuery", (void **)&gpuic_cuda.stream_query},
        {"cuMemAlloc_v2", (void **)&gpuic_cuda.mem_alloc},
        {"cuMemFree_v2", (void **)&gpuic_cuda.mem_free},
        {"cuMemGetAddressRange_v2", (void **)&gpuic_cuda.mem_get_address_range},
        {"cuMemcpy", (void **)&gpuic_cuda.memcpy},
        {"cuMemcpyAsync", (void **)&gpuic_cuda.memcpy_async},
        {"cuStreamCreate", (void **)&gpuic_cuda.stream_create},
        {"cuStreamDestroy_v2", (void **)&gpuic_cuda.stream_destroy},
        {"cuMemHostAlloc", (void **)&gpuic_cuda.mem_host_alloc},
        {"cuMemFreeHost", (void **)&gpuic_cuda.mem_free_host},
        {"cuMemsetD8_v2", (void **)&gpuic_cuda.memset_d8},
        {"cuIpcGetMemHandle", (void **)&gpuic_cuda.ipc_get_mem_handle},
        {"cuIpcOpenMemHandle_v2", (void **)&gpuic_cuda.ipc_open_mem_handle},
        {"cuIpcCloseMemHandle", (void **)&gpuic_cuda.ipc_close_mem_handle},
        {"cuMemHostRegister_v2", (void **)&gpuic_cuda.mem_host_register},
        {"cuMemHostUnregister", (void **)&gpuic_cuda.mem_host_unregister},
        {"cuMemHostGetDevicePointer_v2", (void **)&gpuic_cuda.mem_host_get_device_pointer},
        {"cuGetErrorString", (void **)&gpuic_cuda.get_error_string},
        {"cuModuleLoadData", (void **)&gpuic_cuda.module_load_data},
        {"cuModuleUnload", (void **)&gpuic_cuda.module_unload},
        {"cuModuleGetFunction", (void **)&gpuic_cuda.module_get_function},
        {"cuLaunchKernel", (void **)&gpuic_cuda.launch_kernel},
        {"cuThreadExchangeStreamCaptureMode", (void **)&gpuic_cuda.thread_exchange_capture_mode},
        {"cuFuncGetAttribute", (void **)&gpuic_cuda.func_get_attribute},
    };
    int count = 0;

    gpuic_cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (gpuic_cuda_lib == NULL) {
        gpuic_log(GPUIC_LOG_INFO, "no CUDA driver (%s): GPU windows unavailable", dlerror());
        return -1;
    }
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); ++i) {
        *syms[i].slot = dlsym(gpuic_cuda_lib, syms[i].name);
        if (*syms[i].slot == NULL) {
            gpuic_log(GPUIC_LOG_WARN, "CUDA driver lacks %s: GPU windows unavailable",
                      syms[i].name);
            dlclose(gpuic_cuda_lib);
            gpuic_cuda_lib = NULL;
            return -1;
        }
    }
#if CUDA_VERSION >= 12000
    *(void **)&gpuic_cuda.launch_kernel_ex = dlsym(gpuic_cuda_lib, "cuLaunchKernelEx");
    if (gpuic_cuda.launch_kernel_ex == NULL) {
        gpuic_log(GPUIC_LOG_DEBUG, "CUDA driver lacks cuLaunchKernelEx: kernels are launched "
                  "without programmatic dependent launch");
    }
    *(void **)&gpuic_cuda.module_get_loading_mode = dlsym(gpuic_cuda_lib,
                                                          "cuModuleGetLoadingMode");
    *(void **)&gpuic_cuda.func_load = dlsym(gpuic_cuda_lib, "cuFuncLoad");
#endif
    if (gpuic_cuda.init(0) != CUDA_SUCCESS || gpuic_cuda.device_get_count(&count) != CUDA_SUCCESS ||
        count == 0) {
        gpuic_log(GPUIC_LOG_INFO, "CUDA driver present but no usable device");
        return -1;
    }
    return 1;
}

/* The context the process works in: the first one found current (the program's, e.g. after
 * cudaSetDevice), so that threads of libgpuic's own (the proxy) use the same device. */
static CUcontext gpuic_cuda_home_ctx;

/* A current context for this thread: the caller's; else the process's (for threads that never
 * called CUDA, such as the proxy thread); else the primary context of the device
 * gpuic_cuda_device_prefer() asked for (by default device 0). */
static gpuic_status_t gpuic_cuda_ensure_context(void)
{
    CUcontext ctx = NULL, home = __atomic_load_n(&gpuic_cuda_home_ctx, __ATOMIC_ACQUIRE);
    CUdevice dev;
    int count = 0, ordinal, requested, local_rank;

    if (gpuic_cuda.ctx_get_current(&ctx) == CUDA_SUCCESS && ctx != NULL) {
        if (home == NULL) {
            __atomic_compare_exchange_n(&gpuic_cuda_home_ctx, &home, ctx, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
        }
        return GPUIC_OK;
    }
    if (home != NULL) {
        return gpuic_cuda_check(gpuic_cuda.ctx_set_current(home), "cuCtxSetCurrent");
    }
    local_rank = __atomic_load_n(&gpuic_cuda_pref_local_rank, __ATOMIC_ACQUIRE);
    requested = __atomic_load_n(&gpuic_cuda_pref_requested, __ATOMIC_RELAXED);
    if (gpuic_cuda.device_get_count(&count) != CUDA_SUCCESS) {
        return GPUIC_ERR_NO_DEVICE;
    }
    ordinal = gpuic_cuda_device_pick(requested, local_rank, count);
    if (ordinal < 0) {
        gpuic_log(GPUIC_LOG_ERROR, "device %d asked for, but %d device(s) are visible",
                  requested, count);
        return GPUIC_ERR_NO_DEVICE;
    }
    if (gpuic_cuda.device_get(&dev, ordinal) != CUDA_SUCCESS ||
        gpuic_cuda.primary_ctx_retain(&ctx, dev) != CUDA_SUCCESS) {
        return GPUIC_ERR_NO_DEVICE;
    }
    gpuic_log(GPUIC_LOG_DEBUG, "no CUDA context current: using device %d of %d (node-local "
              "rank %d, requested %d)", ordinal, count, local_rank, requested);
    __atomic_compare_exchange_n(&gpuic_cuda_home_ctx, &home, ctx, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return gpuic_cuda_check(gpuic_cuda.ctx_set_current(ctx), "cuCtxSetCurrent");
}

/* Loads the driver once; no context is made current (that is gpuic_cuda_ensure_context's). */
static gpuic_status_t gpuic_cuda_load_once(void)
{
    pthread_mutex_lock(&gpuic_cuda_lock);
    if (gpuic_cuda_loaded == 0) {
        gpuic_cuda_loaded = gpuic_cuda_load();
    }
    pthread_mutex_unlock(&gpuic_cuda_lock);
    return gpuic_cuda_loaded > 0 ? GPUIC_OK : GPUIC_ERR_NO_DEVICE;
}

gpuic_status_t gpuic_cuda_init(void)
{
    gpuic_status_t status = gpuic_cuda_load_once();

    return status == GPUIC_OK ? gpuic_cuda_ensure_context() : status;
}

gpuic_status_t gpuic_cuda_device_count(int *count_p)
{
    gpuic_status_t status = gpuic_cuda_load_once();

    *count_p = 0;
    if (status != GPUIC_OK) {
        return status;
    }
    return gpuic_cuda_check(gpuic_cuda.device_get_count(count_p), "cuDeviceGetCount");
}

gpuic_status_t gpuic_cuda_device_bind(int ordinal)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    int count = 0;
    gpuic_status_t status;

    /* loading only: gpuic_cuda_init() would make a context current that is then replaced */
    status = gpuic_cuda_load_once();
    if (status != GPUIC_OK) {
        return status;
    }
    status = gpuic_cuda_check(gpuic_cuda.device_get_count(&count), "cuDeviceGetCount");
    if (status != GPUIC_OK) {
        return status;
    }
    if (ordinal < 0 || ordinal >= count) {
        gpuic_log(GPUIC_LOG_ERROR, "cannot bind to device %d: %d device(s) are visible", ordinal,
                  count);
        return GPUIC_ERR_INVALID_PARAM;
    }
    status = gpuic_cuda_check(gpuic_cuda.device_get(&dev, ordinal), "cuDeviceGet");
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.primary_ctx_retain(&ctx, dev),
                                  "cuDevicePrimaryCtxRetain");
    }
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.ctx_set_current(ctx), "cuCtxSetCurrent");
    }
    if (status == GPUIC_OK) {
        /* an explicit binding replaces whatever context was seen first */
        __atomic_store_n(&gpuic_cuda_home_ctx, ctx, __ATOMIC_RELEASE);
    }
    return status;
}

/* dl_iterate_phdr callback: 1 for a loaded object whose file is libcuda.so[.N]. */
static int gpuic_cuda_lib_seen(struct dl_phdr_info *info, size_t size, void *arg)
{
    const char *name = info->dlpi_name, *slash;

    (void)size, (void)arg;
    if (name == NULL) {
        return 0;
    }
    slash = strrchr(name, '/');
    return strncmp(slash != NULL ? slash + 1 : name, "libcuda.so", 10) == 0;
}

gpuic_status_t gpuic_cuda_init_if_loaded(void)
{
    /* a walk of the loaded objects: dlopen(RTLD_NOLOAD) of a library that is not loaded
     * searches the library path, which window creation would pay each time */
    if (__atomic_load_n(&gpuic_cuda_loaded, __ATOMIC_ACQUIRE) == 0 &&
        dl_iterate_phdr(gpuic_cuda_lib_seen, NULL) == 0) {
        return GPUIC_ERR_NO_DEVICE; /* not in use here (yet) */
    }
    return gpuic_cuda_init();
}

int gpuic_cuda_available(void)
{
    return __atomic_load_n(&gpuic_cuda_loaded, __ATOMIC_ACQUIRE) > 0;
}

int gpuic_cuda_is_device_ptr(const void *ptr)
{
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    unsigned int type = 0;
    void *data = &type;

    if (!gpuic_cuda_available() || ptr == NULL) {
        return 0;
    }
    /* The plural call answers "unknown" (type 0) for ordinary host memory instead of failing,
     * so probing host buffers raises no driver error. */
    if (gpuic_cuda.pointer_get_attributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)ptr) !=
        CUDA_SUCCESS) {
        return 0;
    }
    return type == CU_MEMORYTYPE_DEVICE;
}

gpuic_status_t gpuic_cuda_mem_sync_memops(const void *ptr)
{
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    unsigned int on = 0;
    void *data = &on;

    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    if (ptr == NULL ||
        gpuic_cuda.pointer_get_attributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)ptr) !=
            CUDA_SUCCESS) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if (on) {
        return GPUIC_OK;
    }
    /* once per allocation; the driver refuses it for some memory (IPC mappings, allocations
     * of the virtual memory management API): the caller's to handle, so not logged */
    on = 1;
    if (gpuic_cuda_ensure_context() != GPUIC_OK ||
        gpuic_cuda.pointer_set_attribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                         (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) {
        return GPUIC_ERR_UNSUPPORTED;
    }
    return GPUIC_OK;
}

int gpuic_cuda_ptr_on_current_device(const void *ptr)
{
    int ordinal = -1;
    CUdevice dev = -1;

    if (!gpuic_cuda_available() || ptr == NULL ||
        gpuic_cuda.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                         (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
        gpuic_cuda.ctx_get_device(&dev) != CUDA_SUCCESS) {
        return 0;
    }
    return ordinal == (int)dev;
}

gpuic_status_t gpuic_cuda_mem_alloc(size_t len, void **ptr_p)
{
    CUdeviceptr d = 0;
    gpuic_status_t status = gpuic_cuda_init();

    if (status != GPUIC_OK) {
        return status;
    }
    status = gpuic_cuda_check(gpuic_cuda.mem_alloc(&d, len), "cuMemAlloc");
    *ptr_p = (void *)(uintptr_t)d;
    return status;
}

void gpuic_cuda_mem_free(void *ptr)
{
    if (ptr != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda_check(gpuic_cuda.mem_free((CUdeviceptr)(uintptr_t)ptr), "cuMemFree");
    }
}

gpuic_status_t gpuic_cuda_memcpy(void *dst, const void *src, size_t len)
{
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    if (len == 0) {
        return GPUIC_OK;
    }
    if (gpuic_cuda_ensure_context() != GPUIC_OK) { /* called from the proxy thread too */
        return GPUIC_ERR_NO_DEVICE;
    }
    /* Unified addressing: the driver tells host from device by the addresses.  cuMemcpy may
     * return before a copy into device memory has landed (from pageable memory, or device to
     * device), so wait for the default stream: callers release locks and report completion
     * right after. */
    gpuic_status_t status = gpuic_cuda_check(gpuic_cuda.memcpy((CUdeviceptr)(uintptr_t)dst,
                                                               (CUdeviceptr)(uintptr_t)src, len),
                                             "cuMemcpy");
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.stream_synchronize(NULL), "cuStreamSynchronize");
    }
    return status;
}

gpuic_status_t gpuic_cuda_copies_independent(const gpuic_cuda_copy_t *copies, unsigned n)
{
    /* one stream per thread that copies this way (the proxy thread): it lives as long as the
     * thread's context */
    static __thread CUstream stream;
    gpuic_status_t status = GPUIC_OK, sync_status;

    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    if (n == 0) {
        return GPUIC_OK;
    }
    if (gpuic_cuda_ensure_context() != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    if (stream == NULL &&
        gpuic_cuda_check(gpuic_cuda.stream_create(&stream, CU_STREAM_NON_BLOCKING),
                         "cuStreamCreate") != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    /* one stream: each copy starts after the previous one has landed, and one wait covers all */
    for (unsigned i = 0; i < n && status == GPUIC_OK; ++i) {
        if (copies[i].len != 0) {
            status = gpuic_cuda_check(
                gpuic_cuda.memcpy_async((CUdeviceptr)(uintptr_t)copies[i].dst,
                                        (CUdeviceptr)(uintptr_t)copies[i].src, copies[i].len,
                                        stream),
                "cuMemcpyAsync");
        }
    }
    /* also after a failed call: copies already queued must end before their sources go */
    sync_status = gpuic_cuda_check(gpuic_cuda.stream_synchronize(stream), "cuStreamSynchronize");
    return status != GPUIC_OK ? status : sync_status;
}

gpuic_status_t gpuic_cuda_copy_independent(void *dst, const void *src, size_t len)
{
    gpuic_cuda_copy_t copy = {dst, src, len};

    return gpuic_cuda_copies_independent(&copy, len != 0);
}

gpuic_status_t gpuic_cuda_mem_range(const void *ptr, uintptr_t *base_p, size_t *size_p)
{
    CUdeviceptr base = 0;
    size_t size = 0;

    if (!gpuic_cuda_available() || gpuic_cuda_ensure_context() != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    /* not logged: host memory is an expected answer */
    if (gpuic_cuda.mem_get_address_range(&base, &size, (CUdeviceptr)(uintptr_t)ptr) !=
        CUDA_SUCCESS) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    *base_p = (uintptr_t)base;
    *size_p = size;
    return GPUIC_OK;
}

gpuic_status_t gpuic_cuda_memset(void *dptr, int byte, size_t len)
{
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_check(gpuic_cuda.memset_d8((CUdeviceptr)(uintptr_t)dptr,
                                                 (unsigned char)byte, len),
                            "cuMemsetD8");
}

gpuic_status_t gpuic_cuda_ipc_export(const void *ptr, gpuic_cuda_ipc_t *ipc)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUipcMemHandle h;
    gpuic_status_t status;

    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    status = gpuic_cuda_check(gpuic_cuda.mem_get_address_range(&base, &size,
                                                               (CUdeviceptr)(uintptr_t)ptr),
                              "cuMemGetAddressRange");
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.ipc_get_mem_handle(&h, base), "cuIpcGetMemHandle");
    }
    if (status == GPUIC_OK) {
        memcpy(ipc->handle, &h, sizeof(h) < sizeof(ipc->handle) ? sizeof(h) : sizeof(ipc->handle));
        ipc->offset = (uint64_t)((uintptr_t)ptr - (uintptr_t)base);
    }
    return status;
}

gpuic_status_t gpuic_cuda_ipc_import(const gpuic_cuda_ipc_t *ipc, void **ptr_p)
{
    CUipcMemHandle h;
    CUdeviceptr base = 0;
    gpuic_status_t status;

    status = gpuic_cuda_init();
    if (status != GPUIC_OK) {
        return status;
    }
    memcpy(&h, ipc->handle, sizeof(h));
    status = gpuic_cuda_check(gpuic_cuda.ipc_open_mem_handle(&base, h,
                                                             CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                              "cuIpcOpenMemHandle");
    *ptr_p = status == GPUIC_OK ? (void *)(uintptr_t)(base + ipc->offset) : NULL;
    return status;
}

void gpuic_cuda_ipc_release(const gpuic_cuda_ipc_t *ipc, void *ptr)
{
    if (ptr != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda_check(gpuic_cuda.ipc_close_mem_handle(
                                   (CUdeviceptr)((uintptr_t)ptr - ipc->offset)),
                               "cuIpcCloseMemHandle");
    }
}

gpuic_status_t gpuic_cuda_host_register(void *ptr, size_t len, void **dptr_p)
{
    bool registered = false;
    gpuic_status_t status = gpuic_cuda_host_map(ptr, len, dptr_p, &registered);

    if (status == GPUIC_OK && !registered) {
        /* registered by another library: not this caller's to own or undo */
        *dptr_p = NULL;
        return gpuic_cuda_check(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister");
    }
    return status;
}

gpuic_status_t gpuic_cuda_host_map(void *ptr, size_t len, void **dptr_p, bool *registered_p)
{
    CUdeviceptr d = 0;
    gpuic_status_t status = gpuic_cuda_init();
    CUresult r;

    *registered_p = false;
    *dptr_p = NULL;
    if (status != GPUIC_OK) {
        return status;
    }
    r = gpuic_cuda.mem_host_register(ptr, len, CU_MEMHOSTREGISTER_PORTABLE |
                                                   CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
        status = gpuic_cuda_check(r, "cuMemHostRegister");
        *registered_p = status == GPUIC_OK;
    }
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.mem_host_get_device_pointer(&d, ptr, 0),
                                  "cuMemHostGetDevicePointer");
        if (status != GPUIC_OK && *registered_p) {
            gpuic_cuda.mem_host_unregister(ptr);
            *registered_p = false;
        }
    }
    *dptr_p = (void *)(uintptr_t)d;
    return status;
}

void gpuic_cuda_host_unregister(void *ptr)
{
    if (ptr != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda.mem_host_unregister(ptr);
    }
}

gpuic_status_t gpuic_cuda_synchronize(void)
{
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_check(gpuic_cuda.ctx_synchronize(), "cuCtxSynchronize");
}

gpuic_status_t gpuic_cuda_stream_create(void **stream_p, bool after_legacy)
{
    CUstream stream = NULL;
    gpuic_status_t status = gpuic_cuda_init();

    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(
            gpuic_cuda.stream_create(&stream, after_legacy ? CU_STREAM_DEFAULT
                                                           : CU_STREAM_NON_BLOCKING),
            "cuStreamCreate");
    }
    *stream_p = (void *)stream;
    return status;
}

void gpuic_cuda_stream_destroy(void *stream)
{
    if (stream != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda_check(gpuic_cuda.stream_destroy((CUstream)stream), "cuStreamDestroy");
    }
}

gpuic_status_t gpuic_cuda_stream_synchronize(void *stream)
{
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    /* any thread of the program may complete a window's copies, one without a context too */
    if (gpuic_cuda_ensure_context() != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_check(gpuic_cuda.stream_synchronize((CUstream)stream),
                            "cuStreamSynchronize");
}

gpuic_status_t gpuic_cuda_stream_query(void *stream)
{
    CUresult r;

    if (!gpuic_cuda_available() || gpuic_cuda_ensure_context() != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    r = gpuic_cuda.stream_query((CUstream)stream);
    return r == CUDA_ERROR_NOT_READY ? GPUIC_INPROGRESS : gpuic_cuda_check(r, "cuStreamQuery");
}

gpuic_status_t gpuic_cuda_memcpy_async(void *dst, const void *src, size_t len, void *stream)
{
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    if (len == 0) {
        return GPUIC_OK;
    }
    /* a thread of the program that never used CUDA has no context for the stream yet */
    if (gpuic_cuda_ensure_context() != GPUIC_OK) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_check(gpuic_cuda.memcpy_async((CUdeviceptr)(uintptr_t)dst,
                                                    (CUdeviceptr)(uintptr_t)src, len,
                                                    (CUstream)stream),
                            "cuMemcpyAsync");
}

gpuic_status_t gpuic_cuda_host_alloc(size_t len, void **ptr_p)
{
    gpuic_status_t status = gpuic_cuda_init();

    *ptr_p = NULL;
    if (status != GPUIC_OK) {
        return status;
    }
    return gpuic_cuda_check(gpuic_cuda.mem_host_alloc(ptr_p, len,
                                                      CU_MEMHOSTALLOC_PORTABLE |
                                                          CU_MEMHOSTALLOC_DEVICEMAP),
                            "cuMemHostAlloc");
}

void gpuic_cuda_host_free(void *ptr)
{
    if (ptr != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda_check(gpuic_cuda.mem_free_host(ptr), "cuMemFreeHost");
    }
}

gpuic_status_t gpuic_cuda_context_current(void **ctx_p)
{
    CUcontext ctx = NULL;
    gpuic_status_t status = gpuic_cuda_init();

    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.ctx_get_current(&ctx), "cuCtxGetCurrent");
    }
    *ctx_p = ctx;
    return status;
}

int gpuic_cuda_capture_relax(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;

    if (!gpuic_cuda_available() || gpuic_cuda.thread_exchange_capture_mode(&mode) !=
        CUDA_SUCCESS) {
        return -1;
    }
    return (int)mode;
}

void gpuic_cuda_capture_restore(int saved)
{
    CUstreamCaptureMode mode = (CUstreamCaptureMode)saved;

    if (saved >= 0 && gpuic_cuda_available()) {
        (void)gpuic_cuda.thread_exchange_capture_mode(&mode);
    }
}

gpuic_status_t gpuic_cuda_module_load(const void *image, void **module_p)
{
    CUmodule mod = NULL;
    CUresult r;
    int saved;
    gpuic_status_t status = gpuic_cuda_init();

    *module_p = NULL;
    if (status != GPUIC_OK) {
        return status;
    }
    /* Loading is no stream work, but a capture in global mode would refuse it. */
    saved = gpuic_cuda_capture_relax();
    r = gpuic_cuda.module_load_data(&mod, image);
    gpuic_cuda_capture_restore(saved);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX ||
        r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_IMAGE) {
        gpuic_log(GPUIC_LOG_ERROR, "cuModuleLoadData: %s (the embedded kernels do not run on "
                  "this device or driver)", gpuic_cuda_error(r));
        return GPUIC_ERR_UNSUPPORTED;
    }
    status = gpuic_cuda_check(r, "cuModuleLoadData");
    *module_p = status == GPUIC_OK ? (void *)mod : NULL;
    return status;
}

void gpuic_cuda_module_unload(void *module)
{
    if (module != NULL && gpuic_cuda_available()) {
        (void)gpuic_cuda_check(gpuic_cuda.module_unload((CUmodule)module), "cuModuleUnload");
    }
}

int gpuic_cuda_lazy_loading(void)
{
#if CUDA_VERSION >= 12000
    CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;

    return gpuic_cuda_available() && gpuic_cuda.module_get_loading_mode != NULL &&
           gpuic_cuda.module_get_loading_mode(&mode) == CUDA_SUCCESS &&
           mode == CU_MODULE_LAZY_LOADING;
#else
    return 0;
#endif
}

gpuic_status_t gpuic_cuda_module_function(void *module, const char *name, void **fn_p)
{
    CUfunction fn = NULL;
    gpuic_status_t status;

    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    status = gpuic_cuda_check(gpuic_cuda.module_get_function(&fn, (CUmodule)module, name),
                              "cuModuleGetFunction");
#if CUDA_VERSION >= 12000
    /* loaded now, not at its first launch (gpuic_cuda_lazy_loading()) */
    if (status == GPUIC_OK && gpuic_cuda.func_load != NULL) {
        status = gpuic_cuda_check(gpuic_cuda.func_load(fn), "cuFuncLoad");
    }
#endif
    *fn_p = (void *)fn;
    return status;
}

int gpuic_cuda_function_arch(void *fn)
{
    int version = 0;

    if (!gpuic_cuda_available() || fn == NULL ||
        gpuic_cuda.func_get_attribute(&version, CU_FUNC_ATTRIBUTE_PTX_VERSION, (CUfunction)fn) !=
            CUDA_SUCCESS) {
        return 0;
    }
    return version;
}

#if CUDA_VERSION >= 12000
/*
 * Launches @p fn with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.  When the driver
 * refuses the attribute (a driver, device or stream capture that does not support it: CUDA 12.0
 * to 12.2 do not capture it), the kernel is launched once more without it, and so is every
 * later one.  An invalid value counts as a refusal only if the launch without the attribute
 * succeeds (otherwise the fault is the launch's own).  A capture that the refused launch
 * invalidated stays invalidated: the retry reports it, and the next capture goes without.
 */
static gpuic_status_t gpuic_cuda_launch_pdl(CUfunction fn, unsigned grid, unsigned block,
                                            CUstream stream, void **params)
{
    CUlaunchAttribute attr;
    CUlaunchConfig cfg;
    CUresult r, again;

    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = grid;
    cfg.gridDimY = 1;
    cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = 1;
    cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 0;
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    r = gpuic_cuda.launch_kernel_ex(&cfg, fn, params, NULL);
    if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_NOT_PERMITTED &&
        r != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r != CUDA_ERROR_INVALID_VALUE) {
        return gpuic_cuda_check(r, "cuLaunchKernelEx");
    }
    again = gpuic_cuda.launch_kernel(fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
    if (again == CUDA_SUCCESS || r != CUDA_ERROR_INVALID_VALUE) {
        __atomic_store_n(&gpuic_cuda_pdl_refused, 1, __ATOMIC_RELAXED);
        gpuic_log(GPUIC_LOG_INFO, "cuLaunchKernelEx refused programmatic dependent launch (%s): "
                  "kernels are launched without it from now on", gpuic_cuda_error(r));
    }
    return gpuic_cuda_check(again, "cuLaunchKernel");
}
#endif

gpuic_status_t gpuic_cuda_launch(void *fn, unsigned grid, unsigned block, void *stream,
                                 void *args, unsigned flags)
{
    void *params[1] = {args};

    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
#if CUDA_VERSION >= 12000
    if ((flags & GPUIC_CUDA_LAUNCH_PDL) && gpuic_cuda.launch_kernel_ex != NULL &&
        !__atomic_load_n(&gpuic_cuda_pdl_refused, __ATOMIC_RELAXED)) {
        return gpuic_cuda_launch_pdl((CUfunction)fn, grid, block, (CUstream)stream, params);
    }
#else
    (void)flags;
#endif
    return gpuic_cuda_check(gpuic_cuda.launch_kernel((CUfunction)fn, grid, 1, 1, block, 1, 1, 0,
                                                     (CUstream)stream, params, NULL),
                            "cuLaunchKernel");
}

gpuic_status_t gpuic_cuda_device_address(const void *ptr, void **dptr_p)
{
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    unsigned int type = 0, managed = 0;
    CUdeviceptr d = 0;
    void *data[3] = {&type, &managed, &d};

    *dptr_p = NULL;
    if (!gpuic_cuda_available()) {
        return GPUIC_ERR_NO_DEVICE;
    }
    /* Unknown memory (type 0) is pageable host memory, which a kernel cannot reach here. */
    if (ptr == NULL ||
        gpuic_cuda.pointer_get_attributes(3, attrs, data, (CUdeviceptr)(uintptr_t)ptr) !=
            CUDA_SUCCESS ||
        type == 0) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if (type == CU_MEMORYTYPE_DEVICE || managed) {
        *dptr_p = (void *)ptr;
        return GPUIC_OK;
    }
    /* Pinned host memory: the device pointer of the mapping (equal to ptr under unified
     * addressing for cudaHostAlloc memory, not always for registered memory). */
    if (d == 0) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    *dptr_p = (void *)(uintptr_t)d;
    return GPUIC_OK;
}

#else /* !GPUIC_HAVE_CUDA: built without cuda.h, every call reports no device */

gpuic_status_t gpuic_cuda_init(void) { return GPUIC_ERR_NO_DEVICE; }
gpuic_status_t gpuic_cuda_init_if_loaded(void) { return GPUIC_ERR_NO_DEVICE; }
int gpuic_cuda_available(void) { return 0; }
gpuic_status_t gpuic_cuda_mem_sync_memops(const void *ptr)
{
    (void)ptr;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_device_count(int *count_p)
{
    *count_p = 0;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_device_bind(int ordinal) { (void)ordinal; return GPUIC_ERR_NO_DEVICE; }
int gpuic_cuda_is_device_ptr(const void *ptr) { (void)ptr; return 0; }
gpuic_status_t gpuic_cuda_mem_alloc(size_t len, void **ptr_p)
{
    (void)len;
    *ptr_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_mem_free(void *ptr) { (void)ptr; }
int gpuic_cuda_ptr_on_current_device(const void *ptr) { (void)ptr; return 0; }
gpuic_status_t gpuic_cuda_memcpy(void *dst, const void *src, size_t len)
{
    (void)dst; (void)src; (void)len;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_copy_independent(void *dst, const void *src, size_t len)
{
    (void)dst; (void)src; (void)len;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_copies_independent(const gpuic_cuda_copy_t *copies, unsigned n)
{
    (void)copies; (void)n;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_mem_range(const void *ptr, uintptr_t *base_p, size_t *size_p)
{
    (void)ptr; (void)base_p; (void)size_p;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_memset(void *dptr, int byte, size_t len)
{
    (void)dptr; (void)byte; (void)len;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_ipc_export(const void *ptr, gpuic_cuda_ipc_t *ipc)
{
    (void)ptr; (void)ipc;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_ipc_import(const gpuic_cuda_ipc_t *ipc, void **ptr_p)
{
    (void)ipc;
    *ptr_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_ipc_release(const gpuic_cuda_ipc_t *ipc, void *ptr) { (void)ipc; (void)ptr; }
gpuic_status_t gpuic_cuda_host_register(void *ptr, size_t len, void **dptr_p)
{
    (void)ptr; (void)len;
    *dptr_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_host_map(void *ptr, size_t len, void **dptr_p, bool *registered_p)
{
    (void)ptr; (void)len;
    *dptr_p = NULL;
    *registered_p = false;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_host_unregister(void *ptr) { (void)ptr; }
gpuic_status_t gpuic_cuda_synchronize(void) { return GPUIC_ERR_NO_DEVICE; }
gpuic_status_t gpuic_cuda_stream_create(void **stream_p, bool after_legacy)
{
    (void)after_legacy;
    *stream_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_stream_destroy(void *stream) { (void)stream; }
gpuic_status_t gpuic_cuda_stream_synchronize(void *stream)
{
    (void)stream;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_stream_query(void *stream)
{
    (void)stream;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_memcpy_async(void *dst, const void *src, size_t len, void *stream)
{
    (void)dst, (void)src, (void)len, (void)stream;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_host_alloc(size_t len, void **ptr_p)
{
    (void)len;
    *ptr_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_host_free(void *ptr) { (void)ptr; }
gpuic_status_t gpuic_cuda_context_current(void **ctx_p)
{
    *ctx_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_module_load(const void *image, void **module_p)
{
    (void)image;
    *module_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
void gpuic_cuda_module_unload(void *module) { (void)module; }
int gpuic_cuda_capture_relax(void) { return -1; }
void gpuic_cuda_capture_restore(int saved) { (void)saved; }
gpuic_status_t gpuic_cuda_module_function(void *module, const char *name, void **fn_p)
{
    (void)module; (void)name;
    *fn_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}
int gpuic_cuda_function_arch(void *fn) { (void)fn; return 0; }
int gpuic_cuda_lazy_loading(void) { return 0; }
gpuic_status_t gpuic_cuda_launch(void *fn, unsigned grid, unsigned block, void *stream,
                                 void *args, unsigned flags)
{
    (void)fn; (void)grid; (void)block; (void)stream; (void)args; (void)flags;
    return GPUIC_ERR_NO_DEVICE;
}
gpuic_status_t gpuic_cuda_device_address(const void *ptr, void **dptr_p)
{
    (void)ptr;
    *dptr_p = NULL;
    return GPUIC_ERR_NO_DEVICE;
}

#endif /* GPUIC_HAVE_CUDA */
