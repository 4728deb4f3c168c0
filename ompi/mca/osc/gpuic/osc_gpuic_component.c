/*
 * The gpuic osc component: MCA registration, the version guard, the process-wide UCX context
 * and endpoint table, and the opal_progress hook.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "ompi/proc/proc.h"
#include "ompi/version.h"

#include "osc_gpuic.h"

static int ompi_osc_gpuic_component_open(void);
static int ompi_osc_gpuic_component_register(void);
static int ompi_osc_gpuic_component_init(bool enable_progress_threads, bool enable_mpi_threads);
static int ompi_osc_gpuic_component_finalize(void);
static int ompi_osc_gpuic_component_query(struct ompi_win_t *win, void **base, size_t size,
                                          int disp_unit, struct ompi_communicator_t *comm,
                                          struct opal_info_t *info, int flavor);

ompi_osc_gpuic_component_t mca_osc_gpuic_component = {
    .super = {
        .osc_version = {
            OMPI_OSC_BASE_VERSION_3_0_0,
            .mca_component_name = "gpuic",
            MCA_BASE_MAKE_VERSION(component, GPUIC_VERSION_MAJOR, GPUIC_VERSION_MINOR,
                                  GPUIC_VERSION_PATCH),
            .mca_open_component = ompi_osc_gpuic_component_open,
            .mca_register_component_params = ompi_osc_gpuic_component_register,
        },
        .osc_data = {
            MCA_BASE_METADATA_PARAM_NONE
        },
        .osc_init = ompi_osc_gpuic_component_init,
        .osc_query = ompi_osc_gpuic_component_query,
        .osc_select = ompi_osc_gpuic_window_create,
        .osc_finalize = ompi_osc_gpuic_component_finalize,
    },
    .priority = 5,
    .verbose = 1,
    .direct = true,
    .max_attach = 0,
    .timeout = 60.0,
};

/* The counters exported as MPI_T performance variables, osc_gpuic_<name>. */
static const struct {
    const char *name;
    size_t     offset; /* in ompi_osc_gpuic_counters_t */
    const char *description;
} ompi_osc_gpuic_pvars[] = {
    {"ops_direct", offsetof(ompi_osc_gpuic_counters_t, ops_direct),
     "MPI_Put/Get/Rput/Rget calls served by direct loads and stores through a mapping of the "
     "target's memory (the target itself, same-node peers, shared windows)"},
    {"ops_ucx", offsetof(ompi_osc_gpuic_counters_t, ops_ucx),
     "MPI_Put/Get/Rput/Rget calls served through UCX"},
    {"bytes_direct", offsetof(ompi_osc_gpuic_counters_t, bytes_direct),
     "Bytes moved by the calls counted in osc_gpuic_ops_direct"},
    {"bytes_ucx", offsetof(ompi_osc_gpuic_counters_t, bytes_ucx),
     "Bytes moved by the calls counted in osc_gpuic_ops_ucx"},
    {"accumulates_atomic", offsetof(ompi_osc_gpuic_counters_t, accumulates_atomic),
     "Accumulate-family calls done entirely with CPU atomics on mapped target memory"},
    {"accumulates_locked", offsetof(ompi_osc_gpuic_counters_t, accumulates_locked),
     "Accumulate-family calls that took the target's accumulate lock (windows not mapped by "
     "every process, elements CPU atomics cannot cover)"},
    {"accumulates_gpu", offsetof(ompi_osc_gpuic_counters_t, accumulates_gpu),
     "Accumulate-family calls on GPU window memory executed by a kernel (device atomics)"},
    {"range_errors", offsetof(ompi_osc_gpuic_counters_t, range_errors),
     "RMA calls refused with MPI_ERR_RMA_RANGE (outside the target window or not attached)"},
    {"flushes_skipped", offsetof(ompi_osc_gpuic_counters_t, flushes_skipped),
     "Flushes (explicit, or inside unlock, fence, complete and accumulates) that found no UCX "
     "operation to wait for and made no UCX call"},
    {"ops_cma", offsetof(ompi_osc_gpuic_counters_t, ops_cma),
     "MPI_Put/Get/Rput/Rget calls to same-node peers whose window is not mapped, served by "
     "cross-memory copies (process_vm_writev/readv)"},
    {"bytes_cma", offsetof(ompi_osc_gpuic_counters_t, bytes_cma),
     "Bytes moved by the calls counted in osc_gpuic_ops_cma"},
    {"device_errors", offsetof(ompi_osc_gpuic_counters_t, device_errors),
     "Errors of device-initiated calls, reported at the window's next synchronization"},
};

