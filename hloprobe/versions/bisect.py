"""`hloprobe bisect`: the first jaxlib release where a requirement's verdict
changes.

The releases are the package index's for the Pythons found here
(`pythons.Pythons.releases`; `--python`'s alone when given) from --good to
--bad inclusive, each run under a Python it supports (`driver.plan`). Each
probe runs the sweep in that release's venv and judges the requirements on
its own configs (`verify.judge`: "consistent", "accurate"); its verdict is
PASS, FAIL, or unknown when it could not be installed, or the worker or a
config failed. Binary search assumes one
change between good and bad (as `git bisect` does); a probe that is
unknown is replaced by the nearest release inside the window that is not,
and if none is, the window is reported as not narrowed further.

The answer names both neighbours, their verdicts and evidence, the XLA
commits between them with GitHub's compare link (`commits.xla_range`),
the emitters and passes of the contraction sites whose fate or effective algorithm
moved (`fate_movers`, from the two runs' site records), and every dot-site
difference (`golden.GoldenSiteChange.between`).

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from hloprobe.errors import InvalidArgumentError
from hloprobe.golden import GoldenSiteChange
from hloprobe.sites import EMITTER_KEYS, emitter_name
from hloprobe.versions import commits, compare, driver, pythons, venvs
from hloprobe.versions.run import VersionRun, spec_request

__all__ = [
  "BisectResult",
  "bisect_between",
  "bisect_releases",
  "fate_movers",
  "releases_between",
  "render_bisect",
  "verdict",
]

UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class BisectResult:
  """The outcome of a bisect.

  Attributes:
    releases: the releases searched, oldest first.
    probed: jaxlib -> its verdict ("PASS", "FAIL" or "unknown"), in the
      order probed.
    before, after: the neighbours where the verdict changes (`after` is the
      first release with the new verdict); None when good and bad agree.
    window: releases between before and after that could not be judged.
    runs: jaxlib -> its run, for the two neighbours.
    site_changes: dot-site differences from before to after, in words.
    xla_range: the XLA commits from before to after in one line, with the
      compare link (`commits.xla_range`); None when good and bad agree.
    movers: the emitters and passes of the sites whose fate or effective
      algorithm moved from before to after (`fate_movers`).
  """

  releases: tuple[str, ...]
  probed: dict[str, str]
  before: str | None
  after: str | None
  window: tuple[str, ...]
  runs: dict[str, VersionRun]
  site_changes: tuple[str, ...]
  xla_range: str | None = None
  movers: tuple[str, ...] = ()
  requirements: tuple[str, ...] = ()

  def text(self) -> str:
    """The answer in words (`render_bisect`), for `requirements`."""
    return render_bisect(self, self.requirements)


def releases_between(
  releases: Sequence[str], good: str, bad: str
) -> tuple[str, ...]:
  """The releases from good to bad inclusive, oldest first (either order).

  Raises:
    InvalidArgumentError: good or bad is not among `releases` (the
      index's for the Pythons found).
  """
  for name, v in (("good", good), ("bad", bad)):
    if v not in releases:
      raise InvalidArgumentError(
        f"--{name}={v} is not a jaxlib release the package index serves for "
        f"the Pythons found here; e.g. {', '.join(releases[-3:])}"
      )
  lo, hi = sorted((good, bad), key=venvs.version_key)
  key = venvs.version_key
  return tuple(
    v for v in sorted(releases, key=key) if key(lo) <= key(v) <= key(hi)
  )


def verdict(run: VersionRun) -> str:
  """PASS, FAIL or unknown (the worker or a config failed) for one run."""
  if not run.ok:
    return UNKNOWN
  configs = run.reply["results"]["configs"]
  if not configs or any(c["status"] != "ok" for c in configs):
    return UNKNOWN
  judged = run.reply["requirements"]
  return "PASS" if judged and all(r["passed"] for r in judged) else "FAIL"


def bisect_releases(
  releases: Sequence[str],
  request: dict,
  requirements: tuple[str, ...],
  cache_dir: str,
  log: Callable[[str], None] = lambda line: None,
  where: Mapping[str, driver.Where] | None = None,
) -> BisectResult:
  """Binary search over `releases` (from `releases_between`).

  Args:
    where: `driver.plan(releases, ...)`; None: planned here (no
      `--python`).

  The package index's plugin versions are asked once, before the first
  probe (`driver.plugin_versions`), not once per venv made.
  """
  runs: dict[str, VersionRun] = {}
  probed: dict[str, str] = {}
  if where is None:
    where = driver.plan(releases, request, cache_dir)
  plugins = driver.plugin_versions(where, request)

  def probe(i: int) -> str:
    v = releases[i]
    if v not in runs:
      runs[v] = driver.run_one(
        v, where[v], request, cache_dir, requirements, plugins, log=log
      )
      probed[v] = verdict(runs[v])
      log(f"jaxlib {v}: {probed[v]}")
    return probed[v]

  lo, hi = 0, len(releases) - 1
  first = probe(lo)
  if probe(hi) == first or UNKNOWN in (first, probed[releases[hi]]):
    return _result(releases, probed, runs, None, None, ())
  while hi - lo > 1:
    mid = _judged_index(probe, lo, hi)
    if mid is None:
      break
    if probed[releases[mid]] == first:
      lo = mid
    else:
      hi = mid
  window = tuple(releases[lo + 1 : hi])
  return _result(releases, probed, runs, releases[lo], releases[hi], window)


def _judged_index(probe, lo: int, hi: int) -> int | None:
  """The index nearest the middle of (lo, hi) whose verdict is known."""
  mid = (lo + hi) // 2
  order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
  for i in order:
    if probe(i) != UNKNOWN:
      return i
  return None


def _result(releases, probed, runs, before, after, window) -> BisectResult:
  changes: tuple[str, ...] = ()
  xla, movers = None, ()
  if before and after:
    changes = _site_changes(runs[before], runs[after])
    table = commits.load_table()
    ends = [
      commits.built_from(v, runs[v].reply.get("jax_commit"), table)
      for v in (before, after)
    ]
    xla = commits.xla_range(*ends)
    movers = fate_movers(runs[before], runs[after])
  kept = {v: runs[v] for v in (before, after) if v in runs}
  return BisectResult(
    tuple(releases),
    dict(probed),
    before,
    after,
    window,
    kept,
    changes,
    xla,
    movers,
  )


def _emitter(site: dict) -> str:
  names = [site.get(k) for k in EMITTER_KEYS]
  return emitter_name(site.get("fate"), names) or "n/a"


def _pass(site: dict, explained: bool) -> str:
  if not explained:
    return "n/a"
  by = site.get("rewritten_by")
  return by["pass"] if by else "none"


def fate_movers(old: VersionRun, new: VersionRun) -> tuple[str, ...]:
  """The emitters and passes of the contraction sites whose fate or effective
  algorithm moved from `old` to `new`, one line per (emitter, pass)
  change with the configs and sites it holds for, e.g.
  "emitter __cublas$gemm -> __triton_nested_gemm_fusion, pass none -> none:
  a100 seed_mlp tensorfloat32 n=2 site 0".

  The pass is the one `rewritten_by` names (the XLA pass that rewrote the
  site, "none" when none did), "n/a" where the run did not attribute
  passes (`--explain_passes` off or failed). Sites in only one run are
  left out (`site_changes` names them).
  """
  found: dict[tuple, list[str]] = {}
  for entry in compare.compare([old, new]):
    cells = [entry["cells"][r.jaxlib] for r in (old, new)]
    if any(c["status"] != "ok" for c in cells):
      continue
    a, b = ({s["index"]: s for s in c["dot_sites"]} for c in cells)
    for i in sorted(set(a) & set(b)):
      moved = any(a[i].get(k) != b[i].get(k) for k in _MOVES)
      if not moved:
        continue
      key = (
        _emitter(a[i]),
        _emitter(b[i]),
        _pass(a[i], cells[0]["passes_explained"]),
        _pass(b[i], cells[1]["passes_explained"]),
      )
      where = (
        f"{entry['target']} {entry['case']} {entry['precision']} "
        f"n={entry['n']} site {i}"
      )
      found.setdefault(key, []).append(where)
  return tuple(
    f"emitter {e0} -> {e1}, pass {p0} -> {p1}: {'; '.join(sites)}"
    for (e0, e1, p0, p1), sites in found.items()
  )


_MOVES = ("fate", "effective_algorithm")


def _site_changes(old: VersionRun, new: VersionRun) -> tuple[str, ...]:
  """Dot-site differences between two runs; one line per (target, case,
  precision, site, change) with the batch sizes it holds for, e.g.
  "a100 seed_mlp tensorfloat32 n=2,3 site 0: cuBLASLt ... -> Triton ..."."""
  found: dict[tuple, list[int]] = {}
  for entry in compare.compare([old, new]):
    cells = [entry["cells"][r.jaxlib] for r in (old, new)]
    if any(c["status"] != "ok" for c in cells):
      continue
    a, b = (c["dot_sites"] for c in cells)
    for change in GoldenSiteChange.of_results_json("", a, b):
      key = (
        entry["target"],
        entry["case"],
        entry["precision"],
        change.site,
        change.words,
      )
      found.setdefault(key, []).append(entry["n"])
  return tuple(
    f"{t} {c} {p} n={','.join(map(str, ns))} site {i}: {words}"
    for (t, c, p, i, words), ns in found.items()
  )


def render_bisect(result: BisectResult, requirements: Sequence[str]) -> str:
  """The answer in words: the neighbours, their evidence, the site changes."""
  asked = ",".join(requirements)
  lines = [
    "probed: "
    + ", ".join(
      f"{v} {result.probed[v]}" for v in result.releases if v in result.probed
    )
  ]
  if result.before is None:
    first, last = result.releases[0], result.releases[-1]
    lines.append(
      f"no change to bisect: --require={asked} is {result.probed.get(first)} "
      f"at {first} and {result.probed.get(last)} at {last}"
    )
    return "\n".join(lines)
  b, a = result.before, result.after
  lines.append(
    f"--require={asked} changes from {result.probed[b]} at jaxlib {b} to "
    f"{result.probed[a]} at jaxlib {a}"
    + (
      f" (not judged between them: {', '.join(result.window)})"
      if result.window
      else " (neighbouring releases)"
    )
  )
  for v in (b, a):
    lines.append(f"\njaxlib {v} ({result.probed[v]}):")
    for r in result.runs[v].reply["requirements"]:
      lines += [f"  {r['name']}: {line}" for line in r["evidence"]]
  lines.append(f"\n{result.xla_range}")
  lines.append(
    f"\nemitters and passes of the contraction sites whose fate or effective "
    f"algorithm moved from jaxlib {b} to {a}:"
  )
  lines += [f"  {m}" for m in result.movers] or ["  none"]
  lines.append(f"\ncontraction sites that differ from jaxlib {b} to {a}:")
  lines += [f"  {c}" for c in result.site_changes] or ["  none"]
  return "\n".join(lines)


def bisect_between(
  spec,
  good: str | None,
  bad: str | None,
  require: Sequence[str],
  cache_dir: str | None,
  log: Callable[[str], None] = lambda line: None,
  python: str | None = None,
) -> BisectResult:
  """`hloprobe bisect`'s library call: the index's releases between `good`
  and `bad` (those with a wheel for a Python found here, or for `python`'s,
  each probed under a Python it supports), bisected on the requirements
  `require` judged on the sweep `spec` (an `engine.SweepPlan`). The
  result's `text()` is the answer in words.

  Args:
    good, bad: --good and --bad, the releases with the old and the new
      verdict (None: not given, an error).
    require: --require's names, as given ("consistent", "accurate").
    cache_dir: where the venvs are kept; None: `venvs.default_cache_dir`.
    log: takes each progress line (the releases bisected first).

  Raises:
    InvalidArgumentError: `good` or `bad` missing or not a release, a
      requirement that cannot be judged on a sweep alone ("golden": golden
      files belong to one jaxlib), or one batch size with "consistent".
    VenvError: the releases cannot be listed.
  """
  from hloprobe import verify

  if not good or not bad:
    raise InvalidArgumentError(
      "bisect needs --good=V and --bad=V, e.g. --good=0.4.35 --bad=0.10.2"
    )
  requirements = verify.parse_requirements(",".join(require), spec.batch_sizes)
  if "golden" in requirements:
    raise InvalidArgumentError(
      "bisect judges consistent and accurate; golden files belong to one jaxlib"
    )
  request = spec_request(spec)
  found = pythons.survey(python)
  releases = found.releases()
  if not releases:  # exit 1
    raise venvs.VenvError(
      "cannot list jaxlib releases: " + ("; ".join(found.problems) or "none")
    )
  between = releases_between(releases, good, bad)
  log(
    f"bisecting {len(between)} releases: {', '.join(between)} (Pythons "
    f"found: {', '.join(found.versions())})"
  )
  cache_dir = cache_dir or venvs.default_cache_dir()
  where = driver.plan(between, request, cache_dir, python, found)
  result = bisect_releases(
    between, request, requirements, cache_dir, log, where
  )
  return dataclasses.replace(result, requirements=requirements)
