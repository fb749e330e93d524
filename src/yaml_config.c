/* SPDX-License-Identifier: MIT */
/*
 * yaml_config.c: MaxText's YAML configs (see yaml_config.h). libyaml parses;
 * this file walks the document's top-level mapping and writes each value as
 * text, resolving plain scalars as YAML 1.1 (PyYAML, which MaxText's
 * OmegaConf uses) does, and follows base_config.
 *
 * Invariants:
 *  - out->settings[0..n) each own a key and a value, NUL-terminated;
 *  - a setting's source is one of out->sources, which outlive it;
 *  - a chain holds at most REMAT_YAML_MAX_CHAIN files, none twice.
 */
#include "yaml_config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "util.h"

bool remat_i_is_yaml_path(const char *path) {
    size_t n = strlen(path);
    return (n > 4 && strcmp(path + n - 4, ".yml") == 0) ||
           (n > 5 && strcmp(path + n - 5, ".yaml") == 0);
}

/* A growing string, for flow text; bounded so that a huge list cannot grow
   a setting past what any key takes. */
typedef struct text {
    char buf[4096];
    size_t len;
    bool cut;
} text_t;

static void put(text_t *t, const char *s, size_t n) {
    assert(t->len < sizeof t->buf);
    size_t room = sizeof t->buf - 1 - t->len;
    if (n > room) {
        t->cut = true;
        n = room;
    }
    for (size_t i = 0; i < n; i++) {
        t->buf[t->len + i] = s[i];
    }
    t->len += n;
    t->buf[t->len] = '\0';
}

static bool is_one_of(const char *s, const char *const *words) {
    for (; *words; words++) {
        if (strcmp(s, *words) == 0) {
            return true;
        }
    }
    return false;
}

/* YAML 1.1's int and float with '_' separators: digits, an optional sign,
   '.', exponent; underscores dropped. False when @p s is not a number. */
static bool plain_number(const char *s, char *out, size_t size) {
    size_t w = 0;
    bool digit = false;
    for (const char *c = s; *c; c++) {
        if (*c == '_') {
            continue;
        }
        if (!strchr("0123456789+-.eE", *c) || w + 1 >= size) {
            return false;
        }
        digit |= *c >= '0' && *c <= '9';
        out[w++] = *c;
    }
    out[w] = '\0';
    if (!digit) {
        return false;
    }
    char *end;
    (void)strtod(out, &end);
    return *end == '\0';
}

/* A plain scalar as PyYAML's SafeLoader resolves it, as text remat's
   settings take: booleans true/false, numbers without '_', null empty. */
static const char *resolve_plain(const char *s, char *buf, size_t size) {
    static const char *const yes[] = {"yes", "Yes", "YES", "true", "True", "TRUE",
                                      "on",  "On",  "ON",  NULL};
    static const char *const no[] = {"no", "No", "NO", "false", "False", "FALSE",
                                     "off", "Off", "OFF", NULL};
    static const char *const null[] = {"~", "null", "Null", "NULL", "", NULL};
    if (is_one_of(s, yes)) {
        return "true";
    }
    if (is_one_of(s, no)) {
        return "false";
    }
    if (is_one_of(s, null)) {
        return "";
    }
    if (strchr(s, '_') && plain_number(s, buf, size)) {
        return buf;
    }
    return s;
}

static void flow(yaml_document_t *doc, yaml_node_t *node, text_t *t, int depth) {
    if (!node || depth > 32) {
        put(t, "...", 3);
        return;
    }
    if (node->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)node->data.scalar.value;
        bool quote = node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        char num[64];
        const char *s = quote ? v : resolve_plain(v, num, sizeof num);
        put(t, "'", quote);
        put(t, s, strlen(s));
        put(t, "'", quote);
        return;
    }
    bool seq = node->type == YAML_SEQUENCE_NODE;
    put(t, seq ? "[" : "{", 1);
    if (seq) {
        for (yaml_node_item_t *i = node->data.sequence.items.start;
             i < node->data.sequence.items.top; i++) {
            put(t, ", ", i == node->data.sequence.items.start ? 0 : 2);
            flow(doc, yaml_document_get_node(doc, *i), t, depth + 1);
        }
    } else {
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
             p < node->data.mapping.pairs.top; p++) {
            put(t, ", ", p == node->data.mapping.pairs.start ? 0 : 2);
            flow(doc, yaml_document_get_node(doc, p->key), t, depth + 1);
            put(t, ": ", 2);
            flow(doc, yaml_document_get_node(doc, p->value), t, depth + 1);
        }
    }
    put(t, seq ? "]" : "}", 1);
}

