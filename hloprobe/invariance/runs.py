"""Running a config's rows in a worker: the sweep's inputs and the anchor
placed at each offset, on one compiled executable (`RowsRequest`).

The request is a `runtime.Request` (pickled whole to one of the sweep's
workers, the same `sweep.worker_pool` processes, with the config's
experiment XLA_FLAGS): it runs the executable the sweep's own compile of
the config left in that worker (`sweep.KEPT`), else compiles once; then
one run per input set. The anchor's batches (`anchor_inputs`) keep every shared argument
and change only the batched ones; a large program's anchor sits at its
three offsets in one batch (`anchor_rows_of`).

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sys

import jax
import numpy as np

from hloprobe.compile import Case, compile_case, get_case, jaxlib_release
from hloprobe.engine import KEPT, SweptCase
from hloprobe.errors import CaseError, first_line
from hloprobe.invariance.rows import ConfigRows, anchor_offsets, bits, row_of
from hloprobe.numerics import CaseNumerics
from hloprobe.records import Config
from hloprobe.runtime import Request

__all__ = [
  "RowsRequest",
  "UserInputsRequest",
  "anchor_inputs",
  "anchor_rows_of",
  "cpu_twin",
  "rows_here",
]

# The draw of the anchor's companions (fixed: the same batches every run).
_SEED = 38

# What of an optimized CPU module's text XLA:CPU's arithmetic does not
# read: its dots' precision attributes (`sites.effective.cpu_algorithm`'s
# XLA:CPU rule: DEFAULT, HIGH and the BF16_BF16_F32 preset give HIGHEST's
# f32 results, measured on jaxlib 0.10.2 and 0.12.0.1), and where the
# program was traced from (each instruction's `metadata={...}` and the
# module's tables of source files and stack frames, which name the
# caller). A CPU config's modules at bfloat16 and float32 differ in these
# only (`operand_precision={highest,highest}` at float32; seed_mlp, tm_mm,
# bench_models' gpt2_1 and decode at n = 1, 2 and 8, jaxlib 0.12.0.1,
# 2026-12-07; tm_mm's twins on jaxlib 0.10.2 too, runs_test), and at
# tensorfloat32 (a review's probe of every precision name on f32, bf16,
# f16, f64 and int32 dots and an f32 convolution, jaxlib 0.12.0.1: no two
# keys alike where the bits differ).
_CPU_UNREAD = re.compile(
  r", (?:algorithm=[A-Za-z0-9_]+|operand_precision=\{[A-Za-z0-9_,]*\}"
  r'|metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})'
  r'|^(?:[0-9]+ (?:\{[^\n]*\}|"[^\n]*")|FileNames|FunctionNames'
  r"|FileLocations|StackFrames)$",
  re.M,
)
# The worker memo's key of its `_Twins`, and how many rows they hold at
# most (the oldest dropped).
_TWINS = "anchor rows of cpu twins"
_TWINS_AT_MOST = 16


@dataclasses.dataclass
class _Twins:
  """A worker's anchor rows by `cpu_twin` key, of one case (the worker's
  own record of it) on one inputs: a request of another case or on other
  inputs replaces it whole, so it holds one copy of the inputs at most.

  Attributes:
    case: the `Case`, as the worker's memo holds it.
    inputs: the full inputs the rows were made on.
    rows: `cpu_twin` key -> the first `ConfigRows` made of it.
  """

  case: Case
  inputs: tuple
  rows: dict = dataclasses.field(default_factory=dict)

  @staticmethod
  def held(memo: dict, case: Case, full) -> _Twins | None:
    """The memo's `_Twins` of `case` on `full`, or None."""
    found = memo.get(_TWINS)
    if found is None or found.case is not case:
      return None
    return found if SweptCase.same_inputs(found.inputs, full) else None

  def add(self, key: tuple, rows: ConfigRows) -> None:
    """Holds `rows` under `key` unless some are held (a config whose row
    0 was not its twin's leaves the first twin's), the oldest dropped past
    `_TWINS_AT_MOST`."""
    self.rows.setdefault(key, rows)
    for old in list(self.rows)[: max(0, len(self.rows) - _TWINS_AT_MOST)]:
      del self.rows[old]


