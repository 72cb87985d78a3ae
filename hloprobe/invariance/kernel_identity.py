"""Kernel identity: the per-row arithmetic of a compiled config's
row-computing kernels, and the protocol `hloprobe.kernels` fills.

Two configs whose every row-computing kernel has the same signature
compute a row with the same operations in the same order, hence the same
bits (the basis "kernel identity" on a compile-only GPU). A kernel whose
arithmetic is not known (a cuBLAS call: the library picks its kernel per
shape at run time) has no signature, and invariance is then "unknown".

`KernelReader` is the interface: a callable from one `ConfigResult` to
its `RowKernel`s. The `hloprobe.kernels` stage (issue 38 item 2: gemm
tiling, reductions' emitter, tiling and threads per row, read from the
backend_config and the PTX) provides the full one; until it is wired in,
`site_kernels` reads what the dot sites' fates say (gemms only) and
leaves every other kernel unknown, saying so.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Sequence
from typing import ClassVar

from hloprobe.compile import compile_case, get_case
from hloprobe.engine import KEPT, SweptCase
from hloprobe.errors import HloParseError
from hloprobe.ir import parse_hlo_module
from hloprobe.records import Config, ConfigResult
from hloprobe.runtime import Request
from hloprobe.sites import Fate, SiteFate

__all__ = [
  "batched_leaves",
  "computes_rows",
  "unbatched_shapes",
  "KernelReader",
  "KernelsRequest",
  "KernelUnread",
  "record_differences",
  "records_as_kernels",
  "RowKernel",
  "kernel_reader",
  "result_leaves",
  "signature_key",
  "site_kernels",
]


class Unread(enum.Enum):
  """Why a row kernel's per-row arithmetic is not known (`KernelUnread.kind`).

  LIBRARY: a cuBLAS/cuBLASLt call: the library picks its kernel per shape
    at run time (no device, no kernel).
  BLOCK_K: a Triton gemm whose K tile (`block_k`) is not read from its
    `triton_gemm_config`.
  ORDER: the fates' reading of a reducing site (its fate, on the kernel's
    `fate`): its order on the GPU is not read.
  OPS: the fates' "other kernels": the optimized HLO's reducing ops
    (`KernelUnread.ops`) are not read.
  RECORD: the kernels stage's record says the kernel is a library call or
    its row-count rule is unknown (`KernelUnread.why`: that record's
    `row_count_why`, a `kernels` `RowCountWhy`).
  """

  LIBRARY = "library"
  BLOCK_K = "block_k"
  ORDER = "order"
  OPS = "ops"
  RECORD = "record"


@dataclasses.dataclass(frozen=True, slots=True)
class KernelUnread:
  """Why a `RowKernel`'s signature is not complete: `kind` (`Unread`),
  the reducing HLO ops not read (OPS: e.g. ("reduce", "scatter")), or the
  kernels stage's own reason (RECORD: its record's `row_count_why`, a
  `RowCountWhy`; None where none is given). Report words it
  (`report/invariance_causes.py`)."""

  kind: Unread
  ops: tuple[str, ...] = ()
  why: object = None

  # The kinds, for readers of the record.
  KIND: ClassVar[type[Unread]] = Unread


@dataclasses.dataclass(frozen=True, slots=True)
class RowKernel:
  """One kernel that computes (part of) a row, and its per-row arithmetic.

  Attributes:
    name: the kernel's name: the fusion or custom call in the optimized
      HLO, or "site N" where only the site is known.
    kind: "gemm", "cuBLAS", "reduction", "elementwise", "collective", ...
    sites: the contraction sites it computes (() for none).
    signature: what decides a row's bits as far as read, normalised for
      the row count. Two configs whose kernels' signatures differ run
      other per-row arithmetic; equal complete signatures across batch
      sizes mean the same bits for a row.
    unread: None when `signature` is complete; else why not (a
      `KernelUnread`): equal signatures then prove nothing.
    record: the `hloprobe.kernels.KernelRecord` it was made from (its
      emitter and `arithmetic` are the per-row arithmetic), or None (the
      fates' reading).
    fate: the fates' reading: the site's `SiteFate` it was made from (its
      fate, effective algorithm, split-K and the PTX's mma), or None (a
      kernels-stage record, or the "other kernels" entry, whose
      `unread` says what is not read).
    block_k: the fates' reading of a Triton gemm: its K tile from the
      fusion's `triton_gemm_config`, or None where not read.

  Report words the arithmetic (`report/invariance_causes.py`).
  """

  name: str
  kind: str
  sites: tuple[int, ...]
  signature: str
  unread: KernelUnread | None = None
  record: object = dataclasses.field(default=None, compare=False, repr=False)
  fate: SiteFate | None = dataclasses.field(
    default=None, compare=False, repr=False
  )
  block_k: int | None = None

  @property
  def complete(self) -> bool:
    return self.unread is None


# The interface of the `hloprobe.kernels` stage: a config's row kernels.
KernelReader = Callable[[ConfigResult], Sequence[RowKernel]]

# HLO ops whose result mixes elements in an order a kernel chooses.
_REDUCING = re.compile(
  r"\b(reduce-window|reduce-scatter|all-reduce|reduce|scatter|sort)\("
)


def _block_k(config: dict | None) -> int | None:
  """A Triton gemm's K tile from its `triton_gemm_config` (or None)."""
  if not config:
    return None
  for key in ("block_k", "blockK"):
    if key in config:
      try:
        return int(config[key])
      except (TypeError, ValueError):
        return None
  return None


def _site_kernel(f: SiteFate) -> RowKernel:
  """A site's kernel as its fate says (the fallback reader)."""
  i = f.site.index
  name = f.carriers[0] if f.carriers else f"site {i}"
  algorithm = f.effective_algorithm or "algorithm unknown"
  if f.fate in (Fate.CUBLAS, Fate.CUBLASLT):
    sig = f"{f.fate.value} {algorithm}"
    library = KernelUnread(Unread.LIBRARY)
    return RowKernel(name, "cuBLAS", (i,), sig, library, fate=f)
  if f.fate == Fate.TRITON_GEMM:
    block_k = _block_k(f.gemm_config)
    split = f.split_k or 1
    mma = _mma(f)
    sig = f"Triton gemm {algorithm} split_k={split} {mma} block_k={block_k}"
    why = None
    if block_k is None:
      why = KernelUnread(Unread.BLOCK_K)
    return RowKernel(name, "gemm", (i,), sig, why, fate=f, block_k=block_k)
  if f.fate in (Fate.MULTIPLY, Fate.GONE):
    return RowKernel(name, "elementwise", (i,), f.fate.value, fate=f)
  return RowKernel(
    name,
    "reduction" if f.fate == Fate.MULTIPLY_REDUCE else f.fate.value,
    (i,),
    f"{f.fate.value} {algorithm}",
    KernelUnread(Unread.ORDER),
    fate=f,
  )


def _mma(f: SiteFate) -> str:
  """The instruction of the kernel the site was read from
  (`SiteFate.mma_opcodes`, the first of several: "mma.sync.aligned.
  m16n8k8..."), "no mma" for a kernel read without one, or "instruction
  not read" where no kernel was read."""
  if f.mma_opcodes:
    return f.mma_opcodes[0]
  return "no mma" if f.ptx_kernel is not None else "instruction not read"


def site_kernels(result: ConfigResult) -> tuple[RowKernel, ...]:
  """The fallback `KernelReader`: each contraction site's kernel as its
  fate says (Triton gemm: algorithm, block_k, split-K and the PTX's mma;
  cuBLAS/cuBLASLt: unknown), plus one "other kernels" entry, unknown,
  where the optimized HLO has a reducing op (reduce, reduce-window,
  scatter, sort, a collective) it does not read. An elementwise fusion
  needs none: XLA's loop emitter computes each output element by the
  same code whatever the shape (xla/backends/gpu/codegen/emitters/loop.cc,
  jaxlib 0.12.0.1 and 0.10.2). () for a failed config."""
  c = result.compilation
  if not result.ok or c is None:
    return ()
  found = tuple(_site_kernel(f) for f in c.fates)
  ops = sorted(set(_REDUCING.findall(c.optimized_hlo)))
  if not ops:  # elementwise fusions: each element by the same code
    return found
  why = KernelUnread(Unread.OPS, tuple(ops))
  other = RowKernel("other kernels", "reduction", (), "?", why)
  return found + (other,)


def signature_key(kernels: Sequence[RowKernel]) -> tuple[str, ...]:
  """The config's kernel identity: every kernel's signature, in order."""
  return tuple(k.signature for k in kernels)


def _from_record(rec, fates) -> RowKernel:
  """A `hloprobe.kernels.KernelRecord` as a `RowKernel`: its signature
  whole; unknown where its role is a library call or whether its rule
  takes the row count is unknown (the record says why)."""
  sites = tuple(f.site.index for f in fates if rec.name in (f.carriers or ()))
  if not sites and rec.ops:
    # Dot strength reduction (AlgebraicSimplifier) leaves a multiply
    # fusion (the site's carrier) and a reduce fusion after it, both with
    # the dot's metadata: the reduce is the same site's where it computes
    # that dot (its op, at the site's source line; elementwise ops of the
    # same line, e.g. a tanh, may be fused into it).
    sites = tuple(
      f.site.index
      for f in fates
      if f.fate == Fate.MULTIPLY_REDUCE
      and f.site.location
      and f.site.op in rec.ops
      and f.site.location in rec.source
    )
  role = getattr(rec.role, "value", str(rec.role))
  count = getattr(rec.row_count, "name", str(rec.row_count))
  why = None
  if role == "library call" or count == "UNKNOWN":
    why = KernelUnread(Unread.RECORD, why=rec.row_count_why)
  signature = rec.signature
  if role == "elementwise" and "loop emitter" in rec.emitter:
    # XLA's loop emitter computes each output element by the fused
    # computation's own code; the shape enters only the index arithmetic
    # (xla/backends/gpu/codegen/emitters/loop.cc, jaxlib 0.10.2 and
    # 0.12.0.1). The record's computation digest keeps a unit dimension
    # XLA drops at n = 1, so it differs there for the same per-element
    # arithmetic: the kernel is identified by its emitter and ops instead.
    signature = f"elementwise {rec.emitter} ops={','.join(rec.ops)}"
  return RowKernel(rec.name, role, sites, signature, why, rec)


def _read_kernels():
  """`hloprobe.kernels.read_kernels` (imported when first asked: the
  kernels stage is not loaded by sweeps that read no kernels)."""
  from hloprobe import kernels

  return kernels.read_kernels


@dataclasses.dataclass(frozen=True)
class KernelsRequest(Request):
  """A compile-only config's kernel records (`hloprobe.kernels`), read in
  the sweep worker that compiled it from what it kept (`sweep.KEPT`: the
  optimized HLO and every kernel's PTX, which the records keep only for
  the gemms); where not kept (a cached record), compiled again.

  Attributes:
    config: the config.
    case_source, full_inputs, inputs: as `RowsRequest`'s.
    compile: compile the config again where the worker did not keep it;
      False: `run` returns None then (the caller asks again with the
      full inputs: they cross to the worker only when needed, about
      50 MB for a GPT-2-sized block).

  `run` returns the `KernelRecord`s (None: not kept, `compile` False),
  or raises what reading raised.
  """

  config: Config
  case_source: str
  full_inputs: tuple | None
  inputs: str | None = None
  compile: bool = True

  def run(self, memo: dict):
    read = _read_kernels()
    kept = memo.get(KEPT, {}).get(self.config)
    if not isinstance(kept, tuple):
      if not self.compile:
        return None
      key = ("case", self.case_source, self.inputs)
      if key not in memo:
        memo[key] = get_case(self.case_source, self.inputs)
      case = memo[key]
      full = SweptCase.resolved_inputs(self.full_inputs)
      args = case.inputs_for(full, self.config.n)
      Request.note_stage("compile")
      cc = compile_case(
        case, args, self.config.precision.jax_name, self.config.target
      )
      kept = (cc.optimized_hlo, tuple(cc.ptx))
    Request.note_stage("analyse")
    return read(
      kept[0], self.config.n, kept[1], "cuda", target=self.config.target
    )


def record_differences(
  mine: Sequence[RowKernel],
  base: Sequence[RowKernel],
  named: Sequence[int] = (),
) -> tuple | None:
  """The kernels stage's differences (`compare_kernels`, matched by what
  each kernel computes) between two configs' kernels: its
  `KernelDifference` records, leaving out those of the contraction sites
  `named` (their fates name them); None where the kernels were not read
  by that stage."""
  if not mine or not base:
    return None
  if any(k.record is None for k in (*mine, *base)):
    return None
  try:
    from hloprobe import kernels
  except ImportError:
    return None
  sited = {k.name for k in (*mine, *base) if set(k.sites) & set(named)}
  out = []
  for d in kernels.compare_kernels(
    [k.record for k in base], [k.record for k in mine]
  ):
    names = {r.name for r in (d.a, d.b) if r is not None}
    if names & sited or _signed_alike(d, mine, base):
      continue
    out.append(d)
  return tuple(out)


def _signed_alike(d, mine, base) -> bool:
  """Whether difference `d` is between two kernels this adapter gives the
  same signature (a loop fusion's, `_from_record`)."""
  if d.a is None or d.b is None:
    return False
  a = next((k for k in base if k.record is d.a), None)
  b = next((k for k in mine if k.record is d.b), None)
  return a is not None and b is not None and a.signature == b.signature


def records_as_kernels(records, result: ConfigResult) -> tuple[RowKernel, ...]:
  """`KernelsRequest`'s records of `result`'s config as `RowKernel`s."""
  return tuple(_from_record(r, result.compilation.fates) for r in records)


def batched_leaves(results: Sequence[ConfigResult]) -> frozenset[int] | None:
  """The output leaves that carry the batch in one group of configs (one
  program, target, precision and experiment at several batch sizes): the
  leaves whose dimensions differ between the batch sizes, read from each
  config's optimized HLO (`result_leaves`; the batched
  axis of a leaf has size n, so its shape changes with n). A leaf whose
  dimensions stay, a loss's mean over the batch, holds no row.

  None where it cannot be told: fewer than two compiled configs, the
  configs' leaf counts differ, a module cannot be read, or no leaf changes with n (a sized case, whose
  n is not a batch; a program whose every output is reduced over the
  batch: `unbatched_shapes`).
  """
  leaves = _leaves_by_n(results)
  if leaves is None:
    return None
  found = frozenset(
    i
    for i in range(len(next(iter(leaves.values()))))
    if len({dims[i] for dims in leaves.values()}) > 1
  )
  return found or None


def unbatched_shapes(
  results: Sequence[ConfigResult],
) -> tuple[tuple[int, ...], ...] | None:
  """Where no output leaf of a batch-swept group changes shape with n
  (every output reduced over the batch, e.g. only a loss's `jnp.mean`),
  the leaves' dimensions, the same at every n (e.g. ((),) for one
  scalar): that group has no row to judge; else None (a leaf carries the
  batch, or it cannot be told: `batched_leaves`). Only for cases swept
  over the batch: a sized case's n is not a batch."""
  leaves = _leaves_by_n(results)
  if leaves is None:
    return None
  shapes = next(iter(leaves.values()))
  if any(v != shapes for v in leaves.values()):
    return None
  return tuple(tuple(d) for d in shapes)


def _leaves_by_n(results) -> dict[int, tuple] | None:
  leaves = {}
  for r in results:
    if not r.ok or r.compilation is None:
      continue
    try:
      leaves[r.config.n] = result_leaves(r.compilation.optimized_hlo)
    except HloParseError:  # the module not read: no leaf told apart
      return None
  if len(leaves) < 2 or len({len(v) for v in leaves.values()}) != 1:
    return None
  return leaves


def result_leaves(optimized_hlo: str) -> tuple[tuple[int, ...], ...]:
  """The dimensions of each leaf of a compiled module's ENTRY result,
  flattened in order (the program's output leaves in
  `jax.tree_util.tree_leaves` order), e.g. ((), (2, 64)) for
  `{"loss": f32[], "y": f32[2, 64]}`.

  Read from the header's `entry_computation_layout={(...)->result}`
  (XLA's HloModule::ToString prints it on every compiled module,
  xla/hlo/ir/hlo_module.cc; jaxlib 0.12.0.1 and 0.10.2), else from the
  parsed ENTRY root (a hand-written module).

  Raises:
    HloParseError: the text is not an HLO module.
  """
  found = _layout_result(optimized_hlo)
  if found is not None:
    return found
  return tuple(_leaf_dims(parse_hlo_module(optimized_hlo).entry.root.shape))


def _leaf_dims(shape) -> list[tuple[int, ...]]:
  if not shape.is_tuple:
    return [tuple(shape.dims)]
  return [d for e in shape.elements for d in _leaf_dims(e)]


_LAYOUT = "entry_computation_layout={"
_LEAF_RE = re.compile(r"\b([a-z][a-z0-9]*)\[([^\]]*)\]")


def _layout_result(text: str) -> tuple[tuple[int, ...], ...] | None:
  """The result leaves' dimensions from the module header's
  `entry_computation_layout={(params)->result}`; None without one."""
  head = text.lstrip().split("\n", 1)[0]
  at = head.find(_LAYOUT)
  if not head.startswith("HloModule") or at < 0:
    return None
  depth, start = 0, at + len(_LAYOUT)
  for i in range(start, len(head)):
    c = head[i]
    if c in "({[":
      depth += 1
    elif c in ")}]":
      if depth == 0:
        body = head[start:i]
        break
      depth -= 1
    elif c == "-" and depth == 0 and head.startswith("->", i):
      start = i + 2
  else:
    return None
  out = []
  for _, dims in _LEAF_RE.findall(body):
    try:
      out.append(
        tuple(int(d.replace("<=", "")) for d in dims.split(",") if d.strip())
      )
    except ValueError:
      return None
  return tuple(out)


def computes_rows(k: RowKernel, batched: frozenset[int] | None) -> bool:
  """Whether kernel `k` computes (part of) a row: its values reach a
  batched output leaf (`batched_leaves`). A kernel that reaches only
  unbatched leaves (a loss's `jnp.mean` over the batch, its scaling)
  computes no row: its order decides the loss's bits, not a row's. True
  where not known (`batched` None, or the kernel's reach not traced: the
  fates' reading)."""
  outputs = getattr(k.record, "outputs", None)
  if batched is None or outputs is None:
    return True
  return bool(set(outputs) & batched)


def kernel_reader() -> KernelReader:
  """The kernels stage's reader (`hloprobe.kernels.read_kernels`, every
  row-computing kernel: gemms, reductions with their emitter and tiling,
  library calls, collectives) where it is installed, else `site_kernels`.

  A config the kernels stage cannot read falls back to `site_kernels`,
  whose "other kernels" entry says so.
  """
  read = _read_kernels()
  if read is None:
    return site_kernels

  def reader(result: ConfigResult) -> tuple[RowKernel, ...]:
    c = result.compilation
    if not result.ok or c is None:
      return ()
    try:
      records = read(
        c.optimized_hlo,
        result.config.n,
        tuple(c.ptx.values()),
        "cuda",
        target=result.config.target,
      )
    except Exception:  # not read: the fates' reading, which says so
      return site_kernels(result)
    return tuple(_from_record(r, c.fates) for r in records)

  return reader
