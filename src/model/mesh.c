/* SPDX-License-Identifier: MIT */
/*
 * mesh.c: mesh resolution and logical axis rules (mesh.h). The default rules
 * are MaxText's base.yml mapping as recorded in reference/maxtext-policies.md;
 * logical_axis_rules in the config replaces the rules of the names it lists.
 *
 * Invariants: a rule's hash is remat_mesh_name_hash of its logical name
 * (the default table carries them precomputed; debug builds check them);
 * the bucket chains hold every rule once, each chain in rule order; a mesh
 * whose rules are the defaults alone (`default_rules`) holds no copy of
 * them: its rule i is the table's rule i (rules_of).
 *
 * A mesh is built from a spec (remat_mesh_spec_t), not a config: the
 * config (input layer, above) fills the spec (input/config_mesh.c).
 */
#include "remat/model/mesh.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

static const char *const axis_names[REMAT_AXIS_COUNT] = {
    "data",    "fsdp",   "fsdp_transpose", "sequence",       "tensor",
    "tensor_sequence", "context", "expert", "stage", "context_usp_ulysses",
    "autoregressive"};
static const char *const axis_keys[REMAT_AXIS_COUNT] = {
    "data",    "fsdp",   "fsdp_transpose", "sequence",       "tensor",
    "tensor_sequence", "context", "expert", "pipeline", "context_usp_ulysses",
    "autoregressive"};

const char *remat_axis_name(remat_axis_t a) {
    return a < REMAT_AXIS_COUNT ? axis_names[a] : "?";
}

const char *remat_axis_key(remat_axis_t a) {
    return a < REMAT_AXIS_COUNT ? axis_keys[a] : "?";
}

#define A(x) (1u << REMAT_AXIS_##x)
#define R(name, axes_, hash_) {.logical = name, .axes = axes_, .hash = hash_}
#define REMAT_NONE_RULE ((size_t)-1)
#define REMAT_MAX_RANK_MESH 16
#define CTX (A(CONTEXT) | A(CONTEXT_USP))

/* MaxText's logical_axis_rules for training, in base.yml's order
   (AI-Hypercomputer/maxtext@e591f30, src/maxtext/configs/base.yml). A
   logical name may have several rules: for each tensor the first rule whose
   mesh axes no other dim of the tensor uses yet applies (flax's
   logical-to-mesh resolution), so `embed` falls back to fsdp without
   fsdp_transpose on a weight whose `mlp` dim took fsdp_transpose. Each
   rule carries its name's hash (remat_mesh_name_hash), so that building a
   mesh does not rehash them; debug builds check every one. */
