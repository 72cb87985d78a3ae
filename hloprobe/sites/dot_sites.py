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
  cuDNN conv       a convolution site computed by a cuDNN convolution custom
                   call (`operand_ancestry.CONV_CUSTOM_CALLS`; its target,
                   e.g. `__cudnn$convBiasActivationForward`, is the site's
                   `custom_call_target`): XLA's conv rewriter on GPU
  conv             a convolution site kept as an HLO `convolution` (the
                   CPU's conv, or a GPU one not given to cuDNN); a 1x1
                   convolution XLA turns into a dot gets that dot's fate
  cuDNN fused attention
                   a fused attention site (its `StableHloDot.op` the call):
                   the `__cudnn$fmha...` call jax wrote, kept by XLA (its
                   `cudnn_fmha_backend_config` is the site's `gemm_config`)
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
computes (`MappedSite.merge_words`: "merged by dot-merger with site 1"); checked on
jaxlib 0.10.2 and 0.12.0.1 (`identify`'s docstring).

`map_dot_sites` returns one `site_fate.MappedSite` per site;
`effective.resolve` makes the `SiteFate`s of them.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import dataclasses
import math

from hloprobe.compile import jaxlib_release
from hloprobe.ir import (
  HloInstruction,
  HloModule,
  StableHloDot,
  is_attention_target,
)
from hloprobe.sites import collectives, identify
from hloprobe.sites.frames import program_frames
from hloprobe.sites.operand_ancestry import (
  CONV_CUSTOM_CALLS,
  GEMM_CUSTOM_CALLS,
  Carrier,
  backend_config_kind,
  custom_call_target,
  kernel_emitter,
)
from hloprobe.sites.site_fate import (
  Collective,
  Fate,
  MappedSite,
  PrecisionConflict,
  emitter_name,
)

__all__ = [
  "is_triton_gemm",
  "map_dot_sites",
]

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


def map_dot_sites(
  sites: list[StableHloDot], module: HloModule, carriers: list | None = None
) -> list[MappedSite]:
  """Finds what each StableHLO dot site became in an optimized module.

  Args:
    sites: dot sites of the StableHLO module the optimized module came from
      (entry parameters must correspond one to one).
    module: the parsed optimized HLO.
    carriers: `operand_ancestry.find_carriers(module)` where the caller has
      it (`passes.attribute_passes`), else None.

  Returns:
    One `MappedSite` per site, in site order: `Fate.GONE` where no carrier
    has the site's data flow, `Fate.AMBIGUOUS` where differing carriers tie
    (`identify`). `effective.resolve` turns them into `SiteFate`s. Each
    site's `frames` keep the program's frames only (`frames.program_frames`:
    hloprobe's own are dropped, after the sites are matched by them).
  """
  matches = identify.match_sites(sites, module, carriers)
  shown = [
    dataclasses.replace(s, frames=program_frames(s.frames)) for s in sites
  ]
  return [
    _mapped(site, match, shown, matches, module)
    for site, match in zip(shown, matches)
  ]


def _mapped(site, match, sites, matches, module: HloModule) -> MappedSite:
  """One site's record, from its `identify` match among `matches`."""
  if match.candidates:
    return _uncarried(site, Fate.AMBIGUOUS, match.candidates)
  if match.unsplit:
    names = ", ".join(c.instruction.name for c in match.unsplit)
    why = (
      f"unknown: {names} read the site's operands, one inside a "
      "concatenate (dot-merger?) none of whose parts fits the site's "
      "shape; not split back to it"
    )
    return _uncarried(site, Fate.UNKNOWN, match.unsplit, why)
  if match.carrier is None:
    unknown = _unknown_calls(module)
    return _uncarried(site, Fate.UNKNOWN if unknown else Fate.GONE)
  return _classify(
    site,
    match.carrier,
    mapping=match.how,
    conflict=_conflict(site, match.carrier),
    merged_with=_merged_with(site, match, sites, matches),
    collective=_collective(module, match.carrier),
  )


def _collective(module: HloModule, carrier: Carrier) -> Collective | None:
  """The collective adding the site's partial sums in an SPMD-partitioned
  module (`collectives.collective_after`); None in a one-device module."""
  if module.partition_count <= 1:
    return None
  outermost = carrier.kernel or carrier.instruction
  return collectives.collective_after(module, outermost)


def _merged_with(site, match, sites, matches) -> tuple[int, ...] | None:
  """The other sites a merged carrier computes; None when not merged."""
  if not match.merged:
    return None
  return tuple(
    other.index
    for other, m in zip(sites, matches)
    if m.merged and m.carrier is match.carrier and other is not site
  )


def _conflict(site: StableHloDot, carrier: Carrier) -> PrecisionConflict | None:
  """The optimized operand_precision where it is not the site's."""
  precision = identify.hlo_precision(carrier.instruction)[0]
  if precision is None or precision == identify.site_precision(site):
    return None
  return PrecisionConflict(precision, tuple(site.precision))


def _unknown_calls(module: HloModule) -> bool:
  """Under an unchecked jaxlib: custom calls whose targets are not known."""
  if jaxlib_release().rules_checked:
    return False
  return any(
    inst.opcode == "custom-call"
    and custom_call_target(inst) not in GEMM_CUSTOM_CALLS
    and custom_call_target(inst) not in CONV_CUSTOM_CALLS
    and not is_attention_target(custom_call_target(inst))
    for _, inst in module.all_instructions()
  )


def _uncarried(
  site: StableHloDot,
  fate: Fate,
  carriers: tuple[Carrier, ...] = (),
  unknown_reason: str | None = None,
) -> MappedSite:
  """A site no single carrier computes: gone, ambiguous between `carriers`
  or unknown (`carriers` then those of a merged dot not split back)."""
  return MappedSite(
    site,
    fate,
    None,
    None,
    None,
    (),
    identify.site_precision(site),
    identify.site_algorithm(site),
    None,
    None,
    candidates=tuple(c.path for c in carriers),
    unknown_reason=unknown_reason,
  )


def _classify(site: StableHloDot, carrier: Carrier, **found) -> MappedSite:
  """Names the fate of a site from the instruction that computes it.

  `found` are the record's fields the match settled (`mapping`, `conflict`,
  `merged_with`, `collective`).

  Rules (jaxlib 0.10.2 and 0.12.0.1): a custom call is named by its target
  (a cuDNN convolution call is "cuDNN conv", its backend_config's
  `cudnn_conv_backend_config` kept as the site's `gemm_config`; a cuDNN
  fused attention call "cuDNN fused attention", likewise with its
  `cudnn_fmha_backend_config`); an HLO
  convolution is "conv"; a dot is a
  Triton gemm when its outermost enclosing fusion's
  `fusion_backend_config.kind` is a Triton gemm kind (`_TRITON_GEMM_KINDS`),
  unknown in any other Triton kind (`__triton`), cuDNN for `__cudnn$fusion`,
  a plain dot in a known emitter (`_KNOWN_DOT_EMITTERS`), unknown in any
  other, whatever the jaxlib (review finding 6: it was a plain dot on a
  checked release, a guess); a multiply is dot strength reduction's
  output.
  """
  inst = carrier.instruction
  outer = carrier.kernel
  names = _emitter_names(inst, outer)
  emitter = emitter_name(Fate.DOT, names.values())
  config = None
  if names["custom_call_target"] in CONV_CUSTOM_CALLS:
    fate = Fate.CUDNN_CONV
    config = inst.backend_config.get("cudnn_conv_backend_config")
  elif is_attention_target(names["custom_call_target"]):
    fate = Fate.CUDNN_ATTENTION
    config = inst.backend_config.get("cudnn_fmha_backend_config")
  elif inst.opcode == "custom-call":
    fate = Fate(GEMM_CUSTOM_CALLS[names["custom_call_target"]])
    config = inst.backend_config
  elif inst.opcode == "convolution":
    fate = Fate.CONV
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
  elif emitter in _KNOWN_DOT_EMITTERS:
    fate = Fate.DOT
  else:  # a kind hloprobe has not seen: no rule is guessed for it
    fate = Fate.UNKNOWN
    found.setdefault(
      "unknown_reason",
      f"unknown: a dot in a {emitter!r} kernel, not one of the kinds "
      f"hloprobe reads ({', '.join(_KNOWN_DOT_EMITTERS)})",
    )
  precision, algorithm = identify.hlo_precision(inst)
  return MappedSite(
    site=site,
    fate=fate,
    **names,
    carriers=carrier.path,
    precision_config=precision or identify.site_precision(site),
    algorithm=algorithm or identify.site_algorithm(site),
    split_k=_split_k(site, inst, config, bool(found.get("merged_with")))
    if fate in (Fate.TRITON_GEMM, Fate.DOT)
    else None,
    gemm_config=config,
    **found,
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
  site: StableHloDot,
  inst: HloInstruction,
  config: dict | None,
  merged: bool = False,
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
  f32[4,512,64]). A dot `merged` by dot-merger computes its sites' outputs
  together, so a multiple of split_k times the site's (the q, k, v
  projections of x bf16[1,64,128] on an h100, jaxlib 0.12.0.1: f32[4,384,64]
  for three sites of 64 x 128, split-K 4).
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
  whole, rest = divmod(math.prod(dims), dims[at] * math.prod(site.result.dims))
  if rest or whole < 1 or (whole != 1 and not merged):
    return None
  return dims[at]
