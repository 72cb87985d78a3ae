"""The native toolchain around XLA: which ptxas builds GPU kernels, and
what XLA and the CUDA plugin write to the process's stderr.

ptxas. XLA turns each GPU kernel's PTX into a cubin by running a `ptxas`
subprocess. hloprobe passes `xla_gpu_cuda_data_dir` explicitly with every
GPU compile, pointing at the `nvidia-cuda-nvcc-cu12` wheel (a CUDA 12 ptxas
the project pins), and `find_ptxas` repeats XLA's search to say which ptxas
that compile used. The rule, checked on jaxlib 0.10.2 and 0.12.0.1:

* openxla/xla xla/stream_executor/cuda/subprocess_compilation.cc,
  `FindPtxAsExecutable` -> `FindCudaExecutable`: candidates are
  `<xla_gpu_cuda_data_dir>/bin/ptxas`, then each `$PATH` entry (because
  `tsl::PreferPtxasFromPath()` is true), then `CandidateCudaRoots()`
  (xla/tsl/platform/default/cuda_root_path.cc: /usr/local/cuda, /opt/cuda,
  the wheel's nvidia/cuda_nvcc beside the plugin, ...); the first one whose
  `--version` parses and is >= 11.8 and not 12.3.103 wins. The GPU
  architecture is not considered, so a CUDA 13 ptxas found first fails
  for sm_70 ("ptxas too old").
* jax/_src/compiler.py `get_compile_options` sets `xla_gpu_cuda_data_dir`
  to `jax._src.lib.cuda_path` (CUDA_ROOT, else the nvidia.cu13 or
  nvidia.cuda_nvcc package); `Lowered.compile(compiler_options=...)`
  overrides it, which is how hloprobe pins the wheel.

Native stderr (what XLA and the CUDA plugin write to file descriptor 2) is
`hloprobe.startup`'s, a package that imports no JAX.

Imports no JAX.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import re
import subprocess

__all__ = [
  "Ptxas",
  "find_ptxas",
  "nvcc_wheel_dir",
  "ptxas_version",
]

_MIN_VERSION = (11, 8, 0)
_EXCLUDED_VERSIONS = ((12, 3, 103),)
_VERSION_RE = re.compile(r"\bV(\d+)\.(\d+)\.(\d+)\b")
# Roots XLA's CandidateCudaRoots() adds that exist outside Bazel runfiles.
_CANDIDATE_ROOTS = ("/usr/local/cuda", "/opt/cuda")


@dataclasses.dataclass(frozen=True, slots=True)
class Ptxas:
  """The ptxas a GPU compile uses.

  Attributes:
    path: the executable, e.g. ".../site-packages/nvidia/cuda_nvcc/bin/ptxas".
    version: "12.9.86"-style CUDA release of that ptxas.
    source: why XLA picks it: "xla_gpu_cuda_data_dir", "PATH" or "CUDA root".
  """

  path: str
  version: str
  source: str

  def __str__(self) -> str:
    return f"{self.path} (CUDA {self.version}, via {self.source})"


def nvcc_wheel_dir() -> str | None:
  """The `nvidia-cuda-nvcc-cu12` wheel's root (holding bin/ptxas), or None."""
  try:
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
  except (ImportError, ValueError):
    return None
  for root in (spec and spec.submodule_search_locations) or ():
    if os.path.exists(os.path.join(root, "bin", "ptxas")):
      return root
  return None


@functools.cache
def ptxas_version(path: str) -> tuple[int, int, int] | None:
  """`path --version` as (major, minor, patch), or None if it does not run."""
  if not os.path.isfile(path):
    return None
  try:
    out = subprocess.run(
      [path, "--version"],
      capture_output=True,
      text=True,
      timeout=30,
      check=False,
    ).stdout
  except (OSError, subprocess.SubprocessError):
    return None
  m = _VERSION_RE.search(out)
  return tuple(int(g) for g in m.groups()) if m else None


def _candidates(
  cuda_data_dir: str | None, search_path: str, roots: tuple[str, ...]
) -> list[tuple[str, str]]:
  out = []
  if cuda_data_dir:
    out.append(
      (os.path.join(cuda_data_dir, "bin", "ptxas"), "xla_gpu_cuda_data_dir")
    )
  for entry in search_path.split(os.pathsep):
    if entry:
      out.append((os.path.join(entry, "ptxas"), "PATH"))
  for root in roots:
    out.append((os.path.join(root, "bin", "ptxas"), "CUDA root"))
  return out


def find_ptxas(
  cuda_data_dir: str | None,
  search_path: str | None = None,
  roots: tuple[str, ...] | None = None,
) -> Ptxas | None:
  """The ptxas XLA picks for a compile with this `xla_gpu_cuda_data_dir`.

  Follows `FindCudaExecutable` (see the module docstring).

  Args:
    cuda_data_dir: the `xla_gpu_cuda_data_dir` of the compile, or None.
    search_path: a PATH-style list; None means this process's $PATH, which
      is what XLA reads.
    roots: the CUDA roots XLA tries last; None means /usr/local/cuda,
      /opt/cuda and the nvidia-cuda-nvcc-cu12 wheel.

  Returns:
    The first qualifying ptxas, or None when none does (XLA then fails
    every GPU kernel build).
  """
  if search_path is None:
    search_path = os.environ.get("PATH", "")
  if roots is None:
    roots = _CANDIDATE_ROOTS + tuple(filter(None, [nvcc_wheel_dir()]))
  for path, source in _candidates(cuda_data_dir, search_path, roots):
    version = ptxas_version(path)
    if (
      version is None or version < _MIN_VERSION or version in _EXCLUDED_VERSIONS
    ):
      continue
    return Ptxas(path, ".".join(map(str, version)), source)
  return None
