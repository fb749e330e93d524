/* SPDX-License-Identifier: MIT */
/*
 * bind.c: a graph bound to a config and mesh: every dim's size, the kind of
 * every layer, and per tensor and op of each layer kind's block and of the
 * head, per-device sizes, bytes and FLOPs, computed once per analyzer.
 *
 * Invariants:
 *  - every bound byte and FLOP count is at most BYTES_MAX (2^62); a count
 *    that would pass it is an overflow error, never a wrapped value;
 *  - a view owns no bytes: bytes[i] is nonzero only for a tensor that is its
 *    own storage, and a buffer's bytes are those of that tensor;
 *  - a dim divides evenly over its shards and micro-batches, or binding
 *    fails: nothing downstream rounds;
 *  - every layer has one kind (kind_of[l] < nkinds, klayers sum to the
 *    layers), the stack's rule (remat_kind_t);
 *  - a gather group's params are held together over the span of the ops
 *    that read them: every op of the span holds all of them, and none
 *    prefetches within it;
 *  - the envelope (check_envelope) holds: sixteen times every byte the
 *    blocks can hold, all layers counted, is below 2^62, and so are every
 *    FLOP count times the step's micro-batches. Every later sum of bytes or
 *    FLOPs (static memory, a layer's profile, the step's live bytes, the
 *    tables) is a part of these, so none can overflow.
 */
#include <math.h>
#include <stdio.h>
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

/* Every per-tensor and per-op array of a bound block, with its count. */
#define BOUND_ARRAYS(X)                                                                        \
    X(tdim, nt) X(ctdim, nt) X(numel, nt) X(bytes, nt) X(kbytes, nt) X(gbytes, nt)              \
    X(gnumel, nt) X(fwd, no) X(bwd, no) X(kv_extra, no) X(op_gather, no) X(op_gather_mem, no)   \
    X(op_wgrad, no) X(gather_next, no) X(gather_prev, no) X(tbytes, nt) X(fwd_s, no)           \
    X(bwd_s, no) X(pos, no) X(fusable, nt) X(xscale, no)

/* Array starts stay aligned for any element type. */
#define SLAB_ALIGN ((size_t)16)
#define SLAB_UP(x) (((x) + SLAB_ALIGN - 1) / SLAB_ALIGN * SLAB_ALIGN)

void remat_i_bound_release(bound_t *b) {
    free(b->slab);
    memset(b, 0, sizeof *b);
}

/* All arrays in one zeroed allocation: an analysis binds two blocks, and
   twenty allocations each were a tenth of its time. The sizes cannot
   overflow: a graph's counts are bounded by its input file (64 MiB). */
static void bound_alloc(const remat_block_t *b, bound_t *out) {
    const size_t nt = b->ntensors, no = b->nops;
    size_t size = 0;
    memset(out, 0, sizeof *out);
#define SLAB_SIZE(f, n) size = SLAB_UP(size) + (n) * sizeof *out->f;
    BOUND_ARRAYS(SLAB_SIZE)
#undef SLAB_SIZE
    char *slab = remat_i_xcalloc(1, size ? size : 1);
    out->slab = slab;
    size = 0;
#define SLAB_CARVE(f, n)                                                                       \
    size = SLAB_UP(size);                                                                      \
    out->f = (void *)(slab + size);                                                            \
    size += (n) * sizeof *out->f;
    BOUND_ARRAYS(SLAB_CARVE)
#undef SLAB_CARVE
}

/* The logical axis of dim @p j of tensor @p t: its own `axes` entry when
   the graph names one, else its dim's (the weight axis for a param). */
static const char *dim_logical(const remat_graph_t *g, const remat_tensor_t *t, size_t j) {
    if (t->has_axes) {
        return t->axes[j];
    }
    const remat_dim_t *dim = &g->dims[t->dim[j]];
    return t->param ? dim->weight_axis : dim->axis;
}

/* The mesh axes a param is gathered over before use: MaxText's weights are
   sharded over the data-like axes (fsdp, fsdp_transpose, context, expert:
   the `embed` and `mlp` rules) only to be stored; a matmul reads them whole
   there and keeps the tensor-like shardings (tensor, tensor_sequence). */
#define GATHER_AXES                                                                            \
    ((1u << REMAT_AXIS_DATA) | (1u << REMAT_AXIS_FSDP) | (1u << REMAT_AXIS_FSDP_TRANSPOSE) |    \
     (1u << REMAT_AXIS_CONTEXT) | (1u << REMAT_AXIS_CONTEXT_USP) | (1u << REMAT_AXIS_EXPERT))

