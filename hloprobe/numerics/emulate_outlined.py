"""A deep program's fixed-order emulation with each dot site compiled alone.

`emulate.SwitchedEmulation` compiles the whole emulated program: every dot
site inlined, each with a branch per algorithm it may take. A fixed
summation order's dot is a loop (`emulate_dot`'s sequential, pairwise and
blocked orders), so that compile grows with the program's depth: gpt2_12's
one-row compiles took about 10 CPU-s an order, 2.6 CPU-s a layer for the
three (issue 37, `profile_workers --cpu`, 2026-12-07), against 0.35 CPU-s
for XLA:CPU's compile of the program itself.

A deep program repeats its sites' shapes: the twelve layers of a GPT-2
stack have six (`repeats`). `OutlinedEmulation` walks the jaxpr eagerly
instead (`evaluator.Evaluator` on concrete arrays: every other primitive
bound as jax's op-by-op dispatch binds it, compiled once per primitive,
parameters and shapes by jax) and computes each dot site by one jitted
function of the site's shapes, dimension numbers, algorithm and order
(`_site_dot`, jax's jit cache). So the compiles are those of the distinct
sites and primitives, whatever the depth, and only of the algorithms that
are run.

Its outputs are an f32 evaluation in the same summation order; they are
not the bits of a whole-program compile (XLA:CPU fuses the elementwise ops
around a dot there, and may fuse a loop's f32 products with them: gpt2_1
row 0 at the pairwise order differed by at most 9.5e-7 of values up to 5.3,
jaxlib 0.12.0.1, 2026-12-07). The noise floor, which the fixed orders make, is a spread of
f32 evaluations around the float64 reference, so either serves; a program
takes one of the two for all its fixed orders (`EmulationCache.by_rows`).

A dot whose contracting dimension the program's mesh splits (a sharding
constraint, a jit's `in_shardings`, `emulate.with_mesh_splits`) is the
sum of each device's slice, `evaluator.partial_sums`, as it is inline. The
walk drops each value after its last use (`Evaluator.run`), as XLA reuses
a buffer: a row's activations of every layer are not held together.

Not outlined (`EmulationError`, and the caller compiles the whole program):
a convolution or attention site, and a site inside a loop, branch or
shard_map body.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from hloprobe.errors import EmulationError
from hloprobe.numerics.emulate import check_order, mesh_parts
from hloprobe.numerics.emulate_dot import SWITCHABLE, rounded_operand
from hloprobe.numerics.evaluator import Evaluator, dot_at
from hloprobe.numerics.jaxpr_sites import (
  CALL_PRIMITIVES,
  open_jaxpr,
  plan_sites,
  trace,
)

__all__ = ["OutlinedEmulation", "repeats"]


# One float dot site as the evaluator computes it inline (`evaluator.dot_at`),
# compiled once per shapes, dtypes and static arguments (jax's jit cache).
_site_dot = jax.jit(
  functools.partial(dot_at, tiled=True),
  static_argnames=("dims", "algorithm", "order", "rounding", "dtype", "count"),
)


# A site's operands rounded to a single-pass algorithm other than F32 (issue
# 37): its dot is then F32's `_site_dot` of them, whose products and sums
# are those ops' (`emulate_dot.rounded_operand`), so a walk at TF32 compiles
# one elementwise rounding a shape, not every site dot again (gpt2_12's
# chosen TF32 row: 18 site dots, about 2.5 of the 5 CPU-s its walks' site
# compiles took, jaxlib 0.12.0.1, 2026-12-07). The same bits as each
# algorithm's own site dot on gpt2_2's sites in every order, TF32, BF16
# and TF32_TRUNCATED sites beside F32 ones (jaxlib 0.12.0.1 and 0.10.2).
_rounded = jax.jit(
  rounded_operand, static_argnames=("algorithm", "tf32_rounding")
)
_F32 = "F32_F32_F32"


def _signature(site) -> tuple:
  """What one compile of a site depends on (`jaxpr_sites.JaxprSite`)."""
  return (
    site.primitive,
    site.lhs.shape,
    str(site.lhs.dtype),
    site.rhs.shape,
    str(site.rhs.dtype),
    str(site.dimension_numbers),
  )


def repeats(sites) -> bool:
  """Whether a program's dot sites (`jaxpr_sites.JaxprSite`s) repeat their
  shapes: at least twice as many sites as distinct (primitive, operand
  shapes and dtypes, dimension numbers). gpt2_1's six sites are six
  distinct, gpt2_2's twelve the same six: outlined from two layers on,
  where the whole program's compile costs as much as the sites' alone
  (gpt2_1 and gpt2_4 at one row, pairwise: 1.6 and 3.2 CPU-s whole, 1.9
  and 2.5 outlined with the first run, jaxlib 0.12.0.1, 2026-12-07)."""
  sites = tuple(sites)
  return bool(sites) and len(sites) >= 2 * len({_signature(s) for s in sites})


class _OutlinedEvaluator(Evaluator):
  """An `Evaluator` whose float dot sites are `_site_dot` calls at F32, on
  operands `_rounded` first where the site's algorithm is another."""

  def _dot(self, eqn, ins, site: int):
    if eqn.primitive.name != "dot_general" or not all(
      jax.numpy.issubdtype(x.dtype, jax.numpy.inexact) for x in ins
    ):
      return super()._dot(eqn, ins, site)
    algorithm = self.algorithms[site]
    if algorithm != _F32:
      ins = [_rounded(x, algorithm, self.rounding) for x in ins]
    return _site_dot(
      *ins,
      dims=eqn.params["dimension_numbers"],
      algorithm=_F32,
      order=self.order,
      rounding=self.rounding,
      dtype=np.dtype(eqn.outvars[0].aval.dtype),
      count=self._split(eqn),
    )


