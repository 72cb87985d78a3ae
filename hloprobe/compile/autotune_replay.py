"""Autotune results replayed: which file a sweep loads, for which target.

`--autotune_results=FILE` becomes an experiment (`autotune_experiment`)
whose XLA_FLAGS load the file, refused in one line when no compile-only
target of the sweep is the device the file is keyed by, or when hloprobe
wrote it under another jaxlib; a compile under it names who chose each
gemm fusion (`loaded_results`, `LoadedResults.fusion_selections`: "autotuned on
<device>" or "no autotune entry for this fusion; default config used"). The keys themselves: `autotune`.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import mmap
import os
import re
from collections.abc import Iterable, Mapping, Sequence

from hloprobe.compile.autotune import (
  GemmFusionKey,
  config_assigner_input,
  device_fingerprint,
  device_string,
  gemm_fusion_keys,
)
from hloprobe.compile.compat import installed_jaxlib
from hloprobe.compile.experiments import (
  Experiment,
  parse_experiments_file,
)
from hloprobe.compile.targets import Target, get_target
from hloprobe.errors import TargetError
from hloprobe.ir import InputFile

__all__ = [
  "AUTOTUNED_ON",
  "MISSING_ENTRY",
  "LoadedResults",
  "SelectionNote",
  "autotune_experiment",
  "autotuned_target",
  "entry_notes",
  "loaded_results",
  "results_devices",
  "selection_note",
  "sweep_experiments",
]

_LOAD = "xla_gpu_load_autotune_results_from"
# What XLA does for a gemm fusion the loaded results do not hold on a
# compile-only target: its first compilable config (config_assigner.cc
# `GetFirstCompilableConfigOrDefault`; jaxlib 0.12.0.1 logs "Using first
# compilable config"), the heuristic it takes without results.
MISSING_ENTRY = "no autotune entry for this fusion; default config used"
# How a site whose fusion the loaded results hold names who chose it.
AUTOTUNED_ON = "autotuned on "

# The names XLA reads as text format (autotuner_cache.cc `IsTextProtoPath`).
_TEXT_SUFFIXES = (".txt", ".txtpb", ".textproto", ".prototxt", ".pbtxt")


_LOAD_FLAG_RE = re.compile(rf"--{_LOAD}=(\S+)")
# `results_textproto`'s (and `stamp_results`') comment, on any line: an
# edit that puts a line before it must not turn the check off.
_JAXLIB_RE = re.compile(r"^# hloprobe autotune results; jaxlib (\S+)", re.M)
# jaxlib 0.12.0.1's cache message, as protoc names it in the plugin.
_CACHE_PROTO = b"xla.autotuner.AutotuneCache"
# An xla.AutotuneResults text file (xla/autotune_results.proto): its
# entries are `results { device: ... hlo: ... result { ... } }`.
_LEGACY_RE = re.compile(r"^\s*results\s*\{", re.M)
# An entry's backend and its version (for TRITON: the Triton commit XLA
# was built with).
_BACKEND_RE = re.compile(r"\bbackend:\s*(\w+)")
_VERSION_RE = re.compile(r'optimal_backend_version:\s*"([^"]*)"')


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


def sweep_experiments(
  words: Sequence[str],
  experiments_file: str | None,
  autotune_results: Sequence[str],
  target_words: Sequence[str],
) -> list[Experiment]:
  """The experiments a sweep names, in order: each of `words` (NAME:FLAGS
  or a built-in name, `Experiment.parse`), then the lines of
  `experiments_file` (`parse_experiments_file`; None: none), then one per
  `autotune_results` file (`autotune_experiment`, checked against the
  sweep's targets, `target_words` looked up by `get_target` only when
  there are results files).

  Raises:
    InvalidArgumentError: a bad word, file line or unreadable file.
    TargetError: a results file no target of the sweep can load; an
      unknown target word (with results files only).
  """
  found = [Experiment.parse(t) for t in words]
  if experiments_file:
    found += parse_experiments_file(experiments_file)
  if autotune_results:
    targets = [get_target(w) for w in target_words]
    found += [autotune_experiment(p, targets) for p in autotune_results]
  return found


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
      another jaxlib in its comment line (`results_textproto`'s; a file
      XLA dumped names none and is not checked), starts with a byte order
      mark, is not this XLA's format (`_check_release`), has whitespace in
      its path (XLA_FLAGS splits at it), or no compile-only
      target of the sweep is the device it was recorded on (one line, the
      devices named).
  """
  if not path.endswith(_TEXT_SUFFIXES):
    raise TargetError(
      f"--autotune_results={path}: hloprobe reads text-format results only "
      f"(a name ending in {', '.join(_TEXT_SUFFIXES)})"
    )
  if re.search(r"\s", os.path.abspath(path)):
    raise TargetError(
      f"--autotune_results={path!r}: the path holds whitespace, which the "
      "workers' XLA_FLAGS (words split at whitespace) cannot carry: every "
      f"compile would look for {os.path.abspath(path).split()[0]!r}; use a "
      "path without (a link to it will do)"
    )
  text = InputFile(
    path, f"--autotune_results={path!r}", TargetError
  ).read_text()
  _check_release(path, text)
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