/* Tensor @p i's per-device dims and element counts (sharded, and once
   gathered for use) into @p out; the counts into *n and *gn. The mesh axes
   of its dims come from the logical axis rules as flax resolves them for
   the whole tensor (remat_mesh_tensor_axes). */
/* Tensors with the same logical axes (the same strings: a graph's dims
   and `axes` entries) shard alike; a block has a handful of such
   signatures, so each is resolved once. */
typedef struct axes_cache {
    size_t n;
    struct {
        size_t rank;
        const char *logical[REMAT_MAX_RANK];
        unsigned axes[REMAT_MAX_RANK];
    } e[32];
} axes_cache_t;

static void tensor_axes(axes_cache_t *c, const remat_mesh_t *mesh, const char *const *logical,
                        size_t rank, unsigned *axes) {
    for (size_t k = 0; k < c->n; k++) {
        if (c->e[k].rank == rank &&
            memcmp(c->e[k].logical, logical, rank * sizeof *logical) == 0) {
            memcpy(axes, c->e[k].axes, rank * sizeof *axes);
            return;
        }
    }
    remat_mesh_tensor_axes(mesh, logical, rank, axes);
    if (c->n < sizeof c->e / sizeof c->e[0]) {
        c->e[c->n].rank = rank;
        memcpy(c->e[c->n].logical, logical, rank * sizeof *logical);
        memcpy(c->e[c->n++].axes, axes, rank * sizeof *axes);
    }
}

static remat_status_t bind_dims_of(const remat_graph_t *g, const remat_tensor_t *t, size_t i,
                                   const remat_mesh_t *mesh, const uint64_t *dimsize,
                                   axes_cache_t *cache, bound_t *out, uint64_t *n, uint64_t *gn,
                                   remat_error_t *err) {
    const char *logical[REMAT_MAX_RANK];
    unsigned axes[REMAT_MAX_RANK];
    for (size_t j = 0; j < t->rank; j++) {
        logical[j] = dim_logical(g, t, j);
    }
    tensor_axes(cache, mesh, logical, t->rank, axes);
    *n = 1;
    *gn = 1;
    for (size_t j = 0; j < t->rank; j++) {
        uint64_t shards = remat_mesh_product(mesh, axes[j]);
        uint64_t size = dimsize[t->dim[j]];
        if (size % shards) {
            char text[128];
            remat_mesh_axes_text(axes[j], text, sizeof text);
            return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                   "tensor '%s' dim '%s' of %llu does not divide over %llu "
                                   "shards (%s, logical axis %s)",
                                   t->name, g->dims[t->dim[j]].name, (unsigned long long)size,
                                   (unsigned long long)shards, text,
                                   logical[j] ? logical[j] : "(none)");
        }
        out->tdim[i][j] = size / shards;
        /* what an op computes on: a param as gathered for use; an expert
           weight's experts (logical axis `exp`) stay where they are (expert
           parallelism moves the tokens, not the weights) */
        const bool experts = t->param && logical[j] && strcmp(logical[j], "exp") == 0;
        const unsigned kept = experts ? axes[j] : axes[j] & ~GATHER_AXES;
        out->ctdim[i][j] = t->param ? size / remat_mesh_product(mesh, kept) : size / shards;
        if (!remat_i_mul(*n, size / shards, n) || !remat_i_mul(*gn, out->ctdim[i][j], gn)) {
            return overflow(g, "the element count", t->name, err);
        }
    }
    return REMAT_OK;
}

/* num_vocab_tiling: MaxText's chunked loss (vocabulary_tiling.py) runs the
   head after the layers over token chunks, so each of its activations is
   one chunk's (1/T of the tokens); what the layers hand over (hL) stays
   whole, and so do the head's inputs and the scalar loss. */
static bool vocab_chunked(const remat_graph_t *g, const remat_block_t *b, const bound_t *out,
                          const remat_config_t *cfg, size_t i) {
    const remat_tensor_t *t = &b->tensors[i];
    return cfg->num_vocab_tiling > 1 && !t->param && t->rank > 0 && t->producer != REMAT_NONE &&
           out->pos[t->producer] >= g->head_npre && i != g->head_takes;
}

