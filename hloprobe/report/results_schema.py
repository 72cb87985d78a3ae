"""results.json: a sweep's records as the versioned document for machines.

It formats what the records already say; it computes nothing new. The
schema below in words is shipped as a JSON Schema (draft 2020-12) beside
this module, `results.schema.json` (`schema_document`; package data):
`jsonschema.validate(doc, schema_document())` checks a results.json
(tests/report/results_schema_test.py checks a real sweep's). It requires
every field named here and allows fields added within a version. Missing
values are null; JSON is strict (no NaN or Infinity): a float that is not
finite (e.g. |err| of inf when f32 overflows) is null too.

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
       "dot_sites": [{"index": int, "op": "dot_general" | "convolution"
                        (every contraction site; a convolution's lhs is
                        its input, rhs its kernel, K its kernel's input
                        features times its window),
                      "location": "file:line" | null,
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
                      "selection": str | null (who chose the fate; under
                        --autotune_results per gemm fusion: "autotuned on
                        <device> (...)" or "no autotune entry for this
                        fusion; default config used (...)"),
                      "mapping": "source location" | "data flow" | null,
                      "candidates": [[str]] (an ambiguous site's; an
                        unknown one's merged dot not split back),
                      "conflict": str | null,
                      "merged_with": [int] | null (the other sites of
                        the dot XLA's dot-merger made of this one and
                        them; null: not merged),
                      "collective": str | null (a sharded program's
                        collective adding the site's partial sums, e.g.
                        "all-reduce over 8 devices (all-reduce.3)"),
                      "fp8_rewrite": str | null (a GPU site with fp8
                        operands: "fired (`__cublas$lt$matmul$f8`, ...)",
                        "did not fire: <condition>" or "unknown: ..."),
                      "rewritten_by": {"pass": str, "pipeline": str,
                                       "fate_after": str} | null}],
       "passes_explained": bool (rewritten_by is only meaningful if true),
       "passes_error": str | null,
       "ptxas": str | null, "dropped_config_fields": [str], "compile_notes": [str],
       "ptx_files": {kernel: path} (the PTX of every kernel a dot site's
                    effective algorithm was read from, "algorithm_source":
                    "ptx"; the path relative to results.json's folder,
                    where --output_dir writes it; added in version 3
                    without a bump),
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
                                       "without_abs" (null: not computed,
                                       a large program's), "share"}],
                      "top_site": int | null,
                      "site_bands": [{"site", "algorithm", "K",
                                      "worst_abs", "expected_abs",
                                      "operand_scale_max",
                                      "operand_scale_rms"} | null],
                      "best_candidate": str | null, "verdict": str,
                      "note": str | null, "leaf": str,
                      "output_dtype": str,
                      "leaf_verdicts": [[str, str]],
                      "reference": str (where the float64 reference
                                        comes from: the numpy executor,
                                        or "XLA:CPU float64 (not executed
                                        by the numpy executor: <why>)"),
                      "noise_floor_check": {"status": str ("trusted",
                                                "untrusted", "not checked:
                                                <why>"),
                                            "executor_row0_abs": float|null,
                                            "executor_max_abs": float|null,
                                            "band_abs": float | null,
                                            "independent_floor": {...} |
                                                null (as noise_floor)}
                                           | null,
                      "rows": [{"leaf": str, "row": int, "abs_err": float,
                                "floor_abs": float, "multiple": float |
                                null (inf: an error over a zero floor),
                                "rows": int, "beyond": int,
                                "row0_abs": float, "row0_multiple": float,
                                "output_dtype": str, "first_beyond": int,
                                "last_beyond": int (-1: none beyond),
                                "beyond_abs": float, "judged": [int] |
                                null (the rows judged, ascending: row 0,
                                a sample and a first pass's worst rows
                                of a case above 64 rows whose rows are
                                independent: declared rows_independent
                                or proven from its jaxpr (`numerics.
                                row_proof`); null: every row, as under
                                --all_rows; added in version 3 without a
                                bump), "judged_words": str (the same in
                                words), "words": str}
                               | null] (each leaf's worst judged row,
                        in "leaf_verdicts"' order, null where
                        a leaf is not judged by rows; `numerics.rows`;
                        added in version 3 without a bump: readers of
                        version 3 ignore it),
                      "row0_kernel_model": float | null (row 0 with the
                        "bit-exact model" sites by the kernel model,
                        `numerics.KernelRows`; null: no such site, or
                        the kernel model failed, see the note),
                      "row0_kernel_model_abs_err": float | null,
                      "row0_kernel_model_note": str | null (why row 0
                        by the kernel model is null despite a bit-exact
                        site; null otherwise),
                      "site_models": [{"site": int, "kind": "bit-exact
                        model" | "band", "why": str}] (these four added
                        in version 3 without a bump)} | null,
       "prediction_error": str | null,
       "made": {"row0": float | null, "row0_abs_err": float | null,
                "max_abs_err": float | null, "leaf": str | null (the
                  executed module with each gemm at its site's effective
                  algorithm: "what XLA made"),
                "deviation_abs": float | null, "bound_abs": float | null,
                "deviation_leaf": str (widened to float64 against the
                  float64 reference, and the F32 band it is judged by),
                "changed": bool, "localised": bool, "gemms": int,
                "changes": [{"instruction", "target", "fields", "site",
                             "pass_name", "rule", "source"}],
                "not_executed": [str],
                "rows": [as prediction's "rows" | null] (every row of
                  every leaf of the made run judged against the
                  prediction's noise floors; `Made.rows`),
                "judged_rows": [int] | null (the rows row0, max_abs_err,
                  deviation_abs and rows were judged on where the
                  prediction judged fewer than all, a large program's:
                  the module is run on those rows alone; null: every
                  row)} | null (added in version 3 without a bump:
                readers of version 3 ignore it),
       "verdict": str | null (the config's: "XLA changed the math: ..."
                  leads, else the prediction's),
       "timing_s": {"lower": float|null, "compile": float|null,
                    "run": float|null,
                    "stages": {stage: seconds} (see runtime/timing.py)}}
    ],
    "shard": {"index": int (0-based), "count": int, "fingerprint": str
              (sha256 of the plan: `SweepPlan.fingerprint`),
              "plan": {"cases", "batch_sizes", "precisions", "targets",
                       "experiments", "explain_passes", "inputs"[,
                       "batch_arg"]} (the words that
                make the plan again), "configs": [int] (each config's
                index in the whole plan)} (a `--shard` run's only; an
              unsharded or merged sweep's document has none; added in
              version 3 without a bump),
    "plan": {"cases", ...} (an unsharded or merged sweep's plan, the words
              as in "shard"'s: what `explain --results=DIR` sweeps; added
              in version 3 without a bump)
  }

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.resources
import json
import math
import os
import re

from hloprobe.ir import path_part
from hloprobe.records import ConfigResult
from hloprobe.report.explain_kernel import kernel_json
from hloprobe.report.site_words import (
  best_candidate_words,
  prediction_note,
  site_json,
)
from hloprobe.report.verdict_words import (
  config_words,
  judged_words,
  leaf_verdicts,
  prediction_words,
  row_words,
)
from hloprobe.sites import fate_summary

__all__ = [
  "SCHEMA_FILE",
  "SCHEMA_VERSION",
  "config_dir",
  "config_json",
  "dumps_json",
  "finite",
  "ptx_files",
  "results_json",
  "schema_document",
  "shard_json",
]

SCHEMA_VERSION = 3
# The JSON Schema of results.json, package data beside this module.
SCHEMA_FILE = "results.schema.json"
# What a kernel name may keep in a file name.
_FILE_RE = re.compile(r"[^\w.-]")


def schema_document() -> dict:
  """results.json's JSON Schema (`SCHEMA_FILE`), as a dict."""
  text = importlib.resources.files(__package__).joinpath(SCHEMA_FILE)
  return json.loads(text.read_text(encoding="utf-8"))


