/*
 * State blocks of windows, from a pool: blocks are carved from chunks of shared memory that UCX
 * allocates (so that same-node peers map them), go back to the pool when their window is freed
 * and serve later windows; peers unpack the key of a chunk once per process and chunk.  Window
 * creation then makes no shared-memory segment and attaches none (one segment per window and
 * one attach per peer and window otherwise).  Chunks and keys live until the component's
 * finalize: a peer may keep the key of a chunk as long as the chunk may serve a window.
 *
 * Blocks come in power-of-two sizes from OMPI_OSC_GPUIC_STATE_MIN_CLASS up; each size keeps a
 * list of free blocks, linked through their first word.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "osc_gpuic.h"

#define OMPI_OSC_GPUIC_STATE_MIN_CLASS 8   /* 256-byte blocks */
#define OMPI_OSC_GPUIC_STATE_CLASSES   48
#define OMPI_OSC_GPUIC_STATE_CHUNK     (256u * 1024u)

typedef struct ompi_osc_gpuic_state_chunk {
    gpuic_mr_t *mr;
    char       *base;
    size_t     size, used;
} ompi_osc_gpuic_state_chunk_t;

/* A peer's chunk, as the key of the key cache. */
typedef struct ompi_osc_gpuic_state_key {
    gpuic_ep_t *ep;
    uint64_t   chunk;
} ompi_osc_gpuic_state_key_t;

static struct {
    pthread_mutex_t              lock;
    ompi_osc_gpuic_state_chunk_t *chunk;
    int                          n, max;
    void                         *free[OMPI_OSC_GPUIC_STATE_CLASSES];
    opal_hash_table_t            keys; /* ompi_osc_gpuic_state_key_t -> gpuic_rkey_t * */
    bool                         keys_init;
} ompi_osc_gpuic_state_pool = {PTHREAD_MUTEX_INITIALIZER};

/* The size class of a block of @p size bytes. */
static int ompi_osc_gpuic_state_class(size_t size)
{
    int c = OMPI_OSC_GPUIC_STATE_MIN_CLASS;

    while (c < OMPI_OSC_GPUIC_STATE_CLASSES - 1 && ((size_t)1 << c) < size) {
        ++c;
    }
    return c;
}

/* A new block of class @p c from the last chunk, or from a new one. Under the pool's lock. */
static int ompi_osc_gpuic_state_carve(int c, ompi_osc_gpuic_state_chunk_t **chunk_p,
                                      void **block_p)
{
    int last = ompi_osc_gpuic_state_pool.n - 1;
    ompi_osc_gpuic_state_chunk_t *ch = last >= 0 ? &ompi_osc_gpuic_state_pool.chunk[last] : NULL;
    size_t bytes = (size_t)1 << c;
    gpuic_status_t status;

    if (ch == NULL || ch->size - ch->used < bytes) {
        size_t size = bytes > OMPI_OSC_GPUIC_STATE_CHUNK ? bytes : OMPI_OSC_GPUIC_STATE_CHUNK;
        gpuic_mr_t *mr = NULL;

        if (ompi_osc_gpuic_state_pool.n == ompi_osc_gpuic_state_pool.max) {
            int max = ompi_osc_gpuic_state_pool.max == 0 ? 8 : 2 * ompi_osc_gpuic_state_pool.max;
            void *p = realloc(ompi_osc_gpuic_state_pool.chunk, sizeof(*ch) * (size_t)max);

            if (p == NULL) {
                return MPI_ERR_NO_MEM;
            }
            ompi_osc_gpuic_state_pool.chunk = p;
            ompi_osc_gpuic_state_pool.max = max;
        }
        status = gpuic_mr_allocate(mca_osc_gpuic_component.ctx, size, &mr);
        if (status != GPUIC_OK) {
            return ompi_osc_gpuic_error(status);
        }
        ch = &ompi_osc_gpuic_state_pool.chunk[ompi_osc_gpuic_state_pool.n++];
        ch->mr = mr;
        ch->base = gpuic_mr_address(mr);
        ch->size = size;
        ch->used = 0;
    }
    *block_p = ch->base + ch->used;
    ch->used += bytes;
    *chunk_p = ch;
    return OMPI_SUCCESS;
}