static const remat_axis_rule_t default_rules[] = {
    /* vocabulary. MaxText also shards these over `stage`: it runs the
       embedding and the loss outside the pipeline on the whole batch, so
       each device holds global / (data x stage x fsdp ...) sequences of
       them. remat divides the head's batch dims by the stages where it
       binds them (sim/bind.c: bind_dim_sizes), so the stage axis is left
       out here. */
    R("activation_embed_and_logits_batch", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT),
      0x346e07adu),
    R("activation_embed_and_logits_batch_sequence",
      A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | CTX | A(EXPERT), 0xed052657u),
    R("activation_vocab", A(TENSOR) | A(TENSOR_SEQUENCE), 0x76aa7809u),
    R("activation_vocab", A(TENSOR), 0x76aa7809u),
    R("activation_vocab", A(TENSOR_SEQUENCE), 0x76aa7809u),
    R("vocab", A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0x40d040ccu),
    R("embed_vocab", A(FSDP) | A(FSDP_TRANSPOSE) | CTX | A(EXPERT), 0x7e546c7eu),
    /* attention */
    R("activation_batch_attn", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT), 0xb8b6aee4u),
    R("activation_input_length_attn", A(TENSOR_SEQUENCE) | A(CONTEXT), 0xcbd090c7u),
    R("activation_heads", A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0x4d8be6d9u),
    R("activation_kv_heads", A(TENSOR) | A(TENSOR_SEQUENCE), 0x698c657fu),
    R("activation_length_attn", CTX, 0xeb0c7d84u),
    R("activation_q_length", CTX, 0x7968603au),
    R("activation_kv_length", 0, 0x7d9874e8u),
    R("activation_embed_attn", A(TENSOR), 0x9e18906bu),
    R("activation_kv", A(TENSOR) | A(TENSOR_SEQUENCE), 0x2a293113u),
    R("activation_kv_batch", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT), 0x92afc5acu),
    R("activation_kv_head_dim", A(TENSOR) | A(TENSOR_SEQUENCE), 0xe94c53e3u),
    R("heads", A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0x0bc22610u),
    R("q_heads", A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0xaec9716cu),
    R("kv_heads", A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0x10f1e324u),
    R("qkv", 0, 0xed03d959u),
    R("kv", 0, 0x593d1d94u),
    R("kv_head_dim", 0, 0xc8c9be56u),
    R("q_lora", A(FSDP) | A(FSDP_TRANSPOSE) | CTX | A(EXPERT), 0xb2549b95u),
    R("q_lora", A(FSDP) | CTX | A(EXPERT), 0xb2549b95u),
    R("kv_lora", A(FSDP) | A(FSDP_TRANSPOSE) | CTX | A(EXPERT), 0xdee87e8du),
    R("kv_lora", A(FSDP) | CTX | A(EXPERT), 0xdee87e8du),
    /* mixture of experts */
    R("activation_batch_moe", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT), 0xe9862f02u),
    R("activation_length_moe", CTX, 0x35626022u),
    R("activation_norm_length_moe", A(TENSOR_SEQUENCE) | CTX, 0x4d1eb735u),
    R("activation_embed_moe", A(TENSOR), 0x2d74deb3u),
    R("activation_mlp_moe", A(TENSOR) | A(TENSOR_SEQUENCE), 0xf80d9275u),
    R("activation_exp", A(EXPERT), 0x820d3419u),
    R("exp", A(EXPERT), 0x72a68728u),
    R("mlp_moe", A(FSDP_TRANSPOSE) | A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE),
      0xd02e535cu),
    R("embed_moe", A(FSDP) | A(FSDP_TRANSPOSE) | CTX, 0x05b8fb4eu),
    R("embed_moe", A(FSDP) | CTX, 0x05b8fb4eu),
    /* dense layers and model structure */
    R("activation_mlp", A(TENSOR) | A(TENSOR_SEQUENCE), 0xf0fe66d5u),
    R("activation_batch", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT), 0x93b01392u),
    R("activation_length", CTX, 0x14fba8f2u),
    R("activation_norm_length", A(TENSOR_SEQUENCE) | CTX, 0x0a4f2a95u),
    R("activation_embed", A(TENSOR), 0x32bca88bu),
    R("activation_stage", A(STAGE), 0x576eb780u),
    R("mlp", A(FSDP_TRANSPOSE) | A(TENSOR) | A(TENSOR_SEQUENCE) | A(AUTOREGRESSIVE), 0xe19626e4u),
    R("embed", A(FSDP) | A(FSDP_TRANSPOSE) | CTX | A(EXPERT), 0x281ba64eu),
    R("embed", A(FSDP) | CTX | A(EXPERT), 0x281ba64eu),
    R("norm", A(TENSOR), 0xa58b212fu),
    R("layers", A(STAGE), 0x8fb7915fu),
};

static int parse_axis(const char *s, size_t n) {
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (strlen(axis_names[a]) == n && strncmp(s, axis_names[a], n) == 0) {
            return a;
        }
    }
    return -1;
}

/* A user's rule for @p logical replaces every default rule of that name, in
   the place of the first of them (or at the end for a new name). */
static remat_status_t set_rule(remat_mesh_t *m, const char *logical, size_t n, unsigned axes,
                               remat_error_t *err) {
    if (n >= sizeof m->rules[0].logical) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, "logical_axis_rules",
                               "logical axis name '%.*s' is too long", (int)n, logical);
    }
    size_t w = 0, at = REMAT_NONE_RULE;
    for (size_t i = 0; i < m->nrules; i++) {
        bool same = strlen(m->rules[i].logical) == n && strncmp(m->rules[i].logical, logical, n) == 0;
        if (same && at == REMAT_NONE_RULE) {
            at = w;
            m->rules[w++].axes = axes;
        } else if (!same) {
            m->rules[w++] = m->rules[i];
        }
    }
    m->nrules = w;
    if (at != REMAT_NONE_RULE) {
        return REMAT_OK;
    }
    if (m->nrules == REMAT_MAX_RULES) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, "logical_axis_rules",
                               "at most %d logical axis rules", REMAT_MAX_RULES);
    }
    memcpy(m->rules[m->nrules].logical, logical, n);
    m->rules[m->nrules].logical[n] = '\0';
    m->rules[m->nrules].hash = remat_mesh_name_hash(m->rules[m->nrules].logical);
    m->rules[m->nrules++].axes = axes;
    return REMAT_OK;
}

