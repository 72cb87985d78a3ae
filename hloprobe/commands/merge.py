"""`hloprobe merge DIR... --output_dir=OUT`: `--shard` runs joined into one.

Each DIR is a `hloprobe sweep --shard=I/N --output_dir=DIR` run's folder.
The merge checks that they are the N shards of one plan, each once, then
reports on their records as `hloprobe sweep` would have on the unsharded
run: the same table (--format), results.json, results.jsonl, per-config
files, report.html and --plot, identical but for timings and the time
made. Nothing compiles again: batch consistency (row 0 against n = 1,
which may be in another shard) is computed here over all the records.
Exit status: 0 when every config succeeded, 1 otherwise; 2 for shards
that do not make one sweep (named in one line).
"""

from __future__ import annotations

import dataclasses
import os
import sys

from hloprobe.commands import common
from hloprobe.commands import sweep as sweep_command
from hloprobe.errors import CaseError, InvalidArgumentError

__all__ = [
  "MergeArgs",
  "main",
  "merge",
  "recorded_plan",
  "results_host",
]

# The common flags merge reads; the others are the shards' plan's.
_READS = ("output_dir", "format")
# The largest results.json read for its plan or host, in bytes.
_MAX_JSON_BYTES = 256 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class MergeArgs:
  """`hloprobe merge DIR...`'s words and flags (each as `sweep`'s).

  Attributes:
    common: the flags every command accepts (merge reads --output_dir and
      --format; the plan is the shards').
    words: the shards' folders.
    sites, timings, wide, columns, plot, model_explorer, plot_shared_y,
      overwrite: as `sweep.SweepArgs`'.
  """

  common: common.SweepWords
  words: tuple[str, ...] = ()
  sites: bool = False
  timings: bool = False
  wide: bool = False
  columns: tuple[str, ...] | None = None
  plot: str | None = None
  model_explorer: str | None = None
  plot_shared_y: bool = True
  overwrite: bool = False


def merge(args: MergeArgs):
  """Reads and checks the shards; returns (their plan, its host record,
  the records in plan order as the sweep collects them: before batch
  consistency; and the merge's records, batch consistency computed over
  every shard's: `engine.check_shards`).

  A shard's files are data: no case a shard names is imported or run
  here. A built-in case is hloprobe's own and a module file is data (read
  as `sweep` reads it); a user's case (`module:factory`,
  `file.py:factory`) is never loaded: its name and sizes are taken from
  the records (`_recorded_case`), and the records must be exactly the
  plan's configs.

  Raises:
    InvalidArgumentError: a sweep flag given (the plan is the shards'); a
      folder that is not a shard's; shards of different plans (their
      fingerprints, or their recorded plans), a shard twice, missing
      shards; a plan this hloprobe (its source, jax, XLA_FLAGS) makes
      otherwise; shards whose records disagree with its split.
  """
  from hloprobe.commands.shards import read_shards
  from hloprobe.engine import check_shards
  from hloprobe.runtime import HostCpu

  given = sorted(set(args.common.given) - set(_READS))
  if given:
    raise InvalidArgumentError(
      f"--{given[0]} is the shards' own: `merge` sweeps their plan; drop it"
    )
  common.check_format(args.common, args.columns, args.plot, args.model_explorer)
  parts, records = read_shards(args.words)
  first = parts[0]
  plan = _plan(first.plan, records)
  common.start_jax(plan.targets)
  collected, records = check_shards(plan, parts, records)
  try:
    host = HostCpu(**first.host) if first.host else None
  except TypeError as e:
    raise InvalidArgumentError(
      f"{first.label}: its results.json host is malformed ({e})"
    ) from None
  return plan, host, collected, records


# The types of a recorded plan's words (`SweepPlan.words`).
_WORD_TYPES = {
  "cases": list,
  "batch_sizes": list,
  "precisions": list,
  "targets": list,
  "experiments": list,
  "explain_passes": bool,
}


def _checked_words(words: dict) -> dict:
  """The shards' plan words, each of its type.

  Raises:
    InvalidArgumentError: a word missing or of another type (one line).
  """
  for key, kind in _WORD_TYPES.items():
    value = words.get(key)
    if type(value) is not kind:
      raise InvalidArgumentError(
        f"the shards' plan is malformed: {key} is "
        f"{type(value).__name__}, not {kind.__name__}"
      )
    if kind is list:
      item = int if key == "batch_sizes" else str
      if not all(type(v) is item for v in value):
        raise InvalidArgumentError(
          f"the shards' plan is malformed: {key} holds a value that is "
          f"not {item.__name__}"
        )
  for key in ("inputs", "batch_arg"):
    if words.get(key) is not None and type(words[key]) is not str:
      raise InvalidArgumentError(
        f"the shards' plan is malformed: {key} is not text"
      )
  return words


