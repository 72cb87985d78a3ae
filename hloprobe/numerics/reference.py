"""The float64 reference of a case: its program with every float widened.

The reference is computed by the numpy executor (`executed`): the case's
program lowered to unoptimized HLO at each size and executed with every
float value in float64 and every gemm at F64_F64_F64 (`widen`). No XLA
pass or code generator touches it, so it cannot share a bug with the
XLA:CPU compile of the user's program, nor with hloprobe's emulation
(also compiled by XLA:CPU); see `executed`'s docstring. Converts to
narrower floats and `reduce_precision` are no-ops under widen, so a
program that pins a narrow type (`astype(jnp.float16)`,
`preferred_element_type=jnp.float16`) still gets a float64 answer.
Integer values keep their types there (the module's arithmetic).

Where the executor cannot compute the program (a custom call it has no
model of, such as a LAPACK call), the reference falls back to XLA:CPU,
and says so (`References.source`: "XLA:CPU float64 (not executed by the
numpy executor: <target>)"): the case's jaxpr (`jax.make_jaxpr`) is
re-evaluated on the CPU under `jax.enable_x64` with every floating type
widened to float64: the arguments, the constants and literals, and every
dtype a primitive names (`convert_element_type`'s `new_dtype` from
`astype`, `dot_general`'s `preferred_element_type`, `iota`'s dtype,
...); `reduce_precision` is skipped. Dots run at HIGHEST precision.
Integer output leaves always come from that path: signed integer types
narrower than 64 bits are widened to int64 the same way (arguments,
literals, `preferred_element_type`, `new_dtype`, ...), so an integer
dot's reference is its exact integer result, which an int8 or int32
output may not hold (an overflow `integers.integer_judgement` names); a
cond's index and a select_n's predicate keep the int32 their primitives
require. Unsigned types (random bits, bit tricks) are kept: their
arithmetic wraps by design. Higher-order primitives are followed as
`emulate` follows them (jit, custom_jvp/vjp, cond, while, scan).

The two agree on the built-in cases to 2e-14 relative (seed_mlp; the
others to 3e-15 or bit for bit; float64 sums in other orders), measured
at n = 8 on jaxlib 0.12.0.1.

`References` holds a case's references per size: at each size, or, for a
case that declares `rows_independent`, once at the largest size and sliced,
after checking the declaration; such a case whose batched arguments hold
more than `CHUNK_BYTES` is run in chunks of rows of nearly equal sizes,
each chunk size lowered once, and joined (issue 37: decode at 64 rows,
its worker's reference 2227 -> 1482 MB peak; the same values to
float64's last bits, `CHUNK_BYTES`). It also keeps each size's program,
for the executor's F32 run the noise floor is checked against
(`executed_f32`).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.compile import Case
from hloprobe.errors import CaseError
from hloprobe.numerics import accuracy, executed
from hloprobe.numerics.emulate_attention import (
  ATTENTION_PRIMITIVES,
  emulated_attention,
)
from hloprobe.numerics.evaluator import (
  PSUM_INVARIANT,
  Evaluator,
  psum_invariant,
)
from hloprobe.numerics.jaxpr_sites import (
  CALL_PRIMITIVES,
  NO_SITES,
  SHARD_MAP,
  trace,
)
from hloprobe.numerics.kept import Kept

__all__ = [
  "CHUNK_BYTES",
  "EXECUTOR_SOURCE",
  "References",
  "executed_reference",
  "float64_reference",
  "leaf_names",
]

# `References.source` where the numpy executor computed every float leaf.
EXECUTOR_SOURCE = "numpy executor float64 (unoptimized HLO)"
# ... where it could not: the XLA:CPU path, and why.
_FALLBACK_SOURCE = "XLA:CPU float64 (not executed by the numpy executor: {})"
# ... appended where integer leaves came from the XLA:CPU path.
_INTEGER_SOURCE = "integer leaves exact int64 by XLA:CPU"

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
# complex64 widens to complex128: both parts float64, never one dropped.
_C128 = np.dtype(np.complex128)
_LOOPS = ("cond", "while", "scan", SHARD_MAP)
# A rows_independent case whose batched arguments at a size hold more than
# this is run in chunks of rows, each in float64 on its own (issue 37:
# decode's 64-row KV cache took its worker 461 -> 2238 MB in one run); the
# built-in cases hold far less, and run whole. Each row's float64 value is
# that of the whole run to a few float64 ULPs: numpy's BLAS may sum a gemm
# of fewer rows with another kernel (bit for bit on GPT-2 and decode on an
# Intel machine; 1-5 ULPs apart on an AMD EPYC, reference_test).
CHUNK_BYTES = 64 << 20
# How far the reference at the smallest size may sit from the slice of the
# largest (normwise, per leaf) for a rows_independent case: float64
# reductions may be ordered differently at another batch size (a few ULPs
# of f64), an error of the declaration is of the data's own size.
_INDEPENDENCE_RTOL = 1e-9


def _is_float(dtype) -> bool:
  return jnp.issubdtype(dtype, jnp.floating)


def _is_narrow_int(dtype) -> bool:
  """A signed integer type narrower than int64 (widened to int64)."""
  dtype = np.dtype(dtype)
  return jnp.issubdtype(dtype, jnp.signedinteger) and dtype.itemsize < 8


def _wide(dtype) -> np.dtype | None:
  """The type `dtype` widens to, or None when it is kept."""
  if _is_float(dtype):
    return _F64
  if _is_narrow_int(dtype):
    return _I64
  if jnp.issubdtype(dtype, jnp.complexfloating):
    return _C128
  return None


def _widen_value(x):
  dtype = getattr(x, "dtype", None)
  if dtype is not None and (wide := _wide(dtype)) is not None:
    return jnp.asarray(x, wide)
  if isinstance(x, float):
    return np.float64(x)
  return x


def _widen_host(x: np.ndarray) -> np.ndarray:
  wide = _wide(x.dtype)
  return x if wide is None else x.astype(wide)


def _widen_param(v):
  if isinstance(v, np.dtype) and (wide := _wide(v)) is not None:
    return wide
  if isinstance(v, type) and issubclass(v, np.floating):
    return _F64
  if isinstance(v, type) and issubclass(v, np.complexfloating):
    return _C128
  if isinstance(v, type) and issubclass(v, np.signedinteger):
    return _wide(v) or v
  return v


def _int32_operand(ins: list, i: int) -> list:
  """`ins` with operand i back in int32 where it was a widened integer."""
  x = ins[i]
  if jnp.issubdtype(getattr(x, "dtype", np.bool_), jnp.signedinteger):
    ins = [*ins[:i], jnp.asarray(x, np.int32), *ins[i + 1 :]]
  return ins


class _Widened(Evaluator):
  """Evaluates a jaxpr with every floating type widened to float64."""

  def __init__(self):
    super().__init__((), "xla", "rna")

  def _eqn(self, i: int, eqn, ins: list, plan) -> list:
    del i, plan  # no sites: every dot runs as traced, widened
    ins = [_widen_value(x) for x in ins]  # literals
    name = eqn.primitive.name
    if name == "reduce_precision":
      return ins
    if name in ("cond", "select_n"):  # an int32 index or predicate
      ins = _int32_operand(ins, 0)
    if name in ATTENTION_PRIMITIVES:  # no CPU lowering: its f64 model
      return emulated_attention(eqn, ins, "F64_F64_F64")
    if name in CALL_PRIMITIVES or name in _LOOPS:
      count = max(2, len(eqn.params.get("branches", ())))
      return self._higher_order(eqn, ins, (NO_SITES,) * count)
    if name == PSUM_INVARIANT:
      return psum_invariant(eqn, ins)
    params = {k: _widen_param(v) for k, v in eqn.params.items()}
    outs = eqn.primitive.bind(*ins, **params)
    return outs if eqn.primitive.multiple_results else [outs]


def leaf_names(tree) -> tuple[str, ...]:
  """The name of each leaf of an output pytree, e.g. ("[0]", "['loss']").

  A single array is "" (nothing to name).
  """
  paths = jax.tree_util.tree_flatten_with_path(tree)[0]
  return tuple(jax.tree_util.keystr(p) for p, _ in paths)


def float64_reference(case: Case, args: tuple) -> tuple[np.ndarray, ...]:
  """Every output leaf of `case.fn(*args)` in float64 by XLA:CPU.

  The fallback of `executed_reference`, and the integer leaves' path (see
  the module docstring).

  Args:
    case: the case (its `fn` and `round_reference`).
    args: its arguments at one size (numpy arrays or pytrees of them).

  Returns:
    One numpy array per output leaf (`jax.tree_util.tree_leaves` order),
    of the leaf's shape: f64 (rounded to the leaf's own dtype first where
    `case.round_reference`), or int64 for a signed or unsigned integer
    leaf (its exact value, never rounded to the leaf's type).
  """
  closed, _ = trace(case.fn, args)
  out_dtypes = [a.dtype for a in closed.out_avals]
  with jax.enable_x64(True), jax.default_matmul_precision("highest"):
    # Widened by numpy, on the host: exact (every float type here widens
    # to float64 without rounding), and no jit compile per argument shape.
    leaves = [
      _widen_host(np.asarray(a)) for a in jax.tree_util.tree_leaves(args)
    ]
    run = jax.jit(
      lambda consts, xs: _Widened().run(
        closed.jaxpr, NO_SITES, [_widen_value(c) for c in consts], xs
      )
    )
    ins = (tuple(closed.consts), leaves)
    if jax.default_backend() != "cpu":  # else uncommitted: a program's
      # own mesh (a shard_map, a sharding constraint) places them
      ins = jax.device_put(ins, jax.devices("cpu")[0])
    outs = run(*ins)
    outs = [np.asarray(o) for o in outs]
  return _finished(case, outs, out_dtypes)


def _finished(case: Case, outs, out_dtypes) -> tuple[np.ndarray, ...]:
  """Reference leaves as `float64_reference` returns them: int64 for an
  integer leaf, complex128 for a complex one (both parts), else float64 (rounded to the leaf's dtype first where
  `case.round_reference`)."""
  return tuple(
    np.asarray(o, _I64)
    if jnp.issubdtype(d, jnp.integer)
    else np.asarray(o, _C128)
    if jnp.issubdtype(d, jnp.complexfloating)
    else np.asarray(
      o.astype(d) if case.round_reference and _is_float(d) else o, _F64
    )
    for o, d in zip(outs, out_dtypes)
  )


def executed_reference(
  case: Case, args: tuple, like: executed.Program | None = None
) -> tuple[tuple[np.ndarray, ...], str, executed.Program]:
  """The float64 reference by the numpy executor, XLA:CPU's where it cannot.

  Args:
    case: the case (its `fn` and `round_reference`).
    args: its arguments at one size (numpy arrays or pytrees of them).
    like: a program lowered from arguments of the same shapes, whose
      module is run on `args` (not lowered again); None: lowered here.

  Returns:
    (the leaves, as `float64_reference` returns them; where they come
    from: `EXECUTOR_SOURCE`, or "XLA:CPU float64 (not executed by the
    numpy executor: <why>)", with "; integer leaves exact int64 by
    XLA:CPU" where integer leaves came from there; the lowered program,
    for its F32 run).
  """
  dtypes = [
    np.dtype(a.dtype)
    for a in jax.tree_util.tree_leaves(jax.eval_shape(case.fn, *args))
  ]
  integer = [bool(jnp.issubdtype(d, jnp.integer)) for d in dtypes]
  if all(integer):  # exact int64 is the XLA:CPU path's (see above)
    none = executed.Program(None, (), (), "integer outputs")
    return float64_reference(case, args), "XLA:CPU exact int64", none
  if like is not None and like.module is not None:
    leaves = tuple(np.asarray(a) for a in jax.tree_util.tree_leaves(args))
    program = dataclasses.replace(like, arguments=leaves)
  else:
    program = executed.lower_program(case, args)
  run = program.run(widen=True)
  if run.outputs is None:
    source = _FALLBACK_SOURCE.format(run.why_not)
    return float64_reference(case, args), source, program
  leaves = _finished(case, run.outputs, dtypes)
  if not any(integer):
    return leaves, EXECUTOR_SOURCE, program
  exact = float64_reference(case, args)
  mixed = tuple(e if i else x for x, e, i in zip(leaves, exact, integer))
  return mixed, f"{EXECUTOR_SOURCE}; {_INTEGER_SOURCE}", program


class References:
  """A case's float64 references at every size a sweep asks for (cached).

  Args:
    case: the case.
    full: its `full_inputs()` (None for a sized case).
    sizes: the sizes swept.

  Attributes:
    names: each output leaf's name (`leaf_names`).
    dtypes: each output leaf's dtype, e.g. "float32", "bfloat16".
    axes: each output leaf's batch axis, or None (`Case.output_axes`).
    headline: the index of the leaf the case's rows are about, fixed per
      case (`accuracy.headline_leaf` of `axes` and `dtypes`).

  Raises:
    CaseError: the output axes do not fit the outputs, or the case declares
      `rows_independent` and its reference at the smallest size differs
      from the slice of the largest (the case lied).
  """

  def __init__(self, case: Case, full: tuple | None, sizes):
    self.case, self._full = case, full
    # Whole arrays within a byte budget (`kept.Kept`), made again when
    # dropped; the sources and programs are small.
    self._cache = Kept()
    self._sources: dict[int, str] = {}
    # size -> its program, or its row chunks' programs (`_chunk_rows`)
    self._programs: dict[int, list[executed.Program]] = {}
    self._f32 = Kept()
    fit = sorted(sizes)
    if full is not None:
      fit = [n for n in fit if n <= case.full_size(full)] or fit[:1]
    self._smallest, self._largest = fit[0], fit[-1]
    shapes = jax.eval_shape(case.fn, *case.inputs_for(full, self._smallest))
    leaves = jax.tree_util.tree_leaves(shapes)
    self.names = leaf_names(shapes)
    self.dtypes = tuple(str(np.dtype(a.dtype)) for a in leaves)
    self.axes = case.output_axes([a.shape for a in leaves])
    self.headline = accuracy.headline_leaf(self.axes, self.dtypes)
    if case.rows_independent:
      self._check_independent()

  def _compute(self, n: int) -> tuple[np.ndarray, ...]:
    def make():
      chunk = self._chunk_rows(n)
      if chunk >= n:
        args = self.case.inputs_for(self._full, n)
        leaves, source, program = executed_reference(self.case, args)
        self._sources[n], self._programs[n] = source, [program]
        return leaves
      # Chunks of nearly equal sizes (at most two), each lowered once; no
      # chunk of one row where others have more (a one-row gemm may sum
      # otherwise: numpy's BLAS took decode's row 63 alone 1.6e-15 off).
      count = -(-n // chunk)
      bounds = np.linspace(0, n, count + 1).round().astype(int).tolist()
      parts, sources, programs, like = [], [], [], {}
      for start, stop in zip(bounds, bounds[1:]):
        args = self._rows(range(start, stop))
        leaves, source, program = executed_reference(
          self.case, args, like.get(stop - start)
        )
        like.setdefault(stop - start, program)
        parts.append(leaves)
        sources.append(source)
        programs.append(program)
      self._sources[n] = "; ".join(dict.fromkeys(sources))
      self._programs[n] = programs
      return self._joined(parts)

    return self._cache.get(n, make)

  def _chunk_rows(self, n: int) -> int:
    """Rows per float64 run at size n: all n, or for a rows_independent
    case whose batched arguments hold more than `CHUNK_BYTES`, as many as
    hold at most that (at least one)."""
    if not self.independent or self._full is None:
      return n
    total = sum(
      np.asarray(leaf).nbytes
      for arg, axis in zip(self._full, self.case.arg_axes(len(self._full)))
      if axis is not None
      for leaf in jax.tree_util.tree_leaves(arg)
    )
    per_row = total / max(1, self.case.full_size(self._full))
    if per_row * n <= CHUNK_BYTES:
      return n
    return max(1, int(CHUNK_BYTES // per_row))

  def _rows(self, rows: range) -> tuple:
    """The case's arguments at `rows` of its full inputs (each batched
    argument cut along its axis)."""
    index = np.arange(rows.start, rows.stop)
    return tuple(
      arg
      if axis is None
      else jax.tree_util.tree_map(
        lambda a, ax=axis: np.take(np.asarray(a), index, axis=ax), arg
      )
      for arg, axis in zip(self._full, self.case.arg_axes(len(self._full)))
    )

  def _joined(self, parts) -> tuple[np.ndarray, ...]:
    """Row chunks' leaves joined along each leaf's batch axis."""
    return tuple(
      np.concatenate(leaves, axis=axis)
      for leaves, axis in zip(zip(*parts), self.axes)
    )

  def _size(self, n: int) -> int:
    """The size whose computation serves size n (the largest, sliced, for
    a rows_independent case)."""
    return self._largest if self.independent and n <= self._largest else n

  def sliced(self, leaves, n: int) -> tuple[np.ndarray, ...]:
    """Leaves at the largest size cut to n along their batch axes (views,
    not copies)."""
    return tuple(
      x if axis is None else x[(slice(None),) * (axis % x.ndim) + (slice(n),)]
      for x, axis in zip(leaves, self.axes)
    )

  def _check_independent(self) -> None:
    if None in self.axes:
      raise CaseError(
        f"case {self.case.name!r} declares rows_independent but output "
        f"leaves {[n for n, a in zip(self.names, self.axes) if a is None]} "
        "have no batch axis"
      )
    small = self._compute(self._smallest)
    cut = self.sliced(self._compute(self._largest), self._smallest)
    for name, a, b in zip(self.names, small, cut):
      scale = float(np.max(np.abs(a), initial=0.0)) or 1.0
      diff = float(np.max(np.abs(a - b), initial=0.0)) / scale
      if diff > _INDEPENDENCE_RTOL:
        raise CaseError(
          f"case {self.case.name!r} declares rows_independent, but its "
          f"float64 output{' ' + name if name else ''} at size "
          f"{self._smallest} differs from the first {self._smallest} "
          f"elements at size {self._largest} by {diff:.2g} (relative); "
          "its batch elements depend on each other: drop rows_independent"
        )

  @property
  def independent(self) -> bool:
    return self.case.rows_independent

  @property
  def largest(self) -> int:
    return self._largest

  def at(self, n: int) -> tuple[np.ndarray, ...]:
    """The reference leaves at size n (f64 numpy arrays)."""
    if self._size(n) != n:
      return self.sliced(self._compute(self._largest), n)
    return self._compute(n)

  def source(self, n: int) -> str:
    """Where the reference at size n comes from: `EXECUTOR_SOURCE`, or
    "XLA:CPU float64 (not executed by the numpy executor: <why>)"."""
    if self._size(n) not in self._sources:
      self._compute(self._size(n))
    return self._sources[self._size(n)]

  def executed_f32(self, n: int) -> executed.Run:
    """The numpy executor's run of the program at size n with every gemm
    at F32_F32_F32 (products summed exactly, rounded once to f32; every
    other op in IEEE f32), cached; its outputs None where not executed.

    For a rows_independent case, run at the largest size and sliced: an
    exact sum rounded once does not depend on the other rows, so the
    slice is the run at size n.
    """
    size = self._size(n)

    def make():
      if size not in self._programs:
        self._compute(size)
      runs = [program.run(widen=False) for program in self._programs[size]]
      if len(runs) == 1:
        return runs[0]
      failed = next((r for r in runs if r.outputs is None), None)
      if failed is not None:
        return failed
      return executed.Run(self._joined([r.outputs for r in runs]))

    run = self._f32.get(size, make)
    if size == n or run.outputs is None:
      return run
    return executed.Run(self.sliced(run.outputs, n))
