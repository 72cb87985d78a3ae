"""A candidate fix and the requirements it is judged by, from words.

`parse_fix` and `parse_requirements` read `hloprobe verify`'s --fix and
--require; `fix_sweep` makes the one sweep that runs baseline and fix.

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hloprobe.compile import (
  BASELINE,
  INT32_DOTS_FIX,
  Case,
  Experiment,
)
from hloprobe.engine import SweepSpec
from hloprobe.errors import InvalidArgumentError, did_you_mean
from hloprobe.ir import PRECISION_ALIASES, Precision, as_precision
from hloprobe.records import ConfigResult

__all__ = [
  "BASELINE_FIX",
  "REQUIREMENTS",
  "Fix",
  "check_batch_sizes",
  "fix_sweep",
  "is_fix",
  "parse_fix",
  "parse_requirements",
]

REQUIREMENTS = ("consistent", "accurate", "golden", "invariant")


@dataclasses.dataclass(frozen=True, slots=True)
class Fix:
  """A candidate fix: a precision, an XLA_FLAGS experiment or a program
  change; or none of them, the baseline (`BASELINE_FIX`: `verify` without
  --fix judges the program as it is).

  Attributes:
    name: as the user wrote it (the experiment's name for experiments;
      `BASELINE_FIX.name` for the baseline).
    precision: the matmul precision the fix sets, or None.
    experiment: the experiment the fix runs, or None.
    program: the program change, `compile.INT32_DOTS_FIX.word`
      ("preferred_element_type=int32": every narrow integer dot keeps its
      sums in int32, `INT32_DOTS_FIX.fixed_case`), or None. Its configs are
      the cases named `NAME+preferred_element_type=int32`.
  """

  name: str
  precision: str | None = None
  experiment: Experiment | None = None
  program: str | None = None

  @property
  def baseline(self) -> bool:
    """No change at all: the baseline's own configs are judged."""
    return (
      self.precision is None
      and self.experiment is None
      and (self.program is None)
    )


# `verify` without --fix: the program as it is, at the sweep's precisions.
BASELINE_FIX = Fix("baseline")


def parse_fix(text: str) -> Fix:
  """A precision name, `preferred_element_type=int32` (the program
  change `Fix.program`), else a built-in experiment or `NAME:FLAGS`.

  Raises:
    InvalidArgumentError: neither a precision nor an experiment.
  """
  if text == INT32_DOTS_FIX.word:
    return Fix(text, program=text)
  try:
    as_precision(text)
  except InvalidArgumentError:
    pass
  else:
    return Fix(text, precision=text)
  try:
    experiment = Experiment.parse(text)
  except InvalidArgumentError as e:
    # The nearest precision ("tf32" -> "tensorfloat32"); `e` names the
    # nearest experiment.
    near = did_you_mean(text, [p.value for p in Precision], PRECISION_ALIASES)
    raise InvalidArgumentError(
      f"--fix={text!r} is neither a matmul precision nor an experiment: "
      f"{near}{e}"
    ) from e
  return Fix(experiment.name, experiment=experiment)


def parse_requirements(
  text: str, batch_sizes: Sequence[int] | None = None
) -> tuple[str, ...]:
  """`consistent,accurate[,golden]` into a tuple; unknown names rejected.

  An empty item (`consistent,,accurate`) is rejected as `--batch_sizes=1,,2`
  is; a name given twice counts once. With `batch_sizes` (those of the
  sweep they judge), "consistent" and "invariant" need two sizes or more
  (`check_batch_sizes`).

  Raises:
    InvalidArgumentError: an empty item, or a name not in `REQUIREMENTS`
      (the line lists them); "consistent" or "invariant" with fewer than
      two of `batch_sizes`.
  """
  names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
  if "" in names:
    raise InvalidArgumentError(
      f"--require={text!r} has an empty item; e.g. --require=consistent,accurate"
    )
  bad = [n for n in names if n not in REQUIREMENTS]
  if bad or not names:
    raise InvalidArgumentError(
      f"unknown requirement(s) {bad or [text]}; choose from "
      f"{', '.join(REQUIREMENTS)}, e.g. --require=consistent,accurate"
    )
  if batch_sizes is not None:
    check_batch_sizes(names, batch_sizes)
  return names


def check_batch_sizes(
  requirements: Sequence[str], batch_sizes: Sequence[int]
) -> None:
  """Rejects "consistent" with fewer than two batch sizes to compare.

  Raises:
    InvalidArgumentError: "consistent" is required and `batch_sizes` has one size.
  """
  if "invariant" in requirements and len(set(batch_sizes)) < 2:
    raise InvalidArgumentError(
      "--require=invariant compares rows' bits across batch sizes and needs "
      f"at least two; got --batch_sizes={','.join(map(str, batch_sizes))}; "
      "e.g. --batch_sizes=1,2,9, or --require=accurate"
    )
  if "consistent" in requirements and len(set(batch_sizes)) < 2:
    raise InvalidArgumentError(
      "--require=consistent compares row 0 across batch sizes and needs at "
      f"least two; got --batch_sizes={','.join(map(str, batch_sizes))}; "
      "e.g. --batch_sizes=1,2,9, or --require=accurate"
    )


# The requirements judged from the bits alone: every other one needs the
# accuracy numerics ("golden" too: its dots.json holds what XLA made).
_BITS_ONLY = ("invariant",)


def fix_sweep(
  spec: SweepSpec, fix: Fix, requirements: Sequence[str]
) -> SweepSpec:
  """The one sweep that runs the baseline and the fix (the baseline alone
  for `BASELINE_FIX`). With "invariant" the only requirement it sweeps the
  bits only (`SweepSpec.numerics` False, as `explain --only=invariance`):
  no float64 reference, noise floor or prediction is made."""
  spec = dataclasses.replace(
    spec,
    explain_passes="golden" in requirements,
    numerics=spec.numerics and any(r not in _BITS_ONLY for r in requirements),
  )
  if fix.baseline:
    return spec
  if fix.program is not None:
    fixed = tuple(map(_int32_dots, spec.cases))
    if isinstance(spec, SweepSpec) and spec.case_names:
      names = spec.case_names
      names += tuple(n + INT32_DOTS_FIX.case_suffix for n in names)
      return dataclasses.replace(
        spec, cases=spec.cases + fixed, case_names=names
      )
    return dataclasses.replace(spec, cases=spec.cases + fixed)
  if fix.experiment is not None:
    return dataclasses.replace(spec, experiments=(fix.experiment,))
  return dataclasses.replace(
    spec, precisions=tuple(dict.fromkeys(spec.precisions + (fix.precision,)))
  )


def _int32_dots(c):
  """A case word, `Case` or planned case with the int32-dots fix."""
  if isinstance(c, str):
    return c + INT32_DOTS_FIX.case_suffix
  if isinstance(c, Case):
    return INT32_DOTS_FIX.fixed_case(c)
  return dataclasses.replace(  # a `sweep.SweptCase`
    c,
    case=INT32_DOTS_FIX.fixed_case(c.case),
    source=c.source + INT32_DOTS_FIX.case_suffix,
  )


def is_fix(r: ConfigResult, fix: Fix) -> bool:
  """`r` is one of the fix's configs (its experiment, or its precision in
  the baseline; every baseline config for `BASELINE_FIX`)."""
  c = r.config
  if fix.baseline:
    return c.experiment == BASELINE.name
  if fix.program is not None:
    return INT32_DOTS_FIX.is_fixed(c.case) and c.experiment == BASELINE.name
  if fix.experiment is not None:
    return c.experiment == fix.experiment.name
  return c.precision == fix.precision and c.experiment == BASELINE.name
