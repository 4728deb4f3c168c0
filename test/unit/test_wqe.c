/*
 * WQE builders and decoder: every builder's output decodes to the fields it was given, and
 * malformed WQEs (unknown opcode, wrong segment count, inline length beyond the WQE, accumulate
 * length not matching count and type, reserved bits set, truncated WQE) are rejected.
 */
#include <stdint.h>
#include <string.h>

#include "gpuic_wqe.h"
#include "unit_test.h"

static const gpuic_wqe_hdr_t hdr = {.wqe_index = 0x1234, .target = 77,
                                    .flags = GPUIC_WQE_CTRL_CQ_UPDATE};

static void check_roundtrip(void)
{
    gpuic_wqe_t w;
    gpuic_wqe_desc_t d;
    uint8_t payload[GPUIC_WQE_MAX_INLINE];

    for (unsigned i = 0; i < sizeof(payload); ++i) {
        payload[i] = (uint8_t)(i * 7 + 1);
    }
    CHECK(gpuic_wqe_build_put(&w, &hdr, 0x1000, 3, 555, 0x2000, 0xabcd) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK);
    CHECK(d.opcode == GPUIC_WQE_OP_RDMA_WRITE && d.wqe_index == 0x1234 && d.target == 77);
    CHECK(d.flags == GPUIC_WQE_CTRL_CQ_UPDATE && d.ds == 3 && d.nbb == 1);
    CHECK(d.laddr == 0x1000 && d.lkey == 3 && d.len == 555 && d.raddr == 0x2000);
    CHECK(d.rkey == 0xabcd && d.inline_data == NULL);

    for (uint32_t len = 0; len <= GPUIC_WQE_MAX_INLINE; ++len) {
        unsigned nbb = gpuic_wqe_build_put_inline(&w, &hdr, payload, len, 0x3000, 9);
        CHECK(nbb == (len <= GPUIC_WQE_MAX_INLINE_1BB ? 1u : 2u));
        CHECK(gpuic_wqe_decode(&w, nbb, &d) == GPUIC_OK);
        CHECK(d.len == len && d.inline_data != NULL && d.nbb == nbb);
        CHECK(d.lkey == 0); /* an inline payload is never device memory */
        CHECK(d.inline_data != NULL && memcmp(d.inline_data, payload, len) == 0);
        if (nbb == 2) {
            CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_ERR_INVALID_PARAM); /* truncated */
        }
    }

    CHECK(gpuic_wqe_build_get(&w, &hdr, 0x1000, 0, 64, 0x2000, 1) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_RDMA_READ);
    CHECK(d.len == 64 && d.laddr == 0x1000 && d.raddr == 0x2000 && d.lkey == 0);
    /* the device-memory marker travels in the data segment of puts, gets and put-with-signal */
    CHECK(gpuic_wqe_build_get(&w, &hdr, 0x1000, GPUIC_WQE_LKEY_DEVICE, 1u << 30, 0x2000, 1) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.lkey == GPUIC_WQE_LKEY_DEVICE);
    CHECK(d.len == 1u << 30);
    CHECK(gpuic_wqe_build_put(&w, &hdr, 0x1000, GPUIC_WQE_LKEY_DEVICE, GPUIC_WQE_MAX_BYTE_COUNT,
                              0x2000, 1) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.lkey == GPUIC_WQE_LKEY_DEVICE);
    CHECK(d.len == GPUIC_WQE_MAX_BYTE_COUNT && d.inline_data == NULL);

    CHECK(gpuic_wqe_build_atomic(&w, &hdr, GPUIC_WQE_OP_ATOMIC_CS, 5, 6, 0x1000, 0, 0x2000,
                                 2) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_ATOMIC_CS);
    CHECK(d.swap_add == 5 && d.compare == 6 && d.len == 8 && d.laddr == 0x1000);

    CHECK(gpuic_wqe_build_accumulate(&w, &hdr, GPUIC_ACC_MAX, GPUIC_ACC_DOUBLE, 10, 8, 0x1000,
                                     0, 0x2000, 2) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_ACCUMULATE);
    CHECK(d.ext_op == GPUIC_ACC_MAX && d.ext_type == GPUIC_ACC_DOUBLE && d.ext_count == 10);
    CHECK(d.len == 80);

    CHECK(gpuic_wqe_build_put_signal(&w, &hdr, 0x1000, 0, 32, 0x2000, 2, 0x3000, 4,
                                     GPUIC_SIGNAL_ADD, 42) == 2);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_PUT_SIGNAL);
    CHECK(d.sig_raddr == 0x3000 && d.sig_rkey == 4 && d.ext_op == GPUIC_SIGNAL_ADD);
    CHECK(d.ext_value == 42 && d.len == 32 && d.nbb == 2 && d.lkey == 0);
    CHECK(gpuic_wqe_build_put_signal(&w, &hdr, 0x1000, GPUIC_WQE_LKEY_DEVICE, 32, 0x2000, 2,
                                     0x3000, 4, GPUIC_SIGNAL_SET, 42) == 2);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_OK && d.lkey == GPUIC_WQE_LKEY_DEVICE);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_ERR_INVALID_PARAM);

    CHECK(gpuic_wqe_build_nop(&w, &hdr) == 1);
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_NOP);
}