static remat_status_t bind_tensors(const remat_graph_t *g, const remat_block_t *b,
                                   const remat_config_t *cfg, const remat_mesh_t *mesh,
                                   const uint64_t *dimsize, bool head, bound_t *out,
                                   remat_error_t *err) {
    axes_cache_t cache = {0};
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        uint64_t n, gn, by;
        remat_status_t st = bind_dims_of(g, t, i, mesh, dimsize, &cache, out, &n, &gn, err);
        if (st) {
            return st;
        }
        if (!remat_i_mul(n, remat_config_dtype_bytes(cfg, t->dtype), &by) || by > BYTES_MAX) {
            return overflow(g, "the byte count", t->name, err);
        }
        if (head && vocab_chunked(g, b, out, cfg, i)) {
            if (n % cfg->num_vocab_tiling) {
                return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                       "num_vocab_tiling=%llu does not divide the %llu elements "
                                       "of '%s' (MaxText needs per_device_batch_size x "
                                       "max_target_length to divide)",
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
                    only_einsums &= weight_einsum(b, op) && !op->ragged[0];
                }
            }
        }
        if (any && only_einsums) {
            out->kbytes[i] = out->numel[i] + 4;
        }
    }
}

/* The bytes op @p j's params are read with, and the buffers reading them
   takes. MaxText casts a weight to the compute dtype before the matmul, so
   XLA gathers the cast copy (fp8 under fp8 quantization), weight by weight,
   and frees it after its op; in backward the weight's gradient exists whole
   in the compute dtype until its reduce-scatter. Only a param sharded over
   the gathered axes is gathered into a new buffer; one held in host RAM is
   brought in whole, in its own dtype. */
static bool op_gather(const remat_block_t *b, const remat_config_t *cfg, size_t j,
                      bound_t *out) {
    const remat_op_t *op = &b->ops[j];
    remat_acc_t reads = {0, false}, copies = {0, false}, wgrad = {0, false};
    for (size_t i = 0; i < op->nin; i++) {
        size_t w = op->in[i];
        if (!b->tensors[w].param) {
            continue;
        }
        const uint64_t cbytes = gathered_bytes(cfg, b, w);
        uint64_t wbytes = remat_config_dtype_bytes(cfg, b->tensors[w].dtype);
        bool gathered = out->gnumel[w] != out->numel[w];
        if (gathered) {
            remat_acc_add_product(&reads, out->gnumel[w], cbytes);
            remat_acc_add_product(&copies, out->gnumel[w], cbytes);
            remat_acc_add_product(&wgrad, out->gnumel[w], remat_dtype_bytes(cfg->dtype));
        } else {
            remat_acc_add_product(&reads, out->numel[w], wbytes);
        }
        if (cfg->parameter_memory_host_offload) {
            remat_acc_add_product(&copies, out->numel[w], wbytes);
        }
    }
    out->op_gather[j] = reads.value;
    out->op_gather_mem[j] = copies.value;
    out->op_wgrad[j] = wgrad.value;
    return !(reads.overflow || copies.overflow || wgrad.overflow);
}

/* The gather XLA overlaps with each op (fsdp_prefetch): forward, the next
   gathering op's, wrapping to the first of the next layer; backward, the
   previous one's. The head prefetches nothing. */
/* The bytes op @p j's gather makes for param @p w (op_gather's copies). */
static uint64_t param_copy(const remat_block_t *b, const remat_config_t *cfg, size_t w,
                           const bound_t *out) {
    uint64_t c = out->gnumel[w] != out->numel[w] ? out->gnumel[w] * gathered_bytes(cfg, b, w) : 0;
    if (cfg->parameter_memory_host_offload) {
        c += out->numel[w] * remat_config_dtype_bytes(cfg, b->tensors[w].dtype);
    }
    return c; /* at most the envelope's bytes: no overflow */
}

/* Whether op @p j reads a param of gather group @p group. */
static bool reads_group(const remat_block_t *b, size_t j, const char *group) {
    const remat_op_t *op = &b->ops[j];
    for (size_t i = 0; i < op->nin; i++) {
        const char *gg = b->tensors[op->in[i]].gather_group;
        if (gg && strcmp(gg, group) == 0) {
            return true;
        }
    }
    return false;
}

/* One gather group (@p first, a member param, names it): its members'
   copies are made before the first op that reads one and held to the last
   (forward; backward the span in reverse). Every op of the span holds them
   all instead of its own members', and prefetches nothing within the span:
   the group is already there. */
