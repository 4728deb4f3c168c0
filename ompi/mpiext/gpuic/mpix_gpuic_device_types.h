/*
 * mpix_gpuic_device_types.h - the device-side description of a gpuic window (plain C, shared
 * by the host library that builds it and the device code that reads it).
 *
 * A kernel receives an MPIX_Win_device (a device pointer to this structure) from
 * MPIX_Win_get_device_handle() and passes it to the MPIX_*_device calls of
 * mpix_gpuic_device.cuh.  Its fields are read-only for device code except *error_word.
 */
#ifndef MPIX_GPUIC_DEVICE_TYPES_H
#define MPIX_GPUIC_DEVICE_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** "gpuidev" followed by the layout version (1). */
#define MPIX_GPUIC_DEVICE_MAGIC 0x6770756964657601ULL

/** How device code reaches one target's window. */
typedef enum MPIX_Gpuic_device_path {
    MPIX_GPUIC_DEVICE_PATH_NONE = 0, /**< not reachable from device code (remote host memory) */
    MPIX_GPUIC_DEVICE_PATH_P2P = 1   /**< loads and stores through a device mapping (CUDA IPC,
                                          or the calling process's own memory) */
} MPIX_Gpuic_device_path;

/** One target as device code sees it. */
typedef struct MPIX_Gpuic_device_peer {
    uint64_t base;      /**< device address of the target's window start (0: none) */
    uint64_t size;      /**< bytes */
    int32_t  disp_unit; /**< the target's displacement unit */
    int32_t  path;      /**< MPIX_Gpuic_device_path */
    uint32_t flags;     /**< MPIX_GPUIC_DEVICE_PEER_* */
    uint32_t reserved;
} MPIX_Gpuic_device_peer;

/** The target's memory is on the calling process's own GPU: device-scope ordering suffices. */
#define MPIX_GPUIC_DEVICE_PEER_SAME_GPU 0x1u

/** The device handle's structure. */
typedef struct MPIX_Gpuic_device_win {
    uint64_t magic;       /**< MPIX_GPUIC_DEVICE_MAGIC while the handle is valid */
    int32_t  rank;        /**< the calling process's rank in the window */
    int32_t  nranks;      /**< processes in the window */
    /** An error a device call met (an MPI error class), 0 when none: pinned host memory
     *  mapped into the device (plain stores, no atomics); the host reports it at its next
     *  synchronization call and clears it. */
    uint32_t *error_word;
    uint32_t flags;       /**< MPIX_GPUIC_DEVICE_WIN_* */
    uint32_t reserved;
    MPIX_Gpuic_device_peer peers[]; /**< nranks entries, by rank */
} MPIX_Gpuic_device_win;

/** Every reachable target is on the calling process's own GPU. */
#define MPIX_GPUIC_DEVICE_WIN_ALL_SAME_GPU 0x1u

/** What kernels receive: a device pointer to the window's description. */
typedef MPIX_Gpuic_device_win *MPIX_Win_device;

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_DEVICE_TYPES_H */
