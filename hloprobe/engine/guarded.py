"""A user case's main-process part, done in a worker under a timeout.

A user's case (`module:factory`, `SweptCase.guarded`) is the user's code:
its module, factory, `make_inputs` and `fn` may loop forever, abort the
process (`os.abort()` in a host callback), call `sys.exit(n)` or
`os._exit(n)` (0 included) or print. The sweep's process never runs it:
`shell.CaseShellRequest` loads it in a worker, and its inputs, cache
fingerprint, float64 references, prediction and what-XLA-made check
(`measure.CaseSetup`) are made in that same persistent worker, which
kept the case (`SweptCase.loader`; the pool's `CASE_LANE` worker for a
plan whose loader was closed by an interrupt), each call under
`SweepPlan.case_timeout_s`. A worker's
stdout is its stderr log (`runtime.serve`), so the case's prints never
reach hloprobe's stdout. When that worker dies or runs past the timeout,
the case is broken: its configs fail with one line naming the case, the
stage and the cause, and every other case goes on (a fresh worker serves
the next case; each request carries the case's inputs, so a fresh worker
needs nothing the dead one had).

The built-in cases (hloprobe's own code) and `Case` records found in this
process only keep `measure.CaseSetup` here, as before.

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import sys
import weakref

import jax

from hloprobe.engine.compiled import CompiledConfig, CompileRequest, failed
from hloprobe.engine.measure import CaseSetup
from hloprobe.engine.plan import SweptCase
from hloprobe.engine.shared import SharedInputs, resolved, share
from hloprobe.engine.shell import loaded_case, with_search_path
from hloprobe.errors import CaseError, first_line
from hloprobe.records import ConfigResult
from hloprobe.runtime import (
  CaseKey,
  Request,
  Stopwatch,
  Warn,
  WorkerError,
  WorkerPool,
)

__all__ = [
  "CaseFinishRequest",
  "CaseInputsRequest",
  "GuardedSetup",
  "compile_guarded",
  "setup_for",
]


def _setup(
  memo: dict, source: str, sizes, given: tuple | None, all_rows: bool = False
):
  """The worker's `CaseSetup` of case `source` (made once per worker) and
  the list its warnings go to. `given`: (full inputs,) made earlier, or
  None to make them here.

  A later sweep of the same case whose sizes are some of an earlier one's,
  with the same smallest and largest (explain's fix tries: the smallest
  size and those at fault), gets the earlier setup: its float64
  references and emulations serve it unchanged (they depend on the
  smallest and largest size only; the predictor's other sizes decide only
  when it guesses, `emulation_cache`), so the tries reuse them (issue 37).
  """
  key = ("guarded", source, min(sizes), max(sizes), all_rows)
  held = memo.get(key)
  if held is not None and not set(sizes) <= set(held[0].sizes):
    del memo[key]
  if key not in memo:
    warned: list[str] = []
    case = loaded_case(memo, source)
    setup = CaseSetup(
      SweptCase(case, source, True), sizes, warned.append, given, all_rows
    )
    memo[key] = setup, warned
  memo[key][0].visits(tuple(sizes))
  return memo[key]


def _drained(warned: list[str]) -> tuple[str, ...]:
  out = tuple(warned)
  warned.clear()
  return out


def _checked_outputs(case, full, sizes) -> None:
  """A program whose output holds no array is bad input, found up front.

  Raises:
    CaseError: `fn` returned None (or an empty pytree).
  """
  try:
    shapes = jax.eval_shape(case.fn, *case.inputs_for(full, min(sizes)))
  except Exception:  # the configs say why, each at its stage
    return
  if not jax.tree_util.tree_leaves(shapes):
    raise CaseError(
      f"case {case.name!r}: fn returned {shapes!r}, no array to compare; "
      "return an array or a pytree of arrays"
    )


# The stage a `CaseInputsRequest` notes once its inputs are made, as it
# traces the case's function (its outputs' check and cache fingerprint).
_TRACING = "tracing"


@dataclasses.dataclass(frozen=True)
class CaseInputsRequest(Request):
  """A user case's full inputs and cache fingerprint, made in a worker.

  `run` returns (full inputs or None for a sized case, fingerprint or
  None, {stage: seconds}, warnings). `search_path`: the sweep process's
  `sys.path` (`shell.with_search_path`). `share_in`: a folder its pool
  shares (`WorkerPool.shared_folder`): large inputs are written there once
  and returned as a `shared.SharedInputs`, which every process maps
  instead of holding a copy (this worker too, from then on); None: the
  arrays.

  Raises (from `run`):
    CaseError: `make_inputs` raised or returned something not a tuple of
      arrays, the inputs do not fit the batch axes, or `fn` returned None.
  """

  source: str
  sizes: tuple[int, ...]
  fingerprint: bool
  search_path: tuple[str, ...] = ()
  all_rows: bool = False
  share_in: str | None = None

  def run(self, memo: dict):
    with_search_path(self.search_path)
    setup, warned = _setup(memo, self.source, self.sizes, None, self.all_rows)
    watch = Stopwatch()
    with jax.default_device(jax.devices("cpu")[0]):
      try:
        full = setup.inputs(watch)
      except CaseError:
        raise
      except Exception as e:
        raise CaseError(
          f"case {setup.case.name!r}: make_inputs() failed: {first_line(e)}"
        ) from None
      # Both trace `fn`: a function that hangs there is named so
      # (`CaseSetup._call`), not as its inputs.
      self.note_stage(_TRACING)
      _checked_outputs(setup.case, full, self.sizes)
      made = setup.fingerprint(watch) if self.fingerprint else None
    try:
      found = share(full, self.share_in)
    except OSError:  # no room: the arrays go as they are
      found = full
    if isinstance(found, SharedInputs):
      setup.use_inputs(resolved(found))  # this worker's copy goes
    return found, made, watch.seconds(), _drained(warned)


@dataclasses.dataclass(frozen=True)
class CaseFinishRequest(Request):
  """A user case's references made (`work` None) or one config finished
  (`CaseSetup.finish`), in a worker (`search_path`: as
  `CaseInputsRequest`'s).

  `run` returns (the finished `ConfigResult` or None, {stage: seconds},
  warnings).
  """

  source: str
  sizes: tuple[int, ...]
  full: tuple | None
  work: CompiledConfig | None
  search_path: tuple[str, ...] = ()
  all_rows: bool = False

  def run(self, memo: dict):
    with_search_path(self.search_path)
    setup, warned = _setup(
      memo, self.source, self.sizes, (resolved(self.full),), self.all_rows
    )
    watch = Stopwatch()
    with jax.default_device(jax.devices("cpu")[0]):
      if self.work is None:
        setup.prepare(watch)
        r = None
      else:
        r = setup.finish(self.work, watch)
    return r, watch.seconds(), _drained(warned)


class GuardedSetup:
  """`measure.CaseSetup`'s interface for a user case, its work done in
  the case's worker (see the module docstring).

  Args:
    pool, lane: the pool and lane of the case's worker.
    all_rows: judge every row (--all_rows).

  Attributes:
    broken: one line once the case's worker died or ran past the timeout
      (its configs fail with it), else None.
  """

  def __init__(
    self,
    swept: SweptCase,
    sizes: tuple[int, ...],
    warn: Warn,
    pool: WorkerPool,
    lane: int,
    timeout_s: float,
    fingerprint: bool,
    all_rows: bool = False,
  ):
    self.swept, self.case, self.sizes = swept, swept.case, sizes
    self.all_rows = all_rows
    self._warn, self._pool, self._timeout_s = warn, pool, timeout_s
    self._lane = lane
    self._fingerprint = fingerprint
    self._made: tuple | None = None  # (full inputs, fingerprint)
    self._prepared = False
    self.broken: str | None = None

  def _call(self, request: Request, watch, what: str):
    """The request's reply, its seconds and warnings passed on; None once
    the case is broken (`broken` says why)."""
    if self.broken is not None:
      return None
    try:
      *value, seconds, warned = self._pool.call(
        request, "", self._timeout_s, lane=self._lane
      )
    except WorkerError as e:
      how = (
        f"ran past --case_timeout={self._timeout_s:g} s"
        if e.timed_out
        else f"ended its worker: {e}"
      )
      if e.stage == _TRACING:  # `CaseInputsRequest`: past its inputs
        what = "tracing its function"
      self.broken = f"case {self.case.name!r} ({what}) {how}"
      return None
    except Exception:  # the request's own error (a CaseError)
      raise
    except BaseException:  # an interrupt mid-call: its reply is stale now
      self._pool.close(kill=True)
      raise
    for name, s in seconds.items():
      watch.add(name, s)
    for line in warned:
      self._warn(line)
    return value

  def inputs(self, watch) -> tuple | SharedInputs | None:
    """The case's full inputs (None: a sized case, or `broken`); large
    ones as files its pool shares (`shared.SharedInputs`).

    Raises:
      CaseError: as `CaseInputsRequest`.
    """
    if self._made is None:
      folder = getattr(self._pool, "shared_folder", None)  # not Ray's
      request = CaseInputsRequest(
        self.swept.source,
        self.sizes,
        self._fingerprint,
        tuple(sys.path),
        self.all_rows,
        folder() if folder is not None else None,
      )
      got = self._call(request, watch, "making its inputs")
      self._made = tuple(got) if got is not None else (None, None)
    return self._made[0]

  def fingerprint(self, watch) -> CaseKey | None:
    """The case's cache fingerprint; None when it cannot be made."""
    self.inputs(watch)
    return self._made[1]

  def prepare(self, watch) -> None:
    """Makes the references and the predictor in the worker (once)."""
    if not self._prepared:
      self._prepared = True
      full = self.inputs(watch)
      request = CaseFinishRequest(
        self.swept.source,
        self.sizes,
        full,
        None,
        tuple(sys.path),
        self.all_rows,
      )
      self._call(request, watch, "its float64 reference")

  def finish(self, work: CompiledConfig, watch) -> ConfigResult:
    """A worker's reply finished in the case's worker (see
    `CaseSetup.finish`); a failure of the config's own when broken."""
    full = self.inputs(watch)
    request = CaseFinishRequest(
      self.swept.source, self.sizes, full, work, tuple(sys.path), self.all_rows
    )
    got = self._call(request, watch, "its float64 reference and prediction")
    if got is not None:
      return got[0]
    r = work.result
    return failed(r, self.broken, "reference") if r.ok else r


def compile_guarded(
  pool: WorkerPool,
  request: CompileRequest,
  flags: str,
  lane: int,
  timeout_s: float,
) -> tuple[CompiledConfig | None, str | None]:
  """A user case's config compiled and run in its lane's worker under the
  case timeout.

  Returns:
    (the reply, None), or (None, one line) when it ran past `timeout_s`
    (the worker was stopped).

  Raises:
    WorkerError: the worker died (its line names the case); as
      `WorkerPool.call` otherwise.
  """
  name = request.config.case
  try:
    return pool.call(request, flags, timeout_s, lane=lane), None
  except WorkerError as e:
    if not e.timed_out:
      raise WorkerError(f"case {name!r}: {e}", e.stage) from None
    return None, (
      f"case {name!r} ran past --case_timeout={timeout_s:g} s (stage "
      f"{e.stage or 'start'}); its worker was stopped"
    )


# Per pool, the `CaseSetup`s of hloprobe's own cases and records made by
# the sweeps run on it (`setup_for`): explain's fix tries reuse the
# explain sweep's references and emulations, as a user case's worker
# does (`_setup`). Gone with the pool.
_HELD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _held_setup(
  swept: SweptCase, sizes, warn: Warn, pool, all_rows: bool
) -> CaseSetup:
  """A `CaseSetup` of an earlier sweep on `pool` of the same case record
  with the same smallest and largest size, the sizes some of its sizes
  and the same --all_rows (its references and emulations depend on those
  only, see `_setup`), else a new one, held for the next sweep."""
  key = (swept.source, id(swept.case), min(sizes), max(sizes), all_rows)
  try:
    held = _HELD.setdefault(pool, {})
  except TypeError:  # a pool that cannot be weakly referenced: no reuse
    return CaseSetup(swept, sizes, warn, all_rows=all_rows)
  found = held.get(key)
  if found is not None and found.case is swept.case:
    if set(sizes) <= set(found.sizes):
      found.rewarn(warn)
      found.visits(tuple(sizes))
      return found
  held[key] = CaseSetup(swept, sizes, warn, all_rows=all_rows)
  return held[key]


def setup_for(
  swept: SweptCase,
  sizes: tuple[int, ...],
  warn: Warn,
  pool: WorkerPool,
  timeout_s: float,
  fingerprint: bool,
  all_rows: bool = False,
) -> CaseSetup | GuardedSetup:
  """A case's main-process part: a `CaseSetup` here for hloprobe's own
  cases and records (an earlier sweep's on `pool` where it serves: its
  references and emulations reused, `_held_setup`), a `GuardedSetup`
  (its worker) for a user's case.

  Args:
    swept, sizes, warn: as `CaseSetup`'s.
    pool, timeout_s: the sweep's workers and its case timeout (a user
      case's own worker is its loader's, `SweptCase.loader`, while that
      pool is open; else the pool's `CASE_LANE` worker).
    fingerprint: the sweep caches (a user case's worker makes its
      fingerprint with its inputs).
    all_rows: judge every row (--all_rows).
  """
  if not swept.guarded:
    return _held_setup(swept, sizes, warn, pool, all_rows)
  loader, lane = swept.case_worker(pool)
  return GuardedSetup(
    swept, sizes, warn, loader, lane, timeout_s, fingerprint, all_rows
  )
