/*
 * Which peers this process can see alive, so that a wait that has been silent for
 * osc_gpuic_timeout tells a peer that has not got there yet (MPI lets a process compute as long
 * as it likes before a fence, a post, a complete or an unlock) from one that has died.
 *
 * At window creation every process publishes its process id, start time, pid namespace and
 * boot id (ompi_osc_gpuic_liveness_self()).  A peer that shares this process's kernel (boot id)
 * and pid namespace can be looked at in /proc: it is registered for as long as a window with
 * it exists.  Any other peer (another node, a container of its own, a process /proc does not
 * show) counts as unknown.  The contexts ask ompi_osc_gpuic_liveness_all_alive() once a wait has
 * been silent for the timeout: the wait goes on only if no window has an unknown peer and every
 * registered process still runs (same start time: not a reused pid; not a zombie).
 */
#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osc_gpuic.h"

/* One registered process and how many windows' peer lists hold it. */
typedef struct ompi_osc_gpuic_live_proc {
    uint32_t pid;
    uint64_t start;
    unsigned refs;
} ompi_osc_gpuic_live_proc_t;

static pthread_mutex_t ompi_osc_gpuic_live_lock = PTHREAD_MUTEX_INITIALIZER;
static ompi_osc_gpuic_live_proc_t *ompi_osc_gpuic_live_procs;
static size_t ompi_osc_gpuic_live_n, ompi_osc_gpuic_live_cap;
static unsigned long ompi_osc_gpuic_live_unknown; /* unknown peers, over all windows */
static bool ompi_osc_gpuic_live_logged;

/* What /proc says of process @p pid: 1 running (its start time in *start), 0 gone (no such
 * process, or a zombie), -1 cannot tell. */
static int ompi_osc_gpuic_proc_start(uint32_t pid, uint64_t *start)
{
    char path[64], buf[1024], *p, state;
    unsigned long long starttime = 0;
    ssize_t len;
    int fd, field;

    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    }
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0) {
        return len == 0 ? 0 : -1; /* an exiting process reads empty */
    }
    buf[len] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ')' ends it;
     * starttime is the 22nd field, the 20th after the state. */
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %c", &state) != 1) {
        return -1;
    }
    if (state == 'Z' || state == 'X' || state == 'x') {
        return 0;
    }
    p += 2; /* at the state */
    for (field = 0; field < 19 && p != NULL; ++field) {
        p = strchr(p, ' ');
        p = p != NULL ? p + 1 : NULL;
    }
    if (p == NULL || sscanf(p, "%llu", &starttime) != 1) {
        return -1;
    }
    *start = starttime;
    return 1;
}

/* The first 8 bytes of the kernel's boot id (a UUID: hex digits and dashes), 0 if unreadable. */
static uint64_t ompi_osc_gpuic_boot_id(void)
{
    char buf[64];
    uint64_t id = 0;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0) {
        return 0;
    }
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0, digits = 0; i < len && digits < 16; ++i) {
        char c = buf[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

        if (v >= 0) {
            id = id << 4 | (uint64_t)v;
            digits++;
        }
    }
    return id;
}

/* This process's identity: read from /proc once, since none of it changes. */
static ompi_osc_gpuic_liveness_id_t ompi_osc_gpuic_live_me;
static pthread_once_t ompi_osc_gpuic_live_me_once = PTHREAD_ONCE_INIT;

static void ompi_osc_gpuic_liveness_me_init(void)
{
    ompi_osc_gpuic_liveness_id_t *id = &ompi_osc_gpuic_live_me;
    struct stat st;

    id->pid = (uint32_t)getpid();
    if (ompi_osc_gpuic_proc_start(id->pid, &id->start) != 1) {
        id->start = 0; /* no /proc: nobody can look at this process */
        return;
    }
    if (stat("/proc/self/ns/pid", &st) == 0) {
        id->pidns = ((uint64_t)st.st_dev << 32) ^ (uint64_t)st.st_ino;
    }
    id->boot = ompi_osc_gpuic_boot_id();
}

void ompi_osc_gpuic_liveness_self(ompi_osc_gpuic_liveness_id_t *id)
{
    pthread_once(&ompi_osc_gpuic_live_me_once, ompi_osc_gpuic_liveness_me_init);
    *id = ompi_osc_gpuic_live_me;
}

/* Whether a process published as @p peer can be looked at from here: same kernel, same pid
 * namespace (its id means the same process here), all known. */
static bool ompi_osc_gpuic_liveness_visible(const ompi_osc_gpuic_liveness_id_t *peer)
{
    ompi_osc_gpuic_liveness_id_t me;

    ompi_osc_gpuic_liveness_self(&me);
    return peer->pid != 0 && peer->start != 0 && peer->boot != 0 && peer->pidns != 0 &&
           peer->boot == me.boot && peer->pidns == me.pidns;
}

