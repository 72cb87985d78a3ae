"""Which sites the kernel model predicts bit for bit, and its evaluation.

A site is a "bit-exact model" when its kernel and tiles are known: its
fate is "Triton gemm", its PTX evidence names exactly one `mma` flavour
that `kernel_model.instruction` models on the target's sm, and its split-K
is read from the optimized HLO (`triton_gemm_config` /
`block_level_fusion_config`; none means 1) and at most 2 (two f32 partials
sum alike in either order; XLA's reduce fusion over more has an order the
model does not know). Everything else -- cuBLAS and cuBLASLt (closed
kernels), multiply+reduce and CPU dots (f32 order not modelled), unknown
PTX, multi-pass presets -- stays a "band" (the emulation's analytic band,
`bands`).

`kernel_model_run` evaluates a case's jaxpr eagerly with the bit-exact
sites computed by `kernel_model.kernel_gemm` and the others emulated at
their algorithm (`Evaluator`), so the remaining difference to a GPU's
output is the band sites' order and the elementwise functions (exp, sin,
...) whose GPU implementations (Triton/libdevice, fused into the gemms'
prologues) differ from XLA:CPU's. `kernel_remainder` gives the sizes:
the band sites' order spread and a one-ulp nudge of each elementwise
function (`hloprobe.report` words them).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.compile import Case
from hloprobe.errors import first_line
from hloprobe.numerics.accuracy import element0
from hloprobe.numerics.emulate import mesh_parts, with_mesh_splits
from hloprobe.numerics.emulate_dot import SUMMATION_ORDERS, _canonical
from hloprobe.numerics.evaluator import Evaluator, partial_sums
from hloprobe.numerics.jaxpr_sites import plan_sites, trace
from hloprobe.numerics.kernel_model import (
  MODEL_WORDS,
  MmaInstruction,
  instruction,
  kernel_gemm,
)
from hloprobe.sites import EXACT_INTEGER, Fate

__all__ = [
  "SWEEP_BUDGET",
  "Band",
  "KernelBudgetError",
  "KernelRemainder",
  "KernelRowZero",
  "KernelRows",
  "KernelSite",
  "kernel_model_run",
  "kernel_remainder",
  "site_model",
]

BIT_EXACT, BAND = MODEL_WORDS
# The most multiply-adds a sweep's kernel-model evaluation may take (B x M
# x N x K over its bit-exact sites): about 1.7 CPU-s at the model's ~1e7
# per second (jax_22557's 300^3 gemm takes 2.7 s alone).
SWEEP_BUDGET = 1 << 24
# Elementwise primitives whose GPU and CPU implementations differ in the
# last bits (transcendentals; +, *, sqrt and the like are IEEE on both).
_TRANSCENDENTAL = (
  "exp",
  "exp2",
  "log",
  "log1p",
  "sin",
  "cos",
  "tan",
  "tanh",
  "logistic",
  "erf",
  "pow",
)
_ONE_PASS = {"tf32": "TF32_TF32_F32", "bf16": "BF16_BF16_F32"}
_ONE_PASS["f16"] = "F16_F16_F32"


class Band(enum.Enum):
  """Why `site_model` calls a site a band (`KernelSite.band`)."""

  NOT_TRITON = "not a Triton gemm"  # its `fate`'s kernel not modelled
  EXACT_INTEGER = "exact integer"  # any kernel's order gives its bits
  NOT_ONE_MMA = "not one mma"  # `opcodes`: none or several
  NO_COMPUTE_CAPABILITY = "compute capability unknown"
  MMA_NOT_MODELLED = "mma not modelled"  # `opcodes[0]` on sm_`sm`
  NO_ALGORITHM = "no effective algorithm"
  NOT_ONE_PASS = "not one pass"  # `algorithm` is not one `operand` pass
  SPLIT_K = "split-K over 2"  # the reduce's f32 order of `split_k`


@dataclasses.dataclass(frozen=True)
class KernelSite:
  """A site's prediction kind and, for a bit-exact model, its kernel; the
  facts `site_model` read (`hloprobe.report` words them).

  Attributes:
    kind: "bit-exact model" or "band".
    band: why it is a band (`Band`); None for a bit-exact model.
    fate: the site's fate words ("Triton gemm", "cuBLAS", ...).
    opcodes: its kernel's tensor-core opcodes, sorted, each once.
    sm: the target's sm number (80 for "8.0"); None where not read.
    algorithm: the site's effective algorithm, or None.
    operand: the mma's operand type ("tf32", "bf16", "f16") where its
      instruction is modelled; else None.
    ins: the modelled instruction (None for a band).
    split_k: the kernel's split-K (1: none).
    tf32_rounding: "rna" where the PTX has `cvt.rna.tf32.f32`, else None.
  """

  kind: str
  band: Band | None = None
  fate: str = Fate.TRITON_GEMM.value
  opcodes: tuple[str, ...] = ()
  sm: int | None = None
  algorithm: str | None = None
  operand: str | None = None
  ins: MmaInstruction | None = None
  split_k: int = 1
  tf32_rounding: str | None = None


def site_model(
  fate: Fate | str,
  mma_opcodes: Sequence[str],
  compute_capability: str | None,
  split_k: int | None = None,
  algorithm: str | None = None,
  tf32_rounding: str | None = None,
) -> KernelSite:
  """Whether a site's prediction is a bit-exact model or a band.

  Reads record fields only, never `SiteFate.algorithm_evidence` (words for
  people, which may change).

  Args:
    fate: the site's `Fate`, or its value as a recorded results.json holds
      it ("Triton gemm", "cuBLAS", ...).
    mma_opcodes: the tensor-core opcodes of the kernel its arithmetic was
      read from (`SiteFate.mma_opcodes`); () where none was read.
    compute_capability: the target's, e.g. "9.0" or "9.0a"; None when
      unknown.
    split_k: the fusion's split-K from the optimized HLO; None for none.
    algorithm: the site's effective algorithm; it must be the one pass of
      the mma's type (TF32_TF32_F32 for a tf32 mma, ...) for a bit-exact
      model: the multi-pass presets (BF16_BF16_F32_X3, TF32_TF32_F32_X3,
      ...) run several mma on split operands, which the model does not
      chain, and None (no algorithm settled: e.g. f32 operands split into
      bf16 parts whose pass count the PTX does not give, review finding
      11) is a band too.
    tf32_rounding: that kernel's tf32 operand rounding
      (`SiteFate.ptx_tf32_rounding`): "rna", "truncate" or None.

  Raises:
    ValueError: `fate` is no `Fate` nor a `Fate`'s value.
  """
  fate = Fate(fate)
  band = lambda why, **kw: KernelSite(BAND, why, fate.value, **kw)
  if fate != Fate.TRITON_GEMM:
    return band(Band.NOT_TRITON)
  if algorithm == EXACT_INTEGER:  # its evidence is XLA's rule, not the PTX
    return band(Band.EXACT_INTEGER)
  opcodes = tuple(sorted(set(mma_opcodes)))
  if len(opcodes) != 1:
    return band(Band.NOT_ONE_MMA, opcodes=opcodes)
  if compute_capability is None:
    return band(Band.NO_COMPUTE_CAPABILITY, opcodes=opcodes)
  cc = re.match(r"(\d+)\.(\d+)", compute_capability)  # "9.0a" -> sm_90
  sm = int(cc[1]) * 10 + int(cc[2]) if cc else None
  ins = instruction(opcodes[0], sm) if sm else None
  if ins is None:
    return band(Band.MMA_NOT_MODELLED, opcodes=opcodes, sm=sm)
  read = dict(opcodes=opcodes, sm=sm, algorithm=algorithm, operand=ins.operand)
  if algorithm is None:
    return band(Band.NO_ALGORITHM, **read)
  if algorithm != _ONE_PASS[ins.operand]:
    return band(Band.NOT_ONE_PASS, **read)
  split = split_k or 1
  if split > 2:  # two f32 partials add alike in any order; more do not
    return band(Band.SPLIT_K, **read, split_k=split)
  rounding = "rna" if tf32_rounding == "rna" else None
  return KernelSite(
    BIT_EXACT,
    None,
    fate.value,
    **read,
    ins=ins,
    split_k=split,
    tf32_rounding=rounding,
  )


class KernelBudgetError(ValueError):
  """The kernel model's bit-exact sites exceed the multiply-adds allowed
  (`budget`, an int)."""

  def __init__(self, budget: int):
    super().__init__(
      f"not run: its bit-exact sites take over {budget:,} multiply-adds at "
      "the bit level, the sweep's budget (hloprobe.numerics.kernel_model_run "
      "computes it without one)"
    )
    self.budget = budget

  def __reduce__(self):  # pickled across a worker's pipe by its budget
    return (KernelBudgetError, (self.budget,))


class _KernelEvaluator(Evaluator):
  """An `Evaluator` with the bit-exact sites run by the kernel model and
  optionally each transcendental nudged one f32 ulp (toward `nudge`)."""

  def __init__(self, kernels: dict, nudge: float | None, jitted, budget, *args):
    super().__init__(*args)
    self.kernels, self.nudge, self.jitted = kernels, nudge, jitted
    self.budget, self.macs = budget, 0

  def _dot(self, eqn, ins, site: int):
    """A bit-exact site by the kernel model; a dot whose contracting
    dimension the case's mesh splits over D devices (`Evaluator._split`,
    `emulate.with_mesh_splits`) is the model's gemm of each device's K / D
    slice, the D partial sums added in device order in f32
    (`evaluator.partial_sums`, XLA's SPMD dot handler then an
    all-reduce), as the emulated sites' are: each device's kernel runs on
    its slice alone."""
    spec = self.kernels.get(site)
    if spec is None:
      return super()._dot(eqn, ins, site)
    dims = eqn.params["dimension_numbers"]
    one = lambda a, b: self._gemm(spec, dims, a, b)
    count = self._split(eqn)
    out = one(*ins) if count == 1 else partial_sums(*ins, dims, count, one)
    return jnp.asarray(out).astype(eqn.outvars[0].aval.dtype)

  def _gemm(self, spec, dims, lhs, rhs):
    """The kernel model's f32 gemm of one dot's operands, in the dot's
    output shape (batch, lhs free, rhs free dims)."""
    a3, b3, shape = _canonical(lhs, rhs, dims)
    self.macs += int(np.prod(a3.shape, dtype=np.int64)) * int(b3.shape[-1])
    if self.budget is not None and self.macs > self.budget:
      raise KernelBudgetError(self.budget)
    gemm = lambda a, b: kernel_gemm(
      np.asarray(a),
      np.asarray(b),
      spec.ins,
      split_k=spec.split_k,
      tf32_rounding=spec.tf32_rounding,
    )
    if not self.jitted:
      return jnp.asarray(gemm(a3, b3).reshape(shape), np.float32)
    # Under jit the numpy model is a host callback in the one compile.
    result = jax.ShapeDtypeStruct((*a3.shape[:-1], b3.shape[-1]), np.float32)
    return jax.pure_callback(gemm, result, a3, b3).reshape(shape)

  def _eqn(self, i, eqn, ins, plan):
    outs = super()._eqn(i, eqn, ins, plan)
    if self.nudge is None or eqn.primitive.name not in _TRANSCENDENTAL:
      return outs
    return [
      jnp.nextafter(x, jnp.asarray(self.nudge, x.dtype))
      if jnp.issubdtype(x.dtype, jnp.floating)
      else x
      for x in outs
    ]


def kernel_model_run(
  fn,
  args,
  site_algorithms,
  kernels: dict[int, KernelSite],
  *,
  order: str = "xla",
  nudge: float | None = None,
  jit: bool = False,
  budget: int | None = None,
):
  """`fn(*args)` with bit-exact sites by the kernel model.

  Args:
    fn: the case's function (not jitted), or the `Case` itself: a mesh
      case's dots, bit-exact sites too, then split as its mesh asks
      (`with_mesh_splits`); args: its arguments.
    site_algorithms: one algorithm per site (`EMULATED_ALGORITHMS`), used
      for the band sites.
    kernels: site index -> `KernelSite` of kind "bit-exact model".
    order: the band sites' f32 summation order (`SUMMATION_ORDERS`).
    nudge: None, or +inf/-inf: every transcendental's result moved one f32
      ulp that way (the elementwise functions' sensitivity).
    jit: evaluate in one XLA:CPU compile (the model a host callback in
      it), as the sweep's emulation runs: about 0.4 s for the seed, where
      eagerly each primitive compiles on its own (about 1.8 s per new
      shape). The gemms are the same bits either way; XLA:CPU's fused
      elementwise functions (sin, exp) may differ from the eager ones in
      the last bit (the seed's row 0 on the H200 record: 4 f32 ulps off
      the GPU under jit, 3 eagerly).
    budget: None, or the most multiply-adds (B x M x N x K summed over
      the bit-exact sites) the model may take: about 1e7 per CPU second.

  Returns:
    The output leaves, as numpy arrays.

  Raises:
    KernelBudgetError: the bit-exact sites exceed `budget`.
  """
  if isinstance(fn, Case):
    fn = with_mesh_splits(fn)
  closed, _ = trace(fn, args)
  plan, _ = plan_sites(closed.jaxpr)
  evaluator = _KernelEvaluator(
    {i: k for i, k in kernels.items() if k.ins is not None},
    nudge,
    jit,
    budget,
    tuple(site_algorithms),
    order,
    "rna",
  )
  # A `with_mesh_splits` function's dots split as its mesh asks, the
  # bit-exact sites too (`_KernelEvaluator._dot`).
  evaluator.parts.update(mesh_parts(fn, args, closed.jaxpr.invars))
  run = lambda consts, leaves: evaluator.run(closed.jaxpr, plan, consts, leaves)
  outs = (jax.jit(run) if jit else run)(
    tuple(closed.consts), jax.tree_util.tree_leaves(args)
  )
  return [np.asarray(x) for x in outs]


@dataclasses.dataclass(frozen=True, slots=True)
class KernelRowZero:
  """A config's row 0 with its bit-exact sites by the kernel model.

  In results.json's "prediction" as "row0_kernel_model",
  "row0_kernel_model_abs_err" and "site_models".

  Attributes:
    models: per site, `site_model`'s `KernelSite` (its kind, and what
      makes it a band or which instruction models it).
    row0: the headline leaf's row 0, first value (output dtype, as
      float): the bit-exact sites by the kernel model, the others
      emulated at their algorithm in XLA's f32 order; None where no site
      is bit-exact (the emulation's row 0 stands) or it was not computed
      (`budget`, `error`).
    row0_abs: |row 0 - float64|, max over batch element 0; None likewise.
    budget: where `row0` is None despite a bit-exact site because those
      sites take more multiply-adds than the sweep allows
      (`SWEEP_BUDGET`): that budget; else None.
    error: where evaluating the kernel model failed: the error's first
      line; else None. Report words both (`report/explain_kernel.py`).
  """

  models: tuple[KernelSite, ...]
  row0: float | None = None
  row0_abs: float | None = None
  budget: int | None = None
  error: str | None = None

  @property
  def kinds(self) -> tuple[str, ...]:
    """Per site, "bit-exact model" or "band"."""
    return tuple(m.kind for m in self.models)


class KernelRows:
  """The kernel model's row 0 of a case's configs (`row0`), each
  evaluation kept for the configs that share it. Made per sweep.

  A rows-independent case is evaluated once at its largest size and
  sliced, as its float64 reference is (the kernel model's arithmetic per
  output element does not depend on the other rows; evaluated at size 1
  instead, the seed's row 0 moved one f32 ulp: XLA:CPU's band sites and
  elementwise functions are not shape-blind). The bit-exact sites of one
  evaluation may take at most `SWEEP_BUDGET` multiply-adds; beyond it row
  0 is not computed, and the note says so.

  Args:
    case: the case; full: its `full_inputs()` (None for a sized case).
    references: its float64 references (`reference.References`).
  """

  def __init__(self, case, full, references):
    self._case, self._full, self._refs = case, full, references
    self._memo: dict[tuple, tuple] = {}

  def row0(
    self, n: int, fates, algorithms, compute_capability, leaf: str
  ) -> KernelRowZero:
    """Row 0 of leaf `leaf` at size n (`KernelRowZero`).

    Args:
      n: the batch size.
      fates: the config's `SiteFate`s.
      algorithms: the algorithm emulated at each site (the prediction's
        `site_algorithms`), used for the band sites.
      compute_capability: the target's, e.g. "9.0"; None (the CPU): every
        site a band.
      leaf: the headline leaf's name.
    """
    models = [
      site_model(
        f.fate,
        f.mma_opcodes,
        compute_capability,
        f.split_k,
        f.effective_algorithm,
        f.ptx_tf32_rounding,
      )
      for f in fates
    ]
    models = tuple(models)
    exact = {i: m for i, m in enumerate(models) if m.ins is not None}
    if not exact:
      return KernelRowZero(models)
    refs = self._refs
    size = refs.largest if refs.independent and n <= refs.largest else n
    key = (
      size,
      tuple(algorithms),
      tuple((i, m.ins, m.split_k, m.tf32_rounding) for i, m in exact.items()),
    )
    try:
      if key not in self._memo:
        args = self._case.inputs_for(self._full, size)
        self._memo[key] = tuple(
          kernel_model_run(
            self._case,
            args,
            algorithms,
            exact,
            jit=True,
            budget=SWEEP_BUDGET,
          )
        )
      outs = self._memo[key]
      outs = refs.sliced(outs, n) if size != n else outs
      i = refs.names.index(leaf)
      got = np.asarray(element0(outs[i], refs.axes[i]), np.float64)
      ref = element0(refs.at(n)[i], refs.axes[i])
    except KernelBudgetError as e:
      return KernelRowZero(models, budget=e.budget)
    except Exception as e:  # the emulation's prediction stands without it
      return KernelRowZero(models, error=first_line(e))
    return KernelRowZero(
      models, float(np.ravel(got)[0]), float(np.max(np.abs(got - ref)))
    )


@dataclasses.dataclass(frozen=True, slots=True)
class KernelRemainder:
  """Row 0 by the kernel model against a GPU's, and what may explain the
  rest (`kernel_remainder`); `hloprobe.report` words it.

  Attributes:
    predicted: row 0 by the kernel model (the first element of the first
      leaf), bands in XLA's f32 order.
    observed: the GPU's row 0.
    ulp: one f32 ulp at |observed|.
    exact: the bit-exact sites; band: the others, in order.
    orders: the f32 summation orders the band sites were run in
      (`SUMMATION_ORDERS`).
    spread: max - min of row 0 over those orders.
    up, down: how far row 0 moves with every transcendental one f32 ulp
      up, down (the elementwise functions' sensitivity).
  """

  predicted: float
  observed: float
  ulp: float
  exact: tuple[int, ...]
  band: tuple[int, ...]
  orders: tuple[str, ...]
  spread: float
  up: float
  down: float

  @property
  def left(self) -> float:
    """What is left: predicted - observed."""
    return self.predicted - self.observed

  @property
  def covered(self) -> bool:
    """Whether the band sites' order and the elementwise functions' ulp
    move row 0 as far as what is left."""
    return abs(self.left) <= self.spread + max(abs(self.up), abs(self.down))


def kernel_remainder(
  fn, args, site_algorithms, kernels: dict[int, KernelSite], observed: float
) -> KernelRemainder:
  """Row 0 by the kernel model, and the sizes of what the remaining
  difference may be (`KernelRemainder`).

  Args:
    fn, args, site_algorithms, kernels: as `kernel_model_run`.
    observed: the GPU's row 0 (the first element of the first leaf).
  """
  first = lambda **kw: float(
    kernel_model_run(fn, args, site_algorithms, kernels, **kw)[0].ravel()[0]
  )
  predicted = first()
  exact = tuple(sorted(i for i, k in kernels.items() if k.kind == BIT_EXACT))
  orders = [first(order=o) for o in SUMMATION_ORDERS]
  up, down = first(nudge=np.inf), first(nudge=-np.inf)
  return KernelRemainder(
    predicted,
    observed,
    float(np.spacing(np.float32(abs(observed)))),
    exact,
    tuple(i for i in range(len(site_algorithms)) if i not in exact),
    tuple(SUMMATION_ORDERS),
    max(orders) - min(orders),
    up - predicted,
    down - predicted,
  )
