"""End-to-end tests of the HLO executor on recorded modules (no JAX runs).

Expected values come from numpy float64 evaluations of the programs and
from first-order f32 error bounds computed here by hand (Higham's gamma_K
for a K-term dot, a few units of roundoff per elementwise op), never from
hloprobe's own emulation.
"""

from __future__ import annotations

import os

import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.errors import ExecutionError
from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

_TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")
_SHARED = os.path.join(os.path.dirname(__file__), os.pardir, "testdata")
_SEED_INPUTS = os.path.join(_SHARED, "seed_mlp_inputs.npz")
_COMPILES = os.path.join(_SHARED, "compiles")
_U32 = 2.0**-24  # f32 unit roundoff
_U_TF32 = 2.0**-11  # TF32 operand rounding (10 explicit bits)
_ALPHA32 = float(np.float32(0.1))  # the f32 constant 0.1 of the program
# How far two evaluations of the seed MLP that differ only at the f32
# level (sum order, transcendental rounding) may drift apart: its worst-
# case first-order bound (`_Seed.reference_and_bound`) is loose (~0.7:
# |W| sums and sin(16 z)'s slope), the F32 runs here stray 1.2e-4 from
# float64; 1e-3 leaves room and is 500 times below TF32's move of row 0.
_F32_LEVEL = 1e-3


def _text(name: str) -> str:
  with open(os.path.join(_TESTDATA, name), encoding="utf-8") as f:
    return f.read()


def _gamma(k: int, u: float = _U32) -> float:
  return k * u / (1 - k * u)


def _tf32_rna(x: np.ndarray) -> np.ndarray:
  """x (f32-rounded first) to 11 significant bits, ties away from zero
  (PTX cvt.rna.tf32.f32), by frexp: written apart from the executor's
  bit arithmetic."""
  x = x.astype(np.float32).astype(np.float64)
  m, e = np.frexp(x)
  kept = np.sign(m) * np.floor(np.abs(m) * 2.0**11 + 0.5)
  return np.ldexp(kept, e - 11)


def _scaled_dense_inputs(n: int):
  """Issue 23's `inputs()` (numpy only), cut to n rows."""
  g = np.random.default_rng(0)
  b = g.standard_normal((9, 15)).astype(np.float32)
  a = g.standard_normal((32, 15)).astype(np.float32)
  bias = (100 * g.standard_normal(32)).astype(np.float32)
  return b[:n], a, bias


def _scaled_dense_bound(b, a, bias) -> np.ndarray:
  """An f32 bound for 0.1 * (a @ row + bias) computed either way round:
  a 15-term dot, a bias add and a scaling, each rounded, doubled."""
  magnitude = np.abs(b.astype(np.float64)) @ np.abs(a.T.astype(np.float64))
  return 2 * _gamma(a.shape[1] + 3) * (magnitude + np.abs(bias))


class _Seed:
  """The seed MLP's inputs, its float64 value and first-order bounds."""

  def __init__(self, n: int):
    d = np.load(_SEED_INPUTS)
    self.x = d["xy"][:n]
    self.params = {k: d[k] for k in d.files if k != "xy"}
    names = ("w0", "w1", "w2", "w3", "b0", "b1", "b2", "b3")
    names += ("g0", "g1", "g2", "m0", "m1", "m2")
    self.arguments = [self.x] + [self.params[k] for k in names]

  def tf32_value(self) -> np.ndarray:
    """The MLP in float64 with the operands of its three 48-wide gemms
    rounded to TF32 (`_tf32_rna`); the last, 1x48 dot is a multiply and a
    reduce in the recorded modules (`%fused_reduce`), which no TF32 path
    rounds."""
    p = {k: v.astype(np.float64) for k, v in self.params.items()}
    h = self.x.astype(np.float64)
    for i in range(3):
      z = _tf32_rna(h) @ _tf32_rna(p[f"w{i}"]).T + p[f"b{i}"]
      e = np.exp(-(p[f"g{i}"] ** 2) * (z - p[f"m{i}"]) ** 2)
      h = e * np.sin(16 * z)
    return (h @ p["w3"].T + p["b3"]).mean(axis=1)

  def reference_and_bound(self, operand_u: float = 0.0):
    """(float64 value, error bound) of the MLP in f32, with each dot's
    operands rounded by a relative `operand_u` (0: f32 operands)."""
    p = {k: v.astype(np.float64) for k, v in self.params.items()}
    h, err = self.x.astype(np.float64), np.zeros(self.x.shape)
    for i in range(3):
      w = p[f"w{i}"]
      z = h @ w.T + p[f"b{i}"]
      k = w.shape[1] + 1
      mag = np.abs(h) @ np.abs(w.T) + np.abs(p[f"b{i}"])
      dz = err @ np.abs(w.T) + (_gamma(k) + 2 * operand_u) * mag
      g2, d = p[f"g{i}"] ** 2, z - p[f"m{i}"]
      e, s = np.exp(-g2 * d * d), np.sin(16 * z)
      slope = np.abs(e * (-2 * g2 * d * s + 16 * np.cos(16 * z)))
      t = g2 * d * d
      h = e * s
      err = slope * dz + e * _U32 * (5 * t + 9 + 16 * 16 * np.abs(z))
    w = p["w3"]
    y = (h @ w.T + p["b3"]).mean(axis=1)
    mag = np.abs(h) @ np.abs(w.T) + np.abs(p["b3"])
    k = w.shape[1] + 1
    dy = (err @ np.abs(w.T) + (_gamma(k) + 2 * operand_u) * mag).mean(axis=1)
    return y, 2 * dy + 2 * _U32 * np.abs(y)