/* "activation_embed:,activation_norm_length:tensor+context" */
static remat_status_t parse_rules(remat_mesh_t *m, const char *text, remat_error_t *err) {
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (!colon || colon == p) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, "logical_axis_rules",
                                   "each rule is LOGICAL:AXIS+AXIS (or LOGICAL: for none), "
                                   "rules separated by ','");
        }
        unsigned axes = 0;
        const char *q = colon + 1, *stop = p + len;
        while (q < stop) {
            const char *plus = memchr(q, '+', (size_t)(stop - q));
            size_t n = plus ? (size_t)(plus - q) : (size_t)(stop - q);
            int a = parse_axis(q, n);
            if (a < 0) {
                return remat_error_set(err, REMAT_E_CONFIG, NULL, "logical_axis_rules",
                                       "unknown mesh axis '%.*s' (data, fsdp, fsdp_transpose, "
                                       "sequence, tensor, tensor_sequence, context, expert, "
                                       "stage)",
                                       (int)n, q);
            }
            axes |= 1u << a;
            q += n + (plus ? 1 : 0);
        }
        remat_status_t st = set_rule(m, p, (size_t)(colon - p), axes, err);
        if (st) {
            return st;
        }
        p += len + (end ? 1 : 0);
    }
    return REMAT_OK;
}

/* The product of @p n factors, or false when it passes 2^62. */
static bool product_ok(const uint64_t *f, size_t n, uint64_t *out) {
    remat_acc_t p = {1, false};
    for (size_t i = 0; i < n; i++) {
        remat_acc_mul(&p, f[i]);
    }
    *out = p.value;
    return !p.overflow;
}

/* The -1 axes of one kind (ici or dcn): at most one. */
static remat_status_t find_fill(const int64_t *v, const char *kind, int *fill,
                                remat_error_t *err) {
    *fill = -1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (v[a] != -1) {
            continue;
        }
        if (*fill >= 0) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "%s_%s_parallelism and %s_%s_parallelism are both -1: at most "
                                   "one axis fills the %s",
                                   kind, axis_keys[*fill], kind, axis_keys[a],
                                   strcmp(kind, "ici") == 0 ? "devices" : "slices");
        }
        *fill = a;
    }
    return REMAT_OK;
}

static remat_status_t mesh_mismatch(const remat_mesh_t *m, uint64_t product, bool overflow,
                                    remat_error_t *err) {
    char text[320];
    size_t len = 0;
    text[0] = '\0';
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (m->shards[a] != 1 && len < sizeof text) {
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s=%llu", len ? " x " : "",
                                    axis_names[a], (unsigned long long)m->shards[a]);
        }
    }
    if (overflow) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "mesh %s: the product of the axes does not fit in 62 bits", text);
    }
    return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                           "mesh %s has %llu devices, but num_devices=%llu",
                           len ? text : "(all axes 1)", (unsigned long long)product,
                           (unsigned long long)m->devices);
}

/* Chains every rule into its hash bucket, in rule order (appending at each
   chain's tail keeps a chain sorted by rule index). */
static void index_rules(remat_mesh_t *m) {
    _Static_assert(REMAT_MAX_RULES < REMAT_RULE_NONE, "rule indices fit a byte");
    uint8_t tail[REMAT_RULE_BUCKETS];
    memset(m->bucket_head, REMAT_RULE_NONE, sizeof m->bucket_head);
    for (size_t i = 0; i < m->nrules; i++) {
        const size_t k = m->rules[i].hash % REMAT_RULE_BUCKETS;
        m->bucket_next[i] = REMAT_RULE_NONE;
        if (m->bucket_head[k] == REMAT_RULE_NONE) {
            m->bucket_head[k] = (uint8_t)i;
        } else {
            m->bucket_next[tail[k]] = (uint8_t)i;
        }
        tail[k] = (uint8_t)i;
    }
}

