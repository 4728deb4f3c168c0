/*
 * mpix_gpuic_device_types.h - the device-side description of a gpuic window (plain C, shared
 * by the host library that builds it and the device code that reads it).
 *
 * A kernel receives an MPIX_Win_device (a device pointer to this structure) from
 * MPIX_Win_get_device_handle() and passes it to the MPIX_*_device calls of
 * mpix_gpuic_device.cuh.  Its fields are read-only for device code except *error_word.
 * The argument types of those calls (operations, element types, signal updates, conditions)
 * are here too, so that the plain-C checks of mpix_gpuic_device_check.h can name them.
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

/** Predefined operations of MPIX_Accumulate_device and MPIX_Fetch_and_op_device. */
typedef enum MPIX_Device_op {
    MPIX_DEVICE_SUM,
    MPIX_DEVICE_PROD,
    MPIX_DEVICE_MIN,
    MPIX_DEVICE_MAX,
    MPIX_DEVICE_BAND, /**< integer types only */
    MPIX_DEVICE_BOR,  /**< integer types only */
    MPIX_DEVICE_BXOR, /**< integer types only */
    MPIX_DEVICE_LAND, /**< integer types only */
    MPIX_DEVICE_LOR,  /**< integer types only */
    MPIX_DEVICE_LXOR, /**< integer types only */
    MPIX_DEVICE_REPLACE,
    MPIX_DEVICE_NO_OP
} MPIX_Device_op;

/** Predefined element types of the device accumulate calls (MPI_INT32_T ... MPI_DOUBLE). */
typedef enum MPIX_Device_type {
    MPIX_DEVICE_INT32,
    MPIX_DEVICE_UINT32,
    MPIX_DEVICE_INT64,
    MPIX_DEVICE_UINT64,
    MPIX_DEVICE_FLOAT,
    MPIX_DEVICE_DOUBLE
} MPIX_Device_type;

/** How MPIX_Put_signal_device updates the signal word. */
typedef enum MPIX_Device_signal_op {
    MPIX_DEVICE_SIGNAL_SET, /**< word = value */
    MPIX_DEVICE_SIGNAL_ADD  /**< word += value */
} MPIX_Device_signal_op;

/** Conditions of MPIX_Signal_wait_until_device. */
typedef enum MPIX_Device_cmp {
    MPIX_DEVICE_CMP_EQ,
    MPIX_DEVICE_CMP_NE,
    MPIX_DEVICE_CMP_GT,
    MPIX_DEVICE_CMP_GE,
    MPIX_DEVICE_CMP_LT,
    MPIX_DEVICE_CMP_LE
} MPIX_Device_cmp;

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPUIC_DEVICE_TYPES_H */
