"""Rendering results for people (tables) and machines (results.json).

Holds `table`, the one table layout (tabulate) the other tables use too
(cli.py still calls tabulate itself for two). It formats what the records
already say; it computes nothing new. Missing values render as "n/a" in
tables and null in JSON; JSON is strict (no NaN or Infinity): a float that
is not finite (e.g. |err| of inf when f32 overflows) is null too.

results.json schema (version 3; version 2 had one "emitter" per dot site
where version 3 has what XLA prints: "fusion_kind", "backend_config_kind"
and "custom_call_target"; version 1 had no "row0_ulp", "leaf", "leaves",
"leaf_verdicts" or prediction "output_dtype", and its row 0 was the first
value only, where version 2's row-0 errors are maxima over the whole batch
element 0, as in `accuracy.ErrorStats`):
  {
    "schema": "hloprobe.results", "schema_version": 3,
    "created": ISO-8601 UTC time, "jax": str, "jaxlib": str,
    "host": {"model": str, "machine": str, "host_isa": str,
             "max_isa": str | null, "isa": str} | null (the CPU that ran
             the cpu configs and every emulation, and the ISA XLA compiled
             for: see hloprobe.runtime.host; CPU numbers depend on it),
    "configs": [
      {"experiment": str ("baseline" or an XLA_FLAGS experiment),
       "case": str, "target": str, "n": int, "precision": str,
       "status": "ok" | "failed", "error": str | null, "stage": str | null,
       "fate_summary": str,
       "dot_sites": [{"index": int, "location": "file:line" | null,
                      "lhs": "f32[48,2]", "rhs": ..., "result": ...,
                      "lhs_batch_dims": [int], "rhs_batch_dims": [int],
                      "lhs_contracting_dims": [int],
                      "rhs_contracting_dims": [int], "K": int,
                      "stablehlo_precision": "HIGH,HIGH",
                      "stablehlo_algorithm": str | null,
                      "fate": str,
                      "fusion_kind": "kLoop" | "kInput" | "kOutput" |
                        "kCustom" | null (the outermost fusion's kind=),
                      "backend_config_kind": str | null (that fusion's
                        fusion_backend_config.kind, e.g.
                        "__triton_nested_gemm_fusion", "__cudnn$fusion";
                        fusion_config.kind on CPU, e.g. "__ynn_fusion"),
                      "custom_call_target": str | null (e.g.
                        "__cublas$lt$matmul"),
                      "carriers": [str], "precision_config": str,
                      "algorithm": str | null, "split_k": int | null,
                      "gemm_config": object | null,
                      "effective_algorithm": str | null,
                      "algorithm_source": "ptx" | "rule" | null,
                      "algorithm_evidence": str | null,
                      "selection": str | null,
                      "mapping": "source location" | "data flow" | null,
                      "candidates": [[str]] (an ambiguous site's; an
                        unknown one's merged dot not split back),
                      "conflict": str | null,
                      "merged_with": [int] | null (the other sites of
                        the dot XLA's dot-merger made of this one and
                        them; null: not merged),
                      "rewritten_by": {"pass": str, "pipeline": str,
                                       "fate_after": str} | null}],
       "passes_explained": bool (rewritten_by is only meaningful if true),
       "passes_error": str | null,
       "ptxas": str | null, "dropped_config_fields": [str], "compile_notes": [str],
       "numerics": {"leaf": str (the output leaf the row is about, "" for
                              a single array),
                    "row0": float (row 0's first value),
                    "row0_ref_f64": float,
                    "row0_abs_err": float (max over batch element 0),
                    "row0_ulp": int | null (max over element 0, ULPs of
                                            the output dtype),
                    "max_abs_err": float,
                    "max_rel_err": float, "output_dtype": str,
                    "row0_ulp_vs_n1": int | null,
                    "leaves": [{"leaf", "row0", "row0_ref_f64",
                                "row0_abs_err", "row0_ulp", "max_abs_err",
                                "max_rel_err", "output_dtype"}]} | null,
       "prediction": {"site_algorithms": [str], "row0": float,
                      "row0_abs_err": float, "max_abs_err": float,
                      "max_rel_err": float,
                      "noise_floor": {"row0_abs": float, "max_abs": float,
                                      "row0_spread_abs": float},
                      "row0_tolerance_abs": float,
                      "site_shares": [{"site", "algorithm", "alone_abs",
                                       "without_abs", "share"}],
                      "top_site": int | null,
                      "site_bands": [{"site", "algorithm", "K",
                                      "worst_abs", "expected_abs",
                                      "operand_scale_max",
                                      "operand_scale_rms"} | null],
                      "best_candidate": str | null, "verdict": str,
                      "note": str | null, "leaf": str,
                      "output_dtype": str,
                      "leaf_verdicts": [[str, str]]} | null,
       "prediction_error": str | null,
       "timing_s": {"lower": float|null, "compile": float|null,
                    "run": float|null,
                    "stages": {stage: seconds} (see runtime/timing.py)}}
    ]
  }
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
import math
import os
import textwrap
from collections.abc import Sequence

from tabulate import tabulate

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir.textfile import write_whole
from hloprobe.records import ConfigResult
from hloprobe.sites.dot_sites import (
  Fate,
  fate_summary,
  merge_words,
  site_record,
)

__all__ = [
  "DEFAULT_COLUMNS",
  "REPORT_FORMATS",
  "RESULTS_STREAM",
  "SCHEMA_VERSION",
  "TABLE_COLUMNS",
  "TERMINAL_WIDTH",
  "check_columns",
  "append_result_line",
  "atomic_write",
  "cells",
  "dumps_json",
  "render",
  "render_sites",
  "render_verification",
  "verification_json",
  "results_json",
  "table",
  "write_outputs",
]

SCHEMA_VERSION = 3
REPORT_FORMATS = ("table", "json", "markdown")
# The sweep table's columns as (key, header); `--columns=` takes the keys.
TABLE_COLUMNS = (
  ("experiment", "experiment"),
  ("case", "case"),
  ("target", "target"),
  ("n", "n"),
  ("precision", "precision"),
  ("row0", "row0"),
  ("err", "abs err row0"),
  ("max_rel", "max rel"),
  ("ulp", "ULP vs n=1"),
  ("pred_band", "pred row0 band"),
  ("pred_err", "pred abs err row0"),
  ("noise", "noise floor"),
  ("top_site", "top site"),
  ("verdict", "verdict"),
  ("fates", "dot fates"),
  ("algorithms", "effective algorithms"),
  ("compile_s", "compile s"),
  ("run_s", "run s"),
  ("status", "status"),
)
_TABLE_HEADERS = tuple(header for _, header in TABLE_COLUMNS)
# The first screen, in the order of the story a row tells. experiment and
# status show only where they say something (several experiments; a failed
# config, whose error is written under the table). Without them a row fits
# TERMINAL_WIDTH (long cells wrap); a status column may cost a few more.
DEFAULT_COLUMNS = (
  "experiment",
  "case",
  "target",
  "n",
  "precision",
  "fates",
  "algorithms",
  "err",
  "pred_err",
  "verdict",
  "status",
)
TERMINAL_WIDTH = 120
# Columns the first screen may wrap onto more lines to fit TERMINAL_WIDTH.
_WRAPPABLE_INDEX = tuple(
  i
  for i, (key, _) in enumerate(TABLE_COLUMNS)
  if key in ("fates", "algorithms", "verdict")
)


def _finite(value):
  """`value` with every non-finite float (inf, -inf, nan) made None.

  Recurses into dicts, lists and tuples (tuples become lists, as JSON has
  them); other values come back unchanged.
  """
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, dict):
    return {k: _finite(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_finite(v) for v in value]
  return value


def dumps_json(doc) -> str:
  """A JSON document as strict JSON text, indented by 2.

  Non-finite floats (e.g. an error of inf when operands near 1e37 overflow
  f32) become null: Python's default `Infinity` / `NaN` are not JSON, and
  strict parsers (jq, JavaScript, Go) reject them.
  """
  return json.dumps(_finite(doc), indent=2, allow_nan=False)


def _num(value, fmt: str) -> str:
  return "n/a" if value is None else format(value, fmt)


def _row(r: ConfigResult) -> list[str]:
  c, comp, run = r.config, r.compilation, r.execution
  s = run and run.stats
  fates = comp.fates if comp else ()
  return [
    c.experiment,
    c.case,
    c.target.name,
    str(c.n),
    c.precision,
    _row0_cell(s),
    _num(s and s.row0_abs, ".2e"),
    _num(s and s.max_rel, ".2e"),
    _num(run and run.ulp_vs_n1, "d"),
    *_prediction_cells(r.prediction, r.prediction_error),
    fate_summary(list(fates)) if fates else "n/a",
    _algorithm_summary(fates),
    _num(comp and comp.compile_s, ".2f"),
    _num(run and run.run_s, ".3f"),
    _status_cell(r, error=True),
  ]


def _status_cell(r: ConfigResult, error: bool) -> str:
  """The status cell: ok ("ok, see notes" where hloprobe changed the
  compile to get it through), or FAILED (stage) and, with `error`, the
  error."""
  if r.ok:
    return "ok, see notes" if _compile_notes(r) else "ok"
  f = r.failure
  return f"FAILED ({f.stage}): {f.error}" if error else f"FAILED ({f.stage})"


def _compile_notes(r: ConfigResult) -> tuple[str, ...]:
  return r.compilation.compile_notes if r.compilation else ()


def _prediction_cells(p, error: str | None = None) -> list[str]:
  """Predicted row 0 +- tolerance, its error, noise floor, top site, verdict
  ("not predicted" where the prediction failed: `error`, told under the
  table)."""
  if p is None:
    return ["n/a"] * 4 + ["not predicted" if error else "n/a"]
  band = f"{p.stats.row0:.7g}±{p.tolerance_abs:.1e}"
  return [
    band,
    f"{p.stats.row0_abs:.2e}",
    f"{p.noise.row0_abs:.2e}",
    _num(p.top_site, "d"),
    _verdict_cell(p),
  ]


def _row0_cell(s) -> str:
  """Row 0's first value, after its leaf's name where there are several."""
  if s is None:
    return "n/a"
  return f"{s.leaf} {s.row0:.7g}" if s.leaf else f"{s.row0:.7g}"


def _verdict_cell(p) -> str:
  """The verdict; with several output leaves, every leaf's, named."""
  if len(p.leaf_verdicts) <= 1:
    return p.verdict
  return "; ".join(f"{leaf}: {v}" for leaf, v in p.leaf_verdicts)


