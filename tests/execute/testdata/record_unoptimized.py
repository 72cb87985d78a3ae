"""Records the unoptimized-HLO fixtures of this folder (see README.md).

Run from the repository root:

  JAX_PLATFORMS=cpu PYTHONPATH=. .venv/bin/python \
    tests/execute/testdata/record_unoptimized.py

writes `<name>.unoptimized.hlo`: `jax.jit(fn).lower(*args).as_text(
dialect="hlo")` of each program below (the two cases at batch size 8;
small sort and scatter programs on `SORT_INPUT` and `SCATTER_INDICES`),
unedited but for the repository's absolute path, which is cut from the
text.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from hloprobe.compile import cases

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, *[os.pardir] * 3)) + os.sep
ALPHA = 0.1


def scaled_dense(b, a, bias):
  """Issue 23's program (/work/briefs/i23/scaled_dense.py)."""
  return jax.vmap(lambda row: ALPHA * ((a @ row) + bias))(b)


def scaled_dense_inputs(n: int):
  """Its inputs, as the issue's `inputs()` makes them, cut to n rows."""
  g = np.random.default_rng(0)
  b = g.standard_normal((9, 15)).astype(np.float32)
  a = g.standard_normal((32, 15)).astype(np.float32)
  bias = (100 * g.standard_normal(32)).astype(np.float32)
  return b[:n], a, bias


# Inputs of the sort and scatter programs (tests/execute/reorder_test.py
# uses the same values).
SORT_INPUT = [[3, -1, float("nan"), 0.0, -0.0, 2], [1, 1, -5, 7, 2, 1]]
SCATTER_INDICES = [4, 0, 1, 4, 5]


def main() -> None:
  import jax.numpy as jnp

  seed = cases.get_case("seed_mlp")
  xs, params = seed.make_inputs()
  programs = {
    "scaled_dense_n8": (scaled_dense, scaled_dense_inputs(8)),
    "seed_mlp_n8": (seed.fn, (xs[:8], params)),
    "argsort": (
      lambda x: jnp.argsort(x, axis=1),
      (np.array(SORT_INPUT, np.float32),),
    ),
    "scatter_add": (
      lambda x, i: x.at[:, i].add(1.0),
      (np.array(SORT_INPUT, np.float32), np.array(SCATTER_INDICES, np.int32)),
    ),
  }
  for name, (fn, args) in programs.items():
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    path = os.path.join(_HERE, f"{name}.unoptimized.hlo")
    with open(path, "w", encoding="utf-8") as f:
      f.write(text.replace(_ROOT, ""))
    print("wrote", path)


if __name__ == "__main__":
  main()
