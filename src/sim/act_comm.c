/* SPDX-License-Identifier: MIT */
/*
 * act_comm.c: the activation collectives of a bound block (docs/time-model.md,
 * "Activation collectives"): which einsums must gather a sharded activation
 * before they contract it, and which produce partial sums that a
 * reduce-scatter (or an all-reduce) completes. Tensor parallelism makes
 * both (the projections' inputs are sharded on `embed`, their contracted
 * heads or MLP columns are sharded too); so does sequence parallelism
 * (tensor_sequence: the norms' rows). FSDP and data parallelism make
 * neither: they shard the batch, which no layer einsum contracts, and the
 * weights, which binding gathers (op_gather).
 *
 * The rule reads the einsum as its FLOP count does (ops.c, einsum_flops):
 * each letter runs at the largest per-device size any operand has it. An
 * activation input held smaller than those sizes is gathered to them; a
 * contracted letter smaller than its whole size means each device holds a
 * part of the sum.
 *
 * Invariants:
 *  - only einsums gather or reduce here, a grouped matmul (Megablox) like
 *    any other over its non-ragged letters: MaxText reduce-scatters its
 *    routed rows' partial sums over `tensor` (moe.py, psum_scatter); the
 *    rows' moves between expert shards are the all-to-alls (static.c);
 *  - a buffer is gathered once per pass, at its first reader in the
 *    block's order (XLA gathers a value once for all its readers: the
 *    query, key and value projections share their input's gather), and
 *    its whole copy is live while each of those readers runs (act_mem);
 *  - every count is a checked product; a count that would pass BYTES_MAX
 *    is an overflow error, never a wrap.
 */
#include <assert.h>
#include <string.h>

#include "sim/sim_rooms.h"

/* An einsum has at most a letter per dim of its operands. */
#define MAX_LETTERS ((REMAT_MAX_IO + 1) * REMAT_MAX_RANK)

/* The letters of one einsum as its FLOP count reads them: per letter, the
   largest per-device size, the largest whole size and whether the output
   has it. */
typedef struct letters {
    size_t n;
    uint64_t size[MAX_LETTERS], whole[MAX_LETTERS];
    bool out[MAX_LETTERS];
    /* per operand dim: its letter, or NO_LETTER for a grouped matmul's
       ragged letter (each row meets its own expert: no operand is
       gathered or summed over it) */
    size_t of[REMAT_MAX_IO + 1][REMAT_MAX_RANK];
} letters_t;
#define NO_LETTER MAX_LETTERS

/* Tensor of operand @p k of op @p op: an input, or the output at nin. */
static size_t operand_tensor(const remat_op_t *op, size_t k) {
    return k < op->nin ? op->in[k] : op->out[0];
}

/* The letters of einsum @p j of block @p b bound in @p bd. */
static void read_letters(const remat_block_t *b, const bound_t *bd, const uint64_t *dimsize,
                         size_t j, letters_t *l) {
    const remat_op_t *op = &b->ops[j];
    const size_t *ein = &bd->ix.ein[bd->ix.ein_at[j]];
    const size_t n = bd->ix.ein_at[j + 1] - bd->ix.ein_at[j];
    l->n = 0;
    for (size_t k = 0; k <= REMAT_MAX_IO; k++) {
        for (size_t d = 0; d < REMAT_MAX_RANK; d++) {
            l->of[k][d] = NO_LETTER;
        }
    }
    for (size_t e = 0; e < n; e++) {
        const size_t k = remat_i_ein_operand(ein[e]), d = remat_i_ein_dim(ein[e]);
        const size_t t = operand_tensor(op, k);
        if (ein[e] & REMAT_I_EIN_NEW) {
            assert(l->n < MAX_LETTERS && "a letter per operand dim at most");
            l->size[l->n] = l->whole[l->n] = 0;
            l->out[l->n++] = false;
        }
        assert(l->n > 0 && "a letter's group starts with its first appearance");
        const size_t c = l->n - 1;
        const uint64_t v = bd->ctdim[t][d], w = dimsize[b->tensors[t].dim[d]];
        l->size[c] = v > l->size[c] ? v : l->size[c];
        l->whole[c] = w > l->whole[c] ? w : l->whole[c];
        l->out[c] = l->out[c] || k == op->nin;
        l->of[k][d] = c;
    }
}

/* Elements of operand @p k (tensor @p t) at the letters' sizes (a ragged
   dim at its own), into *@p out; false on overflow. */
