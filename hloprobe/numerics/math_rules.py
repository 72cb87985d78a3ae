"""Known rewrites that change the math, and how a gemm call is named.

When the optimized module, executed with every float widened to float64,
strays from the program's float64 reference beyond the F32 band (`made`),
XLA changed the math. This module names the instruction that did it: each
gemm whose call does more than a plain `A @ B` (an alpha other than 1, a
beta other than 0, an epilogue) is a suspect, and `RULES` says which
suspects match a known miscompile, with its source.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

__all__ = [
  "MAKING_PASS",
  "RULES",
  "MathRule",
  "call_fields",
  "is_plain",
  "matching_rule",
]

# The XLA pass that makes each gemm custom call: GemmRewriter
# (xla/backends/gpu/transforms/gemm_rewriter.cc; dumped as pass
# "cublas-gemm-rewriter" by jaxlib 0.10.2 and 0.12.0.1) rewrites dots into
# these targets and folds scalar multiplies, bias adds and activations in.
MAKING_PASS = {
  "__cublas$gemm": "cublas-gemm-rewriter",
  "__cublas$lt$matmul": "cublas-gemm-rewriter",
  "__cublas$lt$matmul$f8": "cublas-gemm-rewriter",
}


@dataclasses.dataclass(frozen=True, slots=True)
class MathRule:
  """A known rewrite that changes the math.

  Attributes:
    words: what the verdict says, e.g. "suspected miscompile: GemmRewriter
      folded alpha over a BIAS epilogue".
    pass_name: the XLA pass that makes it, as dumped.
    source: where it is documented (XLA function, issue, releases).
    matches: whether a gemm call (`execute.GemmCall`) fits the rule.
  """

  words: str
  pass_name: str
  source: str
  matches: Callable[[object], bool]


def _alpha_over_bias(gemm) -> bool:
  """alpha != 1 on a call whose epilogue adds a bias vector.

  cuBLASLt computes D = alpha (A @ B) + beta C and then applies the
  epilogue, so a BIAS epilogue adds the bias after alpha (cuBLAS
  documentation, cublasLtMatmul, "CUBLASLT_EPILOGUE_BIAS"): a program's
  alpha (A @ B + bias) needs the bias scaled too.
  """
  epilogue = gemm.epilogue or ""
  return "BIAS" in epilogue.upper() and complex(gemm.alpha) != 1


# The rule table. GemmRewriterVisitor::HandleMultiply
# (xla/backends/gpu/transforms/gemm_rewriter.cc) folds
# multiply(gemm, broadcast(constant)) into the gemm's alpha guarded only by
# `beta == 0` and one user, not by the epilogue: a call that already
# carries a BIAS epilogue then computes alpha (A @ B) + bias, off by
# (1 - alpha) bias (openxla/xla#46110, from jax-ml/jax#39336). Checked with
# hloprobe's scaled_dense case on an a100 with xla_gpu_enable_triton_gemm
# off: jaxlib 0.10.2 compiles `"alpha_real":0.1 ... "epilogue":"BIAS"`,
# jaxlib 0.12.0.1 `"alpha_real":1` and the multiply outside the call. The
# fixing XLA commit was not located: the stored gemm_rewriter.cc at
# 1448ed38 still guards HandleMultiply on beta alone, so the change may lie
# elsewhere (the order bias and scale are fused in); the issue is closed.
RULES = (
  MathRule(
    "suspected miscompile: GemmRewriter folded alpha over a BIAS epilogue",
    "cublas-gemm-rewriter",
    "GemmRewriterVisitor::HandleMultiply, "
    "xla/backends/gpu/transforms/gemm_rewriter.cc; openxla/xla#46110; "
    "seen in jaxlib 0.10.2; 0.12.0.1 compiles scaled_dense with alpha 1",
    _alpha_over_bias,
  ),
)


def _number(x: float) -> str:
  """0.10000000149011612 (an f32 0.1 as a double) as "0.1"."""
  return f"{float(x):.7g}"


def is_plain(gemm) -> bool:
  """Whether a gemm call computes plain A @ B: alpha 1, beta 0, no
  epilogue (a dot, a Triton gemm fusion, or a library call without them)."""
  epilogue = (gemm.epilogue or "DEFAULT").upper()
  return (
    complex(gemm.alpha) == 1
    and float(gemm.beta) == 0
    and epilogue == "DEFAULT"
    and not gemm.has_bias
  )


def call_fields(gemm) -> str:
  """The backend_config fields that matter, e.g. "alpha_real 0.1, beta 0,
  epilogue BIAS"; the kind alone ("dot") for a call without them."""
  if gemm.epilogue is None and is_plain(gemm):
    return gemm.kind
  alpha = complex(gemm.alpha)
  parts = [f"alpha_real {_number(alpha.real)}"]
  if alpha.imag:
    parts.append(f"alpha_imag {_number(alpha.imag)}")
  parts.append(f"beta {_number(gemm.beta)}")
  parts.append(f"epilogue {gemm.epilogue or 'DEFAULT'}")
  return ", ".join(parts)


def matching_rule(gemm) -> MathRule | None:
  """The first rule of `RULES` the gemm call fits, or None."""
  return next((r for r in RULES if r.matches(gemm)), None)
