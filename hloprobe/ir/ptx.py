"""GPU kernels read from PTX: which arithmetic each kernel really does.

Pure text in, records out; imports no JAX. `parse_ptx` lists each `.entry`
of a PTX file with the counts of its floating-point multiply instructions
(its own and those of the `.func`s it calls), and `classify_instructions`
names the dot algorithm they imply as a `jax.lax.DotAlgorithmPreset` name.

Rules, checked on jaxlib 0.10.2 and 0.12.0.1 PTX for sm_80 and sm_90 (Triton
gemm fusions, loop and input-reduce fusions; tests/ir/testdata/ptx) and on
0.11.2's from a real H200:

  mma.sync.aligned.<shape>.row.col.<d>.<a>.<b>.<c>  tensor cores: preset
      `<A>_<B>_<D>`, e.g. `...f32.tf32.tf32.f32` -> TF32_TF32_F32 and
      `...f32.bf16.bf16.f32` -> BF16_BF16_F32
  wgmma.mma_async...<shape>.<d>.<a>.<b>  sm_90 tensor cores, the same way
  cvt.rna.tf32.f32 before a tf32 mma  operands rounded to nearest, ties
      away from zero (without it the mma truncates the f32 mantissa)
  cvt.f32.bf16 beside cvt.rn.bf16.f32 and a bf16 mma  f32 operands split
      into bf16 parts (XLA's Triton emitter `SplitF32`: each part is the
      remainder cast to bf16, cast back to f32 and subtracted), so the
      kernel runs several bf16 passes; their count is not in the static
      opcodes (`PtxKernel.splits_f32_operands`). Seen in the seed's
      BF16_BF16_F32_X3 gemm kernels for the a100 (0.10.2 and 0.12.0.1:
      cvt.f32.bf16 x6 and x12), absent from its BF16_BF16_F32 ones
      (tests/testdata/compiles/preset_seed_a100_n2_BF16_BF16_F32{,_X3})
  no mma, mul on bf16 or f16  products rounded to 16 bits: BF16_PRODUCTS_F32
      (no preset), BF16_PRODUCTS_BF16 where the sums are 16-bit adds too
      (`add.rn.bf16`); the same for f16
  no mma, fma on bf16 or f16  with f32 adds, an fma used as a multiply
      (addend -0): BF16_PRODUCTS_F32; without, the fma accumulates:
      BF16_BF16_BF16 (exact products, 16-bit sums)
  no mma, fma/mul .f64  F64_F64_F64
  no mma, only f32 fma/mul  F32_F32_F32 (IEEE f32 products, f32 sums)
  none of these  not a dot kernel (e.g. the reduce after split-K)

Kernel names: XLA names a fusion's kernel after the fusion, through
`llvm_ir::SanitizeFunctionName` (xla/service/llvm_ir/llvm_util.cc): every
character outside [A-Za-z0-9_$] becomes `_`, and a leading digit gets a `_`
prefix. Fusions that XLA's GPU deduplication made identical share one
kernel, named after the fusion in their `metadata.deduplicated_name`.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import collections
import dataclasses
import re

from hloprobe.ir.precisions import ALGORITHMS

__all__ = [
  "PtxKernel",
  "classify_instructions",
  "for_operands",
  "kernel_name",
  "parse_ptx",
]

# An unclosed /* runs to the end (one match, not one failed scan per /*).
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
# Return-value lists are short; bounding them keeps the scan linear.
_FUNC_RE = re.compile(
  r"\.(entry|func)\s+(?:\([^()]{0,4096}\)\s*)?([A-Za-z_$][\w$]*)\s*\("
)
_TARGET_RE = re.compile(r"^\s*\.target\s+(\w+)", re.MULTILINE)
_CALL_RE = re.compile(
  r"\bcall(?:\.uni)?\s+(?:\([^()]{0,4096}\)\s*,\s*)?([A-Za-z_$][\w$]*)"
)
_PREDICATE_RE = re.compile(r"^@!?%?\w+\s+")
_SHAPE_RE = re.compile(r"^m\d+n\d+k\d+$")
_FLOAT_TYPES = (
  "f64",
  "f32",
  "tf32",
  "bf16",
  "bf16x2",
  "f16",
  "f16x2",
  "e4m3",
  "e5m2",
)
_NARROW_TYPES = ("tf32", "bf16", "bf16x2", "f16", "f16x2")
_SIXTEEN_BIT = ("bf16", "bf16x2", "f16", "f16x2")
_MMA_TYPES = _FLOAT_TYPES + ("s8", "u8", "s4", "u4", "s32", "b1")


@dataclasses.dataclass(frozen=True, slots=True)
class PtxKernel:
  """One PTX kernel and the dot arithmetic it does.

  Attributes:
    name: the `.entry` name, e.g. "gemm_fusion_dot_1".
    target: the PTX `.target`, e.g. "sm_80"; None if not stated.
    instructions: counts of the floating-point multiply-like opcodes
      (mma, wgmma, fma, mul, and the cvt to tf32/bf16/f16; 16-bit adds, and
      f32 adds in kernels with 16-bit products), as sorted
      (opcode, count) pairs, e.g. (("cvt.rna.tf32.f32", 12), ...).
    algorithm: the DotAlgorithmPreset name those imply, or None (no preset
      fits, or no multiply at all).
    evidence: a short account of why, for reports.
    tf32_rounding: for TF32 kernels, "rna" when `cvt.rna.tf32.f32` rounds
      the operands first, "truncate" when it does not; else None.
    bf16_widenings: how many `cvt.f32.bf16` (bf16 back to f32) the kernel
      holds: with a bf16 mma, the mark of f32 operands split into parts
      (`splits_f32_operands`).
  """

  name: str
  target: str | None
  instructions: tuple[tuple[str, int], ...]
  algorithm: str | None
  evidence: str
  tf32_rounding: str | None
  bf16_widenings: int = 0

  @property
  def splits_f32_operands(self) -> bool:
    """Whether the kernel splits f32 operands into bf16 parts for several
    bf16 mma passes (module docstring: one bf16 mma flavour, f32 -> bf16
    conversions and `cvt.f32.bf16` back)."""
    ops = dict(self.instructions)
    kinds = {t for t in map(_mma_types, ops) if t is not None}
    narrowed = any(op.startswith("cvt.rn.bf16") for op in ops)
    return (
      len(kinds) == 1
      and kinds.pop()[1] == "bf16"
      and narrowed
      and self.bf16_widenings > 0
    )

  def algorithm_for(self, operand_dtype: str) -> tuple[str | None, str]:
    """The algorithm this kernel runs for a dot whose operands are
    `operand_dtype` (an HLO type, "f32", "bf16", ...), with its evidence
    (`for_operands`).

    Returns:
      (preset name or None, evidence text).
    """
    return for_operands(self, operand_dtype)

  @property
  def mma_opcodes(self) -> tuple[str, ...]:
    """Its tensor-core opcodes (mma.sync, wgmma: those with a shape and
    element types), sorted, e.g.
    ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",); () for none."""
    return tuple(op for op, _ in self.instructions if _mma_types(op))


