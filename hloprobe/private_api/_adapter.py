"""The one adapter to private jax/jaxlib API: nothing else in hloprobe
imports it (tests/layering_test.py checks).

Private means a module or attribute jax does not document as public: any
`jax._src` name, `jax.interpreters`, `jax.lib`, and every jaxlib module but
`jaxlib` itself (its `__version__`) and the MLIR bindings' public modules
(`jaxlib.mlir.ir`, `jaxlib.mlir.dialects.*`). Each function names what it
reads and the jaxlib releases it was checked on (0.12.0.1 and 0.10.2), and
answers None (or False) where this jaxlib does not offer it, so a caller
falls back instead of failing on another release.

jax and jaxlib are imported inside the functions, so importing this module
(as `hloprobe.ir` does) loads neither. What the other stages call is
listed once, in the face's `__all__`. Private in intent: use the package,
`hloprobe.private_api`.
"""

from __future__ import annotations

import importlib
import re
from typing import NamedTuple

# The logger JAX reports backend start-up failures on (jax/_src/xla_bridge.py,
# jax 0.10.2 and 0.12.0.1): `lowering.start_backends` quiets it.
XLA_BRIDGE_LOGGER = "jax._src.xla_bridge"

# Where jaxlib keeps the upstream MLIR dialect registration: `_jax_mlir_ext`
# on jaxlib 0.10.2 and 0.12.0.1, `register_jax_dialects` on older releases
# (0.4.38, as `hloprobe versions` runs it).
_UPSTREAM_REGISTRARS = ("_jax_mlir_ext", "register_jax_dialects")


def cuda_path() -> str | None:
  """What JAX itself passes as `xla_gpu_cuda_data_dir`:
  `jax._src.lib.cuda_path` (jax 0.10.2, 0.12.0.1), or None."""
  import jax

  lib = getattr(getattr(jax, "_src", None), "lib", None)
  return getattr(lib, "cuda_path", None)


def stablehlo_to_hlo_text(stablehlo: str) -> str | None:
  """The HLO text of a StableHLO module (MLIR text), as XLA converts it
  before compiling (`xla/pjrt/mlir_to_hlo.cc` `MlirToXlaComputation`):
  jaxlib's `_jax.mlir.mlir_module_to_xla_computation(text,
  use_tuple_args=False, return_tuple=False).as_hlo_text()` (jaxlib
  0.10.2 and 0.12.0.1; locations become `metadata` source lines). None
  where this jaxlib does not offer it.

  Raises:
    Exception: what XLA raises on a module it cannot convert.
  """
  import jax._src.lib as lib

  convert = getattr(
    getattr(getattr(lib, "_jax", None), "mlir", None),
    "mlir_module_to_xla_computation",
    None,
  )
  if convert is None:
    return None
  computation = convert(stablehlo, use_tuple_args=False, return_tuple=False)
  return computation.as_hlo_text()


def cudnn_version() -> int | None:
  """The version of the cuDNN library JAX finds, e.g. 91002 for 9.10.2.

  What jax's cuDNN attention reads while tracing, even for a compile-only
  target: `jax._src.lib.cuda_versions.cudnn_get_version()`
  (jax/_src/cudnn/fused_attention_stablehlo.py `check_cudnn_version`; jax
  0.10.2 and 0.12.0.1). `cuda_versions` is the CUDA plugin's `_versions`
  extension, which loads libcudnn.so.9 from the nvidia-cudnn-cu12 wheel
  (its RPATH names `nvidia/cudnn/lib`) and raises RuntimeError("cuDNN not
  found.") without it.

  Returns:
    The version (major * 10000 + minor * 100 + patch), or None where no
    CUDA plugin or no cuDNN library is found.
  """
  from jax._src import lib

  versions = getattr(lib, "cuda_versions", None)
  if versions is None:
    return None
  try:
    return int(versions.cudnn_get_version())
  except RuntimeError:
    return None


