/* SPDX-License-Identifier: MIT */
/*
 * ops.c: the rules of each op kind, in one table-driven place: arity, shape
 * and dtype checks, what its backward keeps (the residuals JAX's and
 * PyTorch's autodiff keep), and its forward/backward FLOP counts. The counts
 * are documented in docs/graph-format.md; tests pin every one of them.
 */
#include <assert.h>
#include <string.h>

#include "model/graph_index.h"
#include "model/graph_internal.h"
#include "base/util.h"

typedef struct kind_info {
    const char *name;
    unsigned min_in, max_in, min_out, max_out;
} kind_info_t;

static const kind_info_t kinds[REMAT_OP_COUNT] = {
    [REMAT_OP_EINSUM] = {"einsum", 1, 3, 1, 1},
    [REMAT_OP_ADD] = {"add", 2, 8, 1, 1},
    [REMAT_OP_MUL] = {"mul", 2, 8, 1, 1},
    [REMAT_OP_SCALE] = {"scale", 1, 1, 1, 1},
    [REMAT_OP_SILU] = {"silu", 1, 1, 1, 1},
    [REMAT_OP_GELU] = {"gelu", 1, 1, 1, 1},
    [REMAT_OP_SOFTMAX] = {"softmax", 1, 1, 1, 1},
    [REMAT_OP_RMSNORM] = {"rmsnorm", 1, 2, 1, 2},
    [REMAT_OP_LAYERNORM] = {"layernorm", 3, 3, 1, 3},
    [REMAT_OP_ROPE] = {"rope", 1, 1, 1, 1},
    [REMAT_OP_DROPOUT] = {"dropout", 1, 1, 2, 2},
    [REMAT_OP_FLASH_ATTENTION] = {"flash_attention", 3, 5, 2, 2},
    [REMAT_OP_CAST] = {"cast", 1, 1, 1, 1},
    [REMAT_OP_RESHAPE] = {"reshape", 1, 1, 1, 1},
    [REMAT_OP_TRANSPOSE] = {"transpose", 1, 1, 1, 1},
    [REMAT_OP_SPLIT] = {"split", 1, 1, 2, 8},
    [REMAT_OP_CONCAT] = {"concat", 2, 8, 1, 1},
    [REMAT_OP_EMBEDDING] = {"embedding", 2, 2, 1, 1},
    [REMAT_OP_CROSS_ENTROPY] = {"cross_entropy", 2, 2, 2, 2},
    [REMAT_OP_SIGMOID] = {"sigmoid", 1, 1, 1, 1},
    [REMAT_OP_TOP_K] = {"top_k", 1, 1, 2, 2},
    [REMAT_OP_GATHER] = {"gather", 2, 2, 1, 1},
    [REMAT_OP_BROADCAST] = {"broadcast", 1, 1, 1, 1},
    [REMAT_OP_TANH] = {"tanh", 1, 1, 1, 1},
    [REMAT_OP_ONE_HOT] = {"one_hot", 1, 2, 1, 1},
};

const char *remat_opkind_name(remat_opkind_t k) {
    return k < REMAT_OP_COUNT ? kinds[k].name : "?";
}

bool remat_i_opkind_parse(const char *s, remat_opkind_t *out) {
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        if (strcmp(s, kinds[k].name) == 0) {
            *out = (remat_opkind_t)k;
            return true;
        }
    }
    return false;
}

/* Only a reshape shares its input's buffer (XLA lowers it to a bitcast). A
   transpose or a slice is its own array in JAX: keeping it keeps a copy,
   and keeping it does not keep its input. */
bool remat_i_opkind_is_view(remat_opkind_t k) {
    return k == REMAT_OP_RESHAPE;
}

remat_status_t remat_i_einsum_parse(const char *spec, remat_op_t *op, const char *source,
                                    const char *path, remat_error_t *err) {
    const char *arrow = strstr(spec, "->");
    if (!arrow || strstr(arrow + 2, "->")) {
        return remat_error_set(err, REMAT_E_GRAPH, source, path,
                               "einsum spec '%s' needs exactly one '->'", spec);
    }
    size_t operand = 0, len = 0;
    for (const char *p = spec;; p++) {
        if (p == arrow || *p == ',') {
            if (operand >= op->nin) {
                return remat_error_set(err, REMAT_E_GRAPH, source, path,
                                       "einsum spec '%s' has more operands than the op's %zu "
                                       "inputs",
                                       spec, op->nin);
            }
            op->subs[operand][len] = '\0';
            operand++;
            len = 0;
            if (p == arrow) {
                break;
            }
            continue;
        }
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) || len >= REMAT_MAX_RANK) {
            return remat_error_set(err, REMAT_E_GRAPH, source, path,
                                   "einsum spec '%s': operands are up to 8 letters separated by "
                                   "','",
                                   spec);
        }
        if (memchr(op->subs[operand], c, len)) {
            return remat_error_set(err, REMAT_E_GRAPH, source, path,
                                   "einsum spec '%s' repeats index '%c' in one operand (traces "
                                   "and diagonals are not supported)",
                                   spec, c);
        }
        op->subs[operand][len++] = c;
    }
    if (operand != op->nin) {
        return remat_error_set(err, REMAT_E_GRAPH, source, path,
                               "einsum spec '%s' has %zu operands but the op has %zu inputs",
                               spec, operand, op->nin);
    }
    char *o = op->subs[op->nin];
    len = 0;
    for (const char *p = arrow + 2; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) || len >= REMAT_MAX_RANK ||
            memchr(o, c, len)) {
            return remat_error_set(err, REMAT_E_GRAPH, source, path,
                                   "einsum spec '%s': bad output subscripts", spec);
        }
        bool found = false;
        for (size_t i = 0; i < op->nin; i++) {
            found |= strchr(op->subs[i], c) != NULL;
        }
        if (!found) {
            return remat_error_set(err, REMAT_E_GRAPH, source, path,
                                   "einsum spec '%s': output index '%c' appears in no input",
                                   spec, c);
        }
        o[len++] = c;
    }
    o[len] = '\0';
    return REMAT_OK;
}

