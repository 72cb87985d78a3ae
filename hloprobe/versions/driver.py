"""One sweep under each of several jaxlib versions: venv, then worker.

`run_versions` is what `hloprobe versions` and `hloprobe bisect` share.
`plan` first says, per version, where it runs: the running interpreter for
its own jaxlib, a cached venv, or a Python to make one with
(`pythons.Pythons.choose`, asked only when some venv must be made), or why
it cannot be installed. Then `run_one` makes the venv where needed
(`venvs.ensure_venv`, CPU-only when every target is the CPU) and runs the
same sweep in it (`run.run_version`). A version that cannot be installed
(no wheel for any Python found, pip failed) becomes a `VersionRun` with
`installed=False` and "not installed: <why>"; the others still run.

Versions are independent, so `run_versions` runs up to `jobs` of them at
once (threads, each waiting on its own pip and worker processes); the runs
come back in the order asked, whichever finishes first.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from hloprobe.compile import jaxlib_release
from hloprobe.errors import InvalidArgumentError
from hloprobe.versions import compare, pythons, run, venvs
from hloprobe.versions.children import Children

__all__ = [
  "VersionRuns",
  "Where",
  "check_releases",
  "plan",
  "plugin_versions",
  "run_one",
  "run_versions",
  "versions_runs",
]

# Where one version runs: a ready venv (the running interpreter's, or a
# cached one), the Python to make its venv with, or why it cannot be
# installed.
Where = venvs.Venv | pythons.Interpreter | str


def _is_running(python: str | None) -> bool:
  """Whether `--python` (None: not given) is this process's interpreter."""
  if python is None:
    return True
  mine = {os.path.realpath(sys.executable)}
  mine.add(os.path.realpath(pythons.running_python().path))
  return os.path.realpath(python) in mine


def plan(
  versions: Sequence[str],
  request: dict,
  cache_dir: str,
  python: str | None = None,
  found: pythons.Pythons | None = None,
) -> dict[str, Where]:
  """Where each version runs, decided before any runs.

  Args:
    versions: jaxlib releases.
    request: `run.spec_request(spec)` (its targets say whether CUDA is
      needed).
    cache_dir: the venv cache folder.
    python: `--python`: every version runs under that interpreter (the
      running one keeps its own jaxlib only when it is that one); None:
      each under a Python it supports.
    found: `pythons.survey(python)` when the caller has it; else it is
      made here, once, when some version needs it.

  Returns:
    version -> a `venvs.Venv`, a `pythons.Interpreter` to make one with,
    or one line saying why it cannot be installed.
  """
  cuda = any(t != "cpu" for t in request["targets"])
  memo: list[pythons.Pythons] = [found] if found is not None else []

  def survey() -> pythons.Pythons:
    if not memo:
      memo.append(pythons.survey(python))
    return memo[0]

  out: dict[str, Where] = {}
  for v in versions:
    if v == jaxlib_release().installed and _is_running(python):
      out[v] = venvs.running_venv()
      continue
    accepted = None
    if python is not None:
      accepted = tuple(p.version for p in survey().found)
    cached = venvs.find_venv(v, cache_dir, cuda, accepted)
    if cached is not None:
      out[v] = cached
      continue
    try:
      out[v] = survey().choose(v)
    except venvs.VenvError as e:
      out[v] = str(e)
  return out


def plugin_versions(
  where: Mapping[str, Where], request: dict
) -> dict[str, tuple[str, ...]]:
  """The index's `jax-cuda12-plugin` versions, asked once for many runs.

  The plugin's wheels are per Python (jax-cuda12-plugin 0.12.0.1 has none
  for 3.11), so the index is asked once for each Python that makes a venv.

  Args:
    where: `plan(...)`.
    request: `run.spec_request(spec)`.

  Returns:
    Python version ("3.13") -> the plugin's versions for it, () when the
    index cannot be asked (the venvs are then made without the plugin);
    {} when no venv with CUDA must be made (every target is the CPU, or
    no version needs a venv made).
  """
  cuda = any(t != "cpu" for t in request["targets"])
  making = {
    w.version for w in where.values() if isinstance(w, pythons.Interpreter)
  }
  if not cuda:
    return {}
  found = {}
  for version in sorted(making, key=venvs.version_key):
    try:
      found[version] = venvs.index_versions(
        "jax-cuda12-plugin", python_version=version
      )
    except venvs.VenvError:
      found[version] = ()
  return found


def _not_installed(jaxlib: str, why: str, python_version=None):
  return run.VersionRun(
    jaxlib,
    error=f"not installed: {why}",
    installed=False,
    python_version=python_version,
  )


