/*
 * gpuic_wqe.h - the one descriptor format of gpuic: an mlx5 send WQE, plus a gpuic extension
 * segment for what verbs cannot express.
 *
 * A WQE is a sequence of 16-byte segments packed into 64-byte basic blocks (BBs).  The first
 * segment is always the control segment; its DS field counts the segments.  All multi-byte
 * hardware fields are big-endian and laid out exactly as rdma-core's infiniband/mlx5dv.h
 * (struct mlx5_wqe_ctrl_seg, mlx5_wqe_raddr_seg, mlx5_wqe_data_seg, mlx5_wqe_atomic_seg,
 * MLX5_OPCODE_*); test_wqe_mlx5 checks that byte for byte.  This header does not include
 * mlx5dv.h, so it builds where rdma-core is absent, and it calls no libc, so CUDA device code
 * includes it unchanged.
 *
 * Layouts (segments in order; DS = number of segments):
 *   NOP             ctrl                                   DS 1
 *   RDMA_WRITE      ctrl | raddr | data                    DS 3
 *   RDMA_WRITE      ctrl | raddr | inline header + bytes   DS 2 + ceil((4 + len) / 16)
 *   RDMA_READ       ctrl | raddr | data                    DS 3
 *   ATOMIC_CS/FA    ctrl | raddr | atomic | data (8-byte result buffer)   DS 4
 *   gpuic ACCUMULATE  ctrl | raddr | ext | data (operand)  DS 4
 *   gpuic PUT_SIGNAL  ctrl | raddr | data | raddr (signal) | ext   DS 5 (two BBs)
 *
 * The rkey field never holds a hardware key on the proxy path: it names an entry of the target
 * window's key table and that entry's generation (gpuic_keytable.h), and the consumer checks it.
 * Nor does the lkey field: the proxy reaches the local buffer itself, and the lkey says only
 * what kind of memory the data segment's address is (GPUIC_WQE_LKEY_DEVICE, or any other value
 * for memory the proxy thread may load and store).
 * The QPN field names the target (in hardware an RC QP is the connection to one target, so the
 * two coincide); the proxy counts completions per target with it.
 */
#ifndef GPUIC_WQE_H
#define GPUIC_WQE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuic_portable.h"
#include "gpuic_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes in a basic block, the unit of ring slots and of hardware SQ indices. */
#define GPUIC_WQE_BB_SIZE 64
/** Bytes in a segment; the control segment's DS field counts these. */
#define GPUIC_WQE_SEG_SIZE 16
/** Segments per basic block. */
#define GPUIC_WQE_SEGS_PER_BB (GPUIC_WQE_BB_SIZE / GPUIC_WQE_SEG_SIZE)
/** Largest WQE gpuic builds or accepts, in basic blocks. */
#define GPUIC_WQE_MAX_BB 2
/** Largest DS value gpuic accepts. */
#define GPUIC_WQE_MAX_DS (GPUIC_WQE_MAX_BB * GPUIC_WQE_SEGS_PER_BB)
/** Inline payload that fits a one-BB RDMA_WRITE: 64 - ctrl - raddr - 4-byte inline header. */
#define GPUIC_WQE_MAX_INLINE_1BB (GPUIC_WQE_BB_SIZE - 2 * GPUIC_WQE_SEG_SIZE - 4)
/** Largest inline payload gpuic accepts (a two-BB RDMA_WRITE). */
#define GPUIC_WQE_MAX_INLINE (GPUIC_WQE_MAX_BB * GPUIC_WQE_BB_SIZE - 2 * GPUIC_WQE_SEG_SIZE - 4)
/** The data segment's byte_count is 31 bits wide (bit 31 marks an inline segment). */
#define GPUIC_WQE_MAX_BYTE_COUNT 0x7fffffffu
/** Set in an inline segment's byte_count (MLX5_INLINE_SEG). */
#define GPUIC_WQE_INLINE_SEG 0x80000000u
/**
 * lkey of a data segment whose address is device memory of the process that owns the queue (a
 * unified address, e.g. the origin of a device put): the proxy moves such data only with its
 * copy function or a transport that reaches device memory, never with CPU loads or stores.
 * RDMA_WRITE, RDMA_READ and PUT_SIGNAL take it; the proxy refuses it on atomics and
 * accumulates, whose operands and results it handles with the CPU.  Any other lkey (producers
 * write 0) means memory the proxy thread may load and store (a staging area, a host buffer).
 */
#define GPUIC_WQE_LKEY_DEVICE 0xffffffffu

