"""What each StableHLO dot site became in the optimized HLO.

A dot site is one `stablehlo.dot_general` on one call path
(`stablehlo.StableHloDot`). XLA renames, fuses and rewrites dots, so each
site is found again (`identify`): by data flow (the dot, gemm custom call or,
for dot strength reduction, multiply whose two operands depend on the same
entry parameters, `operand_ancestry.find_carriers`), shape and K, source
stack (the metadata XLA keeps) and precision config. A site those cannot
tell between differing instructions is "ambiguous", not guessed.

Fates, checked on jaxlib 0.10.2 and 0.12.0.1 (see `_classify`; 0.12 puts
the CPU's f32 dots at n >= 2 in a `__ynn_fusion`):
  dot              kept as an HLO `dot` (CPU runtime call, YNNPACK fusion or
                   a loop fusion on GPU: the classical emitter)
  Triton gemm      a dot inside a `__triton_gemm` /
                   `__triton_nested_gemm_fusion` fusion (GPU); a dot in
                   another Triton kind (the generic `__triton`) is unknown
  cuBLAS/cuBLASLt  `__cublas$gemm` / `__cublas$lt$matmul` custom calls
  cuDNN            a dot inside a `__cudnn$fusion`
  multiply+reduce  rewritten by XLA's dot strength reduction
                   (AlgebraicSimplifier / `dot-strength-reduction`)
  multiply         K = 1: the dot became an elementwise multiply
  gone             nothing in the optimized HLO computes it
  unknown          a site whose operands a dot reads, one inside a
                   concatenate none of whose parts fits it (a merged dot
                   not split back: `identify`); a dot in a Triton fusion
                   that is not a gemm kind (the
                   generic `__triton`); under a jaxlib other than the checked
                   one also a dot in an emitter not listed in
                   `_KNOWN_DOT_EMITTERS`, or no carrier while the module has
                   custom calls hloprobe does not know
  ambiguous        several differing instructions fit it equally well

A site in a dot that XLA's `dot-merger` made of several sites has that
dot's fate (e.g. "Triton gemm"), and `merged_with` names the other sites it
computes (`merge_words`: "merged by dot-merger with site 1"); checked on
jaxlib 0.10.2 and 0.12.0.1 (`identify`'s docstring).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math

from hloprobe.compile import compat
from hloprobe.ir.hlo import HloInstruction, HloModule
from hloprobe.ir.stablehlo import StableHloDot
from hloprobe.sites import identify
from hloprobe.sites.operand_ancestry import (
  GEMM_CUSTOM_CALLS,
  Carrier,
  backend_config_kind,
  custom_call_target,
  kernel_emitter,
)

__all__ = [
  "EMITTER_KEYS",
  "Fate",
  "SiteFate",
  "emitter_name",
  "fate_summary",
  "is_triton_gemm",
  "map_dot_sites",
  "merge_words",
  "site_record",
]

# The three names XLA prints for what emits a site, most specific first:
# the custom call's target, the fusion's backend config kind, its `kind=`.
EMITTER_KEYS = ("custom_call_target", "backend_config_kind", "fusion_kind")
# The fusion kinds XLA reserves for gemms (xla/service/gpu/ir_emission_utils.h:
# kTritonGemmFusionKind, emitted by the legacy matmul emitter, and
# kTritonNestedGemmFusionKind, "a dot expressed as nested fusions").
_TRITON_GEMM_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion")
# kTritonFusionKind, "__triton", is XLA's generic Triton fusion
# (ir_emission_utils.cc `IsGenericTritonFusion`; softmax-like block-level
# fusions): XLA does not call it a gemm, and no dot in one was seen on
# jaxlib 0.10.2, so a dot inside it (or in any other "__triton..." kind) is
# "unknown", never a guessed Triton gemm or plain dot.
_TRITON_PREFIX = "__triton"
# Emitters of a kept dot seen on jaxlib 0.10.2 and 0.12.0.1 (goldens;
# passes.py). A dot
# in a call, while or conditional body outside any fusion is "top level":
# only fusions and custom calls name an emitter (`_emitter_names`).
_KNOWN_DOT_EMITTERS = (
  "top level",
  "kLoop",
  "kInput",
  "kOutput",
  "__ynn_fusion",
)


class Fate(str, enum.Enum):
  """What a dot site became; values are the words reports use."""

  DOT = "dot"
  TRITON_GEMM = "Triton gemm"
  CUBLAS = "cuBLAS"
  CUBLASLT = "cuBLASLt"
  CUDNN = "cuDNN"
  MULTIPLY_REDUCE = "multiply+reduce"
  MULTIPLY = "multiply"
  GONE = "gone"
  UNKNOWN = "unknown"
  AMBIGUOUS = "ambiguous"


@dataclasses.dataclass(frozen=True, slots=True)
class SiteFate:
  """One dot site and what it became (its `Fate` and how it is computed).

  Attributes:
    site: the StableHLO dot site.
    fate: what it became.
    fusion_kind: the `kind=` XLA prints on the outermost fusion around
      the site's instruction (kLoop, kInput, kOutput, kCustom), or None.
    backend_config_kind: that fusion's backend config kind
      (`fusion_backend_config.kind` on GPU, `fusion_config.kind` on CPU),
      e.g. "__triton_nested_gemm_fusion", "__cudnn$fusion",
      "__ynn_fusion"; None when not printed.
    custom_call_target: the gemm custom call's target, e.g.
      "__cublas$lt$matmul", when a custom call computes the site; else
      None.
    carriers: optimized-HLO instruction names that compute it, outermost
      first (e.g. ("gemm_fusion_dot.1", "dot.5")).
    precision_config: operand_precision in the optimized HLO, e.g.
      "high,high"; "default" when not printed.
    algorithm: the declared algorithm as a preset name, or None.
    split_k: the split-K factor of a gemm, or None when not split.
    gemm_config: the tile config / cuBLAS backend_config, or None.
    effective_algorithm: the preset the site's arithmetic really is, e.g.
      "TF32_TF32_F32" under DEFAULT in a Triton gemm; None until
      `effective.resolve` fills it, or when it cannot be settled.
    algorithm_source: "ptx" (read from the kernel) or "rule" (library
      call or CPU, see `effective`); None when not settled.
    algorithm_evidence: one line on why, e.g. the kernel's mma opcodes.
    selection: who chose the fate: XLA's heuristic on compile-only targets
      (no autotuning), autotuning on an attached GPU; None on CPU.
    mapping: how the carrier was identified: "source location" (its
      metadata's source stack is the site's) or "data flow"; None when gone
      or ambiguous.
    candidates: for an ambiguous site, the paths of the tied carriers; for
      an unknown one not split back from a merged dot, that dot's paths.
    conflict: where the optimized HLO contradicts the StableHLO about the
      site, e.g. "optimized precision config highest,highest, StableHLO
      DEFAULT,DEFAULT"; else None.
    merged_with: for a site computed by a dot XLA's dot-merger made of
      several, the indices of the other sites that dot computes (() when
      no other site was found in it); None when not merged.
  """

  site: StableHloDot
  fate: Fate
  fusion_kind: str | None
  backend_config_kind: str | None
  custom_call_target: str | None
  carriers: tuple[str, ...]
  precision_config: str
  algorithm: str | None
  split_k: int | None
  gemm_config: dict | None
  effective_algorithm: str | None = None
  algorithm_source: str | None = None
  algorithm_evidence: str | None = None
  selection: str | None = None
  mapping: str | None = None
  candidates: tuple[tuple[str, ...], ...] = ()
  conflict: str | None = None
  merged_with: tuple[int, ...] | None = None

  @property
  def emitter(self) -> str | None:
    """The most specific of the three names (`emitter_name`), for reports."""
    return emitter_name(
      self.fate.value,
      (self.custom_call_target, self.backend_config_kind, self.fusion_kind),
    )


def emitter_name(fate: str, names) -> str | None:
  """What a report calls a site's emitter: the most specific name XLA prints.

  Args:
    fate: the site's `Fate` value.
    names: its custom-call target, backend config kind and fusion kind
      (`EMITTER_KEYS` order), each str or None.

  Returns:
    The first name given; else "top level" for a site an instruction
    outside any fusion or custom call computes, None for a site nothing
    computes (gone, ambiguous, unknown).
  """
  named = next((n for n in names if n), None)
  if named or fate in (Fate.GONE, Fate.AMBIGUOUS, Fate.UNKNOWN):
    return named
  return "top level"


def map_dot_sites(
  sites: list[StableHloDot], module: HloModule
) -> list[SiteFate]:
  """Finds what each StableHLO dot site became in an optimized module.

  Args:
    sites: dot sites of the StableHLO module the optimized module came from
      (entry parameters must correspond one to one).
    module: the parsed optimized HLO.

  Returns:
    One `SiteFate` per site, in site order: `Fate.GONE` where no carrier
    has the site's data flow, `Fate.AMBIGUOUS` where differing carriers tie
    (`identify`).
  """
  matches = identify.match_sites(sites, module)
  fates = []
  for site, match in zip(sites, matches):
    if match.candidates:
      fates.append(_ambiguous(site, match.candidates))
    elif match.unsplit:
      fates.append(_unsplit(site, match.unsplit))
    elif match.carrier is None:
      fates.append(_gone(site, _unknown_calls(module)))
    else:
      fate = _classify(site, match.carrier)
      fates.append(
        dataclasses.replace(
          fate,
          mapping=match.how,
          conflict=_conflict(site, match.carrier),
          merged_with=_merged_with(site, match, sites, matches),
        )
      )
  return fates


def _merged_with(site, match, sites, matches) -> tuple[int, ...] | None:
  """The other sites a merged carrier computes; None when not merged."""
  if not match.merged:
    return None
  return tuple(
    other.index
    for other, m in zip(sites, matches)
    if m.merged and m.carrier is match.carrier and other is not site
  )


def merge_words(f: SiteFate, group: bool = False) -> str | None:
  """E.g. "merged by dot-merger with sites 1, 2"; None when not merged.

  With `group`, the same words for every site of one merged dot, e.g.
  "sites 0, 1, 2 merged by dot-merger", so that reports can group them.
  """
  if f.merged_with is None:
    return None
  if not f.merged_with:
    return "merged by dot-merger"
  if group:
    every = sorted((f.site.index, *f.merged_with))
    return f"sites {', '.join(map(str, every))} merged by dot-merger"
  plural = "s" if len(f.merged_with) > 1 else ""
  return (
    f"merged by dot-merger with site{plural} "
    f"{', '.join(map(str, f.merged_with))}"
  )


def _unsplit(site: StableHloDot, carriers) -> SiteFate:
  """A site whose operands only a merged-looking carrier reads, unfitted."""
  names = ", ".join(c.instruction.name for c in carriers)
  return dataclasses.replace(
    _gone(site),
    fate=Fate.UNKNOWN,
    candidates=tuple(c.path for c in carriers),
    algorithm_evidence=(
      f"unknown: {names} read the site's operands, one inside a "
      "concatenate (dot-merger?) none of whose parts fits the site's "
      "shape; not split back to it"
    ),
  )


def _conflict(site: StableHloDot, carrier: Carrier) -> str | None:
  """The optimized operand_precision where it is not the site's, in words."""
  precision = identify.hlo_precision(carrier.instruction)[0]
  if precision is None or precision == identify.site_precision(site):
    return None
  return (
    f"optimized precision config {precision} contradicts StableHLO "
    f"{','.join(site.precision)}"
  )


