/* SPDX-License-Identifier: MIT */
/*
 * sim.c: binding a graph to a config, and the step simulation.
 *
 * Design notes (DESIGN §3; docs/memory-model.md has the long form).
 *
 * Buffers. A tensor owns a buffer unless a view op (reshape, transpose,
 * split) made it, in which case it uses its base's buffer; a buffer is live
 * while any tensor using it is live, and its bytes count once.
 *
 * One layer, forward (positions p = 0.. in topological order):
 *  (1) an op's output buffers are allocated when it runs; the live bytes are
 *      measured right after, when inputs and outputs coexist;
 *  (2) a buffer holding a `device` residual, or the layer output, is kept;
 *  (3) a buffer holding an `offload` residual stays until the end of the
 *      layer's forward (the copy overlaps the layer) and is then freed;
 *  (4) any other buffer is freed after its last forward reader.
 * One layer, backward:
 *  (5) offloaded buffers are fetched (allocated) first;
 *  (6) the plan's recompute ops run in topological order; a rebuilt buffer
 *      that no backward op reads is freed after its last recompute reader;
 *  (7) ops run backward in reverse order: gradients of their differentiable
 *      non-param inputs are allocated (once, accumulated after), the
 *      gradients of their outputs are freed, and residual buffers are freed
 *      after their last backward reader. Weight gradients go to the static
 *      gradient buffer.
 * The step: static memory, the head's embedding, layers 0..L-1 forward, the
 * head's loss forward and backward, layers L-1..0 backward, embedding
 * backward. Layers with the same plan share one profile computed once; the
 * step composes profiles, which is exact because a layer's bytes depend
 * only on its plan and the live bytes it starts from.
 */
#include "remat/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "sim_internal.h"
#include "util.h"

static const char *const cat_names[REMAT_CAT_COUNT] = {
    "params",    "optimizer", "grads",   "grad_accum", "saved_activations", "activations",
    "recompute", "fetched",   "act_grads", "head",     "reserve", "gathered_weights",
    "weight_grad_buffer", "context_kv_gather", "pipeline_inflight"};

const char *remat_cat_name(remat_cat_t c) {
    return c < REMAT_CAT_COUNT ? cat_names[c] : "?";
}

void remat_result_init(remat_result_t *r) {
    memset(r, 0, sizeof *r);
}

void remat_result_release(remat_result_t *r) {
    free(r->layers);
    for (size_t i = 0; i < r->nprofiles; i++) {
        remat_plan_release(&r->profiles[i].plan);
        free(r->profiles[i].tensors);
    }
    free(r->profiles);
    free(r->names);
    free(r->stages);
    remat_result_init(r);
}

/* Byte counts stay below 2^62 so that signed deltas never overflow. */
#define BYTES_MAX ((uint64_t)1 << 62)

typedef struct bound {
    uint64_t (*tdim)[REMAT_MAX_RANK]; /* per tensor: per-device dim sizes */
    uint64_t *numel;    /* per tensor, per device */
    uint64_t *bytes;    /* per tensor: its own buffer; 0 for a view */
    uint64_t *kbytes;   /* per tensor: bytes of the kept copy (fp8 residuals) */
    uint64_t *gbytes;   /* per tensor: its gradient buffer; 0 if none */
    uint64_t *gnumel;   /* per param: elements once FSDP-gathered */
    uint64_t *fwd, *bwd; /* per op */
    uint64_t *kv_extra; /* per op: context-parallel K/V gather live during it */
    uint64_t *op_gather; /* per op: bytes of its params as it reads them (whole over FSDP) */
    uint64_t *op_gather_mem; /* per op: of those, the copies FSDP or the host must make */
    uint64_t *tbytes;   /* per tensor: its size, views included */
    double *fwd_s, *bwd_s; /* per op: roofline seconds (op_times) */
    size_t *pos;        /* per op: position in the block's order */
} bound_t;

static void bound_release(bound_t *b) {
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

static bool is_fp8(const remat_config_t *cfg) {
    return strcmp(cfg->quantization, "fp8") == 0 || strcmp(cfg->quantization, "nanoo_fp8") == 0;
}

/* A weight einsum: an einsum with a param operand. */
static bool weight_einsum(const remat_block_t *b, const remat_op_t *op) {
    if (op->kind != REMAT_OP_EINSUM) {
        return false;
    }
    for (size_t i = 0; i < op->nin; i++) {
        if (b->tensors[op->in[i]].param) {
            return true;
        }
    }
    return false;
}

static remat_status_t bind_block(const remat_graph_t *g, const remat_block_t *b,
                                 const remat_config_t *cfg, const remat_mesh_t *mesh,
                                 const uint64_t *dimsize, bool head, bound_t *out,
                                 remat_error_t *err) {
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
    const unsigned fsdp_axes = (1u << REMAT_AXIS_FSDP) | (1u << REMAT_AXIS_FSDP_TRANSPOSE);
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        uint64_t n = 1, gn = 1, by;
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
            if (!remat_i_mul(n, size / shards, &n) ||
                !remat_i_mul(gn, size / remat_mesh_product(mesh, axes & ~fsdp_axes), &gn)) {
                return overflow(g, "the element count", t->name, err);
            }
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
    }
    /* FP8 training keeps the operands of weight einsums for backward as the
       quantized copy: 1 byte an element plus a 4-byte fp32 scale. A buffer
       that any other backward rule also reads keeps its full copy. */
    if (is_fp8(cfg) && !head) {
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
    const uint64_t context = mesh->shards[REMAT_AXIS_CONTEXT];
    for (size_t p = 0; p < b->nops; p++) {
        const remat_op_t *op = &b->ops[b->order[p]];
        out->pos[b->order[p]] = p;
        uint64_t sin = 0, sout = 0;
        for (size_t i = 0; i < op->nin; i++) {
            sin += out->numel[op->in[i]];
            if (b->tensors[op->in[i]].param) {
                /* FSDP gathers a param in the weight dtype, fp8 under fp8. */
                size_t w = op->in[i];
                unsigned bytes = is_fp8(cfg) ? 1 : remat_config_dtype_bytes(cfg, b->tensors[w].dtype);
                out->op_gather[b->order[p]] += out->gnumel[w] * bytes;
                /* Only a param sharded over FSDP is gathered into a new
                   buffer; one held in host RAM is always copied in. */
                if (out->gnumel[w] != out->numel[w] || cfg->parameter_memory_host_offload) {
                    out->op_gather_mem[b->order[p]] += out->gnumel[w] * bytes;
                }
            }
        }
        for (size_t i = 0; i < op->nout; i++) {
            sout += out->numel[op->out[i]];
        }
        bool bad = (op->kind == REMAT_OP_RESHAPE && sin != sout) ||
                   (op->kind == REMAT_OP_SPLIT && sin != sout) ||
                   (op->kind == REMAT_OP_CONCAT && sin != sout);
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
            out->kv_extra[b->order[p]] = kv * (context - 1);
        }
        if (!remat_i_op_flops(b, op, out->numel, (const uint64_t(*)[REMAT_MAX_RANK])out->tdim,
                              dimsize, &out->fwd[b->order[p]], &out->bwd[b->order[p]]) ||
            out->fwd[b->order[p]] > BYTES_MAX || out->bwd[b->order[p]] > BYTES_MAX) {
            return overflow(g, "the FLOP count", op->name, err);
        }
    }
    return REMAT_OK;
}

/* The roofline of every op (docs/time-model.md): its time is the larger of
   its FLOPs at the chip's peak and the bytes it moves at HBM bandwidth.
   Forward moves its inputs (weights as gathered) and outputs; backward
   moves the output gradients, the input gradients, the residuals it reads,
   the weights again and the weight gradients. Views move nothing. Weight
   einsums run at the fp8 peak under fp8 quantization, all else at bf16. */
