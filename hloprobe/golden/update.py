"""Updating the golden folder atomically: `hloprobe golden update`.

What an update replaces depends on MANIFEST.json's sweep:

  - the same configs (or no manifest yet): the whole folder; golden files
    the new sweep does not make are removed (a folder with no manifest that
    holds other files is refused: it is not a golden folder);
  - a narrower sweep (every list a subset of the manifest's, e.g.
    `--targets=cpu --batch_sizes=1`): only the files of its configs; the
    files outside it and the manifest's sweep stay as they were. The
    manifest keeps its jax/jaxlib too while files made with them remain;
  - any other sweep: the whole folder, and the manifest records the new
    sweep; the result says so.

The new folder is written in full next to the old one (`.golden.update-*`),
then renamed into place; the old one is renamed aside first and removed
last. A failure before the final rename leaves the previous goldens; a
failure of the final rename moves them back. Files whose content did not
change keep their old bytes, header date included, so an update that
changes nothing changes no bytes.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence

from hloprobe.engine import SweepPlan, SweepSpec, plan_sweep
from hloprobe.errors import GoldenError, HloprobeError, InvalidArgumentError
from hloprobe.golden import format as fmt
from hloprobe.golden import lock
from hloprobe.golden.ending import case_cannot_end
from hloprobe.golden.folder import (
  MANIFEST,
  confine_sweep,
  default_golden_dir,
  golden_spec,
  list_golden_files,
  manifest_words,
  read_golden_file,
  read_manifest,
  sweep_configs,
  sweep_record,
)
from hloprobe.golden.snapshot import (
  CheckResult,
  Snapshot,
  check,
  check_sweep,
  in_scope,
  planned_sweep,
  sweep_scope,
  sweep_snapshot,
  take_snapshot,
  write_snapshot,
)

__all__ = [
  "GoldenRun",
  "UpdateResult",
  "against_goldens",
  "golden_command",
  "golden_update",
  "update_goldens",
]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateResult:
  """What `update` did; paths are relative to the golden folder.

  Attributes:
    golden_dir: the golden folder.
    added, changed, removed: files the update added, rewrote, deleted.
    unchanged: files of the sweep whose content was already right.
    kept: files outside a narrower sweep, kept as they were.
    note: how the update related to MANIFEST.json's sweep (merged into it,
      or replaced the folder), or None for a plain full update.
  """

  golden_dir: str
  added: tuple[str, ...]
  changed: tuple[str, ...]
  removed: tuple[str, ...]
  unchanged: int
  kept: int = 0
  note: str | None = None

  def render(self) -> str:
    """The result for people: one line per added, changed, removed file."""
    lines = [
      f"golden update of {self.golden_dir}: {len(self.added)} added, "
      f"{len(self.changed)} changed, {len(self.removed)} removed, "
      f"{self.unchanged} unchanged"
      + (f", {self.kept} kept outside this sweep" if self.kept else "")
    ]
    lines += [self.note] if self.note else []
    for word, paths in (
      ("added", self.added),
      ("changed", self.changed),
      ("removed", self.removed),
    ):
      lines += [f"  {word:8s}{p}" for p in paths]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
  """What one update replaces and what MANIFEST.json will say.

  Attributes:
    scope: the (target, case, n, precision) configs replaced; None for the
      whole folder.
    sweep: the sweep the manifest records.
    versions: the jax/jaxlib the manifest records.
    note: `UpdateResult.note`.
  """

  scope: set[tuple] | None
  sweep: Mapping[str, list]
  versions: Mapping[str, str]
  note: str | None = None


def _read_manifest(golden_dir: str) -> dict | None:
  """The folder's manifest, or None when it is absent or unreadable."""
  if not os.path.isfile(os.path.join(golden_dir, MANIFEST)):
    return None
  try:
    return read_manifest(golden_dir)
  except GoldenError:
    return None


def _refuse_foreign(golden_dir: str, old: list[str]) -> None:
  """Refuses, in one line, to replace a folder with no manifest that holds
  files no golden is named as (`format.path_key`), e.g. a `golden/` of
  the user's own tests: replacing the whole folder would remove them.

  Raises:
    GoldenError: the first such file named, and how many more.
  """
  foreign = [r for r in old if fmt.path_key(r) is None]
  if not foreign:
    return
  more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
  raise GoldenError(
    f"[hloprobe] golden update: {golden_dir} has no {MANIFEST} and holds "
    f"files that are not goldens ({foreign[0]}{more}); nothing written: "
    "give --golden_dir=DIR (a new folder, or one golden update made)"
  )


