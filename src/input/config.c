/* SPDX-License-Identifier: MIT */
/*
 * config.c: the typed key table, value parsing, the model presets, the
 * device count and the checks of a built config (config.h);
 * config_build.c layers the settings.
 *
 * Invariants: the config is a fixed struct (a setting allocates nothing);
 * a key's value is checked where it is set, and what involves several
 * keys once every layer is applied (remat_i_config_check_built).
 */
#include "remat/input/config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "input/config_internal.h"
#include "input/config_maxtext.h"
#include "base/json_util.h"
#include "input/yaml_config.h"
#include "data/builtin_cache.h"
#include "data/builtin_data.h"
#include "data/maxtext_keys.h"

#include "remat/data/builtin.h"
#include "remat/input/topology.h"
#include "base/util.h"

/* K_COUNT: an integer that may be 0 (MaxText's "none": no shared experts,
   no dense layers first, no query low rank, no window), at most 10^9. */
/* K_AUTO: a positive integer, or MaxText's -1, "derive it" (base.yml's
   default for those keys), held as 0, remat's own "not set". */
typedef enum ktype {
    K_STR, K_U64, K_AUTO, K_COUNT, K_I64, K_F64, K_DTYPE, K_BOOL, K_BYTES, K_PLACE
} ktype_t;

typedef struct key {
    const char *name;
    ktype_t type;
    size_t offset;
    size_t size; /* K_STR: buffer size */
    const char *help;
} key_t_;

#define F(field) offsetof(remat_config_t, field), sizeof(((remat_config_t *)0)->field)
#define MESH(stem, i)                                                                            \
    {"ici_" stem "_parallelism", K_I64, offsetof(remat_config_t, ici) + (i) * sizeof(int64_t),    \
     sizeof(int64_t), "devices along the " stem " mesh axis within a slice (-1 fills)"},         \
    {"dcn_" stem "_parallelism", K_I64, offsetof(remat_config_t, dcn) + (i) * sizeof(int64_t),    \
     sizeof(int64_t), "slices along the " stem " mesh axis"}

