/* SPDX-License-Identifier: MIT */
/*
 * config_maxtext.c: MaxText's spellings in a remat config (config_maxtext.h).
 *
 * remat models the keys that change a step's memory or time for the layers
 * its graphs express. Every other key MaxText has (maxtext/keys.txt) is
 * accepted, since a pasted launch command or a YAML config carries dozens of
 * them (run_name, steps, dataset_type, ...), and listed once so that nothing
 * is dropped silently. MaxText's layer keys that would change the layer
 * (an MoE block, another decoder block, an untied head on a tied graph) are
 * refused rather than ignored: ignoring them would be a wrong answer.
 *
 * Invariants: c->notes and c->unused_keys stay NUL-terminated and are only
 * appended to; a note is whole or absent.
 */
#include "input/config_maxtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/maxtext_keys.h"
#include "remat/model/policy.h"
#include "base/util.h"

void remat_i_config_note(remat_config_t *c, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t len = strlen(c->notes);
    if (n < 0 || (size_t)n >= sizeof line || strstr(c->notes, line) ||
        len + (size_t)n + 2 > sizeof c->notes) {
        return;
    }
    memcpy(c->notes + len, line, (size_t)n);
    c->notes[len + (size_t)n] = '\n';
    c->notes[len + (size_t)n + 1] = '\0';
}

static bool is_gpu_profile(const char *hw) {
    return strcmp(hw, "h100") == 0 || strcmp(hw, "h200") == 0 || strcmp(hw, "b200") == 0;
}

/* MaxText's hardware key says tpu, gpu, gpu_multiprocess or cpu; remat's
   names a profile. The kind alone changes nothing on a profile of that
   kind; gpu on a TPU profile picks h100 (MaxText's a3 recipes). */
static remat_status_t hardware_kind(remat_config_t *c, const char **value, const char *source,
                                    const char *path, bool *skip, remat_error_t *err) {
    const bool gpu = strcmp(*value, "gpu") == 0 || strcmp(*value, "gpu_multiprocess") == 0;
    if (strcmp(*value, "cpu") == 0) {
        return remat_error_set(err, REMAT_E_CONFIG, source, path,
                               "remat models accelerator memory: give a TPU or GPU profile "
                               "('remat list hardware')");
    }
    if (strcmp(*value, "tpu") == 0 && is_gpu_profile(c->hardware)) {
        return remat_error_set(err, REMAT_E_CONFIG, source, path,
                               "hardware=tpu, but the hardware is already the GPU '%s'",
                               c->hardware);
    }
    if (strcmp(*value, "tpu") == 0 || (gpu && is_gpu_profile(c->hardware))) {
        *skip = true;
    } else if (gpu) {
        *value = "h100";
        c->gpu_assumed = true;
    }
    return REMAT_OK;
}

remat_status_t remat_i_config_translate(remat_config_t *c, const char **key, const char **value,
                                        const char *source, const char *path, bool *skip,
                                        remat_error_t *err) {
    *skip = false;
    if (strcmp(*key, "model") == 0) {
        *key = "model_name";
    } else if (strcmp(*key, "compile_topology") == 0) {
        /* train_compile's target slice is the run's topology; '' is unset */
        *key = "topology";
        *skip = !**value;
    } else if (strcmp(*key, "compile_topology_num_slices") == 0) {
        *key = "num_slices";
    } else if (strcmp(*key, "hardware") == 0) {
        return hardware_kind(c, value, source, path, skip, err);
    }
    return REMAT_OK;
}

static void record_unused(remat_config_t *c, const char *key) {
    size_t len = strlen(c->unused_keys), k = strlen(key);
    char needle[160];
    snprintf(needle, sizeof needle, ", %s,", key);
    char padded[sizeof c->unused_keys + 4];
    snprintf(padded, sizeof padded, ", %s,", c->unused_keys);
    if (strstr(padded, needle) || (len && strcmp(c->unused_keys + len - 3, "...") == 0)) {
        return; /* listed once; or the list is full */
    }
    if (len + k + 2 + 5 >= sizeof c->unused_keys) {
        snprintf(c->unused_keys + len, sizeof c->unused_keys - len, "%s...", len ? ", " : "");
        return;
    }
    snprintf(c->unused_keys + len, sizeof c->unused_keys - len, "%s%s", len ? ", " : "", key);
    c->nunused++;
}

/* MaxText keys remat does not model that change the step when set off
   MaxText's default (base.yml at e591f30): noted as "no effect", they would
   be a wrong answer, so any other value is refused, saying what it does. */
static const struct {
    const char *key, *deflt, *why;
} step_changers[] = {
    {"custom_mesh_and_rule", "",
     "it replaces MaxText's mesh and logical axis rules by a file's: give the mesh (ici_*, dcn_*) "
     "and logical_axis_rules it sets instead"},
    {"custom_mesh", "", "it orders the devices of a custom mesh, which remat does not model"},
    {"ici_diloco_parallelism", "1", "remat's mesh has no DiLoCo axis: its devices would "
                                    "land on another axis"},
    {"dcn_diloco_parallelism", "1", "remat's mesh has no DiLoCo axis: its devices would "
                                    "land on another axis"},
    {"ici_context_autoregressive_parallelism", "1",
     "remat's mesh has no context_autoregressive axis: its devices would land on another axis"},
    {"dcn_context_autoregressive_parallelism", "1",
     "remat's mesh has no context_autoregressive axis: its devices would land on another axis"},
    {"pipeline_parallel_layers", "-1",
     "it pipelines only some of the layers; remat pipelines all of them (-1, MaxText's default)"},
    {"shard_exp_on_fsdp", "false",
     "it shards the expert weights' embed dim where their experts dim would be (moe.py), a "
     "sharding remat's MoE graphs do not have"},
    /* Blocks remat's graphs do not have: the step is another one. */
    {"attention_for_vit", "dot_product",
     "the vision graphs' encoders (Qwen3-VL's, Gemma 3's, Llama 4's) run MaxText's default "
     "dot-product "
     "attention, whose [heads, patches, patches] fp32 scores another kernel would not make"},
    {"posemb_type_for_vit", "learn",
     "sincos2d computes the Gemma 3 encoder's position table where the gemma3_vision graph holds "
     "MaxText's default learned one (a param of patches x hidden_size_for_vit)"},
    {"mhc_expansion_rate", "1",
     "DeepSeek 4's hyper-connections widen the residual stream by this rate: a block remat's "
     "graphs do not have yet"},
};