/*
 * The proxy thread's counters (device calls on the proxy path), read from libgpuic when the
 * variable is read: 0 until a device queue starts the proxy.
 */
enum { OMPI_OSC_GPUIC_PVAR_PROXY_WQES, OMPI_OSC_GPUIC_PVAR_PROXY_ERRORS,
       OMPI_OSC_GPUIC_PVAR_PROXY_ROUNDS, OMPI_OSC_GPUIC_PVAR_PROXY_SLEEPS,
       OMPI_OSC_GPUIC_PVAR_PROXY_FULL_WAITS, OMPI_OSC_GPUIC_PVAR_PROXY_BUSY_NS,
       OMPI_OSC_GPUIC_PVAR_PROXY_MERGED };

static const struct {
    const char *name;
    int which;
    const char *description;
} ompi_osc_gpuic_proxy_pvars[] = {
    {"proxy_descriptors", OMPI_OSC_GPUIC_PVAR_PROXY_WQES,
     "Work-queue entries device code posted that the proxy thread consumed (device calls on "
     "the proxy path; the entries of a call split across staging areas count one each, "
     "8-byte puts of a warp sharing an entry count one together)"},
    {"proxy_validation_failures", OMPI_OSC_GPUIC_PVAR_PROXY_ERRORS,
     "Work-queue entries the proxy refused (bad key, generation, bounds, opcode) or whose "
     "operation failed; each also sets the window's error"},
    {"proxy_rounds", OMPI_OSC_GPUIC_PVAR_PROXY_ROUNDS,
     "Rounds of the proxy thread that found work (entries drained, then one completion)"},
    {"proxy_sleeps", OMPI_OSC_GPUIC_PVAR_PROXY_SLEEPS,
     "Idle pauses the proxy thread took (it polls while work comes, then sleeps in growing "
     "pauses)"},
    {"proxy_queue_full_waits", OMPI_OSC_GPUIC_PVAR_PROXY_FULL_WAITS,
     "Device reservations that found a live window's device queue full and retried until the "
     "proxy completed entries and their results were read (back-pressure on the proxy path; "
     "read from device memory)"},
    {"proxy_busy_ns", OMPI_OSC_GPUIC_PVAR_PROXY_BUSY_NS,
     "Nanoseconds the proxy thread spent in rounds that found work (draining and executing "
     "entries), its idle polling left out: against the elapsed time, how busy it was"},
    {"proxy_merged_puts", OMPI_OSC_GPUIC_PVAR_PROXY_MERGED,
     "Puts through UCX the proxy thread sent as part of another's message (local and remote "
     "bytes adjacent, the same round): entries minus these is about the UCX puts it made"},
};

static int ompi_osc_gpuic_proxy_pvar_get(const struct mca_base_pvar_t *pvar, void *value,
                                         void *obj)
{
    struct gpuic_proxy *proxy = __atomic_load_n(&mca_osc_gpuic_component.proxy,
                                                __ATOMIC_ACQUIRE);
    gpuic_proxy_stats_t st = {0};
    unsigned long long *out = value;

    (void)obj;
    if (proxy != NULL) {
        gpuic_proxy_stats(proxy, &st);
    }
    switch (*(const int *)pvar->ctx) {
    case OMPI_OSC_GPUIC_PVAR_PROXY_WQES:       *out = st.wqes; break;
    case OMPI_OSC_GPUIC_PVAR_PROXY_ERRORS:     *out = st.errors; break;
    case OMPI_OSC_GPUIC_PVAR_PROXY_ROUNDS:     *out = st.rounds; break;
    case OMPI_OSC_GPUIC_PVAR_PROXY_FULL_WAITS: *out = ompi_osc_gpuic_devqueue_full_waits(); break;
    case OMPI_OSC_GPUIC_PVAR_PROXY_BUSY_NS:    *out = st.busy_ns; break;
    case OMPI_OSC_GPUIC_PVAR_PROXY_MERGED:     *out = st.merged; break;
    default:                                   *out = st.sleeps; break;
    }
    return OPAL_SUCCESS;
}

