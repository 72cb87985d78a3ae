"""Contraction sites over the StableHLO graph in Google's Model Explorer.

Needs the `explorer` extra (`pip install 'hloprobe[explorer]'`, PyPI
`ai-edge-model-explorer`, 0.1.34 checked). `write_overlay` writes, per
config, the StableHLO module as `<stem>.mlir` and node-data JSON files
built with Model Explorer's own `node_data_builder`:

  <stem>.fate.json       text: the site's fate ("Triton gemm split-K 4").
  <stem>.algorithm.json  text: its effective algorithm ("TF32_TF32_F32").
  <stem>.pass.json       text: the XLA pass that rewrote it (with
                         --explain_passes), "no pass" or "unknown".
  <stem>.error.json      number: predicted |row 0 - float64 row 0| with only
                         this site at its effective algorithm (the site's
                         `predict.SiteShare.alone_abs`), 3 significant
                         digits; a site without a share adds nothing
                         measurable above the f32 noise floor and gets the
                         noise floor, but a non-F32 site whose share was
                         not computed (a large program's shares by groups,
                         `Prediction.unshared_sites`) gets no number, and
                         its fate text says so. Coloured green up to
                         NOISE_FACTOR x the noise floor, amber up to 100x,
                         red above. A config that ran names its observed
                         error too.
  <stem>.math.json       text, where what XLA made was checked
                         (`numerics.made`): at a site an "XLA changed the
                         math" verdict names, the instruction and its
                         fields, red; elsewhere "as the program asks"
                         (green) or "not executed: <target>" (grey).
                         Loaded last, so it colours the graph, where the
                         math changed; before the error otherwise.

and `model_explorer.json`, the index `view` reads (`explorer_view`): per
config its files, its sites' nodes, how far it strays beyond its band
("beyond", `severity.beyond_band`; null where not compared) and its worst
site ("worst_site": the prediction's top site, whose error share is the
largest; null where none stands out), so `view` opens on the config with
the worst finding, at that site. <stem> is
`<target>-<case>-n<N>-<precision>[-<experiment>]`.

Node ids are the ones Model Explorer's MLIR adapter
(`model_explorer.builtin_mlir_adapter.BuiltinMlirAdapter`, the C++
converter in `ai_edge_model_explorer_adapter`) gives the
`stablehlo.dot_general` and `stablehlo.convolution` ops, and the
`stablehlo.custom_call`s of cuDNN fused attention, of the written
file: the adapter makes one graph per MLIR function (graph id = function
name) and lists ops in program order, so the k-th site of a function
(counted per call, as `stablehlo_parse` counts call paths; dots,
convolutions and attention calls together) is the k-th such node of that
graph. Each pairing is checked against the node's own output shape and
precision attributes; a site that does not match is left out and named in
the index ("unmapped"), never guessed.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import threading
from collections.abc import Iterator, Sequence

from hloprobe.errors import HloprobeError, InvalidArgumentError
from hloprobe.ir import is_attention_target, parse_precision_config, path_part
from hloprobe.numerics import NOISE_FACTOR
from hloprobe.pictures import severity
from hloprobe.report import atomic_write

__all__ = [
  "INDEX_NAME",
  "MAX_MODELS",
  "NodeRef",
  "adapter_dot_nodes",
  "import_explorer",
  "load_index",
  "map_sites",
  "quiet_adapter",
  "write_overlay",
]

INDEX_NAME = "model_explorer.json"
MAX_MODELS = 10  # Model Explorer 0.1.34's "up to 10 in total"
# The site ops' labels: dots and convolutions are numbered together in
# program order (`ir.parse_stablehlo_dots`), as the adapter lists them.
_SITE_LABELS = ("stablehlo.dot_general", "stablehlo.convolution")
# In this order in Model Explorer's side panel; the last loaded colours the
# graph, so the error comes last.
_OVERLAYS = ("fate", "algorithm", "pass", "error")
_TITLES = {
  "fate": "fate (hloprobe)",
  "algorithm": "effective algorithm (hloprobe)",
  "pass": "XLA pass (hloprobe)",
  "error": "row-0 error, this site alone (hloprobe, predicted)",
  "math": "what XLA made (hloprobe, the optimized module executed)",
}
# The changed-math label's words: a changed-math verdict's
# (`report.verdict_words.CHANGED`; tests/report/explain_made_test.py
# holds them equal).
_CHANGED = "XLA changed the math"
_CHANGED_COLOUR, _NOT_EXECUTED_COLOUR, _AS_ASKED_COLOUR = (
  "#e53935",
  "#e0e0e0",
  "#a5d6a7",
)


class _MathWords(str):
  """A "math" overlay value: its words, and its colour as a field (chosen
  where the value is made, from `Made`'s fields, never read back from the
  words)."""

  colour: str

  def __new__(cls, words: str, colour: str):
    self = super().__new__(cls, words)
    self.colour = colour
    return self

  def __getnewargs__(self):
    # Copies and pickles (the served page's state) make it anew with both.
    return (str(self), self.colour)


def import_explorer():
  """Model Explorer's package, its MLIR adapter and node-data builder
  modules, or one clear error.

  Raises:
    HloprobeError: Model Explorer is not installed (says how to install).
  """
  try:
    import model_explorer
    from model_explorer import builtin_mlir_adapter, node_data_builder
  except ImportError as e:
    raise HloprobeError(
      "--model_explorer and `view` need Model Explorer: `make full` "
      "installs it (hloprobe's extra `explorer`: pip install "
      "'hloprobe[explorer]')"
    ) from e
  return model_explorer, builtin_mlir_adapter, node_data_builder


_QUIET = threading.Lock()


@contextlib.contextmanager
def quiet_adapter() -> Iterator[None]:
  """Runs a block of Model Explorer's adapter without the log lines its C++
  library writes to stderr at its first conversion (`startup.STARTUP_NOISE`:
  absl's and TensorFlow's oneDNN line, not hloprobe's); anything else
  written is kept. One block at a time (it redirects the process's file
  descriptor 2: `view` converts in the server's threads)."""
  from hloprobe.startup import quiet_startup

  with _QUIET, quiet_startup():
    yield


@dataclasses.dataclass(frozen=True, slots=True)
class NodeRef:
  """A node of Model Explorer's graph: graph id (MLIR function) and node id."""

  graph: str
  node: str


def adapter_dot_nodes(mlir_path: str) -> dict[str, list[dict]]:
  """Runs Model Explorer's MLIR adapter on a file; its site nodes.

  Returns:
    graph id -> the graph's `stablehlo.dot_general` and
    `stablehlo.convolution` nodes (the adapter's
    JSON dicts: "id", "label", "attrs", "outputsMetadata", ...) in the
    adapter's order.

  Raises:
    HloprobeError: Model Explorer is missing or cannot read the file.
  """
  _, adapters, _ = import_explorer()
  try:
    with quiet_adapter():
      graphs = adapters.BuiltinMlirAdapter().convert(mlir_path, {})
  except Exception as e:  # the C++ converter raises RuntimeError and others
    raise HloprobeError(
      f"Model Explorer's MLIR adapter cannot read {mlir_path}: {e}"
    ) from e
  out: dict[str, list[dict]] = {}
  for collection in graphs["graphCollections"]:
    for graph in collection.graphs:
      graph = graph if isinstance(graph, dict) else dataclasses.asdict(graph)
      out[graph["id"]] = [n for n in graph["nodes"] if _is_site_node(n)]
  return out


def _is_site_node(node: dict) -> bool:
  """A dot or convolution node, or a cuDNN fused attention call's."""
  if node.get("label") in _SITE_LABELS:
    return True
  attrs = {a.get("key"): str(a.get("value")) for a in node.get("attrs", [])}
  target = attrs.get("call_target_name", "").strip('"')
  return is_attention_target(target) and "custom_call" in node["label"]


def _matches(site, node: dict) -> bool:
  """The node has the site's result dims and operand precisions (an
  attention call's first result is the site's; it states no precision)."""
  shapes = [
    a["value"]
    for m in node.get("outputsMetadata", [])
    for a in m.get("attrs", [])
    if a.get("key") == "tensor_shape"
  ]
  attrs = {a.get("key"): str(a.get("value")) for a in node.get("attrs", [])}
  dims = [tuple(int(d) for d in re.findall(r"(\d+)x", s)) for s in shapes]
  precision = parse_precision_config(attrs.get("precision_config"))
  if is_attention_target(site.op):
    return dims[:1] == [site.result.dims]
  return dims == [site.result.dims] and precision == tuple(site.precision)


def map_sites(fates, nodes: dict[str, list[dict]]) -> dict[int, NodeRef]:
  """Contraction site index -> its node in the adapter's graph (see module doc).

  Args:
    fates: a config's `dot_sites.SiteFate`s (program order, per call path).
    nodes: `adapter_dot_nodes` of the config's own StableHLO file.

  Returns:
    The sites whose pairing is confirmed by shape and precision; others are
    absent.
  """
  seen: dict[str, int] = {}
  found = {}
  for f in fates:
    graph = f.site.function.strip('"')
    k = seen.get(graph, 0)
    seen[graph] = k + 1
    candidates = nodes.get(graph, [])
    if candidates:
      node = candidates[k % len(candidates)]
      if _matches(f.site, node):
        found[f.site.index] = NodeRef(graph, str(node["id"]))
  return found


def _site_values(r) -> dict[str, dict[int, object]]:
  """Per overlay name, site index -> its value (number or words)."""
  p, comp = r.prediction, r.compilation
  shares = {s.site: s.alone_abs for s in (p.shares if p else ())}
  unshared = set(p.unshared_sites) if p else set()
  by = comp.passes or {}
  out: dict[str, dict[int, object]] = {name: {} for name in _OVERLAYS}
  for f in comp.fates:
    i = f.site.index
    if p is not None and i not in unshared:  # 3 significant digits
      out["error"][i] = float(f"{shares.get(i, p.noise.row0_abs):.3g}")
    out["fate"][i] = f.fate.value + (
      f" split-K {f.split_k}" if f.split_k else ""
    )
    if merged := f.merge_words():
      out["fate"][i] += f" ({merged})"
    if i in unshared:
      out["fate"][i] += "; error alone not computed (shares by groups)"
    out["algorithm"][i] = f.effective_algorithm or "unknown"
    if comp.passes is None:
      out["pass"][i] = "unknown (run with --explain_passes)"
    else:
      out["pass"][i] = (
        f"{by[i].pass_name} ({by[i].pipeline})" if i in by else "no pass"
      )
  return _with_math(r, out)


def _with_math(r, out: dict) -> dict:
  """`out` with the "math" overlay where what XLA made was checked: last
  (it colours the graph) where the math changed, else before "error"."""
  m = r.made
  if m is None:
    return out
  named = {c.site: c for c in m.changes if c.site is not None}
  words = _MathWords("as the program asks", _AS_ASKED_COLOUR)
  if not m.complete:
    words = _MathWords(
      f"not executed: {', '.join(m.not_executed)}", _NOT_EXECUTED_COLOUR
    )
  values = {}
  for f in r.compilation.fates:
    c = named.get(f.site.index) if m.changed else None
    values[f.site.index] = (
      _MathWords(
        f"{_CHANGED}: {c.target} ({c.fields})"
        + (f": {c.rule}" if c.rule else ""),
        _CHANGED_COLOUR,
      )
      if c is not None
      else words
    )
  if m.changed:
    return out | {"math": values}
  error = out.pop("error")
  return out | {"math": values, "error": error}


def _overlay_title(r, name: str) -> str:
  s = r.execution and r.execution.stats
  observed = s.row0_abs if s and name == "error" else None
  seen = "" if observed is None else f"; observed, whole config: {observed:.2e}"
  return _TITLES[name] + seen


# Text overlays colour their nodes too, so whichever overlay Model Explorer
# shows first the graph says something: algorithms by how far they round
# (F32 green, TF32 amber, BF16 red), fates and passes by a fixed palette.
_ALGORITHM_COLOURS = (
  ("BF16", "#ef9a9a"),
  ("TF32", "#ffcc80"),
  ("F32", "#a5d6a7"),
)
_PALETTE = ("#90caf9", "#ffcc80", "#ce93d8", "#a5d6a7", "#ef9a9a", "#80cbc4")


def _colour(name: str, value, palette: dict) -> str | None:
  """A text value's background colour (None for numbers: thresholds do)."""
  if not isinstance(value, str):
    return None
  if name == "algorithm":
    return next((c for key, c in _ALGORITHM_COLOURS if key in value), "#e0e0e0")
  if name == "math":
    return getattr(value, "colour", _AS_ASKED_COLOUR)
  return palette.setdefault(value, _PALETTE[len(palette) % len(_PALETTE)])


def _node_data(r, name: str, values: dict[int, object], refs) -> object:
  """One overlay as a `node_data_builder.ModelNodeData`."""
  _, _, ndb = import_explorer()
  graphs: dict[str, dict[str, object]] = {}
  for site, value in values.items():
    if site not in refs:
      continue
    ref = refs[site]
    held = graphs.setdefault(ref.graph, {})
    old = held.get(ref.node)  # a function called twice: one node, two sites
    if old is not None and isinstance(value, float):
      value = max(old, value)
    elif old is not None and old != value:
      value = f"{old} / {value}"
    held[ref.node] = value
  thresholds = []
  if name == "error" and r.prediction is not None:
    noise = r.prediction.noise.row0_abs
    thresholds = [
      ndb.ThresholdItem(value=NOISE_FACTOR * noise, bgColor="#a5d6a7"),
      ndb.ThresholdItem(value=100 * noise, bgColor="#ffcc80"),
      ndb.ThresholdItem(value=1e300, bgColor="#ef9a9a"),
    ]
  palette: dict[str, str] = {}
  return ndb.ModelNodeData(
    graphsData={
      graph: ndb.GraphNodeData(
        name=_overlay_title(r, name),
        results={
          node: ndb.NodeDataResult(value=v, bgColor=_colour(name, v, palette))
          for node, v in held.items()
        },
        thresholds=thresholds,
      )
      for graph, held in graphs.items()
    }
  )


def _stem(r) -> str:
  c = r.config
  suffix = "" if c.experiment == "baseline" else f"-{c.experiment}"
  # One file name, inside the folder whatever the case is named.
  return path_part(f"{c.target.name}-{c.case}-n{c.n}-{c.precision}{suffix}")


def _write_config(r, out_dir: str) -> dict:
  """One config's .mlir and overlays; its index entry."""
  stem = _stem(r)
  mlir = os.path.join(out_dir, f"{stem}.mlir")
  fates = r.compilation.fates
  atomic_write(mlir, r.compilation.stablehlo)
  refs = map_sites(fates, adapter_dot_nodes(mlir))
  node_data = {}
  for name, values in _site_values(r).items():
    path = os.path.join(out_dir, f"{stem}.{name}.json")
    data = _node_data(r, name, values, refs)
    atomic_write(path, data.to_json_string(indent=2) + "\n")
    node_data[name] = os.path.basename(path)
  return {
    "case": r.config.case,
    "target": r.config.target.name,
    "n": r.config.n,
    "precision": r.config.precision,
    "experiment": r.config.experiment,
    "model": os.path.basename(mlir),
    "node_data": node_data,
    "sites": {str(i): dataclasses.asdict(ref) for i, ref in refs.items()},
    "unmapped": [f.site.index for f in fates if f.site.index not in refs],
    "beyond": _finite(severity.beyond_band(r)),
    "worst_site": _worst_site(r, refs),
  }


def _finite(m: float | None) -> float | None:
  """m for JSON (which has no infinity): the largest float for inf."""
  return None if m is None else min(m, sys.float_info.max)


def _worst_site(r, refs) -> int | None:
  """The prediction's top site (largest error share) where it has a node."""
  p = r.prediction
  top = p.top_site if p is not None else None
  return top if top in refs else None


def write_overlay(results: Sequence, out_dir: str) -> list[str]:
  """Writes every config's .mlir, node-data files and the index.

  Args:
    results: a sweep's `records.ConfigResult`s; those without StableHLO
      (no `Compilation`: failed before lowering) are skipped.
    out_dir: the folder (created if missing).

  Returns:
    The paths written, the index last.

  Raises:
    HloprobeError: Model Explorer is missing or its adapter fails.
    OSError: a file cannot be written (each file is written whole or not).
  """
  import_explorer()
  entries = [
    _write_config(r, out_dir)
    for r in results
    if r.compilation and r.compilation.stablehlo
  ]
  index = os.path.join(out_dir, INDEX_NAME)
  atomic_write(index, json.dumps({"configs": entries}, indent=2) + "\n")
  written = [
    os.path.join(out_dir, name)
    for e in entries
    for name in [e["model"], *e["node_data"].values()]
  ]
  return written + [index]


def load_index(out_dir: str) -> list[dict]:
  """The index `write_overlay` wrote: one dict per config ("case",
  "target", "n", "precision", "experiment", "model", "node_data", "sites",
  "unmapped", "beyond", "worst_site"; an index written before the last two
  lacks them).

  Raises:
    InvalidArgumentError: the folder has no readable index.
  """
  try:
    with open(os.path.join(out_dir, INDEX_NAME)) as f:
      return list(json.load(f)["configs"])
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise InvalidArgumentError(
      f"{out_dir} holds no Model Explorer overlay ({INDEX_NAME}): write one "
      f"with `hloprobe sweep --model_explorer={out_dir}`"
    ) from e
