/*
 * gpuic_cuda.h - the CUDA driver API, loaded at run time.
 *
 * libgpuic never links libcuda: the first call here dlopen()s libcuda.so.1 and resolves the
 * entry points it needs.  On a node without a driver every call reports GPUIC_ERR_NO_DEVICE
 * (or "not device memory"), and host windows keep working.
 */
#ifndef GPUIC_CUDA_H
#define GPUIC_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of an interprocess handle (CUipcMemHandle). */
#define GPUIC_CUDA_IPC_HANDLE_SIZE 64

/** What another process needs to map a piece of device memory. */
typedef struct gpuic_cuda_ipc {
    uint8_t  handle[GPUIC_CUDA_IPC_HANDLE_SIZE]; /**< handle of the whole allocation */
    uint64_t offset;                             /**< start of the piece in the allocation */
} gpuic_cuda_ipc_t;

/**
 * Loads the driver (once) and makes sure the calling thread has a current context (the
 * device's primary context when none is current).
 * @return GPUIC_OK, or GPUIC_ERR_NO_DEVICE when there is no driver or no device.
 */
gpuic_status_t gpuic_cuda_init(void);

/**
 * gpuic_cuda_init(), but only when the process has loaded the driver already (it uses CUDA):
 * a process that does not is never made to load the driver or create a context.
 * @return GPUIC_OK, or GPUIC_ERR_NO_DEVICE (driver not loaded, or no device).
 */
gpuic_status_t gpuic_cuda_init_if_loaded(void);

/**
 * The device a process uses when it has to choose one itself (no context is current): pure
 * logic, usable without a driver.  @p requested >= 0 names a device; -1 asks for the one of
 * this process's node-local rank, @p local_rank modulo @p count (a negative @p local_rank,
 * i.e. unknown, counts as 0).  @p count is the number of visible devices.
 * @return the device ordinal, or -1 when @p count < 1, @p requested >= @p count or
 *         @p requested < -1.
 */
int gpuic_cuda_device_pick(int requested, int local_rank, int count);

/**
 * Records how gpuic_cuda_init() picks a device (gpuic_cuda_device_pick() with these arguments)
 * when the calling thread has no current context and the process has no context of its own
 * yet.  Without this call the choice is device 0.  A context the program made current itself
 * (cudaSetDevice) always wins.  Call before the first gpuic_cuda_init().
 */
void gpuic_cuda_device_prefer(int requested, int local_rank);

/**
 * Number of devices visible to this process (after CUDA_VISIBLE_DEVICES).
 * @return GPUIC_OK, or GPUIC_ERR_NO_DEVICE without a driver or device.
 */
gpuic_status_t gpuic_cuda_device_count(int *count_p);

/**
 * Makes device @p ordinal's primary context current on the calling thread and the process's
 * context for threads of libgpuic (the proxy), as cudaSetDevice(@p ordinal) does for the CUDA
 * runtime, which then uses the same context.  Call before creating GPU windows: windows that
 * exist keep the device their memory is on.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM for an ordinal that is not a visible device,
 *         GPUIC_ERR_NO_DEVICE without a driver.
 */
gpuic_status_t gpuic_cuda_device_bind(int ordinal);

/** True once gpuic_cuda_init() succeeded in this process. */
int gpuic_cuda_available(void);

/**
 * True when @p ptr is device memory (cudaMalloc, cuMemAlloc, an IPC mapping).  Cheap and
 * false when the driver is not loaded; host, pinned and managed memory count as host memory.
 */
int gpuic_cuda_is_device_ptr(const void *ptr);

/**
 * Makes the synchronous memory operations of the program on the allocation of device memory
 * @p ptr complete before they return (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, set once per
 * allocation: a cudaMemcpy from pageable memory or a cudaMemset then has landed when it
 * returns, and setting it waits for those still pending), so that work on other streams (the
 * window agent) may use the memory right after such a call.  One attribute query once set.
 * @return GPUIC_OK when the attribute is set; GPUIC_ERR_UNSUPPORTED when the driver refuses it
 *         for this memory (IPC mappings, virtual memory management allocations; not logged),
 *         GPUIC_ERR_INVALID_PARAM for memory the driver does not know, GPUIC_ERR_NO_DEVICE
 *         without a driver.
 */
gpuic_status_t gpuic_cuda_mem_sync_memops(const void *ptr);

/**
 * True when device memory @p ptr (an allocation or an IPC mapping) lives on the device of the
 * calling thread's current context.
 */
int gpuic_cuda_ptr_on_current_device(const void *ptr);

