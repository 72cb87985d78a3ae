"""Writes reference.json: MMA-Sim's documented `mma` model, computed exactly.

Source: microsoft/MMA-Sim, package `mmasim` 2.1.1 (PyPI), the model of
`mmasim/nv_ptx/sim.py` (class MMA: F, L_max, e_zero per architecture) and
`mmasim/arithmetic/fdpa.py` (`t_fdpa`, `truncated_fused_sum`,
`ldexp_and_normalize` with "RZ-FP32"); paper arXiv:2511.10909. The package
itself needs PyTorch, which this project does not install (PyTorch's CPU
index was unreachable here; PyPI's wheel is the CUDA build), so this script
restates the documented model in exact rational arithmetic (fractions),
one element at a time, independent of hloprobe/numerics/kernel_model.py's
numpy code. Run: python tests/testdata/mmasim/make_reference.py
"""

import fractions
import json
import math
import pathlib

import ml_dtypes
import numpy as np

# arch: (F, L_max bytes, e_zero); mmasim 2.1.1 nv_ptx/sim.py.
ARCH = {"Ampere": (24, 16, -132), "Hopper": (25, 32, -133)}
SM = {"Ampere": 80, "Hopper": 90}
# operand: (dtype, bytes, least normal exponent); mmasim helper.py.
OPERAND = {
  "tf32": (np.float32, 4, -126),
  "bf16": (ml_dtypes.bfloat16, 2, -126),
  "f16": (np.float16, 2, -14),
}
SHAPES = [
  ("m16n8k8", "tf32"),
  ("m16n8k4", "tf32"),
  ("m16n8k16", "bf16"),
  ("m16n8k8", "bf16"),
  ("m16n8k16", "f16"),
  ("m16n8k8", "f16"),
]
F = fractions.Fraction


def exponent(x: F, least: int) -> int:
  """floor(log2 |x|), at least `least`; x != 0."""
  n, d = abs(x.numerator), x.denominator
  e = n.bit_length() - d.bit_length()
  if F(n, d) < F(2) ** e:
    e -= 1
  return max(e, least)


def trunc_to(x: F, quantum: F) -> F:
  return F(math.trunc(x / quantum)) * quantum


def fdpa(a, b, c, fbits, e_zero, least):
  terms = [(F(float(x)) * F(float(y)), None) for x, y in zip(a, b)]
  exps = []
  for (t, _), x, y in zip(terms, a, b):
    if t == 0:
      exps.append(e_zero)
    else:
      exps.append(exponent(F(float(x)), least) + exponent(F(float(y)), least))
  cf = F(float(c))
  exps.append(e_zero if cf == 0 else exponent(cf, -126))
  values = [t for t, _ in terms] + [cf]
  e_max = max(exps)
  total = sum(trunc_to(v, F(2) ** (e_max - fbits)) for v in values)
  if total == 0:
    return np.float32(0.0)
  e = exponent(total, -126)
  return np.float32(float(trunc_to(total, F(2) ** (e - 23))))


def element(a, b, c, arch, operand):
  fbits, group_bytes, e_zero = ARCH[arch]
  dtype, size, least = OPERAND[operand]
  if operand == "tf32":  # the instruction ignores the low 13 bits
    cut = lambda v: (
      np.asarray(v, np.float32).view(np.uint32) & 0xFFFFE000
    ).view(np.float32)
    a, b = cut(a), cut(b)
  group = min(group_bytes // size, len(a))
  for i in range(0, len(a), group):
    c = fdpa(a[i : i + group], b[i : i + group], c, fbits, e_zero, least)
  return c


def inputs(rng, k, operand):
  dtype = OPERAND[operand][0]
  m, n = 16, 8
  a = rng.standard_normal((m, k)) * 2.0 ** rng.integers(-12, 12, (m, k))
  b = rng.standard_normal((k, n)) * 2.0 ** rng.integers(-12, 12, (k, n))
  c = rng.standard_normal((m, n)) * 2.0 ** rng.integers(-8, 20, (m, n))
  a[0, :] = 0.0  # zero products
  c[1, :] = 0.0
  a[2, 0] = 2.0 ** (OPERAND[operand][2] - 3)  # a subnormal operand
  c[3, :] = -(a[3] @ b)  # cancellation
  return a.astype(dtype), b.astype(dtype), c.astype(np.float32)


def main():
  rng = np.random.default_rng(28)
  cases = []
  for arch in ARCH:
    for shape, operand in SHAPES:
      k = int(shape.rsplit("k", 1)[1])
      a, b, c = inputs(rng, k, operand)
      d = np.array(
        [
          [element(a[i], b[:, j], c[i, j], arch, operand) for j in range(8)]
          for i in range(16)
        ],
        np.float32,
      )
      hexes = lambda x: [
        f"{v:08x}" for v in np.asarray(x, np.float32).view(np.uint32).ravel()
      ]
      cases.append(
        {
          "opcode": f"mma.sync.aligned.{shape}.row.col.f32.{operand}.{operand}.f32",
          "arch": arch,
          "sm": SM[arch],
          "k": k,
          "a_f32_hex": hexes(a.astype(np.float32)),
          "b_f32_hex": hexes(b.astype(np.float32)),
          "c_f32_hex": hexes(c),
          "d_f32_hex": hexes(d),
        }
      )
  out = pathlib.Path(__file__).with_name("reference.json")
  out.write_text(
    json.dumps({"source": __doc__.splitlines()[0], "cases": cases}, indent=1)
    + "\n"
  )


if __name__ == "__main__":
  main()