static const char *scalar_of(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* logical_axis_rules, [[name, axis | [axes]], ...], in remat's override
   syntax "name:axis+axis,...". A name's first rule is the one kept: flax
   tries a name's rules in order and the first is the one a mesh of the
   listed axes uses. */
static remat_status_t axis_rules(yaml_document_t *doc, yaml_node_t *node, text_t *t,
                                 const char *source, int line, remat_error_t *err) {
    if (node->type != YAML_SEQUENCE_NODE) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, "$.logical_axis_rules",
                               "line %d: logical_axis_rules must be a list of [name, axes]", line);
    }
    for (yaml_node_item_t *i = node->data.sequence.items.start;
         i < node->data.sequence.items.top; i++) {
        yaml_node_t *rule = yaml_document_get_node(doc, *i);
        yaml_node_t *name = NULL, *axes = NULL;
        if (rule && rule->type == YAML_SEQUENCE_NODE &&
            rule->data.sequence.items.top - rule->data.sequence.items.start == 2) {
            name = yaml_document_get_node(doc, rule->data.sequence.items.start[0]);
            axes = yaml_document_get_node(doc, rule->data.sequence.items.start[1]);
        }
        const char *n = scalar_of(name);
        if (!n || !*n || !axes) {
            return remat_error_set(err, REMAT_E_SCHEMA, source, "$.logical_axis_rules",
                                   "line %d: each rule must be [name, axis] or [name, [axes]]",
                                   rule ? (int)rule->start_mark.line + 1 : line);
        }
        char key[128];
        snprintf(key, sizeof key, ",%s:", n);
        if (strstr(t->buf, key) || strncmp(t->buf, key + 1, strlen(key + 1)) == 0) {
            continue;
        }
        put(t, key + (t->len == 0), strlen(key + (t->len == 0)));
        if (axes->type == YAML_SCALAR_NODE) {
            put(t, scalar_of(axes), strlen(scalar_of(axes)));
            continue;
        }
        for (yaml_node_item_t *a = axes->type == YAML_SEQUENCE_NODE ? axes->data.sequence.items.start : NULL;
             a && a < axes->data.sequence.items.top; a++) {
            const char *ax = scalar_of(yaml_document_get_node(doc, *a));
            if (!ax) {
                return remat_error_set(err, REMAT_E_SCHEMA, source, "$.logical_axis_rules",
                                       "line %d: a mesh axis must be a name", line);
            }
            put(t, "+", a != axes->data.sequence.items.start);
            put(t, ax, strlen(ax));
        }
    }
    return REMAT_OK;
}

static remat_status_t append(remat_yaml_config_t *out, const char *key, const char *value,
                             bool scalar, int line, const char *source, remat_error_t *err) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 64;
        remat_yaml_setting_t *s = remat_i_try_realloc_array(out->settings, cap, sizeof *s, err);
        if (!s) {
            return REMAT_E_NOMEM;
        }
        out->settings = s;
        out->cap = cap;
    }
    remat_yaml_setting_t *s = &out->settings[out->n];
    memset(s, 0, sizeof *s);
    s->key = remat_i_try_strdup(key, err);
    s->value = s->key ? remat_i_try_strdup(value, err) : NULL;
    if (!s->value) {
        free(s->key);
        return REMAT_E_NOMEM;
    }
    s->scalar = scalar;
    s->line = line;
    s->source = source;
    out->n++;
    return REMAT_OK;
}

/* One key: value of the top-level mapping. */
static remat_status_t take_pair(yaml_document_t *doc, yaml_node_pair_t *p, const char *source,
                                size_t first, remat_yaml_config_t *out, char **base,
                                remat_error_t *err) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    yaml_node_t *v = yaml_document_get_node(doc, p->value);
    int line = k ? (int)k->start_mark.line + 1 : 0;
    const char *key = scalar_of(k);
    if (!key || !*key || !v) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, NULL,
                               "line %d: a config key must be a non-empty string", line);
    }
    for (size_t i = first; i < out->n; i++) {
        if (strcmp(out->settings[i].key, key) == 0) {
            return remat_error_set(err, REMAT_E_SCHEMA, source, NULL,
                                   "line %d: duplicate key '%s' (first on line %d)", line, key,
                                   out->settings[i].line);
        }
    }
    text_t *t = remat_i_try_calloc(1, sizeof *t, err);
    if (!t) {
        return REMAT_E_NOMEM;
    }
    remat_status_t st = REMAT_OK;
    bool scalar = v->type == YAML_SCALAR_NODE;
    if (strcmp(key, "logical_axis_rules") == 0) {
        st = axis_rules(doc, v, t, source, line, err);
        scalar = true;
    } else if (scalar) {
        const char *s = (const char *)v->data.scalar.value;
        const char *r = v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
                            ? resolve_plain(s, t->buf, sizeof t->buf)
                            : s;
        if (r != t->buf) {
            put(t, r, strlen(r));
        }
    } else {
        flow(doc, v, t, 0);
    }
    if (st == REMAT_OK && strcmp(key, "base_config") == 0) {
        if (*base) {
            st = remat_error_set(err, REMAT_E_SCHEMA, source, "$.base_config",
                                 "line %d: duplicate key 'base_config'", line);
        } else if (!scalar || !t->len) {
            st = remat_error_set(err, REMAT_E_SCHEMA, source, "$.base_config",
                                 "line %d: base_config must name a file", line);
        } else if (!(*base = remat_i_try_strdup(t->buf, err))) {
            st = REMAT_E_NOMEM;
        }
    } else if (st == REMAT_OK) {
        st = append(out, key, t->buf, scalar, line, source, err);
    }
    free(t);
    return st;
}