/**
 * Allocates @p len bytes of device memory on the current device.
 * @return GPUIC_OK, GPUIC_ERR_NO_MEMORY (logged at debug level only: the caller reports it) or
 *         GPUIC_ERR_NO_DEVICE.
 */
gpuic_status_t gpuic_cuda_mem_alloc(size_t len, void **ptr_p);

/** Frees memory from gpuic_cuda_mem_alloc(). */
void gpuic_cuda_mem_free(void *ptr);

/** Copies @p len bytes between any two host or device addresses; returns when done. */
gpuic_status_t gpuic_cuda_memcpy(void *dst, const void *src, size_t len);

/**
 * gpuic_cuda_memcpy() on a non-blocking stream of the calling thread: it does not wait for
 * kernels on the default stream, which may be the very kernels waiting for this copy (the
 * proxy thread copying for device calls).  Complete on return.
 */
gpuic_status_t gpuic_cuda_copy_independent(void *dst, const void *src, size_t len);

/** One copy of gpuic_cuda_copies_independent(). */
typedef struct gpuic_cuda_copy {
    void       *dst;
    const void *src;
    size_t      len; /**< 0: skipped */
} gpuic_cuda_copy_t;

/**
 * The @p n copies on the calling thread's stream of gpuic_cuda_copy_independent(), in order:
 * each starts after the previous one has landed (what a transport's ordered writes give an
 * observer that reads the last copy's bytes and then the others'), with one wait for all.
 * Complete on return, also when one of them failed.
 */
gpuic_status_t gpuic_cuda_copies_independent(const gpuic_cuda_copy_t *copies, unsigned n);

/**
 * The allocation that holds device memory at @p ptr: its first byte and size
 * (cuMemGetAddressRange); callable from any thread.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM (not device memory) or GPUIC_ERR_NO_DEVICE.
 */
gpuic_status_t gpuic_cuda_mem_range(const void *ptr, uintptr_t *base_p, size_t *size_p);

/** Fills @p len bytes of device memory with @p byte. */
gpuic_status_t gpuic_cuda_memset(void *dptr, int byte, size_t len);

/** Describes device memory at @p ptr for another process of this node. */
gpuic_status_t gpuic_cuda_ipc_export(const void *ptr, gpuic_cuda_ipc_t *ipc);

/** Maps a peer's exported device memory; *ptr_p is the piece's start in this process. */
gpuic_status_t gpuic_cuda_ipc_import(const gpuic_cuda_ipc_t *ipc, void **ptr_p);

/** Unmaps what gpuic_cuda_ipc_import() mapped (pass the pointer it returned). */
void gpuic_cuda_ipc_release(const gpuic_cuda_ipc_t *ipc, void *ptr);

/**
 * 1 when the driver loads kernels lazily (CUDA_MODULE_LOADING=LAZY, CUDA's default since
 * 12.2): a kernel is loaded when it is first fetched or launched, and loading may wait for the
 * context's running kernels to finish, holding up the calling thread and other threads' driver
 * calls meanwhile.  0 otherwise, or when it cannot tell.
 */
int gpuic_cuda_lazy_loading(void);

/**
 * Pins host memory and maps it into the device: *dptr_p is the device address of @p ptr, for
 * words device code writes and the host reads (error words, rings, counters).
 */
gpuic_status_t gpuic_cuda_host_register(void *ptr, size_t len, void **dptr_p);

/**
 * Like gpuic_cuda_host_register(), but where another library of the process registered the
 * range already (e.g. a UCX with CUDA support registers the host memory it maps), uses that
 * registration: *registered_p tells whether this call registered the range (then
 * gpuic_cuda_host_unregister() undoes it) or found it registered (then nothing must).
 */
gpuic_status_t gpuic_cuda_host_map(void *ptr, size_t len, void **dptr_p, bool *registered_p);

/** Undoes gpuic_cuda_host_register(). */
void gpuic_cuda_host_unregister(void *ptr);

/** Waits until all work of the current context is done. */
gpuic_status_t gpuic_cuda_synchronize(void);

/**
 * Creates a stream of the current context.  @p after_legacy: a blocking stream, whose work
 * follows what the thread issued before on the legacy default stream (a cudaMemcpy from
 * pageable memory may return before its copy lands; work here sees its data) and which the
 * legacy stream's later work waits for; else a non-blocking stream, independent of both (for
 * work that must not wait for the program's kernels, or stays resident).
 */
gpuic_status_t gpuic_cuda_stream_create(void **stream_p, bool after_legacy);

/** Destroys a stream of gpuic_cuda_stream_create() (work on it still completes). */
void gpuic_cuda_stream_destroy(void *stream);

