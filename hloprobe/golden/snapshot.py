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
jax/jaxlib match the manifest's or `strict` is set. `update.update_goldens`
writes the folder atomically. Neither lowers nor compiles: the sweep's
results come in. The folder and its manifest are read by `folder`.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Collection, Iterable, Mapping, Sequence

from hloprobe.compile import BASELINE, jaxlib_release
from hloprobe.engine import (
  SweepPlan,
  SweepSpec,
  plan_sweep,
  run_sweep,
)
from hloprobe.errors import GoldenError, HloprobeError, write_or_fail
from hloprobe.golden import format as fmt
from hloprobe.golden.diff import (
  CheckResult,
  FileChange,
  GoldenSiteChange,
  unified_diff,
)
from hloprobe.golden.ending import case_cannot_end
from hloprobe.golden.folder import (
  confine_sweep,
  default_golden_dir,
  golden_spec,
  list_golden_files,
  manifest_sweep,
  read_golden_file,
  read_manifest,
  spec_from_record,
  sweep_configs,
  sweep_record,
)
from hloprobe.golden.format import ConfigKey
from hloprobe.records import Config, ConfigResult

__all__ = [
  "Snapshot",
  "check",
  "check_sweep",
  "golden_check",
  "in_scope",
  "planned_sweep",
  "sweep_scope",
  "sweep_snapshot",
  "take_snapshot",
  "write_snapshot",
]


@dataclasses.dataclass(frozen=True)
class Snapshot:
  """The golden files one sweep makes, not yet written anywhere.

  Attributes:
    files: path relative to the golden folder -> full file text (header
      and canonical body).
    versions: {"jax": ..., "jaxlib": ...} of the process that made them.
    failed: configs that failed, as "cpu seed_mlp n=1 bfloat16: ..." lines.
    date: the date in the headers, "YYYY-MM-DD".
    planned: how many configs the sweep planned, or None where not known
      (a snapshot of results alone).
    unreported: the planned configs (as "cpu seed_mlp n=1 bfloat16") that
      gave no result at all, neither files nor a failure.
  """

  files: Mapping[str, str]
  versions: Mapping[str, str]
  failed: tuple[str, ...] = ()
  date: str = ""
  planned: int | None = None
  unreported: tuple[str, ...] = ()


def _key(c) -> ConfigKey:
  """The golden key of a `records.Config`."""
  experiment = None if c.experiment == BASELINE.name else c.experiment
  return ConfigKey(c.target.name, c.case, c.n, c.precision, experiment)


def take_snapshot(
  results: Iterable[ConfigResult],
  versions: Mapping[str, str],
  date: str | None = None,
  planned: Sequence[Config] | None = None,
) -> Snapshot:
  """The golden files of a sweep's results.

  Args:
    results: one `ConfigResult` per config (an experiment other than the
      baseline becomes the file name's `-<experiment>` suffix).
    versions: {"jax": ..., "jaxlib": ...}, e.g.
      `compile.jaxlib_release().versions`.
    date: header date "YYYY-MM-DD"; today (UTC) when None.
    planned: the configs the sweep planned (`records.Config`), so configs
      that reported nothing are named (`Snapshot.unreported`); None: not
      known.

  Returns:
    Three files per successful config, the StableHLO shared by the config's
    targets; failed configs are listed in `failed` and make no files of
    their own. So is a config whose StableHLO differs from another target's
    (a platform-specific lowering), which one shared file cannot hold.
  """
  date = date or fmt.today()
  files, failed, made_by = {}, [], {}
  reported = set()
  for r in results:
    key = _key(r.config)
    reported.add(key.words)
    if not r.ok:
      f = r.failure
      failed.append(f"{key.words}: failed at {f.stage}: {f.error}")
      continue
    new = fmt.config_files(key, r.compilation, versions, date, r.made)
    clash = [p for p, t in new.items() if files.get(p, t) != t]
    if clash:
      failed.append(
        f"{key.words}: failed at golden: its StableHLO differs from "
        f"{made_by[clash[0]]}'s, and goldens keep one per case and config"
      )
      continue
    made_by.update(dict.fromkeys(new, key.target))
    files.update(new)
  unreported = tuple(
    w for w in (_key(c).words for c in planned or ()) if w not in reported
  )
  count = None if planned is None else len(planned)
  return Snapshot(files, dict(versions), tuple(failed), date, count, unreported)


