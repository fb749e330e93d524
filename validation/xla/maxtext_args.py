"""remat's `key=value` settings as MaxText's train_compile arguments.

remat speaks MaxText's key names (docs/config.md), so most settings pass
through unchanged. The exceptions, each a rule:
- `topology` is MaxText's `compile_topology`, `num_slices` its
  `compile_topology_num_slices` (one slice when not given);
- remat's own keys (budgets, margins, efficiencies, its graph and hardware
  profile names, `num_devices`) say nothing MaxText needs and are left out;
  `num_devices` must agree with the topology;
- `model_name` defaults to remat's default (llama3-8b), and
  `override_model_config=true` lets a setting override the model's yml as
  remat's layering does (the preset under everything the user sets);
- the run needs no data, no checkpoint and no output: synthetic data,
  checkpointing off, a scratch output folder.
A setting remat accepts but MaxText has no way to say (`fsdp_prefetch=false`)
is an error: the compile would answer another question.
"""

import re

# The slice names of MaxText's accelerator table that remat accepts: the
# chip's remat profile, TensorCores per chip and JAX devices per chip.
# NAME-N counts TensorCores (MaxText's convention), so devices = N * devices
# per chip / TensorCores per chip.
CHIPS = {
    "v4": ("tpu-v4", 2, 1),
    "v5e": ("tpu-v5e", 1, 1),
    "v5litepod": ("tpu-v5e", 1, 1),
    "v5p": ("tpu-v5p", 2, 1),
    "v6e": ("tpu-v6e", 1, 1),
    "trillium": ("tpu-v6e", 1, 1),
    "tpu7x": ("tpu7x", 2, 2),
    "ironwood": ("tpu7x", 2, 2),
}

# remat's own keys: not MaxText's, or MaxText's with remat's meaning only.
REMAT_ONLY = {
    "graph", "hardware", "hbm_budget", "hbm_reserve", "reserve_fraction", "safety_margin",
    "host_link_bw", "matmul_efficiency", "attention_efficiency", "memory_efficiency",
    "num_devices", "image_token_share",
}

# Settings that only ever hold MaxText's behaviour: accepted at that value.
MAXTEXT_BEHAVIOUR = {"fsdp_prefetch": "true"}

FIXED = [
    "run_name=remat-oracle",
    "dataset_type=synthetic",
    "enable_checkpointing=false",
    "override_model_config=true",
]


class SettingsError(ValueError):
  """A setting that cannot be turned into a MaxText compile."""


class MaxTextArgs:
  """The translated run: MaxText's key=value list and the slice it names."""

  def __init__(self, keys, hardware, topology, num_slices, devices):
    self.keys = keys  # list of "key=value", MaxText's spelling, fixed keys last
    self.hardware = hardware
    self.topology = topology
    self.num_slices = num_slices
    self.devices = devices

  def argv(self, base_yml, output_dir):
    return ["train_compile", base_yml] + self.keys + [f"base_output_directory={output_dir}"]

  def command_line(self):
    """MaxText's own command for the same compile, from a MaxText checkout."""
    env = "TPU_SKIP_MDS_QUERY=1 ALLOW_MULTIPLE_LIBTPU_LOAD=true DECOUPLE_GCLOUD=TRUE"
    return (
        f"{env} python3 -m maxtext.trainers.pre_train.train_compile src/maxtext/configs/base.yml "
        + " ".join(self.keys + ["base_output_directory=remat-oracle-output"])
    )


def slice_of(topology):
  """(remat profile, devices in one slice) for a MaxText slice name."""
  m = re.fullmatch(r"([a-z0-9]+)-([0-9]+)", topology.lower())
  if not m or m.group(1) not in CHIPS:
    raise SettingsError(f"topology '{topology}': not a slice name of the form v5e-8, v5p-16, v4-8, v6e-8 or tpu7x-8")
  profile, cores, per_chip = CHIPS[m.group(1)]
  n = int(m.group(2))
  if n % cores:
    raise SettingsError(f"topology '{topology}': {n} TensorCores is not a whole number of chips")
  return profile, n // cores * per_chip


def _int(key, value):
  try:
    return int(value)
  except ValueError:
    raise SettingsError(f"{key}={value}: not an integer") from None


def translate(settings):
  """MaxTextArgs for a list of remat `key=value` settings (the last of a key wins)."""
  seen = {}
  for s in settings:
    key, value = s.split("=", 1)
    seen[key.strip()] = value.strip()
  seen.setdefault("model_name", "llama3-8b")
  topology = seen.pop("topology", seen.pop("compile_topology", ""))
  if not topology:
    raise SettingsError("no topology: the compile needs the run's slice (topology=v5e-8)")
  profile, per_slice = slice_of(topology)
  slices = _int("num_slices", seen.pop("num_slices", seen.pop("compile_topology_num_slices", "1")))
  if slices < 1:
    slices = 1
  devices = per_slice * slices
  if "num_devices" in seen and _int("num_devices", seen["num_devices"]) != devices:
    raise SettingsError(f"num_devices={seen['num_devices']} but {topology} x {slices} slices is {devices} devices")
  keys = []
  for key, value in seen.items():
    if key in REMAT_ONLY:
      continue
    if key in MAXTEXT_BEHAVIOUR:
      if value.lower() != MAXTEXT_BEHAVIOUR[key]:
        raise SettingsError(f"{key}={value}: MaxText has no such switch; only {MAXTEXT_BEHAVIOUR[key]} is its behaviour")
      continue
    keys.append(f"{key}={value}")
  keys += [f"compile_topology={topology}", f"compile_topology_num_slices={slices}"] + FIXED
  return MaxTextArgs(keys, profile, topology, slices, devices)
