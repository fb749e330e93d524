/* SPDX-License-Identifier: MIT */
/*
 * gen_graphs.c: writes the built-in graphs as C data (src/input/builtin_graphs.h
 * says what the data is and why). Built and run by the build, on the build
 * machine, with the loader's own sources: cmake/rematData.cmake.
 *   usage: gen_graphs OUT.c
 *
 * Invariants:
 *  - The graphs are the texts of the built-in table (builtin_data.c, what
 *    the library embeds), loaded by remat_graph_load_string with the source
 *    the run time gives them, so the data is what a load at run time makes;
 *    a text that does not load is an error: nothing is written, exit 1.
 *  - Every field of every struct is written, or checked to be one the
 *    data's form carries: a byte after the NUL of a char array, which a
 *    string initializer would drop, is an error rather than a difference.
 *  - OUT appears whole or not at all (written to OUT.tmp, then renamed).
 *  - Everything loaded is freed, so that the sanitizer build's leak check
 *    passes when the build runs this.
 * A field added to remat_graph_t needs its line here, in resolve.c's copy
 * and unpack, and in tests/unit/test_builtin_graphs.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/input/graph_file.h"
#include "data/builtin_data.h"
#include "input/builtin_graphs.h"
#include "remat/model/graph.h"
#include "base/util.h"

static const char *out_tmp; /* removed on an error */

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("gen_graphs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (out_tmp) {
        remove(out_tmp);
    }
    exit(1);
}

/* ---- the string pool ----------------------------------------------------- */

/* The pool's bytes, and an open-addressing table of the offsets of the
   strings in it (0: an empty slot), so that equal strings share bytes. */
typedef struct pool {
    char *buf;
    size_t len, cap;
    remat_i_str_t *slot;
    size_t nslots, used;
} pool_t;

static size_t hash(const char *s) {
    size_t h = 2166136261u;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h;
}

static void pool_rehash(pool_t *p) {
    size_t n = p->nslots ? 2 * p->nslots : 1024;
    remat_i_str_t *slot = remat_i_xcalloc(n, sizeof *slot);
    for (size_t i = 0; i < p->nslots; i++) {
        if (p->slot[i]) {
            size_t j = hash(p->buf + p->slot[i]) & (n - 1);
            while (slot[j]) {
                j = (j + 1) & (n - 1);
            }
            slot[j] = p->slot[i];
        }
    }
    free(p->slot);
    p->slot = slot;
    p->nslots = n;
}

/* The offset of @p s in the pool, added if new; 0 for NULL. */
static remat_i_str_t intern(pool_t *p, const char *s) {
    if (!s) {
        return 0;
    }
    if (2 * (p->used + 1) > p->nslots) {
        pool_rehash(p);
    }
    size_t j = hash(s) & (p->nslots - 1);
    for (; p->slot[j]; j = (j + 1) & (p->nslots - 1)) {
        if (strcmp(p->buf + p->slot[j], s) == 0) {
            return p->slot[j];
        }
    }
    size_t n = strlen(s) + 1;
    if (p->len + n > UINT32_MAX) {
        die("the string pool passes 4 GiB");
    }
    if (p->len + n > p->cap) {
        p->cap = 2 * (p->len + n);
        p->buf = remat_i_xrealloc(p->buf, p->cap);
    }
    memcpy(p->buf + p->len, s, n);
    p->slot[j] = (remat_i_str_t)p->len;
    p->used++;
    p->len += n;
    return p->slot[j];
}

/* ---- the arrays ------------------------------------------------------------ */

/* One stream per array of the data (builtin_graphs.h), filled in one walk
   over the graphs and written out one after the other at the end; n[] is
   each array's entries so far, the index the next one gets. */
enum { A_TENSORS, A_TENSOR_STRS, A_OPS, A_OP_NAMES, A_SIZES, A_DIMS, A_KINDS, A_GRAPHS, A_COUNT };

