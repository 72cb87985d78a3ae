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

import functools

import jax
from jax import lax

from hloprobe.compile import JAXPR_API as jex
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
  SHARD_MAP,
  SitePlan,
  open_jaxpr,
)

__all__ = [
  "PSUM_INVARIANT",
  "Evaluator",
  "dot_at",
  "last_uses",
  "psum_invariant",
  "spec_parts",
]

# The psum a shard_map body traces to under jax's varying-axes check (jax
# 0.10.2 and 0.12.0.1: params `axes`); bound as itself it needs that check.
PSUM_INVARIANT = "psum_invariant"


def _parts(sharding, ndim: int) -> tuple[int, ...] | None:
  """Per dimension, how many devices a `NamedSharding` splits it over
  (the product of its mesh axes' sizes); None for any other sharding (an
  unspecified or single-device one)."""
  spec, mesh = getattr(sharding, "spec", None), getattr(sharding, "mesh", None)
  if spec is None or mesh is None:
    return None
  return spec_parts(spec, dict(mesh.shape), ndim)


def spec_parts(spec, sizes: dict, ndim: int) -> tuple[int, ...]:
  """Per dimension of an `ndim`-dimensional array, how many devices a
  `PartitionSpec` splits it over on a mesh of axis `sizes` (name ->
  size)."""
  out = []
  for i in range(ndim):
    entry = spec[i] if i < len(spec) else None
    names = (
      () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
    )
    count = 1
    for name in names:
      count *= sizes.get(name, 1)
    out.append(count)
  return tuple(out)


def partial_sums(lhs, rhs, dims, count: int, dot) -> object:
  """A dot whose contracting dimension is split over `count` devices, as
  XLA's SPMD partitioner computes it (xla/service/spmd/dot_handler.cc: a
  per-device dot over K / count of the products, then an all-reduce
  adding the `count` partial sums): `dot(lhs_j, rhs_j)` on each
  contiguous K / count slice, added in device order in the dot's
  accumulation type."""
  (lc,), (rc,) = dims[0]
  step = lhs.shape[lc] // count
  total = None
  for j in range(count):
    part = dot(
      lax.slice_in_dim(lhs, j * step, (j + 1) * step, axis=lc),
      lax.slice_in_dim(rhs, j * step, (j + 1) * step, axis=rc),
    )
    total = part if total is None else total + part
  return total


def dot_at(
  lhs, rhs, *, dims, algorithm, order, rounding, dtype, count, tiled=False
):
  """One float dot site as the evaluator computes it: the emulated
  dot_general at `algorithm` and `order` (`rounding`: TF32's; `tiled`:
  `emulated_dot_general`'s, for a site computed alone), of each of
  `count` devices' K slices with their partial sums added in device order
  (`partial_sums`) where a mesh splits K, converted to `dtype`, the dtype
  the program's dot returns. Keyword arguments after the operands, so
  that `jax.jit` can take them as static (`emulate_outlined._site_dot`)."""
  dot = lambda a, b: emulated_dot_general(
    a, b, dims, algorithm, order=order, tf32_rounding=rounding, tiled=tiled
  )
  out = (
    dot(lhs, rhs) if count == 1 else partial_sums(lhs, rhs, dims, count, dot)
  )
  return lax.convert_element_type(out, dtype)


def last_uses(jaxpr) -> dict[int, list]:
  """Per equation index of `jaxpr`, the variables not needed after it:
  those read there for the last time, and those it makes that nothing
  reads (not the jaxpr's outputs)."""
  kept = {v for v in jaxpr.outvars if not isinstance(v, jex.Literal)}
  last: dict = {}
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.invars:
      if not isinstance(v, jex.Literal) and v not in kept:
        last[v] = i
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.outvars:
      if not isinstance(v, jex.DropVar) and v not in kept and v not in last:
        last[v] = i
  found: dict[int, list] = {}
  for v, i in last.items():
    found.setdefault(i, []).append(v)
  return found