class ScaledDenseTest(parameterized.TestCase):
  """Issue 23's program: 0.1 * (a @ row + bias) under vmap."""

  def _run(self, name: str, text: str | None = None):
    module = parse_hlo_module(text if text is not None else _text(name))
    b, a, bias = _scaled_dense_inputs(8)
    return execute_module(module, [b, a, bias]), (b, a, bias)

  def test_jaxlib_0_10_2_computes_alpha_over_the_bias_epilogue(self):
    # The recorded __cublas$lt$matmul has alpha_real 0.1, beta 0, epilogue
    # BIAS: cuBLASLt computes 0.1 * (A @ B) + bias, not the program.
    run, (b, a, bias) = self._run(
      "scaled_dense_a100_n8_float32_no_triton_gemm.jaxlib0.10.2.hlo"
    )
    out = run.outputs[0].astype(np.float64)
    prod = b.astype(np.float64) @ a.T.astype(np.float64)
    bound = _scaled_dense_bound(b, a, bias)
    np.testing.assert_array_less(np.abs(out - (_ALPHA32 * prod + bias)), bound)
    program = _ALPHA32 * (prod + bias)
    self.assertGreater(np.min(np.abs(out - program) / bound), 1e3)
    (gemm,) = run.gemms
    self.assertEqual(
      (gemm.instruction, gemm.kind, gemm.alpha, gemm.beta, gemm.epilogue),
      ("cublas-lt-matmul.1", "__cublas$lt$matmul", _ALPHA32, 0.0, "BIAS"),
    )
    self.assertTrue(gemm.has_bias)
    self.assertEqual((gemm.algorithm, gemm.source_line), ("F32_F32_F32", 9))
    self.assertEqual(gemm.op_name, "jit(f)/vmap()/transpose")

  @parameterized.named_parameters(
    ("cublaslt", "scaled_dense_a100_n8_float32_no_triton_gemm"),
    ("triton", "scaled_dense_a100_n8_float32"),
  )
  def test_jaxlib_0_12_computes_the_program(self, name):
    run, (b, a, bias) = self._run(f"{name}.jaxlib0.12.0.1.hlo")
    prod = b.astype(np.float64) @ a.T.astype(np.float64)
    np.testing.assert_array_less(
      np.abs(run.outputs[0] - _ALPHA32 * (prod + bias)),
      _scaled_dense_bound(b, a, bias),
    )

  def test_a_planted_dropped_bias_is_seen(self):
    text = _text(
      "scaled_dense_a100_n8_float32_no_triton_gemm.jaxlib0.12.0.1.hlo"
    )
    planted = text.replace("(%b.1, %a.1, %bias.1)", "(%b.1, %a.1)").replace(
      '"epilogue":"BIAS"', '"epilogue":"DEFAULT"'
    )
    self.assertNotEqual(planted, text)
    run, (b, a, bias) = self._run("", planted)
    prod = b.astype(np.float64) @ a.T.astype(np.float64)
    np.testing.assert_array_less(
      np.abs(run.outputs[0] - _ALPHA32 * prod), _scaled_dense_bound(b, a, bias)
    )
    self.assertFalse(run.gemms[0].has_bias)

  def test_unoptimized_hlo_widened_is_float64(self):
    run, (b, a, bias) = self._run("scaled_dense_n8.unoptimized.hlo")
    self.assertIsNotNone(run.outputs)
    module = parse_hlo_module(_text("scaled_dense_n8.unoptimized.hlo"))
    wide = execute_module(module, [b, a, bias], widen=True)
    want = _ALPHA32 * (b.astype(np.float64) @ a.T.astype(np.float64) + bias)
    self.assertEqual(wide.outputs[0].dtype, np.float64)
    np.testing.assert_allclose(wide.outputs[0], want, rtol=1e-13, atol=0)
    self.assertEqual(wide.gemms[0].algorithm, "F64_F64_F64")


