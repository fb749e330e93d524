/* SPDX-License-Identifier: MIT */
/*
 * residuals.c: remat's residual rule against JAX's own (validation/xla_residuals.json).
 *
 *   remat_residuals [--markdown] [--check] [FILE]
 *
 * The file holds, for one layer of each built-in graph's MaxText layer under
 * each policy, the residuals JAX saves for that layer's backward
 * (validation/xla/residuals.py records them; validation/README.md gives the
 * format). Each case's settings are analyzed as `remat table --kind tensors`
 * would analyze them, and the tensors remat keeps for the recorded layer
 * (fate `device` or `offload`) are compared with JAX's residuals, name by
 * name and byte by byte: a pair matches when both carry the same checkpoint
 * names (JAX's every name on the stored value, remat's tags), the same bytes
 * and the same memory (device or host).
 *
 * Invariants:
 * - Compared on JAX's side: the layer input and every activation it saves,
 *   named or not. Not compared, by rule (docs/validation.md, "Residuals"):
 *   weights (static memory in remat, whether or not backward reads them),
 *   the broadcast inputs (positions, segment ids: MaxText's scan broadcasts
 *   them and JAX hoists loop-invariant residuals out of the loop, so no
 *   layer keeps its own), the layer's RNG state (a key and a counter),
 *   program constants, and the arguments other parts of the step hold
 *   ("outer": Gemma 4's per-layer input, which remat's head holds, and a
 *   donor's keys and values, which the donor holds).
 * - Compared on remat's side: every tensor of the layer's profile whose fate
 *   is device or offload, a view at its base buffer's bytes, but those made
 *   by ops outside the checkpoint (`outside`: a Gemma 4 donor's keys and
 *   values, made before it; the trace records the checkpoint, which takes
 *   them as arguments).
 * - Every mismatch is one of four classes: JAX keeps what remat does not,
 *   remat keeps what JAX does not, the bytes differ, or the memory differs.
 *   A mismatch listed in FLOOR is expected (each entry's reason is in
 *   docs/validation.md); --check exits 1 on any other mismatch, on a case
 *   that did not trace or analyze, on a FLOOR entry nothing matched (the
 *   floor only shrinks), and on a file with no case.
 * Exit 2 on a bad file or argument.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/input/resolve.h"
#include "remat/input/config.h"
#include "remat/base/error.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/sim/sim.h"

#define MAX_SETTINGS 64
#define MAX_RES 96
#define NAMES_LEN 160
#define MIB (1024.0 * 1024.0)

typedef enum cls { MATCH, JAX_ONLY, REMAT_ONLY, BYTES, MEMORY } cls_t;
static const char *const CLS_NAME[] = {"match", "jax-only", "remat-only", "bytes", "memory"};

/* One residual of either side. */
typedef struct res {
    char names[NAMES_LEN]; /* checkpoint names, sorted, joined by '+'; "" unnamed */
    char what[64];         /* remat's tensor name, or JAX's primitive / argument */
    uint64_t bytes;
    bool host;
    bool paired;
} res_t;

/* One mismatch: a residual of one side, or a pair that differs. */
typedef struct miss {
    cls_t cls;
    const res_t *jax, *remat;
} miss_t;

/*
 * The floor: mismatches expected until remat models what makes them (each
 * class's reason, with the evidence, in docs/validation.md, "Residuals").
 * graph and kind "*" match any; policy "*" any, a trailing '*' a prefix.
 */
typedef struct floor_entry {
    const char *graph, *kind, *policy;
    cls_t cls;
    const char *names;
    size_t hits;
} floor_entry_t;

static floor_entry_t FLOOR[] = {
    /* Empty: every mismatch found so far was remat's model, and is fixed
       (docs/validation.md, "Residuals"). An entry names a class of
       mismatch remat cannot model yet, with its reason there. */
    {NULL, NULL, NULL, MATCH, NULL, 0},
};

typedef struct tally {
    size_t cases, failed, jax, matched, floored, unexpected;
    uint64_t jax_bytes, remat_bytes;
    bool md_header; /* the Markdown table of cases with mismatches has begun */
} tally_t;

