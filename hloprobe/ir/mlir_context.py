"""MLIR modules from text, through the MLIR Python bindings jaxlib ships.

The one adapter to jaxlib's MLIR bindings (`jaxlib.mlir`): it makes a fresh
`ir.Context` with the dialects `Lowered.as_text()` prints (func and the
other upstream dialects, stablehlo, chlo, sdy, mhlo), parses a module in it
and turns the parser's diagnostics into one `HloParseError`.

The dialect set follows `jax._src.interpreters.mlir.make_ir_context` (jax
0.10.2 and 0.12.0.1): upstream dialects through `_jax_mlir_ext.register_dialects`, then
each XLA dialect's `register_dialect`. The upstream registration is private
jaxlib API, so it comes through `hloprobe.private_api`, the one adapter to
it; the rest is the public `jaxlib.mlir` bindings, which `ir/` may import
(tests/layering_test.py). `jax`'s own factory is not used because importing
it loads the JAX runtime.

A context per call: creating one costs about 0.3 ms, and no state is shared
between parses (or threads).

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

from hloprobe import private_api
from hloprobe.errors import HloParseError

__all__ = [
  "cast_or_none",
  "first_diagnostic",
  "new_context",
  "parse_mlir_attribute",
  "parse_mlir_module",
]


def cast_or_none(kind: type, value):
  """`value` (an `ir.Location` or `ir.Type`) cast to `kind`, or None.

  E.g. `cast_or_none(ir.NameLoc, op.location)`. The bindings hand out some
  locations (diagnostics') and types as their base class; casting is how
  they tell the kinds apart (a wrong kind raises ValueError).
  """
  if isinstance(value, kind):
    return value
  try:
    return kind(value)
  except ValueError:
    return None


def new_context() -> ir.Context:
  """A fresh context that knows every dialect jax prints."""
  registry = ir.DialectRegistry()
  _register_upstream(registry)
  context = ir.Context()
  context.append_dialect_registry(registry)
  sdy.register_dialect(context)
  mhlo.register_mhlo_dialect(context)
  chlo.register_dialect(context)
  stablehlo.register_dialect(context)
  return context


def _register_upstream(registry: ir.DialectRegistry) -> None:
  """Adds func and the other upstream dialects jax prints to `registry`.

  Raises:
    HloParseError: this jaxlib's MLIR bindings register none
      (`private_api.register_upstream_dialects`).
  """
  looked = ", ".join(private_api.register_upstream_dialects(registry))
  if looked:
    raise HloParseError(
      "[hloprobe] this jaxlib's MLIR bindings register no upstream dialects "
      f"(looked for {looked}; checked on jaxlib 0.10.2); cannot read "
      "StableHLO"
    )


def first_diagnostic(error: ir.MLIRError) -> str:
  """`line:col: message` of the parser's first error, on one line."""
  for d in error.error_diagnostics:
    loc = cast_or_none(ir.FileLineColLoc, d.location)
    where = f"line {loc.start_line}:{loc.start_col}: " if loc else ""
    return where + " ".join(d.message.split())
  return " ".join(str(error).split())


def parse_mlir_module(text: str) -> ir.Module:
  """Parses and verifies an MLIR module printed by `Lowered.as_text()`.

  Args:
    text: the module's MLIR text (generic or pretty form, with or without
      `debug_info` locations).

  Returns:
    The verified module; it keeps its own context alive.

  Raises:
    HloParseError: the text does not parse or does not verify; the message
      names the first error's line and column in `text`.
  """
  return _parse(ir.Module.parse, text, "StableHLO")


def parse_mlir_attribute(text: str) -> ir.Attribute:
  """Parses one MLIR attribute as printed, e.g. a dot's `precision_config`.

  Args:
    text: the attribute's text, e.g.
      "[#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]".

  Returns:
    The attribute, in a fresh context it keeps alive.

  Raises:
    HloParseError: the text is not an attribute of the registered dialects.
  """
  return _parse(ir.Attribute.parse, text, f"MLIR attribute {text!r}")


def _parse(parse, text: str, what: str):
  """`parse(text, context)` in a fresh context; errors as HloParseError."""
  try:
    return parse(text, new_context())
  except ir.MLIRError as e:
    raise HloParseError(
      f"[hloprobe] {what} does not parse: {first_diagnostic(e)}"
    ) from None