@dataclasses.dataclass(frozen=True, slots=True)
class LoadedResults:
  """An autotune results file a compile loaded, keyed by its target's device.

  Attributes:
    path: the file, as the XLA flag names it.
    text: its contents (AutotuneCache text format).
    fingerprint: the target's `device_fingerprint`, among the file's.
    device: the device's name, e.g. "NVIDIA A100-SXM4-40GB" (the config's
      `device_description_str`, else `device_string`).
  """

  path: str
  text: str
  fingerprint: str
  device: str

  @property
  def selection(self) -> str:
    """Who chose the compile's fates, in words for the whole config, where
    which fusions the file holds is not known per site
    (`fusion_selections` says it per fusion): e.g. "autotune results
    a100.textproto (autotuned on NVIDIA A100-SXM4-40GB) where they hold
    the fusion, else XLA heuristic"."""
    return (
      f"autotune results {os.path.basename(self.path)} ({AUTOTUNED_ON}"
      f"{self.device}) where they hold the fusion, else XLA heuristic"
    )

  def fusion_selections(
    self, pass_dumps: Iterable[tuple[str, str]]
  ) -> tuple[str, dict[str, str]]:
    """Who chose each gemm fusion's config in a compile under these results.

    Args:
      pass_dumps: the compile's `CompiledCase.pass_dumps` (made with
        `dump_passes=True`): (file name, text), in pass order.

    Returns:
      (the module as it enters XLA's config assigner, whose gemm fusions
      are the ones keyed: `autotune.config_assigner_input`; fusion name ->
      words): "autotuned on NVIDIA A100-SXM4-40GB (a100.textproto:
      CUBLASLT_FISSION: gemm { algorithm: -1 })" where the file holds it,
      else "no autotune entry for this fusion; default config used
      (a100.textproto: XLA heuristic)" (`MISSING_ENTRY`).

    Raises:
      TargetError: no dump names the config-assigner pass.
      ValueError: a fusion's key cannot be computed (an operand whose
        shape is not read: `autotune.gemm_fusion_keys`).
    """
    before = config_assigner_input(pass_dumps)
    keys = gemm_fusion_keys(before)
    base = os.path.basename(self.path)
    return before, {
      name: f"{MISSING_ENTRY} ({base}: XLA heuristic)"
      if note == MISSING_ENTRY
      else f"{AUTOTUNED_ON}{self.device} ({base}: {note})"
      for name, note in entry_notes(keys, self.text, self.fingerprint)
    }


def loaded_results(xla_flags: str, target: Target) -> LoadedResults | None:
  """The results file a compile for `target` loads, where it can hit.

  Args:
    xla_flags: the XLA_FLAGS the compile runs under (a worker's; the
      autotune experiment's `--xla_gpu_load_autotune_results_from`).
    target: the target compiled for.

  Returns:
    The file, when it is keyed by the target's device; None otherwise (no
    file, an unreadable one, another device's, or not a compile-only
    target).
  """
  m = _LOAD_FLAG_RE.search(xla_flags)
  if m is None or not target.compile_only or target.config_text is None:
    return None
  try:
    # Read as input files are: the path may come from the user's own
    # XLA_FLAGS, and a FIFO there is refused, not waited on.
    text = InputFile(m.group(1), m.group(1), TargetError).read_text()
  except TargetError:
    return None
  mine = device_fingerprint(target.config_text)
  if mine not in results_devices(text):
    return None
  name = re.search(r'device_description_str:\s*"([^"]+)"', target.config_text)
  device = name.group(1) if name else device_string(target.config_text)
  return LoadedResults(m.group(1), text, mine, device)


@dataclasses.dataclass(frozen=True, slots=True)
class SelectionNote:
  """A site's selection in short, for tables.

  Attributes:
    words: "autotuned on <device>" or `MISSING_ENTRY`.
    autotuned: the file held the site's fusion (the first form).
  """

  words: str
  autotuned: bool


def selection_note(selection: str | None) -> SelectionNote | None:
  """A site's selection (`SiteFate.selection`) in short, when autotune
  results were loaded (`LoadedResults.fusion_selections`); None otherwise
  (no results, or the words for the whole config)."""
  if selection and selection.startswith(AUTOTUNED_ON):
    return SelectionNote(selection.split(" (", 1)[0], True)
  if selection and selection.startswith(MISSING_ENTRY):
    return SelectionNote(MISSING_ENTRY, False)
  return None