def _prediction_json(r: ConfigResult) -> dict | None:
  p = r.prediction
  if p is None:
    return None
  return {
    "site_algorithms": list(p.site_algorithms),
    "row0": p.stats.row0,
    "row0_abs_err": p.stats.row0_abs,
    "max_abs_err": p.stats.max_abs,
    "max_rel_err": p.stats.max_rel,
    "noise_floor": dataclasses.asdict(p.noise),
    "row0_tolerance_abs": p.tolerance_abs,
    "site_shares": [dataclasses.asdict(x) for x in p.shares],
    "top_site": p.top_site,
    "site_bands": [
      None if b is None else dataclasses.asdict(b) for b in p.bands
    ],
    "best_candidate": p.best_candidate,
    "verdict": p.verdict,
    "note": p.note,
    "leaf": p.leaf,
    "output_dtype": p.output_dtype,
    "leaf_verdicts": [list(x) for x in p.leaf_verdicts],
  }


def _effective_cell(f) -> str:
  """A site's effective algorithm; "unknown" where its arithmetic is not
  settled, "n/a" where nothing computes it (gone)."""
  if f.effective_algorithm:
    return f.effective_algorithm
  return "n/a" if f.fate == Fate.GONE else "unknown"


def _algorithm_summary(fates) -> str:
  """E.g. "TF32_TF32_F32 x3, unknown x1" (see `_effective_cell`)."""
  counts = collections.Counter(map(_effective_cell, fates))
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "n/a"


