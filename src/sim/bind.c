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
 *    tables) is a part of these, so none can overflow;
 *  - a bound array is read only once written: binding (op_times for the
 *    seconds) writes each whole, but for those BOUND_ZEROED lists, which
 *    start zeroed and are written only where not zero;
 *  - tensors with the same dims, param flag and logical axes bind alike:
 *    each such shape is bound once per bind, for every block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/config_internal.h"
#include "model/graph_internal.h"
#include "sim/sim_rooms.h"
#include "base/util.h"

static remat_status_t overflow(const remat_graph_t *g, const char *what, const char *name,
                               remat_error_t *err) {
    return remat_error_set(err, REMAT_E_OVERFLOW, g->source, NULL,
                           "%s of '%s' does not fit in 64 bits with this config", what, name);
}

/* Every per-tensor and per-op array of a bound block, with its count:
   those binding (and op_times) write whole, then those it writes only
   where they are not zero, which the allocation zeroes. */
#define BOUND_ARRAYS(X)                                                                        \
    X(tdim, nt) X(ctdim, nt) X(numel, nt) X(bytes, nt) X(kbytes, nt) X(gbytes, nt)              \
    X(gnumel, nt) X(tbytes, nt) X(cbytes, nt) X(fwd, no) X(bwd, no) X(op_gather, no)           \
    X(op_gather_mem, no) X(op_wgrad, no) X(fwd_s, no) X(bwd_s, no) X(mark, nt)                 \
    X(act_f_s, no) X(act_b_s, no) X(act_br_s, no)
#define BOUND_ZEROED(X)                                                                        \
    X(kv_extra, no) X(gather_next, no) X(gather_prev, no) X(xscale, no) X(streams, no)         \
    X(act_ag, no) X(act_rs, no) X(act_mem, no) X(grouped, no) X(group_ahead, no)

/* Array starts stay aligned for any element type. */
#define SLAB_ALIGN ((size_t)16)
#define SLAB_UP(x) remat_i_round_up((x), SLAB_ALIGN)

/* The bytes of block @p b's bound arrays: every array, then those binding
   writes only where not zero (from *@p zeroed on). The sizes cannot
   overflow: a graph's counts are bounded by its input file (64 MiB). */
static size_t bound_bytes(const remat_block_t *b, size_t *zeroed) {
    const size_t nt = b->ntensors, no = b->nops;
    const bound_t *out = NULL; /* for the element sizes only */
    size_t size = 0;
#define SLAB_SIZE(f, n) size = SLAB_UP(size) + (n) * sizeof *out->f;
    BOUND_ARRAYS(SLAB_SIZE)
    *zeroed = size = SLAB_UP(size);
    BOUND_ZEROED(SLAB_SIZE)
#undef SLAB_SIZE
    return SLAB_UP(size);
}

size_t remat_i_bound_bytes(const remat_block_t *b) {
    size_t zeroed;
    return bound_bytes(b, &zeroed);
}

/* All arrays in the slab the analyzer gave (out->slab, remat_i_bound_bytes
   of it): an analysis binds two blocks, and twenty allocations each were a
   tenth of its time. Only the arrays binding does not write whole are
   zeroed: clearing the rest cost as much as filling it. */
