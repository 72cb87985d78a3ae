"""The integer-overflow fix as a program change: `preferred_element_type`.

An integer `dot_general` whose result type is narrower than its exact sum
(s8 x s8 -> s8, jax-ml/jax#4465's `jnp.matmul` of int8 arrays) wraps: XLA
computes exact products and sums and wraps them to the result type, as
seen in the optimized HLO of jaxlib 0.12.0.1 and 0.10.2 (XLA:CPU keeps an
s8 -> s8 `dot` or `__ynn_fusion`; a GPU loop fusion or strength-reduced
multiply+reduce stays in s8; cuBLAS runs s8 x s8 in s32,
gemm_rewriter.cc `TypesAreSupportedByCublasLt`); the rules and their
sources are `hloprobe.sites`' integer rules. The one exception is a Triton
gemm's mma, whose `.satfinite` clamps an s32 accumulator chain past
2^31 - 1 instead of wrapping (PTX ISA, mma). JAX's fix is `preferred_element_type=jnp.int32` on the dot
(`jax.lax.dot_general`'s documented parameter; `jnp.matmul` takes it too):
the sums are kept in s32, and the program's output is s32.

`INT32_DOTS_FIX.fixed_case(case)` is that change applied to a whole case: every
integer dot whose result type is narrower than 32 bits gets
`preferred_element_type=int32`; what consumes such a dot takes the wider
value (its narrower integer operands widened to match), so an output
computed from it is s32, as the user's fixed program would be. It is
made by re-binding the program's jaxpr (`jax.make_jaxpr`, public
`jax.extend.core` records), inlining `pjit`/closed calls; the bodies of
scan, while and cond are bound as they are (their dots unchanged).

A case named `NAME` becomes `NAME+preferred_element_type=int32`; `--case`
words take the same suffix (`case_suffix`), so a worker finds the fixed
case by its word.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hloprobe.compile.case_model import Case

__all__ = ["INT32_DOTS_FIX", "Int32DotsFix"]


def _narrow_int(dtype) -> bool:
  d = np.dtype(dtype)
  return d.kind in "iu" and d.itemsize < 4


def _wide(dtype) -> np.dtype:
  return np.dtype(np.int32 if np.dtype(dtype).kind == "i" else np.uint32)


def _eval(jaxpr, consts, args):
  """Evaluates `jaxpr` (a `jax.extend.core.Jaxpr`) on `args` with every
  narrow integer dot widened (see the module)."""
  import jax
  from jax.extend.core import Literal

  env = {}

  def read(v):
    return v.val if isinstance(v, Literal) else env[v]

  for v, x in zip(jaxpr.constvars, consts, strict=True):
    env[v] = x
  for v, x in zip(jaxpr.invars, args, strict=True):
    env[v] = x
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    name = eqn.primitive.name
    params = dict(eqn.params)
    if name in ("pjit", "jit", "closed_call", "core_call") and (
      "jaxpr" in params or "call_jaxpr" in params
    ):
      inner = params.get("jaxpr", params.get("call_jaxpr"))
      closed = getattr(inner, "jaxpr", inner)
      outs = _eval(closed, getattr(inner, "consts", ()), ins)
    else:
      if name == "dot_general":
        out_dtype = eqn.outvars[0].aval.dtype
        if _narrow_int(out_dtype) and all(
          np.dtype(x.dtype).kind in "iu" for x in ins
        ):
          params["preferred_element_type"] = _wide(out_dtype)
      widened = [
        np.dtype(getattr(x, "dtype", v.aval.dtype)) != np.dtype(v.aval.dtype)
        for x, v in zip(ins, eqn.invars, strict=True)
        if not isinstance(v, Literal)
      ]
      if any(widened) and name != "convert_element_type":
        top = max(
          (np.dtype(x.dtype) for x in ins if hasattr(x, "dtype")),
          key=lambda d: (d.kind in "iu", d.itemsize),
        )
        ins = [
          jax.lax.convert_element_type(x, top)
          if hasattr(x, "dtype") and _narrow_int(x.dtype) and top.kind in "iu"
          else x
          for x in ins
        ]
      outs = eqn.primitive.bind(*ins, **params)
      if not eqn.primitive.multiple_results:
        outs = [outs]
    for v, x in zip(eqn.outvars, outs, strict=True):
      env[v] = x
  return [read(v) for v in jaxpr.outvars]


def _widened(fn):
  """`fn` with its narrow integer dots at `preferred_element_type` int32."""

  def fixed(*args):
    import jax

    leaves, tree = jax.tree_util.tree_flatten(args)
    closed, shape = jax.make_jaxpr(
      lambda *xs: fn(*jax.tree_util.tree_unflatten(tree, xs)),
      return_shape=True,
    )(*leaves)
    outs = _eval(closed.jaxpr, closed.consts, leaves)
    return jax.tree_util.tree_unflatten(
      jax.tree_util.tree_structure(shape), outs
    )

  fixed.__name__ = getattr(fn, "__name__", "fn")
  fixed.__doc__ = fn.__doc__
  return fixed


@dataclasses.dataclass(frozen=True)
class Int32DotsFix:
  """The integer-overflow fix as a program change (see the module).

  Attributes:
    word: how `--fix` and a fix candidate name it.
  """

  word: str = "preferred_element_type=int32"

  @property
  def case_suffix(self) -> str:
    """What a fixed case's name and `--case` word end with:
    "+preferred_element_type=int32"."""
    return "+" + self.word

  def is_fixed(self, name: str) -> bool:
    """Whether a case name or word is a fixed case's."""
    return name.endswith(self.case_suffix)

  def unfixed(self, name: str) -> str:
    """A fixed case's name or word without `case_suffix` (any other as it
    is)."""
    return name.removesuffix(self.case_suffix)

  def fixed_case(self, case: Case) -> Case:
    """`case` with `preferred_element_type=jnp.int32` on its narrow
    integer dots, named `case.name + case_suffix`."""
    return dataclasses.replace(
      case,
      name=case.name + self.case_suffix,
      description=(
        f"{case.description} (its narrow integer dots at "
        "preferred_element_type=jnp.int32)"
      ),
      fn=_widened(case.fn),
      reported=None,
    )


INT32_DOTS_FIX = Int32DotsFix()