class SeedTest(parameterized.TestCase):
  """The seed MLP's modules against its float64 value."""

  @parameterized.product(
    n=(2, 8),
    release=("0.10.2", "0.12.0.1"),
  )
  def test_a100_modules_at_f32_and_tf32(self, n, release):
    seed = _Seed(n)
    module = parse_hlo_module(
      _text(f"seed_mlp_a100_n{n}_bfloat16.jaxlib{release}.hlo")
    )
    ref, f32_bound = seed.reference_and_bound()
    f32 = execute_module(module, seed.arguments)
    self.assertEmpty(f32.not_executed)
    np.testing.assert_array_less(np.abs(f32.outputs[0] - ref), f32_bound)
    np.testing.assert_allclose(f32.outputs[0], ref, rtol=0, atol=_F32_LEVEL)
    self.assertLen(f32.gemms, 3)
    self.assertEqual({g.kind for g in f32.gemms}, {"triton gemm fusion"})
    tf32 = execute_module(module, seed.arguments, default_algorithm="TF32")
    self.assertEqual({g.algorithm for g in tf32.gemms}, {"TF32_TF32_F32"})
    # Row 0 moves by about 0.6 (README: the seed's story), as a float64
    # MLP with TF32-rounded operands at its three gemms says.
    self.assertGreater(abs(tf32.outputs[0][0] - ref[0]), 0.5)
    np.testing.assert_allclose(
      tf32.outputs[0], seed.tf32_value(), rtol=0, atol=_F32_LEVEL
    )

  @parameterized.product(
    fixture=(
      "seed_cpu_n2_float32",
      "seed_a100_n9_tensorfloat32",
      "seed_h200_n2_bfloat16_no_triton_gemm",
      "seed_t4_n2_bfloat16",
    ),
    release=("0.10.2", "0.12.0.1"),
  )
  def test_recorded_compiles_at_f32(self, fixture, release):
    # The stage tests' recorded compiles (tests/testdata/compiles): the CPU's
    # dots, Triton gemm fusions, cuBLASLt calls (h200 and t4).
    path = os.path.join(_COMPILES, fixture, f"jaxlib{release}", "optimized.hlo")
    with open(path, encoding="utf-8") as f:
      module = parse_hlo_module(f.read())
    n = module.entry.parameters()[0].shape.dims[0]
    seed = _Seed(n)
    ref, bound = seed.reference_and_bound()
    run = execute_module(module, seed.arguments)
    np.testing.assert_array_less(np.abs(run.outputs[0] - ref), bound)
    np.testing.assert_allclose(run.outputs[0], ref, rtol=0, atol=_F32_LEVEL)
    self.assertNotEmpty(run.gemms)

  def test_cpu_module(self):
    seed = _Seed(8)
    module = parse_hlo_module(
      _text("seed_mlp_cpu_n8_float32.jaxlib0.12.0.1.hlo")
    )
    ref, bound = seed.reference_and_bound()
    run = execute_module(module, seed.arguments)
    np.testing.assert_array_less(np.abs(run.outputs[0] - ref), bound)
    self.assertEqual({g.kind for g in run.gemms}, {"dot"})

  def test_algorithms_by_name_reach_the_dot_inside_a_fusion(self):
    seed = _Seed(8)
    module = parse_hlo_module(
      _text("seed_mlp_a100_n8_bfloat16.jaxlib0.12.0.1.hlo")
    )
    run = execute_module(
      module,
      seed.arguments,
      algorithms={"gemm_fusion_dot.1": "BF16_BF16_F32", "dot.6": "TF32"},
    )
    self.assertEqual(
      [g.algorithm for g in run.gemms],
      ["F32_F32_F32", "BF16_BF16_F32", "TF32_TF32_F32"],
    )
    self.assertEqual(
      [g.fusions for g in run.gemms],
      [("gemm_fusion_dot",), ("gemm_fusion_dot.1",), ("gemm_fusion_dot.2",)],
    )

  def test_a_planted_swapped_transpose_is_seen(self):
    # The second layer's 48x48 weight contracted on its other dimension:
    # the program's W @ x becomes W.T @ x.
    text = _text("seed_mlp_a100_n8_bfloat16.jaxlib0.12.0.1.hlo")
    old = (
      "dot(%param_0.0, %param_1.0), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={1}"
    )
    self.assertEqual(text.count(old), 1)
    planted = text.replace(old, old[: -len("{1}")] + "{0}")
    seed = _Seed(8)
    ref, _ = seed.reference_and_bound()
    run = execute_module(parse_hlo_module(planted), seed.arguments)
    moved = np.abs(run.outputs[0] - ref)
    self.assertGreater(np.median(moved), 100 * _F32_LEVEL)

  def test_unoptimized_and_optimized_modules_agree_at_f32(self):
    seed = _Seed(8)
    runs = [
      execute_module(parse_hlo_module(_text(name)), seed.arguments)
      for name in (
        "seed_mlp_n8.unoptimized.hlo",
        "seed_mlp_a100_n8_bfloat16.jaxlib0.12.0.1.hlo",
        "seed_mlp_cpu_n8_float32.jaxlib0.12.0.1.hlo",
      )
    ]
    for run in runs[1:]:
      np.testing.assert_allclose(
        run.outputs[0], runs[0].outputs[0], rtol=0, atol=_F32_LEVEL
      )

  def test_unoptimized_hlo_widened_is_float64(self):
    seed = _Seed(8)
    module = parse_hlo_module(_text("seed_mlp_n8.unoptimized.hlo"))
    run = execute_module(module, seed.arguments, widen=True)
    ref, _ = seed.reference_and_bound()
    np.testing.assert_allclose(run.outputs[0], ref, rtol=1e-11, atol=1e-11)


