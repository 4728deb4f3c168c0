/*
 * The window agent: a warp of the component's kernel image (mpix_gpuic_k_agent) that executes
 * the small device work of host calls on a window from a ring of commands in mapped pinned
 * memory (mpix_gpuic_stream_layout.h has the ring and its protocol).  A host call writes a
 * command and waits for the agent's done word: a round trip through host memory, where a
 * kernel launch and a stream synchronization would cost several times that.  The agent runs
 * on a stream of its own (it would hold up the window's stream while resident), stops after
 * an idle period, and is launched again by the next command that finds it stopped.
 *
 * Everything here runs under module->gpu_lock.
 */
#include "ompi_config.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi.h"

#include "osc_gpuic.h"
#include "osc_gpuic_stream.h"

#ifdef OMPI_OSC_GPUIC_HAVE_STREAM

/* How long a wait for the agent only spins on the done word before it also yields the core
 * between looks: a few round trips through host memory, which a yield (a system call, slow
 * in some sandboxes) would otherwise stretch. */
#define OMPI_OSC_GPUIC_AGENT_SPIN_NS 50000

struct ompi_osc_gpuic_agent {
    mpix_gpuic_agent_ring_t *ring;  /* mapped pinned memory */
    void                    *stream;
    uint64_t                posted; /* the last command published */
    uint64_t                launches;
};

static int ompi_osc_gpuic_agent_create(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_agent_t *agent = calloc(1, sizeof(*agent));
    void *ring = NULL;

    if (agent == NULL) {
        return MPI_ERR_NO_MEM;
    }
    if (gpuic_cuda_host_alloc(sizeof(mpix_gpuic_agent_ring_t), &ring) != GPUIC_OK ||
        gpuic_cuda_stream_create(&agent->stream, false) != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot set up the window agent (pinned "
                  "memory or a CUDA stream)", ompi_comm_rank(module->comm), module->id);
        gpuic_cuda_host_free(ring);
        free(agent);
        return MPI_ERR_OTHER;
    }
    memset(ring, 0, sizeof(mpix_gpuic_agent_ring_t));
    agent->ring = ring;
    /* The kernel image now (at window creation, where the agent is prepared): under lazy
     * loading the agent's first launch would load it, which waits for the context's running
     * kernels, and that launch may come from a peer's atomic while this process's own kernel
     * waits in a flush for that peer.  A failure shows at that launch. */
    (void)ompi_osc_gpuic_stream_load();
    __atomic_store_n(&module->gpu_agent, agent, __ATOMIC_RELEASE);
    return OMPI_SUCCESS;
}