/** Opcodes: hardware values (MLX5_OPCODE_*) and gpuic extensions at GPUIC_WQE_OP_EXT_FIRST. */
enum gpuic_wqe_opcode {
    GPUIC_WQE_OP_NOP           = 0x00, /**< MLX5_OPCODE_NOP: consumed, does nothing */
    GPUIC_WQE_OP_RDMA_WRITE    = 0x08, /**< MLX5_OPCODE_RDMA_WRITE: put */
    GPUIC_WQE_OP_RDMA_READ     = 0x10, /**< MLX5_OPCODE_RDMA_READ: get */
    GPUIC_WQE_OP_ATOMIC_CS     = 0x11, /**< MLX5_OPCODE_ATOMIC_CS: 8-byte compare-and-swap */
    GPUIC_WQE_OP_ATOMIC_FA     = 0x12, /**< MLX5_OPCODE_ATOMIC_FA: 8-byte fetch-and-add */
    /** First extension opcode.  Hardware opcodes stop below 0x30, so a NIC never sees these:
     *  an engine that hands WQEs to hardware must execute or reject them first. */
    GPUIC_WQE_OP_EXT_FIRST     = 0xe0,
    GPUIC_WQE_OP_ACCUMULATE    = 0xe0, /**< MPI accumulate: element-wise op on count elements */
    GPUIC_WQE_OP_PUT_SIGNAL    = 0xe1, /**< put, then an atomic update of a signal word */
    /** Up to GPUIC_WQE_PUT8_MAX puts of 8 bytes each under one key (in imm) to one target: one
     *  GPUIC_WQE_OP_PUT8_MULTI segment each, after the control segment. */
    GPUIC_WQE_OP_PUT8_MULTI    = 0xe3
};

/** Puts one GPUIC_WQE_OP_PUT8_MULTI entry carries at most (two basic blocks). */
#define GPUIC_WQE_PUT8_MAX (GPUIC_WQE_MAX_DS - 1)

/** Bits of the control segment's fm_ce_se byte (MLX5_WQE_CTRL_*). */
enum gpuic_wqe_ctrl_flag {
    GPUIC_WQE_CTRL_SOLICITED   = 1 << 1, /**< MLX5_WQE_CTRL_SOLICITED: solicited event */
    GPUIC_WQE_CTRL_CQ_UPDATE   = 2 << 2, /**< MLX5_WQE_CTRL_CQ_UPDATE: signalled, write a CQE */
    GPUIC_WQE_CTRL_SMALL_FENCE = 1 << 5, /**< MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE */
    GPUIC_WQE_CTRL_FENCE       = 4 << 5  /**< MLX5_WQE_CTRL_FENCE: wait for earlier WQEs first */
};

/** Element-wise operations of GPUIC_WQE_OP_ACCUMULATE (the MPI_Op subset executed here). */
enum gpuic_acc_op {
    GPUIC_ACC_SUM     = 1, /**< MPI_SUM */
    GPUIC_ACC_MIN     = 2, /**< MPI_MIN */
    GPUIC_ACC_MAX     = 3, /**< MPI_MAX */
    GPUIC_ACC_BAND    = 4, /**< MPI_BAND */
    GPUIC_ACC_BOR     = 5, /**< MPI_BOR */
    GPUIC_ACC_BXOR    = 6, /**< MPI_BXOR */
    GPUIC_ACC_REPLACE = 7, /**< MPI_REPLACE */
    GPUIC_ACC_PROD    = 8, /**< MPI_PROD: encodable, not executed by the proxy (unsupported) */
    /* remote calls only (gpuic_call_atomic_t), never in a WQE: */
    GPUIC_ACC_LAND    = 9,  /**< MPI_LAND */
    GPUIC_ACC_LOR     = 10, /**< MPI_LOR */
    GPUIC_ACC_LXOR    = 11, /**< MPI_LXOR */
    GPUIC_ACC_NO_OP   = 12  /**< MPI_NO_OP (a fetch only) */
};

/** Element types of GPUIC_WQE_OP_ACCUMULATE. */
enum gpuic_acc_type {
    GPUIC_ACC_INT32  = 1, /**< int32_t */
    GPUIC_ACC_INT64  = 2, /**< int64_t */
    GPUIC_ACC_UINT32 = 3, /**< uint32_t */
    GPUIC_ACC_UINT64 = 4, /**< uint64_t */
    GPUIC_ACC_FLOAT  = 5, /**< float */
    GPUIC_ACC_DOUBLE = 6, /**< double */
    /* remote calls only (gpuic_call_atomic_t), never in a WQE: */
    GPUIC_ACC_INT8   = 7,  /**< int8_t */
    GPUIC_ACC_UINT8  = 8,  /**< uint8_t */
    GPUIC_ACC_INT16  = 9,  /**< int16_t */
    GPUIC_ACC_UINT16 = 10  /**< uint16_t */
};

/** Signal updates of GPUIC_WQE_OP_PUT_SIGNAL (8-byte signal word). */
enum gpuic_signal_op {
    GPUIC_SIGNAL_SET = 1, /**< signal = value */
    GPUIC_SIGNAL_ADD = 2  /**< signal += value */
};