static void bound_alloc(const remat_block_t *b, bound_t *out) {
    const size_t nt = b->ntensors, no = b->nops;
    char *slab = out->slab;
    size_t zeroed, size = bound_bytes(b, &zeroed);
    memset(out, 0, sizeof *out);
    memset(slab + zeroed, 0, size - zeroed);
    out->slab = slab;
    size = 0;
#define SLAB_CARVE(f, n)                                                                       \
    size = SLAB_UP(size);                                                                      \
    out->f = (void *)(slab + size);                                                            \
    size += (n) * sizeof *out->f;
    BOUND_ARRAYS(SLAB_CARVE)
    BOUND_ZEROED(SLAB_CARVE)
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

/* Tensors of one shape (graph_index.h: the same dims, param flag and
   logical axes) bind alike: the blocks of a graph share its dims, so they
   have a few dozen shapes, and each is bound once per bind: its mesh axes
   as flax resolves them for the whole tensor (remat_mesh_tensor_axes), its
   per-device dims, sharded and as an op computes on them, and their
   element counts. The shapes live in the analyzer's arena (a slot per
   shape id, remat_i_bind_bytes), and a bound tensor points at its shape's
   dims: no tensor copies them. So do the logical names, a slot per id. */
typedef struct shape {
    uint64_t n, gn; /* elements per device, sharded and as computed on */
    uint64_t tdim[REMAT_MAX_RANK], ctdim[REMAT_MAX_RANK]; /* bound_t's, zero past the rank */
} shape_t;

/* A logical name as binding needs it: its rules, and the mesh axes of its
   first rule with their shards, all and those a param keeps once gathered
   for use (all of them for `exp`: an expert weight's experts stay where
   they are, expert parallelism moves the tokens, not the weights). Most
   tensors' dims each take their name's first rule (first_rules). */
typedef struct name_info {
    uint64_t rules[REMAT_RULE_WORDS]; /* remat_mesh_name_rules */
    unsigned axes;
    bool exp;
    uint64_t shards, kept;
} name_info_t;

/* A graph dim under its activation or weight name's first rule: the name,
   and the dim's size divided by its shards and by what a param keeps once
   gathered, each done once per bind (a 64-bit division costs tens of
   cycles, and most tensors' dims take their first rule). @p divides is
   false when the shards do not divide the size: the first tensor that
   needs the dim reports it. */
typedef struct dim_info {
    const name_info_t *name;
    bool divides;
    uint64_t sharded, gathered;
} dim_info_t;

/* What one bind decides once from the config, not per tensor or op, and
   the names and shapes its blocks share. */
typedef struct bind_ctx {
    const remat_graph_t *g;
    const remat_config_t *cfg;
    const remat_mesh_t *mesh;
    const uint64_t *dimsize;
    const size_t *dim_axis;                  /* the index's: per dim, two logical ids */
    const size_t *logical_hash;              /* the index's: per logical id */
    const size_t *default_rules;             /* the index's logical_rules, when the
                                                mesh's rules are the defaults; or NULL */
    const size_t *shape_first;               /* the index's shape_first, likewise */
    bool fp8;                                /* is_fp8(cfg) */
    bool windowed;                           /* remat_i_windowed_einsums */
    unsigned dtype_bytes[REMAT_DTYPE_COUNT]; /* remat_config_dtype_bytes of each dtype */
    uint64_t numel_max[REMAT_DTYPE_COUNT];   /* the most elements within BYTES_MAX bytes */
    unsigned compute_bytes;                  /* of the compute dtype (cfg->dtype) */
    unsigned sharded;                        /* the mesh axes of more than one shard */
    bool grouped;                            /* the block bound last has a gather group */
    /* Each graph dim's logical names once a shape first needs them:
       [d][0] its activation axis, [d][1] its weight axis, valid where bit
       d of known[0] (known[1]) is set. */
    dim_info_t names[SIM_MAX_DIMS][2];
    uint64_t known[2];
    name_info_t none;                        /* no logical name: replicated */
    name_info_t *lnames;                     /* by logical id, bound where ldone is set */
    shape_t *shapes;                         /* by shape id, bound where sdone is set */
    unsigned char *ldone, *sdone;
} bind_ctx_t;

/* The shards of mesh axes @p axes: most axes have one. */
static inline uint64_t shards_of(const bind_ctx_t *x, unsigned axes) {
    return axes & x->sharded ? remat_mesh_product(x->mesh, axes & x->sharded) : 1;
}

/* The shards a param keeps of mesh axes @p axes once gathered for use. */
static inline uint64_t kept_of(const bind_ctx_t *x, unsigned axes, bool exp) {
    return shards_of(x, exp ? axes : axes & ~GATHER_AXES);
}

/* Logical id @p id, of text @p name, bound once per bind. REMAT_NONE is
   no name. */
static const name_info_t *logical(bind_ctx_t *x, size_t id, const char *name) {
    if (id == REMAT_NONE) {
        return &x->none;
    }
    name_info_t *out = &x->lnames[id];
    if (x->ldone[id]) {
        return out;
    }
    const uint32_t h = (uint32_t)x->logical_hash[id];
    assert(h == remat_mesh_name_hash(name));
    if (x->default_rules) { /* what remat_mesh_name_rules would find, found at load */
        const size_t *r = &x->default_rules[id * REMAT_I_RULE_STRIDE];
        for (size_t w = 0; w < REMAT_RULE_WORDS; w++) {
            out->rules[w] = r[w];
        }
        out->axes = (unsigned)r[REMAT_RULE_WORDS];
#ifndef NDEBUG
        uint64_t mesh_rules[REMAT_RULE_WORDS];
        assert(remat_mesh_name_rules(x->mesh, name, h, mesh_rules) == out->axes &&
               memcmp(mesh_rules, out->rules, sizeof mesh_rules) == 0);
#endif
    } else {
        out->axes = remat_mesh_name_rules(x->mesh, name, h, out->rules);
    }
    out->exp = remat_i_expert_axis(name);
    out->shards = shards_of(x, out->axes);
    out->kept = kept_of(x, out->axes, out->exp);
    x->ldone[id] = 1;
    return out;
}

/* @p a / @p d (not 0), and whether @p d divides @p a. A 64-bit division
   costs tens of cycles, and a dim's shards are a product of mesh axes,
   nearly always a power of two (one, when the dim is not sharded): that
   is a shift and a mask. */
static inline bool pow2(uint64_t d) {
    return (d & (d - 1)) == 0;
}
static inline uint64_t div_by(uint64_t a, uint64_t d) {
    assert(d > 0);
#if defined(__GNUC__) || defined(__clang__)
    if (pow2(d)) {
        return a >> __builtin_ctzll(d);
    }
#endif
    return a / d;
}
static inline bool divides(uint64_t a, uint64_t d) {
    assert(d > 0);
    return pow2(d) ? (a & (d - 1)) == 0 : a % d == 0;
}

/* Dim @p d under its activation (@p w 0) or weight (1) axis. */
static const dim_info_t *dim_info(bind_ctx_t *x, size_t d, size_t w) {
    dim_info_t *di = &x->names[d][w];
    if (!(x->known[w] >> d & 1)) {
        const remat_dim_t *dim = &x->g->dims[d];
        const uint64_t size = x->dimsize[d];
        di->name = logical(x, x->dim_axis[2 * d + w], w ? dim->weight_axis : dim->axis);
        const uint64_t shards = di->name->shards, kept = di->name->kept;
        di->divides = divides(size, shards);
        di->sharded = di->divides ? div_by(size, shards) : 0;
        di->gathered = di->divides ? div_by(size, kept) : 0; /* kept divides shards */
        x->known[w] |= (uint64_t)1 << d;
    }
    return di;
}

/* The dims' rules, as the mesh's functions take them. */
static void dim_rules(const name_info_t *const *info, size_t rank, const uint64_t **rules) {
    for (size_t j = 0; j < rank; j++) {
        rules[j] = info[j]->rules;
    }
}

/* Whether every dim takes its name's first rule (remat_mesh_first_rules). */
static bool first_rules(const bind_ctx_t *x, const name_info_t *const *info, size_t rank) {
    const uint64_t *rules[REMAT_MAX_RANK] = {0}; /* all set below; GCC cannot tell under LTO */
    unsigned axes[REMAT_MAX_RANK];
    dim_rules(info, rank, rules);
    return remat_mesh_first_rules(x->mesh, rules, rank, axes);
}

/* Any other tensor: its dims' mesh axes as flax resolves them, and their
   shards, into @p axes, @p shards and @p kept. */
static void resolve_rules(const bind_ctx_t *x, const name_info_t *const *info, size_t rank,
                          unsigned *axes, uint64_t *shards, uint64_t *kept) {
    const uint64_t *rules[REMAT_MAX_RANK] = {0};
    dim_rules(info, rank, rules);
    remat_mesh_tensor_axes_ruled(x->mesh, rules, rank, axes);
    for (size_t j = 0; j < rank; j++) {
        shards[j] = shards_of(x, axes[j]);
        kept[j] = kept_of(x, axes[j], info[j]->exp);
    }
}

/* The mesh axes of @p axes that shard (more than one device), as the
   user sets them: "fsdp=128", "fsdp=64 x tensor=2". */
static void sharding_text(const remat_mesh_t *mesh, unsigned axes, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (int a = 0; a < REMAT_AXIS_COUNT && len < size; a++) {
        if ((axes & (1u << a)) && mesh->shards[a] > 1) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%llu", len ? " x " : "",
                                    remat_axis_name((remat_axis_t)a),
                                    (unsigned long long)mesh->shards[a]);
        }
    }
}

