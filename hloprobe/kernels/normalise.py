"""Row-count normalisation: a fused computation and a PTX kernel written so
that two configs of one program compare equal where only the row count
(the batch size n) differs.

Rules (conservative: a normalisation may call equal kernels different,
never different kernels equal):
  * shapes: a dimension equal to n (n > 1) is written "N"; any other
    dimension is kept. XLA drops a batch dimension of 1 at n = 1, so n = 1
    kernels have another rank and never sign equal to n > 1 ones. A fixed
    dimension that happens to equal n is written "N" at that n only, so
    that config signs differently from the others (conservative).
  * computations: printed as a DAG from the root, operands in order, each
    node once (`#k`), without instruction names, metadata, layouts or
    backend configs; parameters by what they read at the ENTRY level
    (`label` callback: an entry argument, or another kernel's output);
    called computations (reducers) inlined the same way.
  * PTX: comments dropped, the kernel's name (and its parameters', which
    XLA names `<kernel>_param_<i>`) written "KERNEL", integer immediates
    equal to n (n > 1) in comparisons (`setp`: the row bound) written "N".
    Register names are kept (ptxas input is deterministic for one XLA
    build). A tile that scales with n is caught by the tile field, which
    signs too.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from hloprobe.ir import HloInstruction, HloModule

__all__ = [
  "canonical_computation",
  "digest",
  "float_operations",
  "kernel_ptx",
  "normalised_ptx",
  "row_dims",
]

# Attributes that never change the arithmetic, or are printed elsewhere.
_DROPPED_ATTRS = frozenset(
  {
    "metadata",
    "backend_config",
    "sharding",
    "frontend_attributes",
    "calls",
    "to_apply",
    "origin",
    "statistics_viz",
    "operand_precision",  # read as the contraction's own field
  }
)
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
# An integer immediate: not part of a register (%r12), name or float.
# The row count reaches a kernel as the bound of its row (block) index:
# a comparison, `setp.lt.u32 %p1, %r34, 8` (seen in Triton softmax
# kernels, 0.12.0.1). Only comparisons are normalised: shift amounts and
# shuffle offsets equal to n elsewhere (`shl.b32 %r36, %r35, 2`,
# `shfl.sync.bfly.b32 %r80, %r79, 8, ...`) are not row counts.
_SETP_RE = re.compile(r"^(?:@!?%?\w+\s+)?setp\.")
_INT_RE = re.compile(r"(?<![\w%$.])(-?\d+)(?![\w.$])")


def digest(text: str) -> str:
  """A 12-hex-digit SHA-256 digest of `text`, for signatures."""
  return hashlib.sha256(text.encode()).hexdigest()[:12]


def row_dims(dims: tuple[int, ...], row_count: int) -> str:
  """Dimensions with those equal to the row count written "N"."""
  return ",".join(
    "N" if row_count > 1 and d == row_count else str(d) for d in dims
  )


def _shape(inst: HloInstruction, row_count: int) -> str:
  shape = inst.shape
  if shape.is_tuple:
    return (
      "("
      + ",".join(
        f"{e.dtype}[{row_dims(e.dims, row_count)}]" for e in shape.elements
      )
      + ")"
    )
  return f"{shape.dtype}[{row_dims(shape.dims, row_count)}]"


def canonical_computation(
  module: HloModule,
  computation: str,
  row_count: int,
  label: Callable[[int], str],
  leaf: Callable[[HloInstruction], str | None] | None = None,
) -> str:
  """A fused computation as a DAG normalised for the row count.

  Args:
    module: the optimized module.
    computation: the fused computation's name (a fusion's `calls`).
    row_count: n.
    label: parameter number -> what it reads, e.g. "arg0" or "k3" (the
      caller's naming of ENTRY operands).
    leaf: an instruction -> its text when it is to be printed without its
      operands (e.g. a gemm's dot, whose operands the contraction's own
      fields state), else None.

  Returns:
    One line per node, `#k = f32[N,512] multiply(#i, #j) {attrs}`, the
    root last.
  """
  lines: list[str] = []
  _walk(module, computation, row_count, label, leaf, lines, prefix="")
  return "\n".join(lines)


def _walk(module, computation, row_count, label, leaf, lines, prefix) -> str:
  comp = module.computations[computation]
  by_name = comp.by_name()
  numbered: dict[str, str] = {}

  def visit(root: HloInstruction) -> str:
    # Iterative post-order: deep elementwise chains must not recurse.
    stack = [(root, False)]
    while stack:
      inst, expanded = stack.pop()
      if inst.name in numbered:
        continue
      special = leaf(inst) if leaf is not None else None
      operands = [] if special is not None else list(inst.operands)
      if not expanded and operands:
        stack.append((inst, True))
        for name in reversed(operands):
          if name in by_name and name not in numbered:
            stack.append((by_name[name], False))
        continue
      ref = f"#{prefix}{len(numbered)}"
      numbered[inst.name] = ref
      if special is not None:
        lines.append(f"{ref} = {_shape(inst, row_count)} {special}")
        continue
      if inst.opcode == "parameter":
        lines.append(
          f"{ref} = {_shape(inst, row_count)} "
          f"parameter({label(inst.parameter_number)})"
        )
        continue
      args = ", ".join(numbered.get(o, "?" + o) for o in inst.operands)
      if inst.opcode == "constant":
        args = inst.literal or ""
      attrs = []
      for key, value in inst.attrs.items():
        if key in _DROPPED_ATTRS:
          continue
        attrs.append(f"{key}={value}")
      for key in ("to_apply", "calls"):
        if key in inst.attrs and inst.opcode != "fusion":
          called = inst.attrs[key].strip().lstrip("%")
          if called in module.computations:
            sub: list[str] = []
            _walk(
              module,
              called,
              row_count,
              lambda i: f"p{i}",
              None,
              sub,
              prefix=f"{ref[1:]}.",
            )
            attrs.append(f"{key}={{{'; '.join(sub)}}}")
      text = f"{ref} = {_shape(inst, row_count)} {inst.opcode}({args})"
      if attrs:
        text += " {" + ", ".join(attrs) + "}"
      lines.append(text)
    return numbered[root.name]

  return visit(comp.root)


def kernel_ptx(files: tuple[str, ...] | list[str]) -> dict[str, str]:
  """Kernel name -> the text of its `.entry` (header to closing brace),
  comments dropped, from PTX files (one kernel per file in jaxlib 0.12.0.1's
  dump, several in one module's file in 0.10.2: both read)."""
  out = {}
  for text in files:
    text = _COMMENT_RE.sub("", text)
    for m in _ENTRY_RE.finditer(text):
      brace = text.find("{", m.end())
      if brace < 0:
        continue
      depth, end = 0, len(text)
      for i in range(brace, len(text)):
        c = text[i]
        if c == "{":
          depth += 1
        elif c == "}":
          depth -= 1
          if depth == 0:
            end = i + 1
            break
      out[m.group(1)] = text[m.start() : end]
  return out


def normalised_ptx(name: str, text: str, row_count: int) -> str:
  """A kernel's PTX with its name and the row count's immediates
  normalised (module docstring)."""
  text = text.replace(name, "KERNEL")
  lines = [line.strip() for line in text.splitlines() if line.strip()]
  if row_count > 1:
    lines = [
      _INT_RE.sub(
        lambda m: "N" if int(m.group(1)) == row_count else m.group(1), line
      )
      if _SETP_RE.match(line)
      else line
      for line in lines
    ]
  return "\n".join(lines)


_FLOAT_TYPES = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "tf32")
_FLOAT_HEADS = frozenset(
  {
    "add",
    "sub",
    "mul",
    "fma",
    "max",
    "min",
    "div",
    "rcp",
    "sqrt",
    "rsqrt",
    "ex2",
    "lg2",
    "sin",
    "cos",
    "tanh",
    "neg",
    "abs",
    "selp",
    "cvt",
    "testp",
    "copysign",
  }
)
# Float ops whose first two sources commute exactly (IEEE: a + b == b + a,
# a * b == b * a, fma's product likewise; max/min), so LLVM's operand order
# is not arithmetic (seen: `add.rn.f32 v32, v31, v29` at n = 8 and
# `add.rn.f32 v32, v29, v31` at n = 9 in one row reduction, jaxlib 0.12.0.1).
_COMMUTATIVE = frozenset({"add", "mul", "fma", "max", "min"})
_REG_RE = re.compile(r"%[A-Za-z_]+\d*")
_ADDRESS_RE = re.compile(r"\[[^\]]*\]")


def float_operations(text: str) -> str:
  """A kernel's floating-point dataflow, without its address arithmetic.

  The instructions that compute or exchange float values, in order:
  float arithmetic (an opcode whose type is f32/f64/f16/bf16/tf32, `cvt`
  to or from one), tensor-core `mma`/`wgmma`, warp shuffles (`shfl`),
  shared-memory stores and loads (`st.shared`/`ld.shared`, their address
  written "[a]") and barriers; registers renamed in order of first
  appearance, immediates kept; the first two sources of add, mul, fma,
  max and min in a canonical order (they commute exactly, NaN payloads
  aside). Two kernels whose only differences are in
  integer index and address arithmetic (e.g. which columns a program
  writes) have equal float operations; what the loads read is not in it
  (the tile and layout fields say that).
  """
  names: dict[str, str] = {}

  def rename(m: re.Match) -> str:
    return names.setdefault(m.group(0), f"v{len(names)}")

  out = []
  for line in text.splitlines():
    line = line.strip().rstrip(";")
    if not line or line[0] in ".}{/" or line.endswith(":"):
      continue
    body = re.sub(r"^@!?%?\w+\s+", "", line)
    opcode = body.split(None, 1)[0]
    parts = opcode.split(".")
    head = parts[0]
    keep = (
      head in ("mma", "wgmma", "shfl", "bar")
      or (head in ("ld", "st") and "shared" in parts)
      or (head in _FLOAT_HEADS and any(p in _FLOAT_TYPES for p in parts))
    )
    if not keep:
      continue
    body = _ADDRESS_RE.sub("[a]", body)
    rest = body[len(opcode) :].strip()
    if head in _COMMUTATIVE and "{" not in rest:
      dest, *sources = [x.strip() for x in rest.split(",")]
      sources = [_REG_RE.sub(rename, x) for x in sources]
      sources[:2] = sorted(sources[:2], key=_operand_order)
      out.append(f"{opcode} {_REG_RE.sub(rename, dest)}, {', '.join(sources)}")
    else:
      out.append(_REG_RE.sub(rename, body))
  return "\n".join(out)


def _operand_order(operand: str) -> tuple:
  """Sort key of a renamed operand: registers by first appearance, then
  immediates as text."""
  m = re.fullmatch(r"v(\d+)", operand)
  return (0, int(m.group(1)), "") if m else (1, 0, operand)
