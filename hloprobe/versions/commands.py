"""`hloprobe versions`, `bisect` and `cache`, with their values from cli.py.

Progress (venv made or reused, each worker's failure) goes to stderr, one
line at a time; the table, JSON or answer to stdout. Exit status: 0 when
every version ran every config (bisect: an answer was found), 1 otherwise
(a version not installed, a worker or a config failed), 2 for bad input
(raised as InvalidArgumentError for cli.py to print).
"""

from __future__ import annotations

import os
import sys

from hloprobe.errors import InvalidArgumentError
from hloprobe.report import render as report
from hloprobe.versions import bisect, compare, driver, pythons, run, venvs

__all__ = ["cmd_bisect", "cmd_cache", "cmd_versions"]


def _log(line: str) -> None:
  print(f"hloprobe: {line}", file=sys.stderr, flush=True)


def _check_spec(spec) -> dict:
  if spec.experiments:
    raise InvalidArgumentError(
      "versions and bisect sweep the baseline only; drop --experiment"
    )
  return run.spec_request(spec)


def _check_versions(names: list[str]) -> list[str]:
  if not names or not all(names):
    raise InvalidArgumentError(
      "--jaxlib needs at least one release and no empty ones, e.g. "
      "--jaxlib=0.4.35,0.10.2"
    )
  for name in names:
    try:
      venvs.version_key(name)
    except venvs.VenvError as e:
      raise InvalidArgumentError(f"--jaxlib: {e}") from None
  return list(dict.fromkeys(names))


def cmd_versions(
  spec,
  jaxlib: list[str],
  cache_dir: str | None,
  fmt: str,
  changes_only: bool,
  python: str | None = None,
) -> int:
  """Runs the sweep under each version, up to `spec.jobs` at once, and
  prints the comparison (in the order of `jaxlib`).

  Args:
    python: --python (a path): every version's venv is made with it;
      None: each with a Python it supports (`pythons`).

  Raises:
    InvalidArgumentError: no or malformed --jaxlib, experiments asked for.
  """
  request = _check_spec(spec)
  names = _check_versions(jaxlib)
  runs = driver.run_versions(
    names,
    request,
    cache_dir or venvs.default_cache_dir(),
    log=_log,
    jobs=spec.jobs,
    python=python,
  )
  if fmt == "json":
    print(report.dumps_json(compare.versions_json(runs)))
  else:
    print(compare.render_versions(runs, fmt, changes_only))
  ok = all(
    r.ok and all(c["status"] == "ok" for c in r.reply["results"]["configs"])
    for r in runs
  )
  return 0 if ok else 1


def cmd_bisect(
  spec,
  good: str | None,
  bad: str | None,
  require: str,
  cache_dir: str | None,
  python: str | None = None,
) -> int:
  """Bisects the index's releases between --good and --bad.

  The releases are those with a wheel for a Python found here (or for
  --python's), each probed under a Python it supports.

  Raises:
    InvalidArgumentError: --good or --bad missing or not a release, a requirement
      that cannot be judged on a sweep alone, or one batch size with
      "consistent".
  """
  from hloprobe import verify

  if not good or not bad:
    raise InvalidArgumentError(
      "bisect needs --good=V and --bad=V, e.g. --good=0.4.35 --bad=0.10.2"
    )
  requirements = verify.parse_requirements(require)
  if "golden" in requirements:
    raise InvalidArgumentError(
      "bisect judges consistent and accurate; golden files belong to one jaxlib"
    )
  verify.check_batch_sizes(requirements, spec.batch_sizes)
  request = _check_spec(spec)
  found = pythons.survey(python)
  releases = found.releases()
  if not releases:  # exit 1
    raise venvs.VenvError(
      "cannot list jaxlib releases: " + ("; ".join(found.problems) or "none")
    )
  between = bisect.releases_between(releases, good, bad)
  _log(
    f"bisecting {len(between)} releases: {', '.join(between)} (Pythons "
    f"found: {', '.join(found.versions())})"
  )
  cache_dir = cache_dir or venvs.default_cache_dir()
  where = driver.plan(between, request, cache_dir, python, found)
  result = bisect.bisect(between, request, requirements, cache_dir, _log, where)
  print(bisect.render_bisect(result, requirements))
  return 0 if result.after is not None else 1


def _mib(size_bytes: int) -> str:
  return f"{size_bytes / 2**20:.1f} MiB"


def cmd_cache(words: list[str], cache_dir: str, max_mb: int) -> int:
  """`hloprobe cache`: the cache folder, its records and venvs;
  `hloprobe cache clear`: removes the records (venvs stay).

  Args:
    words: [] or ["clear"].
    cache_dir: --cache_dir (or its default).
    max_mb: --cache_max_mb, the records' bound in MiB.

  Raises:
    InvalidArgumentError: another word.
  """
  from hloprobe.runtime import cache

  if words not in ([], ["clear"]):
    raise InvalidArgumentError(
      f"`cache` takes no word or `clear`, got {words}; e.g. "
      "`hloprobe cache clear`"
    )
  store = cache.RecordCache(cache_dir)
  print(f"cache folder: {cache_dir}")
  if words == ["clear"]:
    gone = store.clear()
    print(f"removed {gone.entries} records ({_mib(gone.size_bytes)})")
  held = store.usage()
  print(
    f"records: {held.entries} ({_mib(held.size_bytes)} of {max_mb} MiB, "
    "--cache_max_mb; the least recently used go first)"
  )
  venv_dir = os.path.join(cache_dir, "venvs")
  found = venvs.cached_venvs(venv_dir)
  names = ", ".join(name for name, _ in found) or "none"
  total = sum(size for _, size in found)
  print(f"venvs: {len(found)} ({_mib(total)}): {names}")
  if found:
    print(f"  (kept by `clear`; rm -r {venv_dir}/<name> removes one)")
  return 0
