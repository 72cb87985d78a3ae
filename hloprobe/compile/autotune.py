"""Autotune results for compile-only GPU targets: keys, files, options.

A compile-only target is not autotuned (XLA's
`GetConfigAssignerOptions`, xla/service/gpu/autotuning/
config_assigner_pass.cc: `allow_autotuning = ... && !is_deviceless`), but
its config assigner still looks every gemm fusion up in the autotune
cache that `--xla_gpu_load_autotune_results_from=FILE` fills (text format
when the name ends in .txt, .txtpb, .textproto, .prototxt or .pbtxt;
loaded at most once per process). So results recorded on a GPU, or
written here by hand, choose the fusion's backend (Triton tiles, cuBLAS)
in a compile without the GPU.

jaxlib 0.10.2 has neither this format nor its keys: its GPU pipeline has
no config-assigner pass and logs no codegen versions, so the template tool
refuses there in one line ("XLA logged no codegen versions"; checked).

The cache format jaxlib 0.12.0.1's CUDA plugin reads (checked: its log
says "Failed to load autotune results using new format ... Attempting
fallback to legacy format" for an `xla.AutotuneResults` file, whose
entries then never hit; its config assigner reports "strict_hits=2" for
the file `results_textproto` writes): `xla.autotuner.AutotuneCache`
(xla/autotune_cache.proto, schema read from the plugin's embedded
descriptor) with one `AutotuneEntry` per fusion, keyed by

  device           Fingerprint64 of "CUDA: 8.0, Cores: 108, GPU clock:
                   1.41 GHz, Memory bandwidth: 1555 GB/s, L2 cache: 40 MB"
                   (`ComputeDeviceName`, xla/backends/autotuner/
                   autotuner_cache_interface.cc), as 16 hex digits;
  hlo_fingerprint  Fingerprint128 of the fusion instruction printed with
                   `HloPrintOptions::Fingerprint()` plus backend config,
                   sorted, and operand shapes (`GetHloFingerprint`,
                   xla/backends/autotuner/autotune_fingerprint.cc), as 32
                   hex digits, high half first (tiered_cache.cc);
  codegen_version  Fingerprint64 of the sorted "BACKEND:version" list;
                   a mismatch still matches where the chosen backend's own
                   version equals `optimal_backend_version` (tiered_cache.cc
                   `MatchEntry`, KeyMatchingMode::kLoose).

Fingerprint64/128 are tsl's (FarmHash's `Fingerprint64`/`Fingerprint128`;
the `pyfarmhash` package computes the same: XLA's logged device
fingerprint 4882ef514d13f9de for the A100 is reproduced). The instruction
is the fusion as it enters the config-assigner pass (the pass dump before
it), not as the optimized HLO prints it (nested Triton fusions by then).
The backend versions (the Triton commit, cuBLAS) are the XLA build's own:
they come from XLA's log (`parse_codegen_versions`), never from here.

Split-K cannot be chosen this way in jaxlib 0.12.0.1: `TritonGemmKey.
split_k` is a deprecated field there (the text-format parser warns), and
an entry with `split_k: 4` fails the compile ("INVALID_ARGUMENT:
TritonBackend no longer supports split-k (split_k > 1)", checked
2026-12-02 on the seed's a100 fusion); the `splitk-rewriter` HLO pass
decides split-K before config assignment.

Replaying a file in a sweep (an experiment per file, the device and
jaxlib checks, the sites' `selection`) is `autotune_replay`.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping

from hloprobe import private_api
from hloprobe.compile.compat import installed_jaxlib
from hloprobe.errors import TargetError

__all__ = [
  "CUBLAS_CONFIG",
  "AutotuneChoice",
  "CodegenVersions",
  "GemmFusionKey",
  "config_assigner_input",
  "device_fingerprint",
  "device_string",
  "gemm_fusion_keys",
  "parse_codegen_versions",
  "TritonPin",
  "results_textproto",
  "triton_config",
  "triton_pin",
]

# The BackendConfig (xla/backends/autotuner/backend_config.proto) of a gemm
# fusion given to cuBLASLt (backend CUBLASLT_FISSION): algorithm -1, the
# library's default (`AutotuneResult.GemmKey`).
CUBLAS_CONFIG = "gemm { algorithm: -1 }"
# The gemm fusion kinds the config assigner gives configs
# (config_assigner_pass.cc `ShouldAssignConfigToGemmFusion`).
_GEMM_KINDS = ("__triton_gemm", "__cudnn$fusion", "__custom_fusion")


@dataclasses.dataclass(frozen=True, slots=True)
class GemmFusionKey:
  """One gemm fusion as XLA's autotune cache keys it.

  Attributes:
    name: the fusion instruction's name as the config assigner sees it,
      e.g. "gemm_fusion_dot.1" (the optimized HLO keeps it for Triton
      fusions; a cuBLAS choice turns it into a custom call).
    fusion_kind: its backend config's kind, e.g. "__triton_gemm".
    fingerprint_text: the text XLA fingerprints (for reading).
    hlo_fingerprint: Fingerprint128 of that text, 32 hex digits.
  """

  name: str
  fusion_kind: str
  fingerprint_text: str
  hlo_fingerprint: str


@dataclasses.dataclass(frozen=True, slots=True)
class CodegenVersions:
  """The XLA build's codegen versions, as its autotune cache logs them.

  Attributes:
    codegen_version: 16 hex digits, e.g. "070b7c91256c4093".
    per_backend: (backend, version) pairs, e.g. (("TRITON", "b575c0c..."),
      ("CUBLASLT_FISSION", "12.8.0"), ...).
  """

  codegen_version: str
  per_backend: tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class AutotuneChoice:
  """What a results file says one fusion gets.

  Attributes:
    fusion: the fusion.
    backend: an `xla.autotuner.Backend` name: "TRITON" or
      "CUBLASLT_FISSION".
    config: the BackendConfig's body in text format, e.g. `CUBLAS_CONFIG`
      or `triton_config(64, 32, 32)`.
  """

  fusion: GemmFusionKey
  backend: str
  config: str


def _farmhash():
  try:
    import farmhash
  except ImportError:
    raise TargetError(
      "autotune keys need the pyfarmhash package (XLA's Fingerprint64/128): "
      "pip install pyfarmhash"
    ) from None
  return farmhash


def _six_digits(value: float) -> str:
  """A double as absl::StrCat prints it (6 significant digits, no zeros)."""
  return f"{value:.6g}"


def _device_field(config_text: str, field: str) -> str:
  m = re.search(rf"\b{field}\s*:\s*([-+0-9.eE]+)", config_text)
  if m is None:
    raise TargetError(f"target config has no gpu_device_info.{field}")
  return m.group(1)


def device_string(config_text: str) -> str:
  """The device part of XLA's autotune key for a GpuTargetConfigProto.

  `ComputeDeviceName` (xla/backends/autotuner/autotuner_cache_interface.cc,
  jaxlib 0.12.0.1's plugin, whose log prints it): compute capability,
  cores, clock (GHz, float), memory bandwidth (GB/s, rounded), L2 (MB, of
  2**20 bytes). E.g. for hloprobe's a100: "CUDA: 8.0, Cores: 108, GPU
  clock: 1.41 GHz, Memory bandwidth: 1555 GB/s, L2 cache: 40 MB".

  Raises:
    TargetError: a field is missing from the config text.
  """
  major = re.search(
    r"cuda_compute_capability\s*\{[^}]*?major\s*:\s*(\d+)", config_text
  )
  minor = re.search(
    r"cuda_compute_capability\s*\{[^}]*?minor\s*:\s*(\d+)", config_text
  )
  if major is None:
    raise TargetError("target config has no cuda_compute_capability.major")
  cores = int(_device_field(config_text, "core_count"))
  clock = float(_device_field(config_text, "clock_rate_ghz"))
  bandwidth = round(float(_device_field(config_text, "memory_bandwidth")) / 1e9)
  l2_mb = float(_device_field(config_text, "l2_cache_size")) / (1 << 20)
  return (
    f"CUDA: {major.group(1)}.{minor.group(1) if minor else 0}, "
    f"Cores: {cores}, GPU clock: {_six_digits(clock)} GHz, "
    f"Memory bandwidth: {bandwidth} GB/s, L2 cache: {_six_digits(l2_mb)} MB"
  )


def device_fingerprint(config_text: str) -> str:
  """`device_string`'s Fingerprint64 as XLA writes it: 16 hex digits."""
  return f"{_farmhash().fingerprint64(device_string(config_text)):016x}"


def config_assigner_input(pass_dumps: Iterable[tuple[str, str]]) -> str:
  """The module as it enters XLA's config-assigner pass.

  Args:
    pass_dumps: `CompiledCase.pass_dumps` of a compile with
      `dump_passes=True`: (file name, text), in pass order.

  Raises:
    TargetError: no dump names the pass (an XLA without "config-assigner",
      e.g. jaxlib 0.10.2's "autotuner", or not a GPU compile).
  """
  before = None
  for name, text in pass_dumps:
    if ".after_config-assigner." in name:
      if before is None:
        break
      return before
    before = text
  raise TargetError(
    "no config-assigner pass in this compile's pass dumps (jaxlib "
    "0.12.0.1's GPU pipeline has one); autotune keys cannot be computed"
  )


_INSTR_RE = re.compile(
  r"^\s*(?:ROOT )?%([\w.\-]+) = (\S+) ([\w\-]+)\((.*)$", re.M
)


def gemm_fusion_keys(module_text: str) -> tuple[GemmFusionKey, ...]:
  """Every gemm fusion of a module with its autotune key, in text order.

  Args:
    module_text: HLO text as it enters the config assigner
      (`config_assigner_input`).

  Raises:
    TargetError: jaxlib cannot print HLO canonically.
    ValueError: XLA's parser rejects a fused computation, or a fusion's
      operand is a tuple or a tuple's element (`%arg_tuple.1#1`, in a
      while body: jaxlib 0.12.0.1's HLO text), whose shape the key would
      print and is not read here (a wrong key would call the fusion
      missing from results that hold it).
  """
  shapes = {m.group(1): m.group(2) for m in _INSTR_RE.finditer(module_text)}
  keys = []
  for m in _INSTR_RE.finditer(module_text):
    if m.group(3) != "fusion":
      continue
    rest = m.group(4)
    kind = re.search(r'"fusion_backend_config":\{"kind":"([^"]+)"', rest)
    if kind is None or kind.group(1) not in _GEMM_KINDS:
      continue
    operands = re.findall(r"%([\w.\-]+(?:#\d+)?)", rest.split(")", 1)[0])
    unread = [o for o in operands if o not in shapes]
    if unread:  # `%t#1`: a tuple's element (a while body's parameter)
      raise ValueError(
        f"gemm fusion {m.group(1)}: the shape of its operand %{unread[0]} "
        "is not read here (a tuple or a tuple's element); its autotune key "
        "is not computed"
      )
    calls = re.search(r"calls=%([\w.\-]+)", rest).group(1)
    fusion_kind = re.search(r"kind=(k\w+)", rest).group(1)
    config = re.search(r"backend_config=(\{.*\})\s*$", rest).group(1)
    config = json.dumps(
      json.loads(config), sort_keys=True, separators=(",", ":")
    )
    body = _computation(module_text, calls)
    text = (
      f"{m.group(2)} fusion({', '.join(shapes[o] for o in operands)}), "
      f"kind={fusion_kind}, calls=\n{body}, backend_config={config}"
    )
    low, high = _farmhash().fingerprint128(text)
    keys.append(
      GemmFusionKey(m.group(1), kind.group(1), text, f"{high:016x}{low:016x}")
    )
  return tuple(keys)


def _computation(module_text: str, name: str) -> str:
  """A fused computation, printed as XLA's canonical fingerprint prints it:
  its text as a module's ENTRY, printed canonically, the ENTRY's body."""
  m = re.search(rf"^%{re.escape(name)} .*?^}}", module_text, re.S | re.M)
  body = re.sub(r", metadata=\{[^}]*\}", "", m.group(0))
  proto = private_api.hlo_text_to_proto(f"HloModule k\n\nENTRY {body}\n")
  printed = None
  if proto is not None:
    printed = private_api.hlo_proto_to_text(proto, canonical=True)
  at = -1 if printed is None else printed.find("\nENTRY {")
  if at < 0:
    raise TargetError("this jaxlib cannot print HLO canonically")
  return printed[at + len("\nENTRY ") :].rstrip("\n")


_CODEGEN_RE = re.compile(r"Codegen version: ([0-9a-f]{16}) from (\S+)")


def parse_codegen_versions(xla_log: str) -> CodegenVersions | None:
  """The codegen versions XLA logged (None where it logged none).

  XLA logs them at VLOG(1) in autotuner_cache_interface.cc
  (`TF_CPP_VMODULE=autotuner_cache_interface=1`, set before XLA loads):
  "Codegen version: 070b7c91256c4093 from CUDNN:9.10.0,TRITON:<commit>,...".
  """
  m = _CODEGEN_RE.search(xla_log)
  if m is None:
    return None
  pairs = tuple(tuple(p.split(":", 1)) for p in m.group(2).split(","))
  return CodegenVersions(m.group(1), pairs)


def triton_config(
  block_m: int,
  block_n: int,
  block_k: int,
  num_stages: int = 1,
  num_warps: int = 4,
  num_ctas: int = 1,
) -> str:
  """A Triton gemm's BackendConfig body (`AutotuneResult.TritonGemmKey`)."""
  return (
    f"triton {{ block_m: {block_m} block_n: {block_n} block_k: {block_k} "
    f"num_stages: {num_stages} num_warps: {num_warps} num_ctas: {num_ctas} }}"
  )


def results_textproto(
  device: str,
  versions: CodegenVersions,
  choices: Iterable[AutotuneChoice],
  jaxlib: str | None = None,
) -> str:
  """An `xla.autotuner.AutotuneCache` in text format, one entry per choice.

  Args:
    device: `device_fingerprint` of the target.
    versions: the XLA build's (`parse_codegen_versions`).
    choices: what each fusion gets.
    jaxlib: the jaxlib whose XLA the versions are (default: this one's),
      written as the first line, a comment: "# hloprobe autotune results;
      jaxlib 0.12.0.1" (`autotune_experiment` refuses another's).

  Raises:
    TargetError: a choice's backend is not among `versions`.
  """
  backend_versions = dict(versions.per_backend)
  lines = [
    f"# hloprobe autotune results; jaxlib {jaxlib or installed_jaxlib()}",
    f'device_scope: "{device}"',
  ]
  for c in choices:
    if c.backend not in backend_versions:
      raise TargetError(
        f"backend {c.backend!r} is not one of this XLA's "
        f"({', '.join(sorted(backend_versions))})"
      )
    lines += [
      "entries {",
      "  key {",
      f'    target {{ device: "{device}" hlo_fingerprint: '
      f'"{c.fusion.hlo_fingerprint}" }}',
      f'    environment {{ codegen_version: "{versions.codegen_version}" }}',
      "  }",
      "  value {",
      f"    optimal_config {{ backend: {c.backend} backend_config "
      f"{{ {c.config} }} }}",
      f'    optimal_backend_version: "{backend_versions[c.backend]}"',
      "  }",
      f"}}  # {c.fusion.name}",
    ]
  return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True, slots=True)
