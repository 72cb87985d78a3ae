"""Dot sites of a StableHLO module, read from its MLIR text.

Takes the text of `Lowered.as_text(debug_info=True)` (jax 0.10.2) and lists
every `stablehlo.dot_general` as a `StableHloDot`, in program order, once per
call path (a private function called twice gives two sites, as XLA inlines
calls before optimizing). Each site carries the set of entry-function
arguments each operand depends on (its *ancestry*), which survives every
rewrite XLA makes and so lets `dot_sites` find the site again in the
optimized HLO.

Imports no JAX.
"""

from __future__ import annotations

import dataclasses
import re

from hloprobe.errors import HloParseError

__all__ = ["StableHloDot", "TensorType", "parse_stablehlo_dots"]

# MLIR element types -> HLO spellings.
_MLIR_TO_HLO_DTYPE = {
  "i1": "pred",
  "i8": "s8",
  "i16": "s16",
  "i32": "s32",
  "i64": "s64",
  "ui8": "u8",
  "ui16": "u16",
  "ui32": "u32",
  "ui64": "u64",
  "f16": "f16",
  "bf16": "bf16",
  "f32": "f32",
  "f64": "f64",
  "f8E4M3FN": "f8e4m3fn",
  "f8E5M2": "f8e5m2",
  "complex<f32>": "c64",
  "complex<f64>": "c128",
}
_SYMBOL = r'@("[^"]*"|[\w.$\-]+)'  # MLIR symbols: @main, @"<lambda>"
_FUNC_RE = re.compile(
  rf"^func\.func\s+(?:public\s+|private\s+)?{_SYMBOL}\((.*)"
)
_LOC_DEF_RE = re.compile(r"^#(loc\d*)\s*=\s*loc\((.*)\)\s*$")
_LOC_USE_RE = re.compile(r"\sloc\((.*)\)\s*$")
_VALUE_RE = re.compile(r"%[\w.\-$]+")
# `call @f(...)` / `func.call @f(...)`, not `stablehlo.custom_call @target`.
_CALL_RE = re.compile(rf"(?<![\w.])(?:func\.)?call\s+{_SYMBOL}\(([^)]*)\)")
_BIND_RE = re.compile(r"(%[\w.\-$]+)\s*=\s*(%[\w.\-$#]+)")
_TENSOR = r"tensor<[^<>]*(?:<[^<>]*>)?>"  # one nesting level: complex<f32>
_TENSOR_RE = re.compile(r"tensor<((?:\d+x)*)([^<>]*(?:<[^<>]*>)?)>")
_LOC_TOKEN_RE = re.compile(r'"((?:[^"\\]|\\.)*)"(:\d+)?(:\d+)?|#(loc\d*)')


@dataclasses.dataclass(frozen=True, slots=True)
class TensorType:
  """A ranked tensor type in HLO spelling: `f32[48,2]`."""

  dtype: str
  dims: tuple[int, ...]

  def __str__(self) -> str:
    return f"{self.dtype}[{','.join(map(str, self.dims))}]"


@dataclasses.dataclass(frozen=True, slots=True)
class StableHloDot:
  """One `stablehlo.dot_general` on one call path.

  Attributes:
    index: position in program order, from 0.
    function: the MLIR function holding the op.
    location: `file:line` of the innermost source frame, or None.
    lhs, rhs, result: operand and result types.
    lhs_batch, rhs_batch, lhs_contracting, rhs_contracting: dimension numbers.
    precision: the two operand precisions, e.g. ("HIGH", "HIGH").
    algorithm: the `algorithm = <...>` fields as a dict of str, or None.
    lhs_ancestry, rhs_ancestry: indices of the entry function's arguments
      each operand depends on.
    frames: the source stack, innermost frame first, each `file:line:column`
      (the `loc(callsite(...))` chain); () without debug info.
  """

  index: int
  function: str
  location: str | None
  lhs: TensorType
  rhs: TensorType
  result: TensorType
  lhs_batch: tuple[int, ...]
  rhs_batch: tuple[int, ...]
  lhs_contracting: tuple[int, ...]
  rhs_contracting: tuple[int, ...]
  precision: tuple[str, str]
  algorithm: dict[str, str] | None
  lhs_ancestry: frozenset[int]
  rhs_ancestry: frozenset[int]
  frames: tuple[str, ...] = ()

  @property
  def contracting_size(self) -> int:
    """K: the product of the contracting dimension sizes."""
    k = 1
    for d in self.lhs_contracting:
      k *= self.lhs.dims[d]
    return k