/** Control segment (struct mlx5_wqe_ctrl_seg).  Fields are described in gpuic_wqe_set_ctrl(). */
typedef struct gpuic_wqe_ctrl_seg {
    uint32_t opmod_idx_opcode;         /**< big-endian opmod:8 | wqe index:16 | opcode:8 */
    uint32_t qpn_ds;                   /**< big-endian qpn:24 | ds:8 */
    uint8_t  signature;                /**< WQE signature (unused, 0) */
    uint8_t  dci_stream_channel_id[2]; /**< big-endian DCI stream channel (unused, 0) */
    uint8_t  fm_ce_se;                 /**< fence mode, completion, solicited bits */
    uint32_t imm;                      /**< immediate data, stored as given */
} gpuic_wqe_ctrl_seg_t;

/** Remote address segment (struct mlx5_wqe_raddr_seg). */
typedef struct gpuic_wqe_raddr_seg {
    uint64_t raddr;    /**< big-endian remote virtual address */
    uint32_t rkey;     /**< big-endian remote key (a gpuic key-table key on the proxy path) */
    uint32_t reserved; /**< zero */
} gpuic_wqe_raddr_seg_t;

/** Data (scatter/gather) segment (struct mlx5_wqe_data_seg). */
typedef struct gpuic_wqe_data_seg {
    uint32_t byte_count; /**< big-endian length in bytes */
    uint32_t lkey;       /**< big-endian local key */
    uint64_t addr;       /**< big-endian local virtual address */
} gpuic_wqe_data_seg_t;

/** Atomic segment (struct mlx5_wqe_atomic_seg). */
typedef struct gpuic_wqe_atomic_seg {
    uint64_t swap_add; /**< big-endian swap value (CS) or addend (FA) */
    uint64_t compare;  /**< big-endian compare value (CS) */
} gpuic_wqe_atomic_seg_t;

/** Inline data header (struct mlx5_wqe_inl_data_seg); the payload follows it directly. */
typedef struct gpuic_wqe_inline_seg {
    uint32_t byte_count; /**< big-endian length | GPUIC_WQE_INLINE_SEG */
} gpuic_wqe_inline_seg_t;

/** gpuic extension segment: what verbs cannot say.  Multi-byte fields are big-endian too. */
typedef struct gpuic_wqe_ext_seg {
    uint8_t  op;       /**< ACCUMULATE: enum gpuic_acc_op; PUT_SIGNAL: enum gpuic_signal_op */
    uint8_t  datatype; /**< ACCUMULATE: enum gpuic_acc_type; otherwise 0 */
    uint16_t flags;    /**< reserved, zero */
    uint32_t count;    /**< ACCUMULATE: number of elements; otherwise 0 */
    uint64_t value;    /**< PUT_SIGNAL: the signal operand; otherwise 0 */
} gpuic_wqe_ext_seg_t;

/** One put of GPUIC_WQE_OP_PUT8_MULTI: where and what. */
typedef struct gpuic_wqe_put8_seg {
    uint64_t raddr;   /**< big-endian remote virtual address */
    uint8_t  data[8]; /**< the 8 bytes put there, in memory order */
} gpuic_wqe_put8_seg_t;

/** One WQE of up to GPUIC_WQE_MAX_BB basic blocks, as segments or bytes. */
typedef union gpuic_wqe {
    uint8_t  bytes[GPUIC_WQE_MAX_BB * GPUIC_WQE_BB_SIZE]; /**< raw bytes */
    uint64_t words[GPUIC_WQE_MAX_BB * GPUIC_WQE_BB_SIZE / 8]; /**< raw 8-byte words */
} __attribute__((aligned(GPUIC_WQE_BB_SIZE))) gpuic_wqe_t;

/** Returns segment @p i (0 = control) of @p wqe. */
static inline GPUIC_HOST_DEVICE void *gpuic_wqe_seg(gpuic_wqe_t *wqe, unsigned i)
{
    return wqe->bytes + (size_t)i * GPUIC_WQE_SEG_SIZE;
}

/** Basic blocks a WQE with @p ds segments occupies. */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_ds_to_bb(unsigned ds)
{
    return (ds + GPUIC_WQE_SEGS_PER_BB - 1) / GPUIC_WQE_SEGS_PER_BB;
}

/**
 * Writes a control segment (equivalent to rdma-core's mlx5dv_set_ctrl_seg()).
 * @param opcode    bits 7:0 of opmod_idx_opcode: what the WQE does (enum gpuic_wqe_opcode)
 * @param opmod     bits 31:24 of opmod_idx_opcode: opcode modifier (atomic size variants); 0
 * @param wqe_index bits 23:8 of opmod_idx_opcode: the producer index of the WQE's first BB,
 *                  modulo 2^16; hardware reports it back in the CQE, the proxy in gpuic CQEs
 * @param qpn       bits 31:8 of qpn_ds: the QP number; on the proxy path the target number
 * @param ds        bits 7:0 of qpn_ds: number of 16-byte segments, control segment included
 * @param fm_ce_se  fence mode (bits 7:5), completion request (bits 3:2, CQ_UPDATE = always
 *                  write a CQE) and solicited event (bit 1): enum gpuic_wqe_ctrl_flag
 * @param signature WQE signature byte, checked only on QPs created with signatures; 0
 * @param imm       immediate data or invalidation key; stored unconverted, as rdma-core does
 *                  (the caller passes it already in the byte order the opcode needs)
 * The DCI stream channel (bytes 9-10) applies to DC transport only and is left zero.
 */
