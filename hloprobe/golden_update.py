"""Replacing the golden folder atomically: `hloprobe golden update`.

The new folder is written in full next to the old one (`.golden.update-*`),
then renamed into place; the old one is renamed aside first and removed
last. A failure before the final rename leaves the previous goldens; a
failure of the final rename moves them back. Files whose content did not
change keep their old text, header date included, so an update that changes
nothing changes no bytes.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Mapping

from hloprobe import golden_format as fmt
from hloprobe.errors import GoldenError
from hloprobe.golden import (
  MANIFEST,
  Snapshot,
  list_golden_files,
  read_golden_file,
  write_snapshot,
)

__all__ = ["UpdateResult", "update"]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateResult:
  """What `update` did; paths are relative to the golden folder."""

  golden_dir: str
  added: tuple[str, ...]
  changed: tuple[str, ...]
  removed: tuple[str, ...]
  unchanged: int

  def render(self) -> str:
    """The result for people: one line per added, changed, removed file."""
    lines = [
      f"golden update of {self.golden_dir}: {len(self.added)} added, "
      f"{len(self.changed)} changed, {len(self.removed)} removed, "
      f"{self.unchanged} unchanged"
    ]
    for word, paths in (
      ("added", self.added),
      ("changed", self.changed),
      ("removed", self.removed),
    ):
      lines += [f"  {word:8s}{p}" for p in paths]
    return "\n".join(lines)


def _same_body(golden_dir: str, rel: str, text: str) -> bool:
  """Whether a golden file holds the same content as `text` (corrupt: no)."""
  try:
    old = fmt.parse(rel, rel, read_golden_file(golden_dir, rel))
    return old.content == fmt.parse(rel, rel, text).content
  except GoldenError:
    return False


def _new_stage(golden_dir: str) -> str:
  """An empty folder next to `golden_dir`, on the same file system."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  os.makedirs(parent, exist_ok=True)
  stage = tempfile.mkdtemp(prefix=f".{base}.update-", dir=parent)
  os.chmod(stage, 0o755)  # mkdtemp makes it 0o700
  return stage


def _fill(
  stage: str,
  golden_dir: str,
  snap: Snapshot,
  sweep: Mapping[str, list],
  keep: set[str],
) -> None:
  """Writes the new golden folder into `stage`.

  Files in `keep` are copied from `golden_dir` unchanged; the old manifest
  is kept too when it says the same (its date then stays).
  """
  files = dict(snap.files)
  for rel in keep:
    files[rel] = read_golden_file(golden_dir, rel)
  write_snapshot(Snapshot(files, snap.versions), stage)
  manifest = fmt.manifest_text(snap.versions, sweep, snap.date or fmt.today())
  old_manifest = os.path.join(golden_dir, MANIFEST)
  if keep == set(snap.files) and os.path.isfile(old_manifest):
    old_text = read_golden_file(golden_dir, MANIFEST)
    if fmt.same_manifest(old_text, manifest):
      manifest = old_text
  with open(os.path.join(stage, MANIFEST), "w") as f:
    f.write(manifest)


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


def update(
  golden_dir: str, snap: Snapshot, sweep: Mapping[str, list]
) -> UpdateResult:
  """Replaces the golden folder by a snapshot, atomically.

  The new folder is staged next to the old one and renamed into place, so
  an interrupted update leaves the previous goldens. Files whose content is
  unchanged keep their old text (and date); files the snapshot lacks are
  removed.

  Args:
    golden_dir: the golden folder (created if absent).
    snap: the new files, from `snapshot`.
    sweep: the sweep that made them, recorded in MANIFEST.json.

  Raises:
    GoldenError: a config failed (nothing is written), or the folder could
      not be replaced (the previous goldens stay).
  """
  if snap.failed:
    raise GoldenError(
      "[hloprobe] refusing to update goldens, configs failed:\n  "
      + "\n  ".join(snap.failed)
    )
  old = list_golden_files(golden_dir) if os.path.isdir(golden_dir) else []
  same = {
    r
    for r in old
    if r in snap.files and _same_body(golden_dir, r, snap.files[r])
  }
  stage = None
  try:
    stage = _new_stage(golden_dir)
    _fill(stage, golden_dir, snap, sweep, same)
    _swap_in(stage, golden_dir)
  except OSError as e:
    raise GoldenError(
      f"[hloprobe] cannot write the new goldens for {golden_dir} ({e}); "
      "the previous goldens are unchanged"
    ) from e
  finally:
    if stage and os.path.isdir(stage):
      shutil.rmtree(stage)
  return UpdateResult(
    golden_dir=golden_dir,
    added=tuple(sorted(set(snap.files) - set(old))),
    changed=tuple(sorted(set(snap.files) & set(old) - same)),
    removed=tuple(sorted(set(old) - set(snap.files))),
    unchanged=len(same),
  )
