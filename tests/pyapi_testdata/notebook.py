"""A notebook, as a script: a plain function, jax started first, then
`hloprobe.explain` for the CPU and a compile-only A100 -- with no
environment set (tests/api/calls_notebook_test.py runs it so).

Prints one JSON document: the explanation's text, and per config its
target, n, precision, the sites' effective algorithms and frames, and the
optimized HLO text.
"""

import json

import jax.numpy as jnp
import numpy as np

import hloprobe


def mlp(x, w1, w2):
  h = jnp.tanh(x @ w1)
  return h @ w2


rng = np.random.default_rng(0)
x = rng.standard_normal((4, 64), dtype=np.float32)
w1 = rng.standard_normal((64, 64), dtype=np.float32) / 8
w2 = rng.standard_normal((64, 64), dtype=np.float32) / 8
print(float(jnp.sum(mlp(x, w1, w2))) != 0.0)  # jax started, as in a notebook

results = hloprobe.explain(
  mlp,
  x,
  w1,
  w2,
  in_axes=(0, None, None),
  targets=["cpu", "a100"],
  precisions=["bfloat16"],
  batch_sizes=[2],
  jobs=1,
)
configs = [
  {
    "target": r.config.target.name,
    "n": r.config.n,
    "ok": r.ok,
    "algorithms": [f.effective_algorithm for f in r.compilation.fates],
    "frames": [list(f.site.frames) for f in r.compilation.fates],
    "optimized_hlo": r.compilation.optimized_hlo,
  }
  for r in results
]
print(json.dumps({"text": str(results), "configs": configs}))