static inline GPUIC_HOST_DEVICE void gpuic_wqe_set_ctrl(gpuic_wqe_ctrl_seg_t *seg,
                                                        uint16_t wqe_index, uint8_t opcode,
                                                        uint8_t opmod, uint32_t qpn,
                                                        uint8_t fm_ce_se, uint8_t ds,
                                                        uint8_t signature, uint32_t imm)
{
    seg->opmod_idx_opcode = gpuic_htobe32(((uint32_t)opmod << 24) |
                                          ((uint32_t)wqe_index << 8) | opcode);
    seg->qpn_ds = gpuic_htobe32((qpn << 8) | ds);
    seg->signature = signature;
    seg->dci_stream_channel_id[0] = 0;
    seg->dci_stream_channel_id[1] = 0;
    seg->fm_ce_se = fm_ce_se;
    seg->imm = imm;
}

/**
 * Writes a remote address segment.
 * @param raddr  the remote virtual address the operation starts at
 * @param rkey   the key naming the remote region (on the proxy path: gpuic_keytable key)
 * The last 4 bytes are reserved and written as zero.
 */
static inline GPUIC_HOST_DEVICE void gpuic_wqe_set_raddr(gpuic_wqe_raddr_seg_t *seg,
                                                         uint64_t raddr, uint32_t rkey)
{
    seg->raddr = gpuic_htobe64(raddr);
    seg->rkey = gpuic_htobe32(rkey);
    seg->reserved = 0;
}

/**
 * Writes a data segment (equivalent to mlx5dv_set_data_seg()).
 * @param length  bytes to gather (put) or scatter (get, atomic result); < 2^31
 * @param lkey    local key of the buffer's registration; on the proxy path, which reaches
 *                local memory itself, GPUIC_WQE_LKEY_DEVICE for device memory, else 0
 * @param addr    local virtual address of the buffer
 */
static inline GPUIC_HOST_DEVICE void gpuic_wqe_set_data(gpuic_wqe_data_seg_t *seg,
                                                        uint32_t length, uint32_t lkey,
                                                        uint64_t addr)
{
    seg->byte_count = gpuic_htobe32(length);
    seg->lkey = gpuic_htobe32(lkey);
    seg->addr = gpuic_htobe64(addr);
}

/**
 * Writes an atomic segment.
 * @param swap_add  ATOMIC_CS: the value swapped in on a match; ATOMIC_FA: the addend
 * @param compare   ATOMIC_CS: the value compared with the target; ATOMIC_FA: ignored, 0
 */
static inline GPUIC_HOST_DEVICE void gpuic_wqe_set_atomic(gpuic_wqe_atomic_seg_t *seg,
                                                          uint64_t swap_add, uint64_t compare)
{
    seg->swap_add = gpuic_htobe64(swap_add);
    seg->compare = gpuic_htobe64(compare);
}

/**
 * Writes an inline data header at segment @p first_seg followed by @p len payload bytes
 * (len <= GPUIC_WQE_MAX_INLINE).  byte_count is the payload length with bit 31
 * (GPUIC_WQE_INLINE_SEG) set; the payload is padded with zeros to a segment boundary.
 * Returns the number of segments the header and payload occupy.
 */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_set_inline(gpuic_wqe_t *wqe,
                                                              unsigned first_seg,
                                                              const void *data, uint32_t len)
{
    uint8_t *p = (uint8_t *)gpuic_wqe_seg(wqe, first_seg);
    const uint8_t *src = (const uint8_t *)data;
    unsigned nseg = (4 + len + GPUIC_WQE_SEG_SIZE - 1) / GPUIC_WQE_SEG_SIZE;
    uint32_t i;

    ((gpuic_wqe_inline_seg_t *)p)->byte_count = gpuic_htobe32(len | GPUIC_WQE_INLINE_SEG);
    for (i = 0; i < len; ++i) {
        p[4 + i] = src[i];
    }
    for (i = 4 + len; i < nseg * GPUIC_WQE_SEG_SIZE; ++i) {
        p[i] = 0;
    }
    return nseg;
}

/**
 * Writes a gpuic extension segment.
 * @param op        accumulate op (enum gpuic_acc_op) or signal op (enum gpuic_signal_op)
 * @param datatype  accumulate element type (enum gpuic_acc_type), else 0
 * @param count     accumulate element count, else 0
 * @param value     put-with-signal operand, else 0
 */