def _stats_json(s) -> dict:
  return {
    "leaf": s.leaf,
    "row0": s.row0,
    "row0_ref_f64": s.row0_ref,
    "row0_abs_err": s.row0_abs,
    "row0_ulp": s.row0_ulp,
    "max_abs_err": s.max_abs,
    "max_rel_err": s.max_rel,
    "output_dtype": (
      None if s.row0_values is None else str(s.row0_values.dtype)
    ),
  }


def _numerics_json(run) -> dict | None:
  """An `Execution`'s results.json "numerics", or None without stats."""
  s = run and run.stats
  if s is None:
    return None
  return {
    **_stats_json(s),
    "row0_ulp_vs_n1": run.ulp_vs_n1,
    "leaves": [_stats_json(x) for x in run.leaf_stats],
  }


def config_json(r: ConfigResult) -> dict:
  """One config as a results.json entry (schema above)."""
  c, comp, run, f = r.config, r.compilation, r.execution, r.failure
  fates = comp.fates if comp else ()
  passes = comp.passes if comp else None
  return {
    "experiment": c.experiment,
    "case": c.case,
    "target": c.target.name,
    "n": c.n,
    "precision": c.precision,
    "status": "ok" if r.ok else "failed",
    "error": f and f.error,
    "stage": f and f.stage,
    "fate_summary": fate_summary(list(fates)) if fates else None,
    "dot_sites": [
      site_record(x, (passes or {}).get(x.site.index)) for x in fates
    ],
    "passes_explained": passes is not None,
    "passes_error": comp and comp.passes_error,
    "numerics": _numerics_json(run),
    "prediction": _prediction_json(r),
    "prediction_error": r.prediction_error,
    "ptxas": comp and comp.ptxas,
    "dropped_config_fields": list(comp.dropped_config_fields if comp else ()),
    "compile_notes": list(comp.compile_notes if comp else ()),
    "timing_s": {
      "lower": comp and comp.lower_s,
      "compile": comp and comp.compile_s,
      "run": run and run.run_s,
      "stages": dict(r.timings),
    },
  }


