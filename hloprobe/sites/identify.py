"""Which optimized-HLO instruction computes each StableHLO dot site.

A site is found among the carriers (`operand_ancestry.find_carriers`) by
what identifies it, strongest first (checked on jaxlib 0.10.2 and 0.12.0.1):

  data flow     the carrier's two operands depend on the entry parameters
                the site's do (required; where nothing matches, the site is
                gone);
  shape         the carrier computes the site's outputs over its K, split or
                padded (`shape_fits`; preferred where any carrier fits);
  source stack  the carrier's `metadata.stack_frame_id` stack equals the
                site's `loc(callsite(...))` stack (`file:line:column` per
                frame). XLA keeps a dot's metadata on the dot inside a gemm
                fusion and on the split-K dot
                (xla/service/gpu/split_k_gemm_rewriter.cc,
                `MakeDotComputationSplitKBatch`: `SetupDerivedInstruction`),
                and the CPU's dots keep theirs;
  precision     the carrier's precision config (operand_precision and
                algorithm) is the site's;
  unused        a carrier not yet taken by an earlier site (XLA merges
                identical dots, so a taken one is still allowed);
  element type  the carrier's result element type is the site's: last, to
                tell apart dots that XLA left without metadata (XLA:CPU's
                s8 x s8 -> s32 and s8 x s8 -> s8 dots of one x and w at
                n = 1, jaxlib 0.12.0.1, keep no `stack_frame_id`), where a
                float dot's may be widened (XLA:CPU computes a bf16 dot in
                f32: `sites.effective`).

Two carriers left tied after all of these that differ in what a report says
(opcode, kernel, shape, precision config, algorithm) make the site
"ambiguous": it is reported so, never guessed.

Merged dots. XLA's `dot-merger` (xla/hlo/transforms/simplifiers/
dot_merger.cc, read at openxla/xla 0e1ce768; `TryMergeSameOperand`) replaces dots that share an operand
and have the same operand_precision, dimension numbers and types by one dot
over the other operands concatenated along their free dimension, and
slices each site's result out of it; `TryMergeLHSWithRHSOperand` does the
same for two rank-2 dots that share an operand on different sides (the
second's other operand transposed into the concatenate). The merged dot
keeps the first dot's metadata only. So no carrier has such a site's data
flow; where none does, a carrier is the site's merged dot when one operand
depends on what one of the site's operands does and the other is a
concatenate (`operand_ancestry.Concatenation`) with a part that depends on
what the site's other operand does and whose share of the concatenate is
the site's share of the carrier's outputs, over the site's K
(`merged_part_fits`). The site's fate is then that carrier's: one kernel
computes every merged site, each at that kernel's arithmetic. Which of two
equal parts is which site does not change the fate. A carrier that reads a
site's operands, one of them inside a concatenate none of whose parts fits
the site, is not split back to it: the site is `unsplit` (reported
"unknown" with that carrier named, never "gone").
Downstream of a merged dot, a site's operands are slices of its result:
their ancestry is the merged dot's, more than the site's. Where no carrier
has the site's data flow and no merged dot fits, a carrier whose operands
depend on at least what the site's do, and whose shape fits, is a
candidate (`_reads_merged_results`), ranked as the others.

Merging on the same side was seen on jaxlib 0.10.2 and 0.12.0.1 (x @ w1,
x @ w2 on an A100 at n = 2); on different sides (x @ w, v @ x.T) only on
0.12.0.1: 0.10.2 keeps two Triton gemms.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import dataclasses
import math

from hloprobe.ir import (
  HloInstruction,
  HloModule,
  StableHloDot,
  is_attention_target,
)
from hloprobe.sites.carrier_shapes import (
  carrier_k,
  fits_on_device,
  is_convolution,
  result_elements,
  result_shape,
)
from hloprobe.sites.fp8_rewrite import fp8_carrier_ancestry
from hloprobe.sites.operand_ancestry import (
  Carrier,
  Concatenation,
  custom_call_target,
  find_carriers,
  kernel_emitter,
)
from hloprobe.sites.site_fate import site_algorithm

__all__ = [
  "Match",
  "hlo_precision",
  "is_convolution",
  "match_sites",
  "merged_part_fits",
  "site_algorithm",
  "site_precision",
]

BY_SOURCE = "source location"
BY_DATA_FLOW = "data flow"


@dataclasses.dataclass(frozen=True)
class Match:
  """The carrier found for one site.

  Attributes:
    carrier: the instruction computing the site; None when gone,
      ambiguous or unsplit.
    how: BY_SOURCE (its source stack is the site's), BY_DATA_FLOW (data
      flow, shape and precision alone), or None.
    candidates: for an ambiguous site, the tied carriers; else ().
    merged: whether the carrier is a merged dot computing this site among
      others (one part of its concatenated operand is the site's).
    unsplit: carriers reading the site's operands, one inside a
      concatenate none of whose parts fits the site; () when the site has
      a carrier or none reads its operands.
  """

  carrier: Carrier | None
  how: str | None = None
  candidates: tuple[Carrier, ...] = ()
  merged: bool = False
  unsplit: tuple[Carrier, ...] = ()


def site_precision(site: StableHloDot) -> str:
  """The site's StableHLO operand precision in HLO spelling: "high,high"."""
  return ",".join(p.lower() for p in site.precision)


def hlo_precision(inst: HloInstruction) -> tuple[str | None, str | None]:
  """operand_precision and algorithm as the optimized HLO states them.

  A dot prints them as attributes (absent: default); a cuBLAS custom call in
  its backend_config's `precision_config`; a multiply states neither. A
  convolution, and a cuDNN convolution custom call, print
  `operand_precision={highest,highest,default}` as an attribute (jaxlib
  0.10.2 and 0.12.0.1): the first two are the input's and the kernel's,
  the ones StableHLO states; a third and fourth (the bias and side input
  of `__cudnn$convBiasActivationForward`, which XLA's fused conv rewriter
  adds) are DEFAULT, so they are not part of the site's request.
  """
  if inst.opcode == "multiply":
    return None, None
  if is_convolution(inst):
    precision = inst.attrs.get("operand_precision", "{default,default}")
    return ",".join(precision.strip("{}").split(",")[:2]), None
  if inst.opcode == "custom-call":
    ops = inst.call_precision_config.get("operand_precision")
    precision = ",".join(p.lower() for p in ops) if ops else None
    return precision, inst.algorithm_preset
  precision = inst.attrs.get("operand_precision", "{default,default}")
  return precision.strip("{}"), inst.algorithm_preset


def _matches(site: StableHloDot, carrier: Carrier) -> bool:
  """Whether the carrier's two operands depend on what the site's do.

  An attention site's carrier is a cuDNN fused attention call with the
  site's own target (a forward site never takes the backward call), and
  only such a site takes one; its q and k may depend on more than the
  site's (XLA's dot-merger computes the q, k and v projections of one x as
  one gemm whose result they are slices of: seen on jaxlib 0.12.0.1, h100),
  never on less. An FP8 gemm call's scales are operands of their own
  (`fp8_rewrite.fp8_carrier_ancestry`).
  """
  target = custom_call_target(carrier.instruction)
  anc = carrier.operand_ancestry
  if is_attention_target(site.op) or is_attention_target(target):
    own = (site.lhs_ancestry, site.rhs_ancestry)
    return site.op == target and all(a <= b for a, b in zip(own, anc[:2]))
  if len(anc) < 2:
    return False
  anc = fp8_carrier_ancestry(target, anc, carrier.operand_shapes)
  return sorted(map(sorted, anc[:2])) == sorted(
    map(sorted, (site.lhs_ancestry, site.rhs_ancestry))
  )


def _same_stack(site: tuple[str, ...], carrier: tuple[str, ...]) -> bool:
  """Frame by frame equal; a `file:line` frame matches its `file:line:col`."""
  n = min(len(site), len(carrier))
  return all(
    a == b or a.startswith(b + ":") or b.startswith(a + ":")
    for a, b in zip(site[:n], carrier[:n])
  )


def _source_rank(site: StableHloDot, frames: tuple[str, ...]) -> int:
  """0: the same source stack; 1: unknown on either side; 2: another one."""
  if not site.frames or not frames:
    return 1
  return 0 if _same_stack(site.frames, frames) else 2


def _signature(carrier: Carrier) -> tuple:
  """What a report says of a carrier: two with one signature are alike."""
  inst, kernel = carrier.instruction, carrier.kernel
  return (
    inst.opcode,
    custom_call_target(inst),
    kernel_emitter(kernel) if kernel is not None else None,
    str(inst.shape),
    hlo_precision(inst),
  )


def _merged_operands(site: StableHloDot, carrier: Carrier):
  """(concatenate, part indices) pairs where the carrier may merge the site.

  One operand of the carrier depends on what one of the site's operands
  does, the other is a `Concatenation`; the parts listed depend on what the
  site's other operand does.
  """
  anc = carrier.operand_ancestry
  if len(anc) < 2 or carrier.instruction.opcode not in ("dot", "custom-call"):
    return []
  own = (frozenset(site.lhs_ancestry), frozenset(site.rhs_ancestry))
  out = []
  for j in (0, 1):
    cat, shared = anc[j], frozenset(anc[1 - j])
    if not isinstance(cat, Concatenation):
      continue
    for a, b in (own, own[::-1]):
      if shared == a:
        out.append((cat, [p for p, part in enumerate(cat.parts) if part == b]))
  return out


def merged_part_fits(site: StableHloDot, carrier: Carrier) -> bool:
  """Whether a part of the carrier's concatenated operand is the site's.

  The part depends on what the site's other operand does (the shared one
  matching), K is the site's (or padded below twice it, as `shape_fits`),
  and the part's share of the concatenate's elements is the site's share
  of the carrier's outputs: the shared operand's free dimensions times the
  part's, over the shared one's times all parts' (dot_merger.cc
  concatenates along the one free dimension of the other operands). A
  merged dot split-K into s parts (split_k_gemm_rewriter.cc,
  `MakeDotComputationSplitKBatch`: K reshaped into a batch dimension of s
  after the concatenate) has s times those outputs over K / s each, as
  `shape_fits` allows (seen on jaxlib 0.12.0.1: the q, k, v projections of
  one x bf16[1, 64, 128] on an h100, split-K 4).
  """
  out, k = math.prod(site.result.dims), site.contracting_size
  own_k = carrier_k(carrier)
  if not own_k or not k or not out:
    return False
  got = result_elements(carrier)
  for cat, parts in _merged_operands(site, carrier):
    total = sum(cat.part_elements)
    for p in parts:
      part = cat.part_elements[p]
      splits, rest = divmod(got * part, out * total) if total else (0, 1)
      if part and not rest and splits and k <= splits * own_k < 2 * k:
        return True
  return False


def _reads_concatenated(site: StableHloDot, carrier: Carrier) -> bool:
  """The carrier reads the site's operands, one within a concatenate."""
  anc = carrier.operand_ancestry
  if len(anc) < 2:
    return False
  own = (frozenset(site.lhs_ancestry), frozenset(site.rhs_ancestry))
  for j in (0, 1):
    cat, shared = anc[j], frozenset(anc[1 - j])
    if isinstance(cat, Concatenation) and any(
      shared == a and b <= cat for a, b in (own, own[::-1])
    ):
      return True
  return False


def _reads_merged_results(site: StableHloDot, carrier: Carrier) -> bool:
  """The carrier's operands depend on more than the site's, never on less.

  Downstream of a merged dot: where dot-merger made x @ wq, x @ wk and
  x @ wv one dot over wq, wk and wv concatenated, q and k are slices of its
  result, so a dot of q and k (an attention's q k^T, and its probabilities
  @ v) depends on every weight of the merged dot, not on the site's alone
  (seen on jaxlib 0.12.0.1, a100 and h100: `jax.nn.dot_product_attention`'s
  XLA implementation after a q, k, v projection of one x).
  """
  anc = carrier.operand_ancestry
  if len(anc) < 2 or carrier.instruction.opcode == "multiply":
    return False
  own = (site.lhs_ancestry, site.rhs_ancestry)
  return any(
    all(frozenset(a) <= frozenset(b) for a, b in zip(pair, anc[:2]))
    for pair in (own, own[::-1])
  )


def _pair_key(pair) -> tuple:
  """Two ancestries as one unordered key: equal keys are what `_matches`
  compares (`sorted(map(sorted, ...))`) equal."""
  return tuple(sorted(tuple(sorted(a)) for a in pair))


class _CarrierIndex:
  """The carriers of one module, indexed by what `_candidates` asks of
  them, so a site looks only at those that can answer: the carriers with
  its data flow (`_matches`), and the merged dots whose shared operand is
  one of its operands' (`_merged_operands`). Each list is in carrier
  order, so `_candidates` gives what a scan of every carrier gives; a
  module's sites are then matched in time linear in sites and carriers,
  where a scan per site is their product (a 12-layer model: 72 sites x
  about 250 carriers per pass dump read).

  Attributes:
    carriers: the module's carriers, in `find_carriers` order.
  """

  def __init__(self, carriers: list[Carrier]):
    self.carriers = carriers
    self._attention: list[int] = []
    self._by_flow: dict[tuple, list[int]] = {}
    self._by_shared: dict[frozenset, list[int]] = {}
    self._position: dict[int, int] = {}
    for i, c in enumerate(carriers):
      self._position.setdefault(id(c), i)
      target = custom_call_target(c.instruction)
      anc = c.operand_ancestry
      attention = is_attention_target(target)
      if attention:
        self._attention.append(i)
      if len(anc) < 2:
        continue
      if not attention:
        flow = fp8_carrier_ancestry(target, anc, c.operand_shapes)
        self._by_flow.setdefault(_pair_key(flow[:2]), []).append(i)
      if c.instruction.opcode not in ("dot", "custom-call"):
        continue
      for j in (0, 1):
        if isinstance(anc[j], Concatenation):
          shared = frozenset(anc[1 - j])
          listed = self._by_shared.setdefault(shared, [])
          if not listed or listed[-1] != i:
            listed.append(i)

  def position(self, carrier: Carrier) -> int:
    """The index of `carrier` (this very object) in `carriers`."""
    return self._position[id(carrier)]

  def matching(self, site: StableHloDot) -> list[int]:
    """`[i for i, c in enumerate(carriers) if _matches(site, c)]`."""
    if is_attention_target(site.op):
      return [i for i in self._attention if _matches(site, self.carriers[i])]
    key = _pair_key((site.lhs_ancestry, site.rhs_ancestry))
    return list(self._by_flow.get(key, ()))

  def merged(self, site: StableHloDot) -> list[int]:
    """`[i for i, c in enumerate(carriers) if merged_part_fits(site, c)]`:
    only a carrier whose shared operand is one of the site's can."""
    near = set(self._by_shared.get(frozenset(site.lhs_ancestry), ()))
    near.update(self._by_shared.get(frozenset(site.rhs_ancestry), ()))
    return [i for i in sorted(near) if merged_part_fits(site, self.carriers[i])]


def _candidates(
  site: StableHloDot, index: _CarrierIndex, partitions: int = 1
) -> tuple[list[int], bool]:
  """Carriers with the site's data flow, those whose shape fits first; else
  merged dots with a part that fits (the bool says which); else carriers
  whose operands depend on more than the site's and whose shape fits
  (`_reads_merged_results`)."""
  carriers = index.carriers
  matching = index.matching(site)
  fits = lambda c: fits_on_device(site, c, partitions)
  fitting = [i for i in matching if fits(carriers[i])]
  merged = index.merged(site)
  if not fitting and merged:
    return merged, True
  if not matching and not is_attention_target(site.op):
    matching = [
      i
      for i, c in enumerate(carriers)
      if not is_attention_target(custom_call_target(c.instruction))
      and _reads_merged_results(site, c)
      and fits(c)
    ]
    fitting = matching
  pool = fitting or matching
  if site.contracting_size == 1 and not fitting:
    pool = [i for i in pool if carriers[i].instruction.opcode != "multiply"]
  return pool, False


def _pick(site, index: _CarrierIndex, frames, used, partitions=1) -> Match:
  """The best-ranked candidate, or an ambiguity (see the module docstring)."""
  carriers = index.carriers

  def rank(i: int) -> tuple:
    precision, algorithm = hlo_precision(carriers[i].instruction)
    return (
      _source_rank(site, frames[i]),
      i in used,
      precision not in (None, site_precision(site))
      or (precision is not None and algorithm != site_algorithm(site)),
      carriers[i].instruction.opcode == "multiply",
      result_shape(carriers[i]).dtype != site.result.dtype,
    )

  pool, merged = _candidates(site, index, partitions)
  pool = sorted(pool, key=lambda i: (rank(i), i))
  if not pool:
    unsplit = [c for c in carriers if _reads_concatenated(site, c)]
    return Match(None, unsplit=tuple(unsplit))
  tied = [i for i in pool if rank(i) == rank(pool[0])]
  if len({_signature(carriers[i]) for i in tied}) > 1:
    return Match(None, None, tuple(carriers[i] for i in tied))
  how = BY_SOURCE if rank(pool[0])[0] == 0 else BY_DATA_FLOW
  return Match(carriers[pool[0]], how, merged=merged)


def match_sites(
  sites: list[StableHloDot],
  module: HloModule,
  carriers: list[Carrier] | None = None,
) -> list[Match]:
  """The carrier of each site, in site order (module docstring for how).

  Args:
    sites: dot sites of the StableHLO module the optimized module came from
      (entry parameters must correspond one to one).
    module: the parsed optimized HLO.
    carriers: `find_carriers(module)` where the caller has it, else None.
  """
  if carriers is None:
    carriers = find_carriers(module)
  frames = [module.source_frames(c.instruction) for c in carriers]
  partitions = module.partition_count
  index = _CarrierIndex(carriers)
  used: set[int] = set()
  out = []
  for site in sites:
    match = _pick(site, index, frames, used, partitions)
    if match.carrier is not None:
      used.add(index.position(match.carrier))
    out.append(match)
  return out
