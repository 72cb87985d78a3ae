"""What differs between jax versions, in one place, for `lowering` to call.

hloprobe's XLA rules were checked on the jax/jaxlib releases in
`CHECKED_JAXLIBS`: `CHECKED_JAXLIB` (0.12.0.1, the default pyproject.toml
pins for Python >= 3.12) and 0.10.2 (the newest a Python 3.11 can install).
It also runs under others,
which is what `hloprobe versions` and a GPU machine with its own jax need:

* API differences are bridged here, each with the versions it was seen on:
  `lower`, `stablehlo_text`, `optimized_hlo_text`, `JAXPR_API`
  (jax.extend.core with fallbacks, and a scan's `scan_counts`),
  `runtime_error_type` and `deviceless_retry_options`. (Whether jax prunes
  inside a `while` is `private_api.while_has_dce_rule`; the x64 context
  is the numerics stage's, its one user.)
* `jaxlib_release()` is the installed jaxlib against the checked ones
  (the stage's face exports it alone of this part). Under another
  version the command line prints its `warning` once, naming the checked
  version, and `rules_checked` is False: rules that recognise XLA
  by name (pass names, emitters, PTX patterns) then say "unknown" where
  they do not recognise what they see, never a guess.

Imports jax (for `JAXPR_API`); only `jax.__version__`, `jaxlib.__version__` and public
API are used here: private API is `hloprobe.private_api`'s alone.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from typing import Any

from hloprobe import private_api
from hloprobe.errors import TraceError, first_line

__all__ = [
  "CHECKED_JAXLIB",
  "CHECKED_JAXLIBS",
  "JAXPR_API",
  "JaxprApi",
  "checked_words",
  "cuda_plugin_installed",
  "deviceless_retry_options",
  "unknown_compile_option",
  "installed_jaxlib",
  "jaxlib_git_hash",
  "jaxlib_release",
  "JaxlibRelease",
  "lower",
  "optimized_hlo_text",
  "rules_checked",
  "runtime_error_type",
  "stablehlo_text",
  "unchecked_note",
  "version_warning",
]

# The default release first; every rule's docstring names the releases it
# was checked on.
CHECKED_JAXLIBS = ("0.12.0.1", "0.10.2")
CHECKED_JAXLIB = CHECKED_JAXLIBS[0]
# XLA:GPU before deviceless autotuning fell back to heuristics (seen on
# jaxlib 0.4.35 and 0.4.38, xla/service/gpu/autotuning/
# gemm_fusion_autotuner.cc): a compile-only Triton gemm fails with this
# unless autotuning is off (xla_gpu_autotune_level=0, then the gemm keeps
# its default config: still no autotuning, as on the checked version).
_CLOSING_COMMENT_RE = re.compile(r"^\}[ \t]*//[^\n]*$", re.M)
_DEVICELESS_AUTOTUNE = "Expect autotune result cache hit for deviceless"
_NO_DEVICELESS_CONFIG = "Failed to get configs for"
_DETERMINISTIC_RE = re.compile(
  r"--xla_gpu_deterministic_ops(?:=(?:true|1))?(?:\s|$)"
)


def installed_jaxlib() -> str:
  """The jaxlib version of this process, e.g. "0.10.2"."""
  import jaxlib

  return jaxlib.__version__


def jaxlib_git_hash() -> str | None:
  """The JAX commit this jaxlib was built from, or None
  (`private_api.jaxlib_git_hash`)."""
  return private_api.jaxlib_git_hash()


def cuda_plugin_installed() -> bool:
  """Whether a jax CUDA plugin package (jax_plugins.xla_cuda12 or 13) is
  importable in this interpreter."""
  import importlib.util

  return any(
    importlib.util.find_spec(f"jax_plugins.xla_cuda{v}") is not None
    for v in (12, 13)
  )


def rules_checked() -> bool:
  """Whether this process runs a jaxlib hloprobe's rules were checked on."""
  return jaxlib_release().rules_checked


def checked_words() -> str:
  """ "0.12.0.1 and 0.10.2": the checked releases, in words."""
  return jaxlib_release().checked_words


def unchecked_note() -> str:
  """Words for an evidence string under an unchecked version, else ""."""
  return jaxlib_release().unchecked_note


def version_warning() -> str | None:
  """The one warning to print under an unchecked jaxlib, else None
  (`JaxlibRelease.warning`)."""
  return jaxlib_release().warning