def write_snapshot(snap: Snapshot, directory: str) -> str:
  """Writes a snapshot's files (no manifest) under `directory`; returns it."""
  for rel, text in snap.files.items():
    path = os.path.join(directory, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(text)
  return directory


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
    sites = GoldenSiteChange.between(
      old.key.words, old.content["sites"], new.content["sites"]
    )
  return FileChange(rel, diff), sites


def in_scope(rel: str, scope: set[tuple] | None) -> bool:
  """Whether a golden file belongs to the configs `scope` (None: all do)."""
  named = fmt.path_key(rel)
  return scope is None or (named is not None and named[0].in_configs(scope))


def sweep_scope(
  sweep: SweepSpec | SweepPlan | Mapping[str, list],
) -> tuple[dict[str, list], set[tuple]]:
  """A sweep's MANIFEST.json record and the configs its golden files have.

  Golden files are named by the case's and target's own names (`Case.name`,
  `Target.name`) at the sizes the case runs (a module file's case at its
  own, `SweepPlan.sizes_of`), while a record keeps the words they were
  given by (`/tmp/my_case.py:make_case`, `golden/configs/x.txtpb`, batch
  sizes the module ignores): a narrowed check or update is scoped by the
  former and compared with the manifest by the latter.

  Args:
    sweep: a spec or plan (planned here; a plan looks nothing up again), or
      a record alone (keys as in `manifest_sweep`), whose words are then
      taken for the names (as a built-in case's and target's are).

  Returns:
    (the record, the (target, case, n, precision) configs by name).
  """
  if not isinstance(sweep, SweepSpec | SweepPlan):
    return dict(sweep), sweep_configs(sweep)
  plan = plan_sweep(sweep)
  configs = {
    (c.target.name, c.case, c.n, c.precision)
    for c in (p.config for p in plan.configs())
  }
  return sweep_record(plan), configs


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
  sweep: SweepSpec | SweepPlan | Mapping[str, list] | None = None,
  strict: bool = False,
) -> CheckResult:
  """Compares a candidate snapshot with the golden folder.

  Args:
    golden_dir: the golden folder.
    snap: the candidate, from `snapshot` on the sweep's results.
    sweep: the sweep that made `snap`, best its spec or plan (a record alone,
      keys as in `manifest_sweep`, holds words, not names: `sweep_scope`).
      Golden files outside it are not checked, unless it is the manifest's
      sweep (or None), when they are stale.
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
  record, scope = sweep_scope(sweep) if sweep is not None else (None, None)
  if record is None or sweep_configs(record) == sweep_configs(
    manifest["sweep"]
  ):
    scope = None
  golden = list_golden_files(golden_dir)
  scoped = [r for r in golden if in_scope(r, scope)]
  common = sorted(set(scoped) & set(snap.files))
  changed, sites, skipped = _compare_all(
    golden_dir, snap, common, strict or not note
  )
  missing = tuple(sorted(set(snap.files) - set(golden)))
  return CheckResult(
    golden_dir=golden_dir,
    compared=len(common) - len(skipped),
    changed=tuple(changed),
    sites=tuple(sites),
    missing=missing,
    not_files=tuple(
      r for r in missing if os.path.isdir(os.path.join(golden_dir, r))
    ),
    stale=tuple(r for r in scoped if _stale(r, snap)),
    failed=snap.failed,
    not_compared=tuple(skipped),
    note=note,
    planned=snap.planned,
    unreported=snap.unreported,
  )


def sweep_snapshot(spec: SweepSpec) -> Snapshot:
  """Runs a sweep as goldens are made (with explain_passes, see
  `spec_from_record`) and snapshots it with this process's jax/jaxlib,
  knowing the configs it planned (a config that reports nothing, or a
  sweep of none, fails a check: `CheckResult.ok`)."""
  spec = plan_sweep(dataclasses.replace(spec, explain_passes=True))
  planned = [p.config for p in spec.configs()]
  return take_snapshot(
    run_sweep(spec), jaxlib_release().versions, planned=planned
  )


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
    GoldenError: the folder is missing, corrupt or mid-update; a case
      ended the process (`ending.case_cannot_end`).
  """
  golden_dir = golden_dir or default_golden_dir()
  with case_cannot_end("golden check"):
    spec = plan_sweep(spec or golden_spec(golden_dir))
    snap = sweep_snapshot(spec)
  return check(golden_dir, snap, spec, strict=strict)


def planned_sweep(
  golden_dir: str,
  flag_values: Mapping[str, Sequence],
  given: Collection[str],
  jobs: int,
  writing: bool = False,
) -> SweepPlan:
  """`hloprobe golden check|update`'s sweep: MANIFEST.json's, each part
  whose flag was given on the command line replaced by the flag's value.

  Args:
    golden_dir: the golden folder (its MANIFEST.json may be missing).
    flag_values: "cases", "batch_sizes" (ints), "precisions", "targets" ->
      the command line's values, defaults included.
    given: the keys of `flag_values` whose flags were on the command line;
      the others take the manifest's value when it records one.
    jobs: worker processes at once.
    writing: an update: the sweep is confined to what the folder may
      hold (`folder.confine_sweep`) before any case is loaded.

  Raises:
    GoldenError: an update reaching outside the folder's cases/targets.
    InvalidArgumentError: a bad name, or nothing to sweep.
  """
  recorded = manifest_sweep(golden_dir) or {}
  words = {
    key: tuple(value if key in given or key not in recorded else recorded[key])
    for key, value in flag_values.items()
  }
  if writing:
    confine_sweep(golden_dir, words, writing=True)
  spec = spec_from_record(words).nonempty()
  return dataclasses.replace(spec, jobs=jobs)


def check_sweep(
  spec: SweepPlan,
  golden_dir: str,
  strict: bool,
  output_dir: str | None,
  records: Sequence[ConfigResult] | None = None,
) -> tuple[CheckResult, HloprobeError | None]:
  """`hloprobe golden check`: sweeps `spec` (or takes `records`, a
  `hloprobe merge` folder's) and compares with the goldens (`check`,
  capped); on a mismatch the new snapshot is written to `output_dir` (or
  a new temporary folder) for a person to diff or copy.

  Returns:
    (the result, its `candidate_dir` set where written; None, or the
    error writing the candidates failed with, which the caller raises
    once the comparison is shown).
  """
  if records is not None:
    snap = take_snapshot(records, jaxlib_release().versions)
  else:
    snap = sweep_snapshot(spec)
  result = check(golden_dir, snap, spec, strict=strict).capped()
  if result.ok:
    return result, None
  try:
    out = write_or_fail(
      "the candidate goldens", lambda: _write_candidates(snap, output_dir)
    )
  except HloprobeError as e:
    return result, e  # the comparison stands; only the copy failed
  return dataclasses.replace(result, candidate_dir=out), None


def _write_candidates(snap: Snapshot, output_dir: str | None) -> str:
  """Writes a mismatching snapshot to `output_dir` or a new temporary folder."""
  out = output_dir or tempfile.mkdtemp(prefix="hloprobe-golden-candidate-")
  return write_snapshot(snap, out)
