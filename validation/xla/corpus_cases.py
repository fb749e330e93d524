"""The corpus's cases: every knob users turn, on every chip.

A case is a run without its batch: model, slice, policy and the settings
that make it what it is. corpus.py plans each case's runs by choosing
`per_device_batch_size` (and, for models too large for the slice, the
number of scanned layers) so that remat's predicted peak lands at each of
the case's target shares of XLA's limit; XLA then says where they really
land. Most targets sit near the limit (0.95, 1.1), where a verdict can be
wrong; a few sit far below it, where the peak's size is what is tested.

Fields: model, topology, policy, settings (more key=value), targets (shares
of the limit), layers ('model' keeps the published count; 'auto' picks the
largest count, in steps of `step`, whose static memory is at most half the
limit: the scanned body compiles once, so fewer layers change only how
often it repeats).
"""

NEAR = (0.95, 1.1)
FIT = (0.95,)
WIDE = (0.6, 0.95, 1.1)


def case(model, topology, policy="full", settings=(), targets=NEAR, layers="model", step=1,
         figure=None):
  """A case; figure: the remat JSON key the targets are fractions of the
  limit of (default the step's peak, peak_hbm_bytes)."""
  c = {
      "model": model,
      "topology": topology,
      "policy": policy,
      "settings": list(settings),
      "targets": list(targets),
      "layers": layers,
      "step": step,
  }
  if figure:
    c["figure"] = figure
  return c


# The published Gemma 4 E2B (and E4B) Ironwood recipes' settings but their
# sequence and batch (validation/runs.json).
E2B_RECIPE = ["scan_layers=false", "dtype=bfloat16", "num_vocab_tiling=8", "ici_data_parallelism=4",
              "ici_fsdp_parallelism=-1", "attention=flash", "opt_type=adamw",
              "allow_split_physical_axes=true"]
TP2 = ["ici_tensor_parallelism=2"]
TP4 = ["ici_tensor_parallelism=4"]
CUSTOM_A = ["query_proj=device", "key_proj=device", "value_proj=device", "mlpwo=device"]
CUSTOM_B = ["query_proj=offload", "key_proj=offload", "value_proj=offload", "out_proj=device"]
CUSTOM_C = ["mlpwi_0=device", "mlpwi_1=offload", "out_proj=device"]
# DeepSeek-V3.2's sparse training stage on Tokamax's splash kernel
DS32 = ["attention=flash", "use_tokamax_splash=true", "indexer_sparse_training=true"]
# MaxText's v4 52B benchmark model (base.yml's decoder at these dims)
D52 = ["base_num_decoder_layers=32", "base_emb_dim=12288", "base_mlp_dim=49152", "base_num_query_heads=32",
       "base_num_kv_heads=32", "head_dim=128", "vocab_size=32000"]

