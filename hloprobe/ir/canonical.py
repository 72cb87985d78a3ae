"""Canonical text of optimized HLO and StableHLO, for goldens and diffs.

Two compilations of the same program that differ only in names, source
paths or bookkeeping must canonicalize to the same text, and a change in
anything that can change numerics must survive canonicalization.

Optimized HLO (`canonical_hlo`), parsed with `hlo`:
  dropped   `metadata={...}` (op_name, source file and line, stack frame),
            the FileNames / FunctionNames / FileLocations / StackFrames
            tables, `/*index=N*/` comments, and the backend_config keys in
            `NOISE_BACKEND_CONFIG_KEYS`;
  renamed   computations are named `<stem>.<k>` in the order a depth-first
            walk from ENTRY first reaches them, and printed callees first
            (post-order); instructions are named `<stem>.<k>` in printed
            order, per computation. The stem is XLA's name without its
            numeric and `.clone` suffixes (`fused_computation.3` ->
            `fused_computation`), so names stay readable;
  kept      opcodes, shapes, layouts, operand order, operand_precision,
            algorithm, fusion kinds, custom-call targets, every other
            backend_config key (gemm and Triton tile configs), shardings,
            frontend attributes, and the module header.

StableHLO (`canonical_stablehlo`): `loc(...)` suffixes and `#loc` alias
lines are dropped. SSA values are not renumbered: MLIR's printer already
numbers them by position (`%0`, `%cst_0`), so renumbering would change
nothing.

`canonical_text(kind, text)` is the stage's one entry to both: the kind
names which of the two forms to make.

Both functions are idempotent: canonicalizing canonical text returns it
unchanged. The output is for reading and comparing, not a serialization XLA
promises to parse back. Imports no JAX.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from hloprobe.ir.hlo import (
  HloComputation,
  HloInstruction,
  HloModule,
  parse_hlo_module,
)

__all__ = [
  "DROPPED_ATTRS",
  "NOISE_BACKEND_CONFIG_KEYS",
  "canonical_hlo",
  "canonical_stablehlo",
  "canonical_text",
  "name_stem",
]

# Instruction attributes that carry no numerics: where an op came from.
DROPPED_ATTRS = frozenset({"metadata"})

# backend_config keys (at any depth of the JSON) that carry no numerics:
# scheduling and cost bookkeeping of XLA GPU's GpuBackendConfig
# (xla/service/gpu/backend_configs.proto, checked on jaxlib 0.10.2 and
# 0.12.0.1: the goldens made with each). One list,
# in one place: a key left out here shows up in golden diffs.
NOISE_BACKEND_CONFIG_KEYS = frozenset(
  {
    "operation_queue_id",
    "wait_on_operation_queues",
    "force_earliest_schedule",
    "reification_cost",
    "device_type",
  }
)

_NAME_SUFFIX_RE = re.compile(r"\.(?:\d+|clone)(?=[._\-]|$)")
_INDEX_COMMENT_RE = re.compile(r"/\*index=\d+\*/")
_REF_RE = re.compile(r"%([\w.\-]+)")


def name_stem(name: str) -> str:
  """XLA's name without numeric and `.clone` suffixes: `dot.5` -> `dot`."""
  return _NAME_SUFFIX_RE.sub("", name) or name


def _numbered(names: list[str]) -> dict[str, str]:
  """Maps each name to `<stem>.<k>`, k counting per stem in list order."""
  counts: dict[str, int] = {}
  out = {}
  for name in names:
    stem = name_stem(name)
    out[name] = f"{stem}.{counts.get(stem, 0)}"
    counts[stem] = counts.get(stem, 0) + 1
  return out


def _computation_order(module: HloModule) -> tuple[list[str], list[str]]:
  """(first-reached order, callees-first order) of a walk from ENTRY.

  Computations no instruction reaches follow, in printed order.
  """
  reached: list[str] = []
  post: list[str] = []

  def visit(name: str) -> None:
    reached.append(name)
    for inst in module.computations[name].instructions:
      for called in inst.called_computations:
        if called in module.computations and called not in reached:
          visit(called)
    post.append(name)

  visit(module.entry_name)
  for name in module.computations:
    if name not in reached:
      visit(name)
  return reached, post


def _clean_json(value):
  """Drops `NOISE_BACKEND_CONFIG_KEYS` at every depth of a JSON value."""
  if isinstance(value, dict):
    return {
      k: _clean_json(v)
      for k, v in value.items()
      if k not in NOISE_BACKEND_CONFIG_KEYS
    }
  if isinstance(value, list):
    return [_clean_json(v) for v in value]
  return value


def _backend_config(raw: str) -> str | None:
  """The backend_config text without noise keys; None when nothing is left."""
  try:
    text = json.loads(raw) if raw.startswith('"') else raw
    value = json.loads(text)
  except (json.JSONDecodeError, RecursionError, TypeError):
    return raw  # not JSON: keep it as printed
  value = _clean_json(value)
  if value in ({}, [], None):
    return None
  return json.dumps(value, separators=(",", ":"))


