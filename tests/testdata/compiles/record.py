"""Records the compile fixtures of this folder (see README.md).

Run from the repository root, once per jaxlib release:

  PYTHONPATH=.:tests JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 \
    .venv/bin/python tests/testdata/compiles/record.py [NAME...]
  PYTHONPATH=.:tests JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 \
    .venv-jax0.10.2/bin/python tests/testdata/compiles/record.py [NAME...]

writes, per fixture (all, or the NAMEs given), <NAME>/jaxlib<V>/ beside
this file: `stablehlo.mlir` (with its debug locations), `optimized.hlo`
(`Compiled.as_text()`), each PTX file XLA dumped as `kernels.<i>.ptx` (GPU
targets) and `config.json` (what was compiled, by which jax and jaxlib).
The repository's absolute path is cut from the texts, so locations name
`tests/program_cases.py`. Texts are unedited otherwise; tests that plant a
difference edit them in memory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys

import jax
import ml_dtypes
import numpy as np
import program_cases

from hloprobe.compile import cases, compat, lowering, targets
from hloprobe.ir.precisions import parse_precision

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, *[os.pardir] * 3)) + os.sep

# name -> (case factory, target, n, precision[, XLA options])
FIXTURES = {
  **{
    f"seed_{t}_n{n}_{p}": (lambda: cases.get_case("seed_mlp"), t, n, p)
    for t, n, p in (
      ("cpu", 1, "bfloat16"),
      ("cpu", 1, "tensorfloat32"),
      ("cpu", 1, "float32"),
      ("cpu", 2, "bfloat16"),
      ("cpu", 2, "tensorfloat32"),
      ("cpu", 2, "float32"),
      *(
        ("a100", n, p)
        for n in (1, 2, 9)
        for p in ("bfloat16", "tensorfloat32", "float32")
      ),
      ("t4", 2, "bfloat16"),
    )
  },
  "two_dots_a100_n2_default": (program_cases.two_dots, "a100", 2, "default"),
  "two_dots_swapped_a100_n2_default": (
    lambda: program_cases.two_dots(swap=True),
    "a100",
    2,
    "default",
  ),
  "two_dots_cpu_n2_default": (program_cases.two_dots, "cpu", 2, "default"),
  "attention_bf16_a100_n8_default": (
    program_cases.attention_bf16,
    "a100",
    8,
    "default",
  ),
  "attention_bf16_forward_h100_n8_default": (
    lambda: program_cases.attention_bf16(backward=False),
    "h100",
    8,
    "default",
  ),
  "bf16_matmul_h100_n1_default": (
    program_cases.bf16_matmul,
    "h100",
    1,
    "default",
  ),
  **{
    f"control_flow_{kind}_a100_n8_bfloat16": (
      lambda kind=kind: program_cases.control_flow(kind),
      "a100",
      8,
      "bfloat16",
    )
    for kind in program_cases.CONTROL_FLOW
  },
  **{
    f"free_dims_{name}": (
      lambda lhs=lhs: program_cases.free_dims_matmul(lhs, (1000, 64), "t_fd"),
      target,
      lhs[0],
      "default",
    )
    for name, target, lhs in (
      ("a100_two_free_dims", "a100", (16, 32, 1000)),
      ("h100_two_free_dims", "h100", (16, 32, 1000)),
      ("a100_flat", "a100", (512, 1000)),
      ("h100_three_free_dims", "h100", (4, 4, 32, 1000)),
    )
  },
  "jax_22557_h100_n1_default": (
    lambda: cases.get_case("jax_22557"),
    "h100",
    1,
    "default",
  ),
  "jax_15362_a100_n2_bfloat16": (
    lambda: cases.get_case("jax_15362"),
    "a100",
    2,
    "bfloat16",
  ),
  **{
    f"matmul_512_{t}_n512_float32": (
      lambda: program_cases.ones_matmul(512, 512, 512),
      t,
      512,
      "float32",
    )
    for t in ("a100", "h100")
  },
  # Experiment no_triton_gemm (--xla_gpu_enable_triton_gemm=false) as this
  # compile's own option: cuBLASLt gemms.
  **{
    f"seed_h200_n2_{p}_no_triton_gemm": (
      lambda: cases.get_case("seed_mlp"),
      "h200",
      2,
      p,
      {"xla_gpu_enable_triton_gemm": False},
    )
    for p in ("bfloat16", "tensorfloat32", "float32")
  },
  # Review finding 11: f32 operands under declared BF16 presets, one pass
  # and three (the PTX's bf16 mma, and the operand splitting of _X3).
  **{
    f"preset_seed_a100_n2_{p}": (
      lambda: cases.get_case("seed_mlp"),
      "a100",
      2,
      p,
    )
    for p in ("BF16_BF16_F32", "BF16_BF16_F32_X3")
  },
  # Issue 23: GemmRewriter folds 0.1 into a cuBLASLt alpha over a BIAS
  # epilogue under jaxlib 0.10.2 (not under 0.12.0.1).
  "scaled_dense_a100_n8_float32_no_triton_gemm": (
    lambda: cases.get_case("scaled_dense"),
    "a100",
    8,
    "float32",
    {"xla_gpu_enable_triton_gemm": False},
  ),
  # Issue 24: the conv net's two convolutions become cuDNN calls on the
  # A100 (operand_precision={highest,...} under float32); CPU convolutions.
  **{
    f"conv_net_{t}_n4_{p}": (lambda: cases.get_case("conv_net"), t, 4, p)
    for t, p in (
      ("a100", "bfloat16"),
      ("a100", "float32"),
      ("a100", "tensorfloat32"),
      ("cpu", "bfloat16"),
    )
  },
  # Issue 24: cuDNN's fused attention (needs the nvidia-cudnn-cu12 wheel),
  # forward on both targets, forward and backward under a grad on the h100.
  **{
    f"cudnn_attention_{t}_n2_bfloat16": (
      lambda: cases.get_case("cudnn_attention"),
      t,
      2,
      "bfloat16",
    )
    for t in ("a100", "h100")
  },
  "cudnn_attention_grad_h100_n2_bfloat16": (
    lambda: _attention_grad(cases.get_case("cudnn_attention")),
    "h100",
    2,
    "bfloat16",
  ),
  # Issue 24: the fp8 scaled matmul. The h100 default is a Triton gemm (the
  # FP8 cuBLASLt rewrite does not fire); without the Triton gemm it is
  # `__cublas$lt$matmul$f8`; n = 1 is strength-reduced; the a100 (8.0) has
  # no FP8 gemm.
  **{
    f"fp8_scaled_matmul_{t}_n{n}_default{suffix}": (
      lambda: cases.get_case("fp8_scaled_matmul"),
      t,
      n,
      "default",
      *([options] if options else []),
    )
    for t, n, suffix, options in (
      ("h100", 8, "", None),
      ("h100", 8, "_no_triton_gemm", {"xla_gpu_enable_triton_gemm": False}),
      ("h100", 1, "", None),
      ("a100", 8, "", None),
    )
  },
  # q, k, v projections (dot-merger merges them), attention, out projection.
  "attention_block_h100_n2_bfloat16": (
    lambda: _attention_block(),
    "h100",
    2,
    "bfloat16",
  ),
  # The CPU's needs XLA_FLAGS=--xla_force_host_platform_device_count=2.
  "sgd_step_cpu_n8_float32": (lambda: _sgd_step(), "cpu", 8, "float32"),
  "sgd_step_a100_n8_float32": (lambda: _sgd_step(), "a100", 8, "float32"),
  "qkv_xla_attention_a100_n2_bfloat16": (
    lambda: _qkv_xla_attention(),
    "a100",
    2,
    "bfloat16",
  ),
}


def _attention_grad(case):
  """The case's gradient of sum(attention) w.r.t. q, k and v (bf16)."""

  def loss(q, k, v):
    return case.fn(q, k, v).astype("float32").sum()

  grad = jax.grad(loss, argnums=(0, 1, 2))
  return dataclasses.replace(case, name="cudnn_attention_grad", fn=grad)


