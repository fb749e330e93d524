/* SPDX-License-Identifier: MIT */
/*
 * json_mutate.c: a structure-aware libFuzzer mutation for the JSON inputs
 * (the graph, policy, hardware and config file targets, and the files of
 * the CLI target). libFuzzer's byte mutations mostly
 * break the JSON syntax, so the loaders' schema and semantic checks, and
 * the simulator behind them, see few new inputs. This mutator parses the
 * input with jansson and changes one value, key or element: a number to an
 * edge value, a string to another string of the same document, an array
 * element duplicated or dropped, a member deleted or copied, a value
 * replaced by another node of the document; then it prints the document
 * back. One mutation in four, and every input that does not parse, gets
 * libFuzzer's own byte mutations, so syntax errors stay covered.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_common.h"

#define MAX_NODES 4096

/* A node of the document and where it sits, so that it can be replaced. */
typedef struct node {
    json_t *value;
    json_t *parent; /* NULL for the root */
    const char *key; /* member name when the parent is an object */
    size_t index;    /* element index when the parent is an array */
} node_t;

typedef struct walk {
    node_t nodes[MAX_NODES];
    size_t n;
    const char *strings[MAX_NODES]; /* string values and member names */
    size_t nstrings;
    uint64_t rng;
} walk_t;

static uint64_t next(walk_t *w) {
    /* xorshift64*: deterministic from libFuzzer's seed. */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 2685821657736338717ull;
}

static size_t pick(walk_t *w, size_t n) {
    return n ? (size_t)(next(w) % n) : 0;
}

static void collect(walk_t *w, json_t *v, json_t *parent, const char *key, size_t index) {
    if (w->n == MAX_NODES) {
        return;
    }
    w->nodes[w->n++] = (node_t){v, parent, key, index};
    if (json_is_string(v) && w->nstrings < MAX_NODES) {
        w->strings[w->nstrings++] = json_string_value(v);
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) {
            if (w->nstrings < MAX_NODES) {
                w->strings[w->nstrings++] = k;
            }
            collect(w, m, v, k, 0);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            collect(w, json_array_get(v, i), v, NULL, i);
        }
    }
}

/* Puts @p repl (a new reference, stolen) where @p at is; returns the new
   root when @p at is the root. */
static json_t *replace(json_t *root, const node_t *at, json_t *repl) {
    if (!repl) {
        return root;
    }
    if (!at->parent) {
        json_decref(root);
        return repl;
    }
    if (json_is_object(at->parent)) {
        /* The key belongs to the member being replaced: copy it first. */
        char *key = strdup(at->key);
        if (key) {
            json_object_set_new(at->parent, key, repl);
            free(key);
        } else {
            json_decref(repl);
        }
    } else {
        json_array_set_new(at->parent, at->index, repl);
    }
    return root;
}

static json_t *edge_number(walk_t *w, const json_t *v) {
    static const long long ints[] = {0,          1,          -1,          2,
                                     3,          4,          7,           8,
                                     16,         64,         127,         128,
                                     255,        256,        1000,        1024,
                                     4096,       10000,      10001,       65536,
                                     2147483647, 4294967295, 4294967296,  (1ll << 40),
                                     (1ll << 53), (1ll << 62), (1ll << 62) + 1,
                                     9223372036854775807ll, -9223372036854775807ll - 1};
    static const double reals[] = {0.0,  -0.0, 0.5,     1e-300, 1e-9, 0.999999999, 1.0000001,
                                   1e15, 1e19, 1.8e19,  1e300,  1e308, -1e308,     4.9e-324};
    switch (pick(w, 5)) {
        case 0:
            return json_integer(ints[pick(w, sizeof ints / sizeof ints[0])]);
        case 1:
            return json_real(reals[pick(w, sizeof reals / sizeof reals[0])]);
        case 2: {
            /* Near the current value: off by one, doubled, halved, negated. */
            double x = json_number_value(v);
            static const double f[] = {2.0, 0.5, -1.0, 1000.0, 1e-3};
            if (json_is_integer(v) && pick(w, 2)) {
                /* Unsigned, so that the extremes wrap instead of overflowing. */
                unsigned long long i = (unsigned long long)json_integer_value(v);
                return json_integer((long long)(pick(w, 2) ? i + 1 : i - 1));
            }
            return json_real(x * f[pick(w, sizeof f / sizeof f[0])]);
        }
        case 3:
            return json_string(json_is_integer(v) ? "1GiB" : "0.5");
        default:
            return json_integer((long long)(next(w) >> pick(w, 64)));
    }
}

