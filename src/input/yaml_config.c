/* SPDX-License-Identifier: MIT */
/*
 * yaml_config.c: MaxText's YAML configs (see yaml_config.h). libyaml's
 * parser gives events; this file composes them into its own node table,
 * walks the document's top-level mapping, writes each value as text
 * (resolving plain scalars as YAML 1.1, PyYAML, which MaxText's OmegaConf
 * uses, does) and follows base_config.
 *
 * Why not libyaml's own composer (yaml_parser_load): it looks anchors up in
 * a list, so a file of many anchors takes time quadratic in their count,
 * and it leaves alias expansion to the caller. Here anchors are a hash
 * table, an alias is a reference to its node (never a copy), and every
 * walk of a value counts the nodes it visits and the bytes it writes
 * against one budget per document: a "billion laughs" of a few hundred
 * bytes is an error naming it, not minutes of work.
 *
 * Invariants:
 *  - out->settings[0..n) each own a key and a value, NUL-terminated;
 *  - a setting's source is one of out->sources, which outlive it;
 *  - a chain holds at most REMAT_YAML_MAX_CHAIN files, none twice, and a
 *    base_config is read only when it is a regular file;
 *  - a document's work is linear in its size: each event makes at most one
 *    node, each node's items are copied once, anchors and top-level keys
 *    are found by hash, and the walks stop at REMAT_YAML_MAX_VISITS nodes
 *    and REMAT_YAML_MAX_TEXT bytes;
 *  - collections nest at most REMAT_YAML_MAX_DEPTH deep.
 */
#include "input/yaml_config.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "base/util.h"

bool remat_i_is_yaml_path(const char *path) {
    size_t n = strlen(path);
    return (n > 4 && strcmp(path + n - 4, ".yml") == 0) ||
           (n > 5 && strcmp(path + n - 5, ".yaml") == 0);
}

/* ---- the document: nodes composed from libyaml's events ---------------- */

enum { Y_SCALAR, Y_SEQ, Y_MAP };

typedef struct ynode {
    unsigned char type; /* Y_SCALAR, Y_SEQ or Y_MAP */
    bool plain;         /* a plain scalar (else quoted or block) */
    int line;           /* 1-based */
    size_t text;        /* a scalar's text: offset in doc.chars */
    size_t first, n;    /* a collection's items, kids[first..first+n): a map's key, value, ... */
} ynode_t;

typedef struct anchor {
    size_t name; /* offset in doc.chars; 0 marks a free slot (chars[0] is a NUL) */
    size_t node;
} anchor_t;

typedef struct ydoc {
    const char *source;
    ynode_t *nodes;
    size_t nnodes, ncap;
    size_t *kids; /* node ids; one node may be an item many times (aliases) */
    size_t nkids, kcap;
    char *chars; /* scalars' and anchors' text, NUL-terminated each */
    size_t nchars, ccap;
    size_t *pending; /* the items of the open collections, innermost last */
    size_t npending, pcap;
    size_t open[REMAT_YAML_MAX_DEPTH], open_at[REMAT_YAML_MAX_DEPTH], depth;
    anchor_t *anchors; /* open addressing, a power of two slots */
    size_t acap, nanchors;
    size_t root; /* SIZE_MAX: an empty document */
    size_t docs;
    remat_error_t *err;
} ydoc_t;

/* Grows @p *arr (of @p size-byte items, @p *cap of them) to hold @p need. */
static bool grow(void *arr, size_t *cap, size_t need, size_t size, remat_error_t *err) {
    if (need <= *cap) {
        return true;
    }
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        c *= 2;
    }
    void *p = remat_i_try_realloc_array(*(void **)arr, c, size, err);
    if (!p) {
        return false;
    }
    *(void **)arr = p;
    *cap = c;
    return true;
}

/* Copies @p s (@p n bytes) into the text arena; its offset, or 0 when
   memory ran out (offset 0 is the arena's leading NUL, never a copy's). */
static size_t add_chars(ydoc_t *d, const char *s, size_t n) {
    if (!grow(&d->chars, &d->ccap, d->nchars + n + 1, 1, d->err)) {
        return 0;
    }
    size_t at = d->nchars;
    memcpy(d->chars + at, s, n);
    d->chars[at + n] = '\0';
    d->nchars += n + 1;
    return at;
}

