"""The cross-version table: one config per block, one column per jaxlib.

Reads the workers' replies (`run.VersionRun`), never re-runs anything. Per
config (case, target, n, precision) and version it shows the site fates,
the effective algorithms, row 0's |error| against float64 (observed where
the target ran, else predicted, marked "(pred)"), row 0's |error| of what
XLA made (the optimized module executed at the sites' effective
algorithms, `numerics.made`) and the config's verdict
("XLA changed the math: ..." where the executed module says so,
`numerics.made`). Each XLA_FLAGS experiment's configs are compared apart
from the baseline's. A field
whose value differs between versions is marked `*` in the last column,
with the fields compared as text (the error only through the verdict it
leads to, so f32 noise is no change).

A version that could not run a config says why in its cells: the worker's
error, "no DotAlgorithmPreset in jax V" for a preset precision on a jax
without them, "not installed: ..." for a version without a venv.

A config is compared when two or more versions ran it (its status "ok" or
"failed"); a version that was not installed, or whose worker failed, never
takes part, so it never makes a change. The footer counts the changes
among compared configs only.

Each version's first rows name what it was built from: the Python its venv
runs, the JAX commit (from the release itself) and the XLA commit
(`commits`, "unknown" beyond hloprobe's table); the footer gives the XLA
compare link between neighbouring columns.

JSON (`versions_json`), schema "hloprobe.versions" version 2 (version 1
had no "installed", "python", "jax_commit", "xla_commit", "xla_source",
"compared_in", and no "not installed" status):
  {"schema": "hloprobe.versions", "schema_version": 2,
   "checked_jaxlib": str,
   "versions": [{"jaxlib": str, "jax": str | null, "status": "ok" |
                 "failed" | "not installed", "error": str | null,
                 "warning": str | null, "venv_created": bool,
                 "installed": bool, "python": "3.13" | null,
                 "jax_commit": str | null, "xla_commit": str | null,
                 "xla_source": str}],
   "xla_ranges": [str] (neighbouring versions' XLA commits in words),
   "configs": [{"experiment", "case", "target", "n", "precision",
                "changed": [field], "compared_in": [jaxlib],
                "cells": {jaxlib: {"status": "ok" | "failed" | "n/a" |
                                   "not installed",
                                   "error": str | null,
                                   "fates": str | null,
                                   "effective_algorithms": str | null,
                                   "row0_abs_err": float | null,
                                   "row0_abs_err_source": "observed" |
                                     "predicted" | null,
                                   "made_row0_abs_err": float | null
                                     (added without a bump),
                                   "verdict": str | null,
                                   "dot_sites": [results.json site],
                                   "passes_explained": bool (ok cells
                                     only)}}}]}

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from hloprobe.compile import jaxlib_release
from hloprobe.errors import counted
from hloprobe.ir import ALGORITHMS
from hloprobe.report import dumps_json
from hloprobe.report import table as tables_table
from hloprobe.versions import commits
from hloprobe.versions.run import VersionRun

__all__ = [
  "FIELDS",
  "NOT_INSTALLED",
  "compare",
  "config_key",
  "footer_counts",
  "render_versions",
  "versions_json",
]

NOT_INSTALLED = "not installed"
# Cell statuses of a version that ran the config ("n/a": not installed, the
# worker failed or did not sweep it).
_RAN = ("ok", "failed")

FIELDS = (
  "fates",
  "effective_algorithms",
  "row0_abs_err",
  "made_row0_abs_err",
  "verdict",
)
_CHANGE_FIELDS = ("fates", "effective_algorithms", "verdict")
_LABELS = {
  "fates": "site fates",
  "effective_algorithms": "effective algorithms",
  "row0_abs_err": "row-0 |err|",
  "made_row0_abs_err": "row-0 |err| made",
  "verdict": "verdict",
}


def config_key(config: dict) -> tuple:
  """(experiment, case, target, n, precision) of a results.json config."""
  return (
    config.get("experiment", "baseline"),
    config["case"],
    config["target"],
    config["n"],
    config["precision"],
  )


def _algorithms(config: dict) -> str | None:
  sites = config.get("dot_sites") or []
  if not sites:
    return None
  counts = collections.Counter(
    s.get("effective_algorithm") or "unknown" for s in sites
  )
  return ", ".join(f"{a} x{n}" for a, n in counts.items())


def _error(config: dict) -> tuple[float | None, str | None]:
  if config.get("numerics"):
    return config["numerics"]["row0_abs_err"], "observed"
  if config.get("prediction"):
    return config["prediction"]["row0_abs_err"], "predicted"
  return None, None


def _cell(config: dict | None, run: VersionRun) -> dict:
  """One version's cell for one config."""
  empty = dict.fromkeys(FIELDS) | {"row0_abs_err_source": None}
  if not run.installed:
    return empty | {
      "status": NOT_INSTALLED,
      "error": run.error,
      "dot_sites": [],
    }
  if not run.ok:
    return empty | {"status": "n/a", "error": run.error, "dot_sites": []}
  if config is None:
    return empty | {"status": "n/a", "error": "not swept", "dot_sites": []}
  if config["status"] != "ok":
    return empty | {
      "status": "failed",
      "error": _failure(config, run),
      "dot_sites": [],
    }
  err, source = _error(config)
  prediction = config.get("prediction") or {}
  return {
    "status": "ok",
    "error": None,
    "fates": config.get("fate_summary"),
    "effective_algorithms": _algorithms(config),
    "row0_abs_err": err,
    "row0_abs_err_source": source,
    "made_row0_abs_err": (config.get("made") or {}).get("row0_abs_err"),
    "verdict": config.get("verdict") or prediction.get("verdict"),
    "dot_sites": config.get("dot_sites") or [],
    "passes_explained": bool(config.get("passes_explained")),
  }


