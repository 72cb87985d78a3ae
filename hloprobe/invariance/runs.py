"""Running a config's rows in a worker: the sweep's inputs and the anchor
placed at each offset, on one compiled executable (`RowsRequest`).

The request is a `runtime.Request` (pickled whole to one of the sweep's
workers, the same `sweep.worker_pool` processes, with the config's
experiment XLA_FLAGS): it runs the executable the sweep's own compile of
the config left in that worker (`sweep.KEPT`), else compiles once; then
one run per input set. The anchor's batches (`anchor_inputs`) keep every shared argument
and change only the batched ones.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np

from hloprobe.compile import Case, compile_case, get_case
from hloprobe.engine import KEPT, SweptCase
from hloprobe.errors import CaseError, first_line
from hloprobe.invariance.rows import ConfigRows, anchor_offsets, row_of
from hloprobe.records import Config
from hloprobe.runtime import Request

__all__ = [
  "RowsRequest",
  "UserInputsRequest",
  "anchor_inputs",
  "anchor_rows_of",
  "rows_here",
]

# The draw of the anchor's companions (fixed: the same batches every run).
_SEED = 38


def anchor_inputs(case: Case, full: tuple, n: int, offset: int) -> tuple:
  """The arguments of a batch of n with the anchor at `offset`.

  The anchor is the full inputs' last row (index N - 1 of N); the other
  n - 1 rows are the first n - 1 of a fixed permutation of rows 0 .. N - 2
  (seed 38), so they differ from the sweep's prefix rows and from n to n.
  Every batched argument is cut alike (a row is a row of each); shared
  arguments pass unchanged.

  Raises:
    CaseError: the case is sized (no rows), or n exceeds its rows.
    ValueError: `offset` is not in [0, n).
  """
  size = case.full_size(full)
  if n > size:
    case.inputs_for(full, n)  # raises its own CaseError
  if not 0 <= offset < n:
    raise ValueError(f"anchor offset {offset} outside a batch of {n}")
  others = np.random.default_rng(_SEED).permutation(max(size - 1, 0))
  others = list(others[: n - 1]) if size > 1 else [0] * (n - 1)
  index = np.array(others[:offset] + [size - 1] + others[offset:])
  out = []
  for arg, axis in zip(full, case.arg_axes(len(full))):
    if axis is not None:
      arg = jax.tree_util.tree_map(
        lambda a, ax=axis: np.take(np.asarray(a), index, axis=ax), arg
      )
    out.append(arg)
  return tuple(out)


def anchor_rows_of(
  case: Case, full: tuple, n: int, run
) -> tuple[tuple[np.ndarray, ...], ...]:
  """The anchor row at each offset of `anchor_offsets(n)`: `run(args)`
  gives the output leaves of one batch (each offset run once)."""
  found: dict[int, tuple[np.ndarray, ...]] = {}
  for offset in anchor_offsets(n):
    if offset not in found:
      leaves = run(anchor_inputs(case, full, n, offset))
      axes = case.output_axes([np.shape(x) for x in leaves])
      found[offset] = row_of(leaves, axes, offset)
  return tuple(found[o] for o in anchor_offsets(n))


def rows_here(
  case: Case,
  full: tuple,
  config: Config,
  anchors: bool = True,
  compiled=None,
  outputs: tuple | None = None,
) -> ConfigRows:
  """Compiles config `config` of `case` once (or takes `compiled`, the
  sweep's own executable of it) and runs it on the sweep's inputs (row 0;
  or takes `outputs`, the output leaves the sweep's run of `compiled` on
  them gave, kept under (config, `engine.KEPT`)) and, with `anchors`, on
  the anchor's batches.

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
  anchor = anchor_rows_of(case, full, config.n, run) if anchors else ()
  return ConfigRows(config.n, row_of(leaves, axes, 0), anchor, names)


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
    anchors: also place the anchor at each offset.
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
    return rows_here(memo[key], full, self.config, self.anchors, kept, outputs)


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