static uint64_t hash_text(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

/* The slot of anchor @p name: where it is, or the free slot it would take. */
static size_t anchor_slot(const ydoc_t *d, const char *name) {
    size_t k = (size_t)hash_text(name) & (d->acap - 1);
    while (d->anchors[k].name && strcmp(d->chars + d->anchors[k].name, name) != 0) {
        k = (k + 1) & (d->acap - 1);
    }
    return k;
}

/* Anchor @p name now names node @p id (YAML: the latest anchor wins). */
static remat_status_t add_anchor(ydoc_t *d, const char *name, size_t id) {
    if (2 * (d->nanchors + 1) > d->acap) {
        size_t cap = d->acap ? 2 * d->acap : 64;
        anchor_t *old = d->anchors;
        size_t oldcap = d->acap;
        d->anchors = remat_i_try_calloc(cap, sizeof *d->anchors, d->err);
        if (!d->anchors) {
            d->anchors = old;
            return REMAT_E_NOMEM;
        }
        d->acap = cap;
        for (size_t i = 0; i < oldcap; i++) {
            if (old[i].name) {
                d->anchors[anchor_slot(d, d->chars + old[i].name)] = old[i];
            }
        }
        free(old);
    }
    size_t k = anchor_slot(d, name);
    if (!d->anchors[k].name) {
        size_t at = add_chars(d, name, strlen(name));
        if (!at) {
            return REMAT_E_NOMEM;
        }
        d->anchors[k].name = at;
        d->nanchors++;
    }
    d->anchors[k].node = id;
    return REMAT_OK;
}

/* Node @p id is an item of the innermost open collection, or the root. */
static remat_status_t add_item(ydoc_t *d, size_t id) {
    if (d->depth == 0) {
        d->root = id;
        return REMAT_OK;
    }
    if (!grow(&d->pending, &d->pcap, d->npending + 1, sizeof *d->pending, d->err)) {
        return REMAT_E_NOMEM;
    }
    d->pending[d->npending++] = id;
    return REMAT_OK;
}

/* A new node of @p type at @p line, anchored as @p anchor (may be NULL). */
static remat_status_t new_node(ydoc_t *d, unsigned char type, int line, const char *anchor,
                               size_t *id) {
    if (!grow(&d->nodes, &d->ncap, d->nnodes + 1, sizeof *d->nodes, d->err)) {
        return REMAT_E_NOMEM;
    }
    *id = d->nnodes++;
    ynode_t *n = &d->nodes[*id];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->line = line;
    return anchor ? add_anchor(d, anchor, *id) : REMAT_OK;
}

static remat_status_t on_scalar(ydoc_t *d, const yaml_event_t *e, int line) {
    size_t id;
    remat_status_t st = new_node(d, Y_SCALAR, line, (const char *)e->data.scalar.anchor, &id);
    if (st) {
        return st;
    }
    size_t at = add_chars(d, (const char *)e->data.scalar.value, e->data.scalar.length);
    if (!at) {
        return REMAT_E_NOMEM;
    }
    d->nodes[id].text = at;
    d->nodes[id].plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    return add_item(d, id);
}

static remat_status_t on_start(ydoc_t *d, unsigned char type, const char *anchor, int line) {
    if (d->depth == REMAT_YAML_MAX_DEPTH) {
        return remat_error_set(d->err, REMAT_E_SCHEMA, d->source, NULL,
                               "line %d: lists and mappings nest deeper than %d", line,
                               REMAT_YAML_MAX_DEPTH);
    }
    size_t id;
    remat_status_t st = new_node(d, type, line, anchor, &id);
    if (st == REMAT_OK) {
        d->open[d->depth] = id;
        d->open_at[d->depth++] = d->npending;
    }
    return st;
}

/* The innermost collection ends: its items move from pending to kids. */
static remat_status_t on_end(ydoc_t *d) {
    assert(d->depth > 0);
    const size_t id = d->open[--d->depth], at = d->open_at[d->depth];
    const size_t n = d->npending - at;
    if (!grow(&d->kids, &d->kcap, d->nkids + n, sizeof *d->kids, d->err)) {
        return REMAT_E_NOMEM;
    }
    if (n > 0) { /* an empty collection may come before any buffer exists: no NULL + 0 */
        memcpy(d->kids + d->nkids, d->pending + at, n * sizeof *d->kids);
    }
    d->nodes[id].first = d->nkids;
    d->nodes[id].n = n;
    d->nkids += n;
    d->npending = at;
    return add_item(d, id);
}

static remat_status_t on_alias(ydoc_t *d, const yaml_event_t *e, int line) {
    const char *name = (const char *)e->data.alias.anchor;
    size_t k = d->acap ? anchor_slot(d, name) : 0;
    if (!d->acap || !d->anchors[k].name) {
        return remat_error_set(d->err, REMAT_E_SCHEMA, d->source, NULL,
                               "line %d: alias '*%s' names no anchor before it", line, name);
    }
    return add_item(d, d->anchors[k].node);
}

/* One event into the document. */
static remat_status_t on_event(ydoc_t *d, const yaml_event_t *e) {
    const int line = (int)e->start_mark.line + 1;
    switch (e->type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++d->docs > 1) {
                return remat_error_set(d->err, REMAT_E_SCHEMA, d->source, NULL,
                                       "line %d: a config holds one YAML document, not several",
                                       line);
            }
            return REMAT_OK;
        case YAML_SCALAR_EVENT:
            return on_scalar(d, e, line);
        case YAML_SEQUENCE_START_EVENT:
            return on_start(d, Y_SEQ, (const char *)e->data.sequence_start.anchor, line);
        case YAML_MAPPING_START_EVENT:
            return on_start(d, Y_MAP, (const char *)e->data.mapping_start.anchor, line);
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            return on_end(d);
        case YAML_ALIAS_EVENT:
            return on_alias(d, e, line);
        default:
            return REMAT_OK;
    }
}

