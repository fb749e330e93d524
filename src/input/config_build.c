/* SPDX-License-Identifier: MIT */
/*
 * config_build.c: a config built in layers (remat_config_build): base.yml's
 * defaults, then the model preset, then remat's default run when the
 * settings describe no model, then the config file (JSON or MaxText YAML,
 * its base_config chain base first), then the key=value arguments; a later
 * layer wins (docs/config.md, "Layering").
 *
 * Invariants:
 *  - building allocates only the settings list (entry_t, which borrows its
 *    values from the arguments, the YAML settings or the JSON tree, all
 *    alive until the build returns) and what the readers allocate; every
 *    allocation is fallible (REMAT_E_NOMEM) and freed on every path;
 *  - the list grows by doubling, so a file of n settings costs O(n);
 *  - a remat_policy other than custom set in a layer drops the custom
 *    placements of the layers under it (they were that earlier policy's),
 *    so that a layer can change the policy whole; within one layer a
 *    placement and another policy stay the error check_built gives;
 *  - a config file that sets nothing is an error: an empty file is far
 *    more often a mistake than a wish for the defaults.
 */
#include "remat/input/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "input/config_internal.h"
#include "input/config_maxtext.h"
#include "base/json_util.h"
#include "input/yaml_config.h"

#include "remat/data/builtin.h"
#include "base/util.h"

/* remat's default run: MaxText's llama3.1-70b as tpu-recipes publishes it
   for a 64-chip TPU7x slice (ironwood/llama3.1-70b/8k-bf16-tpu7x-4x4x4 at
   c8cfe2f: 12.2 s a step; validation/runs.json,
   tpu7x-64chips-llama3.1-70b-bf16-pdb2). The recipe's qkv_proj=device is
   left out: the llama graph does not tag it and MaxText ignores it. */
static const char *const default_run[] = {
    "model_name=llama3.1-70b", "topology=tpu7x-128",      "per_device_batch_size=2",
    "max_target_length=8192",  "opt_type=adamw",          "mu_dtype=bfloat16",
    "remat_policy=custom",     "decoder_layer_input=device", "context=device",
    "query_proj=device",       "key_proj=device",         "value_proj=device",
};
enum { NDEFAULT_RUN = sizeof default_run / sizeof default_run[0] };

size_t remat_config_default_run_count(void) {
    return NDEFAULT_RUN;
}

const char *remat_config_default_run(size_t i) {
    return i < NDEFAULT_RUN ? default_run[i] : NULL;
}

/* The layers a setting can come from, lowest first. */
enum { LAYER_DEFAULT_RUN, LAYER_FILE, LAYER_ARGS, NLAYERS };

/* One setting from the default run, a file or the command line. Its key
   is copied (an argument's is the text before '='); its value is borrowed
   from what outlives the build, or, NULL, is written in num (a JSON
   number: the list moves as it grows, so no pointer into it is kept). */
typedef struct entry {
    char key[96];
    const char *value; /* NULL: num */
    const char *source;
    const char *prefix; /* a JSON path's prefix ("$"); NULL for YAML and arguments */
    int line;           /* a YAML setting's line; 0 otherwise */
    const remat_yaml_setting_t *yaml; /* the YAML setting, checked when applied */
    unsigned layer;
    char num[40];
} entry_t;

typedef struct entries {
    entry_t *v;
    size_t n, cap;
} entries_t;

