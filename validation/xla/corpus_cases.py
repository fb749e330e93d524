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


def case(model, topology, policy="full", settings=(), targets=NEAR, layers="model", step=1):
  return {
      "model": model,
      "topology": topology,
      "policy": policy,
      "settings": list(settings),
      "targets": list(targets),
      "layers": layers,
      "step": step,
  }


TP2 = ["ici_tensor_parallelism=2"]
TP4 = ["ici_tensor_parallelism=4"]
CUSTOM_A = ["query_proj=device", "key_proj=device", "value_proj=device", "mlpwo=device"]
CUSTOM_B = ["query_proj=offload", "key_proj=offload", "value_proj=offload", "out_proj=device"]
CUSTOM_C = ["mlpwi_0=device", "mlpwi_1=offload", "out_proj=device"]

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
    case("llama2-7b", "v5e-16", "full", ["parameter_memory_host_offload=true"]),
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
    case("gpt-oss-20b", "v6e-16", "full", layers="auto", step=2),
    # v5p: 95.74 GiB a device (v5p-16 is 8 devices).
    case("llama3.1-70b", "v5p-16", "full", layers="auto", targets=WIDE),
    case("llama3.1-70b", "v5p-16", "minimal", layers="auto"),
    case("llama3.1-70b", "v5p-16", "save_qkv_proj", layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["weight_dtype=bfloat16"], layers="auto"),
    case("llama3.1-70b", "v5p-16", "full", ["parameter_memory_host_offload=true"], layers="auto"),
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
    case("gpt-oss-120b", "tpu7x-16", "full", layers="auto", step=2, targets=FIT),
    case("llama4-17b-16e", "tpu7x-16", "full", layers="auto", step=4, targets=FIT),
    case("gemma3-27b", "tpu7x-16", "full", layers="auto", step=6, targets=FIT),
]