static const char *str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool glob(const char *pat, const char *s) {
    size_t n = strlen(pat);
    if (strcmp(pat, "*") == 0) {
        return true;
    }
    if (n && pat[n - 1] == '*') {
        return strncmp(pat, s, n - 1) == 0;
    }
    return strcmp(pat, s) == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* names[0..n) sorted and joined by '+' into out. */
static void join_names(const char **names, size_t n, char *out, size_t size) {
    qsort(names, n, sizeof *names, cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", i ? "+" : "", names[i]);
    }
}

/*
 * JAX's compared residuals of one case into out[]; the ones not compared
 * (weights, broadcast inputs, constants) are counted into *skipped.
 * False when the case's residuals are malformed.
 */
static bool load_jax(json_t *residuals, res_t *out, size_t *n, size_t *skipped) {
    *n = 0;
    for (size_t i = 0; i < json_array_size(residuals); i++) {
        json_t *r = json_array_get(residuals, i);
        const char *source = str(r, "source"), *memory = str(r, "memory");
        json_t *names = json_object_get(r, "names");
        if (!source || !memory || !json_is_integer(json_object_get(r, "bytes")) ||
            !json_is_array(names)) {
            return false;
        }
        if (strcmp(source, "input") != 0 && strcmp(source, "named") != 0 &&
            strcmp(source, "unnamed") != 0) {
            ++*skipped;
            continue;
        }
        if (*n == MAX_RES || json_array_size(names) > REMAT_MAX_TAGS) {
            return false;
        }
        const char *list[REMAT_MAX_TAGS];
        for (size_t k = 0; k < json_array_size(names); k++) {
            list[k] = json_string_value(json_array_get(names, k));
            if (!list[k]) {
                return false;
            }
        }
        res_t *o = &out[(*n)++];
        memset(o, 0, sizeof *o);
        join_names(list, json_array_size(names), o->names, sizeof o->names);
        const char *what = str(r, "primitive") ? str(r, "primitive") : str(r, "arg");
        snprintf(o->what, sizeof o->what, "%s", what ? what : source);
        o->bytes = (uint64_t)json_integer_value(json_object_get(r, "bytes"));
        o->host = strcmp(memory, "host") == 0;
    }
    return true;
}

static bool kept(const remat_tensor_row_t *row) {
    return row->fate == REMAT_FATE_DEVICE || row->fate == REMAT_FATE_OFFLOAD;
}

/*
 * The bytes keeping a tensor keeps: its own, or for a view (a reshape, which
 * shares its base's buffer and shows 0 bytes in the table) its base's, once:
 * 0 when the base is kept too. JAX's reshape is an array of its own bytes.
 */
static uint64_t buffer_bytes(const remat_result_t *r, size_t p, const remat_tensor_row_t *row) {
    const remat_block_t *b = remat_profile_block(r, p);
    size_t base = b->tensors[row->tensor].storage;
    if (base == row->tensor) {
        return row->bytes;
    }
    const remat_tensor_row_t *rows = r->profiles[p].tensors;
    for (size_t i = 0; i < b->ntensors; i++) {
        if (rows[i].tensor == base) {
            return kept(&rows[i]) ? 0 : rows[i].bytes;
        }
    }
    return row->bytes;
}

/* The tensors remat keeps for layer @p layer (fate device or offload). */
static bool load_remat(const remat_result_t *r, size_t layer, res_t *out, size_t *n) {
    size_t p = r->layers[layer].profile;
    const remat_block_t *b = remat_profile_block(r, p);
    *n = 0;
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_row_t *row = &r->profiles[p].tensors[i];
        const size_t made_by = b->tensors[row->tensor].producer;
        if (!kept(row) || (made_by != REMAT_NONE && b->ops[made_by].outside)) {
            continue;
        }
        if (*n == MAX_RES) {
            return false;
        }
        const remat_tensor_t *t = &b->tensors[row->tensor];
        const char *list[REMAT_MAX_TAGS];
        for (size_t k = 0; k < t->ntags; k++) {
            list[k] = t->tags[k];
        }
        res_t *o = &out[(*n)++];
        memset(o, 0, sizeof *o);
        join_names(list, t->ntags, o->names, sizeof o->names);
        snprintf(o->what, sizeof o->what, "%s", t->name);
        o->bytes = buffer_bytes(r, p, row);
        o->host = row->fate == REMAT_FATE_OFFLOAD;
    }
    return true;
}

/*
 * Pairs the two sides, strictest first: same names, bytes and memory (a
 * match); then same names and bytes (the memory differs); then same names
 * (the bytes differ). What is left on either side is kept by that side only.
 * Returns the mismatches written to miss[].
 */
