/* SPDX-License-Identifier: MIT */
/*
 * remat/input/config.h: the model/run configuration, with MaxText's key names.
 *
 * A config is built in layers: base defaults (MaxText's base.yml), then the
 * model preset named by model_name (models/NAME.json), then remat's default
 * run when the settings describe no model (no model_name, graph or model
 * size), then a config file (JSON, or MaxText YAML with its base_config
 * chain), then key=value arguments; later layers win. Every key is typed
 * and checked; an unknown key is an error that suggests the nearest known
 * one.
 */
#ifndef REMAT_CONFIG_H
#define REMAT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"
#include "remat/model/graph.h"
#include "remat/model/mesh.h"
#include "remat/model/policy.h"

/* REMAT_STR_LEN, REMAT_BYTES_MAX, REMAT_MAX_LAYERS: remat/base/limits.h */

typedef struct remat_config {
    char model_name[REMAT_STR_LEN];
    char graph[REMAT_STR_LEN];        /* built-in graph name or a file path */
    char attention[32];               /* flash | dot_product */
    char hardware[REMAT_STR_LEN];     /* built-in profile name or a file path */
    char remat_policy[REMAT_STR_LEN]; /* preset name, "custom", or a file path */
    char opt_type[32];                /* adamw | adam_pax | sgd | adafactor */
    /* opt_type, parsed once where it is set, so that the analysis reads an
       enum: the moments it keeps. */
    enum { REMAT_OPT_ADAM, REMAT_OPT_SGD, REMAT_OPT_ADAFACTOR } optimizer;
    char quantization[32];            /* "" or fp8 (FP8 einsum residuals, gathers) */
    char logical_axis_rules[REMAT_RULES_LEN]; /* overrides: "logical:axis+axis,..." */
    bool override_logical_axis_rules; /* the rules above replace MaxText's defaults */
    int64_t ici[REMAT_AXIS_COUNT];    /* ici_<axis>_parallelism; -1 fills */
    int64_t dcn[REMAT_AXIS_COUNT];    /* dcn_<axis>_parallelism */
    uint64_t num_pipeline_microbatches; /* 0: one per stage */
    uint64_t num_layers_per_pipeline_stage; /* layers a stage runs per pipeline iteration (1) */
    bool pipeline_delay_activation_forwarding; /* a stage's output reaches the next one
                                                  iteration later: d = 2 bubble slots a stage */
    bool use_qwix_quantization;
    bool optimizer_memory_host_offload, parameter_memory_host_offload;
    bool fsdp_prefetch;               /* the next layer's weights are gathered early */
    bool allow_split_physical_axes;   /* JAX may split a slice's physical axes (mesh_layout.h) */
    uint64_t base_emb_dim, base_num_query_heads, base_num_kv_heads, head_dim, base_mlp_dim;
    uint64_t base_num_decoder_layers, vocab_size, max_target_length;
    uint64_t gradient_accumulation_steps, num_vocab_tiling, num_devices;
    /* rows of the learned position table (the gpt3 graph's); 0: MaxText's
       -1, no table */
    uint64_t trainable_position_size;
    bool num_devices_set;             /* num_devices given (else topology or the mesh decide) */
    char topology[64];                /* NAME-N or NAME-AxBxC as MaxText spells slices; "" if unset */
    double per_device_batch_size;
    remat_dtype_t dtype, weight_dtype, grad_dtype, mu_dtype;
    bool mu_dtype_set;                /* else mu_dtype follows weight_dtype */
    bool scan_layers;
    bool enable_dropout;              /* MaxText's switch; dropout runs when the rate is > 0 too */
    double dropout_rate;
    uint64_t hbm_budget;              /* bytes; 0 = the hardware's HBM */
    uint64_t hbm_reserve;             /* bytes held back for runtime/compiler */
    double safety_margin;             /* fraction of the budget (check) */
    double host_link_bw;              /* bytes/s per direction; 0 = hardware's */
    double matmul_efficiency, attention_efficiency, memory_efficiency; /* 0 = hardware's */
    double reserve_fraction;          /* of the transient bytes */
    bool reserve_fraction_set;        /* else the hardware profile's */
    size_t ncustom;                   /* custom policy keys (query_proj=device ...) */
    remat_policy_rule_t custom[REMAT_MAX_CUSTOM];
    /* custom[i] is not one of MaxText's names: a graph file's own name,
       which remat_resolve checks against the graph it loads. */
    bool custom_graph_name[REMAT_MAX_CUSTOM];
    char custom_source[REMAT_ERR_SOURCE_LEN]; /* where the first custom key came from */
    /* MaxText keys remat reads to check the graph against the model
       (config_maxtext.c): they select nothing, they refuse a mismatch. */
    char decoder_block[32];           /* "" unset; llama2, mistral, gpt3 are remat's graphs */
    char attention_type[32];          /* global (default) or another MaxText kind */
    char mlp_activations[128];        /* as written, e.g. ['silu', 'linear']; "" unset */
    bool logits_via_embedding;        /* MaxText's tied output head */
    bool use_qk_norm, use_post_attn_norm, use_post_ffw_norm; /* MaxText's; true is refused */
    /* MaxText's attention switches a graph is built with or without (Gemma
       4's global layers share one key/value projection; its value norm has
       no scale): a value the graph lacks is refused */
    bool share_kv_projections, v_norm_with_scale;
    bool logits_via_embedding_set;
    bool graph_set;                   /* graph given (else the model's, or llama's) */
    int64_t num_experts;              /* MaxText's; above 1 needs an MoE graph */
    /* MoE, MLA and attention windows: graphs bind dims and stack rules to
       them (docs/config.md, "Mixture of experts, MLA, windows"). */
    uint64_t num_experts_per_tok, base_moe_mlp_dim, shared_experts;
    uint64_t first_num_dense_layers, interleave_moe_layer_step;
    uint64_t inhomogeneous_layer_cycle_interval; /* layers per scanned block (llama4 4,
                                                    gpt_oss 2): one remat unit; 1: a layer */
    uint64_t q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    uint64_t sliding_window_size, chunk_attn_window_size, mtp_num_layers;
    /* Gemma 4's global layers' head dim and key/value heads; 0 (MaxText's
       default): head_dim and base_num_kv_heads, as a graph's dims read
       them (remat_config_size) */
    uint64_t global_head_dim, global_num_kv_heads;
    /* Gemma 4 E2B and E4B (decoder_block gemma4_small): the per-layer
       inputs' width and their table's rows, the last layers that reuse an
       earlier layer's keys and values, and those layers' MLP twice as wide;
       the gemma4_small graph binds them (and sizes derived from them,
       remat_config_size) */
    uint64_t hidden_size_per_layer_input, vocab_size_per_layer_input, num_kv_shared_layers;
    bool use_double_wide_mlp;
    /* DeepSeek-V3.2's sparse-attention indexer (MLA, use_indexer): its
       heads, head dim and the keys each query keeps; the training stage
       (sparse training, or the dense warm-up) and its KL loss's weight;
       the splash kernel that takes its mask (use_tokamax_splash). The
       deepseek graph's .indexer variant binds them (docs/config.md). */
    bool use_indexer, indexer_sparse_training, use_tokamax_splash;
    /* DeepSeek-V3's batch-split schedule (use_batch_split_schedule): the
       MoE layers in MaxText's own scan on batch_split_factor parts of the
       batch (2 is the value it runs); the deepseek graph's .batchsplit
       variant */
    bool use_batch_split_schedule;
    uint64_t batch_split_factor;
    uint64_t indexer_n_heads, indexer_head_dim, indexer_topk;
    double indexer_loss_scaling_factor;
    /* Qwen3-Next and Qwen3.5 (decoder_block qwen3_next, qwen3_5): the gated
       DeltaNet's conv kernel, key and value heads and head dims, and the
       delta rule's chunk; the qwen3_next graph binds them (and sizes
       derived from them, remat_config_size). MaxText's defaults (base.yml):
       4, 16, 32, 128, 128, 64 */
    uint64_t gdn_conv_kernel_dim, gdn_num_key_heads, gdn_num_value_heads;
    uint64_t gdn_key_head_dim, gdn_value_head_dim, gdn_chunk_size;
    /* The vision encoders of Qwen3-VL, Gemma 3, Qwen3.5 and Llama 4
       (use_multimodal; the qwen3_vl, gemma3_vision, qwen3_5_vision and
       llama4*_vision graphs): MaxText's *_for_vit keys (base.yml defaults
       at e591f30; conv_stride_for_vit is Gemma 3's patch Conv's stride;
       tile_size_for_vit, the pixel shuffle's ratio, the adapter's widths
       and vision_output_dim_for_vit are Llama 4's), whether the encoder is
       frozen and its compute
       dtype (dtype_mm), and remat's image_token_share, the share of each
       example's tokens that are image tokens (< 0: MaxText's
       train_compile, one image an example); the graphs bind them and sizes
       derived from them (remat_config_size) */
    bool use_multimodal, freeze_vision_encoder_params;
    remat_dtype_t dtype_mm;
    uint64_t hidden_size_for_vit, intermediate_size_for_vit, num_attention_heads_for_vit;
    uint64_t num_hidden_layers_for_vit, image_size_for_vit, patch_size_for_vit;
    uint64_t temporal_patch_size_for_vit, spatial_merge_size_for_vit, num_channels_for_vit;
    uint64_t num_position_embeddings_for_vit, out_hidden_size_for_vit, conv_stride_for_vit;
    uint64_t tile_size_for_vit, projector_input_dim_for_vit, projector_output_dim_for_vit;
    uint64_t vision_output_dim_for_vit;
    double pixel_shuffle_ratio_for_vit;
    /* MaxText's matmul_precision as set (default "default"): no figure
       reads it, but the Llama 4 encoder graphs hold its fp32 matmuls'
       operands in bf16 as XLA:TPU does at DEFAULT precision, and refuse
       another */
    char matmul_precision[64]; /* MaxText's values are under 20 characters */
    char deepstack_visual_indexes_for_vit[64]; /* MaxText's list, as flow text */
    double image_token_share;
    /* Qwen3-Omni's audio encoder (use_audio; the qwen3_omni graph):
       MaxText's *_for_audio sizes that shape its params (base.yml
       defaults at e591f30) and whether it is frozen; MaxText's train step
       runs none of it (docs/config.md), so they size params alone */
    bool use_audio, freeze_audio_encoder_params;
    uint64_t d_model_for_audio, encoder_layers_for_audio, encoder_attention_heads_for_audio;
    uint64_t encoder_ffn_dim_for_audio, num_mel_bins_for_audio, downsample_hidden_size_for_audio;
    uint64_t output_dim_for_audio, num_conv_layers_for_audio;
    int64_t nope_layer_interval;      /* Llama 4's global (NoPE) layers; <= 0: none */
    bool sparse_matmul;               /* MaxText's default: Megablox grouped matmul */
    double capacity_factor;           /* the dense path's token dropping; <= 0: none */
    double ragged_buffer_factor;      /* expert-parallel receive buffer; <= 0: worst case */
    uint64_t wi_tile_fwd_batch_seq;   /* Megablox's row tile (the time model's group padding) */
    uint64_t sa_block_kv;             /* the flash kernel's key block (a window's whole blocks) */
    int64_t num_slices;               /* slices of the topology; -1 (MaxText's default): one */
    bool num_devices_assumed;         /* nothing gave the device count: one device */
    bool default_run;                 /* no model was described: remat's default run stands
                                         under the settings (remat_config_default_run) */
    bool gpu_assumed;                 /* hardware=gpu picked h100 */
    /* For the user, not the analysis: notes one per line, each ending in
       '\n' (assumptions made, MaxText settings adjusted), and the MaxText
       keys that were set but that remat does not model. */
    char notes[1024];
    char unused_keys[1024];           /* ", "-separated, "..." once full */
    size_t nunused;
} remat_config_t;