static void op_times(const remat_block_t *b, const remat_config_t *cfg, const remat_hw_t *hw,
                     bound_t *bd) {
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (remat_i_opkind_is_view(op->kind)) {
            bd->fwd_s[j] = bd->bwd_s[j] = 0;
            continue;
        }
        double fmoved = (double)bd->op_gather[j], bmoved = (double)bd->op_gather[j];
        for (size_t i = 0; i < op->nin; i++) {
            const remat_tensor_t *t = &b->tensors[op->in[i]];
            if (t->param) {
                bmoved += (double)bd->gnumel[op->in[i]] * remat_dtype_bytes(cfg->grad_dtype);
            } else {
                fmoved += (double)bd->tbytes[op->in[i]];
                bmoved += (double)bd->gbytes[op->in[i]];
            }
        }
        for (size_t i = 0; i < op->nout; i++) {
            fmoved += (double)bd->tbytes[op->out[i]];
            bmoved += (double)bd->gbytes[op->out[i]];
        }
        for (size_t i = 0; i < op->nsaves; i++) {
            bmoved += (double)bd->tbytes[op->saves[i]];
        }
        double peak = is_fp8(cfg) && weight_einsum(b, op) ? hw->flops_fp8 : hw->flops_bf16;
        double fc = (double)bd->fwd[j] / peak, fm = fmoved / hw->hbm_bw;
        double bc = (double)bd->bwd[j] / peak, bm = bmoved / hw->hbm_bw;
        bd->fwd_s[j] = fc > fm ? fc : fm;
        bd->bwd_s[j] = op->has_backward ? (bc > bm ? bc : bm) : 0;
    }
}

/* ---- one layer's profile ------------------------------------------------ */

typedef struct tpl {
    int64_t fwd_peak;
    size_t fwd_op;
    int64_t fwd_cats[REMAT_CAT_COUNT];
    int64_t fwd_delta;
    int64_t fwd_dcats[REMAT_CAT_COUNT];
    int64_t bwd_peak;
    remat_step_t bwd_step;
    size_t bwd_op;
    int64_t bwd_cats[REMAT_CAT_COUNT];
    int64_t bwd_delta;
    int64_t bwd_dcats[REMAT_CAT_COUNT];
    uint64_t saved, offloaded, recompute_flops, fwd_flops, bwd_flops;
    double fwd_s, bwd_s, rec_s;
} tpl_t;

enum { B_TRANS = 0, B_KEEP, B_OFF };

typedef struct scratch {
    unsigned char *cls;   /* per buffer: B_TRANS / B_KEEP / B_OFF */
    size_t *free_fwd;     /* per buffer: forward position after which it is freed */
    size_t *bwd_use;      /* per buffer: smallest backward position reading it */
    size_t *rec_use;      /* per buffer: largest recompute position reading it */
    uint64_t *cur;        /* per buffer: bytes while live */
    unsigned char *live;  /* per buffer */
    unsigned char *cat;   /* per buffer: remat_cat_t while live */
    unsigned char *glive; /* per tensor: gradient live */
} scratch_t;

static void scratch_init(scratch_t *s, size_t n) {
    s->cls = remat_i_xcalloc(n, 1);
    s->free_fwd = remat_i_xcalloc(n, sizeof(size_t));
    s->bwd_use = remat_i_xcalloc(n, sizeof(size_t));
    s->rec_use = remat_i_xcalloc(n, sizeof(size_t));
    s->cur = remat_i_xcalloc(n, sizeof(uint64_t));
    s->live = remat_i_xcalloc(n, 1);
    s->cat = remat_i_xcalloc(n, 1);
    s->glive = remat_i_xcalloc(n, 1);
}

static void scratch_release(scratch_t *s) {
    free(s->cls);
    free(s->free_fwd);
    free(s->bwd_use);
    free(s->rec_use);
    free(s->cur);
    free(s->live);
    free(s->cat);
    free(s->glive);
}

typedef struct meter {
    int64_t live;
    int64_t cats[REMAT_CAT_COUNT];
    int64_t peak;
    int64_t peak_cats[REMAT_CAT_COUNT];
    bool any;
    remat_step_t step;
    size_t op;
} meter_t;

static void alloc_buf(meter_t *m, scratch_t *s, size_t buf, uint64_t bytes, remat_cat_t c) {
    s->live[buf] = 1;
    s->cat[buf] = (unsigned char)c;
    s->cur[buf] = bytes;
    m->live += (int64_t)bytes;
    m->cats[c] += (int64_t)bytes;
}

static void free_buf(meter_t *m, scratch_t *s, size_t buf) {
    if (!s->live[buf]) {
        return;
    }
    s->live[buf] = 0;
    m->live -= (int64_t)s->cur[buf];
    m->cats[s->cat[buf]] -= (int64_t)s->cur[buf];
}

static void add_const(meter_t *m, remat_cat_t c, int64_t bytes) {
    m->live += bytes;
    m->cats[c] += bytes;
}

static void measure(meter_t *m, remat_step_t step, size_t op) {
    if (!m->any || m->live > m->peak) {
        m->any = true;
        m->peak = m->live;
        memcpy(m->peak_cats, m->cats, sizeof m->cats);
        m->step = step;
        m->op = op;
    }
}

/* Measures with @p extra bytes live only during this op (K/V gathers). */
static void measure_with(meter_t *m, remat_cat_t c, uint64_t extra, remat_step_t step, size_t op) {
    add_const(m, c, (int64_t)extra);
    measure(m, step, op);
    add_const(m, c, -(int64_t)extra);
}

static size_t min_pos(size_t a, size_t b) {
    return a == REMAT_NONE ? b : b == REMAT_NONE ? a : (a < b ? a : b);
}

/* An op's backward, around the moment it is measured: its inputs'
   gradients are allocated (once: later writers accumulate into them); then
   its outputs' gradients are consumed and the residuals whose last reader
   it is (at backward position @p p) are freed. */
static void backward_begin(meter_t *m, scratch_t *s, const bound_t *bd, const remat_op_t *op) {
    for (size_t i = 0; i < op->nin; i++) {
        size_t ti = op->in[i];
        if (bd->gbytes[ti] && !s->glive[ti]) {
            s->glive[ti] = 1;
            add_const(m, REMAT_CAT_ACT_GRADS, (int64_t)bd->gbytes[ti]);
        }
    }
}

static void backward_end(meter_t *m, scratch_t *s, const remat_block_t *b, const bound_t *bd,
                         const remat_op_t *op, size_t p) {
    for (size_t i = 0; i < op->nout; i++) {
        size_t to = op->out[i];
        if (s->glive[to]) {
            s->glive[to] = 0;
            add_const(m, REMAT_CAT_ACT_GRADS, -(int64_t)bd->gbytes[to]);
        }
    }
    for (size_t i = 0; i < op->nsaves; i++) {
        size_t buf = b->tensors[op->saves[i]].storage;
        if (s->bwd_use[buf] == p) {
            free_buf(m, s, buf);
        }
    }
}

/* Collective buffers live for a whole layer: its FSDP-gathered weights (and
   the next layer's, prefetched), and in backward its full-size weight
   gradients before the reduce-scatter. */
typedef struct collectives {
    uint64_t gathered;    /* per layer: weights copied into HBM to run it */
    uint64_t sharded;     /* per layer: of those, the ones gathered over FSDP (ICI) */
    unsigned prefetch;    /* 0 or 1 */
    uint64_t grad_buffer; /* per layer */
} collectives_t;

/* Resets @p s for block @p b and fills each buffer's forward free position
   (after its last reader; right after its producer when nothing reads it)
   and its last backward reader (the smallest position among ops whose
   backward saves a member). Classes start transient. */
static void buffer_lifetimes(const remat_block_t *b, const bound_t *bd, scratch_t *s) {
    for (size_t i = 0; i < b->ntensors; i++) {
        s->cls[i] = B_TRANS;
        s->free_fwd[i] = REMAT_NONE;
        s->bwd_use[i] = REMAT_NONE;
        s->rec_use[i] = REMAT_NONE;
        s->live[i] = 0;
        s->glive[i] = 0;
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        size_t buf = t->storage;
        size_t last = t->last_use != REMAT_NONE   ? t->last_use
                      : t->producer != REMAT_NONE ? bd->pos[t->producer]
                                                  : 0;
        if (s->free_fwd[buf] == REMAT_NONE || last > s->free_fwd[buf]) {
            s->free_fwd[buf] = last;
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->has_backward) {
            for (size_t i = 0; i < op->nsaves; i++) {
                size_t buf = b->tensors[op->saves[i]].storage;
                s->bwd_use[buf] = min_pos(s->bwd_use[buf], bd->pos[j]);
            }
        }
    }
}