def anchor_inputs(
  case: Case, full: tuple, n: int, offset: int | tuple[int, ...]
) -> tuple:
  """The arguments of a batch of n with the anchor at `offset` (or at
  each of several offsets at once).

  The anchor is the full inputs' last row (index N - 1 of N); the other
  rows are the first of a fixed permutation of rows 0 .. N - 2 (seed 38)
  in order, so they differ from the sweep's prefix rows and from n to n.
  Every batched argument is cut alike (a row is a row of each); shared
  arguments pass unchanged.

  Raises:
    CaseError: the case is sized (no rows), or n exceeds its rows.
    ValueError: an offset is not in [0, n).
  """
  size = case.full_size(full)
  if n > size:
    case.inputs_for(full, n)  # raises its own CaseError
  at = set((offset,) if isinstance(offset, int) else offset)
  if not all(0 <= o < n for o in at):
    raise ValueError(f"anchor offset {offset} outside a batch of {n}")
  others = np.random.default_rng(_SEED).permutation(max(size - 1, 0))
  others = iter(list(others[: n - len(at)]) if size > 1 else [0] * n)
  index = np.array([size - 1 if r in at else next(others) for r in range(n)])
  out = []
  for arg, axis in zip(full, case.arg_axes(len(full))):
    if axis is not None:
      arg = jax.tree_util.tree_map(
        lambda a, ax=axis: np.take(np.asarray(a), index, axis=ax), arg
      )
    out.append(arg)
  return tuple(out)


def anchor_rows_of(
  case: Case, full: tuple, n: int, run, together: bool = False
) -> tuple[tuple[np.ndarray, ...], ...]:
  """The anchor row at each offset of `anchor_offsets(n)`: `run(args)`
  gives the output leaves of one batch (each offset run once), or with
  `together` of one batch holding the anchor at every offset.

  `together` is for a large program whose rows are independent
  (`CaseNumerics.large_program`, issue 37: gpt2_12's anchor batches at n
  = 8 were three runs of a 12-layer model, 5.7 CPU-s): a compiled
  program's arithmetic on a row is fixed by its shapes and that row's
  place in the batch, and where no row's values reach another, the other
  rows' values cannot move its bits; so the anchor's bits at an offset
  are the same whether its batch-mates are other rows or the anchor
  again (the same bits as three batches: tm_mm on the CPU, runs_test,
  jaxlib 0.12.0.1 and 0.10.2; gpt2_1 at n = 3 and 8, a review's, jaxlib
  0.12.0.1). What it gives up: a data-dependent kernel (none of XLA's
  compiled gemms and reductions, whose choice is made by shapes at
  compile time) could differ."""
  offsets = tuple(dict.fromkeys(anchor_offsets(n)))
  batches = (offsets,) if together else tuple((o,) for o in offsets)
  found: dict[int, tuple[np.ndarray, ...]] = {}
  for batch in batches:
    leaves = run(anchor_inputs(case, full, n, batch))
    axes = case.output_axes([np.shape(x) for x in leaves])
    for offset in batch:
      found[offset] = row_of(leaves, axes, offset)
  return tuple(found[o] for o in anchor_offsets(n))