def results_json(
  results: list[ConfigResult], versions: dict[str, str], host=None
) -> dict:
  """The whole sweep as the versioned results.json document.

  Args:
    results: the sweep's records.
    versions: {"jax": ..., "jaxlib": ...}.
    host: the `host.HostCpu` the numbers were computed on, or None.
  """
  return {
    "schema": "hloprobe.results",
    "schema_version": SCHEMA_VERSION,
    "created": datetime.datetime.now(datetime.UTC).isoformat(
      timespec="seconds"
    ),
    **versions,
    "host": host.as_json() if host is not None else None,
    "configs": [config_json(r) for r in results],
  }


def check_columns(columns: Sequence[str]) -> tuple[str, ...]:
  """`columns` as a tuple, each a key of `TABLE_COLUMNS`.

  Raises:
    InvalidArgumentError: an unknown or empty column name.
  """
  known = [key for key, _ in TABLE_COLUMNS]
  bad = [c for c in columns if c not in known]
  if bad or not columns:
    raise InvalidArgumentError(
      f"unknown --columns {', '.join(bad) or '(none)'}; choose from "
      f"{', '.join(known)}"
    )
  return tuple(columns)


def render(
  results: list[ConfigResult],
  fmt: str,
  versions: dict[str, str],
  columns: Sequence[str] | None = None,
  wide: bool = False,
  host=None,
) -> str:
  """Renders results as "table" (plain), "markdown" (GitHub) or "json".

  Args:
    results: the sweep's records.
    fmt: "table", "markdown" or "json".
    versions: {"jax": ..., "jaxlib": ...} for the JSON document.
    host: the `runtime.host.HostCpu` for the JSON document, or None.
    columns: keys of `TABLE_COLUMNS` to show, in this order. None: for
      "table", the first screen (`DEFAULT_COLUMNS`, long cells wrapped so a
      row fits `TERMINAL_WIDTH` characters) unless `wide`; for "markdown",
      every column. JSON always has everything.
    wide: with columns None, a "table" of every column, unwrapped.

  Raises:
    ValueError: unknown format.
    InvalidArgumentError: an unknown column.
  """
  if fmt not in REPORT_FORMATS:
    raise ValueError(
      f"unknown --format {fmt!r}; choose from {', '.join(REPORT_FORMATS)}"
    )
  if fmt == "json":
    return dumps_json(results_json(results, versions, host))
  rows = [_row(r) for r in results]
  if columns is None and fmt == "table" and not wide:
    return _first_screen(results, rows)
  if columns is None:
    headers, rows = cells(results)
    return table(rows, headers, fmt) + _notes_text(results)
  keep = [_COLUMN_INDEX[c] for c in check_columns(columns)]
  return table(
    [[row[i] for i in keep] for row in rows],
    [_TABLE_HEADERS[i] for i in keep],
    fmt,
  ) + _notes_text(results)