class TritonPin:
  """A results file giving every Triton gemm fusion one Triton config.

  Attributes:
    text: an `xla.autotuner.AutotuneCache` text file (`results_textproto`),
      for `--xla_gpu_load_autotune_results_from`.
    fusions: (batch size, fusion) for every `__triton_gemm` fusion of every
      compile, by batch size then as the config assigner sees them;
      fusions of equal `hlo_fingerprint` share one entry of `text`.
  """

  text: str
  fusions: tuple[tuple[int, GemmFusionKey], ...]


def triton_pin(
  compiled: Mapping[int, object],
  target_config: str,
  block_m: int,
  block_n: int,
  block_k: int,
  num_stages: int,
  num_warps: int,
) -> TritonPin:
  """Autotune results giving every `__triton_gemm` fusion of `compiled` the
  one Triton config `triton_config(block_m, ..., num_warps)`.

  Args:
    compiled: batch size -> a `compile_case` result made with
      `dump_passes=True` (its pass_dumps: the fusions are keyed as they
      enter the config assigner) and with XLA's autotune-cache VLOG on
      (its xla_log: `parse_codegen_versions`; the first compile that logged
      them gives them).
    target_config: the compile-only target's GpuTargetConfigProto text
      (`Target.config_text`; its `device_fingerprint` keys the file).
    block_m, block_n, block_k, num_stages, num_warps: the config.

  Raises:
    TargetError: no compile logged codegen versions, or one lacks the
      config-assigner pass dump (`config_assigner_input`; jaxlib 0.10.2
      has neither).
    ValueError: a fusion's key cannot be computed (`gemm_fusion_keys`).
  """
  versions = None
  for c in compiled.values():
    versions = versions or parse_codegen_versions(getattr(c, "xla_log", ""))
  if versions is None:
    raise TargetError(
      "XLA logged no codegen versions: set TF_CPP_VMODULE="
      "autotuner_cache_interface=1 and TF_CPP_MIN_LOG_LEVEL=0 before XLA "
      "loads (jaxlib 0.12.0.1; 0.10.2 has no config-assigner pass)"
    )
  device = device_fingerprint(target_config)
  config = triton_config(block_m, block_n, block_k, num_stages, num_warps)
  fusions, choices, seen = [], [], set()
  for n in sorted(compiled):
    keys = gemm_fusion_keys(config_assigner_input(compiled[n].pass_dumps))
    for key in keys:
      if key.fusion_kind != "__triton_gemm":
        continue
      fusions.append((n, key))
      if key.hlo_fingerprint not in seen:
        seen.add(key.hlo_fingerprint)
        choices.append(AutotuneChoice(key, "TRITON", config))
  return TritonPin(results_textproto(device, versions, choices), tuple(fusions))
