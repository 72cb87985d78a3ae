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
import signal

from hloprobe.commands import common
from hloprobe.commands import sweep as sweep_command
from hloprobe.errors import CaseError, InvalidArgumentError

__all__ = [
  "MergeArgs",
  "main",
  "merge",
  "recorded_plan",
  "results_host",
  "results_in",
]

# The common flags merge reads; the others are the shards' plan's.
_READS = ("output_dir", "format")


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
  consistency).

  Raises:
    InvalidArgumentError: a sweep flag given (the plan is the shards'); a
      folder that is not a shard's; shards of different plans, a shard
      twice, missing shards; a plan this hloprobe (its source, jax,
      XLA_FLAGS) makes otherwise; shards that disagree with its split.
  """
  from hloprobe.engine import Shard, shard_identity, without_batch_consistency
  from hloprobe.report import join_shards, read_shard
  from hloprobe.runtime import HostCpu

  given = sorted(set(args.common.given) - set(_READS))
  if given:
    raise InvalidArgumentError(
      f"--{given[0]} is the shards' own: `merge` sweeps their plan; drop it"
    )
  common.check_format(args.common, args.columns, args.plot, args.model_explorer)
  parts = [read_shard(folder) for folder in args.words]
  records = join_shards(parts)
  first = parts[0]
  plan = _plan(first.plan)
  common.start_jax(plan.targets)
  if plan.fingerprint(shard_identity(os.environ)) != first.fingerprint:
    raise InvalidArgumentError(
      f"the shards' plan {first.fingerprint[:12]} is not the plan this "
      "hloprobe makes of their words (another hloprobe source, jax/jaxlib, "
      "XLA_FLAGS or target config): merge with the hloprobe and "
      "environment that ran them"
    )
  for p in parts:
    cut = dataclasses.replace(plan, shard=Shard(p.index, p.count))
    if list(p.configs) != cut.shard_indices():
      raise InvalidArgumentError(
        f"{p.label} holds other configs than the plan's shard "
        f"{p.index}/{p.count}; run it again"
      )
  host = HostCpu(**first.host) if first.host else None
  return plan, host, without_batch_consistency(records)


def _plan(words: dict):
  """The plan the shards' words make (as `sweep` made it).

  Raises:
    InvalidArgumentError: words that no longer make a plan (e.g. a case
      file that moved).
  """
  from hloprobe.engine import spec_from_words

  try:
    return spec_from_words(
      cases=list(words["cases"]),
      batch_sizes=",".join(str(int(n)) for n in words["batch_sizes"]),
      precisions=list(words["precisions"]),
      targets=list(words["targets"]),
      explain_passes=bool(words["explain_passes"]),
      experiment_words=list(words["experiments"]),
      inputs=words.get("inputs"),
      batch_arg=words.get("batch_arg"),
    )
  except (KeyError, TypeError, ValueError) as e:
    raise InvalidArgumentError(f"the shards' plan is malformed: {e}") from None
  except CaseError as e:  # a case file named relative to the shards' folder
    raise CaseError(
      f"{e} (the shards' --case words, as they ran: run `merge` from the "
      f"folder the shards ran in; their cases: {', '.join(words['cases'])})"
    ) from None


def main(args: MergeArgs) -> int:
  """`hloprobe merge`: joins, prints, writes; returns the exit status."""
  from hloprobe.engine import with_batch_consistency
  from hloprobe.report import Progress, start_stream

  plan, host, collected = merge(args)
  out = args.common.output_dir
  try:
    stream = Progress(len(collected), start_stream(out, args.overwrite))
    for r in collected:  # results.jsonl as the sweep streamed it
      stream.add(r)
    results = with_batch_consistency(collected)
    shown = sweep_command.outputs_of(args, args.common.format)
    shown = dataclasses.replace(shown, plan=plan.words())
    sweep_command.show(results, plan, shown, host)
    if out:
      sweep_command.write_records(results, out)
  except KeyboardInterrupt as e:
    signum = getattr(e, "signum", signal.SIGINT)
    raise common.Interrupted(signum) from None
  return common.EXIT_OK if all(r.ok for r in results) else common.EXIT_FAILED


def results_in(folder: str, plan) -> list:
  """`plan`'s configs' records (`sweep.SweepPlan.configs()`, in its order)
  from a `hloprobe merge` (or unsharded shard) --output_dir: what
  `golden check --results` and `verify --results` judge instead of
  sweeping. The folder may hold more configs than the plan's.

  Raises:
    InvalidArgumentError: no records there; a shard's folder (merge the
      shards first); a config of the plan missing, named.
  """
  from hloprobe.report import read_records

  if os.path.isfile(os.path.join(folder, "results.json")):
    try:
      from hloprobe.report import read_shard

      part = read_shard(folder)
    except InvalidArgumentError:
      part = None
    if part is not None and part.count > 1:
      raise InvalidArgumentError(
        f"--results={folder} is {part.label}, one part of a sweep: give "
        "the folder `hloprobe merge` wrote"
      )
  key = lambda c: (c.experiment, c.case, c.target.name, c.n, str(c.precision))
  found = {key(r.config): r for r in read_records(folder)}
  picked = []
  for c in plan.configs():
    r = found.get(key(c.config))
    if r is None:
      raise InvalidArgumentError(
        f"--results={folder} has no config {c.config.label()}; sweep (and "
        "merge) what this command judges, or drop --results"
      )
    picked.append(dataclasses.replace(r, config=c.config))
  return picked


def recorded_plan(folder: str) -> dict:
  """The plan words (`sweep.SweepPlan.words`) the results.json in `folder`
  records: a merge's or an unsharded sweep's "plan", else a shard's.

  Raises:
    InvalidArgumentError: no readable results.json, or one without a plan
      (one line: name the sweep with its flags).
  """
  import json

  path = os.path.join(folder, "results.json")
  try:
    with open(path, encoding="utf-8") as f:
      doc = json.load(f)
    plan = doc.get("plan") or (doc.get("shard") or {}).get("plan")
  except (OSError, ValueError, AttributeError) as e:
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

  from hloprobe.runtime import HostCpu

  try:
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
      host = json.load(f).get("host")
    return HostCpu(**host) if host else None
  except (OSError, ValueError, TypeError, AttributeError):
    return None