/* The error of dim @p j of tensor @p t, whose @p shards over mesh axes
   @p axes do not divide its size: named by the config key the dim takes
   its size from and the mesh axes that shard it, the user's settings,
   with the hint that another mesh may divide it. */
static remat_status_t no_divide(const bind_ctx_t *x, const remat_tensor_t *t, size_t j,
                                unsigned axes, uint64_t shards, remat_error_t *err) {
    const remat_graph_t *g = x->g;
    const remat_dim_t *dim = &g->dims[t->dim[j]];
    char mesh[160], size[160];
    const char *logical = dim_logical(g, t, j);
    sharding_text(x->mesh, axes, mesh, sizeof mesh);
    if (dim->from) {
        /* a divided dim names its divisor: the batch-split half is
           the batch / batch_split_factor */
        snprintf(size, sizeof size, "%s%s%s=%llu (dim '%s' of tensor '%s')", dim->from,
                 dim->div ? " / " : "", dim->div ? dim->div : "",
                 (unsigned long long)x->dimsize[t->dim[j]], dim->name, t->name);
    } else {
        snprintf(size, sizeof size, "tensor '%s' dim '%s' of %llu", t->name, dim->name,
                 (unsigned long long)x->dimsize[t->dim[j]]);
    }
    const bool fresh = err && err->code == REMAT_OK;
    remat_status_t st =
        remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                        "%s does not divide over its %llu shards (logical axis %s over mesh %s)",
                        size, (unsigned long long)shards, logical ? logical : "(none)",
                        mesh[0] ? mesh : "(none)");
    if (fresh) {
        err->hint = REMAT_HINT_MESH_DIVIDE;
    }
    return st;
}

/* Tensor @p t's shape bound into @p s: each dim per device, sharded, and
   as an op computes on it (a param as gathered for use), and the counts.
   A dim that takes its graph dim's first rule reads the sizes dim_info
   divided once; any other divides here. Whether the dims take their first
   rules is the index's to say under the default rules (shape_first, for
   shape @p id), else first_rules'. */
static remat_status_t bind_shape(bind_ctx_t *x, const remat_tensor_t *t, size_t id,
                                 const size_t *ids, shape_t *s, remat_error_t *err) {
    const name_info_t *info[REMAT_MAX_RANK];
    const dim_info_t *di[REMAT_MAX_RANK];
    for (size_t j = 0; j < t->rank; j++) {
        di[j] = t->has_axes ? NULL : dim_info(x, t->dim[j], t->param);
        info[j] = t->has_axes ? logical(x, ids[j], t->axes[j]) : di[j]->name;
    }
    const bool first =
        x->shape_first ? x->shape_first[id] != 0 : first_rules(x, info, t->rank);
    assert(first == first_rules(x, info, t->rank));
    unsigned axes[REMAT_MAX_RANK];
    uint64_t shards[REMAT_MAX_RANK], kept[REMAT_MAX_RANK];
    if (!first) { /* every dim's, as flax resolves them */
        resolve_rules(x, info, t->rank, axes, shards, kept);
    }
    memset(s->tdim, 0, sizeof s->tdim);
    memset(s->ctdim, 0, sizeof s->ctdim);
    s->n = s->gn = 1;
    for (size_t j = 0; j < t->rank; j++) {
        const uint64_t size = x->dimsize[t->dim[j]];
        const uint64_t sh = first ? info[j]->shards : shards[j];
        if (first && di[j]) {
            if (!di[j]->divides) {
                return no_divide(x, t, j, info[j]->axes, sh, err);
            }
            s->tdim[j] = di[j]->sharded;
            s->ctdim[j] = t->param ? di[j]->gathered : s->tdim[j];
        } else {
            if (!divides(size, sh)) {
                return no_divide(x, t, j, first ? info[j]->axes : axes[j], sh, err);
            }
            s->tdim[j] = div_by(size, sh);
            s->ctdim[j] = t->param ? div_by(size, first ? info[j]->kept : kept[j]) : s->tdim[j];
        }
        if (!remat_i_mul(s->n, s->tdim[j], &s->n) || !remat_i_mul(s->gn, s->ctdim[j], &s->gn)) {
            return overflow(x->g, "the element count", t->name, err);
        }
    }
    return REMAT_OK;
}

/* Tensor @p t's bound shape, id @p id (its `axes` ids @p ids), into
   *@p out: bound the first time it is met. */