CASES = [
    # v5e: 15.75 GiB a device; small dense models, every preset.
    case("llama2-7b", "v5e-16", "full", targets=WIDE),
    case("llama2-7b", "v5e-16", "minimal"),
    case("llama2-7b", "v5e-16", "save_qkv_proj"),
    case("llama2-7b", "v5e-16", "qkv_proj_offloaded"),
    case("llama2-7b", "v5e-16", "full", ["weight_dtype=bfloat16"]),
    case("llama2-7b", "v5e-16", "full", ["gradient_accumulation_steps=4"]),
    case("llama2-7b", "v5e-16", "minimal", ["gradient_accumulation_steps=2"]),
    case("llama2-7b", "v5e-16", "full", ["scan_layers=false"], layers=8),
    case("llama2-7b", "v5e-16", "full", ["parameter_memory_host_offload=true", "param_scan_axis=0"]),
    case("llama2-7b", "v5e-16", "full", ["quantization=fp8"]),
    case("llama2-7b", "v5e-8", "full", ["num_slices=2"]),
    case("llama2-13b", "v5e-32", "qkv_proj_offloaded"),
    case("llama2-13b", "v5e-32", "save_dot_except_mlpwi"),
    case("llama3-8b", "v5e-16", "save_dot_except_mlp"),
    case("llama3-8b", "v5e-32", "full", TP2),
    case("llama3-8b", "v5e-16", "minimal", ["num_vocab_tiling=4"]),
    case("mistral-7b", "v5e-16", "save_out_proj"),
    case("qwen2.5-7b", "v5e-16", "minimal_with_context"),
    case("gemma2-2b", "v5e-8", "full"),
    case("gemma2-2b", "v5e-8", "minimal"),
    case("gemma3-4b", "v5e-8", "full", layers="auto", step=6),
    case("mixtral-8x7b", "v5e-32", "full", layers="auto"),
    case("deepseek2-16b", "v5e-32", "full", layers="auto"),
    # v4: 30.75 GiB a device (two TensorCores as one: v4-16 is 8 devices).
    case("llama2-7b", "v4-16", "full"),
    case("llama2-7b", "v4-16", "minimal"),
    case("llama2-7b", "v4-16", "full", ["ici_context_parallelism=2", "max_target_length=4096"]),
    case("llama2-7b", "v4-16", "full", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4"]),
    # the pipeline's other knobs: two layers an iteration, delayed forwarding,
    # a policy that keeps more than the layer's input
    case("llama2-7b", "v4-16", "full", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                                        "num_layers_per_pipeline_stage=2"]),
    case("llama2-7b", "v4-16", "full", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                                        "pipeline_delay_activation_forwarding=true"]),
    case("llama2-7b", "v4-16", "save_qkv_proj", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4"]),
    case("llama2-13b", "v4-16", "save_dot_except_mlpwi"),
    case("gpt3-22b", "v4-16", "full"),
    case("gpt3-175b", "v4-32", "full", layers="auto"),
    case("llama3-8b", "v4-16", "minimal", TP2),
    case("llama3-8b", "v4-8", "minimal", ["quantization=fp8"]),
    case("qwen2.5-14b", "v4-32", "full"),
    case("mixtral-8x7b", "v4-32", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("gemma2-9b", "v4-16", "full"),
    case("deepseek2-16b", "v4-16", "full", layers="auto"),
    # v6e: 31.25 GiB a device.
    case("llama3.1-8b", "v6e-8", "full", targets=WIDE),
    case("llama3.1-8b", "v6e-8", "minimal"),
    case("llama3.1-8b", "v6e-8", "save_dot_with_context_except_mlp"),
    case("llama3.1-8b", "v6e-8", "minimal_offloaded"),
    case("llama3.1-8b", "v6e-8", "full", ["num_vocab_tiling=4"]),
    case("llama3.1-8b", "v6e-8", "minimal", ["gradient_accumulation_steps=2"]),
    case("llama3.1-8b", "v6e-8", "full", ["num_slices=2"]),
    # several slices: where XLA's own schedule holds the logits (under the
    # rematerialization pass's limit) and where its pass takes them out
    # (docs/validation.md), under another policy and with FSDP across them
    case("llama3.1-8b", "v6e-8", "minimal", ["num_slices=2"], targets=(0.9, 1.0, 1.15)),
    case("llama3.1-8b", "v6e-8", "full", ["num_slices=2", "dcn_fsdp_parallelism=2", "dcn_data_parallelism=1"]),
    case("llama3.1-8b", "v6e-8", "full", ["max_target_length=8192"]),
    case("llama3.1-8b", "v6e-8", "custom", CUSTOM_A),
    case("llama3.1-8b", "v6e-8", "custom", CUSTOM_B),
    case("llama3.1-70b", "v6e-16", "full", layers="auto"),
    case("llama3.1-70b", "v6e-16", "full", TP4, layers="auto"),
    case("llama2-70b", "v6e-32", "full", ["ici_pipeline_parallelism=4", "num_pipeline_microbatches=8"], layers="auto", step=4),
    case("mistral-7b", "v6e-8", "save_qkv_proj", ["quantization=fp8"]),
    case("qwen2.5-14b", "v6e-16", "full"),
    case("gemma2-27b", "v6e-16", "full", layers="auto"),
    case("gemma3-12b", "v6e-16", "full", layers="auto", step=6),
    case("mixtral-8x7b", "v6e-16", "full", layers="auto"),
    case("qwen3-30b-a3b", "v6e-16", "full", layers="auto"),
    # Gemma 1 (GeGLU, tied) and the tied llama layer (Qwen2.5 1.5B)
    case("gemma-7b", "v5e-16", "full"),
    case("gemma-2b", "v6e-8", "minimal"),
    case("qwen2.5-1.5b", "v5e-8", "full"),
    case("qwen2.5-1.5b", "v4-8", "save_qkv_proj"),
    # dense Qwen3 (QK-norm on a dense layer): two chips, two policies
    case("qwen3-8b", "v6e-8", "full"),
    case("qwen3-14b", "v5p-16", "save_qkv_proj"),
    case("gpt-oss-20b", "v6e-16", "full", layers="auto", step=2),
    # v5p: 95.74 GiB a device (v5p-16 is 8 devices).
    case("llama3.1-70b", "v5p-16", "full", layers="auto", targets=WIDE),
    case("llama3.1-70b", "v5p-16", "minimal", layers="auto"),
    case("llama3.1-70b", "v5p-16", "save_qkv_proj", layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["weight_dtype=bfloat16"], layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["parameter_memory_host_offload=true", "param_scan_axis=0"], layers="auto"),
    case("llama3.1-70b", "v5p-16", "custom", CUSTOM_C, layers="auto"),
    case("llama3.1-70b", "v5p-32", "full", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4"], layers="auto", step=2),
    case("llama3.1-405b", "v5p-32", "full", layers="auto"),
    case("llama3-8b", "v5p-8", "minimal", ["max_target_length=8192"]),
    case("gpt3-175b", "v5p-16", "full", layers="auto"),
    case("gpt3-175b", "v5p-16", "minimal", layers="auto"),
    case("deepseek3-671b", "v5p-16", "full", layers="auto"),
    case("deepseek3-671b", "v5p-16", "custom", ["decoder_layer_input=offload", "out_proj=offload"], layers="auto"),
    case("deepseek2-236b", "v5p-16", "full", layers="auto"),
    case("mixtral-8x22b", "v5p-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("qwen3-235b-a22b", "v5p-16", "full", layers="auto"),
    case("qwen3-480b-a35b", "v5p-32", "full", layers="auto"),
    case("kimi-k2-1t", "v5p-32", "full", layers="auto"),
    case("llama4-17b-16e", "v5p-16", "full", layers="auto", step=4),
    case("llama4-17b-128e", "v5p-32", "full", layers="auto", step=4),
    case("gpt-oss-120b", "v5p-16", "full", layers="auto", step=2),
    # TPU7x: two devices a chip, 94.75 GiB a device (tpu7x-8 is 8 devices).
    case("llama3.1-8b", "tpu7x-8", "full", targets=WIDE),
    case("llama3.1-8b", "tpu7x-8", "minimal"),
    case("llama3.1-8b", "tpu7x-8", "save_dot_except_mlp", targets=FIT),
    case("llama3.1-8b", "tpu7x-8", "minimal_with_context", TP2, targets=FIT),
    case("llama3.1-8b", "tpu7x-8", "full", ["max_target_length=8192"], targets=FIT),
    case("llama3.1-70b", "tpu7x-16", "full", layers="auto"),
    case("llama3.1-70b", "tpu7x-16", "full", ["quantization=fp8"], layers="auto", targets=FIT),
    case("llama3.1-405b", "tpu7x-32", "full", layers="auto", targets=FIT),
    case("qwen3-30b-a3b", "tpu7x-16", "full", layers="auto", targets=FIT),
    case("deepseek3-671b", "tpu7x-16", "full", layers="auto", targets=FIT),
    # DeepSeek-V3's batch-split schedule (the MoE layers' own scan: two
    # halves, its own residuals, weights gathered a layer ahead; tokens
    # all-gathered over the expert axis): 1 dense and 4 MoE layers, the
    # fewest it runs
    case("deepseek3-671b-batchsplit", "tpu7x-16", "full",
         ["batch_split_factor=2", "ici_expert_parallelism=8", "first_num_dense_layers=1"], layers=5),
    case("gpt-oss-120b", "tpu7x-16", "full", layers="auto", step=2, targets=FIT),
    case("llama4-17b-16e", "tpu7x-16", "full", layers="auto", step=4, targets=FIT),
    case("gemma3-27b", "tpu7x-16", "full", layers="auto", step=6, targets=FIT),
    # More of every knob, each chip: presets across chips, MoE meshes,
    # accumulation and fp8 beyond one chip, scan off on another.
    case("llama3.1-8b", "v5p-8", "save_out_proj"),
    case("llama3.1-8b", "v5p-8", "minimal_with_context", ["gradient_accumulation_steps=2"]),
    case("llama3.1-8b", "v5p-8", "qkv_proj_offloaded"),
    case("llama3.1-8b", "v5p-8", "full", ["num_vocab_tiling=4", "max_target_length=8192"]),
    case("mistral-7b", "v4-16", "minimal_offloaded"),
    case("qwen2.5-7b", "v4-16", "save_qkv_proj", ["weight_dtype=bfloat16"]),
    case("llama2-7b", "v4-16", "custom", CUSTOM_B),
    case("llama2-7b", "v4-16", "full", ["scan_layers=false"], layers=8),
    case("gemma2-2b", "v6e-8", "save_dot_except_mlp"),
    case("gemma3-4b", "v6e-8", "minimal", layers="auto", step=6),
    case("qwen2.5-7b", "v6e-8", "qkv_proj_offloaded"),
    case("llama3.1-8b", "v6e-16", "full", ["ici_context_parallelism=2", "max_target_length=8192"]),
    case("mixtral-8x7b", "v6e-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("deepseek2-16b", "v6e-16", "minimal", layers="auto"),
    case("qwen3-30b-a3b", "v5p-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("mixtral-8x7b", "v5p-16", "minimal", layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["quantization=fp8"], layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["gradient_accumulation_steps=2"], layers="auto"),
    case("llama3-8b", "v5e-16", "full", ["ici_context_parallelism=2", "max_target_length=4096"]),
    case("gemma2-9b", "v5e-32", "full", layers="auto"),
    case("llama2-7b", "v5e-16", "custom", CUSTOM_C),
    case("mistral-7b", "v5e-16", "minimal", ["quantization=fp8"]),
    case("gpt3-22b", "v5p-8", "minimal"),
    case("llama3.1-8b", "tpu7x-8", "qkv_proj_offloaded", targets=FIT),
    case("llama3.1-8b", "tpu7x-8", "full", ["gradient_accumulation_steps=2"], targets=FIT),
    # The second copy of the saved layer inputs (docs/validation.md): the
    # 52B on one slice and on two, data parallel across them, with vocab
    # tiling, and FSDP across them; a small dense model on two slices.
    case("default", "v4-384", "full", D52 + ["ici_fsdp_parallelism=192"]),
    case("default", "v4-384", "full", D52 + ["num_slices=2", "ici_fsdp_parallelism=192", "dcn_data_parallelism=2"]),
    case("default", "v4-384", "full", D52 + ["num_slices=2", "ici_fsdp_parallelism=192", "dcn_data_parallelism=2",
                                            "num_vocab_tiling=8"]),
    case("default", "v4-384", "full", D52 + ["num_slices=2", "ici_fsdp_parallelism=192", "dcn_fsdp_parallelism=2",
                                            "dcn_data_parallelism=1"]),
    case("llama2-7b", "v5e-16", "full", ["num_slices=2", "dcn_data_parallelism=2"]),
    # The rule made of it (docs/memory-model.md, "The saved inputs laid out
    # again"), checked where it was not read: other policies, an offloaded
    # input (no copy on the device), another chip, and where it stays off
    # (tensor parallelism across the slices' chips, data parallelism within
    # one slice).
    case("llama2-7b", "v5e-16", "save_qkv_proj", ["num_slices=2", "dcn_data_parallelism=2"]),
    case("llama2-7b", "v5e-16", "minimal", ["num_slices=2", "dcn_data_parallelism=2"]),
    case("llama2-7b", "v5e-16", "qkv_proj_offloaded", ["num_slices=2", "dcn_data_parallelism=2"]),
    case("llama2-7b", "v4-16", "full", ["num_slices=2", "dcn_data_parallelism=2"]),
    case("llama3-8b", "v6e-16", "save_dot_except_mlp", ["num_slices=2", "dcn_data_parallelism=2"]),
    case("llama2-7b", "v5e-16", "full", ["num_slices=2", "dcn_data_parallelism=2"] + TP2),
    # tensor parallelism's whole-size activation buffers (memory-model.md):
    # read on the large published runs, tested here on small slices
    case("llama3-8b", "v5e-16", "full", TP4),
    case("llama2-7b", "v4-16", "full", TP2),
    case("llama3.1-8b", "v6e-8", "save_qkv_proj", TP2),
    case("llama3.1-70b", "v5p-16", "full", TP2, layers="auto"),
    case("llama2-7b", "v5e-16", "full", ["ici_data_parallelism=2"]),
    # The same knobs on meshes JAX lays out on the 4x4 and 4x8 grids (the
    # cases above with an axis of 2 stop in MaxText's mesh layout: no
    # whole physical axis is 2): context, data, tensor and expert
    # parallelism of 4, one slice and two.
    case("llama3-8b", "v5e-16", "full", ["ici_context_parallelism=4", "max_target_length=8192"]),
    case("llama3.1-8b", "v6e-16", "full", ["ici_context_parallelism=4", "max_target_length=8192"]),
    case("llama2-7b", "v5e-16", "full", ["ici_data_parallelism=4"]),
    case("llama3-8b", "v5e-32", "full", ["ici_tensor_parallelism=4"]),
    case("llama2-7b", "v5e-16", "full", ["num_slices=2", "dcn_data_parallelism=2", "ici_tensor_parallelism=4"]),
    case("mixtral-8x7b", "v5e-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    # gpt3-6b: the learned position table of trainable_position_size rows
    # (16384) at sequence 1024.
    case("gpt3-6b", "v5e-16", "full", targets=FIT),
    case("gpt3-6b", "v6e-8", "minimal", targets=FIT),
    # the tied Qwen3 layer (qwen3_tied): two chips, two policies
    case("qwen3-4b", "v5e-8", "full", targets=FIT),
    case("qwen3-1.7b", "v6e-8", "save_qkv_proj", targets=FIT),
    # OLMo 3 (no pre-norms, query/key norms over all heads, blocks of 4 layers)
    case("olmo3-7b", "v6e-8", "full", targets=FIT),
    case("olmo3-32b", "v5p-16", "save_qkv_proj", layers="auto", targets=FIT, step=4),
    # blocks of 4 re-run whole near the limit: where XLA's rematerialization
    # takes the held re-runs apart (the layer-by-layer step at these shares)
    case("olmo3-7b", "v6e-8", "full", targets=(0.82, 0.85, 0.88)),
    # Gemma 4 31B (global layers with their own head dim and one key/value
    # projection, value norms, layer scalars): two chips, two policies
    case("gemma4-31b", "v5p-16", "full", layers="auto", targets=NEAR, step=6),
    case("gemma4-31b", "tpu7x-8", "save_qkv_proj", layers="auto", targets=FIT, step=6),
    # its global layers keep on device what the policy offloads by name
    case("gemma4-31b", "v5p-16", "qkv_proj_offloaded", layers="auto", targets=FIT, step=6),
    # Gemma 4 26B-A4B (the same layers with a shared and 128 routed experts)
    case("gemma4-26b", "v5p-16", "full", layers="auto", targets=NEAR, step=6),
    case("gemma4-26b", "v6e-16", "save_qkv_proj", layers="auto", targets=FIT, step=6),
    # Gemma 4 E2B and E4B (gemma4_small: per-layer inputs, keys and values
    # shared from donor layers; MaxText runs it unscanned, so every layer
    # compiles: the published layer counts)
    case("gemma4-e2b", "v5e-16", "full", ["scan_layers=false"], targets=NEAR),
    case("gemma4-e4b", "v6e-16", "save_qkv_proj", ["scan_layers=false"], targets=FIT),
    # and under the limit by remat's figure, where XLA may fit them
    case("gemma4-e2b", "v5e-16", "full", ["scan_layers=false"], targets=(0.9,)),
    case("gemma4-e4b", "v6e-16", "full", ["scan_layers=false"], targets=(0.9,)),
    # Envy (a routed MoE block every second layer, blocks of two re-run whole)
    case("envy-switch-base", "v5p-16", "full", targets=NEAR),
    case("envy-switch-large", "tpu7x-16", "save_qkv_proj", layers="auto", targets=FIT, step=2),
    # Qwen3-Next and Qwen3.5's text decoder (qwen3_next: gated DeltaNet
    # layers with their chunked delta rule, a gated attention layer every
    # fourth, MoE with a shared expert; blocks of four re-run whole)
    case("qwen3-next-80b-a3b", "v5p-16", "full", layers="auto", step=4, targets=NEAR),
    case("qwen3.5-35b-a3b", "v6e-16", "save_qkv_proj", layers="auto", step=4, targets=NEAR),
    # Qwen3-VL's vision encoder (qwen3_vl: in the head, frozen, fp32), two
    # decoder layers (unscanned, as MaxText requires with deepstack) so
    # that the head sets the peak: the loss's, and with the chunked loss
    # the encoder's attention scores and their softmax
    case("qwen3-vl-2b", "v6e-8", "full", ["scan_layers=false", "max_target_length=1024"],
         layers=2, targets=NEAR),
    case("qwen3-vl-2b", "v6e-8", "full",
         ["scan_layers=false", "max_target_length=1024", "num_vocab_tiling=8"], layers=2,
         targets=NEAR),
    # Gemma 3's vision encoder (gemma3_vision: use_multimodal=true on the
    # gemma3 graph; in the head, frozen, fp32, 4,096 patches an image), two
    # decoder layers, unscanned (each its own remat unit, where a scanned
    # block of six would re-run whole), so that the head sets the peak: the
    # loss's over the 262,144-token vocabulary, and with the chunked loss
    # the encoder's [16, 4096, 4096] fp32 scores an image
    case("gemma3-4b", "v6e-8", "full", ["use_multimodal=true", "scan_layers=false"], layers=2,
         targets=FIT),
    case("gemma3-4b", "v6e-8", "full",
         ["use_multimodal=true", "scan_layers=false", "num_vocab_tiling=8"], layers=2,
         targets=FIT),
    # Llama 4 Scout's vision encoder (llama4_qk_norm_vision: use_multimodal=true
    # on the llama4_qk_norm graph; in the head, frozen, fp32, 20 tiles of 577
    # tokens an image), two MoE decoder layers, unscanned (each its own remat
    # unit, where a scanned block of four would re-run whole), so that the
    # head sets the peak: the loss's over the 202,048-token vocabulary, and
    # with the chunked loss the encoder's [20, 16, 577, 577] fp32 scores an
    # image
    case("llama4-17b-16e", "v5p-8", "full",
         ["use_multimodal=true", "scan_layers=false", "max_target_length=2048"], layers=2,
         targets=FIT),
    case("llama4-17b-16e", "v5p-8", "full",
         ["use_multimodal=true", "scan_layers=false", "max_target_length=1024",
          "num_vocab_tiling=8"], layers=2, targets=FIT),
    # Qwen3-Omni 30B-A3B (qwen3_omni: Qwen3-VL 30B-A3B's step with the
    # audio encoder's params and moments held, none of it run: MaxText's
    # train step passes no audio), two decoder layers, near the limit: at
    # the loss's peak, and with the chunked loss where the vision
    # encoder's forward sets it
    case("qwen3-omni-30b-a3b", "v6e-8", "full", ["scan_layers=false", "max_target_length=1024"],
         layers=2, targets=FIT),
    case("qwen3-omni-30b-a3b", "v6e-8", "full",
         ["scan_layers=false", "max_target_length=1024", "num_vocab_tiling=8"], layers=2,
         targets=FIT),
    # and without the audio encoder (use_audio=false: Qwen3-VL 30B-A3B's
    # graph with Omni's vocabulary), whose step differs from the first by
    # the audio state alone
    case("qwen3-omni-30b-a3b", "v6e-8", "full",
         ["scan_layers=false", "max_target_length=1024", "use_audio=false"], layers=2,
         targets=FIT),
    # Qwen3.5's vision encoder (qwen3_5_vision: use_multimodal=true on the
    # qwen3_next graph; Qwen3-VL's encoder without deepstack, in the head,
    # frozen, fp32). One decoder layer, unscanned (a scanned block is four
    # layers re-run whole): its MoE backward and the loss over the
    # 248,320-token vocabulary set the peak within 3% of each other at a
    # sequence of 2,048; with the chunked loss and a sequence of 256 (the
    # encoder's cost does not depend on it: one image an example, whose
    # 576 tokens the merge places where placeholders are) the encoder's
    # [16, 2304, 2304] fp32 scores an image set it
    case("qwen3.5-35b-a3b", "v6e-8", "full",
         ["use_multimodal=true", "scan_layers=false", "max_target_length=2048"], layers=1,
         targets=FIT),
    case("qwen3.5-35b-a3b", "v6e-8", "full",
         ["use_multimodal=true", "scan_layers=false", "max_target_length=256",
          "num_vocab_tiling=8"], layers=1, targets=FIT),
    # The one-slice partner rule (docs/memory-model.md, "On one slice, the
    # partners of an offloaded residual") where it was not read: the
    # attention's output projection kept beside an offloaded layer input
    # (a copy of the projection's stack), the MLP's output offloaded beside
    # no kept partner (the residual add's other side is re-run: no copy),
    # minimal_offloaded on v5p and on TPU7x, and an MoE model's gated
    # expert product.
    case("llama2-7b", "v5e-16", "custom", ["decoder_layer_input=offload", "out_proj=device"]),
    case("llama3.1-8b", "v6e-8", "custom", ["mlpwo=offload", "mlpwi_0=device", "mlpwi_1=device"]),
    case("llama3.1-8b", "v5p-8", "minimal_offloaded"),
    case("llama3.1-8b", "tpu7x-8", "minimal_offloaded", targets=FIT),
    case("mixtral-8x7b", "v5p-16", "custom", ["mlpwi_0=device", "mlpwi_1=offload"], layers="auto"),
    # Scanned blocks whose inner inputs are re-run, just over the limit
    # with their re-runs held (docs/memory-model.md, "Blocks re-run
    # whole"), where the layer-by-layer step is well under it: whether XLA
    # keeps the held re-runs or takes the blocks apart (it did both: check
    # calls such a step RISK).
    case("gemma3-12b", "v6e-16", "full", layers="auto", step=6, targets=(1.02,)),
    case("olmo3-7b", "v6e-8", "full", targets=(1.04,)),
    case("gpt-oss-20b", "v5p-16", "full", layers="auto", step=2, targets=(1.01,)),
    case("llama4-17b-16e", "v6e-16", "full", layers="auto", step=4, targets=(1.02,)),
    case("gemma3-4b", "v4-16", "save_qkv_proj", layers="auto", step=6, targets=(1.0,)),
    # Unrolled layers (scan_layers=false) where XLA may fit: every unrolled
    # compile so far was refused, at up to 1.45 times remat's peak, so the
    # targets sit below the limit by remat's figure; on chips of both
    # matrix widths.
    case("llama2-7b", "v4-16", "full", ["scan_layers=false"], layers=8, targets=(0.6, 0.7)),
    case("llama2-7b", "v5e-16", "full", ["scan_layers=false"], layers=8, targets=(0.7, 0.8)),
    case("llama3.1-8b", "v6e-8", "full", ["scan_layers=false"], layers=8, targets=(0.7, 0.85, 1.0)),
    case("llama3.1-8b", "v5p-8", "save_qkv_proj", ["scan_layers=false"], layers=8, targets=(0.7, 0.85, 1.0)),
    # which of chip and policy the hoisting follows: v5p under full, v6e
    # under save_qkv_proj
    case("llama3.1-8b", "v5p-8", "full", ["scan_layers=false"], layers=8, targets=(0.6, 0.8, 0.95)),
    case("llama3.1-8b", "v6e-8", "save_qkv_proj", ["scan_layers=false"], layers=8, targets=(0.7, 0.85, 0.95)),
    # v5p with another model and slice, and TPU7x
    case("llama2-7b", "v5p-16", "full", ["scan_layers=false"], layers=8, targets=(0.8, 0.95)),
    case("llama3.1-8b", "tpu7x-8", "full", ["scan_layers=false"], layers=8, targets=(0.7, 0.9)),
    # A peeled block with an inner scan (docs/validation.md, the one-slice
    # offload class): Gemma 4 with an offloaded residual under the limit by
    # remat's figure, where the peeled block's five local layers, unrolled,
    # would hold their re-runs at once.
    case("gemma4-31b", "v5p-16", "qkv_proj_offloaded", layers="auto", step=6, targets=(0.85, 0.9)),
    # The unrolled bound where the gate stands on it: the published Gemma 4
    # E2B Ironwood recipe (XLA holds all 35 layers' re-runs there) at longer
    # sequences, planned by the bound (unrolled_held_peak_bytes) at and
    # just under check's margin.
    case("gemma4-e2b", "tpu7x-128", "full", E2B_RECIPE + ["max_target_length=10240"], targets=(0.95,),
         figure="unrolled_held_peak_bytes"),
    case("gemma4-e2b", "tpu7x-128", "full", E2B_RECIPE + ["max_target_length=12288"], targets=(0.95,),
         figure="unrolled_held_peak_bytes"),
    # and E4B (its recipe, whose bound is over the limit, compiled with
    # fewer re-runs made ahead) at 6,144 tokens, where the bound is under
    # the margin
    case("gemma4-e4b", "tpu7x-128", "full", E2B_RECIPE + ["max_target_length=6144"], targets=(0.85,),
         figure="unrolled_held_peak_bytes"),
    # The expert-parallel path (the graphs' .ep variants: the receive
    # buffer sorted again, the experts' output sorted back), planned by the
    # model that has it, on families and degrees the corpus had not run
    # with expert parallelism.
    case("deepseek2-16b", "v6e-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("gpt-oss-20b", "v6e-16", "full", ["ici_expert_parallelism=4"], layers="auto", step=2),
    case("mixtral-8x7b", "v5e-16", "full", ["ici_expert_parallelism=2"], layers="auto"),
    # DeepSeek-V3.2's sparse-attention indexer (the deepseek graph's
    # .indexer variant), past indexer_topk keys where MaxText runs it, in
    # the stage and on the kernel its model file names (MaxText's yml
    # leaves them to the command line).
    case("deepseek3.2-671b", "v5p-16", "full", DS32 + ["max_target_length=8192"], layers="auto"),
    case("deepseek3.2-671b", "v5p-16", "save_qkv_proj", DS32 + ["max_target_length=8192"], layers="auto"),
    case("deepseek3.2-671b", "v5p-16", "full", DS32 + ["max_target_length=16384"], layers="auto"),
    # The spread's gaps at 656 runs: knobs a chip had not run (gradient
    # accumulation on v4 and v6e's full, context parallelism on v5p,
    # expert parallelism, several slices and bf16 weights on TPU7x, the
    # params' host offload on v6e, a pipeline on v5e).
    case("llama2-7b", "v4-16", "full", ["gradient_accumulation_steps=2"]),
    case("llama3.1-8b", "v6e-8", "full", ["gradient_accumulation_steps=4"]),
    case("llama3.1-8b", "v5p-8", "full", ["ici_context_parallelism=2", "max_target_length=8192"]),
    case("mixtral-8x7b", "tpu7x-16", "full", ["ici_expert_parallelism=4"], layers="auto"),
    case("llama3.1-8b", "tpu7x-8", "full", ["num_slices=2"]),
    case("llama3.1-8b", "tpu7x-8", "save_qkv_proj", ["weight_dtype=bfloat16"]),
    case("llama3.1-8b", "v6e-8", "full", ["parameter_memory_host_offload=true", "param_scan_axis=0"]),
    case("llama2-7b", "v5e-16", "full", ["ici_pipeline_parallelism=2", "num_pipeline_microbatches=4"]),
    # The loss's gradient beside the logits without a windowed einsum (data
    # across slices): other policies on two TPU7x-8 slices, and v5p's.
    case("llama3.1-8b", "tpu7x-8", "save_dot_except_mlp", ["num_slices=2"]),
    case("llama3.1-8b", "tpu7x-8", "minimal", ["num_slices=2"]),
    case("llama3.1-8b", "v5p-8", "save_dot_except_mlp", ["num_slices=2"]),
]


# The published runs remat disagreed with (validation/runs.json), compiled
# as remat reads them: each its own settings with the slice named as
# MaxText names it (topology counts TensorCores; num_slices the slices).
# (Compiled first; published_runs() below adds every other TPU run.)
PUBLISHED = [
    ("published_v5e-256_llama2-13b_qkv_proj_offloaded_b8",
     ["model_name=default", "base_emb_dim=5120", "base_num_query_heads=40", "base_num_kv_heads=40",
      "base_mlp_dim=13824", "base_num_decoder_layers=40", "head_dim=128", "vocab_size=32000",
      "topology=v5e-256", "per_device_batch_size=8", "max_target_length=2048",
      "remat_policy=qkv_proj_offloaded"]),
    ("published_v4-384x2_default-52b_full_b7",
     ["model_name=default", "base_num_decoder_layers=32", "base_emb_dim=12288", "base_mlp_dim=49152",
      "base_num_query_heads=32", "base_num_kv_heads=32", "head_dim=128", "vocab_size=32000",
      "max_target_length=2048", "topology=v4-384", "num_slices=2", "ici_fsdp_parallelism=192",
      "ici_tensor_parallelism=1", "dcn_data_parallelism=2", "per_device_batch_size=7", "remat_policy=full"]),
    ("published_v5p-512_deepseek3-671b_custom_b6",
     ["model_name=deepseek3-671b", "topology=v5p-512", "ici_fsdp_parallelism=-1", "ici_tensor_parallelism=1",
      "per_device_batch_size=6", "max_target_length=8192", "dtype=bfloat16", "weight_dtype=float32",
      "sparse_matmul=true", "scan_layers=true", "remat_policy=custom", "decoder_layer_input=offload",
      "out_proj=offload", "sa_block_kv=2048", "wi_tile_fwd_batch_seq=512"]),
    ("published_v6e-8_qwen3-8b-dims_custom_b20",
     ["model_name=default", "base_emb_dim=4096", "base_num_query_heads=32", "base_num_kv_heads=8",
      "base_mlp_dim=12288", "base_num_decoder_layers=36", "head_dim=128", "vocab_size=151936",
      "topology=v6e-8", "per_device_batch_size=20", "ici_fsdp_parallelism=-1", "remat_policy=custom",
      "decoder_layer_input=offload", "out_proj=offload", "query_proj=offload", "key_proj=offload",
      "value_proj=offload", "max_target_length=2048", "attention=flash"]),
]


# A slice's name per JAX device count in one slice: v4 and v5p name two
# TensorCores per device (megacore), TPU7x names its devices.
_CORES_PER_DEVICE = {"tpu-v4": ("v4", 2), "tpu-v5e": ("v5e", 1), "tpu-v5p": ("v5p", 2), "tpu-v6e": ("v6e", 1),
                     "tpu7x": ("tpu7x", 1)}
# The four above, by their runs.json ids.
_DONE = {"v5e-256-llama2-13b-pdb8": PUBLISHED[0][0], "v4-384chips-default-52b-pdb7-noflash-oom": PUBLISHED[1][0],
         "v5p-256-deepseek3-671b-pdb6": PUBLISHED[2][0], "v6e-8-qwen3-8b-offload-pdb20-s2048": PUBLISHED[3][0]}


def published_runs(path):
  """(corpus id, settings, runs.json id) for every expressible TPU run of
  validation/runs.json: its settings with num_devices replaced by the slice
  (`topology`, and `num_slices` where its dcn axes span slices)."""
  import json  # pylint: disable=import-outside-toplevel

  with open(path, encoding="utf-8") as f:
    runs = json.load(f)["runs"]
  out = []
  for r in runs:
    if r.get("expressible") is False or r["hardware"] not in _CORES_PER_DEVICE:
      continue
    if r["id"] in _DONE:
      out.append((_DONE[r["id"]], None, r["id"]))
      continue
    kv = dict(x.split("=", 1) for x in r["settings"])
    slices = 1
    for k, v in kv.items():
      if k.startswith("dcn_") and int(v) > 1:
        slices *= int(v)
    slices = max(slices, int(kv.get("num_slices", 1)))
    devices = int(kv.get("num_devices", r["devices"]))
    name, cores = _CORES_PER_DEVICE[r["hardware"]]
    settings = [x for x in r["settings"] if not x.startswith(("num_devices=", "num_slices=", "hardware="))]
    settings += [f"topology={name}-{devices // slices * cores}"] + ([f"num_slices={slices}"] if slices > 1 else [])
    out.append((f"published_{r['id']}", settings, r["id"]))
  return out
