"""What decided a requirement, as records: the numbers, not sentences.

`verify.judge` and `verify.verify` return these in `Requirement.evidence`
and `Verification`; `report.verification` renders them as the lines
`hloprobe verify` prints and its JSON carries. Errors are absolute, in the
output's units (`_abs`), or relative (`_rel`); a row 0 is batch element 0
of the config's headline output leaf (`accuracy.headline_leaf`).

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from hloprobe.numerics import Made, Verdict, WorstRow
from hloprobe.records import Failure

__all__ = [
  "Evidence",
  "EvidenceKind",
  "ErrorBounds",
  "ErrorChange",
  "ErrorsJudged",
  "GoldenNote",
  "LeafErrors",
  "LeafRow",
  "LeafVerdict",
  "MathChanged",
  "NoiseLimits",
  "NotJudged",
  "Reason",
  "RowMoved",
  "Source",
  "Subject",
  "TooFewSizes",
]


class EvidenceKind(enum.Enum):
  """What an evidence record, or a part of one, is: the field readers
  (`report.verification`) dispatch on (`record.evidence_kind`), so that no other
  stage needs the record classes' names."""

  NOT_JUDGED = "not judged"
  TOO_FEW_SIZES = "too few sizes"
  ROW_MOVED = "row moved"
  ERRORS_JUDGED = "errors judged"
  MATH_CHANGED = "math changed"
  GOLDEN_NOTE = "golden note"
  ERROR_CHANGE = "error change"
  NOISE_LIMITS = "noise limits"
  ERROR_BOUNDS = "error bounds"
  LEAF_VERDICT = "leaf verdict"
  LEAF_ROW = "leaf row"
  LEAF_ERRORS = "leaf errors"


@dataclasses.dataclass(frozen=True, slots=True)
class Subject:
  """One config of the fix's sweep: target, case, batch size, precision."""

  target: str
  case: str
  n: int
  precision: str


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
  """Where the judged errors come from.

  Attributes:
    kind: "observed" (the target ran), "predicted" (emulated at the
      effective algorithms) or "n/a" (neither).
    tf32_optional_sites: for "predicted", the cuBLAS sites predicted at a
      TF32 they may not use (`SiteFate.tf32_optional`): the prediction is
      ambiguous there; () otherwise.
  """

  kind: str
  tf32_optional_sites: tuple[int, ...] = ()


class Reason(enum.Enum):
  """Why a config could not be judged."""

  NO_CONFIGS = "no configs of the fix to compare"
  NO_ROW0 = "no row 0 to compare"
  NO_BATCH_AXIS = "the output leaf has no batch axis"
  NO_BASE = "no row 0 of the leaf at the smallest n"
  NO_ERRORS = "no errors to judge"
  NOT_COMPILED = "does not compile"
  FAILED = "failed"


class Evidence:
  """What each record of `Requirement.evidence` is (besides the invariance
  answer and the plain lines a `versions` worker replies with): NotJudged,
  TooFewSizes, RowMoved, ErrorsJudged, MathChanged, GoldenNote or
  ErrorChange, told apart by its `evidence_kind` (an `Evidence.Kind`).

  The enums its records' fields hold are reached through it, so that a
  reader (`report.verification`) dispatches on them and reads the records
  by field without their classes' names:

  Attributes:
    Kind: `EvidenceKind`, what a record (or a part of one) is.
    Reason: `Reason`, why a config could not be judged (`NotJudged`).
  """

  __slots__ = ()
  Kind = EvidenceKind
  Reason = Reason


@dataclasses.dataclass(frozen=True, slots=True)
class NotJudged(Evidence):
  """A config that fails its requirement because nothing could be compared.

  Attributes:
    subject: the config (None for NO_CONFIGS).
    reason: why.
    leaf: the output leaf concerned ("" for a single array).
    source: for NO_BASE, the kind of row 0 looked for.
    base_n: for NO_BASE, the smallest batch size of the group.
    failure: for NOT_COMPILED and FAILED, the config's failure
      (`records.Failure`: for a compile XLA rejected, the sites and the
      pass or rule, and XLA's error; `hloprobe.report` words it); else
      None.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.NOT_JUDGED

  subject: Subject | None
  reason: Reason
  leaf: str = ""
  source: Source | None = None
  base_n: int | None = None
  failure: Failure | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TooFewSizes(Evidence):
  """A (target, case, precision) group with one batch size: "consistent"
  has nothing to compare it with."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.TOO_FEW_SIZES

  target: str
  case: str
  precision: str
  n: int


