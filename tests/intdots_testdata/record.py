"""Records the compiles tests/intdots_*_test.py read (run from the repo
root: `PYTHONPATH=$PWD .venv/bin/python tests/intdots_testdata/record.py`).

Each folder holds what a sweep's stages read: `stablehlo.txt` and
`optimized_hlo.txt` of a compile that went through, or, for one XLA
rejected, `stablehlo.txt`, `message.txt` (XLA's whole error) and the pass
dumps' names (`dumps.txt`) with the last dumped module (`last_dump.txt`).
Recorded under jaxlib 0.12.0.1 (compile-only a100, the CPU).

`s8_s32_long_k_a100_n8` was compiled by hand (`compile.compile_case`, a100,
precision default) from `lax.dot_general(x, w, preferred_element_type=
jnp.int32)` on x s8[8,262144], w s8[262144,16]; beside its texts it keeps
the gemm kernel's PTX (`gemm_fusion_dot.ptx`).
"""

from __future__ import annotations

import os
import sys

from hloprobe.compile import Rejection, get_case, get_target
from hloprobe.engine.measure import run_config

HERE = os.path.dirname(os.path.abspath(__file__))
# (folder, case, target, n, precision)
COMPILED = (
  ("int8_dots_a100_n1", "int8_dots", "a100", 1, "float32"),
  ("int8_dots_a100_n4", "int8_dots", "a100", 4, "float32"),
  ("int8_dots_cpu_n4", "int8_dots", "cpu", 4, "float32"),
)
REJECTED = (("seed_a100_n1_F16_F16_F32", "seed_mlp", "a100", 1, "F16_F16_F32"),)


def _write(folder: str, name: str, text: str) -> None:
  os.makedirs(os.path.join(HERE, folder), exist_ok=True)
  with open(os.path.join(HERE, folder, name), "w", encoding="utf-8") as f:
    f.write(text)


def main() -> None:
  os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  for folder, case_name, target, n, precision in COMPILED:
    case = get_case(case_name)
    r = run_config(
      case, case.full_inputs(), None, get_target(target), precision, n
    )
    assert r.ok, r.failure
    _write(folder, "stablehlo.txt", r.compilation.stablehlo)
    _write(folder, "optimized_hlo.txt", r.compilation.optimized_hlo)
  for folder, case_name, target, n, precision in REJECTED:
    case = get_case(case_name)
    args = case.inputs_for(case.full_inputs(), n)
    rej = Rejection.of_compile(case, args, precision, get_target(target))
    assert rej is not None
    _write(folder, "stablehlo.txt", rej.stablehlo)
    _write(folder, "message.txt", rej.message)
    _write(folder, "dumps.txt", "\n".join(n for n, _ in rej.pass_dumps) + "\n")
    _write(
      folder, "last_dump.txt", rej.pass_dumps[-1][1] if rej.pass_dumps else ""
    )


if __name__ == "__main__":
  sys.exit(main())