bool remat_op_einsum_no_batch_dims(const remat_op_t *op) {
    /* A grouped matmul is Megablox's kernel (a custom call) or JAX's
       ragged_dot, not a dot_general: JAX's dot predicates do not match it. */
    if (op->kind == REMAT_OP_EINSUM && op->ragged[0]) {
        return false;
    }
    /* A one-operand einsum lowers to a reduce or a transpose, not a
       dot_general: no dot predicate matches it. */
    if (op->kind != REMAT_OP_EINSUM || op->nin < 2) {
        return false;
    }
    /* A batch dimension of dot_general is an index shared by both operands
       and kept in the output (b and h in "bshd,bthd->bhst"). A
       three-operand einsum is a dot_general whose output a fusion scales
       and sums (DeepSeek-V3.2's indexer scores): its dot's batch indices
       are those two operands share and the output keeps. */
    for (size_t i = 0; i + 1 < op->nin; i++) {
        for (const char *c = op->subs[i]; *c; c++) {
            for (size_t k = i + 1; k < op->nin; k++) {
                if (strchr(op->subs[k], *c) && strchr(op->subs[op->nin], *c)) {
                    return false;
                }
            }
        }
    }
    return true;
}

static const remat_tensor_t *T(const remat_block_t *b, size_t i) {
    return &b->tensors[i];
}

static bool same_shape(const remat_tensor_t *a, const remat_tensor_t *c) {
    return a->rank == c->rank && memcmp(a->dim, c->dim, a->rank * sizeof a->dim[0]) == 0;
}

bool remat_i_dims_equivalent(const remat_graph_t *g, size_t a, size_t b) {
    const remat_dim_t *x = &g->dims[a], *y = &g->dims[b];
    if (a == b) {
        return true;
    }
    if (!x->from || !y->from) {
        return !x->from && !y->from && x->value == y->value;
    }
    return strcmp(x->from, y->from) == 0 &&
           ((!x->div && !y->div) || (x->div && y->div && strcmp(x->div, y->div) == 0));
}

static bool is_float(remat_dtype_t d) {
    return d != REMAT_DTYPE_I32 && d != REMAT_DTYPE_I8 && d != REMAT_DTYPE_BOOL;
}

static void shape_str(const remat_graph_t *g, const remat_tensor_t *t, char *buf, size_t n) {
    size_t len = 0;
    buf[len++] = '[';
    for (size_t i = 0; i < t->rank && len + 2 < n; i++) {
        const char *d = g->dims[t->dim[i]].name;
        size_t dl = strlen(d);
        if (len + dl + 3 >= n) {
            break;
        }
        if (i) {
            buf[len++] = ',';
        }
        memcpy(buf + len, d, dl);
        len += dl;
    }
    buf[len++] = ']';
    buf[len] = '\0';
}

/* The last @p r dims of x (r >= 1): what a norm's scale must be. */
static bool is_last_dims(const remat_tensor_t *x, const remat_tensor_t *s, size_t r) {
    return r >= 1 && s->rank == r && x->rank >= r &&
           memcmp(s->dim, x->dim + (x->rank - r), r * sizeof s->dim[0]) == 0;
}

/* x without its last @p r dims: the shape of statistics over them. */
static bool is_rows_of(const remat_tensor_t *x, const remat_tensor_t *s, size_t r) {
    return x->rank >= r && s->rank == x->rank - r &&
           memcmp(s->dim, x->dim, s->rank * sizeof s->dim[0]) == 0;
}

/* x without its last dim: the shape of per-row statistics. */
static bool is_rows(const remat_tensor_t *x, const remat_tensor_t *s) {
    return x->rank >= 1 && is_rows_of(x, s, 1);
}

/* One op under check: its graph and block, where to report, and its first
   input x and first output y, which most rules compare. */
