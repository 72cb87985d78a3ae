"""The jaxpr interpreter behind the emulator and the float64 reference.

`Evaluator.run` walks a jaxpr planned by `jaxpr_sites.plan_sites` and
binds every equation as traced, except each planned site: a
`dot_general`, which `emulate_dot.emulated_dot_general` computes at that
site's algorithm, or a `conv_general_dilated`, which
`emulate_conv.emulated_conv_general_dilated` computes at it (operands
rounded per algorithm, f32 sums); the result is converted to the dtype the
case's op returns; integer dots and convolutions with an integer result
run as traced (exact), and integer operands with a float result are
converted to it first, as XLA does. Higher-order primitives are evaluated
with their sites: the call-like ones of `CALL_PRIMITIVES`, cond, while and scan
(a scan whose unrolled copies have different algorithms raises
`EmulationError`). `emulate` builds its emulators and site scales on it,
`reference` its widened float64 evaluation.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import jax
from jax import lax

from hloprobe.compile import JAXPR_API as jex
from hloprobe.compile import scan_counts
from hloprobe.errors import EmulationError
from hloprobe.numerics.emulate_attention import (
  ATTENTION_PRIMITIVES,
  emulated_attention,
)
from hloprobe.numerics.emulate_conv import emulated_conv_general_dilated
from hloprobe.numerics.emulate_dot import Switched, emulated_dot_general
from hloprobe.numerics.jaxpr_sites import (
  CALL_PRIMITIVES,
  NO_SITES,
  SitePlan,
  open_jaxpr,
)

__all__ = ["Evaluator"]


class Evaluator:
  """Evaluates jaxprs with each planned site (dot or convolution) at its
  algorithm.

  Args:
    algorithms: one algorithm name per site (`EMULATED_ALGORITHMS`), in
      site order.
    order: f32 summation order of every emulated dot (`SUMMATION_ORDERS`).
    rounding: f32 -> TF32 rounding mode ('rna' or 'rne').
  """

  def __init__(self, algorithms: tuple, order: str, rounding: str):
    self.algorithms, self.order, self.rounding = algorithms, order, rounding
    # How deep the walk is inside loop and branch bodies (while, scan,
    # cond): their values are the body's own trace, which recorders skip.
    self.in_body = 0
    # A site whose algorithm is a tuple of names is computed by the one
    # `selector[site]` picks at run time (`emulate_dot.Switched`), so that
    # one compile serves every assignment (`emulate.emulate_switched`).
    self.selector = None
    # The site ranges of each scan's unrolled copies, as met (`_scan`).
    self.scan_copies: list[tuple[tuple[int, int], ...]] = []

  def run(self, jaxpr, plan: SitePlan, consts, args) -> list:
    jaxpr = open_jaxpr(jaxpr)
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    read = lambda a: a.val if isinstance(a, jex.Literal) else env[a]
    for i, eqn in enumerate(jaxpr.eqns):
      outs = self._eqn(i, eqn, [read(v) for v in eqn.invars], plan)
      env.update(
        (v, x)
        for v, x in zip(eqn.outvars, outs)
        if not isinstance(v, jex.DropVar)
      )
    return [read(v) for v in jaxpr.outvars]

  def _eqn(self, i: int, eqn, ins: list, plan: SitePlan) -> list:
    """The outputs of equation `i` of a jaxpr planned by `plan`."""
    if i in plan.sites and eqn.primitive.name in ATTENTION_PRIMITIVES:
      algorithm = self.algorithms[plan.sites[i]]
      if not isinstance(algorithm, str):
        raise EmulationError(
          "[hloprobe] an attention site's algorithm cannot be chosen at "
          "run time; emulate each assignment alone"
        )
      out = emulated_attention(eqn, ins, algorithm)
      return [lax.convert_element_type(out[0], eqn.outvars[0].aval.dtype)]
    if i in plan.sites:
      return [self._dot(eqn, ins, plan.sites[i])]
    if eqn.primitive.name in CALL_PRIMITIVES or (
      i in plan.subs and any(s.size for s in plan.subs[i])
    ):
      return self._higher_order(eqn, ins, plan.subs.get(i))
    outs = eqn.primitive.bind(*ins, **eqn.params)
    return outs if eqn.primitive.multiple_results else [outs]

  def _closed(self, closed, plan):
    return lambda *args: self.run(closed.jaxpr, plan, closed.consts, args)

  def _dot(self, eqn, ins, site: int):
    out_dtype = eqn.outvars[0].aval.dtype
    if not all(jax.numpy.issubdtype(x.dtype, jax.numpy.inexact) for x in ins):
      if not jax.numpy.issubdtype(out_dtype, jax.numpy.inexact):
        return eqn.primitive.bind(*ins, **eqn.params)  # integer dots: exact
      # Integer operands, float result: XLA converts the operands and sums
      # in floats (`sites.integer_rules.integer_to_float_algorithm`).
      ins = [lax.convert_element_type(x, out_dtype) for x in ins]

    def at(algorithm, *operands):
      if eqn.primitive.name == "conv_general_dilated":
        out = emulated_conv_general_dilated(
          *operands,
          eqn.params,
          algorithm,
          order=self.order,
          tf32_rounding=self.rounding,
        )
      else:
        out = emulated_dot_general(
          *operands,
          eqn.params["dimension_numbers"],
          algorithm,
          order=self.order,
          tf32_rounding=self.rounding,
        )
      return lax.convert_element_type(out, out_dtype)

    return self._switched(site, at, ins)

  def _switched(self, site: int, at, ins):
    """`at(algorithm, *ins)` at the site's algorithm: a name, or a tuple of
    names of which `selector[site]` picks one at run time."""
    algorithm = self.algorithms[site]
    if isinstance(algorithm, str):
      return at(algorithm, *ins)
    return at(Switched(algorithm, self.selector[site]), *ins)

  def _higher_order(self, eqn, ins, plans):
    loop = eqn.primitive.name not in CALL_PRIMITIVES
    self.in_body += loop
    try:
      return self._walk_higher_order(eqn, ins, plans)
    finally:
      self.in_body -= loop

  def _walk_higher_order(self, eqn, ins, plans):
    name, p = eqn.primitive.name, eqn.params
    if name in CALL_PRIMITIVES:
      sub = p[CALL_PRIMITIVES[name]]
      consts = sub.consts if isinstance(sub, jex.ClosedJaxpr) else ()
      return self.run(sub, plans[0] if plans else NO_SITES, consts, ins)
    if name == "cond":
      fns = [self._closed(b, s) for b, s in zip(p["branches"], plans)]
      return lax.switch(ins[0], fns, *ins[1:])
    if name == "while":
      return self._while(p, ins, plans)
    return self._scan(p, ins, plans)

  def _while(self, p, ins, plans):
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = ins[:nc], ins[nc : nc + nb], ins[nc + nb :]
    cond, body = (
      self._closed(p["cond_jaxpr"], plans[0]),
      self._closed(p["body_jaxpr"], plans[1]),
    )
    return lax.while_loop(
      lambda c: cond(*cond_consts, *c)[0],
      lambda c: body(*body_consts, *c),
      list(init),
    )

  def _scan(self, p, ins, plans):
    nc, nk = scan_counts(p)
    self.scan_copies.append(tuple((s.base, s.base + s.size) for s in plans))
    if len({self.algorithms[s.base : s.base + s.size] for s in plans}) > 1:
      raise EmulationError(
        f"[hloprobe] a scan with unroll={p['unroll']} has {len(plans)} copies "
        "of its body in StableHLO, with different algorithms for their sites; "
        "emulating that is not supported"
      )
    body = self._closed(p["jaxpr"], plans[0] if plans else NO_SITES)

    def step(carry, xs):
      outs = body(*ins[:nc], *carry, *xs)
      return outs[:nk], outs[nk:]

    carry, ys = lax.scan(
      step,
      list(ins[nc : nc + nk]),
      list(ins[nc + nk :]),
      length=p["length"],
      reverse=p["reverse"],
    )
    return [*carry, *ys]
