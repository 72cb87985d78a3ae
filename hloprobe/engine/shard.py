"""Shards: a deterministic, balanced part of a sweep's configs per machine.

`--shard=I/N` runs part I (0-based, 0 <= I < N) of N of a plan's configs,
so that N machines (a CI matrix, a Kubernetes Indexed Job, a Slurm array)
share one sweep and `hloprobe merge` joins their results. `--shard=auto/N`
reads I from the environment (`shard_index_from_environment`):

  HLOPROBE_SHARD_INDEX   set by the user, e.g. from a GitHub Actions
                         matrix (Actions has no built-in index of a
                         matrix job), 0-based
  JOB_COMPLETION_INDEX   Kubernetes Indexed Job, 0-based by definition
                         (https://kubernetes.io/docs/concepts/workloads/
                         controllers/job/#completion-mode)
  SLURM_ARRAY_TASK_ID    Slurm job array, taken as given: run the array
                         as `--array=0-(N-1)`; an index outside 0..N-1
                         is refused, never shifted

The split (`shard_members`) keeps the plan's order (experiment, case,
target, precision, n) and cuts it into N contiguous runs of about equal
expected cost (`config_cost`): a shard's configs share as few XLA_FLAGS
sets and targets as the balance allows, so each shard starts few worker
processes and loads each compile-only target once. A sweep runs under
one jaxlib release; `versions` (a venv per release) takes no --shard
yet.

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from hloprobe.compile import jaxlib_release
from hloprobe.errors import InvalidArgumentError
from hloprobe.runtime import source_hash

__all__ = [
  "SHARD_INDEX_VARIABLES",
  "Shard",
  "config_cost",
  "parse_shard",
  "plan_fingerprint",
  "shard_identity",
  "shard_index_from_environment",
  "shard_members",
]

# The environment variables `auto` reads, in this order (see above).
SHARD_INDEX_VARIABLES = (
  "HLOPROBE_SHARD_INDEX",
  "JOB_COMPLETION_INDEX",
  "SLURM_ARRAY_TASK_ID",
)
# At most this many shards: more than a plan has configs leaves some empty.
_MAX_SHARDS = 4096
_SHARD_RE = re.compile(r"^(auto|[0-9]+)/([0-9]+)$")
# Expected cost of one config, relative to a CPU config. Measured with
# `hloprobe sweep --targets=cpu,a100 --batch_sizes=1,2,3
# --precisions=bfloat16,float32 --nocache --jobs=1 --timings` (2026-12-02,
# jaxlib 0.12.0.1, a loaded 2-core machine): a100 configs 4.5-7.1 s (the
# compile 4-7 s: PTX and ptxas), cpu configs 1.6-2.8 s (compile and run),
# the case's first config's inputs and emulation set aside: about 2.5x.
# The cost per config does not grow with n (README "Benchmark": n = 4096
# costs 1.02x n = 64), so n is not weighed.
_COST = {"cpu": 1.0, "cuda": 2.5}


@dataclasses.dataclass(frozen=True, slots=True)
class Shard:
  """One part of a sweep.

  Attributes:
    index: 0-based, 0 <= index < count.
    count: how many shards the sweep is split into (>= 1).
  """

  index: int
  count: int

  def label(self) -> str:
    """E.g. "1/3" (0-based), as --shard is written."""
    return f"{self.index}/{self.count}"


def shard_index_from_environment(environ: Mapping[str, str]) -> tuple[str, str]:
  """(variable, value) of the first of `SHARD_INDEX_VARIABLES` set.

  Raises:
    InvalidArgumentError: none is set.
  """
  for name in SHARD_INDEX_VARIABLES:
    value = environ.get(name, "").strip()
    if value:
      return name, value
  raise InvalidArgumentError(
    "--shard=auto/N reads the shard's index from "
    f"{', '.join(SHARD_INDEX_VARIABLES)}, and none is set; set one "
    "(0-based) or write --shard=I/N"
  )


def parse_shard(text: str, environ: Mapping[str, str]) -> Shard:
  """Reads --shard: `I/N` (0-based I) or `auto/N`.

  Args:
    text: the flag's value, e.g. "0/3" or "auto/3".
    environ: the environment `auto` reads (`os.environ`).

  Raises:
    InvalidArgumentError: not I/N, N outside 1..4096, I outside 0..N-1
      (naming the variable it came from).
  """
  m = _SHARD_RE.match(text.strip())
  if not m:
    raise InvalidArgumentError(
      f"--shard={text!r}: write I/N (0-based, e.g. 0/3) or auto/N"
    )
  count = int(m.group(2))
  if not 1 <= count <= _MAX_SHARDS:
    raise InvalidArgumentError(
      f"--shard={text}: the count must be 1 to {_MAX_SHARDS}"
    )
  where, word = "--shard", m.group(1)
  if word == "auto":
    name, word = shard_index_from_environment(environ)
    where = f"{name}={word!r} (--shard=auto/{count})"
  if not word.isascii() or not word.isdigit() or int(word) >= count:
    raise InvalidArgumentError(
      f"{where}: the shard index must be 0 to {count - 1} (0-based; a "
      f"Slurm array runs as --array=0-{count - 1})"
    )
  return Shard(int(word), count)


def config_cost(platform: str) -> float:
  """A config's expected cost on a target of `platform` ("cpu", "cuda"),
  relative to a CPU config's; an unknown platform costs as a GPU's."""
  return _COST.get(platform, _COST["cuda"])


def shard_members(costs: Sequence[float], shard: Shard) -> list[int]:
  """The indices (into `costs`, the plan's configs in order) of `shard`'s
  configs: a contiguous run, cut where the running cost crosses
  index/count of the total (a config goes to the shard its cost's
  midpoint falls in). Deterministic; every config is in exactly one
  shard; the shards' costs differ by at most about one config's.

  Args:
    costs: each config's expected cost (`config_cost`), > 0.
    shard: the part wanted.
  """
  total = sum(costs)
  members, start = [], 0.0
  for i, cost in enumerate(costs):
    middle = start + cost / 2
    start += cost
    if min(int(middle * shard.count / total), shard.count - 1) == shard.index:
      members.append(i)
  return members


def plan_fingerprint(words: Mapping, identity: Mapping) -> str:
  """The sha256 (hex) of a plan: what its configs and their results depend
  on, for `hloprobe merge` to refuse shards of different plans.

  Args:
    words: the plan as words (`SweepPlan.words()`): cases, batch sizes,
      precisions, targets, experiments, explain_passes.
    identity: what else the results depend on: hloprobe's source hash,
      the jax/jaxlib versions, the environment's XLA_FLAGS, each target's
      definition.
  """
  text = json.dumps({"words": words, "identity": identity}, sort_keys=True)
  return hashlib.sha256(text.encode()).hexdigest()


def shard_identity(environ: Mapping[str, str]) -> dict:
  """What a plan's results depend on besides its words, for its
  fingerprint: hloprobe's source hash (`runtime.source_hash`), the
  jax/jaxlib versions and `environ`'s XLA_FLAGS (the workers run under
  them). Shards of one sweep and their merge must agree on it."""
  return {
    "hloprobe_source": source_hash(),
    **jaxlib_release().versions,
    "XLA_FLAGS": environ.get("XLA_FLAGS", ""),
  }