typedef struct opcheck {
    const remat_graph_t *g;
    const remat_block_t *b;
    const remat_op_t *op;
    const char *source, *path;
    remat_error_t *err;
    const remat_tensor_t *x, *y;
} opcheck_t;

#define BAD(...) remat_error_set(c->err, REMAT_E_GRAPH, c->source, c->path, __VA_ARGS__)

static remat_status_t shape_mismatch(const opcheck_t *c, const remat_tensor_t *a,
                                     const remat_tensor_t *t, const char *why) {
    char sa[96], st[96];
    shape_str(c->g, a, sa, sizeof sa);
    shape_str(c->g, t, st, sizeof st);
    return BAD("%s op '%s': '%s' %s and '%s' %s %s", remat_opkind_name(c->op->kind), c->op->name,
               a->name, sa, t->name, st, why);
}

/* The op's input and output counts against its kind's bounds; its
   operands from outside the layer (`outer`) count as inputs. */
static remat_status_t check_arity(const opcheck_t *c, const kind_info_t *k) {
    const remat_op_t *op = c->op;
    const size_t nin = op->nin + op->outer;
    if (nin < k->min_in || nin > k->max_in) {
        if (k->min_in == k->max_in) {
            return BAD("%s op '%s' takes exactly %u input%s, not %zu", k->name, op->name,
                       k->min_in, k->min_in == 1 ? "" : "s", nin);
        }
        return BAD("%s op '%s' takes %u to %u inputs, not %zu", k->name, op->name, k->min_in,
                   k->max_in, nin);
    }
    if (op->nout < k->min_out || op->nout > k->max_out) {
        if (k->min_out == k->max_out) {
            return BAD("%s op '%s' makes exactly %u output%s, not %zu", k->name, op->name,
                       k->min_out, k->min_out == 1 ? "" : "s", op->nout);
        }
        return BAD("%s op '%s' makes %u to %u outputs, not %zu", k->name, op->name, k->min_out,
                   k->max_out, op->nout);
    }
    return REMAT_OK;
}

/* Each operand's subscripts match its rank, and a letter names one dim
   throughout. */
static remat_status_t check_einsum(const opcheck_t *c) {
    const remat_op_t *op = c->op;
    size_t letter_dim[128];
    for (size_t i = 0; i < 128; i++) {
        letter_dim[i] = REMAT_NONE;
    }
    for (size_t i = 0; i <= op->nin; i++) {
        const remat_tensor_t *t = i < op->nin ? T(c->b, op->in[i]) : c->y;
        const char *s = op->subs[i];
        if (strlen(s) != t->rank) {
            return BAD("einsum op '%s': subscripts '%s' do not match the rank %zu of '%s'",
                       op->name, s, t->rank, t->name);
        }
        for (size_t j = 0; s[j]; j++) {
            unsigned char l = (unsigned char)s[j];
            if (letter_dim[l] == REMAT_NONE) {
                letter_dim[l] = t->dim[j];
            } else if (!remat_i_dims_equivalent(c->g, letter_dim[l], t->dim[j])) {
                return BAD("einsum op '%s': index '%c' is dim '%s' in one operand and "
                           "'%s' in '%s'",
                           op->name, l, c->g->dims[letter_dim[l]].name,
                           c->g->dims[t->dim[j]].name, t->name);
            }
        }
    }
    size_t nletters = 0;
    for (size_t l = 0; l < 128; l++) {
        nletters += letter_dim[l] != REMAT_NONE;
    }
    for (const char *r = op->ragged; *r; r++) {
        if ((unsigned char)*r >= 128 || letter_dim[(unsigned char)*r] == REMAT_NONE) {
            return BAD("einsum op '%s': ragged index '%c' is not in its spec", op->name, *r);
        }
        if (strchr(r + 1, *r)) {
            return BAD("einsum op '%s': ragged index '%c' is named twice", op->name, *r);
        }
    }
    /* the ragged letters (the experts) do not multiply the FLOPs: the rows
       and the contraction must remain to be counted */
    if (op->ragged[0] && strlen(op->ragged) >= nletters) {
        return BAD("einsum op '%s': every index is ragged, so nothing is counted; ragged names "
                   "only the experts' indices",
                   op->name);
    }
    return REMAT_OK;
}

static remat_status_t check_add_mul(const opcheck_t *c) {
    const remat_op_t *op = c->op;
    const remat_tensor_t *y = c->y;
    for (size_t i = 0; i < op->nin; i++) {
        const remat_tensor_t *a = T(c->b, op->in[i]);
        /* numpy broadcasting restricted to trailing dims: a bias [e]
           adds to [b,s,e]; anything else must match exactly. */
        if (a->rank > y->rank ||
            memcmp(a->dim, y->dim + (y->rank - a->rank), a->rank * sizeof a->dim[0])) {
            return shape_mismatch(c, a, y,
                                  "do not broadcast (inputs must equal the output's "
                                  "trailing dims)");
        }
    }
    for (size_t i = 0; i < op->nin; i++) {
        if (same_shape(T(c->b, op->in[i]), y)) {
            return REMAT_OK;
        }
    }
    return BAD("%s op '%s': no input has the output's shape", kinds[op->kind].name, op->name);
}