def _ambiguous(site: StableHloDot, candidates) -> SiteFate:
  return dataclasses.replace(
    _gone(site),
    fate=Fate.AMBIGUOUS,
    candidates=tuple(c.path for c in candidates),
  )


def _unknown_calls(module: HloModule) -> bool:
  """Under an unchecked jaxlib: custom calls whose targets are not known."""
  if compat.rules_checked():
    return False
  return any(
    inst.opcode == "custom-call"
    and custom_call_target(inst) not in GEMM_CUSTOM_CALLS
    for _, inst in module.all_instructions()
  )


def _gone(site: StableHloDot, unknown: bool = False) -> SiteFate:
  return SiteFate(
    site,
    Fate.UNKNOWN if unknown else Fate.GONE,
    None,
    None,
    None,
    (),
    identify.site_precision(site),
    identify.site_algorithm(site),
    None,
    None,
  )


def _classify(site: StableHloDot, carrier: Carrier) -> SiteFate:
  """Names the fate of a site from the instruction that computes it.

  Rules (jaxlib 0.10.2 and 0.12.0.1): a custom call is named by its target; a dot is a
  Triton gemm when its outermost enclosing fusion's
  `fusion_backend_config.kind` is a Triton gemm kind (`_TRITON_GEMM_KINDS`),
  unknown in any other Triton kind (`__triton`), cuDNN for `__cudnn$fusion`,
  and a plain dot otherwise; a multiply is dot strength reduction's output.
  """
  inst = carrier.instruction
  outer = carrier.kernel
  names = _emitter_names(inst, outer)
  emitter = emitter_name(Fate.DOT, names.values())
  config = None
  if inst.opcode == "custom-call":
    fate = Fate(GEMM_CUSTOM_CALLS[names["custom_call_target"]])
    config = inst.backend_config
  elif inst.opcode == "multiply":
    fate = Fate.MULTIPLY if site.contracting_size == 1 else Fate.MULTIPLY_REDUCE
  elif is_triton_gemm(outer):
    fate, config = (
      Fate.TRITON_GEMM,
      outer.backend_config.get("fusion_backend_config"),
    )
  elif names["backend_config_kind"] == "__cudnn$fusion":
    fate = Fate.CUDNN
  elif (names["backend_config_kind"] or "").startswith(_TRITON_PREFIX):
    fate = Fate.UNKNOWN
  elif emitter in _KNOWN_DOT_EMITTERS or compat.rules_checked():
    fate = Fate.DOT
  else:
    fate = Fate.UNKNOWN
  precision, algorithm = identify.hlo_precision(inst)
  return SiteFate(
    site=site,
    fate=fate,
    **names,
    carriers=carrier.path,
    precision_config=precision or identify.site_precision(site),
    algorithm=algorithm or identify.site_algorithm(site),
    split_k=_split_k(site, inst, config)
    if fate in (Fate.TRITON_GEMM, Fate.DOT)
    else None,
    gemm_config=config,
  )