/* A new zeroed entry at the end of @p es, or NULL (NOMEM in @p err). */
static entry_t *add_entry(entries_t *es, remat_error_t *err) {
    if (es->n == es->cap) {
        size_t cap = es->cap ? 2 * es->cap : 32;
        entry_t *v = remat_i_try_realloc_array(es->v, cap, sizeof *v, err);
        if (!v) {
            return NULL;
        }
        es->v = v;
        es->cap = cap;
    }
    entry_t *e = &es->v[es->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static const char *value_of(const entry_t *e) {
    return e->value ? e->value : e->num;
}

/* Where an entry came from within its source, for its errors: the
   argument as written, a YAML key and its line, a JSON path. */
static void entry_path(const entry_t *e, char *buf, size_t size) {
    if (e->prefix) {
        snprintf(buf, size, "%s.%s", e->prefix, e->key);
    } else if (e->line) {
        snprintf(buf, size, "$.%s (line %d)", e->key, e->line);
    } else {
        snprintf(buf, size, "%s=%s", e->key, value_of(e));
    }
}

/* A JSON scalar as the text a key=value setting would give; false when
   @p v is not a string, number or boolean. */
static bool json_text(json_t *v, char *num, size_t size, const char **out) {
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return true;
    }
    if (json_is_integer(v)) {
        /* the key's own type decides what a sign means (-1 fills a mesh
           axis; a size must be positive) */
        snprintf(num, size, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(num, size, "%.17g", json_real_value(v));
    } else if (json_is_boolean(v)) {
        snprintf(num, size, "%s", json_is_true(v) ? "true" : "false");
    } else {
        return false;
    }
    *out = num;
    return true;
}

static remat_status_t json_to_entries(json_t *obj, const char *source, const char *prefix,
                                      entries_t *es, remat_error_t *err) {
    const char *key;
    json_t *v;
    if (!json_is_object(obj)) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, prefix,
                               "a config must be a JSON object of key: value");
    }
    json_object_foreach(obj, key, v) {
        entry_t *e = add_entry(es, err);
        if (!e) {
            remat_error_set_source(err, source);
            return REMAT_E_NOMEM;
        }
        e->source = source;
        e->prefix = prefix;
        e->layer = LAYER_FILE;
        char path[REMAT_ERR_PATH_LEN];
        snprintf(path, sizeof path, "%s.%s", prefix, key);
        if (strlen(key) >= sizeof e->key) {
            return remat_error_set(err, REMAT_E_CONFIG, source, path, "key is too long");
        }
        strcpy(e->key, key);
        if (!json_text(v, e->num, sizeof e->num, &e->value)) {
            return remat_error_set(err, REMAT_E_CONFIG, source, path,
                                   "'%s' must be a string, number or boolean", key);
        }
        if (e->value == e->num) {
            e->value = NULL;
        }
        if (strlen(value_of(e)) >= REMAT_RULES_LEN) {
            return remat_error_set(err, REMAT_E_CONFIG, source, path, "value is too long");
        }
    }
    return REMAT_OK;
}

/* key=value settings as entries of @p layer from @p source. */
static remat_status_t args_to_entries(size_t nargs, char *const *args, unsigned layer,
                                      const char *source, entries_t *es, remat_error_t *err) {
    for (size_t i = 0; i < nargs; i++) {
        const char *eq = strchr(args[i], '=');
        entry_t *e = add_entry(es, err);
        if (!e) {
            remat_error_set_source(err, source);
            return REMAT_E_NOMEM;
        }
        e->source = source;
        e->layer = layer;
        if (!eq || eq == args[i]) {
            return remat_error_set(err, REMAT_E_USAGE, source, args[i],
                                   "expected key=value (MaxText style), e.g. "
                                   "per_device_batch_size=4");
        }
        if ((size_t)(eq - args[i]) >= sizeof e->key || strlen(eq + 1) >= REMAT_RULES_LEN) {
            return remat_error_set(err, REMAT_E_CONFIG, source, NULL,
                                   "setting '%.40s...' is too long (keys under %zu bytes, values "
                                   "under %d)",
                                   args[i], sizeof e->key, REMAT_RULES_LEN);
        }
        memcpy(e->key, args[i], (size_t)(eq - args[i]));
        e->value = eq + 1;
    }
    return REMAT_OK;
}

/* Whether @p key is one of remat's typed keys (not MaxText's others). */
static bool remat_key(const char *key) {
    for (size_t i = 0; i < remat_config_nkeys(); i++) {
        if (strcmp(remat_config_key_name(i), key) == 0) {
            return true;
        }
    }
    return false;
}

/* One YAML setting as an entry; what remat's keys cannot take from YAML
   is checked when it is applied (yaml_check), so that a file of many
   settings costs no key lookup past its first error. */
static remat_status_t yaml_entry(const remat_yaml_setting_t *y, entry_t *e, remat_error_t *err) {
    e->source = y->source;
    e->line = y->line;
    e->layer = LAYER_FILE;
    e->value = y->value;
    e->yaml = y;
    if (strlen(y->key) >= sizeof e->key) {
        char path[REMAT_ERR_PATH_LEN];
        snprintf(path, sizeof path, "$.%.100s (line %d)", y->key, y->line);
        return remat_error_set(err, REMAT_E_CONFIG, y->source, path, "key is too long");
    }
    strcpy(e->key, y->key);
    return REMAT_OK;
}

