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

`kernels.read_kernels` records why a kernel's per-row arithmetic does
or does not take the row count (`RowCountWhy`: the rule and its data);
`row_count_why_words` says so with the rule's XLA source, e.g.
"RowReductionFusion (xla/backends/gpu/codegen/emitters/reduction.cc):
threads, vector size and tile from the reduced length 512 and the input
width alone; the row count only sets rows per block".

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

__all__ = ["kernel_site_words", "remainder_lines", "row_count_why_words"]


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


_REDUCTION_RULE = "xla/backends/gpu/codegen/emitters/reduction.cc"
_LIBRARY_WORDS = (
  "chosen by the library's per-shape heuristic at run time: unknown "
  "without a device"
)
# Each `kernels.RowCountRule` (by name: the face does not carry the enum)
# -> its words from the `RowCountWhy`, citing the XLA source of the rule
# (checked on jaxlib 0.12.0.1 and 0.10.2; the rule's docstring says more).
_ROW_COUNT_WORDS = {
  "ELEMENTWISE": lambda w: (
    "each element is computed alone (xla/backends/gpu/codegen/emitters/"
    "loop.cc; Triton: one program per tile): the row count changes which "
    "thread computes an element, not its arithmetic"
  ),
  "CPU": lambda w: (
    "XLA:CPU's runtime and fusion emitters choose their blocking from the "
    "shape, and hloprobe reads no CPU tiling: compare the bits by running"
  ),
  "CUSTOM_CALL": lambda w: (
    f"custom call {w.name}: hloprobe reads no rule for it"
  ),
  "LIBRARY": lambda w: (
    f"{w.name} picks its kernel at run time from the whole problem shape "
    "(TransformerEngine#2986: 5 of 7 batch sizes gave an anchor row other "
    "bytes); " + _LIBRARY_WORDS
  ),
  "COLLECTIVE": lambda w: (
    "NCCL adds the partial sums in the order of its algorithm (ring or "
    "tree, chunked), chosen at run time from the message size: unknown "
    "without a device"
  ),
  "TRITON_GEMM": lambda w: (
    "tiles: XLA's config assigner, first compilable config for the "
    "fusion's shape on a compile-only target (xla/service/gpu/autotuning/: "
    "config_assigner_pass.cc GetConfigAssignerOptions on jaxlib 0.12.0.1, "
    "autotuner_pass.cc AutotunerPass::CreateDeviceless on 0.10.2, before "
    "the rename c3378654; no autotuning when deviceless); split-K: "
    "splitk_rewriter.cc ChooseSplitK from the dot's dimensions; both take "
    "the row count (M) as an input"
  ),
  "XLA_DOT": lambda w: (
    "a dot XLA's own emitters keep: no tiling rule read; the PTX digest "
    "says whether two configs' kernels are the same"
  ),
  "NO_RULE": lambda w: f"{w.name}: no rule read",
  "REDUCE_WINDOW": lambda w: (
    "reduce-window: each output element adds its window in order "
    "(xla/backends/gpu/codegen/emitters/loop.cc elemental emitter)"
  ),
  "OPERAND_NOT_READ": lambda w: "the reduce's operand is not read",
  "INTERLEAVED": lambda w: "reduced dimensions interleave: not read",
  "COLUMN": lambda w: _column_words("ColumnReductionFusion"),
  "SMALL_COLUMN": lambda w: _column_words("SmallColumnReductionFusion"),
  "MULTI_ROW": lambda w: (
    f"MultiRowReductionFusion::TryCreate ({_REDUCTION_RULE}) halves the "
    "vector size while ceil(rows / threads_kept) < the GPU's cores"
    if w.cores is None
    else f"MultiRowReductionFusion::TryCreate ({_REDUCTION_RULE}): vector "
    f"size halved while ceil(rows / threads_kept) < {w.cores} "
    "cores, so the row count decides it"
  ),
  "ROW": lambda w: (
    f"RowReductionFusion ({_REDUCTION_RULE}): threads, vector size and "
    f"tile from the reduced length {w.length} and the input width alone; "
    "the row count only sets rows per block"
  ),
  "TRITON_TILING": lambda w: (
    "tile and num_warps chosen by XLA's tiling cost model from the whole "
    "shape (xla/service/gpu/model/gpu_indexing_performance_model.cc "
    "TryFindBestTilingForFusion (tile and num_warps from the whole shape))"
  ),
}


def _column_words(emitter: str) -> str:
  return (
    f"{emitter} ({_REDUCTION_RULE}): threads and vector size from the "
    "reduced and minor kept lengths; hloprobe does not tell whether the "
    "kept dimensions hold the rows"
  )


def row_count_why_words(w) -> str:
  """A `kernels.RowCountWhy` in one line: the rule that says whether a
  kernel's per-row arithmetic takes the row count, its XLA source and
  data; a strength-reduced dot's reduction is said as the
  AlgebraicSimplifier's rewrite first
  (xla/hlo/transforms/simplifiers/algebraic_simplifier.cc).

  Raises:
    ValueError: a `RowCountRule` this function has no words for.
  """
  words = _ROW_COUNT_WORDS.get(w.rule.name)
  if words is None:
    raise ValueError(f"no words for the row-count rule {w.rule.name}")
  text = words(w)
  if w.strength_reduced:
    text = (
      "dot strength reduction (AlgebraicSimplifier, "
      "`dot-strength-reduction`) rewrites a matrix-vector dot, which it "
      "is only at this row count; then " + text
    )
  return text