/* Rewrites the control segment's qpn_ds with a new DS. */
static void set_ds(gpuic_wqe_t *w, unsigned ds)
{
    gpuic_wqe_ctrl_seg_t *c = (gpuic_wqe_ctrl_seg_t *)w;
    uint32_t qd = gpuic_be32toh(c->qpn_ds);

    c->qpn_ds = gpuic_htobe32((qd & ~0xffu) | ds);
}

/* Entries of several 8-byte puts: one block up to three, two blocks up to seven. */
static void check_put8_multi(void)
{
    const gpuic_wqe_hdr_t hdr = {7, 3, 0};
    gpuic_wqe_desc_t d;
    gpuic_wqe_t w;
    uint64_t ra[GPUIC_WQE_PUT8_MAX] = {0x100, 0x208, 0x310, 0x418, 0x520, 0x628, 0x730};
    uint8_t payload[8 * GPUIC_WQE_PUT8_MAX];

    for (unsigned i = 0; i < sizeof(payload); ++i) {
        payload[i] = (uint8_t)(i + 1);
    }
    for (unsigned n = 1; n <= GPUIC_WQE_PUT8_MAX; ++n) {
        unsigned nbb = gpuic_wqe_build_put8_multi(&w, &hdr, 9, n, ra, payload);

        CHECK(nbb == (n <= 3 ? 1u : 2u));
        CHECK(gpuic_wqe_decode(&w, nbb, &d) == GPUIC_OK && d.opcode == GPUIC_WQE_OP_PUT8_MULTI);
        CHECK(d.ds == 1 + n && d.rkey == 9 && d.put8 != NULL && d.target == 3);
        CHECK(gpuic_be64toh(d.put8[n - 1].raddr) == ra[n - 1] &&
              memcmp(d.put8[n - 1].data, payload + 8 * (n - 1), 8) == 0);
        if (nbb == 2) {
            CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_ERR_INVALID_PARAM);
        }
    }
    gpuic_wqe_build_put8_multi(&w, &hdr, 9, 1, ra, payload);
    set_ds(&w, 1); /* no put at all */
    CHECK(gpuic_wqe_decode(&w, 1, &d) == GPUIC_ERR_INVALID_PARAM);
}

static void check_malformed(void)
{
    gpuic_wqe_t w;
    gpuic_wqe_desc_t d;
    uint8_t payload[8] = {0};

    gpuic_wqe_build_put(&w, &hdr, 0x1000, 0, 8, 0x2000, 1);
    w.bytes[3] = 0x42; /* opcode byte (big-endian word, low byte last) */
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_BAD_OPCODE);
    w.bytes[3] = 0xef;
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_BAD_OPCODE);

    gpuic_wqe_build_put(&w, &hdr, 0x1000, 0, 8, 0x2000, 1);
    set_ds(&w, 4);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);
    set_ds(&w, 0);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);
    set_ds(&w, 200);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    gpuic_wqe_build_put(&w, &hdr, 0x1000, 0, 8, 0x2000, 1);
    ((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(&w, 1))->reserved = 1;
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    gpuic_wqe_build_put(&w, &hdr, 0x1000, 0, 8, 0x2000, 1);
    w.bytes[0] = 1; /* opmod */
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* inline length larger than the WQE can hold */
    gpuic_wqe_build_put_inline(&w, &hdr, payload, 8, 0x2000, 1);
    ((gpuic_wqe_inline_seg_t *)gpuic_wqe_seg(&w, 2))->byte_count =
        gpuic_htobe32(GPUIC_WQE_INLINE_SEG | 1000);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);
    /* inline length that does not match DS */
    ((gpuic_wqe_inline_seg_t *)gpuic_wqe_seg(&w, 2))->byte_count =
        gpuic_htobe32(GPUIC_WQE_INLINE_SEG | 40);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* an inline bit on a get */
    gpuic_wqe_build_get(&w, &hdr, 0x1000, 0, 8, 0x2000, 1);
    ((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(&w, 2))->byte_count =
        gpuic_htobe32(GPUIC_WQE_INLINE_SEG | 8);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* atomics are 8 bytes */
    gpuic_wqe_build_atomic(&w, &hdr, GPUIC_WQE_OP_ATOMIC_FA, 1, 0, 0x1000, 0, 0x2000, 1);
    ((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(&w, 3))->byte_count = gpuic_htobe32(4);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* accumulate: length must be count * size; type must be known */
    gpuic_wqe_build_accumulate(&w, &hdr, GPUIC_ACC_SUM, GPUIC_ACC_INT32, 4, 8, 0x1000, 0,
                               0x2000, 1);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);
    gpuic_wqe_build_accumulate(&w, &hdr, GPUIC_ACC_SUM, 99, 4, 4, 0x1000, 0, 0x2000, 1);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* put-with-signal: unknown signal op */
    gpuic_wqe_build_put_signal(&w, &hdr, 0x1000, 0, 8, 0x2000, 1, 0x3000, 1, 9, 1);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);

    /* a NOP carries nothing else */
    gpuic_wqe_build_nop(&w, &hdr);
    set_ds(&w, 2);
    CHECK(gpuic_wqe_decode(&w, 2, &d) == GPUIC_ERR_INVALID_PARAM);
}

int main(void)
{
    CHECK(gpuic_htobe32(0x11223344u) == 0x44332211u);
    CHECK(gpuic_htobe64(0x1122334455667788ULL) == 0x8877665544332211ULL);
    CHECK(gpuic_htobe16(0x1122) == 0x2211);
    check_roundtrip();
    check_malformed();
    check_put8_multi();
    return unit_test_result("test_wqe");
}