def _failure(config: dict, run: VersionRun) -> str:
  capabilities = run.reply.get("capabilities", {})
  if config["precision"] in ALGORITHMS and not capabilities.get(
    "dot_algorithm_preset", True
  ):
    return f"no DotAlgorithmPreset in jax {run.reply.get('jax')}"
  return f"{config['stage']}: {config['error']}"


def compare(runs: Sequence[VersionRun]) -> list[dict]:
  """One entry per config swept by any version, in the first sweep's order.

  Returns:
    Dicts {"experiment", "case", "target", "n", "precision", "cells": {jaxlib: cell},
    "compared_in": [the versions that ran it: status "ok" or "failed"],
    "changed": [fields whose text differs between the versions that ran
    it; "status" when theirs differ; empty unless two or more took
    part]}.
  """
  by_version = {
    run.jaxlib: {
      config_key(c): c
      for c in (run.reply or {}).get("results", {}).get("configs", [])
    }
    for run in runs
  }
  keys = list(dict.fromkeys(k for v in by_version.values() for k in v))
  out = []
  for key in keys:
    cells = {
      run.jaxlib: _cell(by_version[run.jaxlib].get(key), run) for run in runs
    }
    compared_in = [v for v, c in cells.items() if c["status"] in _RAN]
    experiment, case, target, n, precision = key
    out.append(
      {
        "experiment": experiment,
        "case": case,
        "target": target,
        "n": n,
        "precision": precision,
        "changed": _changed([cells[v] for v in compared_in]),
        "compared_in": compared_in,
        "cells": cells,
      }
    )
  return out


def _changed(cells: list[dict]) -> list[str]:
  """The fields that differ among the cells of versions that took part;
  none with fewer than two."""
  if len(cells) < 2:
    return []
  ran = [c for c in cells if c["status"] == "ok"]
  changed = [f for f in _CHANGE_FIELDS if len({c[f] for c in ran}) > 1]
  if len({c["status"] for c in cells}) > 1:
    changed.append("status")
  return changed


def footer_counts(compared: list[dict]) -> tuple[int, int, int]:
  """(changed, compared, all): configs with a change, configs compared in
  two or more versions, and all configs, for the footer."""
  both = [e for e in compared if len(e["compared_in"]) >= 2]
  return sum(1 for e in both if e["changed"]), len(both), len(compared)


def _show(cell: dict, field: str) -> str:
  if cell["status"] != "ok":
    return cell["error"] if field == "fates" else ""
  value = cell[field]
  if field in ("row0_abs_err", "made_row0_abs_err"):
    if value is None:
      return "n/a"
    predicted = cell["row0_abs_err_source"] == "predicted"
    suffix = " (pred)" if field == "row0_abs_err" and predicted else ""
    return f"{value:.2e}{suffix}"
  return "n/a" if value is None else str(value)


