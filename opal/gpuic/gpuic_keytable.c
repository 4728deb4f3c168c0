#include "gpuic_keytable.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "gpuic_log.h"
#include "gpuic_mem.h"

/* state word of a slot: generation << 1 | live */
#define GPUIC_KEYTABLE_LIVE 1u

typedef struct gpuic_keytable_slot {
    uint32_t state;                /* written with release, read with acquire */
    gpuic_keytable_entry_t entry;  /* written only while the slot is not live */
} gpuic_keytable_slot_t;

struct gpuic_keytable {
    pthread_mutex_t lock;  /* serialises insert and remove; lookups take no lock */
    uint32_t size;
    uint32_t index_bits;
    uint32_t gen_mask;     /* generations are 32 - index_bits wide */
    gpuic_keytable_slot_t *slots;
};

static uint32_t gpuic_keytable_random(void)
{
    uint32_t r = 0;
    struct timespec ts;
    int fd;

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r)) {
        return r;
    }
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = read(fd, &r, sizeof(r));
        close(fd);
        if (got == (ssize_t)sizeof(r)) {
            return r;
        }
    }
    /* No entropy source: still differ between tables and runs, which is all keys rely on. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^ (uint32_t)(uintptr_t)&r;
}

gpuic_status_t gpuic_keytable_create(uint32_t size, gpuic_keytable_t **kt_p)
{
    gpuic_keytable_t *kt;
    uint32_t gen;

    if (size == 0 || size > 65536) {
        gpuic_log(GPUIC_LOG_DEBUG, "key table size %u outside [1, 65536]", size);
        return GPUIC_ERR_INVALID_PARAM;
    }
    kt = gpuic_mem_calloc(1, sizeof(*kt));
    if (kt == NULL) {
        return GPUIC_ERR_NO_MEMORY;
    }
    kt->slots = gpuic_mem_calloc(size, sizeof(*kt->slots));
    if (kt->slots == NULL) {
        free(kt);
        return GPUIC_ERR_NO_MEMORY;
    }
    kt->size = size;
    kt->index_bits = 1;
    while ((1u << kt->index_bits) < size) {
        kt->index_bits++;
    }
    kt->gen_mask = (uint32_t)((1ull << (32 - kt->index_bits)) - 1);
    gen = gpuic_keytable_random() & kt->gen_mask;
    for (uint32_t i = 0; i < size; ++i) {
        kt->slots[i].state = gen << 1;
    }
    pthread_mutex_init(&kt->lock, NULL);
    *kt_p = kt;
    return GPUIC_OK;
}

void gpuic_keytable_destroy(gpuic_keytable_t *kt)
{
    if (kt == NULL) {
        return;
    }
    pthread_mutex_destroy(&kt->lock);
    free(kt->slots);
    free(kt);
}

gpuic_status_t gpuic_keytable_insert(gpuic_keytable_t *kt, const gpuic_keytable_entry_t *entry,
                                     uint32_t *key_p)
{
    gpuic_status_t status = GPUIC_ERR_NO_RESOURCE;

    if ((entry->direct == GPUIC_KEYTABLE_DIRECT_NONE &&
         (entry->ep == NULL || entry->rkey == NULL)) ||
        (entry->direct != GPUIC_KEYTABLE_DIRECT_NONE && entry->direct != GPUIC_KEYTABLE_DIRECT_COPY &&
         entry->direct != GPUIC_KEYTABLE_DIRECT_HOST) ||
        (entry->cpu_atomics && entry->direct != GPUIC_KEYTABLE_DIRECT_HOST) ||
        entry->base + entry->len < entry->base) {
        gpuic_log(GPUIC_LOG_DEBUG, "key table insert: bad region");
        return GPUIC_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&kt->lock);
    for (uint32_t i = 0; i < kt->size; ++i) {
        gpuic_keytable_slot_t *slot = &kt->slots[i];
        uint32_t state = __atomic_load_n(&slot->state, __ATOMIC_RELAXED);

        if (state & GPUIC_KEYTABLE_LIVE) {
            continue;
        }
        slot->entry = *entry;
        /* the entry is complete before a lookup can see the slot live */
        __atomic_store_n(&slot->state, state | GPUIC_KEYTABLE_LIVE, __ATOMIC_RELEASE);
        *key_p = ((state >> 1) << kt->index_bits) | i;
        status = GPUIC_OK;
        break;
    }
    pthread_mutex_unlock(&kt->lock);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "key table of %u entries is full", kt->size);
    }
    return status;
}

/* Splits a key; returns the slot or NULL when the index is out of range. */
static gpuic_keytable_slot_t *gpuic_keytable_slot(const gpuic_keytable_t *kt, uint32_t key,
                                                  uint32_t *gen_p)
{
    uint32_t index = key & ((1u << kt->index_bits) - 1);

    *gen_p = key >> kt->index_bits;
    return index < kt->size ? &kt->slots[index] : NULL;
}

gpuic_status_t gpuic_keytable_remove(gpuic_keytable_t *kt, uint32_t key)
{
    gpuic_status_t status = GPUIC_ERR_BAD_KEY;
    gpuic_keytable_slot_t *slot;
    uint32_t gen, state;

    pthread_mutex_lock(&kt->lock);
    slot = gpuic_keytable_slot(kt, key, &gen);
    if (slot != NULL) {
        state = __atomic_load_n(&slot->state, __ATOMIC_RELAXED);
        if (state == ((gen << 1) | GPUIC_KEYTABLE_LIVE)) {
            __atomic_store_n(&slot->state, ((gen + 1) & kt->gen_mask) << 1, __ATOMIC_RELEASE);
            status = GPUIC_OK;
        }
    }
    pthread_mutex_unlock(&kt->lock);
    if (status != GPUIC_OK) {
        gpuic_log(GPUIC_LOG_DEBUG, "key table remove: key 0x%x is not live", key);
    }
    return status;
}

gpuic_status_t gpuic_keytable_lookup(const gpuic_keytable_t *kt, uint32_t key, uint64_t raddr,
                                     uint64_t len, const gpuic_keytable_entry_t **entry_p)
{
    const gpuic_keytable_slot_t *slot;
    const gpuic_keytable_entry_t *e;
    uint32_t gen;

    slot = gpuic_keytable_slot(kt, key, &gen);
    if (slot == NULL ||
        __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) != ((gen << 1) | GPUIC_KEYTABLE_LIVE)) {
        return GPUIC_ERR_BAD_KEY;
    }
    e = &slot->entry;
    if (!gpuic_keytable_covers(e, raddr, len)) {
        return GPUIC_ERR_OUT_OF_RANGE;
    }
    *entry_p = e;
    return GPUIC_OK;
}