/*
 * Read-only continuous counters bound to no object: one value per process, read by the
 * default accessor straight from the component (no callback on the read path either), and
 * the proxy's, read through ompi_osc_gpuic_proxy_pvar_get().
 */
static void ompi_osc_gpuic_pvars_register(mca_base_component_t *c)
{
    size_t i;

    for (i = 0; i < sizeof(ompi_osc_gpuic_pvars) / sizeof(ompi_osc_gpuic_pvars[0]); ++i) {
        int rc = mca_base_component_pvar_register(
            c, ompi_osc_gpuic_pvars[i].name, ompi_osc_gpuic_pvars[i].description,
            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
            NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            (char *)&mca_osc_gpuic_component.counters + ompi_osc_gpuic_pvars[i].offset);

        /* Observability only: a counter that could not be exported costs nothing else. */
        if (rc < 0) {
            gpuic_log(GPUIC_LOG_WARN, "could not register MPI_T variable osc_gpuic_%s",
                      ompi_osc_gpuic_pvars[i].name);
        }
    }
    for (i = 0; i < sizeof(ompi_osc_gpuic_proxy_pvars) / sizeof(ompi_osc_gpuic_proxy_pvars[0]);
         ++i) {
        int rc = mca_base_component_pvar_register(
            c, ompi_osc_gpuic_proxy_pvars[i].name, ompi_osc_gpuic_proxy_pvars[i].description,
            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
            NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            ompi_osc_gpuic_proxy_pvar_get, NULL, NULL,
            (void *)&ompi_osc_gpuic_proxy_pvars[i].which);

        if (rc < 0) {
            gpuic_log(GPUIC_LOG_WARN, "could not register MPI_T variable osc_gpuic_%s",
                      ompi_osc_gpuic_proxy_pvars[i].name);
        }
    }
}

