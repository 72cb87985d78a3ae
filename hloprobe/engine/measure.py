"""The main process's part of a config: its errors against the float64
references, its predicted numerics, what XLA made (the optimized module
executed, `CaseNumerics.checker`), the headline leaf (chosen once, in
`_with_headline`) and batch consistency (`ulp_vs_n1`), from a worker's
`CompiledConfig`.

A case's references and predictor are made once (`CaseSetup`, through
`numerics.CaseNumerics`) and shared
by every target, precision and experiment of the sweep.

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Sequence

from hloprobe.compile import Case, Target, missing_cudnn_message
from hloprobe.engine.compiled import (
  CompiledConfig,
  compile_and_run_case,
  failed,
)
from hloprobe.engine.plan import SweptCase
from hloprobe.engine.shard import Shard
from hloprobe.engine.spec import BITS_ONLY
from hloprobe.errors import (
  InvalidArgumentError,
  ToolchainError,
  first_line,
)
from hloprobe.ir import as_precision
from hloprobe.numerics import CaseNumerics, ErrorStats, ulp_distance
from hloprobe.records import Config, ConfigResult, Execution
from hloprobe.runtime import (
  CaseKey,
  Stopwatch,
  Warn,
  log_warning,
)

__all__ = [
  "CaseSetup",
  "bits_only",
  "check_shards",
  "run_config",
  "with_batch_consistency",
]


def _with_stats(work: CompiledConfig, references, watch) -> ConfigResult:
  """The worker's result with its `Execution`: run seconds and, with
  `references`, the outputs' errors against float64 (in this process; no
  headline yet, see `_with_headline`); a failure is the config's, at stage
  "run"."""
  r = work.result
  if not r.ok or work.run_s is None:
    return r
  if work.outputs is None or references is None:
    return dataclasses.replace(r, execution=Execution(work.run_s))
  try:
    with watch.stage("reference"):
      at_n = references.at(r.config.n)
    leaves = tuple(
      ErrorStats.of(out, ref, axis, name)
      for out, ref, axis, name in zip(
        work.outputs, at_n, references.axes, references.names
      )
    )
  except Exception as e:  # one config's failure must not lose the others
    return failed(r, first_line(e), "run")
  return dataclasses.replace(r, execution=Execution(work.run_s, leaves))


def bits_only(work: CompiledConfig, watch) -> ConfigResult:
  """A worker's reply without numerics (`SweepSpec.numerics` False): its
  compilation and run seconds, the outputs dropped (no float64 reference
  to compare them with: the bits are the batch-invariance answer's, run
  again in the workers), and `BITS_ONLY` as why there is no prediction.
  No user code runs here."""
  for name, seconds in work.timings.items():
    watch.add(name, seconds)  # spent in the worker
  r = work.result
  if not r.ok:
    return r
  if work.run_s is not None:
    r = dataclasses.replace(r, execution=Execution(work.run_s))
  return dataclasses.replace(r, prediction_error=BITS_ONLY)


def run_config(
  case: Case,
  full_inputs: tuple | None,
  references,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool = False,
  watch: Stopwatch | None = None,
) -> ConfigResult:
  """Lowers, compiles, analyses and (where possible) runs one config here,
  in this process (the sweep does this in workers: `CompileRequest`).

  `precision` is a `Precision` or its name (checked here).

  With `explain_passes`, the compile dumps every pass and each dot site is
  attributed to the pass that rewrote it (see `passes`). With
  `references`, the outputs' errors against float64 are added. `watch`,
  if given, is charged the time of each stage.
  """
  watch = watch or Stopwatch()
  config = Config(case.name, target, n, as_precision(precision))
  work = compile_and_run_case(case, full_inputs, config, explain_passes)
  for name, seconds in work.timings.items():
    watch.add(name, seconds)
  return _with_headline(_with_stats(work, references, watch), references)


def _with_prediction(
  r: ConfigResult,
  predictor,
  why: str | None,
  watch: Stopwatch | None = None,
  kernels=None,
  on_judged=None,
) -> ConfigResult:
  """Attaches the predicted numerics; a failure is recorded, not raised.

  `predictor` is `CaseNumerics.predictor`; `why` says why there is none
  when it is None. With
  `kernels`, the prediction's row 0 is also the kernel model's where a
  site is a "bit-exact model" (`Prediction.kernel`). `on_judged` is the
  predictor's (`Predictor.predict`: called with the rows judged).
  """
  if not r.ok or not r.compilation.fates:
    return r
  if predictor is None:
    return dataclasses.replace(r, prediction_error=why)
  run = r.execution
  leaves = run.leaf_stats if run is not None else ()
  try:
    prediction = predictor.predict(
      r.config.n, r.compilation.fates, leaves or None, watch, on_judged
    )
  except Exception as e:  # prediction is extra; the config stays ok
    return dataclasses.replace(r, prediction_error=first_line(e))
  if kernels is not None:
    with (watch if watch is not None else Stopwatch()).stage("predict"):
      kernel = kernels.row0(
        r.config.n,
        r.compilation.fates,
        prediction.site_algorithms,
        r.config.target.compute_capability,
        prediction.leaf,
      )
    prediction = dataclasses.replace(prediction, kernel=kernel)
  return dataclasses.replace(r, prediction=prediction)


def _made_runs(r: ConfigResult, checker, given=None, judged=None):
  """The function that makes what XLA made's executions of the config
  (`MadeChecker.runs`: the optimized module executed on its inputs, on
  the `judged` rows alone where given), or None where none is made: a
  failed config, or no float64 reference (`checker`,
  `CaseNumerics.checker`, None). Where the worker that compiled the
  config made them (`given`, `CompiledConfig.made`; issue 37: they moved
  there from this process), the function gives those."""
  if not r.ok or r.compilation is None or checker is None:
    return None
  if given is not None:
    return lambda: given
  c = r.compilation
  return checker.runs(r.config.n, c.optimized_hlo, c.fates, judged)


def _with_made(r: ConfigResult, checker, ran) -> ConfigResult:
  """Attaches what XLA made (`numerics.made`), judged from the config's
  executions (`ran`: what `_made_runs`' function gave, or None for none)
  and its prediction's bands, headline and noise floors."""
  if ran is None:
    return r
  c, p = r.compilation, r.prediction
  made = checker.judged(
    r.config.n,
    ran,
    c.fates,
    c.passes,
    p.bands if p is not None else (),
    p.leaf if p is not None else None,
    p.noises if p is not None else (),
  )
  return dataclasses.replace(r, made=made)


def _with_headline(r: ConfigResult, references) -> ConfigResult:
  """`r` with its execution's headline leaf: the prediction's leaf where
  there is a prediction, else `References.headline` (the same rule,
  fixed per case)."""
  run = r.execution
  if run is None or not run.leaf_stats:
    return r
  if r.prediction is not None:
    headline = [s.leaf for s in run.leaf_stats].index(r.prediction.leaf)
  else:
    headline = references.headline
  return dataclasses.replace(
    r, execution=dataclasses.replace(run, headline=headline)
  )


def _ulp_vs(a: ErrorStats, b: ErrorStats) -> int | None:
  """Row 0 of two runs of the same leaf apart, in ULPs; None if unbatched."""
  if a.axis is None or a.row0_values.shape != b.row0_values.shape:
    return None
  if a.row0_ulp is None:  # not a float leaf: no ULPs
    return None
  return ulp_distance(a.row0_values, b.row0_values, a.row0_values.dtype)


def _leaf_stats(r: ConfigResult) -> tuple[ErrorStats, ...]:
  return r.execution.leaf_stats if r.execution is not None else ()


def with_batch_consistency(results: list[ConfigResult]) -> list[ConfigResult]:
  """Fills each execution's `ulp_vs_n1` from the n = 1 result of the same
  experiment, case, target and precision."""
  key = lambda c: (c.experiment, c.case, c.target.name, c.precision)
  at_n1 = {
    key(r.config): r for r in results if r.config.n == 1 and _leaf_stats(r)
  }
  out = []
  for r in results:
    base = at_n1.get(key(r.config))
    if _leaf_stats(r) and base is not None:
      found = [
        u
        for a, b in zip(_leaf_stats(r), _leaf_stats(base))
        if (u := _ulp_vs(a, b)) is not None
      ]
      if found:
        run = dataclasses.replace(r.execution, ulp_vs_n1=max(found))
        r = dataclasses.replace(r, execution=run)
    out.append(r)
  return out


def without_batch_consistency(
  results: list[ConfigResult],
) -> list[ConfigResult]:
  """`results` as a sweep collects them, before `with_batch_consistency`:
  each execution's `ulp_vs_n1` None again (`hloprobe merge` recomputes it
  over every shard's records, where n = 1 may be another shard's)."""
  return [
    dataclasses.replace(
      r, execution=dataclasses.replace(r.execution, ulp_vs_n1=None)
    )
    if r.execution is not None
    else r
    for r in results
  ]


def check_shards(plan, parts: Sequence, records: list[ConfigResult]):
  """`hloprobe merge`'s check that shards are `plan`'s, whole: `records`
  (the shards' records joined, in output order) are exactly the plan's
  configs, each part holds its shard's configs, and the plan made here
  (this hloprobe, jax and XLA_FLAGS) has the shards' fingerprint.
  Returns (`records` as a sweep collects them, `without_batch_consistency`:
  what the merge streams to results.jsonl; and the merge's records, their
  `ulp_vs_n1` computed again over every shard's, `with_batch_consistency`).

  Args:
    plan: the `plan.SweepPlan` of the shards' recorded words.
    parts: the shards as `hloprobe merge` reads them, each with fields
      `label`, `index`, `count`, `configs` (its indices into the plan's
      configs) and `fingerprint`; the first's fingerprint is checked.
    records: the shards' `ConfigResult`s, joined.

  Raises:
    InvalidArgumentError: another fingerprint; records that are not the
      plan's configs; a part holding other configs than its shard.
  """
  first = parts[0]
  if plan.fingerprint() != first.fingerprint:
    raise InvalidArgumentError(
      f"the shards' plan {first.fingerprint[:12]} is not the plan this "
      "hloprobe makes of their words (another hloprobe source, jax/jaxlib, "
      "XLA_FLAGS or target config): merge with the hloprobe and "
      "environment that ran them"
    )
  every = plan.all_configs()
  if [c.config for c in every] != [r.config for r in records]:
    raise InvalidArgumentError(
      f"the shards' records are not their plan's {len(every)} configs "
      f"({len(records)} records, in another order or of other configs); "
      "run the shards again"
    )
  for p in parts:
    cut = dataclasses.replace(plan, shard=Shard(p.index, p.count))
    if list(p.configs) != cut.shard_indices():
      raise InvalidArgumentError(
        f"{p.label} holds other configs than the plan's shard "
        f"{p.index}/{p.count}; run it again"
      )
  collected = without_batch_consistency(records)
  return collected, with_batch_consistency(collected)


class CaseSetup:
  """A case's inputs, fingerprint, references, predictor and made-checker in the main
  process, each made when first needed (a warm rerun from the cache makes
  no reference) and shared by every target, precision and experiment.
  The time is charged to the stopwatch of the config that needs it first.

  Args:
    swept: the case.
    sizes: the sweep's sizes, in order.
    warn: given one line where the cache fingerprint cannot be made.
    given: (full inputs,) made elsewhere (`guarded`), or None to make
      them here.
    all_rows: judge every row (--all_rows; `numerics.CaseNumerics`).

  Attributes:
    broken: always None here (see `guarded.GuardedSetup`).
  """

  broken: str | None = None

  def __init__(
    self,
    swept: SweptCase,
    sizes: tuple[int, ...],
    warn: Warn = log_warning,
    given: tuple | None = None,
    all_rows: bool = False,
  ):
    self.swept, self.case, self.sizes = swept, swept.case, sizes
    self.all_rows = all_rows
    self._warn = warn
    self._full, self._print, self._made = given, None, None
    self._visits: tuple[int, ...] | None = None  # `visits`

  def rewarn(self, warn: Warn) -> None:
    """Where its warnings go from now on (a later sweep reusing it)."""
    self._warn = warn

  def visits(self, sizes: tuple[int, ...]) -> None:
    """The sizes a later sweep reusing it visits, in order (some of
    `sizes`): its predictor guesses at those only (`Predictor.visits`)."""
    self._visits = sizes
    if self._made is not None and self._made.predictor is not None:
      self._made.predictor.visits(sizes)

  def inputs(self, watch) -> tuple | None:
    """The case's full-size inputs (`Case.full_inputs`), made once.

    Raises:
      CaseError: a batch axis out of range, or the like.
    """
    if self._full is None:
      with watch.stage("inputs"):
        self._full = (self.case.full_inputs(),)
    return self._full[0]

  def use_inputs(self, full: tuple) -> None:
    """Takes `full`, the very values of its inputs held elsewhere (mapped
    from the files they were shared as, `shared`), instead of its own
    copy; once its references are made (a later sweep of the case) it
    keeps the inputs they were made from."""
    if self._made is None:
      self._full = (full,)

  def fingerprint(self, watch) -> CaseKey | None:
    """The case's cache fingerprint; None when it cannot be made."""
    if self._print is None:
      full = self.inputs(watch)
      with watch.stage("cache"):
        self._print = (_fingerprint(self.case, full, self._warn),)
    return self._print[0]

  def prepare(self, watch) -> None:
    """Makes the references and the predictor (once)."""
    if self._made is None:
      full = self.inputs(watch)
      with watch.stage("reference"):
        self._made = CaseNumerics.of(self.case, full, self.sizes, self.all_rows)
      if self._visits is not None and self._made.predictor is not None:
        self._made.predictor.visits(self._visits)

  def finish(self, work: CompiledConfig, watch) -> ConfigResult:
    """A worker's reply with the errors against float64 and the prediction.

    A case that lied about `rows_independent` fails every config at stage
    "reference", naming the case.
    """
    for name, seconds in work.timings.items():
      watch.add(name, seconds)  # spent in the worker
    self.prepare(watch)
    made = self._made
    if made.lie is not None:
      return failed(work.result, str(made.lie), "reference")
    r = _with_stats(work, made.references, watch)
    # A large program's larger sizes wait for the prediction's judged rows
    # (`MadeChecker.judged_later`; issue 37: their worker made none).
    later = (
      work.made is None
      and made.checker is not None
      and made.checker.judged_later(r.config.n)
    )
    with watch.stage("predict"):
      runs = None if later else _made_runs(r, made.checker, work.made)
    # What XLA made is executed in the worker that compiled the config
    # (issue 37: `CompiledConfig.made`), else here, in a thread beside the
    # prediction: its runs need nothing of it (hloprobe's numpy executor,
    # no user code; numpy's BLAS releases the GIL, and XLA's runs of the
    # emulators do), only its judgement does, here after both. Joined
    # before this returns, so one config's runs at a time, as before.
    # Where they wait for the judged rows, they start as soon as the
    # prediction's first pass has found them, beside its noise floors.
    with concurrent.futures.ThreadPoolExecutor(1, "made") as beside:
      ran = beside.submit(runs) if runs is not None else None
      started = {}

      def on_judged(judged, r=r):
        made_now = _made_runs(r, made.checker, None, judged)
        if made_now is not None:
          started[judged] = beside.submit(made_now)

      r = _with_prediction(
        r,
        made.predictor,
        made.why,
        watch,
        made.kernels,
        on_judged if later else None,
      )
      with watch.stage("predict"):
        if later:  # on the floors' rows (made again should they differ)
          noises = r.prediction.noises if r.prediction is not None else ()
          judged = made.checker.judged_rows(noises)
          ran = started.get(judged)
          if ran is None:
            runs = _made_runs(r, made.checker, None, judged)
            ran = beside.submit(runs) if runs is not None else None
        r = _with_made(r, made.checker, ran and ran.result())
    return _with_headline(r, made.references)


def _fingerprint(case: Case, full: tuple, warn: Warn) -> CaseKey | None:
  """The case's cache fingerprint; None when it fails (`warn` is told).

  Raises:
    ToolchainError: tracing the case needs cuDNN and jax finds none (a
      cuDNN attention case without the extra `cudnn`): one line naming
      `make full`, before any config is compiled (each would fail so).
  """
  try:
    return CaseKey.of(case, full)
  except Exception as e:  # the sweep still runs, uncached
    if (missing := missing_cudnn_message(e)) is not None:
      raise ToolchainError(missing) from None
    warn(f"hloprobe: not caching case {case.name}: {e}")
    return None