static remat_status_t parser_error(const yaml_parser_t *p, const char *source,
                                   remat_error_t *err) {
    if (p->error == YAML_MEMORY_ERROR) {
        return remat_error_set(err, REMAT_E_NOMEM, source, NULL, "out of memory in libyaml");
    }
    remat_error_set(err, REMAT_E_SYNTAX, source, NULL, "%s%s%s",
                    p->problem ? p->problem : "not valid YAML", p->context ? " " : "",
                    p->context ? p->context : "");
    if (err && err->code == REMAT_E_SYNTAX && err->line == 0) {
        err->line = (int)p->problem_mark.line + 1;
        err->column = (int)p->problem_mark.column + 1;
    }
    return REMAT_E_SYNTAX;
}

/* Composes @p text into @p d (zeroed but for source and err). */
static remat_status_t compose(ydoc_t *d, const char *text, size_t len) {
    d->root = SIZE_MAX;
    if (!grow(&d->chars, &d->ccap, 1, 1, d->err)) { /* offset 0: "none" */
        return REMAT_E_NOMEM;
    }
    d->chars[0] = '\0';
    d->nchars = 1;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        return remat_error_set(d->err, REMAT_E_NOMEM, d->source, NULL, "out of memory in libyaml");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    remat_status_t st = REMAT_OK;
    for (bool done = false; !done && st == REMAT_OK;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e)) {
            st = parser_error(&parser, d->source, d->err);
            break;
        }
        done = e.type == YAML_STREAM_END_EVENT;
        st = on_event(d, &e);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&parser);
    return st;
}

static void ydoc_release(ydoc_t *d) {
    free(d->nodes);
    free(d->kids);
    free(d->chars);
    free(d->pending);
    free(d->anchors);
}

/* ---- values as text, within the document's budget ---------------------- */

/* A value's text, bounded so that a huge list cannot grow a setting past
   what any key takes; the walk that writes it stops once it is cut. */
typedef struct text {
    char buf[4096];
    size_t len;
    bool cut;
} text_t;

/* What the walks of one document have spent (the budget is per document:
   a chain of files has one each). */
typedef struct walk {
    const ydoc_t *d;
    size_t visits, bytes;
    text_t *t;       /* the value being written, one buffer for the document's */
    const char *key; /* the top-level key whose value is being written */
    int line;        /* its line */
} walk_t;