static void gather_group(const remat_block_t *b, const remat_config_t *cfg, size_t first,
                         bound_t *out) {
    const char *group = b->tensors[first].gather_group;
    uint64_t all = 0;
    for (size_t i = 0; i < b->ntensors; i++) {
        const char *gg = b->tensors[i].gather_group;
        all += gg && strcmp(gg, group) == 0 ? param_copy(b, cfg, i, out) : 0;
    }
    size_t lo = REMAT_NONE, hi = 0;
    for (size_t p = 0; p < b->nops; p++) {
        if (reads_group(b, b->order[p], group)) {
            lo = lo == REMAT_NONE ? p : lo;
            hi = p;
        }
    }
    for (size_t p = lo; lo != REMAT_NONE && p <= hi; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nin; i++) {
            const char *gg = b->tensors[op->in[i]].gather_group;
            if (gg && strcmp(gg, group) == 0) {
                out->op_gather_mem[j] -= param_copy(b, cfg, op->in[i], out);
            }
        }
        out->op_gather_mem[j] += all;
        out->gather_next[j] = p < hi ? 0 : out->gather_next[j];
        out->gather_prev[j] = p > lo ? 0 : out->gather_prev[j];
    }
}

/* Every gather group of the block, each once. */
static void gather_groups(const remat_block_t *b, const remat_config_t *cfg, bound_t *out) {
    for (size_t i = 0; i < b->ntensors; i++) {
        const char *gg = b->tensors[i].gather_group;
        bool seen = false;
        for (size_t k = 0; gg && k < i && !seen; k++) {
            seen = b->tensors[k].gather_group && strcmp(b->tensors[k].gather_group, gg) == 0;
        }
        if (gg && !seen) {
            gather_group(b, cfg, i, out);
        }
    }
}

static void gather_prefetch(const remat_block_t *b, bool wrap, bound_t *out) {
    const size_t n = b->nops;
    for (size_t p = 0; p < n; p++) {
        size_t j = b->order[p];
        for (size_t k = 1; k <= n && (wrap || p + k < n); k++) {
            uint64_t g = out->op_gather_mem[b->order[(p + k) % n]];
            if (g) {
                out->gather_next[j] = g;
                break;
            }
        }
        for (size_t k = 1; k <= n && (wrap || k <= p); k++) {
            uint64_t g = out->op_gather_mem[b->order[(p + n - k % n) % n]];
            if (g) {
                out->gather_prev[j] = g;
                break;
            }
        }
    }
}

/* Bounded by REMAT_MAX_IO tensors of at most 2^62 elements: no overflow in
   64 bits. */
static uint64_t numel_sum(const bound_t *out, const size_t *ts, size_t n) {
    remat_acc_t sum = {0, false};
    for (size_t i = 0; i < n; i++) {
        remat_acc_add(&sum, out->numel[ts[i]]);
    }
    return sum.overflow ? UINT64_MAX : sum.value;
}

static remat_status_t bind_ops(const remat_graph_t *g, const remat_block_t *b,
                               const remat_config_t *cfg, const remat_mesh_t *mesh,
                               const uint64_t *dimsize, bound_t *out, remat_error_t *err) {
    const uint64_t context = mesh->shards[REMAT_AXIS_CONTEXT];
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op_gather(b, cfg, j, out)) {
            return overflow(g, "the gathered weight bytes", op->name, err);
        }
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
            remat_acc_t kv = {out->bytes[b->tensors[op->in[1]].storage], false};
            remat_acc_add(&kv, out->bytes[b->tensors[op->in[2]].storage]);
            remat_acc_mul(&kv, context - 1);
            if (kv.overflow) {
                return overflow(g, "the gathered K/V bytes", op->name, err);
            }
            out->kv_extra[j] = kv.value;
        }
        if (!remat_i_op_flops(b, op, out->numel, (const uint64_t(*)[REMAT_MAX_RANK])out->ctdim,
                              dimsize, &out->fwd[j], &out->bwd[j]) ||
            out->fwd[j] > BYTES_MAX || out->bwd[j] > BYTES_MAX) {
            return overflow(g, "the FLOP count", op->name, err);
        }
    }
    return REMAT_OK;
}

/* XLA fuses cheap elementwise work into the ops that read its result: an
   op of these kinds can be computed inside its readers' fusions... */