static const struct {
    const char *type, *name, *zero;
} arrays[A_COUNT] = {
    {"remat_tensor_t", "remat_i_static_tensors", "{0}"},
    {"remat_i_tensor_strs_t", "remat_i_static_tensor_strs", "{0}"},
    {"remat_op_t", "remat_i_static_ops", "{0}"},
    {"remat_i_str_t", "remat_i_static_op_names", "0"},
    {"size_t", "remat_i_static_sizes", "0"},
    {"remat_i_static_dim_t", "remat_i_static_dims", "{0}"},
    {"remat_i_static_kind_t", "remat_i_static_kinds", "{0}"},
    {"remat_i_static_graph_t", "remat_i_static_graphs", "{0}"},
};

typedef struct gen {
    FILE *a[A_COUNT];
    char *text[A_COUNT];
    size_t len[A_COUNT];
    uint32_t n[A_COUNT];
    pool_t pool;
} gen_t;

/* The index the next entry of array @p k gets, counting @p count entries. */
static uint32_t take(gen_t *G, int k, size_t count) {
    if (count > UINT32_MAX - G->n[k]) {
        die("%s passes 2^32 entries", arrays[k].name);
    }
    uint32_t at = G->n[k];
    G->n[k] += (uint32_t)count;
    return at;
}

/* ---- values as C ----------------------------------------------------------- */

/* @p s as a C string literal: anything but letters, digits and a few safe
   marks as a three-digit octal escape (which cannot run into what
   follows, and leaves no '?' to make a trigraph nor a '*' to end the
   comment a name is written in). */
static void put_cstr(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("_-.,: []<>/+=", c)) {
            fputc(c, f);
        } else {
            fprintf(f, "\\%03o", c);
        }
    }
    fputc('"', f);
}

/* A char array of @p size bytes holding a string: its bytes past the NUL
   must be zero, as the initializer makes them. */
static void put_chars(FILE *f, const char *a, size_t size, const char *what) {
    size_t n = strnlen(a, size);
    if (n == size) {
        die("%s: no NUL in its %zu bytes", what, size);
    }
    for (size_t i = n; i < size; i++) {
        if (a[i]) {
            die("%s: a byte past the NUL is not zero", what);
        }
    }
    put_cstr(f, a);
}

static void put_size(FILE *f, size_t v) {
    if (v == REMAT_NONE) {
        fputs("REMAT_NONE", f);
    } else {
        fprintf(f, "%zu", v);
    }
}

/* ", .FIELD = V", V as put_size writes it. */
static void put_size_field(FILE *f, const char *field, size_t v) {
    fprintf(f, ", .%s = ", field);
    put_size(f, v);
}

/* An array initializer of @p n sizes. With @p trim, for an array member of
   fixed size, trailing zeros are left to the initializer's zero fill; a
   static array's size is its initializer's, so it gets every entry. */
static void put_sizes(FILE *f, const size_t *a, size_t n, bool trim) {
    while (trim && n > 1 && a[n - 1] == 0) {
        n--;
    }
    fputc('{', f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        put_size(f, a[i]);
    }
    fputc('}', f);
}

/* As put_sizes with trim, for a fixed-size member array of strings. */
static void put_strs(FILE *f, const remat_i_str_t *a, size_t n) {
    while (n > 1 && a[n - 1] == 0) {
        n--;
    }
    fputc('{', f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s%" PRIu32, i ? ", " : "", a[i]);
    }
    fputc('}', f);
}

/* ---- blocks ------------------------------------------------------------------ */

static void put_tensor(FILE *f, const remat_tensor_t *t) {
    fprintf(f, "    {.rank = %zu, .dim = ", t->rank);
    put_sizes(f, t->dim, REMAT_MAX_RANK, true);
    fprintf(f,
            ", .dtype = %d, .param = %d, .frozen = %d, .input = %d, .ntags = %zu, .kept = %d, "
            ".has_axes = %d",
            (int)t->dtype, t->param, t->frozen, t->input, t->ntags, (int)t->kept, t->has_axes);
    put_size_field(f, "producer", t->producer);
    put_size_field(f, "storage", t->storage);
    put_size_field(f, "last_use", t->last_use);
    fprintf(f, ", .needs_grad = %d, .residual = %d},\n", t->needs_grad, t->residual);
}

