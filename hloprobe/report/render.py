"""Rendering results for people (tables) and machines (results.json).

The only module that imports tabulate. It formats what the records already
say; it computes nothing new. Missing values render as "n/a" in tables and
null in JSON; JSON is strict (no NaN or Infinity): a float that is not finite
(e.g. |err| of inf when f32 overflows) is null too.

results.json schema (version 1):
  {
    "schema": "hloprobe.results", "schema_version": 1,
    "created": ISO-8601 UTC time, "jax": str, "jaxlib": str,
    "host": {"model": str, "machine": str, "host_isa": str,
             "max_isa": str | null, "isa": str} | null (the CPU that ran
             the cpu configs and every emulation, and the ISA XLA compiled
             for: see hloprobe.compile.host; CPU numbers depend on it),
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
                      "fate": str, "emitter": str | null,
                      "carriers": [str], "precision_config": str,
                      "algorithm": str | null, "split_k": int | null,
                      "gemm_config": object | null,
                      "effective_algorithm": str | null,
                      "algorithm_source": "ptx" | "rule" | null,
                      "algorithm_evidence": str | null,
                      "selection": str | null,
                      "rewritten_by": {"pass": str, "pipeline": str,
                                       "fate_after": str} | null}],
       "passes_explained": bool (rewritten_by is only meaningful if true),
       "passes_error": str | null,
       "ptxas": str | null, "dropped_config_fields": [str],
       "numerics": {"row0": float, "row0_ref_f64": float,
                    "row0_abs_err": float, "max_abs_err": float,
                    "max_rel_err": float, "output_dtype": str,
                    "row0_ulp_vs_n1": int | null} | null,
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
                      "note": str | null} | null,
       "prediction_error": str | null,
       "timing_s": {"lower": float|null, "compile": float|null,
                    "run": float|null}}
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
import tempfile

from tabulate import tabulate

from hloprobe.ir.textfile import umask_mode
from hloprobe.sites.dot_sites import fate_summary, site_record
from hloprobe.sweep import ConfigResult

__all__ = [
  "REPORT_FORMATS",
  "RESULTS_STREAM",
  "SCHEMA_VERSION",
  "append_result_line",
  "atomic_write",
  "dumps_json",
  "render",
  "render_sites",
  "render_verification",
  "verification_json",
  "results_json",
  "write_outputs",
]

SCHEMA_VERSION = 1
REPORT_FORMATS = ("table", "json", "markdown")
_TABLE_HEADERS = (
  "experiment",
  "case",
  "target",
  "n",
  "precision",
  "row0",
  "abs err row0",
  "max rel",
  "ULP vs n=1",
  "pred row0 band",
  "pred abs err row0",
  "noise floor",
  "top site",
  "verdict",
  "dot fates",
  "effective algorithms",
  "compile s",
  "run s",
  "status",
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
  s = r.stats
  return [
    r.experiment,
    r.case,
    r.target,
    str(r.n),
    r.precision,
    _num(s and s.row0, ".7g"),
    _num(s and s.row0_abs, ".2e"),
    _num(s and s.max_rel, ".2e"),
    _num(r.ulp_vs_n1, "d"),
    *_prediction_cells(r.prediction),
    fate_summary(list(r.fates)) if r.fates else "n/a",
    _algorithm_summary(r.fates),
    _num(r.compile_s, ".2f"),
    _num(r.run_s, ".3f"),
    "ok" if r.ok else f"FAILED ({r.stage}): {r.error}",
  ]


def _prediction_cells(p) -> list[str]:
  """Predicted row 0 +- tolerance, its error, noise floor, top site, verdict."""
  if p is None:
    return ["n/a"] * 5
  band = f"{p.stats.row0:.7g}±{p.tolerance_abs:.1e}"
  return [
    band,
    f"{p.stats.row0_abs:.2e}",
    f"{p.noise.row0_abs:.2e}",
    _num(p.top_site, "d"),
    p.verdict,
  ]


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
  }


def _algorithm_summary(fates) -> str:
  """E.g. "TF32_TF32_F32 x3, F32_F32_F32 x1"; unsettled sites count as n/a."""
  counts = collections.Counter(f.effective_algorithm or "n/a" for f in fates)
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "n/a"


def config_json(r: ConfigResult) -> dict:
  """One config as a results.json entry (schema above)."""
  s = r.stats
  numerics = (
    None
    if s is None
    else {
      "row0": s.row0,
      "row0_ref_f64": s.row0_ref,
      "row0_abs_err": s.row0_abs,
      "max_abs_err": s.max_abs,
      "max_rel_err": s.max_rel,
      "output_dtype": r.output_dtype,
      "row0_ulp_vs_n1": r.ulp_vs_n1,
    }
  )
  return {
    "experiment": r.experiment,
    "case": r.case,
    "target": r.target,
    "n": r.n,
    "precision": r.precision,
    "status": "ok" if r.ok else "failed",
    "error": r.error,
    "stage": r.stage,
    "fate_summary": fate_summary(list(r.fates)) if r.fates else None,
    "dot_sites": [
      site_record(f, (r.passes or {}).get(f.site.index)) for f in r.fates
    ],
    "passes_explained": r.passes is not None,
    "passes_error": r.passes_error,
    "numerics": numerics,
    "prediction": _prediction_json(r),
    "prediction_error": r.prediction_error,
    "ptxas": r.ptxas,
    "dropped_config_fields": list(r.dropped_config_fields),
    "timing_s": {"lower": r.lower_s, "compile": r.compile_s, "run": r.run_s},
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


def render(
  results: list[ConfigResult], fmt: str, versions: dict[str, str], host=None
) -> str:
  """Renders results as "table" (plain), "markdown" (GitHub) or "json".

  `versions` and `host` go into the JSON (see `results_json`).

  Raises:
    ValueError: unknown format.
  """
  if fmt not in REPORT_FORMATS:
    raise ValueError(
      f"unknown --format {fmt!r}; choose from {', '.join(REPORT_FORMATS)}"
    )
  if fmt == "json":
    return dumps_json(results_json(results, versions, host))
  return _table(results, [_row(r) for r in results], _TABLE_HEADERS, fmt)


def _table(results, rows, headers, fmt: str) -> str:
  """A tabulate table; the experiment column only when there is a choice."""
  if all(r.experiment == results[0].experiment for r in results):
    rows, headers = [row[1:] for row in rows], headers[1:]
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
  for f in r.fates:
    s = f.site
    by = (r.passes or {}).get(s.index)
    rewritten = (
      "n/a"
      if r.passes is None
      else (f"{by.pass_name} ({by.pipeline})" if by else "(stays a dot)")
    )
    rows.append(
      [
        r.experiment,
        r.target,
        r.case,
        str(r.n),
        r.precision,
        str(s.index),
        os.path.basename(s.location) if s.location else "n/a",
        f"{s.lhs} x {s.rhs} -> {s.result}",
        str(s.contracting_size),
        f.precision_config,
        f.algorithm or "n/a",
        f.fate.value,
        f.emitter or "n/a",
        _num(f.split_k, "d"),
        rewritten,
        f.effective_algorithm or "n/a",
        _band_cell(r.prediction, s.index),
      ]
    )
  return rows


def render_sites(results: list[ConfigResult], fmt: str) -> str:
  """One row per dot site per config ("table" or "markdown")."""
  rows = [row for r in results for row in _site_rows(r)]
  return _table(results, rows, _SITE_HEADERS, fmt)


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
  tablefmt = "github" if fmt == "markdown" else "simple"
  lines = [f"verify --fix={v.fix.name}: {'PASS' if v.passed else 'FAIL'}"]
  lines += [f"the fix failed: {e}" for e in v.failures]
  lines += [
    "",
    tabulate(
      rows,
      headers=("requirement", "result", "deciding evidence"),
      tablefmt=tablefmt,
      disable_numparse=True,
    ),
  ]
  for r in v.requirements:
    lines += ["", f"{r.name}:"] + [f"  {e}" for e in r.evidence]
  lines += ["", "dot sites the fix changes:"]
  lines += [f"  {c}" for c in v.fate_changes] or ["  none"]
  lines += ["", "row-0 error, baseline -> fix:"] + [f"  {e}" for e in v.errors]
  return "\n".join(lines)


def atomic_write(path: str, text: str) -> None:
  """Writes a file whole or not at all (temporary file, then rename)."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
  try:
    os.fchmod(fd, umask_mode())  # as open() would make it
    with os.fdopen(fd, "w") as f:
      f.write(text)
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.unlink(tmp)
    raise


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
  suffix = "" if r.experiment == "baseline" else f"-{r.experiment}"
  return os.path.join(r.target, r.case, f"n{r.n}-{r.precision}{suffix}")


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
    for name, text in (
      ("stablehlo.mlir", r.stablehlo),
      ("optimized.hlo", r.optimized_hlo),
    ):
      if text is not None:
        path = os.path.join(output_dir, config_dir(r), name)
        atomic_write(path, text)
        written.append(path)
  path = os.path.join(output_dir, "results.json")
  atomic_write(path, dumps_json(results_json(results, versions, host)) + "\n")
  return written + [path]
