"""A case's program computed by the numpy executor, not by XLA:CPU.

The program is lowered at one size (`Case.unoptimized_hlo`: trace and
lower, no compile, no XLA pass), parsed (`ir.parse_hlo_module`) and
computed by `hloprobe.execute.execute_module`: with `widen=True` every
float value in float64 and every gemm at F64_F64_F64 (the float64
reference, `reference`), or with every gemm at F32_F32_F32 (f32 operands,
the products summed exactly and rounded once to f32; every other op in
IEEE f32), the F32 run the noise floor is checked against (`floor_check`).

Why it cannot share a bug with the XLA:CPU compile of the program: no
XLA pass and no code generator touches these numbers. The module is
XLA's parse of jax's lowering, the input of every XLA compile, and the
executor's arithmetic is numpy's and ml_dtypes' (`hloprobe.execute`'s
docstring). A fusion, vectorisation or dot-emitter bug of XLA:CPU (jaxlib
0.10.2 computed 7232 of 40000 rows of a small vmapped program wrong, and
hloprobe's own F32 emulation, compiled by the same XLA:CPU, measured a
noise floor of 1e7) changes an XLA:CPU run, not this one. A bug of jax's
lowering is shared, by design: it is the program the user asked for.

What the executor cannot compute (a custom call such as a LAPACK call,
an op without a numpy model) is named: `Run.why_not` holds
"<target>, <target>" of its `NotExecuted` records, or the first line of
an error, and the caller falls back to XLA:CPU and says so. A program jax
cannot lower for the CPU at all (a GPU-only primitive: jax's cuDNN
attention registers a CUDA lowering only) has no module to execute; that
is named in one line by `why_not_lowered`, e.g. "GPU-only primitive
dot_product_attention_fwd has no CPU lowering for the executor's check".

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from hloprobe.compile import Case, missing_lowering
from hloprobe.errors import first_line
from hloprobe.execute import execute_module
from hloprobe.ir import HloModule, parse_hlo_module

__all__ = ["Program", "Run", "lower_program", "why_not_lowered"]


def why_not_lowered(error: BaseException) -> str:
  """Why a program could not be lowered for the executor, in one line.

  A primitive without a CPU lowering is named (`compile.missing_lowering`):
  "GPU-only primitive dot_product_attention_fwd has no CPU lowering for the
  executor's check". Any other error: its first line, with its type.
  """
  missing = missing_lowering(error)
  if missing is None:
    return first_line(error)
  return f"{missing} for the executor's check"


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
  """One execution of a program's module.

  Attributes:
    outputs: one numpy array per output leaf (float64 under widen, the
      leaf's own dtype otherwise), or None when not executed.
    why_not: None when executed; else what stopped it: the targets of the
      instructions not executed ("lapack_spotrf_ffi"), or an error's first
      line.
  """

  outputs: tuple[np.ndarray, ...] | None
  why_not: str | None = None


@dataclasses.dataclass(frozen=True)
class Program:
  """A case's program lowered at one size, with its flattened arguments.

  Attributes:
    module: the parsed unoptimized module, None when lowering or parsing
      failed.
    arguments: the argument leaves (`jax.tree_util.tree_leaves` order).
    shapes: each output leaf's shape, to check the executor's outputs.
    why_not: why there is no module (an error's first line), else None.
  """

  module: HloModule | None
  arguments: tuple[np.ndarray, ...]
  shapes: tuple[tuple[int, ...], ...]
  why_not: str | None = None

  def run(self, widen: bool) -> Run:
    """Executes the module: float64 (`widen`) or every gemm at F32."""
    if self.module is None:
      return Run(None, self.why_not)
    try:
      done = execute_module(self.module, self.arguments, widen=widen)
    except Exception as e:  # an argument the module does not take, ...
      return Run(None, first_line(e))
    if not done.complete:
      targets = dict.fromkeys(x.target for x in done.not_executed)
      return Run(None, ", ".join(targets))
    shapes = tuple(np.shape(o) for o in done.outputs)
    if shapes != self.shapes:
      return Run(
        None, f"outputs of shapes {shapes}, the program's are {self.shapes}"
      )
    return Run(tuple(np.asarray(o) for o in done.outputs))


def lower_program(case: Case, args: tuple) -> Program:
  """The program of `case` on `args` (one size), ready to execute.

  A failure to lower or parse is recorded in `Program.why_not`, not
  raised: the caller falls back to XLA:CPU and names it.
  """
  leaves = tuple(np.asarray(a) for a in jax.tree_util.tree_leaves(args))
  shapes = jax.tree_util.tree_leaves(jax.eval_shape(case.fn, *args))
  shapes = tuple(tuple(s.shape) for s in shapes)
  try:
    module = parse_hlo_module(case.unoptimized_hlo(args))
  except Exception as e:  # a GPU-only primitive, a module XLA cannot parse
    return Program(None, leaves, shapes, why_not_lowered(e))
  return Program(module, leaves, shapes)