bool remat_i_config_bool_text(const char *text, bool *out) {
    if (strcmp(text, "true") == 0 || strcmp(text, "True") == 0 || strcmp(text, "1") == 0) {
        *out = true;
    } else if (strcmp(text, "false") == 0 || strcmp(text, "False") == 0 ||
               strcmp(text, "0") == 0) {
        *out = false;
    } else {
        return false;
    }
    return true;
}

/* *out = @p text read whole as a number; false when it is none (empty,
   trailing characters, not finite). */
static bool number_text(const char *text, double *out) {
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return end != text && *end == '\0' && errno == 0 && isfinite(*out);
}

/* Whether @p value is @p deflt: a boolean default matches its other
   spellings (YAML's False, 0), a numeric one any spelling of its number
   (MaxText's config reads 1.0 for an integer key as 1). */
static bool is_default(const char *value, const char *deflt) {
    bool v;
    double a, b;
    if (strcmp(deflt, "false") == 0) {
        return remat_i_config_bool_text(value, &v) && !v;
    }
    if (number_text(deflt, &b)) {
        return number_text(value, &a) && a == b;
    }
    return strcmp(value, deflt) == 0;
}

/* Why @p value cannot be a value of a key whose default is @p deflt (a
   boolean default takes booleans, a numeric one numbers), or NULL. */
static const char *mistyped(const char *value, const char *deflt) {
    bool b;
    double x;
    if (strcmp(deflt, "false") == 0) {
        return remat_i_config_bool_text(value, &b)
                   ? NULL
                   : "MaxText's booleans are true, True, 1, false, False or 0";
    }
    return number_text(deflt, &x) && !number_text(value, &x)
               ? "it is a number in MaxText's config"
               : NULL;
}

/* Whether @p key set to @p value is one of those; *why then says how. */
static bool step_changer(const char *key, const char *value, const char **why) {
    for (size_t i = 0; i < sizeof step_changers / sizeof step_changers[0]; i++) {
        if (strcmp(key, step_changers[i].key) == 0) {
            const char *bad = mistyped(value, step_changers[i].deflt);
            *why = bad ? bad : step_changers[i].why;
            return !is_default(value, step_changers[i].deflt);
        }
    }
    return false;
}

remat_other_key_t remat_i_config_other_key(remat_config_t *c, const char *key,
                                           const char *value, const char **why) {
    *why = NULL;
    if (step_changer(key, value, why)) {
        return REMAT_OTHER_REFUSED;
    }
    if (remat_i_is_maxtext_key(key)) {
        if (strcmp(key, "matmul_precision") == 0) {
            /* kept for the Llama 4 encoder's check (llama4_mismatch) */
            snprintf(c->matmul_precision, sizeof c->matmul_precision, "%s", value);
        }
        record_unused(c, key);
        return REMAT_OTHER_UNUSED;
    }
    remat_place_t place;
    if (remat_place_parse(value, &place) && strlen(key) < REMAT_NAME_LEN) {
        return REMAT_OTHER_GRAPH_NAME;
    }
    return REMAT_OTHER_UNKNOWN;
}

/* What each built-in graph's layers have, as MaxText's keys select it: a
   key that asks for what the graph lacks (or lacks what the graph has) is
   refused, naming the graph. `acts` is the MLP's activation count (2: a
   gated MLP); `shared_kv`: its global layers' value is their key's
   projection; `v_norm`: a value norm without a learned scale; `ple`:
   Gemma 4's per-layer inputs (hidden_size_per_layer_input and
   vocab_size_per_layer_input, which only decoder_block gemma4_small
   reads in MaxText: other graphs ignore them, as MaxText's other blocks
   do). */
typedef struct graph_features {
    const char *graph;
    unsigned acts;
    bool moe, mla, qk_norm, post_norms, tied, shared_kv, v_norm, ple;
} graph_features_t;

static const graph_features_t graph_features[] = {
    {"llama", 2, false, false, false, false, false, false, false, false},
    {"llama_tied", 2, false, false, false, false, true, false, false, false},
    {"gemma", 2, false, false, false, false, true, false, false, false},
    {"gpt3", 1, false, false, false, false, true, false, false, false},
    {"mixtral", 2, true, false, false, false, false, false, false, false},
    {"deepseek", 2, true, true, false, false, false, false, false, false},
    {"deepseek_lite", 2, true, true, false, false, false, false, false, false},
    {"qwen3_moe", 2, true, false, true, false, false, false, false, false},
    {"qwen3", 2, false, false, true, false, false, false, false, false},
    {"qwen3_tied", 2, false, false, true, false, true, false, false, false},
    {"gpt_oss", 2, true, false, false, false, false, false, false, false},
    {"llama4", 2, true, false, false, false, false, false, false, false},
    {"llama4_qk_norm", 2, true, false, true, false, false, false, false, false},
    {"gemma2", 2, false, false, false, true, true, false, false, false},
    {"gemma3", 2, false, false, true, true, true, false, false, false},
    {"gemma4", 2, false, false, true, true, true, true, true, false},
    {"gemma4_moe", 2, true, false, true, true, true, true, true, false},
    {"gemma4_small", 2, false, false, true, true, true, false, true, true},
    {"olmo3", 2, false, false, true, true, false, false, false, false},
    {"envy", 2, true, false, true, true, true, false, false, false},
    {"qwen3_next", 2, true, false, true, false, false, false, false, false},
    {"qwen3_vl", 2, false, false, true, false, true, false, false, false},
    {"qwen3_vl_moe", 2, true, false, true, false, false, false, false, false},
    {"gemma3_vision", 2, false, false, true, true, true, false, false, false},
    {"llama4_vision", 2, true, false, false, false, false, false, false, false},
    {"llama4_qk_norm_vision", 2, true, false, true, false, false, false, false, false},
    {"qwen3_omni", 2, true, false, true, false, false, false, false, false},
    {"qwen3_5_vision", 2, true, false, true, false, false, false, false, false},
};

/* The graphs with a vision encoder in their head, written out layer by
   layer (graphs/tools/vision_family.py, gemma3_vision.py,
   qwen3_5_vision.py, llama4_vision.py): the text graph
   whose multimodal variant it is (use_multimodal=true on that graph runs
   this one, as MaxText builds the encoder for the same model when the key
   is set: models/models.py; NULL where a model names the graph itself),
   MaxText's vision_encoder_block it is, its layer count and the layers
   its deepstack mergers read, as MaxText's model files set them
   (configs/models/qwen3-vl-*.yml, gemma3-*.yml, qwen3.5-*.yml,
   llama4-17b-*.yml at
   e591f30), which a config
   must match. Another encoder is one row here and its shape checks
   (vision_mismatch). */