def _tensor_type(text: str) -> TensorType:
  body = text.strip()
  m = _TENSOR_RE.fullmatch(body)
  if not m:
    raise HloParseError(
      f"[hloprobe] bad tensor type {text!r}; expected e.g. 'tensor<48x2xf32>'"
    )
  dims, elem = m.group(1).split("x")[:-1], m.group(2)
  if elem not in _MLIR_TO_HLO_DTYPE:
    raise HloParseError(f"[hloprobe] unknown element type {elem!r} in {text!r}")
  return TensorType(_MLIR_TO_HLO_DTYPE[elem], tuple(int(d) for d in dims))


class _Locations:
  """Resolves `loc(...)` expressions to the innermost `file:line`."""

  def __init__(self, defs: dict[str, str]):
    self._defs = defs
    self._memo: dict[str, str | None] = {}

  def resolve(self, expr: str, depth: int = 0) -> str | None:
    if expr not in self._memo:
      self._memo[expr] = self._resolve(expr, depth)
    return self._memo[expr]

  def _resolve(self, expr: str, depth: int) -> str | None:
    found = self.frames(expr, depth)
    return found[0].rsplit(":", 1)[0] if found else None

  def frames(self, expr: str, depth: int = 0) -> tuple[str, ...]:
    """Every `file:line:column` of a location, innermost first.

    `callsite(A at B)` lists A's frames before B's, and a named location
    `"name"(inner)` is its inner one's, so the tokens in textual order,
    with `#locN` references expanded, are the stack innermost first.
    """
    if depth > 64:
      return ()
    out: list[str] = []
    for m in _LOC_TOKEN_RE.finditer(expr):
      if m.group(4) is not None:
        found = self._defs.get(m.group(4))
        out.extend(self.frames(found, depth + 1) if found else ())
      elif m.group(2):
        out.append(f"{m.group(1)}:{m.group(2)[1:]}:{(m.group(3) or ':0')[1:]}")
    return tuple(out)


@dataclasses.dataclass
class _Function:
  name: str
  args: list[str]
  lines: list[str]


def _split_functions(lines: list[str]) -> dict[str, _Function]:
  funcs, current, depth = {}, None, 0
  for raw in lines:
    line = raw.strip()
    if current is None:
      m = _FUNC_RE.match(line)
      if m:
        args = re.findall(r"(%[\w.\-$]+)\s*:", m.group(2).split(") ->")[0])
        current, depth = _Function(m.group(1).strip('"'), args, []), 1
      continue
    if line.startswith("}"):
      depth -= 1
    if depth == 0:
      funcs[current.name] = current
      current = None
      continue
    current.lines.append(line)
    if line.endswith("{"):
      depth += 1
  if current is not None:
    raise HloParseError(
      f"[hloprobe] function @{current.name} is not closed (truncated text?)"
    )
  return funcs


