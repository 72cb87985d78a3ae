"""A module file (`--case=PATH`) as a `Case`: what a bug report attaches.

`module_case(path)` reads the file (`module_files.read_module_file`: HLO
text, HloModuleProto, HloSnapshot, StableHLO, a jax.export artifact) and
makes a `Case` whose `fn` is the module translated to `jax.lax`
(`module_jax.module_function`). Why a translation and not the module
handed to the target's client as it stands: every later stage is built on
a program JAX can trace (the float64 reference and the emulations
interpret its jaxpr; sites are numbered by it; the record cache keys on
it), so with a jaxpr of the same contractions in the same order they all
work unchanged, and the compile for each target (CPU, an attached GPU,
compile-only topologies, experiments' XLA_FLAGS, pass dumps, PTX) is
`lowering.compile_case`'s, as for any program. The translated program
lowers to the same HLO instructions (a `dot` is a `dot_general`, a
`reduce` whose computation is one `add` is `reduce_sum`), so XLA makes
of it what it makes of the module. What it cannot translate is refused
by name. The jaxpr side is therefore the module's own: the float64
reference is its HLO widened and run by the numpy executor
(`numerics.executed`, as for any case) and the emulation evaluates its
contractions at their effective algorithms (`numerics.evaluator`), with
no stage told anything other than a program.

`--precisions` sets every contraction's precision: the translation emits
them with `precision=None`, so each config's matmul precision applies as
`jax_default_matmul_precision` would (`Case.notes` says on how many).

Inputs, in this order: `--inputs=FILE.npz|.npy` (arrays in parameter
order; an `.npz` in its stored order), an HloSnapshot's arguments, else
seeded random values by shape and dtype (`numpy.random.default_rng(0)`:
standard normal floats, integers in [-4, 4], booleans) -- `Case.notes`
says which.

Size: a module has one shape, so its case runs at one batch size
(`Case.fixed_size`). The batch is axis 0 of the parameter that shares the
output's leading axis (`batch_parameter`: a weight `f32[128,256]` first
and `x` `f32[8,128]` second, output `f32[8,256]`, is a batch of 8 rows of
`x`), or of the parameter `--batch_arg=NAME|INDEX` names; `Case.notes`
says which. `--batch_sizes` is refused when every case is
a module (it would apply to nothing; the command line's check), and
mixed with other cases it sizes those. A module whose parameters are all
scalars is one size-1 run ("row 0" is all of its output; its inputs are
made in each process, a worker's from the same --inputs).

An optimized module (`ModuleFile.optimized`: an `after_optimizations`
dump, or XLA's `--xla_dump_hlo_snapshots` snapshot, which holds the
module as it ran) is not a program to compile again: its case is its
unoptimized twin's, found by the dump's file names (XLA's
`xla/service/dump.cc` names every file of one module
`module_NNNN.NAME.*`: the twin is `module_NNNN.*.before_optimizations.txt`
or `.hlo.pb` in the same folder), run on the optimized file's arguments
when it is a snapshot (its parameters are the program's). Without a twin
beside it, one line asks for it. A user then gives one file of the dump,
whichever they have, and the story is the program's; what the file itself
computes is `numerics.module_made_notes`' (the commands add it).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import os

import jax
import numpy as np

from hloprobe import private_api
from hloprobe.compile import module_files
from hloprobe.compile.case_model import Case
from hloprobe.compile.module_files import unoptimized_twin
from hloprobe.compile.module_jax import contraction_count, module_function
from hloprobe.errors import CaseError, HloParseError, first_line
from hloprobe.execute import numpy_dtype
from hloprobe.ir import HloModule, parse_hlo_module, parse_stablehlo_dots

__all__ = [
  "batch_parameter",
  "is_module_case",
  "load_inputs",
  "module_case",
  "random_inputs",
]

# The seed of the random inputs a module gets without given ones.
INPUT_SEED = 0
# The most bytes a module case's arguments may take, all together (they
# are made or read in this process, then copied to the device).
MAX_ARGUMENT_BYTES = 2 << 30


# The start of a file name XLA's dump gives: `module_0001.` (its id).
def is_module_case(spec: str) -> bool:
  """Whether a --case word names a module file (by its contents)."""
  return module_files.is_module_file(spec)


def module_case(
  path: str, inputs: str | None = None, batch_arg: str | None = None
) -> Case:
  """The case of a module file.

  Args:
    path: the module file, as given to --case.
    inputs: an `.npz`/`.npy` file of arguments (--inputs), or None.
    batch_arg: the parameter whose axis 0 is the batch (--batch_arg: its
      0-based number or its name), or None: `batch_parameter` chooses.

  Returns:
    A batch case at its one size (`fixed_size`), or a sized case of size 1
    for a module without array parameters.

  Raises:
    ModuleFileError: the file cannot be read as a module.
    CaseError: an optimized module, an instruction not translated, an
      f64 or c128 value, or inputs that do not fit the parameters (one
      line each).
  """
  mf = module_files.read_module_file(path)
  paired = ()
  if mf.optimized:
    twin = unoptimized_twin(path)
    if twin is None:
      raise CaseError(
        f"module {path!r} is an optimized (after_optimizations) module and "
        "no before_optimizations module of the same dump (module_NNNN.*."
        "before_optimizations.txt) is beside it; give that one, which "
        "hloprobe compiles for each target"
      )
    optimized, mf = mf, module_files.read_module_file(twin)
    if optimized.arguments is not None:
      mf = dataclasses.replace(mf, arguments=optimized.arguments)
    paired = (
      f"{path} is an optimized module: the program is its unoptimized twin "
      f"{twin}",
    )
  module = _hlo_module(mf)
  fn = module_function(module, path, _sources(mf, module))
  params = tuple(
    (tuple(dims), numpy_dtype(dtype)) for dims, dtype in mf.parameters
  )
  _check_argument_bytes(params, path)
  if inputs is not None:
    args, said = load_inputs(inputs, params, path), f"inputs from {inputs}"
  elif mf.arguments is not None:
    args, said = tuple(mf.arguments), "inputs: the HloSnapshot's arguments"
    for i, array in enumerate(args):
      _refuse_cut(array, i, f"module {path!r}'s HloSnapshot arguments")
  else:
    args = random_inputs(params)
    said = (
      f"inputs: seeded random values by shape and dtype (seed {INPUT_SEED}); "
      "give --inputs=FILE.npz for your own"
    )
  _check_traces(fn, args, path)
  count = contraction_count(module)
  notes = (
    *paired,
    f"{mf.kind} module {mf.path}",
    f"precision set on {count} contraction{'s' * (count != 1)} of the "
    "module (as jax_default_matmul_precision would set them)",
    said,
  )
  name = _case_name(mf.name)
  out_shapes = [
    np.shape(x) for x in jax.tree_util.tree_leaves(jax.eval_shape(fn, *args))
  ]
  names = [p.name for _, p in sorted(module.entry.parameters().items())]
  batched, said_batch = batch_parameter(
    [s for s, _ in params], names, out_shapes, batch_arg, path
  )
  if batched is None:
    return Case(
      name=name,
      description=f"the module in {path}",
      fn=fn,
      make_inputs=lambda n: args,
      swept_size="module",
      fixed_size=1,
      notes=notes,
    )
  rows = params[batched][0][0]
  return Case(
    name=name,
    description=f"the module in {path}",
    fn=fn,
    make_inputs=lambda: args,
    batch_arg=batched,
    output_axis=tuple(0 if s and s[0] == rows else None for s in out_shapes),
    fixed_size=rows,
    notes=(*notes, said_batch),
  )


def batch_parameter(
  shapes: list[tuple[int, ...]],
  names: list[str],
  out_shapes: list[tuple[int, ...]],
  batch_arg: str | None = None,
  where: str = "",
) -> tuple[int | None, str]:
  """Which entry parameter's axis 0 is a module's batch, and why in words.

  Without `batch_arg`: the first array parameter whose axis 0 has the
  length of the output's leading axis (the first output of rank >= 1),
  so a weight before the activations is not taken for the batch; when
  none shares it, the first array parameter (the words say so).

  Args:
    shapes: each entry parameter's dims, in parameter order.
    names: each entry parameter's HLO name (`Arg_0.1`, `x.1`).
    out_shapes: the output leaves' shapes, in order.
    batch_arg: --batch_arg: a 0-based parameter number, or a parameter's
      name (as HLO prints it, or without its `.N` suffix); None to choose.
    where: the module file, for the error line.

  Returns:
    (the parameter's index, or None when every parameter is a scalar;
    the line `Case.notes` gives).

  Raises:
    CaseError: `batch_arg` names no parameter, or a scalar one.
  """
  arrays = [i for i, s in enumerate(shapes) if s]

  def said(i: int, why: str) -> str:
    dims = ",".join(map(str, shapes[i]))
    return (
      f"batch: axis 0 ({shapes[i][0]} rows) of parameter {i} ({names[i]}, "
      f"[{dims}]), {why}"
    )

  if batch_arg is not None:
    word = str(batch_arg)
    found = [
      i
      for i, name in enumerate(names)
      if word in (str(i), name, name.rpartition(".")[0] or name)
    ]
    if not found or not shapes[found[0]]:
      listed = ", ".join(f"{i} {n}" for i, n in enumerate(names) if shapes[i])
      what = "is a scalar" if found else "names no parameter"
      raise CaseError(
        f"--batch_arg={word} {what} of module {where!r}; its array "
        f"parameters: {listed or 'none'}"
      )
    return found[0], said(found[0], "as --batch_arg gives")
  if not arrays:
    return None, "batch: none (every parameter is a scalar): one size-1 run"
  lead = next((s[0] for s in out_shapes if s), None)
  shared = [i for i in arrays if lead is not None and shapes[i][0] == lead]
  if shared:
    why = "the output's leading axis"
    if len(shared) > 1:
      why += f" (parameters {', '.join(map(str, shared[1:]))} share it too)"
    return shared[0], f"{said(shared[0], why)}; --batch_arg=NAME|INDEX chooses"
  return arrays[0], (
    f"{said(arrays[0], 'the first array parameter')}: no parameter shares "
    "the output's leading axis; --batch_arg=NAME|INDEX chooses"
  )


def _hlo_module(mf) -> HloModule:
  """The module's HLO records: its HLO text, else its StableHLO's."""
  text = mf.hlo_text
  if text is None:
    try:
      text = private_api.stablehlo_to_hlo_text(mf.stablehlo)
    except Exception as e:
      raise CaseError(
        f"module {mf.path!r}: XLA cannot convert its StableHLO to HLO: "
        f"{first_line(e, with_type=False)}"
      ) from None
    if text is None:
      raise CaseError(
        f"module {mf.path!r}: this jaxlib cannot convert StableHLO to HLO"
      )
  try:
    module = parse_hlo_module(text)
  except HloParseError as e:
    raise CaseError(f"module {mf.path!r}: {first_line(e)}") from None
  _refuse_x64(module, mf.path)
  return module


def _refuse_x64(module: HloModule, where: str) -> None:
  """An f64 or c128 value (a `jax_enable_x64` program's) is refused: the
  translation (`module_jax`) traces without x64, where jax runs it in f32
  (a dot shown as F32_F32_F32 that the module computes in F64), silently.
  64-bit integers stay: jax's own x32 lowering of `jax.random` uses u64.

  Raises:
    CaseError: naming the first such instruction.
  """
  for comp, inst in module.all_instructions():
    if not inst.shape.is_tuple and inst.shape.dtype in ("f64", "c128"):
      raise CaseError(
        f"module {where!r}: instruction {inst.name} in {comp.name} is "
        f"{inst.shape.dtype} (a jax_enable_x64 program's); hloprobe "
        "translates modules without x64, where it would run in 32 bits; "
        "give a module of 32-bit or narrower floats"
      )


def _sources(mf, module: HloModule):
  """`source(index, instruction)` for `module_function`: the dumped
  program's `file:line` (the instruction's `metadata`; for a StableHLO
  module, the location of its index-th contraction, in
  `parse_stablehlo_dots`' order), else the module file's own line of the
  instruction (HLO text), else the file alone as `path:1`."""
  located: tuple[str | None, ...] = ()
  if mf.hlo_text is None:
    try:
      located = tuple(d.location for d in parse_stablehlo_dots(mf.stablehlo))
    except HloParseError:
      located = ()
  lines = {}
  if mf.kind == "hlo_text":
    for number, line in enumerate(mf.hlo_text.splitlines(), 1):
      head = line.strip().removeprefix("ROOT ").split(" = ", 1)[0]
      lines.setdefault(head.lstrip("%"), number)

  def source(index: int, inst) -> str | None:
    if index < len(located) and located[index]:
      return located[index]
    found = module.source_location(inst)
    if found:
      return found
    return f"{mf.path}:{lines.get(inst.name, 1)}"

  return source


def _case_name(module_name: str) -> str:
  """The module's name in a case name's alphabet (letters, digits, _, -)."""
  name = "".join(c if c.isalnum() or c in "_-" else "_" for c in module_name)
  return name or "module"


def _check_traces(fn, args: tuple, path: str) -> None:
  """Traces the translation once on `args`' shapes, so a module the
  translation gets wrong fails here, in one line, not in every config."""
  try:
    jax.eval_shape(fn, *args)
  except CaseError:
    raise
  except Exception as e:
    raise CaseError(
      f"module {path!r}: its translation to jax.lax does not trace: "
      f"{first_line(e)}"
    ) from None


def _check_argument_bytes(params, path: str) -> None:
  """Refuses a module whose parameters take over `MAX_ARGUMENT_BYTES`
  (a 40 GB parameter would end in a MemoryError while its inputs are
  made).

  Raises:
    CaseError: one line, the total and the largest parameter.
  """
  sizes = [
    int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
    for shape, dtype in params
  ]
  if sum(sizes) <= MAX_ARGUMENT_BYTES:
    return
  big = max(range(len(sizes)), key=sizes.__getitem__)
  shape, dtype = params[big]
  raise CaseError(
    f"module {path!r}: its parameters take {sum(sizes):,} bytes (at most "
    f"{MAX_ARGUMENT_BYTES:,}); parameter {big} is "
    f"{np.dtype(dtype)}{list(shape)}"
  )


def _npz_problem(path: str) -> str | None:
  """Why an `.npz` is refused before numpy reads it, or None: a member
  that is not an `.npy` (numpy would hand back its raw bytes), or members
  that expand past `MAX_ARGUMENT_BYTES` (a zip bomb: a 2 MB file of
  zeros expands to gigabytes). Sizes from the zip's central directory;
  numpy reads no more than a member's `.npy` header says, and that header
  must fit the declared size (checked by numpy's `read_array`)."""
  import zipfile

  if not zipfile.is_zipfile(path):
    return None  # an .npy, or not readable: numpy says which
  with zipfile.ZipFile(path) as z:
    members = z.infolist()
  for m in members:
    if not m.filename.endswith(".npy"):
      return f"member {m.filename!r} is not an .npy array"
  total = sum(m.file_size for m in members)
  if total > MAX_ARGUMENT_BYTES:
    return (
      f"its arrays expand to {total:,} bytes (at most {MAX_ARGUMENT_BYTES:,})"
    )
  return None


def random_inputs(params) -> tuple[np.ndarray, ...]:
  """Seeded random arguments for (shape, numpy dtype) parameters: floats
  standard normal, integers uniform in [-4, 4] ([0, 4] unsigned),
  booleans fair; deterministic (seed `INPUT_SEED`)."""
  rng = np.random.default_rng(INPUT_SEED)
  out = []
  for shape, dtype in params:
    kind = np.dtype(dtype).kind
    if kind == "b":
      value = rng.random(shape) < 0.5
    elif kind in "iu":
      value = rng.integers(0 if kind == "u" else -4, 5, shape)
    else:
      value = rng.standard_normal(shape)
    out.append(np.asarray(value).astype(dtype))
  return tuple(out)


def load_inputs(path: str, params, where: str) -> tuple[np.ndarray, ...]:
  """Arguments from an `.npy` (one array) or `.npz` (its arrays in stored
  order) file, checked against the parameters' shapes and dtypes (an
  ml_dtypes array saved by numpy comes back as raw bytes of its width,
  read as the parameter's dtype).

  Raises:
    CaseError: the file is missing or unreadable, or its arrays do not
      fit (one line naming the argument).
  """
  try:
    if not os.path.isfile(path):
      raise OSError("not a regular file (or no such file)")
    problem = _npz_problem(path)
    if problem is not None:
      raise CaseError(f"--inputs {path!r}: {problem}")
    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.lib.npyio.NpzFile):
      with loaded:
        arrays = [loaded[k] for k in loaded.files]
    else:
      arrays = [loaded]
  except CaseError:
    raise
  except Exception as e:
    raise CaseError(
      f"--inputs {path!r}: cannot read: {first_line(e, with_type=False)}"
    ) from None
  if len(arrays) != len(params):
    raise CaseError(
      f"--inputs {path!r}: {len(arrays)} arrays for the {len(params)} "
      f"parameters of module {where!r}"
    )
  out = []
  for i, (array, (shape, dtype)) in enumerate(zip(arrays, params)):
    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize:
      array = array.view(dtype)
    if array.shape != shape or array.dtype != dtype:
      raise CaseError(
        f"--inputs {path!r}: array {i} is {array.dtype}{list(array.shape)}; "
        f"parameter {i} of module {where!r} is {dtype}{list(shape)}"
      )
    _refuse_cut(array, i, f"--inputs {path!r}")
    out.append(array)
  return tuple(out)


def _refuse_cut(array: np.ndarray, i: int, source: str) -> None:
  """A 64-bit integer argument whose values do not fit 32 bits is
  refused: the module runs as jax traces it without x64 (`_refuse_x64`),
  where `jnp.asarray` cuts an s64/u64 array to s32/u32 with no warning
  (checked on jax 0.12.0.1: uint64 2**33 + 5 becomes 5).

  Raises:
    CaseError: naming the argument and its first value out of range.
  """
  if (
    array.dtype.kind not in "iu" or array.dtype.itemsize != 8 or not array.size
  ):
    return
  narrow = np.iinfo(np.int32 if array.dtype.kind == "i" else np.uint32)
  outside = (array < narrow.min) | (array > narrow.max)
  if outside.any():
    value = array[outside].flat[0]
    raise CaseError(
      f"{source}: array {i} ({array.dtype}) holds {value}, outside "
      f"{narrow.dtype}'s range; hloprobe runs modules without x64, where jax "
      "would cut it to 32 bits: give values that fit 32 bits"
    )