typedef struct vision_graph {
    const char *graph, *text, *encoder;
    uint64_t layers;
    const char *deepstack; /* MaxText's list, spaces left out ("[]": none) */
} vision_graph_t;

static const vision_graph_t vision_graphs[] = {
    {"qwen3_vl", NULL, "qwen3_vl", 24, "[5,11,17]"},
    {"qwen3_vl_moe", NULL, "qwen3_vl", 27, "[8,16,24]"},
    {"qwen3_omni", NULL, "qwen3_vl", 27, "[8,16,24]"},
    {"gemma3_vision", "gemma3", "gemma3", 27, "[]"},
    /* the qwen3_next graph is Qwen3.5's text decoder too; Qwen3-Next has
       no encoder (vision_variant switches for decoder_block qwen3_5) */
    {"qwen3_5_vision", "qwen3_next", "qwen3_5", 27, "[]"},
    {"llama4_vision", "llama4", "llama4", 34, "[]"},
    {"llama4_qk_norm_vision", "llama4_qk_norm", "llama4", 34, "[]"},
};

/* The graphs with Qwen3-Omni's audio encoder's params in their head
   (graphs/tools/omni_family.py), and the graph MaxText's step is without
   them (use_audio=false: no audio encoder is built, the rest is the
   same). */
static const struct {
    const char *graph, *without;
} audio_graphs[] = {
    {"qwen3_omni", "qwen3_vl_moe"},
};

/* MaxText's decoder blocks (MaxText e591f30, DecoderBlockType) and remat's
   graphs for each, the first its default ("a|b": either); NULL when remat
   has none, with what it would need. */
static const struct {
    const char *block, *graph, *needs;
} blocks[] = {
    {"llama2", "llama|llama_tied", NULL},
    {"mistral", "llama", NULL},
    {"gpt3", "gpt3", NULL},
    {"default", NULL, "MaxText's default decoder layer"},
    {"mixtral", "mixtral", NULL},
    {"qwen3_moe", "qwen3_moe|qwen3_vl_moe|qwen3_omni", NULL},
    {"qwen3_custom_moe", NULL, "Qwen3's custom MoE block"},
    {"gpt_oss", "gpt_oss", NULL},
    {"llama4", "llama4|llama4_qk_norm|llama4_vision|llama4_qk_norm_vision", NULL},
    {"deepseek", "deepseek|deepseek_lite", NULL},
    {"deepseek4", NULL, "DeepSeek-V4's hash-routed layers and compressed attention"},
    {"gemma", "gemma", NULL},
    {"gemma2", "gemma2", NULL},
    {"gemma3", "gemma3|gemma3_vision", NULL},
    {"gemma4", "gemma4|gemma4_moe", NULL},
    {"gemma4_small", "gemma4_small", NULL},
    /* Qwen2's QKV biases are linear and add 0.002% of the parameters: the
       llama graph (docs/config.md, Models) */
    {"qwen2", "llama|llama_tied", NULL},
    {"qwen3", "qwen3|qwen3_tied|qwen3_vl", NULL},
    {"qwen3_next", "qwen3_next", NULL},
    /* Qwen3.5's text decoder is Qwen3-Next's layers (models/qwen3_5.py
       subclasses them); with use_multimodal its vision encoder before
       them (qwen3_5_vision) */
    {"qwen3_5", "qwen3_next|qwen3_5_vision", NULL},
    {"envy", "envy", NULL},
    {"olmo3", "olmo3", NULL},
};

static const graph_features_t *features_of(const char *graph);

static remat_status_t keys_fit(const remat_config_t *c, const graph_features_t *f,
                               remat_error_t *err);

/* Whether built-in graph @p graph (@p len bytes of a list entry) has what
   the config's layer keys ask (keys_fit, the check that names what
   differs). */
static bool graph_fits_keys(const remat_config_t *c, const char *graph, size_t len) {
    char name[REMAT_STR_LEN];
    snprintf(name, sizeof name, "%.*s", (int)len, graph);
    const graph_features_t *f = features_of(name);
    remat_error_t scratch;
    return f && keys_fit(c, f, &scratch) == REMAT_OK;
}

/* The graph a model of its own (model_name=default) runs for decoder block
   list @p list ("a|b") when its graph is none of them: the first whose
   features the config's layer keys ask for, else the first
   (check_layer_keys then names what differs). */
static void block_graph(remat_config_t *c, const char *list) {
    const char *pick = list;
    for (const char *q = list; *q; q += strcspn(q, "|") + (q[strcspn(q, "|")] == '|')) {
        if (graph_fits_keys(c, q, strcspn(q, "|"))) {
            pick = q;
            break;
        }
    }
    snprintf(c->graph, sizeof c->graph, "%.*s", (int)strcspn(pick, "|"), pick);
}

/* Whether @p graph is one of the "a|b" list @p list. */
static bool in_list(const char *list, const char *graph) {
    const size_t n = strlen(graph);
    for (const char *p = list; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
        if (strncmp(p, graph, n) == 0 && (p[n] == '|' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

static remat_status_t check_block(remat_config_t *c, remat_error_t *err) {
    if (!c->decoder_block[0]) {
        return REMAT_OK;
    }
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (strcmp(c->decoder_block, blocks[i].block) != 0) {
            continue;
        }
        if (!blocks[i].graph) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "decoder_block=%s needs %s, which remat's graphs do not have "
                                   "yet",
                                   c->decoder_block, blocks[i].needs);
        }
        /* a model of its own keeps a graph it was given, or the block's
           graph that its layer keys fit; else the block picks (the
           default llama graph for decoder_block=qwen2 with a tied head
           is llama_tied) */
        const bool own = strcmp(c->model_name, "default") == 0;
        if (remat_i_is_json_name(c->graph) ||
            (in_list(blocks[i].graph, c->graph) &&
             (!own || c->graph_set || graph_fits_keys(c, c->graph, strlen(c->graph))))) {
            return REMAT_OK;
        }
        if (own) {
            block_graph(c, blocks[i].graph);
            return REMAT_OK;
        }
        char graphs[96] = ""; /* "a|b" as "a or b" */
        for (const char *q = blocks[i].graph; *q;) {
            const size_t len = strcspn(q, "|"), used = strlen(graphs);
            snprintf(graphs + used, sizeof graphs - used, "%s%.*s", used ? " or " : "", (int)len, q);
            q += len + (q[len] == '|');
        }
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "decoder_block=%s runs the %s graph, but model_name=%s runs the %s "
                               "graph",
                               c->decoder_block, graphs, c->model_name, c->graph);
    }
    return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                           "decoder_block=%s is not a MaxText decoder block remat knows",
                           c->decoder_block);
}