def finite(value):
  """`value` with every non-finite float (inf, -inf, nan) made None.

  Recurses into dicts, lists and tuples (tuples become lists, as JSON has
  them); other values come back unchanged.
  """
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, dict):
    return {k: finite(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [finite(v) for v in value]
  return value


def dumps_json(doc) -> str:
  """A JSON document as strict JSON text, indented by 2.

  Non-finite floats (e.g. an error of inf when operands near 1e37 overflow
  f32) become null: Python's default `Infinity` / `NaN` are not JSON, and
  strict parsers (jq, JavaScript, Go) reject them.
  """
  return json.dumps(finite(doc), indent=2, allow_nan=False)


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
    "noise_floor": _floor_json(p.noise),
    "row0_tolerance_abs": p.tolerance_abs,
    "site_shares": [dataclasses.asdict(x) for x in p.shares],
    "top_site": p.top_site,
    "site_bands": [
      None if b is None else dataclasses.asdict(b) for b in p.bands
    ],
    "best_candidate": best_candidate_words(p),
    "verdict": prediction_words(p),
    "note": prediction_note(p),
    "leaf": p.leaf,
    "output_dtype": p.output_dtype,
    "leaf_verdicts": [list(x) for x in leaf_verdicts(p)],
    "reference": p.reference,
    "noise_floor_check": _floor_check_json(p.floor_check),
    "rows": [_row_json(w) for w in p.rows],
    **kernel_json(p.kernel),
  }


def _floor_json(noise) -> dict:
  """A `numerics.NoiseFloor` as JSON: its scalars (not the per-row
  floors, which "rows" judges)."""
  return {
    "row0_abs": noise.row0_abs,
    "max_abs": noise.max_abs,
    "row0_spread_abs": noise.row0_spread_abs,
  }


def _row_json(w) -> dict | None:
  """A leaf's worst row (`numerics.WorstRow`) as JSON, with its words."""
  if w is None:
    return None
  doc = dataclasses.asdict(w) | {
    "judged": None if w.judged is None else list(w.judged),
    "judged_words": judged_words(w),
    "words": row_words(w),
  }
  # How the rows were picked and a large program's floor: in "judged_words".
  del doc["whole"], doc["row0_floor"]
  return doc


def _floor_check_json(c) -> dict | None:
  """A `numerics.floor_check.FloorCheck` (the headline leaf's) as JSON."""
  if c is None:
    return None
  independent = c.independent
  return {
    "status": c.status,
    "executor_row0_abs": c.executor_row0_abs,
    "executor_max_abs": c.executor_max_abs,
    "band_abs": c.band_abs,
    "independent_floor": None
    if independent is None
    else _floor_json(independent),
  }


def _made_json(r: ConfigResult) -> dict | None:
  m = r.made
  if m is None:
    return None
  s = m.stats
  return {
    "row0": s and s.row0,
    "row0_abs_err": s and s.row0_abs,
    "max_abs_err": s and s.max_abs,
    "leaf": s and s.leaf,
    "deviation_abs": m.deviation_abs,
    "bound_abs": m.bound_abs,
    "deviation_leaf": m.deviation_leaf,
    "changed": m.changed,
    "localised": m.localised,
    "gemms": m.gemms,
    "changes": [dataclasses.asdict(c) for c in m.changes],
    "not_executed": list(m.not_executed),
    "rows": [_row_json(w) for w in m.rows],
    "judged_rows": None if m.judged is None else list(m.judged),
  }


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


def config_dir(r: ConfigResult) -> str:
  """Relative folder of one config's files:
  `<target>/<case>/n<N>-<precision>[-<experiment>]` (no suffix for baseline),
  each part one folder name (`ir.path_part`: a case named "../x" or "/abs"
  stays inside --output_dir)."""
  c = r.config
  suffix = "" if c.experiment == "baseline" else f"-{c.experiment}"
  return os.path.join(
    path_part(c.target.name),
    path_part(c.case),
    path_part(f"n{c.n}-{c.precision}{suffix}"),
  )


def ptx_files(r: ConfigResult) -> dict[str, str]:
  """kernel name -> where `--output_dir` writes its PTX, relative to
  results.json's folder: `<config_dir>/ptx/<kernel>.ptx`."""
  comp = r.compilation
  return {
    name: os.path.join(config_dir(r), "ptx", _FILE_RE.sub("_", name) + ".ptx")
    for name in (comp.ptx if comp else {})
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
      site_json(x, (passes or {}).get(x.site.index)) for x in fates
    ],
    "passes_explained": passes is not None,
    "passes_error": comp and comp.passes_error,
    "numerics": _numerics_json(run),
    "prediction": _prediction_json(r),
    "prediction_error": r.prediction_error,
    "made": _made_json(r),
    "verdict": config_words(r),
    "ptxas": comp and comp.ptxas,
    "dropped_config_fields": list(comp.dropped_config_fields if comp else ()),
    "compile_notes": list(comp.compile_notes if comp else ()),
    "ptx_files": ptx_files(r),
    "timing_s": {
      "lower": comp and comp.lower_s,
      "compile": comp and comp.compile_s,
      "run": run and run.run_s,
      "stages": dict(r.timings),
    },
  }