static void put_tensor_strs(gen_t *G, const remat_tensor_t *t) {
    remat_i_tensor_strs_t s = {.name = intern(&G->pool, t->name),
                               .gather_group = intern(&G->pool, t->gather_group)};
    for (size_t k = 0; k < REMAT_MAX_TAGS; k++) {
        s.tags[k] = intern(&G->pool, t->tags[k]);
    }
    for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
        s.axes[k] = intern(&G->pool, t->axes[k]);
    }
    FILE *f = G->a[A_TENSOR_STRS];
    fprintf(f, "    {%" PRIu32 ", %" PRIu32 ", ", s.name, s.gather_group);
    put_strs(f, s.tags, REMAT_MAX_TAGS);
    fputs(", ", f);
    put_strs(f, s.axes, REMAT_MAX_RANK);
    fputs("},\n", f);
}

static bool all_zero(const char *a, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (a[i]) {
            return false;
        }
    }
    return true;
}

/* Char array @p field, left out when its bytes are all zero (the
   initializer zeroes what it leaves out). */
static void put_chars_field(FILE *f, const char *field, const char *a, size_t size,
                            const char *op) {
    if (!all_zero(a, size)) {
        fprintf(f, ", .%s = ", field);
        put_chars(f, a, size, op);
    }
}

/* An op: its kind, counts and indices, then only the fields that are not
   zero. */
static void put_op(FILE *f, const remat_op_t *op) {
    if (!isfinite(op->value)) {
        die("op '%s': its value is not finite", op->name);
    }
    fprintf(f, "    {.kind = %d, .nin = %zu, .nout = %zu, .in = ", (int)op->kind, op->nin,
            op->nout);
    put_sizes(f, op->in, REMAT_MAX_IO, true);
    fputs(", .out = ", f);
    put_sizes(f, op->out, REMAT_MAX_IO, true);
    size_t nsubs = REMAT_MAX_IO + 1;
    while (nsubs > 0 && all_zero(op->subs[nsubs - 1], sizeof op->subs[nsubs - 1])) {
        nsubs--;
    }
    if (nsubs) {
        fputs(", .subs = {", f);
        for (size_t k = 0; k < nsubs; k++) {
            fputs(k ? ", " : "", f);
            put_chars(f, op->subs[k], sizeof op->subs[k], op->name);
        }
        fputc('}', f);
    }
    fprintf(f, "%s%s%s", op->causal ? ", .causal = 1" : "", op->bhsd ? ", .bhsd = 1" : "",
            op->outside ? ", .outside = 1" : "");
    if (op->outer) {
        fprintf(f, ", .outer = %u", (unsigned)op->outer);
    }
    if (op->value != 0 || signbit(op->value)) {
        fprintf(f, ", .value = %a", op->value);
    }
    put_chars_field(f, "ragged", op->ragged, sizeof op->ragged, op->name);
    put_chars_field(f, "over", op->over, sizeof op->over, op->name);
    put_chars_field(f, "window", op->window, sizeof op->window, op->name);
    fprintf(f, ", .nsaves = %zu, .saves = ", op->nsaves);
    put_sizes(f, op->saves, 2 * REMAT_MAX_IO, true);
    fprintf(f, "%s, .has_backward = %d},\n", op->saves_override ? ", .saves_override = 1" : "",
            op->has_backward);
}

/* @p n entries of the sizes array; their index. */
static uint32_t put_size_run(gen_t *G, const size_t *a, size_t n) {
    for (size_t i = 0; i < n; i++) {
        fputs(i % 16 ? " " : "    ", G->a[A_SIZES]);
        put_size(G->a[A_SIZES], a[i]);
        fputs(i + 1 == n || i % 16 == 15 ? ",\n" : ",", G->a[A_SIZES]);
    }
    return take(G, A_SIZES, n);
}

/* Block @p b's tensors, ops and index arrays into their arrays, and its
   descriptor (what put_block_desc writes) into *d. */