static remat_status_t shape_of(bind_ctx_t *x, const remat_tensor_t *t, size_t id,
                               const size_t *ids, const shape_t **out, remat_error_t *err) {
    shape_t *s = &x->shapes[id];
    if (!x->sdone[id]) {
        remat_status_t st = bind_shape(x, t, id, ids, s, err);
        if (st) {
            return st;
        }
        x->sdone[id] = 1;
    }
    *out = s;
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
           out->ix.pos[t->producer] >= g->head_npre && i != g->head_takes;
}

/* The head's tensor @p i's bytes @p by, a vocabulary chunk's when the
   chunked loss runs it (vocab_chunked). */
static remat_status_t chunk_bytes(const bind_ctx_t *x, const remat_block_t *b,
                                  const bound_t *out, size_t i, uint64_t n, uint64_t *by,
                                  remat_error_t *err) {
    const remat_config_t *cfg = x->cfg;
    if (!vocab_chunked(x->g, b, out, cfg, i)) {
        return REMAT_OK;
    }
    if (n % cfg->num_vocab_tiling) {
        return remat_error_set(err, REMAT_E_CONFIG, x->g->source, NULL,
                               "num_vocab_tiling=%llu does not divide the %llu elements "
                               "of '%s' (MaxText needs per_device_batch_size x "
                               "max_target_length to divide)",
                               (unsigned long long)cfg->num_vocab_tiling, (unsigned long long)n,
                               b->tensors[i].name);
    }
    *by /= cfg->num_vocab_tiling;
    return REMAT_OK;
}

/* Every tensor's rows, reading its index's flags word, not the tensor. */
static remat_status_t bind_tensors(bind_ctx_t *x, const remat_block_t *b,
                                   const remat_i_block_view_t *v, bool head, bound_t *out,
                                   remat_error_t *err) {
    const bound_t o = *out; /* its arrays, in locals: the stores below could alias them */
    size_t any = 0;
    for (size_t i = 0; i < b->ntensors; i++) {
        const size_t f = v->tflags[i], dtype = f & REMAT_I_T_DTYPE;
        any |= f;
        const shape_t *s;
        remat_status_t st =
            shape_of(x, &b->tensors[i], v->shape[i], &v->axes[i * REMAT_MAX_RANK], &s, err);
        if (st) {
            return st;
        }
        o.tdim[i] = s->tdim;
        o.ctdim[i] = s->ctdim;
        const uint64_t n = s->n;
        if (n > x->numel_max[dtype]) {
            return overflow(x->g, "the byte count", b->tensors[i].name, err);
        }
        uint64_t by = n * x->dtype_bytes[dtype];
        if (head && (st = chunk_bytes(x, b, out, i, n, &by, err))) {
            return st;
        }
        const bool param = f & REMAT_I_T_PARAM;
        const uint64_t own = f & REMAT_I_T_OWN ? by : 0;
        o.numel[i] = n;
        o.tbytes[i] = by;
        o.gnumel[i] = param ? s->gn : 0;
        o.bytes[i] = own;
        o.kbytes[i] = own;
        o.gbytes[i] = f & REMAT_I_T_GRAD && !param ? by : 0;
        assert(o.tbytes[i] <= BYTES_MAX && o.gbytes[i] <= BYTES_MAX);
    }
    x->grouped = any & REMAT_I_T_GROUP;
    return REMAT_OK;
}

/* Each param's gathered bytes per element (gathered_bytes): the compute
   dtype's, one under fp8 but for a grouped matmul's weights. One pass over
   the ops instead of one per param and reading op. */
static void gathered_dtypes(const bind_ctx_t *x, const remat_block_t *b, bound_t *out) {
    memset(out->cbytes, x->fp8 ? 1 : (int)x->compute_bytes, b->ntensors);
    for (size_t j = 0; x->fp8 && j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; op->ragged[0] && i < op->nin; i++) {
            out->cbytes[op->in[i]] = (unsigned char)x->compute_bytes;
        }
    }
#ifndef NDEBUG
    for (size_t i = 0; i < b->ntensors; i++) {
        assert(!b->tensors[i].param || out->cbytes[i] == gathered_bytes(x->cfg, b, i));
    }
#endif
}

/* FP8 training keeps the operands of weight einsums for backward as the
   quantized copy: 1 byte an element plus a 4-byte fp32 scale. A buffer
   that any other backward rule also reads keeps its full copy. @p mark is
   a byte per tensor to work in. */
enum { READ_BY_FP8_EINSUM = 1, READ_BY_OTHER = 2 };

static void fp8_kept_copies(const remat_block_t *b, bound_t *out, unsigned char *mark) {
    memset(mark, 0, b->ntensors);
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        const int how =
            weight_einsum(b, op) && !op->ragged[0] ? READ_BY_FP8_EINSUM : READ_BY_OTHER;
        for (size_t k = 0; k < op->nsaves; k++) {
            mark[b->tensors[op->saves[k]].storage] |= (unsigned char)how;
        }
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == i && b->tensors[i].residual &&
            mark[i] == READ_BY_FP8_EINSUM) {
            out->kbytes[i] = out->numel[i] + 4;
        }
    }
}

/* The bytes op @p j's params are read with, and the buffers reading them
   takes. MaxText casts a weight to the compute dtype before the matmul, so
   XLA gathers the cast copy (fp8 under fp8 quantization), weight by weight,
   and frees it after its op; in backward the weight's gradient exists whole
   in the compute dtype until its reduce-scatter. Only a param sharded over
   the gathered axes is gathered into a new buffer. Params held in host RAM
   between steps are on the device for the whole step (static.c). */
/* The copy op_gather makes of param @p w for its op, added to @p copies:
   its gathered copy when it is sharded over the gathered axes and not
   @p streamed (a windowed einsum's). */
static void add_param_copy(size_t w, const bound_t *out, bool streamed, remat_acc_t *copies) {
    if (out->gnumel[w] != out->numel[w] && !streamed) {
        remat_acc_add_product(copies, out->gnumel[w], out->cbytes[w]);
    }
}