def cpu_twin(config: Config, compiled) -> tuple | None:
  """The key a CPU config's executable shares with its twins: the
  SHA-256 of its optimized module's text (`compiled.as_text()`) without
  what XLA:CPU's arithmetic does not read (`_CPU_UNREAD`) and blank lines,
  and n; None on another platform, where the text cannot be read, or
  under a jaxlib the XLA:CPU rule was not checked on. Twins (a CPU
  config at bfloat16, tensorfloat32 and float32: the same module but for
  those attributes) compute the same arithmetic by that rule
  (`sites.effective.cpu_algorithm`); `rows_here` checks each one's row 0
  bits too. The key names no case: its holder (`_Twins`) does."""
  text = getattr(compiled, "as_text", None)
  if config.target.platform != "cpu" or text is None:
    return None
  if not jaxlib_release().rules_checked:
    return None
  try:
    module = text()
  except Exception:  # not readable: no twin
    return None
  lines = _CPU_UNREAD.sub("", module).splitlines()
  kept = "\n".join(line for line in lines if line.strip())
  digest = hashlib.sha256(kept.encode()).hexdigest()
  return (digest, config.n)


def rows_here(
  case: Case,
  full: tuple,
  config: Config,
  anchors: bool = True,
  compiled=None,
  outputs: tuple | None = None,
  twins: dict | None = None,
  together: bool = False,
) -> ConfigRows:
  """Compiles config `config` of `case` once (or takes `compiled`, the
  sweep's own executable of it) and runs it on the sweep's inputs (row 0;
  or takes `outputs`, the output leaves the sweep's run of `compiled` on
  them gave, kept under (config, `engine.KEPT`)) and, with `anchors`, on
  the anchor's batches (`together`: one batch, `anchor_rows_of`).

  `twins` (a worker's memo, or None): where it holds the rows of a CPU
  twin of this config (`cpu_twin`: the same module but for its dots'
  precision attributes, the same n) of this case (the same `Case`
  object) made on these inputs, and this config's own row 0 is that
  twin's, bit for bit, the twin's anchor rows are this config's, not run
  again (issue 37: a CPU config's anchor batches were run at bfloat16
  and again at float32, gpt2_12's 29 batch rows of a 12-layer model a
  precision). Row 0 is always this config's own run (or the sweep's):
  a twin whose row 0 differs has its anchors run.

  Raises:
    CaseError: a sized case, or bad batch axes.
    Exception: what lowering, compiling or running raise.
  """
  args = case.inputs_for(full, config.n)
  if compiled is None:  # outputs come with the executable that gave them
    outputs = None
    Request.note_stage("compile")
    cc = compile_case(case, args, config.precision.jax_name, config.target)
    compiled = cc.compiled
  Request.note_stage("run")

  def run(a):
    out = jax.block_until_ready(compiled(*a))
    return tuple(np.asarray(x) for x in jax.tree_util.tree_leaves(out))

  leaves = run(args) if outputs is None else outputs
  axes = case.output_axes([np.shape(x) for x in leaves])
  names = _batched_names(case, leaves, axes)
  row0 = row_of(leaves, axes, 0)
  twin = cpu_twin(config, compiled) if anchors and twins is not None else None
  held = _Twins.held(twins, case, full) if twin is not None else None
  known = held.rows.get(twin) if held is not None else None
  if known is not None and _same_row0(known, row0, names):
    return ConfigRows(config.n, row0, known.anchor, names)
  anchor = ()
  if anchors:
    anchor = anchor_rows_of(case, full, config.n, run, together)
  rows = ConfigRows(config.n, row0, anchor, names)
  if twin is not None:
    if held is None:
      held = twins[_TWINS] = _Twins(case, full)
    held.add(twin, rows)
  return rows


def _same_row0(rows: ConfigRows, row0, names) -> bool:
  """Whether a twin's `ConfigRows` give this row 0 and these leaves, bit
  for bit."""
  return (
    rows.leaves == names
    and rows.row0 is not None
    and bits(rows.row0) == bits(row0)
  )


def _batched_names(case, leaves, axes) -> tuple[str, ...]:
  """The batched leaves' positions as names ("leaf 0", ...)."""
  del case
  return tuple(f"leaf {i}" for i, a in enumerate(axes) if a is not None)