@dataclasses.dataclass(frozen=True)
class JaxlibRelease:
  """The installed jaxlib against the releases hloprobe's XLA rules were
  checked on (`CHECKED_JAXLIBS`), and the words said about it.

  Attributes:
    installed: this process's jaxlib version, e.g. "0.10.2".
    checked: the checked releases, the default first.
  """

  installed: str
  checked: tuple[str, ...] = CHECKED_JAXLIBS

  @property
  def git_hash(self) -> str | None:
    """The JAX commit this jaxlib was built from, or None
    (`private_api.jaxlib_git_hash`)."""
    return jaxlib_git_hash()

  @property
  def versions(self) -> dict[str, str]:
    """This process's jax and jaxlib versions, e.g. {"jax": "0.10.2",
    "jaxlib": "0.10.2"} (what records and goldens name)."""
    return {"jax": _jax_version(), "jaxlib": self.installed}

  @property
  def rules_checked(self) -> bool:
    """Whether the installed jaxlib is one the rules were checked on."""
    return self.installed in self.checked

  @property
  def checked_words(self) -> str:
    """ "0.12.0.1 and 0.10.2": the checked releases, in words."""
    return " and ".join(self.checked)

  @property
  def unchecked_note(self) -> str:
    """Words for an evidence string under an unchecked version, else ""."""
    if self.rules_checked:
      return ""
    return (
      f"jaxlib {self.installed}: rules checked on {self.checked_words} only"
    )

  @property
  def warning(self) -> str | None:
    """The one warning to print under an unchecked jaxlib, else None.

    E.g. "hloprobe: warning: jaxlib 0.4.38 is not 0.12.0.1, the version
    hloprobe's XLA rules were checked on: ...".
    """
    if self.rules_checked:
      return None
    return (
      f"hloprobe: warning: jaxlib {self.installed} is not "
      f"{self.checked[0]}, the version hloprobe's XLA rules were checked "
      "on: what XLA did is this jaxlib's; where a rule (emitter, custom "
      "call, PTX pattern) does not recognise it, hloprobe says 'unknown'"
    )


def jaxlib_release() -> JaxlibRelease:
  """This process's jaxlib against the checked releases (read each call)."""
  return JaxlibRelease(installed_jaxlib())


def lower(jitted, specs, platform: str):
  """`jitted.trace(*specs).lower(lowering_platforms=(platform,))` (jax
  0.10.2, 0.4.34); jax without `trace` (0.4.23) lowers for its own default
  backend only, so only "cpu" is lowered there.

  Raises:
    TraceError: the function raised while jax traced it (its error the
      cause); not told apart on a jax without `trace`.
    RuntimeError: this jax cannot lower for `platform` without its device.
    Exception: what jax raises while lowering.
  """
  if hasattr(jitted, "trace"):
    try:
      traced = jitted.trace(*specs)
    except Exception as e:
      raise TraceError(first_line(e)) from e
    return traced.lower(lowering_platforms=(platform,))
  if platform != "cpu":
    raise RuntimeError(
      f"jax {_jax_version()} cannot lower for {platform} without a device "
      "(no jit(...).trace)"
    )
  return jitted.lower(*specs)


def _jax_version() -> str:
  import jax

  return jax.__version__


def stablehlo_text(lowered) -> str:
  """StableHLO text with debug locations, on any jax version.

  `Lowered.as_text(debug_info=True)` (jax 0.10.2); older jax (0.4.38) has
  no `debug_info` argument, so the MLIR module from
  `compiler_ir("stablehlo")` is printed with `get_asm(enable_debug_info=
  True)` (MLIR Python bindings).
  """
  try:
    return lowered.as_text(debug_info=True)
  except TypeError:
    module = lowered.compiler_ir("stablehlo")
    return module.operation.get_asm(enable_debug_info=True)


def optimized_hlo_text(compiled, dump_dir: str | None) -> str:
  """The optimized HLO of a compile, on any jax version.

  `Compiled.as_text()`; for compile-only GPU executables of older jaxlib
  (0.4.38) that is None, so the module XLA dumped after optimizations
  (`*after_optimizations.txt` under `xla_dump_to`, xla/service/dump.cc) is
  read instead (the short form, without `%`, computations closed by
  `} // name`, which is made `}`).

  Raises:
    RuntimeError: neither gives the text.
  """
  text = compiled.as_text()
  if text:
    return text
  found = sorted(
    glob.glob(os.path.join(dump_dir or "", "*after_optimizations.txt"))
  )
  if not found:
    raise RuntimeError("this jaxlib gives no optimized HLO text")
  with open(found[0], encoding="utf-8", errors="replace") as f:
    # The dump closes computations as "} // name"; as_text() prints "}".
    return _CLOSING_COMMENT_RE.sub("}", f.read())