/* scale, silu, gelu, softmax, rope and cast: same shape; only cast changes
   the dtype. */
static remat_status_t check_elementwise(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y;
    if (!same_shape(x, y)) {
        return shape_mismatch(c, x, y, "must have the same shape");
    }
    if (c->op->kind != REMAT_OP_CAST && x->dtype != y->dtype) {
        return BAD("%s op '%s' keeps the dtype: '%s' is %s, '%s' is %s", kinds[c->op->kind].name,
                   c->op->name, x->name, remat_dtype_name(x->dtype), y->name,
                   remat_dtype_name(y->dtype));
    }
    return REMAT_OK;
}

/* rmsnorm and layernorm: scale (and bias) over the last dim, statistics per row. */
/* A norm reduces over its scale's dims, the input's last ones: one for a
   norm per row, more for one over several (Olmo 3's query and key norms
   over all heads at once, MaxText's GlobalRMSNorm: scale [heads, head_dim],
   statistics [batch, seq]). Its bias, and its statistics, follow the scale. */
static remat_status_t check_norm(const opcheck_t *c) {
    const remat_op_t *op = c->op;
    const remat_tensor_t *x = c->x;
    if (!same_shape(x, c->y)) {
        return shape_mismatch(c, x, c->y, "must have the same shape");
    }
    /* the dims it normalizes over: its scale's, or the last one for an
       rmsnorm without a learned scale (Gemma 4's value norm) */
    const size_t r = op->nin >= 2 ? T(c->b, op->in[1])->rank : 1;
    for (size_t i = 1; i < op->nin; i++) {
        if (!is_last_dims(x, T(c->b, op->in[i]), r)) {
            return shape_mismatch(c, T(c->b, op->in[i]), x,
                                  "must be the last dims of the input (the scale's count)");
        }
    }
    for (size_t i = 1; i < op->nout; i++) {
        if (!is_rows_of(x, T(c->b, op->out[i]), r)) {
            return shape_mismatch(c, T(c->b, op->out[i]), x,
                                  "must be the input without the scale's dims (statistics)");
        }
    }
    return REMAT_OK;
}

static remat_status_t check_dropout(const opcheck_t *c) {
    const remat_tensor_t *mask = T(c->b, c->op->out[1]);
    if (!same_shape(c->x, c->y) || !same_shape(c->x, mask)) {
        return shape_mismatch(c, c->x, mask, "(input, output and mask) must have the same shape");
    }
    if (is_float(mask->dtype)) {
        return BAD("dropout op '%s': the mask '%s' must be bool or int8", c->op->name,
                   mask->name);
    }
    return REMAT_OK;
}

/* Inputs past v are masks the kernel reads, [batch, q's seq, k's seq],
   not float: MaxText's sparse-attention indexer hands Tokamax's splash
   kernel a dense mask of the keys each query may see, which it turns into
   block masks for its forward and for its key/value backward
   (attention_op.py, make_dynamic_splash_mha). They are not
   differentiated. */
static remat_status_t check_attention_mask(const opcheck_t *c, const remat_tensor_t *q,
                                           const remat_tensor_t *kk, size_t S, size_t i) {
    const remat_tensor_t *m = T(c->b, c->op->in[i]);
    if (m->rank != 3 || m->dim[0] != q->dim[0] ||
        !remat_i_dims_equivalent(c->g, m->dim[1], q->dim[S]) ||
        !remat_i_dims_equivalent(c->g, m->dim[2], kk->dim[S])) {
        return BAD("flash_attention op '%s': mask '%s' must be [batch,seq,key seq]",
                   c->op->name, m->name);
    }
    if (is_float(m->dtype)) {
        return BAD("flash_attention op '%s': mask '%s' must be bool or an integer type",
                   c->op->name, m->name);
    }
    return REMAT_OK;
}

/* With `outer` keys and values (an earlier layer's, KV sharing) the op
   reads q alone, and k and v are taken as shaped like it. */