def _attention_block():
  """x @ wq, x @ wk, x @ wv, cuDNN attention over 4 heads, then @ wo (bf16)."""

  def block(x, wq, wk, wv, wo):
    heads = lambda t: t.reshape(t.shape[0], t.shape[1], 4, 64)
    q, k, v = (heads(x @ w) for w in (wq, wk, wv))
    a = jax.nn.dot_product_attention(q, k, v, implementation="cudnn")
    return a.reshape(a.shape[0], a.shape[1], 256) @ wo

  def inputs():
    g = np.random.default_rng(24)
    bf16 = lambda *s: (g.standard_normal(s) / 8).astype(ml_dtypes.bfloat16)
    return bf16(4, 128, 256), *(bf16(256, 256) for _ in range(4))

  return cases.Case(
    "attention_block",
    "a transformer's attention block",
    block,
    inputs,
    in_axes=(0, None, None, None, None),
  )


def _qkv_xla_attention():
  """x @ wq, x @ wk, x @ wv (one x: dot-merger merges them), attention by
  `jax.nn.dot_product_attention`'s XLA implementation (two batched dots:
  q k^T and probabilities @ v), then @ wo; f32."""

  def block(x, wq, wk, wv, wo):
    heads = lambda t: t.reshape(t.shape[0], t.shape[1], 4, 16)
    q, k, v = (heads(x @ w) for w in (wq, wk, wv))
    a = jax.nn.dot_product_attention(q, k, v, implementation="xla")
    return a.reshape(a.shape[0], a.shape[1], 64) @ wo

  def inputs():
    g = np.random.default_rng(29)
    f32 = lambda *s: (g.standard_normal(s) / 8).astype(np.float32)
    return f32(4, 32, 64), *(f32(64, 64) for _ in range(4))

  return cases.Case(
    "qkv_xla_attention",
    "q, k, v projections of one x, XLA's attention, an output projection",
    block,
    inputs,
    in_axes=(0, None, None, None, None),
  )