static const key_t_ keys[] = {
    {"model_name", K_STR, F(model_name), "built-in model preset (remat list), or 'default'"},
    {"graph", K_STR, F(graph), "built-in graph name or a graph JSON file"},
    {"attention", K_STR, F(attention), "flash | dot_product (selects the built-in graph variant)"},
    {"hardware", K_STR, F(hardware), "built-in hardware profile or a profile JSON file"},
    {"remat_policy", K_STR, F(remat_policy), "preset name, 'custom', or a policy JSON file"},
    {"opt_type", K_STR, F(opt_type), "adamw | adam_pax | sgd | adafactor"},
    {"base_emb_dim", K_U64, F(base_emb_dim), "model width E"},
    {"base_num_query_heads", K_U64, F(base_num_query_heads), "query heads Hq"},
    {"base_num_kv_heads", K_U64, F(base_num_kv_heads), "key/value heads Hkv"},
    {"head_dim", K_U64, F(head_dim), "head dimension D"},
    {"base_mlp_dim", K_U64, F(base_mlp_dim), "MLP width M"},
    {"base_num_decoder_layers", K_U64, F(base_num_decoder_layers), "decoder layers L"},
    {"vocab_size", K_U64, F(vocab_size), "vocabulary size V"},
    {"max_target_length", K_U64, F(max_target_length), "sequence length S"},
    {"per_device_batch_size", K_F64, F(per_device_batch_size), "sequences per device per step"},
    {"gradient_accumulation_steps", K_U64, F(gradient_accumulation_steps),
     "micro-batches per step (activations are per micro-batch)"},
    {"trainable_position_size", K_AUTO, F(trainable_position_size),
     "rows of gpt3's learned position table (its ymls: 16384); -1: none"},
    {"num_vocab_tiling", K_U64, F(num_vocab_tiling),
     "chunks the logits/loss over tokens so one chunk's logits are live"},
    {"dtype", K_DTYPE, F(dtype), "activation dtype (bfloat16)"},
    {"weight_dtype", K_DTYPE, F(weight_dtype), "parameter dtype (float32)"},
    {"grad_dtype", K_DTYPE, F(grad_dtype), "gradient dtype (float32)"},
    {"mu_dtype", K_DTYPE, F(mu_dtype), "optimizer moment dtype (default: weight_dtype)"},
    {"scan_layers", K_BOOL, F(scan_layers), "layers run under a scan (MaxText default true)"},
    {"dropout_rate", K_F64, F(dropout_rate),
     "dropout probability (MaxText default 0): > 0 selects the graph's dropout variant"},
    {"enable_dropout", K_BOOL, F(enable_dropout), "dropout on when dropout_rate > 0 (default true)"},
    {"hbm_budget", K_BYTES, F(hbm_budget), "HBM budget per device in bytes (e.g. 90GiB); default: XLA's limit per device"},
    {"hbm_reserve", K_BYTES, F(hbm_reserve), "bytes held back for runtime and compiler temporaries"},
    {"safety_margin", K_F64, F(safety_margin), "fraction of the budget kept free by 'check' (0.05)"},
    {"host_link_bw", K_F64, F(host_link_bw),
     "host link bytes/s per direction per device; default: the profile's"},
    {"matmul_efficiency", K_F64, F(matmul_efficiency),
     "fraction of peak FLOP/s matmuls sustain (0, 1]; default: the hardware profile's"},
    {"attention_efficiency", K_F64, F(attention_efficiency),
     "fraction of peak FLOP/s the flash attention kernel sustains; default: the profile's"},
    {"reserve_fraction", K_F64, F(reserve_fraction),
     "XLA's temporaries, as a fraction of the transient bytes [0, 1); default: the profile's"},
    {"memory_efficiency", K_F64, F(memory_efficiency),
     "fraction of HBM bandwidth memory-bound ops sustain; default: the profile's"},
    {"num_devices", K_U64, F(num_devices), "devices in the run (the mesh's product)"},
    {"topology", K_STR, F(topology),
     "a slice as MaxText names it (tpu7x-128: 64 chips, 128 devices): sets hardware and num_devices"},
    {"logical_axis_rules", K_STR, F(logical_axis_rules),
     "overrides, e.g. activation_embed:,activation_norm_length:tensor"},
    {"override_logical_axis_rules", K_BOOL, F(override_logical_axis_rules),
     "logical_axis_rules replace MaxText's default rules instead of overriding them one by one"},
    {"quantization", K_STR, F(quantization),
     "'' (none) or fp8 / nanoo_fp8: weight-einsum residuals and gathers in fp8"},
    {"use_qwix_quantization", K_BOOL, F(use_qwix_quantization),
     "quantize through qwix (same memory as quantization alone; needs quantization)"},
    {"optimizer_memory_host_offload", K_BOOL, F(optimizer_memory_host_offload),
     "optimizer state lives in host RAM"},
    {"parameter_memory_host_offload", K_BOOL, F(parameter_memory_host_offload),
     "parameters live in host RAM between uses"},
    {"fsdp_prefetch", K_BOOL, F(fsdp_prefetch),
     "each op's FSDP gather is issued during the op before it (prefetch)"},
    {"num_slices", K_I64, F(num_slices),
     "slices of the topology (multiplies its devices); -1, MaxText's default: one"},
    {"allow_split_physical_axes", K_BOOL, F(allow_split_physical_axes),
     "JAX may split a physical axis of the slice between mesh axes (MaxText's default false: "
     "each ICI axis must be a product of whole ones)"},
    {"decoder_block", K_STR, F(decoder_block),
     "MaxText's layer kind, checked against the graph: llama2, mistral, qwen2 (llama), gpt3"},
    {"attention_type", K_STR, F(attention_type),
     "MaxText's attention kind: global (the graphs' kind); others are refused"},
    {"mlp_activations", K_STR, F(mlp_activations),
     "MaxText's MLP activations, checked against the graph: two (gated) for llama, one for gpt3"},
    {"logits_via_embedding", K_BOOL, F(logits_via_embedding),
     "MaxText's tied output head: the gpt3 graph ties it, the llama graph does not"},
    {"num_experts", K_I64, F(num_experts), "experts per MoE layer (an MoE graph above 1)"},
    {"num_experts_per_tok", K_U64, F(num_experts_per_tok), "experts each token is routed to (top-k)"},
    {"base_moe_mlp_dim", K_AUTO, F(base_moe_mlp_dim),
     "MLP width of one expert (-1, MaxText's default: none, for a dense model)"},
    {"shared_experts", K_COUNT, F(shared_experts),
     "shared experts: one dense MLP of shared_experts x base_moe_mlp_dim beside the routed ones"},
    {"first_num_dense_layers", K_COUNT, F(first_num_dense_layers),
     "the first layers that are dense, before the MoE layers (DeepSeek)"},
    {"interleave_moe_layer_step", K_U64, F(interleave_moe_layer_step),
     "layer i is MoE when (i + 1) is a multiple of it (Llama 4)"},
    {"inhomogeneous_layer_cycle_interval", K_U64, F(inhomogeneous_layer_cycle_interval),
     "layers per scanned block, one remat unit (llama4 4, gpt_oss 2; Gemma 3 scans 6 in code)"},
    {"sparse_matmul", K_BOOL, F(sparse_matmul),
     "MoE experts as grouped matmuls over routed tokens (Megablox); false is the dense path"},
    {"capacity_factor", K_F64, F(capacity_factor), "the dense MoE path's expert capacity"},
    {"ragged_buffer_factor", K_F64, F(ragged_buffer_factor),
     "expert-parallel receive buffer as a multiple of local routed tokens; <= 0: worst case"},
    {"wi_tile_fwd_batch_seq", K_U64, F(wi_tile_fwd_batch_seq),
     "Megablox's row tile: each local expert's group pads up to one (time model)"},
    {"sa_block_kv", K_U64, F(sa_block_kv),
     "the flash kernel's key block: a windowed layer computes whole blocks (time model)"},
    {"q_lora_rank", K_COUNT, F(q_lora_rank), "MLA: query low-rank width (0: a direct query weight)"},
    {"kv_lora_rank", K_U64, F(kv_lora_rank), "MLA: key/value low-rank width"},
    {"qk_nope_head_dim", K_U64, F(qk_nope_head_dim), "MLA: query/key head dims without RoPE"},
    {"qk_rope_head_dim", K_U64, F(qk_rope_head_dim), "MLA: query/key head dims with RoPE"},
    {"v_head_dim", K_U64, F(v_head_dim), "MLA: value head dims"},
    {"sliding_window_size", K_COUNT, F(sliding_window_size),
     "local attention's window (its layers' attention FLOPs scale by window / sequence)"},
    {"chunk_attn_window_size", K_COUNT, F(chunk_attn_window_size), "chunked attention's chunk"},
    {"global_head_dim", K_COUNT, F(global_head_dim),
     "Gemma 4: the global layers' head dimension (0: head_dim)"},
    {"global_num_kv_heads", K_COUNT, F(global_num_kv_heads),
     "Gemma 4: the global layers' key/value heads (0: base_num_kv_heads)"},
    {"hidden_size_per_layer_input", K_COUNT, F(hidden_size_per_layer_input),
     "Gemma 4 E2B/E4B: the per-layer input's width (the gemma4_small graph; 0: none)"},
    {"vocab_size_per_layer_input", K_COUNT, F(vocab_size_per_layer_input),
     "Gemma 4 E2B/E4B: rows of the per-layer input table (the gemma4_small graph)"},
    {"num_kv_shared_layers", K_COUNT, F(num_kv_shared_layers),
     "Gemma 4 E2B/E4B: the last layers reuse an earlier layer's keys and values (0: none)"},
    {"use_double_wide_mlp", K_BOOL, F(use_double_wide_mlp),
     "Gemma 4 E2B: the key/value-shared layers' MLP is twice base_mlp_dim"},
    {"use_multimodal", K_BOOL, F(use_multimodal),
     "Qwen3-VL, Gemma 3, Qwen3.5, Llama 4: run the vision encoder before the decoder (the "
     "qwen3_vl graphs; gemma3's, Qwen3.5's and llama4's multimodal variants, gemma3_vision, "
     "qwen3_5_vision and llama4*_vision)"},
    {"freeze_vision_encoder_params", K_BOOL, F(freeze_vision_encoder_params),
     "the encoder runs forward only, its params get no gradient (MaxText's default true; false "
     "is refused)"},
    {"dtype_mm", K_DTYPE, F(dtype_mm),
     "the vision encoder's compute dtype (MaxText's default float32; others are refused)"},
    {"hidden_size_for_vit", K_U64, F(hidden_size_for_vit), "the vision encoder's width"},
    {"intermediate_size_for_vit", K_U64, F(intermediate_size_for_vit),
     "the vision encoder's MLP width"},
    {"num_attention_heads_for_vit", K_U64, F(num_attention_heads_for_vit),
     "the vision encoder's attention heads"},
    {"num_hidden_layers_for_vit", K_U64, F(num_hidden_layers_for_vit),
     "the vision encoder's layers (checked against the graph's)"},
    {"image_size_for_vit", K_U64, F(image_size_for_vit), "the image's side in pixels"},
    {"patch_size_for_vit", K_U64, F(patch_size_for_vit), "a patch's side in pixels"},
    {"conv_stride_for_vit", K_U64, F(conv_stride_for_vit),
     "Gemma 3: the patch Conv's stride (patch_size_for_vit: the graph's patches do not overlap)"},
    {"tile_size_for_vit", K_U64, F(tile_size_for_vit),
     "Llama 4: a tile's side in pixels (its position table's patches; image_size_for_vit)"},
    {"pixel_shuffle_ratio_for_vit", K_F64, F(pixel_shuffle_ratio_for_vit),
     "Llama 4: the pixel shuffle's ratio (0.5: 2 x 2 patches an image token)"},
    {"projector_input_dim_for_vit", K_U64, F(projector_input_dim_for_vit),
     "Llama 4: the adapter MLP's hidden width"},
    {"projector_output_dim_for_vit", K_U64, F(projector_output_dim_for_vit),
     "Llama 4: the adapter MLP's output width (vision_output_dim_for_vit)"},
    {"vision_output_dim_for_vit", K_U64, F(vision_output_dim_for_vit),
     "Llama 4: the projector's input width (projector_output_dim_for_vit)"},
    {"temporal_patch_size_for_vit", K_U64, F(temporal_patch_size_for_vit),
     "frames per patch (MaxText's dummy image has 2 frames)"},
    {"spatial_merge_size_for_vit", K_U64, F(spatial_merge_size_for_vit),
     "patches merged per side into one image token"},
    {"num_channels_for_vit", K_U64, F(num_channels_for_vit), "the image's channels"},
    {"num_position_embeddings_for_vit", K_U64, F(num_position_embeddings_for_vit),
     "rows of the encoder's learned position table"},
    {"out_hidden_size_for_vit", K_U64, F(out_hidden_size_for_vit),
     "the image tokens' width (base_emb_dim: they replace token embeddings)"},
    {"deepstack_visual_indexes_for_vit", K_STR, F(deepstack_visual_indexes_for_vit),
     "the encoder layers whose outputs feed the first decoder layers (checked against the "
     "graph's)"},
    {"image_token_share", K_F64, F(image_token_share),
     "share of each example's max_target_length that is image tokens, a whole number of "
     "images (-1: MaxText's train_compile, one image an example)"},
    {"use_audio", K_BOOL, F(use_audio),
     "Qwen3-Omni: build the audio encoder (its params; MaxText's train step runs none of it)"},
    {"freeze_audio_encoder_params", K_BOOL, F(freeze_audio_encoder_params),
     "the audio encoder's stop_gradient (MaxText's default true; no gradient reaches the "
     "encoder either way: the step does not run it)"},
    {"d_model_for_audio", K_U64, F(d_model_for_audio), "the audio encoder's width"},
    {"encoder_layers_for_audio", K_U64, F(encoder_layers_for_audio),
     "the audio encoder's layers"},
    {"encoder_attention_heads_for_audio", K_U64, F(encoder_attention_heads_for_audio),
     "the audio encoder's attention heads (they divide d_model_for_audio)"},
    {"encoder_ffn_dim_for_audio", K_U64, F(encoder_ffn_dim_for_audio),
     "the audio encoder's MLP width"},
    {"num_mel_bins_for_audio", K_U64, F(num_mel_bins_for_audio),
     "mel bins of the audio input (they size the convs' output projection)"},
    {"downsample_hidden_size_for_audio", K_U64, F(downsample_hidden_size_for_audio),
     "the audio convs' channels"},
    {"output_dim_for_audio", K_U64, F(output_dim_for_audio),
     "the audio projector's output width (base_emb_dim)"},
    {"num_conv_layers_for_audio", K_U64, F(num_conv_layers_for_audio),
     "the audio convs (MaxText's encoder builds 3 whatever it says; others are refused)"},
    {"use_indexer", K_BOOL, F(use_indexer),
     "DeepSeek-V3.2: MLA's sparse-attention indexer (the deepseek graph's .indexer variant)"},
    {"indexer_n_heads", K_COUNT, F(indexer_n_heads), "DeepSeek-V3.2: the indexer's query heads"},
    {"indexer_head_dim", K_COUNT, F(indexer_head_dim),
     "DeepSeek-V3.2: the indexer's query and key head dim (its first qk_rope_head_dim rotated)"},
    {"indexer_topk", K_COUNT, F(indexer_topk), "DeepSeek-V3.2: the keys each query attends to"},
    {"indexer_sparse_training", K_BOOL, F(indexer_sparse_training),
     "DeepSeek-V3.2: the sparse training stage (false: MaxText's dense warm-up, refused)"},
    {"indexer_loss_scaling_factor", K_F64, F(indexer_loss_scaling_factor),
     "DeepSeek-V3.2: the indexer's KL loss weight (above 0 is refused)"},
    {"use_tokamax_splash", K_BOOL, F(use_tokamax_splash),
     "Tokamax's splash kernel: with use_indexer, the one that takes the indexer's mask"},
    {"gdn_conv_kernel_dim", K_U64, F(gdn_conv_kernel_dim),
     "Qwen3-Next/Qwen3.5: the gated DeltaNet's depthwise causal conv width (the qwen3_next graph)"},
    {"gdn_num_key_heads", K_U64, F(gdn_num_key_heads),
     "Qwen3-Next/Qwen3.5: the gated DeltaNet's query/key heads"},
    {"gdn_num_value_heads", K_U64, F(gdn_num_value_heads),
     "Qwen3-Next/Qwen3.5: the gated DeltaNet's value heads (a multiple of its key heads)"},
    {"gdn_key_head_dim", K_U64, F(gdn_key_head_dim),
     "Qwen3-Next/Qwen3.5: the gated DeltaNet's query/key head dimension"},
    {"gdn_value_head_dim", K_U64, F(gdn_value_head_dim),
     "Qwen3-Next/Qwen3.5: the gated DeltaNet's value head dimension"},
    {"gdn_chunk_size", K_U64, F(gdn_chunk_size),
     "Qwen3-Next/Qwen3.5: tokens per chunk of the gated DeltaNet's chunked delta rule"},
    {"nope_layer_interval", K_I64, F(nope_layer_interval),
     "layer i is a global (NoPE) attention layer when (i + 1) is a multiple of it (Llama 4); "
     "<= 0: none"},
    {"use_batch_split_schedule", K_BOOL, F(use_batch_split_schedule),
     "DeepSeek-V3: the MoE layers on MaxText's batch-split schedule (the deepseek graph's "
     ".batchsplit variant: two halves of the batch, the schedule's own residuals, each layer's "
     "weights gathered a layer ahead)"},
    {"batch_split_factor", K_U64, F(batch_split_factor),
     "the parts the batch-split schedule splits the batch into (MaxText's default 1; the "
     "schedule runs with 2 only)"},
    {"mtp_num_layers", K_COUNT, F(mtp_num_layers),
     "multi-token prediction layers (DeepSeek-V3): 1 selects the graph's .mtp variant; above 1 is "
     "refused"},
    {"use_qk_norm", K_BOOL, F(use_qk_norm), "MaxText's query/key norms; true is refused"},
    {"use_post_attn_norm", K_BOOL, F(use_post_attn_norm),
     "MaxText's norm after attention; true is refused"},
    {"use_post_ffw_norm", K_BOOL, F(use_post_ffw_norm), "MaxText's norm after the MLP; true is refused"},
    {"share_kv_projections", K_BOOL, F(share_kv_projections),
     "MaxText's one key/value projection (Gemma 4's global layers); refused where the graph differs"},
    {"v_norm_with_scale", K_BOOL, F(v_norm_with_scale),
     "MaxText's learned scale on the value norm (default true); refused where the graph differs"},
    {"num_pipeline_microbatches", K_AUTO, F(num_pipeline_microbatches),
     "micro-batches per step through the pipeline (default, or -1: the stage count, twice that "
     "with pipeline_delay_activation_forwarding; a multiple of it)"},
    {"num_layers_per_pipeline_stage", K_U64, F(num_layers_per_pipeline_stage),
     "layers a stage runs per pipeline iteration; the layers repeat over the stages "
     "L / (stages x this) times (MaxText default 1)"},
    {"pipeline_delay_activation_forwarding", K_BOOL, F(pipeline_delay_activation_forwarding),
     "a stage's output reaches the next stage one iteration later: 2 (S - 1) bubble "
     "iterations, not S - 1 (MaxText default false)"},
    MESH("data", 0), MESH("fsdp", 1), MESH("fsdp_transpose", 2), MESH("sequence", 3),
    MESH("tensor", 4), MESH("tensor_sequence", 5), MESH("context", 6), MESH("expert", 7),
    MESH("pipeline", 8), MESH("context_usp_ulysses", 9), MESH("autoregressive", 10),
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* MaxText's custom-policy keys, one per checkpoint name (policy.c). */
static size_t ncustom(void) {
    size_t n = 0;
    while (remat_policy_maxtext_name(n)) {
        n++;
    }
    return n;
}
#define NCUSTOM ncustom()

/* The keys a graph dim may take its size from (`from`, `div`), with their
   fields: remat_config_size runs for every dim of every analysis, so it
   looks here rather than through every key. per_device_batch_size is
   special (sequences per micro-batch, see remat_config_size). */
#define SIZE_FIELD(field) offsetof(remat_config_t, field)
static const struct {
    const char *name;
    size_t offset;
} size_keys[] = {
    {"base_emb_dim", SIZE_FIELD(base_emb_dim)},
    {"base_num_query_heads", SIZE_FIELD(base_num_query_heads)},
    {"base_num_kv_heads", SIZE_FIELD(base_num_kv_heads)},
    {"head_dim", SIZE_FIELD(head_dim)},
    {"base_mlp_dim", SIZE_FIELD(base_mlp_dim)},
    {"base_num_decoder_layers", SIZE_FIELD(base_num_decoder_layers)},
    {"vocab_size", SIZE_FIELD(vocab_size)},
    {"max_target_length", SIZE_FIELD(max_target_length)},
    {"trainable_position_size", SIZE_FIELD(trainable_position_size)},
    {"num_experts_per_tok", SIZE_FIELD(num_experts_per_tok)},
    {"base_moe_mlp_dim", SIZE_FIELD(base_moe_mlp_dim)},
    {"first_num_dense_layers", SIZE_FIELD(first_num_dense_layers)},
    {"batch_split_factor", SIZE_FIELD(batch_split_factor)},
    {"interleave_moe_layer_step", SIZE_FIELD(interleave_moe_layer_step)},
    {"q_lora_rank", SIZE_FIELD(q_lora_rank)},
    {"kv_lora_rank", SIZE_FIELD(kv_lora_rank)},
    {"qk_nope_head_dim", SIZE_FIELD(qk_nope_head_dim)},
    {"qk_rope_head_dim", SIZE_FIELD(qk_rope_head_dim)},
    {"v_head_dim", SIZE_FIELD(v_head_dim)},
    {"sliding_window_size", SIZE_FIELD(sliding_window_size)},
    {"chunk_attn_window_size", SIZE_FIELD(chunk_attn_window_size)},
    {"hidden_size_per_layer_input", SIZE_FIELD(hidden_size_per_layer_input)},
    {"vocab_size_per_layer_input", SIZE_FIELD(vocab_size_per_layer_input)},
    {"indexer_n_heads", SIZE_FIELD(indexer_n_heads)},
    {"indexer_head_dim", SIZE_FIELD(indexer_head_dim)},
    {"indexer_topk", SIZE_FIELD(indexer_topk)},
    {"inhomogeneous_layer_cycle_interval", SIZE_FIELD(inhomogeneous_layer_cycle_interval)},
    {"gdn_conv_kernel_dim", SIZE_FIELD(gdn_conv_kernel_dim)},
    {"gdn_num_key_heads", SIZE_FIELD(gdn_num_key_heads)},
    {"gdn_num_value_heads", SIZE_FIELD(gdn_num_value_heads)},
    {"gdn_key_head_dim", SIZE_FIELD(gdn_key_head_dim)},
    {"gdn_value_head_dim", SIZE_FIELD(gdn_value_head_dim)},
    {"gdn_chunk_size", SIZE_FIELD(gdn_chunk_size)},
    {"hidden_size_for_vit", SIZE_FIELD(hidden_size_for_vit)},
    {"intermediate_size_for_vit", SIZE_FIELD(intermediate_size_for_vit)},
    {"num_attention_heads_for_vit", SIZE_FIELD(num_attention_heads_for_vit)},
    {"num_position_embeddings_for_vit", SIZE_FIELD(num_position_embeddings_for_vit)},
    {"projector_input_dim_for_vit", SIZE_FIELD(projector_input_dim_for_vit)},
    {"projector_output_dim_for_vit", SIZE_FIELD(projector_output_dim_for_vit)},
    {"d_model_for_audio", SIZE_FIELD(d_model_for_audio)},
    {"encoder_layers_for_audio", SIZE_FIELD(encoder_layers_for_audio)},
    {"encoder_attention_heads_for_audio", SIZE_FIELD(encoder_attention_heads_for_audio)},
    {"encoder_ffn_dim_for_audio", SIZE_FIELD(encoder_ffn_dim_for_audio)},
    {"downsample_hidden_size_for_audio", SIZE_FIELD(downsample_hidden_size_for_audio)},
    {"output_dim_for_audio", SIZE_FIELD(output_dim_for_audio)},
    /* derived (remat_config_size): not settable */
    {"num_experts", 0},
    {"nope_layer_interval", 0},
    {"shared_mlp_dim", 0},
    {"qk_head_dim", 0},
    {"kv_a_dim", 0},
    {"kv_up_dim", 0},
    {"moe_buffer_factor", 0},
    {"expert_shards", 0},
    {"expert_capacity", 0},
    {"global_head_dim", 0},
    {"global_num_kv_heads", 0},
    {"per_layer_input_dim", 0},
    {"shared_layer_mlp_dim", 0},
    {"gemma4_small_period", 0},
    {"kv_shared_first", 0},
    {"kv_donor_local", 0},
    {"kv_donor_global", 0},
    {"indexer_nope_dim", 0},
    {"gdn_key_dim", 0},
    {"gdn_value_dim", 0},
    {"gdn_conv_dim", 0},
    {"gdn_qkvz_dim", 0},
    {"gdn_ba_dim", 0},
    {"gdn_num_chunks", 0},
    {"vit_patches", 0},
    {"vit_patch_volume", 0},
    {"vit_tokens", 0},
    {"vit_merged_dim", 0},
    {"vit_images", 0},
    {"vit_tiles", 0},
    {"vit_tile_patches", 0},
    {"vit_tile_tokens", 0},
    {"audio_conv_out_dim", 0},
    {"per_device_batch_size", 0},
};

size_t remat_config_nkeys(void) {
    return NKEYS + NCUSTOM;
}

const char *remat_config_key_name(size_t i) {
    return i < NKEYS ? keys[i].name : i < NKEYS + NCUSTOM ? remat_policy_maxtext_name(i - NKEYS) : NULL;
}

const char *remat_config_key_help(size_t i) {
    return i < NKEYS ? keys[i].help : "custom policy placement: remat | device | offload";
}

bool remat_config_is_size_key(const char *key) {
    for (size_t i = 0; i < sizeof size_keys / sizeof size_keys[0]; i++) {
        if (strcmp(key, size_keys[i].name) == 0) {
            return true;
        }
    }
    return false;
}

/* MaxText base.yml's vision and audio encoders (the Qwen3-VL, Gemma 3 and
   Qwen3-Omni presets override them). */
static void encoder_defaults(remat_config_t *c) {
    c->freeze_vision_encoder_params = true; /* MaxText base.yml's vision encoder */
    c->dtype_mm = REMAT_DTYPE_F32;
    c->hidden_size_for_vit = 1408;
    c->intermediate_size_for_vit = 5632;
    c->num_attention_heads_for_vit = 16;
    c->num_hidden_layers_for_vit = 34;
    c->image_size_for_vit = 896;
    c->patch_size_for_vit = 14;
    c->conv_stride_for_vit = 14;
    c->tile_size_for_vit = 336;
    c->pixel_shuffle_ratio_for_vit = 0.5;
    strcpy(c->matmul_precision, "default");
    c->projector_input_dim_for_vit = 4096;
    c->projector_output_dim_for_vit = 4096;
    c->vision_output_dim_for_vit = 4096;
    c->temporal_patch_size_for_vit = 2;
    c->spatial_merge_size_for_vit = 2;
    c->num_channels_for_vit = 3;
    c->num_position_embeddings_for_vit = 1024;
    c->out_hidden_size_for_vit = 512;
    strcpy(c->deepstack_visual_indexes_for_vit, "[]");
    c->image_token_share = -1.0;
    c->freeze_audio_encoder_params = true; /* base.yml's audio encoder */
    c->d_model_for_audio = 256;
    c->encoder_layers_for_audio = 2;
    c->encoder_attention_heads_for_audio = 4;
    c->encoder_ffn_dim_for_audio = 512;
    c->num_mel_bins_for_audio = 128;
    c->downsample_hidden_size_for_audio = 256;
    c->output_dim_for_audio = 512;
    c->num_conv_layers_for_audio = 3;
}

void remat_config_defaults(remat_config_t *c) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_name, "default");
    strcpy(c->graph, "llama");
    strcpy(c->attention, "flash");
    strcpy(c->hardware, "tpu7x");
    strcpy(c->remat_policy, "full");
    strcpy(c->opt_type, "adamw");
    /* MaxText base.yml */
    c->base_emb_dim = 2048;
    c->base_num_query_heads = 16;
    c->base_num_kv_heads = 16;
    c->head_dim = 128;
    c->base_mlp_dim = 7168;
    c->base_num_decoder_layers = 16;
    c->vocab_size = 32000;
    c->max_target_length = 2048;
    c->per_device_batch_size = 12;
    c->gradient_accumulation_steps = 1;
    c->num_vocab_tiling = 1;
    c->num_layers_per_pipeline_stage = 1;
    c->num_devices = 1;
    c->dtype = REMAT_DTYPE_BF16;
    c->weight_dtype = REMAT_DTYPE_F32;
    c->grad_dtype = REMAT_DTYPE_F32;
    c->mu_dtype = REMAT_DTYPE_F32;
    c->scan_layers = true;
    c->enable_dropout = true; /* MaxText base.yml; dropout_rate defaults to 0 */
    c->v_norm_with_scale = true; /* MaxText base.yml */
    c->safety_margin = 0.05;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        c->ici[a] = 1;
        c->dcn[a] = 1;
    }
    c->ici[REMAT_AXIS_FSDP] = -1; /* MaxText: FSDP takes the devices left */
    c->dcn[REMAT_AXIS_DATA] = -1; /* MaxText: data parallelism takes the slices left */
    c->fsdp_prefetch = true;
    strcpy(c->attention_type, "global");
    c->num_experts = 1;
    c->num_experts_per_tok = 1;
    c->nope_layer_interval = -1;
    c->interleave_moe_layer_step = 1;
    c->inhomogeneous_layer_cycle_interval = 1;
    c->gdn_conv_kernel_dim = 4; /* MaxText base.yml's gated DeltaNet */
    c->gdn_num_key_heads = 16;
    c->gdn_num_value_heads = 32;
    c->gdn_key_head_dim = 128;
    c->gdn_value_head_dim = 128;
    c->gdn_chunk_size = 64;
    encoder_defaults(c);
    c->kv_lora_rank = 512;
    c->qk_nope_head_dim = 128;
    c->qk_rope_head_dim = 64;
    c->v_head_dim = 128;
    c->sparse_matmul = true;
    c->indexer_n_heads = 64; /* base.yml's indexer: 64 heads of 128, top 2048 */
    c->indexer_head_dim = 128;
    c->indexer_topk = 2048;
    c->batch_split_factor = 1;
    c->capacity_factor = -1.0;
    c->ragged_buffer_factor = -1.0;
    c->wi_tile_fwd_batch_seq = 512;
    c->sa_block_kv = 512;
    c->num_slices = -1;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (*s < '0' || *s > '9') {
        return false;
    }
    uint64_t v = 0;
    for (; *s; s++) {
        /* decimal digits only */
        if (*s < '0' || *s > '9' || !remat_i_mul(v, 10, &v) ||
            !remat_i_add(v, (uint64_t)(*s - '0'), &v)) {
            return false;
        }
    }
    *out = v;
    return true;
}

