"""Writes an autotune results file for a compile-only target, or replays one.

  python -m hloprobe.tools.autotune_template --case=seed_mlp --target=a100 \\
      --choose=gemm_fusion_dot=cublas --choose=gemm_fusion_dot.1=triton:64,32,32,2,4 \\
      -o results.textproto
  python -m hloprobe.tools.autotune_template --case=seed_mlp --target=a100 \\
      --replay=results.textproto -o optimized.hlo.txt

Writing compiles the case once with XLA's passes dumped and its autotune
cache's VLOG on (`TF_CPP_VMODULE=autotuner_cache_interface=1`, set here
before XLA loads: the codegen versions are logged only), takes each gemm
fusion as it enters the config assigner, and writes an
`xla.autotuner.AutotuneCache` text file keyed as XLA keys it
(`hloprobe.compile.autotune`) choosing a backend for the fusions named;
it prints every gemm fusion with its key. Replaying compiles the case
with the file loaded (`--xla_gpu_load_autotune_results_from`, once per
process: one replay per process), writes the optimized HLO and prints,
per gemm fusion, the entry it got or "no autotune entry for this fusion;
default config used".

A choice: NAME=cublas (cuBLASLt, algorithm -1) or
NAME=triton:BLOCK_M,BLOCK_N,BLOCK_K[,STAGES[,WARPS]]. Split-K cannot be
chosen (jaxlib 0.12.0.1: "TritonBackend no longer supports split-k").
"""

from __future__ import annotations

import argparse
import os
import sys


def _parse_choice(text: str) -> tuple[str, str, str]:
  name, _, how = text.partition("=")
  if how == "cublas":
    return name, "CUBLASLT_FISSION", "cublas"
  if how.startswith("triton:"):
    return name, "TRITON", how[len("triton:") :]
  raise SystemExit(
    f"--choose={text!r}: expected NAME=cublas or NAME=triton:M,N,K[,S[,W]], "
    "e.g. gemm_fusion_dot.1=triton:64,32,32,2,4"
  )


def _config(backend: str, spec: str) -> str:
  # Imported here, as `main` imports compile: after the environment is set.
  from hloprobe.compile.autotune import CUBLAS_CONFIG, triton_config

  if backend == "CUBLASLT_FISSION":
    return CUBLAS_CONFIG
  return triton_config(*(int(x) for x in spec.split(",")))


def _write(args, compile_mod, case, cargs, target) -> int:
  # Imported here, as `main` imports compile: after the environment is set.
  from hloprobe.compile.autotune import (
    AutotuneChoice,
    config_assigner_input,
    device_fingerprint,
    device_string,
    gemm_fusion_keys,
    parse_codegen_versions,
    results_textproto,
  )

  compiled = compile_mod.compile_case(
    case, cargs, args.precision, target, dump_passes=True
  )
  versions = parse_codegen_versions(compiled.xla_log)
  if versions is None:
    print("XLA logged no codegen versions (not a jaxlib 0.12 GPU compile?)")
    return 1
  keys = gemm_fusion_keys(config_assigner_input(compiled.pass_dumps))
  by_name = {k.name: k for k in keys}
  choices = []
  for text in args.choose:
    name, backend, spec = _parse_choice(text)
    if name not in by_name:
      print(f"--choose: no gemm fusion {name!r}; have {', '.join(by_name)}")
      return 1
    choices.append(
      AutotuneChoice(by_name[name], backend, _config(backend, spec))
    )
  device = device_fingerprint(target.config_text)
  with open(args.output, "w", encoding="utf-8") as f:
    f.write(results_textproto(device, versions, choices))
  for k in keys:
    print(f"{k.name}\t{k.fusion_kind}\t{k.hlo_fingerprint}")
  print(f"device {device} ({device_string(target.config_text)})")
  return 0


def main(argv: list[str] | None = None) -> int:
  """The tool's command line (the module docstring); the exit status."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--case", required=True)
  parser.add_argument("--target", required=True)
  parser.add_argument("--precision", default="bfloat16")
  parser.add_argument("--choose", action="append", default=[])
  parser.add_argument("--replay")
  parser.add_argument("-o", "--output", required=True)
  args = parser.parse_args(argv)
  # Before XLA loads: the codegen versions are in its VLOG only (INFO
  # lines: a TF_CPP_MIN_LOG_LEVEL above 0 would hide them).
  os.environ["TF_CPP_VMODULE"] = "autotuner_cache_interface=1"
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
  os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  from hloprobe import compile as compile_mod
  from hloprobe.compile.autotune import (
    config_assigner_input,
    device_fingerprint,
    gemm_fusion_keys,
  )
  from hloprobe.compile.autotune_replay import autotuned_target, entry_notes

  compile_mod.start_backends("cpu")
  case = compile_mod.get_case(args.case)
  cargs = case.make_inputs()
  target = compile_mod.get_target(args.target)
  if args.replay is None:
    return _write(args, compile_mod, case, cargs, target)
  from hloprobe.errors import HloprobeError, TargetError
  from hloprobe.ir import InputFile

  try:
    # A regular file only: a FIFO is refused, not waited on.
    text = InputFile(
      args.replay, f"--replay={args.replay}", TargetError
    ).read_text()
    target = autotuned_target(target, args.replay, text)
  except HloprobeError as e:
    print(f"autotune_template: {e}", file=sys.stderr)
    return 2
  compiled = compile_mod.compile_case(
    case, cargs, args.precision, target, dump_passes=True
  )
  with open(args.output, "w", encoding="utf-8") as f:
    f.write(compiled.optimized_hlo)
  keys = gemm_fusion_keys(config_assigner_input(compiled.pass_dumps))
  device = device_fingerprint(target.config_text)
  for name, note in entry_notes(keys, text, device):
    print(f"{name}: {note}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