/** Waits until everything issued to @p stream is done. */
gpuic_status_t gpuic_cuda_stream_synchronize(void *stream);

/**
 * Whether everything issued to @p stream is done, without waiting.
 * @return GPUIC_OK when it is, GPUIC_INPROGRESS while work is pending, an error when the
 *         stream's work failed or there is no driver.
 */
gpuic_status_t gpuic_cuda_stream_query(void *stream);

/**
 * Queues a copy of @p len bytes on @p stream (unified addresses: either side may be host or
 * device memory); complete once the stream is synchronized.  As cuMemcpyAsync, a copy to or
 * from pageable host memory may be done, or its source read, before the call returns; only
 * the synchronization promises either.
 */
gpuic_status_t gpuic_cuda_memcpy_async(void *dst, const void *src, size_t len, void *stream);

/** Allocates pinned host memory mapped into every context's device address space at the same
 *  address (unified addressing): device code reads and writes it directly. */
gpuic_status_t gpuic_cuda_host_alloc(size_t len, void **ptr_p);

/** Frees memory of gpuic_cuda_host_alloc(). */
void gpuic_cuda_host_free(void *ptr);


/* ---------------------------------------------------------------------------------------- */
/* Kernels loaded at run time (stream-triggered calls).                                      */

/** The calling thread's current context (gpuic_cuda_init() makes one current when none is). */
gpuic_status_t gpuic_cuda_context_current(void **ctx_p);

/**
 * Loads a module image (a fatbin, cubin or PTX held in memory) into the current context.
 * @return GPUIC_OK, GPUIC_ERR_NO_DEVICE without a driver, GPUIC_ERR_UNSUPPORTED when the image
 *         holds no code this device can run.
 */
gpuic_status_t gpuic_cuda_module_load(const void *image, void **module_p);

/**
 * Puts the calling thread in relaxed stream-capture mode, so that set-up work done on first use
 * (allocations, synchronous copies on the legacy stream, module loads) is allowed while the
 * thread captures a stream in global or thread-local mode.  Returns what to hand to
 * gpuic_cuda_capture_restore() (negative: nothing changed).
 */
int gpuic_cuda_capture_relax(void);

/** Restores the capture mode gpuic_cuda_capture_relax() replaced. */
void gpuic_cuda_capture_restore(int saved);

/** Unloads a module of gpuic_cuda_module_load() (its context must still exist). */
void gpuic_cuda_module_unload(void *module);

/** Finds the kernel named @p name (an extern "C" name) in @p module and loads it now, also
 *  under lazy loading (cuFuncLoad where the driver has it). */
gpuic_status_t gpuic_cuda_module_function(void *module, const char *name, void **fn_p);

/**
 * The virtual architecture the code loaded for kernel @p fn was compiled for
 * (CU_FUNC_ATTRIBUTE_PTX_VERSION: 90 for compute_90 or sm_90 code), i.e. __CUDA_ARCH__ / 10 as
 * that code saw it; 0 when unknown.
 */
int gpuic_cuda_function_arch(void *fn);

/**
 * gpuic_cuda_launch() flag: programmatic dependent launch (PDL, sm_90 and newer).  The kernel is
 * launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, so it may be scheduled
 * before the kernel ahead of it on the stream has completed.  Only for kernels whose every
 * thread executes griddepcontrol.wait before anything else (compiled for sm_90 or newer:
 * gpuic_cuda_function_arch()).  Where the driver lacks cuLaunchKernelEx, or refuses the
 * attribute (CUDA_ERROR_NOT_SUPPORTED and the like, e.g. a stream capture older than CUDA 12.3),
 * the kernel is launched without it, and so is every later one of the process.
 */
#define GPUIC_CUDA_LAUNCH_PDL 0x1u

/**
 * Launches kernel @p fn with @p grid blocks of @p block threads on @p stream (a CUstream or
 * cudaStream_t, including the legacy and per-thread default streams).  The kernel takes one
 * parameter, the structure @p args points to, copied at the call (and kept by a stream capture).
 * @p flags: 0 or GPUIC_CUDA_LAUNCH_PDL.
 */
gpuic_status_t gpuic_cuda_launch(void *fn, unsigned grid, unsigned block, void *stream,
                                 void *args, unsigned flags);

/**
 * The address device code uses for @p ptr: @p ptr itself for device and managed memory, the
 * mapped device address for pinned or registered host memory.
 * @return GPUIC_ERR_INVALID_PARAM for host memory the device cannot reach (pageable memory).
 */
gpuic_status_t gpuic_cuda_device_address(const void *ptr, void **dptr_p);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_CUDA_H */
