"""Records the sharded fixtures of tests/sharded_*_test.py (not a test).

Run from the repository root, under each jaxlib:
  XLA_FLAGS=--xla_force_host_platform_device_count=8 \
    JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 PYTHONPATH=$PWD \
    .venv/bin/python tests/testdata/sharded/make_fixtures.py
Writes <jaxlib>/<name>.stablehlo.mlir and <name>.hlo.txt here for the
built-in case sharded_matmul at n = 8 under tensorfloat32, on the CPU (8
host devices) and a compile-only A100 (8 devices), with the result
replicated (an all-reduce) and, on the A100, sharded by rows
(`reduce_scatter`: a reduce-scatter).
"""

from __future__ import annotations

import dataclasses
import os

import jax
import jaxlib
from jax.sharding import PartitionSpec

from hloprobe.compile import CASES, compile_case, get_target

jax.config.update("jax_platforms", "cpu")
_HERE = os.path.join(os.path.dirname(__file__), jaxlib.__version__)
case = CASES["sharded_matmul"]
scatter = dataclasses.replace(case, out_specs=PartitionSpec("k", None))
args = case.inputs_for(case.full_inputs(), 8)
os.makedirs(_HERE, exist_ok=True)
for name, c, target in (
  ("cpu_all_reduce", case, "cpu"),
  ("a100_all_reduce", case, "a100"),
  ("a100_reduce_scatter", scatter, "a100"),
):
  out = compile_case(c, args, "tensorfloat32", get_target(target))
  for suffix, text in (
    ("stablehlo.mlir", out.stablehlo),
    ("hlo.txt", out.optimized_hlo),
  ):
    with open(os.path.join(_HERE, f"{name}.{suffix}"), "w") as f:
      f.write(text)
  print(name, "written")