static bool fusable_producer(remat_opkind_t k) {
    switch (k) {
        case REMAT_OP_ADD:
        case REMAT_OP_MUL:
        case REMAT_OP_SCALE:
        case REMAT_OP_SILU:
        case REMAT_OP_GELU:
        case REMAT_OP_CAST:
        case REMAT_OP_ROPE:
        case REMAT_OP_TRANSPOSE:
        case REMAT_OP_SPLIT:
            return true;
        default:
            return false;
    }
}

/* ...when every reader is itself a loop or reduction fusion: elementwise
   ops, norms, softmax, the loss, layout changes. Contractions and the
   attention kernel read materialized operands. */
static bool fusing_reader(remat_opkind_t k) {
    return fusable_producer(k) || k == REMAT_OP_RMSNORM || k == REMAT_OP_LAYERNORM ||
           k == REMAT_OP_SOFTMAX || k == REMAT_OP_CROSS_ENTROPY || k == REMAT_OP_DROPOUT;
}

/* Tensor @p i can stay unmaterialized when its producer is fusable, it owns
   its buffer, it is not a block input or output, and every op that reads it
   in forward, and every op whose backward reads it, fuses. */
static bool fusable_tensor(const remat_block_t *b, size_t i) {
    const remat_tensor_t *t = &b->tensors[i];
    if (t->producer == REMAT_NONE || t->storage != i || t->param ||
        !fusable_producer(b->ops[t->producer].kind)) {
        return false;
    }
    for (size_t k = 0; k < b->noutputs; k++) {
        if (b->outputs[k] == i) {
            return false;
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        bool reads = false;
        for (size_t k = 0; k < op->nin; k++) {
            reads |= op->in[k] == i;
        }
        for (size_t k = 0; op->has_backward && k < op->nsaves; k++) {
            reads |= op->saves[k] == i;
        }
        if (reads && !fusing_reader(op->kind)) {
            return false;
        }
    }
    return true;
}

static remat_status_t bind_block(const remat_graph_t *g, const remat_block_t *b,
                                 const remat_config_t *cfg, const remat_mesh_t *mesh,
                                 const uint64_t *dimsize, bool head, bound_t *out,
                                 remat_error_t *err) {
    bound_alloc(b, out);
    for (size_t p = 0; p < b->nops; p++) {
        out->pos[b->order[p]] = p;
    }
    remat_status_t st = bind_tensors(g, b, cfg, mesh, dimsize, head, out, err);
    if (st) {
        return st;
    }
    if (is_fp8(cfg) && !head) {
        fp8_kept_copies(b, out);
    }
    if ((st = bind_ops(g, b, cfg, mesh, dimsize, out, err))) {
        return st;
    }
    if (cfg->fsdp_prefetch && !head) {
        gather_prefetch(b, true, out);
    }
    gather_groups(b, cfg, out);
    for (size_t i = 0; !head && i < b->ntensors; i++) {
        out->fusable[i] = fusable_tensor(b, i);
    }
    return REMAT_OK;
}

/* Every dim's size on one device's micro-batch: from the config (divided
   by its `div` key, and the batch by the pipeline's micro-batches) or the
   graph's own value. */
/* MaxText's expert-parallel receive buffer (moe.py, get_ragged_buffer_size)
   holds the local routed tokens times min(EP, experts / top-k): the worst
   case, every shard's tokens routed here; or times ragged_buffer_factor
   when that is set (rounded up to a whole factor). Without expert
   parallelism there is no all-to-all: 1. */
static uint64_t moe_buffer_factor(const remat_analyzer_t *an) {
    const remat_config_t *c = an->cfg;
    const uint64_t ep = an->mesh.shards[REMAT_AXIS_EXPERT];
    if (ep <= 1) {
        return 1;
    }
    if (c->ragged_buffer_factor > 0) {
        double f = ceil(c->ragged_buffer_factor);
        return f < (double)REMAT_MAX_AXIS_SIZE ? (uint64_t)f : REMAT_MAX_AXIS_SIZE;
    }
    uint64_t per = (uint64_t)c->num_experts / c->num_experts_per_tok; /* checked >= 1 */
    return ep < per ? ep : (per ? per : 1);
}

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
        if (strcmp(dim->from, "moe_buffer_factor") == 0) {
            an->dim_size[d] = moe_buffer_factor(an);
        }
        if (an->dim_size[d] == 0) {
            char path[REMAT_NAME_LEN + 16];
            snprintf(path, sizeof path, "$.dims.%s", dim->name);
            return remat_error_set(err, REMAT_E_CONFIG, g->source, path,
                                   "dim '%s' binds to %s, which is 0 with this config", dim->name,
                                   dim->from);
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
    for (size_t k = 0; an->mesh.shards[REMAT_AXIS_CONTEXT] > 1 && k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        for (size_t j = 0; j < b->nops; j++) {
            const remat_op_t *op = &b->ops[j];
            if (op->kind == REMAT_OP_EINSUM && !weight_einsum(b, op)) {
                return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                       "context parallelism is modelled for flash attention; "
                                       "op '%s' multiplies activations (use attention=flash)",
                                       op->name);
            }
        }
    }
    return REMAT_OK;
}