def kept_arguments(lowered) -> tuple[int, ...] | None:
  """The flattened arguments a jitted function's compiled module keeps.

  jit drops the arguments its jaxpr does not use (`keep_unused=False`),
  so the optimized module's parameter i is flattened argument `kept[i]`.
  Read from `Lowered._lowering.compile_args["kept_var_idx"]`, the set jax
  computes in jax/_src/interpreters/pxla.py (`lower_sharding_computation`)
  and compiles with (checked on jax 0.10.2 and 0.12.0.1).

  Args:
    lowered: a `jax.stages.Lowered` of `jax.jit(fn).lower(...)`.

  Returns:
    The kept indices into `jax.tree_util.tree_leaves(args)`, ascending;
    None where this jax does not record them.
  """
  lowering = getattr(lowered, "_lowering", None)
  args = getattr(lowering, "compile_args", None)
  if not isinstance(args, dict) or "kept_var_idx" not in args:
    return None
  return tuple(sorted(int(i) for i in args["kept_var_idx"]))


def xla_runtime_error_type() -> type | None:
  """jaxlib's `xla_extension.XlaRuntimeError` (jaxlib 0.4.33, which has no
  `jax.errors.JaxRuntimeError`), or None where jaxlib has no such module."""
  try:
    from jaxlib import xla_extension
  except ImportError:
    return None
  return getattr(xla_extension, "XlaRuntimeError", None)


def jaxlib_git_hash() -> str | None:
  """The JAX commit this jaxlib was built from (40 hex digits), or None.

  Read from `jaxlib/version.py` `_git_hash`, which the wheel build writes:
  present in the wheels of 0.4.34 to 0.5.3 and of 0.8.1 to 0.12.0.1, None
  in those of 0.6.0 to 0.8.0 (read from the PyPI wheels, 2026-12-01).
  """
  try:
    from jaxlib import version
  except ImportError:
    return None
  found = getattr(version, "_git_hash", None)
  if isinstance(found, str) and re.fullmatch(r"[0-9a-f]{40}", found):
    return found
  return None


def while_has_dce_rule() -> bool:
  """Whether this jax prunes dead code inside `while` loops when lowering.

  jax 0.12.0.1 registers `_while_dce_rule` (jax/_src/lax/control_flow/
  loops.py: a carry element is live if it is an output, read by the cond,
  or needed by the body for a live one; the rest, and the body's dots that
  only feed them, are pruned); jax 0.10.2 has no rule and keeps a live
  while whole. Read from `jax._src.interpreters.partial_eval.dce_rules`.
  """
  import jax
  from jax._src.interpreters import partial_eval as pe

  return jax.lax.while_p in pe.dce_rules


def register_upstream_dialects(registry) -> tuple[str, ...]:
  """Adds func and the other upstream MLIR dialects jax prints to
  `registry` (a `jaxlib.mlir.ir.DialectRegistry`), as
  `jax._src.interpreters.mlir.make_ir_context` does (jax 0.10.2, 0.12.0.1).

  Returns:
    () when it added them; else the jaxlib modules it looked in
    (`_UPSTREAM_REGISTRARS`, e.g. ("_jax_mlir_ext", "register_jax_dialects")),
    none of which this jaxlib has, for the caller's message.
  """
  for name in _UPSTREAM_REGISTRARS:
    try:
      module = importlib.import_module(f"jaxlib.mlir._mlir_libs.{name}")
    except ImportError:
      continue
    if hasattr(module, "register_dialects"):
      module.register_dialects(registry)
      return ()
  return _UPSTREAM_REGISTRARS


def xla_instruction_counts(compiled) -> dict[str, int] | None:
  """Instruction count per computation of a `jax.stages.Compiled`, as XLA's
  own HloModule reports it, or None where this jaxlib does not offer it.

  Reads `Compiled.runtime_executable().hlo_modules()[0].computations()`
  (jaxlib 0.10.2, 0.12.0.1).
  """
  exe = compiled.runtime_executable()
  if not hasattr(exe, "hlo_modules"):
    return None
  module = exe.hlo_modules()[0]
  if not hasattr(module, "computations"):
    return None
  return {c.name: len(c.instructions()) for c in module.computations()}