/** Sets MaxText's base.yml defaults (model_name "default", its 16-layer
    model) and remat's own (tpu7x, remat_policy=full). */
void remat_config_defaults(remat_config_t *c);

/**
 * Builds a config from an optional config file (@p file, may be NULL: JSON,
 * or MaxText YAML when it ends in .yml/.yaml or does not open with '{';
 * "-" reads standard input) and key=value arguments (@p args, may be 0).
 * The model preset named by the last model_name among them is applied
 * under the user's keys. When they describe no model (no model_name, graph
 * or model size), remat's default run stands under them (its topology only
 * when they name no slice) and c->default_run is set. A remat_policy other
 * than custom in a later layer (the file over the default run, the
 * arguments over the file) replaces the custom placements of the layers
 * under it. A config file that sets nothing is an error.
 */
remat_status_t remat_config_build(const char *file, size_t nargs, char *const *args,
                                  remat_config_t *c, remat_error_t *err);

/** remat's default run, the settings a build with no model stands on: a
    published MaxText recipe that fits (docs/config.md, "The default run").
    The count, and the i-th setting as key=value (NULL past the count). */
size_t remat_config_default_run_count(void);
const char *remat_config_default_run(size_t i);

/** Applies one key=value (string form) to @p c. @p source/@p path for errors. */
remat_status_t remat_config_set(remat_config_t *c, const char *key, const char *value,
                                const char *source, const char *path, remat_error_t *err);