def shard_json(plan) -> dict:
  """results.json's "shard" entry of a `--shard` run's plan
  (`sweep.SweepPlan` with its `shard`): the shard's index and count, the
  plan's fingerprint and words, each of the shard's configs' index in the
  whole plan (see `SCHEMA`)."""
  return {
    "index": plan.shard.index,
    "count": plan.shard.count,
    "fingerprint": plan.fingerprint(),
    "plan": plan.words(),
    "configs": list(plan.shard_indices()),
  }


def results_json(
  results: list[ConfigResult],
  versions: dict[str, str],
  host=None,
  shard=None,
  invariance: dict | None = None,
  plan: dict | None = None,
) -> dict:
  """The whole sweep as the versioned results.json document.

  Args:
    results: the sweep's records.
    versions: {"jax": ..., "jaxlib": ...}.
    host: the `host.HostCpu` the numbers were computed on, or None.
    shard: a `--shard` run's plan (`sweep.SweepPlan` with its `shard`),
      whose "shard" entry the document carries (`shard_json`), or None:
      an unsharded or merged sweep's document has none.
    invariance: explain's batch-invariance answer
      (`invariance_words.invariance_json`), or None: none asked.
    plan: the words of the sweep's plan (`sweep.SweepPlan.words`), or None;
      an unsharded or merged sweep's "plan" (a shard's is in "shard").
  """
  doc = {
    "schema": "hloprobe.results",
    "schema_version": SCHEMA_VERSION,
    "created": datetime.datetime.now(datetime.UTC).isoformat(
      timespec="seconds"
    ),
    **versions,
    "host": host.as_json() if host is not None else None,
    "configs": [config_json(r) for r in results],
  }
  if shard is not None:
    doc["shard"] = shard_json(shard)
  elif plan is not None:
    doc["plan"] = plan
  if invariance is not None:
    doc["invariance"] = invariance
  return doc
