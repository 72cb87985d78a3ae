"""A compile XLA rejected, as a finding: which dot sites, which pass or rule.

XLA's error for a dot it cannot compile names an algorithm, at best, not the
dot nor the pass: "INVALID_ARGUMENT: Unsupported dot precision algorithm: 4".
`explain_rejection` reads a `compile.Rejection` (the StableHLO, XLA's whole
message and the module after every pass that completed) and names:

  the rule: from the message, by the XLA code that writes it (`_RULES`,
    each read in openxla/xla and seen on jaxlib 0.12.0.1's compile-only
    a100; the first also on jaxlib 0.10.2's):
    * "Unsupported dot precision algorithm: N": dot strength reduction
      (xla/service/gpu/transforms/algebraic_simplifier.cc,
      `GpuAlgebraicSimplifierVisitor::MakeMultiplyForPrecisionAlgorithm`)
      has no multiply for algorithm N (the `PrecisionConfig.Algorithm`
      number, xla/xla_data.proto): F16_F16_F32 and the other 16-bit
      accumulations (seed_mlp under F16_F16_F32 on the a100, any n);
    * "Unsupported algorithm on the current device(s): ALG_DOT_X": the
      `algorithm-checker` pass (xla/service/gpu/transforms/
      algorithm_checker.cc, `algorithm_util::IsSupportedDotAlgorithmOnGpu`
      for the target's compute capability);
    * "Algorithm not supported by the ElementalIrEmitter: ALG_DOT_X": the
      loop emitter's `EmitDot` (xla/codegen/emitters/
      elemental_hlo_to_mlir.cc), for a dot XLA left to a loop fusion (a
      matrix-vector dot under `--xla_disable_hlo_passes=
      dot-strength-reduction` with TF32_TF32_F32, say);
    * "RET_CHECK failure (file:line) ...": that file and line;
    and otherwise "a pass after X", X the last pass whose change XLA
    dumped (`after_<pass>` in the dumps' names).
  the sites: the message's source line (jaxlib 0.12.0.1 prints "Suspected
    Python Code Location:" and the op's stack) or instruction name where
    it prints one; else the sites whose declared algorithm is the rejected
    one (for the loop emitter, only those the last dumped module still
    holds as plain dots, outside a gemm); () when neither tells.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import dataclasses
import re

from hloprobe.compile import Rejection
from hloprobe.ir import (
  ALGORITHMS,
  parse_hlo_module,
  parse_stablehlo_dots,
)
from hloprobe.sites.dot_sites import map_dot_sites
from hloprobe.sites.identify import site_algorithm
from hloprobe.sites.site_fate import Fate

__all__ = ["CompileFinding", "explain_rejection"]

# xla/xla_data.proto PrecisionConfig.Algorithm numbers.
_ALGORITHM_NUMBERS = {
  3: "F16_F16_F16",
  4: "F16_F16_F32",
  5: "BF16_BF16_BF16",
  6: "BF16_BF16_F32",
  7: "BF16_BF16_F32_X3",
  8: "BF16_BF16_F32_X6",
  9: "TF32_TF32_F32",
  10: "TF32_TF32_F32_X3",
  11: "F32_F32_F32",
  12: "F64_F64_F64",
  13: "BF16_BF16_F32_X9",
}
# (message pattern, the rule's words, whether only plain dots are
# concerned); the pattern's group "alg" is the algorithm's number or name.
_RULES = (
  (
    r"Unsupported dot precision algorithm: (?P<alg>\d+)",
    "dot strength reduction (xla/service/gpu/transforms/"
    "algebraic_simplifier.cc MakeMultiplyForPrecisionAlgorithm): no "
    "multiply for this algorithm",
    False,
  ),
  (
    r"Unsupported algorithm on the current device\(s\): ALG_DOT_(?P<alg>\w+)",
    "pass algorithm-checker (xla/service/gpu/transforms/"
    "algorithm_checker.cc): the algorithm is not supported on this GPU",
    False,
  ),
  (
    r"Algorithm not supported by the ElementalIrEmitter: ALG_DOT_(?P<alg>\w+)",
    "the loop emitter (xla/codegen/emitters/elemental_hlo_to_mlir.cc "
    "EmitDot): a dot left to a loop fusion cannot run this algorithm",
    True,
  ),
)
_RET_CHECK = re.compile(r"RET_CHECK failure \((?P<where>[^)\s]+:\d+)\)")
# `lowering`'s pass dumps: module_<id>.<name>.<seq>.<pipeline>.after_<pass>
# .before_<next>.txt (xla/service/dump.cc; as `passes` reads them).
_DUMP_NAME = re.compile(
  r"\.(?P<seq>\d{4})\.(?P<pipeline>[^.]+)\.after_(?P<after>[^.]+)"
)
# The first (innermost) frame after "Suspected Python Code Location:".
_SOURCE_FRAME = re.compile(
  r"Suspected Python Code Location:\s*(?P<frame>\S+\.py:\d+:\d+)"
)


@dataclasses.dataclass(frozen=True, slots=True)
class CompileFinding:
  """Which dot sites XLA rejected, and the pass or rule that did.

  Attributes:
    sites: dot site indices, in order; () when nothing names them.
    algorithm: the rejected algorithm as a preset name, or None.
    rule: the pass, the XLA function (file) or the RET_CHECK's file:line
      that rejected the compile; "unknown" when nothing tells.
    how: how the sites were found: "message" (XLA's message names them),
      "algorithm" (the sites that declare the rejected algorithm) or
      "none".
  """

  sites: tuple[int, ...]
  algorithm: str | None
  rule: str
  how: str


def _algorithm(text: str) -> str | None:
  if text.isdigit():
    return _ALGORITHM_NUMBERS.get(int(text))
  return text if text in ALGORITHMS else None


def _in_order(dumps) -> list[tuple[str, str, re.Match]]:
  """The pass dumps in XLA's sequence order: (name, text, name's match)."""
  found = [(n, t, m) for n, t in dumps if (m := _DUMP_NAME.search(n))]
  return sorted(found, key=lambda x: int(x[2]["seq"]))


def _last_module(dumps) -> str | None:
  ordered = _in_order(dumps)
  return ordered[-1][1] if ordered else None


def _last_pass(dumps) -> str | None:
  """ "after pass X (pipeline P), the last change XLA dumped" or None.

  XLA dumps a module only after a pass that changed it
  (`xla_dump_hlo_pass_re`), so the pass that failed is this one's
  successor or a later one; the dump's `before_` names only the next pass
  in the pipeline, which may have run without a change.
  """
  ordered = _in_order(dumps)
  if not ordered:
    return None
  m = ordered[-1][2]
  return (
    f"a pass after {m['after']} ({m['pipeline']} pipeline), the last change "
    "XLA dumped"
  )


def _named_in_message(message: str, sites, dumps) -> tuple[int, ...]:
  """Sites XLA's message names: by its innermost source frame (jaxlib
  0.12.0.1 prints "Suspected Python Code Location:" and the op's stack,
  innermost first, `file:line:column [function]`), else by an instruction
  name the last dumped module maps to a site."""
  frame = _SOURCE_FRAME.search(message)
  if frame is not None:
    exact = frame["frame"]
    line = exact.rsplit(":", 1)[0]
    found = [s.index for s in sites if s.frames and s.frames[0] == exact]
    found = found or [s.index for s in sites if s.location == line]
    if found:
      return tuple(found)
  text = _last_module(dumps)
  names = set(re.findall(r"%([\w.-]+)", message))
  if text is None or not names:
    return ()
  mapped = map_dot_sites(list(sites), parse_hlo_module(text))
  return tuple(
    m.site.index for m in mapped if names.intersection(m.carriers or ())
  )


def _plain_in_last_module(sites, dumps, wanted) -> tuple[int, ...]:
  """Of `wanted`, the sites the last dumped module holds as plain dots
  (Fate.DOT, not in a gemm); `wanted` itself without a dump."""
  text = _last_module(dumps)
  if text is None:
    return wanted
  mapped = map_dot_sites(list(sites), parse_hlo_module(text))
  plain = {m.site.index for m in mapped if m.fate == Fate.DOT}
  return tuple(i for i in wanted if i in plain) or wanted


def explain_rejection(rejection: Rejection) -> CompileFinding:
  """The finding of a rejected compile (module docstring).

  Never raises for an unexpected message: what cannot be told is "unknown"
  (rule) or () (sites).
  """
  sites = parse_stablehlo_dots(rejection.stablehlo)
  message, dumps = rejection.message, rejection.pass_dumps
  algorithm, rule, plain_only = None, None, False
  for pattern, words, only_plain in _RULES:
    m = re.search(pattern, message)
    if m:
      algorithm, rule, plain_only = _algorithm(m["alg"]), words, only_plain
      break
  if rule is None and (m := _RET_CHECK.search(message)):
    rule = f"RET_CHECK at {m['where']}"
    if (after := _last_pass(dumps)) is not None:
      rule = f"{rule}, in {after}"
  rule = rule or _last_pass(dumps) or "unknown"
  named = _named_in_message(message, sites, dumps)
  if named:
    return CompileFinding(named, algorithm, rule, "message")
  declared = tuple(s.index for s in sites if site_algorithm(s) == algorithm)
  if algorithm is None or not declared:
    return CompileFinding((), algorithm, rule, "none")
  if plain_only:
    declared = _plain_in_last_module(sites, dumps, declared)
  return CompileFinding(declared, algorithm, rule, "algorithm")
