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
import re
from collections.abc import Callable, Sequence

from hloprobe.records import ConfigResult
from hloprobe.sites import Fate, SiteFate

__all__ = ["KernelReader", "RowKernel", "site_kernels", "signature_key"]


@dataclasses.dataclass(frozen=True, slots=True)
class RowKernel:
  """One kernel that computes (part of) a row, and its per-row arithmetic.

  Attributes:
    name: the kernel's name: the fusion or custom call in the optimized
      HLO, or "site N" where only the site is known.
    kind: "gemm", "cuBLAS", "reduction", "elementwise", "collective", ...
    sites: the contraction sites it computes (() for none).
    signature: what decides a row's bits, normalised for the row count
      (equal signatures across batch sizes: the same bits for a row); None
      when not known (`why_unknown`).
    words: the per-row arithmetic in words, e.g. "Triton gemm TF32_TF32_F32,
      block_k 32, split-K 2".
    why_unknown: why `signature` is None, one line; else None.
  """

  name: str
  kind: str
  sites: tuple[int, ...]
  signature: str | None
  words: str
  why_unknown: str | None = None


# The interface of the `hloprobe.kernels` stage: a config's row kernels.
KernelReader = Callable[[ConfigResult], Sequence[RowKernel]]

# What the fates alone cannot read on a GPU (the reductions' emitters).
_NO_REDUCTIONS = (
  "reductions and other fusions not read (the kernels stage, "
  "hloprobe.kernels, reads their emitter and tiling)"
)
# HLO ops whose result mixes elements in an order a kernel chooses.
_REDUCING = re.compile(
  r"\b(reduce-window|reduce-scatter|all-reduce|reduce|scatter|sort)\("
)
_CUBLAS = (
  "chosen by the library's per-shape heuristic at run time: unknown "
  "without a device"
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
    return RowKernel(
      name, "cuBLAS", (i,), None, f"{f.fate.value}: {_CUBLAS}", _CUBLAS
    )
  if f.fate == Fate.TRITON_GEMM:
    block_k = _block_k(f.gemm_config)
    split = f.split_k or 1
    sig = f"triton {algorithm} block_k={block_k} split_k={split}"
    sig += f" {f.algorithm_evidence or ''}"
    words = f"Triton gemm {algorithm}, block_k {block_k}, split-K {split}"
    if block_k is None:
      return RowKernel(
        name, "gemm", (i,), None, words, "the gemm's block_k not read"
      )
    return RowKernel(name, "gemm", (i,), sig, words)
  words = f"{f.fate.value} {algorithm}"
  if f.fate in (Fate.MULTIPLY, Fate.GONE):
    return RowKernel(name, "elementwise", (i,), f.fate.value, words)
  return RowKernel(
    name,
    "reduction" if f.fate == Fate.MULTIPLY_REDUCE else f.fate.value,
    (i,),
    None,
    words,
    f"a {f.fate.value}'s order on the GPU not read: {_NO_REDUCTIONS}",
  )


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
  why = f"{', '.join(ops)} in the optimized HLO: {_NO_REDUCTIONS}"
  return found + (RowKernel("other kernels", "reduction", (), None, why, why),)


def signature_key(kernels: Sequence[RowKernel]) -> tuple[str | None, ...]:
  """The config's kernel identity: every kernel's signature, in order."""
  return tuple(k.signature for k in kernels)