/** Whether @p key is an integer-valued config key a graph dim may bind to. */
bool remat_config_is_size_key(const char *key);

/** Whether the run spans several slices: num_slices above 1, or any
    dcn_<axis>_parallelism above 1. */
bool remat_config_several_slices(const remat_config_t *c);

/**
 * REMAT_OK where MaxText builds the run's layers with scan_layers as @p c
 * sets it; else REMAT_E_CONFIG, @p err saying why (decoder_block
 * gemma4_small runs layer by layer and refuses scan_layers=true, and so
 * does MaxText wherever Qwen3-VL's deepstack features are added). Checked
 * when a config is built; for callers that change scan_layers on a built
 * one (the fixes).
 */
remat_status_t remat_config_check_scan(const remat_config_t *c, remat_error_t *err);

/**
 * The integer a graph dim with `from: key` binds to. per_device_batch_size
 * binds to the global micro-batch: per_device_batch_size x num_devices /
 * gradient_accumulation_steps, which must be a whole number.
 */
remat_status_t remat_config_size(const remat_config_t *c, const char *key, uint64_t *out,
                                 remat_error_t *err);

/** Bytes of a dtype class under this config (act -> dtype, weight -> weight_dtype). */
unsigned remat_config_dtype_bytes(const remat_config_t *c, remat_dtype_t d);

