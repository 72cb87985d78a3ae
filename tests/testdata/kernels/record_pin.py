"""Writes and checks the pin (issue 38 item 4) for the fixture model.

For `record_fixtures.CASE` on the compile-only `a100` under jaxlib
0.12.0.1 (0.10.2 has no config-assigner pass: no keys), batch sizes
n = 2..64:

  1. compiles every n under `hloprobe.kernels.autotune_pin.PIN_FLAGS` (split-K forced
     to 1) with XLA's passes dumped and its autotune-cache VLOG on, and
     writes `pin_gemm_configs`' file to
     tests/testdata/kernels/0.12.0.1/ln_model_a100_pin.textproto;
  2. in a second process (XLA loads one results file per process:
     `--xla_gpu_load_autotune_results_from`, as `--autotune_results`
     replays it), compiles every n again with the file loaded and
     PIN_FLAGS, and writes the optimized HLO and PTX of n = 2, 8, 64 as
     ln_model_a100_pinned_n<n>.{hlo,ptx}.txt, and prints the classes of
     kernel identity of the gemm kernels over all n.

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_pin.py [--full]

Measured (2026-12-05, jaxlib 0.12.0.1): the gemm pin gives one class of
gemm kernels over n = 2..64 (block_k 64, split-K 1, tiles 16x16 at every
n); --full gives two classes of all kernels, (2, 3, 4, 8, 12, ..., 64) and
the other n, split by the softmax sum kernel's PTX float dataflow.

With --full, both steps also pass `REDUCTION_PIN_FLAGS` (the Triton softmax
rewriter off), the files are named ln_model_a100_fullpin*, and the
classes are those of every row-computing kernel, not only the gemms.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SIZES = tuple(range(2, 65))
KEPT = (2, 8, 64)


FULL = "--full" in sys.argv


def _flags() -> tuple[str, ...]:
  from hloprobe.kernels import autotune_pin as pin

  return pin.PIN_FLAGS + (pin.REDUCTION_PIN_FLAGS if FULL else ())


def _name() -> str:
  return "ln_model_a100_fullpin" if FULL else "ln_model_a100_pin"


def _setup(replay: str | None):
  os.environ["TF_CPP_VMODULE"] = "autotuner_cache_interface=1"
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
  os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  import jaxlib
  import record_fixtures as rf

  from hloprobe import compile as compile_mod
  from hloprobe import kernels

  compile_mod.start_backends("cpu")
  target = compile_mod.get_target("a100")
  options = dict(target.compiler_options or {})
  for flag in _flags():
    key, value = flag.lstrip("-").split("=", 1)
    options[key] = value
  if replay is not None:
    options["xla_gpu_load_autotune_results_from"] = replay
  target = dataclasses.replace(target, compiler_options=options)
  out = os.path.join(HERE, jaxlib.__version__)
  return rf, compile_mod, kernels, target, out


def record() -> int:
  rf, compile_mod, kernels, target, out = _setup(None)
  full = rf.inputs()
  compiled = {}
  for n in SIZES:
    args = (full[0][:n],) + full[1:]
    compiled[n] = compile_mod.compile_case(
      rf.CASE, args, "float32", target, dump_passes=True
    )
  extra = _flags()[1:]  # REDUCTION_PIN_FLAGS with --full
  pin = kernels.pin_gemm_configs(compiled, target, extra_flags=extra)
  path = os.path.join(out, f"{_name()}.textproto")
  with open(path, "w", encoding="utf-8") as f:
    f.write(pin.text)
  print(f"{path}: {len(pin.gemms)} gemm fusions pinned; flags {pin.xla_flags}")
  return subprocess.call(
    [sys.executable, __file__, "--replay", path] + (["--full"] if FULL else [])
  )


def replay(path: str) -> int:
  from hloprobe.kernels.differences import kernel_classes
  from hloprobe.kernels.records import Role

  rf, compile_mod, kernels, target, out = _setup(path)
  full = rf.inputs()
  records = {}
  for n in SIZES:
    args = (full[0][:n],) + full[1:]
    c = compile_mod.compile_case(rf.CASE, args, "float32", target)
    records[n] = [
      r
      for r in kernels.read_kernels(c.optimized_hlo, n, c.ptx, core_count=108)
      if FULL or r.role is Role.CONTRACTION
    ]
    if n in KEPT:
      stem = os.path.join(out, f"{_name()}ned_n{n}")
      with open(stem + ".hlo.txt", "w", encoding="utf-8") as f:
        f.write(c.optimized_hlo)
      with open(stem + ".ptx.txt", "w", encoding="utf-8") as f:
        for i, text in enumerate(c.ptx):
          f.write(f"// hloprobe: file {i}\n{text}\n")
  classes = kernel_classes(records)
  what = "kernel" if FULL else "gemm"
  print(f"{what} classes over n = 2..64:", classes)
  for r in records[64]:
    print(r.name, dict(r.arithmetic))
  return 0 if len(classes) == 1 else 1


if __name__ == "__main__":
  if len(sys.argv) >= 3 and sys.argv[1] == "--replay":
    sys.exit(replay(sys.argv[2]))
  sys.exit(record())