static int ompi_osc_gpuic_component_register(void)
{
    mca_base_component_t *c = &mca_osc_gpuic_component.super.osc_version;

    (void)mca_base_component_var_register(
        c, "priority",
        "Priority of the gpuic osc component (other components decline windows at 0..100; "
        "select gpuic explicitly with --mca osc gpuic)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.priority);
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of gpuic: 0 silent, 1 errors, 2 warnings, 3 window events, 4 per-call "
        "decisions, 5 per-operation trace",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_osc_gpuic_component.verbose);
    (void)mca_base_component_var_register(
        c, "direct",
        "Serve same-node peers whose window memory UCX can map (MPI_Win_allocate) with direct "
        "loads and stores instead of UCX calls",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.direct);
    (void)mca_base_component_var_register(
        c, "max_attach",
        "Regions a dynamic window can have attached at once (MPI_Win_attach beyond it fails "
        "with MPI_ERR_RMA_ATTACH); 0: no limit (the region table grows as needed)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.max_attach);
    (void)mca_base_component_var_register(
        c, "timeout",
        "Seconds a wait that depends on another process (lock acquisition, accumulate lock, "
        "MPI_Win_fence, MPI_Win_start/wait, flushes and atomics) may go without progress "
        "before the call fails with MPI_ERR_OTHER, e.g. when that process died; 0 waits "
        "forever",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.timeout);
    mca_osc_gpuic_component.device_proxy = false;
    (void)mca_base_component_var_register(
        c, "device_proxy",
        "Device calls go through the proxy thread even to targets they could reach with loads "
        "and stores (same-node GPU windows mapped by CUDA IPC), for testing and comparison; "
        "atomics on device memory stay device atomics",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.device_proxy);
    mca_osc_gpuic_component.device_queue_slots = 1024;
    (void)mca_base_component_var_register(
        c, "device_queue_slots",
        "Work-queue slots of a window's device queue (a power of two, 64 .. 65536): device "
        "operations to proxy-path targets in flight at once",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.device_queue_slots);
    mca_osc_gpuic_component.device_stage_bytes = 4096;
    (void)mca_base_component_var_register(
        c, "device_stage_bytes",
        "Pinned staging bytes per device-queue slot (a multiple of 64, 64 .. 1048576): the "
        "largest piece of a device put, get or accumulate the proxy moves in one entry",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.device_stage_bytes);
    mca_osc_gpuic_component.device = -1;
    (void)mca_base_component_var_register(
        c, "device",
        "GPU a process uses when gpuic has to choose one (no CUDA context is current when it "
        "first needs the device, e.g. a GPU window created before any CUDA call): -1 the "
        "node-local rank modulo the visible devices, N device N; a program that selected a "
        "device itself (cudaSetDevice) keeps it; MPIX_Gpuic_bind_device follows the same rule",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.device);
    mca_osc_gpuic_component.stream_pdl = true;
    (void)mca_base_component_var_register(
        c, "stream_pdl",
        "Launch the kernels of stream-triggered calls with programmatic dependent launch when "
        "their loaded code supports it (sm_90 or newer); false launches them in plain stream "
        "order, for comparison",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.stream_pdl);
    mca_osc_gpuic_component.gpu_agent = true;
    (void)mca_base_component_var_register(
        c, "gpu_agent",
        "Execute the small device work of this process's host calls on GPU windows it maps "
        "(puts, gets and accumulate-family calls of up to 448 bytes, compare-and-swap) with the "
        "window agent, a warp that stays resident while the calls keep it busy (it stops after "
        "1 ms idle): a round trip through pinned memory instead of a kernel launch or a copy "
        "per call.  false: a kernel launch or a queued copy per call.  The agent always "
        "executes atomics that peers on other nodes send to this process's GPU windows, which "
        "have no other way to be atomic with device atomics",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.gpu_agent);
    mca_osc_gpuic_component.async_progress = false;
    (void)mca_base_component_var_register(
        c, "async_progress",
        "Give this process a thread, from its first window on, that progresses the UCX worker "
        "its peers reach, so that their passive-target calls over a transport that emulates "
        "RMA in software (tcp) complete while this process computes outside MPI; it sleeps "
        "between looks when idle (at most 1 ms while it serves peers alone).  Processes whose "
        "device API is in use run that thread already",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.async_progress);
    mca_osc_gpuic_component.cma_min_bytes = 8192;
    (void)mca_base_component_var_register(
        c, "cma_min_bytes",
        "Smallest contiguous piece of a put or get (and chunk of a large accumulate) to a "
        "same-node peer whose window is not mapped (MPI_Win_create memory) that always goes by "
        "cross-memory copy (process_vm_writev/readv, no help from the target); of smaller "
        "pieces the first 4 to a peer after a flush go by copy too, the rest of a run through "
        "UCX, which pipelines them (0: every piece by copy; -1: none).  Needs osc_gpuic_direct",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.cma_min_bytes);
    mca_osc_gpuic_component.emulate_nodes = 0;
    (void)mca_base_component_var_register(
        c, "emulate_nodes",
        "Emulate nodes of N processes each on one machine, for testing: processes whose ranks "
        "in MPI_COMM_WORLD divided by N differ are treated as on different nodes (no direct "
        "loads and stores, cross-memory copies or CUDA IPC between them: UCX carries "
        "everything, as between real nodes); shared windows keep the real node; 0 (default): "
        "real nodes only",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_gpuic_component.emulate_nodes);
    ompi_osc_gpuic_pvars_register(c);
    return OMPI_SUCCESS;
}

/*
 * Open MPI's loader checks no version, and the component reaches into internal structures whose
 * layout may change between releases: refuse to open under any Open MPI other than the one the
 * headers came from.
 */
static int ompi_osc_gpuic_version_check(void)
{
    char running[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, major = -1, minor = -1, release = -1;
    const char *v;

    (void)PMPI_Get_library_version(running, &len);
    v = strstr(running, "Open MPI v");
    if (v == NULL || sscanf(v, "Open MPI v%d.%d.%d", &major, &minor, &release) != 3 ||
        major != OMPI_MAJOR_VERSION || minor != OMPI_MINOR_VERSION ||
        release != OMPI_RELEASE_VERSION) {
        opal_output(0, "osc/gpuic: built for Open MPI %d.%d.%d but running under %d.%d.%d; "
                    "the component will not be used (rebuild gpuic against this Open MPI)",
                    OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, major, minor,
                    release);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

static int ompi_osc_gpuic_component_open(void)
{
    gpuic_log_set_level(mca_osc_gpuic_component.verbose);
    return ompi_osc_gpuic_version_check();
}

/* This process's rank among the processes of its job on this node: mpirun's environment (set
 * for every launched process), else what OPAL's run-time recorded, else -1 (unknown). */
static int ompi_osc_gpuic_local_rank(void)
{
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");

    if (env != NULL && *env != '\0') {
        return atoi(env);
    }
    return opal_process_info.my_local_rank >= 0 ? (int)opal_process_info.my_local_rank : -1;
}

static int ompi_osc_gpuic_component_init(bool enable_progress_threads, bool enable_mpi_threads)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;

    c->thread_multiple = enable_mpi_threads;
    if (c->emulate_nodes < 0) {
        gpuic_log(GPUIC_LOG_WARN, "osc_gpuic_emulate_nodes (%d) is negative: real nodes only",
                  c->emulate_nodes);
        c->emulate_nodes = 0;
    }
    /* Only recorded: the driver is not touched until a window needs the device. */
    gpuic_cuda_device_prefer(c->device, ompi_osc_gpuic_local_rank());
    c->ctx = NULL;
    c->num_windows = 0;
    c->next_id = 0;
    c->windows = NULL;
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->endpoints, opal_hash_table_t);
    if (opal_hash_table_init(&c->endpoints, 64) != OPAL_SUCCESS) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

static int ompi_osc_gpuic_component_finalize(void)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    uint64_t key;
    void *value, *node = NULL;
    int rc;

    /* Windows the program never freed: release them quietly so UCX can shut down. */
    while (c->windows != NULL) {
        ompi_osc_gpuic_module_t *module = c->windows;

        gpuic_log(GPUIC_LOG_WARN, "window %d was not freed before MPI_Finalize", module->id);
        c->windows = module->next;
        ompi_osc_gpuic_module_destroy(module);
    }
    /* the pool's keys go before the endpoints they were unpacked on */
    ompi_osc_gpuic_state_pool_finalize();
    rc = opal_hash_table_get_first_key_uint64(&c->endpoints, &key, &value, &node);
    while (rc == OPAL_SUCCESS) {
        gpuic_ep_destroy(value);
        rc = opal_hash_table_get_next_key_uint64(&c->endpoints, &key, &value, node, &node);
    }
    OBJ_DESTRUCT(&c->endpoints);
    ompi_osc_gpuic_devqueue_finalize();
    gpuic_context_destroy(c->ctx);
    c->ctx = NULL;
    OBJ_DESTRUCT(&c->lock);
    return OMPI_SUCCESS;
}

static int ompi_osc_gpuic_component_query(struct ompi_win_t *win, void **base, size_t size,
                                          int disp_unit, struct ompi_communicator_t *comm,
                                          struct opal_info_t *info, int flavor)
{
    /* Every flavor is claimed: with --mca osc gpuic no other component is there to take one,
     * and a flavor gpuic cannot serve yet must fail with a clear error in select. */
    return mca_osc_gpuic_component.priority;
}

int ompi_osc_gpuic_context_get(gpuic_context_t **ctx_p)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    gpuic_context_params_t params = {0};
    gpuic_status_t status = GPUIC_OK;

    opal_mutex_lock(&c->lock);
    if (c->ctx == NULL) {
        params.thread_multiple = c->thread_multiple;
        /* A process that uses CUDA may post device calls whose peers' proxies reach this
         * process too: they connect to a serving worker that this process's proxy thread
         * progresses while its other threads wait for kernels (as do peers' host calls);
         * osc_gpuic_async_progress gives any process one, and starts that thread. */
        params.serve = gpuic_cuda_init_if_loaded() == GPUIC_OK || c->async_progress;
        status = gpuic_context_create(&params, &c->ctx);
        if (status == GPUIC_OK) {
            gpuic_context_set_timeout(c->ctx, c->timeout);
            gpuic_context_set_alive(c->ctx, ompi_osc_gpuic_liveness_all_alive, NULL);
            if (params.serve) {
                /* peers' atomics on this process's GPU windows (osc_gpuic_gpu_exec.c) */
                gpuic_context_set_call_handler(c->ctx, ompi_osc_gpuic_gpu_exec_handler, NULL);
            }
        }
    }
    *ctx_p = c->ctx;
    opal_mutex_unlock(&c->lock);
    return ompi_osc_gpuic_error(status);
}

gpuic_status_t ompi_osc_gpuic_endpoint_lookup(opal_hash_table_t *table, gpuic_context_t *ctx,
                                              struct ompi_proc_t *proc, const void *addr,
                                              size_t len, gpuic_ep_t **ep_p)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;
    uint64_t key = (uint64_t)(uintptr_t)proc;
    gpuic_status_t status = GPUIC_OK;
    void *value;

    opal_mutex_lock(&c->lock);
    if (opal_hash_table_get_value_uint64(table, key, &value) == OPAL_SUCCESS) {
        *ep_p = value;
    } else {
        status = gpuic_ep_create(ctx, addr, len, ep_p);
        if (status == GPUIC_OK) {
            opal_hash_table_set_value_uint64(table, key, *ep_p);
        }
    }
    opal_mutex_unlock(&c->lock);
    return status;
}

