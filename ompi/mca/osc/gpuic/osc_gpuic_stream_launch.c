/*
 * The stream-triggered calls' kernels (osc_gpuic_stream_kernels.cu): nvcc builds them into a
 * fatbin that is embedded in the component (osc_gpuic_embed.sh) and loaded once per context
 * with cuModuleLoadData; they are launched through the run-time-loaded driver
 * (cuLaunchKernelEx with programmatic dependent launch where it can, else cuLaunchKernel), so
 * the component links no CUDA library.  Also the launch sizes of the calls that need more than
 * one thread.
 */
#include "ompi_config.h"

#include <stdint.h>

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

/* The embedded image (the generated osc_gpuic_stream_image.c). */
extern const unsigned char ompi_osc_gpuic_stream_image[];

/* Kernel names, by mpix_gpuic_stream_kernel_t. */
static const char *const ompi_osc_gpuic_stream_names[MPIX_GPUIC_K_COUNT] = {
    [MPIX_GPUIC_K_PUT] = "mpix_gpuic_k_put",
    [MPIX_GPUIC_K_GET] = "mpix_gpuic_k_get",
    [MPIX_GPUIC_K_ACC] = "mpix_gpuic_k_acc",
    [MPIX_GPUIC_K_FOP] = "mpix_gpuic_k_fop",
    [MPIX_GPUIC_K_CAS] = "mpix_gpuic_k_cas",
    [MPIX_GPUIC_K_FLUSH] = "mpix_gpuic_k_flush",
    [MPIX_GPUIC_K_FLUSH_ALL] = "mpix_gpuic_k_flush_all",
    [MPIX_GPUIC_K_FLUSH_LOCAL] = "mpix_gpuic_k_flush_local",
    [MPIX_GPUIC_K_FENCE] = "mpix_gpuic_k_fence",
    [MPIX_GPUIC_K_LOCK_ALL] = "mpix_gpuic_k_lock_all",
    [MPIX_GPUIC_K_UNLOCK_ALL] = "mpix_gpuic_k_unlock_all",
    [MPIX_GPUIC_K_POST] = "mpix_gpuic_k_post",
    [MPIX_GPUIC_K_START] = "mpix_gpuic_k_start",
    [MPIX_GPUIC_K_COMPLETE] = "mpix_gpuic_k_complete",
    [MPIX_GPUIC_K_WAIT] = "mpix_gpuic_k_wait",
    [MPIX_GPUIC_K_COPY_SMALL] = "mpix_gpuic_k_copy_small",
    [MPIX_GPUIC_K_HOST_ACC] = "mpix_gpuic_k_host_acc",
    [MPIX_GPUIC_K_HOST_CAS] = "mpix_gpuic_k_host_cas",
    [MPIX_GPUIC_K_AGENT] = "mpix_gpuic_k_agent",
    [MPIX_GPUIC_K_COPY_BULK] = "mpix_gpuic_k_copy_bulk",
};

/* Loaded kernels: one module per context, found by a short linear search. */
#define OMPI_OSC_GPUIC_STREAM_MODULES 16

typedef struct ompi_osc_gpuic_stream_module {
    void     *ctx;
    void     *module;
    void     *fn[MPIX_GPUIC_K_COUNT];
    /** per kernel: gpuic_cuda_launch() flags, written before fn[] is published */
    unsigned flags[MPIX_GPUIC_K_COUNT];
} ompi_osc_gpuic_stream_module_t;

static ompi_osc_gpuic_stream_module_t ompi_osc_gpuic_stream_modules[OMPI_OSC_GPUIC_STREAM_MODULES];
static int ompi_osc_gpuic_stream_nmodules;
static pthread_mutex_t ompi_osc_gpuic_stream_modules_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The launch flags of a loaded kernel: programmatic dependent launch when the code loaded for it
 * was compiled for MPIX_GPUIC_STREAM_PDL_ARCH or newer, the code that begins with the
 * griddepcontrol prologue (osc_gpuic_stream_kernels.cu; older code, or PTX of an older
 * architecture JIT-compiled for a newer device, has none and must keep plain stream order),
 * unless the MCA parameter osc_gpuic_stream_pdl turns it off (for comparison).
 */
static unsigned ompi_osc_gpuic_stream_flags(const char *name, void *fn)
{
    int arch = gpuic_cuda_function_arch(fn);
    bool off = !mca_osc_gpuic_component.stream_pdl;
    bool pdl = !off && arch >= MPIX_GPUIC_STREAM_PDL_ARCH;

    gpuic_log(GPUIC_LOG_DEBUG, "stream kernel %s: code for compute_%d, programmatic dependent "
              "launch %s", name, arch, pdl ? "on" : off ? "off (osc_gpuic_stream_pdl)" : "off");
    return pdl ? GPUIC_CUDA_LAUNCH_PDL : 0;
}

/* The loaded function of @p kernel for the current context, loading the image (all its
 * kernels) on first use, and its launch flags. */
