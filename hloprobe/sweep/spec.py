"""What a sweep runs: the `SweepSpec` record, its batch sizes and checks.

Cases and targets are looked up once, here; every name is checked before
any config compiles (unknown names, a name given twice, batch sizes out of
range). `spec_from_words` builds a spec from the command line's words.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Sequence

from hloprobe.compile import experiments as experiments_lib
from hloprobe.compile.cases import Case, get_case, resolvable_elsewhere
from hloprobe.compile.experiments import BASELINE, Experiment
from hloprobe.compile.targets import Target, get_target, is_config_path
from hloprobe.errors import CaseError, InvalidArgumentError
from hloprobe.ir.precisions import parse_precision

__all__ = [
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "SweepSpec",
  "case_inputs",
  "record_inputs",
  "check_case_sizes",
  "check_nonempty",
  "config_file_words",
  "parse_batch_sizes",
  "spec_from_words",
]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
  """What to sweep, as records looked up once; every name already checked.

  Cases and targets may be given as names (then looked up here, once: a
  target's config file is read once per sweep) or as records with the
  names they were looked up by (`case_names`, `target_names`).

  Attributes:
    cases: `Case` records.
    batch_sizes: positive batch sizes, in the order given.
    precisions: matmul precision names (see `precisions.parse_precision`).
    targets: `Target` records.
    explain_passes: also name the XLA pass that rewrote each dot site
      (each compile also dumps the module after every pass; see `passes`).
    experiments: XLA_FLAGS experiments run beside the baseline; their
      configs compile in workers under their flags, as the baseline's do
      under the user's (see `run_sweep`).
    cache_dir: folder of the persistent record cache (see `cache`), or None
      to compute every config. Only successful configs are stored.
    jobs: how many worker processes compile and run at once (see
      `run_sweep`); results keep their order whatever it is.
    case_names: the name each case was looked up by (`seed_mlp`,
      `path/to/file.py:factory`): a worker process finds the case by it.
    target_names: the word each target was looked up by (`a100`, or a
      config file's path as given): what MANIFEST.json records.
  """

  cases: tuple[Case | str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]
  targets: tuple[Target | str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()
  cache_dir: str | None = None
  jobs: int = 1
  case_names: tuple[str, ...] = ()
  target_names: tuple[str, ...] = ()

  def __post_init__(self):
    # One rule for every list: a name (or size) given twice is swept once,
    # where it first appears.
    for field in ("batch_sizes", "precisions", "experiments"):
      object.__setattr__(
        self, field, tuple(dict.fromkeys(getattr(self, field)))
      )
    names = [e.name for e in self.experiments]
    if len(set(names)) != len(names) or BASELINE.name in names:
      raise InvalidArgumentError(
        f"experiment names must be unique and not 'baseline': {names}"
      )
    cases = _looked_up(self.cases, self.case_names, get_case)
    _check_cases(cases)
    targets = _check_target_names(
      _looked_up(self.targets, self.target_names, get_target)
    )
    for field, pairs in (("case", cases), ("target", targets)):
      object.__setattr__(self, f"{field}s", tuple(r for _, r in pairs))
      object.__setattr__(self, f"{field}_names", tuple(w for w, _ in pairs))
    for name in self.precisions:
      parse_precision(name)
    if not self.batch_sizes or min(self.batch_sizes) < 1:
      raise InvalidArgumentError(
        f"batch sizes must be positive integers, got {self.batch_sizes}"
      )

  @property
  def config_count(self) -> int:
    """How many configs the sweep runs, each experiment's included."""
    per_run = (
      len(self.cases)
      * len(self.targets)
      * len(self.precisions)
      * len(self.batch_sizes)
    )
    return per_run * (1 + len(self.experiments))


def _looked_up(items, names, lookup) -> list[tuple[str, object]]:
  """(name, record) pairs of names or records, a name given twice once.

  A name is looked up with `lookup`; a record keeps its name from `names`
  (same length as `items`), else takes its own `.name`.
  """
  if len(names) != len(items):
    names = [None] * len(items)
  found: dict[str, object] = {}
  for item, name in zip(items, names):
    word = item if isinstance(item, str) else name or item.name
    if word not in found:
      found[word] = lookup(item) if isinstance(item, str) else item
  return list(found.items())


def _same_target(a: tuple[str, Target], b: tuple[str, Target]) -> bool:
  """One built-in name, or two paths of one config file."""
  if a[0] == b[0]:
    return True
  files = is_config_path(a[0]) and is_config_path(b[0])
  return files and os.path.realpath(a[0]) == os.path.realpath(b[0])


def _check_target_names(pairs) -> list[tuple[str, Target]]:
  """No two targets share a name (rows and output folders are keyed by
  it; a config file's target is named after the file).

  Args:
    pairs: (word, Target) as `_looked_up` gives them.

  Returns:
    `pairs` with repeats of one target (`x.txtpb` and `./x.txtpb`) dropped
    after their first.

  Raises:
    InvalidArgumentError: two targets share a name.
  """
  seen: dict[str, tuple[str, Target]] = {}
  for word, target in pairs:
    first = seen.get(target.name)
    if first is not None and not _same_target(first, (word, target)):
      raise InvalidArgumentError(
        f"targets {first[0]!r} and {word!r} are both named {target.name!r}; "
        "rows and output folders are keyed by the name: rename a config "
        "file (a config's target is named after its file)"
      )
    seen.setdefault(target.name, (word, target))
  return list(seen.values())


def _check_cases(pairs) -> None:
  """Every case's batch axes fit, and no case is named twice.

  Args:
    pairs: (name looked up by, Case) as `_looked_up` gives them.

  Raises:
    CaseError: a batch axis out of range, arguments that disagree on the
      batch size, or one case given under two names.
  """
  seen: dict[str, str] = {}
  for name, case in pairs:
    if ":" in name:  # a user's: axes in range, one batch size
      case_inputs(name)  # made once; the sweep reuses them
    if case.name in seen:
      raise CaseError(
        f"case {case.name!r} given twice (as {seen[case.name]!r}); each "
        "case may be swept once"
      )
    seen[case.name] = name


def check_case_sizes(spec: SweepSpec, inputs: Sequence[tuple | None]) -> None:
  """A batch size larger than a case's rows is bad input, found up front.

  Args:
    spec: the sweep.
    inputs: each of `spec.cases`' full-size inputs (`record_inputs`), in
      order; the caller keeps them (a case's `make_inputs` runs once).

  Raises:
    InvalidArgumentError: names the case, its rows and the largest size.
  """
  largest = max(spec.batch_sizes)
  for name, case, full in zip(spec.case_names, spec.cases, inputs):
    if full is None:  # a sized case makes its inputs at each size
      continue
    rows = case.full_size(full)
    if largest > rows:
      raise InvalidArgumentError(
        f"batch size {largest} exceeds case {name!r}'s {rows} rows; use "
        f"--batch_sizes up to {rows}"
      )


def record_inputs(name: str, case: Case) -> tuple | None:
  """`case`'s full-size inputs: made once per process (`case_inputs`) when
  a fresh process finds this very record by `name`; else the record's own
  `full_inputs()` (a record that reuses a built-in's name, or one put into
  `CASES` at run time, must not get the built-in's inputs)."""
  if resolvable_elsewhere(name, case):
    return case_inputs(name)
  return case.full_inputs()


@functools.lru_cache(maxsize=4)
def case_inputs(case_name: str):
  """A case's full-size inputs, made once per process (read only); None
  for a case that makes its inputs at each size."""
  return get_case(case_name).full_inputs()


# Stated maxima, checked before any list is built: a batch size (rows of
# the batched argument) and the number of batch sizes in one sweep.
MAX_BATCH_SIZE = 1 << 20
MAX_BATCH_SIZES = 4096
# ASCII digits only ([0-9], not \\d: `int` would read '١' and '１'), at most
# as many as MAX_BATCH_SIZE has, so no huge integer is ever made.
_ITEM_RE = re.compile(r"([0-9]{1,7})(?:-([0-9]{1,7}))?")


def _bad_batch_size(
  item: str, text: str, why: str = ""
) -> InvalidArgumentError:
  return InvalidArgumentError(
    f"bad batch size {item!r} in --batch_sizes={text!r}{why}; expected "
    f"positive integers and ascending ranges up to {MAX_BATCH_SIZE}, at "
    f"most {MAX_BATCH_SIZES} sizes, e.g. '1,2,4-9,64'"
  )


def parse_batch_sizes(text: str) -> tuple[int, ...]:
  """Parses `1,2,4-9,64` into (1, 2, 4, 5, 6, 7, 8, 9, 64).

  Sizes are ASCII integers in [1, MAX_BATCH_SIZE]; at most MAX_BATCH_SIZES
  of them, counted before any range is expanded. A size given twice is
  kept once, where it first appears.

  Raises:
    InvalidArgumentError: an item is not a positive integer or an ascending range,
      or the limits above are exceeded.
  """
  bounds, count = [], 0
  for item in text.split(","):
    item = item.strip()
    m = _ITEM_RE.fullmatch(item)
    if m is None:
      raise _bad_batch_size(item, text)
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not 1 <= lo <= hi <= MAX_BATCH_SIZE:
      raise _bad_batch_size(item, text)
    count += hi - lo + 1
    if count > MAX_BATCH_SIZES:
      raise _bad_batch_size(item, text, f": more than {MAX_BATCH_SIZES} sizes")
    bounds.append((lo, hi))
  sizes = (n for lo, hi in bounds for n in range(lo, hi + 1))
  return tuple(dict.fromkeys(sizes))


def config_file_words(paths: Sequence[str]) -> tuple[str, ...]:
  """--target_config paths, as words `targets.get_target` reads as files.

  A bare file name (`--target_config=cpu`) becomes `./cpu`, so a file named
  like a built-in target is still read as a file.
  """
  return tuple(
    p if is_config_path(p) else os.path.join(os.curdir, p) for p in paths
  )


def check_nonempty(spec: SweepSpec) -> SweepSpec:
  """`spec`, unless a list is empty: it would sweep nothing and pass.

  Raises:
    InvalidArgumentError: names the empty lists.
  """
  empty = [
    name
    for name in ("cases", "targets", "batch_sizes", "precisions")
    if not getattr(spec, name)
  ]
  if empty:
    raise InvalidArgumentError(
      f"nothing to sweep: no {' and no '.join(empty)}; e.g. --case=seed_mlp "
      "--targets=cpu --batch_sizes=1,2 --precisions=float32"
    )
  return spec


def spec_from_words(
  *,
  cases: Sequence[str],
  batch_sizes: str,
  precisions: Sequence[str],
  targets: Sequence[str],
  target_configs: Sequence[str] = (),
  explain_passes: bool = False,
  experiment_words: Sequence[str] = (),
  experiments_file: str | None = None,
  cache_dir: str | None = None,
  jobs: int = 1,
) -> SweepSpec:
  """The sweep the command line names, in its words.

  Args:
    cases, precisions, targets: names, as --case, --precisions, --targets.
    batch_sizes: as --batch_sizes, e.g. "1,2,4-9" (see `parse_batch_sizes`).
    target_configs: --target_config paths (see `config_file_words`), swept
      after `targets`.
    explain_passes, cache_dir, jobs: as `SweepSpec`'s fields.
    experiment_words: NAME:FLAGS or built-in names (--experiment).
    experiments_file: a file of NAME:FLAGS lines, or None.

  Raises:
    InvalidArgumentError: a bad name or size, or a list that is empty.
  """
  found = [experiments_lib.parse_experiment(t) for t in experiment_words]
  if experiments_file:
    found += experiments_lib.parse_experiments_file(experiments_file)
  return check_nonempty(
    SweepSpec(
      cases=tuple(cases),
      batch_sizes=parse_batch_sizes(batch_sizes),
      precisions=tuple(precisions),
      targets=tuple(targets) + config_file_words(target_configs),
      explain_passes=explain_passes,
      experiments=tuple(found),
      cache_dir=cache_dir,
      jobs=jobs,
    )
  )