static bool parse_bytes(const char *s, uint64_t *out) {
    static const struct {
        const char *suffix;
        double unit;
    } units[] = {{"", 1},      {"B", 1},         {"KB", 1e3},        {"MB", 1e6},
                 {"GB", 1e9},  {"TB", 1e12},     {"KiB", 1024.0},    {"MiB", 1048576.0},
                 {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    if (parse_u64(s, out)) {
        return *out <= REMAT_BYTES_MAX;
    }
    char *end;
    size_t digits = strspn(s, "0123456789.");
    if (digits == 0) {
        return false; /* decimal only: no hex, inf or nan */
    }
    double v = strtod(s, &end);
    if (end != s + digits || !(v >= 0) || !isfinite(v)) {
        return false;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].unit;
            if (!(b <= (double)REMAT_BYTES_MAX)) {
                return false;
            }
            *out = (uint64_t)llround(b);
            return *out <= REMAT_BYTES_MAX;
        }
    }
    return false;
}

static remat_status_t set_custom(remat_config_t *c, const char *key, const char *value,
                                 const char *source, const char *path, remat_error_t *err) {
    remat_place_t place;
    if (!remat_place_parse(value, &place)) {
        return remat_error_set(err, REMAT_E_CONFIG, source, path,
                               "'%s' must be remat, device or offload, not '%s'", key, value);
    }
    for (size_t i = 0; i < c->ncustom; i++) {
        if (strcmp(c->custom[i].name, key) == 0) {
            c->custom[i].place = place;
            return REMAT_OK;
        }
    }
    if (c->ncustom == sizeof c->custom / sizeof c->custom[0]) {
        return remat_error_set(err, REMAT_E_CONFIG, source, path,
                               "at most %zu custom placements", c->ncustom);
    }
    if (c->ncustom == 0) {
        snprintf(c->custom_source, sizeof c->custom_source, "%s", source ? source : "");
    }
    snprintf(c->custom[c->ncustom].name, REMAT_NAME_LEN, "%s", key);
    c->custom_graph_name[c->ncustom] = false;
    c->custom[c->ncustom++].place = place;
    return REMAT_OK;
}

