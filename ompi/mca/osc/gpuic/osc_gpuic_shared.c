/*
 * MPI_Win_allocate_shared: one POSIX shared-memory segment per window, created by the lowest
 * rank and mapped by every process, holding each process's part either back to back (the
 * default: MPI's contiguous layout) or page-aligned (info alloc_shared_noncontig=true).
 * Each part is also registered with UCX so that the component's UCX path keeps working.
 */
#include "ompi_config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/info.h"
#include "ompi/mca/coll/coll.h"

#include "osc_gpuic.h"

#define OMPI_OSC_GPUIC_SHM_NAME_LEN 64
#define OMPI_OSC_GPUIC_SHM_ALIGN 4096

/* MPI_ERR_RMA_SHARED unless every process of the window is on this node (the real node: an
 * emulated node does not split a shared window, ompi_osc_gpuic_peer_on_node()). */
static int ompi_osc_gpuic_shared_check_local(ompi_osc_gpuic_module_t *module)
{
    struct ompi_communicator_t *comm = module->comm;
    int mine = ompi_osc_gpuic_peer_first_off_node(module) < 0, all = 0, rc;

    rc = comm->c_coll->coll_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (!all) {
        gpuic_log(GPUIC_LOG_DEBUG, "MPI_Win_allocate_shared on processes of several nodes");
        return MPI_ERR_RMA_SHARED;
    }
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_shared_allocate(ompi_osc_gpuic_module_t *module, struct opal_info_t *info,
                                   size_t size)
{
    struct ompi_communicator_t *comm = module->comm;
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), i, rc, fd = -1, ok = 1, all_ok;
    uint64_t my_size = size, *sizes;
    char name[OMPI_OSC_GPUIC_SHM_NAME_LEN] = "";
    bool noncontig = false;
    int found = 0;
    size_t total = 0;

    rc = ompi_osc_gpuic_shared_check_local(module);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (info != NULL) {
        opal_info_get_bool(info, "alloc_shared_noncontig", &noncontig, &found);
        noncontig = found && noncontig;
    }
    module->shm_noncontig = noncontig;
    sizes = malloc(sizeof(uint64_t) * n);
    module->shm_off = malloc(sizeof(uint64_t) * n);
    if (sizes == NULL || module->shm_off == NULL) {
        free(sizes);
        return MPI_ERR_NO_MEM;
    }
    rc = comm->c_coll->coll_allgather(&my_size, 1, MPI_UINT64_T, sizes, 1, MPI_UINT64_T, comm,
                                      comm->c_coll->coll_allgather_module);
    for (i = 0; rc == OMPI_SUCCESS && i < n; ++i) {
        module->shm_off[i] = total;
        total += noncontig ? (sizes[i] + OMPI_OSC_GPUIC_SHM_ALIGN - 1) /
                                 OMPI_OSC_GPUIC_SHM_ALIGN * OMPI_OSC_GPUIC_SHM_ALIGN
                           : sizes[i];
    }
    free(sizes);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    module->shm_len = total;
    if (total > 0) {
        /* Rank 0 creates and names the segment; the name travels by broadcast. */
        if (me == 0) {
            snprintf(name, sizeof(name), "/gpuic-%d-%d-%lx", (int)getpid(), module->id,
                     (unsigned long)random());
            fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0 || ftruncate(fd, (off_t)total) != 0) {
                gpuic_log(GPUIC_LOG_ERROR, "cannot create a %zu-byte shared segment %s", total,
                          name);
                ok = 0;
            }
        }
        rc = comm->c_coll->coll_bcast(name, sizeof(name), MPI_CHAR, 0, comm,
                                      comm->c_coll->coll_bcast_module);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (me != 0 && ok) {
            fd = shm_open(name, O_RDWR, 0600);
        }
        if (ok && fd >= 0) {
            module->shm_seg = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (module->shm_seg == MAP_FAILED) {
                module->shm_seg = NULL;
                ok = 0;
            }
        } else {
            ok = 0;
        }
        if (fd >= 0) {
            close(fd);
        }
        rc = comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm,
                                          comm->c_coll->coll_allreduce_module);
        /* Everyone has it mapped (or gave up): the name is no longer needed. */
        if (me == 0) {
            shm_unlink(name);
        }
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (!all_ok) {
            return MPI_ERR_NO_MEM;
        }
    }
    module->base = size > 0 ? module->shm_seg + module->shm_off[me] : NULL;
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_shared_release(ompi_osc_gpuic_module_t *module)
{
    if (module->shm_seg != NULL) {
        munmap(module->shm_seg, module->shm_len);
        module->shm_seg = NULL;
    }
    free(module->shm_off);
    module->shm_off = NULL;
}

/* Where this process can load and store @p rank's window memory of a window that is not a
 * shared one, or NULL: same-node host memory the window mapped (MPI_Win_allocate with direct
 * mappings), or this process's own memory. */
static void *ompi_osc_gpuic_shared_mapping(ompi_osc_gpuic_module_t *module, int rank)
{
    const ompi_osc_gpuic_peer_t *peer = &module->peers[rank];

    if (peer->win.size == 0 || peer->win.gpu || module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        return NULL;
    }
    if (rank == ompi_comm_rank(module->comm)) {
        return module->base;
    }
    return peer->win.direct;
}

/*
 * MPI_Win_shared_query.  Shared windows answer with their segment.  Other flavors answer as
 * MPI 4.0 section 12.2.3 says: the memory of a rank this process can load and store directly,
 * else size 0 and a NULL base (so an MPI 4 code can ask any window, and one that asks a
 * window gpuic maps gets load/store access).
 */
int ompi_osc_gpuic_win_shared_query(struct ompi_win_t *win, int rank, size_t *size,
                                    int *disp_unit, void *baseptr)
{
    ompi_osc_gpuic_module_t *module = ompi_osc_gpuic_module(win);
    int n = ompi_comm_size(module->comm), i;
    void *mapped;

    if (rank == MPI_PROC_NULL) {
        /* the lowest rank whose memory is there (size > 0 and reachable) */
        for (i = 0, rank = 0; i < n; ++i) {
            if (module->peers[i].win.size > 0 &&
                (module->flavor == MPI_WIN_FLAVOR_SHARED ||
                 ompi_osc_gpuic_shared_mapping(module, i) != NULL)) {
                rank = i;
                break;
            }
        }
    }
    if (rank < 0 || rank >= n) {
        return MPI_ERR_RANK;
    }
    *disp_unit = module->peers[rank].disp_unit;
    if (module->flavor != MPI_WIN_FLAVOR_SHARED) {
        mapped = ompi_osc_gpuic_shared_mapping(module, rank);
        *size = mapped != NULL ? module->peers[rank].win.size : 0;
        *(void **)baseptr = mapped;
        return OMPI_SUCCESS;
    }
    *size = module->peers[rank].win.size;
    *(void **)baseptr = module->shm_seg != NULL && *size > 0
                            ? module->shm_seg + module->shm_off[rank]
                            : NULL;
    return OMPI_SUCCESS;
}