def _dims_pair(text: str, key: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
  m = re.search(rf"{key} = \[([\d, ]*)\] x \[([\d, ]*)\]", text)
  if not m:
    return (), ()
  parse = lambda s: tuple(int(d) for d in s.split(",") if d.strip())
  return parse(m.group(1)), parse(m.group(2))


class _Walker:
  """Walks functions per call path, tracking operand ancestry."""

  def __init__(self, funcs: dict[str, _Function], locs: _Locations):
    self.funcs, self.locs, self.dots = funcs, locs, []

  def walk(self, name: str, arg_anc: list[frozenset[int]], depth: int = 0):
    if depth > 32:
      raise HloParseError(f"[hloprobe] call depth over 32 at @{name}")
    fn = self.funcs.get(name)
    if fn is None:
      raise HloParseError(f"[hloprobe] call to undefined function @{name}")
    env = dict(zip(fn.args, arg_anc))
    returned = frozenset()
    # Ops with regions (while, case, reduce with a body): their results also
    # depend on what the regions return. [result names, returned ancestry].
    open_ops: list[list] = []
    last_results: list[str] = []
    for line in fn.lines:
      if line.startswith("}"):
        if not line.endswith("{") and open_ops:  # "}, {" / "} do {" go on
          names, acc = open_ops.pop()
          for name in names:
            env[name] = env.get(name, frozenset()) | acc
        continue
      kind, results, anc = self._op(fn, line, env, depth)
      if kind == "return":
        returned |= anc
      elif kind == "region_return" and open_ops:
        open_ops[-1][1] |= anc
      last_results = results or last_results
      if line.endswith("{"):  # `%r = "stablehlo.case"(%i) ({` or `cond {`
        open_ops.append([results or last_results, frozenset()])
    return returned

  def _op(self, fn, line, env, depth):
    """Tracks one op; returns (kind, result names, operand ancestry)."""
    loc_m = _LOC_USE_RE.search(line)
    body = line[: loc_m.start()] if loc_m else line
    lhs, eq, rhs = body.partition(" = ")
    if not eq or not lhs.strip().startswith("%"):
      lhs, rhs = "", body
    operands_text = rhs.split(" : ")[0]
    for name, value in _BIND_RE.findall(operands_text):
      env[name] = env.get(value.split("#")[0], frozenset())
    refs = [v.split("#")[0] for v in _VALUE_RE.findall(operands_text)]
    anc = frozenset().union(*(env.get(r, frozenset()) for r in refs))
    call = _CALL_RE.search(rhs)
    if call:
      call_args = [a.split("#")[0] for a in _VALUE_RE.findall(call.group(2))]
      anc = self.walk(
        call.group(1).strip('"'),
        [env.get(a, frozenset()) for a in call_args],
        depth + 1,
      )
    elif "stablehlo.dot_general" in rhs:
      self._dot(fn, rhs, refs, env, loc_m.group(1) if loc_m else None)
    results = [r.split(":")[0] for r in _VALUE_RE.findall(lhs)]
    for result in results:
      env[result] = anc
    op = rhs.lstrip()
    if op.startswith(("return", "func.return")):
      return "return", results, anc
    if op.startswith(("stablehlo.return", '"stablehlo.return"')):
      return "region_return", results, anc
    return None, results, anc

  def _dot(self, fn, rhs, refs, env, loc):
    types = re.search(rf" : \((.*)\) -> ({_TENSOR})", rhs)
    if not types or len(refs) < 2:
      raise HloParseError(f"[hloprobe] malformed dot_general: {rhs[:120]!r}")
    lhs_t, rhs_t = (
      _tensor_type(t) for t in re.findall(_TENSOR, types.group(1))[:2]
    )
    prec = re.search(r"precision = \[(\w+), (\w+)\]", rhs)
    algo = re.search(r"algorithm = <([^>]*)>", rhs)
    lb, rb = _dims_pair(rhs, "batching_dims")
    lc, rc = _dims_pair(rhs, "contracting_dims")
    self.dots.append(
      StableHloDot(
        index=len(self.dots),
        function=fn.name,
        location=self.locs.resolve(loc) if loc else None,
        frames=self.locs.frames(loc) if loc else (),
        lhs=lhs_t,
        rhs=rhs_t,
        result=_tensor_type(types.group(2)),
        lhs_batch=lb,
        rhs_batch=rb,
        lhs_contracting=lc,
        rhs_contracting=rc,
        precision=(prec.group(1), prec.group(2))
        if prec
        else ("DEFAULT", "DEFAULT"),
        algorithm=dict(re.findall(r"(\w+) = (\w+)", algo.group(1)))
        if algo
        else None,
        lhs_ancestry=env.get(refs[0], frozenset()),
        rhs_ancestry=env.get(refs[1], frozenset()),
      )
    )


def parse_stablehlo_dots(text: str) -> list[StableHloDot]:
  """Lists the dot_general sites of a StableHLO module in program order.

  Args:
    text: MLIR text of the module, ideally with `debug_info=True` so that
      sites carry source locations.

  Returns:
    One `StableHloDot` per dot_general per call path from `@main`.

  Raises:
    HloParseError: the text has no `@main`, a function is not closed, or a
      dot_general line cannot be read.
  """
  lines = text.splitlines()
  defs = {}
  for line in lines:
    m = _LOC_DEF_RE.match(line.strip())
    if m:
      defs[m.group(1)] = m.group(2)
  funcs = _split_functions(lines)
  if "main" not in funcs:
    raise HloParseError("[hloprobe] StableHLO text has no @main function")
  walker = _Walker(funcs, _Locations(defs))
  main = funcs["main"]
  walker.walk("main", [frozenset({i}) for i in range(len(main.args))])
  return walker.dots