def render_versions(
  runs: Sequence[VersionRun], fmt: str = "table", changes_only: bool = False
) -> str:
  """The table: per config, one row per field, one column per version;
  with `fmt="json"`, the "hloprobe.versions" document (`versions_json`,
  all configs) as the text `hloprobe versions --format=json` prints.

  Args:
    runs: the versions' runs, in the order asked.
    fmt: "table", "markdown" or "json".
    changes_only: only configs where something changed (tables only).
  """
  if fmt == "json":
    return dumps_json(versions_json(runs))
  compared = compare(runs)
  built = _built_from(runs)
  headers = ["config", "field"] + [f"jaxlib {r.jaxlib}" for r in runs]
  headers.append("changed")
  rows = [
    ["built from", "python"] + [r.python_version or "n/a" for r in runs],
    ["", "jax commit"] + [_short(b.jax_commit) for b in built],
    ["", "xla commit"] + [_short(b.xla_commit, "unknown") for b in built],
  ]
  rows = [row + [""] for row in rows]
  for entry in compared:
    if changes_only and not entry["changed"]:
      continue
    words = (
      f"{entry['target']} {entry['case']} n={entry['n']} {entry['precision']}"
    )
    if entry["experiment"] != "baseline":
      words += f" ({entry['experiment']})"
    for i, field in enumerate(FIELDS):
      mark = "*" if field in entry["changed"] else ""
      if field == "fates" and "status" in entry["changed"]:
        mark = "*"
      rows.append(
        [words if i == 0 else "", _LABELS[field]]
        + [_show(entry["cells"][r.jaxlib], field) for r in runs]
        + [mark]
      )
  table = tables_table(rows, headers, fmt)
  return "\n".join([table, *_footer(runs, compared, built)])


def _short(commit: str | None, missing: str = "n/a") -> str:
  return commit[:12] if commit else missing


def _built_from(runs: Sequence[VersionRun]) -> list[commits.BuiltFrom]:
  table = commits.load_table()
  return [
    commits.built_from(r.jaxlib, (r.reply or {}).get("jax_commit"), table)
    for r in runs
  ]


def _xla_ranges(built: list[commits.BuiltFrom]) -> list[str]:
  """The XLA commits between each column and the next."""
  return [commits.xla_range(a, b) for a, b in zip(built, built[1:])]


def _footer(
  runs: Sequence[VersionRun],
  compared: list[dict],
  built: list[commits.BuiltFrom],
) -> list[str]:
  lines = [""]
  changed, both, total = footer_counts(compared)
  counts = (
    f"{changed} of {counted(both, 'config')} compared in two or more versions "
  )
  counts += "changed (*)"
  if both < total:
    counts += (
      f"; {total - both} of {total} ran under fewer than two versions and "
      f"{'is' if total - both == 1 else 'are'} not compared"
    )
  lines.append(counts + ".")
  lines += _xla_ranges(built)
  lines.append(
    f"hloprobe's XLA rules were checked on jaxlib {jaxlib_release().checked_words}; under "
    "other versions a rule that does not recognise what XLA did says "
    "'unknown'."
  )
  prng = {
    r.jaxlib: r.reply["capabilities"].get("threefry_partitionable")
    for r in runs
    if r.ok
  }
  if len(set(prng.values())) > 1:
    lines.append(
      "The cases' random inputs differ between versions: "
      "jax_threefry_partitionable is "
      + ", ".join(f"{v} under {k}" for k, v in prng.items())
      + " (jax 0.5.0 changed its default), so the same PRNGKey draws other "
      "numbers and errors are not comparable across that line; fates and "
      "algorithms are."
    )
  for r in runs:
    if not r.ok:
      lines.append(f"jaxlib {r.jaxlib}: {r.error}")
  return lines


def versions_json(runs: Sequence[VersionRun]) -> dict:
  """The comparison as the "hloprobe.versions" JSON document (above)."""
  built = _built_from(runs)
  return {
    "schema": "hloprobe.versions",
    "schema_version": 2,
    "checked_jaxlib": list(jaxlib_release().checked),
    "versions": [
      {
        "jaxlib": r.jaxlib,
        "jax": (r.reply or {}).get("jax"),
        "status": "ok" if r.ok else "failed" if r.installed else NOT_INSTALLED,
        "error": r.error,
        "warning": (r.reply or {}).get("warning"),
        "venv_created": r.venv_created,
        "installed": r.installed,
        "python": r.python_version,
        "jax_commit": b.jax_commit,
        "xla_commit": b.xla_commit,
        "xla_source": b.xla_source,
      }
      for r, b in zip(runs, built)
    ],
    "xla_ranges": _xla_ranges(built),
    "configs": compare(runs),
  }