static void put(walk_t *w, text_t *t, const char *s, size_t n) {
    assert(t->len < sizeof t->buf);
    size_t room = sizeof t->buf - 1 - t->len;
    if (n > room) {
        t->cut = true;
        n = room;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
    w->bytes += n;
}

/* Counts one node visited; an error once the document's walks have
   visited or written past the budget. */
static remat_status_t spend(walk_t *w, remat_error_t *err) {
    if (++w->visits <= REMAT_YAML_MAX_VISITS && w->bytes <= REMAT_YAML_MAX_TEXT) {
        return REMAT_OK;
    }
    return remat_error_set(err, REMAT_E_SCHEMA, w->d->source, NULL,
                           "line %d: '%s' takes the document's aliases past %d nodes or %d MiB "
                           "of text in all (a YAML alias bomb?): remat refuses it",
                           w->line, w->key, REMAT_YAML_MAX_VISITS, REMAT_YAML_MAX_TEXT >> 20);
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

static const ynode_t *node(const ydoc_t *d, size_t id) {
    return &d->nodes[id];
}

static const char *scalar_of(const ydoc_t *d, const ynode_t *n) {
    return n && n->type == Y_SCALAR ? d->chars + n->text : NULL;
}

/* Node @p n as flow text ("[a, b]", "{k: v}", quoted scalars quoted). */
static remat_status_t flow(walk_t *w, const ynode_t *n, text_t *t, int depth,
                           remat_error_t *err) {
    remat_status_t st = spend(w, err);
    if (st || t->cut) {
        return st;
    }
    if (n->type == Y_SCALAR) {
        const char *v = w->d->chars + n->text;
        char num[64];
        const char *s = n->plain ? resolve_plain(v, num, sizeof num) : v;
        put(w, t, "'", !n->plain);
        put(w, t, s, strlen(s));
        put(w, t, "'", !n->plain);
        return REMAT_OK;
    }
    if (depth >= REMAT_YAML_MAX_DEPTH) { /* a cycle of aliases */
        put(w, t, "...", 3);
        return REMAT_OK;
    }
    const bool seq = n->type == Y_SEQ;
    put(w, t, seq ? "[" : "{", 1);
    for (size_t i = 0; i < n->n && st == REMAT_OK && !t->cut; i++) {
        const ynode_t *item = node(w->d, w->d->kids[n->first + i]);
        put(w, t, seq || i % 2 == 0 ? ", " : ": ", i == 0 ? 0 : 2);
        st = flow(w, item, t, depth + 1, err);
    }
    put(w, t, seq ? "]" : "}", 1);
    return st;
}

/* Whether "name:" starts a rule already in @p t (a name's first rule is
   the one kept). */
static bool has_rule(const text_t *t, const char *name) {
    const size_t k = strlen(name);
    for (const char *p = t->buf; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, name, k) == 0 && p[k] == ':') {
            return true;
        }
    }
    return false;
}

/* One rule's axes: a name, or a list of names joined by '+'. */
static remat_status_t rule_axes(walk_t *w, const ynode_t *axes, text_t *t, remat_error_t *err) {
    if (axes->type == Y_SCALAR) {
        const char *a = scalar_of(w->d, axes);
        put(w, t, a, strlen(a));
        return REMAT_OK;
    }
    for (size_t j = 0; axes->type == Y_SEQ && j < axes->n; j++) {
        const ynode_t *an = node(w->d, w->d->kids[axes->first + j]);
        const char *ax = scalar_of(w->d, an);
        remat_status_t st = spend(w, err);
        if (st) {
            return st;
        }
        if (!ax) {
            return remat_error_set(err, REMAT_E_SCHEMA, w->d->source, "$.logical_axis_rules",
                                   "line %d: a mesh axis must be a name", an->line);
        }
        put(w, t, "+", j != 0);
        put(w, t, ax, strlen(ax));
    }
    return REMAT_OK;
}

/* logical_axis_rules, [[name, axis | [axes]], ...], in remat's override
   syntax "name:axis+axis,...". A name's first rule is the one kept: flax
   tries a name's rules in order and the first is the one a mesh of the
   listed axes uses. */