static remat_status_t check_flash_attention(const opcheck_t *c) {
    const remat_op_t *op = c->op;
    const remat_tensor_t *q = c->x;
    const remat_tensor_t *kk = op->outer ? q : T(c->b, op->in[1]);
    const remat_tensor_t *v = op->outer ? q : T(c->b, op->in[2]);
    const remat_tensor_t *lse = T(c->b, op->out[1]);
    const size_t S = op->bhsd ? 2 : 1, H = op->bhsd ? 1 : 2; /* seq, heads positions */
    /* v may have its own head dim (MLA's v_head_dim), and the output has v's */
    if (q->rank != 4 || kk->rank != 4 || v->rank != 4 || kk->dtype != v->dtype ||
        memcmp(kk->dim, v->dim, 3 * sizeof kk->dim[0])) {
        return BAD("flash_attention op '%s': q, k, v must be [batch,%s,head_dim] "
                   "and k, v the same shape but for v's head_dim",
                   op->name, op->bhsd ? "heads,seq" : "seq,heads");
    }
    if (q->dim[0] != kk->dim[0] || q->dim[3] != kk->dim[3]) {
        return shape_mismatch(c, q, kk, "differ in batch or head_dim");
    }
    if (c->y->rank != 4 || memcmp(q->dim, c->y->dim, 3 * sizeof q->dim[0]) ||
        !remat_i_dims_equivalent(c->g, c->y->dim[3], v->dim[3]) || c->y->dtype != q->dtype) {
        return shape_mismatch(c, q, c->y, "must have the same shape but for v's head_dim");
    }
    if (lse->rank != 3 || lse->dim[0] != q->dim[0] || lse->dim[1] != q->dim[H] ||
        lse->dim[2] != q->dim[S]) {
        return BAD("flash_attention op '%s': logsumexp '%s' must be [batch,heads,seq]",
                   op->name, lse->name);
    }
    remat_status_t st = REMAT_OK;
    for (size_t i = 3; st == REMAT_OK && !op->outer && i < op->nin; i++) {
        st = check_attention_mask(c, q, kk, S, i);
    }
    return st;
}

static remat_status_t check_transpose(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y;
    if (x->rank != y->rank) {
        return shape_mismatch(c, x, y, "must be a permutation of each other");
    }
    size_t used[REMAT_MAX_RANK] = {0};
    for (size_t i = 0; i < y->rank; i++) {
        bool hit = false;
        for (size_t j = 0; j < x->rank && !hit; j++) {
            if (!used[j] && x->dim[j] == y->dim[i]) {
                used[j] = hit = true;
            }
        }
        if (!hit) {
            return shape_mismatch(c, x, y, "must be a permutation of each other");
        }
    }
    return REMAT_OK;
}

static remat_status_t check_embedding(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y, *ids = T(c->b, c->op->in[1]);
    if (!x->param || x->rank != 2) {
        return BAD("embedding op '%s': first input must be a [vocab,embed] param", c->op->name);
    }
    if (ids->dtype != REMAT_DTYPE_I32) {
        return BAD("embedding op '%s': token ids '%s' must be int32", c->op->name, ids->name);
    }
    if (y->rank != ids->rank + 1 || y->dim[y->rank - 1] != x->dim[1] ||
        memcmp(y->dim, ids->dim, (y->rank - 1) * sizeof y->dim[0])) {
        return shape_mismatch(c, ids, y, "do not match (output is ids' shape plus embed)");
    }
    return REMAT_OK;
}

static remat_status_t check_cross_entropy(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y;
    const remat_tensor_t *tg = T(c->b, c->op->in[1]), *lse = T(c->b, c->op->out[1]);
    if (tg->dtype != REMAT_DTYPE_I32 || !is_rows(x, tg)) {
        return BAD("cross_entropy op '%s': targets '%s' must be int32 of the logits' "
                   "shape without vocab",
                   c->op->name, tg->name);
    }
    if (y->rank != 0 || y->dtype != REMAT_DTYPE_F32 || !is_rows(x, lse) ||
        lse->dtype != REMAT_DTYPE_F32) {
        return BAD("cross_entropy op '%s': outputs are a scalar fp32 loss and fp32 "
                   "logsumexp rows",
                   c->op->name);
    }
    return REMAT_OK;
}

/* top_k: scores [..., n] -> the k largest [..., k] and their int32
   indices, of one shape. */
static remat_status_t check_top_k(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y, *idx = T(c->b, c->op->out[1]);
    if (y->rank != x->rank || idx->rank != y->rank || memcmp(y->dim, idx->dim, y->rank * sizeof y->dim[0]) ||
        memcmp(x->dim, y->dim, (x->rank - 1) * sizeof x->dim[0])) {
        return BAD("top_k op '%s': values and indices are the scores' shape with the last dim "
                   "k",
                   c->op->name);
    }
    if (idx->dtype != REMAT_DTYPE_I32) {
        return BAD("top_k op '%s': indices '%s' must be int32", c->op->name, idx->name);
    }
    return REMAT_OK;
}

/* gather: rows of the data picked by int32 indices (MoE's permute and
   unpermute); the output's last dim is the data's. */
static remat_status_t check_gather(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y, *idx = T(c->b, c->op->in[1]);
    if (idx->dtype != REMAT_DTYPE_I32) {
        return BAD("gather op '%s': indices '%s' must be int32", c->op->name, idx->name);
    }
    if (!remat_i_dims_equivalent(c->g, x->dim[x->rank - 1], y->dim[y->rank - 1]) ||
        x->dtype != y->dtype) {
        return shape_mismatch(c, x, y, "must share the last dim and the dtype");
    }
    return REMAT_OK;
}

/* one_hot: int32 indices (and optionally the values to place) spread over
   a new, larger array (the dense MoE path's dispatch and combine masks,
   [batch,seq,experts,capacity], from the top-k choices). */