/* A placement for a name MaxText does not have: a graph file's own
   checkpoint name, which remat_resolve checks once the graph is loaded. */
static remat_status_t set_graph_name(remat_config_t *c, const char *key, const char *value,
                                     const char *source, const char *path, remat_error_t *err) {
    size_t before = c->ncustom;
    remat_status_t st = set_custom(c, key, value, source, path, err);
    if (st == REMAT_OK && c->ncustom > before) {
        c->custom_graph_name[c->ncustom - 1] = true;
    }
    return st;
}

/* One setting being applied, for the error messages of every type. */
typedef struct setting {
    const char *key, *value, *source, *path;
} setting_t;

static remat_status_t set_str(remat_config_t *c, const key_t_ *k, const setting_t *s,
                              remat_error_t *err) {
    char *field = (char *)c + k->offset;
    const char *key = s->key, *value = s->value;
    if (strlen(value) >= k->size ||
        (!*value && strcmp(key, "quantization") && strcmp(key, "logical_axis_rules"))) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "'%s' must be a non-empty string under %zu bytes", key, k->size);
    }
    memcpy(field, value, strlen(value) + 1);
    if (strcmp(key, "attention") == 0 && strcmp(value, "flash") != 0 &&
        strcmp(value, "dot_product") != 0 && strcmp(value, "autoselected") != 0) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "attention must be flash, dot_product or autoselected, not '%s'",
                               value);
    }
    if (strcmp(key, "attention") == 0 && strcmp(value, "autoselected") == 0) {
        /* MaxText picks flash on TPU for S >= 128; so do we. */
        strcpy(field, "flash");
    }
    if (strcmp(key, "opt_type") == 0) {
        const bool adam = strcmp(value, "adamw") == 0 || strcmp(value, "adam_pax") == 0;
        const bool sgd = strcmp(value, "sgd") == 0, afac = strcmp(value, "adafactor") == 0;
        if (!adam && !sgd && !afac) {
            return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                                   "opt_type must be adamw, adam_pax, sgd or adafactor, not '%s'",
                                   value);
        }
        c->optimizer = adam ? REMAT_OPT_ADAM : sgd ? REMAT_OPT_SGD : REMAT_OPT_ADAFACTOR;
    }
    if (strcmp(key, "quantization") == 0 && *value && strcmp(value, "fp8") != 0 &&
        strcmp(value, "nanoo_fp8") != 0 && strcmp(value, "none") != 0) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "quantization must be fp8, nanoo_fp8 or none, not '%s' (MaxText's "
                               "other schemes, int8, int4, fp4, the fp8 variants and Transformer "
                               "Engine's, are not modeled)",
                               value);
    }
    return REMAT_OK;
}

/* The integer types: counts, mesh axes (-1 fills) and byte sizes. */
static remat_status_t set_integer(remat_config_t *c, const key_t_ *k, const setting_t *s,
                                  remat_error_t *err) {
    void *field = (char *)c + k->offset;
    uint64_t v;
    if (k->type == K_AUTO && strcmp(s->value, "-1") == 0) {
        *(uint64_t *)field = 0;
        return REMAT_OK;
    }
    if (k->type == K_U64 || k->type == K_AUTO) {
        if (!parse_u64(s->value, &v) || v == 0) {
            return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                                   "'%s' must be a positive integer%s, not '%s'", s->key,
                                   k->type == K_AUTO ? " or -1 (MaxText's: derive it)" : "",
                                   s->value);
        }
        *(uint64_t *)field = v;
        return REMAT_OK;
    }
    if (k->type == K_COUNT) {
        if (!parse_u64(s->value, &v) || v > REMAT_MAX_AXIS_SIZE) {
            return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                                   "'%s' must be an integer from 0 to 1000000000, not '%s'",
                                   s->key, s->value);
        }
        *(uint64_t *)field = v;
        return REMAT_OK;
    }
    if (k->type == K_I64) {
        bool neg = s->value[0] == '-';
        if (!parse_u64(neg ? s->value + 1 : s->value, &v) || v == 0 || (neg && v != 1) ||
            v > REMAT_MAX_AXIS_SIZE) {
            return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                                   "'%s' must be a positive integer or -1, not '%s'", s->key,
                                   s->value);
        }
        *(int64_t *)field = neg ? -1 : (int64_t)v;
        return REMAT_OK;
    }
    if (!parse_bytes(s->value, &v)) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "'%s' must be a byte count such as 96GiB or 100000000000, at most "
                               "4 EiB (2^62), not '%s'",
                               s->key, s->value);
    }
    if (v == 0 && strcmp(s->key, "hbm_budget") == 0) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "'hbm_budget' must be positive (leave it unset for XLA's limit "
                               "per device)");
    }
    *(uint64_t *)field = v;
    return REMAT_OK;
}

/* Numbers: decimal only (strtod would also take hex, inf and nan); margins,
   the reserve and the dropout rate are fractions in [0, 1), efficiencies in
   (0, 1], the MoE factors any finite number (MaxText's base.yml sets -1:
   at most 0 means none, the worst case), the rest positive. */