int ompi_osc_gpuic_endpoint_get(struct ompi_proc_t *proc, const void *addr, size_t len,
                                gpuic_ep_t **ep_p)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;

    return ompi_osc_gpuic_error(
        ompi_osc_gpuic_endpoint_lookup(&c->endpoints, c->ctx, proc, addr, len, ep_p));
}

bool ompi_osc_gpuic_peer_on_node(ompi_osc_gpuic_module_t *module, int rank)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(module->comm, rank), *me = ompi_proc_local();
    uint32_t n = (uint32_t)mca_osc_gpuic_component.emulate_nodes;

    if (proc == me) {
        return true;
    }
    if (proc == NULL || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
        return false;
    }
    if (n == 0 || module->flavor == MPI_WIN_FLAVOR_SHARED) {
        return true;
    }
    return proc->super.proc_name.jobid == me->super.proc_name.jobid &&
           proc->super.proc_name.vpid / n == me->super.proc_name.vpid / n;
}

int ompi_osc_gpuic_peer_first_off_node(ompi_osc_gpuic_module_t *module)
{
    int i, n = ompi_comm_size(module->comm);

    for (i = 0; i < n; ++i) {
        if (!ompi_osc_gpuic_peer_on_node(module, i)) {
            return i;
        }
    }
    return -1;
}

