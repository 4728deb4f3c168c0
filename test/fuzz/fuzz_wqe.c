/*
 * libFuzzer harness for the consumer side of a WQE: arbitrary bytes are laid into a small
 * ring (tagged blocks, each a head or a continuation), drained with gpuic_ring_peek(), decoded with
 * gpuic_wqe_decode() and checked against a key table, as the proxy does before it touches
 * memory.  Anything the decoder and the key table accept must be self-consistent: the access
 * lies inside a registered region and an inline payload inside the WQE copy.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuic_keytable.h"
#include "gpuic_log.h"
#include "gpuic_ring.h"
#include "gpuic_wqe.h"

#define RING_SLOTS 4

static gpuic_keytable_t *keys;
static uint32_t key_list[2];
static const gpuic_keytable_entry_t regions[2] = {
    {(gpuic_ep_t *)0x10, (gpuic_rkey_t *)0x20, 0x10000, 4096, 0},
    {(gpuic_ep_t *)0x10, (gpuic_rkey_t *)0x28, 0xfffffffffffff000ull, 4095, 1},
};

static void setup(void)
{
    gpuic_log_set_level(0);
    if (gpuic_keytable_create(4, &keys) != GPUIC_OK) {
        abort();
    }
    for (int i = 0; i < 2; ++i) {
        if (gpuic_keytable_insert(keys, &regions[i], &key_list[i]) != GPUIC_OK) {
            abort();
        }
    }
}

/* Checks one decoded WQE the way the proxy would. */
static void check(const gpuic_wqe_t *copy, unsigned nbb, const gpuic_wqe_desc_t *d)
{
    const gpuic_keytable_entry_t *e;
    uint64_t len = d->len;

    if (d->opcode == GPUIC_WQE_OP_ATOMIC_FA || d->opcode == GPUIC_WQE_OP_ATOMIC_CS) {
        len = 8;
    }
    if (d->nbb > nbb || d->nbb > GPUIC_WQE_MAX_BB) {
        abort();
    }
    if (d->inline_data != NULL &&
        (d->inline_data < copy->bytes ||
         d->inline_data + d->len > copy->bytes + (size_t)nbb * GPUIC_WQE_BB_SIZE)) {
        abort(); /* an inline payload read past the WQE copy */
    }
    /* keys start at a random generation, so the fuzzer would almost never guess one: the
     * rkey's low bit picks a live key, and the bounds checks get exercised either way */
    if (d->ds >= 2 && (gpuic_keytable_lookup(keys, d->rkey, d->raddr, len, &e) == GPUIC_OK ||
                       gpuic_keytable_lookup(keys, key_list[d->rkey & 1], d->raddr, len, &e) ==
                           GPUIC_OK)) {
        if (d->raddr < e->base || d->raddr - e->base + len > e->len) {
            abort(); /* accepted an access outside the region */
        }
        /* touch the region bounds as the proxy would trust them */
        volatile uint8_t sink = d->inline_data != NULL && d->len ? d->inline_data[d->len - 1] : 0;
        (void)sink;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    static uint64_t mem[1024] __attribute__((aligned(64)));
    gpuic_ring_t *ring;
    gpuic_wqe_t copy;
    uint64_t seq;
    unsigned nbb, nslots, guard = 0;

    if (!ready) {
        setup();
        ready = 1;
    }
    if (size < 1 || gpuic_ring_create_tagged_at(mem, sizeof(mem), RING_SLOTS, 0, &ring) !=
                        GPUIC_OK) {
        return 0;
    }
    /* first byte: which slots are WQE heads (bit clear) or continuations (bit set) */
    nslots = (unsigned)((size - 1 + GPUIC_WQE_BB_SIZE - 1) / GPUIC_WQE_BB_SIZE);
    if (nslots > RING_SLOTS) {
        nslots = RING_SLOTS;
    }
    for (unsigned s = 0; s < nslots; ++s) {
        size_t off = 1 + (size_t)s * GPUIC_WQE_BB_SIZE;
        size_t n = size - off < GPUIC_WQE_BB_SIZE ? size - off : GPUIC_WQE_BB_SIZE;
        uint32_t block[GPUIC_RING_TAGGED_WORDS] = {0}, tag = gpuic_ring_tag(s, (data[0] >> s) & 1);

        memcpy(block, data + off, n);
        for (unsigned i = 0; i < GPUIC_RING_TAGGED_WORDS; ++i) {
            ring->tagged[s * GPUIC_RING_TAGGED_WORDS + i] = gpuic_ring_tagged_word(tag, block[i]);
        }
    }
    while ((nbb = gpuic_ring_peek(ring, nslots, &copy, &seq)) != 0 && guard++ < RING_SLOTS) {
        gpuic_wqe_desc_t d;

        if (gpuic_wqe_decode(&copy, nbb, &d) == GPUIC_OK) {
            check(&copy, nbb, &d);
        }
        gpuic_ring_take(ring, nbb);
    }
    if (gpuic_ring_read_index(ring) != nslots) {
        abort(); /* the consumer must drain every published slot */
    }
    return 0;
}