static remat_status_t set_f64(remat_config_t *c, const key_t_ *k, const setting_t *s,
                              remat_error_t *err) {
    char *end;
    double v = strtod(s->value, &end);
    bool ok = end != s->value && !*end && isfinite(v) &&
              strspn(s->value, "0123456789.eE+-") == strlen(s->value);
    const bool margin = strcmp(s->key, "safety_margin") == 0 ||
                        strcmp(s->key, "reserve_fraction") == 0 ||
                        strcmp(s->key, "dropout_rate") == 0;
    const bool fraction = strstr(s->key, "_efficiency") != NULL;
    const bool any = strcmp(s->key, "capacity_factor") == 0 ||
                     strcmp(s->key, "ragged_buffer_factor") == 0;
    /* image_token_share: -1 (train_compile's one image) or a share */
    const bool share = strcmp(s->key, "image_token_share") == 0;
    ok = ok && (margin  ? v >= 0 && v < 1
                : share ? v == -1 || (v > 0 && v <= 1)
                        : any || (v > 0 && (!fraction || v <= 1)));
    if (!ok) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               margin     ? "'%s' must be a fraction in [0, 1), not '%s'"
                               : fraction ? "'%s' must be a fraction in (0, 1], not '%s'"
                               : share    ? "'%s' must be -1 or a share in (0, 1], not '%s'"
                               : any      ? "'%s' must be a number, not '%s'"
                                          : "'%s' must be a positive number, not '%s'",
                               s->key, s->value);
    }
    *(double *)(void *)((char *)c + k->offset) = v;
    c->reserve_fraction_set |= strcmp(s->key, "reserve_fraction") == 0;
    return REMAT_OK;
}

static remat_status_t set_dtype_or_bool(remat_config_t *c, const key_t_ *k, const setting_t *s,
                                        remat_error_t *err) {
    void *field = (char *)c + k->offset;
    const char *value = s->value;
    if (k->type == K_DTYPE) {
        remat_dtype_t d;
        if (!remat_dtype_parse(value, &d) || d == REMAT_DTYPE_ACT || d == REMAT_DTYPE_WEIGHT ||
            d >= REMAT_DTYPE_I32) {
            return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                                   "'%s' must be a float dtype (float32, bfloat16, float16, "
                                   "fp8_e4m3, fp8_e5m2), not '%s'",
                                   s->key, value);
        }
        *(remat_dtype_t *)field = d;
        c->mu_dtype_set |= strcmp(s->key, "mu_dtype") == 0;
        return REMAT_OK;
    }
    if (!remat_i_config_bool_text(value, (bool *)field)) {
        return remat_error_set(err, REMAT_E_CONFIG, s->source, s->path,
                               "'%s' must be true or false, not '%s'", s->key, value);
    }
    return REMAT_OK;
}

/* The typed key named @p key, or NULL. */
static const key_t_ *find_key(const char *key) {
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(key, keys[i].name) == 0) {
            return &keys[i];
        }
    }
    return NULL;
}

const char *remat_i_config_nearest_key(const char *key) {
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < remat_config_nkeys(); i++) {
        const char *name = remat_config_key_name(i);
        best = remat_i_nearest_word(key, &name, 1, best, &bestd);
    }
    best = remat_i_nearest_word(key, remat_i_maxtext_keys, remat_i_nmaxtext_keys, best, &bestd);
    return remat_i_near_enough(key, bestd) ? best : NULL;
}

/* A key neither remat's nor MaxText's: the error, naming the nearest. */
static remat_status_t unknown_key(const char *key, const char *source, const char *path,
                                  remat_error_t *err) {
    const char *near = remat_i_config_nearest_key(key);
    if (near) {
        return remat_error_set(err, REMAT_E_CONFIG, source, path,
                               "unknown config key '%s' (did you mean '%s'?)", key, near);
    }
    return remat_error_set(err, REMAT_E_CONFIG, source, path,
                           "unknown config key '%s': not one of remat's or MaxText's "
                           "('remat list keys' shows remat's)",
                           key);
}

remat_status_t remat_config_set(remat_config_t *c, const char *key, const char *value,
                                const char *source, const char *path, remat_error_t *err) {
    bool skip = false;
    remat_status_t tst = remat_i_config_translate(c, &key, &value, source, path, &skip, err);
    if (tst || skip) {
        return tst;
    }
    /* one pass over the names (the loop this replaced counted them again
       at every step: a fifth of a config build's time) */
    if (remat_policy_is_maxtext_name(key)) {
        return set_custom(c, key, value, source, path, err);
    }
    const key_t_ *k = find_key(key);
    if (!k) {
        const char *why = NULL;
        switch (remat_i_config_other_key(c, key, value, &why)) {
            case REMAT_OTHER_UNUSED:
                return REMAT_OK;
            case REMAT_OTHER_REFUSED:
                return remat_error_set(err, REMAT_E_CONFIG, source, path,
                                       "%s='%s' is not modeled: %s", key, value, why);
            case REMAT_OTHER_GRAPH_NAME:
                return set_graph_name(c, key, value, source, path, err);
            case REMAT_OTHER_UNKNOWN:
                break;
        }
        return unknown_key(key, source, path, err);
    }
    c->logits_via_embedding_set |= strcmp(key, "logits_via_embedding") == 0;
    c->graph_set |= strcmp(key, "graph") == 0;
    const setting_t s = {key, value, source, path};
    if (strcmp(key, "topology") == 0) {
        remat_topology_t t;
        remat_status_t st = remat_topology_parse(value, source, path, &t, err);
        if (st == REMAT_OK) {
            snprintf(c->topology, sizeof c->topology, "%s", value);
            snprintf(c->hardware, sizeof c->hardware, "%s", t.hardware);
        }
        return st;
    }
    c->num_devices_set |= strcmp(key, "num_devices") == 0;
    switch (k->type) {
        case K_STR:
            return set_str(c, k, &s, err);
        case K_U64:
        case K_AUTO:
        case K_COUNT:
        case K_I64:
        case K_BYTES:
            return set_integer(c, k, &s, err);
        case K_F64:
            return set_f64(c, k, &s, err);
        case K_DTYPE:
        case K_BOOL:
            return set_dtype_or_bool(c, k, &s, err);
        case K_PLACE:
            break;
    }
    return remat_error_set(err, REMAT_E_INTERNAL, source, path, "unhandled key type for '%s'",
                           key);
}

/* An unknown model_name: the built-in models nearest to @p name, for the
   error. Up to four, nearest first (name order among equals), by edit
   distance, a built-in that starts with @p name (3 bytes or more) counting
   as one edit; a built-in further than a third of the longer name (at
   least 2 edits) is not near. Writes "'a', 'b' or 'c'", or "" when none is
   near. */
static void nearest_models(const char *name, char *buf, size_t size) {
    enum { NEAREST = 4 };
    size_t best[NEAREST], dist[NEAREST], nbest = 0;
    const size_t len = strlen(name);
    for (size_t i = 0; i < remat_builtin_count(REMAT_BUILTIN_MODEL); i++) {
        const char *m = remat_builtin_name(REMAT_BUILTIN_MODEL, i);
        size_t d = remat_i_edit_distance(name, m); /* (size_t)-1 past 64 bytes */
        if (len >= 3 && strncmp(m, name, len) == 0 && d > 1) {
            d = 1;
        }
        const size_t longer = strlen(m) > len ? strlen(m) : len;
        if (d > (longer / 3 > 2 ? longer / 3 : 2)) {
            continue;
        }
        size_t at = nbest;
        while (at > 0 && dist[at - 1] > d) {
            at--;
        }
        if (at == NEAREST) {
            continue;
        }
        if (nbest < NEAREST) {
            nbest++;
        }
        for (size_t j = nbest - 1; j > at; j--) {
            best[j] = best[j - 1];
            dist[j] = dist[j - 1];
        }
        best[at] = i;
        dist[at] = d;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < nbest && used < size; j++) {
        const char *sep = j == 0 ? "" : j + 1 == nbest ? " or " : ", ";
        int w = snprintf(buf + used, size - used, "%s'%s'", sep,
                         remat_builtin_name(REMAT_BUILTIN_MODEL, best[j]));
        if (w < 0) {
            break;
        }
        used += (size_t)w;
    }
}

/* Where a preset's values come from, in errors: named by the preset, not
   by where remat keeps it. */
static void preset_source(const char *name, char source[REMAT_ERR_SOURCE_LEN]) {
    snprintf(source, REMAT_ERR_SOURCE_LEN, "model_name=%.*s", REMAT_ERR_SOURCE_LEN - 16, name);
}

/* Built-in preset @p index parsed (the cache's maker): every config build
   of a model read its JSON again, which cost a sweep of configurations
   about a fifth of each one's time (bench/README.md). */
static remat_status_t make_preset(size_t index, void **out, remat_error_t *err) {
    char source[REMAT_ERR_SOURCE_LEN];
    preset_source(remat_i_builtins[index].name, source);
    json_t *root = NULL;
    remat_status_t st = remat_i_json_parse(remat_i_builtins[index].text, source, &root, err);
    *out = root;
    /* out of memory; else a built-in preset that does not parse */
    return st == REMAT_OK || st == REMAT_E_NOMEM ? st : REMAT_E_INTERNAL;
}

static void drop_preset(void *obj) {
    json_decref(obj);
}

/* Applies the built-in preset @p name (config_internal.h). */
remat_status_t remat_i_config_apply_model(remat_config_t *c, const char *name, bool own_graph,
                                          remat_error_t *err) {
    if (strcmp(name, "default") == 0) {
        return REMAT_OK;
    }
    const size_t index = remat_i_builtin_index(REMAT_BUILTIN_MODEL, name);
    if (index == REMAT_NONE) {
        char near[256];
        nearest_models(name, near, sizeof near);
        const size_t count = remat_builtin_count(REMAT_BUILTIN_MODEL);
        if (near[0]) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "unknown model_name '%s' (did you mean %s? 'remat list models' "
                                   "shows all %zu, or 'default' for none)",
                                   name, near, count);
        }
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "unknown model_name '%s' ('remat list models' shows the %zu built-in "
                               "models, or 'default' for none)",
                               name, count);
    }
    char source[REMAT_ERR_SOURCE_LEN];
    preset_source(name, source);
    /* borrowed from the cache: read, never changed, never freed here */
    const void *cached = NULL;
    remat_status_t st = remat_i_cached(index, make_preset, drop_preset, &cached, err);
    if (st) {
        return st;
    }
    json_t *root = (json_t *)cached;
    json_t *req = json_object_get(root, "requires");
    if (req && own_graph && json_is_string(req)) {
        remat_i_config_note(c, "model_name '%s' needs %s: its dims run on the graph file given",
                            name, json_string_value(req));
    } else if (req) {
        st = json_is_string(req)
                 ? remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "model_name '%s' needs %s, which remat's graphs do not have "
                                   "yet",
                                   name, json_string_value(req))
                 : remat_error_set(err, REMAT_E_INTERNAL, source, "$.requires",
                                   "'requires' must be a string");
        return st;
    }
    const char *key;
    json_t *v;
    json_t *cfg = json_object_get(root, "config");
    json_object_foreach(cfg, key, v) {
        char num[40];
        const char *value = json_is_string(v) ? json_string_value(v) : num;
        if (json_is_integer(v)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        } else if (json_is_real(v)) {
            snprintf(num, sizeof num, "%.17g", json_real_value(v));
        } else if (!json_is_string(v)) {
            snprintf(num, sizeof num, "%s", json_is_true(v) ? "true" : "false");
        }
        if ((st = remat_config_set(c, key, value, source, key, err)) != REMAT_OK) {
            break;
        }
    }
    return st;
}

