/*
 * gpuic_mem.h - host allocation helpers of libgpuic (internal, not installed).
 */
#ifndef GPUIC_MEM_H
#define GPUIC_MEM_H

#include <stdlib.h>

/**
 * aligned_alloc() with the size rounded up to a multiple of the alignment, as C11 requires
 * (sanitizers and some libcs reject other sizes).  Free with free().
 */
static inline void *gpuic_mem_aligned(size_t align, size_t size)
{
    return aligned_alloc(align, (size + align - 1) / align * align);
}

#endif /* GPUIC_MEM_H */