@dataclasses.dataclass(frozen=True)
class JaxprApi:
  """`jax.extend.core`'s jaxpr names on the installed jax, and how to read
  what differs between versions in a jaxpr's equations.

  Each name is `jax.extend.core`'s, else `jax.core`'s where this jax's
  jax.extend.core lacks it (jaxprs_in_params and DropVar in jax 0.4.38;
  Var, Literal and ClosedJaxpr too in 0.4.23); None where neither has it
  (what uses it then fails for its config alone).
  """

  ClosedJaxpr: Any
  DropVar: Any
  Jaxpr: Any
  Literal: Any
  Var: Any
  jaxprs_in_params: Any

  @staticmethod
  def scan_counts(params) -> tuple[int, int]:
    """(consts, carry): how many of a `scan` equation's inputs are its
    constants and its carry; the rest are the scanned xs.

    jax 0.10.2 (and 0.4.x) spells them `num_consts` / `num_carry`; jax
    0.12.0.1 has neither and packs the inputs as a flat tree
    `ft_in = pack((consts, carry, xs))` (`jax/_src/lax/control_flow/loops.py`,
    `_scan_impl`: `consts, carry, xs_ = ft_in.update(args).unpack()`), whose
    parts' `len` counts their leaves.

    Raises:
      KeyError: a scan with neither spelling (a jax hloprobe does not know).
    """
    if "num_consts" in params:
      return params["num_consts"], params["num_carry"]
    if "ft_in" in params:
      consts, carry, _ = params["ft_in"].unpack()
      return len(consts), len(carry)
    raise KeyError(
      f"scan params {sorted(params)} have neither num_consts/num_carry "
      f"(jax 0.10.2) nor ft_in (jax 0.12.0.1) under jax {_jax_version()}"
    )


def _jaxpr_api() -> JaxprApi:
  """This jax's `JaxprApi`."""
  import jax.extend.core

  names = [f.name for f in dataclasses.fields(JaxprApi)]
  found = {n: getattr(jax.extend.core, n, None) for n in names}
  if None in found.values():
    try:
      import jax.core as old
    except ImportError:  # a jax without jax.core
      old = None
    found = {n: v or getattr(old, n, None) for n, v in found.items()}
  return JaxprApi(**found)


# Read-only: what `import jax.extend.core as jex` gives on jax 0.10.2, with
# `scan_counts`.
JAXPR_API = _jaxpr_api()


def runtime_error_type() -> type:
  """The exception XLA raises from compiles: `jax.errors.JaxRuntimeError`
  (jax 0.10.2), else jaxlib's `XlaRuntimeError` (jax 0.4.33 has no
  JaxRuntimeError).

  Raises:
    RuntimeError: this jax has neither.
  """
  import jax

  found = getattr(jax.errors, "JaxRuntimeError", None)
  if found is None:
    found = private_api.xla_runtime_error_type()
  if found is None:
    raise RuntimeError(
      f"jax {_jax_version()} has neither jax.errors.JaxRuntimeError nor "
      "jaxlib.xla_extension.XlaRuntimeError"
    )
  return found


def unknown_compile_option(error: BaseException) -> str | None:
  """The compile option XLA said it does not know, or None.

  XLA's words (jaxlib 0.10.2, `Lowered.compile(compiler_options=...)`):
  "INVALID_ARGUMENT: No such compile option: 'NAME'".
  """
  m = re.search(r"No such compile option: '([^']+)'", str(error))
  return m.group(1) if m else None


def deviceless_retry_options(
  error: BaseException, xla_flags: str
) -> tuple[dict[str, str | bool], str] | None:
  """Options to compile a compile-only GPU target again with, and why.

  Two XLA behaviours, each a deviceless compile's alone:
  * jaxlib 0.4.35/0.4.38 (`gemm_fusion_autotuner.cc`) want autotuning
    results they cannot have ("Expect autotune result cache hit for
    deviceless"): again with `xla_gpu_autotune_level=0`, which keeps each
    gemm's default config, as later releases do without a device.
  * jaxlib 0.12.0.1 under `--xla_gpu_deterministic_ops` ("Failed to get
    configs for: N out of N instructions"): deterministic ops leave Triton
    out of gemm autotuning (XLA 56623979, 2026-05-18) and a deviceless
    compile cannot autotune the cuBLAS that is left, so the Triton gemm
    fusions get no config (0.10.2 still compiled them as Triton gemms).
    Again with `xla_gpu_enable_triton_gemm=false`: the gemms go to cuBLAS,
    which is what a real GPU's autotuner is left with.

  Args:
    error: the compile's error.
    xla_flags: the XLA_FLAGS the compile ran under.

  Returns:
    (options to add, a sentence for the config's notes), or None.
  """
  text = str(error)
  if _DEVICELESS_AUTOTUNE in text:
    return {"xla_gpu_autotune_level": "0"}, (
      "compiled again with xla_gpu_autotune_level=0: this XLA wants "
      "autotuning results a compile-only target cannot have"
    )
  if _NO_DEVICELESS_CONFIG in text and _DETERMINISTIC_RE.search(xla_flags):
    return {"xla_gpu_enable_triton_gemm": False}, (
      "compiled again with xla_gpu_enable_triton_gemm=false: under "
      "xla_gpu_deterministic_ops this XLA leaves Triton out of gemm "
      "autotuning (XLA 56623979) and a compile-only target cannot autotune, "
      "so its gemms had no config; a real GPU's autotuner is left with "
      "cuBLAS, as this compile is"
    )
  return None
