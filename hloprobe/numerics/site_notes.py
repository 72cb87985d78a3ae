"""What a verdict must also say about the sites, whatever the numbers show.

A row's verdict (`accuracy.judge`) is judged on row 0's error, which the
output's own rounding or the f32 noise can hide. `annotate` appends, so that
no site escapes the report:

  * every site whose effective algorithm is below what it requested (a
    declared preset, or else exact arithmetic on its operand type: TF32 or
    BF16 operands for f32 data, 16-bit products or sums), where the verdict
    does not already name it ("TF32_TF32_F32 at sites [1] hidden by bf16
    output rounding");
  * every site the target ran above its declared preset: XLA:CPU computes
    f32 dots as F32 whatever the preset (`effective.cpu_algorithm`), so a
    CPU check of BF16_BF16_F32 proves nothing about a GPU; a site dot
    strength reduction made a multiply+reduce is named as such (the pass,
    not the target, left no gemm to honour the preset);
  * sites whose algorithm is unknown or ambiguous (emulated as F32), and
    optimized precision configs that contradict the StableHLO;
  * TF32 sites whose kernel truncates the operands (no cvt.rna.tf32.f32:
    `candidates.chosen_algorithms` emulates them as TF32_TRUNCATED_F32);
  * cuBLAS / cuBLASLt and cuDNN conv sites where TF32 is allowed, not
    required (`SiteFate.tf32_optional`): without a run, that row 0 assumes
    TF32 there and cuBLAS (or cuDNN) may keep some in f32 (ambiguous); with
    a run that an assignment keeping some in f32 explains, which ones the
    library kept;
  * an FP8 gemm site with cuBLASLt fast accumulation on
    (ANY_F8_ANY_F8_F32_FAST_ACCUM, `sites.fp8_rewrite`): "not modelled:
    cuBLASLt FP8 fast accumulation";
  * every GPU site with fp8 operands: whether XLA's fp8 cuBLASLt rewrite
    made it `__cublas$lt$matmul$f8` ("site 0: fp8 cuBLASLt rewrite did
    not fire: ...", `SiteFate.fp8_rewrite`).

The notes are records (`note_records`: site indices, algorithms, fates),
each with a `note` class attribute saying what it is; `hloprobe.report`
words them (issue 36: words only at the edge).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

from hloprobe.ir import ALGORITHMS
from hloprobe.numerics.accuracy import dtype_name
from hloprobe.numerics.bands import F32_UNIT, OPERAND_UNIT
from hloprobe.numerics.emulate_dot import TF32_TRUNCATED
from hloprobe.numerics.emulate_fp8 import (
  FP8_FAST_ACCUM_ALGORITHM,
  jaxpr_algorithm,
)
from hloprobe.numerics.integers import is_integer
from hloprobe.numerics.note_records import (
  BelowRequest,
  Shown,
  SiteNote,
  SiteNoteKind,
  SumOverflow,
  Tf32Optional,
)
from hloprobe.numerics.verdicts import Verdict, VerdictKind, algorithm_groups
from hloprobe.sites import (
  EXACT_INTEGER,
  Fate,
  SiteFate,
)

__all__ = [
  "F32",
  "TF32",
  "annotate",
  "below_request",
  "overflow_sites",
]

F32 = "F32_F32_F32"
# JAX's DotAlgorithmPreset name of TF32 products, f32 sums.
TF32 = "TF32_TF32_F32"
# Storage types that hold every value of an operand type exactly.
_HOLDS = {
  "f64": ("f64",),
  "f32": ("f32", "f64"),
  "bf16": ("bf16", "tf32", "f32", "f64"),
  "f16": ("f16", "tf32", "f32", "f64"),
}
_SIXTEEN_BIT_OUTPUTS = {"bfloat16": "bf16", "float16": "f16"}


def below_request(f: SiteFate, algorithm: str) -> bool:
  """Whether `algorithm` at site `f` computes less precisely than it asked.

  The request is the site's declared preset, if any; otherwise exact
  products of its operand type summed in f32 or wider.
  """
  if f.algorithm in OPERAND_UNIT and algorithm in OPERAND_UNIT:
    return OPERAND_UNIT[algorithm] > OPERAND_UNIT[f.algorithm]
  if "_PRODUCTS_" in algorithm:
    return True
  alg = ALGORITHMS.get(algorithm)
  if alg is None:
    return False
  if alg.accumulation in ("bf16", "f16"):
    return True
  if alg.passes > 1:
    return OPERAND_UNIT[algorithm] > F32_UNIT
  return alg.lhs not in _HOLDS.get(f.site.lhs.dtype, (alg.lhs,))


def _ignored(f: SiteFate) -> bool:
  """A declared preset the target ran more precisely than declared."""
  alg, declared = f.effective_algorithm, f.algorithm
  return (
    alg in OPERAND_UNIT
    and declared in OPERAND_UNIT
    and OPERAND_UNIT[alg] < OPERAND_UNIT[declared]
  )


def _ignored_note(f: SiteFate) -> SiteNote:
  """Why a site ran above its declared preset, by who dropped it.

  A strength-reduced site (multiply+reduce, multiply: the GPU's
  dot-strength-reduction pass, or algsimp on the CPU) has no gemm left to
  honour the preset: its kernel's own products decide (read from its PTX on
  a GPU), whatever the target's gemms would do, so the note names the pass,
  not the target (STRENGTH_REDUCED). Otherwise the target's dot ignores the
  preset (PRESET_IGNORED): XLA:CPU computes f32 dots as F32
  (`effective.cpu_algorithm`), and a CPU check of a preset says nothing
  about a GPU.
  """
  reduced = f.fate in (Fate.MULTIPLY_REDUCE, Fate.MULTIPLY)
  return SiteNote(
    SiteNoteKind.STRENGTH_REDUCED if reduced else SiteNoteKind.PRESET_IGNORED,
    (f.site.index,),
    f.effective_algorithm,
    f.algorithm,
    f.fate if reduced else None,
  )


def _names(verdict: Verdict, alg: str) -> bool:
  """Whether `verdict` names `alg` (as a part of an algorithm it names, as
  the words' "explained by BF16_BF16_F32_X3" name BF16_BF16_F32)."""
  return any(alg in name for name in verdict.algorithm_names)


def _below(
  fates,
  chosen,
  verdict: Verdict,
  output_dtype,
  hidden: bool,
  elsewhere: tuple[Verdict, ...] = (),
) -> BelowRequest | None:
  """The sites below their request that no verdict (this one, or another
  leaf's, `elsewhere`) names; None where there are none."""
  below = tuple(
    alg
    if below_request(f, alg)
    and not any(_names(v, alg) for v in (verdict, *elsewhere))
    else F32
    for f, alg in zip(fates, chosen)
  )
  groups = algorithm_groups(below)
  if not groups:
    return None
  if not verdict.accurate:  # not f32 noise, not output rounding
    return BelowRequest(groups, Shown.BELOW)
  if not hidden:  # the prediction shows them; the run does not
    return BelowRequest(groups, Shown.PREDICTED)
  output = _SIXTEEN_BIT_OUTPUTS.get(output_dtype or "")
  return BelowRequest(groups, Shown.HIDDEN, output)


def _libraries(fates, sites) -> tuple[tuple[Fate, tuple[int, ...]], ...]:
  """(library fate, its sites) for the given sites, first seen first."""
  groups: dict[Fate, list[int]] = {}
  for i in sites:
    groups.setdefault(fates[i].fate, []).append(i)
  return tuple((lib, tuple(ids)) for lib, ids in groups.items())


def _tf32_optional(fates, chosen, observed: bool) -> Tf32Optional | None:
  """The note on cuBLAS and cuDNN conv sites where TF32 is allowed, not
  required; None where there is nothing to say."""
  optional = [i for i, f in enumerate(fates) if f.tf32_optional]
  kept = _libraries(fates, [i for i in optional if chosen[i] == F32])
  if observed and kept:
    return Tf32Optional(True, kept)
  assumed = _libraries(fates, [i for i in optional if chosen[i] == TF32])
  if observed or not assumed:
    return None
  return Tf32Optional(False, assumed)


def overflow_sites(verdict: Verdict, fates, output_dtype: str) -> Verdict:
  """An integer leaf's verdict with the dot sites that overflow named.

  An integer output overflows where a sum does not fit its type; the dot
  sites whose result is of that very type (e.g. s8 x s8 -> s8) are where
  the exact sum is wrapped. Appended to an "overflow" or "unexplained"
  verdict (`integers.integer_judgement`) as a `SumOverflow` note (in
  words: "the exact sum overflows s8 at site 1 (s8 x s8 -> s8 dot)");
  other verdicts, and an overflow no dot site's type explains (a convert
  after the dot, say), come back as they are.
  """
  if not is_integer(output_dtype) or verdict.kind not in (
    VerdictKind.OVERFLOW,
    VerdictKind.UNEXPLAINED,
  ):
    return verdict
  kind = dtype_name(output_dtype)
  found = tuple(
    (f.site.index, f.site.lhs.dtype, f.site.rhs.dtype, f.fate)
    for f in fates
    if f.effective_algorithm == EXACT_INTEGER and f.site.result.dtype == kind
  )
  if not found:
    return verdict
  return verdict.noted(SumOverflow(kind, found))


def annotate(
  verdict: Verdict,
  fates: tuple[SiteFate, ...],
  chosen: tuple[str, ...],
  output_dtype: str | None,
  hidden: bool = True,
  observed: bool = True,
  named_elsewhere: tuple[Verdict, ...] = (),
) -> Verdict:
  """The verdict with the site notes of the module docstring appended.

  Args:
    verdict: `accuracy.judge`'s verdict.
    fates: the config's sites.
    chosen: the algorithm emulated at each site; a TF32-optional cuBLAS
      site (`SiteFate.tf32_optional`) at F32 here is one a run showed
      cuBLAS kept in f32.
    output_dtype: numpy name of the output's dtype, e.g. "bfloat16".
    hidden: whether the prediction itself is within the noise floor (else
      an "exact" or "within f32 noise" verdict comes from a run that did
      not show what the prediction does).
    observed: whether the verdict judges a real run (False: a compile-only
      prediction).
    named_elsewhere: the other output leaves' verdicts: a site below its
      request that one of them names is not noted again here.
  """
  notes = [
    _below(fates, chosen, verdict, output_dtype, hidden, named_elsewhere),
    _tf32_optional(fates, chosen, observed),
  ]
  truncated = tuple(i for i, a in enumerate(chosen) if a == TF32_TRUNCATED)
  if truncated:  # review finding 12: not rounded to nearest
    notes.append(
      SiteNote(SiteNoteKind.TF32_TRUNCATED, truncated, TF32_TRUNCATED)
    )
  for f in fates:
    i, alg = f.site.index, f.effective_algorithm
    if chosen[i] == TF32_TRUNCATED:
      pass  # noted above
    elif f.fate == Fate.AMBIGUOUS:
      notes.append(SiteNote(SiteNoteKind.AMBIGUOUS, (i,)))
    elif alg == EXACT_INTEGER:
      pass  # computed exactly by the emulator, as on the target
    elif alg == FP8_FAST_ACCUM_ALGORITHM:
      notes.append(SiteNote(SiteNoteKind.FP8_FAST_ACCUM, (i,), alg))
    elif (
      f.fate != Fate.GONE
      and chosen[i] != jaxpr_algorithm(alg)
      and not f.tf32_optional
    ):
      notes.append(SiteNote(SiteNoteKind.EMULATED_F32, (i,), alg))
    if _ignored(f):
      notes.append(_ignored_note(f))
    if f.conflict:
      notes.append(SiteNote(SiteNoteKind.CONFLICT, (i,), detail=f.conflict))
    if f.fp8_rewrite:
      notes.append(
        SiteNote(SiteNoteKind.FP8_REWRITE, (i,), detail=f.fp8_rewrite)
      )
  return verdict.noted(*notes)