static remat_status_t check_one_hot(const opcheck_t *c) {
    if (c->x->dtype != REMAT_DTYPE_I32) {
        return BAD("one_hot op '%s': indices '%s' must be int32", c->op->name, c->x->name);
    }
    return REMAT_OK;
}

/* broadcast: the input's dims, in order, are some of the output's (MLA's
   shared RoPE key copied to every head); the dtype stays. */
static remat_status_t check_broadcast(const opcheck_t *c) {
    const remat_tensor_t *x = c->x, *y = c->y;
    size_t j = 0;
    for (size_t i = 0; i < y->rank && j < x->rank; i++) {
        j += remat_i_dims_equivalent(c->g, x->dim[j], y->dim[i]);
    }
    if (j != x->rank || x->dtype != y->dtype) {
        return shape_mismatch(c, x, y, "do not broadcast (the input's dims must be some of "
                                       "the output's, in order, of one dtype)");
    }
    return REMAT_OK;
}

remat_status_t remat_i_op_check(const remat_graph_t *g, const remat_block_t *b,
                                const remat_op_t *op, const char *source, const char *path,
                                remat_error_t *err) {
    opcheck_t ctx = {.g = g, .b = b, .op = op, .source = source, .path = path, .err = err};
    const opcheck_t *c = &ctx;
    remat_status_t st = check_arity(c, &kinds[op->kind]);
    if (st) {
        return st;
    }
    ctx.x = T(b, op->in[0]);
    ctx.y = T(b, op->out[0]);
    for (size_t i = 0; i < op->nout; i++) {
        if (T(b, op->out[i])->param) {
            return BAD("op '%s' writes param '%s'", op->name, T(b, op->out[i])->name);
        }
    }
    switch (op->kind) {
        case REMAT_OP_EINSUM:
            return check_einsum(c);
        case REMAT_OP_ADD:
        case REMAT_OP_MUL:
            return check_add_mul(c);
        case REMAT_OP_SCALE:
        case REMAT_OP_SILU:
        case REMAT_OP_GELU:
        case REMAT_OP_SOFTMAX:
        case REMAT_OP_ROPE:
        case REMAT_OP_CAST:
        case REMAT_OP_SIGMOID:
        case REMAT_OP_TANH:
            return check_elementwise(c);
        case REMAT_OP_TOP_K:
            return check_top_k(c);
        case REMAT_OP_GATHER:
            return check_gather(c);
        case REMAT_OP_BROADCAST:
            return check_broadcast(c);
        case REMAT_OP_ONE_HOT:
            return check_one_hot(c);
        case REMAT_OP_RMSNORM:
        case REMAT_OP_LAYERNORM:
            return check_norm(c);
        case REMAT_OP_DROPOUT:
            return check_dropout(c);
        case REMAT_OP_FLASH_ATTENTION:
            return check_flash_attention(c);
        case REMAT_OP_TRANSPOSE:
            return check_transpose(c);
        case REMAT_OP_RESHAPE:
        case REMAT_OP_SPLIT:
        case REMAT_OP_CONCAT:
            /* Element counts are compared once sizes are bound (sim/bind.c). */
            return REMAT_OK;
        case REMAT_OP_EMBEDDING:
            return check_embedding(c);
        case REMAT_OP_CROSS_ENTROPY:
            return check_cross_entropy(c);
        case REMAT_OP_COUNT:
            break;
    }
    return REMAT_OK;
}

static void save(remat_op_t *op, size_t t) {
    for (size_t i = 0; i < op->nsaves; i++) {
        if (op->saves[i] == t) {
            return;
        }
    }
    op->saves[op->nsaves++] = t;
}

void remat_i_op_default_saves(const remat_block_t *b, remat_op_t *op) {
    if (op->saves_override) {
        return;
    }
    op->nsaves = 0;
    switch (op->kind) {
        case REMAT_OP_EINSUM:
            /* dX needs the weight (always available), dW the activation. A
               one-operand einsum is a sum or a transpose: its backward
               broadcasts the output's gradient and reads no operand (JAX
               keeps nothing for it: MaxText's MoE combine, written as
               einsum("BKE,BK->BE", x, ones_like(w)), differentiates as a
               reduce). */
            for (size_t i = 0; op->nin > 1 && i < op->nin; i++) {
                if (!T(b, op->in[i])->param) {
                    save(op, op->in[i]);
                }
            }
            break;
        case REMAT_OP_MUL:
            for (size_t i = 0; i < op->nin; i++) {
                save(op, op->in[i]);
            }
            break;
        case REMAT_OP_SILU:
        case REMAT_OP_GELU:
            save(op, op->in[0]);
            break;
        case REMAT_OP_SOFTMAX:
        case REMAT_OP_SIGMOID:
        case REMAT_OP_TANH:
            save(op, op->out[0]);
            break;
        case REMAT_OP_TOP_K:
            /* the gradient scatters back to the picked positions */
            save(op, op->out[1]);
            break;
        case REMAT_OP_GATHER:
            /* the backward scatters by the indices (MaxText's custom sort
               VJP keeps only them) */
            save(op, op->in[1]);
            break;
        case REMAT_OP_ONE_HOT:
            save(op, op->in[0]);
            break;
        case REMAT_OP_RMSNORM:
        case REMAT_OP_LAYERNORM:
            save(op, op->in[0]);
            for (size_t i = 1; i < op->nout; i++) {
                save(op, op->out[i]);
            }
            break;
        case REMAT_OP_DROPOUT:
            save(op, op->out[1]);
            break;
        case REMAT_OP_FLASH_ATTENTION:
            /* with `outer` keys and values, their holder keeps them */
            for (size_t i = 0; i < op->nin; i++) {
                save(op, op->in[i]);
            }
            save(op, op->out[0]);
            save(op, op->out[1]);
            break;
        case REMAT_OP_EMBEDDING:
            save(op, op->in[1]);
            break;
        case REMAT_OP_CROSS_ENTROPY:
            save(op, op->in[0]);
            save(op, op->in[1]);
            save(op, op->out[1]);
            break;
        default:
            /* add, scale, rope, cast and the views need nothing. */
            break;
    }
}