/* The registry's entry of @p peer, or ompi_osc_gpuic_live_n when it has none (under the lock). */
static size_t ompi_osc_gpuic_live_find(const ompi_osc_gpuic_liveness_id_t *peer)
{
    size_t i;

    for (i = 0; i < ompi_osc_gpuic_live_n; ++i) {
        if (ompi_osc_gpuic_live_procs[i].pid == peer->pid &&
            ompi_osc_gpuic_live_procs[i].start == peer->start) {
            break;
        }
    }
    return i;
}

int ompi_osc_gpuic_liveness_add(ompi_osc_gpuic_module_t *module,
                                const ompi_osc_gpuic_liveness_id_t *peer)
{
    ompi_osc_gpuic_liveness_id_t *ids;
    size_t i;

    if (!ompi_osc_gpuic_liveness_visible(peer)) {
        pthread_mutex_lock(&ompi_osc_gpuic_live_lock);
        ompi_osc_gpuic_live_unknown++;
        pthread_mutex_unlock(&ompi_osc_gpuic_live_lock);
        module->live_unknown++;
        return OMPI_SUCCESS;
    }
    ids = realloc(module->live, (module->nlive + 1) * sizeof(*ids));
    if (ids == NULL) {
        return MPI_ERR_NO_MEM;
    }
    module->live = ids;
    pthread_mutex_lock(&ompi_osc_gpuic_live_lock);
    i = ompi_osc_gpuic_live_find(peer);
    if (i == ompi_osc_gpuic_live_n) {
        if (i == ompi_osc_gpuic_live_cap) {
            size_t cap = i == 0 ? 16 : 2 * i;
            ompi_osc_gpuic_live_proc_t *procs =
                realloc(ompi_osc_gpuic_live_procs, cap * sizeof(*procs));

            if (procs == NULL) {
                pthread_mutex_unlock(&ompi_osc_gpuic_live_lock);
                return MPI_ERR_NO_MEM;
            }
            ompi_osc_gpuic_live_procs = procs;
            ompi_osc_gpuic_live_cap = cap;
        }
        ompi_osc_gpuic_live_procs[i].pid = peer->pid;
        ompi_osc_gpuic_live_procs[i].start = peer->start;
        ompi_osc_gpuic_live_procs[i].refs = 0;
        ompi_osc_gpuic_live_n++;
    }
    ompi_osc_gpuic_live_procs[i].refs++;
    pthread_mutex_unlock(&ompi_osc_gpuic_live_lock);
    module->live[module->nlive++] = *peer;
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_liveness_release(ompi_osc_gpuic_module_t *module)
{
    pthread_mutex_lock(&ompi_osc_gpuic_live_lock);
    ompi_osc_gpuic_live_unknown -= module->live_unknown;
    for (size_t k = 0; k < module->nlive; ++k) {
        size_t i = ompi_osc_gpuic_live_find(&module->live[k]);

        if (i < ompi_osc_gpuic_live_n && --ompi_osc_gpuic_live_procs[i].refs == 0) {
            ompi_osc_gpuic_live_procs[i] = ompi_osc_gpuic_live_procs[--ompi_osc_gpuic_live_n];
        }
    }
    if (ompi_osc_gpuic_live_n == 0) {
        free(ompi_osc_gpuic_live_procs);
        ompi_osc_gpuic_live_procs = NULL;
        ompi_osc_gpuic_live_cap = 0;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_live_lock);
    free(module->live);
    module->live = NULL;
    module->nlive = 0;
    module->live_unknown = 0;
}

bool ompi_osc_gpuic_liveness_all_alive(void *arg)
{
    bool alive = true, log = false;
    uint32_t gone = 0;

    (void)arg;
    pthread_mutex_lock(&ompi_osc_gpuic_live_lock);
    if (ompi_osc_gpuic_live_unknown != 0 || ompi_osc_gpuic_live_n == 0) {
        alive = false; /* a peer that cannot be looked at, or none at all: silence decides */
    }
    for (size_t i = 0; alive && i < ompi_osc_gpuic_live_n; ++i) {
        uint64_t start = 0;

        /* another start time: the id was reused, the registered process is gone */
        if (ompi_osc_gpuic_proc_start(ompi_osc_gpuic_live_procs[i].pid, &start) != 1 ||
            start != ompi_osc_gpuic_live_procs[i].start) {
            alive = false;
            gone = ompi_osc_gpuic_live_procs[i].pid;
        }
    }
    if (alive && !ompi_osc_gpuic_live_logged) {
        ompi_osc_gpuic_live_logged = log = true;
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_live_lock);
    if (log) {
        gpuic_log(GPUIC_LOG_INFO, "a wait has seen no progress for osc_gpuic_timeout, but every "
                  "process it can depend on runs on this node: waiting on");
    } else if (gone != 0) {
        gpuic_log(GPUIC_LOG_DEBUG, "process %u, a peer of a window, is not seen running", gone);
    }
    return alive;
}