def _plan(
  golden_dir: str,
  snap: Snapshot,
  sweep: SweepSpec | SweepPlan | Mapping[str, list],
  old: list[str],
) -> _Plan:
  """Merge into the manifest's sweep when `sweep` is within it, else replace
  (`sweep_scope`: the manifest's words compared, the files' names scoped)."""
  sweep, names = sweep_scope(sweep)
  manifest = _read_manifest(golden_dir)
  if manifest is None:
    _refuse_foreign(golden_dir, old)
    note = f"no readable {MANIFEST}: replaced the whole folder" if old else None
    return _Plan(None, sweep, snap.versions, note)
  recorded = manifest["sweep"]
  extra = {k: [v for v in sweep[k] if v not in recorded[k]] for k in recorded}
  if any(extra.values()):
    words = "; ".join(
      f"{k} {', '.join(map(str, v))}" for k, v in extra.items() if v
    )
    return _Plan(
      None,
      sweep,
      snap.versions,
      f"this sweep is not within {MANIFEST}'s ({words} not in it): "
      f"replaced the whole folder, and {MANIFEST} records this sweep",
    )
  if sweep_configs(sweep) == sweep_configs(recorded):
    return _Plan(None, sweep, snap.versions)
  return _merge_plan(manifest, snap, names)


def _merge_plan(manifest: dict, snap: Snapshot, scope: set[tuple]) -> _Plan:
  """A narrower sweep: its configs replaced, the manifest's sweep kept."""
  versions = {"jax": manifest["jax"], "jaxlib": manifest["jaxlib"]}
  note = (
    f"merged into {MANIFEST}'s sweep: replaced the files of this sweep's "
    "configs, kept the others"
  )
  if versions != {k: snap.versions.get(k) for k in versions}:
    note += (
      f"; {MANIFEST} keeps jax {versions['jax']} / jaxlib "
      f"{versions['jaxlib']}, which made the files kept (an update of the "
      "whole sweep moves them all to this jax/jaxlib)"
    )
  return _Plan(scope, manifest["sweep"], versions, note)


def _same_body(golden_dir: str, rel: str, text: str) -> bool:
  """Whether a golden file holds the same content as `text` (corrupt: no)."""
  try:
    old = fmt.parse(rel, rel, read_golden_file(golden_dir, rel))
    return old.content == fmt.parse(rel, rel, text).content
  except GoldenError:
    return False


def _umask_mode(mode: int) -> int:
  """`mode` less this process's umask: what `open()` would give a new file
  (`tempfile.mkstemp` and `mkdtemp` make 0600 / 0700 whatever the umask)."""
  mask = os.umask(0)
  os.umask(mask)
  return mode & ~mask


def _new_stage(golden_dir: str) -> str:
  """An empty folder next to `golden_dir`, on the same file system."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  os.makedirs(parent, exist_ok=True)
  stage = tempfile.mkdtemp(prefix=f".{base}.update-", dir=parent)
  os.chmod(stage, _umask_mode(0o777))  # mkdtemp makes it 0o700
  return stage


def _fill(
  stage: str,
  golden_dir: str,
  snap: Snapshot,
  plan: _Plan,
  keep: set[str],
) -> None:
  """Writes the new golden folder into `stage`.

  Files in `keep` are copied from `golden_dir` byte for byte; the old
  manifest is kept too when no file of the snapshot changed and it says the
  same (its date then stays).
  """
  new = {rel: text for rel, text in snap.files.items() if rel not in keep}
  write_snapshot(Snapshot(new, snap.versions), stage)
  for rel in keep:
    os.makedirs(os.path.dirname(os.path.join(stage, rel)), exist_ok=True)
    shutil.copyfile(os.path.join(golden_dir, rel), os.path.join(stage, rel))
  words = manifest_words(golden_dir, plan.sweep)
  manifest = fmt.manifest_text(plan.versions, words, snap.date or fmt.today())
  if not new and os.path.isfile(os.path.join(golden_dir, MANIFEST)):
    old_text = read_golden_file(golden_dir, MANIFEST)
    if fmt.same_manifest(old_text, manifest) or (
      words == dict(plan.sweep)  # no paths: schema 2 reads as 3 does
      and fmt.same_manifest(old_text, _as_schema_2(manifest))
    ):
      manifest = old_text
  with open(os.path.join(stage, MANIFEST), "w") as f:
    f.write(manifest)


def _as_schema_2(text: str) -> str:
  """A schema 3 manifest's text as schema 2 writes it (the same fields)."""
  doc = json.loads(text)
  return json.dumps(doc | {"schema_version": 2})


def _swap_in(stage: str, golden_dir: str) -> None:
  """Replaces `golden_dir` by `stage`; on failure the old folder stays."""
  backup = stage + ".old"
  had_old = os.path.isdir(golden_dir)
  if had_old:
    os.rename(golden_dir, backup)
  try:
    os.rename(stage, golden_dir)
  except OSError as e:
    if had_old:
      os.rename(backup, golden_dir)
    raise GoldenError(
      f"[hloprobe] cannot move the new goldens into {golden_dir} ({e}); "
      "the previous goldens are unchanged"
    ) from e
  if had_old:
    shutil.rmtree(backup, ignore_errors=True)


