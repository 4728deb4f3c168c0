/*
 * gpuic's WQE layout against rdma-core's infiniband/mlx5dv.h: segment sizes and field offsets,
 * opcode and flag values, and byte-for-byte equality of WQEs encoded by gpuic's builders and by
 * rdma-core's own mlx5dv_set_ctrl_seg()/mlx5dv_set_data_seg() (static inline: nothing from
 * libmlx5 is linked).
 */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gpuic_wqe.h"
#include "unit_test.h"

#define SAME_LAYOUT(ours, theirs, field) \
    CHECK(offsetof(ours, field) == offsetof(theirs, field))

/* The two headers' enums are distinct types: compare their values. */
#define SAME_VALUE(ours, theirs) CHECK((long)(ours) == (long)(theirs))

static void check_layout(void)
{
    CHECK(sizeof(gpuic_wqe_ctrl_seg_t) == sizeof(struct mlx5_wqe_ctrl_seg));
    CHECK(sizeof(gpuic_wqe_raddr_seg_t) == sizeof(struct mlx5_wqe_raddr_seg));
    CHECK(sizeof(gpuic_wqe_data_seg_t) == sizeof(struct mlx5_wqe_data_seg));
    CHECK(sizeof(gpuic_wqe_atomic_seg_t) == sizeof(struct mlx5_wqe_atomic_seg));
    CHECK(sizeof(gpuic_wqe_inline_seg_t) == sizeof(struct mlx5_wqe_inl_data_seg));
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, opmod_idx_opcode);
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, qpn_ds);
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, signature);
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, dci_stream_channel_id);
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, fm_ce_se);
    SAME_LAYOUT(gpuic_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, imm);
    SAME_LAYOUT(gpuic_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, raddr);
    SAME_LAYOUT(gpuic_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, rkey);
    SAME_LAYOUT(gpuic_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, reserved);
    SAME_LAYOUT(gpuic_wqe_data_seg_t, struct mlx5_wqe_data_seg, byte_count);
    SAME_LAYOUT(gpuic_wqe_data_seg_t, struct mlx5_wqe_data_seg, lkey);
    SAME_LAYOUT(gpuic_wqe_data_seg_t, struct mlx5_wqe_data_seg, addr);
    SAME_LAYOUT(gpuic_wqe_atomic_seg_t, struct mlx5_wqe_atomic_seg, swap_add);
    SAME_LAYOUT(gpuic_wqe_atomic_seg_t, struct mlx5_wqe_atomic_seg, compare);

    CHECK(GPUIC_WQE_BB_SIZE == MLX5_SEND_WQE_BB);
    CHECK(GPUIC_WQE_SEG_SIZE == sizeof(struct mlx5_wqe_data_seg));
    SAME_VALUE(GPUIC_WQE_INLINE_SEG, MLX5_INLINE_SEG);
    SAME_VALUE(GPUIC_WQE_OP_NOP, MLX5_OPCODE_NOP);
    SAME_VALUE(GPUIC_WQE_OP_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE);
    SAME_VALUE(GPUIC_WQE_OP_RDMA_READ, MLX5_OPCODE_RDMA_READ);
    SAME_VALUE(GPUIC_WQE_OP_ATOMIC_CS, MLX5_OPCODE_ATOMIC_CS);
    SAME_VALUE(GPUIC_WQE_OP_ATOMIC_FA, MLX5_OPCODE_ATOMIC_FA);
    SAME_VALUE(GPUIC_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
    SAME_VALUE(GPUIC_WQE_CTRL_SOLICITED, MLX5_WQE_CTRL_SOLICITED);
    SAME_VALUE(GPUIC_WQE_CTRL_FENCE, MLX5_WQE_CTRL_FENCE);
    SAME_VALUE(GPUIC_WQE_CTRL_SMALL_FENCE, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
    /* the extension opcodes stay clear of every hardware opcode rdma-core knows */
    CHECK((int)GPUIC_WQE_OP_EXT_FIRST > (int)MLX5_OPCODE_MMO);
    CHECK((int)GPUIC_WQE_OP_EXT_FIRST > (int)MLX5_OPCODE_FLOW_TBL_ACCESS);
}

static void check_encoding(void)
{
    const gpuic_wqe_hdr_t h = {.wqe_index = 0xbeef, .target = 0x123456,
                               .flags = GPUIC_WQE_CTRL_CQ_UPDATE};
    uint8_t theirs[2 * MLX5_SEND_WQE_BB];
    gpuic_wqe_t ours;
    struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)theirs;
    struct mlx5_wqe_raddr_seg *raddr = (struct mlx5_wqe_raddr_seg *)(theirs + 16);
    struct mlx5_wqe_atomic_seg *atomic = (struct mlx5_wqe_atomic_seg *)(theirs + 32);
    const uint64_t la = 0x00007f0012345678ULL, ra = 0x00007fabcdef0010ULL;
    const uint8_t payload[GPUIC_WQE_MAX_INLINE_1BB] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    unsigned nbb;

    /* a control segment with every field distinct, signature and imm included */
    memset(theirs, 0, sizeof(theirs));
    memset(&ours, 0, sizeof(ours));
    mlx5dv_set_ctrl_seg(ctrl, 0xa1b2, MLX5_OPCODE_RDMA_WRITE_IMM, 0x5a, 0xfedcba,
                        MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE, 7, 0x3c, 0x11223344);
    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)&ours, 0xa1b2, MLX5_OPCODE_RDMA_WRITE_IMM, 0x5a,
                       0xfedcba, GPUIC_WQE_CTRL_CQ_UPDATE | GPUIC_WQE_CTRL_FENCE, 7, 0x3c,
                       0x11223344);
    CHECK(memcmp(theirs, ours.bytes, 16) == 0);

    /* put: ctrl | raddr | data */
    memset(theirs, 0, sizeof(theirs));
    memset(&ours, 0xee, sizeof(ours));
    mlx5dv_set_ctrl_seg(ctrl, h.wqe_index, MLX5_OPCODE_RDMA_WRITE, 0, h.target,
                        MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
    raddr->raddr = htobe64(ra);
    raddr->rkey = htobe32(0xcafe0042);
    raddr->reserved = 0;
    mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(theirs + 32), 4096, 0x77, la);
    nbb = gpuic_wqe_build_put(&ours, &h, la, 0x77, 4096, ra, 0xcafe0042);
    CHECK(nbb == 1);
    CHECK(memcmp(theirs, ours.bytes, 48) == 0);

    /* get: the same with RDMA_READ */
    memset(&ours, 0xee, sizeof(ours));
    mlx5dv_set_ctrl_seg(ctrl, h.wqe_index, MLX5_OPCODE_RDMA_READ, 0, h.target,
                        MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
    nbb = gpuic_wqe_build_get(&ours, &h, la, 0x77, 4096, ra, 0xcafe0042);
    CHECK(nbb == 1);
    CHECK(memcmp(theirs, ours.bytes, 48) == 0);

    /* fetch-and-add: ctrl | raddr | atomic | data */
    memset(theirs, 0, sizeof(theirs));
    memset(&ours, 0xee, sizeof(ours));
    mlx5dv_set_ctrl_seg(ctrl, h.wqe_index, MLX5_OPCODE_ATOMIC_FA, 0, h.target,
                        MLX5_WQE_CTRL_CQ_UPDATE, 4, 0, 0);
    raddr->raddr = htobe64(ra);
    raddr->rkey = htobe32(9);
    atomic->swap_add = htobe64(0x0102030405060708ULL);
    atomic->compare = htobe64(0x1112131415161718ULL);
    mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(theirs + 48), 8, 0x55, la);
    nbb = gpuic_wqe_build_atomic(&ours, &h, GPUIC_WQE_OP_ATOMIC_FA, 0x0102030405060708ULL,
                                 0x1112131415161718ULL, la, 0x55, ra, 9);
    CHECK(nbb == 1);
    CHECK(memcmp(theirs, ours.bytes, 64) == 0);

    /* inline put: ctrl | raddr | inline header + payload, padded to a segment */
    memset(theirs, 0, sizeof(theirs));
    memset(&ours, 0xee, sizeof(ours));
    mlx5dv_set_ctrl_seg(ctrl, h.wqe_index, MLX5_OPCODE_RDMA_WRITE, 0, h.target,
                        MLX5_WQE_CTRL_CQ_UPDATE, 4, 0, 0);
    raddr->raddr = htobe64(ra);
    raddr->rkey = htobe32(5);
    ((struct mlx5_wqe_inl_data_seg *)(theirs + 32))->byte_count =
        htobe32(GPUIC_WQE_MAX_INLINE_1BB | MLX5_INLINE_SEG);
    memcpy(theirs + 36, payload, GPUIC_WQE_MAX_INLINE_1BB);
    nbb = gpuic_wqe_build_put_inline(&ours, &h, payload, GPUIC_WQE_MAX_INLINE_1BB, ra, 5);
    CHECK(nbb == 1);
    CHECK(memcmp(theirs, ours.bytes, 64) == 0);
}

int main(void)
{
    check_layout();
    check_encoding();
    return unit_test_result("test_wqe_mlx5");
}