static bool computed_numel(const letters_t *l, const remat_block_t *b, const bound_t *bd,
                           size_t k, size_t t, uint64_t *out) {
    uint64_t n = 1;
    for (size_t d = 0; d < b->tensors[t].rank; d++) {
        const size_t c = l->of[k][d];
        if (!remat_i_mul(n, c == NO_LETTER ? bd->ctdim[t][d] : l->size[c], &n)) {
            return false;
        }
    }
    *out = n;
    return true;
}

/* The parts each device holds of the contraction's sum: the product, over
   the contracted letters held smaller than whole, of whole / held. */
static uint64_t partial_parts(const letters_t *l) {
    uint64_t parts = 1;
    for (size_t c = 0; c < l->n; c++) {
        if (!l->out[c] && l->size[c] > 0 && l->size[c] < l->whole[c]) {
            uint64_t f = l->whole[c] / l->size[c];
            if (!remat_i_mul(parts, f, &parts)) {
                return REMAT_MAX_AXIS_SIZE;
            }
        }
    }
    return parts;
}

/* Bytes each device sends to complete a partial output of @p computed
   elements of @p eb bytes split in @p parts: a ring reduce-scatter moves
   (parts - 1) / parts of it. A scatter, not an all-reduce, whatever the
   graph holds of the output: MaxText scatters the sums it makes (the
   projections' outputs are constrained to `activation_embed`, sharded
   over `tensor`; moe.py psum_scatters the experts' rows), and what reads
   them reads a shard. */
static bool partial_bytes(uint64_t computed, uint64_t parts, uint64_t eb, uint64_t *out) {
    uint64_t whole;
    if (!remat_i_mul(computed, eb, &whole)) {
        return false;
    }
    *out = whole / parts * (parts - 1);
    return true;
}

/* Op @p j's inputs gathered here (first readers of their buffers) and its
   partial output, into bd->act_ag[j] and bd->act_rs[j]; and the bytes of
   the whole-size buffers it holds while it runs, into bd->act_mem[j]:
   each activation input gathered to its letters' sizes (at every reader:
   the gathered copy lives while any of them runs) and the partial output
   before its reduce-scatter. */
static bool op_collectives(const remat_block_t *b, const uint64_t *dimsize, size_t j,
                           bound_t *bd) {
    const remat_op_t *op = &b->ops[j];
    letters_t l;
    read_letters(b, bd, dimsize, j, &l);
    uint64_t ag = 0, mem = 0, whole;
    for (size_t k = 0; k < op->nin; k++) {
        const size_t t = op->in[k], buf = b->tensors[t].storage;
        uint64_t c, eb = bd->numel[t] ? bd->tbytes[t] / bd->numel[t] : 0, moved;
        if (bd->ix.tflags[t] & REMAT_I_T_PARAM) {
            continue;
        }
        if (!computed_numel(&l, b, bd, k, t, &c)) {
            return false;
        }
        if (c > bd->numel[t] && (!remat_i_mul(c, eb, &whole) || !remat_i_add(mem, whole, &mem))) {
            return false;
        }
        if (c > bd->numel[t] && !bd->mark[buf]) {
            bd->mark[buf] = 1;
            if (!remat_i_mul(c - bd->numel[t], eb, &moved) || !remat_i_add(ag, moved, &ag)) {
                return false;
            }
        }
    }
    const size_t y = op->out[0];
    const uint64_t parts = partial_parts(&l);
    uint64_t c, rs = 0, eb = bd->numel[y] ? bd->tbytes[y] / bd->numel[y] : 0;
    if (parts > 1 && (!computed_numel(&l, b, bd, op->nin, y, &c) ||
                      !partial_bytes(c, parts, eb, &rs) || !remat_i_mul(c, eb, &whole) ||
                      !remat_i_add(mem, whole, &mem))) {
        return false;
    }
    bd->act_ag[j] = ag;
    bd->act_rs[j] = rs;
    bd->act_mem[j] = mem;
    return ag <= BYTES_MAX && rs <= BYTES_MAX && mem <= BYTES_MAX;
}

remat_status_t remat_i_act_collectives(const remat_graph_t *g, const remat_block_t *b,
                                       const uint64_t *dimsize, bound_t *bd,
                                       remat_error_t *err) {
    memset(bd->mark, 0, b->ntensors * sizeof *bd->mark);
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (op->kind != REMAT_OP_EINSUM || op->nout != 1) {
            continue;
        }
        if (!op_collectives(b, dimsize, j, bd)) {
            return remat_error_set(err, REMAT_E_OVERFLOW, g->source, NULL,
                                   "the activation collective bytes of '%s' do not fit in 64 "
                                   "bits with this config",
                                   op->name);
        }
    }
    return REMAT_OK;
}