static remat_status_t axis_rules(walk_t *w, const ynode_t *v, text_t *t, remat_error_t *err) {
    const ydoc_t *d = w->d;
    if (v->type != Y_SEQ) {
        return remat_error_set(err, REMAT_E_SCHEMA, d->source, "$.logical_axis_rules",
                               "line %d: logical_axis_rules must be a list of [name, axes]",
                               v->line);
    }
    remat_status_t st = REMAT_OK;
    for (size_t i = 0; i < v->n && st == REMAT_OK && !t->cut; i++) {
        const ynode_t *rule = node(d, d->kids[v->first + i]);
        const ynode_t *name = NULL, *axes = NULL;
        if (rule->type == Y_SEQ && rule->n == 2) {
            name = node(d, d->kids[rule->first]);
            axes = node(d, d->kids[rule->first + 1]);
        }
        const char *nm = scalar_of(d, name);
        if ((st = spend(w, err)) != REMAT_OK) {
            break;
        }
        if (!nm || !*nm || !axes || axes->type == Y_MAP) {
            return remat_error_set(err, REMAT_E_SCHEMA, d->source, "$.logical_axis_rules",
                                   "line %d: each rule must be [name, axis] or [name, [axes]]",
                                   rule->line);
        }
        if (has_rule(t, nm)) {
            continue;
        }
        put(w, t, ",", t->len != 0);
        put(w, t, nm, strlen(nm));
        put(w, t, ":", 1);
        st = rule_axes(w, axes, t, err);
    }
    return st;
}

/* ---- settings ---------------------------------------------------------- */

static remat_status_t append(remat_yaml_config_t *out, const char *key, const char *value,
                             bool scalar, bool cut, int line, const char *source,
                             remat_error_t *err) {
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
    s->cut = cut;
    s->line = line;
    s->source = source;
    out->n++;
    return REMAT_OK;
}

/* The top-level keys seen, by hash: a duplicate is found in constant time
   (a file of 30,000 keys compared each with all before it took seconds). */
typedef struct keyset {
    const char **key;
    int *line;
    size_t cap, n;
} keyset_t;

static size_t key_slot(const keyset_t *s, const char *key) {
    size_t k = (size_t)hash_text(key) & (s->cap - 1);
    while (s->key[k] && strcmp(s->key[k], key) != 0) {
        k = (k + 1) & (s->cap - 1);
    }
    return k;
}

/* Sizes @p s for @p n keys (at most half full). */
static remat_status_t keyset_init(keyset_t *s, size_t n, remat_error_t *err) {
    s->cap = 16;
    while (s->cap < 2 * n + 2) {
        s->cap *= 2;
    }
    s->n = 0;
    s->key = remat_i_try_calloc(s->cap, sizeof *s->key, err);
    s->line = s->key ? remat_i_try_calloc(s->cap, sizeof *s->line, err) : NULL;
    return s->line ? REMAT_OK : REMAT_E_NOMEM;
}

static void keyset_release(keyset_t *s) {
    free(s->key);
    free(s->line);
}

/* One key: value of the top-level mapping. */
static remat_status_t take_pair(walk_t *w, const ynode_t *k, const ynode_t *v,
                                remat_yaml_config_t *out, char **base, remat_error_t *err) {
    const ydoc_t *d = w->d;
    const char *key = scalar_of(d, k);
    text_t *t = w->t;
    t->len = 0;
    t->cut = false;
    t->buf[0] = '\0';
    w->key = key;
    w->line = k->line;
    remat_status_t st = spend(w, err);
    bool scalar = v->type == Y_SCALAR;
    if (st) {
        /* over the budget */
    } else if (strcmp(key, "logical_axis_rules") == 0) {
        st = axis_rules(w, v, t, err);
        scalar = true;
    } else if (scalar) {
        const char *s = scalar_of(d, v);
        const char *r = v->plain ? resolve_plain(s, t->buf, sizeof t->buf) : s;
        if (r != t->buf) {
            put(w, t, r, strlen(r));
        }
    } else {
        st = flow(w, v, t, 0, err);
    }
    if (st == REMAT_OK && strcmp(key, "base_config") == 0) {
        if (!scalar || !t->len) {
            st = remat_error_set(err, REMAT_E_SCHEMA, d->source, "$.base_config",
                                 "line %d: base_config must name a file", k->line);
        } else if (!(*base = remat_i_try_strdup(t->buf, err))) {
            st = REMAT_E_NOMEM;
        }
    } else if (st == REMAT_OK) {
        st = append(out, key, t->buf, scalar, t->cut, k->line, d->source, err);
    }
    return st;
}