_COLUMN_INDEX = {key: i for i, (key, _) in enumerate(TABLE_COLUMNS)}


def _first_screen(results, rows: list[list[str]]) -> str:
  """The default columns, the context ones only where they vary, wrapped
  to fit TERMINAL_WIDTH; a failed config's status is "FAILED (stage)" and
  its error is written under the table."""
  status = _COLUMN_INDEX["status"]
  rows = [
    row[:status] + [_status_cell(r, error=False)] + row[status + 1 :]
    for r, row in zip(results, rows)
  ]
  shown = {
    "experiment": len({row[_COLUMN_INDEX["experiment"]] for row in rows}) > 1,
    "status": any(row[_COLUMN_INDEX["status"]] != "ok" for row in rows),
  }
  keep = [_COLUMN_INDEX[c] for c in DEFAULT_COLUMNS if shown.get(c, True)]
  columns = [[row[i] for row in rows] for i in keep]
  headers = [_TABLE_HEADERS[i] for i in keep]
  limits = [_width(c, h) for c, h in zip(columns, headers)]
  wrappable = [k for k, i in enumerate(keep) if i in _WRAPPABLE_INDEX]
  while sum(limits) + 2 * (len(limits) - 1) > TERMINAL_WIDTH:
    k = max(wrappable, key=lambda k: limits[k], default=None)
    if k is None:
      break
    narrower = _width([_wrap(c, limits[k] - 1) for c in columns[k]], headers[k])
    if narrower >= limits[k]:  # a word as wide as the column: stop there
      wrappable.remove(k)
    limits[k] = min(narrower, limits[k])
  wrapped = [[_wrap(c, w) for c in col] for col, w in zip(columns, limits)]
  headers = [_wrap(h, w - 2) for h, w in zip(headers, limits)]
  errors = [
    textwrap.fill(
      f"{r.config.label()}: {r.failure.stage} failed: {r.failure.error}",
      TERMINAL_WIDTH,
      initial_indent="  ",
      subsequent_indent="    ",
    )
    for r in results
    if not r.ok
  ]
  text = table(list(zip(*wrapped)), headers, "table")
  return "\n".join(
    [text] + (["", "failed:"] + errors if errors else [])
  ) + _notes_text(results)


def _notes_text(results) -> str:
  """ "\n\nnotes:\n  ..." for the notes of `_notes`, or "" when none."""
  notes = [
    textwrap.fill(
      f"{'; '.join(labels)}: {note}",
      TERMINAL_WIDTH,
      initial_indent="  ",
      subsequent_indent="    ",
    )
    for note, labels in _notes(results).items()
  ]
  return "\n\nnotes:\n" + "\n".join(notes) if notes else ""