/* Elements of a bound tensor, from the per-tensor element counts. */
#define N(t) (numel[(t)])

/* 2 x the product of every distinct index size (one multiply-add per point
   of the iteration space); backward is one such contraction per operand
   that needs a gradient. An index's per-device size is the largest any
   operand has: a sharded operand is all-gathered before the contraction
   (FSDP weights, sequence-parallel activations). The sizes multiply in
   order of first appearance; a ragged index (a grouped matmul's experts)
   does not multiply. The graph's index lists each letter's appearances
   (@p ein, @p n words: graph_index.h, REMAT_I_EIN_NEW), so no subscript is
   parsed here. */
static bool einsum_flops(const remat_op_t *op, const size_t *ein, size_t n,
                         const uint64_t *const *tdim, size_t ngrad, uint64_t *f, uint64_t *w) {
    uint64_t p = 2, size = 0;
    for (size_t e = 0; e < n; e++) {
        const size_t k = remat_i_ein_operand(ein[e]);
        const uint64_t v = tdim[k < op->nin ? op->in[k] : op->out[0]][remat_i_ein_dim(ein[e])];
        if (ein[e] & REMAT_I_EIN_NEW) {
            if (e > 0 && !remat_i_mul(p, size, &p)) {
                return false;
            }
            size = v;
        } else if (v > size) {
            size = v;
        }
    }
    if (n > 0 && !remat_i_mul(p, size, &p)) {
        return false;
    }
    *f = p;
    return remat_i_mul(p, ngrad, w);
}

/* QK^T and PV: 2 x 2 x b x h x s x t x d forward; dQ, dK, dV, dP: 4
   contractions backward; a causal kernel computes half of each (MaxText's
   and Megatron-LM's model-FLOPs convention: the blocks above the diagonal
   are skipped). The kernel's internal re-run of QK^T in backward is not
   counted here (the time model adds it). b, h, s and d are q's per-device
   sizes; t is the whole key length (context parallelism all-gathers K and
   V). Keys and values from an earlier layer (`outer`) are q's shape: t is
   q's whole sequence and v's head dim q's. */
static bool attention_flops(const remat_block_t *b, const remat_op_t *op,
                            const uint64_t *const *tdim, const uint64_t *dimsize,
                            size_t ngrad, uint64_t *f, uint64_t *w) {
    const size_t q = op->in[0];
    const size_t S = op->bhsd ? 2 : 1, H = op->bhsd ? 1 : 2; /* seq, heads positions */
    const remat_tensor_t *k = &b->tensors[op->outer ? q : op->in[1]];
    const size_t v = op->outer ? q : op->in[2];
    /* QK^T contracts q's head dim, PV v's (MLA's differ); dQ and dK are
       over q's, dV and dP over v's */
    uint64_t c = 2, d = 0;
    bool ok = remat_i_add(tdim[q][3], tdim[v][3], &d) &&
              remat_i_mul(c, tdim[q][0], &c) && remat_i_mul(c, tdim[q][H], &c) &&
              remat_i_mul(c, tdim[q][S], &c) && remat_i_mul(c, dimsize[k->dim[S]], &c) &&
              remat_i_mul(c, d, f) && remat_i_mul(*f, ngrad ? 2 : 0, w);
    if (op->causal) {
        *f /= 2;
        *w /= 2;
    }
    return ok;
}

/* The kinds of MoE routing and their kin: sigmoid and tanh, top_k,
   one_hot, broadcast, gather (the others here cost nothing). */
