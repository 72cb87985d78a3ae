"""numerics/jaxpr_sites.py: the jaxpr's contraction sites against jax's
own lowering. The expected count is the number of `stablehlo.dot_general`
and `stablehlo.convolution` ops in `jax.jit(f).lower(...).as_text()` (no
XLA compile: lowering only), for the shapes the module's docstring names:
a nested jit called twice, a scan body, dead code, cond branches."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.numerics import jaxpr_sites

_X = np.ones((4, 4), np.float32)


@jax.jit
def _inner(a, b):
  return a @ b


def _twice(x):
  return _inner(_inner(x, x), x)


def _scan(x):
  def body(c, _):
    return c @ x, None

  return jax.lax.scan(body, x, None, length=3)[0]


def _dead(x):
  unused = x @ x  # noqa: F841 (pruned by the lowering's DCE)
  return x + 1


def _cond(x):
  return jax.lax.cond(x[0, 0] > 0, lambda y: y @ y, lambda y: y @ y.T, x)


def _conv_and_dot(x):
  img = x.reshape(1, 4, 4, 1)
  k = jnp.ones((3, 3, 1, 1), np.float32)
  y = jax.lax.conv_general_dilated(
    img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
  )
  return y.reshape(4, 4) @ x


def _lowered_sites(fn) -> int:
  """Sites on every call path of the lowered module: each function's own
  ops, plus its callees' once per `call` (the lowering writes a jit
  called twice as one function called twice)."""
  text = jax.jit(fn).lower(_X).as_text()
  own, calls, name = {}, {}, None
  for line in text.splitlines():
    if m := re.search(r"func\.func \w+ @([\w.]+)\(", line):
      name = m[1]
      own[name], calls[name] = 0, []
    elif name is not None:
      own[name] += line.count("stablehlo.dot_general")
      own[name] += line.count("stablehlo.convolution")
      calls[name] += re.findall(r"\bcall @([\w.]+)\(", line)

  def sites(f: str) -> int:
    return own[f] + sum(sites(g) for g in calls[f])

  return sites("main")


# How jax lowers (one function per jit, or inlined) is the release's:
# `make test-old` reruns this under jax 0.10.2.
@pytest.mark.release_rules
class CountSitesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("nested_jit_twice", _twice, 2),
    ("scan_body_once", _scan, 1),
    ("dead_dot_pruned", _dead, 0),
    ("cond_branches", _cond, 2),
    ("conv_then_dot", _conv_and_dot, 2),
  )
  def test_as_many_as_the_lowering_writes(self, fn, want):
    self.assertEqual(_lowered_sites(fn), want)
    self.assertEqual(jaxpr_sites.count_sites(fn, (_X,)), want)

  def test_sites_are_numbered_in_program_order(self):
    sites = jaxpr_sites.jaxpr_sites(_conv_and_dot, (_X,))
    self.assertEqual(
      [(s.index, s.primitive) for s in sites],
      [(0, "conv_general_dilated"), (1, "dot_general")],
    )


if __name__ == "__main__":
  absltest.main()