def _notes(results) -> dict[str, list[str]]:
  """Each note under the table (a compile hloprobe changed, a prediction
  that failed) with the labels of the configs it is about, in order."""
  notes: dict[str, list[str]] = {}
  for r in results:
    said = _compile_notes(r) + (
      (f"not predicted: {r.prediction_error}",) if r.prediction_error else ()
    )
    for note in said:
      notes.setdefault(note, []).append(r.config.label())
  return notes


def _wrap(text: str, width: int) -> str:
  """Words of `text` on lines of at most `width` (a longer word alone)."""
  return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def _width(cells: list[str], header: str) -> int:
  """A "simple" tabulate column's width: its longest line, or its header's
  longest word and 2 (tabulate's MIN_PADDING) if that is longer."""
  return max(
    [len(word) + 2 for word in header.split()]
    + [len(line) for c in cells for line in c.splitlines()]
  )


def table(rows, headers, fmt: str = "table") -> str:
  """hloprobe's one table layout: tabulate "simple" for `fmt` "table",
  GitHub markdown for "markdown"; cells are shown as given (no number
  parsing)."""
  tablefmt = "github" if fmt == "markdown" else "simple"
  return tabulate(
    rows, headers=headers, tablefmt=tablefmt, disable_numparse=True
  )


_SITE_HEADERS = (
  "experiment",
  "target",
  "case",
  "n",
  "precision",
  "site",
  "source",
  "lhs x rhs -> result",
  "K",
  "precision config",
  "algorithm",
  "fate",
  "emitter",
  "split-K",
  "rewritten by",
  "effective algorithm",
  "band worst / expected",
)


def _band_cell(prediction, site: int) -> str:
  """A site's analytic band: worst-case bound / expected size, output units."""
  band = prediction.bands[site] if prediction is not None else None
  if band is None:
    return "n/a"
  return f"{band.worst_abs:.1e} / {band.expected_abs:.1e}"


def _site_rows(r: ConfigResult) -> list[list[str]]:
  rows = []
  c, comp = r.config, r.compilation
  passes = comp.passes if comp else None
  for f in comp.fates if comp else ():
    s = f.site
    by = (passes or {}).get(s.index)
    rewritten = (
      ("unknown" if comp.passes_error else "n/a")
      if passes is None
      else (f"{by.pass_name} ({by.pipeline})" if by else "(stays a dot)")
    )
    rows.append(
      [
        c.experiment,
        c.target.name,
        c.case,
        str(c.n),
        c.precision,
        str(s.index),
        os.path.basename(s.location) if s.location else "n/a",
        f"{s.lhs} x {s.rhs} -> {s.result}",
        str(s.contracting_size),
        f.precision_config + (" (conflict)" if f.conflict else ""),
        f.algorithm or "n/a",
        f.fate.value + (f" ({merged})" if (merged := merge_words(f)) else ""),
        f.emitter or "n/a",
        _num(f.split_k, "d"),
        rewritten,
        _effective_cell(f),
        _band_cell(r.prediction, s.index),
      ]
    )
  return rows


def cells(
  results: list[ConfigResult], sites: bool = False
) -> tuple[list[str], list[list[str]]]:
  """(headers, rows) of the full sweep table (every column) or, with
  `sites`, of the dot-site table; the experiment column only when there is
  a choice. For renderers of other formats (the HTML report)."""
  rows = (
    [row for r in results for row in _site_rows(r)]
    if sites
    else [_row(r) for r in results]
  )
  headers = list(_SITE_HEADERS if sites else _TABLE_HEADERS)
  first = results[0].config.experiment if results else None
  if all(r.config.experiment == first for r in results):
    return headers[1:], [row[1:] for row in rows]
  return headers, rows