/* Items of a list written as MaxText takes it: ['silu', 'linear'], or
   [silu,linear] on a command line; a bare word is one. */
static size_t list_items(const char *text) {
    size_t n = 0;
    bool prev_sep = true;
    for (const char *p = text; *p; p++) {
        bool sep = strchr("[]'\", ", *p) != NULL;
        n += !sep && prev_sep;
        prev_sep = sep;
    }
    return n;
}

static const graph_features_t *features_of(const char *graph) {
    for (size_t i = 0; i < sizeof graph_features / sizeof graph_features[0]; i++) {
        if (strcmp(graph_features[i].graph, graph) == 0) {
            return &graph_features[i];
        }
    }
    return NULL;
}

/* The vision encoder of built-in graph @p graph; REMAT_NONE when it has none. */
static size_t vision_of(const char *graph) {
    for (size_t i = 0; i < sizeof vision_graphs / sizeof vision_graphs[0]; i++) {
        if (strcmp(vision_graphs[i].graph, graph) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

/* The text graph built-in graph @p graph is the multimodal variant of
   (vision_graphs' text column), else @p graph itself: the variant's
   layers are the text graph's, and so are their checks. */
static const char *text_graph_of(const char *graph) {
    const size_t v = vision_of(graph);
    return v != REMAT_NONE && vision_graphs[v].text ? vision_graphs[v].text : graph;
}

/* The audio encoder of built-in graph @p graph; REMAT_NONE when it has
   none. */
static size_t audio_of(const char *graph) {
    for (size_t i = 0; i < sizeof audio_graphs / sizeof audio_graphs[0]; i++) {
        if (strcmp(audio_graphs[i].graph, graph) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

/* A feature the config asks for (@p want) against the graph's (@p has):
   an error naming both when they differ. */
static remat_status_t feature(bool want, bool has, const char *key, const char *what,
                              const char *graph, remat_error_t *err) {
    if (want == has) {
        return REMAT_OK;
    }
    return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "%s: the %s graph is built %s %s",
                           key, graph, has ? "with" : "without", what);
}

/* Whether built-in graph features @p f have what the config's layer keys
   ask: an MoE block when num_experts > 1, MLA for attention_type=mla, the
   query/key norms, post-norms, tied head, shared key/value projection,
   value-norm scale and MLP activations they name; else an error naming
   the first key that differs. */
static remat_status_t keys_fit(const remat_config_t *c, const graph_features_t *f,
                               remat_error_t *err) {
    const bool mla = strcmp(c->attention_type, "mla") == 0;
    char moe_key[48], acts_key[160];
    snprintf(moe_key, sizeof moe_key, "num_experts=%lld", (long long)c->num_experts);
    snprintf(acts_key, sizeof acts_key, "mlp_activations=%s", c->mlp_activations);
    remat_status_t st;
    if ((st = feature(c->num_experts > 1, f->moe, moe_key, "an MoE block", f->graph, err)) ||
        (st = feature(mla, f->mla, mla ? "attention_type=mla" : "attention_type=global",
                      "MLA attention", f->graph, err)) ||
        (c->use_qk_norm && (st = feature(true, f->qk_norm, "use_qk_norm=true",
                                         "query and key norms", f->graph, err))) ||
        ((c->use_post_attn_norm || c->use_post_ffw_norm) &&
         (st = feature(true, f->post_norms, "use_post_attn_norm/use_post_ffw_norm=true",
                       "post-norms", f->graph, err))) ||
        (c->logits_via_embedding_set &&
         (st = feature(c->logits_via_embedding, f->tied,
                       c->logits_via_embedding ? "logits_via_embedding=true"
                                               : "logits_via_embedding=false",
                       "a tied output head", f->graph, err))) ||
        (st = feature(c->share_kv_projections, f->shared_kv,
                      c->share_kv_projections ? "share_kv_projections=true"
                                              : "share_kv_projections=false",
                      "one key/value projection in its global layers", f->graph, err)) ||
        (f->v_norm && c->v_norm_with_scale &&
         (st = feature(true, false, "v_norm_with_scale=true", "a learned scale on its value norm",
                       f->graph, err))) ||
        (f->ple && (!c->hidden_size_per_layer_input || !c->vocab_size_per_layer_input) &&
         (st = feature(false, true,
                       c->hidden_size_per_layer_input ? "vocab_size_per_layer_input=0"
                                                      : "hidden_size_per_layer_input=0",
                       "per-layer input embeddings", f->graph, err))) ||
        (st = feature(c->use_multimodal, vision_of(f->graph) != REMAT_NONE,
                      c->use_multimodal ? "use_multimodal=true" : "use_multimodal=false",
                      "a vision encoder", f->graph, err)) ||
        (st = feature(c->use_audio, audio_of(f->graph) != REMAT_NONE,
                      c->use_audio ? "use_audio=true" : "use_audio=false", "an audio encoder",
                      f->graph, err))) {
        return st;
    }
    if (c->mlp_activations[0] && list_items(c->mlp_activations) != f->acts) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "%s: the %s graph's MLP is %s",
                               acts_key, f->graph,
                               f->acts == 2 ? "gated (two activations, e.g. ['silu', 'linear'])"
                                            : "one activation (['gelu'])");
    }
    return REMAT_OK;
}

/* Whether the mesh has a pipeline axis (ici or dcn stage parallelism). */
static bool pipelined(const remat_config_t *c) {
    return c->ici[REMAT_AXIS_STAGE] > 1 || c->dcn[REMAT_AXIS_STAGE] > 1;
}

/* MaxText builds decoder_block gemma4_small's layers one by one and
   refuses scan_layers and pipeline parallelism for it (nnx_decoders.py at
   e591f30: each layer's attention kind and key/value donor is its own).
   Its shared layers' attention reads keys and values an earlier layer
   holds, which remat models with the whole sequence on each device: no
   context parallelism. */
static remat_status_t check_unscanned(const remat_config_t *c, remat_error_t *err) {
    const bool pipeline = pipelined(c);
    const bool context = c->ici[REMAT_AXIS_CONTEXT] != 1 || c->dcn[REMAT_AXIS_CONTEXT] != 1;
    if (c->scan_layers || pipeline) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "%s: MaxText runs decoder_block gemma4_small (Gemma 4 E2B, E4B) "
                               "layer by layer and refuses scan_layers and pipeline parallelism "
                               "for it: set scan_layers=false%s",
                               pipeline ? "pipeline parallelism" : "scan_layers=true",
                               pipeline ? " and no pipeline axis" : "");
    }
    if (context) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "context parallelism: the gemma4_small graph's shared layers read "
                               "an earlier layer's keys and values, which remat does not model "
                               "split over the context axis");
    }
    return REMAT_OK;
}