/* Everything one block can hold or run, summed without regard to when. */
static void block_envelope(const remat_block_t *b, const bound_t *bd, remat_acc_t *bytes,
                           remat_acc_t *flops) {
    for (size_t i = 0; i < b->ntensors; i++) {
        remat_acc_add(bytes, bd->bytes[i]);
        remat_acc_add(bytes, bd->kbytes[i]);
        remat_acc_add(bytes, bd->gbytes[i]);
        remat_acc_add(bytes, bd->tbytes[i]);
        remat_acc_add_product(bytes, bd->gnumel[i], 8); /* gathered and its gradient */
    }
    for (size_t j = 0; j < b->nops; j++) {
        const uint64_t parts[] = {bd->op_gather[j], bd->op_gather_mem[j], bd->op_wgrad[j],
                                  bd->kv_extra[j],  bd->gather_next[j],   bd->gather_prev[j]};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
            remat_acc_add(bytes, parts[k]);
        }
        remat_acc_add(flops, bd->fwd[j]);
        remat_acc_add(flops, bd->fwd[j]); /* a re-run */
        remat_acc_add(flops, bd->bwd[j]);
    }
}

/* The step holds at most: static memory (params, optimizer state,
   gradients, an accumulator: at most 5x the param bytes), residuals of
   every layer for each micro-batch in flight (at most 2x, all layers), one
   layer's transients, the reserve (less than the transients) and the head.
   Sixteen times the blocks' envelope covers all of it. */
static remat_status_t check_envelope(const remat_analyzer_t *an, remat_error_t *err) {
    remat_acc_t lbytes = {0, false}, lflops = {0, false};
    remat_acc_t hbytes = {0, false}, hflops = {0, false};
    /* Every kind's envelope as if every layer ran each: an upper bound. */
    for (size_t k = 0; k < an->g->nkinds; k++) {
        block_envelope(&an->g->kinds[k].block, &an->kb[k], &lbytes, &lflops);
    }
    if (an->g->has_head) {
        block_envelope(&an->g->head, &an->hb, &hbytes, &hflops);
    }
    remat_acc_mul(&lbytes, an->nlayers);
    remat_acc_add(&lbytes, hbytes.value);
    remat_acc_mul(&lbytes, 16);
    remat_acc_mul(&lflops, an->nlayers);
    remat_acc_add(&lflops, hflops.value);
    remat_acc_mul(&lflops, an->microbatches);
    remat_acc_mul(&lflops, an->cfg->gradient_accumulation_steps);
    if (lbytes.overflow || hbytes.overflow || lflops.overflow || hflops.overflow) {
        return remat_error_set(err, REMAT_E_OVERFLOW, an->g->source, NULL,
                               "the step's %s do not fit in 62 bits with this config",
                               lbytes.overflow || hbytes.overflow ? "bytes" : "FLOPs");
    }
    return REMAT_OK;
}

/* Each kind's rule bound to the config (remat_kind_t), and the kind of
   every layer. */
static remat_status_t bind_kinds(remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    uint64_t first[REMAT_MAX_KINDS], every[REMAT_MAX_KINDS];
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_kind_t *kd = &g->kinds[k];
        remat_status_t st = REMAT_OK;
        first[k] = kd->first_n ? kd->first_n : UINT64_MAX;
        every[k] = kd->every_n ? kd->every_n : 1;
        if ((kd->first && (st = remat_config_size(an->cfg, kd->first, &first[k], err))) ||
            (kd->every && (st = remat_config_size(an->cfg, kd->every, &every[k], err)))) {
            return st;
        }
        an->klayers[k] = 0;
    }
    an->kind_of = remat_i_xcalloc(an->nlayers ? an->nlayers : 1, sizeof *an->kind_of);
    an->klayers[0] = g->nkinds == 1 ? an->nlayers : 0; /* a uniform stack: all kind 0 */
    for (size_t l = 0; g->nkinds > 1 && l < an->nlayers; l++) {
        an->kind_of[l] = (unsigned char)remat_graph_kind_of(g, l, first, every);
        an->klayers[an->kind_of[l]]++;
    }
