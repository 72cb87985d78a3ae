"""Golden snapshots of what the compiler emits, checked and updated on purpose.

Layout, under a golden folder (`default_golden_dir()`):

  MANIFEST.json                  jax/jaxlib versions and the sweep that made
                                 the files (cases, targets, batch sizes,
                                 precisions)
  stablehlo/<case>/n<N>-<precision>[-<experiment>].stablehlo.mlir
                                 canonical StableHLO (`canonical`), one for
                                 all targets: JAX lowers before any target
                                 compiles
  <target>/<case>/n<N>-<precision>[-<experiment>].hlo
                                 canonical optimized HLO (`canonical`)
  <target>/<case>/n<N>-<precision>[-<experiment>].dots.json
                                 the dot summary: the semantic golden

Every file says what it is (`format`): text files start with
`// hloprobe-golden v1 kind=... [target=...] jax=... jaxlib=... date=...`,
dots.json carries the same fields in its "golden" object. Headers are never
compared; bodies are.

`check` compares a candidate `Snapshot` (made from sweep results by
`snapshot`) with the folder: dot summaries always, full text too when
jax/jaxlib match the manifest's or `strict` is set. `update.update`
writes the folder atomically. Neither lowers nor compiles: the sweep's
results come in.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable, Mapping

from hloprobe.compile import lowering
from hloprobe.compile.experiments import BASELINE
from hloprobe.compile.targets import is_config_path
from hloprobe.errors import GoldenError
from hloprobe.golden import format as fmt
from hloprobe.golden.diff import (
  CheckResult,
  FileChange,
  describe_site_changes,
  unified_diff,
)
from hloprobe.golden.format import ConfigKey
from hloprobe.ir.textfile import read_text_file
from hloprobe.records import ConfigResult
from hloprobe.sweep import SweepPlan, SweepSpec, plan_sweep, run_sweep

__all__ = [
  "MANIFEST",
  "Snapshot",
  "check",
  "default_golden_dir",
  "golden_check",
  "golden_spec",
  "in_scope",
  "list_golden_files",
  "manifest_sweep",
  "read_golden_file",
  "read_manifest",
  "snapshot",
  "sweep_configs",
  "sweep_record",
  "sweep_snapshot",
  "write_snapshot",
]

MANIFEST = "MANIFEST.json"


@dataclasses.dataclass(frozen=True)
class Snapshot:
  """The golden files one sweep makes, not yet written anywhere.

  Attributes:
    files: path relative to the golden folder -> full file text (header
      and canonical body).
    versions: {"jax": ..., "jaxlib": ...} of the process that made them.
    failed: configs that failed, as "cpu seed_mlp n=1 bfloat16: ..." lines.
    date: the date in the headers, "YYYY-MM-DD".
  """

  files: Mapping[str, str]
  versions: Mapping[str, str]
  failed: tuple[str, ...] = ()
  date: str = ""


def default_golden_dir() -> str:
  """`golden/` at the repository root, else `golden/` in the current folder.

  The repository root is the folder above the `hloprobe` package when it
  holds `pyproject.toml` (a source checkout, as in CI); an installed
  hloprobe uses `./golden`.
  """
  package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  root = os.path.dirname(package)
  if os.path.isfile(os.path.join(root, "pyproject.toml")):
    return os.path.join(root, "golden")
  return os.path.abspath("golden")


def sweep_record(spec: SweepSpec) -> dict[str, list]:
  """A sweep as MANIFEST.json records it (keys as in `manifest_sweep`)."""
  return {
    "cases": list(spec.case_names),
    "targets": list(spec.target_names),
    "batch_sizes": list(spec.batch_sizes),
    "precisions": list(spec.precisions),
  }


def spec_from_record(record: Mapping[str, Iterable]) -> SweepPlan:
  """The sweep a MANIFEST.json record describes, as goldens are made.

  Goldens always name the pass that rewrote each site, so the sweep runs
  with explain_passes.
  """
  return plan_sweep(
    SweepSpec(
      cases=tuple(record["cases"]),
      batch_sizes=tuple(record["batch_sizes"]),
      precisions=tuple(record["precisions"]),
      targets=tuple(record["targets"]),
      explain_passes=True,
    )
  )


def snapshot(
  results: Iterable[ConfigResult],
  versions: Mapping[str, str],
  date: str | None = None,
) -> Snapshot:
  """The golden files of a sweep's results.

  Args:
    results: one `ConfigResult` per config (an experiment other than the
      baseline becomes the file name's `-<experiment>` suffix).
    versions: {"jax": ..., "jaxlib": ...}, e.g. `lowering.versions()`.
    date: header date "YYYY-MM-DD"; today (UTC) when None.

  Returns:
    Three files per successful config, the StableHLO shared by the config's
    targets; failed configs are listed in `failed` and make no files of
    their own. So is a config whose StableHLO differs from another target's
    (a platform-specific lowering), which one shared file cannot hold.
  """
  date = date or fmt.today()
  files, failed, made_by = {}, [], {}
  for r in results:
    c = r.config
    experiment = None if c.experiment == BASELINE.name else c.experiment
    key = ConfigKey(c.target.name, c.case, c.n, c.precision, experiment)
    if not r.ok:
      f = r.failure
      failed.append(f"{key.words}: failed at {f.stage}: {f.error}")
      continue
    new = fmt.config_files(key, r.compilation, versions, date)
    clash = [p for p, t in new.items() if files.get(p, t) != t]
    if clash:
      failed.append(
        f"{key.words}: failed at golden: its StableHLO differs from "
        f"{made_by[clash[0]]}'s, and goldens keep one per case and config"
      )
      continue
    made_by.update(dict.fromkeys(new, c.target.name))
    files.update(new)
  return Snapshot(files, dict(versions), tuple(failed), date)


def write_snapshot(snap: Snapshot, directory: str) -> str:
  """Writes a snapshot's files (no manifest) under `directory`; returns it."""
  for rel, text in snap.files.items():
    path = os.path.join(directory, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(text)
  return directory


def list_golden_files(directory: str) -> list[str]:
  """Relative paths of the files under `directory`, manifest excluded."""
  out = []
  for root, dirs, names in os.walk(directory):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in names:
      rel = os.path.relpath(os.path.join(root, name), directory)
      if rel != MANIFEST and not name.startswith("."):
        out.append(rel.replace(os.sep, "/"))
  return sorted(out)


def read_golden_file(directory: str, rel: str) -> str:
  """The text of one file; GoldenError naming it when it cannot be read."""
  path = os.path.join(directory, rel)
  return read_text_file(path, f"[hloprobe] golden file {path}", GoldenError)


def _interrupted_update(golden_dir: str) -> str | None:
  """The previous goldens an interrupted update left aside, or None."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  if not os.path.isdir(parent):
    return None
  for name in sorted(os.listdir(parent)):
    if name.startswith(f".{base}.update-") and name.endswith(".old"):
      return os.path.join(parent, name)
  return None


def _require_dir(golden_dir: str) -> None:
  """Raises a clear GoldenError when the folder is absent."""
  if os.path.isdir(golden_dir):
    return
  left = _interrupted_update(golden_dir)
  hint = (
    f"{left} holds the previous goldens of an interrupted update: move it back"
    if left
    else "create it with `hloprobe golden update`"
  )
  raise GoldenError(f"[hloprobe] no golden folder at {golden_dir}; {hint}")


def read_manifest(golden_dir: str) -> dict:
  """The folder's MANIFEST.json as a dict.

  Raises:
    GoldenError: the folder or manifest is missing or malformed.
  """
  _require_dir(golden_dir)
  path = os.path.join(golden_dir, MANIFEST)
  if not os.path.isfile(path):
    raise GoldenError(
      f"[hloprobe] {path} is missing; recreate the goldens with `hloprobe golden update`"
    )
  return fmt.parse_manifest(path, read_golden_file(golden_dir, MANIFEST))


def manifest_sweep(golden_dir: str) -> dict[str, list] | None:
  """The sweep recorded in the folder's manifest, or None without one.

  An older manifest schema's sweep is read too, so `golden update` can
  remake an older folder in the current layout.

  Returns:
    {"cases": [str], "targets": [str], "batch_sizes": [int],
     "precisions": [str]}.
  """
  if not os.path.isfile(os.path.join(golden_dir, MANIFEST)):
    return None
  path = os.path.join(golden_dir, MANIFEST)
  text = read_golden_file(golden_dir, MANIFEST)
  sweep = fmt.parse_manifest(path, text, sweep_only=True)["sweep"]
  _confine_targets(golden_dir, sweep["targets"])
  return sweep


def _confine_targets(golden_dir: str, words: Iterable[str]) -> None:
  """A committed manifest reads config files only inside its folder.

  Raises:
    GoldenError: a config-file target resolves (symlinks too) outside the
      golden folder.
  """
  root = os.path.realpath(golden_dir)
  for word in words:
    if not is_config_path(word):
      continue
    where = os.path.realpath(word)
    if os.path.commonpath([root, where]) != root:
      raise GoldenError(
        f"[hloprobe] {os.path.join(golden_dir, MANIFEST)}: target config "
        f"{word!r} is outside the golden folder; keep the configs a "
        "manifest names inside it"
      )


def sweep_configs(sweep: Mapping[str, list]) -> set[tuple]:
  """The (target, case, n, precision) configs of a sweep record."""
  return set(
    itertools.product(
      sweep["targets"],
      sweep["cases"],
      sweep["batch_sizes"],
      sweep["precisions"],
    )
  )


def _version_note(
  manifest: dict, versions: Mapping[str, str], strict: bool
) -> str | None:
  made = (manifest["jax"], manifest["jaxlib"])
  now = (versions.get("jax"), versions.get("jaxlib"))
  if made == now:
    return None
  what = (
    "comparing full text too (--strict)"
    if strict
    else "comparing dot summaries only (--strict compares full text too)"
  )
  return (
    f"goldens were made with jax {made[0]} / jaxlib {made[1]}, this is "
    f"jax {now[0]} / jaxlib {now[1]}: {what}"
  )


def _compare(
  golden_dir: str, rel: str, candidate: str
) -> tuple[FileChange | None, list]:
  """One file: (its change or None, its site changes)."""
  path = os.path.join(golden_dir, rel)
  old = fmt.parse(path, rel, read_golden_file(golden_dir, rel))
  new = fmt.parse(f"candidate/{rel}", rel, candidate)
  if old.content == new.content:
    return None, []
  diff = unified_diff(old.lines(), new.lines(), rel)
  sites = []
  if old.kind == "dots.json":
    sites = describe_site_changes(
      old.key.words, old.content["sites"], new.content["sites"]
    )
  return FileChange(rel, diff), sites


def in_scope(rel: str, scope: set[tuple] | None) -> bool:
  """Whether a golden file belongs to the configs `scope` (None: all do)."""
  named = fmt.path_key(rel)
  return scope is None or (named is not None and named[0].in_configs(scope))


def _stale(rel: str, snap: Snapshot) -> bool:
  """A golden file the snapshot lacks, and not because its config failed."""
  failed = {line.split(": failed at")[0] for line in snap.failed}
  named = fmt.path_key(rel)
  if rel in snap.files or named is None:
    return rel not in snap.files
  words = named[0].words
  # A StableHLO file's words lack the target the failed lines start with.
  return not any(
    f == words or (named[0].target is None and f.split(" ", 1)[-1] == words)
    for f in failed
  )


def _compare_all(
  golden_dir: str, snap: Snapshot, paths: list[str], text_too: bool
) -> tuple[list, list, list]:
  """(file changes, site changes, paths not compared) of common files.

  Raises:
    GoldenError: naming every corrupt golden file at once.
  """
  changed, sites, skipped, errors = [], [], [], []
  for rel in paths:
    if not text_too and not rel.endswith(".dots.json"):
      skipped.append(rel)
      continue
    try:
      change, site_changes = _compare(golden_dir, rel, snap.files[rel])
    except GoldenError as e:
      errors.append(str(e).removeprefix("[hloprobe] "))
      continue
    changed += [change] if change else []
    sites += site_changes
  if errors:
    raise GoldenError(
      "[hloprobe] corrupt golden files:\n  " + "\n  ".join(errors)
    )
  return changed, sites, skipped


def check(
  golden_dir: str,
  snap: Snapshot,
  sweep: Mapping[str, list] | None = None,
  strict: bool = False,
) -> CheckResult:
  """Compares a candidate snapshot with the golden folder.

  Args:
    golden_dir: the golden folder.
    snap: the candidate, from `snapshot` on the sweep's results.
    sweep: the sweep that made `snap` (keys as in `manifest_sweep`). Golden
      files outside it are not checked, unless it is the manifest's sweep
      (or None), when they are stale.
    strict: compare full text even when jax/jaxlib differ from the
      manifest's.

  Returns:
    A `CheckResult`; `ok` is True when everything compared matches.

  Raises:
    GoldenError: the folder or its manifest is missing or corrupt, or
      compared golden files lack a header, are truncated or corrupt; one
      message names every such file.
  """
  manifest = read_manifest(golden_dir)
  note = _version_note(manifest, snap.versions, strict)
  whole = sweep is None or sweep_configs(sweep) == sweep_configs(
    manifest["sweep"]
  )
  scope = None if whole else sweep_configs(sweep)
  golden = list_golden_files(golden_dir)
  scoped = [r for r in golden if in_scope(r, scope)]
  common = sorted(set(scoped) & set(snap.files))
  changed, sites, skipped = _compare_all(
    golden_dir, snap, common, strict or not note
  )
  return CheckResult(
    golden_dir=golden_dir,
    compared=len(common) - len(skipped),
    changed=tuple(changed),
    sites=tuple(sites),
    missing=tuple(sorted(set(snap.files) - set(golden))),
    stale=tuple(r for r in scoped if _stale(r, snap)),
    failed=snap.failed,
    not_compared=tuple(skipped),
    note=note,
  )


def sweep_snapshot(spec: SweepSpec) -> Snapshot:
  """Runs a sweep as goldens are made (with explain_passes, see
  `spec_from_record`) and snapshots it with this process's jax/jaxlib."""
  spec = dataclasses.replace(spec, explain_passes=True)
  return snapshot(run_sweep(spec), lowering.versions())


def golden_spec(golden_dir: str | None = None) -> SweepPlan:
  """The sweep MANIFEST.json records in `golden_dir` (default: `golden/`).

  Raises:
    GoldenError: the folder or its manifest is missing or corrupt.
  """
  golden_dir = golden_dir or default_golden_dir()
  recorded = manifest_sweep(golden_dir)
  if recorded is None:
    raise GoldenError(f"{golden_dir}: MANIFEST.json records no sweep")
  return spec_from_record(recorded)


def golden_check(
  spec: SweepSpec | None = None,
  golden_dir: str | None = None,
  strict: bool = False,
) -> CheckResult:
  """`hloprobe golden check` as a function: re-runs a sweep and compares.

  Args:
    spec: the sweep; default the one MANIFEST.json records (`golden_spec`).
    golden_dir: the golden folder; default `default_golden_dir()`.
    strict: compare full text even under other jax/jaxlib versions.

  Returns:
    The comparison (`CheckResult.ok` when all match).

  Raises:
    GoldenError: the folder is missing, corrupt or mid-update.
  """
  golden_dir = golden_dir or default_golden_dir()
  spec = plan_sweep(spec or golden_spec(golden_dir))
  snap = sweep_snapshot(spec)
  return check(golden_dir, snap, sweep_record(spec), strict=strict)