/* DeepSeek-V3.2's indexer as MaxText e591f30 runs it (configs/types.py's
   checks, layers/attention_mla.py): on MLA with a low-rank query, with
   dot_product attention or the flash kernel through Tokamax's splash.
   remat's .indexer graphs are the sparse training stage without the KL
   loss, on the flash path (.indexer_skipped at most indexer_topk keys,
   where MaxText skips it); the rest is refused, saying what it would
   need. */
static remat_status_t check_indexer(const remat_config_t *c, const graph_features_t *f,
                                    remat_error_t *err) {
    const char *why = NULL;
    if ((f && !f->mla) || c->q_lora_rank == 0) {
        why = "MaxText's indexer reads MLA's low-rank query: attention_type=mla with "
              "q_lora_rank > 0 (the deepseek graph)";
    } else if (strcmp(c->attention, "flash") != 0 || !c->use_tokamax_splash) {
        why = "MaxText runs it with dot_product attention or with attention=flash and "
              "use_tokamax_splash=true; remat's graph has the flash path only";
    } else if (!c->indexer_sparse_training) {
        why = "indexer_sparse_training=false is MaxText's dense warm-up: it skips the "
              "language-model loss and trains the indexer alone, a step remat does not model "
              "(set indexer_sparse_training=true)";
    } else if (c->indexer_loss_scaling_factor > 0) {
        why = "the indexer's KL loss (indexer_loss_scaling_factor > 0) adds the main "
              "attention's [batch, heads, q, kv] fp32 scores, which remat's graph does not "
              "have yet";
    } else if (c->indexer_head_dim <= c->qk_rope_head_dim) {
        why = "indexer_head_dim must exceed qk_rope_head_dim (its rotated part)";
    }
    return why ? remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "use_indexer=true: %s", why)
               : REMAT_OK;
}

/* DeepSeek-V3's batch-split schedule as MaxText e591f30 runs it
   (models/deepseek_batchsplit.py, the bf16 path, from the scanned branch
   of layers/nnx_decoders.py): the deepseek graph's MoE layers, scanned,
   in two halves (its MoE shard_map's out_specs are written for two), at
   least 4 of them (its scan's prologue and epilogue), on its own splash
   kernel and ragged matmuls; what it runs otherwise is refused. */
static const char *batch_split_refusal(const remat_config_t *c, const graph_features_t *f) {
    if (!f || strcmp(f->graph, "deepseek") != 0) {
        return "the schedule is DeepSeek-V3's MoE layer scan (decoder_block deepseek, the "
               "deepseek graph)";
    }
    if (c->batch_split_factor != 2) {
        return "batch_split_factor must be 2: the schedule's MoE shard_map is written for two "
               "halves of the batch (MaxText's default 1 does not run)";
    }
    if (!c->scan_layers || pipelined(c)) {
        return "MaxText runs the schedule in its scanned, unpipelined decoder (scan_layers=true, "
               "no pipeline axis)";
    }
    if (c->base_num_decoder_layers < c->first_num_dense_layers + 4) {
        return "MaxText's schedule needs at least 4 MoE layers (base_num_decoder_layers - "
               "first_num_dense_layers)";
    }
    if (c->quantization[0] || c->mtp_num_layers > 0 || c->use_indexer) {
        return "its fp8 path (quantization), its multi-token prediction layer (mtp_num_layers) "
               "and the sparse-attention indexer (use_indexer) are not modelled";
    }
    if (strcmp(c->attention, "flash") != 0 || !c->sparse_matmul) {
        return "the schedule runs its own splash kernel and ragged matmuls (attention=flash, "
               "sparse_matmul=true)";
    }
    return NULL;
}

/* The gated DeltaNet as the qwen3_next graph runs it: its q and k heads
   repeated to the value heads (models/qwen3.py at e591f30 repeats them
   when the value heads are a multiple; other counts do not run), and the
   delta rule's chunks whole over the sequence (MaxText pads the last
   chunk, which the graph does not model). */
static remat_status_t check_gdn(const remat_config_t *c, remat_error_t *err) {
    if (c->gdn_num_value_heads % c->gdn_num_key_heads) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "gdn_num_value_heads=%llu is not a multiple of "
                               "gdn_num_key_heads=%llu: MaxText's gated DeltaNet repeats each "
                               "key head over a whole number of value heads",
                               (unsigned long long)c->gdn_num_value_heads,
                               (unsigned long long)c->gdn_num_key_heads);
    }
    if (c->max_target_length % c->gdn_chunk_size) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "gdn_chunk_size=%llu does not divide max_target_length=%llu: "
                               "MaxText pads the gated DeltaNet's last chunk, which the "
                               "qwen3_next graph does not model",
                               (unsigned long long)c->gdn_chunk_size,
                               (unsigned long long)c->max_target_length);
    }
    return REMAT_OK;
}

/* @p text without its spaces into @p out (@p n bytes). */
static void unspaced(const char *text, char *out, size_t n) {
    size_t k = 0;
    for (; *text && k + 1 < n; text++) {
        if (*text != ' ') {
            out[k++] = *text;
        }
    }
    out[k] = '\0';
}

/* What makes MaxText's encoder other than the graph's in the keys every
   encoder reads (frozen, fp32, its layer count); NULL when none. */
static const char *encoder_mismatch(const remat_config_t *c, size_t v, char *key, size_t n) {
    const char *why = NULL;
    if (!c->freeze_vision_encoder_params) {
        snprintf(key, n, "freeze_vision_encoder_params=false");
        why = "the encoder's backward and its params' gradients are not modelled (MaxText's "
              "default true stops them)";
    } else if (c->dtype_mm != REMAT_DTYPE_F32) {
        snprintf(key, n, "dtype_mm=%s", remat_dtype_name(c->dtype_mm));
        why = "the graph's encoder computes in float32, MaxText's default";
    } else if (c->num_hidden_layers_for_vit != vision_graphs[v].layers) {
        snprintf(key, n, "num_hidden_layers_for_vit=%llu",
                 (unsigned long long)c->num_hidden_layers_for_vit);
        why = "the graph's encoder has another count of layers";
    }
    return why;
}

