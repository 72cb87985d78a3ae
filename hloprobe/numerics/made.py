"""What XLA made: a config's optimized module executed on its inputs.

The prediction (`predict`) emulates the *program* (its jaxpr) with each dot
site at its effective algorithm: whatever XLA's rewrites do beyond choosing
an algorithm (fused epilogues, alpha/beta folding, converts) is invisible
there. Here the optimized module the config compiled (compile-only GPUs and
the CPU alike) is executed by `hloprobe.execute`, hloprobe's numpy executor
of HLO (no XLA), on the config's inputs at its batch size, twice:

  widened  every float in float64 (`execute_module(widen=True)`). The
           module's own rounding is then of order 2^-53 per operation,
           2^29 times below f32's, so its difference from the program's
           float64 reference is XLA's change of the math, not rounding.
           It is judged against the F32 band, the analytic bound the issue
           names (not a measured floor): the largest F32 band of the dot
           sites (`bands.site_band` at F32_F32_F32, Higham's gamma_K times
           max |A||B|) plus `_OUTPUT_ROUNDINGS` f32 unit roundoffs of the
           leaf's largest reference value. A deviation above it cannot come
           from f32 arithmetic at the sites nor from f64 rounding; one below
           it is not called a change (a change smaller than f32's own error
           is not one this check claims to see). Widening, rather than every
           gemm at F32, keeps the judgement free of f32 summation order.
  made     each gemm at its site's effective algorithm (`SiteFate.carriers`
           names the instructions of a site; a gemm no site maps to runs at
           F32): "what XLA made", shown beside "what the program asks".

Every row of every float leaf of the made run is judged as the
prediction's are (`rows.worst_row`: each row's error against that leaf's
f32 noise floor, per row, from the prediction), naming the worst row
(`Made.rows`); `Made.stats` stays the headline leaf's row 0, the seed's
view. At a large program's larger sizes, where the prediction judges
some rows only (`rows.judged_rows`), for a case that declares
`rows_independent` and whose jaxpr proves it (`row_proof`), the module
is run and judged on those rows alone (issue 37,
`MadeChecker.judged_later`, `Made.judged`): the other batch rows of its
arguments are NaN, the executor multiplies only the lines of each
contraction free of NaN (`execute.contraction`: IEEE makes the rest NaN
anyway) and the elementwise ops still run on every row, so a run costs
about half (gpt2_12's at n = 8: 9.7 -> 4.5-5.2 CPU-s for both runs, 2 of
8 rows). A NaN in a judged row (the program's own, or another row's
reaching it) makes the runs again whole. Every other config runs and is
judged on every row, as before.

When the widened run deviates, the verdict is "XLA changed the math" and
names the gemm calls that do more than A @ B (`math_rules`: the custom
call target, the backend_config fields that matter, the site, the pass and
a known miscompile's rule); with none, the gemms of the module, "not
localised". An instruction the executor cannot compute makes the verdict
say "prediction incomplete: not executed: <target>". An SPMD-partitioned
module (a sharded case: header `num_partitions=N`) is one device's program
(its shards of the arguments, then collectives across devices): every
device's run is made (`execute.execute_module` with `shardings`, the shardings the
program asks for, `MadeChecker._partitioned`) and the output shards are
joined, so it is judged as a one-device module is; a sharding the program
leaves to XLA's propagation that cuts an argument is named instead.

Module parameters and the case's arguments: jit drops unused arguments, so
parameter i is flattened argument `kept[i]`, read from jax's own lowering
(`private_api.kept_arguments`), and each parameter's dimensions are
checked against its argument's. A program jax cannot lower for the CPU (a
GPU-only primitive) has no such list: where its module has as many
parameters as the case has arguments, none was dropped; its module holds
the GPU-only call (a `__cudnn$fmha...` custom call), which the executor
names as not executed.

Executions are cached per (module text fingerprint, batch size, algorithms,
widened) in a `MadeChecker` (the fingerprint without the attributes the
executor does not read, `executed_digest`: configs whose modules differ
only in their dots' precision attributes share their runs), one per case
and sweep (the inputs are the case's at that size), within a byte budget
(`kept.Kept`). The executions need nothing of the prediction, only their
judgement does (its bands, headline leaf and noise floors): `check` is
`MadeChecker.runs`, which readies them and returns the function that
makes them (issue 37: `measure.CaseSetup.finish` calls it in a thread
beside the prediction), then `MadeChecker.judged`.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import ClassVar

import jax
import numpy as np

from hloprobe import execute, private_api
from hloprobe.compile import Case
from hloprobe.ir import ALGORITHMS, parse_hlo_module
from hloprobe.numerics import accuracy, executed, math_rules, row_proof, rows
from hloprobe.numerics.bands import F32_UNIT, site_band
from hloprobe.numerics.emulation_cache import (
  large_rows_whole,
)
from hloprobe.numerics.kept import Kept
from hloprobe.numerics.verdicts import Verdict, VerdictKind

__all__ = [
  "Made",
  "MadeChecker",
  "MathChange",
  "NotExecuted",
  "config_judgement",
]

# f32 roundings of the output allowed besides the sites' bands (the
# elementwise ops around the dots: a bias add, a scale, a convert).
_OUTPUT_ROUNDINGS = 4
_F32 = "F32_F32_F32"


@dataclasses.dataclass(frozen=True, slots=True)
class MathChange:
  """One instruction named by an "XLA changed the math" verdict.

  Attributes:
    instruction: its HLO name, e.g. "cublas-lt-matmul.1".
    target: the custom call target ("__cublas$lt$matmul") or gemm kind.
    fields: the backend_config fields that matter, e.g. "alpha_real 0.1,
      beta 0, epilogue BIAS" (`math_rules.call_fields`).
    site: the dot site it computes, or None when no site maps to it.
    pass_name: the XLA pass that made it (the site's attributed pass with
      --explain_passes, else the rule's, else the target's maker), or None.
    rule: the known miscompile it matches (`math_rules.RULES`), or None.
    source: where the rule is documented, or None.
  """

  instruction: str
  target: str
  fields: str
  site: int | None
  pass_name: str | None
  rule: str | None = None
  source: str | None = None

  # What a verdict's note of this record is (`Verdict.notes`; report
  # words it).
  note: ClassVar[str] = "math change"


@dataclasses.dataclass(frozen=True, slots=True)
class NotExecuted:
  """The note on a prediction's verdict where the optimized module could
  not be executed whole (`Made.not_executed`).

  Attributes:
    instructions: what was not executed, e.g. ("x (custom-call.2)",).
  """

  instructions: tuple[str, ...]

  # What a verdict's note of this record is (`Verdict.notes`; report
  # words it).
  note: ClassVar[str] = "not executed"


@dataclasses.dataclass(frozen=True)
class Made:
  """What XLA made of one config (see the module docstring).

  Attributes:
    stats: the headline leaf's errors against float64 with each gemm at its
      site's effective algorithm ("what XLA made"); None when not executed.
    deviation_abs: max |widened module - float64 reference| over the float
      leaf furthest beyond its bound, output units; None when not executed.
    bound_abs: that leaf's F32 band (see the module docstring).
    deviation_leaf: that leaf's name ("" for a single array).
    changes: the instructions named when the math changed (suspects first).
    localised: whether `changes` are gemm calls doing more than A @ B
      (False: no suspect, the module's gemms are listed instead).
    not_executed: what the executor could not compute, as
      "<target> (<instruction>)" or why the module was not run at all.
    gemms: how many gemms the widened run computed.
    rows: every output leaf's worst row in the made run (`rows.WorstRow`,
      None for a leaf not judged by rows), in the prediction's leaf order;
      () when not executed or without the prediction's noise floors.
    judged: the batch rows `stats`, the deviation and `rows` were judged
      on where the prediction's judged rows are all the made run is
      judged on (`MadeChecker.judged_later`: a large program's larger
      sizes; its noise floors' rows, `rows.judged_rows`; issue 37),
      ascending: the module run on them alone, or whole where it could
      not be (`MadeChecker.runs`); None: every row.
  """

  stats: accuracy.ErrorStats | None
  deviation_abs: float | None
  bound_abs: float | None
  deviation_leaf: str = ""
  changes: tuple[MathChange, ...] = ()
  localised: bool = True
  not_executed: tuple[str, ...] = ()
  gemms: int = 0
  rows: tuple[rows.WorstRow | None, ...] = ()
  judged: tuple[int, ...] | None = None

  @property
  def changed(self) -> bool:
    """Whether the module's widened execution left the F32 band."""
    if self.deviation_abs is None or self.bound_abs is None:
      return False
    return not self.deviation_abs <= self.bound_abs  # NaN counts

  @property
  def complete(self) -> bool:
    return not self.not_executed

  @property
  def agrees(self) -> bool:
    """The module does what the program asks and was executed whole: its
    words say nothing (`hloprobe.report`'s made words are None)."""
    return not self.changed and self.complete

  def config_judgement(self, prediction: Verdict | None) -> Verdict | None:
    """The config's verdict, given the prediction's
    (`Prediction.judgement`, or None): MATH_CHANGED leads (the
    instructions, `MathChange` records, its notes); an incomplete execution
    (a `NotExecuted` note) is a note on the prediction's verdict, or the verdict where there is none;
    else the prediction's."""
    if self.changed:
      named = self.changes if self.localised else ()
      return Verdict(VerdictKind.MATH_CHANGED, notes=tuple(named))
    if self.complete:
      return prediction
    if prediction is None:
      return Verdict(VerdictKind.INCOMPLETE, notes=self.not_executed)
    return prediction.noted(NotExecuted(tuple(self.not_executed)))


def config_judgement(
  prediction: Verdict | None, made: Made | None
) -> Verdict | None:
  """`Made.config_judgement`; `prediction` where nothing was made."""
  return prediction if made is None else made.config_judgement(prediction)


# An instruction's attributes the executor does not read: which algorithm
# a gemm runs at is the caller's (`execute.execute_module`'s `algorithms`,
# from the sites' fates), never the instruction's own `algorithm=` or
# `operand_precision=`. Printed by XLA as `, algorithm=dot_bf16_bf16_f32_x6`
# and `, operand_precision={highest,highest}` (xla/hlo/ir/
# hlo_instructions.cc, `PrintPrecisionConfig`: a dot's or convolution's
# precision_config; seen so in jaxlib 0.10.2's and 0.12.0.1's modules).
# Nor a GPU module's tiling, a kernel's schedule that changes no value of
# the module (issue 37: gpt2_1's a100 modules at bfloat16 and float32, and
# at explain's three split presets, differ in it only): a Triton nested
# gemm fusion's `"block_level_fusion_config":{...}` (warps, stages, output
# tiles) in its `fusion_backend_config`, the `backend_config={"sizes":
# [...]}` of the dot inside it, and the module header's
# `fingerprint_before_lhs="..."` (a hash of the module text before the
# latency-hiding scheduler, which those change); all three printed so in
# jaxlib 0.10.2's and 0.12.0.1's a100 modules (the recorded seed at n = 2,
# made_test's tiling test on both). Of a backend_config the
# executor reads `fusion_backend_config.kind` (`interpreter.Interpreter.
# fusion_scope`), `gemm_backend_config` (`blas.gemm_fields`) and
# `cudnn_conv_backend_config` (`conv`) only, and no module header
# attribute beyond the partition count. Quoted strings (metadata,
# backend_config's JSON strings) are otherwise matched whole, so that text
# inside them is kept as it is.
_UNREAD_ATTRIBUTES = re.compile(
  r',"block_level_fusion_config":\{(?:[^{}"]|"[^"]*"|\{[^{}]*\})*\}'
  r'|, backend_config=\{"sizes":\[(?:"[0-9]+",?)*\]\}'
  r'|fingerprint_before_lhs="[0-9a-f]*"'
  r'|(?P<quoted>"(?:[^"\\]|\\.)*")'
  r"|, (?:algorithm=[A-Za-z0-9_]+|operand_precision=\{[A-Za-z0-9_,]*\})"
)


def executed_digest(text: str) -> str:
  """The SHA-256 (hex) of an optimized module's text without the
  attributes the executor does not read (`_UNREAD_ATTRIBUTES`): modules
  of equal digests are executed alike, bit for bit, gemm records
  included (each holds the algorithm it ran at, not the instruction's).

  Issue 37 (share work across configs): a CPU config's modules at
  bfloat16 and float32 and at its precision fix tries' presets differ in
  those attributes only (gpt2_1 at n = 8, jaxlib 0.12.0.1: six dots), so
  their widened runs are one, and their made runs too where the sites'
  effective algorithms are equal; so do gpt2_1's a100 modules at bfloat16
  and float32 (n = 1, 2 and 8) and at the BF16_BF16_F32_X6,
  TF32_TF32_F32_X3 and BF16_BF16_F32_X3 presets (n = 8), whose Triton
  tilings differ, not their ops.
  """
  kept = _UNREAD_ATTRIBUTES.sub(_quoted_only, text)
  return hashlib.sha256(kept.encode()).hexdigest()


def _quoted_only(match: re.Match) -> str:
  """A quoted string as it is; an unread attribute dropped."""
  return match.group("quoted") or ""


def _flat(args) -> list[np.ndarray]:
  return [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]


def _unique(items) -> tuple:
  return tuple(dict.fromkeys(items))


class MadeChecker:
  """Executes the configs' optimized modules of one case (cached).

  Args:
    case: the case.
    full: its `full_inputs()` (None for a sized case).
    references: its float64 references (`reference.References`); None
      for a compile worker's checker (issue 37: a config's runs are made
      in the worker that compiled it, `engine.CompileRequest.made`),
      which makes `runs` only, and of an unpartitioned module only (a
      partitioned one's output shapes come from the references).
    all_rows: every row is judged (--all_rows): `judged_later` is False.
  """

  def __init__(
    self, case: Case, full: tuple | None, references, all_rows: bool = False
  ):
    self.case, self._full, self._refs = case, full, references
    self._all_rows = all_rows
    self._whole: int | None = None  # `judged_later`'s, once
    self._kept: tuple[int, ...] | None | str | NotImplementedError = "unknown"
    # Executions within a byte budget (`kept.Kept`), made again when
    # dropped: a sweep's every config would otherwise keep its outputs.
    self._runs = Kept()
    self._modules: dict[str, object] = {}

  def _kept_arguments(self, args: tuple) -> tuple[int, ...] | None:
    """The flattened arguments the module keeps (jax's own lowering, once
    per case: which arguments a function uses does not depend on n)."""
    if isinstance(self._kept, str):  # "unknown": not lowered yet
      try:
        lowered = jax.jit(self.case.fn).lower(*args)
        self._kept = private_api.kept_arguments(lowered)
      except NotImplementedError as e:  # no CPU lowering: kept, not retried
        self._kept = e
    if isinstance(self._kept, NotImplementedError):
      raise self._kept
    return self._kept

  def _parameters(self, module, args: tuple) -> list[np.ndarray]:
    """The module's entry parameters from the case's arguments.

    Raises:
      ValueError: they do not match (count or dimensions), naming which.
    """
    flat = _flat(args)
    params = module.entry.parameters()
    try:
      kept = self._kept_arguments(args)
    except NotImplementedError:  # no CPU lowering (a GPU-only primitive)
      if len(params) != len(flat):
        raise
      kept = None  # as many parameters as arguments: jit dropped none
    if kept is None:
      kept = tuple(range(len(flat)))
    if len(params) != len(kept):
      raise ValueError(
        f"parameters: the module has {len(params)}, the case keeps "
        f"{len(kept)} of {len(flat)} arguments"
      )
    out = []
    for i, k in enumerate(kept):
      dims = tuple(params[i].shape.dims)
      if dims != tuple(flat[k].shape):
        raise ValueError(
          f"parameters: parameter {i} is {list(dims)}, argument {k} "
          f"{list(flat[k].shape)}"
        )
      out.append(flat[k])
    return out

  def _partitioned(self, module, args: tuple, n: int):
    """(arguments, *shardings) for `execute.execute_module` of an
    SPMD-partitioned module: the kept arguments whole, their shardings and
    the outputs'
    (a mesh case's PartitionSpecs, `Case.in_specs`/`out_specs`; else the
    program's own, read from its unoptimized module: the `Sharding` calls
    that jit's in/out_shardings and `with_sharding_constraint` put there,
    a shard_map's Shardy shardings), the outputs' whole shapes.

    Raises:
      ValueError: the module's parameters are not the case's kept ones.
    """
    flat = _flat(args)
    kept = self._kept_arguments(args)
    kept = tuple(range(len(flat))) if kept is None else kept
    shapes = [tuple(np.shape(r)) for r in self._refs.at(n)]
    whole = [flat[k] for k in kept]
    if self.case.mesh_shape is not None:
      ins, outs = _case_specs(self.case, args)
      return whole, [ins[k] for k in kept], outs, shapes
    program = parse_hlo_module(self.case.unoptimized_hlo(args))
    return whole, program, None, shapes, kept

  def judged_later(self, n: int) -> bool:
    """Whether size n's executions are made and judged on the
    prediction's judged rows alone (`runs`' `judged`; issue 37: gpt2_12's
    made runs at n = 8 were 6 of its 11 row-runs): a large program (its
    rows judged whole up to `rows.rows_whole` of its multiply-adds a row,
    `emulation_cache.row_multiply_adds`, below `rows.ALL_ROWS_UP_TO`, as
    the predictor finds them) at a size above those, whose case declares
    `rows_independent` and whose jaxpr proves it (`row_proof`: no value
    of a row reaches another, not even through a reduction across the
    batch that cancels, e.g. a softmax shifted by the batch's max, which
    would carry the other rows' NaN); once per checker. Never under
    --all_rows nor for a sized case; False where the count or the proof
    fails. And only at a size at least twice the rows one leaf's floor
    judges there (`rows.picked_counts`: its sample and worst rows, row 0):
    the runs on fewer rows save little otherwise, and they wait for the
    first pass in the case's process, where the compile worker made them
    at once (gpt2_4 at n = 8, 5 of 8 rows: 40 -> 42 s wall, issue 37).
    Elsewhere every row is made and judged, as before: a small program's
    run costs little, and the check that XLA kept the math then sees every
    row."""
    case = self.case
    if (
      self._all_rows
      or not case.rows_independent
      or self._full is None
      or case.swept_size is not None
    ):
      return False
    if self._whole is None:
      whole = large_rows_whole(case, self._full)
      proven = whole is not None and self._proven()
      self._whole = whole if proven else rows.ALL_ROWS_UP_TO
    judged = 1 + sum(rows.picked_counts(self._whole))
    return n > self._whole and n >= 2 * judged

  def _proven(self) -> bool:
    """`row_proof` of the case at two rows (or one)."""
    case, full = self.case, self._full
    args = case.inputs_for(full, min(2, case.full_size(full)))
    shapes = [
      np.shape(x)
      for x in jax.tree_util.tree_leaves(jax.eval_shape(case.fn, *args))
    ]
    return row_proof.proof(case, args, case.output_axes(shapes)) is None

  def _cut(self, module, args: tuple, judged: tuple[int, ...]):
    """The module's parameters with every batch row but `judged` NaN
    (`_masked`), or None where it runs whole: a while loop in it
    (`_has_while`), no NaN to carry, or anything raised here."""
    try:
      masked = None if _has_while(module) else self._masked(args, judged)
      return None if masked is None else self._parameters(module, masked)
    except Exception:  # run whole, which names what fails
      return None

  def _clean(self, runs, judged: tuple[int, ...]) -> bool:
    """Whether the widened and made runs on the judged rows alone hold no
    NaN in those rows of any float output (nor anywhere in an output
    without a batch axis): the other rows' NaN reached none of them."""
    index = np.asarray(judged, np.int64)
    for run in runs:
      outputs = [np.asarray(x) for x in run.outputs]
      axes = self.case.output_axes([x.shape for x in outputs])
      for x, axis in zip(outputs, axes):
        if not _holds_nan(x.dtype):
          continue
        if axis is not None:
          x = np.take(x, index, axis=axis)
        if np.isnan(x).any():
          return False
    return True

  @staticmethod
  def judged_rows(noises) -> tuple[int, ...] | None:
    """The batch rows a prediction's noise floors judge (`NoiseFloor.rows`,
    one set for every batched leaf of a size, `rows.judged_rows`; None
    for a leaf without a floor), ascending; None where every row is
    judged."""
    found = {
      r
      for noise in noises
      if noise is not None and noise.rows is not None
      for r in noise.rows
    }
    return tuple(sorted(found)) if found else None

  def _masked(self, args: tuple, judged: tuple[int, ...]) -> tuple | None:
    """The case's arguments at size n with every batch row but `judged`
    NaN (copies of the batched leaves; `execute.contraction` then
    multiplies the judged rows' lines alone); None where a batched leaf
    is not a float array (no NaN to carry) or `judged` leaves out no row.
    """
    axes = self.case.arg_axes(len(args))
    out = []
    for arg, axis in zip(args, axes):
      if axis is None:
        out.append(arg)
        continue
      leaves, tree = jax.tree_util.tree_flatten(arg)
      masked = []
      for leaf in leaves:
        leaf = np.asarray(leaf)
        if not _holds_nan(leaf.dtype):
          return None
        ax = axis % leaf.ndim
        drop = np.setdiff1d(np.arange(leaf.shape[ax]), judged)
        if drop.size == 0:
          return None
        copy = leaf.copy()
        copy[(slice(None),) * ax + (drop,)] = np.nan
        masked.append(copy)
      out.append(jax.tree_util.tree_unflatten(tree, masked))
    return tuple(out)

  def _module(self, text: str):
    """(the module's execution digest, `executed_digest`; its parsed
    module, the first one of that digest)."""
    digest = executed_digest(text)
    if digest not in self._modules:
      self._modules[digest] = parse_hlo_module(text)
    return digest, self._modules[digest]

  def check(
    self, n: int, optimized_hlo: str, fates=(), *judging, **named
  ) -> Made:
    """What XLA made of one config (see the module docstring): `runs`,
    then `judged` of their executions, here.

    Args:
      n: the batch size.
      optimized_hlo: the optimized module's text.
      fates: the config's `SiteFate`s (carriers, effective algorithms).
      *judging, **named: `judged`'s arguments after `fates` (passes,
        bands, headline, noises), by position or name.

    Never raises for the module's sake: what cannot be executed is named
    in `Made.not_executed`.
    """
    ran = self.runs(n, optimized_hlo, fates)()
    return self.judged(n, ran, fates, *judging, **named)

  def runs(
    self,
    n: int,
    optimized_hlo: str,
    fates=(),
    judged: tuple[int, ...] | None = None,
  ) -> Callable[[], object] | None:
    """The executions of one config's module, readied here and made by
    the function returned, which needs nothing of the prediction (issue
    37: the worker that compiled the config calls it, else the case's
    worker in a thread beside the prediction, `measure.CaseSetup.finish`);
    None from a checker without references for a partitioned module
    (made where the references are).

    Here, in the calling thread: the case's inputs at size `n`, the
    module parsed (once per `executed_digest`), its parameters matched to
    the inputs (jax's lowering of the case, once per case) and the gemms'
    algorithms from `fates` (as `check`'s). The function returned runs
    hloprobe's numpy executor only (`execute.execute_module`, the widened
    run, then the made run; no user code, no jax) and returns an opaque
    value for `judged`; it never raises for the module's sake (its
    failure, or one here, is a `Made` naming it, as `check` names it).
    One such function at a time per checker: its executions are cached
    in the checker (`kept.Kept`, not locked).

    Args:
      n, optimized_hlo, fates: as `check`'s.
      judged: the batch rows the prediction judges at size n (issue 37:
        where `judged_later`), or None: every row. The other rows of the
        batched arguments are NaN (`_masked`), so that the executor
        multiplies the judged rows' lines alone and the others come out
        NaN, which `judged` does not read. Run whole instead: a module
        with a while loop (`_has_while`), a batched argument that holds no
        NaN, a partitioned module, and runs with a NaN in a judged row
        (`_clean`: made again whole).
    """
    try:
      args = self.case.inputs_for(self._full, n)
      digest, module = self._module(optimized_hlo)
      if module.partition_count > 1 and self._refs is None:
        return None
      cut = None  # the judged rows' parameters, the others NaN
      if judged is not None and module.partition_count == 1:
        cut = self._cut(module, args, judged)
      if module.partition_count > 1:
        # One device's program: every device's shard run, joined.
        plan = self._partitioned(module, args, n)
        whole, shardings = plan[0], plan[1:]
      else:
        whole, shardings = self._parameters(module, args), None
      # Presets only: an integer site's "exact integer" is no preset, and
      # the executor computes integer dots exactly whatever it is given.
      algorithms = {
        c: f.effective_algorithm
        for f in fates
        if f.effective_algorithm in ALGORITHMS
        for c in f.carriers
      }
    except Exception as e:  # named in the verdict, never silent
      failure = Made(None, None, None, not_executed=(_why_not(e),))
      return lambda: failure

    def key(algorithms, widen, rows):
      return (digest, n, tuple(sorted(algorithms.items())), widen, rows)

    def execution(algorithms, widen, params):
      return lambda: execute.execute_module(
        module, params, algorithms=algorithms, widen=widen, shardings=shardings
      )

    def both(params, rows):
      """The widened run and the made run; on judged rows (`judged`,
      the case's process, after the compile lanes), the made one in a
      thread beside the widened one where neither is held (issue 37:
      they are independent, and numpy's BLAS and elementwise kernels
      release the GIL; gpt2_12's last config's pair on its judged rows ran
      alone on one core for 9 s at the explain's end; in the compile
      workers, two threads a lane cost 6 CPU-s more than they saved).
      Held runs are read and put in the calling thread alone (`Kept` is
      not locked). A made run begun beside a widened run that cannot be
      executed is waited for and dropped; its failure, if any, too."""
      wide_key, made_key = key({}, True, rows), key(algorithms, False, rows)
      made_run = execution(algorithms, False, params)
      with concurrent.futures.ThreadPoolExecutor(1, "made run") as aside:
        beside = None
        held = wide_key in self._runs or made_key in self._runs
        if rows is not None and not held:
          beside = aside.submit(made_run)
        wide = self._runs.get(wide_key, execution({}, True, params))
        if wide.not_executed:
          found = _unique(
            f"{x.target} ({x.instruction})" for x in wide.not_executed
          )
          return Made(None, None, None, not_executed=found)
        return wide, self._runs.get(
          made_key, made_run if beside is None else beside.result
        )

    def on_rows():
      """The runs on the judged rows alone; None where they hold a NaN
      in a judged row (the program's own, or the others' rows reaching
      it: `_clean`) or fail: then made whole."""
      try:
        found = both(cut, judged)
        if isinstance(found, Made) or self._clean(found, judged):
          return found
      except Exception:  # made whole, which names what fails
        pass
      return None

    def ran():
      try:
        found = None if cut is None else on_rows()
        return both(whole, None) if found is None else found
      except Exception as e:  # named in the verdict, never silent
        return Made(None, None, None, not_executed=(_why_not(e),))

    return ran

  def judged(
    self,
    n: int,
    ran,
    fates=(),
    passes: Mapping | None = None,
    bands=(),
    headline: str | None = None,
    noises=(),
  ) -> Made:
    """What XLA made of one config, from its executions and the
    prediction's bands, headline and noise floors.

    Args:
      n: the batch size.
      ran: what the function `runs` returned gave.
      fates: the config's `SiteFate`s (carriers, effective algorithms).
      passes: site -> `PassAttribution` (--explain_passes), or None.
      bands: the prediction's `SiteBand`s (None where not measured).
      headline: the output leaf the row is about (the prediction's); None
        to choose it as `accuracy.headline_leaf` does.
      noises: the prediction's noise floor of every leaf
        (`Prediction.noises`), to judge every row by; () for none.

    Never raises for the module's sake (as `check`).
    """
    if isinstance(ran, Made):  # not executed: why, as `runs` found it
      return ran
    wide, made = ran
    refs = self._refs
    try:
      ref = refs.at(n)
      if len(wide.outputs) != len(ref) or made.outputs is None:
        return Made(
          None,
          None,
          None,
          not_executed=(
            f"outputs: the module has {len(wide.outputs)}, the program "
            f"{len(ref)}",
          ),
        )
    except Exception as e:  # named in the verdict, never silent
      return Made(None, None, None, not_executed=(_why_not(e),))
    at = self.judged_rows(noises) if self.judged_later(n) else None
    cut = functools.partial(rows.gathered, rows=at, axes=refs.axes)
    leaf, dev, bound = _deviation(
      cut(wide.outputs), cut(ref), refs.names, bands
    )
    leaves = _leaf_stats(cut(made.outputs), cut(ref), refs)
    if at is not None:  # each row's error back at its row of n
      leaves = [_at_rows(s, at, n) for s in leaves]
    changes, localised = (), True
    if not dev <= bound:
      changes, localised = _changes(wide.gemms, fates, passes or {})
    worst = ()
    if len(noises) == len(leaves):
      worst = tuple(map(rows.worst_row, leaves, noises, refs.dtypes))
    return Made(
      _headline(leaves, refs, headline),
      dev,
      bound,
      leaf,
      changes,
      localised,
      (),
      len(wide.gemms),
      worst,
      at,
    )


def _at_rows(stats, at: tuple[int, ...], n: int):
  """`stats` of the rows `at` with its per-row errors put back at those
  rows of a batch of n (NaN at the others, which `rows.worst_row` does
  not read: it reads the noise floor's rows)."""
  if stats.row_abs is None or stats.row_abs.size != len(at):
    return stats
  row_abs = np.full(n, np.nan)
  row_abs[np.asarray(at, np.int64)] = stats.row_abs
  return dataclasses.replace(stats, row_abs=row_abs)


def _has_while(module) -> bool:
  """Whether any computation of `module` holds a while loop: a batch's
  loop runs while any row's condition holds (jax's batching rule of
  `while_loop`, its predicate reduced over the batch; jaxlib 0.12.0.1 and
  0.10.2, `tests/numerics/made_rows_test.py`), and a NaN row's may never
  end (the executor's trip bound then, 10^6 trips), so such a module is
  run whole."""
  return any(
    i.opcode == "while"
    for c in module.computations.values()
    for i in c.instructions
  )


def _holds_nan(dtype: np.dtype) -> bool:
  """Whether `dtype` holds a NaN (numpy's floats, ml_dtypes' but those
  without one, e.g. float4_e2m1fn)."""
  try:
    with np.errstate(invalid="ignore"):
      return bool(np.isnan(np.asarray(np.nan).astype(dtype)))
  except (TypeError, ValueError):
    return False


def _case_specs(case: Case, args: tuple):
  """A mesh case's PartitionSpecs (`Case.in_specs`, `out_specs`; P() where
  none), one per flattened argument leaf (an argument's spec applies to
  each of its leaves, as jit's in_shardings prefix does) and per output
  leaf, each marked with the case's mesh."""
  spec = jax.sharding.PartitionSpec
  mesh = (tuple(case.mesh_shape), tuple(case.mesh_axes))
  ins = case.in_specs or (spec(),) * len(args)
  flat_ins = []
  for arg, p in zip(args, ins):
    flat_ins += [_mesh_sharding(p, mesh)] * len(jax.tree_util.tree_leaves(arg))
  outs = case.out_specs if case.out_specs is not None else spec()
  leaves = jax.tree_util.tree_leaves(
    outs, is_leaf=lambda p: isinstance(p, spec)
  )
  n_out = len(jax.tree_util.tree_leaves(jax.eval_shape(case.fn, *args)))
  if len(leaves) == 1:
    leaves = leaves * n_out
  return flat_ins, [_mesh_sharding(p, mesh) for p in leaves]


def _mesh_sharding(spec, mesh) -> tuple:
  """A PartitionSpec on the case's mesh (sizes, names) of iota devices, as
  `execute.execute_module`'s shardings take it: (axes per dimension, sizes,
  names)."""
  axes = tuple(
    () if e is None else ((e,) if isinstance(e, str) else tuple(e))
    for e in spec
  )
  return (axes, *mesh)


def _why_not(error: Exception) -> str:
  """What stopped the check, in one line: a program without a CPU lowering
  for jax's kept-argument list is named (`executed.why_not_lowered`), any
  other error as "module (<its first line>)"."""
  words = executed.why_not_lowered(error)
  return words if "no CPU lowering" in words else f"module ({words})"


def _f32_band(bands) -> float:
  """The largest F32 band of the sites (0 without measured bands)."""
  found = [
    site_band(
      b.site, _F32, b.K, b.operand_scale_max, b.operand_scale_rms
    ).worst_abs
    for b in bands
    if b is not None
  ]
  return max(found, default=0.0)


def _deviation(outputs, ref, names, bands) -> tuple[str, float, float]:
  """(leaf, deviation, bound) of the float leaf furthest beyond its bound
  (the widened outputs are float64 wherever the module computes floats)."""
  sites = _f32_band(bands)
  found = []
  for got, want, name in zip(outputs, ref, names):
    got = np.asarray(got)
    if got.dtype.kind != "f" or got.shape != want.shape:
      continue
    scale = accuracy.largest_abs(want[np.isfinite(want)])
    bound = sites + _OUTPUT_ROUNDINGS * F32_UNIT * scale
    diff = accuracy.abs_diff(got, want)
    # A NaN or infinity where the program's float64 answer has the same.
    diff[(got == want) | (np.isnan(got) & np.isnan(want))] = 0.0
    dev = float(np.where(np.isnan(m := np.max(diff, initial=0.0)), np.inf, m))
    found.append((name, dev, bound))
  if not found:
    return "", 0.0, sites
  return max(found, key=_ratio)


def _ratio(found: tuple[str, float, float]) -> float:
  _, dev, bound = found
  if bound:
    return dev / bound
  return float("inf") if dev else 0.0


def _leaf_stats(outputs, ref, refs) -> list:
  """Every leaf's errors, made at the effective algorithms."""
  return [
    accuracy.ErrorStats.of(got, want, axis, name)
    for got, want, axis, name in zip(outputs, ref, refs.axes, refs.names)
  ]


def _headline(leaves, refs, headline):
  """The headline leaf's errors (row 0: the seed's view)."""
  if headline is not None and headline in refs.names:
    return leaves[list(refs.names).index(headline)]
  at = accuracy.headline_leaf(refs.axes, refs.dtypes)  # fixed per case
  return leaves[at]


def _changes(gemms, fates, passes) -> tuple[tuple[MathChange, ...], bool]:
  """The instructions to name: the gemm calls doing more than A @ B, or
  every gemm when none does (not localised)."""
  site_of = {c: f.site.index for f in fates for c in f.carriers}
  once = {g.instruction: g for g in gemms}
  suspects = [g for g in once.values() if not math_rules.is_plain(g)]
  named = suspects or list(once.values())
  out = []
  for g in named:
    site = site_of.get(g.instruction)
    rule = math_rules.matching_rule(g) if suspects else None
    made_by = passes.get(site).pass_name if site in passes else None
    made_by = made_by or (rule.pass_name if rule else None)
    made_by = made_by or math_rules.MAKING_PASS.get(g.kind)
    out.append(
      MathChange(
        g.instruction,
        g.kind,
        math_rules.call_fields(g),
        site,
        made_by,
        rule.words if rule else None,
        rule.source if rule else None,
      )
    )
  return tuple(out), bool(suspects)
