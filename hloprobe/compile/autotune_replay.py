"""Autotune results replayed: which file a sweep loads, for which target.

`--autotune_results=FILE` becomes an experiment (`autotune_experiment`)
whose XLA_FLAGS load the file, refused in one line when no compile-only
target of the sweep is the device the file is keyed by, or when hloprobe
wrote it under another jaxlib; a compile under it names who chose its
fates (`autotune_selection`). The keys themselves: `autotune`.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence

from hloprobe.compile.autotune import (
  GemmFusionKey,
  device_fingerprint,
  device_string,
)
from hloprobe.compile.compat import installed_jaxlib
from hloprobe.compile.experiments import Experiment
from hloprobe.compile.targets import Target
from hloprobe.errors import TargetError
from hloprobe.ir import read_text_file

__all__ = [
  "MISSING_ENTRY",
  "autotune_experiment",
  "entry_notes",
  "autotune_selection",
  "autotuned_target",
  "results_devices",
]

_LOAD = "xla_gpu_load_autotune_results_from"
# What XLA does for a gemm fusion the loaded results do not hold on a
# compile-only target: its first compilable config (config_assigner.cc
# `GetFirstCompilableConfigOrDefault`; jaxlib 0.12.0.1 logs "Using first
# compilable config"), the heuristic it takes without results.
MISSING_ENTRY = "no autotune entry for this fusion; default config used"

# The names XLA reads as text format (autotuner_cache.cc `IsTextProtoPath`).
_TEXT_SUFFIXES = (".txt", ".txtpb", ".textproto", ".prototxt", ".pbtxt")


_LOAD_FLAG_RE = re.compile(rf"--{_LOAD}=(\S+)")
_JAXLIB_RE = re.compile(r"\A# hloprobe autotune results; jaxlib (\S+)")


def results_devices(text: str) -> frozenset[str]:
  """The device fingerprints an AutotuneCache text file is keyed by."""
  return frozenset(re.findall(r'\bdevice(?:_scope)?:\s*"([0-9a-f]{16})"', text))


def autotuned_target(target: Target, path: str, text: str) -> Target:
  """The target, compiled with an autotune results file loaded.

  Args:
    target: a compile-only GPU target.
    path: the results file (text format: `.textproto`, `.txtpb`, ...).
    text: its contents.

  Raises:
    TargetError: the target is not compile-only, or the file is keyed by
      another device than the target's config (one line, both named).
  """
  if not target.compile_only or target.config_text is None:
    raise TargetError(
      f"--autotune_results={path}: target {target.name!r} is not a "
      "compile-only GPU target (an attached GPU autotunes itself)"
    )
  mine = device_fingerprint(target.config_text)
  found = results_devices(text)
  if mine not in found:
    raise TargetError(
      f"--autotune_results={path}: recorded for device "
      f"{', '.join(sorted(found)) or 'none'}, but target {target.name!r} is "
      f"{mine} ({device_string(target.config_text)}); use the recording "
      "GPU's own target config (--target_config)"
    )
  options: Mapping[str, str] = {**(target.compiler_options or {}), _LOAD: path}
  return dataclasses.replace(
    target,
    compiler_options=options,
    description=f"{target.description}; autotune results {path}",
  )


def autotune_experiment(path: str, targets: Sequence[Target]) -> Experiment:
  """`--autotune_results=FILE` as an experiment named `autotuned-<stem>`.

  Its XLA_FLAGS load the file (`--xla_gpu_load_autotune_results_from`),
  so its configs run in worker processes of their own: XLA loads one
  results file per process, and the baseline's workers never see it. Every
  target of the sweep is compiled with it; only those whose config matches
  the recording device can hit (the key holds the device).

  Args:
    path: an `xla.autotuner.AutotuneCache` text file (`results_textproto`,
      or one XLA dumped with --xla_gpu_dump_autotune_results_to=F.textproto).
    targets: the sweep's targets.

  Raises:
    TargetError: the file cannot be read, is not text format, names
      another jaxlib in its first line (`results_textproto`'s comment; a
      file XLA dumped names none and is not checked), or no compile-only
      target of the sweep is the device it was recorded on (one line, the
      devices named).
  """
  if not path.endswith(_TEXT_SUFFIXES):
    raise TargetError(
      f"--autotune_results={path}: hloprobe reads text-format results only "
      f"(a name ending in {', '.join(_TEXT_SUFFIXES)})"
    )
  text = read_text_file(path, f"--autotune_results={path!r}", TargetError)
  _check_jaxlib(path, text)
  found = results_devices(text)
  mine = {
    t.name: device_fingerprint(t.config_text)
    for t in targets
    if t.compile_only and t.config_text is not None
  }
  if not found & set(mine.values()):
    have = ", ".join(f"{n} {d}" for n, d in mine.items()) or "none"
    raise TargetError(
      f"--autotune_results={path}: recorded for device "
      f"{', '.join(sorted(found)) or 'none'}, which no compile-only target "
      f"of this sweep is ({have}); add the recording GPU's own config "
      "(--target_config)"
    )
  stem = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path).split(".")[0])
  matching = sorted(n for n, d in mine.items() if d in found)
  return Experiment(
    f"autotuned-{stem}",
    (f"--{_LOAD}={os.path.abspath(path)}",),
    f"autotune results {path} (for {', '.join(matching)})",
  )


def autotune_selection(xla_flags: str, target: Target) -> str | None:
  """Who chose a compile-only target's fates, when results were loaded.

  Args:
    xla_flags: the XLA_FLAGS the compile ran under (a worker's; the
      autotune experiment's `--xla_gpu_load_autotune_results_from`).
    target: the target compiled for.

  Returns:
    E.g. "autotune results a100.textproto (autotuned on NVIDIA
    A100-SXM4-40GB) where they hold the fusion, else XLA heuristic" when
    the file loaded is keyed by the target's device; None otherwise (no
    file, another device's, or not a compile-only target). Which fusions
    the file holds is not checked per site here.
  """
  m = _LOAD_FLAG_RE.search(xla_flags)
  if m is None or not target.compile_only or target.config_text is None:
    return None
  try:
    with open(m.group(1), encoding="utf-8") as f:
      found = results_devices(f.read())
  except OSError:
    return None
  if device_fingerprint(target.config_text) not in found:
    return None
  name = re.search(r'device_description_str:\s*"([^"]+)"', target.config_text)
  device = name.group(1) if name else device_string(target.config_text)
  return (
    f"autotune results {os.path.basename(m.group(1))} (autotuned on "
    f"{device}) where they hold the fusion, else XLA heuristic"
  )


def _check_jaxlib(path: str, text: str) -> None:
  """Refuses results hloprobe wrote under another jaxlib (one line)."""
  m = _JAXLIB_RE.match(text)
  if m is None or m.group(1) == installed_jaxlib():
    return
  raise TargetError(
    f"--autotune_results={path}: written for jaxlib {m.group(1)}, this is "
    f"jaxlib {installed_jaxlib()}: XLA keys results by its own codegen "
    "versions and cache format, so another release's are ignored or "
    "misread; record them again under this one"
  )


def entry_notes(
  keys: Sequence[GemmFusionKey], text: str, device: str
) -> tuple[tuple[str, str], ...]:
  """Which gemm fusions a results file holds, for one device.

  Args:
    keys: the fusions (`autotune.gemm_fusion_keys`).
    text: the results file (AutotuneCache text format).
    device: the target's `device_fingerprint`.

  Returns:
    (fusion name, note) per key, in order: the entry's backend and config
    on one line, e.g. "TRITON: triton { block_m: 64 ... }", or
    `MISSING_ENTRY`.
  """
  held = {}
  for entry in re.split(r"\nentries \{", text)[1:]:
    fingerprint = re.search(r'hlo_fingerprint:\s*"([0-9a-f]+)"', entry)
    on = re.search(r'\bdevice:\s*"([0-9a-f]{16})"', entry)
    config = re.search(
      r"optimal_config \{ backend: (\w+) backend_config \{ (.*) \} \}[ \t]*$",
      entry,
      re.M,
    )
    if fingerprint and on and on.group(1) == device:
      how = f"{config.group(1)}: {config.group(2)}" if config else "held"
      held.setdefault(fingerprint.group(1), how)
  return tuple(
    (k.name, held.get(k.hlo_fingerprint, MISSING_ENTRY)) for k in keys
  )