static bool op_gather(const bind_ctx_t *x, const remat_block_t *b, size_t j, bound_t *out) {
    const remat_op_t *op = &b->ops[j];
    const size_t *flags = out->ix.tflags;
    remat_acc_t reads = {0, false}, copies = {0, false}, wgrad = {0, false};
    /* a windowed einsum moves the same bytes, shard by shard, into no
       buffer of the gathered size (remat_i_windowed_einsums); a gather
       group's params are a grouped matmul's, which XLA gathers whole */
    const bool windowed = x->windowed && weight_einsum(b, op) && !op->ragged[0];
    /* from its first param (the index's): most ops read none */
    for (size_t i = out->ix.first_param[j]; i < op->nin; i++) {
        size_t w = op->in[i];
        if (!(flags[w] & REMAT_I_T_PARAM)) {
            continue;
        }
        const bool streamed = windowed && !b->tensors[w].gather_group;
        if (out->gnumel[w] != out->numel[w]) { /* gathered, in its compute dtype */
            remat_acc_add_product(&reads, out->gnumel[w], out->cbytes[w]);
            remat_acc_add_product(&wgrad, streamed ? 0 : out->gnumel[w], x->compute_bytes);
        } else {
            remat_acc_add_product(&reads, out->numel[w], x->dtype_bytes[flags[w] & REMAT_I_T_DTYPE]);
        }
        add_param_copy(w, out, streamed, &copies);
    }
    out->streams[j] = windowed && reads.value > 0;
    out->op_gather[j] = reads.value;
    out->op_gather_mem[j] = copies.value;
    out->op_wgrad[j] = wgrad.value;
    return !(reads.overflow || copies.overflow || wgrad.overflow);
}

