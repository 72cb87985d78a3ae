"""The semantic golden (dot summaries) and what changed, in words and diffs.

`dot_summary` turns a config's `SiteFate`s into the summary dots.json holds.
The rest compares already-read file contents: no files, no JAX. `snapshot`
reads and writes the files and calls into this module. Site changes are
sentences a person reads first, such as (one line)

  a100 seed_mlp n=1 bfloat16 site 2:
    multiply+reduce F32_F32_F32 -> Triton gemm TF32_TF32_F32

and every changed file also gets a unified diff (difflib) of its canonical
body, so the words can be checked against the text.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence

from hloprobe.errors import counted
from hloprobe.sites import (
  EMITTER_KEYS,
  SiteFate,
  emitter_name,
  fate_summary,
)

__all__ = [
  "SUMMARY_KEYS",
  "CheckResult",
  "FileChange",
  "GoldenSiteChange",
  "dot_summary",
  "math_summary",
  "unified_diff",
]

# What a dot summary keeps of `SiteFate.record`: what the compiler
# decided, not where the source is or what XLA named its instructions.
SUMMARY_KEYS = (
  "lhs",
  "rhs",
  "result",
  "K",
  "lhs_batch_dims",
  "rhs_batch_dims",
  "lhs_contracting_dims",
  "rhs_contracting_dims",
  "stablehlo_precision",
  "stablehlo_algorithm",
  "fate",
  "fusion_kind",
  "backend_config_kind",
  "custom_call_target",
  "precision_config",
  "algorithm",
  "effective_algorithm",
  "split_k",
)


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenSiteChange:
  """One dot site whose summary differs between golden and candidate.

  Not a change over batch sizes (that is `report.explain.FateTransition`).

  Attributes:
    config: the config in words, e.g. "cpu seed_mlp n=1 bfloat16".
    site: the site index (program order of the StableHLO dot_generals).
    words: the change in words, e.g. "multiply+reduce -> dot".
  """

  config: str
  site: int
  words: str

  def __str__(self) -> str:
    return f"{self.config} site {self.site}: {self.words}"

  @classmethod
  def between(
    cls, config: str, old_sites: list[dict], new_sites: list[dict]
  ) -> list[GoldenSiteChange]:
    """Site-by-site changes between two dot summaries of one config.

    Args:
      config: the config in words, e.g. "cpu seed_mlp n=1 bfloat16".
      old_sites, new_sites: the `sites` lists of the golden and candidate
        `dots.json`, each site a dict with at least "site" (int) and "fate".

    Returns:
      One `GoldenSiteChange` per site that differs, was added or was
      removed, in site order.
    """
    old = {s.get("site"): s for s in old_sites}
    new = {s.get("site"): s for s in new_sites}
    changes = []
    for index in sorted(set(old) | set(new), key=lambda i: (i is None, i)):
      if index not in new:
        words = f"{_headline(old[index])} -> (site gone from the StableHLO)"
      elif index not in old:
        words = f"(new site) -> {_headline(new[index])}"
      else:
        words = _site_words(old[index], new[index])
      if words:
        changes.append(cls(config, index, words))
    return changes

  @classmethod
  def of_compilations(
    cls, config: str, old, new, keys: Sequence[str]
  ) -> list[GoldenSiteChange]:
    """`between` two compilations' dot summaries (`dot_summary` of each
    `records.Compilation`'s fates and passes; None: no sites), each site
    cut to `keys` (dots.json site keys, "site" among them)."""

    def sites(comp) -> list[dict]:
      if comp is None:
        return []
      summary = dot_summary(comp.fates, comp.passes)
      return [{k: s[k] for k in keys} for s in summary["sites"]]

    return cls.between(config, sites(old), sites(new))

  @classmethod
  def of_results_json(
    cls, config: str, old_dot_sites: list[dict], new_dot_sites: list[dict]
  ) -> list[GoldenSiteChange]:
    """`between` two results.json configs' "dot_sites" lists (each site's
    `SUMMARY_KEYS`, as dots.json keeps them)."""

    def sites(dot_sites) -> list[dict]:
      return [
        {"site": s["index"]} | {k: s.get(k) for k in SUMMARY_KEYS}
        for s in dot_sites or []
      ]

    return cls.between(config, sites(old_dot_sites), sites(new_dot_sites))


@dataclasses.dataclass(frozen=True, slots=True)
class FileChange:
  """A golden file whose compared content differs from the candidate.

  Attributes:
    path: path relative to the golden folder, e.g.
      "cpu/seed_mlp/n1-bfloat16.hlo".
    diff: unified diff of the canonical bodies, golden first.
  """

  path: str
  diff: str


# How many lines of each file's diff `golden check` and the pytest plugin
# print (`CheckResult.capped`).
DIFF_LINES = 60


@dataclasses.dataclass(frozen=True)
class CheckResult:
  """The outcome of `snapshot.check`.

  Attributes:
    golden_dir: the golden folder checked.
    compared: how many files were compared.
    changed: files whose content differs, with diffs.
    sites: semantic changes of dot sites, in words.
    missing: files the sweep makes that the golden folder lacks.
    stale: golden files no config of the sweep makes.
    failed: configs that failed to lower or compile, with their error.
    not_compared: text files skipped because jax/jaxlib differ from the
      manifest's (without `strict`).
    note: the one line on a jax/jaxlib version difference, or None.
    candidate_dir: where the candidate files were written, or None.
    planned: how many configs the sweep planned (None: not known). A
      sweep that planned none checked nothing: not ok.
    unreported: planned configs that gave no result (neither files nor a
      failure: e.g. a case that ended the sweep): not ok.
    not_files: those of `missing` where the golden folder holds a
      directory instead of the file, named as such.
  """

  golden_dir: str
  compared: int
  changed: tuple[FileChange, ...] = ()
  sites: tuple[GoldenSiteChange, ...] = ()
  missing: tuple[str, ...] = ()
  stale: tuple[str, ...] = ()
  failed: tuple[str, ...] = ()
  not_compared: tuple[str, ...] = ()
  note: str | None = None
  candidate_dir: str | None = None
  planned: int | None = None
  unreported: tuple[str, ...] = ()
  not_files: tuple[str, ...] = ()

  @property
  def ok(self) -> bool:
    """True when every compared file matches, nothing is missing, stale
    or failed, and every planned config reported (at least one planned)."""
    return not (
      self.changed
      or self.missing
      or self.stale
      or self.failed
      or self.unreported
      or self.planned == 0
    )

  def capped(self, max_lines: int = DIFF_LINES) -> CheckResult:
    """This result with each file's diff cut to `max_lines` lines, the
    rest counted ("... (N more diff lines)"): what `golden check` and the
    pytest plugin print (the candidate files hold the whole)."""
    shortened = []
    for change in self.changed:
      lines = change.diff.splitlines()
      if len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = lines[:max_lines] + [f"... ({more} more diff lines)"]
      shortened.append(dataclasses.replace(change, diff="\n".join(lines)))
    return dataclasses.replace(self, changed=tuple(shortened))

  def render(self) -> str:
    """The result for people: counts, the version note, changes in words, diffs."""
    lines = [
      f"golden check of {self.golden_dir}: "
      f"{counted(self.compared, 'file')} compared, "
      f"{len(self.changed)} changed, {len(self.missing)} missing, "
      f"{len(self.stale)} stale, {len(self.failed)} failed configs: "
      + ("OK" if self.ok else "MISMATCH")
    ]
    if self.note:
      lines.append(self.note)
    if self.planned == 0:
      lines.append("the sweep planned no config: nothing was checked")
    sections = (
      ("Semantic changes:", [str(s) for s in self.sites]),
      ("Failed configs:", list(self.failed)),
      (
        f"Configs that reported nothing ({len(self.unreported)} of "
        f"{self.planned} planned):",
        list(self.unreported),
      ),
      (
        "Missing golden files (run `hloprobe golden update`):",
        [
          f"{m} (a directory there, not a file)" if m in self.not_files else m
          for m in self.missing
        ],
      ),
      (
        "Stale golden files (no config of this sweep makes them):",
        list(self.stale),
      ),
    )
    for title, items in sections:
      if items:
        lines += ["", title] + [f"  {item}" for item in items]
    for change in self.changed:
      lines += ["", change.diff.rstrip("\n")]
    if self.candidate_dir:
      lines += [
        "",
        f"candidate files written to {self.candidate_dir} (the whole "
        f"diff: diff -ru {self.golden_dir} {self.candidate_dir})",
      ]
    return "\n".join(lines)


def unified_diff(
  golden_lines: list[str], candidate_lines: list[str], path: str
) -> str:
  """A unified diff (3 lines of context) from the golden to the candidate."""
  return "\n".join(
    difflib.unified_diff(
      golden_lines,
      candidate_lines,
      fromfile=f"golden/{path}",
      tofile=f"candidate/{path}",
      lineterm="",
    )
  )


def _show(value, key: str | None = None) -> str:
  """A summary field's value; a missing split-K is "none" (XLA's split-K
  rewriter did not split the site: `SiteFate.split_k` None), any other
  missing value "n/a"."""
  if value is None:
    return "none" if key == "split_k" else "n/a"
  return str(value)


def _algorithm_key(site: dict) -> str:
  """The algorithm a headline shows: the effective one when known."""
  return (
    "effective_algorithm" if site.get("effective_algorithm") else "algorithm"
  )


def _headline(site: dict) -> str:
  """`<fate> <algorithm>`, e.g. "Triton gemm TF32_TF32_F32"."""
  algorithm = site.get(_algorithm_key(site))
  fate = str(site.get("fate"))
  return f"{fate} {algorithm}" if algorithm else fate


def _emitter(site: dict) -> str | None:
  """A summary's emitter in one name (`dot_sites.emitter_name`)."""
  return emitter_name(site.get("fate"), [site.get(k) for k in EMITTER_KEYS])


