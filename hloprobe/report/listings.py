"""The listings `hloprobe targets`, `cases` and `experiments` print.

Each returns the whole text the command prints; the tables are tabulate's
plain format, the cases a two-column list (name, the report it comes from).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tabulate import tabulate

from hloprobe.compile import BUILTIN_EXPERIMENTS, CASES, target_listing

__all__ = [
  "cases_listing",
  "experiments_listing",
  "listing",
  "targets_listing",
]


def targets_listing(config_paths: Sequence[str] = ()) -> str:
  """The built-in targets, then one per GpuTargetConfigProto file in
  `config_paths` (--target_config), and the ptxas GPU targets would use.

  Raises:
    TargetError: a config file cannot be read or parsed.
  """
  found = target_listing(config_paths)
  rows = [
    (
      t.name,
      t.platform,
      "compile only" if t.compile_only else "compile and run",
      t.compute_capability or "n/a",
      t.description,
    )
    for t in found.targets
  ]
  table = tabulate(
    rows,
    headers=(
      "target",
      "platform",
      "mode",
      "compute capability",
      "description",
    ),
  )
  ptxas = found.ptxas or "none found (pip install nvidia-cuda-nvcc-cu12)"
  return f"{table}\n\nptxas for GPU targets: {ptxas}"


def cases_listing() -> str:
  """One line per built-in case: its name and the report it comes from
  (the issue's URL, else the reported numbers' source, else "n/a")."""
  rows = [
    (c.name, c.url or (c.reported and c.reported.source) or "n/a")
    for c in CASES.values()
  ]
  width = max(len(name) for name, _ in rows)
  return "\n".join(f"{name:<{width}}  {source}" for name, source in rows)


def experiments_listing() -> str:
  """The built-in XLA_FLAGS experiments: name, flags, what each does."""
  rows = [
    (e.name, e.flags_text, e.description) for e in BUILTIN_EXPERIMENTS.values()
  ]
  return tabulate(rows, headers=("experiment", "XLA_FLAGS", "what it does"))


def listing(
  what: Literal["targets", "cases", "experiments"],
  config_paths: Sequence[str] = (),
) -> str:
  """The text `hloprobe targets`, `cases` or `experiments` prints.

  Args:
    what: the command's name.
    config_paths: GpuTargetConfigProto files (--target_config) listed after
      the built-in targets; only `targets` reads them.

  Raises:
    TargetError: a config file cannot be read or parsed.
    ValueError: `what` names no listing.
  """
  if what == "targets":
    return targets_listing(config_paths)
  if what == "cases":
    return cases_listing()
  if what == "experiments":
    return experiments_listing()
  raise ValueError(f"no listing {what!r}")