_UNKNOWN_CALL = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %att = f32[4]{0} custom-call(%p), custom_call_target="__cudnn$fmhaSoftmax"
  %other = f32[4]{0} custom-call(%p), custom_call_target="SomethingElse"
  %sum = f32[4]{0} add(%att, %other)
  ROOT %neg = f32[4]{0} negate(%sum)
}
"""


# XLA:GPU's async fusion, as jaxlib 0.12.0.1 makes of a `lax.scan` body's
# dynamic slice on an a100 (`fusion-start` calls the fused computation;
# `fusion-done` takes its result).
_ASYNC_FUSION = """HloModule m, entry_computation_layout={(f32[5,4]{1,0}, s32[])->f32[1,4]{1,0}}

%fused_slice (p0: f32[5,4], p1: s32[]) -> f32[1,4] {
  %p0 = f32[5,4]{1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %zero = s32[] constant(0)
  ROOT %ds = f32[1,4]{1,0} dynamic-slice(%p0, %p1, %zero), dynamic_slice_sizes={1,4}
}

ENTRY %main (x: f32[5,4], i: s32[]) -> f32[1,4] {
  %x = f32[5,4]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %fusion-start = ((f32[5,4]{1,0}, s32[]), f32[1,4]{1,0}, u32[]) fusion-start(%x, %i), kind=kLoop, calls=%fused_slice
  ROOT %fusion-done = f32[1,4]{1,0} fusion-done(%fusion-start)
}
"""


class AsyncFusionTest(absltest.TestCase):
  def test_fusion_start_and_done_compute_the_fusion(self):
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    run = execute_module(
      parse_hlo_module(_ASYNC_FUSION), [x, np.array(3, np.int32)]
    )
    self.assertTrue(run.complete, run.not_executed)
    np.testing.assert_array_equal(run.outputs[0], x[3:4])


class IncompleteAndBadInputTest(absltest.TestCase):
  def test_unknown_custom_calls_are_named_and_outputs_withheld(self):
    run = execute_module(
      parse_hlo_module(_UNKNOWN_CALL), [np.ones(4, np.float32)]
    )
    self.assertIsNone(run.outputs)
    self.assertFalse(run.complete)
    self.assertEqual(
      [(n.instruction, n.target) for n in run.not_executed],
      [("att", "__cudnn$fmhaSoftmax"), ("other", "SomethingElse")],
    )
    self.assertEqual(
      str(run.not_executed[0]),
      "not executed: __cudnn$fmhaSoftmax (att: no numpy model of this "
      "custom call)",
    )

  def test_bad_arguments_raise_one_line(self):
    module = parse_hlo_module(_UNKNOWN_CALL)
    for args, words in (
      ([], "takes 1 arguments, got 0"),
      ([np.ones(3, np.float32)], r"parameter p is f32\[4\]"),
      ([np.ones(4, np.float64)], r"got an array float64\[4\]"),
    ):
      with self.assertRaisesRegex(ExecutionError, words):
        execute_module(module, args)

  def test_unknown_algorithm_is_bad_input(self):
    module = parse_hlo_module(_UNKNOWN_CALL)
    with self.assertRaisesRegex(ExecutionError, "unknown dot algorithm 'F17'"):
      execute_module(module, [np.ones(4, np.float32)], default_algorithm="F17")


# Four f32[2^20] parameters (4 MiB each, 8 MiB in float64) summed in a
# chain: a widened run needs one parameter's float64 copy at a time.
_CHAIN = """
HloModule chain

ENTRY main {
  p0 = f32[1048576] parameter(0)
  p1 = f32[1048576] parameter(1)
  p2 = f32[1048576] parameter(2)
  p3 = f32[1048576] parameter(3)
  a = f32[1048576] add(p0, p1)
  b = f32[1048576] add(a, p2)
  ROOT c = f32[1048576] add(b, p3)
}
"""

_IDENTITY = """
HloModule identity

ENTRY main {
  ROOT p0 = f32[3] parameter(0)
}
"""


class ArgumentMemoryTest(absltest.TestCase):
  """A float64 run makes a parameter's float64 copy as an instruction
  reads it, not one of every parameter for the whole run (issue 37: a
  12-layer model's weights were 0.7 GB of float64 held throughout)."""

  def test_chain_holds_one_parameter_copy_at_a_time(self):
    import tracemalloc

    module = parse_hlo_module(_CHAIN)
    g = np.random.default_rng(0)
    args = [g.standard_normal(1 << 20).astype(np.float32) for _ in range(4)]
    tracemalloc.start()
    try:
      tracemalloc.reset_peak()
      run = execute_module(module, args, widen=True)
      _, peak = tracemalloc.get_traced_memory()
    finally:
      tracemalloc.stop()
    expected = sum(a.astype(np.float64) for a in args)  # exact in float64
    (out,) = run.outputs
    self.assertEqual(out.dtype, np.float64)
    np.testing.assert_array_equal(out, expected)
    # 8 MiB arrays at most at once: one add's two float64 operands, the
    # copies the elementwise model makes of them and its sum (5); with
    # every parameter widened for the whole run, the four copies besides
    # (measured before: 64 MiB).
    self.assertLess(peak, 6 * (8 << 20))

  def test_a_kept_type_run_reads_its_arguments_as_given(self):
    # No copy of an f32 argument where the run keeps f32, and none is
    # written: the chain's f32 sums are numpy's own, the arguments as
    # they were, and a parameter root is the argument itself.
    module = parse_hlo_module(_CHAIN)
    g = np.random.default_rng(1)
    args = [g.standard_normal(1 << 20).astype(np.float32) for _ in range(4)]
    before = [a.copy() for a in args]
    (out,) = execute_module(module, args).outputs
    self.assertEqual(out.dtype, np.float32)
    np.testing.assert_array_equal(
      out, ((args[0] + args[1]) + args[2]) + args[3]
    )
    for a, b in zip(args, before):
      np.testing.assert_array_equal(a, b)
    x = np.float32([1.5, -2, 3])
    (same,) = execute_module(parse_hlo_module(_IDENTITY), [x]).outputs
    self.assertTrue(np.shares_memory(same, x))

  def test_a_parameter_root_is_widened(self):
    run = execute_module(
      parse_hlo_module(_IDENTITY), [np.float32([1.5, -2, 3])], widen=True
    )
    self.assertEqual(run.outputs[0].dtype, np.float64)
    np.testing.assert_array_equal(run.outputs[0], [1.5, -2, 3])


if __name__ == "__main__":
  absltest.main()
