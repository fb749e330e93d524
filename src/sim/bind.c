/* SPDX-License-Identifier: MIT */
/*
 * bind.c: a graph bound to a config and mesh: every dim's size, and per
 * tensor and op of the layer and the head, per-device sizes, bytes and
 * FLOPs, computed once per analyzer.
 *
 * Invariants:
 *  - every bound byte and FLOP count is at most BYTES_MAX (2^62); a count
 *    that would pass it is an overflow error, never a wrapped value;
 *  - a view owns no bytes: bytes[i] is nonzero only for a tensor that is its
 *    own storage, and a buffer's bytes are those of that tensor;
 *  - a dim divides evenly over its shards and micro-batches, or binding
 *    fails: nothing downstream rounds.
 */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "sim_rooms.h"
#include "util.h"

static remat_status_t overflow(const remat_graph_t *g, const char *what, const char *name,
                               remat_error_t *err) {
    return remat_error_set(err, REMAT_E_OVERFLOW, g->source, NULL,
                           "%s of '%s' does not fit in 64 bits with this config", what, name);
}

static bool has_vocab_dim(const remat_graph_t *g, const remat_tensor_t *t) {
    for (size_t i = 0; i < t->rank; i++) {
        const char *from = g->dims[t->dim[i]].from;
        if (from && strcmp(from, "vocab_size") == 0) {
            return true;
        }
    }
    return false;
}

void remat_i_bound_release(bound_t *b) {
    free(b->tdim);
    free(b->numel);
    free(b->bytes);
    free(b->kbytes);
    free(b->gbytes);
    free(b->gnumel);
    free(b->fwd);
    free(b->bwd);
    free(b->kv_extra);
    free(b->op_gather);
    free(b->op_gather_mem);
    free(b->tbytes);
    free(b->fwd_s);
    free(b->bwd_s);
    free(b->pos);
}

static void bound_alloc(const remat_block_t *b, bound_t *out) {
    memset(out, 0, sizeof *out);
    out->tdim = remat_i_xcalloc(b->ntensors, sizeof *out->tdim);
    out->numel = remat_i_xcalloc(b->ntensors, sizeof *out->numel);
    out->bytes = remat_i_xcalloc(b->ntensors, sizeof *out->bytes);
    out->kbytes = remat_i_xcalloc(b->ntensors, sizeof *out->kbytes);
    out->gbytes = remat_i_xcalloc(b->ntensors, sizeof *out->gbytes);
    out->gnumel = remat_i_xcalloc(b->ntensors, sizeof *out->gnumel);
    out->fwd = remat_i_xcalloc(b->nops, sizeof *out->fwd);
    out->bwd = remat_i_xcalloc(b->nops, sizeof *out->bwd);
    out->kv_extra = remat_i_xcalloc(b->nops, sizeof *out->kv_extra);
    out->op_gather = remat_i_xcalloc(b->nops, sizeof *out->op_gather);
    out->op_gather_mem = remat_i_xcalloc(b->nops, sizeof *out->op_gather_mem);
    out->tbytes = remat_i_xcalloc(b->ntensors, sizeof *out->tbytes);
    out->fwd_s = remat_i_xcalloc(b->nops, sizeof *out->fwd_s);
    out->bwd_s = remat_i_xcalloc(b->nops, sizeof *out->bwd_s);
    out->pos = remat_i_xcalloc(b->nops, sizeof *out->pos);
}

/* Tensor @p i's per-device dims and element counts (sharded, and once
   FSDP-gathered) into @p out; the counts into *n and *gn. */
static remat_status_t bind_dims_of(const remat_graph_t *g, const remat_tensor_t *t, size_t i,
                                   const remat_mesh_t *mesh, const uint64_t *dimsize,
                                   bound_t *out, uint64_t *n, uint64_t *gn, remat_error_t *err) {
    const unsigned fsdp_axes = (1u << REMAT_AXIS_FSDP) | (1u << REMAT_AXIS_FSDP_TRANSPOSE);
    *n = 1;
    *gn = 1;
    for (size_t j = 0; j < t->rank; j++) {
        const remat_dim_t *dim = &g->dims[t->dim[j]];
        const char *logical = t->param ? dim->weight_axis : dim->axis;
        unsigned axes = remat_mesh_axes(mesh, logical);
        uint64_t shards = remat_mesh_product(mesh, axes);
        uint64_t size = dimsize[t->dim[j]];
        if (size % shards) {
            char text[128];
            remat_mesh_axes_text(axes, text, sizeof text);
            return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                   "tensor '%s' dim '%s' of %llu does not divide over %llu "
                                   "shards (%s, logical axis %s)",
                                   t->name, dim->name, (unsigned long long)size,
                                   (unsigned long long)shards, text, logical);
        }
        out->tdim[i][j] = size / shards;
        if (!remat_i_mul(*n, size / shards, n) ||
            !remat_i_mul(*gn, size / remat_mesh_product(mesh, axes & ~fsdp_axes), gn)) {
            return overflow(g, "the element count", t->name, err);
        }
    }
    return REMAT_OK;
}