static void profile_layer(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                          const collectives_t *col, scratch_t *s, tpl_t *t) {
    memset(t, 0, sizeof *t);
    const size_t nt = b->ntensors, no = b->nops;
    const size_t x = b->inputs[0], y = b->outputs[0];
    const size_t ys = b->tensors[y].storage;
    buffer_lifetimes(b, bd, s);
    for (size_t i = 0; i < nt; i++) {
        size_t buf = b->tensors[i].storage;
        if (plan->fate[i] == REMAT_FATE_DEVICE) {
            s->cls[buf] = B_KEEP;
        } else if (plan->fate[i] == REMAT_FATE_OFFLOAD && s->cls[buf] != B_KEEP) {
            s->cls[buf] = B_OFF;
        }
    }
    for (size_t j = 0; j < no; j++) {
        const remat_op_t *op = &b->ops[j];
        size_t p = bd->pos[j];
        if (plan->recompute_op[j]) {
            for (size_t i = 0; i < op->nin; i++) {
                size_t buf = b->tensors[op->in[i]].storage;
                if (s->rec_use[buf] == REMAT_NONE || p > s->rec_use[buf]) {
                    s->rec_use[buf] = p;
                }
            }
        }
    }
    for (size_t i = 0; i < nt; i++) {
        if (b->tensors[i].storage != i) {
            continue;
        }
        if (s->cls[i] == B_KEEP) {
            t->saved += bd->kbytes[i];
        } else if (s->cls[i] == B_OFF) {
            t->offloaded += bd->kbytes[i];
        }
    }
    for (size_t j = 0; j < no; j++) {
        t->fwd_flops += bd->fwd[j];
        t->bwd_flops += bd->bwd[j];
        t->fwd_s += bd->fwd_s[j];
        t->bwd_s += bd->bwd_s[j];
        if (plan->recompute_op[j]) {
            t->recompute_flops += bd->fwd[j];
            t->rec_s += bd->fwd_s[j];
        }
    }
    const int64_t gathered = (int64_t)(col->gathered * (1 + col->prefetch));

    /* Forward. The layer input's buffer is in the caller's baseline. */
    meter_t m = {0};
    s->live[x] = 1;
    s->cat[x] = REMAT_CAT_SAVED;
    s->cur[x] = bd->kbytes[x];
    add_const(&m, REMAT_CAT_GATHERED, gathered);
    for (size_t p = 0; p < no; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            size_t o = op->out[i];
            if (b->tensors[o].storage == o) {
                /* A residual kept as a smaller copy (fp8) is a working
                   activation until its last forward reader. */
                bool saved = (s->cls[o] == B_KEEP && bd->kbytes[o] == bd->bytes[o]) || o == ys;
                alloc_buf(&m, s, o, bd->bytes[o],
                          saved ? REMAT_CAT_SAVED : REMAT_CAT_ACTIVATIONS);
            }
        }
        measure_with(&m, REMAT_CAT_KV_GATHER, bd->kv_extra[j], REMAT_STEP_FORWARD, j);
        for (size_t k = 0; k < op->nin + op->nout; k++) {
            size_t buf = b->tensors[k < op->nin ? op->in[k] : op->out[k - op->nin]].storage;
            if (buf == ys || buf == x || s->free_fwd[buf] != p || !s->live[buf]) {
                continue;
            }
            if (s->cls[buf] == B_TRANS) {
                free_buf(&m, s, buf);
            } else if (s->cur[buf] != bd->kbytes[buf]) {
                /* Done in forward: only the quantized copy stays. */
                free_buf(&m, s, buf);
                alloc_buf(&m, s, buf, bd->kbytes[buf],
                          s->cls[buf] == B_KEEP ? REMAT_CAT_SAVED : REMAT_CAT_ACTIVATIONS);
            }
        }
    }
    for (size_t i = 0; i < nt; i++) {
        if (b->tensors[i].storage == i && s->cls[i] == B_OFF && s->live[i]) {
            free_buf(&m, s, i);
        }
    }
    add_const(&m, REMAT_CAT_GATHERED, -gathered);
    t->fwd_peak = m.peak;
    t->fwd_op = m.op;
    memcpy(t->fwd_cats, m.peak_cats, sizeof m.cats);
    t->fwd_delta = m.live;
    memcpy(t->fwd_dcats, m.cats, sizeof m.cats);

    /* Backward. Baseline: kept buffers (SAVED) and the output's gradient. */
    meter_t w = {0};
    for (size_t i = 0; i < nt; i++) {
        s->live[i] = 0;
        if (b->tensors[i].storage == i && s->cls[i] == B_KEEP) {
            s->live[i] = 1;
            s->cat[i] = REMAT_CAT_SAVED;
            s->cur[i] = bd->kbytes[i];
        }
    }
    s->glive[y] = 1;
    add_const(&w, REMAT_CAT_GATHERED, gathered);
    add_const(&w, REMAT_CAT_GRAD_BUFFER, (int64_t)col->grad_buffer);
    bool fetched = false;
    for (size_t i = 0; i < nt; i++) {
        if (b->tensors[i].storage == i && s->cls[i] == B_OFF) {
            alloc_buf(&w, s, i, bd->kbytes[i], REMAT_CAT_FETCHED);
            fetched = true;
        }
    }
    if (fetched) {
        measure(&w, REMAT_STEP_FETCH, REMAT_NONE);
    }
    for (size_t i = 0; i < nt; i++) {
        if (s->live[i] && s->bwd_use[i] == REMAT_NONE && s->rec_use[i] == REMAT_NONE) {
            free_buf(&w, s, i);
        }
    }
    for (size_t p = 0; p < no; p++) {
        size_t j = b->order[p];
        if (!plan->recompute_op[j]) {
            continue;
        }
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            /* Outputs nothing needs are dead code in the re-run (XLA drops
               them): a dropout re-run for its mask makes no data output. */
            size_t buf = b->tensors[op->out[i]].storage;
            if (!s->live[buf] && plan->needed[op->out[i]]) {
                alloc_buf(&w, s, buf, bd->bytes[buf], REMAT_CAT_RECOMPUTE);
            }
        }
        measure_with(&w, REMAT_CAT_KV_GATHER, bd->kv_extra[j], REMAT_STEP_RECOMPUTE, j);
        for (size_t k = 0; k < op->nin + op->nout; k++) {
            size_t buf = b->tensors[k < op->nin ? op->in[k] : op->out[k - op->nin]].storage;
            bool done = s->rec_use[buf] == REMAT_NONE || s->rec_use[buf] <= p;
            if (s->live[buf] && s->bwd_use[buf] == REMAT_NONE && done) {
                free_buf(&w, s, buf);
            }
        }
    }
    for (size_t p = no; p-- > 0;) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        backward_begin(&w, s, bd, op);
        measure_with(&w, REMAT_CAT_KV_GATHER, bd->kv_extra[j], REMAT_STEP_BACKWARD, j);
        backward_end(&w, s, b, bd, op, p);
    }
    add_const(&w, REMAT_CAT_GATHERED, -gathered);
    add_const(&w, REMAT_CAT_GRAD_BUFFER, -(int64_t)col->grad_buffer);
    t->bwd_peak = w.peak;
    t->bwd_step = w.step;
    t->bwd_op = w.op;
    memcpy(t->bwd_cats, w.peak_cats, sizeof w.cats);
    t->bwd_delta = w.live;
    memcpy(t->bwd_dcats, w.cats, sizeof w.cats);
}

/* ---- the step ----------------------------------------------------------- */

typedef struct step {
    meter_t m;
    remat_moment_t at;
} step_t;

