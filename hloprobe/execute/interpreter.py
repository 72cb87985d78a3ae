"""The walk over an HLO module: computations, instructions, control flow.

`Interpreter.run` evaluates the entry computation in the printed order of
its instructions (XLA prints a computation in a post order, or in its
schedule: operands first), a called computation (fusion, call, while,
conditional, a reducer) each time it is called. Every value is a numpy
array in logical order, a tuple of values, or `MISSING`: the value of an
instruction that could not be computed (its `NotExecuted` is recorded
once) and of everything computed from it, so one unknown op names itself
and the walk still meets and names the others.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

import numpy as np

from hloprobe.execute import contraction, ops
from hloprobe.execute.records import Execution, GemmCall, NotExecuted
from hloprobe.execute.values import MISSING, Unsupported, check_arguments
from hloprobe.ir import HloInstruction, HloModule

__all__ = [
  "Interpreter",
  "Scope",
  "execute_module",
]


# A while loop running longer than this is not executed (a runaway loop
# would hang a sweep).
_MAX_TRIP_COUNT = 1_000_000
# Fusion backend kinds whose dots are Triton gemms, and what a dot in them is.
_GEMM_FUSION_KINDS = {
  "__triton_gemm": ("triton gemm fusion", "rna"),
  "__triton_nested_gemm_fusion": ("triton gemm fusion", "rna"),
  "__cudnn$fusion": ("cudnn gemm fusion", "rne"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
  """Where an instruction runs.

  Attributes:
    fusions: the enclosing fusion instructions' names, outermost first.
    gemm_kind: what a dot here is (`GemmCall.kind`).
    tf32_mode: the TF32 rounding of a dot here ('rna' Triton, 'rne').
    vectorized: a scalar computation (a reducer) run on arrays: shapes
      are not checked against the HLO's.
  """

  fusions: tuple[str, ...] = ()
  gemm_kind: str = "dot"
  tf32_mode: str = "rna"
  vectorized: bool = False


class Interpreter:
  """Executes one module; holds the records of one execution."""

  def __init__(
    self,
    module: HloModule,
    algorithms: Mapping[str, str],
    default_algorithm: str,
    widen: bool,
  ):
    self.module = module
    self.algorithms = {
      name: contraction.preset_name(a) for name, a in algorithms.items()
    }
    self.default_algorithm = contraction.preset_name(default_algorithm)
    self.widen = widen
    self.not_executed: list[NotExecuted] = []
    self.gemms: list[GemmCall] = []
    self._not_run: set[tuple[str, str]] = set()
    self._recorded: set[tuple[str, str]] = set()
    self._dead: dict[str, dict[int, tuple[str, ...]]] = {}
    # One device's run of an SPMD-partitioned module (`spmd`): its
    # partition id and the collectives across the devices' runs.
    self.partition = 0
    self.collectives = None
    self.ops = ops.Ops(self)

  def run(self, arguments: Sequence) -> Execution:
    """Executes the entry computation on `arguments` (checked first)."""
    entry = self.module.entry
    check_arguments(entry.parameters(), arguments)
    # Held as given: each read of one makes its compute-type copy where
    # the type widens (`_Argument`), so a float64 run holds a parameter's
    # float64 copy only while an instruction reads it, not one of every
    # parameter for the whole run (issue 37: a 12-layer model's weights,
    # 0.7 GB).
    args = [_Argument(p, a) for p, a in _by_number(entry, arguments)]
    with np.errstate(all="ignore"):
      result = self._value(self.computation(entry.name, args, Scope()))
    outputs = None
    if not self.not_executed and result is not MISSING:
      outputs = tuple(_flatten(result))
    return Execution(
      outputs=outputs,
      not_executed=tuple(self.not_executed),
      gemms=tuple(self.gemms),
    )

  def computation(self, name: str, args: Sequence, scope: Scope):
    """The value of computation `name` called with `args` (its root's; an
    instruction not executed gives MISSING).

    Raises:
      Unsupported: the module has no computation `name`, or one of its
        instructions cannot be executed here (the interpreter records
        most such as not executed instead).
    """
    comp = self.module.computations.get(name)
    if comp is None:
      raise Unsupported(f"no computation {name}")
    env: dict[str, object] = {}
    dead = self._dead_after(comp)
    for i, inst in enumerate(comp.instructions):
      env[inst.name] = self._instruction(comp, inst, env, args, scope)
      for name in dead.get(i, ()):
        env.pop(name, None)  # no later instruction reads it: memory freed
    return env[comp.root.name]

  def _dead_after(self, comp) -> dict[int, tuple[str, ...]]:
    """Instruction index -> the values no instruction after it reads (the
    root's never), so that a computation holds only its live values
    (issue 27 item 18); made once per computation."""
    if comp.name not in self._dead:
      last = {inst.name: i for i, inst in enumerate(comp.instructions)}
      for i, inst in enumerate(comp.instructions):
        for name in inst.operands:
          if name in last:
            last[name] = max(last[name], i)
      last.pop(comp.root.name, None)
      found: dict[int, list[str]] = {}
      for name, i in last.items():
        found.setdefault(i, []).append(name)
      self._dead[comp.name] = {i: tuple(v) for i, v in found.items()}
    return self._dead[comp.name]

  def _instruction(self, comp, inst, env, args, scope):
    operands = []
    for name in inst.operands:
      if name not in env:
        return self._not_executed(
          comp, inst, inst.opcode, f"operand {name} is used before defined"
        )
      operands.append(self._value(env[name]))
    if any(v is MISSING for v in operands):
      return MISSING
    if inst.opcode == "parameter":
      number = inst.parameter_number
      if number is None or number >= len(args):
        return self._not_executed(comp, inst, "parameter", "no argument")
      return args[number]
    try:
      value = self.ops.evaluate(comp, inst, operands, scope)
    except Unsupported as e:
      return self._not_executed(
        comp, inst, e.target or ops.target_of(inst), e.reason
      )
    except (ValueError, IndexError, TypeError, KeyError, ArithmeticError) as e:
      # A malformed attribute or an operand of an unexpected shape: named,
      # never a crash.
      return self._not_executed(
        comp, inst, ops.target_of(inst), f"{type(e).__name__}: {e}"
      )
    if value is MISSING:
      return MISSING
    if not (scope.vectorized or _fits(inst, value)):
      return self._not_executed(
        comp,
        inst,
        ops.target_of(inst),
        f"computed shape {value.shape} is not the HLO's {inst.shape}",
      )
    return value

  def _value(self, value):
    """`value`, or an entry argument's in its parameter's compute type."""
    if isinstance(value, _Argument):
      return self.ops.argument(value.param, value.value)
    return value

  def _not_executed(self, comp, inst, target, reason):
    key = (comp.name, inst.name)
    if key not in self._not_run:
      self._not_run.add(key)
      self.not_executed.append(NotExecuted(inst.name, target, reason))
    return MISSING

  def algorithm_for(self, inst: HloInstruction, scope: Scope) -> str:
    """The preset a gemm runs at: the caller's for its name or an
    enclosing fusion's (innermost first), else the default; F64_F64_F64
    under widen."""
    if self.widen:
      return "F64_F64_F64"
    for name in (inst.name, *reversed(scope.fusions)):
      if name in self.algorithms:
        return self.algorithms[name]
    return self.default_algorithm

  def record_gemm(
    self,
    comp,
    inst: HloInstruction,
    kind: str,
    algorithm: str,
    scope: Scope,
    *,
    alpha: complex = 1,
    beta: float = 0.0,
    epilogue: str | None = None,
    has_bias: bool = False,
  ) -> None:
    """Adds a `GemmCall` the first time `inst` runs."""
    key = (comp.name, inst.name)
    if key in self._recorded:
      return
    self._recorded.add(key)
    self.gemms.append(
      GemmCall(
        instruction=inst.name,
        kind=kind,
        computation=comp.name,
        algorithm=algorithm,
        alpha=alpha,
        beta=beta,
        epilogue=epilogue,
        has_bias=has_bias,
        op_name=inst.metadata.get("op_name"),
        source_line=self._source_line(inst),
        fusions=scope.fusions,
      )
    )

  def _source_line(self, inst: HloInstruction) -> int | None:
    line = inst.metadata.get("source_line")
    if line is None:
      where = self.module.source_location(inst)
      line = where.rsplit(":", 1)[-1] if where else None
    if line is None or not re.fullmatch(r"[0-9]+", str(line)):
      return None
    return int(line)

  def fusion_scope(self, inst: HloInstruction, scope: Scope) -> Scope:
    """The scope inside fusion `inst`: a Triton or cuDNN gemm fusion's
    backend kind decides what its dots are."""
    config = inst.backend_config
    kind = (config.get("fusion_backend_config") or {}).get("kind")
    gemm_kind, tf32 = _GEMM_FUSION_KINDS.get(
      kind, (scope.gemm_kind, scope.tf32_mode)
    )
    return dataclasses.replace(
      scope,
      fusions=(*scope.fusions, inst.name),
      gemm_kind=gemm_kind,
      tf32_mode=tf32,
    )

  def while_loop(self, inst, state):
    """`while`: the body runs while the condition holds; MISSING where
    either could not run.

    Raises:
      Unsupported: no condition or body, or more than `_MAX_TRIP_COUNT`
        iterations.
    """
    cond, body = inst.attrs.get("condition"), inst.attrs.get("body")
    if not cond or not body:
      raise Unsupported("while without condition or body")
    cond, body = cond.lstrip("%"), body.lstrip("%")
    for _ in range(_MAX_TRIP_COUNT):
      go = self.computation(cond, [state], Scope())
      if go is MISSING:
        return MISSING
      if not bool(np.asarray(go).reshape(())):
        return state
      state = self.computation(body, [state], Scope())
      if state is MISSING:
        return MISSING
    raise Unsupported(f"more than {_MAX_TRIP_COUNT} iterations")


def execute_module(
  module: HloModule,
  arguments: Sequence[np.ndarray],
  *,
  algorithms: Mapping[str, str] | None = None,
  default_algorithm: str = "F32",
  widen: bool = False,
) -> Execution:
  """Computes `module`'s entry computation on `arguments` in numpy.

  Args:
    module: a parsed module (`hloprobe.ir.parse_hlo_module`).
    arguments: one array per entry parameter, in parameter order, of the
      parameter's shape and numpy dtype (bf16: `ml_dtypes.bfloat16`); a
      tuple-shaped parameter takes a tuple of them.
    algorithms: HLO instruction name -> `jax.lax.DotAlgorithmPreset` name
      (or an `ALGORITHM_ALIASES` key), for the gemms whose algorithm is
      known: the name of a dot, of a gemm custom call, or of a fusion that
      encloses a dot (a Triton gemm fusion). The innermost name given
      wins. The instruction's own operand_precision / algorithm attributes
      are not read: which algorithm a kernel really runs is the sites
      stage's finding, passed in here.
    default_algorithm: the preset of every other gemm; "F32" is
      F32_F32_F32 (f32 operands, sums made exact, one rounding).
    widen: compute every float value in float64 (converts to narrower
      floats and reduce-precision become no-ops, every gemm runs at
      F64_F64_F64); the outputs are then float64.

  Returns:
    The `Execution`: outputs (None when anything was not executed), the
    instructions not executed, and the gemms computed. TF32 rounds ties
    away from zero in Triton gemm fusions and plain dots, to even in
    cuBLAS calls (see `hloprobe.execute.rounding`).

  Raises:
    ExecutionError: a wrong number of arguments, an argument whose shape
      or dtype is not its parameter's, or an unknown algorithm name.
  """
  interp = Interpreter(module, algorithms or {}, default_algorithm, widen)
  return interp.run(arguments)


def _fits(inst: HloInstruction, value) -> bool:
  """Whether an array value has the dims of the instruction's shape (a
  check of the executor itself; tuples are checked element by element
  where their elements are computed)."""
  if inst.shape.is_tuple or not isinstance(value, np.ndarray):
    return True
  return tuple(value.shape) == tuple(inst.shape.dims)


class _Argument:
  """An entry argument as given, with its parameter: its compute-type copy
  is made by each instruction that reads it (`Interpreter._value`) and
  dropped after; widening is exact, so every copy is the same values. An
  argument already in its compute type is read as given, not copied."""

  __slots__ = ("param", "value")

  def __init__(self, param: HloInstruction, value):
    self.param, self.value = param, value


def _by_number(entry, arguments: Sequence):
  params = entry.parameters()
  return [(params[i], arguments[i]) for i in sorted(params)]


def _flatten(value):
  if isinstance(value, tuple):
    for v in value:
      yield from _flatten(v)
  else:
    yield value