@dataclasses.dataclass(frozen=True)
class RowsRequest(Request):
  """One config's rows, done in a sweep worker (`rows_here`).

  Attributes:
    config: the config.
    case_source: the words the case was given by (resolved once per
      worker process, as `sweep.CompileRequest` does).
    full_inputs: the case's full-size inputs, as the sweep made them.
    anchors: also place the anchor at each offset (a large program's
      in one batch: `CaseNumerics.large_program`, `anchor_rows_of`).
    inputs: --inputs, a module file case's arguments.
  """

  config: Config
  case_source: str
  full_inputs: tuple
  anchors: bool = True
  inputs: str | None = None

  def run(self, memo: dict) -> ConfigRows:
    key = ("case", self.case_source, self.inputs)
    if key not in memo:  # the sweep's key: one case record per worker
      memo[key] = get_case(self.case_source, self.inputs)
    kept = memo.get(KEPT, {}).get(self.config)  # the sweep's compile
    kept = None if isinstance(kept, tuple) else kept  # a GPU's texts
    full = SweptCase.resolved_inputs(self.full_inputs)
    # The sweep's run of the config: (its inputs, its outputs).
    ran = memo.get(KEPT, {}).get((self.config, KEPT))
    same = ran is not None and SweptCase.same_inputs(ran[0], full)
    outputs = ran[1] if same else None
    large = ("large program", self.case_source, self.inputs)
    if self.anchors and large not in memo:  # traced once per worker
      memo[large] = CaseNumerics.large_program(memo[key], full)
    return rows_here(
      memo[key],
      full,
      self.config,
      self.anchors,
      kept,
      outputs,
      memo,
      memo.get(large, False),
    )


@dataclasses.dataclass(frozen=True)
class UserInputsRequest(Request):
  """A user case's full inputs (`Case.full_inputs`: its `make_inputs()`,
  checked), made in the worker that loaded the case: the sweep's
  `SweptCase.loader`, whose memo holds the `Case` under
  ("case", `source`), as `engine.shell.loaded_case` keeps it. The main
  process never runs a user case's code; the rows are then run on these
  inputs in the sweep's workers (`RowsRequest`).

  Made once per worker and kept (its memo), so every config of the case
  compares rows cut from the same inputs, even where `make_inputs` draws
  afresh on each call.

  Attributes:
    source: the case's words (`path/to/file.py:factory`,
      `package.module:factory`).
    search_path: the sweep process's `sys.path`; its entries the worker
      lacks go in front of its own (a worker other than the loader finds
      the case's module too).
    share_in: a folder the rows' pool shares (`WorkerPool.shared_folder`),
      or None: the large inputs are written there once and returned as
      a `SharedInputs` record (`SweptCase.shared_inputs`), not pickled;
      the kept inputs are then the files mapped (the same bytes).

  Raises (from `run`):
    CaseError: the case fails to load, `make_inputs` raised (its first
      line), or the inputs do not fit the batch axes.
  """

  source: str
  search_path: tuple[str, ...] = ()
  share_in: str | None = None

  def run(self, memo: dict):
    key = ("invariance inputs", self.source)
    if key not in memo:
      missing = [p for p in self.search_path if p not in sys.path]
      sys.path[:0] = missing
      loaded = ("case", self.source)  # `engine.shell.loaded_case`'s key
      if loaded not in memo:
        memo[loaded] = get_case(self.source)
      case = memo[loaded]
      with jax.default_device(jax.devices("cpu")[0]):
        try:
          memo[key] = case.full_inputs()
        except CaseError:
          raise
        except Exception as e:
          raise CaseError(
            f"case {case.name!r}: make_inputs() failed: {first_line(e)}"
          ) from None
    found = SweptCase.shared_inputs(memo[key], self.share_in)
    if found is not memo[key]:  # this worker keeps the files mapped
      memo[key] = SweptCase.resolved_inputs(found)
    return found