/* A list is text remat's keys do not take, mlp_activations and
   deepstack_visual_indexes_for_vit aside (kept as flow text, checked
   against the graph); a MaxText key remat does not model keeps any value
   (it is only listed). */
static remat_status_t yaml_check(const entry_t *e, const char *path, remat_error_t *err) {
    const remat_yaml_setting_t *y = e->yaml;
    if (!remat_key(y->key)) {
        return REMAT_OK;
    }
    if (!y->scalar && strcmp(y->key, "mlp_activations") != 0 &&
        strcmp(y->key, "deepstack_visual_indexes_for_vit") != 0) {
        return remat_error_set(err, REMAT_E_CONFIG, y->source, path,
                               "'%s' takes one value, not a list or a mapping", y->key);
    }
    if (strstr(y->value, "${")) {
        /* OmegaConf would substitute another key or an environment
           variable here; remat reads literals only, so say so rather than
           parse the text as a value. */
        return remat_error_set(err, REMAT_E_CONFIG, y->source, path,
                               "'%s' is an interpolation ('%s'): remat reads literal values; "
                               "write the value",
                               y->key, y->value);
    }
    if (y->cut || strlen(y->value) >= REMAT_RULES_LEN) {
        return remat_error_set(err, REMAT_E_CONFIG, y->source, path,
                               "value is too long (at most %d bytes)", REMAT_RULES_LEN - 1);
    }
    return REMAT_OK;
}

/* What a build reads and keeps alive until it returns. */
typedef struct build {
    entries_t es;
    remat_yaml_config_t yaml; /* a YAML file's settings, which entries borrow */
    json_t *json;             /* a JSON file's tree, which entries borrow */
    bool maxtext_base;        /* the YAML chain ended at MaxText's base.yml */
} build_t;

static void build_release(build_t *b) {
    free(b->es.v);
    remat_i_yaml_release(&b->yaml);
    json_decref(b->json);
}

bool remat_i_config_text_is_yaml(const char *name, const char *text) {
    if (remat_i_is_yaml_path(name)) {
        return true;
    }
    if (remat_i_is_json_name(name) || !text) {
        return false;
    }
    /* a pipe or standard input has no suffix: JSON opens with '{' */
    const char *p = text + strspn(text, " \t\r\n");
    return *p != '{';
}

/* The file's settings (@p f) into @p b. */
static remat_status_t file_entries(const remat_i_config_file_t *f, build_t *b, remat_config_t *c,
                                   remat_error_t *err) {
    remat_status_t st;
    if (f->text && !remat_i_config_text_is_yaml(f->name, f->text)) {
        st = remat_i_json_parse(f->text, f->name, &b->json, err);
        return st ? st : json_to_entries(b->json, f->name, "$", &b->es, err);
    }
    st = f->text ? remat_i_yaml_load_text(f->name, f->text, f->len, &b->yaml, err)
                 : remat_i_yaml_load(f->name, &b->yaml, err);
    if (st == REMAT_OK && b->yaml.maxtext_base) {
        b->maxtext_base = true;
        remat_i_config_note(c, "MaxText's base.yml is not read: remat's defaults are its values "
                               "at MaxText e591f30 (docs/config.md)");
    }
    for (size_t i = 0; st == REMAT_OK && i < b->yaml.n; i++) {
        entry_t *e = add_entry(&b->es, err);
        st = e ? yaml_entry(&b->yaml.settings[i], e, err) : REMAT_E_NOMEM;
    }
    if (st == REMAT_E_NOMEM) {
        remat_error_set_source(err, f->name);
    }
    return st;
}

/* Whether setting @p key describes a model (its name, its graph, its
   layer or a size of it): the default run then gives way to base.yml's
   defaults, as MaxText's model files and a model of one's own expect. */