static int ompi_osc_gpuic_stream_function(int kernel, void **fn_p, unsigned *flags_p)
{
    ompi_osc_gpuic_stream_module_t *m = NULL;
    gpuic_status_t status;
    void *ctx = NULL;
    int i;

    status = gpuic_cuda_context_current(&ctx);
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    if (kernel < 0 || kernel >= MPIX_GPUIC_K_COUNT) {
        return MPI_ERR_ARG;
    }
    /* Every launch comes here: entries and functions are published once (release) and never
     * change, so the common case reads them without the lock. */
    for (i = 0; i < __atomic_load_n(&ompi_osc_gpuic_stream_nmodules, __ATOMIC_ACQUIRE); ++i) {
        m = &ompi_osc_gpuic_stream_modules[i];
        if (m->ctx == ctx) {
            *fn_p = __atomic_load_n(&m->fn[kernel], __ATOMIC_ACQUIRE);
            if (*fn_p != NULL) {
                *flags_p = m->flags[kernel];
                return OMPI_SUCCESS;
            }
            break;
        }
    }
    m = NULL;
    pthread_mutex_lock(&ompi_osc_gpuic_stream_modules_lock);
    for (i = 0; i < ompi_osc_gpuic_stream_nmodules; ++i) {
        if (ompi_osc_gpuic_stream_modules[i].ctx == ctx) {
            m = &ompi_osc_gpuic_stream_modules[i];
            break;
        }
    }
    if (m == NULL) {
        if (ompi_osc_gpuic_stream_nmodules == OMPI_OSC_GPUIC_STREAM_MODULES) {
            status = GPUIC_ERR_NO_RESOURCE;
            gpuic_log(GPUIC_LOG_ERROR, "stream kernels loaded in %d contexts already",
                      OMPI_OSC_GPUIC_STREAM_MODULES);
        } else {
            m = &ompi_osc_gpuic_stream_modules[ompi_osc_gpuic_stream_nmodules];
            status = gpuic_cuda_module_load(ompi_osc_gpuic_stream_image, &m->module);
            if (status == GPUIC_OK) {
                m->ctx = ctx;
                __atomic_store_n(&ompi_osc_gpuic_stream_nmodules,
                                 ompi_osc_gpuic_stream_nmodules + 1, __ATOMIC_RELEASE);
            } else {
                m = NULL;
            }
        }
    }
    /* Every kernel of the image at once, on its first launch in this context: under lazy
     * loading (gpuic_cuda_lazy_loading()) fetching a function loads it, which may wait for the
     * context's running kernels; fetched later, in the middle of an epoch, that wait could
     * fall on a kernel waiting for this process (a proxy-path flush waits for the proxy
     * thread, whose copies the loading holds up) until the device timeout. */
    for (i = 0; m != NULL && i < MPIX_GPUIC_K_COUNT; ++i) {
        void *fn = NULL;
        gpuic_status_t s;

        if (m->fn[i] != NULL) {
            continue;
        }
        s = gpuic_cuda_module_function(m->module, ompi_osc_gpuic_stream_names[i], &fn);
        if (i == kernel) {
            status = s;
        }
        m->flags[i] =
            fn != NULL ? ompi_osc_gpuic_stream_flags(ompi_osc_gpuic_stream_names[i], fn) : 0;
        __atomic_store_n(&m->fn[i], fn, __ATOMIC_RELEASE);
    }
    *fn_p = m != NULL ? m->fn[kernel] : NULL;
    *flags_p = m != NULL ? m->flags[kernel] : 0;
    pthread_mutex_unlock(&ompi_osc_gpuic_stream_modules_lock);
    return *fn_p != NULL ? OMPI_SUCCESS : ompi_osc_gpuic_error(status);
}

int ompi_osc_gpuic_stream_load(void)
{
    void *fn = NULL;
    unsigned flags = 0;

    return ompi_osc_gpuic_stream_function(MPIX_GPUIC_K_AGENT, &fn, &flags);
}

int ompi_osc_gpuic_stream_launch(int kernel, unsigned grid, unsigned block, void *stream,
                                 void *args)
{
    void *fn = NULL;
    unsigned flags = 0;
    int rc = ompi_osc_gpuic_stream_function(kernel, &fn, &flags);

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    return ompi_osc_gpuic_error(gpuic_cuda_launch(fn, grid, block, stream, args, flags));
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */

unsigned ompi_osc_gpuic_stream_sync_threads(int nranks)
{
    unsigned n = (unsigned)nranks;

    n = (n + 31) / 32 * 32;
    return n > 256 ? 256 : n;
}

static uint64_t ompi_osc_gpuic_stream_gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

void ompi_osc_gpuic_stream_xfer_shape(uint64_t bytes, uint64_t disp_unit, unsigned *grid_p,
                                      unsigned *block_p, uint64_t *chunk_p)
{
    uint64_t unit = disp_unit / ompi_osc_gpuic_stream_gcd(disp_unit, 16) * 16;
    uint64_t blocks = (bytes + 65535) / 65536, chunk;

    blocks = blocks > 1024 ? 1024 : blocks;
    chunk = (bytes + blocks - 1) / blocks;
    chunk = (chunk + unit - 1) / unit * unit;
    *chunk_p = chunk;
    *grid_p = (unsigned)((bytes + chunk - 1) / chunk);
    *block_p = bytes <= 512 ? 32 : 256;
}
