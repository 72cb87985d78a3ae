"""The kernel model's findings in words: the one place these sentences are
made (issue 36: words only at the edge).

`numerics.kernel_remainder` measures what is left between the kernel
model's row 0 and a GPU's, and how far the band sites' f32 order and the
elementwise functions' last ulp move it (`KernelRemainder`: numbers and
site indices); `remainder_lines` says so, e.g. "kernel model row 0
0.0819783 vs observed 0.0819783: +2.2e-08 (+3.0 f32 ulps) left; sites
[0, 1, 2] bit-exact model, sites [3] band".

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

__all__ = ["remainder_lines"]


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