static remat_status_t bind_tensors(const remat_graph_t *g, const remat_block_t *b,
                                   const remat_config_t *cfg, const remat_mesh_t *mesh,
                                   const uint64_t *dimsize, bool head, bound_t *out,
                                   remat_error_t *err) {
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        uint64_t n, gn, by;
        remat_status_t st = bind_dims_of(g, t, i, mesh, dimsize, out, &n, &gn, err);
        if (st) {
            return st;
        }
        if (!remat_i_mul(n, remat_config_dtype_bytes(cfg, t->dtype), &by) || by > BYTES_MAX) {
            return overflow(g, "the byte count", t->name, err);
        }
        /* num_vocab_tiling: the loss runs over token chunks, so only one
           chunk of every [.., vocab] activation is live at a time. */
        if (head && !t->param && cfg->num_vocab_tiling > 1 && has_vocab_dim(g, t)) {
            if (n % cfg->num_vocab_tiling) {
                return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                       "num_vocab_tiling=%llu does not divide the %llu elements "
                                       "of '%s'",
                                       (unsigned long long)cfg->num_vocab_tiling,
                                       (unsigned long long)n, t->name);
            }
            by /= cfg->num_vocab_tiling;
        }
        out->numel[i] = n;
        out->tbytes[i] = by;
        out->gnumel[i] = t->param ? gn : 0;
        out->bytes[i] = t->storage == i ? by : 0;
        out->kbytes[i] = out->bytes[i];
        out->gbytes[i] = t->needs_grad && !t->param ? by : 0;
        assert(out->tbytes[i] <= BYTES_MAX && out->gbytes[i] <= BYTES_MAX);
    }
    return REMAT_OK;
}

/* FP8 training keeps the operands of weight einsums for backward as the
   quantized copy: 1 byte an element plus a 4-byte fp32 scale. A buffer
   that any other backward rule also reads keeps its full copy. */
static void fp8_kept_copies(const remat_block_t *b, bound_t *out) {
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage != i || !b->tensors[i].residual) {
            continue;
        }
        bool only_einsums = true, any = false;
        for (size_t j = 0; j < b->nops && only_einsums; j++) {
            const remat_op_t *op = &b->ops[j];
            if (!op->has_backward) {
                continue;
            }
            for (size_t k = 0; k < op->nsaves; k++) {
                if (b->tensors[op->saves[k]].storage == i) {
                    any = true;
                    only_einsums &= weight_einsum(b, op);
                }
            }
        }
        if (any && only_einsums) {
            out->kbytes[i] = out->numel[i] + 4;
        }
    }
}

/* The bytes op @p j's params are read with: FSDP gathers a param in the
   weight dtype (fp8 under fp8); only a param sharded over FSDP is gathered
   into a new buffer, and one held in host RAM is always copied in. */
static void op_gather(const remat_block_t *b, const remat_config_t *cfg, size_t j,
                      bound_t *out) {
    const remat_op_t *op = &b->ops[j];
    for (size_t i = 0; i < op->nin; i++) {
        if (b->tensors[op->in[i]].param) {
            size_t w = op->in[i];
            unsigned bytes =
                is_fp8(cfg) ? 1 : remat_config_dtype_bytes(cfg, b->tensors[w].dtype);
            out->op_gather[j] += out->gnumel[w] * bytes;
            if (out->gnumel[w] != out->numel[w] || cfg->parameter_memory_host_offload) {
                out->op_gather_mem[j] += out->gnumel[w] * bytes;
            }
        }
    }
}

static uint64_t numel_sum(const bound_t *out, const size_t *ts, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        s += out->numel[ts[i]];
    }
    return s;
}

