"""The notes a verdict or prediction carries about its sites, as records.

`site_notes` appends them to a leaf's verdict (`Verdict.notes`: sites
below their request, TF32 allowed not required, one site's note by kind,
an integer sum's overflow); `candidates.chosen_algorithms` and the
emulation cache give the prediction's own (`Prediction.notes`: sites
taken as F32, attention biases of another dtype). Each has a `note` class
attribute saying what it is; `hloprobe.report` words them (issue 36: words
only at the edge). Fields are site indices, algorithm names, fates and
dtype names.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from hloprobe.sites import Fate

__all__ = [
  "AttentionBias",
  "BelowRequest",
  "SharesAlone",
  "Shown",
  "SiteNote",
  "SiteNoteKind",
  "SumOverflow",
  "TakenAsF32",
  "Tf32Optional",
]


class Shown(enum.Enum):
  """How a verdict shows the sites below their request (`BelowRequest`)."""

  # The verdict is accurate from a run; the prediction shows the sites.
  PREDICTED = "predicted, not seen"
  # The verdict is accurate: the noise or the output's rounding hides them.
  HIDDEN = "hidden"
  # The verdict is not accurate: they are below the requested precision.
  BELOW = "below"


@dataclasses.dataclass(frozen=True, slots=True)
class BelowRequest:
  """Sites whose algorithm is below their request that no verdict names.

  Attributes:
    algorithms: (algorithm, site indices) per algorithm, first seen first
      (`verdicts.algorithm_groups`).
    shown: how the verdict shows them.
    output: for HIDDEN, the 16-bit output type whose rounding hides them
      ("bf16", "f16"); None: the f32 noise does.
  """

  algorithms: tuple[tuple[str, tuple[int, ...]], ...]
  shown: Shown
  output: str | None = None

  # What a verdict's note of this record is (`Verdict.notes`; report
  # words it).
  note: ClassVar[str] = "below request"


@dataclasses.dataclass(frozen=True, slots=True)
class Tf32Optional:
  """cuBLAS / cuDNN conv sites where TF32 is allowed, not required
  (`SiteFate.tf32_optional`).

  Attributes:
    kept: True: a run showed the library kept these sites in f32; False:
      a compile-only row 0 assumes TF32_TF32_F32 there, and the library
      may keep some in f32 (ambiguous).
    libraries: (fate, site indices) per library, first seen first.
  """

  kept: bool
  libraries: tuple[tuple[Fate, tuple[int, ...]], ...]

  note: ClassVar[str] = "tf32 optional"


class SiteNoteKind(enum.Enum):
  """What a `SiteNote` says about its sites."""

  # TF32 kernels with no cvt.rna.tf32.f32: emulated as `algorithm`.
  TF32_TRUNCATED = "tf32 truncated"
  # The site's carrier is ambiguous: emulated as F32.
  AMBIGUOUS = "ambiguous"
  # cuBLASLt FP8 fast accumulation: not modelled, predicted as F32.
  FP8_FAST_ACCUM = "fp8 fast accumulation"
  # `algorithm` (None: unknown) not emulated: emulated as F32.
  EMULATED_F32 = "emulated as F32"
  # Ran `algorithm` for the `declared` preset: dot strength reduction
  # made it a `fate` (multiply+reduce, multiply).
  STRENGTH_REDUCED = "strength reduced"
  # Ran `algorithm` for the `declared` preset: the target ignores it.
  PRESET_IGNORED = "preset ignored"
  # The optimized HLO contradicts the StableHLO (`detail`:
  # `SiteFate.conflict`).
  CONFLICT = "conflict"
  # XLA's fp8 cuBLASLt rewrite (`detail`: `SiteFate.fp8_rewrite`).
  FP8_REWRITE = "fp8 rewrite"


@dataclasses.dataclass(frozen=True, slots=True)
class SiteNote:
  """One note on one or more sites, by kind (`SiteNoteKind`).

  Attributes:
    kind: what it says.
    sites: the site indices, in order.
    algorithm: the site's effective algorithm (TF32_TRUNCATED: what they
      are emulated as); None where unknown or not needed.
    declared: the declared preset (STRENGTH_REDUCED, PRESET_IGNORED).
    fate: the site's fate (STRENGTH_REDUCED).
    detail: CONFLICT: the site's `PrecisionConflict`
      (`SiteFate.conflict`); FP8_REWRITE: the site's `Fp8Rewrite`
      (`SiteFate.fp8_rewrite`).
  """

  kind: SiteNoteKind
  sites: tuple[int, ...]
  algorithm: str | None = None
  declared: str | None = None
  fate: Fate | None = None
  detail: object = None

  note: ClassVar[str] = "site"


@dataclasses.dataclass(frozen=True, slots=True)
class SumOverflow:
  """Dot sites whose exact integer sum overflows their result type.

  Attributes:
    dtype: the output's integer type, HLO spelling ("s8").
    sites: (index, lhs dtype, rhs dtype, fate) per site of that result
      type, in order.
  """

  dtype: str
  sites: tuple[tuple[int, str, str, Fate], ...]

  note: ClassVar[str] = "sum overflow"


@dataclasses.dataclass(frozen=True, slots=True)
class TakenAsF32:
  """Sites whose algorithm the emulator does not model, emulated as
  F32_F32_F32 (`candidates.chosen_algorithms`).

  Attributes:
    sites: (site index, its effective algorithm or None for unknown), in
      order.
    fast_accum: the cuBLASLt FP8 fast-accumulation algorithm's name
      (`emulate_fp8.FP8_FAST_ACCUM_ALGORITHM`): a site at it is named as
      not modelled.
  """

  sites: tuple[tuple[int, str | None], ...]
  fast_accum: str

  note: ClassVar[str] = "taken as F32"


@dataclasses.dataclass(frozen=True, slots=True)
class AttentionBias:
  """cuDNN attention sites whose bias is of another dtype than q/k/v
  (`emulate_attention.bias_mismatch`): cuDNN reads it in its own type and
  adds it to the f32 scores, as the emulation does.

  Attributes:
    sites: (site index, the bias's dtype, q's dtype), in site order, e.g.
      (0, "float32", "bfloat16").
  """

  sites: tuple[tuple[int, str, str], ...]

  note: ClassVar[str] = "attention bias"


@dataclasses.dataclass(frozen=True, slots=True)
class SharesAlone:
  """A large program's per-site shares (`predict.SiteShare`) made from each
  non-F32 site alone: each site's run without it (every other site at its
  algorithm, that one at F32; `SiteShare.without_abs`) is not computed
  (issue 37). The shares, the top site and its share read the alone runs
  only; the without runs were written to results.json alone, and at 72
  sites (gpt2_12) were 72 of the 144 whole-program emulations.

  Attributes:
    sites: the non-F32 sites, each emulated alone at row 0 alone.
    program_sites: the program's dot sites; above `sites_above` the
      program is large.
    sites_above: `predict.SHARES_AT_ROW0_ABOVE`.
    inputs_bytes: the case's full inputs, bytes; at `from_bytes` or more
      the program is large.
    from_bytes: `predict.SHARES_AT_ROW0_FROM_BYTES`, bytes.
    groups: 0, or, where the program's non-F32 sites are more than
      `grouped_above`, how many groups of consecutive ones were each
      emulated together at row 0 (`candidates.consecutive_groups`): the
      shares are then the `sites` sites of the group of largest error,
      each alone; the other groups' sites have none.
    non_f32_sites: the program's non-F32 sites where grouped, else 0.
    grouped_above: `predict.SHARES_GROUPED_ABOVE` where grouped, else 0.
  """

  sites: int
  program_sites: int
  sites_above: int
  inputs_bytes: int
  from_bytes: int
  groups: int = 0
  non_f32_sites: int = 0
  grouped_above: int = 0

  note: ClassVar[str] = "shares alone"