/* The bytes op_gather's copy of param @p w takes (add_param_copy). */
static uint64_t param_copy(size_t w, const bound_t *out) {
    remat_acc_t c = {0, false};
    add_param_copy(w, out, false, &c); /* a gather group's: never streamed */
    return c.value; /* at most the envelope's bytes: no overflow */
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
   the group is already there. Gathered a layer @p ahead (gathers_ahead),
   the span is the whole layer (the scan gathers before the layer starts
   and frees after it ends), and every op of it also holds the
   neighbouring layer's copies, the next one's forward and the previous
   one's backward: the kind's layers are alike, so those are as large as
   this layer's. */
static void gather_group(const remat_block_t *b, size_t first, bool ahead, bound_t *out) {
    const char *group = b->tensors[first].gather_group;
    uint64_t all = 0;
    for (size_t i = 0; i < b->ntensors; i++) {
        const char *gg = b->tensors[i].gather_group;
        all += gg && strcmp(gg, group) == 0 ? param_copy(i, out) : 0;
    }
    size_t lo = REMAT_NONE, hi = 0;
    for (size_t p = 0; p < b->nops; p++) {
        if (reads_group(b, b->order[p], group)) {
            lo = lo == REMAT_NONE ? p : lo;
            hi = p;
        }
    }
    if (ahead && lo != REMAT_NONE) {
        lo = 0;
        hi = b->nops - 1;
    }
    for (size_t p = lo; lo != REMAT_NONE && p <= hi; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        uint64_t own = 0;
        for (size_t i = 0; i < op->nin; i++) {
            const char *gg = b->tensors[op->in[i]].gather_group;
            if (gg && strcmp(gg, group) == 0) {
                own += param_copy(op->in[i], out);
            }
        }
        out->op_gather_mem[j] += all - own;
        out->group_ahead[j] += all - own;
        out->grouped[j] = 1;
        out->group_mem += p == lo ? all : 0;
        out->gather_next[j] = ahead ? all : p < hi ? 0 : out->gather_next[j];
        out->gather_prev[j] = ahead ? all : p > lo ? 0 : out->gather_prev[j];
    }
}

/* Every gather group of the block, each once: the groups met so far are
   listed (a block has a few) to tell a new one, and past the list's room
   the earlier tensors are searched. */
#define GROUPS_LISTED 16

static void gather_groups(const remat_block_t *b, bool ahead, bound_t *out) {
    const char *met[GROUPS_LISTED];
    size_t nmet = 0;
    for (size_t i = 0; i < b->ntensors; i++) {
        const char *gg = b->tensors[i].gather_group;
        bool seen = false;
        for (size_t k = 0; gg && k < nmet && !seen; k++) {
            seen = strcmp(met[k], gg) == 0;
        }
        for (size_t k = 0; gg && nmet == GROUPS_LISTED && k < i && !seen; k++) {
            seen = b->tensors[k].gather_group && strcmp(b->tensors[k].gather_group, gg) == 0;
        }
        if (gg && !seen) {
            gather_group(b, i, ahead, out);
            if (nmet < GROUPS_LISTED) {
                met[nmet++] = gg;
            }
        }
    }
}

/* The gather XLA overlaps with each op (fsdp_prefetch): forward, the next
   gathering op's, wrapping to the first of the next layer; backward, the
   previous one's. The head prefetches nothing. One pass each way over the
   order: the nearest gathering op ahead of each op (behind it, backward)
   is the last one the pass met, and before the pass meets any, the
   neighbouring layer's first (last) one. Without @p wrap only this layer's
   copy counts. A windowed einsum (out->streams) is a gathering op that
   gathers nothing: the prefetch reaches no further than the next op that
   reads a sharded weight, as it did when that op gathered it. */
static void gather_prefetch(const remat_block_t *b, bool wrap, bound_t *out) {
    const size_t n = b->nops;
    const uint64_t *mem = out->op_gather_mem;
    size_t first = 0, last = n;
    const unsigned char *streams = out->streams;
    while (first < n && !mem[b->order[first]] && !streams[b->order[first]]) {
        first++;
    }
    while (last > first && !mem[b->order[last - 1]] && !streams[b->order[last - 1]]) {
        last--;
    }
    uint64_t next = wrap && first < n ? mem[b->order[first]] : 0;
    uint64_t prev = wrap && first < n ? mem[b->order[last - 1]] : 0;
    for (size_t p = n; p-- > 0;) {
        const size_t j = b->order[p];
        out->gather_next[j] = next;
        next = mem[j] || streams[j] ? mem[j] : next;
    }
    for (size_t p = 0; p < n; p++) {
        const size_t j = b->order[p];
        out->gather_prev[j] = prev;
        prev = mem[j] || streams[j] ? mem[j] : prev;
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

/* A reshape, split or concat moves its elements unchanged: with this
   config its inputs and outputs must hold as many per device. */
static remat_status_t check_moved_elements(const remat_graph_t *g, const remat_op_t *op,
                                           const bound_t *out, remat_error_t *err) {
    if (op->kind != REMAT_OP_RESHAPE && op->kind != REMAT_OP_SPLIT &&
        op->kind != REMAT_OP_CONCAT) {
        return REMAT_OK;
    }
    uint64_t sin = numel_sum(out, op->in, op->nin), sout = numel_sum(out, op->out, op->nout);
    if (sin != sout) {
        return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                               "%s op '%s' has %llu elements in and %llu out per device with "
                               "this config",
                               remat_opkind_name(op->kind), op->name, (unsigned long long)sin,
                               (unsigned long long)sout);
    }
    return REMAT_OK;
}

static remat_status_t bind_ops(const bind_ctx_t *x, const remat_block_t *b, bound_t *out,
                               remat_error_t *err) {
    const remat_graph_t *g = x->g;
    const uint64_t context = x->mesh->shards[REMAT_AXIS_CONTEXT];
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op_gather(x, b, j, out)) {
            return overflow(g, "the gathered weight bytes", op->name, err);
        }
        remat_status_t st = check_moved_elements(g, op, out, err);
        if (st) {
            return st;
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
        if (!remat_i_op_flops(b, &out->ix, j, out->numel, out->ctdim, x->dimsize, &out->fwd[j],
                              &out->bwd[j]) ||
            out->fwd[j] > BYTES_MAX || out->bwd[j] > BYTES_MAX) {
            return overflow(g, "the FLOP count", op->name, err);
        }
    }
    return REMAT_OK;
}

/* Block @p k (a layer kind, or the head at nkinds) bound into @p out. */
static remat_status_t bind_block(bind_ctx_t *x, size_t k, bound_t *out, remat_error_t *err) {
    const bool head = k == x->g->nkinds;
    const remat_block_t *b = remat_i_block_at(x->g, k);
    bound_alloc(b, out);
    out->ix = remat_i_block_view(x->g, k);
    remat_status_t st = bind_tensors(x, b, &out->ix, head, out, err);
    if (st) {
        return st;
    }
    gathered_dtypes(x, b, out);
    if (x->fp8 && !head) {
        fp8_kept_copies(b, out, out->mark);
    }
    if ((st = bind_ops(x, b, out, err)) ||
        (st = remat_i_act_collectives(x->g, b, x->dimsize, out, err))) {
        return st;
    }
    if (x->cfg->fsdp_prefetch && !head) {
        gather_prefetch(b, true, out);
    }
    out->group_mem = 0;
    if (x->grouped) {
        gather_groups(b, !head && x->g->kinds[k].gathers_ahead, out);
    }
    return REMAT_OK;
}

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

/* Config size key @p key, whose plain field (the index's dim_field) is at
   byte @p field of the config, or 0: ask remat_config_size, which looks the
   key up by name. */
static remat_status_t size_of(const remat_config_t *cfg, const char *key, size_t field,
                              uint64_t *out, remat_error_t *err) {
    if (field) {
        memcpy(out, (const char *)cfg + field, sizeof *out);
        return REMAT_OK;
    }
    return remat_config_size(cfg, key, out, err);
}

/* Every dim's size on one device's micro-batch: from the config (divided
   by its `div` key, and the batch by the pipeline's micro-batches) or the
   graph's own value. */
static remat_status_t bind_dim_sizes(remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    const size_t *field = remat_i_index_words(g, g->index->dim_field);
    remat_status_t st;
    for (size_t d = 0; d < g->ndims; d++) {
        const remat_dim_t *dim = &g->dims[d];
        if (!dim->from) {
            /* the head's size too: a head tensor on a constant dim (the
               qwen3_omni graph's 3x3 conv windows) reads head_dim_size */
            an->dim_size[d] = an->head_dim_size[d] = dim->value;
            continue;
        }
        const size_t *f = &field[REMAT_I_DIM_STRIDE * d];
        if ((st = size_of(an->cfg, dim->from, f[0], &an->dim_size[d], err))) {
            return st;
        }
        if (f[2] == REMAT_I_DIM_MOE_BUFFER) {
            an->dim_size[d] = moe_buffer_factor(an);
        } else if (f[2] == REMAT_I_DIM_EXPERT_SHARDS) {
            /* the batch-split MoE all-gathers its tokens over the expert axis */
            an->dim_size[d] = an->mesh.shards[REMAT_AXIS_EXPERT];
        }
        if (an->dim_size[d] == 0) {
            /* a built-in graph's JSON path is no place the user can go: the
               settings are */
            char path[REMAT_NAME_LEN + 16];
            snprintf(path, sizeof path, "$.dims.%s", dim->name);
            const char *formula = remat_i_config_size_formula(dim->from);
            return remat_error_set(err, REMAT_E_CONFIG, g->source,
                                   strncmp(g->source, "built-in ", 9) == 0 ? NULL : path,
                                   "dim '%s' takes its size from %s%s%s%s, which is 0 with "
                                   "these settings",
                                   dim->name, dim->from, formula ? " (" : "",
                                   formula ? formula : "", formula ? ")" : "");
        }
        uint64_t div = 1;
        if (dim->div && (st = size_of(an->cfg, dim->div, f[1], &div, err))) {
            return st;
        }
        /* the head's batch is split over the stages, a layer's over the
           micro-batches (M is a multiple of the stages: check_mesh) */
        const bool batch = f[2] == REMAT_I_DIM_BATCH;
        const uint64_t hdiv = batch ? div * an->nstages : div;
        if (batch) {
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
        an->head_dim_size[d] = an->dim_size[d] / hdiv;
        an->dim_size[d] /= div;
    }
    return REMAT_OK;
}

/* What MaxText's pipeline asks (configs/types.py at e591f30): the layers
   split into stages of num_layers_per_pipeline_stage (bounded by the layer
   count first, so the product cannot wrap), micro-batches a multiple of the
   stages, and at least twice the stages with delayed forwarding. */
static remat_status_t check_pipeline(const remat_analyzer_t *an, remat_error_t *err) {
    const uint64_t lps = an->cfg->num_layers_per_pipeline_stage;
    if (lps == 0 || lps > an->nlayers || an->nlayers % (an->nstages * lps)) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "%zu layers do not split evenly over %zu pipeline stages of "
                               "num_layers_per_pipeline_stage=%llu",
                               an->nlayers, an->nstages, (unsigned long long)lps);
    }
    if (an->microbatches % an->nstages) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "num_pipeline_microbatches=%llu is not a multiple of the %zu "
                               "pipeline stages (MaxText requires one)",
                               (unsigned long long)an->microbatches, an->nstages);
    }
    if (an->microbatches < an->delay * an->nstages) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "num_pipeline_microbatches=%llu: "
                               "pipeline_delay_activation_forwarding needs at least 2 x the %zu "
                               "pipeline stages (MaxText requires it)",
                               (unsigned long long)an->microbatches, an->nstages);
    }
    return REMAT_OK;
}

