"""An optimized module file executed as it stands: what the dumped module
computed, against the float64 reference of its unoptimized twin.

A module file given as a case that is an optimized module (an
`after_optimizations` dump, XLA's snapshot of the module as it ran) is
swept as its twin's program (`compile.module_case`); this adds what the
file itself computes: its HLO executed by the numpy executor
(`hloprobe.execute`: fusions, Triton gemm fusions, cuBLAS/cuBLASLt and
cuDNN calls, as the target would) on the case's inputs, each gemm at
F32_F32_F32 (a file holds no kernel whose PTX would say which algorithm
it ran, so none is assumed below f32), against the twin run by the same
executor in float64 (`widen`). A snapshot's recorded result is compared
with the executor's too: a difference beyond f32 rounding there means
the device ran the gemms at another algorithm than F32 (e.g. TF32), or
the executor computes an op otherwise than the device did.

Only the main process computes it (the commands ask, once per case).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import numpy as np

from hloprobe.compile import Case, optimized_module
from hloprobe.errors import first_line
from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

__all__ = ["module_made_notes"]


def module_made_notes(source: str, case: Case) -> tuple[str, ...]:
  """The sentences on what an optimized module file computed.

  Args:
    source: the case's words (--case); a path to an optimized module file
      for anything to be said.
    case: the case planned from it (its inputs are the file's).

  Returns:
    () for any other case; else one sentence with the maximum |error| vs
    float64 over every output element (and row 0's, where the case has
    rows), and one comparing a snapshot's recorded result; or one saying
    what was not executed.
  """
  optimized = optimized_module(source)
  if optimized is None:
    return ()
  what = f"{source} executed as it stands by the numpy executor"
  try:
    args = _arguments(case)
    made = execute_module(parse_hlo_module(optimized.file.hlo_text), args)
    text = optimized.twin_hlo_text()
    reference = execute_module(parse_hlo_module(text), args, widen=True)
  except Exception as e:  # one line instead of the module's numbers
    return (f"{what}: not executed: {first_line(e)}",)
  missing = made.not_executed or reference.not_executed
  if missing:
    names = ", ".join(sorted({n.target for n in missing}))
    return (f"{what}: not executed: {names}",)
  errors = [
    np.abs(_f64(m) - r) for m, r in zip(made.outputs, reference.outputs)
  ]
  worst = max(float(np.max(e, initial=0.0)) for e in errors)
  row0 = ""
  if case.fixed_size and errors[0].ndim:
    row0 = f", row 0 {float(np.max(errors[0][0], initial=0.0)):.3g}"
  notes = [
    f"{what} (each gemm at F32_F32_F32: a module file holds no kernel to "
    f"read its algorithm from): max |err| vs the float64 reference of "
    f"{optimized.twin} {worst:.3g}{row0}"
  ]
  if optimized.file.result is not None:
    diff = max(
      float(np.max(np.abs(_f64(m) - _f64(r)), initial=0.0))
      for m, r in zip(made.outputs, optimized.file.result)
    )
    notes.append(
      f"the snapshot's recorded result and the executor's differ by at "
      f"most {diff:.3g}"
    )
  return tuple(notes)


def _arguments(case: Case) -> tuple:
  """The case's arguments at its one size."""
  if case.swept_size is not None:
    return tuple(case.make_inputs(case.fixed_size or 1))
  return case.inputs_for(case.full_inputs(), case.fixed_size)


def _f64(x) -> np.ndarray:
  return np.asarray(x).astype(np.float64)