/* The product of one kind of mesh axes (ici or dcn), and how many of them
   fill (-1). */
static remat_status_t axes_product(const int64_t *axes, uint64_t *product, int *fills,
                                   remat_error_t *err) {
    *product = 1;
    *fills = 0;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (axes[a] < 1) {
            (*fills)++;
        } else if (!remat_i_mul(*product, (uint64_t)axes[a], product) ||
                   *product > REMAT_MAX_DEVICES) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "the mesh axes multiply past 2^40 devices");
        }
    }
    return REMAT_OK;
}

/* The mesh's device count, 0 when it cannot tell: the ici axes' product
   (none may fill) times the slices, which are num_slices when given (a dcn
   axis of -1 takes them, as in MaxText) or the dcn axes' product. */
static remat_status_t mesh_devices(const remat_config_t *c, uint64_t *out, remat_error_t *err) {
    uint64_t ici, dcn;
    int ici_fills, dcn_fills;
    *out = 0;
    remat_status_t st = axes_product(c->ici, &ici, &ici_fills, err);
    if (st == REMAT_OK) {
        st = axes_product(c->dcn, &dcn, &dcn_fills, err);
    }
    if (st || ici_fills) {
        return st;
    }
    if (c->num_slices > 0 && (dcn_fills ? (uint64_t)c->num_slices % dcn != 0
                                        : (uint64_t)c->num_slices != dcn)) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "num_slices=%lld, but the dcn axes make %llu slices%s",
                               (long long)c->num_slices, (unsigned long long)dcn,
                               dcn_fills ? " and the one that fills cannot make up the rest" : "");
    }
    const uint64_t slices = c->num_slices > 0 ? (uint64_t)c->num_slices : dcn_fills ? 0 : dcn;
    if (slices && (!remat_i_mul(ici, slices, out) || *out > REMAT_MAX_DEVICES)) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "the mesh axes multiply past 2^40 devices");
    }
    return REMAT_OK;
}

/* The device count: num_devices, else the topology's (times num_slices),
   else the mesh's product when no axis is left to fill, else one device,
   which c->num_devices_assumed records. A topology and num_devices that
   disagree are an error rather than a silent choice. */
static remat_status_t resolve_devices(remat_config_t *c, remat_error_t *err) {
    const uint64_t slices = c->num_slices > 0 ? (uint64_t)c->num_slices : 1;
    if (c->topology[0]) {
        remat_topology_t t;
        remat_status_t st = remat_topology_parse(c->topology, NULL, "topology", &t, err);
        if (st) {
            return st;
        }
        uint64_t devices;
        if (!remat_i_mul(t.devices, slices, &devices) || devices > REMAT_MAX_DEVICES) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "num_slices=%llu of topology=%s is past 2^40 devices",
                                   (unsigned long long)slices, c->topology);
        }
        if (c->num_devices_set && c->num_devices != devices) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "topology=%s%s is %llu devices (%llu chips), but "
                                   "num_devices=%llu",
                                   c->topology, slices > 1 ? " times num_slices" : "",
                                   (unsigned long long)devices,
                                   (unsigned long long)(t.chips * slices),
                                   (unsigned long long)c->num_devices);
        }
        c->num_devices = devices;
        return REMAT_OK;
    }
    if (c->num_devices_set) {
        return REMAT_OK;
    }
    uint64_t p;
    remat_status_t st = mesh_devices(c, &p, err);
    if (st == REMAT_OK && p) {
        c->num_devices = p;
    } else if (st == REMAT_OK) {
        c->num_devices_assumed = true; /* the default of one device stands */
    }
    return st;
}

/* MoE settings MaxText would take and remat can analyze: a top-k within
   the experts, and what remat does not model yet refused by name. */
/* Whether MaxText scans decoder_block's layers in blocks of
   inhomogeneous_layer_cycle_interval (a ScannableBlock of that many layers,
   nnx_decoders.py's generic scan at e591f30), among the blocks remat's
   graphs run. */
static bool scans_cycles(const remat_config_t *c) {
    return strcmp(c->decoder_block, "llama4") == 0 || strcmp(c->decoder_block, "gpt_oss") == 0 ||
           strcmp(c->decoder_block, "olmo3") == 0 || strcmp(c->decoder_block, "envy") == 0 ||
           strcmp(c->decoder_block, "qwen3_next") == 0 || strcmp(c->decoder_block, "qwen3_5") == 0;
}

uint64_t remat_config_remat_unit(const remat_config_t *c) {
    if (!c->scan_layers) {
        return 1; /* each layer is its own jax.checkpoint */
    }
    if (strcmp(c->decoder_block, "gemma3") == 0) {
        /* MaxText scans Gemma 3 in blocks of its attention pattern (5 local,
           1 global), a constant of its code, the remainder as one more block */
        return 6;
    }
    return scans_cycles(c) ? c->inhomogeneous_layer_cycle_interval : 1;
}

/* inhomogeneous_layer_cycle_interval as MaxText can run it: 1 for a decoder
   block that scans single layers (its generic scan would run 1/k of the
   layers), and for one that scans blocks, a divisor of the layer count
   (int(layers / k) blocks run: the rest would be dropped). */
static remat_status_t check_cycle(const remat_config_t *c, remat_error_t *err) {
    const uint64_t k = c->inhomogeneous_layer_cycle_interval, L = c->base_num_decoder_layers;
    if (k < 1) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "inhomogeneous_layer_cycle_interval must be at least 1");
    }
    if (k > 1 && !scans_cycles(c)) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "inhomogeneous_layer_cycle_interval=%llu: decoder_block '%s' scans "
                               "single layers, so MaxText would run only 1/%llu of them; blocks "
                               "of layers are llama4's and gpt_oss's",
                               (unsigned long long)k, c->decoder_block[0] ? c->decoder_block : "default",
                               (unsigned long long)k);
    }
    if (k > 1 && c->scan_layers && L % k) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "inhomogeneous_layer_cycle_interval=%llu does not divide the %llu "
                               "decoder layers: MaxText's scan runs %llu whole blocks and drops "
                               "the other %llu layers",
                               (unsigned long long)k, (unsigned long long)L,
                               (unsigned long long)(L / k), (unsigned long long)(L % k));
    }
    return REMAT_OK;
}

static remat_status_t check_moe(const remat_config_t *c, remat_error_t *err) {
    if (c->num_experts < 1) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "num_experts=%lld: there is at least one expert",
                               (long long)c->num_experts);
    }
    if (c->num_experts_per_tok < 1 || c->num_experts_per_tok > (uint64_t)c->num_experts) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "num_experts_per_tok=%llu must be 1 to num_experts (%lld)",
                               (unsigned long long)c->num_experts_per_tok,
                               (long long)c->num_experts);
    }
    if (c->first_num_dense_layers > c->base_num_decoder_layers) {
        /* MaxText scans num_decoder_layers - first_num_dense_layers MoE
           layers: more dense layers than layers is no model */
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "first_num_dense_layers=%llu is more than the %llu decoder layers "
                               "(base_num_decoder_layers)",
                               (unsigned long long)c->first_num_dense_layers,
                               (unsigned long long)c->base_num_decoder_layers);
    }
    if (c->interleave_moe_layer_step < 1) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "interleave_moe_layer_step must be at least 1");
    }
    if (c->mtp_num_layers > 1) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "mtp_num_layers=%llu: remat models one multi-token prediction "
                               "layer (DeepSeek-V3's), not more",
                               (unsigned long long)c->mtp_num_layers);
    }
    if (c->num_experts > 1 && !c->sparse_matmul && c->capacity_factor <= 0) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "sparse_matmul=false without a capacity_factor runs every token "
                               "through every expert, which is not modeled; remat models the "
                               "dense path with capacity_factor > 0 (dispatch and combine over "
                               "expert capacity) and the sparse path");
    }
    return REMAT_OK;
}

/* The checks that involve several keys, once every layer is applied. */
remat_status_t remat_i_config_check_layers(const remat_config_t *c, remat_error_t *err) {
    if (c->base_num_decoder_layers == 0) { /* the key's parser refuses 0 before this */
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "base_num_decoder_layers is 0: a model has at least one layer");
    }
    if (c->base_num_decoder_layers > REMAT_MAX_LAYERS) {
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "base_num_decoder_layers=%llu is above the supported %d",
                               (unsigned long long)c->base_num_decoder_layers, REMAT_MAX_LAYERS);
    }
    /* the blocks the layers scan in: the analyzer walks them */
    return check_cycle(c, err);
}

