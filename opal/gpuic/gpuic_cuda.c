/*
 * The CUDA driver API through dlopen/dlsym: no link-time dependency on libcuda.
 */
#include "gpuic_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "gpuic_log.h"
#include "gpuic_build_config.h"

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
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ipc_get_mem_handle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*ipc_open_mem_handle)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close_mem_handle)(CUdeviceptr);
    CUresult (*mem_host_register)(void *, size_t, unsigned int);
    CUresult (*mem_host_unregister)(void *);
    CUresult (*mem_host_get_device_pointer)(CUdeviceptr *, void *, unsigned int);
    CUresult (*get_error_string)(CUresult, const char **);
} gpuic_cuda_api_t;

static gpuic_cuda_api_t gpuic_cuda;
static void *gpuic_cuda_lib;
static int gpuic_cuda_loaded; /* 1 loaded, -1 failed, 0 not tried */
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
        {"cuStreamSynchronize", (void **)&gpuic_cuda.stream_synchronize},
        {"cuMemAlloc_v2", (void **)&gpuic_cuda.mem_alloc},
        {"cuMemFree_v2", (void **)&gpuic_cuda.mem_free},
        {"cuMemGetAddressRange_v2", (void **)&gpuic_cuda.mem_get_address_range},
        {"cuMemcpy", (void **)&gpuic_cuda.memcpy},
        {"cuMemsetD8_v2", (void **)&gpuic_cuda.memset_d8},
        {"cuIpcGetMemHandle", (void **)&gpuic_cuda.ipc_get_mem_handle},
        {"cuIpcOpenMemHandle_v2", (void **)&gpuic_cuda.ipc_open_mem_handle},
        {"cuIpcCloseMemHandle", (void **)&gpuic_cuda.ipc_close_mem_handle},
        {"cuMemHostRegister_v2", (void **)&gpuic_cuda.mem_host_register},
        {"cuMemHostUnregister", (void **)&gpuic_cuda.mem_host_unregister},
        {"cuMemHostGetDevicePointer_v2", (void **)&gpuic_cuda.mem_host_get_device_pointer},
        {"cuGetErrorString", (void **)&gpuic_cuda.get_error_string},
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
    if (gpuic_cuda.init(0) != CUDA_SUCCESS || gpuic_cuda.device_get_count(&count) != CUDA_SUCCESS ||
        count == 0) {
        gpuic_log(GPUIC_LOG_INFO, "CUDA driver present but no usable device");
        return -1;
    }
    return 1;
}

/* A current context for this thread: the caller's, else the device's primary context. */
static gpuic_status_t gpuic_cuda_ensure_context(void)
{
    CUcontext ctx = NULL;
    CUdevice dev;

    if (gpuic_cuda.ctx_get_current(&ctx) == CUDA_SUCCESS && ctx != NULL) {
        return GPUIC_OK;
    }
    if (gpuic_cuda.device_get(&dev, 0) != CUDA_SUCCESS ||
        gpuic_cuda.primary_ctx_retain(&ctx, dev) != CUDA_SUCCESS) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_check(gpuic_cuda.ctx_set_current(ctx), "cuCtxSetCurrent");
}

gpuic_status_t gpuic_cuda_init(void)
{
    pthread_mutex_lock(&gpuic_cuda_lock);
    if (gpuic_cuda_loaded == 0) {
        gpuic_cuda_loaded = gpuic_cuda_load();
    }
    pthread_mutex_unlock(&gpuic_cuda_lock);
    if (gpuic_cuda_loaded < 0) {
        return GPUIC_ERR_NO_DEVICE;
    }
    return gpuic_cuda_ensure_context();
}

gpuic_status_t gpuic_cuda_init_if_loaded(void)
{
    void *h;

    if (__atomic_load_n(&gpuic_cuda_loaded, __ATOMIC_ACQUIRE) == 0) {
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h == NULL) {
            return GPUIC_ERR_NO_DEVICE; /* not in use here (yet) */
        }
        dlclose(h);
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
    CUdeviceptr d = 0;
    gpuic_status_t status = gpuic_cuda_init();

    if (status != GPUIC_OK) {
        return status;
    }
    status = gpuic_cuda_check(gpuic_cuda.mem_host_register(ptr, len,
                                                           CU_MEMHOSTREGISTER_PORTABLE |
                                                               CU_MEMHOSTREGISTER_DEVICEMAP),
                              "cuMemHostRegister");
    if (status == GPUIC_OK) {
        status = gpuic_cuda_check(gpuic_cuda.mem_host_get_device_pointer(&d, ptr, 0),
                                  "cuMemHostGetDevicePointer");
        if (status != GPUIC_OK) {
            gpuic_cuda.mem_host_unregister(ptr);
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

#else /* !GPUIC_HAVE_CUDA: built without cuda.h, every call reports no device */

gpuic_status_t gpuic_cuda_init(void) { return GPUIC_ERR_NO_DEVICE; }
gpuic_status_t gpuic_cuda_init_if_loaded(void) { return GPUIC_ERR_NO_DEVICE; }
int gpuic_cuda_available(void) { return 0; }
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
void gpuic_cuda_host_unregister(void *ptr) { (void)ptr; }
gpuic_status_t gpuic_cuda_synchronize(void) { return GPUIC_ERR_NO_DEVICE; }

#endif /* GPUIC_HAVE_CUDA */