def render_sites(results: list[ConfigResult], fmt: str) -> str:
  """One row per dot site per config ("table" or "markdown")."""
  headers, rows = cells(results, sites=True)
  return table(rows, headers, fmt)


def verification_json(v) -> dict:
  """A `verify.Verification` for machines (`--format=json`)."""
  return {
    "schema": "hloprobe.verify",
    "schema_version": SCHEMA_VERSION,
    "fix": v.fix.name,
    "fix_kind": "precision" if v.fix.precision else "experiment",
    "xla_flags": v.fix.experiment.flags_text if v.fix.experiment else None,
    "passed": v.passed,
    "requirements": [dataclasses.asdict(r) for r in v.requirements],
    "fate_changes": list(v.fate_changes),
    "row0_errors": list(v.errors),
    "failures": list(v.failures),
  }


def render_verification(v, fmt: str) -> str:
  """A `verify.Verification` as text (table, markdown) or JSON."""
  if fmt == "json":
    return dumps_json(verification_json(v))
  rows = [
    (
      r.name,
      "PASS" if r.passed else "FAIL",
      r.evidence[0] if r.evidence else "",
    )
    for r in v.requirements
  ]
  lines = [f"verify --fix={v.fix.name}: {'PASS' if v.passed else 'FAIL'}"]
  lines += [f"the fix failed: {e}" for e in v.failures]
  headers = ("requirement", "result", "deciding evidence")
  lines += ["", table(rows, headers, fmt)]
  for r in v.requirements:
    lines += ["", f"{r.name}:"] + [f"  {e}" for e in r.evidence]
  lines += ["", "dot sites the fix changes:"]
  lines += [f"  {c}" for c in v.fate_changes] or ["  none"]
  lines += ["", "row-0 error, baseline -> fix:"] + [f"  {e}" for e in v.errors]
  return "\n".join(lines)


def atomic_write(path: str, text: str | bytes) -> None:
  """Writes a file whole or not at all (`textfile.write_whole`, mode as
  `open()` makes it); bytes are written as they are, text as UTF-8."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  data = text if isinstance(text, bytes) else text.encode("utf-8")
  write_whole(path, lambda f: f.write(data))


RESULTS_STREAM = "results.jsonl"


def append_result_line(output_dir: str, r: ConfigResult) -> None:
  """Appends one config as one JSON line to `<output_dir>/results.jsonl`.

  Called as each config finishes, so an interrupted sweep keeps the
  configs it finished; each line is one `config_json` record, written by
  one `write` call and flushed.
  """
  os.makedirs(output_dir, exist_ok=True)
  line = json.dumps(_finite(config_json(r)), allow_nan=False) + "\n"
  with open(os.path.join(output_dir, RESULTS_STREAM), "a") as f:
    f.write(line)


def config_dir(r: ConfigResult) -> str:
  """Relative folder of one config's files:
  `<target>/<case>/n<N>-<precision>[-<experiment>]` (no suffix for baseline)."""
  c = r.config
  suffix = "" if c.experiment == "baseline" else f"-{c.experiment}"
  return os.path.join(c.target.name, c.case, f"n{c.n}-{c.precision}{suffix}")


def write_outputs(
  results: list[ConfigResult],
  output_dir: str,
  versions: dict[str, str],
  host=None,
) -> list[str]:
  """Writes per-config `stablehlo.mlir` / `optimized.hlo` and `results.json`.

  `versions` and `host` go into results.json (see `results_json`).

  Returns the paths written. Each file is written atomically.
  """
  written = []
  for r in results:
    comp = r.compilation
    for name, text in (
      ("stablehlo.mlir", comp and comp.stablehlo),
      ("optimized.hlo", comp and comp.optimized_hlo),
    ):
      if text is not None:
        path = os.path.join(output_dir, config_dir(r), name)
        atomic_write(path, text)
        written.append(path)
  path = os.path.join(output_dir, "results.json")
  atomic_write(path, dumps_json(results_json(results, versions, host)) + "\n")
  return written + [path]