static size_t pair_up(res_t *jax, size_t nj, res_t *rem, size_t nr, miss_t *miss,
                      size_t *matched) {
    static const cls_t passes[] = {MATCH, MEMORY, BYTES};
    size_t nm = 0;
    *matched = 0;
    for (size_t p = 0; p < sizeof passes / sizeof *passes; p++) {
        cls_t how = passes[p];
        for (size_t i = 0; i < nj; i++) {
            for (size_t k = 0; k < nr && !jax[i].paired; k++) {
                if (rem[k].paired || strcmp(jax[i].names, rem[k].names) != 0 ||
                    (how != BYTES && jax[i].bytes != rem[k].bytes) ||
                    (how == MATCH && jax[i].host != rem[k].host)) {
                    continue;
                }
                jax[i].paired = rem[k].paired = true;
                if (how == MATCH) {
                    ++*matched;
                } else {
                    miss[nm++] = (miss_t){how, &jax[i], &rem[k]};
                }
            }
        }
    }
    for (size_t i = 0; i < nj; i++) {
        if (!jax[i].paired) {
            miss[nm++] = (miss_t){JAX_ONLY, &jax[i], NULL};
        }
    }
    for (size_t k = 0; k < nr; k++) {
        if (!rem[k].paired) {
            miss[nm++] = (miss_t){REMAT_ONLY, NULL, &rem[k]};
        }
    }
    return nm;
}

/* The floor entry a mismatch of this case falls under, or NULL. */
static floor_entry_t *floor_of(const char *graph, const char *kind, const char *policy,
                               const miss_t *m) {
    const char *names = m->jax ? m->jax->names : m->remat->names;
    for (size_t i = 0; FLOOR[i].graph; i++) {
        floor_entry_t *f = &FLOOR[i];
        if (f->cls == m->cls && glob(f->graph, graph) && glob(f->kind, kind) &&
            glob(f->policy, policy) && strcmp(f->names, names) == 0) {
            return f;
        }
    }
    return NULL;
}

/* The name of the layer kind layer @p l runs. */
static const char *kind_at(const remat_result_t *r, size_t l) {
    return r->graph->kinds[r->profiles[r->layers[l].profile].kind].name;
}

/* One case: its identity, both sides and what pairing them found. */
typedef struct row {
    const char *graph, *kind, *policy;
    size_t layer;
    char error[320];
    res_t jax[MAX_RES], remat[MAX_RES];
    size_t nj, nr, skipped, matched, nmiss;
    miss_t miss[2 * MAX_RES];
} row_t;

/*
 * Analyzes the case's settings as `remat table` would and loads the tensors
 * remat keeps for its layer; checks that remat runs the recorded graph and
 * layer kind there. False with row->error set when it cannot.
 */
static bool analyze_case(json_t *c, row_t *row) {
    json_t *settings = json_object_get(c, "settings");
    char *args[MAX_SETTINGS];
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(settings) && n < MAX_SETTINGS; i++) {
        args[n++] = (char *)json_string_value(json_array_get(settings, i));
    }
    remat_config_t cfg;
    remat_error_t err;
    remat_error_init(&err);
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    remat_result_t r;
    remat_result_init(&r);
    bool ok = false;
    char source[REMAT_STR_LEN + 32]; /* a built-in graph's source, as remat_resolve names it */
    snprintf(source, sizeof source, "built-in graph '%s'", row->graph);
    if (remat_config_build(NULL, n, args, &cfg, &err) || remat_resolve(&cfg, &g, &p, &hw, &err) ||
        remat_analyze(g, &cfg, p, &hw, &r, &err)) {
        remat_error_format(&err, row->error, sizeof row->error);
    } else if (row->layer >= r.nlayers) {
        snprintf(row->error, sizeof row->error, "layer %zu: the model has %zu", row->layer,
                 r.nlayers);
    } else if (strcmp(g->source, source) != 0 || strcmp(kind_at(&r, row->layer), row->kind) != 0) {
        snprintf(row->error, sizeof row->error, "remat runs %s, kind %s at layer %zu", g->source,
                 kind_at(&r, row->layer), row->layer);
    } else if (!load_remat(&r, row->layer, row->remat, &row->nr)) {
        snprintf(row->error, sizeof row->error, "more than %d kept tensors", MAX_RES);
    } else {
        ok = true;
    }
    remat_result_release(&r);
    remat_graph_free(g);
    remat_policy_free(p);
    return ok;
}

