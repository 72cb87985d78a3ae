"""The kernel model's bits: row 0 computed per batch size where every
row-computing kernel of a compile-only GPU config is one the kernel model
(`hloprobe.numerics.kernel_model_run`) is bit-exact for (issue 38 item 3,
the third proof).

The kernel model is bit-exact for a Triton gemm whose PTX has exactly one
`mma` flavour it models on the target's sm, a one-pass algorithm
(TF32_TF32_F32, BF16_BF16_F32, F16_F16_F32), and split-K at most 2
(`numerics.site_model`: MMA-Sim's per-instruction arithmetic, K walked
in the instruction's k steps from +0.0, the block_k tiles only grouping
those steps, split-K's f32 partials added once). A config qualifies when:

  - every contraction site is such a Triton gemm, or a dot XLA made a
    lone multiply (K = 1: one f32 product, rounded once);
  - every other row-computing kernel is elementwise and computes only
    ops that are correctly rounded on XLA:CPU and on the GPU alike and
    that no compiler contracts (`_EXACT_OPS`: add, subtract, max, min,
    negate, select, converts and data movement; a multiply only where
    its value reaches no add or subtract in the kernel's HLO
    (`KernelRecord.contractible`, `kernels.fp_contract`), since a
    multiply feeding an add or a subtract may become one fused
    multiply-add on the GPU: PTX `add.f32` without `.rn` lets ptxas fuse
    it, LLVM's NVPTX backend, test/CodeGen/NVPTX/fma.ll).
    XLA's loop emitter computes each output element by the same code
    whatever the shape (xla/backends/gpu/codegen/emitters/loop.cc,
    jaxlib 0.12.0.1 and 0.10.2), so such a kernel maps equal inputs to
    equal outputs at every n.

Not bit-exact (the answer then stays by kernel identity, or "unknown",
and says why): reductions (layernorm, softmax, a multiply+reduce after
dot strength reduction: their order is the emitter's, not modelled),
cuBLAS/cuBLASLt calls (the library picks its kernel at run time),
transcendental and other approximate elementwise functions (libdevice),
split-K above 2, multi-pass algorithms (TF32_TF32_F32_X3, ...), mma
flavours MMA-Sim does not list.

Row 0 is computed on row 0's own inputs (a batch of one) for a case whose
rows are independent (`Case.rows_independent`): the kernel model computes
each output element from that row's operands alone, so a batch of one
under config n's kernels gives config n's row 0; the non-gemm ops run at
the same shape for every n, hence alike. Other cases are computed at each
n and row 0 taken.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence

import numpy as np

from hloprobe.compile import get_case
from hloprobe.engine import SweptCase
from hloprobe.invariance.kernel_identity import RowKernel
from hloprobe.invariance.rows import ConfigRows, row_of
from hloprobe.numerics import kernel_model_run, site_model
from hloprobe.records import ConfigResult
from hloprobe.runtime import Request
from hloprobe.sites import Fate

__all__ = [
  "MODEL",
  "GroupModel",
  "Inexact",
  "ModelRowsRequest",
  "ModelSites",
  "NotModelled",
  "model_rows",
  "model_sites",
]

# The basis of an answer backed by the kernel model's bits.
MODEL = "kernel model"
# The algorithm a lone multiply's site is evaluated at: one f32 product,
# rounded once (`numerics.emulate_dot`'s F32_F32_F32).
_MULTIPLY = "F32_F32_F32"
# The most multiply-adds (over the bit-exact sites) one evaluation may
# take: about 7 CPU-s at the model's ~1e7 a second; beyond, the group
# stays by kernel identity, saying so.
_BUDGET = 1 << 26
# JAX op names (the HLO metadata's op_name tails, `KernelRecord.ops`)
# whose results are correctly rounded (IEEE 754) or exact on XLA:CPU and
# on the GPU alike: the kernel model's XLA:CPU evaluation of them is the
# GPU's. Division, sqrt and rsqrt are left out: the GPU may use an
# approximate instruction (`div.full.f32`, `rsqrt.approx.f32`).
_EXACT_OPS = frozenset(
  {
    "add",
    "add_any",
    "sub",
    "max",
    "min",
    "neg",
    "abs",
    "sign",
    "select_n",
    "convert_element_type",
    "reshape",
    "broadcast_in_dim",
    "transpose",
    "squeeze",
    "expand_dims",
    "slice",
    "dynamic_slice",
    "concatenate",
    "pad",
    "copy",
    "copy_p",
    "rev",
    "mul",
    "integer_pow",
    "dot_general",
    "stop_gradient",
    "pjit",
    "jit",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
  }
)
_MULTIPLIES = frozenset({"mul", "integer_pow", "dot_general"})
_ADDS = frozenset({"add", "add_any", "sub"})


@dataclasses.dataclass(frozen=True)
class ModelSites:
  """One config's sites as the kernel model computes them.

  Attributes:
    n: the batch size.
    sites: site index -> `numerics.site_model`'s bit-exact `KernelSite`
      (the Triton gemms: its instruction and split-K).
    algorithms: one algorithm per site (the gemms' own; F32_F32_F32 for
      a lone multiply).
  """

  n: int
  sites: Mapping[int, object]
  algorithms: tuple[str, ...]

  def key(self) -> tuple:
    """What decides the model's bits: each gemm's instruction, split-K
    and TF32 rounding, and every site's algorithm (configs of equal keys
    compute the same bits; block_k is not in it)."""
    return (
      tuple(
        (i, s.ins.opcode, s.ins.arch, s.split_k, s.tf32_rounding)
        for i, s in sorted(self.sites.items())
      ),
      self.algorithms,
    )


class Inexact(enum.Enum):
  """Why the kernel model does not compute a config's row bit for bit
  (`NotModelled.reason`)."""

  # The config's own state.
  NOT_COMPILED = enum.auto()  # the config did not compile
  NOT_READ = enum.auto()  # its row kernels not read
  NOT_COMPUTED = enum.auto()  # computing the bits raised (`error`)
  # A contraction site: `numerics.site_model` calls it a band (`model`).
  SITE = enum.auto()
  # A row kernel (`kernel`).
  NOT_A_GEMM = enum.auto()  # a contraction that is no bit-exact gemm
  FUSES = enum.auto()  # a gemm fusing inexact ops (`ops`)
  ORDER = enum.auto()  # a reduction or other kernel: order not modelled
  OPS_NOT_READ = enum.auto()  # an elementwise kernel without a record
  NO_OP_METADATA = enum.auto()  # its record names no ops
  COMPUTES = enum.auto()  # an elementwise kernel of inexact ops (`ops`)
  # A multiply feeding an add or subtract (`pairs`): maybe one FMA, or
  # one in its PTX (`fused`).
  CONTRACTS = enum.auto()
  # A multiply and an add among its ops; whether one feeds the other not
  # read.
  MULTIPLY_ADD = enum.auto()


@dataclasses.dataclass(frozen=True)
class NotModelled:
  """Why the kernel model's bits do not class a config (report words it,
  `report/invariance_causes.py`).

  Attributes:
    reason: what is not modelled (`Inexact`).
    n: the batch size it is about, where the answer names one (the
      group's first size not classed by the model's bits); else None.
    kernel: the row kernel (`RowKernel`) it names, or None.
    ops: the ops the model does not compute bit for bit (FUSES,
      COMPUTES), sorted.
    site: the contraction site (SITE), or None.
    model: SITE: `numerics.site_model`'s `KernelSite`, whose `band` says
      why it is no bit-exact model.
    error: NOT_COMPUTED: the first line of what computing raised, or
      None where the bits were not asked for.
    pairs: CONTRACTS: the HLO's multiply -> add/subtract pairs in the
      kernel (`KernelRecord.contractible`), as read.
    fused: CONTRACTS: the PTX's instructions that fuse or leave the pair
      for ptxas to fuse (`KernelRecord.ptx_fusable`); () where none or
      not read.
    ptx_read: CONTRACTS: False where the kernel's PTX should settle it
      and was not read.
  """

  reason: Inexact
  n: int | None = None
  kernel: RowKernel | None = None
  ops: tuple[str, ...] = ()
  site: int | None = None
  model: object = None
  error: str | None = None
  pairs: tuple[str, ...] = ()
  fused: tuple[str, ...] = ()
  ptx_read: bool = True


@dataclasses.dataclass(frozen=True)
class GroupModel:
  """A compile-only group's row 0 by the kernel model, per batch size.

  Attributes:
    rows: n -> row 0 by the kernel model (`model_rows`), for each size
      whose every row kernel the model is bit-exact for.
    why: n -> why not (`NotModelled`), for the other sizes.
  """

  rows: Mapping[int, ConfigRows]
  why: Mapping[int, NotModelled] = dataclasses.field(default_factory=dict)


def _kernel_why(k: RowKernel, gemms: frozenset[str]) -> NotModelled | None:
  """Why row kernel `k` is not one the kernel model is bit-exact for, or
  None where it is (a bit-exact gemm, by name in `gemms`, or an
  elementwise kernel of `_EXACT_OPS`)."""
  ops = tuple(getattr(k.record, "ops", ()) or ())
  inexact = tuple(sorted(set(ops) - _EXACT_OPS))
  if k.kind == "contraction":
    if k.name not in gemms:
      return NotModelled(Inexact.NOT_A_GEMM, kernel=k)
    if inexact:  # a fused prologue or epilogue
      return NotModelled(Inexact.FUSES, kernel=k, ops=inexact)
    # A fused epilogue's multiply feeding an add: Triton's LLVM may
    # contract it as XLA's emitters may (kernels.fp_contract).
    return _contraction_why(k, ())
  if k.kind != "elementwise":
    return NotModelled(Inexact.ORDER, kernel=k)
  if k.record is None:
    return NotModelled(Inexact.OPS_NOT_READ, kernel=k)
  if not ops:
    return NotModelled(Inexact.NO_OP_METADATA, kernel=k)
  if inexact:
    return NotModelled(Inexact.COMPUTES, kernel=k, ops=inexact)
  return _contraction_why(k, ops, ptx=True)


def _contraction_why(
  k: RowKernel, ops: Sequence[str], ptx: bool = False
) -> NotModelled | None:
  """Why kernel `k` may not compute what XLA:CPU does: a multiply of its
  HLO whose value reaches an add or a subtract (`KernelRecord
  .contractible`), which the GPU may fuse into one fma (one rounding, not
  two); None where none does. With `ptx` (an elementwise kernel: every
  float fma in its PTX would be a contraction), the PTX settles it
  (`KernelRecord.ptx_fusable`): no fma and every add, subtract and
  multiply rounded on its own (`.rn`) is None. Where the HLO's pairs were
  not read, a multiply and an add among its ops make it unknown
  (MULTIPLY_ADD)."""
  pairs = getattr(k.record, "contractible", None)
  if pairs:
    fused = getattr(k.record, "ptx_fusable", None) if ptx else None
    if ptx and fused == ():
      return None  # each rounds on its own in the PTX: not contracted
    return NotModelled(
      Inexact.CONTRACTS,
      kernel=k,
      pairs=tuple(pairs),
      fused=tuple(fused or ()),
      ptx_read=not ptx or fused is not None,
    )
  if (
    pairs is None
    and set(ops) & _MULTIPLIES - {"dot_general"}
    and (set(ops) & _ADDS)
  ):
    return NotModelled(Inexact.MULTIPLY_ADD, kernel=k)
  return None


def model_sites(
  result: ConfigResult, kernels: Sequence[RowKernel]
) -> tuple[ModelSites | None, NotModelled | None]:
  """Whether the kernel model computes config `result`'s rows bit for bit.

  Args:
    result: a compile-only GPU config's record (its sites' fates).
    kernels: its row-computing kernels (`kernel_identity.RowKernel`s read
      by the kernels stage, those that reach a batched leaf).

  Returns:
    (`ModelSites`, None) where every contraction site is a Triton gemm
    `numerics.site_model` calls a bit-exact model (or a lone multiply)
    and every other row kernel is elementwise of exact ops (module
    docstring); else (None, why: a `NotModelled` naming the first kernel
    or site that is not).
  """
  c = result.compilation
  if not result.ok or c is None:
    return None, NotModelled(Inexact.NOT_COMPILED)
  if not kernels:
    return None, NotModelled(Inexact.NOT_READ)
  cc = result.config.target.compute_capability
  sites, algorithms, gemms = {}, [], set()
  for f in c.fates:
    i = f.site.index
    if f.fate == Fate.MULTIPLY:
      algorithms.append(_MULTIPLY)
      continue
    m = site_model(
      f.fate,
      f.mma_opcodes,
      cc,
      f.split_k,
      f.effective_algorithm,
      f.ptx_tf32_rounding,
    )
    if m.ins is None:
      return None, NotModelled(Inexact.SITE, site=i, model=m)
    sites[i] = m
    algorithms.append(f.effective_algorithm or "")
    gemms.update(f.carriers or ())
  for k in kernels:
    why = _kernel_why(k, frozenset(gemms))
    if why is not None:
      return None, why
  return ModelSites(result.config.n, sites, tuple(algorithms)), None


def model_rows(
  case, full: tuple | None, specs: Sequence[ModelSites]
) -> dict[int, ConfigRows]:
  """Row 0 of every batched output leaf at each n, by the kernel model
  (`numerics.kernel_model_run`, in one XLA:CPU compile per distinct
  `ModelSites.key`) under that n's kernels.

  Args:
    case: the `Case`; full: its full inputs (`Case.full_inputs`).
    specs: one `ModelSites` per batch size.

  Returns:
    n -> `ConfigRows` (row 0 only): each batched leaf's row 0, flattened,
    in its output dtype.

  Raises:
    ValueError: an evaluation's bit-exact sites take over `_BUDGET`
      multiply-adds (`numerics` KernelBudgetError).
    Exception: what tracing or evaluating the case raises.
  """
  memo: dict[tuple, tuple[np.ndarray, ...]] = {}
  out = {}
  for spec in specs:
    size = 1 if case.rows_independent else spec.n
    key = (size, spec.key())
    if key not in memo:
      args = case.inputs_for(full, size)
      leaves = kernel_model_run(
        case,
        args,
        spec.algorithms,
        dict(spec.sites),
        jit=True,
        budget=_BUDGET,
      )
      axes = case.output_axes([np.shape(x) for x in leaves])
      memo[key] = row_of(leaves, axes, 0)
    out[spec.n] = ConfigRows(spec.n, memo[key])
  return out


@dataclasses.dataclass(frozen=True)
class ModelRowsRequest(Request):
  """One group's `model_rows`, done in a sweep worker (where the case is
  loaded: a user case's code never runs in the main process).

  Attributes:
    case_source, full_inputs, inputs: as `runs.RowsRequest`'s.
    specs: one `ModelSites` per batch size.

  `run` returns n -> `ConfigRows`, or raises what `model_rows` raised.
  """

  case_source: str
  full_inputs: tuple | None
  specs: tuple[ModelSites, ...]
  inputs: str | None = None

  def run(self, memo: dict) -> dict[int, ConfigRows]:
    key = ("case", self.case_source, self.inputs)
    if key not in memo:
      memo[key] = get_case(self.case_source, self.inputs)
    Request.note_stage("analyse")
    full = SweptCase.resolved_inputs(self.full_inputs)
    return model_rows(memo[key], full, self.specs)