/* Checks the pair's key, and that it is not a second one of its name. */
static remat_status_t check_key(const ydoc_t *d, const ynode_t *k, keyset_t *seen,
                                remat_error_t *err) {
    const char *key = scalar_of(d, k);
    if (!key || !*key) {
        return remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                               "line %d: a config key must be a non-empty string", k->line);
    }
    size_t slot = key_slot(seen, key);
    if (seen->key[slot]) {
        return remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                               "line %d: duplicate key '%s' (first on line %d)", k->line, key,
                               seen->line[slot]);
    }
    seen->key[slot] = key;
    seen->line[slot] = k->line;
    seen->n++;
    return REMAT_OK;
}

/* The mappings a merge key ("<<: *base", "<<: [*a, *b]") brings in, as
   PyYAML merges them: the explicit keys win, then the first mapping
   listed. Each merged key goes in once, before the explicit ones. */
static remat_status_t merge(walk_t *w, const ynode_t *v, keyset_t *seen,
                            remat_yaml_config_t *out, char **base, remat_error_t *err) {
    const ydoc_t *d = w->d;
    const size_t nsrc = v->type == Y_SEQ ? v->n : 1;
    for (size_t s = 0; s < nsrc; s++) {
        const ynode_t *m = v->type == Y_SEQ ? node(d, d->kids[v->first + s]) : v;
        if (m->type != Y_MAP) {
            return remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                                   "line %d: a merge key ('<<') takes a mapping or a list of "
                                   "mappings", m->line);
        }
        for (size_t i = 0; i + 1 < m->n; i += 2) {
            const ynode_t *k = node(d, d->kids[m->first + i]);
            const char *key = scalar_of(d, k);
            w->key = "<<";
            w->line = k->line;
            remat_status_t st = spend(w, err);
            if (st == REMAT_OK && (!key || !*key || strcmp(key, "<<") == 0)) {
                st = remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                                     "line %d: a merged key must be a non-empty string",
                                     k->line);
            }
            if (st == REMAT_OK && !seen->key[key_slot(seen, key)]) {
                st = check_key(d, k, seen, err);
                if (st == REMAT_OK) {
                    st = take_pair(w, k, node(d, d->kids[m->first + i + 1]), out, base, err);
                }
            }
            if (st) {
                return st;
            }
        }
    }
    return REMAT_OK;
}