static inline GPUIC_HOST_DEVICE void gpuic_wqe_set_ext(gpuic_wqe_ext_seg_t *seg, uint8_t op,
                                                       uint8_t datatype, uint32_t count,
                                                       uint64_t value)
{
    seg->op = op;
    seg->datatype = datatype;
    seg->flags = 0;
    seg->count = gpuic_htobe32(count);
    seg->value = gpuic_htobe64(value);
}

/* ---- whole-WQE builders: each returns the number of basic blocks used ---- */

/** Common arguments of the builders: where the WQE goes and how it completes. */
typedef struct gpuic_wqe_hdr {
    uint16_t wqe_index; /**< producer index of the WQE's first slot (mod 2^16) */
    uint32_t target;    /**< target number (QPN field), < 2^24 */
    uint8_t  flags;     /**< enum gpuic_wqe_ctrl_flag bits, e.g. CQ_UPDATE for a CQE */
} gpuic_wqe_hdr_t;

/** Builds a NOP (what an abandoned slot becomes). */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_nop(gpuic_wqe_t *wqe,
                                                             const gpuic_wqe_hdr_t *h)
{
    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index,
                       GPUIC_WQE_OP_NOP, 0, h->target, h->flags, 1, 0, 0);
    return 1;
}

/** Builds an RDMA write or read (@p opcode) between [laddr, laddr+len) and raddr under rkey:
 *  control, remote-address and data segments, one basic block. */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_rdma(gpuic_wqe_t *wqe,
                                                              const gpuic_wqe_hdr_t *h,
                                                              uint8_t opcode, uint64_t laddr,
                                                              uint32_t lkey, uint32_t len,
                                                              uint64_t raddr, uint32_t rkey)
{
    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index, opcode, 0,
                       h->target, h->flags, 3, 0, 0);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 1), raddr, rkey);
    gpuic_wqe_set_data((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(wqe, 2), len, lkey, laddr);
    return 1;
}

/** Builds a put of [laddr, laddr+len) to raddr under rkey. */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_put(gpuic_wqe_t *wqe,
                                                             const gpuic_wqe_hdr_t *h,
                                                             uint64_t laddr, uint32_t lkey,
                                                             uint32_t len, uint64_t raddr,
                                                             uint32_t rkey)
{
    return gpuic_wqe_build_rdma(wqe, h, GPUIC_WQE_OP_RDMA_WRITE, laddr, lkey, len, raddr, rkey);
}

/** Builds a put whose payload travels in the WQE (len <= GPUIC_WQE_MAX_INLINE). */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_put_inline(gpuic_wqe_t *wqe,
                                                                    const gpuic_wqe_hdr_t *h,
                                                                    const void *data,
                                                                    uint32_t len, uint64_t raddr,
                                                                    uint32_t rkey)
{
    unsigned ds = 2 + gpuic_wqe_set_inline(wqe, 2, data, len);

    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index,
                       GPUIC_WQE_OP_RDMA_WRITE, 0, h->target, h->flags, (uint8_t)ds, 0, 0);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 1), raddr, rkey);
    return gpuic_wqe_ds_to_bb(ds);
}

/** Builds a get of len bytes from raddr into [laddr, laddr+len). */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_get(gpuic_wqe_t *wqe,
                                                             const gpuic_wqe_hdr_t *h,
                                                             uint64_t laddr, uint32_t lkey,
                                                             uint32_t len, uint64_t raddr,
                                                             uint32_t rkey)
{
    return gpuic_wqe_build_rdma(wqe, h, GPUIC_WQE_OP_RDMA_READ, laddr, lkey, len, raddr, rkey);
}

/**
 * Builds an 8-byte atomic: ATOMIC_FA (swap_add = addend) or ATOMIC_CS (compare, swap_add =
 * new value).  The target's old value is written to the 8 bytes at result_addr.
 */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_atomic(gpuic_wqe_t *wqe,
                                                                const gpuic_wqe_hdr_t *h,
                                                                uint8_t opcode, uint64_t swap_add,
                                                                uint64_t compare,
                                                                uint64_t result_addr,
                                                                uint32_t lkey, uint64_t raddr,
                                                                uint32_t rkey)
{
    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index, opcode, 0,
                       h->target, h->flags, 4, 0, 0);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 1), raddr, rkey);
    gpuic_wqe_set_atomic((gpuic_wqe_atomic_seg_t *)gpuic_wqe_seg(wqe, 2), swap_add, compare);
    gpuic_wqe_set_data((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(wqe, 3), 8, lkey, result_addr);
    return 1;
}

