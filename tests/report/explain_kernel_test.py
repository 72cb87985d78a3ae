"""explain names, per site, a "bit-exact model" or a "band" (issue 28)."""

import types

import pytest

from hloprobe.numerics import site_model
from hloprobe.report import explain_kernel
from hloprobe.report.kernel_words import kernel_site_words
from hloprobe.sites import Fate

# A TF32 Triton gemm's kernel as its `SiteFate` fields name it (the PTX's
# mma opcodes; its operands rounded by cvt.rna.tf32.f32).
_TF32 = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",)
_BF16 = ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",)
_TF32_ALG = "TF32_TF32_F32"


def test_triton_gemm_with_a_modelled_mma_is_bit_exact():
  m = site_model("Triton gemm", _TF32, "8.0", None, _TF32_ALG, "rna")
  assert (m.kind, m.ins.arch, m.ins.group, m.tf32_rounding) == (
    "bit-exact model",
    "Ampere",
    4,
    "rna",
  )
  m = site_model("Triton gemm", _TF32, "9.0a", 2, _TF32_ALG)
  assert (m.kind, m.ins.arch, m.split_k) == ("bit-exact model", "Hopper", 2)
  assert kernel_site_words(m) == (
    f"{_TF32[0]} on Hopper (MMA-Sim), K in k8 steps, split-K 2"
  )
  m = site_model("Triton gemm", _TF32, "9.0a", 4, _TF32_ALG)
  assert m.kind == "band" and kernel_site_words(m) == (
    "Triton gemm split-K 4: the reduce's f32 order not modelled"
  )


def test_everything_else_is_a_band_with_the_reason():
  cases = {
    ("cuBLAS", _TF32, "8.0"): "cuBLAS: kernel arithmetic not modelled",
    ("multiply+reduce", (), "9.0"): "multiply+reduce: kernel",
    ("Triton gemm", (), "8.0"): "no mma in the PTX",
    ("Triton gemm", _TF32, "7.5"): "on sm_75 not modelled",
    ("Triton gemm", _TF32, None): "compute capability unknown",
    ("Triton gemm", _TF32 + _BF16, "8.0"): "m16n8k16",
  }
  for args, words in cases.items():
    m = site_model(*args)
    assert m.kind == "band" and words in kernel_site_words(m), args


def test_multi_pass_presets_stay_bands():
  # BF16_BF16_F32_X3 runs three bf16 mma on split operands: not one pass.
  bf16 = _BF16
  m = site_model("Triton gemm", bf16, "8.0", None, "BF16_BF16_F32_X3")
  assert (m.kind, kernel_site_words(m)) == (
    "band",
    "Triton gemm: BF16_BF16_F32_X3 is not one bf16 pass",
  )
  m = site_model("Triton gemm", bf16, "8.0", None, "BF16_BF16_F32")
  assert m.kind == "bit-exact model"
  # No algorithm settled (f32 operands split into bf16 parts the PTX does
  # not count, review finding 11): a band, not one modelled bf16 pass.
  m = site_model("Triton gemm", bf16, "8.0", None, None)
  assert (m.kind, kernel_site_words(m)) == (
    "band",
    "Triton gemm: no effective algorithm to hold the kernel to",
  )


def test_an_integer_gemm_names_no_ptx_it_did_not_read():
  # An s8 x s8 -> s32 Triton gemm's algorithm comes from XLA's integer
  # rule (`sites.integer_rules`), not the PTX: the reason is that rule's.
  m = site_model("Triton gemm", (), "8.0", None, "exact integer")
  assert (m.kind, kernel_site_words(m)) == (
    "band",
    "Triton gemm: exact integer, any kernel's order gives its bits",
  )


def test_wgmma_is_hoppers_mma_parameters():
  # mmasim 2.1.1 nv_ptx/sim.py WGMMA: F = 25, L_max = 32 bytes, e_zero
  # -133 for f32 output, as Hopper's mma.
  ev = ("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32",)
  m = site_model("Triton gemm", ev, "9.0a", None, "TF32_TF32_F32")
  assert m.kind == "bit-exact model"
  assert (m.ins.fraction_bits, m.ins.group, m.ins.e_zero) == (25, 8, -133)
  assert site_model("Triton gemm", ev, "8.0").kind == "band"


def test_a_fate_is_taken_as_the_enum_or_its_value_and_nothing_else():
  by_value = site_model("Triton gemm", _TF32, "8.0", None, _TF32_ALG, "rna")
  by_enum = site_model(Fate.TRITON_GEMM, _TF32, "8.0", None, _TF32_ALG, "rna")
  assert by_value == by_enum and by_enum.fate == "Triton gemm"
  with pytest.raises(ValueError):
    site_model("Triton gem", _TF32, "8.0")


def _fate(index, fate, mma, split_k=None, algorithm="TF32_TF32_F32"):
  return types.SimpleNamespace(
    site=types.SimpleNamespace(index=index),
    fate=Fate(fate),
    mma_opcodes=mma,
    ptx_tf32_rounding="rna" if mma == _TF32 else None,
    split_k=split_k,
    effective_algorithm=algorithm,
  )