remat_status_t remat_i_config_check_built(remat_config_t *c, remat_error_t *err) {
    remat_status_t st = remat_i_config_check_maxtext(c, err);
    if (st == REMAT_OK && !c->mu_dtype_set) {
        c->mu_dtype = c->weight_dtype;
    }
    if (st == REMAT_OK) {
        st = resolve_devices(c, err);
    }
    if (st == REMAT_OK) {
        st = remat_i_config_check_layers(c, err);
    }
    /* MaxText's attention (attentions.py) rejects a GQA split that leaves
       query heads without a key/value head. */
    if (st == REMAT_OK && c->base_num_kv_heads &&
        c->base_num_query_heads % c->base_num_kv_heads) {
        st = remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                             "base_num_query_heads=%llu is not a multiple of "
                             "base_num_kv_heads=%llu (MaxText rejects it for GQA)",
                             (unsigned long long)c->base_num_query_heads,
                             (unsigned long long)c->base_num_kv_heads);
    }
    if (st == REMAT_OK) {
        st = check_moe(c, err);
    }

    if (st == REMAT_OK && c->use_qwix_quantization &&
        (!c->quantization[0] || strcmp(c->quantization, "none") == 0)) {
        st = remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                             "use_qwix_quantization=true needs a quantization (fp8, nanoo_fp8)");
    }
    if (st == REMAT_OK && c->ncustom > 0 && strcmp(c->remat_policy, "custom") != 0) {
        st = remat_error_set(err, REMAT_E_CONFIG, c->custom_source, NULL,
                             "'%s=%s' applies only with remat_policy=custom (remat_policy is '%s')",
                             c->custom[0].name, remat_place_name(c->custom[0].place),
                             c->remat_policy);
    }
    return st;
}

/* The dense MoE path's slots per expert and sequence (MaxText's
   generate_masks): int(max(ceil(S K / E) x capacity_factor,
   capacity_factor)), at least 1; 0 with no capacity factor. */
static uint64_t expert_capacity(const remat_config_t *c) {
    if (c->capacity_factor <= 0 || c->num_experts < 1) {
        return 0;
    }
    const double tokens = (double)c->max_target_length * (double)c->num_experts_per_tok;
    const double per = ceil(tokens / (double)c->num_experts) * c->capacity_factor;
    const double cap = per > c->capacity_factor ? per : c->capacity_factor;
    return cap >= 1e15 ? (uint64_t)1e15 : cap < 1 ? 1 : (uint64_t)cap;
}

/* MaxText's Gemma 4 E2B/E4B layer pattern (models/gemma4_small.py at
   e591f30, get_attention_pattern): four local layers then a global one
   for model_name gemma4-e2b, five then one for any other name. */
static uint64_t gemma4_small_period(const remat_config_t *c) {
    return strcmp(c->model_name, "gemma4-e2b") == 0 ? 5 : 6;
}

/* The first layer that reuses an earlier layer's keys and values
   (first_kv_shared_layer_idx, is_kv_shared_layer: L - n, when that leaves
   layers on both sides), or L when none does. */
static uint64_t kv_shared_first(const remat_config_t *c) {
    const uint64_t L = c->base_num_decoder_layers, n = c->num_kv_shared_layers;
    return n > 0 && n < L ? L - n : L;
}

/* One past the donor of a global (@p global) or local layer: the last
   layer of that kind before the first shared one (kv_donor_layer_idx),
   which as a stack rule's `first` and `every` takes that layer alone; 0
   (no layer) when no layer shares or none of that kind comes before. */
static uint64_t kv_donor(const remat_config_t *c, bool global) {
    const uint64_t F = kv_shared_first(c), P = gemma4_small_period(c);
    if (F >= c->base_num_decoder_layers) {
        return 0; /* no layer shares */
    }
    for (uint64_t i = F; i > 0; i--) {
        if ((i % P == 0) == global) { /* layer i - 1 is global when i is a multiple of P */
            return i;
        }
    }
    return 0;
}

/* The sizes the gemma4_small graph derives (docs/config.md). */
static bool gemma4_small_size(const remat_config_t *c, const char *key, uint64_t *out) {
    if (strcmp(key, "per_layer_input_dim") == 0) {
        *out = remat_i_mul(c->base_num_decoder_layers, c->hidden_size_per_layer_input, out)
                   ? *out
                   : UINT64_MAX;
    } else if (strcmp(key, "shared_layer_mlp_dim") == 0) {
        *out = remat_i_mul(c->base_mlp_dim, c->use_double_wide_mlp ? 2 : 1, out) ? *out
                                                                                 : UINT64_MAX;
    } else if (strcmp(key, "gemma4_small_period") == 0) {
        *out = gemma4_small_period(c);
    } else if (strcmp(key, "kv_shared_first") == 0) {
        *out = kv_shared_first(c);
    } else if (strcmp(key, "kv_donor_local") == 0 || strcmp(key, "kv_donor_global") == 0) {
        *out = kv_donor(c, strcmp(key, "kv_donor_global") == 0);
    } else {
        return false;
    }
    return true;
}

/* A product of two keys, saturating past 64 bits (binding then fails on
   the bytes it would take). */
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t p;
    return remat_i_mul(a, b, &p) ? p : UINT64_MAX;
}

/* The sizes the qwen3_next graph derives from the gated DeltaNet's keys
   (docs/config.md; models/qwen3.py Qwen3NextGatedDeltaNet at e591f30):
   key_dim and value_dim, the conv's channels (q, k, v), the qkvz and ba
   projections' widths, and the delta rule's chunks (the config check
   refuses a chunk size that does not divide the sequence). */
static bool qwen3_next_size(const remat_config_t *c, const char *key, uint64_t *out) {
    const uint64_t kd = sat_mul(c->gdn_num_key_heads, c->gdn_key_head_dim);
    const uint64_t vd = sat_mul(c->gdn_num_value_heads, c->gdn_value_head_dim);
    if (strcmp(key, "gdn_key_dim") == 0) {
        *out = kd;
    } else if (strcmp(key, "gdn_value_dim") == 0) {
        *out = vd;
    } else if (strcmp(key, "gdn_conv_dim") == 0) {
        *out = remat_i_add(sat_mul(kd, 2), vd, out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "gdn_qkvz_dim") == 0) {
        *out = remat_i_add(sat_mul(kd, 2), sat_mul(vd, 2), out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "gdn_ba_dim") == 0) {
        *out = sat_mul(c->gdn_num_value_heads, 2);
    } else if (strcmp(key, "gdn_num_chunks") == 0) {
        *out = c->gdn_chunk_size ? c->max_target_length / c->gdn_chunk_size : 0;
    } else {
        return false;
    }
    return true;
}

/* Llama 4's (models/llama4.py Llama4VisionModel and
   multimodal/processor_llama4.py at e591f30): an example's images as 20
   tiles each, a tile's patches (the grid, and the grid plus the class
   token the encoder runs), a patch's pixels of every channel, the pixel
   shuffle's tokens a tile and their width, merge = 1 /
   pixel_shuffle_ratio_for_vit (vit_tokens: an image's). */
static bool llama4_vit_size(const remat_config_t *c, const char *key, uint64_t *out) {
    const uint64_t side = c->patch_size_for_vit ? c->image_size_for_vit / c->patch_size_for_vit : 0;
    const uint64_t m = remat_i_config_vit_shuffle(c);
    const uint64_t grid = sat_mul(side, side);
    if (strcmp(key, "vit_patches") == 0) {
        *out = grid == UINT64_MAX ? grid : grid + 1;
    } else if (strcmp(key, "vit_tile_patches") == 0) {
        *out = grid;
    } else if (strcmp(key, "vit_patch_volume") == 0) {
        *out = sat_mul(c->num_channels_for_vit,
                       sat_mul(c->patch_size_for_vit, c->patch_size_for_vit));
    } else if (strcmp(key, "vit_tokens") == 0) {
        *out = remat_i_config_vit_tokens(c);
    } else if (strcmp(key, "vit_tile_tokens") == 0) {
        *out = remat_i_config_vit_tokens(c) / REMAT_LLAMA4_TILES;
    } else if (strcmp(key, "vit_merged_dim") == 0) {
        *out = sat_mul(c->hidden_size_for_vit, sat_mul(m, m));
    } else if (strcmp(key, "vit_images") == 0) {
        *out = remat_i_config_vit_images(c);
    } else if (strcmp(key, "vit_tiles") == 0) {
        *out = sat_mul(REMAT_LLAMA4_TILES, remat_i_config_vit_images(c));
    } else {
        return false;
    }
    return true;
}

/* The sizes the vision graphs derive for their encoder (docs/config.md):
   an image's patches, the pixels of one patch, its image tokens, a merged
   token's width, and the images of one example (the config check refuses
   sizes that do not divide). Qwen3-VL (models/qwen3.py
   Qwen3OmniMoeVisionEncoder and multimodal/processor_qwen3_omni.py at
   e591f30, whose dummy image has 2 frames): the frames over
   temporal_patch_size_for_vit times the grid, patches of those frames, a
   token a merge of merge^2 patches. Gemma 3 (models/gemma3.py
   Gemma3VisionEncoderLayer): one frame, the Conv's patches of every
   channel, 256 tokens an image (remat_i_config_vit_tokens). Llama 4
   (llama4_vit_size). */
static bool vit_size(const remat_config_t *c, const char *key, uint64_t *out) {
    if (remat_i_config_vit_llama4(c)) {
        return llama4_vit_size(c, key, out);
    }
    const bool gemma3 = remat_i_config_vit_gemma3(c);
    const uint64_t side = c->patch_size_for_vit ? c->image_size_for_vit / c->patch_size_for_vit : 0;
    const uint64_t frames = gemma3                          ? 1
                            : c->temporal_patch_size_for_vit ? 2 / c->temporal_patch_size_for_vit
                                                            : 0;
    const uint64_t depth = gemma3 ? 1 : c->temporal_patch_size_for_vit;
    const uint64_t patches = sat_mul(frames, sat_mul(side, side));
    const uint64_t area = sat_mul(c->spatial_merge_size_for_vit, c->spatial_merge_size_for_vit);
    if (strcmp(key, "vit_patches") == 0) {
        *out = patches;
    } else if (strcmp(key, "vit_patch_volume") == 0) {
        *out = sat_mul(sat_mul(c->num_channels_for_vit, depth),
                       sat_mul(c->patch_size_for_vit, c->patch_size_for_vit));
    } else if (strcmp(key, "vit_tokens") == 0) {
        *out = remat_i_config_vit_tokens(c);
    } else if (strcmp(key, "vit_merged_dim") == 0) {
        *out = sat_mul(c->hidden_size_for_vit, area);
    } else if (strcmp(key, "vit_images") == 0 || strcmp(key, "vit_tiles") == 0) {
        *out = remat_i_config_vit_images(c); /* one tile an image */
    } else if (strcmp(key, "vit_tile_patches") == 0) {
        *out = patches;
    } else if (strcmp(key, "vit_tile_tokens") == 0) {
        *out = remat_i_config_vit_tokens(c);
    } else {
        return false;
    }
    return true;
}