static remat_status_t walk(yaml_document_t *doc, const char *source, remat_yaml_config_t *out,
                           char **base, remat_error_t *err) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root) {
        return REMAT_OK; /* an empty file sets nothing */
    }
    if (root->type != YAML_MAPPING_NODE) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, NULL,
                               "a config must be a mapping of key: value");
    }
    size_t first = out->n;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        remat_status_t st = take_pair(doc, p, source, first, out, base, err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t parser_error(const yaml_parser_t *p, const char *source,
                                   remat_error_t *err) {
    if (p->error == YAML_MEMORY_ERROR) {
        return remat_error_set(err, REMAT_E_NOMEM, source, NULL, "out of memory in libyaml");
    }
    remat_error_set(err, REMAT_E_SYNTAX, source, NULL, "%s%s%s",
                    p->problem ? p->problem : "not valid YAML", p->context ? " " : "",
                    p->context ? p->context : "");
    if (err) {
        err->line = (int)p->problem_mark.line + 1;
        err->column = (int)p->problem_mark.column + 1;
    }
    return REMAT_E_SYNTAX;
}

remat_status_t remat_i_yaml_parse(const char *text, size_t len, const char *source,
                                  remat_yaml_config_t *out, char **base_config,
                                  remat_error_t *err) {
    *base_config = NULL;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        return remat_error_set(err, REMAT_E_NOMEM, source, NULL, "out of memory in libyaml");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_document_t doc;
    remat_status_t st = REMAT_OK;
    if (!yaml_parser_load(&parser, &doc)) {
        st = parser_error(&parser, source, err);
    } else {
        st = walk(&doc, source, out, base_config, err);
        yaml_document_delete(&doc);
        /* A second document would be silently dropped: refuse it. */
        if (st == REMAT_OK && !yaml_parser_load(&parser, &doc)) {
            st = parser_error(&parser, source, err);
        } else if (st == REMAT_OK) {
            bool more = yaml_document_get_root_node(&doc) != NULL;
            yaml_document_delete(&doc);
            if (more) {
                st = remat_error_set(err, REMAT_E_SCHEMA, source, NULL,
                                     "a config holds one YAML document, not several");
            }
        }
    }
    yaml_parser_delete(&parser);
    if (st) {
        free(*base_config);
        *base_config = NULL;
    }
    return st;
}

void remat_i_yaml_release(remat_yaml_config_t *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->settings[i].key);
        free(c->settings[i].value);
    }
    free(c->settings);
    for (size_t i = 0; i < c->nsources; i++) {
        free(c->sources[i]);
    }
    free(c->sources);
    memset(c, 0, sizeof *c);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Drops "./" segments and folds "name/.." in place, lexically, so that a
   chain names a file one way (errors read better; cycles are seen). A
   leading "../" stays. */
static void tidy_path(char *p) {
    char *seg[REMAT_YAML_MAX_CHAIN * 8];
    size_t n = 0;
    bool abs = p[0] == '/';
    char *save = NULL;
    char copy[4096];
    if (strlen(p) >= sizeof copy) {
        return;
    }
    strcpy(copy, p);
    for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0) {
            continue;
        }
        if (strcmp(t, "..") == 0 && n > 0 && strcmp(seg[n - 1], "..") != 0) {
            n--;
        } else if (n < sizeof seg / sizeof seg[0]) {
            seg[n++] = t;
        } else {
            return; /* too deep to tidy: leave it as named */
        }
    }
    size_t w = 0;
    if (abs) {
        p[w++] = '/';
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(seg[i]);
        if (i) {
            p[w++] = '/';
        }
        memmove(p + w, seg[i], k);
        w += k;
    }
    p[w] = '\0';
}