def update_goldens(
  golden_dir: str,
  snap: Snapshot,
  sweep: SweepSpec | SweepPlan | Mapping[str, list],
  lock_timeout_s: float = 120.0,
) -> UpdateResult:
  """Writes a snapshot into the golden folder, atomically.

  A sweep narrower than MANIFEST.json's replaces only its own configs'
  files; any other replaces the whole folder (see the module docstring).
  The new folder is staged next to the old one and renamed into place, so
  an interrupted update leaves the previous goldens. Files whose content is
  unchanged keep their old text (and date); files of the replaced configs
  that the snapshot lacks are removed.

  Args:
    golden_dir: the golden folder (created if absent), or a symlink to
      one (the folder it names is updated; the link stays).
    snap: the new files, from `snapshot`.
    sweep: the sweep that made them, best its spec or plan (a record alone,
      keys as in `folder.manifest_sweep`, holds words, not the names golden
      files carry: `snapshot.sweep_scope`).
    lock_timeout_s: how long to wait for another update, in seconds.

  One update at a time per folder (`lock.golden_lock`: a second waits,
  then fails naming the holder); folders a killed update left are removed
  first and named in `note`.

  Raises:
    GoldenError: a config failed (nothing is written), the folder could
      not be replaced (the previous goldens stay), or another update held
      the lock too long.
  """
  if snap.failed:
    raise GoldenError(
      "[hloprobe] refusing to update goldens, configs failed:\n  "
      + "\n  ".join(snap.failed)
    )
  # A symlink (--golden_dir=LINK) is followed: the folder it names is
  # staged beside and replaced, the link kept (renaming the link itself
  # would replace it by a folder and leave the real goldens stale).
  real_dir = os.path.realpath(golden_dir)
  try:
    with lock.golden_lock(real_dir, lock_timeout_s):
      cleaned = lock.clean_leftovers(real_dir)
      result = _update_locked(real_dir, snap, sweep)
    result = dataclasses.replace(result, golden_dir=golden_dir)
  except OSError as e:
    raise GoldenError(  # e.g. the lock's folder cannot be made
      f"[hloprobe] cannot write the new goldens for {golden_dir} ({e}); "
      "the previous goldens are unchanged"
    ) from e
  if cleaned:
    note = "; ".join(filter(None, [result.note, *cleaned]))
    result = dataclasses.replace(result, note=note)
  return result


def _update_locked(
  golden_dir: str,
  snap: Snapshot,
  sweep: SweepSpec | SweepPlan | Mapping[str, list],
) -> UpdateResult:
  """`update`, holding the golden folder's lock."""
  old = list_golden_files(golden_dir) if os.path.isdir(golden_dir) else []
  plan = _plan(golden_dir, snap, sweep, old)
  replaced = {r for r in old if in_scope(r, plan.scope) or r in snap.files}
  same = {
    r
    for r in replaced
    if r in snap.files and _same_body(golden_dir, r, snap.files[r])
  }
  _stage_and_swap(golden_dir, snap, plan, same | (set(old) - replaced))
  return UpdateResult(
    golden_dir=golden_dir,
    added=tuple(sorted(set(snap.files) - set(old))),
    changed=tuple(sorted(set(snap.files) & replaced - same)),
    removed=tuple(sorted(replaced - set(snap.files))),
    unchanged=len(same),
    kept=len(set(old) - replaced),
    note=plan.note,
  )


def golden_update(
  spec: SweepSpec | None = None, golden_dir: str | None = None
) -> UpdateResult:
  """`hloprobe golden update` as a function: re-runs a sweep and writes it.

  Args:
    spec: the sweep; default the one MANIFEST.json records.
    golden_dir: the golden folder; default `default_golden_dir()`.

  Raises:
    GoldenError: as `update`, or no manifest when `spec` is None, or (one
      line, before the sweep) a manifest `golden check` would refuse
      (`folder.confine_sweep`), or a folder with no manifest holding
      files that are not goldens.
  """
  golden_dir = golden_dir or default_golden_dir()
  if os.path.isdir(golden_dir) and _read_manifest(golden_dir) is None:
    _refuse_foreign(golden_dir, list_golden_files(golden_dir))  # no sweep
  if isinstance(spec, SweepSpec):  # its words, before a case is loaded
    words = {
      key: [w for w in getattr(spec, key) if isinstance(w, str)]
      for key in ("cases", "targets")
    }
    confine_sweep(golden_dir, words, writing=True)
  spec = plan_sweep(spec or golden_spec(golden_dir))
  confine_sweep(golden_dir, sweep_record(spec), writing=True)
  return update_goldens(golden_dir, sweep_snapshot(spec), spec)


