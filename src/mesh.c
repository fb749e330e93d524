/* SPDX-License-Identifier: MIT */
/*
 * mesh.c: mesh resolution and logical axis rules (mesh.h). The default rules
 * are MaxText's base.yml mapping as recorded in reference/maxtext-policies.md;
 * logical_axis_rules in the config replaces the rules of the names it lists.
 */
#include "remat/mesh.h"

#include <stdio.h>
#include <string.h>

#include "remat/config.h"

static const char *const axis_names[REMAT_AXIS_COUNT] = {
    "data", "fsdp", "fsdp_transpose", "sequence", "tensor", "tensor_sequence",
    "context", "expert", "stage"};
static const char *const axis_keys[REMAT_AXIS_COUNT] = {
    "data", "fsdp", "fsdp_transpose", "sequence", "tensor", "tensor_sequence",
    "context", "expert", "pipeline"};

const char *remat_axis_name(remat_axis_t a) {
    return a < REMAT_AXIS_COUNT ? axis_names[a] : "?";
}

const char *remat_axis_key(remat_axis_t a) {
    return a < REMAT_AXIS_COUNT ? axis_keys[a] : "?";
}

#define A(x) (1u << REMAT_AXIS_##x)

static const remat_axis_rule_t default_rules[] = {
    /* activations */
    {"activation_batch", A(DATA) | A(FSDP) | A(FSDP_TRANSPOSE) | A(EXPERT)},
    {"activation_length", A(SEQUENCE) | A(CONTEXT)},
    {"activation_norm_length", A(TENSOR_SEQUENCE) | A(CONTEXT)},
    {"activation_embed", A(TENSOR)},
    {"activation_heads", A(TENSOR) | A(TENSOR_SEQUENCE)},
    {"activation_kv_heads", A(TENSOR) | A(TENSOR_SEQUENCE)},
    {"activation_mlp", A(TENSOR)},
    {"activation_vocab", A(TENSOR)},
    /* weights */
    {"embed", A(FSDP) | A(FSDP_TRANSPOSE)},
    {"heads", A(TENSOR)},
    {"kv_heads", A(TENSOR)},
    {"mlp", A(TENSOR)},
    {"vocab", A(TENSOR)},
    {"exp", A(EXPERT)},
    {"layers", A(STAGE)},
};

static int parse_axis(const char *s, size_t n) {
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (strlen(axis_names[a]) == n && strncmp(s, axis_names[a], n) == 0) {
            return a;
        }
    }
    return -1;
}

static remat_status_t set_rule(remat_mesh_t *m, const char *logical, size_t n, unsigned axes,
                               remat_error_t *err) {
    for (size_t i = 0; i < m->nrules; i++) {
        if (strlen(m->rules[i].logical) == n && strncmp(m->rules[i].logical, logical, n) == 0) {
            m->rules[i].axes = axes;
            return REMAT_OK;
        }
    }
    if (m->nrules == REMAT_MAX_RULES || n >= sizeof m->rules[0].logical) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, "logical_axis_rules",
                               "too many or too long logical axis names");
    }
    memcpy(m->rules[m->nrules].logical, logical, n);
    m->rules[m->nrules].logical[n] = '\0';
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

remat_status_t remat_mesh_build(const remat_config_t *cfg, remat_mesh_t *m, remat_error_t *err) {
    memset(m, 0, sizeof *m);
    m->devices = cfg->num_devices;
    uint64_t ici = 1, dcn = 1;
    int ici_fill = -1, dcn_fill = -1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        int64_t v = cfg->ici[a];
        if (v == -1) {
            if (ici_fill >= 0) {
                return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                       "ici_%s_parallelism and ici_%s_parallelism are both -1: "
                                       "at most one axis fills the devices",
                                       axis_keys[ici_fill], axis_keys[a]);
            }
            ici_fill = a;
        } else {
            ici *= (uint64_t)v;
        }
        v = cfg->dcn[a];
        if (v == -1) {
            if (dcn_fill >= 0) {
                return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                       "dcn_%s_parallelism and dcn_%s_parallelism are both -1",
                                       axis_keys[dcn_fill], axis_keys[a]);
            }
            dcn_fill = a;
        } else {
            dcn *= (uint64_t)v;
        }
    }
    /* One slice unless the dcn axes say otherwise: a -1 dcn axis is 1 then,
       and an ici -1 takes what the devices leave. */
    uint64_t dcn_fill_v = 1;
    uint64_t fixed = ici * dcn;
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
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        uint64_t i = a == ici_fill ? ici_fill_v : (uint64_t)cfg->ici[a];
        uint64_t d = a == dcn_fill ? dcn_fill_v : (uint64_t)cfg->dcn[a];
        m->shards[a] = i * d;
    }
    uint64_t product = 1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        product *= m->shards[a];
    }
    if (product != m->devices) {
        char text[256];
        size_t len = 0;
        text[0] = '\0';
        for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
            if (m->shards[a] != 1) {
                len += (size_t)snprintf(text + len, sizeof text - len, "%s%s=%llu",
                                        len ? " x " : "", axis_names[a],
                                        (unsigned long long)m->shards[a]);
            }
        }
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "mesh %s has %llu devices, but num_devices=%llu",
                               len ? text : "(all axes 1)", (unsigned long long)product,
                               (unsigned long long)m->devices);
    }
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++) {
        m->rules[m->nrules++] = default_rules[i];
    }
    return cfg->logical_axis_rules[0] ? parse_rules(m, cfg->logical_axis_rules, err) : REMAT_OK;
}

uint64_t remat_mesh_microbatches(const remat_mesh_t *m, const remat_config_t *cfg) {
    uint64_t stages = m->shards[REMAT_AXIS_STAGE];
    if (stages <= 1) {
        return 1;
    }
    return cfg->num_pipeline_microbatches ? cfg->num_pipeline_microbatches : stages;
}

unsigned remat_mesh_axes(const remat_mesh_t *m, const char *logical) {
    if (!logical) {
        return 0;
    }
    for (size_t i = 0; i < m->nrules; i++) {
        if (strcmp(m->rules[i].logical, logical) == 0) {
            return m->rules[i].axes;
        }
    }
    return 0;
}

uint64_t remat_mesh_product(const remat_mesh_t *m, unsigned axes) {
    uint64_t p = 1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (axes & (1u << a)) {
            p *= m->shards[a];
        }
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
