"""The analytic error band of one contraction site at one algorithm.

Per algorithm, the unit roundoff of its operands and of its accumulator,
and from them and a site's operand scale (|A||B|, `emulate`'s site scales)
a deterministic bound and a probabilistic size of the site's own error
(`SiteBand`).

A convolution site has the same band: each output sums K products of an
input and a kernel value (K = kernel input features x window elements,
`StableHloDot.contracting_size`), and its |A||B| is the convolution of
|input| and |kernel|. Taps that fall on padding are zero terms: K counts
them, so the band is an upper bound there too. An algorithm cuDNN runs by
a transform (Winograd, FFT) is not a K-term sum and is not bounded here.

A cuDNN fused attention site's band is not analytic: it is measured on
the site's own operands over the flash-attention kernel variants
(`attention_band`, `emulate_attention.attention_band`) and comes in the
same `SiteBand` record (its operand scale P|V|, its K the head dim).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
  "ACCUMULATION_UNIT",
  "F32_UNIT",
  "OPERAND_UNIT",
  "SiteBand",
  "gamma",
  "site_band",
]

# Relative error of one operand as the algorithm stores it (unit roundoff of
# the operand type; for the splits, of the sum of the parts), and the
# accumulator's unit roundoff. TF32 keeps 10 explicit mantissa bits (2^-11),
# BF16 7 (2^-8); a 3-part BF16 split (X3 keeps hi*hi, hi*mid, mid*hi and
# drops terms of order 2^-16) and a 2-part TF32 split (2^-22); X6/X9 and F32
# are at f32 level. Sources: the operand formats (IEEE 754; NVIDIA's TF32),
# the split algorithms as XLA's Triton emitter builds them (see
# emulate_dot), checked on jaxlib 0.10.2.
OPERAND_UNIT = {
  "F32_F32_F32": 0.0,
  "TF32_TF32_F32": 2.0**-11,
  # TF32 operands truncated (a TF32 mma with no cvt.rna.tf32.f32,
  # `emulate_dot.TF32_TRUNCATED`): a whole unit of the 10-bit mantissa.
  "TF32_TRUNCATED_F32": 2.0**-10,
  "TF32_TF32_F32_X3": 2.0**-22,
  "BF16_BF16_F32": 2.0**-8,
  "BF16_BF16_F32_X3": 2.0**-16,
  "BF16_BF16_F32_X6": 2.0**-24,
  "BF16_BF16_F32_X9": 2.0**-24,
  "F16_F16_F32": 2.0**-11,
  "F64_F64_F64": 0.0,
  # 16-bit arithmetic without tensor cores (emulate_dot `_SIXTEEN_BIT`): a
  # product rounded once to 16 bits errs by u, as two operands rounded by
  # u/2 each; 16-bit sums accumulate with the 16-bit unit.
  "BF16_PRODUCTS_F32": 2.0**-9,
  "BF16_PRODUCTS_BF16": 2.0**-9,
  "F16_PRODUCTS_F32": 2.0**-12,
  "F16_PRODUCTS_F16": 2.0**-12,
  "BF16_BF16_BF16": 2.0**-8,
  "F16_F16_F16": 2.0**-11,
}
ACCUMULATION_UNIT = {
  "F64_F64_F64": 2.0**-53,
  "BF16_PRODUCTS_BF16": 2.0**-8,
  "BF16_BF16_BF16": 2.0**-8,
  "F16_PRODUCTS_F16": 2.0**-11,
  "F16_F16_F16": 2.0**-11,
}
F32_UNIT = 2.0**-24


@dataclasses.dataclass(frozen=True, slots=True)
class SiteBand:
  """The analytic error band of one dot site's own output.

  Attributes:
    site: dot site index.
    algorithm: the algorithm the band is for.
    K: contraction size.
    worst_abs: deterministic bound (2u + u^2 + gamma_K) * max(|A||B|), where
      u is the operand unit (`OPERAND_UNIT`) and gamma_K = K u_acc /
      (1 - K u_acc) (Higham, Accuracy and Stability of Numerical Algorithms,
      2nd ed., Lemma 3.1 and eq. 3.5, with the operand roundings as extra
      (1 + delta) factors): no deviation above it can come from this
      algorithm at this site. Output units.
    expected_abs: probabilistic size (u sqrt(2/(3K)) + u_acc sqrt(K/3)) *
      rms(|A||B|): independent roundings uniform in [-u, u] summed over K
      terms of similar size (the sqrt(K) growth of Higham and Mary, SIAM J.
      Sci. Comput. 41(5), 2019). An order of magnitude, not a bound.
    operand_scale_max, operand_scale_rms: max and rms over the site's output
      of (|A||B|)_ij = sum_k |a_ik| |b_kj|, at F32.
  """

  site: int
  algorithm: str
  K: int
  worst_abs: float
  expected_abs: float
  operand_scale_max: float
  operand_scale_rms: float


def gamma(k: int, unit: float) -> float:
  """Higham's gamma_K = K u / (1 - K u): the relative error bound of a sum
  of K terms in arithmetic of unit roundoff u (inf where K u >= 1).
  Source: Higham, Accuracy and Stability of Numerical Algorithms, 2nd
  ed., Lemma 3.1 and eq. 3.5."""
  return k * unit / (1 - k * unit) if k * unit < 1 else float("inf")


def site_band(
  site: int, algorithm: str, k: int, scale_max: float, scale_rms: float
) -> SiteBand:
  """The analytic band of a site (see `SiteBand`).

  Raises:
    KeyError: an algorithm without a known operand unit.
  """
  u_in = OPERAND_UNIT[algorithm]
  u_acc = ACCUMULATION_UNIT.get(algorithm, F32_UNIT)
  worst = (2 * u_in + u_in**2 + gamma(k, u_acc)) * scale_max
  expected = (u_in * np.sqrt(2 / (3 * k)) + u_acc * np.sqrt(k / 3)) * scale_rms
  return SiteBand(
    site,
    algorithm,
    k,
    float(worst),
    float(expected),
    float(scale_max),
    float(scale_rms),
  )
