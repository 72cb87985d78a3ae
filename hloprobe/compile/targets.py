"""Targets: where a case is compiled, and whether it can run there.

`cpu` and `gpu` (an attached CUDA GPU) compile and run. The compile-only GPU
targets (`a100`, `h100`, `h200`, `t4`, `l4`, `a6000`, `v100`) compile for a
GPU this machine does not have, from the `stream_executor.GpuTargetConfigProto`
text files shipped in `hloprobe/compile/gpu_specs/`; `load_target_config`
makes a target of any other such file. Compile-only targets do no autotuning: what
XLA picks there is its heuristic choice, which a real device may override.

This module reads text only. It never calls JAX: loading a config into XLA
(and dropping the fields the installed proto does not know, see
`drop_field` and `parse_unknown_field_log`) happens in `lowering`.
Checked on jaxlib 0.10.2 (which drops fields of the newer specs) and
0.12.0.1 (which loads every spec here whole).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
from collections.abc import Mapping, Sequence

from hloprobe.compile.textproto import (
  ParseError,
  Token,
  check_nesting,
  field_end,
  field_value,
  line_col,
  message_end,
  text_format_int,
  tokenize,
)
from hloprobe.compile.toolchain import Ptxas, find_ptxas, nvcc_wheel_dir
from hloprobe.errors import TargetError, did_you_mean
from hloprobe.ir import InputFile

__all__ = [
  "BUILTIN_TARGETS",
  "GPU_SPECS",
  "POSITIVE_COUNTS",
  "Target",
  "TargetListing",
  "UnknownField",
  "drop_field",
  "get_target",
  "is_config_path",
  "load_target_config",
  "parse_unknown_field_log",
  "target_listing",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
  """A compilation target.

  Attributes:
    name: the name users type (`cpu`, `gpu`, `a100`, ...).
    platform: JAX platform to lower for: "cpu" or "cuda".
    compile_only: True when no such device is attached (no run, no
      autotuning; numerics must be predicted).
    description: one line for `hloprobe targets`.
    config_text: GpuTargetConfigProto text for compile-only targets.
    compute_capability: "8.0"-style string for GPU targets ("9.0a" for
      sm_90a), else None; "n/a" is how reports render None.
    config_path: where `config_text` came from, for messages; None when
      there is no config.
    compiler_options: extra XLA debug options passed with every compile
      (`Lowered.compile(compiler_options=...)`), e.g.
      {"xla_gpu_cuda_data_dir": "/path/to/cuda"}; they override hloprobe's
      own choices, except the dump options its PTX is read through
      (`xla_dump_to`, `xla_dump_emitter_re`). None for none.
  """

  name: str
  platform: str
  compile_only: bool
  description: str
  config_text: str | None = None
  compute_capability: str | None = None
  config_path: str | None = None
  compiler_options: Mapping[str, str] | None = None


# Target name -> the config file shipped in hloprobe/compile/gpu_specs. The
# files are copies of XLA's xla/backends/gpu/target_config/specs/*.txtpb
# (a100_sxm_40, a6000, h100_sxm, h200, v100) and of datasheet-derived configs
# (t4, l4).
GPU_SPECS = {
  "a100": "a100_sxm_40.txtpb",
  "h100": "h100_sxm.txtpb",
  "h200": "h200.txtpb",
  "t4": "t4.txtpb",
  "l4": "l4.txtpb",
  "a6000": "a6000.txtpb",
  "v100": "v100.txtpb",
}
_FEATURE_SUFFIX = {
  "ACCELERATED_FEATURES": "a",
  "FAMILY_COMPATIBLE_FEATURES": "f",
}
_EXAMPLE = "hloprobe/compile/gpu_specs/a100_sxm_40.txtpb"


def _check_syntax(text: str, where: str) -> list[Token]:
  try:
    tokens = tokenize(text)
    check_nesting(tokens)
    message_end(tokens, 0, None)
  except ParseError as e:
    line, col = line_col(text, e.offset)
    raise TargetError(
      f"{where}:{line}:{col}: not a GpuTargetConfigProto text file ({e}); "
      f"expected 'name: value' and 'name {{ ... }}' fields, e.g. {_EXAMPLE}"
    ) from None
  return tokens


def _compute_capability(tokens: list[Token]) -> str | None:
  cc = ("gpu_device_info", "cuda_compute_capability")
  major = field_value(tokens, cc + ("major",))
  if major is None:
    return None
  minor = field_value(tokens, cc + ("minor",)) or "0"
  feature = field_value(tokens, cc + ("feature_extension",)) or "NONE"
  return f"{major}.{minor}{_FEATURE_SUFFIX.get(feature, '')}"


def _target_from_text(
  name: str, text: str, where: str, description: str | None
) -> Target:
  tokens = _check_syntax(text, where)
  if not any(t.text == "gpu_device_info" for t in tokens):
    raise TargetError(
      f"{where}: no gpu_device_info field; not a GpuTargetConfigProto "
      f"(e.g. {_EXAMPLE})"
    )
  cc = _compute_capability(tokens)
  if cc is None:
    raise TargetError(
      f"{where}: no gpu_device_info.cuda_compute_capability; hloprobe "
      f"compiles for CUDA GPUs only (e.g. {_EXAMPLE})"
    )
  _check_counts(tokens, where)
  device = field_value(tokens, ("device_description_str",)) or name
  return Target(
    name=name,
    platform="cuda",
    compile_only=True,
    description=description or f"{device} (compile only, from {where})",
    config_text=text,
    compute_capability=cc,
    config_path=where,
  )


# GpuDeviceInfoProto counts XLA divides by when it sizes kernel launches
# (xla/service/gpu/launch_dimensions.cc, CalculateLaunchDimensions: warps
# per block, blocks per grid dimension). Checked on jaxlib 0.10.2:
# `threads_per_warp: 0` and `block_dim_limit_x: 0` kill the process with
# SIGFPE while compiling; a worker process would report that, but the
# meaning is clear enough to say so up front.
POSITIVE_COUNTS = (
  "threads_per_warp",
  "threads_per_block_limit",
  "block_dim_limit_x",
  "block_dim_limit_y",
  "block_dim_limit_z",
  "core_count",
)


def _check_counts(tokens: list[Token], where: str) -> None:
  """Raises TargetError when an integer of `POSITIVE_COUNTS` is below 1."""
  for field in POSITIVE_COUNTS:
    value = field_value(tokens, ("gpu_device_info", field))
    # Not an integer at all: XLA's text-format parser says so itself.
    number = None if value is None else text_format_int(value)
    if number is None:
      continue
    if number < 1:
      raise TargetError(
        f"{where}: gpu_device_info.{field} is {value!r}; it must be a "
        f"positive integer (XLA divides by it), e.g. {_EXAMPLE}"
      )


def load_target_config(path: str) -> Target:
  """Makes a compile-only CUDA target of a GpuTargetConfigProto text file.

  Args:
    path: a `.txtpb` file such as XLA's
      xla/backends/gpu/target_config/specs/a100_sxm_40.txtpb. The target is
      named after the file (`a100_sxm_40`).

  Raises:
    TargetError: the file cannot be read, is not a regular UTF-8 text
      file of bounded size (`textfile`), is not text-format protobuf, or
      has no CUDA compute capability. Fields the installed XLA does not know
      are not an error here (see `lowering`).
  """
  text = InputFile(path, f"--target_config={path!r}", TargetError).read_text()
  name = os.path.splitext(os.path.basename(path))[0]
  return _target_from_text(name, text, path, None)


def _builtin_gpu(name: str, filename: str) -> Target:
  text = (
    importlib.resources.files("hloprobe.compile")
    .joinpath("gpu_specs", filename)
    .read_text()
  )
  where = f"hloprobe/compile/gpu_specs/{filename}"
  tokens = tokenize(text)
  device = field_value(tokens, ("device_description_str",)) or name
  description = f"{device}, compile only (XLA heuristics, no autotuning)"
  return _target_from_text(name, text, where, description)


BUILTIN_TARGETS = {
  "cpu": Target("cpu", "cpu", False, "the host CPU (compile and run)"),
  "gpu": Target("gpu", "cuda", False, "an attached CUDA GPU (compile and run)"),
  **{name: _builtin_gpu(name, f) for name, f in GPU_SPECS.items()},
}


def is_config_path(name: str) -> bool:
  """Whether a target word names a config file rather than a built-in target.

  It does when it ends in `.txtpb`, holds a path separator or names an
  existing file (`--target_config=/etc/passwd` is then a file that fails to
  parse, not an unknown target). Built-in names win over files.
  """
  if name in BUILTIN_TARGETS:
    return False
  return name.endswith(".txtpb") or os.sep in name or os.path.isfile(name)


def get_target(name: str) -> Target:
  """Looks up a built-in target by name, or loads a config file as a target.

  Raises:
    TargetError: the name is unknown, or the file (see `is_config_path`)
      cannot be read or parsed as a GpuTargetConfigProto.
  """
  if is_config_path(name):
    return load_target_config(name)
  if name not in BUILTIN_TARGETS:
    raise TargetError(
      f"unknown target {name!r}; {did_you_mean(name, BUILTIN_TARGETS)}"
      f"choose from {', '.join(BUILTIN_TARGETS)} "
      f"or a GpuTargetConfigProto file such as {_EXAMPLE}"
    )
  return BUILTIN_TARGETS[name]


# --- Configs newer than the installed proto.


@dataclasses.dataclass(frozen=True, slots=True)
class UnknownField:
  """A field XLA's text-format parser rejected.

  Attributes:
    message: the proto message type, e.g. "stream_executor.GpuDeviceInfoProto".
    field: the field name, e.g. "mem_clock_ghz".
    line, column: 1-based position protobuf reports (the column is just past
      the field name).
  """

  message: str
  field: str
  line: int
  column: int

  @property
  def qualified_name(self) -> str:
    return f"{self.message.rsplit('.', 1)[-1]}.{self.field}"


# protobuf's text_format.cc logs (jaxlib 0.10.2, seen on stderr):
#   Error parsing text-format stream_executor.GpuTargetConfigProto: 50:16:
#   Message type "stream_executor.GpuDeviceInfoProto" has no field named
#   "mem_clock_ghz".
_UNKNOWN_FIELD_RE = re.compile(
  r'(\d+):(\d+): Message type "([\w.]+)" has no field named "(\w+)"'
)


@dataclasses.dataclass(frozen=True, slots=True)
class TargetListing:
  """The targets a sweep can name, and the ptxas GPU compiles would use.

  Attributes:
    targets: `BUILTIN_TARGETS` in order, then one per GpuTargetConfigProto
      file named (`load_target_config`).
    ptxas: the ptxas XLA's search finds from the pinned nvcc wheel
      (`toolchain.find_ptxas(toolchain.nvcc_wheel_dir())`), None where
      none is found.
  """

  targets: tuple[Target, ...]
  ptxas: Ptxas | None


def target_listing(config_paths: Sequence[str] = ()) -> TargetListing:
  """The built-in targets, those of `config_paths` (--target_config
  files, read as `load_target_config` reads them) and the ptxas.

  Raises:
    TargetError: a config file cannot be read or parsed.
  """
  listed = list(BUILTIN_TARGETS.values())
  listed += [load_target_config(p) for p in config_paths]
  return TargetListing(tuple(listed), find_ptxas(nvcc_wheel_dir()))


def parse_unknown_field_log(log: str) -> UnknownField | None:
  """Finds the first "has no field named" error in protobuf's log text."""
  m = _UNKNOWN_FIELD_RE.search(log)
  if m is None:
    return None
  return UnknownField(m.group(3), m.group(4), int(m.group(1)), int(m.group(2)))