/* The root mapping's explicit keys into @p seen (duplicates are errors). */
static remat_status_t explicit_keys(const ydoc_t *d, const ynode_t *root, keyset_t *seen,
                                    size_t *merge_at, remat_error_t *err) {
    *merge_at = SIZE_MAX;
    for (size_t i = 0; i + 1 < root->n; i += 2) {
        const ynode_t *k = node(d, d->kids[root->first + i]);
        const char *key = scalar_of(d, k);
        if (key && strcmp(key, "<<") == 0 && k->plain) {
            if (*merge_at != SIZE_MAX) {
                return remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                                       "line %d: a second merge key ('<<')", k->line);
            }
            *merge_at = i;
            continue;
        }
        remat_status_t st = check_key(d, k, seen, err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t walk_root(const ydoc_t *d, remat_yaml_config_t *out, char **base,
                                remat_error_t *err) {
    if (d->root == SIZE_MAX) {
        return REMAT_OK; /* an empty document sets nothing (config.c says so) */
    }
    const ynode_t *root = node(d, d->root);
    char num[64];
    if (root->type == Y_SCALAR && root->plain &&
        !*resolve_plain(scalar_of(d, root), num, sizeof num)) {
        return REMAT_OK; /* "---" alone, or "~": an empty document too */
    }
    if (root->type != Y_MAP) {
        return remat_error_set(err, REMAT_E_SCHEMA, d->source, NULL,
                               "a config must be a mapping of key: value");
    }
    keyset_t seen = {0};
    size_t merge_at;
    walk_t w = {d, 0, 0, remat_i_try_malloc(sizeof(text_t), err), "", 0};
    remat_status_t st = w.t ? keyset_init(&seen, root->n / 2, err) : REMAT_E_NOMEM;
    if (st == REMAT_OK) {
        st = explicit_keys(d, root, &seen, &merge_at, err);
    }
    if (st == REMAT_OK && merge_at != SIZE_MAX) {
        st = merge(&w, node(d, d->kids[root->first + merge_at + 1]), &seen, out, base, err);
    }
    for (size_t i = 0; st == REMAT_OK && i + 1 < root->n; i += 2) {
        if (i != merge_at) {
            st = take_pair(&w, node(d, d->kids[root->first + i]),
                           node(d, d->kids[root->first + i + 1]), out, base, err);
        }
    }
    keyset_release(&seen);
    free(w.t);
    return st;
}

remat_status_t remat_i_yaml_parse(const char *text, size_t len, const char *source,
                                  remat_yaml_config_t *out, char **base_config,
                                  remat_error_t *err) {
    *base_config = NULL;
    ydoc_t d;
    memset(&d, 0, sizeof d);
    d.source = source;
    d.err = err;
    remat_status_t st = compose(&d, text, len);
    if (st == REMAT_OK) {
        st = walk_root(&d, out, base_config, err);
    }
    ydoc_release(&d);
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

/* ---- the base_config chain --------------------------------------------- */

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

/* @p base as named in @p from: absolute, or relative to @p from's directory
   (standard input's is the working directory). */
static char *base_path(const char *from, const char *base, remat_error_t *err) {
    size_t dir = base[0] == '/' || from[0] == '<' ? 0 : (size_t)(base_name(from) - from);
    char *p = remat_i_try_malloc(dir + strlen(base) + 1, err);
    if (p) {
        memcpy(p, from, dir);
        strcpy(p + dir, base);
        tidy_path(p);
    }
    return p;
}

/* Whether anything is at @p path (stat never blocks, whatever it is). */
static bool path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
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
        remat_status_t st =
            append(to, s->key, s->value, s->scalar, s->cut, s->line, s->source, err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t load_chain(const char *path, const char *text, size_t len, int depth,
                                 remat_yaml_config_t *out, remat_error_t *err);

/* Follows @p file's base_config @p base (from @p path) into @p out. A base
   is read only when it is a regular file (checked on the descriptor it is
   opened with): a FIFO or a device there is an error, never a wait. */
static remat_status_t follow_base(const char *path, const char *base, int depth,
                                  remat_yaml_config_t *out, remat_error_t *err) {
    char *next = base_path(path, base, err);
    if (!next) {
        return REMAT_E_NOMEM;
    }
    remat_status_t st = REMAT_OK;
    char *text = NULL;
    size_t len = 0;
    if (!path_exists(next) && strcmp(base_name(next), "base.yml") == 0) {
        out->maxtext_base = true; /* MaxText's, not at hand: remat's defaults are its */
    } else if (!path_exists(next)) {
        st = remat_error_set(err, REMAT_E_IO, path, "$.base_config",
                             "base_config '%s' cannot be read (as %s, next to this file)", base,
                             next);
    } else if ((st = remat_i_read_path(next, REMAT_I_READ_REGULAR, &text, &len, err)) ==
               REMAT_OK) {
        st = load_chain(next, text, len, depth + 1, out, err);
    }
    free(text);
    free(next);
    return st;
}

/* File @p path, whose text is @p text, and its chain into @p out. */
static remat_status_t load_chain(const char *path, const char *text, size_t len, int depth,
                                 remat_yaml_config_t *out, remat_error_t *err) {
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
    remat_status_t st = add_source(out, path, err);
    if (st) {
        remat_error_set_source(err, path);
        return st;
    }
    const char *source = out->sources[out->nsources - 1];
    remat_yaml_config_t mine = {0};
    char *base = NULL;
    st = remat_i_yaml_parse(text, len, source, &mine, &base, err);
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

remat_status_t remat_i_yaml_load_text(const char *name, const char *text, size_t len,
                                      remat_yaml_config_t *out, remat_error_t *err) {
    memset(out, 0, sizeof *out);
    remat_status_t st = load_chain(name, text, len, 0, out, err);
    if (st) {
        remat_i_yaml_release(out);
    }
    assert(st || out->nsources >= 1);
    return st;
}

remat_status_t remat_i_yaml_load(const char *path, remat_yaml_config_t *out, remat_error_t *err) {
    memset(out, 0, sizeof *out);
    if (strcmp(path, "-") != 0 && !path_exists(path) && strcmp(base_name(path), "base.yml") == 0) {
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
    char *text = NULL;
    size_t len = 0;
    remat_status_t st = remat_i_read_path(path, REMAT_I_READ_STDIN, &text, &len, err);
    if (st == REMAT_OK) {
        st = remat_i_yaml_load_text(strcmp(path, "-") == 0 ? "<stdin>" : path, text, len, out,
                                    err);
    }
    free(text);
    return st;
}