static bool routing_flops(const remat_block_t *b, const remat_op_t *op, const uint64_t *numel,
                          size_t ngrad, uint64_t *f, uint64_t *w) {
    const uint64_t n = N(op->out[0]);
    switch (op->kind) {
        case REMAT_OP_SIGMOID:
        case REMAT_OP_TANH:
            return remat_i_mul(n, 4, f) && remat_i_mul(n, ngrad ? 3 : 0, w);
        case REMAT_OP_TOP_K:
            /* a compare per score; the gradient is a scatter of k per row */
            *f = N(op->in[0]);
            *w = ngrad ? n : 0;
            return true;
        case REMAT_OP_ONE_HOT:
            /* a write per output element; the values' gradient gathers
               back from the output */
            *f = n;
            *w = op->nin > 1 && b->tensors[op->in[1]].needs_grad ? n : 0;
            return true;
        case REMAT_OP_BROADCAST:
        case REMAT_OP_GATHER:
            /* data movement; the gradient sums the copies (a scatter-add
               for a gather, into its data only) */
            *f = 0;
            *w = (op->kind == REMAT_OP_GATHER ? b->tensors[op->in[0]].needs_grad : ngrad > 0)
                     ? n
                     : 0;
            return true;
        default:
            return true;
    }
}

/* Every other kind: a fixed cost per element of its output (or, for the
   loss, of its logits). */
static bool per_element_flops(const remat_block_t *b, const remat_op_t *op, const uint64_t *numel,
                              size_t ngrad, uint64_t *f, uint64_t *w) {
    uint64_t n = N(op->out[0]);
    bool ok = true;
    switch (op->kind) {
        case REMAT_OP_ADD:
            ok = remat_i_mul(n, op->nin - 1, f);
            for (size_t i = 0; i < op->nin; i++) {
                /* A broadcast input's gradient is a sum over the output. */
                if (b->tensors[op->in[i]].needs_grad && N(op->in[i]) != n) {
                    ok = ok && remat_i_add(*w, n, w);
                }
            }
            break;
        case REMAT_OP_MUL:
            /* an operand from outside the layer (`outer`) is a factor, and
               its gradient (its holder's) is made here too */
            ok = remat_i_mul(n, op->nin + op->outer - 1, f) &&
                 remat_i_mul(n, ngrad + op->outer, w);
            break;
        case REMAT_OP_SCALE:
            *f = n;
            *w = ngrad ? n : 0;
            break;
        case REMAT_OP_SILU:
            ok = remat_i_mul(n, 4, f) && remat_i_mul(n, ngrad ? 6 : 0, w);
            break;
        case REMAT_OP_GELU:
            ok = remat_i_mul(n, 8, f) && remat_i_mul(n, ngrad ? 12 : 0, w);
            break;
        case REMAT_OP_SOFTMAX:
            ok = remat_i_mul(n, 5, f) && remat_i_mul(n, ngrad ? 4 : 0, w);
            break;
        case REMAT_OP_RMSNORM:
            ok = remat_i_mul(n, 4, f) && remat_i_mul(n, ngrad ? 8 : 0, w);
            break;
        case REMAT_OP_LAYERNORM:
            ok = remat_i_mul(n, 8, f) && remat_i_mul(n, ngrad ? 12 : 0, w);
            break;
        case REMAT_OP_ROPE:
            ok = remat_i_mul(n, 3, f) && remat_i_mul(n, ngrad ? 3 : 0, w);
            break;
        case REMAT_OP_DROPOUT:
            ok = remat_i_mul(n, 2, f);
            *w = ngrad ? n : 0;
            break;
        case REMAT_OP_EMBEDDING:
            *f = 0;
            *w = b->tensors[op->in[0]].needs_grad ? n : 0;
            break;
        case REMAT_OP_CROSS_ENTROPY: {
            uint64_t nl = N(op->in[0]);
            ok = remat_i_mul(nl, 4, f) && remat_i_mul(nl, ngrad ? 2 : 0, w);
            break;
        }
        default:
            /* cast, reshape, transpose, split, concat move no arithmetic;
               the routing kinds have their own rule */
            ok = routing_flops(b, op, numel, ngrad, f, w);
            break;
    }
    return ok;
}

bool remat_i_op_flops(const remat_block_t *b, const remat_i_block_view_t *v, size_t j,
                      const uint64_t *numel, const uint64_t *const *tdim,
                      const uint64_t *dimsize, uint64_t *fwd, uint64_t *bwd) {
    const remat_op_t *op = &b->ops[j];
    uint64_t f = 0, w = 0;
    const size_t ngrad = v->ngrad[j];
    bool ok;
    if (op->kind == REMAT_OP_EINSUM) {
        ok = einsum_flops(op, &v->ein[v->ein_at[j]], v->ein_at[j + 1] - v->ein_at[j], tdim,
                          ngrad, &f, &w);
    } else if (op->kind == REMAT_OP_FLASH_ATTENTION) {
        ok = attention_flops(b, op, tdim, dimsize, ngrad, &f, &w);
    } else {
        ok = per_element_flops(b, op, numel, ngrad, &f, &w);
    }
    *fwd = f;
    *bwd = op->has_backward ? w : 0;
    return ok;
}
