"""The records of what a dot site became, and their words and JSON.

Two stages, two records (as jax's `Lowered.compile()` returns `Compiled`):
`dot_sites.map_dot_sites` returns a `MappedSite` per site (its `Fate` and
what XLA prints around its carrier); `effective.resolve` takes those and
returns a `SiteFate` per site, the same fields plus the arithmetic the site
really runs (`effective_algorithm`, its source and evidence) and who chose
the fate (`selection`). Neither record is filled in later.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import collections
import dataclasses
import enum

from hloprobe.ir import StableHloDot

__all__ = [
  "EMITTER_KEYS",
  "Collective",
  "Fate",
  "MappedSite",
  "PrecisionConflict",
  "SiteFate",
  "emitter_name",
  "fate_summary",
  "merge_words",
  "site_algorithm",
]

# The three names XLA prints for what emits a site, most specific first:
# the custom call's target, the fusion's backend config kind, its `kind=`.
EMITTER_KEYS = ("custom_call_target", "backend_config_kind", "fusion_kind")


class Fate(str, enum.Enum):
  """What a dot site became; values are the words reports use."""

  DOT = "dot"
  TRITON_GEMM = "Triton gemm"
  CUBLAS = "cuBLAS"
  CUBLASLT = "cuBLASLt"
  CUDNN = "cuDNN"
  CUDNN_CONV = "cuDNN conv"
  CONV = "conv"
  CUDNN_ATTENTION = "cuDNN fused attention"
  MULTIPLY_REDUCE = "multiply+reduce"
  MULTIPLY = "multiply"
  GONE = "gone"
  UNKNOWN = "unknown"
  AMBIGUOUS = "ambiguous"


@dataclasses.dataclass(frozen=True, slots=True)
class PrecisionConflict:
  """The optimized HLO's operand precision where it contradicts the
  site's StableHLO one (`MappedSite.conflict`); report words it
  ("optimized precision config highest,highest contradicts StableHLO
  DEFAULT,DEFAULT").

  Attributes:
    optimized: the optimized dot's operand_precision, e.g.
      "highest,highest".
    stablehlo: the site's StableHLO precision per operand, e.g.
      ("DEFAULT", "DEFAULT").
  """

  optimized: str
  stablehlo: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Collective:
  """The collective that adds a site's per-device partial sums in an
  SPMD-partitioned module (`MappedSite.collective`,
  `collectives.collective_after`); report words it ("all-reduce over 8
  devices (all-reduce.3)", "all-reduce (maximum) over 8 devices (...)").

  Attributes:
    kind: "all-reduce" or "reduce-scatter".
    reduction: the opcode of its `to_apply` root, e.g. "add", "maximum";
      "unknown" where that computation is not in the module.
    devices: how many devices one of its replica groups has.
    name: the collective instruction's name, e.g. "all-reduce.3".
  """

  kind: str
  reduction: str
  devices: int
  name: str


@dataclasses.dataclass(frozen=True, slots=True)
class MappedSite:
  """One dot site and what it became (its `Fate` and how it is computed).

  What `dot_sites.map_dot_sites` finds in one optimized module; the
  arithmetic the site runs is `effective.resolve`'s (`SiteFate`).

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
    mapping: how the carrier was identified: "source location" (its
      metadata's source stack is the site's) or "data flow"; None when gone
      or ambiguous.
    candidates: for an ambiguous site, the paths of the tied carriers; for
      an unknown one not split back from a merged dot, that dot's paths.
    conflict: where the optimized HLO contradicts the StableHLO about the
      site's operand precision, a `PrecisionConflict`; else None.
    merged_with: for a site computed by a dot XLA's dot-merger made of
      several, the indices of the other sites that dot computes (() when
      no other site was found in it); None when not merged.
    unknown_reason: why the mapping left an unknown site unknown, where it
      knows (a merged dot not split back to the site), in words; else None.
    collective: in an SPMD-partitioned module, the collective that adds the
      site's per-device partial sums, a `Collective`
      (`collectives.collective_after`); None otherwise.
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
  mapping: str | None = None
  candidates: tuple[tuple[str, ...], ...] = ()
  conflict: PrecisionConflict | None = None
  merged_with: tuple[int, ...] | None = None
  unknown_reason: str | None = None
  collective: Collective | None = None

  @property
  def emitter(self) -> str | None:
    """The most specific of the three names (`emitter_name`), for reports."""
    return emitter_name(
      self.fate.value,
      (self.custom_call_target, self.backend_config_kind, self.fusion_kind),
    )

  def merge_words(self, group: bool = False) -> str | None:
    """E.g. "merged by dot-merger with sites 1, 2"; None when not merged
    (`merge_words`). With `group`, the same words for every site of one
    merged dot, e.g. "sites 0, 1, 2 merged by dot-merger"."""
    return merge_words(self, group)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SiteFate(MappedSite):
  """A mapped site (`MappedSite`'s fields) and the arithmetic it runs.

  What `effective.resolve` returns; every field is set when it is made.

  Attributes:
    effective_algorithm: the preset the site's arithmetic really is, e.g.
      "TF32_TF32_F32" under DEFAULT in a Triton gemm; None when it cannot
      be settled.
    algorithm_source: "ptx" (read from the kernel) or "rule" (library
      call or CPU, see `effective`); None when not settled.
    algorithm_evidence: one line on why, e.g. the kernel's mma opcodes.
    selection: who chose the fate: XLA's heuristic on compile-only targets
      (no autotuning), autotuning on an attached GPU; None on CPU.
    fp8_rewrite: for a GPU site with fp8 operands, whether XLA's fp8
      cuBLASLt rewrite made it `__cublas$lt$matmul$f8`: fired, did not
      fire (the conditions) or unknown (why), an `fp8_rewrite.Fp8Rewrite`
      (`fp8_rewrite.rewrite_note`); None for other sites.
    ptx_kernel: the PTX kernel (`.entry` name) the site's arithmetic was
      read from (`effective`'s PTX reading, `ir.PtxKernel`), e.g.
      "gemm_fusion_dot_1"; None where no kernel was read (a rule, the CPU,
      no kernel found). What code reads; `algorithm_evidence` is for
      people.
    mma_opcodes: that kernel's tensor-core opcodes (mma.sync / wgmma),
      sorted, each once, e.g.
      ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",); () where
      it has none or no kernel was read.
    ptx_tf32_rounding: that kernel's `PtxKernel.tf32_rounding`: "rna"
      where `cvt.rna.tf32.f32` rounds the operands of its tf32 mma first,
      "truncate" where nothing does; None otherwise.
  """

  effective_algorithm: str | None
  algorithm_source: str | None
  algorithm_evidence: str | None
  selection: str | None
  fp8_rewrite: object = None  # an `fp8_rewrite.Fp8Rewrite` (it imports this)
  ptx_kernel: str | None = None
  mma_opcodes: tuple[str, ...] = ()
  ptx_tf32_rounding: str | None = None

  @property
  def tf32_optional(self) -> bool:
    """Whether the site's TF32 is allowed, not required: it may run F32.

    True for the sites `effective.blas_algorithm` gives TF32_TF32_F32 by
    its IsTf32Allowed branch: a cuBLAS or cuBLASLt call on f32 operands
    with no declared algorithm; and for the cuDNN convolutions
    `conv_rules.cudnn_conv_algorithm` gives TF32_TF32_F32 (allow_tf32).
    The kernel cuBLAS picks decides between TF32_TF32_F32 and F32_F32_F32
    (see `blas_algorithm`). A declared TF32_TF32_F32 preset is not
    included: no run has checked it.
    """
    return (
      self.fate in (Fate.CUBLAS, Fate.CUBLASLT, Fate.CUDNN_CONV)
      and self.algorithm is None
      and self.site.lhs.dtype == "f32"
      and self.effective_algorithm == "TF32_TF32_F32"
    )

  @classmethod
  def of(
    cls,
    mapped: MappedSite,
    *,
    effective_algorithm: str | None,
    algorithm_source: str | None,
    algorithm_evidence: str | None,
    selection: str | None,
    fp8_rewrite: object = None,
    ptx_kernel: str | None = None,
    mma_opcodes: tuple[str, ...] = (),
    ptx_tf32_rounding: str | None = None,
  ) -> SiteFate:
    """`mapped`'s fields, with the resolved ones (see the attributes)."""
    return cls(
      **{
        f.name: getattr(mapped, f.name) for f in dataclasses.fields(MappedSite)
      },
      effective_algorithm=effective_algorithm,
      algorithm_source=algorithm_source,
      algorithm_evidence=algorithm_evidence,
      selection=selection,
      fp8_rewrite=fp8_rewrite,
      ptx_kernel=ptx_kernel,
      mma_opcodes=mma_opcodes,
      ptx_tf32_rounding=ptx_tf32_rounding,
    )

  def record(self, rewritten_by=None) -> dict:
    """One dot site and its fate as a JSON-ready dict (results.json's
    schema), its fields in the schema's order, but for the four made of
    words, "conflict", "collective", "fp8_rewrite" and "rewritten_by"'s
    "fate_after": None here, their place kept; report fills them from the
    records of those names
    (`report.site_words.site_json`, issue 36: words only at the edge).

    Args:
      rewritten_by: the `passes.PassAttribution` of the site, or None.
    """
    s, f = self.site, self
    return {
      "index": s.index,
      "op": s.op,
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
      "stablehlo_algorithm": site_algorithm(s),
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
      "conflict": None,  # words: report (`report.site_words.site_json`)
      "merged_with": None if f.merged_with is None else list(f.merged_with),
      "collective": None,  # likewise
      "fp8_rewrite": None,  # likewise
      "rewritten_by": None
      if rewritten_by is None
      else {
        "pass": rewritten_by.pass_name,
        "pipeline": rewritten_by.pipeline,
        "fate_after": None,  # likewise
      },
    }


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


def merge_words(f: MappedSite, group: bool = False) -> str | None:
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


def site_algorithm(site: StableHloDot) -> str | None:
  """The site's StableHLO algorithm as a preset name
  (`StableHloDot.algorithm_preset`), or None."""
  return site.algorithm_preset


def fate_summary(fates: list[MappedSite]) -> str:
  """A compact summary such as `dot x3, multiply+reduce x1`."""
  counts = collections.Counter(f.fate.value for f in fates)
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "no dots"