/** Builds an accumulate of count elements of type datatype from laddr into raddr. */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_accumulate(gpuic_wqe_t *wqe,
                                                                    const gpuic_wqe_hdr_t *h,
                                                                    uint8_t op, uint8_t datatype,
                                                                    uint32_t count,
                                                                    uint32_t elem_size,
                                                                    uint64_t laddr,
                                                                    uint32_t lkey, uint64_t raddr,
                                                                    uint32_t rkey)
{
    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index,
                       GPUIC_WQE_OP_ACCUMULATE, 0, h->target, h->flags, 4, 0, 0);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 1), raddr, rkey);
    gpuic_wqe_set_ext((gpuic_wqe_ext_seg_t *)gpuic_wqe_seg(wqe, 2), op, datatype, count, 0);
    gpuic_wqe_set_data((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(wqe, 3), count * elem_size, lkey,
                       laddr);
    return 1;
}

/**
 * Builds a put followed, once the data is complete at the target, by an 8-byte signal update
 * (enum gpuic_signal_op) at sig_raddr under sig_rkey.  Two basic blocks.
 */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_put_signal(
    gpuic_wqe_t *wqe, const gpuic_wqe_hdr_t *h, uint64_t laddr, uint32_t lkey, uint32_t len,
    uint64_t raddr, uint32_t rkey, uint64_t sig_raddr, uint32_t sig_rkey, uint8_t sig_op,
    uint64_t sig_value)
{
    unsigned i;

    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index,
                       GPUIC_WQE_OP_PUT_SIGNAL, 0, h->target, h->flags, 5, 0, 0);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 1), raddr, rkey);
    gpuic_wqe_set_data((gpuic_wqe_data_seg_t *)gpuic_wqe_seg(wqe, 2), len, lkey, laddr);
    gpuic_wqe_set_raddr((gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(wqe, 3), sig_raddr, sig_rkey);
    gpuic_wqe_set_ext((gpuic_wqe_ext_seg_t *)gpuic_wqe_seg(wqe, 4), sig_op, 0, 0, sig_value);
    /* the rest of the second BB is padding; keep it deterministic */
    for (i = 5 * GPUIC_WQE_SEG_SIZE; i < 2 * GPUIC_WQE_BB_SIZE; ++i) {
        wqe->bytes[i] = 0;
    }
    return 2;
}

/**
 * Builds @p n (1 .. GPUIC_WQE_PUT8_MAX) puts of 8 bytes to one target under one key: put i
 * writes the 8 bytes at data + 8i to raddrs[i].  The key travels in the control segment's imm
 * field (big-endian); the rest of the last basic block is zero.
 */
