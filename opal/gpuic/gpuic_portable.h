/*
 * gpuic_portable.h - what libgpuic's shared headers need to compile both as host C11 and as
 * CUDA device code: the host/device function marker and byte-order conversion.
 *
 * Nothing here calls libc, so the descriptor builders and the ring protocol can be included by
 * .cu files unchanged.
 */
#ifndef GPUIC_PORTABLE_H
#define GPUIC_PORTABLE_H

#include <stdint.h>

/** Marks an inline function callable from host code and, under nvcc, from device code. */
#ifdef __CUDACC__
#define GPUIC_HOST_DEVICE __host__ __device__
#else
#define GPUIC_HOST_DEVICE
#endif

/* Every target gpuic runs on (x86-64, aarch64, NVIDIA GPUs) is little-endian; a big-endian
 * host would have to make these identities, and the static check keeps that from going
 * unnoticed. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpuic assumes a little-endian host"
#endif

/** Converts a 16-bit host value to big-endian (the NIC's byte order) and back. */
static inline GPUIC_HOST_DEVICE uint16_t gpuic_htobe16(uint16_t x)
{
    return (uint16_t)((x >> 8) | (x << 8));
}

/** Converts a 32-bit host value to big-endian and back (the conversion is its own inverse). */
static inline GPUIC_HOST_DEVICE uint32_t gpuic_htobe32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __byte_perm(x, 0, 0x0123);
#else
    return __builtin_bswap32(x);
#endif
}

/** Converts a 64-bit host value to big-endian and back. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_htobe64(uint64_t x)
{
    return ((uint64_t)gpuic_htobe32((uint32_t)x) << 32) | gpuic_htobe32((uint32_t)(x >> 32));
}

/** Big-endian to host, 16 bits. */
static inline GPUIC_HOST_DEVICE uint16_t gpuic_be16toh(uint16_t x)
{
    return gpuic_htobe16(x);
}

/** Big-endian to host, 32 bits. */
static inline GPUIC_HOST_DEVICE uint32_t gpuic_be32toh(uint32_t x)
{
    return gpuic_htobe32(x);
}

/** Big-endian to host, 64 bits. */
static inline GPUIC_HOST_DEVICE uint64_t gpuic_be64toh(uint64_t x)
{
    return gpuic_htobe64(x);
}

#endif /* GPUIC_PORTABLE_H */
