"""A case's numerics steps, made once per case and shared by its configs.

`CaseNumerics.of` makes the float64 references (`reference.References`),
the predictor (`predict.Predictor`), the made-checker (`made.MadeChecker`)
and the kernel rows (`kernel_sites.KernelRows`) of one case; the engine
applies them to each config of a sweep.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax

from hloprobe.compile import Case
from hloprobe.errors import CaseError, first_line
from hloprobe.numerics.emulation_cache import large_rows_whole
from hloprobe.numerics.kernel_sites import KernelRows
from hloprobe.numerics.made import MadeChecker
from hloprobe.numerics.predict import Predictor
from hloprobe.numerics.reference import References

__all__ = ["CaseNumerics"]


@dataclasses.dataclass(frozen=True, slots=True)
class CaseNumerics:
  """One case's numerics steps (see the module docstring).

  Attributes:
    references: the case's float64 references at the sweep's sizes
      (`References`), or None where they could not be made.
    lie: the case's own error (it lies about `rows_independent`), which
      fails every config at stage "reference"; else None.
    predictor: the case's `Predictor`, or None.
    why: why there is no predictor when `predictor` is None ("no float64
      reference: ...", "no predictor: ..."); else None.
    checker: the `MadeChecker` (what XLA made, executed), or None without
      references.
    kernels: the `KernelRows` (row 0 of bit-exact kernel models), or None
      without references.
  """

  references: References | None
  lie: CaseError | None
  predictor: Predictor | None
  why: str | None
  checker: MadeChecker | None
  kernels: KernelRows | None

  @classmethod
  def of(
    cls,
    case: Case,
    full: tuple | None,
    sizes: Sequence[int],
    all_rows: bool = False,
  ) -> CaseNumerics:
    """Makes a case's steps; a failure is recorded, not raised.

    Args:
      case: the case.
      full: its `full_inputs()` (None for a sized case).
      sizes: the sweep's batch sizes, in order (the predictor emulates a
        config's assignments at the sizes after it from one compile).
      all_rows: judge every row (--all_rows; `Predictor`).

    A case that lies about `rows_independent` is an error of the case
    (`lie`); any other failure leaves the numerics n/a, with its cause
    (`why`). Where the references fail and the case's function does not
    trace at some sizes (it raised while jax traced it there, as a
    reshape that fits some sizes only would), they are made again at the
    sizes that trace: those sizes' configs fail at "lower" anyway (the
    sweep's `errors.TraceError`), and a reference made at the largest size
    alone had left every size "no float64 reference".
    """
    try:
      refs = References(case, full, sizes)
      refs.at(refs.largest)  # made now, so a failure says why up front
    except CaseError as e:
      return cls(None, e, None, None, None, None)
    except Exception as e:  # configs still compile; numerics say n/a
      traced = _traced(case, full, sizes) if len(set(sizes)) > 1 else ()
      if traced and len(traced) < len(tuple(sizes)):
        return cls.of(case, full, traced, all_rows)
      why = f"no float64 reference: {first_line(e)}"
      return cls(None, None, None, why, None, None)
    try:
      predictor, why = Predictor(case, full, refs, sizes, all_rows), None
    except Exception as e:
      predictor, why = None, f"no predictor: {first_line(e)}"
    return cls(
      refs,
      None,
      predictor,
      why,
      MadeChecker(case, full, refs, all_rows),
      KernelRows(case, full, refs),
    )

  @staticmethod
  def large_program(case: Case, full: tuple | None) -> bool:
    """Whether `case` is a large program whose rows it declares
    independent (issue 37; `emulation_cache.large_rows_whole`): gpt2_1
    and gpt2_12, not decode nor any built-in case."""
    return large_rows_whole(case, full) is not None

  @staticmethod
  def worker_checker(
    case: Case, full: tuple | None, all_rows: bool = False
  ) -> MadeChecker:
    """A made-checker without references, for the worker that compiles a
    case's configs (issue 37: each config's executions of its optimized
    module are made there, `engine.CompileRequest.made`, and judged by
    `checker` in the case's process): `MadeChecker.runs` only, None for a
    partitioned module (its output shapes come from the references).

    Args:
      case, full, all_rows: as `of`'s.
    """
    return MadeChecker(case, full, None, all_rows)


def _traced(case: Case, full: tuple | None, sizes: Sequence[int]) -> tuple:
  """The sizes, in order, at which `case.fn` traces on its inputs
  (`jax.eval_shape`: no lowering, no compile)."""
  found = []
  for n in sizes:
    try:
      jax.eval_shape(case.fn, *case.inputs_for(full, n))
    except Exception:  # the function's own error, or inputs it lacks
      continue
    found.append(n)
  return tuple(found)