def _plan(words: dict, records=()):
  """The plan the shards' words make (as `sweep` made it), with no case a
  shard names imported or run: a user's case (`module:factory`) is made
  from `records` (`_recorded_case`).

  Raises:
    InvalidArgumentError: words that no longer make a plan, or records
      that do not name one case per case word.
    CaseError: a built-in case or module file that cannot be found (e.g.
      a module file named relative to the shards' folder).
  """
  from hloprobe.compile import Experiment
  from hloprobe.engine import (
    SweepSpec,
    parse_batch_sizes,
    plan_sweep,
  )

  words = _checked_words(words)
  cases = list(words["cases"])
  names = _recorded_names(records)
  if len(names) != len(cases):
    raise InvalidArgumentError(
      f"the shards' records name {len(names)} case(s), their plan "
      f"{len(cases)} ({', '.join(cases)}); run the shards again"
    )
  items = [
    _recorded_case(w, name, records) if ":" in w else w
    for w, name in zip(cases, names)
  ]
  try:
    plan = plan_sweep(
      SweepSpec(
        cases=tuple(items),
        case_names=tuple(cases),
        batch_sizes=parse_batch_sizes(
          ",".join(str(n) for n in words["batch_sizes"])
        ),
        precisions=tuple(words["precisions"]),
        targets=tuple(words["targets"]),
        explain_passes=words["explain_passes"],
        experiments=tuple(Experiment.parse(w) for w in words["experiments"]),
        inputs=words.get("inputs"),
        batch_arg=words.get("batch_arg"),
      )
    ).nonempty()
  except CaseError as e:  # a case file named relative to the shards' folder
    raise CaseError(
      f"{e} (the shards' --case words, as they ran: run `merge` from the "
      f"folder the shards ran in; their cases: {', '.join(cases)})"
    ) from None
  got = [c.name for c in plan.cases]
  if got != names:
    raise InvalidArgumentError(
      f"the shards' records name the cases {', '.join(names)}, their plan "
      f"makes {', '.join(got)}; run the shards again"
    )
  return plan


def _recorded_names(records) -> list[str]:
  """The case names of the baseline's records, in order, each once."""
  from hloprobe.compile import BASELINE

  found = [
    r.config.case for r in records if r.config.experiment == BASELINE.name
  ]
  return list(dict.fromkeys(found))


def _recorded_case(word: str, name: str, records):
  """A user case (`module:factory`) as its shards' records describe it: its
  name and, where it ran at one size other than the sweep's, that size.
  Its program is not loaded (a shard's plan may name any code): calling
  its `fn` or `make_inputs` raises CaseError."""
  from hloprobe.compile import Case

  def not_loaded(*_args, **_kwargs):
    raise CaseError(
      f"case {word!r} is not loaded by `merge`: a shard's plan may name any "
      "code, and merge joins its records only"
    )

  sizes = {r.config.n for r in records if r.config.case == name}
  return Case(
    name=name,
    description=f"{word}, as its shards' records give it (not loaded)",
    fn=not_loaded,
    make_inputs=not_loaded,
    fixed_size=sizes.pop() if len(sizes) == 1 else None,
  )


def main(args: MergeArgs) -> int:
  """`hloprobe merge`: joins, prints, writes; returns the exit status.

  Raises:
    common.Interrupted: an interrupt while the merged results stream
      (the cli's `main` makes it the signal's exit status).
    HloprobeError: as `merge` raises (the cli prints it in one line).
  """
  from hloprobe.report import stream_results

  plan, host, collected, results = merge(args)
  for swept in plan.cases:
    if ":" in swept.source:  # a user's code: its records only, said once
      print(
        f"hloprobe merge: case {swept.source!r} not loaded (a shard's plan "
        "may name any code; merge joins its records as data)",
        file=sys.stderr,
      )
  out = args.common.output_dir
  try:
    stream = stream_results(out, len(collected), args.overwrite)
    for r in collected:  # results.jsonl as the sweep streamed it
      stream.add(r)
    shown = sweep_command.outputs_of(args, args.common.format)
    shown = dataclasses.replace(shown, plan=plan.words())
    sweep_command.show(results, plan, shown, host)
    if out:
      sweep_command.write_records(results, out)
  except BaseException as e:
    if (stop := common.Interrupted.after(e)) is None:
      raise
    raise stop from None
  return (
    common.ExitStatus.OK
    if all(r.ok for r in results)
    else common.ExitStatus.FAILED
  )


def recorded_plan(folder: str) -> dict:
  """The plan words (`sweep.SweepPlan.words`) the results.json in `folder`
  records: a merge's or an unsharded sweep's "plan", else a shard's.

  Raises:
    InvalidArgumentError: no readable results.json, or one without a plan
      (one line: name the sweep with its flags).
  """
  import json

  from hloprobe.ir import InputFile

  path = os.path.join(folder, "results.json")
  try:  # a FIFO or a device: refused unread
    data = InputFile(
      path, path, InvalidArgumentError, _MAX_JSON_BYTES
    ).read_bytes()
    doc = json.loads(data)
    plan = doc.get("plan") or (doc.get("shard") or {}).get("plan")
  except (
    InvalidArgumentError,
    ValueError,
    AttributeError,
    RecursionError,
  ) as e:
    raise InvalidArgumentError(
      f"--results={folder}: cannot read {path} ({e}); give the folder "
      "`hloprobe merge` wrote"
    ) from None
  if not isinstance(plan, dict) or "cases" not in plan:
    raise InvalidArgumentError(
      f"--results={folder}: {path} records no plan (written by an older "
      "hloprobe); name the sweep with its flags (--case, --targets, "
      "--batch_sizes, --precisions)"
    )
  return plan


def results_host(folder: str):
  """The `runtime.HostCpu` a merge's results.json in `folder` names (the
  shards' CPU), or None where it names none or cannot be read."""
  import json

  from hloprobe.ir import InputFile
  from hloprobe.runtime import HostCpu

  path = os.path.join(folder, "results.json")
  try:  # a FIFO or a device: refused unread
    data = InputFile(
      path, path, InvalidArgumentError, _MAX_JSON_BYTES
    ).read_bytes()
    host = json.loads(data).get("host")
    return HostCpu(**host) if host else None
  except (InvalidArgumentError, ValueError, TypeError, AttributeError):
    return None
  except RecursionError:
    return None