def _emitter_names(
  inst: HloInstruction, kernel: HloInstruction | None
) -> dict[str, str | None]:
  """`EMITTER_KEYS` -> the names XLA prints for a site's instruction.

  The custom-call target is the instruction's when it is a custom call,
  else its kernel's; the kinds are those of the kernel when it is a fusion.
  """
  call = inst if inst.opcode == "custom-call" else kernel
  fusion = kernel if kernel is not None and kernel.opcode == "fusion" else None
  return {
    "custom_call_target": custom_call_target(call)
    if call is not None and call.opcode == "custom-call"
    else None,
    "backend_config_kind": backend_config_kind(fusion) if fusion else None,
    "fusion_kind": fusion.attrs.get("kind") if fusion else None,
  }


def is_triton_gemm(kernel: HloInstruction | None) -> bool:
  """Whether a fusion is a Triton gemm kernel (`_TRITON_GEMM_KINDS`).

  A generic `__triton` fusion is not one (see `_TRITON_GEMM_KINDS`).
  """
  return kernel is not None and kernel_emitter(kernel) in _TRITON_GEMM_KINDS


def _split_k(
  site: StableHloDot, inst: HloInstruction, config: dict | None
) -> int | None:
  """The split-K factor of a Triton gemm's or plain dot's dot, or None.

  `__triton_gemm` fusions of old XLA state it (`triton_gemm_config.split_k`,
  removed from TritonGemmConfig in XLA 47edd34a, 2026-04-22).
  `__triton_nested_gemm_fusion`s do not (their `block_level_fusion_config`
  has no split_k; jaxlib 0.10.2 and 0.12.0.1): split-K is XLA's HLO pass
  `splitk-rewriter` (xla/backends/gpu/transforms/splitk_rewriter.cc, on by
  default since abb3f8f7, 2026-04-08), which splits K "forming a new batch
  dimension" and reduces the dot's result along it. The new batch dimension,
  of size split_k, comes after the site's own batch dimensions (so it is the
  dot's output dimension len(batch): f32[4,116,128] with no batch,
  f32[2,4,116,128] with one; f32[4,8,8] for [8,8192]x[8192,8] under
  `xla_gpu_experimental_force_split_k=4`, checked on jaxlib 0.10.2 and
  0.12.0.1), and a reduce adds the partial sums. Between `splitk-rewriter`
  and `triton-gemm-rewriter` the split dot is a plain top-level dot, hence
  plain dots are read too. It is recognised by one extra batch dimension and
  an output of split_k times the site's elements: compared by element count,
  since XLA flattens the free dimensions (f32[16,32,64] becomes
  f32[4,512,64]).
  """
  tgc = (config or {}).get("triton_gemm_config") or {}
  if int(tgc.get("split_k", 1)) > 1:
    return int(tgc["split_k"])
  if inst.opcode != "dot":
    return None
  if len(inst.dims_attr("lhs_batch_dims")) != len(site.lhs_batch) + 1:
    return None
  dims, at = inst.shape.dims, len(site.lhs_batch)
  if len(dims) <= at or dims[at] < 2:
    return None
  if math.prod(dims) != dims[at] * math.prod(site.result.dims):
    return None
  return dims[at]


