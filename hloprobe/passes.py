"""Which XLA pass rewrote each dot site (`--explain_passes`).

The config is compiled once more in a worker process with
`--xla_dump_to=TMPDIR --xla_dump_hlo_pass_re=.*`, which makes XLA write the
module after every pass that changed it, named
`module_<id>.<name>.<seq>.<pipeline>.after_<pass>.before_<next>.txt`
(xla/service/dump.cc, DumpHloModuleBetweenPassesIfEnabled; jaxlib 0.10.2).
Reading the dumps in sequence order, a site's pass is the first one after
which it is no longer a plain `dot` (outside any fusion): for example
`dot-strength-reduction` / `algsimp` turning it into multiply+reduce, or
`triton-gemm-rewriter` wrapping it in a Triton gemm fusion. The dumps are
removed afterwards.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile

from hloprobe import dot_sites, worker
from hloprobe.errors import HloParseError, HloprobeError
from hloprobe.hlo_parse import parse_hlo_module
from hloprobe.stablehlo_parse import StableHloDot

__all__ = ["PassAttribution", "attribute_passes", "explain_passes"]

_DUMP_RE = re.compile(
  r"^module_(?P<id>\d+)\.(?P<name>.+?)\.(?P<seq>\d{4})\.(?P<pipeline>[^.]+)"
  r"\.after_(?P<pass>[^.]+)(?:\.before_.*)?\.txt$"
)
_PLAIN_EMITTERS = ("top level", "call", "while", "conditional")


@dataclasses.dataclass(frozen=True, slots=True)
class PassAttribution:
  """The pass after which a dot site stopped being a plain dot.

  Attributes:
    site: dot site index.
    pass_name: XLA pass name as dumped, e.g. "dot-strength-reduction".
    pipeline: the pass pipeline, e.g. "simplification".
    fate: what the site was right after that pass, e.g. "multiply+reduce".
  """

  site: int
  pass_name: str
  pipeline: str
  fate: str


def _is_plain(fate: dot_sites.DotFate) -> bool:
  return fate.fate == dot_sites.Fate.DOT and fate.emitter in _PLAIN_EMITTERS


def _describe(fate: dot_sites.DotFate) -> str:
  if fate.fate == dot_sites.Fate.DOT:
    return f"dot in {fate.emitter}"
  return fate.fate.value


def _pass_dumps(dump_dir: str, module_name: str) -> list[tuple[int, re.Match]]:
  """The after-pass dumps of the last compiled module named `module_name`."""
  found = [m for m in map(_DUMP_RE.match, os.listdir(dump_dir))
           if m and m.group("name") == module_name]
  if not found:
    return []
  last_id = max(m.group("id") for m in found)
  return sorted((int(m.group("seq")), m) for m in found if m.group("id") == last_id)


def attribute_passes(dump_dir: str, module_name: str,
                     sites: list[StableHloDot]) -> dict[int, PassAttribution]:
  """Names, per site, the first dumped pass after which it is not a plain dot.

  Args:
    dump_dir: an `--xla_dump_to` folder written with
      `--xla_dump_hlo_pass_re=.*`.
    module_name: the HLO module's name (e.g. "jit__seed_batched").
    sites: the StableHLO dot sites of that module.

  Returns:
    Site index -> attribution, for the sites some pass rewrote; a site that
    stays a plain dot to the end is absent.

  Raises:
    HloprobeError: the folder has no pass dumps for that module.
  """
  dumps = _pass_dumps(dump_dir, module_name)
  if not dumps:
    raise HloprobeError(f"no pass dumps for module {module_name!r} in {dump_dir}")
  found: dict[int, PassAttribution] = {}
  for _, m in dumps:
    if len(found) == len(sites):
      break
    with open(os.path.join(dump_dir, m.string)) as f:
      try:
        module = parse_hlo_module(f.read())
      except HloParseError:
        continue  # a dump XLA printed in another form; the next one decides
    for fate in dot_sites.map_dot_sites(sites, module):
      i = fate.site.index
      if i not in found and not _is_plain(fate):
        found[i] = PassAttribution(i, m.group("pass"), m.group("pipeline"), _describe(fate))
  return found


def explain_passes(case: str, target: str, precision: str, n: int,
                   sites: list[StableHloDot], module_name: str,
                   xla_flags: str = "") -> dict[int, PassAttribution]:
  """Compiles a config in a worker with pass dumps and attributes each site.

  Args:
    case, target, precision, n: the config, by name.
    sites: its StableHLO dot sites.
    module_name: its HLO module name.
    xla_flags: the experiment's own XLA_FLAGS, kept in the worker.

  Raises:
    worker.WorkerError: the worker died.
    HloprobeError: XLA wrote no dumps for the module.
  """
  tmp = tempfile.mkdtemp(prefix="hloprobe-passes-")
  try:
    flags = f"{xla_flags} --xla_dump_to={tmp} --xla_dump_hlo_pass_re=.*".strip()
    worker.call_in_worker(
      "run_single_config",
      {"case": case, "target": target, "precision": precision, "n": n},
      flags,
    )
    return attribute_passes(tmp, module_name, sites)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
