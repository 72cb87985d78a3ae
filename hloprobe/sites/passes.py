"""Which XLA pass rewrote each dot site (`--explain_passes`).

With `--explain_passes` the config's compile also gets the debug options
`xla_dump_to=TMPDIR` and `xla_dump_hlo_pass_re=.*` (per compile, through
`Lowered.compile(compiler_options=...)`, so nothing else in the process is
affected and no second compile is needed), which make XLA write the module
after every pass that changed it, named
`module_<id>.<name>.<seq>.<pipeline>.after_<pass>.before_<next>.txt`
(xla/service/dump.cc, DumpHloModuleBetweenPassesIfEnabled; checked on
jaxlib 0.10.2 and 0.12.0.1, whose dumps print tuple operands in the compact
`%t#i` form that `ir.hlo` expands). Reading the dumps in sequence order, a
site's pass is the first one after which it is no longer a plain, unsplit
`dot` (outside any fusion), or for a convolution site a plain
`convolution` (the GPU's conv rewriter making it a cuDNN call): for example `dot-strength-reduction` (GPU) or
`algsimp` (CPU) turning it into multiply+reduce, `splitk-rewriter` (GPU,
xla/backends/gpu/transforms/splitk_rewriter.cc) splitting its K into a new
batch dimension (then `triton-gemm-rewriter` wraps the split dot in a Triton
gemm fusion), or `triton-gemm-rewriter` wrapping an unsplit one. A scan or
loop body is read wherever XLA puts it: in a `while` body directly (jaxlib
0.12.0.1) or in a `call` to a `closed_call` computation inside it (jaxlib
0.10.2). A dump hloprobe cannot read, before every site is placed, makes the
attribution fail with the jaxlib release named (`attribute_passes`): a
later pass would otherwise be named for a rewrite that dump may hold.
`lowering` removes the dump folder.

Cost (real-size programs have hundreds of dumps, most a few lines apart):
a dump whose text is that of a dump read before is not read again. Its
module is that one's, so are its sites' fates (`dot_sites.map_dot_sites`
is a function of the sites and the module), and every site not plain there
was placed then, at that dump or before: reading it again places nothing.
XLA dumps the same text again where a pass changed what it does not print,
and in its fixed-point pipelines, which come back to a module they had
(gpt2_1 on a100 at n = 1, jaxlib 0.12.0.1: 43 of the 163 dumps read before
the last site is placed). The others are read with the lines of the one
before kept (`parse_hlo_module`'s memo), which gives the same records.
And a module whose carriers are those of a module mapped before, but for
the names (`_carriers_key`), is not mapped again: its sites' fates are
that module's but for the names, so it places nothing either (gpt2_1, a100,
n = 1: 9 such classes among those 120 texts; n = 2: 8 among 21). A text
that is one read before but for a one-to-one renaming of its `%names`
(`_unnamed`) is such a module: where the one before had a key, it is not
even parsed (gpt2_12, a100, n = 1: 91 of the 121 texts read). The sites
are matched to each mapped module's carriers through an index
(`identify._CarrierIndex`), in time linear in sites and carriers. What is
left grows as the model's depth: XLA's and the text reader's parse of
each text left (`ir.hlo`) and its carriers (`find_carriers`).

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
from collections.abc import Sequence

from hloprobe.compile import jaxlib_release
from hloprobe.errors import HloParseError, HloprobeError
from hloprobe.ir import (
  HloInstruction,
  HloModule,
  StableHloDot,
  is_attention_target,
  parse_hlo_module,
)
from hloprobe.sites import dot_sites
from hloprobe.sites.operand_ancestry import Concatenation, find_carriers
from hloprobe.sites.site_fate import Fate, MappedSite

__all__ = ["PassAttribution", "attribute_passes"]

_DUMP_RE = re.compile(
  r"^module_(?P<id>\d+)\.(?P<name>.+?)\.(?P<seq>\d{4})\.(?P<pipeline>[^.]+)"
  r"\.after_(?P<pass>[^.]+)(?:\.before_.*)?\.txt$"
)


@dataclasses.dataclass(frozen=True, slots=True)
class PassAttribution:
  """The pass after which a dot site stopped being a plain dot.

  Attributes:
    site: dot site index.
    pass_name: XLA pass name as dumped, e.g. "dot-strength-reduction".
    pipeline: the pass pipeline, e.g. "simplification".
    fate: what the site was right after that pass, e.g. MULTIPLY_REDUCE.
    emitter: a dot's or convolution's emitter where not "top level" (e.g.
      "__ynn_fusion"), else None.
    merged: whether dot-merger had merged it with other sites.
    split_k: its split-K factor, or None where not split.
    Report words the four (`report.site_words.site_json`'s "fate_after":
    "dot in __ynn_fusion", "dot split-K 4", "Triton gemm", "dot (merged)").
  """

  site: int
  pass_name: str
  pipeline: str
  fate: Fate
  emitter: str | None = None
  merged: bool = False
  split_k: int | None = None


def _is_plain(fate: MappedSite) -> bool:
  """Still a plain unsplit, unmerged dot, or not told apart in this dump
  (ambiguous). A dot `dot-merger` made of several sites is not plain: the
  pass that merged them (xla/hlo/transforms/simplifiers/dot_merger.cc) is
  theirs."""
  if fate.fate == Fate.AMBIGUOUS:
    return True
  if is_attention_target(fate.site.op):  # jax's own call: no pass made it
    return fate.fate == Fate.CUDNN_ATTENTION
  if fate.site.is_convolution:  # still an HLO convolution outside fusions
    return fate.fate == Fate.CONV and fate.emitter == "top level"
  return (
    fate.fate == Fate.DOT
    and fate.emitter == "top level"
    and fate.split_k is None
    and fate.merged_with is None
  )


def _attribution(fate: MappedSite, pass_name: str, pipeline: str):
  """What the site was right after pass `pass_name` (`PassAttribution`)."""
  emitter = None
  if fate.fate in (Fate.DOT, Fate.CONV) and fate.emitter != "top level":
    emitter = fate.emitter
  return PassAttribution(
    fate.site.index,
    pass_name,
    pipeline,
    fate.fate,
    emitter,
    fate.merged_with is not None,
    fate.split_k or None,
  )


def _pass_dumps(dumps: Sequence[tuple[str, str]]) -> list[tuple[re.Match, str]]:
  """The after-pass dumps of the compiled module, in sequence order.

  GPU compiles also dump small modules the compiler builds on the side
  (e.g. `fused_reduce` for a kernel); the compiled module is the one with
  the most pass dumps.
  """
  found = [
    (m, text) for m, text in ((_DUMP_RE.match(n), t) for n, t in dumps) if m
  ]
  if not found:
    return []
  module = lambda m: (m.group("id"), m.group("name"))
  counts = collections.Counter(module(m) for m, _ in found)
  main = counts.most_common(1)[0][0]
  mine = [(m, t) for m, t in found if module(m) == main]
  return sorted(mine, key=lambda item: int(item[0].group("seq")))


def attribute_passes(
  dumps: Sequence[tuple[str, str]], sites: list[StableHloDot]
) -> dict[int, PassAttribution]:
  """Names, per site, the first dumped pass after which it is not a plain dot.

  Args:
    dumps: (file name, HLO text) pairs written by XLA with
      `xla_dump_hlo_pass_re=.*` for one compile (`CompiledCase.pass_dumps`).
    sites: the StableHLO dot sites of that module.

  Returns:
    Site index -> attribution, for the sites some pass rewrote; a site that
    stays a plain dot to the end is absent.

  Raises:
    HloprobeError: there are no pass dumps, none is named as XLA names them
      (`_DUMP_RE`), or one cannot be parsed before every site is placed;
      the message names the jaxlib release.
  """
  ordered = _pass_dumps(dumps)
  if not ordered:
    raise HloprobeError(
      "XLA wrote no pass dumps for this compile"
      + (f" ({_unread(len(dumps))})" if dumps else "")
    )
  found: dict[int, PassAttribution] = {}
  memo: dict = {}  # `parse_hlo_module`'s: lines of the dump read last
  read: set[str] = set()  # texts of the dumps read
  keyed: set[bytes] = set()  # `_unnamed` digests of those with a key
  mapped: dict[tuple, list] = {}  # `_carriers_key` -> tables, of those mapped
  for m, text in ordered:
    if len(found) == len(sites):
      break
    if text in read:  # the same module again: the same fates, all placed
      continue
    read.add(text)
    unnamed = _unnamed(text)
    if unnamed in keyed:  # a keyed module again but for the names
      continue
    try:
      module = parse_hlo_module(text, memo)
    except HloParseError as e:
      raise HloprobeError(
        f"pass dump {m.group(0)!r} not read ({e}); {_release_words()}"
      ) from None
    carriers, key = _carriers_key(module)
    if key is not None:
      keyed.add(unnamed)
      if module.tables in mapped.get(key, ()):
        continue
      mapped.setdefault(key, []).append(module.tables)
    for fate in dot_sites.map_dot_sites(sites, module, carriers):
      i = fate.site.index
      if i not in found and not _is_plain(fate):
        found[i] = _attribution(fate, m.group("pass"), m.group("pipeline"))
  return found


# A `%name` of an instruction or computation in HLO text; a compact
# get-tuple-element's `#i` (`ir.hlo_text`) is not part of it.
_NAME_RE = re.compile(r"%[\w.\-]+")


def _unnamed(text: str) -> bytes:
  """A digest of `text` with each `%name` replaced by the order in which
  it first occurs: two texts have one digest (but for a 128-bit collision)
  where they are one text but for a one-to-one renaming of instructions
  and computations. Their modules are one module but for the names, so
  they have one `_carriers_key` and equal `tables` (the tables print no
  `%name`); a keyed module's text digest is kept (`attribute_passes`), so
  such a dump is passed over before it is parsed. Most of the dumps read
  are such (gpt2_12 on a100 at n = 1, jaxlib 0.12.0.1: 91 of the 121
  texts read before the last site is placed), where XLA's passes rename
  what they rewrite and the fixed-point pipelines come back to it.
  """
  names = _NAME_RE.findall(text)
  ids = dict.fromkeys(names)  # in the order each first occurs
  for i, name in enumerate(ids):
    ids[name] = f"%{i}"
  # The text between the names with each name's number between them: the
  # text renamed, without a Python call per name (`re.sub` with one took
  # 0.08 s for a decode a100 compile's 214 dumps, this 0.04).
  between = _NAME_RE.split(text)
  pieces = [""] * (2 * len(between) - 1)
  pieces[::2] = between
  pieces[1::2] = map(ids.__getitem__, names)
  return hashlib.blake2b("".join(pieces).encode(), digest_size=16).digest()


def _carriers_key(module: HloModule) -> tuple[list | None, tuple | None]:
  """What `dot_sites.map_dot_sites` reads of `module`, names left out.

  Two modules with one key and equal `tables` give their sites the same
  fates but for the names (the `carriers`, `candidates` and unknown-reason
  words), so the same sites are plain (`_is_plain`) in both. Why: of a
  module,
  `map_dot_sites` reads (dot_sites.py, identify.py, carrier_shapes.py,
  operand_ancestry.py, fp8_rewrite.py `fp8_carrier_ancestry`) only
    * `operand_ancestry.find_carriers(module)`, in order (`identify._pick`
      ranks them by index and keeps the first), and of each carrier its
      instruction's and enclosing instructions' opcodes, shapes and
      attributes (custom call target, backend config, kind, dimension
      numbers, precision, metadata), its operands' ancestry (a
      `Concatenation`'s parts too) and shapes; names only as names
      (`Carrier.path`, the words above; `is` between carriers);
    * `module.source_frames` of each carrier's instruction, a function of
      its metadata and `module.tables` (which go with the key: see
      `attribute_passes`);
    * `module.partition_count`, and beyond 1 the collectives around a
      carrier (`dot_sites._collective`: any module is then mapped);
    * `dot_sites._unknown_calls(module)`: False under a jaxlib whose rules
      were checked; under another, any module is mapped.
  The key holds all of these but the names (operand names and the
  attributes that name computations, which
  `HloInstruction.attrs_without_calls` leaves out, are what `find_carriers`
  walks: its result is in the key). `find_carriers` is what
  `map_dot_sites` calls first: an error it raises is the one that would.

  Returns:
    (`find_carriers(module)`, the key), or (None, None) where the module is
    to be mapped whatever it holds.
  """
  if module.partition_count != 1 or not jaxlib_release().rules_checked:
    return None, None
  carriers = find_carriers(module)
  return carriers, tuple(
    (
      _instruction_key(c.instruction),
      tuple(_instruction_key(i) for i in c.enclosing),
      tuple(
        (a, a.parts, a.part_elements) if isinstance(a, Concatenation) else a
        for a in c.operand_ancestry
      ),
      c.operand_shapes,
    )
    for c in carriers
  )


def _instruction_key(inst: HloInstruction) -> tuple:
  """An instruction's record but its name, operands and the names of the
  computations it calls."""
  return (
    inst.opcode,
    inst.shape,
    inst.literal,
    inst.is_root,
    inst.attrs_without_calls,
  )


def _release_words() -> str:
  """ "jaxlib 0.12.0.1 (pass dumps read on 0.12.0.1 and 0.10.2)"."""
  release = jaxlib_release()
  return (
    f"jaxlib {release.installed} (pass dumps read on {release.checked_words})"
  )


def _unread(count: int) -> str:
  return (
    f"{count} dump files, none named "
    "module_<id>.<name>.<seq>.<pipeline>.after_<pass>....txt as on "
    f"{_release_words()}"
  )