def run_one(
  jaxlib: str,
  where: Where,
  request: dict,
  cache_dir: str,
  requirements: tuple[str, ...] = (),
  plugin_versions: Mapping[str, tuple[str, ...]] | None = None,
  log: Callable[[str], None] = lambda line: None,
  children: Children | None = None,
) -> run.VersionRun:
  """One version's sweep; its failure is recorded, never raised.

  Args:
    jaxlib: e.g. "0.4.38".
    where: `plan(...)[jaxlib]`.
    request: `run.spec_request(spec)`.
    cache_dir: the venv cache folder.
    requirements: for `verify.judge` in the worker.
    plugin_versions: `plugin_versions(...)`: Python version -> the index's
      `jax-cuda12-plugin` versions for it (a Python not in it: asked when
      its venv is made).
    log: called with one progress line at a time (e.g. print to stderr).
    children: runs pip and the worker (`Children.stop` ends them).
  """
  start = time.perf_counter()
  cuda = any(t != "cpu" for t in request["targets"])
  if isinstance(where, str):
    log(f"jaxlib {jaxlib}: not installed: {where}")
    return _not_installed(jaxlib, where)
  venv = where
  if isinstance(where, pythons.Interpreter):
    log(f"jaxlib {jaxlib}: making its venv with Python {where.version}")
    try:
      venv = venvs.ensure_venv(
        jaxlib,
        cache_dir,
        where.path,
        where.version,
        (plugin_versions or {}).get(where.version),
        cuda=cuda,
        children=children,
      )
    except venvs.VenvError as e:
      log(f"jaxlib {jaxlib}: not installed: {e}")
      return _not_installed(jaxlib, str(e), where.version)
  made = "made" if venv.created else "reused"
  log(
    f"jaxlib {jaxlib}: venv {made} ({venv.path}, Python "
    f"{venv.python_version}, {time.perf_counter() - start:.0f} s); sweeping"
  )
  result = run.run_version(venv, request, requirements, children=children)
  if result.error:
    log(f"jaxlib {jaxlib}: {result.error}")
  return result


def run_versions(
  versions: Sequence[str],
  request: dict,
  cache_dir: str,
  requirements: tuple[str, ...] = (),
  log: Callable[[str], None] = lambda line: None,
  jobs: int = 1,
  python: str | None = None,
) -> list[run.VersionRun]:
  """`run_one` for each version, up to `jobs` at once; in `versions` order.

  A version that fails in any way is a `VersionRun` with its error; the
  others still run. An interrupt (KeyboardInterrupt) kills every pip and
  worker process started, then propagates.

  Args:
    python: `--python` (see `plan`), or None.
  """
  where = plan(versions, request, cache_dir, python)
  plugins = plugin_versions(where, request)
  children = Children()

  def one(jaxlib: str) -> run.VersionRun:
    try:
      return run_one(
        jaxlib,
        where[jaxlib],
        request,
        cache_dir,
        requirements,
        plugins,
        log,
        children,
      )
    except Exception as e:  # e.g. a full disk: this version's error only
      log(f"jaxlib {jaxlib}: {type(e).__name__}: {e}")
      return run.VersionRun(jaxlib, error=f"{type(e).__name__}: {e}")

  if jobs <= 1 or len(versions) <= 1:
    return [one(v) for v in versions]
  pool = concurrent.futures.ThreadPoolExecutor(
    min(jobs, len(versions)), thread_name_prefix="hloprobe-version"
  )
  try:
    futures = [pool.submit(one, v) for v in versions]
    return [f.result() for f in futures]
  except BaseException:
    children.stop()
    raise
  finally:
    pool.shutdown(wait=True, cancel_futures=True)


@dataclasses.dataclass(frozen=True)
class VersionRuns:
  """`hloprobe versions`' outcome: one release's run per --jaxlib release.

  Attributes:
    runs: the runs, in --jaxlib order.
  """

  runs: tuple[run.VersionRun, ...]

  @property
  def ok(self) -> bool:
    """Whether every release ran every config (a release not installed, a
    worker or a config that failed: False)."""
    return all(
      r.ok and all(c["status"] == "ok" for c in r.reply["results"]["configs"])
      for r in self.runs
    )

  def text(self, fmt: str = "table", changes_only: bool = False) -> str:
    """The comparison as `hloprobe versions` prints it
    (`compare.render_versions`: "table", "markdown" or "json")."""
    return compare.render_versions(self.runs, fmt, changes_only)


def versions_runs(
  jaxlib: Sequence[str],
  spec,
  cache_dir: str | None,
  log: Callable[[str], None] = lambda line: None,
  python: str | None = None,
) -> VersionRuns:
  """`hloprobe versions`' library call: the sweep `spec` (an
  `engine.SweepPlan`) under each release of `jaxlib` (--jaxlib, as given;
  repeats dropped), up to `spec.jobs` at once (`run_versions`); their
  runs, with the comparison's text (`VersionRuns.text`).

  Args:
    cache_dir: where the venvs are kept; None: `venvs.default_cache_dir`.
    log: takes each progress line.
    python: `--python` (see `plan`), or None.

  Raises:
    InvalidArgumentError: no release, an empty one or a malformed one.
  """
  request = run.spec_request(spec)
  names = check_releases(jaxlib)
  runs = run_versions(
    names,
    request,
    cache_dir or venvs.default_cache_dir(),
    log=log,
    jobs=spec.jobs,
    python=python,
  )
  return VersionRuns(tuple(runs))


def check_releases(names: Sequence[str]) -> list[str]:
  """--jaxlib's releases, each a version number, repeats dropped.

  Raises:
    InvalidArgumentError: none, an empty one or a malformed one.
  """
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
