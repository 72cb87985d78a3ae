"""What each StableHLO dot site became in the optimized HLO.

A dot site is one `stablehlo.dot_general` on one call path
(`stablehlo.StableHloDot`). XLA renames, fuses and rewrites dots, and
drops their metadata (jaxlib 0.10.2 prints the CPU's top-level `dot` with no
`op_name`), so sites are found again by data flow: each operand of the site
depends on a set of entry parameters (its ancestry), XLA keeps those
dependences, and so the optimized instruction that computes the site is the
dot, gemm custom call or (for dot strength reduction) multiply whose two
operands have the same ancestries (`operand_ancestry.find_carriers`), and whose
shape and K fit (`_pick`).

Fates, checked on jaxlib 0.10.2 (see `_classify`):
  dot              kept as an HLO `dot` (CPU runtime call, YNNPACK fusion or
                   a loop fusion on GPU: the classical emitter)
  Triton gemm      a dot inside a `__triton_gemm` /
                   `__triton_nested_gemm_fusion` fusion (GPU)
  cuBLAS/cuBLASLt  `__cublas$gemm` / `__cublas$lt$matmul` custom calls
  cuDNN            a dot inside a `__cudnn$fusion`
  multiply+reduce  rewritten by XLA's dot strength reduction
                   (AlgebraicSimplifier / `dot-strength-reduction`)
  multiply         K = 1: the dot became an elementwise multiply
  gone             nothing in the optimized HLO computes it
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math

from hloprobe.ir.hlo import HloInstruction, HloModule
from hloprobe.ir.precisions import algorithm_from_fields, algorithm_from_hlo
from hloprobe.ir.stablehlo import StableHloDot
from hloprobe.sites.operand_ancestry import (
  GEMM_CUSTOM_CALLS,
  Carrier,
  custom_call_target,
  find_carriers,
)

__all__ = [
  "DotFate",
  "Fate",
  "map_dot_sites",
  "fate_summary",
  "is_triton_gemm",
  "site_record",
]

_TRITON_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion", "__triton")


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


@dataclasses.dataclass(frozen=True, slots=True)
class DotFate:
  """One dot site and what it became.

  Attributes:
    site: the StableHLO dot site.
    fate: what it became.
    emitter: the fusion kind or custom-call target that emits it, or
      "top level"; None when gone.
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
  """

  site: StableHloDot
  fate: Fate
  emitter: str | None
  carriers: tuple[str, ...]
  precision_config: str
  algorithm: str | None
  split_k: int | None
  gemm_config: dict | None
  effective_algorithm: str | None = None
  algorithm_source: str | None = None
  algorithm_evidence: str | None = None
  selection: str | None = None


def _matches(site: StableHloDot, carrier: Carrier) -> bool:
  """Whether the carrier's two operands depend on what the site's do."""
  anc = carrier.operand_ancestry
  if len(anc) < 2:
    return False
  return sorted(map(sorted, anc[:2])) == sorted(
    map(sorted, (site.lhs_ancestry, site.rhs_ancestry))
  )


def _elements(dims) -> int:
  return math.prod(dims)


def _carrier_k(carrier: Carrier) -> int | None:
  """The contraction size a dot or gemm custom call computes, if known."""
  inst = carrier.instruction
  if inst.opcode == "dot":
    dims = inst.dims_attr("lhs_contracting_dims")
  elif inst.opcode == "custom-call":
    config = inst.backend_config.get("gemm_backend_config") or {}
    numbers = config.get("dot_dimension_numbers") or {}
    dims = tuple(int(d) for d in numbers.get("lhs_contracting_dimensions", ()))
  else:
    return None
  lhs = carrier.operand_shapes[0] if carrier.operand_shapes else None
  if lhs is None or lhs.is_tuple or any(d >= len(lhs.dims) for d in dims):
    return None
  return _elements(lhs.dims[d] for d in dims)


def _result_elements(carrier: Carrier) -> int:
  shape = carrier.instruction.shape
  if shape.is_tuple:  # cuBLAS custom calls return (result, workspace)
    shape = shape.elements[0] if shape.elements else shape
  return _elements(shape.dims)


def _shape_fits(site: StableHloDot, carrier: Carrier) -> bool:
  """Whether the carrier computes as many outputs, over the same K, as the site.

  Shapes are compared by element count: XLA flattens a dot's free dimensions
  into one (f32[16,32,1000] x f32[1000,64] becomes a gemm of f32[512,64]),
  so the gemm's shape need not be the site's. A gemm: the site's outputs
  over K, or s times them (split-K into s parts) over K / s each; K may be
  padded with zeros (xla/service/gpu/split_k_gemm_rewriter.cc,
  `MakeSplitKOperand`, pads K to a multiple of split_k, and the gemm fusion
  may pad it to a tile multiple: 1000 becomes 4 x 252 on an A100 and
  8 x 128 on an H100, jaxlib 0.10.2), so s parts cover K with less than K
  of padding. A multiply: K products per output (dot strength reduction), or
  the outputs themselves when K = 1.
  """
  out, k = _elements(site.result.dims), site.contracting_size
  got = _result_elements(carrier)
  if carrier.instruction.opcode == "multiply":
    return got in (out * k, out) if k > 1 else got == out
  carrier_k = _carrier_k(carrier)
  if carrier_k is None or carrier_k == 0:
    return carrier.instruction.opcode == "convolution"
  if out == 0 or got % out:
    return False
  parts = got // out
  return k <= parts * carrier_k < 2 * k or parts * carrier_k == k


def _pick(
  site: StableHloDot, carriers: list[Carrier], used: set[int]
) -> int | None:
  """The carrier of a site: ancestry first, then shape, gemms before multiplies.

  Carriers whose shapes fit are preferred; where none fits (XLA padded or
  merged the dot), ancestry alone decides. An unused carrier is preferred,
  so identical sites map in program order; a used one is taken only when
  nothing else matches (XLA merged identical dots).
  """
  matching = [i for i, c in enumerate(carriers) if _matches(site, c)]
  fitting = [i for i in matching if _shape_fits(site, carriers[i])]
  pool = fitting or matching
  if site.contracting_size == 1 and not fitting:
    pool = [i for i in pool if carriers[i].instruction.opcode != "multiply"]
  ranked = sorted(
    pool,
    key=lambda i: (i in used, carriers[i].instruction.opcode == "multiply", i),
  )
  return ranked[0] if ranked else None


def map_dot_sites(
  sites: list[StableHloDot], module: HloModule
) -> list[DotFate]:
  """Finds what each StableHLO dot site became in an optimized module.

  Args:
    sites: dot sites of the StableHLO module the optimized module came from
      (entry parameters must correspond one to one).
    module: the parsed optimized HLO.

  Returns:
    One `DotFate` per site, in site order. A site whose operands match no
    dot-like instruction is `Fate.GONE` (see `_pick` for the choice among
    several).
  """
  carriers = find_carriers(module)
  used: set[int] = set()
  fates = []
  for site in sites:
    chosen = _pick(site, carriers, used)
    if chosen is None:
      fates.append(_gone(site))
      continue
    used.add(chosen)
    fates.append(_classify(site, carriers[chosen]))
  return fates


def _gone(site: StableHloDot) -> DotFate:
  return DotFate(
    site,
    Fate.GONE,
    None,
    (),
    _site_precision(site),
    _site_algorithm(site),
    None,
    None,
  )


def _site_precision(site: StableHloDot) -> str:
  return ",".join(p.lower() for p in site.precision)


def _site_algorithm(site: StableHloDot) -> str | None:
  return algorithm_from_fields(site.algorithm) if site.algorithm else None


def _classify(site: StableHloDot, carrier: Carrier) -> DotFate:
  """Names the fate of a site from the instruction that computes it.

  Rules (jaxlib 0.10.2): a custom call is named by its target; a dot is a
  Triton gemm when its outermost enclosing fusion's
  `fusion_backend_config.kind` is a Triton kind, cuDNN for `__cudnn$fusion`,
  and a plain dot otherwise; a multiply is dot strength reduction's output.
  """
  inst = carrier.instruction
  outer = carrier.kernel
  kind = _fusion_kind(outer) if outer is not None else None
  emitter = kind or "top level"
  config = None
  if inst.opcode == "custom-call":
    target = custom_call_target(inst)
    fate, emitter, config = (
      Fate(GEMM_CUSTOM_CALLS[target]),
      target,
      inst.backend_config,
    )
  elif inst.opcode == "multiply":
    fate = Fate.MULTIPLY if site.contracting_size == 1 else Fate.MULTIPLY_REDUCE
  elif is_triton_gemm(outer):
    fate, config = (
      Fate.TRITON_GEMM,
      outer.backend_config.get("fusion_backend_config"),
    )
  elif kind == "__cudnn$fusion":
    fate = Fate.CUDNN
  else:
    fate = Fate.DOT
  precision, algorithm = _hlo_precision(inst, config)
  return DotFate(
    site=site,
    fate=fate,
    emitter=emitter,
    carriers=carrier.path,
    precision_config=precision or _site_precision(site),
    algorithm=algorithm or _site_algorithm(site),
    split_k=_split_k(site, inst, config) if fate == Fate.TRITON_GEMM else None,
    gemm_config=config,
  )


def is_triton_gemm(kernel: HloInstruction | None) -> bool:
  """Whether a fusion is a Triton gemm kernel (`_TRITON_KINDS`)."""
  return kernel is not None and _fusion_kind(kernel) in _TRITON_KINDS


def _fusion_kind(fusion: HloInstruction) -> str | None:
  if fusion.opcode == "custom-call":
    return custom_call_target(fusion)
  if fusion.opcode != "fusion":
    return fusion.opcode
  # GPU prints `fusion_backend_config`, CPU `fusion_config` (jaxlib 0.10.2).
  config = fusion.backend_config
  fbc = config.get("fusion_backend_config") or config.get("fusion_config") or {}
  return fbc.get("kind") or fusion.attrs.get("kind")


def _hlo_precision(
  inst: HloInstruction, config: dict | None
) -> tuple[str | None, str | None]:
  """operand_precision and algorithm as the optimized HLO states them."""
  if inst.opcode == "multiply":
    return None, None
  if inst.opcode == "custom-call" and config:
    pc = (config.get("gemm_backend_config") or config).get(
      "precision_config"
    ) or {}
    ops = pc.get("operand_precision")
    algo = pc.get("algorithm")
    precision = ",".join(p.lower() for p in ops) if ops else None
    algorithm = None if algo in (None, "ALG_UNSET") else algo
    if algorithm is not None and algorithm.startswith("ALG_"):
      algorithm = algorithm_from_hlo(algorithm[len("ALG_") :].lower())
    return precision, algorithm
  precision = inst.attrs.get("operand_precision", "{default,default}").strip(
    "{}"
  )
  algo = inst.attrs.get("algorithm")
  return precision, algorithm_from_hlo(algo) if algo else None


def _split_k(
  site: StableHloDot, inst: HloInstruction, config: dict | None
) -> int | None:
  """The split-K factor of a Triton gemm's dot, or None when not split.

  `__triton_gemm` fusions state it (`triton_gemm_config.split_k`).
  `__triton_nested_gemm_fusion`s (jaxlib 0.10.2) do not: XLA's split-K
  rewrite (xla/service/gpu/split_k_gemm_rewriter.cc,
  `MakeDotComputationSplitKBatch`) gives the dot one more batch dimension,
  of size split_k, added first among the batch dimensions (so it is the
  dot's output dimension 0), whose partial sums a following reduce fusion
  adds. That is recognised by one extra batch dimension and an output of
  split_k times the site's elements: compared by element count, since XLA
  flattens the free dimensions (f32[16,32,64] becomes f32[4,512,64]).
  """
  tgc = (config or {}).get("triton_gemm_config") or {}
  if int(tgc.get("split_k", 1)) > 1:
    return int(tgc["split_k"])
  if inst.opcode != "dot":
    return None
  if len(inst.dims_attr("lhs_batch_dims")) != len(site.lhs_batch) + 1:
    return None
  dims = inst.shape.dims
  if not dims or dims[0] < 2:
    return None
  if _elements(dims) != dims[0] * _elements(site.result.dims):
    return None
  return dims[0]


def site_record(f: DotFate, rewritten_by=None) -> dict:
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
    "stablehlo_algorithm": _site_algorithm(s),
    "fate": f.fate.value,
    "emitter": f.emitter,
    "carriers": list(f.carriers),
    "precision_config": f.precision_config,
    "algorithm": f.algorithm,
    "split_k": f.split_k,
    "gemm_config": f.gemm_config,
    "effective_algorithm": f.effective_algorithm,
    "algorithm_source": f.algorithm_source,
    "algorithm_evidence": f.algorithm_evidence,
    "selection": f.selection,
    "rewritten_by": None
    if rewritten_by is None
    else {
      "pass": rewritten_by.pass_name,
      "pipeline": rewritten_by.pipeline,
      "fate_after": rewritten_by.fate,
    },
  }


def fate_summary(fates: list[DotFate]) -> str:
  """A compact summary such as `dot x3, multiply+reduce x1`."""
  counts = collections.Counter(f.fate.value for f in fates)
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "no dots"
