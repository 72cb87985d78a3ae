"""What an execution of an HLO module produced: `Execution`, with a
`NotExecuted` for each instruction it could not compute and a `GemmCall`
for each contraction it computed.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
  "Execution",
  "GemmCall",
  "NotExecuted",
]


@dataclasses.dataclass(frozen=True, slots=True)
class NotExecuted:
  """An instruction the executor could not compute.

  Attributes:
    instruction: its HLO name, e.g. "custom-call.3".
    target: its opcode, or its `custom_call_target` for a custom call
      (e.g. "__cudnn$fmhaSoftmax").
    reason: why, in a few words ("no numpy model of this custom call").
  """

  instruction: str
  target: str
  reason: str

  def __str__(self) -> str:
    return f"not executed: {self.target} ({self.instruction}: {self.reason})"


@dataclasses.dataclass(frozen=True, slots=True)
class GemmCall:
  """One contraction the executor computed (the first time it ran, for one
  inside a loop body).

  Attributes:
    instruction: HLO name of the gemm: the custom call
      ("cublas-lt-matmul.1"), or the `dot` (inside a fusion too).
    kind: "dot" (a plain dot; the CPU's, also inside a `__ynn_fusion`),
      "triton gemm fusion" (a dot inside a fusion whose backend kind is
      `__triton_gemm` or `__triton_nested_gemm_fusion`), "cudnn gemm
      fusion" (`__cudnn$fusion`), or the custom call target
      ("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8").
    computation: the computation holding the instruction.
    algorithm: the `jax.lax.DotAlgorithmPreset` name it ran at, or
      "integer" for an integer dot (exact, no algorithm).
    alpha: the gemm's alpha (`alpha_real`, `alpha_imag`); 1 for a dot.
    beta: the weight of the C operand; 0 for a dot or without C.
    epilogue: the cuBLASLt epilogue ("DEFAULT", "BIAS", "RELU", ...), None
      for a dot.
    has_bias: whether a vector bias operand was added (a BIAS epilogue).
    op_name: `metadata.op_name`, None when absent.
    source_line: `metadata.source_line`, or the line of its innermost
      stack frame; None when neither is known.
    fusions: the fusion instructions enclosing it, outermost first (a
      Triton gemm fusion's dot: `("gemm_fusion_dot.1",)`); () outside any.
  """

  instruction: str
  kind: str
  computation: str
  algorithm: str
  alpha: complex = 1
  beta: float = 0.0
  epilogue: str | None = None
  has_bias: bool = False
  op_name: str | None = None
  source_line: int | None = None
  fusions: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Execution:
  """The result of `execute_module`.

  Attributes:
    outputs: the entry computation's result, flattened (a tuple result's
      elements in order, nested tuples flattened depth first; an array
      result is one element), each a numpy array of the HLO element type
      (float64 for every float type under `widen`); None when anything was
      not executed.
    not_executed: every instruction that could not be computed, in the
      order met; empty when complete.
    gemms: every contraction computed, in execution order.
  """

  outputs: tuple[np.ndarray, ...] | None
  not_executed: tuple[NotExecuted, ...]
  gemms: tuple[GemmCall, ...]

  @property
  def complete(self) -> bool:
    """Whether every instruction was computed (`outputs` is not None)."""
    return not self.not_executed