def _outlinable(jaxpr, plan) -> None:
  """Raises EmulationError where a site is not a top-level or called
  dot_general (see the module)."""
  for i, eqn in enumerate(jaxpr.eqns):
    name = eqn.primitive.name
    if i in plan.sites and name != "dot_general":
      raise EmulationError(f"[hloprobe] a {name} site is not outlined")
    subs = plan.subs.get(i) or ()
    if not any(s.size for s in subs):
      continue
    if name not in CALL_PRIMITIVES:
      raise EmulationError(f"[hloprobe] sites inside a {name} are not outlined")
    _outlinable(open_jaxpr(eqn.params[CALL_PRIMITIVES[name]]), subs[0])


class OutlinedEmulation:
  """`emulate.SwitchedEmulation`'s interface (one emulation of `fn` at the
  shapes of `args`, called once per assignment and argument set), made by
  an eager walk whose dot sites are compiled one by one (see the module).

  Args:
    fn, args: the function and arguments of the shapes it is called on.
    choices: per site, the algorithms it may take (`emulate_dot.SWITCHABLE`
      names); checked on each call.
    order: f32 summation order (`emulate_dot.SUMMATION_ORDERS`).
    tf32_rounding: 'rna', 'rne' or 'rz'.
    closed: `fn` traced on `args` already (`jaxpr_sites.trace`), or None.

  Raises:
    EmulationError: a program this does not outline (see the module),
      choices not one a site, or a choice not single-pass.
    InvalidArgumentError: an unknown order.
  """

  def __init__(
    self, fn, args, choices, *, order="xla", tf32_rounding="rna", closed=None
  ):
    check_order(order)
    closed = closed if closed is not None else trace(fn, args)[0]
    self._plan, sites = plan_sites(closed.jaxpr)
    self.choices = tuple(tuple(c) for c in choices)
    if len(self.choices) != len(sites):
      raise EmulationError(
        f"[hloprobe] {len(self.choices)} sites' choices given for "
        f"{len(sites)} dot sites; give one per site"
      )
    bad = sorted({a for c in self.choices for a in c} - set(SWITCHABLE))
    if bad:
      raise EmulationError(f"[hloprobe] {bad} are not single-pass algorithms")
    _outlinable(closed.jaxpr, self._plan)
    self._jaxpr, self.order, self._rounding = closed.jaxpr, order, tf32_rounding
    # A `with_mesh_splits` function's dots split as its mesh asks.
    self._parts = mesh_parts(fn, args, closed.jaxpr.invars)
    self._consts = jax.device_put(tuple(closed.consts))

  def __call__(self, names, leaves) -> tuple[np.ndarray, ...]:
    """The output leaves (numpy) of the assignment `names` (one per site,
    each among that site's choices) on `leaves` (the arguments' leaves).

    Raises:
      ValueError: not one name a site, or a name not among its site's
        choices.
    """
    if len(names) != len(self.choices):
      raise ValueError(
        f"{len(names)} algorithms for {len(self.choices)} dot sites"
      )
    for name, choices in zip(names, self.choices):
      if name not in choices:
        raise ValueError(f"{name!r} is not among the site's {choices}")
    evaluator = _OutlinedEvaluator(tuple(names), self.order, self._rounding)
    evaluator.parts.update(self._parts)
    outs = evaluator.run(self._jaxpr, self._plan, self._consts, list(leaves))
    return tuple(np.asarray(x) for x in outs)
