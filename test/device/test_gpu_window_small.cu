/*
 * Host accumulate-family calls on 8- and 16-bit elements of a GPU window, where the elements
 * of different ranks share 32-bit words, both window flavors, origin and result buffers in
 * host and in device memory, every rank into every rank at once in one lock_all epoch:
 *   - byte b of region A (MPI_CHAR) belongs to rank b % nranks: ROUNDS MPI_Accumulate of +1
 *     from that rank into byte b of every target (neighbours update the other bytes of the
 *     same word meanwhile);
 *   - short s of region B (MPI_SHORT): the same with MPI_Fetch_and_op (MPI_SUM, +3), whose
 *     fetched values on one element must be 0, 3, 6, ... in order (one origin per element);
 *   - byte c of region C (MPI_UNSIGNED_CHAR) is one counter per target, incremented ROUNDS
 *     times by every rank with a retried MPI_Compare_and_swap;
 *   - region D (MPI_SIGNED_CHAR) with a vector target type of stride 2 (MPI_BOR of a rank bit):
 *     every even byte ends with all ranks' bits, every odd byte untouched.
 * After the epoch and a barrier every byte and short of the window must hold exactly what
 * was added, and nothing else may have changed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"

#define ROUNDS 20
#define A_OFF 0    /* bytes */
#define A_LEN 64
#define B_OFF 64   /* shorts start here (bytes) */
#define B_LEN 32   /* shorts */
#define C_OFF 128
#define D_OFF 192
#define D_LEN 32   /* even bytes updated: 32 of 64 */
#define WIN_BYTES 256

static int rank, nranks;

/* A buffer of @p n bytes in host or device memory holding @p bytes. */
static void *operand(int odev, const void *bytes, size_t n)
{
    void *p;

    if (odev) {
        CUDA_CHECK(cudaMalloc(&p, n));
        CUDA_CHECK(cudaMemcpy(p, bytes, n, cudaMemcpyHostToDevice));
    } else {
        p = malloc(n);
        memcpy(p, bytes, n);
    }
    return p;
}

static void operand_read(int odev, void *dst, const void *p, size_t n)
{
    if (odev) {
        CUDA_CHECK(cudaMemcpy(dst, p, n, cudaMemcpyDeviceToHost));
    } else {
        memcpy(dst, p, n);
    }
}

static void operand_write(int odev, void *p, const void *src, size_t n)
{
    if (odev) {
        CUDA_CHECK(cudaMemcpy(p, src, n, cudaMemcpyHostToDevice));
    } else {
        memcpy(p, src, n);
    }
}

static void operand_free(int odev, void *p)
{
    if (odev) {
        CUDA_CHECK(cudaFree(p));
    } else {
        free(p);
    }
}