/* What the mesh asks of the graph before any dim is bound: whole layers per
   stage (check_pipeline), and context parallelism only over flash
   attention. */
static remat_status_t check_mesh(const remat_analyzer_t *an, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    if (g->ndims > SIM_MAX_DIMS) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, "$.dims", "at most 64 dims");
    }
    if (an->nstages > 1) {
        remat_status_t st = check_pipeline(an, err);
        if (st) {
            return st;
        }
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

/* An exact sum of counts, each split at bit 31: adding one needs no
   overflow check, only the total is compared with BYTES_MAX. Exact for
   fewer than 2^28 addends; a graph (its file at most 64 MiB) has far
   fewer tensors and ops. */
#define LOW31 (((uint64_t)1 << 31) - 1)

typedef struct wide_sum {
    uint64_t hi, lo; /* the sum is hi * 2^31 + lo */
} wide_sum_t;

/* *s += @p v x @p times, for @p times at most 8. */
static inline void wide_add(wide_sum_t *s, uint64_t v, unsigned times) {
    s->hi += (v >> 31) * times;
    s->lo += (v & LOW31) * times;
}

/* The sum as an accumulator: its value, or overflow past BYTES_MAX. */
static remat_acc_t wide_total(wide_sum_t s) {
    const uint64_t hi = s.hi + (s.lo >> 31), lo = s.lo & LOW31;
    const bool over = hi > (BYTES_MAX >> 31) || (hi == (BYTES_MAX >> 31) && lo > 0);
    return (remat_acc_t){over ? 0 : hi << 31 | lo, over};
}

/* Everything one block can hold or run, summed without regard to when
   (in locals: the sums could alias the arrays). */
static void block_envelope(const remat_block_t *b, const bound_t *bd, wide_sum_t *bytes,
                           wide_sum_t *flops) {
    wide_sum_t by = *bytes, fl = *flops;
    for (size_t i = 0; i < b->ntensors; i++) {
        wide_add(&by, bd->bytes[i], 1);
        wide_add(&by, bd->kbytes[i], 1);
        wide_add(&by, bd->gbytes[i], 1);
        wide_add(&by, bd->tbytes[i], 1);
        wide_add(&by, bd->gnumel[i], 8); /* gathered and its gradient */
    }
    for (size_t j = 0; j < b->nops; j++) {
        wide_add(&by, bd->op_gather[j], 1);
        wide_add(&by, bd->op_gather_mem[j], 1);
        wide_add(&by, bd->op_wgrad[j], 1);
        wide_add(&by, bd->kv_extra[j], 1);
        wide_add(&by, bd->act_mem[j], 1);
        wide_add(&by, bd->gather_next[j], 1);
        wide_add(&by, bd->gather_prev[j], 1);
        wide_add(&fl, bd->fwd[j], 2); /* and a re-run */
        wide_add(&fl, bd->bwd[j], 1);
    }
    *bytes = by;
    *flops = fl;
}

/* The step holds at most: static memory (params, optimizer state,
   gradients, an accumulator: at most 5x the param bytes), residuals of
   every layer for each micro-batch in flight (a pipeline's M micro-batches
   and its bubble: at most M + 2 times all layers), one layer's
   transients, the reserve (less than the transients) and the head.
   Sixteen times the blocks' envelope, the layers' M + 2 times, covers all
   of it. */
static remat_status_t check_envelope(const remat_analyzer_t *an, remat_error_t *err) {
    wide_sum_t lb = {0, 0}, lf = {0, 0}, hb = {0, 0}, hf = {0, 0};
    /* Every kind's envelope as if every layer ran each: an upper bound. */
    for (size_t k = 0; k < an->g->nkinds; k++) {
        block_envelope(&an->g->kinds[k].block, &an->kb[k], &lb, &lf);
    }
    if (an->g->has_head) {
        block_envelope(&an->g->head, &an->hb, &hb, &hf);
    }
    remat_acc_t lbytes = wide_total(lb), lflops = wide_total(lf);
    const remat_acc_t hbytes = wide_total(hb), hflops = wide_total(hf);
    remat_acc_mul(&lbytes, an->nlayers);
    if (an->nstages > 1) {
        remat_acc_mul(&lbytes, an->microbatches + 2);
    }
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
    memset(an->kind_of, 0, an->nlayers); /* the analyzer's arena holds it */
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

/* The bind's share of the analyzer's arena: a slot per shape id and per
   logical id, and their flags. */
static size_t bind_bytes(const remat_graph_t *g, size_t *lnames, size_t *flags) {
    const size_t shapes = g->index->nshapes * sizeof(shape_t);
    *lnames = SLAB_UP(shapes);
    *flags = SLAB_UP(*lnames + g->index->nlogical * sizeof(name_info_t));
    return *flags + g->index->nlogical + g->index->nshapes;
}

size_t remat_i_bind_bytes(const remat_graph_t *g) {
    size_t lnames, flags;
    return bind_bytes(g, &lnames, &flags);
}

static void bind_mem(const remat_graph_t *g, void *mem, bind_ctx_t *x) {
    size_t lnames, flags;
    (void)bind_bytes(g, &lnames, &flags);
    x->shapes = mem;
    x->lnames = (name_info_t *)(void *)((char *)mem + lnames);
    x->ldone = (unsigned char *)mem + flags;
    x->sdone = x->ldone + g->index->nlogical;
}

/* The config's per-dtype decisions, once for the whole bind. */
static void bind_ctx_init(bind_ctx_t *x, const remat_analyzer_t *an) {
    x->g = an->g;
    x->cfg = an->cfg;
    x->mesh = &an->mesh;
    x->dimsize = an->dim_size;
    x->fp8 = is_fp8(an->cfg);
    x->windowed = remat_i_windowed_einsums(an);
    for (int d = 0; d < REMAT_DTYPE_COUNT; d++) {
        x->dtype_bytes[d] = remat_config_dtype_bytes(an->cfg, (remat_dtype_t)d);
        x->numel_max[d] = x->dtype_bytes[d] ? BYTES_MAX / x->dtype_bytes[d] : UINT64_MAX;
    }
    x->compute_bytes = remat_dtype_bytes(an->cfg->dtype);
    x->sharded = 0;
    for (unsigned a = 0; a < REMAT_AXIS_COUNT; a++) {
        x->sharded |= (unsigned)(an->mesh.shards[a] != 1) << a;
    }
    x->dim_axis = remat_i_index_words(an->g, an->g->index->dim_axis);
    x->logical_hash = remat_i_index_words(an->g, an->g->index->logical_hash);
    x->default_rules = an->mesh.default_rules
                           ? remat_i_index_words(an->g, an->g->index->logical_rules)
                           : NULL;
    x->shape_first = an->mesh.default_rules
                         ? remat_i_index_words(an->g, an->g->index->shape_first)
                         : NULL;
    x->known[0] = x->known[1] = 0;
    memset(&x->none, 0, sizeof x->none);
    x->none.shards = x->none.kept = 1;
    bind_mem(an->g, an->bind_mem, x);
    memset(x->ldone, 0, an->g->index->nlogical);
    memset(x->sdone, 0, an->g->index->nshapes);
}

/* Each layer kind's block and the head, bound. */
static remat_status_t bind_blocks(remat_analyzer_t *an, bind_ctx_t *x, remat_error_t *err) {
    const remat_graph_t *g = an->g;
    remat_status_t st;
    for (size_t k = 0; k < g->nkinds; k++) {
        if ((st = bind_block(x, k, &an->kb[k], err)) ||
            (st = apply_window(&g->kinds[k], an->cfg, &an->kb[k], err))) {
            return st;
        }
    }
    if (!g->has_head) {
        return REMAT_OK;
    }
    /* the head's batch differs with a pipeline: its dims and shapes bind
       anew (the per-dim and per-shape caches hold the layers' sizes) */
    x->dimsize = an->head_dim_size;
    /* the head's weights are gathered whole where the layers' stream: the
       logits' and the embedding's tables are all-gathered in every one-slice
       dump (bf16[4096, 128256] on v6e-32 and TPU7x-8, [4096, 32000] on
       v4-16), and the logits' gradient is its own deferred einsum (step.c) */
    x->windowed = false;
    x->known[0] = x->known[1] = 0;
    memset(x->sdone, 0, g->index->nshapes);
    return bind_block(x, g->nkinds, &an->hb, err);
}

remat_status_t remat_i_bind(remat_analyzer_t *an, remat_error_t *err) {
    an->nlayers = (size_t)an->cfg->base_num_decoder_layers;
    an->nstages = (size_t)an->mesh.shards[REMAT_AXIS_STAGE];
    an->microbatches = remat_mesh_microbatches(&an->mesh, an->cfg);
    an->delay = remat_i_config_pipeline_delay(an->cfg);
    an->unit = (size_t)remat_config_remat_unit(an->cfg); /* >= 1, divides the layers (config) */
    an->span = an->unit;
    remat_status_t st;
    if ((st = check_mesh(an, err))) {
        return st;
    }
    an->repeats = an->nstages > 1
                      ? an->nlayers / (an->nstages * an->cfg->num_layers_per_pipeline_stage)
                      : 1;
    an->bubble = (an->nstages - 1) * an->delay;
    if ((st = bind_dim_sizes(an, err)) || (st = bind_kinds(an, err))) {
        return st;
    }
    bind_ctx_t x;
    bind_ctx_init(&x, an);
    if ((st = bind_blocks(an, &x, err))) {
        return st;
    }
    return check_envelope(an, err);
}