static json_t *other_string(walk_t *w, const json_t *v) {
    const char *s = json_string_value(v);
    switch (pick(w, 6)) {
        case 0:
        case 1:
            if (w->nstrings) {
                return json_string(w->strings[pick(w, w->nstrings)]);
            }
            return json_string("");
        case 2:
            return json_string("");
        case 3: {
            /* Longer than any fixed buffer: the name repeated. */
            size_t n = strlen(s), reps = 1 + pick(w, 64);
            char *buf = malloc(n * reps + 2);
            if (!buf) {
                return NULL;
            }
            for (size_t i = 0; i < reps; i++) {
                memcpy(buf + i * n, s, n);
            }
            buf[n * reps] = 'x';
            buf[n * reps + 1] = '\0';
            json_t *r = json_string(buf);
            free(buf);
            return r;
        }
        case 4: {
            /* A prefix. */
            size_t n = strlen(s);
            return json_stringn(s, n ? pick(w, n) : 0);
        }
        default: {
            /* One character changed, possibly to a control character. */
            size_t n = strlen(s);
            char *buf = strdup(s);
            if (!buf || !n) {
                free(buf);
                return json_string("_");
            }
            static const char repl[] = {'\n', '\t', ' ', '-', '>', ',', '.', '0', '9', 'z', '"'};
            buf[pick(w, n)] = repl[pick(w, sizeof repl)];
            json_t *r = json_string(buf);
            free(buf);
            return r;
        }
    }
}

static void mutate_container(walk_t *w, json_t *v) {
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        switch (pick(w, 3)) {
            case 0:
                if (n) {
                    json_array_remove(v, pick(w, n));
                }
                break;
            case 1:
                if (n) {
                    json_array_insert_new(v, pick(w, n + 1),
                                          json_deep_copy(json_array_get(v, pick(w, n))));
                }
                break;
            default:
                json_array_append_new(v, json_deep_copy(w->nodes[pick(w, w->n)].value));
                break;
        }
        return;
    }
    /* An object: delete a member, or add one named by a string of the
       document with a copy of some node as its value. */
    if (json_object_size(v) && pick(w, 2)) {
        size_t k = pick(w, json_object_size(v)), i = 0;
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            if (i++ == k) {
                json_object_del(v, key);
                break;
            }
        }
        return;
    }
    if (w->nstrings) {
        char *key = strdup(w->strings[pick(w, w->nstrings)]);
        json_t *copy = json_deep_copy(w->nodes[pick(w, w->n)].value);
        if (key && copy && !json_object_get(v, key)) {
            json_object_set_new(v, key, copy);
        } else {
            json_decref(copy);
        }
        free(key);
    }
}

static json_t *mutate(walk_t *w, json_t *root) {
    const node_t at = w->nodes[pick(w, w->n)];
    json_t *v = at.value;
    switch (pick(w, 8)) {
        case 0:
            /* Any node becomes a copy of another (types change). */
            return replace(root, &at, json_deep_copy(w->nodes[pick(w, w->n)].value));
        case 1: {
            static const char *const lits[] = {"null", "true", "false", "[]", "{}", "\"\""};
            return replace(root, &at,
                           json_loads(lits[pick(w, sizeof lits / sizeof lits[0])],
                                      JSON_DECODE_ANY, NULL));
        }
        default:
            break;
    }
    if (json_is_number(v)) {
        return replace(root, &at, edge_number(w, v));
    }
    if (json_is_string(v)) {
        return replace(root, &at, other_string(w, v));
    }
    if (json_is_array(v) || json_is_object(v)) {
        mutate_container(w, v);
        return root;
    }
    return replace(root, &at, json_integer((long long)pick(w, 3)));
}

size_t fuzz_json_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    static walk_t w; /* large; reset below */
    w.n = 0;
    w.nstrings = 0;
    w.rng = 0x9e3779b97f4a7c15ull ^ seed;
    if (pick(&w, 4) == 0) {
        return LLVMFuzzerMutate(data, size, max_size);
    }
    json_t *root = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!root) {
        return LLVMFuzzerMutate(data, size, max_size);
    }
    collect(&w, root, NULL, NULL, 0);
    root = mutate(&w, root);
    char *out = json_dumps(root, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(root);
    size_t n = out ? strlen(out) : 0;
    if (!out || n > max_size) {
        free(out);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    memcpy(data, out, n);
    free(out);
    return n;
}