static void step_measure(step_t *st, int64_t extra, const int64_t *extra_cats,
                         remat_moment_t at) {
    int64_t v = st->m.live + extra;
    if (!st->m.any || v > st->m.peak) {
        st->m.any = true;
        st->m.peak = v;
        for (int c = 0; c < REMAT_CAT_COUNT; c++) {
            st->m.peak_cats[c] = st->m.cats[c] + (extra_cats ? extra_cats[c] : 0);
        }
        st->at = at;
    }
}

static void step_add(step_t *st, int64_t delta, const int64_t *dcats) {
    st->m.live += delta;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        st->m.cats[c] += dcats[c];
    }
}

/* The head's forward or backward over positions [from, to) (backward runs
   them in reverse), on the step meter. Under FSDP a head op's weights are
   gathered while it runs. */
static void head_sweep(const remat_graph_t *g, const bound_t *bd, scratch_t *s, step_t *st,
                       size_t from, size_t to, bool backward, bool fsdp) {
    const remat_block_t *b = &g->head;
    const size_t feeds = b->tensors[g->head_feeds].storage;
    remat_where_t where = from == 0 ? REMAT_AT_HEAD_PRE : REMAT_AT_HEAD_POST;
    int64_t gcats[REMAT_CAT_COUNT] = {0};
    if (!backward) {
        for (size_t p = from; p < to; p++) {
            size_t j = b->order[p];
            const remat_op_t *op = &b->ops[j];
            for (size_t i = 0; i < op->nout; i++) {
                size_t o = op->out[i];
                if (b->tensors[o].storage == o) {
                    alloc_buf(&st->m, s, o, bd->bytes[o],
                              o == feeds ? REMAT_CAT_SAVED : REMAT_CAT_HEAD);
                }
            }
            uint64_t gx = fsdp ? bd->op_gather_mem[j] : 0;
            gcats[REMAT_CAT_GATHERED] = (int64_t)gx;
            step_measure(st, (int64_t)gx, gcats,
                         (remat_moment_t){.step = REMAT_STEP_FORWARD, .where = where, .op = op->name});
            for (size_t k = 0; k < op->nin + op->nout; k++) {
                size_t buf = b->tensors[k < op->nin ? op->in[k] : op->out[k - op->nin]].storage;
                if (buf != feeds && s->cls[buf] == B_TRANS && s->free_fwd[buf] == p) {
                    free_buf(&st->m, s, buf);
                }
            }
        }
        return;
    }
    for (size_t p = to; p-- > from;) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        backward_begin(&st->m, s, bd, op);
        uint64_t gx = fsdp ? bd->op_gather_mem[j] : 0;
        gcats[REMAT_CAT_GATHERED] = (int64_t)gx;
        step_measure(st, (int64_t)gx, gcats,
                     (remat_moment_t){.step = REMAT_STEP_BACKWARD, .where = where, .op = op->name});
        backward_end(&st->m, s, b, bd, op, p);
    }
}

/* Head buffers: residuals stay to their last backward reader, the rest are
   freed after their last forward reader. The feed to layer 0 belongs to the
   layers once made; the last layer's output arrives from them. */
static void head_prepare(const remat_graph_t *g, const bound_t *bd, scratch_t *s) {
    const remat_block_t *b = &g->head;
    buffer_lifetimes(b, bd, s);
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].residual) {
            s->cls[b->tensors[i].storage] = B_KEEP;
        }
    }
    s->cls[b->tensors[g->head_feeds].storage] = B_TRANS;
    s->bwd_use[b->tensors[g->head_feeds].storage] = REMAT_NONE;
}

static remat_name_row_t *name_row(remat_result_t *r, const char *name) {
    for (size_t i = 0; i < r->nnames; i++) {
        if (strcmp(r->names[i].name, name) == 0) {
            return &r->names[i];
        }
    }
    r->names = remat_i_xrealloc(r->names, (r->nnames + 1) * sizeof *r->names);
    remat_name_row_t *row = &r->names[r->nnames++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    return row;
}

/* The checkpoint name a buffer's bytes are reported under: the first tag of
   a member with the buffer's fate, the owner first. */
static const char *buffer_name(const remat_block_t *b, const remat_plan_t *plan,
                               const remat_policy_t *policy, size_t layer, size_t buf,
                               remat_fate_t fate) {
    /* The buffer's own name (gpt3's qkv_proj), the one that placed it there
       when it has several (llama's context and attention_out). */
    const remat_tensor_t *t = &b->tensors[buf];
    remat_place_t want = fate == REMAT_FATE_DEVICE ? REMAT_PLACE_DEVICE : REMAT_PLACE_OFFLOAD;
    for (size_t k = 0; k < t->ntags; k++) {
        remat_place_t got;
        if (remat_policy_lookup(policy, t->tags[k], layer, &got) && got == want) {
            return t->tags[k];
        }
    }
    if (t->ntags) {
        return t->tags[0];
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == buf && plan->fate[i] == fate && b->tensors[i].ntags) {
            return b->tensors[i].tags[0];
        }
    }
    return buf == b->inputs[0] ? "decoder_layer_input" : "(unnamed)";
}

static remat_status_t sum_checked(uint64_t *acc, uint64_t a, uint64_t times, const char *what,
                                  remat_error_t *err) {
    uint64_t v;
    if (!remat_i_mul(a, times, &v) || !remat_i_add(*acc, v, acc) || *acc > BYTES_MAX) {
        return remat_error_set(err, REMAT_E_OVERFLOW, NULL, NULL,
                               "the step's %s do not fit in 63 bits with this config", what);
    }
    return REMAT_OK;
}

static void plan_copy(remat_plan_t *dst, const remat_plan_t *src) {
    remat_plan_init(dst);
    dst->ntensors = src->ntensors;
    dst->nops = src->nops;
    size_t nt = src->ntensors, no = src->nops;
    dst->asked = remat_i_xmalloc(nt * sizeof *dst->asked);
    dst->fate = remat_i_xmalloc(nt * sizeof *dst->fate);
    dst->unused = remat_i_xmalloc(nt * sizeof *dst->unused);
    dst->needed = remat_i_xmalloc((nt + no) * sizeof *dst->needed);
    dst->recompute_op = remat_i_xmalloc(no * sizeof *dst->recompute_op);
    memcpy(dst->asked, src->asked, nt * sizeof *dst->asked);
    memcpy(dst->fate, src->fate, nt * sizeof *dst->fate);
    memcpy(dst->unused, src->unused, nt * sizeof *dst->unused);
    memcpy(dst->needed, src->needed, (nt + no) * sizeof *dst->needed);
    memcpy(dst->recompute_op, src->recompute_op, no * sizeof *dst->recompute_op);
}