static void run(int flavor, int odev)
{
    void *dev = NULL, *owned = NULL;
    unsigned char win_bytes[WIN_BYTES], one_c = 1, bit = (unsigned char)(1u << (rank % 8));
    short three = 3, got_s;
    unsigned char got_c, cur, next;
    unsigned char *ones = (unsigned char *)malloc(D_LEN);
    void *o_one, *o_three, *o_res, *o_cur, *o_next, *o_bits;
    MPI_Datatype every2;
    MPI_Win win;
    int t, k, i, rc;

    rc = device_test_gpu_window(flavor, WIN_BYTES, 1, &dev, &owned, &win);
    CHECK(rc == MPI_SUCCESS);
    if (rc != MPI_SUCCESS) {
        return;
    }
    memset(ones, bit, D_LEN);
    o_one = operand(odev, &one_c, 1);
    o_three = operand(odev, &three, 2);
    o_res = operand(odev, &got_s, 2);
    o_cur = operand(odev, &cur, 1);
    o_next = operand(odev, &cur, 1);
    o_bits = operand(odev, ones, D_LEN);
    MPI_Type_vector(D_LEN, 1, 2, MPI_SIGNED_CHAR, &every2);
    MPI_Type_commit(&every2);

    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS);
    for (k = 0; k < ROUNDS; ++k) {
        for (t = 0; t < nranks; ++t) {
            for (i = rank; i < A_LEN; i += nranks) {
                CHECK(MPI_Accumulate(o_one, 1, MPI_CHAR, t, A_OFF + i, 1, MPI_CHAR, MPI_SUM,
                                     win) == MPI_SUCCESS);
            }
            for (i = rank; i < B_LEN; i += nranks) {
                CHECK(MPI_Fetch_and_op(o_three, o_res, MPI_SHORT, t, B_OFF + 2 * i, MPI_SUM,
                                       win) == MPI_SUCCESS);
                operand_read(odev, &got_s, o_res, 2);
                if (got_s != 3 * k) {
                    fprintf(stderr, "rank %d: fetch_and_op on short %d of rank %d round %d "
                            "fetched %d, want %d\n", rank, i, t, k, got_s, 3 * k);
                    CHECK(got_s == 3 * k);
                }
            }
            /* one increment of the target's counter byte, retried until it wins */
            CHECK(MPI_Fetch_and_op(NULL, o_cur, MPI_UNSIGNED_CHAR, t, C_OFF, MPI_NO_OP, win) ==
                  MPI_SUCCESS);
            operand_read(odev, &cur, o_cur, 1);
            for (i = 0; i < 1000000; ++i) {
                next = (unsigned char)(cur + 1);
                operand_write(odev, o_next, &next, 1);
                operand_write(odev, o_cur, &cur, 1);
                CHECK(MPI_Compare_and_swap(o_next, o_cur, o_res, MPI_UNSIGNED_CHAR, t, C_OFF,
                                           win) == MPI_SUCCESS);
                operand_read(odev, &got_c, o_res, 1);
                if (got_c == cur) {
                    break;
                }
                if (i == 10000) {
                    fprintf(stderr, "rank %d: compare-and-swap on rank %d's counter failed 10000 "
                            "times (last fetched %d)\n", rank, t, got_c);
                }
                cur = got_c;
            }
            CHECK(i < 1000000);
            if (k == 0) {
                CHECK(MPI_Accumulate(o_bits, D_LEN, MPI_SIGNED_CHAR, t, D_OFF, 1, every2, MPI_BOR,
                                     win) == MPI_SUCCESS);
            }
        }
    }
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);

    CUDA_CHECK(cudaMemcpy(win_bytes, dev, WIN_BYTES, cudaMemcpyDeviceToHost));
    for (i = 0; i < WIN_BYTES; ++i) {
        int want = 0;

        if (i >= A_OFF && i < A_OFF + A_LEN) {
            want = ROUNDS; /* from its one owner */
        } else if (i >= B_OFF && i < B_OFF + 2 * B_LEN) {
            short s = (short)(3 * ROUNDS);

            want = ((unsigned char *)&s)[(i - B_OFF) % 2];
        } else if (i == C_OFF) {
            want = (unsigned char)(ROUNDS * nranks);
        } else if (i >= D_OFF && i < D_OFF + 2 * D_LEN && (i - D_OFF) % 2 == 0) {
            int r;

            for (r = 0; r < nranks; ++r) want |= 1 << (r % 8);
        }
        if (win_bytes[i] != want) {
            fprintf(stderr, "rank %d: flavor %d, %s origin: byte %d is %d, want %d\n", rank,
                    flavor, odev ? "device" : "host", i, win_bytes[i], want);
            CHECK(win_bytes[i] == want);
            break;
        }
    }
    MPI_Type_free(&every2);
    operand_free(odev, o_one);
    operand_free(odev, o_three);
    operand_free(odev, o_res);
    operand_free(odev, o_cur);
    operand_free(odev, o_next);
    operand_free(odev, o_bits);
    free(ones);
    CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
    if (owned != NULL) CUDA_CHECK(cudaFree(owned));
}

int main(int argc, char **argv)
{
    int flavors[2] = {MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_CREATE}, f, odev;

    if (!device_test_init(&argc, &argv, "test_gpu_window_small", &rank, &nranks)) {
        return 77;
    }
    for (f = 0; f < 2; ++f) {
        for (odev = 0; odev < 2; ++odev) {
            run(flavors[f], odev);
            /* where a hang stopped it shows in the log */
            fprintf(stderr, "[rank %d] %s window, %s operands: done\n", rank,
                    f == 0 ? "allocated" : "created", odev ? "device" : "host");
        }
    }
    return mpi_test_finish("test_gpu_window_small");
}
