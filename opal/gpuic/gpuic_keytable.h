/*
 * gpuic_keytable.h - a window's table of remotely accessible regions, the meaning of a WQE's
 * rkey field on the proxy path.
 *
 * A WQE does not carry a transport key the consumer would trust.  Its 32-bit rkey names a
 * table entry (low index_bits bits) and that entry's generation (the other bits).  The
 * consumer checks the index, the generation, that the entry is live and that the whole access
 * lies inside the region before it touches memory.  Removing an entry bumps its generation, so
 * a WQE built with the old key is refused even after the slot is reused.  Each table starts
 * its generations at a random value, so a key from one table (or one run) is unlikely to be
 * valid in another.
 */
#ifndef GPUIC_KEYTABLE_H
#define GPUIC_KEYTABLE_H

#include <stdint.h>

#include "gpuic_ep.h"
#include "gpuic_mr.h"
#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuic_keytable gpuic_keytable_t;

/** How the consumer reaches a region's data (gpuic_keytable_entry_t.direct). */
typedef enum gpuic_keytable_direct {
    GPUIC_KEYTABLE_DIRECT_NONE = 0, /**< through ep and rkey (UCX) */
    /** Mapped in this process, device memory (e.g. a same-node GPU's window through CUDA
     *  IPC): the consumer moves data with its copy function; atomics on it are refused
     *  (device memory cannot be updated atomically from the host). */
    GPUIC_KEYTABLE_DIRECT_COPY = 1,
    /** Mapped in this process, host memory (e.g. a same-node peer's window through UCX's
     *  shared-memory mapping): the consumer moves data with CPU loads and stores; atomics
     *  as @c cpu_atomics says. */
    GPUIC_KEYTABLE_DIRECT_HOST = 2
} gpuic_keytable_direct_t;

/** A registered remote region as the consumer needs it. */
typedef struct gpuic_keytable_entry {
    gpuic_ep_t   *ep;     /**< endpoint to the region's owner (may be NULL when direct) */
    gpuic_rkey_t *rkey;   /**< unpacked UCX key of the region (owned by the caller; may be
                               NULL when direct) */
    uint64_t     base;    /**< address of the region's first byte: the owner's address, or
                               this process's mapping of the region when direct */
    uint64_t     len;     /**< region length in bytes */
    uint32_t     target;  /**< target number (completion counter index) the region belongs to */
    /** A gpuic_keytable_direct_t: the region is mapped in this process at @c base and data
     *  moves through the mapping instead of ep and rkey. */
    int          direct;
    /** GPUIC_KEYTABLE_DIRECT_HOST only: atomics, accumulates and signal updates on the region
     *  are CPU atomic instructions on the mapping.  Set it only where every other agent that
     *  updates the region atomically uses CPU atomics too (e.g. the host component on windows
     *  every process maps): CPU atomics are not atomic with a NIC's.  When 0 they go through
     *  ep and rkey, and are refused where there are none. */
    int          cpu_atomics;
    /** Direct entries that also have ep and rkey: the owner's address of the region's first
     *  byte, which UCX operations name (the WQE names addresses in the mapping). */
    uint64_t     remote_base;
    /** GPUIC_KEYTABLE_DIRECT_NONE only: the region is device memory.  Data moves through ep
     *  and rkey as for host memory; atomics, accumulates and signal adds take no UCX atomic
     *  (a transport that emulates atomics in software would apply them with the owner's CPU,
     *  not atomically with the GPU's atomics): they are remote calls (gpuic_call.h) on ep,
     *  which the owner executes on its GPU, so ep must reach a worker the owner serves. */
    int          device_memory;
} gpuic_keytable_entry_t;

/**
 * Creates a table of @p size entries (1 .. 65536).
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM or GPUIC_ERR_NO_MEMORY.
 */
gpuic_status_t gpuic_keytable_create(uint32_t size, gpuic_keytable_t **kt_p);

/** Destroys a table (the keys and endpoints its entries name are the caller's). */
void gpuic_keytable_destroy(gpuic_keytable_t *kt);

/**
 * Adds a region; *key_p receives the key WQEs put in their rkey field.  Thread-safe.
 * @return GPUIC_OK, GPUIC_ERR_INVALID_PARAM (no ep or rkey and not direct, an unknown
 *         direct kind, cpu_atomics on an entry that is not GPUIC_KEYTABLE_DIRECT_HOST, or
 *         base + len overflows) or GPUIC_ERR_NO_RESOURCE (table full).
 */
gpuic_status_t gpuic_keytable_insert(gpuic_keytable_t *kt, const gpuic_keytable_entry_t *entry,
                                     uint32_t *key_p);

/**
 * Removes the region named by @p key and bumps its generation, so the key stops validating.
 * Call it once no WQE carrying the key is outstanding (after a flush); thread-safe.
 * @return GPUIC_OK or GPUIC_ERR_BAD_KEY.
 */
gpuic_status_t gpuic_keytable_remove(gpuic_keytable_t *kt, uint32_t key);

/** Whether the @p len bytes at @p raddr lie wholly inside @p e's region (overflow-safe:
 *  raddr + len is never computed). */
static inline int gpuic_keytable_covers(const gpuic_keytable_entry_t *e, uint64_t raddr,
                                        uint64_t len)
{
    return raddr >= e->base && raddr - e->base <= e->len && len <= e->len - (raddr - e->base);
}

/**
 * Validates an access of @p len bytes at @p raddr under @p key and returns its entry.
 * Overflow-safe: raddr + len is never computed.
 * @return GPUIC_OK, GPUIC_ERR_BAD_KEY (index out of range, entry not live, stale generation)
 *         or GPUIC_ERR_OUT_OF_RANGE (not wholly inside the region).
 */
gpuic_status_t gpuic_keytable_lookup(const gpuic_keytable_t *kt, uint32_t key, uint64_t raddr,
                                     uint64_t len, const gpuic_keytable_entry_t **entry_p);

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_KEYTABLE_H */