static int ompi_osc_gpuic_progress(void)
{
    /* Puts and gets gathered before a program waits in MPI (MPI_Test, MPI_Iprobe, a receive)
     * move now. */
    ompi_osc_gpuic_cma_pend_settle(false);
    /* Registered only while windows exist, and the context outlives every window; this
     * progresses its serving worker too. */
    return (int)gpuic_context_progress(mca_osc_gpuic_component.ctx);
}

void ompi_osc_gpuic_window_added(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;

    opal_mutex_lock(&c->lock);
    module->prev = NULL;
    module->next = c->windows;
    if (c->windows != NULL) {
        c->windows->prev = module;
    }
    c->windows = module;
    if (!module->all_direct || module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        __atomic_fetch_add(&c->progress_windows, 1, __ATOMIC_RELAXED);
    }
    if (c->num_windows++ == 0) {
        opal_progress_register(ompi_osc_gpuic_progress);
    }
    opal_mutex_unlock(&c->lock);
}

void ompi_osc_gpuic_window_removed(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_component_t *c = &mca_osc_gpuic_component;

    opal_mutex_lock(&c->lock);
    if (module->prev != NULL) {
        module->prev->next = module->next;
    } else {
        c->windows = module->next;
    }
    if (module->next != NULL) {
        module->next->prev = module->prev;
    }
    if (!module->all_direct || module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        __atomic_fetch_sub(&c->progress_windows, 1, __ATOMIC_RELAXED);
    }
    if (--c->num_windows == 0) {
        opal_progress_unregister(ompi_osc_gpuic_progress);
    }
    opal_mutex_unlock(&c->lock);
}