def psum_invariant(eqn, ins) -> list:
  """A body's `psum_invariant` as `jax.lax.psum` over its axes: the N
  partial sums added by the collective, as the program asks."""
  return list(lax.psum(tuple(ins), eqn.params["axes"]))


class Evaluator:
  """Evaluates jaxprs with each planned site (dot or convolution) at its
  algorithm.

  Args:
    algorithms: one algorithm name per site (`EMULATED_ALGORITHMS`), in
      site order.
    order: f32 summation order of every emulated dot (`SUMMATION_ORDERS`),
      or a tuple of several, of which `order_index` (a traced int32 scalar
      the caller sets) picks one at run time: each site is then a
      `lax.switch` over its dot in each order, each branch the ops that
      order alone gives (`emulate.SwitchedEmulation`: one compile for
      several fixed orders).
    rounding: f32 -> TF32 rounding mode ('rna', 'rne' or 'rz').
  """

  def __init__(self, algorithms: tuple, order: str, rounding: str):
    self.algorithms, self.order, self.rounding = algorithms, order, rounding
    # Per jaxpr variable, the devices each dimension is split over, as the
    # program asks (a `with_sharding_constraint`, a jit's `in_shardings`):
    # a dot whose contracting dimension is split sums its K / N parts
    # apart (`partial_sums`).
    self.parts: dict = {}
    # How deep the walk is inside loop and branch bodies (while, scan,
    # cond): their values are the body's own trace, which recorders skip.
    self.in_body = 0
    # A site whose algorithm is a tuple of names is computed by the one
    # `selector[site]` picks at run time (`emulate_dot.Switched`), so that
    # one compile serves every assignment (`emulate.emulate_switched`).
    self.selector = None
    # With several orders, the one `order_index` picks at run time.
    self.order_index = None
    # The site ranges of each scan's unrolled copies, as met (`_scan`).
    self.scan_copies: list[tuple[tuple[int, int], ...]] = []

  def run(self, jaxpr, plan: SitePlan, consts, args) -> list:
    """The outputs of `jaxpr` on `consts` and `args`. Each value is
    dropped after its last use: traced, that changes nothing; walked
    eagerly (`emulate_outlined`), a deep program's values of every layer
    are not held together."""
    jaxpr = open_jaxpr(jaxpr)
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    last = last_uses(jaxpr)
    read = lambda a: a.val if isinstance(a, jex.Literal) else env[a]
    for i, eqn in enumerate(jaxpr.eqns):
      outs = self._eqn(i, eqn, [read(v) for v in eqn.invars], plan)
      env.update(
        (v, x)
        for v, x in zip(eqn.outvars, outs)
        if not isinstance(v, jex.DropVar)
      )
      for v in last.get(i, ()):
        env.pop(v, None)
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
      outs = emulated_attention(eqn, ins, algorithm)
      return [
        lax.convert_element_type(o, v.aval.dtype)
        for o, v in zip(outs, eqn.outvars)
      ]
    if i in plan.sites:
      return [self._dot(eqn, ins, plan.sites[i])]
    if eqn.primitive.name in (*CALL_PRIMITIVES, SHARD_MAP) or (
      i in plan.subs and any(s.size for s in plan.subs[i])
    ):
      return self._higher_order(eqn, ins, plan.subs.get(i))
    if eqn.primitive.name == PSUM_INVARIANT:
      return psum_invariant(eqn, ins)
    if eqn.primitive.name == "sharding_constraint":
      found = _parts(eqn.params.get("sharding"), len(eqn.outvars[0].aval.shape))
      if found is not None:
        self.parts[eqn.outvars[0]] = found
      # Not bound: the emulation runs on one device (bound, XLA would
      # partition the emulation itself); the split is `_split`'s.
      return [ins[0]]
    outs = eqn.primitive.bind(*ins, **eqn.params)
    return outs if eqn.primitive.multiple_results else [outs]

  def _closed(self, closed, plan):
    return lambda *args: self.run(closed.jaxpr, plan, closed.consts, args)

  def _split(self, eqn) -> int:
    """How many devices the dot's contracting dimension is split over as
    the program asks (1: not split, or more than one contracting
    dimension, or K not divisible)."""
    (lc, rc), _ = eqn.params["dimension_numbers"]
    if len(lc) != 1 or eqn.primitive.name != "dot_general":
      return 1
    lhs, rhs = (self.parts.get(v) for v in eqn.invars[:2])
    counts = {p[d] for p, d in ((lhs, lc[0]), (rhs, rc[0])) if p is not None}
    count = max(counts, default=1)
    k = eqn.invars[0].aval.shape[lc[0]]
    return count if count > 1 and k % count == 0 else 1

  def _dot(self, eqn, ins, site: int):
    out_dtype = eqn.outvars[0].aval.dtype
    if not all(jax.numpy.issubdtype(x.dtype, jax.numpy.inexact) for x in ins):
      if not jax.numpy.issubdtype(out_dtype, jax.numpy.inexact):
        return eqn.primitive.bind(*ins, **eqn.params)  # integer dots: exact
      # Integer operands, float result: XLA converts the operands and sums
      # in floats (`sites.integer_rules.integer_to_float_algorithm`).
      ins = [lax.convert_element_type(x, out_dtype) for x in ins]

    def at(order, algorithm, *operands):
      if eqn.primitive.name == "conv_general_dilated":
        out = emulated_conv_general_dilated(
          *operands,
          eqn.params,
          algorithm,
          order=order,
          tf32_rounding=self.rounding,
        )
        return lax.convert_element_type(out, out_dtype)
      return dot_at(
        *operands,
        dims=eqn.params["dimension_numbers"],
        algorithm=algorithm,
        order=order,
        rounding=self.rounding,
        dtype=out_dtype,
        count=self._split(eqn),
      )

    if isinstance(self.order, str):
      return self._switched(site, functools.partial(at, self.order), ins)
    in_order = lambda order, *x: self._switched(
      site, functools.partial(at, order), list(x)
    )
    branches = [functools.partial(in_order, order) for order in self.order]
    return lax.switch(self.order_index, branches, *ins)

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
      self._pass_parts(eqn, open_jaxpr(sub), p.get("in_shardings"))
      return self.run(sub, plans[0] if plans else NO_SITES, consts, ins)
    if name == SHARD_MAP:
      return self._shard_map(p, ins, plans[0] if plans else NO_SITES)
    if name == "cond":
      fns = [self._closed(b, s) for b, s in zip(p["branches"], plans)]
      return lax.switch(ins[0], fns, *ins[1:])
    if name == "while":
      return self._while(p, ins, plans)
    return self._scan(p, ins, plans)

  def _pass_parts(self, eqn, sub, shardings) -> None:
    """A call's operands' splits on its body's inputs: the caller's, or
    the call's own `in_shardings` (a `jax.jit(..., in_shardings=...)`)."""
    shardings = shardings or (None,) * len(sub.invars)
    for outer, inner, sharding in zip(eqn.invars, sub.invars, shardings):
      found = _parts(sharding, len(inner.aval.shape))
      if found is None and not isinstance(outer, jex.Literal):
        found = self.parts.get(outer)
      if found is not None:
        self.parts[inner] = found

  def _shard_map(self, p, ins, plan):
    """A `shard_map` run as the program asks, on its mesh (the devices
    it was traced with): each device's body walked here (its dots
    emulated at their algorithms on that device's K / N slice), the
    collectives (psum: XLA's all-reduce of the N partial sums) as XLA:CPU
    runs them."""
    body = lambda *xs: tuple(self.run(p["jaxpr"], plan, (), xs))
    return jax.shard_map(
      body,
      mesh=p["mesh"],
      in_specs=p["in_specs"],
      out_specs=p["out_specs"],
      # Not checked: the emulated dots' summation orders (scans whose
      # carries start unvarying) would not type-check; the psum is bound
      # as `lax.psum` (`psum_invariant`).
      check_vma=False,
    )(*ins)

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
    nc, nk = jex.scan_counts(p)
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