def test_explain_line_names_each_site():
  fates = [_fate(i, "Triton gemm", _TF32) for i in range(3)]
  fates.append(_fate(3, "multiply+reduce", ()))
  f32 = [_fate(i, "Triton gemm", (), None, "F32_F32_F32") for i in range(3)]
  configs = [
    types.SimpleNamespace(
      ok=True,
      config=types.SimpleNamespace(precision=p, n=2),
      compilation=types.SimpleNamespace(fates=fs),
    )
    for p, fs in (
      ("bfloat16", fates),
      ("tensorfloat32", fates),
      ("float32", f32 + fates[3:]),
    )
  ]
  models = explain_kernel.kernel_models(configs, "9.0")
  line, f32_line, where = explain_kernel.kernel_model_lines(
    types.SimpleNamespace(kernel_models=models, kernel_rows=())
  )
  assert f32_line == (
    "per site under float32: sites 0-2 band (Triton gemm: no mma in the PTX);"
    " site 3 band (multiply+reduce: kernel arithmetic not modelled)"
  )
  assert "kernel_model_run" in where
  assert line.startswith(
    "per site under bfloat16, tensorfloat32: sites 0-2 bit-exact model "
    "(mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 on Hopper (MMA-Sim),"
    " K in k8 steps); site 3 band (multiply+reduce: kernel arithmetic not "
    "modelled)"
  )
  cpu = types.SimpleNamespace(kernel_models=(), kernel_rows=())
  assert explain_kernel.kernel_model_lines(cpu) == []


def test_explain_line_names_the_sizes_where_words_differ():
  # The seed on an a100 under bfloat16: at n = 1 dot strength reduction
  # makes every site a multiply+reduce; at n = 2 sites 0-2 are Triton
  # gemms (TF32 mma) and site 3 stays a multiply+reduce. One line per
  # size, never "sites 0-3 band; sites 0-2 bit-exact" without the sizes.
  reduced = [_fate(i, "multiply+reduce", ()) for i in range(4)]
  gemms = [_fate(i, "Triton gemm", _TF32) for i in range(3)] + reduced[3:]
  configs = [
    types.SimpleNamespace(
      ok=True,
      config=types.SimpleNamespace(precision="bfloat16", n=n),
      compilation=types.SimpleNamespace(fates=fs),
    )
    for n, fs in ((1, reduced), (2, gemms), (3, gemms))
  ]
  models = explain_kernel.kernel_models(configs, "8.0")
  one, two, _ = explain_kernel.kernel_model_lines(
    types.SimpleNamespace(kernel_models=models, kernel_rows=())
  )
  band = "band (multiply+reduce: kernel arithmetic not modelled)"
  assert one == f"per site under bfloat16 at n = 1: sites 0-3 {band}"
  assert two.startswith(
    "per site under bfloat16 at n = 2-3: sites 0-2 bit-exact model (mma."
  )
  assert two.endswith(f"; site 3 {band}")


def test_site_table_has_the_kernel_model_column():
  from hloprobe.report import tables

  assert tables._SITE_HEADERS[-2:] == ("band worst / expected", "kernel model")


def test_a_kernel_model_that_failed_is_named_not_skipped():
  # KernelRowZero.error and .budget are why row 0 by the kernel model is
  # None despite a bit-exact site; results.json and explain's notes carry
  # them in words.
  from hloprobe.numerics.kernel_sites import KernelRowZero

  exact = site_model("Triton gemm", _TF32, "8.0", None, _TF32_ALG, "rna")
  cublas = site_model("cuBLAS", _TF32, "8.0")
  failed = KernelRowZero((exact, cublas), error="boom")
  over = KernelRowZero((exact,), budget=1_000_000)
  done = KernelRowZero((exact,), 0.5, 1e-8)
  configs = [
    types.SimpleNamespace(
      ok=True,
      config=types.SimpleNamespace(precision=p, n=n),
      prediction=types.SimpleNamespace(kernel=k),
    )
    for p, n, k in (
      ("bfloat16", 9, failed),
      ("float32", 2, done),
      ("float32", 64, over),
    )
  ]
  assert explain_kernel.kernel_notes(configs) == [
    "n = 9, bfloat16: row 0 not computed by the kernel model (kernel "
    "model: boom); the emulation's row 0 stands",
    "n = 64, float32: row 0 not computed by the kernel model (kernel "
    "model not run: its bit-exact sites take over 1,000,000 multiply-adds "
    "at the bit level, the sweep's budget (hloprobe.numerics."
    "kernel_model_run computes it without one)); the emulation's row 0 "
    "stands",
  ]
  doc = explain_kernel.kernel_json(failed)
  assert doc["row0_kernel_model"] is None
  assert doc["row0_kernel_model_note"] == "kernel model: boom"
  assert doc["site_models"][1] == {
    "site": 1,
    "kind": "band",
    "why": "cuBLAS: kernel arithmetic not modelled",
  }
  assert explain_kernel.kernel_json(done)["row0_kernel_model_note"] is None


@pytest.mark.compiles  # the model runs under jax (eagerly)
def test_kernel_model_over_its_budget_is_named_not_run():
  # (4 x 8) @ (8 x 4) is 4 * 4 * 8 = 128 multiply-adds: a budget of 127
  # refuses it, 128 runs it (exact integers: the bits are the product's).
  import numpy as np

  from hloprobe.numerics.kernel_sites import (
    KernelBudgetError,
    kernel_model_run,
  )

  a = np.arange(32, dtype=np.float32).reshape(4, 8)
  b = np.ones((8, 4), np.float32)
  site = site_model("Triton gemm", _TF32, "8.0", None, "TF32_TF32_F32")
  fn = lambda x, y: x @ y
  with pytest.raises(KernelBudgetError, match=r"over 127 multiply-adds"):
    kernel_model_run(fn, (a, b), ("TF32_TF32_F32",), {0: site}, budget=127)
  (out,) = kernel_model_run(
    fn, (a, b), ("TF32_TF32_F32",), {0: site}, budget=128
  )
  np.testing.assert_array_equal(out, a.astype(np.float64) @ b)