def kernel_name(hlo_name: str) -> str:
  """The kernel name XLA gives an HLO fusion (`SanitizeFunctionName`)."""
  name = re.sub(r"[^A-Za-z0-9_$]", "_", hlo_name)
  if not name:
    return "__unnamed"
  return "_" + name if name[0].isdigit() else name


def _opcodes(body: str) -> collections.Counter:
  """Counts the opcodes of a function body (statements split on `;`)."""
  counts: collections.Counter = collections.Counter()
  for statement in re.split(r"[;\n]", body):
    statement = _PREDICATE_RE.sub("", statement.strip(" \t{}"))
    if not statement or statement[0] in ".$%" or statement.endswith(":"):
      continue
    counts[statement.split(None, 1)[0]] += 1
  return counts


def _is_float_multiply(opcode: str) -> bool:
  parts = opcode.split(".")
  if parts[0] in ("mma", "wgmma"):
    return _mma_types(opcode) is not None  # not wgmma.fence and the like
  if parts[0] in ("fma", "mul"):
    return parts[-1] in _FLOAT_TYPES
  if parts[0] == "add":  # 16-bit sums tell a 16-bit accumulator
    return parts[-1] in _SIXTEEN_BIT
  # cvt.<rounding>.<to>.<from>: keep conversions to tf32 / 16-bit floats.
  return parts[0] == "cvt" and len(parts) >= 3 and parts[-2] in _NARROW_TYPES


def _is_f32_add(opcode: str) -> bool:
  parts = opcode.split(".")
  return parts[0] == "add" and parts[-1] == "f32"


def _functions(text: str) -> dict[str, tuple[str, str]]:
  """Name -> (kind, body) of each `.entry` and `.func` with a body.

  Linear in the text: brackets are matched in one pass, and a body ends at
  its closing brace or, when that is missing, where the next function
  starts (PTX functions do not nest).
  """
  parens, braces = _match_all(text, "(", ")"), _match_all(text, "{", "}")
  heads = list(_FUNC_RE.finditer(text))
  out = {}
  for k, m in enumerate(heads):
    limit = heads[k + 1].start() if k + 1 < len(heads) else len(text)
    close_params = min(parens.get(m.end() - 1, len(text)), limit)
    brace = text.find("{", close_params, limit)
    semicolon = text.find(";", close_params, limit)
    if brace < 0 or (0 <= semicolon < brace):
      continue  # a declaration without a body
    end = min(braces.get(brace, len(text)), limit)
    out[m.group(2)] = (m.group(1), text[brace + 1 : end])
  return out


