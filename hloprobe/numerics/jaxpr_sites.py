"""Contraction sites of a case's jaxpr, numbered as its StableHLO numbers them.

`plan_sites` walks a jaxpr (from `jax.make_jaxpr`) and gives every
`dot_general` and `conv_general_dilated` the lowering keeps the index that
`stablehlo.parse_stablehlo_dots` gives the matching
`stablehlo.dot_general` or `stablehlo.convolution` (each lowers to one op:
jax/_src/lax/lax.py `_dot_general_lower`, jax/_src/lax/convolution.py
`_conv_general_dilated_lower`; checked on jax/jaxlib 0.10.2 and 0.12.0.1):
dots and convolutions numbered together, in program order,
once per call path (a nested `jit` called twice is two sites, a dot in a
`scan` or `while` body is one), cond branches in branch order, a while's
condition before its body.

Only the dots the lowering keeps are sites. Lowering first prunes dead code
with jax's DCE rules (jax/_src/interpreters/pxla.py `_dce_jaxpr` with the
rules in `pe.dce_rules`); `_Planner` applies the same rules: call-like
primitives, `cond` and `scan` are pruned inside; a `while` is pruned inside
where the installed jax has a rule for it (jax 0.12.0.1:
`private_api.while_has_dce_rule`), else (jax 0.10.2) kept whole or dropped. A `scan` with `unroll` > 1 is written into StableHLO
several times (`_scan_copies`), and each copy gets its own sites.

Not covered: dots that exist only in a primitive's lowering (some linear
algebra) have no jaxpr site. Compare `count_sites` with the StableHLO count
before trusting the numbering. A higher-order primitive other than those in
`CALL_PRIMITIVES`, cond, while and scan raises `EmulationError` if it holds
a dot.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import jax

from hloprobe import private_api
from hloprobe.compile import JAXPR_API as jex
from hloprobe.errors import EmulationError

__all__ = [
  "CALL_PRIMITIVES",
  "SITE_PRIMITIVES",
  "NO_SITES",
  "JaxprSite",
  "SitePlan",
  "count_sites",
  "jaxpr_sites",
  "multiply_adds",
  "open_jaxpr",
  "plan_sites",
  "trace",
]

# Primitives (by name, jax 0.10.2 and 0.12.0.1: `jit`, 0.4.x: `pjit`) that
# call one sub-jaxpr on the eqn's
# inputs, mapped to the param holding it. Their DCE rules prune inside;
# custom_jvp_call and custom_vjp_call keep every input (`instantiate=True`
# in jax/_src/custom_derivatives.py `_custom_jvp_call_dce`).
CALL_PRIMITIVES = {
  "jit": "jaxpr",
  "pjit": "jaxpr",
  "closed_call": "call_jaxpr",
  "core_call": "call_jaxpr",
  "remat2": "jaxpr",
  "checkpoint": "jaxpr",
  "custom_jvp_call": "call_jaxpr",
  "custom_vjp_call": "call_jaxpr",
}
_KEEP_INPUTS = ("custom_jvp_call", "custom_vjp_call")
# `jax.shard_map`'s primitive (jax 0.10.2 and 0.12.0.1: params jaxpr, mesh,
# in_specs, out_specs, check_vma, newly_manual_axes): its body is each
# device's program, emulated per device inside a real shard_map.
SHARD_MAP = "shard_map"
# The primitives that are contraction sites.
SITE_PRIMITIVES = (
  "dot_general",
  "conv_general_dilated",
  # jax's cuDNN attention (`emulate_attention`): StableHLO's __cudnn$fmha.
  "dot_product_attention_fwd_wrapper",
  "dot_product_attention_bwd_wrapper",
)


@dataclasses.dataclass(frozen=True, slots=True)
class JaxprSite:
  """One contraction site of a case's jaxpr, numbered as in StableHLO.

  Attributes:
    index: site number, from 0 (same as `StableHloDot.index`).
    lhs, rhs: operand shapes and dtypes (a convolution's input and kernel).
    dimension_numbers: a dot's `((lhs_contracting, rhs_contracting),
      (lhs_batch, rhs_batch))`; a convolution's `ConvDimensionNumbers`.
    path: the enclosing higher-order primitives, e.g. "jit(inner)/scan";
      "" at top level.
    primitive: "dot_general" or "conv_general_dilated".
  """

  index: int
  lhs: jax.ShapeDtypeStruct
  rhs: jax.ShapeDtypeStruct
  dimension_numbers: tuple
  path: str
  primitive: str = "dot_general"


@dataclasses.dataclass(frozen=True)
class SitePlan:
  """Site numbers of one jaxpr on one call path.

  Attributes:
    sites: eqn position of each live dot_general -> its site number.
    subs: eqn position of each live higher-order eqn -> the plans of its
      sub-jaxprs (per branch; cond then body for while; per copy for scan).
    base: the first site number of this plan; its sites, nested ones
      included, are [base, base + size).
    size: how many sites.
  """

  sites: dict[int, int]
  subs: dict[int, tuple[SitePlan, ...]]
  base: int
  size: int


NO_SITES = SitePlan({}, {}, 0, 0)


def _scan_copies(length: int, unroll: int) -> int:
  """How often jax's scan lowering writes the body into StableHLO.

  jax/_src/lax/control_flow/loops.py `_scan_impl` (jax 0.10.2 and
  0.12.0.1; the scan's inputs through `JAXPR_API.scan_counts`): a while
  loop of `unroll` copies when it runs at least twice, plus the remainder
  iterations written out after it.
  """
  trips, rest = (0, length) if unroll == 0 else divmod(length, unroll)
  if unroll != 1 and trips == 1 and rest == 0:
    trips, rest = 0, length
  return (unroll if trips else 0) + rest


def _contains_dot(jaxpr) -> bool:
  """Whether a site primitive occurs in `jaxpr`, at any depth."""
  return any(
    e.primitive.name in SITE_PRIMITIVES
    or any(_contains_dot(j) for j in jex.jaxprs_in_params(e.params))
    for e in jaxpr.eqns
  )


def open_jaxpr(jaxpr):
  """The `Jaxpr` of a `ClosedJaxpr`, or the argument if already open."""
  return jaxpr.jaxpr if isinstance(jaxpr, jex.ClosedJaxpr) else jaxpr


class _Planner:
  """Numbers the live dot sites of a jaxpr (see the module docstring)."""

  def __init__(self):
    self.sites: list[JaxprSite] = []
    self._liveness_cache: dict = {}
    self.while_dce = private_api.while_has_dce_rule()

  def plan(self, jaxpr, used_outputs, dce: bool, path: str) -> SitePlan:
    live, eqn_used, _ = self._liveness(jaxpr, tuple(used_outputs), dce)
    base, sites, subs = len(self.sites), {}, {}
    for i, eqn in enumerate(jaxpr.eqns):
      if not live[i]:
        continue
      if eqn.primitive.name in SITE_PRIMITIVES:
        sites[i] = len(self.sites)
        lhs, rhs = (
          jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype)
          for v in eqn.invars[:2]
        )
        self.sites.append(
          JaxprSite(
            sites[i],
            lhs,
            rhs,
            eqn.params.get("dimension_numbers"),
            path,
            eqn.primitive.name,
          )
        )
      elif any(True for _ in jex.jaxprs_in_params(eqn.params)):
        subs[i] = self._plan_eqn(eqn, eqn_used[i], dce, path)
    return SitePlan(sites, subs, base, len(self.sites) - base)

  def _plan_eqn(self, eqn, used, dce, path) -> tuple[SitePlan, ...]:
    name, p = eqn.primitive.name, eqn.params
    if name in CALL_PRIMITIVES:
      label = f"jit({p['name']})" if "name" in p else name
      sub = open_jaxpr(p[CALL_PRIMITIVES[name]])
      return (self.plan(sub, used, dce, f"{path}/{label}".lstrip("/")),)
    if name == SHARD_MAP:  # its body once: each device runs it
      sub = open_jaxpr(p["jaxpr"])
      return (self.plan(sub, used, dce, f"{path}/shard_map".lstrip("/")),)
    if name == "cond":
      return tuple(
        self.plan(b.jaxpr, used, dce, f"{path}/cond[{k}]".lstrip("/"))
        for k, b in enumerate(p["branches"])
      )
    if name == "while":
      where = f"{path}/while".lstrip("/")
      body = p["body_jaxpr"].jaxpr
      prune = dce and self.while_dce
      body_used = (
        self._while_liveness(eqn, used)[0]
        if prune
        else (True,) * len(body.outvars)
      )
      return (
        self.plan(p["cond_jaxpr"].jaxpr, (True,), prune, f"{where}[cond]"),
        self.plan(body, body_used, prune, f"{where}[body]"),
      )
    if name == "scan":
      body_used, _ = (
        self._scan_liveness(eqn, used)
        if dce
        else ((True,) * len(p["jaxpr"].jaxpr.outvars), None)
      )
      where = f"{path}/scan".lstrip("/")
      return tuple(
        self.plan(p["jaxpr"].jaxpr, body_used, dce, where)
        for _ in range(_scan_copies(p["length"], p["unroll"]))
      )
    if any(_contains_dot(j) for j in jex.jaxprs_in_params(p)):
      raise EmulationError(
        f"[hloprobe] cannot emulate dots inside primitive {name!r} (at "
        f"{path or 'top level'}); supported: {', '.join(CALL_PRIMITIVES)}, cond, "
        "while, scan, shard_map"
      )
    return ()

  def _liveness(self, jaxpr, used_outputs: tuple, dce: bool):
    """Backward pass: (live eqns, used outputs per eqn, used inputs)."""
    key = (id(jaxpr), used_outputs, dce)
    if key in self._liveness_cache:
      return self._liveness_cache[key][1]
    n = len(jaxpr.eqns)
    if not dce:
      result = (
        [True] * n,
        [(True,) * len(e.outvars) for e in jaxpr.eqns],
        [True] * len(jaxpr.invars),
      )
    else:
      result = self._dce(jaxpr, used_outputs)
    self._liveness_cache[key] = (jaxpr, result)
    return result

  def _dce(self, jaxpr, used_outputs):
    used = {
      v
      for v, u in zip(jaxpr.outvars, used_outputs)
      if u and isinstance(v, jex.Var)
    }
    live, eqn_used = [False] * len(jaxpr.eqns), [()] * len(jaxpr.eqns)
    for i in reversed(range(len(jaxpr.eqns))):
      eqn = jaxpr.eqns[i]
      outs = tuple(v in used for v in eqn.outvars)
      if not any(outs) and not eqn.effects:
        continue
      live[i], eqn_used[i] = True, outs
      for v, u in zip(eqn.invars, self._used_inputs(eqn, outs)):
        if u and isinstance(v, jex.Var):
          used.add(v)
    return live, eqn_used, [v in used for v in jaxpr.invars]

  def _used_inputs(self, eqn, outs) -> list[bool]:
    """Which inputs of a live eqn its DCE rule keeps."""
    name, p = eqn.primitive.name, eqn.params
    if name in CALL_PRIMITIVES and name not in _KEEP_INPUTS:
      return self._liveness(open_jaxpr(p[CALL_PRIMITIVES[name]]), outs, True)[2]
    if name == "cond":
      per_branch = [
        self._liveness(b.jaxpr, outs, True)[2] for b in p["branches"]
      ]
      return [True] + [any(col) for col in zip(*per_branch)]
    if name == "scan":
      return self._scan_liveness(eqn, outs)[1]
    if name == "while" and self.while_dce:
      return self._while_liveness(eqn, outs)[1]
    return [True] * len(eqn.invars)

  def _while_liveness(self, eqn, outs):
    """jax 0.12.0.1's `_while_dce_rule` fixpoint: (used carry, which the
    body computes and the loop outputs; used inputs: cond consts, body
    consts, carry)."""
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond, body = p["cond_jaxpr"].jaxpr, p["body_jaxpr"].jaxpr
    carry = list(outs)
    for _ in range(1 + len(carry)):
      cond_in = self._liveness(cond, (True,), True)[2]
      carry = [a or b for a, b in zip(carry, cond_in[nc:])]
      body_in = self._liveness(body, tuple(carry), True)[2]
      grown = [a or b for a, b in zip(carry, body_in[nb:])]
      if grown == carry:
        break
      carry = grown
    cond_in = self._liveness(cond, (True,), True)[2]
    body_in = self._liveness(body, tuple(carry), True)[2]
    return tuple(carry), [*cond_in[:nc], *body_in[:nb], *carry]

  def _scan_liveness(self, eqn, outs):
    """jax's `_scan_dce_rule` fixpoint: (used body outputs, used inputs)."""
    p = eqn.params
    body, (nc, nk) = p["jaxpr"].jaxpr, jex.scan_counts(p)
    carry, ys = list(outs[:nk]), list(outs[nk:])
    for _ in range(1 + nk):
      used_in = list(self._liveness(body, tuple(carry + ys), True)[2])
      carry_in = [a or b for a, b in zip(used_in[nc : nc + nk], carry)]
      used_in[nc : nc + nk] = carry_in
      if carry_in == carry:
        break
      carry = carry_in
    return tuple(carry + ys), used_in


def plan_sites(jaxpr) -> tuple[SitePlan, tuple[JaxprSite, ...]]:
  """Numbers the sites of a top-level jaxpr whose outputs are all used.

  Returns:
    The plan (site numbers per eqn, nested per call path) and the sites in
    site order.

  Raises:
    EmulationError: an unsupported higher-order primitive holds a dot.
  """
  planner = _Planner()
  plan = planner.plan(jaxpr, (True,) * len(jaxpr.outvars), True, "")
  return plan, tuple(planner.sites)


def trace(fn: Callable, args: Sequence):
  """(closed jaxpr, output treedef) of `fn` on arguments like `args`."""
  closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
  return closed, jax.tree_util.tree_structure(out_shape)


def jaxpr_sites(fn: Callable, args: Sequence) -> tuple[JaxprSite, ...]:
  """The contraction sites of `fn` on `args`, numbered as in its StableHLO."""
  return plan_sites(trace(fn, args)[0].jaxpr)[1]


def multiply_adds(sites: Sequence[JaxprSite]) -> int:
  """The sites' multiply-adds, an estimate for size thresholds (issue 37:
  `rows.rows_whole`): a dot_general's output elements times its K, i.e.
  its lhs elements times the rhs's free elements; a convolution's lhs
  batch times spatial elements times its kernel's elements (its output
  at stride 1, times K: a bound for a strided one); a cuDNN attention's
  q elements times k's sequence, twice (q k^T and p v; q (B, T, N, H), k
  (B, S, N, H), jax's layout). A site in a loop body counts once."""
  total = 0
  for s in sites:
    dims = s.dimension_numbers
    if s.primitive not in ("dot_general", "conv_general_dilated"):
      # q (B, T, N, H), k (B, S, N, H): 2 * B*T*N*H * S.
      seq = s.rhs.shape[1] if len(s.rhs.shape) > 1 else 1
      total += 2 * math.prod(s.lhs.shape) * seq
      continue
    if s.primitive == "conv_general_dilated":
      lhs_spec = dims.lhs_spec
      batch_and_space = [s.lhs.shape[lhs_spec[0]]]
      batch_and_space += [s.lhs.shape[d] for d in lhs_spec[2:]]
      total += math.prod(batch_and_space) * math.prod(s.rhs.shape)
      continue
    (_, rc), (_, rb) = dims
    free = [d for i, d in enumerate(s.rhs.shape) if i not in (*rc, *rb)]
    total += math.prod(s.lhs.shape) * math.prod(free)
  return total


def count_sites(fn: Callable, args: Sequence) -> int:
  """How many contraction sites `fn` has; compare with the StableHLO count."""
  return len(jaxpr_sites(fn, args))