static inline GPUIC_HOST_DEVICE unsigned gpuic_wqe_build_put8_multi(gpuic_wqe_t *wqe,
                                                                    const gpuic_wqe_hdr_t *h,
                                                                    uint32_t rkey, unsigned n,
                                                                    const uint64_t *raddrs,
                                                                    const void *data)
{
    unsigned ds = 1 + n, nbb = gpuic_wqe_ds_to_bb(ds), i;

    gpuic_wqe_set_ctrl((gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(wqe, 0), h->wqe_index,
                       GPUIC_WQE_OP_PUT8_MULTI, 0, h->target, h->flags, (uint8_t)ds, 0,
                       gpuic_htobe32(rkey));
    for (i = 0; i < n; ++i) {
        gpuic_wqe_put8_seg_t *p = (gpuic_wqe_put8_seg_t *)gpuic_wqe_seg(wqe, 1 + i);

        p->raddr = gpuic_htobe64(raddrs[i]);
        for (unsigned b = 0; b < 8; ++b) {
            p->data[b] = ((const uint8_t *)data)[8 * i + b];
        }
    }
    for (i = ds * GPUIC_WQE_SEG_SIZE; i < nbb * GPUIC_WQE_BB_SIZE; ++i) {
        wqe->bytes[i] = 0;
    }
    return nbb;
}

/* ---- decoder ---- */

/** A WQE decoded into host-order fields; only the fields its opcode uses are set. */
typedef struct gpuic_wqe_desc {
    uint8_t  opcode;     /**< enum gpuic_wqe_opcode */
    uint8_t  flags;      /**< fm_ce_se bits */
    uint16_t wqe_index;  /**< producer index (mod 2^16) */
    uint32_t target;     /**< QPN field */
    unsigned ds;         /**< segment count */
    unsigned nbb;        /**< basic blocks */
    uint64_t raddr;      /**< remote address */
    uint32_t rkey;       /**< remote key */
    uint64_t laddr;      /**< local address (data segment) */
    uint32_t lkey;       /**< local key (data segment) */
    uint32_t len;        /**< bytes moved (data or inline segment) */
    const uint8_t *inline_data; /**< inline payload inside the decoded WQE, or NULL */
    uint64_t swap_add;   /**< atomic operand */
    uint64_t compare;    /**< atomic compare value */
    uint8_t  ext_op;     /**< extension op */
    uint8_t  ext_type;   /**< extension datatype */
    uint32_t ext_count;  /**< extension element count */
    uint64_t ext_value;  /**< extension value */
    uint64_t sig_raddr;  /**< put-with-signal: signal address */
    uint32_t sig_rkey;   /**< put-with-signal: signal key */
    /** PUT8_MULTI: the puts (ds - 1 of them), inside the decoded WQE; rkey is their key */
    const gpuic_wqe_put8_seg_t *put8;
} gpuic_wqe_desc_t;

/** Bytes of one accumulate element of @p type, or 0 for an unknown type. */
static inline GPUIC_HOST_DEVICE uint32_t gpuic_acc_type_size(uint8_t type)
{
    switch (type) {
    case GPUIC_ACC_INT32: case GPUIC_ACC_UINT32: case GPUIC_ACC_FLOAT:  return 4;
    case GPUIC_ACC_INT64: case GPUIC_ACC_UINT64: case GPUIC_ACC_DOUBLE: return 8;
    }
    return 0;
}

/**
 * Decodes and checks the structure of the WQE in @p wqe, of which @p nbb_avail basic blocks
 * are valid: known opcode, DS matching the opcode's layout, inline length within the WQE,
 * accumulate length consistent with count and type, zero reserved fields.  Keys and bounds are
 * checked later against the key table.
 * @return GPUIC_OK, GPUIC_ERR_BAD_OPCODE or GPUIC_ERR_INVALID_PARAM (malformed).
 */
static inline GPUIC_HOST_DEVICE gpuic_status_t gpuic_wqe_decode(const gpuic_wqe_t *wqe,
                                                                unsigned nbb_avail,
                                                                gpuic_wqe_desc_t *d)
{
    gpuic_wqe_t *w = (gpuic_wqe_t *)wqe; /* gpuic_wqe_seg() is not const; nothing is written */
    const gpuic_wqe_ctrl_seg_t *c = (const gpuic_wqe_ctrl_seg_t *)gpuic_wqe_seg(w, 0);
    uint32_t oio = gpuic_be32toh(c->opmod_idx_opcode), qd = gpuic_be32toh(c->qpn_ds);
    const gpuic_wqe_raddr_seg_t *r = (const gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(w, 1);
    const gpuic_wqe_data_seg_t *ds;
    const gpuic_wqe_ext_seg_t *e;
    unsigned expect_ds;

    d->opcode = (uint8_t)oio;
    d->wqe_index = (uint16_t)(oio >> 8);
    d->target = qd >> 8;
    d->ds = qd & 0xff;
    d->flags = c->fm_ce_se;
    d->nbb = gpuic_wqe_ds_to_bb(d->ds);
    d->inline_data = NULL;
    d->len = 0;
    d->lkey = 0; /* an inline payload is in the WQE: ordinary memory */
    if (d->ds == 0 || d->nbb > nbb_avail || d->nbb > GPUIC_WQE_MAX_BB) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    if ((oio >> 24) != 0) {
        return GPUIC_ERR_INVALID_PARAM; /* no opcode modifiers are defined for our opcodes */
    }
    d->put8 = NULL;
    if (d->ds >= 2 && d->opcode != GPUIC_WQE_OP_PUT8_MULTI) {
        d->raddr = gpuic_be64toh(r->raddr);
        d->rkey = gpuic_be32toh(r->rkey);
        if (r->reserved != 0) {
            return GPUIC_ERR_INVALID_PARAM;
        }
    }
    switch (d->opcode) {
    case GPUIC_WQE_OP_NOP:
        expect_ds = 1;
        break;
    case GPUIC_WQE_OP_RDMA_WRITE:
        if (d->ds < 3) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        ds = (const gpuic_wqe_data_seg_t *)gpuic_wqe_seg(w, 2);
        if (gpuic_be32toh(ds->byte_count) & GPUIC_WQE_INLINE_SEG) {
            d->len = gpuic_be32toh(ds->byte_count) & ~GPUIC_WQE_INLINE_SEG;
            if (d->len > GPUIC_WQE_MAX_INLINE) {
                return GPUIC_ERR_INVALID_PARAM;
            }
            d->inline_data = (const uint8_t *)ds + 4;
            expect_ds = 2 + (4 + d->len + GPUIC_WQE_SEG_SIZE - 1) / GPUIC_WQE_SEG_SIZE;
            break;
        }
        expect_ds = 3;
        d->len = gpuic_be32toh(ds->byte_count);
        d->lkey = gpuic_be32toh(ds->lkey);
        d->laddr = gpuic_be64toh(ds->addr);
        break;
    case GPUIC_WQE_OP_RDMA_READ:
        expect_ds = 3;
        ds = (const gpuic_wqe_data_seg_t *)gpuic_wqe_seg(w, 2);
        d->len = gpuic_be32toh(ds->byte_count);
        d->lkey = gpuic_be32toh(ds->lkey);
        d->laddr = gpuic_be64toh(ds->addr);
        if (d->len & GPUIC_WQE_INLINE_SEG) {
            return GPUIC_ERR_INVALID_PARAM; /* inline data only makes sense for a put */
        }
        break;
    case GPUIC_WQE_OP_ATOMIC_CS:
    case GPUIC_WQE_OP_ATOMIC_FA:
        expect_ds = 4;
        if (d->ds != expect_ds) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        d->swap_add = gpuic_be64toh(((const gpuic_wqe_atomic_seg_t *)gpuic_wqe_seg(w, 2))->swap_add);
        d->compare = gpuic_be64toh(((const gpuic_wqe_atomic_seg_t *)gpuic_wqe_seg(w, 2))->compare);
        ds = (const gpuic_wqe_data_seg_t *)gpuic_wqe_seg(w, 3);
        d->len = gpuic_be32toh(ds->byte_count);
        d->lkey = gpuic_be32toh(ds->lkey);
        d->laddr = gpuic_be64toh(ds->addr);
        if (d->len != 8) {
            return GPUIC_ERR_INVALID_PARAM; /* hardware atomics are 8 bytes */
        }
        break;
    case GPUIC_WQE_OP_ACCUMULATE:
        expect_ds = 4;
        if (d->ds != expect_ds) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        e = (const gpuic_wqe_ext_seg_t *)gpuic_wqe_seg(w, 2);
        ds = (const gpuic_wqe_data_seg_t *)gpuic_wqe_seg(w, 3);
        d->ext_op = e->op;
        d->ext_type = e->datatype;
        d->ext_count = gpuic_be32toh(e->count);
        d->ext_value = gpuic_be64toh(e->value);
        d->len = gpuic_be32toh(ds->byte_count);
        d->lkey = gpuic_be32toh(ds->lkey);
        d->laddr = gpuic_be64toh(ds->addr);
        if (e->flags != 0 || gpuic_acc_type_size(d->ext_type) == 0 ||
            (uint64_t)d->ext_count * gpuic_acc_type_size(d->ext_type) != d->len) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        break;
    case GPUIC_WQE_OP_PUT_SIGNAL:
        expect_ds = 5;
        if (d->ds != expect_ds) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        ds = (const gpuic_wqe_data_seg_t *)gpuic_wqe_seg(w, 2);
        d->len = gpuic_be32toh(ds->byte_count);
        d->lkey = gpuic_be32toh(ds->lkey);
        d->laddr = gpuic_be64toh(ds->addr);
        r = (const gpuic_wqe_raddr_seg_t *)gpuic_wqe_seg(w, 3);
        d->sig_raddr = gpuic_be64toh(r->raddr);
        d->sig_rkey = gpuic_be32toh(r->rkey);
        e = (const gpuic_wqe_ext_seg_t *)gpuic_wqe_seg(w, 4);
        d->ext_op = e->op;
        d->ext_value = gpuic_be64toh(e->value);
        if (r->reserved != 0 || e->flags != 0 || e->datatype != 0 || e->count != 0 ||
            (d->ext_op != GPUIC_SIGNAL_SET && d->ext_op != GPUIC_SIGNAL_ADD) ||
            (d->len & GPUIC_WQE_INLINE_SEG)) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        break;
    case GPUIC_WQE_OP_PUT8_MULTI:
        /* segment 1 is a put, not a remote-address segment: no reserved field to check */
        expect_ds = d->ds;
        if (d->ds < 2) {
            return GPUIC_ERR_INVALID_PARAM;
        }
        d->rkey = gpuic_be32toh(c->imm);
        d->raddr = 0;
        d->len = 8;
        d->put8 = (const gpuic_wqe_put8_seg_t *)gpuic_wqe_seg(w, 1);
        break;
    default:
        return GPUIC_ERR_BAD_OPCODE;
    }
    if (d->ds != expect_ds) {
        return GPUIC_ERR_INVALID_PARAM;
    }
    return GPUIC_OK;
}

#ifndef __cplusplus
_Static_assert(sizeof(gpuic_wqe_ctrl_seg_t) == GPUIC_WQE_SEG_SIZE, "control segment size");
_Static_assert(sizeof(gpuic_wqe_raddr_seg_t) == GPUIC_WQE_SEG_SIZE, "raddr segment size");
_Static_assert(sizeof(gpuic_wqe_data_seg_t) == GPUIC_WQE_SEG_SIZE, "data segment size");
_Static_assert(sizeof(gpuic_wqe_atomic_seg_t) == GPUIC_WQE_SEG_SIZE, "atomic segment size");
_Static_assert(sizeof(gpuic_wqe_ext_seg_t) == GPUIC_WQE_SEG_SIZE, "extension segment size");
_Static_assert(sizeof(gpuic_wqe_put8_seg_t) == GPUIC_WQE_SEG_SIZE, "put8 segment size");
_Static_assert(sizeof(gpuic_wqe_t) == GPUIC_WQE_MAX_BB * GPUIC_WQE_BB_SIZE, "WQE size");
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_WQE_H */