static void put_block(gen_t *G, const remat_block_t *b, remat_i_static_block_t *d) {
    if (b->ntensors > UINT32_MAX || b->nops > UINT32_MAX || b->ninputs > UINT32_MAX ||
        b->noutputs > UINT32_MAX) {
        die("a block passes 2^32 tensors or ops");
    }
    *d = (remat_i_static_block_t){.ntensors = (uint32_t)b->ntensors, .nops = (uint32_t)b->nops,
                                  .ninputs = (uint32_t)b->ninputs,
                                  .noutputs = (uint32_t)b->noutputs};
    for (size_t i = 0; i < b->ntensors; i++) {
        put_tensor(G->a[A_TENSORS], &b->tensors[i]);
        put_tensor_strs(G, &b->tensors[i]);
    }
    d->tensors = take(G, A_TENSORS, b->ntensors);
    (void)take(G, A_TENSOR_STRS, b->ntensors); /* the same indices */
    for (size_t i = 0; i < b->nops; i++) {
        put_op(G->a[A_OPS], &b->ops[i]);
        fprintf(G->a[A_OP_NAMES], "    %" PRIu32 ",\n", intern(&G->pool, b->ops[i].name));
    }
    d->ops = take(G, A_OPS, b->nops);
    (void)take(G, A_OP_NAMES, b->nops);
    d->order = put_size_run(G, b->order, b->nops);
    d->inputs = put_size_run(G, b->inputs, b->ninputs);
    d->outputs = put_size_run(G, b->outputs, b->noutputs);
}

static void put_block_desc(FILE *f, const remat_i_static_block_t *d) {
    fprintf(f,
            "{%" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32
            ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 "}",
            d->ntensors, d->nops, d->ninputs, d->noutputs, d->tensors, d->ops, d->order,
            d->inputs, d->outputs);
}

/* ---- graphs ------------------------------------------------------------------ */

static void put_dims(gen_t *G, const remat_graph_t *g) {
    for (size_t i = 0; i < g->ndims; i++) {
        const remat_dim_t *d = &g->dims[i];
        fprintf(G->a[A_DIMS],
                "    {%" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu64
                "u},\n",
                intern(&G->pool, d->name), intern(&G->pool, d->from), intern(&G->pool, d->div),
                intern(&G->pool, d->axis), intern(&G->pool, d->weight_axis), d->value);
    }
}

static void put_kind(gen_t *G, const remat_kind_t *K) {
    remat_i_static_block_t d;
    put_block(G, &K->block, &d);
    FILE *f = G->a[A_KINDS];
    fprintf(f,
            "    {%" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu64
            "u, %" PRIu64 "u, %s, %s, %s, ",
            intern(&G->pool, K->name), intern(&G->pool, K->block_name),
            intern(&G->pool, K->first), intern(&G->pool, K->every), intern(&G->pool, K->window),
            K->first_n, K->every_n, K->keeps_offloads ? "true" : "false",
            K->own_residuals ? "true" : "false", K->gathers_ahead ? "true" : "false");
    put_block_desc(f, &d);
    fputs("},\n", f);
}

/* Graph @p g, built-in @p builtin, into every array; a comment naming it
   where its entries start. */
static void put_graph(gen_t *G, const char *builtin, const remat_graph_t *g) {
    for (int k = 0; k < A_COUNT; k++) {
        fputs("    /* ", G->a[k]);
        put_cstr(G->a[k], builtin);
        fputs(" */\n", G->a[k]);
    }
    const uint32_t kinds = G->n[A_KINDS];
    for (size_t k = 0; k < g->nkinds; k++) {
        put_kind(G, &g->kinds[k]);
    }
    (void)take(G, A_KINDS, g->nkinds);
    remat_i_static_block_t head = {0};
    if (g->has_head) {
        put_block(G, &g->head, &head);
    }
    put_dims(G, g);
    const uint32_t dims = take(G, A_DIMS, g->ndims);
    FILE *f = G->a[A_GRAPHS];
    fprintf(f,
            "    {.builtin = %" PRIu32 ", .name = %" PRIu32 ", .description = %" PRIu32
            ", .source = %" PRIu32 ",\n",
            intern(&G->pool, builtin), intern(&G->pool, g->name),
            intern(&G->pool, g->description), intern(&G->pool, g->source));
    fprintf(f, "     .ndims = %zu, .dims = %" PRIu32 ", .nkinds = %zu, .kinds = %" PRIu32,
            g->ndims, dims, g->nkinds, kinds);
    fprintf(f, ",\n     .expert_parallel = %d, .has_head = %d, .head = ", g->expert_parallel,
            g->has_head);
    put_block_desc(f, &head);
    fputs(",\n     .head_feeds = ", f);
    put_size(f, g->head_feeds);
    put_size_field(f, "head_takes", g->head_takes);
    put_size_field(f, "head_npre", g->head_npre);
    fputs("},\n", f);
    (void)take(G, A_GRAPHS, 1);
}