int ompi_osc_gpuic_state_block_get(size_t size, gpuic_mr_t **mr_p, void **block_p,
                                   uint64_t *chunk_p)
{
    ompi_osc_gpuic_state_chunk_t *ch = NULL;
    int c = ompi_osc_gpuic_state_class(size), i, rc = OMPI_SUCCESS;
    void *block = NULL;

    pthread_mutex_lock(&ompi_osc_gpuic_state_pool.lock);
    block = ompi_osc_gpuic_state_pool.free[c];
    if (block != NULL) {
        ompi_osc_gpuic_state_pool.free[c] = *(void **)block;
        for (i = 0; i < ompi_osc_gpuic_state_pool.n; ++i) {
            ch = &ompi_osc_gpuic_state_pool.chunk[i];
            if ((char *)block >= ch->base && (char *)block < ch->base + ch->size) {
                break;
            }
        }
    } else {
        rc = ompi_osc_gpuic_state_carve(c, &ch, &block);
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_state_pool.lock);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    *mr_p = ch->mr;
    *block_p = block;
    *chunk_p = (uint64_t)(uintptr_t)ch->base;
    return OMPI_SUCCESS;
}

void ompi_osc_gpuic_state_block_put(void *block, size_t size)
{
    int c = ompi_osc_gpuic_state_class(size);

    if (block == NULL) {
        return;
    }
    pthread_mutex_lock(&ompi_osc_gpuic_state_pool.lock);
    *(void **)block = ompi_osc_gpuic_state_pool.free[c];
    ompi_osc_gpuic_state_pool.free[c] = block;
    pthread_mutex_unlock(&ompi_osc_gpuic_state_pool.lock);
}

int ompi_osc_gpuic_state_rkey_get(gpuic_ep_t *ep, uint64_t chunk, const void *blob,
                                  gpuic_rkey_t **rkey_p)
{
    ompi_osc_gpuic_state_key_t key;
    gpuic_rkey_t *rkey = NULL;
    void *value = NULL;
    gpuic_status_t status = GPUIC_OK;
    int rc = OMPI_SUCCESS;

    memset(&key, 0, sizeof(key));
    key.ep = ep;
    key.chunk = chunk;
    pthread_mutex_lock(&ompi_osc_gpuic_state_pool.lock);
    if (!ompi_osc_gpuic_state_pool.keys_init) {
        OBJ_CONSTRUCT(&ompi_osc_gpuic_state_pool.keys, opal_hash_table_t);
        if (opal_hash_table_init(&ompi_osc_gpuic_state_pool.keys, 64) != OPAL_SUCCESS) {
            OBJ_DESTRUCT(&ompi_osc_gpuic_state_pool.keys);
            pthread_mutex_unlock(&ompi_osc_gpuic_state_pool.lock);
            return MPI_ERR_NO_MEM;
        }
        ompi_osc_gpuic_state_pool.keys_init = true;
    }
    if (opal_hash_table_get_value_ptr(&ompi_osc_gpuic_state_pool.keys, &key, sizeof(key),
                                      &value) == OPAL_SUCCESS) {
        rkey = value;
    } else {
        status = gpuic_rkey_unpack(ep, blob, &rkey);
        if (status == GPUIC_OK &&
            opal_hash_table_set_value_ptr(&ompi_osc_gpuic_state_pool.keys, &key, sizeof(key),
                                          rkey) != OPAL_SUCCESS) {
            gpuic_rkey_destroy(rkey);
            rkey = NULL;
            rc = MPI_ERR_NO_MEM;
        }
    }
    pthread_mutex_unlock(&ompi_osc_gpuic_state_pool.lock);
    if (status != GPUIC_OK) {
        return ompi_osc_gpuic_error(status);
    }
    *rkey_p = rkey;
    return rc;
}

void ompi_osc_gpuic_state_pool_finalize(void)
{
    void *key = NULL, *value = NULL, *node = NULL;
    size_t key_size = 0;
    int i, rc;

    pthread_mutex_lock(&ompi_osc_gpuic_state_pool.lock);
    if (ompi_osc_gpuic_state_pool.keys_init) {
        rc = opal_hash_table_get_first_key_ptr(&ompi_osc_gpuic_state_pool.keys, &key, &key_size,
                                               &value, &node);
        while (rc == OPAL_SUCCESS) {
            gpuic_rkey_destroy(value);
            rc = opal_hash_table_get_next_key_ptr(&ompi_osc_gpuic_state_pool.keys, &key,
                                                  &key_size, &value, node, &node);
        }
        OBJ_DESTRUCT(&ompi_osc_gpuic_state_pool.keys);
        ompi_osc_gpuic_state_pool.keys_init = false;
    }
    for (i = 0; i < ompi_osc_gpuic_state_pool.n; ++i) {
        gpuic_mr_deregister(ompi_osc_gpuic_state_pool.chunk[i].mr);
    }
    free(ompi_osc_gpuic_state_pool.chunk);
    ompi_osc_gpuic_state_pool.chunk = NULL;
    ompi_osc_gpuic_state_pool.n = ompi_osc_gpuic_state_pool.max = 0;
    memset(ompi_osc_gpuic_state_pool.free, 0, sizeof(ompi_osc_gpuic_state_pool.free));
    pthread_mutex_unlock(&ompi_osc_gpuic_state_pool.lock);
}