/* Reads a word the agent writes (acquire: what it wrote before it comes with it). */
static inline uint64_t ompi_osc_gpuic_agent_load(const uint64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/* Waits until the agent has executed command @p seq; MPI_ERR_OTHER past osc_gpuic_timeout
 * (the agent is gone: its kernel failed, or the device is lost). */
static int ompi_osc_gpuic_agent_wait(ompi_osc_gpuic_module_t *module, uint64_t seq)
{
    ompi_osc_gpuic_agent_t *agent = module->gpu_agent;
    double timeout = gpuic_context_timeout(mca_osc_gpuic_component.ctx);
    uint64_t start = 0, now;
    unsigned spins = 0;

    while (ompi_osc_gpuic_agent_load(&agent->ring->done) < seq) {
        /* the clock is read every 256 looks */
        if ((++spins & 255) != 0) {
            continue;
        }
        now = gpuic_context_now_ns();
        if (start == 0) {
            start = now;
        }
        if (now - start < OMPI_OSC_GPUIC_AGENT_SPIN_NS) {
            continue;
        }
        /* a long wait (a busy GPU): give the core away between looks */
        if (timeout > 0 && (double)(now - start) > timeout * 1e9) {
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: the window agent did not execute "
                      "command %llu within %.0f s (osc_gpuic_timeout)",
                      ompi_comm_rank(module->comm), module->id, (unsigned long long)seq,
                      timeout);
            return MPI_ERR_OTHER;
        }
        sched_yield();
    }
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_agent_prepare(ompi_osc_gpuic_module_t *module)
{
    /* peers on other nodes send their atomics to it whatever osc_gpuic_gpu_agent says */
    bool wanted = mca_osc_gpuic_component.gpu_agent ||
                  ompi_osc_gpuic_peer_first_off_node(module) >= 0;

    if (!wanted || module->gpu_agent != NULL) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_agent_create(module);
}

int ompi_osc_gpuic_agent_begin(ompi_osc_gpuic_module_t *module, mpix_gpuic_agent_cmd_t **cmd_p)
{
    ompi_osc_gpuic_agent_t *agent;
    uint64_t seq;
    int rc;

    if (module->gpu_agent == NULL) {
        rc = ompi_osc_gpuic_agent_create(module);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    agent = module->gpu_agent;
    seq = agent->posted + 1;
    /* the slot is free once the command that used it last is done */
    if (seq > MPIX_GPUIC_AGENT_SLOTS) {
        rc = ompi_osc_gpuic_agent_wait(module, seq - MPIX_GPUIC_AGENT_SLOTS);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    *cmd_p = &agent->ring->cmd[seq % MPIX_GPUIC_AGENT_SLOTS];
    return OMPI_SUCCESS;
}

/* The agent's state once it is not STOPPING: a stopping agent looks at the next slot once more
 * and then either runs on or stops, so a command published meanwhile must wait for that
 * answer (the command may have come too late for the agent's look, and only a STOPPED agent is
 * launched again).  Still STOPPING after osc_gpuic_timeout: the agent is gone (its kernel
 * failed). */
static uint64_t ompi_osc_gpuic_agent_state(mpix_gpuic_agent_ring_t *ring)
{
    double timeout = gpuic_context_timeout(mca_osc_gpuic_component.ctx);
    uint64_t state, start = 0, now;
    unsigned spins = 0;

    while ((state = ompi_osc_gpuic_agent_load(&ring->state)) == MPIX_GPUIC_AGENT_STOPPING) {
        if (++spins % 1024 != 0) {
            continue;
        }
        now = gpuic_context_now_ns();
        start = start == 0 ? now : start;
        if (timeout > 0 && (double)(now - start) > timeout * 1e9) {
            break;
        }
        sched_yield(); /* the agent's warp was preempted between its two stores */
    }
    return state;
}

/* Writes the tagged copy of command @p seq (the ring protocol in mpix_gpuic_stream_layout.h):
 * each word whole, so the agent sees each one either old or new. */
static void ompi_osc_gpuic_agent_tag(mpix_gpuic_agent_ring_t *ring, uint64_t seq)
{
    const mpix_gpuic_agent_cmd_t *cmd = &ring->cmd[seq % MPIX_GPUIC_AGENT_SLOTS];
    uint64_t *tagged = ring->tagged[seq % MPIX_GPUIC_AGENT_SLOTS];
    uint64_t tag = (uint64_t)(uint32_t)seq << 32;
    uint32_t v;
    int i;

    for (i = 0; i < MPIX_GPUIC_AGENT_TAGGED_WORDS; ++i) {
        if (i * 4 < MPIX_GPUIC_AGENT_TAGGED_FIELDS) {
            memcpy(&v, (const char *)&cmd->what + i * 4, 4);
        } else {
            memcpy(&v, cmd->data + (i * 4 - MPIX_GPUIC_AGENT_TAGGED_FIELDS), 4);
        }
        __atomic_store_n(&tagged[i], tag | v, __ATOMIC_RELAXED);
    }
}

int ompi_osc_gpuic_agent_commit(ompi_osc_gpuic_module_t *module, uint64_t *seq_p)
{
    ompi_osc_gpuic_agent_t *agent = module->gpu_agent;
    mpix_gpuic_agent_ring_t *ring = agent->ring;
    uint64_t seq = agent->posted + 1, state;
    void *arg = ring;
    int rc = OMPI_SUCCESS;

    ompi_osc_gpuic_agent_tag(ring, seq);
    /* the command's fields and bytes before its seq (release), and the seq before the look at
     * the agent's state (the full fence of the stopping protocol) */
    __atomic_store_n(&ring->cmd[seq % MPIX_GPUIC_AGENT_SLOTS].seq, seq, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&agent->posted, seq, __ATOMIC_RELEASE);
    state = ompi_osc_gpuic_agent_state(ring);
    if (state == MPIX_GPUIC_AGENT_STOPPING) {
        gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: the window agent neither stopped nor ran "
                  "on within osc_gpuic_timeout", ompi_comm_rank(module->comm), module->id);
        rc = MPI_ERR_OTHER;
    } else if (state == MPIX_GPUIC_AGENT_STOPPED) {
        __atomic_store_n(&ring->state, MPIX_GPUIC_AGENT_RUNNING, __ATOMIC_RELEASE);
        rc = ompi_osc_gpuic_stream_launch(MPIX_GPUIC_K_AGENT, 1, 32, agent->stream, &arg);
        agent->launches++;
        if (rc != OMPI_SUCCESS) {
            __atomic_store_n(&ring->state, MPIX_GPUIC_AGENT_STOPPED, __ATOMIC_RELEASE);
            gpuic_log(GPUIC_LOG_ERROR, "rank %d: window %d: cannot launch the window agent",
                      ompi_comm_rank(module->comm), module->id);
        }
    }
    *seq_p = seq;
    return rc;
}

int ompi_osc_gpuic_agent_call(ompi_osc_gpuic_module_t *module)
{
    uint64_t seq = 0;
    int rc = ompi_osc_gpuic_agent_commit(module, &seq);

    return rc == OMPI_SUCCESS ? ompi_osc_gpuic_agent_wait(module, seq) : rc;
}

int ompi_osc_gpuic_agent_complete(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_agent_t *agent = __atomic_load_n(&module->gpu_agent, __ATOMIC_ACQUIRE);

    /* no lock: the agent lives as long as the window, and posted only grows */
    if (agent == NULL) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_gpuic_agent_wait(module, __atomic_load_n(&agent->posted, __ATOMIC_ACQUIRE));
}

bool ompi_osc_gpuic_agent_fits(size_t len)
{
    return mca_osc_gpuic_component.gpu_agent && len <= MPIX_GPUIC_AGENT_INLINE;
}

bool ompi_osc_gpuic_agent_buffer_ready(const void *buf)
{
    /* A cudaMemcpy from pageable memory and a cudaMemset may return before their bytes land;
     * with the allocation's SYNC_MEMOPS set they do not.  The fallback query costs more than
     * the agent's round trip saves while any kernel runs (docs/performance.md). */
    gpuic_status_t status = gpuic_cuda_mem_sync_memops(buf);

    return status == GPUIC_OK ||
           (status == GPUIC_ERR_UNSUPPORTED && gpuic_cuda_stream_query(NULL) == GPUIC_OK);
}

int ompi_osc_gpuic_agent_copy(ompi_osc_gpuic_module_t *module, bool is_put, void *local,
                              bool local_dev, size_t len, void *remote)
{
    mpix_gpuic_agent_cmd_t *cmd = NULL;
    uint64_t seq = 0;
    int rc;

    opal_mutex_lock(&module->gpu_lock);
    rc = ompi_osc_gpuic_agent_begin(module, &cmd);
    if (rc == OMPI_SUCCESS) {
        cmd->what = is_put ? MPIX_GPUIC_AGENT_PUT : MPIX_GPUIC_AGENT_GET;
        cmd->flags = 0;
        cmd->count = len;
        cmd->target = (uint64_t)(uintptr_t)remote;
        /* host bytes travel in the command; device memory is read or written in place */
        if (is_put) {
            if (!local_dev) {
                memcpy(cmd->data, local, len);
            }
            cmd->origin = (uint64_t)(uintptr_t)(local_dev ? local : (void *)cmd->data);
        } else {
            cmd->result = (uint64_t)(uintptr_t)(local_dev ? local : (void *)cmd->data);
        }
        /* a put of host bytes is locally complete once they are in the command; one that
         * reads device memory, and every get, waits for the agent (requests complete at once) */
        rc = is_put && !local_dev ? ompi_osc_gpuic_agent_commit(module, &seq)
                                  : ompi_osc_gpuic_agent_call(module);
        if (rc == OMPI_SUCCESS && !is_put && !local_dev) {
            memcpy(local, cmd->data, len);
        }
    }
    opal_mutex_unlock(&module->gpu_lock);
    return rc;
}

void ompi_osc_gpuic_agent_release(ompi_osc_gpuic_module_t *module)
{
    ompi_osc_gpuic_agent_t *agent = module->gpu_agent;
    mpix_gpuic_agent_cmd_t *cmd = NULL;

    if (agent == NULL) {
        return;
    }
    /* a running agent executes what it has, then the exit command; a stopped one is gone */
    if (ompi_osc_gpuic_agent_load(&agent->ring->state) != MPIX_GPUIC_AGENT_STOPPED &&
        ompi_osc_gpuic_agent_begin(module, &cmd) == OMPI_SUCCESS) {
        uint64_t seq = 0;

        cmd->what = MPIX_GPUIC_AGENT_EXIT;
        (void)ompi_osc_gpuic_agent_commit(module, &seq);
    }
    (void)gpuic_cuda_stream_synchronize(agent->stream);
    gpuic_log(GPUIC_LOG_INFO, "rank %d: window %d: the window agent executed %llu commands in "
              "%llu launches", module->comm != NULL ? ompi_comm_rank(module->comm) : -1, module->id,
              (unsigned long long)agent->posted, (unsigned long long)agent->launches);
    gpuic_cuda_stream_destroy(agent->stream);
    gpuic_cuda_host_free(agent->ring);
    free(agent);
    module->gpu_agent = NULL;
}

#else /* !OMPI_OSC_GPUIC_HAVE_STREAM: no kernel image, no agent */

int ompi_osc_gpuic_agent_prepare(ompi_osc_gpuic_module_t *module)
{
    (void)module;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_agent_begin(ompi_osc_gpuic_module_t *module, mpix_gpuic_agent_cmd_t **cmd_p)
{
    (void)module;
    *cmd_p = NULL;
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_agent_commit(ompi_osc_gpuic_module_t *module, uint64_t *seq_p)
{
    (void)module;
    *seq_p = 0;
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_agent_call(ompi_osc_gpuic_module_t *module)
{
    (void)module;
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int ompi_osc_gpuic_agent_complete(ompi_osc_gpuic_module_t *module)
{
    (void)module;
    return OMPI_SUCCESS;
}

bool ompi_osc_gpuic_agent_fits(size_t len)
{
    (void)len;
    return false;
}

bool ompi_osc_gpuic_agent_buffer_ready(const void *buf)
{
    (void)buf;
    return false;
}

int ompi_osc_gpuic_agent_copy(ompi_osc_gpuic_module_t *module, bool is_put, void *local,
                              bool local_dev, size_t len, void *remote)
{
    (void)module, (void)is_put, (void)local, (void)local_dev, (void)len, (void)remote;
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

void ompi_osc_gpuic_agent_release(ompi_osc_gpuic_module_t *module)
{
    (void)module;
}

#endif /* OMPI_OSC_GPUIC_HAVE_STREAM */