static uint64_t total(const res_t *r, size_t n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += r[i].bytes;
    }
    return sum;
}

/* One side of a mismatch, as "names bytes memory (what)". */
static void side(const res_t *r, char *out, size_t size) {
    if (!r) {
        snprintf(out, size, "-");
        return;
    }
    snprintf(out, size, "%s %llu %s (%s)", r->names[0] ? r->names : "(unnamed)",
             (unsigned long long)r->bytes, r->host ? "host" : "device", r->what);
}

/*
 * The mismatches of a case, one line each (text), or one table row
 * (Markdown: the table begins at the first case with one).
 */
static void print_misses(const row_t *row, const char *id, bool md, tally_t *t) {
    if (md && row->nmiss) {
        if (!t->md_header) {
            printf("| case | JAX's residuals | matched | mismatches |\n|---|---:|---:|---|\n");
            t->md_header = true;
        }
        printf("| %s | %zu | %zu |", id, row->nj, row->matched);
    }
    for (size_t i = 0; i < row->nmiss; i++) {
        const miss_t *m = &row->miss[i];
        const floor_entry_t *f = floor_of(row->graph, row->kind, row->policy, m);
        char a[320], b[320];
        side(m->jax, a, sizeof a);
        side(m->remat, b, sizeof b);
        printf(md ? " %s%s: JAX %s, remat %s;" : "    %s %-10s jax: %s | remat: %s\n",
               md ? (f ? "" : "**not in the floor** ") : (f ? " " : "!"), CLS_NAME[m->cls], a, b);
    }
    if (md && row->nmiss) {
        printf(" |\n");
    }
}

/*
 * The case's line and its mismatches (Markdown: only a case with
 * mismatches, as a table row); counts them into t.
 */
static void report(const row_t *row, bool md, tally_t *t) {
    t->cases++;
    char id[160];
    snprintf(id, sizeof id, "%s %s(%zu) %s", row->graph, row->kind, row->layer, row->policy);
    if (row->error[0]) {
        t->failed++;
        printf(md ? "- %s: error: %s\n" : "%-70s error: %s\n", id, row->error);
        return;
    }
    size_t expected = 0;
    for (size_t i = 0; i < row->nmiss; i++) {
        floor_entry_t *f = floor_of(row->graph, row->kind, row->policy, &row->miss[i]);
        if (f) {
            f->hits++;
            expected++;
        }
    }
    t->jax += row->nj;
    t->matched += row->matched;
    t->floored += expected;
    t->unexpected += row->nmiss - expected;
    t->jax_bytes += total(row->jax, row->nj);
    t->remat_bytes += total(row->remat, row->nr);
    if (!md) {
        printf("%-70s jax %2zu %8.1f MiB  remat %2zu %8.1f MiB  matched %2zu  "
               "mismatches %zu (%zu floor)\n",
               id, row->nj, (double)total(row->jax, row->nj) / MIB, row->nr,
               (double)total(row->remat, row->nr) / MIB, row->matched, row->nmiss, expected);
    }
    print_misses(row, id, md, t);
}

/* A case's place in the summary: matched and mismatched per graph and policy. */
typedef struct cell {
    const char *graph, *kind, *policy;
    size_t matched, nmiss;
    bool error;
} cell_t;

static bool seen_before(const cell_t *cells, size_t i, bool by_policy) {
    for (size_t k = 0; k < i; k++) {
        if (by_policy ? strcmp(cells[k].policy, cells[i].policy) == 0
                      : strcmp(cells[k].graph, cells[i].graph) == 0 &&
                            strcmp(cells[k].kind, cells[i].kind) == 0) {
            return true;
        }
    }
    return false;
}

/* The graph x policy table: "matched/mismatched" per layer kind and policy. */
static void print_matrix(const cell_t *cells, size_t n, bool md) {
    printf(md ? "\n| graph | kind |" : "\n%-26s %-14s", "graph", "kind");
    for (size_t i = 0; i < n; i++) {
        if (!seen_before(cells, i, true)) {
            printf(md ? " %s |" : " %8.8s", cells[i].policy);
        }
    }
    printf("\n");
    if (md) {
        printf("|---|---|");
        for (size_t i = 0; i < n; i++) {
            printf(seen_before(cells, i, true) ? "" : "---:|");
        }
        printf("\n");
    }
    for (size_t i = 0; i < n; i++) {
        if (seen_before(cells, i, false)) {
            continue;
        }
        printf(md ? "| %s | %s |" : "%-26s %-14s", cells[i].graph, cells[i].kind);
        for (size_t k = i; k < n; k++) {
            if (strcmp(cells[k].graph, cells[i].graph) != 0 ||
                strcmp(cells[k].kind, cells[i].kind) != 0) {
                continue;
            }
            char text[32];
            snprintf(text, sizeof text, cells[k].error ? "error" : "%zu/%zu", cells[k].matched,
                     cells[k].nmiss);
            printf(md ? " %s |" : " %8s", text);
        }
        printf("\n");
    }
}