static bool model_key(const char *key) {
    static const char *const keys[] = {
        "model_name", "model", "graph", "decoder_block", "mlp_activations", "base_emb_dim",
        "base_num_query_heads", "base_num_kv_heads", "head_dim", "base_mlp_dim",
        "base_num_decoder_layers", "vocab_size", "num_experts", "num_experts_per_tok",
        "base_moe_mlp_dim", "shared_experts", "first_num_dense_layers",
        "interleave_moe_layer_step", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
        "qk_rope_head_dim", "v_head_dim", "attention_type", "logits_via_embedding",
        "use_qk_norm", "use_post_attn_norm", "use_post_ffw_norm", "nope_layer_interval",
        "sliding_window_size", "chunk_attn_window_size", "mtp_num_layers", "global_head_dim",
        "global_num_kv_heads", "share_kv_projections", "v_norm_with_scale",
        "hidden_size_per_layer_input", "vocab_size_per_layer_input", "num_kv_shared_layers",
        "use_double_wide_mlp", "use_indexer", "indexer_n_heads", "indexer_head_dim",
        "indexer_topk", "gdn_conv_kernel_dim", "gdn_num_key_heads", "gdn_num_value_heads",
        "gdn_key_head_dim", "gdn_value_head_dim", "gdn_chunk_size", "use_multimodal",
        "hidden_size_for_vit", "intermediate_size_for_vit", "num_attention_heads_for_vit",
        "num_hidden_layers_for_vit", "out_hidden_size_for_vit",
        "deepstack_visual_indexes_for_vit"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(key, keys[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* A setting that names the slice: the default run's topology gives way. */
static bool slice_key(const char *key) {
    return strcmp(key, "topology") == 0 || strcmp(key, "compile_topology") == 0 ||
           strcmp(key, "num_devices") == 0 || strcmp(key, "hardware") == 0 ||
           strcmp(key, "gpu_multiprocess") == 0;
}

/* Reverses entries [a, b) of @p es in place. */
static void reverse(entries_t *es, size_t a, size_t b) {
    while (a + 1 < b) {
        entry_t t = es->v[a];
        es->v[a++] = es->v[--b];
        es->v[b] = t;
    }
}

/* Puts the default run's settings under the user's (@p b's entries, all
   of them the user's) when those describe no model; its topology only
   when they name no slice. */
static remat_status_t add_default_run(build_t *b, remat_config_t *c, remat_error_t *err) {
    bool slice = false;
    for (size_t i = 0; i < b->es.n; i++) {
        if (model_key(b->es.v[i].key)) {
            return REMAT_OK;
        }
        slice |= slice_key(b->es.v[i].key);
    }
    const size_t user = b->es.n;
    for (size_t i = 0; i < NDEFAULT_RUN; i++) {
        if (slice && strncmp(default_run[i], "topology=", 9) == 0) {
            continue;
        }
        remat_status_t st = args_to_entries(1, (char *const *)&default_run[i],
                                            LAYER_DEFAULT_RUN, "<default run>", &b->es, err);
        if (st) {
            return st;
        }
    }
    /* the default run goes first: rotate it in front, in place (the
       layers apply in order whatever the list's, but errors read better
       in the order given) */
    reverse(&b->es, 0, b->es.n);
    reverse(&b->es, 0, b->es.n - user);
    reverse(&b->es, b->es.n - user, b->es.n);
    c->default_run = true;
    return REMAT_OK;
}

/* The preset the settings name (the last model_name), applied under
   them; base.yml's "default" when none does. */
static remat_status_t apply_named_model(remat_config_t *c, const entries_t *es,
                                        remat_error_t *err) {
    const char *model = "default";
    bool own_graph = false;
    for (size_t i = 0; i < es->n; i++) {
        const entry_t *e = &es->v[i];
        if (strcmp(e->key, "model_name") == 0 || strcmp(e->key, "model") == 0) {
            model = value_of(e);
        }
        own_graph |= strcmp(e->key, "graph") == 0 && remat_i_is_json_name(value_of(e));
    }
    /* the name cut to the buffer, as snprintf would (a name that long is
       no preset: the preset's lookup says so) */
    char model_buf[REMAT_STR_LEN];
    const size_t mlen = strnlen(model, sizeof model_buf - 1);
    memcpy(model_buf, model, mlen);
    model_buf[mlen] = '\0';
    remat_status_t st = remat_i_config_apply_model(c, model_buf, own_graph, err);
    if (st == REMAT_OK) {
        memcpy(c->model_name, model_buf, mlen + 1);
    }
    return st;
}

/* Whether layer @p layer sets remat_policy to other than custom. */
static bool layer_sets_preset(const entries_t *es, unsigned layer) {
    for (size_t i = 0; i < es->n; i++) {
        if (es->v[i].layer == layer && strcmp(es->v[i].key, "remat_policy") == 0 &&
            strcmp(value_of(&es->v[i]), "custom") != 0) {
            return true;
        }
    }
    return false;
}

/* Every entry, layer by layer (they are in layer order). */
static remat_status_t apply_entries(remat_config_t *c, const entries_t *es, remat_error_t *err) {
    remat_status_t st = REMAT_OK;
    for (unsigned layer = 0; layer < NLAYERS && st == REMAT_OK; layer++) {
        if (layer_sets_preset(es, layer)) {
            c->ncustom = 0; /* the placements were the earlier layers' policy's */
        }
        for (size_t i = 0; st == REMAT_OK && i < es->n; i++) {
            const entry_t *e = &es->v[i];
            if (e->layer == layer) {
                char path[REMAT_ERR_PATH_LEN];
                entry_path(e, path, sizeof path);
                st = e->yaml ? yaml_check(e, path, err) : REMAT_OK;
                if (st == REMAT_OK) {
                    st = remat_config_set(c, e->key, value_of(e), e->source, path, err);
                }
            }
        }
    }
    return st;
}

/* The default run's note: what it is, and how to leave it. */
static void default_run_note(remat_config_t *c) {
    remat_i_config_note(c, "no model given: remat's default run, MaxText's llama3.1-70b recipe "
                           "for tpu7x-128 (tpu-recipes), with any settings given on top; a "
                           "model_name or a model's sizes replace it");
}

remat_status_t remat_i_config_build_file(const remat_i_config_file_t *f, size_t nargs,
                                         char *const *args, remat_config_t *c,
                                         remat_error_t *err) {
    remat_config_defaults(c);
    build_t b;
    memset(&b, 0, sizeof b);
    remat_status_t st = f ? file_entries(f, &b, c, err) : REMAT_OK;
    if (st == REMAT_OK && f && b.es.n == 0 && !b.maxtext_base) {
        st = remat_error_set(err, REMAT_E_CONFIG, f->name, NULL,
                             "the config sets no key (an empty file?): give it settings, or "
                             "leave it out");
    }
    if (st == REMAT_OK) {
        st = args_to_entries(nargs, args, LAYER_ARGS, "<command line>", &b.es, err);
    }
    if (st == REMAT_OK) {
        st = add_default_run(&b, c, err);
    }
    if (st == REMAT_OK) {
        st = apply_named_model(c, &b.es, err);
    }
    if (st == REMAT_OK) {
        st = apply_entries(c, &b.es, err);
    }
    build_release(&b);
    if (st == REMAT_OK && c->default_run) {
        default_run_note(c);
    }
    return st ? st : remat_i_config_check_built(c, err);
}

remat_status_t remat_i_config_file_read(const char *path, remat_i_config_file_t *f,
                                        remat_error_t *err) {
    memset(f, 0, sizeof f[0]);
    const bool is_stdin = strcmp(path, "-") == 0;
    f->name = is_stdin ? "<stdin>" : path;
    struct stat sb;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!is_stdin && remat_i_is_yaml_path(path) && strcmp(base, "base.yml") == 0 &&
        stat(path, &sb) != 0) {
        /* MaxText/configs/base.yml from a pasted launch command, on a
           machine without MaxText: the YAML reader says so (no text) */
        return REMAT_OK;
    }
    char *text = NULL;
    size_t len = 0;
    remat_status_t st = remat_i_read_path(path, REMAT_I_READ_STDIN, &text, &len, err);
    f->owned = text;
    f->text = text;
    f->len = len;
    return st;
}

void remat_i_config_file_release(remat_i_config_file_t *f) {
    free(f->owned);
    memset(f, 0, sizeof f[0]);
}

remat_status_t remat_config_build(const char *file, size_t nargs, char *const *args,
                                  remat_config_t *c, remat_error_t *err) {
    if (!file) {
        return remat_i_config_build_file(NULL, nargs, args, c, err);
    }
    remat_i_config_file_t f;
    remat_status_t st = remat_i_config_file_read(file, &f, err);
    if (st == REMAT_OK) {
        st = remat_i_config_build_file(&f, nargs, args, c, err);
    } else {
        remat_config_defaults(c);
    }
    remat_i_config_file_release(&f);
    return st;
}
