"""hloprobe from Python: `sweep` and `explain` on a function and its
example arguments (or a `Case`), returning a `Results` record.

    import hloprobe
    r = hloprobe.explain(f, x, w, targets=["cpu", "a100"])
    print(r)               # explain's words
    r.table()              # the sweep table (tabulate text)
    r.to_dataframe()       # the same cells as a pandas DataFrame
    r                      # in a notebook: the table as HTML

A plain function becomes a `Case` here (`as_case`): its name, the example
arguments as its full-size inputs (numpy copies), `in_axes` as
`jax.vmap`'s (default: axis 0 of the first argument is the batch, the
others are shared). How it reaches the worker processes that compile it:
pickled by value with cloudpickle (`ship`), into a file a worker loads as
a `path/to/file.py:make_case` case. Why not the alternatives:
  - in this process (what `run_sweep` does for a `Case` no other process
    can find): XLA dying on a config would kill the user's notebook, an
    experiment's XLA_FLAGS cannot apply (XLA reads them once per process),
    and compile-only GPU targets need the CUDA plugin registered here,
    which a user's earlier `jnp.ones(...)` without
    JAX_SKIP_CUDA_CONSTRAINTS_CHECK has already ruled out;
  - plain pickle: a function defined in `__main__` (a notebook, a script)
    pickles by name, which a worker cannot find;
  - the record cache: it holds results, not programs; it still serves
    reruns (the key is the program's jaxpr and inputs, not its name).
See `ship` for how its module and imports get there.

GPU targets need no environment from the user: the workers start with
JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (set for the sweep, then restored) unless
an attached GPU (`gpu`) is swept, as the command line does
(`commands.common.start_jax`); see the README's "From Python and pytest".
Nothing here prints.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from typing import TypedDict, Unpack

from hloprobe.api.answering import NOT_TRIED, answer
from hloprobe.api.defaults import DEFAULTS
from hloprobe.api.results import Results
from hloprobe.api.running import run, shipped
from hloprobe.api.ship import worker_environment
from hloprobe.compile import Case
from hloprobe.engine import SweepPlan, SweepSpec, plan_sweep
from hloprobe.errors import InvalidArgumentError
from hloprobe.report import Answer, explain_results, render, render_answered
from hloprobe.runtime import HostCpu

__all__ = ["SweepOptions", "as_case", "explain", "plan_case", "sweep"]

_NAME_RE = re.compile(r"[^A-Za-z0-9_\-]")


def as_case(
  fn: Callable,
  *example_args,
  in_axes: int | Sequence[int | None] | None = None,
  output_axis: int | None | tuple[int | None, ...] = 0,
  name: str | None = None,
) -> Case:
  """A `Case` of a plain JAX function and its example arguments.

  Args:
    fn: a JAX function of the arguments, not jitted (hloprobe jits it).
    *example_args: its arguments at full batch size: numpy or jax arrays,
      or pytrees of them (kept as numpy copies).
    in_axes: each argument's batch axis, or None for an argument every
      batch size shares, as `jax.vmap`'s (an int: every argument); None
      (default): axis 0 of the first argument, the others shared.
    output_axis: the batch axis of each output leaf (see `Case`).
    name: the case's name; default the function's (`f`, `lambda`).

  Raises:
    InvalidArgumentError: no example arguments, or `fn` not callable.
  """
  import jax
  import numpy as np

  if not callable(fn):
    raise InvalidArgumentError(
      f"hloprobe: expected a function, a Case or a case name; got "
      f"{type(fn).__name__}"
    )
  if not example_args:
    raise InvalidArgumentError(
      f"hloprobe: {getattr(fn, '__name__', 'fn')} needs example arguments "
      "(its inputs at full batch size), e.g. hloprobe.explain(f, x)"
    )
  args = tuple(jax.tree.map(np.asarray, a) for a in example_args)
  if isinstance(in_axes, int):
    in_axes = (in_axes,) * len(args)
  label = name or _NAME_RE.sub("", getattr(fn, "__name__", "")) or "fn"
  where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '')}"
  return Case(
    name=label,
    description=f"{where} with example arguments (hloprobe.api)",
    fn=fn,
    make_inputs=lambda: args,
    in_axes=None if in_axes is None else tuple(in_axes),
    output_axis=output_axis,
  )


class SweepOptions(TypedDict, total=False):
  """The keywords of `sweep`, `explain` and `plan_case` (one list; a
  keyword left out takes `DEFAULTS`' value, the command line's too).

  Attributes:
    targets: target names (`cpu`, `gpu`, compile-only `a100`, ...), or
      one string of comma-separated names; default ["cpu"].
    precisions: matmul precision names (`float32`, `TF32_TF32_F32`, ...);
      default bfloat16, tensorfloat32, float32.
    batch_sizes: the batch sizes n; default 1, 2 and the full size (the
      example's rows), those that exist. Required for a sized case.
    in_axes, output_axis, name: as `as_case`'s (a function only).
    explain_passes: name the XLA pass that rewrote each dot site (False;
      `explain` always names them).
    cache: keep and reuse per-config records in `cache_dir` (True).
    cache_dir: the record cache; default `$XDG_CACHE_HOME/hloprobe` (as
      the command line's).
    jobs: worker processes at once; default the cores this process may
      use (`DEFAULTS.jobs`).
    only: `explain`'s one question alone (`DEFAULTS.only`: None, every
      one). "invariance": the batch-invariance answer with no accuracy
      numerics, as `hloprobe explain --only=invariance` (see `explain`).
    invariance: `explain`'s batch-invariance answer (`DEFAULTS.invariance`,
      the command line's --invariance): "answer" (which batch sizes give
      row 0 and an anchor row the same bits, its pins listed untried) or
      "off". The command line's "pin" (pins searched and verified) is
      not taken here.
  """

  targets: Sequence[str] | str
  precisions: Sequence[str] | str
  batch_sizes: Sequence[int] | None
  in_axes: int | Sequence[int | None] | None
  output_axis: int | None | tuple[int | None, ...]
  name: str | None
  explain_passes: bool
  cache: bool
  cache_dir: str | None
  jobs: int | None
  only: str | None
  invariance: str


# The questions `explain` answers alone (`SweepOptions.only`).
_ONLY = ("invariance",)
# `explain`'s batch-invariance answer from Python (`SweepOptions.invariance`).
_INVARIANCE = ("answer", "off")


def _options(options: dict) -> dict:
  """`options` (`SweepOptions`' keywords) with the defaults filled in.

  Raises:
    TypeError: a keyword `SweepOptions` does not name (as a misspelt
      keyword of a plain function raises).
    InvalidArgumentError: `only` not None nor one of `_ONLY`;
      `invariance` not one of `_INVARIANCE`, or "off" with `only`.
  """
  unknown = sorted(set(options) - set(SweepOptions.__annotations__))
  if unknown:
    raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
  only = options.get("only", DEFAULTS.only)
  if only is not None and only not in _ONLY:
    raise InvalidArgumentError(
      f"only={only!r}: expected None (every question) or one of "
      f"{', '.join(map(repr, _ONLY))}"
    )
  invariance = options.get("invariance", DEFAULTS.invariance)
  if invariance not in _INVARIANCE:
    raise InvalidArgumentError(
      f"invariance={invariance!r}: expected one of "
      f"{', '.join(map(repr, _INVARIANCE))} (pins are searched by "
      "`hloprobe explain --invariance=pin` on a case file)"
    )
  if invariance == "off" and only is not None:
    raise InvalidArgumentError(
      f"invariance='off' with only={only!r}: nothing would be answered"
    )
  return {
    "targets": DEFAULTS.targets,
    "precisions": DEFAULTS.precisions,
    "batch_sizes": None,
    "in_axes": None,
    "output_axis": 0,
    "name": None,
    "explain_passes": False,
    "cache": True,
    "cache_dir": None,
    "jobs": None,
    "only": DEFAULTS.only,
    "invariance": DEFAULTS.invariance,
  } | options


def plan_case(
  fn_or_case: Callable | Case | str,
  *example_args,
  **options: Unpack[SweepOptions],
) -> SweepPlan:
  """The plan of `sweep`'s sweep (its arguments are `sweep`'s), for
  `run`; the golden fixture compares its records with the goldens by it
  (`golden.against_goldens`).

  Raises:
    InvalidArgumentError, CaseError, TargetError: as `sweep`.
    TypeError: an unknown keyword.
  """
  o = _options(options)
  spec = SweepSpec(
    cases=(),
    batch_sizes=tuple(o["batch_sizes"] or ()),
    precisions=_names(o["precisions"]),
    targets=_names(o["targets"]),
    explain_passes=o["explain_passes"],
    cache_dir=(o["cache_dir"] or DEFAULTS.cache_dir()) if o["cache"] else None,
    jobs=o["jobs"] or DEFAULTS.jobs(),
    numerics=o["only"] is None,
  )
  case_options = {k: o[k] for k in ("in_axes", "output_axis", "name")}
  return _plan(fn_or_case, example_args, case_options, spec)


def _names(words: Sequence[str] | str) -> tuple[str, ...]:
  """A list of names; one string is the command line's comma-separated
  words (`targets="cpu,a100"`), never its characters."""
  return tuple(words.split(",")) if isinstance(words, str) else tuple(words)


def sweep(
  fn_or_case: Callable | Case | str,
  *example_args,
  **options: Unpack[SweepOptions],
) -> Results:
  """Sweeps a function (or a `Case`, or a case name) as `hloprobe sweep`.

  Args:
    fn_or_case: a JAX function (with `example_args`, see `as_case`), a
      `Case`, or a case's words (`seed_mlp`, `path/to/file.py:factory`).
    *example_args: the function's arguments at full batch size.
    **options: `SweepOptions`' keywords (targets, precisions, batch_sizes,
      in_axes, output_axis, name, explain_passes, cache, cache_dir, jobs).

  Returns:
    `Results`: the records, `.table()`, `.to_dataframe()`, HTML; with
    `explain_passes`, also explain's records and words: the answer
    first (`report.answer_lines`: the worst finding, "Do: fixes not
    tried", see NOT_TRIED), then one line per target, as `explain`'s
    one screen (`report.render_answered`).

  Raises:
    InvalidArgumentError, CaseError, TargetError: bad input, as the
      command line's exit 2 (one line); `only` (explain's).
    TypeError: an unknown keyword.
    Interrupted: SIGINT/SIGTERM during the sweep.
  """
  if options.get("only") is not None:
    raise InvalidArgumentError(
      "only= is explain's: hloprobe.explain(..., only='invariance')"
    )
  if "invariance" in options:
    raise InvalidArgumentError(
      "invariance= is explain's: hloprobe.explain(..., invariance='off')"
    )
  plan = plan_case(fn_or_case, *example_args, **options)
  return _results(plan, run(plan))


def _results(plan: SweepPlan, records, invariance=None) -> Results:
  """`sweep`'s `Results` of `records`; with the plan's `explain_passes`,
  explain's records and words, the answer holding `invariance` (the
  groups and pins `invariance.batch_invariance` gave) when not None."""
  text = render(list(records), "table", {})
  if not plan.explain_passes:
    return Results(records, text=text)
  found = tuple(explain_results(records, [c.case for c in plan.cases]))
  host = HostCpu.of(os.environ.get("XLA_FLAGS"))
  found_answer = answer(
    plan, records, try_fixes=False, not_tried=NOT_TRIED, list_untried=False
  )
  if invariance is not None:
    groups, pins = invariance
    found_answer = dataclasses.replace(
      found_answer, invariance=groups, pins=pins
    )
  text = render_answered(found, found_answer, host=host)
  return Results(records, found, text, found_answer)


def explain(
  fn_or_case: Callable | Case | str,
  *example_args,
  **options: Unpack[SweepOptions],
) -> Results:
  """`sweep` with passes named, then `hloprobe explain`'s words.

  Takes `sweep`'s arguments (`explain_passes` is always on) and returns
  its `Results` with `explanations` and `text` (`print(results)`).

  By default (`invariance="answer"`, as the command line's) the answer
  opens with the batch-invariance answer: which batch sizes give row 0
  and an anchor row the same bits (rows run on the CPU; a compile-only
  GPU by kernel identity), run on the sweep's own workers, its pins
  listed untried; `invariance="off"` leaves it out.

  With `only="invariance"`, the bitwise question alone, as `hloprobe
  explain --only=invariance`: each config compiled (passes named only
  with `explain_passes`), its kernels read and, where the target runs,
  its rows run; no float64 reference, prediction or noise floor. The
  `Results` then hold the records (no numerics: each record's
  `prediction_error` says so), no explanations, the answer's
  `invariance` groups and their pins, listed untried with their `verify`
  commands, and the answer's words as `text`.

  Raises:
    as `sweep`'s; InvalidArgumentError: `only` not None or "invariance",
      `invariance` not "answer" or "off".
  """
  o = _options(options)
  if o["only"] is not None:
    return _invariance_only(fn_or_case, example_args, options)
  rest = {k: v for k, v in options.items() if k != "invariance"}
  rest["explain_passes"] = True
  if o["invariance"] == "off":
    return sweep(fn_or_case, *example_args, **rest)
  plan = plan_case(fn_or_case, *example_args, **rest)
  records, groups, pins = _with_invariance(plan)
  return _results(plan, records, (groups, pins))


# An untried pin's search where the case is a function from Python.
_NO_COMMAND = (
  "`hloprobe explain --only=invariance --invariance=pin` on a case file "
  "of this function (path.py:factory; a function passed from Python has "
  "no command line)"
)


def _with_invariance(plan: SweepPlan) -> tuple:
  """(the records, the batch-invariance groups, their pins) of `plan`:
  the sweep and `invariance.batch_invariance` on one pool of workers (a
  function's case shipped to them for both: its rows run there); pins
  listed untried, a function's with no command (`_NO_COMMAND`)."""
  from hloprobe.engine import worker_pool
  from hloprobe.invariance import batch_invariance

  local = {c.case.name for c in plan.cases if not c.portable}
  with shipped(plan) as ready, worker_pool(ready) as pool:
    records = run(ready, pool=pool)
    with worker_environment(ready):
      found, pins = batch_invariance(ready, records, pool)
  # A function's shipped file is gone after: no command names it.
  pins = tuple(
    dataclasses.replace(p, search=_NO_COMMAND)
    if p.search and p.case in local
    else p
    for p in pins
  )
  return records, found, pins


def _invariance_only(fn_or_case, example_args, options) -> Results:
  """`explain(..., only="invariance")`: the sweep without numerics and
  the batch-invariance answer on its workers (`_with_invariance`)."""
  plan = plan_case(fn_or_case, *example_args, **options)
  records, found, pins = _with_invariance(plan)
  answer = Answer(
    (),
    not_tried="only='invariance': no accuracy numerics",
    invariance=found,
    pins=pins,
  )
  return Results(
    records, (), render_answered((), answer, bits_only=True), answer
  )


def _plan(fn_or_case, example_args, case_options, spec) -> SweepPlan:
  """The sweep's plan: the case made (`as_case`) and planned, batch sizes
  defaulted from its rows."""
  if isinstance(fn_or_case, (Case, str)):
    if example_args:
      raise InvalidArgumentError(
        "hloprobe: example arguments go with a function, not with a Case "
        "or a case name (its inputs are its own)"
      )
    case = fn_or_case
  else:
    case = as_case(fn_or_case, *example_args, **case_options)
    _check_rows(case, spec.batch_sizes)
  plan = plan_sweep(spec, cases=(case,), batch_sizes=spec.batch_sizes or (1,))
  if not spec.batch_sizes:
    plan = dataclasses.replace(plan, batch_sizes=_default_sizes(plan))
  return plan.nonempty()


def _check_rows(case: Case, batch_sizes: Sequence[int]) -> None:
  """A batch size above a function's example rows, named here with the
  keyword (the sweep's own check names the shipped case file and the
  command line's flag).

  Raises:
    InvalidArgumentError: the largest size and the rows.
  """
  full = case.full_inputs() if batch_sizes else None
  if full is None:
    return
  rows, largest = case.full_size(full), max(batch_sizes)
  if largest > rows:
    raise InvalidArgumentError(
      f"batch size {largest} exceeds the {rows} example rows of "
      f"{case.name!r}; "
      f"use batch_sizes up to {rows}"
    )


def _default_sizes(plan: SweepPlan) -> tuple[int, ...]:
  """1, 2 and the case's full batch size, those that exist.

  Raises:
    InvalidArgumentError: a sized case (its sizes are not rows).
  """
  case = plan.cases[0].case
  full = case.full_inputs()
  if full is None:
    raise InvalidArgumentError(
      f"case {case.name!r} is sized by {case.swept_size!r}: give "
      "batch_sizes=..., e.g. batch_sizes=[64, 4096]"
    )
  rows = case.full_size(full)
  return tuple(n for n in dict.fromkeys((1, 2, rows)) if n <= rows)