/** Number of known keys and the i-th one's name and one-line help. */
size_t remat_config_nkeys(void);
const char *remat_config_key_name(size_t i);
const char *remat_config_key_help(size_t i);

/** Layers per remat unit: the layers MaxText scans as one block under one
    jax.checkpoint, whose backward re-runs them together (1 without
    scan_layers; Gemma 3's 6; inhomogeneous_layer_cycle_interval for llama4
    and gpt_oss; else 1). */
uint64_t remat_config_remat_unit(const remat_config_t *c);

/**
 * Resolves the mesh of @p cfg into @p mesh (caller's storage): -1 fills
 * the devices the other axes leave; the product must equal num_devices.
 * Then MaxText's default logical axis rules, with the config's
 * logical_axis_rules overriding them. REMAT_E_CONFIG naming the axis when
 * they do not multiply out (remat_mesh_build_spec, which this fills), or
 * when the topology's chip grid is known and JAX cannot lay the ICI mesh
 * out on it (mesh_layout.h; unless allow_split_physical_axes).
 */
remat_status_t remat_mesh_build(const remat_config_t *cfg, remat_mesh_t *mesh,
                                remat_error_t *err);

/** Pipeline micro-batches per step: num_pipeline_microbatches, by default
    one per stage (two with pipeline_delay_activation_forwarding); 1
    without a pipeline. */
uint64_t remat_mesh_microbatches(const remat_mesh_t *mesh, const remat_config_t *cfg);

#endif