def _stage_and_swap(
  golden_dir: str, snap: Snapshot, plan: _Plan, keep: set[str]
) -> None:
  """Stages the new folder and swaps it in; OSError becomes GoldenError."""
  stage = None
  try:
    stage = _new_stage(golden_dir)
    _fill(stage, golden_dir, snap, plan, keep)
    _swap_in(stage, golden_dir)
  except OSError as e:
    raise GoldenError(
      f"[hloprobe] cannot write the new goldens for {golden_dir} ({e}); "
      "the previous goldens are unchanged"
    ) from e
  finally:
    if stage and os.path.isdir(stage):
      shutil.rmtree(stage)


@dataclasses.dataclass(frozen=True)
class GoldenRun:
  """`hloprobe golden check|update`'s outcome.

  Attributes:
    result: the comparison (`snapshot.CheckResult`, capped) or what the
      update wrote (`UpdateResult`); its `render()` is the report.
    ok: the goldens match (check), or were written (update).
    failed: the error writing the candidate goldens failed with (check,
      on a mismatch), for the caller to raise once the result is shown;
      else None.
  """

  result: CheckResult | UpdateResult
  ok: bool
  failed: HloprobeError | None = None


def golden_command(
  word: str,
  golden_dir: str | None,
  flag_values: Mapping[str, Sequence],
  given: Collection[str],
  jobs: int,
  *,
  strict: bool = False,
  output_dir: str | None = None,
  recorded: Callable[[SweepPlan], Sequence] | None = None,
  start: Callable[[Sequence], None] = lambda targets: None,
) -> GoldenRun:
  """`hloprobe golden check|update`'s library call: the sweep
  (`snapshot.planned_sweep`: MANIFEST.json's, each part whose flag was
  given replaced by the flag's value), then compared with the goldens
  (`snapshot.check_sweep`: on a mismatch the new snapshot is written to
  `output_dir` or a new temporary folder) or written over them
  (`golden_update`). Case code cannot end the command inside
  (`ending.case_cannot_end`).

  Args:
    word: "check" or "update".
    golden_dir: the golden folder; None: `folder.default_golden_dir()`.
    flag_values, given, jobs: as `snapshot.planned_sweep`.
    strict: compare full text even when jax/jaxlib differ from the
      manifest's (check).
    output_dir: where a mismatching snapshot is written (check), or None.
    recorded: None (sweep), or given the planned sweep its records, swept
      already (`golden check --results`: a `hloprobe merge` folder's).
    start: called with the plan's targets before anything runs (the
      command line starts JAX's backends there).

  Raises:
    InvalidArgumentError: a bad name, nothing to sweep, or `recorded`
      with "update" (`golden update` sweeps).
    GoldenError: as `snapshot.check` and `golden_update` (check: a
      missing folder or MANIFEST.json, or a folder of other files, is
      found before anything is swept, `folder.read_manifest`); an update
      reaching outside the folder's cases/targets; case code that ends
      the process.
  """
  golden_dir = golden_dir or default_golden_dir()
  if word == "check":  # a folder no check can pass fails before the sweep
    read_manifest(golden_dir)
  with case_cannot_end(f"golden {word}"):
    spec = planned_sweep(
      golden_dir, flag_values, given, jobs, writing=word == "update"
    )
    start(spec.targets)
    if word == "update":
      if recorded is not None:
        raise InvalidArgumentError(
          "--results is for `golden check`; `golden update` sweeps"
        )
      return GoldenRun(golden_update(spec, golden_dir), True)
    records = None if recorded is None else recorded(spec)
    result, failed = check_sweep(spec, golden_dir, strict, output_dir, records)
    return GoldenRun(result, result.ok, failed)


def against_goldens(
  golden_dir: str | None,
  records: Sequence,
  versions: Mapping[str, str],
  sweep: SweepSpec | SweepPlan | Mapping[str, list],
  *,
  update: bool = False,
) -> CheckResult | UpdateResult:
  """A sweep's records against the golden folder: their golden files
  (`snapshot.take_snapshot`) compared with it (`snapshot.check`), or,
  with `update`, written over it (`update_goldens`).

  Args:
    golden_dir: the golden folder; None: `folder.default_golden_dir()`.
    records: the sweep's `records.ConfigResult`s, one per config.
    versions: {"jax": ..., "jaxlib": ...} for the files' headers.
    sweep: the sweep that made them, best its spec or plan (see
      `snapshot.check`; a record alone holds words, not names).
    update: write the files instead of comparing.

  Raises:
    GoldenError: as `snapshot.check` and `update_goldens`.
  """
  golden_dir = golden_dir or default_golden_dir()
  snap = take_snapshot(records, versions)
  if update:
    return update_goldens(golden_dir, snap, sweep)
  return check(golden_dir, snap, sweep)