/* @p base as named in @p from: absolute, or relative to @p from's directory. */
static char *base_path(const char *from, const char *base, remat_error_t *err) {
    size_t dir = base[0] == '/' ? 0 : (size_t)(base_name(from) - from);
    char *p = remat_i_try_malloc(dir + strlen(base) + 1, err);
    if (p) {
        memcpy(p, from, dir);
        strcpy(p + dir, base);
        tidy_path(p);
    }
    return p;
}

static bool file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
    }
    return f != NULL;
}

static remat_status_t add_source(remat_yaml_config_t *out, const char *path, remat_error_t *err) {
    char **s = remat_i_try_realloc_array(out->sources, out->nsources + 1, sizeof *s, err);
    if (!s) {
        return REMAT_E_NOMEM;
    }
    out->sources = s;
    if (!(s[out->nsources] = remat_i_try_strdup(path, err))) {
        return REMAT_E_NOMEM;
    }
    out->nsources++;
    return REMAT_OK;
}

/* Moves @p from's settings to the end of @p to. */
static remat_status_t move_settings(remat_yaml_config_t *from, remat_yaml_config_t *to,
                                    remat_error_t *err) {
    for (size_t i = 0; i < from->n; i++) {
        const remat_yaml_setting_t *s = &from->settings[i];
        remat_status_t st = append(to, s->key, s->value, s->scalar, s->line, s->source, err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t load_chain(const char *path, int depth, remat_yaml_config_t *out,
                                 remat_error_t *err);

/* Follows @p file's base_config @p base (from @p path) into @p out. */
static remat_status_t follow_base(const char *path, const char *base, int depth,
                                  remat_yaml_config_t *out, remat_error_t *err) {
    char *next = base_path(path, base, err);
    if (!next) {
        return REMAT_E_NOMEM;
    }
    remat_status_t st = REMAT_OK;
    if (!file_exists(next) && strcmp(base_name(next), "base.yml") == 0) {
        out->maxtext_base = true; /* MaxText's, not at hand: remat's defaults are its */
    } else if (!file_exists(next)) {
        st = remat_error_set(err, REMAT_E_IO, path, "$.base_config",
                             "base_config '%s' cannot be read (as %s, next to this file)", base,
                             next);
    } else {
        st = load_chain(next, depth + 1, out, err);
    }
    free(next);
    return st;
}

static remat_status_t load_chain(const char *path, int depth, remat_yaml_config_t *out,
                                 remat_error_t *err) {
    if (depth >= REMAT_YAML_MAX_CHAIN) {
        return remat_error_set(err, REMAT_E_SCHEMA, path, "$.base_config",
                               "base_config chain longer than %d files", REMAT_YAML_MAX_CHAIN);
    }
    for (size_t i = 0; i < out->nsources; i++) {
        if (strcmp(out->sources[i], path) == 0) {
            return remat_error_set(err, REMAT_E_SCHEMA, path, "$.base_config",
                                   "base_config chain comes back to '%s'", path);
        }
    }
    char *text = NULL;
    remat_status_t st = add_source(out, path, err);
    if (st == REMAT_OK) {
        st = remat_i_read_file(path, &text, err);
    }
    if (st) {
        remat_error_set_source(err, path);
        return st;
    }
    const char *source = out->sources[out->nsources - 1];
    remat_yaml_config_t mine = {0};
    char *base = NULL;
    st = remat_i_yaml_parse(text, strlen(text), source, &mine, &base, err);
    free(text);
    if (st == REMAT_OK && base) {
        st = follow_base(source, base, depth, out, err);
    } else if (st == REMAT_OK && strcmp(base_name(source), "base.yml") == 0) {
        /* MaxText's base config itself: remat's defaults are base.yml's
           (at the commit docs/config.md names), and its logical axis rules
           repeat names in a way the override syntax cannot say. */
        out->maxtext_base = true;
        remat_i_yaml_release(&mine);
    }
    if (st == REMAT_OK) {
        st = move_settings(&mine, out, err);
    }
    free(base);
    remat_i_yaml_release(&mine);
    if (st) {
        remat_error_set_source(err, source); /* out of memory names the file too */
    }
    return st;
}

remat_status_t remat_i_yaml_load(const char *path, remat_yaml_config_t *out, remat_error_t *err) {
    memset(out, 0, sizeof *out);
    if (!file_exists(path) && strcmp(base_name(path), "base.yml") == 0) {
        /* MaxText/configs/base.yml pasted from a launch command, on a
           machine without MaxText: its defaults are remat's. */
        out->maxtext_base = true;
        remat_status_t st = add_source(out, path, err);
        if (st) {
            remat_error_set_source(err, path);
            remat_i_yaml_release(out);
        }
        return st;
    }
    remat_status_t st = load_chain(path, 0, out, err);
    if (st) {
        remat_i_yaml_release(out);
    }
    assert(st || out->nsources >= 1);
    return st;
}