@dataclasses.dataclass(frozen=True, slots=True)
class RowMoved(Evidence):
  """ "consistent" for one config: how far row 0 moved from the group's
  smallest batch size.

  Attributes:
    subject: the config.
    leaf: the headline output leaf ("" for a single array).
    row0: row 0's first value here.
    base_row0: row 0's first value at `base_n`.
    base_n: the group's smallest batch size.
    moved_abs: max |row0(n) - row0(base_n)| over row 0's values.
    values: how many values row 0 has.
    source: observed or predicted.
    limit_abs: NOISE_FACTOR x the f32 noise floor of row 0.
    passed: moved_abs <= limit_abs.
    row0_size: how many values row 0 has where more than `values` (the
      first `values` were kept and compared); else 0.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.ROW_MOVED

  subject: Subject
  leaf: str
  row0: float
  base_row0: float
  base_n: int
  moved_abs: float
  values: int
  source: Source
  limit_abs: float
  passed: bool
  row0_size: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class NoiseLimits:
  """ "accurate"'s limits from the noise floor: NOISE_FACTOR x its row-0
  and whole-batch |err| (`accuracy.NoiseFloor`)."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.NOISE_LIMITS

  factor: float
  row0_abs: float
  max_abs: float


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorBounds:
  """ "accurate"'s limits from --abs_error_bound / --rel_error_bound (XLA's
  ErrorSpec: either bound suffices); None where not given."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.ERROR_BOUNDS

  abs_bound: float | None
  rel_bound: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class LeafVerdict:
  """An output leaf besides the headline whose verdict is not accurate."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.LEAF_VERDICT

  leaf: str
  verdict: Verdict


@dataclasses.dataclass(frozen=True, slots=True)
class LeafRow:
  """An output leaf besides the headline with a row beyond its own f32
  noise floor (`numerics.WorstRow`)."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.LEAF_ROW

  leaf: str
  worst: WorstRow


@dataclasses.dataclass(frozen=True, slots=True)
class LeafErrors:
  """An observed output leaf besides the headline outside the bounds."""

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.LEAF_ERRORS

  leaf: str
  max_abs: float
  max_rel: float


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorsJudged(Evidence):
  """ "accurate" for one config: its headline leaf's errors against float64.

  Attributes:
    subject: the config.
    leaf: the headline output leaf ("" for a single array).
    row0_abs, max_abs, max_rel: its errors (row 0 and the whole batch).
    source: observed or predicted.
    limits: what they were compared with.
    not_accurate: the other leaves that are not accurate.
    passed: the headline within limits and no other leaf inaccurate.
    worst_row: with noise limits, the headline's worst row
      (`numerics.WorstRow`: every row judged against its own f32 noise
      floor); a row beyond its band fails the config. None with bounds
      (max |err| bounds every row already) or where rows are not judged.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.ERRORS_JUDGED

  subject: Subject
  leaf: str
  row0_abs: float
  max_abs: float
  max_rel: float
  source: Source
  limits: NoiseLimits | ErrorBounds
  not_accurate: tuple[LeafVerdict | LeafRow | LeafErrors, ...]
  passed: bool
  worst_row: WorstRow | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MathChanged(Evidence):
  """ "accurate" fails a config whose optimized module, executed widened to
  float64, leaves the F32 band: XLA changed the math (`numerics.made`).

  Attributes:
    subject: the config.
    made: what XLA made (`numerics.Made`): its `changes` name the
      instructions (custom call target, backend_config fields, site,
      pass).
    deviation_abs: max |widened module - float64 reference|.
    bound_abs: the F32 band it left.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.MATH_CHANGED

  subject: Subject
  made: Made
  deviation_abs: float | None
  bound_abs: float | None
  passed: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenNote(Evidence):
  """One finding of "golden" (`golden.snapshot.check`).

  Attributes:
    kind: "site" (a dot site changed; `detail` is the golden change
      record), "missing" (a golden file; `detail` its name), "changed"
      (a file whose sites did not; `detail` its path), "failed" (`detail`
      the error) or "match" (`detail` the number of files compared).
    detail: see `kind`.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.GOLDEN_NOTE

  kind: str
  detail: object


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorChange(Evidence):
  """Row 0's |err| of a baseline config and of the fix's that replaces it.

  Attributes:
    words: "<target> <case> n=<n> <old precision> -> <fix>".
    old_abs, new_abs: row-0 |err| before and after.
    source: how the fix's was found.
  """

  evidence_kind: ClassVar[EvidenceKind] = EvidenceKind.ERROR_CHANGE

  words: str
  old_abs: float
  new_abs: float
  source: Source