static remat_status_t plan_profiles(const remat_graph_t *g, const remat_policy_t *policy,
                                    const remat_config_t *cfg, size_t L, size_t *profile_of,
                                    const remat_plan_t *given, remat_result_t *r,
                                    remat_error_t *err) {
    if (given && policy->nranges == 0) {
        /* A uniform policy the caller already planned (the solver). */
        r->profiles = remat_i_xcalloc(1, sizeof *r->profiles);
        plan_copy(&r->profiles[0].plan, given);
        r->profiles[0].first = 0;
        r->profiles[0].last = L - 1;
        r->profiles[0].nlayers = L;
        r->nprofiles = 1;
        memset(profile_of, 0, L * sizeof *profile_of);
        return REMAT_OK;
    }
    if (policy->nranges > 64) {
        return remat_error_set(err, REMAT_E_POLICY, policy->source, "$.layers",
                               "at most 64 layer ranges");
    }
    for (size_t i = 0; i < policy->nranges; i++) {
        if (policy->ranges[i].last >= L) {
            char path[48];
            snprintf(path, sizeof path, "$.layers[%zu].range", i);
            return remat_error_set(err, REMAT_E_POLICY, policy->source, path,
                                   "range %zu-%zu is beyond the model's %zu layers (0-%zu)",
                                   policy->ranges[i].first, policy->ranges[i].last, L, L - 1);
        }
    }
    /* Layers covered by the same set of ranges get the same plan: plan once
       per distinct set, then merge identical plans into one profile. */
    uint64_t keys[65];
    size_t key_profile[65], nkeys = 0;
    remat_plan_t plan;
    remat_plan_init(&plan);
    remat_status_t st = REMAT_OK;
    for (size_t l = 0; l < L && st == REMAT_OK; l++) {
        uint64_t key = 0;
        for (size_t i = 0; i < policy->nranges; i++) {
            if (l >= policy->ranges[i].first && l <= policy->ranges[i].last) {
                key |= (uint64_t)1 << i;
            }
        }
        size_t k = 0;
        while (k < nkeys && keys[k] != key) {
            k++;
        }
        if (k == nkeys) {
            st = remat_plan_layer(g, policy, l, cfg->scan_layers, &plan, err);
            if (st) {
                break;
            }
            size_t p = 0;
            while (p < r->nprofiles && !remat_plan_equal(&r->profiles[p].plan, &plan)) {
                p++;
            }
            if (p == r->nprofiles) {
                r->profiles = remat_i_xrealloc(r->profiles, (p + 1) * sizeof *r->profiles);
                memset(&r->profiles[p], 0, sizeof r->profiles[p]);
                r->profiles[p].plan = plan;
                r->profiles[p].first = l;
                r->nprofiles++;
                remat_plan_init(&plan);
            }
            keys[nkeys] = key;
            key_profile[nkeys++] = p;
        }
        size_t p = key_profile[k];
        profile_of[l] = p;
        r->profiles[p].last = l;
        r->profiles[p].nlayers++;
    }
    remat_plan_release(&plan);
    return st;
}

/* Optimizer state elements for one param of local shape @p dims under
   adafactor (optax defaults, as MaxText uses them: no momentum, factored
   second moment when the two largest dims are both >= 128): one statistic
   per slice along each of the two largest dims, else the full moment. */
static uint64_t adafactor_elems(const uint64_t *dims, size_t rank, uint64_t numel) {
    size_t big = REMAT_NONE, second = REMAT_NONE;
    for (size_t i = 0; i < rank; i++) {
        if (big == REMAT_NONE || dims[i] >= dims[big]) {
            second = big;
            big = i;
        } else if (second == REMAT_NONE || dims[i] >= dims[second]) {
            second = i;
        }
    }
    if (second == REMAT_NONE || dims[second] < 128) {
        return numel;
    }
    return numel / dims[big] + numel / dims[second];
}

/* Static bytes of the params one device holds, by which part of the step
   uses them: the layers (times the stage's layer count), the head's pre
   ops (stage 0) and post ops (last stage). */
typedef struct static_part {
    uint64_t count, bytes, adafactor;
} static_part_t;

static void add_param(static_part_t *p, const bound_t *bd, const remat_tensor_t *t, size_t i) {
    p->count += bd->numel[i];
    p->bytes += bd->bytes[i];
    p->adafactor += adafactor_elems(bd->tdim[i], t->rank, bd->numel[i]);
}

typedef struct stage_ctx {
    const remat_graph_t *g;
    const remat_config_t *cfg;
    const bound_t *lb, *hb;
    const tpl_t *tpls;
    const size_t *profile_of;
    scratch_t *s;
    bool fsdp;
} stage_ctx_t;

/* One stage's step for one micro-batch on top of its static bytes and the
   residuals of the micro-batches in flight. */
static void simulate_stage(const stage_ctx_t *c, size_t first, size_t last, bool pre, bool post,
                           const int64_t *base_cats, step_t *stp) {
    const remat_graph_t *g = c->g;
    const remat_block_t *H = &g->head;
    scratch_t *s = c->s;
    memset(stp, 0, sizeof *stp);
    for (int k = 0; k < REMAT_CAT_COUNT; k++) {
        stp->m.cats[k] = base_cats[k];
        stp->m.live += base_cats[k];
    }
    const size_t x = g->layer.inputs[0], y = g->layer.outputs[0];
    if (g->has_head) {
        head_prepare(g, c->hb, s);
    }
    if (pre) {
        for (size_t i = 0; i < H->ninputs; i++) {
            size_t in = H->inputs[i];
            if (in != g->head_takes && H->tensors[in].storage == in) {
                alloc_buf(&stp->m, s, in, c->hb->bytes[in], REMAT_CAT_HEAD);
            }
        }
        head_sweep(g, c->hb, s, stp, 0, g->head_npre, false, c->fsdp);
        s->live[H->tensors[g->head_feeds].storage] = 0; /* the layers own it now */
    } else {
        /* The stage input arrives from the previous stage (or the caller). */
        add_const(&stp->m, REMAT_CAT_SAVED, (int64_t)c->lb->kbytes[x]);
    }
    for (size_t l = first; l <= last; l++) {
        const tpl_t *t = &c->tpls[c->profile_of[l]];
        step_measure(stp, t->fwd_peak, t->fwd_cats,
                     (remat_moment_t){.step = REMAT_STEP_FORWARD, .where = REMAT_AT_LAYER, .layer = l, .op = g->layer.ops[t->fwd_op].name});
        step_add(stp, t->fwd_delta, t->fwd_dcats);
    }
    if (post) {
        for (size_t i = 0; i < H->ninputs; i++) {
            size_t in = H->inputs[i];
            if (!pre && in != g->head_takes && H->tensors[in].storage == in) {
                alloc_buf(&stp->m, s, in, c->hb->bytes[in], REMAT_CAT_HEAD);
            }
        }
        size_t takes = H->tensors[g->head_takes].storage;
        s->live[takes] = 1;
        s->cat[takes] = REMAT_CAT_SAVED;
        s->cur[takes] = c->hb->bytes[takes];
        head_sweep(g, c->hb, s, stp, g->head_npre, H->nops, false, c->fsdp);
        for (size_t i = 0; i < H->noutputs; i++) {
            size_t o = H->outputs[i];
            if (c->hb->gbytes[o]) {
                s->glive[o] = 1;
                add_const(&stp->m, REMAT_CAT_ACT_GRADS, (int64_t)c->hb->gbytes[o]);
            }
        }
        head_sweep(g, c->hb, s, stp, g->head_npre, H->nops, true, c->fsdp);
        s->glive[g->head_takes] = 0; /* dy of the last layer: the layers free it */
    } else {
        /* The output leaves (for the loss or the next stage) and its
           gradient arrives in its place. */
        add_const(&stp->m, REMAT_CAT_SAVED, -(int64_t)c->lb->bytes[y]);
        add_const(&stp->m, REMAT_CAT_ACT_GRADS, (int64_t)c->lb->gbytes[y]);
    }
    for (size_t l = last + 1; l-- > first;) {
        const tpl_t *t = &c->tpls[c->profile_of[l]];
        const char *op = t->bwd_op == REMAT_NONE ? NULL : g->layer.ops[t->bwd_op].name;
        step_measure(stp, t->bwd_peak, t->bwd_cats,
                     (remat_moment_t){.step = t->bwd_step, .where = REMAT_AT_LAYER, .layer = l, .op = op});
        step_add(stp, t->bwd_delta, t->bwd_dcats);
    }
    if (pre) {
        s->glive[g->head_feeds] = 1; /* dx of the first layer, made by the layers */
        head_sweep(g, c->hb, s, stp, 0, g->head_npre, true, c->fsdp);
    }
}

/* The bound blocks of one (graph, config, hardware), for callers that
   analyze many policies of the same run (sim_internal.h). */
struct remat_i_bind_cache {
    bool valid;
    const remat_graph_t *g;
    const remat_hw_t *hw;
    remat_config_t cfg;
    bound_t lb, hb;
};

remat_i_bind_cache_t *remat_i_bind_cache_new(void) {
    return remat_i_xcalloc(1, sizeof(remat_i_bind_cache_t));
}

void remat_i_bind_cache_free(remat_i_bind_cache_t *c) {
    if (c) {
        bound_release(&c->lb);
        bound_release(&c->hb);
        free(c);
    }
}