/* Qwen3-VL's encoder against the graph's, or a size its shapes cannot
   take; NULL when none. */
static const char *qwen3_vl_mismatch(const remat_config_t *c, size_t v, char *key, size_t n) {
    char ds[sizeof c->deepstack_visual_indexes_for_vit];
    unspaced(c->deepstack_visual_indexes_for_vit, ds, sizeof ds);
    const uint64_t p = c->patch_size_for_vit, m = c->spatial_merge_size_for_vit;
    const char *why = NULL;
    if (c->scan_layers && strcmp(ds, "[]") != 0) {
        snprintf(key, n, "scan_layers=true");
        why = "MaxText adds the deepstack features between the first layers and refuses scanned "
              "layers with them (configs/types.py)";
    } else if ((why = encoder_mismatch(c, v, key, n))) {
        return why;
    } else if (strcmp(ds, vision_graphs[v].deepstack) != 0) {
        snprintf(key, n, "deepstack_visual_indexes_for_vit=%.63s",
                 c->deepstack_visual_indexes_for_vit);
        why = "the graph's deepstack mergers read other layers";
    } else if (c->out_hidden_size_for_vit != c->base_emb_dim) {
        snprintf(key, n, "out_hidden_size_for_vit=%llu",
                 (unsigned long long)c->out_hidden_size_for_vit);
        why = "the image tokens replace token embeddings: it must be base_emb_dim";
    } else if (p == 0 || m == 0 || c->image_size_for_vit % p || (c->image_size_for_vit / p) % m ||
               c->temporal_patch_size_for_vit == 0 || 2 % c->temporal_patch_size_for_vit ||
               c->hidden_size_for_vit % c->num_attention_heads_for_vit) {
        snprintf(key, n, "image_size_for_vit=%llu", (unsigned long long)c->image_size_for_vit);
        why = "patch_size_for_vit must divide it into a whole number of spatial_merge_size_for_vit "
              "merges a side, temporal_patch_size_for_vit divide MaxText's 2 frames and "
              "num_attention_heads_for_vit divide hidden_size_for_vit";
    }
    return why;
}

/* Gemma 3's image side (multimodal/processor_gemma3.py at e591f30:
   GEMMA_DEFAULT_IMAGE_SIZE, the dummy image train_compile feeds and the
   size every image is resized to) and the image tokens VisionExit pools
   its patch grid to (models/gemma3.py: output_length 256, a 16 x 16
   grid). */
enum { GEMMA3_IMAGE_SIDE = 896, GEMMA3_IMAGE_TOKENS = 256, GEMMA3_TOKEN_GRID = 16 };

/* Gemma 3's encoder against the graph's, or a size its shapes cannot
   take; NULL when none. It reads none of Qwen3-VL's merge, frame or
   deepstack keys, and runs under scanned layers. */
static const char *gemma3_mismatch(const remat_config_t *c, size_t v, char *key, size_t n) {
    const uint64_t p = c->patch_size_for_vit;
    const char *why = encoder_mismatch(c, v, key, n);
    if (why) {
        return why;
    }
    if (c->image_size_for_vit != GEMMA3_IMAGE_SIDE) {
        snprintf(key, n, "image_size_for_vit=%llu", (unsigned long long)c->image_size_for_vit);
        why = "MaxText feeds Gemma 3's encoder 896 x 896 images (multimodal/processor_gemma3.py), "
              "whose patches the position table of (image_size_for_vit / patch_size_for_vit)^2 "
              "rows must match: it must be 896";
    } else if (p == 0 || GEMMA3_IMAGE_SIDE % p || (GEMMA3_IMAGE_SIDE / p) % GEMMA3_TOKEN_GRID) {
        snprintf(key, n, "patch_size_for_vit=%llu", (unsigned long long)p);
        why = "it must cut the image's 896 pixels a side into a multiple of 16 patches, which "
              "the encoder's pool averages to 16 x 16 image tokens";
    } else if (c->conv_stride_for_vit != p) {
        snprintf(key, n, "conv_stride_for_vit=%llu", (unsigned long long)c->conv_stride_for_vit);
        why = "the graph's patch Conv strides by its kernel, patch_size_for_vit (as MaxText's "
              "Gemma 3 configs set both)";
    } else if (c->num_attention_heads_for_vit == 0 ||
               c->hidden_size_for_vit % c->num_attention_heads_for_vit) {
        snprintf(key, n, "num_attention_heads_for_vit=%llu",
                 (unsigned long long)c->num_attention_heads_for_vit);
        why = "it must divide hidden_size_for_vit into whole heads";
    }
    return why;
}

/* Llama 4's tile side (multimodal/processor_llama4.py LLAMA4_TILE_SIZE at
   e591f30: the dummy image's tiles and the size every tile is cut to). */
enum { LLAMA4_TILE_SIDE = 336 };

uint64_t remat_i_config_vit_shuffle(const remat_config_t *c) {
    const double r = c->pixel_shuffle_ratio_for_vit;
    if (!(r > 0) || r > 1) {
        return 0;
    }
    const double m = 1.0 / r;
    const double whole = floor(m + 0.5);
    return whole <= 64 && fabs(m - whole) < 1e-9 * whole ? (uint64_t)whole : 0;
}

/* Llama 4's tile against the graph's: MaxText sizes the unfold from the
   tile (336), the RoPE and the attention from image_size_for_vit and the
   position table from tile_size_for_vit, which must all agree; NULL when
   they do. */
static const char *llama4_tile_mismatch(const remat_config_t *c, char *key, size_t n) {
    const uint64_t p = c->patch_size_for_vit, m = remat_i_config_vit_shuffle(c);
    const char *why = NULL;
    if (c->image_size_for_vit != LLAMA4_TILE_SIDE) {
        snprintf(key, n, "image_size_for_vit=%llu", (unsigned long long)c->image_size_for_vit);
        why = "MaxText feeds Llama 4's encoder 336 x 336 tiles (multimodal/processor_llama4.py), "
              "whose patches its RoPE and attention size by this key: it must be 336";
    } else if (c->tile_size_for_vit != LLAMA4_TILE_SIDE) {
        snprintf(key, n, "tile_size_for_vit=%llu", (unsigned long long)c->tile_size_for_vit);
        why = "the position table has a row per patch of a tile of this side, and MaxText's "
              "tiles are 336: it must be 336";
    } else if (p == 0 || LLAMA4_TILE_SIDE % p) {
        snprintf(key, n, "patch_size_for_vit=%llu", (unsigned long long)p);
        why = "it must cut the tile's 336 pixels a side into whole patches";
    } else if (m == 0 || (LLAMA4_TILE_SIDE / p) % m) {
        snprintf(key, n, "pixel_shuffle_ratio_for_vit=%g", c->pixel_shuffle_ratio_for_vit);
        why = "its inverse must be a whole number (at most 64) of patches that divides the "
              "tile's patches a side";
    }
    return why;
}