/* The qwen3_omni graph's derived audio size: the width its conv output
   projection reads, downsample_hidden_size_for_audio channels times the
   mel bins left after three stride-2 convs padded by 1 (models/qwen3.py
   Qwen3OmniAudioEncoder's conv_out_dim at e591f30: 128 bins give 16). */
static bool audio_size(const remat_config_t *c, const char *key, uint64_t *out) {
    if (strcmp(key, "audio_conv_out_dim") != 0) {
        return false;
    }
    const uint64_t bins = (((c->num_mel_bins_for_audio + 1) / 2 + 1) / 2 + 1) / 2;
    *out = sat_mul(c->downsample_hidden_size_for_audio, bins);
    return true;
}

/* The sizes derived from other keys (docs/config.md): the shared experts'
   MLP width, MLA's query/key head and its two key/value projections, and
   num_experts (a signed MaxText key, at least 1 once checked). The
   expert-parallel buffer factor and the expert axis's shards need the
   mesh: the binder sets them, and here they are 1. */
static bool derived_size(const remat_config_t *c, const char *key, uint64_t *out) {
    /* A sum or product past 64 bits saturates: binding then fails on the
       bytes it would take, as for any other oversized dim. */
    if (strcmp(key, "num_experts") == 0) {
        *out = c->num_experts > 0 ? (uint64_t)c->num_experts : 1;
    } else if (strcmp(key, "nope_layer_interval") == 0) {
        /* as a stack rule's `every`, 0 takes no layer */
        *out = c->nope_layer_interval > 0 ? (uint64_t)c->nope_layer_interval : 0;
    } else if (strcmp(key, "shared_mlp_dim") == 0) {
        *out = remat_i_mul(c->shared_experts, c->base_moe_mlp_dim, out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "qk_head_dim") == 0) {
        *out = remat_i_add(c->qk_nope_head_dim, c->qk_rope_head_dim, out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "kv_a_dim") == 0) {
        *out = remat_i_add(c->kv_lora_rank, c->qk_rope_head_dim, out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "kv_up_dim") == 0) {
        *out = remat_i_add(c->qk_nope_head_dim, c->v_head_dim, out) ? *out : UINT64_MAX;
    } else if (strcmp(key, "moe_buffer_factor") == 0 || strcmp(key, "expert_shards") == 0) {
        *out = 1;
    } else if (strcmp(key, "expert_capacity") == 0) {
        *out = expert_capacity(c);
    } else if (strcmp(key, "global_head_dim") == 0) {
        *out = c->global_head_dim ? c->global_head_dim : c->head_dim;
    } else if (strcmp(key, "global_num_kv_heads") == 0) {
        *out = c->global_num_kv_heads ? c->global_num_kv_heads : c->base_num_kv_heads;
    } else if (strcmp(key, "indexer_nope_dim") == 0) {
        /* the head dim past its rotated part; checked positive with use_indexer */
        *out = c->indexer_head_dim > c->qk_rope_head_dim
                   ? c->indexer_head_dim - c->qk_rope_head_dim
                   : 0;
    } else {
        return gemma4_small_size(c, key, out) || qwen3_next_size(c, key, out) ||
               vit_size(c, key, out) || audio_size(c, key, out);
    }
    return true;
}

const char *remat_i_config_size_formula(const char *key) {
    static const struct {
        const char *key, *formula;
    } derived[] = {{"shared_mlp_dim", "shared_experts x base_moe_mlp_dim"},
                   {"qk_head_dim", "qk_nope_head_dim + qk_rope_head_dim"},
                   {"kv_a_dim", "kv_lora_rank + qk_rope_head_dim"},
                   {"expert_shards", "the expert mesh axis's shards"},
                   {"trainable_position_size", "MaxText's -1, no table, reads as 0"},
                   {"global_head_dim", "global_head_dim, or head_dim when 0"},
                   {"global_num_kv_heads", "global_num_kv_heads, or base_num_kv_heads when 0"},
                   {"indexer_nope_dim", "indexer_head_dim - qk_rope_head_dim"},
                   {"per_layer_input_dim",
                    "base_num_decoder_layers x hidden_size_per_layer_input"},
                   {"shared_layer_mlp_dim",
                    "base_mlp_dim, twice that with use_double_wide_mlp"},
                   {"gemma4_small_period", "5 for model_name gemma4-e2b, else 6"},
                   {"kv_shared_first",
                    "base_num_decoder_layers - num_kv_shared_layers, or the layer count"},
                   {"kv_donor_local", "one past the last local layer before kv_shared_first"},
                   {"kv_donor_global", "one past the last global layer before kv_shared_first"},
                   {"gdn_key_dim", "gdn_num_key_heads x gdn_key_head_dim"},
                   {"gdn_value_dim", "gdn_num_value_heads x gdn_value_head_dim"},
                   {"gdn_conv_dim", "2 gdn_key_dim + gdn_value_dim"},
                   {"gdn_qkvz_dim", "2 gdn_key_dim + 2 gdn_value_dim"},
                   {"gdn_ba_dim", "2 gdn_num_value_heads"},
                   {"gdn_num_chunks", "max_target_length / gdn_chunk_size"},
                   {"vit_patches",
                    "(2 / temporal_patch_size_for_vit) x (image_size_for_vit / "
                    "patch_size_for_vit)^2; Gemma 3's encoder: (image_size_for_vit / "
                    "patch_size_for_vit)^2; Llama 4's: that plus 1 (the class token)"},
                   {"vit_patch_volume",
                    "num_channels_for_vit x temporal_patch_size_for_vit x patch_size_for_vit^2; "
                    "Gemma 3's and Llama 4's: num_channels_for_vit x patch_size_for_vit^2"},
                   {"vit_tokens", "vit_patches / spatial_merge_size_for_vit^2; Gemma 3's "
                                  "encoder: 256 (its pool's output); Llama 4's: 20 x "
                                  "vit_tile_tokens"},
                   {"vit_merged_dim", "hidden_size_for_vit x spatial_merge_size_for_vit^2; "
                                      "Llama 4's: hidden_size_for_vit / "
                                      "pixel_shuffle_ratio_for_vit^2"},
                   {"vit_images", "1, or image_token_share x max_target_length / vit_tokens, "
                                  "rounded down"},
                   {"vit_tiles", "Llama 4's encoder: 20 x vit_images (every image padded to 20 "
                                 "tiles); others: vit_images"},
                   {"vit_tile_patches", "Llama 4's encoder: (image_size_for_vit / "
                                        "patch_size_for_vit)^2; others: vit_patches"},
                   {"vit_tile_tokens", "Llama 4's encoder: vit_tile_patches x "
                                       "pixel_shuffle_ratio_for_vit^2; others: vit_tokens"},
                   {"audio_conv_out_dim",
                    "downsample_hidden_size_for_audio x (((num_mel_bins_for_audio + 1) / 2 + 1) "
                    "/ 2 + 1) / 2"},
                   {"expert_capacity", "from capacity_factor, max_target_length, "
                                       "num_experts_per_tok and num_experts"}};
    for (size_t i = 0; i < sizeof derived / sizeof derived[0]; i++) {
        if (strcmp(derived[i].key, key) == 0) {
            return derived[i].formula;
        }
    }
    return NULL;
}

size_t remat_i_config_size_field(const char *key) {
    for (size_t i = 0; key && i < sizeof size_keys / sizeof size_keys[0]; i++) {
        /* the first bytes inline: most keys differ there */
        if (size_keys[i].name[0] == key[0] && strcmp(size_keys[i].name, key) == 0) {
            return size_keys[i].offset; /* 0 for a derived key */
        }
    }
    return 0;
}

remat_status_t remat_config_size(const remat_config_t *c, const char *key, uint64_t *out,
                                 remat_error_t *err) {
    if (strcmp(key, "per_device_batch_size") == 0) {
        /* MaxText's micro-batch is per_device_batch_size x devices; with
           gradient accumulation the global batch is k of them
           (calculate_global_batch_sizes in configs/types.py at e591f30). */
        double micro = c->per_device_batch_size * (double)c->num_devices;
        if (micro > REMAT_MAX_SEQUENCES) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "per_device_batch_size %g gives %g sequences per micro-batch, "
                                   "above the supported 1e15",
                                   c->per_device_batch_size, micro);
        }
        /* 0.07 x 100 is 7.000000000000001 in binary: a count within a
           relative 1e-9 of a whole number is that number. */
        double whole = floor(micro + 0.5);
        if (fabs(micro - whole) <= 1e-9 * (whole > 1 ? whole : 1)) {
            micro = whole;
        }
        if (micro < 1 || micro != floor(micro)) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "per_device_batch_size %g x %llu devices is %g sequences per "
                                   "micro-batch: it must be a whole number of at least 1",
                                   c->per_device_batch_size, (unsigned long long)c->num_devices,
                                   micro);
        }
        *out = (uint64_t)micro;
        return REMAT_OK;
    }
    const size_t field = remat_i_config_size_field(key);
    if (field) {
        *out = *(const uint64_t *)(const void *)((const char *)c + field);
        return REMAT_OK;
    }
    if (derived_size(c, key, out)) {
        return REMAT_OK;
    }
    for (size_t i = 0; i < NKEYS; i++) {
        const bool integer =
            keys[i].type == K_U64 || keys[i].type == K_AUTO || keys[i].type == K_COUNT;
        if (integer && strcmp(keys[i].name, key) == 0) {
            *out = *(const uint64_t *)(const void *)((const char *)c + keys[i].offset);
            return REMAT_OK;
        }
    }
    return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL, "'%s' is not an integer config key",
                           key);
}

unsigned remat_config_dtype_bytes(const remat_config_t *c, remat_dtype_t d) {
    if (d == REMAT_DTYPE_ACT) {
        return remat_dtype_bytes(c->dtype);
    }
    if (d == REMAT_DTYPE_WEIGHT) {
        return remat_dtype_bytes(c->weight_dtype);
    }
    return remat_dtype_bytes(d);
}

bool remat_config_several_slices(const remat_config_t *c) {
    bool slices = c->num_slices > 1;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        slices |= c->dcn[a] > 1;
    }
    return slices;
}