/* Every array, each closed by a zeroed entry, then the pool, sixteen
   bytes a line. */
static void put_arrays(gen_t *G, FILE *f) {
    for (int k = 0; k < A_COUNT; k++) {
        if (fclose(G->a[k])) {
            die("out of memory");
        }
        G->a[k] = NULL;
        fprintf(f, "GRAPH_DATA const %s %s[] = {\n", arrays[k].type, arrays[k].name);
        fwrite(G->text[k], 1, G->len[k], f);
        fprintf(f, "    %s,\n};\n\n", arrays[k].zero);
        free(G->text[k]);
        G->text[k] = NULL;
    }
    fprintf(f, "const size_t remat_i_nstatic_graphs = %" PRIu32 ";\n\n", G->n[A_GRAPHS]);
    fputs("GRAPH_DATA const char remat_i_graph_strings[] = {", f);
    for (size_t i = 0; i < G->pool.len; i++) {
        fprintf(f, "%s%d,", i % 16 ? " " : "\n    ", (unsigned char)G->pool.buf[i]);
    }
    fputs("\n};\n", f);
}

/* ---- main -------------------------------------------------------------------- */

/* The generated file's start. Its arrays (most of a megabyte, read only
   when a built-in graph is resolved) go in a section of their own where
   the object format names sections (ELF): in .rodata they would lie among
   the data every command reads (libc's, the built-in table's), spreading
   that over more pages and costing each command a few page faults. */
static const char preamble[] =
    "/* Generated by tools/gen_graphs.c from the built-in graphs. Do not edit. */\n"
    "#include \"input/builtin_graphs.h\"\n\n"
    "#if defined(__ELF__)\n"
    "#define GRAPH_DATA __attribute__((section(\".remat_graphs\")))\n"
    "#else\n"
    "#define GRAPH_DATA\n"
    "#endif\n\n";

/* Every built-in graph, loaded as at run time, in table order. */
static size_t load_all(remat_graph_t **g, const char **names) {
    size_t n = 0;
    for (size_t i = 0; i < remat_i_nbuiltins; i++) {
        if (remat_i_builtins[i].kind != REMAT_BUILTIN_GRAPH) {
            continue;
        }
        char source[REMAT_STR_LEN + 128], line[REMAT_ERR_TEXT_LEN + 256];
        snprintf(source, sizeof source, REMAT_I_BUILTIN_GRAPH_SOURCE, remat_i_builtins[i].name);
        remat_error_t err;
        remat_error_init(&err);
        if (remat_graph_load_string(remat_i_builtins[i].text, source, &g[n], &err)) {
            remat_error_format(&err, line, sizeof line);
            die("%s", line);
        }
        names[n++] = remat_i_builtins[i].name;
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.c\n", argv[0]);
        return 2;
    }
    remat_graph_t **g = remat_i_xcalloc(remat_i_nbuiltins + 1, sizeof *g);
    const char **names = remat_i_xcalloc(remat_i_nbuiltins + 1, sizeof *names);
    char *tmp = remat_i_xmalloc(strlen(argv[1]) + 5);
    gen_t G = {0};
    /* Offset 0: a NUL that stands for NULL, in no slot (an empty string
       gets its own). */
    G.pool.buf = remat_i_xcalloc(1, G.pool.cap = 4096);
    G.pool.len = 1;
    for (int k = 0; k < A_COUNT; k++) {
        G.a[k] = open_memstream(&G.text[k], &G.len[k]);
        if (!G.a[k]) {
            die("out of memory");
        }
    }
    const size_t n = load_all(g, names);
    for (size_t i = 0; i < n; i++) {
        put_graph(&G, names[i], g[i]);
        remat_graph_free(g[i]);
    }
    sprintf(tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        die("cannot write %s", tmp);
    }
    out_tmp = tmp;
    fputs(preamble, f);
    put_arrays(&G, f);
    if (ferror(f) | fclose(f) || rename(tmp, argv[1])) {
        die("cannot write %s", argv[1]);
    }
    free(g);
    free(names);
    free(tmp);
    free(G.pool.buf);
    free(G.pool.slot);
    return 0;
}