/* The slices a -1 dcn axis (@p fill, or -1 for none) takes: num_slices
   over the other dcn axes' product when num_slices is given, else 1. */
static remat_status_t dcn_fill_value(const remat_mesh_spec_t *cfg, int fill, uint64_t *out,
                                     remat_error_t *err) {
    *out = 1;
    if (fill < 0 || cfg->num_slices <= 0) {
        return REMAT_OK;
    }
    uint64_t others = 1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        others *= a == fill ? 1 : (uint64_t)cfg->dcn[a]; /* below 2^40: config checks */
    }
    if ((uint64_t)cfg->num_slices % others) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "mesh: the dcn axes multiply to %llu, which does not divide "
                               "num_slices=%lld, so dcn_%s_parallelism=-1 cannot fill it",
                               (unsigned long long)others, (long long)cfg->num_slices,
                               axis_keys[fill]);
    }
    *out = (uint64_t)cfg->num_slices / others;
    return REMAT_OK;
}

/* The mesh's rules: none copied for the defaults alone (the table is the
   rules: rules_of), else the defaults unless overridden, the config's
   own applied, and the chains built. With override_logical_axis_rules
   the config's rules are all there are (MaxText replaces base.yml's
   list); a logical axis they do not name is not sharded. */
static remat_status_t build_rules(const remat_mesh_spec_t *cfg, remat_mesh_t *m,
                                  remat_error_t *err) {
#ifndef NDEBUG
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++) {
        assert(default_rules[i].hash == remat_mesh_name_hash(default_rules[i].logical));
    }
#endif
    if (m->default_rules) {
        return REMAT_OK;
    }
    _Static_assert(sizeof default_rules <= sizeof m->rules, "the defaults fit a mesh");
    if (!cfg->override_rules) {
        memcpy(m->rules, default_rules, sizeof default_rules);
        m->nrules = sizeof default_rules / sizeof default_rules[0];
    }
    remat_status_t st;
    if (cfg->rules[0] && (st = parse_rules(m, cfg->rules, err))) {
        return st;
    }
    index_rules(m);
    return REMAT_OK;
}

remat_status_t remat_mesh_build_spec(const remat_mesh_spec_t *cfg, remat_mesh_t *m,
                                     remat_error_t *err) {
    /* the rules are written as they are added: only the fields before
       them need clearing (a mesh is built once per analysis) */
    memset(m, 0, offsetof(remat_mesh_t, rules));
    m->default_rules = !cfg->override_rules && !cfg->rules[0];
    m->devices = cfg->devices;
    if (cfg->ici[REMAT_AXIS_SEQUENCE] != 1 || cfg->dcn[REMAT_AXIS_SEQUENCE] != 1) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, "ici_sequence_parallelism",
                               "MaxText's mesh has no 'sequence' axis (mesh_axes in base.yml at "
                               "e591f30); shard the sequence with ici_context_parallelism or "
                               "ici_tensor_sequence_parallelism");
    }
    int ici_fill, dcn_fill;
    remat_status_t st;
    if ((st = find_fill(cfg->ici, "ici", &ici_fill, err)) ||
        (st = find_fill(cfg->dcn, "dcn", &dcn_fill, err))) {
        return st;
    }
    uint64_t f[2 * REMAT_AXIS_COUNT], fixed;
    size_t nf = 0;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        f[nf++] = a == ici_fill ? 1 : (uint64_t)cfg->ici[a];
        f[nf++] = a == dcn_fill ? 1 : (uint64_t)cfg->dcn[a];
    }
    if (!product_ok(f, nf, &fixed)) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "mesh: the fixed axes multiply past 2^62");
    }
    /* A -1 dcn axis takes the slices the fixed dcn axes leave of
       num_slices (MaxText's dcn_data_parallelism=-1), one slice without
       num_slices; an ici -1 takes what the devices leave. */
    uint64_t dcn_fill_v = 1;
    if ((st = dcn_fill_value(cfg, dcn_fill, &dcn_fill_v, err))) {
        return st;
    }
    fixed *= dcn_fill_v; /* both below 2^40 (config checks) */
    uint64_t ici_fill_v = 1;
    if (ici_fill >= 0) {
        if (fixed == 0 || m->devices % fixed) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "mesh: the fixed axes multiply to %llu, which does not divide "
                                   "num_devices=%llu, so ici_%s_parallelism=-1 cannot fill it",
                                   (unsigned long long)fixed, (unsigned long long)m->devices,
                                   axis_keys[ici_fill]);
        }
        ici_fill_v = m->devices / fixed;
    }
    bool overflow = false;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        uint64_t pair[2] = {a == ici_fill ? ici_fill_v : (uint64_t)cfg->ici[a],
                            a == dcn_fill ? dcn_fill_v : (uint64_t)cfg->dcn[a]};
        overflow |= !product_ok(pair, 2, &m->shards[a]);
        m->ici[a] = pair[0];
    }
    uint64_t product = 0;
    overflow = overflow || !product_ok(m->shards, REMAT_AXIS_COUNT, &product);
    if (overflow || product != m->devices) {
        return mesh_mismatch(m, product, overflow, err);
    }
    return build_rules(cfg, m, err);
}