def _sgd_step():
  """A train step (grad of a 2-layer tanh MLP's mean square, then SGD),
  data-parallel over a mesh of 2 devices: each device's dots hold half
  the batch. Returns (w1, w2)."""
  from jax.sharding import PartitionSpec as P

  def loss(params, x, y):
    w1, w2 = params
    return jax.numpy.mean((jax.numpy.tanh(x @ w1) @ w2 - y) ** 2)

  def step(x, y, w1, w2):
    g = jax.grad(loss)((w1, w2), x, y)
    return (w1 - 0.1 * g[0], w2 - 0.1 * g[1])

  def inputs():
    r = np.random.default_rng(3)
    f32 = lambda *s: r.standard_normal(s).astype(np.float32)
    return f32(8, 32), f32(8, 4), f32(32, 64) / 6, f32(64, 4) / 8

  return cases.Case(
    "sgd_step",
    "a data-parallel SGD step",
    step,
    inputs,
    in_axes=(0, 0, None, None),
    output_axis=None,
    mesh_shape=(2,),
    mesh_axes=("data",),
    in_specs=(P("data", None), P("data", None), P(), P()),
    out_specs=(P(), P()),
  )


def record(name: str) -> str:
  make, target, n, precision, *options = FIXTURES[name]
  case = make()
  args = case.inputs_for(case.make_inputs(), n)
  t = targets.get_target(target)
  if options:
    t = dataclasses.replace(
      t, compiler_options={**(t.compiler_options or {}), **options[0]}
    )
  cc = lowering.compile_case(case, args, parse_precision(precision), t)
  versions = compat.jaxlib_release().versions
  folder = os.path.join(_HERE, name, "jaxlib" + versions["jaxlib"])
  shutil.rmtree(folder, ignore_errors=True)
  os.makedirs(folder)
  texts = {"stablehlo.mlir": cc.stablehlo, "optimized.hlo": cc.optimized_hlo}
  texts.update({f"kernels.{i}.ptx": text for i, text in enumerate(cc.ptx)})
  config = {
    "case": case.name,
    "target": target,
    "n": n,
    "precision": precision,
    "xla_options": options[0] if options else {},
    "compute_capability": cc.compute_capability,
    **versions,
  }
  texts["config.json"] = json.dumps(config, indent=2) + "\n"
  for file, text in texts.items():
    with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
      f.write(text.replace(_ROOT, ""))
  return folder


def main(names: list[str]) -> int:
  for name in names or FIXTURES:
    print("wrote", record(name))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
