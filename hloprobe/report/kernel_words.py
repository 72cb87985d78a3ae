"""The kernel model's findings in words: the one place these sentences are
made (issue 36: words only at the edge).

`numerics.site_model` reads whether a site's prediction is a "bit-exact
model" or a "band", and why (`KernelSite`: its band reason, fate, mma
opcodes, sm, algorithm, split-K); `kernel_site_words` says so in one line,
e.g. "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 on Ampere
(MMA-Sim), K in k8 steps" or "cuBLAS: kernel arithmetic not modelled".

`numerics.kernel_remainder` measures what is left between the kernel
model's row 0 and a GPU's, and how far the band sites' f32 order and the
elementwise functions' last ulp move it (`KernelRemainder`: numbers and
site indices); `remainder_lines` says so, e.g. "kernel model row 0
0.0819783 vs observed 0.0819783: +2.2e-08 (+3.0 f32 ulps) left; sites
[0, 1, 2] bit-exact model, sites [3] band".

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

__all__ = ["kernel_site_words", "remainder_lines"]


# Each `numerics.Band` (by name: the face does not carry the enum) -> the
# words of a site that band holds, from its `KernelSite` fields.
_BAND_WORDS = {
  "NOT_TRITON": lambda m: f"{m.fate}: kernel arithmetic not modelled",
  "EXACT_INTEGER": lambda m: (
    f"{m.fate}: exact integer, any kernel's order gives its bits"
  ),
  "NOT_ONE_MMA": lambda m: (
    f"{m.fate}: {', '.join(m.opcodes) or 'no mma in the PTX'}"
  ),
  "NO_COMPUTE_CAPABILITY": lambda m: f"{m.fate}: compute capability unknown",
  "MMA_NOT_MODELLED": lambda m: (
    f"{m.fate}: {m.opcodes[0]} on sm_{m.sm or '?'} not modelled"
  ),
  "NO_ALGORITHM": lambda m: (
    f"{m.fate}: no effective algorithm to hold the kernel to"
  ),
  "NOT_ONE_PASS": lambda m: (
    f"{m.fate}: {m.algorithm} is not one {m.operand} pass"
  ),
  "SPLIT_K": lambda m: (
    f"{m.fate} split-K {m.split_k}: the reduce's f32 order not modelled"
  ),
}


def kernel_site_words(m) -> str:
  """A `numerics.KernelSite` in one line: the instruction and split-K of a
  bit-exact model, or why it is a band.

  Raises:
    ValueError: a `numerics.Band` this function has no words for.
  """
  if m.band is None:
    return (
      f"{m.opcodes[0]} on {m.ins.arch} (MMA-Sim), K in k{m.ins.k} steps"
      + (f", split-K {m.split_k}" if m.split_k > 1 else "")
    )
  words = _BAND_WORDS.get(m.band.name)
  if words is None:
    raise ValueError(f"no words for a band of kind {m.band.name!r}")
  return words(m)


def remainder_lines(r) -> list[str]:
  """A `numerics.KernelRemainder` in four lines: the prediction against
  the observation, the band sites' spread over f32 orders, the
  elementwise functions' one-ulp sensitivity, and whether they cover what
  is left."""
  left, ulp = r.left, r.ulp
  exact, band = list(r.exact), list(r.band)
  return [
    f"kernel model row 0 {r.predicted:.9g} vs observed {r.observed:.9g}: "
    f"{left:+.3g} ({left / ulp:+.1f} f32 ulps) left; sites {exact} "
    f"bit-exact model, sites {band} band",
    f"band sites {band} over f32 orders {', '.join(r.orders)}: "
    f"row 0 spans {r.spread:.3g} ({r.spread / ulp:.1f} ulps)",
    "elementwise functions (exp, sin, ...: the GPU's libdevice in the "
    "gemm prologues vs XLA:CPU's), each one ulp off: row 0 moves "
    f"{r.up:+.3g} / {r.down:+.3g} "
    f"({r.up / ulp:+.1f} / {r.down / ulp:+.1f} ulps)",
    "the remainder is "
    + ("within" if r.covered else "beyond")
    + " what the band sites' order and the elementwise functions' ulp move: "
    + ("consistent with bit-exact gemms" if r.covered else "unexplained"),
  ]