/* The first rule of the name's bucket chain (remat_mesh_name_rules). */
unsigned remat_mesh_axes(const remat_mesh_t *m, const char *logical) {
    uint64_t rules[REMAT_RULE_WORDS];
    return remat_mesh_name_rules(m, logical, logical ? remat_mesh_name_hash(logical) : 0, rules);
}

uint32_t remat_mesh_name_hash(const char *name) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h ^ *p) * 16777619u;
    }
    return h;
}

/* The index of the lowest set bit of @p x (not 0). */
static inline unsigned lowest_bit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned a = 0;
    for (; !(x & 1u); x >>= 1) {
        a++;
    }
    return a;
#endif
}

/* When rule @p i of @p rules is @p logical's (hash @p hash): its bit set
   in @p out, and its axes in *@p first if it is the name's first (*@p any
   tells whether one was met). Rules are tried in order, so the first
   match is the name's first rule. */
static void match_rule(const remat_axis_rule_t *rules, size_t i, const char *logical,
                       uint32_t hash, uint64_t *out, unsigned *first, bool *any) {
    if (rules[i].hash == hash && strcmp(logical, rules[i].logical) == 0) {
        out[i / 64] |= (uint64_t)1 << (i % 64);
        *first = *any ? *first : rules[i].axes;
        *any = true;
    }
}

/* A chain is in rule order: its first match is the name's first rule. */
unsigned remat_mesh_name_rules(const remat_mesh_t *m, const char *logical, uint32_t hash,
                               uint64_t out[REMAT_RULE_WORDS]) {
    _Static_assert(REMAT_RULE_WORDS * 64 >= REMAT_MAX_RULES, "a bit per rule");
    memset(out, 0, REMAT_RULE_WORDS * sizeof *out);
    if (!logical) {
        return 0;
    }
    assert(hash == remat_mesh_name_hash(logical));
    if (m->default_rules) {
        return remat_mesh_default_name_rules(logical, hash, out);
    }
    unsigned first = 0;
    bool any = false;
    for (uint8_t i = m->bucket_head[hash % REMAT_RULE_BUCKETS]; i != REMAT_RULE_NONE;
         i = m->bucket_next[i]) {
        match_rule(m->rules, i, logical, hash, out, &first, &any);
    }
    return first;
}

/* The defaults are the first rules of such a mesh, in the table's order,
   so a rule's bit is its index in the table here too. Graphs call this
   once per logical name when they are made: a scan is enough. */
unsigned remat_mesh_default_name_rules(const char *logical, uint32_t hash,
                                       uint64_t out[REMAT_RULE_WORDS]) {
    _Static_assert(sizeof default_rules / sizeof default_rules[0] <= REMAT_MAX_RULES,
                   "a bit per default rule");
    memset(out, 0, REMAT_RULE_WORDS * sizeof *out);
    unsigned first = 0;
    bool any = false;
    for (size_t i = 0; logical && i < sizeof default_rules / sizeof default_rules[0]; i++) {
        match_rule(default_rules, i, logical, hash, out, &first, &any);
    }
    return first;
}

/* The rules a bit set over a mesh's rules indexes: the default table
   itself for a mesh of the defaults alone, which copies none. */
static const remat_axis_rule_t *rules_of(const remat_mesh_t *m) {
    return m->default_rules ? default_rules : m->rules;
}