def _attrs(
  inst: HloInstruction, insts: Mapping[str, str], comps: Mapping[str, str]
) -> dict[str, str]:
  """Attributes with noise dropped and `%name` references renamed."""
  called = set(inst.called_computations)

  def rename(m: re.Match) -> str:
    name = m.group(1)
    if name in called:
      return "%" + comps.get(name, name)
    return "%" + insts.get(name, comps.get(name, name))

  out = {}
  for key, value in inst.attrs.items():
    if key in DROPPED_ATTRS:
      continue
    if key == "backend_config":
      value = _backend_config(value)
      if value is None:
        continue
    else:
      value = _REF_RE.sub(rename, _INDEX_COMMENT_RE.sub("", value))
    out[key] = value
  return out


def _signature(comp: HloComputation, names: Mapping[str, str]) -> str:
  params = sorted(comp.parameters().items())
  args = ", ".join(f"{names[p.name]}: {p.shape}" for _, p in params)
  return f"({args}) -> {comp.root.shape}"


def _computation_text(
  comp: HloComputation, comp_name: str, comps: Mapping[str, str]
) -> list[str]:
  insts = _numbered([i.name for i in comp.instructions])
  entry = "ENTRY " if comp.is_entry else ""
  lines = [f"{entry}%{comp_name} {_signature(comp, insts)} {{"]
  for inst in comp.instructions:
    renamed = HloInstruction(
      inst.name,
      inst.opcode,
      inst.shape,
      inst.operands,
      inst.literal,
      _attrs(inst, insts, comps),
      inst.is_root,
    )
    lines.append("  " + renamed.to_text(rename=insts))
  lines.append("}")
  return lines


def canonical_hlo(text: str) -> str:
  """Canonical text of an HLO module (see the module docstring).

  Args:
    text: HLO text as `Compiled.as_text()` prints it, or canonical text.

  Returns:
    The canonical text, ending in a newline.

  Raises:
    HloParseError: the text is not an HLO module.
  """
  module = parse_hlo_module(text)
  reached, post = _computation_order(module)
  comps = _numbered(reached)
  header = _INDEX_COMMENT_RE.sub("", module.header_attrs)
  lines = [f"HloModule {module.name}" + (f", {header}" if header else ""), ""]
  for name in post:
    lines += _computation_text(module.computations[name], comps[name], comps)
    lines.append("")
  return "\n".join(lines[:-1]) + "\n"


def _loc_end(line: str, open_at: int) -> int:
  """Index just past the `)` closing the `(` at `open_at`, strings aware."""
  depth, in_str, i = 0, False, open_at
  while i < len(line):
    c = line[i]
    if in_str and c == "\\":
      i += 1  # skip the escaped character
    elif c == '"':
      in_str = not in_str
    elif not in_str and c == "(":
      depth += 1
    elif not in_str and c == ")":
      depth -= 1
      if depth == 0:
        return i + 1
    i += 1
  return len(line)


def _strip_locs(line: str) -> str:
  """Removes every ` loc(...)` of one MLIR line, outside string literals."""
  out, i, in_str = [], 0, False
  while i < len(line):
    c = line[i]
    if (
      not in_str
      and line.startswith("loc(", i)
      and (i == 0 or line[i - 1] in " \t(,")
    ):
      i = _loc_end(line, i + 3)
      while out and out[-1] in " \t":
        out.pop()
      continue
    if c == "\\" and in_str:
      out.append(line[i : i + 2])
      i += 2
      continue
    in_str = in_str != (c == '"')
    out.append(c)
    i += 1
  return "".join(out).rstrip()


def canonical_stablehlo(text: str) -> str:
  """Canonical text of a StableHLO module: no `loc(...)`, no `#loc` lines.

  Args:
    text: MLIR text as `Lowered.as_text()` prints it (with or without
      `debug_info`), or canonical text.

  Returns:
    The canonical text, ending in a newline.
  """
  lines = []
  for raw in text.splitlines():
    if raw.lstrip().startswith("#loc"):
      continue
    line = _strip_locs(raw)
    if line.strip():
      lines.append(line)
  return "\n".join(lines) + "\n"


def canonical_text(kind: str, text: str) -> str:
  """Canonical text of one compiler text, of the given kind.

  Args:
    kind: "hlo" (optimized HLO, `canonical_hlo`) or "stablehlo"
      (StableHLO MLIR text, `canonical_stablehlo`).
    text: the text, as `canonical_hlo` / `canonical_stablehlo` take it.

  Returns:
    The canonical text, ending in a newline.

  Raises:
    ValueError: `kind` is neither "hlo" nor "stablehlo".
    HloParseError: kind "hlo" and the text is not an HLO module.
  """
  if kind == "hlo":
    return canonical_hlo(text)
  if kind == "stablehlo":
    return canonical_stablehlo(text)
  raise ValueError(f"canonical_text: unknown kind {kind!r}")