/* Llama 4's encoder against the graph's, or a size its shapes cannot
   take; NULL when none. It reads none of Qwen3-VL's merge, frame or
   deepstack keys, and runs under scanned layers. */
static const char *llama4_mismatch(const remat_config_t *c, size_t v, char *key, size_t n) {
    const char *why = encoder_mismatch(c, v, key, n);
    if (!why) {
        why = llama4_tile_mismatch(c, key, n);
    }
    if (why) {
        return why;
    }
    const uint64_t m = remat_i_config_vit_shuffle(c), h = c->num_attention_heads_for_vit;
    if (c->intermediate_size_for_vit != c->hidden_size_for_vit * m * m) {
        snprintf(key, n, "intermediate_size_for_vit=%llu",
                 (unsigned long long)c->intermediate_size_for_vit);
        why = "MaxText's adapter MLP reads the pixel-shuffled tokens as this width: it must be "
              "hidden_size_for_vit / pixel_shuffle_ratio_for_vit^2";
    } else if (c->vision_output_dim_for_vit != c->projector_output_dim_for_vit) {
        snprintf(key, n, "vision_output_dim_for_vit=%llu",
                 (unsigned long long)c->vision_output_dim_for_vit);
        why = "the projector reads the adapter's output: it must be projector_output_dim_for_vit";
    } else if (h == 0 || c->hidden_size_for_vit % h || (c->hidden_size_for_vit / h) % 4) {
        snprintf(key, n, "num_attention_heads_for_vit=%llu", (unsigned long long)h);
        why = "it must divide hidden_size_for_vit into heads a multiple of 4 wide (the 2D "
              "RoPE's x and y pairs)";
    } else if (strcmp(c->matmul_precision, "default") != 0) {
        snprintf(key, n, "matmul_precision=%s", c->matmul_precision);
        why = "the graph holds the encoder's fp32 matmul operands in bf16, as XLA:TPU writes "
              "them at MaxText's default precision (docs/validation.md, Llama 4's vision "
              "encoder); another precision keeps them fp32";
    }
    return why;
}

/* The encoder of vision graph @p v against the config; NULL when none
   differs (check_vision). */
static const char *vision_mismatch(const remat_config_t *c, size_t v, char *key, size_t n) {
    const char *enc = vision_graphs[v].encoder;
    return strcmp(enc, "gemma3") == 0   ? gemma3_mismatch(c, v, key, n)
           : strcmp(enc, "llama4") == 0 ? llama4_mismatch(c, v, key, n)
                                        : qwen3_vl_mismatch(c, v, key, n);
}

bool remat_i_config_vit_gemma3(const remat_config_t *c) {
    const size_t v = remat_i_is_json_name(c->graph) ? REMAT_NONE : vision_of(c->graph);
    return v != REMAT_NONE && strcmp(vision_graphs[v].encoder, "gemma3") == 0;
}

bool remat_i_config_vit_llama4(const remat_config_t *c) {
    const size_t v = remat_i_is_json_name(c->graph) ? REMAT_NONE : vision_of(c->graph);
    return v != REMAT_NONE && strcmp(vision_graphs[v].encoder, "llama4") == 0;
}

uint64_t remat_i_config_vit_tokens(const remat_config_t *c) {
    if (remat_i_config_vit_gemma3(c)) {
        return GEMMA3_IMAGE_TOKENS;
    }
    if (remat_i_config_vit_llama4(c)) {
        const uint64_t p = c->patch_size_for_vit, m = remat_i_config_vit_shuffle(c);
        if (p == 0 || m == 0 || c->image_size_for_vit / p >= ((uint64_t)1 << 30)) {
            return 0;
        }
        const uint64_t side = c->image_size_for_vit / p;
        return REMAT_LLAMA4_TILES * (side / m) * (side / m);
    }
    const uint64_t p = c->patch_size_for_vit, t = c->temporal_patch_size_for_vit;
    const uint64_t m = c->spatial_merge_size_for_vit;
    /* a side past 2^30 patches holds no image remat can size: 0 */
    if (p == 0 || t == 0 || m == 0 || c->image_size_for_vit / p >= ((uint64_t)1 << 30) ||
        m > c->image_size_for_vit / p) {
        return 0;
    }
    const uint64_t side = c->image_size_for_vit / p;
    return (2 / t) * side * side / (m * m);
}

uint64_t remat_i_config_vit_images(const remat_config_t *c) {
    const uint64_t tokens = remat_i_config_vit_tokens(c);
    if (c->image_token_share < 0) {
        return 1;
    }
    const double share_tokens = floor(c->image_token_share * (double)c->max_target_length);
    return tokens ? (uint64_t)(share_tokens / (double)tokens) : 0;
}

/* A graph with a vision encoder: the config's encoder must be the graph's,
   and image_token_share (when set) a share that holds one image or more. */
static remat_status_t check_vision(const remat_config_t *c, size_t v, remat_error_t *err) {
    char key[128];
    const char *why = vision_mismatch(c, v, key, sizeof key);
    if (why) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "%s: %s (the %s graph)", key, why,
                               vision_graphs[v].graph);
    }
    /* the parser took -1 or a share in (0, 1]; the share must hold an image */
    if (c->image_token_share >= 0 && remat_i_config_vit_images(c) == 0) {
        const uint64_t tokens = remat_i_config_vit_tokens(c);
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "image_token_share=%g: %.0f of max_target_length=%llu tokens hold "
                               "no whole image of %llu tokens (a larger share, or -1: one image "
                               "an example)",
                               c->image_token_share,
                               floor(c->image_token_share * (double)c->max_target_length),
                               (unsigned long long)c->max_target_length,
                               (unsigned long long)tokens);
    }
    return REMAT_OK;
}

/* A graph with the audio encoder's params: MaxText builds the encoder for
   model_name qwen3-omni-30b-a3b alone (layers/encoders.py AudioEncoder at
   e591f30 raises for any other), with three convs whatever
   num_conv_layers_for_audio says, heads that divide its width, and a
   projector whose output init merges into the token embeddings. */