/* Reads and compares one case into row; false on a malformed case. */
static bool run_case(json_t *c, row_t *row) {
    memset(row, 0, sizeof *row);
    row->graph = str(c, "graph");
    row->kind = str(c, "kind");
    row->policy = str(c, "policy");
    json_t *layer = json_object_get(c, "layer");
    if (!row->graph || !row->kind || !row->policy || !json_is_integer(layer) ||
        !json_is_array(json_object_get(c, "settings"))) {
        return false;
    }
    row->layer = (size_t)json_integer_value(layer);
    if (str(c, "error")) {
        snprintf(row->error, sizeof row->error, "JAX side: %s", str(c, "error"));
        return true;
    }
    if (!load_jax(json_object_get(c, "residuals"), row->jax, &row->nj, &row->skipped)) {
        return false;
    }
    if (analyze_case(c, row)) {
        row->nmiss = pair_up(row->jax, row->nj, row->remat, row->nr, row->miss, &row->matched);
    }
    return true;
}

/* The totals, and the floor entries that matched nothing; whether all is as expected. */
static bool summarize(const tally_t *t, bool md) {
    const char *p = md ? "- " : "";
    printf("\n%s%zu cases: JAX's %zu residuals (%.1f MiB) against remat's kept tensors (%.1f MiB): "
           "%zu matched; mismatches: %zu in the floor, %zu not; %zu cases did not trace or analyze\n",
           p, t->cases, t->jax, (double)t->jax_bytes / MIB, (double)t->remat_bytes / MIB,
           t->matched, t->floored, t->unexpected, t->failed);
    bool stale = false;
    for (size_t i = 0; FLOOR[i].graph; i++) {
        if (!FLOOR[i].hits) {
            printf("%sfloor entry %s %s %s %s %s matched no mismatch: remove it\n", p, FLOOR[i].graph,
                   FLOOR[i].kind, FLOOR[i].policy, CLS_NAME[FLOOR[i].cls], FLOOR[i].names);
            stale = true;
        }
    }
    return t->cases && !stale && !t->unexpected && !t->failed;
}

int main(int argc, char **argv) {
    bool md = false, check = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0) {
            md = true;
        } else if (strcmp(argv[i], "--check") == 0) {
            check = true;
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: remat_residuals [--markdown] [--check] [FILE]\n");
            return 2;
        }
    }
    path = path ? path : REMAT_RESIDUALS_FILE;
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    json_t *cases = root ? json_object_get(root, "cases") : NULL;
    const char *format = root ? str(root, "format") : NULL;
    if (!json_is_array(cases) || !format || strcmp(format, "remat-residuals/1") != 0) {
        fprintf(stderr, "remat_residuals: %s: %s\n", path,
                root ? "not format remat-residuals/1 with a cases array" : jerr.text);
        json_decref(root);
        return 2;
    }
    size_t n = json_array_size(cases);
    row_t *row = malloc(sizeof *row);
    cell_t *cells = calloc(n ? n : 1, sizeof *cells);
    tally_t t = {0};
    int rc = 0;
    for (size_t i = 0; row && cells && i < n && !rc; i++) {
        if (!run_case(json_array_get(cases, i), row)) {
            fprintf(stderr, "remat_residuals: %s: $.cases[%zu] is malformed\n", path, i);
            rc = 2;
            break;
        }
        report(row, md, &t);
        cells[i] = (cell_t){row->graph, row->kind,  row->policy,
                            row->matched, row->nmiss, row->error[0]};
    }
    if (!row || !cells) {
        fprintf(stderr, "remat_residuals: out of memory\n");
        rc = 2;
    }
    if (!rc) {
        print_matrix(cells, n, md);
        bool ok = summarize(&t, md);
        rc = check && !ok ? 1 : 0;
    }
    free(row);
    free(cells);
    json_decref(root);
    return rc;
}