#ifndef NDEBUG
    size_t sum = 0;
    for (size_t k = 0; k < g->nkinds; k++) {
        sum += an->klayers[k];
    }
    assert(sum == an->nlayers);
#endif
    return REMAT_OK;
}

/* A kind with an attention window w over a sequence of s (or an op with a
   window of its own, which wins): its flash attention ops visit only the
   keys within the window. A causal op's count
   (s^2 / 2 pairs, attention_flops) becomes s w - w^2 / 2, a full one's s^2
   becomes s w; the kernel's blocks, so its memory, do not change
   (docs/memory-model.md). The counts stay below 2^62 (the envelope), so
   the scaled ones, smaller, do too. */
static remat_status_t apply_window(const remat_kind_t *kind, const remat_config_t *cfg,
                                   bound_t *bd, remat_error_t *err) {
    const remat_block_t *b = &kind->block;
    const double s = (double)cfg->max_target_length;
    uint64_t kind_window = 0;
    remat_status_t kst =
        kind->window ? remat_config_size(cfg, kind->window, &kind_window, err) : REMAT_OK;
    if (kst) {
        return kst;
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->kind != REMAT_OP_FLASH_ATTENTION) {
            continue;
        }
        uint64_t window = kind_window;
        remat_status_t st = op->window[0] ? remat_config_size(cfg, op->window, &window, err)
                                          : REMAT_OK;
        if (st) {
            return st;
        }
        if (window == 0 || window >= cfg->max_target_length) {
            continue;
        }
        const double w = (double)window;
        const double f = op->causal ? (2 * s * w - w * w) / (s * s) : w / s;
        bd->fwd[j] = (uint64_t)((double)bd->fwd[j] * f);
        bd->bwd[j] = (uint64_t)((double)bd->bwd[j] * f);
        /* The kernel computes whole blocks of sa_block_kv keys: a query
           block visits the ceil(w / B) blocks of its window and its
           diagonal one, s B (ceil(w / B) + 1) pairs in all, at most the
           whole causal (or full) count. */
        const double B = (double)cfg->sa_block_kv;
        const double model = op->causal ? s * w - w * w / 2 : s * w;
        double executed = s * B * (ceil(w / B) + 1);
        const double whole = op->causal ? s * (s + B) / 2 : s * s;
        executed = executed < whole ? executed : whole;
        bd->xscale[j] = model > 0 ? executed / model : 1;
    }
    return REMAT_OK;
}

remat_status_t remat_i_bind(remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    an->nlayers = (size_t)an->cfg->base_num_decoder_layers;
    an->nstages = (size_t)an->mesh.shards[REMAT_AXIS_STAGE];
    an->microbatches = remat_mesh_microbatches(&an->mesh, an->cfg);
    remat_status_t st;
    if ((st = check_mesh(an, err)) || (st = bind_dim_sizes(an, err)) ||
        (st = bind_kinds(an, err))) {
        return st;
    }
    /* FSDP in the wide sense: some param is stored sharded over an axis it
       is gathered over before use. */
    an->fsdp = false;
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        if ((st = bind_block(g, b, an->cfg, &an->mesh, an->dim_size, false, &an->kb[k], err))) {
            return st;
        }
        if ((st = apply_window(&g->kinds[k], an->cfg, &an->kb[k], err))) {
            return st;
        }
        for (size_t i = 0; i < b->ntensors; i++) {
            an->fsdp |= b->tensors[i].param && an->kb[k].gnumel[i] != an->kb[k].numel[i];
        }
    }
    if (g->has_head &&
        (st = bind_block(g, &g->head, an->cfg, &an->mesh, an->dim_size, true, &an->hb, err))) {
        return st;
    }
    for (size_t i = 0; g->has_head && i < g->head.ntensors; i++) {
        an->fsdp |= g->head.tensors[i].param && an->hb.gnumel[i] != an->hb.numel[i];
    }
    return check_envelope(an, err);
}
