"""An executor of HLO modules in numpy: what a compiled module computes.

`execute_module(module, arguments)` computes an HLO module (the optimized
HLO XLA compiled for a target, or a program's unoptimized HLO) on the CPU,
instruction by instruction, as the target would: fusions by their bodies,
Triton gemm fusions and cuBLAS/cuBLASLt gemm custom calls (alpha, beta,
C, bias and epilogues, as the libraries document them: `blas`), dots at
the dot algorithm each gemm runs (`contraction`: operands rounded to
TF32, BF16, F16, or split into parts, products summed in float64 and
rounded once to the output type), layouts (`bitcast` reads the physical
order), convolutions and cuDNN's forward convolution calls, control flow
(call, while, conditional), reduce, reduce-window, sort, scatter, gather.
What it cannot compute (an unknown custom call such as cuDNN attention,
an opcode without a model) is named in `Execution.not_executed`, and the
outputs are then None: a prediction is never silently incomplete.

Why it is independent of XLA:CPU: this package imports no JAX nor jaxlib
(tests/layering_test.py enforces it) and compiles nothing. Its arithmetic
is numpy's and ml_dtypes' (IEEE float32/float64 operations, float64 sums
of exact products); it reads the module only through `hloprobe.ir`'s
records (whose structure comes from XLA's text parser, not from any
compiler pass or backend). So a bug of XLA:CPU's code generation (a wrong
fusion, vectorisation or dot emitter) cannot reach its numbers, and its
float64 run of the unoptimized HLO (`widen=True`) is a reference that
shares nothing with an XLA:CPU compile of the program.

The stage's interface is `__all__`; the modules behind it are private in
intent: values (types, literals, layouts, argument checks), rounding,
contraction, elementwise, shape_ops, reductions, reorder (scatter, sort),
blas (cuBLAS/cuBLASLt gemms), conv (convolutions, cuDNN's calls), ops
(the opcode table), interpreter (the walk), records, spmd (an
SPMD-partitioned module run per device: `execute_module` with
`shardings`).
"""

from __future__ import annotations

from hloprobe.execute.spmd import execute_module as execute_module
from hloprobe.execute.values import numpy_dtype as numpy_dtype
from hloprobe.execute.values import parse_literal as parse_literal

__all__ = [
  "execute_module",
  "numpy_dtype",
  "parse_literal",
]