class XlaInstruction(NamedTuple):
  """One instruction as XLA's HLO parser built it.

  Attributes:
    name: its name, without '%'.
    opcode: its opcode as HLO text spells it, e.g. "custom-call".
    operands: its operands' names, in order.
  """

  name: str
  opcode: str
  operands: tuple[str, ...]


class XlaComputation(NamedTuple):
  """One computation as XLA's HLO parser built it: its name and its
  instructions in XLA's order (the printed one, for a parsed module)."""

  name: str
  instructions: tuple[XlaInstruction, ...]


def xla_hlo_structure(text: str) -> tuple[XlaComputation, ...] | None:
  """The computations of an HLO module, read by XLA's own parser.

  `jaxlib._hlo.hlo_module_from_text` (xla/hlo/parser/hlo_parser.cc, an
  unverified module), whose Python objects give a computation's name and
  instructions and an instruction's name, opcode, operands and users
  (jaxlib 0.10.2 and 0.12.0.1; 0.12.0.1 adds shape and
  as_serialized_proto). Nothing there gives attributes, the ROOT, the
  ENTRY or called computations, so `hloprobe.ir.hlo` reads those from the
  text.

  Args:
    text: HLO module text.

  Returns:
    The computations in XLA's order, or None where this jaxlib has no HLO
    parser or its parser rejects the text (e.g. jaxlib 0.10.2 and compact
    `%t#1` operands).
  """
  parse = _hlo_function("hlo_module_from_text")
  if parse is None:
    return None
  try:
    module = parse(text)
  except RuntimeError:  # XLA's status, e.g. "INVALID_ARGUMENT: Syntax error"
    return None
  spelling = _OPCODE_SPELLING
  return tuple(
    XlaComputation(
      c.name,
      tuple(
        [
          XlaInstruction(
            i.name,
            spelling.get(i.opcode) or _opcode_text(i, spelling),
            tuple([o.name for o in i.operands()]),
          )
          for i in c.instructions()
        ]
      ),
    )
    for c in module.computations()
  )


# The HLO spelling of each opcode enum value met (`_opcode_text`): XLA's
# HloOpcodeString is a function of the opcode, so one process needs each
# once (XLA's pass dumps of a compile are parsed one after the other).
_OPCODE_SPELLING: dict[object, str] = {}


def _opcode_text(instruction, spelling: dict) -> str:
  """The HLO spelling of an instruction's opcode (`HloOpcodeString`, e.g.
  kExp is "exponential", kCustomCall "custom-call").

  The bindings give the opcode as an enum only; its spelling is read once
  per opcode (and process: `_OPCODE_SPELLING`) from XLA's own printing of
  the instruction,
  `%name = <shape> <opcode>(...)` (HloInstruction::ToString).
  """
  key = instruction.opcode
  if key not in spelling:
    rest = instruction.to_string().split(" = ", 1)[1]
    if rest.startswith("("):  # a tuple shape: skip to its closing paren
      depth = end = 0
      while end == 0 or depth:
        depth += {"(": 1, ")": -1}.get(rest[end], 0)
        end += 1
      rest = rest[end:]
    else:  # an array shape, e.g. f32[8,128]{1,0:T(8,128)}, has no space
      rest = rest.split(None, 1)[1]
    spelling[key] = rest.split("(", 1)[0].strip()
  return spelling[key]


def _hlo_function(name: str):
  """`jaxlib._hlo.<name>` (XLA's HLO bindings), or None where this jaxlib
  has none."""
  try:
    from jaxlib import _hlo
  except ImportError:
    return None
  return getattr(_hlo, name, None)


def hlo_text_to_proto(text: str) -> bytes | None:
  """HLO text as a serialized HloModuleProto, by XLA's own parser.

  `jaxlib._hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()`
  (xla/hlo/parser/hlo_parser.cc; jaxlib 0.10.2 and 0.12.0.1).

  Returns:
    The proto's bytes, or None where this jaxlib has no HLO parser.

  Raises:
    ValueError: XLA's parser rejects the text; the message is XLA's status
      ("INVALID_ARGUMENT: Syntax error ...\nwas parsing 32:38: error: ...").
  """
  parse = _hlo_function("hlo_module_from_text")
  if parse is None:
    return None
  try:
    return parse(text).as_serialized_hlo_module_proto()
  except RuntimeError as e:
    raise ValueError(str(e)) from None