static remat_status_t bind_ops(const remat_graph_t *g, const remat_block_t *b,
                               const remat_config_t *cfg, const remat_mesh_t *mesh,
                               const uint64_t *dimsize, bound_t *out, remat_error_t *err) {
    const uint64_t context = mesh->shards[REMAT_AXIS_CONTEXT];
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        out->pos[j] = p;
        op_gather(b, cfg, j, out);
        uint64_t sin = numel_sum(out, op->in, op->nin), sout = numel_sum(out, op->out, op->nout);
        bool bad = (op->kind == REMAT_OP_RESHAPE || op->kind == REMAT_OP_SPLIT ||
                    op->kind == REMAT_OP_CONCAT) &&
                   sin != sout;
        if (bad) {
            return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                   "%s op '%s' has %llu elements in and %llu out per device with "
                                   "this config",
                                   remat_opkind_name(op->kind), op->name,
                                   (unsigned long long)sin, (unsigned long long)sout);
        }
        if (op->kind == REMAT_OP_FLASH_ATTENTION && context > 1) {
            /* Context parallelism all-gathers K and V for the kernel. */
            uint64_t kv = out->bytes[b->tensors[op->in[1]].storage] +
                          out->bytes[b->tensors[op->in[2]].storage];
            out->kv_extra[j] = kv * (context - 1);
        }
        if (!remat_i_op_flops(b, op, out->numel, (const uint64_t(*)[REMAT_MAX_RANK])out->tdim,
                              dimsize, &out->fwd[j], &out->bwd[j]) ||
            out->fwd[j] > BYTES_MAX || out->bwd[j] > BYTES_MAX) {
            return overflow(g, "the FLOP count", op->name, err);
        }
    }
    return REMAT_OK;
}

static remat_status_t bind_block(const remat_graph_t *g, const remat_block_t *b,
                                 const remat_config_t *cfg, const remat_mesh_t *mesh,
                                 const uint64_t *dimsize, bool head, bound_t *out,
                                 remat_error_t *err) {
    bound_alloc(b, out);
    remat_status_t st = bind_tensors(g, b, cfg, mesh, dimsize, head, out, err);
    if (st) {
        return st;
    }
    if (is_fp8(cfg) && !head) {
        fp8_kept_copies(b, out);
    }
    return bind_ops(g, b, cfg, mesh, dimsize, out, err);
}

/* Every dim's size on one device's micro-batch: from the config (divided
   by its `div` key, and the batch by the pipeline's micro-batches) or the
   graph's own value. */
static remat_status_t bind_dim_sizes(remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    remat_status_t st;
    for (size_t d = 0; d < g->ndims; d++) {
        const remat_dim_t *dim = &g->dims[d];
        if (!dim->from) {
            an->dim_size[d] = dim->value;
            continue;
        }
        if ((st = remat_config_size(an->cfg, dim->from, &an->dim_size[d], err))) {
            return st;
        }
        uint64_t div = 1;
        if (dim->div && (st = remat_config_size(an->cfg, dim->div, &div, err))) {
            return st;
        }
        if (strcmp(dim->from, "per_device_batch_size") == 0) {
            div *= an->microbatches;
        }
        if (an->dim_size[d] % div) {
            return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                   "dim '%s' is %llu / %llu (%s%s%s), which does not divide",
                                   dim->name, (unsigned long long)an->dim_size[d],
                                   (unsigned long long)div, dim->from,
                                   dim->div ? " / " : " / pipeline micro-batches ",
                                   dim->div ? dim->div : "");
        }
        an->dim_size[d] /= div;
    }
    return REMAT_OK;
}

/* What the mesh asks of the graph before any dim is bound: whole layers per
   stage, and context parallelism only over flash attention. */
static remat_status_t check_mesh(const remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    if (g->ndims > SIM_MAX_DIMS) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, "$.dims", "at most 64 dims");
    }
    if (an->nlayers % an->nstages) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "%zu layers do not split evenly over %zu pipeline stages",
                               an->nlayers, an->nstages);
    }
    if (an->mesh.shards[REMAT_AXIS_CONTEXT] > 1) {
        for (size_t j = 0; j < g->layer.nops; j++) {
            const remat_op_t *op = &g->layer.ops[j];
            if (op->kind == REMAT_OP_EINSUM && !weight_einsum(&g->layer, op)) {
                return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                       "context parallelism is modelled for flash attention; "
                                       "op '%s' multiplies activations (use attention=flash)",
                                       op->name);
            }
        }
    }
    return REMAT_OK;
}

remat_status_t remat_i_bind(remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    an->nlayers = (size_t)an->cfg->base_num_decoder_layers;
    an->nstages = (size_t)an->mesh.shards[REMAT_AXIS_STAGE];
    an->microbatches = remat_mesh_microbatches(&an->mesh, an->cfg);
    an->fsdp = remat_mesh_product(&an->mesh, (1u << REMAT_AXIS_FSDP) |
                                                 (1u << REMAT_AXIS_FSDP_TRANSPOSE)) > 1;
    remat_status_t st;
    if ((st = check_mesh(an, err)) || (st = bind_dim_sizes(an, err)) ||
        (st = bind_block(g, &g->layer, an->cfg, &an->mesh, an->dim_size, false, &an->lb, err))) {
        return st;
    }
    if (g->has_head) {
        return bind_block(g, &g->head, an->cfg, &an->mesh, an->dim_size, true, &an->hb, err);
    }
    return REMAT_OK;
}