def site_record(f: SiteFate, rewritten_by=None) -> dict:
  """One dot site and its fate as a JSON-ready dict (results.json's schema).

  Args:
    f: the site's fate.
    rewritten_by: the `passes.PassAttribution` of the site, or None.
  """
  s = f.site
  return {
    "index": s.index,
    "location": s.location,
    "lhs": str(s.lhs),
    "rhs": str(s.rhs),
    "result": str(s.result),
    "lhs_batch_dims": list(s.lhs_batch),
    "rhs_batch_dims": list(s.rhs_batch),
    "lhs_contracting_dims": list(s.lhs_contracting),
    "rhs_contracting_dims": list(s.rhs_contracting),
    "K": s.contracting_size,
    "stablehlo_precision": ",".join(s.precision),
    "stablehlo_algorithm": identify.site_algorithm(s),
    "fate": f.fate.value,
    "fusion_kind": f.fusion_kind,
    "backend_config_kind": f.backend_config_kind,
    "custom_call_target": f.custom_call_target,
    "carriers": list(f.carriers),
    "precision_config": f.precision_config,
    "algorithm": f.algorithm,
    "split_k": f.split_k,
    "gemm_config": f.gemm_config,
    "effective_algorithm": f.effective_algorithm,
    "algorithm_source": f.algorithm_source,
    "algorithm_evidence": f.algorithm_evidence,
    "selection": f.selection,
    "mapping": f.mapping,
    "candidates": [list(c) for c in f.candidates],
    "conflict": f.conflict,
    "merged_with": None if f.merged_with is None else list(f.merged_with),
    "rewritten_by": None
    if rewritten_by is None
    else {
      "pass": rewritten_by.pass_name,
      "pipeline": rewritten_by.pipeline,
      "fate_after": rewritten_by.fate,
    },
  }


def fate_summary(fates: list[SiteFate]) -> str:
  """A compact summary such as `dot x3, multiply+reduce x1`."""
  counts = collections.Counter(f.fate.value for f in fates)
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "no dots"
