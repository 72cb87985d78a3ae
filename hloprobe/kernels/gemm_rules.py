"""Contractions: what decides a row's arithmetic in a gemm kernel.

Rules (each checked on compile-only A100 and H100 compiles, jaxlib
0.10.2 and 0.12.0.1, tests/testdata/kernels):

  Triton gemm (`__triton_gemm`, `__triton_nested_gemm_fusion`): each output
    element is one accumulation over K in the order of its K tiles; the
    products and the in-tile order are those of the multiply instruction
    (PTX: `mma.sync.aligned.<mMnNkK>...` on sm_80, `wgmma.mma_async` on
    sm_90, `fma.rn.f32` without tensor cores). The K tile is the nested
    dot's `backend_config={"sizes":[<block_k>]}` (XLA 0.10.2 and 0.12.0.1
    print it on the dot inside the nested gemm fusion; older XLA's
    `triton_gemm_config.block_k`). The output tile (block_m x block_n,
    `block_level_fusion_config.output_tiles`), num_warps, num_stages and
    num_ctas say which program computes an element, not how: they are
    config, not arithmetic.
  Split-K: XLA's `splitk-rewriter` HLO pass (xla/backends/gpu/transforms/
    splitk_rewriter.cc, on by default since abb3f8f7, 2026-04-08; in 0.10.2
    and 0.12.0.1) splits K "forming a new batch dimension" and reduces the
    dot's result along it; the reduce keeps the dot's metadata (its op_name
    is the dot's), so the split factor is the size of the dimension that a
    reduce with the dot's op_name removes from the gemm's output. Older
    XLA's `triton_gemm_config.split_k` is read too.
  Dot strength reduction (AlgebraicSimplifier, `dot-strength-reduction`):
    a matrix-vector dot becomes multiply + reduce, emitted by XLA's
    reduction emitter (`reduction_rules`); seen at n = 1.
  Who chose it: on a compile-only target XLA does not autotune; the
    source differs per release, as the pass was renamed autotuner ->
    config_assigner in c3378654 (2026-08-21, /work/shared/XLA_NOTES.md
    1c), after 0.10.2 and before 0.12.0.1:
    jaxlib 0.12.0.1: xla/service/gpu/autotuning/config_assigner_pass.cc
    `GetConfigAssignerOptions(debug_options, is_deviceless)` (deviceless:
    `select_first_config`); jaxlib 0.10.2: the same folder's
    autotuner_pass.cc, `AutotunerPass::CreateDeviceless` (no profiler,
    so no measuring). Checked against source, not against a pass dump of
    either release (tests/testdata records none); the recorded kernels
    (tests/testdata/kernels) agree on both. The config is the first
    compilable one for the fusion's shape, and `ChooseSplitK` (splitk_rewriter.cc) uses the
    dot's dimensions: both take the row count (M) as an input.
  cuBLAS / cuBLASLt custom calls: the library picks its kernel at run time
    from the whole problem shape (TransformerEngine#2986): unknown without
    a device.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import math

from hloprobe.ir import HloInstruction, PtxKernel

__all__ = [
  "GEMM_KINDS",
  "LIBRARY_CALLS",
  "LIBRARY_WORDS",
  "block_k",
  "contraction_length",
  "instruction_words",
  "split_k_of",
]

GEMM_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion")
LIBRARY_CALLS = {
  "__cublas$gemm": "cuBLAS",
  "__cublas$lt$matmul": "cuBLASLt",
  "__cublas$lt$matmul$f8": "cuBLASLt",
}
LIBRARY_WORDS = (
  "chosen by the library's per-shape heuristic at run time: unknown "
  "without a device"
)


def block_k(dot: HloInstruction, fusion_config: dict) -> str | None:
  """The K tile of a Triton gemm's dot, as XLA wrote it; None if unstated.

  XLA 0.10.2 / 0.12.0.1: the nested dot's backend_config `sizes` (one
  entry per contracting dimension). Older: `triton_gemm_config.block_k`.
  """
  sizes = dot.backend_config.get("sizes")
  if isinstance(sizes, list) and sizes:
    return "x".join(str(s) for s in sizes)
  tgc = fusion_config.get("triton_gemm_config") or {}
  if "block_k" in tgc:
    return str(tgc["block_k"])
  return None


def contraction_length(dot: HloInstruction, shapes: dict) -> int | None:
  """K: the product of the lhs contracting dimensions' sizes."""
  lhs = shapes.get(dot.operands[0]) if dot.operands else None
  if lhs is None:
    return None
  try:
    return math.prod(lhs[d] for d in dot.dims_attr("lhs_contracting_dims"))
  except IndexError:
    return None


def split_k_of(fusion_config: dict, reduced_by_consumer: int | None) -> int:
  """The split-K factor (module docstring): `triton_gemm_config.split_k`
  where stated, else the size the consumer's dot-named reduce removes."""
  tgc = fusion_config.get("triton_gemm_config") or {}
  if int(tgc.get("split_k", 1)) > 1:
    return int(tgc["split_k"])
  return reduced_by_consumer or 1


def instruction_words(
  kernel: PtxKernel | None, operand_dtype: str
) -> tuple[str, str | None]:
  """(the multiply instruction(s), the algorithm preset) from a PTX kernel.

  mma / wgmma opcodes where the kernel has them (e.g.
  "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), else its scalar
  fma/mul opcodes on floats ("fma.rn.f32"); the algorithm is
  `PtxKernel.algorithm_for` the dot's operand type.
  """
  if kernel is None:
    return "not read: no PTX kernel", None
  ops = [op for op, _ in kernel.instructions]
  mma = sorted(o for o in ops if o.startswith(("mma", "wgmma")))
  if mma:
    words = " + ".join(mma)
  else:
    scalar = sorted(
      o
      for o in ops
      if o.split(".")[0] in ("fma", "mul")
      and o.split(".")[-1] in ("f32", "f64", "bf16", "f16", "bf16x2", "f16x2")
    )
    words = " + ".join(scalar) or "no floating-point multiply"
  algorithm, _ = kernel.algorithm_for(operand_dtype)
  return words, algorithm