static bool cache_hit(const remat_i_bind_cache_t *c, const remat_graph_t *g,
                      const remat_config_t *cfg, const remat_hw_t *hw) {
    return c && c->valid && c->g == g && c->hw == hw && memcmp(&c->cfg, cfg, sizeof *cfg) == 0;
}

remat_status_t remat_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                             const remat_policy_t *policy, const remat_hw_t *hw,
                             remat_result_t *r, remat_error_t *err) {
    return remat_i_analyze(g, cfg, policy, hw, NULL, false, NULL, r, err);
}

remat_status_t remat_i_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                               const remat_policy_t *policy, const remat_hw_t *hw,
                               const remat_plan_t *plan, bool lite, remat_i_bind_cache_t *cache,
                               remat_result_t *r, remat_error_t *err) {
    remat_result_release(r);
    r->graph = g;
    r->policy = policy;
    r->config = cfg;
    r->hw = hw;
    r->none_as_full = policy->none_policy && cfg->scan_layers;
    remat_status_t st = remat_policy_check(policy, g, err);
    if (st || (st = remat_mesh_build(cfg, &r->mesh, err))) {
        return st;
    }
    const remat_mesh_t *mesh = &r->mesh;
    if (g->ndims > sizeof r->dim_size / sizeof r->dim_size[0]) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, "$.dims", "at most 64 dims");
    }
    const size_t L = (size_t)cfg->base_num_decoder_layers;
    const size_t stages = (size_t)mesh->shards[REMAT_AXIS_STAGE];
    if (L % stages) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "%zu layers do not split evenly over %zu pipeline stages", L,
                               stages);
    }
    r->microbatches = remat_mesh_microbatches(mesh, cfg);
    if (mesh->shards[REMAT_AXIS_CONTEXT] > 1) {
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
    for (size_t d = 0; d < g->ndims; d++) {
        const remat_dim_t *dim = &g->dims[d];
        if (dim->from) {
            if ((st = remat_config_size(cfg, dim->from, &r->dim_size[d], err))) {
                return st;
            }
            uint64_t div = 1;
            if (dim->div && (st = remat_config_size(cfg, dim->div, &div, err))) {
                return st;
            }
            if (strcmp(dim->from, "per_device_batch_size") == 0) {
                div *= r->microbatches;
            }
            if (r->dim_size[d] % div) {
                return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                                       "dim '%s' is %llu / %llu (%s%s%s), which does not divide",
                                       dim->name, (unsigned long long)r->dim_size[d],
                                       (unsigned long long)div, dim->from,
                                       dim->div ? " / " : " / pipeline micro-batches ",
                                       dim->div ? dim->div : "");
            }
            r->dim_size[d] /= div;
        } else {
            r->dim_size[d] = dim->value;
        }
    }
    bound_t lb_local, hb_local;
    memset(&lb_local, 0, sizeof lb_local);
    memset(&hb_local, 0, sizeof hb_local);
    bound_t *lb = &lb_local, *hb = &hb_local;
    scratch_t s;
    size_t nscratch = g->layer.ntensors;
    if (g->has_head && g->head.ntensors > nscratch) {
        nscratch = g->head.ntensors;
    }
    scratch_init(&s, nscratch);
    size_t *profile_of = remat_i_xcalloc(L, sizeof *profile_of);
    tpl_t *tpls = NULL;
    const bool cached = cache_hit(cache, g, cfg, hw);
    if (cached) {
        lb = &cache->lb;
        hb = &cache->hb;
    } else {
        if ((st = bind_block(g, &g->layer, cfg, mesh, r->dim_size, false, lb, err))) {
            goto out;
        }
        if (g->has_head && (st = bind_block(g, &g->head, cfg, mesh, r->dim_size, true, hb, err))) {
            goto out;
        }
        op_times(&g->layer, cfg, hw, lb);
        if (g->has_head) {
            op_times(&g->head, cfg, hw, hb);
        }
        if (cache) {
            /* The cache takes the bound blocks over. */
            bound_release(&cache->lb);
            bound_release(&cache->hb);
            cache->lb = *lb;
            cache->hb = *hb;
            memset(lb, 0, sizeof *lb);
            memset(hb, 0, sizeof *hb);
            lb = &cache->lb;
            hb = &cache->hb;
            cache->g = g;
            cache->hw = hw;
            cache->cfg = *cfg;
            cache->valid = true;
        }
    }
    /* Params by the part of the step that uses them, and the model's count. */
    static_part_t layer = {0}, pre = {0}, post = {0};
    uint64_t global_layer = 0, global = 0;
    const bool fsdp = remat_mesh_product(mesh, (1u << REMAT_AXIS_FSDP) |
                                                   (1u << REMAT_AXIS_FSDP_TRANSPOSE)) > 1;
    collectives_t col = {.prefetch = cfg->fsdp_prefetch ? 1u : 0u};
    for (size_t i = 0; i < g->layer.ntensors; i++) {
        const remat_tensor_t *t = &g->layer.tensors[i];
        if (t->param) {
            add_param(&layer, lb, t, i);
            uint64_t n = 1;
            for (size_t j = 0; j < t->rank; j++) {
                n *= r->dim_size[t->dim[j]];
            }
            global_layer += n;
            /* Under FSDP the layer's weights are gathered while it runs; with
               parameters in host RAM they are brought to HBM likewise. */
            bool sharded = lb->gnumel[i] != lb->numel[i]; /* over FSDP */
            unsigned wb = is_fp8(cfg) ? 1 : remat_config_dtype_bytes(cfg, t->dtype);
            if (sharded || cfg->parameter_memory_host_offload) {
                col.gathered += lb->gnumel[i] * wb;
            }
            if (sharded) {
                col.sharded += lb->gnumel[i] * wb;
            }
            if (sharded) {
                col.grad_buffer += lb->gnumel[i] * remat_dtype_bytes(cfg->grad_dtype);
            }
        }
    }
    if ((st = sum_checked(&global, global_layer, L, "parameters", err))) {
        goto out;
    }
    for (size_t i = 0; g->has_head && i < g->head.ntensors; i++) {
        const remat_tensor_t *t = &g->head.tensors[i];
        if (!t->param) {
            continue;
        }
        uint64_t n = 1;
        for (size_t j = 0; j < t->rank; j++) {
            n *= r->dim_size[t->dim[j]];
        }
        global += n;
        bool in_pre = false, in_post = false;
        for (size_t p = 0; p < g->head.nops; p++) {
            const remat_op_t *op = &g->head.ops[g->head.order[p]];
            for (size_t k = 0; k < op->nin; k++) {
                if (op->in[k] == i) {
                    in_pre |= p < g->head_npre;
                    in_post |= p >= g->head_npre;
                }
            }
        }
        if (in_pre) {
            add_param(&pre, hb, t, i);
        }
        if (in_post && (!in_pre || stages > 1)) {
            add_param(&post, hb, t, i);
        }
    }
    r->param_count = global;
    /* Plans and profiles. */
    if ((st = plan_profiles(g, policy, cfg, L, profile_of, plan, r, err))) {
        goto out;
    }
    tpls = remat_i_xcalloc(r->nprofiles, sizeof *tpls);
    for (size_t p = 0; p < r->nprofiles; p++) {
        remat_profile_t *pr = &r->profiles[p];
        const remat_block_t *b = &g->layer;
        profile_layer(b, lb, &pr->plan, &col, &s, &tpls[p]);
        pr->fwd_peak_rel = tpls[p].fwd_peak > 0 ? (uint64_t)tpls[p].fwd_peak : 0;
        pr->bwd_peak_rel = tpls[p].bwd_peak > 0 ? (uint64_t)tpls[p].bwd_peak : 0;
        if (lite) {
            continue; /* the solver reads only the verdict and the times */
        }
        pr->tensors = remat_i_xcalloc(b->ntensors, sizeof *pr->tensors);
        for (size_t i = 0; i < b->ntensors; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            remat_tensor_row_t *row = &pr->tensors[i];
            row->tensor = i;
            memcpy(row->shape, lb->tdim[i], sizeof row->shape);
            row->bytes = lb->bytes[i];
            row->asked = pr->plan.asked[i];
            row->fate = pr->plan.fate[i];
            row->unused = pr->plan.unused[i];
            if (t->producer != REMAT_NONE && pr->plan.recompute_op[t->producer]) {
                /* The re-run's FLOPs go to its first output that is needed
                   (a dropout re-run for its mask: the mask). */
                const remat_op_t *op = &b->ops[t->producer];
                size_t first = REMAT_NONE;
                for (size_t k = 0; k < op->nout && first == REMAT_NONE; k++) {
                    if (pr->plan.needed[op->out[k]]) {
                        first = op->out[k];
                    }
                }
                if (first == i) {
                    row->recompute_flops = lb->fwd[t->producer];
                }
            }
            if (t->storage == i && s.cls[i] != B_TRANS) {
                remat_fate_t f = s.cls[i] == B_KEEP ? REMAT_FATE_DEVICE : REMAT_FATE_OFFLOAD;
                remat_name_row_t *nr =
                    name_row(r, buffer_name(b, &pr->plan, policy, pr->first, i, f));
                uint64_t *acc = f == REMAT_FATE_DEVICE ? &nr->saved_bytes : &nr->offloaded_bytes;
                if ((st = sum_checked(acc, lb->kbytes[i], pr->nlayers, "saved bytes", err))) {
                    goto out;
                }
            }
        }
        for (size_t j = 0; j < b->nops; j++) {
            if (!pr->plan.recompute_op[j]) {
                continue;
            }
            const char *name = "(unnamed)";
            for (size_t i = 0; i < b->ops[j].nout; i++) {
                if (b->tensors[b->ops[j].out[i]].ntags) {
                    name = b->tensors[b->ops[j].out[i]].tags[0];
                    break;
                }
            }
            if ((st = sum_checked(&name_row(r, name)->recompute_flops, lb->fwd[j], pr->nlayers,
                                  "recompute FLOPs", err))) {
                goto out;
            }
        }
    }
    /* Per-layer rows, FLOPs and offload (one micro-batch; a step runs
       `microbatches` of them). */
    r->nlayers = L;
    r->layers = remat_i_xcalloc(L, sizeof *r->layers);
    r->host_link_bw = cfg->host_link_bw > 0 ? cfg->host_link_bw : hw->host_link_bw;
    r->host_link_assumed = cfg->host_link_bw <= 0 && remat_hw_is_assumed(hw, "host_link_bw");
    const double flops_peak = hw->flops_bf16;
    const uint64_t fsdp_shards = remat_mesh_product(mesh, (1u << REMAT_AXIS_FSDP) |
                                                              (1u << REMAT_AXIS_FSDP_TRANSPOSE));
    /* A ring all-gather or reduce-scatter over n chips moves (n-1)/n of the
       full buffer through each chip's ICI. */
    const double fsdp_frac = (double)(fsdp_shards - 1) / (double)fsdp_shards;
    for (size_t l = 0; l < L; l++) {
        const tpl_t *t = &tpls[profile_of[l]];
        remat_layer_row_t *row = &r->layers[l];
        row->index = l;
        row->profile = profile_of[l];
        row->saved_device_bytes = t->saved;
        row->offloaded_bytes = t->offloaded;
        row->recompute_flops = t->recompute_flops;
        row->forward_flops = t->fwd_flops;
        row->backward_flops = t->bwd_flops;
        row->d2h_seconds = row->h2d_seconds = (double)t->offloaded / r->host_link_bw;
        /* parameter_memory_host_offload: the layer's weights come over the
           host link for its forward and again for its backward, on the
           host-to-device direction. */
        row->param_fetch_seconds =
            cfg->parameter_memory_host_offload ? (double)layer.bytes / r->host_link_bw : 0;
        row->forward_compute_seconds = t->fwd_s;
        row->backward_compute_seconds = t->bwd_s;
        row->recompute_seconds = t->rec_s;
        row->allgather_seconds = (double)col.sharded * fsdp_frac / hw->ici_bw;
        row->reduce_scatter_seconds = (double)col.grad_buffer * fsdp_frac / hw->ici_bw;
        double f = t->fwd_s, b2 = t->bwd_s + t->rec_s;
        double fc = row->allgather_seconds, bcol = row->allgather_seconds + row->reduce_scatter_seconds;
        row->forward_seconds = f > fc ? f : fc;
        double d2h = row->d2h_seconds, h2d = row->h2d_seconds + row->param_fetch_seconds;
        row->forward_seconds = row->forward_seconds > d2h ? row->forward_seconds : d2h;
        row->forward_seconds = row->forward_seconds > row->param_fetch_seconds
                                   ? row->forward_seconds
                                   : row->param_fetch_seconds;
        row->backward_seconds = b2 > bcol ? b2 : bcol;
        row->backward_seconds = row->backward_seconds > h2d ? row->backward_seconds : h2d;
    }

    /* Every stage's step; the worst stage is the verdict. */
    r->nstages = stages;
    r->stages = remat_i_xcalloc(stages, sizeof *r->stages);
    const size_t Ls = L / stages;
    stage_ctx_t sc = {g, cfg, lb, hb, tpls, profile_of, &s,
                      fsdp || cfg->parameter_memory_host_offload};
    const bool adafactor = strcmp(cfg->opt_type, "adafactor") == 0;
    const bool adam = strcmp(cfg->opt_type, "adamw") == 0 || strcmp(cfg->opt_type, "adam_pax") == 0;
    uint64_t worst = 0;
    for (size_t k = 0; k < stages; k++) {
        remat_stage_row_t *row = &r->stages[k];
        row->index = k;
        row->first_layer = k * Ls;
        row->last_layer = (k + 1) * Ls - 1;
        bool has_pre = g->has_head && k == 0, has_post = g->has_head && k == stages - 1;
        uint64_t count = 0, pbytes = 0, afac = 0, opt = 0, grads = 0, accum = 0, sbytes = 0;
        if ((st = sum_checked(&count, layer.count, Ls, "parameters", err)) ||
            (st = sum_checked(&pbytes, layer.bytes, Ls, "parameter bytes", err)) ||
            (st = sum_checked(&afac, layer.adafactor, Ls, "optimizer bytes", err))) {
            goto out;
        }
        if (has_pre) {
            count += pre.count;
            pbytes += pre.bytes;
            afac += pre.adafactor;
        }
        if (has_post) {
            count += post.count;
            pbytes += post.bytes;
            afac += post.adafactor;
        }
        if ((st = sum_checked(&grads, count, remat_dtype_bytes(cfg->grad_dtype), "gradients",
                              err)) ||
            (adam && (st = sum_checked(&opt, count, 2u * remat_dtype_bytes(cfg->mu_dtype),
                                       "optimizer bytes", err))) ||
            (adafactor && (st = sum_checked(&opt, afac, 4, "optimizer bytes", err))) ||
            (cfg->gradient_accumulation_steps > 1 &&
             (st = sum_checked(&accum, count, 4, "accumulator bytes", err)))) {
            goto out;
        }
        uint64_t host = 0;
        int64_t cats[REMAT_CAT_COUNT] = {0};
        if (cfg->parameter_memory_host_offload) {
            host += pbytes;
        } else {
            cats[REMAT_CAT_PARAMS] = (int64_t)pbytes;
        }
        if (cfg->optimizer_memory_host_offload) {
            host += opt;
        } else {
            cats[REMAT_CAT_OPTIMIZER] = (int64_t)opt;
        }
        cats[REMAT_CAT_GRADS] = (int64_t)grads;
        cats[REMAT_CAT_GRAD_ACCUM] = (int64_t)accum;
        cats[REMAT_CAT_RESERVE] = (int64_t)cfg->hbm_reserve;
        for (int c = 0; c < REMAT_CAT_COUNT; c++) {
            if ((st = sum_checked(&sbytes, (uint64_t)cats[c], 1, "static bytes", err))) {
                goto out;
            }
        }
        /* 1F1B: stage k holds the residuals of min(stages - k, micro-batches)
           micro-batches; the step below is the last of them. */
        row->in_flight = stages - k < r->microbatches ? stages - k : (size_t)r->microbatches;
        uint64_t stage_saved = 0;
        for (size_t l = row->first_layer; l <= row->last_layer; l++) {
            stage_saved += r->layers[l].saved_device_bytes;
        }
        if ((st = sum_checked(&row->inflight_bytes, stage_saved, row->in_flight - 1,
                              "in-flight bytes", err))) {
            goto out;
        }
        cats[REMAT_CAT_INFLIGHT] = (int64_t)row->inflight_bytes;
        row->static_bytes = sbytes;
        step_t stp;
        simulate_stage(&sc, row->first_layer, row->last_layer, has_pre, has_post, cats, &stp);
        row->peak_bytes = stp.m.peak > 0 ? (uint64_t)stp.m.peak : 0;
        memcpy(row->breakdown, stp.m.peak_cats, sizeof row->breakdown);
        row->peak_at = stp.at;
        row->peak_at.stage = k;
        row->peak_at.stages = stages;
        if (k == 0 || row->peak_bytes > worst) {
            worst = row->peak_bytes;
            r->worst_stage = k;
            r->param_count_device = count;
            r->param_bytes = pbytes;
            r->optimizer_bytes = opt;
            r->grad_bytes = grads;
            r->accum_bytes = accum;
            r->host_static_bytes = host;
        }
    }
    const remat_stage_row_t *w = &r->stages[r->worst_stage];
    /* Compute and transfers per step on a device of the worst stage: its
       layers (and head parts) for every micro-batch (gradient accumulation
       and pipeline micro-batches); the layer rows are per micro-batch. */
    const uint64_t steps = cfg->gradient_accumulation_steps * r->microbatches;
    double stage_mb_seconds = 0; /* one micro-batch through the worst stage */
    for (size_t l = w->first_layer; l <= w->last_layer; l++) {
        const remat_layer_row_t *row = &r->layers[l];
        if ((st = sum_checked(&r->forward_flops, row->forward_flops, steps, "FLOPs", err)) ||
            (st = sum_checked(&r->backward_flops, row->backward_flops, steps, "FLOPs", err)) ||
            (st = sum_checked(&r->recompute_flops, row->recompute_flops, steps, "FLOPs", err)) ||
            (st = sum_checked(&r->d2h_bytes, row->offloaded_bytes, steps, "offload bytes", err))) {
            goto out;
        }
        r->d2h_seconds += row->d2h_seconds * (double)steps;
        /* What a layer's time holds beyond its compute: transfers that the
           compute does not hide. */
        double fc = row->forward_compute_seconds;
        double bc = row->backward_compute_seconds + row->recompute_seconds;
        double fcol = fc > row->allgather_seconds ? fc : row->allgather_seconds;
        double bcolv = row->allgather_seconds + row->reduce_scatter_seconds;
        double bcol = bc > bcolv ? bc : bcolv;
        r->exposed_seconds += (row->forward_seconds - fcol + row->backward_seconds - bcol) *
                              (double)steps;
        r->exposed_collective_seconds += (fcol - fc + bcol - bc) * (double)steps;
        stage_mb_seconds += row->forward_seconds + row->backward_seconds;
    }
    for (size_t p = 0; g->has_head && p < g->head.nops; p++) {
        bool mine = p < g->head_npre ? w->index == 0 : w->index == stages - 1;
        size_t j = g->head.order[p];
        if (mine && ((st = sum_checked(&r->forward_flops, hb->fwd[j], steps, "FLOPs", err)) ||
                     (st = sum_checked(&r->backward_flops, hb->bwd[j], steps, "FLOPs", err)))) {
            goto out;
        }
        if (mine) {
            stage_mb_seconds += hb->fwd_s[j] + hb->bwd_s[j];
        }
    }
    r->h2d_bytes = r->d2h_bytes;
    r->h2d_seconds = r->d2h_seconds;
    r->model_flops = r->forward_flops + r->backward_flops;
    r->recompute_share = r->model_flops ? (double)r->recompute_flops / (double)r->model_flops : 0;
    r->compute_seconds = (double)(r->model_flops + r->recompute_flops) / flops_peak;
    for (size_t l = w->first_layer; l <= w->last_layer; l++) {
        r->recompute_seconds += r->layers[l].recompute_seconds * (double)steps;
    }
    r->added_seconds = r->recompute_seconds + r->exposed_seconds;
    r->offload_hidden = r->exposed_seconds <= 0;
    /* The pipeline runs at its slowest stage: the stage with the peak is not
       always the one with the most work (the loss head sits on the last).
       Across stages, model and hardware FLOPs per device are averaged. */
    double slowest = stages == 1 ? stage_mb_seconds : 0, all_model = 0, all_rec = 0;
    for (size_t k = 0; stages > 1 && k < stages; k++) {
        double t = 0;
        for (size_t l = r->stages[k].first_layer; l <= r->stages[k].last_layer; l++) {
            t += r->layers[l].forward_seconds + r->layers[l].backward_seconds;
        }
        for (size_t p = 0; g->has_head && p < g->head.nops; p++) {
            if (p < g->head_npre ? k == 0 : k == stages - 1) {
                t += hb->fwd_s[g->head.order[p]] + hb->bwd_s[g->head.order[p]];
            }
        }
        slowest = t > slowest ? t : slowest;
    }
    for (size_t l = 0; l < L; l++) {
        all_model += (double)(r->layers[l].forward_flops + r->layers[l].backward_flops);
        all_rec += (double)r->layers[l].recompute_flops;
    }
    for (size_t j = 0; g->has_head && j < g->head.nops; j++) {
        all_model += (double)(hb->fwd[j] + hb->bwd[j]);
    }
    all_model *= (double)steps / (double)stages;
    all_rec *= (double)steps / (double)stages;
    /* 1F1B: m micro-batches through p stages take m + p - 1 slots of one
       micro-batch's stage time; gradient accumulation repeats that. */
    r->bubble_fraction = (double)(stages - 1) / (double)(r->microbatches + stages - 1);
    r->step_seconds = slowest * (double)cfg->gradient_accumulation_steps *
                      (double)(r->microbatches + stages - 1);
    if (r->step_seconds > 0) {
        r->mfu = all_model / (r->step_seconds * flops_peak);
        r->hfu = (all_model + all_rec) / (r->step_seconds * flops_peak);
    }
    r->reserve_bytes = cfg->hbm_reserve;
    r->peak_bytes = w->peak_bytes;
    memcpy(r->breakdown, w->breakdown, sizeof r->breakdown);
    r->peak_at = w->peak_at;
    /* Host RAM: offloaded residuals of a device's layers for every
       micro-batch in flight, plus host-resident params/optimizer, for each
       chip of the host. */
    uint64_t per_chip = 0, off_stage = 0;
    for (size_t l = w->first_layer; l <= w->last_layer; l++) {
        off_stage += r->layers[l].offloaded_bytes;
    }
    if ((st = sum_checked(&per_chip, off_stage, w->in_flight, "host bytes", err)) ||
        (st = sum_checked(&per_chip, r->host_static_bytes, 1, "host bytes", err)) ||
        (st = sum_checked(&r->host_bytes_per_host, per_chip, hw->chips_per_host, "host bytes",
                          err))) {
        goto out;
    }
    r->host_ram_bytes = hw->host_ram_bytes;
    r->host_fits = r->host_bytes_per_host <= r->host_ram_bytes;
    r->budget_bytes = cfg->hbm_budget ? cfg->hbm_budget : hw->hbm_bytes;
    r->usable_bytes = (uint64_t)((double)r->budget_bytes * (1.0 - cfg->safety_margin));
    r->fits = r->peak_bytes <= r->budget_bytes;
    r->fits_margin = r->peak_bytes <= r->usable_bytes;
out:
    free(tpls);
    free(profile_of);
    scratch_release(&s);
    bound_release(&lb_local);
    bound_release(&hb_local);
    if (st) {
        remat_result_release(r);
    }
    return st;
}