def _site_words(old: dict, new: dict) -> str | None:
  """One site's change in words, or None when nothing differs.

  The headline `<fate> <algorithm> -> <fate> <algorithm>` comes first when
  it changed, then `emitter: old -> new` when the most specific of
  `EMITTER_KEYS` changed; every other field that differs follows as
  `field: old -> new`.
  """
  if old == new:
    return None
  parts, shown = [], set()
  if _headline(old) != _headline(new):
    parts.append(f"{_headline(old)} -> {_headline(new)}")
    shown = {"fate", _algorithm_key(old), _algorithm_key(new)}
  emitters = [_emitter(old), _emitter(new)]
  if emitters[0] != emitters[1]:
    parts.append(f"emitter: {_show(emitters[0])} -> {_show(emitters[1])}")
    shown |= set(EMITTER_KEYS)
  for key in dict.fromkeys([*old, *new]):
    if key in shown or old.get(key) == new.get(key):
      continue
    before = _show(old.get(key), key) if key in old else "(absent)"
    after = _show(new.get(key), key) if key in new else "(absent)"
    parts.append(f"{key}: {before} -> {after}")
  return "; ".join(parts)


def _site_summary(f: SiteFate, rewritten_by) -> dict:
  record = f.record(rewritten_by)
  out = {"site": record["index"]} | {k: record[k] for k in SUMMARY_KEYS}
  by = record["rewritten_by"]
  out["pass"] = f"{by['pass']} ({by['pipeline']})" if by else None
  return out


def dot_summary(
  fates: Iterable[SiteFate], passes: Mapping | None = None
) -> dict:
  """The semantic golden of one config: {"fate_summary", "sites"}.

  Args:
    fates: the config's dot sites.
    passes: site index -> `passes.PassAttribution` (from a sweep with
      explain_passes); a site absent from it has "pass": null.
  """
  fates = list(fates)
  passes = passes or {}
  return {
    "fate_summary": fate_summary(fates),
    "sites": [_site_summary(f, passes.get(f.site.index)) for f in fates],
  }


def math_summary(made) -> dict | None:
  """What XLA made, as dots.json's "math": None where the executed module
  does what the program asks (or was not checked); else {"changed",
  "changes": [{"target", "fields", "site", "pass", "rule"}],
  "not_executed": [target]} (`numerics.Made`; no instruction names, as
  goldens keep none).
  """
  if made is None or made.agrees:
    return None
  return {
    "changed": made.changed,
    "changes": [
      {
        "target": c.target,
        "fields": c.fields,
        "site": c.site,
        "pass": c.pass_name,
        "rule": c.rule,
      }
      for c in made.changes
    ],
    "not_executed": [x.split(" (", 1)[0] for x in made.not_executed],
  }