def hlo_proto_to_text(proto: bytes, canonical: bool = False) -> str | None:
  """A serialized HloModuleProto as HLO text, as XLA prints it.

  `jaxlib._hlo.HloModule.from_serialized_hlo_module_proto(proto)
  .to_string()` (HloModule::CreateFromProto then ToString, with metadata;
  jaxlib 0.10.2 and 0.12.0.1). `canonical`: with `HloPrintOptions.
  canonical()`, `print_ids=False`, `canonicalize_computations=True` (XLA's
  autotune key text, autotune_cache_key.cc, less the binding's missing
  `print_only_essential_constants`; jaxlib 0.12.0.1): "{\n  tmp_0 = ...}".

  Returns:
    The text, or None where this jaxlib cannot read module protos.

  Raises:
    ValueError: XLA cannot build a module from the bytes (its status).
  """
  module_class = _hlo_function("HloModule")
  read = getattr(module_class, "from_serialized_hlo_module_proto", None)
  if read is None:
    return None
  try:
    if not canonical:
      return read(proto).to_string()
    options = _hlo_function("HloPrintOptions").canonical()
    options.print_ids, options.canonicalize_computations = False, True
    return read(proto).to_string(options)
  except RuntimeError as e:
    raise ValueError(str(e)) from None


def gpu_target_config(devices) -> str | None:
  """The attached GPUs' GpuTargetConfigProto text, or None (no such call).

  `jax._src.lib.xla_client.get_topology_for_devices(devices).target_config`
  (jax's tests/aot_test.py; jax 0.12.0.1). Not yet run on a GPU.
  """
  try:
    from jax._src.lib import xla_client

    topology = xla_client.get_topology_for_devices(list(devices))
    return str(topology.target_config)
  except (ImportError, AttributeError, RuntimeError, ValueError, TypeError):
    return None


def custom_call_targets(platform: str) -> frozenset[str] | None:
  """The custom-call targets registered with XLA for `platform` ("cpu").

  `jaxlib.xla_client.custom_call_targets(platform)` (jaxlib 0.10.2 and
  0.12.0.1): the FFI and legacy handlers registered so far; jax registers
  its CPU ones (lapack_*_ffi) as the CPU backend starts, so it is started
  first (`jax.devices("cpu")`). Targets XLA's own passes consume (e.g.
  "Sharding") are not in it.

  Returns:
    The target names, or None where this jaxlib does not list them.
  """
  import jax

  try:
    jax.devices("cpu")  # registers jax's CPU targets
  except RuntimeError:
    return None

  try:
    from jaxlib import xla_client
  except ImportError:
    return None
  listing = getattr(xla_client, "custom_call_targets", None)
  if listing is None:
    return None
  try:
    return frozenset(listing(platform))
  except (RuntimeError, ValueError):
    return None


def jaxlib_embedded(marker: bytes, window: int = 1 << 20) -> list[bytes]:
  """Windows of jaxlib's shared libraries that start with `marker`.

  jaxlib's native code embeds what protoc generated for XLA's .proto
  files, each file's serialized FileDescriptorProto among it (protobuf's
  generated `.pb.cc`: `descriptor_table_protodef_<file>`); in jaxlib 0.10.2
  and 0.12.0.1 they are in `libjax_common.so`. This finds them for
  `hloprobe.ir`'s text-format reader, so hloprobe vendors no .proto file.

  Args:
    marker: the bytes a window starts with.
    window: the most bytes per window.

  Returns:
    Every window found, in file order ([] where jaxlib has none).
  """
  import glob
  import mmap
  import os

  try:
    import jaxlib
  except ImportError:
    return []
  found = []
  for path in sorted(glob.glob(os.path.join(jaxlib.__path__[0], "*.so"))):
    with (
      open(path, "rb") as f,
      mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data,
    ):
      at = data.find(marker)
      while at >= 0:
        found.append(bytes(data[at : at + window]))
        at = data.find(marker, at + 1)
  return found