def _match_all(text: str, open_: str, close: str) -> dict[int, int]:
  """Index of each matched `open_` -> index of its `close`, in one pass."""
  stack, out = [], {}
  for m in re.finditer(re.escape(open_) + "|" + re.escape(close), text):
    if m.group() == open_:
      stack.append(m.start())
    elif stack:
      out[stack.pop()] = m.start()
  return out


def _kernel_counts(
  name: str, functions: dict, own: dict[str, collections.Counter]
) -> collections.Counter:
  """Opcode counts of a function and of every function it reaches by calls,
  each function counted once (iterative: no recursion limit, and linear in
  the call graph when functions share callees). `own` caches each
  function's own counts across kernels."""
  counts: collections.Counter = collections.Counter()
  seen, todo = {name}, [name]
  while todo:
    current = todo.pop()
    body = functions[current][1]
    if current not in own:
      own[current] = _opcodes(body)
    counts += own[current]
    for callee in _CALL_RE.findall(body):
      if callee in functions and callee not in seen:
        seen.add(callee)
        todo.append(callee)
  return counts


def parse_ptx(text: str) -> list[PtxKernel]:
  """Lists the kernels (`.entry` functions) of one PTX file, classified."""
  text = _COMMENT_RE.sub("", text)
  target = _TARGET_RE.search(text)
  functions = _functions(text)
  own: dict[str, collections.Counter] = {}
  kernels = []
  for name, (kind, _) in functions.items():
    if kind != "entry":
      continue
    all_counts = _kernel_counts(name, functions, own)
    counts = {k: v for k, v in all_counts.items() if _is_float_multiply(k)}
    if any(k.split(".")[-1] in _SIXTEEN_BIT for k in counts):
      # f32 sums tell what a 16-bit fma is used for (`_sixteen_bit`).
      counts |= {k: v for k, v in all_counts.items() if _is_f32_add(k)}
    algorithm, evidence, rounding = classify_instructions(counts)
    kernels.append(
      PtxKernel(
        name=name,
        target=target.group(1) if target else None,
        instructions=tuple(sorted(counts.items())),
        algorithm=algorithm,
        evidence=evidence,
        tf32_rounding=rounding,
        bf16_widenings=all_counts.get("cvt.f32.bf16", 0),
      )
    )
  return kernels


def _mma_types(opcode: str) -> tuple[str, str, str] | None:
  """(d, a, b) element types of an mma.sync or wgmma opcode."""
  parts = opcode.split(".")
  shape = next((i for i, p in enumerate(parts) if _SHAPE_RE.match(p)), None)
  if shape is None:
    return None
  types = [p for p in parts[shape + 1 :] if p in _MMA_TYPES]
  return (types[0], types[1], types[2]) if len(types) >= 3 else None


def _preset(a: str, b: str, d: str) -> str:
  name = f"{a}_{b}_{d}".upper()
  return name if name in ALGORITHMS else f"{name} (no DotAlgorithmPreset)"


def _summary(counts: dict[str, int], keep) -> str:
  return ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()) if keep(op))


def classify_instructions(
  counts: dict[str, int],
) -> tuple[str | None, str, str | None]:
  """Names the dot algorithm a kernel's multiply instructions imply.

  Args:
    counts: opcode -> number of occurrences in one kernel, e.g.
      {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": 2,
       "cvt.rna.tf32.f32": 6, "fma.rn.f32": 88}.

  Returns:
    (preset name or None, evidence text, tf32 rounding or None); see the
    module docstring for the rules. Without mma, f32 products win over f64
    and 16-bit ones (elementwise code fused into the kernel, e.g. sin's
    range reduction, may multiply in f64); `for_operands` refines this
    with the dot's operand type.
  """
  mma = {op: n for op, n in counts.items() if _mma_types(op) is not None}
  kinds = {t for t in map(_mma_types, mma) if t is not None}
  if len(kinds) == 1:
    d, a, b = kinds.pop()
    rounding = None
    if "tf32" in (a, b):
      rna = any(op.startswith("cvt.rna") and "tf32" in op for op in counts)
      rounding = "rna" if rna else "truncate"
    evidence = _summary(
      counts, lambda op: op in mma or "tf32" in op or "bf16" in op
    )
    return _preset(a, b, d), evidence, rounding
  if mma:
    return None, "several mma flavours: " + _summary(mma, lambda op: True), None
  products = _products(counts)
  for kind, preset in (("f32", "F32_F32_F32"), ("f64", "F64_F64_F64")):
    if kind in products:
      return preset, f"no mma; {products[kind]}", None
  if products:
    return (
      None,
      f"no mma; 16-bit products ({', '.join(products.values())})",
      None,
    )
  return None, "no floating-point multiply", None