def drop_field(text: str, field: UnknownField) -> str:
  """Removes one field (scalar or message) at the position protobuf named.

  The field's tokens, a separator after it, and its line when that is left
  blank are removed; everything else is kept byte for byte.

  Raises:
    TargetError: no field of that name ends at that position.
  """
  tokens = tokenize(text)
  where = (field.line, field.column)
  for i, tok in enumerate(tokens):
    # protobuf names the column just past a scalar's name, but that of the
    # next token for a message field (`zzz_sub { a: 1 }`: the `{`).
    after = tokens[i + 1].start if i + 1 < len(tokens) else tok.end
    if tok.text == field.field and where in (
      line_col(text, tok.end),
      line_col(text, after),
    ):
      j = field_end(tokens, i)
      if j < len(tokens) and tokens[j].text in (",", ";"):
        j += 1
      return _cut(text, tok.start, tokens[j - 1].end)
  raise TargetError(
    f"cannot drop field {field.qualified_name!r}: nothing named so ends at "
    f"line {field.line}, column {field.column}"
  )


def _cut(text: str, start: int, end: int) -> str:
  """Removes text[start:end], and the line it was on if left blank."""
  out = text[:start] + text[end:]
  line_start = out.rfind("\n", 0, start) + 1
  line_end = out.find("\n", start)
  line_end = len(out) if line_end < 0 else line_end + 1
  if not out[line_start:line_end].strip():
    out = out[:line_start] + out[line_end:]
  return out
