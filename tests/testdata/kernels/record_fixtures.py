"""Records the kernels stage's fixtures: optimized HLO (backend configs
included) and PTX of compile-only GPU compiles at several batch sizes.

The program is issue 38's dense -> layernorm -> gelu -> dense -> softmax
model, float32, vmapped over rows (`in_axes=(0, None, ...)`): x[n, 256]
-> dense 256->512 -> layernorm(512) -> gelu (tanh form) -> dense
512->1000 -> softmax(1000). Compiled for hloprobe's compile-only `a100`
target with `jax.default_matmul_precision("float32")` through
`hloprobe.compile.compile_case` (which dumps the PTX: `xla_dump_to` plus
`xla_dump_emitter_re=ptx` on jaxlib 0.12).

Run from the repository root, once per jaxlib:

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_fixtures.py
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 PYTHONPATH=$PWD \\
      .venv-jax0.10.2/bin/python \\
      tests/testdata/kernels/record_fixtures.py

Writes, for each batch size n in 1, 2, 8, 64, into
tests/testdata/kernels/<jaxlib>/ (e.g. 0.12.0.1/):
  ln_model_a100_n<n>.hlo.txt      the optimized HLO
  ln_model_a100_n<n>.ptx.txt      the PTX files of the compile, joined
                                  (each file's text after a line
                                  "// hloprobe: file <i>")
File paths in the HLO's FileNames table are the recording machine's.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

import jax  # noqa: E402
import jaxlib  # noqa: E402
import numpy as np  # noqa: E402

from hloprobe import compile as compile_mod  # noqa: E402

BATCH_SIZES = (1, 2, 8, 64)
D_IN, HIDDEN, OUT = 256, 512, 1000


def model(x, w0, b0, gamma, beta, w1, b1):
  """One row: dense -> layernorm -> gelu -> dense -> softmax."""
  h = x @ w0 + b0
  mu = h.mean(-1, keepdims=True)
  var = ((h - mu) ** 2).mean(-1, keepdims=True)
  h = (h - mu) * jax.lax.rsqrt(var + 1e-5) * gamma + beta
  h = jax.nn.gelu(h)
  return jax.nn.softmax(h @ w1 + b1, axis=-1)


def batched(xs, *params):
  return jax.vmap(model, in_axes=(0,) + (None,) * 6)(xs, *params)


def inputs():
  rng = np.random.default_rng(0)
  return (
    rng.standard_normal((64, D_IN), np.float32),
    rng.standard_normal((D_IN, HIDDEN), np.float32) / 16,
    np.zeros(HIDDEN, np.float32),
    np.ones(HIDDEN, np.float32),
    np.zeros(HIDDEN, np.float32),
    rng.standard_normal((HIDDEN, OUT), np.float32) / 22,
    np.zeros(OUT, np.float32),
  )


CASE = compile_mod.Case(
  "ln_model",
  "issue 38: dense -> layernorm -> gelu -> dense -> softmax, float32",
  batched,
  inputs,
)


def record(case, full, name: str, batch_sizes) -> None:
  """Writes `case`'s optimized HLO and PTX on the compile-only a100 at each
  batch size (the batched argument `full[0]` cut to n rows) under this
  folder's jaxlib release: `<name>_a100_n<N>.{hlo,ptx}.txt`."""
  compile_mod.start_backends("cpu")
  target = compile_mod.get_target("a100")
  out = os.path.join(os.path.dirname(__file__), jaxlib.__version__)
  os.makedirs(out, exist_ok=True)
  for n in batch_sizes:
    args = (full[0][:n],) + tuple(full[1:])
    compiled = compile_mod.compile_case(case, args, "float32", target)
    stem = os.path.join(out, f"{name}_a100_n{n}")
    with open(stem + ".hlo.txt", "w", encoding="utf-8") as f:
      f.write(compiled.optimized_hlo)
    with open(stem + ".ptx.txt", "w", encoding="utf-8") as f:
      for i, text in enumerate(compiled.ptx):
        f.write(f"// hloprobe: file {i}\n{text}\n")
    print(n, len(compiled.ptx), "PTX files")


def main() -> int:
  record(CASE, inputs(), "ln_model", BATCH_SIZES)
  return 0


if __name__ == "__main__":
  sys.exit(main())