_PRODUCT_KIND = {
  "f32": "f32",
  "f64": "f64",
  "bf16": "16-bit",
  "bf16x2": "16-bit",
  "f16": "16-bit",
  "f16x2": "16-bit",
}


def _products(counts: dict[str, int]) -> dict[str, str]:
  """Scalar fma/mul opcodes by product kind ("f32", "f64", "16-bit")."""
  out: dict[str, list[str]] = {}
  for op, n in sorted(counts.items()):
    parts = op.split(".")
    if parts[0] in ("fma", "mul") and parts[-1] in _PRODUCT_KIND:
      out.setdefault(_PRODUCT_KIND[parts[-1]], []).append(f"{op} x{n}")
  return {k: ", ".join(v) for k, v in out.items()}


def for_operands(
  kernel: PtxKernel, operand_dtype: str
) -> tuple[str | None, str]:
  """The algorithm a kernel runs for a dot whose operands are `operand_dtype`.

  Tensor-core kernels keep their mma preset. Without mma the kernel's
  products of the operand's own width decide: f32 products of f32 operands
  are F32_F32_F32; of bf16/f16 operands (converted to f32, so the products
  are exact) BF16_BF16_F32 / F16_F16_F32, unless 16-bit multiplies
  appear: then `_sixteen_bit` names the products' and sums' rounding
  (module docstring); f64 operands need f64 products. f32 operands that
  the kernel splits into bf16 parts (`PtxKernel.splits_f32_operands`) keep
  the mma's one-pass preset, and the evidence says that the pass count is
  not read: the caller names the passes (a declared _X3/_X6 preset) or
  none (`sites.effective`).

  Returns:
    (preset name or None, evidence text).
  """
  products = _products(dict(kernel.instructions))
  if operand_dtype == "f32" and kernel.splits_f32_operands:
    return kernel.algorithm, (
      f"{kernel.evidence}; f32 operands split into bf16 parts "
      f"(cvt.f32.bf16 x{kernel.bf16_widenings}: XLA's SplitF32): several "
      "passes, their count not read from the PTX"
    )
  if not products or any(
    op.startswith(("mma", "wgmma")) for op, _ in kernel.instructions
  ):
    return kernel.algorithm, kernel.evidence
  if operand_dtype == "f64":
    return (
      ("F64_F64_F64", f"no mma; {products['f64']}")
      if "f64" in products
      else (None, kernel.evidence)
    )
  if operand_dtype in ("bf16", "f16"):
    if "16-bit" in products:
      return _sixteen_bit(dict(kernel.instructions), operand_dtype)
    if "f32" in products:
      name = f"{operand_dtype.upper()}_{operand_dtype.upper()}_F32"
      return (
        name,
        f"no mma; {operand_dtype} operands, f32 products ({products['f32']})",
      )
  if "f32" in products:
    return "F32_F32_F32", f"no mma; only f32 products ({products['f32']})"
  return None, kernel.evidence


def _sixteen_bit(counts: dict[str, int], operand_dtype: str) -> tuple[str, str]:
  """The algorithm of a kernel with 16-bit products (module docstring)."""
  kind = operand_dtype.upper()
  ops = lambda head, types: sorted(
    op
    for op in counts
    if op.split(".")[0] == head and op.split(".")[-1] in types
  )
  muls, fmas = ops("mul", _SIXTEEN_BIT), ops("fma", _SIXTEEN_BIT)
  adds16 = ops("add", _SIXTEEN_BIT)
  seen = _summary(counts, lambda op: op in muls + fmas + adds16)
  if muls:
    name = f"{kind}_PRODUCTS_{kind if adds16 else 'F32'}"
    why = "products rounded to 16 bits"
  elif adds16 or not any(map(_is_f32_add, counts)):
    name, why = (
      f"{kind}_{kind}_{kind}",
      "16-bit fma: exact products, 16-bit sums",
    )
  else:
    name, why = f"{kind}_PRODUCTS_F32", "16-bit fma as a multiply, f32 sums"
  return name, f"no mma; {why} ({seen})"
