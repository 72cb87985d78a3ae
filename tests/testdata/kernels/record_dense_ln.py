"""Records the fixtures of the built-in case `dense_ln_softmax`
(hloprobe/compile/invariance_cases.py: dense 64 -> 256, layernorm, gelu,
dense 256 -> 32, softmax, float32, vmapped over rows), compiled for
hloprobe's compile-only `a100` target through
`hloprobe.compile.compile_case` (as record_fixtures.py does).

At n = 1 XLA fuses the whole row (both dots, strength-reduced to
multiply+reduce, the layernorm, the gelu and the softmax) into one Triton
block-level fusion; at n = 2, 8, 64 the dots are Triton gemms and the
layernorm and softmax two Triton fusions (issue 38: the n = 1 kernel was
never named).

Run from the repository root, once per jaxlib:

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_dense_ln.py
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 PYTHONPATH=$PWD \\
      .venv-jax0.10.2/bin/python \\
      tests/testdata/kernels/record_dense_ln.py

Writes, for each batch size n in 1, 2, 8, 64, into
tests/testdata/kernels/<jaxlib>/:
  dense_ln_a100_n<n>.hlo.txt      the optimized HLO
  dense_ln_a100_n<n>.ptx.txt      the PTX files of the compile, joined
                                  (each file's text after a line
                                  "// hloprobe: file <i>")
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

from hloprobe.compile import get_case  # noqa: E402

BATCH_SIZES = (1, 2, 8, 64)


def main() -> int:
  # The same recording as the issue model's (record_fixtures.py, beside
  # this script: run as a script, its folder is on sys.path).
  from record_fixtures import record

  case = get_case("dense_ln_softmax")
  record(case, case.make_inputs(), "dense_ln", BATCH_SIZES)
  return 0


if __name__ == "__main__":
  sys.exit(main())
