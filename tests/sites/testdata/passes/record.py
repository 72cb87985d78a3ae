"""Records the pass-dump fixtures of this folder (see README.md).

Run from the repository root, once per jaxlib release:

  PYTHONPATH=.:tests JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 \
    python tests/sites/testdata/passes/record.py OUT_DIR

writes, per fixture, OUT_DIR/<jaxlib>_<fixture>/ with stablehlo.mlir,
optimized.hlo and every after-pass dump; README.md names the dumps kept.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import jaxlib
import program_cases

from hloprobe.compile import lowering, targets

# fixture -> (case, target, n, precision, extra XLA options)
FIXTURES = {
  "euler_scan_cpu_n2": (program_cases.euler_scan, "cpu", 2, "highest", {}),
  "euler_scan_a100_n2": (program_cases.euler_scan, "a100", 2, "highest", {}),
  "long_k_a100_n8_split4": (
    program_cases.long_k_matmul,
    "a100",
    8,
    "highest",
    {"xla_gpu_experimental_force_split_k": "4"},
  ),
}


def main(out: str) -> None:
  tag = "jaxlib" + jaxlib.__version__.replace(".", "")
  for name, (make, target, n, precision, options) in FIXTURES.items():
    case = make()
    t = targets.get_target(target)
    t = dataclasses.replace(
      t, compiler_options={**(t.compiler_options or {}), **options}
    )
    args = case.inputs_for(case.make_inputs(), n)
    cc = lowering.compile_case(case, args, precision, t, dump_passes=True)
    folder = os.path.join(out, f"{tag}_{name}")
    os.makedirs(folder, exist_ok=True)
    texts = {"stablehlo.mlir": cc.stablehlo, "optimized.hlo": cc.optimized_hlo}
    texts.update(cc.pass_dumps)
    for file, text in texts.items():
      with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
  main(sys.argv[1])