static remat_status_t check_audio(remat_config_t *c, remat_error_t *err) {
    const char *why = NULL;
    char key[96];
    if (strcmp(c->model_name, "qwen3-omni-30b-a3b") != 0) {
        snprintf(key, sizeof key, "model_name=%.60s", c->model_name);
        why = "MaxText builds an audio encoder for model_name qwen3-omni-30b-a3b alone";
    } else if (c->num_conv_layers_for_audio != 3) {
        snprintf(key, sizeof key, "num_conv_layers_for_audio=%llu",
                 (unsigned long long)c->num_conv_layers_for_audio);
        why = "MaxText's audio encoder builds 3 convs whatever the key says";
    } else if (c->d_model_for_audio % c->encoder_attention_heads_for_audio) {
        snprintf(key, sizeof key, "encoder_attention_heads_for_audio=%llu",
                 (unsigned long long)c->encoder_attention_heads_for_audio);
        why = "the heads must divide d_model_for_audio";
    } else if (c->output_dim_for_audio != c->base_emb_dim) {
        snprintf(key, sizeof key, "output_dim_for_audio=%llu",
                 (unsigned long long)c->output_dim_for_audio);
        why = "the audio tokens replace token embeddings: it must be base_emb_dim";
    }
    if (why) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "%s: %s (the qwen3_omni graph)",
                               key, why);
    }
    remat_i_config_note(c, "use_audio=true: MaxText's train step passes the model no audio "
                           "(train.py's loss_fn), so the audio encoder's params and optimizer "
                           "state are held and none of it runs");
    if (!c->freeze_audio_encoder_params) {
        remat_i_config_note(c, "freeze_audio_encoder_params=false: no gradient reaches the audio "
                               "encoder either way, the step does not run it");
    }
    return REMAT_OK;
}

/* use_audio=false on a graph with the audio encoder's params: MaxText
   then builds no audio encoder, and the step is the graph's twin without
   them (Qwen3-Omni's is Qwen3-VL's graph, vision and text). */
static void audio_twin(remat_config_t *c) {
    const size_t a = audio_of(c->graph);
    if (a != REMAT_NONE && !c->use_audio) {
        remat_i_config_note(c, "use_audio=false: the %s graph without the audio encoder, %s",
                            audio_graphs[a].graph, audio_graphs[a].without);
        snprintf(c->graph, sizeof c->graph, "%s", audio_graphs[a].without);
    }
}

static remat_status_t check_layer_keys(remat_config_t *c, remat_error_t *err) {
    if (strcmp(c->attention_type, "global") != 0 && strcmp(c->attention_type, "mla") != 0) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "attention_type=%s: remat's graphs run global attention, MLA, and "
                               "the local and global layers their stacks name",
                               c->attention_type);
    }
    const graph_features_t *f = remat_i_is_json_name(c->graph) ? NULL : features_of(c->graph);
    remat_status_t st = f ? keys_fit(c, f, err) : REMAT_OK; /* a graph file: its own structure */
    if (st == REMAT_OK && c->use_indexer) {
        st = check_indexer(c, f, err);
    }
    const char *split = c->use_batch_split_schedule ? batch_split_refusal(c, f) : NULL;
    if (st == REMAT_OK && split) {
        st = remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "use_batch_split_schedule=true: %s",
                             split);
    }
    if (st == REMAT_OK && f && strcmp(text_graph_of(f->graph), "qwen3_next") == 0) {
        st = check_gdn(c, err);
    }
    if (st == REMAT_OK && f && vision_of(f->graph) != REMAT_NONE) {
        st = check_vision(c, vision_of(f->graph), err);
    }
    if (st == REMAT_OK && f && audio_of(f->graph) != REMAT_NONE) {
        st = check_audio(c, err);
    }
    return st == REMAT_OK && f && f->ple ? check_unscanned(c, err) : st;
}

remat_status_t remat_config_check_scan(const remat_config_t *c, remat_error_t *err) {
    const graph_features_t *f = remat_i_is_json_name(c->graph) ? NULL : features_of(c->graph);
    if (f && f->ple) {
        return check_unscanned(c, err);
    }
    const size_t v = f ? vision_of(f->graph) : REMAT_NONE;
    return v != REMAT_NONE ? check_vision(c, v, err) : REMAT_OK;
}

/* Whether the config's decoder_block (any when unset) runs built-in graph
   @p graph: the qwen3_next graph is Qwen3-Next's and Qwen3.5's, and only
   Qwen3.5 has a vision encoder. */
static bool block_runs(const remat_config_t *c, const char *graph) {
    if (!c->decoder_block[0]) {
        return true;
    }
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (strcmp(c->decoder_block, blocks[i].block) == 0) {
            return blocks[i].graph && in_list(blocks[i].graph, graph);
        }
    }
    return false;
}

/* use_multimodal=true on a built-in text graph that has a multimodal
   variant runs the variant (vision_graphs' text column) when the decoder
   block has it: MaxText's users turn the encoder on with the model's
   config and that key alone. Otherwise the text graph stays, and
   keys_fit names the key it lacks an encoder for. */
static void vision_variant(remat_config_t *c) {
    if (!c->use_multimodal || remat_i_is_json_name(c->graph)) {
        return;
    }
    for (size_t i = 0; i < sizeof vision_graphs / sizeof vision_graphs[0]; i++) {
        if (vision_graphs[i].text && strcmp(vision_graphs[i].text, c->graph) == 0 &&
            block_runs(c, vision_graphs[i].graph)) {
            snprintf(c->graph, sizeof c->graph, "%s", vision_graphs[i].graph);
            return;
        }
    }
}

remat_status_t remat_i_config_check_maxtext(remat_config_t *c, remat_error_t *err) {
    vision_variant(c);
    audio_twin(c);
    remat_status_t st = check_block(c, err);
    if (st == REMAT_OK) {
        st = check_layer_keys(c, err);
    }
    if (st == REMAT_OK && c->use_tokamax_splash && !c->use_indexer) {
        /* remat reads the key for the indexer's kernel only: said, not
           dropped silently */
        remat_i_config_note(c, "use_tokamax_splash=true without use_indexer: remat models "
                               "MaxText's default splash kernel for the flash path");
    }
    if (st == REMAT_OK && c->gpu_assumed && strcmp(c->hardware, "h100") == 0) {
        remat_i_config_note(c, "hardware=gpu names no GPU: assumed h100 (MaxText's a3 recipes); "
                               "hardware=h200 or b200 for another");
    }
    return st;
}