def _plugin_embeds(markers) -> dict[bytes, bool] | None:
  """Which byte strings the installed CUDA PJRT plugin's library holds.

  The plugin (`jax_plugins.xla_cuda12`, its `xla_cuda_plugin.so`) is the
  XLA that compiles for GPU targets; what its build embeds says what that
  XLA reads without running it: protoc's descriptor names
  (b"xla.autotuner.AutotuneCache": in jaxlib 0.12.0.1's plugin, not in
  0.10.2's; checked) and its Triton commit (0.12.0.1's b575c0c3..., which
  XLA's autotune cache logs as the TRITON codegen version). The file is
  found without importing the package and read as bytes: no plugin
  starts, no jax API is used.

  Returns:
    marker -> whether the library holds it; None where no CUDA plugin is
    installed.
  """
  try:
    spec = importlib.util.find_spec("jax_plugins.xla_cuda12")
  except (ImportError, ValueError):
    return None
  if spec is None or not spec.submodule_search_locations:
    return None
  folder = list(spec.submodule_search_locations)[0]
  try:
    with (
      open(os.path.join(folder, "xla_cuda_plugin.so"), "rb") as f,
      mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data,
    ):
      return {m: data.find(m) >= 0 for m in markers}
  except (OSError, ValueError):
    return None


def _triton_versions(text: str) -> list[str]:
  """The Triton commits the file's TRITON entries were made with, sorted."""
  found = set()
  for entry in re.split(r"\bentries\s*\{", text)[1:]:
    backend, version = _BACKEND_RE.search(entry), _VERSION_RE.search(entry)
    if backend and version and backend.group(1) == "TRITON":
      if re.fullmatch(r"[0-9a-f]{40}", version.group(1)):
        found.add(version.group(1))
  return sorted(found)


def _check_release(path: str, text: str) -> None:
  """Refuses results this jaxlib's XLA would not read as written (one line).

  In order: this XLA keys no `xla.autotuner.AutotuneCache` (its CUDA
  plugin embeds no such descriptor: jaxlib 0.10.2, whose autotuner keys
  the older `xla.AutotuneResults` by device string and HLO text and has no
  config-assigner pass; checked); hloprobe wrote the file under another
  jaxlib (its comment line, `results_textproto`, wherever it stands); the
  file starts with a UTF-8 byte order mark (jaxlib 0.12.0.1's XLA fails
  every compile on it: "Failed to parse autotune results string",
  checked); the file is an
  `xla.AutotuneResults` (`results { ... }`: an older XLA's dump, which
  jaxlib 0.12.0.1 loads by its legacy fallback but never hits, checked);
  an entry's TRITON codegen version (a Triton commit,
  `optimal_backend_version`) is not this plugin's, so tiered_cache.cc
  `MatchEntry` would match it neither strictly (codegen_version) nor
  loosely (the backend's version). cuBLAS versions are not checked: the
  plugin names no cuBLAS build. Without a CUDA plugin nothing compiles
  for GPU targets and nothing is checked here.
  """
  where, mine = f"--autotune_results={path}", installed_jaxlib()
  commits = _triton_versions(text)
  found = _plugin_embeds([_CACHE_PROTO, *map(str.encode, commits)])
  if found is not None and not found[_CACHE_PROTO]:
    raise TargetError(
      f"{where}: this jaxlib {mine}'s XLA has no xla.autotuner.AutotuneCache "
      "(its CUDA plugin embeds none: no config-assigner pass, results keyed "
      "the older way), so it cannot replay autotune results hloprobe reads; "
      "use jaxlib 0.12.0.1"
    )
  if text.startswith("\ufeff"):
    raise TargetError(
      f"{where}: starts with a UTF-8 byte order mark, which XLA's text "
      "parser rejects (every compile would fail); save it without one"
    )
  m = _JAXLIB_RE.search(text)
  if m is not None and m.group(1) != mine:
    raise TargetError(
      f"{where}: written for jaxlib {m.group(1)}, this is jaxlib {mine}: XLA "
      "keys results by its own codegen versions and cache format, so another "
      "release's are ignored or misread; record them again under this one"
    )
  if _LEGACY_RE.search(text):
    raise TargetError(
      f"{where}: an xla.AutotuneResults file (results {{...}}: an older "
      f"XLA's format), but this jaxlib {mine}'s XLA keys "
      "xla.autotuner.AutotuneCache entries and hits none of those; record "
      "them again under this jaxlib"
    )
  other = [c for c in commits if found is not None and not found[c.encode()]]
  if other:
    raise TargetError(
      f"{where}: its TRITON codegen version {other[0]} is not this jaxlib "
      f"{mine}'s Triton (its CUDA plugin names another commit), so XLA "
      "would match none of its Triton entries; record them again under "
      "this jaxlib"
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
  # Each top-level `entries {`, the first too where nothing precedes it
  # (a file without a comment or device_scope line).
  for entry in re.split(r"(?m)^entries \{", text)[1:]:
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