/* The common tensor: no two dims share a name, and each dim's first rule
   uses no mesh axis another's does. Then flax gives every dim its first
   rule: when that rule's turn comes the dim is free (its other rules come
   later) and its axes are (the others hold their own first rules'). False,
   with @p out partly written, for any other tensor. */
bool remat_mesh_first_rules(const remat_mesh_t *m, const uint64_t *const *rules, size_t rank,
                            unsigned *out) {
    uint64_t seen[REMAT_RULE_WORDS] = {0};
    unsigned used = 0;
    for (size_t d = 0; d < rank; d++) {
        uint64_t shared = 0;
        size_t first = REMAT_RULE_WORDS * 64;
        for (size_t w = REMAT_RULE_WORDS; w-- > 0;) {
            shared |= rules[d][w] & seen[w];
            seen[w] |= rules[d][w];
            first = rules[d][w] ? w * 64 + lowest_bit(rules[d][w]) : first;
        }
        const unsigned axes = first < REMAT_RULE_WORDS * 64 ? rules_of(m)[first].axes : 0;
        if (shared || (axes & used)) {
            return false;
        }
        out[d] = axes;
        used |= axes;
    }
    return true;
}

/* flax: the rules in order; each takes the first dim with its name unless
   that dim is already sharded or one of the rule's mesh axes is in use. A
   bit set of the rules the dims name, walked lowest first, is that order;
   a rule an earlier dim names is not the later dim's. */
void remat_mesh_tensor_axes_ruled(const remat_mesh_t *m, const uint64_t *const *rules,
                                  size_t rank, unsigned *out) {
    rank = rank < REMAT_MAX_RANK_MESH ? rank : REMAT_MAX_RANK_MESH;
    if (remat_mesh_first_rules(m, rules, rank, out)) {
        return;
    }
    uint64_t seen[REMAT_RULE_WORDS] = {0};
    uint8_t dim_of[REMAT_RULE_WORDS * 64]; /* read only where seen */
    for (size_t d = 0; d < rank; d++) {
        out[d] = 0;
        for (size_t w = 0; w < REMAT_RULE_WORDS; w++) {
            uint64_t fresh = rules[d][w] & ~seen[w];
            seen[w] |= fresh;
            for (; fresh; fresh &= fresh - 1) {
                dim_of[w * 64 + lowest_bit(fresh)] = (uint8_t)d;
            }
        }
    }
    unsigned used = 0;
    uint32_t assigned = 0;
    for (size_t w = 0; w < REMAT_RULE_WORDS; w++) {
        for (uint64_t r = seen[w]; r; r &= r - 1) {
            const size_t i = w * 64 + lowest_bit(r), d = dim_of[i];
            const unsigned axes = rules_of(m)[i].axes;
            if (!(assigned >> d & 1) && (axes & used) == 0) {
                assigned |= (uint32_t)1 << d;
                out[d] = axes;
                used |= axes;
            }
        }
    }
}

void remat_mesh_tensor_axes(const remat_mesh_t *m, const char *const *logical, size_t rank,
                            unsigned *out) {
    uint64_t rules[REMAT_MAX_RANK_MESH][REMAT_RULE_WORDS];
    const uint64_t *row[REMAT_MAX_RANK_MESH];
    rank = rank < REMAT_MAX_RANK_MESH ? rank : REMAT_MAX_RANK_MESH;
    for (size_t d = 0; d < rank; d++) {
        remat_mesh_name_rules(m, logical[d], logical[d] ? remat_mesh_name_hash(logical[d]) : 0,
                              rules[d]);
        row[d] = rules[d];
    }
    remat_mesh_tensor_axes_ruled(m, row, rank, out);
}

uint64_t remat_mesh_product(const remat_mesh_t *m, unsigned axes) {
    uint64_t p = 1;
    axes &= (1u << REMAT_AXIS_COUNT) - 1;
    for (; axes; axes &= axes - 1) { /* each set bit, lowest first */
        p *= m->shards[lowest_bit(axes)];
    }
    return p;
}

void remat_mesh_axes_text(unsigned axes, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (int a = 0; a < REMAT_AXIS_COUNT && len < size; a++) {
        if (axes & (1u << a)) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "+" : "", axis_names[a]);
        }
    }
    if (!len) {
        snprintf(buf, size, "(none)");
    }
}
