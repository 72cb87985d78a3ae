"""A case's full inputs shared by the processes of a sweep, not copied.

A sweep's processes each used their own copy of a case's full inputs: the
process that made them (the case's worker, or this one for a built-in
case), this one (which sent them on), and every compile worker, each
request carrying them pickled (the pickle, the bytes read and the arrays
made of them: three copies at once in the worker while it unpickles). A
GPT-2-small-shaped stack of 12 layers has 340 MB of f32 weights, so the
copies alone passed the memory a shared machine allows (issue 37).

`share` writes each large array leaf (`SHARE_FROM_BYTES` or more) once,
as a .npy file in a folder of the sweep's local worker pool
(`WorkerPool.shared_folder`), and gives a small record (`SharedInputs`)
that the requests carry instead; `resolved` maps the files read-only
(`np.load(mmap_mode="r")`), once per process and folder, so that every
process reads the same pages of the page cache. The values are the very
bytes made (a case whose `make_inputs` is not deterministic is still
compiled, run and judged on one set of inputs). Inputs with no large leaf
(most built-in cases; not jax#21212's bfloat16 one) are passed as they
are.

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import threading

import jax
import numpy as np

__all__ = [
  "SHARE_FROM_BYTES",
  "any_large",
  "SharedInputs",
  "resolved",
  "shapes",
  "share",
]

# Array leaves of at least this many bytes are written to a file and
# mapped; smaller ones travel in the record, pickled.
SHARE_FROM_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class _Stored:
  """A leaf written to `SharedInputs.folder` as `name`: a .npy file of its
  bytes (uint8, flat: .npy cannot name ml_dtypes' types, which it writes
  as void '|V2'), read back as `dtype` and `shape`."""

  name: str
  shape: tuple[int, ...]
  dtype: np.dtype

  @property
  def ndim(self) -> int:
    return len(self.shape)


@dataclasses.dataclass(frozen=True, slots=True)
class SharedInputs:
  """A case's full inputs as files of a folder (see the module docstring).

  Attributes:
    folder: where the .npy files are.
    skeleton: the inputs (a tuple of pytrees) with each large array leaf
      replaced by the file it was written to.
  """

  folder: str
  skeleton: tuple


# This process's mapped files by path (a worker's, for its life; files
# are named by their contents, so a path always holds the same array).
_MAPPED: dict[str, np.ndarray] = {}
_LOCK = threading.Lock()


def _is_large(leaf) -> bool:
  return (
    isinstance(leaf, np.ndarray)
    and leaf.dtype != object
    and leaf.nbytes >= SHARE_FROM_BYTES
  )


def any_large(full) -> bool:
  """Whether `share` would write some leaf of `full` (arrays, not yet a
  `SharedInputs`)."""
  if full is None or isinstance(full, SharedInputs):
    return False
  return any(_is_large(x) for x in jax.tree_util.tree_leaves(full))


def share(full: tuple | None, folder: str | None):
  """`full` with its large array leaves written to `folder` once
  (`SharedInputs`); `full` itself where `folder` is None, `full` is None
  or no leaf is large.

  Each file is written whole or not at all (a temporary name, then
  renamed); its name is the leaf's sha256, so the same inputs shared again
  (a later sweep of the case) write nothing new.

  Raises:
    OSError: the folder cannot be written (the caller may send `full`).
  """
  if folder is None or not any_large(full):
    return full

  def stored(leaf):
    if not _is_large(leaf):
      return leaf
    data = np.ascontiguousarray(leaf)
    digest = hashlib.sha256(f"{data.dtype.name}{data.shape}".encode())
    # Its bytes as uint8: a memoryview of an ml_dtypes array (bfloat16's
    # format 'E') cannot be cast.
    digest.update(data.reshape(-1).view(np.uint8))
    name = f"inputs-{digest.hexdigest()[:40]}.npy"
    path = os.path.join(folder, name)
    if not os.path.exists(path):
      part = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
      with open(part, "wb") as f:
        np.save(f, data.reshape(-1).view(np.uint8), allow_pickle=False)
      os.replace(part, path)
    return _Stored(name, tuple(data.shape), data.dtype)

  return SharedInputs(folder, jax.tree_util.tree_map(stored, full))


def resolved(full):
  """The inputs `full` stands for: a `SharedInputs`' files mapped
  read-only (each file once per process: later calls share the arrays),
  anything else as it is.

  Raises:
    OSError, ValueError: a file is gone or is not the leaf written.
  """
  if not isinstance(full, SharedInputs):
    return full

  def load(leaf):
    if not isinstance(leaf, _Stored):
      return leaf
    path = os.path.join(full.folder, leaf.name)
    with _LOCK:
      array = _MAPPED.get(path)
      if array is None:
        raw = np.load(path, mmap_mode="r", allow_pickle=False)
        size = math.prod(leaf.shape) * leaf.dtype.itemsize
        if raw.dtype != np.uint8 or raw.shape != (size,):
          raise ValueError(
            f"shared input {path} holds {raw.dtype}{list(raw.shape)}, not "
            f"the {leaf.dtype}{list(leaf.shape)} written ({size} bytes)"
          )
        # A plain array over the mapping, as the leaf's type and shape.
        array = raw.view(np.ndarray).view(leaf.dtype).reshape(leaf.shape)
        _MAPPED[path] = array
    return array

  return tuple(jax.tree_util.tree_map(load, full.skeleton))


def shapes(full):
  """`full` for what needs its leaves' shapes only (`Case.full_size`):
  a `SharedInputs`' skeleton (its stored leaves have `shape`), mapping
  nothing in this process; anything else as it is."""
  return full.skeleton if isinstance(full, SharedInputs) else full
