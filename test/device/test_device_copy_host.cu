/*
 * The device API's copy routines (gpuic_dev_copy_team, gpuic_dev_copy with its path for a word
 * or two, and a single thread's 8-byte get, gpuic_dev_load_word + gpuic_dev_store_word;
 * mpix_gpuic_device.cuh) run on the host:
 * the members of a team (one thread, a warp, a block of 96 or 1024) one after the other, for
 * sizes 0..300 at every origin and target offset 0..17, and for large sizes at skewed offsets
 * (the unrolled loop and its remainder).  Every byte of the target range must be the origin's
 * and every byte around it keep its guard value.  No GPU needed; built by nvcc, run by
 * test/unit/device_copy_host.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix_gpuic_device.cuh"

#define GUARD 0xee
#define LEAD 64 /* guard bytes before the largest offset */
#define WORD_TEAM 0xffffffffu /* "team" of a single thread's 8-byte get: the word whole */

static long failures;

/* Copies @p bytes from src + soff to dst + doff with a team of @p stride members, then checks
 * the whole dst buffer of @p cap bytes. */
template <int UNROLL>
static void check_copy(char *dst, const char *src, size_t cap, size_t bytes, size_t soff,
                       size_t doff, unsigned stride)
{
    memset(dst, GUARD, cap);
    if (stride == 0) { /* "team of 0": a single thread's gpuic_dev_copy(), small-word path */
        gpuic_dev_copy(dst + LEAD + doff, src + LEAD + soff, bytes, 0, 1);
    }
    if (stride == WORD_TEAM) { /* bytes is 8 */
        gpuic_dev_store_word(dst + LEAD + doff, gpuic_dev_load_word(src + LEAD + soff));
    }
    for (unsigned m = 0; stride != WORD_TEAM && m < stride; ++m) {
        gpuic_dev_copy_team<UNROLL>(dst + LEAD + doff, src + LEAD + soff, bytes, m, stride);
    }
    for (size_t i = 0; i < cap; ++i) {
        bool inside = i >= LEAD + doff && i < LEAD + doff + bytes;
        unsigned char want = inside ? (unsigned char)src[i - doff + soff] : GUARD;
        if ((unsigned char)dst[i] != want) {
            if (failures < 10) {
                fprintf(stderr, "size %zu, origin offset %zu, target offset %zu, team of %u, "
                        "unroll %d: byte %ld is %#x, expected %#x\n", bytes, soff, doff, stride,
                        UNROLL, (long)i - (long)(LEAD + doff), (unsigned char)dst[i], want);
            }
            failures++;
            return;
        }
    }
}

int main(void)
{
    const size_t large[] = {65536 + 13, (1u << 20) + 13, 100000 + 7, 262144 + 1, 300000};
    const size_t offs[][2] = {{0, 0}, {1, 0}, {0, 1}, {3, 3}, {8, 0}, {4, 12}, {2, 6}, {15, 1}};
    const unsigned teams[] = {0, 1, 32, 96};
    size_t cap = LEAD + (1u << 20) + 13 + 2 * LEAD;
    char *src, *dst;
    long cases = 0;

    /* 16-byte aligned buffers, as cudaMalloc gives */
    if (posix_memalign((void **)&src, 256, cap) || posix_memalign((void **)&dst, 256, cap)) {
        return 1;
    }
    for (size_t i = 0; i < cap; ++i) {
        src[i] = (char)(i * 131 + (i >> 8) * 7 + 1);
    }
    for (size_t bytes = 0; bytes <= 300; ++bytes) {
        for (size_t soff = 0; soff < 18; ++soff) {
            for (size_t doff = 0; doff < 18; ++doff) {
                for (unsigned t = 0; t < sizeof(teams) / sizeof(teams[0]); ++t) {
                    check_copy<1>(dst, src, LEAD + 320 + LEAD, bytes, soff, doff, teams[t]);
                    check_copy<GPUIC_DEV_GET_UNROLL>(dst, src, LEAD + 320 + LEAD, bytes, soff,
                                                      doff, teams[t]);
                    cases += 2;
                }
            }
        }
    }
    for (size_t soff = 0; soff < 18; ++soff) {
        for (size_t doff = 0; doff < 18; ++doff) {
            check_copy<1>(dst, src, LEAD + 320 + LEAD, 8, soff, doff, WORD_TEAM);
            cases++;
        }
    }
    for (size_t k = 0; k < sizeof(large) / sizeof(large[0]); ++k) {
        for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); ++o) {
            size_t soff = offs[o][0], doff = offs[o][1];

            check_copy<GPUIC_DEV_GET_UNROLL>(dst, src, cap, large[k], soff, doff, 1024);
            check_copy<GPUIC_DEV_GET_UNROLL>(dst, src, cap, large[k], soff, doff, 32);
            check_copy<1>(dst, src, cap, large[k], soff, doff, 1);
            check_copy<1>(dst, src, cap, large[k], soff, doff, 0);
            cases += 4;
        }
    }
    printf("test_device_copy_host: %s (%ld cases, %ld failed)\n", failures ? "FAIL" : "PASS",
           cases, failures);
    free(src);
    free(dst);
    return failures ? 1 : 0;
}
